#!/usr/bin/env node
// tools/kernel-insns.mjs — `npm run insns`: the matrix kernels' work per weight, counted in the
// compiled wasm rather than guessed (issue 33). It disassembles the plain-SIMD and the relaxed-SIMD
// kernel objects (build/wasm/obj/kernels_simd.o, build/wasm/obj-rx/kernels_simd.o) with
// llvm-objdump -d, finds each type's decode kernel (quant_gemv8_<type>: one token, eight rows) and
// prefill tile (quant_gemm_<type>: four rows × up to four tokens), takes the loop over the weight
// blocks (one block of 32, or one super-block of 256, per iteration: src/kernels_simd.c), counts its
// instructions by class and scales them to 256 weights of one output row; it prints a Markdown
// table with the format's floor beside each figure.
//
//   node tools/kernel-insns.mjs [--build build] [--objdump /usr/lib/llvm-19/bin/llvm-objdump] [--json]
//
// Which loop. llvm-objdump prints the structured control flow (block / loop / if … end), so the
// loops nest as a tree. A kernel's weight loop is its block loop: gemv8's outermost loop, and in a
// tile the loops directly inside GEMM_ENTRY's token-chunk loop, one per token count NT = 1..4 (the
// switch of GEMM_ENTRY), told apart by their dot-product count, which grows with NT. Most of them
// are innermost loops (everything inside unrolled); where LLVM kept a small loop inside (the
// K-quants' row loop `for (row < 4)` in k_block and q6r_parts / q4r_parts, the relaxed IQ4_NL
// unpack loop over eight rows, the plain Q5_0 / Q5_1 / IQ4_NL tile's unpack loop over four rows),
// that loop's body is counted as many times as it runs: its trip count is read from the wasm (a
// counter from 0, `i32.const 1 / i32.add / i32.const N / i32.ne|eq / br_if`) and the table says
// so; a kernel whose inner trip count cannot be read is reported as not measured rather than given
// a number. A call in the loop counts as one instruction and the table names it (the K-quant
// tiles call memset to clear their 256-byte part[4][4] per super-block: its body is not counted). Instructions outside the block loop (the setup, the
// final stores) are left out: they do not grow with the row length.
//
// Classes, by opcode (each disassembled line is one wasm instruction):
//   load    every *.load* (v128.load, the widening i16x8.load8x8_*, load*_splat, load*_lane,
//           i32.load16_u of the fp16 scales, f32.load of quant_f16_table)
//   unpack  bitwise and/or/xor/andnot/bitselect, integer vector shifts, i8x16.shuffle / swizzle,
//           extend / narrow, splat, replace_lane / extract_lane (the scale gathers' lane inserts
//           too), vector compares, i8x16.add / sub (offsets applied to bytes)
//   dot     i32x4.dot_i16x8_s, i16x8.relaxed_dot_i8x16_i7x16_s, i32x4.relaxed_dot_*_add_s,
//           extmul, and the integer vector adds that sum their products (i16x8 / i32x4 add, sub,
//           extadd_pairwise); for the float types also f32x4.mul / add / relaxed_madd
//   scale   f32x4.convert_i32x4_*, f32x4 / f32 mul, add, sub, madd on the block scales, and
//           i16x8.mul (the plain K-quants multiply the weights by their sub-block scale)
//   other   locals, constants (v128.const too), address arithmetic, control, stores (spills
//           of unpacked weights included)
// llvm-objdump 19 prints relaxed-SIMD instructions as <unknown>; their opcode (0xfd prefix and a
// LEB128 number) is decoded here.
//
// The minimum. For each type, the count of wasm SIMD instructions that no kernel for the format
// can avoid with 128-bit SIMD, per 256 weights of one row when the activation work (its loads,
// widening and block sums) is shared by many rows, as it is in decode. A floor, not an estimate:
// it leaves out the fp16 scale fetch and conversion, the lane shuffles that gather or reduce
// partial sums, the loop and the address arithmetic. Its terms:
//   loads    ⌈bytes of 256 weights / 16⌉: every byte of the format must be loaded, 16 at most per
//            instruction
//   unpack   one instruction per operand vector the dot product takes, for each step its bits
//            need: relaxed SIMD takes 16 weights as bytes (16 vectors per 256), plain SIMD as
//            int16 (32 vectors per 256, i32x4.dot_i16x8_s); a nibble needs one and / shift, a
//            value whose bits lie in two places (Q5, Q6_K, Q3_K) at least one more (the or), a
//            grid value (IQ4_NL) a swizzle and, for int16, an extend; bytes already int8 (Q8_0)
//            need none in relaxed SIMD but a widening load8x8 per vector in plain SIMD (counted
//            as its loads); the K-quants' packed scales at least 2
//   dot      relaxed: i32x4.relaxed_dot_i8x16_i7x16_add_s, 16 products and the accumulation in
//            one (16 per 256); plain: i32x4.dot_i16x8_s, 8 products (32 per 256), plus the i32x4.add
//            summing the four dot products of each 32 weights (3 per 32); a K-quant's integer
//            sub-block scales at least one multiply per 8 sub-blocks in relaxed SIMD (the i16 lanes
//            of Q4_K_R / Q6_K_R) and one i32x4.mul and one add per sub-block in plain SIMD, its
//            mins or offset (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) through the block sums one i32x4.dot per
//            8 coefficients
//   scale    per block scale: convert + relaxed_madd (2) or convert + mul + add (3), one more
//            multiply-add for a min (Q4_1, Q5_1; the K-quants' dmin term)
// Q8_0 and IQ4_NL take the plain minimum in both builds: their weights are signed, outside the
// relaxed dot's 0..127 operand (kernels_simd.c keeps them on i32x4.dot_i16x8_s). The relaxed
// build's Q4_K and Q6_K matrices are repacked as Q4_K_R / Q6_K_R (model_use_cpu_layout), so its
// Q4_K and Q6_K rows are those kernels; the scalar stand-ins each build compiles for the layout it
// never picks (kernels_simd.c, GEMV8_BY_DOT) are not listed.
//
// A hand count of one kernel, relaxed quant_gemv8_q4_0 (gemv8_b32 with B32_Q4_0): its loop runs
// once per block of 32 weights of eight rows, so its total is already per 256 weights of one row.
// From the C, per iteration: y0, y1 and the 8 rows' 16 nibble bytes are 10 v128.load; yo =
// b32_rdot(o, o, y0, y1) and the 8 rows' b32_rdot are 9 × (2 relaxed dots, i16x8.add,
// extadd_pairwise) = 18 + 9 + 9, then 8 i32x4.sub; the unpack is 8 × (v128.and, i8x16.shr_u);
// sum4_lanes twice is 2 × (6 shuffles + 3 i32x4.add); the two gather_half4 and the activation's
// scale are 9 i32.load16_u of fp16 scales and 9 table loads (LLVM makes 3 of them
// v128.load32_splat and the other 6 f32.load + f32x4.replace_lane); the float term is 2 ×
// (convert, 2 f32x4.mul, f32x4.add). The wasm holds exactly these: load 10 + 9 + 3 + 6 = 28,
// unpack 8 + 8 + 12 + 6 = 34, dot 18 + 9 + 9 + 8 + 6 = 50, scale 2 + 4 + 2 = 8, and 186 others
// (84 local.get, 37 local.tee, 29 i32.const, 2 v128.const rematerialized, the address arithmetic
// and the loop's test), 306 in all: the table's row.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULTS = { build: 'build', objdump: '/usr/lib/llvm-19/bin/llvm-objdump', json: false };

