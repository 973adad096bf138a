# mk/mtmd-ref.mk — build/mtmd_ref, llama.cpp's image encoding as the reference of the vision tests
# (tests/mtmd_ref.cpp, tests/vision.test.mjs): linked against the static libraries the llama-server
# build leaves (mk/llama-server.mk: libmtmd comes with it, the server links it), with mtmd's own
# headers from the same source. Included by the Makefile after mk/llama-server.mk; `make test`
# depends on it. A few seconds of g++ once the llama-server build is there.

MTMD_REF := build/mtmd_ref
# in link order: mtmd, then what it uses (libllama for its tokens, ggml with its CPU backend)
MTMD_REF_LIBS := $(addprefix $(LLAMA_SERVER_DIR)/,tools/mtmd/libmtmd.a src/libllama.a ggml/src/libggml.a \
  ggml/src/libggml-cpu.a ggml/src/libggml-base.a)
MTMD_REF_INCLUDES := $(addprefix -I$(LLAMA_SRC)/,tools/mtmd include ggml/include)

.PHONY: mtmd-ref
mtmd-ref: $(MTMD_REF)

$(MTMD_REF): tests/mtmd_ref.cpp tests/ref_ppm.h $(LLAMA_SERVER)
	$(CXX) -std=c++17 -O2 $(MTMD_REF_INCLUDES) -o $@ $< $(MTMD_REF_LIBS) -lpthread -lm

test: $(MTMD_REF)

# build/mtmd_chat_ref: a prompt with a picture through llama.cpp (text model + mmproj, mtmd's
# tokenizer and chunk evaluation): the reference of tests/vision-prompt.test.mjs
MTMD_CHAT_REF := build/mtmd_chat_ref
MTMD_CHAT_REF_INCLUDES := $(MTMD_REF_INCLUDES) -I$(LLAMA_SRC)/common

$(MTMD_CHAT_REF): tests/mtmd_chat_ref.cpp tests/ref_ppm.h $(LLAMA_SERVER)
	$(CXX) -std=c++17 -O2 $(MTMD_CHAT_REF_INCLUDES) -o $@ $< $(MTMD_REF_LIBS) $(LLAMA_SERVER_DIR)/vendor/hash/libvendor-hash.a -lpthread -lm

mtmd-ref: $(MTMD_CHAT_REF)
test: $(MTMD_CHAT_REF)
