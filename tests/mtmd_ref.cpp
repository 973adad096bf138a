// tests/mtmd_ref.cpp — llama.cpp's image encoding as the reference for wick's (tests/vision.test.mjs):
// an mmproj file loaded by libmtmd's clip loader, a binary PPM image preprocessed by mtmd's
// preprocessor for the file's projector, and its overview image encoded by clip on 1 thread,
// without flash attention (clip's own attention: F32 scores and softmax). Built by mk/mtmd-ref.mk
// against the static libraries of the llama-server build, with mtmd's internal headers (clip.h,
// mtmd-image.h), which is what reaching the preprocessed tensor takes.
//   mtmd_ref MMPROJ.gguf IMAGE.ppm EMBD.f32 [INPUT.f32]
// writes the embeddings (positions × width, raw float32) and, if asked, the preprocessed overview
// as planes [3][height][width] (clip_image_f32 holds it interleaved), and prints
// {"positions":P,"n_embd":N,"image_size":S} on stdout. Exit 1 with a message on any failure.
// Only idefics3 is handled for now (its preprocessor: mtmd_image_preprocessor_idefics3).
#include "clip.h"
#include "clip-impl.h"
#include "clip-model.h"
#include "mtmd-image.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

static std::vector<uint8_t> read_all(const char * path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(std::string("cannot open ") + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

static void write_all(const char * path, const std::vector<float> & v) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(v.data()), (std::streamsize) (v.size() * sizeof(float)));
    if (!f) throw std::runtime_error(std::string("cannot write ") + path);
}

// P6 with a header of "P6 W H 255" fields (the test writes no comments), then the pixels
static clip_image_u8 read_ppm(const char * path) {
    std::vector<uint8_t> b = read_all(path);
    size_t at = 0;
    auto field = [&]() {
        while (at < b.size() && isspace(b[at])) at++;
        size_t start = at;
        long v = 0;
        while (at < b.size() && isdigit(b[at]) && at - start < 9) v = v * 10 + (b[at++] - '0');
        if (at == start) throw std::runtime_error("bad PPM header");
        return v;
    };
    if (b.size() < 2 || b[0] != 'P' || b[1] != '6') throw std::runtime_error("not a P6 PPM");
    at = 2;
    long w = field(), h = field(), maxval = field();
    at++;
    if (w < 1 || h < 1 || maxval != 255 || b.size() - at < (size_t) (w * h * 3)) throw std::runtime_error("bad PPM");
    clip_image_u8 img;
    img.set_size({(int) w, (int) h}, false);
    img.cpy_buf(std::vector<uint8_t>(b.begin() + at, b.begin() + at + w * h * 3));
    return img;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: mtmd_ref MMPROJ.gguf IMAGE.ppm EMBD.f32 [INPUT.f32]\n");
        return 2;
    }
    try {
        clip_context_params params = {};
        params.use_gpu = false;
        params.device = nullptr;
        params.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
        params.image_min_tokens = -1;
        params.image_max_tokens = -1;
        params.warmup = false;
        clip_ctx * ctx = clip_init(argv[1], params).ctx_v;
        if (!ctx) throw std::runtime_error("clip_init failed (no vision encoder)");
        clip_image_u8 img = read_ppm(argv[2]);
        mtmd_image_preprocessor_idefics3 pre(ctx);
        mtmd_image_preproc_out prep = pre.preprocess(img);
        const clip_image_f32 & ov = prep.overview;
        if (ov.nx() <= 0) throw std::runtime_error("no overview image");
        if (argc > 4) {
            const std::vector<float> & hwc = ov.get_ro_buf();
            const size_t n = (size_t) ov.nx() * ov.ny();
            std::vector<float> planes(3 * n);
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < 3; c++) planes[c * n + i] = hwc[i * 3 + c];
            write_all(argv[4], planes);
        }
        // clip_encode copies into the vector only at the size it is given
        const int n_pos = clip_n_output_tokens(ctx, &ov), n_embd = clip_n_mmproj_embd(ctx);
        std::vector<float> embd((size_t) n_pos * n_embd);
        if (!clip_image_encode(ctx, 1, &ov, embd)) throw std::runtime_error("clip_image_encode failed");
        write_all(argv[3], embd);
        printf("{\"positions\":%d,\"n_embd\":%d,\"image_size\":%d}\n", n_pos, n_embd, ov.nx());
        clip_free(ctx);
    } catch (const std::exception & e) {
        fprintf(stderr, "mtmd_ref: %s\n", e.what());
        return 1;
    }
    return 0;
}
