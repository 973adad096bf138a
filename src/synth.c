/* synth.c — `wick synth`: a deterministic random-weight model of one architecture family as a
 * GGUF v3 file that llama.cpp loads, for benchmarks and for checking wick against llama.cpp on
 * the same bytes.
 *
 * `--arch llama` (the default) writes the original file: weights uniform in ±0.02·√3 (standard
 * deviation 0.02, the usual init), norms 1. Every other family is written so that its distinctive
 * step moves the logits far beyond the comparison tolerances, so that a forward pass that skips or
 * misplaces it fails:
 *   - matrices scaled by 1/√fan_in, so activations stay near unit size through the layers;
 *   - query and key weights (or the q/k norm weights) scaled so that attention scores have a
 *     standard deviation of 1 (SCORE_STD): attention depends on position, so rope, rope factors,
 *     windows and caps all show;
 *   - norm weights uniform in [0.5, 1.5] times a centre, not 1, so a missing or misplaced norm shows;
 *   - the output side scaled so that the logits spread over a few units: the final cap bites, and a
 *     softmax over 32000 tokens keeps every probability above float's underflow;
 *   - gemma4's per-layer embeddings at about the residual's size (post_norm centre 0.5), its
 *     attention scores at the Gemmas' 0.7 under its scale of 1, its logits capped at 8;
 *   - gemma3n's 25 layers at a fifth of the residual's size each, its AltUp router and
 *     coefficients small enough that rounding does not grow through them (GEMMA3N_POST_NORM …);
 *   - the hybrids' convolution taps F32 with standard deviation 0.5 (reversed taps move the logits
 *     by over 100%), DeltaNet decays of about e^−0.65 per token (no decay moves them by over 100%),
 *     and its output gate z at a quarter of the usual scale: at full scale silu(z) passes llama.cpp's
 *     own F16 rounding through at 0.3% of a row's spread, above the F16 tolerance;
 *   - Mamba-2's A and dt bias about −2 (a decay of e^(−Δ·2) per token with Δ ≈ 0.05–1), D about 1,
 *     and two groups of B and C, so that the decay, the skip and the groups each show.
 * Values come from a SplitMix64 stream per tensor, so the same arch, shape, type and seed always
 * give the same bytes.
 *
 * Type mixes follow llama.cpp's llama_model_quantize rules (src/llama-quant.cpp) in outline: the
 * output head (token_embd.weight when the family ties it) is Q6_K for the 4-bit types, Q8_0 when
 * its rows are not a multiple of 256; Q4_K_M also gives attn_v (attn_qkv where fused) and ffn_down
 * Q6_K on the layers use_more_bits picks (the first and last eighth, and every third between); a
 * row width the chosen type's block does not divide falls back as llama.cpp's
 * tensor_type_fallback does (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0; F16 when even that does not
 * fit). Vectors (norms, rope factors) stay F32. */
#include "errmsg.h"
#include "synth.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

typedef struct {
    const char *name;
    int dim, n_layers, n_heads, n_kv_heads, hidden;
    bool small; /* a test shape: short sliding windows, the family's minimum layer count */
    int ssm_k_heads, ssm_v_heads; /* DeltaNet key/value heads when not derived from n_heads (0) */
    int head_dim;                 /* the (sliding layers') head size when not derived from dim (0) */
    int full_every;               /* gemma4: a full-attention layer every this many when not GEMMA4_FULL_EVERY (0) */
} synth_shape;

static const synth_shape shapes[] = {
    {"mini", 256, 2, 8, 4, 768, true, 0, 0, 0, 0},
    {"mini-mha", 256, 2, 8, 8, 768, true, 0, 0, 0, 0}, /* one query head per KV head, as 134m */
    /* the text model of the synth mmproj files (their projection width, MMPROJ_TEXT) */
    {"vl", 96, 2, 4, 2, 256, true, 0, 0, 0, 0},
    {"134m", 768, 12, 12, 12, 2048, false, 0, 0, 0, 0},
    {"1b", 2048, 22, 32, 4, 5632, false, 0, 0, 0, 0},
    /* Qwen3.5-0.8B's text model: 24 layers of 1024, 8 query / 2 KV heads (of 256 in qwen35),
     * DeltaNet with 16 key and 16 value heads of 128 */
    {"0.8b", 1024, 24, 8, 2, 3584, false, 16, 16, 0, 0},
    /* Gemma 4 E2B's text model: 35 layers of 1536, 8 query heads and 1 KV head (of 256 on the
     * sliding layers, 512 on the full ones), FFN 6144 (doubled on the 15 KV-shared layers) */
    {"e2b", 1536, 35, 8, 1, 6144, false, 0, 0, 256, 0},
    /* Gemma 4 E4B's: 42 layers of 2560 (llama.cpp's gemma4.cpp names 42 layers E4B; mtmd.cpp gives its
     * n_embd 2560), 8 query heads and 2 KV heads of 256, FFN 10240, every sixth layer full attention
     * (so that layer 23, the last before the 18 KV-shared ones, is one); the other rules as E2B's */
    {"e4b", 2560, 42, 8, 2, 10240, false, 0, 0, 256, 6},
    /* bge-small-en-v1.5 (and all-MiniLM-L12, e5-small-v2): 12 layers of 384, 12 heads, FFN 1536 */
    {"bge-small", 384, 12, 12, 12, 1536, false, 0, 0, 0, 0},
    /* EmbeddingGemma-300m: 24 layers of 768, 3 query heads and 1 KV head of 256, FFN 1152 */
    {"embeddinggemma", 768, 24, 3, 1, 1152, false, 0, 0, 256, 0},
};

/* ---- the families ---------------------------------------------------------------------------- */

enum {
    F_LEGACY = 1u << 0,        /* the original llama weights: std 0.02 everywhere, norms 1 */
    F_TIED = 1u << 1,          /* no output.weight: the output projection is token_embd.weight */
    F_PRE_NORM = 1u << 2,      /* attn_norm before attention, ffn_norm before the FFN */
    F_POST_NORM = 1u << 3,     /* post_attention_norm, post_ffw_norm on each block's output */
    F_QK_NORM_HEAD = 1u << 4,  /* attn_q_norm / attn_k_norm of one head's width, shared by the heads */
    F_QK_NORM_FULL = 1u << 5,  /* attn_q_norm / attn_k_norm over the whole projection */
    F_FUSED = 1u << 6,         /* attn_qkv (Q rows, then K, then V); ffn_up = gate rows then up rows */
    F_ROPE_FREQS = 1u << 7,    /* rope_freqs.weight: Llama 3 per-pair frequency divisors */
    F_LONGROPE = 1u << 8,      /* rope_factors_short.weight / rope_factors_long.weight (Phi-3) */
    F_ROPE_DIM_KEY = 1u << 9,  /* writes <arch>.rope.dimension_count */
    F_EMB_SQRT = 1u << 10,     /* the graph multiplies the embeddings by √dim (Gemma) */
    F_HEAD_GAIN = 1u << 11,    /* query/key heads get gains 0.5…2, so a per-head norm differs from a full-width one */
    F_SHORTCONV = 1u << 12,    /* lfm2: layers with il % 3 != 2 are short convolutions (KV head count 0) */
    F_DELTANET = 1u << 13,     /* qwen35: gated DeltaNet layers, full attention every 4th; attn_q holds each
                                * head's query then its output gate; the FFN's norm is post_attention_norm */
    F_MAMBA2 = 1u << 14,       /* granite-hybrid: Mamba-2 layers (KV head count 0), attention where il % 4 == 2 */
    F_GEMMA4 = 1u << 15,       /* gemma4: sliding and full layers of their own head sizes, KV heads and rope
                                * dimensions, KV-shared last layers, per-layer embeddings (synth_gemma4) */
    F_GEMMA3N = 1u << 16,      /* gemma3n: per-layer embeddings, KV-shared layers from the 20th on, AltUp,
                                * Laurel and the sparse FFN gate of the first 10 layers */
    F_DENSE = 1u << 17,        /* gemma-embedding: dense_2 [dim → 4·dim] and dense_3 [4·dim → dim] after pooling
                                * (EmbeddingGemma's 2_Dense and 3_Dense, 768 → 3072 → 768), mean pooling */
    F_MROPE = 1u << 18,        /* rope.dimension_sections: M-RoPE's time, height and width thirds of the pairs */
    F_ATTN_BIAS = 1u << 19,    /* attn_q/k/v biases (qwen2vl) */
    F_DEEPSTACK = 1u << 20,    /* n_deepstack_layers = SYNTH_DEEPSTACK (qwen3vl) */
};

/* qwen3vl: the image rows' deepstack rows a synth text model takes (the synth qwen3vl mmproj's count) */
#define SYNTH_DEEPSTACK 2

/* lfm2's attention layers in a synth file: every third (LFM2-350M has 6 of 16, spread out) */
#define LFM2_ATTENTION_EVERY 3
/* qwen35: full attention on layers with (il + 1) % this == 0 (llama.cpp's default interval) */
#define QWEN35_FULL_ATTENTION_INTERVAL 4
/* the taps of the recurrent layers' convolutions (LFM2's l_cache, Qwen3.5's conv_kernel) */
#define LFM2_L_CACHE 3
#define QWEN35_CONV_KERNEL 4
/* granite-hybrid: attention on layers il % this == 2 (Granite 4.0-H has a few among many Mamba-2
 * layers); Mamba-2 of d_inner = 2·dim (all llama.cpp supports) in heads of 64, Granite 4.0-H's
 * head size, with two groups (it has one) of states of 16 (it has 128) */
#define GRANITE_HYBRID_ATTENTION_EVERY 4
#define MAMBA2_CONV_KERNEL 4
#define MAMBA2_HEAD_DIM 64
#define MAMBA2_GROUPS 2
#define MAMBA2_STATE 16

/* gemma4, as conversion/gemma.py's Gemma4Model writes E2B: every fifth layer full attention
 * (small shapes: every third), the last 3/7 of the layers (small: half) reading the KV cache of
 * the last earlier layer of their kind (attention.shared_kv_layers), their FFN doubled
 * (use_double_wide_mlp); the full layers' heads twice the sliding ones' (global_head_dim), with
 * half the KV heads (at least 1), rotated over the whole head (rope.dimension_count) with
 * rope_freqs leaving all but the first quarter unrotated (its "proportional" rope,
 * partial_rotary_factor 0.25: 1e30 divides the rest), and no attn_v (V is K, attention_k_eq_v);
 * per-layer embeddings of 64 (E2B: 256) values per layer */
#define GEMMA4_FULL_EVERY_SMALL 3
#define GEMMA4_FULL_EVERY 5
#define GEMMA4_UNROTATED 1e30f

/* gemma3n, as conversion/gemma.py's Gemma3NModel writes E2B and llama.cpp's gemma3n.cpp fixes it
 * (llama-hparams.h, models.h): 4 AltUp streams, the first active; Laurel of rank 64; per-layer
 * embeddings of 256; the layers from the 20th on reading the cache of layer 18 (sliding) or 19 (full),
 * every fifth layer full attention; the first 10 layers' FFN gates sparse at the normal quantile of
 * 0.95 (activation_sparsity_scale, −inf for the dense layers as the converter writes icdf(0)). The
 * small shapes take 25 layers, so that shared layers of both kinds exist. */
#define GEMMA3N_ALTUP 4
#define GEMMA3N_LAUREL_RANK 64
#define GEMMA3N_PLE 256
#define GEMMA3N_KV_FROM 20
#define GEMMA3N_FULL_EVERY 5
#define GEMMA3N_SPARSE_LAYERS 10
#define GEMMA3N_SPARSE_STD 1.6448533535003662f
/* gemma3n's scales: 25 post-normed layers whose streams AltUp mixes amplify rounding (llama.cpp's
 * F16 activations, its F16 GELU table) through the depth, so the blocks' outputs, Laurel's branch
 * and the per-layer embeddings enter at a fifth of the residual's size (post norms' centre), the
 * scores at 0.4, the router's tanh inputs at a standard deviation of about 0.5 and the predict
 * coefficients small: then an F16 file stays within 0.07% of llama.cpp, and switching AltUp,
 * Laurel, the sparse gate or the per-layer embeddings off still moves the logits by 36–83%
 * (measured with node-llama-cpp 3.21.1) */
#define GEMMA3N_POST_NORM 0.2f
#define GEMMA3N_ROUTER 0.5f
#define GEMMA3N_PREDICT_STD 0.05f
#define GEMMA3N_CORRECT_STD 0.3f

typedef struct {
    const char *name;       /* --arch */
    const char *arch;       /* general.architecture and the key prefix */
    unsigned flags;
    int min_layers;         /* a small shape gets at least this many layers, so the layer pattern shows */
    int head_factor;        /* head size = head_factor · dim / n_heads; ≠ 1 writes key_length/value_length */
    uint32_t ctx_train;
    float rope_base, rms_eps;
    /* family keys, each written only when non-zero */
    uint32_t swa_small, swa_large; /* attention.sliding_window on the small shapes / on 134m and 1b */
    float rope_base_swa;           /* rope.freq_base_swa */
    float attn_softcap, final_softcap;
    float embedding_scale, residual_scale, logit_scale;
    bool attention_scale_1_hd;     /* attention.scale = 1/head_dim (Granite: 1/64 at head size 64) */
    uint32_t orig_ctx;             /* rope.scaling.original_context_length */
    float rope_attn_factor;        /* rope.scaling.attn_factor */
    float yarn_factor;             /* rope.scaling.type yarn with this factor (and YaRN's keys) */
    float yarn_log_mul;            /* rope.scaling.yarn_log_multiplier */
    float attn_temp_scale;         /* attention.temperature_scale (Llama 4's query temperature) */
    float score_std;               /* attention scores' standard deviation, when not SCORE_STD */
    float logit_std;               /* what the output side aims at: the logits' standard deviation */
} synth_family;

