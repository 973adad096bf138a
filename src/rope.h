/* rope.h — the rotary position embedding (rope.c). */
#ifndef WICK_ROPE_H
#define WICK_ROPE_H

#include "context.h"

/* cos/sin of every rotated pair for n positions from pos0 (cs, sn: [n][rope_dim/2], the sliding
 * layers' rope_dim where sliding), with rope base `base`, linear position scale `scale` and
 * magnitude factor mscale; an M-RoPE model's tokens at the four positions each of mpos ([n][4])
 * where it is given (pos0 is then unused) */
void rope_tables(const struct wick_ctx *c, bool sliding, float base, float scale, float mscale, int pos0, int n,
                 const int32_t *mpos, float *cs, float *sn);
/* Pairs in the wider of the full and the sliding layers' tables: the stride of c->rope_cos/sin. */
static inline int rope_half_max(const model_config *mc) {
    return (mc->rope_dim > mc->rope_dim_swa ? mc->rope_dim : mc->rope_dim_swa) / 2;
}
/* Rotates the first rope_dim dimensions of each of n_heads heads of vec by the angles of cs/sn. */
void rope_apply(float *vec, int n_heads, const model_config *mc, const float *cs, const float *sn);

#endif
