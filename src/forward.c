/* forward.c — the transformer forward pass (Llama / Qwen2) over a batch of tokens, with the
 * KV cache. For each layer, per token:
 *     xb  = rmsnorm(x) * attn_norm
 *     q, k, v = xb·Wqᵀ (+bq), xb·Wkᵀ (+bk), xb·Wvᵀ (+bv); rotate q and k by their position (RoPE)
 *     cache k, v;  att = softmax(q·Kᵀ / √head_dim) over positions ≤ own;  x += (att·V)·Woᵀ
 *     xb  = rmsnorm(x) * ffn_norm;  x += (silu(xb·W_gateᵀ) ⊙ xb·W_upᵀ)·W_downᵀ
 * then logits = rmsnorm(x) * output_norm · W_outᵀ.
 * A batch (prefill) runs every matrix product as matrix × matrix: each weight row is loaded
 * once and used for all tokens of a tile; a single token (decode) is matrix × vector. */
#include "errmsg.h"
#include "forward.h"
#include "quant.h"
#include "simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes per element, rounded up, of the largest activation block format (Q8_K: 292 bytes per 256). */
#define ACT_BYTES_PER_ELEM_NUM 292
#define ACT_BYTES_PER_ELEM_DEN 256

/* The attention kernels take head dimensions that are multiples of 8, up to this. */
#define MAX_HEAD_DIM 512

static int kv_dim(const model_config *c) { return c->n_kv_heads * c->head_dim; }

/* Attention takes up to this many query heads of one KV head in one pass over its cache. */
#define ATT_HEADS_MAX 8

static int att_heads_cap(const model_config *mc) {
    int group = mc->n_heads / mc->n_kv_heads;
    return group < ATT_HEADS_MAX ? group : ATT_HEADS_MAX;
}

/* a thread's attention scratch: score rows of up to 8 heads (one token, grouped-query) or of up to
 * 4 tokens (one head, prefill), then one cached row as floats */
#define ATT_SCORE_ROWS 8
/* per thread: ATT_SCORE_ROWS rows of scores, one cached row as floats, and the queries of an
 * item times 2^112 (F16_REBIAS) */
static size_t att_floats_per_thread(const struct wick_ctx *c) {
    return (size_t)ATT_SCORE_ROWS * (size_t)c->n_ctx + MAX_HEAD_DIM + (size_t)ATT_SCORE_ROWS * MAX_HEAD_DIM;
}

void wick_ctx_default_params(wick_ctx_params *p) {
    p->n_ctx = 0;
    p->n_batch = 0;
    p->n_threads = 0;
    p->kv_type = WICK_KV_F16;
}

static int recurrent_init(struct wick_ctx *c, char *err, size_t err_len);

int ctx_init_external(struct wick_ctx *c, const struct wick_model *m, int32_t n_ctx, char *err, size_t err_len) {
    memset(c, 0, sizeof *c);
    if (!m->has_weights) return errorf(err, err_len, "the model has no weights (vocab-only file)");
    const model_config *mc = &m->c;
    int32_t def_ctx = mc->n_ctx_train < 2048 ? 2048 : mc->n_ctx_train > 4096 ? 4096 : mc->n_ctx_train; /* as ctx_init */
    if (n_ctx < 0 || n_ctx > (1 << 22)) return errorf(err, err_len, "context size %d out of range (1 to %d)", n_ctx, 1 << 22);
    c->m = m;
    c->n_ctx = n_ctx > 0 ? n_ctx : def_ctx;
    c->n_batch = c->n_ctx;
    c->external = true;
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap_pos[i] = -1;
    return 0;
}

/* The largest recurrent state a context takes: 2^28 floats (1 GiB, 3 GiB with its two
 * snapshots; far above any real model's). Checked as the layers are summed, so that the sum
 * cannot wrap around wasm32's 32-bit size_t. */
#define MAX_STATE_FLOATS ((size_t)1 << 28)

int ctx_init(struct wick_ctx *c, const struct wick_model *m, const wick_ctx_params *p, char *err, size_t err_len) {
    memset(c, 0, sizeof *c);
    if (!m->has_weights) return errorf(err, err_len, "the model has no weights (vocab-only file)");
    const model_config *mc = &m->c;
    if (mc->head_dim % 8 || mc->head_dim > MAX_HEAD_DIM)
        return errorf(err, err_len, "head dimension %d is not supported (multiples of 8 up to %d are)", mc->head_dim, MAX_HEAD_DIM);
    c->m = m;
    /* default window: the training context, at least 2048 (tiny models list short ones but
     * extrapolate; llama.cpp runs them so) and at most 4096 (memory) */
    int32_t def_ctx = mc->n_ctx_train < 2048 ? 2048 : mc->n_ctx_train > 4096 ? 4096 : mc->n_ctx_train;
    c->n_ctx = p->n_ctx > 0 ? p->n_ctx : def_ctx;
    c->n_batch = p->n_batch > 0 ? p->n_batch : 256;
    if (c->n_batch > c->n_ctx) c->n_batch = c->n_ctx;
    int n_threads = p->n_threads > 0 ? p->n_threads : 1;
    if (p->n_ctx < 0 || c->n_ctx > (1 << 22)) return errorf(err, err_len, "context size %d out of range (1 to %d)", p->n_ctx, 1 << 22);
    if (p->n_batch < 0 || p->n_threads < 0 || n_threads > 256)
        return errorf(err, err_len, "batch size %d or thread count %d out of range", p->n_batch, p->n_threads);
    if (p->kv_type != WICK_KV_F16 && p->kv_type != WICK_KV_F32)
        return errorf(err, err_len, "KV cache type %d unknown (0 = f32, 1 = f16)", p->kv_type);
    c->kv_type = p->kv_type;
    c->kv_elem = p->kv_type == WICK_KV_F16 ? 2 : 4;
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
        return errorf(err, err_len, "out of memory");
    }
    uint64_t slots = 0;
    for (int l = 0; l < mc->n_layers; l++) {
        /* a recurrent layer keeps no keys and values */
        c->kv_slots[l] = m->layers[l].kind != LAYER_ATTENTION ? 0 : m->layers[l].sliding && c->ring ? c->ring : c->n_ctx;
        c->kv_off[l] = (size_t)(slots * (uint64_t)kv_dim(mc));
        slots += (uint64_t)c->kv_slots[l];
    }
    /* KV cache size checked in 64 bits before allocating: it is the one large allocation here */
    uint64_t kv_bytes = slots * (uint64_t)kv_dim(mc) * c->kv_elem;
    if (kv_bytes > (uint64_t)1 << 31 || kv_bytes > SIZE_MAX / 2) {
        ctx_release(c);
        return errorf(err, err_len, "a KV cache for %d tokens needs 2 x %llu MiB: too large for this build; ask for a smaller context",
                    p->n_ctx > 0 ? p->n_ctx : c->n_ctx, (unsigned long long)(kv_bytes >> 20));
    }
    c->kv_cache_bytes = (size_t)kv_bytes;
    c->k_cache = malloc(kv_bytes ? (size_t)kv_bytes : 1); /* 0 when every layer is recurrent */
    c->v_cache = malloc(kv_bytes ? (size_t)kv_bytes : 1);

    size_t B = (size_t)c->n_batch, dim = (size_t)mc->dim, hid = (size_t)mc->hidden_dim, kvd = (size_t)kv_dim(mc);
    size_t qd = (size_t)mc->q_dim, widest = hid > dim ? hid : dim;
    if (qd > widest) widest = qd;
    size_t vd = (size_t)mc->ssm_v_heads * (size_t)mc->ssm_state; /* DeltaNet's output, the input of ssm_out */
    if (vd > widest) widest = vd;
    c->x = malloc(B * dim * sizeof(float));
    c->xb = malloc(B * dim * sizeof(float));
    c->xb2 = malloc(B * qd * sizeof(float));
    c->q = malloc(B * qd * sizeof(float));
    c->k = malloc(B * kvd * sizeof(float));
    c->v = malloc(B * kvd * sizeof(float));
    c->hb = malloc(B * hid * sizeof(float));
    c->hb2 = malloc(B * hid * sizeof(float));
    size_t half = (size_t)(mc->rope_dim / 2 > 0 ? mc->rope_dim / 2 : 1);
    c->rope_cos = malloc(2 * B * half * sizeof(float));
    c->rope_sin = malloc(2 * B * half * sizeof(float));
    c->att = malloc((size_t)n_threads * att_floats_per_thread(c) * sizeof(float));
    if (recurrent_init(c, err, err_len)) {
        ctx_release(c);
        return -1;
    }
    c->qbuf_bytes = B * (widest * ACT_BYTES_PER_ELEM_NUM / ACT_BYTES_PER_ELEM_DEN + 64);
    for (int i = 0; i < ACT_SLOTS; i++) c->qbuf[i] = malloc(c->qbuf_bytes);
    if (!c->k_cache || !c->v_cache || !c->x || !c->xb || !c->xb2 || !c->q || !c->k || !c->v || !c->hb ||
        !c->hb2 || !c->rope_cos || !c->rope_sin || !c->att || !c->qbuf[0] || !c->qbuf[1] || !c->qbuf[2]) {
        ctx_release(c);
        return errorf(err, err_len, "out of memory allocating a context of %d tokens (KV cache 2 x %llu MiB)",
                    p->n_ctx > 0 ? p->n_ctx : 0, (unsigned long long)(kv_bytes >> 20));
    }
    c->pool = pool_new(n_threads);
    if (!c->pool) {
        ctx_release(c);
        return errorf(err, err_len, "cannot start %d threads (this build may be single-threaded)", n_threads);
    }
    return 0;
}

