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

/* The part of the file that holds tensor t (0: the first). */
static int32_t tensor_part(const struct wick_model *m, const gguf_tensor *t) {
    for (int i = 0; i < m->n_shards; i++)
        if (t >= m->shards[i].tensors && t < m->shards[i].tensors + m->shards[i].n_tensors) return i + 1;
    return 0;
}

static const float *own_f32(struct wick_model *m, const gguf_tensor *t, int64_t n) {
    float *v = malloc((size_t)n * sizeof(float));
    void **list = realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *list);
    if (!v || !list) { free(v); if (list) m->owned = list; return NULL; }
    m->owned = list;
    m->owned[m->n_owned++] = v;
    quant_get(t->type)->to_float(t->data, v, n);
    return v;
}

/* A small tensor of n0 × n1 elements (n1 rows of n0), as F32 (converted and owned when stored otherwise). */
static int bind_floats(struct wick_model *m, const char *name, int64_t n0, int64_t n1, bool optional, const float **out,
                       errmsg *err) {
    const gguf_tensor *t = model_find_tensor(m, name);
    *out = NULL;
    if (!t) return optional ? 0 : errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->ne[0] != (uint64_t)n0 || t->ne[1] != (uint64_t)n1 || t->ne[2] != 1 || t->ne[3] != 1) {
        if (n1 == 1)
            return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%lld, %lld] where [%lld] was expected", name,
                          (long long)t->ne[0], (long long)t->ne[1], (long long)n0);
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%lld, %lld] where [%lld, %lld] was expected", name,
                      (long long)t->ne[0], (long long)t->ne[1], (long long)n0, (long long)n1);
    }
    if (t->outside)
        return errorf(err, WICK_ERR_INVALID_ARG, "tensor %s was left out of the buffers, but the engine reads it at load", name);
    if (t->type == WICK_TYPE_F32 && ((uintptr_t)t->data & 3) == 0) {
        *out = t->data;
        return 0;
    }
    if (quant_get(t->type)->to_float == NULL)
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: type %s cannot be converted", name, quant_get(t->type)->name);
    *out = own_f32(m, t, n0 * n1);
    return *out ? 0 : errorf(err, WICK_ERR_NOMEM, "out of memory converting %s", name);
}

/* A 1-D vector of n elements, as F32. */
static int bind_vector(struct wick_model *m, const char *name, int64_t n, bool optional, const float **out,
                       errmsg *err) {
    return bind_floats(m, name, n, 1, optional, out, err);
}

/* n matrices of [rows][cols] stacked in one tensor of shape [cols, rows, n] (n = 1: a plain matrix) */
static int bind_stack(struct wick_model *m, const char *name, int64_t rows, int64_t cols, int64_t n, bool optional,
                      weight *w, errmsg *err) {
    const gguf_tensor *t = model_find_tensor(m, name);
    memset(w, 0, (size_t)n * sizeof *w);
    if (!t) return optional ? 0 : errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows || t->ne[2] != (uint64_t)n || t->ne[3] != 1)
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%lld, %lld, %lld] where [%lld, %lld, %lld] was expected", name,
                    (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)cols,
                    (long long)rows, (long long)n);
    const quant_type *qt = quant_get(t->type);
    if (!qt->vec_dot || !qt->to_float)
        return errorf(err, WICK_ERR_UNSUPPORTED, "tensor %s: type %s is not supported for weights", name, qt->name);
    /* a weight left out for an external context stands for its tensor by the directory entry's
     * address: distinct per tensor and never read as weights (a per-layer table keeps NULL) */
    bool away = t->outside && m->external_only && !gguf_str_eq(t->name, "per_layer_token_embd.weight");
    for (int64_t i = 0; i < n; i++) {
        w[i].type = t->type;
        w[i].rows = rows;
        w[i].cols = cols;
        w[i].row_bytes = quant_row_size(t->type, cols);
        w[i].outside = away;
        w[i].part = tensor_part(m, t);
        w[i].offset = t->file_offset + (uint64_t)i * (uint64_t)rows * w[i].row_bytes;
        w[i].data = away ? (const void *)t : (const uint8_t *)t->data + (size_t)i * (size_t)rows * w[i].row_bytes;
    }
    return 0;
}

static int bind_matrix(struct wick_model *m, const char *name, int64_t rows, int64_t cols, bool optional,
                       weight *w, errmsg *err) {
    return bind_stack(m, name, rows, cols, 1, optional, w, err);
}

/* the binders above, for the other readers of GGUF tensors (vision.c: an mmproj file) */
int model_bind_floats(struct wick_model *m, const char *name, int64_t n0, int64_t n1, bool optional, const float **out,
                      errmsg *err) {
    return bind_floats(m, name, n0, n1, optional, out, err);
}

int model_bind_matrix(struct wick_model *m, const char *name, int64_t rows, int64_t cols, bool optional, weight *w,
                      errmsg *err) {
    return bind_stack(m, name, rows, cols, 1, optional, w, err);
}

static int by_data(const void *a, const void *b)
{
    const char *x = (*(weight *const *)a)->data, *y = (*(weight *const *)b)->data;
    return x < y ? -1 : x > y;
}

int model_use_cpu_layout(struct wick_model *m)
{
    if (!m->has_weights || !m->is_gguf) return 0;
    enum { PER_LAYER = 21 };
    size_t n = 0, cap = 6 + 2 * (ALTUP_MAX - 1) + (size_t)m->config.n_layers * PER_LAYER;
    weight **ws = malloc(cap * sizeof *ws);
    if (!ws) return -1;
    ws[n++] = &m->tok_embd;
    ws[n++] = &m->output;
    ws[n++] = &m->cls;
    ws[n++] = &m->cls_out;
    ws[n++] = &m->ple_embd;
    ws[n++] = &m->ple_model_proj;
    for (int i = 0; i < ALTUP_MAX - 1; i++) ws[n++] = &m->altup_proj[i], ws[n++] = &m->altup_unembd[i];
    for (int l = 0; l < m->config.n_layers; l++) {
        layer_weights *L = &m->layers[l];
        weight *per[PER_LAYER] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_down, &L->w_up,
                                  &L->sc_in, &L->sc_out, &L->dn_qkv, &L->dn_gate, &L->dn_alpha, &L->dn_beta, &L->dn_out,
                                  &L->ple_gate, &L->ple_proj, &L->altup_router, &L->altup_predict, &L->altup_correct,
                                  &L->laurel_l, &L->laurel_r};
        for (int i = 0; i < PER_LAYER; i++) ws[n++] = per[i];
    }
    /* a tied output is the embedding itself and the views into one fused tensor (phi3) are
     * disjoint row ranges: in address order, whatever starts inside a range already rewritten
     * is that range */
    qsort(ws, n, sizeof *ws, by_data);
    const char *done_end = NULL;
    for (size_t i = 0; i < n; i++) {
        weight *w = ws[i];
        uint32_t t = w->data ? quant_cpu_type(w->type) : w->type;
        if (t == w->type) continue;
        const char *start = w->data, *end = start + (size_t)w->rows * w->row_bytes;
        if (!done_end || start >= done_end) {
            quant_repack(w->type, t, (void *)(uintptr_t)start, (size_t)w->rows * w->row_bytes / quant_get(t)->type_size);
            done_end = end;
        }
        w->type = t;
        m->cpu_layout = true;
    }
    free(ws);
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

static int check_range(const char *what, int64_t v, int64_t lo, int64_t hi, errmsg *err) {
    if (v < lo || v > hi)
        return errorf(err, WICK_ERR_FORMAT, "%s = %lld is out of range (%lld to %lld)", what, (long long)v, (long long)lo,
                    (long long)hi);
    return 0;
}

/* Checks the relations among hyperparameters the forward pass relies on. */
static int check_config(const model_config *c, errmsg *err) {
    if (check_range("embedding length", c->dim, 1, MAX_DIM, err) ||
        check_range("block count", c->n_layers, 1, MAX_LAYERS, err) ||
        check_range("head count", c->n_heads, 1, MAX_HEADS, err) ||
        check_range("KV head count", c->n_kv_heads, 1, c->n_heads, err) ||
        check_range("feed-forward length", c->hidden_dim, 1, 4 * MAX_DIM, err) ||
        check_range("vocabulary size", c->n_vocab, 1, MAX_VOCAB, err) ||
        check_range("context length", c->n_ctx_train, 1, MAX_CTX, err) ||
        check_range("head dimension", c->head_dim, 2, MAX_DIM, err) ||
        check_range("rope dimension", c->rope_dim, 0, c->head_dim, err))
        return -1;
    if (c->n_heads % c->n_kv_heads)
        return errorf(err, WICK_ERR_FORMAT, "head count %d is not a multiple of the KV head count %d", c->n_heads,
                    c->n_kv_heads);
    if (c->rope_dim % 2) return errorf(err, WICK_ERR_FORMAT, "rope dimension %d is odd", c->rope_dim);
    if (!(c->rms_eps > 0 && c->rms_eps < 1)) return errorf(err, WICK_ERR_FORMAT, "RMS epsilon %g out of range", c->rms_eps);
    if (!(c->rope_base > 0 && isfinite(c->rope_base)))
        return errorf(err, WICK_ERR_FORMAT, "rope base %g out of range", c->rope_base);
    if (!(c->rope_scale > 0 && isfinite(c->rope_scale)))
        return errorf(err, WICK_ERR_FORMAT, "rope scaling %g out of range", c->rope_scale);
    if (!(c->rope_attn_factor > 0 && isfinite(c->rope_attn_factor)))
        return errorf(err, WICK_ERR_FORMAT, "rope attention factor %g out of range", c->rope_attn_factor);
    const float scales[] = {c->embd_scale, c->residual_scale, c->attn_scale, c->logit_scale};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
        if (!(isfinite(scales[i]) && scales[i] != 0))
            return errorf(err, WICK_ERR_FORMAT, "a scale multiplier (%g) is 0 or not finite", scales[i]);
    if (c->n_swa < 0 || c->n_swa > MAX_CTX) return errorf(err, WICK_ERR_FORMAT, "sliding window %d out of range", c->n_swa);
    return 0;
}

/* What a family adds to the llama layer, as llama.cpp's loader and graph for it read it
 * (src/llama-model.cpp and src/models/<family>.cpp in llama.cpp's source). Everything else
 * comes from the file's metadata and tensors. */
typedef struct {
    const char *name;
    bool rope_neox;        /* NEOX pairing (llama.cpp's llama_model_rope_type) */
    bool norm_post_only;   /* no attn_norm / ffn_norm before each block, only the norms after (olmo2) */
    bool norm_post;        /* post_attention_norm / post_ffw_norm after each block */
    qk_norm_kind qk_norm;
    ffn_activation act;
    bool embd_scale_sqrt;  /* embeddings × √dim */
    bool biases;           /* attention biases required */
    bool tied_only;        /* the output is always the embedding (no output.weight is read) */
    bool output_required;  /* no output.weight is an error (olmo2), else the output is tied to
                            * token_embd.weight (phi3's Phi-4-mini, as llama.cpp's phi3.cpp falls back) */
    int swa_period;        /* default sliding-window pattern: layer il slides when il % period < period − 1 */
    int32_t swa_default;   /* window when the key is absent (0: no sliding window then) */
    bool swa_base_own;     /* the sliding layers' rope base defaults to 10000, else to rope.freq_base */
    int no_rope_every;     /* layers with (il + 1) % this == 0 are not rotated (0: all rotate) */
    bool softcaps;         /* attn_logit_softcapping and final_logit_softcapping, defaults 50 and 30 */
    bool final_softcap;    /* final_logit_softcapping when present (no default) */
    bool granite_scales;   /* embedding_scale, residual_scale, attention.scale, logit_scale */
    bool ignore_swa;       /* a sliding_window key is present but llama.cpp does not apply it (phi3) */
    bool swa_unscaled;     /* the sliding layers rotate without the file's linear scaling (gemma3, olmo2) */
    layer_kind recurrent;  /* the kind of its recurrent layers (LAYER_ATTENTION: it has none) */
    bool attn_out_gate;    /* attn_q holds each head's query then its output gate (qwen35) */
    const char *output_norm_name; /* the final norm's tensor when not output_norm.weight (lfm2) */
    const char *ffn_norm_name;    /* the norm before the FFN when not ffn_norm.weight (qwen35 calls it
                                   * post_attention_norm: it sits after the attention's residual add) */
    bool yarn_keys;       /* reads YaRN's beta_fast/beta_slow/log multiplier and attention.temperature_scale
                           * (llama.cpp's mistral3 loader; the other families take YaRN's defaults) */
    bool layer_shapes;     /* gemma4: per-layer shapes, KV-shared layers, per-layer embeddings (read_layer_shapes) */
    bool encoder;          /* an encoder (encoder.c): its weights bound by bind_encoder_weights */
    bool altup;            /* gemma3n: AltUp streams, Laurel, the FFN gate's sparsity (read_altup) */
    bool embedding;        /* the decoders' layer, bidirectional, embeddings only (gemma-embedding) */
    bool swa_dense_first;  /* layer il slides when il % period != 0 (llama.cpp's set_swa_pattern dense_first) */
    bool swa_symmetric;    /* sliding windows reach n_swa / 2 either side (LLAMA_SWA_TYPE_SYMMETRIC) */
    mrope_kind mrope;      /* rope.dimension_sections required: M-RoPE (qwen2vl, qwen3vl, qwen35) */
    bool deepstack;        /* <arch>.n_deepstack_layers read (qwen3vl) */
} arch_info;

