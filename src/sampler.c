/* sampler.c — the sampling chain of sampler.h (penalties → bias → top-k → top-p → min-p →
 * temperature → draw), its deterministic exp and generator, and the stop-string matcher.
 *
 * Cost per call for n_vocab tokens: a copy of the logits and a SIMD pass for the maximum, then
 *   top_k > 0: a size-k heap over the vocabulary; blocks of 16 logits none of which beats the
 *              heap's worst are skipped with one SIMD comparison; the rest works on k tokens;
 *   top_k = 0: with top_p < 1, one SIMD pass of exp over all tokens for the normaliser; then
 *              the min-p head when it is the shorter one, else the tokens within 8 logits of
 *              the top when they hold the nucleus (the usual case for a model), else a
 *              histogram of mass by logit depth whose boundary bin alone gets sorted;
 *              with only min_p, a logit threshold picks the few tokens that need an exp;
 *              with no truncation, one SIMD pass of exp over all tokens and no sort at all.
 * The draw walks per-64-token block sums first, then one block.
 *
 * Precision: each weight e^((z - z_max)/T) comes from exp_f32x4 (simd.h; attention's softmax
 * uses it too: single precision, about 1e-7 relative, 4 lanes at a time); sums, normalisation,
 * cumulative sums and the draw are in double. Every step is a fixed sequence of IEEE operations
 * (no libm on any path that decides a token, no FMA: build with -ffp-contract=off), so native and
 * wasm draw the same tokens. */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd.h"

/* One token for sorting and selection. */
typedef struct {
    float logit;     /* after penalties and bias */
    int32_t id;
    float weight;    /* e^(z - z_max) while the nucleus is found */
} sampler_candidate;

/* Weights are summed in blocks of this many tokens; the draw walks the block sums first. */
#define WEIGHT_BLOCK 64
/* The nucleus histogram: bins of 1/32 logit below z_max, 64 logits deep (e^-64 ≈ 1.6e-28: the
 * last bin holds everything deeper, whose single-precision weights are 0 beyond 86 logits). */
#define NUCLEUS_BINS_PER_LOGIT 32
#define NUCLEUS_BINS (64 * NUCLEUS_BINS_PER_LOGIT)

struct wick_sampler {
    wick_sampler_params params; /* bias pointers point at the copies below */
    int32_t *bias_tokens;
    float *bias_values;
    int32_t n_vocab;

    float *work;                /* n_vocab logits after steps 1–2 */

    /* The candidate list, the tokens still in play. When cand_all, it is the whole vocabulary
     * in id order (ids implicit, logits in work, excluded tokens weigh 0); otherwise the first
     * n_cand entries of cand_id / cand_logit. cand_weight is parallel to the list. */
    bool cand_all;
    int32_t n_cand;
    bool cand_sorted;           /* list in (logit desc, id asc) order */
    int32_t *cand_id;           /* n_vocab */
    float *cand_logit;          /* n_vocab */
    float *cand_weight;         /* n_vocab; after a draw, the final weights: p = w / weight_total */
    double weight_total;
    double *block_sum;          /* ceil(n_vocab / WEIGHT_BLOCK) */
    sampler_candidate *scratch; /* n_vocab: the top-k heap, the nucleus boundary bin */
    double *bin_mass;           /* 4 × NUCLEUS_BINS */

    int32_t *history;           /* ring of the last repeat_last_n accepted tokens */
    int32_t history_len;        /* <= repeat_last_n */
    int32_t history_next;       /* slot the next accepted token goes to */
    int32_t *counts;            /* n_vocab; all zero between calls (invariant) */
    int32_t *distinct;          /* repeat_last_n: distinct tokens of the window */

    uint64_t rng;
    int32_t last_drawn;
};

/* ---- deterministic exp: exp_f32x4 (simd.h) ---- */

/* w[i] = e^((z[i] - z_max)·scale) for 4 logits; their values in double added to acc_lo (lanes
 * 0, 1) and acc_hi (lanes 2, 3). */
static inline void exp_weights4(const float *z4, v128_t vmax, v128_t vscale, float *w4,
                                v128_t *acc_lo, v128_t *acc_hi) {
    v128_t e = exp_f32x4(wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(z4), vmax), vscale));
    wasm_v128_store(w4, e);
    *acc_lo = wasm_f64x2_add(*acc_lo, wasm_f64x2_promote_low_f32x4(e));
    *acc_hi = wasm_f64x2_add(*acc_hi, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(e, e, 2, 3, 2, 3)));
}

/* w[i] = e^((z[i] - z_max)·scale) for n logits (0 for -INFINITY, NaN, and below e^-86). Returns their sum,
 * taken as per-WEIGHT_BLOCK block sums added in order; block_sum, if not NULL, receives those. */
