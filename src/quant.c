/* quant.c — the tensor element types: half-precision conversions, dequantization (to_float),
 * quantization (from_float) and the scalar reference dot products (the type table that names
 * them is quant_table.c's).
 *
 * Block layouts, quantizers and dot-product arithmetic follow llama.cpp (MIT licence):
 * ggml/src/ggml-common.h for the structs (declared in quant.h), ggml/src/ggml-quants.c for
 * dequantize_row_* / quantize_row_*_ref, and ggml-cpu's generic ggml_vec_dot_*_q8_* for the
 * integer dot products, which the SIMD kernels in kernels_simd.c must reproduce: integer sums
 * inside a block, scaled by the float block scales only at the end of the block. */
#include "quant.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(block_q4_0) == 2 + QK4_0 / 2, "block_q4_0 size");
_Static_assert(sizeof(block_q4_1) == 4 + QK4_1 / 2, "block_q4_1 size");
_Static_assert(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "block_q5_0 size");
_Static_assert(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "block_q5_1 size");
_Static_assert(sizeof(block_q8_0) == 2 + QK8_0, "block_q8_0 size");
_Static_assert(sizeof(block_q8_1) == 4 + QK8_1, "block_q8_1 size");
_Static_assert(sizeof(block_q2_K) == QK_K / 16 + QK_K / 4 + 4, "block_q2_K size");
_Static_assert(sizeof(block_q3_K) == QK_K / 8 + QK_K / 4 + 12 + 2, "block_q3_K size");
_Static_assert(sizeof(block_q4_K) == 4 + K_SCALE_SIZE + QK_K / 2, "block_q4_K size");
_Static_assert(sizeof(block_q5_K) == 4 + K_SCALE_SIZE + QK_K / 8 + QK_K / 2, "block_q5_K size");
_Static_assert(sizeof(block_q6_K) == QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, "block_q6_K size");
_Static_assert(sizeof(block_q8_K) == 4 + QK_K + 2 * (QK_K / 16), "block_q8_K size");
_Static_assert(sizeof(block_iq4_nl) == 2 + QK4_NL / 2, "block_iq4_nl size");

const int8_t quant_kvalues_iq4nl[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};

/* ---- half precision ------------------------------------------------------------------------ */

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float quant_f16_to_f32(uint16_t h) { return quant_f16_to_f32_inline(h); }

float quant_f16_table[65536];

/* filled before main (and before any thread of the pool starts) */
__attribute__((constructor)) static void f16_table_init(void)
{
    for (uint32_t h = 0; h < 65536; h++)
        quant_f16_table[h] = quant_f16_to_f32_inline((uint16_t)h);
}

/* Round to nearest, ties to even; overflow gives Inf, NaN stays NaN (quiet, sign kept). */
uint16_t quant_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)                       /* NaN: keep the top payload bits, set quiet */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)                      /* >= 65520 = halfway past 65504 (max half) */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {                     /* below 2^-14: a half subnormal, or zero */
        int exp = (int)(ax >> 23);
        int shift = 126 - exp;                  /* value * 2^24 = mantissa >> shift */
        if (shift > 24)
            return sign;                        /* below half the smallest subnormal */
        uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
        uint32_t r = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - (112u << 23);             /* rebias the exponent from 127 to 15 */
    r = (r + 0xfffu + ((r >> 13) & 1)) >> 13;   /* round the 23-bit mantissa to 10 bits */
    return (uint16_t)(sign | r);
}

float quant_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t quant_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)        /* NaN: truncate and force quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static float f16(uint16_t h) { return quant_f16_to_f32_inline(h); }

/* llama.cpp's nearest_int: round half to even */
static int nearest_int(float x) { return (int)lrintf(x); }

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* round(x) half away from zero as an int8; |x| <= 127 for a finite row. A row holding NaN or
 * Inf (a hostile file's weights) gives 0 instead of an undefined float-to-int conversion. */
static int8_t round_q8(float x) { return x > -127.5f && x < 127.5f ? (int8_t)roundf(x) : 0; }

/* ---- float types --------------------------------------------------------------------------- */

void quant_f32_to_float(const void *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
void quant_f32_from_float(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

void quant_f32_round_f16(const float *src, void *dst, int64_t n)
{
    float *out = dst;
    for (int64_t i = 0; i < n; i++)
        out[i] = quant_round_f16(src[i]);
}

void quant_f32_round_bf16(const float *src, void *dst, int64_t n)
{
    float *out = dst;
    for (int64_t i = 0; i < n; i++)
        out[i] = quant_bf16_to_f32(quant_f32_to_bf16(src[i]));
}

void quant_f16_to_float(const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = f16(h[i]);
}

void quant_f16_from_float(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = quant_f32_to_f16(src[i]);
}

void quant_bf16_to_float(const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = quant_bf16_to_f32(h[i]);
}

void quant_bf16_from_float(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = quant_f32_to_bf16(src[i]);
}

/* The float dot products accumulate in double, as ggml's scalar ggml_vec_dot_f32 does. */
float quant_vec_dot_f32_ref(int n, const void *w, const void *a)
{
    const float *x = w, *y = a;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)(x[i] * y[i]);
    return (float)sum;
}

float quant_vec_dot_f16_ref(int n, const void *w, const void *a)
{
    const uint16_t *x = w;
    const float *y = a;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)(f16(x[i]) * y[i]);
    return (float)sum;
}

float quant_vec_dot_bf16_ref(int n, const void *w, const void *a)
{
    const uint16_t *x = w;
    const float *y = a;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (double)(quant_bf16_to_f32(x[i]) * y[i]);
    return (float)sum;
}

/* ---- 32-element block types ---------------------------------------------------------------- */

void quant_q4_0_to_float(const void *src, float *dst, int64_t n)
{
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        float d = f16(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            dst[j] = d * ((x[i].qs[j] & 0x0f) - 8);
            dst[j + QK4_0 / 2] = d * ((x[i].qs[j] >> 4) - 8);
        }
    }
}