// the relaxed-SIMD opcodes (0xfd prefix) that llvm-objdump 19 prints as <unknown>
const RELAXED_OPS = {
  0x100: 'i8x16.relaxed_swizzle', 0x101: 'i32x4.relaxed_trunc_f32x4_s', 0x102: 'i32x4.relaxed_trunc_f32x4_u',
  0x103: 'i32x4.relaxed_trunc_f64x2_s_zero', 0x104: 'i32x4.relaxed_trunc_f64x2_u_zero', 0x105: 'f32x4.relaxed_madd',
  0x106: 'f32x4.relaxed_nmadd', 0x107: 'f64x2.relaxed_madd', 0x108: 'f64x2.relaxed_nmadd',
  0x109: 'i8x16.relaxed_laneselect', 0x10a: 'i16x8.relaxed_laneselect', 0x10b: 'i32x4.relaxed_laneselect',
  0x10c: 'i64x2.relaxed_laneselect', 0x10d: 'f32x4.relaxed_min', 0x10e: 'f32x4.relaxed_max',
  0x10f: 'f64x2.relaxed_min', 0x110: 'f64x2.relaxed_max', 0x111: 'i16x8.relaxed_q15mulr_s',
  0x112: 'i16x8.relaxed_dot_i8x16_i7x16_s', 0x113: 'i32x4.relaxed_dot_i8x16_i7x16_add_s',
};

