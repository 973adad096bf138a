/* forward.c — the forward pass of a decoder over a batch of tokens: one layer loop for every
 * family, whose switches (model_config, layer_weights) say which steps a layer takes. Per token:
 *     x   = embed(token) (· embd_scale)
 *     for each layer:
 *         xb = norm(x) (where the layer has a pre-norm);  y = mixer(xb), one of
 *             attention: q, k, v = xb·Wqᵀ, xb·Wkᵀ, xb·Wvᵀ (+ biases); q and k normed, rotated (RoPE);
 *                        k, v cached;  y = softmax(q·Kᵀ · scale)·V ·Woᵀ   (attention.c)
 *             short convolution, gated DeltaNet or Mamba-2 (recurrent.c)
 *         x += norm(y) (post-norm where the family has one) · residual_scale
 *         xb = norm(x);  y = (act(xb·W_gateᵀ) ⊙ xb·W_upᵀ)·W_downᵀ;  x += norm(y) · residual_scale
 *         x += the per-layer embedding step (ple.c, gemma4);  x ·= layer_output_scale (gemma4)
 *     logits = norm(x)·W_outᵀ (· logit_scale, soft-capped where the family caps)
 * gemma3n (altup.c) keeps several streams of x: each layer runs on the active one's prediction and
 * corrects the others with its output (and adds its per-layer embedding to them); Laurel's
 * low-rank residual joins attention's, and the first layers' FFN gates are sparse.
 * A batch (prefill) runs every matrix product as matrix × matrix (matmul.c); a single token
 * (decode) is matrix × vector. The context (context.c) holds the cache and the scratch. */
#include "altup.h"
#include "attention.h"
#include "context.h"
#include "elementwise.h"
#include "errmsg.h"
#include "forward.h"
#include "matmul.h"
#include "ple.h"
#include "quant.h"
#include "recurrent.h"
#include "rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether the sliding layers rotate by angles of their own (another base or scale, gemma3; other
 * rotated dimensions or no rope_freqs, gemma4) */
static bool rope_swa_own(const model_config *mc) {
    return mc->n_swa > 0 && (mc->rope_base_swa != mc->rope_base || mc->rope_scale_swa != mc->rope_scale ||
                             mc->rope_dim_swa != mc->rope_dim || mc->rope_freqs_full);
}

/* The tables of a batch: [0] for the full layers, [1] for sliding ones with angles of their own. */
static float *rope_cos_of(const struct wick_ctx *c, bool sliding) {
    return c->rope_cos + (sliding && rope_swa_own(&c->model->config) ? (size_t)c->n_batch * (size_t)rope_half_max(&c->model->config) : 0);
}
static float *rope_sin_of(const struct wick_ctx *c, bool sliding) {
    return c->rope_sin + (sliding && rope_swa_own(&c->model->config) ? (size_t)c->n_batch * (size_t)rope_half_max(&c->model->config) : 0);
}

