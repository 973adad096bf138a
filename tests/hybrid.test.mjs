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

async function collect(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const last = chunks.pop();
  return { text: chunks.map((c) => c.choices[0].delta.content).join(''), last, chunks };
}

for (const [arch, file] of [['qwen35', qwen35Path], ['lfm2', lfm2Path], ['granitehybrid', graniteHybridPath]]) {
  test(`${arch}: chat turns over the recurrent state (only the new part evaluated; regenerate; abort) answer as a fresh engine does`, { timeout: 120000 }, async () => {
    const e = await Wick.load(file, { threads: 1, contextSize: 512 });
    const fresh = await Wick.load(file, { threads: 1, contextSize: 512 });
    try {
      assert.equal(e.info.architecture ?? e.info.model?.architecture ?? arch, arch);
      assert.equal(e.info.stateBytes, 3 * stateBytes[arch], 'the state and its two snapshots');
      const ask = (engine, messages, extra = {}) =>
        engine.chat.completions.create({ messages, max_tokens: 6, temperature: 0, chat_template: templates[arch], ...extra });
      const messages = [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Tell me a story.' }];
      // the tokens of a conversation without the template's answer prompt: where the glue asks
      // the engine to keep the state (the next turn renders the answer prompt anew)
      const historyTokens = async (msgs) =>
        (await e.tokenize(await e.applyChatTemplate(msgs, { template: templates[arch], addGenerationPrompt: false }), { addBos: true, special: true })).length;
      const turns = [];
      for (const [k, question] of ['Another one.', 'And a third.'].entries()) {
        const history = await historyTokens(messages);
        const r = await ask(e, messages);
        turns.push({ ...r.timings, history });
        // a fresh engine given the same conversation answers the same (greedy)
        const f = await ask(fresh, messages);
        assert.equal(r.choices[0].message.content, f.choices[0].message.content, `turn ${k + 1}: the answer differs from a fresh engine's`);
        messages.push({ role: 'assistant', content: r.choices[0].message.content }, { role: 'user', content: question });
      }
      const r3 = await ask(e, messages);
      turns.push({ ...r3.timings, history: await historyTokens(messages) });
      const f3 = await ask(fresh, messages);
      assert.equal(r3.choices[0].message.content, f3.choices[0].message.content, 'turn 3: the answer differs from a fresh engine\'s');
      // turns 2 and 3 evaluate only what follows the previous conversation: the previous answer
      // prompt (which this template may render anew), the answer and the new question
      for (const [k, t] of turns.entries()) {
        if (k === 0) { assert.equal(t.promptEvalTokens, t.promptTokens); continue; }
        const previous = turns[k - 1].history;
        assert.ok(t.cachedPromptTokens >= previous, `turn ${k + 1}: ${t.cachedPromptTokens} cached of the previous conversation's ${previous}`);
        assert.equal(t.promptEvalTokens, t.promptTokens - t.cachedPromptTokens);
      }
      assert.ok(turns[2].promptEvalTokens < turns[2].promptTokens / 2, `turn 3: ${turns[2].promptEvalTokens} of ${turns[2].promptTokens} evaluated`);
      // regenerate: the same conversation again goes back to the snapshot before its last token
      const again = await ask(e, messages);
      assert.equal(again.timings.promptEvalTokens, 1);
      assert.equal(again.choices[0].message.content, r3.choices[0].message.content);
      // abort an answer after two chunks, then go on with the next turn
      const controller = new AbortController();
      let seen = 0;
      const stream = await ask(e, messages, { stream: true, max_tokens: 40, signal: controller.signal });
      for await (const c of stream) { if (c.choices?.[0]?.delta?.content !== undefined && ++seen === 2) controller.abort(); }
      messages.push({ role: 'assistant', content: r3.choices[0].message.content }, { role: 'user', content: 'Thanks.' });
      const r4 = await ask(e, messages);
      const f4 = await ask(fresh, messages);
      assert.equal(r4.choices[0].message.content, f4.choices[0].message.content, 'after an abort, the next turn differs from a fresh engine\'s');
      assert.ok(r4.timings.promptEvalTokens < r4.timings.promptTokens / 2, `after the abort ${r4.timings.promptEvalTokens} of ${r4.timings.promptTokens} evaluated`);
    } finally {
      await e.unload();
      await fresh.unload();
    }
  });
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
