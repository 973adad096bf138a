/* tests/test_context.c — the context shift: after dropping positions and re-rotating the cached
 * keys, layer 0's keys must equal keys computed afresh for the same tokens at their new
 * positions (at layer 0 a key depends only on its token and its position), and generation must
 * go on. With a second file, a gemma3 model (sliding-window layers), the same with the window
 * set to 32: the sliding layers' cache stays at the window as the context grows to 1024, a ring
 * that wraps gives the logits of a cache that holds everything, and a shift past the window
 * matches a fresh evaluation. And an external context (the glue's WebGPU path) driven by the
 * generator, its operations carried out on a CPU context. And every WICK_ERR_* status, provoked one
 * by one (the code checked, not only the text). With a third file, a gemma4 model
 * (`wick synth --arch gemma4`: layers of two shapes, the last ones reading earlier layers'
 * caches): the cache holds the layers with a cache of their own only, a shift leaves layer 0's
 * keys equal to fresh ones, and generation goes on through shifts; the same for a gemma3n model
 * (AltUp's streams around the layers). With a qwen2vl model (M-RoPE): a picture's positions (an
 * image slot with a grid) take 2-D rope positions and move the text after it by the grid's longer
 * side, so a shift that drops a picture moves the kept keys by that much (they equal a fresh
 * evaluation of the kept tokens), one that keeps it moves it whole, and a saved state carries the
 * positions (the next token's logits after a load equal the saving context's). Usage:
 * test_context MODEL.gguf [GEMMA3.gguf [GEMMA4.gguf [GEMMA3N.gguf [LFM2.gguf [QWEN2VL.gguf]]]]].
 * Output and exit status: tests/check.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "forward.h"
#include "quant.h"
#include "wick.h"

/* layer 0's cached key i of position pos (a ring wraps), whatever the cache's type */
static float cached_key(const wick_ctx *c, int pos, int i) {
    float row[1024];
    if (kv_dim(model_layer_config(c->model, 0)) > 1024) return NAN;
    kv_values_load(kv_cache_type(c, c->k_cache), kv_at(c, c->k_cache, 0, pos), row, (size_t)kv_dim(model_layer_config(c->model, 0)));
    return row[i];
}

/* largest |a − b| over layer-0 keys of positions [from, n), relative to the largest |b| */
static double key_difference(const wick_ctx *a, const wick_ctx *b, int from, int n) {
    int kvd = kv_dim(model_layer_config(a->model, 0));
    double worst = 0, scale = 0;
    for (int p = from; p < n; p++)
        for (int i = 0; i < kvd; i++) {
            double x = cached_key(a, p, i), y = cached_key(b, p, i);
            if (fabs(x - y) > worst) worst = fabs(x - y);
            if (fabs(y) > scale) scale = fabs(y);
        }
    return worst / (scale > 0 ? scale : 1);
}

static void shift_case(wick_model *m, const char *name, int kv_type, int n_keep, int n_discard, double tol) {
    enum { N = 60 };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = i == 0 ? 1 : 3 + (i * 37) % 500;
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 64;
    p.kv_type = kv_type;
    wick_ctx *shifted, *fresh;
    char id[64];
    snprintf(id, sizeof id, "context.%s.%s.keep%d-drop%d", name, kv_type == WICK_KV_F16 ? "f16" : "f32", n_keep, n_discard);
    if (wick_ctx_new(m, &p, &shifted) || wick_ctx_new(m, &p, &fresh)) {
        check(0, check_id("%s.contexts", id), "%s", wick_last_error());
        return;
    }
    wick_eval(shifted, toks, N, 0);
    check(wick_kv_shift(shifted, n_keep, n_discard) == WICK_OK, check_id("%s.accepted", id), "shift accepted");
    check(wick_n_past(shifted) == N - n_discard, check_id("%s.positions", id), "positions after the shift");
    /* the same tokens, minus the dropped ones, evaluated at their new positions */
    int32_t kept[N];
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i < n_keep || i >= n_keep + n_discard) kept[n++] = toks[i];
    wick_eval(fresh, kept, n, 0);
    double d = key_difference(shifted, fresh, 0, n);
    char what[160];
    snprintf(what, sizeof what, "%s cache, keep %d drop %d: layer-0 keys equal fresh ones (max diff %.2e of max |k|, bound %.0e)",
             kv_type == WICK_KV_F16 ? "f16" : "f32", n_keep, n_discard, d, tol);
    check(d <= tol, check_id("%s.keys", id), "%s", what);
    /* the shifted context still evaluates (deeper layers' keys, which saw the dropped tokens,
     * are kept as they are, so its logits differ from a fresh context's by design) */
    int32_t next = 42;
    int finite = wick_eval(shifted, &next, 1, 0) == WICK_OK;
    const float *l = wick_get_logits(shifted, -1);
    for (int i = 0; finite && i < m->config.n_vocab; i++) finite = isfinite(l[i]);
    check(finite, check_id("%s.finite", id), "the shifted context evaluates the next token to finite logits");
    check(wick_kv_shift(shifted, 10, 100) != WICK_OK, check_id("%s.too-many", id), "dropping more than is cached is refused");
    wick_ctx_free(shifted);
    wick_ctx_free(fresh);
}

static wick_ctx *new_ctx(wick_model *m, int n_ctx, int n_batch) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    wick_ctx *c = NULL;
    if (wick_ctx_new(m, &p, &c) != WICK_OK) check_note("context: %s", wick_last_error());
    return c;
}

/* RMS of (a − b) over the standard deviation of b */
static double rel_rms(const float *a, const float *b, int n) {
    double mean = 0, var = 0, d = 0;
    for (int i = 0; i < n; i++) mean += b[i];
    mean /= n;
    for (int i = 0; i < n; i++) {
        var += (b[i] - mean) * (b[i] - mean);
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    }
    return sqrt(d / n) / sqrt(var / n);
}

static int token_at(int i) { return i == 0 ? 1 : 3 + (i * 37 + i / 7) % 500; }

/* Greedy generation of max_tokens after n_prompt tokens in a context of n_ctx keeping n_keep
 * (decode one token at a time): the steps taken and the tokens dropped by shifts; 1 when every
 * call succeeded. */
static int generate_through_shifts(wick_model *m, int n_ctx, int n_keep, int max_tokens, const int32_t *prompt, int n_prompt,
                                   int *steps, int *dropped) {
    wick_ctx *c = new_ctx(m, n_ctx, 1);
    wick_gen *g = NULL;
    int ok = c && wick_gen_new(c, &g) == WICK_OK && wick_gen_set(g, "temperature", 0) == WICK_OK &&
             wick_gen_set(g, "ignore_eos", 1) == WICK_OK && wick_gen_set(g, "n_keep", n_keep) == WICK_OK &&
             wick_gen_set(g, "max_tokens", max_tokens) == WICK_OK && wick_gen_start(g, prompt, n_prompt) == WICK_OK;
    while (ok && wick_gen_finish(g) == WICK_FINISH_NONE) {
        ok = wick_gen_next(g) == WICK_OK;
        *dropped += wick_gen_shifted(g);
        ++*steps;
    }
    wick_gen_free(g);
    wick_ctx_free(c);
    return ok;
}

