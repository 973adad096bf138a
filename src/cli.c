/* cli.c — the wick command line, the same in the native build (main) and the wasm build
 * (wick_cli_main, called by wasm_glue/cli.mjs under Node):
 *   wick generate -m MODEL [-z TOKENIZER.bin] -p PROMPT -n N [--temp T] [--seed S] [--threads N] [--ctx N]
 *                 [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-last-n N]
 *                 [--frequency-penalty F] [--presence-penalty P] [--stop TEXT]... [--keep N]
 *                 [--ignore-eos] [--truncate] [--probs K] [--kv f16|f32|q8_0|q4_0] [--kv-k T] [--kv-v T] [--grammar FILE.gbnf]
 *                 (wasm_glue/cli.mjs also takes --json-schema FILE.json, converted to a grammar in JS)
 *   wick logits   -m MODEL --tokens 1,403,407 [--steps K] [--follow IDS]
 *   wick logits|generate -m MODEL --mmproj MMPROJ.gguf --image FILE.ppm -p "TEXT <__media__> TEXT" …
 *                 a prompt with a picture in the marker's place (as llama.cpp's mtmd lays it out);
 *                 logits then prints only the last prompt row
 *   wick tokenize -m MODEL -p TEXT [--no-bos] [--special]
 *   wick detokenize -m MODEL --ids 1,403,407
 *   wick info     -m MODEL
 *   wick embed    -m MODEL (-p TEXT | --texts FILE) [--pooling none|mean|cls|last] [--normalize] [--truncate]
 *                 [--threads N] [--ctx N] [--batch N]   an encoder's embeddings as JSON (--texts: NUL-separated)
 *   wick rerank   -m MODEL -q QUERY (DOCUMENT... | --texts FILE) [--threads N] [--ctx N] [--batch N]
 *                 a reranker's relevance score of each document for the query, as JSON: the documents in
 *                 their order with their scores, then the indices from the most relevant down
 *   wick match    --grammar FILE.gbnf (-p TEXT | --texts FILE)   one line per text: complete, prefix or no
 *                 (--texts: texts separated by NUL bytes); no model needed
 *   wick synth    --shape mini|mini-mha|vl|134m|1b|0.8b|e2b|e4b|bge-small --type f32|f16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k -o FILE.gguf [--vocab VOCAB.gguf] [--seed S]
 *                 [--arch llama|llama3|qwen3|gemma2|gemma3|phi3|smollm3|granite|olmo2|lfm2|qwen35|granite-hybrid|mistral3|gemma4|
 *                         gemma3n|gemma-embedding|bert|nomic-bert|modern-bert]
 *                 [--pooling none|mean|cls|last (the encoders; a decoder's --pooling makes it an embedding model)
 *                            |rank (bert: a bge-reranker; qwen3: a Qwen3-Reranker)]
 *                 [--lexical (bert: similarities that follow the words two texts share, for retrieval tests)]
 *   wick synth    --mmproj idefics3|gemma3|lfm2|qwen2.5vl|qwen3vl|gemma4v [--type f16|f32|q8_0] -o FILE.gguf [--seed S]   a random-weight mmproj (vision) file
 *   wick vision   -m MMPROJ.gguf --image FILE.ppm [--threads N] [-o OUT.f32] [--dump-input IN.f32]
 *                 a picture (binary PPM, P6) through the mmproj's preprocessing and encoder: every image
 *                 llama.cpp makes of it (tiles row by row, then the overview, as its prompt holds them),
 *                 their positions × width one after another as raw little-endian float32 to OUT (and
 *                 the preprocessed inputs, [3][size][size] each, to IN); JSON of the shape on stdout
 *                 ({"images","grid_x","grid_y","positions" (all images'),"n_embd","image_size","sizes" ([w,h] per image)}),
 *                 the time on stderr
 * Results go to stdout, timings and errors to stderr; any failure exits non-zero with one line. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synth.h"
#include "vision.h"
#include "wick.h"

#ifndef __EMSCRIPTEN__
#include <sys/resource.h>
#endif

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
/* Node's stdout through the glue, unbuffered, so generated text streams as it is produced
 * (js_write: src/cli_library.js) */
extern void js_write(int fd, const char *p, int n);
extern int js_read_file(const char *path, uint8_t **buf, uint32_t *len, char *why, int why_len);
extern int js_write_file(const char *path, const uint8_t *buf, uint32_t len, char *why, int why_len);
static void out_write(int fd, const char *p, size_t n) { js_write(fd, p, (int)n); }
#else
static void out_write(int fd, const char *p, size_t n) {
    FILE *f = fd == 1 ? stdout : stderr;
    fwrite(p, 1, n, f);
    fflush(f);
}
#endif

static void outf(int fd, const char *fmt, ...) {
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        out_write(fd, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out_write(fd, big, (size_t)n);
    free(big);
}

static int error_exit(const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    outf(2, "wick: %s\n", msg);
    return 1;
}

/* Peak memory in MiB: the wasm heap (linear memory only grows) or the process's peak RSS. */
static double peak_memory_mib(void) {
#ifdef __EMSCRIPTEN__
    return (double)__builtin_wasm_memory_size(0) * 65536.0 / 1048576.0;
#else
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
#endif
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The files read: the model's backing store lives until exit, then is freed (so that leak
 * checkers see the load-generate-free cycle release everything). */
static void *file_buffers[1026];
static int n_file_buffers;
static void free_file_buffers(void) {
    while (n_file_buffers > 0) free(file_buffers[--n_file_buffers]);
}

/* Reads a whole file; the buffer is the model's backing store, so it lives until exit. */
static int read_file(const char *path, uint8_t **out, size_t *size) {
#ifdef __EMSCRIPTEN__
    /* the wasm builds have no file system (what the page downloads stays small): the host reads the
     * file into a malloc'd buffer (js_read_file: src/cli_library.js, Node's fs in wasm_glue/cli.mjs) */
    char why[256] = "";
    uint8_t *buf = NULL;
    uint32_t len = 0;
    if (js_read_file(path, &buf, &len, why, (int)sizeof why)) return error_exit("cannot open %s: %s", path, why);
#else
    FILE *f = fopen(path, "rb");
    if (!f) return error_exit("cannot open %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return error_exit("cannot seek in %s", path); }
    long len = ftell(f);
    if (len < 0) { fclose(f); return error_exit("cannot size %s", path); }
    rewind(f);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf) { fclose(f); return error_exit("%s: out of memory reading %ld bytes", path, len); }
    if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(buf);
        return error_exit("cannot read %s", path);
    }
    fclose(f);
#endif
    if (n_file_buffers == 0) atexit(free_file_buffers);
    if (n_file_buffers < (int)(sizeof file_buffers / sizeof *file_buffers)) file_buffers[n_file_buffers++] = buf;
    *out = buf;
    *size = (size_t)len;
    return 0;
}

