// matmul.wgsl — Y[t][row] = Σ_k W[row][k] · X[t][k] for a tile of up to 8 tokens (t), with the
// weight rows kept in their GGUF block format and dequantized here, 32 elements at a time, by
// the type's unit function (dequant.wgsl; the glue names it in place of UNIT_FN). Each unit is
// dequantized once and used for every token of the tile, so decode (one token) reads every
// weight byte once. Two ways to share the work:
//   main_wg  one workgroup per output row: its 64 threads take the row's units in turn and add
//            their partial sums up across the workgroup (neighbouring threads read neighbouring
//            bytes: the way for a real GPU's memory);
//   main     one invocation per output row, no workgroup barrier: the way for a software
//            adapter (SwiftShader runs a barrier as a switch between all 64 invocations, which
//            made main_wg some 30 times slower there).
// What a GPU takes now (the load option gpuDecodeKernel 'rows' keeps main_wg): main_gemm for
// batches (a tile of 64 rows × 64 tokens per workgroup), main_mv / main_mv_sg for one token (4 rows
// per workgroup), main_mv_glu / main_mv_glu_sg for the gated FFN's one token and main_mv3 /
// main_mv3_sg for an attention layer's q, k and v of one token; below.

struct Params {
  rows: u32,        // rows of this weight chunk (a matrix larger than one buffer is split by rows)
  cols: u32,        // elements per row, a multiple of 32
  row_bytes: u32,   // bytes per row in W
  row0: u32,        // the chunk's first row in the whole matrix (where its outputs go)
  x_stride: u32,    // floats between tokens in X
  y_stride: u32,    // floats between tokens in Y
  flags: u32,       // 1: add B[row] (bias); 2: accumulate Y += scale·result; 4: the output head (n_out rows of X);
                    // 16, 32, 64, 128: the one-token kernels' (below)
  scale: f32,
  bias_off: u32,    // where the bias starts in B, in floats
  // the one-token kernels, flags 32: X is the residual stream and its RMS norm is folded in (the
  // weights B[norm_off …], the factor (mean(x²) + eps)^(-1/2) from the kernel's own loads of X)
  norm_off: u32,
  eps: f32,
  // main_mv3: rows, bytes per row and bias (flags 64, 128) of W2 and W3
  rows2: u32, rows3: u32,
  row_bytes2: u32, row_bytes3: u32,
  bias_off2: u32, bias_off3: u32,
  pad0: u32, pad1: u32, pad2: u32,
}

struct Step {
  n_tok: u32,       // tokens of this batch
  pos0: u32,        // position of its first token
  n_out: u32,       // rows of the output head (all tokens, or the last)
  first_out: u32,   // the first of them
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<uniform> S: Step;
@group(0) @binding(5) var<storage, read> B: array<f32>;

const WG: u32 = 64u;
const TILE: u32 = 8u;
// dispatches wider than this go on in the y dimension (WebGPU's default limit is 65535 per dimension)
const ROWS_PER_Y: u32 = 32768u;

var<private> wv: array<f32, 32>;
var<workgroup> partial: array<f32, 512>; // TILE * WG

//HELPERS_BEGIN//
// byte `off` of W, and the little-endian 16-bit values the block formats hold (2-byte aligned)
fn byte_at(off: u32) -> u32 { return (W[off >> 2u] >> ((off & 3u) * 8u)) & 0xffu; }
fn sbyte_at(off: u32) -> i32 { return (i32(byte_at(off)) << 24u) >> 24u; }
fn u16_at(off: u32) -> u32 { return (W[off >> 2u] >> ((off & 2u) * 8u)) & 0xffffu; }
// the four bytes from `off` (2-byte aligned, as every block field is), little-endian: one load
// where off is a multiple of 4, two where the blocks' 18-, 34- or 210-byte size left it at 2
fn bytes4_at(off: u32) -> u32 {
  let w = off >> 2u;
  if ((off & 2u) == 0u) { return W[w]; }
  return (W[w] >> 16u) | (W[w + 1u] << 16u);
}
// a half decoded by hand, exactly: block scales are often subnormal halves, which a GPU's
// unpack2x16float may flush to zero (their value is a normal f32)
fn f16_at(off: u32) -> f32 {
  let h = u16_at(off);
  let e = (h >> 10u) & 31u;
  let m = h & 1023u;
  var v = ldexp(f32(m), -24);
  if (e != 0u) { v = ldexp(f32(m | 1024u), i32(e) - 25); }
  return select(v, -v, (h & 0x8000u) != 0u);
}

//HELPERS_END//
//DEQUANT//

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let row = gid.x;
  let head = (P.flags & 4u) != 0u;
  let n = select(S.n_tok, S.n_out, head);
  let t0 = wid.z * TILE;
  if (row >= P.rows) { return; }
  let nt = min(TILE, n - t0);
  var acc: array<f32, 8>;
  for (var t = 0u; t < TILE; t++) { acc[t] = 0.0; }
  let base = row * P.row_bytes;
  let units = P.cols / 32u;
  for (var u = 0u; u < units; u++) {
    UNIT_FN(base, u);
    for (var t = 0u; t < nt; t++) {
      let xo = (t0 + t) * P.x_stride + u * 32u;
      var s = 0.0;
      for (var i = 0u; i < 32u; i++) { s += wv[i] * X[xo + i]; }
      acc[t] += s;
    }
  }
  for (var t = 0u; t < nt; t++) { store(t0 + t, row, acc[t]); }
}

