// tests/hybrid.test.mjs — the hybrid models (qwen35: gated DeltaNet; lfm2: short convolutions;
// granitehybrid: Mamba-2, a synth file) through the JavaScript API, with their real chat templates
// (llama.cpp's models/templates/Qwen3.5-4B.jinja, LFM2.5-Instruct.jinja and
// ibm-granite-granite-4.0.jinja from the source bundle node-llama-cpp ships): the
// recurrent state's size in the load info; a three-turn chat that evaluates only what is new and
// answers as a fresh engine given the whole conversation does; regenerate going back to the
// snapshot before the answer; an aborted answer followed by a turn that still answers as a fresh
// engine does; and a conversation past the context window that keeps producing text with the
// re-evaluation reported. (tests/test_state.c checks the same against logits, in C.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick } from '../wasm_glue/wick.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { models, runWick, shared } from './helpers.mjs';
import { chatTurnsAnswerAsFresh } from './chat-turns.mjs';

const qwen35Path = path.join(models, 'families', 'mini-qwen35-q8_0.gguf');
const lfm2Path = path.join(models, 'families', 'mini-lfm2-q8_0.gguf');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-hybrid-'));
const graniteHybridPath = path.join(tmp, 'mini-granite-hybrid-q8_0.gguf');
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const templates = {};
before(() => {
  [templates.qwen35, templates.lfm2, templates.granitehybrid] = readLlamaBundle(['models/templates/Qwen3.5-4B.jinja',
    'models/templates/LFM2.5-Instruct.jinja', 'models/templates/ibm-granite-granite-4.0.jinja']).map((b) => b.toString('utf8'));
  const r = runWick('native', ['synth', '--shape', 'mini', '--type', 'q8_0', '--arch', 'granite-hybrid', '-o', graniteHybridPath,
    '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
  assert.equal(r.code, 0, r.stderr);
});

// the per-sequence state of the mini files (wick info's state_bytes): the context keeps it and two snapshots
// (granitehybrid: 3 Mamba-2 layers of 3 conv inputs of x | B | C = 512 + 2·2·16, and 512 × 16 states)
const stateBytes = { qwen35: 3 * (3 * 256 + 4 * 32 * 32) * 4, lfm2: 3 * 2 * 256 * 4, granitehybrid: 3 * (3 * 576 + 512 * 16) * 4 };

for (const [arch, file] of [['qwen35', qwen35Path], ['lfm2', lfm2Path], ['granitehybrid', graniteHybridPath]]) {
  test(`${arch}: chat turns over the recurrent state (only the new part evaluated; regenerate; abort) answer as a fresh engine does`, { timeout: 120000 }, () =>
    chatTurnsAnswerAsFresh(file, templates[arch], { arch, stateBytes: 3 * stateBytes[arch] }));
}

test('qwen35: a conversation past the context window keeps producing text, the kept tokens evaluated again', { timeout: 120000 }, async () => {
  const e = await Wick.load(qwen35Path, { threads: 1, contextSize: 64 });
  try {
    const chunks = [];
    let final = null;
    for await (const c of e.generate('Once upon a time there was a', { maxTokens: 150, temperature: 0, ignoreEos: true })) {
      if (c.done) final = c;
      else chunks.push(c);
    }
    const t = final.timings;
    assert.equal(t.generatedTokens, 150);
    assert.ok(t.contextShiftedTokens > 0, 'the window filled');
    assert.ok(t.contextReevaluatedTokens > 0, 'the kept tokens were evaluated again (a recurrent state cannot shift)');
    const marked = chunks.filter((c) => c.reevaluated > 0);
    assert.ok(marked.length >= 2, `${marked.length} chunks report a re-evaluation`);
    assert.ok(marked.every((c) => c.shifted > 0), 'each re-evaluation is reported with the tokens it dropped');
    assert.ok(t.contextUsed <= 64);
  } finally {
    await e.unload();
  }
});