/* Writes n bytes to a new file at path (the wasm builds: through the host, js_write_file in
 * src/cli_library.js). */
static int write_file(const char *path, const void *data, size_t n) {
#ifdef __EMSCRIPTEN__
    char why[256] = "";
    if (js_write_file(path, data, (uint32_t)n, why, (int)sizeof why)) return error_exit("cannot write %s: %s", path, why);
#else
    FILE *f = fopen(path, "wb");
    if (!f) return error_exit("cannot create %s: %s", path, strerror(errno));
    size_t done = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || done != n) return error_exit("cannot write %s", path);
#endif
    return 0;
}

typedef struct {
    const char *cmd, *model, *image, *dump_input, *mmproj, *tokenizer, *prompt, *tokens, *follow, *shape, *type, *out, *vocab, *arch, *grammar, *texts, *pooling, *query;
    char **docs; /* wick rerank's documents: the arguments that are not options */
    int n_docs;
    int n, steps, threads, ctx, batch, kv_type, kv_type_k, kv_type_v, no_bos, special, probs, keep, ignore_eos, truncate, normalize, lexical;
    const char *stops[16];
    int n_stops;
    /* sampler settings given on the command line, applied by name (wick_gen_set) */
    const char *set_names[16];
    double set_values[16];
    int n_set;
} options;

/* flags that map one to one onto a generation setting */
static const struct { const char *flag, *setting; } sampler_flags[] = {
    {"--temp", "temperature"}, {"--top-k", "top_k"}, {"--top-p", "top_p"}, {"--min-p", "min_p"},
    {"--repeat-penalty", "repeat_penalty"}, {"--repeat-last-n", "repeat_last_n"},
    {"--frequency-penalty", "frequency_penalty"}, {"--presence-penalty", "presence_penalty"}, {"--seed", "seed"},
};

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return error_exit("%s expects an integer from %ld to %ld, got '%s'", flag, lo, hi, s);
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->n = 256;
    o->threads = 1;
    o->kv_type = WICK_KV_F16;
    o->kv_type_k = o->kv_type_v = -1; /* as --kv */
    if (argc < 2)
        return error_exit("usage: wick generate|logits|tokenize|detokenize|info -m MODEL …, or wick synth --shape S --type T "
                          "-o FILE [--arch llama|llama3|qwen3|gemma2|gemma3|phi3|smollm3|granite|olmo2|lfm2|qwen35|granite-hybrid|mistral3|gemma4|gemma3n] (see README)");
    o->cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = strcmp(a, "--no-bos") && strcmp(a, "--ignore-eos") && strcmp(a, "--truncate") && strcmp(a, "--special") &&
                           strcmp(a, "--normalize") && strcmp(a, "--lexical");
        if (!strcmp(o->cmd, "rerank") && a[0] != '-') { /* a document */
            if (!o->docs) o->docs = argv + i;
            else if (o->docs + o->n_docs != argv + i) return error_exit("rerank: the documents come together, after the options");
            o->n_docs++;
            continue;
        }
        if (takes_value && !v) return error_exit("%s needs a value", a);
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-z") || !strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--tokens") || !strcmp(a, "--ids")) o->tokens = v;
        else if (!strcmp(a, "--follow")) o->follow = v;
        else if (!strcmp(a, "--shape")) o->shape = v;
        else if (!strcmp(a, "--type")) o->type = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->out = v;
        else if (!strcmp(a, "--vocab")) o->vocab = v;
        else if (!strcmp(a, "--image")) o->image = v;
        else if (!strcmp(a, "--dump-input")) o->dump_input = v;
        else if (!strcmp(a, "--mmproj")) o->mmproj = v;
        else if (!strcmp(a, "--arch")) o->arch = v;
        else if (!strcmp(a, "--pooling")) o->pooling = v;
        else if (!strcmp(a, "-q") || !strcmp(a, "--query")) o->query = v;
        else if (!strcmp(a, "--grammar")) o->grammar = v;
        else if (!strcmp(a, "--texts")) o->texts = v;
        else if (!strcmp(a, "--json-schema"))
            return error_exit("--json-schema: the schema is converted to a grammar by the JavaScript CLI "
                              "(node wasm_glue/cli.mjs); here give the grammar with --grammar FILE.gbnf");
        else if (!strcmp(a, "-n")) { if (parse_int(a, v, 0, 1 << 24, &o->n)) return 1; }
        else if (!strcmp(a, "--steps")) { if (parse_int(a, v, 0, 1 << 20, &o->steps)) return 1; }
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) { if (parse_int(a, v, 1, 256, &o->threads)) return 1; }
        else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) { if (parse_int(a, v, 1, 1 << 22, &o->ctx)) return 1; }
        else if (!strcmp(a, "--batch") || !strcmp(a, "-b")) { if (parse_int(a, v, 1, 1 << 22, &o->batch)) return 1; }
        else if (!strcmp(a, "--kv") || !strcmp(a, "--kv-k") || !strcmp(a, "--kv-v")) {
            /* --kv both, --kv-k / --kv-v the keys' or the values' own type (llama.cpp's -ctk / -ctv) */
            static const char *const names[WICK_KV_TYPE_COUNT] = {"f32", "f16", "q8_0", "q4_0"};
            int t = -1;
            for (int i = 0; i < WICK_KV_TYPE_COUNT; i++)
                if (!strcmp(v, names[i])) t = i;
            if (t < 0) return error_exit("%s expects f16, f32, q8_0 or q4_0, got '%s'", a, v);
            *(a[4] == '\0' ? &o->kv_type : a[5] == 'k' ? &o->kv_type_k : &o->kv_type_v) = t;
        } else if (!strcmp(a, "--probs")) {
            if (parse_int(a, v, 0, 64, &o->probs)) return 1;
        } else if (!strcmp(a, "--keep")) {
            if (parse_int(a, v, -1, 1 << 24, &o->keep)) return 1;
        } else if (!strcmp(a, "--stop")) {
            if (o->n_stops == 16) return error_exit("at most 16 --stop strings");
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "--special")) {
            o->special = 1;
            continue;
        } else if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = 1;
            continue;
        } else if (!strcmp(a, "--truncate")) {
            o->truncate = 1;
            continue;
        } else if (!strcmp(a, "--normalize")) {
            o->normalize = 1;
            continue;
        } else if (!strcmp(a, "--lexical")) {
            o->lexical = 1;
            continue;
        } else if (!strcmp(a, "--no-bos")) {
            o->no_bos = 1;
            continue;
        } else {
            size_t k = 0;
            while (k < sizeof sampler_flags / sizeof sampler_flags[0] && strcmp(a, sampler_flags[k].flag)) k++;
            if (k == sizeof sampler_flags / sizeof sampler_flags[0]) return error_exit("unknown option %s", a);
            char *end;
            double d = strtod(v, &end);
            if (*end || end == v) return error_exit("%s expects a number, got '%s'", a, v);
            if (o->n_set == 16) return error_exit("too many sampler options");
            o->set_names[o->n_set] = sampler_flags[k].setting;
            o->set_values[o->n_set++] = d;
        }
        i++;
    }
    if (!o->model && strcmp(o->cmd, "synth") && strcmp(o->cmd, "match")) return error_exit("%s: -m MODEL is required", o->cmd);
    return 0;
}

