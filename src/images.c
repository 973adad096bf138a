/* images.c — pictures in a prompt (wick.h, "images"): the mmproj file behind the public calls,
 * the ids one picture takes in a prompt, and the rows a context holds for each image slot.
 *
 * The layout is llama.cpp's mtmd (tools/mtmd/mtmd.cpp, mtmd_tokenizer::add_media and the
 * per-projector markers of mtmd_context's constructor): the text around a picture is tokenized
 * apart from it (the caller does that: the glue splits a prompt at its image markers), and the
 * picture becomes
 *   idefics3 (SmolVLM), tiled: for each row of tiles, for each tile
 *                "<fake_token_around_image><row_R_col_C>" (tokenized, special tokens parsed), the
 *                tile's positions; "\n" after every row but the last; then the tokens "\n\n",
 *                "<fake_token_around_image>", "<global-img>" (each looked up whole in the
 *                vocabulary), the overview's positions, "<fake_token_around_image>";
 *   idefics3 without tiles: the positions alone;
 *   gemma3:      "<start_of_image>", the positions, "<end_of_image>" (each tokenized);
 *   lfm2 (LFM2-VL): "<|image_start|>" (tokenized); tiled, for each row of tiles, for each tile
 *                "<|img_row_R_col_C|>" (tokenized), the tile's positions, then the token
 *                "<|img_thumbnail|>" (looked up whole) and the thumbnail's positions; untiled, the
 *                image's positions alone; then "<|image_end|>" (tokenized). Its images differ in
 *                size, so in positions (vision_positions_of).
 *   qwen2vl, qwen2.5vl, qwen3vl (Qwen-VL): "<|vision_start|>", the positions, "<|vision_end|>"
 *                (each tokenized); the positions lie on the merged grid (vision_grid_of), which the
 *                slot keeps (wick_ctx_set_image_grid) for the text model's 2-D M-RoPE positions.
 *   gemma4v (Gemma 4): "<|image>", the positions (the pooled grid's, row by row), "<image|>" (each
 *                tokenized).
 * A Gemma 3 picture's positions see each other both ways (mtmd_decode_use_non_causal): its slot
 * is WICK_IMAGE_NONCAUSAL, so forward.c evaluates the run as one batch without the causal mask. So
 * are a Gemma 4 picture's, except with the text widths 1536 and 2560 (E2B, E4B), which mtmd keeps
 * causal. */
#include "images.h"

#include "context.h"
#include "tokenizer.h"
#include "vision.h"
#include "wick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wick_vision {
    vision_model v;
};

wick_status wick_ctx_set_image(wick_ctx *c, int32_t slot, const float *rows, int32_t n_rows, int32_t flags) {
    if (!c || (!rows && n_rows)) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_set_image: NULL argument");
    if (slot < 0 || slot >= WICK_IMAGE_SLOTS) return api_fail(WICK_ERR_INVALID_ARG, "image slot %d is not in 0 … %d", slot, WICK_IMAGE_SLOTS - 1);
    if (n_rows < 1 || n_rows > WICK_IMAGE_MAX_POSITIONS)
        return api_fail(WICK_ERR_INVALID_ARG, "an image of %d positions (1 … %d are taken)", n_rows, WICK_IMAGE_MAX_POSITIONS);
    if (c->external) return api_fail(WICK_ERR_UNSUPPORTED, "images run on the CPU: this context's forward pass is outside the engine (GPU)");
    const model_config *mc = &c->model->config;
    if (mc->encoder) return api_fail(WICK_ERR_INVALID_ARG, "%s is an embedding model (an encoder): it takes no images", mc->arch);
    if (mc->n_altup)
        return api_fail(WICK_ERR_UNSUPPORTED, "images in %s's prompts (AltUp streams made from image rows) are not supported yet", mc->arch);
    uint64_t bytes64 = (uint64_t)n_rows * (uint64_t)images_row_width(c->model) * sizeof(float);
    if (bytes64 > SIZE_MAX) return api_fail(WICK_ERR_NOMEM, "an image of %d positions does not fit this build's memory", n_rows);
    size_t bytes = (size_t)bytes64;
    float *copy = malloc(bytes);
    if (!copy) return api_fail(WICK_ERR_NOMEM, "out of memory for an image of %d positions", n_rows);
    memcpy(copy, rows, bytes);
    ctx_image *im = image_slot_find(c, slot);
    if (!im) {
        if (c->n_images == c->cap_images) {
            int32_t cap = c->cap_images ? 2 * c->cap_images : 4;
            ctx_image *grown = realloc(c->images, (size_t)cap * sizeof *grown);
            if (!grown) { free(copy); return api_fail(WICK_ERR_NOMEM, "out of memory"); }
            c->images = grown;
            c->cap_images = cap;
        }
        im = &c->images[c->n_images++];
        im->rows = NULL;
    }
    free(im->rows);
    *im = (ctx_image){slot, n_rows, flags, 0, 0, copy};
    return api_ok();
}