// the result of one row for token t: bias, then written or added to the residual stream
fn store(t: u32, row: u32, sum: f32) {
  let r = P.row0 + row;
  var v = sum;
  if ((P.flags & 1u) != 0u) { v += B[P.bias_off + r]; }
  let yi = t * P.y_stride + r;
  if ((P.flags & 2u) != 0u) { Y[yi] = Y[yi] + P.scale * v; } else { Y[yi] = v; }
}

@compute @workgroup_size(64)
fn main_wg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * ROWS_PER_Y;
  let head = (P.flags & 4u) != 0u;
  let n = select(S.n_tok, S.n_out, head);
  let t0 = wid.z * TILE;
  var acc: array<f32, 8>;
  for (var t = 0u; t < TILE; t++) { acc[t] = 0.0; }
  if (row < P.rows) {
    let base = row * P.row_bytes;
    let units = P.cols / 32u;
    for (var u = lid; u < units; u += WG) {
      UNIT_FN(base, u);
      for (var t = 0u; t < TILE; t++) {
        if (t0 + t < n) {
          let xo = (t0 + t) * P.x_stride + u * 32u;
          var s = 0.0;
          for (var i = 0u; i < 32u; i++) { s += wv[i] * X[xo + i]; }
          acc[t] += s;
        }
      }
    }
  }
  for (var t = 0u; t < TILE; t++) { partial[t * WG + lid] = acc[t]; }
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      for (var t = 0u; t < TILE; t++) { partial[t * WG + lid] += partial[t * WG + lid + stride]; }
    }
    workgroupBarrier();
  }
  if (lid < TILE && row < P.rows && t0 + lid < n) { store(t0 + lid, row, partial[lid * WG]); }
}

