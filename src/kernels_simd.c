/* kernels_simd.c — the SIMD dot products of one weight row with one activation row, for every
 * tensor type, written with WebAssembly SIMD128 intrinsics (natively through SIMDe, simd.h).
 *
 * Quantized rows: the activation row was quantized once to 8-bit blocks (Q8_0, Q8_1 or Q8_K,
 * see quant.h), so a block's dot product is an integer sum. Weight quants are widened into
 * 16-bit lanes straight from memory (load8x8), unpacked with and/shift/or, and multiplied with
 * i32x4.dot_i16x8_s, which sums adjacent products into 32-bit lanes. Offsets such as Q6_K's
 * "q - 32" are taken out afterwards through the activation block sums (bsums), as llama.cpp's
 * x86 kernels do; the integer result per block equals the scalar reference in quant.c exactly,
 * only the float scaling is summed in a different order. */
#include "quant.h"
#include "simd.h"

#include <string.h>

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

/* ---- float types --------------------------------------------------------------------------- */

float quant_vec_dot_f32_simd(int n, const void *w, const void *a)
{
    const float *x = w, *y = a;
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i)));
        acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(wasm_v128_load(x + i + 4), wasm_v128_load(y + i + 4)));
        acc2 = wasm_f32x4_add(acc2, wasm_f32x4_mul(wasm_v128_load(x + i + 8), wasm_v128_load(y + i + 8)));
        acc3 = wasm_f32x4_add(acc3, wasm_f32x4_mul(wasm_v128_load(x + i + 12), wasm_v128_load(y + i + 12)));
    }
    for (; i + 4 <= n; i += 4)
        acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i)));
    float sum = hsum_f32x4(wasm_f32x4_add(wasm_f32x4_add(acc0, acc1), wasm_f32x4_add(acc2, acc3)));
    for (; i < n; i++)
        sum += x[i] * y[i];
    return sum;
}

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

float quant_vec_dot_f16_simd(int n, const void *w, const void *a)
{
    const uint16_t *x = w;
    const float *y = a;
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v128_t h0 = wasm_v128_load(x + i), h1 = wasm_v128_load(x + i + 8);
        acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(f16x4_to_f32x4(wasm_u32x4_extend_low_u16x8(h0)), wasm_v128_load(y + i)));
        acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(f16x4_to_f32x4(wasm_u32x4_extend_high_u16x8(h0)), wasm_v128_load(y + i + 4)));
        acc2 = wasm_f32x4_add(acc2, wasm_f32x4_mul(f16x4_to_f32x4(wasm_u32x4_extend_low_u16x8(h1)), wasm_v128_load(y + i + 8)));
        acc3 = wasm_f32x4_add(acc3, wasm_f32x4_mul(f16x4_to_f32x4(wasm_u32x4_extend_high_u16x8(h1)), wasm_v128_load(y + i + 12)));
    }
    float sum = hsum_f32x4(wasm_f32x4_add(wasm_f32x4_add(acc0, acc1), wasm_f32x4_add(acc2, acc3)));
    for (; i < n; i++)
        sum += quant_f16_to_f32_inline(x[i]) * y[i];
    return sum;
}

