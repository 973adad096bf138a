// tests/ref_ppm.h — what llama.cpp's reference programs for the vision tests share (tests/mtmd_ref.cpp,
// tests/mtmd_chat_ref.cpp): a whole file read, and a binary PPM the tests write read into RGB bytes.
#pragma once

#include <cctype>
#include <cstdint>
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

// P6 with a header of "P6 W H 255" fields (the tests write no comments), then the pixels
static std::vector<uint8_t> read_ppm(const char * path, uint32_t & w, uint32_t & h) {
    std::vector<uint8_t> b = read_all(path);
    size_t at = 2;
    auto field = [&]() {
        while (at < b.size() && isspace(b[at])) at++;
        size_t start = at;
        long v = 0;
        while (at < b.size() && isdigit(b[at]) && at - start < 9) v = v * 10 + (b[at++] - '0');
        if (at == start) throw std::runtime_error("bad PPM header");
        return v;
    };
    if (b.size() < 2 || b[0] != 'P' || b[1] != '6') throw std::runtime_error("not a P6 PPM");
    long wl = field(), hl = field(), maxval = field();
    at++;
    if (wl < 1 || hl < 1 || maxval != 255 || b.size() - at < (size_t) (wl * hl * 3)) throw std::runtime_error("bad PPM");
    w = (uint32_t) wl;
    h = (uint32_t) hl;
    return std::vector<uint8_t>(b.begin() + at, b.begin() + at + wl * hl * 3);
}
