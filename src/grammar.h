/* grammar.h — GBNF grammars: a parser that compiles the text to rules, and a matcher that says
 * whether bytes keep the output a prefix of the grammar's language and whether it is complete.
 *
 * The format is llama.cpp's GBNF, as documented in its grammars/README.md (MIT licence):
 *   rule       name ::= alternatives          names are letters, digits, '-' and '_'
 *   alternatives  sequence | sequence | …     (an empty sequence is allowed)
 *   sequence   items separated by spaces; a newline ends the rule unless inside ( ),
 *              or right after '::=' or '|'
 *   item       "literal"  [class]  [^class]  .  name  ( alternatives )  <[id]>  !<[id]>
 *              followed by any of  *  +  ?  {m}  {m,}  {m,n}
 *   escapes    \n \r \t \\ \" \[ \] \- \^ and \xHH \uHHHH \UHHHHHHHH (code points)
 *   comments   # to the end of the line
 * Terminals are Unicode code points; '.' is any one code point. <[id]> matches the token with
 * that id and !<[id]> any token but that one (a token given by its text, <think>, needs a
 * vocabulary and is refused here).
 *
 * Left recursion that would grow the matcher's stacks forever (a rule reaching itself through
 * leftmost, possibly empty, symbols, where some step of the loop is not in tail position) is
 * refused; a loop made only of tail references, such as ( [x]* )*, is fine.
 *
 * The matcher works on bytes and is UTF-8 aware: a token's bytes may end inside a character, and
 * then only the continuations that some character class can still take are accepted. */
#ifndef WICK_GRAMMAR_H
#define WICK_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"

typedef struct wick_grammar wick_grammar;
typedef struct grammar_matcher grammar_matcher;

/* Parses len bytes of GBNF and compiles it with the rule named root (NULL: "root") as the
 * start. 0, or -1 with a message in err: "line 3, column 14: expected '::='", "undefined rule
 * 'numero' (line 4, column 17)", "left recursion: rule 'asdf' reaches itself …". */
int grammar_parse(const char *text, size_t len, const char *root, wick_grammar **out,
                  errmsg *err);
void grammar_free(wick_grammar *g);
/* Counts, for tests and messages. */
int32_t grammar_n_rules(const wick_grammar *g);
/* Whether the grammar uses token elements (<[id]>, !<[id]>). */
bool grammar_uses_tokens(const wick_grammar *g);

/* A matcher keeps its own state; the grammar must outlive it. NULL when memory runs out. */
grammar_matcher *grammar_matcher_new(const wick_grammar *g);
void grammar_matcher_free(grammar_matcher *m);
/* Back to the start (nothing consumed). */
void grammar_matcher_reset(grammar_matcher *m);
/* Whether the token (id, or -1 for plain text) with these bytes keeps the output a prefix of the
 * language; the state does not change. Empty bytes fit only when the token itself is matched
 * by a token element. */
bool grammar_matcher_fits(grammar_matcher *m, int32_t token, const char *bytes, size_t n);
/* Consumes the token: 1 if it fit (state advanced), 0 if not (state unchanged), -1 if memory
 * ran out (state unchanged). */
int grammar_matcher_accept(grammar_matcher *m, int32_t token, const char *bytes, size_t n);
/* Whether what was consumed is a whole sentence of the language (no character left half done). */
bool grammar_matcher_complete(const grammar_matcher *m);
/* Whether anything at all may follow (false once the language allows no longer output). */
bool grammar_matcher_can_continue(const grammar_matcher *m);
/* A conservative filter for the next byte: mask[b] is false only for first bytes no token can
 * start with now. Tokens matched by token elements are not covered: *tokens_possible says
 * whether some stack waits for a token element (then test every token). */
void grammar_matcher_first_bytes(const grammar_matcher *m, bool mask[256], bool *tokens_possible);

#endif
