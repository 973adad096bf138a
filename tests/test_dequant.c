/* test_dequant.c — checks to_float of every quantized type against files that llama.cpp wrote:
 * each mini-<type>.gguf was quantized from mini-f32.gguf (and mini-qwen2-<type>.gguf from
 * mini-qwen2-f32.gguf), so every tensor dequantized must be close to the F32 original. A wrong
 * nibble order, bit position or scale lands at 100% relative RMS error or more. For a few rows
 * of each tensor it also checks the SIMD dot product against the scalar reference on these
 * llama.cpp-made blocks.
 *
 * Usage: test_dequant [directory]   (default ../shared/models/mini)
 * Every file named below must be there: a missing one fails (its "dequant.FILE.read" check).
 * Output and exit status: tests/check.h. */
#include "gguf.h"
#include "quant.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative RMS error bounds per tensor type, about 1.5x what these files measure (random
 * normal-like weights; see the numbers each run prints). */
static double error_bound(uint32_t type)
{
    switch (type) {
    case WICK_TYPE_F32: return 0;
    case WICK_TYPE_F16: return 0.001;
    case WICK_TYPE_BF16: return 0.005;
    case WICK_TYPE_Q8_0: return 0.01;
    case WICK_TYPE_Q6_K: return 0.03;
    case WICK_TYPE_Q5_0: case WICK_TYPE_Q5_1: case WICK_TYPE_Q5_K: return 0.06;
    case WICK_TYPE_Q4_0: case WICK_TYPE_Q4_1: case WICK_TYPE_Q4_K: case WICK_TYPE_IQ4_NL: return 0.12;
    case WICK_TYPE_Q3_K: return 0.22;
    case WICK_TYPE_Q2_K: return 0.40;
    default: return 0;
    }
}

typedef struct {
    uint8_t *buf;
    gguf_file g;
} model_file;

/* reads and opens dir/file: the checks dequant.FILE.read and dequant.FILE.gguf */
static int load(model_file *m, const char *dir, const char *file)
{
    errmsg err = {0};
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    m->buf = check_read(check_id("dequant.%s.read", file), path, &size);
    if (m->buf == NULL)
        return -1;
    if (!check(gguf_open(&m->g, m->buf, size, &err) == 0, check_id("dequant.%s.gguf", file), "%s: %s", path,
               err.text[0] ? err.text : "a GGUF file")) {
        free(m->buf);
        return -1;
    }
    return 0;
}

static void unload(model_file *m)
{
    gguf_close(&m->g);
    free(m->buf);
}

static uint64_t n_elements(const gguf_tensor *t)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->ne[d];
    return n;
}

/* simple deterministic activations */
static uint32_t rng = 12345;
static float rng_float(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

/* vec_dot (SIMD) against vec_dot_ref on the first rows of a llama.cpp-quantized tensor */
static void check_rows_dot(const char *file, const char *name, const quant_type *qt, const gguf_tensor *t)
{
    const quant_type *ta = quant_get(qt->vec_dot_type);
    int n = (int)t->ne[0], rows = t->ne[1] < 4 ? (int)t->ne[1] : 4;
    size_t row_bytes = quant_row_size(qt->type, n);
    float *x = malloc(sizeof(float) * (size_t)n), *wf = malloc(sizeof(float) * (size_t)n);
    void *a = malloc(quant_row_size(ta->type, n));
    for (int i = 0; i < n; i++)
        x[i] = rng_float();
    ta->from_float(x, a, n);
    ta->to_float(a, x, n);
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        const uint8_t *w = (const uint8_t *)t->data + (size_t)r * row_bytes;
        float simd = qt->vec_dot(n, w, a), ref = qt->vec_dot_ref(n, w, a);
        qt->to_float(w, wf, n);
        double mag = 0;
        for (int i = 0; i < n; i++)
            mag += fabs((double)wf[i] * x[i]);
        double err = fabs((double)simd - ref) / (mag > 0 ? mag : 1);
        if (err > worst)
            worst = err;
    }
    check(worst <= 1e-5, check_id("dequant.%s.%s.vec_dot", file, name), "%s %s (%s): vec_dot simd vs ref on %d rows, worst |diff|/sum|w*a| %.1e",
          file, name, qt->name, rows, worst);
    free(x);
    free(wf);
    free(a);
}

