/* wick.h — the public C API of the wick inference engine.
 *
 * Every function returns a wick_status; on failure wick_last_error() gives one readable line
 * ("tensor blk.3.ffn_up.weight: data runs past end of file"). The engine is used from one
 * thread at a time (the Web Worker that owns it); its own worker threads are internal.
 *
 * Lifetime: a model made by wick_model_load holds views into the caller's buffer, which must
 * stay alive and unchanged until wick_model_free. A context (KV cache, scratch, threads) is
 * made from a model and freed before it.
 *
 * The buffer must also be writable: in the relaxed-SIMD builds the first wick_ctx_new on a
 * model rewrites its Q4_K and Q6_K weight matrices in place into the layouts of the CPU kernels
 * (the same values and size, quant.h: Q4_K_R, Q6_K_R), so the buffer no longer holds the file's
 * bytes; keep a copy of the file elsewhere if it is needed again (the glue caches a download
 * before loading it). */
#ifndef WICK_H
#define WICK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    WICK_OK = 0,
    WICK_ERR_INVALID_ARG = 1,  /* a bad argument from the caller */
    WICK_ERR_FORMAT = 2,       /* the file is malformed */
    WICK_ERR_UNSUPPORTED = 3,  /* a valid file using something wick does not implement */
    WICK_ERR_NOMEM = 4,        /* an allocation failed or would not fit */
    WICK_ERR_CONTEXT_FULL = 5, /* the tokens do not fit in the context window */
} wick_status;

typedef struct wick_model wick_model;
typedef struct wick_ctx wick_ctx;

/* The message of the last failure of any call (empty when none). The status a call returns is
 * its own code, never read from this text. */
const char *wick_last_error(void);

/* ---- models ---- */

/* A GGUF file (v2/v3) of a supported architecture (llama, qwen2, qwen3, gemma2, gemma3, phi3,
 * smollm3, granite, olmo2, lfm2, qwen35), or a vocab-only GGUF (tokenizing only). */
wick_status wick_model_load_gguf(const void *buf, size_t size, wick_model **out);
/* A model split into n GGUF files (llama.cpp's gguf-split, name-00001-of-0000N.gguf): one
 * buffer per part, in order, each alive until wick_model_free. Also the way to hold a model
 * larger than one allocation can be. */
wick_status wick_model_load_gguf_parts(const void *const *bufs, const size_t *sizes, int32_t n, wick_model **out);
/* Reads n bytes of part `part` of the model file at `offset` into dst: 0, or -1 when they cannot be had. */
typedef int32_t (*wick_read_fn)(void *user, int32_t part, uint64_t offset, void *dst, size_t n);
/* The parts with holes: ranges of their bytes left out of the buffers, n_holes triples (part,
 * offset in that part, bytes) in order, each buffer holding its part with its holes cut out.
 * Only a table read one row per token may lie in a hole (per_layer_token_embd.weight, most of a
 * Gemma 4 E2B/E4B file): the engine reads the rows of each batch's tokens through read (user its
 * first argument). In the wasm build read may be NULL: the rows come from the host
 * (Module.wickReadRows, see src/engine_library.js). */
wick_status wick_model_load_gguf_sparse(const void *const *bufs, const size_t *sizes, int32_t n, const uint64_t *holes, int32_t n_holes,
                                        wick_read_fn read, void *user, wick_model **out);
/* The same for a model that only an external context (wick_ctx_new_external: the glue's GPU
 * path) runs: any tensor bound as a weight matrix may lie in a hole, and its bytes are never
 * read here (wick_model_tensors_json says where they are in the file; wick_ctx_new refuses the
 * model). The tensors read at load (norms, biases, rope factors: converted to F32) must be in
 * the buffers. The weights live once, on the device; a model that has to run on the CPU after
 * all is loaded again whole. */
wick_status wick_model_load_gguf_external(const void *const *bufs, const size_t *sizes, int32_t n, const uint64_t *holes,
                                          int32_t n_holes, wick_model **out);
/* Memory for a model file, of any size wasm32 can hold. In the wasm build one malloc above
 * 2 GiB fails (Emscripten 3.1.6's sbrk takes a signed 32-bit step), so a buffer of 1 GiB or more
 * is taken from the top of the heap in steps below that; freed, it is kept for the next large
 * buffer (or given back when it is still at the top). NULL when the memory is not there. */
