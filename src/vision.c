/* vision.c — an image encoder from an mmproj GGUF file, as llama.cpp's tools/mtmd computes it:
 * the file read and checked as clip.cpp's clip_model_loader reads it (keys clip.* and
 * clip.vision.*, tensors v.* and mm.*: clip-impl.h's KEY_ and TN_ names), the SigLIP vision
 * transformer of clip_graph::build_vit, and the projectors of models/siglip.cpp: idefics3 (SmolVLM),
 * gemma3 (Gemma 3) and lfm2 (LFM2-VL). With x the image's patches (P × P pixels of 3 channels,
 * flattened per patch):
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
 *     lfm2:     h = LayerNorm(pixel_shuffle(x, s)) (mm.input_norm, eps 1e-5, where the file has it)
 *               y = GELU(h·W_1ᵀ + b_1)·W_2ᵀ + b_2             (mm.1, mm.2)
 * lfm2's images have their own sizes (a grid of gx × gy patches, not n_side²): its position table
 * (n_side², square) is resized to the grid first, as clip_graph::resize_position_embeddings does
 * with ggml_interpolate (bilinear with antialias: ggml-cpu's upscale, PyTorch's interpolate with
 * antialias = True): output (x, y) is the triangle-weighted mean of the table's entries within the
 * filter's support (1, or the shrink factor where the grid is smaller), in float, the weights
 * normalized by their sum. Where the grid is the table's, the table as it is.
 * The pixel shuffle is clip_graph::build_patch_merge_permute: output position (Y, X) of the
 * (gy/s) × (gx/s) grid gathers the s × s block of patches (Y·s + dy, X·s + dx) into one row of dim·s², the
 * patch at (dy, dx) at columns (dy·s + dx)·dim … — dy outer, dx inner, each patch's dim values in
 * order; positions row by row (lfm2's images are made whole blocks, so the padding it allows is never needed).
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
 * lfm2 (mtmd_image_preprocessor_lfm2, from transformers' Lfm2VlImageProcessorFast): the token budget
 * is clip.cpp's, 64 to 256 positions, as pixels (· (P·s)²); the picture's smart size
 * (img_tool::calc_size_preserved_ratio: each side rounded to whole blocks of P·s, then scaled into
 * the budget, floored to blocks when above it, ceiled when below) is its one image, resized to it
 * bilinearly (no padding); unless the picture rounded to whole blocks holds more than twice the
 * budget's pixels: then it is tiled, LFM2_TILE² per tile, the grid of 2 to 10 tiles whose aspect
 * is nearest the picture's (find_closest_aspect_ratio), resized bilinearly to the whole grid with
 * PAD_CEIL, the tiles row by row, then the thumbnail (the smart size) last.
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

/* lfm2's token budget per image: clip.cpp's set_limit_image_tokens(64, 256) for PROJECTOR_TYPE_LFM2
 * (LFM2.5-VL's processor_config.json), whatever the file says; and mtmd_image_preprocessor_lfm2's
 * tiling constants: 2 to 10 tiles, and tiles only for a picture of more than twice the budget */
#define LFM2_MIN_TOKENS 64
#define LFM2_MAX_TOKENS 256
#define LFM2_MAX_PIXELS_TOLERANCE 2.0
/* mm.input_norm's eps: clip.cpp's ggml_norm(…, 1e-5) (torch's nn.LayerNorm default) */
#define LFM2_INPUT_NORM_EPS 1e-5f

