/* grammar.c — the GBNF parser and the matcher of grammar.h.
 *
 * Compiled form: every rule is a list of alternatives; every alternative is a run of elements in
 * one flat array, closed by an END element. An element is a character set (code point ranges,
 * possibly negated), a reference to a rule, or a token element. Repetition is rewritten into
 * extra rules while parsing:  x{m,n} → x … x (m times) then O(n-m), with O(1) ::= x | ε and
 * O(k) ::= x O(k-1) | ε;  x{m,} → x … x S with S ::= x S | ε;  * + ? are {0,} {1,} {0,1}.
 *
 * Matching state: a set of stacks. A stack holds element positions, bottom to top; its top is
 * the next element to match and the ones below are where to go on when the rule above ends.
 * Every stack in a state is expanded: its top is a character set or a token element, or the
 * stack is empty (the root has ended: the output may be complete here). Consuming a code point
 * advances the stacks whose top set contains it, then expands them again: a reference at the top
 * is replaced by one stack per alternative of its rule, and an END pops. When a reference is the
 * last element of its alternative, its continuation (the END) is not pushed (a tail call), so a
 * loop of tail references revisits the same stack, which the per-step set of seen stacks stops;
 * the parser refuses the other loops (left recursion), so expansion always ends. */
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EL_END, EL_CHARS, EL_CHARS_NOT, EL_REF, EL_TOKEN, EL_TOKEN_NOT };

typedef struct {
    uint32_t type; /* EL_* */
    uint32_t a;    /* CHARS: first range; REF: rule; TOKEN: token id */
    uint32_t b;    /* CHARS: number of ranges */
} gel;

/* Limits that keep a hostile grammar from taking unbounded memory or time. */
#define MAX_REPEAT 10000          /* the largest m or n in {m,n} */
#define MAX_ELEMENTS (1 << 22)    /* elements after rewriting the repetitions */
#define MAX_NESTING 200           /* ( ) groups inside each other */
#define MAX_CODEPOINT 0x10FFFF

struct wick_grammar {
    gel *elems;
    int32_t n_elems;
    uint32_t *ranges;        /* pairs lo, hi (inclusive) */
    int32_t *alt_start;      /* first element of each alternative */
    int32_t *rule_first_alt; /* n_rules + 1: rule r's alternatives are [first[r], first[r+1]) */
    int32_t n_rules;
    int32_t root;
    bool uses_tokens;
};

/* ---- the parser ---------------------------------------------------------------------------- */

typedef struct {
    gel *e;
    int32_t n, cap;
} seq;

typedef struct {
    char *name;              /* the rule's name, or "parent#n" for a rule made by the parser */
    bool defined;
    int32_t ref_line, ref_col; /* where a still-undefined rule was first referenced */
    seq *alts;
    int32_t n_alts, cap_alts;
} brule;

typedef struct {
    const char *src;
    size_t len, pos;
    brule *rules;
    int32_t n_rules, cap_rules;
    uint32_t *ranges;
    int32_t n_ranges, cap_ranges; /* in pairs */
    int64_t n_elements;
    int depth;
    bool uses_tokens;
    errmsg *err;
    bool failed;
} parser;

static void where(const parser *p, size_t pos, int32_t *line, int32_t *col) {
    int32_t l = 1, c = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        unsigned char b = (unsigned char)p->src[i];
        if (b == '\n') { l++; c = 1; }
        else if ((b & 0xC0) != 0x80) c++; /* columns count characters, not UTF-8 bytes */
    }
    *line = l;
    *col = c;
}

/* Records the first error, at the parser's position. Returns -1. */
static int perr(parser *p, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = true;
    int32_t line, col;
    where(p, p->pos, &line, &col);
    char what[sizeof p->err->text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return errorf(p->err, WICK_ERR_INVALID_ARG, "line %d, column %d: %s", line, col, what);
}

static int nomem(parser *p) {
    if (!p->failed) errorf(p->err, WICK_ERR_NOMEM, "out of memory while compiling the grammar");
    p->failed = true;
    return -1;
}

static int seq_push(parser *p, seq *s, gel e) {
    if (++p->n_elements > MAX_ELEMENTS) return perr(p, "the grammar grows past %d elements (repetition counts too large)", MAX_ELEMENTS);
    if (s->n == s->cap) {
        int32_t cap = s->cap ? s->cap * 2 : 8;
        gel *grown = realloc(s->e, (size_t)cap * sizeof *grown);
        if (!grown) return nomem(p);
        s->e = grown;
        s->cap = cap;
    }
    s->e[s->n++] = e;
    return 0;
}

static int seq_append(parser *p, seq *s, const seq *t) {
    for (int32_t i = 0; i < t->n; i++)
        if (seq_push(p, s, t->e[i])) return -1;
    return 0;
}

/* Adds a rule (defined = false) and returns its index, or -1. */
static int32_t new_rule(parser *p, const char *name, size_t name_len) {
    if (p->n_rules == p->cap_rules) {
        int32_t cap = p->cap_rules ? p->cap_rules * 2 : 16;
        brule *grown = realloc(p->rules, (size_t)cap * sizeof *grown);
        if (!grown) return nomem(p);
        p->rules = grown;
        p->cap_rules = cap;
    }
    brule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof *r);
    r->name = malloc(name_len + 1);
    if (!r->name) return nomem(p);
    memcpy(r->name, name, name_len);
    r->name[name_len] = 0;
    return p->n_rules++;
}

/* A rule the parser makes for a group or a repetition, named after the rule it sits in. */
static int32_t new_anon_rule(parser *p, int32_t parent) {
    char name[160];
    snprintf(name, sizeof name, "%.120s#%d", p->rules[parent].name, p->n_rules);
    int32_t r = new_rule(p, name, strlen(name));
    if (r >= 0) p->rules[r].defined = true;
    return r;
}

