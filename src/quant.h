/* quant.h — tensor element types: one table row per type (block layout, to-float,
 * quantize, dot product, matrix tiles), after ggml's type traits. Type ids are ggml's (ggml.h, enum ggml_type),
 * since GGUF stores them verbatim. */
#ifndef WICK_QUANT_H
#define WICK_QUANT_H

#include <stddef.h>
#include <stdint.h>

enum wick_type {
    WICK_TYPE_F32 = 0, WICK_TYPE_F16 = 1, WICK_TYPE_Q4_0 = 2, WICK_TYPE_Q4_1 = 3,
    WICK_TYPE_Q5_0 = 6, WICK_TYPE_Q5_1 = 7, WICK_TYPE_Q8_0 = 8, WICK_TYPE_Q8_1 = 9,
    WICK_TYPE_Q2_K = 10, WICK_TYPE_Q3_K = 11, WICK_TYPE_Q4_K = 12, WICK_TYPE_Q5_K = 13,
    WICK_TYPE_Q6_K = 14, WICK_TYPE_Q8_K = 15, WICK_TYPE_IQ4_NL = 20, WICK_TYPE_BF16 = 30,
    /* wick's own layouts, made in memory and never read from a file (below) */
    WICK_TYPE_Q6_K_R = 31, WICK_TYPE_Q8_K_R = 32, WICK_TYPE_Q4_K_R = 33, WICK_TYPE_Q8_K_R32 = 34,
    /* activation formats of the float weights: F32 rows whose values are F16 (BF16) ones (below) */
    WICK_TYPE_F32_H = 35, WICK_TYPE_F32_BH = 36,
    WICK_TYPE_COUNT = 37
};
/* type ids below this may come from a file; the others are wick's own */
#define WICK_TYPE_FILE_COUNT 31

/* A weight row of type T (n elements, n a multiple of block_size) is multiplied with an
 * activation row that was converted once to vec_dot_type (F32, or an 8-bit block format
 * such as Q8_0 / Q8_1 / Q8_K). */
typedef struct {
    uint32_t type;
    const char *name;          /* "q4_0" */
    uint32_t block_size;       /* elements per block */
    uint32_t type_size;        /* bytes per block */
    uint32_t vec_dot_type;     /* format the activation row must be in for vec_dot */
    /* dst[0..n) = value of the n elements at src (n a multiple of block_size) */
    void (*to_float)(const void *src, float *dst, int64_t n);
    /* quantize n floats into blocks of this type (NULL where the engine never needs it) */
    void (*from_float)(const float *src, void *dst, int64_t n);
    /* dot product of one weight row w and one activation row a (in vec_dot_type), n elements:
     * vec_dot is gemm's 1×1 tile (quant_table.c), so it is what inference computes bit for bit;
     * vec_dot_ref is the plain scalar reference (quant.c) */
    float (*vec_dot)(int n, const void *w, const void *a);
    float (*vec_dot_ref)(int n, const void *w, const void *a);
    /* tile of the matrix product: out[t * out_stride + r] = dot(weight row r, activation row t)
     * for r < nr <= GEMM_MAX_ROWS, t < nt <= GEMM_MAX_TOKENS; weight row r at w + r * w_stride,
     * activation row t (in vec_dot_type) at a + t * a_stride, n elements each. Each weight block
     * is unpacked once per tile and used for every token; each activation block is loaded once
     * per token and used for every row. Every output is computed by the same operations in the
     * same order whatever nr, nt and its place in the tile, so a product does not depend on how
     * it is split into tiles or threads. For the quantized types it equals vec_dot_ref bit for
     * bit (integer sums per block, the float scaling in the reference's order); for F32, F16
     * and BF16 each output keeps one four-lane accumulator over the row (kernels_simd.c's
     * gemm_float), for Q8_1 and Q8_K each is one SIMD row kernel call: both sum in their own
     * order, within float rounding of the reference. A larger nt is taken
     * GEMM_MAX_TOKENS tokens at a time. Never NULL. */
    void (*gemm)(int n, const void *w, size_t w_stride, int nr, const void *a, size_t a_stride, int nt,
                 float *out, size_t out_stride);
    /* decode: out[r] = dot(weight row r at w + r * w_stride, activation row a) for r < 8, each
     * equal to gemm's 1×1 tile bit for bit; eight weight streams at once. NULL where there is no
     * eight-row kernel (forward.c then reads four streams through gemm): the float types, Q8_1
     * and Q8_K. */
    void (*gemv8)(int n, const void *w, size_t w_stride, const void *a, float out[8]);
} quant_type;

