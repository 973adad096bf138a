/* model.h — the model: hyperparameters, the weights (views into the file buffer) and the
 * vocabulary, bound from a GGUF file (the llama lineage: llama, qwen2, qwen3, gemma2, gemma3, phi3,
 * smollm3, granite, olmo2, mistral3, gemma4, gemma3n; the hybrids with a recurrent state: lfm2, qwen35, granitehybrid) or a llama2.c
 * checkpoint. */
#ifndef WICK_MODEL_H
#define WICK_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "tokenizer.h"

/* The most AltUp streams a model may have (Gemma 3n has 4) */
#define ALTUP_MAX 8

/* A weight matrix W of shape [rows][cols], row-major: row r holds the weights of output r.
 * In GGUF terms cols = ne[0], rows = ne[1]. data stays inside the file buffer. part and offset:
 * where its first row is in the file (GGUF). outside: its bytes were left out of the buffers for
 * an external context (wick_model_load_gguf_external); data is then a distinct address that
 * stands for the tensor (its directory entry) and is never read as weights. */
typedef struct {
    const void *data;
    uint32_t type;
    int64_t rows, cols;
    size_t row_bytes;
    bool outside;
    int32_t part;
    uint64_t offset;
} weight;

/* A table read one row per token that was left out of the buffers (wick_model_load_gguf_sparse):
 * the part of the file and the offset of its first row. */
typedef struct {
    bool outside;
    int32_t part;
    uint64_t offset;
} row_place;

/* What a layer mixes its positions with: attention over the KV cache, or a recurrence whose
 * state per sequence has a fixed size (the context's recurrent state, forward.h). */
typedef enum {
    LAYER_ATTENTION,
    LAYER_SHORTCONV, /* lfm2: y = C ⊙ conv(B ⊙ x), a causal depthwise convolution */
    LAYER_DELTANET,  /* qwen35: gated DeltaNet, a linear attention with an S×S state per value head */
    LAYER_MAMBA2,    /* granitehybrid: Mamba-2, a selective state space with a d_state × head size state per head */
} layer_kind;

