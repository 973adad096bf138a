/* tests/check.h — the one harness of the C test programs (tests/test_*.c), header only.
 *
 * Each check has an id: a name that stays the same from run to run and between the native and
 * the wasm build ("kernels.q4_K.gemm.n256"), made of letters, digits and . _ - + : / = @. Each
 * check prints one line, tab-separated, whose third field says what was measured (its numbers
 * may change; the id does not):
 *
 *     ok<TAB>ID<TAB>DETAIL
 *     FAIL<TAB>ID<TAB>DETAIL
 *
 * Other output is a note, "# …" (a hash, a timing). The last line counts the checks:
 *
 *     summary<TAB>N passed<TAB>M failed
 *
 * and check_summary() returns the exit status: non-zero when a check failed or none ran. A
 * second check with an id already used fails (ids name one check each). A fixture is read
 * through check_read, which fails the check when the file is missing or unreadable: no test
 * skips because its data is not there.
 *
 * tests/checks.mjs reads this output by id: tests/programs.test.mjs compares the ids each
 * program printed with the list in tests/checks/<program>.txt, so that a check that stops
 * running fails as surely as one that fails. */
#ifndef WICK_TESTS_CHECK_H
#define WICK_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_n_passed, check_n_failed;

/* the ids seen so far: an open-addressing set of their 64-bit FNV-1a hashes (0 = empty) */
static uint64_t *check_seen;
static size_t check_seen_cap, check_seen_n;

static inline uint64_t check_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

/* adds the id's hash; false when it was there already (or the set cannot grow) */
static inline bool check_remember(const char *id) {
    if (2 * (check_seen_n + 1) > check_seen_cap) {
        size_t cap = check_seen_cap ? 2 * check_seen_cap : 1024;
        uint64_t *grown = calloc(cap, sizeof *grown);
        if (!grown) return false;
        for (size_t i = 0; i < check_seen_cap; i++) {
            if (!check_seen[i]) continue;
            size_t k = (size_t)(check_seen[i] & (cap - 1));
            while (grown[k]) k = (k + 1) & (cap - 1);
            grown[k] = check_seen[i];
        }
        free(check_seen);
        check_seen = grown;
        check_seen_cap = cap;
    }
    uint64_t h = check_hash(id);
    size_t k = (size_t)(h & (check_seen_cap - 1));
    for (; check_seen[k]; k = (k + 1) & (check_seen_cap - 1))
        if (check_seen[k] == h) return false;
    check_seen[k] = h;
    check_seen_n++;
    return true;
}

static inline bool check_id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-+:/=@", c) != NULL;
}

/* one line of text: tabs, newlines and other control bytes become spaces */
static inline void check_one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20) *s = ' ';
}

static inline void check_vrecord(bool ok, const char *id, const char *fmt, va_list ap) {
    char name[256], detail[4096];
    snprintf(name, sizeof name, "%s", id && *id ? id : "(no id)");
    vsnprintf(detail, sizeof detail, fmt, ap);
    check_one_line(detail);
    bool valid = id && *id;
    for (char *c = name; *c; c++)
        if (!check_id_char(*c)) *c = '_', valid = false;
    if (!valid) {
        ok = false;
        printf("FAIL\t%s\tnot a valid check id (\"%s\"): %s\n", name, id ? id : "", detail);
    } else if (!check_remember(name)) {
        ok = false;
        printf("FAIL\t%s\ta second check with this id: %s\n", name, detail);
    } else {
        printf("%s\t%s\t%s\n", ok ? "ok" : "FAIL", name, detail);
    }
    if (ok) check_n_passed++;
    else check_n_failed++;
}

/* Records a check: ok, its id, and a printf-style detail. Returns ok. */
static inline bool check(bool ok, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline bool check(bool ok, const char *id, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    check_vrecord(ok, id, fmt, ap);
    va_end(ap);
    return ok;
}

/* An id made with printf: check(ok, check_id("kernels.%s.round-trip", t->name), …). The text
 * lives in one of 8 buffers used in turn: enough for the arguments of one call. */
static inline const char *check_id(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *check_id(const char *fmt, ...) {
    static char bufs[8][256];
    static int next;
    char *b = bufs[next++ & 7];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof bufs[0], fmt, ap);
    va_end(ap);
    return b;
}

/* A part of an id made from text ("left recursion" → "left-recursion"): letters and digits
 * kept (lower case), runs of anything else one '-'; at most 48 characters. Same buffers as
 * check_id. */
static inline const char *check_slug(const char *text) {
    char raw[64];
    size_t n = 0;
    bool dash = false;
    for (const char *s = text; *s && n + 1 < 49; s++) {
        char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && n > 0) raw[n++] = '-';
            if (n + 1 < 49) raw[n++] = c;
            dash = false;
        } else {
            dash = true;
        }
    }
    raw[n] = 0;
    return check_id("%s", n ? raw : "x");
}

/* A note: one line that is no check ("# draw hash …", a timing). */
static inline void check_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void check_note(const char *fmt, ...) {
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    check_one_line(text);
    printf("# %s\n", text);
}

/* Reads a fixture whole (with a NUL after its last byte) as the check `id`: it fails when the
 * file is missing, unreadable or empty. Returns the bytes (free them) or NULL. */
static inline void *check_read(const char *id, const char *path, size_t *size) {
    size_t n = 0, cap = 0;
    uint8_t *buf = NULL;
    FILE *f = fopen(path, "rb");
    bool ok = f != NULL;
    while (ok) {
        if (n + 1 >= cap) {
            cap = cap ? 2 * cap : 1 << 16;
            uint8_t *b = realloc(buf, cap);
            if (!b) { ok = false; break; }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) { ok = !ferror(f) && n > 0; break; }
    }
    if (f) fclose(f);
    if (ok) buf[n] = 0;
    else { free(buf); buf = NULL; n = 0; }
    if (size) *size = n;
    check(ok, id, "%s %s (%zu bytes)", ok ? "read" : "cannot read the fixture", path, n);
    return buf;
}

/* The summary line; the exit status for main: 1 when a check failed or none ran. */
/* largest |a − b| over a row, relative to the standard deviation of b (1e-30 under the root keeps
 * a row of no spread from dividing by zero) */
static inline double check_row_difference(const float *a, const float *b, int n) {
    double mean = 0, var = 0, worst = 0;
    for (int i = 0; i < n; i++) mean += b[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (b[i] - mean) * (b[i] - mean);
    for (int i = 0; i < n; i++)
        if (fabs((double)a[i] - b[i]) > worst) worst = fabs((double)a[i] - b[i]);
    return worst / sqrt(var / n + 1e-30);
}

static inline int check_summary(void) {
    printf("summary\t%d passed\t%d failed\n", check_n_passed, check_n_failed);
    fflush(stdout);
    free(check_seen);
    check_seen = NULL;
    check_seen_cap = check_seen_n = 0;
    return check_n_failed != 0 || check_n_passed == 0;
}

#endif
