/* fuzz_tokenizer.c — libFuzzer target for the tokenizer, the detokenizers and vocabulary loading.
 *
 * An input that starts with "GGUF" is a (vocab-only or full) GGUF file: it is loaded and, when it
 * loads, its vocabulary is exercised: every token's piece, the whole-sequence detokenizer, the
 * streaming detokenizer over every token, and a sample text tokenized with and without special
 * tokens. Any other input is a selector byte and a payload, run against one of the fixed
 * vocabularies (the four of ../shared/vocab, stories260K.gguf, and the llama2.c tok512.bin):
 *   selector bits 0-2: the vocabulary (mod 6); bit 3: parse_special; bit 4: add BOS;
 *   bits 5-6: 0, 1 — the payload is text: tokenized (asking first with too little room, as the
 *                    API allows), then detokenized whole and streamed;
 *             2 — the payload is a list of u16 ids (some out of range): token_to_piece,
 *                 the whole-sequence detokenizer with a buffer of each size up to the need;
 *             3 — the payload is a list of ids streamed through the detokenizer with output
 *                 buffers that are often too small (the stream must then be unchanged).
 * Findings besides sanitizer reports: an id out of range from the tokenizer, a count that
 * changes between calls, streamed text that is not valid UTF-8, the documented output bound
 * 3 * (max piece + 3) not sufficing, a refused push that changed the stream. */
#include "fuzz_common.h"
#include "model.h"
#include "tokenizer.h"

enum { N_VOCABS = 6 };
static wick_model *vocabs[N_VOCABS];

static wick_model *load_gguf_file(const char *rel) {
    size_t size;
    uint8_t *buf = fuzz_read_shared(rel, &size); /* kept for the process: the model holds views */
    wick_model *m = NULL;
    if (wick_model_load_gguf(buf, size, &m) != WICK_OK) {
        fprintf(stderr, "fuzz: cannot load %s: %s\n", rel, wick_last_error());
        exit(2);
    }
    return m;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    vocabs[0] = load_gguf_file("vocab/ggml-vocab-llama-spm.gguf");
    vocabs[1] = load_gguf_file("vocab/ggml-vocab-gpt-2.gguf");
    vocabs[2] = load_gguf_file("vocab/ggml-vocab-deepseek-coder.gguf");
    vocabs[3] = load_gguf_file("vocab/ggml-vocab-phi-3.gguf");
    vocabs[4] = load_gguf_file("models/stories260K.gguf");
    static uint8_t *bin, *tok; /* kept for the process, as above */
    size_t bin_size, tok_size;
    bin = fuzz_read_shared("models/stories260K.bin", &bin_size);
    tok = fuzz_read_shared("models/tok512.bin", &tok_size);
    if (wick_model_load_llama2c(bin, bin_size, tok, tok_size, &vocabs[5]) != WICK_OK) {
        fprintf(stderr, "fuzz: cannot load stories260K.bin: %s\n", wick_last_error());
        exit(2);
    }
    return 0;
}

/* Whether p[0..n) is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static int valid_utf8(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        else if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return 0;
        if (i + len > n) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += len;
    }
    return 1;
}

/* Streams ids through a detokenizer. small: first try a buffer of 0-7 bytes (a refusal must
 * leave the stream as it was). Checks the documented bound and that all output is UTF-8. */
static void stream(const wick_vocab *v, const int32_t *ids, int n, int continuing, const uint8_t *sizes, size_t n_sizes) {
    detok_stream s;
    if (continuing) detok_init_continuing(&s, v);
    else detok_init(&s, v);
    int bound = 3 * (vocab_max_piece_len(v) + 3);
    char *out = malloc((size_t)bound);
    if (!out) return;
    for (int i = 0; i < n; i++) {
        if (n_sizes) {
            int small = sizes[i % n_sizes] % 8;
            char tiny[8];
            detok_stream before = s;
            int w = detok_push(&s, ids[i], tiny, small);
            if (w < 0) {
                FUZZ_CHECK(!memcmp(&before, &s, sizeof s), "a refused push changed the stream (token %d)", ids[i]);
            } else {
                FUZZ_CHECK(w <= small, "push wrote %d bytes into %d", w, small);
                FUZZ_CHECK(valid_utf8((const uint8_t *)tiny, (size_t)w), "streamed text of token %d is not UTF-8", ids[i]);
                continue;
            }
        }
        int w = detok_push(&s, ids[i], out, bound);
        if (ids[i] < 0 || ids[i] >= vocab_n_tokens(v)) {
            FUZZ_CHECK(w == -1, "push of id %d out of range gave %d", ids[i], w);
            continue;
        }
        FUZZ_CHECK(w >= 0, "push of token %d refused with %d bytes of room (the documented bound)", ids[i], bound);
        FUZZ_CHECK(valid_utf8((const uint8_t *)out, (size_t)w), "streamed text of token %d is not UTF-8", ids[i]);
    }
    int w = detok_flush(&s, out, bound);
    FUZZ_CHECK(w >= 0, "flush refused with %d bytes of room", bound);
    FUZZ_CHECK(valid_utf8((const uint8_t *)out, (size_t)w), "flushed text is not UTF-8");
    free(out);
}

/* The whole-sequence detokenizer: asked with a buffer too small for some sizes, it must say the
 * same length each time and write nothing past the room it was given. */
