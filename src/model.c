/* model.c — binds a parsed GGUF file or a llama2.c checkpoint to the model structure:
 * hyperparameters from metadata (or the checkpoint header) and every weight checked for its
 * type and shape before the forward pass may touch it. */
#include "errmsg.h"
#include "model.h"
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upper bounds on hyperparameters: far above any model wasm32 can hold, low enough that the
 * products the engine forms (dim * n_ctx, n_heads * n_ctx …) stay well inside 64-bit range. */
#define MAX_DIM (1 << 16)
#define MAX_LAYERS 1024
#define MAX_HEADS 1024
#define MAX_VOCAB (1 << 22)
#define MAX_CTX (1 << 24)

static const float *own_f32(struct wick_model *m, const gguf_tensor *t, int64_t n) {
    float *v = malloc((size_t)n * sizeof(float));
    void **list = realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *list);
    if (!v || !list) { free(v); if (list) m->owned = list; return NULL; }
    m->owned = list;
    m->owned[m->n_owned++] = v;
    quant_get(t->type)->to_float(t->data, v, n);
    return v;
}

/* A 1-D vector of n elements, as F32 (converted and owned when stored otherwise). */
static int bind_vector(struct wick_model *m, const char *name, int64_t n, bool optional, const float **out,
                       char *err, size_t err_len) {
    const gguf_tensor *t = model_find_tensor(m, name);
    *out = NULL;
    if (!t) return optional ? 0 : errorf(err, err_len, "tensor %s is missing", name);
    if (t->ne[0] != (uint64_t)n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return errorf(err, err_len, "tensor %s: shape [%lld, %lld] where [%lld] was expected", name,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    if (t->type == WICK_TYPE_F32 && ((uintptr_t)t->data & 3) == 0) {
        *out = t->data;
        return 0;
    }
    if (quant_get(t->type)->to_float == NULL)
        return errorf(err, err_len, "tensor %s: type %s cannot be converted", name, quant_get(t->type)->name);
    *out = own_f32(m, t, n);
    return *out ? 0 : errorf(err, err_len, "out of memory converting %s", name);
}

static int bind_matrix(struct wick_model *m, const char *name, int64_t rows, int64_t cols, bool optional,
                       weight *w, char *err, size_t err_len) {
    const gguf_tensor *t = model_find_tensor(m, name);
    memset(w, 0, sizeof *w);
    if (!t) return optional ? 0 : errorf(err, err_len, "tensor %s is missing", name);
    if (t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows || t->ne[2] != 1 || t->ne[3] != 1)
        return errorf(err, err_len, "tensor %s: shape [%lld, %lld, %lld] where [%lld, %lld] was expected", name,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)cols,
                    (long long)rows);
    const quant_type *qt = quant_get(t->type);
    if (!qt->vec_dot || !qt->to_float)
        return errorf(err, err_len, "tensor %s: type %s is not supported for weights", name, qt->name);
    w->data = t->data;
    w->type = t->type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = quant_row_size(t->type, cols);
    return 0;
}

static bool meta_int(const gguf_file *g, const char *arch, const char *suffix, int64_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_i64(g, key, out);
}

static bool meta_float(const gguf_file *g, const char *arch, const char *suffix, double *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_f64(g, key, out);
}

static int check_range(const char *what, int64_t v, int64_t lo, int64_t hi, char *err, size_t err_len) {
    if (v < lo || v > hi)
        return errorf(err, err_len, "%s = %lld is out of range (%lld to %lld)", what, (long long)v, (long long)lo,
                    (long long)hi);
    return 0;
}

/* Checks the relations among hyperparameters the forward pass relies on. */
static int check_config(const model_config *c, char *err, size_t err_len) {
    if (check_range("embedding length", c->dim, 1, MAX_DIM, err, err_len) ||
        check_range("block count", c->n_layers, 1, MAX_LAYERS, err, err_len) ||
        check_range("head count", c->n_heads, 1, MAX_HEADS, err, err_len) ||
        check_range("KV head count", c->n_kv_heads, 1, c->n_heads, err, err_len) ||
        check_range("feed-forward length", c->hidden_dim, 1, 4 * MAX_DIM, err, err_len) ||
        check_range("vocabulary size", c->n_vocab, 1, MAX_VOCAB, err, err_len) ||
        check_range("context length", c->n_ctx_train, 1, MAX_CTX, err, err_len) ||
        check_range("head dimension", c->head_dim, 2, MAX_DIM, err, err_len) ||
        check_range("rope dimension", c->rope_dim, 0, c->head_dim, err, err_len))
        return -1;
    if (c->n_heads % c->n_kv_heads)
        return errorf(err, err_len, "head count %d is not a multiple of the KV head count %d", c->n_heads,
                    c->n_kv_heads);
    if (c->rope_dim % 2) return errorf(err, err_len, "rope dimension %d is odd", c->rope_dim);
    if (!(c->rms_eps > 0 && c->rms_eps < 1)) return errorf(err, err_len, "RMS epsilon %g out of range", c->rms_eps);
    if (!(c->rope_base > 0 && isfinite(c->rope_base)))
        return errorf(err, err_len, "rope base %g out of range", c->rope_base);
    if (!(c->rope_scale > 0 && isfinite(c->rope_scale)))
        return errorf(err, err_len, "rope scaling %g out of range", c->rope_scale);
    return 0;
}

static int read_gguf_config(struct wick_model *m, char *err, size_t err_len) {
    const gguf_file *g = &m->gguf;
    model_config *c = &m->c;
    const char *a = c->arch;
    int64_t v;
    double f;
#define REQUIRE_INT(field, suffix)                                                          \
    do {                                                                                    \
        if (!meta_int(g, a, suffix, &v)) return errorf(err, err_len, "metadata %s.%s is missing", a, suffix); \
        if (v < 0 || v > INT32_MAX) return errorf(err, err_len, "metadata %s.%s = %lld out of range", a, suffix, (long long)v); \
        c->field = (int32_t)v;                                                              \
    } while (0)
    REQUIRE_INT(dim, "embedding_length");
    REQUIRE_INT(n_layers, "block_count");
    REQUIRE_INT(n_heads, "attention.head_count");
    REQUIRE_INT(hidden_dim, "feed_forward_length");
    REQUIRE_INT(n_ctx_train, "context_length");
#undef REQUIRE_INT
    if (c->n_heads < 1) return errorf(err, err_len, "head count %d out of range", c->n_heads);
    c->n_kv_heads = c->n_heads;
    if (meta_int(g, a, "attention.head_count_kv", &v)) {
        if (v < 1 || v > c->n_heads) return errorf(err, err_len, "KV head count %lld out of range", (long long)v);
        c->n_kv_heads = (int32_t)v;
    }
    if (c->n_heads < 1 || c->dim % c->n_heads)
        return errorf(err, err_len, "embedding length %d is not a multiple of the head count %d", c->dim, c->n_heads);
    c->head_dim = c->dim / c->n_heads;
    if (meta_int(g, a, "attention.key_length", &v) && v != c->head_dim)
        return errorf(err, err_len, "attention.key_length %lld differs from embedding/heads %d (unsupported)",
                    (long long)v, c->head_dim);
    c->rope_dim = c->head_dim;
    if (meta_int(g, a, "rope.dimension_count", &v)) {
        if (v < 0 || v > c->head_dim) return errorf(err, err_len, "rope dimension %lld out of range", (long long)v);
        c->rope_dim = (int32_t)v;
    }
    c->rope_base = 10000.0f;
    if (meta_float(g, a, "rope.freq_base", &f)) c->rope_base = (float)f;
    c->rms_eps = 1e-5f;
    if (meta_float(g, a, "attention.layer_norm_rms_epsilon", &f)) c->rms_eps = (float)f;
    c->rope_scale = 1.0f;
    gguf_str st;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    bool scaled = gguf_get_str(g, key, &st) && !gguf_str_eq(st, "none");
    if (scaled && !gguf_str_eq(st, "linear"))
        return errorf(err, err_len, "rope scaling type %.*s is not supported (none and linear are)", (int)st.len, st.ptr);
    if (meta_float(g, a, "rope.scaling.factor", &f) && f != 0 && f != 1) {
        if (!(f > 0)) return errorf(err, err_len, "rope scaling factor %g out of range", f);
        c->rope_scale = (float)(1.0 / f);
    } else if (meta_float(g, a, "rope.scale_linear", &f) && f != 0 && f != 1) {
        if (!(f > 0)) return errorf(err, err_len, "rope scaling factor %g out of range", f);
        c->rope_scale = (float)(1.0 / f);
    }
    c->rope_neox = strcmp(a, "qwen2") == 0;
    return 0;
}

static int bind_gguf_weights(struct wick_model *m, char *err, size_t err_len) {
    model_config *c = &m->c;
    const gguf_tensor *emb = model_find_tensor(m, "token_embd.weight");
    if (!emb) return errorf(err, err_len, "tensor token_embd.weight is missing");
    if (emb->ne[1] < 1 || emb->ne[1] > MAX_VOCAB)
        return errorf(err, err_len, "token_embd.weight: %lld rows is out of range", (long long)emb->ne[1]);
    c->n_vocab = (int32_t)emb->ne[1];
    if (check_config(c, err, err_len)) return -1;
    int64_t kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    if (bind_matrix(m, "token_embd.weight", c->n_vocab, c->dim, false, &m->tok_embd, err, err_len) ||
        bind_vector(m, "output_norm.weight", c->dim, false, &m->output_norm, err, err_len) ||
        bind_matrix(m, "output.weight", c->n_vocab, c->dim, true, &m->output, err, err_len))
        return -1;
    if (!m->output.data) m->output = m->tok_embd; /* tied embeddings */
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return errorf(err, err_len, "out of memory");
    bool biases = strcmp(c->arch, "qwen2") == 0;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        if (bind_vector(m, NAME("attn_norm.weight"), c->dim, false, &w->attn_norm, err, err_len) ||
            bind_matrix(m, NAME("attn_q.weight"), c->dim, c->dim, false, &w->wq, err, err_len) ||
            bind_matrix(m, NAME("attn_k.weight"), kv_dim, c->dim, false, &w->wk, err, err_len) ||
            bind_matrix(m, NAME("attn_v.weight"), kv_dim, c->dim, false, &w->wv, err, err_len) ||
            bind_matrix(m, NAME("attn_output.weight"), c->dim, c->dim, false, &w->wo, err, err_len) ||
            bind_vector(m, NAME("attn_q.bias"), c->dim, !biases, &w->bq, err, err_len) ||
            bind_vector(m, NAME("attn_k.bias"), kv_dim, !biases, &w->bk, err, err_len) ||
            bind_vector(m, NAME("attn_v.bias"), kv_dim, !biases, &w->bv, err, err_len) ||
            bind_vector(m, NAME("ffn_norm.weight"), c->dim, false, &w->ffn_norm, err, err_len) ||
            bind_matrix(m, NAME("ffn_gate.weight"), c->hidden_dim, c->dim, false, &w->w_gate, err, err_len) ||
            bind_matrix(m, NAME("ffn_down.weight"), c->dim, c->hidden_dim, false, &w->w_down, err, err_len) ||
            bind_matrix(m, NAME("ffn_up.weight"), c->hidden_dim, c->dim, false, &w->w_up, err, err_len))
            return -1;
#undef NAME
    }
    return 0;
}

