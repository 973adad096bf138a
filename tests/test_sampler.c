/* test_sampler.c — checks the sampling chain of src/sampler.c against its definitions, and the
 * stop-string matcher. Output and exit status: tests/check.h. Built natively and to wasm: the
 * draw-sequence hash (a note) must be the same in both. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif
#include "sampler.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Recorded from the native build; the wasm build must print and match the same. */
#define DRAW_HASH_TOPP 0x67c1e72a26ac87a6ull
#define DRAW_HASH_DEFAULT 0xe9273a14dfa5bea4ull

/* Test data from integer arithmetic only (no libm), so both builds see the same logits. */
static uint64_t test_rng = 12345;
static float random_logit(float scale) {
    double u = sampler_uniform(&test_rng) + sampler_uniform(&test_rng) + sampler_uniform(&test_rng);
    return (float)((u - 1.5) * 2.0 * scale); /* roughly bell-shaped in [-3 scale, 3 scale] */
}

static wick_sampler *make_sampler(const wick_sampler_params *p, int32_t n_vocab) {
    errmsg err = {0};
    wick_sampler *s;
    static int n_refused; /* each refusal a check of its own (none is expected) */
    if (sampler_new(&s, p, n_vocab, &err) != 0) {
        check(false, check_id("sampler.new.%d", ++n_refused), "sampler_new: %s", err.text);
        return NULL;
    }
    return s;
}

/* No truncation, no penalties: the plain tempered softmax. */
static wick_sampler_params plain_params(float temperature, uint64_t seed) {
    wick_sampler_params p;
    sampler_params_default(&p);
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}

/* ---- softmax and temperature --------------------------------------------------------------- */

static void test_worked_example(void) {
    const float z[3] = {2, 1, 0};
    const float temps[3] = {0.5f, 1.0f, 2.0f};
    const double want[3][3] = {{0.867, 0.117, 0.016}, {0.665, 0.245, 0.090}, {0.506, 0.307, 0.186}};
    for (int t = 0; t < 3; t++) {
        double p[3];
        sampler_softmax(z, 3, temps[t], p);
        bool ok = true;
        for (int i = 0; i < 3; i++) ok = ok && fabs(p[i] - want[t][i]) <= 0.001;
        char what[160];
        snprintf(what, sizeof what, "softmax (2,1,0) at T=%.1f = (%.1f%%, %.1f%%, %.1f%%)", temps[t],
                 100 * p[0], 100 * p[1], 100 * p[2]);
        check(ok, check_id("sampler.softmax.t%.1f", temps[t]), "%s", what);

        /* the sampler's own final distribution (sampler_top) agrees */
        wick_sampler_params sp = plain_params(temps[t], 1);
        wick_sampler *s = make_sampler(&sp, 3);
        if (!s) continue;
        sampler_sample(s, z);
        int32_t ids[3];
        float probs[3];
        int n = sampler_top(s, 3, ids, probs);
        ok = n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 2;
        for (int i = 0; ok && i < 3; i++) ok = fabs(probs[i] - want[t][i]) <= 0.001;
        snprintf(what, sizeof what, "sampler_top after a draw at T=%.1f gives the same distribution", temps[t]);
        check(ok, check_id("sampler.top.t%.1f", temps[t]), "%s", what);
        sampler_free(s);
    }
    double p[3];
    sampler_softmax(z, 3, 0.0f, p);
    check(p[0] == 1.0 && p[1] == 0.0 && p[2] == 0.0, "sampler.softmax.t0", "softmax at T=0 is the argmax");
    const float tied[3] = {1, 3, 3};
    sampler_softmax(tied, 3, 0.0f, p);
    check(p[1] == 1.0 && p[2] == 0.0, "sampler.softmax.t0-tie", "softmax at T=0 with a tie picks the lowest id");

    /* the stable form: huge logits do not overflow */
    const float big[3] = {1002, 1001, 1000};
    sampler_softmax(big, 3, 1.0f, p);
    check(fabs(p[0] - 0.665) <= 0.001 && fabs(p[2] - 0.090) <= 0.001, "sampler.softmax.stable", "softmax of (1002,1001,1000) = that of (2,1,0)");

    const float greedy_temps[2] = {0.0f, 1e-3f};
    for (int t = 0; t < 2; t++) {
        wick_sampler_params sp = plain_params(greedy_temps[t], 7);
        wick_sampler *s = make_sampler(&sp, 3);
        if (!s) continue;
        bool ok = true;
        for (int i = 0; i < 1000; i++) ok = ok && sampler_sample(s, z) == 0;
        int32_t id;
        float prob;
        ok = ok && sampler_top(s, 1, &id, &prob) == 1 && id == 0 && prob == 1.0f;
        char what[120];
        snprintf(what, sizeof what, "T=%g: 1000 draws all pick the top token (probability 1)", greedy_temps[t]);
        check(ok, check_id("sampler.greedy.t%g", greedy_temps[t]), "%s", what);
        sampler_free(s);
    }
    {
        wick_sampler_params sp = plain_params(0.0f, 7);
        wick_sampler *s = make_sampler(&sp, 3);
        if (s) {
            check(sampler_sample(s, tied) == 1, "sampler.greedy.tie", "sampler at T=0 with a tie picks the lowest id");
            sampler_free(s);
        }
    }
}

