/* kernels_simd.c — the tile kernels of the matrix product (gemm: up to four weight rows by up
 * to four activation rows) and the eight-row decode kernels (gemv8) of every tensor type, and
 * the SIMD activation quantizers, written with WebAssembly SIMD128 intrinsics (natively through
 * SIMDe, simd.h). A type's vec_dot is its gemm's 1×1 tile (quant_table.c), so there is no
 * row-by-row kernel beside these: the types without a tile kernel of their own (the float types
 * and the activation formats as weights, at the end of the file) make their tiles one row
 * kernel call per output.
 *
 * Quantized rows: the activation row was quantized once to 8-bit blocks (Q8_0, Q8_1 or Q8_K,
 * see quant.h), so a block's dot product is an integer sum. Weight quants are widened into
 * 16-bit lanes straight from memory (load8x8), unpacked with and/shift/or, and multiplied with
 * i32x4.dot_i16x8_s, which sums adjacent products into 32-bit lanes. Offsets such as Q6_K's
 * "q - 32" are taken out afterwards through the activation block sums (bsums), as llama.cpp's
 * x86 kernels do; the integer result per block equals the scalar reference in quant.c exactly,
 * and the float scaling follows the reference's order, so the quantized types' tiles equal the
 * reference bit for bit.
 *
 * Relaxed SIMD (WICK_RELAXED: the builds of mk/relaxed.mk, compiled with -mrelaxed-simd): the
 * matrix kernels of the types whose stored values are small and unsigned (Q4_0, Q4_1, Q5_0,
 * Q5_1 and the K-quants) multiply 16 activation bytes with 16 weight bytes in one instruction,
 * i16x8.relaxed_dot_i8x16_i7x16_s (adjacent products summed into 16-bit lanes), instead of
 * widening both to 16 bits first. Its result is defined when the second operand is within
 * 0..127, so the weights go in as stored (0..15, 0..31, 0..63) and their offsets (Q4_0's 8,
 * Q5_0's 16) come out of the activation sums, as the K-quants' do already. The integer sums are
 * the same exact integers, so the outputs are bit-identical to the plain build's. (The fused
 * i32x4.relaxed_dot_i8x16_i7x16_add_s would save one more instruction, but Node 20's V8 computes
 * it differently from Chromium's, so the tests could not check it under Node.) Natively,
 * WICK_RELAXED_EMULATE builds the same paths with the instruction emulated, for the tests. */
#include "quant.h"
#include "simd.h"

#include <string.h>

#if defined(__wasm_relaxed_simd__)
/* lane i: y[2i] * w[2i] + y[2i+1] * w[2i+1]; y int8, w within 0..127 */
static inline v128_t rdot(v128_t y, v128_t w) { return wasm_i16x8_relaxed_dot_i8x16_i7x16(y, w); }
#elif defined(WICK_RELAXED_EMULATE)
static inline v128_t rdot(v128_t y, v128_t w)
{
    /* |y * w| <= 128 * 127 and the sum of two fit int16 */
    v128_t lo = wasm_i16x8_mul(wasm_i16x8_extend_low_i8x16(y), wasm_i16x8_extend_low_i8x16(w));
    v128_t hi = wasm_i16x8_mul(wasm_i16x8_extend_high_i8x16(y), wasm_i16x8_extend_high_i8x16(w));
    return wasm_i16x8_add(wasm_i16x8_shuffle(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14), wasm_i16x8_shuffle(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15));
}
#endif

static inline float hsum_f32x4(v128_t v)
{
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1))
         + (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

static inline int32_t hsum_i32x4(v128_t v)
{
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1)
         + wasm_i32x4_extract_lane(v, 2) + wasm_i32x4_extract_lane(v, 3);
}

/* 8 consecutive int8 / uint8 values as 8 int16 lanes */
static inline v128_t load_i8x8(const void *p) { return wasm_i16x8_load8x8(p); }
static inline v128_t load_u8x8(const void *p) { return wasm_u16x8_load8x8(p); }

static inline v128_t dot_i16(v128_t a, v128_t b) { return wasm_i32x4_dot_i16x8(a, b); }

/* acc + isum * scale, isum an i32x4 of partial integer sums */
static inline v128_t add_scaled(v128_t acc, v128_t isum, float scale)
{
    return wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_splat(scale)));
}


/* ---- activation quantization ------------------------------------------------------------------ */

/* Q8_0 blocks of a row, bit for bit quant_q8_0_from_float_ref (quant.c, llama.cpp's
 * quantize_row_q8_0_ref): amax over the block (pmax skips NaN as fmaxf does), d = amax / 127,
 * id = 1 / d, q = roundf(x * id) for |x * id| < 127.5 and 0 otherwise (NaN, Inf). roundf (half
 * away from zero) is trunc(v + copysign(0.5 − 2^-25, v)): for |v| < 128 the sum rounds up to the
 * next integer exactly when v's fraction is at least one half. */
void quant_q8_0_from_float_simd(const float *src, void *dst, int64_t n)
{
    block_q8_0 *y = dst;
    const v128_t sign = wasm_i32x4_splat((int32_t)0x80000000u), half = wasm_f32x4_splat(0x1.fffffep-2f);
    const v128_t lo = wasm_f32x4_splat(-127.5f), hi = wasm_f32x4_splat(127.5f);
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0) {
        v128_t x[8], m = wasm_f32x4_splat(0.0f);
        for (int j = 0; j < 8; j++) {
            x[j] = wasm_v128_load(src + 4 * j);
            m = wasm_f32x4_pmax(m, wasm_f32x4_abs(x[j]));
        }
        m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
        m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
        float amax = wasm_f32x4_extract_lane(m, 0);
        float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
        v128_t vid = wasm_f32x4_splat(id), q32[8];
        for (int j = 0; j < 8; j++) {
            v128_t v = wasm_f32x4_mul(x[j], vid);
            v128_t r = wasm_f32x4_trunc(wasm_f32x4_add(v, wasm_v128_or(half, wasm_v128_and(v, sign))));
            v128_t ok = wasm_v128_and(wasm_f32x4_gt(v, lo), wasm_f32x4_lt(v, hi));
            q32[j] = wasm_v128_and(wasm_i32x4_trunc_sat_f32x4(r), ok);
        }
        v128_t q16a = wasm_i16x8_narrow_i32x4(q32[0], q32[1]), q16b = wasm_i16x8_narrow_i32x4(q32[2], q32[3]);
        v128_t q16c = wasm_i16x8_narrow_i32x4(q32[4], q32[5]), q16d = wasm_i16x8_narrow_i32x4(q32[6], q32[7]);
        wasm_v128_store(y[i].qs, wasm_i8x16_narrow_i16x8(q16a, q16b));
        wasm_v128_store(y[i].qs + 16, wasm_i8x16_narrow_i16x8(q16c, q16d));
        y[i].d = quant_f32_to_f16(d);
    }
}

/* Q8_K blocks of a row, bit for bit quant_q8_K_from_float_ref (quant.c, llama.cpp's
 * quantize_row_q8_K_ref): the first value of largest magnitude maps to -127, q = nearest_int(x *
 * iscale) (round half to even: f32x4.nearest) capped at 127, bsums the sums of 16. */
void quant_q8_K_from_float_simd(const float *src, void *dst, int64_t n)
{
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        v128_t m = wasm_f32x4_splat(0.0f);
        for (int j = 0; j < QK_K; j += 4)
            m = wasm_f32x4_pmax(m, wasm_f32x4_abs(wasm_v128_load(src + j)));
        m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
        m = wasm_f32x4_pmax(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2));
        float amax = wasm_f32x4_extract_lane(m, 0);
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        int first = 0;
        while (!(src[first] == amax || src[first] == -amax)) first++;
        float iscale = -127.f / src[first];
        const v128_t vs = wasm_f32x4_splat(iscale), cap = wasm_i32x4_splat(127), lim = wasm_f32x4_splat(128.0f);
        for (int g = 0; g < QK_K / 16; g++) {
            v128_t q[4];
            for (int k = 0; k < 4; k++) {
                /* |p| <= 127 unless max is so small that iscale is infinite: then p is ±Inf or
                 * NaN, which the reference's int conversion turns into 0 */
                v128_t p = wasm_f32x4_mul(wasm_v128_load(src + 16 * g + 4 * k), vs);
                v128_t v = wasm_i32x4_min(wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(p)), cap);
                q[k] = wasm_v128_and(v, wasm_f32x4_le(wasm_f32x4_abs(p), lim));
            }
            wasm_v128_store(y[i].qs + 16 * g, wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(q[0], q[1]), wasm_i16x8_narrow_i32x4(q[2], q[3])));
            y[i].bsums[g] = (int16_t)hsum_i32x4(wasm_i32x4_add(wasm_i32x4_add(q[0], q[1]), wasm_i32x4_add(q[2], q[3])));
        }
        y[i].d = 1 / iscale;
    }
}

/* ---- unpacking shared by the tile kernels ------------------------------------------------- */

/* The 5th bits of a Q5 block: bit j of the little-endian u32 qh belongs to element j. Spread
 * bytes 0,1 (elements 0..15) and 2,3 (16..31) over 16 lanes each, test one bit per lane and
 * return 0x10 where it is set. */
static inline void q5_high_bits(const uint8_t qh[4], v128_t *lo, v128_t *hi)
{
    const v128_t lane_bit = wasm_i8x16_make(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    const v128_t bit4 = wasm_i8x16_splat(0x10);
    v128_t all = wasm_v128_load32_splat(qh);
    v128_t b01 = wasm_i8x16_shuffle(all, all, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    v128_t b23 = wasm_i8x16_shuffle(all, all, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    *lo = wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(b01, lane_bit), lane_bit), bit4);
    *hi = wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(b23, lane_bit), lane_bit), bit4);
}

/* sum_j s[j] * bsums[j] over the 16 sub-blocks of 16, s given as 16 int16 in two vectors */
static inline v128_t dot_bsums(v128_t s_lo, v128_t s_hi, const block_q8_K *y)
{
    return wasm_i32x4_add(dot_i16(s_lo, wasm_v128_load(y->bsums)), dot_i16(s_hi, wasm_v128_load(y->bsums + 8)));
}

/* Q3_K scales (quant_unpack_q3_K_scales) four at a time in 32-bit words: the low 4 bits from
 * the nibbles of bytes 0..7, the top 2 bits from bytes 8..11; returned unbiased as int16 lanes,
 * sub-blocks 0..7 in *lo and 8..15 in *hi. */
static inline void q3_K_scales(const uint8_t packed[12], v128_t *lo, v128_t *hi)
{
    uint32_t low0, low1, top;
    memcpy(&low0, packed, 4);
    memcpy(&low1, packed + 4, 4);
    memcpy(&top, packed + 8, 4);
    v128_t bytes = wasm_i32x4_make((int32_t)((low0 & 0x0f0f0f0fu) | (top & 0x03030303u) << 4),
                                   (int32_t)((low1 & 0x0f0f0f0fu) | ((top >> 2) & 0x03030303u) << 4),
                                   (int32_t)(((low0 >> 4) & 0x0f0f0f0fu) | ((top >> 4) & 0x03030303u) << 4),
                                   (int32_t)(((low1 >> 4) & 0x0f0f0f0fu) | ((top >> 6) & 0x03030303u) << 4));
    bytes = wasm_i8x16_sub(bytes, wasm_i8x16_splat(32));
    *lo = wasm_i16x8_extend_low_i8x16(bytes);
    *hi = wasm_i16x8_extend_high_i8x16(bytes);
}

/* Q4_K / Q5_K scales unpacked four at a time in 32-bit words (the layout of
 * quant_unpack_q4_K_scales): *scale and *min get the 8 six-bit values as int16 lanes. */
