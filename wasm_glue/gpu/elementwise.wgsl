// elementwise.wgsl — the small steps between the matrix products, over n_tok rows of n floats:
//   glu:     A = act(A) ⊙ B           (the gated FFN: act SiLU or GELU in its tanh form)
//   residual: A += scale · B          (a block's output added to the residual stream)
//   logits:  A = cap · tanh(A · scale / cap), or A · scale when cap is 0 (logit scale, soft-cap)
// tanh is 1 − 2/(e^{2x} + 1), as the CPU path computes it (src/forward.c, tanh_exp).

struct Params {
  n: u32,        // floats per row
  stride: u32,   // floats between rows
  act: u32,      // glu: 0 SiLU, 1 GELU (tanh)
  head: u32,     // 1: rows n_out (the output head's), else n_tok
  scale: f32,
  cap: f32,
  pad0: u32, pad1: u32,
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read_write> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;

//ACT_BEGIN//
// (matmul.wgsl's main_mv_glu gets this piece spliced in by the glue: one GLU activation for both)
fn tanh_exp(x: f32) -> f32 { return 1.0 - 2.0 / (exp(2.0 * x) + 1.0); }
// the gated FFN's activation: GELU in its tanh form, else SiLU
fn glu_act(x: f32, gelu: bool) -> f32 {
  if (gelu) { return 0.5 * x * (1.0 + tanh_exp(0.79788456080286535588 * x * (1.0 + 0.044715 * x * x))); }
  return x / (1.0 + exp(-x));
}
//ACT_END//

// gid: x + y · 2097152 (32768 workgroups of 64 in x, the glue goes on in y)
fn index(gid: u32) -> i32 {
  let rows = select(S.n_tok, S.n_out, P.head == 1u);
  let t = gid / P.n;
  if (t >= rows) { return -1; }
  return i32(t * P.stride + gid % P.n);
}

@compute @workgroup_size(64)
fn glu(@builtin(global_invocation_id) gid: vec3u) {
  let i = index(gid.x + gid.y * 2097152u);
  if (i < 0) { return; }
  A[i] = glu_act(A[i], P.act == 1u) * B[i];
}

@compute @workgroup_size(64)
fn residual(@builtin(global_invocation_id) gid: vec3u) {
  let i = index(gid.x + gid.y * 2097152u);
  if (i < 0) { return; }
  A[i] = A[i] + P.scale * B[i];
}

@compute @workgroup_size(64)
fn logits(@builtin(global_invocation_id) gid: vec3u) {
  let i = index(gid.x + gid.y * 2097152u);
  if (i < 0) { return; }
  let v = A[i] * P.scale;
  if (P.cap > 0.0) { A[i] = tanh_exp(v / P.cap) * P.cap; } else { A[i] = v; }
}