/* The recurrent state and its snapshots (sized here, once: constant in the number of tokens),
 * and the scratch of the recurrent layers and of an attention output gate. */
static int recurrent_init(struct wick_ctx *c, char *err, size_t err_len) {
    const struct wick_model *m = c->m;
    const model_config *mc = &m->c;
    size_t B = (size_t)c->n_batch, dim = (size_t)mc->dim, qd = (size_t)mc->q_dim;
    size_t proj_w = 0, mix_w = 0, mix2_w = 0;
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap_pos[i] = -1;
    if (mc->attn_out_gate) proj_w = 2 * qd, mix2_w = qd;
    if (mc->n_recurrent == 0 && !mc->attn_out_gate) return 0;
    c->rs_off = malloc((size_t)mc->n_layers * sizeof *c->rs_off);
    if (!c->rs_off) return errorf(err, err_len, "out of memory");
    for (int l = 0; l < mc->n_layers; l++) {
        layer_kind kind = m->layers[l].kind;
        c->rs_off[l] = c->rs_floats;
        c->rs_floats += model_layer_state_floats(m, l); /* each term < 2^29 (the model's bounds) */
        if (c->rs_floats > MAX_STATE_FLOATS)
            return errorf(err, err_len, "a recurrent state of more than %u MiB is too large", (unsigned)(MAX_STATE_FLOATS >> 18));
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
        }
    }
    size_t state_bytes = (c->rs_floats ? c->rs_floats : 1) * sizeof(float);
    c->rstate = calloc(1, state_bytes);
    for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap[i] = malloc(state_bytes);
    c->proj = malloc(B * (proj_w ? proj_w : 1) * sizeof(float));
    c->mix = malloc(B * (mix_w ? mix_w : 1) * sizeof(float));
    c->mix2 = malloc(B * (mix2_w ? mix2_w : 1) * sizeof(float));
    if (!c->rstate || !c->rs_snap[0] || !c->rs_snap[1] || !c->proj || !c->mix || !c->mix2)
        return errorf(err, err_len, "out of memory allocating the recurrent state (%zu bytes)", state_bytes);
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
    memcpy(c->rs_snap[slot], c->rstate, c->rs_floats * sizeof(float));
    c->rs_snap_pos[slot] = c->n_past;
    c->rs_snap_used[slot] = ++c->rs_clock;
}

void ctx_release(struct wick_ctx *c) {
    if (c->pool) pool_free(c->pool);
    void *bufs[] = {c->k_cache, c->v_cache, c->x, c->xb, c->xb2, c->q, c->k, c->v, c->hb, c->hb2,
                    c->rope_cos, c->rope_sin, c->att, c->qbuf[0], c->qbuf[1], c->qbuf[2], c->logits,
                    c->kv_slots, c->kv_off, c->rstate, c->rs_off, c->proj, c->mix, c->mix2,
                    c->rs_snap[0], c->rs_snap[1], c->ext_ops};
    _Static_assert(STATE_SNAPSHOTS == 2, "ctx_release frees each snapshot");
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    memset(c, 0, sizeof *c);
}

/* ---- activation rows in the weights' dot-product format ---- */

typedef struct {
    act_rows *a;
    int slot;
    const quant_type *qt;
} quantize_args;

static void quantize_task(void *arg, int ith, int nth) {
    quantize_args *qa = arg;
    act_rows *a = qa->a;
    long t0, t1;
    pool_split(a->n_tok, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++)
        qa->qt->from_float(a->x + (size_t)t * (size_t)a->cols,
                           (uint8_t *)a->q[qa->slot] + (size_t)t * a->q_row_bytes[qa->slot], a->cols);
}

static void act_init(act_rows *a, struct wick_ctx *c, const float *x, int n_tok, int cols) {
    memset(a, 0, sizeof *a);
    a->x = x;
    a->n_tok = n_tok;
    a->cols = cols;
    for (int i = 0; i < ACT_SLOTS; i++) a->q[i] = c->qbuf[i];
}

/* Returns the rows in format t, converting them the first time they are asked for. */
static const void *act_get(act_rows *a, struct wick_ctx *c, uint32_t t, size_t *row_bytes) {
    if (t == WICK_TYPE_F32) {
        *row_bytes = (size_t)a->cols * sizeof(float);
        return a->x;
    }
    int s = 0;
    for (; s < ACT_SLOTS && a->ready[s]; s++)
        if (a->q_type[s] == t) {
            *row_bytes = a->q_row_bytes[s];
            return a->q[s];
        }
    /* s is a free slot: there are as many slots as activation formats */
    const quant_type *qt = quant_get(t);
    a->q_type[s] = t;
    a->q_row_bytes[s] = quant_row_size(t, a->cols);
    quantize_args qa = {a, s, qt};
    if (a->n_tok > 1) pool_run(c->pool, quantize_task, &qa);
    else quantize_task(&qa, 0, 1);
    a->ready[s] = true;
    *row_bytes = a->q_row_bytes[s];
    return a->q[s];
}

/* ---- matrix products ---- */

/* Weight rows per cache tile: a tile's rows stay in L1 while every token of the batch passes;
 * within it the type's gemm kernel takes up to GEMM_MAX_ROWS rows × GEMM_MAX_TOKENS tokens at a
 * time, unpacking each weight block once for all tokens of its tile. */
#define ROW_TILE 16

typedef struct {
    const weight *w;
    const void *act;
    size_t act_row_bytes;
    int n_tok;
    float *out;        /* out[t * out_stride + r] */
    int out_stride;
    const float *bias; /* added per row, or NULL */
    const quant_type *qt;
} matmul_args;

/* Several products over the same input in one dispatch (Q, K and V; gate and up; DeltaNet's four): one wake-up
 * and one barrier instead of one per matrix. gated: the two products are gate and up, and each
 * thread finishes its own rows with out0 = act(out0) · out1 (SwiGLU, or GeGLU with GELU). */
#define MAX_GROUP 4
typedef struct {
    matmul_args m[MAX_GROUP];
    int n;
    bool gated;
    ffn_activation act;
} matmul_group_args;

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* tanh(x) = 1 − 2 / (e^(2x) + 1), through expf: the C libraries of the two builds (glibc, musl)
 * round expf alike but not tanhf, and native and wasm must give the same numbers */
static inline float tanh_exp(float x) { return 1.0f - 2.0f / (expf(2.0f * x) + 1.0f); }

/* GELU in its tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) */
static float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535588f;
    return 0.5f * x * (1.0f + tanh_exp(sqrt_2_over_pi * x * (1.0f + 0.044715f * x * x)));
}

