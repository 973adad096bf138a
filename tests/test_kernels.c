/* test_kernels.c — checks every tensor type of quant.h: the dot product (vec_dot, gemm's 1×1 tile)
 * against the tile and the scalar reference (quantized rows and random valid blocks, one block up
 * to many), the reference
 * against the dot product of the dequantized rows, the to_float∘from_float round trip, the type
 * table, the f16 / bf16 conversions at their edges, and the gemm tile kernels: every tile shape
 * and place against the reference and against gemm's own 1×1 result for the same element. Output and
 * exit status: tests/check.h. */
#include "quant.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: deterministic, the same stream natively and in wasm */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_u32(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static float rng_uniform(void) { return (float)(rng_u32() >> 8) / 16777216.0f; }

/* roughly normal (sum of four uniforms), with an occasional outlier as real weights have */
static float rng_normal(void)
{
    float v = (rng_uniform() + rng_uniform() + rng_uniform() + rng_uniform() - 2.0f) * 1.7f;
    return rng_u32() % 64 == 0 ? v * 4 : v;
}

static void fill_normal(float *x, int n, float scale)
{
    for (int i = 0; i < n; i++)
        x[i] = rng_normal() * scale;
}

static const uint32_t all_types[] = {
    WICK_TYPE_F32, WICK_TYPE_F16, WICK_TYPE_BF16, WICK_TYPE_Q4_0, WICK_TYPE_Q4_1, WICK_TYPE_Q5_0,
    WICK_TYPE_Q5_1, WICK_TYPE_Q8_0, WICK_TYPE_Q8_1, WICK_TYPE_Q2_K, WICK_TYPE_Q3_K, WICK_TYPE_Q4_K,
    WICK_TYPE_Q5_K, WICK_TYPE_Q6_K, WICK_TYPE_Q8_K, WICK_TYPE_IQ4_NL, WICK_TYPE_Q6_K_R, WICK_TYPE_Q4_K_R,
};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

/* offsets of the fp16 scale fields of each block type: random bytes are a valid block once
 * these hold finite scales */
static int half_fields(uint32_t type, size_t off[3])
{
    switch (type) {
    case WICK_TYPE_Q4_0: off[0] = offsetof(block_q4_0, d); return 1;
    case WICK_TYPE_Q4_1: off[0] = offsetof(block_q4_1, d); off[1] = offsetof(block_q4_1, m); return 2;
    case WICK_TYPE_Q5_0: off[0] = offsetof(block_q5_0, d); return 1;
    case WICK_TYPE_Q5_1: off[0] = offsetof(block_q5_1, d); off[1] = offsetof(block_q5_1, m); return 2;
    case WICK_TYPE_Q8_0: off[0] = offsetof(block_q8_0, d); return 1;
    case WICK_TYPE_Q8_1: off[0] = offsetof(block_q8_1, d); off[1] = offsetof(block_q8_1, s); return 2;
    case WICK_TYPE_Q2_K: off[0] = offsetof(block_q2_K, d); off[1] = offsetof(block_q2_K, dmin); return 2;
    case WICK_TYPE_Q3_K: off[0] = offsetof(block_q3_K, d); return 1;
    case WICK_TYPE_Q4_K: off[0] = offsetof(block_q4_K, d); off[1] = offsetof(block_q4_K, dmin); return 2;
    case WICK_TYPE_Q5_K: off[0] = offsetof(block_q5_K, d); off[1] = offsetof(block_q5_K, dmin); return 2;
    case WICK_TYPE_Q6_K: off[0] = offsetof(block_q6_K, d); return 1;
    case WICK_TYPE_Q6_K_R: off[0] = offsetof(block_q6_K_r, d); return 1;
    case WICK_TYPE_Q4_K_R: off[0] = offsetof(block_q4_K, d); off[1] = offsetof(block_q4_K, dmin); return 2;
    case WICK_TYPE_IQ4_NL: off[0] = offsetof(block_iq4_nl, d); return 1;
    default: return 0;
    }
}

/* a row of n elements of random valid blocks: every bit pattern of the quants is allowed */
static void fill_random_blocks(const quant_type *t, void *row, int n)
{
    uint8_t *p = row;
    size_t size = quant_row_size(t->type, n);
    if (t->type == WICK_TYPE_F32) {
        fill_normal(row, n, 1.0f);
        return;
    }
    if (t->type == WICK_TYPE_BF16) {
        for (int i = 0; i < n; i++)
            ((uint16_t *)row)[i] = quant_f32_to_bf16(rng_normal());
        return;
    }
    if (t->type == WICK_TYPE_F16) {               /* any finite half, subnormals included */
        for (int i = 0; i < n; i++) {
            uint16_t h;
            do h = (uint16_t)rng_u32(); while ((h & 0x7c00) == 0x7c00);
            ((uint16_t *)row)[i] = h;
        }
        return;
    }
    for (size_t i = 0; i < size; i++)
        p[i] = (uint8_t)rng_u32();
    size_t off[3];
    int n_half = half_fields(t->type, off);
    for (uint8_t *block = p; block < p + size; block += t->type_size) {
        for (int k = 0; k < n_half; k++) {
            uint16_t h = quant_f32_to_f16((rng_uniform() - 0.3f) * 0.02f);
            memcpy(block + off[k], &h, 2);
        }
        if (t->type == WICK_TYPE_Q8_K) {
            float d = (rng_uniform() - 0.3f) * 0.02f;
            memcpy(block + offsetof(block_q8_K, d), &d, 4);
        }
    }
}

