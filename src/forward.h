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

/* The hidden states after the final norm (llama.cpp's t_embd, what its embedding context pools) of
 * one sequence of n tokens from position 0, the cache emptied first: n rows of dim into out. */
int forward_hidden(struct wick_ctx *c, const int32_t *tokens, int32_t n, float *out, errmsg *err);

#endif