void *wick_buffer_alloc(size_t size);
void wick_buffer_free(void *buf, size_t size);
/* A llama2.c checkpoint (.bin) and its tokenizer.bin. */
wick_status wick_model_load_llama2c(const void *bin, size_t bin_size, const void *tok, size_t tok_size,
                                    wick_model **out);
void wick_model_free(wick_model *m);

typedef struct {
    char arch[32];          /* "llama", "qwen2", "gemma3", … */
    int32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, hidden_dim;
    int32_t n_ctx_train, rope_dim, rope_neox;
    float rope_base, rope_scale, rms_eps;
    int32_t bos, eos;       /* -1 when none */
    int32_t has_weights;    /* 0 for a vocab-only file */
    uint64_t n_params, weight_bytes;
} wick_model_info;

wick_status wick_model_get_info(const wick_model *m, wick_model_info *out);
/* JSON with the architecture, hyperparameters and the count of tensors of each type.
 * Writes at most buf_len bytes (NUL-terminated); *needed gets the full length. */
wick_status wick_model_info_json(const wick_model *m, char *buf, size_t buf_len, size_t *needed);

/* ---- tokens ---- */

/* Writes up to max_tokens ids and sets *n_tokens to the count needed (call again with more room
 * when it is larger than max_tokens). add_bos: prepend BOS as the vocab asks. */
wick_status wick_tokenize(const wick_model *m, const char *text, size_t len, int add_bos, int parse_special,
                          int32_t *tokens, int32_t max_tokens, int32_t *n_tokens);
/* The text of one token; *n_bytes gets its length (may exceed buf_len: then call again). */
wick_status wick_token_to_piece(const wick_model *m, int32_t token, char *buf, int32_t buf_len, int32_t *n_bytes);
int wick_token_is_eog(const wick_model *m, int32_t token);
/* The text of a whole id sequence, as llama.cpp's llama_detokenize (SentencePiece's leading
 * space of the first piece removed); *n_bytes gets the length (may exceed buf_len: call again). */
wick_status wick_detokenize(const wick_model *m, const int32_t *tokens, int32_t n_tokens, char *buf, int32_t buf_len,
                            int32_t *n_bytes);

/* ---- contexts ---- */

/* Types of the KV cache. The block types keep each cached row (one position's keys or values, every
 * KV head) as blocks of 32 values in the weight formats of the same names (quant.h): Q8_0 34 bytes
 * per 32 values, Q4_0 18, against F16's 64; they need head dimensions that are multiples of 32. */
enum { WICK_KV_F32 = 0, WICK_KV_F16 = 1, WICK_KV_Q8_0 = 2, WICK_KV_Q4_0 = 3 };
#define WICK_KV_TYPE_COUNT 4

typedef struct {
    int32_t n_ctx;      /* context window in tokens (0: the training context clamped to 2048…4096) */
    int32_t n_batch;    /* largest batch evaluated in one pass (0: 256); longer batches are split */
    int32_t n_threads;  /* 0: 1 */
    int32_t kv_type;    /* WICK_KV_F16 (default), WICK_KV_F32, WICK_KV_Q8_0 or WICK_KV_Q4_0: keys and values */
    /* the keys' and the values' own types, as llama.cpp's -ctk / -ctv: 0 (what a zeroed struct
     * holds) takes kv_type. WICK_KV_F32 is 0 too, so F32 keys under another value type are asked
     * for as kv_type WICK_KV_F32 with kv_type_v set (and the other way round). */
    int32_t kv_type_k, kv_type_v;
} wick_ctx_params;

void wick_ctx_default_params(wick_ctx_params *p);
wick_status wick_ctx_new(const wick_model *m, const wick_ctx_params *p, wick_ctx **out);
void wick_ctx_free(wick_ctx *c);
/* The message of the last failed call on this context (wick_eval, wick_kv_trim, wick_kv_shift, …),
 * kept per context for a caller that has several; empty when its last call succeeded. */
const char *wick_ctx_last_error(const wick_ctx *c);

/* Evaluates n tokens at positions n_past … n_past+n-1 as one batch (prefill) or a single token
 * (decode), appending their keys and values to the cache. all_logits: keep the logits of every
 * position (else only the last). Fails with WICK_ERR_CONTEXT_FULL when they do not fit. */
