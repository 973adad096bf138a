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
// main_gemm, the tiled product of prompts (64 rows × 64 tokens per workgroup), on 1, 7, 64 and 300 tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backend, loadEngine, gpuDevice } from './gpu-helpers.mjs';

const M = await loadEngine();
const { device } = await gpuDevice();
const SUBGROUPS = device.features.has('subgroups');
const ENTRIES = ['main', 'main_wg', 'main_gemm', 'main_mv', ...(SUBGROUPS ? ['main_mv_sg'] : [])];
const ONE_TOKEN = (entry) => entry.startsWith('main_mv');

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
  const pipe = await backend.makePipeline(device, await backend.matmulSource(type, { subgroups: entry === 'main_mv_sg' }), entry, `matmul ${type}`);
  const W = gpuBuffer(wBytes), X = gpuBuffer(x), Y = gpuBuffer(nTok * rows * 4), B = gpuBuffer(rows * 4);
  const P = gpuBuffer(new Uint32Array([rows, cols, wBytes.length / rows, 0, cols, rows, 0, 0, 0, 0, 0, 0]), UNIFORM);
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
  return runPass([[pipe, [W, X, Y, P, St, B], groups]], Y, nTok * rows * 4, [W, X, Y, B, P, St]);
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

for (const [name, t] of Object.entries(TYPES)) for (const entry of ENTRIES) {
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
            let exact = 0, mag = 0;
            for (let i = 0; i < cols; i++) {
              exact += wr[i] * x[tk * cols + i];
              mag += Math.abs(wr[i] * x[tk * cols + i]);
            }
            const got = gpu[tk * rows + r];
            assert.ok(Math.abs(got - exact) <= 1e-5 * mag + 1e-30, `${name} row ${r} token ${tk}: gpu ${got}, exact ${exact} (magnitude ${mag})`);
            assert.equal(M._wick_row_dot(t.id, wp + r * rowBytes, xp + tk * cols * 4, cols, out), 0);
            const cpu = M.HEAPF32[out >>> 2];
            // the CPU kernel's 8-bit activation blocks: an error of about 1/127 of each block's largest;
            // for F16 weights its activations rounded to F16 (as llama.cpp's CPU backend rounds them):
            // at most half an F16 step, 2^-11 of each product
            const tol = t.id === 0 ? 1e-5 * mag : t.id === 1 ? (2 ** -11 + 1e-5) * mag : 0.02 * mag;
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

for (const entry of ENTRIES.filter(ONE_TOKEN)) {
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
// pair (split_attend over chunks of 256 positions, split_reduce) against softmax(q·Kᵀ·scale)·V in
// float64, for contexts of 1, 63 and 4,097 positions, grouped-query heads, a sliding window and a softcap
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
      // keys large enough that the softmax is far from uniform
      const kc = new Float32Array(n * kvd).map(() => (rand() * 2 - 1) * 3);
      const vc = new Float32Array(n * kvd).map(() => rand() * 2 - 1);
      const got = await gpuAttention(entry, cs, q, kc, vc);
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

// matmul.wgsl main_mv_glu (and _sg): one token's gate and up products with act(gate) · up in the
// epilogue, against the exact products of the engine's dequantization, SiLU and GELU (tanh form)
async function gpuGlu(type, gate, up, rows, cols, x, entry, gelu) {
  const pipe = await backend.makePipeline(device, await backend.matmulSource(type, { subgroups: entry.endsWith('_sg') }), entry, `glu ${type}`);
  const W = gpuBuffer(gate), W2 = gpuBuffer(up), X = gpuBuffer(x), Y = gpuBuffer(rows * 4);
  const P = gpuBuffer(new Uint32Array([rows, cols, gate.length / rows, 0, cols, rows, gelu ? 16 : 0, 0, 0, 0, 0, 0]), UNIFORM);
  return runPass([[pipe, [W, X, Y, P, null, null, W2], [Math.ceil(rows / 2), 1, 1]]], Y, rows * 4, [W, W2, X, Y, P]);
}

for (const entry of ['main_mv_glu', ...(SUBGROUPS ? ['main_mv_glu_sg'] : [])]) {
  test(`matmul shader ${entry}: act(gate) · up of one token equals the exact products on random blocks`, { timeout: 120000 }, async () => {
    const rows = 71, cols = 2304;
    const silu = (v) => v / (1 + Math.exp(-v));
    const gelu = (v) => 0.5 * v * (1 + Math.tanh(0.7978845608028654 * v * (1 + 0.044715 * v * v)));
    for (const name of ['f16', 'q4_0', 'q8_0', 'q4_K', 'q6_K']) {
      const t = TYPES[name];
      const gate = randomRows(t, rows, cols), up = randomRows(t, rows, cols);
      const x = new Float32Array(cols).map(() => rand() * 2 - 1);
      const rowBytes = gate.length / rows;
      for (const useGelu of [false, true]) {
        const got = await gpuGlu(t.id, gate, up, rows, cols, x, entry, useGelu);
        const exact = (w, r) => withHeap(w, (wp) => {
          const deq = M._malloc(cols * 4) >>> 0;
          assert.equal(M._wick_dequantize(t.id, wp + r * rowBytes, cols, deq), 0);
          let s = 0, mag = 0;
          for (let i = 0; i < cols; i++) {
            const p = M.HEAPF32[(deq >>> 2) + i] * x[i];
            s += p;
            mag += Math.abs(p);
          }
          M._free(deq);
          return [s, mag];
        });
        for (let r = 0; r < rows; r++) {
          const [g, mg] = exact(gate, r), [u, mu] = exact(up, r);
          const a = useGelu ? gelu(g) : silu(g);
          const want = a * u;
          // the products' float rounding (1e-5 of their magnitudes), carried through act and the product
          const tol = 1e-5 * (1.2 * mg * Math.abs(u) + Math.abs(a) * mu) + 1e-30;
          assert.ok(Math.abs(got[r] - want) <= tol, `${name} ${useGelu ? 'GELU' : 'SiLU'} row ${r}: gpu ${got[r]}, exact ${want}`);
        }
      }
    }
  });
}
