/* encoder.c — the forward pass of an encoder of the bert lineage, as llama.cpp's src/models/bert.cpp
 * (bert, nomic-bert) and modern-bert.cpp build it, the embedding models that run the decoders'
 * layers (forward.c), and the pooling of their output (src/llama-graph.cpp, build_pooling and
 * build_dense_out). Per sequence of tokens, in the bert lineage:
 *     x   = tok_embd[token] + token_types[0] + position_embd[p]      (p = 0 … len − 1; nomic-bert and
 *                                                                  modern-bert rotate q and k instead)
 *     x   = LayerNorm(x) (token_embd_norm, with bias where the file has one)
 *     for each layer:
 *         h = LayerNorm(x) (modern-bert's pre-norm attn_norm, none on its first layer), else h = x
 *         q, k, v = h·Wqᵀ + bq, h·Wkᵀ + bk, h·Wvᵀ + bv           (biases where present)
 *         y = softmax(q·Kᵀ / √head_dim)·V ·Woᵀ + bo     every position sees the whole sequence
 *                                                      (modern-bert's local layers: n_swa / 2 either side)
 *         x = x + y;  x = LayerNorm(x) (bert, nomic-bert: attn_output_norm)
 *         h = LayerNorm(x) (modern-bert: ffn_norm), else h = x
 *         y = GELU(h·W_upᵀ + b_up)·W_downᵀ + b_down   (bert)
 *           = (act(h·W_gateᵀ) ⊙ h·W_upᵀ)·W_downᵀ     (nomic-bert SwiGLU, modern-bert GeGLU)
 *         x = x + y;  x = LayerNorm(x) (bert, nomic-bert: layer_output_norm)
 *     x = LayerNorm(x) (modern-bert: output_norm)
 * The hidden states x are the output: per token (pooling none), or pooled per sequence. The
 * embedding models on the decoders' layers (gemma-embedding, bidirectional; a decoder whose file
 * names its pooling, causal) give the hidden state after the final norm, one sequence at a time.
 * Where the file has sentence-transformers' dense_2 / dense_3, every output row goes through them.
 *
 * Several sequences go through in one batch (every matrix product over all their tokens, each
 * weight block read once), and attention keeps them apart: each sequence's keys and values are
 * written to the cache at positions 0 … len − 1 and its queries attend to those alone, one
 * sequence after another, through the decoders' attention (attention.c) with causal = false.
 * Token types are always row 0 ("sentence A"), as llama.cpp feeds them. */
#include "encoder.h"

#include "attention.h"
#include "elementwise.h"
#include "errmsg.h"
#include "forward.h"
#include "matmul.h"
#include "quant.h"
#include "rope.h"
#include "rerank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LayerNorm of n_tok rows of n, in place: (x − mean) / √(variance + eps) ⊙ w + b (b NULL: none), the sums in
 * double and the scale in float, as ggml's norm then mul and add compute it */
void layernorm_rows(float *x, const float *w, const float *b, int n_tok, int n, float eps) {
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
        for (int i = 0; i < n; i++) r[i] = b ? r[i] * scale * w[i] + b[i] : r[i] * scale * w[i];
    }
}

/* h = x, or LayerNorm(x) into c->xb where the layer has a pre-norm (modern-bert) */
static const float *pre_norm(struct wick_ctx *c, const float *w, int n_tok) {
    const model_config *mc = &c->model->config;
    if (!w) return c->x;
    memcpy(c->xb, c->x, (size_t)n_tok * mc->dim * sizeof(float));
    layernorm_rows(c->xb, w, NULL, n_tok, mc->dim, mc->rms_eps);
    return c->xb;
}

/* n_seq whole sequences of n_tok tokens in all (≤ n_batch) through every layer; their hidden
 * states end in c->x */
