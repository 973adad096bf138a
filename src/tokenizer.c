/* tokenizer.c — text ↔ token ids, following llama.cpp's llama-vocab.cpp and unicode.cpp so that
 * the ids match its tokenizer test vectors:
 *
 *   SentencePiece (tokenizer.ggml.model = "llama", and llama2.c's tokenizer.bin): spaces become
 *     "▁" (with one prepended when the vocab adds a space prefix), every UTF-8 character starts as
 *     a symbol, and adjacent symbols whose concatenation is a piece merge, best piece score first;
 *     symbols that are no piece are spelled with <0xNN> byte tokens.
 *   Byte-level BPE (tokenizer.ggml.model = "gpt2"): the text is split into words by the
 *     pre-tokenizer tokenizer.ggml.pre names (hand-written equivalents of llama.cpp's regexes),
 *     each word's bytes are mapped to printable code points (GPT-2's bytes_to_unicode), and
 *     adjacent symbols merge by the rank of the pair in tokenizer.ggml.merges, lowest first.
 *   Special tokens: before either, the texts of control / user-defined tokens are cut out of the
 *     input, longest token first (llama.cpp's tokenizer_st_partition).
 *   Detokenization, whole (llama_detokenize) and streamed (never a partial UTF-8 character).
 *
 * Lookups of piece text → id and of merge pair → rank go through open-addressing hash tables,
 * and the merge loops use binary heaps, so tokenizing is O(n log n) in the input length. */
#include "tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

/* ---------------------------------------------------------------------------------------------
 * Vocabulary
 * ------------------------------------------------------------------------------------------- */

enum vocab_type { VOCAB_SPM = 1, VOCAB_BPE = 2, VOCAB_WPM = 3 };

/* Token attributes, as llama.cpp's llama_token_attr (bits), plus our end-of-generation mark. */
enum {
    ATTR_UNDEFINED = 0,
    ATTR_UNKNOWN = 1 << 0,
    ATTR_UNUSED = 1 << 1,
    ATTR_NORMAL = 1 << 2,
    ATTR_CONTROL = 1 << 3,
    ATTR_USER_DEFINED = 1 << 4,
    ATTR_BYTE = 1 << 5,
    ATTR_LSTRIP = 1 << 7,  /* whitespace before the token's text is dropped */
    ATTR_RSTRIP = 1 << 8,  /* whitespace after the token's text is dropped */
    ATTR_EOG = 1 << 12,    /* ends generation */
};

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type) */
enum { TYPE_UNDEFINED = 0, TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3,
       TYPE_USER_DEFINED = 4, TYPE_UNUSED = 5, TYPE_BYTE = 6 };

/* Pre-tokenizer splits (llama.cpp's LLAMA_VOCAB_PRE_TYPE_* grouped by identical regex lists). */
enum pre_split {
    SPLIT_DEFAULT,        /* [\p{P}\$\+<=>\^~\|]+ , gpt2 , \p{N}+ , [0-9][0-9][0-9] */
    SPLIT_GPT2,           /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
    SPLIT_LLAMA3,         /* (?i:'s|…)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|… */
    SPLIT_QWEN2,          /* the llama3 pattern with \p{N} one digit at a time */
    SPLIT_QWEN35,         /* qwen2's with marks (\p{M}) counted as letters */
    SPLIT_DEEPSEEK_LLM,
    SPLIT_DEEPSEEK_CODER,
    SPLIT_FALCON,
    SPLIT_STARCODER,      /* \p{N} , gpt2 */
    SPLIT_BLOOM,          /*  ?[^(\s|.,!?…。，、।۔،)]+ */
    SPLIT_GPT4O,          /* o200k: cased words with contractions, \p{N}{1,3}, … (split_gpt4o) */
    SPLIT_NEWLINES,       /* [^\n]+|[\n]+ (Gemma 4: merges run over whole lines) */
};

typedef struct {
    uint32_t off, len; /* text: v->text[off .. off+len) */
    float score;
    uint32_t attr;
} token_info;

typedef struct {
    uint32_t off, len;  /* "first second" in v->merge_text */
    uint32_t split;     /* first = [off, off+split), second = [off+split+1, off+len) */
} merge_info;

#define N_SPECIAL_BUCKETS 4096

/* Inputs are limited so that every offset, escaped text included, fits in 32 bits. */
#define MAX_TEXT_BYTES (512u << 20)

struct wick_vocab {
    enum vocab_type type;
    enum pre_split pre;
    int32_t n_tokens;
    token_info *tok;
    char *text;                 /* all token texts, back to back */
    int32_t *tok_slots;         /* hash of text → id; -1 = empty */
    uint32_t tok_mask;

    int32_t n_merges;
    merge_info *merges;
    char *merge_text;
    int32_t *merge_slots;       /* hash of (first, second) → merge index = rank; -1 = empty */
    uint32_t merge_mask;

    int32_t bos, eos, unk, eot, eom; /* -1 when none */
    bool add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
    /* WordPiece (BERT): [SEP] appended after the text ([CLS], the BOS, before it), and the
     * BertNormalizer's lowercasing and accent stripping */
    int32_t sep;
    bool add_sep, lowercase, strip_accents;
    unicode_nfd_table nfd;      /* unpacked when strip_accents is set on a WordPiece vocabulary */
    /* Gemma 4's BPE (tokenizer.ggml.model "gemma4", SentencePiece-style): tokens are raw UTF-8
     * with "▁" for a space, not GPT-2's byte alphabet, and a piece missing from the vocabulary
     * falls back to <0xNN> byte tokens */
    bool raw_bytes;
    /* SentencePiece: no piece has "▁" after anything but "▁", so no merge ever crosses the
     * point where a run of "▁" starts, and the text can be merged word by word there */
    bool spm_word_split;
    int32_t byte_token[256];    /* byte fallback: <0xNN>, else (SentencePiece) the 1-byte piece */
    int32_t max_piece_len;

    /* GPT-2 bytes_to_unicode: byte → UTF-8 of its code point, and code point → byte */
    char byte_enc[256][2];
    uint8_t byte_enc_len[256];
    int16_t byte_dec[324];      /* code points 0..323 (the map's range), -1 when not mapped */

    /* control, user-defined and unknown tokens, longest text first (tokenizer_st_partition) */
    int32_t *special;
    int32_t n_special;
    /* indices into special[] of the tokens whose text starts with a given byte pair, by bucket
     * (a hash of the two bytes); one-byte texts by their byte */
    int32_t *special_by_pair, *special_pair_start;   /* start has N_SPECIAL_BUCKETS + 1 entries */
    int32_t *special_by_byte, *special_byte_start;   /* start has 257 entries */
};

/* Hash of n bytes continuing from h: MurmurHash3's 32-bit block mixing, four bytes at a time,
 * then FNV-1a steps for the tail. Chained calls (hash of a, then of b) hash a pair. */
#define HASH_SEED 2166136261u
static uint32_t hash_bytes(uint32_t h, const char *s, size_t n) {
    for (; n >= 4; s += 4, n -= 4) {
        uint32_t k;
        memcpy(&k, s, 4);
        k *= 0xCC9E2D51u;
        k = k << 15 | k >> 17;
        h ^= k * 0x1B873593u;
        h = (h << 13 | h >> 19) * 5 + 0xE6546B64u;
    }
    for (; n; s++, n--) h = (h ^ (uint8_t)*s) * 16777619u;
    h ^= h >> 16; /* spread the high bits into the low ones the table mask keeps */
    return h * 0x85EBCA6Bu;
}

/* whether s[i..] starts with "▁" (U+2581), SentencePiece's escaped space */
static bool is_escaped_space(const char *s, size_t n, size_t i) {
    return i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0;
}

static uint32_t table_size_for(uint32_t n) {
    uint32_t cap = 16;
    while (cap < 2 * n) cap <<= 1; /* load factor <= 1/2 */
    return cap;
}

static const char *tok_text(const wick_vocab *v, int32_t id) { return v->text + v->tok[id].off; }

/* id of the token whose text is s[0..n), or -1 */
static int32_t text_to_token(const wick_vocab *v, const char *s, size_t n) {
    uint32_t i = hash_bytes(HASH_SEED, s, n) & v->tok_mask;
    for (;; i = (i + 1) & v->tok_mask) {
        int32_t id = v->tok_slots[i];
        if (id < 0) return -1;
        if (v->tok[id].len == n && memcmp(tok_text(v, id), s, n) == 0) return id;
    }
}

/* Later duplicates replace earlier ones, as llama.cpp's token_to_id[word] = i does. */
static void token_table_insert(wick_vocab *v, int32_t id) {
    const char *s = tok_text(v, id);
    uint32_t n = v->tok[id].len;
    uint32_t i = hash_bytes(HASH_SEED, s, n) & v->tok_mask;
    for (;; i = (i + 1) & v->tok_mask) {
        int32_t other = v->tok_slots[i];
        if (other < 0 || (v->tok[other].len == n && memcmp(tok_text(v, other), s, n) == 0)) {
            v->tok_slots[i] = id;
            return;
        }
    }
}

static uint32_t merge_hash(const char *a, size_t na, const char *b, size_t nb) {
    return hash_bytes(hash_bytes(hash_bytes(HASH_SEED, a, na), " ", 1), b, nb);
}

/* rank of merging the symbols a and b, or -1 */
static int32_t merge_rank(const wick_vocab *v, const char *a, size_t na, const char *b, size_t nb) {
    if (!v->merge_slots) return -1;
    uint32_t i = merge_hash(a, na, b, nb) & v->merge_mask;
    for (;; i = (i + 1) & v->merge_mask) {
        int32_t m = v->merge_slots[i];
        if (m < 0) return -1;
        const merge_info *mi = &v->merges[m];
        const char *s = v->merge_text + mi->off;
        if (mi->split == na && mi->len - mi->split - 1 == nb && memcmp(s, a, na) == 0 &&
            memcmp(s + na + 1, b, nb) == 0)
            return m;
    }
}

/* The first occurrence of a pair keeps its rank, as llama.cpp's bpe_ranks.emplace does. */
static void merge_table_insert(wick_vocab *v, int32_t m) {
    const merge_info *mi = &v->merges[m];
    const char *s = v->merge_text + mi->off;
    uint32_t nb = mi->len - mi->split - 1;
    uint32_t i = merge_hash(s, mi->split, s + mi->split + 1, nb) & v->merge_mask;
    for (;; i = (i + 1) & v->merge_mask) {
        int32_t other = v->merge_slots[i];
        if (other < 0) { v->merge_slots[i] = m; return; }
        const merge_info *o = &v->merges[other];
        if (o->len == mi->len && o->split == mi->split &&
            memcmp(v->merge_text + o->off, s, mi->len) == 0)
            return;
    }
}

void vocab_free(wick_vocab *v) {
    if (!v) return;
    unicode_nfd_free(&v->nfd);
    free(v->tok);
    free(v->text);
    free(v->tok_slots);
    free(v->merges);
    free(v->merge_text);
    free(v->merge_slots);
    free(v->special);
    free(v->special_by_pair);
    free(v->special_pair_start);
    free(v->special_by_byte);
    free(v->special_byte_start);
    free(v);
}

/* GPT-2's bytes_to_unicode: the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
 * themselves; the other 68 bytes, in order, become U+0100, U+0101, … */
static void init_byte_map(wick_vocab *v) {
    for (int c = 0; c < 324; c++) v->byte_dec[c] = -1;
    int next = 256;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        int cpt = printable ? b : next++;
        v->byte_enc_len[b] = (uint8_t)unicode_encode((uint32_t)cpt, v->byte_enc[b]);
        v->byte_dec[cpt] = (int16_t)b;
    }
}

/* Texts of tokens that end generation, as llama.cpp's special_eog_ids detection. */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<|return|>", "<|call|>",
    "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",
};

/* Special tokens sort by (length descending, id ascending), packed into 64-bit keys since qsort
 * takes no context argument. */
static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static uint32_t pair_bucket(uint8_t b0, uint8_t b1) {
    return (((uint32_t)b0 << 8 | b1) * 2654435761u) >> (32 - 12); /* 12 bits: N_SPECIAL_BUCKETS */
}

