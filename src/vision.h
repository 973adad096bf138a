/* vision.h — image encoders from mmproj GGUF files (general.architecture "clip", as llama.cpp's
 * tools/mtmd/clip.cpp reads them): the file's vision transformer and projector, and the
 * preprocessing of an RGB image into the tensors the encoder takes. Projectors: idefics3 (SmolVLM),
 * gemma3 (Gemma 3's SigLIP with its average pooling, soft-embedding norm and input projection),
 * lfm2 (LFM2-VL's SigLIP2 NaFlex at each image's own size, pixel unshuffle, LayerNorm and MLP). */
#ifndef WICK_VISION_H
#define WICK_VISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"
#include "model.h"

typedef enum { PROJECTOR_IDEFICS3, PROJECTOR_GEMMA3, PROJECTOR_LFM2 } vision_projector;

/* A layer's two LayerNorms (ln1 before attention, ln2 before the MLP), with their biases */
typedef struct {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
} vision_layer_norms;

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
    int32_t n_merge;                 /* idefics3, lfm2: the pixel (un)shuffle's scale factor; gemma3: the pooling's window side */
    int32_t n_out, n_embd_text;      /* the output: n_out positions of n_embd_text */
    int32_t longest_edge;            /* clip.vision.preproc_image_size; 0 where the file has none */
    int32_t min_pixels, max_pixels;  /* lfm2: the token budget as pixels (clip.cpp's set_limit_image_tokens(64, 256)) */
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
    weight mm_1, mm_2;               /* lfm2: the MLP, mm.1 [n_mm][dim·n_merge²] and mm.2 [n_embd_text][n_mm], with GELU between */
    const float *mm_1_b, *mm_2_b;
} vision_model;

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
/* positions vision_encode gives for an image of nx × ny pixels (lfm2: one per block of n_merge²
 * patches, as clip_n_output_tokens counts them) */
int32_t vision_positions_of(const vision_model *v, int32_t nx, int32_t ny);

/* One image of nx × ny pixels ([3][ny][nx]: image_size², except lfm2's, whose sides are whole
 * blocks of patch_size · n_merge) through the tower and the projector on n_threads threads: out
 * [vision_positions_of(v, nx, ny)][n_embd_text]. 0, or -1 with a message. */
int vision_encode(const vision_model *v, const float *pixels, int32_t nx, int32_t ny, int32_t n_threads, float *out, errmsg *err);

#endif
