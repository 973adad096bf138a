// tests/gpu-verify.test.mjs — device 'auto' proves the GPU path before it takes it (issue 31,
// acceptance 1), under Node on SwiftShader (gpuAllowSoftware: true makes auto consider it): the
// check compares the GPU's logits with the CPU's and times both (wasm_glue/gpu/verify.mjs,
// gpu/verify.mjs gpuVerdict). The test hooks (load option gpuTestHooks, tests only) make the GPU slow
// (a wait per queue submission) or faulty (a wrong scale in one matrix product), or put a NaN
// into one evaluation's logits; cpuDelayMs makes the CPU slow in the check, since on SwiftShader
// the GPU path is far slower than the CPU and would otherwise never be chosen on speed.
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick } from '../wasm_glue/wick.mjs';
import * as verify from '../wasm_glue/gpu/verify.mjs';
import { models, root, loadReference, collect } from './helpers.mjs';

process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
const stories = path.join(models, 'stories260K.gguf');
const mini = path.join(models, 'mini', 'mini-q8_0.gguf');
const ref = loadReference('stories260K.json');
const auto = { threads: 1, device: 'auto', gpuAllowSoftware: true, contextSize: 256 };
// 400 ms per token the CPU evaluates in the check: 2.5 tokens/s, which SwiftShader's GPU path
// beats; the check then waits 20 × 400 ms = 8 s
const SLOW_CPU = { cpuDelayMs: 400 };
const SLOW_CPU_WAIT_MS = (verify.VERIFY_PROMPT_TOKENS + verify.VERIFY_DECODE_STEPS) * SLOW_CPU.cpuDelayMs;


async function withEngine(file, options, fn) {
  const engine = await Wick.load(file, options);
  try {
    return await fn(engine);
  } finally {
    await engine.unload();
  }
}

const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1)); // verify.mjs's figures in a reason

test('the comparison: the shared tolerance by weight types, the argmax where the gap is clear, NaN a mismatch', () => {
  assert.equal(verify.toleranceForTypes([0, 1]), 0.002);
  assert.equal(verify.toleranceForTypes([0, 30]), 0.01);
  assert.equal(verify.toleranceForTypes([0, 8, 12]), 0.05);
  const cpu = Float32Array.from({ length: 64 }, (_, i) => Math.sin(i) + (i === 7 ? 5 : 0));
  assert.deepEqual(verify.compareLogits([cpu], [cpu.slice()], 0.002).problems, []);
  const swapped = cpu.slice();
  swapped[7] = cpu[8];
  swapped[8] = cpu[7];
  const c = verify.compareLogits([cpu], [swapped], 0.5);
  assert.equal(c.argmaxChecked, 1);
  assert.equal(c.argmaxAgree, 0);
  assert.match(c.problems.join(), /argmax 8 ≠ the CPU's 7/);
  const nan = cpu.slice();
  nan[3] = NaN;
  assert.match(verify.compareLogits([cpu], [nan], 0.5).problems.join(), /logit 3 is NaN/);
  // the version in a verdict's key is the package's
  assert.equal(verify.WICK_VERSION, JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version);
});

test('a simulated faulty GPU (a wrong scale in one matrix product, or a NaN) fails the check: auto keeps the CPU and names the mismatch', { timeout: 300000 }, async () => {
  await withEngine(stories, { ...auto, gpuTestHooks: { perturb: 'matmul-scale' } }, async (engine) => {
    const d = engine.device, v = d.verify;
    assert.equal(d.type, 'cpu');
    assert.equal(v.correct, false);
    assert.equal(v.chosen, false);
    assert.equal(v.rows, verify.VERIFY_PROMPT_TOKENS + verify.VERIFY_DECODE_STEPS);
    assert.equal(v.tolerance, 0.002);
    assert.ok(v.relRms > v.tolerance, `relative RMS ${v.relRms}`);
    assert.match(d.reason, /logits do not match the CPU path's/);
    assert.match(d.reason, /relative RMS [\d.]+% > 0\.2%/);
    assert.match(d.reason, /swiftshader/i);
    // the CPU path it kept gives the reference text
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 60 }));
    assert.ok(ref.greedy_text.startsWith(r.text) && r.text.length > 100, r.text);
  });
  // a NaN in the third evaluation (the prompt's: the check's warm-up is the first)
  await withEngine(stories, { ...auto, gpuTestHooks: { nanAtStep: 3 } }, async (engine) => {
    assert.equal(engine.device.type, 'cpu');
    assert.equal(engine.device.verify.correct, false);
    assert.match(engine.device.reason, /logit \d+ is NaN/);
  });
});