// ---- decode: one token, MV_ROWS rows per workgroup of MV_WG threads ----
// Each thread takes 8-weight pieces of the rows in turn (neighbouring threads: neighbouring
// pieces, so neighbouring words of a block), loads the piece's 8 activations once as two vec4f
// and uses them for all MV_ROWS rows: a quarter of an f32 load per weight, where main_wg loads
// one. No 8-token partials: each thread holds MV_ROWS sums, added up across the workgroup in two
// barriers (main_mv) or by subgroupAdd where the device has the `subgroups` feature (main_mv_sg).
// With P.flags 32 the input is the residual stream x and the RMS norm before the product is folded
// in: each piece's activations are multiplied by the norm's weights as they are loaded, the
// thread also sums their squares (a fifth sum, added up with the others), and the row totals are
// multiplied by (Σx²/cols + eps)^(-1/2): no norm dispatch and no normed copy of x for one token.
// main_mv_glu (and _sg): the gated FFN's gate and up products of one token in one dispatch, the
// GLU in the epilogue: a workgroup takes gate rows 2g, 2g+1 from W and the same up rows from W2
// (both of the same type) and writes act(gate) · up (P.flags 16: GELU in its tanh form, else SiLU).
// main_mv3 (and _sg): three products of one input in one dispatch (an attention layer's q, k and v:
// W → Y, W2 → Y2, W3 → Y3, each matrix of its own type); the first ceil(rows / 4) workgroups take
// W's rows, the next W2's, the rest W3's.
const MV_WG: u32 = 256u;
const MV_ROWS: u32 = 4u;
const MV_SUMS: u32 = 5u;   // MV_ROWS row sums and Σx²
// row groups per y step of the dispatch (x at most 65535)
const MV_GROUPS_PER_Y: u32 = 8192u;

@group(0) @binding(1) var<storage, read> X4: array<vec4f>;
@group(0) @binding(6) var<storage, read> W2: array<u32>;
@group(0) @binding(7) var<storage, read> W3: array<u32>;
@group(0) @binding(8) var<storage, read_write> Y2: array<f32>;
@group(0) @binding(9) var<storage, read_write> Y3: array<f32>;
var<private> pw: array<f32, 8>;
// a piece's quants and scale for the int8 kernels (dequant.wgsl qpiece_T, below)
var<private> pq: vec2u;
var<private> ps: vec2f;
var<workgroup> mv_part: array<f32, 1280>;  // MV_SUMS * MV_WG
var<workgroup> mv_part2: array<f32, 80>;   // MV_SUMS * 16
var<workgroup> mv_tot: array<f32, 5>;      // MV_SUMS

fn norm_w(i: u32) -> vec4f {
  let o = P.norm_off + i;
  return vec4f(B[o], B[o + 1u], B[o + 2u], B[o + 3u]);
}
// the 8 activations of a piece of unit u at offsets xo (its type's piece_x function) of token 0 of X (the
// batch's one token, or the head's one row), times the norm's weights under flags 32, their
// squares added to *ss
fn mv_x(u: u32, xo: vec2u, ss: ptr<function, f32>) -> array<vec4f, 2> {
  let i0 = u * 32u + xo.x;
  let i1 = u * 32u + xo.y;
  let a = X4[i0 / 4u];
  let b = X4[i1 / 4u];
  if ((P.flags & 32u) == 0u) { return array<vec4f, 2>(a, b); }
  *ss += dot(a, a) + dot(b, b);
  return array<vec4f, 2>(a * norm_w(i0), b * norm_w(i1));
}
fn pw_dot(x: array<vec4f, 2>) -> f32 {
  return dot(vec4f(pw[0], pw[1], pw[2], pw[3]), x[0]) + dot(vec4f(pw[4], pw[5], pw[6], pw[7]), x[1]);
}
// the factor of the folded norm (1 without it, or where the int8 kernels normed the activations
// before quantizing them: prenormed), from the workgroup's Σx²
var<private> prenormed = false;
fn mv_norm() -> f32 {
  if ((P.flags & 32u) == 0u || prenormed) { return 1.0; }
  return inverseSqrt(mv_tot[MV_ROWS] / f32(P.cols) + P.eps);
}