/* Each row names only what differs from llama; a field left out is 0, false or NULL, which is
 * llama's value (the enums' first members are llama's: checked below). */
static const arch_info archs[] = {
    {.name = "llama"},
    {.name = "qwen2", .rope_neox = true, .biases = true},
    {.name = "qwen3", .rope_neox = true, .qk_norm = QK_NORM_PER_HEAD},
    {.name = "gemma2", .rope_neox = true, .norm_post = true, .act = ACT_GELU_TANH, .embd_scale_sqrt = true,
     .tied_only = true, .swa_period = 2, .swa_default = 4096, .softcaps = true},
    {.name = "gemma3", .rope_neox = true, .norm_post = true, .qk_norm = QK_NORM_PER_HEAD, .act = ACT_GELU_TANH,
     .embd_scale_sqrt = true, .swa_period = 6, .swa_base_own = true, .final_softcap = true, .swa_unscaled = true},
    {.name = "phi3", .rope_neox = true, .ignore_swa = true},
    {.name = "smollm3", .no_rope_every = 4},
    {.name = "granite", .granite_scales = true},
    {.name = "olmo2", .rope_neox = true, .norm_post_only = true, .norm_post = true, .qk_norm = QK_NORM_FULL,
     .output_required = true, .swa_period = 4, .swa_unscaled = true},
    /* hybrids (llama.cpp's src/models/lfm2.cpp, qwen35.cpp): lfm2's convolution layers are those
     * whose KV head count is 0; qwen35's DeltaNet layers come from attention.recurrent_layers or
     * full_attention_interval */
    {.name = "lfm2", .rope_neox = true, .qk_norm = QK_NORM_PER_HEAD, .recurrent = LAYER_SHORTCONV,
     .output_norm_name = "token_embd_norm.weight"},
    {.name = "qwen35", .rope_neox = true, .qk_norm = QK_NORM_PER_HEAD, .recurrent = LAYER_DELTANET,
     .attn_out_gate = true, .ffn_norm_name = "post_attention_norm.weight", .mrope = MROPE_INTERLEAVED},
    /* the Qwen-VL text models (llama.cpp's src/models/qwen2vl.cpp, qwen3vl.cpp): qwen2's and qwen3's
     * layers with M-RoPE, qwen3vl's image rows carrying deepstack rows for its first layers */
    {.name = "qwen2vl", .rope_neox = true, .biases = true, .mrope = MROPE_SECTIONS},
    {.name = "qwen3vl", .rope_neox = true, .qk_norm = QK_NORM_PER_HEAD, .mrope = MROPE_INTERLEAVED, .deepstack = true},
    /* Granite 4.0-H (granite-hybrid.cpp, mamba-base.cpp's build_mamba2_layer): granite's layer and
     * multipliers, Mamba-2 in the layers whose KV head count is 0 */
    {.name = "granitehybrid", .granite_scales = true, .recurrent = LAYER_MAMBA2},
    /* Ministral 3 (llama.cpp's src/models/mistral3.cpp): the llama layer with YaRN and Llama 4's
     * query temperature */
    {.name = "mistral3", .yarn_keys = true},
    /* llama.cpp's src/models/gemma4.cpp (dense E2B/E4B; its MoE files are refused by expert_count):
     * the sliding layers come from the sliding_window_pattern array */
    {.name = "gemma4", .rope_neox = true, .norm_post = true, .qk_norm = QK_NORM_PER_HEAD, .act = ACT_GELU_TANH,
     .embd_scale_sqrt = true, .swa_period = 1, .swa_base_own = true, .final_softcap = true, .swa_unscaled = true,
     .layer_shapes = true},
    /* encoders (llama.cpp's src/models/bert.cpp): learned positions and token types, LayerNorms
     * with biases after each block, a GELU FFN without a gate, bidirectional attention */
    {.name = "bert", .act = ACT_GELU_TANH, .encoder = true},
    /* llama.cpp's src/models/gemma3n.cpp: gemma4's layer (one head size, no rope_freqs) with AltUp
     * around it, Laurel beside attention and a sparse FFN gate in the first layers */
    {.name = "gemma3n", .rope_neox = true, .norm_post = true, .qk_norm = QK_NORM_PER_HEAD, .act = ACT_GELU_TANH,
     .embd_scale_sqrt = true, .swa_period = 1, .swa_base_own = true, .final_softcap = true, .swa_unscaled = true,
     .layer_shapes = true, .altup = true},
    /* nomic-bert.cpp (bert.cpp's graph): rotary positions in place of the position table, SwiGLU */
    {.name = "nomic-bert", .rope_neox = true, .encoder = true},
    /* modern-bert.cpp: pre-norm LayerNorms without biases, GeGLU from one ffn_up, and every third
     * layer (from the first) global, the others attending within a symmetric window with their
     * own rope base */
    {.name = "modern-bert", .rope_neox = true, .act = ACT_GELU_TANH, .encoder = true, .swa_period = 3, .swa_base_own = true,
     .swa_dense_first = true, .swa_symmetric = true},
    /* gemma-embedding.cpp: gemma3's layer, bidirectional, its sliding layers' window symmetric;
     * dense_2 / dense_3 after pooling (llama-graph.cpp's build_dense_out) */
    {.name = "gemma-embedding", .rope_neox = true, .norm_post = true, .qk_norm = QK_NORM_PER_HEAD, .act = ACT_GELU_TANH,
     .embd_scale_sqrt = true, .swa_period = 6, .swa_base_own = true, .swa_unscaled = true, .embedding = true,
     .swa_symmetric = true},
};
_Static_assert(QK_NORM_NONE == 0 && ACT_SILU == 0 && LAYER_ATTENTION == 0, "a family left out of a switch is llama");

static const arch_info *arch_find(gguf_str name) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (gguf_str_eq(name, archs[i].name)) return &archs[i];
    return NULL;
}

/* The names, for messages: "llama, qwen2, …" */
static const char *arch_names(void) {
    static char list[512];
    if (!list[0])
        for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", archs[i].name);
    return list;
}

/* The model's name for a message, from general.name and general.size_label ("Gemma 4 26B A4B It,
 * 26B-A4B"), or "" when the file has neither: out holds at most size bytes. */
static const char *model_label(const gguf_file *g, char *out, size_t size) {
    gguf_str name = {0}, label = {0};
    const bool has_name = gguf_get_str(g, "general.name", &name) && name.len > 0;
    const bool has_label = gguf_get_str(g, "general.size_label", &label) && label.len > 0;
    const int n = (int)(name.len < 80 ? name.len : 80), l = (int)(label.len < 24 ? label.len : 24);
    if (has_name && has_label) snprintf(out, size, " (%.*s, %.*s)", n, name.ptr, l, label.ptr);
    else if (has_name || has_label) snprintf(out, size, " (%.*s)", has_name ? n : l, has_name ? name.ptr : label.ptr);
    else out[0] = 0;
    return out;
}

static const arch_info *model_arch(const struct wick_model *m) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(m->config.arch, archs[i].name)) return &archs[i];
    return &archs[0];
}

/* A float key of the architecture, or def when absent; refused when not finite. */
static int meta_float_or(const gguf_file *g, const char *arch, const char *suffix, double def, float *out, errmsg *err) {
    double f = def;
    if (meta_float(g, arch, suffix, &f) && !isfinite(f))
        return errorf(err, WICK_ERR_FORMAT, "metadata %s.%s = %g is not finite", arch, suffix, f);
    *out = (float)f;
    return 0;
}

/* The plain llama layer: no extra scales, caps, windows or norms. */
static void config_defaults(model_config *c) {
    c->rope_base = c->rope_base_swa = 10000.0f;
    c->rope_scale = c->rope_scale_swa = c->rope_attn_factor = 1.0f;
    c->rms_eps = 1e-5f;
    c->act = ACT_SILU;
    c->qk_norm = QK_NORM_NONE;
    c->embd_scale = c->residual_scale = c->logit_scale = 1.0f;
    c->attn_softcap = c->final_softcap = 0;
    c->n_swa = 0;
    c->causal = true;
    c->pooling = POOL_UNSPECIFIED; /* a generative model: no embeddings */
}

/* Per-layer switches, once n_layers is known and checked. */
static int alloc_layers(struct wick_model *m, errmsg *err) {
    if (m->config.n_layers < 1 || m->config.n_layers > MAX_LAYERS)
        return errorf(err, WICK_ERR_FORMAT, "block count = %d is out of range (1 to %d)", m->config.n_layers, MAX_LAYERS);
    m->layers = calloc((size_t)m->config.n_layers, sizeof *m->layers);
    if (!m->layers) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    for (int l = 0; l < m->config.n_layers; l++)
        m->layers[l].rotate = true, m->layers[l].kv_layer = l, m->layers[l].ffn_sparsity = -INFINITY;
    return 0;
}

/* The hybrids' recurrent hyperparameters (llama.cpp's llama-arch.cpp key names). */
static int read_hybrid_config(const gguf_file *g, const char *a, const arch_info *ai, model_config *c, errmsg *err) {
    int64_t v;
    c->attn_out_gate = ai->attn_out_gate;
    if (ai->recurrent == LAYER_SHORTCONV) {
        if (!meta_int(g, a, "shortconv.l_cache", &v)) return errorf(err, WICK_ERR_FORMAT, "metadata %s.shortconv.l_cache is missing", a);
        if (v < 2 || v > 64) return errorf(err, WICK_ERR_FORMAT, "%s.shortconv.l_cache = %lld out of range (2 to 64)", a, (long long)v);
        c->conv_kernel = (int32_t)v;
        /* llama.cpp gives a sliding window to every attention layer of an lfm2 that has one: not here yet */
        if (meta_int(g, a, "attention.sliding_window", &v) && v > 0)
            return errorf(err, WICK_ERR_UNSUPPORTED, "%s.attention.sliding_window = %lld: a sliding window on lfm2 is not supported", a, (long long)v);
        return 0;
    }
    const char *keys[] = {"ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size"};
    /* DeltaNet: value heads of ssm.state_size, inner = heads × state; Mamba-2: heads of
     * inner / heads, B and C per group of heads, inner = 2·dim (all llama.cpp's loader supports) */
    int64_t vals[5];
    for (int i = 0; i < 5; i++) {
        if (!meta_int(g, a, keys[i], &vals[i])) return errorf(err, WICK_ERR_FORMAT, "metadata %s.%s is missing", a, keys[i]);
        if (vals[i] < 1 || vals[i] > MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "%s.%s = %lld out of range", a, keys[i], (long long)vals[i]);
    }
    c->conv_kernel = (int32_t)vals[0];
    c->ssm_state = (int32_t)vals[1];
    c->ssm_k_heads = (int32_t)vals[2];
    c->ssm_v_heads = (int32_t)vals[3];
    if (c->conv_kernel < 2 || c->conv_kernel > 64) return errorf(err, WICK_ERR_FORMAT, "%s.ssm.conv_kernel = %d out of range (2 to 64)", a, c->conv_kernel);
    if (c->ssm_state > 1024) return errorf(err, WICK_ERR_FORMAT, "%s.ssm.state_size = %d out of range (1 to 1024)", a, c->ssm_state);
    if (c->ssm_v_heads % c->ssm_k_heads)
        return errorf(err, WICK_ERR_FORMAT, "%d value heads is not a multiple of %d key heads", c->ssm_v_heads, c->ssm_k_heads);
    if (ai->recurrent == LAYER_MAMBA2) {
        c->ssm_inner = (int32_t)vals[4];
        if (vals[4] != 2 * (int64_t)c->dim || vals[4] % c->ssm_v_heads)
            return errorf(err, WICK_ERR_FORMAT, "%s.ssm.inner_size %lld is not 2 x %d split into %d heads (unsupported)", a,
                          (long long)vals[4], c->dim, c->ssm_v_heads);
        return 0;
    }
    /* llama.cpp takes the value head size as inner_size / time_step_rank and requires it to be the key head size */
    if (vals[4] != (int64_t)c->ssm_v_heads * c->ssm_state)
        return errorf(err, WICK_ERR_UNSUPPORTED, "%s.ssm.inner_size %lld is not %d value heads of %d (unsupported)", a, (long long)vals[4],
                      c->ssm_v_heads, c->ssm_state);
    if ((int64_t)c->ssm_v_heads * c->ssm_state > 4 * (int64_t)MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "DeltaNet of %d heads of %d is out of range", c->ssm_v_heads, c->ssm_state);
    return 0;
}

