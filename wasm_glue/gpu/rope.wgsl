// rope.wgsl — rotates the first rope_dim dimensions of each head, in place, by the angles of
// each token's position: pairs (2i, 2i+1), or (i, i + rope_dim/2) in NEOX style. The cos/sin
// tables (C, per token and pair, already multiplied by any magnitude factor) are computed by
// the glue exactly as the CPU path's rope_tables (src/forward.c), so both rotate alike.

struct Params {
  n_heads: u32,
  head_dim: u32,
  rope_dim: u32,
  neox: u32,
  stride: u32,      // floats between tokens
  table: u32,       // the first float of this layer's table (full or sliding-window base) in C
  pad0: u32, pad1: u32,
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read_write> Y: array<f32>;
@group(0) @binding(1) var<storage, read> C: array<f32>;  // [2][n_tok][half]: cos, then sin
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let half = P.rope_dim / 2u;
  let i = gid.x % half;
  let h = (gid.x / half) % P.n_heads;
  let t = gid.x / (half * P.n_heads);
  if (t >= S.n_tok) { return; }
  let base = t * P.stride + h * P.head_dim;
  let i0 = base + select(2u * i, i, P.neox == 1u);
  let i1 = base + select(2u * i + 1u, i + half, P.neox == 1u);
  let cs = C[P.table + t * half + i];
  let sn = C[P.table + S.n_tok * half + t * half + i];
  let a = Y[i0];
  let b = Y[i1];
  Y[i0] = a * cs - b * sn;
  Y[i1] = a * sn + b * cs;
}