/* quantize_row_q4_0_ref: the value of largest magnitude maps to -8 exactly */
void quant_q4_0_from_float(const float *src, void *dst, int64_t n)
{
    block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / QK4_0; i++, src += QK4_0) {
        float amax = 0, max = 0;
        for (int j = 0; j < QK4_0; j++)
            if (fabsf(src[j]) > amax) { amax = fabsf(src[j]); max = src[j]; }
        float d = max / -8, id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = quant_f32_to_f16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            int q0 = (int8_t)(src[j] * id + 8.5f), q1 = (int8_t)(src[j + QK4_0 / 2] * id + 8.5f);
            y[i].qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
        }
    }
}

void quant_q4_1_to_float(const void *src, float *dst, int64_t n)
{
    const block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK4_1; i++, dst += QK4_1) {
        float d = f16(x[i].d), m = f16(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            dst[j] = d * (x[i].qs[j] & 0x0f) + m;
            dst[j + QK4_1 / 2] = d * (x[i].qs[j] >> 4) + m;
        }
    }
}

/* quantize_row_q4_1_ref: q = (x - min) / d rounded, d = (max - min) / 15 */
void quant_q4_1_from_float(const float *src, void *dst, int64_t n)
{
    block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / QK4_1; i++, src += QK4_1) {
        float min = src[0], max = src[0];
        for (int j = 1; j < QK4_1; j++) {
            if (src[j] < min) min = src[j];
            if (src[j] > max) max = src[j];
        }
        float d = (max - min) / 15, id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = quant_f32_to_f16(d);
        y[i].m = quant_f32_to_f16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            int q0 = (int8_t)((src[j] - min) * id + 0.5f);
            int q1 = (int8_t)((src[j + QK4_1 / 2] - min) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 < 15 ? q0 : 15) | (q1 < 15 ? q1 : 15) << 4);
        }
    }
}

/* the 5th bit of element j of a Q5_0 / Q5_1 block, shifted to bit 4 */
static int q5_high_bit(uint32_t qh, int j) { return (int)((qh >> j) & 1) << 4; }

static uint32_t load_u32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store_u32_le(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> 8 * k);
}

void quant_q5_0_to_float(const void *src, float *dst, int64_t n)
{
    const block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK5_0; i++, dst += QK5_0) {
        float d = f16(x[i].d);
        uint32_t qh = load_u32_le(x[i].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            dst[j] = d * (((x[i].qs[j] & 0x0f) | q5_high_bit(qh, j)) - 16);
            dst[j + QK5_0 / 2] = d * (((x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK5_0 / 2)) - 16);
        }
    }
}

/* quantize_row_q5_0_ref: the value of largest magnitude maps to -16 exactly */
void quant_q5_0_from_float(const float *src, void *dst, int64_t n)
{
    block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / QK5_0; i++, src += QK5_0) {
        float amax = 0, max = 0;
        for (int j = 0; j < QK5_0; j++)
            if (fabsf(src[j]) > amax) { amax = fabsf(src[j]); max = src[j]; }
        float d = max / -16, id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = quant_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            int q0 = (int8_t)(src[j] * id + 16.5f), q1 = (int8_t)(src[j + QK5_0 / 2] * id + 16.5f);
            q0 = q0 < 31 ? q0 : 31;
            q1 = q1 < 31 ? q1 : 31;
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + QK5_0 / 2);
        }
        store_u32_le(y[i].qh, qh);
    }
}

void quant_q5_1_to_float(const void *src, float *dst, int64_t n)
{
    const block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK5_1; i++, dst += QK5_1) {
        float d = f16(x[i].d), m = f16(x[i].m);
        uint32_t qh = load_u32_le(x[i].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            dst[j] = d * ((x[i].qs[j] & 0x0f) | q5_high_bit(qh, j)) + m;
            dst[j + QK5_1 / 2] = d * ((x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK5_1 / 2)) + m;
        }
    }
}

/* quantize_row_q5_1_ref */
void quant_q5_1_from_float(const float *src, void *dst, int64_t n)
{
    block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / QK5_1; i++, src += QK5_1) {
        float min = src[0], max = src[0];
        for (int j = 1; j < QK5_1; j++) {
            if (src[j] < min) min = src[j];
            if (src[j] > max) max = src[j];
        }
        float d = (max - min) / 31, id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = quant_f32_to_f16(d);
        y[i].m = quant_f32_to_f16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            int q0 = (int8_t)((src[j] - min) * id + 0.5f);
            int q1 = (int8_t)((src[j + QK5_1 / 2] - min) * id + 0.5f);
            q0 = q0 < 31 ? q0 : 31;
            q1 = q1 < 31 ? q1 : 31;
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + QK5_1 / 2);
        }
        store_u32_le(y[i].qh, qh);
    }
}

