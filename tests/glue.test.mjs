// tests/glue.test.mjs — the JavaScript API (wasm_glue/wick.mjs) under Node: the engine in a
// worker_threads Worker, models loaded over HTTP from a local server (progress, resume with
// Range, early refusals), from an ArrayBuffer and from a path; streamed generation, abort,
// refused requests, chat completions with a chat template, and a crashed worker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Wick, WickError } from '../wasm_glue/wick.mjs';
import { createServer } from '../tools/serve.mjs';
import { models, loadReference, greedyText } from './helpers.mjs';

const stories = loadReference('stories260K.json');
const storiesPath = path.join(models, 'stories260K.gguf');
const chatPath = path.join(models, 'mini', 'mini-chat-q8_0.gguf');
const GREEDY_START = ', there was a little girl named Lily';

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
}

let server, base, engine;
const requests = [];
before(async () => {
  const files = createServer(path.dirname(models));
  const handler = files.listeners('request')[0];
  server = http.createServer((req, res) => {
    requests.push({ url: req.url, method: req.method, range: req.headers.range });
    handler(req, res);
  });
  base = await listen(server);
  engine = await Wick.load(`${base}/models/stories260K.gguf`, { threads: 1 });
});
after(async () => {
  await engine?.unload();
  server.closeAllConnections();
  server.close();
});

// a greedy run of n tokens streams exactly the reference's first n tokens (helpers.mjs greedyText)
function assertGreedy(run, n) {
  assert.equal(run.text, greedyText(n));
  assert.equal(run.final.finishReason, 'length');
  assert.equal(run.final.timings.generatedTokens, n);
}

/** Each engine generates n greedy tokens after 'Once upon a time': each streams the reference's first n. */
async function assertEachGreedy(engines, n) {
  for (const e of engines) assertGreedy(await collect(e.generate('Once upon a time', { maxTokens: n, temperature: 0 })), n);
}

async function collect(iterable) {
  const chunks = [];
  for await (const c of iterable) chunks.push(c);
  const final = chunks.pop();
  return { chunks, final, text: chunks.map((c) => c.text).join('') };
}

test('loads over HTTP with monotonic progress ending at the file size', { timeout: 60000 }, async () => {
  const size = fs.statSync(storiesPath).size;
  const events = [];
  const e = await Wick.load(`${base}/models/stories260K.gguf`, { threads: 1, onProgress: (p) => events.push(p) });
  try {
    const download = events.filter((p) => p.phase === 'download');
    assert.ok(download.length >= 2, 'download progress reported');
    for (let i = 1; i < download.length; i++) assert.ok(download[i].loaded >= download[i - 1].loaded, 'monotonic');
    assert.equal(download.at(-1).loaded, size);
    assert.equal(download.at(-1).total, size);
    assert.equal(events.at(-1).phase, 'load');
    assert.equal(events.at(-1).loaded, size);
    assert.equal(e.info.fileBytes, size);
    assert.equal(e.info.architecture, 'llama');
    assert.equal(e.info.n_vocab, 512);
    assert.equal(typeof e.multiThreaded, 'boolean');
    assert.ok(e.threads >= 1);
  } finally {
    await e.unload();
  }
});

test('greedy generation streams the reference text of stories260K', { timeout: 60000 }, async () => {
  const { chunks, final, text } = await collect(engine.generate('Once upon a time', { maxTokens: 240, temperature: 0 }));
  assert.ok(chunks.length > 10, 'several chunks');
  assert.ok(text.startsWith(GREEDY_START), text.slice(0, 80));
  assert.equal(text, stories.greedy_text);
  assert.equal(final.done, true);
  assert.equal(final.finishReason, 'length');
  assert.equal(final.timings.generatedTokens, 240);
  assert.equal(final.timings.promptTokens, stories.prompt_tokens.length);
  assert.ok(final.timings.decodeTokensPerSecond > 0);
  assert.ok(final.timings.prefillTokensPerSecond > 0);
  assert.ok(final.timings.timeToFirstTokenMs >= 0);
  for (const c of chunks) assert.ok(Array.isArray(c.tokens));
  // the load's warm-up evaluation ran (issue 33) and left nothing behind: the text above is the reference's
  assert.ok(engine.info.warmUpMs > 0, `warm-up: ${engine.info.warmUpMs} ms`);
  assert.equal(final.timings.cachedPromptTokens, 0, 'the prompt was evaluated from an empty cache');
});

