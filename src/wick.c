/* wick.c — the public API (wick.h): argument checks, status codes and the error message,
 * over the model, forward and tokenizer modules. */
#if defined(__EMSCRIPTEN__)
#define _DEFAULT_SOURCE /* sbrk, for model buffers above 2 GiB (wick_buffer_alloc) */
#endif
#include "wick.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "rerank.h"
#include "errmsg.h"
#include "forward.h"
#include "model.h"
#include "quant.h"
#include "sampler.h"
#include "state.h"
#include "tokenizer.h"

/* A failure of a call on context c: kept in c (wick_ctx_last_error) and as the last error. */
static wick_status ctx_fail(wick_ctx *c, wick_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static wick_status ctx_fail(wick_ctx *c, wick_status code, const char *fmt, ...) {
    c->error.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error.text, sizeof c->error.text, fmt, ap);
    va_end(ap);
    return api_status(&c->error);
}

/* A success of a call on context c: its message and the last error are cleared. */
static wick_status ctx_ok(wick_ctx *c) {
    c->error.code = WICK_OK;
    c->error.text[0] = 0;
    return api_ok();
}

const char *wick_ctx_last_error(const wick_ctx *c) { return c ? c->error.text : ""; }

#if defined(__EMSCRIPTEN__)
#include <unistd.h>

/* Buffers from this size up come from sbrk in steps of this size (each below 2^31). */
#define LARGE_BUFFER ((size_t)1 << 30)

/* the one large buffer freed and kept for reuse (models are loaded one at a time) */
static char *spare_large;
static size_t spare_large_size;

/* gives [p, p + size) back to the heap top when it is there; else keeps it as the spare */
static void release_large(char *p, size_t size) {
    if ((char *)sbrk(0) == p + size) {
        for (size_t left = size; left > 0;) {
            size_t step = left < LARGE_BUFFER ? left : LARGE_BUFFER;
            sbrk(-(intptr_t)step);
            left -= step;
        }
        return;
    }
    if (size > spare_large_size) { /* keep the bigger of the two; the smaller stays reserved */
        spare_large = p;
        spare_large_size = size;
    }
}

void *wick_buffer_alloc(size_t size) {
    if (size < LARGE_BUFFER) return malloc(size ? size : 1);
    if (spare_large && spare_large_size >= size) {
        char *p = spare_large;
        spare_large = NULL;
        spare_large_size = 0;
        return p;
    }
    char *start = sbrk(0);
    size_t pad = (16 - (uintptr_t)start % 16) % 16; /* malloc's alignment */
    if (pad && sbrk((intptr_t)pad) == (void *)-1) return NULL;
    start += pad;
    size_t done = 0;
    while (done < size) {
        size_t step = size - done < LARGE_BUFFER ? size - done : LARGE_BUFFER;
        char *p = sbrk((intptr_t)step);
        if (p == (char *)-1 || p != start + done) { /* no memory, or someone else's sbrk came between */
            if (p != (char *)-1) sbrk(-(intptr_t)step);
            release_large(start, done);
            return NULL;
        }
        done += step;
    }
    return start;
}

void wick_buffer_free(void *buf, size_t size) {
    if (!buf) return;
    if (size < LARGE_BUFFER) free(buf);
    else release_large(buf, size);
}
#else
void *wick_buffer_alloc(size_t size) { return malloc(size ? size : 1); }
void wick_buffer_free(void *buf, size_t size) {
    (void)size;
    free(buf);
}
#endif