/* One 32-value 8-bit block (Q8_0 and Q8_1 share it): q = round(x / d) with d = max|x| / 127
 * (quantize_row_q8_0_ref; half away from zero); returns d. */
static float q8_block_quantize(const float *src, int8_t *qs)
{
    float amax = 0;
    for (int j = 0; j < QK8_0; j++)
        amax = fmaxf(amax, fabsf(src[j]));
    float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK8_0; j++)
        qs[j] = round_q8(src[j] * id);
    return d;
}

static void q8_block_to_float(uint16_t d16, const int8_t *qs, float *dst)
{
    float d = f16(d16);
    for (int j = 0; j < QK8_0; j++)
        dst[j] = d * qs[j];
}

void quant_q8_0_to_float(const void *src, float *dst, int64_t n)
{
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0)
        q8_block_to_float(x[i].d, x[i].qs, dst);
}

void quant_q8_0_from_float_ref(const float *src, void *dst, int64_t n)
{
    block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0)
        y[i].d = quant_f32_to_f16(q8_block_quantize(src, y[i].qs));
}

void quant_q8_1_to_float(const void *src, float *dst, int64_t n)
{
    const block_q8_1 *x = src;
    for (int64_t i = 0; i < n / QK8_1; i++, dst += QK8_1)
        q8_block_to_float(x[i].d, x[i].qs, dst);
}

/* quantize_row_q8_1_ref: as Q8_0, plus s = d * sum(q) */
void quant_q8_1_from_float(const float *src, void *dst, int64_t n)
{
    block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QK8_1; i++, src += QK8_1) {
        float d = q8_block_quantize(src, y[i].qs);
        int sum = 0;
        for (int j = 0; j < QK8_1; j++)
            sum += y[i].qs[j];
        y[i].d = quant_f32_to_f16(d);
        y[i].s = quant_f32_to_f16((float)sum * d);
    }
}

void quant_iq4_nl_to_float(const void *src, float *dst, int64_t n)
{
    const block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / QK4_NL; i++, dst += QK4_NL) {
        float d = f16(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            dst[j] = d * quant_kvalues_iq4nl[x[i].qs[j] & 0x0f];
            dst[j + QK4_NL / 2] = d * quant_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

/* index of the IQ4_NL grid value nearest to v */
static int iq4_nl_nearest(float v)
{
    int best = 0;
    for (int k = 1; k < 16; k++)
        if (fabsf(v - quant_kvalues_iq4nl[k]) < fabsf(v - quant_kvalues_iq4nl[best]))
            best = k;
    return best;
}

/* squared error of the block src quantized onto the grid with scale d, indices into idx */
static float iq4_nl_assign(const float *src, float d, uint8_t idx[QK4_NL])
{
    float id = d != 0 ? 1.0f / d : 0.0f, err = 0;
    for (int j = 0; j < QK4_NL; j++) {
        idx[j] = (uint8_t)iq4_nl_nearest(src[j] * id);
        float e = src[j] - d * quant_kvalues_iq4nl[idx[j]];
        err += e * e;
    }
    return err;
}

/* A simple IQ4_NL quantizer (llama.cpp's searches more scales): start from the scale that maps
 * the value of largest magnitude to the grid end -127, then refit the scale by least squares
 * on the chosen grid points and keep whichever fits better. */
void quant_iq4_nl_from_float(const float *src, void *dst, int64_t n)
{
    block_iq4_nl *y = dst;
    for (int64_t i = 0; i < n / QK4_NL; i++, src += QK4_NL) {
        float amax = 0, max = 0;
        for (int j = 0; j < QK4_NL; j++)
            if (fabsf(src[j]) > amax) { amax = fabsf(src[j]); max = src[j]; }
        uint8_t idx[QK4_NL], idx2[QK4_NL];
        float d = quant_f16_to_f32(quant_f32_to_f16(max / quant_kvalues_iq4nl[0]));
        float err = iq4_nl_assign(src, d, idx);
        float sum_xq = 0, sum_qq = 0;
        for (int j = 0; j < QK4_NL; j++) {
            sum_xq += src[j] * quant_kvalues_iq4nl[idx[j]];
            sum_qq += (float)(quant_kvalues_iq4nl[idx[j]] * quant_kvalues_iq4nl[idx[j]]);
        }
        float d2 = quant_f16_to_f32(quant_f32_to_f16(sum_qq > 0 ? sum_xq / sum_qq : 0));
        if (iq4_nl_assign(src, d2, idx2) < err) {
            d = d2;
            memcpy(idx, idx2, sizeof idx);
        }
        y[i].d = quant_f32_to_f16(d);
        for (int j = 0; j < QK4_NL / 2; j++)
            y[i].qs[j] = (uint8_t)(idx[j] | idx[j + QK4_NL / 2] << 4);
    }
}

/* ggml_vec_dot_q4_0_q8_0 (generic): integer sum per block, times both block scales */
float quant_vec_dot_q4_0_ref(int n, const void *w, const void *a)
{
    const block_q4_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK4_0; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_0 / 2; j++)
            sumi += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK4_0 / 2];
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d));
    }
    return sum;
}

