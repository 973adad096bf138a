// tests/gpu-kernels.test.mjs — each matrix-product shader of the WebGPU backend (matmul.wgsl with
// dequant.wgsl's unit of each GGUF type) against the engine's CPU code on random blocks, the way
// test_kernels.c checks the SIMD kernels: against the exact product of the engine's own
// dequantization (wick_dequantize, summed in float64) within float rounding, and against the
// engine's kernel (wick_row_dot: the activation row quantized to 8-bit blocks first, as the CPU
// forward pass does) within that quantization's error. One token (decode) and eleven (a token
// tile of 8 and a partial one), a row count over several workgroups, on SwiftShader; every entry
// point (main: an invocation per row, main_wg: a workgroup per row, main_mv: the one-token kernel
// with 4 rows per workgroup, and main_mv_sg, its subgroup variant, where the device has subgroups),
// with rows longer than 2,048 and, for the decode kernels, more rows than one y step of the dispatch;
// main_gemm, the tiled product of prompts (64 rows × 64 tokens per workgroup), on 1, 7, 64 and 300 tokens;
// the fused one-token kernels (main_mv_glu: gate, up and the GLU; main_mv3: q, k and v of three
// types) with the RMS norm folded in; their int8 variants (main_mv_q8, main_mv3_q8, main_mv_glu_q8:
// 8-bit activation blocks and dot4I8Packed, where the device's WGSL has it) on every quantized
// type, against the exact product with the kernel's own 8-bit activations (q8Activations); attention
// over the F16 cache, main and split.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backend, loadEngine, gpuDevice } from './gpu-helpers.mjs';

const M = await loadEngine();
const { device } = await gpuDevice();
const SUBGROUPS = device.features.has('subgroups');
const INT8 = await backend.int8Supported(device);
// the decode kernels with 8-bit activations (dot4I8Packed) where the device's WGSL has them
const q8 = (entry) => (INT8 ? [`${entry}_q8`] : []);
// an entry point and its subgroup variant where the device has subgroups
const sg = (entry) => (SUBGROUPS ? [entry, `${entry}_sg`] : [entry]);
const ENTRIES = ['main', 'main_wg', 'main_gemm', ...['main_mv', ...q8('main_mv')].flatMap(sg)];
const ONE_TOKEN = (entry) => entry.startsWith('main_mv');
const INT8_ENTRY = (entry) => entry.includes('_q8');
// types with an 8-bit form (dequant.wgsl qpiece_T)
const Q8_TYPES = ['q4_0', 'q8_0', 'q4_K', 'q5_K', 'q6_K'];

// block bytes, elements and the offsets of the f16 scales in each block (ggml-common.h layouts)
const TYPES = {
  f32: { id: 0, block: 4, elems: 1, halves: [] },
  f16: { id: 1, block: 2, elems: 1, halves: [0] },
  q4_0: { id: 2, block: 18, elems: 32, halves: [0] },
  q8_0: { id: 8, block: 34, elems: 32, halves: [0] },
  q4_K: { id: 12, block: 144, elems: 256, halves: [0, 2] },
  q5_K: { id: 13, block: 176, elems: 256, halves: [0, 2] },
  q6_K: { id: 14, block: 210, elems: 256, halves: [208] },
};

let seed = 12345;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);

/** The int8 kernels' activations in float64: x in blocks of 32, each d · round(x / d) with
 * d = max|x| / 127 in f32 and round half to even, as matmul.wgsl mv_quantize computes them; and
 * each element's step d. The exact product of a row with these is what those kernels compute. */
function q8Activations(x) {
  const out = new Float64Array(x.length), step = new Float64Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let i = b; i < b + 32; i++) amax = Math.max(amax, Math.abs(x[i]));
    const d = Math.fround(amax / 127), id = d > 0 ? Math.fround(1 / d) : 0;
    for (let i = b; i < b + 32; i++) {
      const v = Math.fround(x[i] * id), fl = Math.floor(v), frac = v - fl;
      const q = frac > 0.5 || (frac === 0.5 && fl % 2 !== 0) ? fl + 1 : fl;
      out[i] = d * q;
      step[i] = d;
    }
  }
  return { out, step };
}