/* "name-00001-of-00003.gguf" → 3 (and the prefix length, so part k's name can be formed); 0 if
 * the name is not the first part of a split model */
static int split_count(const char *path, size_t *prefix) {
    size_t n = strlen(path);
    const char *tail = "-00001-of-00000.gguf"; /* the shape of the suffix */
    size_t tn = strlen(tail);
    if (n < tn || strncmp(path + n - tn, "-00001-of-", 10) || strcmp(path + n - 5, ".gguf")) return 0;
    int count = 0;
    for (const char *p = path + n - 10; p < path + n - 5; p++) {
        if (*p < '0' || *p > '9') return 0;
        count = count * 10 + (*p - '0');
    }
    *prefix = n - tn;
    return count;
}

static int load_model(const options *o, wick_model **m) {
    uint8_t *buf;
    size_t size, prefix;
    int parts = split_count(o->model, &prefix);
    if (parts > 1) {
        /* a split model: every part, in order */
        const void *bufs[1024];
        size_t sizes[1024];
        if (parts > 1024) return error_exit("%s: %d parts is too many", o->model, parts);
        char *name = malloc(prefix + 32);
        if (!name) return error_exit("out of memory");
        for (int i = 0; i < parts; i++) {
            snprintf(name, prefix + 32, "%.*s-%05d-of-%05d.gguf", (int)prefix, o->model, i + 1, parts);
            uint8_t *b;
            if (read_file(name, &b, &sizes[i])) { free(name); return 1; }
            bufs[i] = b;
        }
        free(name);
        if (wick_model_load_gguf_parts(bufs, sizes, parts, m) != WICK_OK) return error_exit("%s: %s", o->model, wick_last_error());
        return 0;
    }
    if (read_file(o->model, &buf, &size)) return 1;
    wick_status s;
    if (size >= 4 && memcmp(buf, "GGUF", 4) == 0) {
        s = wick_model_load_gguf(buf, size, m);
    } else if (o->tokenizer) {
        uint8_t *tok;
        size_t tok_size;
        if (read_file(o->tokenizer, &tok, &tok_size)) return 1;
        s = wick_model_load_llama2c(buf, size, tok, tok_size, m);
    } else {
        return error_exit("%s: not a GGUF file (a llama2.c checkpoint also needs -z TOKENIZER.bin)", o->model);
    }
    if (s != WICK_OK) return error_exit("%s: %s", o->model, wick_last_error());
    return 0;
}

static int new_context(const options *o, wick_model *m, wick_ctx **c) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = o->ctx;
    p.n_threads = o->threads;
    p.kv_type = o->kv_type;
    /* the context reads 0 as "kv_type": F32 keys or values under another type take kv_type f32 */
    int k = o->kv_type_k >= 0 ? o->kv_type_k : o->kv_type, v = o->kv_type_v >= 0 ? o->kv_type_v : o->kv_type;
    if (k == WICK_KV_F32 || v == WICK_KV_F32) p.kv_type = WICK_KV_F32;
    p.kv_type_k = k == p.kv_type ? 0 : k;
    p.kv_type_v = v == p.kv_type ? 0 : v;
    if (wick_ctx_new(m, &p, c) != WICK_OK) return error_exit("%s", wick_last_error());
    return 0;
}

/* embed and rerank: the window, threads and batch asked for, and the engine's default cache type */
static int new_encoder_context(const options *o, wick_model *m, wick_ctx **c) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = o->ctx;
    p.n_threads = o->threads;
    p.n_batch = o->batch;
    if (wick_ctx_new(m, &p, c) != WICK_OK) return error_exit("%s", wick_last_error());
    return 0;
}

static int tokenize_prompt(wick_model *m, const char *text, bool bos, bool special, int32_t **ids, int32_t *n) {
    size_t len = strlen(text);
    int32_t need = 0;
    if (wick_tokenize(m, text, len, bos, special, NULL, 0, &need) != WICK_OK) return error_exit("%s", wick_last_error());
    *ids = malloc(((size_t)need + 1) * sizeof(int32_t));
    if (!*ids) return error_exit("out of memory");
    if (wick_tokenize(m, text, len, bos, special, *ids, need, n) != WICK_OK) return error_exit("%s", wick_last_error());
    return 0;
}

static void print_logits_row(const float *row, int32_t n) {
    /* one row as a JSON array, built in one buffer (a vocabulary of 150k floats is ~2 MB) */
    size_t cap = (size_t)n * 18 + 8, len = 0;
    char *s = malloc(cap);
    if (!s) return;
    s[len++] = '[';
    for (int32_t i = 0; i < n; i++) len += (size_t)snprintf(s + len, cap - len, i ? ",%.9g" : "%.9g", row[i]);
    s[len++] = ']';
    out_write(1, s, len);
    free(s);
}