static void test_frequencies(void) {
    const float z[3] = {2, 1, 0};
    wick_sampler_params sp = plain_params(1.0f, 2024);
    wick_sampler *s = make_sampler(&sp, 3);
    if (!s) return;
    int count[3] = {0};
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        int32_t t = sampler_sample(s, z);
        if (t >= 0 && t < 3) count[t]++;
    }
    double want[3];
    sampler_softmax(z, 3, 1.0f, want);
    bool ok = true;
    for (int i = 0; i < 3; i++) ok = ok && fabs((double)count[i] / n - want[i]) <= 0.01;
    char what[160];
    snprintf(what, sizeof what, "100000 draws at T=1: %.2f%% %.2f%% %.2f%% (want %.2f%% %.2f%% %.2f%%)",
             100.0 * count[0] / n, 100.0 * count[1] / n, 100.0 * count[2] / n, 100 * want[0],
             100 * want[1], 100 * want[2]);
    check(ok, "sampler.frequencies", "%s", what);
    sampler_free(s);
}

/* ---- truncation ---------------------------------------------------------------------------- */

static void test_top_k(void) {
    enum { N = 1000 };
    static float z[N];
    wick_sampler_params pk = plain_params(1.0f, 3);
    pk.top_k = 1;
    wick_sampler_params pg = plain_params(0.0f, 3);
    wick_sampler *sk = make_sampler(&pk, N), *sg = make_sampler(&pg, N);
    if (!sk || !sg) return;
    bool ok = true;
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < N; i++) z[i] = random_logit(4.0f);
        if (trial % 2) z[trial] = z[N - 1 - trial] = 100.0f; /* a tie at the top */
        ok = ok && sampler_sample(sk, z) == sampler_sample(sg, z);
    }
    check(ok, "sampler.top-k.1", "top-k = 1 equals greedy on 200 random logit vectors (with ties)");
    sampler_free(sk);
    sampler_free(sg);

    /* top-k = 3 keeps exactly the three highest */
    const float h[6] = {0.5f, 3.0f, -1.0f, 2.0f, 2.5f, 1.0f};
    pk.top_k = 3;
    wick_sampler *s = make_sampler(&pk, 6);
    if (!s) return;
    bool seen[6] = {false};
    for (int i = 0; i < 5000; i++) seen[sampler_sample(s, h)] = true;
    int32_t ids[6];
    float probs[6];
    int n = sampler_top(s, 6, ids, probs);
    ok = n == 3 && ids[0] == 1 && ids[1] == 4 && ids[2] == 3 && seen[1] && seen[4] && seen[3] &&
         !seen[0] && !seen[2] && !seen[5];
    check(ok, "sampler.top-k.3", "top-k = 3 keeps ids {1,4,3} in that order, draws only those");
    sampler_free(s);
}

/* log of a hand-made distribution as logits */
static void logits_of(const double *p, int n, float *z) {
    for (int i = 0; i < n; i++) z[i] = (float)log(p[i]);
}

static void check_kept_set(const wick_sampler_params *sp, const float *z, int n_vocab,
                           const int *want, int n_want, const char *id, const char *what) {
    wick_sampler *s = make_sampler(sp, n_vocab);
    if (!s) return;
    bool seen[16] = {false};
    for (int i = 0; i < 20000; i++) {
        int32_t t = sampler_sample(s, z);
        if (t >= 0 && t < 16) seen[t] = true;
    }
    int32_t ids[16];
    float probs[16];
    int n = sampler_top(s, 16, ids, probs);
    bool ok = n == n_want;
    for (int i = 0; ok && i < n; i++) ok = ids[i] == want[i];
    int n_seen = 0;
    for (int i = 0; i < 16; i++) n_seen += seen[i];
    ok = ok && n_seen == n_want;
    for (int i = 0; ok && i < n_want; i++) ok = seen[want[i]];
    char line[200];
    snprintf(line, sizeof line, "%s (top count %d, distinct drawn %d)", what, n, n_seen);
    check(ok, id, "%s", line);
    sampler_free(s);
}

