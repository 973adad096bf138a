/* matmul.h — activation rows quantized once per weight format, and the matrix products of the
 * layers (out = x·Wᵀ for a batch of rows), split between the pool's threads by output rows. */
#ifndef WICK_MATMUL_H
#define WICK_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct wick_ctx;

/* Activation rows converted once to the 8-bit block format a weight type multiplies with;
 * one slot per format (Q8_0, Q8_1, Q8_K: a mixed file may use all three on one input). */
#define ACT_SLOTS 3
typedef struct {
    const float *x;
    int n_tok, cols;
    uint32_t q_type[ACT_SLOTS];
    bool ready[ACT_SLOTS];
    void *q[ACT_SLOTS];
    size_t q_row_bytes[ACT_SLOTS];
    bool xr_ready;    /* the rows rounded to F16 or BF16 values (xr_type) are in the context's xr */
    uint32_t xr_type;
} act_rows;

/* Bytes per element, rounded up, of the largest activation block format (Q8_K: 292 bytes per 256):
 * the size of each of a context's activation buffers (qbuf) per input column. */
#define ACT_BYTES_PER_ELEM_NUM 292
#define ACT_BYTES_PER_ELEM_DEN 256

/* n_tok rows of cols floats at x, none converted yet (the context's buffers hold the conversions) */
void act_init(act_rows *a, struct wick_ctx *c, const float *x, int n_tok, int cols);
/* out[t·out_stride + r] = Σ_c W[r][c] · x[t][c] (+ bias[r]) for every token t */
void matmul(struct wick_ctx *c, const weight *w, act_rows *x, float *out, int out_stride, const float *bias);
/* n (≤ MATMUL_GROUP_MAX) products over the same input in one dispatch; gated: the two are gate and
 * up, and out0 becomes act(out0) ⊙ out1 (SwiGLU, or GeGLU with GELU) */
#define MATMUL_GROUP_MAX 4
void matmul_group(struct wick_ctx *c, act_rows *x, int n, const weight *const *ws, float *const *outs,
                  const int *strides, const float *const *biases, bool gated, ffn_activation act);

#endif