/* Qwen3-Reranker's prompt, the rerank template conversion/qwen.py stores (llama.cpp's server puts
 * the query and the document in for {query} and {document}) */
#define QWEN3_RERANK_PROMPT                                                                                                  \
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. " \
    "Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a web search "     \
    "query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"         \
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"

/* Phi-3's converter: sqrt(1 + ln(context / original) / ln(original)) for 131072 / 4096 */
#define PHI3_ATTN_FACTOR 1.1902380714238083f

static const synth_family families[] = {
    {.name = "llama", .arch = "llama", .flags = F_LEGACY | F_PRE_NORM | F_ROPE_DIM_KEY, .head_factor = 1,
     .ctx_train = 2048, .rope_base = 10000.0f, .rms_eps = 1e-5f},
    {.name = "llama3", .arch = "llama", .flags = F_PRE_NORM | F_ROPE_DIM_KEY | F_ROPE_FREQS, .head_factor = 1,
     .ctx_train = 131072, .rope_base = 500000.0f, .rms_eps = 1e-5f, .logit_std = 3.0f},
    {.name = "qwen3", .arch = "qwen3", .flags = F_TIED | F_PRE_NORM | F_QK_NORM_HEAD, .head_factor = 2,
     .ctx_train = 40960, .rope_base = 1000000.0f, .rms_eps = 1e-6f, .logit_std = 3.0f},
    {.name = "gemma2", .arch = "gemma2", .flags = F_TIED | F_PRE_NORM | F_POST_NORM | F_EMB_SQRT, .head_factor = 2,
     .ctx_train = 8192, .rope_base = 10000.0f, .rms_eps = 1e-6f, .swa_small = 8, .swa_large = 4096,
     .attn_softcap = 2.0f, .final_softcap = 4.0f, .score_std = 0.7f, .logit_std = 2.5f},
    {.name = "gemma3", .arch = "gemma3", .flags = F_TIED | F_PRE_NORM | F_POST_NORM | F_QK_NORM_HEAD | F_EMB_SQRT,
     .min_layers = 6, .head_factor = 2, .ctx_train = 32768, .rope_base = 1000000.0f, .rms_eps = 1e-6f,
     .swa_small = 12, .swa_large = 512, .rope_base_swa = 10000.0f, .logit_std = 3.0f},
    {.name = "phi3", .arch = "phi3", .flags = F_PRE_NORM | F_FUSED | F_LONGROPE | F_ROPE_DIM_KEY, .head_factor = 1,
     .ctx_train = 131072, .rope_base = 10000.0f, .rms_eps = 1e-5f, .orig_ctx = 4096,
     .rope_attn_factor = PHI3_ATTN_FACTOR, .logit_std = 3.0f},
    {.name = "smollm3", .arch = "smollm3", .flags = F_TIED | F_PRE_NORM | F_ROPE_DIM_KEY, .min_layers = 4,
     .head_factor = 1, .ctx_train = 65536, .rope_base = 10000.0f, .rms_eps = 1e-6f,
     .logit_std = 3.0f},
    {.name = "granite", .arch = "granite", .flags = F_TIED | F_PRE_NORM | F_ROPE_DIM_KEY, .head_factor = 1,
     .ctx_train = 131072, .rope_base = 10000000.0f, .rms_eps = 1e-5f, .embedding_scale = 12.0f,
     .residual_scale = 0.22f, .logit_scale = 8.0f, .attention_scale_1_hd = true,
     .logit_std = 3.0f},
    {.name = "olmo2", .arch = "olmo2", .flags = F_POST_NORM | F_QK_NORM_FULL | F_HEAD_GAIN, .head_factor = 1,
     .ctx_train = 4096, .rope_base = 500000.0f, .rms_eps = 1e-6f, .logit_std = 3.0f},
    /* Granite 4.0-H as its converter writes it (granite.py's GraniteHybridModel), with rope on its
     * attention layers (rope.scaling.finetuned true, as Bamba's files; 4.0-H's own say false) */
    {.name = "granite-hybrid", .arch = "granitehybrid", .flags = F_TIED | F_PRE_NORM | F_ROPE_DIM_KEY | F_MAMBA2,
     .min_layers = 4, .head_factor = 1, .ctx_train = 131072, .rope_base = 10000000.0f, .rms_eps = 1e-5f,
     .embedding_scale = 12.0f, .residual_scale = 0.22f, .logit_scale = 8.0f, .attention_scale_1_hd = true,
     .logit_std = 3.0f},
    {.name = "lfm2", .arch = "lfm2", .flags = F_TIED | F_PRE_NORM | F_QK_NORM_HEAD | F_SHORTCONV, .min_layers = 4,
     .head_factor = 1, .ctx_train = 128000, .rope_base = 1000000.0f, .rms_eps = 1e-5f, .logit_std = 3.0f},
    {.name = "qwen35", .arch = "qwen35", .flags = F_PRE_NORM | F_QK_NORM_HEAD | F_ROPE_DIM_KEY | F_DELTANET | F_MROPE, .min_layers = 4,
     .head_factor = 2, .ctx_train = 262144, .rope_base = 10000000.0f, .rms_eps = 1e-6f, .logit_std = 3.0f},
    /* the Qwen-VL text models: Qwen2.5-VL's (qwen2's layer with attention biases) and Qwen3-VL's
     * (qwen3's, deepstack rows for its first two layers), each with M-RoPE */
    {.name = "qwen2vl", .arch = "qwen2vl", .flags = F_PRE_NORM | F_ROPE_DIM_KEY | F_MROPE | F_ATTN_BIAS, .head_factor = 1,
     .ctx_train = 128000, .rope_base = 10000.0f, .rms_eps = 1e-6f, .logit_std = 3.0f},
    /* more layers than deepstack rows: llama.cpp adds the last layer's deepstack row before it drops
     * the rows without logits, so a deepstack row on the last layer fails there */
    {.name = "qwen3vl", .arch = "qwen3vl", .flags = F_TIED | F_PRE_NORM | F_QK_NORM_HEAD | F_ROPE_DIM_KEY | F_MROPE | F_DEEPSTACK,
     .min_layers = 4, .head_factor = 2, .ctx_train = 262144, .rope_base = 5000000.0f, .rms_eps = 1e-6f, .logit_std = 3.0f},
    /* Ministral 3 3B's text model: factor 16, beta 32/1, log multiplier 1 as its file carries; the
     * original context is 16 (16384 there) so that the ramp and the query temperature act within a
     * short prompt, and the temperature 0.5 (0.1 there) so that it moves the logits measurably */
    {.name = "mistral3", .arch = "mistral3", .flags = F_PRE_NORM | F_ROPE_DIM_KEY, .head_factor = 1,
     .ctx_train = 262144, .rope_base = 1000000.0f, .rms_eps = 1e-5f, .orig_ctx = 16, .yarn_factor = 16.0f,
     .yarn_log_mul = 1.0f, .attn_temp_scale = 0.5f, .logit_std = 3.0f},
    /* EmbeddingGemma-300m as conversion/gemma.py's EmbeddingGemma writes it (with
     * --sentence-transformers-dense-modules): gemma3's keys and tensors, its sliding window as in
     * config.json (the graph makes it symmetric) */
    {.name = "gemma-embedding", .arch = "gemma-embedding", .flags = F_TIED | F_PRE_NORM | F_POST_NORM | F_QK_NORM_HEAD | F_EMB_SQRT | F_DENSE,
     .min_layers = 6, .head_factor = 2, .ctx_train = 2048, .rope_base = 1000000.0f, .rms_eps = 1e-6f,
     .swa_small = 12, .swa_large = 512, .rope_base_swa = 10000.0f, .logit_std = 3.0f},
    {.name = "gemma4", .arch = "gemma4",
     .flags = F_TIED | F_PRE_NORM | F_POST_NORM | F_QK_NORM_HEAD | F_EMB_SQRT | F_ROPE_DIM_KEY | F_GEMMA4, .min_layers = 6,
     .head_factor = 1, .ctx_train = 131072, .rope_base = 1000000.0f, .rms_eps = 1e-6f, .swa_small = 12, .swa_large = 512,
     .rope_base_swa = 10000.0f, .final_softcap = 8.0f, .score_std = 0.7f, .logit_std = 3.0f},
    {.name = "gemma3n", .arch = "gemma3n", .flags = F_TIED | F_PRE_NORM | F_POST_NORM | F_QK_NORM_HEAD | F_EMB_SQRT | F_GEMMA3N,
     .min_layers = 25, .head_factor = 1, .ctx_train = 32768, .rope_base = 1000000.0f, .rms_eps = 1e-6f, .swa_small = 8,
     .swa_large = 512, .rope_base_swa = 10000.0f, .final_softcap = 30.0f, .score_std = 0.4f, .logit_std = 3.0f},
};

/* What the query/key weights aim at: attention scores (scaled, before softmax) with this standard
 * deviation. 1 keeps attention selective enough that rope factors, no-rope layers and the rope
 * scaling attn_factor each move the worst logit row by 12–26% of its spread, while llama.cpp's own
 * rounding (it converts activations to F16 before an F16 matrix product) moves it by about 0.1%:
 * peakier attention amplifies that rounding through the layers towards the F16 tolerance (0.2%).
 * The Gemmas take 0.7 (their post-normed blocks amplify more; windows, caps and the SWA rope base
 * still move the worst row by 19% or more). Measured with llama.cpp 80fb11ac on the mini shape. */
#define SCORE_STD 1.0f

/* llama.cpp's LLAMA_FTYPE values for general.file_type (llama.h) */
enum { FTYPE_F32 = 0, FTYPE_F16 = 1, FTYPE_Q4_0 = 2, FTYPE_Q8_0 = 7, FTYPE_Q4_K_M = 15, FTYPE_Q5_K_M = 17, FTYPE_Q6_K = 18 };

/* ---- the tensors ----------------------------------------------------------------------------- */

/* what a tensor is, for choosing its type in a mix (llama.cpp's tensor categories) */
typedef enum { R_EMBD, R_OUTPUT, R_ATTN_V, R_FFN_DOWN, R_OTHER, R_UNQUANTIZED } tensor_role;

typedef struct {
    char name[64];
    uint32_t type;
    int64_t ne0, ne1;    /* ne1 = 1 for vectors */
    int64_t ne2;         /* > 1: a stack of ne2 matrices of ne1 rows (0: one) */
    uint64_t offset, bytes;
    /* values: random uniform with standard deviation std, or (norm) uniform in centre·[0.5, 1.5],
     * or (values) the given ne0 numbers */
    float std, centre;
    bool norm;
    const float *values;
    int head_rows;       /* > 0: rows come in heads of this many, scaled by head_gain */
    int n_head_groups;
    int64_t v_row0;      /* > 0: rows from here on (a fused attn_qkv's V) have standard deviation v_std */
    float v_std;
    const int64_t *zero_rows; /* these rows are all zeros (the lexical encoder's special tokens) */
    int n_zero_rows;
    int64_t ne4[4];      /* ne4[0] > 0: a 4-D tensor of this shape in the directory (the rows stay ne0 by ne1) */
} synth_tensor;

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* llama.cpp's tensor_type_fallback: a type whose block does not divide the row width */
static uint32_t type_fallback(uint32_t type, int64_t ne0) {
    if (ne0 % quant_get(type)->block_size == 0) return type;
    uint32_t t = type == WICK_TYPE_Q4_K ? WICK_TYPE_Q5_0
               : type == WICK_TYPE_Q5_K ? WICK_TYPE_Q5_1
               : type == WICK_TYPE_Q6_K ? WICK_TYPE_Q8_0
               : type == WICK_TYPE_Q2_K || type == WICK_TYPE_Q3_K ? WICK_TYPE_Q4_0
               : type;
    return ne0 % quant_get(t)->block_size == 0 ? t : WICK_TYPE_F16;
}

typedef struct {
    uint32_t base;   /* the type of most matrices */
    uint32_t ftype;
    bool k_mix;      /* Q4_K_M's and Q5_K_M's extra bits */
} synth_quant;

/* The type of a matrix: llama.cpp's llama_tensor_get_type_impl for these six mixes. i and n are
 * the layer and layer count (attn_v and ffn_down, one per layer, are counted as llama.cpp counts). */