const char *vision_projector_name(vision_projector p) {
    switch (p) {
    case PROJECTOR_IDEFICS3: return "idefics3";
    case PROJECTOR_GEMMA3: return "gemma3";
    case PROJECTOR_LFM2: return "lfm2";
    }
    return "?";
}

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
    else if (gguf_str_eq(s, "lfm2")) v->projector = PROJECTOR_LFM2;
    else
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: projector '%.*s' is not supported (supported: idefics3, gemma3, lfm2)",
                      (int)(s.len < 64 ? s.len : 64), s.ptr);
    const bool idefics3 = v->projector == PROJECTOR_IDEFICS3, lfm2 = v->projector == PROJECTOR_LFM2;
    const bool shuffles = idefics3 || lfm2; /* a pixel (un)shuffle whose factor the file must give */
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
        key_int(g, "clip.vision.projector.scale_factor", shuffles ? 2 : 1, 64, !shuffles, &v->n_merge, err) ||
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
                      shuffles ? "scale factor" : "pooling window", v->n_merge);
    if (v->n_patches > 1 << 16) return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches per image are too many", v->n_patches);
    v->n_out = v->n_patches / (v->n_merge * v->n_merge);
    v->max_patches = v->n_patches;
    if (lfm2) {
        /* the budget (clip.cpp: set_limit_image_tokens(64, 256) for LFM2) in pixels of (P·s)² per position */
        const int64_t block = (int64_t)v->patch_size * v->n_merge, area = block * block;
        if (LFM2_TILE % block)
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: lfm2's tiles of %d pixels do not divide into blocks of %lld (patch %d × scale %d)",
                          LFM2_TILE, (long long)block, v->patch_size, v->n_merge);
        if (LFM2_MAX_TOKENS * area > 1 << 28)
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: blocks of %lld pixels make lfm2's token budget too large", (long long)block);
        v->min_pixels = (int32_t)(LFM2_MIN_TOKENS * area);
        v->max_pixels = (int32_t)(LFM2_MAX_TOKENS * area);
        /* one image's patches: a tile's, or the thumbnail's (up to the budget, more for a picture
         * far from square, whose short side stays one block: 4 times the budget is taken) */
        int64_t tile = (int64_t)(LFM2_TILE / v->patch_size) * (LFM2_TILE / v->patch_size), most = 4LL * v->max_pixels / ((int64_t)v->patch_size * v->patch_size);
        v->max_patches = (int32_t)(tile > most ? tile : most);
        if (v->max_patches > 1 << 16) return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: lfm2 images of %d patches are too many", v->max_patches);
    }

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
    int64_t merged = shuffles ? (int64_t)dim * v->n_merge * v->n_merge : dim;
    if (patch_cols > widest) widest = patch_cols;
    if (merged > widest) widest = merged;
    /* the context's scratch holds n_patches rows of the widest: kept under 2^28 floats (1 GiB), so
     * that no size of it wraps around wasm32's 32-bit size_t */
    if (widest * v->max_patches > 1 << 28)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches of rows of %lld values are too large", v->max_patches, (long long)widest);
    mc->hidden_dim = (int32_t)widest;
    mc->n_ctx_train = v->max_patches;
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
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: tensor %s is not supported for %s", names[i], vision_projector_name(v->projector));
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

/* lfm2: the optional LayerNorm over the unshuffled rows (mm.input_norm, weight and bias), the MLP
 * mm.1 (dim·s² → n_mm) and mm.2 (n_mm → n_embd_text) with their biases, as clip.cpp loads them */
