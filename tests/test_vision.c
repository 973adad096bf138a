/* tests/test_vision.c — mmproj files (src/vision.c) as hostile input: each file is read by
 * vision_load and, where that succeeds, a fixed 23 × 17 test image is preprocessed and encoded, so
 * that whatever the loader accepts is also run. Two modes:
 *
 *   test_vision [--threads N] FILE…   one line per file, tab-separated:
 *                                         FILE  OK   encode:ok   (or encode:error: MESSAGE)
 *                                         FILE  ERR  MESSAGE
 *                                     (tests/vision-hostile.test.mjs checks each named mutant's
 *                                     message)
 *   test_vision --mutate FILE COUNT SEED [THREADS]
 *                                     COUNT truncations of FILE (half of them inside its header,
 *                                     key/value and tensor-information region, the rest anywhere)
 *                                     and COUNT variants with 1–4 bits flipped in that region, each
 *                                     loaded (and encoded where it loads) in memory, in a buffer of
 *                                     exactly its size, as the checks vision.mutate.read,
 *                                     .truncations and .flips of tests/check.h: each passes when
 *                                     every variant was refused with a non-empty message or loaded
 *                                     and encoded (or was refused by the encoder with a message); a
 *                                     crash ends the program before its summary line.
 * THREADS (default 1; the single-threaded wasm build takes only 1) is the encoder's thread count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vision.h"

/* The test image: red along x, green along y, blue a ripple (as tests/vision.test.mjs draws them) */
#define IMAGE_W 23
#define IMAGE_H 17
static uint8_t image[IMAGE_W * IMAGE_H * 3];

static void draw_image(void) {
    for (int y = 0; y < IMAGE_H; y++)
        for (int x = 0; x < IMAGE_W; x++) {
            uint8_t *p = image + (y * IMAGE_W + x) * 3;
            p[0] = (uint8_t)(x * 255 / (IMAGE_W - 1));
            p[1] = (uint8_t)(y * 255 / (IMAGE_H - 1));
            p[2] = (uint8_t)((x * 7 + y * 13) * 5);
        }
}

typedef enum { OUTCOME_REFUSED, OUTCOME_ENCODED, OUTCOME_ENCODE_REFUSED, OUTCOME_SILENT } outcome;

/* One mmproj held in buf: load, then preprocess and encode the test image. report gets the
 * line's status and message; a refusal without a message is OUTCOME_SILENT. */
static outcome try_mmproj(const uint8_t *buf, size_t size, int threads, char *report, size_t len) {
    vision_model v;
    errmsg err = {0};
    if (vision_load(&v, buf, size, &err)) {
        snprintf(report, len, "ERR\t%s", err.text);
        return err.text[0] ? OUTCOME_REFUSED : OUTCOME_SILENT;
    }
    /* every image the preprocessor makes of the picture (tiles and overview), each encoded */
    vision_batch b = {0};
    float *out = NULL;
    int rc = vision_prepare(&v, image, IMAGE_W, IMAGE_H, &b, &err);
    for (int32_t i = 0; !rc && i < b.n; i++) {
        size_t n_out = (size_t)vision_positions_of(&v, b.nx[i], b.ny[i]) * (size_t)vision_out_width(&v);
        free(out);
        out = malloc(n_out * sizeof *out);
        rc = !out ? errorf(&err, WICK_ERR_NOMEM, "out of memory for %zu output values", n_out)
                  : vision_encode(&v, b.pixels + vision_batch_offset(&b, i), b.nx[i], b.ny[i], threads, out, &err);
    }
    vision_batch_free(&b);
    free(out);
    vision_release(&v);
    snprintf(report, len, "OK\tencode:%s%s", rc ? "error: " : "ok", rc ? err.text : "");
    return !rc ? OUTCOME_ENCODED : err.text[0] ? OUTCOME_ENCODE_REFUSED : OUTCOME_SILENT;
}