export const CLASSES = ['load', 'unpack', 'dot', 'scale', 'other'];

/** The class of one instruction (see the head comment); float: the kernel multiplies floats. */
export function classify(op, float = false) {
  if (/\.load/.test(op)) return 'load';
  if (/^(local\.|global\.|i32\.const|i64\.const|f32\.const|v128\.const|block|loop|if|else|end|br|br_if|br_table|return|call|drop|select|unreachable|nop)/.test(op)) return 'other';
  if (/\.store/.test(op)) return 'other';
  if (/dot|extmul/.test(op)) return 'dot';
  if (/^(i16x8|i32x4)\.(add|sub)$|extadd_pairwise/.test(op)) return 'dot';
  if (/^f32x4\.(mul|add|sub|relaxed_madd|relaxed_nmadd)$/.test(op)) return float ? 'dot' : 'scale';
  if (/^(f32x4\.convert|f32\.(mul|add|sub|convert)|i16x8\.mul$|i32x4\.mul$)/.test(op)) return 'scale';
  if (/^v128\.(and|or|xor|andnot|not|bitselect)$|\.(shl|shr_s|shr_u)$|shuffle|swizzle|extend|narrow|splat|_lane|\.(eq|ne|lt_[su]|gt_[su]|le_[su]|ge_[su])$|^i8x16\.(add|sub)/.test(op)) {
    return op.startsWith('i32.') || op.startsWith('i64.') ? 'other' : 'unpack';
  }
  return 'other';
}

