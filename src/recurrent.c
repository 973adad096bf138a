/* recurrent.c — the recurrent blocks that take attention's place in a hybrid model's layer:
 * lfm2's short convolution, qwen35's gated DeltaNet and granitehybrid's Mamba-2, each with its state in the context
 * (rstate, from rs_off[l]). Their matrix products run batched like attention's; the recurrence
 * itself runs token by token inside the block (as llama.cpp's CPU path does), each channel or
 * head by one thread in a fixed order, so a batch gives the numbers of the same tokens fed one
 * at a time. */
#include "context.h"
#include "elementwise.h"
#include "matmul.h"
#include "recurrent.h"

#include <math.h>

/* log(1 + e^x), as ggml's softplus (x itself above 20); the logarithm in double, rounded once,
 * so that the C libraries of the two builds agree */
static float softplus(float x) { return x > 20.0f ? x : (float)log(1.0 + (double)expf(x)); }

typedef struct {
    struct wick_ctx *c;
    const layer_weights *w;
    float *state;      /* [conv_kernel − 1][channels]: the previous inputs, oldest first */
    const float *in;   /* token t's inputs at in + t · in_stride (lfm2: its in_proj rows B | C | x) */
    size_t in_stride;
    int channels, n_tok;
    bool shortconv;    /* lfm2: input B ⊙ x, output C ⊙ conv; else (DeltaNet, Mamba-2) silu(conv + bias) */
} conv_args;

/* The causal depthwise convolution, channel by channel over the batch's tokens:
 * out_t = Σ_k conv_w[k] · in_(t − (K−1) + k) (+ conv_b), the state supplying the inputs before the batch. */
static void conv_task(void *arg, int ith, int nth) {
    conv_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->model->config;
    int K = mc->conv_kernel, n = a->channels, dim = mc->dim;
    long c0, c1;
    pool_split(n, ith, nth, &c0, &c1);
    for (long ch = c0; ch < c1; ch++) {
        const float *wk = a->w->conv_w + (size_t)ch * K;
        float *st = a->state + ch; /* st[k * n]: tap k's input */
        for (int t = 0; t < a->n_tok; t++) {
            const float *in = a->in + (size_t)t * a->in_stride;
            float x = a->shortconv ? in[ch] * in[2 * dim + ch] : in[ch];
            float sum = 0;
            for (int k = 0; k < K - 1; k++) sum += wk[k] * st[(size_t)k * n];
            sum += wk[K - 1] * x;
            for (int k = 0; k < K - 2; k++) st[(size_t)k * n] = st[(size_t)(k + 1) * n];
            st[(size_t)(K - 2) * n] = x;
            if (a->w->conv_b) sum += a->w->conv_b[ch];
            c->mix[(size_t)t * n + ch] = a->shortconv ? in[dim + ch] * sum : silu(sum);
        }
    }
}

/* lfm2: y = C ⊙ conv(B ⊙ x) with B, C, x = in_proj(xb), then out_proj; into c->xb */
void shortconv_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim;
    matmul(c, &w->sc_in, in, c->proj, 3 * dim, NULL);
    conv_args ca = {c, w, c->rstate + c->rs_off[l], c->proj, (size_t)3 * dim, dim, n_tok, true};
    pool_run(c->pool, conv_task, &ca);
    act_rows y;
    act_init(&y, c, c->mix, n_tok, dim);
    matmul(c, &w->sc_out, &y, c->xb, dim, NULL);
}

typedef struct {
    struct wick_ctx *c;
    float *S;          /* [v_heads][S][S]: head h's state, row j = column j of the delta rule's S */
    int n_tok;
} deltanet_args;

/* The delta rule, one value head at a time over the batch's tokens (head h reads key head
 * h mod k_heads). With the state as rows j (the value dimension) of S entries:
 *     S ← e^g · S;  δ_j = β (v_j − Σ_i S_ji k_i);  S_ji += δ_j k_i;  o_j = Σ_i S_ji q_i / √S */