static void detokenize(const wick_vocab *v, const int32_t *ids, int n, const uint8_t *sizes, size_t n_sizes) {
    int need = vocab_detokenize(v, ids, n, NULL, 0);
    int any_bad = 0;
    for (int i = 0; i < n; i++) any_bad |= ids[i] < 0 || ids[i] >= vocab_n_tokens(v);
    if (any_bad) {
        FUZZ_CHECK(need == -1, "detokenize with an id out of range gave %d", need);
        return;
    }
    FUZZ_CHECK(need >= 0, "detokenize of valid ids failed");
    char *buf = malloc((size_t)need + 1);
    if (!buf) return;
    int got = vocab_detokenize(v, ids, n, buf, need + 1);
    FUZZ_CHECK(got == need, "detokenize needed %d, then wrote %d", need, got);
    FUZZ_CHECK(buf[need] == 0, "detokenized text not NUL-terminated");
    if (n_sizes) {
        int room = need ? sizes[0] % (need + 1) : 0; /* a short buffer: malloc'd to its exact size */
        char *shortbuf = malloc((size_t)room + 1);
        if (shortbuf) {
            got = vocab_detokenize(v, ids, n, shortbuf, room);
            FUZZ_CHECK(got == need, "detokenize into %d bytes said %d, not %d", room, got, need);
            if (room > 0) FUZZ_CHECK(!memcmp(shortbuf, buf, (size_t)room - 1), "short detokenize wrote other bytes");
            free(shortbuf);
        }
    }
    free(buf);
}

static void run_text(const wick_model *m, const uint8_t *text, size_t len, int add_bos, int special) {
    int32_t first[4], n_tokens = 0;
    wick_status s = wick_tokenize(m, (const char *)text, len, add_bos, special, first, 4, &n_tokens);
    fuzz_check_status(s, "wick_tokenize");
    if (s != WICK_OK) return;
    FUZZ_CHECK(n_tokens >= 0, "%d tokens", n_tokens);
    int32_t *ids = malloc(sizeof *ids * (size_t)(n_tokens ? n_tokens : 1));
    if (!ids) return;
    int32_t again = 0;
    s = wick_tokenize(m, (const char *)text, len, add_bos, special, ids, n_tokens, &again);
    fuzz_check_status(s, "wick_tokenize");
    FUZZ_CHECK(s == WICK_OK && again == n_tokens, "count %d, then %d with room", n_tokens, again);
    FUZZ_CHECK(!memcmp(first, ids, sizeof *ids * (size_t)(n_tokens < 4 ? n_tokens : 4)), "the first ids differ with more room");
    int32_t n_vocab = vocab_n_tokens(m->vocab);
    for (int i = 0; i < n_tokens; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab, "token %d of %d", ids[i], n_vocab);
    detokenize(m->vocab, ids, n_tokens, text, len ? 1 : 0);
    stream(m->vocab, ids, n_tokens, 0, NULL, 0);
    free(ids);
}

static void run_ids(const wick_model *m, const uint8_t *p, size_t len, int mode) {
    int n = (int)(len / 2);
    if (n > 4096) n = 4096;
    int32_t *ids = malloc(sizeof *ids * (size_t)(n ? n : 1));
    if (!ids) return;
    int32_t n_vocab = vocab_n_tokens(m->vocab);
    for (int i = 0; i < n; i++) {
        uint16_t r = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        /* mostly valid ids; 1 in 64 out of range, negative or past the end */
        ids[i] = (r & 63) == 63 ? (r & 64 ? -1 - (r >> 7) : n_vocab + (r >> 7)) : (int32_t)(r % (uint32_t)n_vocab);
    }
    if (mode == 2) {
        for (int i = 0; i < n; i++) {
            char piece[8];
            int32_t n_bytes = 0;
            wick_status s = wick_token_to_piece(m, ids[i], piece, (int32_t)(p[2 * i] % 9), &n_bytes);
            fuzz_check_status(s, "wick_token_to_piece");
            if (ids[i] < 0 || ids[i] >= n_vocab) FUZZ_CHECK(s != WICK_OK, "piece of id %d out of range", ids[i]);
        }
        detokenize(m->vocab, ids, n, p, len);
    } else {
        stream(m->vocab, ids, n, p[0] & 1, p, len);
    }
    free(ids);
}

/* A hostile GGUF: loaded, then its vocabulary walked through every entry point. */
static void run_gguf(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size);
    if (!buf) return;
    memcpy(buf, data, size);
    wick_model *m = NULL;
    wick_status s = wick_model_load_gguf(buf, size, &m);
    fuzz_check_status(s, "wick_model_load_gguf");
    if (s == WICK_OK) {
        fuzz_exercise_model(m);
        int32_t n = vocab_n_tokens(m->vocab);
        if (n > 2048) n = 2048;
        int32_t *ids = malloc(sizeof *ids * (size_t)(n ? n : 1));
        if (ids) {
            for (int32_t i = 0; i < n; i++) ids[i] = i;
            detokenize(m->vocab, ids, n, NULL, 0);
            stream(m->vocab, ids, n, 0, NULL, 0);
            free(ids);
        }
        static const char sample[] = " Hello world! <|endoftext|>\n\n  caf\xc3\xa9 1234 don't";
        run_text(m, (const uint8_t *)sample, sizeof sample - 1, 1, 1);
        run_text(m, (const uint8_t *)sample, sizeof sample - 1, 0, 0);
        wick_model_free(m);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= 4 && !memcmp(data, "GGUF", 4)) {
        run_gguf(data, size);
        return 0;
    }
    if (size < 1) return 0;
    uint8_t sel = data[0];
    const wick_model *m = vocabs[(sel & 7) % N_VOCABS];
    int special = sel >> 3 & 1, add_bos = sel >> 4 & 1, mode = sel >> 5 & 3;
    /* the payload in a buffer of its exact size: ASan sees a read past the text's end */
    uint8_t *p = malloc(size - 1 ? size - 1 : 1);
    if (!p) return 0;
    memcpy(p, data + 1, size - 1);
    if (mode < 2) run_text(m, p, size - 1, add_bos, special);
    else run_ids(m, p, size - 1, mode);
    free(p);
    return 0;
}