/** the value of half h */
function halfValue(h) {
  const e = (h >> 10) & 31, m = h & 1023;
  const v = e ? (1 + m / 1024) * 2 ** (e - 15) : m * 2 ** -24;
  return h & 0x8000 ? -v : v;
}

/** a random half: sign, exponent in [lo, hi] (0: subnormal), mantissa */
function randomHalf(lo, hi) {
  const e = lo + Math.floor(rand() * (hi - lo + 1));
  return ((rand() < 0.5 ? 1 : 0) << 15) | (e << 10) | Math.floor(rand() * 1024);
}

function randomRows(t, rows, cols) {
  const nBlocks = (rows * cols) / t.elems;
  const bytes = new Uint8Array(nBlocks * t.block);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rand() * 256);
  const dv = new DataView(bytes.buffer);
  for (let b = 0; b < nBlocks; b++) {
    if (t.id === 0) dv.setFloat32(b * 4, rand() * 2 - 1, true);
    // scales between 2^-14 and 2^-2, with some subnormal ones (K-quant mins often are)
    for (const h of t.halves) dv.setUint16(b * t.block + h, t.id === 1 ? randomHalf(1, 16) : rand() < 0.15 ? randomHalf(0, 0) : randomHalf(1, 13), true);
  }
  return bytes;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
const UNIFORM = GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;

/** A buffer for a kernel test: `data` (bytes or a typed array, padded to whole words) or a size in bytes. */
function gpuBuffer(data, usage = STORAGE) {
  const bytes = typeof data === 'number' ? null : new Uint8Array(data.buffer || data, data.byteOffset || 0, data.byteLength);
  const b = device.createBuffer({ size: Math.max(16, Math.ceil((bytes ? bytes.length : data) / 4) * 4), usage });
  if (bytes) {
    const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
    padded.set(bytes);
    device.queue.writeBuffer(b, 0, padded);
  }
  return b;
}

/** One compute pass of steps [pipeline, [buffer or null per binding], [x, y, z]], then the first
 * `bytes` of `out` read back as floats; `buffers` destroyed after. */
async function runPass(steps, out, bytes, buffers) {
  const R = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (const [pipe, bufs, groups] of steps) {
    const entries = bufs.map((buffer, binding) => buffer && { binding, resource: { buffer } }).filter(Boolean);
    pass.setPipeline(pipe);
    pass.setBindGroup(0, device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries }));
    pass.dispatchWorkgroups(...groups);
  }
  pass.end();
  enc.copyBufferToBuffer(out, 0, R, 0, bytes);
  device.queue.submit([enc.finish()]);
  await R.mapAsync(GPUMapMode.READ);
  const result = new Float32Array(R.getMappedRange().slice(0));
  R.unmap();
  for (const b of [...buffers, R]) b.destroy();
  return result;
}

async function gpuMatmul(type, wBytes, rows, cols, x, nTok, entry) {
  const pipe = await backend.makePipeline(device, await backend.matmulSource(type, { subgroups: entry.endsWith('_sg'), int8: INT8_ENTRY(entry) }), entry, `matmul ${type}`);
  const W = gpuBuffer(wBytes), X = gpuBuffer(x), Y = gpuBuffer(nTok * rows * 4), B = gpuBuffer(rows * 4);
  const P = gpuBuffer(backend.matmulParams({ rows, cols, rowBytes: wBytes.length / rows, xStride: cols, yStride: rows }), UNIFORM);
  const St = gpuBuffer(new Uint32Array([nTok, 0, nTok, 0]), UNIFORM);
  let groups;
  if (ONE_TOKEN(entry)) {
    // matmul.wgsl MV_ROWS rows per workgroup, MV_GROUPS_PER_Y workgroups per y step
    const g = Math.ceil(rows / 4);
    groups = [Math.min(g, 8192), Math.ceil(g / 8192), 1];
  } else if (entry === 'main_gemm') {
    // tiles of 64 rows × 64 tokens
    groups = [Math.ceil(rows / 64), Math.ceil(nTok / 64), 1];
  } else {
    groups = [entry === 'main' ? Math.ceil(rows / 64) : rows, 1, Math.ceil(nTok / 8)];
  }
  // the one-token kernels read no Step, and W2 and W3 only in main_mv3's branches (bound to W here)
  const bindings = ONE_TOKEN(entry) ? [W, X, Y, P, null, B, W, W] : [W, X, Y, P, St, B];
  return runPass([[pipe, bindings, groups]], Y, nTok * rows * 4, [W, X, Y, B, P, St]);
}

