/* tests/test_session.c — saved sessions (src/state.c): a state saved after a 40-token
 * conversation (a prompt and a greedy answer) and loaded into a fresh context gives the same
 * logits, bit for bit, for the next message and the same greedy continuation, with only the new
 * message evaluated; loaded into a context of another batch size (another ring size for a
 * sliding-window model) and window, the same within rounding; a blob of another model is refused;
 * 300 mutated blobs (truncated, damaged, each header field made wrong and the check hash made to
 * match again, random bytes) are each refused with a message, and the context they were offered
 * to still goes on exactly as before. Usage: test_session MODEL.gguf [MODEL.gguf …]; each file
 * names its checks session.FILE.*; output and exit status: tests/check.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "context.h"
#include "state.h"
#include "wick.h"

#define N_PROMPT 34 /* and 6 greedy tokens: a conversation of 40 */
#define N_ANSWER 6
#define N_NEXT 5
#define N_CONT 8
#define N_MUTATIONS 300

static wick_ctx *new_ctx(const wick_model *m, int n_ctx, int n_batch) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 1;
    wick_ctx *c = NULL;
    if (wick_ctx_new(m, &p, &c) != WICK_OK) check_note("context: %s", wick_last_error());
    return c;
}

static void greedy_setup(wick_gen *g) {
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "ignore_eos", 1);
}

/* what a run from a state gives: the logits of the next message's last token, the greedy tokens after it */
typedef struct {
    float *logits;
    int32_t cont[N_CONT];
    int n_cont, evaluated;
} outcome;

/* gen_start(tokens) then N_CONT greedy tokens */
static int run_on(wick_gen *g, wick_ctx *c, const int32_t *tokens, int n, int n_vocab, outcome *o) {
    greedy_setup(g);
    wick_gen_set(g, "max_tokens", N_CONT);
    if (wick_gen_start(g, tokens, n) != WICK_OK) return check_note("start: %s", wick_last_error()), -1;
    o->evaluated = wick_gen_n_prompt_eval(g);
    o->logits = malloc((size_t)n_vocab * sizeof(float));
    memcpy(o->logits, wick_get_logits(c, -1), (size_t)n_vocab * sizeof(float));
    o->n_cont = 0;
    while (o->n_cont < N_CONT) {
        if (wick_gen_next(g) != WICK_OK) return check_note("next: %s", wick_last_error()), -1;
        o->cont[o->n_cont++] = wick_gen_token(g);
        if (wick_gen_finish(g) != WICK_FINISH_NONE) break;
    }
    return 0;
}

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* the blob's check hash made to match its bytes again (a mutation that only the field checks can catch) */
static void reseal(uint8_t *b, size_t len) {
    uint64_t h = state_check_hash(b, len - 8);
    memcpy(b + len - 8, &h, 8);
}

static void put32(uint8_t *b, size_t at, uint32_t v) { memcpy(b + at, &v, 4); }
static uint32_t get32(const uint8_t *b, size_t at) { uint32_t v; memcpy(&v, b + at, 4); return v; }