static double exp_weights(const float *z, int32_t n, float z_max, float scale, float *w,
                          double *block_sum) {
    const v128_t vmax = wasm_f32x4_splat(z_max), vscale = wasm_f32x4_splat(scale);
    double total = 0.0;
    for (int32_t start = 0, b = 0; start < n; start += WEIGHT_BLOCK, b++) {
        int32_t end = n - start > WEIGHT_BLOCK ? start + WEIGHT_BLOCK : n;
        v128_t acc_lo = wasm_f64x2_splat(0.0), acc_hi = acc_lo;
        int32_t i = start;
        for (; i + 4 <= end; i += 4) exp_weights4(z + i, vmax, vscale, w + i, &acc_lo, &acc_hi);
        if (i < end) { /* the last 1–3 logits, padded with -INFINITY (weight 0) */
            float in[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
            float out[4];
            memcpy(in, z + i, (size_t)(end - i) * sizeof *in);
            exp_weights4(in, vmax, vscale, out, &acc_lo, &acc_hi);
            memcpy(w + i, out, (size_t)(end - i) * sizeof *out);
        }
        double sum = (wasm_f64x2_extract_lane(acc_lo, 0) + wasm_f64x2_extract_lane(acc_lo, 1)) +
                     (wasm_f64x2_extract_lane(acc_hi, 0) + wasm_f64x2_extract_lane(acc_hi, 1));
        if (block_sum) block_sum[b] = sum;
        total += sum;
    }
    return total;
}

/* The largest logit, ignoring NaN; -INFINITY if there is none. */
static float max_logit(const float *z, int32_t n) {
    v128_t acc[4];
    for (int j = 0; j < 4; j++) acc[j] = wasm_f32x4_splat(-INFINITY);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 4; j++) /* pmax(acc, x) = acc < x ? x : acc: a NaN x is skipped */
            acc[j] = wasm_f32x4_pmax(acc[j], wasm_v128_load(z + i + 4 * j));
    v128_t m = wasm_f32x4_pmax(wasm_f32x4_pmax(acc[0], acc[1]), wasm_f32x4_pmax(acc[2], acc[3]));
    float best = -INFINITY;
    float lanes[4];
    wasm_v128_store(lanes, m);
    for (int j = 0; j < 4; j++) best = lanes[j] > best ? lanes[j] : best;
    for (; i < n; i++) best = z[i] > best ? z[i] : best;
    return best;
}

/* Whether any of the 16 floats at p is above t (greater, or greater-or-equal with or_equal). */
static inline bool any_of_16_above(const float *p, v128_t t, bool or_equal) {
    v128_t a = wasm_v128_load(p), b = wasm_v128_load(p + 4), c = wasm_v128_load(p + 8),
           d = wasm_v128_load(p + 12);
    v128_t hit = or_equal
        ? wasm_v128_or(wasm_v128_or(wasm_f32x4_ge(a, t), wasm_f32x4_ge(b, t)),
                       wasm_v128_or(wasm_f32x4_ge(c, t), wasm_f32x4_ge(d, t)))
        : wasm_v128_or(wasm_v128_or(wasm_f32x4_gt(a, t), wasm_f32x4_gt(b, t)),
                       wasm_v128_or(wasm_f32x4_gt(c, t), wasm_f32x4_gt(d, t)));
    return wasm_v128_any_true(hit);
}

/* ---- generator ----------------------------------------------------------------------------- */

uint64_t sampler_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double sampler_uniform(uint64_t *state) {
    return (double)(sampler_rng_next(state) >> 11) * (1.0 / 9007199254740992.0); /* 2^-53 */
}

/* ---- parameters ---------------------------------------------------------------------------- */

void sampler_params_default(wick_sampler_params *p) {
    memset(p, 0, sizeof *p);
    p->temperature = 0.8f;
    p->top_k = 40;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.1f;
    p->repeat_last_n = 64;
    p->frequency_penalty = 0.0f;
    p->presence_penalty = 0.0f;
    p->seed = 0;
}

/* A history longer than this is surely a mistake (and would be a large allocation). */
#define SAMPLER_MAX_REPEAT_LAST_N (1 << 20)

static int validate(const wick_sampler_params *p, int32_t n_vocab, errmsg *err) {
    if (n_vocab <= 0) return errorf(err, WICK_ERR_INVALID_ARG, "sampler: n_vocab must be positive (got %.0f)", (double)n_vocab);
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: temperature must be a finite number >= 0 (got %g)", p->temperature);
    if (p->top_k < 0) return errorf(err, WICK_ERR_INVALID_ARG, "sampler: top_k must be >= 0, 0 = off (got %.0f)", (double)p->top_k);
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: top_p must be in [0, 1], 1 = off (got %g)", p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: min_p must be in [0, 1], 0 = off (got %g)", p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: repeat_penalty must be a finite number > 0, 1 = off (got %g)",
                    p->repeat_penalty);
    if (p->repeat_last_n < 0 || p->repeat_last_n > SAMPLER_MAX_REPEAT_LAST_N)
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: repeat_last_n must be in [0, 1048576] (got %.0f)", (double)p->repeat_last_n);
    if (!isfinite(p->frequency_penalty))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: frequency_penalty must be finite (got %g)", p->frequency_penalty);
    if (!isfinite(p->presence_penalty))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: presence_penalty must be finite (got %g)", p->presence_penalty);
    if (p->n_bias < 0) return errorf(err, WICK_ERR_INVALID_ARG, "sampler: n_bias must be >= 0 (got %.0f)", (double)p->n_bias);
    if (p->n_bias > 0 && (!p->bias_tokens || !p->bias_values))
        return errorf(err, WICK_ERR_INVALID_ARG, "sampler: %.0f logit biases but no token or value array", (double)p->n_bias);
    for (int32_t i = 0; i < p->n_bias; i++) {
        if (p->bias_tokens[i] < 0 || p->bias_tokens[i] >= n_vocab)
            return errorf(err, WICK_ERR_INVALID_ARG, "sampler: logit bias token %.0f is outside the vocabulary",
                        (double)p->bias_tokens[i]);
        float b = p->bias_values[i];
        if (isnan(b) || b == INFINITY)
            return errorf(err, WICK_ERR_INVALID_ARG, "sampler: logit bias value %g must be finite or -inf (a ban)", b);
    }
    return 0;
}

