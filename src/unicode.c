/* unicode.c — UTF-8 decoding/encoding and character classes over the generated tables. */
#include "unicode.h"

#include <stdlib.h>

#include "unicode_nfd.h"
#include "unicode_tables.h"

/* One LEB128 varint of a packed table (n bytes) at *pos, which it advances. */
static uint32_t leb128(const uint8_t *stream, size_t n, size_t *pos) {
    uint32_t x = 0;
    for (unsigned shift = 0; *pos < n; shift += 7) {
        uint8_t b = stream[(*pos)++];
        x |= (uint32_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
    }
    return x;
}

/* The category ranges unpacked (unicode_tables.h packs them for the page's download): the first
 * code point << 5 | category of each, made once, on the first lookup above U+07FF. */
static uint32_t category_ranges[UNICODE_CATEGORY_RANGES];

static void unpack_category_ranges(void) {
    size_t pos = 0;
    uint32_t first = 0;
    for (int i = 0; i < UNICODE_CATEGORY_RANGES; i++) {
        first += leb128(unicode_category_stream, UNICODE_CATEGORY_BYTES, &pos);
        category_ranges[i] = first << 5;
    }
    for (int i = 0; i < UNICODE_CATEGORY_RANGES; i++) category_ranges[i] |= unicode_category_stream[pos + i];
}

#ifdef WICK_NO_THREADS
static bool category_ranges_ready;
static void category_ranges_once(void) {
    if (!category_ranges_ready) unpack_category_ranges();
    category_ranges_ready = true;
}
#else
#include <pthread.h>
static pthread_once_t category_ranges_done = PTHREAD_ONCE_INIT;
static void category_ranges_once(void) { pthread_once(&category_ranges_done, unpack_category_ranges); }
#endif

enum unicode_category unicode_category_of(uint32_t cpt) {
    if (cpt < 0x800) return (enum unicode_category)unicode_category_low[cpt];
    if (cpt > 0x10FFFF) return UCAT_Cn;
    category_ranges_once();
    /* the last range whose first code point is <= cpt */
    size_t lo = 0, hi = UNICODE_CATEGORY_RANGES;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((category_ranges[mid] >> 5) <= cpt) lo = mid;
        else hi = mid;
    }
    return (enum unicode_category)(category_ranges[lo] & 31);
}

static const unsigned category_flag[UCAT_COUNT] = {
    [UCAT_Cn] = UFLAG_UNDEFINED,
    [UCAT_Lu] = UFLAG_LETTER, [UCAT_Ll] = UFLAG_LETTER, [UCAT_Lt] = UFLAG_LETTER,
    [UCAT_Lm] = UFLAG_LETTER, [UCAT_Lo] = UFLAG_LETTER,
    [UCAT_Mn] = UFLAG_MARK, [UCAT_Mc] = UFLAG_MARK, [UCAT_Me] = UFLAG_MARK,
    [UCAT_Nd] = UFLAG_NUMBER, [UCAT_Nl] = UFLAG_NUMBER, [UCAT_No] = UFLAG_NUMBER,
    [UCAT_Pc] = UFLAG_PUNCTUATION, [UCAT_Pd] = UFLAG_PUNCTUATION, [UCAT_Ps] = UFLAG_PUNCTUATION,
    [UCAT_Pe] = UFLAG_PUNCTUATION, [UCAT_Pi] = UFLAG_PUNCTUATION, [UCAT_Pf] = UFLAG_PUNCTUATION,
    [UCAT_Po] = UFLAG_PUNCTUATION,
    [UCAT_Sm] = UFLAG_SYMBOL, [UCAT_Sc] = UFLAG_SYMBOL, [UCAT_Sk] = UFLAG_SYMBOL,
    [UCAT_So] = UFLAG_SYMBOL,
    [UCAT_Zs] = UFLAG_SEPARATOR, [UCAT_Zl] = UFLAG_SEPARATOR, [UCAT_Zp] = UFLAG_SEPARATOR,
    [UCAT_Cc] = UFLAG_CONTROL, [UCAT_Cf] = UFLAG_CONTROL, [UCAT_Cs] = UFLAG_CONTROL,
    [UCAT_Co] = UFLAG_CONTROL,
};

