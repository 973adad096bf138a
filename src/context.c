/* context.c — the inference context: its allocation (the KV cache of every attention layer, a
 * sliding layer's ring where that is smaller, the recurrent state and its snapshots, the scratch
 * of one batch, the thread pool) and release; and what is done to the cache between evaluations:
 * cutting it back (trim, to a snapshot of the recurrent state), dropping positions and
 * re-rotating the keys moved down (shift), snapshots of the recurrent state. */
#include "attention.h"
#include "context.h"
#include "errmsg.h"
#include "rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void wick_ctx_default_params(wick_ctx_params *p) {
    p->n_ctx = 0;
    p->n_batch = 0;
    p->n_threads = 0;
    p->kv_type = WICK_KV_F16;
    p->kv_type_k = p->kv_type_v = 0; /* as kv_type */
}

void kv_values_load(int32_t type, const void *src, float *dst, size_t n) {
    if (type == WICK_KV_F32) memcpy(dst, src, n * sizeof(float));
    else quant_get(kv_quant_type(type))->to_float(src, dst, (int64_t)n);
}

void kv_values_store(int32_t type, const float *src, void *dst, size_t n) {
    /* the quant table's: Q8_0 and Q4_0 as quantize_row_q8_0_ref / quantize_row_q4_0_ref */
    if (type == WICK_KV_F32) memcpy(dst, src, n * sizeof(float));
    else quant_get(kv_quant_type(type))->from_float(src, dst, (int64_t)n);
}

void kv_row_store(const struct wick_ctx *c, void *cache, int l, int pos, const float *src) {
    kv_values_store(kv_cache_type(c, cache), src, kv_at(c, cache, l, pos), (size_t)kv_dim(model_layer_config(c->model, l)));
}

/* a few hundred bytes of the page's download for a loop that runs once per cached row */
#ifdef __clang__
#define NO_VECTORIZE _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")
#else
#define NO_VECTORIZE
#endif

__attribute__((noinline)) void kv_hadamard(float *x, size_t n_values, int n) {
    const float scale = 1.0f / sqrtf((float)n);
    for (size_t b = 0; b + (size_t)n <= n_values; b += (size_t)n) {
        float *v = x + b;
        for (int len = 1; len < n; len <<= 1) /* H_2n = [[H_n, H_n], [H_n, −H_n]]: butterflies */
            for (int i = 0; i < n; i += 2 * len)
                NO_VECTORIZE for (int j = i; j < i + len; j++) {
                    float a = v[j], d = v[j + len];
                    v[j] = a + d;
                    v[j + len] = a - d;
                }
        NO_VECTORIZE for (int i = 0; i < n; i++) v[i] *= scale;
    }
}

/* The Hadamard rotations a context takes (kv_hadamard), as llama.cpp's llama_kv_cache decides
 * them: keys, when they are a block type and every layer with a cache has the same head size, a
 * multiple of 64: in blocks of its largest power-of-two divisor; values likewise, in blocks of 64. */
static void kv_rotations(struct wick_ctx *c) {
    int hd_all = 0;
    for (int l = 0; l < c->model->config.n_layers; l++) {
        if (!c->kv_slots[l]) continue;
        int hd = model_layer_config(c->model, l)->head_dim;
        hd_all = hd_all == 0 ? hd : hd_all == hd ? hd_all : -1;
    }
    c->k_rot = c->v_rot = 0;
    if (hd_all <= 0 || hd_all % 64) return;
    if (kv_type_is_block(c->kv_type)) c->k_rot = hd_all & -hd_all; /* its largest power-of-two divisor */
    if (kv_type_is_block(c->kv_type_v)) c->v_rot = 64;
}



static int recurrent_state_init(struct wick_ctx *c, errmsg *err);

/* whether a file of the model holds a matrix in F16 or BF16: its products take activations rounded
 * to those values (matmul.c act_get, WICK_TYPE_F32_H / F32_BH), in a buffer of their own */
static bool model_has_float16_matrices(const struct wick_model *m) {
    if (!m->is_gguf) return false;
    for (int f = -1; f < m->n_shards; f++) {
        const gguf_file *g = f < 0 ? &m->gguf : &m->shards[f];
        for (uint64_t i = 0; i < g->n_tensors; i++)
            if (g->tensors[i].n_dims >= 2 && (g->tensors[i].type == WICK_TYPE_F16 || g->tensors[i].type == WICK_TYPE_BF16))
                return true;
    }
    return false;
}

