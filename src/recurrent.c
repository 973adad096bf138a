/* recurrent.c — the recurrent blocks that take attention's place in a hybrid model's layer:
 * lfm2's short convolution and qwen35's gated DeltaNet, each with its state in the context
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
    int channels, n_tok;
    bool shortconv;    /* lfm2: input B ⊙ x, output C ⊙ conv; else (DeltaNet) input qkv, output silu(conv) */
} conv_args;

/* The causal depthwise convolution, channel by channel over the batch's tokens:
 * out_t = Σ_k conv_w[k] · in_(t − (K−1) + k), the state supplying the inputs before the batch. */
static void conv_task(void *arg, int ith, int nth) {
    conv_args *a = arg;
    const struct wick_ctx *c = a->c;
    const model_config *mc = &c->model->config;
    int K = mc->conv_kernel, n = a->channels, dim = mc->dim;
    size_t in_stride = a->shortconv ? (size_t)3 * dim : (size_t)n + (size_t)mc->ssm_v_heads * (mc->ssm_state + 2);
    long c0, c1;
    pool_split(n, ith, nth, &c0, &c1);
    for (long ch = c0; ch < c1; ch++) {
        const float *wk = a->w->conv_w + (size_t)ch * K;
        float *st = a->state + ch; /* st[k * n]: tap k's input */
        for (int t = 0; t < a->n_tok; t++) {
            const float *in = c->proj + (size_t)t * in_stride;
            /* lfm2's in_proj rows are B | C | x */
            float x = a->shortconv ? in[ch] * in[2 * dim + ch] : in[ch];
            float sum = 0;
            for (int k = 0; k < K - 1; k++) sum += wk[k] * st[(size_t)k * n];
            sum += wk[K - 1] * x;
            for (int k = 0; k < K - 2; k++) st[(size_t)k * n] = st[(size_t)(k + 1) * n];
            st[(size_t)(K - 2) * n] = x;
            c->mix[(size_t)t * n + ch] = a->shortconv ? in[dim + ch] * sum : silu(sum);
        }
    }
}

/* lfm2: y = C ⊙ conv(B ⊙ x) with B, C, x = in_proj(xb), then out_proj; into c->xb */
void shortconv_block(struct wick_ctx *c, const layer_weights *w, int l, act_rows *in, int n_tok) {
    const model_config *mc = &c->model->config;
    int dim = mc->dim;
    matmul(c, &w->sc_in, in, c->proj, 3 * dim, NULL);
    conv_args ca = {c, w, c->rstate + c->rs_off[l], dim, n_tok, true};
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
    conv_args ca = {c, w, state, ch, n_tok, false};
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