/* Which layers are recurrent: lfm2's and granitehybrid's have 0 KV heads (kv_arr, the per-layer list); qwen35's
 * are listed in attention.recurrent_layers, else all but every full_attention_interval-th. */
static int read_layer_kinds(struct wick_model *m, const arch_info *ai, const gguf_kv *kv_arr, errmsg *err) {
    model_config *c = &m->config;
    const gguf_file *g = &m->gguf;
    char key[128];
    if (ai->recurrent != LAYER_DELTANET) {
        for (int l = 0; l < c->n_layers; l++)
            m->layers[l].kind = kv_arr && kv_arr->type == GGUF_ARRAY && gguf_arr_i64(kv_arr, (uint64_t)l) == 0 ? ai->recurrent
                                                                                                            : LAYER_ATTENTION;
    } else {
        snprintf(key, sizeof key, "%s.attention.recurrent_layers", c->arch);
        const gguf_kv *list = gguf_find(g, key);
        int64_t interval = 4; /* llama.cpp's default */
        if (list && (list->type != GGUF_ARRAY || list->arr_type == GGUF_STRING || list->arr_type == GGUF_ARRAY ||
                     list->arr_len < (uint64_t)c->n_layers))
            return errorf(err, WICK_ERR_FORMAT, "%s must be an array of %d flags", key, c->n_layers);
        if (!list && meta_int(g, c->arch, "full_attention_interval", &interval) && (interval < 1 || interval > MAX_LAYERS))
            return errorf(err, WICK_ERR_FORMAT, "%s.full_attention_interval = %lld out of range", c->arch, (long long)interval);
        for (int l = 0; l < c->n_layers; l++) {
            bool recurrent = list ? gguf_arr_i64(list, (uint64_t)l) != 0 : (l + 1) % interval != 0;
            m->layers[l].kind = recurrent ? LAYER_DELTANET : LAYER_ATTENTION;
        }
    }
    c->n_recurrent = 0;
    for (int l = 0; l < c->n_layers; l++) c->n_recurrent += m->layers[l].kind != LAYER_ATTENTION;
    return 0;
}

int32_t model_conv_channels(const model_config *c, layer_kind kind) {
    if (kind == LAYER_SHORTCONV) return c->dim;
    if (kind == LAYER_DELTANET) return (2 * c->ssm_k_heads + c->ssm_v_heads) * c->ssm_state;
    if (kind == LAYER_MAMBA2) return c->ssm_inner + 2 * c->ssm_k_heads * c->ssm_state;
    return 0;
}

/* The steps of the forward pass this model takes beyond plain llama's (forward.c's switches), by
 * name. Another backend (the GPU path) runs a model only if it implements every one: a switch
 * added here without it keeps the model off that backend instead of running it as llama.
 * tests/structure.test.mjs fails if a field of model_config or layer_weights is named neither
 * here nor in its list of plain shape fields. */
int model_steps(const struct wick_model *m, const char **names, int cap) {
    const model_config *c = &m->config;
    int n = 0;
#define STEP(cond, name)                        \
    do {                                        \
        if (cond) {                             \
            if (n < cap) names[n] = name;       \
            n++;                                \
        }                                       \
    } while (0)
    bool bias = false, qk = false, post_attn = false, post_ffn = false, no_norm = false, unrotated = false,
         sliding = false, kv_shared = false, out_scale = false, sparse = false;
    int kinds = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        bias |= w->bq || w->bk || w->bv;
        qk |= w->attn_q_norm || w->attn_k_norm;
        post_attn |= w->attn_post_norm != NULL;
        post_ffn |= w->ffn_post_norm != NULL;
        no_norm |= (w->kind == LAYER_ATTENTION && !w->attn_norm) || !w->ffn_norm;
        unrotated |= w->kind == LAYER_ATTENTION && !w->rotate;
        sliding |= w->sliding;
        kv_shared |= w->kv_layer != l;
        out_scale |= w->out_scale != NULL;
        sparse |= w->ffn_sparsity > -INFINITY;
        kinds |= 1 << w->kind;
    }
    STEP(c->rope_neox, "rope_neox");
    STEP(c->rope_dim != c->head_dim, "partial_rope");
    STEP(m->rope_freqs, "rope_freqs");
    STEP(c->rope_freqs_full, "rope_freqs_full_layers");
    STEP(m->rope_factors_short || m->rope_factors_long, "rope_factors");
    STEP(c->rope_scale != 1.0f || c->rope_scale_swa != 1.0f, "rope_scale");
    STEP(c->rope_attn_factor != 1.0f || c->rope_attn_factor_swa != 1.0f, "rope_attn_factor");
    STEP(c->rope_yarn, "rope_yarn");
    STEP(c->attn_temp_scale != 0, "attn_temp_scale");
    STEP(c->act == ACT_GELU_TANH, "gelu_tanh");
    STEP(qk && c->qk_norm == QK_NORM_PER_HEAD, "qk_norm_per_head");
    STEP(qk && c->qk_norm == QK_NORM_FULL, "qk_norm_full");
    STEP(bias, "attn_bias");
    STEP(post_attn, "attn_post_norm");
    STEP(post_ffn, "ffn_post_norm");
    STEP(no_norm, "no_pre_norm");
    STEP(unrotated, "unrotated_layers");
    STEP(c->embd_scale != 1.0f, "embd_scale");
    STEP(c->residual_scale != 1.0f, "residual_scale");
    STEP(c->attn_scale != 1.0f / sqrtf((float)c->head_dim), "attn_scale");
    STEP(c->attn_softcap != 0, "attn_softcap");
    STEP(c->final_softcap != 0, "final_softcap");
    STEP(c->logit_scale != 1.0f, "logit_scale");
    STEP(sliding, "sliding_window");
    STEP(sliding && c->rope_base_swa != c->rope_base, "rope_base_swa");
    STEP(m->fused_qkv, "fused_qkv");
    STEP(m->fused_gate_up, "fused_gate_up");
    STEP(m->output.data && m->output.data == m->tok_embd.data, "tied_output");
    STEP(m->layer_c, "layer_shapes");
    STEP(kv_shared, "kv_shared_layers");
    STEP(c->v_norm, "v_norm");
    STEP(c->n_ple > 0, "per_layer_embeddings");
    STEP(out_scale, "layer_output_scale");
    STEP(c->n_altup > 0, "altup");
    STEP(c->laurel_rank > 0, "laurel");
    STEP(sparse, "activation_sparsity");
    STEP(c->attn_out_gate, "attn_out_gate");
    STEP(kinds & (1 << LAYER_SHORTCONV), "shortconv");
    STEP(kinds & (1 << LAYER_DELTANET), "deltanet");
    STEP(kinds & (1 << LAYER_MAMBA2), "mamba2");
    /* embedding models: encoder (embeddings, no logits; the pooling and n_token_types are
     * encoder.c's), the bert lineage's LayerNorm layers and biases (bo, ffn_up_b, ffn_down_b,
     * attn_post_norm_b, ffn_post_norm_b), attention without the causal mask, symmetric windows,
     * the projections after pooling */
    STEP(c->encoder, "encoder");
    STEP(c->layernorm, "layernorm");
    STEP(!c->causal, "bidirectional");
    STEP(sliding && c->swa_symmetric, "sliding_window_symmetric");
    STEP(m->dense_2.data || m->dense_3.data, "dense_out");
    STEP(c->pooling == POOL_RANK, "rank_head"); /* a reranker's score: its classification head over the pooled row */
#undef STEP
    return n;
}

size_t model_layer_state_floats(const struct wick_model *m, int l) {
    const model_config *c = &m->config;
    layer_kind kind = m->layers[l].kind;
    if (kind == LAYER_ATTENTION) return 0;
    size_t conv = (size_t)(c->conv_kernel - 1) * (size_t)model_conv_channels(c, kind);
    if (kind == LAYER_SHORTCONV) return conv;
    if (kind == LAYER_MAMBA2) return conv + (size_t)c->ssm_inner * (size_t)c->ssm_state; /* d_state per channel of x */
    return conv + (size_t)c->ssm_v_heads * (size_t)c->ssm_state * (size_t)c->ssm_state;
}

/* YaRN (rope.scaling.type yarn) as llama.cpp sets it up (llama-context.cpp, ggml's rope_yarn): the
 * ramp's ends beta_fast/beta_slow (defaults 32 and 1), and the magnitude of the rotated q and k,
 * mscale = m(s, 1) / m(s, log_mul) with m(s, x) = 1 + 0.1·x·ln s for the factor s = 1/scale (m(s, 1)
 * alone without a log multiplier), times rope.scaling.attn_factor. llama.cpp divides that by
 * 1 + 0.1·ln s and its rope multiplies it back for each table's own scale: the sliding layers' are
 * kept apart. Mistral 3 also scales its queries by position (attention.temperature_scale). */
static int read_yarn(const gguf_file *g, const char *a, const arch_info *ai, model_config *c, errmsg *err) {
    c->yarn_beta_fast = 32.0f;
    c->yarn_beta_slow = 1.0f;
    c->attn_temp_scale = 0.0f;
    c->rope_attn_factor_swa = c->rope_attn_factor;
    float log_mul = 0.0f;
    if (ai->yarn_keys &&
        (meta_float_or(g, a, "rope.scaling.yarn_beta_fast", 32.0, &c->yarn_beta_fast, err) ||
         meta_float_or(g, a, "rope.scaling.yarn_beta_slow", 1.0, &c->yarn_beta_slow, err) ||
         meta_float_or(g, a, "rope.scaling.yarn_log_multiplier", 0.0, &log_mul, err) ||
         meta_float_or(g, a, "attention.temperature_scale", 0.0, &c->attn_temp_scale, err)))
        return -1;
    if (!isfinite(c->yarn_beta_fast) || !isfinite(c->yarn_beta_slow) || !isfinite(log_mul) || !isfinite(c->attn_temp_scale))
        return errorf(err, WICK_ERR_FORMAT, "YaRN parameters out of range");
    if (!c->rope_yarn) return 0;
    float s = 1.0f / c->rope_scale;
#define YARN_M(x) (s <= 1.0f ? 1.0f : 0.1f * (x) * logf(s) + 1.0f)
    float attn = log_mul != 0.0f ? YARN_M(1.0f) / YARN_M(log_mul) : YARN_M(1.0f);
#undef YARN_M
    attn *= 1.0f / (1.0f + 0.1f * logf(s));
    attn *= c->rope_attn_factor;
    c->rope_attn_factor = attn * (1.0f + 0.1f * logf(1.0f / c->rope_scale));
    c->rope_attn_factor_swa = attn * (1.0f + 0.1f * logf(1.0f / c->rope_scale_swa));
    return 0;
}