static inline void k_scales_mins(const uint8_t packed[K_SCALE_SIZE], v128_t *scale, v128_t *min)
{
    uint32_t w0, w1, w2;
    memcpy(&w0, packed, 4);
    memcpy(&w1, packed + 4, 4);
    memcpy(&w2, packed + 8, 4);
    uint32_t scale03 = w0 & 0x3f3f3f3fu, min03 = w1 & 0x3f3f3f3fu;
    uint32_t scale47 = (w2 & 0x0f0f0f0fu) | ((w0 >> 6) & 0x03030303u) << 4;
    uint32_t min47 = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 6) & 0x03030303u) << 4;
    v128_t bytes = wasm_i32x4_make((int32_t)scale03, (int32_t)scale47, (int32_t)min03, (int32_t)min47);
    *scale = wasm_u16x8_extend_low_u8x16(bytes);
    *min = wasm_u16x8_extend_high_u8x16(bytes);
}

/* ---- tile kernels (gemm) -------------------------------------------------------------------
 *
 * A tile is GEMM_MAX_ROWS = 4 weight rows × up to GEMM_MAX_TOKENS activation rows. Its four
 * rows fill the four lanes of a vector: per unit of 32 elements, each row's weights are unpacked
 * once into four int16 vectors and multiplied with every token's activations (loaded once per
 * token for all rows); the four rows' partial sums are then gathered side by side (sum4_lanes),
 * so all the per-block float work — scales, products, accumulation — is done for four rows at
 * once, lane r for row r. A tile of fewer rows repeats row 0 in the unused lanes and discards
 * them. Each lane goes through exactly the reference's operations in the reference's order
 * (quant.c: an exact integer sum per block, then sum += (float)sumi * (d_x * d_y), …), so every
 * output equals vec_dot_ref bit for bit, whatever the tile shape and position.
 *
 * The token count is a template parameter (always_inline bodies instantiated for nt = 1..4), so
 * the per-token accumulators live in registers. */

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* four halves at byte offset off of rows[0..3] as four floats (through quant_f16_table) */
static ALWAYS_INLINE v128_t gather_half4(const uint8_t *const rows[4], size_t off)
{
    uint16_t h[4];
    for (int r = 0; r < 4; r++)
        memcpy(&h[r], rows[r] + off, 2);
    return wasm_f32x4_make(quant_f16_table[h[0]], quant_f16_table[h[1]], quant_f16_table[h[2]], quant_f16_table[h[3]]);
}

static ALWAYS_INLINE float load_half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return quant_f16_table[h];
}

/* out[t * out_stride + r] = lane r of acc[t], for r < nr */
static ALWAYS_INLINE void store_tile(const v128_t *acc, int nt, int nr, float *out, size_t out_stride)
{
    for (int t = 0; t < nt; t++) {
        float *o = out + (size_t)t * out_stride;
        if (nr == 4) {
            wasm_v128_store(o, acc[t]);
        } else {
            float lanes[4];
            wasm_v128_store(lanes, acc[t]);
            for (int r = 0; r < nr; r++)
                o[r] = lanes[r];
        }
    }
}

static ALWAYS_INLINE void tile_rows(const void *w, size_t w_stride, int nr, const uint8_t *rows[4])
{
    for (int r = 0; r < 4; r++)
        rows[r] = (const uint8_t *)w + (r < nr ? (size_t)r * w_stride : 0);
}

/* a gemv8 kernel's eight rows */
static ALWAYS_INLINE void gemv8_rows(const void *w, size_t w_stride, const uint8_t *rows[8])
{
    tile_rows(w, w_stride, 4, rows);
    tile_rows((const uint8_t *)w + 4 * w_stride, w_stride, 4, rows + 4);
}

/* the sum of the four partial dot products of one row's unit with the activations y[0..3] */
static ALWAYS_INLINE v128_t dot_unit(const v128_t w[4], const v128_t y[4])
{
    return wasm_i32x4_add(wasm_i32x4_add(dot_i16(w[0], y[0]), dot_i16(w[1], y[1])),
                          wasm_i32x4_add(dot_i16(w[2], y[2]), dot_i16(w[3], y[3])));
}

/* ---- 32-element blocks ---- */

enum b32_kind { B32_Q4_0, B32_Q4_1, B32_Q5_0, B32_Q5_1, B32_Q8_0, B32_IQ4_NL };

static ALWAYS_INLINE size_t b32_size(enum b32_kind k)
{
    switch (k) {
    case B32_Q4_0: return sizeof(block_q4_0);
    case B32_Q4_1: return sizeof(block_q4_1);
    case B32_Q5_0: return sizeof(block_q5_0);
    case B32_Q5_1: return sizeof(block_q5_1);
    case B32_Q8_0: return sizeof(block_q8_0);
    default: return sizeof(block_iq4_nl);
    }
}

/* Q4_1 / Q5_1 carry a min and take Q8_1 activations */
static ALWAYS_INLINE int b32_has_min(enum b32_kind k) { return k == B32_Q4_1 || k == B32_Q5_1; }

/* Q4_0's stored q in 0..15 means q - 8. For one token the 8 is taken out of the activation sum
 * instead (one subtraction per row instead of four per row and block); for several tokens it
 * is subtracted from the unpacked weights, once for all of them. */
static ALWAYS_INLINE int q4_0_offset_in_activation(enum b32_kind k, const int NT) { return k == B32_Q4_0 && NT == 1; }

/* one block's 32 weights as four int16 vectors, w[k] pairing with activations 8k .. 8k+8
 * (Q4_0's without the offset 8 when raw) */
static ALWAYS_INLINE void b32_unpack(enum b32_kind k, const uint8_t *blk, v128_t w[4], const int raw)
{
    const v128_t low4 = wasm_i16x8_splat(0x0f);
    switch (k) {
    case B32_Q4_0: {
        const block_q4_0 *x = (const block_q4_0 *)blk;
        const v128_t eight = wasm_i16x8_splat(raw ? 0 : 8);
        v128_t qa = load_u8x8(x->qs), qb = load_u8x8(x->qs + 8);
        w[0] = wasm_i16x8_sub(wasm_v128_and(qa, low4), eight);
        w[1] = wasm_i16x8_sub(wasm_v128_and(qb, low4), eight);
        w[2] = wasm_i16x8_sub(wasm_u16x8_shr(qa, 4), eight);
        w[3] = wasm_i16x8_sub(wasm_u16x8_shr(qb, 4), eight);
        break;
    }
    case B32_Q4_1: {
        const block_q4_1 *x = (const block_q4_1 *)blk;
        v128_t qa = load_u8x8(x->qs), qb = load_u8x8(x->qs + 8);
        w[0] = wasm_v128_and(qa, low4);
        w[1] = wasm_v128_and(qb, low4);
        w[2] = wasm_u16x8_shr(qa, 4);
        w[3] = wasm_u16x8_shr(qb, 4);
        break;
    }
    case B32_Q5_0: case B32_Q5_1: {
        const uint8_t *qs = k == B32_Q5_0 ? ((const block_q5_0 *)blk)->qs : ((const block_q5_1 *)blk)->qs;
        const uint8_t *qh = k == B32_Q5_0 ? ((const block_q5_0 *)blk)->qh : ((const block_q5_1 *)blk)->qh;
        v128_t h_lo, h_hi;
        q5_high_bits(qh, &h_lo, &h_hi);
        v128_t q = wasm_v128_load(qs), l4 = wasm_i8x16_splat(0x0f), bias = wasm_i8x16_splat(k == B32_Q5_0 ? 16 : 0);
        v128_t lo = wasm_i8x16_sub(wasm_v128_or(wasm_v128_and(q, l4), h_lo), bias);
        v128_t hi = wasm_i8x16_sub(wasm_v128_or(wasm_u8x16_shr(q, 4), h_hi), bias);
        w[0] = wasm_i16x8_extend_low_i8x16(lo);
        w[1] = wasm_i16x8_extend_high_i8x16(lo);
        w[2] = wasm_i16x8_extend_low_i8x16(hi);
        w[3] = wasm_i16x8_extend_high_i8x16(hi);
        break;
    }
    case B32_Q8_0: {
        const block_q8_0 *x = (const block_q8_0 *)blk;
        for (int j = 0; j < 4; j++)
            w[j] = load_i8x8(x->qs + 8 * j);
        break;
    }
    case B32_IQ4_NL: {
        const block_iq4_nl *x = (const block_iq4_nl *)blk;
        const v128_t grid = wasm_v128_load(quant_kvalues_iq4nl), l4 = wasm_i8x16_splat(0x0f);
        v128_t q = wasm_v128_load(x->qs);
        v128_t lo = wasm_i8x16_swizzle(grid, wasm_v128_and(q, l4)), hi = wasm_i8x16_swizzle(grid, wasm_u8x16_shr(q, 4));
        w[0] = wasm_i16x8_extend_low_i8x16(lo);
        w[1] = wasm_i16x8_extend_high_i8x16(lo);
        w[2] = wasm_i16x8_extend_low_i8x16(hi);
        w[3] = wasm_i16x8_extend_high_i8x16(hi);
        break;
    }
    }
}

#if WICK_RELAXED
/* the types whose stored values fit the relaxed dot's unsigned 7-bit operand */
static ALWAYS_INLINE int b32_relaxed(enum b32_kind k) { return k == B32_Q4_0 || k == B32_Q4_1 || k == B32_Q5_0 || k == B32_Q5_1; }
/* what the stored values stand for: q - offset */
static ALWAYS_INLINE int b32_offset(enum b32_kind k) { return k == B32_Q4_0 ? 8 : k == B32_Q5_0 ? 16 : 0; }

/* one block's 32 stored values (no offset) as 16 bytes of elements 0..15 and 16 of 16..31 */
static ALWAYS_INLINE void b32_unpack_u8(enum b32_kind k, const uint8_t *blk, v128_t *lo, v128_t *hi)
{
    const v128_t l4 = wasm_i8x16_splat(0x0f);
    if (k == B32_Q4_0 || k == B32_Q4_1) {
        v128_t q = wasm_v128_load(k == B32_Q4_0 ? ((const block_q4_0 *)blk)->qs : ((const block_q4_1 *)blk)->qs);
        *lo = wasm_v128_and(q, l4);
        *hi = wasm_u8x16_shr(q, 4);
    } else {
        const uint8_t *qs = k == B32_Q5_0 ? ((const block_q5_0 *)blk)->qs : ((const block_q5_1 *)blk)->qs;
        const uint8_t *qh = k == B32_Q5_0 ? ((const block_q5_0 *)blk)->qh : ((const block_q5_1 *)blk)->qh;
        v128_t h_lo, h_hi, q = wasm_v128_load(qs);
        q5_high_bits(qh, &h_lo, &h_hi);
        *lo = wasm_v128_or(wasm_v128_and(q, l4), h_lo);
        *hi = wasm_v128_or(wasm_u8x16_shr(q, 4), h_hi);
    }
}

/* partial sums (i32x4) of one block's stored values times the activations y0 (elements 0..15),
 * y1 (16..31); each 16-bit lane is at most 2 * 128 * 31, two of them fit */
static ALWAYS_INLINE v128_t b32_rdot(v128_t lo, v128_t hi, v128_t y0, v128_t y1)
{
    return wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_add(rdot(y0, lo), rdot(y1, hi)));
}
#endif

/* acc + one block's term for four rows: (float)isum * (d_x * d_y) [+ m_x * s_y], yb the
 * activation block (its fp16 d, and Q8_1's s) */
