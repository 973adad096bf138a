/* elementwise.h — the scalar functions several steps of a layer share: the activations (SiLU,
 * GELU in its tanh form and with llama.cpp's F16 roundings, the sigmoid), tanh through expf, and
 * the RMS norm of a row. Inline, so that the files using them (matmul.c, attention.c, recurrent.c,
 * forward.c) depend on no other file for them beyond quant.h's F16 rounding. Only expf, sqrt and
 * IEEE arithmetic: every build rounds them alike. */
#ifndef WICK_ELEMENTWISE_H
#define WICK_ELEMENTWISE_H

#include <math.h>
#include <stddef.h>

#include "quant.h"

static inline float silu(float x) { return x / (1.0f + expf(-x)); }

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* tanh(x) = 1 − 2 / (e^(2x) + 1), through expf: the C libraries of the two builds (glibc, musl)
 * round expf alike but not tanhf, and native and wasm must give the same numbers */
static inline float tanh_exp(float x) { return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f); }

/* GELU in its tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
static inline float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535588f;
    return 0.5f * x * (1.0f + tanh_exp(sqrt_2_over_pi * x * (1.0f + 0.044715f * x * x)));
}

/* GELU as llama.cpp's CPU backend computes it (ggml-cpu/vec.h, GGML_GELU_FP16, for ggml_gelu and
 * the gated ggml_geglu alike): the input rounded to F16 and looked up in a table of F16 results,
 * 0 below −10 and the identity above 10; so the same roundings here, around the tanh form */
static inline float gelu_f16(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return quant_round_f16(gelu_tanh(quant_round_f16(x)));
}

/* x += y over n values (a residual add; the position and token-type embeddings) */
static inline void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* out = x / √(mean(x²) + eps) ⊙ w over n values (the sum of squares in double; out may be x) */
static inline void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

#endif
