// tests/gpu-large.test.mjs — a 1b-shaped model (wick synth: dim 2048, 22 layers, vocabulary 32000,
// Q4_K_M, 668 MB) on the WebGPU path within WebGPU's default maxStorageBufferBindingSize of
// 128 MiB: every buffer within the limit; and with a smaller limit (16 MiB) the tensors larger
// than it split by rows across buffers, the logits of one token through them against the CPU
// path's. One token only: SwiftShader computes on the CPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureModel } from '../tools/bench-common.mjs';
import { relRms, argmax } from './helpers.mjs';
import { backend, loadEngine, gpuDevice, dequantizer, loadModel } from './gpu-helpers.mjs';

const MiB = 1 << 20;

test('1b Q4_K_M loads on the GPU within 128 MiB bindings, splits tensors under a smaller limit, and its logits match the CPU path', { timeout: 900000 }, async () => {
  const file = ensureModel('models/synth-1b-q4_k_m.gguf');
  const M = await loadEngine();
  const { device } = await gpuDevice();
  // openDevice asks for the adapter's own limits (1 GiB on SwiftShader); the plan below is held to
  // WebGPU's default of 128 MiB, what an adapter that grants no more gives, through maxBinding
  assert.ok(device.limits.maxStorageBufferBindingSize >= 128 * MiB);
  const { model, tensors } = loadModel(M, file);
  assert.equal(tensors.config.dim, 2048);
  assert.equal(tensors.config.n_layers, 22);
  const bos = [1];

  // the CPU path: one token
  const cpu = (() => {
    const params = M._malloc(16) >>> 0, out = M._malloc(4) >>> 0;
    M._wick_ctx_default_params(params);
    M.HEAP32[params >>> 2] = 64;
    assert.equal(M._wick_ctx_new(model, params, out), 0);
    const ctx = M.HEAPU32[out >>> 2];
    M.HEAP32[out >>> 2] = bos[0];
    assert.equal(M._wick_eval(ctx, out, 1, 0), 0);
    const p = M._wick_get_logits(ctx, -1) >>> 2;
    const logits = M.HEAPF32.slice(p, p + tensors.config.n_vocab);
    M._wick_ctx_free(ctx);
    M._free(params);
    M._free(out);
    return logits;
  })();

  // (one token of a 1b model takes SwiftShader about a minute: only the split run computes one)
  const run = async (maxBinding, compute) => {
    const f = await backend.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize: dequantizer(M), nCtx: 64, software: true, maxBinding });
    try {
      const s = f.structure();
      const logits = compute ? await f.eval(bos, 0, false) : null;
      return { s, logits, outputChunks: f.output.chunks.length, limit: f.limit };
    } finally {
      f.destroy();
    }
  };
  // WebGPU's default binding limit (openDevice asks for the adapter's own, 1 GiB on SwiftShader)
  const whole = await run(128 * MiB, false);
  assert.equal(whole.limit, 128 * MiB);
  assert.ok(whole.s.largestBuffer <= 128 * MiB, `largest buffer ${whole.s.largestBuffer}`);
  // the weights on the GPU are the file's (Q4_K and Q6_K read as they are, no conversion), read once per token
  assert.ok(whole.s.weightBytes > 600e6 && whole.s.weightBytes < 668e6, `${whole.s.weightBytes} bytes of weights`);
  assert.ok(whole.s.weightBytesReadPerToken <= 1.1 * whole.s.weightBytes);
  const split = await run(16 * MiB, true);
  assert.ok(split.s.largestBuffer <= 16 * MiB, `largest buffer ${split.s.largestBuffer} with a 16 MiB limit`);
  assert.ok(split.outputChunks >= 4, `the output matrix (${(tensors.output.rows * tensors.output.row_bytes / MiB).toFixed(1)} MiB) in ${split.outputChunks} buffers`);
  assert.equal(split.s.weightBytes, whole.s.weightBytes);
  const d = relRms(split.logits, cpu);
  assert.ok(d < 0.05, `GPU (split buffers) vs CPU logits: ${(100 * d).toFixed(2)}% of a standard deviation`);
  assert.equal(argmax(split.logits), argmax(cpu));
});
