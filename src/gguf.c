/* gguf.c — parses and validates a GGUF v2/v3 file in memory (layout in gguf.h).
 * Invariant after gguf_open succeeds: every string, array and tensor view lies inside buf,
 * every tensor's byte size was computed without overflow, and tensor names are unique. */
#include "gguf.h"
#include "quant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file may declare at most this many keys or tensors: far above any real model
 * (Llama-3-405B has ~1.1k tensors) and small enough that the directories' allocations are cheap. */
#define GGUF_MAX_ENTRIES (1u << 20)

typedef struct {
    const uint8_t *buf;
    size_t size, pos;
    errmsg *err;
} reader;

static int need(reader *r, uint64_t n, const char *what) {
    if (n > r->size - r->pos)
        return errorf(r->err, WICK_ERR_FORMAT, "GGUF truncated: %s at byte %zu needs %llu bytes, file has %zu",
                    what, r->pos, (unsigned long long)n, r->size);
    return 0;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static int read_u32(reader *r, uint32_t *v, const char *what) {
    if (need(r, 4, what)) return -1;
    *v = get_u32(r->buf + r->pos);
    r->pos += 4;
    return 0;
}
static int read_u64(reader *r, uint64_t *v, const char *what) {
    if (need(r, 8, what)) return -1;
    *v = get_u64(r->buf + r->pos);
    r->pos += 8;
    return 0;
}
static int read_str(reader *r, gguf_str *s, const char *what) {
    uint64_t len;
    if (read_u64(r, &len, what) || need(r, len, what)) return -1;
    s->ptr = (const char *)r->buf + r->pos;
    s->len = len;
    r->pos += len;
    return 0;
}

static const uint32_t scalar_size[GGUF_VALUE_TYPE_COUNT] = {
    [GGUF_U8] = 1, [GGUF_I8] = 1, [GGUF_U16] = 2, [GGUF_I16] = 2, [GGUF_U32] = 4,
    [GGUF_I32] = 4, [GGUF_F32] = 4, [GGUF_BOOL] = 1, [GGUF_U64] = 8, [GGUF_I64] = 8, [GGUF_F64] = 8,
};

/* Decodes the scalar at p into kv (type already set). */
static void decode_scalar(gguf_kv *kv, const uint8_t *p) {
    switch (kv->type) {
    case GGUF_U8: kv->val.u64 = p[0]; break;
    case GGUF_I8: kv->val.i64 = (int8_t)p[0]; break;
    case GGUF_U16: kv->val.u64 = (uint16_t)(p[0] | p[1] << 8); break;
    case GGUF_I16: kv->val.i64 = (int16_t)(p[0] | p[1] << 8); break;
    case GGUF_U32: kv->val.u64 = get_u32(p); break;
    case GGUF_I32: kv->val.i64 = (int32_t)get_u32(p); break;
    case GGUF_U64: kv->val.u64 = get_u64(p); break;
    case GGUF_I64: kv->val.i64 = (int64_t)get_u64(p); break;
    case GGUF_BOOL: kv->val.b = p[0] != 0; break;
    case GGUF_F32: { uint32_t u = get_u32(p); float f; memcpy(&f, &u, 4); kv->val.f64 = f; break; }
    case GGUF_F64: { uint64_t u = get_u64(p); memcpy(&kv->val.f64, &u, 8); break; }
    default: break;
    }
}

/* Skips (validating) one array value of element type t and length n; nested arrays recurse
 * to a bounded depth. */
static int skip_array(reader *r, uint32_t t, uint64_t n, int depth, const char *key) {
    if (depth > 8) return errorf(r->err, WICK_ERR_FORMAT, "GGUF metadata %s: arrays nested too deeply", key);
    if (t >= GGUF_VALUE_TYPE_COUNT) return errorf(r->err, WICK_ERR_FORMAT, "GGUF metadata %s: unknown array element type %u", key, t);
    if (t == GGUF_STRING) {
        for (uint64_t i = 0; i < n; i++) {
            gguf_str s;
            if (read_str(r, &s, key)) return -1;
        }
        return 0;
    }
    if (t == GGUF_ARRAY) {
        for (uint64_t i = 0; i < n; i++) {
            uint32_t et;
            uint64_t en;
            if (read_u32(r, &et, key) || read_u64(r, &en, key)) return -1;
            if (skip_array(r, et, en, depth + 1, key)) return -1;
        }
        return 0;
    }
    uint64_t es = scalar_size[t];
    if (n > (r->size - r->pos) / es)
        return errorf(r->err, WICK_ERR_FORMAT, "GGUF metadata %s: array of %llu elements runs past end of file", key,
                    (unsigned long long)n);
    r->pos += n * es;
    return 0;
}

static int read_kv(reader *r, gguf_kv *kv) {
    if (read_str(r, &kv->key, "metadata key")) return -1;
    char key[96];
    snprintf(key, sizeof key, "%.*s", (int)(kv->key.len < 80 ? kv->key.len : 80), kv->key.ptr);
    if (read_u32(r, &kv->type, key)) return -1;
    if (kv->type >= GGUF_VALUE_TYPE_COUNT)
        return errorf(r->err, WICK_ERR_FORMAT, "GGUF metadata %s: unknown value type %u", key, kv->type);
    if (kv->type == GGUF_STRING) return read_str(r, &kv->val.str, key);
    if (kv->type == GGUF_ARRAY) {
        if (read_u32(r, &kv->arr_type, key) || read_u64(r, &kv->arr_len, key)) return -1;
        size_t start = r->pos;
        kv->arr_data = r->buf + start;
        if (skip_array(r, kv->arr_type, kv->arr_len, 0, key)) return -1;
        kv->arr_bytes = r->pos - start;
        return 0;
    }
    uint32_t es = scalar_size[kv->type];
    if (need(r, es, key)) return -1;
    decode_scalar(kv, r->buf + r->pos);
    r->pos += es;
    return 0;
}

bool gguf_str_eq(gguf_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.len == n && memcmp(s.ptr, cstr, n) == 0;
}

static int read_tensor_info(reader *r, gguf_tensor *t, uint64_t index) {
    if (read_str(r, &t->name, "tensor name")) return -1;
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 80 ? t->name.len : 80), t->name.ptr);
    if (t->name.len == 0 || t->name.len > 255)
        return errorf(r->err, WICK_ERR_FORMAT, "GGUF tensor %llu: name length %llu out of range", (unsigned long long)index,
                    (unsigned long long)t->name.len);
    if (read_u32(r, &t->n_dims, name)) return -1;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return errorf(r->err, WICK_ERR_FORMAT, "tensor %s: %u dimensions (1 to %d allowed)", name, t->n_dims, GGUF_MAX_DIMS);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    uint64_t n_elem = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (read_u64(r, &t->ne[d], name)) return -1;
        /* elements must stay far below 2^63 so byte sizes cannot overflow either */
        if (t->ne[d] == 0 || t->ne[d] > (1ull << 40) || n_elem > (1ull << 40) / t->ne[d])
            return errorf(r->err, WICK_ERR_FORMAT, "tensor %s: shape dimension %u = %llu is zero or too large", name, d,
                        (unsigned long long)t->ne[d]);
        n_elem *= t->ne[d];
    }
    if (read_u32(r, &t->type, name) || read_u64(r, &t->offset, name)) return -1;
    const quant_type *qt = t->type < WICK_TYPE_FILE_COUNT ? quant_get(t->type) : NULL;
    if (!qt) return errorf(r->err, WICK_ERR_UNSUPPORTED, "tensor %s: unsupported tensor type %u", name, t->type);
    if (t->ne[0] % qt->block_size)
        return errorf(r->err, WICK_ERR_FORMAT, "tensor %s: row length %llu is not a multiple of the %s block size %u", name,
                    (unsigned long long)t->ne[0], qt->name, qt->block_size);
    t->n_bytes = n_elem / qt->block_size * qt->type_size;
    return 0;
}

