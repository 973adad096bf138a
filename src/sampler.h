/* sampler.h — turns a row of logits into a token: penalties, logit bias, top-k, top-p, min-p,
 * temperature and a seeded draw; plus a streaming stop-string matcher.
 *
 * The chain, in this order (the C API, the CLI and the JS API all run exactly this code):
 *
 *   1. penalties    over the last repeat_last_n accepted tokens (prompt tokens included), for each
 *                   distinct token t in that window with count c (llama.cpp's rule):
 *                     z_t = z_t > 0 ? z_t / repeat_penalty : z_t * repeat_penalty
 *                     z_t -= c * frequency_penalty + (c > 0) * presence_penalty
 *   2. logit bias   z_t += bias_t for each (token, bias) pair; a bias of -INFINITY bans t.
 *                   It comes after the penalties so that a user's bias is applied as given,
 *                   never scaled by the repetition penalty.
 *   3. top-k        keep the k highest logits (k = 0: off).
 *   4. top-p        with p_i = softmax at T = 1 over the tokens top-k kept, keep the smallest
 *                   set of highest-probability tokens whose probabilities sum to >= top_p
 *                   (top_p = 1: off).
 *   5. min-p        keep the tokens with p_i >= min_p * p_max, p at T = 1 (min_p = 0: off).
 *   6. temperature  p_i = exp(z_i/T) / sum_j exp(z_j/T) over the tokens kept.
 *   7. draw         one 53-bit uniform u from the seeded generator; the token is the first, in
 *                   the candidate order, whose cumulative probability exceeds u.
 *
 * Truncation (3–5) thus works on the temperature-1 distribution and temperature comes last, as
 * llama.cpp's default chain does (top_k → top_p → min_p → temp → dist): which tokens survive
 * does not depend on T, and T only reshapes the probabilities among the survivors. Note that
 * top-p and min-p are therefore computed before temperature, not on the tempered distribution.
 * T = 0 is greedy: the highest logit after steps 1–2 (ties → lowest id), which every truncation
 * keeps anyway; its final distribution is probability 1 on that token. (So is a T so small
 * that 1/T overflows a float, below about 3e-39.)
 *
 * Ordering is total everywhere: by logit descending, ties by token id ascending. Each weight
 * e^((z_i - z_max)/T) comes from sampler.c's own single-precision exp (about 1e-7 relative; a
 * weight below e^-86 counts as 0); sums, normalisation and the cumulative walk of the draw are
 * in double, and the draw uses a 53-bit uniform. No libm result and no platform-dependent
 * operation decides a token (build with -ffp-contract=off), so the same seed and settings give
 * the same tokens in the native and the wasm build. A NaN logit is treated as -INFINITY; a
 * token at -INFINITY is never drawn. A logit of +INFINITY takes all the mass (shared equally
 * among such tokens).
 *
 * Defaults (sampler_params_default), llama.cpp-like: temperature 0.8, top_k 40, top_p 0.95,
 * min_p 0.05, repeat_penalty 1.1 over the last 64 tokens, frequency and presence penalties 0,
 * seed 0, no logit bias. (llama.cpp's own repeat_penalty default is now 1.0, i.e. off, and so
 * is a generator's: wick_gen_new sets 1.0 after these. The caller picks a fresh seed when it
 * wants different text on every run.) */
#ifndef WICK_SAMPLER_H
#define WICK_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errmsg.h"

typedef struct {
    float temperature;        /* >= 0; 0 = greedy */
    int32_t top_k;            /* >= 0; 0 = off */
    float top_p;              /* in [0, 1]; 1 = off (at least one token is always kept) */
    float min_p;              /* in [0, 1]; 0 = off */
    float repeat_penalty;     /* > 0; 1 = off */
    int32_t repeat_last_n;    /* >= 0 tokens of history the three penalties look at; 0 = off */
    float frequency_penalty;  /* finite, may be negative (OpenAI's -2..2); 0 = off */
    float presence_penalty;   /* finite, may be negative; 0 = off */
    uint64_t seed;            /* the generator is fully determined by it */
    const int32_t *bias_tokens; /* n_bias token ids in [0, n_vocab) (copied by sampler_new) */
    const float *bias_values;   /* n_bias finite values or -INFINITY (ban) */
    int32_t n_bias;
} wick_sampler_params;

void sampler_params_default(wick_sampler_params *p);

typedef struct wick_sampler wick_sampler;

/* Validates p (a negative, NaN or out-of-range value is refused with a message naming it) and
 * allocates the scratch for n_vocab tokens. Returns 0, or -1 with a message in err. */
int sampler_new(wick_sampler **out, const wick_sampler_params *p, int32_t n_vocab,
                errmsg *err);
void sampler_free(wick_sampler *s);
/* Forgets the penalty history and the last draw, and reseeds the generator with params.seed. */
void sampler_reset(wick_sampler *s);
/* Appends token to the penalty history: call it for every prompt token and for every token the
 * caller keeps after sampler_sample (sampling does not accept on its own). Ids outside
 * [0, n_vocab) are ignored. */