function withHeap(bytes, fn) {
  const p = M._malloc(bytes.byteLength) >>> 0;
  M.HEAPU8.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), p);
  try {
    return fn(p);
  } finally {
    M._free(p);
  }
}

for (const [name, t] of Object.entries(TYPES)) for (const entry of ENTRIES.filter((e) => !INT8_ENTRY(e) || Q8_TYPES.includes(name))) {
  test(`matmul shader ${name} (${entry}): equals the engine's dequantization and its kernel on random blocks`, { timeout: 120000 }, async () => {
    // 70 rows: the decode kernels' last group of 4 is partial; 2,304 columns: rows past 2,048
    const rows = 70, cols = ONE_TOKEN(entry) ? 2304 : 512;
    const w = randomRows(t, rows, cols);
    const rowBytes = w.length / rows;
    // the tiled product: prompts of 1, 7, 64 and 300 tokens (partial and several token tiles)
    for (const nTok of ONE_TOKEN(entry) ? [1] : entry === 'main_gemm' ? [1, 7, 64, 300] : [1, 11]) {
      const x = new Float32Array(nTok * cols).map(() => rand() * 2 - 1);
      const gpu = await gpuMatmul(t.id, w, rows, cols, x, nTok, entry);
      let checked = 0;
      withHeap(w, (wp) => withHeap(x, (xp) => {
        const deq = M._malloc(cols * 4) >>> 0, out = M._malloc(4) >>> 0;
        for (let r = 0; r < rows; r++) {
          assert.equal(M._wick_dequantize(t.id, wp + r * rowBytes, cols, deq), 0);
          const wr = M.HEAPF32.subarray(deq >>> 2, (deq >>> 2) + cols);
          for (let tk = 0; tk < nTok; tk++) {
            // the int8 kernels: against the exact product with their 8-bit activations, within float
            // rounding and two elements quantized one step apart (their 1/d may differ in an ulp)
            const xt = x.subarray(tk * cols, (tk + 1) * cols);
            const { out: xe, step } = INT8_ENTRY(entry) ? q8Activations(xt) : { out: xt, step: null };
            let exact = 0, mag = 0, slack = 0;
            for (let i = 0; i < cols; i++) {
              exact += wr[i] * xe[i];
              mag += Math.abs(wr[i] * xe[i]);
              if (step) slack = Math.max(slack, 2 * Math.abs(wr[i]) * step[i]);
            }
            const got = gpu[tk * rows + r];
            assert.ok(Math.abs(got - exact) <= 1e-5 * mag + slack + 1e-30, `${name} row ${r} token ${tk}: gpu ${got}, exact ${exact} (magnitude ${mag})`);
            assert.equal(M._wick_row_dot(t.id, wp + r * rowBytes, xp + tk * cols * 4, cols, out), 0);
            const cpu = M.HEAPF32[out >>> 2];
            // the CPU kernel's 8-bit activation blocks: an error of about 1/127 of each block's largest;
            // for F16 weights its activations rounded to F16 (as llama.cpp's CPU backend rounds them):
            // at most half an F16 step, 2^-11 of each product
            // the int8 kernel on Q4_0 and Q8_0 rows quantizes the activations as that kernel does (blocks
            // of 32), so the two agree within float rounding; the CPU's K-quant kernels take blocks of 256
            const same = INT8_ENTRY(entry) && (name === 'q4_0' || name === 'q8_0');
            const tol = same ? 1e-4 * mag : t.id === 0 ? 1e-5 * mag : t.id === 1 ? (2 ** -11 + 1e-5) * mag : 0.02 * mag;
            assert.ok(Math.abs(got - cpu) <= tol + 1e-30, `${name} row ${r} token ${tk}: gpu ${got}, cpu kernel ${cpu}`);
            checked++;
          }
        }
        M._free(deq);
        M._free(out);
      }));
      assert.equal(checked, rows * nTok);
    }
  });
}

