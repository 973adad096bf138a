/* vision.c — an image encoder from an mmproj GGUF file, as llama.cpp's tools/mtmd computes it:
 * the file read and checked as clip.cpp's clip_model_loader reads it (keys clip.* and
 * clip.vision.*, tensors v.* and mm.*: clip-impl.h's KEY_ and TN_ names), the SigLIP vision
 * transformer of clip_graph::build_vit, and the projectors of models/siglip.cpp: idefics3 (SmolVLM)
 * and gemma3 (Gemma 3). With x the image's patches (P × P pixels of 3 channels, flattened per patch):
 *     x = x·W_patchᵀ + b_patch + pos_embd[p]             (the patch convolution as a matrix product)
 *     x = LayerNorm(x) (pre_ln, where the file has one)
 *     for each layer:
 *         h = LayerNorm(x) (ln1, with bias)
 *         q, k, v = h·Wqᵀ + bq, h·Wkᵀ + bk, h·Wvᵀ + bv
 *         x = x + softmax(q·Kᵀ / √head_dim)·V ·Woᵀ + bo      every patch sees every patch
 *         h = LayerNorm(x) (ln2, with bias)
 *         x = x + GELU(h·W_upᵀ + b_up)·W_downᵀ + b_down      GELU: ggml_gelu, the tanh form (clip.use_gelu)
 *     x = LayerNorm(x) (post_ln)
 *     idefics3: y = pixel_shuffle(x, s)·W_fcᵀ  (s = clip.vision.projector.scale_factor)
 *     gemma3:   y = RMSNorm(avg_pool(x, k)) ⊙ w_soft_emb · W_in   (k = the scale factor, 4 where the
 *               file has none; W_in = mm.input_projection, stored [dim][n_embd_text]: used transposed)
 * The pixel shuffle is clip_graph::build_patch_merge_permute: output position (Y, X) of the
 * (n/s)² grid gathers the s × s block of patches (Y·s + dy, X·s + dx) into one row of dim·s², the
 * patch at (dy, dx) at columns (dy·s + dx)·dim … — dy outer, dx inner, each patch's dim values in order.
 * gemma3's pooling is ggml_pool_2d (GGML_OP_POOL_AVG, window and stride k, no padding) over the patch
 * grid: output position (Y, X) of the (n/k)² grid is the mean of the k × k block of patches
 * (Y·k + dy, X·k + dx), summed in float with dy outer and dx inner, then divided by k² (as
 * ggml-cpu's ops.cpp sums it); the RMS norm's eps is the tower's layer_norm_epsilon.
 *
 * The matrix products are the engine's (matmul.c: every weight type of the quant table, its SIMD
 * kernels and threads), on a context (context.c) made for the tower as for an encoder: a window
 * and a batch of all the patches, keys and values in F32. Attention is the decoders' (attention.c)
 * with causal = false over that one sequence. llama.cpp's reference here is its attention without
 * flash attention (tests/mtmd_ref.cpp asks for that): scores and softmax in F32, as attention.c's
 * F32 cache gives them.
 *
 * Preprocessing (vision_prepare) makes every image llama.cpp's preprocessor for the projector makes
 * of a picture (tools/mtmd/mtmd-image.cpp), in the order mtmd.cpp's add_media puts them in the
 * prompt. idefics3 (mtmd_image_preprocessor_idefics3): where the file has
 * clip.vision.preproc_image_size L (its converter writes the processor's longest_edge), the picture
 * is resized so that its longer side is L (the shorter one rounded down, then up to even), then to
 * whole tiles of image_size (the refined picture), which is cut into tiles row by row, and resized
 * once more to image_size² for the overview, each resize Lanczos; without it, the refined picture
 * is the original resized to the nearest whole tiles (bicubic, letterboxed on black) and the
 * overview the original resized to image_size² (bicubic). The tiles come first, the overview last.
 * gemma3 (mtmd_image_preprocessor_fixed_size): one image, the picture resized bilinearly into
 * image_size² with its aspect kept, letterboxed on black (img_tool::resize's PAD_CEIL).
 * Each resize is Pillow's separable resampling (libImaging/Resample.c, as img_tool::resize_pillow
 * follows it). */
#include "vision.h"

#include "attention.h"
#include "context.h"
#include "elementwise.h"
#include "encoder.h"
#include "matmul.h"
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ---------------------------------------------------------------------------------- */

