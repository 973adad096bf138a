// bench/bench_mtmd.cpp — llama.cpp's image encode time (libmtmd's clip), the other side of wick's in
// `npm run bench` (tools/bench.mjs, its vision section): an mmproj file loaded by clip_init with
// mtmd's defaults (CPU, flash attention AUTO — clip's warm-up graph decides — and that warm-up
// run), then one image of SIZE × SIZE pixels (the projector's native size: what the preprocessor
// hands the encoder for its overview) encoded by clip_image_encode on THREADS threads: one
// untimed encode, then RUNS timed ones (steady_clock around the call: graph, allocation and
// compute, as a caller waits for it). Built by mk/bench-mtmd.mk against the llama-server build's
// static libraries, as tests/mtmd_ref.cpp is.
//   bench_mtmd MMPROJ.gguf SIZE THREADS RUNS [auto|off]
// prints {"ms":[…],"median_ms":M,"positions":P,"n_embd":N,"threads":T} on stdout; exit 1 with a
// message on failure.
#include "clip.h"
#include "clip-impl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

int main(int argc, char ** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_mtmd MMPROJ.gguf SIZE THREADS RUNS [auto|off]\n");
        return 2;
    }
    const int size = atoi(argv[2]), threads = atoi(argv[3]), runs = atoi(argv[4]);
    const bool fa_off = argc > 5 && !strcmp(argv[5], "off");
    if (size < 1 || threads < 1 || runs < 1) {
        fprintf(stderr, "bench_mtmd: SIZE, THREADS and RUNS must be positive\n");
        return 2;
    }
    try {
        clip_context_params params = {};
        params.use_gpu = false;
        params.device = nullptr;
        params.flash_attn_type = fa_off ? CLIP_FLASH_ATTN_TYPE_DISABLED : CLIP_FLASH_ATTN_TYPE_AUTO;
        params.image_min_tokens = -1;
        params.image_max_tokens = -1;
        params.warmup = true;
        clip_ctx * ctx = clip_init(argv[1], params).ctx_v;
        if (!ctx) throw std::runtime_error("clip_init failed (no vision encoder)");
        // a smooth test picture in [0, 1] per channel (what from_u8 gives before normalization)
        clip_image_f32 img;
        img.set_size({size, size}, false, false);
        std::vector<float> px((size_t) size * size * 3);
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++)
                for (int c = 0; c < 3; c++)
                    px[((size_t) y * size + x) * 3 + c] = (float) ((x * (c + 1) + y * (3 - c)) % 256) / 255.0f;
        img.cpy_buf(px);
        const int n_pos = clip_n_output_tokens(ctx, &img), n_embd = clip_n_mmproj_embd(ctx);
        std::vector<float> embd((size_t) n_pos * n_embd);
        if (!clip_image_encode(ctx, threads, &img, embd)) throw std::runtime_error("clip_image_encode failed");
        std::vector<double> ms;
        for (int r = 0; r < runs; r++) {
            auto t0 = std::chrono::steady_clock::now();
            if (!clip_image_encode(ctx, threads, &img, embd)) throw std::runtime_error("clip_image_encode failed");
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        const double median = runs % 2 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
        std::string list;
        for (double m : ms) list += (list.empty() ? "" : ",") + std::to_string(m);
        printf("{\"ms\":[%s],\"median_ms\":%.1f,\"positions\":%d,\"n_embd\":%d,\"threads\":%d}\n", list.c_str(), median, n_pos, n_embd, threads);
        clip_free(ctx);
    } catch (const std::exception & e) {
        fprintf(stderr, "bench_mtmd: %s\n", e.what());
        return 1;
    }
    return 0;
}
