/* context.h — the inference context: the KV cache (per layer, a sliding layer's ring), the
 * recurrent state and its snapshots, the scratch of one batch and the thread pool; how the cache
 * is laid out (kv_at, kv_row_bytes: rows of F32, F16, Q8_0 or Q4_0 values), and what can be done to
 * it (trim, shift, snapshot). */
#ifndef WICK_CONTEXT_H
#define WICK_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"
#include "images.h"
#include "matmul.h"
#include "model.h"
#include "pool.h"
#include "quant.h"
#include "wick.h"

/* Snapshots of the recurrent state a context keeps (the ends of the last prompts: a new chat
 * turn or a regenerated answer goes on from one of them). */
#define STATE_SNAPSHOTS 2

struct wick_ctx {
    const struct wick_model *model;
    int32_t n_ctx, n_batch, n_past;
    int32_t kv_type, kv_type_v;   /* WICK_KV_* of the cached keys (k_cache) and of the values (v_cache) */
    errmsg error;                 /* the last failure of a call on this context (wick_ctx_last_error) */
    void *k_cache, *v_cache;      /* per layer l: [kv_slots[l]] rows of the layer's kv_dim values from value
                                   * kv_off[l], each row in its cache's type (kv_at, kv_row_bytes) */
    int32_t *kv_slots;            /* positions layer l holds: n_ctx, or a ring for a sliding layer; 0 where
                                   * it keeps none (recurrent, or reading another layer's: kv_layer) */
    size_t *kv_off;               /* where layer l's cache starts, in values (a multiple of 32: whole blocks) */
    size_t kv_bytes_k, kv_bytes_v; /* of k_cache and of v_cache */
    /* Walsh–Hadamard rotations before a block-type cache rounds (kv_hadamard): the size of the
     * blocks of each query and key row (k_rot) and of each value row and attention output (v_rot)
     * rotated, or 0 for none; as llama.cpp decides them (ctx_init) */
    int32_t k_rot, v_rot;
    /* A sliding layer's ring holds position p in slot p mod ring: its last n_swa − 1 + n_batch
     * positions, enough for a batch to see its window; swa_lo is the oldest position every ring
     * still holds (positions before it were overwritten). ring is 0 when no layer has one. */
    int32_t ring, swa_lo;
    const float *rope_factors;    /* frequency divisors in effect: rope_freqs, or phi3's set for n_ctx */
    pool *pool;
    bool pool_lent;               /* the pool is another context's (ctx_lend_pool): not freed with this one */
    /* scratch for one batch of at most n_batch tokens */
    float *x, *xb, *xb2, *q, *k, *v, *hb, *hb2; /* q and xb2 are [n_batch][q_dim], x and xb [n_batch][dim] */
    float *rope_cos, *rope_sin;   /* [2][n_batch][rope_dim/2]: the full layers' base, then the sliding layers' */
    float *att;                   /* per thread: attention's scratch (attention.h, attention_scratch_floats) */
    float *wconv;                 /* per thread: F16/BF16 weight rows as floats in prefill (matmul.c), grown on use */
    size_t wconv_floats;
    void *qbuf[ACT_SLOTS];
    float *xr;                    /* a batch of activation rows rounded for F16/BF16 weights (matmul.c), or NULL: no such weights */
    size_t qbuf_bytes;
    float *logits;                /* [n_logit_rows][n_vocab] */
    int32_t n_logit_rows, logits_cap_rows;
    /* The recurrent layers' state (lfm2, qwen35): layer l's from rstate + rs_off[l], of
     * model_layer_state_floats(m, l) floats, all zero at position 0. It sums up every position
     * before n_past in a fixed size, so it cannot be cut back to an earlier position: the cache
     * returns only to a snapshot of it taken there (kv_state_snapshot), or to 0. */
    float *rstate;
    size_t *rs_off, rs_floats;
    float *rs_snap[STATE_SNAPSHOTS];
    int32_t rs_snap_pos[STATE_SNAPSHOTS]; /* the position a snapshot holds the state of; -1: empty */
    uint32_t rs_snap_used[STATE_SNAPSHOTS], rs_clock; /* when each was taken: the oldest is replaced */
    /* scratch of the recurrent layers and of the attention output gate, [n_batch] rows each:
     * proj the input projections, mix the convolution's output, mix2 the mixer's output or the gate */
    float *proj, *mix, *mix2;
    /* the per-layer embeddings of a batch (gemma4): ple [n_batch][n_layers][n_ple], each layer's
     * input; ple_row [n_layers·n_ple], one token's row of the table; ple_gate [n_batch][n_ple],
     * a layer's gated projection; ple_raw [n_batch] rows of the table as stored, read in where
     * the table is outside the buffers (else NULL) */
    float *ple, *ple_row, *ple_gate;
    /* AltUp and Laurel (gemma3n): alt [n_altup][n_batch][dim], the streams; laurel [n_batch][dim]
     * Laurel's output, then [n_batch][rank] its low-rank middle; alt_coef [n_batch][n_altup] the
     * router's output, then [n_batch][n_altup²] the coefficients made from it */
    float *alt, *laurel, *alt_coef;
    uint8_t *ple_raw;
    /* an external context (wick_ctx_new_external): no cache or scratch here, the operations
     * wick_eval, wick_kv_trim and kv_state_snapshot asked for, waiting for wick_ctx_external_ops.
     * A hybrid model's state is the outside backend's: rs_floats counts it (so that trims and
     * shifts obey the same rules), rstate and the snapshots stay NULL, the snapshot positions
     * are kept here. */
    bool external;
    int32_t *ext_ops, ext_len, ext_cap;
    /* the rows the image ids of a prompt read (wick.h WICK_IMAGE_TOKEN; images.h), one per slot given */
    ctx_image *images;
    int32_t n_images, cap_images;
    /* M-RoPE models (model_config.mrope): the rope position the token after each cached position
     * takes ([n_ctx]: an image's run moves it by its grid's longer side, not by its count), and a
     * batch's four positions per token ([n_batch][4]); NULL otherwise */
    int32_t *mrope_next, *mrope_pos;
};