test('a wrong layout is caught: Q4_K blocks with their nibbles swapped give other products', async () => {
  // the comparison above can fail: the same check applied to a shader of the wrong type
  const rows = 4, cols = 256, t = TYPES.q4_K;
  const w = randomRows(t, rows, cols);
  const x = new Float32Array(cols).map(() => rand() * 2 - 1);
  const shifted = new Uint8Array(w.length);
  shifted.set(w);
  for (let r = 0; r < rows; r++) for (let i = 16; i < 144; i++) shifted[r * 144 + i] = ((w[r * 144 + i] & 15) << 4) | (w[r * 144 + i] >> 4); // nibbles swapped
  const good = await gpuMatmul(t.id, w, rows, cols, x, 1, 'main');
  const bad = await gpuMatmul(t.id, shifted, rows, cols, x, 1, 'main');
  let differ = 0;
  for (let r = 0; r < rows; r++) if (Math.abs(good[r] - bad[r]) > 1e-3 * Math.abs(good[r]) + 1e-6) differ++;
  assert.ok(differ >= 3, `${differ} of ${rows} rows changed when the nibbles were swapped`);
});

// (main_mv_sg, main_mv_q8 and main_mv3 take their workgroup's group from wid the same way: main_mv
// here; main_mv_q8's 8,201 quantizing workgroups took 80 s on SwiftShader)
for (const entry of ['main_mv']) {
  test(`matmul shader q4_0 (${entry}): 32,801 rows, past one y step of the dispatch (8,192 groups of 4)`, { timeout: 300000 }, async () => {
    const rows = 32801, cols = 64, t = TYPES.q4_0;
    const w = randomRows(t, rows, cols);
    const rowBytes = w.length / rows;
    const x = new Float32Array(cols).map(() => rand() * 2 - 1);
    const gpu = await gpuMatmul(t.id, w, rows, cols, x, 1, entry);
    const all = M._malloc(rows * cols * 4) >>> 0;
    withHeap(w, (wp) => assert.equal(M._wick_dequantize(t.id, wp, rows * cols, all), 0));
    const deq = M.HEAPF32.slice(all >>> 2, (all >>> 2) + rows * cols);
    M._free(all);
    let bad = 0;
    for (let r = 0; r < rows; r++) {
      let exact = 0, mag = 0;
      for (let i = 0; i < cols; i++) {
        exact += deq[r * cols + i] * x[i];
        mag += Math.abs(deq[r * cols + i] * x[i]);
      }
      if (!(Math.abs(gpu[r] - exact) <= 1e-5 * mag + 1e-30)) bad++;
    }
    assert.equal(bad, 0, `${bad} of ${rows} rows differ from the exact product`);
  });
}