static ALWAYS_INLINE v128_t b32_add_term(enum b32_kind k, v128_t acc, v128_t isum, v128_t dx, v128_t mx, const uint8_t *yb)
{
    v128_t term = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_mul(dx, wasm_f32x4_splat(load_half(yb))));
    if (b32_has_min(k))
        term = wasm_f32x4_add(term, wasm_f32x4_mul(mx, wasm_f32x4_splat(load_half(yb + offsetof(block_q8_1, s)))));
    return wasm_f32x4_add(acc, term);
}

/* The reference per block: sum += (float)sumi * (d_x * d_y) [+ m_x * s_y], in four lanes. The
 * fp16 scale d sits first in every block; Q4_1 / Q5_1's min m and Q8_1's s follow it. */
static ALWAYS_INLINE void gemm_b32(enum b32_kind k, const int NT, int n, const void *w, size_t w_stride, int nr,
                                   const void *a, size_t a_stride, float *out, size_t out_stride)
{
    const size_t bsize = b32_size(k), asize = b32_has_min(k) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t qs_off = b32_has_min(k) ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
    const uint8_t *rows[4];
    tile_rows(w, w_stride, nr, rows);
    v128_t acc[GEMM_MAX_TOKENS];
    for (int t = 0; t < NT; t++)
        acc[t] = wasm_f32x4_splat(0.0f);
    for (int b = 0; b < n / 32; b++) {
        const size_t off = (size_t)b * bsize;
        v128_t dx = gather_half4(rows, off), mx = wasm_f32x4_splat(0.0f);
        if (b32_has_min(k))
            mx = gather_half4(rows, off + offsetof(block_q4_1, m));
#if WICK_RELAXED
        if (b32_relaxed(k)) {
            v128_t wl[4], wh[4];
            for (int r = 0; r < 4; r++)
                b32_unpack_u8(k, rows[r] + off, &wl[r], &wh[r]);
            for (int t = 0; t < NT; t++) {
                const uint8_t *yb = (const uint8_t *)a + (size_t)t * a_stride + (size_t)b * asize;
                const int8_t *q8 = (const int8_t *)(yb + qs_off);
                v128_t y0 = wasm_v128_load(q8), y1 = wasm_v128_load(q8 + 16);
                v128_t d0 = b32_rdot(wl[0], wh[0], y0, y1), d1 = b32_rdot(wl[1], wh[1], y0, y1);
                v128_t d2 = b32_rdot(wl[2], wh[2], y0, y1), d3 = b32_rdot(wl[3], wh[3], y0, y1);
                if (b32_offset(k)) {
                    /* partial sums of offset * y, the same for every row */
                    v128_t o = wasm_i8x16_splat((int8_t)b32_offset(k)), yo = b32_rdot(o, o, y0, y1);
                    d0 = wasm_i32x4_sub(d0, yo);
                    d1 = wasm_i32x4_sub(d1, yo);
                    d2 = wasm_i32x4_sub(d2, yo);
                    d3 = wasm_i32x4_sub(d3, yo);
                }
                acc[t] = b32_add_term(k, acc[t], sum4_lanes(d0, d1, d2, d3), dx, mx, yb);
            }
            continue;
        }
#endif
        v128_t wq[4][4];
        for (int r = 0; r < 4; r++)
            b32_unpack(k, rows[r] + off, wq[r], q4_0_offset_in_activation(k, NT));
        for (int t = 0; t < NT; t++) {
            const uint8_t *yb = (const uint8_t *)a + (size_t)t * a_stride + (size_t)b * asize;
            const int8_t *q8 = (const int8_t *)(yb + qs_off);
            v128_t ya[4] = { load_i8x8(q8), load_i8x8(q8 + 8), load_i8x8(q8 + 16), load_i8x8(q8 + 24) };
            v128_t d0 = dot_unit(wq[0], ya), d1 = dot_unit(wq[1], ya), d2 = dot_unit(wq[2], ya), d3 = dot_unit(wq[3], ya);
            if (q4_0_offset_in_activation(k, NT)) {
                /* partial sums of 8 * y, the same for every row */
                v128_t ysum = wasm_i16x8_add(wasm_i16x8_add(ya[0], ya[1]), wasm_i16x8_add(ya[2], ya[3]));
                v128_t off8 = dot_i16(ysum, wasm_i16x8_splat(8));
                d0 = wasm_i32x4_sub(d0, off8);
                d1 = wasm_i32x4_sub(d1, off8);
                d2 = wasm_i32x4_sub(d2, off8);
                d3 = wasm_i32x4_sub(d3, off8);
            }
            acc[t] = b32_add_term(k, acc[t], sum4_lanes(d0, d1, d2, d3), dx, mx, yb);
        }
    }
    store_tile(acc, NT, nr, out, out_stride);
}

/* Decode: one token against eight rows, w + r * w_stride (r < 8), two quads of lanes side by
 * side, so that eight weight streams are read at once (forward.c puts the rows far apart); each
 * lane goes through the reference's operations in its order, as in gemm_b32. */
static ALWAYS_INLINE void gemv8_b32(enum b32_kind k, int n, const void *w, size_t w_stride, const void *a, float out[8])
{
    const size_t bsize = b32_size(k), asize = b32_has_min(k) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t qs_off = b32_has_min(k) ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
    const uint8_t *rows[8];
    for (int r = 0; r < 8; r++)
        rows[r] = (const uint8_t *)w + (size_t)r * w_stride;
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
    for (int b = 0; b < n / 32; b++) {
        const size_t off = (size_t)b * bsize;
        const uint8_t *yb = (const uint8_t *)a + (size_t)b * asize;
        const int8_t *q8 = (const int8_t *)(yb + qs_off);
        v128_t d[8];
#if WICK_RELAXED
        if (b32_relaxed(k)) {
            v128_t y0 = wasm_v128_load(q8), y1 = wasm_v128_load(q8 + 16), yo = wasm_i32x4_splat(0);
            if (b32_offset(k)) { /* partial sums of offset * y, the same for every row */
                v128_t o = wasm_i8x16_splat((int8_t)b32_offset(k));
                yo = b32_rdot(o, o, y0, y1);
            }
            for (int r = 0; r < 8; r++) {
                v128_t lo, hi;
                b32_unpack_u8(k, rows[r] + off, &lo, &hi);
                d[r] = wasm_i32x4_sub(b32_rdot(lo, hi, y0, y1), yo);
            }
        } else
#endif
        {
            v128_t ya[4] = { load_i8x8(q8), load_i8x8(q8 + 8), load_i8x8(q8 + 16), load_i8x8(q8 + 24) };
            v128_t off8 = wasm_i32x4_splat(0);
            if (q4_0_offset_in_activation(k, 1)) /* partial sums of 8 * y, the same for every row */
                off8 = dot_i16(wasm_i16x8_add(wasm_i16x8_add(ya[0], ya[1]), wasm_i16x8_add(ya[2], ya[3])), wasm_i16x8_splat(8));
            for (int r = 0; r < 8; r++) {
                v128_t wq[4];
                b32_unpack(k, rows[r] + off, wq, q4_0_offset_in_activation(k, 1));
                d[r] = wasm_i32x4_sub(dot_unit(wq, ya), off8);
            }
        }
        v128_t dy = wasm_f32x4_splat(load_half(yb));
        v128_t t0 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum4_lanes(d[0], d[1], d[2], d[3])), wasm_f32x4_mul(gather_half4(rows, off), dy));
        v128_t t1 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sum4_lanes(d[4], d[5], d[6], d[7])), wasm_f32x4_mul(gather_half4(rows + 4, off), dy));
        if (b32_has_min(k)) {
            v128_t sy = wasm_f32x4_splat(load_half(yb + offsetof(block_q8_1, s)));
            t0 = wasm_f32x4_add(t0, wasm_f32x4_mul(gather_half4(rows, off + offsetof(block_q4_1, m)), sy));
            t1 = wasm_f32x4_add(t1, wasm_f32x4_mul(gather_half4(rows + 4, off + offsetof(block_q4_1, m)), sy));
        }
        acc0 = wasm_f32x4_add(acc0, t0);
        acc1 = wasm_f32x4_add(acc1, t1);
    }
    wasm_v128_store(out, acc0);
    wasm_v128_store(out + 4, acc1);
}

#define GEMV8_ENTRY(name, BODY, ARG)                                                                \
    void name(int n, const void *w, size_t w_stride, const void *a, float out[8]) { BODY(ARG, n, w, w_stride, a, out); }

/* a gemm entry point: the body instantiated for each token count */
#define GEMM_ENTRY(name, BODY, ...)                                                                 \
    void name(int n, const void *w, size_t w_stride, int nr, const void *a, size_t a_stride, int nt, \
              float *out, size_t out_stride)                                                        \
    {                                                                                               \
        for (; nt > 0; nt -= GEMM_MAX_TOKENS, a = (const uint8_t *)a + GEMM_MAX_TOKENS * a_stride,  \
                       out += GEMM_MAX_TOKENS * out_stride) {                                       \
            switch (nt) {                                                                           \
            case 1: BODY(__VA_ARGS__, 1, n, w, w_stride, nr, a, a_stride, out, out_stride); break;  \
            case 2: BODY(__VA_ARGS__, 2, n, w, w_stride, nr, a, a_stride, out, out_stride); break;  \
            case 3: BODY(__VA_ARGS__, 3, n, w, w_stride, nr, a, a_stride, out, out_stride); break;  \
            default: BODY(__VA_ARGS__, 4, n, w, w_stride, nr, a, a_stride, out, out_stride); break; \
            }                                                                                       \
        }                                                                                           \
    }