/* The scalar functions of the table's rows (quant.c): to-float, from-float and the reference dot
 * product of each type. */
void quant_bf16_from_float(const float *src, void *dst, int64_t n);
void quant_bf16_to_float(const void *src, float *dst, int64_t n);
void quant_f16_from_float(const float *src, void *dst, int64_t n);
void quant_f16_to_float(const void *src, float *dst, int64_t n);
void quant_f32_from_float(const float *src, void *dst, int64_t n);
void quant_f32_to_float(const void *src, float *dst, int64_t n);
/* The activations F16 and BF16 weights multiply: each value rounded to the nearest F16 (BF16, ties to
 * even) and kept as a float, so that the F32 kernels take them. llama.cpp's CPU backend converts a
 * product's activations to its weights' vec_dot_type before it multiplies (ggml-cpu.c, type_traits_cpu:
 * F16 → F16, BF16 → BF16), so the values it multiplies are these; with F32 activations the products
 * differ by up to an F16 rounding of each input, which a quantized KV cache turns into whole steps
 * (tests/kvquant.test.mjs: llama3's Q4_0-cache logits 4.6% from llama.cpp's with F32 activations,
 * 0.18% with these). */
void quant_f32_round_f16(const float *src, void *dst, int64_t n);
void quant_f32_round_bf16(const float *src, void *dst, int64_t n);
void quant_iq4_nl_from_float(const float *src, void *dst, int64_t n);
void quant_iq4_nl_to_float(const void *src, float *dst, int64_t n);
void quant_q2_K_from_float(const float *src, void *dst, int64_t n);
void quant_q2_K_to_float(const void *src, float *dst, int64_t n);
void quant_q3_K_from_float(const float *src, void *dst, int64_t n);
void quant_q3_K_to_float(const void *src, float *dst, int64_t n);
void quant_q4_0_from_float(const float *src, void *dst, int64_t n);
void quant_q4_0_to_float(const void *src, float *dst, int64_t n);
void quant_q4_1_from_float(const float *src, void *dst, int64_t n);
void quant_q4_1_to_float(const void *src, float *dst, int64_t n);
void quant_q4_K_from_float(const float *src, void *dst, int64_t n);
void quant_q4_K_r_from_float(const float *src, void *dst, int64_t n);
void quant_q4_K_r_to_float(const void *src, float *dst, int64_t n);
void quant_q4_K_to_float(const void *src, float *dst, int64_t n);
void quant_q5_0_from_float(const float *src, void *dst, int64_t n);
void quant_q5_0_to_float(const void *src, float *dst, int64_t n);
void quant_q5_1_from_float(const float *src, void *dst, int64_t n);
void quant_q5_1_to_float(const void *src, float *dst, int64_t n);
void quant_q5_K_from_float(const float *src, void *dst, int64_t n);
void quant_q5_K_to_float(const void *src, float *dst, int64_t n);
void quant_q6_K_from_float(const float *src, void *dst, int64_t n);
void quant_q6_K_r_from_float(const float *src, void *dst, int64_t n);
void quant_q6_K_r_to_float(const void *src, float *dst, int64_t n);
void quant_q6_K_to_float(const void *src, float *dst, int64_t n);
void quant_q8_0_to_float(const void *src, float *dst, int64_t n);
void quant_q8_1_from_float(const float *src, void *dst, int64_t n);
void quant_q8_1_to_float(const void *src, float *dst, int64_t n);
void quant_q8_K_r32_to_float(const void *src, float *dst, int64_t n);
void quant_q8_K_r_to_float(const void *src, float *dst, int64_t n);
void quant_q8_K_to_float(const void *src, float *dst, int64_t n);
float quant_vec_dot_bf16_ref(int n, const void *w, const void *a);
float quant_vec_dot_f16_ref(int n, const void *w, const void *a);
float quant_vec_dot_f32_ref(int n, const void *w, const void *a);
float quant_vec_dot_iq4_nl_ref(int n, const void *w, const void *a);
float quant_vec_dot_q2_K_ref(int n, const void *w, const void *a);
float quant_vec_dot_q3_K_ref(int n, const void *w, const void *a);
float quant_vec_dot_q4_0_ref(int n, const void *w, const void *a);
float quant_vec_dot_q4_1_ref(int n, const void *w, const void *a);
float quant_vec_dot_q5_0_ref(int n, const void *w, const void *a);
float quant_vec_dot_q5_1_ref(int n, const void *w, const void *a);
float quant_vec_dot_q5_K_ref(int n, const void *w, const void *a);
float quant_vec_dot_q8_0_ref(int n, const void *w, const void *a);
float quant_vec_dot_q8_1_ref(int n, const void *w, const void *a);
float quant_vec_dot_q8_K_ref(int n, const void *w, const void *a);