/* Decode reads the weights once per token, so its speed is memory's: one core here streams
 * about twice as fast from four or eight places at once as from one (see BENCHMARKS.md), and
 * WebAssembly has no prefetch instruction. So a thread cuts its R rows into S runs of R / S
 * (S = 8 where the type has an eight-row kernel, else 4) and each kernel call takes its rows one
 * from each run, R / S rows apart (w_stride): S streams, every output still computed by the
 * same operations. Returns the first row left to the tiles (the last R mod S, or all of a short
 * range). */
static long matvec_rows_streams(const matmul_args *a, long r0, long r1) {
    const weight *w = a->w;
    int streams = a->qt->gemv8 ? 8 : 4;
    long q = (r1 - r0) / streams; /* the last (r1 - r0) % streams rows are left to the tiles */
    if (q < 4) return r0;
    const uint8_t *wdata = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
    size_t w_stride = (size_t)q * w->row_bytes;
    float *out = a->out + r0, tile[8];
    for (long i = 0; i < q; i++) {
        const uint8_t *wi = wdata + (size_t)i * w->row_bytes;
        if (a->qt->gemv8) a->qt->gemv8((int)w->cols, wi, w_stride, a->act, tile);
        else a->qt->gemm((int)w->cols, wi, w_stride, 4, a->act, a->act_row_bytes, 1, tile, 4);
        for (int k = 0; k < streams; k++) out[i + k * q] = tile[k];
    }
    return r0 + q * streams;
}

static void matmul_rows(const matmul_args *a, long r0, long r1) {
    const weight *w = a->w;
    const uint8_t *wdata = w->data, *act = a->act;
    int cols = (int)w->cols;
    size_t stride = (size_t)a->out_stride;
    long tiled_from = a->n_tok == 1 ? matvec_rows_streams(a, r0, r1) : r0;
    for (long rt = tiled_from; rt < r1; rt += ROW_TILE) {
        long rend = rt + ROW_TILE < r1 ? rt + ROW_TILE : r1;
        for (int t = 0; t < a->n_tok; t += GEMM_MAX_TOKENS) {
            int nt = a->n_tok - t < GEMM_MAX_TOKENS ? a->n_tok - t : GEMM_MAX_TOKENS;
            for (long r = rt; r < rend; r += GEMM_MAX_ROWS) {
                int nr = rend - r < GEMM_MAX_ROWS ? (int)(rend - r) : GEMM_MAX_ROWS;
                a->qt->gemm(cols, wdata + (size_t)r * w->row_bytes, w->row_bytes, nr, act + (size_t)t * a->act_row_bytes,
                            a->act_row_bytes, nt, a->out + (size_t)t * stride + (size_t)r, stride);
            }
        }
    }
    if (a->bias)
        for (int t = 0; t < a->n_tok; t++)
            for (long r = r0; r < r1; r++) a->out[(size_t)t * stride + (size_t)r] += a->bias[r];
}

/* the rows of an n-row matrix that thread ith of nth computes: whole groups of GEMM_MAX_ROWS
 * (a partial tile costs a full one) */
static void thread_rows(long rows, int ith, int nth, long *r0, long *r1) {
    long g0, g1, groups = (rows + GEMM_MAX_ROWS - 1) / GEMM_MAX_ROWS;
    pool_split(groups, ith, nth, &g0, &g1);
    *r0 = g0 * GEMM_MAX_ROWS;
    *r1 = g1 * GEMM_MAX_ROWS < rows ? g1 * GEMM_MAX_ROWS : rows;
}

static void matmul_group_task(void *arg, int ith, int nth) {
    const matmul_group_args *g = arg;
    long r0 = 0, r1 = 0;
    for (int i = 0; i < g->n; i++) {
        thread_rows(g->m[i].w->rows, ith, nth, &r0, &r1);
        matmul_rows(&g->m[i], r0, r1);
    }
    if (g->gated) /* gate and up have the same rows, so this thread owns rows [r0, r1) of both */
        for (int t = 0; t < g->m[0].n_tok; t++) {
            float *gate = g->m[0].out + (size_t)t * (size_t)g->m[0].out_stride;
            const float *up = g->m[1].out + (size_t)t * (size_t)g->m[1].out_stride;
            if (g->act == ACT_GELU_TANH)
                for (long r = r0; r < r1; r++) gate[r] = gelu_tanh(gate[r]) * up[r];
            else
                for (long r = r0; r < r1; r++) gate[r] = silu(gate[r]) * up[r];
        }
}

/* out_i[t][r] = Σ_c W_i[r][c] · x[t][c] (+ bias_i[r]) for every token t, for each of n products */
static void matmul_group(struct wick_ctx *c, act_rows *x, int n, const weight *const *ws, float *const *outs,
                         const int *strides, const float *const *biases, bool gated, ffn_activation act) {
    matmul_group_args g = {.n = n, .gated = gated, .act = act};
    for (int i = 0; i < n; i++) {
        const quant_type *qt = quant_get(ws[i]->type);
        g.m[i] = (matmul_args){ws[i], NULL, 0, x->n_tok, outs[i], strides[i], biases ? biases[i] : NULL, qt};
        g.m[i].act = act_get(x, c, qt->vec_dot_type, &g.m[i].act_row_bytes);
    }
    pool_run(c->pool, matmul_group_task, &g);
}

static void matmul(struct wick_ctx *c, const weight *w, act_rows *x, float *out, int out_stride, const float *bias) {
    matmul_group(c, x, 1, &w, &out, &out_stride, &bias, false, ACT_SILU);
}


/* ---- the recurrent layers (lfm2's short convolution, qwen35's gated DeltaNet) ----
 * Their matrix products run batched like attention's; the recurrence itself runs token by
 * token inside the layer (as llama.cpp's CPU path does), each channel or head by one thread in
 * a fixed order, so a batch gives the numbers of the same tokens fed one at a time. */

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* log(1 + e^x), as ggml's softplus (x itself above 20); the logarithm in double, rounded once,
 * so that the C libraries of the two builds agree */
static float softplus(float x) { return x > 20.0f ? x : (float)log(1.0 + (double)expf(x)); }

typedef struct {
    struct wick_ctx *c;
    const layer_weights *w;
    float *state;      /* [conv_kernel − 1][channels]: the previous inputs, oldest first */
    int channels, n_tok;
    bool shortconv;    /* lfm2: input B ⊙ x, output C ⊙ conv; else (DeltaNet) input qkv, output silu(conv) */
} conv_args;

/* The causal depthwise convolution, channel by channel over the batch's tokens:
 * out_t = Σ_k conv_w[k] · in_(t − (K−1) + k), the state supplying the inputs before the batch. */
static void conv_task(void *arg, int ith, int nth) {
    conv_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->m->c;
    int K = mc->conv_kernel, n = a->channels, dim = mc->dim;
    size_t in_stride = a->shortconv ? (size_t)3 * dim : (size_t)n + (size_t)mc->ssm_v_heads * (mc->ssm_state + 2);
    long c0, c1;
    pool_split(n, ith, nth, &c0, &c1);
    for (long ch = c0; ch < c1; ch++) {
        const float *wk = a->w->conv_w + (size_t)ch * K;
        float *st = a->state + ch; /* st[k * n]: tap k's input */
        for (int t = 0; t < a->n_tok; t++) {
            const float *in = c->proj + (size_t)t * in_stride;
            /* lfm2's in_proj rows are B | C | x */
            float x = a->shortconv ? in[ch] * in[2 * dim + ch] : in[ch];
            float sum = 0;
            for (int k = 0; k < K - 1; k++) sum += wk[k] * st[(size_t)k * n];
            sum += wk[K - 1] * x;
            for (int k = 0; k < K - 2; k++) st[(size_t)k * n] = st[(size_t)(k + 1) * n];
            st[(size_t)(K - 2) * n] = x;
            c->mix[(size_t)t * n + ch] = a->shortconv ? in[dim + ch] * sum : silu(sum);
        }
    }
}

/* lfm2: y = C ⊙ conv(B ⊙ x) with B, C, x = in_proj(xb), then out_proj; into c->xb */
static void shortconv_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->m->c;
    int dim = mc->dim;
    matmul(c, &w->sc_in, in, c->proj, 3 * dim, NULL);
    conv_args ca = {c, w, c->rstate + c->rs_off[l], dim, n_tok, true};
    pool_run(c->pool, conv_task, &ca);
    act_rows y;
    act_init(&y, c, c->mix, n_tok, dim);
    matmul(c, &w->sc_out, &y, c->xb, dim, NULL);
}