/* the tile and the eight-row decode kernel of each 32-element block type */
#define B32_ENTRIES(suffix, KIND)                                                                   \
    GEMM_ENTRY(quant_gemm_##suffix, gemm_b32, KIND)                                                 \
    GEMV8_ENTRY(quant_gemv8_##suffix, gemv8_b32, KIND)

B32_ENTRIES(q4_0, B32_Q4_0)
B32_ENTRIES(q4_1, B32_Q4_1)
B32_ENTRIES(q5_0, B32_Q5_0)
B32_ENTRIES(q5_1, B32_Q5_1)
B32_ENTRIES(q8_0, B32_Q8_0)
B32_ENTRIES(iq4_nl, B32_IQ4_NL)

/* ---- K-quants: super-blocks of 256 against Q8_K ----
 * The unit of 32 elements u = 2j + p is taken with each weight already multiplied by its
 * sub-block's integer scale (|scale * q| <= 63 * 128 fits int16; a super-block's sum fits int32),
 * so each row and token accumulates its partial sums over the whole super-block and they are
 * gathered into lanes once, at its end. The stored offsets (Q6_K's q - 32,
 * Q3_K's q - 4) and the mins (Q2_K, Q4_K, Q5_K) go through the activation block sums
 * (dot_bsums). */

enum k_kind { K_Q2, K_Q3, K_Q4, K_Q5, K_Q6, K_Q6R, K_Q4R };

static ALWAYS_INLINE size_t k_size(enum k_kind k)
{
    switch (k) {
    case K_Q2: return sizeof(block_q2_K);
    case K_Q3: return sizeof(block_q3_K);
    case K_Q4: case K_Q4R: return sizeof(block_q4_K);
    case K_Q5: return sizeof(block_q5_K);
    case K_Q6: return sizeof(block_q6_K);
    default: return sizeof(block_q6_K_r);
    }
}

/* Q2_K, Q4_K and Q5_K subtract dmin times a sum of mins; Q3_K and Q6_K fold an offset in */
static ALWAYS_INLINE int k_has_min(enum k_kind k) { return k == K_Q2 || k == K_Q4 || k == K_Q5 || k == K_Q4R; }

/* A super-block's integer scales: sc[s] for sub-block s (16 sub-blocks of 16 elements, or for
 * Q4_K / Q5_K 8 of 32); *c_lo, *c_hi the 16 coefficients of the activation's bsums (the mins,
 * or the scales for the offset). */
static ALWAYS_INLINE void k_scales(enum k_kind k, const uint8_t *blk, int16_t sc[16], v128_t *c_lo, v128_t *c_hi)
{
    switch (k) {
    case K_Q2: {
        const block_q2_K *x = (const block_q2_K *)blk;
        v128_t lo = load_u8x8(x->scales), hi = load_u8x8(x->scales + 8), low4 = wasm_i16x8_splat(0x0f);
        wasm_v128_store(sc, wasm_v128_and(lo, low4));
        wasm_v128_store(sc + 8, wasm_v128_and(hi, low4));
        *c_lo = wasm_u16x8_shr(lo, 4);
        *c_hi = wasm_u16x8_shr(hi, 4);
        break;
    }
    case K_Q3:
        q3_K_scales(((const block_q3_K *)blk)->scales, c_lo, c_hi);
        wasm_v128_store(sc, *c_lo);
        wasm_v128_store(sc + 8, *c_hi);
        break;
    case K_Q4: case K_Q5: {
        v128_t scale, min;
        k_scales_mins(k == K_Q4 ? ((const block_q4_K *)blk)->scales : ((const block_q5_K *)blk)->scales, &scale, &min);
        wasm_v128_store(sc, scale);
        *c_lo = wasm_i16x8_shuffle(min, min, 0, 0, 1, 1, 2, 2, 3, 3);
        *c_hi = wasm_i16x8_shuffle(min, min, 4, 4, 5, 5, 6, 6, 7, 7);
        break;
    }
    case K_Q6: {
        const block_q6_K *x = (const block_q6_K *)blk;
        *c_lo = load_i8x8(x->scales);
        *c_hi = load_i8x8(x->scales + 8);
        wasm_v128_store(sc, *c_lo);
        wasm_v128_store(sc + 8, *c_hi);
        break;
    }
    case K_Q6R: case K_Q4R: break;   /* q6r_parts, q4r_parts */
    }
}

/* A unit is 16 weight bytes of a super-block read for two sets of 16 elements (two nibbles, or
 * two bit pairs): w[0], w[1] hold the first set, at elements first .. first+16, times scale
 * sc[first / 16]; w[2], w[3] the second set, at second .. second+16, times sc[second / 16]
 * (for Q4_K / Q5_K, sub-blocks of 32: sc[first / 32], sc[second / 32]). Reading every loaded
 * byte for both sets also keeps the loads 8 → 16-bit widening (i16x8.load8x8_u), which LLVM
 * turns into slower byte shifts and shuffles when one load feeds a single shift. */
typedef struct { int first, second; } k_unit_sets;

/* Unit number v (0..7) of each type, and its two element sets:
 *   Q4_K / Q5_K  v = 2j + q:       qs[32j + 16q + l] (l < 16) low nibble = element 64j + 16q + l,
 *                                  high nibble = 64j + 32 + 16q + l; Q5_K's bit 4 is bit 2j (low)
 *                                  or 2j + 1 (high) of qh[16q + l]
 *   Q6_K         v = 4h + 2p + q:  ql[64h + 32p + 16q + l] low nibble = element 128h + 32p + 16q + l,
 *                                  high nibble = 128h + 32(p + 2) + 16q + l; bits 4, 5 from bits
 *                                  2p.. (low) or 2(p + 2).. (high) of qh[32h + 16q + l]
 *   Q2_K / Q3_K  v = 4h + 2i + q:  bits 4i.. of qs[32h + 16q + l] = element 128h + 64i + 16q + l,
 *                                  bits 4i + 2.. = element 128h + 64i + 32 + 16q + l; Q3_K's bit 2
 *                                  is bit 4h + 2i (first) or 4h + 2i + 1 (second) of hmask[16q + l] */
static ALWAYS_INLINE k_unit_sets k_sets(enum k_kind k, const int v)
{
    k_unit_sets s;
    if (k == K_Q4 || k == K_Q5) {
        s.first = 64 * (v >> 1) + 16 * (v & 1);
        s.second = s.first + 32;
    } else {
        s.first = 128 * (v >> 2) + 32 * ((v >> 1) & 1) * (k == K_Q6 ? 1 : 2) + 16 * (v & 1);
        s.second = s.first + (k == K_Q6 ? 64 : 32);
    }
    return s;
}

static ALWAYS_INLINE void k_unpack(enum k_kind k, const uint8_t *blk, const int v, const int16_t sc[16], v128_t w[4])
{
    const k_unit_sets set = k_sets(k, v);
    const int q = v & 1;
    v128_t lo[2], hi[2];
    switch (k) {
    case K_Q2: case K_Q3: {
        const uint8_t *qs = k == K_Q2 ? ((const block_q2_K *)blk)->qs : ((const block_q3_K *)blk)->qs;
        const int h = v >> 2, i = (v >> 1) & 1, three = 3;
        for (int m = 0; m < 2; m++) {
            v128_t b = load_u8x8(qs + 32 * h + 16 * q + 8 * m);
            lo[m] = wasm_v128_and(wasm_u16x8_shr(b, 4 * i), wasm_i16x8_splat(three));
            hi[m] = wasm_v128_and(wasm_u16x8_shr(b, 4 * i + 2), wasm_i16x8_splat(three));
            if (k == K_Q3) {
                /* hmask bit 4h + 2i moved to bit 2 */
                v128_t hm = wasm_i16x8_shl(load_u8x8(((const block_q3_K *)blk)->hmask + 16 * q + 8 * m), 2);
                lo[m] = wasm_v128_or(lo[m], wasm_v128_and(wasm_u16x8_shr(hm, 4 * h + 2 * i), wasm_i16x8_splat(4)));
                hi[m] = wasm_v128_or(hi[m], wasm_v128_and(wasm_u16x8_shr(hm, 4 * h + 2 * i + 1), wasm_i16x8_splat(4)));
            }
        }
        break;
    }
    case K_Q4: case K_Q5: {
        const uint8_t *qs = k == K_Q4 ? ((const block_q4_K *)blk)->qs : ((const block_q5_K *)blk)->qs;
        const int j = v >> 1;
        for (int m = 0; m < 2; m++) {
            v128_t b = load_u8x8(qs + 32 * j + 16 * q + 8 * m);
            lo[m] = wasm_v128_and(b, wasm_i16x8_splat(0x0f));
            hi[m] = wasm_u16x8_shr(b, 4);
            if (k == K_Q5) {
                /* qh bit 2j moved to bit 4 for the low nibble, bit 2j + 1 for the high one */
                v128_t hb = wasm_i16x8_shl(load_u8x8(((const block_q5_K *)blk)->qh + 16 * q + 8 * m), 4);
                lo[m] = wasm_v128_or(lo[m], wasm_v128_and(wasm_u16x8_shr(hb, 2 * j), wasm_i16x8_splat(0x10)));
                hi[m] = wasm_v128_or(hi[m], wasm_v128_and(wasm_u16x8_shr(hb, 2 * j + 1), wasm_i16x8_splat(0x10)));
            }
        }
        break;
    }
    case K_Q6: {
        const block_q6_K *x = (const block_q6_K *)blk;
        const int h = v >> 2, p = (v >> 1) & 1;
        for (int m = 0; m < 2; m++) {
            v128_t b = load_u8x8(x->ql + 64 * h + 32 * p + 16 * q + 8 * m);
            /* qh bits 2p.. (low) and 2p + 4.. (high) moved to bits 4, 5 */
            v128_t hb = wasm_i16x8_shl(load_u8x8(x->qh + 32 * h + 16 * q + 8 * m), 4);
            lo[m] = wasm_v128_or(wasm_v128_and(b, wasm_i16x8_splat(0x0f)), wasm_v128_and(wasm_u16x8_shr(hb, 2 * p), wasm_i16x8_splat(0x30)));
            hi[m] = wasm_v128_or(wasm_u16x8_shr(b, 4), wasm_v128_and(wasm_u16x8_shr(hb, 2 * p + 4), wasm_i16x8_splat(0x30)));
        }
        break;
    }
    case K_Q6R: case K_Q4R: lo[0] = lo[1] = hi[0] = hi[1] = wasm_i32x4_splat(0); break;   /* q6r_parts, q4r_parts */
    }
    const int shift = k == K_Q4 || k == K_Q5 ? 5 : 4;   /* log2 of the sub-block size */
    v128_t s0 = wasm_i16x8_splat(sc[set.first >> shift]), s1 = wasm_i16x8_splat(sc[set.second >> shift]);
    w[0] = wasm_i16x8_mul(lo[0], s0);
    w[1] = wasm_i16x8_mul(lo[1], s0);
    w[2] = wasm_i16x8_mul(hi[0], s1);
    w[3] = wasm_i16x8_mul(hi[1], s1);
}

#if WICK_RELAXED
/* lane i (0..15) of the scales lo (0..7) : hi (8..15) in all eight lanes; i is a constant where
 * this is inlined, so one shuffle remains */
static ALWAYS_INLINE v128_t bcast_i16(v128_t lo, v128_t hi, const int i)
{
    v128_t v = i < 8 ? lo : hi;
    switch (i & 7) {
    case 0: return wasm_i16x8_shuffle(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
    case 1: return wasm_i16x8_shuffle(v, v, 1, 1, 1, 1, 1, 1, 1, 1);
    case 2: return wasm_i16x8_shuffle(v, v, 2, 2, 2, 2, 2, 2, 2, 2);
    case 3: return wasm_i16x8_shuffle(v, v, 3, 3, 3, 3, 3, 3, 3, 3);
    case 4: return wasm_i16x8_shuffle(v, v, 4, 4, 4, 4, 4, 4, 4, 4);
    case 5: return wasm_i16x8_shuffle(v, v, 5, 5, 5, 5, 5, 5, 5, 5);
    case 6: return wasm_i16x8_shuffle(v, v, 6, 6, 6, 6, 6, 6, 6, 6);
    default: return wasm_i16x8_shuffle(v, v, 7, 7, 7, 7, 7, 7, 7, 7);
    }
}

/* every byte of v with its bit `from` moved to bit `to` (other bits garbage, to be masked), by a
 * 16-bit shift: one instruction, where an 8-bit shift is several on x86. A bit moves at most 4
 * places here, so the bit landing at `to` (4 or 5) of each byte comes from the same byte. */
static ALWAYS_INLINE v128_t move_bits16(v128_t v, const int from, const int to)
{
    return from < to ? wasm_i16x8_shl(v, to - from) : from > to ? wasm_u16x8_shr(v, from - to) : v;
}

/* Unit v's stored values (0..63, no scale, no offset) as 16 bytes for each of its two element
 * sets (lo: first .. first+16, hi: second .. second+16), for the relaxed dot; the bit layout is
 * k_unpack's, on 8-bit lanes. */
static ALWAYS_INLINE void k_unpack_u8(enum k_kind k, const uint8_t *blk, const int v, v128_t *lo, v128_t *hi)
{
    const int q = v & 1;
    switch (k) {
    case K_Q2: case K_Q3: {
        const uint8_t *qs = k == K_Q2 ? ((const block_q2_K *)blk)->qs : ((const block_q3_K *)blk)->qs;
        const int h = v >> 2, i = (v >> 1) & 1;
        v128_t b = wasm_v128_load(qs + 32 * h + 16 * q), three = wasm_i8x16_splat(3);
        *lo = wasm_v128_and(wasm_u8x16_shr(b, 4 * i), three);
        *hi = wasm_v128_and(wasm_u8x16_shr(b, 4 * i + 2), three);
        if (k == K_Q3) {
            /* hmask bit 4h + 2i (first) or 4h + 2i + 1 (second) as bit 2 */
            v128_t hm = wasm_v128_load(((const block_q3_K *)blk)->hmask + 16 * q), one = wasm_i8x16_splat(1);
            *lo = wasm_v128_or(*lo, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(hm, 4 * h + 2 * i), one), 2));
            *hi = wasm_v128_or(*hi, wasm_i8x16_shl(wasm_v128_and(wasm_u8x16_shr(hm, 4 * h + 2 * i + 1), one), 2));
        }
        break;
    }
    case K_Q4: case K_Q5: {
        const uint8_t *qs = k == K_Q4 ? ((const block_q4_K *)blk)->qs : ((const block_q5_K *)blk)->qs;
        const int j = v >> 1;
        v128_t b = wasm_v128_load(qs + 32 * j + 16 * q), low4 = wasm_i8x16_splat(0x0f);
        *lo = wasm_v128_and(b, low4);
        *hi = wasm_v128_and(wasm_u16x8_shr(b, 4), low4);
        if (k == K_Q5) {
            /* qh bit 2j (low nibble) or 2j + 1 (high) as bit 4 */
            v128_t hb = wasm_v128_load(((const block_q5_K *)blk)->qh + 16 * q), bit4 = wasm_i8x16_splat(0x10);
            *lo = wasm_v128_or(*lo, wasm_v128_and(move_bits16(hb, 2 * j, 4), bit4));
            *hi = wasm_v128_or(*hi, wasm_v128_and(move_bits16(hb, 2 * j + 1, 4), bit4));
        }
        break;
    }
    case K_Q6: {
        const block_q6_K *x = (const block_q6_K *)blk;
        const int h = v >> 2, p = (v >> 1) & 1;
        v128_t b = wasm_v128_load(x->ql + 64 * h + 32 * p + 16 * q), low4 = wasm_i8x16_splat(0x0f);
        v128_t hb = wasm_v128_load(x->qh + 32 * h + 16 * q), bits45 = wasm_i8x16_splat(0x30);
        /* qh bits 2p.. (low nibble) and 2p + 4.. (high) as bits 4, 5 */
        *lo = wasm_v128_or(wasm_v128_and(b, low4), wasm_v128_and(move_bits16(hb, 2 * p, 4), bits45));
        *hi = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(b, 4), low4), wasm_v128_and(move_bits16(hb, 2 * p + 4, 4), bits45));
        break;
    }
    case K_Q6R: case K_Q4R: *lo = *hi = wasm_i32x4_splat(0); break;   /* q6r_parts, q4r_parts */
    }
}
#endif