static int32_t find_rule(const parser *p, const char *name, size_t len) {
    for (int32_t i = 0; i < p->n_rules; i++)
        if (strlen(p->rules[i].name) == len && !memcmp(p->rules[i].name, name, len)) return i;
    return -1;
}

/* Moves s into rule r as a new alternative (s is left empty). */
static int add_alt(parser *p, int32_t r, seq *s) {
    brule *rule = &p->rules[r];
    if (rule->n_alts == rule->cap_alts) {
        int32_t cap = rule->cap_alts ? rule->cap_alts * 2 : 4;
        seq *grown = realloc(rule->alts, (size_t)cap * sizeof *grown);
        if (!grown) return nomem(p);
        rule->alts = grown;
        rule->cap_alts = cap;
    }
    rule->alts[rule->n_alts++] = *s;
    memset(s, 0, sizeof *s);
    return 0;
}

static int32_t add_range(parser *p, uint32_t lo, uint32_t hi) {
    if (p->n_ranges == p->cap_ranges) {
        int32_t cap = p->cap_ranges ? p->cap_ranges * 2 : 64;
        uint32_t *grown = realloc(p->ranges, (size_t)cap * 2 * sizeof *grown);
        if (!grown) return nomem(p);
        p->ranges = grown;
        p->cap_ranges = cap;
    }
    p->ranges[2 * p->n_ranges] = lo;
    p->ranges[2 * p->n_ranges + 1] = hi;
    return p->n_ranges++;
}

static int peek(const parser *p) { return p->pos < p->len ? (unsigned char)p->src[p->pos] : -1; }

/* Spaces, tabs, carriage returns and comments; newlines too when newline_ok. */
static void skip_space(parser *p, bool newline_ok) {
    while (p->pos < p->len) {
        char c = p->src[p->pos];
        if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && newline_ok)) p->pos++;
        else if (c == '#') {
            while (p->pos < p->len && p->src[p->pos] != '\n') p->pos++;
        } else break;
    }
}

static bool is_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* One UTF-8 character of the grammar text. -1 on invalid UTF-8. */
static int64_t read_utf8(parser *p) {
    unsigned char b = (unsigned char)p->src[p->pos];
    int extra = b < 0x80 ? 0 : b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2 : b >= 0xF0 && b <= 0xF4 ? 3 : -1;
    if (extra < 0) return perr(p, "invalid UTF-8 in the grammar");
    uint32_t cp = extra == 0 ? b : (uint32_t)(b & (0x3F >> extra));
    for (int i = 1; i <= extra; i++) {
        if (p->pos + (size_t)i >= p->len || ((unsigned char)p->src[p->pos + i] & 0xC0) != 0x80)
            return perr(p, "invalid UTF-8 in the grammar");
        cp = (cp << 6) | ((unsigned char)p->src[p->pos + i] & 0x3F);
    }
    static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[extra] || cp > MAX_CODEPOINT || (cp >= 0xD800 && cp <= 0xDFFF))
        return perr(p, "invalid UTF-8 in the grammar");
    p->pos += (size_t)extra + 1;
    return cp;
}

/* One character of a literal or a class, escapes decoded. -1 on error. */
static int64_t read_char(parser *p) {
    if (p->pos >= p->len) return perr(p, "unexpected end of the grammar");
    if (p->src[p->pos] != '\\') return read_utf8(p);
    p->pos++;
    int e = peek(p);
    if (e < 0) return perr(p, "unexpected end of the grammar after '\\'");
    p->pos++;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
        uint64_t v = 0;
        for (int i = 0; i < digits; i++) {
            int h = peek(p);
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) return perr(p, "expected %d hex digits after '\\%c'", digits, e);
            v = v * 16 + (uint64_t)d;
            p->pos++;
        }
        if (v > MAX_CODEPOINT) return perr(p, "code point %llx is beyond U+10FFFF", (unsigned long long)v);
        return (int64_t)v;
    }
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'': return e;
    default: p->pos -= 2; return perr(p, "unknown escape '\\%c'", e);
    }
}

static int parse_alternatives(parser *p, int32_t rule, bool nested);

/* Rewrites item (one element) repeated {min,max} (max < 0: no limit) into s. */
static int repeat(parser *p, int32_t rule, seq *s, gel x, int64_t min, int64_t max) {
    for (int64_t i = 0; i < min; i++)
        if (seq_push(p, s, x)) return -1;
    if (max < 0) {
        /* S ::= x S | ε */
        int32_t r = new_anon_rule(p, rule);
        if (r < 0) return -1;
        seq alt = {0}, empty = {0};
        if (seq_push(p, &alt, x) || seq_push(p, &alt, (gel){EL_REF, (uint32_t)r, 0}) || add_alt(p, r, &alt) ||
            add_alt(p, r, &empty)) {
            free(alt.e);
            return -1;
        }
        return seq_push(p, s, (gel){EL_REF, (uint32_t)r, 0});
    }
    int32_t prev = -1;
    for (int64_t k = 0; k < max - min; k++) {
        /* O(k+1) ::= x O(k) | ε, O(0) being nothing */
        int32_t r = new_anon_rule(p, rule);
        if (r < 0) return -1;
        seq alt = {0}, empty = {0};
        if (seq_push(p, &alt, x) || (prev >= 0 && seq_push(p, &alt, (gel){EL_REF, (uint32_t)prev, 0})) ||
            add_alt(p, r, &alt) || add_alt(p, r, &empty)) {
            free(alt.e);
            return -1;
        }
        prev = r;
    }
    return prev >= 0 ? seq_push(p, s, (gel){EL_REF, (uint32_t)prev, 0}) : 0;
}