/* M-RoPE (qwen2vl, qwen3vl, qwen35): rope.dimension_sections, up to four counts of rotated pairs
 * (llama.cpp's get_key_or_arr, required; ggml's rope_multi takes their sum up to the head size);
 * qwen3vl: n_deepstack_layers (optional, 0). */
static int read_mrope(const gguf_file *g, const char *a, const arch_info *ai, model_config *c, errmsg *err) {
    c->mrope = ai->mrope;
    if (ai->mrope == MROPE_NONE) return 0;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", a);
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return errorf(err, WICK_ERR_FORMAT, "metadata %s is missing (M-RoPE's sections)", key);
    if (kv->type != GGUF_ARRAY || kv->arr_type == GGUF_STRING || kv->arr_type == GGUF_ARRAY || kv->arr_len < 1 ||
        kv->arr_len > 4)
        return errorf(err, WICK_ERR_FORMAT, "%s: not an array of 1 to 4 numbers", key);
    int64_t sum = 0;
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        int64_t v = gguf_arr_i64(kv, i);
        if (v < 0 || v > c->head_dim) return errorf(err, WICK_ERR_FORMAT, "%s[%llu] = %lld out of range", key, (unsigned long long)i, (long long)v);
        c->rope_sections[i] = (int32_t)v;
        sum += v;
    }
    if (sum < 1 || sum > c->head_dim)
        return errorf(err, WICK_ERR_FORMAT, "%s: %lld rotated pairs in all (1 … the head size %d)", key, (long long)sum, c->head_dim);
    int64_t v;
    if (ai->deepstack && meta_int(g, a, "n_deepstack_layers", &v)) {
        if (check_range("n_deepstack_layers", v, 0, c->n_layers, err)) return -1;
        c->n_deepstack = (int32_t)v;
    }
    return 0;
}

/* Layer l's value of a count given as one number for every layer or as an array of n (llama.cpp's
 * get_key_or_arr); def when the key is absent (< 0: it is required). */
static int layer_count(const gguf_file *g, const char *a, const char *suffix, int l, int n, int64_t def, int64_t hi,
                       int32_t *out, errmsg *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", a, suffix);
    const gguf_kv *kv = gguf_find(g, key);
    int64_t v = def;
    if (kv && kv->type == GGUF_ARRAY) {
        if (kv->arr_type == GGUF_STRING || kv->arr_type == GGUF_ARRAY || kv->arr_len != (uint64_t)n)
            return errorf(err, WICK_ERR_FORMAT, "%s: %llu entries where block_count is %d", key, (unsigned long long)kv->arr_len, n);
        v = gguf_arr_i64(kv, (uint64_t)l);
    } else if (kv && !gguf_get_i64(g, key, &v)) {
        return errorf(err, WICK_ERR_FORMAT, "metadata %s is not a number", key);
    } else if (!kv && def < 0) {
        return errorf(err, WICK_ERR_FORMAT, "metadata %s is missing", key);
    }
    if (v < 1 || v > hi) return errorf(err, WICK_ERR_FORMAT, "%s = %lld (layer %d) out of range (1 to %lld)", key, (long long)v, l, (long long)hi);
    *out = (int32_t)v;
    return 0;
}

/* gemma4, as llama.cpp reads it (llama_model_gemma4::load_arch_hparams, the per-layer head sizes
 * of llama-hparams.cpp and the KV reuse of llama-model.cpp's create_memory): the sliding layers
 * from attention.sliding_window_pattern (one flag per layer), with their own head size
 * (attention.key_length_swa) and rotated dimensions (rope.dimension_count_swa); KV heads and
 * FFN widths per layer (head_count_kv, feed_forward_length: a number or an array, the converter
 * doubling the FFN of the KV-shared layers where use_double_wide_mlp is set); the last
 * attention.shared_kv_layers layers keep no cache and read that of layer
 * n_layers − shared − 2 (sliding) or − 1 (full); per-layer embeddings of
 * embedding_length_per_layer_input values; attention scale 1; V normed; rope_freqs on the
 * full layers only. m->layer_c gets each layer's shape, c the largest. */
static int read_layer_shapes(struct wick_model *m, const gguf_kv *pat, errmsg *err) {
    model_config *c = &m->config;
    const gguf_file *g = &m->gguf;
    const char *a = c->arch;
    int n = c->n_layers;
    int64_t hd_swa, vd_swa, rot_swa = c->rope_dim, shared = 0, n_ple;
    if (!pat || pat->type != GGUF_ARRAY || pat->arr_type == GGUF_STRING || pat->arr_type == GGUF_ARRAY ||
        pat->arr_len != (uint64_t)n)
        return errorf(err, WICK_ERR_FORMAT, "%s.attention.sliding_window_pattern must be an array of %d flags", a, n);
    if (c->n_swa < 1) return errorf(err, WICK_ERR_FORMAT, "metadata %s.attention.sliding_window is missing or 0", a);
    bool has_swa_len = meta_int(g, a, "attention.key_length_swa", &hd_swa) && meta_int(g, a, "attention.value_length_swa", &vd_swa);
    if (!has_swa_len && !model_arch(m)->altup) /* gemma3n's layers share one head size */
        return errorf(err, WICK_ERR_FORMAT, "metadata %s.attention.key_length_swa or value_length_swa is missing", a);
    if (!has_swa_len) hd_swa = vd_swa = c->head_dim;
    if (hd_swa != vd_swa || hd_swa < 2 || hd_swa > MAX_DIM || hd_swa % 2)
        return errorf(err, WICK_ERR_FORMAT, "sliding head size %lld (value %lld) is unsupported", (long long)hd_swa, (long long)vd_swa);
    if (meta_int(g, a, "rope.dimension_count_swa", &rot_swa) && (rot_swa < 0 || rot_swa > hd_swa || rot_swa % 2))
        return errorf(err, WICK_ERR_FORMAT, "sliding rope dimension %lld out of range", (long long)rot_swa);
    if (meta_int(g, a, "attention.shared_kv_layers", &shared) && (shared < 0 || (shared > 0 && shared > n - 2)))
        return errorf(err, WICK_ERR_FORMAT, "%s.attention.shared_kv_layers = %lld out of range (0 to %d)", a, (long long)shared, n - 2);
    if (!meta_int(g, a, "embedding_length_per_layer_input", &n_ple))
        return errorf(err, WICK_ERR_FORMAT, "metadata %s.embedding_length_per_layer_input is missing", a);
    if (n_ple < 0 || n_ple > MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "per-layer embedding length %lld out of range", (long long)n_ple);
    c->n_ple = (int32_t)n_ple;
    c->rope_dim_swa = (int32_t)rot_swa;
    c->attn_scale = 1.0f;
    c->v_norm = true;
    c->rope_freqs_full = !strcmp(a, "gemma4");
    m->layer_c = malloc((size_t)n * sizeof *m->layer_c);
    if (!m->layer_c) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    int32_t hd_full = c->head_dim, kv_max = 0, ff_max = 0, hd_max = hd_full > hd_swa ? hd_full : (int32_t)hd_swa;
    int from = n - (int)shared; /* the first layer without a cache of its own */
    for (int l = 0; l < n; l++) {
        layer_weights *w = &m->layers[l];
        model_config *lc = &m->layer_c[l];
        w->sliding = gguf_arr_i64(pat, (uint64_t)l) != 0;
        *lc = *c;
        if (layer_count(g, a, "attention.head_count_kv", l, n, c->n_heads, c->n_heads, &lc->n_kv_heads, err) ||
            layer_count(g, a, "feed_forward_length", l, n, -1, 4 * (int64_t)MAX_DIM, &lc->hidden_dim, err))
            return -1;
        if (c->n_heads % lc->n_kv_heads)
            return errorf(err, WICK_ERR_FORMAT, "layer %d: head count %d is not a multiple of its KV head count %d", l, c->n_heads, lc->n_kv_heads);
        lc->head_dim = w->sliding ? (int32_t)hd_swa : hd_full;
        lc->rope_dim = w->sliding ? (int32_t)rot_swa : c->rope_dim;
        lc->q_dim = c->n_heads * lc->head_dim;
        if (lc->n_kv_heads > kv_max) kv_max = lc->n_kv_heads;
        if (lc->hidden_dim > ff_max) ff_max = lc->hidden_dim;
        if (l >= from) {
            w->kv_layer = from - (w->sliding ? 2 : 1);
            if (m->layers[w->kv_layer].sliding != w->sliding)
                return errorf(err, WICK_ERR_FORMAT, "layer %d would share the KV cache of layer %d, which is not of its kind (unsupported)", l,
                              w->kv_layer);
        }
    }
    for (int l = from; l < n; l++) /* a shared cache has the shape of its layer */
        if (m->layer_c[l].n_kv_heads != m->layer_c[m->layers[l].kv_layer].n_kv_heads)
            return errorf(err, WICK_ERR_FORMAT, "layer %d has %d KV heads, the layer whose cache it reads %d", l, m->layer_c[l].n_kv_heads,
                          m->layer_c[m->layers[l].kv_layer].n_kv_heads);
    if ((int64_t)c->n_heads * hd_max > 4 * (int64_t)MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "%d heads of %d is out of range", c->n_heads, hd_max);
    c->n_kv_heads = kv_max;
    c->hidden_dim = ff_max;
    c->head_dim = hd_max;
    c->q_dim = c->n_heads * hd_max;
    return 0;
}

/* gemma3n as llama.cpp reads it (llama-hparams.h's defaults, src/models/gemma3n.cpp) and its converter
 * writes it (conversion/gemma.py, Gemma3NModel): altup.num_inputs streams (4), the layers computing on
 * stream altup.active_idx (0); layer l's FFN gate sparse where activation_sparsity_scale[l], the
 * normal quantile of the layer's sparsity, is finite (the converter writes −inf for the dense
 * layers; without the key, llama.cpp's fixed choice: the first 10 layers at the 95th percentile). */
#define GEMMA3N_SPARSE_LAYERS 10
#define GEMMA3N_SPARSE_STD 1.6448533535003662 /* the standard normal's quantile of 0.95 */
static int read_altup(struct wick_model *m, errmsg *err) {
    model_config *c = &m->config;
    const char *a = c->arch;
    int64_t n = 4, act = 0;
    meta_int(&m->gguf, a, "altup.num_inputs", &n);
    meta_int(&m->gguf, a, "altup.active_idx", &act);
    if (n < 2 || n > ALTUP_MAX || act < 0 || act >= n)
        return errorf(err, WICK_ERR_FORMAT, "AltUp of %lld streams, stream %lld active, is out of range (2 to %d streams)", (long long)n,
                      (long long)act, ALTUP_MAX);
    c->n_altup = (int32_t)n;
    c->altup_active = (int32_t)act;
    char key[128];
    snprintf(key, sizeof key, "%s.activation_sparsity_scale", a);
    const gguf_kv *kv = gguf_find(&m->gguf, key);
    if (kv && (kv->type != GGUF_ARRAY || kv->arr_type == GGUF_STRING || kv->arr_type == GGUF_ARRAY || kv->arr_len != (uint64_t)c->n_layers))
        return errorf(err, WICK_ERR_FORMAT, "%s must be an array of %d numbers", key, c->n_layers);
    for (int l = 0; l < c->n_layers; l++) {
        double q = kv ? gguf_arr_f64(kv, (uint64_t)l) : l < GEMMA3N_SPARSE_LAYERS ? GEMMA3N_SPARSE_STD : -INFINITY;
        if (isnan(q) || q == INFINITY) return errorf(err, WICK_ERR_FORMAT, "%s[%d] = %g is not a quantile", key, l, q);
        m->layers[l].ffn_sparsity = (float)q;
    }
    return 0;
}

