/* test_tokenizer.c — the tokenizers against llama.cpp's test vectors and by property.
 *
 *   test_tokenizer [vocab_dir] [models_dir] [reference_dir]
 *                  (defaults ../shared/vocab, ../shared/models, ../shared/reference)
 *   test_tokenizer --vectors DIR NAME:COUNT…   (part 1 only, for ggml-vocab-NAME.gguf in DIR)
 *
 * 1. For each ggml-vocab-<name>.gguf: every text of <name>.gguf.inp (texts separated by lines
 *    "__ggml_vocab_test__", as llama.cpp's test-tokenizer-0 splits them) tokenizes, without BOS
 *    and without special-token parsing, to the ids on the matching line of .out; and the text
 *    comes back from the ids.
 * 2. llama2.c's tok512.bin and stories260K.gguf: the same vocabulary, and BOS + "Once upon a
 *    time" = [1, 403, 407, 261, 378]; the prompts of llama.cpp's reference runs tokenize to
 *    their prompt_tokens and the greedy tokens stream to greedy_text.
 * 3. Special tokens, end-of-generation ids, buffer contracts.
 * 4. A random-Unicode fuzz: nothing crashes, ids stay in range, text round-trips, and the
 *    streamed detokenizer only ever emits valid UTF-8.
 * 5. Speed: 1 MB of mixed-language text per vocabulary.
 * Output and exit status: tests/check.h. Every file named here must be there (a missing one
 * fails its ".read" check). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "unicode.h"
#include "gguf.h"
#include "tokenizer.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), written
 * here independently of src/unicode.c. */
static bool utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        if (b < 0x80) { i++; continue; }
        size_t len;
        uint32_t c, min;
        if ((b & 0xE0) == 0xC0) { len = 2; c = b & 0x1F; min = 0x80; }
        else if ((b & 0xF0) == 0xE0) { len = 3; c = b & 0x0F; min = 0x800; }
        else if ((b & 0xF8) == 0xF0) { len = 4; c = b & 0x07; min = 0x10000; }
        else return false;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            c = c << 6 | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

/* tokenize into a growing array; returns the count or -1 */
static int tokenize(const wick_vocab *v, const char *text, size_t len, bool add_special,
                    bool parse_special, int32_t **ids) {
    int cap = 64;
    *ids = malloc(sizeof **ids * (size_t)cap);
    for (;;) {
        int n = vocab_tokenize(v, text, len, add_special, parse_special, *ids, cap);
        if (n < 0 || n <= cap) return n;
        cap = n;
        free(*ids);
        *ids = malloc(sizeof **ids * (size_t)cap);
    }
}

/* concatenated vocab_token_to_piece of all ids */
static char *pieces_text(const wick_vocab *v, const int32_t *ids, int n, size_t *len) {
    size_t cap = 64, pos = 0;
    char *out = malloc(cap);
    for (int i = 0; i < n; i++) {
        int k = vocab_token_to_piece(v, ids[i], NULL, 0);
        if (k < 0) { free(out); return NULL; }
        if (pos + (size_t)k + 1 > cap) {
            while (pos + (size_t)k + 1 > cap) cap *= 2;
            out = realloc(out, cap);
        }
        vocab_token_to_piece(v, ids[i], out + pos, k);
        pos += (size_t)k;
    }
    out[pos] = 0;
    *len = pos;
    return out;
}

/* streams ids through detok_*; returns the text, or NULL when a chunk was not valid UTF-8 */
static char *stream_text(const wick_vocab *v, const int32_t *ids, int n, size_t *len, bool *valid) {
    detok_stream s;
    detok_init(&s, v);
    int chunk_cap = 3 * (vocab_max_piece_len(v) + 3);
    if (chunk_cap < 256) chunk_cap = 256;
    char *chunk = malloc((size_t)chunk_cap);
    size_t cap = 64, pos = 0;
    char *out = malloc(cap);
    *valid = true;
    for (int i = 0; i <= n; i++) {
        int k = i < n ? detok_push(&s, ids[i], chunk, chunk_cap) : detok_flush(&s, chunk, chunk_cap);
        if (k < 0) { *valid = false; break; }
        if (!utf8_valid((const uint8_t *)chunk, (size_t)k)) *valid = false;
        if (pos + (size_t)k + 1 > cap) {
            while (pos + (size_t)k + 1 > cap) cap *= 2;
            out = realloc(out, cap);
        }
        memcpy(out + pos, chunk, (size_t)k);
        pos += (size_t)k;
    }
    free(chunk);
    out[pos] = 0;
    *len = pos;
    return out;
}

static void format_ids(char *buf, size_t cap, const int32_t *ids, int n) {
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < n && pos + 16 < cap; i++) pos += (size_t)snprintf(buf + pos, cap - pos, " %d", (int)ids[i]);
    if (n > 0 && pos + 16 >= cap) snprintf(buf + pos, cap - pos, " …");
}

/* printable excerpt of a test text for the report line */
static void excerpt(char *buf, size_t cap, const char *s, size_t n) {
    size_t pos = 0;
    for (size_t i = 0; i < n && pos + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') pos += (size_t)snprintf(buf + pos, cap - pos, "\\n");
        else if (c == '\t') pos += (size_t)snprintf(buf + pos, cap - pos, "\\t");
        else if (c < 0x20) pos += (size_t)snprintf(buf + pos, cap - pos, "\\x%02x", c);
        else buf[pos++] = (char)c;
    }
    if (pos > cap - 8) pos = cap - 8;
    buf[pos] = 0;
}

typedef struct {
    uint8_t *buf;
    gguf_file g;
    wick_vocab *v;
} loaded_vocab;

/* the checks ID.read, ID.gguf and ID.vocab */
static bool load_gguf_vocab(const char *id, const char *path, loaded_vocab *lv) {
    size_t size;
    errmsg err = {0};
    char name[200];
    snprintf(name, sizeof name, "%s", id);
    memset(lv, 0, sizeof *lv);
    lv->buf = check_read(check_id("%s.read", name), path, &size);
    if (!lv->buf) return false;
    if (!check(gguf_open(&lv->g, lv->buf, size, &err) == 0, check_id("%s.gguf", name), "gguf_open %s %s", path, err.text)) return false;
    err.text[0] = 0;
    return check(vocab_load_gguf(&lv->v, &lv->g, &err) == 0, check_id("%s.vocab", name), "vocab_load_gguf %s %s", path, err.text);
}

static void unload(loaded_vocab *lv) {
    vocab_free(lv->v);
    if (lv->buf) gguf_close(&lv->g);
    free(lv->buf);
}

/* Whether llama.cpp's detokenizer gives the text back exactly: BPE vocabularies with
 * clean_up_tokenization_spaces drop the space of " ?", " !", " .", " ,", " 's" and the like. */
static bool clean_spaces_changes(const char *s, size_t n) {
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == ' ' && (s[i + 1] == '?' || s[i + 1] == '!' || s[i + 1] == '.' ||
                            s[i + 1] == ',' || s[i + 1] == '\''))
            return true;
    return false;
}

/* 1. llama.cpp's vectors */
/* n_expected: the number of texts the .inp file must hold (46 in each of ../shared/vocab's) */
static void test_vocab_vectors(const char *dir, const char *name, int n_expected) {
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, name);
    loaded_vocab lv;
    if (!load_gguf_vocab(check_id("tokenizer.vectors.%s", name), path, &lv)) { unload(&lv); return; }
    const wick_vocab *v = lv.v;
    size_t inp_len, out_len;
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", dir, name);
    char *inp = check_read(check_id("tokenizer.vectors.%s.inp", name), path, &inp_len);
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", dir, name);
    char *outs = check_read(check_id("tokenizer.vectors.%s.out", name), path, &out_len);
    if (!inp || !outs) { free(inp); free(outs); unload(&lv); return; }

    /* test-tokenizer-0: split the whole file on "\n__ggml_vocab_test__\n" */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    char *line = outs;
    int n_texts = 0, n_ok = 0, n_rt = 0;
    bool is_wpm = strcmp(vocab_model_name(v), "bert") == 0;
    bool is_bpe = !is_wpm && strcmp(vocab_model_name(v), "llama") != 0;
    for (size_t pos = 0; pos < inp_len;) {
        char *next = NULL;
        for (size_t k = pos; k + sep_len <= inp_len; k++)
            if (memcmp(inp + k, sep, sep_len) == 0) { next = inp + k; break; }
        size_t tlen = next ? (size_t)(next - (inp + pos)) : inp_len - pos;
        const char *text = inp + pos;
        pos = next ? (size_t)(next - inp) + sep_len : inp_len;

        /* the matching .out line */
        int32_t want[512];
        int n_want = 0;
        char *eol = strchr(line, '\n');
        if (eol) *eol = 0;
        for (char *p = line; *p;) {
            char *end;
            long id = strtol(p, &end, 10);
            if (end == p) break;
            if (n_want < 512) want[n_want++] = (int32_t)id;
            p = end;
        }
        line = eol ? eol + 1 : line + strlen(line);

        int32_t *got;
        int n_got = tokenize(v, text, tlen, false, false, &got);
        bool same = n_got == n_want && memcmp(got, want, sizeof *got * (size_t)n_want) == 0;
        char ex[64], gs[400], ws[400];
        excerpt(ex, sizeof ex, text, tlen);
        format_ids(gs, sizeof gs, got, n_got);
        format_ids(ws, sizeof ws, want, n_want);
        n_texts++;
        if (same) n_ok++;
        if (same) check(true, check_id("tokenizer.vectors.%s.text%d", name, n_texts), "%s: text %d \"%s\"", name, n_texts, ex);
        else check(false, check_id("tokenizer.vectors.%s.text%d", name, n_texts), "%s: text %d \"%s\" got:%s want:%s", name, n_texts, ex, gs, ws);

        /* back to text: the pieces always; llama_detokenize where it is lossless */
        size_t plen, slen;
        bool valid;
        char *pieces = pieces_text(v, got, n_got > 0 ? n_got : 0, &plen);
        char *streamed = stream_text(v, got, n_got > 0 ? n_got : 0, &slen, &valid);
        char *detok = malloc(tlen * 4 + 64);
        int dlen = vocab_detokenize(v, got, n_got > 0 ? n_got : 0, detok, (int)tlen * 4 + 64);
        bool rt;
        if (is_wpm) {
            /* WordPiece lowercases, strips accents and drops spacing: its text does not come back,
             * but the text of the ids ([UNK] included) tokenizes to the same ids */
            int32_t *again;
            int n_again = tokenize(v, detok, dlen > 0 ? (size_t)dlen : 0, false, true, &again);
            rt = n_again == n_got && memcmp(again, got, sizeof *got * (size_t)(n_got > 0 ? n_got : 0)) == 0 && valid;
            free(again);
        } else if (is_bpe) {
            rt = pieces && plen == tlen && memcmp(pieces, text, tlen) == 0 && slen == tlen &&
                 memcmp(streamed, text, tlen) == 0 && valid;
            if (!clean_spaces_changes(text, tlen) || !vocab_cleans_spaces(v))
                rt = rt && dlen == (int)tlen && memcmp(detok, text, tlen) == 0;
        } else {
            rt = dlen == (int)tlen && memcmp(detok, text, tlen) == 0 && valid && slen == tlen &&
                 memcmp(streamed, text, tlen) == 0;
        }
        if (rt) n_rt++;
        else check(false, check_id("tokenizer.vectors.%s.text%d.round-trip", name, n_texts), "%s: text %d \"%s\" does not come back from its ids (detok %d bytes, stream %zu)",
                   name, n_texts, ex, dlen, slen);
        free(pieces);
        free(streamed);
        free(detok);
        free(got);
    }
    check(n_ok == n_texts && n_texts == n_expected, check_id("tokenizer.vectors.%s.tokenize", name), "%s: %d of %d texts tokenize as llama.cpp does (%d expected)", name, n_ok,
          n_texts, n_expected);
    check(n_rt == n_texts, check_id("tokenizer.vectors.%s.round-trip", name), "%s: %d of %d texts come back from their ids", name, n_rt, n_texts);
    free(inp);
    free(outs);
    unload(&lv);
}