static uint32_t matrix_type(const synth_quant *q, tensor_role role, bool tied, int64_t ne0, int i, int n) {
    if (q->base == WICK_TYPE_F16 || q->base == WICK_TYPE_F32) return q->base;
    /* llama.cpp's quantizer leaves AltUp's, Laurel's and per_layer_model_proj's tensors as converted */
    if (role == R_UNQUANTIZED) return WICK_TYPE_F16;
    uint32_t t = q->base;
    if (role == R_OUTPUT || (tied && role == R_EMBD)) {
        if (ne0 % quant_get(q->base)->block_size != 0) t = WICK_TYPE_Q8_0;
        else if (q->base != WICK_TYPE_Q8_0) t = WICK_TYPE_Q6_K;
    } else if (q->k_mix && (role == R_ATTN_V || role == R_FFN_DOWN) && use_more_bits(i, n)) {
        t = WICK_TYPE_Q6_K;
    }
    return type_fallback(t, ne0);
}

/* Whether layer l of a hybrid family is recurrent. */
static bool layer_recurrent(unsigned flags, int l) {
    if (flags & F_SHORTCONV) return l % LFM2_ATTENTION_EVERY != LFM2_ATTENTION_EVERY - 1;
    if (flags & F_DELTANET) return (l + 1) % QWEN35_FULL_ATTENTION_INTERVAL != 0;
    if (flags & F_MAMBA2) return l % GRANITE_HYBRID_ATTENTION_EVERY != 2;
    return false;
}

/* the most layers a shape has (the per-layer metadata arrays are built on the stack) */
#define MAX_SYNTH_LAYERS 64

/* Gain of query/key head h of n: 0.5 … 2, geometric about 1. */
static float head_gain(int h, int n) { return n > 1 ? exp2f(2.0f * (float)h / (float)(n - 1) - 1.0f) : 1.0f; }

