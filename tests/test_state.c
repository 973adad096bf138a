/* tests/test_state.c — generation over a hybrid model's recurrent state (lfm2, qwen35): the
 * state's memory does not grow with the context; a three-turn chat evaluates only each new
 * turn and its logits equal a fresh evaluation of the whole conversation; regenerating an
 * answer goes back to the snapshot at the end of its prompt; a stopped (aborted) answer and a
 * prompt that diverges inside it go on correctly; the cache refuses to go back where it holds no
 * snapshot; and a conversation past the context window keeps going, the kept tokens evaluated
 * again, with the logits of a fresh evaluation. Each comparison would fail with a state that
 * was not saved, restored or reset right. Usage: test_state MODEL.gguf [MODEL.gguf …]. Output
 * and exit status: tests/check.h; the ids begin with state.FILE (the file's name) and, for the
 * chat cases, the thread count (t1; t2 natively). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "forward.h"
#include "wick.h"

static wick_ctx *new_ctx(const wick_model *m, int n_ctx, int threads) {
    wick_ctx_params p;
    wick_ctx_default_params(&p);
    p.n_ctx = n_ctx;
    p.n_threads = threads;
    wick_ctx *c = NULL;
    if (wick_ctx_new(m, &p, &c) != WICK_OK) check_note("context: %s", wick_last_error());
    return c;
}

/* the logits of the last of these tokens, evaluated afresh in a new context */
static double against_fresh(const wick_model *m, const float *logits, const int32_t *toks, int n, int n_ctx) {
    wick_ctx *f = new_ctx(m, n_ctx, 1);
    if (!f || wick_eval(f, toks, n, 0) != WICK_OK) {
        check_note("fresh evaluation: %s", wick_last_error());
        wick_ctx_free(f);
        return INFINITY;
    }
    double d = check_row_difference(logits, wick_get_logits(f, -1), m->config.n_vocab);
    wick_ctx_free(f);
    return d;
}

/* a conversation: the tokens the context has evaluated, in order */
typedef struct {
    int32_t tok[4096];
    int n;
} convo;

static void add(convo *cv, const int32_t *t, int n) {
    memcpy(cv->tok + cv->n, t, (size_t)n * sizeof *t);
    cv->n += n;
}

/* a turn's new tokens: deterministic, within the vocabulary */
static void turn_tokens(int32_t *t, int n, int seed, int n_vocab) {
    for (int i = 0; i < n; i++) t[i] = 3 + (int32_t)((seed * 7919u + (unsigned)i * 104729u) % (unsigned)(n_vocab - 3));
}

/* greedy generation of up to n tokens; returns how many were drawn into out (all but the last
 * are evaluated: the context holds the prompt and out[0..k−1)) */
static int generate(wick_gen *g, int32_t *out, int n) {
    int k = 0;
    while (k < n) {
        if (wick_gen_next(g) != WICK_OK) { check_note("next: %s", wick_last_error()); break; }
        out[k++] = wick_gen_token(g);
        if (wick_gen_finish(g) != WICK_FINISH_NONE) break;
    }
    return k;
}

