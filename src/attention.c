/* attention.c — attention over the KV cache: for each query head h (of KV head h / group) and
 * token t at position p, scores s_j = q·k_j · scale (soft-capped where the family caps) over the
 * positions j it sees (from the sliding window's start, or 0, to p when causal, to the batch's
 * last position when not), p = softmax(s), out = Σ_j p_j · v_j, into c->xb2.
 * The fast paths share the conversion of each cached key and value between several query heads
 * (grouped-query) or several tokens (prefill with one head per item), and fold the F16 cache's
 * rebias into the query. Against a Q8_0 or Q4_0 key cache each query is rounded to Q8_0 once and
 * scored with the quant table's integer tile kernels (in decode over Q8_0, q8_0_keys: the same
 * operations inline); Q8_0 values are summed in integers against 16-bit weights, a pass of 32
 * positions at a time (q8_0_values_pass), Q4_0 values converted a row at a time. Decode with a
 * KV head per query head over an F16 or Q8_0 cache (attend_decode) reads the cache across a range
 * of heads, position by position, touching rows ahead of use.
 * attention_ref is the plain scalar form the tests compare them against.
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

/* a thread's attention scratch: score rows of up to 16 heads (one token: grouped-query, or a range
 * of KV heads in decode) or of up to 4 tokens (one head, prefill), then one cached row as floats */
#define ATT_SCORE_ROWS 16
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
 * context's decode), their sum in four lanes (position lo + 4i + r in lane r, the lanes then
 * added as (l0 + l1) + (l2 + l3)), then each times 1 / sum. Every path that attends goes through
 * here with the same lo and hi, so the sums do not depend on the path. */
static __attribute__((noinline)) void softmax_scores(float *sc, int lo, int hi, float max) {
    v128_t m = wasm_f32x4_splat(max), sum4 = wasm_f32x4_splat(0);
    for (int j = lo; j <= hi; j += 4) {
        /* the last one to three through the same lanes, from a copy padded with max (e^0 = 1,
         * then 0 in the sum's lanes past hi) */
        int n = hi - j + 1 < 4 ? hi - j + 1 : 4;
        float tail[4] = {max, max, max, max};
        float *x = n == 4 ? sc + j : tail;
        if (n < 4) memcpy(tail, sc + j, (size_t)n * sizeof(float));
        v128_t e = exp_f32x4(wasm_f32x4_sub(wasm_v128_load(x), m));
        wasm_v128_store(x, e);
        if (n < 4) {
            memcpy(sc + j, tail, (size_t)n * sizeof(float));
            e = wasm_v128_and(e, wasm_i32x4_gt(wasm_i32x4_splat(n), wasm_i32x4_make(0, 1, 2, 3)));
        }
        sum4 = wasm_f32x4_add(sum4, e);
    }
    float sum = (wasm_f32x4_extract_lane(sum4, 0) + wasm_f32x4_extract_lane(sum4, 1)) +
                (wasm_f32x4_extract_lane(sum4, 2) + wasm_f32x4_extract_lane(sum4, 3));
    float inv_sum = 1.0f / sum;
    v128_t inv = wasm_f32x4_splat(inv_sum);
    int j = lo;
    for (; j + 3 <= hi; j += 4) wasm_v128_store(sc + j, wasm_f32x4_mul(wasm_v128_load(sc + j), inv));
    for (; j <= hi; j++) sc[j] *= inv_sum;
}

/* sc[lo..hi]: q·k dots → scores (att_score) → probabilities (softmax_scores), times 2^112 where
 * the F16 rebias is folded (rebias_probs) */
static __attribute__((noinline)) void scores_to_probs(const model_config *mc, float *sc, int lo, int hi, int folded);

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

/* The scores (dots times the scale, or soft-capped) and their largest. Without a cap, four at a
 * time: the same multiply per score, and a maximum that does not depend on the order (a NaN score
 * is passed over, as the comparison in order passes it over). */
static void scores_to_probs(const model_config *mc, float *sc, int lo, int hi, int folded) {
    float max = -INFINITY;
    int j = lo;
    if (!(mc->attn_softcap > 0)) {
        v128_t scale = wasm_f32x4_splat(mc->attn_scale), m4 = wasm_f32x4_splat(-INFINITY);
        for (; j + 3 <= hi; j += 4) {
            v128_t s = wasm_f32x4_mul(wasm_v128_load(sc + j), scale);
            wasm_v128_store(sc + j, s);
            m4 = wasm_f32x4_pmax(m4, s); /* m4 < s ? s : m4 */
        }
        for (int r = 0; r < 4; r++) {
            float x = wasm_f32x4_extract_lane(m4, 0);
            if (x > max) max = x;
            m4 = wasm_i32x4_shuffle(m4, m4, 1, 2, 3, 0);
        }
    }
    for (; j <= hi; j++) {
        float s = att_score(mc, sc[j]);
        sc[j] = s;
        if (s > max) max = s;
    }
    softmax_scores(sc, lo, hi, max);
    if (folded) rebias_probs(sc, lo, hi);
}

/* n (a multiple of 8; of 32 for the block types) cached values of a KV type → floats (times
 * 2^-112 where folded: F16 only) */
