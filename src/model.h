/* model.h — the model: hyperparameters, the weights (views into the file buffer) and the
 * vocabulary, bound from a GGUF file (architectures llama, qwen2) or a llama2.c checkpoint. */
#ifndef WICK_MODEL_H
#define WICK_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "tokenizer.h"

/* A weight matrix W of shape [rows][cols], row-major: row r holds the weights of output r.
 * In GGUF terms cols = ne[0], rows = ne[1]. data stays inside the file buffer. */
typedef struct {
    const void *data;
    uint32_t type;
    int64_t rows, cols;
    size_t row_bytes;
} weight;

typedef struct {
    const float *attn_norm;           /* [dim] */
    weight wq, wk, wv, wo;            /* [dim][dim], [kv_dim][dim], [kv_dim][dim], [dim][dim] */
    const float *bq, *bk, *bv;        /* qwen2's attention biases, else NULL */
    const float *ffn_norm;            /* [dim] */
    weight w_gate, w_down, w_up;      /* [hidden][dim], [dim][hidden], [hidden][dim] */
} layer_weights;

typedef struct {
    char arch[32];
    int32_t dim, n_layers, n_heads, n_kv_heads, head_dim, hidden_dim, n_vocab, n_ctx_train;
    int32_t rope_dim;     /* leading dimensions of each head that are rotated */
    bool rope_neox;       /* pairs (i, i + rope_dim/2) instead of (2i, 2i+1) */
    float rope_base;
    float rope_scale;     /* linear position scaling: positions are multiplied by this */
    float rms_eps;
} model_config;

struct wick_model {
    model_config c;
    bool has_weights;
    weight tok_embd;                  /* [n_vocab][dim] */
    const float *output_norm;         /* [dim] */
    weight output;                    /* [n_vocab][dim]; the embedding when tied */
    layer_weights *layers;
    wick_vocab *vocab;
    gguf_file gguf;                   /* the (first) file: metadata and its tensors; zeroed for llama2.c */
    gguf_file *shards;                /* the other files of a split model (gguf-split), n_shards of them */
    int n_shards;
    bool is_gguf;
    void **owned;                     /* vectors converted to F32 at load */
    int n_owned;
};

/* One GGUF file, or the n parts of a split model (llama.cpp's gguf-split: the first holds the
 * metadata, each holds some tensors and split.no / split.count). The buffers stay alive. */
int model_load_gguf(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, char *err,
                    size_t err_len);
/* A tensor by name, in whichever part holds it. */
const gguf_tensor *model_find_tensor(const struct wick_model *m, const char *name);
int model_load_llama2c(struct wick_model *m, const uint8_t *bin, size_t bin_size, const uint8_t *tok,
                       size_t tok_size, char *err, size_t err_len);
void model_release(struct wick_model *m);

#endif
