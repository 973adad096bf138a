// rope.wgsl — rotates the first rope_dim dimensions of each query and key head, in place (the keys
// in the layer's cache, where the matrix product wrote them), by the angles of each token's position: pairs (2i, 2i+1), or (i, i + rope_dim/2) in NEOX style. The cos/sin
// tables (C, per token and pair, already multiplied by any magnitude factor) are computed by
// the glue exactly as the CPU path's rope_tables (src/forward.c), so both rotate alike.

struct Params {
  n_heads: u32,     // query heads, in Y
  head_dim: u32,
  rope_dim: u32,
  neox: u32,
  stride: u32,      // floats between tokens in Y
  table: u32,       // the first float of this layer's table (full or sliding-window base) in C
  k_heads: u32,     // KV heads, in K: the layer's cache, token t's row at position pos0 + t
  k_stride: u32,    // floats per cached position
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read_write> Y: array<f32>;
@group(0) @binding(1) var<storage, read> C: array<f32>;  // [2][n_tok][half]: cos, then sin
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;
@group(0) @binding(4) var<storage, read_write> K: array<f32>;

// one invocation per rotated pair: the query heads' of every token, then the KV heads'
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let half = P.rope_dim / 2u;
  let nq = S.n_tok * P.n_heads * half;
  let in_k = gid.x >= nq;
  let g = select(gid.x, gid.x - nq, in_k);
  let heads = select(P.n_heads, P.k_heads, in_k);
  let i = g % half;
  let h = (g / half) % heads;
  let t = g / (half * heads);
  if (t >= S.n_tok) { return; }
  let base = select(t * P.stride, (S.pos0 + t) * P.k_stride, in_k) + h * P.head_dim;
  let i0 = base + select(2u * i, i, P.neox == 1u);
  let i1 = base + select(2u * i + 1u, i + half, P.neox == 1u);
  let cs = C[P.table + t * half + i];
  let sn = C[P.table + S.n_tok * half + t * half + i];
  if (in_k) {
    let a = K[i0];
    let b = K[i1];
    K[i0] = a * cs - b * sn;
    K[i1] = a * sn + b * cs;
  } else {
    let a = Y[i0];
    let b = Y[i1];
    Y[i0] = a * cs - b * sn;
    Y[i1] = a * sn + b * cs;
  }
}