/* An unsigned key in lo … hi; optional: absent leaves *out as it is */
static int key_int(const gguf_file *g, const char *key, int64_t lo, int64_t hi, bool optional, int32_t *out, errmsg *err) {
    uint64_t v;
    if (!gguf_find(g, key)) return optional ? 0 : errorf(err, WICK_ERR_FORMAT, "mmproj: key %s is missing", key);
    if (!gguf_get_u64(g, key, &v)) return errorf(err, WICK_ERR_FORMAT, "mmproj: key %s is not an unsigned integer", key);
    if ((int64_t)v < lo || v > (uint64_t)hi)
        return errorf(err, WICK_ERR_FORMAT, "mmproj: %s = %llu is out of range (%lld to %lld)", key, (unsigned long long)v,
                      (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return 0;
}

/* clip.vision.image_mean / image_std: arrays of at least 3 F32 (llama.cpp's get_arr_f32) */
static int key_triple(const gguf_file *g, const char *key, bool nonzero, float out[3], errmsg *err) {
    const gguf_kv *kv = gguf_get_arr(g, key, GGUF_F32);
    if (!kv) return errorf(err, WICK_ERR_FORMAT, "mmproj: key %s is missing or not an array of f32", key);
    if (kv->arr_len < 3) return errorf(err, WICK_ERR_FORMAT, "mmproj: %s has %llu values, 3 are needed", key, (unsigned long long)kv->arr_len);
    for (int i = 0; i < 3; i++) {
        out[i] = (float)gguf_arr_f64(kv, (uint64_t)i);
        if (!isfinite(out[i]) || (nonzero && out[i] == 0.0f))
            return errorf(err, WICK_ERR_FORMAT, "mmproj: %s[%d] = %g is not usable", key, i, (double)out[i]);
    }
    return 0;
}

/* The keys: the projector first (an unknown one is refused by name), then the tower's shape. */
static int read_config(vision_model *v, errmsg *err) {
    const gguf_file *g = &v->tower.gguf;
    gguf_str s;
    if (!gguf_get_str(g, "general.architecture", &s) || !gguf_str_eq(s, "clip"))
        return errorf(err, WICK_ERR_FORMAT, "mmproj: general.architecture is not 'clip' (not an mmproj file)");
    bool has_vision = false;
    gguf_get_bool(g, "clip.has_vision_encoder", &has_vision);
    if (!has_vision) return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: the file has no vision encoder (clip.has_vision_encoder)");
    /* clip.projector_type, or clip.vision.projector_type in a file of several modalities */
    if (!gguf_get_str(g, "clip.projector_type", &s) && !gguf_get_str(g, "clip.vision.projector_type", &s))
        return errorf(err, WICK_ERR_FORMAT, "mmproj: key clip.projector_type is missing");
    if (gguf_str_eq(s, "idefics3")) v->projector = PROJECTOR_IDEFICS3;
    else if (gguf_str_eq(s, "gemma3")) v->projector = PROJECTOR_GEMMA3;
    else
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: projector '%.*s' is not supported (supported: idefics3, gemma3)",
                      (int)(s.len < 64 ? s.len : 64), s.ptr);
    const bool idefics3 = v->projector == PROJECTOR_IDEFICS3;
    /* gemma3: clip.cpp's default pooling window of 4 (every Gemma 3 size), the key only in test models */
    v->n_merge = idefics3 ? 0 : 4;
    bool gelu = false, silu = false;
    gguf_get_bool(g, "clip.use_gelu", &gelu);
    gguf_get_bool(g, "clip.use_silu", &silu);
    if (!gelu || silu)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: the tower's MLP must use GELU (clip.use_gelu); GELU-quick and SiLU are not supported");

    int32_t dim = 0, n_heads = 0, n_layers = 0, proj_dim = 0, kv_heads = -1, head_dim = -1;
    if (key_int(g, "clip.vision.embedding_length", 8, 1 << 16, false, &dim, err) ||
        key_int(g, "clip.vision.feed_forward_length", 1, 1 << 18, false, &v->n_ff, err) ||
        key_int(g, "clip.vision.block_count", 1, 1024, false, &n_layers, err) ||
        key_int(g, "clip.vision.attention.head_count", 1, 1024, false, &n_heads, err) ||
        key_int(g, "clip.vision.attention.head_count_kv", 1, 1024, true, &kv_heads, err) ||
        key_int(g, "clip.vision.attention.head_dim", 1, 1 << 16, true, &head_dim, err) ||
        key_int(g, "clip.vision.projection_dim", 1, 1 << 20, false, &proj_dim, err) ||
        key_int(g, "clip.vision.image_size", 1, 8192, false, &v->image_size, err) ||
        key_int(g, "clip.vision.patch_size", 1, 1024, false, &v->patch_size, err) ||
        key_int(g, "clip.vision.projector.scale_factor", idefics3 ? 2 : 1, 64, !idefics3, &v->n_merge, err) ||
        (idefics3 && key_int(g, "clip.vision.preproc_image_size", 1, 8192, true, &v->longest_edge, err)))
        return -1;
    double eps;
    if (!gguf_get_f64(g, "clip.vision.attention.layer_norm_epsilon", &eps))
        return errorf(err, WICK_ERR_FORMAT, "mmproj: key clip.vision.attention.layer_norm_epsilon is missing");
    if (!(eps >= 0 && eps < 1)) return errorf(err, WICK_ERR_FORMAT, "mmproj: layer_norm_epsilon %g is out of range", eps);
    if (key_triple(g, "clip.vision.image_mean", false, v->mean, err) || key_triple(g, "clip.vision.image_std", true, v->std, err))
        return -1;
    if (kv_heads != -1 && kv_heads != n_heads)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d key/value heads for %d query heads: grouped-query towers are not supported", kv_heads, n_heads);
    if (dim % n_heads) return errorf(err, WICK_ERR_FORMAT, "mmproj: embedding length %d is not a multiple of the %d heads", dim, n_heads);
    if (head_dim != -1 && head_dim != dim / n_heads)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: head size %d is not embedding length / heads (%d)", head_dim, dim / n_heads);
    if ((dim / n_heads) % 8 || dim / n_heads > MAX_HEAD_DIM)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: head size %d is not supported (multiples of 8 up to %d are)", dim / n_heads, MAX_HEAD_DIM);
    if (v->image_size % v->patch_size)
        return errorf(err, WICK_ERR_FORMAT, "mmproj: image size %d is not a multiple of the patch size %d", v->image_size, v->patch_size);
    v->n_side = v->image_size / v->patch_size;
    v->n_patches = v->n_side * v->n_side;
    if (v->n_side % v->n_merge)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches per side do not divide by the %s %d", v->n_side,
                      idefics3 ? "scale factor" : "pooling window", v->n_merge);
    if (v->n_patches > 1 << 16) return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches per image are too many", v->n_patches);
    v->n_out = v->n_patches / (v->n_merge * v->n_merge);

    /* the tower as an encoder's config (context.c sizes the context by it) */
    model_config *mc = &v->tower.config;
    snprintf(mc->arch, sizeof mc->arch, "clip");
    mc->dim = dim;
    mc->n_layers = n_layers;
    mc->n_heads = mc->n_kv_heads = n_heads;
    mc->head_dim = dim / n_heads;
    mc->q_dim = dim;
    /* hidden_dim sizes the context's scratch rows: the widest input of any product here (the MLP,
     * a flattened patch, a pixel-shuffled row) */
    int64_t widest = v->n_ff, patch_cols = 3LL * v->patch_size * v->patch_size;
    int64_t merged = idefics3 ? (int64_t)dim * v->n_merge * v->n_merge : dim;
    if (patch_cols > widest) widest = patch_cols;
    if (merged > widest) widest = merged;
    /* the context's scratch holds n_patches rows of the widest: kept under 2^28 floats (1 GiB), so
     * that no size of it wraps around wasm32's 32-bit size_t */
    if (widest * v->n_patches > 1 << 28)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches of rows of %lld values are too large", v->n_patches, (long long)widest);
    mc->hidden_dim = (int32_t)widest;
    mc->n_ctx_train = v->n_patches;
    mc->rms_eps = (float)eps;
    mc->attn_scale = 1.0f / sqrtf((float)mc->head_dim); /* clip_graph's kq_scale */
    mc->encoder = mc->layernorm = true;
    mc->causal = false;
    mc->pooling = POOL_NONE;
    return 0;
}

