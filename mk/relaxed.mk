# mk/relaxed.mk — the relaxed-SIMD wasm builds: the same sources as build/wasm/wick{,-mt}.js,
# compiled with -mrelaxed-simd, so that the integer dot products of the 4-, 5- and 6-bit weight
# types take i16x8.relaxed_dot_i8x16_i7x16_s (src/kernels_simd.c, WICK_RELAXED). Included by
# the Makefile. Browsers without relaxed SIMD (Safari today) get the plain builds: the glue
# chooses at load by WebAssembly.validate of a tiny module (wasm_glue/wick.mjs).
#
# Emscripten 3.1.6's own LLVM predates relaxed SIMD, and Debian's binaryen 108, which emcc runs
# after linking (wasm-emscripten-finalize, wasm-opt), writes relaxed instructions with their
# pre-standard opcodes: the module no longer validates. So emcc is pointed at Debian's LLVM 19
# (clang-19, lld-19; installed by tools/setup.sh) and binaryen is kept out of the link:
#   - EMCC_READ_METADATA=python: emcc reads the module's metadata itself instead of through
#     wasm-emscripten-finalize, which it then skips when nothing needs rewriting;
#   - -sWASM_BIGINT: no JS legalization of i64 and no dynCalls (both would need finalize);
#   - link at -O1: no wasm-opt pass (LLVM has optimized every object at -O3 already), and
#     the engines' function names (a name section wasm-opt would have dropped) are removed after
#     the link with llvm-objcopy (not wasm-ld's --strip-all: emcc reads the target_features section
#     that it would drop too).
# The results are bit-identical to the plain builds (exact integer sums; tests/relaxed.test.mjs).

EMCC_RELAXED := EM_LLVM_ROOT=/usr/lib/llvm-19/bin EM_LLVM_ADD_VERSION= EM_CLANG_ADD_VERSION= EMCC_READ_METADATA=python NODE_PATH=/usr/share/nodejs emcc
EMAR_RELAXED := EM_LLVM_ROOT=/usr/lib/llvm-19/bin EM_LLVM_ADD_VERSION= EM_CLANG_ADD_VERSION= NODE_PATH=/usr/share/nodejs emar
RELAXED_CFLAGS := $(WASM_CFLAGS) -mrelaxed-simd
RELAXED_LINK := -O1 -sWASM_BIGINT
WASM_RX_LIB := build/wasm/libwick-rx.a
WASM_MT_RX_LIB := build/wasm/libwick-mt-rx.a

build/wasm/obj-rx/%.o: src/%.c $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) $(wasm_opt) -DWICK_NO_THREADS -c -o $@ $<

build/wasm/obj-mt-rx/%.o: src/%.c $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) $(wasm_opt) -pthread -c -o $@ $<

$(WASM_RX_LIB): $(call wasm_objs,obj-rx)
	rm -f $@ && $(EMAR_RELAXED) rcs $@ $^
$(WASM_MT_RX_LIB): $(call wasm_objs,obj-mt-rx)
	rm -f $@ && $(EMAR_RELAXED) rcs $@ $^

# What emcc does to the plain builds' loaders after an optimizing link, done here by hand (the
# -O1 link skips it): Emscripten's own acorn-optimizer drops unused JS and minifies whitespace.
RELAXED_STRIP_NAMES = /usr/lib/llvm-19/bin/llvm-objcopy --remove-section=name $(@:.js=.wasm)
RELAXED_MINIFY_JS = NODE_PATH=/usr/share/nodejs node "$$(dirname "$$(readlink -f "$$(command -v emcc)")")/tools/acorn-optimizer.js" \
  $@ JSDCE minifyWhitespace > $@.min && mv $@.min $@

build/wasm/wick-relaxed.js: $(call wasm_objs,obj-rx) src/engine_library.js
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) -DWICK_NO_THREADS -o $@ $(filter %.o,$^) $(WASM_LDFLAGS) $(RELAXED_LINK)
	$(RELAXED_STRIP_NAMES)
	$(RELAXED_MINIFY_JS)

