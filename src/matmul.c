/* matmul.c — the matrix products of the layers. An activation row is converted once to the
 * 8-bit block format its weight's dot product takes (Q8_0, Q8_1 or Q8_K, act_get), or rounded to
 * F16 or BF16 values for the weights of those types, then each
 * product out[t][r] = Σ_c W[r][c]·x[t][c] runs as the type's gemm tiles over a cache tile of
 * weight rows for every token of the batch (prefill), or as several far-apart row streams of
 * its gemv (decode, bound by memory). The rows of every matrix are split between the pool's
 * threads in whole tiles; each output is computed by one thread in a fixed order, so the
 * numbers do not depend on the thread count. */
#include "context.h"
#include "elementwise.h"
#include "matmul.h"
#include "quant.h"

#include <stdlib.h>
#include <string.h>

/* ---- activation rows in the weights' dot-product format ---- */

typedef struct {
    const act_rows *a;
    void *dst;          /* row t at dst + t · row_bytes */
    size_t row_bytes;
    const quant_type *qt;
} quantize_args;

static void quantize_task(void *arg, int ith, int nth) {
    quantize_args *qa = arg;
    const act_rows *a = qa->a;
    long t0, t1;
    pool_split(a->n_tok, ith, nth, &t0, &t1);
    for (long t = t0; t < t1; t++)
        qa->qt->from_float(a->x + (size_t)t * (size_t)a->cols, (uint8_t *)qa->dst + (size_t)t * qa->row_bytes, a->cols);
}

/* the rows converted by the type's from_float into dst, by the pool's threads in prefill */
static void convert_rows(struct wick_ctx *c, const act_rows *a, const quant_type *qt, void *dst, size_t row_bytes) {
    quantize_args qa = {a, dst, row_bytes, qt};
    if (a->n_tok > 1) pool_run(c->pool, quantize_task, &qa);
    else quantize_task(&qa, 0, 1);
}

