/* fuzz_common.h — shared by the libFuzzer targets in tests/fuzz: the checks every target makes
 * on the public API's error contract ("errors are values"), and reading the fixed companion
 * files (tok512.bin, stories260K.bin, the vocabularies) from ../shared or $WICK_SHARED. */
#ifndef WICK_FUZZ_COMMON_H
#define WICK_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick.h"

/* A finding that is not a sanitizer report: libFuzzer saves the input when the target aborts. */
#define FUZZ_CHECK(cond, ...)                                        \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);       \
            fprintf(stderr, __VA_ARGS__);                            \
            fputc('\n', stderr);                                     \
            abort();                                                 \
        }                                                            \
    } while (0)

/* A failing status must come with a message; a status is one of the enum's values. */
static inline void fuzz_check_status(wick_status s, const char *what) {
    FUZZ_CHECK(s >= WICK_OK && s <= WICK_ERR_CONTEXT_FULL, "%s returned status %d", what, (int)s);
    if (s != WICK_OK) {
        const char *msg = wick_last_error();
        FUZZ_CHECK(msg && msg[0], "%s failed (status %d) without a message", what, (int)s);
        FUZZ_CHECK(strlen(msg) < 4096, "%s: message of %zu bytes", what, strlen(msg));
    }
}

/* $WICK_SHARED/rel, else ../shared/rel (make runs the fuzzers from the project root). */
static inline uint8_t *fuzz_read_shared(const char *rel, size_t *size) {
    const char *shared = getenv("WICK_SHARED");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", shared && shared[0] ? shared : "../shared", rel);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "fuzz: cannot open %s (set WICK_SHARED)\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (!b || (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n)) { fprintf(stderr, "fuzz: cannot read %s\n", path); exit(2); }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Runs a loaded model the way a page does first: info, a context of 8 tokens, one batch of two
 * tokens, the logits read back; then a few tokens of text through the tokenizer and back. */
static inline void fuzz_exercise_model(wick_model *m) {
    wick_model_info info;
    wick_status s = wick_model_get_info(m, &info);
    fuzz_check_status(s, "wick_model_get_info");
    if (s != WICK_OK) return;
    FUZZ_CHECK(info.n_vocab > 0, "a loaded model with %d tokens", info.n_vocab);
    char json[256];
    size_t needed = 0;
    fuzz_check_status(wick_model_info_json(m, json, sizeof json, &needed), "wick_model_info_json");
    if (needed >= sizeof json) {
        char *big = malloc(needed + 1);
        if (big) {
            fuzz_check_status(wick_model_info_json(m, big, needed + 1, &needed), "wick_model_info_json");
            free(big);
        }
    }

    int32_t ids[64], n_ids = 0;
    static const char text[] = "Once upon a time, <s> there was\n\t a caf\xc3\xa9 \xf0\x9f\x98\x80 <|im_start|>user\xff";
    for (int special = 0; special < 2; special++) {
        s = wick_tokenize(m, text, sizeof text - 1, 1, special, ids, 64, &n_ids);
        fuzz_check_status(s, "wick_tokenize");
        if (s != WICK_OK) continue;
        for (int i = 0; i < n_ids && i < 64; i++) {
            FUZZ_CHECK(ids[i] >= 0 && ids[i] < info.n_vocab, "token %d of %d", ids[i], info.n_vocab);
            char piece[16];
            int32_t n_bytes = 0;
            fuzz_check_status(wick_token_to_piece(m, ids[i], piece, sizeof piece, &n_bytes), "wick_token_to_piece");
            (void)wick_token_is_eog(m, ids[i]);
        }
    }

    if (!info.has_weights) return;
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 8;
    wick_ctx *c = NULL;
    s = wick_ctx_new(m, &p, &c);
    fuzz_check_status(s, "wick_ctx_new");
    if (s != WICK_OK) return;
    int32_t toks[2] = {info.bos >= 0 && info.bos < info.n_vocab ? info.bos : 0, info.n_vocab - 1};
    s = wick_eval(c, toks, 2, 1);
    fuzz_check_status(s, "wick_eval");
    if (s == WICK_OK) {
        FUZZ_CHECK(wick_n_past(c) == 2, "n_past %d after two tokens", wick_n_past(c));
        const float *l = wick_get_logits(c, 0);
        FUZZ_CHECK(l != NULL, "logits of position 0 kept");
        volatile float sum = 0;
        for (int i = 0; i < info.n_vocab; i++) sum += l[i]; /* reads every logit: ASan checks the row */
        (void)sum;
    }
    wick_ctx_free(c);
}

#endif
