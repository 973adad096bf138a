/* generate.c — the generation loop of the seed chapter (wick.h, "generation"): prefill the
 * prompt into the KV cache (reusing the prefix already cached), then one token per call:
 * logits → sampler chain → token → detokenizer (whole UTF-8 characters only) → stop strings,
 * and the token is evaluated when generation goes on. When the context is full the cache is
 * shifted: the first n_keep tokens stay, the oldest half of the rest is dropped (or, where the
 * cache cannot shift — a sliding window's ring, a hybrid's recurrent state — the tokens that
 * stay are evaluated again).
 * With a grammar (wick_gen_set_grammar) each draw is constrained to the tokens whose text keeps
 * the output a prefix of the grammar's language (sampler_sample_filtered), an end-of-generation
 * token only where the output is complete, and generation ends once the output is complete and
 * nothing may follow it (WICK_FINISH_GRAMMAR). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "forward.h"
#include "grammar.h"
#include "sampler.h"
#include "tokenizer.h"
#include "wick.h"

#define MAX_PROBS 64

struct wick_gen {
    wick_ctx *c;
    /* settings (wick_gen_set), used from the next start */
    wick_sampler_params sp;
    int32_t *bias_ids;
    float *bias_vals;
    int32_t n_bias;
    char **stops;
    int32_t n_stops;
    int32_t max_tokens, n_keep, ignore_eos, n_probs, truncate_prompt;
    int32_t checkpoint; /* a prompt position where a hybrid's recurrent state is also kept (0: none) */
    /* the run */
    wick_sampler *sampler;
    stop_matcher sm;
    bool sm_ready, started;
    detok_stream dt;
    int32_t *hist;      /* hist[i] is the token whose K/V sit at cache position i (i < n_past) */
    int32_t hist_cap;
    int32_t keep;       /* n_keep in effect for this run */
    int32_t pending;    /* drawn but not yet evaluated, or -1 */
    int32_t generated, finish, token, shifted, n_prompt_eval;
    int32_t reevaluated; /* tokens evaluated again by a context shift in the last call (no shift possible) */
    char *text;
    int32_t text_len, text_cap;
    int32_t top_ids[MAX_PROBS];
    float top_probs[MAX_PROBS];
    int32_t n_top;
    /* the grammar (wick_gen_set_grammar) and its matcher for this run */
    wick_grammar *grammar;
    grammar_matcher *matcher;
    /* every token's text as the grammar sees it (a control token's is empty), built once:
     * token t's bytes are piece_bytes[piece_off[t] .. piece_off[t+1]) */
    int32_t *piece_off;
    char *piece_bytes;
    bool first_byte_ok[256]; /* the matcher's first-byte filter for the current step */
    bool tokens_possible;    /* some stack waits for a token element */
};

wick_status wick_gen_new(wick_ctx *c, wick_gen **out) {
    if (!c || !out) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_new: NULL argument");
    wick_gen *g = calloc(1, sizeof *g);
    if (!g) return api_fail(WICK_ERR_NOMEM, "out of memory");
    g->c = c;
    sampler_params_default(&g->sp);
    g->sp.repeat_penalty = 1.0f; /* off by default, as llama.cpp: penalties change greedy text */
    g->pending = -1;
    *out = g;
    return api_ok();
}

static void free_stops(wick_gen *g) {
    for (int32_t i = 0; i < g->n_stops; i++) free(g->stops[i]);
    free(g->stops);
    g->stops = NULL;
    g->n_stops = 0;
}

void wick_gen_free(wick_gen *g) {
    if (!g) return;
    free_stops(g);
    free(g->bias_ids);
    free(g->bias_vals);
    if (g->sampler) sampler_free(g->sampler);
    if (g->sm_ready) stop_matcher_free(&g->sm);
    free(g->hist);
    free(g->text);
    grammar_matcher_free(g->matcher);
    grammar_free(g->grammar);
    free(g->piece_off);
    free(g->piece_bytes);
    free(g);
}