static int32_t argmax(const float *v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* "1,403,407" → ids, each below n_vocab */
static int parse_ids(const char *flag, const char *list, int32_t n_vocab, int32_t **out, int32_t *n_out) {
    int32_t n = 0, cap = 16;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    for (const char *p = list; ids && *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v >= n_vocab) {
            free(ids);
            return error_exit("%s: '%s' is not a list of ids below %d", flag, list, n_vocab);
        }
        if (*end && *end != ',') {
            free(ids);
            return error_exit("%s: unexpected '%c'", flag, *end);
        }
        if (n == cap) {
            int32_t *grown = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
            if (!grown) free(ids);
            ids = grown;
            if (!ids) break;
        }
        ids[n++] = (int32_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    if (!ids) return error_exit("out of memory");
    *out = ids;
    *n_out = n;
    return 0;
}

/* ---- a prompt with a picture: --mmproj FILE.gguf --image FILE.ppm, -p TEXT holding "<__media__>"
 * (llama.cpp mtmd's default marker) once. As mtmd_tokenize: BOS first (as the vocabulary adds it),
 * the text before and after the marker tokenized apart (special tokens parsed, nothing added),
 * and in the marker's place the picture's ids (wick_vision_layout: its markers and positions);
 * its rows are encoded into the context as slot 0 (image_encode). */
#define MEDIA_MARKER "<__media__>"

typedef struct {
    uint8_t *mbuf, *ibuf;
    wick_vision *v;
    const uint8_t *rgb;
    int32_t w, h;
} image_input;

static int parse_ppm(const char *path, const uint8_t *buf, size_t size, const uint8_t **rgb, int32_t *w, int32_t *h);

/* appends ids to *out (of *len, room *cap) */
static int append_ids(int32_t **out, int32_t *len, int32_t *cap, const int32_t *ids, int32_t n) {
    if (n == 0) return 0; /* *out may still be NULL (a vocabulary that adds no BOS): no pointer arithmetic on it */
    if (*len + n > *cap) {
        int32_t c = (*len + n) * 2 + 16;
        int32_t *grown = realloc(*out, (size_t)c * sizeof *grown);
        if (!grown) return error_exit("out of memory");
        *out = grown;
        *cap = c;
    }
    memcpy(*out + *len, ids, (size_t)n * sizeof *ids);
    *len += n;
    return 0;
}

static int append_text(wick_model *m, const char *text, size_t len, bool bos, int32_t **out, int32_t *n, int32_t *cap) {
    int32_t need = 0;
    if (wick_tokenize(m, text, len, bos, 1, NULL, 0, &need) != WICK_OK) return error_exit("%s", wick_last_error());
    int32_t *ids = malloc(((size_t)need + 1) * sizeof *ids);
    if (!ids) return error_exit("out of memory");
    int rc = wick_tokenize(m, text, len, bos, 1, ids, need, &need) != WICK_OK ? error_exit("%s", wick_last_error())
                                                                                : append_ids(out, n, cap, ids, need);
    free(ids);
    return rc;
}

static int image_prompt(const options *o, wick_model *m, image_input *im, int32_t **ids, int32_t *n) {
    size_t msize, isize;
    memset(im, 0, sizeof *im);
    if (!o->image) return error_exit("--mmproj needs --image FILE.ppm");
    if (read_file(o->mmproj, &im->mbuf, &msize) || read_file(o->image, &im->ibuf, &isize)) return 1;
    if (parse_ppm(o->image, im->ibuf, isize, &im->rgb, &im->w, &im->h)) return 1;
    if (wick_vision_load(im->mbuf, msize, &im->v) != WICK_OK) return error_exit("%s: %s", o->mmproj, wick_last_error());
    const char *at = strstr(o->prompt, MEDIA_MARKER);
    if (!at || strstr(at + 1, MEDIA_MARKER))
        return error_exit("the prompt must hold the image marker %s once (one --image)", MEDIA_MARKER);
    int32_t cap = 0, len = 0, *out = NULL, need = 0, n_pos = 0;
    if (append_text(m, "", 0, !o->no_bos, &out, &len, &cap) || append_text(m, o->prompt, (size_t)(at - o->prompt), false, &out, &len, &cap))
        return 1;
    if (wick_vision_layout(im->v, m, im->w, im->h, 0, NULL, 0, &need, &n_pos) != WICK_OK) return error_exit("%s", wick_last_error());
    int32_t *layout = malloc(((size_t)need + 1) * sizeof *layout);
    if (!layout) return error_exit("out of memory");
    if (wick_vision_layout(im->v, m, im->w, im->h, 0, layout, need, &need, &n_pos) != WICK_OK || append_ids(&out, &len, &cap, layout, need)) {
        free(layout);
        return error_exit("%s", wick_last_error());
    }
    free(layout);
    const char *rest = at + strlen(MEDIA_MARKER);
    if (append_text(m, rest, strlen(rest), false, &out, &len, &cap)) return 1;
    outf(2, "image: %d × %d pixels, %d positions of %d prompt ids\n", im->w, im->h, n_pos, len);
    *ids = out;
    *n = len;
    return 0;
}

/* the picture's rows into the context (slot 0) */
static int image_encode(const options *o, const image_input *im, wick_ctx *c) {
    double t0 = now_seconds();
    if (wick_vision_encode(im->v, c, im->rgb, im->w, im->h, 0) != WICK_OK) return error_exit("%s: %s", o->mmproj, wick_last_error());
    outf(2, "image: encoded in %.1f ms\n", (now_seconds() - t0) * 1e3);
    return 0;
}

/* (the files' buffers are read_file's: freed at exit) */
static void image_free(image_input *im) { wick_vision_free(im->v); }

/* Prompt logits of the tokens as one batch, then --steps greedy steps one token at a time
 * (feeding the --follow ids instead of our own choices when given, so that a comparison with a
 * reference run stays on its path even where two logits are nearly tied). */
static int cmd_logits(const options *o, wick_model *m) {
    bool image = o->mmproj != NULL;
    if (!o->tokens && !image) return error_exit("logits: --tokens 1,2,3 is required (or --mmproj, --image and -p)");
    if (image && !o->prompt) return error_exit("logits: --mmproj takes the prompt as -p TEXT");
    wick_model_info info;
    wick_model_get_info(m, &info);
    int32_t n, n_follow = 0, *ids, *follow = NULL;
    image_input im = {0};
    if (image ? image_prompt(o, m, &im, &ids, &n) : parse_ids("--tokens", o->tokens, info.n_vocab, &ids, &n)) return 1;
    if (n == 0) return error_exit("--tokens: no ids");
    if (o->follow && parse_ids("--follow", o->follow, info.n_vocab, &follow, &n_follow)) return 1;
    wick_ctx *c;
    if (new_context(o, m, &c)) return 1;
    if (image && image_encode(o, &im, c)) return 1;
    /* with a picture only the last prompt row is printed (its positions have no logits of interest) */
    if (wick_eval(c, ids, n, !image) != WICK_OK) return error_exit("%s", wick_last_error());
    outf(1, "{\"n_vocab\":%d,\"n_prompt\":%d,", info.n_vocab, n);
    if (image) { /* the prompt's ids, the picture's positions negative (wick.h WICK_IMAGE_TOKEN) */
        out_write(1, "\"prompt_ids\":[", 14);
        for (int32_t i = 0; i < n; i++) outf(1, i ? ",%d" : "%d", ids[i]);
        out_write(1, "],", 2);
    }
    out_write(1, "\"prompt_logits\":[", 17);
    for (int32_t i = image ? n - 1 : 0; i < n; i++) {
        if (i > (image ? n - 1 : 0)) out_write(1, ",", 1);
        print_logits_row(wick_get_logits(c, image ? -1 : i), info.n_vocab);
    }
    out_write(1, "],\"greedy_step_logits\":[", 24);
    int32_t *greedy = malloc(((size_t)o->steps + 1) * sizeof *greedy);
    if (!greedy) return error_exit("out of memory");
    /* step k prints the logits that chose greedy token k: the last prompt row first, then the
     * row after feeding each chosen token (the layout of ../shared/reference) */
    const float *row = wick_get_logits(c, -1);
    for (int k = 0; k < o->steps; k++) {
        if (k) {
            int32_t fed = k - 1 < n_follow ? follow[k - 1] : greedy[k - 1];
            if (wick_eval(c, &fed, 1, 0) != WICK_OK) return error_exit("%s", wick_last_error());
            row = wick_get_logits(c, -1);
            out_write(1, ",", 1);
        }
        print_logits_row(row, info.n_vocab);
        greedy[k] = argmax(row, info.n_vocab);
    }
    out_write(1, "],\"greedy_tokens\":[", 19);
    for (int k = 0; k < o->steps; k++) outf(1, k ? ",%d" : "%d", greedy[k]);
    out_write(1, "]}\n", 3);
    free(greedy);
    free(follow);
    free(ids);
    wick_ctx_free(c);
    if (image) image_free(&im);
    return 0;
}

/* A grammar file as a NUL-terminated string. */
static int read_grammar(const char *path, char **out) {
    uint8_t *text;
    size_t len;
    if (read_file(path, &text, &len)) return 1;
    char *gbnf = malloc(len + 1);
    if (!gbnf) return error_exit("out of memory");
    memcpy(gbnf, text, len);
    gbnf[len] = 0;
    *out = gbnf;
    return 0;
}

/* wick match: checks texts against a grammar, without a model */
static int cmd_match(const options *o) {
    if (!o->grammar) return error_exit("match: --grammar FILE is required");
    if (!o->prompt == !o->texts) return error_exit("match: give -p TEXT or --texts FILE");
    char *gbnf;
    if (read_grammar(o->grammar, &gbnf)) return 1;
    const char *texts = o->prompt;
    size_t len = o->prompt ? strlen(o->prompt) : 0;
    if (o->texts) {
        uint8_t *buf;
        if (read_file(o->texts, &buf, &len)) { free(gbnf); return 1; }
        texts = (const char *)buf;
    }
    static const char *verdicts[] = {"no", "prefix", "complete"};
    for (size_t start = 0; start <= len;) {
        const char *nul = memchr(texts + start, 0, len - start);
        size_t end = nul ? (size_t)(nul - texts) : len;
        int32_t verdict;
        if (wick_grammar_check(gbnf, NULL, texts + start, end - start, &verdict) != WICK_OK) {
            free(gbnf);
            return error_exit("%s: %s", o->grammar, wick_last_error());
        }
        outf(1, "%s\n", verdicts[verdict]);
        start = end + 1;
    }
    free(gbnf);
    return 0;
}

/* wick embed: each text ([CLS] … [SEP] added) through the encoder, all in as few passes as the
 * batch allows; one JSON object on stdout: the pooling, the width, and per text its token count,
 * whether it was truncated, and its embedding (pooling none: a row per token). A text longer than
 * the window fails unless --truncate (then its first tokens and its closing [SEP] are kept). */
static int cmd_embed(const options *o, wick_model *m) {
    static const char *const pool_names[] = {"none", "mean", "cls", "last"};
    int32_t pooling = WICK_POOLING_DEFAULT;
    for (int32_t i = 0; o->pooling && i < 4; i++)
        if (!strcmp(o->pooling, pool_names[i])) pooling = i;
    if (o->pooling && pooling < 0) return error_exit("embed: --pooling none|mean|cls|last, got '%s'", o->pooling);
    if (wick_model_pooling(m) < 0) return error_exit("embed: %s is a generative model, not an embedding model", o->model);
    if (pooling < 0) pooling = wick_model_pooling(m);
    if (!o->prompt == !o->texts) return error_exit("embed: give -p TEXT or --texts FILE (texts separated by NUL bytes)");
    const char *texts = o->prompt;
    size_t len = o->prompt ? strlen(o->prompt) : 0;
    uint8_t *file;
    if (o->texts) {
        if (read_file(o->texts, &file, &len)) return 1;
        texts = (const char *)file;
    }
    wick_ctx *c;
    if (new_encoder_context(o, m, &c)) return 1;
    int32_t n_ctx = wick_n_ctx(c), n_seq = 0, total = 0, *ids = NULL, *lens = NULL, *truncated = NULL;
    int rc = 0;
    for (size_t start = 0; start <= len && rc == 0;) {
        const char *nul = memchr(texts + start, 0, len - start);
        size_t end = nul ? (size_t)(nul - texts) : len;
        int32_t need = 0, n = 0;
        if (wick_tokenize(m, texts + start, end - start, 1, 0, NULL, 0, &need) != WICK_OK) { rc = error_exit("%s", wick_last_error()); break; }
        int32_t *grown = realloc(ids, ((size_t)total + (size_t)need + 1) * sizeof *ids);
        int32_t *l2 = realloc(lens, ((size_t)n_seq + 1) * sizeof *lens), *t2 = realloc(truncated, ((size_t)n_seq + 1) * sizeof *t2);
        if (grown) ids = grown;
        if (l2) lens = l2;
        if (t2) truncated = t2;
        if (!grown || !l2 || !t2) { rc = error_exit("out of memory"); break; }
        wick_tokenize(m, texts + start, end - start, 1, 0, ids + total, need, &n);
        truncated[n_seq] = n > n_ctx;
        if (n > n_ctx && !o->truncate) {
            rc = error_exit("embed: text %d has %d tokens, the window %d: shorten it, or --truncate", n_seq + 1, n, n_ctx);
            break;
        }
        if (n > n_ctx) { /* the first n_ctx − 1 tokens and the last ([SEP]) */
            ids[total + n_ctx - 1] = ids[total + n - 1];
            n = n_ctx;
        }
        lens[n_seq++] = n;
        total += n;
        start = end + 1;
    }
    wick_model_info info;
    wick_model_get_info(m, &info);
    size_t rows = pooling == WICK_POOLING_NONE ? (size_t)total : (size_t)n_seq;
    float *out = rc ? NULL : malloc(rows * (size_t)info.dim * sizeof *out);
    if (!rc && !out) rc = error_exit("out of memory");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc && wick_embed(c, ids, lens, n_seq, pooling, o->normalize, out) != WICK_OK) rc = error_exit("embed: %s", wick_last_error());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!rc) {
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        outf(2, "embed: %d texts, %d tokens in %.3f s (%.1f texts/s, %.1f tokens/s)\n", n_seq, total, secs, n_seq / secs, total / secs);
        outf(1, "{\"pooling\":\"%s\",\"dim\":%d,\"texts\":[", pool_names[pooling], info.dim);
        const float *row = out;
        for (int32_t s = 0; s < n_seq; s++) {
            outf(1, "%s{\"tokens\":%d,\"truncated\":%s,\"embedding\":", s ? "," : "", lens[s], truncated[s] ? "true" : "false");
            int32_t n_rows = pooling == WICK_POOLING_NONE ? lens[s] : 1;
            if (pooling == WICK_POOLING_NONE) outf(1, "[");
            for (int32_t r = 0; r < n_rows; r++, row += info.dim) {
                if (r) outf(1, ",");
                print_logits_row(row, info.dim);
            }
            outf(1, pooling == WICK_POOLING_NONE ? "]}" : "}");
        }
        outf(1, "]}\n");
    }
    free(out);
    free(ids);
    free(lens);
    free(truncated);
    wick_ctx_free(c); /* the texts' buffer is freed at exit, as every read_file buffer */
    return rc;
}

