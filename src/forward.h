/* forward.h — the inference context (KV cache, scratch, thread pool) and the transformer's
 * forward pass over a batch of tokens. */
#ifndef WICK_FORWARD_H
#define WICK_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "pool.h"
#include "wick.h"

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
} act_rows;

struct wick_ctx {
    const struct wick_model *m;
    int32_t n_ctx, n_batch, kv_type, n_past;
    size_t kv_elem;               /* bytes per cached element (2 or 4) */
    void *k_cache, *v_cache;      /* [n_layers][n_ctx][kv_dim] */
    pool *pool;
    /* scratch for one batch of at most n_batch tokens */
    float *x, *xb, *xb2, *q, *k, *v, *hb, *hb2;
    float *rope_cos, *rope_sin;   /* [n_batch][rope_dim/2] */
    float *att;                   /* per thread: scores of up to 8 heads × n_ctx, one row (forward.c) */
    void *qbuf[ACT_SLOTS];
    size_t qbuf_bytes;
    float *logits;                /* [n_logit_rows][n_vocab] */
    int32_t n_logit_rows, logits_cap_rows;
};

int ctx_init(struct wick_ctx *c, const struct wick_model *m, const wick_ctx_params *p, char *err, size_t err_len);
void ctx_release(struct wick_ctx *c);
int forward_eval(struct wick_ctx *c, const int32_t *tokens, int32_t n, bool all_logits, char *err, size_t err_len);
int kv_cache_shift(struct wick_ctx *c, int32_t n_keep, int32_t n_discard, char *err, size_t err_len);

#endif
