/* bench/llama_bench.h — what the C harnesses over node-llama-cpp's prebuilt libllama share
 * (bench_decode_llama.c, bench_embed_llama.c): a monotonic clock, a log callback that keeps
 * errors and the line naming the CPU variant ggml loaded (zen4, haswell, …: the figures depend
 * on it), and the load of a model on the CPU backends found in a directory, quietly. */
#ifndef WICK_LLAMA_BENCH_H
#define WICK_LLAMA_BENCH_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void quiet(enum ggml_log_level level, const char *text, void *data) {
    (void)data;
    if (level >= GGML_LOG_LEVEL_ERROR || strstr(text, "loaded CPU backend")) fputs(text, stderr);
}

static bool no_progress(float progress, void *data) {
    (void)progress, (void)data;
    return true;
}

/* The CPU backends of backend_dir (as node-llama-cpp loads them), then the model, on the CPU
 * only; NULL (and a message) when it does not load. */
static struct llama_model *load_cpu_model(const char *backend_dir, const char *path) {
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(backend_dir);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.progress_callback = no_progress;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) fprintf(stderr, "cannot load %s\n", path);
    return model;
}

#endif