static int64_t read_int(parser *p) {
    int c = peek(p);
    if (c < '0' || c > '9') return perr(p, "expected a number");
    int64_t v = 0;
    while ((c = peek(p)) >= '0' && c <= '9') {
        v = v * 10 + (c - '0');
        if (v > MAX_REPEAT) return perr(p, "repetition count above %d", MAX_REPEAT);
        p->pos++;
    }
    return v;
}

/* A token element after '<': [id]> */
static int parse_token(parser *p, seq *item, bool negated) {
    if (peek(p) != '[') {
        size_t end = p->pos;
        while (end < p->len && p->src[end] != '>' && p->src[end] != '\n') end++;
        return perr(p, "token <%.*s> given by its text needs a vocabulary: use <[id]>", (int)(end - p->pos), p->src + p->pos);
    }
    p->pos++;
    int c = peek(p);
    if (c < '0' || c > '9') return perr(p, "expected a token id");
    int64_t id = 0;
    while ((c = peek(p)) >= '0' && c <= '9') {
        id = id * 10 + (c - '0');
        if (id > INT32_MAX) return perr(p, "token id too large");
        p->pos++;
    }
    if (peek(p) != ']' || p->pos + 1 >= p->len || p->src[p->pos + 1] != '>') return perr(p, "expected ']>' after the token id");
    p->pos += 2;
    p->uses_tokens = true;
    return seq_push(p, item, (gel){negated ? EL_TOKEN_NOT : EL_TOKEN, (uint32_t)id, 0});
}

/* One item (a literal, class, '.', name, group or token) into item. */
static int parse_item(parser *p, int32_t rule, seq *item) {
    int c = peek(p);
    if (c == '"') {
        size_t open = p->pos++;
        while (peek(p) != '"') {
            if (peek(p) < 0 || peek(p) == '\n') { p->pos = open; return perr(p, "unterminated string literal"); }
            int64_t cp = read_char(p);
            if (cp < 0) return -1;
            int32_t r = add_range(p, (uint32_t)cp, (uint32_t)cp);
            if (r < 0 || seq_push(p, item, (gel){EL_CHARS, (uint32_t)r, 1})) return -1;
        }
        p->pos++;
        return 0;
    }
    if (c == '[') {
        size_t open = p->pos++;
        uint32_t type = EL_CHARS;
        if (peek(p) == '^') { type = EL_CHARS_NOT; p->pos++; }
        int32_t first = p->n_ranges, n = 0;
        while (peek(p) != ']') {
            if (peek(p) < 0 || peek(p) == '\n') { p->pos = open; return perr(p, "unterminated character class"); }
            size_t at = p->pos;
            int64_t lo = read_char(p);
            if (lo < 0) return -1;
            int64_t hi = lo;
            if (peek(p) == '-' && p->pos + 1 < p->len && p->src[p->pos + 1] != ']') {
                p->pos++;
                hi = read_char(p);
                if (hi < 0) return -1;
                if (hi < lo) { p->pos = at; return perr(p, "character range is backwards"); }
            }
            if (add_range(p, (uint32_t)lo, (uint32_t)hi) < 0) return -1;
            n++;
        }
        p->pos++;
        return seq_push(p, item, (gel){type, (uint32_t)first, (uint32_t)n});
    }
    if (c == '.') {
        p->pos++;
        return seq_push(p, item, (gel){EL_CHARS_NOT, 0, 0});
    }
    if (c == '(') {
        if (++p->depth > MAX_NESTING) return perr(p, "groups nested more than %d deep", MAX_NESTING);
        p->pos++;
        int32_t r = new_anon_rule(p, rule);
        if (r < 0) return -1;
        skip_space(p, true);
        if (parse_alternatives(p, r, true)) return -1;
        if (peek(p) != ')') return perr(p, "expected ')'");
        p->pos++;
        p->depth--;
        return seq_push(p, item, (gel){EL_REF, (uint32_t)r, 0});
    }
    if (c == '<') {
        p->pos++;
        return parse_token(p, item, false);
    }
    if (c == '!' && p->pos + 1 < p->len && p->src[p->pos + 1] == '<') {
        p->pos += 2;
        return parse_token(p, item, true);
    }
    if (is_name_char(c)) {
        size_t start = p->pos;
        while (is_name_char(peek(p))) p->pos++;
        int32_t r = find_rule(p, p->src + start, p->pos - start);
        if (r < 0) {
            r = new_rule(p, p->src + start, p->pos - start);
            if (r < 0) return -1;
            where(p, start, &p->rules[r].ref_line, &p->rules[r].ref_col);
        }
        return seq_push(p, item, (gel){EL_REF, (uint32_t)r, 0});
    }
    if (c < 0) return perr(p, "unexpected end of the grammar");
    if (c >= 0x20 && c < 0x7F) return perr(p, "unexpected '%c'", c);
    return perr(p, "unexpected character");
}