static void test_top_p_min_p(void) {
    const double p[6] = {0.40, 0.25, 0.15, 0.10, 0.06, 0.04};
    float z[6];
    logits_of(p, 6, z);
    const int all[6] = {0, 1, 2, 3, 4, 5};

    wick_sampler_params sp = plain_params(1.0f, 11);
    sp.top_p = 0.60f;
    check_kept_set(&sp, z, 6, all, 2, "sampler.kept.top-p0.60", "top-p 0.60 on (.40,.25,.15,.10,.06,.04) keeps {0,1} (sum .65)");
    sp.top_p = 0.70f;
    check_kept_set(&sp, z, 6, all, 3, "sampler.kept.top-p0.70", "top-p 0.70 keeps {0,1,2} (sum .80)");
    sp.top_p = 0.85f;
    check_kept_set(&sp, z, 6, all, 4, "sampler.kept.top-p0.85", "top-p 0.85 keeps {0,1,2,3} (sum .90)");
    sp.top_p = 0.99f;
    check_kept_set(&sp, z, 6, all, 6, "sampler.kept.top-p0.99", "top-p 0.99 keeps all six");
    sp.top_p = 0.0f;
    check_kept_set(&sp, z, 6, all, 1, "sampler.kept.top-p0", "top-p 0 keeps the top token only");
    sp.top_p = 0.70f;
    sp.temperature = 3.0f;
    check_kept_set(&sp, z, 6, all, 3, "sampler.kept.top-p0.70-t3", "top-p 0.70 at T=3 still keeps {0,1,2}: top-p works at T=1");
    sp.temperature = 1.0f;
    sp.top_p = 0.65f;
    sp.top_k = 2;
    check_kept_set(&sp, z, 6, all, 2, "sampler.kept.top-k2-top-p0.65", "top-k 2 then top-p 0.65: on the renormalised (.615,.385): {0,1}");
    sp.top_k = 3;
    sp.top_p = 0.45f;
    check_kept_set(&sp, z, 6, all, 1,
                   "sampler.kept.top-k3-top-p0.45", "top-k 3 then top-p 0.45: renormalised .40/.80 = .50 keeps {0} (unrenormalised: {0,1})");

    sp = plain_params(1.0f, 12);
    sp.min_p = 0.30f; /* threshold .12 */
    check_kept_set(&sp, z, 6, all, 3, "sampler.kept.min-p0.30", "min-p 0.30 keeps p >= .12: {0,1,2}");
    sp.min_p = 0.50f; /* threshold .20 */
    check_kept_set(&sp, z, 6, all, 2, "sampler.kept.min-p0.50", "min-p 0.50 keeps p >= .20: {0,1}");
    sp.min_p = 0.05f; /* threshold .02 */
    check_kept_set(&sp, z, 6, all, 6, "sampler.kept.min-p0.05", "min-p 0.05 keeps all six");
    sp.min_p = 1.0f;
    check_kept_set(&sp, z, 6, all, 1, "sampler.kept.min-p1", "min-p 1 keeps the max only");
    sp.min_p = 0.30f;
    sp.temperature = 0.3f;
    check_kept_set(&sp, z, 6, all, 3, "sampler.kept.min-p0.30-t0.3", "min-p 0.30 at T=0.3 still keeps {0,1,2}: min-p works at T=1");
    sp.temperature = 1.0f;
    sp.top_p = 0.60f;
    check_kept_set(&sp, z, 6, all, 2, "sampler.kept.top-p0.60-min-p0.30", "top-p 0.60 and min-p 0.30 keep the smaller set {0,1}");

    /* final probabilities: softmax at T over the kept set */
    sp = plain_params(2.0f, 13);
    sp.top_p = 0.70f;
    wick_sampler *s = make_sampler(&sp, 6);
    if (s) {
        sampler_sample(s, z);
        int32_t ids[6];
        float probs[6];
        int n = sampler_top(s, 6, ids, probs);
        double ref[3];
        sampler_softmax(z, 3, 2.0f, ref);
        bool ok = n == 3;
        for (int i = 0; ok && i < 3; i++) ok = fabs(probs[i] - ref[i]) < 1e-6;
        check(ok, "sampler.top-p.probabilities", "after top-p the reported probabilities are the T=2 softmax of the kept three");
        sampler_free(s);
    }
}