/* ---- writing ---------------------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [-1, 1) from the top 53 bits */
static float uniform(uint64_t *s) { return (float)((double)(splitmix(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

/* The metadata, built in memory first: the header needs its count. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    uint64_t count;
    bool oom;
} meta_buf;

static void meta_put(meta_buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void meta_str(meta_buf *b, const char *s) {
    uint64_t n = strlen(s);
    meta_put(b, &n, 8);
    meta_put(b, s, n);
}

/* key = "prefix.key", or key alone when prefix is NULL */
static void meta_key(meta_buf *b, const char *prefix, const char *key, uint32_t type) {
    char full[128];
    snprintf(full, sizeof full, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", key);
    meta_str(b, full);
    meta_put(b, &type, 4);
    b->count++;
}

static void kv_u32(meta_buf *b, const char *prefix, const char *key, uint32_t v) { meta_key(b, prefix, key, GGUF_U32); meta_put(b, &v, 4); }
static void kv_bool(meta_buf *b, const char *prefix, const char *key, bool v) { uint8_t u = v; meta_key(b, prefix, key, GGUF_BOOL); meta_put(b, &u, 1); }
static void kv_f32(meta_buf *b, const char *prefix, const char *key, float v) { meta_key(b, prefix, key, GGUF_F32); meta_put(b, &v, 4); }
static void kv_str(meta_buf *b, const char *prefix, const char *key, const char *v) { meta_key(b, prefix, key, GGUF_STRING); meta_str(b, v); }
static void kv_bool_array(meta_buf *b, const char *prefix, const char *key, const bool *v, uint64_t n) {
    uint32_t type = GGUF_BOOL;
    meta_key(b, prefix, key, GGUF_ARRAY);
    meta_put(b, &type, 4);
    meta_put(b, &n, 8);
    for (uint64_t i = 0; i < n; i++) {
        uint8_t x = v[i];
        meta_put(b, &x, 1);
    }
}

static void kv_f32_array(meta_buf *b, const char *prefix, const char *key, const float *v, uint64_t n) {
    uint32_t type = GGUF_F32;
    meta_key(b, prefix, key, GGUF_ARRAY);
    meta_put(b, &type, 4);
    meta_put(b, &n, 8);
    meta_put(b, v, n * 4);
}

static void kv_str_array(meta_buf *b, const char *prefix, const char *key, const char *const *v, uint64_t n) {
    uint32_t type = GGUF_STRING;
    meta_key(b, prefix, key, GGUF_ARRAY);
    meta_put(b, &type, 4);
    meta_put(b, &n, 8);
    for (uint64_t i = 0; i < n; i++) meta_str(b, v[i]);
}

static void kv_i32_array(meta_buf *b, const char *prefix, const char *key, const int32_t *v, uint64_t n) {
    uint32_t type = GGUF_I32;
    meta_key(b, prefix, key, GGUF_ARRAY);
    meta_put(b, &type, 4);
    meta_put(b, &n, 8);
    meta_put(b, v, n * 4);
}

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, 8); }
static void put_str(FILE *f, const char *s) { put_u64(f, strlen(s)); put(f, s, strlen(s)); }

/* The bytes one metadata entry occupies in its file, key included (the reader validated them). */
static size_t kv_extent(const gguf_kv *kv, const uint8_t **start) {
    static const uint32_t scalar[GGUF_VALUE_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    *start = (const uint8_t *)kv->key.ptr - 8;
    const uint8_t *value = (const uint8_t *)kv->key.ptr + kv->key.len + 4, *end;
    if (kv->type == GGUF_STRING) end = (const uint8_t *)kv->val.str.ptr + kv->val.str.len;
    else if (kv->type == GGUF_ARRAY) end = kv->arr_data + kv->arr_bytes;
    else end = value + scalar[kv->type];
    return (size_t)(end - *start);
}

static bool is_tokenizer_kv(const gguf_kv *kv) { return kv->key.len > 10 && !memcmp(kv->key.ptr, "tokenizer.", 10); }

/* Llama 3's rope factors (convert_hf_to_gguf.py, rope_type "llama3": factor 8, low/high frequency
 * factors 1 and 4) for an original context of 32 positions, so that they act at test lengths:
 * pairs whose wavelength is under 32/4 keep factor 1, those over 32 get 8, those between a blend. */
static void llama3_rope_factors(float *out, int n_pairs, float base) {
    const double factor = 8, low = 1, high = 4, old_ctx = 32, pi = 3.14159265358979323846;
    for (int i = 0; i < n_pairs; i++) {
        double freq = 1.0 / pow(base, (double)(2 * i) / (double)(2 * n_pairs));
        double wavelen = 2 * pi / freq;
        if (wavelen < old_ctx / high) out[i] = 1.0f;
        else if (wavelen > old_ctx / low) out[i] = (float)factor;
        else {
            double smooth = (old_ctx / wavelen - low) / (high - low);
            out[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
}

/* Phi-3's two sets, chosen by llama.cpp from the context size against original_context_length:
 * short rising 1 → 6 across the pairs, long 1 → 48, so that taking the wrong set shows. */
static void phi3_rope_factors(float *out_short, float *out_long, int n_pairs) {
    for (int i = 0; i < n_pairs; i++) {
        float x = n_pairs > 1 ? (float)i / (float)(n_pairs - 1) : 0.0f;
        out_short[i] = 1.0f + 5.0f * x;
        out_long[i] = out_short[i] * (1.0f + 7.0f * x);
    }
}

/* The GGUF v3 file: header, metadata, the tensor infos, then each tensor's rows (random values
 * from a SplitMix64 stream per tensor, norms about their centre, or given values), aligned. */
static int write_synth_file(const char *out_path, synth_tensor *ts, int n_t, const meta_buf *mb, unsigned long long seed,
                            bool legacy, errmsg *err) {
    uint64_t off = 0;
    int64_t widest = 0;
    for (int i = 0; i < n_t; i++) {
        ts[i].offset = off;
        if (ts[i].ne2 > 1) ts[i].ne1 *= ts[i].ne2; /* rows of the whole stack from here on (the header divides) */
        ts[i].bytes = quant_row_size(ts[i].type, ts[i].ne0) * (uint64_t)ts[i].ne1;
        off = (off + ts[i].bytes + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
        if (ts[i].ne0 > widest) widest = ts[i].ne0;
    }

    FILE *f = fopen(out_path, "wb");
    if (!f) return errorf(err, WICK_ERR_INVALID_ARG, "cannot create %s", out_path);
    put(f, "GGUF", 4);
    put_u32(f, 3);
    put_u64(f, (uint64_t)n_t);
    put_u64(f, mb->count);
    put(f, mb->p, mb->n);
    for (int i = 0; i < n_t; i++) {
        put_str(f, ts[i].name);
        bool vec = ts[i].ne1 == 1;
        if (ts[i].ne4[0] > 0) {
            put_u32(f, 4);
            for (int d = 0; d < 4; d++) put_u64(f, (uint64_t)ts[i].ne4[d]);
            put_u32(f, ts[i].type);
            put_u64(f, ts[i].offset);
            continue;
        }
        put_u32(f, ts[i].ne2 > 1 ? 3 : vec ? 1 : 2);
        put_u64(f, (uint64_t)ts[i].ne0);
        if (!vec) put_u64(f, (uint64_t)(ts[i].ne2 > 1 ? ts[i].ne1 / ts[i].ne2 : ts[i].ne1));
        if (ts[i].ne2 > 1) put_u64(f, (uint64_t)ts[i].ne2);
        put_u32(f, ts[i].type);
        put_u64(f, ts[i].offset);
    }
    long pos = ftell(f);
    static const uint8_t zeros[GGUF_DEFAULT_ALIGNMENT];
    put(f, zeros, (size_t)((GGUF_DEFAULT_ALIGNMENT - pos % GGUF_DEFAULT_ALIGNMENT) % GGUF_DEFAULT_ALIGNMENT));

    /* data, row by row */
    float *row = malloc((size_t)widest * sizeof *row);
    uint8_t *qrow = malloc(quant_row_size(WICK_TYPE_F32, widest));
    int rc = 0;
    for (int i = 0; i < n_t && row && qrow; i++) {
        const synth_tensor *ti = &ts[i];
        const quant_type *qt = quant_get(ti->type);
        uint64_t state = seed * 0x100000001b3ull + (uint64_t)i;
        const float scale = ti->std * 1.7320508f; /* uniform in ±a has std a/√3 */
        for (int64_t r = 0; r < ti->ne1; r++) {
            float rs = ti->v_row0 && r >= ti->v_row0 ? ti->v_std * 1.7320508f : scale;
            if (ti->head_rows) rs *= head_gain((int)(r / ti->head_rows), ti->n_head_groups);
            for (int z = 0; z < ti->n_zero_rows; z++)
                if (ti->zero_rows[z] == r) rs = 0;
            for (int64_t c = 0; c < ti->ne0; c++)
                row[c] = ti->values ? ti->values[c]
                       : ti->norm   ? (legacy ? ti->centre : ti->centre * (1.0f + 0.5f * uniform(&state)))
                                    : rs * uniform(&state);
            size_t rb = quant_row_size(ti->type, ti->ne0);
            if (ti->type == WICK_TYPE_F32) memcpy(qrow, row, rb);
            else qt->from_float(row, qrow, ti->ne0);
            put(f, qrow, rb);
        }
        uint64_t pad = (i + 1 < n_t ? ts[i + 1].offset : ti->offset + ti->bytes) - ti->offset - ti->bytes;
        put(f, zeros, (size_t)pad);
    }
    if (!row || !qrow) rc = errorf(err, WICK_ERR_NOMEM, "out of memory");
    if (fclose(f) != 0 && rc == 0) rc = errorf(err, WICK_ERR_INVALID_ARG, "writing %s failed", out_path);
    free(row);
    free(qrow);
    return rc;
}

/* ---- encoders ------------------------------------------------------------------------------- */

/* `wick synth --arch bert`: the tensors and keys llama.cpp's converter writes for a BERT embedding
 * model (conversion/bert.py; tensor names of gguf-py's MODEL_ARCH.BERT), with biases and norms
 * that all count:
 *   - token embeddings of standard deviation 1, position and token-type tables of 0.5 (F32, as the
 *     converter always keeps them), so that an encoder without positions or token types differs far;
 *   - query and key weights giving attention scores a standard deviation of 1 (as SCORE_STD),
 *     so that a causal mask in place of the bidirectional one moves the output far;
 *   - the LayerNorms' weights about 1, their biases and every matrix's of standard deviation 0.2.
 * pooling: "mean" (bge-small, all-MiniLM's), "cls" (bge's), "last" or "none" (bert.pooling_type), or
 * "rank" (bert only): a bge-reranker, with RoBERTa's classification head (cls.weight and its bias,
 * then tanh; cls.output [dim][1] and its bias, as conversion/bert.py writes bge-reranker-base's),
 * its one output the score: cls.output weights of 4/√dim spread it by about 1 across pairs (the
 * [CLS] rows of different pairs are much alike), and the output bias of BERT_RANK_BIAS keeps it
 * far from 0, where a relative comparison would mean nothing.
 * `--arch nomic-bert` (conversion/bert.py's NomicBertModel: nomic-embed-text-v1.5) has no position
 * table but rotary positions (rope.freq_base 1000), one attn_qkv and a SwiGLU FFN (ffn_gate,
 * ffn_up), no biases but the LayerNorms'. `--arch modern-bert` (ModernBertModel) pre-norms each
 * block (no attn_norm on the first layer) with LayerNorms without biases, fuses Q, K and V,
 * writes the GeGLU's gate and up rows in one ffn_up, ends with output_norm, and has no token
 * types; every third layer from the first is global, the others local within a window of
 * BERT_SWA_SMALL (ModernBERT's local_attention 128 on the larger shapes) with rope base 10000
 * against the global 160000; at least three layers, so that the alternation shows.
 * `--lexical` (bert only) makes an encoder whose similarities mean something, for retrieval tests:
 * attention's V and output projections, the FFN's down projection, every bias and the position
 * and token-type tables are zero, so that each layer adds nothing to the residual and a token's
 * output is LayerNorm applied to its own random embedding (a fixed vector per token, of mean 0
 * and unit spread; the norms' weights are 1); mean pooling then gives
 * the average of the text's token vectors, and the cosine of two texts follows the words they
 * share (random vectors of 384 dimensions are nearly orthogonal). The special tokens' rows
 * ([CLS], [SEP], padding) are zero, LayerNorm keeps them zero, and so the two tokens every text
 * has add nothing to its vector: two texts without a common word score about 0. */
#define BERT_TOKEN_TYPES 2
#define BERT_CTX_TRAIN 512
#define BERT_LAYER_NORM_EPS 1e-12f
#define BERT_BIAS_STD 0.2f
#define BERT_SWA_SMALL 8
enum { ENC_BERT, ENC_NOMIC, ENC_MODERN };
#define BERT_RANK_BIAS 3.0f

static int synth_write_bert(const synth_shape *sh, const synth_quant *q, const char *type, int pooling, int variant, bool lexical,
                            const gguf_file *vg, int64_t n_vocab, const char *out_path, unsigned long long seed, errmsg *err) {
    const int dim = sh->dim, n_heads = sh->n_heads, hidden = sh->hidden;
    const int n_layers = variant == ENC_MODERN && sh->n_layers < 3 ? 3 : sh->n_layers;
    const bool bert = variant == ENC_BERT, modern = variant == ENC_MODERN;
    const float norm_rms = 1.0408f; /* as synth_write's */
    /* scores q·k/√head_dim of std SCORE_STD from components of std √SCORE_STD, the input LayerNormed */
    const float qk_std = sqrtf(SCORE_STD) / (sqrtf((float)dim) * norm_rms);
    int cap_t = 12 + 16 * n_layers, n_t = 0;
    synth_tensor *ts = calloc((size_t)cap_t, sizeof *ts), *t;
    if (!ts) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    /* the lexical encoder (see above): what would mix tokens or add a common vector is zero */
    const float mix = lexical ? 0.0f : 1.0f;
    static const char *const special_keys[] = {"tokenizer.ggml.cls_token_id", "tokenizer.ggml.seperator_token_id", /* sic: llama.cpp's key */
                                               "tokenizer.ggml.padding_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    int64_t special[5];
    int n_special = 0;
    for (int i = 0; lexical && i < 5; i++) {
        uint64_t id;
        if (gguf_get_u64(vg, special_keys[i], &id) && (int64_t)id < n_vocab) special[n_special++] = (int64_t)id;
    }
#define TENSOR(ne0_, ne1_, ...) (t = &ts[n_t++], t->ne0 = (ne0_), t->ne1 = (ne1_), snprintf(t->name, sizeof t->name, __VA_ARGS__))
#define MATRIX(role, i, std_, ne0_, ne1_, ...) \
    (TENSOR(ne0_, ne1_, __VA_ARGS__), t->type = matrix_type(q, role, false, ne0_, i, n_layers), t->std = (std_))
#define TABLE(std_, ne0_, ne1_, ...) (TENSOR(ne0_, ne1_, __VA_ARGS__), t->type = WICK_TYPE_F32, t->std = (std_))
#define VECTOR(std_, ne0_, ...) (TENSOR(ne0_, 1, __VA_ARGS__), t->type = WICK_TYPE_F32, t->std = (std_))
#define NORM(ne0_, ...) (TENSOR(ne0_, 1, __VA_ARGS__), t->type = WICK_TYPE_F32, t->norm = true, t->centre = 1.0f)
    MATRIX(R_EMBD, 0, 1.0f, dim, n_vocab, "token_embd.weight");
    t->zero_rows = special, t->n_zero_rows = n_special;
    if (!modern) TABLE(0.5f * mix, dim, BERT_TOKEN_TYPES, "token_types.weight");
    if (bert) TABLE(0.5f * mix, dim, BERT_CTX_TRAIN, "position_embd.weight");
    NORM(dim, "token_embd_norm.weight");
    if (!modern) VECTOR(BERT_BIAS_STD * mix, dim, "token_embd_norm.bias");
    for (int l = 0; !bert && l < n_layers; l++) {
        if (modern && l > 0) NORM(dim, "blk.%d.attn_norm.weight", l);
        MATRIX(R_ATTN_V, l, qk_std, dim, 3 * dim, "blk.%d.attn_qkv.weight", l);
        t->v_row0 = 2 * dim, t->v_std = 1.0f / sqrtf((float)dim);
        MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, dim, "blk.%d.attn_output.weight", l);
        if (modern) NORM(dim, "blk.%d.ffn_norm.weight", l);
        else NORM(dim, "blk.%d.attn_output_norm.weight", l), VECTOR(BERT_BIAS_STD, dim, "blk.%d.attn_output_norm.bias", l);
        MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, modern ? 2 * hidden : hidden, "blk.%d.ffn_up.weight", l);
        if (!modern) MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, hidden, "blk.%d.ffn_gate.weight", l);
        MATRIX(R_FFN_DOWN, l, 1.0f / sqrtf((float)hidden), hidden, dim, "blk.%d.ffn_down.weight", l);
        if (!modern) NORM(dim, "blk.%d.layer_output_norm.weight", l), VECTOR(BERT_BIAS_STD, dim, "blk.%d.layer_output_norm.bias", l);
    }
    if (modern) NORM(dim, "output_norm.weight");
    for (int l = 0; bert && l < n_layers; l++) {
        MATRIX(R_OTHER, l, qk_std, dim, dim, "blk.%d.attn_q.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.attn_q.bias", l);
        MATRIX(R_OTHER, l, qk_std, dim, dim, "blk.%d.attn_k.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.attn_k.bias", l);
        MATRIX(R_ATTN_V, l, mix / sqrtf((float)dim), dim, dim, "blk.%d.attn_v.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.attn_v.bias", l);
        MATRIX(R_OTHER, l, mix / sqrtf((float)dim), dim, dim, "blk.%d.attn_output.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.attn_output.bias", l);
        NORM(dim, "blk.%d.attn_output_norm.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.attn_output_norm.bias", l);
        MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, hidden, "blk.%d.ffn_up.weight", l);
        VECTOR(BERT_BIAS_STD * mix, hidden, "blk.%d.ffn_up.bias", l);
        MATRIX(R_FFN_DOWN, l, mix / sqrtf((float)hidden), hidden, dim, "blk.%d.ffn_down.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.ffn_down.bias", l);
        NORM(dim, "blk.%d.layer_output_norm.weight", l);
        VECTOR(BERT_BIAS_STD * mix, dim, "blk.%d.layer_output_norm.bias", l);
    }
    static const float rank_bias = BERT_RANK_BIAS;
    if (pooling == 4) { /* LLAMA_POOLING_TYPE_RANK */
        MATRIX(R_OTHER, 0, 1.0f / sqrtf((float)dim), dim, dim, "cls.weight");
        VECTOR(BERT_BIAS_STD, dim, "cls.bias");
        MATRIX(R_OTHER, 0, 4.0f / sqrtf((float)dim), dim, 1, "cls.output.weight");
        VECTOR(0, 1, "cls.output.bias"), t->values = &rank_bias;
    }
#undef NORM
#undef VECTOR
#undef TABLE
#undef MATRIX
#undef TENSOR
    /* lexical: the LayerNorms' weights exactly 1, or the 25 random ones of bge-small's shape, multiplied
     * together, would leave a few dimensions dominant and unrelated texts far from orthogonal */
    float *ones = lexical ? malloc((size_t)dim * sizeof *ones) : NULL;
    if (lexical && !ones) { free(ts); return errorf(err, WICK_ERR_NOMEM, "out of memory"); }
    for (int i = 0; lexical && i < dim; i++) ones[i] = 1.0f;
    for (int i = 0; lexical && i < n_t; i++)
        if (ts[i].norm) ts[i].values = ones;
    meta_buf mb = {0};
    const char *a = bert ? "bert" : modern ? "modern-bert" : "nomic-bert";
    char name[96];
    snprintf(name, sizeof name, "wick synth %s%s %s %s", a, lexical ? " lexical" : "", sh->name, type);
    kv_str(&mb, NULL, "general.architecture", a);
    kv_str(&mb, NULL, "general.name", name);
    kv_u32(&mb, NULL, "general.file_type", q->ftype);
    kv_u32(&mb, a, "context_length", BERT_CTX_TRAIN);
    if (!bert) kv_f32(&mb, a, "rope.freq_base", modern ? 160000.0f : 1000.0f);
    if (modern) {
        kv_u32(&mb, a, "attention.sliding_window", sh->small ? BERT_SWA_SMALL : 128);
        kv_u32(&mb, a, "attention.sliding_window_pattern", 3);
        kv_f32(&mb, a, "rope.freq_base_swa", 10000.0f);
        kv_str(&mb, a, "rope.scaling.type", "none");
    }
    kv_u32(&mb, a, "embedding_length", (uint32_t)dim);
    kv_u32(&mb, a, "feed_forward_length", (uint32_t)hidden);
    kv_u32(&mb, a, "block_count", (uint32_t)n_layers);
    kv_u32(&mb, a, "attention.head_count", (uint32_t)n_heads);
    kv_f32(&mb, a, "attention.layer_norm_epsilon", modern ? 1e-5f : BERT_LAYER_NORM_EPS);
    kv_bool(&mb, a, "attention.causal", false);
    kv_u32(&mb, a, "pooling_type", (uint32_t)pooling);
    bool has_types = false;
    for (uint64_t i = 0; i < vg->n_kv; i++)
        if (is_tokenizer_kv(&vg->kv[i])) {
            const uint8_t *start;
            size_t n = kv_extent(&vg->kv[i], &start);
            meta_put(&mb, start, n);
            mb.count++;
            has_types |= vg->kv[i].key.len == 31 && !memcmp(vg->kv[i].key.ptr, "tokenizer.ggml.token_type_count", 31);
        }
    if (!has_types && !modern) kv_u32(&mb, NULL, "tokenizer.ggml.token_type_count", BERT_TOKEN_TYPES);
    int rc = mb.oom ? errorf(err, WICK_ERR_NOMEM, "out of memory") : write_synth_file(out_path, ts, n_t, &mb, seed, false, err);
    free(mb.p);
    free(ts);
    free(ones);
    return rc;
}

/* ---- mmproj files (vision) --------------------------------------------------------------------- */

/* `wick synth --mmproj idefics3|gemma3|lfm2|qwen2.5vl|qwen3vl|gemma4v`: an mmproj of a tiny shape with clip.cpp's keys and tensor
 * names: 2 layers of width 64 with 4 heads and an MLP of 128, to a text width of 96; idefics3's and
 * gemma3's images 64 × 64, 16 positions out.
 *  - idefics3 (SmolVLM, conversion/smolvlm.py's layout): 8 × 8 patches, a pixel shuffle of 2 and
 *    mm.model.fc. preproc_image_size 128 (SmolVLM's longest_edge, at the same ratio of 2 tiles per
 *    side as its 1024 to 512 tiles) makes llama.cpp resize a picture in three steps and cut 2 × 2
 *    tiles, as for a real file. The patch kernel stays F16 (F32 for --type f32), since llama.cpp's
 *    convolution takes no other type.
 *  - gemma3 (Gemma 3, conversion/gemma.py's layout): 4 × 4 patches (16 per side), pooled 4 × 4 by
 *    clip.cpp's default window (no scale_factor key, as in every real Gemma 3 file), the RMS norm
 *    mm.soft_emb_norm (about 1, as its converter's +1 leaves it) and mm.input_projection stored
 *    [64 rows of 96]. As its converter forces them: the patch kernel and position table F32, the
 *    input projection F16 (F32 for --type f32).
 *  - lfm2 (LFM2-VL, conversion/lfm2.py's layout): 16 × 16 patches as LFM2-VL's, image_size 256 as
 *    its converter writes it (a position table of 16 × 16, which llama.cpp resizes to each image's
 *    grid), scale factor 2, mm.input_norm and the MLP mm.1 (256 → MMPROJ_LFM2_MM) and mm.2 (→ 96).
 *    llama.cpp fixes lfm2's budget (64 to 256 positions, so a picture becomes an image of 256² to
 *    512² pixels) and its tiles (512²: 1024 patches, 256 positions each, for a picture above about
 *    724² pixels): both as a real file's, and small enough at this width. The patch kernel F16
 *    (F32 for --type f32), as idefics3's.
 *  - qwen2.5vl (Qwen2.5-VL, conversion/qwenvl.py's layout): 14 × 14 patches (Qwen2.5-VL's), so that
 *    clip.cpp's windows of 112 pixels are 4 × 4 merged positions, smaller than a picture of 200 ×
 *    150 (7 × 5 positions); n_wa_pattern 2, so layer 0 attends within windows and layer 1 fully;
 *    the two frames' patch kernels, no patch bias nor position table, RMS norms without biases,
 *    the gated SiLU MLP (clip.use_silu) with biases, the merger mm.0 (256 → 256) and mm.2 (→ 96).
 *  - qwen3vl (Qwen3-VL, conversion/qwen3vl.py's layout): 16 × 16 patches, image_size 128 (a position
 *    table of 8 × 8, resized to each picture's grid), the patch bias, LayerNorms, the fused
 *    attn_qkv, the GELU MLP, 3 layers with deepstack mergers after layers 0 and 1 (the key
 *    is_deepstack_layers says so), so positions of 96 · 3; the merger as qwen2.5vl's.
 *    The qwen budget is clip.cpp's (8 to 4096 positions), so a tiny picture becomes 8 positions or more.
 *  - gemma4v (Gemma 4, conversion/gemma.py's Gemma4VisionAudioModel layout): 16 × 16 patches,
 *    image_size 224 (as its converter writes it, unused), no scale_factor key (clip.cpp's pooling
 *    window of 3) and neither use_gelu nor use_silu (so llama.cpp's GELU-quick, as for a real file),
 *    no patch bias, the position table [64, MMPROJ_GEMMA4V_POS, 2] (an x table, then a y table),
 *    RMS norms without biases (ln1, ln2, attn_post_norm, ffn_post_norm), per-head query and key
 *    norms (about 0.5, so that the unscaled scores keep a standard deviation of about 1), the layer's
 *    out_scale (one value), the gated MLP without biases, v.std_bias and v.std_scale, and
 *    mm.input_projection [96 rows of 64]; clamps (Gemma4ClippableLinear's scalars) that bite:
 *    layer 0's query input within ±1.5 and its ffn_down output within ±0.5, the input projection's
 *    input within ±2. Its budget is clip.cpp's (70 to 1120 positions of 48² pixels).
 * Every step counts as in the text families: the patch kernel gives the patches about unit size,
 * position embeddings of 0.5 are added, attention scores have a standard deviation of SCORE_STD,
 * the LayerNorms' weights are about 1 and every bias is 0.2; image_mean and image_std differ per
 * channel (a channel order mixed up shows). The position table, norms and biases are F32; the
 * other matrices of --type (f32, f16 or q8_0). */
#define MMPROJ_IMAGE 64
#define MMPROJ_DIM 64
#define MMPROJ_HEADS 4
#define MMPROJ_FF 128
#define MMPROJ_LAYERS 2
#define MMPROJ_TEXT 96
#define MMPROJ_BIAS_STD 0.2f
#define MMPROJ_LFM2_MM 192 /* lfm2's projector MLP width: neither its input (256) nor its output (96) */
#define MMPROJ_QWEN3_LAYERS 3 /* qwen3vl: deepstack mergers after layers 0 and 1, none after 2 */
#define MMPROJ_GEMMA4V_POS 512 /* gemma4v: each position table's entries (a real file's: 10240) */

/* what differs per projector: the name on the command line and in the file, the image side, the
 * patch side, the merge (shuffle or pooling) and whether the file says it, the longest side, the layers */
typedef struct {
    const char *name, *type;
    int image, patch, merge;
    bool merge_key;
    int longest, layers;
} mmproj_shape;

static const mmproj_shape mmproj_shapes[] = {
    {"idefics3", "idefics3", MMPROJ_IMAGE, 8, 2, true, 128, MMPROJ_LAYERS},
    {"gemma3", "gemma3", MMPROJ_IMAGE, 4, 4, false, 0, MMPROJ_LAYERS},
    {"lfm2", "lfm2", 256, 16, 2, true, 0, MMPROJ_LAYERS},
    {"qwen2.5vl", "qwen2.5vl_merger", 112, 14, 2, false, 0, MMPROJ_LAYERS},
    {"qwen3vl", "qwen3vl_merger", 128, 16, 2, true, 0, MMPROJ_QWEN3_LAYERS},
    {"gemma4v", "gemma4v", 224, 16, 3, false, 0, MMPROJ_LAYERS},
};

int synth_write_mmproj(const char *projector, const char *type, const char *out_path, unsigned long long seed, errmsg *err) {
    const mmproj_shape *sh = NULL;
    for (size_t i = 0; projector && i < sizeof mmproj_shapes / sizeof mmproj_shapes[0]; i++)
        if (!strcmp(projector, mmproj_shapes[i].name)) sh = &mmproj_shapes[i];
    if (!sh)
        return errorf(err, WICK_ERR_INVALID_ARG, "--mmproj '%s' is not supported (supported: idefics3, gemma3, lfm2, qwen2.5vl, qwen3vl, gemma4v)",
                      projector ? projector : "");
    const bool gemma3 = !strcmp(sh->name, "gemma3"), lfm2 = !strcmp(sh->name, "lfm2");
    const bool qwen25 = !strcmp(sh->name, "qwen2.5vl"), qwen3 = !strcmp(sh->name, "qwen3vl"), qwen = qwen25 || qwen3;
    const bool gemma4v = !strcmp(sh->name, "gemma4v");
    /* gemma4v's clamp bounds: [0] ±1.5, [1] ±0.5, [2] ±2 (one value each, as its converter unsqueezes them) */
    static const float clamp_bounds[][2] = {{-1.5f, 1.5f}, {-0.5f, 0.5f}, {-2.0f, 2.0f}};
    uint32_t mtype, ftype;
    if (!strcmp(type, "f32")) mtype = WICK_TYPE_F32, ftype = FTYPE_F32;
    else if (!strcmp(type, "f16")) mtype = WICK_TYPE_F16, ftype = FTYPE_F16;
    else if (!strcmp(type, "q8_0")) mtype = WICK_TYPE_Q8_0, ftype = FTYPE_Q8_0;
    else return errorf(err, WICK_ERR_INVALID_ARG, "--type '%s' for an mmproj: f32, f16 or q8_0", type);
    const int dim = MMPROJ_DIM, ff = MMPROJ_FF, P = sh->patch, n_patches = (sh->image / P) * (sh->image / P);
    const int merged = dim * sh->merge * sh->merge;
    const uint32_t float_type = mtype == WICK_TYPE_F32 ? WICK_TYPE_F32 : WICK_TYPE_F16;
    const float qk_std = sqrtf(SCORE_STD) / (sqrtf((float)dim) * 1.0408f); /* as the bert encoder's: inputs LayerNormed */
    int n_t = 0;
    synth_tensor *ts = calloc(12 + 24 * (size_t)sh->layers, sizeof *ts), *t;
    if (!ts) return errorf(err, WICK_ERR_NOMEM, "out of memory");
#define TENSOR(type_, std_, ne0_, ne1_, ...) \
    (t = &ts[n_t++], t->type = (type_), t->std = (std_), t->ne0 = (ne0_), t->ne1 = (ne1_), snprintf(t->name, sizeof t->name, __VA_ARGS__))
#define NORM(ne0_, ...) (TENSOR(WICK_TYPE_F32, 0, ne0_, 1, __VA_ARGS__), t->norm = true, t->centre = 1.0f)
#define BIAS(ne0_, ...) TENSOR(WICK_TYPE_F32, MMPROJ_BIAS_STD, ne0_, 1, __VA_ARGS__)
#define SCALAR(value_, ...) (TENSOR(WICK_TYPE_F32, 0, 1, 1, __VA_ARGS__), t->values = (value_))
    /* qwen: the two frames' kernels (a still picture is both: llama.cpp adds their products), each of half the scale */
    for (int frame = 0; frame < (qwen ? 2 : 1); frame++) {
        TENSOR(gemma3 ? WICK_TYPE_F32 : float_type, (qwen ? 0.7071f : 1.0f) / sqrtf(3.0f * P * P), P, (int64_t)P * 3 * dim,
               frame ? "v.patch_embd.weight.1" : "v.patch_embd.weight");
        t->ne4[0] = P, t->ne4[1] = P, t->ne4[2] = 3, t->ne4[3] = dim;
    }
    /* qwen2.5vl: neither (rotary positions only), as qwen2vl.cpp's graph takes them; gemma4v: its two tables */
    if (gemma4v) {
        TENSOR(WICK_TYPE_F32, 0.5f, dim, MMPROJ_GEMMA4V_POS, "v.position_embd.weight");
        t->ne2 = 2;
    } else if (!qwen25) {
        BIAS(dim, "v.patch_embd.bias");
        TENSOR(WICK_TYPE_F32, 0.5f, dim, n_patches, "v.position_embd.weight");
    }
    static const char *const attn[] = {"attn_q", "attn_k", "attn_v", "attn_out"};
    for (int l = 0; l < sh->layers; l++) {
        if (qwen3) { /* one matrix [3·dim][dim]: the query's rows, the key's, the value's */
            TENSOR(mtype, qk_std, dim, 3 * dim, "v.blk.%d.attn_qkv.weight", l);
            t->v_row0 = 2 * dim, t->v_std = 1.0f / sqrtf((float)dim);
            BIAS(3 * dim, "v.blk.%d.attn_qkv.bias", l);
        }
        for (int i = qwen3 ? 3 : 0; i < 4; i++) {
            /* gemma4v's queries and keys are RMS-normed per head: weights of unit rows */
            TENSOR(mtype, i < 2 && !gemma4v ? qk_std : 1.0f / sqrtf((float)dim), dim, dim, "v.blk.%d.%s.weight", l, attn[i]);
            if (!gemma4v) BIAS(dim, "v.blk.%d.%s.bias", l, attn[i]);
        }
        if (gemma4v) {
            for (int i = 0; i < 2; i++) {
                NORM(dim / MMPROJ_HEADS, "v.blk.%d.%s_norm.weight", l, attn[i]);
                t->centre = 0.5f;
            }
            NORM(dim, "v.blk.%d.attn_post_norm.weight", l);
            NORM(dim, "v.blk.%d.ffn_post_norm.weight", l);
            NORM(1, "v.blk.%d.out_scale.weight", l);
            if (l == 0) {
                SCALAR(&clamp_bounds[0][0], "v.blk.0.attn_q.input_min");
                SCALAR(&clamp_bounds[0][1], "v.blk.0.attn_q.input_max");
                SCALAR(&clamp_bounds[1][0], "v.blk.0.ffn_down.output_min");
                SCALAR(&clamp_bounds[1][1], "v.blk.0.ffn_down.output_max");
            }
        }
        /* qwen2.5vl's and gemma4v's norms are RMS norms without a bias */
        const bool rms = qwen25 || gemma4v;
        NORM(dim, "v.blk.%d.ln1.weight", l);
        if (!rms) BIAS(dim, "v.blk.%d.ln1.bias", l);
        if (rms) { /* the gated MLP: act(gate) ⊙ up */
            TENSOR(mtype, 1.0f / sqrtf((float)dim), dim, ff, "v.blk.%d.ffn_gate.weight", l);
            if (!gemma4v) BIAS(ff, "v.blk.%d.ffn_gate.bias", l);
        }
        TENSOR(mtype, 1.0f / sqrtf((float)dim), dim, ff, "v.blk.%d.ffn_up.weight", l);
        if (!gemma4v) BIAS(ff, "v.blk.%d.ffn_up.bias", l);
        TENSOR(mtype, 1.0f / sqrtf((float)ff), ff, dim, "v.blk.%d.ffn_down.weight", l);
        if (!gemma4v) BIAS(dim, "v.blk.%d.ffn_down.bias", l);
        NORM(dim, "v.blk.%d.ln2.weight", l);
        if (!rms) BIAS(dim, "v.blk.%d.ln2.bias", l);
        if (qwen3 && l < MMPROJ_QWEN3_LAYERS - 1) { /* the deepstack merger: its norm over the merged rows, fc1, GELU, fc2 */
            NORM(merged, "v.deepstack.%d.norm.weight", l);
            BIAS(merged, "v.deepstack.%d.norm.bias", l);
            TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, merged, "v.deepstack.%d.fc1.weight", l);
            BIAS(merged, "v.deepstack.%d.fc1.bias", l);
            TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, MMPROJ_TEXT, "v.deepstack.%d.fc2.weight", l);
            BIAS(MMPROJ_TEXT, "v.deepstack.%d.fc2.bias", l);
        }
    }
    if (!gemma4v) NORM(dim, "v.post_ln.weight");
    if (!qwen25 && !gemma4v) BIAS(dim, "v.post_ln.bias");
    if (gemma4v) { /* the pooled rows' standardization, then the projection and its input clamp */
        BIAS(dim, "v.std_bias");
        NORM(dim, "v.std_scale");
        TENSOR(mtype, 1.0f / sqrtf((float)dim), dim, MMPROJ_TEXT, "mm.input_projection.weight");
        SCALAR(&clamp_bounds[2][0], "mm.input_projection.input_min");
        SCALAR(&clamp_bounds[2][1], "mm.input_projection.input_max");
    } else if (gemma3) {
        NORM(dim, "mm.soft_emb_norm.weight");
        TENSOR(float_type, 1.0f / sqrtf((float)dim), MMPROJ_TEXT, dim, "mm.input_projection.weight");
    } else if (lfm2) {
        NORM(merged, "mm.input_norm.weight");
        BIAS(merged, "mm.input_norm.bias");
        TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, MMPROJ_LFM2_MM, "mm.1.weight");
        BIAS(MMPROJ_LFM2_MM, "mm.1.bias");
        TENSOR(mtype, 1.0f / sqrtf((float)MMPROJ_LFM2_MM), MMPROJ_LFM2_MM, MMPROJ_TEXT, "mm.2.weight");
        BIAS(MMPROJ_TEXT, "mm.2.bias");
    } else if (qwen) { /* the merger mm.0 (dim·4 → dim·4, as Qwen's), GELU, mm.2 */
        TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, merged, "mm.0.weight");
        BIAS(merged, "mm.0.bias");
        TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, MMPROJ_TEXT, "mm.2.weight");
        BIAS(MMPROJ_TEXT, "mm.2.bias");
    } else {
        TENSOR(mtype, 1.0f / sqrtf((float)merged), merged, MMPROJ_TEXT, "mm.model.fc.weight");
    }
#undef SCALAR
#undef BIAS
#undef NORM
#undef TENSOR
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    meta_buf mb = {0};
    char name[64];
    snprintf(name, sizeof name, "wick synth mmproj %s %s", projector, type);
    kv_str(&mb, NULL, "general.architecture", "clip");
    kv_str(&mb, NULL, "general.name", name);
    kv_u32(&mb, NULL, "general.file_type", ftype);
    kv_bool(&mb, NULL, "clip.has_vision_encoder", true);
    kv_str(&mb, NULL, "clip.projector_type", sh->type);
    if (!gemma4v) kv_bool(&mb, NULL, qwen25 ? "clip.use_silu" : "clip.use_gelu", true);
    kv_u32(&mb, "clip.vision", "image_size", (uint32_t)sh->image);
    if (sh->longest) kv_u32(&mb, "clip.vision", "preproc_image_size", (uint32_t)sh->longest);
    kv_u32(&mb, "clip.vision", "patch_size", P);
    kv_u32(&mb, "clip.vision", "embedding_length", dim);
    kv_u32(&mb, "clip.vision", "feed_forward_length", ff);
    kv_u32(&mb, "clip.vision", "block_count", (uint32_t)sh->layers);
    kv_u32(&mb, "clip.vision", "projection_dim", MMPROJ_TEXT);
    kv_u32(&mb, "clip.vision", "attention.head_count", MMPROJ_HEADS);
    kv_f32(&mb, "clip.vision", "attention.layer_norm_epsilon", 1e-6f);
    kv_f32_array(&mb, "clip.vision", "image_mean", mean, 3);
    kv_f32_array(&mb, "clip.vision", "image_std", std, 3);
    if (sh->merge_key) kv_u32(&mb, "clip.vision", qwen ? "spatial_merge_size" : "projector.scale_factor", (uint32_t)sh->merge);
    /* qwen2.5vl: layer 1 attends fully, layer 0 within windows of 112 pixels (4 × 4 positions of 28²) */
    if (qwen25) kv_u32(&mb, "clip.vision", "n_wa_pattern", 2);
    if (qwen3) {
        const bool deepstack[MMPROJ_QWEN3_LAYERS] = {true, true, false};
        kv_bool_array(&mb, "clip.vision", "is_deepstack_layers", deepstack, MMPROJ_QWEN3_LAYERS);
    }
    int rc = mb.oom ? errorf(err, WICK_ERR_NOMEM, "out of memory") : write_synth_file(out_path, ts, n_t, &mb, seed, false, err);
    free(mb.p);
    free(ts);
    return rc;
}