/* Items until '|', ')', the end, or (outside a group) a newline. */
static int parse_sequence(parser *p, int32_t rule, seq *s, bool nested) {
    for (;;) {
        skip_space(p, nested);
        int c = peek(p);
        if (c < 0 || c == '|' || c == ')' || c == '\n') return 0;
        seq item = {0};
        if (parse_item(p, rule, &item)) { free(item.e); return -1; }
        skip_space(p, nested);
        for (;;) {
            c = peek(p);
            int64_t min, max;
            if (c == '*') { min = 0; max = -1; p->pos++; }
            else if (c == '+') { min = 1; max = -1; p->pos++; }
            else if (c == '?') { min = 0; max = 1; p->pos++; }
            else if (c == '{') {
                p->pos++;
                skip_space(p, nested);
                if ((min = read_int(p)) < 0) { free(item.e); return -1; }
                skip_space(p, nested);
                max = min;
                if (peek(p) == ',') {
                    p->pos++;
                    skip_space(p, nested);
                    max = -1;
                    if (peek(p) != '}' && (max = read_int(p)) < 0) { free(item.e); return -1; }
                    if (max >= 0 && max < min) { free(item.e); return perr(p, "repetition {%lld,%lld}: the maximum is below the minimum", (long long)min, (long long)max); }
                    skip_space(p, nested);
                }
                if (peek(p) != '}') { free(item.e); return perr(p, "expected '}'"); }
                p->pos++;
            } else break;
            skip_space(p, nested);
            gel x;
            if (item.n == 1) x = item.e[0];
            else {
                /* a literal of several characters (or none) repeats as a whole: it becomes a rule */
                int32_t r = new_anon_rule(p, rule);
                if (r < 0 || add_alt(p, r, &item)) { free(item.e); return -1; }
                x = (gel){EL_REF, (uint32_t)r, 0};
            }
            item.n = 0;
            if (repeat(p, rule, &item, x, min, max)) { free(item.e); return -1; }
            if (item.n != 1) {
                /* a further operator applies to the whole repetition */
                int32_t r = new_anon_rule(p, rule);
                if (r < 0 || add_alt(p, r, &item)) { free(item.e); return -1; }
                if (seq_push(p, &item, (gel){EL_REF, (uint32_t)r, 0})) { free(item.e); return -1; }
            }
        }
        int rc = seq_append(p, s, &item);
        free(item.e);
        if (rc) return -1;
    }
}

static int parse_alternatives(parser *p, int32_t rule, bool nested) {
    for (;;) {
        seq s = {0};
        if (parse_sequence(p, rule, &s, nested) || add_alt(p, rule, &s)) { free(s.e); return -1; }
        if (peek(p) != '|') return 0;
        p->pos++;
        skip_space(p, true);
    }
}

static int parse_grammar(parser *p) {
    skip_space(p, true);
    while (p->pos < p->len) {
        size_t start = p->pos;
        while (is_name_char(peek(p))) p->pos++;
        if (p->pos == start) return perr(p, peek(p) >= 0x20 && peek(p) < 0x7F ? "expected a rule name, found '%c'" : "expected a rule name", peek(p));
        size_t name_end = p->pos;
        skip_space(p, false);
        if (p->len - p->pos < 3 || memcmp(p->src + p->pos, "::=", 3)) return perr(p, "expected '::='");
        int32_t r = find_rule(p, p->src + start, name_end - start);
        if (r >= 0 && p->rules[r].defined) {
            p->pos = start;
            return perr(p, "rule '%s' is defined twice", p->rules[r].name);
        }
        if (r < 0 && (r = new_rule(p, p->src + start, name_end - start)) < 0) return -1;
        p->rules[r].defined = true;
        p->pos += 3;
        skip_space(p, true);
        if (parse_alternatives(p, r, false)) return -1;
        if (peek(p) == ')') return perr(p, "unexpected ')'");
        skip_space(p, true);
    }
    return 0;
}

/* ---- compiling: flatten, nullable rules, left recursion ------------------------------------ */

static void free_parser(parser *p) {
    for (int32_t i = 0; i < p->n_rules; i++) {
        for (int32_t a = 0; a < p->rules[i].n_alts; a++) free(p->rules[i].alts[a].e);
        free(p->rules[i].alts);
        free(p->rules[i].name);
    }
    free(p->rules);
    free(p->ranges);
}

/* Whether rule `to` is reachable from `from` along leftmost edges (edge lists per rule). */
static bool reaches(int32_t from, int32_t to, const int32_t *edge_first, const int32_t *edge_to,
                    int32_t n_rules, uint8_t *seen, int32_t *todo) {
    memset(seen, 0, (size_t)n_rules);
    int32_t n = 0;
    todo[n++] = from;
    seen[from] = 1;
    while (n) {
        int32_t r = todo[--n];
        if (r == to) return true;
        for (int32_t e = edge_first[r]; e < edge_first[r + 1]; e++)
            if (!seen[edge_to[e]]) { seen[edge_to[e]] = 1; todo[n++] = edge_to[e]; }
    }
    return false;
}

static int check_left_recursion(const wick_grammar *g, char **names, errmsg *err) {
    int32_t nr = g->n_rules;
    uint8_t *nullable = calloc((size_t)nr, 1), *seen = calloc((size_t)nr, 1);
    int32_t *edge_first = calloc((size_t)nr + 1, sizeof *edge_first);
    int32_t *todo = malloc((size_t)nr * sizeof *todo);
    int32_t n_edges_max = g->n_elems;
    int32_t *edge_to = malloc(((size_t)n_edges_max + 1) * sizeof *edge_to);
    uint8_t *edge_tail = malloc((size_t)n_edges_max + 1);
    int rc = 0;
    if (!nullable || !seen || !edge_first || !todo || !edge_to || !edge_tail) { rc = errorf(err, WICK_ERR_NOMEM, "out of memory"); goto done; }
    /* nullable: a fixpoint over "some alternative is all nullable references" */
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t r = 0; r < nr; r++) {
            if (nullable[r]) continue;
            for (int32_t a = g->rule_first_alt[r]; a < g->rule_first_alt[r + 1] && !nullable[r]; a++) {
                const gel *e = &g->elems[g->alt_start[a]];
                while (e->type == EL_REF && nullable[e->a]) e++;
                if (e->type == EL_END) { nullable[r] = 1; changed = true; }
            }
        }
    }
    /* leftmost edges: r → s when s comes after only nullable references in an alternative of r */
    int32_t n_edges = 0;
    for (int32_t r = 0; r < nr; r++) {
        edge_first[r] = n_edges;
        for (int32_t a = g->rule_first_alt[r]; a < g->rule_first_alt[r + 1]; a++) {
            for (const gel *e = &g->elems[g->alt_start[a]]; e->type == EL_REF; e++) {
                edge_to[n_edges] = (int32_t)e->a;
                edge_tail[n_edges] = e[1].type == EL_END;
                n_edges++;
                if (!nullable[e->a]) break;
            }
        }
    }
    edge_first[nr] = n_edges;
    /* a loop through a non-tail edge grows the stack on every turn: refuse it */
    for (int32_t r = 0; r < nr && !rc; r++)
        for (int32_t e = edge_first[r]; e < edge_first[r + 1]; e++)
            if (!edge_tail[e] && reaches(edge_to[e], r, edge_first, edge_to, nr, seen, todo)) {
                rc = errorf(err, WICK_ERR_INVALID_ARG, "left recursion: rule '%s' reaches itself through '%s' before any character is matched",
                          names[r], names[edge_to[e]]);
                break;
            }