/* part[row][t] += the partial sums of unit v of row `row` times token t's activations. One row
 * at a time, so that its unit and its accumulators stay in registers while the tokens pass (the
 * activations are loaded again per row, from L1). For one token (decode) the four rows' units
 * used to be unpacked side by side, each activation vector loaded once for all of them: in V8
 * that was slower in the relaxed build (bench_kernels 4x1: Q5_K 1.3x, Q6_K 1.35x) and, as it
 * also changed how LLVM compiled the tiles, made the plain build's prefill tiles 25-34% slower
 * (its Q4_K 4x1 decode was 13% faster). */
static ALWAYS_INLINE void k_unit(enum k_kind k, const int NT, const uint8_t *const rows[4], size_t off,
                                 int16_t sc[4][16], const block_q8_K *const y[], v128_t part[4][GEMM_MAX_TOKENS],
                                 const int v, const int row)
{
    const k_unit_sets set = k_sets(k, v);
    const uint8_t *blk = rows[row] + off;
#if WICK_RELAXED
    {
        /* Each 16-bit lane of a relaxed dot is at most 2 * 128 * 63, and is multiplied by its
         * sub-block's scale in 32 bits (i32x4.dot_i16x8_s with the scale in every lane). Q4_K and
         * Q5_K's units 2j and 2j + 1 read the same two sub-blocks: k_block hands both here at
         * once (v even, pair), and their 16-bit products are added before the scale (at most
         * 2 * 2 * 128 * 31 per lane), one scale multiply for two units. */
        const int shift = k == K_Q4 || k == K_Q5 ? 5 : 4;
        const int pair = (k == K_Q4 || k == K_Q5) && !(v & 1);
        const k_unit_sets set2 = k_sets(k, v + 1);
        /* (written for a range of rows although it is one: LLVM 19 compiles the 4x4 tile of this
         * form 1.3x faster for Q6_K than the same with plain variables, bench_kernels) */
        const int r0 = row, r1 = row + 1;
        v128_t wl[4], wh[4], wl2[4], wh2[4], s0[4], s1[4];
        for (int r = r0; r < r1; r++) {
            k_unpack_u8(k, rows[r] + off, v, &wl[r], &wh[r]);
            if (pair)
                k_unpack_u8(k, rows[r] + off, v + 1, &wl2[r], &wh2[r]);
            v128_t lo = wasm_v128_load(sc[r]), hi = wasm_v128_load(sc[r] + 8);
            s0[r] = bcast_i16(lo, hi, set.first >> shift);
            s1[r] = bcast_i16(lo, hi, set.second >> shift);
        }
        for (int t = 0; t < NT; t++) {
            const int8_t *q8 = y[t]->qs;
            v128_t yf = wasm_v128_load(q8 + set.first), ys = wasm_v128_load(q8 + set.second);
            if (pair) {
                v128_t yf2 = wasm_v128_load(q8 + set2.first), ys2 = wasm_v128_load(q8 + set2.second);
                for (int r = r0; r < r1; r++) {
                    v128_t a = wasm_i16x8_add(rdot(yf, wl[r]), rdot(yf2, wl2[r]));
                    v128_t b = wasm_i16x8_add(rdot(ys, wh[r]), rdot(ys2, wh2[r]));
                    part[r][t] = wasm_i32x4_add(part[r][t], wasm_i32x4_add(dot_i16(a, s0[r]), dot_i16(b, s1[r])));
                }
            } else {
                for (int r = r0; r < r1; r++)
                    part[r][t] = wasm_i32x4_add(part[r][t], wasm_i32x4_add(dot_i16(rdot(yf, wl[r]), s0[r]), dot_i16(rdot(ys, wh[r]), s1[r])));
            }
        }
        return;
    }
#endif
    v128_t wq[4];
    k_unpack(k, blk, v, sc[row], wq);
    for (int t = 0; t < NT; t++) {
        const int8_t *q8 = y[t]->qs;
        v128_t ya[4] = { load_i8x8(q8 + set.first), load_i8x8(q8 + set.first + 8),
                         load_i8x8(q8 + set.second), load_i8x8(q8 + set.second + 8) };
        part[row][t] = wasm_i32x4_add(part[row][t], dot_unit(wq, ya));
    }
}

#if WICK_RELAXED
/* Q6_K_R (quant.h): one super-block of rows[0..3] against every token t < NT, as k_block's
 * per-row partial sums part[r][t] and activation-sum coefficients (the scales). Each group of
 * 64 stored values is four vectors; each vector's pair products (i16 lane k: sub-block k of its
 * half) for two vectors are added in 16 bits (at most 2 * 2 * 128 * 63) and weighed by the
 * half's eight scales at once. */
static ALWAYS_INLINE void q6r_parts(const int NT, const uint8_t *const rows[4], size_t off, const block_q8_K *const y[],
                                    v128_t c_lo[4], v128_t c_hi[4], v128_t part[4][GEMM_MAX_TOKENS])
{
    const v128_t low6 = wasm_i8x16_splat(0x3f);
#ifdef __clang__
#pragma clang loop unroll(disable)   /* four copies of the row would only weigh on the download */
#endif
    for (int r = 0; r < 4; r++) {
        const block_q6_K_r *x = (const block_q6_K_r *)(rows[r] + off);
        c_lo[r] = load_i8x8(x->scales);
        c_hi[r] = load_i8x8(x->scales + 8);
        for (int t = 0; t < NT; t++)
            part[r][t] = wasm_i32x4_splat(0);
        for (int g = 0; g < 4; g++) {
            const uint8_t *q = x->q + 48 * g;
            v128_t p0 = wasm_v128_load(q), p1 = wasm_v128_load(q + 16), p2 = wasm_v128_load(q + 32);
            v128_t a = wasm_v128_and(p0, low6), b = wasm_v128_and(p1, low6), c = wasm_v128_and(p2, low6);
            /* the top two bits of each byte, moved by 16-bit shifts (the bits that cross into
             * the lower byte are masked away) */
            v128_t d = wasm_v128_or(wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(p0, 6), wasm_i8x16_splat(0x03)),
                                                 wasm_v128_and(wasm_u16x8_shr(p1, 4), wasm_i8x16_splat(0x0c))),
                                    wasm_v128_and(wasm_u16x8_shr(p2, 2), wasm_i8x16_splat(0x30)));
            v128_t sc = g < 2 ? c_lo[r] : c_hi[r];
            for (int t = 0; t < NT; t++) {
                const int8_t *q8 = y[t]->qs + 64 * g;
                v128_t ab = wasm_i16x8_add(rdot(wasm_v128_load(q8), a), rdot(wasm_v128_load(q8 + 16), b));
                v128_t cd = wasm_i16x8_add(rdot(wasm_v128_load(q8 + 32), c), rdot(wasm_v128_load(q8 + 48), d));
                part[r][t] = wasm_i32x4_add(part[r][t], wasm_i32x4_add(dot_i16(ab, sc), dot_i16(cd, sc)));
            }
        }
    }
}

/* Q4_K_R (quant.h), as q6r_parts: per row and token, the sixteen pair-product vectors of a
 * super-block added in 16 bits eight at a time (lane k: sub-block k), each sum weighed by the
 * eight scales at once; the mins go through the activation sums as for Q4_K (k_block). */
static ALWAYS_INLINE void q4r_parts(const int NT, const uint8_t *const rows[4], size_t off, const block_q8_K *const y[],
                                    v128_t c_lo[4], v128_t c_hi[4], v128_t part[4][GEMM_MAX_TOKENS])
{
    const v128_t low4 = wasm_i8x16_splat(0x0f);
#ifdef __clang__
#pragma clang loop unroll(disable)
#endif
    for (int r = 0; r < 4; r++) {
        const block_q4_K *x = (const block_q4_K *)(rows[r] + off);
        v128_t scale, min;
        k_scales_mins(x->scales, &scale, &min);
        c_lo[r] = wasm_i16x8_shuffle(min, min, 0, 0, 1, 1, 2, 2, 3, 3);
        c_hi[r] = wasm_i16x8_shuffle(min, min, 4, 4, 5, 5, 6, 6, 7, 7);
        /* runs m and m + 8 (one byte's nibbles) add into one 16-bit sum per token: lane k is
         * sub-block k in both; eight products (four bytes) per sum, then weighed */
        for (int t = 0; t < NT; t++)
            part[r][t] = wasm_i32x4_splat(0);
        for (int m0 = 0; m0 < 8; m0 += 4) {
            v128_t sum[GEMM_MAX_TOKENS];
            for (int t = 0; t < NT; t++)
                sum[t] = wasm_i16x8_splat(0);
            for (int m = m0; m < m0 + 4; m++) {
                v128_t b = wasm_v128_load(x->qs + 16 * m);
                v128_t lo = wasm_v128_and(b, low4), hi = wasm_v128_and(wasm_u16x8_shr(b, 4), low4);
                for (int t = 0; t < NT; t++)
                    sum[t] = wasm_i16x8_add(sum[t], wasm_i16x8_add(rdot(wasm_v128_load(y[t]->qs + 16 * m), lo),
                                                                   rdot(wasm_v128_load(y[t]->qs + 16 * (m + 8)), hi)));
            }
            for (int t = 0; t < NT; t++)
                part[r][t] = wasm_i32x4_add(part[r][t], dot_i16(sum[t], scale));
        }
    }
}
#endif