/* wick rerank: each document paired with the query as llama.cpp's server pairs them, all scored
 * in as few passes as the batch allows (one per pair for a decoder); one JSON object on stdout:
 * per document its token count and score, then the ranking (indices, most relevant first). */
static int cmd_rerank(const options *o, wick_model *m) {
    if (!o->query) return error_exit("rerank: -q QUERY is required");
    if (!o->n_docs == !o->texts) return error_exit("rerank: give the documents as arguments or --texts FILE (NUL-separated)");
    size_t flen = 0;
    uint8_t *file = NULL;
    if (o->texts && read_file(o->texts, &file, &flen)) return 1;
    wick_ctx *c;
    if (new_encoder_context(o, m, &c)) return 1;
    int32_t n_ctx = wick_n_ctx(c), n_seq = 0, total = 0, *ids = NULL, *lens = NULL;
    int rc = 0;
    for (size_t start = 0, d = 0; rc == 0 && (o->texts ? start <= flen : d < (size_t)o->n_docs); d++) {
        const char *doc = o->texts ? (const char *)file + start : o->docs[d];
        const char *nul = o->texts ? memchr(doc, 0, flen - start) : NULL;
        size_t len = o->texts ? (nul ? (size_t)(nul - doc) : flen - start) : strlen(doc);
        start += len + 1;
        int32_t need = 0, n = 0;
        if (wick_rerank_tokens(m, o->query, strlen(o->query), doc, len, NULL, 0, &need) != WICK_OK) { rc = error_exit("%s", wick_last_error()); break; }
        if (need > n_ctx) { rc = error_exit("rerank: document %d and the query make %d tokens, the window %d", n_seq + 1, need, n_ctx); break; }
        int32_t *grown = realloc(ids, ((size_t)total + (size_t)need + 1) * sizeof *ids), *l2 = realloc(lens, ((size_t)n_seq + 1) * sizeof *lens);
        if (grown) ids = grown;
        if (l2) lens = l2;
        if (!grown || !l2) { rc = error_exit("out of memory"); break; }
        wick_rerank_tokens(m, o->query, strlen(o->query), doc, len, ids + total, need, &n);
        lens[n_seq++] = n;
        total += n;
    }
    float *scores = rc ? NULL : malloc((size_t)n_seq * sizeof *scores);
    int32_t *order = rc ? NULL : malloc((size_t)n_seq * sizeof *order);
    if (!rc && (!scores || !order)) rc = error_exit("out of memory");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc && wick_rerank(c, ids, lens, n_seq, scores) != WICK_OK) rc = error_exit("rerank: %s", wick_last_error());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!rc) {
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        outf(2, "rerank: %d documents, %d tokens in %.3f s\n", n_seq, total, secs);
        /* most relevant first; equal scores keep the documents' order (an insertion sort) */
        for (int32_t i = 0; i < n_seq; i++) {
            int32_t j = i;
            while (j > 0 && scores[order[j - 1]] < scores[i]) order[j] = order[j - 1], j--;
            order[j] = i;
        }
        outf(1, "{\"documents\":[");
        for (int32_t s = 0; s < n_seq; s++) outf(1, "%s{\"tokens\":%d,\"score\":%.9g}", s ? "," : "", lens[s], scores[s]);
        outf(1, "],\"ranking\":[");
        for (int32_t s = 0; s < n_seq; s++) outf(1, "%s%d", s ? "," : "", order[s]);
        outf(1, "]}\n");
    }
    free(scores);
    free(order);
    free(ids);
    free(lens);
    wick_ctx_free(c);
    return rc;
}