const gguf_tensor *model_find_tensor(const struct wick_model *m, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(&m->gguf, name);
    for (int i = 0; !t && i < m->n_shards; i++) t = gguf_find_tensor(&m->shards[i], name);
    return t;
}

/* split.no / split.count of part i must say it is part i of n (absent on an unsplit file) */
static int check_split(const gguf_file *g, int i, int n, char *err, size_t err_len) {
    uint64_t no = 0, count = 1;
    bool has_no = gguf_get_u64(g, "split.no", &no), has_count = gguf_get_u64(g, "split.count", &count);
    if (n == 1 && !has_count) return 0;
    if (!has_no || !has_count || count != (uint64_t)n || no != (uint64_t)i)
        return errorf(err, err_len, "part %d of %d: split.no / split.count say part %llu of %llu", i + 1, n,
                    (unsigned long long)no + 1, (unsigned long long)count);
    return 0;
}

static bool str_equal(gguf_str a, gguf_str b) { return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len); }

/* No tensor name may appear in two parts (each part checked its own already). */
static int check_unique_across_parts(const struct wick_model *m, char *err, size_t err_len) {
    for (int a = -1; a < m->n_shards; a++) {
        const gguf_file *ga = a < 0 ? &m->gguf : &m->shards[a];
        for (int b = a + 1; b < m->n_shards; b++)
            for (uint64_t t = 0; t < ga->n_tensors; t++)
                for (uint64_t u = 0; u < m->shards[b].n_tensors; u++)
                    if (str_equal(ga->tensors[t].name, m->shards[b].tensors[u].name)) {
                        gguf_str nm = ga->tensors[t].name;
                        return errorf(err, err_len, "tensor %.*s appears in two parts", (int)(nm.len < 80 ? nm.len : 80), nm.ptr);
                    }
    }
    return 0;
}