// this thread's partial sums of the rows of group g of matrix m (0: W, 1: W2, 2: W3), and Σx²
fn mv_sums(m: u32, g: u32, lid: u32) -> array<f32, 5> {
  var acc = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
  var ss = 0.0;
  let r0 = g * MV_ROWS;
  let rows = select(select(P.rows3, P.rows2, m == 1u), P.rows, m == 0u);
  let rb = select(select(P.row_bytes3, P.row_bytes2, m == 1u), P.row_bytes, m == 0u);
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    var xo = PIECE_X_FN(k);
    if (m == 1u) { xo = PIECE_X_FN_W2(k); } else if (m == 2u) { xo = PIECE_X_FN_W3(k); }
    let x = mv_x(u, xo, &ss);
    for (var r = 0u; r < MV_ROWS; r++) {
      if (r0 + r < rows) {
        if (m == 0u) { PIECE_FN((r0 + r) * rb, u, k); } else if (m == 1u) { PIECE_FN_W2((r0 + r) * rb, u, k); } else { PIECE_FN_W3((r0 + r) * rb, u, k); }
        acc[r] += pw_dot(x);
      }
    }
  }
  acc[MV_ROWS] = ss;
  return acc;
}

// the workgroup's totals of the MV_SUMS sums into mv_tot (every invocation calls it)
fn mv_total(acc: array<f32, 5>, lid: u32) {
  for (var r = 0u; r < MV_SUMS; r++) { mv_part[r * MV_WG + lid] = acc[r]; }
  workgroupBarrier();
  if (lid < MV_SUMS * 16u) {
    let base = (lid / 16u) * MV_WG + (lid % 16u) * 16u;
    var s = 0.0;
    for (var i = 0u; i < 16u; i++) { s += mv_part[base + i]; }
    mv_part2[lid] = s;
  }
  workgroupBarrier();
  if (lid < MV_SUMS) {
    var s = 0.0;
    for (var i = 0u; i < 16u; i++) { s += mv_part2[lid * 16u + i]; }
    mv_tot[lid] = s;
  }
  workgroupBarrier();
}

fn mv_store(g: u32, lid: u32) {
  let row = g * MV_ROWS + lid;
  if (lid < MV_ROWS && row < P.rows) { store(0u, row, mv_tot[lid] * mv_norm()); }
}

@compute @workgroup_size(256)
fn main_mv(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total(mv_sums(0u, g, lid), lid);
  mv_store(g, lid);
}

// gate rows 2g, 2g+1 (W) into acc[0], acc[1]; the same up rows (W2) into acc[2], acc[3]; Σx²
fn glu_sums(g: u32, lid: u32) -> array<f32, 5> {
  var acc = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
  var ss = 0.0;
  let r0 = g * 2u;
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    let x = mv_x(u, PIECE_X_FN(k), &ss);
    for (var r = 0u; r < 2u; r++) {
      if (r0 + r < P.rows) {
        PIECE_FN((r0 + r) * P.row_bytes, u, k);
        acc[r] += pw_dot(x);
        PIECE_FN_W2((r0 + r) * P.row_bytes, u, k);
        acc[r + 2u] += pw_dot(x);
      }
    }
  }
  acc[MV_ROWS] = ss;
  return acc;
}

//ACT//
// act(gate) · up, with elementwise.wgsl's activation (glu_act, spliced in above by the glue)
fn glu_store(g: u32, lid: u32) {
  let row = g * 2u + lid;
  if (lid < 2u && row < P.rows) {
    let f = mv_norm();
    Y[P.row0 + row] = glu_act(mv_tot[lid] * f, (P.flags & 16u) != 0u) * (mv_tot[lid + 2u] * f);
  }
}

@compute @workgroup_size(256)
fn main_mv_glu(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total(glu_sums(g, lid), lid);
  glu_store(g, lid);
}

// main_mv3's workgroup g: (matrix, its row group)
fn mv3_group(g: u32) -> vec2u {
  let g1 = (P.rows + MV_ROWS - 1u) / MV_ROWS;
  let g2 = (P.rows2 + MV_ROWS - 1u) / MV_ROWS;
  if (g < g1) { return vec2u(0u, g); }
  if (g < g1 + g2) { return vec2u(1u, g - g1); }
  return vec2u(2u, g - g1 - g2);
}
// row lid of the group into its matrix's output, with its bias
fn mv3_store(mg: vec2u, lid: u32) {
  let row = mg.y * MV_ROWS + lid;
  if (lid >= MV_ROWS) { return; }
  let v = mv_tot[lid] * mv_norm();
  if (mg.x == 0u) {
    if (row < P.rows) { Y[row] = v + select(0.0, B[P.bias_off + row], (P.flags & 1u) != 0u); }
  } else if (mg.x == 1u) {
    if (row < P.rows2) { Y2[row] = v + select(0.0, B[P.bias_off2 + row], (P.flags & 64u) != 0u); }
  } else if (row < P.rows3) {
    Y3[row] = v + select(0.0, B[P.bias_off3 + row], (P.flags & 128u) != 0u);
  }
}

