// tests/gpu-topk.test.mjs — the top-k readback of the WebGPU path (wasm_glue/gpu/topk.wgsl): when the
// sampler's draw depends only on the k best logits of the row (wick_gen_candidates: greedy, or
// top_k with no penalty, logit bias or grammar), the GPU ranks the row and reads back k (id, logit)
// pairs instead of the whole row. Checked here: the shader's ranking against a sort in JS on rows
// made to be hard (ties, -0 and +0, -Infinity, NaN, several segments and passes); and through the
// public API on SwiftShader, stories260K's 240 greedy tokens and a seeded sampled run (temperature 1,
// top_k 40) are the same with the top-k readback as with the whole row (gpuTopK: false), with
// the bytes read back per token counted (timings.gpuReadbackBytes), and a repeat penalty reads whole rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick } from '../wasm_glue/wick.mjs';
import { models, shared, loadReference, runWick, collect } from './helpers.mjs';
import { backend, gpuDevice, loadEngine, loadModel, dequantizer } from './gpu-helpers.mjs';

const stories = path.join(models, 'stories260K.gguf');
const ref = loadReference('stories260K.json');
const N_VOCAB = 512; // stories260K's


// ---- the shader alone ----

const SEG = 1024; // topk.wgsl

/** The sampler's order (src/sampler.c): logit descending (NaN as -Infinity, -0 equal to +0), ties by lower id. */
function referenceTop(row, k) {
  const ids = Array.from(row.keys());
  const z = (i) => (Number.isNaN(row[i]) ? -Infinity : row[i]);
  ids.sort((a, b) => (z(a) === z(b) ? a - b : z(b) - z(a)));
  return ids.slice(0, k);
}

/** Runs topk.wgsl's passes as the backend plans them (segments of SEG, k kept per segment, until one). */
async function gpuTop(device, row, k) {
  const code = await backend.readShaderText('topk');
  const pipe = await backend.makePipeline(device, code, 'main', 'topk test');
  const S = GPUBufferUsage.STORAGE, CS = GPUBufferUsage.COPY_SRC, CD = GPUBufferUsage.COPY_DST;
  const rowBuf = device.createBuffer({ size: row.byteLength, usage: S | CD });
  device.queue.writeBuffer(rowBuf, 0, row);
  const listBytes = 8 * Math.ceil(row.length / SEG) * k;
  const lists = [0, 1].map(() => device.createBuffer({ size: listBytes, usage: S | CS }));
  const count = device.createBuffer({ size: 8, usage: S | CS | CD });
  const passes = [];
  for (let n = row.length; ; ) {
    const groups = Math.ceil(n / SEG);
    passes.push({ n, groups });
    if (groups === 1) break;
    n = groups * k;
  }
  const params = device.createBuffer({ size: 256 * passes.length, usage: GPUBufferUsage.UNIFORM | CD });
  passes.forEach((p, i) => device.queue.writeBuffer(params, 256 * i, new Uint32Array([p.n, k, i === 0 ? 1 : 0, 0])));
  const read = device.createBuffer({ size: 8 + 8 * k, usage: GPUBufferUsage.MAP_READ | CD });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipe);
  passes.forEach((p, i) => {
    pass.setBindGroup(0, device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: rowBuf } },
        { binding: 1, resource: { buffer: lists[(i + 1) % 2] } },
        { binding: 2, resource: { buffer: lists[i % 2] } },
        { binding: 3, resource: { buffer: params, offset: 256 * i, size: 16 } },
        { binding: 4, resource: { buffer: count } },
      ],
    }));
    pass.dispatchWorkgroups(p.groups);
  });
  pass.end();
  enc.copyBufferToBuffer(count, 0, read, 0, 8);
  enc.copyBufferToBuffer(lists[(passes.length - 1) % 2], 0, read, 8, 8 * k);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const words = new Uint32Array(read.getMappedRange().slice(0));
  read.unmap();
  [rowBuf, ...lists, count, params, read].forEach((b) => b.destroy());
  const ids = [], values = [];
  for (let i = 0; i < k; i++) {
    const key = words[2 + 2 * i];
    ids.push(words[3 + 2 * i]);
    values.push(new Float32Array(new Uint32Array([key & 0x80000000 ? key & 0x7fffffff : ~key >>> 0]).buffer)[0]);
  }
  return { ids, values, nonFinite: words[0], passes: passes.length };
}

test('topk.wgsl ranks as the sampler does: ties by lower id, -0 as +0, NaN and -Infinity last, over several segments and passes', { timeout: 300000 }, async () => {
  const { device } = await gpuDevice();
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const pool = [-Infinity, -3.5, -1, -0, 0, 0.25, 1, 1, 2.75, 7];
  for (const [n, k, kind] of [[512, 1, 'stories-sized'], [512, 40, 'stories-sized'], [5000, 40, 'ties'], [5000, 256, 'ties'], [33000, 40, 'spread'], [1500, 256, 'mostly -inf']]) {
    const row = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      if (kind === 'ties') row[i] = pool[Math.floor(rand() * pool.length)];
      else if (kind === 'mostly -inf') row[i] = i % 7 === 3 ? rand() * 4 - 2 : -Infinity;
      else row[i] = Math.fround(rand() * 20 - 10);
    }
    if (kind === 'ties') { row[17] = NaN; row[4095] = NaN; }
    const got = await gpuTop(device, row, k);
    const want = referenceTop(row, k);
    assert.deepEqual(got.ids, want, `${kind} row of ${n}, k ${k}: the ids in the sampler's order`);
    assert.deepEqual(got.values, want.map((i) => (Number.isNaN(row[i]) ? -Infinity : row[i] === 0 ? 0 : row[i])), `${kind} row of ${n}, k ${k}: the values`);
    const bad = Array.from(row).filter((x) => !Number.isFinite(x)).length;
    assert.equal(got.nonFinite, bad, `${kind} row of ${n}: its Inf and NaN logits counted`);
    if (n > SEG) assert.ok(got.passes > 1, 'more than one pass');
  }
});