/* A weight the CPU kernels read as it is stored (no rewritten layout: quant_cpu_type) */
static int check_weight(const weight *w, const char *name, errmsg *err) {
    if (w->data && quant_cpu_type(w->type) != w->type)
        return errorf(err, WICK_ERR_UNSUPPORTED, "tensor %s: type %s is not supported in an mmproj file", name, quant_get(w->type)->name);
    return 0;
}

static int bind_matrix(vision_model *v, const char *name, int64_t rows, int64_t cols, weight *w, errmsg *err) {
    return model_bind_matrix(&v->tower, name, rows, cols, false, w, err) || check_weight(w, name, err) ? -1 : 0;
}

/* The patch convolution's kernel [P, P, 3, dim] (ggml's conv_2d order: x fastest, then y, then the
 * channel) as a matrix of dim rows of 3·P² */
static int bind_patch_embd(vision_model *v, errmsg *err) {
    const char *name = "v.patch_embd.weight";
    const gguf_tensor *t = model_find_tensor(&v->tower, name);
    int64_t p = v->patch_size, dim = v->tower.config.dim;
    if (!t) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->n_dims != 4 || t->ne[0] != (uint64_t)p || t->ne[1] != (uint64_t)p || t->ne[2] != 3 || t->ne[3] != (uint64_t)dim)
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%llu, %llu, %llu, %llu] where [%lld, %lld, 3, %lld] was expected", name,
                      (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                      (unsigned long long)t->ne[3], (long long)p, (long long)p, (long long)dim);
    const quant_type *qt = quant_get(t->type);
    if (!qt->vec_dot || !qt->to_float || (3 * p * p) % qt->block_size)
        return errorf(err, WICK_ERR_UNSUPPORTED, "tensor %s: type %s is not supported for the patch kernel", name, qt->name);
    if (t->outside || !t->data) return errorf(err, WICK_ERR_FORMAT, "tensor %s: its data is not in the file", name);
    weight *w = &v->patch_embd;
    w->data = t->data;
    w->type = t->type;
    w->rows = dim;
    w->cols = 3 * p * p;
    w->row_bytes = quant_row_size(t->type, w->cols);
    w->offset = t->file_offset;
    return check_weight(w, name, err);
}

/* Tensors of other towers a file may hold, which this graph would leave out: refused rather than ignored */
static int refuse_unknown(vision_model *v, errmsg *err) {
    static const char *const names[] = {"v.class_embd", "v.patch_embd.weight.1", "v.blk.0.attn_qkv.weight", "v.blk.0.attn_q_norm.weight",
                                        "v.blk.0.attn_k_norm.weight", "v.blk.0.ffn_gate.weight", "v.blk.0.ls1.weight",
                                        "v.blk.0.attn_post_norm.weight", "v.blk.0.ffn_post_norm.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (model_find_tensor(&v->tower, names[i]))
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: tensor %s is not supported for %s", names[i],
                          v->projector == PROJECTOR_IDEFICS3 ? "idefics3" : "gemma3");
    return 0;
}

/* gemma3: the soft-embedding norm's weight (its converter has added Gemma's 1 already) and the input
 * projection, stored [dim rows of n_embd_text] (ne = [n_embd_text, dim]) and multiplied transposed
 * (siglip.cpp: ggml_mul_mat(ggml_cont(ggml_transpose(W)), x)): here copied once into rows of dim,
 * in its own type, so the product rounds the activations as llama.cpp's of the transposed copy does.
 * Only float types: ggml makes no contiguous copy of a transposed quantized tensor (the converter
 * keeps it F16). */