/* bf16 is the top half of a float: interleave zeros below each value */
float quant_vec_dot_bf16_simd(int n, const void *w, const void *a)
{
    const uint16_t *x = w;
    const float *y = a;
    const v128_t zero = wasm_i32x4_splat(0);
    v128_t acc0 = wasm_f32x4_splat(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v128_t h0 = wasm_v128_load(x + i), h1 = wasm_v128_load(x + i + 8);
        v128_t f0 = wasm_i16x8_shuffle(zero, h0, 0, 8, 0, 9, 0, 10, 0, 11);
        v128_t f1 = wasm_i16x8_shuffle(zero, h0, 0, 12, 0, 13, 0, 14, 0, 15);
        v128_t f2 = wasm_i16x8_shuffle(zero, h1, 0, 8, 0, 9, 0, 10, 0, 11);
        v128_t f3 = wasm_i16x8_shuffle(zero, h1, 0, 12, 0, 13, 0, 14, 0, 15);
        acc0 = wasm_f32x4_add(acc0, wasm_f32x4_mul(f0, wasm_v128_load(y + i)));
        acc1 = wasm_f32x4_add(acc1, wasm_f32x4_mul(f1, wasm_v128_load(y + i + 4)));
        acc2 = wasm_f32x4_add(acc2, wasm_f32x4_mul(f2, wasm_v128_load(y + i + 8)));
        acc3 = wasm_f32x4_add(acc3, wasm_f32x4_mul(f3, wasm_v128_load(y + i + 12)));
    }
    float sum = hsum_f32x4(wasm_f32x4_add(wasm_f32x4_add(acc0, acc1), wasm_f32x4_add(acc2, acc3)));
    for (; i < n; i++)
        sum += quant_bf16_to_f32(x[i]) * y[i];
    return sum;
}

/* ---- 32-element blocks against Q8_0 / Q8_1 -------------------------------------------------- */

/* sum of w[k] * y[k] over one 32-element block, w given as four vectors of 8 int16 lanes */
static inline v128_t dot_block32(v128_t w0, v128_t w1, v128_t w2, v128_t w3, const int8_t *y)
{
    v128_t s01 = wasm_i32x4_add(dot_i16(w0, load_i8x8(y)), dot_i16(w1, load_i8x8(y + 8)));
    v128_t s23 = wasm_i32x4_add(dot_i16(w2, load_i8x8(y + 16)), dot_i16(w3, load_i8x8(y + 24)));
    return wasm_i32x4_add(s01, s23);
}

/* the same with w given as two vectors of 16 int8 lanes */
static inline v128_t dot_block32_i8(v128_t w_lo, v128_t w_hi, const int8_t *y)
{
    return dot_block32(wasm_i16x8_extend_low_i8x16(w_lo), wasm_i16x8_extend_high_i8x16(w_lo),
                       wasm_i16x8_extend_low_i8x16(w_hi), wasm_i16x8_extend_high_i8x16(w_hi), y);
}

/* [sum of a, sum of b, sum of c, sum of d]: four blocks' integer sums side by side */
static inline v128_t sum4_lanes(v128_t a, v128_t b, v128_t c, v128_t d)
{
    v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

/* four fp16 values as four floats */
static inline v128_t half4(uint16_t a, uint16_t b, uint16_t c, uint16_t d)
{
    return f16x4_to_f32x4(wasm_i32x4_make(a, b, c, d));
}

/* The loop of the 32-element block types. Converting two fp16 scales per block one at a time
 * costs more than the block's integer work, so blocks go four at a time: their integer sums
 * (BLOCK_ISUM(&x[i], &y[i]), an i32x4 of partial sums) are gathered into one vector and scaled
 * by the four products d_x d_y at once; that product per block equals the reference's
 * sumi * (d_x * d_y). ADD_MIN4 / ADD_MIN1 add the m_x * s_y terms of Q4_1 / Q5_1 (Q8_1's s is
 * d_y times its block sum) for four blocks or one, or nothing (NO_MIN4 / NO_MIN1). */
#define DOT_BLOCKS32(x, y, nb, BLOCK_ISUM, ADD_MIN4, ADD_MIN1)                                      \
    do {                                                                                            \
        v128_t acc = wasm_f32x4_splat(0.0f), acc_min = acc;                                         \
        int i = 0;                                                                                  \
        for (; i + 4 <= (nb); i += 4) {                                                             \
            v128_t isum = sum4_lanes(BLOCK_ISUM(&x[i], &y[i]), BLOCK_ISUM(&x[i + 1], &y[i + 1]),    \
                                     BLOCK_ISUM(&x[i + 2], &y[i + 2]), BLOCK_ISUM(&x[i + 3], &y[i + 3])); \
            v128_t d = wasm_f32x4_mul(half4(x[i].d, x[i + 1].d, x[i + 2].d, x[i + 3].d),            \
                                      half4(y[i].d, y[i + 1].d, y[i + 2].d, y[i + 3].d));           \
            acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), d));           \
            acc_min = ADD_MIN4(acc_min, x, y, i);                                                   \
        }                                                                                           \
        float sum = hsum_f32x4(acc) + hsum_f32x4(acc_min);                                          \
        for (; i < (nb); i++)                                                                       \
            sum += (float)hsum_i32x4(BLOCK_ISUM(&x[i], &y[i]))                                     \
                 * (quant_f16_to_f32_inline(x[i].d) * quant_f16_to_f32_inline(y[i].d)) + ADD_MIN1(x, y, i); \
        return sum;                                                                                 \
    } while (0)