/* The sliding-window cache of a gemma3 model with its window set to 32 (layers 0–4 slide, 5 sees all). */
static void sliding_window_cases(wick_model *m) {
    enum { W = 32, N = 1000, CTX = 1024 };
    char what[200];
    m->config.n_swa = W;
    int n_vocab = m->config.n_vocab, kvd = m->config.n_kv_heads * m->config.head_dim, sliding = 0;
    for (int l = 0; l < m->config.n_layers; l++) sliding += m->layers[l].sliding;
    check(sliding == 5 && m->config.n_layers == 6, "context.gemma3.sliding-layers", "gemma3: five sliding layers of six");
    /* memory: each sliding layer holds W − 1 + n_batch positions, whatever the context */
    wick_ctx *ring = new_ctx(m, CTX, 32), *small = new_ctx(m, 256, 32), *whole = new_ctx(m, CTX, CTX), *one = new_ctx(m, CTX, 1);
    if (!ring || !small || !whole || !one) {
        check(0, "context.gemma3.contexts", "contexts");
        return;
    }
    size_t row = 2 * (size_t)kvd * 2; /* K and V, F16 */
    snprintf(what, sizeof what, "KV cache of a 1024-token context: %zu bytes = 5 sliding layers x %d positions + 1 x 1024",
             wick_kv_bytes(ring), W - 1 + 32);
    check(wick_kv_bytes(ring) == (5 * (size_t)(W - 1 + 32) + CTX) * row, "context.gemma3.kv-bytes", "%s", what);
    check(wick_kv_bytes(ring) - wick_kv_bytes(small) == (size_t)(CTX - 256) * row, "context.gemma3.kv-growth",
          "from 256 to 1024 tokens of context only the full layer's cache grows");
    check(wick_kv_bytes(whole) == 6 * (size_t)CTX * row, "context.gemma3.whole-batch", "a batch as large as the context keeps every position");
    /* the ring wraps many times over 1000 tokens: the logits of every position equal those of
     * the cache that holds everything (batches of 32 against one batch), and decode's */
    int32_t *toks = malloc(N * sizeof *toks);
    float *rows_ring = malloc((size_t)N * n_vocab * sizeof(float));
    for (int i = 0; i < N; i++) toks[i] = token_at(i);
    int ok = wick_eval(ring, toks, N, 1) == WICK_OK;
    if (ok) memcpy(rows_ring, wick_get_logits(ring, 0), (size_t)N * n_vocab * sizeof(float));
    ok = ok && wick_eval(whole, toks, N, 1) == WICK_OK;
    int differ = -1;
    for (int i = 0; ok && i < N && differ < 0; i++)
        if (memcmp(rows_ring + (size_t)i * n_vocab, wick_get_logits(whole, i), (size_t)n_vocab * sizeof(float))) differ = i;
    snprintf(what, sizeof what, "1000 tokens through rings of 63: every position's logits equal the whole cache's (first difference: %d)", differ);
    check(ok && differ < 0, "context.gemma3.ring-logits", "%s", what);
    differ = -1;
    for (int i = 0; ok && i < N; i++) {
        ok = wick_eval(one, &toks[i], 1, 0) == WICK_OK;
        if (ok && differ < 0 && memcmp(rows_ring + (size_t)i * n_vocab, wick_get_logits(one, -1), (size_t)n_vocab * sizeof(float)))
            differ = i;
    }
    snprintf(what, sizeof what, "token by token through a ring of 32: the same logits bit for bit (first difference: %d)", differ);
    check(ok && differ < 0, "context.gemma3.ring-decode", "%s", what);

    /* shift past the window (keep 1, drop 500): the sliding layers' layer-0 keys equal fresh ones */
    check(wick_kv_shift(ring, 1, 500) == WICK_OK, "context.gemma3.shift", "shift of 500 positions past the window accepted");
    int32_t kept[N];
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i < 1 || i >= 501) kept[n++] = toks[i];
    wick_ctx *fresh = new_ctx(m, CTX, 32);
    ok = fresh && wick_eval(fresh, kept, n, 0) == WICK_OK;
    double d = ok ? key_difference(ring, fresh, n - (W - 1), n) : 1;
    snprintf(what, sizeof what, "the window's layer-0 keys after the shift equal fresh ones (max diff %.2e of max |k|)", d);
    check(ok && d <= 2e-3, "context.gemma3.shift-keys", "%s", what);
    /* a shift that needs kept positions the rings dropped long ago is refused, not wrong */
    check(wick_kv_shift(ring, 1, wick_n_past(ring) - 10) != WICK_OK && strstr(wick_last_error(), "sliding"),
          "context.gemma3.shift-refused", "a shift whose window would need overwritten kept positions is refused with a message");
    check(wick_kv_trim(ring, 100) != WICK_OK, "context.gemma3.trim-refused", "cutting back past what the rings hold is refused");
    check(wick_kv_trim(ring, wick_n_past(ring) - 20) == WICK_OK, "context.gemma3.trim", "cutting back within the ring's reach works");
    wick_ctx_free(fresh);

    /* every layer sliding: then the dropped tokens are out of every window and the next token's
     * logits after the shift match a fresh evaluation of the tokens that stay */
    for (int l = 0; l < m->config.n_layers; l++) m->layers[l].sliding = true;
    wick_ctx *all = new_ctx(m, CTX, 32);
    fresh = new_ctx(m, CTX, 32);
    float *after = malloc((size_t)n_vocab * sizeof(float));
    int32_t next = 42;
    ok = all && fresh && wick_eval(all, toks, N, 0) == WICK_OK && wick_kv_shift(all, 1, 500) == WICK_OK &&
         wick_eval(all, &next, 1, 0) == WICK_OK;
    if (ok) memcpy(after, wick_get_logits(all, -1), (size_t)n_vocab * sizeof(float));
    kept[n] = next;
    ok = ok && wick_eval(fresh, kept, n + 1, 0) == WICK_OK;
    d = ok ? rel_rms(after, wick_get_logits(fresh, -1), n_vocab) : 1;
    snprintf(what, sizeof what, "all layers sliding: the next token's logits after the shift match a fresh evaluation (RMS/std %.2e)", d);
    check(ok && d < 2e-3, "context.gemma3.all-sliding", "%s", what);
    wick_ctx_free(all);
    wick_ctx_free(fresh);
    for (int l = 0; l < m->config.n_layers; l++) m->layers[l].sliding = l % 6 < 5;

    /* generation through shifts the rings cannot follow (keep 64 of a 128-token context, decode
     * with a 48-position window): the generator evaluates the kept tokens again and goes on */
    m->config.n_swa = 48;
    int steps = 0, dropped = 0;
    ok = generate_through_shifts(m, 128, 64, 300, toks, 70, &steps, &dropped);
    snprintf(what, sizeof what, "generation past a full 128-token context with a 48-position ring: %d tokens, %d dropped", steps, dropped);
    check(ok && steps == 300 && dropped > 0, "context.gemma3.generation", "%s%s%s", what, ok ? "" : ": ", ok ? "" : wick_last_error());
    wick_ctx_free(ring);
    wick_ctx_free(small);
    wick_ctx_free(whole);
    wick_ctx_free(one);
    free(toks);
    free(rows_ring);
    free(after);
}

