/* synth.c — `wick synth`: a deterministic random-weight llama model as a GGUF v3 file that
 * llama.cpp loads. Weights are uniform in ±0.02·√3 (standard deviation 0.02, the usual init),
 * norms are 1, from a SplitMix64 stream per tensor, so the same shape, type and seed always give
 * the same bytes. Type mixes follow llama.cpp's llama_model_quantize rules in outline: the output
 * head is Q6_K for the 4-bit types; Q4_K_M also gives attn_v and ffn_down Q6_K on the layers
 * llama.cpp's use_more_bits picks (the first and last eighth, and every third between). */
#include "errmsg.h"
#include "synth.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"

typedef struct {
    const char *name;
    int dim, n_layers, n_heads, n_kv_heads, hidden;
} synth_shape;

static const synth_shape shapes[] = {
    {"mini", 256, 2, 8, 4, 768},
    {"mini-mha", 256, 2, 8, 8, 768},   /* one query head per KV head, as 134m */
    {"134m", 768, 12, 12, 12, 2048},
    {"1b", 2048, 22, 32, 4, 5632},
};

/* llama.cpp's LLAMA_FTYPE values for general.file_type (llama.h) */
enum { FTYPE_F16 = 1, FTYPE_Q4_0 = 2, FTYPE_Q8_0 = 7, FTYPE_Q4_K_M = 15 };

typedef struct {
    char name[64];
    uint32_t type;
    int64_t ne0, ne1; /* ne1 = 1 for vectors */
    uint64_t offset, bytes;
    float fill;       /* 0: random weights; else every element is this (norms) */
} synth_tensor;

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, 8); }
static void put_str(FILE *f, const char *s) { put_u64(f, strlen(s)); put(f, s, strlen(s)); }
static void kv_u32(FILE *f, const char *k, uint32_t v) { put_str(f, k); put_u32(f, GGUF_U32); put_u32(f, v); }
static void kv_f32(FILE *f, const char *k, float v) { put_str(f, k); put_u32(f, GGUF_F32); put(f, &v, 4); }
static void kv_str(FILE *f, const char *k, const char *v) { put_str(f, k); put_u32(f, GGUF_STRING); put_str(f, v); }

/* The bytes one metadata entry occupies in its file, key included (the reader validated them). */
static size_t kv_extent(const gguf_kv *kv, const uint8_t **start) {
    static const uint32_t scalar[GGUF_VALUE_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    *start = (const uint8_t *)kv->key.ptr - 8;
    const uint8_t *value = (const uint8_t *)kv->key.ptr + kv->key.len + 4, *end;
    if (kv->type == GGUF_STRING) end = (const uint8_t *)kv->val.str.ptr + kv->val.str.len;
    else if (kv->type == GGUF_ARRAY) end = kv->arr_data + kv->arr_bytes;
    else end = value + scalar[kv->type];
    return (size_t)(end - *start);
}

int synth_write(const char *shape_name, const char *type, const char *vocab_path, const char *out_path,
                unsigned long long seed, char *err, size_t err_len) {
    const synth_shape *sh = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shapes[i].name, shape_name)) sh = &shapes[i];
    if (!sh) return errorf(err, err_len, "unknown shape '%s' (mini, mini-mha, 134m, 1b)", shape_name);
    uint32_t base, out_type, ftype;
    bool k_mix = false;
    if (!strcmp(type, "f16")) base = out_type = WICK_TYPE_F16, ftype = FTYPE_F16;
    else if (!strcmp(type, "q8_0")) base = out_type = WICK_TYPE_Q8_0, ftype = FTYPE_Q8_0;
    else if (!strcmp(type, "q4_0")) base = WICK_TYPE_Q4_0, out_type = WICK_TYPE_Q6_K, ftype = FTYPE_Q4_0;
    else if (!strcmp(type, "q4_k_m")) base = WICK_TYPE_Q4_K, out_type = WICK_TYPE_Q6_K, ftype = FTYPE_Q4_K_M, k_mix = true;
    else return errorf(err, err_len, "unknown type '%s' (f16, q8_0, q4_0, q4_k_m)", type);

    /* the vocabulary file: its tokenizer.* metadata is copied byte for byte */
    FILE *vf = fopen(vocab_path, "rb");
    if (!vf) return errorf(err, err_len, "cannot open vocabulary %s", vocab_path);
    fseek(vf, 0, SEEK_END);
    long vsize = ftell(vf);
    rewind(vf);
    uint8_t *vbuf = malloc(vsize > 0 ? (size_t)vsize : 1);
    if (!vbuf || fread(vbuf, 1, (size_t)vsize, vf) != (size_t)vsize) {
        fclose(vf);
        free(vbuf);
        return errorf(err, err_len, "cannot read vocabulary %s", vocab_path);
    }
    fclose(vf);
    gguf_file vg;
    if (gguf_open(&vg, vbuf, (size_t)vsize, err, err_len)) { free(vbuf); return -1; }
    const gguf_kv *tokens = gguf_get_arr(&vg, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!tokens) { gguf_close(&vg); free(vbuf); return errorf(err, err_len, "%s has no tokenizer.ggml.tokens", vocab_path); }
    int64_t n_vocab = (int64_t)tokens->arr_len;

    /* the tensor list, in llama.cpp's order */
    int n_t = 3 + 9 * sh->n_layers;
    synth_tensor *ts = calloc((size_t)n_t, sizeof *ts);
    if (!ts) { gguf_close(&vg); free(vbuf); return errorf(err, err_len, "out of memory"); }
    int kv_dim = sh->dim / sh->n_heads * sh->n_kv_heads, k = 0;
    uint32_t emb_type = base == WICK_TYPE_Q4_0 ? WICK_TYPE_Q4_0 : base;