wick_status wick_model_load_gguf(const void *buf, size_t size, wick_model **out) {
    if (!buf || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_load_gguf: NULL argument");
    *out = NULL;
    wick_model *m = malloc(sizeof *m);
    if (!m) return api_fail(WICK_ERR_NOMEM, "out of memory");
    const uint8_t *b = buf;
    errmsg err = {0};
    if (model_load_gguf(m, &b, &size, 1, &err)) {
        free(m);
        return api_status(&err);
    }
    *out = m;
    return api_ok();
}

wick_status wick_model_load_gguf_parts(const void *const *bufs, const size_t *sizes, int32_t n, wick_model **out) {
    if (!bufs || !sizes || !out || n < 1) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_load_gguf_parts: bad argument");
    *out = NULL;
    for (int32_t i = 0; i < n; i++)
        if (!bufs[i]) return api_fail(WICK_ERR_INVALID_ARG, "part %d: NULL buffer", i + 1);
    wick_model *m = malloc(sizeof *m);
    if (!m) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (model_load_gguf(m, (const uint8_t *const *)bufs, sizes, n, &err)) {
        free(m);
        return api_status(&err);
    }
    *out = m;
    return api_ok();
}

#if defined(__EMSCRIPTEN__)
/* the host's copy of what is outside wasm memory (src/engine_library.js): 0 or -1 */
extern int32_t wick_host_read(int32_t part, double offset, void *dst, size_t n);
static int32_t host_read(void *user, int32_t part, uint64_t offset, void *dst, size_t n) {
    (void)user;
    return wick_host_read(part, (double)offset, dst, n);
}
#endif

wick_status wick_model_load_gguf_sparse(const void *const *bufs, const size_t *sizes, int32_t n, const uint64_t *holes, int32_t n_holes,
                                        wick_read_fn read, void *user, wick_model **out) {
    if (!bufs || !sizes || !out || n < 1 || (n_holes && !holes)) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_load_gguf_sparse: bad argument");
    *out = NULL;
    for (int32_t i = 0; i < n; i++)
        if (!bufs[i]) return api_fail(WICK_ERR_INVALID_ARG, "part %d: NULL buffer", i + 1);
#if defined(__EMSCRIPTEN__)
    if (!read) read = host_read;
#endif
    wick_model *m = malloc(sizeof *m);
    if (!m) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (model_load_gguf_sparse(m, (const uint8_t *const *)bufs, sizes, n, holes, n_holes, read, user, &err)) {
        free(m);
        return api_status(&err);
    }
    *out = m;
    return api_ok();
}

wick_status wick_model_load_gguf_external(const void *const *bufs, const size_t *sizes, int32_t n, const uint64_t *holes,
                                          int32_t n_holes, wick_model **out) {
    if (!bufs || !sizes || !out || n < 1 || (n_holes && !holes)) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_load_gguf_external: bad argument");
    *out = NULL;
    for (int32_t i = 0; i < n; i++)
        if (!bufs[i]) return api_fail(WICK_ERR_INVALID_ARG, "part %d: NULL buffer", i + 1);
    wick_model *m = malloc(sizeof *m);
    if (!m) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (model_load_gguf_external(m, (const uint8_t *const *)bufs, sizes, n, holes, n_holes, &err)) {
        free(m);
        return api_status(&err);
    }
    *out = m;
    return api_ok();
}

wick_status wick_model_load_llama2c(const void *bin, size_t bin_size, const void *tok, size_t tok_size,
                                    wick_model **out) {
    if (!bin || !tok || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_load_llama2c: NULL argument");
    *out = NULL;
    wick_model *m = malloc(sizeof *m);
    if (!m) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (model_load_llama2c(m, bin, bin_size, tok, tok_size, &err)) {
        free(m);
        return api_status(&err);
    }
    *out = m;
    return api_ok();
}

void wick_model_free(wick_model *m) {
    if (!m) return;
    model_release(m);
    free(m);
}

static uint64_t weight_count(const weight *w) { return w->data ? (uint64_t)w->rows * (uint64_t)w->cols : 0; }
static uint64_t weight_bytes(const weight *w) { return w->data ? (uint64_t)w->rows * w->row_bytes : 0; }

wick_status wick_model_get_info(const wick_model *m, wick_model_info *o) {
    if (!m || !o) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_get_info: NULL argument");
    memset(o, 0, sizeof *o);
    const model_config *c = &m->config;
    snprintf(o->arch, sizeof o->arch, "%s", c->arch);
    o->n_vocab = c->n_vocab;
    o->dim = c->dim;
    o->n_layers = c->n_layers;
    o->n_heads = c->n_heads;
    o->n_kv_heads = c->n_kv_heads;
    o->head_dim = c->head_dim;
    o->hidden_dim = c->hidden_dim;
    o->n_ctx_train = c->n_ctx_train;
    o->rope_dim = c->rope_dim;
    o->rope_neox = c->rope_neox;
    o->rope_base = c->rope_base;
    o->rope_scale = c->rope_scale;
    o->rms_eps = c->rms_eps;
    o->bos = vocab_bos(m->vocab);
    o->eos = vocab_eos(m->vocab);
    o->has_weights = m->has_weights;
    if (m->has_weights) {
        const weight *tied = m->output.data == m->tok_embd.data ? NULL : &m->output;
        o->n_params = weight_count(&m->tok_embd) + (tied ? weight_count(tied) : 0);
        o->weight_bytes = weight_bytes(&m->tok_embd) + (tied ? weight_bytes(tied) : 0);
        for (int l = 0; l < c->n_layers; l++) {
            const layer_weights *w = &m->layers[l];
            const weight *ws[] = {&w->wq,     &w->wk,      &w->wv,       &w->wo,      &w->w_gate, &w->w_down,
                                  &w->w_up,   &w->sc_in,   &w->sc_out,   &w->dn_qkv,  &w->dn_gate,
                                  &w->dn_alpha, &w->dn_beta, &w->dn_out};
            for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
                o->n_params += weight_count(ws[i]);
                o->weight_bytes += weight_bytes(ws[i]);
            }
        }
    }
    return api_ok();
}

/* A tiny appending writer for the JSON of wick_model_info_json. */
typedef struct {
    char *buf;
    size_t cap, len;
} text_out;

static void emit(text_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

/* The switches the forward pass takes for this family (model.h), as "family":{…}. */
static void emit_family(text_out *o, const wick_model *m) {
    const model_config *c = &m->config;
    const layer_weights *l0 = &m->layers[0];
    int sliding = 0, unrotated = 0;
    for (int l = 0; l < c->n_layers; l++) {
        sliding += m->layers[l].sliding;
        unrotated += !m->layers[l].rotate;
    }
    static const char *const qk[] = {"none", "per head", "full width"};
    const char *norms = l0->attn_norm && l0->attn_post_norm ? "pre and post" : l0->attn_post_norm ? "post" : "pre";
    const char *factors = m->rope_freqs ? "rope_freqs" : m->rope_factors_short ? "short/long" : "none";
    emit(o,
         ",\"family\":{\"q_width\":%d,\"norms\":\"%s\",\"qk_norm\":\"%s\",\"activation\":\"%s\","
         "\"fused_qkv\":%s,\"fused_gate_up\":%s,\"tied_output\":%s,"
         "\"sliding_window\":%d,\"sliding_layers\":%d,\"rope_freq_base_swa\":%.9g,\"unrotated_layers\":%d,"
         "\"rope_factors\":\"%s\",\"rope_attn_factor\":%.9g,\"embedding_scale\":%.9g,\"residual_scale\":%.9g,"
         "\"attention_scale\":%.9g,\"attn_softcap\":%.9g,\"final_softcap\":%.9g,\"logit_scale\":%.9g",
         c->q_dim, norms, qk[c->qk_norm], c->act == ACT_GELU_TANH ? "gelu (tanh)" : "silu", m->fused_qkv ? "true" : "false",
         m->fused_gate_up ? "true" : "false", m->output.data == m->tok_embd.data ? "true" : "false", c->n_swa, sliding,
         c->rope_base_swa, unrotated, factors, c->rope_attn_factor, c->embd_scale, c->residual_scale, c->attn_scale,
         c->attn_softcap, c->final_softcap, c->logit_scale);
    /* the hybrids: which layers mix positions how (A attention, C short convolution, D gated
     * DeltaNet, M Mamba-2) and the recurrent state one sequence needs, in bytes (a context keeps it and
     * two snapshots: wick_state_bytes) */
    emit(o, ",\"layer_pattern\":\"");
    size_t state = 0;
    for (int l = 0; l < c->n_layers; l++) {
        layer_kind k = m->layers[l].kind;
        emit(o, "%c", k == LAYER_SHORTCONV ? 'C' : k == LAYER_DELTANET ? 'D' : k == LAYER_MAMBA2 ? 'M' : 'A');
        state += model_layer_state_floats(m, l) * sizeof(float);
    }
    emit(o, "\",\"recurrent_layers\":%d,\"state_bytes\":%zu", c->n_recurrent, state);
    if (c->n_recurrent)
        emit(o, ",\"conv_kernel\":%d,\"ssm_state\":%d,\"ssm_k_heads\":%d,\"ssm_v_heads\":%d,\"attn_output_gate\":%s",
             c->conv_kernel, c->ssm_state, c->ssm_k_heads, c->ssm_v_heads, c->attn_out_gate ? "true" : "false");
    emit(o, "}");
}

wick_status wick_model_info_json(const wick_model *m, char *buf, size_t buf_len, size_t *needed) {
    wick_model_info i;
    if (wick_model_get_info(m, &i)) return WICK_ERR_INVALID_ARG;
    text_out o = {buf, buf_len, 0};
    emit(&o, "{\"architecture\":\"%s\",\"has_weights\":%s,\"n_vocab\":%d,\"tokenizer\":\"%s\"", i.arch,
         i.has_weights ? "true" : "false", i.n_vocab, vocab_model_name(m->vocab));
    if (i.has_weights)
        emit(&o,
             ",\"embedding_length\":%d,\"block_count\":%d,\"head_count\":%d,\"head_count_kv\":%d,"
             "\"head_dim\":%d,\"feed_forward_length\":%d,\"context_length\":%d,\"rope_dimension_count\":%d,"
             "\"rope_neox\":%s,\"rope_freq_base\":%.9g,\"rope_scale\":%.9g,\"rms_epsilon\":%.9g,"
             "\"n_params\":%llu,\"weight_bytes\":%llu",
             i.dim, i.n_layers, i.n_heads, i.n_kv_heads, i.head_dim, i.hidden_dim, i.n_ctx_train, i.rope_dim,
             i.rope_neox ? "true" : "false", i.rope_base, i.rope_scale, i.rms_eps, (unsigned long long)i.n_params,
             (unsigned long long)i.weight_bytes);
    if (i.has_weights) emit_family(&o, m);
    if (i.has_weights && m->config.pooling != POOL_UNSPECIFIED) { /* an embedding model, or a decoder that also embeds */
        static const char *const pool_names[] = {"none", "mean", "cls", "last", "rank"};
        emit(&o, ",\"encoder\":%s,\"pooling\":\"%s\",\"causal\":%s,\"token_types\":%d", m->config.encoder ? "true" : "false",
             pool_names[m->config.pooling], m->config.causal ? "true" : "false", m->config.n_token_types);
    }
    if (i.has_weights && m->config.pooling == POOL_RANK) emit(&o, ",\"reranker\":true,\"classifier_outputs\":%d", m->n_cls_out);
    emit(&o, ",\"bos\":%d,\"eos\":%d,\"format\":\"%s\"", i.bos, i.eos, m->is_gguf ? "gguf" : "llama2c");
    uint64_t n_tensors = m->gguf.n_tensors;
    for (int p = 0; p < m->n_shards; p++) n_tensors += m->shards[p].n_tensors;
    if (m->is_gguf)
        emit(&o, ",\"gguf_version\":%u,\"tensor_count\":%llu,\"parts\":%d", m->gguf.version,
             (unsigned long long)n_tensors, 1 + m->n_shards);
    emit(&o, ",\"tensor_types\":{");
    uint64_t counts[WICK_TYPE_COUNT] = {0};
    if (m->is_gguf)
        for (int p = -1; p < m->n_shards; p++) {
            const gguf_file *g = p < 0 ? &m->gguf : &m->shards[p];
            for (uint64_t t = 0; t < g->n_tensors; t++) counts[g->tensors[t].type]++;
        }
    else if (m->has_weights)
        counts[WICK_TYPE_F32] = 3 + 9 * (uint64_t)m->config.n_layers - (m->output.data == m->tok_embd.data);
    bool first = true;
    for (int t = 0; t < WICK_TYPE_COUNT; t++)
        if (counts[t]) {
            emit(&o, "%s\"%s\":%llu", first ? "" : ",", quant_get((uint32_t)t)->name, (unsigned long long)counts[t]);
            first = false;
        }
    emit(&o, "}}");
    if (needed) *needed = o.len + 1;
    if (buf_len == 0) return api_ok();
    return o.len < buf_len ? api_ok() : api_fail(WICK_ERR_INVALID_ARG, "buffer of %zu bytes too small for the info (%zu)", buf_len, o.len + 1);
}

/* "name":{"ptr":…,"type":…,"rows":…,"cols":…,"row_bytes":…,"part":…,"offset":…,"outside":…} or null, for
 * wick_model_tensors_json (ptr 0 when outside: part and offset say where its bytes are in the file) */
static void emit_weight(text_out *o, const char *name, const weight *w) {
    if (!w->data) {
        emit(o, "\"%s\":null", name);
        return;
    }
    emit(o, "\"%s\":{\"ptr\":%llu,\"type\":%u,\"rows\":%lld,\"cols\":%lld,\"row_bytes\":%llu,\"part\":%d,\"offset\":%llu,\"outside\":%s}", name,
         w->outside ? 0ull : (unsigned long long)(uintptr_t)w->data, w->type, (long long)w->rows, (long long)w->cols,
         (unsigned long long)w->row_bytes, (int)w->part, (unsigned long long)w->offset, w->outside ? "true" : "false");
}

/* "name":{"ptr":…,"n":…} (n F32 values) or null */
static void emit_vector(text_out *o, const char *name, const float *v, int64_t n) {
    if (!v) emit(o, "\"%s\":null", name);
    else emit(o, "\"%s\":{\"ptr\":%llu,\"n\":%lld}", name, (unsigned long long)(uintptr_t)v, (long long)n);
}

wick_status wick_model_tensors_json(const wick_model *m, char *buf, size_t buf_len, size_t *needed) {
    if (!m || (!buf && buf_len)) return api_fail(WICK_ERR_INVALID_ARG, "wick_model_tensors_json: bad argument");
    if (!m->has_weights) return api_fail(WICK_ERR_INVALID_ARG, "the model has no weights (vocab-only file)");
    const model_config *c = &m->config;
    int64_t kvd = (int64_t)c->n_kv_heads * c->head_dim;
    text_out o = {buf, buf_len, 0};
    emit(&o,
         "{\"config\":{\"arch\":\"%s\",\"dim\":%d,\"n_layers\":%d,\"n_heads\":%d,\"n_kv_heads\":%d,\"head_dim\":%d,"
         "\"hidden_dim\":%d,\"n_vocab\":%d,\"q_dim\":%d,\"rope_dim\":%d,\"rope_neox\":%s,\"rope_base\":%.9g,"
         "\"rope_base_swa\":%.9g,\"rope_scale\":%.9g,\"rope_scale_swa\":%.9g,\"rope_attn_factor\":%.9g,"
         "\"n_ctx_orig\":%d,\"rms_eps\":%.9g,\"act\":\"%s\",\"qk_norm\":\"%s\",\"embd_scale\":%.9g,"
         "\"residual_scale\":%.9g,\"attn_scale\":%.9g,\"attn_softcap\":%.9g,\"final_softcap\":%.9g,"
         "\"logit_scale\":%.9g,\"n_swa\":%d,\"attn_out_gate\":%s,\"n_recurrent\":%d,\"layer_shapes\":%s,\"rope_yarn\":%s,"
         "\"attn_temp_scale\":%.9g,\"conv_kernel\":%d,\"ssm_state\":%d,\"ssm_k_heads\":%d,\"ssm_v_heads\":%d,\"ssm_inner\":%d},",
         c->arch, c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim, c->hidden_dim, c->n_vocab, c->q_dim,
         c->rope_dim, c->rope_neox ? "true" : "false", c->rope_base, c->rope_base_swa, c->rope_scale, c->rope_scale_swa,
         c->rope_attn_factor, c->n_ctx_orig, c->rms_eps, c->act == ACT_GELU_TANH ? "gelu_tanh" : "silu",
         c->qk_norm == QK_NORM_PER_HEAD ? "per_head" : c->qk_norm == QK_NORM_FULL ? "full" : "none", c->embd_scale,
         c->residual_scale, c->attn_scale, c->attn_softcap, c->final_softcap, c->logit_scale, c->n_swa,
         c->attn_out_gate ? "true" : "false", c->n_recurrent, m->layer_c ? "true" : "false",
         c->rope_yarn ? "true" : "false", c->attn_temp_scale, c->conv_kernel, c->ssm_state, c->ssm_k_heads, c->ssm_v_heads,
         c->ssm_inner);
    /* the steps beyond llama's, for a backend to check against what it implements */
    const char *steps[64];
    int n_steps = model_steps(m, steps, 64);
    emit(&o, "\"steps\":[");
    for (int i = 0; i < n_steps && i < 64; i++) emit(&o, "%s\"%s\"", i ? "," : "", steps[i]);
    emit(&o, "],");
    /* the saved states' model hash (state.c): a backend keeps what it learnt about a model by it */
    emit(&o, "\"model_hash\":\"%016llx\",", (unsigned long long)state_model_hash(m));
    emit_weight(&o, "tok_embd", &m->tok_embd);
    emit(&o, ",");
    emit_weight(&o, "output", &m->output);
    emit(&o, ",");
    emit_vector(&o, "output_norm", m->output_norm, c->dim);
    emit(&o, ",");
    emit_vector(&o, "rope_freqs", m->rope_freqs, c->rope_dim / 2);
    emit(&o, ",");
    emit_vector(&o, "rope_factors_short", m->rope_factors_short, c->rope_dim / 2);
    emit(&o, ",");
    emit_vector(&o, "rope_factors_long", m->rope_factors_long, c->rope_dim / 2);
    emit(&o, ",\"layers\":[");
    int64_t qn = c->qk_norm == QK_NORM_FULL ? c->q_dim : c->head_dim, kn = c->qk_norm == QK_NORM_FULL ? kvd : c->head_dim;
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        static const char *const kinds[] = {"attention", "shortconv", "deltanet", "mamba2"};
        _Static_assert(LAYER_MAMBA2 == 3, "a name for every layer kind");
        emit(&o, "%s{\"kind\":\"%s\",\"sliding\":%s,\"rotate\":%s,", l ? "," : "", kinds[w->kind],
             w->sliding ? "true" : "false", w->rotate ? "true" : "false");
        emit_vector(&o, "attn_norm", w->attn_norm, c->dim);
        const struct { const char *name; const weight *w; } ws[] = {
            {"wq", &w->wq}, {"wk", &w->wk}, {"wv", &w->wv}, {"wo", &w->wo},
            {"w_gate", &w->w_gate}, {"w_up", &w->w_up}, {"w_down", &w->w_down}};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            emit(&o, ",");
            emit_weight(&o, ws[i].name, ws[i].w);
        }
        const struct { const char *name; const float *v; int64_t n; } vs[] = {
            {"bq", w->bq, c->q_dim}, {"bk", w->bk, kvd}, {"bv", w->bv, kvd},
            {"attn_q_norm", w->attn_q_norm, qn}, {"attn_k_norm", w->attn_k_norm, kn},
            {"attn_post_norm", w->attn_post_norm, c->dim}, {"ffn_norm", w->ffn_norm, c->dim},
            {"ffn_post_norm", w->ffn_post_norm, c->dim}};
        for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
            emit(&o, ",");
            emit_vector(&o, vs[i].name, vs[i].v, vs[i].n);
        }
        /* a recurrent layer's mixer: lfm2's short convolution, qwen35's gated DeltaNet (model.h) */
        if (w->kind == LAYER_SHORTCONV || w->kind == LAYER_DELTANET) {
            int64_t ch = model_conv_channels(c, w->kind);
            const struct { const char *name; const weight *w; } rw[] = {
                {"sc_in", &w->sc_in}, {"sc_out", &w->sc_out}, {"dn_qkv", &w->dn_qkv}, {"dn_gate", &w->dn_gate},
                {"dn_alpha", &w->dn_alpha}, {"dn_beta", &w->dn_beta}, {"dn_out", &w->dn_out}};
            for (size_t i = 0; i < sizeof rw / sizeof rw[0]; i++) {
                emit(&o, ",");
                emit_weight(&o, rw[i].name, rw[i].w);
            }
            const struct { const char *name; const float *v; int64_t n; } rv[] = {
                {"conv_w", w->conv_w, ch * c->conv_kernel}, {"dn_dt", w->dn_dt, c->ssm_v_heads},
                {"dn_a", w->dn_a, c->ssm_v_heads}, {"dn_norm", w->dn_norm, c->ssm_state}};
            for (size_t i = 0; i < sizeof rv / sizeof rv[0]; i++) {
                emit(&o, ",");
                emit_vector(&o, rv[i].name, rv[i].v, rv[i].n);
            }
        }
        emit(&o, "}");
    }
    emit(&o, "]}");
    if (needed) *needed = o.len + 1;
    if (buf_len == 0) return api_ok();
    return o.len < buf_len ? api_ok() : api_fail(WICK_ERR_INVALID_ARG, "buffer of %zu bytes too small for the tensors (%zu)", buf_len, o.len + 1);
}