wick_status wick_gen_set_grammar(wick_gen *g, const char *gbnf, const char *root) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "NULL generator");
    grammar_matcher_free(g->matcher);
    grammar_free(g->grammar);
    g->matcher = NULL;
    g->grammar = NULL;
    g->started = false; /* the next run starts with the new grammar */
    if (!gbnf || !*gbnf) return api_ok();
    errmsg err = {0};
    wick_grammar *gr;
    if (grammar_parse(gbnf, strlen(gbnf), root && *root ? root : NULL, &gr, &err))
        return api_fail(err.code, "grammar: %s", err.text);
    g->matcher = grammar_matcher_new(gr);
    if (!g->matcher) {
        grammar_free(gr);
        return api_fail(WICK_ERR_NOMEM, "out of memory");
    }
    g->grammar = gr;
    return api_ok();
}

wick_status wick_grammar_check(const char *gbnf, const char *root, const char *text, size_t len, int32_t *verdict) {
    if (!gbnf || !verdict || (!text && len)) return api_fail(WICK_ERR_INVALID_ARG, "wick_grammar_check: NULL argument");
    errmsg err = {0};
    wick_grammar *gr;
    if (grammar_parse(gbnf, strlen(gbnf), root && *root ? root : NULL, &gr, &err))
        return api_fail(err.code, "grammar: %s", err.text);
    grammar_matcher *m = grammar_matcher_new(gr);
    int r = m ? grammar_matcher_accept(m, -1, text, len) : -1;
    if (r >= 0) *verdict = r == 0 ? 0 : grammar_matcher_complete(m) ? 2 : 1;
    grammar_matcher_free(m);
    grammar_free(gr);
    if (r < 0) return api_fail(WICK_ERR_NOMEM, "out of memory");
    return api_ok();
}

/* The text of every token, as the streaming detokenizer shows it (control tokens: none). */
static int build_pieces(wick_gen *g) {
    if (g->piece_off) return 0;
    const wick_vocab *v = g->c->model->vocab;
    int32_t n = vocab_n_tokens(v);
    int32_t *off = malloc(((size_t)n + 1) * sizeof *off);
    size_t cap = (size_t)n * 4 + 64, len = 0;
    char *bytes = malloc(cap);
    if (!off || !bytes) goto fail;
    for (int32_t t = 0; t < n; t++) {
        off[t] = (int32_t)len;
        if (vocab_is_control(v, t)) continue;
        int need = vocab_token_to_piece(v, t, bytes + len, (int)(cap - len));
        if (need < 0) continue;
        if ((size_t)need > cap - len) {
            while ((size_t)need > cap - len) cap *= 2;
            char *grown = realloc(bytes, cap);
            if (!grown) goto fail;
            bytes = grown;
            vocab_token_to_piece(v, t, bytes + len, (int)(cap - len));
        }
        len += (size_t)need;
    }
    off[n] = (int32_t)len;
    g->piece_off = off;
    g->piece_bytes = bytes;
    return 0;
fail:
    free(off);
    free(bytes);
    return -1;
}

/* The grammar's constraint on the next token (sampler_token_filter). */
static bool grammar_allows(void *ctx, int32_t t) {
    wick_gen *g = ctx;
    if (vocab_is_eog(g->c->model->vocab, t)) return !g->ignore_eos && grammar_matcher_complete(g->matcher);
    const char *bytes = g->piece_bytes + g->piece_off[t];
    size_t n = (size_t)(g->piece_off[t + 1] - g->piece_off[t]);
    if (n > 0 && !g->first_byte_ok[(unsigned char)bytes[0]] && !g->tokens_possible) return false;
    if (n == 0 && !g->tokens_possible) return false;
    return grammar_matcher_fits(g->matcher, t, bytes, n);
}

static bool whole(double v) { return v == floor(v); }