static wick_ctx *new_ctx_kv(wick_model *m, int n_ctx, int n_batch, int kv_type) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.kv_type = kv_type;
    wick_ctx *c = NULL;
    if (wick_ctx_new(m, &p, &c) != WICK_OK) check_note("context: %s", wick_last_error());
    return c;
}

/* The block-type caches (Q8_0, Q4_0) on gemma3's sliding rings (window 32): their size; a ring
 * that wraps gives the logits of a cache that holds everything, bit for bit (a row is rounded the
 * same in any batch); a shift past the window leaves the window's layer-0 keys within the type's
 * rounding of fresh ones (dequantized, re-rotated, quantized again) and far from keys left
 * unrotated; a cut back and the same tokens again give the logits of never having cut. */
static void block_cache_cases(wick_model *m) {
    enum { W = 32, N = 300, CTX = 512, KEEP = 1, DROP = 150 };
    char what[240];
    m->config.n_swa = W;
    int n_vocab = m->config.n_vocab, kvd = m->config.n_kv_heads * m->config.head_dim;
    int32_t toks[N], kept[N];
    for (int i = 0; i < N; i++) toks[i] = token_at(i);
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i < KEEP || i >= KEEP + DROP) kept[n++] = toks[i];
    float *rows = malloc((size_t)N * n_vocab * sizeof(float)), *last = malloc((size_t)n_vocab * sizeof(float));
    static const struct { int type; const char *name; size_t block; double shift_tol, unrotated_min; } types[] = {
        {WICK_KV_Q8_0, "q8_0", 34, 2e-2, 1.0}, {WICK_KV_Q4_0, "q4_0", 18, 0.2, 1.0}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const char *tn = types[t].name;
        wick_ctx *ring = new_ctx_kv(m, CTX, 32, types[t].type), *whole = new_ctx_kv(m, CTX, CTX, types[t].type);
        wick_ctx *fresh = new_ctx_kv(m, CTX, 32, types[t].type), *plain = new_ctx_kv(m, CTX, 32, types[t].type);
        if (!ring || !whole || !fresh || !plain) {
            check(0, check_id("context.gemma3.%s.contexts", tn), "%s contexts", tn);
            wick_ctx_free(ring), wick_ctx_free(whole), wick_ctx_free(fresh), wick_ctx_free(plain);
            continue;
        }
        size_t row = 2 * (size_t)kvd / 32 * types[t].block; /* K and V */
        check(wick_kv_bytes(ring) == (5 * (size_t)(W - 1 + 32) + CTX) * row, check_id("context.gemma3.%s.kv-bytes", tn),
              "%s: KV cache of %zu bytes = (5 rings of %d + %d) positions x %zu bytes (blocks of 32 values)", tn, wick_kv_bytes(ring),
              W - 1 + 32, CTX, row);
        int ok = wick_eval(ring, toks, N, 1) == WICK_OK;
        if (ok) memcpy(rows, wick_get_logits(ring, 0), (size_t)N * n_vocab * sizeof(float));
        ok = ok && wick_eval(whole, toks, N, 1) == WICK_OK;
        int differ = -1;
        for (int i = 0; ok && i < N && differ < 0; i++)
            if (memcmp(rows + (size_t)i * n_vocab, wick_get_logits(whole, i), (size_t)n_vocab * sizeof(float))) differ = i;
        check(ok && differ < 0, check_id("context.gemma3.%s.ring-logits", tn),
              "%s: %d tokens through rings of 63 give the whole cache's logits bit for bit (first difference: %d)", tn, N, differ);
        /* cut back 20 (within the rings' reach) and evaluate the same 20 again: the same last logits */
        ok = ok && wick_kv_trim(ring, N - 20) == WICK_OK && wick_eval(ring, toks + N - 20, 20, 0) == WICK_OK;
        check(ok && !memcmp(wick_get_logits(ring, -1), rows + (size_t)(N - 1) * n_vocab, (size_t)n_vocab * sizeof(float)),
              check_id("context.gemma3.%s.trim", tn), "%s: cut back by 20 and the same tokens again: the same logits bit for bit", tn);
        /* shift past the window: keys re-rotated against fresh ones, and against keys left where they were */
        ok = ok && wick_eval(plain, toks, N, 0) == WICK_OK && wick_kv_shift(ring, KEEP, DROP) == WICK_OK && wick_eval(fresh, kept, n, 0) == WICK_OK;
        double d = ok ? key_difference(ring, fresh, n - (W - 1), n) : 1;
        double unrotated = 0; /* the unshifted context's keys of the same tokens, at their old positions */
        for (int p = n - (W - 1); ok && p < n; p++)
            for (int i = 0; i < kvd; i++) {
                double x = cached_key(plain, p + DROP, i), y = cached_key(fresh, p, i);
                if (fabs(x - y) > unrotated) unrotated = fabs(x - y);
            }
        double scale = 0;
        for (int p = n - (W - 1); ok && p < n; p++)
            for (int i = 0; i < kvd; i++) scale = fmax(scale, fabs(cached_key(fresh, p, i)));
        unrotated /= scale > 0 ? scale : 1;
        snprintf(what, sizeof what, "%s: after a shift of %d the window's layer-0 keys are within %.2e of fresh ones (bound %.0e; left unrotated: %.2e, "
                 "at least %.1f)", tn, DROP, d, types[t].shift_tol, unrotated, types[t].unrotated_min);
        check(ok && d <= types[t].shift_tol && unrotated >= types[t].unrotated_min, check_id("context.gemma3.%s.shift-keys", tn), "%s", what);
        int32_t next = 42;
        ok = ok && wick_eval(ring, &next, 1, 0) == WICK_OK;
        if (ok) memcpy(last, wick_get_logits(ring, -1), (size_t)n_vocab * sizeof(float));
        int finite = ok;
        for (int i = 0; finite && i < n_vocab; i++) finite = isfinite(last[i]);
        check(finite, check_id("context.gemma3.%s.after-shift", tn), "%s: the shifted context evaluates on to finite logits", tn);
        wick_ctx_free(ring), wick_ctx_free(whole), wick_ctx_free(fresh), wick_ctx_free(plain);
    }
    free(rows);
    free(last);
}