wick_status wick_ctx_set_image_grid(wick_ctx *c, int32_t slot, int32_t grid_x, int32_t grid_y) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_set_image_grid: NULL context");
    ctx_image *im = image_slot_find(c, slot);
    if (!im) return api_fail(WICK_ERR_INVALID_ARG, "image slot %d holds no picture", slot);
    if (grid_x < 0 || grid_y < 0 || (grid_x == 0) != (grid_y == 0) || (int64_t)grid_x * grid_y != (grid_x ? im->n_rows : 0))
        return api_fail(WICK_ERR_INVALID_ARG, "a grid of %d × %d for the %d positions of image slot %d", grid_x, grid_y, im->n_rows, slot);
    im->grid_x = grid_x;
    im->grid_y = grid_y;
    return api_ok();
}

wick_status wick_ctx_drop_image(wick_ctx *c, int32_t slot) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_ctx_drop_image: NULL context");
    if (slot == -1) {
        for (int32_t i = 0; i < c->n_images; i++) free(c->images[i].rows);
        c->n_images = 0;
        return api_ok();
    }
    ctx_image *im = image_slot_find(c, slot);
    if (im) {
        free(im->rows);
        *im = c->images[--c->n_images];
    }
    return api_ok();
}

int wick_ctx_has_image(const wick_ctx *c, int32_t slot) { return c && image_slot_find(c, slot) != NULL; }

/* ---- the mmproj file ------------------------------------------------------------------------- */

wick_status wick_vision_load(const void *buf, size_t size, wick_vision **out) {
    if (!buf || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_vision_load: NULL argument");
    *out = NULL;
    wick_vision *w = calloc(1, sizeof *w);
    if (!w) return api_fail(WICK_ERR_NOMEM, "out of memory");
    errmsg err = {0};
    if (vision_load(&w->v, buf, size, &err)) {
        free(w);
        return api_status(&err);
    }
    *out = w;
    return api_ok();
}

void wick_vision_free(wick_vision *w) {
    if (!w) return;
    vision_release(&w->v);
    free(w);
}

wick_status wick_vision_info_json(const wick_vision *w, char *buf, size_t buf_len, size_t *needed) {
    if (!w || (!buf && buf_len)) return api_fail(WICK_ERR_INVALID_ARG, "wick_vision_info_json: NULL argument");
    const vision_model *v = &w->v;
    int n = snprintf(buf, buf_len,
                     "{\"projector\":\"%s\",\"image_size\":%d,\"patch_size\":%d,\"positions\":%d,\"n_embd\":%d,\"layers\":%d,\"dim\":%d,"
                     "\"longest_edge\":%d}",
                     vision_projector_name(v->projector), v->image_size, v->patch_size, vision_positions(v), v->n_embd_text,
                     v->tower.config.n_layers, v->tower.config.dim, v->longest_edge);
    if (needed) *needed = (size_t)n + 1;
    return api_ok();
}

/* ---- layout ---------------------------------------------------------------------------------- */

typedef struct {
    int32_t *out;
    int32_t cap, n, positions;
} id_list;

static void push(id_list *l, int32_t id) {
    if (l->n < l->cap) l->out[l->n] = id;
    l->n++;
}

/* text tokenized as mtmd's add_text(text, parse_special = true): nothing added */
static int push_text(id_list *l, const wick_model *m, const char *text, errmsg *err) {
    size_t len = strlen(text);
    int32_t buf[64];
    int n = vocab_tokenize(m->vocab, text, len, false, true, buf, 64);
    if (n < 0 || n > 64) return errorf(err, WICK_ERR_NOMEM, "cannot tokenize the image marker %s", text);
    for (int i = 0; i < n; i++) push(l, buf[i]);
    return 0;
}

/* one token whose text is exactly piece (mtmd's lookup_token: the first such id) */
static int push_piece(id_list *l, const wick_model *m, const char *piece, errmsg *err) {
    size_t len = strlen(piece);
    char text[128];
    int32_t n_vocab = vocab_n_tokens(m->vocab);
    for (int32_t id = 0; id < n_vocab; id++) {
        int n = vocab_token_to_piece(m->vocab, id, text, (int)sizeof text);
        if (n == (int)len && !memcmp(text, piece, len)) {
            push(l, id);
            return 0;
        }
    }
    char shown[64];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 3 < sizeof shown; i++) {
        if (piece[i] == '\n') shown[k++] = '\\', shown[k++] = 'n';
        else shown[k++] = piece[i];
    }
    shown[k] = 0;
    return errorf(err, WICK_ERR_UNSUPPORTED, "the vocabulary has no token \"%s\", which this projector's image layout needs", shown);
}