static __attribute__((noinline)) void kv_row_to_f32(int32_t type, const void *src, float *dst, int n, int folded) {
    if (type == WICK_KV_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (kv_type_is_block(type)) { /* Q8_0, Q4_0: the quant table's conversion (attention sums Q8_0 values in q8_0_values_pass) */
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
    for (int t = 0; t < T; t++) {
        int pos = a->pos0 + (t < nt ? t0 + t : t0);
        lo[t] = att_first(c, layer, pos);
        hi[t] = att_last(a, pos);
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
            scores[(size_t)t * n_ctx + j] = (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
                                            (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
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
        scores_to_probs(mc, sc, lo[t], hi[t], 1);
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

static void q8_0_values(const attn_args *a, size_t v_off, int lo, int hi, const float *p, float *out, int hd);

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
    /* q·k of every position, then the probabilities made of them */
    if (kv_type_is_block(c->kv_type))
        block_keys_dots(a, t, k_off, heads, q, scores, row + MAX_HEAD_DIM);
    else
        for (int j = lo; j <= hi; j++) {
            kv_row_to_f32(c->kv_type, (const uint8_t *)kv_at(c, c->k_cache, layer, j) + k_off, row, hd, folded);
            for (int g = 0; g < heads; g++) scores[(size_t)g * c->n_ctx + j] = dot_f32(q + (size_t)g * hd, row, hd);
        }
    for (int g = 0; g < heads; g++) scores_to_probs(mc, scores + (size_t)g * c->n_ctx, lo, hi, folded);
    if (c->kv_type_v == WICK_KV_Q8_0) { /* each head's sums in registers, the blocks converted as used */
        for (int g = 0; g < heads; g++) q8_0_values(a, v_off, lo, hi, scores + (size_t)g * c->n_ctx, out + (size_t)g * hd, hd);
        return;
    }
    memset(out, 0, (size_t)heads * hd * sizeof(float));
    for (int j = lo; j <= hi; j++) {
        kv_row_to_f32(c->kv_type_v, (const uint8_t *)kv_at(c, c->v_cache, layer, j) + v_off, row, hd, folded);
        for (int g = 0; g < heads; g++)
            axpy_f32(out + (size_t)g * hd, scores[(size_t)g * c->n_ctx + j], row, hd);
    }
}

/* Decode over an F16 (query folded, fold_query) or Q8_0 cache, one query head per item (a KV head
 * per query head, or grouped-query heads, each reading its KV head kv(h)): query heads kvh0 …
 * kvh0 + n_kv − 1 of token t, the cache read across all of them (a cached row is one position's
 * every KV head side by side, so the range's part of it is one stretch of memory, where a pass per head steps through the whole layer's cache once per head:
 * 8.2 against 13.0 ms for a 134m decode step's attention at 2,048 tokens, F16, wasm). Each score
 * and each output element goes through the operations of the other paths in their order (the
 * same sums bit for bit, so a head's result does not depend on the path, the range or the
 * thread count):
 *  - F16 scores four positions at a time per head, their lanes summed by two transposes
 *    ((l0 + l1) + (l2 + l3), as attend_f16_body's extracts); Q8_0 scores a block of positions
 *    per head by q8_0_keys, four at a time, the key type's tile kernel's operations
 *    (block_keys_dots) inline;
 *  - the outputs over blocks of ATT_DECODE_BLOCK positions, per head and 32 dimensions kept in
 *    registers over the block (head sizes that are multiples of 32); a Q8_0 block is one pass of
 *    q8_0_values_pass's integer sums, as in attend_heads;
 *  - before each block, a burst of loads touches the next block's rows (touch_rows). */
#define ATT_DECODE_BLOCK 32

/* the loops over a block's four vectors unrolled, so that its eight sums stay in registers (LLVM
 * 19, the relaxed build's, left them in memory); the loop over rows kept rolled, so that no more
 * than a row's values are in registers at once (V8 spilled four rows' worth) */
#if defined(__clang__)
#define UNROLL_4 _Pragma("clang loop unroll(full)")
#define NO_UNROLL _Pragma("clang loop unroll(disable)")
#else
#define UNROLL_4 _Pragma("GCC unroll 4")
#define NO_UNROLL
#endif

/* four score vectors (s0 + s1 of positions a … d) → their four sums, lane r for position r */
static inline __attribute__((always_inline)) v128_t sum4_scores(v128_t a, v128_t b, v128_t c, v128_t d) {
    v128_t ab = wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 2, 6), wasm_i32x4_shuffle(a, b, 1, 5, 3, 7));
    v128_t cd = wasm_f32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 2, 6), wasm_i32x4_shuffle(c, d, 1, 5, 3, 7));
    return wasm_f32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

/* o[0 .. 32) += Σ p[j] · v_j over n rows of halves from v (stride in halves), in the order of j */
static __attribute__((noinline)) void f16_values_block(float *o, const float *p, const uint16_t *v, size_t stride, int n) {
    enum { W = 32 };
    v128_t acc[8];
    for (int r = 0; r < W / 4; r++) acc[r] = wasm_v128_load(o + 4 * r);
    NO_UNROLL for (int j = 0; j < n; j++, v += stride) {
        v128_t pj = wasm_f32x4_splat(p[j]);
        UNROLL_4 for (int i = 0; i < W; i += 8) {
            v128_t lo8, hi8;
            f16x8_to_f32(v + i, &lo8, &hi8, 1);
            acc[i / 4] = wasm_f32x4_add(acc[i / 4], wasm_f32x4_mul(pj, lo8));
            acc[i / 4 + 1] = wasm_f32x4_add(acc[i / 4 + 1], wasm_f32x4_mul(pj, hi8));
        }
    }
    for (int r = 0; r < W / 4; r++) wasm_v128_store(o + 4 * r, acc[r]);
}

/* o[0 .. 32) += the terms of n rows from b (stride bytes apart) as floats: p · (d · q), as
 * kv_row_to_f32 and axpy_f32 form them (out of line: a rare path, a pass whose weights are not
 * all finite) */
static __attribute__((noinline)) void q8_0_rows_plain(float *o, const uint8_t *b, size_t stride, const float *p, int n) {
    _Alignas(16) float row[QK8_0];
    for (int j = 0; j < n; j++, b += stride) {
        kv_row_to_f32(WICK_KV_Q8_0, b, row, QK8_0, 0);
        axpy_f32(o, p[j], row, QK8_0);
    }
}

/* The values of a Q8_0 cache are summed in integers, a pass of up to Q8_0_PASS rows at a time.
 * Row t's weight is w_t = p_t · d_t (its probability times its block's scale, one float
 * multiply); the pass's largest |w| = f · 2^e (1 ≤ f < 2) sets its scale 2^(14 − e), and each
 * weight becomes the 16-bit integer W_t = nearest(w_t · 2^(14 − e)) (|W_t| ≤ 2^15, saturated at
 * 32,767). Each output is then the exact integer Σ W_t · q_t (|Σ| < 32 · 2^15 · 127 < 2^31) times
 * 2^(e − 14), added to the float sum of the passes before. A weight is off by at most half a unit
 * in 2^15 of the pass's largest: up to 1.3 · 10^-4 of a head's largest output where the terms
 * cancel (tests/test_attention.c, random values), against the 4 · 10^-3 of the values' own
 * rounding to Q8_0, and inside the 5% of tests/kvquant.test.mjs against llama.cpp. An integer
 * sum has no order, so every path (attend_decode, attend_heads' q8_0_values, any thread count,
 * native and wasm) gets the same bits, as long as it cuts a range into the same passes: every
 * Q8_0_PASS positions from the range's first, whatever slots hold them (a pass that wraps in a
 * sliding layer's ring reads its rows from two places), so a ring gives what a whole cache
 * gives (tests/test_context.c). A pass whose largest weight is below 2^-112 adds
 * nothing; one with an Inf or NaN weight goes through q8_0_rows_plain, so it gives Inf or NaN as
 * a float sum would. Per two rows and eight values the kernel takes two widening loads, two
 * interleaves, two integer dot products and two adds (the float form took twice as many
 * operations); q8_0_pass_ref is the same in scalar C, used by build/native/wick-nofold, which
 * tests/consistency.test.mjs compares with this build bit for bit. */
#define Q8_0_PASS 32
_Static_assert(Q8_0_PASS == ATT_DECODE_BLOCK, "attend_decode's blocks are q8_0_values' passes");

/* the bits of a float */
static inline float f32_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* the scales of four Q8_0 blocks (b, stride bytes apart) as floats, through quant_f16_table */
static inline __attribute__((always_inline)) v128_t q8_0_scales4(const uint8_t *b, size_t stride) {
    v128_t d = wasm_v128_load32_zero(&quant_f16_table[((const block_q8_0 *)b)->d]);
    d = wasm_v128_load32_lane(&quant_f16_table[((const block_q8_0 *)(b + stride))->d], d, 1);
    d = wasm_v128_load32_lane(&quant_f16_table[((const block_q8_0 *)(b + 2 * stride))->d], d, 2);
    return wasm_v128_load32_lane(&quant_f16_table[((const block_q8_0 *)(b + 3 * stride))->d], d, 3);
}

/* A pass's rows: the first n1 from b1, the rest from b2 (slot 0 of a ring the pass wraps in), stride
 * bytes apart: row t of the pass */
typedef struct {
    const uint8_t *b1, *b2;
    int n1;
    size_t stride;
} q8_0_rows;
static inline const uint8_t *q8_0_row(const q8_0_rows *r, int t) {
    return t < r->n1 ? r->b1 + (size_t)t * r->stride : r->b2 + (size_t)(t - r->n1) * r->stride;
}

#ifndef WICK_NO_FOLD
/* W[0 .. Q8_0_PASS) of a whole pass (rows b, stride bytes apart) and *inv = 2^(e − 14); 1, or 0
 * where the pass adds nothing, −1 where a weight is not finite */
static int q8_0_pass_weights(const float *p, const uint8_t *b, size_t stride, int16_t *W, float *inv) {
    _Alignas(16) float w[Q8_0_PASS];
    /* the largest |w| by its bits (a NaN's are above Inf's, above every finite one's) */
    v128_t mx = wasm_i32x4_splat(0), abs = wasm_i32x4_splat(0x7fffffff);
    for (int t = 0; t < Q8_0_PASS; t += 4, b += 4 * stride) {
        v128_t x = wasm_f32x4_mul(wasm_v128_load(p + t), q8_0_scales4(b, stride));
        wasm_v128_store(w + t, x);
        mx = wasm_i32x4_max(mx, wasm_v128_and(x, abs));
    }
    mx = wasm_i32x4_max(mx, wasm_i32x4_shuffle(mx, mx, 2, 3, 0, 1));
    mx = wasm_i32x4_max(mx, wasm_i32x4_shuffle(mx, mx, 1, 0, 3, 2));
    int32_t top = wasm_i32x4_extract_lane(mx, 0), e = top >> 23; /* biased: 2^(e − 127) ≤ |w| */
    if (top >= 0x7f800000) return -1;
    if (e < 15) return 0;
    v128_t scale = wasm_f32x4_splat(f32_of_bits((uint32_t)(268 - e) << 23)); /* 2^(14 − (e − 127)) */
    *inv = f32_of_bits((uint32_t)(e - 14) << 23);
    /* nearest (ties to even) by adding 1.5 · 2^23 (|w · scale| < 2^15): the integer is in the sum's low bits */
    v128_t magic = wasm_f32x4_splat(0x1.8p23f);
    for (int t = 0; t < Q8_0_PASS; t += 8) {
        v128_t lo = wasm_i32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(w + t), scale), magic), magic);
        v128_t hi = wasm_i32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(w + t + 4), scale), magic), magic);
        wasm_v128_store(W + t, wasm_i16x8_narrow_i32x4(lo, hi));
    }
    return 1;
}