// ---- the backend's own passes (GpuForward.evaluate with topK) on a 32000-token vocabulary ----

test('GpuForward.evaluate with topK on a 32000-token vocabulary (3 or more passes): the k best of the whole row, in order; a row with a NaN read whole', { timeout: 300000 }, async () => {
  const { device } = await gpuDevice();
  const M = await loadEngine();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-topk-'));
  try {
    const file = path.join(dir, 'mini-32k.gguf');
    const r = runWick('native', ['synth', '--shape', 'mini', '--type', 'q8_0', '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf'), '-o', file]);
    assert.equal(r.code, 0, r.stderr);
    const { tensors } = loadModel(M, file);
    assert.equal(tensors.config.n_vocab, 32000);
    const f = await backend.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize: dequantizer(M), nCtx: 64, software: true });
    try {
      const prompt = [1, 450, 4996, 17354, 1701];
      const whole = await f.eval(prompt, 0, false);
      assert.ok(whole instanceof Float32Array && whole.length === 32000);
      for (const k of [1, 40, 256]) {
        const before = f.stats.readbackBytes;
        const top = await f.eval(prompt, 0, false, k); // the same positions again: the same row
        assert.equal(f.stats.readbackBytes - before, 8 + 8 * k);
        const want = referenceTop(whole, k);
        assert.deepEqual(Array.from(top.ids), want, `k ${k}: the ids`);
        assert.deepEqual(Array.from(top.values), want.map((i) => whole[i]), `k ${k}: the values`);
      }
      // beyond the readback's limit, and every row asked for: whole rows
      assert.ok((await f.eval(prompt, 0, false, backend.TOPK_MAX + 1)) instanceof Float32Array);
      assert.equal((await f.eval(prompt, 0, true, 40)).length, prompt.length * 32000);
    } finally {
      f.destroy();
    }
    // NaN logits (the output norm's first weight made NaN) make the top-k pass count them, and the
    // row is read back whole, NaN included, for the worker to see
    M.HEAPF32[tensors.output_norm.ptr >>> 2] = NaN;
    const g = await backend.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize: dequantizer(M), nCtx: 64, software: true });
    try {
      const before = g.stats.readbackBytes;
      const row = await g.eval([1, 450, 4996], 0, false, 40);
      assert.ok(row instanceof Float32Array && row.length === 32000, 'the whole row');
      assert.ok(row.some(Number.isNaN));
      assert.equal(g.stats.readbackBytes - before, 8 + 8 * 40 + 4 * 32000);
    } finally {
      g.destroy();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- through the public API ----

async function run(gpuTopK, options) {
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 512, gpuTopK });
  try {
    assert.equal(engine.device.type, 'gpu');
    return await collect(engine.generate('Once upon a time', { maxTokens: 240, ...options }));
  } finally {
    await engine.unload();
  }
}

test('greedy: 240 tokens from the best logit alone equal those from whole rows (and the reference), 16 bytes read back per token instead of 2048', { timeout: 600000 }, async () => {
  const sparse = await run(true, { temperature: 0 });
  const whole = await run(false, { temperature: 0 });
  assert.equal(sparse.tokens.length, 240);
  assert.deepEqual(sparse.tokens, whole.tokens);
  assert.equal(sparse.text, ref.greedy_text);
  // one logits readback per drawn token (the prompt's, then each drawn one's but the last)
  assert.equal(whole.done.timings.gpuReadbackBytes, 240 * 4 * N_VOCAB);
  assert.equal(sparse.done.timings.gpuReadbackBytes, 240 * (8 + 8 * 1));
});

test('sampled (temperature 1, top_k 40, seed 2024, top_p and min_p at their defaults): the same 240 tokens from the 40 best logits as from whole rows', { timeout: 600000 }, async () => {
  const options = { temperature: 1, topK: 40, seed: 2024 };
  const sparse = await run(true, options);
  const whole = await run(false, options);
  assert.equal(sparse.tokens.length, 240);
  assert.deepEqual(sparse.tokens, whole.tokens);
  assert.notEqual(sparse.text, ref.greedy_text, 'a draw, not the greedy text');
  assert.equal(whole.done.timings.gpuReadbackBytes, 240 * 4 * N_VOCAB);
  assert.equal(sparse.done.timings.gpuReadbackBytes, 240 * (8 + 8 * 40));
});

test('what needs the whole row reads it whole: a repeat penalty, top_k off at temperature 1, a logit bias, a grammar', { timeout: 600000 }, async () => {
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 512 });
  try {
    for (const options of [{ temperature: 0, repeatPenalty: 1.1 }, { temperature: 1, topK: 0, seed: 3 }, { temperature: 0, logitBias: { 300: -1 } }, { temperature: 0, grammar: 'root ::= [^!]+' }]) {
      const r = await collect(engine.generate('Once upon a time', { maxTokens: 20, ...options }));
      assert.equal(r.done.timings.gpuReadbackBytes, 20 * 4 * N_VOCAB, JSON.stringify(options));
    }
    // and a top_k above the readback's 256 (stories260K has 512 tokens): whole rows too
    const r = await collect(engine.generate('Once upon a time', { maxTokens: 20, temperature: 1, topK: 300, seed: 3 }));
    assert.equal(r.done.timings.gpuReadbackBytes, 20 * 4 * N_VOCAB);
  } finally {
    await engine.unload();
  }
  await assert.rejects(Wick.load(stories, { device: 'gpu', gpuTopK: 'yes' }), { code: 'E_INVALID_ARG' });
});