static void scale_rows(float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* n_tok rows of width n (stride n): each RMS-normed with weights w, in place or into out */
static void rmsnorm_rows(float *out, const float *x, const float *w, int n_tok, int n, float eps) {
    for (int t = 0; t < n_tok; t++) rmsnorm(out + (size_t)t * n, x + (size_t)t * n, w, n, eps);
}

/* n_rows rows of width n RMS-normed in place without weights (gemma4's V heads): rmsnorm's arithmetic */
static void rmsnorm_plain_rows(float *x, int n_rows, int n, float eps) {
    for (int r = 0; r < n_rows; r++) {
        float *v = x + (size_t)r * n;
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
        float scale = (float)(1.0 / sqrt(ss / n + eps));
        for (int i = 0; i < n; i++) v[i] *= scale;
    }
}

/* x += block output y (n_tok rows of dim): y normed first where the family has a post norm, and
 * scaled where it has a residual multiplier (granite) */
static void residual_add(float *x, float *y, const float *post_norm, int n_tok, const model_config *mc) {
    size_t n = (size_t)n_tok * mc->dim;
    if (post_norm) rmsnorm_rows(y, y, post_norm, n_tok, mc->dim, mc->rms_eps);
    if (mc->residual_scale != 1.0f) scale_rows(y, mc->residual_scale, n);
    add_rows(x, y, n);
}

/* Q and K normed (qwen3, gemma3: each head with the same head_dim weights; olmo2: the whole
 * width), then rotated by their positions unless the layer does not rotate (smollm3); a layer
 * reading another's cache (gemma4) has no K of its own (with_k false) */
static void qk_prepare(struct wick_ctx *c, const layer_weights *w, int l, int n_tok, int pos0, bool with_k) {
    const model_config *mc = model_layer_config(c->model, l);
    int hd = mc->head_dim, kvd = kv_dim(mc), half = mc->rope_dim / 2;
    const float *cs = rope_cos_of(c, w->sliding), *sn = rope_sin_of(c, w->sliding);
    for (int t = 0; t < n_tok; t++) {
        float *q = c->q + (size_t)t * mc->q_dim, *k = c->k + (size_t)t * kvd;
        if (mc->qk_norm == QK_NORM_PER_HEAD) {
            rmsnorm_rows(q, q, w->attn_q_norm, mc->n_heads, hd, mc->rms_eps);
            if (with_k) rmsnorm_rows(k, k, w->attn_k_norm, mc->n_kv_heads, hd, mc->rms_eps);
        } else if (mc->qk_norm == QK_NORM_FULL) {
            rmsnorm(q, q, w->attn_q_norm, mc->q_dim, mc->rms_eps);
            if (with_k) rmsnorm(k, k, w->attn_k_norm, kvd, mc->rms_eps);
        }
        if (w->rotate) {
            rope_apply(q, mc->n_heads, mc, cs + (size_t)t * half, sn + (size_t)t * half);
            if (with_k) rope_apply(k, mc->n_kv_heads, mc, cs + (size_t)t * half, sn + (size_t)t * half);
        }
        if (mc->attn_temp_scale != 0.0f) { /* Llama 4's temperature (mistral3): longer reach, sharper queries */
            double steps = floor((double)(pos0 + t) / (double)mc->n_ctx_orig);
            scale_rows(q, (float)(log(steps + 1.0) * mc->attn_temp_scale + 1.0), (size_t)mc->q_dim);
        }
    }
}

/* Attention with the KV cache: q, k, v projected (qwen35: each head's query then its output
 * gate in attn_q), normed and rotated, cached; softmax(q·Kᵀ)·V per head; out projection into c->xb.
 * gemma4: V is K's projection where the layer has no attn_v, V is RMS-normed, and a KV-shared
 * layer projects only q and attends to the cache of its kv_layer. */
static void attention_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok, int pos0, bool causal) {
    const model_config *mc = model_layer_config(c->model, l);
    int dim = mc->dim, kvd = kv_dim(mc), qd = mc->q_dim;
    bool own_kv = w->kv_layer == l;
    if (mc->attn_out_gate) { /* qwen35: each head's query then its gate, into proj, then apart */
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->proj, c->k, c->v};
        const int strides[] = {2 * qd, kvd, kvd};
        matmul_group(c, in, 3, ws, outs, strides, NULL, false, ACT_SILU);
        int hd = mc->head_dim;
        for (int t = 0; t < n_tok; t++)
            for (int h = 0; h < mc->n_heads; h++) {
                const float *src = c->proj + (size_t)t * 2 * qd + (size_t)h * 2 * hd;
                memcpy(c->q + (size_t)t * qd + (size_t)h * hd, src, (size_t)hd * sizeof(float));
                memcpy(c->mix2 + (size_t)t * qd + (size_t)h * hd, src + hd, (size_t)hd * sizeof(float));
            }
    } else {
        /* Q alone (KV-shared), Q and K (V from K), or all three */
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {qd, kvd, kvd};
        const float *biases[] = {w->bq, w->bk, w->bv};
        matmul_group(c, in, !own_kv ? 1 : w->wv.data ? 3 : 2, ws, outs, strides, biases, false, ACT_SILU);
        if (own_kv && !w->wv.data) memcpy(c->v, c->k, (size_t)n_tok * (size_t)kvd * sizeof(float));
    }
    if (own_kv && mc->v_norm) rmsnorm_plain_rows(c->v, n_tok * mc->n_kv_heads, mc->head_dim, mc->rms_eps);
    qk_prepare(c, w, l, n_tok, pos0, own_kv);
    /* a quantized cache's rows rotated before they are rounded (kv_hadamard), the output back after */
    if (c->k_rot) {
        kv_hadamard(c->q, (size_t)n_tok * qd, c->k_rot);
        if (own_kv) kv_hadamard(c->k, (size_t)n_tok * kvd, c->k_rot);
    }
    if (c->v_rot && own_kv) kv_hadamard(c->v, (size_t)n_tok * kvd, c->v_rot);
    for (int t = 0; own_kv && t < n_tok; t++) {
        kv_row_store(c, c->k_cache, l, pos0 + t, c->k + (size_t)t * kvd);
        kv_row_store(c, c->v_cache, l, pos0 + t, c->v + (size_t)t * kvd);
    }
    /* an F16 key cache is scored against the query rounded to F16: llama.cpp's K·Q product converts
     * the query to its keys' vec_dot_type (F16), with flash attention and without */
    if (c->kv_type == WICK_KV_F16)
        for (size_t i = 0; i < (size_t)n_tok * qd; i++) c->q[i] = quant_round_f16(c->q[i]);
    attention(c, w->kv_layer, pos0, n_tok, causal);
    if (c->v_rot) kv_hadamard(c->xb2, (size_t)n_tok * qd, c->v_rot);
    if (mc->attn_out_gate)
        for (size_t i = 0; i < (size_t)n_tok * qd; i++) c->xb2[i] *= sigmoid(c->mix2[i]);
    act_init(in, c, c->xb2, n_tok, qd);
    matmul(c, &w->wo, in, c->xb, dim, NULL);
}