static void encoder_batch(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int n_seq, int n_tok) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    int dim = mc->dim, hid = mc->hidden_dim, longest = 0;
    const quant_type *emb_t = quant_get(m->tok_embd.type);
    for (int s = 0, t = 0; s < n_seq; s++)
        for (int p = 0; p < lens[s]; p++, t++) {
            float *x = c->x + (size_t)t * dim;
            emb_t->to_float((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, x, dim);
            if (m->type_embd) add_rows(x, m->type_embd, (size_t)dim);
            if (m->pos_embd) add_rows(x, m->pos_embd + (size_t)p * dim, (size_t)dim);
            if (lens[s] > longest) longest = lens[s];
        }
    layernorm_rows(c->x, m->embd_norm, m->embd_norm_b, n_tok, dim, mc->rms_eps);
    /* rotary positions 0 … longest − 1: the global layers' angles, then the local ones' (modern-bert) */
    const int half = rope_half_max(mc);
    float *cos_swa = c->rope_cos + (size_t)c->n_batch * half, *sin_swa = c->rope_sin + (size_t)c->n_batch * half;
    if (!m->pos_embd) {
        rope_tables(c, false, mc->rope_base, mc->rope_scale, mc->rope_attn_factor, 0, longest, NULL, c->rope_cos, c->rope_sin);
        if (mc->n_swa > 0)
            rope_tables(c, true, mc->rope_base_swa, mc->rope_scale_swa, mc->rope_attn_factor_swa, 0, longest, NULL, cos_swa, sin_swa);
    }
    float *q_all = c->q, *out_all = c->xb2;
    act_rows in;
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        act_init(&in, c, pre_norm(c, w->attn_norm, n_tok), n_tok, dim);
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {dim, dim, dim};
        const float *biases[] = {w->bq, w->bk, w->bv};
        matmul_group(c, &in, 3, ws, outs, strides, biases, false, ACT_SILU);
        /* each sequence alone: its keys and values at positions 0 …, its rows of q and of the output */
        for (int s = 0, t0 = 0; s < n_seq; t0 += lens[s++]) {
            for (int p = 0; p < lens[s]; p++) {
                float *q = c->q + (size_t)(t0 + p) * dim, *k = c->k + (size_t)(t0 + p) * dim, *v = c->v + (size_t)(t0 + p) * dim;
                if (w->rotate) {
                    const float *cs = (w->sliding ? cos_swa : c->rope_cos) + (size_t)p * half;
                    const float *sn = (w->sliding ? sin_swa : c->rope_sin) + (size_t)p * half;
                    rope_apply(q, mc->n_heads, mc, cs, sn);
                    rope_apply(k, mc->n_kv_heads, mc, cs, sn);
                }
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
        if (w->attn_post_norm) layernorm_rows(c->x, w->attn_post_norm, w->attn_post_norm_b, n_tok, dim, mc->rms_eps);

        act_init(&in, c, pre_norm(c, w->ffn_norm, n_tok), n_tok, dim);
        if (w->w_gate.data) { /* hb = act(gate) ⊙ up */
            const weight *gu[] = {&w->w_gate, &w->w_up};
            float *gu_out[] = {c->hb, c->hb2};
            const int gu_strides[] = {hid, hid};
            matmul_group(c, &in, 2, gu, gu_out, gu_strides, NULL, true, mc->act);
        } else {
            matmul(c, &w->w_up, &in, c->hb, hid, w->ffn_up_b);
            for (size_t i = 0; i < (size_t)n_tok * hid; i++) c->hb[i] = gelu_f16(c->hb[i]);
        }
        act_init(&in, c, c->hb, n_tok, hid);
        matmul(c, &w->w_down, &in, c->xb, dim, w->ffn_down_b);
        add_rows(c->x, c->xb, (size_t)n_tok * dim);
        if (w->ffn_post_norm) layernorm_rows(c->x, w->ffn_post_norm, w->ffn_post_norm_b, n_tok, dim, mc->rms_eps);
    }
    if (m->output_norm) layernorm_rows(c->x, m->output_norm, NULL, n_tok, dim, mc->rms_eps);
}

/* rows (n of dim, in place) through dense_2 then dense_3 (llama.cpp's build_dense_out), n_batch at a time */
static void dense_rows(struct wick_ctx *c, float *rows, size_t n) {
    const struct wick_model *m = c->model;
    int dim = m->config.dim, feat = (int)m->dense_2.rows;
    act_rows in;
    for (size_t r = 0; r < n; r += (size_t)c->n_batch) {
        int k = n - r < (size_t)c->n_batch ? (int)(n - r) : c->n_batch;
        float *x = rows + r * dim;
        act_init(&in, c, x, k, dim);
        matmul(c, &m->dense_2, &in, c->hb, feat, NULL);
        act_init(&in, c, c->hb, k, feat);
        matmul(c, &m->dense_3, &in, c->xb, dim, NULL);
        memcpy(x, c->xb, (size_t)k * dim * sizeof(float));
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
    if (mc->pooling == POOL_UNSPECIFIED) return errorf(err, WICK_ERR_INVALID_ARG, "%s is not an embedding model", mc->arch);
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
    size_t rows = 0;
    if (!mc->layernorm && pooling == POOL_RANK) {
        /* a decoder reranker (Qwen3-Reranker) is scored by rerank_decoder (wick_rerank chooses) */
        return errorf(err, WICK_ERR_UNSUPPORTED, "%s: rank pooling over the decoders' layers is not supported", mc->arch);
    } else if (!mc->layernorm) {
        /* the decoders' layers: one sequence at a time from position 0, its rows pooled from scratch */
        float *x = pooling == POOL_NONE ? NULL : malloc((size_t)c->n_ctx * dim * sizeof(float));
        if (pooling != POOL_NONE && !x) return errorf(err, WICK_ERR_NOMEM, "out of memory");
        int rc = 0;
        for (int32_t s = 0, t = 0; s < n_seq && !rc; t += lens[s++]) {
            rc = forward_hidden(c, tokens + t, lens[s], x ? x : out + (size_t)t * dim, err);
            if (!rc && x) pool_rows(x, lens[s], dim, pooling, out + (size_t)s * dim);
        }
        free(x);
        if (rc) return rc;
        rows = pooling == POOL_NONE ? 0 : (size_t)n_seq;
        for (int32_t s = 0; s < n_seq && pooling == POOL_NONE; s++) rows += (size_t)lens[s];
    } else {
        /* whole sequences packed into batches of at most n_batch tokens, in order */
        for (int32_t s0 = 0, t0 = 0; s0 < n_seq;) {
            int32_t s1 = s0, n_tok = 0;
            while (s1 < n_seq && n_tok + lens[s1] <= c->n_batch) n_tok += lens[s1++];
            encoder_batch(c, tokens + t0, lens + s0, s1 - s0, n_tok);
            const float *x = c->x;
            for (int32_t s = s0; s < s1; x += (size_t)lens[s++] * dim) {
                if (pooling == POOL_RANK) { /* the [CLS] rows, gathered for the head below */
                    memcpy(c->xb + (size_t)(s - s0) * dim, x, (size_t)dim * sizeof(float));
                } else if (pooling == POOL_NONE) {
                    memcpy(out + rows * dim, x, (size_t)lens[s] * dim * sizeof(float));
                    rows += (size_t)lens[s];
                } else {
                    pool_rows(x, lens[s], dim, pooling, out + (size_t)s * dim);
                }
            }
            /* rank: the classification head over this batch's [CLS] rows (rerank.c), n_cls_out per sequence */
            if (pooling == POOL_RANK) rank_head(c, c->xb, s1 - s0, c->xb2, out + (size_t)s0 * c->model->n_cls_out);
            t0 += n_tok;
            s0 = s1;
        }
        if (pooling != POOL_NONE) rows = (size_t)n_seq;
        if (pooling == POOL_RANK) return 0; /* scores, not embeddings: no dense projections */
    }
    if (c->model->dense_2.data) dense_rows(c, out, rows);
    return 0;
}