wick_status wick_eval(wick_ctx *c, const int32_t *tokens, int32_t n, int all_logits);
/* Logits of position i of the last wick_eval (i = -1: the last one), n_vocab floats; NULL if not kept. */
const float *wick_get_logits(const wick_ctx *c, int32_t i);
int32_t wick_n_past(const wick_ctx *c);
int32_t wick_n_ctx(const wick_ctx *c);
/* Forget everything after the first n_keep positions (0: empty cache). Refused when a
 * sliding-window layer no longer holds the window before n_keep (its ring kept only the last
 * n_swa − 1 + n_batch positions), or when a recurrent state (hybrid models) has no snapshot at
 * n_keep (wick_state_snapshot): evaluate from 0 then. */
wick_status wick_kv_trim(wick_ctx *c, int32_t n_keep);
/* Drop positions [n_keep, n_keep + n_discard) and move the later ones down, re-rotating
 * their cached keys for their new positions (the context shift). Refused when a
 * sliding-window layer would need kept positions its ring no longer holds, and for a hybrid
 * model (its recurrent state cannot drop positions): evaluate the kept tokens again then. */
wick_status wick_kv_shift(wick_ctx *c, int32_t n_keep, int32_t n_discard);
/* Bytes held by the KV cache (of the attention layers only, in a hybrid model). */
size_t wick_kv_bytes(const wick_ctx *c);
/* Bytes of the recurrent state of a hybrid model (lfm2, qwen35), its snapshots included: fixed
 * at context creation, whatever the number of tokens; 0 for a model without recurrent layers. */
size_t wick_state_bytes(const wick_ctx *c);
/* Keeps a snapshot of the recurrent state at the current position, so that wick_kv_trim can
 * later return there (the context keeps the last two; the generator takes one at the end of
 * each prompt). Without a snapshot a hybrid model's cache is cut back only to 0. */
wick_status wick_state_snapshot(wick_ctx *c);

/* ---- saved sessions (state.c) ----
 * A context's state as one blob: the token ids its cache holds, every attention layer's keys and
 * values in use (a sliding layer's ring as it holds them), the recurrent state of a hybrid model
 * and its snapshots, and the identity of the model file; loaded into another context of the same
 * model (the same KV type; a window at least as long), evaluation goes on exactly as it would
 * have in the first. The blob's layout is in src/state.c. */
/* Writes the state of c, which holds n_tokens = wick_n_past(c) positions whose token ids are
 * tokens, into buf (cap bytes). *needed gets the blob's size; with buf NULL or cap too small
 * nothing is written (call again with that much room). */
wick_status wick_state_save(wick_ctx *c, const int32_t *tokens, int32_t n_tokens, void *buf, size_t cap, size_t *needed);
/* Replaces the state of c by the blob's and writes the token ids it holds to tokens (room for
 * max_tokens; *n_tokens gets their count). A blob of another model file, KV type or layout, a
 * truncated, damaged or hostile one is refused with a message, and c stays as it was. */
wick_status wick_state_load(wick_ctx *c, const void *blob, size_t len, int32_t *tokens, int32_t max_tokens, int32_t *n_tokens);

/* ---- embeddings: encoders (bert, nomic-bert, modern-bert, gemma-embedding) and decoders whose
 * file sets <arch>.pooling_type (Qwen3-Embedding) ----
 * An encoder's context (wick_ctx_new on a model whose info JSON says "encoder": true) has no
 * logits: wick_eval and the generator refuse it, and a decoder's context refuses wick_embed unless
 * its file names a pooling (info "pooling"); wick_embed then empties that context's cache. Its
 * window (n_ctx) is the longest sequence it takes, at most the model's training context (the
 * default); n_batch is how many tokens one pass evaluates (default 2048, at least n_ctx):
 * several sequences are packed into one pass, each attending only to its own tokens. */
enum {
    WICK_POOLING_DEFAULT = -1, /* the model's own (<arch>.pooling_type) */
    WICK_POOLING_NONE = 0,     /* every token's hidden state */
    WICK_POOLING_MEAN = 1,
    WICK_POOLING_CLS = 2,      /* the first token's ([CLS]) */
    WICK_POOLING_LAST = 3,
    WICK_POOLING_RANK = 4,     /* a reranker's (wick_rerank): embed refuses it */
};
/* The model's pooling (WICK_POOLING_*); -1 for a model that does not embed. */
int32_t wick_model_pooling(const wick_model *m);
/* Embeds n_seq token sequences (their ids back to back in tokens, sequence s of lens[s] ids,
 * [CLS] … [SEP] included as wick_tokenize with add_bos adds them); each must fit the window
 * (WICK_ERR_CONTEXT_FULL otherwise: truncating is the caller's choice). Writes to out one row of
 * dim floats per sequence, or with WICK_POOLING_NONE one per token (Σ lens rows); normalize:
 * each row scaled to unit length (L2). The same vectors whatever the batching and thread count. */