static void gemma3_cases(wick_model *m) {
    block_cache_cases(m);
    sliding_window_cases(m);
}

/* gemma4 and gemma3n: the KV-shared layers keep no cache and read their source layer's, which a
 * shift moves for them (gemma3n: with AltUp's streams, made afresh each batch, beside them). */
static void shared_kv_cases(wick_model *m) {
    const char *a = m->config.arch;
    enum { CTX = 256, N = 200, KEEP = 1, DROP = 100 };
    char what[200];
    int n_shared = 0, w = m->config.n_swa;
    wick_ctx *c = new_ctx(m, CTX, 32), *fresh = new_ctx(m, CTX, 32);
    if (!c || !fresh) {
        check(0, check_id("context.%s.contexts", a), "%s contexts", a);
        return;
    }
    size_t expect = 0;
    for (int l = 0; l < m->config.n_layers; l++) {
        if (m->layers[l].kv_layer != l) {
            n_shared++;
            continue;
        }
        int slots = m->layers[l].sliding ? w - 1 + 32 : CTX;
        expect += (size_t)slots * (size_t)kv_dim(model_layer_config(m, l)) * 2 * 2; /* K and V, F16 */
    }
    snprintf(what, sizeof what, "%s: a KV cache of %zu bytes, none for its %d KV-shared layers", a, wick_kv_bytes(c), n_shared);
    check(n_shared > 0 && wick_kv_bytes(c) == expect, check_id("context.%s.kv-bytes", a), "%s", what);
    int32_t toks[N], kept[N];
    int n = 0;
    for (int i = 0; i < N; i++) toks[i] = token_at(i);
    for (int i = 0; i < N; i++)
        if (i < KEEP || i >= KEEP + DROP) kept[n++] = toks[i];
    int ok = wick_eval(c, toks, N, 0) == WICK_OK && wick_kv_shift(c, KEEP, DROP) == WICK_OK && wick_eval(fresh, kept, n, 0) == WICK_OK;
    double d = ok ? key_difference(c, fresh, n - (w - 1), n) : 1;
    snprintf(what, sizeof what, "%s: the window's layer-0 keys after a shift equal fresh ones (max diff %.2e of max |k|)", a, d);
    check(ok && d <= 2e-3, check_id("context.%s.shift-keys", a), "%s", what);
    int32_t next = 42;
    ok = ok && wick_eval(c, &next, 1, 0) == WICK_OK;
    const float *l = ok ? wick_get_logits(c, -1) : NULL;
    int finite = l != NULL;
    for (int i = 0; finite && i < m->config.n_vocab; i++) finite = isfinite(l[i]);
    check(finite, check_id("context.%s.finite", a), "%s: after the shift the next token evaluates to finite logits", a);
    wick_ctx_free(c);
    wick_ctx_free(fresh);
    /* generation through shifts: a 64-token context keeping 8 */
    int steps = 0, dropped = 0;
    ok = generate_through_shifts(m, 64, 8, 150, toks, 20, &steps, &dropped);
    snprintf(what, sizeof what, "%s: generation past a full 64-token context: %d tokens, %d dropped", a, steps, dropped);
    check(ok && steps == 150 && dropped > 0, check_id("context.%s.generation", a), "%s", what);
}

/* Carries out an external context's operations on a CPU context (the role the WebGPU backend
 * plays in the glue) and hands the logits over: trims (a hybrid's state restored from its
 * snapshot), snapshots (into the slot named, which must be the one the CPU context picks) and
 * evaluations. Returns the tokens evaluated, -1 on a failure. saw_trim: set by a trim to a
 * shorter length, to 2 when that is neither 0 nor the current length. */
static int run_external_ops(wick_ctx *ext, wick_ctx *backend, int *saw_trim) {
    const int32_t *ops;
    int32_t n = wick_ctx_external_ops(ext, &ops), evaluated = 0;
    const float *logits = NULL;
    int32_t rows = 0;
    for (int32_t i = 0; i < n;) {
        if (ops[i] == WICK_OP_TRIM) {
            int32_t keep = ops[i + 1], was = wick_n_past(backend);
            if (wick_kv_trim(backend, keep) != WICK_OK) return -1;
            if (saw_trim && keep < was && *saw_trim < 2) *saw_trim = keep > 0 ? 2 : 1;
            i += 2;
            continue;
        }
        if (ops[i] == WICK_OP_SNAPSHOT) {
            int32_t slot = ops[i + 1];
            if (slot < 0 || slot > 1 || wick_state_snapshot(backend) != WICK_OK || backend->rs_snap_pos[slot] != wick_n_past(backend)) return -1;
            i += 2;
            continue;
        }
        int32_t pos = ops[i + 1], count = ops[i + 2], all = ops[i + 3];
        if (wick_kv_trim(backend, pos) != WICK_OK || wick_eval(backend, ops + i + 4, count, all) != WICK_OK) return -1;
        logits = wick_get_logits(backend, 0);
        rows = all ? count : 1;
        evaluated += count;
        i += 4 + count;
    }
    if (logits) {
        size_t n_vocab = (size_t)backend->model->config.n_vocab;
        memcpy(wick_ctx_external_logits(ext, rows), logits, (size_t)rows * n_vocab * sizeof(float));
    }
    return evaluated;
}

/* run_external_ops, answered with the k best logits of the row only (wick_ctx_external_top_logits),
 * ranked as the sampler ranks (logit descending, ties by lower id), as the WebGPU top-k pass does. */
static int run_external_ops_top(wick_ctx *ext, wick_ctx *backend, int32_t k) {
    const int32_t *ops;
    int32_t n = wick_ctx_external_ops(ext, &ops), evaluated = 0;
    for (int32_t i = 0; i < n;) {
        if (ops[i] == WICK_OP_TRIM) { i += 2; continue; }
        int32_t pos = ops[i + 1], count = ops[i + 2];
        if (ops[i + 3] || wick_kv_trim(backend, pos) != WICK_OK || wick_eval(backend, ops + i + 4, count, 0) != WICK_OK) return -1;
        evaluated += count;
        i += 4 + count;
    }
    if (evaluated == 0) return 0;
    const float *row = wick_get_logits(backend, 0);
    int32_t n_vocab = backend->model->config.n_vocab, ids[64];
    float values[64];
    if (k < 1 || k > 64) return -1;
    for (int32_t j = 0; j < k; j++) { /* selection: the best of what is left, k times */
        int32_t best = -1;
        for (int32_t t = 0; t < n_vocab; t++) {
            int taken = 0;
            for (int32_t q = 0; q < j; q++) taken |= ids[q] == t;
            if (!taken && (best < 0 || row[t] > row[best])) best = t;
        }
        ids[j] = best;
        values[j] = row[best];
    }
    return wick_ctx_external_top_logits(ext, k, ids, values) == WICK_OK ? evaluated : -1;
}