build/wasm/wick-mt-relaxed.js: $(call wasm_objs,obj-mt-rx) src/engine_library.js
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) $(WASM_MT_FLAGS) -o $@ $(filter %.o,$^) $(WASM_LDFLAGS) $(RELAXED_LINK)
	$(RELAXED_STRIP_NAMES)
	$(RELAXED_MINIFY_JS)

# the Node CLI's relaxed builds (WICK_WASM_RELAXED=1 node wasm_glue/cli.mjs): with the CLI and synth
build/wasm/wick-cli-relaxed.js: src/cli.c src/cli_library.js src/engine_library.js $(call wasm_cli_objs,obj-rx) $(WASM_RX_LIB) $(HEADERS)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) -DWICK_NO_THREADS -o $@ src/cli.c $(call wasm_cli_objs,obj-rx) $(call WHOLE,$(WASM_RX_LIB)) $(WASM_CLI_LDFLAGS) $(RELAXED_LINK)
	$(RELAXED_STRIP_NAMES)
	$(RELAXED_MINIFY_JS)

build/wasm/wick-cli-mt-relaxed.js: src/cli.c src/cli_library.js src/engine_library.js $(call wasm_cli_objs,obj-mt-rx) $(WASM_MT_RX_LIB) $(HEADERS)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) $(WASM_MT_FLAGS) -o $@ src/cli.c $(call wasm_cli_objs,obj-mt-rx) $(call WHOLE,$(WASM_MT_RX_LIB)) $(WASM_CLI_LDFLAGS) $(RELAXED_LINK)
	$(RELAXED_STRIP_NAMES)
	$(RELAXED_MINIFY_JS)

# the kernel test in the relaxed build (run with node --experimental-wasm-relaxed-simd)
build/wasm/test_kernels-relaxed.js: tests/test_kernels.c $(WASM_RX_LIB) $(HEADERS)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(WASM_RX_LIB) $(WASM_TEST_FLAGS) $(RELAXED_LINK)

RELAXED_BUILDS := build/wasm/wick-relaxed.js build/wasm/wick-mt-relaxed.js build/wasm/wick-cli-relaxed.js \
  build/wasm/wick-cli-mt-relaxed.js build/wasm/test_kernels-relaxed.js

# the same kernel test natively, with the relaxed instruction emulated (WICK_RELAXED_EMULATE)
build/native/test_kernels-relaxed: tests/test_kernels.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(CC) $(NATIVE_CFLAGS) -DWICK_RELAXED_EMULATE -o $@ $< $(ENGINE_SRC) $(NATIVE_LIBS)

RELAXED_BUILDS += build/native/test_kernels-relaxed

# the native CLI with the relaxed paths (emulated): its logits must equal build/native/wick's
build/native/wick-relaxed: src/cli.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(CC) $(NATIVE_CFLAGS) -DWICK_RELAXED_EMULATE -o $@ src/cli.c $(ENGINE_SRC) $(NATIVE_LIBS)

RELAXED_BUILDS += build/native/wick-relaxed

# the kernel micro-benchmark in the relaxed build, beside the plain one (make bench-kernels)
build/wasm/bench_kernels-relaxed.js: bench/bench_kernels.c $(WASM_RX_LIB) $(HEADERS)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(WASM_RX_LIB) $(WASM_TEST_FLAGS) $(RELAXED_LINK)

# the long-context attention micro-benchmark in the relaxed build (issue 33; by hand: BENCHMARKS.md)
build/wasm/bench_attention-relaxed.js: bench/bench_attention.c $(WASM_RX_LIB) $(HEADERS)
	$(EMCC_RELAXED) $(RELAXED_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(WASM_RX_LIB) $(WASM_TEST_FLAGS) $(RELAXED_LINK)
