/* vision.h — image encoders from mmproj GGUF files (general.architecture "clip", as llama.cpp's
 * tools/mtmd/clip.cpp reads them): the file's vision transformer and projector, and the
 * preprocessing of an RGB image into the tensors the encoder takes. Projectors: idefics3 (SmolVLM),
 * gemma3 (Gemma 3's SigLIP with its average pooling, soft-embedding norm and input projection). */
#ifndef WICK_VISION_H
#define WICK_VISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"
#include "model.h"

typedef enum { PROJECTOR_IDEFICS3, PROJECTOR_GEMMA3 } vision_projector;

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
    int32_t image_size, patch_size;  /* the encoder's input is image_size², in patches of patch_size² */
    int32_t n_side, n_patches;       /* patches per side, and in all */
    int32_t n_ff;                    /* the MLP's width */
    int32_t n_merge;                 /* idefics3: the pixel shuffle's scale factor; gemma3: the pooling's window side */
    int32_t n_out, n_embd_text;      /* the output: n_out positions of n_embd_text */
    int32_t longest_edge;            /* clip.vision.preproc_image_size; 0 where the file has none */
    float mean[3], std[3];           /* per channel, of pixel values in [0, 1] */
    weight patch_embd;               /* [dim][3·patch²]: the patch convolution as a matrix */
    const float *patch_b, *pos_embd; /* [dim], [n_patches][dim] */
    vision_layer_norms *norms;       /* [n_layers] */
    const float *post_ln_w, *post_ln_b;
    weight fc;                       /* idefics3: mm.model.fc [n_embd_text][dim·n_merge²] */
    const float *soft_emb_norm;      /* gemma3: mm.soft_emb_norm [dim] */
    weight input_proj;               /* gemma3: mm.input_projection as [n_embd_text][dim], transposed at load into input_proj_rows */
    void *input_proj_rows;
} vision_model;

/* The largest image side wick takes (llama.cpp's clip_image_size allows up to 46000). */
#define VISION_MAX_SIDE 16384

/* Reads and checks an mmproj file held in buf (which must outlive v): every key and tensor shape the
 * projector needs. 0, or -1 with a message (an unknown projector is refused by name). */
int vision_load(vision_model *v, const uint8_t *buf, size_t size, errmsg *err);
void vision_release(vision_model *v);

/* The encoder's inputs for one picture: n images of [3][image_size][image_size] floats each, in the
 * order llama.cpp's mtmd puts them in the prompt (idefics3, lfm2: the tiles row by row, then the
 * overview; gemma3: the one image) */
typedef struct {
    int32_t n;               /* images */
    int32_t grid_x, grid_y;  /* tiles across and down; 0, 0 where the picture is not tiled */
    float *pixels;           /* n × 3 × image_size × image_size */
} vision_batch;

/* The most floats a batch may hold (512 MiB): a picture whose tiles would take more is refused */
#define VISION_MAX_BATCH_FLOATS (1 << 27)

/* An RGB image (width × height pixels of 3 bytes, rows top to bottom) made into every image
 * llama.cpp's preprocessor for the file's projector makes of it (resized, tiled, normalized with
 * the file's mean and std), in prompt order: *out, to release with vision_batch_free. 0, or -1
 * with a message (out is then empty). */
int vision_prepare(const vision_model *v, const uint8_t *rgb, int32_t width, int32_t height, vision_batch *out, errmsg *err);
void vision_batch_free(vision_batch *b);
/* the tile grid vision_prepare would make, without making it (cheap): 0, or -1 with a message */
int vision_grid(const vision_model *v, int32_t width, int32_t height, int32_t *grid_x, int32_t *grid_y, errmsg *err);
/* positions vision_encode gives for one image of the batch */
static inline int32_t vision_positions(const vision_model *v) { return v->n_out; }

/* One image of a batch ([3][image_size][image_size]) through the tower and the projector on
 * n_threads threads: out [n_out][n_embd_text]. 0, or -1 with a message. */
int vision_encode(const vision_model *v, const float *pixels, int32_t n_threads, float *out, errmsg *err);

#endif
