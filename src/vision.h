/* vision.h — image encoders from mmproj GGUF files (general.architecture "clip", as llama.cpp's
 * tools/mtmd/clip.cpp reads them): the file's vision transformer and projector, and the
 * preprocessing of an RGB image into the tensors the encoder takes. Projectors: idefics3 (SmolVLM),
 * gemma3 (Gemma 3's SigLIP with its average pooling, soft-embedding norm and input projection),
 * lfm2 (LFM2-VL's SigLIP2 NaFlex at each image's own size, pixel unshuffle, LayerNorm and MLP),
 * qwen2vl_merger, qwen2.5vl_merger and qwen3vl_merger (Qwen2-VL, Qwen2.5-VL and Qwen3-VL: a tower at
 * each picture's own size with 2-D rotary positions, window attention (2.5), the 2 × 2 merger, and
 * Qwen3-VL's deepstack features), gemma4v (Gemma 4's tower: RMS-normed layers with per-head query,
 * key and value norms, a 2-D rope, optional clamps around each product, average pooling and the
 * input projection). */
#ifndef WICK_VISION_H
#define WICK_VISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"
#include "model.h"

typedef enum {
    PROJECTOR_IDEFICS3,
    PROJECTOR_GEMMA3,
    PROJECTOR_LFM2,
    PROJECTOR_QWEN2VL,
    PROJECTOR_QWEN25VL,
    PROJECTOR_QWEN3VL,
    PROJECTOR_GEMMA4V
} vision_projector;

/* the tower's MLP activation as the file says it (clip.cpp's hparams.ffn_op: clip.use_gelu, clip.use_silu,
 * else GELU-quick); gated where the layer has ffn_gate (act(gate) ⊙ up) */
typedef enum { VISION_FFN_GELU, VISION_FFN_SILU, VISION_FFN_GELU_QUICK } vision_ffn_op;

/* gemma4v's Gemma4ClippableLinear (clip.cpp's clamp_info_map): a product's input clamped to
 * [in_min, in_max] and its output to [out_min, out_max] (each as ggml_clamp: max(min(x, hi), lo)),
 * where the file gives the bound (scalar F32 tensors <weight name without .weight>.input_min, …) */
typedef struct {
    float in_min, in_max, out_min, out_max;
    bool in, out; /* whether any input bound, any output bound is given (the others are ±FLT_MAX) */
} vision_clamp;

/* the products of a tower layer that clamps can wrap (those clip_graph::build_vit runs through build_mm) */
enum { CLAMP_Q, CLAMP_K, CLAMP_V, CLAMP_O, CLAMP_GATE, CLAMP_UP, CLAMP_DOWN, CLAMP_LAYER_N };

/* What a tower layer has beyond the engine's layer fields: the two norms (ln1 before attention, ln2
 * before the MLP) with their biases, the gate's bias (qwen2.5vl); gemma4v's query and key norms
 * (RMS with weight, over each head or the whole row: qk_norm_width), its norms after attention and
 * after the MLP (attn_post_norm, ffn_post_norm), the layer's output scale (out_scale: 1 or dim
 * values, the residual stream multiplied by it) and the clamps of its products */
typedef struct {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *ffn_gate_b;
    const float *q_norm, *k_norm, *attn_post_norm, *ffn_post_norm, *out_scale;
    int32_t qk_norm_width, out_scale_len;
    vision_clamp clamp[CLAMP_LAYER_N];
} vision_layer_norms;

/* qwen3vl: a deepstack layer's merger (v.deepstack.L.*): its output rows merged 2 × 2, normed
 * (norm, over dim·4), then fc2(GELU(fc1(·))) to n_embd_text; fc1.data is NULL where layer L has none */
typedef struct {
    const float *norm_w, *norm_b, *fc1_b, *fc2_b;
    weight fc1, fc2;
} vision_deepstack;