/* the reference per super-block, in four lanes:
 *   Q3_K, Q6_K:        sum += d_x * d_y * (float)sumi
 *   Q4_K, Q5_K:        sum += d_x * d_y * (float)sumi - dmin_x * d_y * (float)sum_mins
 *   Q2_K:              sum += d_y * d_x * (float)sumi - d_y * dmin_x * (float)sum_mins
 * (d_y * d_x == d_x * d_y exactly) */
/* one super-block (at byte offset off of rows[0..3]) of every token t < NT: acc[t] += its term */
static ALWAYS_INLINE void k_block(enum k_kind k, const int NT, const uint8_t *const rows[4], size_t off,
                                  const block_q8_K *const y[], v128_t acc[])
{
    size_t d_off, dmin_off;
    switch (k) {
    case K_Q2: d_off = offsetof(block_q2_K, d); dmin_off = offsetof(block_q2_K, dmin); break;
    case K_Q3: d_off = offsetof(block_q3_K, d); dmin_off = 0; break;
    case K_Q4: case K_Q4R: d_off = offsetof(block_q4_K, d); dmin_off = offsetof(block_q4_K, dmin); break;
    case K_Q5: d_off = offsetof(block_q5_K, d); dmin_off = offsetof(block_q5_K, dmin); break;
    default: d_off = offsetof(block_q6_K, d); dmin_off = 0; break;
    }
    int16_t sc[4][16];
    v128_t c_lo[4], c_hi[4], part[4][GEMM_MAX_TOKENS];
#if WICK_RELAXED
    if (k == K_Q6R) {
        q6r_parts(NT, rows, off, y, c_lo, c_hi, part);
    } else if (k == K_Q4R) {
        q4r_parts(NT, rows, off, y, c_lo, c_hi, part);
    } else
#endif
    {
        for (int r = 0; r < 4; r++) {
            k_scales(k, rows[r] + off, sc[r], &c_lo[r], &c_hi[r]);
            for (int t = 0; t < NT; t++)
                part[r][t] = wasm_i32x4_splat(0);
        }
        /* units spelled out so that every shift count in k_unpack is a constant */
        /* (relaxed, Q4_K and Q5_K: the odd units go with the even ones before them) */
        const int odd = !(WICK_RELAXED && (k == K_Q4 || k == K_Q5));
        for (int row = 0; row < 4; row++) {
            k_unit(k, NT, rows, off, sc, y, part, 0, row);
            if (odd) k_unit(k, NT, rows, off, sc, y, part, 1, row);
            k_unit(k, NT, rows, off, sc, y, part, 2, row);
            if (odd) k_unit(k, NT, rows, off, sc, y, part, 3, row);
            k_unit(k, NT, rows, off, sc, y, part, 4, row);
            if (odd) k_unit(k, NT, rows, off, sc, y, part, 5, row);
            k_unit(k, NT, rows, off, sc, y, part, 6, row);
            if (odd) k_unit(k, NT, rows, off, sc, y, part, 7, row);
        }
    }
    v128_t dx = gather_half4(rows, off + d_off);
    v128_t dmin = k_has_min(k) ? gather_half4(rows, off + dmin_off) : dx;
    for (int t = 0; t < NT; t++) {
        v128_t bsum = sum4_lanes(dot_bsums(c_lo[0], c_hi[0], y[t]), dot_bsums(c_lo[1], c_hi[1], y[t]),
                                 dot_bsums(c_lo[2], c_hi[2], y[t]), dot_bsums(c_lo[3], c_hi[3], y[t]));
        v128_t dy = wasm_f32x4_splat(y[t]->d);
        v128_t sumi = sum4_lanes(part[0][t], part[1][t], part[2][t], part[3][t]);
        if (k == K_Q6 || k == K_Q6R)
            sumi = wasm_i32x4_sub(sumi, wasm_i32x4_shl(bsum, 5));
        if (k == K_Q3)
            sumi = wasm_i32x4_sub(sumi, wasm_i32x4_shl(bsum, 2));
        v128_t term = wasm_f32x4_mul(wasm_f32x4_mul(dx, dy), wasm_f32x4_convert_i32x4(sumi));
        if (k_has_min(k))
            term = wasm_f32x4_sub(term, wasm_f32x4_mul(wasm_f32x4_mul(dmin, dy), wasm_f32x4_convert_i32x4(bsum)));
        acc[t] = wasm_f32x4_add(acc[t], term);
    }
}

static ALWAYS_INLINE void gemm_k(enum k_kind k, const int NT, int n, const void *w, size_t w_stride, int nr,
                                 const void *a, size_t a_stride, float *out, size_t out_stride)
{
    const uint8_t *rows[4];
    tile_rows(w, w_stride, nr, rows);
    v128_t acc[GEMM_MAX_TOKENS];
    for (int t = 0; t < NT; t++)
        acc[t] = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < n / QK_K; i++) {
        const block_q8_K *y[GEMM_MAX_TOKENS];
        for (int t = 0; t < NT; t++)
            y[t] = (const block_q8_K *)((const uint8_t *)a + (size_t)t * a_stride) + i;
        k_block(k, NT, rows, (size_t)i * k_size(k), y, acc);
    }
    store_tile(acc, NT, nr, out, out_stride);
}

/* Decode: one token against eight rows, w + r * w_stride (r < 8): two tiles of four whose
 * super-blocks are read in turn, so that eight streams are in flight; each output computed
 * exactly as gemm's one-token tile computes it. */
static ALWAYS_INLINE void gemv8_k(enum k_kind k, int n, const void *w, size_t w_stride, const void *a, float out[8])
{
    const uint8_t *rows[8];
    gemv8_rows(w, w_stride, rows);
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
    for (int i = 0; i < n / QK_K; i++) {
        const block_q8_K *y[1] = { (const block_q8_K *)a + i };
        k_block(k, 1, rows, (size_t)i * k_size(k), y, &acc0);
        k_block(k, 1, rows + 4, (size_t)i * k_size(k), y, &acc1);
    }
    wasm_v128_store(out, acc0);
    wasm_v128_store(out + 4, acc1);
}

GEMM_ENTRY(quant_gemm_q2_K, gemm_k, K_Q2)
GEMV8_ENTRY(quant_gemv8_q2_K, gemv8_k, K_Q2)
GEMM_ENTRY(quant_gemm_q3_K, gemm_k, K_Q3)
GEMV8_ENTRY(quant_gemv8_q3_K, gemv8_k, K_Q3)
#if !WICK_RELAXED /* (the relaxed builds' Q4_K kernels: below) */
GEMM_ENTRY(quant_gemm_q4_K, gemm_k, K_Q4)
GEMV8_ENTRY(quant_gemv8_q4_K, gemv8_k, K_Q4)
#endif
GEMM_ENTRY(quant_gemm_q5_K, gemm_k, K_Q5)
GEMV8_ENTRY(quant_gemv8_q5_K, gemv8_k, K_Q5)
#if !WICK_RELAXED /* (the relaxed builds' Q6_K kernels: below) */
GEMM_ENTRY(quant_gemm_q6_K, gemm_k, K_Q6)
GEMV8_ENTRY(quant_gemv8_q6_K, gemv8_k, K_Q6)
#endif
#if WICK_RELAXED
GEMM_ENTRY(quant_gemm_q6_K_r, gemm_k, K_Q6R)

/* Decode over Q6_K_R and Q4_K_R: one token against eight rows (w + r * w_stride), each output
 * computed as gemm's one-token tile computes it (the same exact integer sums, the same float
 * steps), but the eight rows' super-blocks are read side by side a few vectors at a time: each
 * step takes 48 (Q6_K_R) or 32 (Q4_K_R) bytes of every row against activation vectors loaded once
 * for all eight. gemv8_k's order, a whole super-block of one row after another (210 or 144 bytes
 * of one stream, then the next), read these layouts from memory at half of Q8_0's bytes per
 * second (BENCHMARKS.md, 2026-12-03): beyond the caches, the interleaved order is 2.9x faster on
 * Q6_K_R and 1.5x on Q4_K_R (bench_kernels --copies, 32000 x 768). Each row's integer sum
 * starts from its offset or min term, so the loops have no branch. */
/* four rows' scale (the F16 at off in each row) times the activations' dy times their integer sums */
static ALWAYS_INLINE v128_t scaled_sums4(const uint8_t *const rows[4], size_t off, v128_t dy, const v128_t p[4])
{
    return wasm_f32x4_mul(wasm_f32x4_mul(gather_half4(rows, off), dy), wasm_f32x4_convert_i32x4(sum4_lanes(p[0], p[1], p[2], p[3])));
}

void quant_gemv8_q6_K_r(int n, const void *w, size_t w_stride, const void *a, float out[8])
{
    const uint8_t *rows[8];
    gemv8_rows(w, w_stride, rows);
    const v128_t low6 = wasm_i8x16_splat(0x3f);
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
    for (int i = 0; i < n / QK_K; i++) {
        const block_q8_K *y = (const block_q8_K *)a + i;
        const size_t off = (size_t)i * sizeof(block_q6_K_r);
        /* each row's sum starts at -32 times its scales' dot with the activation sums (the
         * stored values are q + 32) */
        v128_t bs_lo = wasm_v128_load(y->bsums), bs_hi = wasm_v128_load(y->bsums + 8), p[8];
        for (int r = 0; r < 8; r++) {
            const int8_t *sc = ((const block_q6_K_r *)(rows[r] + off))->scales;
            v128_t bsum = wasm_i32x4_add(dot_i16(load_i8x8(sc), bs_lo), dot_i16(load_i8x8(sc + 8), bs_hi));
            p[r] = wasm_i32x4_sub(wasm_i32x4_splat(0), wasm_i32x4_shl(bsum, 5));
        }
        for (int g = 0; g < 4; g++) {
            const int8_t *q8 = y->qs + 64 * g;
            v128_t y0 = wasm_v128_load(q8), y1 = wasm_v128_load(q8 + 16), y2 = wasm_v128_load(q8 + 32), y3 = wasm_v128_load(q8 + 48);
            for (int r = 0; r < 8; r++) {
                const block_q6_K_r *x = (const block_q6_K_r *)(rows[r] + off);
                const uint8_t *q = x->q + 48 * g;
                v128_t p0 = wasm_v128_load(q), p1 = wasm_v128_load(q + 16), p2 = wasm_v128_load(q + 32);
                v128_t d = wasm_v128_or(wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(p0, 6), wasm_i8x16_splat(0x03)),
                                                     wasm_v128_and(wasm_u16x8_shr(p1, 4), wasm_i8x16_splat(0x0c))),
                                        wasm_v128_and(wasm_u16x8_shr(p2, 2), wasm_i8x16_splat(0x30)));
                v128_t ab = wasm_i16x8_add(rdot(y0, wasm_v128_and(p0, low6)), rdot(y1, wasm_v128_and(p1, low6)));
                v128_t cd = wasm_i16x8_add(rdot(y2, wasm_v128_and(p2, low6)), rdot(y3, d));
                v128_t sc = load_i8x8(x->scales + 8 * (g >> 1));
                v128_t part = wasm_i32x4_add(dot_i16(ab, sc), dot_i16(cd, sc));
                p[r] = wasm_i32x4_add(p[r], part);
            }
        }
        v128_t dy = wasm_f32x4_splat(y->d);
        acc0 = wasm_f32x4_add(acc0, scaled_sums4(rows, off + offsetof(block_q6_K_r, d), dy, p));
        acc1 = wasm_f32x4_add(acc1, scaled_sums4(rows + 4, off + offsetof(block_q6_K_r, d), dy, p + 4));
    }
    wasm_v128_store(out, acc0);
    wasm_v128_store(out + 4, acc1);
}

