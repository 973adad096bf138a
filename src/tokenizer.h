/* tokenizer.h — text ↔ token ids: SentencePiece (tokenizer.ggml.model = "llama", and llama2.c's
 * tokenizer.bin) and byte-level BPE (tokenizer.ggml.model = "gpt2"), special tokens, and a
 * streaming detokenizer that never emits a partial UTF-8 character. */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

typedef struct wick_vocab wick_vocab;

/* From GGUF metadata (tokenizer.ggml.*). Works on vocab-only files. 0 or -1 + message. */
int vocab_load_gguf(wick_vocab **out, const gguf_file *g, errmsg *err);
/* From a llama2.c tokenizer.bin (i32 max_token_length, then per token: f32 score, i32 len, bytes);
 * n_vocab comes from the checkpoint header. BOS = 1, EOS = 2, UNK = 0 as in llama2.c. */
int vocab_load_llama2c(wick_vocab **out, const uint8_t *buf, size_t size, int32_t n_vocab,
                       errmsg *err);
void vocab_free(wick_vocab *v);

int32_t vocab_n_tokens(const wick_vocab *v);
int32_t vocab_bos(const wick_vocab *v);   /* -1 when none */
int32_t vocab_eos(const wick_vocab *v);   /* -1 when none */
bool vocab_add_bos(const wick_vocab *v);  /* tokenizer.ggml.add_bos_token (default per model type) */
bool vocab_add_eos(const wick_vocab *v);  /* tokenizer.ggml.add_eos_token (default false) */
int32_t vocab_sep(const wick_vocab *v);   /* tokenizer.ggml.seperator_token_id ([SEP]); -1 when none */
bool vocab_add_sep(const wick_vocab *v);  /* tokenizer.ggml.add_sep_token (default: WordPiece's true) */
bool vocab_is_eog(const wick_vocab *v, int32_t id); /* end of generation: EOS, EOT, <|im_end|>… */
const char *vocab_model_name(const wick_vocab *v); /* "llama" (SentencePiece), "gpt2" (BPE), "gemma4", "bert" (WordPiece) */
bool vocab_is_control(const wick_vocab *v, int32_t id); /* control or unknown: no text when streamed */
int vocab_max_piece_len(const wick_vocab *v); /* longest token text in bytes */
/* whether llama_detokenize cleans spaces before punctuation (clean_up_tokenization_spaces) */
bool vocab_cleans_spaces(const wick_vocab *v);

/* Tokenizes len bytes of text. add_special: prepend BOS (and append EOS) as the metadata asks.
 * parse_special: recognise special/control token texts such as "<|im_start|>" inside text
 * (user-defined tokens are recognised either way, as llama.cpp does). Writes at most max_out
 * ids; returns the total count needed (> max_out: call again with more room), or -1 on error
 * (out of memory, input over 512 MiB). Never fails on any byte sequence (invalid UTF-8 goes
 * through byte fallback and comes back unchanged from the detokenizer). */
int vocab_tokenize(const wick_vocab *v, const char *text, size_t len, bool add_special,
                   bool parse_special, int32_t *out, int max_out);

/* The words the byte-level BPE pre-tokenizer named pre (a tokenizer.ggml.pre value; NULL or ""
 * for the default) splits text into, as byte offsets: ends[i] is where word i ends (at most
 * max_ends written). Returns the word count, or -1 for an unknown name. For tests and debugging. */
int tokenizer_pre_split(const char *pre, const char *text, size_t len, size_t *ends, int max_ends);

/* The bytes of one token as text ("▁" → " ", <0xNN> → the byte, BPE bytes decoded); special
 * tokens give their text. Returns the byte count (may exceed buf_len: nothing then written
 * beyond buf_len), or -1 for an id out of range. */
int vocab_token_to_piece(const wick_vocab *v, int32_t id, char *buf, int buf_len);

/* Whole-sequence detokenization, as llama.cpp's llama_detokenize with remove_special = false,
 * unparse_special = true: SentencePiece's leading space of the first piece removed when the
 * tokenizer adds one, and for most BPE vocabularies (clean_up_tokenization_spaces) the space
 * before ? ! . , 's 'm 're 've dropped. Returns bytes needed (like snprintf; the text is
 * NUL-terminated when there is room), or -1 for an id out of range. */
int vocab_detokenize(const wick_vocab *v, const int32_t *ids, int n_ids, char *buf, int buf_len);

/* Streaming detokenizer: feed tokens one at a time, get only complete UTF-8 text back.
 * Control and unknown tokens (BOS, EOS, <|im_start|>…) stream as no text; user-defined tokens
 * stream as their text. */
typedef struct {
    const wick_vocab *v;
    char pending[8];      /* bytes of an incomplete UTF-8 character held back */
    int n_pending;
    int n_fed;            /* tokens fed so far */
    bool at_start;        /* no token has produced text yet: SentencePiece's leading space of
                             the first piece is dropped (as llama_detokenize and llama2.c do) */
} detok_stream;

/* A stream for a whole sequence (the first piece loses its leading space when the vocabulary
 * adds a space prefix), and one that continues text already shown, such as the tokens
 * generated after a prompt (every space kept). */
void detok_init(detok_stream *s, const wick_vocab *v);
void detok_init_continuing(detok_stream *s, const wick_vocab *v);
/* Appends the text of token id to out (at most out_len bytes; returns bytes written, or -1).
 * Bytes of a character that is not complete yet are kept for the next call; bytes that can
 * never form a valid character are emitted as U+FFFD (one per maximal invalid subpart).
 * A token gives at most its piece plus the held-back bytes, tripled only where bytes are
 * invalid: out_len >= 3 * (vocab_max_piece_len(v) + 3) always suffices. When out is too small
 * the result is -1 and the stream is unchanged (call again with more room). */
int detok_push(detok_stream *s, int32_t id, char *out, int out_len);
/* Emits whatever is still held back (as U+FFFD where incomplete). */
int detok_flush(detok_stream *s, char *out, int out_len);

#endif