int gguf_open(gguf_file *g, const uint8_t *buf, size_t size, errmsg *err) {
    return gguf_open_sparse(g, buf, size, NULL, 0, err);
}

/* The file is size + the holes' bytes long; the header must end before the first hole (the
 * reader below sees only the bytes up to it). */
int gguf_open_sparse(gguf_file *g, const uint8_t *buf, size_t size, const gguf_hole *holes, int n_holes, errmsg *err) {
    memset(g, 0, sizeof *g);
    uint64_t file_size = size, prev_end = 0;
    for (int i = 0; i < n_holes; i++) {
        if (holes[i].offset < prev_end || holes[i].bytes == 0 || holes[i].bytes > (1ull << 50) || holes[i].offset > (1ull << 50))
            return errorf(err, WICK_ERR_INVALID_ARG, "hole %d (%llu bytes at %llu): holes must be non-empty, in order and apart", i,
                          (unsigned long long)holes[i].bytes, (unsigned long long)holes[i].offset);
        prev_end = holes[i].offset + holes[i].bytes;
        file_size += holes[i].bytes;
    }
    if (n_holes && prev_end > file_size)
        return errorf(err, WICK_ERR_INVALID_ARG, "the last hole ends at %llu, after the file's %llu bytes", (unsigned long long)prev_end,
                      (unsigned long long)file_size);
    size_t header_size = n_holes && holes[0].offset < size ? (size_t)holes[0].offset : size;
    reader r = {buf, header_size, 0, err};
    if (size < 4 || memcmp(buf, "GGUF", 4) != 0) return errorf(r.err, WICK_ERR_FORMAT, "not a GGUF file (bad magic)");
    r.pos = 4;
    if (read_u32(&r, &g->version, "version")) return -1;
    if (g->version != 2 && g->version != 3)
        return errorf(r.err, WICK_ERR_UNSUPPORTED, "GGUF version %u not supported (2 and 3 are)", g->version);
    if (read_u64(&r, &g->n_tensors, "tensor count") || read_u64(&r, &g->n_kv, "metadata count")) return -1;
    if (g->n_kv > GGUF_MAX_ENTRIES || g->n_tensors > GGUF_MAX_ENTRIES)
        return errorf(r.err, WICK_ERR_FORMAT, "GGUF declares %llu metadata keys and %llu tensors: too many",
                    (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors);
    /* each key and tensor entry takes at least 12 bytes in the file */
    if ((g->n_kv + g->n_tensors) * 12 > size - r.pos)
        return errorf(r.err, WICK_ERR_FORMAT, "GGUF truncated: %llu keys and %llu tensors cannot fit in %zu bytes",
                    (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors, size);
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) { gguf_close(g); return errorf(r.err, WICK_ERR_NOMEM, "out of memory reading GGUF directory"); }
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (read_kv(&r, &g->kv[i])) { gguf_close(g); return -1; }

    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *al = gguf_find(g, "general.alignment");
    if (al) {
        if (al->type != GGUF_U32 || al->val.u64 == 0 || (al->val.u64 & (al->val.u64 - 1)) || al->val.u64 > 65536) {
            gguf_close(g);
            return errorf(r.err, WICK_ERR_FORMAT, "general.alignment must be a power of two up to 65536 (u32)");
        }
        g->alignment = al->val.u64;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (read_tensor_info(&r, &g->tensors[i], i)) { gguf_close(g); return -1; }

    size_t data = (r.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (g->n_tensors && data > size) { gguf_close(g); return errorf(r.err, WICK_ERR_FORMAT, "GGUF truncated before the tensor data"); }
    if (n_holes && holes[0].offset < data) {
        gguf_close(g);
        return errorf(r.err, WICK_ERR_INVALID_ARG, "a hole at %llu starts before the tensor data (%zu)", (unsigned long long)holes[0].offset, data);
    }
    g->data_offset = data;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 80 ? t->name.len : 80), t->name.ptr);
        /* the message reads t, which lives in g->tensors: write it before gguf_close frees them */
        if (t->offset % g->alignment) {
            errorf(r.err, WICK_ERR_FORMAT, "tensor %s: offset %llu is not aligned to %llu", name,
                 (unsigned long long)t->offset, (unsigned long long)g->alignment);
            gguf_close(g);
            return -1;
        }
        if (t->offset > file_size - data || t->n_bytes > file_size - data - t->offset) {
            errorf(r.err, WICK_ERR_FORMAT, "tensor %s: data runs past end of file (offset %llu + %llu bytes, %llu available)",
                 name, (unsigned long long)t->offset, (unsigned long long)t->n_bytes, (unsigned long long)(file_size - data));
            gguf_close(g);
            return -1;
        }
        /* where its bytes are: in the buffer, less the holes before it, or wholly inside a hole */
        uint64_t at = data + t->offset, cut = 0;
        t->file_offset = at;
        t->data = NULL;
        for (int h = 0; h <= n_holes; h++) {
            if (h == n_holes || at + t->n_bytes <= holes[h].offset) { t->data = buf + (at - cut); break; }
            if (at >= holes[h].offset + holes[h].bytes) { cut += holes[h].bytes; continue; }
            if (at < holes[h].offset || at + t->n_bytes > holes[h].offset + holes[h].bytes) {
                errorf(r.err, WICK_ERR_INVALID_ARG, "tensor %s: partly left out (a hole at %llu of %llu bytes cuts it)", name,
                       (unsigned long long)holes[h].offset, (unsigned long long)holes[h].bytes);
                gguf_close(g);
                return -1;
            }
            t->outside = true;
            break;
        }
        for (uint64_t j = 0; j < i; j++)
            if (g->tensors[j].name.len == t->name.len &&
                memcmp(g->tensors[j].name.ptr, t->name.ptr, t->name.len) == 0) {
                gguf_close(g);
                return errorf(r.err, WICK_ERR_FORMAT, "tensor %s appears twice", name);
            }
    }
    g->buf = buf;
    g->size = size;
    return 0;
}

