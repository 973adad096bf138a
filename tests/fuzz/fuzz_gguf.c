/* fuzz_gguf.c — libFuzzer target for the GGUF reader and the model binding: the input is a whole
 * GGUF file. When it loads, the model is run as a page would first run it (fuzz_common.h): info,
 * tokenizing a sample, a context of 8 tokens and one wick_eval of two tokens. Any sanitizer
 * report, a failure without a message, or an out-of-range token id is a finding.
 * An input holding "GGUF" again after its start is also cut there into the parts of a split
 * model (gguf-split), up to 8, and loaded with wick_model_load_gguf_parts. */
#include "fuzz_common.h"

enum { MAX_PARTS = 8 };

/* The parts start at offset 0 and at every later "GGUF"; each gets a malloc of its exact size. */
static void load_parts(const uint8_t *data, size_t size) {
    size_t start[MAX_PARTS + 1];
    int n = 1;
    start[0] = 0;
    /* byte compares, not memcmp: a call per offset would be slow under ASan */
    for (size_t i = 4; i + 4 <= size && n < MAX_PARTS; i++)
        if (data[i] == 'G' && data[i + 1] == 'G' && data[i + 2] == 'U' && data[i + 3] == 'F') start[n++] = i;
    if (n < 2) return;
    start[n] = size;
    const void *bufs[MAX_PARTS];
    size_t sizes[MAX_PARTS];
    int ok = 1;
    for (int i = 0; i < n; i++) {
        sizes[i] = start[i + 1] - start[i];
        uint8_t *b = malloc(sizes[i] ? sizes[i] : 1);
        if (b) memcpy(b, data + start[i], sizes[i]);
        bufs[i] = b;
        ok &= b != NULL;
    }
    if (ok) {
        wick_model *m = NULL;
        wick_status s = wick_model_load_gguf_parts(bufs, sizes, n, &m);
        fuzz_check_status(s, "wick_model_load_gguf_parts");
        if (s == WICK_OK) {
            FUZZ_CHECK(m != NULL, "load succeeded without a model");
            fuzz_exercise_model(m);
            wick_model_free(m);
        }
    }
    for (int i = 0; i < n; i++) free((void *)bufs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the engine keeps views into the buffer: give it a copy of exactly the input's size, so
     * ASan catches a read one byte past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    wick_model *m = NULL;
    wick_status s = wick_model_load_gguf(buf, size, &m);
    fuzz_check_status(s, "wick_model_load_gguf");
    if (s == WICK_OK) {
        FUZZ_CHECK(m != NULL, "load succeeded without a model");
        fuzz_exercise_model(m);
        wick_model_free(m);
    }
    free(buf);
    load_parts(data, size);
    return 0;
}