test('a simulated slow GPU (a wait per queue submission) loses on speed: auto keeps the CPU with both speeds in the reason', { timeout: 300000 }, async () => {
  // the CPU made slow too, so that it is the GPU's wait that decides (the next test: without the
  // wait the same slow CPU loses to the GPU)
  await withEngine(stories, { ...auto, gpuTestHooks: { ...SLOW_CPU, submitDelayMs: 1000 } }, async (engine) => {
    const d = engine.device, v = d.verify;
    assert.equal(d.type, 'cpu');
    assert.equal(v.correct, true, d.reason);
    assert.equal(v.faster, false);
    assert.ok(v.gpu.decodeMs >= verify.VERIFY_DECODE_STEPS * 1000, `GPU decode ${v.gpu.decodeMs} ms`);
    assert.ok(v.cpu.decodeTps > v.gpu.decodeTps);
    assert.match(d.reason, /the GPU path is slower on this adapter/);
    assert.ok(d.reason.includes(`decode ${fmt(v.gpu.decodeTps)} tokens/s on the GPU against ${fmt(v.cpu.decodeTps)} on the CPU`), d.reason);
    assert.ok(d.reason.includes(`prefill ${fmt(v.gpu.prefillTps)} against ${fmt(v.cpu.prefillTps)}`), d.reason);
  });
});

test('a correct GPU passes the check; it is taken when also faster, and the verdict is reused on the next load', { timeout: 300000 }, async () => {
  // as it is: correct, and on SwiftShader slower than the CPU (the choice follows the speed)
  await withEngine(stories, auto, async (engine) => {
    const d = engine.device, v = d.verify;
    assert.equal(v.correct, true, d.reason);
    assert.deepEqual(v.problems, []);
    assert.ok(v.relRms <= 0.002, `relative RMS ${v.relRms}`);
    assert.ok(v.argmaxChecked > 0 && v.argmaxAgree === v.argmaxChecked);
    assert.equal(v.reused, false);
    assert.ok(v.checkMs > 0);
    assert.equal(d.type, v.faster ? 'gpu' : 'cpu');
    if (!v.faster) assert.match(d.reason, /slower/);
  });
  // with the CPU made slow: correct and faster, so auto takes the GPU, which then generates right
  await withEngine(stories, { ...auto, gpuTestHooks: SLOW_CPU }, async (engine) => {
    const d = engine.device, v = d.verify;
    assert.equal(d.type, 'gpu', d.reason || JSON.stringify(v));
    assert.equal(v.correct, true);
    assert.equal(v.faster, true);
    assert.equal(v.chosen, true);
    assert.ok(v.gpu.decodeTps > v.cpu.decodeTps && v.gpu.prefillTps > v.cpu.prefillTps);
    assert.equal(v.reused, false);
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 }));
    assert.equal(r.text, ref.greedy_text);
  });
  // the next load: the verdict kept in this process, no second check (no time spent checking)
  const t0 = performance.now();
  await withEngine(stories, { ...auto, gpuTestHooks: SLOW_CPU }, async (engine) => {
    const v = engine.device.verify;
    assert.equal(engine.device.type, 'gpu');
    assert.equal(v.reused, true);
    assert.equal(v.checkMs, 0);
    assert.equal(v.chosen, true);
    // a check would have waited 8 s on its slow CPU alone: this whole load took less
    assert.ok(performance.now() - t0 < SLOW_CPU_WAIT_MS, `the load took ${performance.now() - t0} ms`);
    // the kept verdict was found from the file's header, before the weights were read: so they
    // went to the GPU only (one copy), and the answer is the same
    assert.equal(v.byHeader, true);
    assert.match(v.header, /^[0-9a-f]{8}$/);
    assert.ok(engine.info.jsBytes > 0, `the token embeddings are held in JS, the matrices on the GPU only (jsBytes ${engine.info.jsBytes})`);
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 }));
    assert.equal(r.text, ref.greedy_text);
  });
  // gpuVerify 'always' checks again; 'never' takes the GPU without a check, as device 'gpu' does
  await withEngine(stories, { ...auto, gpuVerify: 'always', gpuTestHooks: SLOW_CPU }, async (engine) => {
    assert.equal(engine.device.verify.reused, false);
    assert.ok(engine.device.verify.checkMs > 0);
  });
  for (const options of [{ ...auto, gpuVerify: 'never' }, { ...auto, device: 'gpu' }])
    await withEngine(stories, options, async (engine) => {
      assert.equal(engine.device.type, 'gpu');
      assert.equal(engine.device.verify, undefined);
    });
});