static int bind_gemma3(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t dim = m->config.dim;
    const char *name = "mm.input_projection.weight";
    if (model_bind_floats(m, "mm.soft_emb_norm.weight", dim, 1, false, &v->soft_emb_norm, err)) return -1;
    const gguf_tensor *t = model_find_tensor(m, name);
    if (!t) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->n_dims != 2 || t->ne[1] != (uint64_t)dim || t->ne[0] < 1 || t->ne[0] > 1 << 20)
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%llu, %llu] where [n_embd_text, %lld] was expected", name,
                      (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (long long)dim);
    if (t->type != WICK_TYPE_F32 && t->type != WICK_TYPE_F16 && t->type != WICK_TYPE_BF16)
        return errorf(err, WICK_ERR_UNSUPPORTED, "tensor %s: type %s is not supported (f32, f16 or bf16: llama.cpp transposes it)", name,
                      quant_get(t->type)->name);
    if (t->outside || !t->data) return errorf(err, WICK_ERR_FORMAT, "tensor %s: its data is not in the file", name);
    const int64_t text = (int64_t)t->ne[0];
    const size_t es = t->type == WICK_TYPE_F32 ? 4 : 2;
    /* text · dim · es bytes: no more than the tensor's data, which gguf_open found inside the buffer */
    uint8_t *rows = malloc((size_t)text * dim * es);
    if (!rows) return errorf(err, WICK_ERR_NOMEM, "out of memory transposing %s", name);
    const uint8_t *src = t->data;
    for (int64_t j = 0; j < text; j++)
        for (int64_t i = 0; i < dim; i++) memcpy(rows + ((size_t)j * dim + i) * es, src + ((size_t)i * text + j) * es, es);
    v->input_proj_rows = rows;
    v->n_embd_text = (int32_t)text;
    weight *w = &v->input_proj;
    w->data = rows;
    w->type = t->type;
    w->rows = text;
    w->cols = dim;
    w->row_bytes = quant_row_size(t->type, dim);
    return check_weight(w, name, err);
}

static int bind_weights(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t dim = m->config.dim, ff = v->n_ff;
    char name[96], up[96], down[96];
    if (refuse_unknown(v, err) || bind_patch_embd(v, err) ||
        model_bind_floats(m, "v.patch_embd.bias", dim, 1, true, &v->patch_b, err) ||
        model_bind_floats(m, "v.position_embd.weight", dim, v->n_patches, true, &v->pos_embd, err) ||
        model_bind_floats(m, "v.post_ln.weight", dim, 1, true, &v->post_ln_w, err) ||
        model_bind_floats(m, "v.post_ln.bias", dim, 1, true, &v->post_ln_b, err) ||
        model_bind_floats(m, "v.pre_ln.weight", dim, 1, true, &m->embd_norm, err) ||
        model_bind_floats(m, "v.pre_ln.bias", dim, 1, true, &m->embd_norm_b, err))
        return -1;
    m->layers = calloc((size_t)m->config.n_layers, sizeof *m->layers);
    v->norms = calloc((size_t)m->config.n_layers, sizeof *v->norms);
    if (!m->layers || !v->norms) return errorf(err, WICK_ERR_NOMEM, "out of memory");
    for (int l = 0; l < m->config.n_layers; l++) {
        layer_weights *w = &m->layers[l];
        vision_layer_norms *n = &v->norms[l];
        w->kind = LAYER_ATTENTION;
        w->kv_layer = l;
#define NAME(part) (snprintf(name, sizeof name, "v.blk.%d." part, l), name)
        if (bind_matrix(v, NAME("attn_q.weight"), dim, dim, &w->wq, err) ||
            bind_matrix(v, NAME("attn_k.weight"), dim, dim, &w->wk, err) ||
            bind_matrix(v, NAME("attn_v.weight"), dim, dim, &w->wv, err) ||
            bind_matrix(v, NAME("attn_out.weight"), dim, dim, &w->wo, err) ||
            model_bind_floats(m, NAME("attn_q.bias"), dim, 1, true, &w->bq, err) ||
            model_bind_floats(m, NAME("attn_k.bias"), dim, 1, true, &w->bk, err) ||
            model_bind_floats(m, NAME("attn_v.bias"), dim, 1, true, &w->bv, err) ||
            model_bind_floats(m, NAME("attn_out.bias"), dim, 1, true, &w->bo, err) ||
            model_bind_floats(m, NAME("ln1.weight"), dim, 1, false, &n->ln1_w, err) ||
            model_bind_floats(m, NAME("ln1.bias"), dim, 1, true, &n->ln1_b, err) ||
            model_bind_floats(m, NAME("ln2.weight"), dim, 1, false, &n->ln2_w, err) ||
            model_bind_floats(m, NAME("ln2.bias"), dim, 1, true, &n->ln2_b, err))
            return -1;
        /* clip.cpp swaps ffn_up and ffn_down (weights and biases) in idefics3 files whose
         * ffn_down takes rows of dim (older conversions named them the other way round) */
        const gguf_tensor *d = model_find_tensor(m, NAME("ffn_down.weight"));
        bool swapped = d && d->ne[0] == (uint64_t)dim;
        snprintf(up, sizeof up, "v.blk.%d.%s", l, swapped ? "ffn_down" : "ffn_up");
        snprintf(down, sizeof down, "v.blk.%d.%s", l, swapped ? "ffn_up" : "ffn_down");
#undef NAME
        char upw[112], upb[112], downw[112], downb[112];
        snprintf(upw, sizeof upw, "%s.weight", up);
        snprintf(upb, sizeof upb, "%s.bias", up);
        snprintf(downw, sizeof downw, "%s.weight", down);
        snprintf(downb, sizeof downb, "%s.bias", down);
        if (bind_matrix(v, upw, ff, dim, &w->w_up, err) || bind_matrix(v, downw, dim, ff, &w->w_down, err) ||
            model_bind_floats(m, upb, ff, 1, true, &w->ffn_up_b, err) ||
            model_bind_floats(m, downb, dim, 1, true, &w->ffn_down_b, err))
            return -1;
    }
    if (v->projector == PROJECTOR_GEMMA3) return bind_gemma3(v, err);
    /* idefics3: one linear map from the shuffled rows to the text model's width (mm.model.fc, no bias) */
    const gguf_tensor *fc = model_find_tensor(m, "mm.model.fc.weight");
    if (!fc) return errorf(err, WICK_ERR_FORMAT, "tensor mm.model.fc.weight is missing");
    if (fc->ne[1] < 1 || fc->ne[1] > 1 << 20)
        return errorf(err, WICK_ERR_FORMAT, "tensor mm.model.fc.weight: %llu output rows", (unsigned long long)fc->ne[1]);
    v->n_embd_text = (int32_t)fc->ne[1];
    return bind_matrix(v, "mm.model.fc.weight", v->n_embd_text, dim * v->n_merge * v->n_merge, &v->fc, err);
}