// attention.wgsl for one token: main (a workgroup per head over the whole context) and the split
// pair (split_attend over chunks of 256 positions, split_reduce), over an F16 cache (halves packed
// two per word), against softmax(q·Kᵀ·scale)·V in float64, for contexts of 1, 63 and 4,097 positions, grouped-query heads, a sliding window and a softcap
async function gpuAttention(entry, { nHeads, nKv, headDim, pos, window, scale, softcap }, q, kc, vc) {
  const qd = nHeads * headDim, kvd = nKv * headDim;
  const chunks = Math.floor((pos - (window > 0 && pos >= window ? pos - window + 1 : 0)) / 256) + 1;
  const Q = gpuBuffer(q), K = gpuBuffer(kc), V = gpuBuffer(vc), O = gpuBuffer(qd * 4), Part = gpuBuffer(nHeads * chunks * (headDim + 2) * 4);
  const params = new DataView(new ArrayBuffer(32));
  [nHeads, nKv, headDim, qd, kvd, window].forEach((v, i) => params.setUint32(4 * i, v, true));
  params.setFloat32(24, scale, true);
  params.setFloat32(28, softcap, true);
  const P = gpuBuffer(params, UNIFORM), St = gpuBuffer(new Uint32Array([1, pos, 1, 0]), UNIFORM);
  const code = await backend.readShaderText('attention');
  const pipe = (name) => backend.makePipeline(device, code, name, `attention ${name}`);
  const steps = entry === 'main' ? [[await pipe('main'), [Q, K, V, O, P, St], [nHeads, 1, 1]]]
    : [[await pipe('split_attend'), [Q, K, V, null, P, St, Part], [nHeads * chunks, 1, 1]], [await pipe('split_reduce'), [null, null, null, O, P, St, Part], [nHeads, 1, 1]]];
  return runPass(steps, O, qd * 4, [Q, K, V, O, Part, P, St]);
}

const ATTENTION_CASES = [
  { nHeads: 4, nKv: 2, headDim: 64, pos: 0, window: 0, scale: 0.125, softcap: 0 },
  { nHeads: 4, nKv: 2, headDim: 64, pos: 62, window: 0, scale: 0.125, softcap: 0 },
  { nHeads: 4, nKv: 1, headDim: 128, pos: 4096, window: 0, scale: 1 / Math.sqrt(128), softcap: 0 },
  { nHeads: 2, nKv: 2, headDim: 256, pos: 4096, window: 600, scale: 0.0625, softcap: 50 },
];
for (const entry of ['main', 'split']) {
  test(`attention shader (${entry === 'main' ? 'main' : 'split_attend + split_reduce'}): one token over 1, 63 and 4,097 positions equals the float64 softmax`, { timeout: 300000 }, async () => {
    for (const cs of ATTENTION_CASES) {
      const { nHeads, nKv, headDim, pos, window, scale, softcap } = cs;
      const kvd = nKv * headDim, n = pos + 1;
      const q = new Float32Array(nHeads * headDim).map(() => rand() * 2 - 1);
      // the cache's halves (normal ones: a GPU's unpack2x16float may flush subnormals), keys up to
      // ±4 so that the softmax is far from uniform
      const kh16 = new Uint16Array(n * kvd).map(() => randomHalf(5, 16)), vh16 = new Uint16Array(n * kvd).map(() => randomHalf(5, 15));
      const kc = Float64Array.from(kh16, halfValue), vc = Float64Array.from(vh16, halfValue);
      const got = await gpuAttention(entry, cs, q, kh16, vh16);
      const first = window > 0 && pos >= window ? pos - window + 1 : 0;
      let worst = 0;
      for (let h = 0; h < nHeads; h++) {
        const kh = Math.floor(h / (nHeads / nKv));
        const s = [];
        for (let p = first; p <= pos; p++) {
          let d = 0;
          for (let i = 0; i < headDim; i++) d += q[h * headDim + i] * kc[p * kvd + kh * headDim + i];
          d *= scale;
          if (softcap > 0) d = Math.tanh(d / softcap) * softcap;
          s.push(d);
        }
        const mx = Math.max(...s);
        const e = s.map((x) => Math.exp(x - mx));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let i = 0; i < headDim; i++) {
          let o = 0;
          for (let p = first; p <= pos; p++) o += e[p - first] * vc[p * kvd + kh * headDim + i];
          o /= sum;
          worst = Math.max(worst, Math.abs(got[h * headDim + i] - o));
        }
      }
      assert.ok(worst <= 2e-5, `${JSON.stringify(cs)}: largest difference ${worst}`);
    }
  });
}

// The one-token kernels' folded RMS norm (P.flags 32): x given as the residual stream, the norm's
// weights in B; the exact reference normalizes x first, in float64
function rmsNormed(x, w, eps) {
  let ss = 0;
  for (const v of x) ss += v * v;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return Float64Array.from(x, (v, i) => v * inv * w[i]);
}