test('the verdict is kept per model hash (the saved states\' hash), and in a file with gpuVerdictFile', { timeout: 300000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-verdicts-'));
  const file = path.join(dir, 'verdicts.json');
  try {
    const first = await withEngine(stories, { ...auto, gpuVerdictFile: file }, (e) => e.device.verify);
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')).verdicts;
    assert.equal(stored.length, 1);
    assert.deepEqual(stored[0].key, first.key);
    assert.equal(stored[0].verdict.correct, true);
    // the key: adapter, Node's version, wick's version, the shaders, the model file, the CPU build
    assert.match(first.key.adapter, /swiftshader/i);
    assert.equal(first.key.agent, `node ${process.version}`);
    assert.equal(first.key.wick, verify.WICK_VERSION);
    assert.match(first.key.shaders, /^[0-9a-f]{8}$/);
    // the model's hash is the one a saved state carries (src/state.c, u64 at byte 16)
    const blob = await withEngine(stories, { threads: 1, contextSize: 256 }, (e) => e.saveState());
    assert.equal(first.key.model, new DataView(blob.buffer, blob.byteOffset).getBigUint64(16, true).toString(16).padStart(16, '0'));
    // a fresh process would read it from the file: the in-process store is bypassed with the option
    const again = await withEngine(stories, { ...auto, gpuVerdictFile: file }, (e) => e.device.verify);
    assert.equal(again.reused, true);
    assert.equal(again.checkMs, 0);
    // another model file: another hash, a new check, kept beside the first
    const other = await withEngine(mini, { ...auto, gpuVerdictFile: file }, (e) => e.device.verify);
    assert.equal(other.reused, false);
    assert.notEqual(other.key.model, first.key.model);
    assert.equal(other.correct, true, other.reason || JSON.stringify(other.problems));
    assert.equal(other.tolerance, 0.05);
    assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).verdicts.length, 2);
    const otherAgain = await withEngine(mini, { ...auto, gpuVerdictFile: file }, (e) => e.device.verify);
    assert.equal(otherAgain.reused, true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a NaN in the logits mid-generation ends that answer with E_GPU; the next answer is the CPU\'s reference text', { timeout: 300000 }, async () => {
  await withEngine(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 512, gpuTestHooks: { nanAtStep: 6 } }, async (engine) => {
    assert.equal(engine.device.type, 'gpu');
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: 200 })) if (!c.done) chunks++;
    }, (e) => e.code === 'E_GPU' && /logit of NaN/.test(e.message) && /switched to the CPU/.test(e.message));
    // the prompt is evaluation 1, each token after the first draw one more: the 6th gives NaN
    assert.equal(chunks, 4);
    assert.equal(engine.device.type, 'cpu');
    assert.match(engine.device.reason, /GPU failed.*NaN/);
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 }));
    assert.equal(r.text, ref.greedy_text);
  });
});

test('the relaxed-SIMD build: the check\'s CPU context rewrites Q4_K weights in place, and the GPU path it then takes still embeds right', { timeout: 300000 }, () => {
  // a child Node with relaxed SIMD (the host then loads the mt-relaxed build): the same greedy
  // tokens from device 'gpu' (no CPU context ever) and from auto after a check (CPU made slow)
  const script = `
    import { Wick } from ${JSON.stringify(new URL('../wasm_glue/wick.mjs', import.meta.url).href)};
    const run = async (opts) => {
      const e = await Wick.load(${JSON.stringify(path.join(models, 'mini', 'mini-q4_k_m.gguf'))}, { threads: 1, contextSize: 256, gpuAllowSoftware: true, ...opts });
      const tokens = [];
      for await (const c of e.generate('Once upon a time', { temperature: 0, maxTokens: 12, ignoreEos: true })) if (!c.done) tokens.push(...c.tokens);
      const r = { build: e.info.build, type: e.device.type, verify: e.device.verify || null, tokens };
      await e.unload();
      return r;
    };
    console.log(JSON.stringify([await run({ device: 'gpu' }), await run({ device: 'auto', gpuTestHooks: ${JSON.stringify(SLOW_CPU)} })]));`;
  const r = spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 240000, env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const [gpu, auto] = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(gpu.build, 'mt-relaxed');
  assert.equal(auto.type, 'gpu', auto.verify?.reason);
  assert.equal(auto.verify.correct, true);
  assert.equal(gpu.tokens.length, 12);
  assert.deepEqual(auto.tokens, gpu.tokens);
});

test('gpuVerify, gpuVerdictFile and gpuTestHooks are checked', async () => {
  await assert.rejects(Wick.load(stories, { device: 'auto', gpuVerify: 'sometimes' }), { code: 'E_INVALID_ARG' });
  await assert.rejects(Wick.load(stories, { device: 'auto', gpuVerdictFile: 3 }), { code: 'E_INVALID_ARG' });
  await assert.rejects(Wick.load(stories, { device: 'auto', gpuTestHooks: { faster: true } }), (e) => e.code === 'E_INVALID_ARG' && /unknown hook faster/.test(e.message));
  await assert.rejects(Wick.load(stories, { device: 'auto', gpuTestHooks: { perturb: 'rope' } }), { code: 'E_INVALID_ARG' });
});