int vision_load(vision_model *v, const uint8_t *buf, size_t size, errmsg *err) {
    memset(v, 0, sizeof *v);
    if (!buf) return errorf(err, WICK_ERR_INVALID_ARG, "mmproj: no file");
    if (gguf_open(&v->tower.gguf, buf, size, err)) return -1;
    v->tower.is_gguf = true;
    if (read_config(v, err) || bind_weights(v, err)) {
        vision_release(v);
        return -1;
    }
    v->tower.has_weights = true;
    return 0;
}

void vision_release(vision_model *v) {
    free(v->norms);
    free(v->input_proj_rows);
    model_release(&v->tower);
    memset(v, 0, sizeof *v);
}

/* ---- preprocessing: Pillow's resampling ---------------------------------------------------------- */

typedef enum { RESAMPLE_BILINEAR, RESAMPLE_BICUBIC, RESAMPLE_LANCZOS } resample_filter;

/* Pillow keeps the weights in fixed point with 22 fractional bits: 32 − 8 (a pixel) − 2 (headroom) */
#define RESAMPLE_BITS 22

/* the filter's value at distance x (in input pixels, scaled): Lanczos sinc(x)·sinc(x/3) on [−3, 3);
 * bicubic with a = −0.5 (Pillow's, not PyTorch's −0.75) on [−2, 2]; bilinear 1 − |x| on [−1, 1] */
static double resample_weight(resample_filter f, double x) {
    const double pi = 3.141592653589793238462643383279502884;
    if (f == RESAMPLE_LANCZOS) {
        if (x < -3.0 || x >= 3.0) return 0.0;
        double a = x == 0.0 ? 1.0 : sin(pi * x) / (pi * x), y = x / 3.0;
        double b = y == 0.0 ? 1.0 : sin(pi * y) / (pi * y);
        return a * b;
    }
    if (x < 0.0) x = -x;
    if (f == RESAMPLE_BILINEAR) return x < 1.0 ? 1.0 - x : 0.0;
    const double a = -0.5;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* The coefficients of one axis, in → out pixels: output i reads first[i] … first[i] + count[i] − 1
 * with the fixed-point weights k[i·ksize …] (each row normalized to sum 1, then rounded half away
 * from zero as Pillow rounds) */
typedef struct {
    int ksize;
    int *first, *count;
    int32_t *k;
} resample_axis;

static void axis_free(resample_axis *a) {
    free(a->first);
    free(a->count);
    free(a->k);
}

static int axis_init(resample_axis *a, int in, int out, resample_filter f) {
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale; /* upsampling keeps the filter sharp */
    double support = (f == RESAMPLE_LANCZOS ? 3.0 : f == RESAMPLE_BICUBIC ? 2.0 : 1.0) * filterscale; /* the filter's radius */
    a->ksize = (int)ceil(support) * 2 + 1;
    a->first = malloc((size_t)out * sizeof *a->first);
    a->count = malloc((size_t)out * sizeof *a->count);
    a->k = malloc((size_t)out * a->ksize * sizeof *a->k);
    double *w = malloc((size_t)a->ksize * sizeof *w);
    if (!a->first || !a->count || !a->k || !w) {
        free(w);
        axis_free(a);
        return -1;
    }
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale, sum = 0.0; /* pixel centres at +0.5 */
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        int n = hi - lo;
        for (int j = 0; j < n; j++) {
            w[j] = resample_weight(f, (j + lo - center + 0.5) / filterscale);
            sum += w[j];
        }
        for (int j = 0; j < a->ksize; j++) {
            double x = j < n ? (sum != 0.0 ? w[j] / sum : w[j]) : 0.0;
            a->k[(size_t)i * a->ksize + j] = (int32_t)(x * (double)(1 << RESAMPLE_BITS) + (x < 0 ? -0.5 : 0.5));
        }
        a->first[i] = lo;
        a->count[i] = n;
    }
    free(w);
    return 0;
}

/* a fixed-point sum back to a byte: the shift is arithmetic (gcc and clang on every target), then clamped */
static uint8_t clip8(int32_t acc) {
    int32_t v = acc >> RESAMPLE_BITS;
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* one pass along x (horizontal) or y: src w × h RGB → dst (out × h, or w × out) */
static void resample_pass(const uint8_t *src, int w, int h, bool horizontal, const resample_axis *a, int out, uint8_t *dst) {
    const int32_t half = 1 << (RESAMPLE_BITS - 1); /* rounding: 0.5 in fixed point */
    int ow = horizontal ? out : w, oh = horizontal ? h : out;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            int i = horizontal ? x : y;
            const int32_t *k = a->k + (size_t)i * a->ksize;
            int32_t acc[3] = {half, half, half};
            for (int j = 0; j < a->count[i]; j++) {
                int sx = horizontal ? a->first[i] + j : x, sy = horizontal ? y : a->first[i] + j;
                const uint8_t *p = src + ((size_t)sy * w + sx) * 3;
                for (int c = 0; c < 3; c++) acc[c] += p[c] * k[j];
            }
            for (int c = 0; c < 3; c++) dst[((size_t)y * ow + x) * 3 + c] = clip8(acc[c]);
        }
}