#define NO_MIN4(acc, x, y, i) (acc)
#define NO_MIN1(x, y, i) 0.0f
#define ADD_MIN4(acc, x, y, i)                                                                      \
    wasm_f32x4_add(acc, wasm_f32x4_mul(half4(x[i].m, x[i + 1].m, x[i + 2].m, x[i + 3].m),          \
                                       half4(y[i].s, y[i + 1].s, y[i + 2].s, y[i + 3].s)))
#define ADD_MIN1(x, y, i) (quant_f16_to_f32_inline(x[i].m) * quant_f16_to_f32_inline(y[i].s))

/* Q4_0: bytes 0..7 of qs hold elements 0..7 (low nibbles) and 16..23 (high nibbles), bytes
 * 8..15 hold elements 8..15 and 24..31 */
static inline v128_t q4_0_isum(const block_q4_0 *x, const block_q8_0 *y)
{
    const v128_t low4 = wasm_i16x8_splat(0x0f), eight = wasm_i16x8_splat(8);
    v128_t qa = load_u8x8(x->qs), qb = load_u8x8(x->qs + 8);
    return dot_block32(wasm_i16x8_sub(wasm_v128_and(qa, low4), eight), wasm_i16x8_sub(wasm_v128_and(qb, low4), eight),
                       wasm_i16x8_sub(wasm_u16x8_shr(qa, 4), eight), wasm_i16x8_sub(wasm_u16x8_shr(qb, 4), eight), y->qs);
}

float quant_vec_dot_q4_0_simd(int n, const void *w, const void *a)
{
    const block_q4_0 *x = w;
    const block_q8_0 *y = a;
    DOT_BLOCKS32(x, y, n / QK4_0, q4_0_isum, NO_MIN4, NO_MIN1);
}

static inline v128_t q4_1_isum(const block_q4_1 *x, const block_q8_1 *y)
{
    const v128_t low4 = wasm_i16x8_splat(0x0f);
    v128_t qa = load_u8x8(x->qs), qb = load_u8x8(x->qs + 8);
    return dot_block32(wasm_v128_and(qa, low4), wasm_v128_and(qb, low4), wasm_u16x8_shr(qa, 4), wasm_u16x8_shr(qb, 4), y->qs);
}

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

/* a 5-bit block's dot product, its values minus bias as two vectors of 16 int8 lanes */
static inline v128_t q5_isum(const uint8_t qs[16], const uint8_t qh[4], int8_t bias, const int8_t *y)
{
    const v128_t low4 = wasm_i8x16_splat(0x0f), b = wasm_i8x16_splat(bias);
    v128_t h_lo, h_hi;
    q5_high_bits(qh, &h_lo, &h_hi);
    v128_t q = wasm_v128_load(qs);
    return dot_block32_i8(wasm_i8x16_sub(wasm_v128_or(wasm_v128_and(q, low4), h_lo), b),
                          wasm_i8x16_sub(wasm_v128_or(wasm_u8x16_shr(q, 4), h_hi), b), y);
}