/* Runs n_tok (≤ n_batch) tokens at positions n_past…; writes logits for the rows asked
 * (none when logits_out is NULL). One layer loop for every family: the switches of
 * model_config and layer_weights say which steps a layer takes. */
static int forward_batch(struct wick_ctx *c, const int32_t *tokens, int n_tok, bool causal, bool all_logits, float *logits_out,
                         errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    int dim = mc->dim;
    int pos0 = c->n_past;
    const quant_type *emb_t = quant_get(m->tok_embd.type);
    /* a token's embedding row, or an image position's row as the context holds it (images.h) */
    for (int t = 0; t < n_tok; t++) {
        float *x = c->x + (size_t)t * dim;
        if (tokens[t] < 0) memcpy(x, images_row(c, tokens[t]), (size_t)dim * sizeof *x);
        else emb_t->to_float((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, x, dim);
        if (mc->embd_scale != 1.0f && (tokens[t] >= 0 || !mc->embd_scale_tokens)) scale_rows(x, mc->embd_scale, (size_t)dim);
    }
    if (mc->n_ple && ple_inputs(c, tokens, n_tok, err)) return -1;
    if (mc->n_altup) altup_init(c, n_tok);
    /* M-RoPE: each token's four positions (an image's 2-D on its grid) */
    const int32_t *mpos = NULL;
    if (c->mrope_pos) {
        images_mrope_positions(c, tokens, n_tok, pos0, c->mrope_pos);
        mpos = c->mrope_pos;
    }
    rope_tables(c, false, mc->rope_base, mc->rope_scale, mc->rope_attn_factor, pos0, n_tok, mpos, rope_cos_of(c, false),
                rope_sin_of(c, false));
    if (rope_swa_own(mc))
        rope_tables(c, true, mc->rope_base_swa, mc->rope_scale_swa, mc->rope_attn_factor_swa, pos0, n_tok, mpos,
                    rope_cos_of(c, true), rope_sin_of(c, true));
    act_rows in;
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        int hid = model_layer_config(m, l)->hidden_dim;
        if (mc->n_altup) altup_predict(c, w, n_tok); /* x = the active stream's prediction */
        /* attention: xb = norm(x) (or x itself where there is no pre-norm) */
        const float *a_in = c->x;
        if (w->attn_norm) {
            rmsnorm_rows(c->xb, c->x, w->attn_norm, n_tok, dim, mc->rms_eps);
            a_in = c->xb;
        }
        if (mc->laurel_rank) laurel_block(c, w, n_tok); /* from xb, beside attention */
        act_init(&in, c, a_in, n_tok, dim);
        if (w->kind == LAYER_SHORTCONV) shortconv_block(c, w, l, &in, n_tok);
        else if (w->kind == LAYER_DELTANET) deltanet_block(c, w, l, &in, n_tok);
        else if (w->kind == LAYER_MAMBA2) mamba2_block(c, w, l, &in, n_tok);
        else attention_block(c, w, l, &in, n_tok, pos0, causal);
        residual_add(c->x, c->xb, w->attn_post_norm, n_tok, mc);
        if (mc->laurel_rank) laurel_join(c, n_tok);

        /* feed-forward: act(gate) ⊙ up (the gate sparse first in gemma3n's first layers), then down */
        const float *f_in = c->x;
        if (w->ffn_norm) {
            rmsnorm_rows(c->xb, c->x, w->ffn_norm, n_tok, dim, mc->rms_eps);
            f_in = c->xb;
        }
        act_init(&in, c, f_in, n_tok, dim);
        {
            const weight *ws[] = {&w->w_gate, &w->w_up};
            float *outs[] = {c->hb, c->hb2};
            const int strides[] = {hid, hid};
            bool sparse = w->ffn_sparsity > -INFINITY;
            matmul_group(c, &in, 2, ws, outs, strides, NULL, !sparse, mc->act); /* hb = act(gate) ⊙ up */
            if (sparse) sparse_gate(c, w->ffn_sparsity, n_tok, hid);
        }
        act_init(&in, c, c->hb, n_tok, hid);
        matmul(c, &w->w_down, &in, c->xb, dim, NULL);
        residual_add(c->x, c->xb, w->ffn_post_norm, n_tok, mc);
        if (mc->n_altup) {
            altup_correct(c, w, l, n_tok);
        } else if (mc->n_ple) {
            ple_block(c, w, l, n_tok, c->x);
            add_rows(c->x, c->xb, (size_t)n_tok * dim);
        }
        if (w->out_scale) scale_rows(c->x, w->out_scale[0], (size_t)n_tok * dim);
        /* qwen3vl's deepstack: an image position's row l + 1 joins its hidden state after layer l */
        for (int t = 0; l < mc->n_deepstack && t < n_tok; t++)
            if (tokens[t] < 0) add_rows(c->x + (size_t)t * dim, images_row(c, tokens[t]) + (size_t)(l + 1) * dim, (size_t)dim);
    }
    if (mc->n_altup) altup_merge(c, n_tok);
    c->n_past += n_tok;
    if (c->ring && c->n_past - c->ring > c->swa_lo) c->swa_lo = c->n_past - c->ring;
    if (!logits_out) return 0;
    /* the output head, for every row or only the last */
    int first = all_logits ? 0 : n_tok - 1, n_out = n_tok - first;
    for (int t = first; t < n_tok; t++)
        rmsnorm(c->xb + (size_t)(t - first) * dim, c->x + (size_t)t * dim, m->output_norm, dim, mc->rms_eps);
    act_init(&in, c, c->xb, n_out, dim);
    matmul(c, &m->output, &in, logits_out, mc->n_vocab, NULL);
    size_t n_logits = (size_t)n_out * (size_t)mc->n_vocab;
    if (mc->logit_scale != 1.0f) scale_rows(logits_out, mc->logit_scale, n_logits);
    if (mc->final_softcap > 0) /* gemma2, gemma4: l → cap·tanh(l/cap) */
        for (size_t i = 0; i < n_logits; i++)
            logits_out[i] = tanh_exp(logits_out[i] * (1.0f / mc->final_softcap)) * mc->final_softcap;
    return 0;
}

