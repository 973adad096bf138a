// dequant.wgsl — one 32-element unit of a weight row into wv[0..32), per GGUF block format.
// The layouts are ggml's (ggml/src/ggml-common.h: block_q4_0, block_q8_0, block_q4_K,
// block_q5_K, block_q6_K), as wick's CPU code reads them (src/quant.h, src/quant.c: the
// *_to_float functions these mirror). `base` is the row's first byte, u the unit index in the row.

fn unit_f32(base: u32, u: u32) {
  let w0 = (base >> 2u) + u * 32u;
  for (var i = 0u; i < 32u; i++) { wv[i] = bitcast<f32>(W[w0 + i]); }
}

fn unit_f16(base: u32, u: u32) {
  let w0 = (base >> 2u) + u * 16u;
  for (var i = 0u; i < 16u; i++) {
    let h = unpack2x16float(W[w0 + i]);
    wv[2u * i] = h.x;
    wv[2u * i + 1u] = h.y;
  }
}

// Q4_0, 18 bytes per 32: d (f16), 16 bytes of nibbles; element j in the low nibble of qs[j],
// element j + 16 in the high one; x = d · (q − 8)
fn unit_q4_0(base: u32, u: u32) {
  let off = base + u * 18u;
  let d = f16_at(off);
  for (var k = 0u; k < 4u; k++) {
    let w = bytes4_at(off + 2u + 4u * k);
    for (var b = 0u; b < 4u; b++) {
      let q = (w >> (8u * b)) & 0xffu;
      wv[4u * k + b] = d * (f32(q & 15u) - 8.0);
      wv[4u * k + b + 16u] = d * (f32(q >> 4u) - 8.0);
    }
  }
}

// Q8_0, 34 bytes per 32: d (f16), 32 signed bytes; x = d · q
fn unit_q8_0(base: u32, u: u32) {
  let off = base + u * 34u;
  let d = f16_at(off);
  for (var k = 0u; k < 8u; k++) {
    let w = bytes4_at(off + 2u + 4u * k);
    for (var b = 0u; b < 4u; b++) { wv[4u * k + b] = d * f32((i32(w << (24u - 8u * b))) >> 24u); }
  }
}

// the 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block whose 12 packed bytes
// start at `sc` (ggml's get_scale_min_k4; wick's quant_unpack_q4_K_scales)
fn scale_min_k4(sc: u32, j: u32) -> vec2f {
  if (j < 4u) {
    return vec2f(f32(byte_at(sc + j) & 63u), f32(byte_at(sc + j + 4u) & 63u));
  }
  let s = (byte_at(sc + j + 4u) & 15u) | ((byte_at(sc + j - 4u) >> 6u) << 4u);
  let m = (byte_at(sc + j + 4u) >> 4u) | ((byte_at(sc + j) >> 6u) << 4u);
  return vec2f(f32(s), f32(m));
}

// the scale d · sc_j and the min dmin · m_j of sub-block j of the Q4_K / Q5_K super-block at `off`
fn k_scale_min(off: u32, j: u32) -> vec2f {
  let sm = scale_min_k4(off + 4u, j);
  return vec2f(f16_at(off) * sm.x, f16_at(off + 2u) * sm.y);
}

// Q4_K, 144 bytes per 256: d, dmin (f16), 12 bytes of scales/mins, 128 bytes of nibbles. Unit j
// of 8 is sub-block j: its element l is the low (j even) or high (j odd) nibble of
// qs[32·(j/2) + l]; x = d · sc_j · q − dmin · m_j
fn unit_q4_K(base: u32, u: u32) {
  let off = base + (u / 8u) * 144u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 16u + 32u * (j / 2u);
  let shift = (j & 1u) * 4u;
  for (var k = 0u; k < 8u; k++) {
    let w = bytes4_at(qs + 4u * k);
    for (var b = 0u; b < 4u; b++) { wv[4u * k + b] = dm.x * f32((w >> (8u * b + shift)) & 15u) - dm.y; }
  }
}

// Q5_K, 176 bytes per 256: d, dmin, 12 bytes of scales/mins, qh[32], qs[128]. As Q4_K with a
// fifth bit: bit j of qh[l] for element l of sub-block j
fn unit_q5_K(base: u32, u: u32) {
  let off = base + (u / 8u) * 176u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 48u + 32u * (j / 2u);
  let shift = (j & 1u) * 4u;
  for (var k = 0u; k < 8u; k++) {
    let w = bytes4_at(qs + 4u * k);
    let h = bytes4_at(off + 16u + 4u * k);
    for (var b = 0u; b < 4u; b++) {
      let q = ((w >> (8u * b + shift)) & 15u) | (((h >> (8u * b + j)) & 1u) << 4u);
      wv[4u * k + b] = dm.x * f32(q) - dm.y;
    }
  }
}