/* --probs: one JSON line per generated token on stderr: the top candidates after truncation and
 * temperature, and the token drawn */
static void print_probs(wick_gen *g) {
    const int32_t *ids;
    const float *probs;
    int32_t n = wick_gen_probs(g, &ids, &probs);
    outf(2, "{\"drawn\":%d,\"top\":[", wick_gen_token(g));
    for (int32_t i = 0; i < n; i++) outf(2, "%s{\"id\":%d,\"p\":%.6g}", i ? "," : "", ids[i], probs[i]);
    outf(2, "]}\n");
}

static int cmd_generate(const options *o, wick_model *m) {
    if (!o->prompt) return error_exit("generate: -p PROMPT is required");
    int32_t *ids, n;
    image_input im = {0};
    if (o->mmproj ? image_prompt(o, m, &im, &ids, &n) : tokenize_prompt(m, o->prompt, !o->no_bos, o->special, &ids, &n)) return 1;
    if (n == 0) return error_exit("generate: the prompt is empty and the model adds no BOS");
    wick_ctx *c;
    if (new_context(o, m, &c)) return 1;
    if (o->mmproj && image_encode(o, &im, c)) return 1;
    wick_gen *g;
    if (wick_gen_new(c, &g) != WICK_OK) return error_exit("%s", wick_last_error());
    for (int i = 0; i < o->n_set; i++)
        if (wick_gen_set(g, o->set_names[i], o->set_values[i]) != WICK_OK) return error_exit("%s", wick_last_error());
    for (int i = 0; i < o->n_stops; i++)
        if (wick_gen_add_stop(g, o->stops[i]) != WICK_OK) return error_exit("%s", wick_last_error());
    if (wick_gen_set(g, "max_tokens", o->n) || wick_gen_set(g, "n_keep", o->keep) ||
        wick_gen_set(g, "ignore_eos", o->ignore_eos) || wick_gen_set(g, "n_probs", o->probs) ||
        wick_gen_set(g, "truncate_prompt", o->truncate))
        return error_exit("%s", wick_last_error());
    if (o->grammar) {
        char *gbnf;
        if (read_grammar(o->grammar, &gbnf)) return 1;
        wick_status st = wick_gen_set_grammar(g, gbnf, NULL);
        free(gbnf);
        if (st != WICK_OK) return error_exit("%s: %s", o->grammar, wick_last_error());
    }
    double t0 = now_seconds();
    if (o->n > 0 && wick_gen_start(g, ids, n) != WICK_OK) return error_exit("%s", wick_last_error());
    double t1 = now_seconds();
    int generated = 0, shifted = 0, reevaluated = 0;
    while (generated < o->n) {
        if (wick_gen_next(g) != WICK_OK) return error_exit("%s", wick_last_error());
        if (wick_gen_token(g) >= 0) generated++;
        shifted += wick_gen_shifted(g);
        reevaluated += wick_gen_reevaluated(g);
        int32_t len;
        const char *text = wick_gen_text(g, &len);
        out_write(1, text, (size_t)len);
        if (o->probs) print_probs(g);
        if (wick_gen_finish(g) != WICK_FINISH_NONE) break;
    }
    double t2 = now_seconds();
    out_write(1, "\n", 1);
    static const char *reasons[] = {"none", "end of generation", "stop string", "length", "grammar complete"};
    outf(2, "prefill: %d tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.1f tok/s); threads %d; "
            "finish: %s; context shifts dropped %d tokens (re-evaluated %d); peak memory %.1f MiB\n",
         n, t1 - t0, n / (t1 - t0 > 0 ? t1 - t0 : 1e-9), generated, t2 - t1,
         generated / (t2 - t1 > 0 ? t2 - t1 : 1e-9), o->threads, reasons[wick_gen_finish(g) <= WICK_FINISH_GRAMMAR ? wick_gen_finish(g) : 0], shifted, reevaluated,
         peak_memory_mib());
    wick_gen_free(g);
    free(ids);
    wick_ctx_free(c);
    if (o->mmproj) image_free(&im);
    return 0;
}