#define ADD(nm, t, a, b, fl) (snprintf(ts[k].name, sizeof ts[k].name, "%s", nm), ts[k].type = (t), ts[k].ne0 = (a), ts[k].ne1 = (b), ts[k].fill = (fl), k++)
    ADD("token_embd.weight", emb_type, sh->dim, n_vocab, 0);
    for (int l = 0; l < sh->n_layers; l++) {
        char n[64];
        uint32_t more = k_mix && use_more_bits(l, sh->n_layers) ? WICK_TYPE_Q6_K : base;
        snprintf(n, sizeof n, "blk.%d.attn_norm.weight", l); ADD(n, WICK_TYPE_F32, sh->dim, 1, 1.0f);
        snprintf(n, sizeof n, "blk.%d.attn_q.weight", l); ADD(n, base, sh->dim, sh->dim, 0);
        snprintf(n, sizeof n, "blk.%d.attn_k.weight", l); ADD(n, base, sh->dim, kv_dim, 0);
        snprintf(n, sizeof n, "blk.%d.attn_v.weight", l); ADD(n, more, sh->dim, kv_dim, 0);
        snprintf(n, sizeof n, "blk.%d.attn_output.weight", l); ADD(n, base, sh->dim, sh->dim, 0);
        snprintf(n, sizeof n, "blk.%d.ffn_norm.weight", l); ADD(n, WICK_TYPE_F32, sh->dim, 1, 1.0f);
        snprintf(n, sizeof n, "blk.%d.ffn_gate.weight", l); ADD(n, base, sh->dim, sh->hidden, 0);
        snprintf(n, sizeof n, "blk.%d.ffn_down.weight", l); ADD(n, more, sh->hidden, sh->dim, 0);
        snprintf(n, sizeof n, "blk.%d.ffn_up.weight", l); ADD(n, base, sh->dim, sh->hidden, 0);
    }
    ADD("output_norm.weight", WICK_TYPE_F32, sh->dim, 1, 1.0f);
    ADD("output.weight", out_type, sh->dim, n_vocab, 0);