int sampler_new(wick_sampler **out, const wick_sampler_params *p, int32_t n_vocab,
                errmsg *err) {
    *out = NULL;
    if (!p) return errorf(err, WICK_ERR_INVALID_ARG, "sampler: no parameters");
    if (validate(p, n_vocab, err) != 0) return -1;
    wick_sampler *s = calloc(1, sizeof *s);
    if (!s) return errorf(err, WICK_ERR_NOMEM, "sampler: out of memory");
    s->params = *p;
    s->n_vocab = n_vocab;
    size_t nv = (size_t)n_vocab, nh = (size_t)p->repeat_last_n, nb = (size_t)p->n_bias;
    size_t n_blocks = (nv + WEIGHT_BLOCK - 1) / WEIGHT_BLOCK;
    s->work = malloc(nv * sizeof *s->work);
    s->cand_id = malloc(nv * sizeof *s->cand_id);
    s->cand_logit = malloc(nv * sizeof *s->cand_logit);
    s->cand_weight = malloc(nv * sizeof *s->cand_weight);
    s->block_sum = malloc(n_blocks * sizeof *s->block_sum);
    s->scratch = malloc(nv * sizeof *s->scratch);
    s->bin_mass = malloc(4 * NUCLEUS_BINS * sizeof *s->bin_mass);
    s->counts = calloc(nv, sizeof *s->counts);
    s->history = malloc((nh ? nh : 1) * sizeof *s->history);
    s->distinct = malloc((nh ? nh : 1) * sizeof *s->distinct);
    s->bias_tokens = malloc((nb ? nb : 1) * sizeof *s->bias_tokens);
    s->bias_values = malloc((nb ? nb : 1) * sizeof *s->bias_values);
    if (!s->work || !s->cand_id || !s->cand_logit || !s->cand_weight || !s->block_sum ||
        !s->scratch || !s->bin_mass || !s->counts || !s->history || !s->distinct ||
        !s->bias_tokens || !s->bias_values) {
        sampler_free(s);
        return errorf(err, WICK_ERR_NOMEM, "sampler: out of memory for a vocabulary of %.0f tokens", (double)n_vocab);
    }
    if (nb) {
        memcpy(s->bias_tokens, p->bias_tokens, nb * sizeof *s->bias_tokens);
        memcpy(s->bias_values, p->bias_values, nb * sizeof *s->bias_values);
    }
    s->params.bias_tokens = s->bias_tokens;
    s->params.bias_values = s->bias_values;
    sampler_reset(s);
    *out = s;
    return 0;
}

void sampler_free(wick_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->cand_id);
    free(s->cand_logit);
    free(s->cand_weight);
    free(s->block_sum);
    free(s->scratch);
    free(s->bin_mass);
    free(s->counts);
    free(s->history);
    free(s->distinct);
    free(s->bias_tokens);
    free(s->bias_values);
    free(s);
}

void sampler_reset(wick_sampler *s) {
    s->history_len = 0;
    s->history_next = 0;
    s->cand_all = false;
    s->n_cand = 0;
    s->cand_sorted = false;
    s->rng = s->params.seed;
    s->last_drawn = -1;
}

void sampler_accept(wick_sampler *s, int32_t token) {
    int32_t cap = s->params.repeat_last_n;
    if (cap == 0 || token < 0 || token >= s->n_vocab) return;
    s->history[s->history_next] = token;
    s->history_next = (s->history_next + 1) % cap;
    if (s->history_len < cap) s->history_len++;
}

int32_t sampler_last_drawn(const wick_sampler *s) { return s->last_drawn; }

/* ---- steps 1–2: penalties and bias --------------------------------------------------------- */

void sampler_apply_penalties_and_bias(wick_sampler *s, float *logits) {
    const wick_sampler_params *p = &s->params;
    bool penalize = p->repeat_penalty != 1.0f || p->frequency_penalty != 0.0f ||
                    p->presence_penalty != 0.0f;
    if (penalize && s->history_len > 0) {
        int32_t n_distinct = 0;
        for (int32_t i = 0; i < s->history_len; i++) {
            int32_t t = s->history[i];
            if (s->counts[t]++ == 0) s->distinct[n_distinct++] = t;
        }
        for (int32_t i = 0; i < n_distinct; i++) {
            int32_t t = s->distinct[i];
            int32_t c = s->counts[t];
            float z = logits[t];
            /* llama.cpp's llama_sampler_penalties_apply */
            z = z <= 0.0f ? z * p->repeat_penalty : z / p->repeat_penalty;
            z -= (float)c * p->frequency_penalty + (float)(c > 0) * p->presence_penalty;
            logits[t] = z;
            s->counts[t] = 0; /* restores the all-zero invariant */
        }
    }
    for (int32_t i = 0; i < p->n_bias; i++) logits[p->bias_tokens[i]] += p->bias_values[i];
}

int32_t sampler_candidates_needed(const wick_sampler *s) {
    const wick_sampler_params *p = &s->params;
    bool penalize = p->repeat_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f;
    if ((penalize && s->history_len > 0) || p->n_bias > 0) return 0; /* steps 1–2 reorder the row */
    /* as sampler_sample_filtered decides greedy: 1/T overflowing counts as T = 0 */
    if (!(p->temperature > 0.0f) || 1.0f / p->temperature == INFINITY) return 1;
    return p->top_k > 0 && p->top_k < s->n_vocab ? p->top_k : 0;
}

/* ---- ordering ------------------------------------------------------------------------------ */

