// tests/gpu-forward.test.mjs — the WebGPU forward pass (wasm_glue/gpu/backend.mjs) on SwiftShader
// under Node, against llama.cpp's logits in ../shared/reference: every mini and families model
// whose family the GPU path runs (the prompt as one batch, every row; then the greedy tokens one
// at a time), with ../shared/README.md's tolerances; and stories260K's 240 greedy tokens exactly.
// The hybrids (lfm2's short convolution, qwen35's gated DeltaNet: recurrent.wgsl) keep their state
// on the GPU: it goes on from one evaluation to the next, is restored from a snapshot by a trim to
// that position, and starts again at position 0, as the CPU context's does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { models, loadReference, toleranceFor, compareRows, argmax } from './helpers.mjs';
import { backend, loadEngine, gpuDevice, dequantizer, loadModel } from './gpu-helpers.mjs';

const M = await loadEngine();
const { device } = await gpuDevice();
const dequantize = dequantizer(M);
const heap = () => M.HEAPU8;

async function forwardOf(file, nCtx = 256, software = true) {
  const { model, tensors } = loadModel(M, file);
  const f = await backend.GpuForward.create(device, { tensors, heap, dequantize, nCtx, software });
  return { f, model, tensors };
}

const files = [
  ...fs.readdirSync(path.join(models, 'mini')).filter((n) => n.endsWith('.gguf')).map((n) => path.join(models, 'mini', n)),
  ...fs.readdirSync(path.join(models, 'families')).filter((n) => n.endsWith('.gguf')).map((n) => path.join(models, 'families', n)),
];
for (const file of files) {
  const name = path.basename(file, '.gguf');
  const refFile = `${name}.json`;
  if (!fs.existsSync(path.join(models, '..', 'reference', refFile))) continue; // mini-chat: no reference (tested by the chat suites)
  test(`GPU logits of ${name} match llama.cpp's`, { timeout: 300000 }, async () => {
    const ref = loadReference(refFile);
    const { f } = await forwardOf(file);
    try {
      const tol = toleranceFor(name);
      const n = ref.prompt_tokens.length, V = ref.n_vocab;
      const logits = await f.eval(ref.prompt_tokens, 0, true);
      const rows = Array.from({ length: n }, (_, i) => logits.subarray(i * V, (i + 1) * V));
      const problems = compareRows(rows, ref.prompt_logits, tol, `${name} prompt`);
      const steps = [];
      for (let s = 0; s < ref.greedy_step_logits.length; s++) {
        if (s > 0) steps.push(await f.eval([ref.greedy_tokens[s - 1]], n + s - 1, false));
        else steps.push(rows[n - 1]);
      }
      problems.push(...compareRows(steps, ref.greedy_step_logits, tol, `${name} greedy`));
      assert.deepEqual(problems, []);
    } finally {
      f.destroy();
    }
  });
}

test("a hardware adapter's plan (matmul.wgsl's workgroup-per-row entry point): mini-q4_k_m's logits match too", { timeout: 300000 }, async () => {
  // SwiftShader runs this plan about 30 times slower than its own: the prompt and two steps only
  const ref = loadReference('mini-q4_k_m.json');
  const { f } = await forwardOf(path.join(models, 'mini', 'mini-q4_k_m.gguf'), 128, false);
  try {
    assert.equal(f.matmulEntry, 'main_wg');
    const n = ref.prompt_tokens.length, V = ref.n_vocab;
    const logits = await f.eval(ref.prompt_tokens, 0, true);
    const rows = Array.from({ length: n }, (_, i) => logits.subarray(i * V, (i + 1) * V));
    const steps = [rows[n - 1], await f.eval([ref.greedy_tokens[0]], n, false), await f.eval([ref.greedy_tokens[1]], n + 1, false)];
    const problems = [
      ...compareRows(rows, ref.prompt_logits, toleranceFor('mini-q4_k_m'), 'prompt'),
      ...compareRows(steps, ref.greedy_step_logits.slice(0, 3), toleranceFor('mini-q4_k_m'), 'greedy'),
    ];
    assert.deepEqual(problems, []);
  } finally {
    f.destroy();
  }
});

test('stories260K: the 240 greedy tokens on the GPU path are the published ones', { timeout: 600000 }, async () => {
  const ref = loadReference('stories260K.json');
  const { f } = await forwardOf(path.join(models, 'stories260K.gguf'), 512);
  try {
    let logits = await f.eval(ref.prompt_tokens, 0, false);
    const got = [];
    let pos = ref.prompt_tokens.length;
    for (let i = 0; i < ref.greedy_tokens.length; i++) {
      const tok = argmax(logits);
      got.push(tok);
      if (i + 1 < ref.greedy_tokens.length) logits = await f.eval([tok], pos++, false);
    }
    assert.deepEqual(got, ref.greedy_tokens);
    // one submission and one logits row read back per decoded token
    assert.equal(f.stats.submissions, ref.greedy_tokens.length);
    assert.equal(f.stats.readbackBytes, ref.greedy_tokens.length * 4 * ref.n_vocab);
  } finally {
    f.destroy();
  }
});