/* o[0 .. 32) += inv · Σ W_t · q_t over a whole pass, two rows at a time: their values
 * interleaved into (a_i, b_i) pairs against (W_a, W_b), so one integer dot product takes both */
static __attribute__((noinline)) void q8_0_pass_sums(float *o, const int16_t *W, float inv, const uint8_t *b, size_t stride) {
    v128_t acc[8];
    UNROLL_4 for (int r = 0; r < 8; r++) acc[r] = wasm_i32x4_splat(0);
    NO_UNROLL for (int t = 0; t < Q8_0_PASS; t += 2, b += 2 * stride) {
        v128_t w = wasm_v128_load32_splat(W + t);
        const int8_t *qa = ((const block_q8_0 *)b)->qs, *qb = ((const block_q8_0 *)(b + stride))->qs;
        UNROLL_4 for (int r = 0; r < 4; r++) {
            v128_t x = wasm_i16x8_load8x8(qa + 8 * r), y = wasm_i16x8_load8x8(qb + 8 * r);
            acc[2 * r] = wasm_i32x4_add(acc[2 * r], wasm_i32x4_dot_i16x8(wasm_i16x8_shuffle(x, y, 0, 8, 1, 9, 2, 10, 3, 11), w));
            acc[2 * r + 1] = wasm_i32x4_add(acc[2 * r + 1], wasm_i32x4_dot_i16x8(wasm_i16x8_shuffle(x, y, 4, 12, 5, 13, 6, 14, 7, 15), w));
        }
    }
    v128_t s = wasm_f32x4_splat(inv);
    UNROLL_4 for (int r = 0; r < 8; r++)
        wasm_v128_store(o + 4 * r, wasm_f32x4_add(wasm_v128_load(o + 4 * r), wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc[r]), s)));
}