typedef struct {
    layer_kind kind;
    const float *attn_norm;           /* [dim]; NULL where the family has no norm before attention (olmo2) */
    weight wq, wk, wv, wo;            /* [q_dim][dim], [kv_dim][dim], [kv_dim][dim], [dim][q_dim]; views
                                       * into one fused attn_qkv tensor where the file has one (phi3) */
    const float *bq, *bk, *bv;        /* attention biases (qwen2), else NULL */
    const float *attn_q_norm, *attn_k_norm; /* RMS norm weights of q and k: [head_dim] per head, or
                                       * [q_dim] / [kv_dim] over the whole width (c.qk_norm) */
    const float *attn_post_norm;      /* [dim], on the attention output before the residual add */
    const float *ffn_norm;            /* [dim]; NULL where the family has none (olmo2) */
    weight w_gate, w_down, w_up;      /* [hidden][dim], [dim][hidden], [hidden][dim]; gate and up
                                       * are the two halves of one ffn_up tensor in phi3 */
    const float *ffn_post_norm;       /* [dim], on the FFN output before the residual add */
    /* short convolution (lfm2) */
    weight sc_in, sc_out;             /* in_proj [3·dim][dim] (rows B | C | x), out_proj [dim][dim] */
    /* both recurrences: the depthwise convolution, [channels][conv_kernel], kept F32; tap k
     * weighs the input at t − (conv_kernel − 1) + k */
    const float *conv_w;
    /* gated DeltaNet (qwen35): channels = 2·key_dim + value_dim, key_dim = ssm_k_heads·ssm_state,
     * value_dim = ssm_v_heads·ssm_state */
    weight dn_qkv;                    /* attn_qkv [channels][dim]: q | k | v */
    weight dn_gate;                   /* attn_gate [value_dim][dim]: z of the output gate */
    weight dn_alpha, dn_beta;         /* ssm_alpha, ssm_beta [ssm_v_heads][dim] */
    weight dn_out;                    /* ssm_out [dim][value_dim] */
    const float *dn_dt, *dn_a;        /* ssm_dt.bias, ssm_a [ssm_v_heads]: decay g = softplus(α + dt)·a */
    const float *dn_norm;             /* ssm_norm [ssm_state], shared by the value heads */
    /* Mamba-2 (granitehybrid): channels = ssm_inner + 2·groups·ssm_state, the conv's x | B | C */
    weight m2_in;                     /* ssm_in [ssm_inner + channels + heads][dim]: z | x B C | dt */
    weight m2_out;                    /* ssm_out [dim][ssm_inner] */
    const float *conv_b;              /* ssm_conv1d.bias [channels], or NULL */
    const float *m2_dt, *m2_a, *m2_d; /* [heads]: dt bias, A = −exp(A_log), the skip D */
    const float *m2_norm;             /* ssm_norm [groups][ssm_inner / groups]: each group's own weights */
    bool sliding;                     /* attends to the last c.n_swa positions only */
    bool rotate;                      /* applies rope (smollm3 leaves every fourth layer unrotated) */
    /* gemma4 */
    int32_t kv_layer;                 /* the layer whose KV cache its attention reads: itself, or for a
                                       * KV-shared layer (no attn_k/attn_v, nothing cached) an earlier one */
    const float *out_scale;           /* layer_output_scale [1]: the layer's output x × this, or NULL */
    weight ple_gate, ple_proj;        /* per-layer embedding: inp_gate [n_ple][dim], proj [dim][n_ple] */
    const float *ple_post_norm;       /* post_norm [dim], on proj's output */
    /* encoders (bert): the output projection's and the FFN's biases, and the biases of the two
     * LayerNorms after each block (attn_post_norm: attn_output_norm, ffn_post_norm: layer_output_norm) */
    const float *bo, *ffn_up_b, *ffn_down_b, *attn_post_norm_b, *ffn_post_norm_b;
    /* gemma3n (altup.c): AltUp's router and coefficients, Laurel's low-rank residual, the FFN gate's sparsity */
    weight altup_router;              /* altup_router [n_altup][dim]: the streams' mixing weights from the active one */
    const float *altup_router_norm;   /* altup_router_norm [dim] */
    weight altup_predict, altup_correct; /* altup_predict_coef [n_altup²][n_altup], altup_correct_coef [n_altup][n_altup] */
    const float *altup_correct_scale; /* altup_correct_scale [dim], on the active stream before the per-layer embedding */
    weight laurel_l, laurel_r;        /* laurel_l [rank][dim], laurel_r [dim][rank] */
    const float *laurel_post_norm;    /* laurel_post_norm [dim] */
    float ffn_sparsity;               /* the gate keeps only values above mean + this × std (activation_sparsity_scale);
                                       * -inf (as the converter writes for the dense layers): all */
} layer_weights;

/* How the families of the llama lineage differ: switches of the one forward pass (forward.c),
 * read once at load. */
typedef enum { ACT_SILU, ACT_GELU_TANH } ffn_activation;
/* How an encoder's token rows become one vector per sequence: llama.cpp's llama_pooling_type
 * values, as <arch>.pooling_type holds them */
typedef enum { POOL_UNSPECIFIED = -1, POOL_NONE = 0, POOL_MEAN = 1, POOL_CLS = 2, POOL_LAST = 3, POOL_RANK = 4 } pooling_kind;
typedef enum { QK_NORM_NONE, QK_NORM_PER_HEAD, QK_NORM_FULL } qk_norm_kind;
/* Multi-axis rotary positions (Qwen-VL's M-RoPE, llama.cpp's GGML_ROPE_TYPE_MROPE / _IMROPE): each
 * rotated pair takes one of a token's four positions (time, height, width, extra) by the file's
 * rope.dimension_sections, in runs (qwen2vl) or in turn (qwen3vl, qwen35) */
typedef enum { MROPE_NONE, MROPE_SECTIONS, MROPE_INTERLEAVED } mrope_kind;

