/* bench_kernels.c — times the matrix kernels per type, single thread, over a 2048×5632 weight
 * matrix (the shape of a small model's FFN down projection):
 *   - vec_dot (gemm's 1×1 tile, quant_table.c): one call per (row, token), rows in tiles of 16
 *     with the tokens inside; for 1 token (decode) and for a batch: what the larger tiles save;
 *   - gemm: the tile kernel, GEMM_MAX_ROWS rows × 1 token (decode) and × GEMM_MAX_TOKENS tokens
 *     (prefill);
 *   - gemv8 where the type has it: eight rows ROWS / 8 apart per call, as decode reads them;
 *   - the scalar reference vec_dot_ref, 1 token, on fewer rows.
 * Each line gives microseconds per token over the matrix, GB/s of weight data per token (for a
 * batch, per-token equivalent: a batch of 4 that takes the time of one token counts 4×), and
 * tokens per second through this one matrix.
 *
 * Usage: bench_kernels [type-name ...]   (default: q4_0 q8_0 q4_K_r q6_K_r; "all" for every type)
 *        bench_kernels --shape 768x2048 [type-name ...]   times another matrix (rows x columns):
 *        a 134m model's are 768x768, 2048x768, 768x2048 and 32000x768;
 *        bench_kernels --copies 8 [...]   keeps 8 copies of the matrix and times each pass over
 *        the next one, so that a small matrix is read from memory, not from the L3 cache, as a
 *        model's matrices are in decode;
 *        bench_kernels --decode [...]   times only the one-token kernels (gemm 4x1 and gemv8).
 * The options come first, in this order. */
#include "quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int ROWS = 2048;          /* --shape ROWSxCOLS chooses another matrix */
static int COLS = 5632;
static int COPIES = 1;           /* --copies N: passes go over N copies of the matrix in turn */
static int DECODE_ONLY = 0;      /* --decode: only the one-token kernels */
#define TOKENS GEMM_MAX_TOKENS   /* the batch timed for prefill */
#define DISTINCT_ROWS 64         /* quantized once, then copied over the matrix */
#define VEC_DOT_ROW_TILE 16      /* rows per tile in the vec_dot loop */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t rng = 2463534242u;
static float rng_float(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

typedef struct {
    const quant_type *t;
    const uint8_t *w;
    size_t row_bytes;
    const uint8_t *a;
    size_t act_bytes;
    float *out;                  /* out[token * ROWS + row] */
} matrix;

enum method { VEC_DOT, VEC_DOT_REF, GEMM, GEMV8 };

/* one product of the first `rows` rows with nt tokens */
static void run(const matrix *m, enum method how, int rows, int nt)
{
    if (how == GEMV8) {   /* eight streams, rows / 8 apart, as matmul.c reads them */
        float tile[8];
        int q = rows / 8;
        for (int r = 0; r < q; r++) {
            m->t->gemv8(COLS, m->w + (size_t)r * m->row_bytes, (size_t)q * m->row_bytes, m->a, tile);
            for (int k = 0; k < 8; k++)
                m->out[r + k * q] = tile[k];
        }
        return;
    }
    if (how == GEMM) {
        for (int r = 0; r < rows; r += GEMM_MAX_ROWS)
            m->t->gemm(COLS, m->w + (size_t)r * m->row_bytes, m->row_bytes, rows - r < GEMM_MAX_ROWS ? rows - r : GEMM_MAX_ROWS,
                       m->a, m->act_bytes, nt, m->out + r, ROWS);
        return;
    }
    float (*dot)(int, const void *, const void *) = how == VEC_DOT ? m->t->vec_dot : m->t->vec_dot_ref;
    for (int rt = 0; rt < rows; rt += VEC_DOT_ROW_TILE)
        for (int tok = 0; tok < nt; tok++)
            for (int r = rt; r < rt + VEC_DOT_ROW_TILE && r < rows; r++)
                m->out[(size_t)tok * ROWS + r] = dot(COLS, m->w + (size_t)r * m->row_bytes, m->a + (size_t)tok * m->act_bytes);
}

/* seconds per token over the whole matrix, best of `passes` */
static double time_per_token(const matrix *m, enum method how, int rows, int nt, int passes)
{
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        /* the copies in turn across every timing, so that a pass reads the copy used longest ago */
        static unsigned next_copy;
        matrix copy = *m;
        copy.w += (size_t)(next_copy++ % (unsigned)COPIES) * m->row_bytes * ROWS;
        double t0 = now_seconds();
        run(&copy, how, rows, nt);
        double t = now_seconds() - t0;
        if (t < best)
            best = t;
    }
    return best * ROWS / rows / nt;
}

static void report(const matrix *m, const char *what, double sec, double base)
{
    double gb = (double)m->row_bytes * ROWS / 1e9;
    printf("  %-26s %9.1f us/token %7.2f GB/s %9.0f tokens/s", what, sec * 1e6, gb / sec, 1 / sec);
    if (base > 0)
        printf("   x%.2f", base / sec);
    printf("\n");
}

