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

#endif