/** Σ_i W[r][i]·x[i] in float64 over the engine's dequantization of row r, Σ|…|, and with the int8
 * kernels' activation steps (q8Activations) the slack of two elements a step apart */
function exactRow(typeId, w, r, rowBytes, x, step = null) {
  const cols = x.length;
  return withHeap(w, (wp) => {
    const deq = M._malloc(cols * 4) >>> 0;
    assert.equal(M._wick_dequantize(typeId, wp + r * rowBytes, cols, deq), 0);
    let s = 0, mag = 0, slack = 0;
    for (let i = 0; i < cols; i++) {
      const wi = M.HEAPF32[(deq >>> 2) + i];
      s += wi * x[i];
      mag += Math.abs(wi * x[i]);
      if (step) slack = Math.max(slack, 2 * Math.abs(wi) * step[i]);
    }
    M._free(deq);
    return [s, mag, slack];
  });
}

// matmul.wgsl main_mv_glu (and _sg): one token's gate and up products with act(gate) · up in the
// epilogue, against the exact products of the engine's dequantization, SiLU and GELU (tanh form);
// the GELU case with the FFN's RMS norm folded in
async function gpuGlu(type, gate, up, rows, cols, x, entry, gelu, normW) {
  const pipe = await backend.makePipeline(device, await backend.matmulSource(type, { subgroups: entry.endsWith('_sg'), int8: INT8_ENTRY(entry) }), entry, `glu ${type}`);
  const W = gpuBuffer(gate), W2 = gpuBuffer(up), X = gpuBuffer(x), Y = gpuBuffer(rows * 4), B = gpuBuffer(normW || 16);
  const P = gpuBuffer(backend.matmulParams({ rows, cols, rowBytes: gate.length / rows, xStride: cols, yStride: rows, flags: (gelu ? 16 : 0) | (normW ? 32 : 0), eps: 1e-5 }), UNIFORM);
  return runPass([[pipe, [W, X, Y, P, null, B, W2], [Math.ceil(rows / 2), 1, 1]]], Y, rows * 4, [W, W2, X, Y, B, P]);
}

for (const entry of ['main_mv_glu', ...q8('main_mv_glu')].flatMap(sg)) {
  test(`matmul shader ${entry}: act(gate) · up of one token equals the exact products on random blocks, with and without the norm folded in`, { timeout: 120000 }, async () => {
    const rows = 71, cols = 2304;
    const silu = (v) => v / (1 + Math.exp(-v));
    const gelu = (v) => 0.5 * v * (1 + Math.tanh(0.7978845608028654 * v * (1 + 0.044715 * v * v)));
    // (the int8 kernels on two types here: every quantized type is checked by main_mv_q8's test above)
    for (const name of INT8_ENTRY(entry) ? ['q4_K', 'q6_K'] : ['f16', 'q4_0', 'q8_0', 'q4_K', 'q6_K']) {
      const t = TYPES[name];
      const gate = randomRows(t, rows, cols), up = randomRows(t, rows, cols);
      const x = new Float32Array(cols).map(() => (rand() * 2 - 1) * 4);
      const normW = new Float32Array(cols).map(() => 0.5 + rand());
      const rowBytes = gate.length / rows;
      for (const useGelu of [false, true]) {
        const got = await gpuGlu(t.id, gate, up, rows, cols, x, entry, useGelu, useGelu ? normW : null);
        const xn = useGelu ? rmsNormed(x, normW, 1e-5) : x;
        const { out: xr, step } = INT8_ENTRY(entry) ? q8Activations(xn) : { out: xn, step: null };
        for (let r = 0; r < rows; r++) {
          const [g, mg, sg] = exactRow(t.id, gate, r, rowBytes, xr, step), [u, mu, su] = exactRow(t.id, up, r, rowBytes, xr, step);
          const a = useGelu ? gelu(g) : silu(g);
          const want = a * u;
          // the products' float rounding (1e-5 of their magnitudes) and the int8 slack, carried through act and the product
          const tol = 1.2 * (1e-5 * mg + sg) * Math.abs(u) + Math.abs(a) * (1e-5 * mu + su) + 1e-30;
          assert.ok(Math.abs(got[r] - want) <= tol, `${name} ${useGelu ? 'GELU, normed' : 'SiLU'} row ${r}: gpu ${got[r]}, exact ${want}`);
        }
      }
    }
  });
}