GEMM_ENTRY(quant_gemm_q4_K_r, gemm_k, K_Q4R)

/* (the Q4_K_R decode kernel: see quant_gemv8_q6_K_r; the mins go through the activation sums of
 * each sub-block of 32, bs32, as k_block's dot_bsums does with the pairs of sums of 16) */
void quant_gemv8_q4_K_r(int n, const void *w, size_t w_stride, const void *a, float out[8])
{
    const uint8_t *rows[8];
    gemv8_rows(w, w_stride, rows);
    const v128_t low4 = wasm_i8x16_splat(0x0f);
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0;
    for (int i = 0; i < n / QK_K; i++) {
        const block_q8_K *y = (const block_q8_K *)a + i;
        const size_t off = (size_t)i * sizeof(block_q4_K);
        v128_t bs_lo = wasm_v128_load(y->bsums), bs_hi = wasm_v128_load(y->bsums + 8);
        v128_t bs32 = wasm_i16x8_add(wasm_i16x8_shuffle(bs_lo, bs_hi, 0, 2, 4, 6, 8, 10, 12, 14),
                                     wasm_i16x8_shuffle(bs_lo, bs_hi, 1, 3, 5, 7, 9, 11, 13, 15));
        v128_t scale[8], mins[8], sumi[8];
        for (int r = 0; r < 8; r++) {
            v128_t min;
            k_scales_mins(((const block_q4_K *)(rows[r] + off))->scales, &scale[r], &min);
            mins[r] = dot_i16(min, bs32);
            sumi[r] = wasm_i32x4_splat(0);
        }
        for (int pair = 0; pair < 4; pair++) {
            const int m = 2 * pair;
            v128_t ylo0 = wasm_v128_load(y->qs + 16 * m), yhi0 = wasm_v128_load(y->qs + 16 * (m + 8));
            v128_t ylo1 = wasm_v128_load(y->qs + 16 * (m + 1)), yhi1 = wasm_v128_load(y->qs + 16 * (m + 9));
            for (int r = 0; r < 8; r++) {
                const uint8_t *qs = ((const block_q4_K *)(rows[r] + off))->qs + 16 * m;
                v128_t b0 = wasm_v128_load(qs), b1 = wasm_v128_load(qs + 16);
                /* runs m, m + 8, m + 1, m + 9 in one 16-bit sum (lane k: sub-block k), at most
                 * 4 * 2 * 128 * 15 */
                v128_t sum = wasm_i16x8_add(wasm_i16x8_add(rdot(ylo0, wasm_v128_and(b0, low4)), rdot(yhi0, wasm_v128_and(wasm_u16x8_shr(b0, 4), low4))),
                                            wasm_i16x8_add(rdot(ylo1, wasm_v128_and(b1, low4)), rdot(yhi1, wasm_v128_and(wasm_u16x8_shr(b1, 4), low4))));
                v128_t part = dot_i16(sum, scale[r]);
                sumi[r] = wasm_i32x4_add(sumi[r], part);
            }
        }
        v128_t dy = wasm_f32x4_splat(y->d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *const *rq = rows + 4 * h;
            v128_t term = wasm_f32x4_sub(scaled_sums4(rq, off + offsetof(block_q4_K, d), dy, sumi + 4 * h),
                                         scaled_sums4(rq, off + offsetof(block_q4_K, dmin), dy, mins + 4 * h));
            if (h == 0) acc0 = wasm_f32x4_add(acc0, term);
            else acc1 = wasm_f32x4_add(acc1, term);
        }
    }
    wasm_v128_store(out, acc0);
    wasm_v128_store(out + 4, acc1);
}

/* Q6_K blocks rewritten in place as Q6_K_R (quant.h), equal byte for byte to the scalar
 * quant_repack_ref. Per half of a super-block, the eight sub-blocks' stored values (one vector
 * each) are an 8 x 8 matrix of element pairs; the Q6_K_R order is its transpose. */
static ALWAYS_INLINE void transpose_u16x8x8(const v128_t r[8], v128_t out[8])
{
    v128_t a[8], b[8];
    for (int i = 0; i < 8; i += 2) {
        a[i] = wasm_i16x8_shuffle(r[i], r[i + 1], 0, 8, 1, 9, 2, 10, 3, 11);
        a[i + 1] = wasm_i16x8_shuffle(r[i], r[i + 1], 4, 12, 5, 13, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)
        for (int hi = 0; hi < 2; hi++) {
            b[i + 2 * hi] = wasm_i32x4_shuffle(a[i + hi], a[i + 2 + hi], 0, 4, 1, 5);
            b[i + 2 * hi + 1] = wasm_i32x4_shuffle(a[i + hi], a[i + 2 + hi], 2, 6, 3, 7);
        }
    for (int i = 0; i < 4; i++) {
        out[2 * i] = wasm_i64x2_shuffle(b[i], b[i + 4], 0, 2);
        out[2 * i + 1] = wasm_i64x2_shuffle(b[i], b[i + 4], 1, 3);
    }
}

void quant_repack_q6_K_r_simd(void *data, size_t n_blocks)
{
    const v128_t low4 = wasm_i8x16_splat(0x0f), bits45 = wasm_i8x16_splat(0x30), top2 = wasm_i8x16_splat((int8_t)0xc0);
    for (size_t i = 0; i < n_blocks; i++) {
        uint8_t *blk = (uint8_t *)data + i * sizeof(block_q6_K);
        const block_q6_K *x = (const block_q6_K *)blk;
        /* sub[k]: the stored values of sub-block k (elements 16k ..), from Q6_K's nibbles and
         * bit pairs (q6_K_value in quant.c): element 128h + 32kk + 16m + l takes nibble kk / 2 of
         * ql[64h + 32(kk & 1) + 16m + l] and bits 2kk.. of qh[32h + 16m + l] */
        v128_t sub[16], perm[16];
        for (int h = 0; h < 2; h++) {
            v128_t ql[4], qh[2];
            for (int v = 0; v < 4; v++) ql[v] = wasm_v128_load(x->ql + 64 * h + 16 * v);
            for (int v = 0; v < 2; v++) qh[v] = wasm_v128_load(x->qh + 32 * h + 16 * v);
            for (int m = 0; m < 2; m++) {
                v128_t b0 = ql[m], b1 = ql[2 + m], hb = qh[m];
                sub[8 * h + 0 + m] = wasm_v128_or(wasm_v128_and(b0, low4), wasm_v128_and(wasm_i16x8_shl(hb, 4), bits45));
                sub[8 * h + 2 + m] = wasm_v128_or(wasm_v128_and(b1, low4), wasm_v128_and(wasm_i16x8_shl(hb, 2), bits45));
                sub[8 * h + 4 + m] = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(b0, 4), low4), wasm_v128_and(hb, bits45));
                sub[8 * h + 6 + m] = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(b1, 4), low4), wasm_v128_and(wasm_u16x8_shr(hb, 2), bits45));
            }
        }
        transpose_u16x8x8(sub, perm);
        transpose_u16x8x8(sub + 8, perm + 8);
        /* groups of four vectors A, B, C, D: A | D's bits 0-1 << 6, B | bits 2-3 << 6, C | bits 4-5 << 6 */
        for (int g = 0; g < 4; g++) {
            v128_t d = perm[4 * g + 3];
            wasm_v128_store(blk + 48 * g, wasm_v128_or(perm[4 * g], wasm_v128_and(wasm_i16x8_shl(d, 6), top2)));
            wasm_v128_store(blk + 48 * g + 16, wasm_v128_or(perm[4 * g + 1], wasm_v128_and(wasm_i16x8_shl(d, 4), top2)));
            wasm_v128_store(blk + 48 * g + 32, wasm_v128_or(perm[4 * g + 2], wasm_v128_and(wasm_i16x8_shl(d, 2), top2)));
        }
    }
}

/* Q8_K_R (quant.h): Q8_K with each half's eight sub-blocks transposed as Q6_K_R's values are */
void quant_q8_K_r_from_float_simd(const float *src, void *dst, int64_t n)
{
    quant_q8_K_from_float_simd(src, dst, n);
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t *qs = ((block_q8_K *)dst)[i].qs;
        for (int h = 0; h < 2; h++) {
            v128_t sub[8], perm[8];
            for (int k = 0; k < 8; k++) sub[k] = wasm_v128_load(qs + 128 * h + 16 * k);
            transpose_u16x8x8(sub, perm);
            for (int k = 0; k < 8; k++) wasm_v128_store(qs + 128 * h + 16 * k, perm[k]);
        }
    }
}

/* Q4_K blocks rewritten in place as Q4_K_R (quant.h), equal byte for byte to quant_repack_ref:
 * sub-block k's 32 stored values (two vectors) are read from nibble k % 2 of qs[32 (k / 2) ..];
 * the first vectors of the eight sub-blocks transposed as element pairs give runs 0..7 of the
 * new order, the second ones runs 8..15; run m and run m + 8 share bytes as nibbles. */
void quant_repack_q4_K_r_simd(void *data, size_t n_blocks)
{
    const v128_t low4 = wasm_i8x16_splat(0x0f);
    for (size_t i = 0; i < n_blocks; i++) {
        uint8_t *qs = ((block_q4_K *)data + i)->qs;
        v128_t first[8], second[8], run[16];
        for (int j = 0; j < 4; j++) {
            v128_t a = wasm_v128_load(qs + 32 * j), b = wasm_v128_load(qs + 32 * j + 16);
            first[2 * j] = wasm_v128_and(a, low4);
            second[2 * j] = wasm_v128_and(b, low4);
            first[2 * j + 1] = wasm_v128_and(wasm_u16x8_shr(a, 4), low4);
            second[2 * j + 1] = wasm_v128_and(wasm_u16x8_shr(b, 4), low4);
        }
        transpose_u16x8x8(first, run);
        transpose_u16x8x8(second, run + 8);
        for (int m = 0; m < 8; m++)
            wasm_v128_store(qs + 16 * m, wasm_v128_or(run[m], wasm_i16x8_shl(run[m + 8], 4)));
    }
}

/* Q8_K_R32 (quant.h): Q8_K with the first and the second halves of the eight sub-blocks of 32
 * transposed as Q4_K_R's values are */
void quant_q8_K_r32_from_float_simd(const float *src, void *dst, int64_t n)
{
    quant_q8_K_from_float_simd(src, dst, n);
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t *qs = ((block_q8_K *)dst)[i].qs;
        v128_t first[8], second[8], run[16];
        for (int k = 0; k < 8; k++) {
            first[k] = wasm_v128_load(qs + 32 * k);
            second[k] = wasm_v128_load(qs + 32 * k + 16);
        }
        transpose_u16x8x8(first, run);
        transpose_u16x8x8(second, run + 8);
        for (int m = 0; m < 16; m++) wasm_v128_store(qs + 16 * m, run[m]);
    }
}
#else
/* The plain builds never choose Q6_K_R (quant_cpu_type): there its functions are the scalar
 * references, which the tests still check, and add next to nothing to the download. */
void quant_repack_q6_K_r_simd(void *data, size_t n_blocks)
{
    quant_repack_ref(WICK_TYPE_Q6_K, WICK_TYPE_Q6_K_R, data, n_blocks);
}

void quant_q8_K_r_from_float_simd(const float *src, void *dst, int64_t n) { quant_q8_K_r_from_float_ref(src, dst, n); }

void quant_repack_q4_K_r_simd(void *data, size_t n_blocks)
{
    quant_repack_ref(WICK_TYPE_Q4_K, WICK_TYPE_Q4_K_R, data, n_blocks);
}

void quant_q8_K_r32_from_float_simd(const float *src, void *dst, int64_t n) { quant_q8_K_r32_from_float_ref(src, dst, n); }
#endif