/* Everything that follows the token list: hash tables, byte tokens, end-of-generation marks,
 * the special-token cache and its lookup buckets. */
static int vocab_finish(wick_vocab *v, const char *model_name, errmsg *err) {
    int32_t n = v->n_tokens;
    uint32_t cap = table_size_for((uint32_t)n);
    v->tok_slots = malloc(cap * sizeof *v->tok_slots);
    if (!v->tok_slots) { errorf(err, WICK_ERR_NOMEM, "out of memory for the token table"); return -1; }
    memset(v->tok_slots, 0xFF, cap * sizeof *v->tok_slots);
    v->tok_mask = cap - 1;
    v->max_piece_len = 0;
    for (int32_t id = 0; id < n; id++) {
        token_table_insert(v, id);
        if ((int32_t)v->tok[id].len > v->max_piece_len) v->max_piece_len = (int32_t)v->tok[id].len;
    }
    if (v->merges) {
        cap = table_size_for((uint32_t)v->n_merges);
        v->merge_slots = malloc(cap * sizeof *v->merge_slots);
        if (!v->merge_slots) { errorf(err, WICK_ERR_NOMEM, "out of memory for the merge table"); return -1; }
        memset(v->merge_slots, 0xFF, cap * sizeof *v->merge_slots);
        v->merge_mask = cap - 1;
        for (int32_t m = 0; m < v->n_merges; m++)
            if (v->merges[m].split != UINT32_MAX) merge_table_insert(v, m);
    }
    init_byte_map(v);

    v->spm_word_split = v->type == VOCAB_SPM;
    for (int32_t id = 0; id < n && v->spm_word_split; id++) {
        const char *s = tok_text(v, id);
        for (size_t i = 1; i < v->tok[id].len && v->spm_word_split; i++)
            if (is_escaped_space(s, v->tok[id].len, i) && !(i >= 3 && is_escaped_space(s, v->tok[id].len, i - 3)))
                v->spm_word_split = false;
    }

    /* byte fallback (llama.cpp's byte_to_token): <0xNN>, for SentencePiece else the 1-byte piece
     * (Gemma 4's raw-bytes BPE takes <0xNN> only) */
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        char raw = (char)b;
        int32_t id = text_to_token(v, name, 6);
        v->byte_token[b] = id >= 0 || v->raw_bytes ? id : text_to_token(v, &raw, 1);
    }

    /* end of generation: EOS, EOT, EOM, and the well-known end-marker texts (made control) */
    for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
        int32_t id = text_to_token(v, eog_texts[i], strlen(eog_texts[i]));
        if (id < 0) continue;
        v->tok[id].attr |= ATTR_CONTROL | ATTR_EOG;
    }
    if (v->eos >= 0) v->tok[v->eos].attr |= ATTR_EOG;
    if (v->eot >= 0) v->tok[v->eot].attr |= ATTR_EOG;
    if (v->eom >= 0) v->tok[v->eom].attr |= ATTR_EOG;

    /* special-token cache, longest text first */
    int32_t n_special = 0;
    for (int32_t id = 0; id < n; id++)
        if (v->tok[id].attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) n_special++;
    uint64_t *keys = malloc(((size_t)n_special + 1) * sizeof *keys);
    v->special = malloc(((size_t)n_special + 1) * sizeof *v->special);
    v->special_by_pair = malloc(((size_t)n_special + 1) * sizeof *v->special_by_pair);
    v->special_by_byte = malloc(((size_t)n_special + 1) * sizeof *v->special_by_byte);
    v->special_pair_start = calloc(N_SPECIAL_BUCKETS + 1, sizeof *v->special_pair_start);
    v->special_byte_start = calloc(257, sizeof *v->special_byte_start);
    if (!keys || !v->special || !v->special_by_pair || !v->special_by_byte ||
        !v->special_pair_start || !v->special_byte_start) {
        free(keys);
        errorf(err, WICK_ERR_NOMEM, "out of memory for the special-token cache");
        return -1;
    }
    n_special = 0;
    for (int32_t id = 0; id < n; id++)
        if (v->tok[id].attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN))
            keys[n_special++] = (uint64_t)(UINT32_MAX - v->tok[id].len) << 32 | (uint32_t)id;
    qsort(keys, (size_t)n_special, sizeof *keys, cmp_u64);
    for (int32_t i = 0; i < n_special; i++) v->special[i] = (int32_t)(keys[i] & 0xFFFFFFFFu);
    free(keys);
    v->n_special = n_special;

    /* Token attributes llama.cpp sets by model name: Phi-3 drops whitespace after its special
     * tokens (except <unk>, <s>, <|endoftext|>) and after </s>. */
    char lower[64] = {0};
    for (size_t i = 0; model_name && model_name[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(model_name[i] >= 'A' && model_name[i] <= 'Z' ? model_name[i] + 32 : model_name[i]);
    if (strstr(lower, "phi-3") || strstr(lower, "phi3")) {
        for (int32_t i = 0; i < n_special; i++) v->tok[v->special[i]].attr |= ATTR_RSTRIP;
        int32_t id = text_to_token(v, "</s>", 4);
        if (id >= 0) v->tok[id].attr |= ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (int k = 0; k < 3; k++) {
            id = text_to_token(v, keep[k], strlen(keep[k]));
            if (id >= 0) v->tok[id].attr &= ~(uint32_t)ATTR_RSTRIP;
        }
    }

    /* lookup buckets for matching special texts inside input (counting sort by bucket) */
    for (int32_t i = 0; i < n_special; i++) {
        const token_info *t = &v->tok[v->special[i]];
        const uint8_t *s = (const uint8_t *)v->text + t->off;
        if (t->len == 1) v->special_byte_start[s[0] + 1]++;
        else v->special_pair_start[pair_bucket(s[0], s[1]) + 1]++;
    }
    for (int b = 0; b < N_SPECIAL_BUCKETS; b++) v->special_pair_start[b + 1] += v->special_pair_start[b];
    for (int b = 0; b < 256; b++) v->special_byte_start[b + 1] += v->special_byte_start[b];
    int32_t *fill_pair = calloc(N_SPECIAL_BUCKETS, sizeof *fill_pair);
    int32_t fill_byte[256] = {0};
    if (!fill_pair) { errorf(err, WICK_ERR_NOMEM, "out of memory for the special-token cache"); return -1; }
    for (int32_t i = 0; i < n_special; i++) {
        const token_info *t = &v->tok[v->special[i]];
        const uint8_t *s = (const uint8_t *)v->text + t->off;
        if (t->len == 1) {
            v->special_by_byte[v->special_byte_start[s[0]] + fill_byte[s[0]]++] = i;
        } else {
            uint32_t b = pair_bucket(s[0], s[1]);
            v->special_by_pair[v->special_pair_start[b] + fill_pair[b]++] = i;
        }
    }
    free(fill_pair);
    return 0;
}

static wick_vocab *vocab_alloc(void) {
    wick_vocab *v = calloc(1, sizeof *v);
    if (v) v->bos = v->eos = v->unk = v->eot = v->eom = -1;
    return v;
}

static uint32_t attr_from_type(int64_t type) {
    switch (type) {
    case TYPE_NORMAL: return ATTR_NORMAL;
    case TYPE_UNKNOWN: return ATTR_UNKNOWN;
    case TYPE_CONTROL: return ATTR_CONTROL;
    case TYPE_USER_DEFINED: return ATTR_USER_DEFINED;
    case TYPE_UNUSED: return ATTR_UNUSED;
    case TYPE_BYTE: return ATTR_BYTE;
    default: return ATTR_UNDEFINED;
    }
}

static const gguf_kv *numeric_array(const gguf_file *g, const char *key) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_ARRAY) return NULL;
    switch (kv->arr_type) {
    case GGUF_U8: case GGUF_I8: case GGUF_U16: case GGUF_I16: case GGUF_U32: case GGUF_I32:
    case GGUF_F32: case GGUF_U64: case GGUF_I64: case GGUF_F64: return kv;
    default: return NULL;
    }
}

/* Pre-tokenizer names llama.cpp knows, with the split they use and the flags they set. */
static const struct {
    const char *name;
    enum pre_split split;
    bool clean_spaces, ignore_merges, add_bos;
} pre_names[] = {
    {"default", SPLIT_DEFAULT, true, false, false},
    {"llama3", SPLIT_LLAMA3, true, true, true},
    {"llama-v3", SPLIT_LLAMA3, true, true, true},
    {"llama-bpe", SPLIT_LLAMA3, true, true, true},
    {"falcon3", SPLIT_LLAMA3, true, true, true},
    {"falcon-h1", SPLIT_LLAMA3, true, true, true},
    {"pixtral", SPLIT_LLAMA3, true, true, true},
    {"midm-2.0", SPLIT_LLAMA3, true, true, true},
    {"lfm2", SPLIT_LLAMA3, true, true, true},
    {"dbrx", SPLIT_LLAMA3, true, false, false},
    {"smaug-bpe", SPLIT_LLAMA3, true, false, false},
    {"deepseek-llm", SPLIT_DEEPSEEK_LLM, false, false, false},
    {"deepseek-coder", SPLIT_DEEPSEEK_CODER, false, false, false},
    {"falcon", SPLIT_FALCON, true, false, false},
    {"mpt", SPLIT_GPT2, true, false, false},
    {"starcoder", SPLIT_STARCODER, true, false, false},
    {"gpt-2", SPLIT_GPT2, true, false, false},
    {"phi-2", SPLIT_GPT2, true, false, false},
    {"jina-es", SPLIT_GPT2, true, false, false},
    {"jina-de", SPLIT_GPT2, true, false, false},
    {"gigachat", SPLIT_GPT2, true, false, false},
    {"jina-v2-es", SPLIT_GPT2, true, false, false},
    {"jina-v2-de", SPLIT_GPT2, true, false, false},
    {"a.x-4.0", SPLIT_GPT2, true, false, false},
    {"mellum", SPLIT_GPT2, true, false, false},
    {"jina-v1-en", SPLIT_GPT2, true, false, false},
    {"jina-v2-code", SPLIT_GPT2, true, false, false},
    {"roberta-bpe", SPLIT_GPT2, true, false, false},
    {"refact", SPLIT_STARCODER, true, false, false},
    {"command-r", SPLIT_STARCODER, false, false, false},
    {"qwen2", SPLIT_QWEN2, false, false, false},
    {"qwen35", SPLIT_QWEN35, false, false, false},
    {"deepseek-r1-qwen", SPLIT_QWEN2, false, false, false},
    {"megrez", SPLIT_QWEN2, true, false, false},
    {"stablelm2", SPLIT_QWEN2, true, false, false},
    {"olmo", SPLIT_GPT2, true, false, false},
    {"poro-chat", SPLIT_BLOOM, false, false, false},
    {"bloom", SPLIT_BLOOM, true, false, false},
    {"gpt3-finnish", SPLIT_BLOOM, true, false, false},
    {"smollm", SPLIT_STARCODER, false, false, false},
    {"codeshell", SPLIT_STARCODER, true, false, false},
    {"exaone", SPLIT_STARCODER, true, false, false},
    {"minerva-7b", SPLIT_STARCODER, true, false, false},
    {"jais", SPLIT_GPT2, true, false, false},
    {"gpt-4o", SPLIT_GPT4O, false, false, false},
    {"llama4", SPLIT_GPT4O, false, false, false},
    {"kanana2", SPLIT_GPT4O, false, false, false},
    {"talkie", SPLIT_GPT4O, false, false, false},
    {"minimax-m2", SPLIT_GPT4O, false, false, false},
    {"gemma4", SPLIT_NEWLINES, true, false, true},
    {"granite-embed-multi-311m", SPLIT_NEWLINES, true, false, false},
};