int ctx_init_external(struct wick_ctx *c, const struct wick_model *m, int32_t n_ctx, errmsg *err) {
    memset(c, 0, sizeof *c);
    if (!m->has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "the model has no weights (vocab-only file)");
    const model_config *mc = &m->config;
    int32_t def_ctx = mc->n_ctx_train < 2048 ? 2048 : mc->n_ctx_train > 4096 ? 4096 : mc->n_ctx_train; /* as ctx_init */
    if (n_ctx < 0 || n_ctx > (1 << 22)) return errorf(err, WICK_ERR_INVALID_ARG, "context size %d out of range (1 to %d)", n_ctx, 1 << 22);
    c->model = m;
    c->n_ctx = n_ctx > 0 ? n_ctx : def_ctx;
    c->n_batch = c->n_ctx;
    c->external = true;
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap_pos[i] = -1;
    /* a hybrid's recurrent state lives on the backend; its size here makes ctx_has_state true */
    for (int l = 0; l < mc->n_layers; l++) c->rs_floats += model_layer_state_floats(m, l);
    return 0;
}

/* The largest recurrent state a context takes: 2^28 floats (1 GiB, 3 GiB with its two
 * snapshots; far above any real model's). Checked as the layers are summed, so that the sum
 * cannot wrap around wasm32's 32-bit size_t. */
#define MAX_STATE_FLOATS ((size_t)1 << 28)

/* The pool the next contexts of its size take instead of starting their own (ctx_lend_pool). */
static pool *lent_pool;