static bool ids_equal(const int32_t *a, int na, const int32_t *b, int nb) {
    return na == nb && (na <= 0 || memcmp(a, b, sizeof *a * (size_t)na) == 0);
}

/* 2. stories260K: tok512.bin and the GGUF vocabulary */
static void test_stories(const char *models) {
    static const int32_t want[] = {1, 403, 407, 261, 378};
    const char *prompt = "Once upon a time";
    errmsg err = {0};
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/tok512.bin", models);
    uint8_t *tb = check_read("tokenizer.stories.tok512.read", path, &size);
    wick_vocab *v2c = NULL;
    if (tb)
        check(vocab_load_llama2c(&v2c, tb, size, 512, &err) == 0, "tokenizer.stories.tok512.vocab", "vocab_load_llama2c tok512.bin %s", err.text);
    loaded_vocab lv;
    snprintf(path, sizeof path, "%s/stories260K.gguf", models);
    bool have_gguf = load_gguf_vocab("tokenizer.stories.gguf", path, &lv);

    const wick_vocab *vs[2] = {v2c, have_gguf ? lv.v : NULL};
    const char *names[2] = {"tok512.bin", "stories260K.gguf"}, *prefix[2] = {"tokenizer.stories.tok512", "tokenizer.stories.gguf"};
    for (int k = 0; k < 2; k++) {
        const wick_vocab *v = vs[k];
        if (!v) continue;
        int32_t *ids;
        int n = tokenize(v, prompt, strlen(prompt), true, false, &ids);
        char gs[200];
        format_ids(gs, sizeof gs, ids, n);
        check(ids_equal(ids, n, want, 5), check_id("%s.prompt", prefix[k]), "%s: BOS + \"Once upon a time\" = [1 403 407 261 378] (got%s)", names[k], gs);
        char text[64];
        int t = vocab_detokenize(v, ids + 1, n - 1, text, sizeof text);
        check(t == (int)strlen(prompt) && memcmp(text, prompt, (size_t)t) == 0, check_id("%s.detokenize", prefix[k]), "%s: detokenizes back to the prompt", names[k]);
        size_t slen;
        bool valid;
        char *st = stream_text(v, ids, n, &slen, &valid);
        check(valid && slen == strlen(prompt) && memcmp(st, prompt, slen) == 0, check_id("%s.stream", prefix[k]),
              "%s: stream of BOS + prompt gives \"%s\"", names[k], st);
        free(st);
        check(vocab_bos(v) == 1 && vocab_eos(v) == 2 && vocab_add_bos(v) && vocab_is_eog(v, 2) &&
              !vocab_is_eog(v, 1) && strcmp(vocab_model_name(v), "llama") == 0, check_id("%s.specials", prefix[k]),
              "%s: BOS 1, EOS 2 (end of generation), adds BOS, SentencePiece", names[k]);
        const char *story = ", there was a little girl named Lily. She loved to play outside in the park.";
        int32_t *sid;
        int sn = tokenize(v, story, strlen(story), false, false, &sid);
        detok_stream ds;
        detok_init_continuing(&ds, v);
        char out[4096];
        size_t pos = 0;
        for (int i = 0; i < sn; i++) pos += (size_t)detok_push(&ds, sid[i], out + pos, 256);
        pos += (size_t)detok_flush(&ds, out + pos, 256);
        /* the tokenizer added a space prefix before ",": a continuing stream keeps it */
        check(pos == strlen(story) + 1 && out[0] == ' ' && memcmp(out + 1, story, pos - 1) == 0, check_id("%s.continuing", prefix[k]),
              "%s: a continuing stream keeps every space", names[k]);
        free(sid);
        free(ids);
    }
    if (v2c && have_gguf) {
        bool same = vocab_n_tokens(v2c) == vocab_n_tokens(lv.v);
        int first_diff = -1;
        for (int32_t i = 0; same && i < vocab_n_tokens(v2c); i++) {
            char a[64], b[64];
            int na = vocab_token_to_piece(v2c, i, a, sizeof a), nb = vocab_token_to_piece(lv.v, i, b, sizeof b);
            if (na != nb || memcmp(a, b, (size_t)(na > 0 ? na : 0)) != 0) { same = false; first_diff = i; }
        }
        check(same, "tokenizer.stories.same-pieces", "tok512.bin and stories260K.gguf give the same pieces (first difference at %d)", first_diff);
        /* and the same ids on a longer text */
        const char *text = "Lily and Ben went to the park. They saw a big dog! \"Hello,\" said Ben. 123 émoji 😀\n\tend";
        int32_t *a, *b;
        int na = tokenize(v2c, text, strlen(text), true, false, &a);
        int nb = tokenize(lv.v, text, strlen(text), true, false, &b);
        check(ids_equal(a, na, b, nb), "tokenizer.stories.same-ids", "tok512.bin and stories260K.gguf tokenize a longer text alike (%d, %d ids)", na, nb);
        free(a);
        free(b);
    }
    vocab_free(v2c);
    free(tb);
    if (have_gguf) unload(&lv);
    else free(lv.buf);

    /* broken tokenizer.bin files are refused, never read past their end */
    uint8_t bad[16] = {8, 0, 0, 0, 0, 0, 0x80, 0x3F, 200, 0, 0, 0, 'a', 'b', 'c', 'd'};
    wick_vocab *vb = NULL;
    err.text[0] = 0;
    bool refused = vocab_load_llama2c(&vb, bad, sizeof bad, 512, &err) != 0 && !vb && err.text[0];
    check(refused, "tokenizer.llama2c.truncated", "a truncated tokenizer.bin is refused: %s", err.text);
    refused = vocab_load_llama2c(&vb, bad, 2, 512, &err) != 0 && !vb;
    check(refused, "tokenizer.llama2c.2-bytes", "a 2-byte tokenizer.bin is refused: %s", err.text);
}

/* 2b. llama.cpp's reference runs (the JSON files of ../shared/reference): each prompt tokenizes to its
 * prompt_tokens with the tok512 vocabulary, and the greedy tokens stream to greedy_text. */

/* the JSON string value of "key" (plain and \-escaped ASCII only, which is all these hold) */
static bool json_string(const char *json, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    if (!p) return false;
    p += strlen(pat);
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        char c = *p;
        if (c == '\\') {
            c = *++p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'u') return false;
        }
        out[n++] = c;
    }
    out[n] = 0;
    return *p == '"';
}