/* Reference for the large-vocabulary paths: full sort, then the definitions. */
static float *ref_logits;
static int compare_ref(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (ref_logits[i] != ref_logits[j]) return ref_logits[i] > ref_logits[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* Logit vectors of n_vocab = 152064 in several shapes. */
enum { BIG_N = 152064 };
enum { SHAPE_BELL_NARROW, SHAPE_BELL, SHAPE_BELL_WIDE, SHAPE_MODEL, SHAPE_HEAD_AND_BULK, SHAPE_FLAT, N_SHAPES };
static const char *const shape_names[N_SHAPES] = {
    "bell, spread 0.5", "bell, spread 2", "bell, spread 6", "model-like: 30 high tokens over a bell",
    "100 tokens at +10 over a flat bulk", "all equal"};
static const char *const shape_ids[N_SHAPES] = {"bell0.5", "bell2", "bell6", "model", "head-bulk", "flat"};

static void make_shape(int shape, float *z) {
    for (int i = 0; i < BIG_N; i++) {
        switch (shape) {
        case SHAPE_BELL_NARROW: z[i] = random_logit(0.5f); break;
        case SHAPE_BELL: z[i] = random_logit(2.0f); break;
        case SHAPE_BELL_WIDE: z[i] = random_logit(6.0f); break;
        case SHAPE_MODEL: z[i] = random_logit(2.0f); break;
        case SHAPE_HEAD_AND_BULK: z[i] = random_logit(0.05f); break;
        default: z[i] = 1.5f; break;
        }
    }
    if (shape == SHAPE_MODEL) /* what a language model's logits look like: a few far ahead */
        for (int j = 0; j < 30; j++) z[(j * 5003 + 17) % BIG_N] = 12.0f + 0.25f * (float)j;
    if (shape == SHAPE_HEAD_AND_BULK)
        for (int j = 0; j < 100; j++) z[(j * 1499 + 3) % BIG_N] = 10.0f;
}

static void test_large_vocab_sets(void) {
    enum { N = BIG_N };
    float *z = malloc(N * sizeof *z);
    int32_t *order = malloc(N * sizeof *order);
    double *prob = malloc(N * sizeof *prob);
    int32_t *ids = malloc(N * sizeof *ids);
    float *probs = malloc(N * sizeof *probs);
    if (!z || !order || !prob || !ids || !probs) {
        check(false, "sampler.large.memory", "large vocabulary: out of memory");
        return;
    }
    const float top_ps[N_SHAPES] = {0.5f, 0.9f, 0.95f, 0.95f, 0.95f, 0.5f};
    for (int t = 0; t < N_SHAPES; t++) {
        make_shape(t, z);
        for (int i = 0; i < N; i++) order[i] = i;
        ref_logits = z;
        qsort(order, N, sizeof *order, compare_ref);
        sampler_softmax(z, N, 1.0f, prob);

        /* top-p, top-k off: the near-the-top path or the histogram path */
        double cum = 0;
        int want = N;
        for (int i = 0; i < N; i++) {
            cum += prob[order[i]];
            if (cum >= top_ps[t]) { want = i + 1; break; }
        }
        wick_sampler_params sp = plain_params(1.0f, 5);
        sp.top_p = top_ps[t];
        wick_sampler *s = make_sampler(&sp, N);
        if (!s) break;
        sampler_sample(s, z);
        int n = sampler_top(s, N, ids, probs);
        bool ok = n == want;
        for (int i = 0; ok && i < n; i++) ok = ids[i] == order[i];
        char what[200];
        snprintf(what, sizeof what, "n=152064, %s: top-p %.2f keeps the sorted head of %d (got %d)",
                 shape_names[t], top_ps[t], want, n);
        check(ok, check_id("sampler.large.%s.top-p", shape_ids[t]), "%s", what);
        sampler_free(s);

        /* min-p, top-k off: the threshold path */
        sp = plain_params(1.0f, 5);
        sp.min_p = 0.05f;
        double p_max = prob[order[0]];
        want = 0;
        for (int i = 0; i < N; i++) want += prob[i] / p_max >= (double)0.05f;
        s = make_sampler(&sp, N);
        if (!s) break;
        sampler_sample(s, z);
        n = sampler_top(s, N, ids, probs);
        ok = n == want;
        for (int i = 0; ok && i < n; i++) ok = ids[i] == order[i];
        snprintf(what, sizeof what, "n=152064, %s: min-p 0.05 keeps %d (got %d)", shape_names[t], want, n);
        check(ok, check_id("sampler.large.%s.min-p", shape_ids[t]), "%s", what);
        sampler_free(s);

        /* no truncation: sampler_top is the head of the full softmax */
        sp = plain_params(1.0f, 5);
        s = make_sampler(&sp, N);
        if (!s) break;
        sampler_sample(s, z);
        n = sampler_top(s, 10, ids, probs);
        ok = n == 10;
        for (int i = 0; ok && i < n; i++) ok = ids[i] == order[i] && fabs(probs[i] - prob[order[i]]) < 1e-7;
        snprintf(what, sizeof what, "n=152064, %s, no truncation: top 10 = softmax head", shape_names[t]);
        check(ok, check_id("sampler.large.%s.top", shape_ids[t]), "%s", what);
        sampler_free(s);
    }
    free(z);
    free(order);
    free(prob);
    free(ids);
    free(probs);
}

/* The exp behind every weight, against libm's, through the softmax of (0, x): p1/p0 = e^x. */
static void test_exp_accuracy(void) {
    double worst = 0.0;
    for (double x = -85.0; x <= 0.0; x += 0.0137) {
        float z[2] = {0.0f, (float)x};
        double p[2];
        sampler_softmax(z, 2, 1.0f, p);
        double want = exp((double)z[1]);
        double rel = fabs(p[1] / p[0] - want) / want;
        if (rel > worst) worst = rel;
    }
    char what[120];
    snprintf(what, sizeof what, "the weights' exp is within 3e-7 of libm's over [-85, 0] (worst %.2g)", worst);
    check(worst < 3e-7, "sampler.exp.accuracy", "%s", what);
    float deep[2] = {0.0f, -87.0f};
    double p[2];
    sampler_softmax(deep, 2, 1.0f, p);
    check(p[0] == 1.0 && p[1] == 0.0, "sampler.exp.underflow", "a weight below e^-86 is 0");
}

static void test_special_values(void) {
    const float z[4] = {1.0f, INFINITY, 5.0f, INFINITY};
    wick_sampler_params sp = plain_params(1.0f, 21);
    wick_sampler *s = make_sampler(&sp, 4);
    if (!s) return;
    int32_t id;
    float prob;
    check(sampler_top(s, 1, &id, &prob) == 0 && sampler_last_drawn(s) == -1, "sampler.special.before-draw", "nothing to report before a draw");
    int count[4] = {0};
    for (int i = 0; i < 10000; i++) count[sampler_sample(s, z)]++;
    int32_t ids[4];
    float probs[4];
    int n = sampler_top(s, 4, ids, probs);
    check(count[0] == 0 && count[2] == 0 && abs(count[1] - 5000) < 300 && n == 2 && ids[0] == 1 &&
              ids[1] == 3 && probs[0] == 0.5f && probs[1] == 0.5f,
          "sampler.special.two-inf", "two +inf logits share all the mass equally");
    sampler_reset(s);
    check(sampler_top(s, 1, &id, &prob) == 0 && sampler_last_drawn(s) == -1, "sampler.special.reset", "reset forgets the last draw");
    sampler_free(s);

    /* top-k and min-p together, and the order sampler_top reports on ties */
    const double hp[6] = {0.40, 0.25, 0.15, 0.10, 0.06, 0.04};
    float hz[6];
    logits_of(hp, 6, hz);
    sp = plain_params(0.7f, 22);
    sp.top_k = 3;
    sp.min_p = 0.5f;
    const int first[6] = {0, 1, 2, 3, 4, 5};
    check_kept_set(&sp, hz, 6, first, 2, "sampler.kept.top-k3-min-p0.5", "top-k 3 then min-p 0.5 keeps {0,1}");
    const float tied[6] = {0.5f, 2.0f, 0.5f, 2.0f, 0.5f, -1.0f};
    const int tied_order[6] = {1, 3, 0, 2, 4, 5};
    sp = plain_params(1.0f, 23);
    check_kept_set(&sp, tied, 6, tied_order, 6, "sampler.kept.ties", "no truncation: sampler_top orders ties by id");
    sp.top_k = 4;
    check_kept_set(&sp, tied, 6, tied_order, 4, "sampler.kept.top-k4-ties", "top-k 4 over ties keeps the lower ids");
}

/* ---- penalties and bias -------------------------------------------------------------------- */

static void test_penalties(void) {
    enum { N = 8 };
    const float z[N] = {2.0f, -1.0f, 0.5f, -3.0f, 1.5f, 0.0f, 4.0f, -0.25f};
    float w[N], want[N];

    /* repetition penalty over the last 4: history 6 0 | 1 2 1 3 → window {1,2,1,3} */
    wick_sampler_params sp = plain_params(1.0f, 1);
    sp.repeat_penalty = 1.25f;
    sp.repeat_last_n = 4;
    wick_sampler *s = make_sampler(&sp, N);
    if (!s) return;
    const int32_t hist[6] = {6, 0, 1, 2, 1, 3};
    for (int i = 0; i < 6; i++) sampler_accept(s, hist[i]);
    memcpy(w, z, sizeof w);
    sampler_apply_penalties_and_bias(s, w);
    memcpy(want, z, sizeof want);
    want[1] = -1.0f * 1.25f;   /* negative: multiplied, once though it occurs twice */
    want[2] = 0.5f / 1.25f;    /* positive: divided */
    want[3] = -3.0f * 1.25f;
    check(memcmp(w, want, sizeof w) == 0, "sampler.penalty.repeat",
          "repeat penalty 1.25 over the last 4: positive /, negative *, once per distinct token, 0 and 6 left alone");
    sampler_free(s);

    /* frequency and presence: logit -= count*freq + (count>0)*presence */
    sp = plain_params(1.0f, 1);
    sp.repeat_last_n = 5;
    sp.frequency_penalty = 0.5f;
    sp.presence_penalty = 0.75f;
    s = make_sampler(&sp, N);
    if (!s) return;
    const int32_t hist2[7] = {7, 4, 4, 5, 4, 0, 99 /* out of range: ignored */};
    for (int i = 0; i < 7; i++) sampler_accept(s, hist2[i]);
    memcpy(w, z, sizeof w);
    sampler_apply_penalties_and_bias(s, w);
    memcpy(want, z, sizeof want);
    want[4] = 1.5f - (3.0f * 0.5f + 0.75f);
    want[5] = 0.0f - (1.0f * 0.5f + 0.75f);
    want[0] = 2.0f - (1.0f * 0.5f + 0.75f);
    check(memcmp(w, want, sizeof w) == 0, "sampler.penalty.frequency-presence", "frequency 0.5 and presence 0.75 over the last 5: exact values");

    /* the penalty is used by sampling: greedy now avoids token 6 only if penalised */
    sampler_reset(s);
    memcpy(w, z, sizeof w);
    sampler_apply_penalties_and_bias(s, w);
    check(memcmp(w, z, sizeof w) == 0, "sampler.penalty.reset", "sampler_reset forgets the history");
    sampler_free(s);

    sp = plain_params(0.0f, 1);
    sp.repeat_penalty = 3.0f;
    sp.repeat_last_n = 2;
    s = make_sampler(&sp, N);
    if (!s) return;
    sampler_accept(s, 6);
    int32_t a = sampler_sample(s, z); /* 4/3 < 2: token 0 */
    sampler_accept(s, 0);
    sampler_accept(s, 4);
    int32_t b = sampler_sample(s, z); /* 6 left the window */
    check(a == 0 && b == 6, "sampler.penalty.greedy", "greedy sampling sees the penalty, and tokens leave the window");
    sampler_free(s);
}

static void test_bias(void) {
    enum { N = 5 };
    const float z[N] = {1.0f, 3.0f, 0.0f, 2.0f, -1.0f};
    const int32_t tokens[3] = {1, 2, 4};
    const float values[3] = {-INFINITY, 2.5f, -0.5f};
    wick_sampler_params sp = plain_params(1.0f, 9);
    sp.repeat_penalty = 2.0f;
    sp.repeat_last_n = 4;
    sp.bias_tokens = tokens;
    sp.bias_values = values;
    sp.n_bias = 3;
    wick_sampler *s = make_sampler(&sp, N);
    if (!s) return;
    sampler_accept(s, 2);
    float w[N];
    memcpy(w, z, sizeof w);
    sampler_apply_penalties_and_bias(s, w);
    /* token 2: penalty first (0 * 2 = 0), then + 2.5 */
    check(w[0] == 1.0f && w[1] == -INFINITY && w[2] == 2.5f && w[3] == 2.0f && w[4] == -1.5f,
          "sampler.bias.values", "logit bias after the penalty: +2.5, -0.5 and -inf applied as given");
    bool banned_drawn = false;
    for (int i = 0; i < 20000; i++) banned_drawn = banned_drawn || sampler_sample(s, z) == 1;
    check(!banned_drawn, "sampler.bias.ban", "a -inf bias bans the (otherwise top) token over 20000 draws");
    sampler_free(s);

    const int32_t all[N] = {0, 1, 2, 3, 4};
    const float bans[N] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    sp = plain_params(1.0f, 9);
    sp.bias_tokens = all;
    sp.bias_values = bans;
    sp.n_bias = N;
    s = make_sampler(&sp, N);
    if (!s) return;
    int32_t id;
    float prob;
    check(sampler_sample(s, z) == -1 && sampler_last_drawn(s) == -1 && sampler_top(s, 1, &id, &prob) == 0,
          "sampler.bias.all-banned", "every token banned: sample returns -1, nothing in sampler_top");
    sampler_free(s);

    const float with_nan[N] = {NAN, 1.0f, NAN, 0.5f, NAN};
    sp = plain_params(1.0f, 9);
    s = make_sampler(&sp, N);
    if (!s) return;
    bool ok = true;
    for (int i = 0; i < 2000; i++) {
        int32_t t = sampler_sample(s, with_nan);
        ok = ok && (t == 1 || t == 3);
    }
    check(ok, "sampler.bias.nan", "NaN logits are never drawn");
    sampler_free(s);
}

/* ---- seeds --------------------------------------------------------------------------------- */

static uint64_t draw_hash(uint64_t seed, int n_draws, int32_t *first) {
    enum { N = 2000 };
    static float z[N];
    uint64_t data = 777;
    for (int i = 0; i < N; i++) {
        double u = sampler_uniform(&data) + sampler_uniform(&data);
        z[i] = (float)((u - 1.0) * 8.0);
    }
    wick_sampler_params sp;
    sampler_params_default(&sp);
    sp.seed = seed;
    sp.top_k = 0; /* the full-vocabulary paths, with top-p and min-p */
    wick_sampler *s = make_sampler(&sp, N);
    if (!s) return 0;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (int i = 0; i < n_draws; i++) {
        int32_t t = sampler_sample(s, z);
        sampler_accept(s, t);
        if (i < 8) first[i] = t;
        for (int b = 0; b < 4; b++) {
            h ^= (uint8_t)((uint32_t)t >> (8 * b));
            h *= 0x100000001b3ull;
        }
    }
    sampler_free(s);
    return h;
}

static void test_seeds(void) {
    uint64_t st = 0;
    check(sampler_rng_next(&st) == 0xE220A8397B1DCDAFull, "sampler.seed.splitmix64", "SplitMix64 from state 0 gives 0xE220A8397B1DCDAF");

    int32_t a[8], b[8], c[8];
    uint64_t ha = draw_hash(1234, 1000, a), hb = draw_hash(1234, 1000, b), hc = draw_hash(1235, 1000, c);
    check(ha == hb && memcmp(a, b, sizeof a) == 0, "sampler.seed.same", "same seed → same 1000 draws");
    check(ha != hc, "sampler.seed.different", "different seed → different draws");
    check_note("draw hash (defaults but top_k=0, n_vocab=2000, seed 1234, 1000 draws): %016llx, first %d %d %d %d %d %d %d %d",
           (unsigned long long)ha, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);

    /* the default chain (top-k 40 path) too, in a second hash */
    enum { N = 2000 };
    static float z[N];
    uint64_t data = 4242;
    for (int i = 0; i < N; i++) z[i] = (float)((sampler_uniform(&data) - 0.5) * 20.0);
    wick_sampler_params sp;
    sampler_params_default(&sp);
    sp.seed = 99;
    wick_sampler *s = make_sampler(&sp, N);
    if (!s) return;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 1000; i++) {
        int32_t t = sampler_sample(s, z);
        sampler_accept(s, t);
        h = (h ^ (uint32_t)t) * 0x100000001b3ull;
    }
    check_note("draw hash (defaults, n_vocab=2000, seed 99, 1000 draws): %016llx", (unsigned long long)h);
    check(ha == DRAW_HASH_TOPP && h == DRAW_HASH_DEFAULT, "sampler.seed.recorded", "draw hashes equal the recorded ones (native = wasm)");
    sampler_free(s);
}

/* ---- parameter validation ------------------------------------------------------------------ */

static void expect_refused(wick_sampler_params p, const char *what) {
    errmsg err = {0};
    wick_sampler *s = NULL;
    int rc = sampler_new(&s, &p, 100, &err);
    char line[700];
    snprintf(line, sizeof line, "refuses %s: \"%s\"", what, err.text);
    check(rc == -1 && s == NULL && err.text[0] != '\0', check_id("sampler.refuses.%s", check_slug(what)), "%s", line);
    sampler_free(s);
}

static void test_validation(void) {
    wick_sampler_params d;
    sampler_params_default(&d);
    wick_sampler_params p = d;
    p.temperature = -0.5f;
    expect_refused(p, "a negative temperature");
    p = d;
    p.temperature = NAN;
    expect_refused(p, "a NaN temperature");
    p = d;
    p.top_k = -1;
    expect_refused(p, "a negative top_k");
    p = d;
    p.top_p = 1.5f;
    expect_refused(p, "top_p above 1");
    p = d;
    p.top_p = NAN;
    expect_refused(p, "a NaN top_p");
    p = d;
    p.min_p = -0.1f;
    expect_refused(p, "a negative min_p");
    p = d;
    p.repeat_penalty = 0.0f;
    expect_refused(p, "repeat_penalty 0");
    p = d;
    p.repeat_last_n = -1;
    expect_refused(p, "a negative repeat_last_n");
    p = d;
    p.frequency_penalty = NAN;
    expect_refused(p, "a NaN frequency_penalty");
    const int32_t bad_token = 100;
    const float value = 1.0f;
    p = d;
    p.bias_tokens = &bad_token;
    p.bias_values = &value;
    p.n_bias = 1;
    expect_refused(p, "a bias token outside the vocabulary");
    const int32_t token = 3;
    const float plus_inf = INFINITY;
    p.bias_tokens = &token;
    p.bias_values = &plus_inf;
    expect_refused(p, "a +inf bias");

    errmsg err = {0};
    wick_sampler *s;
    check(sampler_new(&s, &d, 0, &err) == -1, "sampler.refuses.n-vocab-0", "refuses n_vocab 0");
    check(sampler_new(&s, &d, 100, &err) == 0, "sampler.accepts-defaults", "accepts the defaults");
    sampler_free(s);
    check(d.temperature == 0.8f && d.top_k == 40 && d.top_p == 0.95f && d.min_p == 0.05f &&
              d.repeat_penalty == 1.1f && d.repeat_last_n == 64 && d.frequency_penalty == 0.0f &&
              d.presence_penalty == 0.0f,
          "sampler.defaults", "defaults: T 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat 1.1 over 64");
}

/* ---- stop strings -------------------------------------------------------------------------- */

/* Feeds chunks, collects the shown text; returns the push result of the last chunk. */
static int feed(stop_matcher *m, const char *const *chunks, int n, char *shown, bool flush) {
    shown[0] = '\0';
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *out;
        size_t len;
        rc = stop_matcher_push(m, chunks[i], strlen(chunks[i]), &out, &len);
        strncat(shown, out, len);
    }
    if (flush) {
        const char *out;
        size_t len;
        stop_matcher_flush(m, &out, &len);
        strncat(shown, out, len);
    }
    return rc;
}