/* src (w × h) resized to nw × nh into a new buffer (*out, to free): x first, then y, each only
 * where its size changes (img_tool::resize: an unchanged size is a copy) */
static int resize_rgb(const uint8_t *src, int w, int h, int nw, int nh, resample_filter f, uint8_t **out, errmsg *err) {
    /* every size below VISION_MAX_SIDE + image_size (≤ 16384 + 8192): no product of two wraps 32 bits */
    uint8_t *mid = NULL, *dst = malloc((size_t)nw * nh * 3);
    resample_axis ax = {0}, ay = {0};
    int rc = 0;
    if (!dst) return errorf(err, WICK_ERR_NOMEM, "out of memory resizing an image to %d × %d", nw, nh);
    if (nw == w && nh == h) {
        memcpy(dst, src, (size_t)w * h * 3);
    } else if (nw != w && nh != h) {
        mid = malloc((size_t)nw * h * 3);
        if (!mid || axis_init(&ax, w, nw, f) || axis_init(&ay, h, nh, f)) rc = -1;
        else {
            resample_pass(src, w, h, true, &ax, nw, mid);
            resample_pass(mid, nw, h, false, &ay, nh, dst);
        }
    } else if (nw != w) {
        if (axis_init(&ax, w, nw, f)) rc = -1;
        else resample_pass(src, w, h, true, &ax, nw, dst);
    } else {
        if (axis_init(&ay, h, nh, f)) rc = -1;
        else resample_pass(src, w, h, false, &ay, nh, dst);
    }
    if (ax.k) axis_free(&ax);
    if (ay.k) axis_free(&ay);
    free(mid);
    if (rc) {
        free(dst);
        return errorf(err, WICK_ERR_NOMEM, "out of memory resizing an image to %d × %d", nw, nh);
    }
    *out = dst;
    return 0;
}

/* src (w × h) resized into a tw × th canvas as img_tool::resize does with PAD_CEIL: scaled by
 * the smaller of the two ratios (in float, as llama.cpp computes them), each side rounded up and
 * kept within the canvas, centred (offsets rounded down) on black. An unchanged size is a copy. */
static int resize_padded(const uint8_t *src, int w, int h, int tw, int th, resample_filter f, uint8_t **out, errmsg *err) {
    if (tw == w && th == h) return resize_rgb(src, w, h, tw, th, f, out, err);
    float sw = (float)tw / (float)w, sh = (float)th / (float)h, scale = sw < sh ? sw : sh;
    int nw = (int)ceilf((float)w * scale), nh = (int)ceilf((float)h * scale);
    if (nw > tw) nw = tw;
    if (nh > th) nh = th;
    if (nw < 1) nw = 1;
    if (nh < 1) nh = 1;
    uint8_t *inner = NULL, *canvas = calloc((size_t)tw * th, 3);
    if (!canvas) return errorf(err, WICK_ERR_NOMEM, "out of memory resizing an image to %d × %d", tw, th);
    if (resize_rgb(src, w, h, nw, nh, f, &inner, err)) {
        free(canvas);
        return -1;
    }
    const int ox = (tw - nw) / 2, oy = (th - nh) / 2;
    for (int y = 0; y < nh; y++) memcpy(canvas + ((size_t)(y + oy) * tw + ox) * 3, inner + (size_t)y * nw * 3, (size_t)nw * 3);
    free(inner);
    *out = canvas;
    return 0;
}

/* The S × S square of img (iw pixels wide) at (x0, y0) as the encoder's input (clip_image_f32's
 * from_u8, then normalize): (value / 255 − mean) / std per channel, in planes [3][S][S] */
static void normalize_square(const vision_model *v, const uint8_t *img, int iw, int x0, int y0, float *out) {
    const int S = v->image_size;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < S; y++) {
            const uint8_t *row = img + ((size_t)(y0 + y) * iw + x0) * 3 + c;
            float *o = out + ((size_t)c * S + y) * S;
            for (int x = 0; x < S; x++) o[x] = ((float)row[(size_t)x * 3] / 255.0f - v->mean[c]) / v->std[c];
        }
}

/* idefics3 with the file's longest side L: the picture's size once resized so that its longer side
 * is L (the shorter by the aspect ratio, truncated, then up to even) */
static void idefics3_resized(const vision_model *v, int32_t width, int32_t height, int *rw, int *rh) {
    const int L = v->longest_edge;
    double aspect = (double)width / height;
    if (width >= height) {
        *rw = L;
        *rh = (int)(L / aspect);
        *rh += *rh % 2;
    } else {
        *rh = L;
        *rw = (int)(L * aspect);
        *rw += *rw % 2;
    }
}

/* idefics3 without it (the generic slicing of mtmd_image_preprocessor_idefics3: calc_size_preserved_ratio
 * aligned to S): each side rounded to the nearest multiple of S (in float), at least S */
static int idefics3_aligned(int side, int S) {
    int n = (int)roundf((float)side / (float)S) * S;
    return n > S ? n : S;
}