/* dot product of the dequantized rows in double, and the sum of |w_i a_i| (the magnitude that
 * float rounding errors are measured against) */
static double dequant_dot(const quant_type *t, const void *w, const void *a, int n, double *magnitude)
{
    const quant_type *ta = quant_get(t->vec_dot_type);
    float *wf = malloc(sizeof(float) * (size_t)n), *af = malloc(sizeof(float) * (size_t)n);
    t->to_float(w, wf, n);
    ta->to_float(a, af, n);
    double dot = 0, mag = 0;
    for (int i = 0; i < n; i++) {
        dot += (double)wf[i] * af[i];
        mag += fabs((double)wf[i] * af[i]);
    }
    free(wf);
    free(af);
    *magnitude = mag;
    return dot;
}

/* the row lengths to test: one block, a few blocks, odd counts, a model-sized row */
static int test_lengths(const quant_type *t, int len[8])
{
    if (t->block_size == 1) {
        static const int f[] = { 1, 3, 4, 15, 16, 17, 100, 4096 };
        memcpy(len, f, sizeof f);
        return 8;
    }
    static const int blocks[] = { 1, 2, 3, 5, 8, 16 };
    int k = 0;
    for (; k < 6; k++)
        len[k] = blocks[k] * (int)t->block_size;
    len[k++] = t->block_size == 32 ? 2048 : 4096;
    len[k++] = t->block_size == 32 ? 5632 : 11008;
    return k;
}

static int is_float_type(uint32_t type)
{
    return type == WICK_TYPE_F32 || type == WICK_TYPE_F16 || type == WICK_TYPE_BF16;
}

static uint32_t bits_of(float f);
static int gemm_matches_ref_bitwise(uint32_t type);

static void test_dot(const quant_type *t, int random_blocks)
{
    const quant_type *ta = quant_get(t->vec_dot_type);
    int len[8], n_len = test_lengths(t, len);
    const char *source = random_blocks ? "random blocks" : "from_float";
    /* weight rows start 2 or 4 bytes into the buffer, as rows inside a tensor may */
    size_t shift = t->type_size % 4 == 0 ? 4 : 2;
    /* vec_dot is gemm's 1×1 tile: the quantized types' equals the reference bit for bit; the
     * float types' and the activation formats' differ from it only in the order of float
     * additions */
    double tol_dot = is_float_type(t->type) ? 4e-5 : 1e-5;
    /* the reference against the dequantized dot: float scale products in the reference; Q8_1's
     * s is d * sum rounded to fp16, which Q4_1 / Q5_1 use for their min term */
    double tol_ref = t->vec_dot_type == WICK_TYPE_Q8_1 ? 3e-3 : 1e-4;
    for (int k = 0; k < n_len; k++) {
        int n = len[k];
        uint8_t *wbuf = malloc(quant_row_size(t->type, n) + shift);
        void *w = wbuf + shift;
        void *a = malloc(quant_row_size(ta->type, n));
        float *xf = malloc(sizeof(float) * (size_t)n);
        if (random_blocks) {
            fill_random_blocks(t, w, n);
        } else {
            fill_normal(xf, n, 0.02f);
            t->from_float(xf, w, n);
        }
        fill_normal(xf, n, 1.0f);
        ta->from_float(xf, a, n);

        double mag, exact = dequant_dot(t, w, a, n, &mag);
        float dot = t->vec_dot(n, w, a), ref = t->vec_dot_ref(n, w, a), tile;
        size_t w_bytes = quant_row_size(t->type, n), a_bytes = quant_row_size(ta->type, n);
        t->gemm(n, w, w_bytes, 1, a, a_bytes, 1, &tile, 1);
        double err_dot = fabs((double)dot - ref) / (mag > 0 ? mag : 1);
        double err_ref = fabs((double)ref - exact) / (mag > 0 ? mag : 1);
        int bitwise = gemm_matches_ref_bitwise(t->type);
        const char *src_id = random_blocks ? "random" : "from_float";
        check(bits_of(dot) == bits_of(tile), check_id("kernels.%s.vec_dot_tile.%s.%d-n%d", t->name, src_id, k, n),
              "%-6s vec_dot %-13s n=%-5d is gemm's 1x1 tile bit for bit: %.9g %.9g", t->name, source, n, dot, tile);
        check(err_dot <= tol_dot && isfinite(dot) && (!bitwise || bits_of(dot) == bits_of(ref)),
              check_id("kernels.%s.vec_dot.%s.%d-n%d", t->name, src_id, k, n),
              "%-6s vec_dot %-13s n=%-5d dot %-13.7g ref %-13.7g |diff|/sum|w*a| %.1e%s", t->name, source, n,
              dot, ref, err_dot, bitwise ? " (bit for bit)" : "");
        check(err_ref <= tol_ref, check_id("kernels.%s.vec_dot_ref.%s.%d-n%d", t->name, src_id, k, n),
              "%-6s vec_dot_ref %-13s n=%-5d ref %-13.7g dequantized %-13.7g rel %.1e",
              t->name, source, n, ref, exact, err_ref);
        free(wbuf);
        free(a);
        free(xf);
    }
}