wick_status wick_embed(wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, int32_t pooling, int32_t normalize,
                       float *out);

/* ---- reranking: models with pooling_type rank ----
 * bge-reranker (bert with a classification head, cls.*) and Qwen3-Reranker (qwen3 with cls.output,
 * its "yes" and "no" rows): their info JSON says "reranker": true. A query and a document make one
 * sequence, scored as llama.cpp's server scores it (its /v1/rerank relevance_score). */
/* The pair's ids as llama.cpp's server forms them: the file's tokenizer.chat_template.rerank with
 * {query} and {document} filled in (special tokens parsed, nothing added), else BOS, query, EOS
 * and/or SEP as the vocabulary adds them, document, EOS if it adds one ([CLS] query [SEP] document
 * for WordPiece). *n_tokens gets the count needed (call again with more room when larger). */
wick_status wick_rerank_tokens(const wick_model *m, const char *query, size_t query_len, const char *doc, size_t doc_len,
                               int32_t *tokens, int32_t max_tokens, int32_t *n_tokens);
/* One relevance score per sequence (ids back to back as wick_embed takes them; each must fit the
 * window): bert's head output (a logit), Qwen3-Reranker's P(yes). The same scores whatever the
 * batching and thread count. A decoder's cache is left empty. */
wick_status wick_rerank(wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, float *scores);

/* ---- images: vision encoders from mmproj files (vision.c) and a picture's place in a prompt (images.c) ----
 * An mmproj GGUF (general.architecture "clip", as llama.cpp's tools/mtmd reads it) turns a picture
 * into rows of the text model's embedding width, which take the place of token embeddings. In the
 * ids wick_eval, the generator and saved sessions take, position i of the picture in slot s is
 * WICK_IMAGE_TOKEN(s, i), a negative id; its row is what wick_vision_encode (or
 * wick_ctx_set_image) gave the context for slot s. So a picture is a run of positions like any
 * other: a later prompt that starts with the same ids reuses its cached positions, and nothing is
 * encoded again. The caller gives each distinct picture its own slot (the glue: one per picture's
 * content in a conversation). Images run on CPU contexts only. */
#define WICK_IMAGE_SLOTS 32768        /* slots 0 … 32767 */
#define WICK_IMAGE_MAX_POSITIONS 65536 /* positions of one slot: 0 … 65535 */
#define WICK_IMAGE_TOKEN(slot, i) ((int32_t)(-1 - (int32_t)(((uint32_t)(slot) << 16) | (uint32_t)(i))))
/* the slot and position of an image id (tok < 0) */
#define WICK_IMAGE_SLOT_OF(tok) ((int32_t)((uint32_t)(-1 - (tok)) >> 16))
#define WICK_IMAGE_POS_OF(tok) ((int32_t)((uint32_t)(-1 - (tok)) & 0xffffu))

typedef struct wick_vision wick_vision;
/* Loads an mmproj file from buf, which (as a model's) must stay alive until wick_vision_free. An
 * unknown projector is refused by name (WICK_ERR_UNSUPPORTED). */
wick_status wick_vision_load(const void *buf, size_t size, wick_vision **out);
void wick_vision_free(wick_vision *v);
/* JSON: {"projector", "image_size", "patch_size", "positions" (per encoded image of image_size²:
 * lfm2's images have their own sizes, 64 to 256 positions each, so its picture's count comes from
 * wick_vision_layout), "n_embd" (the text width it feeds), "layers", "dim"}; writes at most buf_len
 * bytes (NUL-terminated), *needed gets the full length. */