static int read_gguf_config(struct wick_model *m, errmsg *err) {
    const gguf_file *g = &m->gguf;
    model_config *c = &m->config;
    const arch_info *ai = model_arch(m);
    const char *a = c->arch;
    int64_t v;
    double f;
    char key[128];
    config_defaults(c);
#define REQUIRE_INT(field, suffix)                                                          \
    do {                                                                                    \
        if (!meta_int(g, a, suffix, &v)) return errorf(err, WICK_ERR_FORMAT, "metadata %s.%s is missing", a, suffix); \
        if (v < 0 || v > INT32_MAX) return errorf(err, WICK_ERR_FORMAT, "metadata %s.%s = %lld out of range", a, suffix, (long long)v); \
        c->field = (int32_t)v;                                                              \
    } while (0)
    REQUIRE_INT(dim, "embedding_length");
    REQUIRE_INT(n_layers, "block_count");
    REQUIRE_INT(n_heads, "attention.head_count");
    if (!ai->layer_shapes) REQUIRE_INT(hidden_dim, "feed_forward_length"); /* gemma4's: read_layer_shapes */
    REQUIRE_INT(n_ctx_train, "context_length");
#undef REQUIRE_INT
    /* nextn_predict_layers: trailing blocks for multi-token prediction (Qwen3.5's MTP head), which
     * llama.cpp loads only for speculative drafting and never runs in the main pass: left out */
    int32_t n_blocks = c->n_layers;
    if (meta_int(g, a, "nextn_predict_layers", &v) && v != 0) {
        if (v < 0 || v >= c->n_layers)
            return errorf(err, WICK_ERR_FORMAT, "%s.nextn_predict_layers = %lld out of range (block_count %d)", a, (long long)v, c->n_layers);
        c->n_layers -= (int32_t)v;
    }
    /* mixtures of experts route each token through some of several FFNs: not this forward pass.
     * Gemma 4's (26B-A4B) is also far beyond wasm32's 4 GiB: said by name */
    if (meta_int(g, a, "expert_count", &v) && v > 0) {
        char label[128];
        return errorf(err, WICK_ERR_UNSUPPORTED, "%s%s is a mixture-of-experts model (%s.expert_count = %lld): not supported%s", a,
                      model_label(g, label, sizeof label), a, (long long)v,
                      strcmp(a, "gemma4") ? "" : "; Gemma 4's mixture of experts (26B-A4B) would not fit wasm32 either");
    }
    if (c->n_heads < 1) return errorf(err, WICK_ERR_FORMAT, "head count %d out of range", c->n_heads);
    snprintf(key, sizeof key, "%s.attention.head_count_kv", a);
    const gguf_kv *kv_arr = gguf_find(g, key);
    c->n_kv_heads = c->n_heads;
    if (kv_arr && kv_arr->type == GGUF_ARRAY && !ai->layer_shapes) {
        /* lfm2, granitehybrid: one count per layer, 0 marking a recurrent layer; the attention layers must agree */
        if (ai->recurrent != LAYER_SHORTCONV && ai->recurrent != LAYER_MAMBA2)
            return errorf(err, WICK_ERR_UNSUPPORTED, "%s is an array (a KV head count per layer): not supported", key);
        if (kv_arr->arr_type == GGUF_STRING || kv_arr->arr_type == GGUF_ARRAY || kv_arr->arr_len != (uint64_t)n_blocks)
            return errorf(err, WICK_ERR_FORMAT, "%s: %llu entries where block_count is %d", key, (unsigned long long)kv_arr->arr_len,
                          n_blocks);
        int64_t common = 0;
        for (uint64_t l = 0; l < (uint64_t)c->n_layers; l++) {
            int64_t n = gguf_arr_i64(kv_arr, l);
            if (n < 0 || n > c->n_heads) return errorf(err, WICK_ERR_FORMAT, "%s[%llu] = %lld out of range", key, (unsigned long long)l, (long long)n);
            if (n && common && n != common)
                return errorf(err, WICK_ERR_UNSUPPORTED, "%s: attention layers with %lld and %lld KV heads (unsupported)", key, (long long)common, (long long)n);
            if (n) common = n;
        }
        if (common) c->n_kv_heads = (int32_t)common;
    } else if (meta_int(g, a, "attention.head_count_kv", &v)) {
        if (v < 1 || v > c->n_heads) return errorf(err, WICK_ERR_FORMAT, "KV head count %lld out of range", (long long)v);
        c->n_kv_heads = (int32_t)v;
    }
    /* head size: attention.key_length where present (qwen3, gemma), else embedding / heads */
    c->head_dim = c->dim % c->n_heads == 0 ? c->dim / c->n_heads : 0;
    if (meta_int(g, a, "attention.key_length", &v)) {
        if (v < 1 || v > MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "attention.key_length %lld out of range", (long long)v);
        c->head_dim = (int32_t)v;
    }
    if (c->head_dim == 0)
        return errorf(err, WICK_ERR_FORMAT, "embedding length %d is not a multiple of the head count %d", c->dim, c->n_heads);
    if (meta_int(g, a, "attention.value_length", &v) && v != c->head_dim)
        return errorf(err, WICK_ERR_UNSUPPORTED, "attention.value_length %lld differs from key_length %d (unsupported)", (long long)v,
                      c->head_dim);
    if ((int64_t)c->n_heads * c->head_dim > 4 * (int64_t)MAX_DIM)
        return errorf(err, WICK_ERR_FORMAT, "%d heads of %d is out of range", c->n_heads, c->head_dim);
    c->q_dim = c->n_heads * c->head_dim;
    c->rope_dim = c->head_dim;
    if (meta_int(g, a, "rope.dimension_count", &v)) {
        if (v < 0 || v > c->head_dim) return errorf(err, WICK_ERR_FORMAT, "rope dimension %lld out of range", (long long)v);
        c->rope_dim = (int32_t)v;
    }
    c->rope_dim_swa = c->rope_dim;
    if (meta_float(g, a, "rope.freq_base", &f)) c->rope_base = (float)f;
    if (meta_float(g, a, "attention.layer_norm_rms_epsilon", &f)) c->rms_eps = (float)f;
    /* embeddings: the encoders and gemma-embedding always (no output head), a decoder whose file
     * names its pooling (Qwen3-Embedding: last) besides generating, as llama.cpp's embedding
     * context takes the hidden states after the final norm (t_embd) */
    c->encoder = ai->encoder || ai->embedding;
    c->layernorm = ai->encoder;
    c->swa_symmetric = ai->swa_symmetric;
    c->causal = !ai->embedding; /* gemma-embedding: llama.cpp sets causal_attn false whatever the file says */
    bool causal;
    snprintf(key, sizeof key, "%s.attention.causal", a);
    if (!ai->embedding && gguf_get_bool(g, key, &causal)) c->causal = causal;
    c->pooling = c->encoder ? POOL_NONE : POOL_UNSPECIFIED;
    if (meta_int(g, a, "pooling_type", &v)) {
        if (c->encoder && (v < POOL_NONE || v > POOL_RANK))
            return errorf(err, WICK_ERR_FORMAT, "%s.pooling_type = %lld: out of range", a, (long long)v);
        /* rank (a reranker): bert's classification head over [CLS] (bge-reranker), qwen3's
         * cls.output over the last token and a softmax (Qwen3-Reranker). llama.cpp's other
         * encoders pool otherwise (modern-bert: the mean, GELU and cls.norm), and its other
         * decoders would pool the first token without a softmax, which no released reranker does */
        if (v == POOL_RANK && strcmp(a, "bert") && strcmp(a, "qwen3"))
            return errorf(err, WICK_ERR_UNSUPPORTED, "%s.pooling_type = rank: only bert (bge-reranker) and qwen3 (Qwen3-Reranker) "
                          "rerankers are supported", a);
        if (v >= POOL_NONE && v <= POOL_RANK) c->pooling = (pooling_kind)v;
    }
    if (ai->encoder) {
        if (!meta_float(g, a, "attention.layer_norm_epsilon", &f))
            return errorf(err, WICK_ERR_FORMAT, "metadata %s.attention.layer_norm_epsilon is missing", a);
        c->rms_eps = (float)f;
        if (gguf_get_i64(g, "tokenizer.ggml.token_type_count", &v)) {
            if (v < 0 || v > 1024) return errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.token_type_count = %lld out of range", (long long)v);
            c->n_token_types = (int32_t)v;
        }
    }
    gguf_str st;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    bool scaled = gguf_get_str(g, key, &st) && !gguf_str_eq(st, "none");
    c->rope_yarn = scaled && gguf_str_eq(st, "yarn");
    if (scaled && !gguf_str_eq(st, "linear") && !c->rope_yarn)
        return errorf(err, WICK_ERR_UNSUPPORTED, "rope scaling type %.*s is not supported (none, linear and yarn are)", (int)st.len, st.ptr);
    if (meta_float(g, a, "rope.scaling.factor", &f) && f != 0 && f != 1) {
        if (!(f > 0)) return errorf(err, WICK_ERR_FORMAT, "rope scaling factor %g out of range", f);
        c->rope_scale = (float)(1.0 / f);
    } else if (meta_float(g, a, "rope.scale_linear", &f) && f != 0 && f != 1) {
        if (!(f > 0)) return errorf(err, WICK_ERR_FORMAT, "rope scaling factor %g out of range", f);
        c->rope_scale = (float)(1.0 / f);
    }
    if (meta_float_or(g, a, "rope.scaling.attn_factor", 1.0, &c->rope_attn_factor, err)) return -1;
    c->n_ctx_orig = c->n_ctx_train;
    if (meta_int(g, a, "rope.scaling.original_context_length", &v)) {
        if (v < 1 || v > MAX_CTX) return errorf(err, WICK_ERR_FORMAT, "rope.scaling.original_context_length %lld out of range", (long long)v);
        c->n_ctx_orig = (int32_t)v;
    }
    c->rope_neox = ai->rope_neox;
    c->act = ai->act;
    c->qk_norm = ai->qk_norm;

    /* scales: gemma's √dim embeddings, granite's four multipliers, the soft-caps */
    if (ai->embd_scale_sqrt) c->embd_scale = sqrtf((float)c->dim), c->embd_scale_tokens = true;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    if (ai->granite_scales) {
        float e, r, s, l;
        if (meta_float_or(g, a, "embedding_scale", 0, &e, err) ||
            meta_float_or(g, a, "residual_scale", 0, &r, err) ||
            meta_float_or(g, a, "attention.scale", 0, &s, err) ||
            meta_float_or(g, a, "logit_scale", 0, &l, err))
            return -1;
        if (l == 0) return errorf(err, WICK_ERR_FORMAT, "metadata %s.logit_scale is missing or 0", a);
        /* llama.cpp: a zero (absent) multiplier means none */
        if (e != 0) c->embd_scale = e;
        if (r != 0) c->residual_scale = r;
        if (s != 0) c->attn_scale = s;
        c->logit_scale = 1.0f / l;
    }
    if (ai->softcaps) {
        if (meta_float_or(g, a, "attn_logit_softcapping", 50.0, &c->attn_softcap, err) ||
            meta_float_or(g, a, "final_logit_softcapping", 30.0, &c->final_softcap, err))
            return -1;
    }
    /* gemma3n's graph always caps, at 30 without the key (llama-hparams.h) */
    if (ai->final_softcap && meta_float_or(g, a, "final_logit_softcapping", ai->altup ? 30.0 : 0, &c->final_softcap, err)) return -1;
    if (c->attn_softcap < 0 || c->final_softcap < 0) return errorf(err, WICK_ERR_FORMAT, "a negative soft-cap");

    /* sliding window: which layers, how wide, their rope base */
    c->n_swa = ai->swa_default;
    if (meta_int(g, a, "attention.sliding_window", &v)) {
        if (v < 0 || v > MAX_CTX) return errorf(err, WICK_ERR_FORMAT, "sliding window %lld out of range", (long long)v);
        c->n_swa = (int32_t)v;
    }
    if (ai->ignore_swa || ai->swa_period == 0) c->n_swa = 0;
    int64_t period = ai->swa_period;
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    const gguf_kv *pat = gguf_find(g, key);
    if (c->n_swa > 0 && pat && pat->type == GGUF_ARRAY && !ai->layer_shapes)
        return errorf(err, WICK_ERR_UNSUPPORTED, "%s is an array (a per-layer pattern): not supported", key);
    if (c->n_swa > 0 && meta_int(g, a, "attention.sliding_window_pattern", &v)) {
        if (v < 0 || v > MAX_LAYERS) return errorf(err, WICK_ERR_FORMAT, "sliding window pattern %lld out of range", (long long)v);
        period = v;
    }
    c->rope_scale_swa = ai->swa_unscaled ? 1.0f : c->rope_scale;
    if (read_yarn(g, a, ai, c, err) || read_mrope(g, a, ai, c, err)) return -1;
    c->rope_base_swa = ai->swa_base_own ? 10000.0f : c->rope_base;
    if (c->n_swa > 0 && meta_float(g, a, "rope.freq_base_swa", &f)) c->rope_base_swa = (float)f;
    if (!(c->rope_base_swa > 0 && isfinite(c->rope_base_swa)))
        return errorf(err, WICK_ERR_FORMAT, "sliding-window rope base %g out of range", c->rope_base_swa);

    if (ai->recurrent != LAYER_ATTENTION && read_hybrid_config(g, a, ai, c, err)) return -1;

    /* granite reads rope.scaling.finetuned as a switch for rope itself (true when absent) */
    bool rotate = true;
    snprintf(key, sizeof key, "%s.rope.scaling.finetuned", a);
    if (ai->granite_scales && gguf_get_bool(g, key, &rotate) && !rotate) rotate = false;
    if (alloc_layers(m, err)) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        /* llama.cpp's set_swa_pattern: a period of 0 makes every layer slide */
        w->sliding = c->n_swa > 0 && (period == 0 || (ai->swa_dense_first ? l % period != 0 : l % period < period - 1));
        w->rotate = rotate && (ai->no_rope_every == 0 || (l + 1) % ai->no_rope_every != 0);
    }
    if (ai->layer_shapes && read_layer_shapes(m, pat, err)) return -1;
    if (ai->altup) return read_altup(m, err);
    if (ai->layer_shapes) return 0;
    return ai->recurrent == LAYER_ATTENTION ? 0 : read_layer_kinds(m, ai, kv_arr, err);
}