typedef struct {
    struct wick_ctx *c;
    float *S;          /* [v_heads][S][S]: head h's state, row j = column j of the delta rule's S */
    int n_tok;
} deltanet_args;

/* The delta rule, one value head at a time over the batch's tokens (head h reads key head
 * h mod k_heads). With the state as rows j (the value dimension) of S entries:
 *     S ← e^g · S;  δ_j = β (v_j − Σ_i S_ji k_i);  S_ji += δ_j k_i;  o_j = Σ_i S_ji q_i / √S */
static void deltanet_task(void *arg, int ith, int nth) {
    deltanet_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->m->c;
    int Sd = mc->ssm_state, nk = mc->ssm_k_heads, nv = mc->ssm_v_heads;
    int ch = model_conv_channels(mc, LAYER_DELTANET), vd = nv * Sd;
    size_t P = (size_t)ch + (size_t)vd + 2 * (size_t)nv;
    float scale = 1.0f / sqrtf((float)Sd);
    long h0, h1;
    pool_split(nv, ith, nth, &h0, &h1);
    for (long h = h0; h < h1; h++) {
        float *Sh = a->S + (size_t)h * Sd * Sd;
        int kh = (int)(h % nk);
        for (int t = 0; t < a->n_tok; t++) {
            const float *mixed = c->mix + (size_t)t * ch;
            const float *q = mixed + (size_t)kh * Sd, *k = mixed + (size_t)(nk + kh) * Sd, *v = mixed + (size_t)(2 * nk) * Sd + (size_t)h * Sd;
            const float *gates = c->proj + (size_t)t * P + ch + vd;
            float decay = gates[h], beta = gates[nv + h];
            float *o = c->mix2 + (size_t)t * vd + (size_t)h * Sd;
            for (int j = 0; j < Sd; j++) {
                float *row = Sh + (size_t)j * Sd, kv = 0;
                for (int i = 0; i < Sd; i++) {
                    row[i] *= decay;
                    kv += row[i] * k[i];
                }
                float d = beta * (v[j] - kv), oj = 0;
                for (int i = 0; i < Sd; i++) {
                    row[i] += d * k[i];
                    oj += row[i] * q[i];
                }
                o[j] = oj * scale;
            }
        }
    }
}

/* x / max(‖x‖, eps) over n values, in place */
static void l2norm(float *x, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float norm = (float)sqrt(ss), inv = 1.0f / (norm > eps ? norm : eps);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* qwen35's gated DeltaNet: q | k | v = attn_qkv(xb) through the causal convolution and SiLU,
 * q and k L2-normed per head, the delta rule with decay e^g, g = softplus(α + dt)·a, and
 * β = sigmoid(beta(xb)); each head's output RMS-normed (ssm_norm) times silu(z), z = attn_gate(xb);
 * then ssm_out. Into c->xb. */
static void deltanet_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->m->c;
    int Sd = mc->ssm_state, nk = mc->ssm_k_heads, nv = mc->ssm_v_heads, vd = nv * Sd;
    int ch = model_conv_channels(mc, LAYER_DELTANET), P = ch + vd + 2 * nv;
    {
        const weight *ws[] = {&w->dn_qkv, &w->dn_gate, &w->dn_alpha, &w->dn_beta};
        float *outs[] = {c->proj, c->proj + ch, c->proj + ch + vd, c->proj + ch + vd + nv};
        const int strides[] = {P, P, P, P};
        matmul_group(c, in, 4, ws, outs, strides, NULL, false, ACT_SILU);
    }
    float *state = c->rstate + c->rs_off[l];
    conv_args ca = {c, w, state, ch, n_tok, false};
    pool_run(c->pool, conv_task, &ca);
    for (int t = 0; t < n_tok; t++) {
        float *mixed = c->mix + (size_t)t * ch, *gates = c->proj + (size_t)t * P + ch + vd;
        for (int h = 0; h < 2 * nk; h++) l2norm(mixed + (size_t)h * Sd, Sd, mc->rms_eps); /* q heads, then k heads */
        for (int h = 0; h < nv; h++) {
            gates[h] = expf(softplus(gates[h] + w->dn_dt[h]) * w->dn_a[h]); /* the decay e^g */
            gates[nv + h] = sigmoid(gates[nv + h]);                         /* β */
        }
    }
    deltanet_args da = {c, state + (size_t)(mc->conv_kernel - 1) * ch, n_tok};
    pool_run(c->pool, deltanet_task, &da);
    for (int t = 0; t < n_tok; t++) {
        const float *z = c->proj + (size_t)t * P + ch;
        float *o = c->mix2 + (size_t)t * vd;
        for (int h = 0; h < nv; h++) rmsnorm(o + (size_t)h * Sd, o + (size_t)h * Sd, w->dn_norm, Sd, mc->rms_eps);
        for (int i = 0; i < vd; i++) o[i] *= silu(z[i]);
    }
    act_rows y;
    act_init(&y, c, c->mix2, n_tok, vd);
    matmul(c, &w->dn_out, &y, c->xb, mc->dim, NULL);
}

/* ---- elementwise pieces ---- */

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* cos/sin of every rotated pair for n positions from pos0, rope base `base`: as llama.cpp's rope
 * forms them (ggml_rope_cache_init), θ_i = pos · base^(−2i/rope_dim) by repeated multiplication,
 * divided by the pair's frequency factor (Llama 3's rope_freqs, phi3's short or long set), times
 * the linear position scale `scale`; cos and sin are then multiplied by mscale (phi3's attn_factor). */
static void rope_tables(const struct wick_ctx *c, float base, float scale, float mscale, int pos0, int n, float *cs, float *sn) {
    const model_config *mc = &c->m->c;
    int half = mc->rope_dim / 2;
    float theta_scale = powf(base, -2.0f / (float)mc->rope_dim);
    for (int t = 0; t < n; t++) {
        float theta = (float)(pos0 + t);
        for (int i = 0; i < half; i++) {
            float ff = c->rope_factors ? c->rope_factors[i] : 1.0f;
            float angle = scale * (theta / ff);
            /* in double, rounded once: the float cosf/sinf of glibc and musl differ in the last bit */
            cs[t * half + i] = (float)cos((double)angle) * mscale;
            sn[t * half + i] = (float)sin((double)angle) * mscale;
            theta *= theta_scale;
        }
    }
}

/* Whether the sliding layers rotate by angles of their own (another base or scale, gemma3) */
static bool rope_swa_own(const model_config *mc) {
    return mc->n_swa > 0 && (mc->rope_base_swa != mc->rope_base || mc->rope_scale_swa != mc->rope_scale);
}

/* The tables of a batch: [0] for the full layers, [1] for sliding ones with angles of their own. */
static float *rope_cos_of(const struct wick_ctx *c, bool sliding) {
    return c->rope_cos + (sliding && rope_swa_own(&c->m->c) ? (size_t)c->n_batch * (size_t)(c->m->c.rope_dim / 2) : 0);
}
static float *rope_sin_of(const struct wick_ctx *c, bool sliding) {
    return c->rope_sin + (sliding && rope_swa_own(&c->m->c) ? (size_t)c->n_batch * (size_t)(c->m->c.rope_dim / 2) : 0);
}

/* Rotates the first rope_dim dimensions of each head of vec (n_heads heads) by the angles of cs/sn. */
static void rope_apply(float *vec, int n_heads, const model_config *mc, const float *cs, const float *sn) {
    int half = mc->rope_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = vec + (size_t)h * mc->head_dim;
        for (int i = 0; i < half; i++) {
            int i0 = mc->rope_neox ? i : 2 * i, i1 = mc->rope_neox ? i + half : 2 * i + 1;
            float a = v[i0], b = v[i1];
            v[i0] = a * cs[i] - b * sn[i];
            v[i1] = a * sn[i] + b * cs[i];
        }
    }
}

static inline float kv_load(const struct wick_ctx *c, const void *base, size_t i) {
    return c->kv_type == WICK_KV_F16 ? quant_f16_to_f32(((const uint16_t *)base)[i]) : ((const float *)base)[i];
}