#else
/* q8_0_pass_weights and q8_0_pass_sums in scalar C (build/native/wick-nofold) */
static void q8_0_pass_ref(float *o, const float *p, const q8_0_rows *rows, int m) {
    float w[Q8_0_PASS];
    uint32_t top = 0;
    for (int t = 0; t < m; t++) {
        w[t] = p[t] * quant_f16_to_f32(((const block_q8_0 *)q8_0_row(rows, t))->d);
        uint32_t u;
        memcpy(&u, &w[t], sizeof u);
        if ((u & 0x7fffffffu) > top) top = u & 0x7fffffffu;
    }
    if (top >= 0x7f800000u) {
        for (int t = 0; t < m; t++) q8_0_rows_plain(o, q8_0_row(rows, t), rows->stride, p + t, 1);
        return;
    }
    int e = (int)(top >> 23);
    if (e < 15) return;
    float scale = f32_of_bits((uint32_t)(268 - e) << 23), inv = f32_of_bits((uint32_t)(e - 14) << 23);
    int32_t W[Q8_0_PASS], sum[QK8_0] = {0};
    for (int t = 0; t < m; t++) {
        float r = nearbyintf(w[t] * scale);
        W[t] = r > 32767.0f ? 32767 : (int32_t)r;
    }
    for (int t = 0; t < m; t++)
        for (int i = 0; i < QK8_0; i++) sum[i] += W[t] * ((const block_q8_0 *)q8_0_row(rows, t))->qs[i];
    for (int i = 0; i < QK8_0; i++) o[i] += (float)sum[i] * inv;
}
#endif

/* o[0 .. 32) += Σ p[t] · v_t over one pass of m ≤ Q8_0_PASS Q8_0 blocks: the first n1 from b1,
 * the rest from b2 (stride bytes apart) */
static __attribute__((noinline)) void q8_0_values_pass(float *o, const float *p, const uint8_t *b1, int n1, const uint8_t *b2, int m, size_t stride) {
    q8_0_rows rows = {b1, b2, n1, stride};
#ifdef WICK_NO_FOLD
    q8_0_pass_ref(o, p, &rows, m);
#else
    _Alignas(16) int16_t W[Q8_0_PASS];
    _Alignas(16) float pp[Q8_0_PASS];
    block_q8_0 tmp[Q8_0_PASS];
    if (m < Q8_0_PASS || n1 < m) { /* a short pass (a range's last) or one that wraps: its rows side by side, zeros after */
        for (int t = 0; t < Q8_0_PASS; t++) {
            if (t < m) memcpy(&tmp[t], q8_0_row(&rows, t), sizeof tmp[t]);
            else memset(&tmp[t], 0, sizeof tmp[t]);
            pp[t] = t < m ? p[t] : 0.0f;
        }
        b1 = (const uint8_t *)tmp, stride = sizeof tmp[0], p = pp;
    }
    float inv;
    int k = q8_0_pass_weights(p, b1, stride, W, &inv);
    if (k > 0) q8_0_pass_sums(o, W, inv, b1, stride);
    else if (k < 0) q8_0_rows_plain(o, b1, stride, p, m);
#endif
}

/* out[0 .. hd) = Σ p[j] · v_j over positions lo … hi of a Q8_0 value cache, for one query head
 * (attend_heads): passes of Q8_0_PASS positions from lo, whatever slots hold them (a pass may wrap
 * in a sliding layer's ring), as attend_decode's blocks run, so the two give the same bits, and a
 * ring the same as a whole cache */
static void q8_0_values(const attn_args *a, size_t v_off, int lo, int hi, const float *p, float *out, int hd) {
    const struct wick_ctx *c = a->c;
    const uint8_t *base = (const uint8_t *)kv_at(c, c->v_cache, a->layer, 0) + v_off;
    size_t row = kv_row_bytes(c, c->v_cache, a->layer);
    int n_slots = c->kv_slots[a->layer];
    memset(out, 0, (size_t)hd * sizeof(float));
    for (int j = lo; j <= hi; j += Q8_0_PASS) {
        int m = hi - j + 1 < Q8_0_PASS ? hi - j + 1 : Q8_0_PASS, slot = kv_slot(c, a->layer, j);
        int n1 = m < n_slots - slot ? m : n_slots - slot; /* a sliding layer's ring wraps back to slot 0 */
        for (int b = 0; b < hd / QK8_0; b++)
            q8_0_values_pass(out + QK8_0 * b, p + j, base + (size_t)slot * row + b * sizeof(block_q8_0), n1, base + b * sizeof(block_q8_0), m, row);
    }
}

/* Loads two vectors from every 64 bytes (at 0 and 32) of `span` bytes of the n rows at p (stride
 * bytes apart) into *touch, in ascending order. WebAssembly has no prefetch instruction: a burst
 * of loads whose results nothing waits for puts many cache misses in flight at once, where the
 * kernels' own loads, spread through their arithmetic, would have a few; attend_decode touches
 * the next block's rows so. Two loads a line read the cache faster than one (the relaxed build's
 * Q8_0 attention at 2,048 positions: 4.9-5.5 against 5.1-6.4 ms, alternating runs; on this host a
 * plain loop reads 19 GB/s so against 16), four no faster than two. LLVM 19 had unrolled the
 * loop by four with each four's loads in descending order, which cost about a millisecond a
 * step: the loop stays rolled. */