int model_load_gguf(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, char *err,
                    size_t err_len) {
    memset(m, 0, sizeof *m);
    m->is_gguf = true;
    if (n < 1 || n > 1024) return errorf(err, err_len, "%d parts: a model has 1 to 1024", n);
    if (gguf_open(&m->gguf, bufs[0], sizes[0], err, err_len)) return -1;
    if (n > 1) {
        m->shards = calloc((size_t)n - 1, sizeof *m->shards);
        if (!m->shards) { model_release(m); return errorf(err, err_len, "out of memory"); }
        for (int i = 1; i < n; i++) {
            char perr[400];
            if (gguf_open(&m->shards[i - 1], bufs[i], sizes[i], perr, sizeof perr)) {
                model_release(m);
                return errorf(err, err_len, "part %d: %s", i + 1, perr);
            }
            m->n_shards = i;
        }
    }
    for (int i = 0; i < n; i++)
        if (check_split(i ? &m->shards[i - 1] : &m->gguf, i, n, err, err_len)) { model_release(m); return -1; }
    if (n > 1 && check_unique_across_parts(m, err, err_len)) { model_release(m); return -1; }
    uint64_t n_tensors = m->gguf.n_tensors;
    for (int i = 0; i < m->n_shards; i++) n_tensors += m->shards[i].n_tensors;
    gguf_str arch;
    if (!gguf_get_str(&m->gguf, "general.architecture", &arch)) {
        /* a vocab-only file still tokenizes */
        if (n_tensors == 0) goto vocab;
        model_release(m);
        return errorf(err, err_len, "metadata general.architecture is missing");
    }
    if (!gguf_str_eq(arch, "llama") && !gguf_str_eq(arch, "qwen2")) {
        if (n_tensors == 0) goto vocab;
        errorf(err, err_len, "architecture '%.*s' is not supported (llama and qwen2 are)", (int)(arch.len < 40 ? arch.len : 40), arch.ptr);
        model_release(m);
        return -1;
    }
    snprintf(m->c.arch, sizeof m->c.arch, "%.*s", (int)arch.len, arch.ptr);
    if (n_tensors == 0) goto vocab;
    if (read_gguf_config(m, err, err_len) || bind_gguf_weights(m, err, err_len)) {
        model_release(m);
        return -1;
    }
    m->has_weights = true;
vocab:
    if (vocab_load_gguf(&m->vocab, &m->gguf, err, err_len)) {
        model_release(m);
        return -1;
    }
    if (!m->has_weights) m->c.n_vocab = vocab_n_tokens(m->vocab);
    return 0;
}

