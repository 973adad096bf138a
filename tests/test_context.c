/* tests/test_context.c — the context shift: after dropping positions and re-rotating the cached
 * keys, layer 0's keys must equal keys computed afresh for the same tokens at their new
 * positions (at layer 0 a key depends only on its token and its position), and generation must
 * go on. Usage: test_context MODEL.gguf. Closes with "N passed, M failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "quant.h"
#include "wick.h"

static int passed, failed;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) passed++;
    else failed++;
}

static float cached_key(const wick_ctx *c, int pos, int i) {
    int kvd = c->m->c.n_kv_heads * c->m->c.head_dim;
    size_t idx = (size_t)pos * (size_t)kvd + (size_t)i; /* layer 0 comes first */
    return c->kv_type == WICK_KV_F16 ? quant_f16_to_f32(((const uint16_t *)c->k_cache)[idx]) : ((const float *)c->k_cache)[idx];
}

/* largest |a − b| over layer-0 keys of positions [0, n), relative to the largest |b| */
static double key_difference(const wick_ctx *a, const wick_ctx *b, int n) {
    int kvd = a->m->c.n_kv_heads * a->m->c.head_dim;
    double worst = 0, scale = 0;
    for (int p = 0; p < n; p++)
        for (int i = 0; i < kvd; i++) {
            double x = cached_key(a, p, i), y = cached_key(b, p, i);
            if (fabs(x - y) > worst) worst = fabs(x - y);
            if (fabs(y) > scale) scale = fabs(y);
        }
    return worst / (scale > 0 ? scale : 1);
}

static void shift_case(wick_model *m, int kv_type, int n_keep, int n_discard, double tol) {
    enum { N = 60 };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = i == 0 ? 1 : 3 + (i * 37) % 500;
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 64;
    p.kv_type = kv_type;
    wick_ctx *shifted, *fresh;
    if (wick_ctx_new(m, &p, &shifted) || wick_ctx_new(m, &p, &fresh)) {
        check(0, wick_last_error());
        return;
    }
    wick_eval(shifted, toks, N, 0);
    check(wick_kv_shift(shifted, n_keep, n_discard) == WICK_OK, "shift accepted");
    check(wick_n_past(shifted) == N - n_discard, "positions after the shift");
    /* the same tokens, minus the dropped ones, evaluated at their new positions */
    int32_t kept[N];
    int n = 0;
    for (int i = 0; i < N; i++)
        if (i < n_keep || i >= n_keep + n_discard) kept[n++] = toks[i];
    wick_eval(fresh, kept, n, 0);
    double d = key_difference(shifted, fresh, n);
    char what[160];
    snprintf(what, sizeof what, "%s cache, keep %d drop %d: layer-0 keys equal fresh ones (max diff %.2e of max |k|, bound %.0e)",
             kv_type == WICK_KV_F16 ? "f16" : "f32", n_keep, n_discard, d, tol);
    check(d <= tol, what);
    /* the shifted context still evaluates (deeper layers' keys, which saw the dropped tokens,
     * are kept as they are, so its logits differ from a fresh context's by design) */
    int32_t next = 42;
    int finite = wick_eval(shifted, &next, 1, 0) == WICK_OK;
    const float *l = wick_get_logits(shifted, -1);
    for (int i = 0; finite && i < m->c.n_vocab; i++) finite = isfinite(l[i]);
    check(finite, "the shifted context evaluates the next token to finite logits");
    check(wick_kv_shift(shifted, 10, 100) != WICK_OK, "dropping more than is cached is refused");
    wick_ctx_free(shifted);
    wick_ctx_free(fresh);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "../shared/models/stories260K.gguf";
    FILE *f = fopen(path, "rb");
    if (!f) { printf("cannot open %s\n0 passed, 1 failed\n", path); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *buf = malloc((size_t)n);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    wick_model *m;
    if (wick_model_load_gguf(buf, (size_t)n, &m) != WICK_OK) { printf("%s\n0 passed, 1 failed\n", wick_last_error()); return 1; }
    shift_case(m, WICK_KV_F32, 1, 29, 1e-5);
    shift_case(m, WICK_KV_F32, 4, 7, 1e-5);
    shift_case(m, WICK_KV_F16, 1, 29, 2e-3); /* keys re-rounded to F16 after the rotation */
    wick_model_free(m);
    free(buf);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
