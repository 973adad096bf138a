/* state.c — saved sessions: a context's state as one blob (wick_state_save) and back
 * (wick_state_load), so that a conversation or a shared prompt prefix goes on in another context
 * (another worker, a reloaded page, another visitor's engine) with nothing evaluated again.
 *
 * The blob, every integer little-endian (the wasm and native targets both are):
 *   header   "WICKSTAT", u32 format version (STATE_FORMAT_VERSION), u32 header bytes (HEADER_BYTES),
 *            u64 model hash (state_model_hash), u64 blob bytes, then u32s: layers, the saving
 *            context's n_ctx, n_past, K type, V type, flags (FLAG_*), the first position the
 *            sliding layers' rings hold (0 without a ring), recurrent state floats, snapshots,
 *            vocabulary size; zero padding to HEADER_BYTES
 *   layers   per layer u32 kind (LAYER_ROWS_*), u32 bytes of a K row, u32 bytes of a V row
 *   tokens   n_past i32: the ids whose keys and values the cache holds, in position order
 *   mrope    (FLAG_MROPE) n_past i32: an M-RoPE model's rope position after each (context.h
 *            mrope_next; a state without it holds text alone, one position after another)
 *   cache    per layer that keeps rows: its K rows, then its V rows, of positions first … n_past − 1
 *            (first: 0, or a ring's first held position), raw as the cache stores them
 *   state    the recurrent state (f32), then per snapshot u32 position and its copy of the state
 *   check    u64 hash of every byte before it (blob_hash)
 * Nothing in a blob is trusted: the loader checks every count and size against the context it is
 * given, and the whole against the check hash, before it writes anything. */
#include <string.h>

#include "state.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the state blob is read and written in the host's byte order, which must be little-endian"
#endif

static const char STATE_MAGIC[8] = {'W', 'I', 'C', 'K', 'S', 'T', 'A', 'T'};
#define HEADER_BYTES 80
#define LAYER_ENTRY_BYTES 12
#define CHECK_BYTES 8
enum {
    FLAG_LONG_ROPE = 1, /* phi3's long-context rope factors were in effect (the keys are rotated by them) */
    FLAG_MROPE = 2      /* the mrope section follows the tokens */
};
enum { LAYER_ROWS_NONE = 0, LAYER_ROWS_ALL = 1, LAYER_ROWS_RING = 2 };

/* ---- hashing: a word at a time, each step a bijection of the running value, so that a blob
 * with one word changed never hashes the same ---- */
#define HASH_P1 0x9E3779B185EBCA87ull
#define HASH_P2 0xC2B2AE3D27D4EB4Full

static uint64_t hash_step(uint64_t h, uint64_t w) {
    h ^= w * HASH_P1;
    h = (h << 31) | (h >> 33);
    return h * HASH_P2;
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = hash_step(h, w);
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    return hash_step(hash_step(h, tail), (uint64_t)n);
}

uint64_t state_check_hash(const void *bytes, size_t n) { return hash_bytes(0, bytes, n); }

uint64_t state_model_hash(const struct wick_model *m) {
    uint64_t h = 0x5749434B4D4F444Cull; /* "WICKMODL" */
    /* the metadata and tensor table of every file (the weights themselves may have been
     * rewritten in place into the CPU kernels' layout: they are not hashed), and the values of
     * the output norm, which differ between two fine-tunes of one shape */
    if (m->is_gguf) {
        h = hash_bytes(h, m->gguf.buf, m->gguf.data_offset);
        for (int i = 0; i < m->n_shards; i++) h = hash_bytes(h, m->shards[i].buf, m->shards[i].data_offset);
    }
    const model_config *mc = &m->config;
    int32_t shape[] = {mc->dim, mc->n_layers, mc->n_heads, mc->n_kv_heads, mc->head_dim, mc->hidden_dim, mc->n_vocab, mc->n_ctx_train};
    h = hash_bytes(h, (const uint8_t *)shape, sizeof shape);
    if (m->output_norm) h = hash_bytes(h, (const uint8_t *)m->output_norm, (size_t)mc->dim * sizeof(float));
    return h;
}

/* ---- the layout of one context ---- */