/* Tokens an encoder's context evaluates in one pass unless asked (at least its window): several
 * sequences packed together, each weight matrix read once for all of them. */
#define ENCODER_BATCH_DEFAULT 2048

int ctx_init(struct wick_ctx *c, const struct wick_model *m, const wick_ctx_params *p, errmsg *err);
/* An external context (wick.h, wick_ctx_new_external): the window and the logits only. */
int ctx_init_external(struct wick_ctx *c, const struct wick_model *m, int32_t n_ctx, errmsg *err);
/* Appends n int32s to an external context's operations (the queue wick_ctx_external_ops hands
 * out); -1 when out of memory. */
int ctx_external_push(struct wick_ctx *c, const int32_t *v, int32_t n);
void ctx_release(struct wick_ctx *c);
/* Until called again with NULL, contexts made with p's thread count run on p instead of starting
 * threads of their own (an image encoder's context on the text context's threads: a wasm build's
 * worker pool holds only as many threads as the page asked for). */
void ctx_lend_pool(pool *p);
int kv_cache_shift(struct wick_ctx *c, int32_t n_keep, int32_t n_discard, errmsg *err);
/* Whether the cache can drop positions n_keep … n_keep + n_discard − 1 and go on: false when a
 * sliding layer would need kept positions its ring no longer holds (then evaluate again). */
bool kv_cache_can_shift(const struct wick_ctx *c, int32_t n_keep, int32_t n_discard);
/* Whether the cache can be cut back to its first n positions and go on from there (a sliding
 * layer's ring must still hold the window before position n). */
bool kv_cache_can_trim(const struct wick_ctx *c, int32_t n);
/* Cuts the cache back to its first n positions (kv_cache_can_trim must hold): a recurrent state
 * is zeroed (n = 0) or restored from the snapshot at n; snapshots after n are forgotten. */
int kv_cache_trim(struct wick_ctx *c, int32_t n, errmsg *err);
/* The largest position ≤ n the cache can be cut back to (0 at worst). */
int32_t kv_cache_rewind_point(const struct wick_ctx *c, int32_t n);
/* Whether the model has recurrent layers (their state cannot be shifted or cut back freely). */
bool ctx_has_state(const struct wick_ctx *c);
/* Keeps a copy of the recurrent state at the current position (n_past), replacing the oldest
 * snapshot; a no-op without recurrent layers. An external context asks its backend to keep it
 * (WICK_OP_SNAPSHOT). */
void kv_state_snapshot(struct wick_ctx *c);
/* Bytes of the recurrent state, its snapshots included (0 without recurrent layers). */
size_t ctx_state_bytes(const struct wick_ctx *c);

/* ---- the cache's layout: inline, for every step that reads or writes it ---- */

/* width of one cached key or value row: every KV head's */
static inline int kv_dim(const model_config *c) { return c->n_kv_heads * c->head_dim; }