int ctx_init(struct wick_ctx *c, const struct wick_model *m, const wick_ctx_params *p, errmsg *err) {
    memset(c, 0, sizeof *c);
    if (!m->has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "the model has no weights (vocab-only file)");
    const model_config *mc = &m->config;
    for (int l = 0; l < mc->n_layers; l++) {
        int hd = model_layer_config(m, l)->head_dim;
        if (hd % 8 || hd > MAX_HEAD_DIM)
            return errorf(err, WICK_ERR_INVALID_ARG, "head dimension %d is not supported (multiples of 8 up to %d are)", hd, MAX_HEAD_DIM);
    }
    c->model = m;
    /* default window: the training context, at least 2048 (tiny models list short ones but
     * extrapolate; llama.cpp runs them so) and at most 4096 (memory) */
    int32_t def_ctx = mc->n_ctx_train < 2048 ? 2048 : mc->n_ctx_train > 4096 ? 4096 : mc->n_ctx_train;
    c->n_ctx = p->n_ctx > 0 ? p->n_ctx : def_ctx;
    c->n_batch = p->n_batch > 0 ? p->n_batch : 256;
    if (c->n_batch > c->n_ctx) c->n_batch = c->n_ctx;
    int32_t kv_type = p->kv_type_k ? p->kv_type_k : p->kv_type, kv_type_v = p->kv_type_v ? p->kv_type_v : p->kv_type;
    int32_t bad = (uint32_t)p->kv_type >= WICK_KV_TYPE_COUNT ? p->kv_type : (uint32_t)kv_type >= WICK_KV_TYPE_COUNT ? kv_type : kv_type_v;
    if ((uint32_t)bad >= WICK_KV_TYPE_COUNT)
        return errorf(err, WICK_ERR_INVALID_ARG, "KV cache type %d unknown (0 = f32, 1 = f16, 2 = q8_0, 3 = q4_0)", bad);
    if (mc->encoder) {
        /* An encoder (encoder.c): the window is its longest sequence, at most the positions it
         * has embeddings for; a batch packs several sequences (ENCODER_BATCH_DEFAULT tokens
         * unless asked), and the cache holds one sequence's keys and values at a time, in F32
         * as llama.cpp's cacheless attention keeps them. */
        c->n_ctx = p->n_ctx > 0 ? p->n_ctx : mc->n_ctx_train;
        if (c->n_ctx > mc->n_ctx_train)
            return errorf(err, WICK_ERR_INVALID_ARG, "context size %d: the encoder has positions for %d tokens", c->n_ctx, mc->n_ctx_train);
        c->n_batch = p->n_batch > 0 ? p->n_batch : ENCODER_BATCH_DEFAULT;
        if (c->n_batch < c->n_ctx) c->n_batch = c->n_ctx;
        kv_type = kv_type_v = WICK_KV_F32;
    }
    /* a block type's blocks of 32 lie along each head's part of a row: whole blocks per head */
    for (int l = 0; l < mc->n_layers && (kv_type_is_block(kv_type) || kv_type_is_block(kv_type_v)); l++) {
        int hd = model_layer_config(m, l)->head_dim;
        if (hd % QK8_0)
            return errorf(err, WICK_ERR_INVALID_ARG, "a q8_0/q4_0 KV cache needs head sizes that are multiples of 32 (layer %d: %d)", l, hd);
    }
    int n_threads = p->n_threads > 0 ? p->n_threads : 1;
    if (p->n_ctx < 0 || c->n_ctx > (1 << 22)) return errorf(err, WICK_ERR_INVALID_ARG, "context size %d out of range (1 to %d)", p->n_ctx, 1 << 22);
    if (p->n_batch < 0 || p->n_batch > (1 << 22) || p->n_threads < 0 || n_threads > 256)
        return errorf(err, WICK_ERR_INVALID_ARG, "batch size %d or thread count %d out of range", p->n_batch, p->n_threads);
    c->kv_type = kv_type;
    c->kv_type_v = kv_type_v;
    /* phi3 rotates with its long-context factors when the context exceeds the original one
     * (llama.cpp's get_rope_factors); Llama 3's rope_freqs apply always */
    c->rope_factors = m->rope_freqs;
    if (m->rope_factors_short) c->rope_factors = c->n_ctx > mc->n_ctx_orig ? m->rope_factors_long : m->rope_factors_short;

    /* the cache of each layer: every position, or a sliding layer's ring when that is smaller */
    if (mc->n_swa > 0 && (int64_t)mc->n_swa - 1 + c->n_batch < c->n_ctx) c->ring = mc->n_swa - 1 + c->n_batch;
    c->kv_slots = malloc((size_t)mc->n_layers * sizeof *c->kv_slots);
    c->kv_off = malloc((size_t)mc->n_layers * sizeof *c->kv_off);
    if (!c->kv_slots || !c->kv_off) {
        ctx_release(c);
        return errorf(err, WICK_ERR_NOMEM, "out of memory");
    }
    uint64_t elems = 0; /* of k_cache: each layer's slots times its kv_dim */
    for (int l = 0; l < mc->n_layers; l++) {
        /* a recurrent layer keeps no keys and values, nor one that reads another layer's (gemma4) */
        const layer_weights *w = &m->layers[l];
        c->kv_slots[l] = w->kind != LAYER_ATTENTION || w->kv_layer != l ? 0 : w->sliding && c->ring ? c->ring : c->n_ctx;
        c->kv_off[l] = (size_t)elems;
        elems += (uint64_t)c->kv_slots[l] * (uint64_t)kv_dim(model_layer_config(m, l));
    }
    /* KV cache size checked in 64 bits before allocating: it is the one large allocation here
     * (elems is a multiple of 32 where a block type is asked for: every kv_dim is) */
    uint64_t k_bytes = elems * kv_type_bytes(kv_type, 64) / 64, v_bytes = elems * kv_type_bytes(kv_type_v, 64) / 64;
    uint64_t kv_bytes = k_bytes + v_bytes;
    if (k_bytes > (uint64_t)1 << 31 || v_bytes > (uint64_t)1 << 31 || kv_bytes > SIZE_MAX / 2) {
        ctx_release(c);
        return errorf(err, WICK_ERR_NOMEM, "a KV cache for %d tokens needs %llu MiB: too large for this build; ask for a smaller context",
                    p->n_ctx > 0 ? p->n_ctx : c->n_ctx, (unsigned long long)(kv_bytes >> 20));
    }
    kv_rotations(c);
    c->kv_bytes_k = (size_t)k_bytes;
    c->kv_bytes_v = (size_t)v_bytes;
    c->k_cache = malloc(k_bytes ? (size_t)k_bytes : 1); /* 0 when every layer is recurrent */
    c->v_cache = malloc(v_bytes ? (size_t)v_bytes : 1);

    size_t B = (size_t)c->n_batch, dim = (size_t)mc->dim, hid = (size_t)mc->hidden_dim, kvd = (size_t)kv_dim(mc);
    if ((size_t)m->dense_2.rows > hid) hid = (size_t)m->dense_2.rows; /* dense_2's output rows take hb (encoder.c) */
    size_t qd = (size_t)mc->q_dim, widest = hid > dim ? hid : dim;
    if (qd > widest) widest = qd;
    size_t vd = (size_t)mc->ssm_v_heads * (size_t)mc->ssm_state; /* DeltaNet's output, the input of ssm_out */
    if (vd > widest) widest = vd;
    if ((size_t)mc->n_ple > widest) widest = (size_t)mc->n_ple; /* the per-layer embeddings' proj input */
    if ((size_t)mc->laurel_rank > widest) widest = (size_t)mc->laurel_rank; /* laurel_r's input */
    c->x = malloc(B * dim * sizeof(float));
    c->xb = malloc(B * dim * sizeof(float));
    c->xb2 = malloc(B * qd * sizeof(float));
    c->q = malloc(B * qd * sizeof(float));
    c->k = malloc(B * kvd * sizeof(float));
    c->v = malloc(B * kvd * sizeof(float));
    c->hb = malloc(B * hid * sizeof(float));
    c->hb2 = malloc(B * hid * sizeof(float));
    size_t half = (size_t)(rope_half_max(mc) > 0 ? rope_half_max(mc) : 1);
    c->rope_cos = malloc(2 * B * half * sizeof(float));
    c->rope_sin = malloc(2 * B * half * sizeof(float));
    c->att = malloc((size_t)n_threads * attention_scratch_floats(c->n_ctx) * sizeof(float));
    if (recurrent_state_init(c, err)) {
        ctx_release(c);
        return -1;
    }
    if (mc->n_ple) {
        c->ple = malloc(B * (size_t)mc->n_layers * (size_t)mc->n_ple * sizeof(float));
        c->ple_row = malloc((size_t)mc->n_layers * (size_t)mc->n_ple * sizeof(float));
        c->ple_gate = malloc(B * (size_t)mc->n_ple * sizeof(float));
        /* the raw rows of a batch, where the table is outside the buffers */
        c->ple_raw = m->ple_place.outside ? malloc(B * m->ple_embd.row_bytes) : NULL;
        if (!c->ple || !c->ple_row || !c->ple_gate || (m->ple_place.outside && !c->ple_raw)) {
            ctx_release(c);
            return errorf(err, WICK_ERR_NOMEM, "out of memory allocating the per-layer embeddings of a batch of %d", c->n_batch);
        }
    }
    if (mc->mrope != MROPE_NONE) {
        c->mrope_next = malloc((size_t)c->n_ctx * sizeof *c->mrope_next);
        c->mrope_pos = malloc(B * 4 * sizeof *c->mrope_pos);
        if (!c->mrope_next || !c->mrope_pos) {
            ctx_release(c);
            return errorf(err, WICK_ERR_NOMEM, "out of memory allocating the M-RoPE positions of %d tokens", c->n_ctx);
        }
    }
    if (mc->n_altup) {
        size_t n = (size_t)mc->n_altup;
        c->alt = malloc(B * n * dim * sizeof(float));
        c->laurel = malloc(B * (dim + (size_t)mc->laurel_rank) * sizeof(float));
        c->alt_coef = malloc(B * (n + n * n) * sizeof(float));
        if (!c->alt || !c->laurel || !c->alt_coef) {
            ctx_release(c);
            return errorf(err, WICK_ERR_NOMEM, "out of memory allocating the AltUp streams of a batch of %d", c->n_batch);
        }
    }
    c->qbuf_bytes = B * (widest * ACT_BYTES_PER_ELEM_NUM / ACT_BYTES_PER_ELEM_DEN + 64);
    for (int i = 0; i < ACT_SLOTS; i++) c->qbuf[i] = malloc(c->qbuf_bytes);
    if (model_has_float16_matrices(m)) {
        c->xr = malloc(B * widest * sizeof(float));
        if (!c->xr) {
            ctx_release(c);
            return errorf(err, WICK_ERR_NOMEM, "out of memory allocating the F16-rounded activations of a batch of %d", c->n_batch);
        }
    }
    if (!c->k_cache || !c->v_cache || !c->x || !c->xb || !c->xb2 || !c->q || !c->k || !c->v || !c->hb ||
        !c->hb2 || !c->rope_cos || !c->rope_sin || !c->att || !c->qbuf[0] || !c->qbuf[1] || !c->qbuf[2]) {
        ctx_release(c);
        return errorf(err, WICK_ERR_NOMEM, "out of memory allocating a context of %d tokens (KV cache %llu MiB)",
                    p->n_ctx > 0 ? p->n_ctx : 0, (unsigned long long)(kv_bytes >> 20));
    }
    c->pool_lent = lent_pool && pool_size(lent_pool) == n_threads;
    c->pool = c->pool_lent ? lent_pool : pool_new(n_threads);
    if (!c->pool) {
        ctx_release(c);
        return errorf(err, WICK_ERR_INVALID_ARG, "cannot start %d threads (this build may be single-threaded)", n_threads);
    }
    return 0;
}