int synth_write(const char *arch_name, const char *shape_name, const char *type, const char *pooling_name, bool lexical,
                const char *vocab_path, const char *out_path, unsigned long long seed, errmsg *err) {
    const synth_family *fam = NULL;
    static const char *const encoders[] = {"bert", "nomic-bert", "modern-bert"};
    int variant = -1;
    for (int i = 0; arch_name && i < 3; i++)
        if (!strcmp(arch_name, encoders[i])) variant = i;
    const bool bert = variant >= 0;
    static const char *const poolings[] = {"none", "mean", "cls", "last", "rank"};
    int pooling = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(pooling_name ? pooling_name : "mean", poolings[i])) pooling = i;
    if (pooling < 0) return errorf(err, WICK_ERR_INVALID_ARG, "unknown pooling '%s' (none, mean, cls, last, rank)", pooling_name);
    /* rank: a bge-reranker on bert, a Qwen3-Reranker on qwen3 (the rerankers llama.cpp pools so) */
    const bool reranker = pooling_name && !bert && pooling == 4;
    if (pooling == 4 && (bert ? variant != ENC_BERT : !(arch_name && !strcmp(arch_name, "qwen3"))))
        return errorf(err, WICK_ERR_INVALID_ARG, "--pooling rank is for bert (a bge-reranker) and qwen3 (a Qwen3-Reranker)");
    if (lexical && (variant != ENC_BERT || pooling == 4))
        return errorf(err, WICK_ERR_INVALID_ARG, "--lexical is for --arch bert (an embedding model, not a reranker)");

    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].name, arch_name ? arch_name : "llama")) fam = &families[i];
    if (!fam && !bert)
        return errorf(err, WICK_ERR_INVALID_ARG, "unknown arch '%s' (llama, llama3, qwen3, gemma2, gemma3, phi3, smollm3, granite, olmo2, "
                      "lfm2, qwen35, granite-hybrid, mistral3, gemma4, gemma3n, gemma-embedding, bert, nomic-bert, modern-bert)", arch_name);
    const synth_shape *sh = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shapes[i].name, shape_name)) sh = &shapes[i];
    if (!sh) return errorf(err, WICK_ERR_INVALID_ARG, "unknown shape '%s' (mini, mini-mha, 134m, 1b, 0.8b, e2b, e4b, bge-small, embeddinggemma)", shape_name);
    synth_quant q = {0};
    if (!strcmp(type, "f32")) q.base = WICK_TYPE_F32, q.ftype = FTYPE_F32;
    else if (!strcmp(type, "f16")) q.base = WICK_TYPE_F16, q.ftype = FTYPE_F16;
    else if (!strcmp(type, "q8_0")) q.base = WICK_TYPE_Q8_0, q.ftype = FTYPE_Q8_0;
    else if (!strcmp(type, "q4_0")) q.base = WICK_TYPE_Q4_0, q.ftype = FTYPE_Q4_0;
    else if (!strcmp(type, "q4_k_m")) q.base = WICK_TYPE_Q4_K, q.ftype = FTYPE_Q4_K_M, q.k_mix = true;
    else if (!strcmp(type, "q5_k_m")) q.base = WICK_TYPE_Q5_K, q.ftype = FTYPE_Q5_K_M, q.k_mix = true;
    else if (!strcmp(type, "q6_k")) q.base = WICK_TYPE_Q6_K, q.ftype = FTYPE_Q6_K;
    else return errorf(err, WICK_ERR_INVALID_ARG, "unknown type '%s' (f32, f16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k)", type);

    /* the vocabulary file: its tokenizer.* metadata is copied byte for byte */
    FILE *vf = fopen(vocab_path, "rb");
    if (!vf) return errorf(err, WICK_ERR_INVALID_ARG, "cannot open vocabulary %s", vocab_path);
    fseek(vf, 0, SEEK_END);
    long vsize = ftell(vf);
    rewind(vf);
    uint8_t *vbuf = malloc(vsize > 0 ? (size_t)vsize : 1);
    if (!vbuf || fread(vbuf, 1, (size_t)vsize, vf) != (size_t)vsize) {
        fclose(vf);
        free(vbuf);
        return errorf(err, WICK_ERR_INVALID_ARG, "cannot read vocabulary %s", vocab_path);
    }
    fclose(vf);
    gguf_file vg;
    if (gguf_open(&vg, vbuf, (size_t)vsize, err)) { free(vbuf); return -1; }
    const gguf_kv *tokens = gguf_get_arr(&vg, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!tokens) { gguf_close(&vg); free(vbuf); return errorf(err, WICK_ERR_INVALID_ARG, "%s has no tokenizer.ggml.tokens", vocab_path); }
    int64_t n_vocab = (int64_t)tokens->arr_len;
    if (bert) {
        int rc = synth_write_bert(sh, &q, type, pooling, variant, lexical, &vg, n_vocab, out_path, seed, err);
        gguf_close(&vg);
        free(vbuf);
        return rc;
    }

    /* sizes */
    const unsigned fl = fam->flags;
    const bool legacy = fl & F_LEGACY, tied = fl & F_TIED;
    const int dim = sh->dim, n_heads = sh->n_heads, n_kv_heads = sh->n_kv_heads, hidden = sh->hidden;
    const int n_layers = sh->small && fam->min_layers > sh->n_layers ? fam->min_layers : sh->n_layers;
    const int head_dim = sh->head_dim ? sh->head_dim : fam->head_factor * dim / n_heads;
    /* gemma4's layers: which are full attention, the first KV-shared one, the full layers' shape */
    const bool gemma4 = fl & F_GEMMA4;
    const int g4_every = sh->small ? GEMMA4_FULL_EVERY_SMALL : sh->full_every ? sh->full_every : GEMMA4_FULL_EVERY;
    const int g4_from = n_layers - (sh->small ? n_layers / 2 : n_layers * 3 / 7);
    const int g4_kv_full = n_kv_heads / 2 > 0 ? n_kv_heads / 2 : 1;
    const bool gemma3n = fl & F_GEMMA3N, ple = gemma4 || gemma3n;
    const int g4_n_ple = gemma3n ? GEMMA3N_PLE : sh->small ? 64 : 256;
    /* gemma3n: the first layer reading another's cache (none when there are too few layers) */
    const int g3n_from = n_layers > GEMMA3N_KV_FROM ? GEMMA3N_KV_FROM : n_layers;
