// tests/state-save.test.mjs — saved sessions and shared prefixes through the JavaScript API
// (engine.saveState / loadState / addPrefix / savePrefix, src/state.c under them), on the wasm
// build in Node workers: a state saved after a 40-token conversation and loaded into another
// engine (another worker) gives the next message the same top-64 probabilities, bit for bit, and
// the same greedy continuation, with only the new message evaluated (timings.promptFromState 40),
// for an attention model, a sliding-window model and both hybrids; 300 mutated blobs are refused
// with a WickError each and the engine goes on exactly as before; a blob of another model is
// refused; a second chat with the same 200-token system prompt evaluates only its own tokens, in
// a fresh engine given the prefix's state too (and all of them with prefix_states: false); and
// `wick prefix` writes a state that an engine takes as a shared prefix.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick, WickError } from '../wasm_glue/wick.mjs';
import { models, root, runWick } from './helpers.mjs';

const families = path.join(models, 'families');
const FILES = ['mini-llama3-f16.gguf', 'mini-gemma3-f16.gguf', 'mini-lfm2-f16.gguf', 'mini-qwen35-f16.gguf'];
const engines = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-state-'));
after(async () => {
  await Promise.all(engines.map((e) => e.unload()));
  fs.rmSync(dir, { recursive: true, force: true });
});

async function load(file, options = {}) {
  const e = await Wick.load(file, { threads: 1, contextSize: 128, device: 'cpu', ...options });
  engines.push(e);
  return e;
}

const ids = (n, a, b, vocab) => Array.from({ length: n }, (_, i) => 3 + ((i * a + b) % (vocab - 3)));
const GREEDY = { temperature: 0, ignoreEos: true };

/** A generate run: its tokens, the probabilities of each draw (top 64) and its timings. */
async function run(engine, prompt, maxTokens) {
  const tokens = [], probs = [];
  let timings = null;
  for await (const c of engine.generate(prompt, { ...GREEDY, maxTokens, probs: 64 })) {
    if (c.done) timings = c.timings;
    else { tokens.push(...c.tokens); if (c.probs) probs.push(c.probs); }
  }
  return { tokens, probs, timings };
}

/** A blob changed in one of the ways a hostile or damaged one is (the check hash left as it is). */
function mutate(blob, r) {
  const b = blob.slice();
  switch (r % 5) {
    case 0: return b.subarray(0, (r * 7919) % b.length);
    case 1: b[(r * 104729) % b.length] ^= 1 + (r % 255); return b;
    case 2: b[16 + (r % 8)] ^= 0x5a; return b;                                 // the model hash
    case 3: new DataView(b.buffer).setUint32(40, 1 + r, true); return b;         // n_past
    default: return Uint8Array.from({ length: 16 + (r % 300) }, (_, i) => (i * 31 + r) & 255); // random bytes
  }
}

for (const [kvTypeK, kvTypeV] of [['q8_0', 'q8_0'], ['q4_0', 'f16']]) {
  test(`a quantized KV cache (keys ${kvTypeK}, values ${kvTypeV}): its state goes on in another engine bit for bit; an engine of another KV type refuses it`, async () => {
    const file = path.join(families, 'mini-gemma3-f16.gguf'), options = { kvTypeK, kvTypeV };
    const a = await load(file, options);
    const vocab = a.info.n_vocab;
    const prompt = ids(34, 104729, 17, vocab), next = ids(5, 7919, 5, vocab);
    const answer = await run(a, prompt, 7);
    const blob = await a.saveState();
    const conversation = [...prompt, ...answer.tokens.slice(0, 6), ...next];
    const ref = await run(a, conversation, 8);
    const b = await load(file, options);
    assert.deepEqual(await b.loadState(blob), { tokens: 40 });
    const got = await run(b, conversation, 8);
    assert.equal(got.timings.promptEvalTokens, 5);
    assert.deepEqual(got.tokens, ref.tokens);
    assert.deepEqual(got.probs, ref.probs, 'the same probabilities at every step, bit for bit');
    const f16 = await load(file);
    await assert.rejects(f16.loadState(blob), (e) => e instanceof WickError && /q8_0|q4_0/.test(e.message));
  });
}

