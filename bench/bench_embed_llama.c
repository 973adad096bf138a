/* bench/bench_embed_llama.c — native llama.cpp's embedding throughput, timed in C (tools/bench.mjs's
 * embedding section): node-llama-cpp's prebuilt libllama (its CPU backends loaded from the
 * directory given, as node-llama-cpp loads them) in its embedding mode, mean pooling, on the texts
 * of a NUL-separated file, each tokenized as llama.cpp's embedding example does ([CLS] … [SEP]).
 * The texts go n_seq at a time into one llama_decode (one sequence id each, as the example packs
 * them), after one untimed warm-up pass; the clock covers the timed passes' decodes and the reading
 * of each pooled vector, nothing else. No JS threads are involved (issue 33: node-llama-cpp's own
 * threads oversubscribe a 2-core machine).
 *
 *   bench_embed_llama BACKEND_DIR MODEL.gguf TEXTS THREADS N_SEQ REPEAT
 *
 * prints "llama.cpp embed: N texts, M tokens in S s (X texts/s, Y tokens/s)" for the best of
 * REPEAT passes over all the texts, and the token count of the first text. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"
#include "llama_bench.h"

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s BACKEND_DIR MODEL.gguf TEXTS THREADS N_SEQ REPEAT\n", argv[0]);
        return 2;
    }
    const int threads = atoi(argv[4]), n_seq = atoi(argv[5]), repeat = atoi(argv[6]);
    FILE *f = fopen(argv[3], "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", argv[3]); return 1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *texts = malloc((size_t)size + 1);
    if (!texts || fread(texts, 1, (size_t)size, f) != (size_t)size) { fprintf(stderr, "cannot read %s\n", argv[3]); return 1; }
    fclose(f);
    texts[size] = 0;

    struct llama_model *model = load_cpu_model(argv[1], argv[2]);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    /* the texts' ids */
    int n_texts = 0, cap = 0, total = 0, max_len = 0;
    llama_token **ids = NULL;
    int *lens = NULL;
    for (long start = 0; start <= size;) {
        long end = start;
        while (end < size && texts[end]) end++;
        int need = -llama_tokenize(vocab, texts + start, (int32_t)(end - start), NULL, 0, true, false);
        if (n_texts == cap) {
            cap = cap ? 2 * cap : 64;
            ids = realloc(ids, (size_t)cap * sizeof *ids);
            lens = realloc(lens, (size_t)cap * sizeof *lens);
        }
        ids[n_texts] = malloc((size_t)(need > 0 ? need : 1) * sizeof(llama_token));
        lens[n_texts] = llama_tokenize(vocab, texts + start, (int32_t)(end - start), ids[n_texts], need, true, false);
        if (lens[n_texts] < 1) { fprintf(stderr, "text %d: no tokens\n", n_texts); return 1; }
        total += lens[n_texts];
        if (lens[n_texts] > max_len) max_len = lens[n_texts];
        n_texts++;
        start = end + 1;
    }

    struct llama_context_params cp = llama_context_default_params();
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    cp.n_ctx = (uint32_t)(n_seq * max_len);
    cp.n_batch = cp.n_ubatch = cp.n_ctx;
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }
    const int dim = llama_model_n_embd(model);
    float *sink = calloc((size_t)dim, sizeof *sink);
    struct llama_batch batch = llama_batch_init((int32_t)cp.n_batch, 0, 1);

    double best = 0;
    for (int r = 0; r <= repeat; r++) { /* pass 0 warms up */
        double t0 = now_ms();
        for (int s0 = 0; s0 < n_texts; s0 += n_seq) {
            int s1 = s0 + n_seq < n_texts ? s0 + n_seq : n_texts;
            batch.n_tokens = 0;
            for (int s = s0; s < s1; s++)
                for (int p = 0; p < lens[s]; p++) {
                    int i = batch.n_tokens++;
                    batch.token[i] = ids[s][p];
                    batch.pos[i] = p;
                    batch.n_seq_id[i] = 1;
                    batch.seq_id[i][0] = s - s0;
                    batch.logits[i] = 1;
                }
            llama_memory_clear(llama_get_memory(ctx), true);
            if (llama_decode(ctx, batch)) { fprintf(stderr, "llama_decode failed\n"); return 1; }
            for (int s = s0; s < s1; s++) {
                const float *e = llama_get_embeddings_seq(ctx, s - s0);
                if (!e) { fprintf(stderr, "no embedding for sequence %d\n", s - s0); return 1; }
                for (int i = 0; i < dim; i++) sink[i] += e[i];
            }
        }
        double secs = (now_ms() - t0) / 1e3;
        if (r > 0 && (best == 0 || secs < best)) best = secs;
    }
    printf("llama.cpp embed: %d texts, %d tokens in %.3f s (%.1f texts/s, %.1f tokens/s)\nfirst text: %d tokens (checksum %g)\n",
           n_texts, total, best, n_texts / best, total / best, lens[0], (double)sink[0]);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