/* Types whose gemm is a kernel of its own, claimed bit-identical to vec_dot_ref; the others
 * (float types, activation formats as weights) loop over a SIMD row kernel. */
static int gemm_matches_ref_bitwise(uint32_t type)
{
    return !is_float_type(type) && type != WICK_TYPE_Q8_1 && type != WICK_TYPE_Q8_K;
}

/* gemm over a matrix of GEMM_TEST_ROWS weight rows × GEMM_TEST_TOKENS activation rows, cut
 * into tiles of every shape nr × nt (nr <= GEMM_MAX_ROWS, nt up to GEMM_MAX_TOKENS + 1, which
 * gemm takes in two passes) at the matrix's start and at its far corner: each output must be
 * bit-identical to gemm's 1×1 tile of the same element, equal vec_dot_ref (bit for bit where
 * claimed, else within rounding), and outputs outside the tile must stay untouched. */
#define GEMM_TEST_ROWS 17   /* gemv8 reads 8 rows 1 or 2 rows apart, from row 0 or 1 */
#define GEMM_TEST_TOKENS 7
static void test_gemm(const quant_type *t)
{
    const quant_type *ta = quant_get(t->vec_dot_type);
    static const int blocks[] = { 1, 2, 3, 9 };
    static const int float_lengths[] = { 1, 7, 16, 100 };
    for (int k = 0; k < 4; k++) {
        int n = t->block_size == 1 ? float_lengths[k] : blocks[k] * (int)t->block_size;
        /* rows 4 bytes apart beyond their length, as rows of a tensor need not be packed */
        size_t w_stride = quant_row_size(t->type, n) + 4, a_stride = quant_row_size(ta->type, n);
        uint8_t *w = malloc(w_stride * GEMM_TEST_ROWS), *a = malloc(a_stride * GEMM_TEST_TOKENS);
        float *x = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < GEMM_TEST_ROWS; r++)
            fill_random_blocks(t, w + (size_t)r * w_stride, n);
        for (int tok = 0; tok < GEMM_TEST_TOKENS; tok++) {
            fill_normal(x, n, 1.0f);
            ta->from_float(x, a + (size_t)tok * a_stride, n);
        }
        float single[GEMM_TEST_TOKENS][GEMM_TEST_ROWS], ref[GEMM_TEST_TOKENS][GEMM_TEST_ROWS];
        double worst_ref = 0;
        int ref_bitwise = 1;
        for (int tok = 0; tok < GEMM_TEST_TOKENS; tok++)
            for (int r = 0; r < GEMM_TEST_ROWS; r++) {
                const uint8_t *wr = w + (size_t)r * w_stride, *at = a + (size_t)tok * a_stride;
                t->gemm(n, wr, w_stride, 1, at, a_stride, 1, &single[tok][r], 1);
                ref[tok][r] = t->vec_dot_ref(n, wr, at);
                double mag;
                dequant_dot(t, wr, at, n, &mag);
                double err = fabs((double)single[tok][r] - ref[tok][r]) / (mag > 0 ? mag : 1);
                worst_ref = err > worst_ref ? err : worst_ref;
                float expect = gemm_matches_ref_bitwise(t->type) ? ref[tok][r] : t->vec_dot(n, wr, at);
                ref_bitwise &= bits_of(single[tok][r]) == bits_of(expect);
            }
        int tiles = 0, bad_tiles = 0;
        const size_t out_stride = GEMM_TEST_ROWS + 3;
        float out[GEMM_TEST_TOKENS * (GEMM_TEST_ROWS + 3)];
        for (int nr = 1; nr <= GEMM_MAX_ROWS; nr++)
            for (int nt = 1; nt <= GEMM_MAX_TOKENS + 1; nt++)
                for (int corner = 0; corner < 2; corner++) {
                    int r0 = corner ? GEMM_TEST_ROWS - nr : 0, t0 = corner ? GEMM_TEST_TOKENS - nt : 0;
                    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
                        out[i] = -12345.0f;
                    t->gemm(n, w + (size_t)r0 * w_stride, w_stride, nr, a + (size_t)t0 * a_stride, a_stride, nt,
                            out + (size_t)t0 * out_stride + r0, out_stride);
                    int ok = 1;
                    for (int tok = 0; tok < GEMM_TEST_TOKENS; tok++)
                        for (int r = 0; r < (int)out_stride; r++) {
                            float v = out[(size_t)tok * out_stride + r];
                            int inside = tok >= t0 && tok < t0 + nt && r >= r0 && r < r0 + nr;
                            ok &= inside ? bits_of(v) == bits_of(single[tok][r]) : v == -12345.0f;
                        }
                    tiles++;
                    bad_tiles += !ok;
                }
        check(bad_tiles == 0, check_id("kernels.%s.gemm.n%d.tiles", t->name, n), "%-6s gemm n=%-5d %d tiles (nr 1..%d x nt 1..%d, two corners): each output is its 1x1 value%s (%d wrong)",
              t->name, n, tiles, GEMM_MAX_ROWS, GEMM_MAX_TOKENS + 1, ", outside untouched", bad_tiles);
        if (t->gemv8) {
            int bad = 0, calls = 0;
            for (int gap = 1; gap <= 2; gap++)
                for (int r0 = 0; r0 <= 1; r0++)
                    for (int tok = 0; tok < GEMM_TEST_TOKENS; tok++) {
                        float out8[9];
                        out8[8] = -12345.0f;
                        t->gemv8(n, w + (size_t)r0 * w_stride, (size_t)gap * w_stride, a + (size_t)tok * a_stride, out8);
                        for (int r = 0; r < 8; r++)
                            bad += bits_of(out8[r]) != bits_of(single[tok][r0 + gap * r]);
                        bad += out8[8] != -12345.0f;
                        calls++;
                    }
            check(bad == 0, check_id("kernels.%s.gemv8.n%d", t->name, n), "%-6s gemv8 n=%-5d %d calls (rows 1 or 2 apart): each output is its 1x1 gemm value (%d wrong)",
                  t->name, n, calls, bad);
        }
        check(ref_bitwise, check_id("kernels.%s.gemm.n%d.1x1", t->name, n), "%-6s gemm n=%-5d 1x1 equals %s bit for bit", t->name, n,
              gemm_matches_ref_bitwise(t->type) ? "vec_dot_ref" : "vec_dot");
        check(worst_ref <= (is_float_type(t->type) ? 4e-5 : 1e-5), check_id("kernels.%s.gemm.n%d.vs-ref", t->name, n), "%-6s gemm n=%-5d vs vec_dot_ref |diff|/sum|w*a| %.1e",
              t->name, n, worst_ref);
        free(w);
        free(a);
        free(x);
    }
}