static int bind_lfm2(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t merged = (int64_t)m->config.dim * v->n_merge * v->n_merge;
    const gguf_tensor *t1 = model_find_tensor(m, "mm.1.weight"), *t2 = model_find_tensor(m, "mm.2.weight");
    if (!t1) return errorf(err, WICK_ERR_FORMAT, "tensor mm.1.weight is missing");
    if (!t2) return errorf(err, WICK_ERR_FORMAT, "tensor mm.2.weight is missing");
    if (t1->ne[1] < 1 || t1->ne[1] > 1 << 18)
        return errorf(err, WICK_ERR_FORMAT, "tensor mm.1.weight: %llu output rows", (unsigned long long)t1->ne[1]);
    if (t2->ne[1] < 1 || t2->ne[1] > 1 << 20)
        return errorf(err, WICK_ERR_FORMAT, "tensor mm.2.weight: %llu output rows", (unsigned long long)t2->ne[1]);
    const int64_t n_mm = (int64_t)t1->ne[1];
    v->n_embd_text = (int32_t)t2->ne[1];
    if (model_bind_floats(m, "mm.input_norm.weight", merged, 1, true, &v->input_norm_w, err) ||
        model_bind_floats(m, "mm.input_norm.bias", merged, 1, true, &v->input_norm_b, err) ||
        bind_matrix(v, "mm.1.weight", n_mm, merged, &v->mm_1, err) || model_bind_floats(m, "mm.1.bias", n_mm, 1, false, &v->mm_1_b, err) ||
        bind_matrix(v, "mm.2.weight", v->n_embd_text, n_mm, &v->mm_2, err) ||
        model_bind_floats(m, "mm.2.bias", v->n_embd_text, 1, false, &v->mm_2_b, err))
        return -1;
    /* the MLP's hidden rows are an input of a product too: the context's scratch rows hold them */
    model_config *mc = &m->config;
    if (n_mm > mc->hidden_dim) {
        if (n_mm * v->max_patches > 1 << 28)
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches of rows of %lld values are too large", v->max_patches, (long long)n_mm);
        mc->hidden_dim = (int32_t)n_mm;
    }
    return 0;
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
    if (v->projector == PROJECTOR_LFM2) return bind_lfm2(v, err);
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

/* The nx × ny rectangle of img (iw pixels wide) at (x0, y0) as the encoder's input (clip_image_f32's
 * from_u8, then normalize): (value / 255 − mean) / std per channel, in planes [3][ny][nx] */
static void normalize_rect(const vision_model *v, const uint8_t *img, int iw, int x0, int y0, int nx, int ny, float *out) {
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < ny; y++) {
            const uint8_t *row = img + ((size_t)(y0 + y) * iw + x0) * 3 + c;
            float *o = out + ((size_t)c * ny + y) * nx;
            for (int x = 0; x < nx; x++) o[x] = ((float)row[(size_t)x * 3] / 255.0f - v->mean[c]) / v->std[c];
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

/* lfm2: img_tool::calc_size_preserved_ratio with the budget (min_pixels … max_pixels), aligned to
 * blocks of f = P·s, in float as llama.cpp computes it: each side rounded to whole blocks (at least
 * one); above the budget both scaled down by β = √(w·h / max) and floored to blocks (at least one),
 * below it scaled up by β = √(min / (w·h)) and ceiled to blocks */
static void lfm2_smart_size(const vision_model *v, int w, int h, int *ow, int *oh) {
    const int f = v->patch_size * v->n_merge;
    const float ff = (float)f;
    int wb = (int)roundf((float)w / ff) * f, hb = (int)roundf((float)h / ff) * f;
    if (wb < f) wb = f;
    if (hb < f) hb = f;
    if ((int64_t)hb * wb > v->max_pixels) {
        const float beta = sqrtf((float)h * (float)w / (float)v->max_pixels);
        hb = (int)floorf((float)h / beta / ff) * f;
        wb = (int)floorf((float)w / beta / ff) * f;
        if (hb < f) hb = f;
        if (wb < f) wb = f;
    } else if ((int64_t)hb * wb < v->min_pixels) {
        const float beta = sqrtf((float)v->min_pixels / ((float)h * (float)w));
        hb = (int)ceilf((float)h * beta / ff) * f;
        wb = (int)ceilf((float)w * beta / ff) * f;
    }
    *ow = wb;
    *oh = hb;
}

/* lfm2: whether the picture is tiled (mtmd_image_preprocessor_lfm2::should_tile): its sides rounded
 * to whole blocks (in double, halves to even, at least one patch) hold more than twice the budget */
static bool lfm2_should_tile(const vision_model *v, int w, int h) {
    const int f = v->patch_size * v->n_merge;
    int hb = (int)nearbyint((double)(float)h / f) * f, wb = (int)nearbyint((double)(float)w / f) * f;
    if (hb < v->patch_size) hb = v->patch_size;
    if (wb < v->patch_size) wb = v->patch_size;
    return (double)hb * (double)wb > (double)v->max_pixels * LFM2_MAX_PIXELS_TOLERANCE;
}

/* lfm2's candidate grids (width, height): every grid of 2 to 10 tiles, in the order
 * mtmd_image_preprocessor_lfm2::get_target_ratios leaves them, which find_closest_aspect_ratio's
 * ties depend on. It sorts them by tile count with std::sort, which is not stable: this is the order
 * libstdc++'s sort gives (printed by a program that builds the list the same way, g++ 12). */
static const int8_t lfm2_grids[][2] = {{2, 1}, {1, 2}, {1, 3}, {3, 1}, {2, 2}, {4, 1}, {1, 4}, {1, 5}, {5, 1},
                                        {3, 2}, {2, 3}, {1, 6}, {6, 1}, {1, 7}, {7, 1}, {2, 4}, {4, 2}, {1, 8},
                                        {8, 1}, {3, 3}, {1, 9}, {9, 1}, {10, 1}, {1, 10}, {5, 2}, {2, 5}};

/* lfm2: the grid whose aspect is nearest the picture's (in float); on a tie the later candidate wins
 * where the picture's area is more than half the grid's pixels */
static void lfm2_grid(int w, int h, int *gx, int *gy) {
    const float aspect = (float)w / (float)h, area = (float)(w * h);
    float best_diff = 3.402823466e38f; /* FLT_MAX: every candidate is nearer */
    int bx = 1, by = 1;
    for (size_t i = 0; i < sizeof lfm2_grids / sizeof lfm2_grids[0]; i++) {
        const int rx = lfm2_grids[i][0], ry = lfm2_grids[i][1];
        const float diff = fabsf(aspect - (float)rx / (float)ry);
        if (diff < best_diff) {
            best_diff = diff;
            bx = rx, by = ry;
        } else if (diff == best_diff && area > 0.5f * (float)(LFM2_TILE * LFM2_TILE * rx * ry)) {
            bx = rx, by = ry;
        }
    }
    *gx = bx;
    *gy = by;
}

int vision_plan_picture(const vision_model *v, int32_t width, int32_t height, vision_plan *plan, errmsg *err) {
    memset(plan, 0, sizeof *plan);
    if (width < 1 || height < 1 || width > VISION_MAX_SIDE || height > VISION_MAX_SIDE)
        return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels (sides of 1 to %d are taken)", width, height, VISION_MAX_SIDE);
    const int S = v->image_size;
    int rw = 0, rh = 0, tile = S, gx = 0, gy = 0;
    plan->last_nx = plan->last_ny = S;
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
        gx = (rw + S - 1) / S, gy = (rh + S - 1) / S;
        break;
    case PROJECTOR_LFM2: {
        int ow, oh;
        lfm2_smart_size(v, width, height, &ow, &oh);
        /* a picture far from square can make a long thin image: within the sides and patches taken */
        const int64_t patches = ((int64_t)ow / v->patch_size) * (oh / v->patch_size);
        if (ow > VISION_MAX_SIDE || oh > VISION_MAX_SIDE || patches > v->max_patches)
            return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels make an image of %d × %d, more than an image may be (%d patches)",
                          width, height, ow, oh, v->max_patches);
        plan->last_nx = ow, plan->last_ny = oh;
        tile = LFM2_TILE;
        if (lfm2_should_tile(v, width, height)) lfm2_grid(width, height, &gx, &gy);
        break;
    }
    case PROJECTOR_GEMMA3: break; /* one image of S × S */
    }
    /* the tiles and the last image: within the batch's limit (so that no size below wraps 32 bits) */
    const int64_t floats = ((int64_t)gx * gy * tile * tile + (int64_t)plan->last_nx * plan->last_ny) * 3;
    if (floats > VISION_MAX_BATCH_FLOATS)
        return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels make %d × %d tiles of %d², more than a batch holds", width, height,
                      gx, gy, tile);
    plan->grid_x = gx;
    plan->grid_y = gy;
    plan->n = gx * gy + 1;
    if (gx) plan->tile_nx = plan->tile_ny = tile;
    return 0;
}