/* A weight that is rows [r0, r0 + rows) of a bound matrix (one part of a fused tensor). */
static weight weight_rows(const weight *w, int64_t r0, int64_t rows) {
    weight part = *w;
    if (!w->outside) part.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    part.offset = w->offset + (uint64_t)r0 * w->row_bytes;
    part.rows = rows;
    return part;
}

/* The mixer of recurrent layer l: lfm2's short convolution, qwen35's gated DeltaNet or
 * granitehybrid's Mamba-2 (tensor names and shapes as llama.cpp's loader creates them). */
static int bind_recurrent(struct wick_model *m, int l, errmsg *err) {
    const model_config *c = &m->config;
    layer_weights *w = &m->layers[l];
    int64_t channels = model_conv_channels(c, w->kind);
    char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
    if (w->kind == LAYER_SHORTCONV)
        return bind_matrix(m, NAME("shortconv.in_proj.weight"), 3 * (int64_t)c->dim, c->dim, false, &w->sc_in, err) ||
                       bind_matrix(m, NAME("shortconv.out_proj.weight"), c->dim, c->dim, false, &w->sc_out, err) ||
                       bind_floats(m, NAME("shortconv.conv.weight"), c->conv_kernel, channels, false, &w->conv_w, err)
                   ? -1
                   : 0;
    if (w->kind == LAYER_MAMBA2) { /* ssm_a and ssm_d are [1, heads], ssm_norm [inner / groups, groups] */
        int64_t heads = c->ssm_v_heads, inner = c->ssm_inner;
        return bind_matrix(m, NAME("ssm_in.weight"), inner + channels + heads, c->dim, false, &w->m2_in, err) ||
                       bind_floats(m, NAME("ssm_conv1d.weight"), c->conv_kernel, channels, false, &w->conv_w, err) ||
                       bind_vector(m, NAME("ssm_conv1d.bias"), channels, true, &w->conv_b, err) ||
                       bind_vector(m, NAME("ssm_dt.bias"), heads, false, &w->m2_dt, err) ||
                       bind_floats(m, NAME("ssm_a"), 1, heads, false, &w->m2_a, err) ||
                       bind_floats(m, NAME("ssm_d"), 1, heads, false, &w->m2_d, err) ||
                       bind_floats(m, NAME("ssm_norm.weight"), inner / c->ssm_k_heads, c->ssm_k_heads, false, &w->m2_norm, err) ||
                       bind_matrix(m, NAME("ssm_out.weight"), c->dim, inner, false, &w->m2_out, err)
                   ? -1
                   : 0;
    }
    int64_t nv = c->ssm_v_heads, value_dim = nv * c->ssm_state;
    if (bind_matrix(m, NAME("attn_qkv.weight"), channels, c->dim, false, &w->dn_qkv, err) ||
        bind_matrix(m, NAME("attn_gate.weight"), value_dim, c->dim, false, &w->dn_gate, err) ||
        bind_matrix(m, NAME("ssm_alpha.weight"), nv, c->dim, false, &w->dn_alpha, err) ||
        bind_matrix(m, NAME("ssm_beta.weight"), nv, c->dim, false, &w->dn_beta, err) ||
        bind_matrix(m, NAME("ssm_out.weight"), c->dim, value_dim, false, &w->dn_out, err) ||
        bind_floats(m, NAME("ssm_conv1d.weight"), c->conv_kernel, channels, false, &w->conv_w, err) ||
        bind_vector(m, NAME("ssm_dt.bias"), nv, false, &w->dn_dt, err) ||
        bind_vector(m, NAME("ssm_a"), nv, false, &w->dn_a, err) ||
        bind_vector(m, NAME("ssm_norm.weight"), c->ssm_state, false, &w->dn_norm, err))
        return -1;
#undef NAME
    return 0;
}

/* A reranker's classification head (pooling rank), as llama.cpp's loaders create it: bert's
 * optional cls (dim → dim, with a bias) and cls.output (dim → n_cls_out, with a bias); qwen3's
 * cls.output alone (the "yes" and "no" rows of its output head, conversion/qwen.py), which rank
 * pooling needs there. n_cls_out: <arch>.classifier.output_labels' count, else 1. */
static int bind_rank_head(struct wick_model *m, bool encoder, errmsg *err) {
    model_config *c = &m->config;
    char key[96];
    snprintf(key, sizeof key, "%s.classifier.output_labels", c->arch);
    const gguf_kv *labels = gguf_get_arr(&m->gguf, key, GGUF_STRING);
    m->n_cls_out = labels ? (int32_t)labels->arr_len : 1;
    if (m->n_cls_out < 1 || m->n_cls_out > c->dim)
        return errorf(err, WICK_ERR_FORMAT, "%s: %d classifier labels (1 … %d)", key, m->n_cls_out, c->dim);
    if (encoder)
        return bind_matrix(m, "cls.weight", c->dim, c->dim, true, &m->cls, err) ||
               bind_vector(m, "cls.bias", c->dim, true, &m->cls_b, err) ||
               bind_matrix(m, "cls.output.weight", m->n_cls_out, c->dim, true, &m->cls_out, err) ||
               bind_vector(m, "cls.output.bias", m->n_cls_out, true, &m->cls_out_b, err);
    if (c->pooling != POOL_RANK) return 0;
    return bind_matrix(m, "cls.output.weight", m->n_cls_out, c->dim, false, &m->cls_out, err);
}

/* An encoder's weights, as llama.cpp's loaders for the bert lineage create them (src/models/bert.cpp,
 * nomic-bert.cpp, modern-bert.cpp): token embeddings, (optional) token types and the embeddings'
 * LayerNorm; bert's position table (nomic-bert and modern-bert rotate instead); per layer Q, K and
 * V (or a fused attn_qkv) with optional biases, the output projection, the FFN (bert: GELU(up);
 * nomic-bert: SwiGLU from ffn_gate and ffn_up; modern-bert: GeGLU from one ffn_up holding gate
 * rows then up rows) with optional biases, and the LayerNorms: bert and nomic-bert after each
 * block (with biases), modern-bert before each (attn_norm, absent on its first layer, and
 * ffn_norm, without biases) and output_norm at the end. No output head: the hidden states are
 * the output. */
static int bind_encoder_weights(struct wick_model *m, errmsg *err) {
    model_config *c = &m->config;
    const bool bert = !strcmp(c->arch, "bert"), modern = !strcmp(c->arch, "modern-bert");
    if (c->n_token_types == 0 && !modern)
        return errorf(err, WICK_ERR_FORMAT, "%s needs tokenizer.ggml.token_type_count (as llama.cpp does)", c->arch);
    if (c->n_heads != c->n_kv_heads) return errorf(err, WICK_ERR_FORMAT, "%s: %d KV heads for %d heads", c->arch, c->n_kv_heads, c->n_heads);
    int64_t dim = c->dim, hid = c->hidden_dim;
    if (modern) { /* hidden_activation: GeGLU unless it names SiLU (llama.cpp's LLM_FFN_OP_TYPES_FROM_STRING) */
        char key[128];
        gguf_str act;
        snprintf(key, sizeof key, "%s.hidden_activation", c->arch);
        if (gguf_get_str(&m->gguf, key, &act) && !gguf_str_eq(act, "gelu") && !gguf_str_eq(act, "geglu")) {
            if (!gguf_str_eq(act, "silu") && !gguf_str_eq(act, "swish") && !gguf_str_eq(act, "swiglu"))
                return errorf(err, WICK_ERR_UNSUPPORTED, "%s = %.*s: not supported (gelu and silu are)", key, (int)act.len, act.ptr);
            c->act = ACT_SILU;
        }
    }
    if (bind_matrix(m, "token_embd.weight", c->n_vocab, dim, false, &m->tok_embd, err) ||
        bind_floats(m, "position_embd.weight", dim, c->n_ctx_train, !bert, &m->pos_embd, err) ||
        bind_floats(m, "token_types.weight", dim, c->n_token_types, true, &m->type_embd, err) ||
        bind_vector(m, "token_embd_norm.weight", dim, false, &m->embd_norm, err) ||
        bind_vector(m, "token_embd_norm.bias", dim, modern, &m->embd_norm_b, err) ||
        bind_vector(m, "output_norm.weight", dim, !modern, &m->output_norm, err))
        return -1;
    if (bind_rank_head(m, true, err)) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        w->rotate = !bert;
        char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        if (model_find_tensor(m, NAME("attn_qkv.weight")) || modern) {
            weight qkv;
            const float *b = NULL;
            if (bind_matrix(m, NAME("attn_qkv.weight"), 3 * dim, dim, false, &qkv, err) ||
                (!modern && bind_vector(m, NAME("attn_qkv.bias"), 3 * dim, true, &b, err)))
                return -1;
            m->fused_qkv = true;
            w->wq = weight_rows(&qkv, 0, dim), w->wk = weight_rows(&qkv, dim, dim), w->wv = weight_rows(&qkv, 2 * dim, dim);
            if (b) w->bq = b, w->bk = b + dim, w->bv = b + 2 * dim;
        } else if (bind_matrix(m, NAME("attn_q.weight"), dim, dim, false, &w->wq, err) ||
                   bind_matrix(m, NAME("attn_k.weight"), dim, dim, false, &w->wk, err) ||
                   bind_matrix(m, NAME("attn_v.weight"), dim, dim, false, &w->wv, err) ||
                   bind_vector(m, NAME("attn_q.bias"), dim, true, &w->bq, err) ||
                   bind_vector(m, NAME("attn_k.bias"), dim, true, &w->bk, err) ||
                   bind_vector(m, NAME("attn_v.bias"), dim, true, &w->bv, err)) {
            return -1;
        }
        if (bind_matrix(m, NAME("attn_output.weight"), dim, dim, false, &w->wo, err) ||
            (!modern && bind_vector(m, NAME("attn_output.bias"), dim, true, &w->bo, err)) ||
            bind_matrix(m, NAME("ffn_down.weight"), dim, hid, false, &w->w_down, err) ||
            (!modern && bind_vector(m, NAME("ffn_down.bias"), dim, true, &w->ffn_down_b, err)))
            return -1;
        if (modern) {
            weight up;
            if (bind_vector(m, NAME("attn_norm.weight"), dim, l == 0, &w->attn_norm, err) ||
                bind_vector(m, NAME("ffn_norm.weight"), dim, false, &w->ffn_norm, err) ||
                bind_matrix(m, NAME("ffn_up.weight"), 2 * hid, dim, false, &up, err))
                return -1;
            m->fused_gate_up = true;
            w->w_gate = weight_rows(&up, 0, hid), w->w_up = weight_rows(&up, hid, hid);
        } else if (bind_vector(m, NAME("attn_output_norm.weight"), dim, false, &w->attn_post_norm, err) ||
                   bind_vector(m, NAME("attn_output_norm.bias"), dim, false, &w->attn_post_norm_b, err) ||
                   bind_matrix(m, NAME("ffn_up.weight"), hid, dim, false, &w->w_up, err) ||
                   bind_vector(m, NAME("ffn_up.bias"), hid, true, &w->ffn_up_b, err) ||
                   (!bert && bind_matrix(m, NAME("ffn_gate.weight"), hid, dim, false, &w->w_gate, err)) ||
                   bind_vector(m, NAME("layer_output_norm.weight"), dim, false, &w->ffn_post_norm, err) ||
                   bind_vector(m, NAME("layer_output_norm.bias"), dim, false, &w->ffn_post_norm_b, err)) {
            return -1;
        }
#undef NAME
    }
    return 0;
}

