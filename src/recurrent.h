/* recurrent.h — the recurrent blocks of hybrid models (recurrent.c): each reads layer l's input
 * rows and its state in the context, advances the state over the batch, and writes the block's
 * output (n_tok rows of dim) into c->xb. */
#ifndef WICK_RECURRENT_H
#define WICK_RECURRENT_H

#include "context.h"
#include "matmul.h"

/* lfm2: y = C ⊙ conv(B ⊙ x) with B, C, x = in_proj(x), then out_proj */
void shortconv_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok);
/* qwen35: the gated delta rule over q, k, v from the convolution of attn_qkv(x), then ssm_out */
void deltanet_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok);
/* granitehybrid: Mamba-2's selective scan over x, B, C from the convolution of ssm_in(x), gated
 * by z, RMS-normed per group, then ssm_out */
void mamba2_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok);

#endif