int32_t vision_positions_of(const vision_model *v, int32_t nx, int32_t ny) {
    if (v->projector != PROJECTOR_LFM2) return v->n_out;
    const int32_t block = v->patch_size * v->n_merge;
    return ((nx + block - 1) / block) * ((ny + block - 1) / block);
}

size_t vision_batch_offset(const vision_batch *b, int32_t i) {
    size_t at = 0;
    for (int32_t k = 0; k < i; k++) at += (size_t)3 * (size_t)b->nx[k] * (size_t)b->ny[k];
    return at;
}

void vision_batch_free(vision_batch *b) {
    free(b->pixels);
    free(b->nx);
    free(b->ny);
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
            for (int tx = 0; tx < gx; tx++) normalize_rect(v, refined, rw, tx * S, ty * S, S, S, b->pixels + (size_t)(ty * gx + tx) * image);
        normalize_rect(v, overview, S, 0, 0, S, S, b->pixels + (size_t)(b->n - 1) * image);
    }
    free(refined);
    free(overview);
    return rc;
}

/* lfm2 (mtmd_image_preprocessor_lfm2): untiled, the one image at the smart size (bilinear, no
 * padding); tiled, the picture resized to the whole grid (bilinear, PAD_CEIL), its tiles row by row,
 * then the thumbnail at the smart size (mtmd.cpp puts it last: ov_img_first is false) */