static void push_positions(id_list *l, int32_t slot, int32_t n) {
    for (int32_t i = 0; i < n; i++) push(l, WICK_IMAGE_TOKEN(slot, l->positions + i));
    l->positions += n;
}

static int layout(const vision_model *v, const wick_model *m, int32_t width, int32_t height, int32_t slot, id_list *l, errmsg *err) {
    vision_plan plan;
    if (vision_plan_picture(v, width, height, &plan, err)) return -1;
    const int32_t gx = plan.grid_x, gy = plan.grid_y, per = vision_positions(v);
    switch (v->projector) {
    case PROJECTOR_IDEFICS3:
        if (gx > 0 && gy > 0) {
            for (int32_t y = 0; y < gy; y++) {
                for (int32_t x = 0; x < gx; x++) {
                    char marker[96];
                    snprintf(marker, sizeof marker, "<fake_token_around_image><row_%d_col_%d>", y + 1, x + 1);
                    if (push_text(l, m, marker, err)) return -1;
                    push_positions(l, slot, per);
                }
                if (y != gy - 1 && push_piece(l, m, "\n", err)) return -1;
            }
            if (push_piece(l, m, "\n\n", err) || push_piece(l, m, "<fake_token_around_image>", err) ||
                push_piece(l, m, "<global-img>", err))
                return -1;
            push_positions(l, slot, per);
            return push_piece(l, m, "<fake_token_around_image>", err);
        }
        push_positions(l, slot, per);
        return 0;
    case PROJECTOR_GEMMA3:
        if (push_text(l, m, "<start_of_image>", err)) return -1;
        push_positions(l, slot, per);
        return push_text(l, m, "<end_of_image>", err);
    case PROJECTOR_LFM2:
        if (push_text(l, m, "<|image_start|>", err)) return -1;
        for (int32_t y = 0; y < gy; y++)
            for (int32_t x = 0; x < gx; x++) {
                char marker[64];
                snprintf(marker, sizeof marker, "<|img_row_%d_col_%d|>", y + 1, x + 1);
                if (push_text(l, m, marker, err)) return -1;
                push_positions(l, slot, vision_positions_of(v, plan.tile_nx, plan.tile_ny));
            }
        if (gx > 0 && push_piece(l, m, "<|img_thumbnail|>", err)) return -1;
        push_positions(l, slot, vision_positions_of(v, plan.last_nx, plan.last_ny));
        return push_text(l, m, "<|image_end|>", err);
    case PROJECTOR_QWEN2VL:
    case PROJECTOR_QWEN25VL:
    case PROJECTOR_QWEN3VL:
        if (push_text(l, m, "<|vision_start|>", err)) return -1;
        push_positions(l, slot, vision_positions_of(v, plan.last_nx, plan.last_ny));
        return push_text(l, m, "<|vision_end|>", err);
    case PROJECTOR_GEMMA4V:
        if (push_text(l, m, "<|image>", err)) return -1;
        push_positions(l, slot, vision_positions_of(v, plan.last_nx, plan.last_ny));
        return push_text(l, m, "<image|>", err);
    }
    return errorf(err, WICK_ERR_UNSUPPORTED, "no prompt layout for projector %s", vision_projector_name(v->projector));
}

static int check_pair(const vision_model *v, const wick_model *m, errmsg *err) {
    if (m->config.encoder) return errorf(err, WICK_ERR_INVALID_ARG, "%s is an embedding model (an encoder): it takes no images", m->config.arch);
    if (v->n_embd_text != m->config.dim)
        return errorf(err, WICK_ERR_INVALID_ARG, "the mmproj feeds embeddings of %d but the text model's are %d: not its projector",
                      v->n_embd_text, m->config.dim);
    if (v->n_deepstack != m->config.n_deepstack)
        return errorf(err, WICK_ERR_INVALID_ARG, "the mmproj gives %d deepstack rows per position but the text model takes %d: not its projector",
                      v->n_deepstack, m->config.n_deepstack);
    return 0;
}

