/* attention.h — attention over the KV cache (attention.c): the fast paths the forward pass takes,
 * and the scalar reference the tests compare them against. */
#ifndef WICK_ATTENTION_H
#define WICK_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* The attention kernels take head dimensions that are multiples of 8, up to this. */
#define MAX_HEAD_DIM 512

/* Floats of scratch each thread takes (c->att holds one such area per thread). */
size_t attention_scratch_floats(int32_t n_ctx);

/* The n_tok queries of c->q (positions pos0 …, rows of the layer's q_dim) against layer l's cache, which
 * already holds their own keys and values: out rows into c->xb2. causal: a query sees the
 * positions up to its own; else every position up to the batch's last (encoders). Either way a
 * sliding layer's query sees only its window's start on. */
void attention(struct wick_ctx *c, int layer, int pos0, int n_tok, bool causal);
/* The same in plain scalar code, into out (rows of q_dim), for the tests. */
void attention_ref(const struct wick_ctx *c, int layer, int pos0, int n_tok, bool causal, float *out);

#endif