static int json_ints(const char *json, const char *key, int32_t *out, int cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":[", key);
    const char *p = strstr(json, pat);
    if (!p) return -1;
    p += strlen(pat);
    int n = 0;
    while (*p && *p != ']' && n < cap) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) return -1;
        out[n++] = (int32_t)x;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void test_references(const char *models, const char *refs) {
    static const char *const files[] = {"stories260K.json", "stories260K-park.json", "mini-f32.json"};
    errmsg err = {0};
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/tok512.bin", models);
    uint8_t *tb = check_read("tokenizer.references.tok512.read", path, &size);
    wick_vocab *v = NULL;
    if (!tb || !check(vocab_load_llama2c(&v, tb, size, 512, &err) == 0, "tokenizer.references.tok512.vocab", "tok512.bin loads %s", err.text)) {
        free(tb);
        return;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", refs, files[i]);
        char *json = check_read(check_id("tokenizer.references.%s.read", files[i]), path, &size);
        if (!json) continue;
        char prompt[256], text[8192];
        int32_t want[64], greedy[1024];
        int n_want = json_ints(json, "prompt_tokens", want, 64);
        if (check(json_string(json, "prompt", prompt, sizeof prompt) && n_want > 0, check_id("tokenizer.references.%s.fields", files[i]),
                  "%s: prompt and tokens", files[i])) {
            int32_t *ids;
            int n = tokenize(v, prompt, strlen(prompt), true, false, &ids);
            check(ids_equal(ids, n, want, n_want), check_id("tokenizer.references.%s.prompt", files[i]), "%s: BOS + \"%s\" tokenizes as llama.cpp did (%d ids)", files[i], prompt, n_want);
            free(ids);
        }
        int n_greedy = json_ints(json, "greedy_tokens", greedy, 1024);
        if (json_string(json, "greedy_text", text, sizeof text) && n_greedy > 0) {
            detok_stream ds;
            detok_init_continuing(&ds, v);
            char *out = malloc(16384);
            size_t pos = 0;
            bool ok = true;
            for (int k = 0; k < n_greedy && ok; k++) {
                int w = detok_push(&ds, greedy[k], out + pos, 256);
                ok = w >= 0;
                pos += (size_t)(w > 0 ? w : 0);
            }
            pos += (size_t)detok_flush(&ds, out + pos, 256);
            check(ok && pos == strlen(text) && memcmp(out, text, pos) == 0, check_id("tokenizer.references.%s.greedy-text", files[i]),
                  "%s: %d greedy tokens stream to greedy_text (%zu bytes)", files[i], n_greedy, pos);
            free(out);
        }
        free(json);
    }
    vocab_free(v);
    free(tb);
}

/* 3. special tokens, end of generation, buffer contracts */
static void test_specials(const char *dir) {
    char path[1024];
    loaded_vocab phi, gpt, spm, dsc;
    snprintf(path, sizeof path, "%s/ggml-vocab-phi-3.gguf", dir);
    bool have_phi = load_gguf_vocab("tokenizer.specials.phi-3", path, &phi);
    snprintf(path, sizeof path, "%s/ggml-vocab-gpt-2.gguf", dir);
    bool have_gpt = load_gguf_vocab("tokenizer.specials.gpt-2", path, &gpt);
    snprintf(path, sizeof path, "%s/ggml-vocab-llama-spm.gguf", dir);
    bool have_spm = load_gguf_vocab("tokenizer.specials.llama-spm", path, &spm);
    snprintf(path, sizeof path, "%s/ggml-vocab-deepseek-coder.gguf", dir);
    bool have_dsc = load_gguf_vocab("tokenizer.specials.deepseek-coder", path, &dsc);
    int32_t *ids;
    int n;
    char gs[400];

    if (have_phi) {
        /* a Phi-3 chat turn: llama.cpp drops the newline after each special token (RSTRIP, set
         * by model name) and prefixes the next text with "▁" */
        const char *chat = "<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n";
        static const int32_t want[] = {1, 32010, 317, 21554, 13, 17628, 32007, 32001};
        n = tokenize(phi.v, chat, strlen(chat), true, true, &ids);
        format_ids(gs, sizeof gs, ids, n);
        check(ids_equal(ids, n, want, 8), "tokenizer.specials.phi-3.chat", "phi-3: chat turn with parse_special (got%s)", gs);
        free(ids);
        n = tokenize(phi.v, chat, strlen(chat), false, false, &ids);
        bool none = true;
        for (int i = 0; i < n; i++) none = none && ids[i] < 32000;
        check(none, "tokenizer.specials.phi-3.plain", "phi-3: without parse_special the markers stay text (%d ids)", n);
        free(ids);
        check(vocab_is_eog(phi.v, 32000) && vocab_is_eog(phi.v, 32007) && !vocab_is_eog(phi.v, 32010) &&
              !vocab_is_eog(phi.v, 1), "tokenizer.specials.phi-3.eog", "phi-3: <|endoftext|> and <|end|> end generation, <|user|> and <s> do not");
        char piece[64];
        int k = vocab_token_to_piece(phi.v, 32007, piece, sizeof piece);
        check(k == 7 && memcmp(piece, "<|end|>", 7) == 0, "tokenizer.specials.phi-3.end-piece", "phi-3: the piece of <|end|> is its text");
        detok_stream ds;
        detok_init(&ds, phi.v);
        check(detok_push(&ds, 32007, piece, sizeof piece) == 0, "tokenizer.specials.phi-3.control-stream", "phi-3: control tokens stream as no text");
    }
    if (have_gpt) {
        const char *text = "Hello<|endoftext|>world";
        n = tokenize(gpt.v, text, strlen(text), false, true, &ids);
        format_ids(gs, sizeof gs, ids, n);
        static const int32_t want[] = {15496, 50256, 6894};
        check(ids_equal(ids, n, want, 3), "tokenizer.specials.gpt-2.special", "gpt-2: <|endoftext|> parsed as special (got%s)", gs);
        free(ids);
        n = tokenize(gpt.v, text, strlen(text), false, false, &ids);
        bool none = n > 3;
        for (int i = 0; i < n; i++) none = none && ids[i] != 50256;
        check(none, "tokenizer.specials.gpt-2.plain", "gpt-2: <|endoftext|> is text without parse_special");
        free(ids);
        check(vocab_is_eog(gpt.v, 50256) && !vocab_add_bos(gpt.v) && strcmp(vocab_model_name(gpt.v), "gpt2") == 0,
              "tokenizer.specials.gpt-2.eog", "gpt-2: <|endoftext|> ends generation, no BOS added, BPE");
        /* clean_up_tokenization_spaces, as llama_detokenize */
        const char *sp = "Hello , world ! It 's";
        n = tokenize(gpt.v, sp, strlen(sp), false, false, &ids);
        char out[64];
        int k = vocab_detokenize(gpt.v, ids, n, out, sizeof out);
        check(k == 18 && memcmp(out, "Hello, world! It's", 18) == 0,
              "tokenizer.specials.gpt-2.clean-spaces", "gpt-2: detokenize cleans spaces like llama.cpp (\"%.*s\")", k > 0 ? k : 0, out);
        free(ids);
    }
    if (have_spm) {
        const char *text = "<s>hi</s>";
        n = tokenize(spm.v, text, strlen(text), true, true, &ids);
        format_ids(gs, sizeof gs, ids, n);
        check(n >= 4 && ids[0] == 1 && ids[1] == 1 && ids[n - 1] == 2, "tokenizer.specials.llama-spm.special", "llama-spm: <s> and </s> parsed as special (got%s)", gs);
        free(ids);
        /* the count contract: too little room returns the count needed, writes nothing past it */
        const char *hello = "Hello world, this is a test";
        int32_t small[3] = {-7, -7, -7};
        int need = vocab_tokenize(spm.v, hello, strlen(hello), true, false, small, 2);
        check(need > 2 && small[2] == -7, "tokenizer.specials.llama-spm.max-out", "llama-spm: max_out respected, %d needed", need);
        check(vocab_tokenize(spm.v, hello, strlen(hello), true, false, NULL, 0) == need,
              "tokenizer.specials.llama-spm.count", "llama-spm: counting without an output buffer");
        check(vocab_tokenize(spm.v, "", 0, false, false, NULL, 0) == 0 &&
              vocab_tokenize(spm.v, "", 0, true, false, small, 3) == 1 && small[0] == 1,
              "tokenizer.specials.llama-spm.empty", "llama-spm: empty text gives [] (or [BOS])");
        char piece[4] = {'x', 'x', 'x', 'x'};
        int k = vocab_token_to_piece(spm.v, 15043, piece, 2); /* "▁Hello" */
        check(k == 6 && piece[0] == ' ' && piece[1] == 'H' && piece[2] == 'x', "tokenizer.specials.llama-spm.short-piece", "llama-spm: token_to_piece with a short buffer");
        check(vocab_token_to_piece(spm.v, -1, piece, 4) == -1 && vocab_token_to_piece(spm.v, 32000, piece, 4) == -1,
              "tokenizer.specials.llama-spm.piece-range", "llama-spm: token_to_piece refuses ids out of range");
        detok_stream ds;
        detok_init(&ds, spm.v);
        char out[8];
        check(detok_push(&ds, 32000, out, 8) == -1 && detok_push(&ds, 15043, out, 2) == -1 && ds.n_fed == 0,
              "tokenizer.specials.llama-spm.push-refused", "llama-spm: detok_push refuses bad ids and small buffers without consuming");
        /* a character split over byte tokens comes out whole, and a broken one as U+FFFD */
        static const int32_t euro[] = {0xE2 + 3, 0x82 + 3, 0xAC + 3, 0xE2 + 3, 0x41 + 3, 0xF0 + 3};
        char buf[64];
        int w = 0, k1;
        detok_init_continuing(&ds, spm.v);
        k1 = detok_push(&ds, euro[0], buf, 64);
        int k2 = detok_push(&ds, euro[1], buf, 64);
        w = detok_push(&ds, euro[2], buf, 64);
        check(k1 == 0 && k2 == 0 && w == 3 && memcmp(buf, "\xE2\x82\xAC", 3) == 0, "tokenizer.specials.llama-spm.split-character",
              "llama-spm: stream holds back a split character");
        w = detok_push(&ds, euro[3], buf, 64);
        int w2 = detok_push(&ds, euro[4], buf + w, 64);
        int w3 = detok_push(&ds, euro[5], buf + w + w2, 64);
        int w4 = detok_flush(&ds, buf + w + w2 + w3, 64);
        int total = w + w2 + w3 + w4;
        check(total == 7 && memcmp(buf, "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD", 7) == 0,
              "tokenizer.specials.llama-spm.broken", "llama-spm: broken sequences become U+FFFD, a dangling lead byte at the end too");
    }
    if (have_dsc) {
        check(vocab_is_eog(dsc.v, 32014) && vocab_add_bos(dsc.v) && vocab_bos(dsc.v) == 32013,
              "tokenizer.specials.deepseek-coder.eog", "deepseek-coder: EOS 32014 ends generation, BOS 32013 added");
    }
    if (have_phi) unload(&phi); else free(phi.buf);
    if (have_gpt) unload(&gpt); else free(gpt.buf);
    if (have_spm) unload(&spm); else free(spm.buf);
    if (have_dsc) unload(&dsc); else free(dsc.buf);
}