/* A run of 40 tokens through an external context with settings; each step's logits come whole
 * (k = 0) or as the k best from run_external_ops_top. Writes the tokens; returns their count. */
static int external_run(wick_model *m, const char *const *names, const double *values, int n_set, int32_t k, int32_t *out, int32_t *candidates) {
    int32_t prompt[] = {1, 403, 407, 261, 378};
    wick_ctx *ext = NULL, *backend = new_ctx(m, 128, 0);
    wick_gen *g = NULL;
    int n = 0, ok = wick_ctx_new_external(m, 128, &ext) == WICK_OK && wick_gen_new(ext, &g) == WICK_OK;
    for (int i = 0; ok && i < n_set; i++) ok = wick_gen_set(g, names[i], values[i]) == WICK_OK;
    ok = ok && wick_gen_set(g, "max_tokens", 40) == WICK_OK && wick_gen_start(g, prompt, 5) == WICK_OK;
    *candidates = ok ? wick_gen_candidates(g) : -1;
    ok = ok && (k ? run_external_ops_top(ext, backend, k) : run_external_ops(ext, backend, NULL)) == 5;
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) {
        out[n++] = wick_gen_token(g);
        if ((k ? run_external_ops_top(ext, backend, k) : run_external_ops(ext, backend, NULL)) < 0) ok = 0;
    }
    wick_gen_free(g);
    wick_ctx_free(ext);
    wick_ctx_free(backend);
    return ok ? n : -1;
}

/* The sparse row of the WebGPU top-k readback: wick_gen_candidates says when the k best logits
 * decide the draw, and a run fed only those gives the tokens of a run fed whole rows. */
static void external_top_case(wick_model *m) {
    int32_t full[40], top[40], k_full, k_top;
    const char *greedy[] = {"temperature"};
    const double greedy_v[] = {0};
    int a = external_run(m, greedy, greedy_v, 1, 0, full, &k_full), b = external_run(m, greedy, greedy_v, 1, 1, top, &k_top);
    check(k_full == 1 && a == 40 && b == 40 && !memcmp(full, top, sizeof full), "context.external.top-greedy",
          "greedy: wick_gen_candidates %d; 40 tokens from the best logit alone equal those from whole rows", k_full);
    const char *sampled[] = {"temperature", "top_k", "top_p", "min_p", "seed"};
    const double sampled_v[] = {1.0, 20, 0.95, 0.05, 42};
    a = external_run(m, sampled, sampled_v, 5, 0, full, &k_full);
    b = external_run(m, sampled, sampled_v, 5, 20, top, &k_top);
    int differ = 0;
    for (int i = 1; i < 40; i++) differ |= full[i] != full[0];
    check(k_full == 20 && a == 40 && b == 40 && differ && !memcmp(full, top, sizeof full), "context.external.top-sampled",
          "temperature 1, top_k 20, top_p 0.95, min_p 0.05, seed 42: wick_gen_candidates %d; 40 drawn tokens from the 20 best logits equal those from whole rows", k_full);
    /* what needs the whole row */
    const char *pen[] = {"temperature", "repeat_penalty"}, *freq[] = {"temperature", "frequency_penalty"}, *nok[] = {"temperature", "top_k"};
    const double pen_v[] = {0, 1.1}, freq_v[] = {0.7, 0.5}, nok_v[] = {0.7, 0};
    int32_t k_pen, k_freq, k_nok, k_bias = -1;
    external_run(m, pen, pen_v, 2, 0, full, &k_pen);
    external_run(m, freq, freq_v, 2, 0, full, &k_freq);
    external_run(m, nok, nok_v, 2, 0, full, &k_nok);
    wick_ctx *ext = NULL;
    wick_gen *g = NULL;
    int32_t prompt[] = {1, 403};
    if (wick_ctx_new_external(m, 64, &ext) == WICK_OK && wick_gen_new(ext, &g) == WICK_OK) {
        int32_t before = wick_gen_candidates(g);
        wick_gen_set(g, "temperature", 0);
        wick_gen_set_bias(g, 403, -2.0f);
        k_bias = wick_gen_start(g, prompt, 2) == WICK_OK && before == 0 ? wick_gen_candidates(g) : -1;
        float v = 1.0f;
        int32_t bad = 9999;
        check(wick_ctx_external_top_logits(ext, 1, &bad, &v) == WICK_ERR_INVALID_ARG, "context.external.top-range", "an id outside the vocabulary is refused");
    }
    wick_gen_free(g);
    wick_ctx_free(ext);
    check(k_pen == 0 && k_freq == 0 && k_nok == 0 && k_bias == 0, "context.external.top-whole",
          "the whole row with a repeat penalty (%d), a frequency penalty (%d), top_k 0 at T 0.7 (%d), a logit bias (%d)", k_pen, k_freq, k_nok, k_bias);
}

/* An external context (wick_ctx_new_external) driven by the generator: its operations carried
 * out on a CPU context give the same greedy tokens as the generator on a CPU context; a full
 * context is evaluated again (trimmed to 0, the kept tokens once more), never shifted. */