/* ggml_vec_dot_q4_1_q8_1: sum (d_x q_x + m_x) d_y q_y = d_x d_y sum(q_x q_y) + m_x s_y */
float quant_vec_dot_q4_1_ref(int n, const void *w, const void *a)
{
    const block_q4_1 *x = w;
    const block_q8_1 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK4_1; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_1 / 2; j++)
            sumi += (x[i].qs[j] & 0x0f) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + QK4_1 / 2];
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d)) + f16(x[i].m) * f16(y[i].s);
    }
    return sum;
}

float quant_vec_dot_q5_0_ref(int n, const void *w, const void *a)
{
    const block_q5_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK5_0; i++) {
        uint32_t qh = load_u32_le(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            int q0 = ((x[i].qs[j] & 0x0f) | q5_high_bit(qh, j)) - 16;
            int q1 = ((x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK5_0 / 2)) - 16;
            sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + QK5_0 / 2];
        }
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d));
    }
    return sum;
}

float quant_vec_dot_q5_1_ref(int n, const void *w, const void *a)
{
    const block_q5_1 *x = w;
    const block_q8_1 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK5_1; i++) {
        uint32_t qh = load_u32_le(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            int q0 = (x[i].qs[j] & 0x0f) | q5_high_bit(qh, j);
            int q1 = (x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK5_1 / 2);
            sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + QK5_1 / 2];
        }
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d)) + f16(x[i].m) * f16(y[i].s);
    }
    return sum;
}

float quant_vec_dot_q8_0_ref(int n, const void *w, const void *a)
{
    const block_q8_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++)
            sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d));
    }
    return sum;
}

float quant_vec_dot_q8_1_ref(int n, const void *w, const void *a)
{
    const block_q8_1 *x = w;
    const block_q8_1 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_1; j++)
            sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d));
    }
    return sum;
}

float quant_vec_dot_iq4_nl_ref(int n, const void *w, const void *a)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK4_NL; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_NL / 2; j++)
            sumi += quant_kvalues_iq4nl[x[i].qs[j] & 0x0f] * y[i].qs[j]
                  + quant_kvalues_iq4nl[x[i].qs[j] >> 4] * y[i].qs[j + QK4_NL / 2];
        sum += (float)sumi * (f16(x[i].d) * f16(y[i].d));
    }
    return sum;
}

/* ---- K-quants: 256-element super-blocks ---------------------------------------------------- */

void quant_q8_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K)
        for (int j = 0; j < QK_K; j++)
            dst[j] = x[i].d * x[i].qs[j];
}

/* quantize_row_q8_K_ref: the value of largest magnitude maps to -127, q = nearest_int(x / d) */
void quant_q8_K_from_float_ref(const float *src, void *dst, int64_t n)
{
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float amax = 0, max = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(src[j]) > amax) { amax = fabsf(src[j]); max = src[j]; }
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++) {
            int v = nearest_int(iscale * src[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++)
                sum += y[i].qs[16 * j + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

float quant_vec_dot_q8_K_ref(int n, const void *w, const void *a)
{
    const block_q8_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int sumi = 0;
        for (int j = 0; j < QK_K; j++)
            sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (x[i].d * y[i].d);
    }
    return sum;
}

/* Shared by the simple K-quant quantizers below: the asymmetric fit of one sub-block,
 * x ≈ scale * q - min with q in 0..nmax, min >= 0 (the formats store only subtracted mins). */
static void fit_scale_min(const float *x, int len, int nmax, float *scale, float *min)
{
    float lo = 0, hi = x[0];
    for (int j = 0; j < len; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *scale = hi > lo ? (hi - lo) / nmax : 0;
    *min = -lo;
}

/* q = nearest((x + m) / s) in 0..nmax, or 0 where the sub-block scale is 0 */
static int quantize_affine(float x, float s, float m, int nmax)
{
    return s > 0 ? clamp_int(nearest_int((x + m) / s), 0, nmax) : 0;
}

/* Q2_K (dequantize_row_q2_K): element e = 128*h + 32*j + l (l < 32) has its 2 bits at bit 2*j
 * of qs[32*h + l]; its sub-block, scale and min are those of index e / 16. */
void quant_q2_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d), dmin = f16(x[i].dmin);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, j = (e % 128) / 32, l = e % 32, sb = e / 16;
            int q = (x[i].qs[32 * h + l] >> (2 * j)) & 3;
            *dst++ = d * (x[i].scales[sb] & 0x0f) * q - dmin * (x[i].scales[sb] >> 4);
        }
    }
}

/* A simple Q2_K quantizer (llama.cpp's quantize_row_q2_K_ref searches the fit harder):
 * per sub-block min/max fit, 4-bit scales and mins relative to the largest of each. */
void quant_q2_K_from_float(const float *src, void *dst, int64_t n)
{
    block_q2_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scale[16], min[16], max_scale = 0, max_min = 0;
        for (int sb = 0; sb < 16; sb++) {
            fit_scale_min(src + 16 * sb, 16, 3, &scale[sb], &min[sb]);
            max_scale = fmaxf(max_scale, scale[sb]);
            max_min = fmaxf(max_min, min[sb]);
        }
        y[i].d = quant_f32_to_f16(max_scale / 15);
        y[i].dmin = quant_f32_to_f16(max_min / 15);
        float d = f16(y[i].d), dmin = f16(y[i].dmin);
        memset(y[i].qs, 0, sizeof y[i].qs);
        for (int sb = 0; sb < 16; sb++) {
            int ls = d > 0 ? clamp_int(nearest_int(scale[sb] / d), 0, 15) : 0;
            int lm = dmin > 0 ? clamp_int(nearest_int(min[sb] / dmin), 0, 15) : 0;
            y[i].scales[sb] = (uint8_t)(ls | lm << 4);
        }
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, j = (e % 128) / 32, l = e % 32, sb = e / 16;
            int q = quantize_affine(src[e], d * (y[i].scales[sb] & 0x0f), dmin * (y[i].scales[sb] >> 4), 3);
            y[i].qs[32 * h + l] |= (uint8_t)(q << (2 * j));
        }
    }
}

