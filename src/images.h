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

/* One slot's rows: n_rows × the text model's dim floats, and its WICK_IMAGE_* flags */
typedef struct {
    int32_t slot, n_rows, flags;
    float *rows;
} ctx_image;

/* The row of image id tok (tok < 0) the context holds, or NULL when its slot holds none or fewer rows. */
const float *images_row(const struct wick_ctx *c, int32_t tok);
/* Every image id among tokens has a row (0), or -1 with a message naming the first that has none. */
int images_check(const struct wick_ctx *c, const int32_t *tokens, int32_t n, errmsg *err);
/* How many ids from tokens[0] are positions of one non-causal slot in a row (0 when tokens[0] is
 * not one): such a run is evaluated as a batch of its own. */
int32_t images_noncausal_run(const struct wick_ctx *c, const int32_t *tokens, int32_t n);
/* Whether a non-causal slot's position is among tokens (a batch must then stop before it). */
int32_t images_noncausal_start(const struct wick_ctx *c, const int32_t *tokens, int32_t n);
/* the slot's entry, or NULL */
ctx_image *image_slot_find(const struct wick_ctx *c, int32_t slot);

#endif
