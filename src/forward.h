/* forward.h — the forward pass: a batch of tokens through every layer into logits, on a context
 * (context.h). */
#ifndef WICK_FORWARD_H
#define WICK_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* Evaluates n tokens at positions n_past…, in batches of at most n_batch; keeps the logits of the
 * last position (of every position with all_logits). */
int forward_eval(struct wick_ctx *c, const int32_t *tokens, int32_t n, bool all_logits, errmsg *err);
/* The same evaluation without the output head: writes the last position's hidden state after the
 * output norm (dim floats) to out, what llama.cpp pools for a decoder's last-token and rank
 * pooling. */
int forward_eval_hidden(struct wick_ctx *c, const int32_t *tokens, int32_t n, float *out, errmsg *err);

#endif