static int rows_kind(const struct wick_ctx *c, int l) {
    if (c->kv_slots[l] == 0) return LAYER_ROWS_NONE;
    return c->ring && c->kv_slots[l] == c->ring ? LAYER_ROWS_RING : LAYER_ROWS_ALL;
}

static uint32_t ctx_flags(const struct wick_ctx *c) {
    const struct wick_model *m = c->model;
    return (m->rope_factors_long && c->rope_factors == m->rope_factors_long ? FLAG_LONG_ROPE : 0) | (c->mrope_next ? FLAG_MROPE : 0);
}

static int32_t ring_first(const struct wick_ctx *c) { return c->ring ? c->swa_lo : 0; }

static int32_t snapshots_to_save(const struct wick_ctx *c) {
    int32_t n = 0;
    for (int i = 0; i < STATE_SNAPSHOTS; i++)
        if (c->rs_snap_pos[i] > 0 && c->rs_snap_pos[i] <= c->n_past) n++;
    return n;
}

/* bytes of a blob with this geometry (64-bit: a hostile header cannot wrap it around) */
static uint64_t blob_bytes(const struct wick_ctx *c, const int *kinds, int32_t n_past, int32_t first, uint64_t rs_floats, int32_t n_snap,
                           bool mrope) {
    uint64_t n = HEADER_BYTES + (uint64_t)c->model->config.n_layers * LAYER_ENTRY_BYTES + (uint64_t)n_past * (mrope ? 8 : 4);
    for (int l = 0; l < c->model->config.n_layers; l++) {
        if (kinds[l] == LAYER_ROWS_NONE) continue;
        uint64_t rows = (uint64_t)(n_past - (kinds[l] == LAYER_ROWS_RING ? first : 0));
        n += rows * (kv_row_bytes(c, c->k_cache, l) + kv_row_bytes(c, c->v_cache, l));
    }
    n += rs_floats * 4 + (uint64_t)n_snap * (4 + rs_floats * 4);
    return n + CHECK_BYTES;
}

uint64_t state_blob_bytes(const struct wick_ctx *c) {
    int n_layers = c->model->config.n_layers;
    int kinds[n_layers > 0 ? n_layers : 1];
    for (int l = 0; l < n_layers; l++) kinds[l] = rows_kind(c, l);
    return blob_bytes(c, kinds, c->n_past, ring_first(c), c->rs_floats, snapshots_to_save(c), c->mrope_next != NULL);
}