wick_status wick_vision_info_json(const wick_vision *v, char *buf, size_t buf_len, size_t *needed);
/* The ids of one picture of width × height pixels in a prompt for text model m, as llama.cpp's mtmd
 * lays it out for the projector: its begin and end markers, the tiles' and the overview's markers
 * (tokens of m's vocabulary) and WICK_IMAGE_TOKEN(slot, 0 …) for the positions, in order.
 * *n_tokens gets the count (call again with more room when larger than max_tokens); *n_positions
 * (if not NULL) how many of them are image positions. Refused when m's embedding width is not the
 * one the projector feeds. */
wick_status wick_vision_layout(const wick_vision *v, const wick_model *m, int32_t width, int32_t height, int32_t slot,
                               int32_t *tokens, int32_t max_tokens, int32_t *n_tokens, int32_t *n_positions);
/* Encodes an RGB picture (width × height pixels of 3 bytes, rows top to bottom) on the context's
 * threads and gives the context its rows as slot (replacing what the slot held): every image the
 * projector makes of it, in the order wick_vision_layout places them. */
wick_status wick_vision_encode(const wick_vision *v, wick_ctx *c, const uint8_t *rgb, int32_t width, int32_t height, int32_t slot);
/* Gives the context n_rows rows of the text model's width for slot (copied), as wick_vision_encode
 * does (a qwen3vl model's rows are (1 + its n_deepstack_layers) times that width: the deepstack
 * rows after the embedding); flags WICK_IMAGE_NONCAUSAL: the slot's positions see each other both
 * ways (Gemma 3's images, as llama.cpp evaluates them), so a run of them is evaluated as one batch. */
enum { WICK_IMAGE_NONCAUSAL = 1 };
wick_status wick_ctx_set_image(wick_ctx *c, int32_t slot, const float *rows, int32_t n_rows, int32_t flags);
/* An M-RoPE model's (Qwen-VL's) image positions are 2-D: the slot's n_rows positions lie row by
 * row on a grid_x × grid_y grid (0 × 0: in a line, as text; wick_vision_encode sets it). */
wick_status wick_ctx_set_image_grid(wick_ctx *c, int32_t slot, int32_t grid_x, int32_t grid_y);
/* Forgets a slot's rows (-1: every slot's); cached positions stay. */
wick_status wick_ctx_drop_image(wick_ctx *c, int32_t slot);
/* Whether the context holds rows for the slot. */
int wick_ctx_has_image(const wick_ctx *c, int32_t slot);

/* ---- a forward pass outside the engine (the glue's WebGPU backend) ----
 * A context made by wick_ctx_new_external has no KV cache and runs no forward pass: wick_eval
 * and wick_kv_trim (also when the generator calls them) only append an operation to a list that
 * the caller takes with wick_ctx_external_ops, carries out on its own device, and answers by
 * writing the logits into wick_ctx_external_logits. The generator (wick_gen_*) on such a context
 * evaluates each drawn token at the end of wick_gen_next instead of the start of the next call,
 * so that the logits the next call samples from are the ones the caller computes in between;
 * the cache never shifts (a full context evaluates the kept tokens again). So sampling, grammar
 * and stop strings stay here while the forward pass can be asynchronous (WebGPU's readback is). */
enum { WICK_OP_EVAL = 1, WICK_OP_TRIM = 2, WICK_OP_SNAPSHOT = 3 };
/* Refused on a model whose weights a CPU context has rewritten (above): the outside pass reads
 * the file's layout. */
wick_status wick_ctx_new_external(const wick_model *m, int32_t n_ctx, wick_ctx **out);
/* The operations since the last call, as int32s: WICK_OP_EVAL, first position, n, all_logits, then
 * the n token ids; WICK_OP_TRIM, positions kept; WICK_OP_SNAPSHOT, slot (0 or 1). Returns their
 * count and empties the list; *ops stays valid until the next call on the context.
 * A hybrid model's recurrent state (lfm2, qwen35) is the backend's and follows the CPU
 * context's rules: all zero at position 0; WICK_OP_SNAPSHOT keeps a copy of it, as it is after
 * the evaluations before, in that slot (replacing the slot's earlier copy); WICK_OP_TRIM to a
 * shorter length zeroes it (0) or restores the slot taken at that position: the context refuses
 * a trim to anywhere else, so no other occurs. A trim to the current length changes nothing. */