static inline void kv_store(const struct wick_ctx *c, void *base, size_t i, float v) {
    if (c->kv_type == WICK_KV_F16) ((uint16_t *)base)[i] = quant_f32_to_f16(v);
    else ((float *)base)[i] = v;
}

/* the slot of position pos in layer l's cache (a sliding layer's ring wraps around) */
static int kv_slot(const struct wick_ctx *c, int l, int pos) {
    return pos < c->kv_slots[l] ? pos : pos % c->kv_slots[l];
}

/* layer l, position pos in a cache */
static void *kv_at(const struct wick_ctx *c, void *cache, int l, int pos) {
    return (uint8_t *)cache + (c->kv_off[l] + (size_t)kv_slot(c, l, pos) * (size_t)kv_dim(&c->m->c)) * c->kv_elem;
}

/* the first position a query at pos sees in layer l */
static int att_first(const struct wick_ctx *c, int l, int pos) {
    int w = c->m->c.n_swa;
    return c->m->layers[l].sliding && pos >= w ? pos - w + 1 : 0;
}

/* an attention score: q·k times the scale, soft-capped where the family caps (gemma2) */
static inline float att_score(const model_config *mc, float dot) {
    float s = dot * mc->attn_scale;
    return mc->attn_softcap > 0 ? tanh_exp(s * (1.0f / mc->attn_softcap)) * mc->attn_softcap : s;
}

/* ---- attention ---- */

/* sc[lo..hi] = softmax of the scores there (max: their largest): e^(s − max) four at a time
 * (exp_f32x4, the sampler's: the same operations in every build and lane, so a value does not
 * depend on the lanes around it; libm's expf, one call per score, was a few percent of a long
 * context's decode), the sum in order, then each divided through */
static void softmax_scores(float *sc, int lo, int hi, float max) {
    v128_t m = wasm_f32x4_splat(max);
    int j = lo;
    for (; j + 3 <= hi; j += 4) wasm_v128_store(sc + j, exp_f32x4(wasm_f32x4_sub(wasm_v128_load(sc + j), m)));
    if (j <= hi) { /* the last one to three, through the same lanes */
        float tail[4] = {max, max, max, max};
        memcpy(tail, sc + j, (size_t)(hi - j + 1) * sizeof(float));
        wasm_v128_store(tail, exp_f32x4(wasm_f32x4_sub(wasm_v128_load(tail), m)));
        memcpy(sc + j, tail, (size_t)(hi - j + 1) * sizeof(float));
    }
    float sum = 0;
    for (j = lo; j <= hi; j++) sum += sc[j];
    float inv_sum = 1.0f / sum;
    for (j = lo; j <= hi; j++) sc[j] *= inv_sum;
}

/* Four F16 values in the high halves of 32-bit lanes → four F32: an arithmetic shift by 3 puts
 * the half's exponent and mantissa in a float's fields (the sign bit copied into the three bits
 * above them, masked off), read as a float that is 2^-112 times the value (the difference of
 * the exponent biases, 127 − 15), for normal and subnormal halves alike; one multiply by 2^112
 * rebiases exactly. Four operations per four values: attention converts every cached key and
 * value it reads. The one inexact case: an Inf or NaN half (only from a value beyond ±65504
 * stored in the cache) reads back as a finite ±65536…131008. */
#define F16_REBIAS 0x1p112f
/* (folded: without the multiply, the value times 2^-112; see fold_query) */
static inline __attribute__((always_inline)) v128_t f16_high_to_f32(v128_t x /* half bits << 16 */, const int folded) {
    v128_t f = wasm_v128_and(wasm_i32x4_shr(x, 3), wasm_i32x4_splat((int32_t)0x8fffffffu));
    return folded ? f : wasm_f32x4_mul(f, wasm_f32x4_splat(F16_REBIAS));
}

/* eight halves at h → their floats, the first four in *lo, the last four in *hi */
static inline __attribute__((always_inline)) void f16x8_to_f32(const uint16_t *h, v128_t *lo, v128_t *hi, const int folded) {
    const v128_t zero = wasm_i32x4_splat(0), x = wasm_v128_load(h);
    *lo = f16_high_to_f32(wasm_i16x8_shuffle(zero, x, 0, 8, 1, 9, 2, 10, 3, 11), folded);
    *hi = f16_high_to_f32(wasm_i16x8_shuffle(zero, x, 4, 12, 5, 13, 6, 14, 7, 15), folded);
}

/* Attention over the F16 cache moves the rebias (× 2^112) out of the conversion of every cached
 * key and value into the query and the probabilities: (k·2^-112)(q·2^112) and (p·2^112)(v·2^-112)
 * are the same real products as k·q and p·v, so they round to the same floats and every sum is
 * the one the unfolded conversion gives, bit for bit, with a multiply per four cached values
 * fewer. q·2^112 must stay finite: fold_query writes n query values times 2^112 to out and says
 * yes only when each has a magnitude below 2^15 (else the conversion rebiases as before). */
static __attribute__((noinline)) int fold_query(const float *q, float *out, int n) {
#ifdef WICK_NO_FOLD /* build/native/wick-nofold: every query takes the unfolded path (tests) */
    (void)q, (void)out, (void)n;
    return 0;
#endif
    for (int i = 0; i < n; i++)
        if (!(fabsf(q[i]) < 0x1p15f)) return 0;
    for (int i = 0; i < n; i++) out[i] = q[i] * F16_REBIAS;
    return 1;
}

/* sc[lo..hi] (probabilities, at most 1) times 2^112: exact */
static __attribute__((noinline)) void rebias_probs(float *sc, int lo, int hi) {
    for (int j = lo; j <= hi; j++) sc[j] *= F16_REBIAS;
}

/* n (a multiple of 8) cached values → floats (times 2^-112 where folded: F16 only) */
static void kv_row_to_f32(const struct wick_ctx *c, const void *src, float *dst, int n, int folded) {
    if (c->kv_type == WICK_KV_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *h = src;
    for (int i = 0; i < n; i += 8) {
        v128_t lo, hi;
        if (folded) f16x8_to_f32(h + i, &lo, &hi, 1);
        else f16x8_to_f32(h + i, &lo, &hi, 0);
        wasm_v128_store(dst + i, lo);
        wasm_v128_store(dst + i + 4, hi);
    }
}

/* Σ a_i·b_i over n (a multiple of 8) floats, in a fixed order: two 4-lane accumulators, then the lanes */
static float dot_f32(const float *a, const float *b, int n) {
    v128_t s0 = wasm_f32x4_splat(0), s1 = wasm_f32x4_splat(0);
    for (int i = 0; i < n; i += 8) {
        s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(a + i), wasm_v128_load(b + i)));
        s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(wasm_v128_load(a + i + 4), wasm_v128_load(b + i + 4)));
    }
    s0 = wasm_f32x4_add(s0, s1);
    return (wasm_f32x4_extract_lane(s0, 0) + wasm_f32x4_extract_lane(s0, 1)) +
           (wasm_f32x4_extract_lane(s0, 2) + wasm_f32x4_extract_lane(s0, 3));
}

/* out += w · v over n (a multiple of 4) floats */
static void axpy_f32(float *out, float w, const float *v, int n) {
    v128_t ww = wasm_f32x4_splat(w);
    for (int i = 0; i < n; i += 4)
        wasm_v128_store(out + i, wasm_f32x4_add(wasm_v128_load(out + i), wasm_f32x4_mul(ww, wasm_v128_load(v + i))));
}

/* One query head h of the F16 cache for the run of nt (≤ T) consecutive tokens from t0, their
 * queries q[] folded (fold_query): each cached key and value converted once for the run, as it
 * is used, the probabilities rebiased. Token t sees positions up to
 * its own; the later positions of the run get probability 0 and add nothing, so every token's
 * result is the same whatever run it is in (tests/consistency.test.mjs). T = 1 is decode, T =
 * ATT_TOKENS prefill; a short run repeats its first token and drops the copies. */
#define ATT_TOKENS 4

