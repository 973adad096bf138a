/* vision.c — an image encoder from an mmproj GGUF file, as llama.cpp's tools/mtmd computes it:
 * the file read and checked as clip.cpp's clip_model_loader reads it (keys clip.* and
 * clip.vision.*, tensors v.* and mm.*: clip-impl.h's KEY_ and TN_ names), the SigLIP vision
 * transformer of clip_graph::build_vit, and the projectors of models/siglip.cpp: idefics3 (SmolVLM),
 * gemma3 (Gemma 3) and lfm2 (LFM2-VL); and the Qwen-VL towers (below). With x the image's patches (P × P pixels of 3 channels,
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
 * The qwen projectors (models/qwen2vl.cpp for qwen2vl_merger and qwen2.5vl_merger, models/qwen3vl.cpp
 * for qwen3vl_merger) run the tower at each picture's own size (gx × gy patches, both even), its
 * patches taken 2 × 2: each merged position's four patches (dy outer, dx inner) consecutive,
 * positions row by row of the (gx/2) × (gy/2) grid:
 *     x = p·W_0ᵀ + p·W_1ᵀ (+ b_patch) (+ pos_embd resized)  the two frames' kernels of a still picture
 *                                                            (v.patch_embd.weight, .weight.1); qwen3vl's
 *                                                            bias and table, bilinear with aligned corners
 *     for each layer:
 *         h = Norm(x) (ln1: RMS for qwen2.5vl, LayerNorm for the others)
 *         q, k, v = h·Wqᵀ + bq, … (qwen3vl: one attn_qkv matrix, its rows q, k, v)
 *         q, k = rope2d(q), rope2d(k)                     ggml's rope_multi, GGML_ROPE_TYPE_VISION
 *         x = x + softmax(q·Kᵀ / √head_dim)·V·Woᵀ + bo      qwen2.5vl: within windows, except in layers
 *                                                            with (l + 1) % n_wa_pattern = 0 (whole picture)
 *         h = Norm(x) (ln2)
 *         x = x + act(h·W_upᵀ + b_up)·W_downᵀ + b_down     act as the file says (GELU, SiLU, GELU-quick), or
 *                                                            gated: act(h·W_gateᵀ + b_gate) ⊙ (h·W_upᵀ + b_up)
 *         qwen3vl, a deepstack layer: d_l = fc2(GELU(fc1(Norm(x merged 4 to a row))))
 *     y = mm.2(GELU(mm.0(Norm(x) (post_ln) merged 4 to a row)))  then qwen3vl's d_l after it, in layer order
 * The rope turns pair k of each head, (x[k], x[k + head_dim/2]), by the patch's row times s^k in
 * the first quarter of the pairs and by its column times s^(k − head_dim/4) in the second, s =
 * 10000^(−4/head_dim). qwen2.5vl's windows (clip.cpp's window index and mask) are squares of 112
 * pixels (window² merged positions) from the top left, row by row: the tower takes the positions
 * window by window (each window's row by row), and its output is put back in raster order.
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
 * PAD_CEIL, the tiles row by row, then the thumbnail (the smart size) last. The qwen projectors
 * (mtmd_image_preprocessor_dyn_size): one image at the smart size in blocks of 2P within clip.cpp's
 * budget of 8 to 4096 positions, resized bicubic with PAD_CEIL on black.
 * Each resize is Pillow's separable resampling (libImaging/Resample.c, as img_tool::resize_pillow
 * follows it). */
#include "vision.h"

#include "attention.h"
#include "context.h"
#include "elementwise.h"
#include "encoder.h"
#include "matmul.h"
#include "quant.h"

#include <float.h>
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
/* qwen2vl, qwen2.5vl, qwen3vl: clip.cpp's set_limit_image_tokens(8, 4096) (Qwen2.5-VL's
 * preprocessor_config.json), whatever the file says; qwen2.5vl's window, clip.cpp's default
 * attn_window_size of 112 pixels (Qwen2.5-VL's window_size) */
#define QWEN_MIN_TOKENS 8
#define QWEN_MAX_TOKENS 4096
#define QWEN25_WINDOW_PIXELS 112
/* gemma4v: clip.cpp's set_limit_image_tokens(70, 1120), its pooling window of 3 where the file has no
 * projector.scale_factor, and its rope base of 100 (hparams.rope_theta: no key is read) */
#define GEMMA4V_MIN_TOKENS 70
#define GEMMA4V_MAX_TOKENS 1120
#define GEMMA4V_POOL 3
#define GEMMA4V_ROPE_THETA 100.0f
/* mm.input_norm's eps: clip.cpp's ggml_norm(…, 1e-5) (torch's nn.LayerNorm default) */
#define LFM2_INPUT_NORM_EPS 1e-5f

