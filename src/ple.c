/* ple.c — per-layer embeddings (gemma4, gemma3n), as llama.cpp's graph forms them (src/models/gemma4.cpp:
 * build_inp_per_layer, project_per_layer_inputs and the step at the end of each layer). Before the
 * first layer, from the scaled token embedding x0 and the token's row E of per_layer_token_embd
 * (n_layers slices of n_ple values), layer l's input
 *     in_l = (rmsnorm(P_l · x0 / √dim) ⊙ per_layer_proj_norm + E_l · √n_ple) / √2
 * where P_l is layer l's slice of the rows of per_layer_model_proj; after each layer's FFN
 *     x += rmsnorm(proj · (gelu(inp_gate · v) ⊙ in_l)) ⊙ post_norm
 * with v = x (gemma4), or for gemma3n v the active AltUp stream and the sum added to the others
 * (altup.c). The table is most of an E2B/E4B file: it may be left outside wasm memory, its rows of
 * each batch read in (model_read_rows), converted as the rows in the buffer are. An image position's
 * x0 is its row unscaled and its E the padding token's (id 0; gemma4.cpp's build_inp_per_layer). */
#include "elementwise.h"
#include "matmul.h"
#include "ple.h"
#include "quant.h"

#include <math.h>
#include <stdlib.h>

int ple_inputs(struct wick_ctx *c, const int32_t *tokens, int n_tok, errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    int n = mc->n_ple, width = mc->n_layers * n;
    /* the table's rows of the batch: in the file buffer, or read in from outside it (model_read_rows);
     * an image position takes the padding token's (id 0), as llama.cpp's multimodal path does */
    int32_t *ids = malloc((size_t)(n_tok > 0 ? n_tok : 1) * sizeof *ids); /* (a batch's worth: not on wasm's 1 MB stack) */
    if (!ids) return errorf(err, WICK_ERR_NOMEM, "out of memory for a batch of %d per-layer inputs", n_tok);
    for (int t = 0; t < n_tok; t++) ids[t] = tokens[t] < 0 ? 0 : tokens[t];
    const row_place *outside = m->ple_place.outside ? &m->ple_place : NULL;
    if (outside && model_read_rows(m, &m->ple_embd, outside, ids, n_tok, c->ple_raw, err)) {
        free(ids);
        return -1;
    }
    act_rows in;
    act_init(&in, c, c->x, n_tok, mc->dim);
    matmul(c, &m->ple_model_proj, &in, c->ple, width, NULL);
    const float proj_scale = 1.0f / sqrtf((float)mc->dim), embd_scale = sqrtf((float)n), input_scale = 1.0f / sqrtf(2.0f);
    const quant_type *et = quant_get(m->ple_embd.type);
    for (int t = 0; t < n_tok; t++) {
        float *p = c->ple + (size_t)t * width;
        const uint8_t *row = outside ? c->ple_raw + (size_t)t * m->ple_embd.row_bytes
                                     : (const uint8_t *)m->ple_embd.data + (size_t)ids[t] * m->ple_embd.row_bytes;
        et->to_float(row, c->ple_row, width);
        for (int l = 0; l < mc->n_layers; l++) {
            float *pl = p + (size_t)l * n;
            for (int i = 0; i < n; i++) pl[i] *= proj_scale;
            rmsnorm(pl, pl, m->ple_proj_norm, n, mc->rms_eps);
        }
        for (int i = 0; i < width; i++) p[i] = (p[i] + c->ple_row[i] * embd_scale) * input_scale;
    }
    free(ids);
    return 0;
}

void ple_block(struct wick_ctx *c, const layer_weights *w, int l, int n_tok, const float *in) {
    const model_config *mc = &c->model->config;
    int n = mc->n_ple, dim = mc->dim;
    act_rows rows;
    act_init(&rows, c, in, n_tok, dim);
    matmul(c, &w->ple_gate, &rows, c->ple_gate, n, NULL);
    for (int t = 0; t < n_tok; t++) {
        float *g = c->ple_gate + (size_t)t * n;
        const float *inp = c->ple + ((size_t)t * mc->n_layers + (size_t)l) * n;
        for (int i = 0; i < n; i++) g[i] = gelu_f16(g[i]) * inp[i];
    }
    act_init(&rows, c, c->ple_gate, n_tok, n);
    matmul(c, &w->ple_proj, &rows, c->xb, dim, NULL);
    for (int t = 0; t < n_tok; t++) rmsnorm(c->xb + (size_t)t * dim, c->xb + (size_t)t * dim, w->ple_post_norm, dim, mc->rms_eps);
}