/* The recurrent state and its snapshots (sized here, once: constant in the number of tokens),
 * and the scratch of the recurrent layers and of an attention output gate. */
static int recurrent_state_init(struct wick_ctx *c, errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    size_t B = (size_t)c->n_batch, dim = (size_t)mc->dim, qd = (size_t)mc->q_dim;
    size_t proj_w = 0, mix_w = 0, mix2_w = 0;
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap_pos[i] = -1;
    if (mc->attn_out_gate) proj_w = 2 * qd, mix2_w = qd;
    if (mc->n_recurrent == 0 && !mc->attn_out_gate) return 0;
    c->rs_off = malloc((size_t)mc->n_layers * sizeof *c->rs_off);
    if (!c->rs_off) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    for (int l = 0; l < mc->n_layers; l++) {
        layer_kind kind = m->layers[l].kind;
        c->rs_off[l] = c->rs_floats;
        c->rs_floats += model_layer_state_floats(m, l); /* each term < 2^29 (the model's bounds) */
        if (c->rs_floats > MAX_STATE_FLOATS)
            return errorf(err, WICK_ERR_NOMEM, "a recurrent state of more than %u MiB is too large", (unsigned)(MAX_STATE_FLOATS >> 18));
        size_t ch = (size_t)model_conv_channels(mc, kind), vd = (size_t)mc->ssm_v_heads * (size_t)mc->ssm_state;
        if (kind == LAYER_SHORTCONV) {
            if (3 * dim > proj_w) proj_w = 3 * dim;
            if (dim > mix_w) mix_w = dim;
        } else if (kind == LAYER_DELTANET) {
            /* proj: q | k | v (the convolution's input), z, α, β; mix: the convolution's output */
            size_t w = ch + vd + 2 * (size_t)mc->ssm_v_heads;
            if (w > proj_w) proj_w = w;
            if (ch > mix_w) mix_w = ch;
            if (vd > mix2_w) mix2_w = vd;
        } else if (kind == LAYER_MAMBA2) {
            /* proj: z | x B C | dt; mix: the convolution's output; mix2: y */
            size_t inner = (size_t)mc->ssm_inner, w = inner + ch + (size_t)mc->ssm_v_heads;
            if (w > proj_w) proj_w = w;
            if (ch > mix_w) mix_w = ch;
            if (inner > mix2_w) mix2_w = inner;
        }
    }
    size_t state_bytes = (c->rs_floats ? c->rs_floats : 1) * sizeof(float);
    c->rstate = calloc(1, state_bytes);
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap[i] = malloc(state_bytes);
    c->proj = malloc(B * (proj_w ? proj_w : 1) * sizeof(float));
    c->mix = malloc(B * (mix_w ? mix_w : 1) * sizeof(float));
    c->mix2 = malloc(B * (mix2_w ? mix2_w : 1) * sizeof(float));
    if (!c->rstate || !c->rs_snap[0] || !c->rs_snap[1] || !c->proj || !c->mix || !c->mix2)
        return errorf(err, WICK_ERR_NOMEM, "out of memory allocating the recurrent state (%zu bytes)", state_bytes);
    return 0;
}

