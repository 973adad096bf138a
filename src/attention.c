/* attention.c — attention over the KV cache: for each query head h (of KV head h / group) and
 * token t at position p, scores s_j = q·k_j · scale (soft-capped where the family caps) over the
 * positions j it sees (from the sliding window's start, or 0, to p when causal, to the batch's
 * last position when not), p = softmax(s), out = Σ_j p_j · v_j, into c->xb2.
 * The fast paths share the conversion of each cached key and value between several query heads
 * (grouped-query) or several tokens (prefill with one head per item), and fold the F16 cache's
 * rebias into the query. Against a Q8_0 or Q4_0 key cache each query is rounded to Q8_0 once and
 * scored with the quant table's integer tile kernels; Q8_0 / Q4_0 values are converted a row at a
 * time. attention_ref is the plain scalar form the tests compare them against.
 * Work items are spread over the pool's threads, each output computed by one thread in a fixed
 * order, so a token's numbers do not depend on the thread count or the batch it is in. */
#include "attention.h"
#include "context.h"
#include "elementwise.h"
#include "simd.h"

#include <math.h>
#include <string.h>

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
size_t attention_scratch_floats(int32_t n_ctx) {
    return (size_t)ATT_SCORE_ROWS * (size_t)n_ctx + MAX_HEAD_DIM + (size_t)ATT_SCORE_ROWS * MAX_HEAD_DIM;
}

/* the first position a query at pos sees in layer l: a sliding layer's window of n_swa ending at
 * pos, or (swa_symmetric) reaching n_swa / 2 either side of it */
static int att_first(const struct wick_ctx *c, int l, int pos) {
    const model_config *mc = &c->model->config;
    int w = mc->swa_symmetric ? mc->n_swa / 2 + 1 : mc->n_swa;
    return c->model->layers[l].sliding && pos >= w ? pos - w + 1 : 0;
}

/* the last position it sees: its own (causal), else the batch's last (hi), within a symmetric window */
static int att_hi(const struct wick_ctx *c, int l, int pos, bool causal, int hi) {
    const model_config *mc = &c->model->config;
    if (causal) return pos;
    return c->model->layers[l].sliding && mc->swa_symmetric && pos + mc->n_swa / 2 < hi ? pos + mc->n_swa / 2 : hi;
}

/* an attention score: q·k times the scale, soft-capped where the family caps (gemma2) */
static inline float att_score(const model_config *mc, float dot) {
    float s = dot * mc->attn_scale;
    return mc->attn_softcap > 0 ? tanh_exp(s * (1.0f / mc->attn_softcap)) * mc->attn_softcap : s;
}

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

/* n (a multiple of 8; of 32 for the block types) cached values of a KV type → floats (times
 * 2^-112 where folded: F16 only) */
