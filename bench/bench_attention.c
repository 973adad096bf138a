/* bench_attention.c — the split of one decode step between attention and the rest (issue 33) at
 * long contexts: for each context N the cache of every layer is filled with N − 1 rows of random
 * keys and values (kv_row_store: the cache's own type), then
 *   - step: wick_eval of one token at position N − 1 (the whole forward pass: it writes its own
 *     row and attends over all N), the cache cut back to N − 1 after each;
 *   - attention: attention() alone for one token at position N − 1 over every layer in turn (random
 *     queries), as the step calls it, so the same bytes of cache are read in the same order;
 * each the best of --steps runs after one untimed, in CPU time at 1 thread (wall clock at more).
 * The rest is step − attention.
 *
 * Usage: bench_attention -m MODEL [--kv f16|q8_0|q4_0|f32] [--contexts 512,2048,8192] [--steps 5] [--threads 1]
 * One line per context: ms per step, ms of attention, its share, tokens/s. */
#include "attention.h"
#include "context.h"
#include "wick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* one thread: the process's CPU time, so that other work sharing the machine's cores does not count
 * (what stays is its contention for caches and memory); more: the wall clock */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_seconds(void) {
    struct timespec ts;
    if (clock_gettime(clock_id, &ts)) clock_id = CLOCK_MONOTONIC, clock_gettime(clock_id, &ts); /* no CPU clock here */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* uniform in [-1, 1) (xorshift64*) */
static float uniform(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545f4914f6cdd1dull) >> 40) / (double)(1ull << 23) - 1.0);
}

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int fail(const char *what, const char *why) {
    fprintf(stderr, "bench_attention: %s: %s\n", what, why);
    return 1;
}

/* the relaxed-SIMD build links without binaryen: main's export name set by hand, as in bench_kernels.c */
#if defined(__EMSCRIPTEN__) && defined(__wasm_relaxed_simd__)
__attribute__((export_name("main")))
#endif
int bench_main(int argc, char **argv);
int main(int argc, char **argv) { return bench_main(argc, argv); }

int bench_main(int argc, char **argv) {
    const char *model = NULL, *contexts = "512,2048,8192", *kv = "f16";
    int steps = 5, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--kv")) kv = argv[i + 1];
        else if (!strcmp(argv[i], "--contexts")) contexts = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else return fail(argv[i], "unknown option");
    }
    static const char *const kv_names[] = {"f32", "f16", "q8_0", "q4_0"};
    int kv_type = -1;
    for (int t = 0; t < WICK_KV_TYPE_COUNT; t++)
        if (!strcmp(kv, kv_names[t])) kv_type = t;
    if (!model || kv_type < 0 || steps < 1 || threads < 1)
        return fail("usage", "bench_attention -m MODEL [--kv f16|q8_0|q4_0|f32] [--contexts 512,2048,8192] [--steps 5] [--threads 1]");
    if (threads == 1) clock_id = CLOCK_PROCESS_CPUTIME_ID;
    size_t size;
    void *buf = read_file(model, &size);
    if (!buf) return fail(model, "cannot read");
    wick_model *m;
    if (wick_model_load_gguf(buf, size, &m) != WICK_OK) return fail(model, wick_last_error());
    int max_ctx = 0;
    for (const char *s = contexts; *s; s += strcspn(s, ","), s += *s == ',')
        if (atoi(s) > max_ctx) max_ctx = atoi(s);
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = max_ctx, p.n_threads = threads, p.kv_type = kv_type;
    wick_ctx *c;
    if (wick_ctx_new(m, &p, &c) != WICK_OK) return fail("context", wick_last_error());
    const model_config *mc = &c->model->config;
    float *row = malloc((size_t)kv_dim(mc) * 4 * sizeof(float));
    if (!row) return fail("row", "out of memory");
    printf("%s, KV %s, %d thread(s), best of %d (%s)\n", model, kv, threads, steps, threads == 1 ? "CPU time" : "wall clock");
    printf("context\tstep ms\tattention ms\tattention share\trest ms\tdecode tok/s\n");
    int filled = 0;
    for (const char *s = contexts; *s; s += strcspn(s, ","), s += *s == ',') {
        int n = atoi(s);
        if (n < 2 || n > max_ctx) return fail(s, "context out of range");
        /* rows 0 … n − 2 of every layer hold random keys and values; the step writes row n − 1 */
        for (int l = 0; l < mc->n_layers; l++) {
            const model_config *lc = model_layer_config(c->model, l);
            for (int j = filled; j < n - 1; j++) {
                for (int i = 0; i < kv_dim(lc); i++) row[i] = uniform();
                kv_row_store(c, c->k_cache, l, j, row);
                for (int i = 0; i < kv_dim(lc); i++) row[i] = uniform();
                kv_row_store(c, c->v_cache, l, j, row);
            }
        }
        if (n - 1 > filled) filled = n - 1;
        double step = 1e30, att = 1e30;
        int32_t token = 450;
        for (int r = 0; r <= steps; r++) {
            c->n_past = n - 1;
            double t0 = now_seconds();
            if (wick_eval(c, &token, 1, 0) != WICK_OK) return fail("wick_eval", wick_ctx_last_error(c));
            double t = now_seconds() - t0;
            if (r > 0 && t < step) step = t;
        }
        c->n_past = n - 1;
        for (int l = 0; l < mc->n_layers; l++) /* the widest layer's queries */
            for (int i = 0; i < model_layer_config(c->model, l)->q_dim; i++) c->q[i] = uniform();
        for (int r = 0; r <= steps; r++) {
            double t0 = now_seconds();
            for (int l = 0; l < mc->n_layers; l++) attention(c, l, n - 1, 1, true);
            double t = now_seconds() - t0;
            if (r > 0 && t < att) att = t;
        }
        printf("%d\t%.2f\t%.2f\t%.0f%%\t%.2f\t%.1f\n", n, step * 1e3, att * 1e3, 100 * att / step, (step - att) * 1e3, 1 / step);
    }
    free(row);
    wick_ctx_free(c);
    wick_model_free(m);
    free(buf);
    return 0;
}