static inline __attribute__((always_inline)) void attend_f16_body(struct wick_ctx *c, int layer, int h, int t0, int nt,
                                                                 int pos0, float *scores, const float *const q[],
                                                                 const int T) {
    const model_config *mc = &c->m->c;
    int hd = mc->head_dim, kvh = h / (mc->n_heads / mc->n_kv_heads), last = pos0 + t0 + nt - 1;
    size_t stride = (size_t)kv_dim(mc), n_ctx = (size_t)c->n_ctx;
    int pos[ATT_TOKENS], lo[ATT_TOKENS];
    float max[ATT_TOKENS];
    for (int t = 0; t < T; t++) {
        int tt = t < nt ? t0 + t : t0;
        pos[t] = pos0 + tt;
        lo[t] = att_first(c, layer, pos[t]);
        max[t] = -INFINITY;
    }
    /* positions first … last, from their slots: a sliding layer's ring wraps back to slot 0 */
    int first = lo[0], n_slots = c->kv_slots[layer], slot0 = kv_slot(c, layer, first);
    const uint16_t *kbase = (const uint16_t *)kv_at(c, c->k_cache, layer, 0) + (size_t)kvh * hd;
    const uint16_t *kj = kbase + (size_t)slot0 * stride;
    for (int j = first, slot = slot0; j <= last; j++) {
        v128_t s0[ATT_TOKENS], s1[ATT_TOKENS];
        for (int t = 0; t < T; t++) s0[t] = s1[t] = wasm_f32x4_splat(0);
        for (int i = 0; i < hd; i += 8) {
            v128_t lo8, hi8;
            f16x8_to_f32(kj + i, &lo8, &hi8, 1);
            for (int t = 0; t < T; t++) {
                s0[t] = wasm_f32x4_add(s0[t], wasm_f32x4_mul(lo8, wasm_v128_load(q[t] + i)));
                s1[t] = wasm_f32x4_add(s1[t], wasm_f32x4_mul(hi8, wasm_v128_load(q[t] + i + 4)));
            }
        }
        for (int t = 0; t < nt; t++) {
            if (j > pos[t] || j < lo[t]) continue;
            v128_t v = wasm_f32x4_add(s0[t], s1[t]);
            float sc = att_score(mc, (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
                                         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3)));
            scores[(size_t)t * n_ctx + j] = sc;
            if (sc > max[t]) max[t] = sc;
        }
        if (++slot == n_slots) slot = 0, kj = kbase;
        else kj += stride;
    }
    for (int t = 0; t < T; t++) {
        float *sc = scores + (size_t)t * n_ctx;
        if (t >= nt) { /* the repeated first token: probabilities 0, its output dropped */
            memset(sc + first, 0, (size_t)(last + 1 - first) * sizeof(float));
            continue;
        }
        softmax_scores(sc, lo[t], pos[t], max[t]);
        rebias_probs(sc, lo[t], pos[t]);
        for (int j = first; j < lo[t]; j++) sc[j] = 0;
        for (int j = pos[t] + 1; j <= last; j++) sc[j] = 0;
    }
    const uint16_t *vbase = (const uint16_t *)kv_at(c, c->v_cache, layer, 0) + (size_t)kvh * hd;
    for (int i = 0; i < hd; i += 8) {
        v128_t a0[ATT_TOKENS], a1[ATT_TOKENS];
        for (int t = 0; t < T; t++) a0[t] = a1[t] = wasm_f32x4_splat(0);
        const uint16_t *vj = vbase + (size_t)slot0 * stride + i;
        for (int j = first, slot = slot0; j <= last; j++) {
            v128_t lo8, hi8;
            f16x8_to_f32(vj, &lo8, &hi8, 1);
            for (int t = 0; t < T; t++) {
                v128_t pj = wasm_f32x4_splat(scores[(size_t)t * n_ctx + j]);
                a0[t] = wasm_f32x4_add(a0[t], wasm_f32x4_mul(pj, lo8));
                a1[t] = wasm_f32x4_add(a1[t], wasm_f32x4_mul(pj, hi8));
            }
            if (++slot == n_slots) slot = 0, vj = vbase + i;
            else vj += stride;
        }
        for (int t = 0; t < nt; t++) {
            float *out = c->xb2 + (size_t)(t0 + t) * mc->q_dim + (size_t)h * hd;
            wasm_v128_store(out + i, a0[t]);
            wasm_v128_store(out + i + 4, a1[t]);
        }
    }
}

/* scores: T rows of n_ctx, then the thread's scratch (att_floats_per_thread). Returns 0, having
 * done nothing, when a query cannot be folded (fold_query): attend_heads then takes the tokens
 * one at a time, with the same results. */
static inline __attribute__((always_inline)) int attend_f16_run(struct wick_ctx *c, int layer, int h, int t0, int nt,
                                                               int pos0, float *scores, const int T) {
    const model_config *mc = &c->m->c;
    int hd = mc->head_dim;
    float *qf = scores + (size_t)ATT_SCORE_ROWS * c->n_ctx + MAX_HEAD_DIM;
    const float *q[ATT_TOKENS];
    for (int t = 0; t < T; t++) {
        q[t] = qf + (size_t)t * hd;
        if (!fold_query(c->q + (size_t)(t < nt ? t0 + t : t0) * mc->q_dim + (size_t)h * hd, qf + (size_t)t * hd, hd))
            return 0;
    }
    attend_f16_body(c, layer, h, t0, nt, pos0, scores, q, T);
    return 1;
}

/* Token t's query heads h0 … h0 + heads − 1, all of KV head kvh: each cached key and value
 * converted to floats once for all of them (grouped-query models share a KV head between up to
 * ATT_HEADS_MAX heads at once). For each head: scores against every cached position up to the
 * token's own, softmax, and the weighted sum of cached values into xb2. */
static void attend_heads(struct wick_ctx *c, int layer, int pos0, int t, int kvh, int h0, int heads, float *scores) {
    const model_config *mc = &c->m->c;
    int hd = mc->head_dim, pos = pos0 + t;
    float *row = scores + (size_t)ATT_SCORE_ROWS * c->n_ctx; /* one cached key or value as floats */
    int lo = att_first(c, layer, pos);
    const float *q = c->q + (size_t)t * mc->q_dim + (size_t)h0 * hd;
    float *out = c->xb2 + (size_t)t * mc->q_dim + (size_t)h0 * hd;
    size_t head_off = (size_t)kvh * hd * c->kv_elem;
    /* the heads' queries are consecutive: folded all at once (F16 cache) */
    int folded = c->kv_type == WICK_KV_F16 && fold_query(q, row + MAX_HEAD_DIM, heads * hd);
    if (folded) q = row + MAX_HEAD_DIM;
    float max[ATT_HEADS_MAX];
    for (int g = 0; g < heads; g++) max[g] = -INFINITY;
    for (int j = lo; j <= pos; j++) {
        kv_row_to_f32(c, (const uint8_t *)kv_at(c, c->k_cache, layer, j) + head_off, row, hd, folded);
        for (int g = 0; g < heads; g++) {
            float s = att_score(mc, dot_f32(q + (size_t)g * hd, row, hd));
            scores[(size_t)g * c->n_ctx + j] = s;
            if (s > max[g]) max[g] = s;
        }
    }
    for (int g = 0; g < heads; g++) {
        softmax_scores(scores + (size_t)g * c->n_ctx, lo, pos, max[g]);
        if (folded) rebias_probs(scores + (size_t)g * c->n_ctx, lo, pos);
    }
    memset(out, 0, (size_t)heads * hd * sizeof(float));
    for (int j = lo; j <= pos; j++) {
        kv_row_to_f32(c, (const uint8_t *)kv_at(c, c->v_cache, layer, j) + head_off, row, hd, folded);
        for (int g = 0; g < heads; g++)
            axpy_f32(out + (size_t)g * hd, scores[(size_t)g * c->n_ctx + j], row, hd);
    }
}

/* Prefill with one query head per item: runs of ATT_TOKENS tokens of a head */
typedef struct {
    struct wick_ctx *c;
    int layer, pos0, n_tok;
} attn_runs_args;