/* The total order of the chain: higher logit first, equal logits by lower id. */
static inline bool ranks_before(const sampler_candidate *a, const sampler_candidate *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int compare_candidates(const void *pa, const void *pb) {
    const sampler_candidate *a = pa, *b = pb;
    if (ranks_before(a, b)) return -1;
    if (ranks_before(b, a)) return 1;
    return 0;
}

/* Min-heap on ranks_before: heap[0] is the candidate that ranks last. */
static void heap_sift_down(sampler_candidate *heap, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, worst = i;
        if (l < n && ranks_before(&heap[worst], &heap[l])) worst = l;
        if (r < n && ranks_before(&heap[worst], &heap[r])) worst = r;
        if (worst == i) return;
        sampler_candidate t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

static void heap_sift_up(sampler_candidate *heap, int32_t i) {
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!ranks_before(&heap[parent], &heap[i])) return;
        sampler_candidate t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

/* ---- step 3: top-k ------------------------------------------------------------------------- */

/* The k best tokens (finite logits only) become the list, sorted. */
static void select_top_k(wick_sampler *s, int32_t k) {
    sampler_candidate *heap = s->scratch;
    const float *z = s->work;
    int32_t n_vocab = s->n_vocab, n = 0;
    float worst = -INFINITY; /* heap[0].logit once the heap is full */
    for (int32_t base = 0; base < n_vocab; base += 16) {
        int32_t end = n_vocab - base > 16 ? base + 16 : n_vocab;
        if (n == k && end - base == 16 && !any_of_16_above(z + base, wasm_f32x4_splat(worst), false))
            continue;
        for (int32_t id = base; id < end; id++) {
            float x = z[id];
            if (!(x > -INFINITY)) continue; /* -INFINITY and NaN are never candidates */
            if (n < k) {
                heap[n] = (sampler_candidate){x, id, 0.0f};
                heap_sift_up(heap, n++);
                if (n == k) worst = heap[0].logit;
            } else if (x > worst) {
                /* ids grow along the scan, so a logit equal to heap[0]'s ranks after it: only a
                 * strictly greater one displaces it */
                heap[0] = (sampler_candidate){x, id, 0.0f};
                heap_sift_down(heap, n, 0);
                worst = heap[0].logit;
            }
        }
    }
    qsort(heap, (size_t)n, sizeof *heap, compare_candidates);
    for (int32_t i = 0; i < n; i++) {
        s->cand_id[i] = heap[i].id;
        s->cand_logit[i] = heap[i].logit;
    }
    s->cand_all = false;
    s->n_cand = n;
    s->cand_sorted = true;
}

/* ---- step 4: top-p ------------------------------------------------------------------------- */

/* On the sorted list: the shortest head whose T=1 weights reach top_p of the list's total. */
static void top_p_sorted(wick_sampler *s, float z_max) {
    float *w = s->cand_weight;
    double total = exp_weights(s->cand_logit, s->n_cand, z_max, 1.0f, w, NULL);
    double needed = (double)s->params.top_p * total;
    double cum = 0.0;
    int32_t keep = s->n_cand; /* if rounding leaves the sum short, everything stays */
    for (int32_t i = 0; i < s->n_cand; i++) {
        cum += w[i];
        if (cum >= needed) { keep = i + 1; break; }
    }
    s->n_cand = keep;
}

/* The histogram bins of 4 logits: (z_max - z)·NUCLEUS_BINS_PER_LOGIT truncated, the last bin
 * for everything deeper (and for NaN: pmin(limit, x) = x < limit ? x : limit). */
static inline void nucleus_bins4(const float *z4, v128_t vmax, int32_t bins[4]) {
    const v128_t per_logit = wasm_f32x4_splat((float)NUCLEUS_BINS_PER_LOGIT);
    const v128_t last = wasm_f32x4_splat((float)(NUCLEUS_BINS - 1));
    v128_t depth = wasm_f32x4_mul(wasm_f32x4_sub(vmax, wasm_v128_load(z4)), per_logit);
    wasm_v128_store(bins, wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_pmin(last, depth)));
}

/* Sorts scratch[0..n) and appends it to the list in rank order until the running mass, which
 * starts at cum, reaches needed (all of it if rounding leaves the sum short). */
static void append_until_mass(wick_sampler *s, int32_t n, double cum, double needed) {
    qsort(s->scratch, (size_t)n, sizeof *s->scratch, compare_candidates);
    for (int32_t j = 0; j < n; j++) {
        s->cand_id[s->n_cand] = s->scratch[j].id;
        s->cand_logit[s->n_cand] = s->scratch[j].logit;
        s->n_cand++;
        cum += s->scratch[j].weight;
        if (cum >= needed) break;
    }
}

/* The nucleus of a model's distribution usually lies within a few logits of the top: the tokens
 * less than NUCLEUS_NEAR_DEPTH below z_max (p >= e^-8 ≈ 3e-4 p_max), when there are at most
 * NUCLEUS_NEAR_MAX of them, are gathered first, skipping 16 logits at a time. */
#define NUCLEUS_NEAR_DEPTH 8.0f
#define NUCLEUS_NEAR_MAX 4096

/* On the whole vocabulary, without sorting it. T=1 weights and their total first. If the tokens
 * near the top hold top_p of the mass, the nucleus is the shortest sorted head of those.
 * Otherwise, the mass goes into bins by logit depth: the bins before the one where the running
 * mass reaches top_p·total are in the nucleus whole (every token there ranks before every token
 * of later bins), and only the boundary bin is sorted and taken token by token. Tokens of weight
 * 0 (-INFINITY, NaN, or more than 86 logits down) never join. Returns whether the result is
 * also min-p's (step 5 then has nothing left to do). */
static bool top_p_vocab(wick_sampler *s, float z_max) {
    const float *z = s->work;
    float *w = s->cand_weight;
    double *mass = s->bin_mass;
    int32_t n_vocab = s->n_vocab;
    double total = exp_weights(z, n_vocab, z_max, 1.0f, w, NULL);
    double needed = (double)s->params.top_p * total;
    s->cand_all = false;
    s->n_cand = 0;

    /* With min-p on, the final set is the shorter of two heads of the ranking. The min-p head
     * (weight >= min_p, the very test of min_p_filter) comes straight from the weights; when it
     * holds less than top_p of the mass, the nucleus is longer and the min-p head is the set. */
    if (s->params.min_p > 0.0f) {
        const float min_p = s->params.min_p;
        const v128_t vmin_p = wasm_f32x4_splat(min_p);
        int32_t n = 0;
        double head_mass = 0.0;
        for (int32_t base = 0; base < n_vocab; base += 16) {
            int32_t end = n_vocab - base > 16 ? base + 16 : n_vocab;
            if (end - base == 16 && !any_of_16_above(w + base, vmin_p, true)) continue;
            for (int32_t i = base; i < end; i++)
                if (w[i] >= min_p) {
                    s->cand_id[n] = i;
                    s->cand_logit[n] = z[i];
                    n++;
                    head_mass += w[i];
                }
        }
        if (head_mass < needed) {
            s->n_cand = n;
            s->cand_sorted = false;
            return true;
        }
    }

    /* the tokens near the top: a head of the ranking, since everything ranking before one of
     * them has a logit at least as high */
    const float near = z_max - NUCLEUS_NEAR_DEPTH;
    const v128_t vnear = wasm_f32x4_splat(near);
    int32_t n_near = 0;
    double near_mass = 0.0;
    for (int32_t base = 0; base < n_vocab && n_near <= NUCLEUS_NEAR_MAX; base += 16) {
        int32_t end = n_vocab - base > 16 ? base + 16 : n_vocab;
        if (end - base == 16 && !any_of_16_above(z + base, vnear, false)) continue;
        for (int32_t i = base; i < end && n_near <= NUCLEUS_NEAR_MAX; i++)
            if (z[i] > near) {
                s->scratch[n_near++] = (sampler_candidate){z[i], i, w[i]};
                near_mass += w[i];
            }
    }
    if (n_near <= NUCLEUS_NEAR_MAX && near_mass >= needed) {
        append_until_mass(s, n_near, 0.0, needed);
        s->cand_sorted = true;
        return false;
    }

    /* four interleaved histograms, so that consecutive tokens landing in the same bin do not
     * wait on each other's additions; combined in a fixed order. NaN and -INFINITY logits land
     * in the last bin with weight 0. */
    const v128_t vmax = wasm_f32x4_splat(z_max);
    int32_t bins[4];
    int32_t n4 = n_vocab & ~3;
    float tail[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}; /* the last 1–3, padded */
    memcpy(tail, z + n4, (size_t)(n_vocab - n4) * sizeof *tail);
    memset(mass, 0, 4 * NUCLEUS_BINS * sizeof *mass);
    for (int32_t i = 0; i < n4; i += 4) {
        nucleus_bins4(z + i, vmax, bins);
        mass[bins[0]] += w[i];
        mass[NUCLEUS_BINS + bins[1]] += w[i + 1];
        mass[2 * NUCLEUS_BINS + bins[2]] += w[i + 2];
        mass[3 * NUCLEUS_BINS + bins[3]] += w[i + 3];
    }
    nucleus_bins4(tail, vmax, bins);
    for (int32_t j = 0; n4 + j < n_vocab; j++) mass[j * NUCLEUS_BINS + bins[j]] += w[n4 + j];
    for (int32_t b = 0; b < NUCLEUS_BINS; b++)
        mass[b] = (mass[b] + mass[NUCLEUS_BINS + b]) + (mass[2 * NUCLEUS_BINS + b] + mass[3 * NUCLEUS_BINS + b]);
    int32_t boundary = 0;
    double before = 0.0; /* mass of the bins before the boundary bin */
    while (boundary < NUCLEUS_BINS - 1 && before + mass[boundary] < needed) before += mass[boundary++];

    /* bins before the boundary hold only finite logits less than 64 below z_max, all of
     * positive weight: they are appended without a branch (the slot is overwritten when the
     * token does not belong) */
    int32_t n = 0, n_boundary = 0;
    for (int32_t i = 0; i < n_vocab; i += 4) {
        nucleus_bins4(i < n4 ? z + i : tail, vmax, bins);
        int32_t lanes = n_vocab - i < 4 ? n_vocab - i : 4;
        for (int32_t j = 0; j < lanes; j++) {
            int32_t id = i + j;
            s->cand_id[n] = id;
            s->cand_logit[n] = z[id];
            n += bins[j] < boundary;
            if (bins[j] == boundary && w[id] > 0.0f)
                s->scratch[n_boundary++] = (sampler_candidate){z[id], id, w[id]};
        }
    }
    s->n_cand = n;
    append_until_mass(s, n_boundary, before, needed);
    s->cand_sorted = false; /* the bins' tokens in id order, then the boundary's in rank order */
    return false;
}

/* ---- step 5: min-p ------------------------------------------------------------------------- */

/* Keeps the tokens with p_i / p_max = e^(z_i - z_max) >= min_p (T = 1), in list order. */
static void min_p_filter(wick_sampler *s, float z_max) {
    double min_p = (double)s->params.min_p;
    if (s->cand_all) {
        /* prefilter on the logit: e^(z - z_max) >= min_p needs z >= z_max + ln(min_p). log() is
         * only a coarse bound here (a margin of 0.01 logit, far above any rounding of log or of
         * the exp), the exact test below decides. */
        double floor_logit = (double)z_max + log(min_p) - 0.01;
        int32_t n = 0;
        for (int32_t i = 0; i < s->n_vocab; i++)
            if ((double)s->work[i] >= floor_logit) {
                s->cand_id[n] = i;
                s->cand_logit[n] = s->work[i];
                n++;
            }
        s->cand_all = false;
        s->n_cand = n;
        s->cand_sorted = false;
    }
    float *w = s->cand_weight;
    exp_weights(s->cand_logit, s->n_cand, z_max, 1.0f, w, NULL);
    int32_t kept = 0;
    for (int32_t i = 0; i < s->n_cand; i++)
        if (w[i] >= min_p) {
            s->cand_id[kept] = s->cand_id[i];
            s->cand_logit[kept] = s->cand_logit[i];
            kept++;
        }
    s->n_cand = kept; /* >= 1: the maximum has weight e^0 = 1 >= min_p */
}

/* ---- steps 6–7: temperature and draw ------------------------------------------------------- */

/* Weights e^((z - z_max)/T) over the list, then the token where the cumulative weight first
 * exceeds u·total, u uniform in [0, 1): found through the block sums, then inside one block. */
static int32_t draw(wick_sampler *s, float z_max, float inv_t) {
    const float *z = s->cand_all ? s->work : s->cand_logit;
    int32_t n = s->n_cand;
    float *w = s->cand_weight;
    double total = exp_weights(z, n, z_max, inv_t, w, s->block_sum);
    s->weight_total = total; /* >= 1: the maximum has weight e^0 = 1 */
    double target = sampler_uniform(&s->rng) * total;
    double cum = 0.0;
    int32_t pick = -1;
    for (int32_t start = 0, b = 0; start < n && pick < 0; start += WEIGHT_BLOCK, b++) {
        if (!(target < cum + s->block_sum[b])) {
            cum += s->block_sum[b];
            continue;
        }
        int32_t end = n - start > WEIGHT_BLOCK ? start + WEIGHT_BLOCK : n;
        for (int32_t i = start; i < end; i++) {
            cum += w[i];
            if (target < cum) { pick = i; break; }
        }
        /* the block's sum said the target is inside, its running sum fell short by rounding */
        for (int32_t i = end - 1; pick < 0 && i >= start; i--)
            if (w[i] > 0.0) pick = i;
    }
    /* the target above the running sum by rounding: the last token that has weight */
    for (int32_t i = n - 1; pick < 0 && i >= 0; i--)
        if (w[i] > 0.0) pick = i;
    return s->cand_all ? pick : s->cand_id[pick];
}

/* ---- the chain ----------------------------------------------------------------------------- */

/* Steps 3–5 on the logits in work (maximum z_max, finite). */
static void truncate(wick_sampler *s, float z_max) {
    const wick_sampler_params *p = &s->params;
    if (p->top_k > 0 && p->top_k < s->n_vocab) {
        select_top_k(s, p->top_k);
    } else {
        s->cand_all = true;
        s->n_cand = s->n_vocab;
    }
    bool min_p_done = false;
    if (p->top_p < 1.0f) {
        if (s->cand_all) min_p_done = top_p_vocab(s, z_max);
        else top_p_sorted(s, z_max);
    }
    if (p->min_p > 0.0f && !min_p_done) min_p_filter(s, z_max);
}

/* The first maximum of work (greedy), recorded as the whole final distribution. */
static int32_t pick_argmax(wick_sampler *s, float z_max) {
    int32_t argmax = 0;
    while (!(s->work[argmax] == z_max)) argmax++;
    s->cand_all = false;
    s->cand_id[0] = argmax;
    s->cand_logit[0] = z_max;
    s->cand_weight[0] = 1.0;
    s->weight_total = 1.0;
    s->n_cand = 1;
    s->cand_sorted = true;
    s->last_drawn = argmax;
    return argmax;
}

/* Bans (−∞) every token of work that the filter refuses; returns the new maximum. */
static float ban_refused(wick_sampler *s, sampler_token_filter allowed, void *ctx) {
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (s->work[i] > -INFINITY && !allowed(ctx, i)) s->work[i] = -INFINITY;
    return max_logit(s->work, s->n_vocab);
}

int32_t sampler_sample_filtered(wick_sampler *s, const float *logits, sampler_token_filter allowed, void *ctx) {
    const wick_sampler_params *p = &s->params;
    int32_t n_vocab = s->n_vocab;
    float *work = s->work;
    s->cand_all = false;
    s->n_cand = 0;
    s->cand_sorted = false;
    s->last_drawn = -1;

    memcpy(work, logits, (size_t)n_vocab * sizeof *work);
    sampler_apply_penalties_and_bias(s, work);
    float z_max = max_logit(work, n_vocab); /* NaN logits are passed over here and below */
    if (z_max == -INFINITY) return -1;
    if (z_max == INFINITY) {
        /* the limit of softmax: the infinite logits share all the mass */
        for (int32_t i = 0; i < n_vocab; i++) work[i] = work[i] == INFINITY ? 0.0f : -INFINITY;
        z_max = 0.0f;
    }

    float inv_t = p->temperature > 0.0f ? 1.0f / p->temperature : INFINITY;
    if (inv_t == INFINITY) {
        /* greedy: the first maximum, which every truncation would keep; with a filter, the
         * first maximum among the tokens it allows */
        int32_t argmax = pick_argmax(s, z_max);
        if (!allowed || allowed(ctx, argmax)) return argmax;
        s->last_drawn = -1;
        z_max = ban_refused(s, allowed, ctx);
        return z_max == -INFINITY ? -1 : pick_argmax(s, z_max);
    }

    truncate(s, z_max);
    if (allowed) {
        /* the constraint, where it is cheap: on the candidates the truncation kept... */
        int32_t kept = 0;
        float kept_max = -INFINITY;
        if (!s->cand_all) {
            for (int32_t i = 0; i < s->n_cand; i++)
                if (allowed(ctx, s->cand_id[i])) {
                    s->cand_id[kept] = s->cand_id[i];
                    s->cand_logit[kept] = s->cand_logit[i];
                    if (s->cand_logit[kept] > kept_max) kept_max = s->cand_logit[kept];
                    kept++;
                }
        }
        if (kept > 0) {
            s->n_cand = kept; /* the order of the list is kept */
            z_max = kept_max;
        } else {
            /* ...and over the whole vocabulary only when none of them fits: the refused tokens
             * are banned and the truncation runs again on the rest */
            z_max = ban_refused(s, allowed, ctx);
            if (z_max == -INFINITY) return -1;
            s->cand_all = false;
            s->n_cand = 0;
            s->cand_sorted = false;
            truncate(s, z_max);
        }
    }
    s->last_drawn = draw(s, z_max, inv_t);
    return s->last_drawn;
}

int32_t sampler_sample(wick_sampler *s, const float *logits) {
    return sampler_sample_filtered(s, logits, NULL, NULL);
}

/* ---- probabilities out --------------------------------------------------------------------- */

/* ranks_before on token ids, the logits read from work */
static inline bool id_ranks_before(const float *work, int32_t a, int32_t b) {
    return work[a] > work[b] || (work[a] == work[b] && a < b);
}

static void top_swap(int32_t *ids, float *probs, int32_t a, int32_t b) {
    int32_t t = ids[a];
    float tp = probs[a];
    ids[a] = ids[b];
    probs[a] = probs[b];
    ids[b] = t;
    probs[b] = tp;
}

/* The heap of sampler_top: ids[0] ranks last. */
static void top_sift_down(const float *work, int32_t *ids, float *probs, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, worst = i;
        if (l < n && id_ranks_before(work, ids[worst], ids[l])) worst = l;
        if (r < n && id_ranks_before(work, ids[worst], ids[r])) worst = r;
        if (worst == i) return;
        top_swap(ids, probs, i, worst);
        i = worst;
    }
}

