/* tests/test_attention.c — attention's fast paths (src/attention.c: grouped query heads sharing
 * each converted cached row, runs of prefill tokens of one head over the F16 cache, the F16
 * rebias folded into the query or not) against the plain scalar attention_ref, on random
 * queries, keys and values: head sizes 32 … 256, 1 … 8 query heads per KV head, one or two KV
 * heads, decode (one token) and prefill batches at several positions, causal and non-causal,
 * F32 and F16 caches, a sliding window and a soft cap, 1 and 2 threads (1 in the single-threaded
 * wasm build). A model of one attention layer is made here; no file is read. Each case's error
 * is the largest |fast − ref| of a head's output relative to the largest |ref| of that output.
 * Usage: test_attention. Output and exit status: tests/check.h (a case's id names its shape, not
 * its thread count, which differs between the builds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "check.h"
#include "context.h"
#include "wick.h"

/* F32: the fast paths sum in another order than the reference (and use exp_f32x4 for expf);
 * F16: the cached values are the same halves for both, converted exactly, so the same bound,
 * far inside the 2e-3 that tests/test_context.c allows an F16 cache (re-rounded keys). */
#define TOL 1e-6
/* Q8_0 values: attention sums them in integers, each position's weight rounded to 16 bits of its
 * pass's largest (src/attention.c, Q8_0_PASS): up to about 1e-4 of an output where its terms
 * cancel (the largest seen, 1.3e-4, for 8 heads of 128 over 33 positions); the cache's own
 * rounding of the values is 4e-3 */
#define TOL_Q8_0_VALUES 5e-4

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1) (xorshift64*) */
static float uniform(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545f4914f6cdd1dull) >> 40) / (double)(1ull << 23) - 1.0);
}

typedef struct {
    int head_dim, group, n_kv_heads, n_tok, pos0, threads, kv_type, n_swa;
    int kv_type_v; /* the values' own type; 0: kv_type's (as wick_ctx_params) */
    bool causal;
    float softcap, q_scale; /* q_scale: the queries' magnitude */
    /* each head's first query element 2^16 (fold_query refuses such queries: the F16 cache takes the
     * unfolded conversion), and every key's first element 0, so that the scores stay in range */
    bool huge_query;
    /* decode only: also evaluate the token as the second of a batch of two (the prefill paths) and
     * require the same output bit for bit (*same: 1 when equal, 0 when not) */
    int *same;
    int n_ctx, n_batch; /* the context's; 0: 64 and 16 */
} attn_case;