static void put_u32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void put_u64(uint8_t **p, uint64_t v) { memcpy(*p, &v, 8); *p += 8; }
static void put_bytes(uint8_t **p, const void *src, size_t n) { memcpy(*p, src, n); *p += n; }
static uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int state_save(const struct wick_ctx *c, const int32_t *tokens, int32_t n_tokens, void *buf, size_t cap, size_t *needed, errmsg *err) {
    const struct wick_model *m = c->model;
    if (c->external)
        return errorf(err, WICK_ERR_UNSUPPORTED, "the state of a context on an outside backend (the GPU) cannot be saved: its cache is on the device");
    if (m->config.encoder) return errorf(err, WICK_ERR_INVALID_ARG, "an encoder's context keeps no state between calls");
    if (n_tokens != c->n_past || (n_tokens && !tokens))
        return errorf(err, WICK_ERR_INVALID_ARG, "the state holds %d positions but %d token ids were given", c->n_past, n_tokens);
    uint64_t total = state_blob_bytes(c);
    if (total > SIZE_MAX / 2) return errorf(err, WICK_ERR_NOMEM, "a state of %llu bytes is too large for this build", (unsigned long long)total);
    if (needed) *needed = (size_t)total;
    if (!buf || cap < total) return 0;
    int n_layers = m->config.n_layers;
    int32_t first = ring_first(c), n_past = c->n_past;
    uint8_t *p = buf, *start = buf;
    put_bytes(&p, STATE_MAGIC, 8);
    put_u32(&p, STATE_FORMAT_VERSION);
    put_u32(&p, HEADER_BYTES);
    put_u64(&p, state_model_hash(m));
    put_u64(&p, total);
    uint32_t fields[] = {(uint32_t)n_layers, (uint32_t)c->n_ctx, (uint32_t)n_past, (uint32_t)c->kv_type, (uint32_t)c->kv_type_v,
                         ctx_flags(c), (uint32_t)first, (uint32_t)c->rs_floats, (uint32_t)snapshots_to_save(c),
                         (uint32_t)m->config.n_vocab};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) put_u32(&p, fields[i]);
    memset(p, 0, (size_t)(start + HEADER_BYTES - p));
    p = start + HEADER_BYTES;
    for (int l = 0; l < n_layers; l++) {
        int kind = rows_kind(c, l); /* a layer keeping no rows: row sizes 0 */
        put_u32(&p, (uint32_t)kind);
        put_u32(&p, kind == LAYER_ROWS_NONE ? 0 : (uint32_t)kv_row_bytes(c, c->k_cache, l));
        put_u32(&p, kind == LAYER_ROWS_NONE ? 0 : (uint32_t)kv_row_bytes(c, c->v_cache, l));
    }
    put_bytes(&p, tokens, (size_t)n_past * 4);
    if (c->mrope_next) put_bytes(&p, c->mrope_next, (size_t)n_past * 4);
    for (int l = 0; l < n_layers; l++) {
        int kind = rows_kind(c, l);
        if (kind == LAYER_ROWS_NONE) continue;
        int32_t from = kind == LAYER_ROWS_RING ? first : 0;
        for (int which = 0; which < 2; which++) {
            size_t row = kv_row_bytes(c, which ? c->v_cache : c->k_cache, l);
            void *cache = which ? c->v_cache : c->k_cache;
            if (kind == LAYER_ROWS_ALL) { /* positions 0 … n_past − 1 lie in order */
                if (n_past) put_bytes(&p, kv_at(c, cache, l, 0), (size_t)n_past * row);
            } else {
                for (int32_t pos = from; pos < n_past; pos++) put_bytes(&p, kv_at(c, cache, l, pos), row);
            }
        }
    }
    if (c->rs_floats) {
        put_bytes(&p, c->rstate, c->rs_floats * sizeof(float));
        for (int i = 0; i < STATE_SNAPSHOTS; i++) {
            if (!(c->rs_snap_pos[i] > 0 && c->rs_snap_pos[i] <= n_past)) continue;
            put_u32(&p, (uint32_t)c->rs_snap_pos[i]);
            put_bytes(&p, c->rs_snap[i], c->rs_floats * sizeof(float));
        }
    }
    put_u64(&p, state_check_hash(start, (size_t)(p - start)));
    return 0;
}

static const char *kv_type_name(uint32_t t) {
    static const char *names[WICK_KV_TYPE_COUNT] = {"f32", "f16", "q8_0", "q4_0"};
    return t < WICK_KV_TYPE_COUNT ? names[t] : "unknown";
}

