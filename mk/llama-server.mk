# mk/llama-server.mk — llama.cpp's llama-server, built once from the llama.cpp source that
# node-llama-cpp ships (node_modules/node-llama-cpp/llama/gitRelease.bundle), for the tests of
# Wick.connect (tests/connect.test.mjs). Included by the Makefile.
#   make llama-server    clones the bundle into build/llama.cpp-src and builds only the
#                        llama-server target (Release, CPU backend, no HTTPS, no web UI, no
#                        downloads) into build/llama-server/bin/llama-server
# `make test` depends on it, so CI builds it; afterwards it is reused (the binary is a file
# target, no prerequisite but the clone). Needs cmake and g++ (Debian: cmake, g++).
# It costs about 12.6 CPU-minutes (user+sys): 13.5 minutes with -j2 on a busy 2-core machine, about
# 7 on two idle cores (LLAMA_SERVER_JOBS, default: all cores). The binary is 14 MB, the tree 300 MB.

LLAMA_BUNDLE := node_modules/node-llama-cpp/llama/gitRelease.bundle
LLAMA_SRC := build/llama.cpp-src
LLAMA_SERVER_DIR := build/llama-server
LLAMA_SERVER := $(LLAMA_SERVER_DIR)/bin/llama-server
LLAMA_SERVER_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Only what llama-server needs: no tests, examples or other tools' targets are built (the tools
# directory must be configured for the server's subdirectory, but only its target is compiled).
#  - GGML_NATIVE=OFF: no -march=native (a cached build/ may move to another runner); on x86-64
#    ggml then targets AVX2, FMA, F16C and BMI2, which every CI runner has
#  - LLAMA_OPENSSL=OFF: the server listens on 127.0.0.1 over plain HTTP
#  - LLAMA_BUILD_UI=OFF, LLAMA_USE_PREBUILT_UI=OFF: no npm build and no download of the web UI
#  - GGML_CCACHE=OFF: no surprise from a ccache elsewhere on the machine
LLAMA_CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_LLGUIDANCE=OFF -DLLAMA_TOOLS_INSTALL=OFF

.PHONY: llama-server
llama-server: $(LLAMA_SERVER)

# order-only: a new `npm ci` (which rewrites node_modules) must not cost a rebuild; after an
# upgrade of node-llama-cpp, `rm -rf build/llama.cpp-src build/llama-server` rebuilds it
$(LLAMA_SRC)/CMakeLists.txt: | build/.npm-stamp
	rm -rf $(LLAMA_SRC)
	git -c advice.detachedHead=false clone --quiet $(LLAMA_BUNDLE) $(LLAMA_SRC)
	@touch $@

$(LLAMA_SERVER): $(LLAMA_SRC)/CMakeLists.txt
	cmake -S $(LLAMA_SRC) -B $(LLAMA_SERVER_DIR) $(LLAMA_CMAKE_FLAGS) >/dev/null
	cmake --build $(LLAMA_SERVER_DIR) --target llama-server -j $(LLAMA_SERVER_JOBS)
	@touch $@

test: $(LLAMA_SERVER)