/* relative error of the case, or -1 when the context cannot be made */
static double run_case(const attn_case *k, errmsg *err) {
    layer_weights layer = {.kind = LAYER_ATTENTION, .sliding = k->n_swa > 0};
    struct wick_model m = {.has_weights = true, .layers = &layer};
    model_config *mc = &m.config;
    mc->n_layers = 1, mc->n_kv_heads = k->n_kv_heads, mc->n_heads = k->group * k->n_kv_heads;
    mc->head_dim = k->head_dim, mc->q_dim = mc->n_heads * k->head_dim, mc->dim = mc->q_dim, mc->hidden_dim = mc->q_dim;
    mc->n_vocab = 1, mc->n_ctx_train = k->n_ctx > 64 ? k->n_ctx : 64, mc->rope_dim = k->head_dim;
    mc->attn_scale = 1.0f / sqrtf((float)k->head_dim), mc->attn_softcap = k->softcap, mc->n_swa = k->n_swa;
    wick_ctx_params p = {.n_ctx = k->n_ctx ? k->n_ctx : 64, .n_batch = k->n_batch ? k->n_batch : 16, .n_threads = k->threads,
                         .kv_type = k->kv_type, .kv_type_v = k->kv_type_v};
    struct wick_ctx c;
    if (ctx_init(&c, &m, &p, err)) return -1;
    int kvd = kv_dim(mc), last = k->pos0 + k->n_tok - 1;
    static float krow[16 * MAX_HEAD_DIM], vrow[16 * MAX_HEAD_DIM]; /* up to 16 KV heads of 512 (or more of fewer) */
    for (int j = 0; j <= last; j++) {
        for (int i = 0; i < kvd; i++) {
            krow[i] = k->huge_query && i % k->head_dim == 0 ? 0.0f : 2.0f * uniform();
            vrow[i] = uniform();
        }
        kv_row_store(&c, c.k_cache, 0, j, krow);
        kv_row_store(&c, c.v_cache, 0, j, vrow);
    }
    for (size_t i = 0; i < (size_t)k->n_tok * mc->q_dim; i++)
        c.q[i] = k->huge_query && i % (size_t)k->head_dim == 0 ? 0x1p16f : k->q_scale * uniform();
    float *ref = malloc((size_t)k->n_tok * mc->q_dim * sizeof(float));
    if (!ref) {
        ctx_release(&c);
        errorf(err, WICK_ERR_NOMEM, "out of memory");
        return -1;
    }
    attention(&c, 0, k->pos0, k->n_tok, k->causal);
    attention_ref(&c, 0, k->pos0, k->n_tok, k->causal, ref);
    if (k->same && k->n_tok == 1 && k->pos0 > 0) {
        /* the decode's output, then the same query as the second token of a batch */
        float *decode = malloc((size_t)mc->q_dim * sizeof(float));
        if (!decode) {
            free(ref);
            ctx_release(&c);
            errorf(err, WICK_ERR_NOMEM, "out of memory");
            return -1;
        }
        memcpy(decode, c.xb2, (size_t)mc->q_dim * sizeof(float));
        memcpy(c.q + mc->q_dim, c.q, (size_t)mc->q_dim * sizeof(float));
        for (int i = 0; i < mc->q_dim; i++) c.q[i] = uniform();
        attention(&c, 0, k->pos0 - 1, 2, k->causal);
        *k->same = memcmp(decode, c.xb2 + mc->q_dim, (size_t)mc->q_dim * sizeof(float)) == 0;
        memcpy(c.xb2, decode, (size_t)mc->q_dim * sizeof(float));
        free(decode);
    }
    double worst = 0;
    for (int t = 0; t < k->n_tok; t++)
        for (int h = 0; h < mc->n_heads; h++) {
            const float *a = c.xb2 + (size_t)t * mc->q_dim + (size_t)h * k->head_dim, *r = ref + (a - c.xb2);
            double diff = 0, scale = 0;
            for (int i = 0; i < k->head_dim; i++) {
                if (!(fabs((double)a[i] - r[i]) <= diff)) diff = fabs((double)a[i] - r[i]); /* NaN counts */
                if (fabs(r[i]) > scale) scale = fabs(r[i]);
            }
            double e = diff / (scale > 0 ? scale : 1);
            if (!(e <= worst)) worst = e;
        }
    free(ref);
    ctx_release(&c);
    return worst;
}

/* "f16", "q8_0" …; a case of two types "q8_0-f16" (keys, values) */
static const char *kv_names(const attn_case *k) {
    static const char *const names[] = {"f32", "f16", "q8_0", "q4_0"};
    static char both[16];
    if (!k->kv_type_v || k->kv_type_v == k->kv_type) return names[k->kv_type];
    snprintf(both, sizeof both, "%s-%s", names[k->kv_type], names[k->kv_type_v]);
    return both;
}

static void case_check(const attn_case *k) {
    errmsg err = {0};
    char what[900];
    double e = run_case(k, &err), tol = (k->kv_type_v ? k->kv_type_v : k->kv_type) == WICK_KV_Q8_0 ? TOL_Q8_0_VALUES : TOL;
    snprintf(what, sizeof what,
             "head %d, %d per KV head x %d, %d token(s) from %d, %s, %s, %d thread(s)%s%s%s: fast = ref (rel. error %.2e, bound %.0e)%s%s",
             k->head_dim, k->group, k->n_kv_heads, k->n_tok, k->pos0, kv_names(k),
             k->causal ? "causal" : "non-causal", k->threads, k->n_swa ? ", sliding window" : "",
             k->softcap > 0 ? ", soft cap" : "", k->huge_query ? ", unfolded" : "", e, tol, err.text[0] ? ": " : "", err.text);
    check(e >= 0 && e <= tol,
          check_id("attention.d%d.g%d.kv%d.%s.%s.t%d@%d%s%s%s", k->head_dim, k->group, k->n_kv_heads,
                   kv_names(k), k->causal ? "causal" : "noncausal", k->n_tok, k->pos0,
                   k->n_swa ? ".swa" : "", k->softcap > 0 ? ".softcap" : "", k->huge_query ? ".unfolded" : ""),
          "%s", what);
}

/* A causal batch's last token sees what a non-causal one's every token sees: equal outputs there,
 * different ones before it. */
