# wick — native build (gcc), WebAssembly builds (Debian's emscripten), tests, serving.
#   make          native + wasm builds (installs missing toolchain pieces first)
#   make test     all tests (node --test)
#   make serve    builds, prepares the default model, serves the page on 127.0.0.1
#   make dist     dist/: the folder for a static host, and the npm package's contents
#   make check-fresh   the README's commands on a clean debootstrapped Debian 12 (as root; tools/check-fresh.sh)
SHELL := /bin/bash
.DEFAULT_GOAL := all

ENGINE_SRC := src/errmsg.c src/gguf.c src/model.c src/forward.c src/context.c src/attention.c src/matmul.c src/recurrent.c src/ple.c src/altup.c src/rope.c src/encoder.c src/rerank.c src/state.c \
              src/pool.c src/quant.c src/quant_table.c src/kernels_simd.c \
              src/tokenizer.c src/unicode.c src/sampler.c src/grammar.c src/generate.c src/synth.c src/vision.c src/images.c src/image_slots.c src/wick.c
HEADERS := $(wildcard src/*.h)
TEST_PROGRAMS := test_kernels test_sampler test_tokenizer test_dequant test_load test_context test_state test_session test_grammar test_attention test_vision

CC ?= gcc
CFLAGS_COMMON := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -ffp-contract=off -Isrc
# SIMDe maps the wasm intrinsics onto SSE4.1 where the machine is x86-64 (plain SSE2 is ~4x slower)
NATIVE_ARCH := $(if $(filter x86_64,$(shell uname -m)),-msse4.1,)
NATIVE_CFLAGS := $(CFLAGS_COMMON) -O2 -g -pthread $(NATIVE_ARCH)
NATIVE_LIBS := -lm -pthread

EMCC := NODE_PATH=/usr/share/nodejs emcc
WASM_CFLAGS := $(CFLAGS_COMMON) -O3 -msimd128
WASM_EXPORT_NAMES := malloc free wick_buffer_alloc wick_buffer_free wick_last_error wick_model_load_gguf wick_model_load_gguf_parts wick_model_load_gguf_sparse wick_model_load_gguf_external wick_model_load_llama2c \
  wick_model_free wick_model_get_info wick_model_info_json wick_tokenize wick_detokenize wick_token_to_piece wick_token_is_eog \
  wick_ctx_default_params wick_ctx_new wick_ctx_free wick_ctx_last_error wick_eval wick_get_logits wick_n_past wick_n_ctx \
  wick_kv_trim wick_kv_shift wick_kv_bytes wick_state_bytes wick_state_snapshot wick_sample_simple wick_softmax \
  wick_gen_new wick_gen_free wick_gen_set wick_gen_set_grammar wick_grammar_check wick_gen_add_stop wick_gen_clear_stops wick_gen_set_bias \
  wick_gen_clear_bias wick_gen_start wick_gen_next wick_gen_token wick_gen_finish wick_gen_text \
  wick_gen_probs wick_gen_shifted wick_gen_reevaluated wick_gen_n_prompt_eval wick_state_save wick_state_load wick_gen_state_save wick_gen_state_load wick_gen_reusable \
  wick_model_pooling wick_embed wick_rerank_tokens wick_rerank wick_ctx_new_external wick_ctx_external_ops wick_ctx_external_logits wick_ctx_external_top_logits wick_gen_candidates wick_model_tensors_json wick_dequantize wick_row_dot \
  wick_vision_load wick_vision_free wick_vision_info_json wick_vision_layout wick_vision_encode wick_ctx_set_image wick_ctx_set_image_grid wick_ctx_drop_image wick_ctx_has_image
comma := ,
empty :=
space := $(empty) $(empty)
WASM_EXPORTS := $(subst $(space),$(comma),$(addprefix _,$(strip $(WASM_EXPORT_NAMES))))
# The page's builds (build/wasm/wick*.js) hold the engine and its C API (image encoders included);
# the Node CLI's (build/wasm/wick-cli*.js, wasm_glue/cli.mjs) add the CLI and synth.
WASM_LDFLAGS := -sMODULARIZE -sEXPORT_NAME=createWick -sALLOW_MEMORY_GROWTH -sMAXIMUM_MEMORY=4GB \
  -sINITIAL_MEMORY=32MB -sTOTAL_STACK=1MB -sEXPORTED_FUNCTIONS=$(WASM_EXPORTS) --js-library src/engine_library.js \
  -sEXPORTED_RUNTIME_METHODS=ccall,cwrap,UTF8ToString,stringToUTF8,lengthBytesUTF8 \
  -sFILESYSTEM=0 -sENVIRONMENT=web,worker,node
WASM_CLI_LDFLAGS := $(subst -sEXPORTED_FUNCTIONS=,-sEXPORTED_FUNCTIONS=_wick_cli_main$(comma),$(WASM_LDFLAGS)) \
  --js-library src/cli_library.js
# the engine's objects in the wasm libraries: all but the CLI's own (the CLI builds link their objects)
WASM_CLI_ONLY := synth
WASM_ENGINE_NAMES = $(filter-out $(WASM_CLI_ONLY),$(ENGINE_NAMES))
# those objects in one build's object folder: $(call wasm_cli_objs,obj-mt)
wasm_cli_objs = $(addprefix build/wasm/$(1)/,$(addsuffix .o,$(WASM_CLI_ONLY)))
# those objects in one build's object folder: $(call wasm_objs,obj-mt)
wasm_objs = $(addprefix build/wasm/$(1)/,$(addsuffix .o,$(WASM_ENGINE_NAMES)))
# pthread pool: as many workers as the page or CLI asks for (Module.wickThreads), made before main work starts
WASM_MT_FLAGS := -pthread '-sPTHREAD_POOL_SIZE=Module["wickThreads"]||4' -Wno-pthreads-mem-growth
WASM_TEST_FLAGS := -sALLOW_MEMORY_GROWTH -sMAXIMUM_MEMORY=4GB -sENVIRONMENT=node -sNODERAWFS=1 -sSINGLE_FILE --js-library src/engine_library.js

.PHONY: all native wasm setup test test-native serve dist clean bench bench-kernels bench-streams
all: native wasm

# ---- toolchain: installed on demand (Debian 12, as root) ----
build/.setup-stamp: tools/setup.sh
	@bash tools/setup.sh
	@mkdir -p build && touch $@
setup: build/.setup-stamp

# ---- the engine as a static library per build flavour: each source compiled once, every
# program (CLI, test programs, benchmarks) linked against it ----
ENGINE_NAMES := $(notdir $(ENGINE_SRC:.c=))
EMAR := NODE_PATH=/usr/share/nodejs emar
NATIVE_LIB := build/native/libwick.a
WASM_LIB := build/wasm/libwick.a
WASM_MT_LIB := build/wasm/libwick-mt.a

build/native/obj/%.o: src/%.c $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(CC) $(NATIVE_CFLAGS) -c -o $@ $<

# The engine's cold code (file parsing and loading, the tokenizer, synth, the C API's bookkeeping) is
# compiled for size in the wasm builds: what the page downloads shrinks, and no token waits on it.
# The kernels, the forward pass, the sampler, the grammar matcher and the generation loop stay at -O3;
# gemma3n's AltUp and Laurel steps (altup.c) are elementwise beside their matrix products (matmul.c,
# at -O3): a few percent of a token's time, so they are compiled for size too. quant.c is the scalar
# side of the types (reference dots, quantizers, whole-row conversions): its hot work is a row of the
# embedding table per token and a tile of F16 rows per batch, 25.6 KB gzip of the page at -O3 and no
# slower measured at -Os (bge-small F16 embedding, wasm relaxed: 334 → 370 tokens/s, a shared machine).
# rerank.c (a pair's prompt and the classification head, whose products go through matmul.c) and
# image_slots.c (the bookkeeping of an image's rows) are cold too: 0.4 KB gzip of each build.
WASM_SIZE_OPT := gguf model tokenizer unicode synth wick altup quant state encoder ple vision images rerank image_slots
wasm_opt = $(if $(filter $(basename $(notdir $@)),$(WASM_SIZE_OPT)),-Os)

build/wasm/obj/%.o: src/%.c $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC) $(WASM_CFLAGS) $(wasm_opt) -DWICK_NO_THREADS -c -o $@ $<

build/wasm/obj-mt/%.o: src/%.c $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC) $(WASM_CFLAGS) $(wasm_opt) -pthread -c -o $@ $<

$(NATIVE_LIB): $(addprefix build/native/obj/,$(addsuffix .o,$(ENGINE_NAMES)))
	rm -f $@ && ar rcs $@ $^
$(WASM_LIB): $(call wasm_objs,obj)
	rm -f $@ && $(EMAR) rcs $@ $^
$(WASM_MT_LIB): $(call wasm_objs,obj-mt)
	rm -f $@ && $(EMAR) rcs $@ $^

# the wasm engines export C API functions that nothing in them calls: the whole archive is linked
WHOLE = -Wl,--whole-archive $(1) -Wl,--no-whole-archive

# the relaxed-SIMD builds (build/wasm/wick-relaxed.js, wick-mt-relaxed.js): RELAXED_BUILDS
include mk/relaxed.mk

# ---- native ----
native: build/native/wick build/native/wick-nofold $(addprefix build/native/,$(TEST_PROGRAMS))

build/native/wick: src/cli.c $(NATIVE_LIB) $(HEADERS)
	$(CC) $(NATIVE_CFLAGS) -o $@ src/cli.c $(NATIVE_LIB) $(NATIVE_LIBS)

# the CLI with attention's F16 rebias never folded into the query (src/attention.c, fold_query):
# its logits must equal build/native/wick's (tests/consistency.test.mjs)
build/native/wick-nofold: src/cli.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	$(CC) $(NATIVE_CFLAGS) -DWICK_NO_FOLD -o $@ src/cli.c $(ENGINE_SRC) $(NATIVE_LIBS)

build/native/test_%: tests/test_%.c $(NATIVE_LIB) $(HEADERS)
	$(CC) $(NATIVE_CFLAGS) -o $@ $< $(NATIVE_LIB) $(NATIVE_LIBS)

# ---- WebAssembly: single-threaded and pthreads builds of the same sources ----
wasm: build/wasm/package.json build/wasm/wick.js build/wasm/wick-mt.js build/wasm/wick-cli.js build/wasm/wick-cli-mt.js \
  $(addprefix build/wasm/,$(addsuffix .js,$(TEST_PROGRAMS))) $(RELAXED_BUILDS) build/wick-shell.json

# Emscripten's output is a CommonJS script; the repository's package.json says "module"
build/wasm/package.json:
	@mkdir -p $(@D)
	echo '{"type":"commonjs"}' > $@

# (the page's builds link the objects themselves: emcc 3.1.6 given only an archive links none of it)
build/wasm/wick.js: $(call wasm_objs,obj) src/engine_library.js
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ $(filter %.o,$^) $(WASM_LDFLAGS)

build/wasm/wick-mt.js: $(call wasm_objs,obj-mt) src/engine_library.js
	$(EMCC) $(WASM_CFLAGS) $(WASM_MT_FLAGS) -o $@ $(filter %.o,$^) $(WASM_LDFLAGS)

build/wasm/wick-cli.js: src/cli.c src/cli_library.js src/engine_library.js $(call wasm_cli_objs,obj) $(WASM_LIB) $(HEADERS)
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ src/cli.c $(call wasm_cli_objs,obj) $(call WHOLE,$(WASM_LIB)) $(WASM_CLI_LDFLAGS)

build/wasm/wick-cli-mt.js: src/cli.c src/cli_library.js src/engine_library.js $(call wasm_cli_objs,obj-mt) $(WASM_MT_LIB) $(HEADERS)
	$(EMCC) $(WASM_CFLAGS) $(WASM_MT_FLAGS) -o $@ src/cli.c $(call wasm_cli_objs,obj-mt) $(call WHOLE,$(WASM_MT_LIB)) $(WASM_CLI_LDFLAGS)

build/wasm/test_%.js: tests/test_%.c $(WASM_LIB) $(HEADERS) src/engine_library.js
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(WASM_LIB) $(WASM_TEST_FLAGS)

# the WebGPU backend: its module and WGSL shaders, a folder beside the glue (gpu/ in dist/ too)
GPU_FILES := $(wildcard wasm_glue/gpu/*.mjs wasm_glue/gpu/*.wgsl)

# The app shell that web/coi-sw.js keeps for offline use: the page's files, the glue, both wasm
# builds and the chat-template renderer, with a version that changes with any of them.
SHELL_FILES := $(filter-out web/coi-sw.js,$(wildcard web/*.html web/*.js web/*.css web/*.webmanifest web/icons/*.png)) \
  $(filter-out wasm_glue/cli.mjs,$(wildcard wasm_glue/*.mjs wasm_glue/*.js)) $(GPU_FILES) $(wildcard node_modules/@huggingface/jinja/dist/index.js) \
  $(wildcard node_modules/pdfjs-dist/build/pdf.min.mjs node_modules/pdfjs-dist/build/pdf.worker.min.mjs)
SHELL_BUILDS := $(foreach b,wick wick-relaxed,build/wasm/$(b).js build/wasm/$(b).wasm) \
  $(foreach b,wick-mt wick-mt-relaxed,build/wasm/$(b).js build/wasm/$(b).wasm build/wasm/$(b).worker.js)
build/wick-shell.json: tools/shell-manifest.mjs $(SHELL_FILES) build/wasm/wick.js build/wasm/wick-mt.js build/wasm/wick-relaxed.js build/wasm/wick-mt-relaxed.js
	node tools/shell-manifest.mjs $@ $(SHELL_FILES) $(SHELL_BUILDS)

# ---- tests ----
# node-llama-cpp's prebuilt llama.cpp is the tests' reference. On a Xeon with AMX its loader picks the
# sapphirerapids CPU variant, whose AMX buffer type takes F16 and Q8_0 weights into a matmul of its own
# (ggml/src/ggml-cpu/amx/mmq.cpp in this bundle) that offsets a 2-D weight by the activation's batch
# index: a weight times 3-D activations (gemma3n's AltUp streams) reads past the weight. A CI run on an
# Intel Xeon failed exactly there (gemma3n logits 78-98% of a row's stddev from wick's, which the AVX-512
# path matches) and on the Q8_0 bert reranker. Without that file the loader takes zen4 (the same AVX-512
# set without AMX): one reference on every x86 machine here (tests/llama-native.mjs checks it is gone).
LLAMA_AMX_VARIANT := node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-sapphirerapids.so
build/.npm-stamp: package.json package-lock.json | build/.setup-stamp
	npm ci --no-audit --no-fund
	rm -f $(LLAMA_AMX_VARIANT)
	@touch $@

test: all build/.npm-stamp
	node --test --test-concurrency=2 tests/

# ---- the page ----
PORT ?= 8080
serve: wasm
	bash tools/prepare-model.sh
	node tools/serve.mjs --port $(PORT)

# ---- a clean system: setup, build and a test of every toolchain on a minimal Debian 12 root ----
.PHONY: check-fresh
check-fresh: build/.setup-stamp
	bash tools/check-fresh.sh

# ---- dist/: a folder to copy to any static host, and the npm package's contents ----
# One flat folder: the glue, the worker, <wick-chat> and its modules, the builds in wasm/ (with a
# package.json that keeps Emscripten's CommonJS loaders CommonJS under Node), and
# @huggingface/jinja's ES module in jinja/. The modules' relative paths are rewritten from the
# repository's layout to the folder's: ../build/wasm/ → ./wasm/, ../wasm_glue/ → ./,
# ../node_modules/@huggingface/jinja/dist/ → ./jinja/.   make dist [DIST_DIR=dir]
DIST_DIR ?= dist
DIST_MODULES := $(filter-out wasm_glue/cli.mjs,$(wildcard wasm_glue/*.mjs wasm_glue/*.js)) \
  web/wick-chat.js web/images.js web/sessions.js web/tool-cards.js web/coi.js web/util.js web/coi-sw.js web/engine-worker.js
DIST_TYPES := $(wildcard wasm_glue/*.d.ts)
JINJA_DIR := node_modules/@huggingface/jinja
DIST_PATHS := -e 's|\.\./build/wick-shell\.json|./wick-shell.json|g' -e 's|\.\./build/wasm/|./wasm/|g' -e 's|\.\./wasm_glue/|./|g' -e 's|\.\./node_modules/@huggingface/jinja/dist/|./jinja/|g'

dist: build/wasm/package.json build/wasm/wick.js build/wasm/wick-mt.js $(DIST_TYPES) $(DIST_MODULES) $(GPU_FILES) $(JINJA_DIR)/dist/index.js
	rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR)/wasm $(DIST_DIR)/jinja $(DIST_DIR)/gpu
	cp $(GPU_FILES) $(DIST_DIR)/gpu/
	cp build/wasm/package.json $$(ls build/wasm/wick*.js build/wasm/wick*.wasm | grep -v /wick-cli) $(DIST_DIR)/wasm/
	for f in $(DIST_MODULES) $(DIST_TYPES); do sed $(DIST_PATHS) $$f > $(DIST_DIR)/$${f##*/}; done
	cp $(JINJA_DIR)/dist/index.js $(DIST_DIR)/jinja/index.js && cp $(JINJA_DIR)/LICENSE $(DIST_DIR)/jinja/LICENSE
	node tools/shell-manifest.mjs $(DIST_DIR)/wick-shell.json $$(ls $(DIST_DIR)/*.js $(DIST_DIR)/*.mjs | grep -v '/coi-sw\.js$$') \
	  $(DIST_DIR)/wasm/wick*.js $(DIST_DIR)/wasm/wick*.wasm $(DIST_DIR)/gpu/* $(DIST_DIR)/jinja/index.js
	@if grep -nE "\.\./(build|wasm_glue|web|node_modules)/" $(DIST_DIR)/*.js $(DIST_DIR)/*.mjs; then \
	  echo "dist: the paths above still point into the repository" >&2; exit 1; fi

$(JINJA_DIR)/dist/index.js:
	@echo "$@ is missing: run npm ci" >&2; exit 1

bench: native wasm build/.npm-stamp
	npm run bench

# kernel and memory micro-benchmarks, native (SIMDe) and wasm side by side (by hand: BENCHMARKS.md)
#   make bench-kernels [KERNEL_TYPES="q4_0 q6_K"]    make bench-streams
build/native/bench_%: bench/bench_%.c $(NATIVE_LIB) $(HEADERS)
	$(CC) $(NATIVE_CFLAGS) -o $@ $< $(NATIVE_LIB) $(NATIVE_LIBS)

build/wasm/bench_%.js: bench/bench_%.c $(WASM_LIB) $(HEADERS)
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(WASM_LIB) $(WASM_TEST_FLAGS)

# native llama.cpp's embedding throughput in C (tools/bench.mjs): node-llama-cpp's prebuilt libllama,
# compiled against the headers of the source it was built from (its bundle; llama.cpp's gguf.h
# would shadow wick's, so no -Isrc here)
LLAMA_BINS := node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
LLAMA_HEADERS := include/llama.h ggml/include/ggml.h ggml/include/ggml-cpu.h ggml/include/ggml-backend.h \
  ggml/include/ggml-alloc.h ggml/include/ggml-opt.h ggml/include/gguf.h
build/llama-headers/llama.h: | build/.npm-stamp
	mkdir -p build/llama-headers
	node --input-type=module -e "import fs from 'node:fs'; import { readLlamaBundle } from './tools/llama-bundle.mjs'; \
	  const paths = '$(LLAMA_HEADERS)'.split(' '); readLlamaBundle(paths).forEach((b, i) => fs.writeFileSync('build/llama-headers/' + paths[i].split('/').pop(), b));"

# and its prefill and decode speed in C (tools/bench-peers.mjs's native column)
build/native/bench_embed_llama build/native/bench_decode_llama: build/native/bench_%_llama: bench/bench_%_llama.c bench/llama_bench.h build/llama-headers/llama.h
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Ibuild/llama-headers -o $@ $< \
	  -L$(LLAMA_BINS) -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,$(abspath $(LLAMA_BINS))

bench-kernels: build/native/bench_kernels build/wasm/bench_kernels.js build/wasm/bench_kernels-relaxed.js build/wasm/package.json
	build/native/bench_kernels $(KERNEL_TYPES)
	node build/wasm/bench_kernels.js $(KERNEL_TYPES)
	node --experimental-wasm-relaxed-simd build/wasm/bench_kernels-relaxed.js $(KERNEL_TYPES)

bench-streams: build/native/bench_streams build/wasm/bench_streams.js build/wasm/package.json
	build/native/bench_streams
	node build/wasm/bench_streams.js

# never through a mount of check-fresh's root (its /dev is the machine's): an interrupted check may leave one
clean:
	@if grep -q " $(abspath build/fresh/root)/" /proc/mounts; then \
	  echo "clean: build/fresh/root still has mounts (an interrupted make check-fresh): umount -R -l them first" >&2; exit 1; fi
	rm -rf build dist

# ---- hardening: fuzzing, sanitizers, valgrind (targets fuzz, test-asan, test-valgrind) ----
-include mk/hardening.mk
# ---- llama.cpp's llama-server, built once from node-llama-cpp's bundled source (Wick.connect's tests) ----
-include mk/llama-server.mk
# ---- llama.cpp's mtmd (image encoders) as the vision tests' reference, on the libraries of that build ----
-include mk/mtmd-ref.mk
# ---- llama.cpp's mtmd encode time, the vision section of npm run bench ----
-include mk/bench-mtmd.mk