static __attribute__((noinline)) void touch_rows(const uint8_t *p, size_t stride, int n, size_t span, v128_t *touch) {
    v128_t t = *touch;
    for (int r = 0; r < n; r++, p += stride)
        NO_UNROLL for (size_t i = 0; i + 48 <= span; i += 64) t = wasm_v128_or(t, wasm_v128_or(wasm_v128_load(p + i), wasm_v128_load(p + i + 32)));
    *touch = t;
}

/* rows of the next block that the layer's cache holds after slot's block (0 past its end) */
static inline int ahead_rows(int slot, int n_slots) {
    int n = n_slots - slot - ATT_DECODE_BLOCK;
    return n < 0 ? 0 : n < ATT_DECODE_BLOCK ? n : ATT_DECODE_BLOCK;
}

/* Scores of 4 · n4 consecutive Q8_0 key rows (k, k_row bytes apart) against one query rounded to
 * Q8_0 (qq: hd / 32 blocks) into s[0 .. 4 · n4): per block and four rows, the integer dot product
 * of each row with the query (i16 lanes, exact), the four rows' sums side by side, then s + (float)
 * isum · (d_k · d_q), block after block from 0: the operations of the Q8_0 tile kernel (gemm_b32 in
 * kernels_simd.c; block_keys_dots) for 4-row tiles and one token, so the same scores bit for bit.
 * The scales convert through quant_f16_table, as the tile kernel's do. One call takes a head's
 * rows of a whole block, so the query's blocks are widened and the call made once a block, not
 * once per four rows; the loop over the groups of four stays rolled. (V8 still puts a group's
 * sixteen loads first and spills about six vectors: about a tenth of the keys' time.) */
static __attribute__((noinline)) void q8_0_keys(const uint8_t *k, size_t k_row, const block_q8_0 *qq, int hd, float *s, int n4) {
    for (int b = 0; b < hd / QK8_0; b++, k += sizeof(block_q8_0)) {
        const int8_t *y = qq[b].qs;
        v128_t y0 = wasm_i16x8_load8x8(y), y1 = wasm_i16x8_load8x8(y + 8), y2 = wasm_i16x8_load8x8(y + 16), y3 = wasm_i16x8_load8x8(y + 24);
        v128_t dq = wasm_f32x4_splat(quant_f16_table[qq[b].d]);
        const uint8_t *x = k;
        NO_UNROLL for (int g = 0; g < n4; g++, x += 4 * k_row) {
            v128_t d[4];
            UNROLL_4 for (int r = 0; r < 4; r++) {
                const int8_t *q = ((const block_q8_0 *)(x + (size_t)r * k_row))->qs;
                d[r] = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(q), y0), wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(q + 8), y1)),
                                      wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(q + 16), y2), wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(q + 24), y3)));
            }
            v128_t isum = sum4_lanes(d[0], d[1], d[2], d[3]);
            v128_t acc = b ? wasm_v128_load(s + 4 * g) : wasm_f32x4_splat(0);
            wasm_v128_store(s + 4 * g, wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(isum), wasm_f32x4_mul(q8_0_scales4(x, k_row), dq))));
        }
    }
}

