// rope.wgsl — an attention layer's new queries, keys and values put in place: the queries (Y)
// rotated in place, and each token's key and value rows, as the matrix products wrote them (Kn, Vn:
// f32, a row per token of the batch), stored in the layer's cache at the token's position as F16
// pairs (K, Vc: pack2x16float, two per word), the keys rotated on the way. Rotation: the first
// rope_dim dimensions of each head, by the angles of each token's position: pairs (2i, 2i+1), or
// (i, i + rope_dim/2) in NEOX style; rope_dim 0: nothing rotated (a layer without rope). The cos/sin
// tables (C, per token and pair, already multiplied by any magnitude factor) are computed by the
// glue exactly as the CPU path's rope_tables (src/forward.c), so both rotate alike.

struct Params {
  n_heads: u32,     // query heads, in Y
  head_dim: u32,
  rope_dim: u32,    // 0: no rotation
  neox: u32,
  stride: u32,      // floats between tokens in Y
  table: u32,       // the first float of this layer's table (full or sliding-window base) in C
  k_heads: u32,     // KV heads
  k_stride: u32,    // floats per token in Kn and Vn, halves per cached position in K and Vc
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read_write> Y: array<f32>;
@group(0) @binding(1) var<storage, read> C: array<f32>;  // [2][n_tok][half]: cos, then sin
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;
@group(0) @binding(4) var<storage, read_write> K: array<u32>;
@group(0) @binding(5) var<storage, read> Kn: array<f32>;
@group(0) @binding(6) var<storage, read_write> Vc: array<u32>;
@group(0) @binding(7) var<storage, read> Vn: array<f32>;

fn cos_at(t: u32, i: u32) -> f32 { return C[P.table + t * (P.rope_dim / 2u) + i]; }
fn sin_at(t: u32, i: u32) -> f32 { return C[P.table + (S.n_tok + t) * (P.rope_dim / 2u) + i]; }

// dimension e of a key head starting at Kn[base], rotated as the pair it belongs to (the same
// products as the queries' rotation, so both round alike)
fn key_dim(t: u32, base: u32, e: u32) -> f32 {
  let half = P.rope_dim / 2u;
  if (e >= P.rope_dim) { return Kn[base + e]; }
  if (P.neox == 1u) {
    if (e < half) { return Kn[base + e] * cos_at(t, e) - Kn[base + e + half] * sin_at(t, e); }
    return Kn[base + e - half] * sin_at(t, e - half) + Kn[base + e] * cos_at(t, e - half);
  }
  let i = e / 2u;
  if ((e & 1u) == 0u) { return Kn[base + e] * cos_at(t, i) - Kn[base + e + 1u] * sin_at(t, i); }
  return Kn[base + e - 1u] * sin_at(t, i) + Kn[base + e] * cos_at(t, i);
}

// one invocation per rotated query pair of every token, then per word (two halves) of each token's
// key row, then of its value row
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let half = P.rope_dim / 2u;
  let nq = S.n_tok * P.n_heads * half;
  let words = P.k_stride / 2u;
  if (gid.x < nq) {
    let i = gid.x % half;
    let h = (gid.x / half) % P.n_heads;
    let t = gid.x / (half * P.n_heads);
    let base = t * P.stride + h * P.head_dim;
    let i0 = base + select(2u * i, i, P.neox == 1u);
    let i1 = base + select(2u * i + 1u, i + half, P.neox == 1u);
    let a = Y[i0];
    let b = Y[i1];
    Y[i0] = a * cos_at(t, i) - b * sin_at(t, i);
    Y[i1] = a * sin_at(t, i) + b * cos_at(t, i);
    return;
  }
  let g = gid.x - nq;
  let t = (g % (S.n_tok * words)) / words;
  let w = g % words;
  let src = t * P.k_stride + 2u * w;
  let dst = (S.pos0 + t) * words + w;
  if (g < S.n_tok * words) {
    let base = t * P.k_stride + ((2u * w) / P.head_dim) * P.head_dim;
    let e = (2u * w) % P.head_dim;
    K[dst] = pack2x16float(vec2f(key_dim(t, base, e), key_dim(t, base, e + 1u)));
  } else if (g < 2u * S.n_tok * words) {
    Vc[dst] = pack2x16float(vec2f(Vn[src], Vn[src + 1u]));
  }
}
