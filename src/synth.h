/* synth.h — writes deterministic random-weight GGUF files of each supported architecture family
 * for benchmarks and for checking wick against llama.cpp on the same file (`wick synth`). */
#ifndef WICK_SYNTH_H
#define WICK_SYNTH_H

#include <stdbool.h>
#include <stddef.h>

#include "errmsg.h"

/* arch: "llama" (NULL means llama: the original file, unchanged), "llama3" (llama with Llama 3
 * rope factors), "qwen3", "gemma2", "gemma3", "phi3", "smollm3", "granite", "olmo2", and the
 * hybrids "lfm2" (short convolutions; every third layer attention) and "qwen35" (gated DeltaNet;
 * every fourth layer attention), and the encoder "bert" (an embedding model; pooling "none", "mean"
 * (NULL: the default), "cls" or "last", for the encoders only).
 * shape: "134m" or "1b" (or "mini": dim 256, 2 layers, for tests; "mini-mha" with as many KV heads
 * as heads); a family whose layer pattern needs more layers (gemma3 6, smollm3, lfm2 and qwen35 4)
 * gets them on the mini shapes. type: "f32", "f16", "q8_0", "q4_0", "q4_k_m". The tokenizer metadata is copied from the
 * vocab-only GGUF at vocab_path (its token count is the model's vocabulary). Returns 0, or -1 with
 * a message. lexical (bert only): an encoder whose cosine similarities follow the words two texts
 * share (synth.c's encoder notes), for retrieval tests. */
int synth_write(const char *arch, const char *shape, const char *type, const char *pooling, bool lexical, const char *vocab_path,
                const char *out_path, unsigned long long seed, errmsg *err);

/* A random-weight mmproj (vision) file of projector ("idefics3", "gemma3") with its matrices of type ("f32",
 * "f16", "q8_0"): a tiny tower that llama.cpp's clip loader takes (synth.c's mmproj notes). */
int synth_write_mmproj(const char *projector, const char *type, const char *out_path, unsigned long long seed, errmsg *err);

#endif
