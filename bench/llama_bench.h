/* bench/llama_bench.h — what the C harnesses over node-llama-cpp's prebuilt libllama share
 * (bench_decode_llama.c, bench_embed_llama.c): a monotonic clock, a log callback that keeps
 * errors and the line naming the CPU variant ggml loaded (zen4, haswell, …: the figures depend
 * on it), and a model-load progress callback that says nothing. */
#ifndef WICK_LLAMA_BENCH_H
#define WICK_LLAMA_BENCH_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ggml.h"

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

#endif
