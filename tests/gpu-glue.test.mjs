// tests/gpu-glue.test.mjs — the WebGPU path through the public API under Node (Wick.load with
// `device`, the worker driving an external context, SwiftShader through the npm package webgpu):
// stories260K's greedy text and mini logits-driven generation as on the CPU, `auto` refusing the
// software adapter with a reason, the hybrids' chat turns over their recurrent state on the GPU
// (snapshots and trims through the external context) answering as the CPU does, a family the GPU
// path does not run, a device lost in the middle of a generation falling back to the CPU,
// where the next answer is right, and saved states refused with the reason (the page keeps the
// conversation without one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick, WickError } from '../wasm_glue/wick.mjs';
import { models, loadReference, greedyText, runWick, shared, collect } from './helpers.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { chatTurnsAnswerAsFresh } from './chat-turns.mjs';

// WICK_GPU_REAL=1 (npm run check:gpu-real on a machine with a GPU): the system's Vulkan driver instead
if (process.env.WICK_GPU_REAL !== '1') process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
const realGpu = process.env.WICK_GPU_REAL === '1';
const stories = path.join(models, 'stories260K.gguf');
const ref = loadReference('stories260K.json');


test('device gpu (software adapter allowed): stories260K greedy text equals the reference, one answer after another', { timeout: 300000 }, async () => {
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 512 });
  try {
    assert.equal(engine.device.type, 'gpu');
    if (realGpu) assert.equal(engine.device.software, false);
    else {
      assert.match(engine.device.adapter, /swiftshader/i);
      assert.equal(engine.device.software, true);
    }
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 }));
    assert.equal(r.text, ref.greedy_text);
    assert.equal(r.done.finishReason, 'length');
    // the same prompt again reuses the GPU's cache (one token evaluated) and gives the same text
    const again = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 40 }));
    assert.equal(again.done.timings.promptEvalTokens, 1);
    assert.equal(again.text, greedyText(40));
  } finally {
    await engine.unload();
  }
});

test('device gpu: a grammar and stop strings work on the GPU path (sampling stays in C)', { timeout: 300000 }, async () => {
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 256 });
  try {
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 60, stop: ['Lily'] }));
    assert.equal(r.done.finishReason, 'stop');
    assert.equal(r.text, ref.greedy_text.slice(0, ref.greedy_text.indexOf('Lily')));
    const g = await collect(engine.generate('Once upon a time', { temperature: 0.8, seed: 7, maxTokens: 20, grammar: 'root ::= " there" (" was" | " is") " a"' }));
    assert.match(g.text, /^ there (was|is) a$/);
    assert.equal(g.done.finishReason, 'grammar');
  } finally {
    await engine.unload();
  }
});

test("device auto on SwiftShader takes the CPU and says why", { timeout: 120000, skip: realGpu && 'a real adapter (WICK_GPU_REAL=1): auto may take it' }, async () => {
  const engine = await Wick.load(stories, { threads: 1, device: 'auto' });
  try {
    assert.equal(engine.device.type, 'cpu');
    assert.match(engine.device.reason, /software/i);
    assert.match(engine.device.reason, /swiftshader/i);
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 30 }));
    assert.equal(r.text, greedyText(30));
  } finally {
    await engine.unload();
  }
  // without the option, device stays 'cpu'
  const cpu = await Wick.load(stories, { threads: 1 });
  assert.deepEqual(cpu.device, { type: 'cpu', reason: 'asked for' });
  await cpu.unload();
});

// the hybrids on the GPU (recurrent.wgsl, the state in GPU buffers): a chat of four turns resumes
// from the state's snapshots (WICK_OP_SNAPSHOT, WICK_OP_TRIM), regenerates from the snapshot before
// the answer, survives an abort, and answers as a CPU engine given the whole conversation does
const hybridTemplates = { lfm2: 'LFM2.5-Instruct.jinja', qwen35: 'Qwen3.5-4B.jinja' };
for (const [arch, template] of Object.entries(hybridTemplates)) {
  test(`device gpu: ${arch}'s chat turns over the recurrent state on the GPU answer as the CPU does`, { timeout: 600000 }, async () => {
    const [text] = readLlamaBundle([`models/templates/${template}`]);
    await chatTurnsAnswerAsFresh(path.join(models, 'families', `mini-${arch}-f16.gguf`), text.toString('utf8'),
      { arch, engineOptions: { device: 'gpu', gpuAllowSoftware: true } });
  });
}

