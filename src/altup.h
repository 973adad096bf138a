/* altup.h — Gemma 3n's steps around and beside the layer (altup.c): AltUp's streams, Laurel's
 * low-rank residual and the sparse FFN gate. */
#ifndef WICK_ALTUP_H
#define WICK_ALTUP_H

#include "context.h"

/* The streams from the batch's scaled embeddings in c->x (before the first layer). */
void altup_init(struct wick_ctx *c, int n_tok);
/* Each stream predicted from all; c->x becomes the active one's prediction (the layer's input). */
void altup_predict(struct wick_ctx *c, const layer_weights *w, int n_tok);
/* The streams corrected by the layer's output in c->x, and the per-layer embedding added (uses c->xb). */
void altup_correct(struct wick_ctx *c, const layer_weights *w, int l, int n_tok);
/* c->x from the streams (after the last layer). */
void altup_merge(struct wick_ctx *c, int n_tok);
/* Laurel's output from the normed layer input in c->xb, into c->laurel (before attention). */
void laurel_block(struct wick_ctx *c, const layer_weights *w, int n_tok);
/* c->x = (c->x + Laurel's output) / √2 (after attention's residual add). */
void laurel_join(struct wick_ctx *c, int n_tok);
/* c->hb = gelu(gate cut below mean + k·std) ⊙ up, from the gate in c->hb and up in c->hb2. */
void sparse_gate(struct wick_ctx *c, float k, int n_tok, int hid);

#endif
