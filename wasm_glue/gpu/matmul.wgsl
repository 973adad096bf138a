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
// per workgroup) and main_mv_glu / main_mv_glu_sg for the gated FFN's one token; below.

struct Params {
  rows: u32,        // rows of this weight chunk (a matrix larger than one buffer is split by rows)
  cols: u32,        // elements per row, a multiple of 32
  row_bytes: u32,   // bytes per row in W
  row0: u32,        // the chunk's first row in the whole matrix (where its outputs go)
  x_stride: u32,    // floats between tokens in X
  y_stride: u32,    // floats between tokens in Y
  flags: u32,       // 1: add B[row] (bias); 2: accumulate Y += scale·result; 4: the output head (n_out rows of X);
                    // 8: token t's row of Y is row pos0 + t (K and V straight into the layer's cache)
  scale: f32,
  bias_off: u32,    // where the bias starts in B, in floats
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
  let yi = (t + select(0u, S.pos0, (P.flags & 8u) != 0u)) * P.y_stride + r;
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
// main_mv_glu (and _sg): the gated FFN's gate and up products of one token in one dispatch, the
// GLU in the epilogue: a workgroup takes gate rows 2g, 2g+1 from W and the same up rows from W2
// (both of the same type) and writes act(gate) · up (P.flags 16: GELU in its tanh form, else SiLU).
const MV_WG: u32 = 256u;
const MV_ROWS: u32 = 4u;
// row groups per y step of the dispatch (x at most 65535)
const MV_GROUPS_PER_Y: u32 = 8192u;

@group(0) @binding(1) var<storage, read> X4: array<vec4f>;
var<private> pw: array<f32, 8>;
var<workgroup> mv_part: array<f32, 1024>;  // MV_ROWS * MV_WG
var<workgroup> mv_part2: array<f32, 64>;   // MV_ROWS * 16
var<workgroup> mv_tot: array<f32, 4>;      // MV_ROWS

// the 8 activations of piece k of unit u (token 0 of X: the batch's one token, or the head's one row)
fn mv_x(u: u32, k: u32) -> array<vec4f, 2> {
  let xo = PIECE_X_FN(k);
  return array<vec4f, 2>(X4[(u * 32u + xo.x) / 4u], X4[(u * 32u + xo.y) / 4u]);
}
fn pw_dot(x: array<vec4f, 2>) -> f32 {
  return dot(vec4f(pw[0], pw[1], pw[2], pw[3]), x[0]) + dot(vec4f(pw[4], pw[5], pw[6], pw[7]), x[1]);
}

// this thread's partial sums of the rows of group g
fn mv_sums(g: u32, lid: u32) -> array<f32, 4> {
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  let r0 = g * MV_ROWS;
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    let x = mv_x(u, k);
    for (var r = 0u; r < MV_ROWS; r++) {
      if (r0 + r < P.rows) {
        PIECE_FN((r0 + r) * P.row_bytes, u, k);
        acc[r] += pw_dot(x);
      }
    }
  }
  return acc;
}

// the workgroup's totals of the MV_ROWS sums into mv_tot (every invocation calls it)
fn mv_total(acc: array<f32, 4>, lid: u32) {
  for (var r = 0u; r < MV_ROWS; r++) { mv_part[r * MV_WG + lid] = acc[r]; }
  workgroupBarrier();
  if (lid < MV_ROWS * 16u) {
    let base = (lid / 16u) * MV_WG + (lid % 16u) * 16u;
    var s = 0.0;
    for (var i = 0u; i < 16u; i++) { s += mv_part[base + i]; }
    mv_part2[lid] = s;
  }
  workgroupBarrier();
  if (lid < MV_ROWS) {
    var s = 0.0;
    for (var i = 0u; i < 16u; i++) { s += mv_part2[lid * 16u + i]; }
    mv_tot[lid] = s;
  }
  workgroupBarrier();
}

@compute @workgroup_size(256)
fn main_mv(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total(mv_sums(g, lid), lid);
  let row = g * MV_ROWS + lid;
  if (lid < MV_ROWS && row < P.rows) { store(0u, row, mv_tot[lid]); }
}

@group(0) @binding(6) var<storage, read> W2: array<u32>;

// gate rows 2g, 2g+1 (W) into acc[0], acc[1]; the same up rows (W2) into acc[2], acc[3]
fn glu_sums(g: u32, lid: u32) -> array<f32, 4> {
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  let r0 = g * 2u;
  for (var p = lid; p < P.cols / 8u; p += MV_WG) {
    let u = p / 4u;
    let k = p % 4u;
    let x = mv_x(u, k);
    for (var r = 0u; r < 2u; r++) {
      if (r0 + r < P.rows) {
        PIECE_FN((r0 + r) * P.row_bytes, u, k);
        acc[r] += pw_dot(x);
        PIECE_FN_W2((r0 + r) * P.row_bytes, u, k);
        acc[r + 2u] += pw_dot(x);
      }
    }
  }
  return acc;
}

fn tanh_exp(x: f32) -> f32 { return 1.0 - 2.0 / (exp(2.0 * x) + 1.0); }
// act(gate) · up, as elementwise.wgsl glu computes it
fn glu_store(g: u32, lid: u32) {
  let row = g * 2u + lid;
  if (lid < 2u && row < P.rows) {
    let x = mv_tot[lid];
    var a: f32;
    if ((P.flags & 16u) != 0u) {
      a = 0.5 * x * (1.0 + tanh_exp(0.79788456080286535588 * x * (1.0 + 0.044715 * x * x)));
    } else {
      a = x / (1.0 + exp(-x));
    }
    Y[P.row0 + row] = a * mv_tot[lid + 2u];
  }
}

@compute @workgroup_size(256)
fn main_mv_glu(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total(glu_sums(g, lid), lid);
  glu_store(g, lid);
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
fn mv_total_sg(acc: array<f32, 4>, lid: u32, lane: u32, sg_size: u32) {
  for (var r = 0u; r < MV_ROWS; r++) {
    let s = subgroupAdd(acc[r]);
    if (lane == 0u) { mv_part[r * MV_WG + lid / sg_size] = s; }
  }
  workgroupBarrier();
  if (lid < MV_ROWS) {
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
  mv_total_sg(mv_sums(g, lid), lid, lane, sg_size);
  let row = g * MV_ROWS + lid;
  if (lid < MV_ROWS && row < P.rows) { store(0u, row, mv_tot[lid]); }
}

@compute @workgroup_size(256)
fn main_mv_glu_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32,
                  @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let g = wid.x + wid.y * MV_GROUPS_PER_Y;
  mv_total_sg(glu_sums(g, lid), lid, lane, sg_size);
  glu_store(g, lid);
}
//SUBGROUPS_END//