wick_status wick_dequantize(uint32_t type, const void *src, int32_t n, float *dst) {
    const quant_type *t = quant_get(type);
    if (!t || !src || !dst || n < 0 || n % (int32_t)t->block_size)
        return api_fail(WICK_ERR_INVALID_ARG, "wick_dequantize: bad type %u or count %d", type, n);
    t->to_float(src, dst, n);
    return api_ok();
}

wick_status wick_row_dot(uint32_t type, const void *w, const float *x, int32_t n, float *out) {
    const quant_type *t = quant_get(type);
    if (!t || !w || !x || !out || n <= 0 || n % t->block_size)
        return api_fail(WICK_ERR_INVALID_ARG, "wick_row_dot: bad type %u or count %d", type, n);
    const quant_type *a = quant_get(t->vec_dot_type);
    if (a->type == WICK_TYPE_F32) {
        *out = t->vec_dot(n, w, x);
        return api_ok();
    }
    void *q = malloc(quant_row_size(a->type, n) + 64);
    if (!q) return api_fail(WICK_ERR_NOMEM, "out of memory");
    a->from_float(x, q, n);
    *out = t->vec_dot(n, w, q);
    free(q);
    return api_ok();
}

wick_status wick_tokenize(const wick_model *m, const char *text, size_t len, int add_bos, int parse_special,
                          int32_t *tokens, int32_t max_tokens, int32_t *n_tokens) {
    if (!m || (!text && len) || !n_tokens || max_tokens < 0 || (!tokens && max_tokens))
        return api_fail(WICK_ERR_INVALID_ARG, "wick_tokenize: bad argument");
    int n = vocab_tokenize(m->vocab, text ? text : "", len, add_bos != 0, parse_special != 0, tokens, max_tokens);
    if (n < 0) return api_fail(WICK_ERR_INVALID_ARG, "tokenization failed");
    *n_tokens = n;
    return api_ok();
}