// matmul.wgsl main_mv3 (and _sg): an attention layer's q, k and v of one token in one dispatch,
// each matrix of its own type (Q4_K_M files keep some v in Q6_K), the RMS norm folded in, biases on
// k and v only; row counts whose last group of 4 is partial at each matrix's end
for (const entry of ['main_mv3', ...q8('main_mv3')].flatMap(sg)) {
  test(`matmul shader ${entry}: q, k and v of one token, of three types, equal the exact products of the normed row`, { timeout: 120000 }, async () => {
    const cols = 2304, eps = 1e-6;
    for (const names of [['q4_K', 'q4_K', 'q6_K'], INT8_ENTRY(entry) ? ['q8_0', 'q5_K', 'q4_0'] : ['q8_0', 'f16', 'q4_0']]) {
      const rows = [70, 37, 37];
      const ts = names.map((n) => TYPES[n]);
      const ws = ts.map((t, m) => randomRows(t, rows[m], cols));
      const x = new Float32Array(cols).map(() => (rand() * 2 - 1) * 4);
      // B: the norm's weights, then k's and v's biases
      const vec = new Float32Array(cols + rows[1] + rows[2]).map((_, i) => (i < cols ? 0.5 + rand() : rand() * 2 - 1));
      const pipe = await backend.makePipeline(device, await backend.matmulSource(ts[0].id, { subgroups: entry.endsWith('_sg'), w2: ts[1].id, w3: ts[2].id, int8: INT8_ENTRY(entry) }), entry, `mv3 ${names}`);
      const [W, W2, W3] = ws.map((w) => gpuBuffer(w));
      const X = gpuBuffer(x), B = gpuBuffer(vec), Ys = rows.map((r) => gpuBuffer(r * 4));
      const P = gpuBuffer(backend.matmulParams({
        rows: rows[0], cols, rowBytes: ws[0].length / rows[0], xStride: cols, yStride: rows[0], flags: 32 | 64 | 128, normOff: 0, eps,
        rows2: rows[1], rows3: rows[2], rowBytes2: ws[1].length / rows[1], rowBytes3: ws[2].length / rows[2], bias2: cols, bias3: cols + rows[1],
      }), UNIFORM);
      const groups = rows.reduce((a, r) => a + Math.ceil(r / 4), 0);
      const got = [];
      for (let m = 0; m < 3; m++) {
        // one dispatch, its three outputs read back in turn (runPass reads one buffer)
        const out = await runPass([[pipe, [W, X, Ys[0], P, null, B, W2, W3, Ys[1], Ys[2]], [groups, 1, 1]]], Ys[m], rows[m] * 4, []);
        got.push(out);
      }
      for (const b of [W, W2, W3, X, B, P, ...Ys]) b.destroy();
      const xn = rmsNormed(x, vec, eps);
      const { out: xr, step } = INT8_ENTRY(entry) ? q8Activations(xn) : { out: xn, step: null };
      for (let m = 0; m < 3; m++) {
        for (let r = 0; r < rows[m]; r++) {
          const [want, mag, slack] = exactRow(ts[m].id, ws[m], r, ws[m].length / rows[m], xr, step);
          const bias = m === 0 ? 0 : vec[cols + (m === 2 ? rows[1] : 0) + r];
          assert.ok(Math.abs(got[m][r] - (want + bias)) <= 1e-5 * mag + slack + 1e-6, `${names[m]} (matrix ${m}) row ${r}: gpu ${got[m][r]}, exact ${want + bias}`);
        }
      }
    }
  });
}