#undef ADD
    uint64_t off = 0;
    for (int i = 0; i < n_t; i++) {
        ts[i].offset = off;
        ts[i].bytes = quant_row_size(ts[i].type, ts[i].ne0) * (uint64_t)ts[i].ne1;
        off = (off + ts[i].bytes + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
    }

    FILE *f = fopen(out_path, "wb");
    if (!f) { free(ts); gguf_close(&vg); free(vbuf); return errorf(err, err_len, "cannot create %s", out_path); }
    uint64_t n_tok_kv = 0;
    for (uint64_t i = 0; i < vg.n_kv; i++)
        if (vg.kv[i].key.len > 10 && !memcmp(vg.kv[i].key.ptr, "tokenizer.", 10)) n_tok_kv++;
    put(f, "GGUF", 4);
    put_u32(f, 3);
    put_u64(f, (uint64_t)n_t);
    put_u64(f, 12 + n_tok_kv);
    char name[64];
    snprintf(name, sizeof name, "wick synth %s %s", sh->name, type);
    kv_str(f, "general.architecture", "llama");
    kv_str(f, "general.name", name);
    kv_u32(f, "general.file_type", ftype);
    kv_u32(f, "llama.context_length", 2048);
    kv_u32(f, "llama.embedding_length", (uint32_t)sh->dim);
    kv_u32(f, "llama.block_count", (uint32_t)sh->n_layers);
    kv_u32(f, "llama.feed_forward_length", (uint32_t)sh->hidden);
    kv_u32(f, "llama.attention.head_count", (uint32_t)sh->n_heads);
    kv_u32(f, "llama.attention.head_count_kv", (uint32_t)sh->n_kv_heads);
    kv_u32(f, "llama.rope.dimension_count", (uint32_t)(sh->dim / sh->n_heads));
    kv_f32(f, "llama.rope.freq_base", 10000.0f);
    kv_f32(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    for (uint64_t i = 0; i < vg.n_kv; i++)
        if (vg.kv[i].key.len > 10 && !memcmp(vg.kv[i].key.ptr, "tokenizer.", 10)) {
            const uint8_t *start;
            size_t n = kv_extent(&vg.kv[i], &start);
            put(f, start, n);
        }
    for (int i = 0; i < n_t; i++) {
        put_str(f, ts[i].name);
        bool vec = ts[i].ne1 == 1;
        put_u32(f, vec ? 1 : 2);
        put_u64(f, (uint64_t)ts[i].ne0);
        if (!vec) put_u64(f, (uint64_t)ts[i].ne1);
        put_u32(f, ts[i].type);
        put_u64(f, ts[i].offset);
    }
    long pos = ftell(f);
    static const uint8_t zeros[GGUF_DEFAULT_ALIGNMENT];
    put(f, zeros, (size_t)((GGUF_DEFAULT_ALIGNMENT - pos % GGUF_DEFAULT_ALIGNMENT) % GGUF_DEFAULT_ALIGNMENT));

    /* data, row by row */
    int64_t widest = sh->hidden > sh->dim ? sh->hidden : sh->dim;
    float *row = malloc((size_t)widest * sizeof *row);
    uint8_t *qrow = malloc(quant_row_size(WICK_TYPE_F32, widest));
    int rc = 0;
    for (int i = 0; i < n_t && row && qrow; i++) {
        const quant_type *qt = quant_get(ts[i].type);
        uint64_t state = seed * 0x100000001b3ull + (uint64_t)i;
        const float scale = 0.02f * 1.7320508f; /* uniform in ±a has std a/√3 */
        for (int64_t r = 0; r < ts[i].ne1; r++) {
            for (int64_t c = 0; c < ts[i].ne0; c++)
                row[c] = ts[i].fill != 0 ? ts[i].fill
                                         : scale * (float)((double)(splitmix(&state) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
            size_t rb = quant_row_size(ts[i].type, ts[i].ne0);
            if (ts[i].type == WICK_TYPE_F32) memcpy(qrow, row, rb);
            else qt->from_float(row, qrow, ts[i].ne0);
            put(f, qrow, rb);
        }
        uint64_t pad = (i + 1 < n_t ? ts[i + 1].offset : ts[i].offset + ts[i].bytes) - ts[i].offset - ts[i].bytes;
        put(f, zeros, (size_t)pad);
    }
    if (!row || !qrow) rc = errorf(err, err_len, "out of memory");
    if (fclose(f) != 0 && rc == 0) rc = errorf(err, err_len, "writing %s failed", out_path);
    free(row);
    free(qrow);
    free(ts);
    gguf_close(&vg);
    free(vbuf);
    return rc;
}