typedef struct {
    /* the tower as the engine's model: config (dim, heads, layers, hidden_dim) and each layer's
     * attention and MLP weights with their biases (wq, bq, …, w_up, ffn_up_b, w_down, ffn_down_b),
     * embd_norm / embd_norm_b the pre_ln where the file has one; its gguf holds the file, its
     * owned list the tensors converted to F32 */
    struct wick_model tower;
    vision_projector projector;
    int32_t image_size, patch_size;  /* the encoder's input is image_size², in patches of patch_size²
                                      * (lfm2: each image has its own size; image_size² is the position table's) */
    int32_t n_side, n_patches;       /* patches per side, and in all, of image_size² (the position table's rows) */
    int32_t max_patches;             /* the most patches one image may have (lfm2: more than n_patches) */
    int32_t n_ff;                    /* the MLP's width */
    int32_t n_merge;                 /* idefics3, lfm2: the pixel (un)shuffle's scale factor; gemma3: the pooling's window side; qwen: 2 (the merger's 2 × 2) */
    int32_t n_out, n_embd_text;      /* the output: n_out positions of n_embd_text */
    int32_t longest_edge;            /* clip.vision.preproc_image_size; 0 where the file has none */
    int32_t min_pixels, max_pixels;  /* lfm2, qwen: the token budget as pixels (clip.cpp's set_limit_image_tokens: lfm2 64 to 256, qwen 8 to 4096) */
    float mean[3], std[3];           /* per channel, of pixel values in [0, 1] */
    weight patch_embd;               /* [dim][3·patch²]: the patch convolution as a matrix */
    const float *patch_b, *pos_embd; /* [dim], [n_patches][dim] */
    vision_layer_norms *norms;       /* [n_layers] */
    const float *post_ln_w, *post_ln_b;
    weight fc;                       /* idefics3: mm.model.fc [n_embd_text][dim·n_merge²] */
    const float *soft_emb_norm;      /* gemma3: mm.soft_emb_norm [dim] */
    weight input_proj;               /* gemma3: mm.input_projection as [n_embd_text][dim], transposed at load into input_proj_rows */
    void *input_proj_rows;
    const float *input_norm_w, *input_norm_b; /* lfm2: mm.input_norm (optional, as in clip.cpp) over rows of dim·n_merge² */
    weight mm_1, mm_2;               /* lfm2: the MLP, mm.1 [n_mm][dim·n_merge²] and mm.2 [n_embd_text][n_mm], with GELU between (qwen: mm_0, then mm_2) */
    const float *mm_1_b, *mm_2_b;
    /* qwen2vl, qwen2.5vl, qwen3vl */
    vision_ffn_op ffn_op;
    bool rms_norm;                   /* qwen2.5vl, gemma4v: every norm is an RMS norm (the others' LayerNorms) */
    weight patch_embd_1;             /* the second frame's kernel: a still picture is both frames, so x = W_0·p + W_1·p */
    int32_t n_wa_pattern;            /* qwen2.5vl: layers l with (l + 1) % n_wa_pattern == 0 attend fully, the others
                                      * within windows; 0: every layer fully */
    int32_t window;                  /* qwen2.5vl: a window's side in merged positions (clip.cpp's 112 pixels / P / 2) */
    weight mm_0;                     /* the merger: mm.0 [n_mm][dim·4], GELU, then mm_2 (mm.2) [n_embd_text][n_mm], biases mm_0_b, mm_2_b */
    const float *mm_0_b;
    vision_deepstack *deepstack;     /* qwen3vl: [n_layers] */
    int32_t n_deepstack;             /* qwen3vl: layers with a deepstack merger; 0 for the others */
    /* gemma4v: the position table [2][pos_size][dim] (pos_embd: the x table, then the y table), the
     * rope's base, the standardization (std_bias, std_scale: both or neither) and the input
     * projection's clamp (the projection itself in input_proj, as stored: [n_embd_text][dim]) */
    int32_t pos_size;
    float rope_theta;
    const float *std_bias, *std_scale;
    vision_clamp input_proj_clamp;
    bool clamps;                     /* any clamp given at all */
} vision_model;

/* the Qwen-VL projectors: a tower at each picture's own size with 2-D rotary positions and the 2 × 2 merger */
static inline bool vision_is_qwen(const vision_model *v) {
    return v->projector == PROJECTOR_QWEN2VL || v->projector == PROJECTOR_QWEN25VL || v->projector == PROJECTOR_QWEN3VL;
}
/* the projectors of mtmd's dyn_size preprocessor: one image at the picture's smart size, in whole
 * blocks of patch_size · n_merge (the Qwen-VL ones and gemma4v) */
static inline bool vision_dyn_size(const vision_model *v) { return vision_is_qwen(v) || v->projector == PROJECTOR_GEMMA4V; }

/* The largest image side wick takes (llama.cpp's clip_image_size allows up to 46000). */
#define VISION_MAX_SIDE 16384
/* lfm2's tile side in pixels, whatever the file says (mtmd_image_preprocessor_lfm2::tile_size, from
 * LFM2.5-VL's processor_config.json) */