static void top_sift_up(const float *work, int32_t *ids, float *probs, int32_t i) {
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!id_ranks_before(work, ids[parent], ids[i])) return;
        top_swap(ids, probs, i, parent);
        i = parent;
    }
}

int sampler_top(const wick_sampler *s, int32_t k, int32_t *ids, float *probs) {
    if (k <= 0 || s->n_cand == 0) return 0;
    const float *w = s->cand_weight;
    double total = s->weight_total;
    if (s->cand_sorted) {
        int32_t n = k < s->n_cand ? k : s->n_cand;
        for (int32_t i = 0; i < n; i++) {
            ids[i] = s->cand_id[i];
            probs[i] = (float)(w[i] / total);
        }
        return n;
    }
    /* Unsorted: the k best by rank, selected with a heap kept in ids/probs (heap[0] ranks
     * last), then heap-sorted in place into rank order. */
    int32_t filled = 0;
    for (int32_t i = 0; i < s->n_cand; i++) {
        int32_t id = s->cand_all ? i : s->cand_id[i];
        if (!(s->work[id] > -INFINITY)) continue; /* excluded tokens of the whole-vocabulary list */
        float prob = (float)(w[i] / total);
        if (filled < k) {
            ids[filled] = id;
            probs[filled] = prob;
            top_sift_up(s->work, ids, probs, filled++);
        } else if (id_ranks_before(s->work, id, ids[0])) {
            ids[0] = id;
            probs[0] = prob;
            top_sift_down(s->work, ids, probs, filled, 0);
        }
    }
    for (int32_t end = filled - 1; end > 0; end--) {
        top_swap(ids, probs, 0, end);
        top_sift_down(s->work, ids, probs, end, 0);
    }
    return filled;
}