#define G4_FULL(l) (gemma4 && (l) % g4_every == g4_every - 1)
    if (gemma4 && (g4_from < 2 || !G4_FULL(g4_from - 1) || G4_FULL(g4_from - 2))) {
        gguf_close(&vg);
        free(vbuf);
        return errorf(err, WICK_ERR_FORMAT, "shape %s does not fit gemma4's layer pattern", shape_name);
    }
    /* Qwen3.5 rotates a quarter of each head (rope.dimension_count); gemma4's full layers their whole head */
    const int n_rot = fl & F_DELTANET ? head_dim / 4 : gemma4 ? 2 * head_dim : head_dim;
    /* DeltaNet: heads of dim / n_heads, half as many key heads as value heads unless the shape says */
    const int ssm_state = dim / n_heads;
    const int ssm_v_heads = sh->ssm_v_heads ? sh->ssm_v_heads : n_heads;
    const int ssm_k_heads = sh->ssm_k_heads ? sh->ssm_k_heads : n_heads / 2 > 0 ? n_heads / 2 : 1;
    const int ssm_channels = (2 * ssm_k_heads + ssm_v_heads) * ssm_state, ssm_value_dim = ssm_v_heads * ssm_state;
    /* Mamba-2: z | x B C | dt from ssm_in; the convolution over x B C */
    const int m2_inner = 2 * dim, m2_heads = m2_inner / MAMBA2_HEAD_DIM, m2_channels = m2_inner + 2 * MAMBA2_GROUPS * MAMBA2_STATE;
    const int q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
    const uint32_t swa = sh->small ? fam->swa_small : fam->swa_large;
    const float attention_scale = fam->attention_scale_1_hd ? 1.0f / (float)head_dim : 0.0f;

    /* scales (non-legacy): see the file's first comment */
    const float norm_rms = 1.0408f;                      /* rms of centre·U[0.5, 1.5] per unit centre */
    /* the embeddings as the first layer sees them (after Gemma's √dim or Granite's multiplier):
     * unit size, or a quarter where they are also the output head, so that the current token's own
     * logit (its embedding is in the residual) stands about 4 standard deviations out, among the
     * other tokens' largest, rather than 11 and always the argmax */
    const float emb_run = tied ? 0.25f : 1.0f;
    const float emb_std = emb_run * (fl & F_EMB_SQRT ? 1.0f / sqrtf((float)dim)
                                     : fam->embedding_scale != 0 ? 1.0f / fam->embedding_scale : 1.0f);
    const float kq_scale = (attention_scale != 0 ? attention_scale : 1.0f / sqrtf((float)head_dim)) *
                           (fam->rope_attn_factor != 0 ? fam->rope_attn_factor * fam->rope_attn_factor : 1.0f);
    /* score std = kq_scale · σ² · √head_dim for query/key components of std σ */
    const float sigma_qk = sqrtf((fam->score_std != 0 ? fam->score_std : SCORE_STD) / (kq_scale * sqrtf((float)head_dim)));
    const bool qk_norm = fl & (F_QK_NORM_HEAD | F_QK_NORM_FULL);
    /* with q/k norms the projections' own scale (σ = 3) is what a forward pass without them would see */
    const float qk_std = (qk_norm ? 3.0f : sigma_qk) / (sqrtf((float)dim) * norm_rms);
    const float qk_norm_centre = sigma_qk / norm_rms;
    const float logit_pre = fam->logit_std * (fam->logit_scale != 0 ? fam->logit_scale : 1.0f);
    const float out_std = logit_pre / (sqrtf((float)dim) * norm_rms);
    const float v_std = 1.0f / sqrtf((float)dim);
    const float out_norm_centre = tied ? logit_pre / (emb_std * sqrtf((float)dim) * norm_rms) : 1.0f;

    /* rope factor vectors */
    const int n_pairs = n_rot / 2;
    float *rope_values = calloc((size_t)(3 * n_pairs), sizeof *rope_values);
    /* the tensor list: the llama file's order, each family's extra tensors where its layer has them */
    int cap_t = 8 + 30 * n_layers, n_t = 0;
    synth_tensor *ts = calloc((size_t)cap_t, sizeof *ts);
    if (!ts || !rope_values) {
        free(ts);
        free(rope_values);
        gguf_close(&vg);
        free(vbuf);
        return errorf(err, WICK_ERR_NOMEM, "out of memory");
    }
    if (fl & F_ROPE_FREQS) llama3_rope_factors(rope_values, n_pairs, fam->rope_base);
    for (int i = 0; gemma4 && i < n_pairs; i++) rope_values[i] = i < n_pairs / 4 ? 1.0f : GEMMA4_UNROTATED;
    if (fl & F_LONGROPE) phi3_rope_factors(rope_values + n_pairs, rope_values + 2 * n_pairs, n_pairs);

    synth_tensor *t;