@compute @workgroup_size(256)
fn main_mv3(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let mg = mv3_group(wid.x + wid.y * MV_GROUPS_PER_Y);
  mv_total(mv_sums(mg.x, mg.y, lid), lid);
  mv3_store(mg, lid);
}

// ---- prefill: a tiled product, GEMM_ROWS rows × GEMM_TOKS tokens per workgroup of 256 threads ----
// Per 32-element unit, the workgroup dequantizes its 64 rows' pieces into workgroup memory once
// (each thread one 8-weight piece) and loads the 64 tokens' activations beside them; each thread
// then computes a 4 × 4 block of outputs from them. Each weight is read once per 64 tokens (main_wg:
// once per 8), each activation once per 64 rows.
const GEMM_ROWS: u32 = 64u;
const GEMM_TOKS: u32 = 64u;
var<workgroup> gw: array<f32, 2048>;   // [row][32]: the unit of each row of the tile
var<workgroup> gx: array<f32, 2048>;   // [token][32]: the unit's activations of each token

@compute @workgroup_size(256)
fn main_gemm(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n = select(S.n_tok, S.n_out, (P.flags & 4u) != 0u);
  let row0 = wid.x * GEMM_ROWS;
  let tok0 = wid.y * GEMM_TOKS;
  let ty = lid / 16u;      // rows row0 + 4·ty …
  let tx = lid % 16u;      // tokens tok0 + 4·tx …
  var acc: array<vec4f, 4>;
  for (var i = 0u; i < 4u; i++) { acc[i] = vec4f(0.0); }
  // the piece this thread dequantizes: row row0 + lid / 4, piece lid % 4; and its activations: token
  // tok0 + lid / 4, the 8 floats lid % 4 · 8 … of the unit
  let prow = row0 + lid / 4u;
  let k = lid % 4u;
  let xo = PIECE_X_FN(k);
  let xt = tok0 + lid / 4u;
  for (var u = 0u; u < P.cols / 32u; u++) {
    if (prow < P.rows) {
      PIECE_FN(prow * P.row_bytes, u, k);
    } else {
      for (var i = 0u; i < 8u; i++) { pw[i] = 0.0; }
    }
    let wb = (lid / 4u) * 32u;
    for (var i = 0u; i < 4u; i++) {
      gw[wb + xo.x + i] = pw[i];
      gw[wb + xo.y + i] = pw[4u + i];
    }
    let xb = (lid / 4u) * 32u + k * 8u;
    if (xt < n) {
      let xi = xt * P.x_stride + u * 32u + k * 8u;
      for (var i = 0u; i < 8u; i++) { gx[xb + i] = X[xi + i]; }
    } else {
      for (var i = 0u; i < 8u; i++) { gx[xb + i] = 0.0; }
    }
    workgroupBarrier();
    for (var e = 0u; e < 32u; e++) {
      let b = vec4f(gx[(4u * tx) * 32u + e], gx[(4u * tx + 1u) * 32u + e], gx[(4u * tx + 2u) * 32u + e], gx[(4u * tx + 3u) * 32u + e]);
      for (var i = 0u; i < 4u; i++) { acc[i] += gw[(4u * ty + i) * 32u + e] * b; }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + 4u * ty + i;
    for (var j = 0u; j < 4u; j++) {
      let t = tok0 + 4u * tx + j;
      if (row < P.rows && t < n) { store(t, row, acc[i][j]); }
    }
  }
}

//SUBGROUPS_BEGIN//
// the totals by subgroupAdd within each subgroup (its lanes are consecutive invocation indices,
// as Vulkan, Metal and D3D lay out a one-dimensional workgroup), then across the subgroups
fn mv_total_sg(acc: array<f32, 5>, lid: u32, lane: u32, sg_size: u32) {
  for (var r = 0u; r < MV_SUMS; r++) {
    let s = subgroupAdd(acc[r]);
    if (lane == 0u) { mv_part[r * MV_WG + lid / sg_size] = s; }
  }
  workgroupBarrier();
  if (lid < MV_SUMS) {
    var s = 0.0;
    for (var i = 0u; i < MV_WG / sg_size; i++) { s += mv_part[lid * MV_WG + i]; }
    mv_tot[lid] = s;
  }
  workgroupBarrier();
}

@compute @workgroup_size(256)
fn main_mv_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
              @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total_sg(mv_sums(0u, g, lid), lid, lane, sg_size);
  mv_store(g, lid);
}