test('warmUp: false loads with no warm-up evaluation and gives the same greedy text', { timeout: 60000 }, async () => {
  const cold = await Wick.load(storiesPath, { threads: 1, warmUp: false });
  try {
    assert.equal(cold.info.warmUpMs, 0);
    const { text } = await collect(cold.generate('Once upon a time', { maxTokens: 240, temperature: 0 }));
    assert.equal(text, stories.greedy_text);
  } finally {
    await cold.unload();
  }
});

test('probabilities of the top candidates come with each token when asked', { timeout: 60000 }, async () => {
  const { chunks } = await collect(engine.generate('Once upon a time', { maxTokens: 4, temperature: 0, probs: 5 }));
  for (const c of chunks) {
    assert.ok(c.probs.length >= 1 && c.probs.length <= 5);
    const sum = c.probs.reduce((a, p) => a + p.p, 0);
    assert.ok(sum <= 1.0001, `sum ${sum}`);
    assert.equal(c.probs.filter((p) => p.drawn).length, 1);
    assert.equal(c.probs.find((p) => p.drawn).token, c.tokens[0]);
  }
});

test('the same seed gives the same text; a prompt given as token ids works', { timeout: 60000 }, async () => {
  const a = await collect(engine.generate('Once upon a time', { maxTokens: 30, temperature: 1, seed: 42 }));
  const b = await collect(engine.generate(stories.prompt_tokens, { maxTokens: 30, temperature: 1, seed: 42 }));
  assert.equal(a.text, b.text);
});

test('a stop string ends generation before it', { timeout: 60000 }, async () => {
  const { text, final } = await collect(engine.generate('Once upon a time', { maxTokens: 100, temperature: 0, stop: ['Lily'] }));
  assert.equal(final.finishReason, 'stop');
  assert.equal(text, ', there was a little girl named ');
});

test('abort through a signal stops within a token and the engine stays usable', { timeout: 60000 }, async () => {
  const controller = new AbortController();
  let n = 0, after = 0, final;
  for await (const c of engine.generate('Once upon a time', { maxTokens: 2000, temperature: 0.8, seed: 1, signal: controller.signal })) {
    if (c.done) { final = c; break; }
    n++;
    if (n === 3) controller.abort();
    if (n > 3) after++;
  }
  assert.equal(final.finishReason, 'abort');
  assert.ok(after <= 1, `${after} chunks after abort`);
  const again = await collect(engine.generate('Once upon a time', { maxTokens: 8, temperature: 0 }));
  assertGreedy(again, 8);
  // engine.abort() and an early break stop it too
  const it = engine.generate('Once upon a time', { maxTokens: 2000 });
  for await (const c of it) { assert.ok(!c.done); break; }
  const stopped = engine.generate('Once upon a time', { maxTokens: 2000 });
  const first = await stopped.next();
  engine.abort();
  let last = first.value;
  for await (const c of stopped) last = c;
  assert.equal(last.finishReason, 'abort');
});

test('bad requests are refused with a clear error and the engine stays usable', { timeout: 60000 }, async () => {
  const bad = [
    { temperature: -1 }, { temperature: 'hot' }, { topK: 1.5 }, { topP: 0 }, { topP: 2 }, { minP: -0.1 },
    { repeatPenalty: 0 }, { maxTokens: -5 }, { seed: -1 }, { stop: [''] }, { stop: 3 }, { probs: 100 }, { temprature: 1 },
  ];
  for (const options of bad) {
    assert.throws(() => engine.generate('Once', options), (e) => e instanceof WickError && e.code === 'E_INVALID_ARG' && e.message.length > 10, JSON.stringify(options));
  }
  await assert.rejects(engine.detokenize([1, 99999]), { code: 'E_INVALID_ARG' });
  await assert.rejects(engine.chat.completions.create({ messages: [] }), { code: 'E_INVALID_ARG' });
  await assert.rejects(engine.chat.completions.create({ messages: [{ role: 'wizard', content: 'hi' }] }), /role "wizard"/);
  await assert.rejects(engine.chat.completions.create({ messages: [{ role: 'user', content: 5 }] }), { code: 'E_INVALID_ARG' });
  // stories260K has no chat template
  await assert.rejects(engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] }), { code: 'E_NO_TEMPLATE' });
  await assert.rejects(Wick.load(storiesPath, { kvType: 'q4' }), { code: 'E_INVALID_ARG' });
  await assert.rejects(Wick.load(storiesPath, { threads: 0 }), { code: 'E_INVALID_ARG' });
  await assert.rejects(Wick.load(12), { code: 'E_INVALID_ARG' });
  assertGreedy(await collect(engine.generate('Once upon a time', { maxTokens: 8, temperature: 0 })), 8);
});