int vocab_load_gguf(wick_vocab **out, const gguf_file *g, errmsg *err) {
    *out = NULL;
    gguf_str model;
    if (!gguf_get_str(g, "tokenizer.ggml.model", &model)) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.model is missing: the file has no vocabulary");
        return -1;
    }
    enum vocab_type type;
    bool raw_bytes = gguf_str_eq(model, "gemma4");
    if (gguf_str_eq(model, "llama")) type = VOCAB_SPM;
    else if (gguf_str_eq(model, "gpt2") || raw_bytes) type = VOCAB_BPE;
    else if (gguf_str_eq(model, "bert")) type = VOCAB_WPM;
    else {
        errorf(err, WICK_ERR_UNSUPPORTED, "tokenizer.ggml.model '%.*s' is not supported (llama, gpt2, gemma4 and bert are)",
                (int)(model.len > 40 ? 40 : model.len), model.ptr);
        return -1;
    }
    const gguf_kv *tokens = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!tokens || tokens->arr_len == 0) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.tokens is missing or empty");
        return -1;
    }
    if (tokens->arr_len > (1u << 24)) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries (at most 16777216 supported)",
                (unsigned long long)tokens->arr_len);
        return -1;
    }
    int32_t n = (int32_t)tokens->arr_len;
    const gguf_kv *scores = numeric_array(g, "tokenizer.ggml.scores");
    const gguf_kv *types = numeric_array(g, "tokenizer.ggml.token_type");
    if (scores && scores->arr_len < (uint64_t)n) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.scores has %llu entries for %d tokens",
                (unsigned long long)scores->arr_len, n);
        return -1;
    }
    if (types && types->arr_len < (uint64_t)n) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.token_type has %llu entries for %d tokens",
                (unsigned long long)types->arr_len, n);
        return -1;
    }

    wick_vocab *v = vocab_alloc();
    gguf_str *strs = malloc((size_t)n * sizeof *strs);
    if (!v || !strs) goto oom;
    v->type = type;
    v->raw_bytes = raw_bytes;
    v->n_tokens = n;
    if (gguf_arr_strings(tokens, strs)) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.tokens: malformed string array");
        goto fail;
    }
    /* token texts into one block; an empty text becomes "[EMPTY_<id>]" as in llama.cpp */
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += strs[i].len ? strs[i].len : 24;
    if (total > UINT32_MAX) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.tokens: texts too large");
        goto fail;
    }
    v->tok = calloc((size_t)n, sizeof *v->tok);
    v->text = malloc(total + 1);
    if (!v->tok || !v->text) goto oom;
    size_t pos = 0;
    for (int32_t i = 0; i < n; i++) {
        v->tok[i].off = (uint32_t)pos;
        if (strs[i].len) {
            memcpy(v->text + pos, strs[i].ptr, strs[i].len);
            v->tok[i].len = (uint32_t)strs[i].len;
        } else {
            v->tok[i].len = (uint32_t)snprintf(v->text + pos, 24, "[EMPTY_%d]", (int)i);
        }
        pos += v->tok[i].len;
        v->tok[i].score = scores ? (float)gguf_arr_f64(scores, (uint64_t)i) : 0.0f;
        v->tok[i].attr = types ? attr_from_type(gguf_arr_i64(types, (uint64_t)i)) : ATTR_NORMAL;
    }
    free(strs);
    strs = NULL;

    if (type == VOCAB_BPE) {
        const gguf_kv *merges = gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_STRING);
        if (!merges) {
            errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)");
            goto fail;
        }
        if (merges->arr_len > (1u << 24)) {
            errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.merges has too many entries");
            goto fail;
        }
        int32_t nm = (int32_t)merges->arr_len;
        gguf_str *ms = malloc(((size_t)nm + 1) * sizeof *ms);
        v->merges = malloc(((size_t)nm + 1) * sizeof *v->merges);
        if (!ms || !v->merges) { free(ms); goto oom; }
        if (gguf_arr_strings(merges, ms)) {
            free(ms);
            errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.merges: malformed string array");
            goto fail;
        }
        size_t mt = 0;
        for (int32_t i = 0; i < nm; i++) mt += ms[i].len;
        if (mt > UINT32_MAX) {
            free(ms);
            errorf(err, WICK_ERR_FORMAT, "tokenizer.ggml.merges: texts too large");
            goto fail;
        }
        v->merge_text = malloc(mt + 1);
        if (!v->merge_text) { free(ms); goto oom; }
        size_t mp = 0;
        for (int32_t i = 0; i < nm; i++) {
            merge_info *mi = &v->merges[i];
            mi->off = (uint32_t)mp;
            mi->len = (uint32_t)ms[i].len;
            memcpy(v->merge_text + mp, ms[i].ptr, ms[i].len);
            mp += ms[i].len;
            /* split at the first space after the first byte (word.find(' ', 1)); a merge without
             * one can never apply */
            mi->split = UINT32_MAX;
            for (uint32_t k = 1; k < mi->len; k++)
                if (v->merge_text[mi->off + k] == ' ') { mi->split = k; break; }
        }
        free(ms);
        v->n_merges = nm;
    }

    /* defaults per model type, then the metadata */
    gguf_str pre = {0};
    bool has_pre = gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    v->sep = -1;
    if (type == VOCAB_WPM) { /* llama.cpp's defaults for BERT's ids; its pre-tokenizer is WordPiece's own */
        v->bos = 101; v->eos = -1; v->unk = 100; v->sep = 102;
        v->add_bos = v->add_sep = v->clean_spaces = true;
    } else if (type == VOCAB_SPM) {
        v->bos = 1; v->eos = 2; v->unk = 0;
        v->add_space_prefix = true;
        v->add_bos = true;
        v->pre = SPLIT_DEFAULT;
    } else {
        v->bos = 11; v->eos = 11; v->unk = -1;
        v->clean_spaces = true;
        v->pre = SPLIT_DEFAULT; /* no pre key: llama.cpp's default (GPT-NeoX era files) */
        if (raw_bytes && !has_pre) { /* llama.cpp names gemma4's pre-tokenizer itself */
            pre = (gguf_str){"gemma4", 6};
            has_pre = true;
        }
        if (has_pre) {
            size_t k, nk = sizeof pre_names / sizeof pre_names[0];
            for (k = 0; k < nk; k++)
                if (gguf_str_eq(pre, pre_names[k].name)) break;
            if (k == nk) {
                errorf(err, WICK_ERR_FORMAT, "unknown pre-tokenizer type tokenizer.ggml.pre = '%.*s'",
                        (int)(pre.len > 40 ? 40 : pre.len), pre.ptr);
                goto fail;
            }
            v->pre = pre_names[k].split;
            v->clean_spaces = pre_names[k].clean_spaces;
            v->ignore_merges = pre_names[k].ignore_merges;
            v->add_bos = pre_names[k].add_bos;
        }
    }
    bool flag;
    if (gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &flag)) v->add_space_prefix = flag;
    static const struct { const char *key; size_t field; } ids[] = {
        {"tokenizer.ggml.bos_token_id", offsetof(wick_vocab, bos)},
        {"tokenizer.ggml.eos_token_id", offsetof(wick_vocab, eos)},
        {"tokenizer.ggml.unknown_token_id", offsetof(wick_vocab, unk)},
        {"tokenizer.ggml.eot_token_id", offsetof(wick_vocab, eot)},
        {"tokenizer.ggml.eom_token_id", offsetof(wick_vocab, eom)},
        {"tokenizer.ggml.seperator_token_id", offsetof(wick_vocab, sep)}, /* sic: llama.cpp's key */
    };
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        uint64_t id;
        /* an id past the vocabulary keeps the default, as llama.cpp does */
        if (gguf_get_u64(g, ids[k].key, &id) && id < (uint64_t)n)
            *(int32_t *)((char *)v + ids[k].field) = (int32_t)id;
    }
    int32_t *id_fields[] = {&v->bos, &v->eos, &v->unk, &v->sep};
    for (int k = 0; k < 4; k++)
        if (*id_fields[k] >= n) *id_fields[k] = -1;
    if (gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &flag)) v->add_bos = flag;
    if (v->pre == SPLIT_NEWLINES) v->add_bos = true; /* llama.cpp overrides a false one for Gemma 4 */
    if (gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &flag)) v->add_eos = flag;
    if (gguf_get_bool(g, "tokenizer.ggml.add_sep_token", &flag)) v->add_sep = flag;
    /* the BertNormalizer: lowercase unless told not to, accents stripped as it lowercases unless told */
    v->lowercase = true;
    if (gguf_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &flag)) v->lowercase = flag;
    v->strip_accents = v->lowercase;
    if (gguf_get_bool(g, "tokenizer.ggml.normalizer.strip_accents", &flag)) v->strip_accents = flag;
    if (v->type == VOCAB_WPM && v->strip_accents && unicode_nfd_load(&v->nfd)) goto oom;
    /* extra end-of-generation ids: FIM padding / repository / file separators */
    static const char *const fim_keys[] = {"tokenizer.ggml.fim_pad_token_id",
                                           "tokenizer.ggml.fim_rep_token_id",
                                           "tokenizer.ggml.fim_sep_token_id"};
    for (int k = 0; k < 3; k++) {
        uint64_t id;
        if (gguf_get_u64(g, fim_keys[k], &id) && id < (uint64_t)n) v->tok[id].attr |= ATTR_EOG;
    }

    char name[64] = {0};
    gguf_str gname;
    if (gguf_get_str(g, "general.name", &gname))
        snprintf(name, sizeof name, "%.*s", (int)(gname.len > 63 ? 63 : gname.len), gname.ptr);
    if (vocab_finish(v, name, err)) goto fail;
    *out = v;
    return 0;

oom:
    errorf(err, WICK_ERR_NOMEM, "out of memory loading the vocabulary");
fail:
    free(strs);
    vocab_free(v);
    return -1;
}

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_byte_piece(const char *s, size_t n) {
    static const char hexd[] = "0123456789ABCDEF";
    return n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && strchr(hexd, s[3]) && s[3] &&
           strchr(hexd, s[4]) && s[4] && s[5] == '>';
}

int vocab_load_llama2c(wick_vocab **out, const uint8_t *buf, size_t size, int32_t n_vocab,
                       errmsg *err) {
    *out = NULL;
    if (n_vocab <= 0 || n_vocab > (1 << 24)) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.bin: vocabulary size %d out of range", (int)n_vocab);
        return -1;
    }
    if (size < 4) {
        errorf(err, WICK_ERR_FORMAT, "tokenizer.bin: %zu bytes, too short for its header", size);
        return -1;
    }
    /* first pass: validate every record and size the text block ("▁" is 3 bytes for a space) */
    size_t pos = 4, total = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (size - pos < 8) {
            errorf(err, WICK_ERR_FORMAT, "tokenizer.bin: token %d runs past the end of the file", (int)i);
            return -1;
        }
        uint32_t len = rd_u32(buf + pos + 4);
        pos += 8;
        if (len > size - pos) {
            errorf(err, WICK_ERR_FORMAT, "tokenizer.bin: token %d length %u runs past the end of the file",
                    (int)i, len);
            return -1;
        }
        for (uint32_t k = 0; k < len; k++) total += buf[pos + k] == ' ' ? 3 : 1;
        total += 24;
        pos += len;
    }
    wick_vocab *v = vocab_alloc();
    if (!v) goto oom;
    v->type = VOCAB_SPM;
    v->n_tokens = n_vocab;
    v->tok = calloc((size_t)n_vocab, sizeof *v->tok);
    v->text = malloc(total + 1);
    if (!v->tok || !v->text) goto oom;
    pos = 4;
    size_t tp = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        uint32_t bits = rd_u32(buf + pos), len = rd_u32(buf + pos + 4);
        float score;
        memcpy(&score, &bits, sizeof score);
        const char *s = (const char *)buf + pos + 8;
        pos += 8 + (size_t)len;
        /* llama2.c's export wrote BOS / EOS as "\n<s>\n" / "\n</s>\n" */
        if ((i == 1 || i == 2) && len >= 2 && s[0] == '\n' && s[len - 1] == '\n') { s++; len -= 2; }
        token_info *t = &v->tok[i];
        t->off = (uint32_t)tp;
        t->score = score;
        for (uint32_t k = 0; k < len; k++) {
            if (s[k] == ' ') { memcpy(v->text + tp, "\xE2\x96\x81", 3); tp += 3; }
            else v->text[tp++] = s[k];
        }
        t->len = (uint32_t)(tp - t->off);
        if (t->len == 0) t->len = (uint32_t)snprintf(v->text + tp, 24, "[EMPTY_%d]", (int)i);
        tp = t->off + t->len;
        t->attr = i == 0 ? ATTR_UNKNOWN
                : (i == 1 || i == 2) ? ATTR_CONTROL
                : is_byte_piece(v->text + t->off, t->len) ? ATTR_BYTE : ATTR_NORMAL;
    }
    v->unk = 0;
    v->bos = n_vocab > 1 ? 1 : -1;
    v->eos = n_vocab > 2 ? 2 : -1;
    v->add_space_prefix = true;
    v->add_bos = true;
    v->pre = SPLIT_DEFAULT;
    if (vocab_finish(v, "", err)) {
        vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
oom:
    errorf(err, WICK_ERR_NOMEM, "out of memory loading tokenizer.bin");
    vocab_free(v);
    return -1;
}

