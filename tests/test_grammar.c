/* test_grammar.c — the GBNF engine of src/grammar.c against the cases of llama.cpp's
 * tests/test-grammar-integration.cpp (extracted as data into tests/grammar-cases.json by
 * tools/extract-grammar-cases.mjs): every grammar must build, every "pass" string must match and
 * every "fail" string must not; the grammars that llama.cpp refuses to build must be refused.
 * Then every *.gbnf file of a directory (llama.cpp's grammars/, given at run time) must parse,
 * parse errors must name their line and column, and bytes split anywhere (inside characters)
 * must give the same verdicts as whole characters.
 *
 *   test_grammar tests/grammar-cases.json [directory of .gbnf files]
 *
 * Output and exit status: tests/check.h. */
#include "check.h"
#include "grammar.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- a small JSON reader: enough for the cases file ---- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jval {
    jtype t;
    double num;
    char *str;          /* J_STR: bytes (may hold NUL: str_len) */
    size_t str_len;
    struct jval *items; /* J_ARR, J_OBJ (values) */
    char **keys;        /* J_OBJ */
    int n;
} jval;

static const char *jp;

static void jspace(void) { while (*jp == ' ' || *jp == '\n' || *jp == '\r' || *jp == '\t') jp++; }

static void put_utf8(char **buf, size_t *len, size_t *cap, unsigned cp) {
    if (*len + 4 >= *cap) { *cap = *cap * 2 + 16; *buf = realloc(*buf, *cap); }
    char *o = *buf + *len;
    if (cp < 0x80) { o[0] = (char)cp; *len += 1; }
    else if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); *len += 2; }
    else if (cp < 0x10000) { o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63)); *len += 3; }
    else { o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63)); o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63)); *len += 4; }
}

static unsigned hex4(const char *s) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) v = v * 16 + (unsigned)(s[i] <= '9' ? s[i] - '0' : (s[i] | 32) - 'a' + 10);
    return v;
}

static char *jstring(size_t *out_len) {
    jp++; /* the quote */
    size_t len = 0, cap = 16;
    char *buf = malloc(cap);
    while (*jp != '"') {
        if (*jp == '\\') {
            jp++;
            char e = *jp++;
            unsigned cp = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : (unsigned char)e;
            if (e == 'u') {
                cp = hex4(jp);
                jp += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && jp[0] == '\\' && jp[1] == 'u') {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(jp + 2) - 0xDC00);
                    jp += 6;
                }
            }
            put_utf8(&buf, &len, &cap, cp);
        } else {
            if (len + 1 >= cap) { cap *= 2; buf = realloc(buf, cap); }
            buf[len++] = *jp++;
        }
    }
    jp++;
    buf[len] = 0;
    *out_len = len;
    return buf;
}

static jval jvalue(void) {
    jval v = {0};
    jspace();
    if (*jp == '{' || *jp == '[') {
        bool obj = *jp == '{';
        v.t = obj ? J_OBJ : J_ARR;
        jp++;
        jspace();
        int cap = 0;
        while (*jp != (obj ? '}' : ']')) {
            if (v.n == cap) {
                cap = cap ? cap * 2 : 8;
                v.items = realloc(v.items, (size_t)cap * sizeof *v.items);
                if (obj) v.keys = realloc(v.keys, (size_t)cap * sizeof *v.keys);
            }
            if (obj) {
                size_t kl;
                v.keys[v.n] = jstring(&kl);
                jspace();
                jp++; /* : */
            }
            v.items[v.n++] = jvalue();
            jspace();
            if (*jp == ',') { jp++; jspace(); }
        }
        jp++;
    } else if (*jp == '"') {
        v.t = J_STR;
        v.str = jstring(&v.str_len);
    } else if (!strncmp(jp, "null", 4)) { jp += 4; }
    else if (!strncmp(jp, "true", 4)) { v.t = J_BOOL; v.num = 1; jp += 4; }
    else if (!strncmp(jp, "false", 5)) { v.t = J_BOOL; jp += 5; }
    else { v.t = J_NUM; v.num = strtod(jp, (char **)&jp); }
    return v;
}