static void deltanet_task(void *arg, int ith, int nth) {
    deltanet_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->model->config;
    int Sd = mc->ssm_state, nk = mc->ssm_k_heads, nv = mc->ssm_v_heads;
    int ch = model_conv_channels(mc, LAYER_DELTANET), vd = nv * Sd;
    size_t P = (size_t)ch + (size_t)vd + 2 * (size_t)nv;
    float scale = 1.0f / sqrtf((float)Sd);
    long h0, h1;
    pool_split(nv, ith, nth, &h0, &h1);
    for (long h = h0; h < h1; h++) {
        float *Sh = a->S + (size_t)h * Sd * Sd;
        int kh = (int)(h % nk);
        for (int t = 0; t < a->n_tok; t++) {
            const float *mixed = c->mix + (size_t)t * ch;
            const float *q = mixed + (size_t)kh * Sd, *k = mixed + (size_t)(nk + kh) * Sd, *v = mixed + (size_t)(2 * nk) * Sd + (size_t)h * Sd;
            const float *gates = c->proj + (size_t)t * P + ch + vd;
            float decay = gates[h], beta = gates[nv + h];
            float *o = c->mix2 + (size_t)t * vd + (size_t)h * Sd;
            for (int j = 0; j < Sd; j++) {
                float *row = Sh + (size_t)j * Sd, kv = 0;
                for (int i = 0; i < Sd; i++) {
                    row[i] *= decay;
                    kv += row[i] * k[i];
                }
                float d = beta * (v[j] - kv), oj = 0;
                for (int i = 0; i < Sd; i++) {
                    row[i] += d * k[i];
                    oj += row[i] * q[i];
                }
                o[j] = oj * scale;
            }
        }
    }
}

/* x / max(‖x‖, eps) over n values, in place */
static void l2norm(float *x, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float norm = (float)sqrt(ss), inv = 1.0f / (norm > eps ? norm : eps);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* qwen35's gated DeltaNet: q | k | v = attn_qkv(xb) through the causal convolution and SiLU,
 * q and k L2-normed per head, the delta rule with decay e^g, g = softplus(α + dt)·a, and
 * β = sigmoid(beta(xb)); each head's output RMS-normed (ssm_norm) times silu(z), z = attn_gate(xb);
 * then ssm_out. Into c->xb. */
void deltanet_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->model->config;
    int Sd = mc->ssm_state, nk = mc->ssm_k_heads, nv = mc->ssm_v_heads, vd = nv * Sd;
    int ch = model_conv_channels(mc, LAYER_DELTANET), P = ch + vd + 2 * nv;
    {
        const weight *ws[] = {&w->dn_qkv, &w->dn_gate, &w->dn_alpha, &w->dn_beta};
        float *outs[] = {c->proj, c->proj + ch, c->proj + ch + vd, c->proj + ch + vd + nv};
        const int strides[] = {P, P, P, P};
        matmul_group(c, in, 4, ws, outs, strides, NULL, false, ACT_SILU);
    }
    float *state = c->rstate + c->rs_off[l];
    conv_args ca = {c, w, state, c->proj, (size_t)P, ch, n_tok, false};
    pool_run(c->pool, conv_task, &ca);
    for (int t = 0; t < n_tok; t++) {
        float *mixed = c->mix + (size_t)t * ch, *gates = c->proj + (size_t)t * P + ch + vd;
        for (int h = 0; h < 2 * nk; h++) l2norm(mixed + (size_t)h * Sd, Sd, mc->rms_eps); /* q heads, then k heads */
        for (int h = 0; h < nv; h++) {
            gates[h] = expf(softplus(gates[h] + w->dn_dt[h]) * w->dn_a[h]); /* the decay e^g */
            gates[nv + h] = sigmoid(gates[nv + h]);                         /* β */
        }
    }
    deltanet_args da = {c, state + (size_t)(mc->conv_kernel - 1) * ch, n_tok};
    pool_run(c->pool, deltanet_task, &da);
    for (int t = 0; t < n_tok; t++) {
        const float *z = c->proj + (size_t)t * P + ch;
        float *o = c->mix2 + (size_t)t * vd;
        for (int h = 0; h < nv; h++) rmsnorm(o + (size_t)h * Sd, o + (size_t)h * Sd, w->dn_norm, Sd, mc->rms_eps);
        for (int i = 0; i < vd; i++) o[i] *= silu(z[i]);
    }
    act_rows y;
    act_init(&y, c, c->mix2, n_tok, vd);
    matmul(c, &w->dn_out, &y, c->xb, mc->dim, NULL);
}