static void attention_runs_task(void *arg, int ith, int nth) {
    attn_runs_args *a = arg;
    struct wick_ctx *c = a->c;
    int n_heads = c->m->c.n_heads, n_runs = (a->n_tok + ATT_TOKENS - 1) / ATT_TOKENS;
    float *scores = c->att + (size_t)ith * att_floats_per_thread(c);
    /* items interleaved between the threads: a later token attends to more positions, so
     * halves of the batch would give the last thread most of the work (causal attention) */
    for (long item = ith; item < (long)n_runs * n_heads; item += nth) {
        int t0 = (int)(item / n_heads) * ATT_TOKENS, nt = a->n_tok - t0 < ATT_TOKENS ? a->n_tok - t0 : ATT_TOKENS;
        int h = (int)(item % n_heads);
        if (!attend_f16_run(c, a->layer, h, t0, nt, a->pos0, scores, ATT_TOKENS))
            for (int t = t0; t < t0 + nt; t++)
                attend_heads(c, a->layer, a->pos0, t, h / (c->m->c.n_heads / c->m->c.n_kv_heads), h, 1, scores);
    }
}

typedef struct {
    struct wick_ctx *c;
    int layer, pos0, n_tok;
    int heads; /* query heads per work item, all of one KV head: a divisor of the group, ≤ ATT_HEADS_MAX */
} attn_args;

/* Work items are (token, KV head, run of `heads` query heads of its group), attend_heads each */
static void attention_task(void *arg, int ith, int nth) {
    attn_args *a = arg;
    struct wick_ctx *c = a->c;
    const model_config *mc = &c->m->c;
    int group = mc->n_heads / mc->n_kv_heads, heads = a->heads, runs = group / heads;
    float *scores = c->att + (size_t)ith * att_floats_per_thread(c); /* scores[g * n_ctx + j] */
    /* interleaved, as in attention_runs_task */
    for (long item = ith; item < (long)a->n_tok * mc->n_kv_heads * runs; item += nth) {
        int t = (int)(item / ((long)mc->n_kv_heads * runs)), rest = (int)(item % ((long)mc->n_kv_heads * runs));
        int kvh = rest / runs, h0 = kvh * group + (rest % runs) * heads;
        /* one head: nothing to share, each value converted as used */
        if (heads == 1 && c->kv_type == WICK_KV_F16 && attend_f16_run(c, a->layer, h0, t, 1, a->pos0, scores, 1))
            continue;
        attend_heads(c, a->layer, a->pos0, t, kvh, h0, heads, scores);
    }
}

/* query heads per attention work item: the largest divisor of the group up to ATT_HEADS_MAX
 * that still leaves two items per thread */
static int attention_heads_per_item(const struct wick_ctx *c, int n_tok) {
    const model_config *mc = &c->m->c;
    int group = mc->n_heads / mc->n_kv_heads, best = 1;
    for (int h = 1; h <= att_heads_cap(mc); h++)
        if (group % h == 0 && (long)n_tok * mc->n_heads / h >= 2L * pool_size(c->pool)) best = h;
    return best;
}

/* ---- the forward pass ---- */

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

static void scale_rows(float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* n_tok rows of width n (stride n): each RMS-normed with weights w, in place or into out */
static void rmsnorm_rows(float *out, const float *x, const float *w, int n_tok, int n, float eps) {
    for (int t = 0; t < n_tok; t++) rmsnorm(out + (size_t)t * n, x + (size_t)t * n, w, n, eps);
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
 * width), then rotated by their positions unless the layer does not rotate (smollm3) */
static void qk_prepare(struct wick_ctx *c, const layer_weights *w, int n_tok) {
    const model_config *mc = &c->m->c;
    int hd = mc->head_dim, kvd = kv_dim(mc), half = mc->rope_dim / 2;
    const float *cs = rope_cos_of(c, w->sliding), *sn = rope_sin_of(c, w->sliding);
    for (int t = 0; t < n_tok; t++) {
        float *q = c->q + (size_t)t * mc->q_dim, *k = c->k + (size_t)t * kvd;
        if (mc->qk_norm == QK_NORM_PER_HEAD) {
            rmsnorm_rows(q, q, w->attn_q_norm, mc->n_heads, hd, mc->rms_eps);
            rmsnorm_rows(k, k, w->attn_k_norm, mc->n_kv_heads, hd, mc->rms_eps);
        } else if (mc->qk_norm == QK_NORM_FULL) {
            rmsnorm(q, q, w->attn_q_norm, mc->q_dim, mc->rms_eps);
            rmsnorm(k, k, w->attn_k_norm, kvd, mc->rms_eps);
        }
        if (!w->rotate) continue;
        rope_apply(q, mc->n_heads, mc, cs + (size_t)t * half, sn + (size_t)t * half);
        rope_apply(k, mc->n_kv_heads, mc, cs + (size_t)t * half, sn + (size_t)t * half);
    }
}

/* Attention with the KV cache: q, k, v projected (qwen35: each head's query then its output
 * gate in attn_q), normed and rotated, cached; softmax(q·Kᵀ)·V per head; out projection into c->xb. */
static void attention_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok, int pos0) {
    const model_config *mc = &c->m->c;
    int dim = mc->dim, kvd = kv_dim(mc), qd = mc->q_dim;
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
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {qd, kvd, kvd};
        const float *biases[] = {w->bq, w->bk, w->bv};
        matmul_group(c, in, 3, ws, outs, strides, biases, false, ACT_SILU);
    }
    qk_prepare(c, w, n_tok);
    for (int t = 0; t < n_tok; t++) {
        const float *k = c->k + (size_t)t * kvd, *v = c->v + (size_t)t * kvd;
        void *kc = kv_at(c, c->k_cache, l, pos0 + t), *vc = kv_at(c, c->v_cache, l, pos0 + t);
        for (int i = 0; i < kvd; i++) {
            kv_store(c, kc, (size_t)i, k[i]);
            kv_store(c, vc, (size_t)i, v[i]);
        }
    }
    attn_args aa = {c, l, pos0, n_tok, attention_heads_per_item(c, n_tok)};
    if (n_tok > 1 && aa.heads == 1 && c->kv_type == WICK_KV_F16) {
        attn_runs_args ra = {c, l, pos0, n_tok};
        pool_run(c->pool, attention_runs_task, &ra);
    } else {
        pool_run(c->pool, attention_task, &aa);
    }
    if (mc->attn_out_gate)
        for (size_t i = 0; i < (size_t)n_tok * qd; i++) c->xb2[i] *= sigmoid(c->mix2[i]);
    act_init(in, c, c->xb2, n_tok, qd);
    matmul(c, &w->wo, in, c->xb, dim, NULL);
}

/* Runs n_tok (≤ n_batch) tokens at positions n_past…; writes logits for the rows asked
 * (none when logits_out is NULL). One layer loop for every family: the switches of
 * model_config and layer_weights say which steps a layer takes. */
static int forward_batch(struct wick_ctx *c, const int32_t *tokens, int n_tok, bool all_logits, float *logits_out) {
    const struct wick_model *m = c->m;
    const model_config *mc = &m->c;
    int dim = mc->dim, hid = mc->hidden_dim;
    int pos0 = c->n_past;
    const quant_type *emb_t = quant_get(m->tok_embd.type);
    for (int t = 0; t < n_tok; t++)
        emb_t->to_float((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes,
                        c->x + (size_t)t * dim, dim);
    if (mc->embd_scale != 1.0f) scale_rows(c->x, mc->embd_scale, (size_t)n_tok * dim);
    rope_tables(c, mc->rope_base, mc->rope_scale, mc->rope_attn_factor, pos0, n_tok, rope_cos_of(c, false), rope_sin_of(c, false));
    if (rope_swa_own(mc))
        rope_tables(c, mc->rope_base_swa, mc->rope_scale_swa, mc->rope_attn_factor, pos0, n_tok, rope_cos_of(c, true),
                    rope_sin_of(c, true));
    act_rows in;
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &m->layers[l];
        /* attention: xb = norm(x) (or x itself where there is no pre-norm) */
        const float *a_in = c->x;
        if (w->attn_norm) {
            rmsnorm_rows(c->xb, c->x, w->attn_norm, n_tok, dim, mc->rms_eps);
            a_in = c->xb;
        }
        act_init(&in, c, a_in, n_tok, dim);
        if (w->kind == LAYER_SHORTCONV) shortconv_block(c, w, l, &in, n_tok);
        else if (w->kind == LAYER_DELTANET) deltanet_block(c, w, l, &in, n_tok);
        else attention_block(c, w, l, &in, n_tok, pos0);
        residual_add(c->x, c->xb, w->attn_post_norm, n_tok, mc);

        /* feed-forward: act(gate) ⊙ up, then down */
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
            matmul_group(c, &in, 2, ws, outs, strides, NULL, true, mc->act); /* hb = act(gate) ⊙ up */
        }
        act_init(&in, c, c->hb, n_tok, hid);
        matmul(c, &w->w_down, &in, c->xb, dim, NULL);
        residual_add(c->x, c->xb, w->ffn_post_norm, n_tok, mc);
    }
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
    if (mc->final_softcap > 0) /* gemma2: l → cap·tanh(l/cap) */
        for (size_t i = 0; i < n_logits; i++)
            logits_out[i] = tanh_exp(logits_out[i] * (1.0f / mc->final_softcap)) * mc->final_softcap;
    return 0;
}