static inline v128_t q5_0_isum(const block_q5_0 *x, const block_q8_0 *y) { return q5_isum(x->qs, x->qh, 16, y->qs); }
static inline v128_t q5_1_isum(const block_q5_1 *x, const block_q8_1 *y) { return q5_isum(x->qs, x->qh, 0, y->qs); }

float quant_vec_dot_q5_0_simd(int n, const void *w, const void *a)
{
    const block_q5_0 *x = w;
    const block_q8_0 *y = a;
    DOT_BLOCKS32(x, y, n / QK5_0, q5_0_isum, NO_MIN4, NO_MIN1);
}

static inline v128_t q8_isum(const int8_t *x, const int8_t *y)
{
    return dot_block32(load_i8x8(x), load_i8x8(x + 8), load_i8x8(x + 16), load_i8x8(x + 24), y);
}

static inline v128_t q8_0_isum(const block_q8_0 *x, const block_q8_0 *y) { return q8_isum(x->qs, y->qs); }
static inline v128_t q8_1_isum(const block_q8_1 *x, const block_q8_1 *y) { return q8_isum(x->qs, y->qs); }

float quant_vec_dot_q8_0_simd(int n, const void *w, const void *a)
{
    const block_q8_0 *x = w;
    const block_q8_0 *y = a;
    DOT_BLOCKS32(x, y, n / QK8_0, q8_0_isum, NO_MIN4, NO_MIN1);
}

float quant_vec_dot_q8_1_simd(int n, const void *w, const void *a)
{
    const block_q8_1 *x = w;
    const block_q8_1 *y = a;
    DOT_BLOCKS32(x, y, n / QK8_1, q8_1_isum, NO_MIN4, NO_MIN1);
}

/* IQ4_NL: the nibbles index the 16-entry grid, one swizzle per 16 values */
static inline v128_t iq4_nl_isum(const block_iq4_nl *x, const block_q8_0 *y)
{
    const v128_t grid = wasm_v128_load(quant_kvalues_iq4nl), low4 = wasm_i8x16_splat(0x0f);
    v128_t q = wasm_v128_load(x->qs);
    return dot_block32_i8(wasm_i8x16_swizzle(grid, wasm_v128_and(q, low4)),
                          wasm_i8x16_swizzle(grid, wasm_u8x16_shr(q, 4)), y->qs);
}

float quant_vec_dot_iq4_nl_simd(int n, const void *w, const void *a)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = a;
    DOT_BLOCKS32(x, y, n / QK4_NL, iq4_nl_isum, NO_MIN4, NO_MIN1);
}

float quant_vec_dot_q4_1_simd(int n, const void *w, const void *a)
{
    const block_q4_1 *x = w;
    const block_q8_1 *y = a;
    DOT_BLOCKS32(x, y, n / QK4_1, q4_1_isum, ADD_MIN4, ADD_MIN1);
}

float quant_vec_dot_q5_1_simd(int n, const void *w, const void *a)
{
    const block_q5_1 *x = w;
    const block_q8_1 *y = a;
    DOT_BLOCKS32(x, y, n / QK5_1, q5_1_isum, ADD_MIN4, ADD_MIN1);
}

#undef DOT_BLOCKS32
#undef NO_MIN4
#undef NO_MIN1
#undef ADD_MIN4
#undef ADD_MIN1

/* ---- K-quants against Q8_K ----------------------------------------------------------------- */

/* sum_j s[j] * bsums[j] over the 16 sub-blocks of 16, s given as 16 int16 in two vectors */
static inline v128_t dot_bsums(v128_t s_lo, v128_t s_hi, const block_q8_K *y)
{
    return wasm_i32x4_add(dot_i16(s_lo, wasm_v128_load(y->bsums)), dot_i16(s_hi, wasm_v128_load(y->bsums + 8)));
}

/* sum_j scale[j] * s[j] for 16 sub-blocks given as i32x4 partial sums s[0..16): the sums side
 * by side four at a time, times the int16 scales (scale_lo: sub-blocks 0..7, scale_hi: 8..15) */
