/* bench_streams.c — how fast one core reads memory from 1, 2, 4 and 8 places at once, with the
 * same SIMD128 loads the kernels use (natively through SIMDe). It shows why the decode kernels
 * read several far-apart weight streams at once (matmul.c, matvec_rows_streams): WebAssembly has
 * no prefetch instruction, and one sequential stream leaves most of memory's bandwidth unused.
 *
 * Usage: bench_streams [MiB]   (default 256: well beyond any cache) — `make bench-streams` runs
 * the native and the wasm build side by side. */
#include "simd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
    size_t bytes = mib << 20;
    if (mib < 1 || mib > 1024) {
        fprintf(stderr, "bench_streams: size %s MiB: give 1 to 1024\n", argv[1]);
        return 2;
    }
    uint8_t *buf = malloc(bytes);
    if (!buf) {
        fprintf(stderr, "bench_streams: out of memory for %zu MiB\n", mib);
        return 1;
    }
    memset(buf, 1, bytes);
    printf("reading %zu MiB, one thread, best of 5\n", mib);
    for (int streams = 1; streams <= 8; streams *= 2) {
        size_t per = bytes / (size_t)streams;
        double best = 1e30;
        v128_t acc = wasm_i32x4_splat(0);
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now_seconds();
            for (size_t off = 0; off + 64 <= per; off += 64)
                for (int s = 0; s < streams; s++) {
                    const uint8_t *p = buf + (size_t)s * per + off;
                    v128_t a = wasm_i32x4_add(wasm_v128_load(p), wasm_v128_load(p + 16));
                    v128_t b = wasm_i32x4_add(wasm_v128_load(p + 32), wasm_v128_load(p + 48));
                    acc = wasm_i32x4_add(acc, wasm_i32x4_add(a, b));
                }
            double t = now_seconds() - t0;
            best = t < best ? t : best;
        }
        printf("%d stream%s  %6.2f GB/s  (checksum %d)\n", streams, streams > 1 ? "s" : " ",
               (double)bytes / best / 1e9, wasm_i32x4_extract_lane(acc, 0));
    }
    free(buf);
    return 0;
}
