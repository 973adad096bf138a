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

async function forwardOf(file, nCtx = 256, software = true, decodeKernel = 'auto') {
  const { model, tensors } = loadModel(M, file);
  const f = await backend.GpuForward.create(device, { tensors, heap, dequantize, nCtx, software, decodeKernel });
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

test("a hardware adapter's plan (matmul.wgsl's tiled product and one-token kernel): mini-q4_k_m's logits match too", { timeout: 300000 }, async () => {
  // SwiftShader runs this plan about 30 times slower than its own: the prompt and two steps only
  const ref = loadReference('mini-q4_k_m.json');
  const { f } = await forwardOf(path.join(models, 'mini', 'mini-q4_k_m.gguf'), 128, false);
  try {
    // batches through the tiled product, 256 tokens at a time
    assert.equal(f.matmulEntry, 'main_gemm');
    assert.equal(f.B, 128);
    // decode steps through the one-token kernel: its subgroup variant where the device has subgroups
    assert.equal(f.decodeKernel, device.features.has('subgroups') ? 'mv_sg' : 'mv');
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

// the one-token kernels (matmul.wgsl main_mv, main_mv3 with q, k and v in one dispatch and
// main_mv_glu, the RMS norms folded into both; their _sg variants, and their int8 variants _q8) in
// the software plan: the prompt through main, each greedy step through the decode kernel; files
// whose layers differ where those kernels do: q4_K q/k with Q6_K v (q4_k_m), biases on q, k and v and
// NEOX rotation (qwen2), per-head q/k norms (qwen3), GELU, post norms and a sliding window (gemma3),
// Q4_0, Q8_0 and Q5_K throughout, F16. The kernels themselves are checked on every GPU type by
// gpu-kernels.test.mjs.
const INT8 = await backend.int8Supported(device);
const DECODE_FILES = {
  mv: ['mini/mini-q4_k_m', 'families/mini-gemma3-q4_k_m'],
  mv_sg: ['mini/mini-q4_0', 'mini/mini-qwen2-q4_k_m', 'families/mini-qwen3-f16'],
  mv_q8: ['mini/mini-q5_k_m', 'families/mini-gemma3-q4_k_m'],
  mv_q8_sg: ['mini/mini-q8_0'],
};
// the prompt and the first DECODE_STEPS greedy steps (SwiftShader runs these kernels' barriers
// slowly: the int8 ones took 50–80 s a file for every step of the references)
const DECODE_STEPS = 3;
for (const [decodeKernel, names] of Object.entries(DECODE_FILES)) {
  if (decodeKernel.endsWith('_sg') && !device.features.has('subgroups')) continue;
  if (decodeKernel.includes('_q8') && !INT8) continue;
  test(`the decode kernel ${decodeKernel}: greedy steps of ${names.length} files match llama.cpp's`, { timeout: 300000 }, async () => {
    const problems = [];
    for (const file of names) {
      const name = path.basename(file);
      const ref = loadReference(`${name}.json`);
      const { f } = await forwardOf(path.join(models, `${file}.gguf`), 128, true, decodeKernel);
      try {
        assert.equal(f.decodeKernel, decodeKernel);
        // the int8 kernels take the quantized matrices: most of these files' weights (not the F16
        // file's, nor gemma3's matrices in types converted to F32 at load: 27% of its weights)
        const share = f.structure().int8WeightShare;
        if (decodeKernel.includes('_q8') && !name.endsWith('f16')) assert.ok(share > 0.7, `${name}: ${share} of the weights through the int8 kernels`);
        else assert.equal(share, 0, name);
        const n = ref.prompt_tokens.length;
        const steps = [await f.eval(ref.prompt_tokens, 0, false)];
        const nSteps = Math.min(ref.greedy_step_logits.length, 1 + DECODE_STEPS);
        for (let s = 1; s < nSteps; s++) steps.push(await f.eval([ref.greedy_tokens[s - 1]], n + s - 1, false));
        problems.push(...compareRows(steps, ref.greedy_step_logits.slice(0, nSteps), toleranceFor(name), `${name} greedy`));
      } finally {
        f.destroy();
      }
    }
    assert.deepEqual(problems, []);
  });
}

test('the decode kernels past one attention chunk: a step at 300 positions through split attention equals the rows plan', { timeout: 300000 }, async () => {
  // both plans are f32 throughout: the same logits up to the order of the sums
  const file = path.join(models, 'mini', 'mini-q4_0.gguf');
  const prompt = Array.from({ length: 300 }, (_, i) => 1 + ((i * 7919) % 200));
  const last = [];
  for (const decodeKernel of ['rows', 'mv']) {
    const { f } = await forwardOf(file, 512, true, decodeKernel);
    try {
      await f.eval(prompt, 0, false);
      last.push(await f.eval([5], 300, false));
    } finally {
      f.destroy();
    }
  }
  const [ref, ...others] = last;
  const scale = Math.max(...ref.map(Math.abs));
  for (const got of others) {
    let worst = 0;
    for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]));
    assert.ok(worst <= 1e-4 * scale, `largest difference ${worst} (largest logit ${scale})`);
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

// the hybrids' state across calls, as the external context drives it (src/wick.h WICK_OP_TRIM and
// WICK_OP_SNAPSHOT): a prompt cut into batches (of 5 here, the evaluation's own chunks) equals the
// prompt at once; a trim to a snapshot gives the same logits again; a trim to 0 and a new
// evaluation from 0 start afresh; a trim anywhere else, or an evaluation that skips positions, is refused
for (const name of ['mini-lfm2-f16', 'mini-qwen35-q8_0']) {
  test(`${name}: the recurrent state on the GPU goes on, is restored from a snapshot and starts again at 0`, { timeout: 300000 }, async () => {
    const ref = loadReference(`${name}.json`);
    const { tensors } = loadModel(M, path.join(models, 'families', `${name}.gguf`));
    const f = await backend.GpuForward.create(device, { tensors, heap, dequantize, nCtx: 64, maxBatch: 5, software: true });
    try {
      assert.equal(f.recurrent, true);
      assert.ok(f.stateBytes > 0);
      const tol = toleranceFor(name), n = ref.prompt_tokens.length, V = ref.n_vocab, cut = 7;
      const rowsOf = (logits) => Array.from({ length: logits.length / V }, (_, i) => logits.subarray(i * V, (i + 1) * V));
      // the prompt in two evaluations, a snapshot between them
      const head = rowsOf(await f.eval(ref.prompt_tokens.slice(0, cut), 0, true));
      f.snapshot(1);
      const tail = rowsOf(await f.eval(ref.prompt_tokens.slice(cut), cut, true));
      const problems = compareRows([...head, ...tail], ref.prompt_logits, tol, 'prompt in two');
      const step = await f.eval([ref.greedy_tokens[0]], n, false);
      problems.push(...compareRows([step], ref.greedy_step_logits.slice(1, 2), tol, 'greedy step'));
      // back to the snapshot: the same tail again, bit for bit
      f.trim(cut);
      assert.equal(f.nPast, cut);
      const again = rowsOf(await f.eval(ref.prompt_tokens.slice(cut), cut, true));
      assert.deepEqual(again.map((r) => Array.from(r)), tail.map((r) => Array.from(r)), 'the tail after a trim to its snapshot');
      // the snapshot (at 7) survives a trim to 10, whose own position has none: refused
      assert.throws(() => f.trim(10), (e) => e.code === 'E_INVALID_ARG' && /no snapshot/.test(e.message));
      await assert.rejects(f.eval([ref.greedy_tokens[0]], n + 3, false), (e) => e.code === 'E_INVALID_ARG' && /recurrent state holds/.test(e.message));
      // a trim to 0, then the whole prompt: the reference's rows
      f.trim(0);
      problems.push(...compareRows(rowsOf(await f.eval(ref.prompt_tokens, 0, true)), ref.prompt_logits, tol, 'after a trim to 0'));
      assert.deepEqual(f.snapPos, [-1, -1], 'the snapshots of later positions are forgotten');
      // an evaluation from 0 without a trim starts afresh too (a new conversation)
      await f.eval([ref.greedy_tokens[0]], n, false);
      problems.push(...compareRows([(await f.eval(ref.prompt_tokens, 0, false))], [ref.prompt_logits[n - 1]], tol, 'from 0 again'));
      assert.deepEqual(problems, []);
    } finally {
      f.destroy();
    }
  });
}