static void causal_check(void) {
    layer_weights layer = {.kind = LAYER_ATTENTION};
    struct wick_model m = {.has_weights = true, .layers = &layer};
    model_config *mc = &m.config;
    mc->n_layers = 1, mc->n_kv_heads = 1, mc->n_heads = 2, mc->head_dim = 32, mc->q_dim = 64, mc->dim = 64;
    mc->hidden_dim = 64, mc->n_vocab = 1, mc->n_ctx_train = 64, mc->rope_dim = 32, mc->attn_scale = 1.0f / sqrtf(32.0f);
    wick_ctx_params p = {.n_ctx = 64, .n_batch = 16, .n_threads = 1, .kv_type = WICK_KV_F32};
    struct wick_ctx c;
    errmsg err = {0};
    if (ctx_init(&c, &m, &p, &err)) {
        check(0, "attention.causal.context", "%s", err.text);
        return;
    }
    enum { N = 6 };
    for (int j = 0; j < N; j++)
        for (int i = 0; i < 32; i++) {
            kv_store(&c, kv_at(&c, c.k_cache, 0, j), (size_t)i, uniform());
            kv_store(&c, kv_at(&c, c.v_cache, 0, j), (size_t)i, uniform());
        }
    for (int i = 0; i < N * 64; i++) c.q[i] = uniform();
    float causal[N * 64];
    attention(&c, 0, 0, N, true);
    memcpy(causal, c.xb2, sizeof causal);
    attention(&c, 0, 0, N, false);
    check(memcmp(causal + (N - 1) * 64, c.xb2 + (N - 1) * 64, 64 * sizeof(float)) == 0, "attention.causal.last-token",
          "the last token of a batch: causal and non-causal outputs are equal");
    check(memcmp(causal, c.xb2, 64 * sizeof(float)) != 0, "attention.causal.first-token",
          "the first token of a batch: causal and non-causal outputs differ");
    ctx_release(&c);
}