// Q6_K, 210 bytes per 256: ql[128], qh[64], 16 signed scales, d (f16 at 208). Element e:
// h = e/128, k = (e%128)/32, l = e%32; low 4 bits from ql[64h + 32(k&1) + l] (low nibble for
// k < 2), high 2 bits from qh[32h + l] >> 2k; x = d · scales[e/16] · (q − 32)
fn unit_q6_K(base: u32, u: u32) {
  let off = base + (u / 8u) * 210u;
  let e0 = (u % 8u) * 32u;
  let h = e0 / 128u;
  let k = (e0 % 128u) / 32u;
  let d = f16_at(off + 208u);
  let ql = off + 64u * h + 32u * (k & 1u);
  let qh = off + 128u + 32u * h;
  let lshift = select(4u, 0u, k < 2u);
  let d0 = d * f32(sbyte_at(off + 192u + e0 / 16u));
  let d1 = d * f32(sbyte_at(off + 192u + e0 / 16u + 1u));
  for (var g = 0u; g < 8u; g++) {
    let lo = bytes4_at(ql + 4u * g);
    let hi = bytes4_at(qh + 4u * g);
    let dg = select(d1, d0, g < 4u);
    for (var b = 0u; b < 4u; b++) {
      let q = ((lo >> (8u * b + lshift)) & 15u) | (((hi >> (8u * b + 2u * k)) & 3u) << 4u);
      wv[4u * g + b] = dg * (f32(q) - 32.0);
    }
  }
}

// ---- pieces: 8 weights of a unit for the decode kernel (matmul.wgsl main_mv) ----
// piece k (0..3) of unit u into pw[0..8); piece_x_T(k) says where its weights' activations lie in
// the unit: pw[0..4) pair with the 4 floats from .x, pw[4..8) with the 4 from .y. Same layouts as
// the unit functions above; each piece reads two of its block's words of quants.

