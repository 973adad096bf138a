/* encoder.h — the forward pass of an encoder (bert): sequences of tokens in, one hidden state per
 * token out, pooled into one vector per sequence. */
#ifndef WICK_ENCODER_H
#define WICK_ENCODER_H

#include <stdint.h>

#include "context.h"

/* n_seq sequences, their tokens back to back in tokens (sequence s has lens[s] of them, each at
 * most the context's window), through the encoder on context c, packed into batches of at most
 * n_batch tokens; each sequence attends only to itself. pooling POOL_NONE writes every token's
 * hidden state (Σ lens rows of dim floats) to out, else one row per sequence (POOL_MEAN: the mean
 * of its rows, POOL_CLS: its first, POOL_LAST: its last; POOL_RANK: the classification head's
 * n_cls_out outputs over its first, rerank.c). The rows are not normalized. */
int encoder_eval(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, pooling_kind pooling,
                 float *out, errmsg *err);

/* The step encoder.c shares with the vision tower (vision.c; GELU is elementwise.h's gelu_f16):
 * LayerNorm of n_tok rows of n, in place: (x − mean) / √(variance + eps) ⊙ w + b (b NULL: none),
 * as ggml's norm, mul and add compute it. */
void layernorm_rows(float *x, const float *w, const float *b, int n_tok, int n, float eps);

#endif