static inline v128_t k_scaled_sum16(const v128_t s[16], v128_t scale_lo, v128_t scale_hi)
{
    v128_t p0 = wasm_i32x4_mul(sum4_lanes(s[0], s[1], s[2], s[3]), wasm_i32x4_extend_low_i16x8(scale_lo));
    v128_t p1 = wasm_i32x4_mul(sum4_lanes(s[4], s[5], s[6], s[7]), wasm_i32x4_extend_high_i16x8(scale_lo));
    v128_t p2 = wasm_i32x4_mul(sum4_lanes(s[8], s[9], s[10], s[11]), wasm_i32x4_extend_low_i16x8(scale_hi));
    v128_t p3 = wasm_i32x4_mul(sum4_lanes(s[12], s[13], s[14], s[15]), wasm_i32x4_extend_high_i16x8(scale_hi));
    return wasm_i32x4_add(wasm_i32x4_add(p0, p1), wasm_i32x4_add(p2, p3));
}

/* Q2_K / Q3_K: in half h, element 32j + l (j < 4, l < 32) is bits 2j..2j+1 of qs[32h + l] and
 * belongs to sub-block 8h + 2j + l/16. s[] gets the 16 sub-block partial sums of these 2-bit
 * values (for Q3_K, hmask != NULL, with bit 2 from hmask) times the activations. */
static inline void k_2bit_sums(const uint8_t qs[QK_K / 4], const uint8_t *hmask, const int8_t *q8, v128_t s[16])
{
    const v128_t three = wasm_i16x8_splat(3), four = wasm_i16x8_splat(4);
    /* hmask bit t = 4h + j of element l, moved to bit 2 at step t by shifting right once per step */
    v128_t hb0 = wasm_i16x8_splat(0), hb1 = hb0, hb2 = hb0, hb3 = hb0;
    if (hmask != NULL) {
        hb0 = wasm_i16x8_shl(load_u8x8(hmask), 2);
        hb1 = wasm_i16x8_shl(load_u8x8(hmask + 8), 2);
        hb2 = wasm_i16x8_shl(load_u8x8(hmask + 16), 2);
        hb3 = wasm_i16x8_shl(load_u8x8(hmask + 24), 2);
    }
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = qs + 32 * h;
        v128_t v0 = load_u8x8(q), v1 = load_u8x8(q + 8), v2 = load_u8x8(q + 16), v3 = load_u8x8(q + 24);
        for (int j = 0; j < 4; j++, q8 += 32) {
            int shift = 2 * j;
            v128_t w0 = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(v0, shift), three), wasm_v128_and(hb0, four));
            v128_t w1 = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(v1, shift), three), wasm_v128_and(hb1, four));
            v128_t w2 = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(v2, shift), three), wasm_v128_and(hb2, four));
            v128_t w3 = wasm_v128_or(wasm_v128_and(wasm_u16x8_shr(v3, shift), three), wasm_v128_and(hb3, four));
            s[8 * h + 2 * j] = wasm_i32x4_add(dot_i16(w0, load_i8x8(q8)), dot_i16(w1, load_i8x8(q8 + 8)));
            s[8 * h + 2 * j + 1] = wasm_i32x4_add(dot_i16(w2, load_i8x8(q8 + 16)), dot_i16(w3, load_i8x8(q8 + 24)));
            hb0 = wasm_u16x8_shr(hb0, 1);
            hb1 = wasm_u16x8_shr(hb1, 1);
            hb2 = wasm_u16x8_shr(hb2, 1);
            hb3 = wasm_u16x8_shr(hb3, 1);
        }
    }
}

/* Q2_K: sub-block j has scale scales[j] & 15 and min scales[j] >> 4, the mins summed through
 * the activation block sums */
