/* encoder.c — the forward pass of an encoder, as llama.cpp's src/models/bert.cpp builds it, and
 * the pooling of its output (src/llama-graph.cpp, build_pooling). Per sequence of tokens:
 *     x   = tok_embd[token] + token_types[0] + position_embd[p]      (p = 0 … len − 1)
 *     x   = LayerNorm(x) (token_embd_norm, with bias)
 *     for each layer (post-norm):
 *         q, k, v = x·Wqᵀ + bq, x·Wkᵀ + bk, x·Wvᵀ + bv
 *         y = softmax(q·Kᵀ / √head_dim)·V ·Woᵀ + bo     every position sees the whole sequence
 *         x = LayerNorm(x + y)                            (attn_output_norm)
 *         y = GELU(x·W_upᵀ + b_up)·W_downᵀ + b_down
 *         x = LayerNorm(x + y)                            (layer_output_norm)
 * The hidden states x are the output: per token (pooling none), or pooled per sequence.
 *
 * Several sequences go through in one batch (every matrix product over all their tokens, each
 * weight block read once), and attention keeps them apart: each sequence's keys and values are
 * written to the cache at positions 0 … len − 1 and its queries attend to those alone, one
 * sequence after another, through the decoders' attention (attention.c) with causal = false.
 * Token types are always row 0 ("sentence A"), as llama.cpp feeds them.
 * Switches for the other encoder families (rotary positions, gated FFNs, pre-norm layers,
 * local/global attention) belong in encoder_batch next to the ones here. */
#include "encoder.h"

#include "attention.h"
#include "elementwise.h"
#include "errmsg.h"
#include "matmul.h"
#include "quant.h"
#include "rerank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LayerNorm of n_tok rows of n, in place: (x − mean) / √(variance + eps) ⊙ w + b, the sums in
 * double and the scale in float, as ggml's norm then mul and add compute it */
static void layernorm_rows(float *x, const float *w, const float *b, int n_tok, int n, float eps) {
    for (int t = 0; t < n_tok; t++) {
        float *r = x + (size_t)t * n;
        double sum = 0, sum2 = 0;
        for (int i = 0; i < n; i++) sum += r[i];
        float mean = (float)(sum / n);
        for (int i = 0; i < n; i++) {
            r[i] -= mean;
            sum2 += (double)r[i] * r[i];
        }
        float scale = 1.0f / sqrtf((float)(sum2 / n) + eps);
        for (int i = 0; i < n; i++) r[i] = r[i] * scale * w[i] + b[i];
    }
}

/* GELU as llama.cpp's CPU backend computes it (ggml-cpu/vec.h, GGML_GELU_FP16): the input rounded
 * to F16 and looked up in a table of F16 results, 0 below −10 and the identity above 10; so the
 * same roundings here, on the tanh form */
static float gelu_f16(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    float h = quant_f16_to_f32(quant_f32_to_f16(x));
    return quant_f16_to_f32(quant_f32_to_f16(gelu_tanh(h)));
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = y[i] + x[i];
}

/* n_seq whole sequences of n_tok tokens in all (≤ n_batch) through every layer; their hidden
 * states end in c->x */
static void encoder_batch(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int n_seq, int n_tok) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    int dim = mc->dim, hid = mc->hidden_dim;
    const quant_type *emb_t = quant_get(m->tok_embd.type);
    for (int s = 0, t = 0; s < n_seq; s++)
        for (int p = 0; p < lens[s]; p++, t++) {
            float *x = c->x + (size_t)t * dim;
            emb_t->to_float((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, x, dim);
            if (m->type_embd) add_rows(x, m->type_embd, (size_t)dim);
            add_rows(x, m->pos_embd + (size_t)p * dim, (size_t)dim);
        }
    layernorm_rows(c->x, m->embd_norm, m->embd_norm_b, n_tok, dim, mc->rms_eps);
    float *q_all = c->q, *out_all = c->xb2;
    act_rows in;
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        act_init(&in, c, c->x, n_tok, dim);
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {dim, dim, dim};
        const float *biases[] = {w->bq, w->bk, w->bv};
        matmul_group(c, &in, 3, ws, outs, strides, biases, false, ACT_SILU);
        /* each sequence alone: its keys and values at positions 0 …, its rows of q and of the output */
        for (int s = 0, t0 = 0; s < n_seq; t0 += lens[s++]) {
            for (int p = 0; p < lens[s]; p++) {
                const float *k = c->k + (size_t)(t0 + p) * dim, *v = c->v + (size_t)(t0 + p) * dim;
                void *kc = kv_at(c, c->k_cache, l, p), *vc = kv_at(c, c->v_cache, l, p);
                for (int i = 0; i < dim; i++) {
                    kv_store(c, kc, (size_t)i, k[i]);
                    kv_store(c, vc, (size_t)i, v[i]);
                }
            }
            c->q = q_all + (size_t)t0 * dim;
            c->xb2 = out_all + (size_t)t0 * dim;
            attention(c, l, 0, lens[s], mc->causal);
            c->q = q_all;
            c->xb2 = out_all;
        }
        act_init(&in, c, c->xb2, n_tok, dim);
        matmul(c, &w->wo, &in, c->xb, dim, w->bo);
        add_rows(c->x, c->xb, (size_t)n_tok * dim);
        layernorm_rows(c->x, w->attn_post_norm, w->attn_post_norm_b, n_tok, dim, mc->rms_eps);

        act_init(&in, c, c->x, n_tok, dim);
        matmul(c, &w->w_up, &in, c->hb, hid, w->ffn_up_b);
        for (size_t i = 0; i < (size_t)n_tok * hid; i++) c->hb[i] = gelu_f16(c->hb[i]);
        act_init(&in, c, c->hb, n_tok, hid);
        matmul(c, &w->w_down, &in, c->xb, dim, w->ffn_down_b);
        add_rows(c->x, c->xb, (size_t)n_tok * dim);
        layernorm_rows(c->x, w->ffn_post_norm, w->ffn_post_norm_b, n_tok, dim, mc->rms_eps);
    }
}