static int cmd_tokenize(const options *o, wick_model *m) {
    if (!o->prompt) return error_exit("tokenize: -p TEXT is required");
    int32_t *ids, n;
    if (tokenize_prompt(m, o->prompt, !o->no_bos, o->special, &ids, &n)) return 1;
    out_write(1, "[", 1);
    for (int32_t i = 0; i < n; i++) outf(1, i ? ",%d" : "%d", ids[i]);
    out_write(1, "]\n", 2);
    free(ids);
    return 0;
}

static int cmd_detokenize(const options *o, wick_model *m) {
    if (!o->tokens) return error_exit("detokenize: --ids 1,2,3 is required");
    wick_model_info info;
    wick_model_get_info(m, &info);
    int32_t *ids, n, len = 0;
    if (parse_ids("--ids", o->tokens, info.n_vocab, &ids, &n)) return 1;
    if (wick_detokenize(m, ids, n, NULL, 0, &len) != WICK_OK) return error_exit("%s", wick_last_error());
    char *text = malloc((size_t)len + 1);
    if (!text || wick_detokenize(m, ids, n, text, len + 1, &len) != WICK_OK) return error_exit("%s", wick_last_error());
    out_write(1, text, (size_t)len);
    out_write(1, "\n", 1);
    free(text);
    free(ids);
    return 0;
}

/* The model's description; with --ctx N, also the bytes of the KV cache of a context of N tokens
 * with the --kv types ("kv_bytes", as wick_kv_bytes counts them: the fit check's figure). */
static int cmd_info(const options *o, wick_model *m) {
    size_t need = 0;
    wick_model_info_json(m, NULL, 0, &need);
    char *s = malloc(need);
    if (!s || wick_model_info_json(m, s, need, NULL) != WICK_OK) return error_exit("%s", wick_last_error());
    wick_model_info info;
    if (o->ctx > 0 && wick_model_get_info(m, &info) == WICK_OK && info.has_weights) {
        wick_ctx *c;
        if (new_context(o, m, &c)) {
            free(s);
            return 1;
        }
        s[strlen(s) - 1] = '\0'; /* the closing brace, put back after the new field */
        outf(1, "%s,\"kv_bytes\":%zu}\n", s, wick_kv_bytes(c));
        wick_ctx_free(c);
    } else {
        outf(1, "%s\n", s);
    }
    free(s);
    return 0;
}

/* The next token of a PPM header (netpbm's format: fields separated by whitespace, '#' comments
 * to the end of the line): a decimal number in 1 … max, else -1 */
static long ppm_field(const uint8_t *b, size_t n, size_t *at, long max) {
    size_t i = *at;
    for (;;) {
        while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == '\v' || b[i] == '\f')) i++;
        if (i < n && b[i] == '#')
            while (i < n && b[i] != '\n') i++;
        else break;
    }
    long v = 0;
    size_t start = i;
    while (i < n && b[i] >= '0' && b[i] <= '9' && i - start < 9) v = v * 10 + (b[i++] - '0');
    if (i == start || v < 1 || v > max || (i < n && b[i] >= '0' && b[i] <= '9')) return -1;
    *at = i;
    return v;
}

/* A binary PPM (P6, 8-bit): its pixels, a view into buf */
static int parse_ppm(const char *path, const uint8_t *buf, size_t size, const uint8_t **rgb, int32_t *w, int32_t *h) {
    size_t at = 2;
    if (size < 2 || buf[0] != 'P' || buf[1] != '6') return error_exit("%s: not a binary PPM image (P6)", path);
    long width = ppm_field(buf, size, &at, VISION_MAX_SIDE), height = width < 0 ? -1 : ppm_field(buf, size, &at, VISION_MAX_SIDE);
    long maxval = height < 0 ? -1 : ppm_field(buf, size, &at, 65535);
    if (width < 0 || height < 0 || maxval < 0)
        return error_exit("%s: the PPM header's width, height and maximum must be numbers from 1 (sides up to %d)", path, VISION_MAX_SIDE);
    if (maxval != 255) return error_exit("%s: PPM maximum %ld: only 8-bit images (255) are read", path, maxval);
    at++; /* the one whitespace byte after the maximum */
    size_t need = (size_t)width * (size_t)height * 3;
    if (at > size || size - at < need)
        return error_exit("%s: %ld × %ld pixels need %zu bytes, the file has %zu after its header", path, width, height, need,
                          at > size ? (size_t)0 : size - at);
    *rgb = buf + at;
    *w = (int32_t)width;
    *h = (int32_t)height;
    return 0;
}

