/* quant_table.c — the type table (one row per tensor type: block size and bytes, the activation
 * format its dot product takes, to-float, from-float, the dot product (gemm's 1×1 tile), its
 * scalar reference, gemm and the eight-row gemv) and the build's policy over it: which layout a
 * weight takes on the CPU (quant_cpu_type) and the in-place rewrite into it (quant_repack). The
 * scalar functions come from quant.c and the SIMD ones from kernels_simd.c; both depend only on
 * the block layouts (quant.h), this file on both. */
#include "quant.h"

#include <stddef.h>

uint32_t quant_cpu_type(uint32_t t)
{
    if (!WICK_RELAXED) return t;
    return t == WICK_TYPE_Q6_K ? WICK_TYPE_Q6_K_R : t == WICK_TYPE_Q4_K ? WICK_TYPE_Q4_K_R : t;
}

void quant_repack(uint32_t from, uint32_t to, void *data, size_t n_blocks)
{
    if (from == WICK_TYPE_Q6_K && to == WICK_TYPE_Q6_K_R)
        quant_repack_q6_K_r_simd(data, n_blocks);
    if (from == WICK_TYPE_Q4_K && to == WICK_TYPE_Q4_K_R)
        quant_repack_q4_K_r_simd(data, n_blocks);
}

/* A type's vec_dot is its gemm kernel called with one weight row and one token (a 1×1 tile),
 * so that what the tests, the benchmark and wick_row_dot call is what inference computes, bit
 * for bit, and there is no second SIMD kernel per type to keep in step with the tiles. The
 * strides do not matter for a single row and token. */
#define TILE_DOT(GEMM)                                                                              \
    static float tile_dot_##GEMM(int n, const void *w, const void *a)                               \
    {                                                                                               \
        float out;                                                                                  \
        GEMM(n, w, 0, 1, a, 0, 1, &out, 1);                                                         \
        return out;                                                                                 \
    }
TILE_DOT(quant_gemm_f32) TILE_DOT(quant_gemm_f16) TILE_DOT(quant_gemm_bf16) TILE_DOT(quant_gemm_q4_0)
TILE_DOT(quant_gemm_q4_1) TILE_DOT(quant_gemm_q5_0) TILE_DOT(quant_gemm_q5_1) TILE_DOT(quant_gemm_q8_0)
TILE_DOT(quant_gemm_q8_1) TILE_DOT(quant_gemm_q2_K) TILE_DOT(quant_gemm_q3_K) TILE_DOT(quant_gemm_q4_K)
TILE_DOT(quant_gemm_q5_K) TILE_DOT(quant_gemm_q6_K) TILE_DOT(quant_gemm_q8_K) TILE_DOT(quant_gemm_iq4_nl)
TILE_DOT(quant_gemm_q6_K_r) TILE_DOT(quant_gemm_q4_K_r)