/* Bytes of n cached values of a KV type (n a multiple of 32 for the block types: Q8_0 and Q4_0
 * blocks of quant.h, 34 and 18 bytes per 32 values). */
static inline size_t kv_type_bytes(int32_t type, size_t n) {
    /* bytes per 32 values: F32, F16, Q8_0 (a block), Q4_0 (a block); in 64 bits, where n · 128 may not fit */
    static const uint8_t per_32[WICK_KV_TYPE_COUNT] = {128, 64, sizeof(block_q8_0), sizeof(block_q4_0)};
    return (size_t)((uint64_t)n * per_32[type] >> 5);
}

/* whether a KV type stores blocks (Q8_0, Q4_0) rather than one float per value */
static inline int kv_type_is_block(int32_t type) { return type == WICK_KV_Q8_0 || type == WICK_KV_Q4_0; }

/* the quant table's type (quant.h) of a KV type */
static inline uint32_t kv_quant_type(int32_t type) {
    static const uint32_t of[WICK_KV_TYPE_COUNT] = {WICK_TYPE_F32, WICK_TYPE_F16, WICK_TYPE_Q8_0, WICK_TYPE_Q4_0};
    return of[type];
}

/* the type of a cache: c->k_cache or c->v_cache */
static inline int32_t kv_cache_type(const struct wick_ctx *c, const void *cache) {
    return cache == c->v_cache ? c->kv_type_v : c->kv_type;
}

/* Bytes of one cached row (one position's keys or values, every KV head) of layer l in a cache
 * (c->k_cache or c->v_cache): what a copy of the row as raw bytes takes, whatever the type. */
static inline size_t kv_row_bytes(const struct wick_ctx *c, const void *cache, int l) {
    return kv_type_bytes(kv_cache_type(c, cache), (size_t)kv_dim(model_layer_config(c->model, l)));
}

/* One value of a float cache (F32 or F16) whose keys and values share a type (encoders keep
 * both in F32; the tests): base is a row from kv_at. A block type is read a row at a time
 * (kv_row_load). */
static inline float kv_load(const struct wick_ctx *c, const void *base, size_t i) {
    return c->kv_type == WICK_KV_F16 ? quant_f16_to_f32(((const uint16_t *)base)[i]) : ((const float *)base)[i];
}

static inline void kv_store(const struct wick_ctx *c, void *base, size_t i, float v) {
    if (c->kv_type == WICK_KV_F16) ((uint16_t *)base)[i] = quant_f32_to_f16(v);
    else ((float *)base)[i] = v;
}

/* the slot of position pos in layer l's cache (a sliding layer's ring wraps around) */
static inline int kv_slot(const struct wick_ctx *c, int l, int pos) {
    return pos < c->kv_slots[l] ? pos : pos % c->kv_slots[l];
}

/* layer l, position pos in a cache (c->k_cache or c->v_cache): the start of its row */
static inline void *kv_at(const struct wick_ctx *c, void *cache, int l, int pos) {
    size_t value = c->kv_off[l] + (size_t)kv_slot(c, l, pos) * (size_t)kv_dim(model_layer_config(c->model, l));
    return (uint8_t *)cache + kv_type_bytes(kv_cache_type(c, cache), value);
}

/* Rotates each run of n (a power of two) of the n_values floats at x by the orthonormal
 * Walsh–Hadamard matrix H_n (Sylvester's order, entries ±1/sqrt(n)), which is its own inverse.
 * Rotated keys and queries have the same dot products, but a rotated row spreads an outlier
 * over its block, so its Q8_0 / Q4_0 blocks round it with smaller steps: llama.cpp
 * (llama-kv-cache.cpp, attn_rot_k / attn_rot_v; llama-graph.cpp, build_attn) rotates queries
 * and keys, and values and the attention output, so for a quantized cache. */
void kv_hadamard(float *x, size_t n_values, int n);

/* n values (a multiple of 32 for the block types) of a KV type at src → floats */
void kv_values_load(int32_t type, const void *src, float *dst, size_t n);
/* n floats → values of a KV type at dst: the block types rounded as llama.cpp's quantize_row_q8_0 /
 * quantize_row_q4_0 (ggml-quants.c) round a cache row */
void kv_values_store(int32_t type, const float *src, void *dst, size_t n);
/* layer l's row of position pos in a cache (c->k_cache or c->v_cache), kv_dim values, written from
 * src (quantized for the block types); read back with kv_values_load(kv_cache_type(c, cache),
 * kv_at(c, cache, l, pos), …) */
void kv_row_store(const struct wick_ctx *c, void *cache, int l, int pos, const float *src);

#endif