done:
    free(nullable);
    free(seen);
    free(edge_first);
    free(todo);
    free(edge_to);
    free(edge_tail);
    return rc;
}

int grammar_parse(const char *text, size_t len, const char *root, wick_grammar **out,
                  errmsg *err) {
    *out = NULL;
    if (!root) root = "root";
    parser p = {.src = text, .len = len, .err = err};
    if (err) err->text[0] = 0;
    wick_grammar *g = NULL;
    char **names = NULL;
    if (parse_grammar(&p)) goto fail;
    for (int32_t r = 0; r < p.n_rules; r++)
        if (!p.rules[r].defined) {
            errorf(err, WICK_ERR_INVALID_ARG, "undefined rule '%s' (line %d, column %d)", p.rules[r].name, p.rules[r].ref_line, p.rules[r].ref_col);
            goto fail;
        }
    int32_t root_id = find_rule(&p, root, strlen(root));
    if (root_id < 0) {
        errorf(err, WICK_ERR_INVALID_ARG, p.n_rules ? "the grammar has no rule named '%s'" : "the grammar has no rules (it needs one named '%s')", root);
        goto fail;
    }
    g = calloc(1, sizeof *g);
    if (!g) { nomem(&p); goto fail; }
    int64_t n_elems = 0, n_alts = 0;
    for (int32_t r = 0; r < p.n_rules; r++) {
        n_alts += p.rules[r].n_alts;
        for (int32_t a = 0; a < p.rules[r].n_alts; a++) n_elems += p.rules[r].alts[a].n + 1;
    }
    g->n_rules = p.n_rules;
    g->root = root_id;
    g->uses_tokens = p.uses_tokens;
    g->elems = malloc((size_t)n_elems * sizeof *g->elems);
    g->alt_start = malloc((size_t)(n_alts ? n_alts : 1) * sizeof *g->alt_start);
    g->rule_first_alt = malloc(((size_t)p.n_rules + 1) * sizeof *g->rule_first_alt);
    g->ranges = malloc(((size_t)p.n_ranges * 2 + 2) * sizeof *g->ranges);
    if (!g->elems || !g->alt_start || !g->rule_first_alt || !g->ranges) { nomem(&p); goto fail; }
    if (p.n_ranges) memcpy(g->ranges, p.ranges, (size_t)p.n_ranges * 2 * sizeof *g->ranges);
    int32_t ne = 0, na = 0;
    for (int32_t r = 0; r < p.n_rules; r++) {
        g->rule_first_alt[r] = na;
        for (int32_t a = 0; a < p.rules[r].n_alts; a++) {
            g->alt_start[na++] = ne;
            const seq *s = &p.rules[r].alts[a];
            if (s->n) memcpy(g->elems + ne, s->e, (size_t)s->n * sizeof *s->e);
            ne += s->n;
            g->elems[ne++] = (gel){EL_END, 0, 0};
        }
    }
    g->rule_first_alt[p.n_rules] = na;
    g->n_elems = ne;
    names = malloc((size_t)p.n_rules * sizeof *names);
    if (!names) { nomem(&p); goto fail; }
    for (int32_t r = 0; r < p.n_rules; r++) names[r] = p.rules[r].name;
    if (check_left_recursion(g, names, err)) goto fail;
    free(names);
    free_parser(&p);
    *out = g;
    return 0;
fail:
    free(names);
    free_parser(&p);
    grammar_free(g);
    return -1;
}

void grammar_free(wick_grammar *g) {
    if (!g) return;
    free(g->elems);
    free(g->ranges);
    free(g->alt_start);
    free(g->rule_first_alt);
    free(g);
}

int32_t grammar_n_rules(const wick_grammar *g) { return g ? g->n_rules : 0; }
bool grammar_uses_tokens(const wick_grammar *g) { return g && g->uses_tokens; }

/* ---- the matcher --------------------------------------------------------------------------- */

/* A set of stacks: stack i is pool[off[i] .. off[i] + len[i]), bottom first. */
typedef struct {
    uint32_t *pool;
    int32_t pool_n, pool_cap;
    int32_t *off, *len;
    int32_t n, cap;
} stack_set;

struct grammar_matcher {
    const wick_grammar *g;
    stack_set cur;
    /* a character begun but not finished: its bits so far, bytes still to come, and the
     * smallest code point its length may encode (to refuse overlong forms) */
    uint32_t partial_bits;
    int32_t partial_left;
    uint32_t partial_min;
    stack_set scratch[3];
    /* expansion: every stack seen in this step (hash table of indices into seen) */
    stack_set seen;
    int32_t *slots;
    int32_t n_slots;
    stack_set todo;
    uint32_t *one;              /* the stack being expanded */
    int32_t one_cap;
    bool oom;
};

