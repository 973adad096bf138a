#!/usr/bin/env bash
# Installs what the builds, the tests (make test, make test-asan, make fuzz, make fuzz-coverage)
# and make serve need, when it is missing (Debian 12 or a derivative, as root). Each line of
# the table below names a file that some step of the project runs or reads, and the Debian
# package that holds it: a file is checked, not only a package's main program (clang-19 holds
# clang but not llvm-ar, which the relaxed builds run and which comes with llvm-19).
# Node.js 20 or later is a prerequisite the user brings (Debian 12's own nodejs is 18).
# Idempotent: does nothing when everything is present.
set -euo pipefail

NODE_MAJOR_NEEDED=20
# file needed                                         package        what uses it
FILES=(
  "/usr/bin/gcc                                       gcc            the native build"
  "/usr/bin/g++                                       g++            llama-server (mk/llama-server.mk)"
  "/usr/bin/make                                      make           every build"
  "/usr/bin/cmake                                     cmake          llama-server"
  "/usr/bin/git                                       git            llama.cpp's bundled source (tools/llama-bundle.mjs)"
  "/usr/bin/emcc                                      emscripten     the wasm builds"
  "/usr/bin/python3                                   python3        emcc, emar"
  "/usr/include/simde/wasm/simd128.h                  libsimde-dev   the native build of the SIMD kernels"
  "/usr/share/unicode/UnicodeData.txt                 unicode-data   tools/gen_unicode_tables.mjs"
  "/usr/bin/clang                                     clang          make fuzz, make test-asan"
  "/usr/bin/llvm-profdata                             llvm           make fuzz-coverage"
  "/usr/bin/llvm-cov                                  llvm           make fuzz-coverage"
  "/usr/bin/valgrind                                  valgrind       make test-valgrind"
  "/usr/lib/llvm-19/bin/clang                         clang-19       the relaxed-SIMD builds (mk/relaxed.mk)"
  "/usr/lib/llvm-19/bin/wasm-ld                       lld-19         the relaxed-SIMD builds"
  "/usr/lib/llvm-19/bin/llvm-ar                       llvm-19        the relaxed-SIMD libraries (emar)"
  "/usr/lib/llvm-19/bin/llvm-nm                       llvm-19        the relaxed-SIMD links (emcc)"
  "/usr/lib/llvm-19/bin/llvm-objcopy                  llvm-19        the relaxed-SIMD builds' name stripping"
  "/usr/lib/llvm-19/bin/llvm-objdump                  llvm-19        npm run insns (tools/kernel-insns.mjs), its test"
  "/usr/bin/chromium                                  chromium       the browser tests, bench:peers"
  "/usr/lib/chromium/vk_swiftshader_icd.json          chromium       the WebGPU tests under Node"
  "/usr/bin/firefox-esr                               firefox-esr    the Firefox page tests"
  "/usr/bin/WebKitWebDriver                           webkit2gtk-driver the WebKitGTK page tests"
  "/usr/bin/Xvfb                                      xvfb           a display for WebKitGTK's MiniBrowser"
  "/usr/bin/xauth                                     xauth          xvfb-run"
  "/usr/sbin/debootstrap                              debootstrap    make check-fresh's clean Debian root"
)
# files found by a pattern (their path holds a version)
GLOBS=(
  "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a   libclang-rt-14-dev   make fuzz"
  "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a     libclang-rt-14-dev   make test-asan"
  "/usr/lib/*/libvulkan.so.1                                          libvulkan1           the WebGPU tests (Dawn loads SwiftShader through it)"
)
[ "$(uname -m)" = x86_64 ] || GLOBS=("${GLOBS[@]//x86_64/*}")

# Node.js: the tests use node --test options and APIs of Node 20
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if command -v node >/dev/null; then
  if [ "$(node_major)" -lt "$NODE_MAJOR_NEEDED" ]; then
    echo "setup: wick needs Node.js $NODE_MAJOR_NEEDED or later, and the node on PATH ($(command -v node)) is $(node --version 2>/dev/null || echo 'unknown'): install Node.js $NODE_MAJOR_NEEDED+ (nodejs.org or NodeSource) first" >&2
    exit 1
  fi
  command -v npm >/dev/null || { echo "setup: node is here but npm is not: install npm for $(command -v node) (it ships with Node.js's own packages)" >&2; exit 1; }
fi

need=()
add() { case " ${need[*]} " in *" $1 "*) ;; *) need+=("$1") ;; esac; }
for row in "${FILES[@]}"; do
  read -r file pkg _ <<<"$row"
  [ -e "$file" ] || add "$pkg"
done
for row in "${GLOBS[@]}"; do
  read -r pattern pkg _ <<<"$row"
  compgen -G "$pattern" >/dev/null || add "$pkg"
done
if ! command -v node >/dev/null; then
  # a distribution whose own Node.js is new enough (Debian 13 has 20) may install it here
  candidate=$(apt-cache policy nodejs 2>/dev/null | sed -n 's/^ *Candidate: *\([0-9]*\).*/\1/p')
  if [ -n "$candidate" ] && [ "$candidate" -ge "$NODE_MAJOR_NEEDED" ] 2>/dev/null; then
    add nodejs; add npm
  else
    echo "setup: wick needs Node.js $NODE_MAJOR_NEEDED or later and there is no node on PATH (this system's own package is ${candidate:-unknown}, too old or absent): install Node.js $NODE_MAJOR_NEEDED+ (nodejs.org or NodeSource) first" >&2
    exit 1
  fi
fi

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
# what was installed must now be here: a package that no longer holds a file is said by name
missing=()
for row in "${FILES[@]}"; do read -r file pkg _ <<<"$row"; [ -e "$file" ] || missing+=("$file ($pkg)"); done
for row in "${GLOBS[@]}"; do read -r pattern pkg _ <<<"$row"; compgen -G "$pattern" >/dev/null || missing+=("$pattern ($pkg)"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: still missing after apt-get install: ${missing[*]}" >&2
  exit 1
fi
echo "setup: done"