int32_t vocab_n_tokens(const wick_vocab *v) { return v->n_tokens; }
int32_t vocab_bos(const wick_vocab *v) { return v->bos; }
int32_t vocab_eos(const wick_vocab *v) { return v->eos; }
bool vocab_add_bos(const wick_vocab *v) { return v->add_bos && v->bos >= 0; }
bool vocab_add_eos(const wick_vocab *v) { return v->add_eos && v->eos >= 0; }
int32_t vocab_sep(const wick_vocab *v) { return v->sep; }
bool vocab_add_sep(const wick_vocab *v) { return v->add_sep; }
bool vocab_is_eog(const wick_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens && (v->tok[id].attr & ATTR_EOG);
}
bool vocab_is_control(const wick_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens && (v->tok[id].attr & (ATTR_CONTROL | ATTR_UNKNOWN));
}
const char *vocab_model_name(const wick_vocab *v) {
    return v->type == VOCAB_SPM ? "llama" : v->type == VOCAB_WPM ? "bert" : v->raw_bytes ? "gemma4" : "gpt2";
}
int vocab_max_piece_len(const wick_vocab *v) { return v->max_piece_len; }
bool vocab_cleans_spaces(const wick_vocab *v) { return v->type == VOCAB_BPE && v->clean_spaces; }

/* ---------------------------------------------------------------------------------------------
 * Shared machinery: output, symbols, the bigram heap
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    int32_t *ids;
    int64_t max, n;
} id_out;

static void emit(id_out *o, int32_t id) {
    if (o->n < o->max) o->ids[o->n] = id;
    o->n++;
}

/* A symbol is a byte range of the text being merged, linked to its neighbours. */
typedef struct {
    int32_t prev, next;
    uint32_t start, n;
} symbol;

/* A candidate merge of two adjacent symbols. order: the merge priority in the high 32 bits
 * (smallest first: the piece score in descending order for SentencePiece, the merge rank for
 * BPE) and the left symbol in the low 32 bits, so that ties go to the leftmost pair and one
 * integer comparison orders the heap. size: the byte length of the pair when it was queued,
 * which tells a stale entry from a live one. */
typedef struct {
    uint64_t order;
    int32_t right;
    uint32_t size;
} bigram;

static int32_t bigram_left(const bigram *b) { return (int32_t)(uint32_t)b->order; }

/* A float score as a 32-bit priority: higher scores give smaller values. -0 counts as +0, as
 * the comparison llama.cpp uses does. */
static uint32_t score_priority(float score) {
    uint32_t u;
    if (score == 0) score = 0;
    memcpy(&u, &score, sizeof u);
    u = (u & 0x80000000u) ? ~u : u | 0x80000000u; /* now ascending with the score */
    return ~u;
}

typedef struct {
    symbol *sym;
    size_t sym_cap;
    bigram *heap;
    size_t heap_n, heap_cap;
    bool filling;   /* initial pairs: appended, then heapified at once */
    bool oom;
} merge_work;

static void sift_down(bigram *h, size_t n, size_t i) {
    bigram x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].order < h[c].order) c++;
        if (h[c].order >= x.order) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void heap_push(merge_work *w, bigram b) {
    if (w->heap_n == w->heap_cap) {
        size_t cap = w->heap_cap ? w->heap_cap * 2 : 64;
        bigram *h = realloc(w->heap, cap * sizeof *h);
        if (!h) { w->oom = true; return; }
        w->heap = h;
        w->heap_cap = cap;
    }
    size_t i = w->heap_n++;
    while (i > 0 && !w->filling) {
        size_t parent = (i - 1) / 2;
        if (w->heap[parent].order <= b.order) break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = b;
}

static void heap_build(merge_work *w) {
    w->filling = false;
    for (size_t i = w->heap_n / 2; i-- > 0;) sift_down(w->heap, w->heap_n, i);
}

static bigram heap_pop(merge_work *w) {
    bigram top = w->heap[0];
    w->heap[0] = w->heap[--w->heap_n];
    if (w->heap_n) sift_down(w->heap, w->heap_n, 0);
    return top;
}

static bool symbols_reserve(merge_work *w, size_t n) {
    if (n <= w->sym_cap) return true;
    size_t cap = w->sym_cap ? w->sym_cap : 64;
    while (cap < n) cap *= 2;
    symbol *s = realloc(w->sym, cap * sizeof *s);
    if (!s) { w->oom = true; return false; }
    w->sym = s;
    w->sym_cap = cap;
    return true;
}

/* One symbol per UTF-8 character of s[0..n). llama.cpp judges a character by its lead byte
 * alone (unicode_len_utf8), so an invalid lead byte swallows the bytes after it, an escaped
 * space included; here a byte that starts no complete sequence is a symbol of its own, which
 * changes nothing for valid UTF-8 and keeps the byte fallback lossless for invalid input.
 * Returns the symbol count. */
static int32_t split_symbols(merge_work *w, const char *s, size_t n) {
    if (!symbols_reserve(w, n)) return -1;
    int32_t count = 0;
    for (size_t off = 0; off < n;) {
        uint32_t cpt;
        size_t len = (size_t)unicode_decode_lenient((const uint8_t *)s + off, n - off, &cpt);
        w->sym[count] = (symbol){count - 1, off + len == n ? -1 : count + 1, (uint32_t)off, (uint32_t)len};
        off += len;
        count++;
    }
    return count;
}

/* Merge the right symbol of a live bigram into the left one. */
static void merge_symbols(merge_work *w, const bigram *b) {
    symbol *l = &w->sym[bigram_left(b)], *r = &w->sym[b->right];
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) w->sym[r->next].prev = bigram_left(b);
}

/* Pops bigrams until one is still live: both symbols unmerged and the same size as queued.
 * Returns false when none is left. */
static bool next_live_bigram(merge_work *w, bigram *b) {
    while (w->heap_n) {
        *b = heap_pop(w);
        const symbol *l = &w->sym[bigram_left(b)], *r = &w->sym[b->right];
        if (l->n && r->n && l->n + r->n == b->size) return true;
    }
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * SentencePiece
 * ------------------------------------------------------------------------------------------- */

static void spm_try_bigram(const wick_vocab *v, merge_work *w, const char *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    uint32_t size = w->sym[left].n + w->sym[right].n;
    int32_t id = text_to_token(v, s + w->sym[left].start, size);
    if (id < 0) return;
    heap_push(w, (bigram){(uint64_t)score_priority(v->tok[id].score) << 32 | (uint32_t)left, right, size});
}

/* The merge loop both tokenizers share: queue every adjacent pair the model would merge
 * (try_bigram decides and ranks: piece score for SentencePiece, merge rank for BPE), then merge
 * the best live pair and queue its new neighbours until none is left. -1 when memory ran out. */
typedef void try_bigram_fn(const wick_vocab *v, merge_work *w, const char *s, int32_t left, int32_t right);
static int merge_all(const wick_vocab *v, merge_work *w, const char *s, int32_t count, try_bigram_fn *try_bigram) {
    w->heap_n = 0;
    w->filling = true;
    for (int32_t i = 1; i < count; i++) try_bigram(v, w, s, i - 1, i);
    heap_build(w);
    bigram b;
    while (next_live_bigram(w, &b)) {
        int32_t left = bigram_left(&b);
        merge_symbols(w, &b);
        try_bigram(v, w, s, w->sym[left].prev, left);
        try_bigram(v, w, s, left, w->sym[left].next);
    }
    return w->oom ? -1 : 0;
}

/* s[0..n): text already escaped ("▁" for spaces). llama.cpp's llm_tokenizer_spm_session. */
static int spm_encode_run(const wick_vocab *v, merge_work *w, const char *s, size_t n, id_out *o) {
    int32_t count = split_symbols(w, s, n);
    if (count < 0) return -1;
    if (count == 0) return 0;
    if (merge_all(v, w, s, count, spm_try_bigram)) return -1;
    /* resegment: a symbol is a piece, or is spelled byte by byte */
    for (int32_t i = 0; i != -1; i = w->sym[i].next) {
        const symbol *sym = &w->sym[i];
        int32_t id = text_to_token(v, s + sym->start, sym->n);
        if (id >= 0) { emit(o, id); continue; }
        for (uint32_t k = 0; k < sym->n; k++) {
            int32_t b = v->byte_token[(uint8_t)s[sym->start + k]];
            if (b < 0) b = v->unk;
            if (b >= 0) emit(o, b);
        }
    }
    return 0;
}

/* The merge of a whole text, word by word where the vocabulary allows it (spm_word_split):
 * the result is the same, the heaps stay small. */
static int spm_encode(const wick_vocab *v, merge_work *w, const char *s, size_t n, id_out *o) {
    if (!v->spm_word_split) return spm_encode_run(v, w, s, n, o);
    size_t start = 0;
    for (size_t i = 1; i < n; i++) {
        if (is_escaped_space(s, n, i) && !(i >= 3 && is_escaped_space(s, n, i - 3))) {
            if (spm_encode_run(v, w, s + start, i - start, o)) return -1;
            start = i;
        }
    }
    return spm_encode_run(v, w, s + start, n - start, o);
}

/* ---------------------------------------------------------------------------------------------
 * Pre-tokenizers (llama.cpp's unicode_regex_split): a list of patterns, each applied to every
 * piece the previous ones produced; the text a pattern matches and the text between matches
 * both become pieces. Patterns over \p{…} classes see each non-ASCII code point only through
 * its category, and non-ASCII whitespace as whitespace only (llama.cpp's "collapsed" text).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t n;        /* code points */
    uint32_t *cpt;     /* n code points (U+FFFD for a byte that is no valid UTF-8) */
    uint32_t *off;     /* n + 1 byte offsets into the text */
    uint16_t *flags;   /* n unicode_flags() */
} cpt_text;

typedef struct {
    uint32_t *len;     /* piece lengths in code points; they partition the text */
    uint32_t n;
} pieces;

static void piece_add(pieces *p, uint32_t len) {
    if (len) p->len[p->n++] = len;
}

#define OUT_OF_RANGE 0xFFFFFFFFu

/* Where the last alternatives of the GPT-2-style patterns end at pos, given the n_ws whitespace
 * code points there and whether more text follows them: \s+(?!\S) (all but the last whitespace,
 * which goes with the next word), \s+, or else one code point that matches no alternative. */
static inline uint32_t whitespace_end(uint32_t pos, uint32_t n_ws, bool more) {
    if (n_ws > 1 && more) return pos + n_ws - 1;
    return pos + (n_ws > 0 ? n_ws : 1);
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) (unicode.cpp's
 * unicode_regex_split_custom_gpt2) on the piece [a, b). */
