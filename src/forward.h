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
    void *k_cache, *v_cache;      /* per layer l: [kv_slots[l]][kv_dim] from element kv_off[l] */
    int32_t *kv_slots;            /* positions layer l holds: n_ctx, or a ring for a sliding layer */
    size_t *kv_off;               /* where layer l's cache starts, in elements */
    size_t kv_cache_bytes;        /* of k_cache (v_cache is as large) */
    /* A sliding layer's ring holds position p in slot p mod ring: its last n_swa − 1 + n_batch
     * positions, enough for a batch to see its window; swa_lo is the oldest position every ring
     * still holds (positions before it were overwritten). ring is 0 when no layer has one. */
    int32_t ring, swa_lo;
    const float *rope_factors;    /* frequency divisors in effect: rope_freqs, or phi3's set for n_ctx */
    pool *pool;
    /* scratch for one batch of at most n_batch tokens */
    float *x, *xb, *xb2, *q, *k, *v, *hb, *hb2; /* q and xb2 are [n_batch][q_dim], x and xb [n_batch][dim] */
    float *rope_cos, *rope_sin;   /* [2][n_batch][rope_dim/2]: the full layers' base, then the sliding layers' */
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
/* Whether the cache can drop positions n_keep … n_keep + n_discard − 1 and go on: false when a
 * sliding layer would need kept positions its ring no longer holds (then evaluate again). */
bool kv_cache_can_shift(const struct wick_ctx *c, int32_t n_keep, int32_t n_discard);
/* Whether the cache can be cut back to its first n positions and go on from there (a sliding
 * layer's ring must still hold the window before position n). */
bool kv_cache_can_trim(const struct wick_ctx *c, int32_t n);

#endif