int vision_grid(const vision_model *v, int32_t width, int32_t height, int32_t *grid_x, int32_t *grid_y, errmsg *err) {
    *grid_x = *grid_y = 0;
    if (width < 1 || height < 1 || width > VISION_MAX_SIDE || height > VISION_MAX_SIDE)
        return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels (sides of 1 to %d are taken)", width, height, VISION_MAX_SIDE);
    const int S = v->image_size;
    int rw, rh;
    switch (v->projector) {
    case PROJECTOR_IDEFICS3:
        if (v->longest_edge > 0) {
            idefics3_resized(v, width, height, &rw, &rh);
            if (rw < 1 || rh < 1)
                return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels is too narrow to resize to a longest side of %d", width,
                              height, v->longest_edge);
        } else {
            rw = idefics3_aligned(width, S);
            rh = idefics3_aligned(height, S);
        }
        break;
    default:
        return 0; /* one image of S × S */
    }
    const int gx = (rw + S - 1) / S, gy = (rh + S - 1) / S;
    /* the tiles and the overview, each 3·S² floats: within the batch's limit (so that no size below wraps 32 bits) */
    if (((int64_t)gx * gy + 1) * 3 * S * S > VISION_MAX_BATCH_FLOATS)
        return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels make %d × %d tiles of %d², more than a batch holds", width, height,
                      gx, gy, S);
    *grid_x = gx;
    *grid_y = gy;
    return 0;
}

void vision_batch_free(vision_batch *b) {
    free(b->pixels);
    memset(b, 0, sizeof *b);
}

/* idefics3 (mtmd_image_preprocessor_idefics3): the tiles of the refined picture row by row, then the
 * overview (mtmd.cpp's add_media puts them so: ov_img_first is false for it). With the file's
 * longest side: resized to it, then to whole tiles (refined), each resize Lanczos, and the
 * overview from the refined picture; without: the refined picture from the original at the
 * aligned size (bicubic, padded as PAD_CEIL pads: the slices' image_pad_rf), the overview from
 * the original too (bicubic, no padding) */
static int prepare_idefics3(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *b, errmsg *err) {
    const int S = v->image_size, gx = b->grid_x, gy = b->grid_y, rw = gx * S, rh = gy * S;
    uint8_t *refined = NULL, *overview = NULL;
    int rc;
    if (v->longest_edge > 0) {
        int lw, lh;
        uint8_t *resized = NULL;
        idefics3_resized(v, width, height, &lw, &lh);
        rc = resize_rgb(rgb, width, height, lw, lh, RESAMPLE_LANCZOS, &resized, err);
        if (!rc) rc = resize_rgb(resized, lw, lh, rw, rh, RESAMPLE_LANCZOS, &refined, err);
        if (!rc) rc = resize_rgb(refined, rw, rh, S, S, RESAMPLE_LANCZOS, &overview, err);
        free(resized);
    } else {
        rc = resize_padded(rgb, width, height, rw, rh, RESAMPLE_BICUBIC, &refined, err);
        if (!rc) rc = resize_rgb(rgb, width, height, S, S, RESAMPLE_BICUBIC, &overview, err);
    }
    if (!rc) {
        const size_t image = (size_t)3 * S * S;
        for (int ty = 0; ty < gy; ty++)
            for (int tx = 0; tx < gx; tx++) normalize_square(v, refined, rw, tx * S, ty * S, b->pixels + (size_t)(ty * gx + tx) * image);
        normalize_square(v, overview, S, 0, 0, b->pixels + (size_t)(b->n - 1) * image);
    }
    free(refined);
    free(overview);
    return rc;
}

int vision_prepare(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *out, errmsg *err) {
    memset(out, 0, sizeof *out);
    if (!v->tower.has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no mmproj loaded");
    if (!rgb) return errorf(err, WICK_ERR_INVALID_ARG, "image: no pixels");
    vision_batch b = {0};
    if (vision_grid(v, width, height, &b.grid_x, &b.grid_y, err)) return -1;
    b.n = b.grid_x ? b.grid_x * b.grid_y + 1 : 1;
    const int S = v->image_size;
    b.pixels = malloc((size_t)b.n * 3 * S * S * sizeof *b.pixels);
    if (!b.pixels) return errorf(err, WICK_ERR_NOMEM, "out of memory for %d images of %d²", b.n, S);
    int rc = 0;
    switch (v->projector) {
    case PROJECTOR_IDEFICS3: rc = prepare_idefics3(v, rgb, width, height, &b, err); break;
    case PROJECTOR_GEMMA3: {
        /* mtmd_image_preprocessor_fixed_size with clip.cpp's gemma3 settings: bilinear, PAD_CEIL on black */
        uint8_t *img = NULL;
        rc = resize_padded(rgb, width, height, S, S, RESAMPLE_BILINEAR, &img, err);
        if (!rc) normalize_square(v, img, S, 0, 0, b.pixels);
        free(img);
        break;
    }
    }
    if (rc) {
        vision_batch_free(&b);
        return -1;
    }
    *out = b;
    return 0;
}

/* ---- the encoder ------------------------------------------------------------------------------ */

/* The patches of the image ([3][S][S]) flattened as the kernel's rows are (channel, y, x), one row
 * of 3·P² per patch, patches in rows top to bottom */
static void flatten_patches(const vision_model *v, const float *pixels, float *rows) {
    const int P = v->patch_size, S = v->image_size, n = v->n_side;
    for (int py = 0; py < n; py++)
        for (int px = 0; px < n; px++) {
            float *r = rows + ((size_t)py * n + px) * 3 * P * P;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < P; ky++)
                    memcpy(r + ((size_t)c * P + ky) * P, pixels + ((size_t)c * S + (size_t)py * P + ky) * S + (size_t)px * P,
                           (size_t)P * sizeof(float));
        }
}

/* idefics3's pixel shuffle (see the top): x [n_side²][dim] → out [(n_side/s)²][dim·s²] */
static void pixel_shuffle(const float *x, int n_side, int dim, int s, float *out) {
    const int n_out_side = n_side / s;
    for (int Y = 0; Y < n_out_side; Y++)
        for (int X = 0; X < n_out_side; X++) {
            float *row = out + ((size_t)Y * n_out_side + X) * dim * s * s;
            for (int dy = 0; dy < s; dy++)
                for (int dx = 0; dx < s; dx++)
                    memcpy(row + (size_t)(dy * s + dx) * dim, x + ((size_t)(Y * s + dy) * n_side + (size_t)(X * s + dx)) * dim,
                           (size_t)dim * sizeof(float));
        }
}