/* The largest tile gemm computes: weight rows × activation rows (tokens). Four rows fill the
 * four lanes of a vector, one lane per row, so a tile of fewer rows costs as much as four. */
#define GEMM_MAX_ROWS 4
#define GEMM_MAX_TOKENS 4

/* NULL for a type id wick does not support. */
const quant_type *quant_get(uint32_t type);

/* 1 in the relaxed-SIMD builds (mk/relaxed.mk: -mrelaxed-simd, or emulated natively), else 0 */
#if defined(__wasm_relaxed_simd__) || defined(WICK_RELAXED_EMULATE)
#define WICK_RELAXED 1
#else
#define WICK_RELAXED 0
#endif

/* The type a weight matrix of file type t takes on the CPU path of this build: Q6_K_R for Q6_K
 * and Q4_K_R for Q4_K in the relaxed-SIMD builds, else t itself. */
uint32_t quant_cpu_type(uint32_t t);
/* n_blocks blocks of type `from` at data rewritten in place as blocks of type `to` (the same
 * size): Q6_K to Q6_K_R and Q4_K to Q4_K_R. */
void quant_repack(uint32_t from, uint32_t to, void *data, size_t n_blocks);
/* the same by the scalar reference (quant.c), and the SIMD version quant_repack uses
 * (kernels_simd.c), equal byte for byte */
void quant_repack_ref(uint32_t from, uint32_t to, void *data, size_t n_blocks);
void quant_repack_q6_K_r_simd(void *data, size_t n_blocks);
void quant_repack_q4_K_r_simd(void *data, size_t n_blocks);

/* bytes of a row of n elements, or 0 when n is not a multiple of the block size */
size_t quant_row_size(uint32_t type, int64_t n);

/* scalar conversions used everywhere */
float quant_f16_to_f32(uint16_t h);
uint16_t quant_f32_to_f16(float f);
float quant_bf16_to_f32(uint16_t h);
uint16_t quant_f32_to_bf16(float f);

/* ---- block layouts ------------------------------------------------------------------------
 * Byte-for-byte those of llama.cpp (ggml/src/ggml-common.h, "block_q4_0" … "block_iq4_nl"),
 * since GGUF stores the blocks verbatim. Every field is 1, 2 or 4 bytes wide and placed so that
 * the natural alignment leaves no padding; quant.c asserts each size. fp16 fields are stored as
 * raw uint16_t (IEEE binary16), converted with quant_f16_to_f32. */

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK4_NL 32
#define QK_K 256          /* elements of a K-quant super-block */
#define K_SCALE_SIZE 12   /* bytes of packed 6-bit scales and mins in Q4_K / Q5_K */

