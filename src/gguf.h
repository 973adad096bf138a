/* gguf.h — a validating reader for GGUF v2/v3 files held in one memory buffer.
 *
 * Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
 *   header   : magic "GGUF", u32 version, u64 n_tensors, u64 n_kv
 *   metadata : n_kv × (string key, u32 type, value)
 *   tensors  : n_tensors × (string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset)
 *   padding to general.alignment (default 32), then the tensor data section.
 * Every count, length, offset and shape is checked against the buffer before use;
 * tensors and strings are views into the buffer (nothing is copied). */
#ifndef WICK_GGUF_H
#define WICK_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "errmsg.h"

enum gguf_value_type {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
    GGUF_I64 = 11, GGUF_F64 = 12, GGUF_VALUE_TYPE_COUNT
};

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct {
    const char *ptr; /* not NUL-terminated: a view into the file */
    uint64_t len;
} gguf_str;

typedef struct {
    gguf_str key;
    uint32_t type;          /* enum gguf_value_type */
    /* scalar values are decoded; strings are views; arrays point at their first element */
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        bool b;
        gguf_str str;
    } val;
    uint32_t arr_type;      /* element type when type == GGUF_ARRAY */
    uint64_t arr_len;       /* element count when type == GGUF_ARRAY */
    const uint8_t *arr_data;/* first element in the file when type == GGUF_ARRAY */
    uint64_t arr_bytes;     /* bytes the array occupies in the file */
} gguf_kv;

typedef struct {
    gguf_str name;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] is the innermost (row length); unused dims are 1 */
    uint32_t type;              /* ggml type id, see quant.h */
    uint64_t offset;            /* relative to the data section */
    uint64_t n_bytes;           /* checked: the data lies inside the file */
    const void *data;           /* NULL when outside */
    uint64_t file_offset;       /* of its first byte in the file */
    bool outside;               /* in a hole: not in the buffer (gguf_open_sparse) */
} gguf_tensor;

/* A range of the file's bytes left out of the buffer: the buffer holds the file with its holes cut out. */
typedef struct {
    uint64_t offset, bytes;
} gguf_hole;

typedef struct {
    const uint8_t *buf;
    size_t size;
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;
    size_t data_offset;
} gguf_file;

/* Parses buf (which must stay alive as long as the result). Returns 0, or -1 with a message in err.
 * Tensor types the quant table does not know are refused unless allow_unknown_types. */
int gguf_open(gguf_file *g, const uint8_t *buf, size_t size, errmsg *err);
/* The same for a file held with holes (in order, none before the tensor data, size: the bytes
 * held); a tensor lies wholly inside a hole (outside) or wholly outside all of them. */
int gguf_open_sparse(gguf_file *g, const uint8_t *buf, size_t size, const gguf_hole *holes, int n_holes, errmsg *err);
void gguf_close(gguf_file *g);

const gguf_kv *gguf_find(const gguf_file *g, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name);

/* Typed getters: return false when the key is missing or has an incompatible type.
 * Integer getters accept any integer type whose value fits. */
bool gguf_get_u64(const gguf_file *g, const char *key, uint64_t *out);
bool gguf_get_i64(const gguf_file *g, const char *key, int64_t *out);
bool gguf_get_f64(const gguf_file *g, const char *key, double *out);
bool gguf_get_bool(const gguf_file *g, const char *key, bool *out);
bool gguf_get_str(const gguf_file *g, const char *key, gguf_str *out);
/* An array (of any element type); elements are read with gguf_arr_* below. */
const gguf_kv *gguf_get_arr(const gguf_file *g, const char *key, uint32_t elem_type);

/* Element access for arrays of fixed-size scalars (index < arr_len is the caller's check). */
double gguf_arr_f64(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i);
/* Arrays of strings: walks the array once and fills out[0..arr_len) with views.
 * Returns 0 or -1 (cannot fail after gguf_open validated the file; kept for safety). */
int gguf_arr_strings(const gguf_kv *kv, gguf_str *out);

bool gguf_str_eq(gguf_str s, const char *cstr);

#endif