wick_status wick_gen_set(wick_gen *g, const char *name, double v) {
    if (!g || !name) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_set: NULL argument");
    if (isnan(v)) return api_fail(WICK_ERR_INVALID_ARG, "%s: not a number", name);
#define RANGE(lo, hi)                                                                                     \
    if (!(v >= (lo) && v <= (hi)))                                                                        \
        return api_fail(WICK_ERR_INVALID_ARG, "%s must be between %g and %g, got %g", name, (double)(lo), (double)(hi), v)
#define INTEGER()                                                                                         \
    if (!whole(v)) return api_fail(WICK_ERR_INVALID_ARG, "%s must be an integer, got %g", name, v)
    if (!strcmp(name, "temperature")) { RANGE(0, 1e6); g->sp.temperature = (float)v; }
    else if (!strcmp(name, "top_k")) { RANGE(0, 1 << 30); INTEGER(); g->sp.top_k = (int32_t)v; }
    else if (!strcmp(name, "top_p")) { RANGE(0, 1); g->sp.top_p = (float)v; }
    else if (!strcmp(name, "min_p")) { RANGE(0, 1); g->sp.min_p = (float)v; }
    else if (!strcmp(name, "repeat_penalty")) { RANGE(1e-6, 1e6); g->sp.repeat_penalty = (float)v; }
    else if (!strcmp(name, "repeat_last_n")) { RANGE(0, 1 << 30); INTEGER(); g->sp.repeat_last_n = (int32_t)v; }
    else if (!strcmp(name, "frequency_penalty")) { RANGE(-1e6, 1e6); g->sp.frequency_penalty = (float)v; }
    else if (!strcmp(name, "presence_penalty")) { RANGE(-1e6, 1e6); g->sp.presence_penalty = (float)v; }
    else if (!strcmp(name, "seed")) { RANGE(0, 9007199254740992.0); INTEGER(); g->sp.seed = (uint64_t)v; }
    else if (!strcmp(name, "max_tokens")) { RANGE(0, 1 << 30); INTEGER(); g->max_tokens = (int32_t)v; }
    else if (!strcmp(name, "n_keep")) { RANGE(-1, 1 << 30); INTEGER(); g->n_keep = (int32_t)v; }
    else if (!strcmp(name, "ignore_eos")) { RANGE(0, 1); INTEGER(); g->ignore_eos = (int32_t)v; }
    else if (!strcmp(name, "n_probs")) { RANGE(0, MAX_PROBS); INTEGER(); g->n_probs = (int32_t)v; }
    else if (!strcmp(name, "truncate_prompt")) { RANGE(0, 1); INTEGER(); g->truncate_prompt = (int32_t)v; }
    else if (!strcmp(name, "checkpoint")) { RANGE(0, 1 << 30); INTEGER(); g->checkpoint = (int32_t)v; }
    else return api_fail(WICK_ERR_INVALID_ARG, "unknown generation setting '%s'", name);
#undef RANGE
#undef INTEGER
    return api_ok();
}

wick_status wick_gen_add_stop(wick_gen *g, const char *text) {
    if (!g || !text || !*text) return api_fail(WICK_ERR_INVALID_ARG, "a stop string must be non-empty");
    char **grown = realloc(g->stops, (size_t)(g->n_stops + 1) * sizeof *grown);
    if (!grown) return api_fail(WICK_ERR_NOMEM, "out of memory");
    g->stops = grown;
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (!copy) return api_fail(WICK_ERR_NOMEM, "out of memory");
    memcpy(copy, text, n + 1);
    g->stops[g->n_stops++] = copy;
    return api_ok();
}

wick_status wick_gen_clear_stops(wick_gen *g) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "NULL generator");
    free_stops(g);
    return api_ok();
}

wick_status wick_gen_set_bias(wick_gen *g, int32_t token, float bias) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "NULL generator");
    if (token < 0 || token >= g->c->model->config.n_vocab)
        return api_fail(WICK_ERR_INVALID_ARG, "logit bias: token %d out of range", token);
    if (isnan(bias) || bias == INFINITY)
        return api_fail(WICK_ERR_INVALID_ARG, "logit bias must be finite or -infinity");
    int32_t *ids = realloc(g->bias_ids, (size_t)(g->n_bias + 1) * sizeof *ids);
    if (ids) g->bias_ids = ids;
    float *vals = realloc(g->bias_vals, (size_t)(g->n_bias + 1) * sizeof *vals);
    if (vals) g->bias_vals = vals;
    if (!ids || !vals) return api_fail(WICK_ERR_NOMEM, "out of memory");
    g->bias_ids[g->n_bias] = token;
    g->bias_vals[g->n_bias++] = bias;
    return api_ok();
}

