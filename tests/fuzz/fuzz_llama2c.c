/* fuzz_llama2c.c — libFuzzer target for the llama2.c reader (wick_model_load_llama2c). The first
 * input byte chooses what is hostile (mod 3):
 *   0: both — a little-endian u32 L, then L bytes of checkpoint (clamped to what is there), then
 *      the tokenizer.bin;
 *   1: the checkpoint — the rest of the input, with the real tok512.bin as tokenizer;
 *   2: the tokenizer — the rest of the input, with the real stories260K.bin as checkpoint.
 * A model that loads is run as in fuzz_gguf (fuzz_common.h). */
#include "fuzz_common.h"

static uint8_t *real_tok, *real_bin;
static size_t real_tok_size, real_bin_size;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    real_tok = fuzz_read_shared("models/tok512.bin", &real_tok_size);
    real_bin = fuzz_read_shared("models/stories260K.bin", &real_bin_size);
    return 0;
}

/* A malloc'd copy of exactly n bytes, so that ASan sees a read past either part's end. */
static uint8_t *copy(const uint8_t *p, size_t n) {
    uint8_t *b = malloc(n ? n : 1);
    if (b && n) memcpy(b, p, n);
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] % 3;
    data++, size--;
    uint8_t *bin, *tok;
    size_t bin_size, tok_size;
    if (mode == 0) {
        if (size < 4) return 0;
        size_t len = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
        data += 4, size -= 4;
        bin_size = len < size ? len : size;
        tok_size = size - bin_size;
        bin = copy(data, bin_size);
        tok = copy(data + bin_size, tok_size);
    } else if (mode == 1) {
        bin_size = size, tok_size = real_tok_size;
        bin = copy(data, size);
        tok = copy(real_tok, real_tok_size);
    } else {
        bin_size = real_bin_size, tok_size = size;
        bin = copy(real_bin, real_bin_size);
        tok = copy(data, size);
    }
    if (bin && tok) {
        wick_model *m = NULL;
        wick_status s = wick_model_load_llama2c(bin, bin_size, tok, tok_size, &m);
        fuzz_check_status(s, "wick_model_load_llama2c");
        if (s == WICK_OK) {
            FUZZ_CHECK(m != NULL, "load succeeded without a model");
            fuzz_exercise_model(m);
            wick_model_free(m);
        }
    }
    free(bin);
    free(tok);
    return 0;
}
