/* ple.h — per-layer embeddings (gemma4, gemma3n: ple.c): an input of n_ple values per token for every
 * layer, made once per batch, and the step each layer adds to its output with it. */
#ifndef WICK_PLE_H
#define WICK_PLE_H

#include "context.h"

/* c->ple from the batch's tokens and their scaled embeddings in c->x (before the first layer): 0, or
 * -1 when the table's rows cannot be read (it is outside the buffers and the reader failed). */
int ple_inputs(struct wick_ctx *c, const int32_t *tokens, int n_tok, errmsg *err);
/* The layer's per-layer embedding step from n_tok rows in (gemma4: x after the FFN; gemma3n: the
 * active AltUp stream), into c->xb: what the caller adds to the residual. in may be c->xb. */
void ple_block(struct wick_ctx *c, const layer_weights *w, int l, int n_tok, const float *in);

#endif
