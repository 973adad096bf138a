/* bench_grammar.c — what a grammar costs per sampled token with a large vocabulary (issue 17):
 * the sampler chain alone against the same chain with a GBNF constraint (sampler_sample_filtered
 * with the filter generate.c uses: the matcher's first-byte filter, then grammar_matcher_fits),
 * over a synthetic vocabulary of n_vocab pieces shaped like a byte-level BPE's (words with and
 * without a leading space, punctuation runs, digits, multi-byte characters and bare UTF-8 bytes)
 * and random logits. Three matcher states of a JSON grammar: at the start (only "{" and spaces
 * fit: the top candidates rarely do, so the whole vocabulary is filtered), inside a string (most
 * tokens fit: the top candidates do), after a number (a few dozen tokens fit).
 *
 *   bench_grammar GRAMMAR.gbnf [n_vocab = 152064] [draws = 500]
 *
 * Prints one line per state: "grammar-bench <state> unconstrained_us=… constrained_us=…
 * fallback=…%" (microseconds per draw; fallback: the share of draws that filtered the whole
 * vocabulary). Default chain: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif
#include "grammar.h"
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

typedef struct {
    grammar_matcher *m;
    const char *bytes;     /* all pieces */
    const int32_t *off;    /* n_vocab + 1 */
    bool first[256];
    bool tokens_possible;
    int32_t calls;         /* filter calls in this draw */
} bench_filter;

/* generate.c's grammar_allows, less the EOG rule (this vocabulary has no EOG token) */
static bool allows(void *ctx, int32_t t) {
    bench_filter *f = ctx;
    f->calls++;
    const char *b = f->bytes + f->off[t];
    size_t n = (size_t)(f->off[t + 1] - f->off[t]);
    if (n == 0 || (!f->first[(unsigned char)b[0]] && !f->tokens_possible)) return false;
    return grammar_matcher_fits(f->m, t, b, n);
}

static char *read_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, fp) != (size_t)n) { fclose(fp); free(buf); return NULL; }
    fclose(fp);
    buf[n] = 0;
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_grammar GRAMMAR.gbnf [n_vocab] [draws]\n");
        return 2;
    }
    int32_t n_vocab = argc > 2 ? atoi(argv[2]) : 152064;
    int draws = argc > 3 ? atoi(argv[3]) : 500;
    char *gbnf = read_file(argv[1]);
    if (!gbnf) { fprintf(stderr, "cannot read %s\n", argv[1]); return 2; }
    errmsg err = {0};
    wick_grammar *g;
    if (grammar_parse(gbnf, strlen(gbnf), NULL, &g, &err)) { fprintf(stderr, "%s\n", err.text); return 1; }

    /* the synthetic vocabulary */
    uint64_t rng = 17;
    int32_t *off = malloc(((size_t)n_vocab + 1) * sizeof *off);
    char *bytes = malloc((size_t)n_vocab * 12);
    static const char *punct[] = {"\"", "{", "}", ":", ",", "[", "]", "\":", "\",", " \"", "{\"", "\"}", ".", "\n", "  ", "!", "?", "-", "();", "\\n"};
    static const char *multi[] = {"\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xC3", "\xA9", "\xE2\x80", "\xD0\xBF\xD1\x80"};
    int32_t len = 0;
    for (int32_t t = 0; t < n_vocab; t++) {
        off[t] = len;
        uint64_t kind = sampler_rng_next(&rng) % 100;
        char *p = bytes + len;
        int n = 0;
        if (kind < 70) { /* a word, 2–8 letters, with a leading space 60% of the time, capitalised 15% */
            if (kind < 42) p[n++] = ' ';
            int w = 2 + (int)(sampler_rng_next(&rng) % 7);
            for (int i = 0; i < w; i++) p[n++] = (char)('a' + sampler_rng_next(&rng) % 26);
            if (kind % 7 == 0) p[n - w] = (char)(p[n - w] - 32);
        } else if (kind < 80) {
            const char *s = punct[sampler_rng_next(&rng) % (sizeof punct / sizeof *punct)];
            n = (int)strlen(s);
            memcpy(p, s, (size_t)n);
        } else if (kind < 90) {
            int w = 1 + (int)(sampler_rng_next(&rng) % 3);
            for (int i = 0; i < w; i++) p[n++] = (char)('0' + sampler_rng_next(&rng) % 10);
        } else {
            const char *s = multi[sampler_rng_next(&rng) % (sizeof multi / sizeof *multi)];
            n = (int)strlen(s);
            memcpy(p, s, (size_t)n);
        }
        len += n;
    }
    off[n_vocab] = len;

    /* logits: a few rows of random values, a spread like a model's (std ~3) */
    enum { ROWS = 8 };
    float *logits = malloc((size_t)ROWS * n_vocab * sizeof *logits);
    for (size_t i = 0; i < (size_t)ROWS * n_vocab; i++) {
        double u = sampler_uniform(&rng) + sampler_uniform(&rng) + sampler_uniform(&rng) - 1.5;
        logits[i] = (float)(u * 6.0);
    }

    wick_sampler_params sp;
    sampler_params_default(&sp);
    sp.repeat_penalty = 1.0f;
    wick_sampler *s;
    if (sampler_new(&s, &sp, n_vocab, &err)) { fprintf(stderr, "%s\n", err.text); return 1; }
    bench_filter f = {.m = grammar_matcher_new(g), .bytes = bytes, .off = off};

    static const struct { const char *name, *prefix; } states[] = {
        {"start", ""},
        {"in-string", "{\"name\": \"Al"},
        {"after-number", "{\"a\": [1, 2, 34"},
    };
    for (size_t k = 0; k < sizeof states / sizeof *states; k++) {
        grammar_matcher_reset(f.m);
        if (*states[k].prefix && grammar_matcher_accept(f.m, -1, states[k].prefix, strlen(states[k].prefix)) != 1) {
            fprintf(stderr, "the grammar does not take the prefix %s\n", states[k].prefix);
            return 1;
        }
        grammar_matcher_first_bytes(f.m, f.first, &f.tokens_possible);
        int64_t sink = 0;
        for (int i = 0; i < ROWS; i++) sink += sampler_sample(s, logits + (size_t)i * n_vocab); /* warm-up */
        double t0 = now_us();
        for (int i = 0; i < draws; i++) sink += sampler_sample(s, logits + (size_t)(i % ROWS) * n_vocab);
        double t1 = now_us();
        int fallbacks = 0;
        for (int i = 0; i < draws; i++) {
            f.calls = 0;
            int32_t tok = sampler_sample_filtered(s, logits + (size_t)(i % ROWS) * n_vocab, allows, &f);
            if (tok < 0 || !grammar_matcher_fits(f.m, tok, bytes + off[tok], (size_t)(off[tok + 1] - off[tok]))) {
                fprintf(stderr, "state %s: drew %d, which the grammar does not allow\n", states[k].name, tok);
                return 1;
            }
            if (f.calls > 64) fallbacks++; /* more checks than candidates: the whole vocabulary */
            sink += tok;
        }
        double t2 = now_us();
        printf("grammar-bench %s n_vocab=%d unconstrained_us=%.1f constrained_us=%.1f fallback=%.0f%% (%lld)\n", states[k].name,
               n_vocab, (t1 - t0) / draws, (t2 - t1) / draws, 100.0 * fallbacks / draws, (long long)(sink & 1));
    }
    grammar_matcher_free(f.m);
    sampler_free(s);
    grammar_free(g);
    free(logits);
    free(bytes);
    free(off);
    free(gbnf);
    return 0;
}