int main(void) {
    static const int head_dims[] = {32, 40, 64, 96, 128, 200, 256};
#ifdef WICK_NO_THREADS
    const int max_threads = 1;
#else
    const int max_threads = 2;
#endif
    /* decode (pos0 > 0, one token) and prefill runs: full runs of 4, a short last run, longer batches */
    static const int n_toks[] = {1, 4, 7, 13}, pos0s[] = {9, 0, 3, 20};
    int n = 0;
    for (size_t d = 0; d < sizeof head_dims / sizeof head_dims[0]; d++)
        for (int group = 1; group <= 8; group++)
            for (int kv_type = 0; kv_type <= 1; kv_type++)
                for (int causal = 1; causal >= 0; causal--, n++) {
                    attn_case k = {.head_dim = head_dims[d], .group = group, .n_kv_heads = 1 + n % 2,
                                   .n_tok = n_toks[n % 4], .pos0 = pos0s[n % 4], .threads = 1 + n / 4 % max_threads,
                                   .kv_type = kv_type == 0 ? WICK_KV_F32 : WICK_KV_F16, .causal = causal, .q_scale = 1};
                    case_check(&k);
                }
    /* gemma's switches: a sliding window of 8 (a ring of 8 − 1 + 16 slots), and a soft cap */
    for (int kv_type = 0; kv_type <= 1; kv_type++)
        for (int causal = 1; causal >= 0; causal--) {
            attn_case k = {.head_dim = 64, .group = 2, .n_kv_heads = 2, .n_tok = 13, .pos0 = 20, .threads = max_threads,
                           .kv_type = kv_type == 0 ? WICK_KV_F32 : WICK_KV_F16, .n_swa = 8, .causal = causal, .q_scale = 1};
            case_check(&k);
            k.n_swa = 0, k.softcap = 5.0f, k.q_scale = 8;
            case_check(&k);
        }
    /* the block types (keys rounded to Q8_0 / Q4_0, scored in integers against a Q8_0 query; values
     * converted a row at a time), alone and beside a float type, at the head sizes that are whole
     * blocks, decode and prefill, a sliding window's ring and a soft cap */
    static const int block_dims[] = {32, 64, 128, 256};
    static const int kv_pairs[][2] = {{WICK_KV_Q8_0, 0}, {WICK_KV_Q4_0, 0}, {WICK_KV_Q8_0, WICK_KV_F16},
                                      {WICK_KV_F16, WICK_KV_Q4_0}, {WICK_KV_F32, WICK_KV_Q8_0}, {WICK_KV_Q4_0, WICK_KV_F16}};
    n = 0;
    for (size_t d = 0; d < sizeof block_dims / sizeof block_dims[0]; d++)
        for (size_t kv = 0; kv < sizeof kv_pairs / sizeof kv_pairs[0]; kv++)
            for (int group = 1; group <= 8; group *= 2, n++) {
                attn_case k = {.head_dim = block_dims[d], .group = group, .n_kv_heads = 1 + n % 2, .n_tok = n_toks[n % 4],
                               .pos0 = pos0s[n % 4], .threads = 1 + n / 4 % max_threads, .kv_type = kv_pairs[kv][0],
                               .kv_type_v = kv_pairs[kv][1], .causal = n % 3 != 0, .q_scale = 1};
                case_check(&k);
            }
    for (int kv = WICK_KV_Q8_0; kv <= WICK_KV_Q4_0; kv++) {
        attn_case k = {.head_dim = 64, .group = 2, .n_kv_heads = 2, .n_tok = 13, .pos0 = 20, .threads = max_threads,
                       .kv_type = kv, .n_swa = 8, .causal = true, .q_scale = 1};
        case_check(&k);
        k.n_tok = 1, k.pos0 = 40; /* decode, the ring wrapped */
        case_check(&k);
        k.n_swa = 0, k.softcap = 5.0f, k.q_scale = 8;
        case_check(&k);
    }
    /* F16, queries that cannot be folded: one head per KV head and 16 tokens try the prefill runs,
     * one token the decode run, 4 heads of a group the shared conversion */
    for (int causal = 1; causal >= 0; causal--)
        for (int group = 1; group <= 4; group *= 2) {
            attn_case k = {.head_dim = 128, .group = group, .n_kv_heads = 1, .n_tok = group == 1 ? 16 : group == 2 ? 1 : 8,
                           .pos0 = 5, .threads = 1, .kv_type = WICK_KV_F16, .causal = causal, .q_scale = 1, .huge_query = true};
            case_check(&k);
        }
    /* decode over ranges of query heads (attention.c attend_decode: the cache read across their KV
     * heads, four positions at a time, blocks of 32 for the values; grouped-query heads there when
     * a thread takes one head at a time, else attend_heads): 4, 6 and 12 KV heads of 1 and 3 query
     * heads, head sizes that are and are not multiples of 32, F16 and Q8_0, a long run of positions,
     * a sliding window's ring wrapped; each also as the second token of a batch, which must give
     * the same output bit for bit (tests/consistency.test.mjs end to end) */
    static const int wide_dims[] = {40, 64, 128}, wide_kv[] = {4, 6, 12};
    n = 0;
    for (size_t d = 0; d < sizeof wide_dims / sizeof wide_dims[0]; d++)
        for (size_t h = 0; h < sizeof wide_kv / sizeof wide_kv[0]; h++)
            for (int group = 1; group <= 3; group += 2)
                for (int kv = WICK_KV_F16; kv <= WICK_KV_Q8_0; kv++, n++) {
                    if (kv == WICK_KV_Q8_0 && wide_dims[d] % 32) continue;
                    for (int swa = 0; swa <= 1; swa++) {
                        int same = -1;
                        attn_case k = {.head_dim = wide_dims[d], .group = group, .n_kv_heads = wide_kv[h], .n_tok = 1,
                                       .pos0 = swa ? 40 : 37 + n % 4, .threads = 1 + n % max_threads, .kv_type = kv,
                                       .n_swa = swa ? 8 : 0, .causal = true, .q_scale = 1, .same = &same};
                        case_check(&k);
                        check(same == 1,
                              check_id("attention.decode-as-batch.d%d.g%d.kv%d.%s%s", k.head_dim, group, k.n_kv_heads, kv_names(&k), swa ? ".swa" : ""),
                              "head %d, %d per KV head x %d, %s%s, decode at %d: the same output as the second token of a batch, bit for bit",
                              k.head_dim, group, k.n_kv_heads, kv_names(&k), swa ? ", sliding window" : "", k.pos0);
                    }
                }
    /* the encoders' tiles (attention.c attention_tiles_task: non-causal, F32, 16 tokens or more):
     * heads of 8k values (k odd and even), a short block of queries and of keys, blocks of 4 queries
     * where the scratch of a 64-position context holds no more (a head of 256), several blocks of
     * 64 queries and a short last one in a longer context, one and two threads, grouped-query */
    static const int tile_dims[] = {32, 40, 72, 80, 128, 256};
    static const int tile_toks[][3] = {{16, 0, 64}, {37, 3, 64}, {150, 0, 512}}; /* tokens, first position, context */
    n = 0;
    for (size_t d = 0; d < sizeof tile_dims / sizeof tile_dims[0]; d++)
        for (size_t r = 0; r < sizeof tile_toks / sizeof tile_toks[0]; r++, n++) {
            attn_case k = {.head_dim = tile_dims[d], .group = 1 + n % 2, .n_kv_heads = 1 + n / 2 % 2, .n_tok = tile_toks[r][0],
                           .pos0 = tile_toks[r][1], .threads = 1 + n % max_threads, .kv_type = WICK_KV_F32, .causal = false,
                           .q_scale = 1, .n_ctx = tile_toks[r][2], .n_batch = tile_toks[r][0]};
            case_check(&k);
        }
    causal_check();
    return check_summary();
}