wick_status wick_token_to_piece(const wick_model *m, int32_t token, char *buf, int32_t buf_len, int32_t *n_bytes) {
    if (!m || !n_bytes || buf_len < 0 || (!buf && buf_len)) return api_fail(WICK_ERR_INVALID_ARG, "wick_token_to_piece: bad argument");
    int n = vocab_token_to_piece(m->vocab, token, buf, buf_len);
    if (n < 0) return api_fail(WICK_ERR_INVALID_ARG, "token id %d out of range", token);
    *n_bytes = n;
    return api_ok();
}

wick_status wick_detokenize(const wick_model *m, const int32_t *tokens, int32_t n_tokens, char *buf, int32_t buf_len,
                            int32_t *n_bytes) {
    if (!m || !n_bytes || n_tokens < 0 || (!tokens && n_tokens) || buf_len < 0 || (!buf && buf_len))
        return api_fail(WICK_ERR_INVALID_ARG, "wick_detokenize: bad argument");
    for (int32_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab_n_tokens(m->vocab))
            return api_fail(WICK_ERR_INVALID_ARG, "token id %d out of range (vocabulary of %d)", tokens[i], vocab_n_tokens(m->vocab));
    int n = vocab_detokenize(m->vocab, tokens, n_tokens, buf, buf_len);
    if (n < 0) return api_fail(WICK_ERR_INVALID_ARG, "detokenization failed");
    *n_bytes = n;
    return api_ok();
}