static void split_gpt2(const cpt_text *t, uint32_t a, uint32_t b, pieces *out) {
#define CPT(i) ((i) >= a && (i) < b ? t->cpt[i] : OUT_OF_RANGE)
#define FLAGS(i) ((i) >= a && (i) < b ? t->flags[i] : 0u)
    uint32_t prev_end = a;
#define ADD(end) (piece_add(out, (end) - prev_end), prev_end = (end))
    for (uint32_t pos = a; pos < b;) {
        uint32_t c = CPT(pos);
        unsigned f = FLAGS(pos);
        if (c == '\'' && pos + 1 < b) {
            uint32_t c1 = CPT(pos + 1);
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') { ADD(pos + 2); pos += 2; continue; }
            if (pos + 2 < b) {
                uint32_t c2 = CPT(pos + 2);
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
                    ADD(pos + 3);
                    pos += 3;
                    continue;
                }
            }
        }
        unsigned f2 = c == ' ' ? FLAGS(pos + 1) : f;
        if (f2 & UFLAG_LETTER) {
            pos += c == ' ';
            while (FLAGS(pos) & UFLAG_LETTER) pos++;
            ADD(pos);
            continue;
        }
        if (f2 & UFLAG_NUMBER) {
            pos += c == ' ';
            while (FLAGS(pos) & UFLAG_NUMBER) pos++;
            ADD(pos);
            continue;
        }
        if (!(f2 & (UFLAG_WHITESPACE | UFLAG_LETTER | UFLAG_NUMBER)) && f2) {
            pos += c == ' ';
            for (;;) {
                unsigned g = FLAGS(pos);
                if ((g & (UFLAG_WHITESPACE | UFLAG_LETTER | UFLAG_NUMBER)) || !g) break;
                pos++;
            }
            ADD(pos);
            continue;
        }
        uint32_t n_ws = 0;
        while (FLAGS(pos + n_ws) & UFLAG_WHITESPACE) n_ws++;
        pos = whitespace_end(pos, n_ws, CPT(pos + n_ws) != OUT_OF_RANGE);
        ADD(pos);
    }
}

/* Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
 * |\s*[\r\n]+|\s+(?!\S)|\s+ (unicode_regex_split_custom_llama3); Qwen2's pattern is the same with
 * \p{N} taking one digit at a time (max_digits 1). */
/* The llama3 pattern; qwen2 takes digits one at a time (max_digits 1); qwen35 (Qwen3.5's
 * tokenizer.json) also counts marks as letters: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and
 *  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]* (letters = UFLAG_LETTER | UFLAG_MARK). */
static void split_llama3(const cpt_text *t, uint32_t a, uint32_t b, pieces *out, uint32_t max_digits, unsigned letters) {
    uint32_t prev_end = a;
    for (uint32_t pos = a; pos < b;) {
        uint32_t c = CPT(pos);
        unsigned f = FLAGS(pos);
        if (c == '\'' && pos + 1 < b) {
            uint32_t c1 = unicode_tolower(CPT(pos + 1));
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') { ADD(pos + 2); pos += 2; continue; }
            if (pos + 2 < b) {
                uint32_t c2 = unicode_tolower(CPT(pos + 2));
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
                    ADD(pos + 3);
                    pos += 3;
                    continue;
                }
            }
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(c == '\r' || c == '\n' || (f & UFLAG_NUMBER))) {
            if ((f & letters) || (FLAGS(pos + 1) & letters)) {
                pos++;
                while (FLAGS(pos) & letters) pos++;
                ADD(pos);
                continue;
            }
        }
        /* \p{N}{1,max_digits} */
        if (f & UFLAG_NUMBER) {
            uint32_t ini = pos;
            while (FLAGS(pos) & UFLAG_NUMBER) {
                if (++pos - ini >= max_digits) {
                    ADD(pos);
                    ini = pos;
                }
            }
            ADD(pos);
            continue;
        }
        /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
        unsigned f2 = c == ' ' ? FLAGS(pos + 1) : f;
        if (!(f2 & (UFLAG_WHITESPACE | letters | UFLAG_NUMBER)) && f) {
            pos += c == ' ';
            for (;;) {
                unsigned g = FLAGS(pos);
                if ((g & (UFLAG_WHITESPACE | letters | UFLAG_NUMBER)) || !g) break;
                pos++;
            }
            for (uint32_t c2 = CPT(pos); c2 == '\r' || c2 == '\n'; c2 = CPT(pos)) pos++;
            ADD(pos);
            continue;
        }
        uint32_t n_ws = 0, last_rn_end = 0;
        while (FLAGS(pos + n_ws) & UFLAG_WHITESPACE) {
            uint32_t c2 = CPT(pos + n_ws);
            if (c2 == '\r' || c2 == '\n') last_rn_end = pos + n_ws + 1;
            n_ws++;
        }
        if (last_rn_end > 0) { /* \s*[\r\n]+ */
            pos = last_rn_end;
            ADD(pos);
            continue;
        }
        pos = whitespace_end(pos, n_ws, CPT(pos + n_ws) != OUT_OF_RANGE);
        ADD(pos);
    }
#undef CPT
#undef FLAGS
#undef ADD
}

/* GPT-4o's o200k pattern as llama.cpp runs it (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GPT4O): its
 * tokenizer.json's \p{Lu}/\p{Ll} classes are written with lookaheads, an upper-case letter being
 * ((?=[\p{L}])([^a-z])) and a lower-case one ((?=[\p{L}])([^A-Z])), and the whole runs as one
 * ECMAScript std::regex over the collapsed text (every non-ASCII letter is the same code, so it
 * is both upper and lower case, and a mark is no letter):
 *   [^\r\n\p{L}\p{N}]?U*W+C? | [^\r\n\p{L}\p{N}]?U+W*C? | \p{N}{1,3} |  ?[^\s\p{L}\p{N}]+[\r\n/]*
 *   | \s*[\r\n]+ | \s+(?!\S) | \s+
 * U = letter but not a-z, W = letter but not A-Z, C = '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD].
 * The alternatives are tried in order and the first that matches wins (ECMAScript, not the
 * longest), each quantifier greedy with backtracking; \s is C's isspace below 128 and Unicode
 * whitespace above. Every code point starts a match, so the matches partition the piece. */
