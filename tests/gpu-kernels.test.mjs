// tests/gpu-kernels.test.mjs — each matrix-product shader of the WebGPU backend (matmul.wgsl with
// dequant.wgsl's unit of each GGUF type) against the engine's CPU code on random blocks, the way
// test_kernels.c checks the SIMD kernels: against the exact product of the engine's own
// dequantization (wick_dequantize, summed in float64) within float rounding, and against the
// engine's kernel (wick_row_dot: the activation row quantized to 8-bit blocks first, as the CPU
// forward pass does) within that quantization's error. One token (decode) and eleven (a token
// tile of 8 and a partial one), a row count over several workgroups, on SwiftShader; both entry
// points (main: an invocation per row, main_wg: a workgroup per row).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backend, loadEngine, gpuDevice } from './gpu-helpers.mjs';

const M = await loadEngine();
const { device } = await gpuDevice();

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

async function gpuMatmul(type, wBytes, rows, cols, x, nTok, entry) {
  const pipe = await backend.makePipeline(device, await backend.matmulSource(type), entry, `matmul ${type}`);
  const S = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const mk = (size, usage) => device.createBuffer({ size: Math.ceil(size / 4) * 4, usage });
  const W = mk(wBytes.length, S), X = mk(x.byteLength, S), Y = mk(nTok * rows * 4, S), B = mk(rows * 4, S);
  const P = mk(48, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST), St = mk(16, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  const R = mk(nTok * rows * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
  const padded = new Uint8Array(Math.ceil(wBytes.length / 4) * 4);
  padded.set(wBytes);
  device.queue.writeBuffer(W, 0, padded);
  device.queue.writeBuffer(X, 0, x);
  device.queue.writeBuffer(P, 0, new Uint32Array([rows, cols, wBytes.length / rows, 0, cols, rows, 0, 0, 0, 0, 0, 0]));
  device.queue.writeBuffer(St, 0, new Uint32Array([nTok, 0, nTok, 0]));
  const bind = device.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [W, X, Y, P, St, B].map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipe);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(entry === 'main' ? Math.ceil(rows / 64) : rows, 1, Math.ceil(nTok / 8));
  pass.end();
  enc.copyBufferToBuffer(Y, 0, R, 0, nTok * rows * 4);
  device.queue.submit([enc.finish()]);
  await R.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(R.getMappedRange().slice(0));
  R.unmap();
  for (const b of [W, X, Y, B, P, St, R]) b.destroy();
  return out;
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

for (const [name, t] of Object.entries(TYPES)) for (const entry of ['main', 'main_wg']) {
  test(`matmul shader ${name} (${entry}): equals the engine's dequantization and its kernel on random blocks`, { timeout: 120000 }, async () => {
    const rows = 70, cols = 512;
    const w = randomRows(t, rows, cols);
    const rowBytes = w.length / rows;
    for (const nTok of [1, 11]) {
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