wick_status wick_gen_clear_bias(wick_gen *g) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "NULL generator");
    g->n_bias = 0;
    return api_ok();
}

static int append_text(wick_gen *g, const char *s, size_t n) {
    if (n == 0) return 0;
    if ((size_t)g->text_len + n + 1 > (size_t)g->text_cap) {
        size_t cap = ((size_t)g->text_len + n + 1) * 2;
        char *t = realloc(g->text, cap);
        if (!t) return -1;
        g->text = t;
        g->text_cap = (int32_t)cap;
    }
    memcpy(g->text + g->text_len, s, n);
    g->text_len += (int32_t)n;
    g->text[g->text_len] = 0;
    return 0;
}

static int ensure_hist(wick_gen *g, int32_t n) {
    if (n <= g->hist_cap) return 0;
    int32_t *h = realloc(g->hist, (size_t)n * sizeof *h);
    if (!h) return -1;
    g->hist = h;
    g->hist_cap = n;
    return 0;
}

/* The cached positions a prompt of np tokens p can go on from: the longest prefix it shares with
 * the cache, cut back to a position the cache can return to; never the whole prompt (its last
 * token's logits are needed). */
static int32_t reusable_prefix(const wick_gen *g, const int32_t *p, int32_t np) {
    int32_t common = 0, cached = wick_n_past(g->c);
    while (common < cached && common < np - 1 && g->hist[common] == p[common]) common++;
    return kv_cache_rewind_point(g->c, common);
}

int32_t wick_gen_reusable(const wick_gen *g, const int32_t *tokens, int32_t n) {
    if (!g || !tokens || n < 1 || !g->hist) return 0;
    return reusable_prefix(g, tokens, n);
}

wick_status wick_gen_state_save(wick_gen *g, void *buf, size_t cap, size_t *needed) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_state_save: NULL generator");
    if (!g->hist && wick_n_past(g->c) > 0)
        return api_fail(WICK_ERR_INVALID_ARG, "the context was evaluated outside this generator: its token ids are not known here");
    return wick_state_save(g->c, g->hist, wick_n_past(g->c), buf, cap, needed);
}

wick_status wick_gen_state_load(wick_gen *g, const void *blob, size_t len) {
    if (!g) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_state_load: NULL generator");
    if (ensure_hist(g, wick_n_ctx(g->c))) return api_fail(WICK_ERR_NOMEM, "out of memory");
    int32_t n = 0;
    wick_status s = wick_state_load(g->c, blob, len, g->hist, g->hist_cap, &n);
    if (s != WICK_OK) return s;
    g->pending = -1;
    g->started = false; /* the next call is a wick_gen_start */
    return WICK_OK;
}