int wick_token_is_eog(const wick_model *m, int32_t token) { return m && vocab_is_eog(m->vocab, token); }

wick_status wick_ctx_new(const wick_model *m, const wick_ctx_params *p, wick_ctx **out) {
    if (!m || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_new: NULL argument");
    *out = NULL;
    if (m->external_only && m->n_outside)
        return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_new: %d of this model's tensors were left outside the engine's memory for an "
                                               "external (GPU) context; load the model whole for a CPU context", m->n_outside);
    wick_ctx_params defaults;
    wick_ctx_default_params(&defaults);
    wick_ctx *c = malloc(sizeof *c);
    if (!c) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (ctx_init(c, m, p ? p : &defaults, &err)) {
        free(c);
        return api_status(&err);
    }
    /* the weights in this build's CPU layout (wick.h: the buffers are rewritten in place) */
    if (model_use_cpu_layout((wick_model *)m)) {
        ctx_release(c);
        free(c);
        return api_fail(WICK_ERR_NOMEM, "out of memory");
    }
    *out = c;
    return api_ok();
}

void wick_ctx_free(wick_ctx *c) {
    if (!c) return;
    ctx_release(c);
    free(c);
}

/* wick_eval on an external context: the operation is queued, the logits wait for the caller */
static wick_status eval_external(wick_ctx *c, const int32_t *tokens, int32_t n, int all_logits) {
    if (n < 1 || !tokens) return ctx_fail(c, WICK_ERR_INVALID_ARG, "no tokens to evaluate");
    for (int32_t i = 0; i < n; i++) {
        if (tokens[i] < 0) return ctx_fail(c, WICK_ERR_UNSUPPORTED, "images run on the CPU: this context's forward pass is outside the engine (GPU)");
        if (tokens[i] >= c->model->config.n_vocab)
            return ctx_fail(c, WICK_ERR_INVALID_ARG, "token id %d out of range (vocabulary of %d)", tokens[i], c->model->config.n_vocab);
    }
    int32_t head[4] = {WICK_OP_EVAL, c->n_past, n, all_logits != 0};
    int32_t len = c->ext_len;
    if (ctx_external_push(c, head, 4) || ctx_external_push(c, tokens, n)) {
        c->ext_len = len;
        return ctx_fail(c, WICK_ERR_NOMEM, "out of memory");
    }
    c->n_past += n;
    c->n_logit_rows = 0; /* until the caller writes them */
    return ctx_ok(c);
}