int state_load(struct wick_ctx *c, const void *blob, size_t len, int32_t *tokens, int32_t max_tokens, int32_t *n_tokens, errmsg *err) {
    const struct wick_model *m = c->model;
    const model_config *mc = &m->config;
    const uint8_t *b = blob;
    if (c->external)
        return errorf(err, WICK_ERR_UNSUPPORTED, "a saved state cannot be loaded into a context on an outside backend (the GPU): "
                      "its cache is on the device");
    if (mc->encoder) return errorf(err, WICK_ERR_INVALID_ARG, "an encoder's context keeps no state between calls");
    if (!b || len < 16) return errorf(err, WICK_ERR_FORMAT, "saved state: %zu bytes is too short to be one", b ? len : 0);
    if (memcmp(b, STATE_MAGIC, 8)) return errorf(err, WICK_ERR_FORMAT, "saved state: not a wick state (no WICKSTAT magic)");
    uint32_t version = get_u32(b + 8);
    if (version != STATE_FORMAT_VERSION)
        return errorf(err, WICK_ERR_UNSUPPORTED, "saved state: format version %u, this engine reads version %d", version, STATE_FORMAT_VERSION);
    if (len < HEADER_BYTES + CHECK_BYTES || get_u32(b + 12) != HEADER_BYTES)
        return errorf(err, WICK_ERR_FORMAT, "saved state: truncated or malformed header (%zu bytes)", len);
    uint64_t total = get_u64(b + 24);
    if (total != len)
        return errorf(err, WICK_ERR_FORMAT, "saved state: the header says %llu bytes but %zu were given (%s)", (unsigned long long)total, len,
                      total > len ? "truncated" : "trailing bytes");
    if (state_check_hash(b, len - CHECK_BYTES) != get_u64(b + len - CHECK_BYTES))
        return errorf(err, WICK_ERR_FORMAT, "saved state: its check hash does not match its bytes (damaged)");
    if (get_u64(b + 16) != state_model_hash(m))
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: it was saved from another model file (its hash differs from this model's)");
    const uint8_t *f = b + 32;
    uint32_t n_layers = get_u32(f), n_ctx_saved = get_u32(f + 4), n_past = get_u32(f + 8), type_k = get_u32(f + 12),
             type_v = get_u32(f + 16), flags = get_u32(f + 20), first = get_u32(f + 24), rs_floats = get_u32(f + 28),
             n_snap = get_u32(f + 32), n_vocab = get_u32(f + 36);
    if (n_layers != (uint32_t)mc->n_layers || n_vocab != (uint32_t)mc->n_vocab)
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: %u layers and %u tokens of vocabulary, this model has %d and %d", n_layers, n_vocab,
                      mc->n_layers, mc->n_vocab);
    if (type_k != (uint32_t)c->kv_type || type_v != (uint32_t)c->kv_type_v)
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: its KV cache is %s/%s (K/V), this context's is %s/%s: make the context with the same kvType",
                      kv_type_name(type_k), kv_type_name(type_v), kv_type_name((uint32_t)c->kv_type), kv_type_name((uint32_t)c->kv_type_v));
    if (flags & ~(uint32_t)(FLAG_LONG_ROPE | FLAG_MROPE)) return errorf(err, WICK_ERR_FORMAT, "saved state: unknown flags 0x%x", flags);
    const bool mrope = flags & FLAG_MROPE;
    if (mrope && !c->mrope_next) return errorf(err, WICK_ERR_FORMAT, "saved state: M-RoPE positions for a model without M-RoPE");
    flags &= ~(uint32_t)FLAG_MROPE;
    if (flags != (ctx_flags(c) & ~(uint32_t)FLAG_MROPE))
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: its keys were rotated with phi3's %s rope factors (a context of %u tokens), this "
                      "context uses the %s ones", flags ? "long" : "short", n_ctx_saved, (ctx_flags(c) & FLAG_LONG_ROPE) ? "long" : "short");
    if (n_past > (uint32_t)c->n_ctx)
        return errorf(err, WICK_ERR_CONTEXT_FULL, "saved state: it holds %u positions, this context only %d (make it with a larger contextSize)",
                      n_past, c->n_ctx);
    if (max_tokens < 0 || n_past > (uint32_t)max_tokens)
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: %u token ids do not fit the room given (%d)", n_past, max_tokens);
    if (rs_floats != c->rs_floats)
        return errorf(err, WICK_ERR_INVALID_ARG, "saved state: a recurrent state of %u floats, this context's has %zu", rs_floats, c->rs_floats);
    if (n_snap > STATE_SNAPSHOTS || (n_snap && !rs_floats))
        return errorf(err, WICK_ERR_FORMAT, "saved state: %u snapshots of the recurrent state (at most %d)", n_snap, STATE_SNAPSHOTS);
    for (int i = 40; i < HEADER_BYTES - 32; i++)
        if (f[i]) return errorf(err, WICK_ERR_FORMAT, "saved state: header byte %d is not zero (another format?)", 32 + i);
    if (len < HEADER_BYTES + (size_t)mc->n_layers * LAYER_ENTRY_BYTES + CHECK_BYTES)
        return errorf(err, WICK_ERR_FORMAT, "saved state: truncated in its layer table (%zu bytes)", len);
    /* the layer table against this context's cache */
    int kinds[mc->n_layers > 0 ? mc->n_layers : 1];
    bool any_ring = false;
    const uint8_t *lt = b + HEADER_BYTES;
    for (int l = 0; l < mc->n_layers; l++) {
        uint32_t kind = get_u32(lt + (size_t)l * LAYER_ENTRY_BYTES), kb = get_u32(lt + (size_t)l * LAYER_ENTRY_BYTES + 4),
                 vb = get_u32(lt + (size_t)l * LAYER_ENTRY_BYTES + 8);
        int here = rows_kind(c, l);
        if (kind > LAYER_ROWS_RING || (kind == LAYER_ROWS_NONE) != (here == LAYER_ROWS_NONE))
            return errorf(err, WICK_ERR_INVALID_ARG, "saved state: layer %d %s keys and values, in this context it %s", l,
                          kind == LAYER_ROWS_NONE ? "keeps no" : kind > LAYER_ROWS_RING ? "has an unknown kind of" : "keeps",
                          here == LAYER_ROWS_NONE ? "keeps none" : "keeps them");
        if (kind == LAYER_ROWS_RING && !m->layers[l].sliding)
            return errorf(err, WICK_ERR_FORMAT, "saved state: layer %d is not a sliding-window layer but its rows are a ring's", l);
        if (kind == LAYER_ROWS_NONE ? kb || vb : kb != kv_row_bytes(c, c->k_cache, l) || vb != kv_row_bytes(c, c->v_cache, l))
            return errorf(err, WICK_ERR_INVALID_ARG, "saved state: layer %d's K and V rows are %u and %u bytes, this context's are %zu and %zu", l, kb,
                          vb, kv_row_bytes(c, c->k_cache, l), kv_row_bytes(c, c->v_cache, l));
        kinds[l] = (int)kind;
        any_ring |= kind == LAYER_ROWS_RING;
    }
    /* a ring's rows: the window of the next position at least; a context that holds every
     * position of a sliding layer needs them all */
    if (first > n_past || (!any_ring && first != 0))
        return errorf(err, WICK_ERR_FORMAT, "saved state: the rings' first position %u is outside its %u positions", first, n_past);
    if (any_ring) {
        uint32_t w = (uint32_t)mc->n_swa, need = n_past >= w ? n_past - w + 1 : 0;
        if (first > need)
            return errorf(err, WICK_ERR_FORMAT, "saved state: the sliding layers' rows start at %u, after the window of the next position (%u)", first, need);
        if (first > 0 && !c->ring)
            return errorf(err, WICK_ERR_INVALID_ARG, "saved state: its sliding layers hold positions %u to %u only, and this context keeps every position "
                          "(make it with the contextSize the state was saved with, %u)", first, n_past, n_ctx_saved);
    }
    uint64_t expect = blob_bytes(c, kinds, (int32_t)n_past, (int32_t)first, rs_floats, (int32_t)n_snap, mrope);
    if (expect != len)
        return errorf(err, WICK_ERR_FORMAT, "saved state: %zu bytes, but its header describes %llu (wrong sizes)", len, (unsigned long long)expect);
    const uint8_t *tok = lt + (size_t)mc->n_layers * LAYER_ENTRY_BYTES;
    for (uint32_t i = 0; i < n_past; i++) {
        int32_t t;
        memcpy(&t, tok + (size_t)i * 4, 4);
        /* a negative id is an image position (wick.h WICK_IMAGE_TOKEN): its keys and values are cached like a token's */
        if (t >= mc->n_vocab) return errorf(err, WICK_ERR_FORMAT, "saved state: token %u is %d, outside the vocabulary of %d", i, t, mc->n_vocab);
    }
    /* M-RoPE positions: each after the previous, none past what an int can add to */
    const uint8_t *mpos = tok + (size_t)n_past * 4;
    for (uint32_t i = 0; mrope && i < n_past; i++) {
        int32_t p, prev = 0;
        memcpy(&p, mpos + (size_t)i * 4, 4);
        if (i) memcpy(&prev, mpos + (size_t)(i - 1) * 4, 4);
        if (p < prev || p > (1 << 30))
            return errorf(err, WICK_ERR_FORMAT, "saved state: M-RoPE position %d after position %u goes backwards or too far", p, i);
    }
    const uint8_t *rows = mpos + (mrope ? (size_t)n_past * 4 : 0), *rs = rows;
    for (int l = 0; l < mc->n_layers; l++)
        if (kinds[l] != LAYER_ROWS_NONE)
            rs += (size_t)(n_past - (kinds[l] == LAYER_ROWS_RING ? first : 0)) * (kv_row_bytes(c, c->k_cache, l) + kv_row_bytes(c, c->v_cache, l));
    int32_t snap_pos[STATE_SNAPSHOTS];
    const uint8_t *snaps = rs + (size_t)rs_floats * 4;
    for (uint32_t i = 0; i < n_snap; i++) {
        snap_pos[i] = (int32_t)get_u32(snaps + (size_t)i * (4 + (size_t)rs_floats * 4));
        if (snap_pos[i] < 1 || (uint32_t)snap_pos[i] > n_past || (i && snap_pos[i] == snap_pos[0]))
            return errorf(err, WICK_ERR_FORMAT, "saved state: a snapshot of the recurrent state at position %d (of %u)", snap_pos[i], n_past);
    }

    /* everything checked: the context takes the state */
    int32_t np = (int32_t)n_past;
    int32_t lo = any_ring ? (int32_t)first : 0; /* the first position the rings will hold */
    if (c->ring && np - c->ring > lo) lo = np - c->ring;
    for (int l = 0; l < mc->n_layers; l++) {
        if (kinds[l] == LAYER_ROWS_NONE) continue;
        int32_t from = kinds[l] == LAYER_ROWS_RING ? (int32_t)first : 0, n_rows = np - from;
        /* into a ring of this context: only the positions it holds, each in its slot */
        int32_t skip = c->kv_slots[l] != c->n_ctx && lo > from ? lo - from : 0;
        for (int which = 0; which < 2; which++) {
            size_t row = kv_row_bytes(c, which ? c->v_cache : c->k_cache, l);
            void *cache = which ? c->v_cache : c->k_cache;
            if (c->kv_slots[l] == c->n_ctx) {
                memcpy(kv_at(c, cache, l, 0), rows, (size_t)n_rows * row);
            } else {
                for (int32_t i = skip; i < n_rows; i++) memcpy(kv_at(c, cache, l, from + i), rows + (size_t)i * row, row);
            }
            rows += (size_t)n_rows * row;
        }
    }
    if (c->rs_floats) {
        memcpy(c->rstate, rs, c->rs_floats * sizeof(float));
        for (int i = 0; i < STATE_SNAPSHOTS; i++) c->rs_snap_pos[i] = -1;
        for (uint32_t i = 0; i < n_snap; i++) {
            memcpy(c->rs_snap[i], snaps + (size_t)i * (4 + (size_t)rs_floats * 4) + 4, c->rs_floats * sizeof(float));
            c->rs_snap_pos[i] = snap_pos[i];
            c->rs_snap_used[i] = ++c->rs_clock;
        }
    }
    if (c->mrope_next) {
        if (mrope) memcpy(c->mrope_next, mpos, (size_t)n_past * 4);
        else
            for (int32_t i = 0; i < np; i++) c->mrope_next[i] = i + 1;
    }
    c->n_past = np;
    c->swa_lo = c->ring ? lo : 0;
    c->n_logit_rows = 0; /* the logits of the saving context's last evaluation are not in the blob */
    memcpy(tokens, tok, (size_t)n_past * 4);
    *n_tokens = np;
    return 0;
}

/* ---- the API (wick.h) ---- */

static wick_status ctx_result(wick_ctx *c, int rc) {
    if (rc) return api_status(&c->error);
    c->error.code = WICK_OK;
    c->error.text[0] = 0;
    return api_ok();
}

wick_status wick_state_save(wick_ctx *c, const int32_t *tokens, int32_t n_tokens, void *buf, size_t cap, size_t *needed) {
    if (!c) return api_fail(WICK_ERR_INVALID_ARG, "wick_state_save: NULL context");
    return ctx_result(c, state_save(c, tokens, n_tokens, buf, cap, needed, &c->error));
}

wick_status wick_state_load(wick_ctx *c, const void *blob, size_t len, int32_t *tokens, int32_t max_tokens, int32_t *n_tokens) {
    if (!c || !n_tokens || (!tokens && max_tokens)) return api_fail(WICK_ERR_INVALID_ARG, "wick_state_load: NULL argument");
    return ctx_result(c, state_load(c, blob, len, tokens, max_tokens, n_tokens, &c->error));
}