/* One mutation of blob (len bytes) into out; returns its length and a name for the message. */
static size_t mutate(const uint8_t *blob, size_t len, uint8_t *out, int n_layers, const char **what) {
    size_t table = 80 + (size_t)n_layers * 12; /* header and layer table (state.c) */
    memcpy(out, blob, len);
    switch (rnd() % 8) {
    case 0: *what = "truncated"; return rnd() % len;
    case 1: { *what = "a byte changed"; out[rnd() % len] ^= (uint8_t)(1 + rnd() % 255); return len; }
    case 2: { /* a header or layer-table byte changed, the hash made to match (not n_ctx, bytes 36..39: only informative) */
        size_t at;
        do at = 8 + rnd() % (table - 8); while (at >= 36 && at < 40);
        out[at] ^= (uint8_t)(1 << (rnd() % 8));
        reseal(out, len);
        *what = "a header byte changed, resealed";
        return len;
    }
    case 3: { /* a field set to a wrong value, resealed */
        static const size_t fields[] = {8, 12, 16, 24, 32, 40, 44, 48, 52, 56, 60, 64, 68};
        size_t at = fields[rnd() % (sizeof fields / sizeof fields[0])];
        uint32_t v = get32(out, at), r = rnd() % 4;
        put32(out, at, r == 0 ? v + 1 : r == 1 ? v - 1 : r == 2 ? 0xFFFFFFFFu : v ^ 0x80000000u);
        reseal(out, len);
        *what = "a field made wrong, resealed";
        return len;
    }
    case 4: { /* a token id past the vocabulary, resealed (a negative id is an image position, wick.h
               * WICK_IMAGE_TOKEN: cached like a token's, so a saved state may hold it) */
        uint32_t n_past = get32(out, 40);
        if (!n_past) { *what = "truncated"; return 0; }
        put32(out, table + 4 * (rnd() % n_past), rnd() % 2 ? 0x40000000u : 0x7FFFFFF0u);
        reseal(out, len);
        *what = "a token id out of range, resealed";
        return len;
    }
    case 5: { /* random bytes after a valid magic */
        size_t n = 16 + rnd() % (len < 4096 ? len : 4096);
        for (size_t i = 8; i < n; i++) out[i] = (uint8_t)rnd();
        *what = "random bytes after the magic";
        return n;
    }
    case 6: { /* random bytes */
        size_t n = rnd() % 256;
        for (size_t i = 0; i < n; i++) out[i] = (uint8_t)rnd();
        *what = "random bytes";
        return n;
    }
    default: { /* a layer's row size or kind changed, resealed */
        size_t at = 80 + (size_t)(rnd() % (uint32_t)n_layers) * 12 + 4 * (rnd() % 3);
        put32(out, at, get32(out, at) + (rnd() % 2 ? 2 : 1));
        reseal(out, len);
        *what = "a layer's row size or kind changed, resealed";
        return len;
    }
    }
}