wick_status wick_vision_layout(const wick_vision *w, const wick_model *m, int32_t width, int32_t height, int32_t slot,
                               int32_t *tokens, int32_t max_tokens, int32_t *n_tokens, int32_t *n_positions) {
    if (!w || !m || !n_tokens || (!tokens && max_tokens > 0)) return api_fail(WICK_ERR_INVALID_ARG, "wick_vision_layout: NULL argument");
    if (slot < 0 || slot >= WICK_IMAGE_SLOTS) return api_fail(WICK_ERR_INVALID_ARG, "image slot %d is not in 0 … %d", slot, WICK_IMAGE_SLOTS - 1);
    errmsg err = {0};
    if (check_pair(&w->v, m, &err)) return api_status(&err);
    id_list l = {tokens, max_tokens, 0, 0};
    if (layout(&w->v, m, width, height, slot, &l, &err)) return api_status(&err);
    if (l.positions > WICK_IMAGE_MAX_POSITIONS)
        return api_fail(WICK_ERR_UNSUPPORTED, "a picture of %d positions (at most %d are taken)", l.positions, WICK_IMAGE_MAX_POSITIONS);
    *n_tokens = l.n;
    if (n_positions) *n_positions = l.positions;
    return api_ok();
}

wick_status wick_vision_encode(const wick_vision *w, wick_ctx *c, const uint8_t *rgb, int32_t width, int32_t height, int32_t slot) {
    if (!w || !c || !rgb) return api_fail(WICK_ERR_INVALID_ARG, "wick_vision_encode: NULL argument");
    errmsg err = {0};
    const vision_model *v = &w->v;
    if (check_pair(v, c->model, &err)) return api_status(&err);
    vision_batch b = {0};
    if (vision_prepare(v, rgb, width, height, &b, &err)) return api_status(&err);
    int32_t dim = vision_out_width(v); /* qwen3vl: the main embedding and the deepstack rows, per position */
    size_t total = 0; /* the positions of every image (each image's own: lfm2's differ) */
    for (int32_t i = 0; i < b.n; i++) total += (size_t)vision_positions_of(v, b.nx[i], b.ny[i]);
    if (total > WICK_IMAGE_MAX_POSITIONS) {
        vision_batch_free(&b);
        return api_fail(WICK_ERR_UNSUPPORTED, "a picture of %zu positions (at most %d are taken)", total, WICK_IMAGE_MAX_POSITIONS);
    }
    float *rows = malloc(total * (size_t)dim * sizeof(float));
    if (!rows) {
        vision_batch_free(&b);
        return api_fail(WICK_ERR_NOMEM, "out of memory for the embeddings of %d images", b.n);
    }
    /* the encoder's context runs on this context's threads (no second pool) */
    ctx_lend_pool(c->pool);
    int rc = 0;
    size_t at = 0;
    for (int32_t i = 0; i < b.n && !rc; i++) {
        rc = vision_encode(v, b.pixels + vision_batch_offset(&b, i), b.nx[i], b.ny[i], pool_size(c->pool), rows + at * dim, &err);
        at += (size_t)vision_positions_of(v, b.nx[i], b.ny[i]);
    }
    ctx_lend_pool(NULL);
    if (rc) {
        vision_batch_free(&b);
        free(rows);
        return api_status(&err);
    }
    int32_t flags = 0, gx = 0, gy = 0;
    /* mtmd_decode_use_non_causal: gemma3 always; gemma4v but for E2B's and E4B's text widths */
    if (v->projector == PROJECTOR_GEMMA3 || (v->projector == PROJECTOR_GEMMA4V && v->n_embd_text != 1536 && v->n_embd_text != 2560))
        flags |= WICK_IMAGE_NONCAUSAL;
    wick_status s = wick_ctx_set_image(c, slot, rows, (int32_t)total, flags);
    /* a Qwen picture is one image: its positions on the merged grid */
    if (s == WICK_OK && vision_is_qwen(v) && b.n == 1) {
        vision_grid_of(v, b.nx[0], b.ny[0], &gx, &gy);
        s = wick_ctx_set_image_grid(c, slot, gx, gy);
    }
    vision_batch_free(&b);
    free(rows);
    return s;
}