static void jfree(jval *v) {
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static const jval *jget(const jval *o, const char *key) {
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}


/* ---- matching an input ---- */

/* How text is fed: each character as a token of id 0 (what llama.cpp's test does, so that a
 * negated token element such as !<[11]> takes it), or as plain bytes in chunks of chunk bytes
 * (id -1, chunks ending inside characters). */
typedef enum { FEED_CHARACTERS, FEED_BYTES } feed_mode;

static int utf8_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

static bool feed_text(grammar_matcher *m, const char *s, size_t n, feed_mode mode, size_t chunk) {
    for (size_t i = 0; i < n;) {
        size_t step = mode == FEED_CHARACTERS ? (size_t)utf8_len((unsigned char)s[i]) : chunk;
        if (step > n - i) step = n - i;
        if (grammar_matcher_accept(m, mode == FEED_CHARACTERS ? 0 : -1, s + i, step) != 1) return false;
        i += step;
    }
    return true;
}

static bool matches(grammar_matcher *m, const jval *input, feed_mode mode, size_t chunk) {
    grammar_matcher_reset(m);
    if (input->t == J_STR) {
        if (!feed_text(m, input->str, input->str_len, mode, chunk)) return false;
    } else {
        for (int i = 0; i < input->n; i++) {
            const jval *part = &input->items[i];
            if (part->t == J_STR) {
                if (!feed_text(m, part->str, part->str_len, mode, chunk)) return false;
            } else {
                char piece[32];
                int len = snprintf(piece, sizeof piece, "<[%d]>", (int)part->num);
                if (grammar_matcher_accept(m, (int32_t)part->num, piece, (size_t)len) != 1) return false;
            }
        }
    }
    return grammar_matcher_complete(m);
}

static void describe(const jval *input, char *out, size_t out_len) {
    size_t o = 0;
    out[0] = 0;
    const jval *parts = input->t == J_STR ? input : input->items;
    int n = input->t == J_STR ? 1 : input->n;
    for (int i = 0; i < n && o + 16 < out_len; i++) {
        if (parts[i].t == J_STR) o += (size_t)snprintf(out + o, out_len - o, "%.*s", (int)(out_len - o - 8), parts[i].str);
        else o += (size_t)snprintf(out + o, out_len - o, "<[%d]>", (int)parts[i].num);
    }
    for (size_t i = 0; i < o; i++)
        if (out[i] == '\n') out[i] = ' ';
}

/* the checks grammar.case.I.WHAT.build (on a failure), .matches.J and .rejects.J */
static void run_case(int index, const jval *c) {
    const jval *what = jget(c, "what"), *text = jget(c, "text");
    errmsg err = {0};
    char label[700];
    wick_grammar *g;
    if (grammar_parse(text->str, text->str_len, "root", &g, &err)) {
        snprintf(label, sizeof label, "%.80s: builds (%.400s)", what->str, err.text);
        check(false, check_id("grammar.case.%d.%s.build", index, check_slug(what->str)), "%s", label);
        return;
    }
    grammar_matcher *m = grammar_matcher_new(g);
    for (int pass = 1; pass >= 0; pass--) {
        const jval *list = jget(c, pass ? "pass" : "fail");
        for (int i = 0; i < list->n; i++) {
            char shown[200];
            describe(&list->items[i], shown, sizeof shown);
            bool ok = matches(m, &list->items[i], FEED_CHARACTERS, 0) == (bool)pass;
            /* the same verdict with the text as bytes, one at a time and in threes, when the
             * input has no token markers */
            if (list->items[i].t == J_STR && !grammar_uses_tokens(g))
                ok = ok && matches(m, &list->items[i], FEED_BYTES, 1) == (bool)pass &&
                     matches(m, &list->items[i], FEED_BYTES, 3) == (bool)pass;
            snprintf(label, sizeof label, "%.80s: %s \"%s\"", what->str, pass ? "matches" : "rejects", shown);
            check(ok, check_id("grammar.case.%d.%s.%s.%d", index, check_slug(what->str), pass ? "matches" : "rejects", i), "%s", label);
        }
    }
    grammar_matcher_free(m);
    grammar_free(g);
}

static void expect_error(const char *text, const char *root, const char *expected) {
    errmsg err = {0};
    char label[900];
    wick_grammar *g;
    int rc = grammar_parse(text, strlen(text), root, &g, &err);
    if (rc == 0) grammar_free(g);
    snprintf(label, sizeof label, "refused with \"%s\" (got \"%s\")", expected, rc ? err.text : "no error");
    check(rc != 0 && strstr(err.text, expected) != NULL, check_id("grammar.error.%s", check_slug(expected)), "%s", label);
}

static bool match_text(const char *grammar, const char *text) {
    errmsg err = {0};
    wick_grammar *g;
    if (grammar_parse(grammar, strlen(grammar), NULL, &g, &err)) {
        check_note("(%s)", err.text);
        return false;
    }
    grammar_matcher *m = grammar_matcher_new(g);
    bool ok = grammar_matcher_accept(m, -1, text, strlen(text)) == 1 && grammar_matcher_complete(m);
    grammar_matcher_free(m);
    grammar_free(g);
    return ok;
}

static void own_checks(void) {
    /* errors say where */
    expect_error("root ::= \"a\"\nexpr ::= [0-9\n", NULL, "line 2, column 10: unterminated character class");
    expect_error("root ::= foo\n", NULL, "undefined rule 'foo' (line 1, column 10)");
    expect_error("root ::= \"a\" \"b\n", NULL, "line 1, column 14: unterminated string literal");
    expect_error("root ::= (\"a\" | \"b\"\n", NULL, "expected ')'");
    expect_error("root = \"a\"\n", NULL, "line 1, column 6: expected '::='");
    expect_error("root ::= \"a\"{3,2}\n", NULL, "maximum is below the minimum");
    expect_error("root ::= \"\\q\"\n", NULL, "line 1, column 11: unknown escape '\\q'");
    expect_error("root ::= [z-a]\n", NULL, "character range is backwards");
    expect_error("root ::= <think>\n", NULL, "needs a vocabulary");
    expect_error("root ::= \"a\"\nroot ::= \"b\"\n", NULL, "line 2, column 1: rule 'root' is defined twice");
    expect_error("root ::= x\nx ::= x \"a\" | \"b\"\n", NULL, "left recursion: rule 'x'");
    expect_error("", NULL, "no rules");
    /* escapes, classes, repetition, UTF-8 */
    check(match_text("root ::= \"\\x41\\u00e9\\U0001F600\"", "A\xC3\xA9\xF0\x9F\x98\x80"), "grammar.own.escapes", "\\x \\u \\U escapes");
    check(match_text("root ::= [^a-c]{2} [\\u0400-\\u04FF]+", "d\xE2\x82\xAC\xD0\x96\xD0\xAF"), "grammar.own.negated-class-utf8", "negated class over multi-byte characters, then a Cyrillic range");
    check(!match_text("root ::= [^a-c]{2}", "dab"), "grammar.own.negated-class-refuses", "negated class refuses a member");
    check(match_text("root ::= (\"ab\" | \"c\"){2,3} # comment\n", "abcab"), "grammar.own.group-repeated", "group repeated {2,3}, comment at the end");
    check(!match_text("root ::= (\"ab\" | \"c\"){2,3}", "ababab" "c"), "grammar.own.group-repeated-too-often", "group repeated more than 3 times refused");
    check(match_text("root ::=\n  \"x\" |\n  \"y\"\n", "y"), "grammar.own.newlines", "newline after '::=' and after '|'");
    check(match_text("root ::= .+", "\xE6\x97\xA5\xE6\x9C\xAC"), "grammar.own.dot-characters", "'.' takes whole characters");
    check(!match_text("root ::= \"a\"", "\xC3"), "grammar.own.unfinished-character", "an unfinished character is not complete");
    check(!match_text("root ::= .", "\xC0\x80"), "grammar.own.overlong", "an overlong encoding is refused");
    {
        errmsg err = {0};
        wick_grammar *g;
        bool built = grammar_parse("root ::= .+", 11, NULL, &g, &err) == 0;
        grammar_matcher *m = built ? grammar_matcher_new(g) : NULL;
        /* beginnings that no valid character has: overlong (F0 80, E0 80), surrogate (ED A0),
         * beyond U+10FFFF (F4 90) */
        bool ok = m && !grammar_matcher_fits(m, -1, "\xF0\x80", 2) && !grammar_matcher_fits(m, -1, "\xE0\x80", 2) &&
                  !grammar_matcher_fits(m, -1, "\xED\xA0", 2) && !grammar_matcher_fits(m, -1, "\xF4\x90", 2) &&
                  grammar_matcher_fits(m, -1, "\xF0\x90", 2) && grammar_matcher_fits(m, -1, "\xED\x9F", 2);
        check(ok, "grammar.own.invalid-partial-character", "a partial character that no valid character begins with is refused at once");
        grammar_matcher_free(m);
        if (built) grammar_free(g);
    }
    /* a token ending inside a character: the partial character must fit some class */
    {
        errmsg err = {0};
        wick_grammar *g;
        const char *gr = "root ::= [\\u00e0-\\u00ff] \"!\"";
        bool built = grammar_parse(gr, strlen(gr), NULL, &g, &err) == 0;
        grammar_matcher *m = built ? grammar_matcher_new(g) : NULL;
        bool ok = m && grammar_matcher_fits(m, -1, "\xC3", 1)       /* U+00C0..U+00FF begin so */
                  && !grammar_matcher_fits(m, -1, "\xC4", 1)        /* U+0100.. do not fit */
                  && grammar_matcher_accept(m, -1, "\xC3", 1) == 1 && !grammar_matcher_complete(m)
                  && !grammar_matcher_fits(m, -1, "\x80", 1)        /* U+00C0 is below the class */
                  && grammar_matcher_accept(m, -1, "\xA9!", 2) == 1 && grammar_matcher_complete(m)
                  && !grammar_matcher_can_continue(m);
        check(ok, "grammar.own.token-inside-character", "a token that ends inside a character is checked against what can complete it");
        grammar_matcher_free(m);
        if (built) grammar_free(g);
    }
    /* the first-byte filter never excludes a byte that fits */
    {
        errmsg err = {0};
        wick_grammar *g;
        const char *gr = "root ::= [a-c] | [^\\x00-\\x7f] | \"\\u00e9\"";
        bool built = grammar_parse(gr, strlen(gr), NULL, &g, &err) == 0;
        grammar_matcher *m = built ? grammar_matcher_new(g) : NULL;
        bool mask[256], tokens, ok = m != NULL;
        if (m) grammar_matcher_first_bytes(m, mask, &tokens);
        for (int b = 0; b < 256 && ok; b++) {
            char one = (char)b;
            if (grammar_matcher_fits(m, -1, &one, 1) && !mask[b]) ok = false;
        }
        check(ok && !mask['d'] && mask['a'] && mask[0xC3], "grammar.own.first-bytes", "first-byte filter is conservative and excludes what cannot start");
        grammar_matcher_free(m);
        if (built) grammar_free(g);
    }
}

static void gbnf_dir(const char *dir) {
    DIR *d = opendir(dir);
    check(d != NULL, "grammar.gbnf.directory", "opens the grammars directory %s", dir);
    if (!d) return;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".gbnf")) continue;
        errmsg err = {0};
        char path[4096], label[1200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *text = check_read(check_id("grammar.gbnf.%s.read", e->d_name), path, &len);
        wick_grammar *g = NULL;
        int rc = text ? grammar_parse(text, len, NULL, &g, &err) : -1;
        snprintf(label, sizeof label, "%s parses (%d rules)%s%s", e->d_name, rc ? 0 : grammar_n_rules(g), rc ? ": " : "", rc ? err.text : "");
        check(rc == 0, check_id("grammar.gbnf.%s", e->d_name), "%s", label);
        if (rc == 0 && !strcmp(e->d_name, "json.gbnf")) {
            grammar_matcher *m = grammar_matcher_new(g);
            const char *good = "{\"a\": [1, -2.5e3, \"x\\u00e9\xC3\xA9\"], \"b\": {\"c\": null, \"d\": true}}";
            const char *bad = "{\"a\": [1, 2,]}";
            bool ok_good = grammar_matcher_accept(m, -1, good, strlen(good)) == 1 && grammar_matcher_complete(m);
            grammar_matcher_reset(m);
            bool ok_bad = grammar_matcher_accept(m, -1, bad, strlen(bad)) == 1;
            check(ok_good && !ok_bad, "grammar.gbnf.json-object", "json.gbnf takes a nested object and refuses a trailing comma");
            grammar_matcher_free(m);
        }
        grammar_free(g);
        free(text);
        n++;
    }
    closedir(d);
    check(n >= 5, "grammar.gbnf.count", "the directory holds llama.cpp's grammars");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_grammar grammar-cases.json [gbnf directory]\n");
        return 2;
    }
    size_t len;
    char *text = check_read("grammar.cases.read", argv[1], &len);
    if (!text) return check_summary();
    jp = text;
    jval root = jvalue();
    const jval *grammars = jget(&root, "grammars");
    for (int i = 0; i < grammars->n; i++) run_case(i, &grammars->items[i]);
    const jval *failures = jget(&root, "build_failures"), *successes = jget(&root, "build_successes");
    for (int i = 0; i < failures->n; i++) {
        const jval *c = &failures->items[i];
        errmsg err = {0};
        char label[800];
        wick_grammar *g;
        const jval *gr = jget(c, "grammar");
        int rc = grammar_parse(gr->str, gr->str_len, jget(c, "root")->str, &g, &err);
        if (rc == 0) grammar_free(g);
        snprintf(label, sizeof label, "refuses to build (%s): %s", jget(c, "what")->str, rc ? err.text : "built");
        check(rc != 0, check_id("grammar.build-failure.%d.%s", i, check_slug(jget(c, "what")->str)), "%s", label);
    }
    for (int i = 0; i < successes->n; i++) {
        const jval *c = &successes->items[i];
        errmsg err = {0};
        char label[800];
        wick_grammar *g;
        const jval *gr = jget(c, "grammar");
        int rc = grammar_parse(gr->str, gr->str_len, jget(c, "root")->str, &g, &err);
        if (rc == 0) grammar_free(g);
        snprintf(label, sizeof label, "builds (%s)%s", jget(c, "what")->str, rc ? err.text : "");
        check(rc == 0, check_id("grammar.build-success.%d.%s", i, check_slug(jget(c, "what")->str)), "%s", label);
    }
    own_checks();
    if (argc > 2) gbnf_dir(argv[2]);
    jfree(&root);
    free(text);
    return check_summary();
}
