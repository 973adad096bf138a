#!/usr/bin/env bash
# Installs what the builds and tests need, when it is missing (Debian 12, as root):
# gcc/make, emscripten, libsimde-dev, clang (fuzzing), clang-19 + lld-19 (the relaxed-SIMD wasm
# builds), Node.js + npm, chromium (browser tests),
# libvulkan1 (the WebGPU tests: the npm package webgpu's Dawn loads Chromium's SwiftShader Vulkan driver through it),
# g++, cmake and git (llama.cpp's llama-server, built once from node-llama-cpp's bundled source for Wick.connect's tests).
# Idempotent: does nothing when everything is present.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v g++ >/dev/null || need+=(g++)
command -v cmake >/dev/null || need+=(cmake)
command -v git >/dev/null || need+=(git)
command -v emcc >/dev/null || need+=(emscripten)
[ -f /usr/include/simde/wasm/simd128.h ] || need+=(libsimde-dev)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[ -d /usr/share/unicode ] || need+=(unicode-data)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v clang >/dev/null || need+=(clang)
compgen -G '/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a' >/dev/null || need+=(libclang-rt-14-dev)
command -v valgrind >/dev/null || need+=(valgrind)
compgen -G '/usr/lib/*/libvulkan.so.1' >/dev/null || need+=(libvulkan1)
# the relaxed-SIMD wasm builds (mk/relaxed.mk): LLVM 19's clang and wasm-ld under emcc
[ -x /usr/lib/llvm-19/bin/clang ] || need+=(clang-19)
[ -x /usr/lib/llvm-19/bin/wasm-ld ] || need+=(lld-19)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "setup: installing ${need[*]}"
if [ "$(id -u)" != 0 ]; then
  echo "setup: missing ${need[*]}; run as root (or: sudo apt-get install ${need[*]})" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "setup: missing ${need[*]} and no apt-get here: install them with your system's package manager" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "setup: done"