/* x = d * (q - 8), q in 0..15; element j in the low nibble of qs[j], element j+16 in the high one */
typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
/* x = d * q + m, q in 0..15, nibbles as in Q4_0 */
typedef struct { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
/* x = d * (q - 16), q in 0..31: low 4 bits as in Q4_0, bit 4 of element j is bit j of qh (LE u32) */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
/* x = d * q + m, q in 0..31, bits as in Q5_0 */
typedef struct { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
/* x = d * q */
typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;
/* x = d * q; s = d * sum(q), the block sum that the Q4_1 / Q5_1 dot products need */
typedef struct { uint16_t d; uint16_t s; int8_t qs[QK8_1]; } block_q8_1;
/* 16 sub-blocks of 16: x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in 0..3 */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; } block_q2_K;
/* 16 sub-blocks of 16: x = d * (s_j - 32) * (q - 4), q in 0..7 (2 low bits in qs, bit 2 in hmask),
 * s_j 6-bit scales packed into 12 bytes */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } block_q3_K;
/* 8 sub-blocks of 32: x = d * sc_j * q - dmin * m_j, q in 0..15, sc_j and m_j 6-bit in 12 bytes */
typedef struct { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
/* as Q4_K with q in 0..31, the 5th bit in qh */
typedef struct {
    uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2];
} block_q5_K;
/* 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q in 0..63 (4 low bits in ql, 2 high in qh) */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K;
/* the K-quants' activation format: x = d * q, bsums[j] = sum of qs[16j .. 16j+16) */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;

/* ---- wick's own layouts, for the relaxed-SIMD kernels ----
 * Q6_K_R is Q6_K with the same values, scales and size (210 bytes) in another order, made from
 * Q6_K in place (quant_repack) when a CPU context is made in a relaxed build (quant_cpu_type);
 * its activations are Q8_K_R, Q8_K with qs in the same order (bsums, per sub-block, unchanged).
 * The order puts element 16k + i of a super-block (sub-block k, i < 16) at
 *   p = 128 * (k / 8) + 16 * (i / 2) + 2 * (k % 8) + i % 2,
 * so that each 16 bytes hold one pair of elements of each of eight sub-blocks: lane k of a dot
 * product of pairs (i16x8) belongs to sub-block k, and one vector of eight scales weighs eight
 * sub-blocks at once, with no broadcast per sub-block. The integer sum of each sub-block is the
 * same in any order, so Q6_K_R gives Q6_K's results bit for bit. The stored 6-bit values (0..63,
 * meaning q - 32) in this order are packed in groups of 64 (48 bytes): with A, B, C, D the four
 * runs of 16, q[48g + l] = A_l | (D_l & 3) << 6, q[48g + 16 + l] = B_l | (D_l >> 2 & 3) << 6,
 * q[48g + 32 + l] = C_l | (D_l >> 4) << 6: four 6-bit vectors from three loads, two masks and
 * three shifts cheaper than Q6_K's nibbles and bit pairs. */