static void external_case(wick_model *m) {
    int32_t prompt[] = {1, 403, 407, 261, 378};
    int np = (int)(sizeof prompt / sizeof prompt[0]);
    int32_t ref[40], got[40];
    wick_ctx *cpu = new_ctx(m, 128, 0);
    wick_gen *g;
    wick_gen_new(cpu, &g);
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 40);
    int ok = wick_gen_start(g, prompt, np) == WICK_OK, n_ref = 0;
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) ref[n_ref++] = wick_gen_token(g);
    wick_gen_free(g);
    wick_ctx_free(cpu);

    wick_ctx *ext = NULL, *backend = new_ctx(m, 128, 0);
    check(wick_ctx_new_external(m, 128, &ext) == WICK_OK && wick_n_ctx(ext) == 128, "context.external.new", "an external context of 128 positions");
    wick_gen_new(ext, &g);
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 40);
    ok = wick_gen_start(g, prompt, np) == WICK_OK;
    check(ok && wick_get_logits(ext, -1) == NULL, "context.external.logits-wait", "after the start the logits wait for the outside pass");
    int first = run_external_ops(ext, backend, NULL), n_got = 0, steps_ok = 1;
    check(first == np, "context.external.start", "the start asks for the prompt as one evaluation");
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) {
        got[n_got++] = wick_gen_token(g);
        int e = run_external_ops(ext, backend, NULL);
        if (e != (wick_gen_finish(g) ? 0 : 1)) steps_ok = 0;
    }
    check(steps_ok, "context.external.steps", "each step asks for the drawn token, the last (finished) one for nothing");
    check(n_got == n_ref && n_got == 40 && !memcmp(got, ref, sizeof ref), "context.external.greedy", "greedy tokens through the external context equal the CPU generator's");
    wick_gen_free(g);
    wick_ctx_free(ext);
    wick_ctx_free(backend);

    /* a context of 24: full after 19 generated tokens; the external one evaluates again */
    check(wick_ctx_new_external(m, 24, &ext) == WICK_OK, "context.external.new24", "an external context of 24 positions");
    backend = new_ctx(m, 24, 0);
    wick_gen_new(ext, &g);
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 30);
    wick_gen_set(g, "n_keep", 1);
    ok = wick_gen_start(g, prompt, np) == WICK_OK && run_external_ops(ext, backend, NULL) == np;
    int reevaluated = 0, trimmed = 0, generated = 0;
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) {
        generated++;
        reevaluated += wick_gen_reevaluated(g);
        if (run_external_ops(ext, backend, &trimmed) < 0) ok = 0;
    }
    check(ok && generated == 30 && reevaluated > 0 && trimmed, "context.external.reevaluated", "a full external context is evaluated again (trimmed, kept tokens once more), generation goes on");
    check(wick_kv_shift(ext, 1, 4) != WICK_OK, "context.external.no-shift", "an external context refuses a shift");
    wick_gen_free(g);
    wick_ctx_free(ext);
    wick_ctx_free(backend);
}

/* A hybrid's external context (lfm2: the WebGPU path keeps its recurrent state): the same trim
 * rules as a CPU context's, snapshots asked of the backend (WICK_OP_SNAPSHOT), and a second prompt
 * that shares the first's tokens but its last resuming from the snapshot there (a trim to it)
 * and answering as a fresh CPU generator given that prompt. */
static void external_hybrid_case(wick_model *m) {
    int32_t turn1[] = {1, 403, 407, 261, 378, 290, 311, 333}, turn2[] = {1, 403, 407, 261, 378, 290, 311, 290, 261, 407};
    int n1 = (int)(sizeof turn1 / sizeof turn1[0]);
    wick_ctx *ext = NULL, *backend = new_ctx(m, 128, 0), *cpu = new_ctx(m, 128, 0);
    int ok = wick_ctx_new_external(m, 128, &ext) == WICK_OK && backend && cpu;
    check(ok && wick_state_bytes(ext) == wick_state_bytes(cpu) && wick_state_bytes(ext) > 0, "context.lfm2.external.state-bytes",
          "the external context counts the recurrent state the backend keeps (%zu bytes, a CPU context's %zu)", ok ? wick_state_bytes(ext) : 0,
          ok ? wick_state_bytes(cpu) : 0);
    if (!ok) {
        wick_ctx_free(ext), wick_ctx_free(backend), wick_ctx_free(cpu);
        return;
    }
    /* turn 1: a checkpoint after 5 tokens, so snapshots at 5 and at n1 − 1 */
    wick_gen *g;
    wick_gen_new(ext, &g);
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 6);
    wick_gen_set(g, "checkpoint", 5);
    int n_all = (int)(sizeof turn2 / sizeof turn2[0]), trimmed = 0, steps = 0;
    const int32_t *all = turn2;
    ok = wick_gen_start(g, turn1, n1) == WICK_OK && run_external_ops(ext, backend, NULL) == n1;
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) {
        steps++;
        if (run_external_ops(ext, backend, NULL) < 0) ok = 0;
    }
    check(ok && steps == 6, "context.lfm2.external.turn1", "turn 1 through the external context, snapshots carried out (%d steps)", steps);
    check(wick_kv_trim(ext, 3) != WICK_OK && wick_kv_shift(ext, 1, 2) != WICK_OK, "context.lfm2.external.refused",
          "a trim to a position without a snapshot, and a shift, are refused as on a CPU context");
    /* turn 2: turn 1's prompt but its last token, then others: back to the snapshot there */
    ok = ok && wick_gen_start(g, all, n_all) == WICK_OK && run_external_ops(ext, backend, &trimmed) > 0;
    int32_t got[8], ref[8];
    int n_got = 0, n_ref = 0;
    int resumed = wick_gen_n_prompt_eval(g);
    while (ok && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK) {
        if (wick_gen_token(g) >= 0 && !wick_gen_finish(g) && n_got < 8) got[n_got++] = wick_gen_token(g);
        if (run_external_ops(ext, backend, &trimmed) < 0) ok = 0;
    }
    wick_gen_free(g);
    wick_gen_new(cpu, &g);
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 6);
    int ok_ref = wick_gen_start(g, all, n_all) == WICK_OK;
    while (ok_ref && !wick_gen_finish(g) && wick_gen_next(g) == WICK_OK)
        if (wick_gen_token(g) >= 0 && !wick_gen_finish(g) && n_ref < 8) ref[n_ref++] = wick_gen_token(g);
    wick_gen_free(g);
    check(ok && trimmed == 2 && resumed == n_all - (n1 - 1), "context.lfm2.external.resume",
          "turn 2 trims back to the snapshot at %d and evaluates %d of %d prompt tokens", n1 - 1, resumed, n_all);
    check(ok && ok_ref && n_got >= 5 && n_got == n_ref && !memcmp(got, ref, (size_t)n_got * sizeof *got), "context.lfm2.external.greedy",
          "turn 2's greedy tokens through the external context equal a fresh CPU generator's (%d and %d tokens)", n_got, n_ref);
    wick_ctx_free(ext);
    wick_ctx_free(backend);
    wick_ctx_free(cpu);
}

/* One failure: the call returned want, and the last error (and the context's own, when given)
 * holds text. */
static void check_status(wick_status got, wick_status want, const wick_ctx *c, const char *text, const char *id, const char *what) {
    char line[512];
    int same_text = strstr(wick_last_error(), text) != NULL && (!c || strcmp(wick_ctx_last_error(c), wick_last_error()) == 0);
    snprintf(line, sizeof line, "status %d (want %d) %s: %s", got, want, what, wick_last_error());
    check(got == want && same_text, id, "%s", line);
}

/* Each WICK_ERR_* code comes from the failure itself, not from its message: provoked here one by
 * one, with the code and the text checked, and a context's message kept apart from another's. */