wick_status wick_gen_start(wick_gen *g, const int32_t *tokens, int32_t n) {
    if (!g || (!tokens && n)) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_start: NULL argument");
    if (g->c->model->config.encoder)
        return api_fail(WICK_ERR_INVALID_ARG, "%s is an embedding model (an encoder): it has no logits to generate from; use embed",
                        g->c->model->config.arch);
    wick_ctx *c = g->c;
    int32_t n_ctx = wick_n_ctx(c), n_vocab = c->model->config.n_vocab;
    if (n < 1) return api_fail(WICK_ERR_INVALID_ARG, "the prompt is empty");
    /* negative ids are image positions (wick.h WICK_IMAGE_TOKEN): wick_eval checks that the context holds their rows */
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] >= n_vocab)
            return api_fail(WICK_ERR_INVALID_ARG, "prompt token %d is out of range (vocabulary of %d)", tokens[i], n_vocab);
    int32_t bos = vocab_bos(c->model->vocab);
    int32_t keep = g->n_keep < 0 ? n : g->n_keep;
    if (keep == 0 && tokens[0] == bos) keep = 1; /* BOS always stays */
    if (keep > n) keep = n;
    if (keep > n_ctx / 2) keep = n_ctx / 2;      /* a shift must free room */

    /* the prompt as it will be cached: whole, or its first `keep` and last tokens */
    int32_t *p = malloc((size_t)n * sizeof *p);
    if (!p) return api_fail(WICK_ERR_NOMEM, "out of memory");
    int32_t np = n;
    memcpy(p, tokens, (size_t)n * sizeof *p);
    if (n > n_ctx - 1) {
        if (!g->truncate_prompt) {
            free(p);
            return api_fail(WICK_ERR_CONTEXT_FULL,
                                       "the prompt has %d tokens but the context holds %d (ask for a larger context, or truncate the prompt)", n, n_ctx);
        }
        int32_t tail = n_ctx / 2 - keep; /* leave half the window for the answer */
        memmove(p + keep, tokens + n - tail, (size_t)tail * sizeof *p);
        np = keep + tail;
    }
    if (ensure_hist(g, n_ctx)) { free(p); return api_fail(WICK_ERR_NOMEM, "out of memory"); }

    /* reuse the cached prefix; at least the last prompt token is evaluated (its logits are needed).
     * The cache goes back to the longest shared prefix it can return to: a sliding window's ring
     * must still hold the window before it, and a recurrent state (hybrid models) can only go
     * back to a snapshot, taken below at the end of each prompt but its last token (a regenerated
     * answer goes on there) and at the caller's checkpoint (a new chat turn goes on there);
     * anywhere else the prompt is evaluated from 0. */
    int32_t common = reusable_prefix(g, p, np);
    if (wick_kv_trim(c, common) != WICK_OK) common = 0, wick_kv_trim(c, 0);
    wick_status s = WICK_OK;
    if (ctx_has_state(c)) {
        /* the caller's checkpoint (a chat's conversation so far, before the template's answer
         * prompt, which the next turn may render differently), then the prompt but its last token */
        int32_t from = common, cp = np == n ? g->checkpoint : 0;
        if (cp > from && cp < np - 1) {
            s = wick_eval(c, p + from, cp - from, 0);
            if (s == WICK_OK) kv_state_snapshot(c);
            from = cp;
        }
        if (s == WICK_OK && np - 1 > from) s = wick_eval(c, p + from, np - 1 - from, 0);
        if (s == WICK_OK) {
            kv_state_snapshot(c);
            s = wick_eval(c, p + np - 1, 1, 0);
        }
    } else {
        s = wick_eval(c, p + common, np - common, 0);
    }
    if (s != WICK_OK) {
        if (wick_kv_trim(c, common) != WICK_OK) wick_kv_trim(c, 0); /* a recurrent state past its snapshot */
        free(p);
        return s;
    }
    memcpy(g->hist, p, (size_t)np * sizeof *p);
    g->n_prompt_eval = np - common;

    /* a fresh sampler (settings may have changed) that has seen the prompt */
    if (g->sampler) sampler_free(g->sampler);
    g->sampler = NULL;
    wick_sampler_params sp = g->sp;
    sp.bias_tokens = g->bias_ids;
    sp.bias_values = g->bias_vals;
    sp.n_bias = g->n_bias;
    errmsg err = {0};
    if (sampler_new(&g->sampler, &sp, n_vocab, &err)) {
        free(p);
        return api_status(&err);
    }
    for (int32_t i = 0; i < np; i++) sampler_accept(g->sampler, p[i]);
    free(p);
    if (g->sm_ready) stop_matcher_free(&g->sm);
    g->sm_ready = false;
    if (stop_matcher_init(&g->sm, (const char *const *)g->stops, g->n_stops, &err)) return api_status(&err);
    g->sm_ready = true;
    detok_init_continuing(&g->dt, c->model->vocab);
    if (g->grammar) {
        if (build_pieces(g)) return api_fail(WICK_ERR_NOMEM, "out of memory");
        grammar_matcher_reset(g->matcher);
    }
    g->keep = keep;
    g->pending = -1;
    g->generated = 0;
    g->finish = WICK_FINISH_NONE;
    g->token = -1;
    g->text_len = 0;
    g->n_top = 0;
    g->started = true;
    return api_ok();
}