static void set_clear(stack_set *s) { s->n = 0; s->pool_n = 0; }
static void set_free(stack_set *s) { free(s->pool); free(s->off); free(s->len); memset(s, 0, sizeof *s); }

static int set_add(grammar_matcher *m, stack_set *s, const uint32_t *st, int32_t n) {
    if (s->n == s->cap) {
        int32_t cap = s->cap ? s->cap * 2 : 16;
        int32_t *off = realloc(s->off, (size_t)cap * sizeof *off);
        if (off) s->off = off;
        int32_t *len = realloc(s->len, (size_t)cap * sizeof *len);
        if (len) s->len = len;
        if (!off || !len) { m->oom = true; return -1; }
        s->cap = cap;
    }
    if (s->pool_n + n > s->pool_cap) {
        int32_t cap = s->pool_cap ? s->pool_cap : 64;
        while (cap < s->pool_n + n) cap *= 2;
        uint32_t *pool = realloc(s->pool, (size_t)cap * sizeof *pool);
        if (!pool) { m->oom = true; return -1; }
        s->pool = pool;
        s->pool_cap = cap;
    }
    if (n) memcpy(s->pool + s->pool_n, st, (size_t)n * sizeof *st);
    s->off[s->n] = s->pool_n;
    s->len[s->n] = n;
    s->pool_n += n;
    s->n++;
    return 0;
}

static uint32_t stack_hash(const uint32_t *st, int32_t n) {
    uint32_t h = 2166136261u ^ (uint32_t)n; /* FNV-1a over the positions */
    for (int32_t i = 0; i < n; i++) h = (h ^ st[i]) * 16777619u;
    return h;
}

static void seen_reset(grammar_matcher *m) {
    set_clear(&m->seen);
    if (m->slots) memset(m->slots, 0xFF, (size_t)m->n_slots * sizeof *m->slots);
}

/* Adds the stack to the seen set; returns 1 if it was new, 0 if seen before, -1 on no memory. */
static int seen_insert(grammar_matcher *m, const uint32_t *st, int32_t n) {
    if ((m->seen.n + 1) * 2 > m->n_slots) {
        int32_t ns = m->n_slots ? m->n_slots * 2 : 256;
        int32_t *slots = malloc((size_t)ns * sizeof *slots);
        if (!slots) { m->oom = true; return -1; }
        memset(slots, 0xFF, (size_t)ns * sizeof *slots);
        for (int32_t i = 0; i < m->seen.n; i++) {
            uint32_t h = stack_hash(m->seen.pool + m->seen.off[i], m->seen.len[i]) & (uint32_t)(ns - 1);
            while (slots[h] >= 0) h = (h + 1) & (uint32_t)(ns - 1);
            slots[h] = i;
        }
        free(m->slots);
        m->slots = slots;
        m->n_slots = ns;
    }
    uint32_t mask = (uint32_t)m->n_slots - 1, h = stack_hash(st, n) & mask;
    for (; m->slots[h] >= 0; h = (h + 1) & mask) {
        int32_t i = m->slots[h];
        if (m->seen.len[i] == n && !memcmp(m->seen.pool + m->seen.off[i], st, (size_t)n * sizeof *st)) return 0;
    }
    if (set_add(m, &m->seen, st, n)) return -1;
    m->slots[h] = m->seen.n - 1;
    return 1;
}

static bool is_terminal(uint32_t type) { return type != EL_END && type != EL_REF; }

/* Expands the stack st[0..n) into out — with its top advanced past a matched element first
 * when advance is set: ENDs popped, references replaced by their alternatives, and every
 * resulting stack with a terminal top (or empty) added once per step (seen_reset). st must not
 * point into the matcher's own scratch (todo, seen, one). */
static int expand(grammar_matcher *m, stack_set *out, const uint32_t *st, int32_t n, bool advance) {
    const wick_grammar *g = m->g;
    set_clear(&m->todo);
    if (set_add(m, &m->todo, st, n)) return -1;
    if (advance && n > 0) m->todo.pool[n - 1]++;
    while (m->todo.n) {
        int32_t k = --m->todo.n;
        int32_t len = m->todo.len[k];
        if (len + 2 > m->one_cap) {
            int32_t cap = (len + 2) * 2;
            uint32_t *one = realloc(m->one, (size_t)cap * sizeof *one);
            if (!one) { m->oom = true; return -1; }
            m->one = one;
            m->one_cap = cap;
        }
        memcpy(m->one, m->todo.pool + m->todo.off[k], (size_t)len * sizeof *m->one);
        m->todo.pool_n = m->todo.off[k];
        while (len > 0 && g->elems[m->one[len - 1]].type == EL_END) len--;
        int fresh = seen_insert(m, m->one, len);
        if (fresh < 0) return -1;
        if (!fresh) continue;
        if (len == 0 || is_terminal(g->elems[m->one[len - 1]].type)) {
            if (set_add(m, out, m->one, len)) return -1;
            continue;
        }
        /* a reference on top: its continuation (unless the alternative ends there), then each
         * alternative's first element */
        uint32_t pos = m->one[len - 1];
        int32_t rule = (int32_t)g->elems[pos].a;
        int32_t base = len - 1;
        if (g->elems[pos + 1].type != EL_END) m->one[base++] = pos + 1;
        for (int32_t a = g->rule_first_alt[rule]; a < g->rule_first_alt[rule + 1]; a++) {
            m->one[base] = (uint32_t)g->alt_start[a];
            if (set_add(m, &m->todo, m->one, base + 1)) return -1;
        }
    }
    return 0;
}