/* gemma3's average pooling (see the top): x [n_side²][dim] → out [(n_side/k)²][dim] */
static void avg_pool(const float *x, int n_side, int dim, int k, float *out) {
    const int n_out_side = n_side / k;
    const float window = (float)(k * k);
    for (int Y = 0; Y < n_out_side; Y++)
        for (int X = 0; X < n_out_side; X++) {
            float *row = out + ((size_t)Y * n_out_side + X) * dim;
            memset(row, 0, (size_t)dim * sizeof *row);
            for (int dy = 0; dy < k; dy++)
                for (int dx = 0; dx < k; dx++) add_rows(row, x + ((size_t)(Y * k + dy) * n_side + (size_t)(X * k + dx)) * dim, (size_t)dim);
            for (int d = 0; d < dim; d++) row[d] /= window;
        }
}

/* the tower's layers over c->x (n patches of dim), its final norm included */
static void tower_layers(const vision_model *v, struct wick_ctx *c) {
    const model_config *mc = &v->tower.config;
    const int n = v->n_patches, dim = mc->dim, ff = v->n_ff;
    const float eps = mc->rms_eps;
    act_rows in;
    for (int l = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &v->tower.layers[l];
        const vision_layer_norms *nm = &v->norms[l];
        memcpy(c->xb, c->x, (size_t)n * dim * sizeof(float));
        layernorm_rows(c->xb, nm->ln1_w, nm->ln1_b, n, dim, eps);
        act_init(&in, c, c->xb, n, dim);
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {dim, dim, dim};
        const float *biases[] = {w->bq, w->bk, w->bv};
        matmul_group(c, &in, 3, ws, outs, strides, biases, false, ACT_SILU);
        /* the keys and values of every patch into the layer's cache, then every patch's query against them all */
        for (int p = 0; p < n; p++) {
            void *kc = kv_at(c, c->k_cache, l, p), *vc = kv_at(c, c->v_cache, l, p);
            for (int i = 0; i < dim; i++) {
                kv_store(c, kc, (size_t)i, c->k[(size_t)p * dim + i]);
                kv_store(c, vc, (size_t)i, c->v[(size_t)p * dim + i]);
            }
        }
        attention(c, l, 0, n, false);
        act_init(&in, c, c->xb2, n, dim);
        matmul(c, &w->wo, &in, c->xb, dim, w->bo);
        add_rows(c->x, c->xb, (size_t)n * dim);

        memcpy(c->xb, c->x, (size_t)n * dim * sizeof(float));
        layernorm_rows(c->xb, nm->ln2_w, nm->ln2_b, n, dim, eps);
        act_init(&in, c, c->xb, n, dim);
        matmul(c, &w->w_up, &in, c->hb, ff, w->ffn_up_b);
        for (size_t i = 0; i < (size_t)n * ff; i++) c->hb[i] = gelu_f16(c->hb[i]);
        act_init(&in, c, c->hb, n, ff);
        matmul(c, &w->w_down, &in, c->xb, dim, w->ffn_down_b);
        add_rows(c->x, c->xb, (size_t)n * dim);
    }
    if (v->post_ln_w) layernorm_rows(c->x, v->post_ln_w, v->post_ln_b, n, dim, eps);
}

int vision_encode(const vision_model *v, const float *pixels, int32_t n_threads, float *out, errmsg *err) {
    if (!v->tower.has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no mmproj loaded");
    if (!pixels || !out) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no image or no output");
    const int n = v->n_patches, dim = v->tower.config.dim, s = v->n_merge;
    wick_ctx_params p = {0};
    p.n_ctx = p.n_batch = n;
    p.n_threads = n_threads;
    struct wick_ctx c;
    if (ctx_init(&c, &v->tower, &p, err)) return -1;
    /* x = patches·W_patchᵀ + b_patch, + the position embeddings (then pre_ln where the file has one);
     * the flattened patches take c->hb, as wide as the widest row (read_config) */
    act_rows in;
    flatten_patches(v, pixels, c.hb);
    act_init(&in, &c, c.hb, n, (int)v->patch_embd.cols);
    matmul(&c, &v->patch_embd, &in, c.x, dim, v->patch_b);
    if (v->pos_embd) add_rows(c.x, v->pos_embd, (size_t)n * dim);
    if (v->tower.embd_norm) layernorm_rows(c.x, v->tower.embd_norm, v->tower.embd_norm_b, n, dim, v->tower.config.rms_eps);
    tower_layers(v, &c);
    if (v->projector == PROJECTOR_GEMMA3) {
        /* gemma3: the pooled rows (into c->hb), RMS-normed, through the input projection into out */
        avg_pool(c.x, v->n_side, dim, s, c.hb);
        for (int p = 0; p < v->n_out; p++) rmsnorm(c.hb + (size_t)p * dim, c.hb + (size_t)p * dim, v->soft_emb_norm, dim, v->tower.config.rms_eps);
        act_init(&in, &c, c.hb, v->n_out, dim);
        matmul(&c, &v->input_proj, &in, out, v->n_embd_text, NULL);
    } else {
        /* idefics3: the shuffled rows (into c->hb) through mm.model.fc, straight into out */
        pixel_shuffle(c.x, v->n_side, dim, s, c.hb);
        act_init(&in, &c, c.hb, v->n_out, dim * s * s);
        matmul(&c, &v->fc, &in, out, v->n_embd_text, NULL);
    }
    ctx_release(&c);
    return 0;
}