static uint64_t rng_state;
static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* the tally of one kind of variant; the first silent refusal is kept to be named */
typedef struct {
    int done, refused, encoded, encode_refused, silent;
    char first_silent[160];
} tally;

static void count(tally *t, outcome o, const char *what) {
    t->done++;
    if (o == OUTCOME_REFUSED) t->refused++;
    else if (o == OUTCOME_ENCODED) t->encoded++;
    else if (o == OUTCOME_ENCODE_REFUSED) t->encode_refused++;
    else if (!t->silent++) snprintf(t->first_silent, sizeof t->first_silent, "%s", what);
}

static void report_tally(const tally *t, int want, const char *id, const char *kind, const char *path) {
    check(want > 0 && t->done == want && t->silent == 0, id,
          "%d %s of %s: %d refused at load, %d loaded and encoded, %d refused by the encoder, %d refused without a message%s%s",
          t->done, kind, path, t->refused, t->encoded, t->encode_refused, t->silent, t->silent ? ", first: " : "", t->first_silent);
}

static int mutate(const char *path, int n, uint64_t seed, int threads) {
    size_t size;
    uint8_t *orig = check_read("vision.mutate.read", path, &size);
    if (!orig) return check_summary();
    /* the header, key/value and tensor-information region ends where the tensor data begins */
    gguf_file g;
    errmsg err = {0};
    size_t dir_end = size;
    if (gguf_open(&g, orig, size, &err) == 0) {
        dir_end = g.data_offset;
        gguf_close(&g);
    }
    check_note("%s: %zu bytes, tensor data from byte %zu", path, size, dir_end);
    rng_state = seed ? seed : 1;
    char report[600], what[64];
    tally cuts = {0}, flips = {0};
    for (int i = 0; i < n; i++) {
        /* every other cut inside the directory (a few bytes past it too), the rest anywhere */
        size_t cut = (size_t)(next_random() % (i % 2 ? size : (dir_end + 64 < size ? dir_end + 64 : size)));
        uint8_t *t = malloc(cut ? cut : 1);
        memcpy(t, orig, cut);
        snprintf(what, sizeof what, "cut at %zu", cut);
        count(&cuts, try_mmproj(t, cut, threads, report, sizeof report), what);
        free(t);
    }
    report_tally(&cuts, n, "vision.mutate.truncations", "truncations", path);
    uint8_t *b = malloc(size);
    for (int i = 0; i < n; i++) {
        memcpy(b, orig, size);
        int nflips = 1 + (int)(next_random() % 4);
        size_t first = 0;
        for (int f = 0; f < nflips; f++) {
            size_t at = (size_t)(next_random() % dir_end);
            if (!f) first = at;
            b[at] ^= (uint8_t)(1u << (next_random() % 8));
        }
        snprintf(what, sizeof what, "variant %d (%d flips, first at %zu)", i, nflips, first);
        count(&flips, try_mmproj(b, size, threads, report, sizeof report), what);
    }
    report_tally(&flips, n, "vision.mutate.flips", "variants with flipped bits", path);
    free(b);
    free(orig);
    return check_summary();
}

static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    /* exactly the file's size (one byte for an empty file): a read past the end is ASan's */
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = n > 0 ? (size_t)n : 0;
    return b;
}

int main(int argc, char **argv) {
    draw_image();
    if (argc >= 5 && !strcmp(argv[1], "--mutate"))
        return mutate(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), argc >= 6 ? atoi(argv[5]) : 1);
    int first = 1, threads = 1;
    if (argc >= 3 && !strcmp(argv[1], "--threads")) threads = atoi(argv[2]), first = 3;
    for (int i = first; i < argc; i++) {
        size_t size = 0;
        uint8_t *buf = slurp(argv[i], &size);
        char report[600];
        if (!buf) snprintf(report, sizeof report, "ERR\tcannot read");
        else try_mmproj(buf, size, threads, report, sizeof report);
        check_one_line(report + 4); /* the message on one line; the tab after the status stays */
        printf("%s\t%s\n", argv[i], report);
        free(buf);
    }
    return 0;
}