/* relative RMS error of to_float(from_float(x)) for roughly normal x, per type */
static double round_trip_bound(uint32_t type)
{
    switch (type) {
    case WICK_TYPE_F32: return 0;
    case WICK_TYPE_F16: return 1e-3;
    case WICK_TYPE_BF16: return 4e-3;
    case WICK_TYPE_Q8_0: case WICK_TYPE_Q8_1: return 0.01;
    case WICK_TYPE_Q8_K: return 0.02;          /* one scale per 256 values */
    case WICK_TYPE_Q6_K: case WICK_TYPE_Q6_K_R: return 0.03;
    case WICK_TYPE_Q5_0: case WICK_TYPE_Q5_1: case WICK_TYPE_Q5_K: return 0.06;
    case WICK_TYPE_Q4_0: case WICK_TYPE_Q4_1: case WICK_TYPE_Q4_K: case WICK_TYPE_Q4_K_R: case WICK_TYPE_IQ4_NL: return 0.12;
    case WICK_TYPE_Q3_K: return 0.25;
    case WICK_TYPE_Q2_K: return 0.5;
    default: return 0;
    }
}

static void test_round_trip(const quant_type *t)
{
    const int n = 8192;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    void *q = malloc(quant_row_size(t->type, n));
    fill_normal(x, n, 0.05f);
    t->from_float(x, q, n);
    t->to_float(q, y, n);
    double err = 0, ref = 0;
    for (int i = 0; i < n; i++) {
        err += (double)(x[i] - y[i]) * (x[i] - y[i]);
        ref += (double)x[i] * x[i];
    }
    double rel = sqrt(err / ref), bound = round_trip_bound(t->type);
    check(rel <= bound, check_id("kernels.%s.round-trip", t->name), "%-6s to_float(from_float(x)) relative RMS error %.4f (bound %.4f)", t->name, rel, bound);

    /* an all-zero row quantizes to zeros (no division by a zero scale) */
    memset(x, 0, sizeof(float) * n);
    t->from_float(x, q, n);
    t->to_float(q, y, n);
    int zeros = 1;
    for (int i = 0; i < n; i++)
        zeros &= y[i] == 0;
    check(zeros, check_id("kernels.%s.zero-row", t->name), "%-6s a zero row round-trips to zeros", t->name);
    free(x);
    free(y);
    free(q);
}

/* the activation formats carry sums that the kernels rely on */
static void test_activation_sums(void)
{
    float x[QK_K];
    fill_normal(x, QK_K, 1.0f);
    block_q8_K bk;
    quant_get(WICK_TYPE_Q8_K)->from_float(x, &bk, QK_K);
    int ok = 1;
    for (int j = 0; j < QK_K / 16; j++) {
        int sum = 0;
        for (int k = 0; k < 16; k++)
            sum += bk.qs[16 * j + k];
        ok &= sum == bk.bsums[j];
    }
    check(ok, "kernels.q8_K.bsums", "q8_K bsums are the sums of the 16-element groups");
    block_q8_1 b1;
    quant_get(WICK_TYPE_Q8_1)->from_float(x, &b1, QK8_1);
    int sum = 0;
    for (int k = 0; k < QK8_1; k++)
        sum += b1.qs[k];
    float s = quant_f16_to_f32(b1.s), expect = quant_f16_to_f32(b1.d) * (float)sum;
    check(fabsf(s - expect) <= 1e-3f * fabsf(expect) + 1e-6f, "kernels.q8_1.s", "q8_1 s = d * sum(q): %g vs %g", s, expect);
}