static void test_stop_matcher(void) {
    const char *stops[2] = {"<|end|>", "\n\nUser:"};
    stop_matcher m;
    errmsg err = {0};
    if (stop_matcher_init(&m, stops, 2, &err) != 0) {
        check(false, "sampler.stop.init", "%s", err.text);
        return;
    }
    char shown[256];

    const char *split[5] = {"Hello wor", "ld<|e", "nd", "|>after", "more"};
    int rc = feed(&m, split, 5, shown, true);
    check(rc == 1 && strcmp(shown, "Hello world") == 0 && m.matched == 0,
          "sampler.stop.split", "stop string split over three chunks: never shown, text before it is, nothing after");

    /* what is held back while the prefix is still possible */
    stop_matcher_reset(&m);
    const char *out;
    size_t len;
    stop_matcher_push(&m, "abc<|e", 6, &out, &len);
    check(len == 3 && memcmp(out, "abc", 3) == 0, "sampler.stop.held", "a possible prefix \"<|e\" is held back");
    stop_matcher_push(&m, "x", 1, &out, &len);
    check(len == 4 && memcmp(out, "<|ex", 4) == 0, "sampler.stop.released", "the prefix is released once it cannot match");

    stop_matcher_reset(&m);
    const char *near[4] = {"a\n", "\nUse", "d to", " it"};
    rc = feed(&m, near, 4, shown, true);
    check(rc == 0 && strcmp(shown, "a\n\nUsed to it") == 0, "sampler.stop.near-miss", "a near miss of \"\\n\\nUser:\" is all shown");

    stop_matcher_reset(&m);
    const char *second[3] = {"x\n", "\nUser", ": hi"};
    rc = feed(&m, second, 3, shown, false);
    check(rc == 1 && strcmp(shown, "x") == 0 && m.matched == 1, "sampler.stop.second", "the second stop string matches across chunks");

    stop_matcher_reset(&m);
    const char *tail[2] = {"end <|en", "d|"};
    rc = feed(&m, tail, 2, shown, true);
    check(rc == 0 && strcmp(shown, "end <|end|") == 0, "sampler.stop.flush", "at the end, flush releases a held prefix");

    stop_matcher_reset(&m);
    const char *one[1] = {"pre<|end|>post"};
    rc = feed(&m, one, 1, shown, false);
    const char *more[1] = {"again"};
    char after[64];
    int rc2 = feed(&m, more, 1, after, true);
    check(rc == 1 && rc2 == 1 && strcmp(shown, "pre") == 0 && after[0] == '\0',
          "sampler.stop.inside-chunk", "a match inside one chunk; the matcher stays stopped");

    stop_matcher_reset(&m);
    const char *bytes[8] = {"<", "|", "e", "n", "d", "|", ">", "z"};
    rc = feed(&m, bytes, 8, shown, true);
    check(rc == 1 && shown[0] == '\0', "sampler.stop.bytes", "a stop string fed byte by byte is never shown");
    stop_matcher_free(&m);

    /* overlapping prefixes: "aab" in "aaab" */
    const char *overlap[1] = {"aab"};
    stop_matcher_init(&m, overlap, 1, &err);
    const char *aaab[4] = {"a", "a", "a", "b!"};
    rc = feed(&m, aaab, 4, shown, true);
    check(rc == 1 && strcmp(shown, "a") == 0, "sampler.stop.overlap", "overlapping prefix: \"aab\" found in \"a\",\"a\",\"a\",\"b!\"");
    stop_matcher_free(&m);

    const char *empty[1] = {""};
    check(stop_matcher_init(&m, empty, 1, &err) == -1, "sampler.stop.empty", "an empty stop string is refused");
    stop_matcher_init(&m, NULL, 0, &err);
    const char *plain[2] = {"no stops ", "at all"};
    rc = feed(&m, plain, 2, shown, true);
    check(rc == 0 && strcmp(shown, "no stops at all") == 0, "sampler.stop.none", "without stop strings everything passes at once");
    stop_matcher_free(&m);
}