@compute @workgroup_size(256)
fn main_mv_glu_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
                  @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total_sg(glu_sums(g, lid), lid, lane, sg_size);
  glu_store(g, lid);
}

@compute @workgroup_size(256)
fn main_mv3_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
               @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let mg = mv3_group(wid.x + wid.y * MV_GROUPS_PER_Y);
  mv_total_sg(mv_sums(mg.x, mg.y, lid), lid, lane, sg_size);
  mv3_store(mg, lid);
}
//SUBGROUPS_END//

//INT8_BEGIN//
// ---- decode with 8-bit activations: main_mv_q8, main_mv3_q8, main_mv_glu_q8 (and _sg) ----
// As main_mv, main_mv3 and main_mv_glu, but each workgroup first quantizes the token's activations
// (normed first under flags 32) into 8-bit blocks of 32 in workgroup memory, as the CPU path's
// kernels do (x = d · a, d = max|x| / 127), and the products take 4 bytes at a time with
// dot4I8Packed on the weights' quants (dequant.wgsl qpiece_T): Σ w·x = d · (s · Σ q·a + m · Σ a).
// The glue takes them where every matrix of the product is quantized, the row is at most
// MV_Q8_COLS long and the WGSL of the device has packed_4x8_integer_dot_product.
const MV_Q8_COLS: u32 = 8192u;
var<workgroup> xq: array<u32, 2048>;   // MV_Q8_COLS / 4: the activations, 4 signed bytes per word
var<workgroup> xs: array<f32, 256>;    // MV_Q8_COLS / 32: their blocks' scales

// the token's row of X into xq, xs (every invocation calls it); flags 32: normed first, its factor
// (mean(x²) + eps)^(-1/2) from a sum over the workgroup
fn mv_quantize(lid: u32) {
  let fold = (P.flags & 32u) != 0u;
  prenormed = true;
  var f = 1.0;
  if (fold) {
    var ss = 0.0;
    for (var i = lid; i < P.cols / 4u; i += MV_WG) { let v = X4[i]; ss += dot(v, v); }
    // the workgroup's total by the row sums' reduction (its first sum; the others 0)
    mv_total(array<f32, 5>(ss, 0.0, 0.0, 0.0, 0.0), lid);
    f = inverseSqrt(mv_tot[0] / f32(P.cols) + P.eps);
  }
  for (var b = lid; b < P.cols / 32u; b += MV_WG) {
    var v: array<vec4f, 8>;
    var amax = 0.0;
    for (var i = 0u; i < 8u; i++) {
      var a = X4[b * 8u + i];
      if (fold) { a = a * f * norm_w(b * 32u + 4u * i); }
      v[i] = a;
      let m = abs(a);
      amax = max(amax, max(max(m.x, m.y), max(m.z, m.w)));
    }
    let d = amax / 127.0;
    let id = select(0.0, 1.0 / d, d > 0.0);
    for (var i = 0u; i < 8u; i++) { xq[b * 8u + i] = pack4xI8(vec4i(round(v[i] * id))); }
    xs[b] = d;
  }
  workgroupBarrier();
}