test('a family the GPU path does not run: E_UNSUPPORTED when forced, the CPU with a reason under auto', { timeout: 120000 }, async () => {
  // granitehybrid's Mamba-2 layers run on the CPU only (a synth file: none in ../shared)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-mamba2-'));
  try {
    const file = path.join(dir, 'granite-hybrid.gguf');
    const r = runWick('native', ['synth', '--arch', 'granite-hybrid', '--shape', 'mini', '--type', 'q8_0', '-o', file,
      '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
    assert.equal(r.code, 0, r.stderr);
    await assert.rejects(Wick.load(file, { threads: 1, device: 'gpu', gpuAllowSoftware: true }), (e) => e.code === 'E_UNSUPPORTED' && /granitehybrid.*mamba2/.test(e.message));
    const engine = await Wick.load(file, { threads: 1, device: 'auto', gpuAllowSoftware: true });
    assert.equal(engine.device.type, 'cpu');
    assert.match(engine.device.reason, /granitehybrid family runs on the CPU only.*mamba2/);
    await engine.unload();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  await assert.rejects(Wick.load(stories, { device: 'tpu' }), { code: 'E_INVALID_ARG' });
});

test('an encoder (issue 28): E_UNSUPPORTED when forced, the CPU with the reason under auto, and it embeds there', { timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-encoder-'));
  try {
    const vocab = path.join(dir, 'vocab.gguf'), file = path.join(dir, 'bert.gguf');
    fs.writeFileSync(vocab, readLlamaBundle(['models/ggml-vocab-bert-bge.gguf'])[0]);
    const r = runWick('native', ['synth', '--arch', 'bert', '--shape', 'mini', '--type', 'f16', '--vocab', vocab, '-o', file]);
    assert.equal(r.code, 0, r.stderr);
    await assert.rejects(Wick.load(file, { threads: 1, device: 'gpu', gpuAllowSoftware: true }), (e) => e.code === 'E_UNSUPPORTED' && /encoder/.test(e.message));
    const engine = await Wick.load(file, { threads: 1, device: 'auto', gpuAllowSoftware: true });
    try {
      assert.equal(engine.device.type, 'cpu');
      assert.match(engine.device.reason, /encoder.*decoders only/);
      const [v] = await engine.embed(['a sentence to embed']);
      assert.equal(v.length, 256);
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'a normalized vector');
    } finally {
      await engine.unload();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a GPU device lost mid-generation: E_GPU, the engine goes on on the CPU and the next answer is right', { timeout: 300000 }, async () => {
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 512 });
  try {
    assert.equal(engine.device.type, 'gpu');
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: 200 })) {
        if (!c.done && ++chunks === 3) engine._loseGpuDevice();
      }
    }, (e) => e.code === 'E_GPU' && /switched to the CPU/.test(e.message));
    assert.ok(chunks >= 3);
    assert.equal(engine.device.type, 'cpu');
    assert.match(engine.device.reason, /GPU failed/);
    const r = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 }));
    assert.equal(r.text, ref.greedy_text);
  } finally {
    await engine.unload();
  }
});

// issue 30: the GPU path keeps its KV cache on the device and saves no state; saveState and
// loadState refuse with the reason (the page keeps the conversation without a state and says so,
// web/sessions.js saveConversation), and the engine goes on generating
test('device gpu: saveState and loadState refuse with E_UNSUPPORTED and the reason; the engine still generates', { timeout: 300000 }, async () => {
  const blob = await (async () => {
    const cpu = await Wick.load(stories, { threads: 1, contextSize: 256 });
    try {
      await collect(cpu.generate('Once upon a time', { temperature: 0, maxTokens: 4 }));
      return await cpu.saveState();
    } finally {
      await cpu.unload();
    }
  })();
  const engine = await Wick.load(stories, { threads: 1, device: 'gpu', gpuAllowSoftware: true, contextSize: 256 });
  try {
    assert.equal(engine.device.type, 'gpu');
    await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 8 }));
    const refusal = (e) => e instanceof WickError && e.code === 'E_UNSUPPORTED' && /GPU path keeps its cache on the device/.test(e.message) && /device: "cpu"/.test(e.message);
    await assert.rejects(engine.saveState(), refusal);
    await assert.rejects(engine.loadState(blob), refusal);
    await assert.rejects(engine.addPrefix(blob), refusal);
    // what the page does with it: the conversation without a state, the reason given
    const { saveConversation } = await import('../web/sessions.js');
    const saved = new Map();
    const store = { save: async (key, meta, state) => { saved.set(key, { meta, state }); } };
    const r = await saveConversation(store, engine, { modelKey: 'stories', scope: 'test', conversation: 'c1', model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(r.bytes, 0);
    assert.match(r.reason, /GPU path keeps its cache on the device/);
    assert.equal(saved.get(r.key).state, null);
    assert.deepEqual(saved.get(r.key).meta.messages, [{ role: 'user', content: 'Hi' }]);
    // the engine still generates, on the GPU, the reference text
    assert.equal(engine.device.type, 'gpu');
    const after = await collect(engine.generate('Once upon a time', { temperature: 0, maxTokens: 40 }));
    assert.equal(after.text, greedyText(40));
  } finally {
    await engine.unload();
  }
});
