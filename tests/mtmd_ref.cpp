// tests/mtmd_ref.cpp — llama.cpp's image encoding as the reference for wick's (tests/vision.test.mjs):
// an mmproj file loaded by libmtmd's clip loader, a binary PPM image preprocessed by mtmd's
// preprocessor for the file's projector, and every image it makes (tiles, overview) encoded by clip
// on 1 thread, in the order mtmd puts them in the prompt, without flash attention (clip's own attention: F32 scores and softmax). Built by mk/mtmd-ref.mk
// against the static libraries of the llama-server build, with mtmd's internal headers (clip.h,
// mtmd-image.h), which is what reaching the preprocessed tensor takes.
//   mtmd_ref MMPROJ.gguf IMAGE.ppm EMBD.f32 [INPUT.f32]
// writes the embeddings (each image's positions × width, one image after another, raw float32) and,
// if asked, the preprocessed images, each as planes [3][height][width] (clip_image_f32 holds them
// interleaved), and prints {"images":n,"grid_x":X,"grid_y":Y,"positions":P (all images'),
// "n_embd":N,"image_size":S (the last image's width),"sizes":[[w,h],...]} on stdout. Exit 1 with a
// message on any failure.
#include "clip.h"
#include "clip-impl.h"
#include "clip-model.h"
#include "mtmd-image.h"
#include "ref_ppm.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static void write_all(const char * path, const std::vector<float> & v) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(v.data()), (std::streamsize) (v.size() * sizeof(float)));
    if (!f) throw std::runtime_error(std::string("cannot write ") + path);
}

// the test's picture as llama.cpp's image type
static clip_image_u8 read_image(const char * path) {
    uint32_t w, h;
    std::vector<uint8_t> rgb = read_ppm(path, w, h);
    clip_image_u8 img;
    img.set_size({(int) w, (int) h}, false);
    img.cpy_buf(rgb);
    return img;
}

// The preprocessor mtmd.cpp's mtmd_context picks for the projector, and whether it puts the overview
// before the tiles (ov_img_first): idefics3 and lfm2 put the tiles first, the overview last; gemma3
// makes one image, and so does lfm2 for a picture it does not tile (its one image, of the picture's
// aspect, is then an entry, not an overview), and the qwen projectors and gemma4v (dyn_size: the
// picture at its smart size)
static std::unique_ptr<mtmd_image_preprocessor> preprocessor(clip_ctx * ctx, bool & ov_first) {
    ov_first = false;
    switch (clip_get_projector_type(ctx)) {
        case PROJECTOR_TYPE_IDEFICS3: return std::make_unique<mtmd_image_preprocessor_idefics3>(ctx);
        case PROJECTOR_TYPE_GEMMA3: return std::make_unique<mtmd_image_preprocessor_fixed_size>(ctx);
        case PROJECTOR_TYPE_LFM2: return std::make_unique<mtmd_image_preprocessor_lfm2>(ctx);
        case PROJECTOR_TYPE_QWEN2VL:
        case PROJECTOR_TYPE_QWEN25VL:
        case PROJECTOR_TYPE_QWEN3VL:
        case PROJECTOR_TYPE_GEMMA4V: return std::make_unique<mtmd_image_preprocessor_dyn_size>(ctx);
        default: throw std::runtime_error("projector not handled by mtmd_ref");
    }
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
        clip_image_u8 img = read_image(argv[2]);
        bool ov_first;
        mtmd_image_preproc_out prep = preprocessor(ctx, ov_first)->preprocess(img);
        // prompt order, as mtmd.cpp's add_media lays a picture out: the overview (where there is one)
        // before or after the tiles, the tiles row by row as the preprocessor appends them
        std::vector<const clip_image_f32 *> images;
        if (prep.has_overview() && ov_first) images.push_back(&prep.overview);
        for (const clip_image_f32 & e : prep.entries) images.push_back(&e);
        if (prep.has_overview() && !ov_first) images.push_back(&prep.overview);
        if (images.empty()) throw std::runtime_error("the preprocessor made no image");

        std::vector<float> planes, embd;
        std::string sizes;
        int positions = 0;
        const int n_embd = clip_n_mmproj_embd(ctx);
        for (const clip_image_f32 * im : images) {
            // clip_image_f32 holds the pixels interleaved; written as planes [3][ny][nx]
            const std::vector<float> & hwc = im->get_ro_buf();
            const size_t n = (size_t) im->nx() * im->ny(), at = planes.size();
            planes.resize(at + 3 * n);
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < 3; c++) planes[at + c * n + i] = hwc[i * 3 + c];
            // clip_image_encode copies into the vector only at the size it is given
            const int n_pos = clip_n_output_tokens(ctx, im);
            std::vector<float> one((size_t) n_pos * n_embd);
            if (!clip_image_encode(ctx, 1, im, one)) throw std::runtime_error("clip_image_encode failed");
            embd.insert(embd.end(), one.begin(), one.end());
            positions += n_pos;
            sizes += (sizes.empty() ? "" : ",") + std::string("[") + std::to_string(im->nx()) + "," + std::to_string(im->ny()) + "]";
        }
        write_all(argv[3], embd);
        if (argc > 4) write_all(argv[4], planes);
        printf("{\"images\":%zu,\"grid_x\":%d,\"grid_y\":%d,\"positions\":%d,\"n_embd\":%d,\"image_size\":%d,\"sizes\":[%s]}\n",
               images.size(), prep.grid_x, prep.grid_y, positions, n_embd, images.back()->nx(), sizes.c_str());
        clip_free(ctx);
    } catch (const std::exception & e) {
        fprintf(stderr, "mtmd_ref: %s\n", e.what());
        return 1;
    }
    return 0;
}
