/* rerank.h — rerankers: a query and a document in one sequence, scored by a model with pooling
 * rank (bge-reranker on bert, Qwen3-Reranker on qwen3), as llama.cpp scores them. */
#ifndef WICK_RERANK_H
#define WICK_RERANK_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* The ids of the pair (query, document) as llama.cpp's server forms them (tools/server's
 * format_prompt_rerank): with the file's tokenizer.chat_template.rerank, that text with {query}
 * and {document} put in, tokenized with its special tokens and nothing added; else BOS, the query,
 * EOS (when the vocabulary adds one), SEP (when it adds one), the document, EOS (when it adds one).
 * Writes at most max_out ids; returns the count needed (> max_out: call again), -1 on error. */
int rerank_tokens(const struct wick_model *m, const char *query, size_t query_len, const char *doc, size_t doc_len,
                  int32_t *out, int max_out);

/* n_rows pooled rows (dim floats each, at rows) through the classification head into out
 * (n_cls_out floats per row): bert's cls, its bias and tanh, then cls.output and its bias, each
 * where the file has it (llama.cpp's build_pooling, rank); qwen3's softmax over the outputs.
 * tmp holds n_rows · dim floats. */
void rank_head(struct wick_ctx *c, const float *rows, int n_rows, float *tmp, float *out);

/* A decoder reranker's (Qwen3-Reranker's) score of each of n_seq sequences (ids back to back,
 * sequence s of lens[s]): the head's first output over its last token's hidden state, what
 * llama.cpp's server reports; one sequence at a time from an empty cache, which is left empty.
 * (An encoder's come from encoder_eval with POOL_RANK: its sequences go in packed batches.) */
int rerank_decoder(struct wick_ctx *c, const int32_t *tokens, const int32_t *lens, int32_t n_seq, float *scores, errmsg *err);

#endif