#define TENSOR(ne0_, ne1_, ...) (t = &ts[n_t++], t->ne0 = (ne0_), t->ne1 = (ne1_), snprintf(t->name, sizeof t->name, __VA_ARGS__))
    /* a matrix of random weights; a norm; a vector of given values */
#define MATRIX(role, i, std_, ne0_, ne1_, ...) \
    (TENSOR(ne0_, ne1_, __VA_ARGS__), t->type = matrix_type(&q, role, tied, ne0_, i, n_layers), t->std = legacy ? 0.02f : (std_))
#define NORM(centre_, ne0_, ...) (TENSOR(ne0_, 1, __VA_ARGS__), t->type = WICK_TYPE_F32, t->norm = true, t->centre = legacy ? 1.0f : (centre_))
#define VALUES(v, ne0_, ...) (TENSOR(ne0_, 1, __VA_ARGS__), t->type = WICK_TYPE_F32, t->values = (v))
#define RANDOM_F32(std_, ne0_, ne1_, ...) (TENSOR(ne0_, ne1_, __VA_ARGS__), t->type = WICK_TYPE_F32, t->std = (std_))
    MATRIX(R_EMBD, 0, emb_std, dim, n_vocab, "token_embd.weight");
    if (fl & F_ROPE_FREQS || gemma4) VALUES(rope_values, n_pairs, "rope_freqs.weight");
    if (ple) { /* the per-layer embeddings' table and the projection of the embeddings into it */
        MATRIX(R_EMBD, 0, 1.0f / sqrtf((float)g4_n_ple), n_layers * g4_n_ple, n_vocab, "per_layer_token_embd.weight");
        MATRIX(gemma3n ? R_UNQUANTIZED : R_OTHER, 0, 1.0f / sqrtf((float)dim), dim, n_layers * g4_n_ple, "per_layer_model_proj.weight");
        NORM(1.0f, g4_n_ple, "per_layer_proj_norm.weight");
    }
    if (gemma3n) { /* the projections into AltUp's other streams and back: stacks of 3 [dim][dim] */
        MATRIX(R_UNQUANTIZED, 0, 1.0f / sqrtf((float)dim), dim, dim, "altup_proj.weight"), t->ne2 = GEMMA3N_ALTUP - 1;
        MATRIX(R_UNQUANTIZED, 0, 1.0f / sqrtf((float)dim), dim, dim, "altup_unembd_proj.weight"), t->ne2 = GEMMA3N_ALTUP - 1;
    }
    if (fl & F_LONGROPE) {
        VALUES(rope_values + 2 * n_pairs, n_pairs, "rope_factors_long.weight");
        VALUES(rope_values + n_pairs, n_pairs, "rope_factors_short.weight");
    }
    const float o_std = 1.0f / sqrtf((float)q_dim);
    /* the FFN adds half the size of its input to the residual: a full-size one amplifies rounding */
    const float up_std = 1.0f / sqrtf((float)dim);
    /* the recurrent layers' convolution taps: F32, std 0.5, so that each tap counts */
    const float conv_std = 0.5f;
    for (int l = 0; l < n_layers; l++) {
        /* the layer's shape: gemma4's full layers and KV-shared ones differ */
        const int l_hd = G4_FULL(l) ? 2 * head_dim : head_dim, l_kv = G4_FULL(l) ? g4_kv_full : n_kv_heads;
        const int l_q = n_heads * l_hd, l_kvd = l_kv * l_hd, l_hid = gemma4 && l >= g4_from ? 2 * hidden : hidden;
        const bool own_kv = !gemma4 || l < g4_from;
        /* gemma4 and gemma3n scale their scores by 1, not 1/√head size: the q/k norms aim at score_std from that */
        const float l_qk_norm_centre = ple ? sqrtf(fam->score_std / sqrtf((float)l_hd)) / norm_rms : qk_norm_centre;
        const float down_std = 0.5f / sqrtf((float)l_hid);
        if (fl & F_PRE_NORM) NORM(1.0f, dim, "blk.%d.attn_norm.weight", l);
        if (layer_recurrent(fl, l)) {
            if (fl & F_SHORTCONV) { /* rows B | C | x, then the taps, then the output */
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, 3 * dim, "blk.%d.shortconv.in_proj.weight", l);
                RANDOM_F32(conv_std, LFM2_L_CACHE, dim, "blk.%d.shortconv.conv.weight", l);
                MATRIX(R_OTHER, l, o_std, dim, dim, "blk.%d.shortconv.out_proj.weight", l);
            } else if (fl & F_MAMBA2) {
                /* z rows at a quarter scale (as DeltaNet's gate), x B C and dt rows at unit scale */
                MATRIX(R_OTHER, l, 0.25f / sqrtf((float)dim), dim, m2_inner + m2_channels + m2_heads, "blk.%d.ssm_in.weight", l);
                t->v_row0 = m2_inner, t->v_std = 1.0f / sqrtf((float)dim);
                RANDOM_F32(conv_std, MAMBA2_CONV_KERNEL, m2_channels, "blk.%d.ssm_conv1d.weight", l);
                RANDOM_F32(conv_std, m2_channels, 1, "blk.%d.ssm_conv1d.bias", l);
                NORM(-2.0f, m2_heads, "blk.%d.ssm_dt.bias", l);
                /* A = −exp(A_log) and D, [1, heads] as the converter reshapes them */
                NORM(-2.0f, 1, "blk.%d.ssm_a", l), t->ne1 = m2_heads;
                NORM(1.0f, 1, "blk.%d.ssm_d", l), t->ne1 = m2_heads;
                NORM(1.0f, m2_inner / MAMBA2_GROUPS, "blk.%d.ssm_norm.weight", l), t->ne1 = MAMBA2_GROUPS;
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)m2_inner), m2_inner, dim, "blk.%d.ssm_out.weight", l);
            } else { /* gated DeltaNet, tensor names of llama.cpp's qwen35 loader */
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, ssm_channels, "blk.%d.attn_qkv.weight", l);
                MATRIX(R_OTHER, l, 0.25f / sqrtf((float)dim), dim, ssm_value_dim, "blk.%d.attn_gate.weight", l);
                RANDOM_F32(conv_std, QWEN35_CONV_KERNEL, ssm_channels, "blk.%d.ssm_conv1d.weight", l);
                NORM(1.0f, ssm_v_heads, "blk.%d.ssm_dt.bias", l);
                NORM(-0.5f, ssm_v_heads, "blk.%d.ssm_a", l); /* −exp(A_log): a decay per value head */
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, ssm_v_heads, "blk.%d.ssm_alpha.weight", l);
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, ssm_v_heads, "blk.%d.ssm_beta.weight", l);
                NORM(1.0f, ssm_state, "blk.%d.ssm_norm.weight", l);
                MATRIX(R_OTHER, l, 1.0f / sqrtf((float)ssm_value_dim), ssm_value_dim, dim, "blk.%d.ssm_out.weight", l);
            }
        } else if (fl & F_DELTANET) { /* each head's query, then its output gate */
            MATRIX(R_OTHER, l, qk_std, dim, 2 * q_dim, "blk.%d.attn_q.weight", l);
            MATRIX(R_OTHER, l, qk_std, dim, kv_dim, "blk.%d.attn_k.weight", l);
            MATRIX(R_ATTN_V, l, v_std, dim, kv_dim, "blk.%d.attn_v.weight", l);
        } else if (fl & F_FUSED) {
            /* Q, K and V stacked: V's rows keep V's scale */
            MATRIX(R_ATTN_V, l, qk_std, dim, q_dim + 2 * kv_dim, "blk.%d.attn_qkv.weight", l);
            t->v_row0 = q_dim + kv_dim, t->v_std = v_std;
        } else {
            MATRIX(R_OTHER, l, qk_std, dim, l_q, "blk.%d.attn_q.weight", l);
            if (fl & F_HEAD_GAIN) t->head_rows = head_dim, t->n_head_groups = n_heads;
            if (own_kv) MATRIX(R_OTHER, l, qk_std, dim, l_kvd, "blk.%d.attn_k.weight", l);
            if (fl & F_HEAD_GAIN) t->head_rows = head_dim, t->n_head_groups = n_kv_heads;
            if (own_kv && !G4_FULL(l)) MATRIX(R_ATTN_V, l, v_std, dim, l_kvd, "blk.%d.attn_v.weight", l);
            if (fl & F_ATTN_BIAS) { /* small beside the projections' unit outputs */
                RANDOM_F32(0.2f, l_q, 1, "blk.%d.attn_q.bias", l);
                RANDOM_F32(0.2f, l_kvd, 1, "blk.%d.attn_k.bias", l);
                RANDOM_F32(0.2f, l_kvd, 1, "blk.%d.attn_v.bias", l);
            }
        }
        if (layer_recurrent(fl, l)) {
            /* no attention tensors */
        } else if (fl & F_QK_NORM_HEAD) {
            NORM(l_qk_norm_centre, l_hd, "blk.%d.attn_q_norm.weight", l);
            if (own_kv) NORM(l_qk_norm_centre, l_hd, "blk.%d.attn_k_norm.weight", l);
        } else if (fl & F_QK_NORM_FULL) {
            NORM(qk_norm_centre, q_dim, "blk.%d.attn_q_norm.weight", l);
            NORM(qk_norm_centre, kv_dim, "blk.%d.attn_k_norm.weight", l);
        }
        if (!layer_recurrent(fl, l)) MATRIX(R_OTHER, l, o_std, l_q, dim, "blk.%d.attn_output.weight", l);
        if (fl & F_POST_NORM) NORM(gemma3n ? GEMMA3N_POST_NORM : 1.0f, dim, "blk.%d.post_attention_norm.weight", l);
        /* Qwen3.5 names the norm before its FFN post_attention_norm */
        if (fl & F_PRE_NORM) NORM(1.0f, dim, fl & F_DELTANET ? "blk.%d.post_attention_norm.weight" : "blk.%d.ffn_norm.weight", l);
        if (!(fl & F_FUSED)) MATRIX(R_OTHER, l, up_std, dim, l_hid, "blk.%d.ffn_gate.weight", l);
        MATRIX(R_FFN_DOWN, l, down_std, l_hid, dim, "blk.%d.ffn_down.weight", l);
        MATRIX(R_OTHER, l, up_std, dim, fl & F_FUSED ? 2 * l_hid : l_hid, "blk.%d.ffn_up.weight", l);
        if (fl & F_POST_NORM) NORM(gemma3n ? GEMMA3N_POST_NORM : 1.0f, dim, "blk.%d.post_ffw_norm.weight", l);
        if (ple) { /* the per-layer embedding step, then layer_output_scale (the checkpoint's layer_scalar) */
            MATRIX(R_OTHER, l, 1.0f / sqrtf((float)dim), dim, g4_n_ple, "blk.%d.inp_gate.weight", l);
            MATRIX(R_OTHER, l, 1.0f / sqrtf((float)g4_n_ple), g4_n_ple, dim, "blk.%d.proj.weight", l);
            NORM(gemma3n ? GEMMA3N_POST_NORM : 0.5f, dim, "blk.%d.post_norm.weight", l);
            if (gemma4) NORM(1.0f, 1, "blk.%d.layer_output_scale.weight", l);
        }
        if (gemma3n) { /* AltUp's router and coefficients (F32 as the converter keeps them), Laurel */
            RANDOM_F32(GEMMA3N_CORRECT_STD, GEMMA3N_ALTUP, GEMMA3N_ALTUP, "blk.%d.altup_correct_coef.weight", l);
            NORM(1.0f, dim, "blk.%d.altup_correct_scale.weight", l);
            RANDOM_F32(GEMMA3N_PREDICT_STD, GEMMA3N_ALTUP, GEMMA3N_ALTUP * GEMMA3N_ALTUP, "blk.%d.altup_predict_coef.weight", l);
            MATRIX(R_UNQUANTIZED, l, GEMMA3N_ROUTER * sqrtf((float)dim), dim, GEMMA3N_ALTUP, "blk.%d.altup_router.weight", l);
            NORM(1.0f, dim, "blk.%d.altup_router_norm.weight", l);
            MATRIX(R_UNQUANTIZED, l, 1.0f / sqrtf((float)dim), dim, GEMMA3N_LAUREL_RANK, "blk.%d.laurel_l.weight", l);
            MATRIX(R_UNQUANTIZED, l, 1.0f / sqrtf((float)GEMMA3N_LAUREL_RANK), GEMMA3N_LAUREL_RANK, dim, "blk.%d.laurel_r.weight", l);
            NORM(GEMMA3N_POST_NORM, dim, "blk.%d.laurel_post_norm.weight", l);
        }
    }
    NORM(out_norm_centre, dim, fl & F_SHORTCONV ? "token_embd_norm.weight" : "output_norm.weight"); /* lfm2's name */
    if (!tied) MATRIX(R_OUTPUT, 0, out_std, dim, n_vocab, "output.weight");
    if (fl & F_DENSE) {
        MATRIX(R_OTHER, 0, 1.0f / sqrtf((float)dim), dim, 4 * dim, "dense_2.weight");
        MATRIX(R_OTHER, 0, 1.0f / sqrtf((float)(4 * dim)), 4 * dim, dim, "dense_3.weight");
    }
    /* Qwen3-Reranker: the "yes" and "no" rows of its output head as cls.output (conversion/qwen.py);
     * here rows of their own that give each label's logit a spread of about 2 over the hidden
     * state's components: the last token's state is mostly the prompt's fixed ending, so P(yes)
     * varies between pairs by about 0.1 (0.8 … 0.95 at seed 1), far beyond a 1e-3 comparison */
    if (reranker) MATRIX(R_OTHER, 0, 2.0f / (sqrtf((float)dim) * norm_rms * out_norm_centre), dim, 2, "cls.output.weight");