/* ggml_vec_dot_q2_K_q8_K: mins go through the activation block sums */
float quant_vec_dot_q2_K_ref(int n, const void *w, const void *a)
{
    const block_q2_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int sum_mins = 0, sumi = 0;
        for (int sb = 0; sb < 16; sb++)
            sum_mins += (x[i].scales[sb] >> 4) * y[i].bsums[sb];
        for (int sb = 0; sb < 16; sb++) {
            int part = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; e++) {
                int h = e / 128, j = (e % 128) / 32, l = e % 32;
                part += ((x[i].qs[32 * h + l] >> (2 * j)) & 3) * y[i].qs[e];
            }
            sumi += (x[i].scales[sb] & 0x0f) * part;
        }
        sum += y[i].d * f16(x[i].d) * (float)sumi - y[i].d * f16(x[i].dmin) * (float)sum_mins;
    }
    return sum;
}

/* Q3_K: element 128*h + 32*j + l has its low 2 bits at bit 2*j of qs[32*h + l] and its 3rd bit
 * at bit 4*h + j of hmask[l]; the stored q in 0..7 means q - 4. */
static int q3_K_value(const block_q3_K *x, int e)
{
    int h = e / 128, j = (e % 128) / 32, l = e % 32;
    int low = (x->qs[32 * h + l] >> (2 * j)) & 3;
    int high = (x->hmask[l] >> (4 * h + j)) & 1;
    return (low | high << 2) - 4;
}

void quant_q3_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d);
        int8_t scale[16];
        quant_unpack_q3_K_scales(x[i].scales, scale);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * scale[e / 16] * q3_K_value(&x[i], e);
    }
}

/* A simple Q3_K quantizer: per sub-block the value of largest magnitude maps to -4, the 16
 * sub-block scales become 6-bit signed multiples of one super-block scale. */
void quant_q3_K_from_float(const float *src, void *dst, int64_t n)
{
    block_q3_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scale[16], max_scale = 0;
        for (int sb = 0; sb < 16; sb++) {
            float amax = 0, max = 0;
            for (int k = 0; k < 16; k++)
                if (fabsf(src[16 * sb + k]) > amax) { amax = fabsf(src[16 * sb + k]); max = src[16 * sb + k]; }
            scale[sb] = max / -4;
            if (fabsf(scale[sb]) > fabsf(max_scale))
                max_scale = scale[sb];
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        memset(y[i].qs, 0, sizeof y[i].qs);
        float iscale = max_scale != 0 ? -32 / max_scale : 0;
        y[i].d = quant_f32_to_f16(iscale != 0 ? 1 / iscale : 0);
        float d = f16(y[i].d);
        int ls[16];
        for (int sb = 0; sb < 16; sb++) {
            ls[sb] = clamp_int(nearest_int(iscale * scale[sb]), -32, 31);
            int biased = ls[sb] + 32;
            if (sb < 8)
                y[i].scales[sb] |= (uint8_t)(biased & 0x0f);
            else
                y[i].scales[sb - 8] |= (uint8_t)((biased & 0x0f) << 4);
            y[i].scales[8 + (sb & 3)] |= (uint8_t)((biased >> 4) << (2 * (sb >> 2)));
        }
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, j = (e % 128) / 32, l = e % 32;
            float s = d * ls[e / 16];
            int q = (s != 0 ? clamp_int(nearest_int(src[e] / s), -4, 3) : 0) + 4;
            y[i].qs[32 * h + l] |= (uint8_t)((q & 3) << (2 * j));
            y[i].hmask[l] |= (uint8_t)((q >> 2) << (4 * h + j));
        }
    }
}

/* ggml_vec_dot_q3_K_q8_K: sum over sub-blocks of scale * sum((q - 4) * y), all in integers */
float quant_vec_dot_q3_K_ref(int n, const void *w, const void *a)
{
    const block_q3_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int8_t scale[16];
        quant_unpack_q3_K_scales(x[i].scales, scale);
        int sumi = 0;
        for (int sb = 0; sb < 16; sb++) {
            int part = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; e++)
                part += q3_K_value(&x[i], e) * y[i].qs[e];
            sumi += scale[sb] * part;
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi;
    }
    return sum;
}

/* Q4_K / Q5_K: element 64*j + l (l < 32) is the low nibble of qs[32*j + l], element
 * 64*j + 32 + l its high nibble; Q5_K adds bit 2*j (resp. 2*j+1) of qh[l] as bit 4. */
static int q4_K_value(const uint8_t *qs, int e)
{
    int j = e / 64, l = e % 32;
    return (e % 64) < 32 ? qs[32 * j + l] & 0x0f : qs[32 * j + l] >> 4;
}

