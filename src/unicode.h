/* unicode.h — UTF-8 decoding and encoding, and the Unicode character classes the BPE
 * pre-tokenizers split on (letter, number, punctuation, symbol, mark, whitespace), with the
 * same classification llama.cpp's unicode.cpp uses. Tables: unicode_tables.h (generated). */
#ifndef WICK_UNICODE_H
#define WICK_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Unicode general categories, numbered as tools/gen_unicode_tables.mjs emits them. */
enum unicode_category {
    UCAT_Cn, UCAT_Lu, UCAT_Ll, UCAT_Lt, UCAT_Lm, UCAT_Lo, UCAT_Mn, UCAT_Mc, UCAT_Me,
    UCAT_Nd, UCAT_Nl, UCAT_No, UCAT_Pc, UCAT_Pd, UCAT_Ps, UCAT_Pe, UCAT_Pi, UCAT_Pf, UCAT_Po,
    UCAT_Sm, UCAT_Sc, UCAT_Sk, UCAT_So, UCAT_Zs, UCAT_Zl, UCAT_Zp,
    UCAT_Cc, UCAT_Cf, UCAT_Cs, UCAT_Co, UCAT_COUNT
};

/* Character class bits, as llama.cpp's unicode_cpt_flags: exactly one of the category bits
 * (\p{N}, \p{L}, \p{Z}, \p{M}, \p{P}, \p{S}, \p{C}, or UNDEFINED for unassigned code points and
 * values past U+10FFFF), plus WHITESPACE for the code points Unicode's White_Space property
 * lists. */
enum {
    UFLAG_UNDEFINED = 0x0001,
    UFLAG_NUMBER = 0x0002,      /* \p{N} */
    UFLAG_LETTER = 0x0004,      /* \p{L} */
    UFLAG_SEPARATOR = 0x0008,   /* \p{Z} */
    UFLAG_MARK = 0x0010,        /* \p{M} */
    UFLAG_PUNCTUATION = 0x0020, /* \p{P} */
    UFLAG_SYMBOL = 0x0040,      /* \p{S} */
    UFLAG_CONTROL = 0x0080,     /* \p{C} */
    UFLAG_CATEGORIES = 0x00FF,
    UFLAG_WHITESPACE = 0x0100,  /* \s */
};

#define UNICODE_REPLACEMENT 0xFFFDu

enum unicode_category unicode_category_of(uint32_t cpt);
unsigned unicode_flags(uint32_t cpt);
uint32_t unicode_tolower(uint32_t cpt); /* simple (one-to-one) lowercase mapping */
/* The runs of code points whose canonical decomposition starts with another code point, and that
 * code point (unicode_nfd.h, unpacked: the page's wasm carries the packed form). */
typedef struct {
    uint32_t *first, *count, *base;
} unicode_nfd_table;
/* Unpacks the table (about 21 KB); -1 when out of memory. */
int unicode_nfd_load(unicode_nfd_table *t);
void unicode_nfd_free(unicode_nfd_table *t);
/* The first code point of cpt's canonical decomposition (NFD), cpt itself when it has none: the
 * one-to-one map llama.cpp's unicode_cpts_normalize_nfd applies (unicode_nfd.h) */
uint32_t unicode_nfd_first(const unicode_nfd_table *t, uint32_t cpt);

/* Length of the UTF-8 sequence a lead byte announces, from its high nibble alone
 * (continuation bytes count 1), as llama.cpp's unicode_len_utf8. */
int unicode_len_utf8(uint8_t lead);

/* Decodes one code point at s (n >= 1 bytes available) the lenient way llama.cpp's
 * unicode_cpt_from_utf8 does (continuation bytes checked; overlong forms and surrogates
 * accepted). Returns the bytes consumed; on an invalid sequence returns 1 and sets *cpt to
 * U+FFFD, so every byte is consumed exactly once. */
int unicode_decode_lenient(const uint8_t *s, size_t n, uint32_t *cpt);

/* Length of the strictly valid UTF-8 character at s (1..4), 0 if the bytes can never start
 * a valid character, or -1 if they are a valid but incomplete prefix (n too short). */
int unicode_valid_char_len(const uint8_t *s, size_t n);

/* Encodes cpt (<= 0x10FFFF) as UTF-8 into out; returns the byte count (1..4). */
int unicode_encode(uint32_t cpt, char *out);

#endif
