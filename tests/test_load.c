/* tests/test_load.c — loads model files through the public API and reports, one line each,
 *   FILE <tab> OK <tab> eval:ok|eval:error: message     or     FILE <tab> ERR <tab> message
 * so the node tests can check that every hostile file gives a clean error (and never a crash).
 * A llama2.c checkpoint is given as CHECKPOINT.bin:TOKENIZER.bin.
 * With --mutate FILE COUNT SEED it truncates FILE at COUNT points and flips COUNT random bytes of
 * its header and directory, loading (and, where that succeeds, evaluating) each variant in memory,
 * as three checks of tests/check.h (load.mutate.read, .truncations, .flips): they pass when nothing
 * crashed, a crash ends the program before its summary line. With --sparse FILE OFFSET BYTES
 * [THREADS] it loads FILE with those bytes (its per-layer embedding table) left out and read back
 * through a reader, and compares the logits with the whole file's (1 … THREADS threads). */
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

/* --sparse: the file whole, and without bytes [offset, offset + bytes) (its row table), read back
 * through file_read from the whole copy; both evaluate one prompt, every row's logits kept. */
static const uint8_t *whole_file;
static int reads_failing;
static int32_t file_read(void *user, int32_t part, uint64_t offset, void *dst, size_t n) {
    (void)user;
    if (part != 0 || reads_failing) return -1;
    memcpy(dst, whole_file + offset, n);
    return 0;
}

static int prompt_logits(wick_model *m, int threads, float **out, int32_t *n_vocab) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 64;
    p.n_threads = threads;
    wick_ctx *c = NULL;
    const int32_t tokens[] = {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889};
    const int n = (int)(sizeof tokens / sizeof tokens[0]);
    wick_model_info info;
    if (wick_model_get_info(m, &info) || wick_ctx_new(m, &p, &c)) return -1;
    wick_status s = wick_eval(c, tokens, n, 1);
    if (!s) {
        *n_vocab = info.n_vocab;
        *out = malloc((size_t)n * (size_t)info.n_vocab * sizeof(float));
        for (int i = 0; i < n; i++) memcpy(*out + (size_t)i * info.n_vocab, wick_get_logits(c, i), (size_t)info.n_vocab * sizeof(float));
    } else {
        check_note("eval: %s", wick_ctx_last_error(c));
    }
    wick_ctx_free(c);
    return s ? -1 : n;
}

static int sparse(const char *path, uint64_t offset, uint64_t bytes, int max_threads) {
    size_t size = 0;
    uint8_t *buf = slurp(path, &size);
    if (!check(buf && offset + bytes <= size, "load.sparse.read", "%s holds bytes %llu + %llu", path,
               (unsigned long long)offset, (unsigned long long)bytes)) {
        free(buf);
        return check_summary();
    }
    whole_file = buf;
    /* the file less the hole, in a buffer of its own (the engine may rewrite weights in place) */
    uint8_t *cut = malloc(size - bytes), *copy = malloc(size);
    memcpy(cut, buf, offset);
    memcpy(cut + offset, buf + offset + bytes, size - offset - bytes);
    memcpy(copy, buf, size);
    const void *bufs[] = {cut};
    size_t sizes[] = {size - bytes};
    uint64_t hole[] = {0, offset, bytes};
    wick_model *in = NULL, *out = NULL;
    check(wick_model_load_gguf(copy, size, &in) == WICK_OK, "load.sparse.whole", "the whole file loads");
    check(wick_model_load_gguf_sparse(bufs, sizes, 1, hole, 1, file_read, NULL, &out) == WICK_OK, "load.sparse.cut",
          "the file with its table left out loads");
    for (int threads = 1; in && out && threads <= max_threads; threads++) {
        float *a = NULL, *b = NULL;
        int32_t nv = 0;
        int rows = prompt_logits(in, threads, &a, &nv), rows_out = prompt_logits(out, threads, &b, &nv);
        check(rows > 0 && rows == rows_out && !memcmp(a, b, (size_t)rows * (size_t)nv * sizeof(float)),
              check_id("load.sparse.logits.t%d", threads), "the same logits, bit for bit, %d thread%s", threads, threads > 1 ? "s" : "");
        free(a);
        free(b);
    }
    /* a reader that fails: the evaluation fails with a message, and the context stays usable */
    reads_failing = 1;
    float *none = NULL;
    int32_t nv = 0;
    check(out && prompt_logits(out, 1, &none, &nv) < 0, "load.sparse.reader-fails", "a failing reader fails the evaluation");
    reads_failing = 0;
    wick_model_free(out);
    out = NULL;
    /* a hole that cuts into the tensor before the table, or a table with no reader, is refused */
    uint64_t bad[] = {0, offset - 32, bytes + 32};
    sizes[0] = size - bytes - 32;
    memcpy(cut + offset - 32, buf + offset + bytes, size - offset - bytes);
    check(wick_model_load_gguf_sparse(bufs, sizes, 1, bad, 1, file_read, NULL, &out) == WICK_ERR_INVALID_ARG &&
              strstr(wick_last_error(), "partly left out"), "load.sparse.cut-tensor", "a hole that cuts a tensor is refused");
    wick_model_free(out);
    wick_model_free(in);
    free(cut);
    free(copy);
    free(buf);
    return check_summary();
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "--mutate")) return mutate(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
    if (argc >= 5 && !strcmp(argv[1], "--sparse"))
        return sparse(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argc >= 6 ? atoi(argv[5]) : 1);
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
