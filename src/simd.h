/* simd.h — one kernel source, two targets: WebAssembly SIMD128 intrinsics compiled natively
 * by emcc -msimd128, and the very same intrinsics through SIMDe (libsimde-dev) in the native
 * build, so tests, sanitizers and fuzzers exercise the code that ships. */
#ifndef WICK_SIMD_H
#define WICK_SIMD_H

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#else
#define SIMDE_WASM_SIMD128_ENABLE_NATIVE_ALIASES
#include <simde/wasm/simd128.h>
#endif

/* [sum of a, sum of b, sum of c, sum of d]: four i32x4 partial sums (of four blocks or rows)
 * side by side, by two transposes (the tile kernels, attention's q8_0_keys) */
static inline v128_t sum4_lanes(v128_t a, v128_t b, v128_t c, v128_t d) {
    v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}

/* e^x in 4 lanes, for x <= 0: Cephes expf (S. Moshier). x = k ln2 + r with |r| <= ln2/2 (ln 2
 * split in a short high part, so k·C1 is exact, and a correction); e^r = 1 + r + r²·P(r) with
 * Cephes' degree-5 P; 2^k assembled from its bits. Lanes below -86 (and NaN lanes) give 0:
 * e^-86 ≈ 4e-38 is just above FLT_MIN, so no result is subnormal (subnormals are exact but
 * take a slow path on x86). Only IEEE single-precision +, -, * and bit operations. */
static inline v128_t exp_f32x4(v128_t x) {
    const v128_t lowest = wasm_f32x4_splat(-86.0f);
    const v128_t round = wasm_f32x4_splat(12582912.0f); /* 1.5·2^23: adding it rounds to an integer */
    v128_t in_range = wasm_f32x4_ge(x, lowest);
    v128_t xc = wasm_f32x4_pmax(x, lowest);
    v128_t kr = wasm_f32x4_add(wasm_f32x4_mul(xc, wasm_f32x4_splat(1.44269504088896341f)), round);
    v128_t k = wasm_f32x4_sub(kr, round);
    v128_t r = wasm_f32x4_sub(wasm_f32x4_sub(xc, wasm_f32x4_mul(k, wasm_f32x4_splat(0.693359375f))),
                              wasm_f32x4_mul(k, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    v128_t e = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(p, wasm_f32x4_mul(r, r)), r),
                              wasm_f32x4_splat(1.0f));
    /* kr's bits are those of 1.5·2^23 plus k, whose low 9 bits are 0: adding the bias 127 and
     * shifting into the exponent field gives 2^k (k is in [-124, 0] here) */
    v128_t scale = wasm_i32x4_shl(wasm_i32x4_add(kr, wasm_i32x4_splat(127)), 23);
    return wasm_v128_and(wasm_f32x4_mul(e, scale), in_range);
}

#endif