/* ---- the rest: one row kernel per output ----
 * The activation formats as weights (Q8_1, Q8_K) have no tile kernel of their own: each output
 * of their tile is one call of the row kernel below, which sums in its own order, so these (and
 * the float types' tile, gemm_float) agree with vec_dot_ref within float rounding rather than
 * bit for bit. Their vec_dot, the 1×1 tile, is this kernel. */

/* four halves in the low 16 bits of 32-bit lanes → four floats; the vector form of
 * quant_f16_to_f32_inline (exact, subnormals, Inf and NaN included, no subnormal arithmetic) */
static inline v128_t f16x4_to_f32x4(v128_t h)
{
    v128_t sign = wasm_v128_and(wasm_i32x4_shl(h, 16), wasm_i32x4_splat((int32_t)0x80000000u));
    v128_t exp_mant = wasm_v128_and(h, wasm_i32x4_splat(0x7fff));
    v128_t normal = wasm_f32x4_mul(wasm_i32x4_add(wasm_i32x4_shl(exp_mant, 13), wasm_i32x4_splat(224 << 23)),
                                   wasm_f32x4_splat(0x1p-112f));
    v128_t subnormal = wasm_f32x4_sub(wasm_v128_or(exp_mant, wasm_i32x4_splat(126 << 23)), wasm_f32x4_splat(0.5f));
    v128_t value = wasm_v128_bitselect(subnormal, normal, wasm_i32x4_lt(exp_mant, wasm_i32x4_splat(0x0400)));
    return wasm_v128_or(value, sign);
}

/* ---- the float types: one tile kernel ----
 * A weight row's four values at a time are loaded (F16 and BF16 converted) once per tile and
 * multiplied with every token's activations; each output keeps one accumulator of four lanes
 * over the row (i = 0, 4, 8, …), whose lanes are then summed as (l0 + l2) + (l1 + l3) by a
 * transpose that does the four rows at once, and an odd tail is added element by element. Every
 * output goes through the same operations whatever nr and nt, so the 1×1 tile is vec_dot. */

enum float_kind { FLOAT_F32, FLOAT_F16, FLOAT_BF16 };

/* the tile's loops over its 4 rows and NT tokens unrolled, so that the 16 accumulators live in
 * registers (neither compiler does it unasked here) */
#if defined(__clang__)
#define UNROLL_TILE _Pragma("clang loop unroll(full)")
#else
#define UNROLL_TILE _Pragma("GCC unroll 4")
#endif

static ALWAYS_INLINE v128_t float_load4(enum float_kind k, const uint8_t *row, int i)
{
    if (k == FLOAT_F32) return wasm_v128_load(row + (size_t)i * 4);
    v128_t h = wasm_u32x4_load16x4(row + (size_t)i * 2);
    return k == FLOAT_F16 ? f16x4_to_f32x4(h) : wasm_i32x4_shl(h, 16);
}

static ALWAYS_INLINE float float_load1(enum float_kind k, const uint8_t *row, int i)
{
    if (k == FLOAT_F32) {
        float f;
        memcpy(&f, row + (size_t)i * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, row + (size_t)i * 2, 2);
    return k == FLOAT_F16 ? quant_f16_to_f32_inline(h) : quant_bf16_to_f32(h);
}

/* lane r = (a_r's lane 0 + lane 2) + (lane 1 + lane 3), for the four rows' accumulators a_0..a_3 */
static ALWAYS_INLINE v128_t hsum4_f32(v128_t a0, v128_t a1, v128_t a2, v128_t a3)
{
    v128_t u = wasm_f32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5), wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7));
    v128_t v = wasm_f32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5), wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7));
    return wasm_f32x4_add(wasm_i32x4_shuffle(u, v, 0, 1, 4, 5), wasm_i32x4_shuffle(u, v, 2, 3, 6, 7));
}

/* tokens [0, NT) (NT ≤ 2: 8 accumulators, 4 weight vectors and 2 activations fit the 16 vector
 * registers of x86, which wasm engines give SIMD) into sums[0 … NT) */
static ALWAYS_INLINE void gemm_float_pass(enum float_kind k, const int NT, int n, const uint8_t *const rows[4],
                                          const float *const y[2], v128_t sums[2])
{
    v128_t acc[4][2];
    UNROLL_TILE for (int r = 0; r < 4; r++)
        UNROLL_TILE for (int t = 0; t < NT; t++)
            acc[r][t] = wasm_f32x4_splat(0.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        v128_t x[4];
        UNROLL_TILE for (int r = 0; r < 4; r++)
            x[r] = float_load4(k, rows[r], i);
        UNROLL_TILE for (int t = 0; t < NT; t++) {
            v128_t yt = wasm_v128_load(y[t] + i);
            UNROLL_TILE for (int r = 0; r < 4; r++)
                acc[r][t] = wasm_f32x4_add(acc[r][t], wasm_f32x4_mul(x[r], yt));
        }
    }
    UNROLL_TILE for (int t = 0; t < NT; t++)
        sums[t] = hsum4_f32(acc[0][t], acc[1][t], acc[2][t], acc[3][t]);
    for (; i < n; i++) {
        v128_t x = wasm_f32x4_make(float_load1(k, rows[0], i), float_load1(k, rows[1], i), float_load1(k, rows[2], i),
                                   float_load1(k, rows[3], i));
        for (int t = 0; t < NT; t++)
            sums[t] = wasm_f32x4_add(sums[t], wasm_f32x4_mul(x, wasm_f32x4_splat(y[t][i])));
    }
}

static ALWAYS_INLINE void gemm_float(enum float_kind k, const int NT, int n, const void *w, size_t w_stride, int nr,
                                     const void *a, size_t a_stride, float *out, size_t out_stride)
{
    const uint8_t *rows[4];
    tile_rows(w, w_stride, nr, rows);
    v128_t sums[4];
    for (int t0 = 0; t0 < NT; t0 += 2) {
        const float *y[2];
        for (int t = 0; t < 2 && t0 + t < NT; t++)
            y[t] = (const float *)((const uint8_t *)a + (size_t)(t0 + t) * a_stride);
        if (NT - t0 >= 2) gemm_float_pass(k, 2, n, rows, y, sums + t0);
        else gemm_float_pass(k, 1, n, rows, y, sums + t0);
    }
    store_tile(sums, NT, nr, out, out_stride);
}

/* four fp16 values as four floats */
static inline v128_t half4(uint16_t a, uint16_t b, uint16_t c, uint16_t d)
{
    return f16x4_to_f32x4(wasm_i32x4_make(a, b, c, d));
}

/* the partial sums (i32x4) of x[k] * y[k] over 32 bytes */
static inline v128_t q8_isum(const int8_t *x, const int8_t *y)
{
    v128_t s01 = wasm_i32x4_add(dot_i16(load_i8x8(x), load_i8x8(y)), dot_i16(load_i8x8(x + 8), load_i8x8(y + 8)));
    v128_t s23 = wasm_i32x4_add(dot_i16(load_i8x8(x + 16), load_i8x8(y + 16)), dot_i16(load_i8x8(x + 24), load_i8x8(y + 24)));
    return wasm_i32x4_add(s01, s23);
}

/* Q8_1 against Q8_1: converting two fp16 scales per block one at a time costs more than the
 * block's integer work, so blocks go four at a time, their integer sums side by side and scaled
 * by the four products d_x d_y at once */
static float row_dot_q8_1(int n, const void *w, const void *a)
{
    const block_q8_1 *x = w;
    const block_q8_1 *y = a;
    const int nb = n / QK8_1;
    v128_t acc = wasm_f32x4_splat(0.0f);
    int i = 0;
    for (; i + 4 <= nb; i += 4) {
        v128_t isum = sum4_lanes(q8_isum(x[i].qs, y[i].qs), q8_isum(x[i + 1].qs, y[i + 1].qs),
                                 q8_isum(x[i + 2].qs, y[i + 2].qs), q8_isum(x[i + 3].qs, y[i + 3].qs));
        v128_t d = wasm_f32x4_mul(half4(x[i].d, x[i + 1].d, x[i + 2].d, x[i + 3].d),
                                  half4(y[i].d, y[i + 1].d, y[i + 2].d, y[i + 3].d));
        acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), d));
    }
    float sum = hsum_f32x4(acc);
    for (; i < nb; i++)
        sum += (float)hsum_i32x4(q8_isum(x[i].qs, y[i].qs)) * (quant_f16_to_f32_inline(x[i].d) * quant_f16_to_f32_inline(y[i].d));
    return sum;
}

static float row_dot_q8_K(int n, const void *w, const void *a)
{
    const block_q8_K *x = w;
    const block_q8_K *y = a;
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < n / QK_K; i++) {
        v128_t isum = wasm_i32x4_splat(0);
        for (int k = 0; k < QK_K; k += 32)
            isum = wasm_i32x4_add(isum, q8_isum(x[i].qs + k, y[i].qs + k));
        acc = add_scaled(acc, isum, x[i].d * y[i].d);
    }
    return hsum_f32x4(acc);
}

static ALWAYS_INLINE void gemm_by_row_dot(float (*dot)(int, const void *, const void *), const int NT, int n,
                                          const void *w, size_t w_stride, int nr, const void *a, size_t a_stride,
                                          float *out, size_t out_stride)
{
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < nr; r++)
            out[(size_t)t * out_stride + r] = dot(n, (const uint8_t *)w + (size_t)r * w_stride,
                                                  (const uint8_t *)a + (size_t)t * a_stride);
}

/* Where a type's fast kernels are never used, its tile and eight-row kernels loop over its
 * scalar reference (exact), so that they add next to nothing to the download: Q6_K_R and Q4_K_R
 * in the plain builds, which never choose them, and Q6_K and Q4_K in the relaxed builds, whose
 * CPU contexts rewrite every such matrix first (model_use_cpu_layout). */
#define GEMV8_BY_DOT(name, dot)                                                                     \
    void name(int n, const void *w, size_t w_stride, const void *a, float out[8])                   \
    {                                                                                               \
        for (int r = 0; r < 8; r++)                                                                 \
            out[r] = dot(n, (const uint8_t *)w + (size_t)r * w_stride, a);                          \
    }
#if WICK_RELAXED
GEMM_ENTRY(quant_gemm_q6_K, gemm_by_row_dot, quant_vec_dot_q6_K_ref)
GEMV8_BY_DOT(quant_gemv8_q6_K, quant_vec_dot_q6_K_ref)
GEMM_ENTRY(quant_gemm_q4_K, gemm_by_row_dot, quant_vec_dot_q4_K_ref)
GEMV8_BY_DOT(quant_gemv8_q4_K, quant_vec_dot_q4_K_ref)
#else
GEMM_ENTRY(quant_gemm_q6_K_r, gemm_by_row_dot, quant_vec_dot_q6_K_r_ref)
GEMV8_BY_DOT(quant_gemv8_q6_K_r, quant_vec_dot_q6_K_r_ref)
GEMM_ENTRY(quant_gemm_q4_K_r, gemm_by_row_dot, quant_vec_dot_q4_K_r_ref)
GEMV8_BY_DOT(quant_gemv8_q4_K_r, quant_vec_dot_q4_K_r_ref)
#endif
GEMM_ENTRY(quant_gemm_f32, gemm_float, FLOAT_F32)
GEMM_ENTRY(quant_gemm_f16, gemm_float, FLOAT_F16)
GEMM_ENTRY(quant_gemm_bf16, gemm_float, FLOAT_BF16)
GEMM_ENTRY(quant_gemm_q8_1, gemm_by_row_dot, row_dot_q8_1)
GEMM_ENTRY(quant_gemm_q8_K, gemm_by_row_dot, row_dot_q8_K)
