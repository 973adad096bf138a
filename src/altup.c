/* altup.c — Gemma 3n's steps around and beside the layer, as llama.cpp's graph forms them
 * (src/models/gemma3n.cpp: altup_predict, altup_correct, laurel, gaussian_topk and the steps before
 * the first layer and after the last). AltUp keeps n streams S_0 … S_{n−1} of the residual per
 * token; the layer computes on the active one (a) and the others follow it:
 *     before the first layer  S_0 = x0,  S_i = |x0| · û(altup_proj_i · x0)          (û: unit vector)
 *     router                  r(v) = tanh(router · (rmsnorm(v) ⊙ router_norm / dim))   [n]
 *     predict                 S_j += Σ_k A_jk · S_k,  A_jk = (predict_coef · r(S_a))[j·n + k]
 *     the layer runs on x = S_a, giving y;
 *     correct                 S_j += (1 + (correct_coef · r(y))_j) · (y − S_a)
 *                             S_1 … S_{n−1} += the per-layer embedding step of S_a ⊙ correct_scale (ple.c)
 *     after the last layer    x = (S_0 + Σ_i |S_a| · û(altup_unembd_i · S_i)) / n
 * Laurel, beside attention: from the normed input h, h + rmsnorm(R · (L · h)) ⊙ post_norm, averaged
 * with attention's output and residual (÷ √2). The sparse FFN gate (the first layers): values
 * below mean + k·std of the row (std over n − 1) are cut to 0, the rest lowered by that much.
 * Sums of squares run in double, as ggml's row sums do. */
#include "altup.h"
#include "elementwise.h"
#include "matmul.h"
#include "ple.h"

#include <math.h>
#include <string.h>

/* stream i's rows of the batch */
static float *stream(const struct wick_ctx *c, int i) { return c->alt + (size_t)i * (size_t)c->n_batch * (size_t)c->model->config.dim; }

/* |v| over n values (ggml: sqrt of the sum of squares) */
static float magnitude(const float *v, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)(v[i] * v[i]);
    return sqrtf((float)ss);
}

/* y ← y · |x| / |y| for each of n_tok rows (the projected streams keep the source's size) */
static void match_magnitude(float *y, const float *x, int n_tok, int dim) {
    for (int t = 0; t < n_tok; t++) {
        float *yt = y + (size_t)t * dim, target = magnitude(x + (size_t)t * dim, dim), now = magnitude(yt, dim);
        for (int i = 0; i < dim; i++) yt[i] = yt[i] * target / now;
    }
}

/* c->alt_coef's first n_tok × n values: the router's output for rows v (uses c->xb) */
static void router(struct wick_ctx *c, const layer_weights *w, const float *v, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim, n = mc->n_altup;
    for (int t = 0; t < n_tok; t++) {
        float *h = c->xb + (size_t)t * dim;
        rmsnorm(h, v + (size_t)t * dim, w->altup_router_norm, dim, mc->rms_eps);
        for (int i = 0; i < dim; i++) h[i] *= 1.0f / (float)dim;
    }
    act_rows in;
    act_init(&in, c, c->xb, n_tok, dim);
    matmul(c, &w->altup_router, &in, c->alt_coef, n, NULL);
    for (int i = 0; i < n_tok * n; i++) c->alt_coef[i] = tanh_exp(c->alt_coef[i]);
}

/* the coefficients of matrix m (predict or correct, `rows` per token) from the router's output */
static float *coefficients(struct wick_ctx *c, const weight *m, int n_tok) {
    float *out = c->alt_coef + (size_t)c->n_batch * (size_t)c->model->config.n_altup;
    act_rows in;
    act_init(&in, c, c->alt_coef, n_tok, c->model->config.n_altup);
    matmul(c, m, &in, out, (int)m->rows, NULL);
    return out;
}

void altup_init(struct wick_ctx *c, int n_tok) {
    const struct wick_model *m = c->model;
    int dim = m->config.dim;
    act_rows in;
    act_init(&in, c, c->x, n_tok, dim);
    memcpy(stream(c, 0), c->x, (size_t)n_tok * dim * sizeof(float));
    for (int i = 1; i < m->config.n_altup; i++) {
        matmul(c, &m->altup_proj[i - 1], &in, stream(c, i), dim, NULL);
        match_magnitude(stream(c, i), c->x, n_tok, dim);
    }
}

