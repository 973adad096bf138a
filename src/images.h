/* images.h — pictures in a prompt: the rows a context holds for each image slot (wick.h,
 * WICK_IMAGE_TOKEN), read by the forward pass in place of token embeddings, and the checks on
 * image ids (image_slots.c). The public calls (wick_vision_*, wick_ctx_set_image, …) are in
 * images.c, apart, so that the forward pass does not depend on the image encoders. */
#ifndef WICK_IMAGES_H
#define WICK_IMAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "errmsg.h"

struct wick_ctx;

struct wick_model;

/* One slot's rows: n_rows × images_row_width floats, its WICK_IMAGE_* flags, and the grid its
 * positions lie on where they are 2-D (M-RoPE models; 0 × 0: in a line, as text) */
typedef struct {
    int32_t slot, n_rows, flags;
    int32_t grid_x, grid_y;
    float *rows;
} ctx_image;

/* The floats of one image row for model m: its width, and qwen3vl's deepstack rows after it */
int32_t images_row_width(const struct wick_model *m);

/* The row of image id tok (tok < 0) the context holds, or NULL when its slot holds none or fewer rows. */
const float *images_row(const struct wick_ctx *c, int32_t tok);
/* Every image id among tokens has a row (0), or -1 with a message naming the first that has none. */
int images_check(const struct wick_ctx *c, const int32_t *tokens, int32_t n, errmsg *err);
/* How many ids from tokens[0] are positions of one non-causal slot in a row (0 when tokens[0] is
 * not one): such a run is evaluated as a batch of its own. */
int32_t images_noncausal_run(const struct wick_ctx *c, const int32_t *tokens, int32_t n);
/* Whether a non-causal slot's position is among tokens (a batch must then stop before it). */
int32_t images_noncausal_start(const struct wick_ctx *c, const int32_t *tokens, int32_t n);
/* M-RoPE: the four rope positions of n tokens at cache positions pos0 … (out: [n][4]), and
 * c->mrope_next for them. A text token at p takes (p, p, p, 0), p the position after the previous
 * token's; an image slot's position i on a grid_x-wide grid (p0, p0 + y, p0 + x, 0), p0 the
 * position the first of its run took, and the position after its last is p0 + max(grid_x,
 * grid_y), not p0 + its count (llama.cpp's mtmd: set_position_mrope_2d, mtmd_image_tokens_get_n_pos). */
void images_mrope_positions(struct wick_ctx *c, const int32_t *tokens, int32_t n, int32_t pos0, int32_t *out);
/* the slot's entry, or NULL */
ctx_image *image_slot_find(const struct wick_ctx *c, int32_t slot);

#endif