typedef struct {
    char arch[32];
    int32_t dim, n_layers, n_heads, n_kv_heads, head_dim, hidden_dim, n_vocab, n_ctx_train;
    int32_t q_dim;        /* n_heads * head_dim: width of Q and of the attention output (≠ dim when
                           * attention.key_length says so: qwen3, gemma) */
    int32_t rope_dim;     /* leading dimensions of each head that are rotated */
    bool rope_neox;       /* pairs (i, i + rope_dim/2) instead of (2i, 2i+1) */
    float rope_base;
    int32_t rope_dim_swa; /* the sliding layers' (gemma4: rope.dimension_count_swa), else rope_dim */
    float rope_base_swa;  /* rope base of the sliding-window layers (gemma3: 10000) */
    float rope_scale;     /* linear position scaling: positions are multiplied by this */
    float rope_scale_swa; /* the sliding layers' (gemma3: 1, the file's factor is for the full layers) */
    float rope_attn_factor; /* rotated q and k are multiplied by this (phi3's rope.scaling.attn_factor;
                             * with YaRN, its magnitude correction too) */
    float rope_attn_factor_swa; /* the same for the sliding layers (their own scale) */
    int32_t n_ctx_orig;   /* phi3: rope_factors_long apply to contexts above this, short ones below;
                           * YaRN: the trained context its ramp is measured against */
    bool rope_yarn;       /* rope.scaling.type yarn: each pair's angle mixes the scaled and unscaled
                           * one by a ramp over its frequency (rope.c) */
    float yarn_beta_fast, yarn_beta_slow; /* the ramp's ends, in rotations over n_ctx_orig (32, 1) */
    mrope_kind mrope;     /* M-RoPE: a text token's four positions are its position (the fourth 0), an
                           * image's are 2-D (images.h images_positions) */
    int32_t rope_sections[4]; /* M-RoPE: how many rotated pairs take each position (each and their sum ≤
                           * head_dim, read_mrope; pair i takes sector i mod the sum) */
    int32_t n_deepstack;  /* qwen3vl: image rows carry n_deepstack more rows of dim, added to the hidden
                           * state after layers 0 … n_deepstack − 1 (<arch>.n_deepstack_layers) */
    float attn_temp_scale; /* mistral3: queries × (1 + this · ln(⌊pos / n_ctx_orig⌋ + 1)); 0 = off */
    float rms_eps;
    ffn_activation act;   /* gated FFN: act(gate) ⊙ up */
    qk_norm_kind qk_norm;
    float embd_scale;     /* embeddings × this (gemma: √dim; granite: embedding_scale) */
    bool embd_scale_tokens; /* only token embeddings are scaled, not image rows (the Gemmas' √dim: llama.cpp's
                             * gemma3.cpp scales by 1 when the batch is embeddings) */
    float residual_scale; /* each block's output × this before its residual add (granite) */
    float attn_scale;     /* attention scores q·k × this (1/√head_dim unless the family says) */
    float attn_softcap;   /* scores s → cap·tanh(s/cap) before softmax; 0 = off (gemma2) */
    float final_softcap;  /* the same on the logits (gemma2) */
    float logit_scale;    /* logits × this (granite: 1 / logit_scale) */
    int32_t n_swa;        /* sliding window of the sliding layers: position p sees p − n_swa + 1 … p */
    /* gemma4 */
    bool v_norm;          /* V RMS-normed per head, without weights */
    bool rope_freqs_full; /* rope_freqs apply to the full (not sliding) layers only */
    int32_t n_ple;        /* per-layer embedding width (embedding_length_per_layer_input); 0: none */
    /* gemma3n */
    int32_t n_altup;      /* AltUp's streams (altup.num_inputs); 0: none */
    int32_t altup_active; /* the stream the layers compute on (altup.active_idx) */
    int32_t laurel_rank;  /* Laurel's width (laurel_l's rows); 0: none */
    /* the hybrids */
    bool attn_out_gate;   /* qwen35: attn_q gives each head its query then an output gate (o × sigmoid(gate)) */
    int32_t n_recurrent;  /* layers of kind LAYER_SHORTCONV, LAYER_DELTANET or LAYER_MAMBA2 */
    int32_t conv_kernel;  /* taps of the recurrent layers' convolution (lfm2 shortconv.l_cache, qwen35 ssm.conv_kernel) */
    int32_t ssm_state, ssm_k_heads, ssm_v_heads; /* DeltaNet: head size S, key heads, value heads;
                           * Mamba-2: d_state, groups (of B and C), heads (ssm.time_step_rank) */
    int32_t ssm_inner;    /* Mamba-2: d_inner = 2·dim, the width of x, z and y (heads × head size) */
    /* embedding models (encoder.c): no output head */
    bool encoder;
    bool layernorm;       /* the bert lineage's layers (encoder_batch: LayerNorm, eps rms_eps), else the
                           * decoders' layer loop (forward.c: gemma-embedding, a decoder with pooling_type) */
    bool causal;          /* <arch>.attention.causal (llama.cpp's default true; bert files say false) */
    bool swa_symmetric;   /* a sliding layer's query sees positions within n_swa / 2 either side
                           * (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC: modern-bert, gemma-embedding) */
    pooling_kind pooling; /* <arch>.pooling_type: the file's pooling (an encoder's: none when absent; a
                           * decoder without it: POOL_UNSPECIFIED, it does not embed) */
    int32_t n_token_types; /* tokenizer.ggml.token_type_count: rows of token_types (0: none) */
} model_config;