test('tokenize and detokenize round-trip', { timeout: 60000 }, async () => {
  const ids = await engine.tokenize('Once upon a time');
  assert.deepEqual(ids, stories.prompt_tokens);
  assert.deepEqual(await engine.tokenize('Once upon a time', { addBos: false }), stories.prompt_tokens.slice(1));
  assert.equal((await engine.detokenize(ids.slice(1))).trim(), 'Once upon a time');
});

test('loads from an ArrayBuffer (single-threaded build) and from a path (two threads)', { timeout: 60000 }, async () => {
  const bytes = fs.readFileSync(storiesPath);
  const events = [];
  const a = await Wick.load(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length), { multiThreaded: false, onProgress: (p) => events.push(p) });
  const b = await Wick.load(storiesPath, { threads: 2 });
  try {
    assert.equal(a.build, 'st');
    assert.equal(a.threads, 1);
    assert.equal(b.build, 'mt');
    assert.equal(b.threads, 2);
    assert.equal(events.at(-1).loaded, bytes.length);
    await assertEachGreedy([a, b], 40);
  } finally {
    await a.unload();
    await b.unload();
  }
});

test('errors before any long work: 404, an HTML page, not GGUF, too large', { timeout: 60000 }, async () => {
  await assert.rejects(Wick.load(`${base}/models/missing.gguf`), (e) => e.code === 'E_FETCH' && /404/.test(e.message));
  await assert.rejects(Wick.load(path.join(models, 'missing.gguf')), { code: 'E_FETCH' });
  const odd = http.createServer((req, res) => {
    if (req.url === '/page') { res.writeHead(200, { 'Content-Type': 'text/html' }); res.end('<!doctype html><p>hello</p>'); return; }
    if (req.url === '/text') { res.writeHead(200, { 'Content-Type': 'application/octet-stream' }); res.end('this is not a model at all'); return; }
    // a huge file: the headers say 12 GB (too large even with 60% of it, the most a row table
    // can be, outside wasm memory), then the server stalls
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(12e9) });
    res.write(Buffer.from('GGUF'));
  });
  const oddBase = await listen(odd);
  try {
    await assert.rejects(Wick.load(`${oddBase}/page`), { code: 'E_NOT_GGUF' });
    await assert.rejects(Wick.load(`${oddBase}/text`), { code: 'E_NOT_GGUF' });
    const t0 = Date.now();
    await assert.rejects(Wick.load(`${oddBase}/huge.gguf`), (e) => e.code === 'E_TOO_LARGE' && /12000000000 bytes/.test(e.message) && /wasm32 holds/.test(e.message));
    assert.ok(Date.now() - t0 < 5000, 'refused at once');
  } finally {
    odd.closeAllConnections();
    odd.close();
  }
});

test('a download cut halfway resumes with a Range request', { timeout: 60000 }, async () => {
  const bytes = fs.readFileSync(storiesPath);
  const seen = [];
  const cutting = http.createServer((req, res) => {
    seen.push(req.headers.range || 'full');
    const range = /^bytes=(\d+)-$/.exec(req.headers.range || '');
    if (range) {
      const start = Number(range[1]);
      res.writeHead(206, { 'Content-Length': String(bytes.length - start), 'Content-Range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`, 'Accept-Ranges': 'bytes' });
      res.end(bytes.subarray(start));
      return;
    }
    res.writeHead(200, { 'Content-Length': String(bytes.length), 'Accept-Ranges': 'bytes' });
    res.write(bytes.subarray(0, bytes.length >> 1), () => setTimeout(() => res.destroy(), 20));
  });
  const cutBase = await listen(cutting);
  try {
    const e = await Wick.load(`${cutBase}/stories260K.gguf`, { threads: 1 });
    try {
      assert.equal(seen[0], 'full');
      assert.match(seen[1], /^bytes=\d+-$/);
      assert.ok(Number(/\d+/.exec(seen[1])[0]) > 0);
      assertGreedy(await collect(e.generate('Once upon a time', { maxTokens: 20, temperature: 0 })), 20);
    } finally {
      await e.unload();
    }
  } finally {
    cutting.closeAllConnections();
    cutting.close();
  }
});

test('an aborted load rejects with E_ABORTED', { timeout: 60000 }, async () => {
  const stalling = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Length': String(1 << 20) });
    res.write(Buffer.from('GGUF'));
  });
  const stallBase = await listen(stalling);
  try {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    await assert.rejects(Wick.load(`${stallBase}/m.gguf`, { signal: controller.signal }), { code: 'E_ABORTED' });
  } finally {
    stalling.closeAllConnections();
    stalling.close();
  }
});