/* gemma3n's AltUp and Laurel tensors, named and shaped as llama_model_gemma3n::load_arch_tensors
 * creates them; Laurel's rank is its tensors'. */
static int bind_altup(struct wick_model *m, errmsg *err) {
    model_config *c = &m->config;
    int64_t n = c->n_altup, dim = c->dim;
    const gguf_tensor *lt = model_find_tensor(m, "blk.0.laurel_l.weight");
    if (!lt) return errorf(err, WICK_ERR_FORMAT, "tensor blk.0.laurel_l.weight is missing");
    if (lt->ne[1] < 1 || lt->ne[1] > MAX_DIM) return errorf(err, WICK_ERR_FORMAT, "Laurel rank %lld out of range", (long long)lt->ne[1]);
    c->laurel_rank = (int32_t)lt->ne[1];
    if (bind_stack(m, "altup_proj.weight", dim, dim, n - 1, false, m->altup_proj, err) ||
        bind_stack(m, "altup_unembd_proj.weight", dim, dim, n - 1, false, m->altup_unembd, err))
        return -1;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        char nm[64];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%d." s, l), nm)
        if (bind_matrix(m, NAME("altup_router.weight"), n, dim, false, &w->altup_router, err) ||
            bind_vector(m, NAME("altup_router_norm.weight"), dim, false, &w->altup_router_norm, err) ||
            bind_matrix(m, NAME("altup_predict_coef.weight"), n * n, n, false, &w->altup_predict, err) ||
            bind_matrix(m, NAME("altup_correct_coef.weight"), n, n, false, &w->altup_correct, err) ||
            bind_vector(m, NAME("altup_correct_scale.weight"), dim, false, &w->altup_correct_scale, err) ||
            bind_matrix(m, NAME("laurel_l.weight"), c->laurel_rank, dim, false, &w->laurel_l, err) ||
            bind_matrix(m, NAME("laurel_r.weight"), dim, c->laurel_rank, false, &w->laurel_r, err) ||
            bind_vector(m, NAME("laurel_post_norm.weight"), dim, false, &w->laurel_post_norm, err))
            return -1;
#undef NAME
    }
    return 0;
}

/* sentence-transformers' Dense modules after pooling, where the converter kept them
 * (--sentence-transformers-dense-modules): dense_2 [feat][dim] then dense_3 [dim][feat], as
 * llama.cpp's gemma-embedding loader creates them (feat: <arch>.dense_2_feat_out) */
static int bind_dense(struct wick_model *m, errmsg *err) {
    const gguf_tensor *d2 = model_find_tensor(m, "dense_2.weight"), *d3 = model_find_tensor(m, "dense_3.weight");
    int64_t feat = d2 ? d2->ne[1] : d3 ? d3->ne[0] : 0, dim = m->config.dim;
    if (feat < 1 || feat > MAX_DIM) return feat ? errorf(err, WICK_ERR_FORMAT, "dense_2/dense_3 width %lld out of range", (long long)feat) : 0;
    if (bind_matrix(m, "dense_2.weight", feat, dim, true, &m->dense_2, err) ||
        bind_matrix(m, "dense_3.weight", dim, feat, true, &m->dense_3, err))
        return -1;
    return !m->dense_2.data != !m->dense_3.data ? errorf(err, WICK_ERR_UNSUPPORTED, "dense_2 without dense_3, or the reverse: not supported") : 0;
}

static int bind_gguf_weights(struct wick_model *m, errmsg *err) {
    model_config *c = &m->config;
    const arch_info *ai = model_arch(m);
    const gguf_tensor *emb = model_find_tensor(m, "token_embd.weight");
    if (!emb) return errorf(err, WICK_ERR_FORMAT, "tensor token_embd.weight is missing");
    if (emb->ne[1] < 1 || emb->ne[1] > MAX_VOCAB)
        return errorf(err, WICK_ERR_FORMAT, "token_embd.weight: %lld rows is out of range", (long long)emb->ne[1]);
    c->n_vocab = (int32_t)emb->ne[1];
    if (check_config(c, err)) return -1;
    if (ai->encoder) return bind_encoder_weights(m, err);
    if (bind_rank_head(m, false, err)) return -1;
    int64_t half = c->rope_dim / 2, n_ple = c->n_ple, ple_width = (int64_t)c->n_layers * c->n_ple;
    if (bind_matrix(m, "token_embd.weight", c->n_vocab, c->dim, false, &m->tok_embd, err) ||
        bind_vector(m, ai->output_norm_name ? ai->output_norm_name : "output_norm.weight", c->dim, false, &m->output_norm,
                    err) ||
        (!ai->tied_only &&
         bind_matrix(m, "output.weight", c->n_vocab, c->dim, !ai->output_required, &m->output, err)) ||
        bind_vector(m, "rope_freqs.weight", half, true, &m->rope_freqs, err) ||
        bind_vector(m, "rope_factors_short.weight", half, true, &m->rope_factors_short, err) ||
        bind_vector(m, "rope_factors_long.weight", half, true, &m->rope_factors_long, err) ||
        (n_ple && (bind_matrix(m, "per_layer_token_embd.weight", c->n_vocab, ple_width, false, &m->ple_embd, err) ||
                   bind_matrix(m, "per_layer_model_proj.weight", ple_width, c->dim, false, &m->ple_model_proj, err) ||
                   bind_vector(m, "per_layer_proj_norm.weight", n_ple, false, &m->ple_proj_norm, err))))
        return -1;
    if (!m->output.data) m->output = m->tok_embd; /* tied embeddings */
    if (c->n_altup && bind_altup(m, err)) return -1;
    if (!m->rope_factors_short != !m->rope_factors_long)
        return errorf(err, WICK_ERR_FORMAT, "rope_factors_short and rope_factors_long come as a pair: one is missing");
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *w = &m->layers[l];
        /* the layer's shape (gemma4's differ); a layer reading another's cache needs no K or V */
        const model_config *lc = model_layer_config(m, l);
        int64_t kv_dim = (int64_t)lc->n_kv_heads * lc->head_dim, q_dim = lc->q_dim, hid = lc->hidden_dim;
        int64_t qk_q = c->qk_norm == QK_NORM_FULL ? q_dim : lc->head_dim, qk_k = c->qk_norm == QK_NORM_FULL ? kv_dim : lc->head_dim;
        bool own_kv = w->kv_layer == l;
        char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        char ffn_norm_name[64];
        snprintf(ffn_norm_name, sizeof ffn_norm_name, "blk.%d.%s", l, ai->ffn_norm_name ? ai->ffn_norm_name : "ffn_norm.weight");
        if (bind_vector(m, NAME("attn_norm.weight"), c->dim, ai->norm_post_only, &w->attn_norm, err) ||
            bind_vector(m, ffn_norm_name, c->dim, ai->norm_post_only, &w->ffn_norm, err) ||
            (!ai->ffn_norm_name &&
             bind_vector(m, NAME("post_attention_norm.weight"), c->dim, !ai->norm_post, &w->attn_post_norm, err)) ||
            bind_vector(m, NAME("post_ffw_norm.weight"), c->dim, !ai->norm_post, &w->ffn_post_norm, err) ||
            bind_matrix(m, NAME("ffn_down.weight"), c->dim, hid, false, &w->w_down, err) ||
            bind_vector(m, NAME("layer_output_scale.weight"), 1, true, &w->out_scale, err) ||
            (n_ple && (bind_matrix(m, NAME("inp_gate.weight"), n_ple, c->dim, false, &w->ple_gate, err) ||
                       bind_matrix(m, NAME("proj.weight"), c->dim, n_ple, false, &w->ple_proj, err) ||
                       bind_vector(m, NAME("post_norm.weight"), c->dim, false, &w->ple_post_norm, err))))
            return -1;
        if (w->kind != LAYER_ATTENTION) {
            if (bind_recurrent(m, l, err)) return -1;
        } else if (bind_matrix(m, NAME("attn_output.weight"), c->dim, q_dim, false, &w->wo, err)) {
            return -1;
        }
        if (w->kind == LAYER_ATTENTION && c->qk_norm != QK_NORM_NONE &&
            (bind_vector(m, NAME("attn_q_norm.weight"), qk_q, false, &w->attn_q_norm, err) ||
             bind_vector(m, NAME("attn_k_norm.weight"), qk_k, !own_kv, &w->attn_k_norm, err)))
            return -1;
        /* Q, K and V: one fused attn_qkv (rows Q | K | V) or three tensors (llama.cpp's create_tensor_qkv);
         * with an output gate, attn_q holds 2 × q_dim rows (each head's query, then its gate) */
        if (w->kind != LAYER_ATTENTION) {
            /* the mixer is bound; the FFN below is the same in every layer */
        } else if (c->attn_out_gate) {
            if (bind_matrix(m, NAME("attn_q.weight"), 2 * q_dim, c->dim, false, &w->wq, err) ||
                bind_matrix(m, NAME("attn_k.weight"), kv_dim, c->dim, false, &w->wk, err) ||
                bind_matrix(m, NAME("attn_v.weight"), kv_dim, c->dim, false, &w->wv, err))
                return -1;
        } else if (model_find_tensor(m, NAME("attn_qkv.weight"))) {
            weight qkv;
            const float *b = NULL;
            if (bind_matrix(m, n, q_dim + 2 * kv_dim, c->dim, false, &qkv, err) ||
                bind_vector(m, NAME("attn_qkv.bias"), q_dim + 2 * kv_dim, !ai->biases, &b, err))
                return -1;
            m->fused_qkv = true;
            w->wq = weight_rows(&qkv, 0, q_dim);
            w->wk = weight_rows(&qkv, q_dim, kv_dim);
            w->wv = weight_rows(&qkv, q_dim + kv_dim, kv_dim);
            if (b) w->bq = b, w->bk = b + q_dim, w->bv = b + q_dim + kv_dim;
        } else if (bind_matrix(m, NAME("attn_q.weight"), q_dim, c->dim, false, &w->wq, err) ||
                   bind_matrix(m, NAME("attn_k.weight"), kv_dim, c->dim, !own_kv, &w->wk, err) ||
                   /* gemma4: V is K where attn_v is absent */
                   bind_matrix(m, NAME("attn_v.weight"), kv_dim, c->dim, ai->layer_shapes || !own_kv, &w->wv, err) ||
                   bind_vector(m, NAME("attn_q.bias"), q_dim, !ai->biases, &w->bq, err) ||
                   bind_vector(m, NAME("attn_k.bias"), kv_dim, !ai->biases, &w->bk, err) ||
                   bind_vector(m, NAME("attn_v.bias"), kv_dim, !ai->biases, &w->bv, err)) {
            return -1;
        }
        /* gate and up: two tensors, or one ffn_up of 2 × hidden rows, the gate first (phi3) */
        const gguf_tensor *up = model_find_tensor(m, NAME("ffn_up.weight"));
        if (!model_find_tensor(m, NAME("ffn_gate.weight")) && up && up->ne[1] == 2 * (uint64_t)hid) {
            weight up2;
            if (bind_matrix(m, NAME("ffn_up.weight"), 2 * hid, c->dim, false, &up2, err)) return -1;
            m->fused_gate_up = true;
            w->w_gate = weight_rows(&up2, 0, hid);
            w->w_up = weight_rows(&up2, hid, hid);
        } else if (bind_matrix(m, NAME("ffn_gate.weight"), hid, c->dim, false, &w->w_gate, err) ||
                   bind_matrix(m, NAME("ffn_up.weight"), hid, c->dim, false, &w->w_up, err)) {
            return -1;
        }
#undef NAME
    }
    return ai->embedding ? bind_dense(m, err) : 0;
}