struct wick_model {
    model_config config;
    bool has_weights;
    weight tok_embd;                  /* [n_vocab][dim] */
    const float *output_norm;         /* [dim] */
    const float *rope_freqs;          /* [rope_dim/2] frequency divisors (Llama 3), or NULL */
    const float *rope_factors_short, *rope_factors_long; /* phi3's two sets, or NULL */
    bool fused_qkv, fused_gate_up;    /* the file holds attn_qkv / gate and up in one ffn_up (phi3) */
    weight output;                    /* [n_vocab][dim]; the embedding when tied */
    layer_weights *layers;
    wick_vocab *vocab;
    gguf_file gguf;                   /* the (first) file: metadata and its tensors; zeroed for llama2.c */
    gguf_file *shards;                /* the other files of a split model (gguf-split), n_shards of them */
    int n_shards;
    bool is_gguf;
    void **owned;                     /* vectors converted to F32 at load */
    int n_owned;
    bool cpu_layout;                  /* some weights were rewritten in the CPU kernels' layout */
    bool external_only;               /* weight matrices may be outside the buffers: only an external context runs it */
    int n_outside;                    /* tensors whose bytes are outside the buffers (row tables and weights) */
    /* gemma4: each layer's shape (head size, KV heads, q_dim, rope_dim, FFN width) where the layers
     * differ, else NULL; c then holds the largest of each, which the scratch is sized by */
    model_config *layer_c;
    weight ple_embd;                  /* per_layer_token_embd [n_vocab][n_layers·n_ple]; data NULL when outside */
    row_place ple_place;              /* where its rows are read from when it is outside the buffers */
    wick_read_fn read;                /* the reader of the tables outside the buffers, and its argument */
    void *read_user;
    weight ple_model_proj;            /* per_layer_model_proj [n_layers·n_ple][dim] */
    const float *ple_proj_norm;       /* per_layer_proj_norm [n_ple] */
    /* encoders: the position and token-type tables ([n_ctx_train][dim], [n_token_types][dim],
     * F32), the LayerNorm of the embeddings (token_embd_norm weight and bias) */
    const float *pos_embd, *type_embd, *embd_norm, *embd_norm_b;
    /* gemma3n: the projections from the embedding into AltUp's other streams and back (altup_proj,
     * altup_unembd_proj: n_altup − 1 slices of [dim][dim]) */
    weight altup_proj[ALTUP_MAX - 1], altup_unembd[ALTUP_MAX - 1];
    /* sentence-transformers' projections after pooling (gemma-embedding's dense_2 [feat][dim] and
     * dense_3 [dim][feat]), or absent */
    weight dense_2, dense_3;
    /* rerankers (pooling rank; llama.cpp's build_pooling): the classification head over the pooled
     * row — cls [dim][dim] with its bias, then tanh (bert's, optional), and cls.output
     * [n_cls_out][dim] with its bias (optional) — n_cls_out from <arch>.classifier.output_labels
     * (1 when absent; Qwen3-Reranker's two are "yes" and "no") */
    weight cls, cls_out;
    const float *cls_b, *cls_out_b;
    int32_t n_cls_out;
};

