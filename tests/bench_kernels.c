/* bench_kernels.c — times vec_dot per type over a 4096×4096 weight matrix against one activation
 * row (decode's matrix–vector product, single thread), for the SIMD kernel and the scalar
 * reference: nanoseconds per row and GB/s of weight data streamed.
 *
 * Usage: bench_kernels [type-name ...]   (default: every type; names as in quant.c, e.g. q4_K) */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#include "quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS 4096
#define COLS 4096
#define DISTINCT_ROWS 64   /* quantized once, then copied over the matrix */

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

typedef float (*dot_fn)(int n, const void *w, const void *a);

/* seconds per pass over the first `rows` rows, best of a few passes; *checksum keeps results live */
static double time_matvec(dot_fn dot, const uint8_t *w, size_t row_bytes, const void *a, int rows,
                          int passes, float *checksum)
{
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        double t0 = now_seconds();
        float sum = 0;
        for (int r = 0; r < rows; r++)
            sum += dot(COLS, w + (size_t)r * row_bytes, a);
        double t = now_seconds() - t0;
        *checksum += sum;
        if (t < best)
            best = t;
    }
    return best;
}

static void bench(const quant_type *t)
{
    const quant_type *ta = quant_get(t->vec_dot_type);
    size_t row_bytes = quant_row_size(t->type, COLS);
    uint8_t *w = malloc(row_bytes * ROWS);
    void *a = malloc(quant_row_size(ta->type, COLS));
    float *x = malloc(sizeof(float) * COLS * DISTINCT_ROWS);
    for (int i = 0; i < COLS * DISTINCT_ROWS; i++)
        x[i] = 0.02f * rng_float();
    t->from_float(x, w, (int64_t)COLS * DISTINCT_ROWS);
    for (int r = DISTINCT_ROWS; r < ROWS; r++)
        memcpy(w + (size_t)r * row_bytes, w + (size_t)(r % DISTINCT_ROWS) * row_bytes, row_bytes);
    for (int i = 0; i < COLS; i++)
        x[i] = rng_float();
    ta->from_float(x, a, COLS);

    float checksum = 0;
    double simd = time_matvec(t->vec_dot, w, row_bytes, a, ROWS, 5, &checksum);
    int ref_rows = ROWS / 8;   /* the scalar code is slow: time fewer rows */
    double ref = time_matvec(t->vec_dot_ref, w, row_bytes, a, ref_rows, 2, &checksum) * ROWS / ref_rows;
    double gb = (double)row_bytes * ROWS / 1e9;
    printf("%-6s %7.2f MB  simd %8.0f ns/row %6.2f GB/s   scalar %8.0f ns/row %6.2f GB/s   x%.1f  (checksum %g)\n",
           t->name, gb * 1e3, simd / ROWS * 1e9, gb / simd, ref / ROWS * 1e9, gb / ref, ref / simd, checksum);
    fflush(stdout);
    free(w);
    free(a);
    free(x);
}

int main(int argc, char **argv)
{
    static const uint32_t order[] = {
        WICK_TYPE_Q4_0, WICK_TYPE_Q8_0, WICK_TYPE_Q4_K, WICK_TYPE_Q6_K, WICK_TYPE_Q2_K, WICK_TYPE_Q3_K,
        WICK_TYPE_Q5_K, WICK_TYPE_Q4_1, WICK_TYPE_Q5_0, WICK_TYPE_Q5_1, WICK_TYPE_IQ4_NL, WICK_TYPE_F16,
        WICK_TYPE_BF16, WICK_TYPE_F32, WICK_TYPE_Q8_1, WICK_TYPE_Q8_K,
    };
    printf("vec_dot over a %dx%d matrix, one thread\n", ROWS, COLS);
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        const quant_type *t = quant_get(order[k]);
        int wanted = argc <= 1;
        for (int i = 1; i < argc; i++)
            wanted |= strcmp(argv[i], t->name) == 0;
        if (wanted)
            bench(t);
    }
    return 0;
}