wick_status wick_ctx_new_external(const wick_model *m, int32_t n_ctx, wick_ctx **out) {
    if (!m || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_new_external: NULL argument");
    *out = NULL;
    if (m->cpu_layout)
        return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_new_external: a CPU context has rewritten this model's weights "
                                               "in the CPU layout; load the model again for an external (GPU) context");
    wick_ctx *c = malloc(sizeof *c);
    if (!c) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (ctx_init_external(c, m, n_ctx, &err)) {
        free(c);
        return api_status(&err);
    }
    *out = c;
    return api_ok();
}

int32_t wick_ctx_external_ops(wick_ctx *c, const int32_t **ops) {
    if (!c || !c->external) return 0;
    if (ops) *ops = c->ext_ops;
    int32_t n = c->ext_len;
    c->ext_len = 0;
    return n;
}

float *wick_ctx_external_logits(wick_ctx *c, int32_t n_rows) {
    if (!c || !c->external || n_rows < 1) return NULL;
    if (n_rows > c->logits_cap_rows) {
        float *l = realloc(c->logits, (size_t)n_rows * (size_t)c->model->config.n_vocab * sizeof(float));
        if (!l) return NULL;
        c->logits = l;
        c->logits_cap_rows = n_rows;
    }
    c->n_logit_rows = n_rows;
    return c->logits;
}