static void test_table(void)
{
    for (size_t k = 0; k < N_TYPES; k++) {
        const quant_type *t = quant_get(all_types[k]);
        check(t != NULL && t->type == all_types[k] && t->to_float && t->from_float && t->vec_dot && t->vec_dot_ref
              && t->gemm && quant_get(t->vec_dot_type) != NULL, check_id("kernels.table.type%u", all_types[k]),
              "type %u has a complete table row (%s)", all_types[k], t ? t->name : "missing");
    }
    check(quant_get(4) == NULL && quant_get(5) == NULL && quant_get(WICK_TYPE_COUNT) == NULL
          && quant_get(0xffffffffu) == NULL, "kernels.table.unknown-ids", "removed and unknown type ids give NULL");
    check(quant_row_size(WICK_TYPE_Q4_0, 64) == 36 && quant_row_size(WICK_TYPE_Q4_K, 512) == 288
          && quant_row_size(WICK_TYPE_Q6_K, 256) == 210 && quant_row_size(WICK_TYPE_F32, 3) == 12
          && quant_row_size(WICK_TYPE_BF16, 5) == 10 && quant_row_size(WICK_TYPE_IQ4_NL, 32) == 18, "kernels.table.row-size",
          "quant_row_size of whole blocks");
    check(quant_row_size(WICK_TYPE_Q4_0, 33) == 0 && quant_row_size(WICK_TYPE_Q4_K, 128) == 0
          && quant_row_size(WICK_TYPE_Q8_0, -32) == 0 && quant_row_size(4, 32) == 0, "kernels.table.row-size-refused",
          "quant_row_size refuses partial blocks, negative lengths and unknown types");
    check(quant_get(WICK_TYPE_Q4_0)->vec_dot_type == WICK_TYPE_Q8_0 && quant_get(WICK_TYPE_Q4_1)->vec_dot_type == WICK_TYPE_Q8_1
          && quant_get(WICK_TYPE_Q5_1)->vec_dot_type == WICK_TYPE_Q8_1 && quant_get(WICK_TYPE_IQ4_NL)->vec_dot_type == WICK_TYPE_Q8_0
          && quant_get(WICK_TYPE_Q6_K)->vec_dot_type == WICK_TYPE_Q8_K && quant_get(WICK_TYPE_F16)->vec_dot_type == WICK_TYPE_F32_H && quant_get(WICK_TYPE_BF16)->vec_dot_type == WICK_TYPE_F32_BH,
          "kernels.table.activation-types", "activation formats as llama.cpp's CPU backend");
}

/* ---- f16 / bf16 -------------------------------------------------------------------------- */

static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* the value of a finite half, computed independently with ldexp */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