/* White_Space in PropList.txt, the list llama.cpp's gen-unicode-data.py hard-codes. */
static bool is_whitespace(uint32_t c) {
    if (c < 0x80) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

unsigned unicode_flags(uint32_t cpt) {
    unsigned f = category_flag[unicode_category_of(cpt)];
    if (is_whitespace(cpt)) f |= UFLAG_WHITESPACE;
    return f;
}

/* Hangul syllables decompose by formula (Unicode's chapter 3.12): the leading consonant of
 * syllable s is U+1100 + (s − U+AC00) / 588 (21 vowels × 28 trailing consonants) */
#define HANGUL_FIRST 0xAC00u
#define HANGUL_LAST 0xD7A3u
#define HANGUL_PER_LEAD 588u

static uint32_t nfd_varint(size_t *pos) { return leb128(unicode_nfd_stream, UNICODE_NFD_BYTES, pos); }

int unicode_nfd_load(unicode_nfd_table *t) {
    t->first = malloc(3 * UNICODE_NFD_RUNS * sizeof *t->first);
    if (!t->first) return -1;
    t->count = t->first + UNICODE_NFD_RUNS;
    t->base = t->count + UNICODE_NFD_RUNS;
    /* the three sections in turn: gaps (from the previous run's end), counts − 1, zigzag base differences */
    size_t pos = 0;
    for (int i = 0; i < UNICODE_NFD_RUNS; i++) t->first[i] = nfd_varint(&pos);
    for (int i = 0; i < UNICODE_NFD_RUNS; i++) t->count[i] = nfd_varint(&pos) + 1;
    uint32_t end = 0, base = 0;
    for (int i = 0; i < UNICODE_NFD_RUNS; i++) {
        t->first[i] += end;
        end = t->first[i] + t->count[i];
        uint32_t z = nfd_varint(&pos);
        base += (z & 1) ? ~(z >> 1) : z >> 1; /* −(z+1)/2 or z/2, modulo 2^32 */
        t->base[i] = base;
    }
    return 0;
}

void unicode_nfd_free(unicode_nfd_table *t) {
    free(t->first);
    t->first = t->count = t->base = NULL;
}

uint32_t unicode_nfd_first(const unicode_nfd_table *t, uint32_t cpt) {
    if (cpt < 0xC0) return cpt;
    if (cpt >= HANGUL_FIRST && cpt <= HANGUL_LAST) return 0x1100u + (cpt - HANGUL_FIRST) / HANGUL_PER_LEAD;
    size_t lo = 0, hi = UNICODE_NFD_RUNS;
    if (t->first[0] > cpt) return cpt;
    while (hi - lo > 1) { /* the last run starting at or before cpt */
        size_t mid = lo + (hi - lo) / 2;
        if (t->first[mid] <= cpt) lo = mid;
        else hi = mid;
    }
    return cpt - t->first[lo] < t->count[lo] ? t->base[lo] : cpt;
}

uint32_t unicode_tolower(uint32_t cpt) {
    if (cpt < 0x80) return cpt >= 'A' && cpt <= 'Z' ? cpt + 32 : cpt;
    size_t lo = 0, hi = sizeof unicode_lower_runs / sizeof unicode_lower_runs[0];
    /* the last run starting at or before cpt (runs are ascending and do not interleave) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)unicode_lower_runs[mid][0] <= cpt) lo = mid;
        else hi = mid;
    }
    const int32_t *r = unicode_lower_runs[lo];
    uint32_t first = (uint32_t)r[0], count = (uint32_t)r[1], stride = (uint32_t)r[2];
    if (cpt < first || (cpt - first) % stride || (cpt - first) / stride >= count) return cpt;
    return (uint32_t)((int32_t)cpt + r[3]);
}

int unicode_len_utf8(uint8_t lead) {
    static const int8_t len_by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len_by_high_nibble[lead >> 4];
}

static bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

int unicode_decode_lenient(const uint8_t *s, size_t n, uint32_t *cpt) {
    uint8_t b = s[0];
    if (b < 0x80) { *cpt = b; return 1; }
    if ((b & 0xE0) == 0xC0 && n >= 2 && is_cont(s[1])) {
        *cpt = (uint32_t)(b & 0x1F) << 6 | (s[1] & 0x3F);
        return 2;
    }
    if ((b & 0xF0) == 0xE0 && n >= 3 && is_cont(s[1]) && is_cont(s[2])) {
        *cpt = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        return 3;
    }
    if ((b & 0xF8) == 0xF0 && n >= 4 && is_cont(s[1]) && is_cont(s[2]) && is_cont(s[3])) {
        *cpt = (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
               (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
        return 4;
    }
    *cpt = UNICODE_REPLACEMENT;
    return 1;
}

int unicode_valid_char_len(const uint8_t *s, size_t n) {
    uint8_t b = s[0];
    if (b < 0x80) return 1;
    int len;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte (RFC 3629, table 3-7) */
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0) lo = 0xA0;      /* no overlong forms */
        else if (b == 0xED) hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0) lo = 0x90;      /* no overlong forms */
        else if (b == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else return 0;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return -1;
        uint8_t c = s[i];
        if (i == 1 ? (c < lo || c > hi) : !is_cont(c)) return 0;
    }
    return len;
}

int unicode_encode(uint32_t cpt, char *out) {
    if (cpt < 0x80) { out[0] = (char)cpt; return 1; }
    if (cpt < 0x800) {
        out[0] = (char)(0xC0 | cpt >> 6);
        out[1] = (char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt < 0x10000) {
        out[0] = (char)(0xE0 | cpt >> 12);
        out[1] = (char)(0x80 | (cpt >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cpt >> 18 & 0x07));
    out[1] = (char)(0x80 | (cpt >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cpt >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cpt & 0x3F));
    return 4;
}