fn piece_x_f32(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_f32(base: u32, u: u32, k: u32) {
  let w0 = (base >> 2u) + u * 32u + 8u * k;
  for (var i = 0u; i < 8u; i++) { pw[i] = bitcast<f32>(W[w0 + i]); }
}

fn piece_x_f16(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_f16(base: u32, u: u32, k: u32) {
  let w0 = (base >> 2u) + u * 16u + 4u * k;
  for (var i = 0u; i < 4u; i++) {
    let h = unpack2x16float(W[w0 + i]);
    pw[2u * i] = h.x;
    pw[2u * i + 1u] = h.y;
  }
}

// Q4_0: the 4 bytes qs[4k..4k+4) hold elements 4k..4k+4 (low nibbles) and 16+4k.. (high)
fn piece_x_q4_0(k: u32) -> vec2u { return vec2u(4u * k, 16u + 4u * k); }
fn piece_q4_0(base: u32, u: u32, k: u32) {
  let off = base + u * 18u;
  let d = f16_at(off);
  let w = bytes4_at(off + 2u + 4u * k);
  for (var b = 0u; b < 4u; b++) {
    let q = (w >> (8u * b)) & 0xffu;
    pw[b] = d * (f32(q & 15u) - 8.0);
    pw[b + 4u] = d * (f32(q >> 4u) - 8.0);
  }
}

fn piece_x_q8_0(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_q8_0(base: u32, u: u32, k: u32) {
  let off = base + u * 34u;
  let d = f16_at(off);
  for (var h = 0u; h < 2u; h++) {
    let w = bytes4_at(off + 2u + 8u * k + 4u * h);
    for (var b = 0u; b < 4u; b++) { pw[4u * h + b] = d * f32((i32(w << (24u - 8u * b))) >> 24u); }
  }
}

fn piece_x_q4_K(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_q4_K(base: u32, u: u32, k: u32) {
  let off = base + (u / 8u) * 144u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 16u + 32u * (j / 2u) + 8u * k;
  let shift = (j & 1u) * 4u;
  for (var h = 0u; h < 2u; h++) {
    let w = bytes4_at(qs + 4u * h);
    for (var b = 0u; b < 4u; b++) { pw[4u * h + b] = dm.x * f32((w >> (8u * b + shift)) & 15u) - dm.y; }
  }
}

fn piece_x_q5_K(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_q5_K(base: u32, u: u32, k: u32) {
  let off = base + (u / 8u) * 176u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 48u + 32u * (j / 2u) + 8u * k;
  let shift = (j & 1u) * 4u;
  for (var h = 0u; h < 2u; h++) {
    let w = bytes4_at(qs + 4u * h);
    let hb = bytes4_at(off + 16u + 8u * k + 4u * h);
    for (var b = 0u; b < 4u; b++) {
      let q = ((w >> (8u * b + shift)) & 15u) | (((hb >> (8u * b + j)) & 1u) << 4u);
      pw[4u * h + b] = dm.x * f32(q) - dm.y;
    }
  }
}

// where piece k of unit u of a Q6_K row lies: its ql and qh bytes, the shifts of its low 4 and
// high 2 bits there, and its scale d · scales[e/16] (elements 8k..8k+8 of the unit share one of its
// two 16-element scales)
struct Q6Piece { ql: u32, qh: u32, lshift: u32, hshift: u32, d: f32 }
fn q6_piece(base: u32, u: u32, k: u32) -> Q6Piece {
  let off = base + (u / 8u) * 210u;
  let e0 = (u % 8u) * 32u;
  let h = e0 / 128u;
  let kk = (e0 % 128u) / 32u;
  return Q6Piece(off + 64u * h + 32u * (kk & 1u) + 8u * k, off + 128u + 32u * h + 8u * k, select(4u, 0u, kk < 2u), 2u * kk,
                 f16_at(off + 208u) * f32(sbyte_at(off + 192u + e0 / 16u + k / 2u)));
}

fn piece_x_q6_K(k: u32) -> vec2u { return vec2u(8u * k, 8u * k + 4u); }
fn piece_q6_K(base: u32, u: u32, k: u32) {
  let p = q6_piece(base, u, k);
  for (var g = 0u; g < 2u; g++) {
    let lo = bytes4_at(p.ql + 4u * g);
    let hi = bytes4_at(p.qh + 4u * g);
    for (var b = 0u; b < 4u; b++) {
      let q = ((lo >> (8u * b + p.lshift)) & 15u) | (((hi >> (8u * b + p.hshift)) & 3u) << 4u);
      pw[4u * g + b] = p.d * (f32(q) - 32.0);
    }
  }
}

// ---- 8-bit pieces: the same 8 weights as piece_T(base, u, k), for the int8 decode kernels
// (matmul.wgsl main_mv_q8 …): their quants as unsigned bytes, four per word (the order of piece_x_T:
// pq.x with the 4 activations from .x, pq.y with those from .y; each at most 63, so also a valid
// signed byte for dot4I8Packed), and the piece's scale and offset in ps: w = ps.x · q + ps.y.
// With activations in 8-bit blocks (x = d · a): Σ w·x = d · (ps.x · Σ q·a + ps.y · Σ a).

fn qpiece_q4_0(base: u32, u: u32, k: u32) {
  let off = base + u * 18u;
  let d = f16_at(off);
  let w = bytes4_at(off + 2u + 4u * k);
  pq = vec2u(w & 0x0f0f0f0fu, (w >> 4u) & 0x0f0f0f0fu);
  ps = vec2f(d, -8.0 * d);
}

// (Q8_0's quants are signed: the one type whose bytes go to dot4I8Packed as they are)
fn qpiece_q8_0(base: u32, u: u32, k: u32) {
  let off = base + u * 34u;
  pq = vec2u(bytes4_at(off + 2u + 8u * k), bytes4_at(off + 6u + 8u * k));
  ps = vec2f(f16_at(off), 0.0);
}

fn qpiece_q4_K(base: u32, u: u32, k: u32) {
  let off = base + (u / 8u) * 144u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 16u + 32u * (j / 2u) + 8u * k;
  let shift = (j & 1u) * 4u;
  pq = vec2u((bytes4_at(qs) >> shift) & 0x0f0f0f0fu, (bytes4_at(qs + 4u) >> shift) & 0x0f0f0f0fu);
  ps = vec2f(dm.x, -dm.y);
}

fn qpiece_q5_K(base: u32, u: u32, k: u32) {
  let off = base + (u / 8u) * 176u;
  let j = u % 8u;
  let dm = k_scale_min(off, j);
  let qs = off + 48u + 32u * (j / 2u) + 8u * k;
  let qh = off + 16u + 8u * k;
  let shift = (j & 1u) * 4u;
  pq = vec2u(((bytes4_at(qs) >> shift) & 0x0f0f0f0fu) | (((bytes4_at(qh) >> j) & 0x01010101u) << 4u),
             ((bytes4_at(qs + 4u) >> shift) & 0x0f0f0f0fu) | (((bytes4_at(qh + 4u) >> j) & 0x01010101u) << 4u));
  ps = vec2f(dm.x, -dm.y);
}

fn qpiece_q6_K(base: u32, u: u32, k: u32) {
  let p = q6_piece(base, u, k);
  pq = vec2u(((bytes4_at(p.ql) >> p.lshift) & 0x0f0f0f0fu) | (((bytes4_at(p.qh) >> p.hshift) & 0x03030303u) << 4u),
             ((bytes4_at(p.ql + 4u) >> p.lshift) & 0x0f0f0f0fu) | (((bytes4_at(p.qh + 4u) >> p.hshift) & 0x03030303u) << 4u));
  ps = vec2f(p.d, -32.0 * p.d);
}