static void test_f16(void)
{
    struct { float f; uint16_t h; const char *what; } cases[] = {
        { 0.0f, 0x0000, "+0" }, { -0.0f, 0x8000, "-0" }, { 1.0f, 0x3c00, "1" }, { -2.0f, 0xc000, "-2" },
        { 65504.0f, 0x7bff, "max half" }, { 65519.99f, 0x7bff, "just below the overflow threshold" },
        { 65520.0f, 0x7c00, "65520 overflows to +inf" }, { 1e10f, 0x7c00, "1e10 to +inf" },
        { -INFINITY, 0xfc00, "-inf" }, { 0x1p-14f, 0x0400, "smallest normal" },
        { 0x1p-24f, 0x0001, "smallest subnormal" }, { 0x1p-25f, 0x0000, "half the smallest subnormal, tie to even 0" },
        { 0x1.000002p-25f, 0x0001, "just above that" }, { 0x3p-25f, 0x0002, "1.5 subnormal units, tie to even 2" },
        { 0x3ffp-24f, 0x03ff, "largest subnormal" }, { 0x7ffp-25f, 0x0400, "tie between largest subnormal and smallest normal" },
        { 1.0f + 0x1p-11f, 0x3c00, "tie at 1 + 2^-11 to even" }, { 1.0f + 0x3p-11f, 0x3c02, "tie at 1 + 3*2^-11 to even" },
        { 0x1.002002p+0f, 0x3c01, "just above the tie" }, { 1e-30f, 0x0000, "underflow to +0" },
        { -1e-30f, 0x8000, "underflow to -0" }, { 0x1p-149f, 0x0000, "float subnormal to 0" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint16_t h = quant_f32_to_f16(cases[k].f);
        check(h == cases[k].h, check_id("kernels.convert.f16.encode.%zu", k), "f32_to_f16 %s: %a -> 0x%04x (expect 0x%04x)", cases[k].what, (double)cases[k].f, h, cases[k].h);
    }
    uint16_t hn = quant_f32_to_f16(NAN), hs = quant_f32_to_f16(float_of(0xff800001u));
    check((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0, "kernels.convert.f16.nan", "f32_to_f16 NaN stays NaN (0x%04x)", hn);
    check((hs & 0x7c00) == 0x7c00 && (hs & 0x3ff) != 0 && (hs & 0x8000), "kernels.convert.f16.nan-payload",
          "f32_to_f16 a NaN with only low payload bits stays a negative NaN (0x%04x)", hs);

    /* all 65536 halves: exact value, NaN-ness, and round trip back to the same bits */
    int bad_value = 0, bad_trip = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = quant_f16_to_f32((uint16_t)h);
        int e = (h >> 10) & 31;
        if (e == 31) {
            int is_nan = (h & 0x3ff) != 0;
            if (is_nan ? !isnan(f) : !(isinf(f) && (f < 0) == ((h & 0x8000) != 0)))
                bad_nan++;
            if (!is_nan && quant_f32_to_f16(f) != h)
                bad_trip++;
            continue;
        }
        if ((double)f != half_value((uint16_t)h) || !!signbit(f) != ((h & 0x8000) != 0))
            bad_value++;
        if (quant_f32_to_f16(f) != h)
            bad_trip++;
    }
    check(bad_value == 0, "kernels.convert.f16.decode", "f16_to_f32 of all finite halves is exact (%d wrong)", bad_value);
    check(bad_nan == 0, "kernels.convert.f16.decode-inf-nan", "f16_to_f32 of Inf and NaN halves (%d wrong)", bad_nan);
    check(bad_trip == 0, "kernels.convert.f16.round-trip", "f32_to_f16(f16_to_f32(h)) == h for every non-NaN half (%d wrong)", bad_trip);

    /* random floats over the whole half range: the result is a nearest half, ties to even */
    int bad_round = 0;
    for (int k = 0; k < 200000; k++) {
        float f = float_of((rng_u32() & 0x80000000u) | (0x32000000u + rng_u32() % (0x47800000u - 0x32000000u)));
        uint16_t h = quant_f32_to_f16(f);
        if ((h & 0x7c00) == 0x7c00) {
            if (fabsf(f) < 65520.0f)
                bad_round++;
            continue;
        }
        double err = fabs(half_value(h) - f);
        uint16_t mag = h & 0x7fff, sign = h & 0x8000;
        double up = mag < 0x7bff ? fabs(half_value((uint16_t)(sign | (mag + 1))) - f) : INFINITY;
        double down = mag > 0 ? fabs(half_value((uint16_t)(sign | (mag - 1))) - f) : INFINITY;
        if (err > up || err > down || ((err == up || err == down) && (h & 1)))
            bad_round++;
    }
    check(bad_round == 0, "kernels.convert.f16.rounding", "f32_to_f16 rounds 200000 random floats to nearest, ties to even (%d wrong)", bad_round);

    /* quant_round_f16 (the in-place rounding of F16-weight activations and of GELU) is the round trip
     * through the half, bit for bit, on floats of every exponent: one in 251 of all 2^32 bit patterns */
    int bad_inplace = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
        float f = float_of((uint32_t)u), r = quant_round_f16(f), t = quant_f16_to_f32(quant_f32_to_f16(f));
        if (isnan(f) ? !isnan(r) : bits_of(r) != bits_of(t))
            bad_inplace++;
    }
    check(bad_inplace == 0, "kernels.convert.f16.round-in-place", "quant_round_f16 equals the round trip through a half (%d of 17.1M differ)", bad_inplace);
}

static void test_bf16(void)
{
    struct { uint32_t f; uint16_t h; const char *what; } cases[] = {
        { 0x3f800000u, 0x3f80, "1" }, { 0x80000000u, 0x8000, "-0" }, { 0x3f808000u, 0x3f80, "tie to even (down)" },
        { 0x3f818000u, 0x3f82, "tie to even (up)" }, { 0x3f808001u, 0x3f81, "above the tie" },
        { 0x7f800000u, 0x7f80, "+inf" }, { 0xff800000u, 0xff80, "-inf" }, { 0x7f7fffffu, 0x7f80, "max float rounds to inf" },
        { 0x00010000u, 0x0001, "float subnormal kept" }, { 0x00008000u, 0x0000, "subnormal tie to even 0" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint16_t h = quant_f32_to_bf16(float_of(cases[k].f));
        check(h == cases[k].h, check_id("kernels.convert.bf16.encode.%zu", k), "f32_to_bf16 %s: 0x%08x -> 0x%04x (expect 0x%04x)", cases[k].what, cases[k].f, h, cases[k].h);
    }
    uint16_t hn = quant_f32_to_bf16(float_of(0x7f800001u));
    check((hn & 0x7f80) == 0x7f80 && (hn & 0x7f) != 0, "kernels.convert.bf16.nan-payload", "f32_to_bf16 a NaN with only low payload bits stays NaN (0x%04x)", hn);
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = quant_bf16_to_f32((uint16_t)h);
        if (bits_of(f) != h << 16)
            bad++;
        else if (!isnan(f) && quant_f32_to_bf16(f) != h)
            bad++;
    }
    check(bad == 0, "kernels.convert.bf16.round-trip", "bf16 -> f32 -> bf16 is exact for every non-NaN value (%d wrong)", bad);
}