static int q5_K_value(const block_q5_K *x, int e)
{
    int j = e / 64, l = e % 32, upper = (e % 64) >= 32;
    return q4_K_value(x->qs, e) | ((x->qh[l] >> (2 * j + upper)) & 1) << 4;
}

void quant_q4_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d), dmin = f16(x[i].dmin);
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * scale[e / 32] * q4_K_value(x[i].qs, e) - dmin * min[e / 32];
    }
}

void quant_q5_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d), dmin = f16(x[i].dmin);
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * scale[e / 32] * q5_K_value(&x[i], e) - dmin * min[e / 32];
    }
}

/* inverse of quant_unpack_q4_K_scales */
static void pack_q4_K_scales(const int scale[8], const int min[8], uint8_t packed[K_SCALE_SIZE])
{
    for (int j = 0; j < 4; j++) {
        packed[j] = (uint8_t)((scale[j] & 63) | (scale[j + 4] >> 4) << 6);
        packed[j + 4] = (uint8_t)((min[j] & 63) | (min[j + 4] >> 4) << 6);
        packed[j + 8] = (uint8_t)((scale[j + 4] & 0x0f) | (min[j + 4] & 0x0f) << 4);
    }
}

/* A simple Q4_K / Q5_K quantizer (nmax 15 or 31): per 32-element sub-block min/max fit, 6-bit
 * scales and mins relative to the largest of each; q[] gets the quants in element order. */
static void k_affine_quantize(const float *src, int nmax, uint16_t *d_out, uint16_t *dmin_out,
                              uint8_t packed[K_SCALE_SIZE], uint8_t q[QK_K])
{
    float scale[8], min[8], max_scale = 0, max_min = 0;
    for (int sb = 0; sb < 8; sb++) {
        fit_scale_min(src + 32 * sb, 32, nmax, &scale[sb], &min[sb]);
        max_scale = fmaxf(max_scale, scale[sb]);
        max_min = fmaxf(max_min, min[sb]);
    }
    *d_out = quant_f32_to_f16(max_scale / 63);
    *dmin_out = quant_f32_to_f16(max_min / 63);
    float d = f16(*d_out), dmin = f16(*dmin_out);
    int ls[8], lm[8];
    for (int sb = 0; sb < 8; sb++) {
        ls[sb] = d > 0 ? clamp_int(nearest_int(scale[sb] / d), 0, 63) : 0;
        lm[sb] = dmin > 0 ? clamp_int(nearest_int(min[sb] / dmin), 0, 63) : 0;
    }
    pack_q4_K_scales(ls, lm, packed);
    for (int e = 0; e < QK_K; e++)
        q[e] = (uint8_t)quantize_affine(src[e], d * ls[e / 32], dmin * lm[e / 32], nmax);
}

void quant_q4_K_from_float(const float *src, void *dst, int64_t n)
{
    block_q4_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        uint8_t q[QK_K];
        k_affine_quantize(src, 15, &y[i].d, &y[i].dmin, y[i].scales, q);
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                y[i].qs[32 * j + l] = (uint8_t)(q[64 * j + l] | q[64 * j + 32 + l] << 4);
    }
}

void quant_q5_K_from_float(const float *src, void *dst, int64_t n)
{
    block_q5_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        uint8_t q[QK_K];
        k_affine_quantize(src, 31, &y[i].d, &y[i].dmin, y[i].scales, q);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int lo = q[64 * j + l], hi = q[64 * j + 32 + l];
                y[i].qs[32 * j + l] = (uint8_t)((lo & 0x0f) | (hi & 0x0f) << 4);
                y[i].qh[l] |= (uint8_t)((lo >> 4) << (2 * j) | (hi >> 4) << (2 * j + 1));
            }
    }
}

/* ggml_vec_dot_q4_K_q8_K: sum_j d sc_j sum(q y) - dmin sum_j m_j (bsums of sub-block j) */
float quant_vec_dot_q4_K_ref(int n, const void *w, const void *a)
{
    const block_q4_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        int sumi = 0, sum_mins = 0;
        for (int sb = 0; sb < 8; sb++) {
            int part = 0;
            for (int e = 32 * sb; e < 32 * sb + 32; e++)
                part += q4_K_value(x[i].qs, e) * y[i].qs[e];
            sumi += scale[sb] * part;
            sum_mins += min[sb] * (y[i].bsums[2 * sb] + y[i].bsums[2 * sb + 1]);
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi - f16(x[i].dmin) * y[i].d * (float)sum_mins;
    }
    return sum;
}

float quant_vec_dot_q5_K_ref(int n, const void *w, const void *a)
{
    const block_q5_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        int sumi = 0, sum_mins = 0;
        for (int sb = 0; sb < 8; sb++) {
            int part = 0;
            for (int e = 32 * sb; e < 32 * sb + 32; e++)
                part += q5_K_value(&x[i], e) * y[i].qs[e];
            sumi += scale[sb] * part;
            sum_mins += min[sb] * (y[i].bsums[2 * sb] + y[i].bsums[2 * sb + 1]);
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi - f16(x[i].dmin) * y[i].d * (float)sum_mins;
    }
    return sum;
}

/* Q6_K: element 128*h + 32*k + l (k < 4, l < 32) has its low 4 bits in the low (k = 0, 1) or
 * high (k = 2, 3) nibble of ql[64*h + 32*(k & 1) + l] and its top 2 bits at bit 2*k of
 * qh[32*h + l]; the stored q in 0..63 means q - 32. */