int32_t wick_ctx_external_ops(wick_ctx *c, const int32_t **ops);
/* Room for n_rows rows of logits, which wick_get_logits then returns (NULL: out of memory). */
float *wick_ctx_external_logits(wick_ctx *c, int32_t n_rows);
/* One row of logits given by its k highest entries (a backend that ranks the row itself and
 * sends only those): the row is -INFINITY except at ids[0..k), which get values[0..k); ids must
 * be distinct and in [0, n_vocab). For a generator whose wick_gen_candidates is between 1 and k,
 * its next draw is the one the whole row would give (sampler.h, sampler_candidates_needed). */
wick_status wick_ctx_external_top_logits(wick_ctx *c, int32_t k, const int32_t *ids, const float *values);

/* ---- what an outside backend needs of a model ----
 * JSON of the forward pass's inputs: the config switches (model.h) and, for every weight matrix
 * and vector, its address in this process's memory, element type, rows and columns (a wasm
 * build's addresses are offsets in its linear memory), and "model_hash" (16 hex digits: the
 * hash a saved state names its model by). Writes at most buf_len bytes
 * (NUL-terminated); *needed gets the full length. */
wick_status wick_model_tensors_json(const wick_model *m, char *buf, size_t buf_len, size_t *needed);
/* dst[0..n) = the n elements of type `type` at src (n a multiple of the block size). */
wick_status wick_dequantize(uint32_t type, const void *src, int32_t n, float *dst);
/* The engine's own kernel: the n-element weight row w of type `type` times the float row x, x
 * first converted to the type's activation format as the forward pass does (Q8_0, Q8_K, …). */
wick_status wick_row_dot(uint32_t type, const void *w, const float *x, int32_t n, float *out);

/* ---- generation: the loop of the seed chapter, one token per call ----
 *
 * A generator owns the sampler chain (see sampler.h for the order: penalties → logit bias →
 * top-k → top-p → min-p → temperature → seeded draw), the streaming detokenizer and the stop
 * strings, and drives a context:
 *     wick_gen_new → wick_gen_set(...) → wick_gen_start(prompt ids) → wick_gen_next() until finish
 * wick_gen_start reuses the cached prefix the new prompt shares with what the context already
 * holds (a chat turn only evaluates its new tokens; a hybrid model's recurrent state goes back
 * to the snapshot taken at the end of an earlier prompt, or the prompt is evaluated anew). When prompt plus generation reach the
 * context size, the first n_keep tokens stay, the oldest half of the rest is dropped and the
 * cache is shifted (wick_kv_shift) instead of failing. */

typedef struct wick_gen wick_gen;

enum {
    WICK_FINISH_NONE = 0,    /* still generating */
    WICK_FINISH_EOG = 1,     /* an end-of-generation token */
    WICK_FINISH_STOP = 2,    /* a stop string */
    WICK_FINISH_LENGTH = 3,  /* max_tokens reached */
    WICK_FINISH_GRAMMAR = 4, /* the grammar's output is complete and nothing may follow it */
};

wick_status wick_gen_new(wick_ctx *c, wick_gen **out);
void wick_gen_free(wick_gen *g);
/* Sets one setting by name (checked: a bad name or value is an error, nothing changes):
 *   temperature (0 = greedy, default 0.8), top_k (40, 0 = off), top_p (0.95, 1 = off),
 *   min_p (0.05, 0 = off), repeat_penalty (1 = off, the default), repeat_last_n (64),
 *   frequency_penalty (0), presence_penalty (0), seed (0; integers up to 2^53),
 *   max_tokens (0 = no limit but the context), n_keep (tokens kept at a context shift; -1 = the
 *   whole prompt, default 0 which keeps BOS when the model adds one), ignore_eos (0/1),
 *   n_probs (top candidates reported per token, 0 = none, at most 64),
 *   truncate_prompt (0/1: a prompt longer than the context keeps its last tokens instead of
 *   failing with WICK_ERR_CONTEXT_FULL), checkpoint (a prompt position where a hybrid model's
 *   recurrent state is also kept, so that a later prompt sharing only that much goes on from
 *   there: a chat's conversation before the template's answer prompt; 0 = none). Settings take
 *   effect at the next wick_gen_start. */