float quant_vec_dot_q2_K_simd(int n, const void *w, const void *a)
{
    const block_q2_K *x = w;
    const block_q8_K *y = a;
    const v128_t low4 = wasm_i16x8_splat(0x0f);
    v128_t acc = wasm_f32x4_splat(0.0f), acc_min = acc;
    for (int i = 0; i < n / QK_K; i++) {
        v128_t packed_lo = load_u8x8(x[i].scales), packed_hi = load_u8x8(x[i].scales + 8), s[16];
        k_2bit_sums(x[i].qs, NULL, y[i].qs, s);
        v128_t isum = k_scaled_sum16(s, wasm_v128_and(packed_lo, low4), wasm_v128_and(packed_hi, low4));
        v128_t mins = dot_bsums(wasm_u16x8_shr(packed_lo, 4), wasm_u16x8_shr(packed_hi, 4), &y[i]);
        acc = add_scaled(acc, isum, y[i].d * quant_f16_to_f32_inline(x[i].d));
        acc_min = add_scaled(acc_min, mins, y[i].d * quant_f16_to_f32_inline(x[i].dmin));
    }
    return hsum_f32x4(acc) - hsum_f32x4(acc_min);
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

/* Q3_K: the stored q in 0..7 (2 bits from qs as in Q2_K, bit 2 from bit 4h + j of hmask[l])
 * means q - 4; the dot is taken with q and 4 * sum_j scale_j * bsums[j] subtracted. */
float quant_vec_dot_q3_K_simd(int n, const void *w, const void *a)
{
    const block_q3_K *x = w;
    const block_q8_K *y = a;
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < n / QK_K; i++) {
        v128_t scale_lo, scale_hi, s[16];
        q3_K_scales(x[i].scales, &scale_lo, &scale_hi);
        k_2bit_sums(x[i].qs, x[i].hmask, y[i].qs, s);
        v128_t isum = wasm_i32x4_sub(k_scaled_sum16(s, scale_lo, scale_hi),
                                     wasm_i32x4_shl(dot_bsums(scale_lo, scale_hi, &y[i]), 2));
        acc = add_scaled(acc, isum, quant_f16_to_f32_inline(x[i].d) * y[i].d);
    }
    return hsum_f32x4(acc);
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

/* sum_j min[j] * (bsums[2j] + bsums[2j+1]) over the 8 sub-blocks of 32, as partial sums */
static inline v128_t k_mins_dot(v128_t min, const block_q8_K *y)
{
    return dot_bsums(wasm_i16x8_shuffle(min, min, 0, 0, 1, 1, 2, 2, 3, 3),
                     wasm_i16x8_shuffle(min, min, 4, 4, 5, 5, 6, 6, 7, 7), y);
}

/* sum_j scale[j] * s[j] for 8 sub-blocks given as i32x4 partial sums s[0..8) */
static inline v128_t k_scaled_sum8(const v128_t s[8], v128_t scale)
{
    v128_t s03 = sum4_lanes(s[0], s[1], s[2], s[3]), s47 = sum4_lanes(s[4], s[5], s[6], s[7]);
    return wasm_i32x4_add(wasm_i32x4_mul(s03, wasm_u32x4_extend_low_u16x8(scale)),
                          wasm_i32x4_mul(s47, wasm_u32x4_extend_high_u16x8(scale)));
}

/* Q4_K: chunk j of 64 elements is qs[32j .. 32j+32): low nibbles are sub-block 2j, high
 * nibbles sub-block 2j+1. */
float quant_vec_dot_q4_K_simd(int n, const void *w, const void *a)
{
    const block_q4_K *x = w;
    const block_q8_K *y = a;
    const v128_t low4 = wasm_i16x8_splat(0x0f);
    v128_t acc = wasm_f32x4_splat(0.0f), acc_min = acc;
    for (int i = 0; i < n / QK_K; i++) {
        v128_t scale, min, s[8];
        k_scales_mins(x[i].scales, &scale, &min);
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
            v128_t v0 = load_u8x8(q4), v1 = load_u8x8(q4 + 8), v2 = load_u8x8(q4 + 16), v3 = load_u8x8(q4 + 24);
            s[2 * j] = wasm_i32x4_add(
                wasm_i32x4_add(dot_i16(wasm_v128_and(v0, low4), load_i8x8(q8)), dot_i16(wasm_v128_and(v1, low4), load_i8x8(q8 + 8))),
                wasm_i32x4_add(dot_i16(wasm_v128_and(v2, low4), load_i8x8(q8 + 16)), dot_i16(wasm_v128_and(v3, low4), load_i8x8(q8 + 24))));
            s[2 * j + 1] = wasm_i32x4_add(
                wasm_i32x4_add(dot_i16(wasm_u16x8_shr(v0, 4), load_i8x8(q8 + 32)), dot_i16(wasm_u16x8_shr(v1, 4), load_i8x8(q8 + 40))),
                wasm_i32x4_add(dot_i16(wasm_u16x8_shr(v2, 4), load_i8x8(q8 + 48)), dot_i16(wasm_u16x8_shr(v3, 4), load_i8x8(q8 + 56))));
        }
        acc = add_scaled(acc, k_scaled_sum8(s, scale), quant_f16_to_f32_inline(x[i].d) * y[i].d);
        acc_min = add_scaled(acc_min, k_mins_dot(min, &y[i]), quant_f16_to_f32_inline(x[i].dmin) * y[i].d);
    }
    return hsum_f32x4(acc) - hsum_f32x4(acc_min);
}