/* compares every tensor of `file` that the F32 file also has */
static void check_file(const char *dir, const char *file, const model_file *ref, const char **required)
{
    model_file m;
    if (load(&m, dir, file) != 0)
        return;
    for (const char **r = required; *r; r++) {
        const gguf_tensor *a = gguf_find_tensor(&m.g, *r), *b = gguf_find_tensor(&ref->g, *r);
        check(a != NULL && b != NULL, check_id("dequant.%s.has.%s", file, *r), "%s has %s (and so has the F32 file)", file, *r);
    }
    for (uint64_t k = 0; k < m.g.n_tensors; k++) {
        const gguf_tensor *t = &m.g.tensors[k];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 127 ? t->name.len : 127), t->name.ptr);
        const gguf_tensor *t32 = gguf_find_tensor(&ref->g, name);
        if (t32 == NULL || t32->type != WICK_TYPE_F32)
            continue;
        const quant_type *qt = quant_get(t->type);
        uint64_t n = n_elements(t);
        if (qt == NULL || n != n_elements(t32) || t->ne[0] != t32->ne[0]) {
            check(0, check_id("dequant.%s.%s.shape", file, name), "%s %s: type %u / shape differs from the F32 file", file, name, t->type);
            continue;
        }
        if (t->type == WICK_TYPE_F32)
            continue;   /* norms and the like stay F32: nothing to test */
        float *deq = malloc(sizeof(float) * n);
        const float *orig = t32->data;
        qt->to_float(t->data, deq, (int64_t)n);
        double err = 0, sum = 0;
        for (uint64_t i = 0; i < n; i++) {
            err += ((double)deq[i] - orig[i]) * ((double)deq[i] - orig[i]);
            sum += (double)orig[i] * orig[i];
        }
        double rel = sqrt(err / (sum > 0 ? sum : 1)), bound = error_bound(t->type);
        check(rel <= bound, check_id("dequant.%s.%s.to_float", file, name), "%s %-22s %-6s relative RMS error %.4f (bound %.4f)", file, name,
              qt->name, rel, bound);
        free(deq);
        check_rows_dot(file, name, qt, t);
    }
    unload(&m);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "../shared/models/mini";
    static const char *required[] = { "blk.0.ffn_up.weight", "blk.0.attn_q.weight", "token_embd.weight", NULL };
    static const char *llama_files[] = {
        "mini-f16.gguf", "mini-bf16.gguf", "mini-q8_0.gguf", "mini-q4_0.gguf", "mini-q4_1.gguf",
        "mini-q5_0.gguf", "mini-q5_1.gguf", "mini-iq4_nl.gguf", "mini-q2_k.gguf", "mini-q3_k_m.gguf",
        "mini-q4_k_s.gguf", "mini-q4_k_m.gguf", "mini-q5_k_m.gguf", "mini-q6_k.gguf", NULL,
    };
    static const char *qwen2_files[] = { "mini-qwen2-q8_0.gguf", "mini-qwen2-q4_k_m.gguf", NULL };
    static const struct { const char *ref; const char **files; } families[] = {
        { "mini-f32.gguf", llama_files }, { "mini-qwen2-f32.gguf", qwen2_files },
    };
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        model_file ref;
        if (load(&ref, dir, families[f].ref) != 0)
            continue;
        for (const char **file = families[f].files; *file; file++)
            check_file(dir, *file, &ref, required);
        unload(&ref);
    }
    return check_summary();
}