static bool o200k_space(const cpt_text *t, uint32_t i, uint32_t b) {
    if (i >= b) return false;
    uint32_t c = t->cpt[i];
    return c < 0x80 ? c == ' ' || (c >= '\t' && c <= '\r') : (t->flags[i] & UFLAG_WHITESPACE) != 0;
}
static bool o200k_letter(const cpt_text *t, uint32_t i, uint32_t b) {
    return i < b && !o200k_space(t, i, b) && (t->flags[i] & UFLAG_LETTER);
}
static bool o200k_number(const cpt_text *t, uint32_t i, uint32_t b) {
    return i < b && !o200k_space(t, i, b) && (t->flags[i] & UFLAG_NUMBER);
}
static bool o200k_upper(const cpt_text *t, uint32_t i, uint32_t b) {
    return o200k_letter(t, i, b) && !(t->cpt[i] >= 'a' && t->cpt[i] <= 'z');
}
static bool o200k_lower(const cpt_text *t, uint32_t i, uint32_t b) {
    return o200k_letter(t, i, b) && !(t->cpt[i] >= 'A' && t->cpt[i] <= 'Z');
}
/* The length of the contraction C at i (0: none). */
static uint32_t o200k_contraction(const cpt_text *t, uint32_t i, uint32_t b) {
    if (i + 1 >= b || t->cpt[i] != '\'') return 0;
    uint32_t c1 = t->cpt[i + 1] | 0x20, c2 = i + 2 < b ? t->cpt[i + 2] | 0x20 : 0;
    if (t->cpt[i + 1] >= 0x80) return 0;
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (i + 2 < b && t->cpt[i + 2] < 0x80 && ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')))
        return 3;
    return 0;
}
/* The end of the match that starts at pos (pos < b). */
static uint32_t o200k_match(const cpt_text *t, uint32_t pos, uint32_t b) {
    uint32_t c = t->cpt[pos];
    /* the optional [^\r\n\p{L}\p{N}] before a word */
    uint32_t w = pos;
    if (c != '\r' && c != '\n' && !o200k_letter(t, pos, b) && !o200k_number(t, pos, b)) w = pos + 1;
    /* U*W+C?: U* backs off from its longest run until a W follows */
    uint32_t u_end = w;
    while (o200k_upper(t, u_end, b)) u_end++;
    for (uint32_t k = u_end + 1; k-- > w;) {
        if (!o200k_lower(t, k, b)) continue;
        uint32_t e = k;
        while (o200k_lower(t, e, b)) e++;
        return e + o200k_contraction(t, e, b);
    }
    /* U+W*C? */
    if (u_end > w) {
        uint32_t e = u_end;
        while (o200k_lower(t, e, b)) e++;
        return e + o200k_contraction(t, e, b);
    }
    /* \p{N}{1,3} */
    if (o200k_number(t, pos, b)) {
        uint32_t e = pos + 1;
        while (e < pos + 3 && o200k_number(t, e, b)) e++;
        return e;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n/]* */
    uint32_t x = c == ' ' ? pos + 1 : pos;
    if (x < b && !o200k_space(t, x, b) && !o200k_letter(t, x, b) && !o200k_number(t, x, b)) {
        uint32_t e = x + 1;
        while (e < b && !o200k_space(t, e, b) && !o200k_letter(t, e, b) && !o200k_number(t, e, b)) e++;
        while (e < b && (t->cpt[e] == '\r' || t->cpt[e] == '\n' || t->cpt[e] == '/')) e++;
        return e;
    }
    /* the whitespace alternatives: \s*[\r\n]+ ends after the run's last \r or \n; \s+(?!\S) leaves
     * the last space to the word after it; \s+ */
    uint32_t e = pos, last_rn = 0;
    while (o200k_space(t, e, b)) {
        if (t->cpt[e] == '\r' || t->cpt[e] == '\n') last_rn = e + 1;
        e++;
    }
    if (last_rn) return last_rn;
    if (e - pos > 1 && e < b) return e - 1;
    return e > pos ? e : pos + 1;
}
static void split_gpt4o(const cpt_text *t, uint32_t a, uint32_t b, pieces *out) {
    for (uint32_t pos = a; pos < b;) {
        uint32_t end = o200k_match(t, pos, b);
        piece_add(out, end - pos);
        pos = end;
    }
}

/* Character classes of the pattern-list pre-tokenizers. */
enum char_class {
    CLASS_PUNCT_SYM,     /* [\p{P}\$\+<=>\^~\|] */
    CLASS_PUNCT_SYM_BT,  /* [\p{P}\$\+<=>\^~\|`] */
    CLASS_NUMBER,        /* \p{N} */
    CLASS_CRLF,          /* [\r\n] */
    CLASS_LETTER,        /* \p{L} */
    CLASS_PUNCT,         /* \p{P} */
    CLASS_CJK,           /* [一-龥ࠀ-一가-퟿] */
    CLASS_DS_LETTER,     /* deepseek-llm's explicit letter ranges */
    CLASS_DS_PUNCT,      /* [!-/:-~！-／：-～‘-‟　-。] */
    CLASS_BLOOM_WORD,    /* [^(\s|.,!?…。，、।۔،)] */
};

typedef struct { uint32_t lo, hi; } cpt_range;

static const cpt_range cjk_ranges[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

/* deepseek-llm's letter class, from its tokenizer.json as llama.cpp lists it */
static const cpt_range ds_letter_ranges[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

static const cpt_range ds_punct_ranges[] = {{0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F},
                                            {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};

static bool in_ranges(uint32_t c, const cpt_range *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (c >= r[i].lo && c <= r[i].hi) return true;
    return false;
}

#define N_RANGES(r) (sizeof r / sizeof r[0])

static bool class_has(enum char_class k, uint32_t c, unsigned f) {
    /* patterns with literal non-ASCII characters run on text whose non-ASCII whitespace was
     * replaced by \v, so such code points never fall in their ranges */
    bool ws_hidden = c >= 0x80 && (f & UFLAG_WHITESPACE);
    switch (k) {
    case CLASS_PUNCT_SYM:
        return (f & UFLAG_PUNCTUATION) || (c < 0x80 && strchr("$+<=>^~|", (int)c) && c);
    case CLASS_PUNCT_SYM_BT:
        return (f & UFLAG_PUNCTUATION) || (c < 0x80 && strchr("$+<=>^~|`", (int)c) && c);
    case CLASS_NUMBER: return f & UFLAG_NUMBER;
    case CLASS_CRLF: return c == '\r' || c == '\n';
    case CLASS_LETTER: return f & UFLAG_LETTER;
    case CLASS_PUNCT: return f & UFLAG_PUNCTUATION;
    case CLASS_CJK: return !ws_hidden && in_ranges(c, cjk_ranges, N_RANGES(cjk_ranges));
    case CLASS_DS_LETTER:
        if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
        return !ws_hidden && in_ranges(c, ds_letter_ranges, N_RANGES(ds_letter_ranges));
    case CLASS_DS_PUNCT: return !ws_hidden && in_ranges(c, ds_punct_ranges, N_RANGES(ds_punct_ranges));
    case CLASS_BLOOM_WORD:
        if (f & UFLAG_WHITESPACE) return false;
        if (c < 0x80) return !(c && strchr("(|.,!?)", (int)c));
        return c != 0x2026 && c != 0x3002 && c != 0xFF0C && c != 0x3001 && c != 0x0964 &&
               c != 0x06D4 && c != 0x060C;
    }
    return false;
}

/* The shapes of pattern the lists use. */
enum pattern_shape {
    SHAPE_RUN,            /* [class]+ */
    SHAPE_ONE,            /* [class] */
    SHAPE_SPACE_RUN,      /* \s?[class]+ */
    SHAPE_LITSPACE_RUN,   /*  ?[class]+ (a literal space) */
    SHAPE_THREE_DIGITS,   /* [0-9][0-9][0-9] */
    SHAPE_TRAILING_SPACE, /* \s+$ */
    SHAPE_GPT2, SHAPE_LLAMA3, SHAPE_QWEN2, SHAPE_QWEN35, SHAPE_GPT4O,
    SHAPE_NEWLINES,       /* [^\n]+|[\n]+ */
};

typedef struct { enum pattern_shape shape; enum char_class cls; } pattern;

static bool is_ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }

/* Leftmost match of a pattern in [pos, end): true with [*ms, *me). */
static bool find_match(const cpt_text *t, pattern p, uint32_t pos, uint32_t end, uint32_t *ms, uint32_t *me) {
    switch (p.shape) {
    case SHAPE_RUN:
    case SHAPE_ONE:
        for (uint32_t i = pos; i < end; i++) {
            if (!class_has(p.cls, t->cpt[i], t->flags[i])) continue;
            uint32_t j = i + 1;
            if (p.shape == SHAPE_RUN)
                while (j < end && class_has(p.cls, t->cpt[j], t->flags[j])) j++;
            *ms = i;
            *me = j;
            return true;
        }
        return false;
    case SHAPE_SPACE_RUN:
    case SHAPE_LITSPACE_RUN:
        for (uint32_t i = pos; i < end; i++) {
            uint32_t start = i;
            if (!class_has(p.cls, t->cpt[i], t->flags[i])) {
                bool space = p.shape == SHAPE_SPACE_RUN ? (t->flags[i] & UFLAG_WHITESPACE) != 0
                                                        : t->cpt[i] == ' ';
                if (!space || i + 1 >= end || !class_has(p.cls, t->cpt[i + 1], t->flags[i + 1]))
                    continue;
                i++;
            }
            uint32_t j = i + 1;
            while (j < end && class_has(p.cls, t->cpt[j], t->flags[j])) j++;
            *ms = start;
            *me = j;
            return true;
        }
        return false;
    case SHAPE_THREE_DIGITS:
        for (uint32_t i = pos; i + 3 <= end; i++) {
            if (is_ascii_digit(t->cpt[i]) && is_ascii_digit(t->cpt[i + 1]) && is_ascii_digit(t->cpt[i + 2])) {
                *ms = i;
                *me = i + 3;
                return true;
            }
        }
        return false;
    case SHAPE_TRAILING_SPACE: {
        uint32_t s = end;
        while (s > pos && (t->flags[s - 1] & UFLAG_WHITESPACE)) s--;
        if (s == end) return false;
        *ms = s;
        *me = end;
        return true;
    }
    default:
        return false;
    }
}

static void apply_pattern(const cpt_text *t, pattern p, uint32_t a, uint32_t b, pieces *out) {
    if (p.shape == SHAPE_GPT2) { split_gpt2(t, a, b, out); return; }
    if (p.shape == SHAPE_LLAMA3) { split_llama3(t, a, b, out, 3, UFLAG_LETTER); return; }
    if (p.shape == SHAPE_QWEN2) { split_llama3(t, a, b, out, 1, UFLAG_LETTER); return; }
    if (p.shape == SHAPE_QWEN35) { split_llama3(t, a, b, out, 1, UFLAG_LETTER | UFLAG_MARK); return; }
    if (p.shape == SHAPE_GPT4O) { split_gpt4o(t, a, b, out); return; }
    if (p.shape == SHAPE_NEWLINES) {
        for (uint32_t pos = a; pos < b;) {
            bool nl = t->cpt[pos] == '\n';
            uint32_t end = pos + 1;
            while (end < b && (t->cpt[end] == '\n') == nl) end++;
            piece_add(out, end - pos);
            pos = end;
        }
        return;
    }
    uint32_t pos = a, ms, me;
    while (pos < b && find_match(t, p, pos, b, &ms, &me)) {
        piece_add(out, ms - pos);
        piece_add(out, me - ms);
        pos = me;
    }
    piece_add(out, b - pos);
}

#define MAX_PATTERNS 6

/* The pattern list of each pre-tokenizer (llama-vocab.cpp, llm_tokenizer_bpe). */
static int patterns_of(enum pre_split s, pattern *p) {
    switch (s) {
    case SPLIT_DEFAULT:
        p[0] = (pattern){SHAPE_RUN, CLASS_PUNCT_SYM};
        p[1] = (pattern){SHAPE_GPT2, 0};
        p[2] = (pattern){SHAPE_RUN, CLASS_NUMBER};
        p[3] = (pattern){SHAPE_THREE_DIGITS, 0};
        return 4;
    case SPLIT_GPT2: p[0] = (pattern){SHAPE_GPT2, 0}; return 1;
    case SPLIT_LLAMA3: p[0] = (pattern){SHAPE_LLAMA3, 0}; return 1;
    case SPLIT_QWEN2: p[0] = (pattern){SHAPE_QWEN2, 0}; return 1;
    case SPLIT_QWEN35: p[0] = (pattern){SHAPE_QWEN35, 0}; return 1;
    case SPLIT_DEEPSEEK_LLM:
        p[0] = (pattern){SHAPE_ONE, CLASS_CRLF};
        p[1] = (pattern){SHAPE_SPACE_RUN, CLASS_DS_LETTER};
        p[2] = (pattern){SHAPE_SPACE_RUN, CLASS_DS_PUNCT};
        p[3] = (pattern){SHAPE_TRAILING_SPACE, 0};
        p[4] = (pattern){SHAPE_RUN, CLASS_CJK};
        p[5] = (pattern){SHAPE_RUN, CLASS_NUMBER};
        return 6;
    case SPLIT_DEEPSEEK_CODER:
        p[0] = (pattern){SHAPE_ONE, CLASS_CRLF};
        p[1] = (pattern){SHAPE_SPACE_RUN, CLASS_LETTER};
        p[2] = (pattern){SHAPE_SPACE_RUN, CLASS_PUNCT};
        p[3] = (pattern){SHAPE_RUN, CLASS_CJK};
        p[4] = (pattern){SHAPE_ONE, CLASS_NUMBER};
        return 5;
    case SPLIT_FALCON:
        p[0] = (pattern){SHAPE_RUN, CLASS_PUNCT_SYM_BT};
        p[1] = (pattern){SHAPE_GPT2, 0};
        p[2] = (pattern){SHAPE_THREE_DIGITS, 0};
        return 3;
    case SPLIT_STARCODER:
        p[0] = (pattern){SHAPE_ONE, CLASS_NUMBER};
        p[1] = (pattern){SHAPE_GPT2, 0};
        return 2;
    case SPLIT_BLOOM: p[0] = (pattern){SHAPE_LITSPACE_RUN, CLASS_BLOOM_WORD}; return 1;
    case SPLIT_GPT4O: p[0] = (pattern){SHAPE_GPT4O, 0}; return 1;
    case SPLIT_NEWLINES: p[0] = (pattern){SHAPE_NEWLINES, 0}; return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Byte-level BPE
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    merge_work mw;
    cpt_text t;
    uint32_t t_cap;
    pieces a, b;
    char *word;       /* the byte-mapped word */
    size_t word_cap;
} bpe_work;

static void bpe_try_bigram(const wick_vocab *v, merge_work *w, const char *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const symbol *l = &w->sym[left], *r = &w->sym[right];
    int32_t rank = merge_rank(v, s + l->start, l->n, s + r->start, r->n);
    if (rank < 0) return;
    heap_push(w, (bigram){(uint64_t)(uint32_t)rank << 32 | (uint32_t)left, right, l->n + r->n});
}

/* One word (llm_tokenizer_bpe_session::tokenize): w[0..n) is already byte-mapped. */
static int bpe_encode_word(const wick_vocab *v, merge_work *w, const char *s, size_t n, id_out *o) {
    int32_t whole = v->ignore_merges ? text_to_token(v, s, n) : -1;
    /* Gemma 4: a run of newlines that is a token is that token, whatever the merges say */
    if (v->pre == SPLIT_NEWLINES && s[0] == '\n') whole = text_to_token(v, s, n);
    if (whole >= 0) { emit(o, whole); return 0; }
    int32_t count = split_symbols(w, s, n);
    if (count < 0) return -1;
    if (merge_all(v, w, s, count, bpe_try_bigram)) return -1;
    for (int32_t i = 0; i < count; i++) {
        const symbol *sym = &w->sym[i];
        if (sym->n == 0) continue;
        int32_t id = text_to_token(v, s + sym->start, sym->n);
        if (id >= 0) { emit(o, id); continue; }
        /* not a token: each byte of the mapped text on its own, where that is a token (a
         * raw-bytes vocabulary's <0xNN>) */
        for (uint32_t k = 0; k < sym->n; k++) {
            int32_t b = v->raw_bytes ? v->byte_token[(uint8_t)s[sym->start + k]] : text_to_token(v, s + sym->start + k, 1);
            if (b >= 0) emit(o, b);
        }
    }
    return 0;
}

static void bpe_work_free(bpe_work *bw) {
    free(bw->mw.sym);
    free(bw->mw.heap);
    free(bw->t.cpt);
    free(bw->t.off);
    free(bw->t.flags);
    free(bw->a.len);
    free(bw->b.len);
    free(bw->word);
}

/* Splits text[0..len) (len > 0) into words: returns the word lengths in code points, with
 * bw->t holding the code points, or NULL when out of memory. */
static const pieces *pre_split_words(enum pre_split pre, bpe_work *bw, const char *text, size_t len) {
    /* decode: every byte belongs to exactly one code point (invalid bytes become U+FFFD for
     * classification, but their bytes go through unchanged, so nothing is lost) */
    if (len + 1 > bw->t_cap) {
        size_t cap = len + 1;
        uint32_t *cpt = realloc(bw->t.cpt, cap * sizeof *cpt);
        if (cpt) bw->t.cpt = cpt;
        uint32_t *off = realloc(bw->t.off, cap * sizeof *off);
        if (off) bw->t.off = off;
        uint16_t *flags = realloc(bw->t.flags, cap * sizeof *flags);
        if (flags) bw->t.flags = flags;
        uint32_t *pa = realloc(bw->a.len, cap * sizeof *pa);
        if (pa) bw->a.len = pa;
        uint32_t *pb = realloc(bw->b.len, cap * sizeof *pb);
        if (pb) bw->b.len = pb;
        if (!cpt || !off || !flags || !pa || !pb) return NULL;
        bw->t_cap = (uint32_t)cap;
    }
    cpt_text *t = &bw->t;
    uint32_t n = 0;
    for (size_t off = 0; off < len;) {
        uint32_t c;
        int k = unicode_decode_lenient((const uint8_t *)text + off, len - off, &c);
        t->cpt[n] = c;
        t->off[n] = (uint32_t)off;
        t->flags[n] = (uint16_t)unicode_flags(c);
        n++;
        off += (size_t)k;
    }
    t->off[n] = (uint32_t)len;
    t->n = n;

    pattern pats[MAX_PATTERNS];
    int n_pats = patterns_of(pre, pats);
    pieces *cur = &bw->a, *next = &bw->b;
    cur->n = 0;
    piece_add(cur, n);
    for (int k = 0; k < n_pats; k++) {
        next->n = 0;
        uint32_t start = 0;
        for (uint32_t i = 0; i < cur->n; i++) {
            apply_pattern(t, pats[k], start, start + cur->len[i], next);
            start += cur->len[i];
        }
        pieces *tmp = cur;
        cur = next;
        next = tmp;
    }
    return cur;
}

static int bpe_encode(const wick_vocab *v, bpe_work *bw, const char *text, size_t len, id_out *o) {
    if (len == 0) return 0;
    const pieces *cur = pre_split_words(v->pre, bw, text, len);
    if (!cur) return -1;
    const cpt_text *t = &bw->t;
    uint32_t start = 0;
    for (uint32_t i = 0; i < cur->n; i++) {
        size_t b0 = t->off[start], b1 = t->off[start + cur->len[i]];
        start += cur->len[i];
        size_t need = 2 * (b1 - b0);
        if (need > bw->word_cap) {
            char *wd = realloc(bw->word, need);
            if (!wd) return -1;
            bw->word = wd;
            bw->word_cap = need;
        }
        size_t m = 0;
        if (v->raw_bytes) {
            memcpy(bw->word, text + b0, b1 - b0);
            m = b1 - b0;
        }
        for (size_t k = b0; k < b1 && !v->raw_bytes; k++) {
            uint8_t byte = (uint8_t)text[k];
            memcpy(bw->word + m, v->byte_enc[byte], v->byte_enc_len[byte]);
            m += v->byte_enc_len[byte];
        }
        if (bpe_encode_word(v, &bw->mw, bw->word, m, o)) return -1;
    }
    return 0;
}

int tokenizer_pre_split(const char *pre, const char *text, size_t len, size_t *ends, int max_ends) {
    enum pre_split split = SPLIT_DEFAULT;
    if (pre && *pre) {
        size_t k, nk = sizeof pre_names / sizeof pre_names[0];
        for (k = 0; k < nk && strcmp(pre, pre_names[k].name) != 0; k++) continue;
        if (k == nk) return -1;
        split = pre_names[k].split;
    }
    if ((!text && len) || len > MAX_TEXT_BYTES) return -1;
    if (len == 0) return 0;
    bpe_work bw = {0};
    const pieces *p = pre_split_words(split, &bw, text, len);
    int n = -1;
    if (p && p->n <= INT32_MAX) {
        uint32_t start = 0;
        for (uint32_t i = 0; i < p->n; i++) {
            start += p->len[i];
            if ((int)i < max_ends && ends) ends[i] = bw.t.off[start];
        }
        n = (int)p->n;
    }
    bpe_work_free(&bw);
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Special tokens inside text (llama.cpp's tokenizer_st_partition): for each special token,
 * longest text first, every occurrence inside text not yet claimed becomes that token; with
 * parse_special off only user-defined tokens take part. A token marked LSTRIP / RSTRIP also
 * swallows the whitespace next to it.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t off, len;
    int32_t token;  /* -1: raw text */
} fragment;

typedef struct { uint32_t rank, pos; } occurrence;

static int cmp_occurrence(const void *pa, const void *pb) {
    const occurrence *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static bool c_isspace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static bool special_allowed(const wick_vocab *v, int32_t id, bool parse_special) {
    return parse_special || !(v->tok[id].attr & (ATTR_CONTROL | ATTR_UNKNOWN));
}

/* Splits text into fragments; returns the count (*out malloc'ed) or -1. */
static int64_t partition(const wick_vocab *v, const char *text, size_t len, bool parse_special,
                         fragment **out) {
    *out = NULL;
    bool any = false;
    for (int32_t i = 0; i < v->n_special && !any; i++) any = special_allowed(v, v->special[i], parse_special);
    if (!any || len == 0) {
        fragment *f = malloc(sizeof *f);
        if (!f) return -1;
        f->off = 0;
        f->len = (uint32_t)len;
        f->token = -1;
        *out = f;
        return len ? 1 : 0;
    }

    /* every occurrence of every candidate token */
    occurrence *occ = NULL;
    size_t n_occ = 0, cap_occ = 0;
    const uint8_t *s = (const uint8_t *)text;
    for (size_t p = 0; p < len; p++) {
        for (int pass = 0; pass < 2; pass++) {
            const int32_t *list;
            int32_t lo, hi;
            if (pass == 0) {
                lo = v->special_byte_start[s[p]];
                hi = v->special_byte_start[s[p] + 1];
                list = v->special_by_byte;
            } else {
                if (p + 1 >= len) break;
                uint32_t bk = pair_bucket(s[p], s[p + 1]);
                lo = v->special_pair_start[bk];
                hi = v->special_pair_start[bk + 1];
                list = v->special_by_pair;
            }
            for (int32_t k = lo; k < hi; k++) {
                int32_t rank = list[k], id = v->special[rank];
                const token_info *t = &v->tok[id];
                if (t->len > len - p || memcmp(text + p, v->text + t->off, t->len) != 0) continue;
                if (!special_allowed(v, id, parse_special)) continue;
                if (n_occ == cap_occ) {
                    size_t cap = cap_occ ? cap_occ * 2 : 64;
                    occurrence *o = realloc(occ, cap * sizeof *o);
                    if (!o) { free(occ); return -1; }
                    occ = o;
                    cap_occ = cap;
                }
                occ[n_occ++] = (occurrence){(uint32_t)rank, (uint32_t)p};
            }
        }
    }
    if (n_occ == 0) {
        free(occ);
        fragment *f = malloc(sizeof *f);
        if (!f) return -1;
        *f = (fragment){0, (uint32_t)len, -1};
        *out = f;
        return 1;
    }
    qsort(occ, n_occ, sizeof *occ, cmp_occurrence);

    /* claim occurrences in that order: 0 = raw text, 1 = a token's text, 2 = stripped space */
    uint8_t *claim = calloc(len, 1);
    int32_t *token_at = malloc(n_occ * sizeof *token_at);
    uint32_t *pos_at = malloc(n_occ * sizeof *pos_at);
    if (!claim || !token_at || !pos_at) {
        free(occ); free(claim); free(token_at); free(pos_at);
        return -1;
    }
    size_t n_acc = 0;
    for (size_t i = 0; i < n_occ; i++) {
        int32_t id = v->special[occ[i].rank];
        uint32_t p = occ[i].pos, n = v->tok[id].len;
        bool free_span = true;
        for (uint32_t k = 0; k < n && free_span; k++) free_span = claim[p + k] == 0;
        if (!free_span) continue;
        memset(claim + p, 1, n);
        if (v->tok[id].attr & ATTR_LSTRIP)
            for (size_t k = p; k > 0 && claim[k - 1] == 0 && c_isspace(text[k - 1]); k--) claim[k - 1] = 2;
        if (v->tok[id].attr & ATTR_RSTRIP)
            for (size_t k = p + n; k < len && claim[k] == 0 && c_isspace(text[k]); k++) claim[k] = 2;
        token_at[n_acc] = id;
        pos_at[n_acc] = p;
        n_acc++;
    }
    free(occ);

    /* fragments in text order: accepted tokens sorted by position, raw runs between them */
    occurrence *acc = malloc(n_acc * sizeof *acc);
    fragment *f = malloc((2 * n_acc + 1) * sizeof *f);
    if (!acc || !f) {
        free(claim); free(token_at); free(pos_at); free(acc); free(f);
        return -1;
    }
    for (size_t i = 0; i < n_acc; i++) acc[i] = (occurrence){pos_at[i], (uint32_t)i};
    qsort(acc, n_acc, sizeof *acc, cmp_occurrence); /* by position (rank field holds it) */
    size_t nf = 0, p = 0;
    for (size_t i = 0; i <= n_acc; i++) {
        size_t end = i < n_acc ? acc[i].rank : len;
        while (p < end) { /* raw runs in [p, end) */
            while (p < end && claim[p] != 0) p++;
            size_t q = p;
            while (q < end && claim[q] == 0) q++;
            if (q > p) f[nf++] = (fragment){(uint32_t)p, (uint32_t)(q - p), -1};
            p = q;
        }
        if (i < n_acc) {
            int32_t id = token_at[acc[i].pos];
            f[nf++] = (fragment){(uint32_t)end, v->tok[id].len, id};
            p = end + v->tok[id].len;
        }
    }
    free(claim); free(token_at); free(pos_at); free(acc);
    *out = f;
    return (int64_t)nf;
}

/* ---------------------------------------------------------------------------------------------
 * Tokenize
 * ------------------------------------------------------------------------------------------- */


/* WordPiece (llama.cpp's llm_tokenizer_wpm_session): the text is normalized (NFD and accent
 * marks dropped where the vocabulary strips accents, lowercased where it lowercases; NUL, U+FFFD
 * and control characters dropped) and split into words at whitespace, with each punctuation
 * character, ASCII symbol and CJK ideograph a word of its own; each word, after a "▁", is
 * covered from the left by the longest pieces of the vocabulary, and becomes [UNK] whole when
 * some position has no piece. */
typedef struct {
    char *word;      /* the current word with its leading "▁" */
    size_t len, cap;
} wpm_work;

static bool wpm_cjk(uint32_t c) { /* BERT's _is_chinese_char ranges, as llama.cpp lists them */
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int wpm_put(wpm_work *w, const char *s, size_t n) {
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        while (cap < w->len + n) cap *= 2;
        char *p = realloc(w->word, cap);
        if (!p) return -1;
        w->word = p;
        w->cap = cap;
    }
    memcpy(w->word + w->len, s, n);
    w->len += n;
    return 0;
}

/* the word in w (past its "▁") as pieces, longest first from each position; [UNK] when stuck */
static void wpm_word(const wick_vocab *v, wpm_work *w, id_out *o) {
    if (w->len <= 3) return; /* "▁" alone: no word */
    int64_t start = o->n;
    size_t n = w->len;
    for (size_t i = 0; i < n;) {
        size_t j = i + (size_t)v->max_piece_len + 1 < n ? i + (size_t)v->max_piece_len + 1 : n;
        int32_t id = -1;
        for (; j > i && (id = text_to_token(v, w->word + i, j - i)) < 0; j--) {}
        if (id < 0) { o->n = start; break; }
        emit(o, id);
        i = j;
    }
    if (o->n == start && v->unk >= 0) emit(o, v->unk);
}

static int wpm_encode(const wick_vocab *v, wpm_work *w, const char *text, size_t len, id_out *o) {
    static const char phantom[] = "\xE2\x96\x81";
    w->len = 0;
    if (wpm_put(w, phantom, 3)) return -1;
    for (size_t k = 0; k < len;) {
        uint32_t c;
        k += (size_t)unicode_decode_lenient((const uint8_t *)text + k, len - k, &c);
        if (v->strip_accents) c = unicode_nfd_first(&v->nfd, c);
        unsigned f = unicode_flags(c);
        if (f & UFLAG_WHITESPACE) { wpm_word(v, w, o); w->len = 3; continue; }
        if (c == 0 || c == UNICODE_REPLACEMENT || (f & UFLAG_CONTROL)) continue;
        if (v->strip_accents && (f & UFLAG_MARK)) continue;
        char u[4];
        int un = unicode_encode(v->lowercase ? unicode_tolower(c) : c, u);
        bool alone = (f & UFLAG_PUNCTUATION) || (c < 0x7F && (f & UFLAG_SYMBOL)) || wpm_cjk(c);
        if (alone) { wpm_word(v, w, o); w->len = 3; }
        if (wpm_put(w, u, (size_t)un)) return -1;
        if (alone) { wpm_word(v, w, o); w->len = 3; }
    }
    wpm_word(v, w, o);
    return 0;
}

/* llama_escape_whitespace: text[0..n) with every ' ' written as "▁" (U+2581), after one more "▁"
 * when prefix is set, into *buf (grown as needed, *cap its size); the escaped length, or -1 when
 * out of memory. */
static int64_t escape_spaces(const char *text, size_t n, bool prefix, char **buf, size_t *cap) {
    size_t need = 3 * n + 3;
    if (need > *cap) {
        char *e = realloc(*buf, need);
        if (!e) return -1;
        *buf = e;
        *cap = need;
    }
    char *esc = *buf;
    size_t m = 0;
    if (prefix) { memcpy(esc, "\xE2\x96\x81", 3); m = 3; }
    for (size_t k = 0; k < n; k++) {
        if (text[k] == ' ') { memcpy(esc + m, "\xE2\x96\x81", 3); m += 3; }
        else esc[m++] = text[k];
    }
    return (int64_t)m;
}

int vocab_tokenize(const wick_vocab *v, const char *text, size_t len, bool add_special,
                   bool parse_special, int32_t *out, int max_out) {
    if (!v || (!text && len) || len > MAX_TEXT_BYTES) return -1;
    id_out o = {out, out ? (max_out > 0 ? max_out : 0) : 0, 0};
    fragment *frags = NULL;
    int64_t nf = partition(v, text, len, parse_special, &frags);
    if (nf < 0) return -1;
    int rc = 0;
    /* WordPiece always opens with [CLS] and closes with [SEP] (llama.cpp's WPM case ignores add_bos) */
    if (add_special && (v->add_bos || v->type == VOCAB_WPM) && v->bos >= 0) emit(&o, v->bos);

    if (v->type == VOCAB_WPM) {
        wpm_work w = {0};
        for (int64_t i = 0; i < nf && rc == 0; i++) {
            const fragment *f = &frags[i];
            if (f->token >= 0) emit(&o, f->token);
            else rc = wpm_encode(v, &w, text + f->off, f->len, &o);
        }
        free(w.word);
    } else if (v->type == VOCAB_SPM) {
        merge_work w = {0};
        char *esc = NULL;
        size_t esc_cap = 0;
        bool prev_special = true; /* a space prefix goes before the first text */
        for (int64_t i = 0; i < nf && rc == 0; i++) {
            const fragment *f = &frags[i];
            if (f->token >= 0) { emit(&o, f->token); prev_special = true; continue; }
            int64_t m = escape_spaces(text + f->off, f->len, v->add_space_prefix && prev_special, &esc, &esc_cap);
            if (m < 0) { rc = -1; break; }
            rc = spm_encode(v, &w, esc, (size_t)m, &o);
            prev_special = false;
        }
        free(esc);
        free(w.sym);
        free(w.heap);
    } else {
        bpe_work bw = {0};
        char *esc = NULL;
        size_t esc_cap = 0;
        for (int64_t i = 0; i < nf && rc == 0; i++) {
            const fragment *f = &frags[i];
            if (f->token >= 0) { emit(&o, f->token); continue; }
            if (!v->raw_bytes) { rc = bpe_encode(v, &bw, text + f->off, f->len, &o); continue; }
            /* Gemma 4 escapes the spaces before the split */
            int64_t m = escape_spaces(text + f->off, f->len, false, &esc, &esc_cap);
            if (m < 0) { rc = -1; break; }
            rc = bpe_encode(v, &bw, esc, (size_t)m, &o);
        }
        free(esc);
        bpe_work_free(&bw);
    }
    if (add_special && v->add_eos && v->eos >= 0) emit(&o, v->eos);
    if (add_special && v->type == VOCAB_WPM && v->sep >= 0) emit(&o, v->sep);
    free(frags);
    if (rc || o.n > INT32_MAX) return -1;
    return (int)o.n;
}

/* ---------------------------------------------------------------------------------------------
 * Detokenize
 * ------------------------------------------------------------------------------------------- */

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* llama.cpp's token_to_piece: writes the piece (at most cap bytes) and returns its full length,
 * skipping up to lstrip leading spaces; special = false renders control/unknown tokens as
 * nothing. */
static int piece_of(const wick_vocab *v, int32_t id, char *buf, int cap, int lstrip, bool special) {
    uint32_t attr = v->tok[id].attr;
    if (!special && (attr & (ATTR_UNKNOWN | ATTR_CONTROL))) return 0;
    const char *s = tok_text(v, id);
    uint32_t n = v->tok[id].len;
    int len = 0, stripped = 0;
    /* append one byte, unless it is one of the first lstrip leading spaces */
#define PUT(c) do { char c_ = (c); \
        if (len == 0 && stripped < lstrip && c_ == ' ') { stripped++; break; } \
        if (len < cap) buf[len] = c_; \
        len++; } while (0)
    if (attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) {
        for (uint32_t k = 0; k < n; k++) PUT(s[k]);
    } else if ((v->type == VOCAB_SPM || v->type == VOCAB_WPM || v->raw_bytes) && (attr & ATTR_NORMAL)) {
        for (uint32_t k = 0; k < n; k++) { /* "▁" → " " */
            if (k + 2 < n && memcmp(s + k, "\xE2\x96\x81", 3) == 0) { PUT(' '); k += 2; }
            else PUT(s[k]);
        }
    } else if ((v->type == VOCAB_SPM || v->type == VOCAB_WPM || v->raw_bytes) && (attr & ATTR_BYTE)) {
        int hi = n == 6 ? hex_value(s[3]) : -1, lo = n == 6 ? hex_value(s[4]) : -1;
        if (hi >= 0 && lo >= 0) PUT((char)(hi << 4 | lo));
        else for (uint32_t k = 0; k < n; k++) PUT(s[k]);
    } else if (v->type == VOCAB_BPE && (attr & ATTR_NORMAL)) {
        /* undo bytes_to_unicode; a code point outside the map is kept as it is */
        for (uint32_t k = 0; k < n;) {
            uint32_t c;
            int step = unicode_decode_lenient((const uint8_t *)s + k, n - k, &c);
            if (c < 324 && v->byte_dec[c] >= 0) PUT((char)v->byte_dec[c]);
            else for (int q = 0; q < step; q++) PUT(s[k + (uint32_t)q]);
            k += (uint32_t)step;
        }
    }
#undef PUT
    return len;
}

int vocab_token_to_piece(const wick_vocab *v, int32_t id, char *buf, int buf_len) {
    if (!v || id < 0 || id >= v->n_tokens) return -1;
    return piece_of(v, id, buf, buf ? (buf_len > 0 ? buf_len : 0) : 0, 0, true);
}

/* clean_up_tokenization_spaces, as llama.cpp's detokenize applies it to BPE vocabularies */
static size_t clean_spaces(char *text, size_t total) {
    /* " ?", " !", " .", " ," lose the space */
    size_t t1 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t1; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
        text[total++] = x;
    }
    /* " ' " loses both spaces */
    size_t t2 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t2; i++) {
        char x = text[i];
        if (x == '\'' && i + 1 < t2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
            total--;
            text[++i] = '\0';
        }
        text[total++] = x;
    }
    /* " 's", " 'm", " 're", " 've" lose the space */
    size_t t3 = total;
    total = total ? 1 : 0;
    for (size_t i = 1; i < t3; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
            char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm') total--;
            else if ((x1 == 'r' || x1 == 'v') && i + 2 < t3 && text[i + 2] == 'e') total--;
        }
        text[total++] = x;
    }
    return total;
}

int vocab_detokenize(const wick_vocab *v, const int32_t *ids, int n_ids, char *buf, int buf_len) {
    if (!v || n_ids < 0 || (n_ids && !ids)) return -1;
    size_t total = 0;
    for (int i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= v->n_tokens) return -1;
        total += (size_t)piece_of(v, ids[i], NULL, 0, 0, true);
    }
    if (total > INT32_MAX) return -1;
    char *tmp = malloc(total + 1);
    if (!tmp) return -1;
    size_t pos = 0;
    bool remove_space = v->add_space_prefix;
    for (int i = 0; i < n_ids; i++) {
        pos += (size_t)piece_of(v, ids[i], tmp + pos, (int)(total - pos), remove_space, true);
        remove_space = false;
    }
    if (v->clean_spaces) pos = clean_spaces(tmp, pos);
    if (buf && buf_len > 0) {
        size_t copy = pos < (size_t)buf_len ? pos : (size_t)buf_len;
        memcpy(buf, tmp, copy);
        if (pos < (size_t)buf_len) buf[pos] = '\0';
    }
    free(tmp);
    return (int)pos;
}

/* ---------------------------------------------------------------------------------------------
 * Streaming detokenizer
 * ------------------------------------------------------------------------------------------- */

void detok_init(detok_stream *s, const wick_vocab *v) {
    memset(s, 0, sizeof *s);
    s->v = v;
    s->at_start = true;
}

void detok_init_continuing(detok_stream *s, const wick_vocab *v) {
    detok_init(s, v);
    s->at_start = false;
}

/* Length of the maximal invalid subpart at p (Unicode's "U+FFFD substitution of maximal
 * subparts"): the longest prefix that could begin a character, at least one byte. */
static int invalid_subpart(const uint8_t *p, size_t n) {
    int k = 1;
    for (int j = 2; j <= 3 && (size_t)j <= n; j++)
        if (unicode_valid_char_len(p, (size_t)j) == -1) k = j;
    return k;
}

/* Emits the complete characters of in[0..n) into out and keeps an incomplete tail. */
static int emit_valid(detok_stream *s, const uint8_t *in, size_t n, char *out, int out_len, bool final) {
    int w = 0;
    size_t i = 0;
    while (i < n) {
        int r = unicode_valid_char_len(in + i, n - i);
        if (r == -1 && !final) break; /* wait for the rest of this character */
        if (r > 0) {
            if (w + r > out_len) return -1;
            memcpy(out + w, in + i, (size_t)r);
            w += r;
            i += (size_t)r;
        } else {
            if (w + 3 > out_len) return -1;
            memcpy(out + w, "\xEF\xBF\xBD", 3);
            w += 3;
            i += r == -1 ? n - i : (size_t)invalid_subpart(in + i, n - i);
        }
    }
    s->n_pending = (int)(n - i);
    memcpy(s->pending, in + i, n - i);
    return w;
}

int detok_push(detok_stream *s, int32_t id, char *out, int out_len) {
    const wick_vocab *v = s->v;
    if (!v || id < 0 || id >= v->n_tokens || !out || out_len < 0) return -1;
    int cap = v->max_piece_len + (int)sizeof s->pending;
    uint8_t stack[512];
    uint8_t *buf = cap <= (int)sizeof stack ? stack : malloc((size_t)cap);
    if (!buf) return -1;
    detok_stream saved = *s;
    memcpy(buf, s->pending, (size_t)s->n_pending);
    /* SentencePiece: the text starts without the space the tokenizer put in front of it */
    int lstrip = s->at_start && v->add_space_prefix ? 1 : 0;
    int n = piece_of(v, id, (char *)buf + s->n_pending, cap - s->n_pending, lstrip, false);
    if (piece_of(v, id, NULL, 0, 0, false) > 0) s->at_start = false;
    int w = emit_valid(s, buf, (size_t)(s->n_pending + n), out, out_len, false);
    if (w < 0) *s = saved; /* out too small: nothing consumed */
    else s->n_fed++;
    if (buf != stack) free(buf);
    return w;
}

int detok_flush(detok_stream *s, char *out, int out_len) {
    if (!out || out_len < 0) return -1;
    uint8_t tmp[sizeof s->pending];
    size_t n = (size_t)s->n_pending;
    memcpy(tmp, s->pending, n);
    detok_stream saved = *s;
    int w = emit_valid(s, tmp, n, out, out_len, true);
    if (w < 0) *s = saved;
    return w;
}