/* Makes room for one more position: drops the oldest half of what follows the kept tokens. */
static wick_status context_shift(wick_gen *g) {
    wick_ctx *c = g->c;
    int32_t n_past = wick_n_past(c);
    int32_t discard = (n_past - g->keep) / 2;
    if (discard < 1) return api_fail(WICK_ERR_CONTEXT_FULL, "the context is full and nothing can be dropped");
    bool can_shift = kv_cache_can_shift(c, g->keep, discard);
    if (can_shift) {
        wick_status s = wick_kv_shift(c, g->keep, discard);
        if (s != WICK_OK) return s;
    }
    memmove(g->hist + g->keep, g->hist + g->keep + discard, (size_t)(n_past - g->keep - discard) * sizeof *g->hist);
    if (!can_shift) {
        /* a sliding-window layer's ring no longer holds kept positions its window will see, or
         * a recurrent state (hybrid models) holds the dropped tokens mixed in: the tokens that
         * stay are evaluated again instead (slower than a shift, never wrong) */
        wick_kv_trim(c, 0);
        wick_status s = wick_eval(c, g->hist, n_past - discard, 0);
        if (s != WICK_OK) return s;
        g->reevaluated += n_past - discard;
    }
    g->shifted += discard;
    return WICK_OK;
}

/* Appends the detokenizer's and the stop matcher's held text (end of generation). */
static int flush_text(wick_gen *g) {
    char buf[64];
    int n = detok_flush(&g->dt, buf, sizeof buf);
    const char *out;
    size_t out_len;
    if (n > 0 && !g->sm.stopped) {
        if (stop_matcher_push(&g->sm, buf, (size_t)n, &out, &out_len) < 0) return -1;
        if (append_text(g, out, out_len)) return -1;
    }
    stop_matcher_flush(&g->sm, &out, &out_len);
    return append_text(g, out, out_len);
}

/* Evaluates the token drawn last (making room first when the context is full). */
static wick_status eval_pending(wick_gen *g) {
    wick_ctx *c = g->c;
    if (wick_n_past(c) >= wick_n_ctx(c)) {
        wick_status s = context_shift(g);
        if (s != WICK_OK) return s;
    }
    wick_status s = wick_eval(c, &g->pending, 1, 0);
    if (s != WICK_OK) return s;
    g->hist[wick_n_past(c) - 1] = g->pending;
    g->pending = -1;
    return WICK_OK;
}