/* ---- softmax helper ------------------------------------------------------------------------ */

void sampler_softmax(const float *logits, int32_t n, float temperature, double *probs_out) {
    for (int32_t i = 0; i < n; i++) probs_out[i] = 0.0;
    float z_max = n > 0 ? max_logit(logits, n) : -INFINITY;
    if (z_max == -INFINITY) return;
    float inv_t = temperature > 0.0f ? 1.0f / temperature : INFINITY;
    if (inv_t == INFINITY) {
        int32_t argmax = 0;
        while (!(logits[argmax] == z_max)) argmax++;
        probs_out[argmax] = 1.0;
        return;
    }
    if (z_max == INFINITY) {
        int32_t n_inf = 0;
        for (int32_t i = 0; i < n; i++) n_inf += logits[i] == INFINITY;
        for (int32_t i = 0; i < n; i++) probs_out[i] = logits[i] == INFINITY ? 1.0 / n_inf : 0.0;
        return;
    }
    /* block by block, which adds up the total exactly as one exp_weights call over n would */
    double total = 0.0;
    for (int32_t start = 0; start < n; start += WEIGHT_BLOCK) {
        int32_t len = n - start > WEIGHT_BLOCK ? WEIGHT_BLOCK : n - start;
        float w[WEIGHT_BLOCK];
        total += exp_weights(logits + start, len, z_max, inv_t, w, NULL);
        for (int32_t i = 0; i < len; i++) probs_out[start + i] = w[i];
    }
    for (int32_t i = 0; i < n; i++) probs_out[i] /= total;
}