/* wick vision: the picture through the mmproj's preprocessing (every image of its batch: tiles,
 * overview) and encoder, each image's positions after the previous one's */
static int cmd_vision(const options *o) {
    if (!o->image) return error_exit("vision: --image FILE.ppm is required");
    uint8_t *mbuf, *ibuf;
    size_t msize, isize;
    if (read_file(o->model, &mbuf, &msize) || read_file(o->image, &ibuf, &isize)) return 1;
    const uint8_t *rgb = NULL;
    int32_t w = 0, h = 0;
    if (parse_ppm(o->image, ibuf, isize, &rgb, &w, &h)) return 1;
    vision_model v;
    errmsg err = {0};
    if (vision_load(&v, mbuf, msize, &err)) return error_exit("%s: %s", o->model, err.text);
    vision_batch b;
    double t0 = now_seconds(), t1 = t0, t2 = t0;
    if (vision_prepare(&v, rgb, w, h, &b, &err)) {
        vision_release(&v);
        return error_exit("%s: %s", o->image, err.text);
    }
    t1 = now_seconds();
    /* each image's positions (lfm2's differ by size), one after another */
    size_t total = 0;
    for (int i = 0; i < b.n; i++) total += (size_t)vision_positions_of(&v, b.nx[i], b.ny[i]);
    const size_t width = (size_t)vision_out_width(&v); /* qwen3vl: with its deepstack rows */
    float *out = malloc(total * width * sizeof *out);
    int rc = out ? 0 : error_exit("out of memory");
    for (size_t i = 0, at = 0; !rc && i < (size_t)b.n; at += (size_t)vision_positions_of(&v, b.nx[i], b.ny[i]), i++)
        if (vision_encode(&v, b.pixels + vision_batch_offset(&b, (int32_t)i), b.nx[i], b.ny[i], o->threads, out + at * width, &err))
            rc = error_exit("%s: %s", o->model, err.text);
    t2 = now_seconds();
    if (!rc) {
        outf(2, "vision: %d × %d image → %d images (the last %d × %d; %d × %d tiles) → %zu positions × %d; preprocess %.1f ms, encode %.1f ms (%d threads)\n",
             w, h, b.n, b.nx[b.n - 1], b.ny[b.n - 1], b.grid_x, b.grid_y, total, (int)width, (t1 - t0) * 1e3, (t2 - t1) * 1e3, o->threads);
        outf(1, "{\"images\":%d,\"grid_x\":%d,\"grid_y\":%d,\"positions\":%zu,\"n_embd\":%d,\"image_size\":%d,\"sizes\":[", b.n, b.grid_x,
             b.grid_y, total, (int)width, v.image_size);
        for (int i = 0; i < b.n; i++) outf(1, "%s[%d,%d]", i ? "," : "", b.nx[i], b.ny[i]);
        outf(1, "]}\n");
        if (o->dump_input) rc = write_file(o->dump_input, b.pixels, vision_batch_offset(&b, b.n) * sizeof *b.pixels);
        if (!rc && o->out) rc = write_file(o->out, out, total * width * sizeof *out);
    }
    free(out);
    vision_batch_free(&b);
    vision_release(&v);
    return rc;
}

#ifdef __EMSCRIPTEN__
EMSCRIPTEN_KEEPALIVE int wick_cli_main(int argc, char **argv);
int wick_cli_main(int argc, char **argv)
#else
int main(int argc, char **argv)
#endif
{
    options o;
    if (parse_args(argc, argv, &o)) return 1;
    if (!strcmp(o.cmd, "synth")) {
#ifdef __EMSCRIPTEN__
        return error_exit("synth: writes files, which the wasm builds cannot: run build/native/wick synth");
#endif
        errmsg err = {0};
        /* the seed comes from --seed when given, as a generation setting */
        unsigned long long seed = 1;
        for (int i = 0; i < o.n_set; i++)
            if (!strcmp(o.set_names[i], "seed")) seed = (unsigned long long)o.set_values[i];
        if (o.mmproj) {
            if (!o.out) return error_exit("synth: -o is required");
            if (synth_write_mmproj(o.mmproj, o.type ? o.type : "f16", o.out, seed, &err)) return error_exit("synth: %s", err.text);
            return 0;
        }
        if (!o.shape || !o.type || !o.out) return error_exit("synth: --shape, --type and -o are required");
        const char *vocab = o.vocab ? o.vocab : "../shared/vocab/ggml-vocab-llama-spm.gguf";
        if (synth_write(o.arch, o.shape, o.type, o.pooling, o.lexical, vocab, o.out, seed, &err)) return error_exit("synth: %s", err.text);
        return 0;
    }
    if (!strcmp(o.cmd, "match")) return cmd_match(&o);
    if (!strcmp(o.cmd, "vision")) return cmd_vision(&o);
    bool known = !strcmp(o.cmd, "generate") || !strcmp(o.cmd, "logits") || !strcmp(o.cmd, "tokenize") ||
                 !strcmp(o.cmd, "detokenize") || !strcmp(o.cmd, "info") || !strcmp(o.cmd, "embed") || !strcmp(o.cmd, "rerank");
    if (!known) return error_exit("unknown command '%s' (generate, logits, tokenize, detokenize, info, embed, rerank, match, synth, vision)", o.cmd);
    wick_model *m;
    if (load_model(&o, &m)) return 1;
    int rc;
    if (!strcmp(o.cmd, "generate")) rc = cmd_generate(&o, m);
    else if (!strcmp(o.cmd, "logits")) rc = cmd_logits(&o, m);
    else if (!strcmp(o.cmd, "tokenize")) rc = cmd_tokenize(&o, m);
    else if (!strcmp(o.cmd, "detokenize")) rc = cmd_detokenize(&o, m);
    else if (!strcmp(o.cmd, "embed")) rc = cmd_embed(&o, m);
    else if (!strcmp(o.cmd, "rerank")) rc = cmd_rerank(&o, m);
    else rc = cmd_info(&o, m);
    wick_model_free(m);
    return rc;
}