const gguf_tensor *model_find_tensor(const struct wick_model *m, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(&m->gguf, name);
    for (int i = 0; !t && i < m->n_shards; i++) t = gguf_find_tensor(&m->shards[i], name);
    return t;
}

/* split.no / split.count of part i must say it is part i of n (absent on an unsplit file) */
static int check_split(const gguf_file *g, int i, int n, errmsg *err) {
    uint64_t no = 0, count = 1;
    bool has_no = gguf_get_u64(g, "split.no", &no), has_count = gguf_get_u64(g, "split.count", &count);
    if (n == 1 && !has_count) return 0;
    if (!has_no || !has_count || count != (uint64_t)n || no != (uint64_t)i)
        return errorf(err, WICK_ERR_FORMAT, "part %d of %d: split.no / split.count say part %llu of %llu", i + 1, n,
                    (unsigned long long)no + 1, (unsigned long long)count);
    return 0;
}

static bool str_equal(gguf_str a, gguf_str b) { return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len); }

/* No tensor name may appear in two parts (each part checked its own already). */
static int check_unique_across_parts(const struct wick_model *m, errmsg *err) {
    for (int a = -1; a < m->n_shards; a++) {
        const gguf_file *ga = a < 0 ? &m->gguf : &m->shards[a];
        for (int b = a + 1; b < m->n_shards; b++)
            for (uint64_t t = 0; t < ga->n_tensors; t++)
                for (uint64_t u = 0; u < m->shards[b].n_tensors; u++)
                    if (str_equal(ga->tensors[t].name, m->shards[b].tensors[u].name)) {
                        gguf_str nm = ga->tensors[t].name;
                        return errorf(err, WICK_ERR_FORMAT, "tensor %.*s appears in two parts", (int)(nm.len < 80 ? nm.len : 80), nm.ptr);
                    }
    }
    return 0;
}

static int model_load_parts(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                            int n_holes, gguf_hole *ph, errmsg *err);

int model_load_gguf(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, errmsg *err) {
    return model_load_gguf_sparse(m, bufs, sizes, n, NULL, 0, NULL, NULL, err);
}

/* The holes of part i, from the triples (part, offset, bytes): into out (n_holes of room); how many. */
static int part_holes(const uint64_t *holes, int n_holes, int i, gguf_hole *out) {
    int k = 0;
    for (int h = 0; h < n_holes; h++)
        if (holes[3 * h] == (uint64_t)i) out[k++] = (gguf_hole){holes[3 * h + 1], holes[3 * h + 2]};
    return k;
}

/* Where the rows of a table left out of the buffers are; a tensor in a hole that is not such a table is refused. */
static int place_outside_tables(struct wick_model *m, errmsg *err) {
    for (int p = 0; p <= m->n_shards; p++) {
        const gguf_file *g = p ? &m->shards[p - 1] : &m->gguf;
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const gguf_tensor *t = &g->tensors[i];
            if (!t->outside) continue;
            m->n_outside++;
            /* an external context's model: the binders refuse a tensor they read at load */
            if (m->external_only && !gguf_str_eq(t->name, "per_layer_token_embd.weight")) continue;
            if (!gguf_str_eq(t->name, "per_layer_token_embd.weight") || !m->config.n_ple)
                return errorf(err, WICK_ERR_INVALID_ARG, "tensor %.*s was left out of the buffers: only per_layer_token_embd.weight, "
                              "read one row per token, may be", (int)(t->name.len < 80 ? t->name.len : 80), t->name.ptr);
            m->ple_place = (row_place){true, p, t->file_offset};
        }
    }
    if (m->ple_place.outside && !m->read) return errorf(err, WICK_ERR_INVALID_ARG, "per_layer_token_embd.weight is outside the buffers and there is no reader");
    return 0;
}

int model_read_rows(const struct wick_model *m, const weight *w, const row_place *p, const int32_t *rows, int n, uint8_t *dst,
                    errmsg *err) {
    for (int t = 0; t < n; t++)
        if (m->read(m->read_user, p->part, p->offset + (uint64_t)rows[t] * w->row_bytes, dst + (size_t)t * w->row_bytes, w->row_bytes))
            return errorf(err, WICK_ERR_FORMAT, "could not read row %d of a table outside the buffers (%zu bytes at %llu of part %d)", rows[t],
                          w->row_bytes, (unsigned long long)(p->offset + (uint64_t)rows[t] * w->row_bytes), p->part + 1);
    return 0;
}

static int load_sparse(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes, int n_holes,
                       wick_read_fn read, void *user, bool external_only, errmsg *err);

int model_load_gguf_sparse(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                           int n_holes, wick_read_fn read, void *user, errmsg *err) {
    return load_sparse(m, bufs, sizes, n, holes, n_holes, read, user, false, err);
}

int model_load_gguf_external(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                             int n_holes, errmsg *err) {
    return load_sparse(m, bufs, sizes, n, holes, n_holes, NULL, NULL, true, err);
}

static int load_sparse(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes, int n_holes,
                       wick_read_fn read, void *user, bool external_only, errmsg *err) {
    memset(m, 0, sizeof *m);
    m->is_gguf = true;
    m->external_only = external_only;
    m->read = read;
    m->read_user = user;
    if (n < 1 || n > 1024) return errorf(err, WICK_ERR_FORMAT, "%d parts: a model has 1 to 1024", n);
    if (n_holes < 0 || n_holes > 1024) return errorf(err, WICK_ERR_INVALID_ARG, "%d holes: 0 to 1024 are taken", n_holes);
    for (int h = 0; h < n_holes; h++)
        if (holes[3 * h] >= (uint64_t)n) return errorf(err, WICK_ERR_INVALID_ARG, "hole %d is in part %llu of %d", h, (unsigned long long)holes[3 * h] + 1, n);
    gguf_hole *ph = malloc(((size_t)n_holes + 1) * sizeof *ph);
    if (!ph) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    int r = model_load_parts(m, bufs, sizes, n, holes, n_holes, ph, err);
    free(ph);
    return r;
}

static int model_load_parts(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                            int n_holes, gguf_hole *ph, errmsg *err) {
    if (gguf_open_sparse(&m->gguf, bufs[0], sizes[0], ph, part_holes(holes, n_holes, 0, ph), err)) return -1;
    if (n > 1) {
        m->shards = calloc((size_t)n - 1, sizeof *m->shards);
        if (!m->shards) { model_release(m); return errorf(err, WICK_ERR_NOMEM, "out of memory"); }
        for (int i = 1; i < n; i++) {
            errmsg part_err = {0};
            if (gguf_open_sparse(&m->shards[i - 1], bufs[i], sizes[i], ph, part_holes(holes, n_holes, i, ph), &part_err)) {
                model_release(m);
                return errorf(err, part_err.code, "part %d: %.400s", i + 1, part_err.text);
            }
            m->n_shards = i;
        }
    }
    for (int i = 0; i < n; i++)
        if (check_split(i ? &m->shards[i - 1] : &m->gguf, i, n, err)) { model_release(m); return -1; }
    if (n > 1 && check_unique_across_parts(m, err)) { model_release(m); return -1; }
    uint64_t n_tensors = m->gguf.n_tensors;
    for (int i = 0; i < m->n_shards; i++) n_tensors += m->shards[i].n_tensors;
    gguf_str arch;
    if (!gguf_get_str(&m->gguf, "general.architecture", &arch)) {
        /* a vocab-only file still tokenizes */
        if (n_tensors == 0) goto vocab;
        model_release(m);
        return errorf(err, WICK_ERR_FORMAT, "metadata general.architecture is missing");
    }
    if (!arch_find(arch)) {
        if (n_tensors == 0) goto vocab;
        errorf(err, WICK_ERR_UNSUPPORTED, "architecture '%.*s' is not supported (%s are)", (int)(arch.len < 40 ? arch.len : 40), arch.ptr,
               arch_names());
        model_release(m);
        return -1;
    }
    snprintf(m->config.arch, sizeof m->config.arch, "%.*s", (int)arch.len, arch.ptr);
    if (n_tensors == 0) goto vocab;
    if (read_gguf_config(m, err) || place_outside_tables(m, err) || bind_gguf_weights(m, err)) {
        model_release(m);
        return -1;
    }
    m->has_weights = true;
vocab:
    if (vocab_load_gguf(&m->vocab, &m->gguf, err)) {
        model_release(m);
        return -1;
    }
    if (!m->has_weights) m->config.n_vocab = vocab_n_tokens(m->vocab);
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
                       size_t tok_size, errmsg *err) {
    memset(m, 0, sizeof *m);
    int32_t h[7];
    if (bin_size < sizeof h) return errorf(err, WICK_ERR_FORMAT, "llama2.c checkpoint truncated: %zu bytes", bin_size);
    memcpy(h, bin, sizeof h);
    if (memcmp(bin, "24ka", 4) == 0) /* the magic 0x616b3432 of llama2.c's versioned export */
        return errorf(err, WICK_ERR_UNSUPPORTED, "llama2.c versioned checkpoints (export version %d) are not supported; use the legacy format", h[1]);
    model_config *c = &m->config;
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
        return errorf(err, WICK_ERR_FORMAT, "llama2.c header: dim %d is not a positive multiple of n_heads %d", c->dim, c->n_heads);
    config_defaults(c);
    c->head_dim = c->dim / c->n_heads;
    c->q_dim = c->dim;
    c->rope_dim = c->rope_dim_swa = c->head_dim;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    if (check_config(c, err)) return -1;
    uint64_t dim = (uint64_t)c->dim, hid = (uint64_t)c->hidden_dim, L = (uint64_t)c->n_layers;
    uint64_t kv_dim = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim, V = (uint64_t)c->n_vocab;
    /* all products below are < 2^62 thanks to the bounds of check_config */
    uint64_t floats = V * dim + L * dim + L * dim * dim * 2 + L * kv_dim * dim * 2 + L * dim + L * hid * dim * 3 +
                      dim + (uint64_t)c->n_ctx_train * (uint64_t)c->head_dim + (shared ? 0 : V * dim);
    if (floats > (bin_size - sizeof h) / 4)
        return errorf(err, WICK_ERR_FORMAT, "llama2.c checkpoint truncated: the header needs %llu bytes of weights, file has %zu",
                    (unsigned long long)floats * 4, bin_size - sizeof h);
    const float *p = (const float *)(bin + sizeof h);
    if (alloc_layers(m, err)) return -1;
#define MAT(w, r, cc) ((w) = (weight){p, WICK_TYPE_F32, (int64_t)(r), (int64_t)(cc), (size_t)(cc) * 4, false, 0, 0}, p += (uint64_t)(r) * (cc))
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
    if (vocab_load_llama2c(&m->vocab, tok, tok_size, c->n_vocab, err)) {
        model_release(m);
        return -1;
    }
    return 0;
}

void model_release(struct wick_model *m) {
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    free(m->layer_c);
    if (m->vocab) vocab_free(m->vocab);
    gguf_close(&m->gguf);
    for (int i = 0; i < m->n_shards; i++) gguf_close(&m->shards[i]);
    free(m->shards);
    memset(m, 0, sizeof *m);
}