/* the SIMD Q8_0 and Q8_K quantizers the table hands out equal the scalar reference byte for byte: rows of
 * every scale, values landing exactly on halves after scaling (roundf's ties), zeros, and rows
 * with NaN and Inf */
static void test_q8_quantize(void)
{
    enum { BLOCKS = 64, N = BLOCKS * QK8_0 };
    static float x[N];
    static block_q8_0 ref[BLOCKS], simd[BLOCKS];
    static block_q8_K kref[N / QK_K], ksimd[N / QK_K];
    int bad_rows = 0, bad_k = 0, bad_kr = 0, rows = 0;
    for (int round = 0; round < 200; round++) {
        float scale = (float)ldexp(1.0, (int)(rng_u32() % 60) - 30);
        fill_normal(x, N, scale);
        for (int b = 0; b < BLOCKS; b++) {
            float *blk = x + b * QK8_0;
            switch ((b + round) % 8) {
            case 0: /* ties: amax 127 makes id 1, the others k + 0.5 */
                for (int j = 0; j < QK8_0; j++) blk[j] = (float)((int)(rng_u32() % 254) - 127) + (j % 2 ? 0.5f : 0.0f);
                blk[0] = 127.0f;
                break;
            case 1: memset(blk, 0, QK8_0 * sizeof(float)); break;
            case 2: blk[rng_u32() % QK8_0] = NAN; break;
            case 3: blk[rng_u32() % QK8_0] = (rng_u32() & 1) ? INFINITY : -INFINITY; break;
            case 4: blk[rng_u32() % QK8_0] = 0x1p-149f; break;   /* a subnormal amax */
            default: break;
            }
        }
        quant_q8_0_from_float_ref(x, ref, N);
        quant_get(WICK_TYPE_Q8_0)->from_float(x, simd, N);
        bad_rows += memcmp(ref, simd, sizeof ref) != 0;
        /* Q8_K: the same rows, with ties of magnitude (+a and -a: the first one wins) in some,
         * and a super-block of subnormals only (its scale 127 / max overflows to Inf) in others */
        if (round % 3 == 0)
            for (int b = 0; b < N / QK_K; b++) {
                x[b * QK_K + 5] = 1e3f * scale;
                x[b * QK_K + 9] = -1e3f * scale;
            }
        if (round % 3 == 1)
            for (int j = 0; j < QK_K; j++)
                x[QK_K + j] = (float)((int)(rng_u32() % 9) - 4) * 0x1p-149f;
        quant_q8_K_from_float_ref(x, kref, N);
        quant_get(WICK_TYPE_Q8_K)->from_float(x, ksimd, N);
        bad_k += memcmp(kref, ksimd, sizeof kref) != 0;
        quant_q8_K_r_from_float_ref(x, kref, N);
        quant_get(WICK_TYPE_Q8_K_R)->from_float(x, ksimd, N);
        bad_kr += memcmp(kref, ksimd, sizeof kref) != 0;
        quant_q8_K_r32_from_float_ref(x, kref, N);
        quant_get(WICK_TYPE_Q8_K_R32)->from_float(x, ksimd, N);
        bad_kr += memcmp(kref, ksimd, sizeof kref) != 0;
        rows++;
    }
    check(bad_k == 0, "kernels.q8_K.quantize", "q8_K   quantization: SIMD equals the scalar reference byte for byte on %d rows of %d blocks "
          "(every scale, ties, zeros, NaN, Inf, subnormals; %d differ)", rows, N / QK_K, bad_k);
    check(bad_kr == 0, "kernels.q8_K_r.quantize", "q8_K_r and q8_K_r32 quantization: SIMD equals the scalar reference byte for byte on %d rows (%d differ)", rows, bad_kr);
    check(bad_rows == 0, "kernels.q8_0.quantize", "q8_0   quantization: SIMD equals the scalar reference byte for byte on %d rows of %d blocks "
          "(every scale, ties, zeros, NaN, Inf, subnormals; %d differ)", rows, BLOCKS, bad_rows);
}

/* Q6_K_R and Q4_K_R are Q6_K and Q4_K rewritten in place (quant_repack), with Q8_K_R / Q8_K_R32
 * activations: the same values, and every kernel's result bit for bit the file type's reference,
 * in every build (the relaxed builds choose them, quant_cpu_type). */