static __attribute__((noinline)) void kv_row_to_f32(int32_t type, const void *src, float *dst, int n, int folded) {
    if (type == WICK_KV_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (type == WICK_KV_Q8_0) { /* the table's d · q products, here in SIMD: quant.c is compiled for size in the wasm builds */
        const block_q8_0 *b = src;
        for (int k = 0; k < n / QK8_0; k++, b++, dst += QK8_0) {
            v128_t d = wasm_f32x4_splat(quant_f16_to_f32_inline(b->d));
            for (int i = 0; i < QK8_0; i += 16) {
                v128_t q = wasm_v128_load(b->qs + i), lo = wasm_i16x8_extend_low_i8x16(q), hi = wasm_i16x8_extend_high_i8x16(q);
                wasm_v128_store(dst + i, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(lo)), d));
                wasm_v128_store(dst + i + 4, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(lo)), d));
                wasm_v128_store(dst + i + 8, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(hi)), d));
                wasm_v128_store(dst + i + 12, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(hi)), d));
            }
        }
        return;
    }
    if (kv_type_is_block(type)) { /* Q4_0: the quant table's conversion */
        quant_get(kv_quant_type(type))->to_float(src, dst, n);
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

/* One attention call: layer, the batch's first position and size, causal or not; for
 * attention_task, the query heads per work item (a divisor of the group, ≤ ATT_HEADS_MAX). */
typedef struct {
    struct wick_ctx *c;
    int layer, pos0, n_tok;
    bool causal;
    int heads;
} attn_args;

/* the F16 fast paths (and the folded query) take keys and values both in F16 */
static inline int kv_both_f16(const struct wick_ctx *c) { return c->kv_type == WICK_KV_F16 && c->kv_type_v == WICK_KV_F16; }

static inline int att_last(const attn_args *a, int pos) { return att_hi(a->c, a->layer, pos, a->causal, a->pos0 + a->n_tok - 1); }

/* One query head h of the F16 cache for the run of nt (≤ T) consecutive tokens from t0, their
 * queries q[] folded (fold_query): each cached key and value converted once for the run, as it
 * is used, the probabilities rebiased. Token t sees positions lo[t] … hi[t]; the other
 * positions of the run get probability 0 and add nothing, so every token's result is the same
 * whatever run it is in (tests/consistency.test.mjs). T = 1 is decode, T = ATT_TOKENS prefill;
 * a short run repeats its first token and drops the copies. */
#define ATT_TOKENS 4

static inline __attribute__((always_inline)) void attend_f16_body(const attn_args *a, int h, int t0, int nt,
                                                                 float *scores, const float *const q[], const int T) {
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int layer = a->layer, hd = mc->head_dim, kvh = h / (mc->n_heads / mc->n_kv_heads);
    int last = att_last(a, a->pos0 + t0 + nt - 1);
    size_t stride = (size_t)kv_dim(mc), n_ctx = (size_t)c->n_ctx;
    int lo[ATT_TOKENS], hi[ATT_TOKENS];
    float max[ATT_TOKENS];
    for (int t = 0; t < T; t++) {
        int pos = a->pos0 + (t < nt ? t0 + t : t0);
        lo[t] = att_first(c, layer, pos);
        hi[t] = att_last(a, pos);
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
            if (j > hi[t] || j < lo[t]) continue;
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
        softmax_scores(sc, lo[t], hi[t], max[t]);
        rebias_probs(sc, lo[t], hi[t]);
        for (int j = first; j < lo[t]; j++) sc[j] = 0;
        for (int j = hi[t] + 1; j <= last; j++) sc[j] = 0;
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

/* scores: T rows of n_ctx, then the thread's scratch (attention_scratch_floats). Returns 0, having
 * done nothing, when a query cannot be folded (fold_query): attend_heads then takes the tokens
 * one at a time, with the same results. */
static inline __attribute__((always_inline)) int attend_f16_run(const attn_args *a, int h, int t0, int nt, float *scores,
                                                               const int T) {
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int hd = mc->head_dim;
    float *qf = scores + (size_t)ATT_SCORE_ROWS * c->n_ctx + MAX_HEAD_DIM;
    const float *q[ATT_TOKENS];
    for (int t = 0; t < T; t++) {
        q[t] = qf + (size_t)t * hd;
        if (!fold_query(c->q + (size_t)(t < nt ? t0 + t : t0) * mc->q_dim + (size_t)h * hd, qf + (size_t)t * hd, hd))
            return 0;
    }
    attend_f16_body(a, h, t0, nt, scores, q, T);
    return 1;
}

/* The dot products of token t's `heads` queries q (consecutive rows of head_dim) with the block-type
 * keys (Q8_0 or Q4_0) of the positions it sees, into scores[g * n_ctx + j]: as llama.cpp's
 * flash attention does, each query is rounded to Q8_0 once (into qq, scratch of heads · head_dim
 * / 32 blocks) and multiplied with the cached blocks in integers, by the key type's tile kernel
 * (quant.h): up to GEMM_MAX_ROWS consecutive slots as weight rows, the heads as its tokens. */
static __attribute__((noinline)) void block_keys_dots(const attn_args *a, int t, size_t k_off, int heads, const float *q, float *scores, void *qq) {
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int layer = a->layer, hd = mc->head_dim, pos = a->pos0 + t, lo = att_first(c, layer, pos), hi = att_last(a, pos);
    const quant_type *kt = quant_get(kv_quant_type(c->kv_type));
    size_t q_row = (size_t)hd / QK8_0 * sizeof(block_q8_0), k_row = kv_row_bytes(c, c->k_cache, layer);
    for (int g = 0; g < heads; g++) quant_q8_0_from_float_simd(q + (size_t)g * hd, (uint8_t *)qq + (size_t)g * q_row, hd);
    int n_slots = c->kv_slots[layer];
    for (int j = lo, slot = kv_slot(c, layer, lo); j <= hi;) {
        int run = hi - j + 1;
        if (run > GEMM_MAX_ROWS) run = GEMM_MAX_ROWS;
        if (run > n_slots - slot) run = n_slots - slot; /* a ring's rows wrap back to slot 0 */
        const uint8_t *k = (const uint8_t *)kv_at(c, c->k_cache, layer, j) + k_off;
        kt->gemm(hd, k, k_row, run, qq, q_row, heads, scores + j, (size_t)c->n_ctx);
        j += run;
        slot += run;
        if (slot == n_slots) slot = 0;
    }
}

/* out[0 .. hd) = Σ p[j] · v_j over positions lo … hi of a Q8_0 value cache, for one query head:
 * a block of 32 dimensions at a time summed in registers, each value d · q as kv_row_to_f32
 * converts it and added in attend_heads' order, so the sums are its sums bit for bit, without
 * the row of floats written and read again per position. */
static __attribute__((noinline)) void q8_0_values(const attn_args *a, size_t v_off, int lo, int hi, const float *p, float *out, int hd) {
    const struct wick_ctx *c = a->c;
    /* positions lo … hi from their slots: a sliding layer's ring wraps back to slot 0 */
    const uint8_t *base = (const uint8_t *)kv_at(c, c->v_cache, a->layer, 0) + v_off;
    size_t row = kv_row_bytes(c, c->v_cache, a->layer);
    int n_slots = c->kv_slots[a->layer], slot0 = kv_slot(c, a->layer, lo);
    for (int blk = 0; blk < hd / QK8_0; blk++) {
        v128_t acc[8];
        for (int r = 0; r < 8; r++) acc[r] = wasm_f32x4_splat(0);
        const uint8_t *vj = base + (size_t)slot0 * row;
        for (int j = lo, slot = slot0; j <= hi; j++) {
            const block_q8_0 *b = (const block_q8_0 *)vj + blk;
            if (++slot == n_slots) slot = 0, vj = base;
            else vj += row;
            v128_t d = wasm_f32x4_splat(quant_f16_to_f32_inline(b->d)), pj = wasm_f32x4_splat(p[j]);
            for (int i = 0; i < 2; i++) {
                v128_t q = wasm_v128_load(b->qs + 16 * i), l = wasm_i16x8_extend_low_i8x16(q), h = wasm_i16x8_extend_high_i8x16(q);
                v128_t v[4] = { wasm_i32x4_extend_low_i16x8(l), wasm_i32x4_extend_high_i16x8(l), wasm_i32x4_extend_low_i16x8(h),
                                wasm_i32x4_extend_high_i16x8(h) };
                for (int k = 0; k < 4; k++)
                    acc[4 * i + k] = wasm_f32x4_add(acc[4 * i + k], wasm_f32x4_mul(pj, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(v[k]), d)));
            }
        }
        for (int r = 0; r < 8; r++) wasm_v128_store(out + QK8_0 * blk + 4 * r, acc[r]);
    }
}

/* Token t's query heads h0 … h0 + heads − 1, all of KV head kvh: each cached key and value
 * converted to floats once for all of them (grouped-query models share a KV head between up to
 * ATT_HEADS_MAX heads at once). For each head: scores against every cached position the token
 * sees, softmax, and the weighted sum of cached values into xb2. */
static void attend_heads(const attn_args *a, int t, int kvh, int h0, int heads, float *scores) {
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int layer = a->layer, hd = mc->head_dim, pos = a->pos0 + t;
    float *row = scores + (size_t)ATT_SCORE_ROWS * c->n_ctx; /* one cached key or value as floats */
    int lo = att_first(c, layer, pos), hi = att_last(a, pos);
    const float *q = c->q + (size_t)t * mc->q_dim + (size_t)h0 * hd;
    float *out = c->xb2 + (size_t)t * mc->q_dim + (size_t)h0 * hd;
    size_t k_off = kv_type_bytes(c->kv_type, (size_t)kvh * hd), v_off = kv_type_bytes(c->kv_type_v, (size_t)kvh * hd);
    /* the heads' queries are consecutive: folded all at once (an F16 cache) */
    int folded = kv_both_f16(c) && fold_query(q, row + MAX_HEAD_DIM, heads * hd);
    if (folded) q = row + MAX_HEAD_DIM;
    float max[ATT_HEADS_MAX];
    for (int g = 0; g < heads; g++) max[g] = -INFINITY;
    /* q·k of every position, then the scores made of them */
    if (kv_type_is_block(c->kv_type))
        block_keys_dots(a, t, k_off, heads, q, scores, row + MAX_HEAD_DIM);
    else
        for (int j = lo; j <= hi; j++) {
            kv_row_to_f32(c->kv_type, (const uint8_t *)kv_at(c, c->k_cache, layer, j) + k_off, row, hd, folded);
            for (int g = 0; g < heads; g++) scores[(size_t)g * c->n_ctx + j] = dot_f32(q + (size_t)g * hd, row, hd);
        }
    for (int g = 0; g < heads; g++)
        for (int j = lo; j <= hi; j++) {
            float s = att_score(mc, scores[(size_t)g * c->n_ctx + j]);
            scores[(size_t)g * c->n_ctx + j] = s;
            if (s > max[g]) max[g] = s;
        }
    for (int g = 0; g < heads; g++) {
        softmax_scores(scores + (size_t)g * c->n_ctx, lo, hi, max[g]);
        if (folded) rebias_probs(scores + (size_t)g * c->n_ctx, lo, hi);
    }
    if (heads == 1 && c->kv_type_v == WICK_KV_Q8_0) {
        q8_0_values(a, v_off, lo, hi, scores, out, hd);
        return;
    }
    memset(out, 0, (size_t)heads * hd * sizeof(float));
    for (int j = lo; j <= hi; j++) {
        kv_row_to_f32(c->kv_type_v, (const uint8_t *)kv_at(c, c->v_cache, layer, j) + v_off, row, hd, folded);
        for (int g = 0; g < heads; g++)
            axpy_f32(out + (size_t)g * hd, scores[(size_t)g * c->n_ctx + j], row, hd);
    }
}

/* Prefill of the F16 cache with one query head per item: runs of ATT_TOKENS tokens of a head */
static void attention_runs_task(void *arg, int ith, int nth) {
    attn_args *a = arg;
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int n_heads = mc->n_heads, n_runs = (a->n_tok + ATT_TOKENS - 1) / ATT_TOKENS;
    float *scores = c->att + (size_t)ith * attention_scratch_floats(c->n_ctx);
    /* items interleaved between the threads: a later token attends to more positions, so
     * halves of the batch would give the last thread most of the work (causal attention) */
    for (long item = ith; item < (long)n_runs * n_heads; item += nth) {
        int t0 = (int)(item / n_heads) * ATT_TOKENS, nt = a->n_tok - t0 < ATT_TOKENS ? a->n_tok - t0 : ATT_TOKENS;
        int h = (int)(item % n_heads);
        if (!attend_f16_run(a, h, t0, nt, scores, ATT_TOKENS))
            for (int t = t0; t < t0 + nt; t++)
                attend_heads(a, t, h / (mc->n_heads / mc->n_kv_heads), h, 1, scores);
    }
}

/* Work items are (token, KV head, run of `heads` query heads of its group), attend_heads each */
static void attention_task(void *arg, int ith, int nth) {
    attn_args *a = arg;
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int group = mc->n_heads / mc->n_kv_heads, heads = a->heads, runs = group / heads;
    float *scores = c->att + (size_t)ith * attention_scratch_floats(c->n_ctx); /* scores[g * n_ctx + j] */
    /* interleaved, as in attention_runs_task */
    for (long item = ith; item < (long)a->n_tok * mc->n_kv_heads * runs; item += nth) {
        int t = (int)(item / ((long)mc->n_kv_heads * runs)), rest = (int)(item % ((long)mc->n_kv_heads * runs));
        int kvh = rest / runs, h0 = kvh * group + (rest % runs) * heads;
        /* one head: nothing to share, each value converted as used */
        if (heads == 1 && kv_both_f16(c) && attend_f16_run(a, h0, t, 1, scores, 1))
            continue;
        attend_heads(a, t, kvh, h0, heads, scores);
    }
}

/* query heads per attention work item: the largest divisor of the group up to ATT_HEADS_MAX
 * that still leaves two items per thread */
static int attention_heads_per_item(const struct wick_ctx *c, int layer, int n_tok) {
    const model_config *mc = model_layer_config(c->model, layer);
    int group = mc->n_heads / mc->n_kv_heads, best = 1;
    for (int h = 1; h <= att_heads_cap(mc); h++)
        if (group % h == 0 && (long)n_tok * mc->n_heads / h >= 2L * pool_size(c->pool)) best = h;
    return best;
}

void attention(struct wick_ctx *c, int layer, int pos0, int n_tok, bool causal) {
    attn_args a = {c, layer, pos0, n_tok, causal, attention_heads_per_item(c, layer, n_tok)};
    if (n_tok > 1 && a.heads == 1 && kv_both_f16(c)) pool_run(c->pool, attention_runs_task, &a);
    else pool_run(c->pool, attention_task, &a);
}

/* The reference: one head and one token at a time, every score computed again in each of three
 * passes (the largest score; Σ e^(s − max); Σ e^(s − max)·v, divided by that sum), each cached
 * value converted to a float (kv_row_to_f32), the sums in double. Against block-type keys the query is
 * first rounded to Q8_0 (quant_q8_0_from_float_ref), as the fast path and llama.cpp do. */
void attention_ref(const struct wick_ctx *c, int layer, int pos0, int n_tok, bool causal, float *out) {
    const model_config *mc = model_layer_config(c->model, layer);
    int hd = mc->head_dim, group = mc->n_heads / mc->n_kv_heads;
    double acc[MAX_HEAD_DIM];
    float qr[MAX_HEAD_DIM], kr[MAX_HEAD_DIM], vr[MAX_HEAD_DIM];
    block_q8_0 qq[MAX_HEAD_DIM / QK8_0];
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < mc->n_heads; h++) {
            int pos = pos0 + t, lo = att_first(c, layer, pos), hi = att_hi(c, layer, pos, causal, pos0 + n_tok - 1);
            size_t head_off = (size_t)(h / group) * hd;
            const float *q = c->q + (size_t)t * mc->q_dim + (size_t)h * hd;
            if (kv_type_is_block(c->kv_type)) {
                quant_q8_0_from_float_ref(q, qq, hd);
                quant_q8_0_to_float(qq, qr, hd);
                q = qr;
            }
            double max = -INFINITY, sum = 0;
            for (int i = 0; i < hd; i++) acc[i] = 0;
            for (int pass = 0; pass < 3; pass++)
                for (int j = lo; j <= hi; j++) {
                    const uint8_t *k = kv_at(c, c->k_cache, layer, j), *v = kv_at(c, c->v_cache, layer, j);
                    kv_row_to_f32(c->kv_type, k + kv_type_bytes(c->kv_type, head_off), kr, hd, 0);
                    kv_row_to_f32(c->kv_type_v, v + kv_type_bytes(c->kv_type_v, head_off), vr, hd, 0);
                    double dot = 0;
                    for (int i = 0; i < hd; i++) dot += (double)q[i] * kr[i];
                    double s = att_score(mc, (float)dot);
                    if (pass == 0) max = s > max ? s : max;
                    else if (pass == 1) sum += exp(s - max);
                    else
                        for (int i = 0; i < hd; i++) acc[i] += exp(s - max) * vr[i];
                }
            float *o = out + (size_t)t * mc->q_dim + (size_t)h * hd;
            for (int i = 0; i < hd; i++) o[i] = (float)(acc[i] / sum);
        }
}