static bool chars_match(const wick_grammar *g, const gel *e, uint32_t cp) {
    const uint32_t *r = g->ranges + 2 * e->a;
    bool in = false;
    for (uint32_t i = 0; i < e->b && !in; i++) in = cp >= r[2 * i] && cp <= r[2 * i + 1];
    return e->type == EL_CHARS ? in : !in;
}

/* Whether some code point in [lo, hi] is in the set of element e. */
static bool chars_match_some(const wick_grammar *g, const gel *e, uint32_t lo, uint32_t hi) {
    const uint32_t *r = g->ranges + 2 * e->a;
    if (e->type == EL_CHARS) {
        for (uint32_t i = 0; i < e->b; i++)
            if (r[2 * i] <= hi && r[2 * i + 1] >= lo) return true;
        return false;
    }
    /* negated: some point of [lo, hi] outside every range */
    for (uint32_t p = lo;;) {
        bool moved = false;
        for (uint32_t i = 0; i < e->b; i++)
            if (p >= r[2 * i] && p <= r[2 * i + 1]) {
                if (r[2 * i + 1] >= hi) return false;
                p = r[2 * i + 1] + 1;
                moved = true;
            }
        if (!moved) return true;
    }
}

static bool is_chars(uint32_t type) { return type == EL_CHARS || type == EL_CHARS_NOT; }

/* Whether the element on a stack's top takes code point cp (a character element) or, when
 * token ≥ 0, the token (a token element). */
static inline bool top_takes(const wick_grammar *g, const gel *e, uint32_t cp, int32_t token) {
    if (token < 0) return is_chars(e->type) && chars_match(g, e, cp);
    return (e->type == EL_TOKEN && e->a == (uint32_t)token) || (e->type == EL_TOKEN_NOT && e->a != (uint32_t)token);
}

/* in → out: the stacks whose top takes code point cp (token < 0) or the token, advanced and
 * expanded. Inlined with a constant token < 0 for characters: the branch folds away. */
static inline int step_stacks(grammar_matcher *m, const stack_set *in, stack_set *out, uint32_t cp, int32_t token) {
    const wick_grammar *g = m->g;
    set_clear(out);
    seen_reset(m);
    for (int32_t i = 0; i < in->n; i++) {
        int32_t n = in->len[i];
        if (n == 0) continue;
        const uint32_t *st = in->pool + in->off[i];
        if (top_takes(g, &g->elems[st[n - 1]], cp, token) && expand(m, out, st, n, true)) return -1;
    }
    return 0;
}

static int step_codepoint(grammar_matcher *m, const stack_set *in, stack_set *out, uint32_t cp) {
    return step_stacks(m, in, out, cp, -1);
}

static int step_token(grammar_matcher *m, const stack_set *in, stack_set *out, int32_t token) {
    return step_stacks(m, in, out, 0, token);
}

/* in → out: the stacks that can still take a character whose code point lies in [lo, hi]. */
static int keep_partial(grammar_matcher *m, const stack_set *in, stack_set *out, uint32_t lo, uint32_t hi) {
    const wick_grammar *g = m->g;
    set_clear(out);
    for (int32_t i = 0; i < in->n; i++) {
        int32_t n = in->len[i];
        if (n == 0) continue;
        const uint32_t *st = in->pool + in->off[i];
        const gel *e = &g->elems[st[n - 1]];
        if (is_chars(e->type) && chars_match_some(g, e, lo, hi) && set_add(m, out, st, n)) return -1;
    }
    return 0;
}

grammar_matcher *grammar_matcher_new(const wick_grammar *g) {
    if (!g) return NULL;
    grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->g = g;
    grammar_matcher_reset(m);
    if (m->oom) {
        grammar_matcher_free(m);
        return NULL;
    }
    return m;
}

void grammar_matcher_free(grammar_matcher *m) {
    if (!m) return;
    set_free(&m->cur);
    for (int i = 0; i < 3; i++) set_free(&m->scratch[i]);
    set_free(&m->seen);
    set_free(&m->todo);
    free(m->slots);
    free(m->one);
    free(m);
}

void grammar_matcher_reset(grammar_matcher *m) {
    const wick_grammar *g = m->g;
    m->oom = false;
    m->partial_left = 0;
    set_clear(&m->cur);
    seen_reset(m);
    for (int32_t a = g->rule_first_alt[g->root]; a < g->rule_first_alt[g->root + 1]; a++) {
        uint32_t start = (uint32_t)g->alt_start[a];
        if (expand(m, &m->cur, &start, 1, false)) return;
    }
}

/* Runs the token over cur into one of the scratch sets. Returns the index of the scratch set
 * holding the result (its partial character in *bits, *left, *min_cp), -1 if the token does not
 * fit, -2 if memory ran out. */