for (const file of FILES) {
  test(`${file}: a state saved after a 40-token conversation goes on in another engine bit for bit, and hostile blobs are refused`, async () => {
    const a = await load(path.join(families, file));
    const vocab = a.info.n_vocab;
    const prompt = ids(34, 104729, 17, vocab), next = ids(5, 7919, 5, vocab);
    const answer = await run(a, prompt, 7); // 7 drawn, 6 evaluated: 40 positions
    const blob = await a.saveState();
    assert.ok(blob instanceof Uint8Array && blob.length > 1000, `a blob of ${blob.length} bytes`);
    const conversation = [...prompt, ...answer.tokens.slice(0, 6), ...next];
    const ref = await run(a, conversation, 8);
    assert.equal(ref.timings.promptEvalTokens, 5);

    const b = await load(path.join(families, file));
    assert.deepEqual(await b.loadState(blob), { tokens: 40 });
    const got = await run(b, conversation, 8);
    assert.equal(got.timings.promptEvalTokens, 5, 'only the new message is evaluated');
    assert.equal(got.timings.promptFromState, 40);
    assert.deepEqual(got.tokens, ref.tokens, 'the same greedy continuation');
    assert.deepEqual(got.probs, ref.probs, 'the same probabilities at every step, bit for bit');

    // 300 mutated blobs: each refused with a message, the engine then goes on as before
    const c = await load(path.join(families, file));
    await c.loadState(blob);
    const codes = new Set();
    for (let r = 1; r <= 300; r++) {
      await assert.rejects(c.loadState(mutate(blob, r)), (e) => {
        assert.ok(e instanceof WickError, String(e));
        assert.match(e.message, /saved state|state/);
        codes.add(e.code);
        return true;
      }, `mutation ${r}`);
    }
    assert.ok([...codes].every((x) => ['E_FORMAT', 'E_INVALID_ARG', 'E_UNSUPPORTED', 'E_CONTEXT_FULL'].includes(x)), [...codes].join());
    const after300 = await run(c, conversation, 8);
    assert.equal(after300.timings.promptEvalTokens, 5);
    assert.deepEqual(after300.tokens, ref.tokens);
    assert.deepEqual(after300.probs, ref.probs);

    // another model's engine refuses it
    const other = await load(path.join(families, file === FILES[0] ? FILES[1] : FILES[0]));
    await assert.rejects(other.loadState(blob), (e) => e instanceof WickError && /another model file|layers/.test(e.message));
    await Promise.all([a, b, c, other].map((e) => e.unload()));
  });
}

const SYSTEM = 'You are a careful assistant for a small public library. Answer in one short sentence, and say when you do not know. '.repeat(4);

for (const [file, template] of [['mini/mini-chat-q8_0.gguf', undefined],
  // the hybrid with a ChatML-shaped template (its file has none)
  ['families/mini-qwen35-f16.gguf', "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}</s>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"]]) {
  test(`${path.basename(file)}: a second chat with the same 200-token system prompt evaluates only its own tokens`, async () => {
    const e = await load(path.join(models, file), { contextSize: 512 });
    const prefix = await e.savePrefix({ system: SYSTEM }, { template });
    assert.ok(prefix.tokens >= 200, `the system prompt renders to ${prefix.tokens} tokens`);
    const chat = (engine, user, extra = {}) => engine.chat.completions.create({
      messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: user }], max_tokens: 3, temperature: 0, chat_template: template, ...extra });

    // a fresh engine given the prefix: its first chat evaluates only what follows the system prompt
    const f = await load(path.join(models, file), { contextSize: 512 });
    assert.deepEqual(await f.addPrefix(prefix.blob), { tokens: prefix.tokens });
    // (the second chat: at most its own tokens, as the first turn's cache may share more than the prefix)
    for (const [i, user] of ['Where are the maps kept?', 'Can I borrow three novels at once, please?'].entries()) {
      const r = await chat(f, user);
      const own = r.timings.promptTokens - prefix.tokens;
      if (i === 0) assert.equal(r.timings.promptEvalTokens, own, JSON.stringify(r.timings));
      else assert.ok(r.timings.promptEvalTokens <= own && r.timings.promptEvalTokens > 0, JSON.stringify(r.timings));
      assert.equal(r.timings.promptFromState, prefix.tokens);
    }
    // the same answer as an engine that evaluated it all, and all of it evaluated when asked not to use prefixes
    const g = await load(path.join(models, file), { contextSize: 512 });
    await g.addPrefix(prefix.blob);
    const whole = await chat(g, 'Where are the maps kept?', { prefix_states: false });
    assert.equal(whole.timings.promptEvalTokens, whole.timings.promptTokens);
    assert.equal(whole.timings.promptFromState, 0);
    const h = await load(path.join(models, file), { contextSize: 512 });
    await h.addPrefix(prefix.blob);
    const viaPrefix = await chat(h, 'Where are the maps kept?');
    assert.equal(viaPrefix.choices[0].message.content, whole.choices[0].message.content);
    await Promise.all([e, f, g, h].map((x) => x.unload()));
  });
}

test('wick prefix writes the state of a rendered system prompt, which an engine takes as a shared prefix', async () => {
  const out = path.join(dir, 'prefix.state');
  const r = runWick('wasm', ['prefix', '-m', path.join(models, 'mini', 'mini-chat-q8_0.gguf'), '--system', SYSTEM, '-o', out, '--ctx', '512']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /tokens/);
  const blob = new Uint8Array(fs.readFileSync(out));
  const e = await load(path.join(models, 'mini', 'mini-chat-q8_0.gguf'), { contextSize: 512 });
  const { tokens } = await e.addPrefix(blob);
  assert.ok(tokens >= 200);
  const c = await e.chat.completions.create({ messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Hello.' }], max_tokens: 2, temperature: 0 });
  assert.equal(c.timings.promptFromState, tokens);
  void root;
});
