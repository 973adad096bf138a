/* fuzz_state.c — libFuzzer target for the saved-state reader (wick_state_load, src/state.c).
 * The first input byte chooses (bit 0) the model, gemma3 (sliding-window rings: a context of 64
 * tokens in batches of 8) or lfm2 (a recurrent state with its snapshots), and how the rest is
 * used (bit 1): 0, as the blob itself; 1, as edits of a real blob of that model (a u32 length to
 * cut it to, the whole blob when larger, then (u32 offset, u8 xor) pairs). Bit 2: the blob's model hash, length and check hash
 * are made right first, so that the fuzzer reaches the checks behind them. A refused blob must
 * come with a message and leave the context exactly as it was (its saved state unchanged); one
 * that loads must go on evaluating. */
#include "fuzz_common.h"

#include "state.h"

typedef struct {
    uint8_t *file;
    wick_model *m;
    wick_ctx *c;
    wick_gen *g;
    uint8_t *blob; /* the context's state (a prompt and a few greedy tokens) */
    size_t len;
} subject;

static subject subjects[2];

static void make_subject(subject *s, const char *rel, int n_batch) {
    size_t size;
    s->file = fuzz_read_shared(rel, &size);
    if (wick_model_load_gguf(s->file, size, &s->m) != WICK_OK) { fprintf(stderr, "fuzz: %s: %s\n", rel, wick_last_error()); exit(2); }
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = 64;
    p.n_batch = n_batch;
    int32_t prompt[30];
    for (int i = 0; i < 30; i++) prompt[i] = 3 + (i * 37) % 500;
    if (wick_ctx_new(s->m, &p, &s->c) != WICK_OK || wick_gen_new(s->c, &s->g) != WICK_OK) exit(2);
    wick_gen_set(s->g, "temperature", 0);
    wick_gen_set(s->g, "max_tokens", 4);
    wick_gen_set(s->g, "ignore_eos", 1);
    if (wick_gen_start(s->g, prompt, 30) != WICK_OK) exit(2);
    while (wick_gen_finish(s->g) == WICK_FINISH_NONE)
        if (wick_gen_next(s->g) != WICK_OK) exit(2);
    wick_gen_state_save(s->g, NULL, 0, &s->len);
    s->blob = malloc(s->len);
    if (!s->blob || wick_gen_state_save(s->g, s->blob, s->len, &s->len) != WICK_OK) exit(2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    make_subject(&subjects[0], "models/families/mini-gemma3-f16.gguf", 8);
    make_subject(&subjects[1], "models/families/mini-lfm2-f16.gguf", 8);
    return 0;
}

static uint32_t u32_at(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0];
    subject *s = &subjects[mode & 1];
    data++, size--;
    uint8_t *b;
    size_t len;
    if (mode & 2) { /* edits of the real blob */
        if (size < 4) return 0;
        len = u32_at(data) < s->len ? u32_at(data) : s->len;
        b = malloc(len ? len : 1);
        memcpy(b, s->blob, len);
        for (size_t i = 4; i + 5 <= size; i += 5)
            if (len) b[u32_at(data + i) % len] ^= data[i + 4];
    } else {
        len = size;
        b = malloc(len ? len : 1);
        if (len) memcpy(b, data, len);
    }
    if ((mode & 4) && len >= 96) { /* the model hash, length and check hash made right */
        uint64_t h = state_model_hash(s->m), total = len;
        memcpy(b + 16, &h, 8);
        memcpy(b + 24, &total, 8);
        uint64_t check = state_check_hash(b, len - 8);
        memcpy(b + len - 8, &check, 8);
    }
    wick_status st = wick_gen_state_load(s->g, b, len);
    fuzz_check_status(st, "wick_gen_state_load");
    size_t now_len = 0;
    wick_gen_state_save(s->g, NULL, 0, &now_len);
    uint8_t *now = malloc(now_len);
    FUZZ_CHECK(now && wick_gen_state_save(s->g, now, now_len, &now_len) == WICK_OK, "saving after a load: %s", wick_last_error());
    if (st != WICK_OK) {
        FUZZ_CHECK(now_len == s->len && !memcmp(now, s->blob, s->len), "a refused blob changed the context (%s)", wick_last_error());
    } else {
        /* it loaded: the context goes on from it, then returns to the real state */
        int32_t t = 5;
        if (wick_n_past(s->c) < wick_n_ctx(s->c)) fuzz_check_status(wick_eval(s->c, &t, 1, 0), "wick_eval after a load");
        FUZZ_CHECK(wick_gen_state_load(s->g, s->blob, s->len) == WICK_OK, "the real state no longer loads: %s", wick_last_error());
    }
    free(now);
    free(b);
    return 0;
}