wick_status wick_ctx_external_top_logits(wick_ctx *c, int32_t k, const int32_t *ids, const float *values) {
    if (!c || !c->external) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_external_top_logits: not an external context");
    int32_t n_vocab = c->model->config.n_vocab;
    if (k < 1 || k > n_vocab || !ids || !values)
        return ctx_fail(c, WICK_ERR_INVALID_ARG, "wick_ctx_external_top_logits: %d entries for a vocabulary of %d", k, n_vocab);
    for (int32_t i = 0; i < k; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return ctx_fail(c, WICK_ERR_INVALID_ARG, "wick_ctx_external_top_logits: token id %d out of range (vocabulary of %d)", ids[i], n_vocab);
    float *row = wick_ctx_external_logits(c, 1);
    if (!row) return ctx_fail(c, WICK_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < n_vocab; i++) row[i] = -INFINITY;
    for (int32_t i = 0; i < k; i++) row[ids[i]] = values[i];
    return ctx_ok(c);
}

int32_t wick_model_pooling(const wick_model *m) {
    return m && m->has_weights ? (int32_t)m->config.pooling : -1; /* POOL_UNSPECIFIED: -1 */
}

wick_status wick_embed(wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, int32_t pooling, int32_t normalize,
                       float *out) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_embed: NULL context");
    const model_config *mc = &c->model->config;
    if (mc->pooling == POOL_UNSPECIFIED || c->external)
        return ctx_fail(c, WICK_ERR_INVALID_ARG, "%s is a generative model, not an embedding model (an encoder such as bert, or a "
                        "decoder whose file sets %s.pooling_type): it has no embeddings to give", mc->arch, mc->arch);
    if (pooling == WICK_POOLING_DEFAULT) pooling = (int32_t)mc->pooling;
    if (pooling == WICK_POOLING_RANK)
        return ctx_fail(c, WICK_ERR_INVALID_ARG, "%s is a reranker (pooling rank): it scores query and document pairs (rerank); "
                        "give a pooling (mean, cls, last, none) for its hidden states", mc->arch);
    if (pooling < WICK_POOLING_NONE || pooling > WICK_POOLING_LAST)
        return ctx_fail(c, WICK_ERR_INVALID_ARG, "pooling %d unknown (0 none, 1 mean, 2 cls, 3 last)", pooling);
    if (encoder_eval(c, tokens, lens, n_seq, (pooling_kind)pooling, out, &c->error)) return api_status(&c->error);
    if (normalize) {
        size_t rows = 0;
        for (int32_t s = 0; s < n_seq; s++) rows += pooling == WICK_POOLING_NONE ? (size_t)lens[s] : 1;
        for (size_t r = 0; r < rows; r++) { /* as llama.cpp's common_embd_normalize (L2) */
            float *v = out + r * (size_t)mc->dim;
            double ss = 0;
            for (int i = 0; i < mc->dim; i++) ss += (double)v[i] * v[i];
            float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
            for (int i = 0; i < mc->dim; i++) v[i] *= inv;
        }
    }
    return ctx_ok(c);
}

wick_status wick_rerank_tokens(const wick_model *m, const char *query, size_t query_len, const char *doc, size_t doc_len,
                               int32_t *tokens, int32_t max_tokens, int32_t *n_tokens) {
    if (!m || (!query && query_len) || (!doc && doc_len) || !n_tokens || max_tokens < 0 || (!tokens && max_tokens))
        return api_fail(WICK_ERR_INVALID_ARG, "wick_rerank_tokens: bad argument");
    int n = rerank_tokens(m, query ? query : "", query_len, doc ? doc : "", doc_len, tokens, max_tokens);
    if (n < 0) return api_fail(WICK_ERR_INVALID_ARG, "tokenization failed");
    *n_tokens = n;
    return api_ok();
}