void gguf_close(gguf_file *g) {
    free(g->kv);
    free(g->tensors);
    g->kv = NULL;
    g->tensors = NULL;
    g->n_kv = g->n_tensors = 0;
}

const gguf_kv *gguf_find(const gguf_file *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (gguf_str_eq(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (gguf_str_eq(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

static bool is_unsigned(uint32_t t) { return t == GGUF_U8 || t == GGUF_U16 || t == GGUF_U32 || t == GGUF_U64; }
static bool is_signed(uint32_t t) { return t == GGUF_I8 || t == GGUF_I16 || t == GGUF_I32 || t == GGUF_I64; }

bool gguf_get_u64(const gguf_file *g, const char *key, uint64_t *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return false;
    if (is_unsigned(kv->type)) { *out = kv->val.u64; return true; }
    if (is_signed(kv->type) && kv->val.i64 >= 0) { *out = (uint64_t)kv->val.i64; return true; }
    return false;
}

bool gguf_get_i64(const gguf_file *g, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return false;
    if (is_signed(kv->type)) { *out = kv->val.i64; return true; }
    if (is_unsigned(kv->type) && kv->val.u64 <= INT64_MAX) { *out = (int64_t)kv->val.u64; return true; }
    return false;
}

bool gguf_get_f64(const gguf_file *g, const char *key, double *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) return false;
    if (kv->type == GGUF_F32 || kv->type == GGUF_F64) *out = kv->val.f64;
    else if (is_signed(kv->type)) *out = (double)kv->val.i64;
    else if (is_unsigned(kv->type)) *out = (double)kv->val.u64;
    else return false;
    return true;
}

bool gguf_get_bool(const gguf_file *g, const char *key, bool *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_BOOL) return false;
    *out = kv->val.b;
    return true;
}

bool gguf_get_str(const gguf_file *g, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_STRING) return false;
    *out = kv->val.str;
    return true;
}

const gguf_kv *gguf_get_arr(const gguf_file *g, const char *key, uint32_t elem_type) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_ARRAY || kv->arr_type != elem_type) return NULL;
    return kv;
}