#undef RANDOM_F32
#undef VALUES
#undef NORM
#undef MATRIX
#undef TENSOR
    /* metadata: the model's keys, then the vocabulary's tokenizer.* entries */
    meta_buf mb = {0};
    const char *a = fam->arch;
    /* the name leaves the family out: llama.cpp gives special tokens Phi-3's strip attributes when
     * general.name contains "phi3", and fails to load when the vocabulary lacks <|endoftext|> */
    char name[96];
    snprintf(name, sizeof name, "wick synth %s %s", sh->name, type);
    kv_str(&mb, NULL, "general.architecture", a);
    kv_str(&mb, NULL, "general.name", name);
    kv_u32(&mb, NULL, "general.file_type", q.ftype);
    kv_u32(&mb, a, "context_length", fam->ctx_train);
    kv_u32(&mb, a, "embedding_length", (uint32_t)dim);
    kv_u32(&mb, a, "block_count", (uint32_t)n_layers);
    if (gemma3n) { /* the converter's keys (conversion/gemma.py, Gemma3NModel and Gemma3Model) */
        int32_t ff[MAX_SYNTH_LAYERS];
        bool swa_layers[MAX_SYNTH_LAYERS];
        float sparsity[MAX_SYNTH_LAYERS];
        for (int l = 0; l < n_layers; l++) {
            ff[l] = hidden;
            swa_layers[l] = l % GEMMA3N_FULL_EVERY != GEMMA3N_FULL_EVERY - 1;
            sparsity[l] = l < GEMMA3N_SPARSE_LAYERS ? GEMMA3N_SPARSE_STD : -INFINITY;
        }
        kv_i32_array(&mb, a, "feed_forward_length", ff, (uint64_t)n_layers);
        kv_u32(&mb, a, "attention.head_count_kv", (uint32_t)n_kv_heads);
        kv_u32(&mb, a, "attention.key_length", (uint32_t)head_dim);
        kv_u32(&mb, a, "attention.value_length", (uint32_t)head_dim);
        kv_u32(&mb, a, "altup.active_idx", 0);
        kv_u32(&mb, a, "altup.num_inputs", GEMMA3N_ALTUP);
        kv_u32(&mb, a, "embedding_length_per_layer_input", GEMMA3N_PLE);
        kv_u32(&mb, a, "attention.shared_kv_layers", (uint32_t)(n_layers - g3n_from));
        kv_f32_array(&mb, a, "activation_sparsity_scale", sparsity, (uint64_t)n_layers);
        kv_bool_array(&mb, a, "attention.sliding_window_pattern", swa_layers, (uint64_t)n_layers);
    } else if (gemma4) { /* the converter's per-layer arrays */
        int32_t ff[MAX_SYNTH_LAYERS], kv_heads[MAX_SYNTH_LAYERS];
        bool swa_layers[MAX_SYNTH_LAYERS];
        for (int l = 0; l < n_layers; l++) {
            ff[l] = l >= g4_from ? 2 * hidden : hidden;
            kv_heads[l] = G4_FULL(l) ? g4_kv_full : n_kv_heads;
            swa_layers[l] = !G4_FULL(l);
        }
        kv_i32_array(&mb, a, "feed_forward_length", ff, (uint64_t)n_layers);
        kv_i32_array(&mb, a, "attention.head_count_kv", kv_heads, (uint64_t)n_layers);
        kv_bool_array(&mb, a, "attention.sliding_window_pattern", swa_layers, (uint64_t)n_layers);
        kv_u32(&mb, a, "attention.key_length", (uint32_t)(2 * head_dim));
        kv_u32(&mb, a, "attention.value_length", (uint32_t)(2 * head_dim));
        kv_u32(&mb, a, "attention.key_length_swa", (uint32_t)head_dim);
        kv_u32(&mb, a, "attention.value_length_swa", (uint32_t)head_dim);
        kv_u32(&mb, a, "rope.dimension_count_swa", (uint32_t)head_dim);
        kv_u32(&mb, a, "attention.shared_kv_layers", (uint32_t)(n_layers - g4_from));
        kv_u32(&mb, a, "embedding_length_per_layer_input", (uint32_t)g4_n_ple);
    } else {
        kv_u32(&mb, a, "feed_forward_length", (uint32_t)hidden);
    }
    kv_u32(&mb, a, "attention.head_count", (uint32_t)n_heads);
    if (fl & (F_SHORTCONV | F_MAMBA2)) { /* a KV head count per layer, 0 on the recurrent layers */
        int32_t kv_heads[MAX_SYNTH_LAYERS];
        for (int l = 0; l < n_layers; l++) kv_heads[l] = layer_recurrent(fl, l) ? 0 : n_kv_heads;
        kv_i32_array(&mb, a, "attention.head_count_kv", kv_heads, (uint64_t)n_layers);
        if (fl & F_SHORTCONV) kv_u32(&mb, a, "shortconv.l_cache", LFM2_L_CACHE);
    } else if (!ple) {
        kv_u32(&mb, a, "attention.head_count_kv", (uint32_t)n_kv_heads);
    }
    if (fl & F_MROPE) {
        /* M-RoPE's sections of the rotated pairs (text tokens give each the same position); in runs
         * (qwen2vl) the time section is one pair, so that height and width take the faster-turning
         * pairs, on which a small picture's 2-D positions show; qwen3vl's are Qwen3-VL's (24, 20, 20
         * of 64 pairs) for any count, (p − 4) / 3 for height and width: their interleaving leaves
         * pairs to the fourth position (0 for every token: they do not turn), as the real files do */
        int32_t pairs = n_rot / 2, third = (pairs + 2) / 3, sections[4] = {third, third, pairs - 2 * third, 0};
        if (!strcmp(fam->arch, "qwen2vl")) sections[0] = 1, sections[1] = (pairs - 1) / 2, sections[2] = pairs - 1 - sections[1];
        if (!strcmp(fam->arch, "qwen3vl")) sections[1] = sections[2] = (pairs - 4) / 3, sections[0] = pairs - 2 * sections[1];
        kv_i32_array(&mb, a, "rope.dimension_sections", sections, 4);
    }
    if (fl & F_DEEPSTACK) kv_u32(&mb, a, "n_deepstack_layers", SYNTH_DEEPSTACK);
    if (fl & F_DELTANET) {
        kv_u32(&mb, a, "ssm.conv_kernel", QWEN35_CONV_KERNEL);
        kv_u32(&mb, a, "ssm.state_size", (uint32_t)ssm_state);
        kv_u32(&mb, a, "ssm.group_count", (uint32_t)ssm_k_heads);
        kv_u32(&mb, a, "ssm.time_step_rank", (uint32_t)ssm_v_heads);
        kv_u32(&mb, a, "ssm.inner_size", (uint32_t)ssm_value_dim);
        kv_u32(&mb, a, "full_attention_interval", QWEN35_FULL_ATTENTION_INTERVAL);
    }
    if (fl & F_MAMBA2) {
        kv_u32(&mb, a, "ssm.conv_kernel", MAMBA2_CONV_KERNEL);
        kv_u32(&mb, a, "ssm.state_size", MAMBA2_STATE);
        kv_u32(&mb, a, "ssm.group_count", MAMBA2_GROUPS);
        kv_u32(&mb, a, "ssm.inner_size", (uint32_t)m2_inner);
        kv_u32(&mb, a, "ssm.time_step_rank", (uint32_t)m2_heads);
        kv_bool(&mb, a, "rope.scaling.finetuned", true);
    }
    if (fam->head_factor != 1 && !gemma3n) {
        kv_u32(&mb, a, "attention.key_length", (uint32_t)head_dim);
        kv_u32(&mb, a, "attention.value_length", (uint32_t)head_dim);
    }
    if (fl & F_ROPE_DIM_KEY) kv_u32(&mb, a, "rope.dimension_count", (uint32_t)n_rot);
    kv_f32(&mb, a, "rope.freq_base", fam->rope_base);
    kv_f32(&mb, a, "attention.layer_norm_rms_epsilon", fam->rms_eps);
    if (swa) kv_u32(&mb, a, "attention.sliding_window", swa);
    if (fam->rope_base_swa != 0) kv_f32(&mb, a, "rope.freq_base_swa", fam->rope_base_swa);
    if (fam->attn_softcap != 0) kv_f32(&mb, a, "attn_logit_softcapping", fam->attn_softcap);
    if (fam->final_softcap != 0) kv_f32(&mb, a, "final_logit_softcapping", fam->final_softcap);
    if (fam->orig_ctx) kv_u32(&mb, a, "rope.scaling.original_context_length", fam->orig_ctx);
    if (fam->rope_attn_factor != 0) kv_f32(&mb, a, "rope.scaling.attn_factor", fam->rope_attn_factor);
    if (fam->yarn_factor != 0) {
        kv_str(&mb, a, "rope.scaling.type", "yarn");
        kv_f32(&mb, a, "rope.scaling.factor", fam->yarn_factor);
        kv_f32(&mb, a, "rope.scaling.yarn_beta_fast", 32.0f);
        kv_f32(&mb, a, "rope.scaling.yarn_beta_slow", 1.0f);
        kv_f32(&mb, a, "rope.scaling.yarn_log_multiplier", fam->yarn_log_mul);
    }
    if (fam->attn_temp_scale != 0) kv_f32(&mb, a, "attention.temperature_scale", fam->attn_temp_scale);
    if (fam->embedding_scale != 0) kv_f32(&mb, a, "embedding_scale", fam->embedding_scale);
    if (fam->residual_scale != 0) kv_f32(&mb, a, "residual_scale", fam->residual_scale);
    if (attention_scale != 0) kv_f32(&mb, a, "attention.scale", attention_scale);
    if (fam->logit_scale != 0) kv_f32(&mb, a, "logit_scale", fam->logit_scale);
    /* an embedding model's pooling (a decoder's with --pooling: Qwen3-Embedding's last) */
    if (pooling_name || fl & F_DENSE) kv_u32(&mb, a, "pooling_type", (uint32_t)pooling);
    if (fl & F_DENSE) {
        kv_u32(&mb, a, "dense_2_feat_in", (uint32_t)dim);
        kv_u32(&mb, a, "dense_2_feat_out", (uint32_t)(4 * dim));
        kv_u32(&mb, a, "dense_3_feat_in", (uint32_t)(4 * dim));
        kv_u32(&mb, a, "dense_3_feat_out", (uint32_t)dim);
    }
    if (reranker) { /* the keys conversion/qwen.py writes for Qwen3-Reranker, its prompt included */
        static const char *const labels[] = {"yes", "no"};
        kv_str_array(&mb, a, "classifier.output_labels", labels, 2);
        kv_str(&mb, NULL, "tokenizer.chat_template.rerank", QWEN3_RERANK_PROMPT);
    }
    for (uint64_t i = 0; i < vg.n_kv; i++)
        if (is_tokenizer_kv(&vg.kv[i])) {
            const uint8_t *start;
            size_t n = kv_extent(&vg.kv[i], &start);
            meta_put(&mb, start, n);
            mb.count++;
        }
    if (mb.oom) {
        free(mb.p);
        free(ts);
        free(rope_values);
        gguf_close(&vg);
        free(vbuf);
        return errorf(err, WICK_ERR_NOMEM, "out of memory");
    }

#undef G4_FULL
    int rc = write_synth_file(out_path, ts, n_t, &mb, seed, legacy, err);
    free(mb.p);
    free(ts);
    free(rope_values);
    gguf_close(&vg);
    free(vbuf);
    return rc;
}
