# wick — native build (gcc), WebAssembly builds (Debian's emscripten), tests, serving.
#   make          native + wasm builds (installs missing toolchain pieces first)
#   make test     all tests (node --test)
#   make serve    builds, prepares the default model, serves the page on 127.0.0.1
SHELL := /bin/bash
.DEFAULT_GOAL := all

ENGINE_SRC := src/gguf.c src/model.c src/forward.c src/pool.c src/quant.c src/kernels_simd.c \
              src/tokenizer.c src/unicode.c src/sampler.c src/wick.c
HEADERS := $(wildcard src/*.h)
TEST_PROGRAMS := test_kernels test_sampler test_tokenizer test_dequant test_load

CC ?= gcc
CFLAGS_COMMON := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -ffp-contract=off -Isrc
NATIVE_CFLAGS := $(CFLAGS_COMMON) -O2 -g -pthread
NATIVE_LIBS := -lm -pthread

EMCC := NODE_PATH=/usr/share/nodejs emcc
WASM_CFLAGS := $(CFLAGS_COMMON) -O3 -msimd128
WASM_EXPORTS := _malloc,_free,_wick_cli_main,_wick_last_error,_wick_model_load_gguf,_wick_model_load_llama2c,\
_wick_model_free,_wick_model_get_info,_wick_model_info_json,_wick_tokenize,_wick_token_to_piece,\
_wick_token_is_eog,_wick_ctx_default_params,_wick_ctx_new,_wick_ctx_free,_wick_eval,_wick_get_logits,\
_wick_n_past,_wick_n_ctx,_wick_kv_trim,_wick_kv_shift,_wick_kv_bytes,_wick_sample_simple
WASM_LDFLAGS := -sMODULARIZE -sEXPORT_NAME=createWick -sALLOW_MEMORY_GROWTH -sMAXIMUM_MEMORY=4GB \
  -sINITIAL_MEMORY=32MB -sTOTAL_STACK=1MB -sEXPORTED_FUNCTIONS=$(WASM_EXPORTS) \
  -sEXPORTED_RUNTIME_METHODS=ccall,cwrap,UTF8ToString,stringToUTF8,lengthBytesUTF8,FS,NODEFS \
  -lnodefs.js -sFORCE_FILESYSTEM -sENVIRONMENT=web,worker,node
# pthread pool: as many workers as the page or CLI asks for (Module.wickThreads), made before main work starts
WASM_MT_FLAGS := -pthread '-sPTHREAD_POOL_SIZE=Module["wickThreads"]||4' -Wno-pthreads-mem-growth
WASM_TEST_FLAGS := -sALLOW_MEMORY_GROWTH -sMAXIMUM_MEMORY=4GB -sENVIRONMENT=node -sNODERAWFS=1 -sSINGLE_FILE

.PHONY: all native wasm setup test test-native serve clean bench
all: native wasm

# ---- toolchain: installed on demand (Debian 12, as root) ----
build/.setup-stamp:
	@bash tools/setup.sh
	@mkdir -p build && touch $@
setup: build/.setup-stamp

# ---- native ----
native: build/native/wick $(addprefix build/native/,$(TEST_PROGRAMS))

build/native/wick: src/cli.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(CC) $(NATIVE_CFLAGS) -o $@ src/cli.c $(ENGINE_SRC) $(NATIVE_LIBS)

build/native/test_%: tests/test_%.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(CC) $(NATIVE_CFLAGS) -o $@ $< $(ENGINE_SRC) $(NATIVE_LIBS)

# ---- WebAssembly: single-threaded and pthreads builds of the same sources ----
wasm: build/wasm/wick.js build/wasm/wick-mt.js $(addprefix build/wasm/,$(addsuffix .js,$(TEST_PROGRAMS)))

build/wasm/wick.js: src/cli.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ src/cli.c $(ENGINE_SRC) $(WASM_LDFLAGS)

build/wasm/wick-mt.js: src/cli.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC) $(WASM_CFLAGS) $(WASM_MT_FLAGS) -o $@ src/cli.c $(ENGINE_SRC) $(WASM_LDFLAGS)

build/wasm/test_%.js: tests/test_%.c $(ENGINE_SRC) $(HEADERS) | build/.setup-stamp
	@mkdir -p $(@D)
	$(EMCC) $(WASM_CFLAGS) -DWICK_NO_THREADS -o $@ $< $(ENGINE_SRC) $(WASM_TEST_FLAGS)

# ---- tests ----
node_modules/.package-lock.json: package.json package-lock.json | build/.setup-stamp
	npm ci --no-audit --no-fund
	@touch $@

test: all node_modules/.package-lock.json
	node --test --test-concurrency=2 tests/

# ---- the page ----
serve: wasm
	bash tools/prepare-model.sh
	node tools/serve.mjs

clean:
	rm -rf build