test('chat completions stream with the model\'s template; a second turn prefills only its new tokens', { timeout: 60000 }, async () => {
  const chat = await Wick.load(`${base}/models/mini/mini-chat-q8_0.gguf`, { threads: 1 });
  try {
    assert.match(chat.info.chatTemplate, /<\|assistant\|>/);
    const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Tell me a story.' }];
    const prompt = await chat.applyChatTemplate(messages);
    assert.equal(prompt, '<|system|>\nYou are terse.</s>\n<|user|>\nTell me a story.</s>\n<|assistant|>\n');
    const stream = await chat.chat.completions.create({ messages, stream: true, max_tokens: 12, temperature: 0 });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const last = chunks.pop();
    assert.ok(chunks.length >= 2, 'streams several chunks');
    assert.equal(chunks[0].object, 'chat.completion.chunk');
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.ok(chunks.every((c) => typeof c.choices[0].delta.content === 'string'));
    // greedy, and no end-of-generation token among the 12 (the answer is gibberish by design)
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.equal(last.usage.completion_tokens, 12);
    assert.equal(chunks.length, 12);
    const answer = chunks.map((c) => c.choices[0].delta.content).join('');

    const turn2 = [...messages, { role: 'assistant', content: answer }, { role: 'user', content: 'Another.' }];
    const full = await chat.chat.completions.create({ messages: turn2, max_tokens: 5, temperature: 0 });
    assert.equal(full.object, 'chat.completion');
    assert.equal(full.choices[0].message.role, 'assistant');
    assert.equal(typeof full.choices[0].message.content, 'string');
    const t = full.timings;
    assert.ok(t.promptEvalTokens < t.promptTokens / 2, `second turn evaluated ${t.promptEvalTokens} of ${t.promptTokens} prompt tokens`);
    assert.ok(t.cachedPromptTokens > 0);
    // an overridden template, and a template testing optional variables
    const own = await chat.applyChatTemplate([{ role: 'user', content: 'hi' }], { template: '{% if tools is defined %}T{% endif %}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}' });
    assert.equal(own, '[user]hi');
  } finally {
    await chat.unload();
  }
});

test('a worker that dies mid-generation rejects the pending call; a new load works', { timeout: 60000 }, async () => {
  const e = await Wick.load(storiesPath, { threads: 1 });
  const it = e.generate('Once upon a time', { maxTokens: 2000, temperature: 0.8 });
  await it.next();
  e._worker.raw.terminate();
  await assert.rejects(async () => { for await (const c of it) void c; }, { code: 'E_WORKER' });
  await assert.rejects(e.tokenize('hi'), { code: 'E_WORKER' });
  const fresh = await Wick.load(storiesPath, { threads: 1 });
  assertGreedy(await collect(fresh.generate('Once upon a time', { maxTokens: 8, temperature: 0 })), 8);
  await fresh.unload();
});

test('split model names give every part; the default thread count is about the physical cores', { timeout: 60000 }, () => {
  assert.deepEqual(Wick.splitUrls('http://h/m-00001-of-00003.gguf'), ['http://h/m-00001-of-00003.gguf', 'http://h/m-00002-of-00003.gguf', 'http://h/m-00003-of-00003.gguf']);
  assert.deepEqual(Wick.splitUrls('http://h/m.gguf'), ['http://h/m.gguf']);
  assert.throws(() => Wick.splitUrls('http://h/m-00002-of-00003.gguf'), { code: 'E_INVALID_ARG' });
  const n = Wick.defaultThreads();
  assert.ok(n >= 1 && n <= 8);
});