typedef struct { uint8_t q[3 * QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K_r;

/* position of element e (0..255) of a super-block in the Q6_K_R / Q8_K_R order */
static inline int quant_k_r_pos(int e)
{
    int k = e / 16, i = e % 16;
    return 128 * (k / 8) + 16 * (i / 2) + 2 * (k % 8) + i % 2;
}

/* Q4_K_R is Q4_K (block_q4_K: the same d, dmin, scales and size) with qs in the same kind of
 * order for its eight sub-blocks of 32: element 32k + i (sub-block k, i < 32) at
 *   p = 16 * (i / 2) + 2 * k + i % 2,
 * each 16 positions one pair of each sub-block, so a dot product of pairs has sub-block k in lane
 * k; eight of them add in 16 bits (at most 8 * 2 * 128 * 15) before one vector of the eight
 * scales weighs them. Stored values v (0..15) in this order are packed two runs of 16 per 16
 * bytes: qs[16m + l] = v[16m + l] | v[16(m + 8) + l] << 4 (m < 8). Activations: Q8_K_R32, Q8_K
 * with qs in this order. */
static inline int quant_k_r32_pos(int e)
{
    int k = e / 32, i = e % 32;
    return 16 * (i / 2) + 2 * k + i % 2;
}
/* x = d * kvalues_iq4nl[q], q in 0..15, nibbles as in Q4_0 */
typedef struct { uint16_t d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;

/* the non-linear IQ4_NL grid (llama.cpp ggml-common.h, kvalues_iq4nl) */
extern const int8_t quant_kvalues_iq4nl[16];

/* IEEE binary16 → binary32, exact, for use inside kernels (quant_f16_to_f32 is the same
 * function out of line), without touching float subnormals: those cost x86 a ~100-cycle
 * microcode assist, and K-quant super-block scales are often subnormal halves.
 * Normal, Inf and NaN: the exponent and mantissa bits moved into float position with 224 added
 * to the exponent read as a normal float 2^112 times the value (exponent 31 becomes 255, so Inf
 * and NaN come out as such); one multiply by 2^-112 rebiases exactly. Subnormal and zero: the
 * mantissa m placed under the exponent of 0.5 reads as 0.5 + m * 2^-24; subtracting 0.5 leaves
 * m * 2^-24 exactly. (After the FP16 library's fp16_ieee_to_fp32_value, M. Dukhan.) */
static inline float quant_f16_to_f32_inline(uint16_t h)
{
    union { uint32_t u; float f; } normal, subnormal;
    uint32_t exp_mant = h & 0x7fffu;
    normal.u = (exp_mant << 13) + (224u << 23);
    normal.f *= 0x1p-112f;
    subnormal.u = exp_mant | (126u << 23);
    subnormal.f -= 0.5f;
    normal.u = exp_mant < 0x0400u ? subnormal.u : normal.u;
    normal.u |= (uint32_t)(h & 0x8000u) << 16;
    return normal.f;
}

/* x rounded to the nearest F16 value (ties to even), as a float: quant_f16_to_f32(quant_f32_to_f16(x)).
 * In F16's normal range the float's 23-bit mantissa is rounded to 10 bits in place (a carry moves
 * into the exponent as rounding up should); subnormal, overflowing and NaN values take the long way. */
static inline float quant_round_f16(float x)
{
    union { float f; uint32_t u; } v = {x};
    uint32_t ax = v.u & 0x7fffffffu;
    if (ax >= 0x38800000u && ax < 0x477ff000u) { /* 2^-14 <= |x| < 65520 (halfway past 65504) */
        v.u = (v.u + 0xfffu + ((v.u >> 13) & 1)) & ~0x1fffu;
        return v.f;
    }
    return quant_f16_to_f32_inline(quant_f32_to_f16(x));
}

/* quant_f16_table[h] = quant_f16_to_f32(h) for every half h (256 KiB, filled at start-up). The tile
 * kernels look their fp16 block scales up here: four scalar loads cost less than gathering four
 * halves into a vector and converting them, which took a fifth of a Q4_0 matrix-vector product. */
extern float quant_f16_table[65536];

/* Q4_K / Q5_K scales: 8 six-bit scales and 8 six-bit mins in 12 bytes (llama.cpp
 * ggml-quants.c, get_scale_min_k4): entries 0..3 in the low 6 bits of bytes 0..3 (scales) and
 * 4..7 (mins); entries 4..7 have their low 4 bits in the nibbles of bytes 8..11 (scale low,
 * min high) and their top 2 bits in the top 2 bits of bytes 0..3 (scales) and 4..7 (mins). */
static inline void quant_unpack_q4_K_scales(const uint8_t packed[K_SCALE_SIZE], uint8_t scale[8],
                                            uint8_t min[8])
{
    for (int j = 0; j < 4; j++) {
        scale[j] = packed[j] & 63;
        min[j] = packed[j + 4] & 63;
        scale[j + 4] = (uint8_t)((packed[j + 8] & 0x0f) | (packed[j] >> 6) << 4);
        min[j + 4] = (uint8_t)((packed[j + 8] >> 4) | (packed[j + 4] >> 6) << 4);
    }
}

/* Q3_K scales: 16 six-bit values stored biased by 32 in 12 bytes (llama.cpp ggml-quants.c,
 * dequantize_row_q3_K): the low 4 bits of entry j in the low (j < 8) or high (j >= 8) nibble
 * of byte j % 8, the top 2 bits in bits 2*(j/4).. of byte 8 + j % 4. Returns them unbiased. */
static inline void quant_unpack_q3_K_scales(const uint8_t packed[12], int8_t scale[16])
{
    for (int j = 0; j < 16; j++) {
        int low = j < 8 ? packed[j] & 0x0f : packed[j - 8] >> 4;
        int high = (packed[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        scale[j] = (int8_t)((low | high << 4) - 32);
    }
}

/* Q6_K_R's, Q6_K's, Q4_K_R's and Q4_K's scalar references (quant.c), which also stand in for
 * the tile kernels of the layout a build never runs (kernels_simd.c) */
float quant_vec_dot_q6_K_r_ref(int n, const void *w, const void *a);
float quant_vec_dot_q6_K_ref(int n, const void *w, const void *a);
float quant_vec_dot_q4_K_r_ref(int n, const void *w, const void *a);
float quant_vec_dot_q4_K_ref(int n, const void *w, const void *a);

/* The tile kernels (kernels_simd.c), handed out as quant_type.gemm (arguments as there). The
 * float types and the activation formats as weights loop over a SIMD row kernel of their own. */
typedef void quant_gemm_fn(int n, const void *w, size_t w_stride, int nr, const void *a, size_t a_stride,
                           int nt, float *out, size_t out_stride);
/* Q8_0 quantization (llama.cpp's quantize_row_q8_0_ref): the scalar reference and the SIMD
 * version the table hands out (kernels_simd.c), equal byte for byte */
void quant_q8_0_from_float_ref(const float *src, void *dst, int64_t n);
void quant_q8_0_from_float_simd(const float *src, void *dst, int64_t n);
/* the same for Q8_K (quantize_row_q8_K_ref) */
void quant_q8_K_from_float_ref(const float *src, void *dst, int64_t n);
void quant_q8_K_from_float_simd(const float *src, void *dst, int64_t n);
/* the same for Q8_K_R (Q8_K in the Q6_K_R order) and Q8_K_R32 (in the Q4_K_R order) */
void quant_q8_K_r_from_float_ref(const float *src, void *dst, int64_t n);
void quant_q8_K_r_from_float_simd(const float *src, void *dst, int64_t n);
void quant_q8_K_r32_from_float_ref(const float *src, void *dst, int64_t n);
void quant_q8_K_r32_from_float_simd(const float *src, void *dst, int64_t n);
typedef void quant_gemv8_fn(int n, const void *w, size_t w_stride, const void *a, float out[8]);
quant_gemv8_fn quant_gemv8_q4_0, quant_gemv8_q4_1, quant_gemv8_q5_0, quant_gemv8_q5_1, quant_gemv8_q8_0, quant_gemv8_iq4_nl,
    quant_gemv8_q2_K, quant_gemv8_q3_K, quant_gemv8_q4_K, quant_gemv8_q5_K, quant_gemv8_q6_K, quant_gemv8_q6_K_r,
    quant_gemv8_q4_K_r;
quant_gemm_fn quant_gemm_f32, quant_gemm_f16, quant_gemm_bf16, quant_gemm_q4_0, quant_gemm_q4_1,
    quant_gemm_q5_0, quant_gemm_q5_1, quant_gemm_q8_0, quant_gemm_q8_1, quant_gemm_q2_K, quant_gemm_q3_K,
    quant_gemm_q4_K, quant_gemm_q5_K, quant_gemm_q6_K, quant_gemm_q8_K, quant_gemm_iq4_nl, quant_gemm_q6_K_r,
    quant_gemm_q4_K_r;

#endif
