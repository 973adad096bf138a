// attention.wgsl — softmax(q·Kᵀ · scale) · V for one head of one token per workgroup, over the
// cached positions the token sees (all before it and itself, or the last `window` of them on a
// sliding-window layer), with the softmax taken online over chunks of 64 positions (running
// maximum and sum, earlier partial sums rescaled), so no score row is stored. Grouped-query
// attention: query head h reads KV head h / (n_heads / n_kv_heads). The cache holds F16 halves, two
// per word (rope.wgsl packs them; unpack2x16float here).

struct Params {
  n_heads: u32,
  n_kv_heads: u32,
  head_dim: u32,
  q_stride: u32,     // floats between tokens in Q and O
  kv_dim: u32,       // floats per cached position
  window: u32,       // 0: every earlier position; else position p sees p − window + 1 … p
  scale: f32,
  softcap: f32,      // 0: off; else s → softcap · tanh(s / softcap) (gemma2)
}
struct Step { n_tok: u32, pos0: u32, n_out: u32, first_out: u32 }

@group(0) @binding(0) var<storage, read> Q: array<f32>;
@group(0) @binding(1) var<storage, read> K: array<u32>;
@group(0) @binding(2) var<storage, read> Vc: array<u32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;

const WG: u32 = 64u;
const MAX_HEAD_DIM: u32 = 256u;
var<workgroup> q: array<f32, 256>;
var<workgroup> prob: array<f32, 64>;

fn tanh_exp(x: f32) -> f32 { return 1.0 - 2.0 / (exp(2.0 * x) + 1.0); }
// element i of the value cache (kv_dim and head_dim are even: a head's halves start a word)
fn v_at(i: u32) -> f32 {
  let v = unpack2x16float(Vc[i >> 1u]);
  return select(v.x, v.y, (i & 1u) == 1u);
}

// The online softmax of query head h of token t over cached positions lo ..= hi: the running
// maximum m, the sum l of exp(s − m), and this thread's output dims lid, lid + 64, … (head_dim ≤ 256)
// of Σ exp(s − m) · V, not yet divided by l.
struct Partial { m: f32, l: f32, acc: array<f32, 4> }

fn attend(t: u32, h: u32, lo: u32, hi: u32, lid: u32) -> Partial {
  let kvh = h / (P.n_heads / P.n_kv_heads);
  for (var d = lid; d < P.head_dim; d += WG) { q[d] = Q[t * P.q_stride + h * P.head_dim + d]; }
  workgroupBarrier();
  var acc: array<f32, 4>;
  for (var j = 0u; j < 4u; j++) { acc[j] = 0.0; }
  var m = -3.0e38;
  var l = 0.0;
  for (var c0 = lo; c0 <= hi; c0 += WG) {
    let p = c0 + lid;
    var s = -3.0e38;
    if (p <= hi) {
      let kb = (p * P.kv_dim + kvh * P.head_dim) / 2u;
      var dot = 0.0;
      for (var d = 0u; d < P.head_dim; d += 2u) {
        let k = unpack2x16float(K[kb + d / 2u]);
        dot += q[d] * k.x;
        dot += q[d + 1u] * k.y;
      }
      s = dot * P.scale;
      if (P.softcap > 0.0) { s = tanh_exp(s / P.softcap) * P.softcap; }
    }
    prob[lid] = s;
    workgroupBarrier();
    var cm = m;
    let n_here = min(WG, hi + 1u - c0);
    for (var i = 0u; i < n_here; i++) { cm = max(cm, prob[i]); }
    let corr = exp(m - cm);
    workgroupBarrier();
    prob[lid] = select(0.0, exp(s - cm), p <= hi);
    workgroupBarrier();
    var sum = 0.0;
    for (var i = 0u; i < n_here; i++) { sum += prob[i]; }
    l = l * corr + sum;
    for (var j = 0u; j < 4u; j++) {
      let d = lid + j * WG;
      if (d < P.head_dim) {
        var a = acc[j] * corr;
        for (var i = 0u; i < n_here; i++) { a += prob[i] * v_at((c0 + i) * P.kv_dim + kvh * P.head_dim + d); }
        acc[j] = a;
      }
    }
    m = cm;
    workgroupBarrier();
  }
  return Partial(m, l, acc);
}

// the first cached position that position pos sees
fn first_seen(pos: u32) -> u32 {
  if (P.window > 0u && pos >= P.window) { return pos - P.window + 1u; }
  return 0u;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wid.x % P.n_heads;
  let t = wid.x / P.n_heads;
  let pos = S.pos0 + t;
  let r = attend(t, h, first_seen(pos), pos, lid);
  for (var j = 0u; j < 4u; j++) {
    let d = lid + j * WG;
    if (d < P.head_dim) { O[t * P.q_stride + h * P.head_dim + d] = r.acc[j] / r.l; }
  }
}

// ---- one token (decode): the context split over workgroups, then a reduce pass ----
// split_attend: workgroup (h, c) takes positions first + SPLIT·c … of head h and writes its Partial to
// Part[(c · n_heads + h) · (head_dim + 2)]: the head_dim sums, then m and l; a workgroup
// per head (split_reduce) weighs each chunk's sums by exp(m_c − M) (M: the largest m) and divides by the weighed l.
// The host dispatches n_heads · ceil(positions seen / SPLIT) split workgroups (backend.mjs ATT_SPLIT).
const SPLIT: u32 = 256u;
@group(0) @binding(6) var<storage, read_write> Part: array<f32>;

@compute @workgroup_size(64)
fn split_attend(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wid.x % P.n_heads;
  let c = wid.x / P.n_heads;
  let pos = S.pos0;
  let lo = first_seen(pos) + c * SPLIT;
  let r = attend(0u, h, lo, min(pos, lo + SPLIT - 1u), lid);
  let base = (c * P.n_heads + h) * (P.head_dim + 2u);
  for (var j = 0u; j < 4u; j++) {
    let d = lid + j * WG;
    if (d < P.head_dim) { Part[base + d] = r.acc[j]; }
  }
  if (lid == 0u) {
    Part[base + P.head_dim] = r.m;
    Part[base + P.head_dim + 1u] = r.l;
  }
}

@compute @workgroup_size(64)
fn split_reduce(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wid.x;
  let pos = S.pos0;
  let chunks = (pos - first_seen(pos)) / SPLIT + 1u;
  let stride = P.n_heads * (P.head_dim + 2u);
  let b0 = h * (P.head_dim + 2u);
  var mx = -3.0e38;
  for (var c = 0u; c < chunks; c++) { mx = max(mx, Part[b0 + c * stride + P.head_dim]); }
  var l = 0.0;
  for (var c = 0u; c < chunks; c++) { l += Part[b0 + c * stride + P.head_dim + 1u] * exp(Part[b0 + c * stride + P.head_dim] - mx); }
  for (var d = lid; d < P.head_dim; d += WG) {
    var o = 0.0;
    for (var c = 0u; c < chunks; c++) { o += Part[b0 + c * stride + d] * exp(Part[b0 + c * stride + P.head_dim] - mx); }
    O[h * P.head_dim + d] = o / l;
  }
}