static void bench(const quant_type *t)
{
    const quant_type *ta = quant_get(t->vec_dot_type);
    matrix m = { t, NULL, quant_row_size(t->type, COLS), NULL, quant_row_size(ta->type, COLS), NULL };
    uint8_t *w = malloc(m.row_bytes * ROWS * COPIES), *a = malloc(m.act_bytes * TOKENS);
    float *x = malloc(sizeof(float) * COLS * DISTINCT_ROWS);
    m.out = malloc(sizeof(float) * ROWS * TOKENS);
    for (int i = 0; i < COLS * DISTINCT_ROWS; i++)
        x[i] = 0.02f * rng_float();
    t->from_float(x, w, (int64_t)COLS * DISTINCT_ROWS);
    for (int r = DISTINCT_ROWS; r < ROWS * COPIES; r++)
        memcpy(w + (size_t)r * m.row_bytes, w + (size_t)(r % DISTINCT_ROWS) * m.row_bytes, m.row_bytes);
    for (int tok = 0; tok < TOKENS; tok++) {
        for (int i = 0; i < COLS; i++)
            x[i] = rng_float();
        ta->from_float(x, a + (size_t)tok * m.act_bytes, COLS);
    }
    m.w = w;
    m.a = a;

    printf("%s: %d x %d, %.2f MB of weights (%d copies)\n", t->name, ROWS, COLS, (double)m.row_bytes * ROWS / 1e6, COPIES);
    char what[64];
    double dot1 = 0, gemm1;
    if (DECODE_ONLY) {
        gemm1 = time_per_token(&m, GEMM, ROWS, 1, 15);
    } else {
        int ref_rows = ROWS / 16;   /* the scalar code is slow: time fewer rows */
        double ref = time_per_token(&m, VEC_DOT_REF, ref_rows, 1, 3);
        dot1 = time_per_token(&m, VEC_DOT, ROWS, 1, 15);
        double dotn = time_per_token(&m, VEC_DOT, ROWS, TOKENS, 8);
        gemm1 = time_per_token(&m, GEMM, ROWS, 1, 15);
        double gemmn = time_per_token(&m, GEMM, ROWS, TOKENS, 8);
        report(&m, "scalar vec_dot_ref, 1 tok", ref, 0);
        report(&m, "vec_dot (1x1), 1 token", dot1, ref);
        snprintf(what, sizeof what, "vec_dot (1x1), %d tokens", TOKENS);
        report(&m, what, dotn, ref);
        snprintf(what, sizeof what, "gemm %dx%d (prefill)", GEMM_MAX_ROWS, TOKENS);
        report(&m, what, gemmn, dotn);
    }
    snprintf(what, sizeof what, "gemm %dx1 (decode)", GEMM_MAX_ROWS);
    report(&m, what, gemm1, dot1);
    if (t->gemv8)
        report(&m, "gemv8 (decode, 8 streams)", time_per_token(&m, GEMV8, ROWS, 1, 15), gemm1);
    fflush(stdout);
    free(w);
    free(a);
    free(x);
    free(m.out);
}

/* The relaxed-SIMD build (mk/relaxed.mk) links without binaryen, which is what gives a
 * main(argc, argv) (__main_argc_argv to LLVM) the export name Emscripten's loader calls. */
#if defined(__EMSCRIPTEN__) && defined(__wasm_relaxed_simd__)
__attribute__((export_name("main")))
#endif
int bench_main(int argc, char **argv);
int main(int argc, char **argv) { return bench_main(argc, argv); }

int bench_main(int argc, char **argv)
{
    static const uint32_t order[] = {
        WICK_TYPE_Q4_0, WICK_TYPE_Q8_0, WICK_TYPE_Q4_K, WICK_TYPE_Q6_K, WICK_TYPE_Q2_K, WICK_TYPE_Q3_K,
        WICK_TYPE_Q5_K, WICK_TYPE_Q4_1, WICK_TYPE_Q5_0, WICK_TYPE_Q5_1, WICK_TYPE_IQ4_NL, WICK_TYPE_F16,
        WICK_TYPE_BF16, WICK_TYPE_F32, WICK_TYPE_Q8_1, WICK_TYPE_Q8_K, WICK_TYPE_Q6_K_R, WICK_TYPE_Q4_K_R,
    };
    static const char *const default_types[] = { "q4_0", "q8_0", "q4_K_r", "q6_K_r" };
    if (argc > 2 && strcmp(argv[1], "--copies") == 0) {
        COPIES = atoi(argv[2]);
        if (COPIES < 1 || COPIES > 256) {
            fprintf(stderr, "bench_kernels: --copies %s: want 1 to 256\n", argv[2]);
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    if (argc > 1 && strcmp(argv[1], "--decode") == 0) {
        DECODE_ONLY = 1;
        argc--;
        argv++;
    }
    if (argc > 2 && strcmp(argv[1], "--shape") == 0) {
        if (sscanf(argv[2], "%dx%d", &ROWS, &COLS) != 2 || ROWS < 64 || ROWS % 64 || COLS < 256 || COLS % 256) {
            fprintf(stderr, "bench_kernels: --shape %s: want ROWSxCOLS, rows a multiple of 64, columns of 256\n", argv[2]);
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    printf("matrix kernels, %d x %d weights, one thread; xN: speed-up over the line it replaces\n"
           "(vec_dot, gemm's 1x1 tile, over the scalar reference; gemm over the vec_dot loop for the same tokens)\n", ROWS, COLS);
    int all = argc > 1 && strcmp(argv[1], "all") == 0;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        const quant_type *t = quant_get(order[k]);
        int wanted = all;
        if (argc <= 1)
            for (size_t i = 0; i < sizeof default_types / sizeof default_types[0]; i++)
                wanted |= strcmp(default_types[i], t->name) == 0;
        for (int i = 1; i < argc; i++)
            wanted |= strcmp(argv[i], t->name) == 0;
        if (wanted)
            bench(t);
    }
    return 0;
}