/* Q5_K: Q4_K plus bit 2j (low nibbles) or 2j+1 (high nibbles) of qh[l] as bit 4 */
float quant_vec_dot_q5_K_simd(int n, const void *w, const void *a)
{
    const block_q5_K *x = w;
    const block_q8_K *y = a;
    const v128_t low4 = wasm_i16x8_splat(0x0f), bit4 = wasm_i16x8_splat(0x10);
    v128_t acc = wasm_f32x4_splat(0.0f), acc_min = acc;
    for (int i = 0; i < n / QK_K; i++) {
        v128_t scale, min, s[8];
        k_scales_mins(x[i].scales, &scale, &min);
        const uint8_t *q5 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        /* qh bits 2j, 2j+1 are brought to bits 0, 1 by shifting right 2 per chunk */
        v128_t h0 = load_u8x8(x[i].qh), h1 = load_u8x8(x[i].qh + 8), h2 = load_u8x8(x[i].qh + 16), h3 = load_u8x8(x[i].qh + 24);
        for (int j = 0; j < 4; j++, q5 += 32, q8 += 64) {
            v128_t v0 = load_u8x8(q5), v1 = load_u8x8(q5 + 8), v2 = load_u8x8(q5 + 16), v3 = load_u8x8(q5 + 24);
#define Q5K_LO(v, h) wasm_v128_or(wasm_v128_and(v, low4), wasm_v128_and(wasm_i16x8_shl(h, 4), bit4))
#define Q5K_HI(v, h) wasm_v128_or(wasm_u16x8_shr(v, 4), wasm_v128_and(wasm_i16x8_shl(h, 3), bit4))
            s[2 * j] = wasm_i32x4_add(
                wasm_i32x4_add(dot_i16(Q5K_LO(v0, h0), load_i8x8(q8)), dot_i16(Q5K_LO(v1, h1), load_i8x8(q8 + 8))),
                wasm_i32x4_add(dot_i16(Q5K_LO(v2, h2), load_i8x8(q8 + 16)), dot_i16(Q5K_LO(v3, h3), load_i8x8(q8 + 24))));
            s[2 * j + 1] = wasm_i32x4_add(
                wasm_i32x4_add(dot_i16(Q5K_HI(v0, h0), load_i8x8(q8 + 32)), dot_i16(Q5K_HI(v1, h1), load_i8x8(q8 + 40))),
                wasm_i32x4_add(dot_i16(Q5K_HI(v2, h2), load_i8x8(q8 + 48)), dot_i16(Q5K_HI(v3, h3), load_i8x8(q8 + 56))));
#undef Q5K_LO
#undef Q5K_HI
            h0 = wasm_u16x8_shr(h0, 2);
            h1 = wasm_u16x8_shr(h1, 2);
            h2 = wasm_u16x8_shr(h2, 2);
            h3 = wasm_u16x8_shr(h3, 2);
        }
        acc = add_scaled(acc, k_scaled_sum8(s, scale), quant_f16_to_f32_inline(x[i].d) * y[i].d);
        acc_min = add_scaled(acc_min, k_mins_dot(min, &y[i]), quant_f16_to_f32_inline(x[i].dmin) * y[i].d);
    }
    return hsum_f32x4(acc) - hsum_f32x4(acc_min);
}