// the piece in pq, ps (qpiece) against the activations of unit u at offsets xo
fn q8_dot(u: u32, xo: vec2u) -> f32 {
  let a = xq[(u * 32u + xo.x) / 4u];
  let b = xq[(u * 32u + xo.y) / 4u];
  let qa = dot4I8Packed(pq.x, a) + dot4I8Packed(pq.y, b);
  let sa = dot4I8Packed(0x01010101u, a) + dot4I8Packed(0x01010101u, b);
  return xs[u] * (ps.x * f32(qa) + ps.y * f32(sa));
}

// as mv_sums, over xq (no Σx²: the norm is in the quantized activations)
fn mv_sums_q8(m: u32, g: u32, lid: u32) -> array<f32, 5> {
  var acc = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
  let r0 = g * MV_ROWS;
  let rows = select(select(P.rows3, P.rows2, m == 1u), P.rows, m == 0u);
  let rb = select(select(P.row_bytes3, P.row_bytes2, m == 1u), P.row_bytes, m == 0u);
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    var xo = PIECE_X_FN(k);
    if (m == 1u) { xo = PIECE_X_FN_W2(k); } else if (m == 2u) { xo = PIECE_X_FN_W3(k); }
    for (var r = 0u; r < MV_ROWS; r++) {
      if (r0 + r < rows) {
        if (m == 0u) { QPIECE_FN((r0 + r) * rb, u, k); } else if (m == 1u) { QPIECE_FN_W2((r0 + r) * rb, u, k); } else { QPIECE_FN_W3((r0 + r) * rb, u, k); }
        acc[r] += q8_dot(u, xo);
      }
    }
  }
  return acc;
}

fn glu_sums_q8(g: u32, lid: u32) -> array<f32, 5> {
  var acc = array<f32, 5>(0.0, 0.0, 0.0, 0.0, 0.0);
  let r0 = g * 2u;
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    let xo = PIECE_X_FN(k);
    for (var r = 0u; r < 2u; r++) {
      if (r0 + r < P.rows) {
        QPIECE_FN((r0 + r) * P.row_bytes, u, k);
        acc[r] += q8_dot(u, xo);
        QPIECE_FN_W2((r0 + r) * P.row_bytes, u, k);
        acc[r + 2u] += q8_dot(u, xo);
      }
    }
  }
  return acc;
}

@compute @workgroup_size(256)
fn main_mv_q8(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_quantize(lid);
  mv_total(mv_sums_q8(0u, g, lid), lid);
  mv_store(g, lid);
}

@compute @workgroup_size(256)
fn main_mv3_q8(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let mg = mv3_group(wid.x + wid.y * MV_GROUPS_PER_Y);
  mv_quantize(lid);
  mv_total(mv_sums_q8(mg.x, mg.y, lid), lid);
  mv3_store(mg, lid);
}

@compute @workgroup_size(256)
fn main_mv_glu_q8(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_quantize(lid);
  mv_total(glu_sums_q8(g, lid), lid);
  glu_store(g, lid);
}

//SUBGROUPS_BEGIN//
@compute @workgroup_size(256)
fn main_mv_q8_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
                 @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_quantize(lid);
  mv_total_sg(mv_sums_q8(0u, g, lid), lid, lane, sg_size);
  mv_store(g, lid);
}

@compute @workgroup_size(256)
fn main_mv3_q8_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
                  @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let mg = mv3_group(wid.x + wid.y * MV_GROUPS_PER_Y);
  mv_quantize(lid);
  mv_total_sg(mv_sums_q8(mg.x, mg.y, lid), lid, lane, sg_size);
  mv3_store(mg, lid);
}

@compute @workgroup_size(256)
fn main_mv_glu_q8_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
                     @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_quantize(lid);
  mv_total_sg(glu_sums_q8(g, lid), lid, lane, sg_size);
  glu_store(g, lid);
}
//SUBGROUPS_END//
//INT8_END//