/* 3b. Pre-tokenizer word splits. Expected splits computed with JavaScript's regex engine
 * (ECMAScript, as std::regex, with real \p{…} classes) running llama.cpp's pattern lists for
 * each pre-tokenizer one after another, each on every piece the previous ones produced, with
 * non-ASCII whitespace replaced by \v before matching as llama.cpp does. ends[] are byte
 * offsets where the words end. The qwen35 rows come from Python's `regex` module running the
 * pattern of Qwen3.5's tokenizer.json (as llama-vocab.cpp quotes it), a run that reproduces
 * every qwen2 row above when given qwen2's pattern; text 6 (combining marks) is where the two
 * differ. */
static const char *const split_texts[] = {
    "Hello world, it's a test! I'M here; you'RE there; we'Ll see, they'VE gone.",
    "   leading spaces and trailing   ",
    "tabs\x09""\x09""and\x0a""newlines\x0d""\x0a""\x0a""  \x0a"" x",
    "1 12 123 1234 12345 123456 1234567 3.14159 1,000,000",
    "x+y=z; $100 ~tilde| `tick` <tag> a^b @home #hash 50% a&b (paren) [br] {cu} \"q\" 'q'",
    "na\xc3""\xaf""ve caf\xc3""\xa9"" r\xc3""\xa9""sum\xc3""\xa9"" \xc3""\x85""ngstr\xc3""\xb6""m stra\xc3""\x9f""e \xc3""\x86""\xc3""\x98""\xc3""\x85",
    "e\xcc""\x81"" combining: a\xcc""\x80""\xcc""\x81""b n\xcc""\x83""o",
    "\xe6""\x97""\xa5""\xe6""\x9c""\xac""\xe8""\xaa""\x9e""\xe3""\x81""\xae""\xe3""\x83""\x86""\xe3""\x82""\xad""\xe3""\x82""\xb9""\xe3""\x83""\x88""\xe3""\x80""\x81""\xe6""\xbc""\xa2""\xe5""\xad""\x97""\xe3""\x81""\xa8""\xe3""\x81""\x8b""\xe3""\x81""\xaa""\xe3""\x80""\x82"" \xed""\x95""\x9c""\xea""\xb5""\xad""\xec""\x96""\xb4"" \xed""\x85""\x8d""\xec""\x8a""\xa4""\xed""\x8a""\xb8"" \xe4""\xb8""\xad""\xe6""\x96""\x87""\xe6""\x96""\x87""\xe6""\x9c""\xac""\xef""\xbc""\x81",
    "\xce""\x95""\xce""\xbb""\xce""\xbb""\xce""\xb7""\xce""\xbd""\xce""\xb9""\xce""\xba""\xce""\xac"" \xce""\xba""\xce""\xb5""\xce""\xaf""\xce""\xbc""\xce""\xb5""\xce""\xbd""\xce""\xbf"" \xd0""\xa0""\xd1""\x83""\xd1""\x81""\xd1""\x81""\xd0""\xba""\xd0""\xb8""\xd0""\xb9"" \xd1""\x82""\xd0""\xb5""\xd0""\xba""\xd1""\x81""\xd1""\x82"" \xd0""\xa3""\xd0""\xba""\xd1""\x80""\xd0""\xb0""\xd1""\x97""\xd0""\xbd""\xd1""\x81""\xd1""\x8c""\xd0""\xba""\xd0""\xb0",
    "\xd7""\xa2""\xd7""\x91""\xd7""\xa8""\xd7""\x99""\xd7""\xaa"" \xd7""\x95""\xd7""\xa2""\xd7""\x95""\xd7""\x93"" \xd7""\x9e""\xd7""\x99""\xd7""\x9c""\xd7""\x99""\xd7""\x9d"" \xd8""\xa7""\xd9""\x84""\xd8""\xb9""\xd8""\xb1""\xd8""\xa8""\xd9""\x8a""\xd8""\xa9"" \xd9""\x86""\xd8""\xb5"" \xd9""\xa1""\xd9""\xa2""\xd9""\xa3"" \xd9""\xa4""\xd9""\xa5",
    "emoji \xf0""\x9f""\x98""\x80""\xf0""\x9f""\x91""\x8d""\xf0""\x9f""\x8f""\xbd"" \xf0""\x9f""\x91""\xa8""\xe2""\x80""\x8d""\xf0""\x9f""\x91""\xa9""\xe2""\x80""\x8d""\xf0""\x9f""\x91""\xa7"" \xe2""\x9d""\xa4""\xef""\xb8""\x8f"" \xe2""\x9c""\x85"" done",
    "\xe2""\x85""\xab""\xe2""\x85""\xa2"" roman \xc2""\xbd"" \xc2""\xbe"" \xc2""\xb2"" \xc2""\xb3"" superscripts",
    "foo...bar!!! ??? a--b -- \xe2""\x80""\x94"" \xe2""\x80""\x93"" dash\xe2""\x80""\xa6",
    "code: for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\x0a""\x09""return sum;",
    "NBSP\xc2""\xa0""here and\xe2""\x80""\x83""em space\xe3""\x80""\x80""ideographic space",
    "\xef""\xbc""\xa6""\xef""\xbd""\x95""\xef""\xbd""\x8c""\xef""\xbd""\x8c""\xef""\xbd""\x97""\xef""\xbd""\x89""\xef""\xbd""\x84""\xef""\xbd""\x94""\xef""\xbd""\x88"" \xef""\xbc""\xa1""\xef""\xbc""\xa2""\xef""\xbc""\xa3"" \xef""\xbc""\x91""\xef""\xbc""\x92""\xef""\xbc""\x93"" \xef""\xbc""\x81""\xef""\xbc""\x9f",
    "  ",
    " ",
    "a",
    "'s 's's ''s x's",
    "\xe0""\xa0""\x80""\xe0""\xa0""\x81"" \xe4""\xb8""\x80"" \xe9""\xbe""\xa5""\xe9""\xbe""\xa6"" \xea""\xb0""\x80""\xed""\x9f""\xbf",
    "\xce""\x90""\xce""\xb0""\xe1""\xbf""\x97"" \xcf""\x8e"" \xce""\xb9"" \xce""\xa9"" K \xc5""\xbf"" \xef""\xac""\x81",
    "mix123abc456 abc123 123abc",
    "odd\xc2""\x85""spaces\xe1""\x9a""\x80""and\xe2""\x80""\xa8""lines\xe2""\x80""\xa9""x \xe2""\x81""\x9f"" y\xe2""\x80""\xaf"" z",
    "private \xee""\x80""\x80""\xee""\x80""\x81"" unassigned \xcd""\xb8""\xcd""\xb9"" format \xe2""\x80""\x8b""\xe2""\x80""\x8d""\xc2""\xad"" controls \x01""\x7f""\xc2""\x9f",
    "x\xe3""\x80""\x80""\xe3""\x80""\x80""y \xe3""\x80""\x81""\xe3""\x80""\x82"" \xe3""\x80""\x8c""\xe3""\x80""\x8d"" \xef""\xbc""\x81""\xef""\xbc""\x8f""\xef""\xbc""\x9a",
    "end with newline\x0a",
    "\x0a""\x0a""\x0a""only newlines\x0a""\x0a",
};
static const struct { const char *pre; int text, n; uint16_t ends[96]; } split_cases[] = {
    {"default", 0, 29, {5, 11, 12, 15, 16, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"default", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"default", 2, 8, {4, 5, 6, 9, 10, 18, 24, 26}},
    {"default", 3, 29, {1, 2, 4, 5, 8, 9, 12, 13, 14, 17, 19, 20, 23, 26, 27, 30, 33, 34, 35, 36, 37, 40, 42, 43, 44, 45, 48, 49, 52}},
    {"default", 4, 55, {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 18, 19, 21, 25, 26, 27, 28, 31, 32, 34, 35, 36, 37, 38, 42, 43, 44, 48, 49, 51, 52, 54, 55, 56, 57, 58, 63, 64, 65, 66, 68, 69, 70, 71, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82}},
    {"default", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"default", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"default", 7, 8, {24, 27, 42, 45, 55, 65, 78, 81}},
    {"default", 8, 5, {16, 31, 46, 57, 78}},
    {"default", 9, 9, {10, 19, 30, 45, 50, 51, 57, 58, 62}},
    {"default", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"default", 11, 11, {6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"default", 12, 17, {3, 6, 9, 12, 13, 16, 18, 20, 21, 22, 24, 25, 28, 29, 32, 37, 40}},
    {"default", 13, 43, {4, 5, 9, 10, 11, 14, 16, 17, 18, 19, 20, 21, 23, 24, 25, 27, 28, 29, 31, 32, 33, 34, 35, 39, 40, 42, 44, 45, 46, 47, 48, 49, 51, 52, 53, 55, 56, 57, 58, 59, 65, 69, 70}},
    {"default", 14, 10, {4, 6, 10, 14, 17, 19, 25, 28, 39, 45}},
    {"default", 15, 6, {27, 37, 38, 47, 48, 54}},
    {"default", 16, 1, {2}},
    {"default", 17, 1, {1}},
    {"default", 18, 1, {1}},
    {"default", 19, 13, {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15}},
    {"default", 20, 5, {6, 10, 17, 21, 24}},
    {"default", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"default", 22, 9, {3, 6, 9, 12, 16, 19, 20, 23, 26}},
    {"default", 23, 13, {3, 5, 11, 14, 17, 20, 25, 28, 29, 33, 35, 38, 40}},
    {"default", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"default", 25, 10, {1, 4, 7, 8, 9, 15, 16, 22, 23, 32}},
    {"default", 26, 4, {3, 8, 16, 17}},
    {"default", 27, 5, {2, 3, 7, 16, 18}},
    {"gpt-2", 0, 28, {5, 11, 12, 15, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"gpt-2", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"gpt-2", 2, 8, {4, 5, 6, 9, 10, 18, 24, 26}},
    {"gpt-2", 3, 15, {1, 4, 8, 13, 19, 26, 34, 36, 37, 42, 44, 45, 48, 49, 52}},
    {"gpt-2", 4, 44, {1, 2, 3, 4, 5, 6, 8, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 35, 36, 38, 42, 44, 48, 51, 52, 54, 55, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"gpt-2", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"gpt-2", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"gpt-2", 7, 8, {24, 27, 42, 45, 55, 65, 78, 81}},
    {"gpt-2", 8, 5, {16, 31, 46, 57, 78}},
    {"gpt-2", 9, 7, {10, 19, 30, 45, 50, 57, 62}},
    {"gpt-2", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"gpt-2", 11, 7, {6, 12, 15, 18, 21, 24, 37}},
    {"gpt-2", 12, 13, {3, 6, 9, 12, 16, 18, 20, 21, 24, 28, 32, 37, 40}},
    {"gpt-2", 13, 34, {4, 5, 9, 11, 14, 16, 18, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 45, 46, 47, 49, 51, 52, 53, 55, 57, 58, 59, 65, 69, 70}},
    {"gpt-2", 14, 10, {4, 6, 10, 14, 17, 19, 25, 28, 39, 45}},
    {"gpt-2", 15, 4, {27, 37, 47, 54}},
    {"gpt-2", 16, 1, {2}},
    {"gpt-2", 17, 1, {1}},
    {"gpt-2", 18, 1, {1}},
    {"gpt-2", 19, 8, {2, 4, 5, 7, 10, 11, 13, 15}},
    {"gpt-2", 20, 5, {6, 10, 17, 21, 24}},
    {"gpt-2", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"gpt-2", 22, 8, {3, 6, 9, 12, 16, 19, 23, 26}},
    {"gpt-2", 23, 13, {3, 5, 11, 14, 17, 20, 25, 28, 29, 33, 35, 38, 40}},
    {"gpt-2", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"gpt-2", 25, 7, {1, 4, 7, 8, 15, 22, 32}},
    {"gpt-2", 26, 4, {3, 8, 16, 17}},
    {"gpt-2", 27, 5, {2, 3, 7, 16, 18}},
    {"llama-bpe", 0, 24, {5, 11, 12, 15, 17, 19, 24, 25, 27, 29, 34, 35, 39, 42, 48, 49, 52, 55, 59, 60, 65, 68, 73, 74}},
    {"llama-bpe", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"llama-bpe", 2, 7, {4, 5, 9, 10, 18, 24, 26}},
    {"llama-bpe", 3, 29, {1, 2, 4, 5, 8, 9, 12, 13, 14, 17, 19, 20, 23, 26, 27, 30, 33, 34, 35, 36, 37, 40, 42, 43, 44, 45, 48, 49, 52}},
    {"llama-bpe", 4, 41, {1, 3, 5, 6, 8, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 36, 38, 42, 44, 48, 49, 51, 52, 54, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"llama-bpe", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"llama-bpe", 6, 9, {1, 3, 13, 14, 16, 20, 21, 23, 26}},
    {"llama-bpe", 7, 7, {24, 42, 45, 55, 65, 78, 81}},
    {"llama-bpe", 8, 5, {16, 31, 46, 57, 78}},
    {"llama-bpe", 9, 9, {10, 19, 30, 45, 50, 51, 57, 58, 62}},
    {"llama-bpe", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"llama-bpe", 11, 11, {6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"llama-bpe", 12, 13, {3, 6, 9, 12, 16, 18, 20, 21, 24, 28, 32, 37, 40}},
    {"llama-bpe", 13, 31, {4, 5, 9, 11, 14, 16, 18, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 46, 47, 49, 51, 53, 55, 58, 65, 69, 70}},
    {"llama-bpe", 14, 7, {4, 10, 14, 19, 25, 39, 45}},
    {"llama-bpe", 15, 5, {27, 37, 38, 47, 54}},
    {"llama-bpe", 16, 1, {2}},
    {"llama-bpe", 17, 1, {1}},
    {"llama-bpe", 18, 1, {1}},
    {"llama-bpe", 19, 8, {2, 4, 5, 7, 10, 11, 13, 15}},
    {"llama-bpe", 20, 5, {6, 10, 17, 21, 24}},
    {"llama-bpe", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"llama-bpe", 22, 9, {3, 6, 9, 12, 16, 19, 20, 23, 26}},
    {"llama-bpe", 23, 9, {3, 11, 17, 25, 29, 33, 35, 38, 40}},
    {"llama-bpe", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"llama-bpe", 25, 6, {1, 4, 8, 15, 22, 32}},
    {"llama-bpe", 26, 4, {3, 8, 16, 17}},
    {"llama-bpe", 27, 4, {3, 7, 16, 18}},
    {"qwen2", 0, 24, {5, 11, 12, 15, 17, 19, 24, 25, 27, 29, 34, 35, 39, 42, 48, 49, 52, 55, 59, 60, 65, 68, 73, 74}},
    {"qwen2", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"qwen2", 2, 7, {4, 5, 9, 10, 18, 24, 26}},
    {"qwen2", 3, 52, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}},
    {"qwen2", 4, 44, {1, 3, 5, 6, 8, 9, 10, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 36, 38, 42, 44, 48, 49, 50, 51, 52, 54, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"qwen2", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"qwen2", 6, 9, {1, 3, 13, 14, 16, 20, 21, 23, 26}},
    {"qwen2", 7, 7, {24, 42, 45, 55, 65, 78, 81}},
    {"qwen2", 8, 5, {16, 31, 46, 57, 78}},
    {"qwen2", 9, 12, {10, 19, 30, 45, 50, 51, 53, 55, 57, 58, 60, 62}},
    {"qwen2", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"qwen2", 11, 12, {3, 6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"qwen2", 12, 13, {3, 6, 9, 12, 16, 18, 20, 21, 24, 28, 32, 37, 40}},
    {"qwen2", 13, 31, {4, 5, 9, 11, 14, 16, 18, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 46, 47, 49, 51, 53, 55, 58, 65, 69, 70}},
    {"qwen2", 14, 7, {4, 10, 14, 19, 25, 39, 45}},
    {"qwen2", 15, 7, {27, 37, 38, 41, 44, 47, 54}},
    {"qwen2", 16, 1, {2}},
    {"qwen2", 17, 1, {1}},
    {"qwen2", 18, 1, {1}},
    {"qwen2", 19, 8, {2, 4, 5, 7, 10, 11, 13, 15}},
    {"qwen2", 20, 5, {6, 10, 17, 21, 24}},
    {"qwen2", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"qwen2", 22, 17, {3, 4, 5, 6, 9, 10, 11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 26}},
    {"qwen2", 23, 9, {3, 11, 17, 25, 29, 33, 35, 38, 40}},
    {"qwen2", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"qwen2", 25, 6, {1, 4, 8, 15, 22, 32}},
    {"qwen2", 26, 4, {3, 8, 16, 17}},
    {"qwen2", 27, 4, {3, 7, 16, 18}},
    {"qwen35", 0, 24, {5, 11, 12, 15, 17, 19, 24, 25, 27, 29, 34, 35, 39, 42, 48, 49, 52, 55, 59, 60, 65, 68, 73, 74}},
    {"qwen35", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"qwen35", 2, 7, {4, 5, 9, 10, 18, 24, 26}},
    {"qwen35", 3, 52, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}},
    {"qwen35", 4, 44, {1, 3, 5, 6, 8, 9, 10, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 36, 38, 42, 44, 48, 49, 50, 51, 52, 54, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"qwen35", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"qwen35", 6, 5, {3, 13, 14, 21, 26}},
    {"qwen35", 7, 7, {24, 42, 45, 55, 65, 78, 81}},
    {"qwen35", 8, 5, {16, 31, 46, 57, 78}},
    {"qwen35", 9, 12, {10, 19, 30, 45, 50, 51, 53, 55, 57, 58, 60, 62}},
    {"qwen35", 10, 7, {5, 18, 37, 41, 44, 48, 53}},
    {"qwen35", 11, 12, {3, 6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"qwen35", 12, 13, {3, 6, 9, 12, 16, 18, 20, 21, 24, 28, 32, 37, 40}},
    {"qwen35", 13, 31, {4, 5, 9, 11, 14, 16, 18, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 46, 47, 49, 51, 53, 55, 58, 65, 69, 70}},
    {"qwen35", 14, 7, {4, 10, 14, 19, 25, 39, 45}},
    {"qwen35", 15, 7, {27, 37, 38, 41, 44, 47, 54}},
    {"qwen35", 16, 1, {2}},
    {"qwen35", 17, 1, {1}},
    {"qwen35", 18, 1, {1}},
    {"qwen35", 19, 8, {2, 4, 5, 7, 10, 11, 13, 15}},
    {"qwen35", 20, 5, {6, 10, 17, 21, 24}},
    {"qwen35", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"qwen35", 22, 17, {3, 4, 5, 6, 9, 10, 11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 26}},
    {"qwen35", 23, 9, {3, 11, 17, 25, 29, 33, 35, 38, 40}},
    {"qwen35", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"qwen35", 25, 6, {1, 4, 8, 15, 22, 32}},
    {"qwen35", 26, 4, {3, 8, 16, 17}},
    {"qwen35", 27, 4, {3, 7, 16, 18}},
    {"deepseek-llm", 0, 29, {5, 11, 12, 15, 16, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"deepseek-llm", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"deepseek-llm", 2, 11, {4, 5, 9, 10, 18, 19, 20, 21, 23, 24, 26}},
    {"deepseek-llm", 3, 23, {1, 2, 4, 5, 8, 9, 13, 14, 19, 20, 26, 27, 34, 35, 36, 37, 42, 43, 44, 45, 48, 49, 52}},
    {"deepseek-llm", 4, 45, {1, 2, 3, 4, 5, 6, 8, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 35, 36, 38, 42, 44, 48, 49, 51, 52, 54, 55, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"deepseek-llm", 5, 17, {2, 4, 6, 10, 12, 14, 16, 19, 21, 24, 29, 31, 32, 37, 39, 40, 47}},
    {"deepseek-llm", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"deepseek-llm", 7, 11, {24, 27, 42, 45, 46, 55, 56, 65, 66, 78, 81}},
    {"deepseek-llm", 8, 5, {16, 31, 46, 57, 78}},
    {"deepseek-llm", 9, 4, {51, 57, 58, 62}},
    {"deepseek-llm", 10, 10, {5, 23, 26, 30, 33, 38, 41, 45, 48, 53}},
    {"deepseek-llm", 11, 11, {6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"deepseek-llm", 12, 15, {3, 6, 9, 12, 16, 18, 20, 21, 24, 25, 28, 29, 32, 37, 40}},
    {"deepseek-llm", 13, 34, {4, 5, 9, 11, 14, 16, 18, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 45, 46, 47, 49, 51, 52, 53, 55, 57, 58, 65, 69, 70}},
    {"deepseek-llm", 14, 7, {4, 10, 14, 19, 25, 39, 45}},
    {"deepseek-llm", 15, 5, {27, 37, 38, 47, 54}},
    {"deepseek-llm", 16, 1, {2}},
    {"deepseek-llm", 17, 1, {1}},
    {"deepseek-llm", 18, 1, {1}},
    {"deepseek-llm", 19, 11, {1, 2, 4, 5, 6, 7, 10, 11, 13, 14, 15}},
    {"deepseek-llm", 20, 7, {6, 7, 10, 11, 14, 18, 24}},
    {"deepseek-llm", 21, 8, {4, 7, 10, 13, 16, 18, 21, 25}},
    {"deepseek-llm", 22, 9, {3, 6, 9, 12, 16, 19, 20, 23, 26}},
    {"deepseek-llm", 23, 9, {3, 11, 17, 25, 29, 33, 35, 38, 40}},
    {"deepseek-llm", 24, 10, {7, 14, 25, 30, 37, 38, 44, 46, 55, 60}},
    {"deepseek-llm", 25, 8, {1, 4, 8, 9, 15, 16, 22, 32}},
    {"deepseek-llm", 26, 4, {3, 8, 16, 17}},
    {"deepseek-llm", 27, 7, {1, 2, 3, 7, 16, 17, 18}},
    {"deepseek-coder", 0, 29, {5, 11, 12, 15, 16, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"deepseek-coder", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"deepseek-coder", 2, 11, {4, 5, 9, 10, 18, 19, 20, 21, 23, 24, 26}},
    {"deepseek-coder", 3, 52, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}},
    {"deepseek-coder", 4, 46, {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 18, 21, 25, 28, 31, 32, 34, 35, 36, 38, 42, 44, 48, 49, 50, 51, 52, 54, 55, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"deepseek-coder", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"deepseek-coder", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"deepseek-coder", 7, 11, {24, 27, 42, 45, 46, 55, 56, 65, 66, 78, 81}},
    {"deepseek-coder", 8, 5, {16, 31, 46, 57, 78}},
    {"deepseek-coder", 9, 12, {10, 19, 30, 45, 50, 51, 53, 55, 57, 58, 60, 62}},
    {"deepseek-coder", 10, 10, {5, 23, 26, 30, 33, 38, 41, 45, 48, 53}},
    {"deepseek-coder", 11, 12, {3, 6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"deepseek-coder", 12, 15, {3, 6, 9, 12, 16, 18, 20, 21, 24, 25, 28, 29, 32, 37, 40}},
    {"deepseek-coder", 13, 33, {4, 5, 9, 11, 14, 16, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 45, 46, 47, 49, 51, 52, 53, 55, 57, 58, 65, 69, 70}},
    {"deepseek-coder", 14, 7, {4, 10, 14, 19, 25, 39, 45}},
    {"deepseek-coder", 15, 7, {27, 37, 38, 41, 44, 47, 54}},
    {"deepseek-coder", 16, 1, {2}},
    {"deepseek-coder", 17, 1, {1}},
    {"deepseek-coder", 18, 1, {1}},
    {"deepseek-coder", 19, 11, {1, 2, 4, 5, 6, 7, 10, 11, 13, 14, 15}},
    {"deepseek-coder", 20, 9, {6, 7, 10, 11, 14, 17, 18, 21, 24}},
    {"deepseek-coder", 21, 8, {4, 7, 10, 13, 16, 18, 21, 25}},
    {"deepseek-coder", 22, 17, {3, 4, 5, 6, 9, 10, 11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 26}},
    {"deepseek-coder", 23, 9, {3, 11, 17, 25, 29, 33, 35, 38, 40}},
    {"deepseek-coder", 24, 10, {7, 14, 25, 30, 37, 38, 44, 46, 55, 60}},
    {"deepseek-coder", 25, 8, {1, 4, 8, 9, 15, 16, 22, 32}},
    {"deepseek-coder", 26, 4, {3, 8, 16, 17}},
    {"deepseek-coder", 27, 7, {1, 2, 3, 7, 16, 17, 18}},
    {"falcon", 0, 29, {5, 11, 12, 15, 16, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"falcon", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"falcon", 2, 8, {4, 5, 6, 9, 10, 18, 24, 26}},
    {"falcon", 3, 26, {1, 4, 5, 8, 9, 12, 13, 14, 17, 19, 20, 23, 26, 27, 30, 33, 34, 36, 37, 40, 42, 44, 45, 48, 49, 52}},
    {"falcon", 4, 55, {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 18, 19, 20, 21, 25, 26, 27, 28, 31, 32, 34, 35, 36, 37, 38, 42, 43, 44, 48, 51, 52, 54, 55, 56, 57, 58, 63, 64, 65, 66, 68, 69, 70, 71, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82}},
    {"falcon", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"falcon", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"falcon", 7, 8, {24, 27, 42, 45, 55, 65, 78, 81}},
    {"falcon", 8, 5, {16, 31, 46, 57, 78}},
    {"falcon", 9, 7, {10, 19, 30, 45, 50, 57, 62}},
    {"falcon", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"falcon", 11, 7, {6, 12, 15, 18, 21, 24, 37}},
    {"falcon", 12, 17, {3, 6, 9, 12, 13, 16, 18, 20, 21, 22, 24, 25, 28, 29, 32, 37, 40}},
    {"falcon", 13, 42, {4, 5, 9, 10, 11, 14, 16, 17, 18, 20, 21, 23, 24, 25, 27, 28, 29, 31, 32, 33, 34, 35, 39, 40, 42, 44, 45, 46, 47, 48, 49, 51, 52, 53, 55, 56, 57, 58, 59, 65, 69, 70}},
    {"falcon", 14, 10, {4, 6, 10, 14, 17, 19, 25, 28, 39, 45}},
    {"falcon", 15, 5, {27, 37, 47, 48, 54}},
    {"falcon", 16, 1, {2}},
    {"falcon", 17, 1, {1}},
    {"falcon", 18, 1, {1}},
    {"falcon", 19, 13, {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15}},
    {"falcon", 20, 5, {6, 10, 17, 21, 24}},
    {"falcon", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"falcon", 22, 9, {3, 6, 9, 12, 16, 19, 20, 23, 26}},
    {"falcon", 23, 13, {3, 5, 11, 14, 17, 20, 25, 28, 29, 33, 35, 38, 40}},
    {"falcon", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"falcon", 25, 10, {1, 4, 7, 8, 9, 15, 16, 22, 23, 32}},
    {"falcon", 26, 4, {3, 8, 16, 17}},
    {"falcon", 27, 5, {2, 3, 7, 16, 18}},
    {"starcoder", 0, 28, {5, 11, 12, 15, 17, 19, 24, 25, 27, 28, 29, 34, 35, 39, 40, 42, 48, 49, 52, 53, 55, 59, 60, 65, 66, 68, 73, 74}},
    {"starcoder", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"starcoder", 2, 8, {4, 5, 6, 9, 10, 18, 24, 26}},
    {"starcoder", 3, 52, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52}},
    {"starcoder", 4, 48, {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 18, 19, 21, 25, 26, 28, 31, 32, 34, 35, 36, 38, 42, 44, 48, 49, 50, 51, 52, 54, 55, 56, 58, 63, 64, 66, 68, 69, 71, 73, 74, 76, 77, 78, 80, 81, 82}},
    {"starcoder", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"starcoder", 6, 10, {1, 3, 13, 14, 16, 20, 21, 23, 25, 26}},
    {"starcoder", 7, 8, {24, 27, 42, 45, 55, 65, 78, 81}},
    {"starcoder", 8, 5, {16, 31, 46, 57, 78}},
    {"starcoder", 9, 12, {10, 19, 30, 45, 50, 51, 53, 55, 57, 58, 60, 62}},
    {"starcoder", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"starcoder", 11, 12, {3, 6, 12, 13, 15, 16, 18, 19, 21, 22, 24, 37}},
    {"starcoder", 12, 13, {3, 6, 9, 12, 16, 18, 20, 21, 24, 28, 32, 37, 40}},
    {"starcoder", 13, 35, {4, 5, 9, 11, 14, 16, 18, 19, 20, 21, 23, 25, 27, 28, 31, 32, 33, 35, 39, 42, 44, 45, 46, 47, 49, 51, 52, 53, 55, 57, 58, 59, 65, 69, 70}},
    {"starcoder", 14, 10, {4, 6, 10, 14, 17, 19, 25, 28, 39, 45}},
    {"starcoder", 15, 7, {27, 37, 38, 41, 44, 47, 54}},
    {"starcoder", 16, 1, {2}},
    {"starcoder", 17, 1, {1}},
    {"starcoder", 18, 1, {1}},
    {"starcoder", 19, 8, {2, 4, 5, 7, 10, 11, 13, 15}},
    {"starcoder", 20, 5, {6, 10, 17, 21, 24}},
    {"starcoder", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"starcoder", 22, 17, {3, 4, 5, 6, 9, 10, 11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 26}},
    {"starcoder", 23, 13, {3, 5, 11, 14, 17, 20, 25, 28, 29, 33, 35, 38, 40}},
    {"starcoder", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"starcoder", 25, 7, {1, 4, 7, 8, 15, 22, 32}},
    {"starcoder", 26, 4, {3, 8, 16, 17}},
    {"starcoder", 27, 5, {2, 3, 7, 16, 18}},
    {"bloom", 0, 17, {5, 11, 12, 17, 19, 24, 25, 29, 35, 42, 49, 55, 59, 60, 68, 73, 74}},
    {"bloom", 1, 6, {2, 10, 17, 21, 30, 33}},
    {"bloom", 2, 7, {4, 6, 9, 10, 18, 24, 26}},
    {"bloom", 3, 15, {1, 4, 8, 13, 19, 26, 34, 36, 37, 42, 44, 45, 48, 49, 52}},
    {"bloom", 4, 18, {6, 11, 18, 19, 26, 32, 36, 42, 48, 52, 56, 58, 63, 64, 69, 74, 78, 82}},
    {"bloom", 5, 6, {6, 12, 21, 32, 40, 47}},
    {"bloom", 6, 4, {3, 14, 21, 26}},
    {"bloom", 7, 7, {24, 27, 42, 45, 55, 65, 81}},
    {"bloom", 8, 5, {16, 31, 46, 57, 78}},
    {"bloom", 9, 7, {10, 19, 30, 45, 50, 57, 62}},
    {"bloom", 10, 6, {5, 18, 37, 44, 48, 53}},
    {"bloom", 11, 7, {6, 12, 15, 18, 21, 24, 37}},
    {"bloom", 12, 10, {3, 6, 9, 16, 21, 24, 28, 32, 37, 40}},
    {"bloom", 13, 22, {5, 9, 11, 14, 16, 18, 21, 23, 25, 28, 32, 33, 35, 39, 42, 47, 49, 55, 57, 59, 65, 70}},
    {"bloom", 14, 10, {4, 6, 10, 14, 17, 19, 25, 28, 39, 45}},
    {"bloom", 15, 4, {27, 37, 47, 54}},
    {"bloom", 16, 1, {2}},
    {"bloom", 17, 1, {1}},
    {"bloom", 18, 1, {1}},
    {"bloom", 19, 4, {2, 7, 11, 15}},
    {"bloom", 20, 4, {6, 10, 17, 24}},
    {"bloom", 21, 7, {7, 10, 13, 16, 18, 21, 25}},
    {"bloom", 22, 3, {12, 19, 26}},
    {"bloom", 23, 13, {3, 5, 11, 14, 17, 20, 25, 28, 29, 33, 35, 38, 40}},
    {"bloom", 24, 8, {7, 14, 25, 30, 37, 46, 55, 60}},
    {"bloom", 25, 6, {1, 7, 8, 15, 22, 32}},
    {"bloom", 26, 4, {3, 8, 16, 17}},
    {"bloom", 27, 4, {3, 7, 16, 18}},
};

static void test_pre_splits(void) {
    int n_cases = (int)(sizeof split_cases / sizeof split_cases[0]), bad = 0;
    for (int i = 0; i < n_cases; i++) {
        const char *t = split_texts[split_cases[i].text];
        size_t ends[256];
        int n = tokenizer_pre_split(split_cases[i].pre, t, strlen(t), ends, 256);
        bool ok = n == split_cases[i].n;
        for (int k = 0; ok && k < n; k++) ok = ends[k] == split_cases[i].ends[k];
        if (!ok) {
            bad++;
            char ex[64];
            excerpt(ex, sizeof ex, t, strlen(t));
            check(false, check_id("tokenizer.pre.%s.text%d", split_cases[i].pre, split_cases[i].text), "pre-tokenizer %s splits \"%s\" into %d words, not %d as the regexes do",
                  split_cases[i].pre, ex, n, split_cases[i].n);
        }
    }
    check(bad == 0, "tokenizer.pre.all", "pre-tokenizers: %d of %d splits (default, gpt-2, llama3, qwen2, qwen35, deepseek-llm, "
          "deepseek-coder, falcon, starcoder, bloom) agree with the regexes", n_cases - bad, n_cases);
    check(tokenizer_pre_split("no-such-pre", "x", 1, NULL, 0) == -1, "tokenizer.pre.unknown", "an unknown pre-tokenizer name is refused");
}

/* 4. fuzz */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static size_t put_utf8(char *out, uint32_t c) {
    if (c < 0x80) { out[0] = (char)c; return 1; }
    if (c < 0x800) { out[0] = (char)(0xC0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12); out[1] = (char)(0x80 | (c >> 6 & 0x3F)); out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | c >> 18); out[1] = (char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (char)(0x80 | (c >> 6 & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* a random text of about n bytes: all planes, combining marks, emoji with ZWJ, CJK, RTL,
 * controls, NULs; with_invalid adds bytes that are no UTF-8 */
static size_t random_text(char *out, size_t n, bool with_invalid) {
    static const char *const invalid[] = {"\x80", "\xBF", "\xC0\x80", "\xC3", "\xE2\x82", "\xED\xA0\x80",
                                          "\xF4\x90\x80\x80", "\xF5", "\xFF", "\xF0\x9F\x98", "\xFE\xFE"};
    size_t pos = 0;
    while (pos + 8 < n) {
        uint32_t r = rnd() % 100, c;
        if (r < 25) c = 0x20 + rnd() % 0x5F;                              /* ASCII */
        else if (r < 32) c = " \n\t\r'"[rnd() % 5];                       /* spaces, apostrophes */
        else if (r < 36) c = rnd() % 0x20;                                /* C0 controls, NUL */
        else if (r < 42) c = 0x80 + rnd() % 0x780;                        /* Latin … Arabic, C1 */
        else if (r < 48) c = 0x300 + rnd() % 0x70;                        /* combining marks */
        else if (r < 56) c = 0x4E00 + rnd() % 0x5200;                     /* CJK */
        else if (r < 60) c = 0xAC00 + rnd() % 0x2BA4;                     /* Hangul */
        else if (r < 66) c = 0x590 + rnd() % 0x170;                       /* Hebrew, Arabic */
        else if (r < 74) c = 0x1F300 + rnd() % 0x800;                     /* emoji */
        else if (r < 77) c = r == 74 ? 0x200D : r == 75 ? 0xFE0F : 0x2581; /* ZWJ, VS16, ▁ */
        else if (r < 82) c = 0x2000 + rnd() % 0x70;                       /* spaces, punctuation */
        else if (r < 86) c = '0' + rnd() % 10;                            /* digits */
        else if (r < 92) {                                                /* anywhere */
            do c = rnd() % 0x110000; while (c >= 0xD800 && c <= 0xDFFF);
        } else if (with_invalid) {
            const char *s = invalid[rnd() % (sizeof invalid / sizeof invalid[0])];
            size_t k = strlen(s);
            memcpy(out + pos, s, k);
            pos += k;
            continue;
        } else c = 0x10000 + rnd() % 0x100000;                           /* supplementary planes */
        pos += put_utf8(out + pos, c);
    }
    return pos;
}

static void test_fuzz(const char *dir, const char *models) {
    static const char *const names[] = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder"};
    errmsg err = {0};
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/tok512.bin", models);
    uint8_t *tb = check_read("tokenizer.fuzz.tok512.read", path, &size);
    wick_vocab *v2c = NULL;
    if (tb) check(vocab_load_llama2c(&v2c, tb, size, 512, &err) == 0, "tokenizer.fuzz.tok512.vocab", "tok512.bin loads %s", err.text);
    for (int vi = 0; vi < 5; vi++) {
        loaded_vocab lv = {0};
        const wick_vocab *v;
        const char *name = vi < 4 ? names[vi] : "tok512.bin", *id = vi < 4 ? names[vi] : "tok512";
        if (vi < 4) {
            snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, names[vi]);
            if (!load_gguf_vocab(check_id("tokenizer.fuzz.%s", id), path, &lv)) { unload(&lv); continue; }
            v = lv.v;
        } else {
            if (!v2c) continue;
            v = v2c;
        }
        bool spm = strcmp(vocab_model_name(v), "llama") == 0;
        int n_runs = 300, bad_range = 0, bad_stream = 0, bad_rt = 0, bad_call = 0;
        char *text = malloc(4096);
        for (int run = 0; run < n_runs; run++) {
            bool with_invalid = run % 2 == 1;
            size_t len = random_text(text, 64 + rnd() % 2000, with_invalid);
            if (run % 4 == 3) /* plain random bytes */
                for (size_t i = 0; i < len; i++) text[i] = (char)rnd();
            int32_t *ids;
            bool parse = run % 3 == 0;
            int n = tokenize(v, text, len, run % 5 == 0, parse, &ids);
            if (n < 0) { bad_call++; free(ids); continue; }
            for (int i = 0; i < n; i++) bad_range += ids[i] < 0 || ids[i] >= vocab_n_tokens(v);
            size_t slen;
            bool valid;
            char *st = stream_text(v, ids, n, &slen, &valid);
            if (!valid || !utf8_valid((const uint8_t *)st, slen)) bad_stream++;
            /* exact round trip: llama_detokenize for SentencePiece, the pieces for BPE (whose
             * llama_detokenize cleans spaces); special tokens off, no BOS */
            if (!parse && run % 5 != 0) {
                size_t plen = 0;
                char *back;
                if (spm) {
                    back = malloc(len * 2 + 64);
                    int k = vocab_detokenize(v, ids, n, back, (int)len * 2 + 64);
                    plen = k < 0 ? 0 : (size_t)k;
                } else back = pieces_text(v, ids, n, &plen);
                /* SentencePiece cannot tell a "▁" in the text from a space */
                if (spm) for (size_t i = 0; i + 2 < len; i++)
                    if (memcmp(text + i, "\xE2\x96\x81", 3) == 0) {
                        memmove(text + i + 1, text + i + 3, len - i - 3);
                        text[i] = ' ';
                        len -= 2;
                    }
                /* deepseek-coder spells the bytes that never occur in UTF-8 (C0, C1, F5..FF)
                 * with user-defined tokens whose text is the Latin-1 character ("þ" for FE):
                 * those bytes cannot come back */
                bool lossy = vi == 3 && with_invalid;
                if (!lossy && (plen != len || memcmp(back, text, len) != 0)) bad_rt++;
                free(back);
            }
            free(st);
            free(ids);
        }
        free(text);
        check(bad_call == 0 && bad_range == 0, check_id("tokenizer.fuzz.%s.range", id), "%s: fuzz, %d random texts tokenize, ids in range", name, n_runs);
        check(bad_stream == 0, check_id("tokenizer.fuzz.%s.stream", id), "%s: fuzz, streamed text is always valid UTF-8 (%d bad)", name, bad_stream);
        check(bad_rt == 0, check_id("tokenizer.fuzz.%s.round-trip", id), "%s: fuzz, text round-trips exactly%s (%d bad)", name,
              vi == 3 ? "" : ", invalid UTF-8 included", bad_rt);

        /* every single token streams as valid UTF-8 and never overflows the documented bound */
        int bound = 3 * (vocab_max_piece_len(v) + 3), bad_single = 0;
        char *chunk = malloc((size_t)bound);
        for (int32_t id = 0; id < vocab_n_tokens(v); id++) {
            detok_stream ds;
            detok_init(&ds, v);
            int a = detok_push(&ds, id, chunk, bound);
            int b = a >= 0 ? detok_push(&ds, id, chunk + 0, bound) : -1;
            int c = detok_flush(&ds, chunk, bound);
            if (a < 0 || b < 0 || c < 0 || !utf8_valid((const uint8_t *)chunk, (size_t)c)) bad_single++;
        }
        free(chunk);
        check(bad_single == 0, check_id("tokenizer.fuzz.%s.single-tokens", id), "%s: every one of %d tokens streams within %d bytes", name, vocab_n_tokens(v), bound);

        /* edge inputs */
        static const char nuls[8] = {0, 'a', 0, 0, ' ', 0, '\n', 0};
        int32_t out[64];
        bool ok = vocab_tokenize(v, nuls, sizeof nuls, true, true, out, 64) > 0 &&
                  vocab_tokenize(v, "", 0, false, true, out, 64) == 0 &&
                  vocab_tokenize(v, NULL, 0, false, false, out, 64) == 0 &&
                  vocab_tokenize(v, "\xFF\xFE\xFD", 3, false, false, out, 64) > 0;
        check(ok, check_id("tokenizer.fuzz.%s.edge-inputs", id), "%s: NULs, empty text and lone invalid bytes tokenize", name);
        if (vi < 4) unload(&lv);
    }
    vocab_free(v2c);
    free(tb);
}

/* 5. speed */
static void test_speed(const char *dir) {
    static const char *const parts[] = {
        "The quick brown fox jumps over the lazy dog. It's 12:45, and we've got 3.14159 reasons to stay! ",
        "int main(int argc, char **argv) { for (int i = 0; i < 1024; ++i) printf(\"%d\\n\", i); }\n",
        ("\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8\xE5\x85\xAC\xE5\x9B\xAD\xE9\x87\x8C\xE6\x95\xA3\xE6\xAD\xA5\xEF\xBC\x8C"
         "\xE5\xA4\xA9\xE6\xB0\x94\xE5\xBE\x88\xE5\xA5\xBD\xE3\x80\x82 "),
        "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBA\xD0\xB0\xD0\xBA \xD0\xB4\xD0\xB5\xD0\xBB\xD0\xB0? ",
        "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85 ",
        "\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 ",
        "Caf\xC3\xA9 na\xC3\xAFve \xC3\xBC\xC3\xB6\xC3\xA4 \xC3\x9F \xE1\xBA\xA1 Vi\xE1\xBB\x87t   \t  tabs\n\n",
    };
    const size_t target = 1 << 20;
    char *text = malloc(target + 256);
    size_t len = 0;
    for (int i = 0; len < target; i = (i + 1) % 7) {
        size_t k = strlen(parts[i]);
        memcpy(text + len, parts[i], k);
        len += k;
    }
    static const char *const names[] = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder"};
    for (int vi = 0; vi < 4; vi++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, names[vi]);
        loaded_vocab lv;
        if (!load_gguf_vocab(check_id("tokenizer.speed.%s", names[vi]), path, &lv)) { unload(&lv); continue; }
        double t0 = now_seconds();
        int n = vocab_tokenize(lv.v, text, len, true, true, NULL, 0);
        double t1 = now_seconds();
        double mbs = (double)len / (1 << 20) / (t1 - t0);
        /* speed is a benchmark figure (BENCHMARKS.md), not an assertion: the machine is shared */
        check(n > 0, check_id("tokenizer.speed.%s.mixed", names[vi]), "%s: 1 MB of mixed text, %d tokens in %.3f s (%.1f MB/s)", names[vi], n, t1 - t0, mbs);
        /* degenerate inputs: one huge word, one huge run of spaces, one repeated emoji, random
         * bytes, one character that is no piece (byte fallback all the way) */
        static const char *const kinds[] = {"letters", "spaces", "newlines", "emoji", "random bytes", "U+E000"};
        char *odd = malloc(target + 8);
        for (int kind = 0; kind < 6; kind++) {
            size_t m = 0;
            while (m < target) {
                if (kind == 0) { odd[m] = "ab"[(m / 7) % 2]; m++; }
                else if (kind == 1) odd[m++] = ' ';
                else if (kind == 2) odd[m++] = '\n';
                else if (kind == 3) { memcpy(odd + m, "\xF0\x9F\x98\x80", 4); m += 4; }
                else if (kind == 4) odd[m++] = (char)rnd();
                else { memcpy(odd + m, "\xEE\x80\x80", 3); m += 3; }
            }
            t0 = now_seconds();
            n = vocab_tokenize(lv.v, odd, m, false, false, NULL, 0);
            t1 = now_seconds();
            check(n > 0, check_id("tokenizer.speed.%s.%s", names[vi], check_slug(kinds[kind])), "%s: 1 MB of %s, %d tokens in %.3f s", names[vi], kinds[kind], n, t1 - t0);
        }
        free(odd);
        unload(&lv);
    }
    free(text);
}

/* The accent-stripping map (unicode_nfd.h's packed runs, unpacked): a code point of each kind of
 * run against its canonical decomposition's first code point in UnicodeData.txt, and the edges. */
static void test_nfd_table(void) {
    unicode_nfd_table t;
    if (!check(unicode_nfd_load(&t) == 0, "nfd.load", "unpacking the table")) return;
    static const struct { uint32_t cpt, first; const char *what; } cases[] = {
        {0x00C0, 'A', "A-grave"}, {0x00C5, 'A', "A-ring (the run's last)"}, {0x00C6, 0x00C6, "AE (no decomposition)"},
        {0x00E9, 'e', "e-acute"}, {0x0101, 'a', "a-macron"}, {0x01D5, 'U', "U-diaeresis-macron (two steps)"},
        {0x1E9B, 0x017F, "long s with dot (to long s)"}, {0x212B, 'A', "angstrom sign"}, {0x0390, 0x03B9, "iota with dialytika and tonos"},
        {0x0419, 0x0418, "short I"}, {0xF900, 0x8C48, "CJK compatibility ideograph"}, {0x2F800, 0x4E3D, "supplementary CJK compatibility"},
        {0x2FA1D, 0x2A600, "the last"}, {0xAC00, 0x1100, "Hangul (by formula)"}, {0x41, 0x41, "ASCII"}, {0x4E00, 0x4E00, "unified ideograph"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t got = unicode_nfd_first(&t, cases[i].cpt);
        check(got == cases[i].first, check_id("nfd.U+%04X", cases[i].cpt), "%s: U+%04X -> U+%04X (want U+%04X)", cases[i].what,
              cases[i].cpt, got, cases[i].first);
    }
    unicode_nfd_free(&t);
}

int main(int argc, char **argv) {
    /* test_tokenizer --vectors DIR NAME:COUNT…: only the test vectors of these vocabularies, each
     * with COUNT texts (files taken from llama.cpp's source bundle, such as Qwen3.5's:
     * tests/programs.test.mjs) */
    if (argc > 3 && !strcmp(argv[1], "--vectors")) {
        for (int i = 3; i < argc; i++) {
            char name[128];
            int count = 0;
            const char *colon = strchr(argv[i], ':');
            snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - argv[i]) : (int)strlen(argv[i]), argv[i]);
            if (colon) count = atoi(colon + 1);
            test_vocab_vectors(argv[2], name, count);
        }
        return check_summary();
    }
    const char *vocab_dir = argc > 1 ? argv[1] : "../shared/vocab";
    const char *models_dir = argc > 2 ? argv[2] : "../shared/models";
    const char *refs_dir = argc > 3 ? argv[3] : "../shared/reference";
    test_stories(models_dir);
    test_references(models_dir, refs_dir);
    static const char *const names[] = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder"};
    for (int i = 0; i < 4; i++) test_vocab_vectors(vocab_dir, names[i], 46);
    test_specials(vocab_dir);
    test_pre_splits();
    test_nfd_table();
    test_fuzz(vocab_dir, models_dir);
    test_speed(vocab_dir);
    return check_summary();
}