void altup_predict(struct wick_ctx *c, const layer_weights *w, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim, n = mc->n_altup;
    router(c, w, stream(c, mc->altup_active), n_tok);
    const float *a = coefficients(c, &w->altup_predict, n_tok);
    float s[ALTUP_MAX];
    for (int t = 0; t < n_tok; t++)
        for (int e = 0; e < dim; e++) {
            size_t at = (size_t)t * dim + (size_t)e;
            for (int k = 0; k < n; k++) s[k] = stream(c, k)[at];
            for (int j = 0; j < n; j++) {
                const float *aj = a + ((size_t)t * n + (size_t)j) * n;
                float sum = 0;
                for (int k = 0; k < n; k++) sum += aj[k] * s[k];
                stream(c, j)[at] = sum + s[j];
            }
        }
    memcpy(c->x, stream(c, mc->altup_active), (size_t)n_tok * dim * sizeof(float));
}

void altup_correct(struct wick_ctx *c, const layer_weights *w, int l, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim, n = mc->n_altup;
    router(c, w, c->x, n_tok);
    const float *b = coefficients(c, &w->altup_correct, n_tok);
    float *active = stream(c, mc->altup_active);
    for (int t = 0; t < n_tok; t++)
        for (int e = 0; e < dim; e++) {
            size_t at = (size_t)t * dim + (size_t)e;
            float innovation = c->x[at] - active[at];
            for (int j = 0; j < n; j++) stream(c, j)[at] += innovation * (b[(size_t)t * n + (size_t)j] + 1.0f);
        }
    for (size_t i = 0; i < (size_t)n_tok * dim; i++) c->xb[i] = active[i] * w->altup_correct_scale[i % (size_t)dim];
    ple_block(c, w, l, n_tok, c->xb);
    for (int j = 1; j < n; j++)
        for (size_t i = 0; i < (size_t)n_tok * dim; i++) stream(c, j)[i] += c->xb[i];
}

void altup_merge(struct wick_ctx *c, int n_tok) {
    const struct wick_model *m = c->model;
    int dim = m->config.dim, n = m->config.n_altup;
    size_t len = (size_t)n_tok * dim;
    memcpy(c->x, stream(c, 0), len * sizeof(float));
    for (int i = 1; i < n; i++) {
        act_rows in;
        act_init(&in, c, stream(c, i), n_tok, dim);
        matmul(c, &m->altup_unembd[i - 1], &in, c->xb, dim, NULL);
        match_magnitude(c->xb, stream(c, m->config.altup_active), n_tok, dim);
        for (size_t k = 0; k < len; k++) c->x[k] += c->xb[k];
    }
    for (size_t k = 0; k < len; k++) c->x[k] *= 1.0f / (float)n;
}

void laurel_block(struct wick_ctx *c, const layer_weights *w, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim, rank = mc->laurel_rank;
    float *mid = c->laurel + (size_t)c->n_batch * dim;
    act_rows in;
    act_init(&in, c, c->xb, n_tok, dim);
    matmul(c, &w->laurel_l, &in, mid, rank, NULL);
    act_init(&in, c, mid, n_tok, rank);
    matmul(c, &w->laurel_r, &in, c->laurel, dim, NULL);
    for (int t = 0; t < n_tok; t++) {
        float *y = c->laurel + (size_t)t * dim;
        const float *h = c->xb + (size_t)t * dim;
        rmsnorm(y, y, w->laurel_post_norm, dim, mc->rms_eps);
        for (int i = 0; i < dim; i++) y[i] += h[i];
    }
}

void laurel_join(struct wick_ctx *c, int n_tok) {
    for (size_t i = 0; i < (size_t)n_tok * (size_t)c->model->config.dim; i++) c->x[i] = (c->x[i] + c->laurel[i]) * (1.0f / sqrtf(2.0f));
}

void sparse_gate(struct wick_ctx *c, float k, int n_tok, int hid) {
    for (int t = 0; t < n_tok; t++) {
        float *g = c->hb + (size_t)t * hid;
        const float *up = c->hb2 + (size_t)t * hid;
        double sum = 0, ss = 0;
        for (int i = 0; i < hid; i++) sum += g[i];
        float mean = (float)sum / (float)hid;
        for (int i = 0; i < hid; i++) ss += (double)((g[i] - mean) * (g[i] - mean));
        float cutoff = mean + sqrtf((float)ss * (1.0f / (float)(hid - 1))) * k;
        for (int i = 0; i < hid; i++) g[i] = gelu_f16(g[i] > cutoff ? g[i] - cutoff : 0.0f) * up[i];
    }
}