static int prepare_lfm2(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *b, errmsg *err) {
    const int T = LFM2_TILE, gx = b->grid_x, gy = b->grid_y, ow = b->nx[b->n - 1], oh = b->ny[b->n - 1];
    uint8_t *refined = NULL, *thumb = NULL;
    int rc = 0;
    if (gx) {
        rc = resize_padded(rgb, width, height, gx * T, gy * T, RESAMPLE_BILINEAR, &refined, err);
        for (int ty = 0; !rc && ty < gy; ty++)
            for (int tx = 0; tx < gx; tx++)
                normalize_rect(v, refined, gx * T, tx * T, ty * T, T, T, b->pixels + (size_t)(ty * gx + tx) * 3 * T * T);
    }
    if (!rc) rc = resize_rgb(rgb, width, height, ow, oh, RESAMPLE_BILINEAR, &thumb, err);
    if (!rc) normalize_rect(v, thumb, ow, 0, 0, ow, oh, b->pixels + vision_batch_offset(b, b->n - 1));
    free(refined);
    free(thumb);
    return rc;
}

int vision_prepare(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *out, errmsg *err) {
    memset(out, 0, sizeof *out);
    if (!v->tower.has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no mmproj loaded");
    if (!rgb) return errorf(err, WICK_ERR_INVALID_ARG, "image: no pixels");
    vision_batch b = {0};
    vision_plan plan;
    if (vision_plan_picture(v, width, height, &plan, err)) return -1;
    b.n = plan.n;
    b.grid_x = plan.grid_x;
    b.grid_y = plan.grid_y;
    b.nx = malloc((size_t)b.n * sizeof *b.nx);
    b.ny = malloc((size_t)b.n * sizeof *b.ny);
    if (!b.nx || !b.ny) {
        vision_batch_free(&b);
        return errorf(err, WICK_ERR_NOMEM, "out of memory for %d images", b.n);
    }
    for (int32_t i = 0; i < b.n; i++) {
        b.nx[i] = i < b.n - 1 ? plan.tile_nx : plan.last_nx;
        b.ny[i] = i < b.n - 1 ? plan.tile_ny : plan.last_ny;
    }
    const int S = v->image_size;
    /* within VISION_MAX_BATCH_FLOATS (vision_plan_picture) */
    b.pixels = malloc(vision_batch_offset(&b, b.n) * sizeof *b.pixels);
    if (!b.pixels) {
        vision_batch_free(&b);
        return errorf(err, WICK_ERR_NOMEM, "out of memory for %d images", plan.n);
    }
    int rc = 0;
    switch (v->projector) {
    case PROJECTOR_IDEFICS3: rc = prepare_idefics3(v, rgb, width, height, &b, err); break;
    case PROJECTOR_LFM2: rc = prepare_lfm2(v, rgb, width, height, &b, err); break;
    case PROJECTOR_GEMMA3: {
        /* mtmd_image_preprocessor_fixed_size with clip.cpp's gemma3 settings: bilinear, PAD_CEIL on black */
        uint8_t *img = NULL;
        rc = resize_padded(rgb, width, height, S, S, RESAMPLE_BILINEAR, &img, err);
        if (!rc) normalize_rect(v, img, S, 0, 0, S, S, b.pixels);
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

/* The patches of the image ([3][ny][nx], gx × gy patches) flattened as the kernel's rows are
 * (channel, y, x), one row of 3·P² per patch, patches in rows top to bottom */
static void flatten_patches(const vision_model *v, const float *pixels, int nx, int ny, float *rows) {
    const int P = v->patch_size, gx = nx / P, gy = ny / P;
    for (int py = 0; py < gy; py++)
        for (int px = 0; px < gx; px++) {
            float *r = rows + ((size_t)py * gx + px) * 3 * P * P;
            for (int c = 0; c < 3; c++)
                for (int ky = 0; ky < P; ky++)
                    memcpy(r + ((size_t)c * P + ky) * P, pixels + ((size_t)c * ny + (size_t)py * P + ky) * nx + (size_t)px * P,
                           (size_t)P * sizeof(float));
        }
}

/* the pixel shuffle (see the top): x [gy][gx][dim] → out [(gy/s)·(gx/s)][dim·s²] */
static void pixel_shuffle(const float *x, int gx, int gy, int dim, int s, float *out) {
    const int ox = gx / s, oy = gy / s;
    for (int Y = 0; Y < oy; Y++)
        for (int X = 0; X < ox; X++) {
            float *row = out + ((size_t)Y * ox + X) * dim * s * s;
            for (int dy = 0; dy < s; dy++)
                for (int dx = 0; dx < s; dx++)
                    memcpy(row + (size_t)(dy * s + dx) * dim, x + ((size_t)(Y * s + dy) * gx + (size_t)(X * s + dx)) * dim,
                           (size_t)dim * sizeof(float));
        }
}

/* lfm2: the position table (side² rows of dim) resized to gx × gy (see the top), into out [gy][gx][dim]:
 * ggml-cpu's upscale with GGML_SCALE_FLAG_ANTIALIAS, its sums in the same order (source rows outer,
 * columns inner, weights ≤ 0 skipped) */
static void resize_positions(const float *table, int side, int dim, int gx, int gy, float *out) {
    const float sf0 = (float)gx / (float)side, sf1 = (float)gy / (float)side;
    const float support0 = fmaxf(1.0f, 1.0f / sf0), invscale0 = 1.0f / support0;
    const float support1 = fmaxf(1.0f, 1.0f / sf1), invscale1 = 1.0f / support1;
    for (int i1 = 0; i1 < gy; i1++) {
        const float y = ((float)i1 + 0.5f) / sf1;
        int64_t y_min = (int64_t)(y - support1 + 0.5f), y_max = (int64_t)(y + support1 + 0.5f);
        if (y_min < 0) y_min = 0;
        if (y_max > side) y_max = side;
        for (int i0 = 0; i0 < gx; i0++) {
            const float x = ((float)i0 + 0.5f) / sf0;
            int64_t x_min = (int64_t)(x - support0 + 0.5f), x_max = (int64_t)(x + support0 + 0.5f);
            if (x_min < 0) x_min = 0;
            if (x_max > side) x_max = side;
            float *o = out + ((size_t)i1 * gx + i0) * dim;
            for (int d = 0; d < dim; d++) {
                float val = 0.0f, total = 0.0f;
                for (int64_t sy = y_min; sy < y_max; sy++) {
                    const float wy = fmaxf(1.0f - fabsf(((float)sy - y + 0.5f) * invscale1), 0.0f);
                    for (int64_t sx = x_min; sx < x_max; sx++) {
                        const float wx = fmaxf(1.0f - fabsf(((float)sx - x + 0.5f) * invscale0), 0.0f), w = wx * wy;
                        if (w <= 0.0f) continue;
                        val += table[((size_t)sy * side + (size_t)sx) * dim + d] * w;
                        total += w;
                    }
                }
                o[d] = total > 0.0f ? val / total : val;
            }
        }
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
static void tower_layers(const vision_model *v, struct wick_ctx *c, int n) {
    const model_config *mc = &v->tower.config;
    const int dim = mc->dim, ff = v->n_ff;
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

/* lfm2's projector over the tower's output c->x (gx × gy patches) into out: the unshuffled rows
 * (into c->hb), their LayerNorm where the file has one, then mm.1, GELU, mm.2 */
static int project_lfm2(const vision_model *v, struct wick_ctx *c, int gx, int gy, float *out, errmsg *err) {
    const int dim = v->tower.config.dim, s = v->n_merge, merged = dim * s * s, n_out = (gx / s) * (gy / s);
    const int n_mm = (int)v->mm_1.rows;
    act_rows in;
    pixel_shuffle(c->x, gx, gy, dim, s, c->hb);
    if (v->input_norm_w) layernorm_rows(c->hb, v->input_norm_w, v->input_norm_b, n_out, merged, LFM2_INPUT_NORM_EPS);
    else if (v->input_norm_b)
        for (int p = 0; p < n_out; p++) add_rows(c->hb + (size_t)p * merged, v->input_norm_b, (size_t)merged);
    float *hidden = malloc((size_t)n_out * n_mm * sizeof *hidden);
    if (!hidden) return errorf(err, WICK_ERR_NOMEM, "out of memory for the projector's %d × %d values", n_out, n_mm);
    act_init(&in, c, c->hb, n_out, merged);
    matmul(c, &v->mm_1, &in, hidden, n_mm, v->mm_1_b);
    for (size_t i = 0; i < (size_t)n_out * n_mm; i++) hidden[i] = gelu_f16(hidden[i]);
    act_init(&in, c, hidden, n_out, n_mm);
    matmul(c, &v->mm_2, &in, out, v->n_embd_text, v->mm_2_b);
    free(hidden);
    return 0;
}

int vision_encode(const vision_model *v, const float *pixels, int32_t nx, int32_t ny, int32_t n_threads, float *out, errmsg *err) {
    if (!v->tower.has_weights) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no mmproj loaded");
    if (!pixels || !out) return errorf(err, WICK_ERR_INVALID_ARG, "vision: no image or no output");
    const int P = v->patch_size, dim = v->tower.config.dim, s = v->n_merge;
    const bool lfm2 = v->projector == PROJECTOR_LFM2;
    /* lfm2's images are whole blocks of P·s of any shape within max_patches; the others' image_size² */
    const int64_t block = lfm2 ? (int64_t)P * s : v->image_size;
    if (nx < 1 || ny < 1 || nx % block || ny % block || (!lfm2 && (nx != v->image_size || ny != v->image_size)) ||
        ((int64_t)nx / P) * (ny / P) > v->max_patches)
        return errorf(err, WICK_ERR_INVALID_ARG, "vision: an image of %d × %d pixels is not one this encoder takes", nx, ny);
    const int gx = nx / P, gy = ny / P, n = gx * gy;
    wick_ctx_params p = {0};
    p.n_ctx = p.n_batch = n;
    p.n_threads = n_threads;
    struct wick_ctx c;
    if (ctx_init(&c, &v->tower, &p, err)) return -1;
    /* x = patches·W_patchᵀ + b_patch, + the position embeddings (resized to the grid where it is not
     * the table's), then pre_ln where the file has one; the flattened patches take c->hb, as wide as
     * the widest row (read_config) */
    act_rows in;
    float *resized = NULL;
    const float *pos = v->pos_embd;
    if (pos && (gx != v->n_side || gy != v->n_side)) {
        resized = malloc((size_t)n * dim * sizeof *resized);
        if (!resized) {
            ctx_release(&c);
            return errorf(err, WICK_ERR_NOMEM, "out of memory for %d position embeddings", n);
        }
        resize_positions(v->pos_embd, v->n_side, dim, gx, gy, resized);
        pos = resized;
    }
    flatten_patches(v, pixels, nx, ny, c.hb);
    act_init(&in, &c, c.hb, n, (int)v->patch_embd.cols);
    matmul(&c, &v->patch_embd, &in, c.x, dim, v->patch_b);
    if (pos) add_rows(c.x, pos, (size_t)n * dim);
    free(resized);
    if (v->tower.embd_norm) layernorm_rows(c.x, v->tower.embd_norm, v->tower.embd_norm_b, n, dim, v->tower.config.rms_eps);
    tower_layers(v, &c, n);
    int rc = 0;
    if (v->projector == PROJECTOR_GEMMA3) {
        /* gemma3: the pooled rows (into c->hb), RMS-normed, through the input projection into out */
        avg_pool(c.x, v->n_side, dim, s, c.hb);
        for (int q = 0; q < v->n_out; q++) rmsnorm(c.hb + (size_t)q * dim, c.hb + (size_t)q * dim, v->soft_emb_norm, dim, v->tower.config.rms_eps);
        act_init(&in, &c, c.hb, v->n_out, dim);
        matmul(&c, &v->input_proj, &in, out, v->n_embd_text, NULL);
    } else if (lfm2) {
        rc = project_lfm2(v, &c, gx, gy, out, err);
    } else {
        /* idefics3: the shuffled rows (into c->hb) through mm.model.fc, straight into out */
        pixel_shuffle(c.x, gx, gy, dim, s, c.hb);
        act_init(&in, &c, c.hb, v->n_out, dim * s * s);
        matmul(&c, &v->fc, &in, out, v->n_embd_text, NULL);
    }
    ctx_release(&c);
    return rc;
}