static void session_cases(const wick_model *m, const wick_model *other, const char *name) {
    const int V = m->config.n_vocab, n_ctx = 128, n_batch = 16;
    int32_t prompt[N_PROMPT], next[N_NEXT];
    for (int i = 0; i < N_PROMPT; i++) prompt[i] = 3 + (int32_t)((i * 104729u + 17u) % (unsigned)(V - 3));
    for (int i = 0; i < N_NEXT; i++) next[i] = 3 + (int32_t)((i * 7919u + 5u) % (unsigned)(V - 3));

    /* the conversation in context A: a prompt and a greedy answer, then its state */
    wick_ctx *a = new_ctx(m, n_ctx, n_batch);
    wick_gen *ga = NULL;
    if (!a || wick_gen_new(a, &ga) != WICK_OK) { check(0, check_id("session.%s.context", name), "a context"); wick_ctx_free(a); return; }
    greedy_setup(ga);
    wick_gen_set(ga, "max_tokens", N_ANSWER + 1); /* the last drawn token is not evaluated */
    int ok = wick_gen_start(ga, prompt, N_PROMPT) == WICK_OK;
    while (ok && wick_gen_finish(ga) == WICK_FINISH_NONE) ok = wick_gen_next(ga) == WICK_OK;
    size_t need = 0;
    ok = ok && wick_gen_state_save(ga, NULL, 0, &need) == WICK_OK && need > 0;
    uint8_t *blob = ok ? malloc(need) : NULL;
    size_t len = need;
    ok = ok && wick_gen_state_save(ga, blob, len, &need) == WICK_OK && need == len;
    int n_conv = wick_n_past(a);
    check(ok && n_conv == N_PROMPT + N_ANSWER, check_id("session.%s.save", name), "a state of %d positions: %zu bytes (%s)", n_conv, len,
          ok ? "saved" : wick_last_error());
    if (!ok) { wick_gen_free(ga); wick_ctx_free(a); free(blob); return; }
    check_note("%s: %zu bytes for %d positions, %.0f bytes per position (KV %zu bytes, recurrent state %zu)", name, len, n_conv,
               (double)len / n_conv, wick_kv_bytes(a), ctx_state_bytes(a) / 3);

    /* the conversation's token ids, from the blob (a context of the same shape) */
    int32_t conv[N_PROMPT + N_ANSWER + N_NEXT];
    wick_ctx *b = new_ctx(m, n_ctx, n_batch);
    int32_t n_tok = 0;
    ok = b && wick_state_load(b, blob, len, conv, N_PROMPT + N_ANSWER, &n_tok) == WICK_OK;
    check(ok && n_tok == n_conv && !memcmp(conv, prompt, sizeof prompt) && wick_n_past(b) == n_conv, check_id("session.%s.load", name),
          "loaded into a fresh context: %d token ids, the prompt's first (%s)", n_tok, ok ? "loaded" : wick_last_error());
    wick_ctx_free(b);
    if (!ok) { wick_gen_free(ga); wick_ctx_free(a); free(blob); return; }
    memcpy(conv + n_conv, next, sizeof next);
    int n_all = n_conv + N_NEXT;

    /* A goes on: the next message and a greedy continuation (the reference) */
    outcome ref = {0}, got = {0};
    ok = run_on(ga, a, conv, n_all, V, &ref) == 0;
    check(ok && ref.evaluated == N_NEXT, check_id("session.%s.reference", name), "the first context evaluates %d of %d prompt tokens (want %d)",
          ref.evaluated, n_all, N_NEXT);

    /* a fresh context and generator from the blob: the same, bit for bit */
    b = new_ctx(m, n_ctx, n_batch);
    wick_gen *gb = NULL;
    ok = ok && b && wick_gen_new(b, &gb) == WICK_OK && wick_gen_state_load(gb, blob, len) == WICK_OK && run_on(gb, b, conv, n_all, V, &got) == 0;
    check(ok && got.evaluated == N_NEXT, check_id("session.%s.fresh.evaluated", name), "after loading: %d of %d prompt tokens evaluated (want %d)",
          got.evaluated, n_all, N_NEXT);
    check(ok && !memcmp(got.logits, ref.logits, (size_t)V * sizeof(float)), check_id("session.%s.fresh.logits", name),
          "the next message's logits equal the first context's bit for bit");
    check(ok && got.n_cont == ref.n_cont && !memcmp(got.cont, ref.cont, sizeof ref.cont), check_id("session.%s.fresh.greedy", name),
          "the same %d greedy tokens after it", ref.n_cont);
    free(got.logits);
    got.logits = NULL;

    /* into a context of another batch size and window (a sliding layer's ring of another size) */
    wick_ctx *d = new_ctx(m, 192, 5);
    wick_gen *gd = NULL;
    ok = d && wick_gen_new(d, &gd) == WICK_OK && wick_gen_state_load(gd, blob, len) == WICK_OK && run_on(gd, d, conv, n_all, V, &got) == 0;
    double diff = ok ? check_row_difference(got.logits, ref.logits, V) : INFINITY;
    check(ok && got.evaluated == N_NEXT && diff < 1e-4 && !memcmp(got.cont, ref.cont, (size_t)got.n_cont * 4) && got.n_cont == ref.n_cont,
          check_id("session.%s.other-shape", name), "a context of 192 tokens in batches of 5: %d evaluated, logits within %.2g of the first's, "
          "the same greedy tokens (%s)", got.evaluated, diff, ok ? "loaded" : wick_last_error());
    free(got.logits);
    got.logits = NULL;
    wick_gen_free(gd);
    wick_ctx_free(d);

    /* another model's context refuses it, and stays empty */
    if (other) {
        wick_ctx *o = new_ctx(other, n_ctx, n_batch);
        int32_t toks[64], n = -1;
        wick_status s = o ? wick_state_load(o, blob, len, toks, 64, &n) : WICK_OK;
        check(o && s != WICK_OK && strlen(wick_last_error()) > 10 && wick_n_past(o) == 0 && n == -1, check_id("session.%s.other-model", name),
              "another model's context: %s", wick_last_error());
        wick_ctx_free(o);
    }

    /* 300 mutated blobs offered to a context that holds the state: each refused with a message,
     * the context unchanged (it then goes on exactly as the reference) */
    wick_ctx *e = new_ctx(m, n_ctx, n_batch);
    wick_gen *ge = NULL;
    ok = e && wick_gen_new(e, &ge) == WICK_OK && wick_gen_state_load(ge, blob, len) == WICK_OK;
    uint8_t *mut = malloc(len > 4096 ? len : 4096);
    int refused = 0, with_message = 0, kept = 0, accepted = 0;
    rng_state = 0x5EED0000u + (uint64_t)len;
    const char *first_accepted = NULL;
    for (int i = 0; ok && i < N_MUTATIONS; i++) {
        const char *what = "";
        size_t n = mutate(blob, len, mut, m->config.n_layers, &what);
        if (n == len && !memcmp(mut, blob, len)) { i--; continue; } /* a mutation that changed nothing (a byte xored back) */
        wick_status s = wick_gen_state_load(ge, mut, n);
        if (s == WICK_OK) {
            if (!first_accepted) first_accepted = what;
            accepted++;
            wick_gen_state_load(ge, blob, len); /* back to the state, so that the later checks still mean something */
            continue;
        }
        refused++;
        if (strncmp(wick_last_error(), "saved state", 11) == 0 || strlen(wick_last_error()) > 10) with_message++;
        if (wick_n_past(e) == n_conv) kept++;
        if (i < 3) check_note("%s: %s", what, wick_last_error());
    }
    check(ok && refused == N_MUTATIONS && with_message == N_MUTATIONS && kept == N_MUTATIONS, check_id("session.%s.mutations", name),
          "%d of %d mutated blobs refused, %d with a message, the context kept its %d positions after %d (%d accepted%s%s)", refused, N_MUTATIONS,
          with_message, n_conv, kept, accepted, first_accepted ? ": " : "", first_accepted ? first_accepted : "");
    ok = ok && run_on(ge, e, conv, n_all, V, &got) == 0;
    check(ok && got.evaluated == N_NEXT && !memcmp(got.logits, ref.logits, (size_t)V * sizeof(float)) && got.n_cont == ref.n_cont &&
              !memcmp(got.cont, ref.cont, sizeof ref.cont),
          check_id("session.%s.after-mutations", name), "after them the context goes on as the reference: %d evaluated, the same logits and "
          "greedy tokens", got.evaluated);
    free(got.logits);
    free(ref.logits);
    free(mut);
    free(blob);
    wick_gen_free(ge);
    wick_ctx_free(e);
    wick_gen_free(gb);
    wick_ctx_free(b);
    wick_gen_free(ga);
    wick_ctx_free(a);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_session MODEL.gguf [MODEL.gguf …]\n");
        return 2;
    }
    int n = argc - 1;
    wick_model **models = calloc((size_t)n, sizeof *models);
    void **bufs = calloc((size_t)n, sizeof *bufs);
    const char **names = calloc((size_t)n, sizeof *names);
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(argv[i + 1], '/');
        names[i] = slash ? slash + 1 : argv[i + 1];
        size_t size = 0;
        bufs[i] = check_read(check_id("session.%s.read", names[i]), argv[i + 1], &size);
        if (bufs[i] && !check(wick_model_load_gguf(bufs[i], size, &models[i]) == WICK_OK, check_id("session.%s.model", names[i]), "%s",
                              wick_last_error()))
            models[i] = NULL;
    }
    for (int i = 0; i < n; i++)
        if (models[i]) session_cases(models[i], models[(i + 1) % n] != models[i] ? models[(i + 1) % n] : NULL, names[i]);
    for (int i = 0; i < n; i++) {
        wick_model_free(models[i]);
        free(bufs[i]);
    }
    free(models);
    free(bufs);
    free(names);
    return check_summary();
}