static void chat_cases(const wick_model *m, const char *name, int threads) {
    char what[256];
    const int n_ctx = 512, V = m->config.n_vocab;
    wick_ctx *c = new_ctx(m, n_ctx, threads);
    wick_gen *g = NULL;
    if (!c || wick_gen_new(c, &g) != WICK_OK) {
        check(0, check_id("state.%s.t%d.context", name, threads), "a context and a generator");
        wick_ctx_free(c);
        return;
    }
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "max_tokens", 6);
    wick_gen_set(g, "ignore_eos", 1);
    static convo prompt;
    int32_t t[64], out[16];
    /* three turns: each prompt is the whole conversation so far plus the new turn */
    prompt.n = 0;
    prompt.tok[prompt.n++] = 1;
    for (int turn = 0; turn < 3; turn++) {
        turn_tokens(t, 9 + turn, turn + 1, V);
        add(&prompt, t, 9 + turn);
        int before = wick_n_past(c);
        if (wick_gen_start(g, prompt.tok, prompt.n) != WICK_OK) {
            check(0, check_id("state.%s.t%d.turn%d.start", name, threads, turn + 1), "%s", wick_last_error());
            break;
        }
        int evaluated = wick_gen_n_prompt_eval(g);
        /* turn 1 evaluates everything; later ones the new turn and the last answer's unevaluated token */
        int want = turn == 0 ? prompt.n : prompt.n - before;
        snprintf(what, sizeof what, "%s, %d thread(s), turn %d: %d of %d prompt tokens evaluated (want %d)", name, threads,
                 turn + 1, evaluated, prompt.n, want);
        check(evaluated == want && (turn == 0 || evaluated < 20), check_id("state.%s.t%d.turn%d.evaluated", name, threads, turn + 1), "%s",
              what);
        double d = against_fresh(m, wick_get_logits(c, -1), prompt.tok, prompt.n, n_ctx);
        snprintf(what, sizeof what, "%s, turn %d: logits equal a fresh evaluation of the conversation (%.2g sd)", name, turn + 1, d);
        check(d <= 1e-4, check_id("state.%s.t%d.turn%d.logits", name, threads, turn + 1), "%s", what);
        int k = generate(g, out, 6);
        add(&prompt, out, k); /* the answer joins the conversation */
    }
    /* regenerate: the last prompt again → back to the snapshot before its last token */
    prompt.n -= 6;
    if (wick_gen_start(g, prompt.tok, prompt.n) == WICK_OK) {
        snprintf(what, sizeof what, "%s: regenerate evaluates 1 token (%d)", name, wick_gen_n_prompt_eval(g));
        check(wick_gen_n_prompt_eval(g) == 1, check_id("state.%s.t%d.regenerate.evaluated", name, threads), "%s", what);
        double d = against_fresh(m, wick_get_logits(c, -1), prompt.tok, prompt.n, n_ctx);
        snprintf(what, sizeof what, "%s: regenerated logits equal a fresh evaluation (%.2g sd)", name, d);
        check(d <= 1e-4, check_id("state.%s.t%d.regenerate.logits", name, threads), "%s", what);
    } else {
        check(0, check_id("state.%s.t%d.regenerate.start", name, threads), "%s", wick_last_error());
    }
    /* abort: stop after 3 of the answer's tokens (2 evaluated), then a prompt that keeps the first
     * and diverges inside the answer: no snapshot there, so the cache goes back to the prompt's end */
    generate(g, out, 3);
    int np_before = prompt.n;
    add(&prompt, out, 1);
    turn_tokens(t, 5, 11, V);
    add(&prompt, t, 5);
    if (wick_gen_start(g, prompt.tok, prompt.n) == WICK_OK) {
        int evaluated = wick_gen_n_prompt_eval(g);
        snprintf(what, sizeof what, "%s: after an abort, a prompt diverging inside the answer goes back to the snapshot "
                 "at the previous prompt's end (%d evaluated, want %d)", name, evaluated, prompt.n - (np_before - 1));
        check(evaluated == prompt.n - (np_before - 1), check_id("state.%s.t%d.abort.evaluated", name, threads), "%s", what);
        double d = against_fresh(m, wick_get_logits(c, -1), prompt.tok, prompt.n, n_ctx);
        snprintf(what, sizeof what, "%s: and its logits equal a fresh evaluation (%.2g sd)", name, d);
        check(d <= 1e-4, check_id("state.%s.t%d.abort.logits", name, threads), "%s", what);
        /* the generation after it goes on from the right state */
        int k = generate(g, out, 2);
        add(&prompt, out, k > 0 ? 1 : 0);
        double d2 = against_fresh(m, wick_get_logits(c, -1), prompt.tok, prompt.n, n_ctx);
        snprintf(what, sizeof what, "%s: the next generated token's logits too (%.2g sd)", name, d2);
        check(k == 2 && d2 <= 1e-4, check_id("state.%s.t%d.abort.next", name, threads), "%s", what);
    } else {
        check(0, check_id("state.%s.t%d.abort.start", name, threads), "%s", wick_last_error());
    }
    /* the cache refuses to go back where the state has no snapshot, and goes back to one */
    int n_past = wick_n_past(c);
    check(wick_kv_trim(c, n_past - 1) != WICK_OK && wick_n_past(c) == n_past, check_id("state.%s.t%d.trim-refused", name, threads),
          "cutting the cache back to a position without a snapshot is refused, the cache unchanged");
    check(!kv_cache_can_shift(c, 1, 4), check_id("state.%s.t%d.no-shift", name, threads), "a context with a recurrent state is never shifted");
    check(wick_kv_trim(c, 0) == WICK_OK && wick_n_past(c) == 0, check_id("state.%s.t%d.trim-0", name, threads), "cutting it back to 0 resets it");
    wick_gen_free(g);
    wick_ctx_free(c);
}

/* past the window: n_ctx 64, a 40-token prompt, 80 tokens generated; where the generator reports
 * a shift it evaluated the kept tokens again, and the logits equal a fresh evaluation of them */