/* Q6_K: in each half h, element 32k + l (k < 4) takes the low (k < 2) or high nibble of
 * ql[32*(k & 1) + l] and bits 2k..2k+1 of qh[l]; its sub-block is 8h + 2k + l/16. The stored
 * q in 0..63 means q - 32: the dot is taken with q and 32 * sum_j scale_j * bsums[j]
 * subtracted. */
float quant_vec_dot_q6_K_simd(int n, const void *w, const void *a)
{
    const block_q6_K *x = w;
    const block_q8_K *y = a;
    const v128_t low4 = wasm_i16x8_splat(0x0f), bits45 = wasm_i16x8_splat(0x30);
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int i = 0; i < n / QK_K; i++) {
        v128_t s[16];
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *q8 = y[i].qs + 128 * h;
            for (int p = 0; p < 2; p++) {          /* elements 16p .. 16p+16 of each quarter k */
                v128_t s0 = wasm_i32x4_splat(0), s1 = s0, s2 = s0, s3 = s0;
                for (int g = 2 * p; g < 2 * p + 2; g++) {
                    v128_t qa = load_u8x8(ql + 8 * g), qb = load_u8x8(ql + 32 + 8 * g), hh = load_u8x8(qh + 8 * g);
                    v128_t w0 = wasm_v128_or(wasm_v128_and(qa, low4), wasm_v128_and(wasm_i16x8_shl(hh, 4), bits45));
                    v128_t w1 = wasm_v128_or(wasm_v128_and(qb, low4), wasm_v128_and(wasm_i16x8_shl(hh, 2), bits45));
                    v128_t w2 = wasm_v128_or(wasm_u16x8_shr(qa, 4), wasm_v128_and(hh, bits45));
                    v128_t w3 = wasm_v128_or(wasm_u16x8_shr(qb, 4), wasm_v128_and(wasm_u16x8_shr(hh, 2), bits45));
                    s0 = wasm_i32x4_add(s0, dot_i16(w0, load_i8x8(q8 + 8 * g)));
                    s1 = wasm_i32x4_add(s1, dot_i16(w1, load_i8x8(q8 + 32 + 8 * g)));
                    s2 = wasm_i32x4_add(s2, dot_i16(w2, load_i8x8(q8 + 64 + 8 * g)));
                    s3 = wasm_i32x4_add(s3, dot_i16(w3, load_i8x8(q8 + 96 + 8 * g)));
                }
                s[8 * h + p] = s0;
                s[8 * h + 2 + p] = s1;
                s[8 * h + 4 + p] = s2;
                s[8 * h + 6 + p] = s3;
            }
        }
        v128_t scale_lo = load_i8x8(x[i].scales), scale_hi = load_i8x8(x[i].scales + 8);
        v128_t isum = wasm_i32x4_sub(k_scaled_sum16(s, scale_lo, scale_hi),
                                     wasm_i32x4_shl(dot_bsums(scale_lo, scale_hi, &y[i]), 5));
        acc = add_scaled(acc, isum, quant_f16_to_f32_inline(x[i].d) * y[i].d);
    }
    return hsum_f32x4(acc);
}

float quant_vec_dot_q8_K_simd(int n, const void *w, const void *a)
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