/* a type that can be a weight: vec_dot is the 1×1 tile of GEMM */
#define TYPE_ROW(T, NAME, BLOCK, SIZE, DOT_TYPE, TO, FROM, DOT_REF, GEMM, GEMV8) \
    [WICK_TYPE_##T] = { WICK_TYPE_##T, NAME, BLOCK, SIZE, WICK_TYPE_##DOT_TYPE, TO, FROM, tile_dot_##GEMM, DOT_REF, GEMM, GEMV8 }
/* an activation format only: never a weight, so no dot product of its own */
#define ACTIVATION_ROW(T, NAME, BLOCK, SIZE, TO, FROM) \
    [WICK_TYPE_##T] = { WICK_TYPE_##T, NAME, BLOCK, SIZE, WICK_TYPE_##T, TO, FROM, NULL, NULL, NULL, NULL }

static const quant_type quant_types[WICK_TYPE_COUNT] = {
    TYPE_ROW(F32, "f32", 1, 4, F32, quant_f32_to_float, quant_f32_from_float,
             quant_vec_dot_f32_ref, quant_gemm_f32, NULL),
    TYPE_ROW(F16, "f16", 1, 2, F32_H, quant_f16_to_float, quant_f16_from_float,
             quant_vec_dot_f16_ref, quant_gemm_f16, NULL),
    TYPE_ROW(BF16, "bf16", 1, 2, F32_BH, quant_bf16_to_float, quant_bf16_from_float,
             quant_vec_dot_bf16_ref, quant_gemm_bf16, NULL),
    TYPE_ROW(Q4_0, "q4_0", QK4_0, sizeof(block_q4_0), Q8_0, quant_q4_0_to_float, quant_q4_0_from_float,
             quant_vec_dot_q4_0_ref, quant_gemm_q4_0, quant_gemv8_q4_0),
    TYPE_ROW(Q4_1, "q4_1", QK4_1, sizeof(block_q4_1), Q8_1, quant_q4_1_to_float, quant_q4_1_from_float,
             quant_vec_dot_q4_1_ref, quant_gemm_q4_1, quant_gemv8_q4_1),
    TYPE_ROW(Q5_0, "q5_0", QK5_0, sizeof(block_q5_0), Q8_0, quant_q5_0_to_float, quant_q5_0_from_float,
             quant_vec_dot_q5_0_ref, quant_gemm_q5_0, quant_gemv8_q5_0),
    TYPE_ROW(Q5_1, "q5_1", QK5_1, sizeof(block_q5_1), Q8_1, quant_q5_1_to_float, quant_q5_1_from_float,
             quant_vec_dot_q5_1_ref, quant_gemm_q5_1, quant_gemv8_q5_1),
    TYPE_ROW(Q8_0, "q8_0", QK8_0, sizeof(block_q8_0), Q8_0, quant_q8_0_to_float, quant_q8_0_from_float_simd,
             quant_vec_dot_q8_0_ref, quant_gemm_q8_0, quant_gemv8_q8_0),
    TYPE_ROW(Q8_1, "q8_1", QK8_1, sizeof(block_q8_1), Q8_1, quant_q8_1_to_float, quant_q8_1_from_float,
             quant_vec_dot_q8_1_ref, quant_gemm_q8_1, NULL),
    TYPE_ROW(Q2_K, "q2_K", QK_K, sizeof(block_q2_K), Q8_K, quant_q2_K_to_float, quant_q2_K_from_float,
             quant_vec_dot_q2_K_ref, quant_gemm_q2_K, quant_gemv8_q2_K),
    TYPE_ROW(Q3_K, "q3_K", QK_K, sizeof(block_q3_K), Q8_K, quant_q3_K_to_float, quant_q3_K_from_float,
             quant_vec_dot_q3_K_ref, quant_gemm_q3_K, quant_gemv8_q3_K),
    TYPE_ROW(Q4_K, "q4_K", QK_K, sizeof(block_q4_K), Q8_K, quant_q4_K_to_float, quant_q4_K_from_float,
             quant_vec_dot_q4_K_ref, quant_gemm_q4_K, quant_gemv8_q4_K),
    TYPE_ROW(Q5_K, "q5_K", QK_K, sizeof(block_q5_K), Q8_K, quant_q5_K_to_float, quant_q5_K_from_float,
             quant_vec_dot_q5_K_ref, quant_gemm_q5_K, quant_gemv8_q5_K),
    TYPE_ROW(Q6_K, "q6_K", QK_K, sizeof(block_q6_K), Q8_K, quant_q6_K_to_float, quant_q6_K_from_float,
             quant_vec_dot_q6_K_ref, quant_gemm_q6_K, quant_gemv8_q6_K),
    TYPE_ROW(Q8_K, "q8_K", QK_K, sizeof(block_q8_K), Q8_K, quant_q8_K_to_float, quant_q8_K_from_float_simd,
             quant_vec_dot_q8_K_ref, quant_gemm_q8_K, NULL),
    TYPE_ROW(IQ4_NL, "iq4_nl", QK4_NL, sizeof(block_iq4_nl), Q8_0, quant_iq4_nl_to_float, quant_iq4_nl_from_float,
             quant_vec_dot_iq4_nl_ref, quant_gemm_iq4_nl, quant_gemv8_iq4_nl),
    TYPE_ROW(Q6_K_R, "q6_K_r", QK_K, sizeof(block_q6_K_r), Q8_K_R, quant_q6_K_r_to_float, quant_q6_K_r_from_float,
             quant_vec_dot_q6_K_r_ref, quant_gemm_q6_K_r, quant_gemv8_q6_K_r),
    ACTIVATION_ROW(Q8_K_R, "q8_K_r", QK_K, sizeof(block_q8_K), quant_q8_K_r_to_float, quant_q8_K_r_from_float_simd),
    TYPE_ROW(Q4_K_R, "q4_K_r", QK_K, sizeof(block_q4_K), Q8_K_R32, quant_q4_K_r_to_float, quant_q4_K_r_from_float,
             quant_vec_dot_q4_K_r_ref, quant_gemm_q4_K_r, quant_gemv8_q4_K_r),
    ACTIVATION_ROW(Q8_K_R32, "q8_K_r32", QK_K, sizeof(block_q8_K), quant_q8_K_r32_to_float, quant_q8_K_r32_from_float_simd),
    ACTIVATION_ROW(F32_H, "f32_h", 1, 4, quant_f32_to_float, quant_f32_round_f16),
    ACTIVATION_ROW(F32_BH, "f32_bh", 1, 4, quant_f32_to_float, quant_f32_round_bf16),
};

const quant_type *quant_get(uint32_t type)
{
    if (type >= WICK_TYPE_COUNT || quant_types[type].name == NULL)
        return NULL;
    return &quant_types[type];
}

size_t quant_row_size(uint32_t type, int64_t n)
{
    const quant_type *t = quant_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0)
        return 0;
    return (size_t)(n / t->block_size) * t->type_size;
}
