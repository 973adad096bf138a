// recurrent.wgsl — the recurrent mixers of the hybrid families, as src/recurrent.c computes them,
// with their state in GPU buffers that stay from one batch to the next:
//   conv        lfm2's short convolution and the causal depthwise convolution before DeltaNet, one
//               invocation per channel going through the batch's tokens in order (the state: the
//               previous conv_kernel − 1 inputs, [tap][channel], oldest first);
//   l2norm      DeltaNet's q and k heads divided by their L2 norm (at least eps), in place;
//   deltanet    the gated delta rule, one invocation per row j of a value head's S×S state (the rows
//               are independent: each reads its own row, the head's q and k and its v_j);
//   gated_norm  each value head's output RMS-normed (ssm_norm) times silu(z);
// and qwen35's attention output gate (attn_q holds each head's query, then its gate):
//   split_q     the queries out of the projection rows;  out_gate  att ⊙ sigmoid(gate).
// The sums run in the CPU path's order, in f32 (the CPU's L2 and RMS norms sum in double).

struct Params {
  n: u32,           // conv: channels; l2norm: groups per token; deltanet: value heads; split_q/out_gate: q_dim
  taps: u32,        // conv: conv_kernel
  in_stride: u32,   // floats between tokens in IN
  out_stride: u32,  // floats between tokens in OUT
  mode: u32,        // conv: 0 lfm2 (in B | C | x: B ⊙ x in, C ⊙ conv out), 1 SiLU of the convolution
  w_off: u32,       // conv: its weights [channel][tap] in V; deltanet: dt bias; gated_norm: ssm_norm
  w_off2: u32,      // deltanet: ssm_a
  in_off: u32,      // deltanet: α then β in each IN row; gated_norm: z in each IN row
  k_heads: u32,     // deltanet: key heads (value head h reads key head h mod k_heads)
  size: u32,        // l2norm, deltanet, gated_norm: the head size S; split_q/out_gate: head_dim
  eps: f32,
  mix_stride: u32,  // deltanet: floats between tokens in MIX
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read> IN: array<f32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<f32>;
@group(0) @binding(2) var<storage, read_write> ST: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(6) var<storage, read> MIX: array<f32>;

fn silu(x: f32) -> f32 { return x / (1.0 + exp(-x)); }
fn sigmoid(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }
// log(1 + e^x), x itself above 20 (ggml's softplus)
fn softplus(x: f32) -> f32 { return select(log(1.0 + exp(x)), x, x > 20.0); }

// gid: x + y · 2097152 (32768 workgroups of 64 in x, the glue goes on in y)
fn flat(gid: vec3u) -> u32 { return gid.x + gid.y * 2097152u; }

// out_t = Σ_k w[k] · in_(t − (taps − 1) + k), the state holding the inputs before the batch
@compute @workgroup_size(64)
fn conv(@builtin(global_invocation_id) gid: vec3u) {
  let ch = flat(gid);
  let n = P.n;
  if (ch >= n) { return; }
  let K = P.taps;
  let w = P.w_off + ch * K;
  for (var t = 0u; t < S.n_tok; t++) {
    let row = t * P.in_stride;
    var x = IN[row + ch];
    if (P.mode == 0u) { x = x * IN[row + 2u * n + ch]; }
    var sum = 0.0;
    for (var k = 0u; k + 1u < K; k++) { sum += V[w + k] * ST[k * n + ch]; }
    sum += V[w + K - 1u] * x;
    for (var k = 0u; k + 2u < K; k++) { ST[k * n + ch] = ST[(k + 1u) * n + ch]; }
    ST[(K - 2u) * n + ch] = x;
    var y = silu(sum);
    if (P.mode == 0u) { y = IN[row + n + ch] * sum; }
    OUT[t * P.out_stride + ch] = y;
  }
}

// x / max(‖x‖, eps) for each of the n groups of S values of every token, in place
@compute @workgroup_size(64)
fn l2norm(@builtin(global_invocation_id) gid: vec3u) {
  let id = flat(gid);
  if (id >= S.n_tok * P.n) { return; }
  let at = (id / P.n) * P.out_stride + (id % P.n) * P.size;
  var ss = 0.0;
  for (var i = 0u; i < P.size; i++) { let v = OUT[at + i]; ss += v * v; }
  let inv = 1.0 / max(sqrt(ss), P.eps);
  for (var i = 0u; i < P.size; i++) { OUT[at + i] = OUT[at + i] * inv; }
}

// The delta rule for row j of value head h, token by token (MIX rows: q heads | k heads | v heads;
// IN rows: α and β of every head at in_off):
//   S ← e^g · S;  δ_j = β (v_j − Σ_i S_ji k_i);  S_ji += δ_j k_i;  o_j = Σ_i S_ji q_i / √S
// with e^g = exp(softplus(α + dt) · a) and β = sigmoid(β). The state: [head][j][i].
@compute @workgroup_size(64)
fn deltanet(@builtin(global_invocation_id) gid: vec3u) {
  let id = flat(gid);
  let Sd = P.size;
  let nv = P.n;
  let nk = P.k_heads;
  if (id >= nv * Sd) { return; }
  let h = id / Sd;
  let j = id % Sd;
  let q0 = (h % nk) * Sd;
  let k0 = (nk + h % nk) * Sd;
  let v = (2u * nk + h) * Sd + j;
  let r0 = (h * Sd + j) * Sd;
  let scale = 1.0 / sqrt(f32(Sd));
  for (var t = 0u; t < S.n_tok; t++) {
    let m = t * P.mix_stride;
    let g = t * P.in_stride;
    let decay = exp(softplus(IN[g + P.in_off + h] + V[P.w_off + h]) * V[P.w_off2 + h]);
    let beta = sigmoid(IN[g + P.in_off + nv + h]);
    var kv = 0.0;
    for (var i = 0u; i < Sd; i++) {
      let s = ST[r0 + i] * decay;
      ST[r0 + i] = s;
      kv += s * MIX[m + k0 + i];
    }
    let d = beta * (MIX[m + v] - kv);
    var o = 0.0;
    for (var i = 0u; i < Sd; i++) {
      let s = ST[r0 + i] + d * MIX[m + k0 + i];
      ST[r0 + i] = s;
      o += s * MIX[m + q0 + i];
    }
    OUT[t * P.out_stride + h * Sd + j] = o * scale;
  }
}

// OUT's head (token t, head h) = rmsnorm(it) · w · silu(z), z at in_off of IN's row t
@compute @workgroup_size(64)
fn gated_norm(@builtin(global_invocation_id) gid: vec3u) {
  let id = flat(gid);
  if (id >= S.n_tok * P.n) { return; }
  let t = id / P.n;
  let at = t * P.out_stride + (id % P.n) * P.size;
  let z = t * P.in_stride + P.in_off + (id % P.n) * P.size;
  var ss = 0.0;
  for (var i = 0u; i < P.size; i++) { let v = OUT[at + i]; ss += v * v; }
  let scale = 1.0 / sqrt(ss / f32(P.size) + P.eps);
  for (var i = 0u; i < P.size; i++) { OUT[at + i] = OUT[at + i] * scale * V[P.w_off + i] * silu(IN[z + i]); }
}

// q[t][h·hd + i] = IN[t][h·2hd + i] (each head's query, then its gate, in IN's rows of 2·q_dim)
@compute @workgroup_size(64)
fn split_q(@builtin(global_invocation_id) gid: vec3u) {
  let id = flat(gid);
  if (id >= S.n_tok * P.n) { return; }
  let t = id / P.n;
  let r = id % P.n;
  OUT[id] = IN[t * 2u * P.n + (r / P.size) * 2u * P.size + r % P.size];
}

// att[t][h·hd + i] ·= sigmoid(IN[t][h·2hd + hd + i])
@compute @workgroup_size(64)
fn out_gate(@builtin(global_invocation_id) gid: vec3u) {
  let id = flat(gid);
  if (id >= S.n_tok * P.n) { return; }
  let t = id / P.n;
  let r = id % P.n;
  OUT[id] = OUT[id] * sigmoid(IN[t * 2u * P.n + (r / P.size) * 2u * P.size + P.size + r % P.size]);
}