wick_status wick_gen_set(wick_gen *g, const char *name, double value);
wick_status wick_gen_add_stop(wick_gen *g, const char *text);      /* a stop string (UTF-8) */
/* Constrains generation to a GBNF grammar (llama.cpp's format, see src/grammar.h), starting at
 * the rule named root (NULL or "": "root"); NULL or "" removes the grammar. Each token is drawn
 * among those whose text keeps the output a prefix of the language (tried first on the
 * candidates the other samplers kept, on the whole vocabulary only when none of them fits); an
 * end-of-generation token only where the output is complete; generation ends with
 * WICK_FINISH_GRAMMAR when the output is complete and the grammar allows nothing more. A grammar
 * that does not parse is refused with its line and column. Applies from the next wick_gen_start. */
wick_status wick_gen_set_grammar(wick_gen *g, const char *gbnf, const char *root);
wick_status wick_gen_clear_stops(wick_gen *g);
wick_status wick_gen_set_bias(wick_gen *g, int32_t token, float bias); /* -INFINITY bans */
wick_status wick_gen_clear_bias(wick_gen *g);
/* Prefills the prompt (reusing the cached common prefix) and resets sampler state. */
wick_status wick_gen_start(wick_gen *g, const int32_t *tokens, int32_t n);
/* Samples one token, streams its text through the detokenizer and the stop strings, and
 * evaluates it when generation goes on. After it: */
wick_status wick_gen_next(wick_gen *g);
int32_t wick_gen_token(const wick_gen *g);                /* the token drawn (-1: none, the grammar ended the run) */
int32_t wick_gen_finish(const wick_gen *g);               /* WICK_FINISH_* */
const char *wick_gen_text(const wick_gen *g, int32_t *len); /* text safe to show now (complete UTF-8) */
/* top candidates of the last draw: probabilities after truncation and temperature, best first */
int32_t wick_gen_probs(const wick_gen *g, const int32_t **ids, const float **probs);
int32_t wick_gen_shifted(const wick_gen *g);   /* tokens dropped by a context shift in the last call */
/* tokens evaluated again in the last call because the cache could not shift (a hybrid model's
 * recurrent state, a sliding window's ring): the kept tokens, run through the model anew */
int32_t wick_gen_reevaluated(const wick_gen *g);
int32_t wick_gen_n_prompt_eval(const wick_gen *g); /* prompt tokens actually evaluated by the last start */
/* How many of the next row's highest logits the next wick_gen_next's draw depends on (ranked by
 * logit, ties by lower id): 1 for greedy, top_k for a draw with 0 < top_k < n_vocab, when neither
 * a grammar, nor a logit bias, nor a repetition, frequency or presence penalty is in effect; 0 when
 * it needs the whole row (also before wick_gen_start and after the run finished). An outside
 * backend may then send just those (wick_ctx_external_top_logits). */
int32_t wick_gen_candidates(const wick_gen *g);

/* The generator's context state with the token ids it holds (wick_state_save): the blob a later
 * wick_gen_state_load (in this or another context of the model) goes on from. */
wick_status wick_gen_state_save(wick_gen *g, void *buf, size_t cap, size_t *needed);
/* Loads a saved state into the generator's context (wick_state_load); the next wick_gen_start
 * reuses it as the cached prefix of its prompt (a prompt that extends the saved tokens evaluates
 * only its new ones). Refused blobs leave the generator and its context as they were. */
wick_status wick_gen_state_load(wick_gen *g, const void *blob, size_t len);
/* How many of these prompt tokens wick_gen_start would take from the cache as it is now. */
int32_t wick_gen_reusable(const wick_gen *g, const int32_t *tokens, int32_t n);

/* Checks len bytes of text against a GBNF grammar (start rule root, NULL: "root") without a
 * model: *verdict = 2 when the text is a whole sentence of the language, 1 when it is only the
 * beginning of one, 0 when it is not even that. A grammar that does not parse is an error. */
wick_status wick_grammar_check(const char *gbnf, const char *root, const char *text, size_t len, int32_t *verdict);

/* ---- sampling ---- */

/* The seed chapter's formula: probs[i] = exp(logits[i]/T) / Σ_j exp(logits[j]/T), computed
 * stably; T = 0 puts all the mass on the argmax. The same code as the sampler's. */
wick_status wick_softmax(const float *logits, int32_t n, float temperature, float *probs);

/* The simplest draw: temperature 0 → argmax; else softmax(logits/T) and a draw with the given
 * uniform u in [0,1). The full sampler chain lives in sampler.h. */
int32_t wick_sample_simple(const float *logits, int32_t n_vocab, float temperature, double u);

#ifdef __cplusplus
}
#endif
#endif