/* The shape of layer l: its own where the layers differ (gemma4), else the model's. */
static inline const model_config *model_layer_config(const struct wick_model *m, int l) {
    return m->layer_c ? &m->layer_c[l] : &m->config;
}

/* One GGUF file, or the n parts of a split model (llama.cpp's gguf-split: the first holds the
 * metadata, each holds some tensors and split.no / split.count). The buffers stay alive. */
int model_load_gguf(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, errmsg *err);
/* The same with holes (wick.h, wick_model_load_gguf_sparse: triples part, offset, bytes) and the reader of what is in them. */
int model_load_gguf_sparse(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                           int n_holes, wick_read_fn read, void *user, errmsg *err);
/* The same for a model only an external context runs (wick_model_load_gguf_external): any
 * tensor bound as a weight matrix may lie in a hole, its bytes never read here. */
int model_load_gguf_external(struct wick_model *m, const uint8_t *const *bufs, const size_t *sizes, int n, const uint64_t *holes,
                             int n_holes, errmsg *err);
/* The rows of table w (placed at p) of n tokens, one after another into dst (n × row_bytes): 0, or
 * -1 when the reader fails. Only for a table outside the buffers. */
int model_read_rows(const struct wick_model *m, const weight *w, const row_place *p, const int32_t *rows, int n, uint8_t *dst,
                    errmsg *err);
/* Binds tensor name of a loaded file: a small one of n1 rows of n0 as F32 (converted and owned
 * when stored otherwise), or a weight matrix of [rows][cols] (a view). A missing tensor is an
 * error unless optional (then NULL / a zeroed weight); a wrong shape or type always is. */
int model_bind_floats(struct wick_model *m, const char *name, int64_t n0, int64_t n1, bool optional, const float **out,
                      errmsg *err);
int model_bind_matrix(struct wick_model *m, const char *name, int64_t rows, int64_t cols, bool optional, weight *w,
                      errmsg *err);
/* A tensor by name, in whichever part holds it. */
const gguf_tensor *model_find_tensor(const struct wick_model *m, const char *name);
int model_load_llama2c(struct wick_model *m, const uint8_t *bin, size_t bin_size, const uint8_t *tok,
                       size_t tok_size, errmsg *err);
void model_release(struct wick_model *m);

/* Rewrites the weight matrices whose CPU layout differs from the file's (quant_cpu_type: Q4_K and
 * Q6_K in the relaxed-SIMD builds) in place in the file buffer, once per model; their type becomes the
 * new one. Called when a CPU context is made: the GPU path reads the file's layout, so it is
 * not done at load. Sets cpu_layout when anything changed; -1 when out of memory. */
int model_use_cpu_layout(struct wick_model *m);

/* The names of the forward pass's steps this model takes beyond plain llama's (model.c lists
 * them); writes up to cap into names and returns how many there are. */
int model_steps(const struct wick_model *m, const char **names, int cap);
/* Floats of one sequence's recurrent state in layer l (0 for an attention layer): the last
 * conv_kernel − 1 convolution inputs and, for DeltaNet, an S×S matrix per value head; for
 * Mamba-2, ssm_state values per channel of x (ssm_inner). */
size_t model_layer_state_floats(const struct wick_model *m, int l);
/* Width of the convolution's input (channels) in a recurrent layer. */
int32_t model_conv_channels(const model_config *c, layer_kind kind);

#endif