static int q6_K_value(const block_q6_K *x, int e)
{
    int h = e / 128, k = (e % 128) / 32, l = e % 32;
    int ql = x->ql[64 * h + 32 * (k & 1) + l];
    int low = k < 2 ? ql & 0x0f : ql >> 4;
    int high = (x->qh[32 * h + l] >> (2 * k)) & 3;
    return (low | high << 4) - 32;
}

void quant_q6_K_to_float(const void *src, float *dst, int64_t n)
{
    const block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * x[i].scales[e / 16] * q6_K_value(&x[i], e);
    }
}

/* A simple Q6_K quantizer: per sub-block of 16 the value of largest magnitude maps to -32; the
 * sub-block scales become int8 multiples of one super-block scale (as quantize_row_q6_K_ref). */
void quant_q6_K_from_float(const float *src, void *dst, int64_t n)
{
    block_q6_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scale[16], max_scale = 0;
        for (int sb = 0; sb < 16; sb++) {
            float amax = 0, max = 0;
            for (int k = 0; k < 16; k++)
                if (fabsf(src[16 * sb + k]) > amax) { amax = fabsf(src[16 * sb + k]); max = src[16 * sb + k]; }
            scale[sb] = max / -32;
            if (fabsf(scale[sb]) > fabsf(max_scale))
                max_scale = scale[sb];
        }
        float iscale = max_scale != 0 ? -128 / max_scale : 0;
        y[i].d = quant_f32_to_f16(iscale != 0 ? 1 / iscale : 0);
        float d = f16(y[i].d);
        for (int sb = 0; sb < 16; sb++)
            y[i].scales[sb] = (int8_t)clamp_int(nearest_int(iscale * scale[sb]), -128, 127);
        memset(y[i].ql, 0, sizeof y[i].ql);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, k = (e % 128) / 32, l = e % 32;
            float s = d * y[i].scales[e / 16];
            int q = (s != 0 ? clamp_int(nearest_int(src[e] / s), -32, 31) : 0) + 32;
            y[i].ql[64 * h + 32 * (k & 1) + l] |= (uint8_t)((q & 0x0f) << (k < 2 ? 0 : 4));
            y[i].qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
        }
    }
}

float quant_vec_dot_q6_K_ref(int n, const void *w, const void *a)
{
    const block_q6_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int sumi = 0;
        for (int sb = 0; sb < 16; sb++) {
            int part = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; e++)
                part += q6_K_value(&x[i], e) * y[i].qs[e];
            sumi += x[i].scales[sb] * part;
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi;
    }
    return sum;
}

/* ---- Q6_K_R and Q8_K_R: Q6_K and Q8_K in the relaxed kernels' order (quant.h) ---------- */

/* Q8_K_R and Q8_K_R32 are Q8_K with element e of each super-block at qs[pos(e)] */
static void q8_K_in_order_to_float(const block_q8_K *x, float *dst, int64_t n, int (*pos)(int))
{
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K)
        for (int e = 0; e < QK_K; e++)
            dst[e] = x[i].d * x[i].qs[pos(e)];
}

/* Q8_K blocks (n elements) with their qs moved to that order in place */
static void q8_K_put_in_order(block_q8_K *y, int64_t n, int (*pos)(int))
{
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t qs[QK_K];
        for (int e = 0; e < QK_K; e++)
            qs[pos(e)] = y[i].qs[e];
        memcpy(y[i].qs, qs, sizeof qs);
    }
}

_Static_assert(sizeof(block_q6_K_r) == sizeof(block_q6_K), "Q6_K_R repacks Q6_K in place");
_Static_assert(offsetof(block_q6_K_r, scales) == offsetof(block_q6_K, scales) &&
               offsetof(block_q6_K_r, d) == offsetof(block_q6_K, d), "Q6_K_R keeps Q6_K's scales and d in place");

/* the stored value (0..63) at position p of the Q6_K_R order */
static int q6_K_r_stored(const block_q6_K_r *x, int p)
{
    const uint8_t *q = x->q + 48 * (p / 64);
    int run = (p % 64) / 16, l = p % 16;
    if (run < 3)
        return q[16 * run + l] & 63;
    return (q[l] >> 6) | (q[16 + l] >> 6) << 2 | (q[32 + l] >> 6) << 4;
}

void quant_q6_K_r_to_float(const void *src, float *dst, int64_t n)
{
    const block_q6_K_r *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * x[i].scales[e / 16] * (q6_K_r_stored(&x[i], quant_k_r_pos(e)) - 32);
    }
}

/* one Q6_K block as Q6_K_R; src and dst may be the same block */
static void q6_K_to_r(const block_q6_K *src, block_q6_K_r *dst)
{
    uint8_t v[QK_K], q[3 * QK_K / 4];
    for (int e = 0; e < QK_K; e++)
        v[quant_k_r_pos(e)] = (uint8_t)(q6_K_value(src, e) + 32);
    for (int g = 0; g < 4; g++)
        for (int l = 0; l < 16; l++) {
            const uint8_t *run = v + 64 * g;
            q[48 * g + l] = (uint8_t)(run[l] | (run[48 + l] & 3) << 6);
            q[48 * g + 16 + l] = (uint8_t)(run[16 + l] | (run[48 + l] >> 2 & 3) << 6);
            q[48 * g + 32 + l] = (uint8_t)(run[32 + l] | (run[48 + l] >> 4) << 6);
        }
    memcpy(dst->q, q, sizeof q);   /* scales and d are already in place when src == dst */
    if ((const void *)src != (const void *)dst) {
        memcpy(dst->scales, src->scales, sizeof dst->scales);
        dst->d = src->d;
    }
}