/* q: the range's queries, folded (F16) or as they are (Q8_0) */
static void attend_decode(const attn_args *a, int t, int h0, int nq, const float *q, float *scores) {
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    int layer = a->layer, hd = mc->head_dim, pos = a->pos0 + t, lo = att_first(c, layer, pos), hi = att_last(a, pos);
    int group = mc->n_heads / mc->n_kv_heads, kvh0 = h0 / group, n_kv = (h0 + nq - 1) / group + 1 - kvh0;
    size_t n_ctx = (size_t)c->n_ctx, stride = (size_t)kv_dim(mc);
    float *out = c->xb2 + (size_t)t * mc->q_dim + (size_t)h0 * hd;
    int q8 = c->kv_type == WICK_KV_Q8_0;
    /* the range's KV heads from kvh0: query head h0 + h reads KV head (h0 + h) / group, kv(h) on */
    size_t k_head = kv_type_bytes(c->kv_type, (size_t)hd), v_head = kv_type_bytes(c->kv_type_v, (size_t)hd);
    size_t k_row = kv_row_bytes(c, c->k_cache, layer), v_row = kv_row_bytes(c, c->v_cache, layer);
#define kv(h) ((size_t)((h0 + (h)) / group - kvh0))
    const uint8_t *kbase = (const uint8_t *)kv_at(c, c->k_cache, layer, 0) + (size_t)kvh0 * k_head;
    const uint8_t *vbase = (const uint8_t *)kv_at(c, c->v_cache, layer, 0) + (size_t)kvh0 * v_head;
    int n_slots = c->kv_slots[layer], slot0 = kv_slot(c, layer, lo);
    v128_t touch = wasm_i32x4_splat(0);
    if (q8) { /* Q8_0: a block of slots across the range at a time (q8_0_keys, four rows at a time; the tile kernel for the last one to three) */
        const quant_type *kt = quant_get(kv_quant_type(c->kv_type));
        size_t q_row = (size_t)hd / QK8_0 * sizeof(block_q8_0);
        uint8_t *qq = (uint8_t *)(scores + (size_t)ATT_SCORE_ROWS * n_ctx + MAX_HEAD_DIM);
        for (int h = 0; h < nq; h++) quant_q8_0_from_float_simd(q + (size_t)h * hd, qq + (size_t)h * q_row, hd);
        for (int j = lo, slot = slot0; j <= hi;) {
            int n = hi - j + 1;
            if (n > ATT_DECODE_BLOCK) n = ATT_DECODE_BLOCK;
            if (n > n_slots - slot) n = n_slots - slot; /* a ring's rows wrap back to slot 0 */
            const uint8_t *k = kbase + (size_t)slot * k_row;
            touch_rows(k + ATT_DECODE_BLOCK * k_row, k_row, ahead_rows(slot, n_slots), (size_t)n_kv * k_head, &touch);
            int n4 = n & ~3;
            for (int h = 0; h < nq; h++) {
                const uint8_t *qh = qq + (size_t)h * q_row;
                float *sh = scores + (size_t)h * n_ctx + j;
                if (n4) q8_0_keys(k + kv(h) * k_head, k_row, (const block_q8_0 *)qh, hd, sh, n4 / 4);
                if (n > n4) kt->gemm(hd, k + (size_t)n4 * k_row + kv(h) * k_head, k_row, n - n4, qh, q_row, 1, sh + n4, n_ctx);
            }
            j += n, slot += n;
            if (slot == n_slots) slot = 0;
        }
    }
    /* F16 q·k: four positions at a time while four slots follow one another, else one; before each
     * block, the next block's rows touched */
    for (int j = lo, slot = slot0; !q8 && j <= hi;) {
        const uint8_t *k = kbase + (size_t)slot * k_row;
        if ((j - lo) % ATT_DECODE_BLOCK == 0) touch_rows(k + ATT_DECODE_BLOCK * k_row, k_row, ahead_rows(slot, n_slots), (size_t)n_kv * k_head, &touch);
        if (hi - j >= 3 && n_slots - slot >= 4) {
            for (int h = 0; h < nq; h++) {
                const float *qh = q + (size_t)h * hd;
                const uint16_t *kh = (const uint16_t *)(k + kv(h) * k_head);
                v128_t s[4][2];
                UNROLL_4 for (int r = 0; r < 4; r++) s[r][0] = s[r][1] = wasm_f32x4_splat(0);
                for (int i = 0; i < hd; i += 8) {
                    v128_t q0 = wasm_v128_load(qh + i), q1 = wasm_v128_load(qh + i + 4);
                    UNROLL_4 for (int r = 0; r < 4; r++) {
                        v128_t lo8, hi8;
                        f16x8_to_f32(kh + (size_t)r * stride + i, &lo8, &hi8, 1);
                        s[r][0] = wasm_f32x4_add(s[r][0], wasm_f32x4_mul(lo8, q0));
                        s[r][1] = wasm_f32x4_add(s[r][1], wasm_f32x4_mul(hi8, q1));
                    }
                }
                wasm_v128_store(scores + (size_t)h * n_ctx + j,
                                sum4_scores(wasm_f32x4_add(s[0][0], s[0][1]), wasm_f32x4_add(s[1][0], s[1][1]),
                                            wasm_f32x4_add(s[2][0], s[2][1]), wasm_f32x4_add(s[3][0], s[3][1])));
            }
            j += 4, slot += 4;
        } else { /* the same sums through the row conversion and dot_f32 */
            float *row = scores + (size_t)ATT_SCORE_ROWS * n_ctx;
            for (int h = 0; h < nq; h++) {
                kv_row_to_f32(WICK_KV_F16, k + kv(h) * k_head, row, hd, 1);
                scores[(size_t)h * n_ctx + j] = dot_f32(q + (size_t)h * hd, row, hd);
            }
            j++, slot++;
        }
        if (slot == n_slots) slot = 0;
    }
    for (int h = 0; h < nq; h++) scores_to_probs(mc, scores + (size_t)h * n_ctx, lo, hi, !q8);
    memset(out, 0, (size_t)nq * hd * sizeof(float));
    /* blocks of ATT_DECODE_BLOCK positions from lo (Q8_0: q8_0_values' passes), the first n1 rows
     * from slot, the rest from slot 0 where a ring wraps inside the block */
    for (int j = lo, slot = slot0; j <= hi;) {
        int m = hi - j + 1 < ATT_DECODE_BLOCK ? hi - j + 1 : ATT_DECODE_BLOCK, n1 = m < n_slots - slot ? m : n_slots - slot;
        const uint8_t *v = vbase + (size_t)slot * v_row;
        touch_rows(v + ATT_DECODE_BLOCK * v_row, v_row, ahead_rows(slot, n_slots), (size_t)n_kv * v_head, &touch);
        for (int h = 0; h < nq; h++) {
            const float *p = scores + (size_t)h * n_ctx + j;
            float *o = out + (size_t)h * hd;
            const uint8_t *vh = v + kv(h) * v_head, *vh0 = vbase + kv(h) * v_head;
            for (int b = 0; b < hd / 32; b++)
                if (q8)
                    q8_0_values_pass(o + 32 * b, p, vh + b * sizeof(block_q8_0), n1, vh0 + b * sizeof(block_q8_0), m, v_row);
                else {
                    f16_values_block(o + 32 * b, p, (const uint16_t *)vh + 32 * b, stride, n1);
                    if (m > n1) f16_values_block(o + 32 * b, p + n1, (const uint16_t *)vh0 + 32 * b, stride, m - n1);
                }
        }
        j += m, slot += m;
        if (slot >= n_slots) slot -= n_slots;
    }
#undef kv
    wasm_v128_store(scores + (size_t)ATT_SCORE_ROWS * n_ctx, touch); /* kept: the loads stay */
}

/* Decode items of a->heads query heads (attend_decode); an F16 range whose queries cannot be
 * folded goes a head at a time through attend_heads */