test('inspect reads the size and metadata of a model from its first bytes and checks that it fits', { timeout: 60000 }, async () => {
  const r = await Wick.inspect(`${base}/models/mini/mini-chat-q8_0.gguf`, { contextSize: 1024 });
  assert.equal(r.bytes, fs.statSync(chatPath).size);
  assert.equal(r.metadata['general.architecture'], 'llama');
  assert.match(r.metadata['tokenizer.chat_template'], /assistant/);
  assert.equal(r.fits.fits, true);
  assert.equal(r.fits.kvBytes, 2 * 1024 * 4 * 32 * 2 * 2); // layers · context · kv heads · (key + value dims) · f16
  const ranges = requests.filter((q) => q.url === '/models/mini/mini-chat-q8_0.gguf' && q.range);
  assert.ok(ranges.length >= 1, 'fetched with a Range request');
});

test('the seed chapter\'s worked example through the JS API: logits (2, 1, 0) at T = 0.5, 1, 2', async () => {
  const expected = { 0.5: [86.7, 11.7, 1.6], 1: [66.5, 24.5, 9.0], 2: [50.6, 30.7, 18.6] };
  for (const [t, want] of Object.entries(expected)) {
    const p = await engine.softmax([2, 1, 0], Number(t));
    p.forEach((v, i) => assert.ok(Math.abs(v * 100 - want[i]) <= 0.1, `T=${t}: ${v * 100} vs ${want[i]}`));
  }
  assert.deepEqual(await engine.softmax([2, 1, 0], 0), [1, 0, 0]);
  const cold = await engine.softmax([2, 1, 0], 1e-3);
  assert.ok(cold[0] > 0.999999);
  await assert.rejects(engine.softmax([2, 1, 0], -1), /temperature/);
});

// ---- split models and peak memory while loading, from a second server over a temporary folder ----
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { readGguf, splitGguf } from './gguf.mjs';
import { root, nativeCli } from './helpers.mjs';

test('a split model loads from its first part\'s URL and gives the logits of the single file', { timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-glue-split-'));
  splitGguf(readGguf(storiesPath), 3).forEach((b, i) => fs.writeFileSync(path.join(dir, `stories-0000${i + 1}-of-00003.gguf`), b));
  const site = createServer(dir);
  const siteBase = await listen(site);
  const split = await Wick.load(`${siteBase}/stories-00001-of-00003.gguf`, { threads: 1, cache: false });
  try {
    await assertEachGreedy([split, engine], 60);
  } finally {
    await split.unload();
    site.closeAllConnections();
    site.close();
  }
});

test('loading a 134m model over HTTP keeps peak memory near the file size (no whole-file copy in JS)', { timeout: 180000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-glue-134m-'));
  const file = path.join(dir, 'synth-134m-q8_0.gguf');
  execFileSync(nativeCli, ['synth', '--shape', '134m', '--type', 'q8_0', '-o', file,
    '--vocab', path.join(root, '..', 'shared', 'vocab', 'ggml-vocab-llama-spm.gguf')], { cwd: root });
  const size = fs.statSync(file).size;
  const site = createServer(dir);
  const siteBase = await listen(site);
  const before = process.memoryUsage();
  let peakRss = before.rss, peakHeap = before.heapUsed + before.arrayBuffers;
  const sample = () => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed + m.arrayBuffers);
  };
  const timer = setInterval(sample, 5);
  const e = await Wick.load(`${siteBase}/synth-134m-q8_0.gguf`, { threads: 1, cache: false, contextSize: 256, onProgress: sample });
  clearInterval(timer);
  try {
    const rssGrowth = peakRss - before.rss;
    const heapGrowth = peakHeap - before.heapUsed - before.arrayBuffers;
    console.log(`# 134m q8_0 (${(size / 2 ** 20).toFixed(0)} MiB): peak RSS +${(rssGrowth / 2 ** 20).toFixed(0)} MiB, JS heap + buffers +${(heapGrowth / 2 ** 20).toFixed(0)} MiB`);
    // JS only ever holds a chunk (a whole-file copy would add the file size to the JS heap and
    // buffers); the process as a whole holds the file once in wasm memory, plus the worker's own
    // isolate, the compiled engine, the KV cache and the test's HTTP server
    assert.ok(rssGrowth < 2 * size, `peak RSS grew ${rssGrowth} bytes for a ${size}-byte file`);
    assert.ok(heapGrowth < 0.25 * size, `JS heap grew ${heapGrowth} bytes for a ${size}-byte file`);
    const { text } = await collect(e.generate('Hello', { maxTokens: 3, temperature: 0 }));
    assert.equal(typeof text, 'string');
  } finally {
    await e.unload();
    site.closeAllConnections();
    site.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