/* ---- stop strings -------------------------------------------------------------------------- */

int stop_matcher_init(stop_matcher *m, const char *const *stops, int32_t n_stops,
                      errmsg *err) {
    memset(m, 0, sizeof *m);
    m->matched = -1;
    if (n_stops < 0 || (n_stops > 0 && !stops))
        return errorf(err, WICK_ERR_INVALID_ARG, "stop strings: bad list (count %.0f)", (double)n_stops);
    if (n_stops == 0) return 0;
    m->stops = calloc((size_t)n_stops, sizeof *m->stops);
    m->stop_lens = calloc((size_t)n_stops, sizeof *m->stop_lens);
    if (!m->stops || !m->stop_lens) {
        stop_matcher_free(m);
        return errorf(err, WICK_ERR_NOMEM, "stop strings: out of memory");
    }
    m->n_stops = n_stops;
    for (int32_t i = 0; i < n_stops; i++) {
        size_t len = stops[i] ? strlen(stops[i]) : 0;
        if (len == 0) {
            stop_matcher_free(m);
            return errorf(err, WICK_ERR_INVALID_ARG, "stop strings: string %.0f is empty", (double)i);
        }
        m->stops[i] = malloc(len + 1);
        if (!m->stops[i]) {
            stop_matcher_free(m);
            return errorf(err, WICK_ERR_NOMEM, "stop strings: out of memory");
        }
        memcpy(m->stops[i], stops[i], len + 1);
        m->stop_lens[i] = len;
        if (len > m->max_stop_len) m->max_stop_len = len;
    }
    return 0;
}