void quant_q6_K_r_from_float(const float *src, void *dst, int64_t n)
{
    quant_q6_K_from_float(src, dst, n);
    quant_repack_ref(WICK_TYPE_Q6_K, WICK_TYPE_Q6_K_R, dst, (size_t)(n / QK_K));
}

/* ---- Q4_K_R and Q8_K_R32 (quant.h) ---- */

static int q4_K_r_stored(const uint8_t qs[QK_K / 2], int p)
{
    int m = p / 16, l = p % 16;
    return m < 8 ? qs[16 * m + l] & 0x0f : qs[16 * (m - 8) + l] >> 4;
}

void quant_q4_K_r_to_float(const void *src, float *dst, int64_t n)
{
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d = f16(x[i].d), dmin = f16(x[i].dmin);
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        for (int e = 0; e < QK_K; e++)
            *dst++ = d * scale[e / 32] * q4_K_r_stored(x[i].qs, quant_k_r32_pos(e)) - dmin * min[e / 32];
    }
}

/* one Q4_K block's qs in the Q4_K_R order, in place (d, dmin and scales stay) */
static void q4_K_to_r(block_q4_K *x)
{
    uint8_t v[QK_K];
    for (int e = 0; e < QK_K; e++)
        v[quant_k_r32_pos(e)] = (uint8_t)q4_K_value(x->qs, e);
    for (int m = 0; m < 8; m++)
        for (int l = 0; l < 16; l++)
            x->qs[16 * m + l] = (uint8_t)(v[16 * m + l] | v[16 * (m + 8) + l] << 4);
}

void quant_q4_K_r_from_float(const float *src, void *dst, int64_t n)
{
    quant_q4_K_from_float(src, dst, n);
    quant_repack_ref(WICK_TYPE_Q4_K, WICK_TYPE_Q4_K_R, dst, (size_t)(n / QK_K));
}

float quant_vec_dot_q4_K_r_ref(int n, const void *w, const void *a)
{
    const block_q4_K *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        uint8_t scale[8], min[8];
        quant_unpack_q4_K_scales(x[i].scales, scale, min);
        int sumi = 0, sum_mins = 0;
        for (int sb = 0; sb < 8; sb++) {
            int part = 0;
            for (int e = 32 * sb; e < 32 * sb + 32; e++) {
                int p = quant_k_r32_pos(e);
                part += q4_K_r_stored(x[i].qs, p) * y[i].qs[p];
            }
            sumi += scale[sb] * part;
            sum_mins += min[sb] * (y[i].bsums[2 * sb] + y[i].bsums[2 * sb + 1]);
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi - f16(x[i].dmin) * y[i].d * (float)sum_mins;
    }
    return sum;
}

void quant_q8_K_r32_to_float(const void *src, float *dst, int64_t n) { q8_K_in_order_to_float(src, dst, n, quant_k_r32_pos); }

void quant_q8_K_r32_from_float_ref(const float *src, void *dst, int64_t n)
{
    quant_q8_K_from_float_ref(src, dst, n);
    q8_K_put_in_order(dst, n, quant_k_r32_pos);
}

void quant_repack_ref(uint32_t from, uint32_t to, void *data, size_t n_blocks)
{
    if (from == WICK_TYPE_Q6_K && to == WICK_TYPE_Q6_K_R)
        for (size_t i = 0; i < n_blocks; i++)
            q6_K_to_r((const block_q6_K *)data + i, (block_q6_K_r *)data + i);
    if (from == WICK_TYPE_Q4_K && to == WICK_TYPE_Q4_K_R)
        for (size_t i = 0; i < n_blocks; i++)
            q4_K_to_r((block_q4_K *)data + i);
}

/* the reference: Q6_K's, read through the new order (the same integers, so the same result) */
float quant_vec_dot_q6_K_r_ref(int n, const void *w, const void *a)
{
    const block_q6_K_r *x = w;
    const block_q8_K *y = a;
    float sum = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int sumi = 0;
        for (int sb = 0; sb < 16; sb++) {
            int part = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; e++) {
                int p = quant_k_r_pos(e);
                part += (q6_K_r_stored(&x[i], p) - 32) * y[i].qs[p];
            }
            sumi += x[i].scales[sb] * part;
        }
        sum += f16(x[i].d) * y[i].d * (float)sumi;
    }
    return sum;
}

void quant_q8_K_r_to_float(const void *src, float *dst, int64_t n) { q8_K_in_order_to_float(src, dst, n, quant_k_r_pos); }

/* Q8_K (the scalar quantizer), its qs then put in the Q8_K_R order: the reference of
 * quant_q8_K_r_from_float_simd */
void quant_q8_K_r_from_float_ref(const float *src, void *dst, int64_t n)
{
    quant_q8_K_from_float_ref(src, dst, n);
    q8_K_put_in_order(dst, n, quant_k_r_pos);
}