double gguf_arr_f64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = {.type = kv->arr_type};
    if (kv->arr_type >= GGUF_VALUE_TYPE_COUNT || !scalar_size[kv->arr_type]) return 0;
    decode_scalar(&tmp, kv->arr_data + i * scalar_size[kv->arr_type]);
    if (tmp.type == GGUF_F32 || tmp.type == GGUF_F64) return tmp.val.f64;
    return is_signed(tmp.type) ? (double)tmp.val.i64 : (double)tmp.val.u64;
}

int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = {.type = kv->arr_type};
    if (kv->arr_type >= GGUF_VALUE_TYPE_COUNT || !scalar_size[kv->arr_type]) return 0;
    decode_scalar(&tmp, kv->arr_data + i * scalar_size[kv->arr_type]);
    if (tmp.type == GGUF_F32 || tmp.type == GGUF_F64) { /* (NaN and out-of-range values: converting them is undefined) */
        double f = tmp.val.f64;
        return f != f ? 0 : f >= 0x1p63 ? INT64_MAX : f < -0x1p63 ? INT64_MIN : (int64_t)f;
    }
    if (tmp.type == GGUF_BOOL) return tmp.val.b;
    return is_signed(tmp.type) ? tmp.val.i64 : (int64_t)tmp.val.u64;
}

int gguf_arr_strings(const gguf_kv *kv, gguf_str *out) {
    if (kv->type != GGUF_ARRAY || kv->arr_type != GGUF_STRING) return -1;
    const uint8_t *p = kv->arr_data, *end = kv->arr_data + kv->arr_bytes;
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        if (end - p < 8) return -1;
        uint64_t len = get_u64(p);
        p += 8;
        if (len > (uint64_t)(end - p)) return -1;
        out[i].ptr = (const char *)p;
        out[i].len = len;
        p += len;
    }
    return 0;
}