int forward_eval(struct wick_ctx *c, const int32_t *tokens, int32_t n, bool all_logits, char *err, size_t err_len) {
    const model_config *mc = &c->m->c;
    if (n < 1 || !tokens) return errorf(err, err_len, "no tokens to evaluate");
    if (n > c->n_ctx - c->n_past)
        return errorf(err, err_len, "%d tokens do not fit in the context: %d of %d positions used", n, c->n_past, c->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= mc->n_vocab)
            return errorf(err, err_len, "token id %d out of range (vocabulary of %d)", tokens[i], mc->n_vocab);
    if (!kv_cache_can_trim(c, c->n_past))
        return errorf(err, err_len, "the sliding-window layers no longer hold the positions before %d (the cache was cut "
                      "back too far): evaluate from an earlier position", c->n_past);
    int32_t rows = all_logits ? n : 1;
    if (rows > c->logits_cap_rows) {
        float *l = realloc(c->logits, (size_t)rows * (size_t)mc->n_vocab * sizeof(float));
        if (!l) return errorf(err, err_len, "out of memory for the logits of %d positions", rows);
        c->logits = l;
        c->logits_cap_rows = rows;
    }
    for (int32_t done = 0; done < n;) {
        int32_t chunk = n - done < c->n_batch ? n - done : c->n_batch;
        /* without all_logits only the final chunk needs the output head, for its last row */
        float *out = all_logits ? c->logits + (size_t)done * mc->n_vocab : done + chunk == n ? c->logits : NULL;
        forward_batch(c, tokens + done, chunk, all_logits, out);
        done += chunk;
    }
    c->n_logit_rows = rows;
    return 0;
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
    int n_after = c->n_past - n_discard, w = c->m->c.n_swa;
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
    int w = c->m->c.n_swa, need = n >= w ? n - w + 1 : 0;
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

int kv_cache_trim(struct wick_ctx *c, int32_t n, char *err, size_t err_len) {
    if (!kv_cache_can_trim(c, n)) {
        if (ctx_has_state(c) && n > 0 && n < c->n_past && state_snapshot_at(c, n) < 0)
            return errorf(err, err_len, "cannot cut the cache back to %d positions: the recurrent state holds all %d and "
                          "has no snapshot at %d (evaluate from 0)", n, c->n_past, n);
        return errorf(err, err_len, "cannot cut the cache back to %d positions: the sliding-window layers no longer hold "
                      "the window before it (evaluate from 0)", n);
    }
    if (ctx_has_state(c) && n != c->n_past) {
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

/* Re-rotates one cached key row (kv_dim values) by the angles of cs/sn. */
static void rotate_cached_key(struct wick_ctx *c, const void *src, void *dst, const float *cs, const float *sn) {
    const model_config *mc = &c->m->c;
    int kvd = kv_dim(mc);
    float *tmp = c->k; /* scratch of at least kv_dim floats */
    for (int i = 0; i < kvd; i++) tmp[i] = kv_load(c, src, (size_t)i);
    rope_apply(tmp, mc->n_kv_heads, mc, cs, sn);
    for (int i = 0; i < kvd; i++) kv_store(c, dst, (size_t)i, tmp[i]);
}

int kv_cache_shift(struct wick_ctx *c, int32_t n_keep, int32_t n_discard, char *err, size_t err_len) {
    const model_config *mc = &c->m->c;
    if (n_keep < 0 || n_discard < 0 || n_keep + n_discard > c->n_past)
        return errorf(err, err_len, "cannot drop %d positions after %d of %d", n_discard, n_keep, c->n_past);
    if (n_discard == 0) return 0;
    if (!kv_cache_can_shift(c, n_keep, n_discard))
        return errorf(err, err_len, "cannot drop %d positions after %d: the sliding-window layers no longer hold the kept "
                      "positions their window would see (evaluate the kept tokens again)", n_discard, n_keep);
    int kvd = kv_dim(mc), half = mc->rope_dim / 2;
    size_t row_bytes = (size_t)kvd * c->kv_elem;
    int moved = c->n_past - n_keep - n_discard, n_after = c->n_past - n_discard;
    /* a key at position p was rotated by p·θ_i; moved to p − n_discard it needs a further
     * rotation by −n_discard·θ_i (rotations compose additively), with each base's θ and no
     * magnitude factor (phi3's attn_factor is in the key already) */
    float *cs = c->rope_cos, *sn = c->rope_sin, *cs_swa = c->rope_cos + half, *sn_swa = c->rope_sin + half;
    rope_tables(c, mc->rope_base, mc->rope_scale, 1.0f, -n_discard, 1, cs, sn);
    rope_tables(c, mc->rope_base_swa, mc->rope_scale_swa, 1.0f, -n_discard, 1, cs_swa, sn_swa);
    uint8_t *ring_k = NULL, *ring_v = NULL;
    int ring_lo = c->ring ? ring_first_after_shift(c, n_keep, n_discard) : 0;
    if (c->ring) {
        ring_k = malloc((size_t)c->ring * row_bytes);
        ring_v = malloc((size_t)c->ring * row_bytes);
        if (!ring_k || !ring_v) {
            free(ring_k);
            free(ring_v);
            return errorf(err, err_len, "out of memory shifting the context");
        }
    }
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &c->m->layers[l];
        const float *lcs = w->sliding ? cs_swa : cs, *lsn = w->sliding ? sn_swa : sn;
        if (c->kv_slots[l] == 0) continue; /* a recurrent layer (never reached: such a cache is not shifted) */
        if (c->kv_slots[l] == c->n_ctx) { /* every position: move the rest down in place */
            for (int j = 0; j < moved; j++) {
                int from = n_keep + n_discard + j, to = n_keep + j;
                void *ks = kv_at(c, c->k_cache, l, from), *kd = kv_at(c, c->k_cache, l, to);
                if (w->rotate) rotate_cached_key(c, ks, kd, lcs, lsn);
                else memmove(kd, ks, row_bytes);
                memmove(kv_at(c, c->v_cache, l, to), kv_at(c, c->v_cache, l, from), row_bytes);
            }
            continue;
        }
        /* a ring: the positions it can still supply, from a copy into their new slots */
        uint8_t *kr = (uint8_t *)kv_at(c, c->k_cache, l, 0), *vr = (uint8_t *)kv_at(c, c->v_cache, l, 0);
        memcpy(ring_k, kr, (size_t)c->ring * row_bytes);
        memcpy(ring_v, vr, (size_t)c->ring * row_bytes);
        for (int q = ring_lo; q < n_after; q++) {
            int from = shifted_from(q, n_keep, n_discard);
            const uint8_t *ks = ring_k + (size_t)(from % c->ring) * row_bytes;
            uint8_t *kd = kr + (size_t)(q % c->ring) * row_bytes;
            if (w->rotate && from != q) rotate_cached_key(c, ks, kd, lcs, lsn);
            else memcpy(kd, ks, row_bytes);
            memcpy(vr + (size_t)(q % c->ring) * row_bytes, ring_v + (size_t)(from % c->ring) * row_bytes, row_bytes);
        }
    }
    free(ring_k);
    free(ring_v);
    c->n_past = n_after;
    if (c->ring) c->swa_lo = ring_lo;
    return 0;
}