bool ctx_has_state(const struct wick_ctx *c) { return c->rs_floats > 0; }

size_t ctx_state_bytes(const struct wick_ctx *c) {
    return c->rs_floats * sizeof(float) * (1 + STATE_SNAPSHOTS);
}

void kv_state_snapshot(struct wick_ctx *c) {
    if (!ctx_has_state(c)) return;
    /* the snapshot of this position already, else an empty slot, else the oldest */
    int slot = -1;
    for (int i = 0; i < STATE_SNAPSHOTS && slot < 0; i++)
        if (c->rs_snap_pos[i] == c->n_past) slot = i;
    for (int i = 0; i < STATE_SNAPSHOTS && slot < 0; i++)
        if (c->rs_snap_pos[i] < 0) slot = i;
    if (slot < 0) {
        slot = 0;
        for (int i = 1; i < STATE_SNAPSHOTS; i++)
            if (c->rs_snap_used[i] < c->rs_snap_used[slot]) slot = i;
    }
    if (c->external) {
        /* the backend copies its state into that slot; a snapshot it was not told of is none */
        int32_t op[2] = {WICK_OP_SNAPSHOT, slot};
        if (ctx_external_push(c, op, 2)) {
            c->rs_snap_pos[slot] = -1;
            return;
        }
    } else {
        memcpy(c->rs_snap[slot], c->rstate, c->rs_floats * sizeof(float));
    }
    c->rs_snap_pos[slot] = c->n_past;
    c->rs_snap_used[slot] = ++c->rs_clock;
}