typedef struct {
    struct wick_ctx *c;
    const layer_weights *w;
    float *S;          /* [inner][ssm_state]: channel i's state (channel i = h · head size + j) */
    int n_tok;
} mamba2_args;

/* The selective scan of Mamba-2, one head at a time over the batch's tokens (head h reads the B
 * and C of group h / (heads / groups)), as ggml's ssm_scan with a scalar A per head:
 *     Δ = softplus(dt + dt_bias);  h_i ← h_i · e^(Δ·A) + Δ · x_i · B;  y_i = C · h_i
 * then the skip, y_i += D · x_i. Inputs in c->proj (dt) and c->mix (x | B | C), y into c->mix2. */
static void mamba2_task(void *arg, int ith, int nth) {
    mamba2_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->model->config;
    const layer_weights *w = a->w;
    int N = mc->ssm_state, heads = mc->ssm_v_heads, groups = mc->ssm_k_heads, inner = mc->ssm_inner;
    int hd = inner / heads, ch = model_conv_channels(mc, LAYER_MAMBA2);
    size_t P = (size_t)inner + (size_t)ch + (size_t)heads;
    long h0, h1;
    pool_split(heads, ith, nth, &h0, &h1);
    for (long h = h0; h < h1; h++) {
        long g = h / (heads / groups);
        for (int t = 0; t < a->n_tok; t++) {
            const float *x = c->mix + (size_t)t * ch, *B = x + inner + (size_t)g * N, *C = x + inner + (size_t)(groups + g) * N;
            float dt = softplus(c->proj[(size_t)t * P + inner + ch + h] + w->m2_dt[h]), dA = expf(dt * w->m2_a[h]);
            float *y = c->mix2 + (size_t)t * inner;
            for (long i = h * hd; i < (h + 1) * hd; i++) {
                float *s = a->S + (size_t)i * N, x_dt = x[i] * dt, sum = 0;
                for (int j = 0; j < N; j++) {
                    s[j] = s[j] * dA + B[j] * x_dt;
                    sum += s[j] * C[j];
                }
                y[i] = sum + x[i] * w->m2_d[h];
            }
        }
    }
}

/* granitehybrid's Mamba-2: z | xBC | dt = ssm_in(xb); xBC through the causal convolution (+ bias)
 * and SiLU into x | B | C; the selective scan; y ⊙ silu(z) RMS-normed per group (ssm_norm, each
 * group its own weights); then ssm_out. Into c->xb. */
void mamba2_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->model->config;
    int inner = mc->ssm_inner, ch = model_conv_channels(mc, LAYER_MAMBA2), groups = mc->ssm_k_heads;
    int P = inner + ch + mc->ssm_v_heads, gw = inner / groups;
    matmul(c, &w->m2_in, in, c->proj, P, NULL);
    float *state = c->rstate + c->rs_off[l];
    conv_args ca = {c, w, state, c->proj + inner, (size_t)P, ch, n_tok, false};
    pool_run(c->pool, conv_task, &ca);
    mamba2_args ma = {c, w, state + (size_t)(mc->conv_kernel - 1) * ch, n_tok};
    pool_run(c->pool, mamba2_task, &ma);
    for (int t = 0; t < n_tok; t++) {
        const float *z = c->proj + (size_t)t * P;
        float *y = c->mix2 + (size_t)t * inner;
        for (int i = 0; i < inner; i++) y[i] *= silu(z[i]);
        for (int g = 0; g < groups; g++) rmsnorm(y + (size_t)g * gw, y + (size_t)g * gw, w->m2_norm + (size_t)g * gw, gw, mc->rms_eps);
    }
    act_rows y;
    act_init(&y, c, c->mix2, n_tok, inner);
    matmul(c, &w->m2_out, &y, c->xb, mc->dim, NULL);
}