wick_status wick_rerank(wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, float *scores) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_rerank: NULL context");
    if (c->external) return ctx_fail(c, WICK_ERR_INVALID_ARG, "wick_rerank: a context of an outside backend runs no forward pass");
    const struct wick_model *m = c->model;
    if (m->config.pooling != POOL_RANK)
        return ctx_fail(c, WICK_ERR_INVALID_ARG, "%s is not a reranker (its pooling_type is not rank): it has no relevance scores to give",
                        m->config.arch);
    if (n_seq < 1 || !tokens || !lens || !scores) return ctx_fail(c, WICK_ERR_INVALID_ARG, "wick_rerank: no pairs to score");
    if (!m->config.encoder) {
        if (rerank_decoder(c, tokens, lens, n_seq, scores, &c->error)) return api_status(&c->error);
        return ctx_ok(c);
    }
    /* an encoder: the head's n_cls_out outputs per pair, in packed batches; the score is the first */
    float *out = malloc((size_t)n_seq * (size_t)m->n_cls_out * sizeof *out);
    if (!out) return ctx_fail(c, WICK_ERR_NOMEM, "out of memory");
    int rc = encoder_eval(c, tokens, lens, n_seq, POOL_RANK, out, &c->error);
    for (int32_t s = 0; rc == 0 && s < n_seq; s++) scores[s] = out[(size_t)s * m->n_cls_out];
    free(out);
    if (rc) return api_status(&c->error);
    return ctx_ok(c);
}

wick_status wick_eval(wick_ctx *c, const int32_t *tokens, int32_t n, int all_logits) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_eval: NULL context");
    if (n > c->n_ctx - c->n_past)
        return ctx_fail(c, WICK_ERR_CONTEXT_FULL, "%d tokens do not fit in the context: %d of %d positions used", n,
                         c->n_past, c->n_ctx);
    if (c->external) return eval_external(c, tokens, n, all_logits);
    if (forward_eval(c, tokens, n, all_logits != 0, &c->error)) return api_status(&c->error);
    return ctx_ok(c);
}

const float *wick_get_logits(const wick_ctx *c, int32_t i) {
    if (!c || !c->logits || c->n_logit_rows == 0) return NULL;
    if (i < 0) i = c->n_logit_rows - 1;
    if (i >= c->n_logit_rows) return NULL;
    return c->logits + (size_t)i * (size_t)c->model->config.n_vocab;
}

int32_t wick_n_past(const wick_ctx *c) { return c ? c->n_past : 0; }
int32_t wick_n_ctx(const wick_ctx *c) { return c ? c->n_ctx : 0; }

wick_status wick_kv_trim(wick_ctx *c, int32_t n_keep) {
    if (!c || n_keep < 0 || n_keep > c->n_past)
        return api_fail(WICK_ERR_INVALID_ARG, "cannot keep %d positions of %d", n_keep, c ? c->n_past : 0);
    if (kv_cache_trim(c, n_keep, &c->error)) return api_status(&c->error);
    if (c->external) {
        int32_t op[2] = {WICK_OP_TRIM, n_keep};
        if (ctx_external_push(c, op, 2)) return ctx_fail(c, WICK_ERR_NOMEM, "out of memory");
    }
    return ctx_ok(c);
}

wick_status wick_kv_shift(wick_ctx *c, int32_t n_keep, int32_t n_discard) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_kv_shift: NULL context");
    if (kv_cache_shift(c, n_keep, n_discard, &c->error)) return api_status(&c->error);
    return ctx_ok(c);
}

size_t wick_kv_bytes(const wick_ctx *c) {
    if (!c) return 0;
    return c->kv_bytes_k + c->kv_bytes_v;
}

size_t wick_state_bytes(const wick_ctx *c) { return c ? ctx_state_bytes(c) : 0; }

wick_status wick_state_snapshot(wick_ctx *c) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_state_snapshot: NULL context");
    kv_state_snapshot(c);
    return ctx_ok(c);
}

int32_t wick_sample_simple(const float *logits, int32_t n_vocab, float temperature, double u) {
    if (!logits || n_vocab < 1) return -1;
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    if (!(temperature > 0)) return best;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)(logits[i] - logits[best]) / temperature);
    double target = u * sum, acc = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        acc += exp((double)(logits[i] - logits[best]) / temperature);
        if (acc > target) return i;
    }
    return best;
}

wick_status wick_softmax(const float *logits, int32_t n, float temperature, float *probs) {
    if (!logits || !probs || n < 1 || !(temperature >= 0))
        return api_fail(WICK_ERR_INVALID_ARG, "wick_softmax: needs logits, n ≥ 1 and a temperature ≥ 0");
    double *p = malloc((size_t)n * sizeof *p);
    if (!p) return api_fail(WICK_ERR_NOMEM, "out of memory");
    sampler_softmax(logits, n, temperature, p);
    for (int32_t i = 0; i < n; i++) probs[i] = (float)p[i];
    free(p);
    return api_ok();
}
