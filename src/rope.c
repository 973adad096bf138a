/* rope.c — the rotary position embedding (RoPE): the cos/sin tables of a batch's positions and
 * the rotation of each head's first rope_dim dimensions by them; used by the forward pass (queries
 * and keys) and by the cache shift (cached keys moved to new positions). */
#include "context.h"
#include "rope.h"

#include <math.h>

#define YARN_PI 3.14159265358979323846f /* π as ggml's (float)M_PI */

/* the position (0 … 3: time, height, width, extra) M-RoPE pair i turns by */
static int mrope_pick(const model_config *mc, int i) {
    const int32_t *s = mc->rope_sections;
    int sector = i % (s[0] + s[1] + s[2] + s[3]);
    if (mc->mrope == MROPE_INTERLEAVED) { /* t, h, w in turn while each section lasts */
        if (sector % 3 == 1 && sector < 3 * s[1]) return 1;
        if (sector % 3 == 2 && sector < 3 * s[2]) return 2;
        if (sector % 3 == 0 && sector < 3 * s[0]) return 0;
        return 3;
    }
    return sector < s[0] ? 0 : sector < s[0] + s[1] ? 1 : sector < s[0] + s[1] + s[2] ? 2 : 3;
}

/* cos/sin of every rotated pair for n positions from pos0, rope base `base`: as llama.cpp's rope
 * forms them (ggml_rope_cache_init), θ_i = pos · base^(−2i/rope_dim) by repeated multiplication,
 * divided by the pair's frequency factor (Llama 3's rope_freqs, phi3's short or long set), times
 * the linear position scale `scale` (with YaRN, only partly: below); cos and sin are then
 * multiplied by mscale (phi3's attn_factor, YaRN's magnitude correction; 1 for a cache shift).
 * The sliding layers' tables take their own rope_dim, and no factors where those are the full
 * layers' alone (gemma4).
 * M-RoPE (mpos given: token t's four positions at mpos[4t …]): pair i turns by the position its
 * sector (i mod the sections' sum) picks, as ggml's ggml_mrope_cache_init picks it, each of the four
 * angles by its own repeated multiplication. */
void rope_tables(const struct wick_ctx *c, bool sliding, float base, float scale, float mscale, int pos0, int n,
                 const int32_t *mpos, float *cs, float *sn) {
    const model_config *mc = &c->model->config;
    int rope_dim = sliding ? mc->rope_dim_swa : mc->rope_dim, half = rope_dim / 2;
    const float *factors = sliding && mc->rope_freqs_full ? NULL : c->rope_factors;
    float theta_scale = powf(base, -2.0f / (float)rope_dim);
    /* YaRN (ggml's rope_yarn_corr_dims and rope_yarn_ramp): pair i keeps its unscaled angle below
     * the pair that turns beta_fast times over n_ctx_orig positions, takes the scaled one above the
     * pair that turns beta_slow times, and mixes the two linearly between */
    float ramp_lo = 0.0f, ramp_hi = 0.0f;
    if (mc->rope_yarn) {
#define YARN_CORR_DIM(beta) ((float)rope_dim * logf((float)mc->n_ctx_orig / ((beta) * 2.0f * YARN_PI)) / (2.0f * logf(base)))
        ramp_lo = fmaxf(0.0f, floorf(YARN_CORR_DIM(mc->yarn_beta_fast)));
        ramp_hi = fminf((float)(rope_dim - 1), ceilf(YARN_CORR_DIM(mc->yarn_beta_slow)));
#undef YARN_CORR_DIM
    }
    for (int t = 0; t < n; t++) {
        float thetas[4];
        for (int k = 0; k < 4; k++) thetas[k] = (float)(mpos ? mpos[4 * t + k] : pos0 + t);
        for (int i = 0; i < half; i++) {
            float theta = thetas[mpos ? mrope_pick(mc, i) : 0];
            float ff = factors ? factors[i] : 1.0f;
            float angle = scale * (theta / ff);
            if (mc->rope_yarn) {
                float y = ((float)i - ramp_lo) / fmaxf(0.001f, ramp_hi - ramp_lo);
                float mix = 1.0f - fminf(1.0f, fmaxf(0.0f, y));
                angle = angle * (1.0f - mix) + (theta / ff) * mix;
            }
            /* in double, rounded once: the float cosf/sinf of glibc and musl differ in the last bit */
            cs[t * half + i] = (float)cos((double)angle) * mscale;
            sn[t * half + i] = (float)sin((double)angle) * mscale;
            for (int k = 0; k < 4; k++) thetas[k] *= theta_scale;
        }
    }
}

/* Rotates the first rope_dim dimensions of each head of vec (n_heads heads) by the angles of cs/sn. */
void rope_apply(float *vec, int n_heads, const model_config *mc, const float *cs, const float *sn) {
    int half = mc->rope_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *v = vec + (size_t)h * mc->head_dim;
        for (int i = 0; i < half; i++) {
            int i0 = mc->rope_neox ? i : 2 * i, i1 = mc->rope_neox ? i + half : 2 * i + 1;
            float a = v[i0], b = v[i1];
            v[i0] = a * cs[i] - b * sn[i];
            v[i1] = a * sn[i] + b * cs[i];
        }
    }
}
