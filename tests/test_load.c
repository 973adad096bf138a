/* tests/test_load.c — loads model files through the public API and reports, one line each,
 *   FILE <tab> OK <tab> eval:ok|eval:error: message     or     FILE <tab> ERR <tab> message
 * so the node tests can check that every hostile file gives a clean error (and never a crash).
 * A llama2.c checkpoint is given as CHECKPOINT.bin:TOKENIZER.bin.
 * With --mutate FILE COUNT SEED it truncates FILE at COUNT points and flips COUNT random bytes of
 * its header and directory, loading (and, where that succeeds, evaluating) each variant in memory,
 * as three checks of tests/check.h (load.mutate.read, .truncations, .flips): they pass when nothing
 * crashed, a crash ends the program before its summary line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wick.h"

static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    *size = n > 0 ? (size_t)n : 0;
    return b;
}

/* Loads one buffer; on success evaluates two tokens in a small context. Returns the status. */
static wick_status try_model(const uint8_t *buf, size_t size, const uint8_t *tok, size_t tok_size, char *report, size_t len) {
    wick_model *m = NULL;
    wick_status s = tok ? wick_model_load_llama2c(buf, size, tok, tok_size, &m) : wick_model_load_gguf(buf, size, &m);
    if (s != WICK_OK) {
        snprintf(report, len, "ERR\t%s", wick_last_error());
        return s;
    }
    wick_model_info info;
    wick_model_get_info(m, &info);
    if (!info.has_weights) {
        snprintf(report, len, "OK\tvocab-only");
        wick_model_free(m);
        return WICK_OK;
    }
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 8;
    wick_ctx *c = NULL;
    s = wick_ctx_new(m, &p, &c);
    if (s == WICK_OK) {
        int32_t toks[2] = {info.bos >= 0 && info.bos < info.n_vocab ? info.bos : 0, info.n_vocab - 1};
        s = wick_eval(c, toks, 2, 1);
    }
    snprintf(report, len, "OK\teval:%s%s", s == WICK_OK ? "ok" : "error: ", s == WICK_OK ? "" : wick_last_error());
    wick_ctx_free(c);
    wick_model_free(m);
    return WICK_OK;
}

static uint64_t rng_state;
static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int mutate(const char *path, int count, uint64_t seed) {
    size_t size;
    uint8_t *orig = check_read("load.mutate.read", path, &size);
    if (!orig) return check_summary();
    /* the directory ends where the tensor data begins: flips there exercise the parser */
    wick_model *m;
    size_t dir_end = size;
    if (wick_model_load_gguf(orig, size, &m) == WICK_OK) {
        wick_model_free(m);
        dir_end = size < 65536 ? size : 65536;
    }
    rng_state = seed ? seed : 1;
    int done = 0, errors = 0;
    char report[600];
    for (int i = 0; i < count; i++) {
        size_t cut = (size_t)(next_random() % size);
        uint8_t *t = malloc(cut ? cut : 1);
        memcpy(t, orig, cut);
        errors += try_model(t, cut, NULL, 0, report, sizeof report) != WICK_OK;
        free(t);
        done++;
    }
    check(count > 0 && done == count, "load.mutate.truncations", "%d truncations of %s loaded or refused without a crash (%d refused)", done, path, errors);
    done = errors = 0;
    uint8_t *b = malloc(size);
    for (int i = 0; i < count; i++) {
        memcpy(b, orig, size);
        int flips = 1 + (int)(next_random() % 4);
        for (int f = 0; f < flips; f++) b[next_random() % dir_end] ^= (uint8_t)(1u << (next_random() % 8));
        errors += try_model(b, size, NULL, 0, report, sizeof report) != WICK_OK;
        done++;
    }
    check(count > 0 && done == count, "load.mutate.flips", "%d variants of %s with flipped bits loaded or refused without a crash (%d refused)", done, path,
          errors);
    free(b);
    free(orig);
    return check_summary();
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "--mutate")) return mutate(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
    for (int i = 1; i < argc; i++) {
        char path[1024], *tok_path = NULL;
        snprintf(path, sizeof path, "%s", argv[i]);
        char *colon = strrchr(path, ':');
        if (colon && strstr(path, ".bin:")) { *colon = 0; tok_path = colon + 1; }
        size_t size = 0, tok_size = 0;
        uint8_t *buf = slurp(path, &size), *tok = tok_path ? slurp(tok_path, &tok_size) : NULL;
        char report[600];
        if (!buf || (tok_path && !tok)) snprintf(report, sizeof report, "ERR\tcannot read");
        else try_model(buf, size, tok, tok_size, report, sizeof report);
        printf("%s\t%s\n", argv[i], report);
        free(buf);
        free(tok);
    }
    return 0;
}
