/* bench/bench_decode_llama.c — native llama.cpp's prefill and decode speed, timed in C
 * (tools/bench-peers.mjs's native column): node-llama-cpp's prebuilt libllama, its CPU backends
 * loaded from the directory given as node-llama-cpp loads them, no JS and no JS threads anywhere
 * (issue 33: node-llama-cpp's own threads oversubscribed a 2-core machine, so that its 2-thread
 * decode read half its 1-thread decode).
 *
 *   bench_decode_llama BACKEND_DIR MODEL.gguf IDS THREADS GEN REPEAT CTX BATCH
 *
 * IDS: the prompt's token ids, whitespace-separated (wick's tokenization, BOS included, so that
 * both engines evaluate the same tokens). Each run clears the cache, evaluates the prompt as one
 * batch with the logits of its last token, takes the argmax, then makes GEN single-token
 * evaluations, each with its logits and its argmax (greedy, EOS ignored) — what a real decode
 * does; llama.cpp skips the output head of a step that asks for no logits. Run 0 warms up; then
 * REPEAT timed runs. Prints one line per timed run:
 *   run R: prefill N tokens in MS ms, decode G steps in MS ms
 * and then "tokens: ..." (run 1's greedy ids). ggml's "loaded CPU backend" line goes to stderr. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"
#include "llama_bench.h"

static llama_token argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s BACKEND_DIR MODEL.gguf IDS THREADS GEN REPEAT CTX BATCH\n", argv[0]);
        return 2;
    }
    const int threads = atoi(argv[4]), gen = atoi(argv[5]), repeat = atoi(argv[6]), n_ctx = atoi(argv[7]), n_batch = atoi(argv[8]);
    FILE *f = fopen(argv[3], "r");
    if (!f) { fprintf(stderr, "cannot open %s\n", argv[3]); return 1; }
    int n_prompt = 0, cap = 256;
    llama_token *prompt = malloc((size_t)cap * sizeof *prompt);
    for (int id; fscanf(f, "%d", &id) == 1;) {
        if (n_prompt == cap) prompt = realloc(prompt, (size_t)(cap *= 2) * sizeof *prompt);
        prompt[n_prompt++] = id;
    }
    fclose(f);
    if (n_prompt < 1 || n_prompt > n_batch || n_prompt + gen > n_ctx) {
        fprintf(stderr, "%d prompt tokens and %d steps do not fit a batch of %d and a context of %d\n", n_prompt, gen, n_batch, n_ctx);
        return 1;
    }

    struct llama_model *model = load_cpu_model(argv[1], argv[2]);
    if (!model) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)n_batch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }
    struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
    llama_token *tokens = malloc((size_t)(gen + 1) * sizeof *tokens);

    for (int r = 0; r <= repeat; r++) {
        llama_memory_clear(llama_get_memory(ctx), true);
        batch.n_tokens = n_prompt;
        for (int i = 0; i < n_prompt; i++) {
            batch.token[i] = prompt[i];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = i == n_prompt - 1;
        }
        double t0 = now_ms();
        if (llama_decode(ctx, batch)) { fprintf(stderr, "llama_decode of the prompt failed\n"); return 1; }
        tokens[0] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        double t1 = now_ms();
        for (int s = 0; s < gen; s++) {
            batch.n_tokens = 1;
            batch.token[0] = tokens[s];
            batch.pos[0] = n_prompt + s;
            batch.n_seq_id[0] = 1;
            batch.seq_id[0][0] = 0;
            batch.logits[0] = 1;
            if (llama_decode(ctx, batch)) { fprintf(stderr, "llama_decode of step %d failed\n", s); return 1; }
            tokens[s + 1] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
        double t2 = now_ms();
        if (r > 0) {
            printf("run %d: prefill %d tokens in %.3f ms, decode %d steps in %.3f ms\n", r, n_prompt, t1 - t0, gen, t2 - t1);
            if (r == 1) {
                printf("tokens:");
                for (int s = 0; s <= gen; s++) printf(" %d", tokens[s]);
                printf("\n");
            }
        }
    }
    free(tokens);
    free(prompt);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