static void overflow_case(const wick_model *m, const char *name) {
    char what[256];
    const int n_ctx = 64, V = m->config.n_vocab;
    wick_ctx *c = new_ctx(m, n_ctx, 1);
    wick_gen *g = NULL;
    if (!c || wick_gen_new(c, &g) != WICK_OK) {
        check(0, check_id("state.%s.overflow.context", name), "a context and a generator");
        wick_ctx_free(c);
        return;
    }
    wick_gen_set(g, "temperature", 0);
    wick_gen_set(g, "ignore_eos", 1);
    static convo seq; /* what the context holds, as the generator does it */
    seq.n = 0;
    seq.tok[seq.n++] = 1;
    int32_t t[39];
    turn_tokens(t, 39, 5, V);
    add(&seq, t, 39);
    if (wick_gen_start(g, seq.tok, seq.n) != WICK_OK) {
        check(0, check_id("state.%s.overflow.start", name), "%s", wick_last_error());
        goto done;
    }
    int shifts = 0, pending = -1, worst_ok = 1, generated = 0;
    double worst = 0;
    for (int step = 0; step < 80; step++) {
        if (wick_gen_next(g) != WICK_OK) {
            check(0, check_id("state.%s.overflow.next", name), "%s", wick_last_error());
            goto done;
        }
        generated++;
        if (wick_gen_shifted(g)) {
            int discard = wick_gen_shifted(g), keep = 1;
            /* the generator kept BOS and dropped the oldest `discard` after it */
            memmove(seq.tok + keep, seq.tok + keep + discard, (size_t)(seq.n - keep - discard) * sizeof *seq.tok);
            seq.n -= discard;
            if (wick_gen_reevaluated(g) != seq.n) worst_ok = 0;
            shifts++;
        }
        if (pending >= 0) seq.tok[seq.n++] = pending; /* evaluated by this call */
        if (pending >= 0 && (wick_gen_shifted(g) || step % 7 == 0)) {
            double d = against_fresh(m, wick_get_logits(c, -1), seq.tok, seq.n, n_ctx);
            if (d > worst) worst = d;
        }
        pending = wick_gen_token(g);
    }
    snprintf(what, sizeof what, "%s: 80 tokens past a 64-token window (%d shifts, each re-evaluating the kept tokens)", name, shifts);
    check(generated == 80 && shifts >= 1 && worst_ok, check_id("state.%s.overflow.shifts", name), "%s", what);
    snprintf(what, sizeof what, "%s: the logits after each re-evaluation equal a fresh evaluation (worst %.2g sd)", name, worst);
    check(worst <= 1e-4, check_id("state.%s.overflow.logits", name), "%s", what);
done:
    wick_gen_free(g);
    wick_ctx_free(c);
}

/* the state's bytes are fixed by the model: the same for 128 and 2048 positions */
static void memory_case(const wick_model *m, const char *name) {
    char what[256];
    wick_ctx *a = new_ctx(m, 128, 1), *b = new_ctx(m, 2048, 1);
    if (!a || !b) {
        check(0, check_id("state.%s.memory", name), "contexts of 128 and 2048");
        wick_ctx_free(a);
        wick_ctx_free(b);
        return;
    }
    size_t sa = wick_state_bytes(a), sb = wick_state_bytes(b);
    snprintf(what, sizeof what, "%s: recurrent state %zu bytes at 128 tokens, %zu at 2048 (KV cache %zu and %zu)", name, sa,
             sb, wick_kv_bytes(a), wick_kv_bytes(b));
    check(sa > 0 && sa == sb && wick_kv_bytes(b) == 16 * wick_kv_bytes(a), check_id("state.%s.memory", name), "%s", what);
    wick_ctx_free(a);
    wick_ctx_free(b);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        check(0, "state.usage", "usage: test_state MODEL.gguf …");
        return check_summary();
    }
    for (int i = 1; i < argc; i++) {
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        size_t n;
        unsigned char *buf = check_read(check_id("state.%s.read", name), argv[i], &n);
        wick_model *m = NULL;
        if (!buf) continue;
        bool loaded = wick_model_load_gguf(buf, n, &m) == WICK_OK;
        if (!check(loaded, check_id("state.%s.load", name), "%s", loaded ? "loads" : wick_last_error())) {
            free(buf);
            continue;
        }
        check(m->config.n_recurrent > 0, check_id("state.%s.recurrent", name), "the model has recurrent layers");
        memory_case(m, name);
        chat_cases(m, name, 1);
#ifndef WICK_NO_THREADS /* the single-threaded build (the wasm test programs) has no second thread */
        chat_cases(m, name, 2);
#endif
        overflow_case(m, name);
        wick_model_free(m);
        free(buf);
    }
    return check_summary();
}