/* llama2.c checkpoint (run.c): a header of seven int32 — dim, hidden_dim, n_layers, n_heads,
 * n_kv_heads, vocab_size, seq_len — where a negative vocab_size means the classifier is NOT
 * shared with the embedding; then float32 arrays: token_embedding[vocab][dim],
 * rms_att[layers][dim], wq[layers][dim][dim], wk[layers][kv_dim][dim], wv[layers][kv_dim][dim],
 * wo[layers][dim][dim], rms_ffn[layers][dim], w1[layers][hidden][dim], w2[layers][dim][hidden],
 * w3[layers][hidden][dim], rms_final[dim], freq_cis_real/imag[seq_len][head_size/2] (unused),
 * and wcls[vocab][dim] when not shared. Rope pairs are adjacent (2i, 2i+1), base 10000. */
int model_load_llama2c(struct wick_model *m, const uint8_t *bin, size_t bin_size, const uint8_t *tok,
                       size_t tok_size, char *err, size_t err_len) {
    memset(m, 0, sizeof *m);
    int32_t h[7];
    if (bin_size < sizeof h) return errorf(err, err_len, "llama2.c checkpoint truncated: %zu bytes", bin_size);
    memcpy(h, bin, sizeof h);
    if (memcmp(bin, "24ka", 4) == 0) /* the magic 0x616b3432 of llama2.c's versioned export */
        return errorf(err, err_len, "llama2.c versioned checkpoints (export version %d) are not supported; use the legacy format", h[1]);
    model_config *c = &m->c;
    snprintf(c->arch, sizeof c->arch, "llama");
    c->dim = h[0];
    c->hidden_dim = h[1];
    c->n_layers = h[2];
    c->n_heads = h[3];
    c->n_kv_heads = h[4];
    bool shared = h[5] > 0;
    c->n_vocab = h[5] == INT32_MIN ? 0 : (h[5] > 0 ? h[5] : -h[5]);
    c->n_ctx_train = h[6];
    if (c->n_heads <= 0 || c->dim <= 0 || c->dim % c->n_heads)
        return errorf(err, err_len, "llama2.c header: dim %d is not a positive multiple of n_heads %d", c->dim, c->n_heads);
    c->head_dim = c->dim / c->n_heads;
    c->rope_dim = c->head_dim;
    c->rope_base = 10000.0f;
    c->rope_scale = 1.0f;
    c->rms_eps = 1e-5f;
    if (check_config(c, err, err_len)) return -1;
    uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t kv_dim = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim, V = (uint64_t)c->n_vocab;
    /* all products below are < 2^62 thanks to the bounds of check_config */
    uint64_t floats = V * dim + L * dim + L * dim * dim * 2 + L * kv_dim * dim * 2 + L * dim + L * hid * dim * 3 +
                      dim + (uint64_t)c->n_ctx_train * (uint64_t)c->head_dim + (shared ? 0 : V * dim);
    if (floats > (bin_size - sizeof h) / 4)
        return errorf(err, err_len, "llama2.c checkpoint truncated: the header needs %llu bytes of weights, file has %zu",
                    (unsigned long long)floats * 4, bin_size - sizeof h);
    const float *p = (const float *)(bin + sizeof h);
    m->layers = calloc((size_t)L, sizeof *m->layers);
    if (!m->layers) return errorf(err, err_len, "out of memory");
#define MAT(w, r, cc) ((w) = (weight){p, WICK_TYPE_F32, (int64_t)(r), (int64_t)(cc), (size_t)(cc) * 4}, p += (uint64_t)(r) * (cc))
    MAT(m->tok_embd, V, dim);
    for (uint64_t l = 0; l < L; l++) m->layers[l].attn_norm = p, p += dim;
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].wq, dim, dim);
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].wk, kv_dim, dim);
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].wv, kv_dim, dim);
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].wo, dim, dim);
    for (uint64_t l = 0; l < L; l++) m->layers[l].ffn_norm = p, p += dim;
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].w_gate, hid, dim);
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].w_down, dim, hid);
    for (uint64_t l = 0; l < L; l++) MAT(m->layers[l].w_up, hid, dim);
    m->output_norm = p;
    p += dim;
    p += (uint64_t)c->n_ctx_train * (uint64_t)c->head_dim; /* freq_cis_real and _imag: recomputed */
    if (shared) m->output = m->tok_embd;
    else MAT(m->output, V, dim);
#undef MAT
    m->has_weights = true;
    if (vocab_load_llama2c(&m->vocab, tok, tok_size, c->n_vocab, err, err_len)) {
        model_release(m);
        return -1;
    }
    return 0;
}

void model_release(struct wick_model *m) {
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    if (m->vocab) vocab_free(m->vocab);
    gguf_close(&m->gguf);
    for (int i = 0; i < m->n_shards; i++) gguf_close(&m->shards[i]);
    free(m->shards);
    memset(m, 0, sizeof *m);
}