static int run_token(grammar_matcher *m, int32_t token, const char *bytes, size_t n,
                     uint32_t *bits_out, int32_t *left_out, uint32_t *min_out) {
    const wick_grammar *g = m->g;
    stack_set *by_token = &m->scratch[2];
    set_clear(by_token);
    /* a token element consumes the whole token (never in the middle of a character) */
    if (token >= 0 && g->uses_tokens && m->partial_left == 0 && step_token(m, &m->cur, by_token, token)) return -2;
    int res = -1;
    uint32_t bits = m->partial_bits, min_cp = m->partial_min;
    int32_t left = m->partial_left;
    if (n > 0) {
        const stack_set *in = &m->cur;
        int which = 0;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            unsigned char b = (unsigned char)bytes[i];
            if (left == 0) {
                if (b < 0x80) {
                    if (step_codepoint(m, in, &m->scratch[which], b)) return -2;
                    in = &m->scratch[which];
                    which ^= 1;
                    ok = in->n > 0;
                    continue;
                }
                if (b >= 0xC2 && b <= 0xDF) { left = 1; bits = b & 0x1F; min_cp = 0x80; }
                else if (b >= 0xE0 && b <= 0xEF) { left = 2; bits = b & 0x0F; min_cp = 0x800; }
                else if (b >= 0xF0 && b <= 0xF4) { left = 3; bits = b & 0x07; min_cp = 0x10000; }
                else ok = false;
                continue;
            }
            if ((b & 0xC0) != 0x80) { ok = false; continue; }
            bits = (bits << 6) | (b & 0x3F);
            if (--left > 0) continue;
            if (bits < min_cp || bits > MAX_CODEPOINT || (bits >= 0xD800 && bits <= 0xDFFF)) { ok = false; continue; }
            if (step_codepoint(m, in, &m->scratch[which], bits)) return -2;
            in = &m->scratch[which];
            which ^= 1;
            ok = in->n > 0;
        }
        if (ok && left > 0) {
            /* the token ends inside a character: keep the stacks that some completion fits */
            uint32_t lo = bits << (6 * left), hi = lo | ((1u << (6 * left)) - 1);
            if (lo < min_cp) lo = min_cp;
            if (hi > MAX_CODEPOINT) hi = MAX_CODEPOINT;
            /* no valid character begins so (an overlong form, a surrogate, beyond U+10FFFF) */
            if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) ok = false;
            else {
                if (keep_partial(m, in, &m->scratch[which], lo, hi)) return -2;
                in = &m->scratch[which];
                which ^= 1;
                ok = in->n > 0;
            }
        }
        /* with n > 0, in is a scratch set now: a byte either completed a character (a step)
         * or left one unfinished at the end (keep_partial) */
        if (ok) res = (int)(in - m->scratch);
    }
    if (by_token->n > 0) {
        if (res < 0) { res = 2; bits = 0; left = 0; }
        else if (left == 0) {
            /* both ways fit: the union of the two sets */
            stack_set *dst = &m->scratch[res];
            seen_reset(m);
            for (int32_t i = 0; i < dst->n; i++)
                if (seen_insert(m, dst->pool + dst->off[i], dst->len[i]) < 0) return -2;
            for (int32_t i = 0; i < by_token->n; i++) {
                int fresh = seen_insert(m, by_token->pool + by_token->off[i], by_token->len[i]);
                if (fresh < 0) return -2;
                if (fresh && set_add(m, dst, by_token->pool + by_token->off[i], by_token->len[i])) return -2;
            }
        }
        /* else: the bytes end inside a character, which a token element cannot share: the
         * character reading is kept */
    }
    *bits_out = bits;
    *left_out = left;
    *min_out = min_cp;
    return res;
}

bool grammar_matcher_fits(grammar_matcher *m, int32_t token, const char *bytes, size_t n) {
    uint32_t bits, min_cp;
    int32_t left;
    return run_token(m, token, bytes, n, &bits, &left, &min_cp) >= 0;
}

int grammar_matcher_accept(grammar_matcher *m, int32_t token, const char *bytes, size_t n) {
    uint32_t bits, min_cp;
    int32_t left;
    int r = run_token(m, token, bytes, n, &bits, &left, &min_cp);
    if (r == -2) return -1;
    if (r < 0) return 0;
    stack_set t = m->cur;
    m->cur = m->scratch[r];
    m->scratch[r] = t;
    m->partial_bits = bits;
    m->partial_left = left;
    m->partial_min = min_cp;
    return 1;
}

bool grammar_matcher_complete(const grammar_matcher *m) {
    if (m->partial_left) return false;
    for (int32_t i = 0; i < m->cur.n; i++)
        if (m->cur.len[i] == 0) return true;
    return false;
}

bool grammar_matcher_can_continue(const grammar_matcher *m) {
    for (int32_t i = 0; i < m->cur.n; i++)
        if (m->cur.len[i] > 0) return true;
    return false;
}

/* The first byte of the UTF-8 form of code point cp. */
static unsigned lead_byte(uint32_t cp) {
    if (cp < 0x80) return cp;
    if (cp < 0x800) return 0xC0 | (cp >> 6);
    if (cp < 0x10000) return 0xE0 | (cp >> 12);
    return 0xF0 | (cp >> 18);
}

void grammar_matcher_first_bytes(const grammar_matcher *m, bool mask[256], bool *tokens_possible) {
    const wick_grammar *g = m->g;
    *tokens_possible = false;
    if (m->partial_left) {
        for (int b = 0; b < 256; b++) mask[b] = b >= 0x80 && b < 0xC0;
        return;
    }
    memset(mask, 0, 256 * sizeof *mask);
    for (int32_t i = 0; i < m->cur.n; i++) {
        int32_t n = m->cur.len[i];
        if (n == 0) continue;
        const gel *e = &g->elems[m->cur.pool[m->cur.off[i] + n - 1]];
        if (e->type == EL_TOKEN || e->type == EL_TOKEN_NOT) { *tokens_possible = true; continue; }
        const uint32_t *r = g->ranges + 2 * e->a;
        if (e->type == EL_CHARS) {
            for (uint32_t k = 0; k < e->b; k++)
                for (unsigned b = lead_byte(r[2 * k]); b <= lead_byte(r[2 * k + 1]) && b < 256; b++) mask[b] = true;
        } else {
            /* negated: an ASCII byte is out when a range holds it; every lead byte of a longer
             * character may still start one */
            for (unsigned b = 0; b < 0x80; b++)
                if (chars_match(g, e, b)) mask[b] = true;
            for (unsigned b = 0xC2; b <= 0xF4; b++) mask[b] = true;
        }
    }
}