const char *vision_projector_name(vision_projector p) {
    switch (p) {
    case PROJECTOR_IDEFICS3: return "idefics3";
    case PROJECTOR_GEMMA3: return "gemma3";
    case PROJECTOR_LFM2: return "lfm2";
    case PROJECTOR_QWEN2VL: return "qwen2vl_merger";
    case PROJECTOR_QWEN25VL: return "qwen2.5vl_merger";
    case PROJECTOR_QWEN3VL: return "qwen3vl_merger";
    case PROJECTOR_GEMMA4V: return "gemma4v";
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

/* qwen: the merger of 2 × 2 (qwen2vl.cpp and qwen3vl.cpp build no other), the token budget
 * (clip.cpp: set_limit_image_tokens(8, 4096) for the three, whatever the file says) and qwen2.5vl's
 * window attention: clip.vision.n_wa_pattern (required, as clip.cpp requires it of 2.5) and the
 * window of clip.cpp's attn_window_size default, 112 pixels (it reads no key for 2.5), in merged
 * positions: 112 / P / 2, rounded down as clip.cpp divides. qwen2vl with a window pattern is
 * refused: llama.cpp would build windows for it without filling their indices. */
static int read_qwen_config(vision_model *v, errmsg *err) {
    const gguf_file *g = &v->tower.gguf;
    if (v->n_merge != 2)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: spatial_merge_size %d (the qwen merger takes 2 × 2 patches only)", v->n_merge);
    const int64_t block = 2LL * v->patch_size, area = block * block;
    if (QWEN_MAX_TOKENS * area > 1 << 30)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: patches of %d pixels make the qwen token budget too large", v->patch_size);
    v->min_pixels = (int32_t)(QWEN_MIN_TOKENS * area);
    v->max_pixels = (int32_t)(QWEN_MAX_TOKENS * area);
    v->max_patches = 4 * QWEN_MAX_TOKENS;
    if (v->projector == PROJECTOR_QWEN3VL) return 0;
    const bool qwen25 = v->projector == PROJECTOR_QWEN25VL;
    if (key_int(g, "clip.vision.n_wa_pattern", 0, 1 << 20, !qwen25, &v->n_wa_pattern, err)) return -1;
    if (!qwen25 && v->n_wa_pattern)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: qwen2vl_merger with window attention (n_wa_pattern %d) is not supported", v->n_wa_pattern);
    v->window = QWEN25_WINDOW_PIXELS / v->patch_size / 2;
    if (v->n_wa_pattern && v->window < 1)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: patches of %d pixels leave no window of %d pixels", v->patch_size, QWEN25_WINDOW_PIXELS);
    return 0;
}

/* gemma4v: the pooling window (n_merge), the token budget (clip.cpp: set_limit_image_tokens(70,
 * 1120), whatever the file says) in pixels of (P·n_merge)² per position, and the rope's base. Each
 * head's rope turns two quarters of pairs (x, then y): a head size of a multiple of 4 (read_config
 * asks for 8). */
static int read_gemma4v_config(vision_model *v, errmsg *err) {
    const int64_t block = (int64_t)v->patch_size * v->n_merge, area = block * block;
    if (GEMMA4V_MAX_TOKENS * area > 1 << 30)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: blocks of %lld pixels make gemma4v's token budget too large", (long long)block);
    v->min_pixels = (int32_t)(GEMMA4V_MIN_TOKENS * area);
    v->max_pixels = (int32_t)(GEMMA4V_MAX_TOKENS * area);
    v->max_patches = GEMMA4V_MAX_TOKENS * v->n_merge * v->n_merge;
    v->rope_theta = GEMMA4V_ROPE_THETA;
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
    bool known = false;
    for (int p = PROJECTOR_IDEFICS3; p <= PROJECTOR_GEMMA4V; p++)
        if (gguf_str_eq(s, vision_projector_name((vision_projector)p))) v->projector = (vision_projector)p, known = true;
    if (!known)
        return errorf(err, WICK_ERR_UNSUPPORTED,
                      "mmproj: projector '%.*s' is not supported (supported: idefics3, gemma3, lfm2, qwen2vl_merger, qwen2.5vl_merger, qwen3vl_merger, gemma4v)",
                      (int)(s.len < 64 ? s.len : 64), s.ptr);
    const bool idefics3 = v->projector == PROJECTOR_IDEFICS3, lfm2 = v->projector == PROJECTOR_LFM2, qwen = vision_is_qwen(v);
    const bool gemma4v = v->projector == PROJECTOR_GEMMA4V, dyn = vision_dyn_size(v);
    const bool shuffles = idefics3 || lfm2; /* a pixel (un)shuffle whose factor the file must give */
    /* gemma3: clip.cpp's default pooling window of 4 (every Gemma 3 size), the key only in test models;
     * qwen: the merger's 2 × 2; gemma4v: clip.cpp's default of 3 */
    v->n_merge = idefics3 ? 0 : qwen ? 2 : gemma4v ? GEMMA4V_POOL : 4;
    bool gelu = false, silu = false;
    gguf_get_bool(g, "clip.use_gelu", &gelu);
    gguf_get_bool(g, "clip.use_silu", &silu);
    if (gelu && silu) return errorf(err, WICK_ERR_FORMAT, "mmproj: both clip.use_gelu and clip.use_silu are set");
    /* clip.cpp's hparams.ffn_op: GELU, SiLU, else GELU-quick; the SigLIP towers here are GELU's
     * (gemma4v's converter writes neither key: llama.cpp runs its gated MLP with GELU-quick) */
    v->ffn_op = gelu ? VISION_FFN_GELU : silu ? VISION_FFN_SILU : VISION_FFN_GELU_QUICK;
    if (!dyn && v->ffn_op != VISION_FFN_GELU)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: the tower's MLP must use GELU (clip.use_gelu); GELU-quick and SiLU are not supported");
    v->rms_norm = v->projector == PROJECTOR_QWEN25VL || gemma4v; /* build_vit's NORM_TYPE_RMS */

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
        (!qwen && key_int(g, "clip.vision.projector.scale_factor", shuffles ? 2 : 1, gemma4v ? 16 : 64, !shuffles, &v->n_merge, err)) ||
        (qwen && key_int(g, "clip.vision.spatial_merge_size", 1, 64, true, &v->n_merge, err)) ||
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
    if (!dyn && v->n_side % v->n_merge)
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
    if (qwen && read_qwen_config(v, err)) return -1;
    if (gemma4v && read_gemma4v_config(v, err)) return -1;

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
    int64_t merged = shuffles || qwen ? (int64_t)dim * v->n_merge * v->n_merge : dim;
    if (patch_cols > widest) widest = patch_cols;
    if (merged > widest) widest = merged;
    /* the context's scratch holds n_patches rows of the widest: kept under 2^28 floats (1 GiB), so
     * that no size of it wraps around wasm32's 32-bit size_t */
    if (widest * v->max_patches > 1 << 28)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches of rows of %lld values are too large", v->max_patches, (long long)widest);
    mc->hidden_dim = (int32_t)widest;
    mc->n_ctx_train = v->max_patches;
    mc->rms_eps = (float)eps;
    /* clip_graph's kq_scale; gemma4v's graph sets it to 1 (its queries and keys are RMS-normed per head) */
    mc->attn_scale = gemma4v ? 1.0f : 1.0f / sqrtf((float)mc->head_dim);
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
static int bind_patch_embd(vision_model *v, const char *name, weight *w, errmsg *err) {
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
    w->data = t->data;
    w->type = t->type;
    w->rows = dim;
    w->cols = 3 * p * p;
    w->row_bytes = quant_row_size(t->type, w->cols);
    w->offset = t->file_offset;
    return check_weight(w, name, err);
}

/* Tensors of other towers a file may hold, which this graph would leave out: refused rather than
 * ignored, each by the projectors whose graph leaves it out (a bit per vision_projector) */
#define BY(p) (1u << (p))
#define SIGLIP (BY(PROJECTOR_IDEFICS3) | BY(PROJECTOR_GEMMA3) | BY(PROJECTOR_LFM2))
#define QWEN2 (BY(PROJECTOR_QWEN2VL) | BY(PROJECTOR_QWEN25VL))
#define QWEN (QWEN2 | BY(PROJECTOR_QWEN3VL))
#define GEMMA4V BY(PROJECTOR_GEMMA4V)
static int refuse_unknown(vision_model *v, errmsg *err) {
    static const struct {
        const char *name;
        unsigned refused_by;
    } names[] = {
        {"v.class_embd", SIGLIP | QWEN | GEMMA4V},
        {"v.blk.0.ls1.weight", SIGLIP | QWEN | GEMMA4V},
        /* gemma4v's layer norms and output scale */
        {"v.blk.0.attn_q_norm.weight", SIGLIP | QWEN},
        {"v.blk.0.attn_k_norm.weight", SIGLIP | QWEN},
        {"v.blk.0.attn_post_norm.weight", SIGLIP | QWEN},
        {"v.blk.0.ffn_post_norm.weight", SIGLIP | QWEN},
        {"v.blk.0.out_scale.weight", SIGLIP | QWEN},
        /* the qwen towers' second frame and fused attention (qwen3vl), gated MLPs */
        {"v.patch_embd.weight.1", SIGLIP | GEMMA4V},
        {"v.blk.0.attn_qkv.weight", SIGLIP | GEMMA4V},
        {"v.blk.0.ffn_gate.weight", SIGLIP},
        /* qwen2vl.cpp's graph takes no patch bias (it asserts so) nor a position table; gemma4v.cpp no patch bias */
        {"v.patch_embd.bias", QWEN2 | GEMMA4V},
        {"v.position_embd.weight", QWEN2},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((names[i].refused_by & BY(v->projector)) && model_find_tensor(&v->tower, names[i].name))
            return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: tensor %s is not supported for %s", names[i].name, vision_projector_name(v->projector));
    return 0;
}
#undef BY
#undef SIGLIP
#undef QWEN2
#undef QWEN
#undef GEMMA4V

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

/* gemma4v: the clamps around the product by tensor `weight` (a name ending in .weight), where the
 * file gives them: clip.cpp's clamp_info_map reads <name>.input_max, .input_min, .output_max,
 * .output_min (the converter's Gemma4ClippableLinear scalars) with get_scalar, which takes an F32
 * tensor of exactly one value and leaves an absent bound at ±FLT_MAX. A NaN bound is refused
 * (ggml_clamp would turn every value into the other bound). */
static int read_clamp(vision_model *v, const char *weight, vision_clamp *cl, errmsg *err) {
    static const char *const parts[] = {"input_min", "input_max", "output_min", "output_max"};
    float *bounds[] = {&cl->in_min, &cl->in_max, &cl->out_min, &cl->out_max};
    const size_t stem = strlen(weight) - strlen(".weight");
    char name[128];
    for (int i = 0; i < 4; i++) {
        *bounds[i] = i % 2 ? FLT_MAX : -FLT_MAX;
        snprintf(name, sizeof name, "%.*s.%s", (int)stem, weight, parts[i]);
        const gguf_tensor *t = model_find_tensor(&v->tower, name);
        if (!t) continue;
        if (t->type != WICK_TYPE_F32) return errorf(err, WICK_ERR_FORMAT, "tensor %s: type %s where f32 was expected", name, quant_get(t->type)->name);
        if (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] != 1) return errorf(err, WICK_ERR_FORMAT, "tensor %s: a clamp bound must be one value", name);
        if (t->outside || !t->data) return errorf(err, WICK_ERR_FORMAT, "tensor %s: its data is not in the file", name);
        memcpy(bounds[i], t->data, sizeof(float));
        if (isnan(*bounds[i])) return errorf(err, WICK_ERR_FORMAT, "tensor %s: the clamp bound is NaN", name);
        if (i < 2) cl->in = true;
        else cl->out = true;
    }
    v->clamps |= cl->in || cl->out;
    return 0;
}

/* gemma4v: the position table v.position_embd.weight, [dim, pos_size, 2] (gemma4v.cpp's two views:
 * the x table, then the y table; F32, as its converter forces it) */
static int bind_gemma4v_positions(vision_model *v, errmsg *err) {
    const char *name = "v.position_embd.weight";
    const gguf_tensor *t = model_find_tensor(&v->tower, name);
    const int64_t dim = v->tower.config.dim;
    if (!t) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->n_dims != 3 || t->ne[0] != (uint64_t)dim || t->ne[1] < 1 || t->ne[1] > 1 << 20 || t->ne[2] != 2)
        return errorf(err, WICK_ERR_FORMAT, "tensor %s: shape [%llu, %llu, %llu] where [%lld, positions, 2] was expected", name,
                      (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2], (long long)dim);
    if (t->type != WICK_TYPE_F32) return errorf(err, WICK_ERR_UNSUPPORTED, "tensor %s: type %s is not supported (f32)", name, quant_get(t->type)->name);
    if (t->outside || !t->data || ((uintptr_t)t->data & 3)) return errorf(err, WICK_ERR_FORMAT, "tensor %s: its data is not in the file", name);
    v->pos_embd = t->data;
    v->pos_size = (int32_t)t->ne[1];
    return 0;
}

/* gemma4v: layer l's additions (see vision_layer_norms): the query and key norms over each head or
 * the whole row (clip.cpp's norm_per_head: the weight's length tells), the post norms, the output
 * scale, and the clamps of its seven products */
static int bind_gemma4v_layer(vision_model *v, int l, errmsg *err) {
    struct wick_model *m = &v->tower;
    vision_layer_norms *n = &v->norms[l];
    const int64_t dim = m->config.dim, hd = m->config.head_dim;
    char name[96];
#define NAME(part) (snprintf(name, sizeof name, "v.blk.%d." part, l), name)
    const gguf_tensor *qn = model_find_tensor(m, NAME("attn_q_norm.weight"));
    n->qk_norm_width = (int32_t)(qn && qn->ne[0] == (uint64_t)dim ? dim : hd);
    if (model_bind_floats(m, NAME("attn_q_norm.weight"), n->qk_norm_width, 1, true, &n->q_norm, err) ||
        model_bind_floats(m, NAME("attn_k_norm.weight"), n->qk_norm_width, 1, true, &n->k_norm, err) ||
        model_bind_floats(m, NAME("attn_post_norm.weight"), dim, 1, true, &n->attn_post_norm, err) ||
        model_bind_floats(m, NAME("ffn_post_norm.weight"), dim, 1, true, &n->ffn_post_norm, err))
        return -1;
    const gguf_tensor *os = model_find_tensor(m, NAME("out_scale.weight"));
    n->out_scale_len = (int32_t)(os && os->ne[0] == 1 ? 1 : dim);
    if (model_bind_floats(m, name, n->out_scale_len, 1, true, &n->out_scale, err)) return -1;
    static const char *const products[CLAMP_LAYER_N] = {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"};
    for (int i = 0; i < CLAMP_LAYER_N; i++) {
        snprintf(name, sizeof name, "v.blk.%d.%s.weight", l, products[i]);
        if (read_clamp(v, name, &n->clamp[i], err)) return -1;
    }
#undef NAME
    return 0;
}

/* gemma4v: the standardization (v.std_bias, v.std_scale: gemma4v.cpp applies it only where both are
 * there) and the input projection mm.input_projection [n_embd_text][dim] (a plain product, unlike
 * gemma3's: clip_n_mmproj_embd takes its ne[1]) with its clamps */
static int bind_gemma4v(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t dim = m->config.dim;
    const char *name = "mm.input_projection.weight";
    if (model_bind_floats(m, "v.std_bias", dim, 1, true, &v->std_bias, err) || model_bind_floats(m, "v.std_scale", dim, 1, true, &v->std_scale, err))
        return -1;
    if (!v->std_bias || !v->std_scale) v->std_bias = v->std_scale = NULL;
    const gguf_tensor *t = model_find_tensor(m, name);
    if (!t) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (t->ne[1] < 1 || t->ne[1] > 1 << 20) return errorf(err, WICK_ERR_FORMAT, "tensor %s: %llu output rows", name, (unsigned long long)t->ne[1]);
    v->n_embd_text = (int32_t)t->ne[1];
    return bind_matrix(v, name, v->n_embd_text, dim, &v->input_proj, err) || read_clamp(v, name, &v->input_proj_clamp, err) ? -1 : 0;
}

/* A hidden width the context's scratch rows must hold (an MLP's between its two matrices) */
static int widen_hidden(vision_model *v, int64_t width, errmsg *err) {
    model_config *mc = &v->tower.config;
    if (width <= mc->hidden_dim) return 0;
    if (width * v->max_patches > 1 << 28)
        return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: %d patches of rows of %lld values are too large", v->max_patches, (long long)width);
    mc->hidden_dim = (int32_t)width;
    return 0;
}

/* The projector's MLP of lfm2 and qwen: mm.<first> (in_width → n_mm, its rows the file's) into *w1
 * and *b1, then mm.2 (n_mm → n_embd_text, which it sets) into mm_2, each with its bias, as clip.cpp
 * loads them (lfm2: mm.1, qwen: mm.0, TN_LLAVA_PROJ); the hidden rows are an input of a product
 * too: the context's scratch rows hold them */
static int bind_mm_mlp(vision_model *v, const char *first, int64_t in_width, weight *w1, const float **b1, errmsg *err) {
    struct wick_model *m = &v->tower;
    char w1_name[32], b1_name[32];
    snprintf(w1_name, sizeof w1_name, "mm.%s.weight", first);
    snprintf(b1_name, sizeof b1_name, "mm.%s.bias", first);
    const gguf_tensor *t1 = model_find_tensor(m, w1_name), *t2 = model_find_tensor(m, "mm.2.weight");
    if (!t1) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", w1_name);
    if (!t2) return errorf(err, WICK_ERR_FORMAT, "tensor mm.2.weight is missing");
    if (t1->ne[1] < 1 || t1->ne[1] > 1 << 18) return errorf(err, WICK_ERR_FORMAT, "tensor %s: %llu output rows", w1_name, (unsigned long long)t1->ne[1]);
    if (t2->ne[1] < 1 || t2->ne[1] > 1 << 20)
        return errorf(err, WICK_ERR_FORMAT, "tensor mm.2.weight: %llu output rows", (unsigned long long)t2->ne[1]);
    const int64_t n_mm = (int64_t)t1->ne[1];
    v->n_embd_text = (int32_t)t2->ne[1];
    if (bind_matrix(v, w1_name, n_mm, in_width, w1, err) || model_bind_floats(m, b1_name, n_mm, 1, false, b1, err) ||
        bind_matrix(v, "mm.2.weight", v->n_embd_text, n_mm, &v->mm_2, err) ||
        model_bind_floats(m, "mm.2.bias", v->n_embd_text, 1, false, &v->mm_2_b, err))
        return -1;
    return widen_hidden(v, n_mm, err);
}

/* lfm2: the optional LayerNorm over the unshuffled rows (mm.input_norm, weight and bias) and the MLP
 * mm.1 (dim·s² → n_mm), mm.2 */
static int bind_lfm2(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t merged = (int64_t)m->config.dim * v->n_merge * v->n_merge;
    if (bind_mm_mlp(v, "1", merged, &v->mm_1, &v->mm_1_b, err)) return -1;
    return model_bind_floats(m, "mm.input_norm.weight", merged, 1, true, &v->input_norm_w, err) ||
                   model_bind_floats(m, "mm.input_norm.bias", merged, 1, true, &v->input_norm_b, err)
               ? -1
               : 0;
}

/* qwen3vl: layer l's attention as one matrix v.blk.l.attn_qkv [3·dim][dim] with its bias, the
 * query's rows first, then the key's, then the value's (qwen3vl.cpp's views at 0, dim and 2·dim): here
 * three views of it, each a product of its own, as one output column of ggml's is one dot product */
static int bind_qkv(vision_model *v, int l, layer_weights *w, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t dim = m->config.dim;
    char name[64];
    weight qkv;
    const float *b;
    snprintf(name, sizeof name, "v.blk.%d.attn_qkv.weight", l);
    if (bind_matrix(v, name, 3 * dim, dim, &qkv, err)) return -1;
    snprintf(name, sizeof name, "v.blk.%d.attn_qkv.bias", l);
    if (model_bind_floats(m, name, 3 * dim, 1, true, &b, err)) return -1;
    weight *parts[] = {&w->wq, &w->wk, &w->wv};
    const float **biases[] = {&w->bq, &w->bk, &w->bv};
    for (int i = 0; i < 3; i++) {
        *parts[i] = qkv;
        parts[i]->rows = dim;
        parts[i]->data = (const uint8_t *)qkv.data + (size_t)i * dim * qkv.row_bytes;
        parts[i]->offset = qkv.offset + (uint64_t)i * dim * qkv.row_bytes;
        *biases[i] = b ? b + i * dim : NULL;
    }
    return 0;
}

/* qwen3vl: layer l's deepstack merger where the file has v.deepstack.l.fc1 (clip.cpp's has_deepstack),
 * all six tensors then; the key clip.vision.is_deepstack_layers, where the file has it, must say the same */
static int bind_deepstack(vision_model *v, int l, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t merged = 4LL * m->config.dim;
    char name[64];
    if (!v->deepstack && !(v->deepstack = calloc((size_t)m->config.n_layers, sizeof *v->deepstack)))
        return errorf(err, WICK_ERR_NOMEM, "out of memory");
    vision_deepstack *d = &v->deepstack[l];
    snprintf(name, sizeof name, "v.deepstack.%d.fc1.weight", l);
    const gguf_tensor *fc1 = model_find_tensor(m, name), *fc2;
    const gguf_kv *flags = gguf_get_arr(&m->gguf, "clip.vision.is_deepstack_layers", GGUF_BOOL);
    if (flags && (flags->arr_len != (uint64_t)m->config.n_layers || (gguf_arr_i64(flags, (uint64_t)l) != 0) != (fc1 != NULL)))
        return errorf(err, WICK_ERR_FORMAT, "mmproj: clip.vision.is_deepstack_layers does not match the deepstack tensors (layer %d)", l);
    if (!fc1) return 0;
    if (fc1->ne[1] < 1 || fc1->ne[1] > 1 << 18) return errorf(err, WICK_ERR_FORMAT, "tensor %s: %llu output rows", name, (unsigned long long)fc1->ne[1]);
    const int64_t hidden = (int64_t)fc1->ne[1];
    if (bind_matrix(v, name, hidden, merged, &d->fc1, err)) return -1;
    snprintf(name, sizeof name, "v.deepstack.%d.fc2.weight", l);
    if (!(fc2 = model_find_tensor(m, name))) return errorf(err, WICK_ERR_FORMAT, "tensor %s is missing", name);
    if (bind_matrix(v, name, (int64_t)fc2->ne[1], hidden, &d->fc2, err)) return -1;
#define DS(part, n_, out) (snprintf(name, sizeof name, "v.deepstack.%d." part, l), model_bind_floats(m, name, n_, 1, false, out, err))
    if (DS("norm.weight", merged, &d->norm_w) || DS("norm.bias", merged, &d->norm_b) || DS("fc1.bias", hidden, &d->fc1_b) ||
        DS("fc2.bias", d->fc2.rows, &d->fc2_b))
        return -1;
#undef DS
    v->n_deepstack++;
    return widen_hidden(v, hidden, err);
}

/* qwen: the merger mm.0 (dim·4 → n_mm), GELU, mm.2; qwen3vl's deepstack mergers give rows of n_embd_text too */
static int bind_qwen_merger(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    if (bind_mm_mlp(v, "0", 4LL * m->config.dim, &v->mm_0, &v->mm_0_b, err)) return -1;
    for (int l = 0; v->deepstack && l < m->config.n_layers; l++)
        if (v->deepstack[l].fc1.data && v->deepstack[l].fc2.rows != v->n_embd_text)
            return errorf(err, WICK_ERR_FORMAT, "tensor v.deepstack.%d.fc2.weight: %lld output rows where mm.2 has %d", l,
                          (long long)v->deepstack[l].fc2.rows, v->n_embd_text);
    return 0;
}

static int bind_weights(vision_model *v, errmsg *err) {
    struct wick_model *m = &v->tower;
    const int64_t dim = m->config.dim, ff = v->n_ff;
    char name[96], up[96], down[96];
    const bool qwen = vision_is_qwen(v), qwen3 = v->projector == PROJECTOR_QWEN3VL, gemma4v = v->projector == PROJECTOR_GEMMA4V;
    if (refuse_unknown(v, err) || bind_patch_embd(v, "v.patch_embd.weight", &v->patch_embd, err) ||
        (qwen && bind_patch_embd(v, "v.patch_embd.weight.1", &v->patch_embd_1, err)) ||
        model_bind_floats(m, "v.patch_embd.bias", dim, 1, !qwen3, &v->patch_b, err) ||
        (gemma4v ? bind_gemma4v_positions(v, err) : model_bind_floats(m, "v.position_embd.weight", dim, v->n_patches, !qwen3, &v->pos_embd, err)) ||
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
        /* a layer's keys and values serve only its own attention, over before the next layer's: one
         * cache, layer 0's, serves every layer in turn (the context keeps none for the others, as for
         * forward.c's layers that read another's), a tower's cache the size of one layer's */
        w->kv_layer = 0;
#define NAME(part) (snprintf(name, sizeof name, "v.blk.%d." part, l), name)
        if (qwen3 ? bind_qkv(v, l, w, err)
                  : bind_matrix(v, NAME("attn_q.weight"), dim, dim, &w->wq, err) ||
                        bind_matrix(v, NAME("attn_k.weight"), dim, dim, &w->wk, err) ||
                        bind_matrix(v, NAME("attn_v.weight"), dim, dim, &w->wv, err) ||
                        model_bind_floats(m, NAME("attn_q.bias"), dim, 1, true, &w->bq, err) ||
                        model_bind_floats(m, NAME("attn_k.bias"), dim, 1, true, &w->bk, err) ||
                        model_bind_floats(m, NAME("attn_v.bias"), dim, 1, true, &w->bv, err))
            return -1;
        if (bind_matrix(v, NAME("attn_out.weight"), dim, dim, &w->wo, err) ||
            model_bind_floats(m, NAME("attn_out.bias"), dim, 1, true, &w->bo, err) ||
            model_bind_floats(m, NAME("ln1.weight"), dim, 1, false, &n->ln1_w, err) ||
            model_bind_floats(m, NAME("ln1.bias"), dim, 1, true, &n->ln1_b, err) ||
            model_bind_floats(m, NAME("ln2.weight"), dim, 1, false, &n->ln2_w, err) ||
            model_bind_floats(m, NAME("ln2.bias"), dim, 1, true, &n->ln2_b, err))
            return -1;
        /* clip.cpp swaps ffn_up and ffn_down (weights and biases) in idefics3, gemma3, qwen2vl and
         * qwen2.5vl files whose ffn_down takes rows of dim (older conversions named them the other
         * way round); not in lfm2's, qwen3vl's nor gemma4v's */
        const gguf_tensor *d = model_find_tensor(m, NAME("ffn_down.weight"));
        bool swapped = d && d->ne[0] == (uint64_t)dim && v->projector != PROJECTOR_LFM2 && !qwen3 && !gemma4v;
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
        /* qwen, gemma4v: a gated MLP where the file has ffn_gate (qwen2.5vl, gemma4v): act(gate) ⊙ up */
        snprintf(name, sizeof name, "v.blk.%d.ffn_gate.weight", l);
        if ((qwen || gemma4v) && model_find_tensor(m, name)) {
            if (qwen && v->ffn_op == VISION_FFN_GELU_QUICK)
                return errorf(err, WICK_ERR_UNSUPPORTED, "mmproj: a gated MLP with GELU-quick (neither clip.use_gelu nor clip.use_silu) is not supported");
            if (bind_matrix(v, name, ff, dim, &w->w_gate, err)) return -1;
            snprintf(name, sizeof name, "v.blk.%d.ffn_gate.bias", l);
            if (model_bind_floats(m, name, ff, 1, true, &n->ffn_gate_b, err)) return -1;
        }
        if (qwen3 && bind_deepstack(v, l, err)) return -1;
        if (gemma4v && bind_gemma4v_layer(v, l, err)) return -1;
    }
    if (v->projector == PROJECTOR_GEMMA3) return bind_gemma3(v, err);
    if (gemma4v) return bind_gemma4v(v, err);
    if (v->projector == PROJECTOR_LFM2) return bind_lfm2(v, err);
    if (qwen) return bind_qwen_merger(v, err);
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
    free(v->deepstack);
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

/* lfm2, qwen (mtmd_image_preprocessor_lfm2's thumbnail, mtmd_image_preprocessor_dyn_size):
 * img_tool::calc_size_preserved_ratio with the budget (min_pixels … max_pixels), aligned to
 * blocks of f = P·s, in float as llama.cpp computes it: each side rounded to whole blocks (at least
 * one); above the budget both scaled down by β = √(w·h / max) and floored to blocks (at least one),
 * below it scaled up by β = √(min / (w·h)) and ceiled to blocks */
static void smart_size(const vision_model *v, int w, int h, int *ow, int *oh) {
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
    float best_diff = FLT_MAX; /* every candidate is nearer */
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
    case PROJECTOR_QWEN2VL:
    case PROJECTOR_QWEN25VL:
    case PROJECTOR_QWEN3VL:
    case PROJECTOR_GEMMA4V:
    case PROJECTOR_LFM2: {
        int ow, oh;
        smart_size(v, width, height, &ow, &oh);
        /* a picture far from square can make a long thin image: within the sides and patches taken */
        const int64_t patches = ((int64_t)ow / v->patch_size) * (oh / v->patch_size);
        if (ow > VISION_MAX_SIDE || oh > VISION_MAX_SIDE || patches > v->max_patches)
            return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels make an image of %d × %d, more than an image may be (%d patches)",
                          width, height, ow, oh, v->max_patches);
        /* gemma4v: each patch's column and row index its position tables */
        if (v->projector == PROJECTOR_GEMMA4V && (ow / v->patch_size > v->pos_size || oh / v->patch_size > v->pos_size))
            return errorf(err, WICK_ERR_INVALID_ARG, "image: %d × %d pixels make an image of %d × %d patches, more than the %d positions of the file's tables",
                          width, height, ow / v->patch_size, oh / v->patch_size, v->pos_size);
        plan->last_nx = ow, plan->last_ny = oh;
        /* qwen, gemma4v: the one image at the smart size */
        if (v->projector != PROJECTOR_LFM2) break;
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

void vision_grid_of(const vision_model *v, int32_t nx, int32_t ny, int32_t *gx, int32_t *gy) {
    const int32_t block = v->patch_size * v->n_merge;
    if (vision_dyn_size(v)) { /* clip_n_output_tokens_x / _y (qwen), the pooled grid (gemma4v): whole blocks, rounded down */
        *gx = nx / block;
        *gy = ny / block;
    } else if (v->projector == PROJECTOR_LFM2) {
        *gx = (nx + block - 1) / block;
        *gy = (ny + block - 1) / block;
    } else {
        *gx = *gy = v->n_side / v->n_merge;
    }
}

int32_t vision_positions_of(const vision_model *v, int32_t nx, int32_t ny) {
    if (v->projector != PROJECTOR_LFM2 && !vision_dyn_size(v)) return v->n_out;
    int32_t gx, gy;
    vision_grid_of(v, nx, ny, &gx, &gy);
    return gx * gy;
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

/* one image: the picture resized into nx × ny with img_tool::resize's PAD_CEIL on black, normalized into out */
static int prepare_one(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, int nx, int ny, resample_filter f,
                       float *out, errmsg *err) {
    uint8_t *img = NULL;
    if (resize_padded(rgb, width, height, nx, ny, f, &img, err)) return -1;
    normalize_rect(v, img, nx, 0, 0, nx, ny, out);
    free(img);
    return 0;
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
    case PROJECTOR_GEMMA3:
        /* mtmd_image_preprocessor_fixed_size with clip.cpp's gemma3 settings: bilinear, PAD_CEIL on black */
        rc = prepare_one(v, rgb, width, height, S, S, RESAMPLE_BILINEAR, b.pixels, err);
        break;
    case PROJECTOR_QWEN2VL:
    case PROJECTOR_QWEN25VL:
    case PROJECTOR_QWEN3VL:
    case PROJECTOR_GEMMA4V:
        /* mtmd_image_preprocessor_dyn_size with clip.cpp's qwen and gemma4v settings: the smart size,
         * bicubic, PAD_CEIL on black (which pads only where the smart size's aspect is not the picture's) */
        rc = prepare_one(v, rgb, width, height, plan.last_nx, plan.last_ny, RESAMPLE_BICUBIC, b.pixels, err);
        break;
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
 * (channel, y, x), one row of 3·P² per patch: row r the patch patch_of[r] (py·gx + px), or with
 * patch_of NULL the patches in rows top to bottom */
static void flatten_patches(const vision_model *v, const float *pixels, int nx, int ny, const int32_t *patch_of, float *rows) {
    const int P = v->patch_size, gx = nx / P, n = gx * (ny / P);
    for (int i = 0; i < n; i++) {
        const int patch = patch_of ? patch_of[i] : i, py = patch / gx, px = patch % gx;
        float *r = rows + (size_t)i * 3 * P * P;
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

/* gemma3's and gemma4v's average pooling (see the top): x [gy][gx][dim] → out [(gy/k)·(gx/k)][dim] */
static void avg_pool(const float *x, int gx, int gy, int dim, int k, float *out) {
    const int ox = gx / k, oy = gy / k;
    const float window = (float)(k * k);
    for (int Y = 0; Y < oy; Y++)
        for (int X = 0; X < ox; X++) {
            float *row = out + ((size_t)Y * ox + X) * dim;
            memset(row, 0, (size_t)dim * sizeof *row);
            for (int dy = 0; dy < k; dy++)
                for (int dx = 0; dx < k; dx++) add_rows(row, x + ((size_t)(Y * k + dy) * gx + (size_t)(X * k + dx)) * dim, (size_t)dim);
            for (int d = 0; d < dim; d++) row[d] /= window;
        }
}

/* rows of width values normed in place as the file's tower norms them: RMS (qwen2.5vl, gemma4v) or
 * LayerNorm, then ⊙ w and + b (where given), as clip_graph::build_norm; the LayerNorm takes w always */
static void norm_rows(const vision_model *v, float *x, const float *w, const float *b, int n, int width) {
    const float eps = v->tower.config.rms_eps;
    if (!v->rms_norm) {
        layernorm_rows(x, w, b, n, width, eps);
        return;
    }
    for (int t = 0; t < n; t++) {
        float *r = x + (size_t)t * width;
        double ss = 0; /* the sum of squares in double, the scale in float (ggml_rms_norm sums float products
                        * in ggml_float: the last bits may differ, as with the text model's rmsnorm) */
        for (int i = 0; i < width; i++) ss += (double)r[i] * r[i];
        const float scale = 1.0f / sqrtf((float)(ss / width) + eps);
        for (int i = 0; i < width; i++) r[i] = w ? r[i] * scale * w[i] : r[i] * scale;
        if (b) add_rows(r, b, (size_t)width);
    }
}

/* GELU-quick as llama.cpp's CPU backend computes it (ggml-cpu/vec.h, GGML_GELU_QUICK_FP16): x·σ(1.702·x)
 * of the input rounded to F16, the result rounded to F16 */
static float gelu_quick_f16(float x) {
    const float h = quant_round_f16(x);
    return quant_round_f16(h * (1.0f / (1.0f + expf(-1.702f * h))));
}

/* What the qwen towers and gemma4v add to a pass of the layers: each row's rotary angles, the windows, the deepstack rows */
typedef struct {
    const float *rope_cos, *rope_sin; /* [n][head_dim/2], or NULL: no rotary positions */
    int32_t rope_span;                /* the rotated pairs' span (rope_vision_apply); 0: head_dim/2 */
    float *clamped;                   /* gemma4v: room for a product's clamped input (n rows of the widest) */
    const int32_t *win_start;         /* qwen2.5vl: window i holds rows win_start[i] … win_start[i + 1] − 1; NULL: none */
    int32_t n_windows;
    float *deepstack_out;             /* qwen3vl: deepstack layer k's rows at columns (1 + k)·n_embd_text of rows of out_stride */
    int32_t out_stride;
} tower_pass;

/* The 2-D rotary positions: each head's head_dim/2 pairs in two sections of head_dim/4, the first
 * turned by the patch's `first` position, the second by its `second`, pair j of a section by
 * θ = pos·s^j (the section starts its θ afresh), s = base^(−2/(head_dim/2)); θ multiplied on as
 * ggml does, in float; cos and sin in double, rounded once (glibc's and musl's cosf differ).
 *  - qwen: ggml's rope_multi in GGML_ROPE_TYPE_VISION mode (ggml-cpu/ops.cpp) as qwen2vl.cpp asks
 *    for it (n_dims = head_dim/2, four sections of head_dim/4, base 10000, no YaRN): first the row,
 *    second the column (clip.cpp's positions: the first two of its four); pair k is (x[k], x[k + head_dim/2]);
 *  - gemma4v: two ggml_rope_ext in NEOX mode of n_dims = head_dim/2 (gemma4v.cpp's add_pos), base
 *    100, the first on the head's first half by the column (pos_x), the second on its second half
 *    (ggml_rope_set_offset) by the row (pos_y): pair j of a half is (x[j], x[j + head_dim/4]) within it. */
static void rope_vision_tables(int head_dim, float base, int n, const int32_t *first, const int32_t *second, float *cs, float *sn) {
    const int half = head_dim / 2, sect = head_dim / 4;
    const float scale = powf(base, -2.0f / (float)half);
    for (int t = 0; t < n; t++) {
        float theta_a = (float)first[t], theta_b = 0.0f;
        for (int k = 0; k < half; k++) {
            if (k == sect) theta_b = (float)second[t];
            const float theta = k < sect ? theta_a : theta_b;
            cs[(size_t)t * half + k] = (float)cos((double)theta);
            sn[(size_t)t * half + k] = (float)sin((double)theta);
            theta_a *= scale;
            theta_b *= scale;
        }
    }
}

/* rows (n of n_heads · head_dim) rotated in place by the tables: pair k turns (x[i], x[i + span]),
 * i = (k / span)·2·span + k % span (span head_dim/2: qwen's (k, k + head_dim/2); span head_dim/4:
 * gemma4v's two halves, each NEOX) */
static void rope_vision_apply(float *rows, int n, int n_heads, int head_dim, int span, const float *cs, const float *sn) {
    const int half = head_dim / 2;
    for (int t = 0; t < n; t++)
        for (int h = 0; h < n_heads; h++) {
            float *x = rows + ((size_t)t * n_heads + h) * head_dim;
            const float *c = cs + (size_t)t * half, *s = sn + (size_t)t * half;
            for (int k = 0; k < half; k++) {
                const int i = k / span * 2 * span + k % span;
                const float x0 = x[i], x1 = x[i + span];
                x[i] = x0 * c[k] - x1 * s[k];
                x[i + span] = x0 * s[k] + x1 * c[k];
            }
        }
}

/* rows first … first + n − 1 of c->k and c->v into cache layer l at positions 0 … n − 1 */
static void store_kv(struct wick_ctx *c, int l, int first, int n, int dim) {
    for (int p = 0; p < n; p++) {
        void *kc = kv_at(c, c->k_cache, l, p), *vc = kv_at(c, c->v_cache, l, p);
        for (int i = 0; i < dim; i++) {
            kv_store(c, kc, (size_t)i, c->k[(size_t)(first + p) * dim + i]);
            kv_store(c, vc, (size_t)i, c->v[(size_t)(first + p) * dim + i]);
        }
    }
}

/* layer l's attention of the n rows of c->q against c->k, c->v, into c->xb2: every row sees every
 * row; in a windowed layer (qwen2.5vl: windows given and (l + 1) % n_wa_pattern ≠ 0) only the rows
 * of its window (clip.cpp's window_mask; the rows come grouped by window). A window runs as a batch
 * of its own: its keys and values at the cache's first positions, c->q and c->xb2 pointed at its rows
 * for the call, then put back. */
static void tower_attention(const vision_model *v, struct wick_ctx *c, int l, int n, const tower_pass *tp) {
    const int dim = v->tower.config.dim, kl = v->tower.layers[l].kv_layer; /* the cache it uses (bind_weights) */
    if (!tp || !tp->win_start || (l + 1) % v->n_wa_pattern == 0) {
        store_kv(c, kl, 0, n, dim);
        attention(c, kl, 0, n, false);
        return;
    }
    float *q = c->q, *out = c->xb2;
    for (int i = 0; i < tp->n_windows; i++) {
        const int first = tp->win_start[i], len = tp->win_start[i + 1] - first;
        store_kv(c, kl, first, len, dim);
        c->q = q + (size_t)first * dim;
        c->xb2 = out + (size_t)first * dim;
        attention(c, kl, 0, len, false);
    }
    c->q = q;
    c->xb2 = out;
}

/* qwen3vl: layer l's deepstack merger over c->x (n rows of dim, merged 4 to a row) into tp's rows:
 * the norm over dim·4 (into c->hb), fc1, GELU, fc2 */
static void deepstack_rows(const vision_model *v, struct wick_ctx *c, int l, int k, int n, const tower_pass *tp) {
    const vision_deepstack *d = &v->deepstack[l];
    const int merged = 4 * v->tower.config.dim, m = n / 4, hidden = (int)d->fc1.rows;
    act_rows in;
    memcpy(c->hb, c->x, (size_t)n * v->tower.config.dim * sizeof(float));
    norm_rows(v, c->hb, d->norm_w, d->norm_b, m, merged);
    act_init(&in, c, c->hb, m, merged);
    matmul(c, &d->fc1, &in, c->hb2, hidden, d->fc1_b);
    for (size_t i = 0; i < (size_t)m * hidden; i++) c->hb2[i] = gelu_f16(c->hb2[i]);
    act_init(&in, c, c->hb2, m, hidden);
    matmul(c, &d->fc2, &in, tp->deepstack_out + (size_t)(1 + k) * v->n_embd_text, tp->out_stride, d->fc2_b);
}

/* out (n rows of out_stride) = x·Wᵀ (+ bias), x n rows of w->cols, as build_mm gives it; with a
 * clamp (gemma4v's Gemma4ClippableLinear), x clamped into tp->clamped first and the product
 * clamped before the bias is added (build_vit adds it after build_mm) */
static void clamp_rows(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        const float m = x[i] < hi ? x[i] : hi; /* ggml_clamp: MAX(MIN(x, hi), lo) */
        x[i] = m > lo ? m : lo;
    }
}

static void product(struct wick_ctx *c, const weight *w, const vision_clamp *cl, const float *x, int n, float *out, int out_stride,
                    const float *bias, const tower_pass *tp) {
    const int cols = (int)w->cols;
    act_rows in;
    if (cl && cl->in) {
        memcpy(tp->clamped, x, (size_t)n * cols * sizeof(float));
        clamp_rows(tp->clamped, (size_t)n * cols, cl->in_min, cl->in_max);
        x = tp->clamped;
    }
    act_init(&in, c, x, n, cols);
    const bool after = cl && cl->out;
    matmul(c, w, &in, out, out_stride, after ? NULL : bias);
    if (!after) return;
    for (int t = 0; t < n; t++) {
        float *row = out + (size_t)t * out_stride;
        clamp_rows(row, (size_t)w->rows, cl->out_min, cl->out_max);
        if (bias) add_rows(row, bias, (size_t)w->rows);
    }
}

/* the tower's layers over c->x (n patches of dim), its final norm included; tp: the qwen towers' and
 * gemma4v's additions, or NULL. gemma4v's layer (clip_graph::build_vit with its extras): the
 * products each through product() with its clamps, the query and key RMS-normed (q_norm, k_norm)
 * before the rope, the value RMS-normed per head without weight, attention unscaled (kq_scale 1),
 * attn_post_norm on the attention's output and ffn_post_norm on the MLP's before each residual
 * add, and the layer's output (the residual stream) multiplied by out_scale */
static void tower_layers(const vision_model *v, struct wick_ctx *c, int n, const tower_pass *tp) {
    const model_config *mc = &v->tower.config;
    const int dim = mc->dim, ff = v->n_ff, hd = mc->head_dim;
    const bool separate = v->clamps; /* products one by one (each its own clamped input) */
    act_rows in;
    for (int l = 0, k = 0; l < mc->n_layers; l++) {
        const layer_weights *w = &v->tower.layers[l];
        const vision_layer_norms *nm = &v->norms[l];
        const vision_clamp *cl = separate ? nm->clamp : NULL;
        memcpy(c->xb, c->x, (size_t)n * dim * sizeof(float));
        norm_rows(v, c->xb, nm->ln1_w, nm->ln1_b, n, dim);
        const weight *ws[] = {&w->wq, &w->wk, &w->wv};
        float *outs[] = {c->q, c->k, c->v};
        const int strides[] = {dim, dim, dim};
        const float *biases[] = {w->bq, w->bk, w->bv};
        if (separate) {
            for (int i = 0; i < 3; i++) product(c, ws[i], &cl[CLAMP_Q + i], c->xb, n, outs[i], dim, biases[i], tp);
        } else {
            act_init(&in, c, c->xb, n, dim);
            matmul_group(c, &in, 3, ws, outs, strides, biases, false, ACT_SILU);
        }
        if (nm->q_norm) norm_rows(v, c->q, nm->q_norm, NULL, n * dim / nm->qk_norm_width, nm->qk_norm_width);
        if (nm->k_norm) norm_rows(v, c->k, nm->k_norm, NULL, n * dim / nm->qk_norm_width, nm->qk_norm_width);
        if (tp && tp->rope_cos) {
            const int span = tp->rope_span ? tp->rope_span : hd / 2;
            rope_vision_apply(c->q, n, mc->n_heads, hd, span, tp->rope_cos, tp->rope_sin);
            rope_vision_apply(c->k, n, mc->n_heads, hd, span, tp->rope_cos, tp->rope_sin);
        }
        if (v->projector == PROJECTOR_GEMMA4V) norm_rows(v, c->v, NULL, NULL, n * mc->n_heads, hd);
        tower_attention(v, c, l, n, tp);
        product(c, &w->wo, cl ? &cl[CLAMP_O] : NULL, c->xb2, n, c->xb, dim, w->bo, tp);
        if (nm->attn_post_norm) norm_rows(v, c->xb, nm->attn_post_norm, NULL, n, dim);
        add_rows(c->x, c->xb, (size_t)n * dim);

        /* the MLP: down(act(up)), or gated (qwen2.5vl, gemma4v) down(act(gate) ⊙ up) */
        memcpy(c->xb, c->x, (size_t)n * dim * sizeof(float));
        norm_rows(v, c->xb, nm->ln2_w, nm->ln2_b, n, dim);
        if (w->w_gate.data && (separate || v->ffn_op == VISION_FFN_GELU_QUICK)) {
            /* act(gate) ⊙ up as ggml's geglu_quick / geglu / swiglu split ops give it */
            product(c, &w->w_gate, cl ? &cl[CLAMP_GATE] : NULL, c->xb, n, c->hb, ff, nm->ffn_gate_b, tp);
            product(c, &w->w_up, cl ? &cl[CLAMP_UP] : NULL, c->xb, n, c->hb2, ff, w->ffn_up_b, tp);
            for (size_t i = 0; i < (size_t)n * ff; i++) {
                const float g = c->hb[i];
                c->hb[i] = (v->ffn_op == VISION_FFN_GELU ? gelu_f16(g) : v->ffn_op == VISION_FFN_SILU ? silu(g) : gelu_quick_f16(g)) * c->hb2[i];
            }
        } else if (w->w_gate.data) {
            act_init(&in, c, c->xb, n, dim);
            const weight *gu[] = {&w->w_gate, &w->w_up};
            float *gu_out[] = {c->hb, c->hb2};
            const int gu_strides[] = {ff, ff};
            const float *gu_b[] = {nm->ffn_gate_b, w->ffn_up_b};
            matmul_group(c, &in, 2, gu, gu_out, gu_strides, gu_b, true, v->ffn_op == VISION_FFN_SILU ? ACT_SILU : ACT_GELU_TANH);
        } else {
            product(c, &w->w_up, cl ? &cl[CLAMP_UP] : NULL, c->xb, n, c->hb, ff, w->ffn_up_b, tp);
            for (size_t i = 0; i < (size_t)n * ff; i++)
                c->hb[i] = v->ffn_op == VISION_FFN_GELU ? gelu_f16(c->hb[i]) : v->ffn_op == VISION_FFN_SILU ? silu(c->hb[i]) : gelu_quick_f16(c->hb[i]);
        }
        product(c, &w->w_down, cl ? &cl[CLAMP_DOWN] : NULL, c->hb, n, c->xb, dim, w->ffn_down_b, tp);
        if (nm->ffn_post_norm) norm_rows(v, c->xb, nm->ffn_post_norm, NULL, n, dim);
        add_rows(c->x, c->xb, (size_t)n * dim);
        if (nm->out_scale)
            for (size_t i = 0; i < (size_t)n * dim; i++) c->x[i] *= nm->out_scale[nm->out_scale_len == 1 ? 0 : i % (size_t)dim];
        if (v->deepstack && v->deepstack[l].fc1.data) deepstack_rows(v, c, l, k++, n, tp);
    }
    if (v->post_ln_w) norm_rows(v, c->x, v->post_ln_w, v->post_ln_b, n, dim);
}

/* qwen3vl: the position table (side² rows of dim) resized to gx × gy as ggml_interpolate's bilinear
 * mode with GGML_SCALE_FLAG_ALIGN_CORNERS computes it (ggml-cpu's upscale): output (i0, i1) reads the
 * table at (i0 / sf0, i1 / sf1), sf = (out − 1) / (side − 1) (out / side where a side is 1), from
 * its four neighbours clamped to the table, the weights from the clamped corner, in float and in
 * ggml's order; into out [gy][gx][dim] */
/* one axis of it: output i of n reads i / sf, between *lo and *hi (clamped to the table's side), at *frac */
static void bilinear_axis(int i, float sf, int side, int *lo, int *hi, float *frac) {
    const float at = (float)i / sf;
    int a = (int)floorf(at), b = a + 1;
    *lo = a < 0 ? 0 : a > side - 1 ? side - 1 : a;
    *hi = b < 0 ? 0 : b > side - 1 ? side - 1 : b;
    *frac = fminf(fmaxf(at - (float)*lo, 0.0f), 1.0f);
}

static void resize_positions_bilinear(const float *table, int side, int dim, int gx, int gy, float *out) {
    const float sf0 = gx > 1 && side > 1 ? (float)(gx - 1) / (float)(side - 1) : (float)gx / (float)side;
    const float sf1 = gy > 1 && side > 1 ? (float)(gy - 1) / (float)(side - 1) : (float)gy / (float)side;
    for (int i1 = 0; i1 < gy; i1++) {
        int y0, y1, x0, x1;
        float dy, dx;
        bilinear_axis(i1, sf1, side, &y0, &y1, &dy);
        for (int i0 = 0; i0 < gx; i0++) {
            bilinear_axis(i0, sf0, side, &x0, &x1, &dx);
            const float *a = table + ((size_t)y0 * side + x0) * dim, *b = table + ((size_t)y0 * side + x1) * dim;
            const float *c = table + ((size_t)y1 * side + x0) * dim, *d = table + ((size_t)y1 * side + x1) * dim;
            float *o = out + ((size_t)i1 * gx + i0) * dim;
            for (int e = 0; e < dim; e++) o[e] = a[e] * (1 - dx) * (1 - dy) + b[e] * dx * (1 - dy) + c[e] * (1 - dx) * dy + d[e] * dx * dy;
        }
    }
}

/* qwen: the order the tower takes the merged positions in (order[k]: the raster index, on the
 * mx × my grid, of the k-th), and qwen2.5vl's windows: clip.cpp's window index, the grid cut into
 * windows of window² positions (the last row and column of windows cut short), window by window
 * row by row, within each its positions row by row; without windows, the raster order. win_start
 * (n_windows + 1 entries, in patches: 4 per position) where windows are in effect. */
static int qwen_order(const vision_model *v, int mx, int my, int32_t *order, int32_t *win_start) {
    const int W = v->n_wa_pattern ? v->window : (mx > my ? mx : my);
    int k = 0, n_windows = 0;
    for (int y = 0; y < my; y += W)
        for (int x = 0; x < mx; x += W) {
            if (win_start) win_start[n_windows] = 4 * k;
            n_windows++;
            for (int dy = 0; dy < W && y + dy < my; dy++)
                for (int dx = 0; dx < W && x + dx < mx; dx++) order[k++] = (y + dy) * mx + x + dx;
        }
    if (win_start) win_start[n_windows] = 4 * k;
    return n_windows;
}

/* qwen: the tower over the image's patches taken 2 × 2 (qwen2vl.cpp's "second conv dimension": each
 * merged position's four patches, dy outer, dx inner, consecutive), positions in qwen_order, then
 * the merger (mm.0, GELU, mm.2 on each position's four rows as one of dim·4) and qwen3vl's deepstack
 * rows after it, each position's row put back at its raster index (clip.cpp's window_idx) */
static int encode_qwen(const vision_model *v, struct wick_ctx *c, const float *pixels, int nx, int ny, float *out, errmsg *err) {
    const model_config *mc = &v->tower.config;
    const int P = v->patch_size, dim = mc->dim, gx = nx / P, gy = ny / P, mx = gx / 2, my = gy / 2, m = mx * my, n = 4 * m;
    const int width = vision_out_width(v), half = mc->head_dim / 2;
    const size_t rope_floats = (size_t)n * half;
    int32_t *order = malloc((size_t)m * sizeof *order), *win_start = malloc((size_t)(m + 1) * sizeof *win_start);
    int32_t *patch_of = malloc((size_t)n * 3 * sizeof *patch_of); /* then each row's y and x */
    float *rope = malloc(2 * rope_floats * sizeof *rope);
    float *pos = v->pos_embd ? malloc((size_t)n * dim * sizeof *pos) : NULL;
    /* windows: the merger's rows in window order, then put back; else straight into out */
    float *rows = v->n_wa_pattern ? malloc((size_t)m * width * sizeof *rows) : out;
    const bool ready = order && win_start && patch_of && rope && (!v->pos_embd || pos) && rows;
    if (ready) {
        int32_t *pos_y = patch_of + n, *pos_x = patch_of + 2 * n;
        tower_pass tp = {rope, rope + rope_floats, 0, NULL, NULL, 0, rows, width};
        tp.n_windows = qwen_order(v, mx, my, order, win_start);
        if (v->n_wa_pattern) tp.win_start = win_start;
        for (int i = 0; i < n; i++) {
            const int at = order[i / 4], py = at / mx * 2 + (i % 4) / 2, px = at % mx * 2 + i % 2;
            patch_of[i] = py * gx + px;
            pos_y[i] = py;
            pos_x[i] = px;
        }
        rope_vision_tables(mc->head_dim, 10000.0f, n, pos_y, pos_x, rope, rope + rope_floats);
        /* x = W_0·p + W_1·p (the two frames' convolutions, added as qwen2vl.cpp adds them), + b_patch, + the
         * position table resized to the grid (qwen3vl) */
        act_rows in;
        flatten_patches(v, pixels, nx, ny, patch_of, c->hb);
        act_init(&in, c, c->hb, n, (int)v->patch_embd.cols);
        matmul(c, &v->patch_embd, &in, c->x, dim, NULL);
        matmul(c, &v->patch_embd_1, &in, c->xb, dim, NULL);
        add_rows(c->x, c->xb, (size_t)n * dim);
        for (int i = 0; v->patch_b && i < n; i++) add_rows(c->x + (size_t)i * dim, v->patch_b, (size_t)dim);
        if (pos) {
            resize_positions_bilinear(v->pos_embd, v->n_side, dim, gx, gy, pos);
            for (int i = 0; i < n; i++) add_rows(c->x + (size_t)i * dim, pos + (size_t)patch_of[i] * dim, (size_t)dim);
        }
        if (v->tower.embd_norm) norm_rows(v, c->x, v->tower.embd_norm, v->tower.embd_norm_b, n, dim);
        tower_layers(v, c, n, &tp);
        /* the merger: the rows 4 to a row of dim·4 (c->x as it lies), mm.0 into c->hb, GELU, mm.2 */
        const int n_mm = (int)v->mm_0.rows;
        act_init(&in, c, c->x, m, 4 * dim);
        matmul(c, &v->mm_0, &in, c->hb, n_mm, v->mm_0_b);
        for (size_t i = 0; i < (size_t)m * n_mm; i++) c->hb[i] = gelu_f16(c->hb[i]);
        act_init(&in, c, c->hb, m, n_mm);
        matmul(c, &v->mm_2, &in, rows, width, v->mm_2_b);
        if (rows != out)
            for (int k = 0; k < m; k++) memcpy(out + (size_t)order[k] * width, rows + (size_t)k * width, (size_t)width * sizeof *out);
    }
    if (rows != out) free(rows);
    free(order);
    free(win_start);
    free(patch_of);
    free(rope);
    free(pos);
    return ready ? 0 : errorf(err, WICK_ERR_NOMEM, "out of memory for an image of %d × %d patches", gx, gy);
}

/* gemma4v (models/gemma4v.cpp): the tower over the image's gx × gy patches in raster order, then
 * the pooling and projection:
 *     x = (2·pixels − 1)·W_patchᵀ + T_x[px] + T_y[py]     no patch bias; T_x, T_y the position
 *                                                            table's two halves, by column and row
 *     the layers (tower_layers: RMS norms, clamps, the 2-D rope, unscaled attention)
 *     y = avg_pool(x, k)·√dim                               k = n_merge over the patch grid (gemma3's)
 *     y = (y − std_bias) ⊙ std_scale                        where the file has both
 *     out = RMSNorm(y) (no weight, the tower's eps)·W_inᵀ   mm.input_projection, with its clamps */
static int encode_gemma4v(const vision_model *v, struct wick_ctx *c, const float *pixels, int nx, int ny, float *out, errmsg *err) {
    const model_config *mc = &v->tower.config;
    const int P = v->patch_size, dim = mc->dim, gx = nx / P, gy = ny / P, n = gx * gy, k = v->n_merge, m = (gx / k) * (gy / k);
    const size_t plane = (size_t)3 * nx * ny, rope_floats = (size_t)n * (mc->head_dim / 2);
    const int widest = v->n_ff > dim ? v->n_ff : dim;
    float *scaled = malloc(plane * sizeof *scaled), *rope = malloc(2 * rope_floats * sizeof *rope);
    float *clamped = v->clamps ? malloc((size_t)n * widest * sizeof *clamped) : NULL;
    int32_t *pos = malloc(2 * (size_t)n * sizeof *pos); /* each patch's column, then each one's row */
    const bool ready = scaled && rope && pos && (!v->clamps || clamped);
    if (ready) {
        int32_t *pos_x = pos, *pos_y = pos + n;
        for (int i = 0; i < n; i++) pos_x[i] = i % gx, pos_y[i] = i / gx;
        /* the graph's input: 2·x − 1 (ggml_scale_bias) of the normalized pixels */
        for (size_t i = 0; i < plane; i++) scaled[i] = pixels[i] * 2.0f - 1.0f;
        act_rows in;
        flatten_patches(v, scaled, nx, ny, NULL, c->hb);
        act_init(&in, c, c->hb, n, (int)v->patch_embd.cols);
        matmul(c, &v->patch_embd, &in, c->x, dim, NULL);
        const float *tx = v->pos_embd, *ty = v->pos_embd + (size_t)v->pos_size * dim;
        for (int i = 0; i < n; i++) add_rows(c->x + (size_t)i * dim, tx + (size_t)pos_x[i] * dim, (size_t)dim);
        for (int i = 0; i < n; i++) add_rows(c->x + (size_t)i * dim, ty + (size_t)pos_y[i] * dim, (size_t)dim);
        if (v->tower.embd_norm) norm_rows(v, c->x, v->tower.embd_norm, v->tower.embd_norm_b, n, dim);
        rope_vision_tables(mc->head_dim, v->rope_theta, n, pos_x, pos_y, rope, rope + rope_floats);
        tower_pass tp = {rope, rope + rope_floats, mc->head_dim / 4, clamped, NULL, 0, NULL, 0};
        tower_layers(v, c, n, &tp);
        avg_pool(c->x, gx, gy, dim, k, c->hb);
        const float gain = sqrtf((float)dim);
        for (size_t i = 0; i < (size_t)m * dim; i++) c->hb[i] *= gain;
        if (v->std_bias)
            for (size_t i = 0; i < (size_t)m * dim; i++) c->hb[i] = (c->hb[i] - v->std_bias[i % dim]) * v->std_scale[i % dim];
        norm_rows(v, c->hb, NULL, NULL, m, dim);
        product(c, &v->input_proj, v->input_proj_clamp.in || v->input_proj_clamp.out ? &v->input_proj_clamp : NULL, c->hb, m, out,
                v->n_embd_text, NULL, &tp);
    }
    free(scaled);
    free(rope);
    free(clamped);
    free(pos);
    return ready ? 0 : errorf(err, WICK_ERR_NOMEM, "out of memory for an image of %d × %d patches", gx, gy);
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
    const bool lfm2 = v->projector == PROJECTOR_LFM2, qwen = vision_is_qwen(v), sized = lfm2 || vision_dyn_size(v);
    /* lfm2's, qwen's and gemma4v's images are whole blocks of P·s of any shape within max_patches
     * (gemma4v's sides within its position tables); the others' image_size² */
    const int64_t block = sized ? (int64_t)P * s : v->image_size;
    if (nx < 1 || ny < 1 || nx % block || ny % block || (!sized && (nx != v->image_size || ny != v->image_size)) ||
        ((int64_t)nx / P) * (ny / P) > v->max_patches ||
        (v->projector == PROJECTOR_GEMMA4V && (nx / P > v->pos_size || ny / P > v->pos_size)))
        return errorf(err, WICK_ERR_INVALID_ARG, "vision: an image of %d × %d pixels is not one this encoder takes", nx, ny);
    const int gx = nx / P, gy = ny / P, n = gx * gy;
    wick_ctx_params p = {0};
    p.n_ctx = p.n_batch = n;
    p.n_threads = n_threads;
    struct wick_ctx c;
    if (ctx_init(&c, &v->tower, &p, err)) return -1;
    if (qwen || v->projector == PROJECTOR_GEMMA4V) {
        int rc = qwen ? encode_qwen(v, &c, pixels, nx, ny, out, err) : encode_gemma4v(v, &c, pixels, nx, ny, out, err);
        ctx_release(&c);
        return rc;
    }
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
    flatten_patches(v, pixels, nx, ny, NULL, c.hb);
    act_init(&in, &c, c.hb, n, (int)v->patch_embd.cols);
    matmul(&c, &v->patch_embd, &in, c.x, dim, v->patch_b);
    if (pos) add_rows(c.x, pos, (size_t)n * dim);
    free(resized);
    if (v->tower.embd_norm) layernorm_rows(c.x, v->tower.embd_norm, v->tower.embd_norm_b, n, dim, v->tower.config.rms_eps);
    tower_layers(v, &c, n, NULL);
    int rc = 0;
    if (v->projector == PROJECTOR_GEMMA3) {
        /* gemma3: the pooled rows (into c->hb), RMS-normed, through the input projection into out */
        avg_pool(c.x, v->n_side, v->n_side, dim, s, c.hb);
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