static void status_cases(wick_model *m) {
    wick_model *none = NULL;
    check_status(wick_model_load_gguf(NULL, 0, &none), WICK_ERR_INVALID_ARG, NULL, "NULL argument", "context.status.null-buffer", "a NULL buffer");
    static const uint8_t bad_magic[24] = "GGUX";
    check_status(wick_model_load_gguf(bad_magic, sizeof bad_magic, &none), WICK_ERR_FORMAT, NULL, "not a GGUF file (bad magic)",
                 "context.status.not-gguf", "a file that is not GGUF");
    static const uint8_t version4[24] = {'G', 'G', 'U', 'F', 4};
    check_status(wick_model_load_gguf(version4, sizeof version4, &none), WICK_ERR_UNSUPPORTED, NULL,
                 "GGUF version 4 not supported", "context.status.gguf-version", "GGUF version 4");
    check(none == NULL, "context.status.no-model", "no model is made by a failed load");
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.kv_type = 7;
    wick_ctx *c = NULL;
    check_status(wick_ctx_new(m, &p, &c), WICK_ERR_INVALID_ARG, NULL, "KV cache type 7 unknown", "context.status.kv-type", "an unknown KV type");
    /* 4M positions of F32 keys: a cache above 2 GiB, refused before any allocation */
    p.kv_type = WICK_KV_F32;
    p.n_ctx = 1 << 22;
    check_status(wick_ctx_new(m, &p, &c), WICK_ERR_NOMEM, NULL, "too large for this build", "context.status.kv-too-large", "a KV cache of 2 x 2.5 GiB");
    check(c == NULL, "context.status.no-context", "no context is made by a failed wick_ctx_new");
    wick_ctx *a = new_ctx(m, 8, 8), *b = new_ctx(m, 8, 8);
    if (!a || !b) {
        check(0, "context.status.contexts", "two contexts");
        wick_ctx_free(a);
        wick_ctx_free(b);
        return;
    }
    int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out_of_range = 1 << 20;
    check_status(wick_eval(a, toks, 9, 0), WICK_ERR_CONTEXT_FULL, a, "do not fit in the context", "context.status.context-full", "9 tokens in 8 positions");
    check_status(wick_eval(a, &out_of_range, 1, 0), WICK_ERR_INVALID_ARG, a, "out of range", "context.status.token-range", "a token outside the vocabulary");
    check_status(wick_kv_shift(a, 0, 5), WICK_ERR_INVALID_ARG, a, "cannot drop 5 positions after 0 of 0", "context.status.shift-past-end", "a shift past the end");
    check(wick_ctx_last_error(b)[0] == 0, "context.status.other-context", "another context's message stays empty");
    check(wick_eval(b, toks, 2, 0) == WICK_OK && wick_last_error()[0] == 0, "context.status.success-clears", "a success clears the last error");
    check(strstr(wick_ctx_last_error(a), "cannot drop") != NULL, "context.status.kept", "the failed context keeps its message");
    check(wick_eval(a, toks, 2, 0) == WICK_OK && wick_ctx_last_error(a)[0] == 0, "context.status.success-clears-context",
          "a success clears the context's message");
    wick_ctx_free(a);
    wick_ctx_free(b);
}

/* A context holding image slot 0 of n_rows random rows on a grid_x-wide grid (qwen2vl: no deepstack) */
static wick_ctx *mrope_ctx(wick_model *m, int n_rows, int grid_x) {
    wick_ctx *c = new_ctx(m, 128, 32);
    if (!c) return NULL;
    int dim = m->config.dim;
    float *rows = malloc((size_t)n_rows * dim * sizeof *rows);
    unsigned x = 12345;
    for (int i = 0; rows && i < n_rows * dim; i++) {
        x = x * 1103515245u + 12345u;
        rows[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.5f;
    }
    bool ok = rows && wick_ctx_set_image(c, 0, rows, n_rows, 0) == WICK_OK &&
              wick_ctx_set_image_grid(c, 0, grid_x, n_rows / grid_x) == WICK_OK;
    free(rows);
    if (!ok) {
        check_note("image slot: %s", wick_last_error());
        wick_ctx_free(c);
        return NULL;
    }
    return c;
}

/* qwen2vl: a prompt of 5 tokens, a picture of 4 × 3 positions, 7 tokens */
static void mrope_cases(wick_model *m) {
    enum { GX = 4, GY = 3, PIC = GX * GY, BEFORE = 5, AFTER = 7, N = BEFORE + PIC + AFTER };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = i < BEFORE ? token_at(i) : i < BEFORE + PIC ? WICK_IMAGE_TOKEN(0, i - BEFORE) : token_at(i);
    wick_ctx *a = mrope_ctx(m, PIC, GX), *b = mrope_ctx(m, PIC, GX);
    if (!check(a && b, "context.qwen2vl.mrope.contexts", "contexts with an image slot")) goto done;
    check(wick_ctx_set_image_grid(a, 0, 5, 3) != WICK_OK, "context.qwen2vl.mrope.grid-refused", "a grid of 5 × 3 for 12 positions is refused");
    check(m->config.mrope == MROPE_SECTIONS && m->config.rope_sections[1] > 0, "context.qwen2vl.mrope.config",
          "qwen2vl's M-RoPE sections (%d, %d, %d, %d)", m->config.rope_sections[0], m->config.rope_sections[1], m->config.rope_sections[2],
          m->config.rope_sections[3]);
    /* a shift that drops the picture and the token before it: the text after it moves down by
     * 1 + max(GX, GY) rope positions, not by 1 + PIC, and its keys equal a fresh evaluation's */
    wick_eval(a, toks, N, 0);
    check(a->mrope_next[BEFORE + PIC - 1] == BEFORE + GX && a->mrope_next[N - 1] == BEFORE + GX + AFTER, "context.qwen2vl.mrope.positions",
          "after the picture the next position is %d (want %d), after the prompt %d (want %d)", a->mrope_next[BEFORE + PIC - 1], BEFORE + GX,
          a->mrope_next[N - 1], BEFORE + GX + AFTER);
    check(wick_kv_shift(a, BEFORE - 1, 1 + PIC) == WICK_OK, "context.qwen2vl.mrope.shift", "the shift over the picture is taken");
    int32_t kept[N];
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i < BEFORE - 1 || i >= BEFORE + PIC) kept[n++] = toks[i];
    wick_eval(b, kept, n, 0);
    double d = key_difference(a, b, 0, n);
    /* the default F16 cache: keys rounded again after the rotation (shift_case's bound) */
    check(d < 2e-3, "context.qwen2vl.mrope.shift-keys", "keys after dropping the picture equal fresh ones (max diff %.2e, bound 2e-3)", d);
    /* a shift that drops text before the picture: the picture and what follows move as one */
    wick_kv_trim(a, 0);
    wick_kv_trim(b, 0);
    wick_eval(a, toks, N, 0);
    check(wick_kv_shift(a, 1, 3) == WICK_OK, "context.qwen2vl.mrope.shift-before", "the shift before the picture is taken");
    n = 0;
    for (int i = 0; i < N; i++)
        if (i < 1 || i >= 4) kept[n++] = toks[i];
    wick_eval(b, kept, n, 0);
    d = key_difference(a, b, 0, n);
    check(d < 2e-3, "context.qwen2vl.mrope.shift-before-keys", "keys of the moved picture and text equal fresh ones (max diff %.2e, bound 2e-3)", d);
    /* a saved state carries the positions: the next token's logits after a load equal the saver's */
    wick_kv_trim(a, 0);
    wick_eval(a, toks, N, 0);
    size_t need = 0;
    wick_state_save(a, toks, N, NULL, 0, &need);
    void *blob = malloc(need);
    int32_t back[N];
    int32_t n_back = 0, next = token_at(99);
    wick_kv_trim(b, 0);
    bool saved = blob && wick_state_save(a, toks, N, blob, need, &need) == WICK_OK && wick_state_load(b, blob, need, back, N, &n_back) == WICK_OK;
    free(blob);
    if (check(saved && n_back == N, "context.qwen2vl.mrope.state", "the state saves and loads: %s", saved ? "yes" : wick_last_error())) {
        wick_eval(a, &next, 1, 0);
        wick_eval(b, &next, 1, 0);
        float la[4096];
        int nv = m->config.n_vocab < 4096 ? m->config.n_vocab : 4096;
        memcpy(la, wick_get_logits(a, -1), (size_t)nv * sizeof(float));
        check(!memcmp(la, wick_get_logits(b, -1), (size_t)nv * sizeof(float)), "context.qwen2vl.mrope.state-logits",
              "the next token's logits after the load equal the saving context's");
    }
done:
    if (a) wick_ctx_free(a);
    if (b) wick_ctx_free(b);
}