static void test_repacked(uint32_t file_type, uint32_t r_type, int (*pos)(int))
{
    const quant_type *qf = quant_get(file_type), *qr = quant_get(r_type);
    const quant_type *q8 = quant_get(WICK_TYPE_Q8_K), *q8r = quant_get(qr->vec_dot_type);
    const char *name = qr->name;
    uint8_t seen[QK_K] = {0};
    int bijective = 1;
    for (int e = 0; e < QK_K; e++) {
        int p = pos(e);
        bijective &= p >= 0 && p < QK_K && !seen[p];
        if (p >= 0 && p < QK_K) seen[p] = 1;
    }
    check(bijective, check_id("kernels.%s.order", name), "%s order: a permutation of a super-block", name);
    check(qr->type_size == qf->type_size && q8r->type_size == q8->type_size && qf->vec_dot_type == WICK_TYPE_Q8_K
          && quant_cpu_type(WICK_TYPE_F32) == WICK_TYPE_F32 && (quant_cpu_type(file_type) == file_type || quant_cpu_type(file_type) == r_type),
          check_id("kernels.%s.layout", name), "%s: %s's size, activations (%s) of Q8_K's size", name, qf->name, q8r->name);
    enum { ROWS = 9, TOKENS = 5 };
    const int n = 4096;
    size_t rb = quant_row_size(file_type, n), ab = quant_row_size(WICK_TYPE_Q8_K, n);
    uint8_t *w = malloc(rb * ROWS), *wr = malloc(rb * ROWS), *wref = malloc(rb * ROWS), *a = malloc(ab * TOKENS), *ar = malloc(ab * TOKENS);
    uint8_t *aref = malloc(ab * TOKENS);
    float *x = malloc(sizeof(float) * n), *f0 = malloc(sizeof(float) * n), *f1 = malloc(sizeof(float) * n);
    fill_random_blocks(qf, w, n * ROWS);
    memcpy(wr, w, rb * ROWS);
    quant_repack(file_type, r_type, wr, (size_t)ROWS * n / QK_K);
    memcpy(wref, w, rb * ROWS);
    quant_repack_ref(file_type, r_type, wref, (size_t)ROWS * n / QK_K);
    check(memcmp(wref, wr, rb * ROWS) == 0 && memcmp(w, wr, rb * ROWS) != 0, check_id("kernels.%s.repack", name),
          "%s: quant_repack (SIMD) equals the scalar quant_repack_ref byte for byte", name);
    int acts_ok = 1;
    for (int t = 0; t < TOKENS; t++) {
        fill_normal(x, n, 1.0f);
        q8->from_float(x, a + t * ab, n);
        q8r->from_float(x, ar + t * ab, n);
        q8->to_float(a + t * ab, f0, n);
        q8r->to_float(ar + t * ab, f1, n);
        acts_ok &= memcmp(f0, f1, sizeof(float) * n) == 0;
        for (int i = 0; i < n / QK_K; i++) {
            const block_q8_K *b0 = (const block_q8_K *)(a + t * ab) + i, *b1 = (const block_q8_K *)(ar + t * ab) + i;
            acts_ok &= b0->d == b1->d && memcmp(b0->bsums, b1->bsums, sizeof b0->bsums) == 0;
            for (int e = 0; e < QK_K; e++)
                acts_ok &= b1->qs[pos(e)] == b0->qs[e];
        }
    }
    check(acts_ok, check_id("kernels.%s.activations", q8r->name), "%s: the same values, scale and sub-block sums as q8_K, in the order", q8r->name);
    int values_ok = 1;
    for (int r = 0; r < ROWS; r++) {
        qf->to_float(w + r * rb, f0, n);
        qr->to_float(wr + r * rb, f1, n);
        values_ok &= memcmp(f0, f1, sizeof(float) * n) == 0;
    }
    check(values_ok, check_id("kernels.%s.values", name), "%s: quant_repack in place keeps every value (to_float)", name);
    int bad_ref = 0, bad_gemm = 0, bad_gemv8 = 0;
    float out[TOKENS * ROWS];
    qr->gemm(n, wr, rb, 4, ar, ab, TOKENS, out, ROWS);
    qr->gemm(n, wr + 4 * rb, rb, 4, ar, ab, TOKENS, out + 4, ROWS);
    qr->gemm(n, wr + 8 * rb, rb, 1, ar, ab, TOKENS, out + 8, ROWS);
    for (int t = 0; t < TOKENS; t++) {
        float g8[8];
        qr->gemv8(n, wr, rb, ar + t * ab, g8);
        for (int r = 0; r < ROWS; r++) {
            float expect = qf->vec_dot_ref(n, w + r * rb, a + t * ab);
            bad_ref += bits_of(qr->vec_dot_ref(n, wr + r * rb, ar + t * ab)) != bits_of(expect);
            bad_gemm += bits_of(out[t * ROWS + r]) != bits_of(expect);
            if (r < 8) bad_gemv8 += bits_of(g8[r]) != bits_of(expect);
        }
    }
    check(bad_ref == 0 && bad_gemm == 0 && bad_gemv8 == 0, check_id("kernels.%s.kernels", name),
          "%s n=%d: reference, gemm tiles and gemv8 equal %s's reference bit for bit (%d, %d, %d wrong)",
          name, n, qf->name, bad_ref, bad_gemm, bad_gemv8);
    free(w); free(wr); free(wref); free(a); free(ar); free(aref); free(x); free(f0); free(f1);
}

int main(void)
{
    test_table();
    test_f16();
    test_bf16();
    test_activation_sums();
    test_q8_quantize();
    test_repacked(WICK_TYPE_Q6_K, WICK_TYPE_Q6_K_R, quant_k_r_pos);
    test_repacked(WICK_TYPE_Q4_K, WICK_TYPE_Q4_K_R, quant_k_r32_pos);
    for (size_t k = 0; k < N_TYPES; k++) {
        const quant_type *t = quant_get(all_types[k]);
        if (t == NULL)
            continue;
        test_round_trip(t);
        test_dot(t, 0);
        test_dot(t, 1);
        test_gemm(t);
    }
    return check_summary();
}