int forward_eval(struct wick_ctx *c, const int32_t *tokens, int32_t n, bool all_logits, errmsg *err) {
    const model_config *mc = &c->model->config;
    if (mc->encoder)
        return errorf(err, WICK_ERR_INVALID_ARG, "%s is an embedding model (an encoder): it has no logits to generate from; "
                      "use embed", mc->arch);
    if (n < 1 || !tokens) return errorf(err, WICK_ERR_INVALID_ARG, "no tokens to evaluate");
    if (n > c->n_ctx - c->n_past)
        return errorf(err, WICK_ERR_INVALID_ARG, "%d tokens do not fit in the context: %d of %d positions used", n, c->n_past, c->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] >= mc->n_vocab)
            return errorf(err, WICK_ERR_INVALID_ARG, "token id %d out of range (vocabulary of %d)", tokens[i], mc->n_vocab);
    if (images_check(c, tokens, n, err)) return -1; /* the negative ids: image positions the context holds rows for */
    if (!kv_cache_can_trim(c, c->n_past))
        return errorf(err, WICK_ERR_INVALID_ARG, "the sliding-window layers no longer hold the positions before %d (the cache was cut "
                      "back too far): evaluate from an earlier position", c->n_past);
    int32_t rows = all_logits ? n : 1;
    if (rows > c->logits_cap_rows) {
        float *l = realloc(c->logits, (size_t)rows * (size_t)mc->n_vocab * sizeof(float));
        if (!l) return errorf(err, WICK_ERR_NOMEM, "out of memory for the logits of %d positions", rows);
        c->logits = l;
        c->logits_cap_rows = rows;
    }
    for (int32_t done = 0; done < n;) {
        int32_t chunk = n - done < c->n_batch ? n - done : c->n_batch;
        /* a non-causal image's run of positions is a batch of its own (as llama.cpp's mtmd evaluates
         * it, when it fits n_batch), seen whole by each of its positions; other batches stop before one */
        int32_t run = images_noncausal_run(c, tokens + done, chunk);
        if (!run) chunk = images_noncausal_start(c, tokens + done, chunk);
        else chunk = run;
        /* without all_logits only the final chunk needs the output head, for its last row */
        float *out = all_logits ? c->logits + (size_t)done * mc->n_vocab : done + chunk == n ? c->logits : NULL;
        if (forward_batch(c, tokens + done, chunk, mc->causal && !run, all_logits, out, err)) return -1;
        done += chunk;
    }
    c->n_logit_rows = rows;
    return 0;
}

int forward_hidden(struct wick_ctx *c, const int32_t *tokens, int32_t n, float *out, errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    if (!mc->causal && n > c->n_batch)
        return errorf(err, WICK_ERR_CONTEXT_FULL, "%d tokens do not fit one batch of %d (bidirectional attention sees them all)", n, c->n_batch);
    if (n > c->n_ctx) return errorf(err, WICK_ERR_CONTEXT_FULL, "%d tokens do not fit in the context of %d", n, c->n_ctx);
    if (kv_cache_trim(c, 0, err)) return -1;
    for (int32_t done = 0; done < n;) {
        int32_t chunk = n - done < c->n_batch ? n - done : c->n_batch;
        if (forward_batch(c, tokens + done, chunk, mc->causal, false, NULL, err)) return -1;
        rmsnorm_rows(out + (size_t)done * mc->dim, c->x, m->output_norm, chunk, mc->dim, mc->rms_eps);
        done += chunk;
    }
    return 0;
}
