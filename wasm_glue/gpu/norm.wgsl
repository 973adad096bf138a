// norm.wgsl — RMS norm of groups of n floats: out = x · (mean(x²) + eps)^(−1/2) · w, one
// workgroup per group. `main` reads X and writes Y (xb = norm(x)); `in_place` norms Y itself
// (q/k norms, post norms). Groups: per token (the whole width) or per head (head_dim each).
// The sum of squares is taken in f32 (the CPU path sums in double; the difference is far below
// the tolerances).

struct Params {
  n: u32,            // floats per group
  groups_per_tok: u32,
  stride: u32,       // floats between tokens, in X and Y
  w_off: u32,        // the weights' first float in V (the model's vectors)
  eps: f32,
  head: u32,         // 1: the output head's rows (n_out of them from first_out, written from row 0)
  pad0: u32,
  pad1: u32,
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<storage, read> V: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<uniform> S: Step;

const WG: u32 = 64u;
var<workgroup> sums: array<f32, 64>;

fn reduce(lid: u32, v: f32) -> f32 {
  sums[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { sums[lid] += sums[lid + s]; }
    workgroupBarrier();
  }
  let total = sums[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x / P.groups_per_tok;
  let g = wid.x % P.groups_per_tok;
  let src = (select(t, S.first_out + t, P.head == 1u)) * P.stride + g * P.n;
  let dst = t * P.stride + g * P.n;
  var ss = 0.0;
  for (var i = lid; i < P.n; i += WG) { let v = X[src + i]; ss += v * v; }
  let scale = inverseSqrt(reduce(lid, ss) / f32(P.n) + P.eps);
  for (var i = lid; i < P.n; i += WG) { Y[dst + i] = X[src + i] * scale * V[P.w_off + i]; }
}

@compute @workgroup_size(64)
fn in_place(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wid.x / P.groups_per_tok;
  let g = wid.x % P.groups_per_tok;
  let at = t * P.stride + g * P.n;
  var ss = 0.0;
  for (var i = lid; i < P.n; i += WG) { let v = Y[at + i]; ss += v * v; }
  let scale = inverseSqrt(reduce(lid, ss) / f32(P.n) + P.eps);
  for (var i = lid; i < P.n; i += WG) { Y[at + i] = Y[at + i] * scale * V[P.w_off + i]; }
}