/* whether ggml's interleaved M-RoPE gives sector j none of t, h, w (sections s): the fourth position's */
static bool mrope_unturned(const int32_t *s, int j) {
    return !((j % 3 == 0 && j < 3 * s[0]) || (j % 3 == 1 && j < 3 * s[1]) || (j % 3 == 2 && j < 3 * s[2]));
}

/* qwen3vl, text alone: its interleaved sections leave pairs to the fourth position, which is 0
 * for every token, so a shift must not turn them (the others move by the dropped count) */
static void mrope_text_cases(wick_model *m) {
    const int32_t *s = m->config.rope_sections;
    int unturned = 0;
    for (int j = 0; j < s[0] + s[1] + s[2] + s[3]; j++) unturned += mrope_unturned(s, j);
    check(m->config.mrope == MROPE_INTERLEAVED && m->config.rope_neox && unturned > 0, "context.qwen3vl.mrope.config",
          "qwen3vl's interleaved sections (%d, %d, %d, %d) leave %d pairs to the fourth position", s[0], s[1], s[2], s[3], unturned);
    shift_case(m, "qwen3vl.shift", WICK_KV_F32, 4, 50, 1e-5);
    /* those pairs turn by nothing, before and after the shift: their cached values equal a fresh
     * evaluation's bit for bit (turned by the dropped count they would differ by ~1e-6 of |k|
     * here, under shift_case's bound) */
    enum { N = 60, KEEP = 4, DROP = 50 };
    int32_t toks[N], kept[N];
    int n = 0;
    for (int i = 0; i < N; i++) {
        toks[i] = i == 0 ? 1 : 3 + (i * 37) % 500;
        if (i < KEEP || i >= KEEP + DROP) kept[n++] = toks[i];
    }
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 64;
    p.kv_type = WICK_KV_F32;
    wick_ctx *a = NULL, *b = NULL;
    if (!check(wick_ctx_new(m, &p, &a) == WICK_OK && wick_ctx_new(m, &p, &b) == WICK_OK, "context.qwen3vl.unturned.contexts", "%s",
               wick_last_error()))
        goto done;
    wick_eval(a, toks, N, 0);
    wick_kv_shift(a, KEEP, DROP);
    wick_eval(b, kept, n, 0);
    const model_config *mc = &m->config;
    int half = mc->rope_dim / 2, differ = 0, compared = 0, sum = s[0] + s[1] + s[2] + s[3];
    for (int t = 0; t < n; t++)
        for (int h = 0; h < mc->n_kv_heads; h++)
            for (int i = 0; i < half; i++) {
                if (!mrope_unturned(s, i % sum)) continue;
                for (int d = i; d < 2 * half; d += half, compared++)
                    differ += cached_key(a, t, h * mc->head_dim + d) != cached_key(b, t, h * mc->head_dim + d);
            }
    check(compared > 0 && differ == 0, "context.qwen3vl.unturned.keys", "%d of %d values of the unturned pairs differ from a fresh evaluation's",
          differ, compared);
done:
    if (a) wick_ctx_free(a);
    if (b) wick_ctx_free(b);
}

/* reads and loads the model file at path: the checks context.NAME.read and context.NAME.load */
static wick_model *load(const char *path, const char *name, unsigned char **buf) {
    size_t n;
    wick_model *m = NULL;
    *buf = check_read(check_id("context.%s.read", name), path, &n);
    if (!*buf) return NULL;
    bool loaded = wick_model_load_gguf(*buf, n, &m) == WICK_OK;
    if (!check(loaded, check_id("context.%s.load", name), "%s: %s", path, loaded ? "loads" : wick_last_error())) {
        free(*buf);
        *buf = NULL;
        return NULL;
    }
    return m;
}

/* The cases of one family on the file at path, which must be of that architecture. */
static void family_cases(const char *path, const char *arch, void (*cases)(wick_model *)) {
    unsigned char *buf;
    wick_model *m = load(path, arch, &buf);
    if (m) {
        check(strcmp(m->config.arch, arch) == 0, check_id("context.%s.arch", arch), "%s is a %s model", path, arch);
        cases(m);
        wick_model_free(m);
    }
    free(buf);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "../shared/models/stories260K.gguf";
    unsigned char *buf;
    wick_model *m = load(path, "model", &buf);
    if (!m) return check_summary();
    shift_case(m, "shift", WICK_KV_F32, 1, 29, 1e-5);
    shift_case(m, "shift", WICK_KV_F32, 4, 7, 1e-5);
    shift_case(m, "shift", WICK_KV_F16, 1, 29, 2e-3); /* keys re-rounded to F16 after the rotation */
    external_case(m);
    external_top_case(m);
    status_cases(m);
    wick_model_free(m);
    free(buf);
    if (argc > 2) family_cases(argv[2], "gemma3", gemma3_cases);
    if (argc > 3) family_cases(argv[3], "gemma4", shared_kv_cases);
    if (argc > 4) family_cases(argv[4], "gemma3n", shared_kv_cases);
    if (argc > 5) family_cases(argv[5], "lfm2", external_hybrid_case);
    if (argc > 6) family_cases(argv[6], "qwen2vl", mrope_cases);
    if (argc > 7) family_cases(argv[7], "qwen3vl", mrope_text_cases);
    return check_summary();
}