/** The functions of an llvm-objdump -d listing: name → [{ op, text }]. */
export function parseObjdump(text, relocs = new Map()) {
  const fns = new Map();
  let cur = null;
  for (const line of text.split('\n')) {
    let m = line.match(/^[0-9a-f]+ <(.+)>:$/);
    if (m) { cur = []; fns.set(m[1], cur); continue; }
    m = line.match(/^\s+([0-9a-f]+):\s+((?:[0-9a-f]{2} ?)+?)\s*\t(.*)$/);
    if (!m || !cur) continue;
    const addr = parseInt(m[1], 16);
    let t = m[3].replace(/#.*/, '').trim().replace(/\s+/g, ' ');
    let op = t.split(' ')[0];
    if (op === '<unknown>') {
      const b = m[2].trim().split(' ').map((x) => parseInt(x, 16));
      if (b[0] !== 0xfd) throw new Error(`undecoded instruction: ${line}`);
      let v = 0, shift = 0, i = 1;
      for (; i < b.length; i++) { v |= (b[i] & 0x7f) << shift; shift += 7; if (!(b[i] & 0x80)) break; }
      op = RELAXED_OPS[v];
      if (!op) throw new Error(`unknown SIMD opcode 0x${v.toString(16)}: ${line}`);
      t = op;
    }
    // a call's callee: the relocation one byte in (R_WASM_FUNCTION_INDEX_LEB)
    cur.push({ op, text: t, addr, callee: op === 'call' ? relocs.get(addr + 1) : undefined });
  }
  return fns;
}

/** The loops of a function as a tree: { start, end, children, direct: indices not in a child }. */
export function loopTree(ins) {
  const top = { start: -1, end: ins.length, children: [], parent: null };
  const stack = [];
  let loop = top;
  ins.forEach(({ op }, i) => {
    if (op === 'block' || op === 'if' || op === 'try') stack.push(null);
    else if (op === 'loop') {
      const node = { start: i, end: -1, children: [], parent: loop };
      loop.children.push(node);
      stack.push(node);
      loop = node;
    } else if (op === 'end') {
      const n = stack.pop();
      if (n) { n.end = i; loop = n.parent; }
    }
  });
  return top;
}

const inChildren = (node, i) => node.children.some((c) => i >= c.start && i <= c.end);

/** A loop's trip count where its counter runs from 0 by 1 to a constant, else null. */
export function tripCount(ins, node) {
  for (let i = node.start; i + 5 <= node.end; i++) {
    if (inChildren(node, i)) continue;
    const w = ins.slice(i, i + 7).map((x) => x.text);
    const m = w[0].match(/^local\.get (\d+)$/);
    if (!m || w[1] !== 'i32.const 1' || w[2] !== 'i32.add' || w[3] !== `local.tee ${m[1]}`) continue;
    const n = w[4].match(/^i32\.const (\d+)$/);
    if (!n || !((w[5] === 'i32.ne' && w[6] === 'br_if 0') || (w[5] === 'i32.eq' && /^br_if [1-9]/.test(w[6])))) continue;
    // the counter starts at 0 shortly before the loop (LLVM may put the accumulators' zeroing,
    // one local.get / local.set pair each, between the two)
    const before = ins.slice(Math.max(0, node.start - 48), node.start).map((x) => x.text);
    for (let k = 0; k + 1 < before.length; k++)
      if (before[k] === 'i32.const 0' && (before[k + 1] === `local.set ${m[1]}` || before[k + 1] === `local.tee ${m[1]}`)) return Number(n[1]);
  }
  return null;
}

/** Class counts of a loop, its inner loops counted trip-count times: { counts, inner, error }. */
export function loopCounts(ins, node, float = false) {
  const counts = Object.fromEntries(CLASSES.map((c) => [c, 0]));
  const inner = [], calls = [];
  for (let i = node.start + 1; i < node.end; i++) {
    if (inChildren(node, i)) continue;
    if (ins[i].op === 'call') calls.push(ins[i].callee ?? 'a function');
    counts[classify(ins[i].op, float)]++;
  }
  for (const c of node.children) {
    const trips = tripCount(ins, c);
    if (trips === null) return { error: 'an inner loop whose trip count the wasm does not show' };
    const sub = loopCounts(ins, c, float);
    if (sub.error) return sub;
    for (const k of CLASSES) counts[k] += trips * sub.counts[k];
    calls.push(...sub.calls);
    inner.push({ trips, size: c.end - c.start - 1, inner: sub.inner });
  }
  return { counts, inner, calls };
}

// ---- the kernels ----

// bytes per 256 weights, and the floors (head comment) per build: [simd128, relaxed]
// (relaxed Q4_K / Q6_K: the layouts Q4_K_R / Q6_K_R hold the same bytes)
export const FORMATS = {
  Q4_0: { block: 32, bytes: 144, min: [9 + 32 + 56 + 24, 9 + 16 + 16 + 16] },
  Q4_1: { block: 32, bytes: 160, min: [10 + 32 + 56 + 40, 10 + 16 + 16 + 24] },
  Q5_0: { block: 32, bytes: 176, min: [11 + 80 + 56 + 24, 11 + 48 + 16 + 16] },
  Q5_1: { block: 32, bytes: 192, min: [12 + 80 + 56 + 40, 12 + 48 + 16 + 24] },
  Q8_0: { block: 32, bytes: 272, min: [33 + 0 + 56 + 24, 33 + 0 + 56 + 24] },
  IQ4_NL: { block: 32, bytes: 144, min: [9 + 64 + 56 + 24, 9 + 64 + 56 + 24] },
  Q2_K: { block: 256, bytes: 84, min: [6 + 34 + 63 + 16 + 2 + 6, 6 + 18 + 16 + 2 + 2 + 4] },
  Q3_K: { block: 256, bytes: 110, min: [7 + 66 + 63 + 32 + 2 + 3, 7 + 34 + 16 + 2 + 2 + 2] },
  Q4_K: { block: 256, bytes: 144, min: [9 + 34 + 63 + 16 + 1 + 6, 9 + 18 + 16 + 1 + 1 + 4] },
  Q5_K: { block: 256, bytes: 176, min: [11 + 66 + 63 + 16 + 1 + 6, 11 + 34 + 16 + 1 + 1 + 4] },
  Q6_K: { block: 256, bytes: 210, min: [14 + 64 + 63 + 32 + 2 + 3, 14 + 16 + 16 + 2 + 2 + 2] },
};
// How the floors add up (loads + unpack + dot [+ sub-block scales + mins/offset] + scale), per 256:
//   Q4_0    plain  9 + 32 (and / shr per int16 vector) + 8 × (4 dot + 3 add) + 8 × 3
//           relaxed 9 + 16 (and / shr per byte vector) + 16 dot_add + 8 × 2
//   Q4_1    as Q4_0, the min term one more multiply-add per block (plain 8 × 5, relaxed 8 × 3)
//   Q5_0/1  as Q4_0/1 with the fifth bit: per block ≥ 2 to spread qh's 32 bits over bytes and one
//           or per operand vector (plain 8 × (4 + 4 + 2), relaxed 8 × (2 + 2 + 2))
//   Q8_0    32 widening load8x8 + the scales' 16 bytes (1), no unpack, 8 × 7 dot, 8 × 3 scale
//   IQ4_NL  9 loads; per block and, shr, 2 swizzles, 4 extends (8 × 8); 8 × 7 dot; 8 × 3
//   Q2_K    plain 6 + (32 + 2) + 63 (32 dot + 31 add) + 16 sub-block scales (mul + add) + 2 mins + 6
//           (convert, mul, add for d and dmin); relaxed 6 + (16 + 2) + 16 + 2 scales + 2 mins + 4
//   Q3_K    plain 7 + (64: extract + or of the hmask bit + 2) + 63 + 32 + 2 offset + 3;
//           relaxed 7 + (32 + 2) + 16 + 2 + 2 + 2
//   Q4_K    plain 9 + (32 + 2) + 63 + 16 (8 sub-blocks × mul + add) + 1 min dot + 6;
//           relaxed 9 + (16 + 2) + 16 + 1 + 1 + 4
//   Q5_K    as Q4_K with the fifth bit: plain unpack 64 + 2, relaxed 32 + 2
//   Q6_K    plain 14 + 64 (nibble + the two high bits or-ed in, per int16 vector) + 63 + 32
//           (16 sub-blocks) + 2 offset + 3; relaxed 14 + 16 + 16 + 2 + 2 + 2

// kernel names per type and build; null: the build has none of its own
const KERNELS = [
  ['Q4_0', 'q4_0', 'q4_0'], ['Q4_1', 'q4_1', 'q4_1'], ['Q5_0', 'q5_0', 'q5_0'], ['Q5_1', 'q5_1', 'q5_1'],
  ['Q8_0', 'q8_0', 'q8_0'], ['IQ4_NL', 'iq4_nl', 'iq4_nl'], ['Q2_K', 'q2_K', 'q2_K'], ['Q3_K', 'q3_K', 'q3_K'],
  ['Q4_K', 'q4_K', 'q4_K_r'], ['Q5_K', 'q5_K', 'q5_K'], ['Q6_K', 'q6_K', 'q6_K_r'],
];
export const REQUIRED_TYPES = ['Q4_0', 'Q8_0', 'Q4_K', 'Q6_K'];

const per256 = (counts, factor) => Object.fromEntries(CLASSES.map((c) => [c, counts[c] * factor]));
const total = (c) => CLASSES.reduce((s, k) => s + c[k], 0);

function describeLoop(block, res) {
  const calls = res.calls.length
    ? `; plus ${res.calls.length} call${res.calls.length > 1 ? 's' : ''} of ${[...new Set(res.calls)].join(', ')} per iteration, whose bodies are not counted`
    : '';
  if (!res.inner.length) return `${block}-weight block loop, innermost${calls}`;
  const inner = res.inner.map((x) => `${x.size}-insn loop ×${x.trips}${x.inner.length ? ' (with inner loops)' : ''}`);
  return `${block}-weight block loop holding ${inner.join(', ')}${calls}`;
}

/** The rows of one build's object: decode (gemv8) and prefill tile (gemm, NT = 4) per type. */
export function analyze(fns, build) {
  const rows = [];
  const relaxed = build === 'relaxed';
  for (const [type, plainName, rxName] of KERNELS) {
    const name = relaxed ? rxName : plainName;
    const fmt = FORMATS[type];
    const min = fmt.min[relaxed ? 1 : 0];
    const base = { type, build, min };
    // decode: gemv8, 8 rows per call, one block of each per iteration of its outermost loop
    const gv = fns.get(`quant_gemv8_${name}`);
    const dec = { ...base, kernel: `quant_gemv8_${name}`, role: 'decode', shape: '8 rows × 1 token' };
    if (!gv) rows.push({ ...dec, error: 'not in the object' });
    else {
      const tree = loopTree(gv);
      if (tree.children.length !== 1) rows.push({ ...dec, error: `${tree.children.length} outermost loops, expected 1` });
      else {
        const res = loopCounts(gv, tree.children[0]);
        if (res.error) rows.push({ ...dec, error: res.error });
        else {
          const weights = fmt.block * 8; // weight-row elements per iteration
          rows.push({ ...dec, loop: describeLoop(fmt.block, res), weightsPerIter: weights, perIter: res.counts,
                      per256: per256(res.counts, 256 / weights) });
        }
      }
    }
    // prefill: gemm's block loops, one per token count, inside GEMM_ENTRY's loop
    const gm = fns.get(`quant_gemm_${name}`);
    const pre = { ...base, kernel: `quant_gemm_${name}`, role: 'prefill tile', shape: '4 rows × 4 tokens' };
    if (!gm) { rows.push({ ...pre, error: 'not in the object' }); continue; }
    const tree = loopTree(gm);
    const outer = tree.children.length === 1 ? tree.children[0] : null;
    if (!outer || outer.children.length !== 4) {
      rows.push({ ...pre, error: 'not one token-chunk loop holding four block loops' });
      continue;
    }
    const res = outer.children.map((c) => loopCounts(gm, c));
    const bad = res.find((r) => r.error);
    if (bad) { rows.push({ ...pre, error: bad.error }); continue; }
    const order = res.map((r, i) => [r.counts.dot, i]).sort((a, b) => a[0] - b[0]);
    if (order.some((x, i) => i > 0 && x[0] <= order[i - 1][0])) {
      rows.push({ ...pre, error: 'the four block loops do not differ in dot products: NT not told apart' });
      continue;
    }
    const r4 = res[order[3][1]];
    const weights = fmt.block * 4 * 4; // weight-row elements × tokens per iteration
    rows.push({ ...pre, loop: describeLoop(fmt.block, r4), weightsPerIter: weights, perIter: r4.counts,
                per256: per256(r4.counts, 256 / weights), perTile256: per256(r4.counts, 256 / fmt.block) });
  }
  return rows;
}

/** Disassembles one object: its functions. */
export function disassemble(objdump, obj) {
  if (!fs.existsSync(obj)) throw new Error(`${obj} is missing: make builds it`);
  if (!fs.existsSync(objdump)) throw new Error(`${objdump} is missing: tools/setup.sh installs llvm-19`);
  const r = spawnSync(objdump, ['-d', obj], { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`${objdump} -d ${obj}: ${r.stderr}`);
  const rel = spawnSync(objdump, ['-r', obj], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const relocs = new Map();
  for (const m of (rel.stdout || '').matchAll(/^([0-9a-f]+) R_WASM_FUNCTION_INDEX_LEB (\S+?)(?:\+0)?$/gm)) relocs.set(parseInt(m[1], 16), m[2]);
  return parseObjdump(r.stdout, relocs);
}

export function measure(buildDir, objdump = DEFAULTS.objdump) {
  const dir = path.resolve(ROOT, buildDir);
  return [
    ...analyze(disassemble(objdump, path.join(dir, 'wasm', 'obj', 'kernels_simd.o')), 'simd128'),
    ...analyze(disassemble(objdump, path.join(dir, 'wasm', 'obj-rx', 'kernels_simd.o')), 'relaxed'),
  ];
}

const fmtN = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1));

export function table(rows) {
  const head = ['type', 'kernel', 'build', 'role', 'weights / iteration', 'total / 256', 'load', 'unpack', 'dot', 'scale', 'other', 'minimum', 'loop'];
  const out = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of rows) {
    if (r.error) {
      out.push(`| ${r.type} | ${r.kernel} | ${r.build} | ${r.role} | not measured: ${r.error} | | | | | | | ${r.min} | |`);
      continue;
    }
    const p = r.per256;
    const iter = r.role === 'decode' ? `${r.weightsPerIter / 8} × 8 rows` : `${r.weightsPerIter / 16} × 4 rows × 4 tokens`;
    const tot = r.role === 'decode' ? fmtN(total(p)) : `${fmtN(total(p))} (tile: ${fmtN(total(r.perTile256))})`;
    out.push(`| ${r.type} | ${r.kernel} | ${r.build} | ${r.role} | ${iter} | ${tot} | ${CLASSES.map((c) => fmtN(p[c])).join(' | ')} | ${r.min} | ${r.loop} |`);
  }
  return out.join('\n');
}

export { total };

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2), opts = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in DEFAULTS) || !argv[i].startsWith('--')) { console.error(`kernel-insns: unknown argument ${argv[i]}`); process.exit(2); }
    if (typeof DEFAULTS[key] === 'boolean') opts[key] = true;
    else if (argv[i + 1] === undefined) { console.error(`kernel-insns: ${argv[i]} needs a value`); process.exit(2); }
    else opts[key] = argv[++i];
  }
  try {
    const rows = measure(opts.build, opts.objdump);
    if (opts.json) console.log(JSON.stringify(rows, null, 2));
    else {
      console.log('Wasm instructions per 256 weights of one output row (decode), or per 256 weights of one row for one token (prefill tile; in brackets the 4-row × 4-token tile per 256 columns), counted in the block loop of build/wasm/obj{,-rx}/kernels_simd.o; minimum: the format\'s floor (tools/kernel-insns.mjs).\n');
      console.log(table(rows));
    }
  } catch (e) {
    console.error(`kernel-insns: ${e.message}`);
    process.exit(1);
  }
}
