// tests/mtmd_chat_ref.cpp — llama.cpp's answer to a prompt with a picture, the reference of wick's
// (tests/vision-prompt.test.mjs): a text model and its mmproj loaded as llama-server loads them
// (llama_model_load_from_file, mtmd_init_from_file), the prompt split at mtmd's marker and
// tokenized with the picture by mtmd_tokenize (BOS added, special tokens parsed), every chunk
// evaluated by mtmd_helper_eval_chunks (text batches, the image encoded and decoded as
// embeddings; Gemma 3's non-causally), on 1 thread, F16 KV cache, without flash attention.
// Built by mk/mtmd-ref.mk against the llama-server build's static libraries.
//   mtmd_chat_ref MODEL.gguf MMPROJ.gguf IMAGE.ppm PROMPT LOGITS.f32
// writes the last position's logits (raw float32) and prints the layout as JSON on stdout:
// {"n_past":N,"n_vocab":V,"chunks":[{"text":[ids]} | {"image":positions}, …]}. Exit 1 with a message.
#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"
#include "ref_ppm.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

static void quiet(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: mtmd_chat_ref MODEL.gguf MMPROJ.gguf IMAGE.ppm PROMPT LOGITS.f32\n");
        return 1;
    }
    try {
        llama_log_set(quiet, nullptr);
        mtmd_helper_log_set(quiet, nullptr);
        llama_backend_init();
        llama_model_params mp = llama_model_default_params();
        mp.n_gpu_layers = 0;
        llama_model * model = llama_model_load_from_file(argv[1], mp);
        if (!model) throw std::runtime_error(std::string("cannot load ") + argv[1]);
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 4096;
        cp.n_batch = cp.n_ubatch = 512;
        cp.n_threads = cp.n_threads_batch = 1;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.type_k = cp.type_v = GGML_TYPE_F16;
        llama_context * lctx = llama_init_from_model(model, cp);
        if (!lctx) throw std::runtime_error("cannot make a context");

        mtmd_context_params mparams = mtmd_context_params_default();
        mparams.use_gpu = false;
        mparams.n_threads = 1;
        mparams.print_timings = false;
        mparams.warmup = false;
        mparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        mtmd_context * mctx = mtmd_init_from_file(argv[2], model, mparams);
        if (!mctx) throw std::runtime_error(std::string("cannot load the mmproj ") + argv[2]);

        uint32_t w, h;
        std::vector<uint8_t> rgb = read_ppm(argv[3], w, h);
        mtmd_bitmap * bmp = mtmd_bitmap_init(w, h, rgb.data());
        mtmd_input_text text = {argv[4], strlen(argv[4]), true, true};
        mtmd_input_chunks * chunks = mtmd_input_chunks_init();
        const mtmd_bitmap * bmps[] = {bmp};
        if (mtmd_tokenize(mctx, chunks, &text, bmps, 1) != 0) throw std::runtime_error("mtmd_tokenize failed");

        std::string layout = "[";
        for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
            const mtmd_input_chunk * ch = mtmd_input_chunks_get(chunks, i);
            if (i) layout += ",";
            if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
                size_t n = 0;
                const llama_token * ids = mtmd_input_chunk_get_tokens_text(ch, &n);
                layout += "{\"text\":[";
                for (size_t k = 0; k < n; k++) layout += (k ? "," : "") + std::to_string(ids[k]);
                layout += "]}";
            } else {
                layout += "{\"image\":" + std::to_string(mtmd_input_chunk_get_n_tokens(ch)) + "}";
            }
        }
        layout += "]";

        llama_pos n_past = 0;
        if (mtmd_helper_eval_chunks(mctx, lctx, chunks, 0, 0, (int32_t) cp.n_batch, true, &n_past) != 0)
            throw std::runtime_error("mtmd_helper_eval_chunks failed");
        const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
        const float * logits = llama_get_logits_ith(lctx, -1);
        if (!logits) throw std::runtime_error("no logits");
        std::ofstream f(argv[5], std::ios::binary);
        f.write(reinterpret_cast<const char *>(logits), (std::streamsize) (n_vocab * sizeof(float)));
        if (!f) throw std::runtime_error(std::string("cannot write ") + argv[5]);
        printf("{\"n_past\":%d,\"n_vocab\":%d,\"chunks\":%s}\n", (int) n_past, n_vocab, layout.c_str());

        mtmd_input_chunks_free(chunks);
        mtmd_bitmap_free(bmp);
        mtmd_free(mctx);
        llama_free(lctx);
        llama_model_free(model);
        llama_backend_free();
    } catch (const std::exception & e) {
        fprintf(stderr, "mtmd_chat_ref: %s\n", e.what());
        return 1;
    }
    return 0;
}