int ctx_external_push(struct wick_ctx *c, const int32_t *v, int32_t n) {
    if (c->ext_len > INT32_MAX - n) return -1;
    if (c->ext_len + n > c->ext_cap) {
        int32_t cap = c->ext_cap ? c->ext_cap : 64;
        while (cap < c->ext_len + n) cap = cap > INT32_MAX / 2 ? INT32_MAX : cap * 2;
        int32_t *grown = realloc(c->ext_ops, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        c->ext_ops = grown;
        c->ext_cap = cap;
    }
    memcpy(c->ext_ops + c->ext_len, v, (size_t)n * sizeof *v);
    c->ext_len += n;
    return 0;
}

void ctx_lend_pool(pool *p) { lent_pool = p; }

void ctx_release(struct wick_ctx *c) {
    if (c->pool && !c->pool_lent) pool_free(c->pool);
    for (int32_t i = 0; i < c->n_images; i++) free(c->images[i].rows); /* the image slots' rows (images.c) */
    free(c->images);
    void *bufs[] = {c->k_cache, c->v_cache, c->x, c->xb, c->xb2, c->q, c->k, c->v, c->hb, c->hb2,
                    c->rope_cos, c->rope_sin, c->att, c->qbuf[0], c->qbuf[1], c->qbuf[2], c->logits,
                    c->kv_slots, c->kv_off, c->rstate, c->rs_off, c->proj, c->mix, c->mix2,
                    c->rs_snap[0], c->rs_snap[1], c->ext_ops, c->ple, c->ple_row, c->ple_gate,
                    c->alt, c->laurel, c->alt_coef, c->ple_raw, c->wconv, c->xr, c->mrope_next, c->mrope_pos};
    _Static_assert(STATE_SNAPSHOTS == 2, "ctx_release frees each snapshot");
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(c, 0, sizeof *c);
}

/* The old position of new position q after positions n_keep … n_keep + n_discard − 1 are dropped. */
static int shifted_from(int q, int n_keep, int n_discard) { return q < n_keep ? q : q + n_discard; }

/* The first position (in the new numbering) a sliding layer's ring can still supply after the
 * shift: within the ring's reach and held (at or after swa_lo) before. */
static int ring_first_after_shift(const struct wick_ctx *c, int n_keep, int n_discard) {
    int n_after = c->n_past - n_discard, lo = n_after - c->ring > 0 ? n_after - c->ring : 0;
    if (c->swa_lo > n_keep) { /* kept positions are gone: only moved ones from old swa_lo on */
        int q = c->swa_lo - n_discard;
        if (q < n_keep) q = n_keep;
        if (q > lo) lo = q;
    } else if (c->swa_lo > lo) {
        lo = c->swa_lo;
    }
    return lo < n_after ? lo : n_after;
}

bool kv_cache_can_shift(const struct wick_ctx *c, int32_t n_keep, int32_t n_discard) {
    if (n_keep < 0 || n_discard < 0 || n_keep + n_discard > c->n_past) return false;
    if (n_discard == 0) return true;
    if (c->external) return false;      /* the outside backend evaluates the kept tokens again */
    if (ctx_has_state(c)) return false; /* a recurrent state holds the dropped positions mixed in */
    if (!c->ring) return true;
    int n_after = c->n_past - n_discard, w = c->model->config.n_swa;
    int need = n_after >= w ? n_after - w + 1 : 0; /* the window of the next position */
    return ring_first_after_shift(c, n_keep, n_discard) <= need;
}

/* the snapshot of the recurrent state at position n, or -1 */
static int state_snapshot_at(const struct wick_ctx *c, int32_t n) {
    for (int i = 0; i < STATE_SNAPSHOTS; i++)
        if (c->rs_snap_pos[i] == n) return i;
    return -1;
}

bool kv_cache_can_trim(const struct wick_ctx *c, int32_t n) {
    if (n < 0 || n > c->n_past) return false;
    if (n == 0) return true;
    if (ctx_has_state(c) && n != c->n_past && state_snapshot_at(c, n) < 0) return false;
    if (!c->ring) return true;
    int w = c->model->config.n_swa, need = n >= w ? n - w + 1 : 0;
    return need >= c->swa_lo;
}

int32_t kv_cache_rewind_point(const struct wick_ctx *c, int32_t n) {
    if (n > c->n_past) n = c->n_past;
    if (n <= 0) return 0;
    if (!ctx_has_state(c)) return kv_cache_can_trim(c, n) ? n : 0;
    int32_t best = kv_cache_can_trim(c, n) ? n : 0;
    for (int i = 0; i < STATE_SNAPSHOTS; i++) {
        int32_t p = c->rs_snap_pos[i];
        if (p > best && p <= n && kv_cache_can_trim(c, p)) best = p;
    }
    return best;
}

int kv_cache_trim(struct wick_ctx *c, int32_t n, errmsg *err) {
    if (!kv_cache_can_trim(c, n)) {
        if (ctx_has_state(c) && n > 0 && n < c->n_past && state_snapshot_at(c, n) < 0)
            return errorf(err, WICK_ERR_INVALID_ARG, "cannot cut the cache back to %d positions: the recurrent state holds all %d and "
                          "has no snapshot at %d (evaluate from 0)", n, c->n_past, n);
        return errorf(err, WICK_ERR_INVALID_ARG, "cannot cut the cache back to %d positions: the sliding-window layers no longer hold "
                      "the window before it (evaluate from 0)", n);
    }
    if (ctx_has_state(c) && n != c->n_past && !c->external) { /* an external backend's: WICK_OP_TRIM says it */
        int i = n == 0 ? -1 : state_snapshot_at(c, n);
        if (i >= 0) memcpy(c->rstate, c->rs_snap[i], c->rs_floats * sizeof(float));
        else memset(c->rstate, 0, c->rs_floats * sizeof(float));
    }
    for (int i = 0; i < STATE_SNAPSHOTS; i++) /* later ones describe tokens no longer there */
        if (c->rs_snap_pos[i] > n) c->rs_snap_pos[i] = -1;
    if (n == 0) c->swa_lo = 0;
    c->n_past = n;
    return 0;
}

/* Re-rotates one cached key row of layer l (its kv_dim values) by the angles of cs/sn: read as
 * floats, rotated, stored again in the cache's type (a block type requantized, as llama.cpp's
 * K-shift dequantizes, rotates and quantizes its cache rows again). */
static void rotate_cached_key(struct wick_ctx *c, int l, const void *src, void *dst, const float *cs, const float *sn) {
    const model_config *mc = model_layer_config(c->model, l);
    size_t kvd = (size_t)kv_dim(mc);
    float *tmp = c->k; /* scratch of at least kv_dim floats */
    kv_values_load(c->kv_type, src, tmp, kvd);
    if (c->k_rot) kv_hadamard(tmp, kvd, c->k_rot); /* rotated back (H·H = I), rotated by rope, forward again */
    rope_apply(tmp, mc->n_kv_heads, mc, cs, sn);
    if (c->k_rot) kv_hadamard(tmp, kvd, c->k_rot);
    kv_values_store(c->kv_type, tmp, dst, kvd);
}

int kv_cache_shift(struct wick_ctx *c, int32_t n_keep, int32_t n_discard, errmsg *err) {
    const model_config *mc = &c->model->config;
    if (n_keep < 0 || n_discard < 0 || n_keep + n_discard > c->n_past)
        return errorf(err, WICK_ERR_INVALID_ARG, "cannot drop %d positions after %d of %d", n_discard, n_keep, c->n_past);
    if (n_discard == 0) return 0;
    if (!kv_cache_can_shift(c, n_keep, n_discard))
        return errorf(err, WICK_ERR_INVALID_ARG, "cannot drop %d positions after %d: the sliding-window layers no longer hold the kept "
                      "positions their window would see (evaluate the kept tokens again)", n_discard, n_keep);
    int half = rope_half_max(mc);
    int moved = c->n_past - n_keep - n_discard, n_after = c->n_past - n_discard;
    /* a key at position p was rotated by p·θ_i; moved to p − n_discard it needs a further
     * rotation by −n_discard·θ_i (rotations compose additively), with each base's θ and no
     * magnitude factor (phi3's attn_factor is in the key already) */
    float *cs = c->rope_cos, *sn = c->rope_sin, *cs_swa = c->rope_cos + half, *sn_swa = c->rope_sin + half;
    /* M-RoPE: the kept positions after the gap move down by the rope positions the dropped ones
     * spanned (an image's are fewer than its count), each of a key's four alike */
    int32_t shift = n_discard;
    if (c->mrope_next) {
        shift = c->mrope_next[n_keep + n_discard - 1] - (n_keep ? c->mrope_next[n_keep - 1] : 0);
        for (int j = 0; j < moved; j++) c->mrope_next[n_keep + j] = c->mrope_next[n_keep + n_discard + j] - shift;
    }
    /* (M-RoPE: the first three of a key's positions move; the fourth is 0 for text and image
     * tokens alike, so the pairs it picks, Qwen3-VL's last interleaved ones, do not turn) */
    const int32_t mshift[4] = {-shift, -shift, -shift, 0};
    const int32_t *mpos = c->mrope_next ? mshift : NULL;
    rope_tables(c, false, mc->rope_base, mc->rope_scale, 1.0f, -shift, 1, mpos, cs, sn);
    rope_tables(c, true, mc->rope_base_swa, mc->rope_scale_swa, 1.0f, -shift, 1, mpos, cs_swa, sn_swa);
    uint8_t *ring_k = NULL, *ring_v = NULL;
    int ring_lo = c->ring ? ring_first_after_shift(c, n_keep, n_discard) : 0;
    if (c->ring) { /* rows of the widest layer */
        ring_k = malloc((size_t)c->ring * kv_type_bytes(c->kv_type, (size_t)kv_dim(mc)));
        ring_v = malloc((size_t)c->ring * kv_type_bytes(c->kv_type_v, (size_t)kv_dim(mc)));
        if (!ring_k || !ring_v) {
            free(ring_k);
            free(ring_v);
            return errorf(err, WICK_ERR_NOMEM, "out of memory shifting the context");
        }
    }
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &c->model->layers[l];
        const float *lcs = w->sliding ? cs_swa : cs, *lsn = w->sliding ? sn_swa : sn;
        /* a layer reading another's cache follows it (a recurrent one is never reached: such a cache is not shifted) */
        if (c->kv_slots[l] == 0) continue;
        size_t k_row = kv_row_bytes(c, c->k_cache, l), v_row = kv_row_bytes(c, c->v_cache, l);
        if (c->kv_slots[l] == c->n_ctx) { /* every position: move the rest down in place */
            for (int j = 0; j < moved; j++) {
                int from = n_keep + n_discard + j, to = n_keep + j;
                void *ks = kv_at(c, c->k_cache, l, from), *kd = kv_at(c, c->k_cache, l, to);
                if (w->rotate) rotate_cached_key(c, l, ks, kd, lcs, lsn);
                else memmove(kd, ks, k_row);
                memmove(kv_at(c, c->v_cache, l, to), kv_at(c, c->v_cache, l, from), v_row);
            }
            continue;
        }
        /* a ring: the positions it can still supply, from a copy into their new slots */
        uint8_t *kr = (uint8_t *)kv_at(c, c->k_cache, l, 0), *vr = (uint8_t *)kv_at(c, c->v_cache, l, 0);
        memcpy(ring_k, kr, (size_t)c->ring * k_row);
        memcpy(ring_v, vr, (size_t)c->ring * v_row);
        for (int q = ring_lo; q < n_after; q++) {
            int from = shifted_from(q, n_keep, n_discard);
            const uint8_t *ks = ring_k + (size_t)(from % c->ring) * k_row;
            uint8_t *kd = kr + (size_t)(q % c->ring) * k_row;
            if (w->rotate && from != q) rotate_cached_key(c, l, ks, kd, lcs, lsn);
            else memcpy(kd, ks, k_row);
            memcpy(vr + (size_t)(q % c->ring) * v_row, ring_v + (size_t)(from % c->ring) * v_row, v_row);
        }
    }
    free(ring_k);
    free(ring_v);
    c->n_past = n_after;
    if (c->ring) c->swa_lo = ring_lo;
    return 0;
}