#define LFM2_TILE 512

/* Reads and checks an mmproj file held in buf (which must outlive v): every key and tensor shape the
 * projector needs. 0, or -1 with a message (an unknown projector is refused by name). */
int vision_load(vision_model *v, const uint8_t *buf, size_t size, errmsg *err);
void vision_release(vision_model *v);
/* the projector's name as clip.projector_type spells it */
const char *vision_projector_name(vision_projector p);

/* The encoder's inputs for one picture: n images, image i of [3][ny[i]][nx[i]] floats, one after
 * another, in the order llama.cpp's mtmd puts them in the prompt (idefics3, lfm2: the tiles row by
 * row, then the overview or thumbnail; gemma3, and lfm2 untiled: the one image). idefics3's and
 * gemma3's images are all image_size²; lfm2's tiles are LFM2_TILE², its other image the picture's
 * own aspect. */
typedef struct {
    int32_t n;               /* images */
    int32_t grid_x, grid_y;  /* tiles across and down; 0, 0 where the picture is not tiled */
    int32_t *nx, *ny;        /* [n]: each image's width and height in pixels (multiples of the patch size) */
    float *pixels;           /* Σ 3 · nx[i] · ny[i] */
} vision_batch;

/* where image i of b starts in b->pixels (floats) */
size_t vision_batch_offset(const vision_batch *b, int32_t i);

/* What vision_prepare makes of a picture, without making it (cheap): the grid, the number of
 * images, the tiles' size (every tile has it) and the last image's (the overview, thumbnail or
 * only image) */
typedef struct {
    int32_t grid_x, grid_y, n;
    int32_t tile_nx, tile_ny, last_nx, last_ny;
} vision_plan;

/* The most floats a batch may hold (512 MiB): a picture whose tiles would take more is refused */
#define VISION_MAX_BATCH_FLOATS (1 << 27)

/* An RGB image (width × height pixels of 3 bytes, rows top to bottom) made into every image
 * llama.cpp's preprocessor for the file's projector makes of it (resized, tiled, normalized with
 * the file's mean and std), in prompt order: *out, to release with vision_batch_free. 0, or -1
 * with a message (out is then empty). */
int vision_prepare(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *out, errmsg *err);
void vision_batch_free(vision_batch *b);
/* the plan of a picture (see vision_plan): 0, or -1 with a message (a picture whose images would
 * be too large is refused here) */
int vision_plan_picture(const vision_model *v, int32_t width, int32_t height, vision_plan *plan, errmsg *err);
/* positions vision_encode gives for an image of the file's image_size² (idefics3, gemma3: every image) */
static inline int32_t vision_positions(const vision_model *v) { return v->n_out; }
/* positions vision_encode gives for an image of nx × ny pixels (lfm2, qwen, gemma4v: one per block of
 * n_merge² patches, as clip_n_output_tokens counts them; qwen: (nx / P / 2) · (ny / P / 2), row by
 * row of the merged grid vision_grid_of gives; gemma4v: the pooled grid's, row by row) */
int32_t vision_positions_of(const vision_model *v, int32_t nx, int32_t ny);
/* the merged grid of an image of nx × ny pixels: *gx positions across, *gy down (positions row by
 * row; clip_n_output_tokens_x / _y for the qwen projectors: nx / P / 2, ny / P / 2); for the
 * projectors of one fixed grid, that grid */
void vision_grid_of(const vision_model *v, int32_t nx, int32_t ny, int32_t *gx, int32_t *gy);
/* the width of each position vision_encode writes (clip_n_mmproj_embd): n_embd_text, except
 * qwen3vl's n_embd_text · (1 + n_deepstack): the main embedding, then each deepstack layer's (in
 * layer order), n_embd_text each */
static inline int32_t vision_out_width(const vision_model *v) { return v->n_embd_text * (1 + v->n_deepstack); }

/* One image of nx × ny pixels ([3][ny][nx]: image_size², except lfm2's, qwen's and gemma4v's, whose sides are whole
 * blocks of patch_size · n_merge) through the tower and the projector on n_threads threads: out
 * [vision_positions_of(v, nx, ny)][vision_out_width(v)]. 0, or -1 with a message. */
int vision_encode(const vision_model *v, const float *pixels, int32_t nx, int32_t ny, int32_t n_threads, float *out, errmsg *err);

#endif