static void attention_decode_task(void *arg, int ith, int nth) {
    attn_args *a = arg;
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    float *scores = c->att + (size_t)ith * attention_scratch_floats(c->n_ctx);
    float *qf = scores + (size_t)ATT_SCORE_ROWS * c->n_ctx + MAX_HEAD_DIM;
    for (int item = ith; item < mc->n_heads / a->heads; item += nth) {
        int h0 = item * a->heads, group = mc->n_heads / mc->n_kv_heads;
        const float *q = c->q + (size_t)h0 * mc->head_dim;
        if (c->kv_type == WICK_KV_Q8_0)
            attend_decode(a, 0, h0, a->heads, q, scores);
        else if (fold_query(q, qf, a->heads * mc->head_dim))
            attend_decode(a, 0, h0, a->heads, qf, scores);
        else
            for (int h = h0; h < h0 + a->heads; h++) attend_heads(a, 0, h / group, h, 1, scores);
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

/* Query heads per decode item (attend_decode), 0 where it does not take the token: the largest
 * divisor of n_heads up to ATT_SCORE_ROWS that gives every thread as many items, or at least two
 * each (the wider the range, the longer the stretch of each cached row read at once). A group
 * that attention_heads_per_item keeps together (one thread: the heads of a KV head share each
 * converted row in attend_heads) stays with attend_heads. */
static int attention_decode_heads(const struct wick_ctx *c, int layer) {
    const model_config *mc = model_layer_config(c->model, layer);
    if (mc->head_dim % 32 || !(kv_both_f16(c) || (c->kv_type == WICK_KV_Q8_0 && c->kv_type_v == WICK_KV_Q8_0)) ||
        (mc->n_heads != mc->n_kv_heads && attention_heads_per_item(c, layer, 1) > 1))
        return 0;
    int best = 1, threads = pool_size(c->pool);
    for (int r = 2; r <= ATT_SCORE_ROWS && r <= mc->n_heads; r++) {
        int items = mc->n_heads / r;
        if (mc->n_heads % r == 0 && (items % threads == 0 || items >= 2 * threads)) best = r;
    }
    return best;
}

/* Non-causal attention over an F32 cache (the encoders: a vision tower's patches, an embedding
 * model's text) as tiles, the way flash attention runs: a work item is one query head and a block
 * of up to ATT_TILE_Q queries, which walk the keys in blocks of ATT_TILE_K. Each key block is
 * transposed into the thread's scratch once for all the item's queries, four queries at a time
 * score it with the keys across the lanes (a query value splatted against eight keys: no
 * horizontal sums, no row copies), keep a running maximum and sum of e^(s − max) per query
 * (the sums so far and the partial outputs scaled by e^(old max − new max) when it grows), and
 * add P·V with the value rows read in place; each output is divided by its sum at the end. The
 * K and V of a head are read once per query block (attend_heads read them once per query, through
 * a row copy: a 4,096-patch tower streamed megabytes per query). Every exponential is
 * exp_f32x4's, so native and wasm agree bit for bit; a query's result depends only on the keys
 * (not on the other queries of its block), so it does not depend on the thread count either. */
#define ATT_TILE_Q 64
#define ATT_TILE_K 32

/* the queries per item that fit the thread's scratch (a multiple of 4), 0 where fewer than 4 do */
static int tiled_queries(const struct wick_ctx *c, int hd, int n_tok) {
    long avail = (long)attention_scratch_floats(c->n_ctx) - (long)hd * ATT_TILE_K - 4L * ATT_TILE_K;
    long q = avail > 0 ? avail / (hd + 2) : 0;
    if (q > ATT_TILE_Q) q = ATT_TILE_Q;
    if (q > ((n_tok + 3) & ~3)) q = (n_tok + 3) & ~3;
    return (int)(q & ~3L);
}

/* The tiled form takes a non-causal batch of at least 16 tokens over an F32 cache, on a layer
 * without a sliding window or a soft cap (every query sees the same keys), heads of a multiple of
 * 8 values (all that wick takes). */
static int attention_tiles(const struct wick_ctx *c, int layer, int n_tok, bool causal) {
    const model_config *mc = model_layer_config(c->model, layer);
    if (causal || n_tok < 16 || c->kv_type != WICK_KV_F32 || c->kv_type_v != WICK_KV_F32 || c->model->layers[layer].sliding ||
        mc->attn_softcap > 0 || mc->head_dim % 8)
        return 0;
    return tiled_queries(c, mc->head_dim, n_tok);
}

/* s[t][0 .. 32) = scale · q_t · k_j for four queries q[t] and the key block kt (hd rows of
 * ATT_TILE_K: component i of every key of the block) */
static __attribute__((noinline)) void tile_scores(const float *const q[4], const float *kt, int hd, float scale, float *s) {
    for (int jb = 0; jb < ATT_TILE_K; jb += 8) {
        v128_t a[4][2];
        for (int t = 0; t < 4; t++) a[t][0] = a[t][1] = wasm_f32x4_splat(0);
        const float *k = kt + jb;
        for (int i = 0; i < hd; i++, k += ATT_TILE_K) {
            v128_t k0 = wasm_v128_load(k), k1 = wasm_v128_load(k + 4);
            for (int t = 0; t < 4; t++) {
                v128_t qi = wasm_v128_load32_splat(q[t] + i);
                a[t][0] = wasm_f32x4_add(a[t][0], wasm_f32x4_mul(qi, k0));
                a[t][1] = wasm_f32x4_add(a[t][1], wasm_f32x4_mul(qi, k1));
            }
        }
        v128_t sc = wasm_f32x4_splat(scale);
        for (int t = 0; t < 4; t++) {
            wasm_v128_store(s + t * ATT_TILE_K + jb, wasm_f32x4_mul(a[t][0], sc));
            wasm_v128_store(s + t * ATT_TILE_K + jb + 4, wasm_f32x4_mul(a[t][1], sc));
        }
    }
}

/* o[t][0 .. hd) += Σ_j p[t][j] · v_j over the nk value rows from v (stride floats apart), four
 * queries at a time, eight values of each row per pass */
static __attribute__((noinline)) void tile_values(float *o, const float *p, const float *v, size_t stride, int nk, int hd) {
    for (int i = 0; i < hd; i += 8) {
        v128_t a[4][2];
        for (int t = 0; t < 4; t++) a[t][0] = wasm_v128_load(o + t * hd + i), a[t][1] = wasm_v128_load(o + t * hd + i + 4);
        const float *vj = v + i;
        for (int j = 0; j < nk; j++, vj += stride) {
            v128_t v0 = wasm_v128_load(vj), v1 = wasm_v128_load(vj + 4);
            for (int t = 0; t < 4; t++) {
                v128_t pj = wasm_v128_load32_splat(p + t * ATT_TILE_K + j);
                a[t][0] = wasm_f32x4_add(a[t][0], wasm_f32x4_mul(pj, v0));
                a[t][1] = wasm_f32x4_add(a[t][1], wasm_f32x4_mul(pj, v1));
            }
        }
        for (int t = 0; t < 4; t++) wasm_v128_store(o + t * hd + i, a[t][0]), wasm_v128_store(o + t * hd + i + 4, a[t][1]);
    }
}

/* the running softmax of four queries over a key block's scores s (nk of ATT_TILE_K valid): m[t]
 * the largest score so far, l[t] the sum of e^(s − m[t]); s becomes e^(s − m[t]) (0 past nk) and
 * the partial outputs o[t] are rescaled when m[t] grows */
static void tile_softmax(float *s, int nk, float *m, float *l, float *o, int hd) {
    for (int t = 0; t < 4; t++) {
        float *st = s + t * ATT_TILE_K, mx = m[t];
        if (nk == ATT_TILE_K) { /* a whole block: the largest four lanes at a time */
            v128_t v = wasm_v128_load(st);
            for (int j = 4; j < ATT_TILE_K; j += 4) v = wasm_f32x4_pmax(v, wasm_v128_load(st + j));
            const float l0 = wasm_f32x4_extract_lane(v, 0), l1 = wasm_f32x4_extract_lane(v, 1);
            const float l2 = wasm_f32x4_extract_lane(v, 2), l3 = wasm_f32x4_extract_lane(v, 3);
            const float a = l0 > l1 ? l0 : l1, b = l2 > l3 ? l2 : l3, ab = a > b ? a : b;
            mx = ab > mx ? ab : mx;
        } else
            for (int j = 0; j < nk; j++) mx = st[j] > mx ? st[j] : mx;
        if (mx > m[t]) { /* e^(old − new): 0 the first time (old −∞) */
            float f = wasm_f32x4_extract_lane(exp_f32x4(wasm_f32x4_splat(m[t] - mx)), 0);
            l[t] *= f;
            v128_t fv = wasm_f32x4_splat(f);
            for (int i = 0; i < hd; i += 4) wasm_v128_store(o + t * hd + i, wasm_f32x4_mul(wasm_v128_load(o + t * hd + i), fv));
            m[t] = mx;
        }
        v128_t mv = wasm_f32x4_splat(mx);
        for (int j = 0; j < ATT_TILE_K; j += 4) wasm_v128_store(st + j, exp_f32x4(wasm_f32x4_sub(wasm_v128_load(st + j), mv)));
        for (int j = nk; j < ATT_TILE_K; j++) st[j] = 0;
        v128_t sum = wasm_v128_load(st); /* four lanes, then across them: the same order in every build */
        for (int j = 4; j < ATT_TILE_K; j += 4) sum = wasm_f32x4_add(sum, wasm_v128_load(st + j));
        l[t] += (wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 1)) +
                (wasm_f32x4_extract_lane(sum, 2) + wasm_f32x4_extract_lane(sum, 3));
    }
}

static void attention_tiles_task(void *arg, int ith, int nth) {
    attn_args *a = arg;
    struct wick_ctx *c = a->c;
    const model_config *mc = model_layer_config(c->model, a->layer);
    const int hd = mc->head_dim, group = mc->n_heads / mc->n_kv_heads, qb = a->heads;
    const int last = att_last(a, a->pos0), n_blocks = (a->n_tok + qb - 1) / qb;
    const size_t stride = (size_t)kv_dim(mc);
    float *kt = c->att + (size_t)ith * attention_scratch_floats(c->n_ctx); /* hd rows of ATT_TILE_K */
    float *s = kt + (size_t)hd * ATT_TILE_K, *m = s + 4 * ATT_TILE_K, *l = m + qb, *o = l + qb;
    for (long item = ith; item < (long)n_blocks * mc->n_heads; item += nth) {
        const int h = (int)(item % mc->n_heads), t0 = (int)(item / mc->n_heads) * qb;
        const int nq = a->n_tok - t0 < qb ? a->n_tok - t0 : qb;
        const float *kbase = (const float *)kv_at(c, c->k_cache, a->layer, 0) + (size_t)(h / group) * hd;
        const float *vbase = (const float *)kv_at(c, c->v_cache, a->layer, 0) + (size_t)(h / group) * hd;
        for (int t = 0; t < qb; t++) m[t] = -INFINITY, l[t] = 0;
        memset(o, 0, (size_t)qb * hd * sizeof(float));
        for (int j0 = 0; j0 <= last; j0 += ATT_TILE_K) {
            const int nk = last + 1 - j0 < ATT_TILE_K ? last + 1 - j0 : ATT_TILE_K;
            for (int jj = 0; jj < ATT_TILE_K; jj++) {
                if (jj >= nk) { /* past the last key: zeros, their scores dropped */
                    for (int i = 0; i < hd; i++) kt[(size_t)i * ATT_TILE_K + jj] = 0;
                    continue;
                }
                const float *kr = kbase + (size_t)(j0 + jj) * stride;
                for (int i = 0; i < hd; i++) kt[(size_t)i * ATT_TILE_K + jj] = kr[i];
            }
            for (int u = 0; u < nq; u += 4) {
                const float *q[4];
                for (int t = 0; t < 4; t++) /* past the block's last query: its first again, dropped */
                    q[t] = c->q + (size_t)(t0 + (u + t < nq ? u + t : u)) * mc->q_dim + (size_t)h * hd;
                tile_scores(q, kt, hd, mc->attn_scale, s);
                tile_softmax(s, nk, m + u, l + u, o + (size_t)u * hd, hd);
                tile_values(o + (size_t)u * hd, s, vbase + (size_t)j0 * stride, stride, nk, hd);
            }
        }
        for (int t = 0; t < nq; t++) {
            float *out = c->xb2 + (size_t)(t0 + t) * mc->q_dim + (size_t)h * hd;
            v128_t inv = wasm_f32x4_splat(1.0f / l[t]);
            for (int i = 0; i < hd; i += 4) wasm_v128_store(out + i, wasm_f32x4_mul(wasm_v128_load(o + (size_t)t * hd + i), inv));
        }
    }
}

void attention(struct wick_ctx *c, int layer, int pos0, int n_tok, bool causal) {
    int tiles = attention_tiles(c, layer, n_tok, causal);
    if (tiles) {
        attn_args a = {c, layer, pos0, n_tok, causal, tiles};
        pool_run(c->pool, attention_tiles_task, &a);
        return;
    }
    int decode_heads = n_tok == 1 ? attention_decode_heads(c, layer) : 0;
    if (decode_heads) {
        attn_args a = {c, layer, pos0, n_tok, causal, decode_heads};
        pool_run(c->pool, attention_decode_task, &a);
        return;
    }
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
