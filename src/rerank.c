/* rerank.c — rerankers, as llama.cpp runs them: the pair's prompt (tools/server's
 * format_prompt_rerank), the classification head over the pooled row (src/llama-graph.cpp,
 * build_pooling with LLAMA_POOLING_TYPE_RANK) and the score its server reports (the head's first
 * output, server-context.cpp send_rerank):
 *     bert (bge-reranker):     score = (tanh(cls·h[CLS] + cls_b)·cls_outᵀ + cls_out_b)[0]
 *     qwen3 (Qwen3-Reranker):  score = softmax(cls_out·norm(h[last]))[0]  (cls_out: the "yes"
 *                              and "no" rows of the output head, so the score is P(yes))
 * An encoder pools its [CLS] rows and calls the head from encoder.c (wick_rerank chooses); a
 * decoder's last hidden state comes from forward.c. */
#include "rerank.h"

#include "elementwise.h"
#include "errmsg.h"
#include "forward.h"
#include "matmul.h"
#include "tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* text with every "{query}" replaced by the query, then every "{document}" in the result by the
 * document, as the server's two string_replace_all calls do; NULL when out of memory */
static char *replace_all(const char *text, size_t len, const char *key, const char *with, size_t with_len, size_t *out_len) {
    size_t klen = strlen(key), n = 0;
    for (size_t i = 0; i + klen <= len;) {
        if (!memcmp(text + i, key, klen)) n++, i += klen;
        else i++;
    }
    size_t total = len + n * with_len - n * klen;
    char *out = malloc(total + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < len;) {
        if (i + klen <= len && !memcmp(text + i, key, klen)) {
            memcpy(o, with, with_len);
            o += with_len;
            i += klen;
        } else {
            *o++ = text[i++];
        }
    }
    *o = 0;
    *out_len = total;
    return out;
}

/* appends one id (counted even past max_out) */
static void put_id(int32_t *out, int max_out, int *n, int32_t id) {
    if (*n < max_out) out[*n] = id;
    (*n)++;
}

/* appends text's ids without specials */
static int put_text(const wick_vocab *v, const char *text, size_t len, int32_t *out, int max_out, int *n) {
    int room = max_out - *n > 0 ? max_out - *n : 0;
    int k = vocab_tokenize(v, text, len, false, false, room ? out + *n : NULL, room);
    if (k < 0) return -1;
    *n += k;
    return 0;
}

int rerank_tokens(const struct wick_model *m, const char *query, size_t query_len, const char *doc, size_t doc_len,
                  int32_t *out, int max_out) {
    const wick_vocab *v = m->vocab;
    gguf_str tmpl;
    if (m->is_gguf && gguf_get_str(&m->gguf, "tokenizer.chat_template.rerank", &tmpl)) {
        size_t n1, n2;
        char *a = replace_all(tmpl.ptr, tmpl.len, "{query}", query, query_len, &n1);
        char *b = a ? replace_all(a, n1, "{document}", doc, doc_len, &n2) : NULL;
        int n = b ? vocab_tokenize(v, b, n2, false, true, out, max_out) : -1;
        free(a);
        free(b);
        return n;
    }
    /* the EOS, or [SEP] where the vocabulary has no EOS */
    int32_t eos = vocab_eos(v) >= 0 ? vocab_eos(v) : vocab_sep(v);
    bool add_eos = vocab_add_eos(v), add_sep = vocab_add_sep(v) && vocab_sep(v) >= 0;
    int n = 0;
    if (vocab_add_bos(v)) put_id(out, max_out, &n, vocab_bos(v));
    if (put_text(v, query, query_len, out, max_out, &n)) return -1;
    if (add_eos && eos >= 0) put_id(out, max_out, &n, eos);
    if (add_sep) put_id(out, max_out, &n, vocab_sep(v));
    if (put_text(v, doc, doc_len, out, max_out, &n)) return -1;
    if (add_eos && eos >= 0) put_id(out, max_out, &n, eos);
    return n;
}

void rank_head(struct wick_ctx *c, const float *rows, int n_rows, float *tmp, float *out) {
    const struct wick_model *m = c->model;
    const int dim = m->config.dim, n_out = m->n_cls_out;
    act_rows in;
    const float *h = rows;
    if (m->cls.data) { /* the dense layer of RoBERTa's classification head, then tanh */
        act_init(&in, c, rows, n_rows, dim);
        matmul(c, &m->cls, &in, tmp, dim, m->cls_b);
        for (size_t i = 0; i < (size_t)n_rows * dim; i++) tmp[i] = tanh_exp(tmp[i]); /* through expf: native and wasm alike */
        h = tmp;
    }
    if (m->cls_out.data) {
        act_init(&in, c, h, n_rows, dim);
        matmul(c, &m->cls_out, &in, out, n_out, m->cls_out_b);
    } else { /* no output projection (jina-reranker-v1): the row's first values */
        for (int r = 0; r < n_rows; r++) memcpy(out + (size_t)r * n_out, h + (size_t)r * dim, (size_t)n_out * sizeof(float));
    }
    if (!m->config.encoder) /* qwen3: the softmax over the labels ("yes", "no") */
        for (int r = 0; r < n_rows; r++) {
            float *o = out + (size_t)r * n_out, mx = o[0];
            for (int i = 1; i < n_out; i++) mx = o[i] > mx ? o[i] : mx;
            double sum = 0;
            for (int i = 0; i < n_out; i++) sum += (o[i] = expf(o[i] - mx));
            for (int i = 0; i < n_out; i++) o[i] = (float)(o[i] / sum);
        }
}

int rerank_decoder(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, float *scores, errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    const int n_out = m->n_cls_out;
    for (int32_t s = 0, t = 0; s < n_seq; s++) {
        if (lens[s] < 1) return errorf(err, WICK_ERR_INVALID_ARG, "pair %d has no tokens", s);
        if (lens[s] > c->n_ctx)
            return errorf(err, WICK_ERR_CONTEXT_FULL, "pair %d has %d tokens: the window holds %d", s, lens[s], c->n_ctx);
        for (int32_t p = 0; p < lens[s]; p++, t++)
            if (tokens[t] < 0 || tokens[t] >= mc->n_vocab)
                return errorf(err, WICK_ERR_INVALID_ARG, "token id %d out of range (vocabulary of %d)", tokens[t], mc->n_vocab);
    }
    /* forward_hidden writes every position's row; the last is the one rank pooling takes */
    float *x = malloc(((size_t)c->n_ctx * mc->dim + mc->dim + n_out) * sizeof *x);
    if (!x) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    float *tmp = x + (size_t)c->n_ctx * mc->dim, *o = tmp + mc->dim;
    int rc = 0;
    for (int32_t s = 0, t0 = 0; rc == 0 && s < n_seq; t0 += lens[s++]) {
        rc = forward_hidden(c, tokens + t0, lens[s], x, err);
        if (rc) break;
        rank_head(c, x + (size_t)(lens[s] - 1) * mc->dim, 1, tmp, o);
        scores[s] = o[0];
    }
    if (kv_cache_trim(c, 0, rc ? NULL : err) && !rc) rc = -1;
    free(x);
    return rc;
}
