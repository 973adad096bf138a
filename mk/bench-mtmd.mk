# mk/bench-mtmd.mk — build/native/bench_mtmd, llama.cpp's image encode time for the vision section of
# `npm run bench` (bench/bench_mtmd.cpp, tools/bench.mjs): linked as build/mtmd_ref is (mk/mtmd-ref.mk:
# the llama-server build's static libraries, ggml's CPU backend as that build compiled it), with
# mtmd's own headers. Included by the Makefile after mk/mtmd-ref.mk, whose variables it uses.

BENCH_MTMD := build/native/bench_mtmd

$(BENCH_MTMD): bench/bench_mtmd.cpp $(LLAMA_SERVER)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O2 $(MTMD_REF_INCLUDES) -o $@ $< $(MTMD_REF_LIBS) -lpthread -lm