/* one sequence's rows (len of dim at x) pooled into out */
static void pool_rows(const float *x, int len, int dim, pooling_kind pooling, float *out) {
    if (pooling == POOL_CLS) memcpy(out, x, (size_t)dim * sizeof(float));
    else if (pooling == POOL_LAST) memcpy(out, x + (size_t)(len - 1) * dim, (size_t)dim * sizeof(float));
    else
        for (int i = 0; i < dim; i++) {
            double sum = 0;
            for (int t = 0; t < len; t++) sum += x[(size_t)t * dim + i];
            out[i] = (float)(sum / len);
        }
}

int encoder_eval(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, pooling_kind pooling,
                 float *out, errmsg *err) {
    const model_config *mc = &c->model->config;
    if (!mc->encoder) return errorf(err, WICK_ERR_INVALID_ARG, "%s is not an encoder", mc->arch);
    if (n_seq < 1 || !tokens || !lens || !out) return errorf(err, WICK_ERR_INVALID_ARG, "no sequences to embed");
    if (pooling < POOL_NONE || pooling > POOL_RANK) return errorf(err, WICK_ERR_INVALID_ARG, "pooling %d unknown", (int)pooling);
    for (int32_t s = 0, t = 0; s < n_seq; s++) {
        if (lens[s] < 1) return errorf(err, WICK_ERR_INVALID_ARG, "sequence %d is empty", s);
        if (lens[s] > c->n_ctx)
            return errorf(err, WICK_ERR_CONTEXT_FULL, "sequence %d has %d tokens: the window holds %d", s, lens[s], c->n_ctx);
        for (int32_t p = 0; p < lens[s]; p++, t++)
            if (tokens[t] < 0 || tokens[t] >= mc->n_vocab)
                return errorf(err, WICK_ERR_INVALID_ARG, "token id %d out of range (vocabulary of %d)", tokens[t], mc->n_vocab);
    }
    int dim = mc->dim;
    /* whole sequences packed into batches of at most n_batch tokens, in order */
    for (int32_t s0 = 0, t0 = 0, rows = 0; s0 < n_seq;) {
        int32_t s1 = s0, n_tok = 0;
        while (s1 < n_seq && n_tok + lens[s1] <= c->n_batch) n_tok += lens[s1++];
        encoder_batch(c, tokens + t0, lens + s0, s1 - s0, n_tok);
        const float *x = c->x;
        for (int32_t s = s0; s < s1; x += (size_t)lens[s++] * dim) {
            if (pooling == POOL_RANK) { /* the [CLS] rows, gathered for the head below */
                memcpy(c->xb + (size_t)(s - s0) * dim, x, (size_t)dim * sizeof(float));
            } else if (pooling == POOL_NONE) {
                memcpy(out + (size_t)rows * dim, x, (size_t)lens[s] * dim * sizeof(float));
                rows += lens[s];
            } else {
                pool_rows(x, lens[s], dim, pooling, out + (size_t)s * dim);
            }
        }
        /* rank: the classification head over this batch's [CLS] rows (rerank.c), n_cls_out per sequence */
        if (pooling == POOL_RANK) rank_head(c, c->xb, s1 - s0, c->xb2, out + (size_t)s0 * c->model->n_cls_out);
        t0 += n_tok;
        s0 = s1;
    }
    return 0;
}