/* ---- timing -------------------------------------------------------------------------------- */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void time_config(const char *name, wick_sampler_params sp, const float *z, int32_t n) {
    wick_sampler *s = make_sampler(&sp, n);
    if (!s) return;
    for (int i = 0; i < 64; i++) sampler_accept(s, (i * 7919) % n);
    const int reps = 200;
    sampler_sample(s, z); /* warm up */
    double t0 = now_ms();
    for (int i = 0; i < reps; i++) sampler_sample(s, z);
    double ms = (now_ms() - t0) / reps;
    check_note("timing   n_vocab=%d, %s: %.3f ms per sample", n, name, ms);
    sampler_free(s);
}

static void test_timing(void) {
    float *z = malloc(BIG_N * sizeof *z);
    if (!z) return;
    const int shapes[2] = {SHAPE_MODEL, SHAPE_BELL};
    for (int t = 0; t < 2; t++) {
        make_shape(shapes[t], z);
        check_note("timing, logits %s:", shape_names[shapes[t]]);
        wick_sampler_params sp;
        sampler_params_default(&sp);
        time_config("defaults (top-k 40, top-p .95, min-p .05, repeat 1.1)", sp, z, BIG_N);
        sp.top_k = 0;
        time_config("top-k off, top-p .95, min-p .05", sp, z, BIG_N);
        sp.min_p = 0.0f;
        time_config("top-k off, top-p .95 only", sp, z, BIG_N);
        sp.top_p = 1.0f;
        sp.min_p = 0.05f;
        time_config("top-k off, min-p .05 only", sp, z, BIG_N);
        time_config("no truncation", plain_params(1.0f, 1), z, BIG_N);
        time_config("greedy", plain_params(0.0f, 1), z, BIG_N);
    }
    free(z);
}

int main(void) {
    test_worked_example();
    test_frequencies();
    test_top_k();
    test_top_p_min_p();
    test_large_vocab_sets();
    test_exp_accuracy();
    test_special_values();
    test_penalties();
    test_bias();
    test_seeds();
    test_validation();
    test_stop_matcher();
    test_timing();
    return check_summary();
}