void act_init(act_rows *a, struct wick_ctx *c, const float *x, int n_tok, int cols) {
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
    if (t == WICK_TYPE_F32_H || t == WICK_TYPE_F32_BH) {
        /* F16 or BF16 weights: the rows rounded to their values once, in the context's buffer
         * (ctx_init makes it for a model with such matrices). One rounding at a time: a file
         * mixing F16 and BF16 matrices over one input gives the second its plain F32 rows. */
        *row_bytes = (size_t)a->cols * sizeof(float);
        if (!c->xr || (a->xr_ready && a->xr_type != t)) return a->x;
        if (!a->xr_ready) {
            convert_rows(c, a, quant_get(t), c->xr, *row_bytes);
            a->xr_ready = true, a->xr_type = t;
        }
        return c->xr;
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
    convert_rows(c, a, qt, a->q[s], a->q_row_bytes[s]);
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
    /* F16 and BF16 in prefill: each thread's ROW_TILE × cols floats (its slice of c->wconv),
     * where a cache tile's rows are converted once for every token of the batch; else NULL */
    float *conv;
    size_t conv_floats;
} matmul_args;

/* Several products over the same input in one dispatch (Q, K and V; gate and up; DeltaNet's four): one wake-up
 * and one barrier instead of one per matrix. gated: the two products are gate and up, and each
 * thread finishes its own rows with out0 = act(out0) · out1 (SwiGLU, or GeGLU with GELU). */
typedef struct {
    matmul_args m[MATMUL_GROUP_MAX];
    int n;
    bool gated;
    ffn_activation act;
} matmul_group_args;

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

static void matmul_rows(const matmul_args *a, long r0, long r1, int ith) {
    const weight *w = a->w;
    const uint8_t *wdata = w->data, *act = a->act;
    int cols = (int)w->cols;
    size_t stride = (size_t)a->out_stride;
    /* F16 and BF16 weights: their conversion costs more than the multiply, so a cache tile's rows
     * become floats once and F32's tile kernel takes every token of the batch over them (the
     * conversion is exact and both types use gemm_float, so the outputs are the same bit for bit) */
    float *conv = a->conv ? a->conv + (size_t)ith * a->conv_floats : NULL;
    const quant_type *qt = conv ? quant_get(WICK_TYPE_F32) : a->qt;
    size_t w_stride = conv ? (size_t)cols * sizeof(float) : w->row_bytes;
    long tiled_from = a->n_tok == 1 ? matvec_rows_streams(a, r0, r1) : r0;
    for (long rt = tiled_from; rt < r1; rt += ROW_TILE) {
        long rend = rt + ROW_TILE < r1 ? rt + ROW_TILE : r1;
        const uint8_t *tile = wdata + (size_t)rt * w->row_bytes;
        if (conv) {
            for (long r = rt; r < rend; r++)
                a->qt->to_float(wdata + (size_t)r * w->row_bytes, conv + (size_t)(r - rt) * cols, cols);
            tile = (const uint8_t *)conv;
        }
        for (int t = 0; t < a->n_tok; t += GEMM_MAX_TOKENS) {
            int nt = a->n_tok - t < GEMM_MAX_TOKENS ? a->n_tok - t : GEMM_MAX_TOKENS;
            for (long r = rt; r < rend; r += GEMM_MAX_ROWS) {
                int nr = rend - r < GEMM_MAX_ROWS ? (int)(rend - r) : GEMM_MAX_ROWS;
                qt->gemm(cols, tile + (size_t)(r - rt) * w_stride, w_stride, nr, act + (size_t)t * a->act_row_bytes,
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
        matmul_rows(&g->m[i], r0, r1, ith);
    }
    if (g->gated) /* gate and up have the same rows, so this thread owns rows [r0, r1) of both */
        for (int t = 0; t < g->m[0].n_tok; t++) {
            float *gate = g->m[0].out + (size_t)t * (size_t)g->m[0].out_stride;
            const float *up = g->m[1].out + (size_t)t * (size_t)g->m[1].out_stride;
            if (g->act == ACT_GELU_TANH)
                for (long r = r0; r < r1; r++) gate[r] = gelu_f16(gate[r]) * up[r];
            else
                for (long r = r0; r < r1; r++) gate[r] = silu(gate[r]) * up[r];
        }
}

/* out_i[t][r] = Σ_c W_i[r][c] · x[t][c] (+ bias_i[r]) for every token t, for each of n products */
void matmul_group(struct wick_ctx *c, act_rows *x, int n, const weight *const *ws, float *const *outs,
                  const int *strides, const float *const *biases, bool gated, ffn_activation act) {
    matmul_group_args g = {.n = n, .gated = gated, .act = act};
    for (int i = 0; i < n; i++) {
        const quant_type *qt = quant_get(ws[i]->type);
        g.m[i] = (matmul_args){ws[i], NULL, 0, x->n_tok, outs[i], strides[i], biases ? biases[i] : NULL, qt, NULL, 0};
        g.m[i].act = act_get(x, c, qt->vec_dot_type, &g.m[i].act_row_bytes);
        if ((ws[i]->type == WICK_TYPE_F16 || ws[i]->type == WICK_TYPE_BF16) && x->n_tok > GEMM_MAX_TOKENS) {
            /* the threads' conversion tiles, grown to the widest such matrix the first time it comes */
            size_t floats = (size_t)ROW_TILE * (size_t)ws[i]->cols, need = floats * (size_t)pool_size(c->pool);
            if (need > c->wconv_floats) {
                float *grown = realloc(c->wconv, need * sizeof(float));
                if (grown) c->wconv = grown, c->wconv_floats = need;
            }
            if (need <= c->wconv_floats) g.m[i].conv = c->wconv, g.m[i].conv_floats = floats;
        }
    }
    pool_run(c->pool, matmul_group_task, &g);
}

void matmul(struct wick_ctx *c, const weight *w, act_rows *x, float *out, int out_stride, const float *bias) {
    matmul_group(c, x, 1, &w, &out, &out_stride, &bias, false, ACT_SILU);
}