void stop_matcher_free(stop_matcher *m) {
    if (m->stops)
        for (int32_t i = 0; i < m->n_stops; i++) free(m->stops[i]);
    free(m->stops);
    free(m->stop_lens);
    free(m->buf);
    memset(m, 0, sizeof *m);
    m->matched = -1;
}

void stop_matcher_reset(stop_matcher *m) {
    m->buf_len = 0;
    m->held = 0;
    m->stopped = false;
    m->matched = -1;
}

/* Earliest position in buf where some stop string occurs completely (the longest stop string
 * wins at equal positions); -1 if none. */
static ptrdiff_t find_stop(const stop_matcher *m, int32_t *which) {
    for (size_t pos = 0; pos < m->buf_len; pos++) {
        int32_t best = -1;
        for (int32_t i = 0; i < m->n_stops; i++) {
            size_t len = m->stop_lens[i];
            if (len <= m->buf_len - pos && memcmp(m->buf + pos, m->stops[i], len) == 0 &&
                (best < 0 || len > m->stop_lens[best]))
                best = i;
        }
        if (best >= 0) {
            *which = best;
            return (ptrdiff_t)pos;
        }
    }
    return -1;
}

/* Length of the longest tail of buf that is a proper prefix of some stop string. */
static size_t partial_stop_tail(const stop_matcher *m) {
    size_t longest = m->max_stop_len - 1 < m->buf_len ? m->max_stop_len - 1 : m->buf_len;
    for (size_t len = longest; len > 0; len--) {
        const char *tail = m->buf + m->buf_len - len;
        for (int32_t i = 0; i < m->n_stops; i++)
            if (m->stop_lens[i] > len && memcmp(m->stops[i], tail, len) == 0) return len;
    }
    return 0;
}

int stop_matcher_push(stop_matcher *m, const char *text, size_t len,
                      const char **out, size_t *out_len) {
    *out = m->buf;
    *out_len = 0;
    if (m->stopped) return 1;
    /* what the last call returned is gone; its held tail moves to the front */
    if (m->held < m->buf_len) memmove(m->buf, m->buf + m->buf_len - m->held, m->held);
    m->buf_len = m->held;
    if (len > SIZE_MAX - m->buf_len) return -1;
    if (m->buf_len + len > m->buf_cap) {
        size_t cap = m->buf_cap ? m->buf_cap : 64;
        while (cap < m->buf_len + len) cap = cap > SIZE_MAX / 2 ? m->buf_len + len : cap * 2;
        char *grown = realloc(m->buf, cap);
        if (!grown) return -1;
        m->buf = grown;
        m->buf_cap = cap;
    }
    if (len) memcpy(m->buf + m->buf_len, text, len);
    m->buf_len += len;
    *out = m->buf;

    int32_t which;
    ptrdiff_t at = m->n_stops ? find_stop(m, &which) : -1;
    if (at >= 0) {
        m->stopped = true;
        m->matched = which;
        m->held = 0;
        *out_len = (size_t)at;
        m->buf_len = (size_t)at; /* nothing left to flush */
        return 1;
    }
    m->held = m->n_stops ? partial_stop_tail(m) : 0;
    *out_len = m->buf_len - m->held;
    return 0;
}

void stop_matcher_flush(stop_matcher *m, const char **out, size_t *out_len) {
    *out = m->buf;
    *out_len = 0;
    if (m->stopped || m->held == 0) return;
    memmove(m->buf, m->buf + m->buf_len - m->held, m->held);
    *out_len = m->held;
    m->held = 0;
    m->buf_len = 0; /* the bytes stay readable through *out until the next call */
}