void sampler_accept(wick_sampler *s, int32_t token);
/* Runs the chain on n_vocab logits (not modified) and returns the drawn id, or -1 when no token
 * can be drawn (every logit -INFINITY or NaN after the bias). */
int32_t sampler_sample(wick_sampler *s, const float *logits);
/* A constraint on the draw (a grammar): whether token may come next. */
typedef bool (*sampler_token_filter)(void *ctx, int32_t token);
/* sampler_sample with a constraint, applied where it is cheap: after truncation (steps 3–5) the
 * candidates the filter refuses are dropped and the draw (6–7) is among the rest; only when it
 * refuses all of them are the refused tokens banned over the whole vocabulary and steps 3–7 run
 * again on what remains. Greedy takes the first maximum the filter allows. -1 when the filter
 * allows no drawable token. With filter NULL it is exactly sampler_sample. */
int32_t sampler_sample_filtered(wick_sampler *s, const float *logits, sampler_token_filter filter, void *ctx);
/* The last draw's final distribution (after truncation and temperature: the one the draw used),
 * highest probability first (ties → lower id): writes min(k, candidates) ids and probabilities
 * and returns that count (0 before any draw). Meant for small k. */
int sampler_top(const wick_sampler *s, int32_t k, int32_t *ids, float *probs);
/* The id the last sampler_sample returned (-1 before any draw, after reset, or if it failed). */
int32_t sampler_last_drawn(const wick_sampler *s);

/* How many of a row's highest logits (in the chain's order: logit descending, ties by lower id)
 * the next sampler_sample depends on, for an outside backend that can send just those: with no
 * penalty in effect (repeat, frequency or presence over a non-empty history) and no logit bias,
 * greedy (T = 0) takes the first maximum (1), and a draw with 0 < top_k < n_vocab works on the
 * top_k tokens step 3 keeps, to which top-p, min-p and temperature then apply (top_k). A row that
 * holds those logits at their ids and -INFINITY everywhere else then gives the same token, the
 * same final distribution and the same sampler_top as the whole row (the -INFINITY tokens are
 * never candidates). 0: the chain reads the whole row (penalties, a bias, or top_k off with T > 0). */
int32_t sampler_candidates_needed(const wick_sampler *s);

/* Steps 1–2 of the chain (penalties from the current history, then the logit bias) applied in
 * place to a copy of n_vocab logits, exactly as sampler_sample applies them. */
void sampler_apply_penalties_and_bias(wick_sampler *s, float *logits);

/* Pure helpers. */
/* p_i = exp(z_i/T) / sum_j exp(z_j/T), computed as exp((z_i - z_max)/T); T = 0 gives probability
 * 1 to the argmax (ties → lowest id). NaN and -INFINITY logits get 0; if all do, all get 0. */
void sampler_softmax(const float *logits, int32_t n, float temperature, double *probs_out);
/* The generator: SplitMix64 (Steele, Lea, Flood 2014; constants as in Vigna's splitmix64.c).
 * state += 0x9E3779B97F4A7C15, then two xor-shift-multiply rounds; the first output for
 * state 0 is 0xE220A8397B1DCDAF. sampler_uniform gives (x >> 11) * 2^-53, in [0, 1). */
uint64_t sampler_rng_next(uint64_t *state);
double sampler_uniform(uint64_t *state);

/* Stop strings. Feed the generated text chunk by chunk: push returns the part that is safe to
 * show now and holds back any tail that could be the start of a stop string. When a stop string
 * appears (possibly split over chunks) the text before it is returned, the stop string and
 * everything after it are dropped, and the matcher stays stopped. Matching is on bytes; with
 * valid UTF-8 stop strings and whole-character chunks, output never splits a character. */
typedef struct {
    char **stops;        /* copies of the stop strings */
    size_t *stop_lens;
    int32_t n_stops;
    size_t max_stop_len;
    char *buf;           /* held-back tail, then this call's text; output points into it */
    size_t buf_len, buf_cap;
    size_t held;         /* bytes at the end of buf kept back for the next call */
    bool stopped;
    int32_t matched;     /* index of the stop string that matched, -1 if none */
} stop_matcher;

/* Copies n_stops NUL-terminated strings (empty ones are refused). 0, or -1 with a message. */
int stop_matcher_init(stop_matcher *m, const char *const *stops, int32_t n_stops,
                      errmsg *err);
void stop_matcher_free(stop_matcher *m);
/* Back to the state after init (same stop strings). */
void stop_matcher_reset(stop_matcher *m);
/* Feeds len bytes. *out / *out_len: the text safe to show now, valid until the next call.
 * Returns 1 if a stop string has matched (now or before: then *out_len is 0), 0 if not,
 * -1 if memory ran out (the matcher is unchanged). */
int stop_matcher_push(stop_matcher *m, const char *text, size_t len,
                      const char **out, size_t *out_len);
/* At the end of generation: releases the held-back tail (nothing once stopped). */
void stop_matcher_flush(stop_matcher *m, const char **out, size_t *out_len);

#endif
