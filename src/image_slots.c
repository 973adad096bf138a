/* image_slots.c — the rows a context holds for each image slot (images.h), read by the forward
 * pass in place of token embeddings; the public calls that fill them are in images.c. */
#include "images.h"

#include "context.h"
#include "wick.h"

#include <stdlib.h>

ctx_image *image_slot_find(const struct wick_ctx *c, int32_t slot) {
    for (int32_t i = 0; i < c->n_images; i++)
        if (c->images[i].slot == slot) return &c->images[i];
    return NULL;
}

int32_t images_row_width(const struct wick_model *m) { return m->config.dim * (1 + m->config.n_deepstack); }

const float *images_row(const struct wick_ctx *c, int32_t tok) {
    const ctx_image *im = image_slot_find(c, WICK_IMAGE_SLOT_OF(tok));
    int32_t i = WICK_IMAGE_POS_OF(tok);
    if (!im || i >= im->n_rows) return NULL;
    return im->rows + (size_t)i * (size_t)images_row_width(c->model);
}

void images_mrope_positions(struct wick_ctx *c, const int32_t *tokens, int32_t n, int32_t pos0, int32_t *out) {
    int32_t next = pos0 > 0 ? c->mrope_next[pos0 - 1] : 0;
    for (int32_t t = 0; t < n; t++) {
        int32_t *p = out + 4 * t;
        const ctx_image *im = tokens[t] < 0 ? image_slot_find(c, WICK_IMAGE_SLOT_OF(tokens[t])) : NULL;
        if (im && im->grid_x > 0) {
            int32_t i = WICK_IMAGE_POS_OF(tokens[t]);
            p[0] = next, p[1] = next + i / im->grid_x, p[2] = next + i % im->grid_x, p[3] = 0;
            /* the run's positions share p0; the one after the last is past the grid's longer side */
            if (i == im->n_rows - 1) next += im->grid_x > im->grid_y ? im->grid_x : im->grid_y;
        } else {
            p[0] = p[1] = p[2] = next++, p[3] = 0;
        }
        c->mrope_next[pos0 + t] = next;
    }
}

int images_check(const struct wick_ctx *c, const int32_t *tokens, int32_t n, errmsg *err) {
    for (int32_t t = 0; t < n; t++) {
        if (tokens[t] >= 0 || images_row(c, tokens[t])) continue;
        int32_t slot = WICK_IMAGE_SLOT_OF(tokens[t]);
        const ctx_image *im = image_slot_find(c, slot);
        if (!im) return errorf(err, WICK_ERR_INVALID_ARG, "image slot %d holds no picture (encode it first)", slot);
        return errorf(err, WICK_ERR_INVALID_ARG, "image slot %d holds %d positions; position %d was asked for", slot, im->n_rows,
                      WICK_IMAGE_POS_OF(tokens[t]));
    }
    return 0;
}

static bool noncausal(const struct wick_ctx *c, int32_t tok) {
    if (tok >= 0) return false;
    const ctx_image *im = image_slot_find(c, WICK_IMAGE_SLOT_OF(tok));
    return im && (im->flags & WICK_IMAGE_NONCAUSAL);
}

int32_t images_noncausal_run(const struct wick_ctx *c, const int32_t *tokens, int32_t n) {
    if (n < 1 || !noncausal(c, tokens[0])) return 0;
    int32_t slot = WICK_IMAGE_SLOT_OF(tokens[0]), run = 1;
    while (run < n && tokens[run] < 0 && WICK_IMAGE_SLOT_OF(tokens[run]) == slot) run++;
    return run;
}

int32_t images_noncausal_start(const struct wick_ctx *c, const int32_t *tokens, int32_t n) {
    if (!c->n_images) return n;
    for (int32_t t = 0; t < n; t++)
        if (noncausal(c, tokens[t])) return t;
    return n;
}


