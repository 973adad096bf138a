/* state.h — saved sessions: a context's whole state (the token ids it holds, every attention
 * layer's cached keys and values in use, the recurrent state and its snapshots) as one binary
 * blob, and back (wick.h, wick_state_save / wick_state_load; the layout is in state.c). */
#ifndef WICK_STATE_H
#define WICK_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "errmsg.h"

/* The blob's layout version: a blob of another version is refused. */
#define STATE_FORMAT_VERSION 1

/* Bytes of the blob state_save writes for c (which holds c->n_past positions). */
uint64_t state_blob_bytes(const struct wick_ctx *c);
/* Writes c's state and the n_tokens ids it holds (n_tokens must be c->n_past) into buf (cap
 * bytes; *needed gets the size, also when it does not fit: then nothing is written). */
int state_save(const struct wick_ctx *c, const int32_t *tokens, int32_t n_tokens, void *buf, size_t cap, size_t *needed, errmsg *err);
/* Checks the blob against c (its model file, cache types and sizes, window) and only then
 * replaces c's state by it and writes the ids it holds to tokens (room for max_tokens; *n_tokens
 * gets their count). Any refusal leaves c and tokens as they were. */
int state_load(struct wick_ctx *c, const void *blob, size_t len, int32_t *tokens, int32_t max_tokens, int32_t *n_tokens, errmsg *err);
/* The identity of a model's file (a 64-bit hash of its metadata and tensor table, and of its
 * output norm's values), as a blob records it. */
uint64_t state_model_hash(const struct wick_model *m);

/* The check hash a blob ends with, of its other bytes (tests reseal mutated blobs with it). */
uint64_t state_check_hash(const void *bytes, size_t n);

#endif