wick_status wick_gen_next(wick_gen *g) {
    if (!g || !g->started) return api_fail(WICK_ERR_INVALID_ARG, "wick_gen_next before wick_gen_start");
    if (g->finish != WICK_FINISH_NONE) return api_fail(WICK_ERR_INVALID_ARG, "generation has finished; start again");
    wick_ctx *c = g->c;
    g->text_len = 0;
    g->shifted = 0;
    g->reevaluated = 0;
    if (g->pending >= 0) {
        wick_status s = eval_pending(g);
        if (s != WICK_OK) return s;
    }
    int32_t tok;
    if (g->grammar) {
        grammar_matcher_first_bytes(g->matcher, g->first_byte_ok, &g->tokens_possible);
        tok = sampler_sample_filtered(g->sampler, wick_get_logits(c, -1), grammar_allows, g);
        if (tok < 0 && grammar_matcher_complete(g->matcher)) {
            /* complete, and no token may follow (EOG ignored or banned): the run ends here, with
             * no token drawn */
            g->token = -1;
            g->finish = WICK_FINISH_GRAMMAR;
            if (flush_text(g)) return api_fail(WICK_ERR_NOMEM, "out of memory");
            return api_ok();
        }
        if (tok < 0) return api_fail(WICK_ERR_INVALID_ARG, "no token can be drawn: the grammar allows none that the model can produce here");
    } else {
        tok = sampler_sample(g->sampler, wick_get_logits(c, -1));
        if (tok < 0) return api_fail(WICK_ERR_INVALID_ARG, "no token can be drawn (every logit is banned)");
    }
    sampler_accept(g->sampler, tok);
    g->token = tok;
    g->n_top = g->n_probs ? sampler_top(g->sampler, g->n_probs, g->top_ids, g->top_probs) : 0;
    g->generated++;
    if (!g->ignore_eos && vocab_is_eog(c->model->vocab, tok)) {
        g->finish = WICK_FINISH_EOG;
        if (flush_text(g)) return api_fail(WICK_ERR_NOMEM, "out of memory");
        return api_ok();
    }
    if (g->grammar) {
        const char *bytes = g->piece_bytes + g->piece_off[tok];
        size_t len = (size_t)(g->piece_off[tok + 1] - g->piece_off[tok]);
        if (grammar_matcher_accept(g->matcher, tok, bytes, len) < 0) return api_fail(WICK_ERR_NOMEM, "out of memory");
    }
    char piece[1024];
    int n = detok_push(&g->dt, tok, piece, sizeof piece);
    if (n > 0) {
        const char *out;
        size_t out_len;
        int r = stop_matcher_push(&g->sm, piece, (size_t)n, &out, &out_len);
        if (r < 0 || append_text(g, out, out_len)) return api_fail(WICK_ERR_NOMEM, "out of memory");
        if (r == 1) g->finish = WICK_FINISH_STOP;
    }
    if (g->finish == WICK_FINISH_NONE && g->grammar && grammar_matcher_complete(g->matcher) &&
        !grammar_matcher_can_continue(g->matcher)) {
        /* the output is a whole sentence of the grammar and nothing may follow it */
        g->finish = WICK_FINISH_GRAMMAR;
        if (flush_text(g)) return api_fail(WICK_ERR_NOMEM, "out of memory");
    }
    if (g->finish == WICK_FINISH_NONE && g->max_tokens > 0 && g->generated >= g->max_tokens) {
        g->finish = WICK_FINISH_LENGTH;
        if (flush_text(g)) return api_fail(WICK_ERR_NOMEM, "out of memory");
    }
    if (g->finish == WICK_FINISH_NONE) g->pending = tok;
    /* an external context (wick.h) evaluates the token now: the caller computes its logits
     * before the next call samples from them */
    if (g->pending >= 0 && c->external) {
        wick_status s = eval_pending(g);
        if (s != WICK_OK) return s;
    }
    return api_ok();
}

int32_t wick_gen_token(const wick_gen *g) { return g ? g->token : -1; }
int32_t wick_gen_finish(const wick_gen *g) { return g ? g->finish : WICK_FINISH_NONE; }
const char *wick_gen_text(const wick_gen *g, int32_t *len) {
    if (len) *len = g ? g->text_len : 0;
    return g && g->text ? g->text : "";
}
int32_t wick_gen_probs(const wick_gen *g, const int32_t **ids, const float **probs) {
    if (!g) return 0;
    if (ids) *ids = g->top_ids;
    if (probs) *probs = g->top_probs;
    return g->n_top;
}
int32_t wick_gen_shifted(const wick_gen *g) { return g ? g->shifted : 0; }
int32_t wick_gen_reevaluated(const wick_gen *g) { return g ? g->reevaluated : 0; }
int32_t wick_gen_n_prompt_eval(const wick_gen *g) { return g ? g->n_prompt_eval : 0; }
int32_t wick_gen_candidates(const wick_gen *g) {
    /* a grammar may refuse every one of the best candidates and then draw from the rest */
    if (!g || !g->started || !g->sampler || g->grammar || g->finish != WICK_FINISH_NONE) return 0;
    return sampler_candidates_needed(g->sampler);
}
