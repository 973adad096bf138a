// tests/connect.test.mjs — Wick.connect (wasm_glue/connect.mjs) against llama.cpp's llama-server
// (built by `make llama-server` from node-llama-cpp's bundled source) serving stories260K on
// 127.0.0.1 with an API key: greedy generate gives the reference text that Wick.load gives on the
// same file; streamed and plain chat completions come in the shapes of a loaded engine (and with
// chatml on both sides, the same text); abort, engine.abort() and leaving the loop end the
// stream with finishReason 'abort'; a wrong port, a wrong key and a wrong path give E_FETCH; the
// README's server snippet runs. Embeddings and reranking against servers of their own (started with
// --embeddings, --reranking) on `wick synth` files: embed() and embeddings.create() through
// /v1/embeddings give the local engine's shapes and, for the same file, its vectors within cosine
// 0.9999 (F32, F16); rerank() through /v1/rerank its ranking, with scores within 1e-3 relative
// (bge-reranker's shape on bert, Qwen3-Reranker's on qwen3: the server forms the pairs itself).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { spawn, execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { Wick, WickError } from '../wasm_glue/wick.mjs';
import { connect } from '../wasm_glue/connect.mjs';
import { root, models, loadReference, greedyText, runWick } from './helpers.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { readmeBlock } from './readme.mjs';

const stories = loadReference('stories260K.json');
const storiesPath = path.join(models, 'stories260K.gguf');
const serverBin = path.join(root, 'build', 'llama-server', 'bin', 'llama-server');
const API_KEY = 'wick-test-key';
const STARTUP_MS = 60000;
const README_SERVER = 'http://127.0.0.1:8080'; // the README snippet's server and key, replaced by the test's
const README_KEY = 'my-key';
// llama.cpp's built-in chatml template (common/chat.cpp, CHATML_TEMPLATE_SRC), which llama-server
// uses for a model without one: the local engine gets the same source with each request
const CHATML = "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  {{- '<|im_start|>assistant\\n' -}}\n{%- endif -%}";

/** A port nothing listens on right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

let server, base, remote, local, serverLog = '';
const extraServers = []; // the embedding and reranking servers, stopped after the suite

async function waitHealthy(url, exited) {
  const deadline = Date.now() + STARTUP_MS;
  while (Date.now() < deadline) {
    if (exited.code !== undefined) throw new Error(`llama-server exited (${exited.code}):\n${serverLog.slice(-3000)}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`llama-server did not become healthy within ${STARTUP_MS / 1000} s:\n${serverLog.slice(-3000)}`);
}

before(async () => {
  assert.ok(fs.existsSync(serverBin), `${serverBin} is missing: build it with \`make llama-server\``);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(serverBin, [
    '-m', storiesPath, '--host', '127.0.0.1', '--port', String(port), '--alias', 'stories260K',
    '--api-key', API_KEY, '--chat-template', 'chatml', '-c', '512', '-np', '1', '-t', '1', '--no-webui',
    // llama-server caps a slot's context at the model's training context (128 for stories260K);
    // the reference text runs to 245 positions, as wick's (larger) context allows
    '--override-kv', 'llama.context_length=int:512',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = {};
  server.on('exit', (code, signal) => { exited.code = code ?? signal; });
  server.stdout.on('data', (d) => { serverLog += d; });
  server.stderr.on('data', (d) => { serverLog += d; });
  await waitHealthy(base, exited);
  remote = await connect(base, { apiKey: API_KEY });
  local = await Wick.load(storiesPath, { threads: 1 });
});

async function stopServer(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

after(async () => {
  await remote?.unload();
  await local?.unload();
  await stopServer(server);
  for (const s of extraServers) await stopServer(s);
  fs.rmSync(synthDir, { recursive: true, force: true });
});

// ---- the embedding and reranking servers, on wick synth files ----

const synthDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-connect-synth-'));
let synthVocabs = null;
function synthFile(name, args, vocab) {
  synthVocabs ??= (() => {
    const [bge, qwen2] = readLlamaBundle(['models/ggml-vocab-bert-bge.gguf', 'models/ggml-vocab-qwen2.gguf']);
    const v = { bert: path.join(synthDir, 'bge.gguf'), qwen3: path.join(synthDir, 'qwen2.gguf') };
    fs.writeFileSync(v.bert, bge);
    fs.writeFileSync(v.qwen3, qwen2);
    return v;
  })();
  const file = path.join(synthDir, `${name}.gguf`);
  const r = runWick('native', ['synth', ...args, '--shape', 'mini', '--vocab', synthVocabs[vocab], '-o', file]);
  assert.equal(r.code, 0, r.stderr);
  return file;
}

/** llama-server on `model` with `flags` (127.0.0.1, one slot, one thread): its URL once healthy. */
async function startServer(model, flags) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(serverBin, ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-np', '1', '-t', '1', '--no-webui', ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  extraServers.push(proc);
  const exited = {};
  proc.on('exit', (code, signal) => { exited.code = code ?? signal; });
  proc.stdout.on('data', (d) => { serverLog += d; });
  proc.stderr.on('data', (d) => { serverLog += d; });
  await waitHealthy(url, exited);
  return { url, stop: () => stopServer(proc) };
}

const cosine = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};
const embedTexts = ['Hello world, this is a test.', 'The quick brown fox jumps over the lazy dog.', 'Äpfel und Birnen: café, naïve résumé!'];

for (const type of ['f32', 'f16']) {
  test(`embed() and embeddings.create() through /v1/embeddings: the local engine's shapes and vectors (${type} bert, cosine ≥ 0.9999)`, { timeout: 120000 }, async () => {
    const file = synthFile(`bert-mean-${type}`, ['--arch', 'bert', '--type', type, '--pooling', 'mean'], 'bert');
    const srv = await startServer(file, ['--embeddings', '--pooling', 'mean', '-c', '512', '-b', '512', '-ub', '512']);
    const there = await connect(srv.url);
    const here = await Wick.load(file, { threads: 1 });
    try {
      const [a, b] = [await there.embed(embedTexts), await here.embed(embedTexts)];
      assert.equal(a.length, embedTexts.length);
      a.forEach((v, i) => {
        assert.ok(v instanceof Float32Array && v.length === b[i].length, `text ${i}: ${v.length} values`);
        assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-4, `text ${i}: unit length`);
        assert.ok(cosine(v, b[i]) >= 0.9999, `text ${i}: cosine ${cosine(v, b[i])}`);
      });
      const [raw] = await there.embed(embedTexts[1], { normalize: false });
      const [rawHere] = await here.embed(embedTexts[1], { normalize: false });
      assert.ok(Math.abs(Math.hypot(...raw) / Math.hypot(...rawHere) - 1) < 1e-3, 'normalize: false keeps the length');
      const [cut] = await there.embed(embedTexts[0], { dimensions: 16 });
      assert.equal(cut.length, 16);
      assert.ok(cosine(cut, (await here.embed(embedTexts[0], { dimensions: 16 }))[0]) >= 0.9999);
      // embeddings.create: the same response shape, usage and values
      const [r, l] = [await there.embeddings.create({ input: embedTexts, model: 'bge' }), await here.embeddings.create({ input: embedTexts, model: 'bge' })];
      assert.deepEqual(Object.keys(r).sort(), Object.keys(l).sort());
      assert.deepEqual(r.usage, l.usage);
      assert.equal(r.model, 'bge');
      r.data.forEach((d, i) => {
        assert.deepEqual(Object.keys(d).sort(), Object.keys(l.data[i]).sort());
        assert.equal(d.index, i);
        assert.ok(cosine(d.embedding, l.data[i].embedding) >= 0.9999);
      });
      const b64 = await there.embeddings.create({ input: embedTexts[2], dimensions: 32, encoding_format: 'base64' });
      const bytes = Buffer.from(b64.data[0].embedding, 'base64');
      assert.equal(bytes.length, 32 * 4);
      const want = (await here.embed(embedTexts[2], { dimensions: 32 }))[0];
      assert.ok(cosine(new Float32Array(bytes.buffer, bytes.byteOffset, 32), want) >= 0.9999);
      await assert.rejects(there.embed(embedTexts, { pooling: 'cls' }), { code: 'E_UNSUPPORTED' });
      await assert.rejects(there.rerank('q', ['d']), { code: 'E_FETCH' }); // not started with --reranking
    } finally {
      await here.unload();
      await there.unload();
      await srv.stop();
    }
  });
}

const rerankQuery = 'what is a fox?';
const rerankDocs = [
  'The quick brown fox jumps over the lazy dog.',
  'Paris is the capital of France.',
  'Foxes are small to medium-sized omnivorous mammals of the dog family.',
  'Banana bread: flour, sugar, butter and three ripe bananas.',
];
for (const [arch, what] of [['bert', 'bge-reranker'], ['qwen3', 'Qwen3-Reranker']]) {
  test(`rerank() through /v1/rerank: the local engine's ranking and scores (1e-3 relative), ${what}'s shape on ${arch}`, { timeout: 120000 }, async () => {
    const file = synthFile(`${arch}-rank`, ['--arch', arch, '--type', 'f16', '--pooling', 'rank'], arch);
    const srv = await startServer(file, ['--reranking', '-c', '2048']);
    const there = await connect(srv.url);
    const here = await Wick.load(file, { threads: 1 });
    try {
      const [a, b] = [await there.rerank(rerankQuery, rerankDocs), await here.rerank(rerankQuery, rerankDocs)];
      assert.equal(a.length, rerankDocs.length);
      a.forEach((x) => assert.deepEqual(Object.keys(x).sort(), ['index', 'score']));
      // the same score per document; the same ranking except where two scores lie within the tolerance
      const local = new Map(b.map((x) => [x.index, x.score]));
      assert.deepEqual([...a.map((x) => x.index)].sort(), [...local.keys()].sort());
      for (const x of a) {
        const y = local.get(x.index), e = Math.abs(x.score - y) / Math.max(Math.abs(x.score), Math.abs(y));
        assert.ok(e <= 1e-3, `document ${x.index}: server ${x.score}, local ${y} (relative ${e})`);
      }
      for (let i = 1; i < a.length; i++) {
        assert.ok(a[i - 1].score >= a[i].score, 'the most relevant first');
        const [p, q] = [local.get(a[i - 1].index), local.get(a[i].index)];
        assert.ok(p >= q || (q - p) / Math.abs(q) <= 2e-3, `documents ${a[i - 1].index} and ${a[i].index}: ranked apart by more than the tolerance`);
      }
      assert.deepEqual(await there.rerank(rerankQuery, rerankDocs, { topN: 2 }), a.slice(0, 2));
      await assert.rejects(there.rerank(rerankQuery, []), { code: 'E_INVALID_ARG' });
    } finally {
      await here.unload();
      await there.unload();
      await srv.stop();
    }
  });
}

async function collect(iterable) {
  const chunks = [];
  for await (const c of iterable) chunks.push(c);
  const final = chunks.pop();
  return { chunks, final, text: chunks.map((c) => c.text ?? c.choices?.[0].delta.content ?? '').join('') };
}

test('Wick.connect is connect (connect.mjs loaded on the first call); the engine tells what the server says about the model', async () => {
  const viaWick = await Wick.connect(base, { apiKey: API_KEY });
  assert.deepEqual(viaWick.info, remote.info);
  assert.equal(Object.getPrototypeOf(viaWick), Object.getPrototypeOf(remote));
  assert.equal(remote.build, 'remote');
  assert.equal(remote.baseURL, `${base}/v1`);
  assert.equal(remote.info.name, 'stories260K');
  assert.equal(remote.info.remote, true);
  assert.equal(remote.info.n_vocab, stories.n_vocab);
  assert.equal(remote.info.context_length, 512); // as the server was told (--override-kv)
  assert.ok(remote.info.n_params > 0 && remote.info.metadata.size > 0);
  assert.deepEqual(remote.info.models, ['stories260K']);
});

test('greedy generate streams the reference text, as Wick.load gives it on the same file', { timeout: 60000 }, async () => {
  const options = { maxTokens: 240, temperature: 0 };
  const [there, here] = [await collect(remote.generate(stories.prompt, options)), await collect(local.generate(stories.prompt, options))];
  assert.equal(here.text, stories.greedy_text);
  assert.equal(there.text, stories.greedy_text);
  assert.ok(there.chunks.length > 10, `streamed in ${there.chunks.length} chunks`);
  for (const c of there.chunks) {
    assert.equal(typeof c.text, 'string');
    assert.ok(Array.isArray(c.tokens));
    assert.equal(c.done, undefined);
  }
  assert.equal(there.final.done, true);
  assert.equal(there.final.finishReason, 'length');
  assert.deepEqual(Object.keys(there.final.timings).sort(), Object.keys(here.final.timings).sort());
  assert.equal(there.final.timings.generatedTokens, 240);
  assert.equal(there.final.timings.promptTokens, stories.prompt_tokens.length);
  assert.ok(there.final.timings.decodeTokensPerSecond > 0);
  assert.ok(there.final.timings.timeToFirstTokenMs >= 0);
});

test('generate maps the settings: seed, stop strings, token-id prompts, probabilities', { timeout: 60000 }, async () => {
  const stop = await collect(remote.generate(stories.prompt, { maxTokens: 100, temperature: 0, stop: ['Lily'] }));
  assert.equal(stop.text, ', there was a little girl named ');
  assert.equal(stop.final.finishReason, 'stop');
  const seeded = { maxTokens: 30, temperature: 1, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1, seed: 42 };
  const a = await collect(remote.generate(stories.prompt, seeded));
  const b = await collect(remote.generate(stories.prompt_tokens, seeded));
  assert.equal(a.text, b.text);
  const probs = await collect(remote.generate(stories.prompt, { maxTokens: 4, temperature: 0, probs: 3 }));
  assert.equal(probs.text, greedyText(4));
  for (const c of probs.chunks) {
    assert.ok(c.probs.length >= 1 && c.probs.length <= 3);
    assert.equal(c.probs.filter((p) => p.drawn).length, 1);
    assert.deepEqual(c.tokens, [c.probs.find((p) => p.drawn).token]);
    for (const p of c.probs) assert.ok(p.p >= 0 && p.p <= 1.0001);
  }
  assert.deepEqual(probs.chunks.map((c) => c.tokens[0]), stories.greedy_tokens.slice(0, 4));
});

test('streamed chat completions yield deltas and a final chunk in OpenAI\'s shape, as a loaded engine does', { timeout: 60000 }, async () => {
  const request = { messages: [{ role: 'user', content: 'Tell me a story.' }], stream: true, max_tokens: 24, temperature: 0 };
  const there = await collect(await remote.chat.completions.create(request));
  const here = await collect(await local.chat.completions.create({ ...request, chat_template: CHATML }));
  assert.ok(there.chunks.length > 1);
  assert.equal(there.text, here.text);
  there.chunks.forEach((c, i) => {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(typeof c.id, 'string');
    assert.equal(typeof c.created, 'number');
    assert.equal(c.model, 'stories260K');
    assert.equal(c.choices.length, 1);
    const [choice] = c.choices;
    assert.equal(choice.index, 0);
    assert.equal(choice.finish_reason, null);
    assert.equal(typeof choice.delta.content, 'string');
    assert.deepEqual(Object.keys(choice.delta).sort(), Object.keys(here.chunks[i === 0 ? 0 : 1].choices[0].delta).sort());
  });
  assert.equal(there.chunks[0].choices[0].delta.role, 'assistant');
  const { final } = there;
  // `wick` is the local engine's extension (its own record of each piece: token ids, probabilities,
  // shifts, the page's timings); a server has none to give, so the OpenAI fields are what must agree
  assert.ok(here.final.wick && !('wick' in final), 'the wick extension is the local engine\'s only');
  assert.deepEqual(Object.keys(final).sort(), Object.keys(here.final).filter((k) => k !== 'wick').sort());
  assert.deepEqual(final.choices[0].delta, {});
  assert.equal(final.choices[0].finish_reason, 'length');
  assert.equal(final.usage.completion_tokens, 24);
  assert.equal(final.usage.total_tokens, final.usage.prompt_tokens + 24);
  assert.equal(final.timings.generatedTokens, 24);

  const plain = await remote.chat.completions.create({ ...request, stream: false });
  assert.equal(plain.object, 'chat.completion');
  assert.equal(plain.choices[0].message.role, 'assistant');
  assert.equal(plain.choices[0].message.content, here.text);
  assert.equal(plain.choices[0].finish_reason, 'length');
  assert.equal(plain.usage.completion_tokens, 24);
});

test('abort mid-stream ends the stream with finishReason \'abort\'; the engine stays usable', { timeout: 60000 }, async () => {
  const controller = new AbortController();
  let n = 0, afterAbort = 0, final;
  for await (const c of remote.generate(stories.prompt, { maxTokens: 400, temperature: 0.8, seed: 1, signal: controller.signal })) {
    if (c.done) { final = c; break; }
    n++;
    if (n === 3) controller.abort();
    if (n > 3) afterAbort++;
  }
  assert.equal(final.finishReason, 'abort');
  assert.equal(final.timings, null);
  assert.equal(afterAbort, 0);
  assert.throws(() => remote.generate(stories.prompt, { signal: controller.signal }), { code: 'E_ABORTED' });

  // engine.abort(), and chat streams the same way
  const stopped = remote.generate(stories.prompt, { maxTokens: 400 });
  const first = await stopped.next();
  assert.ok(!first.value.done);
  remote.abort();
  let last = first.value;
  for await (const c of stopped) last = c;
  assert.equal(last.finishReason, 'abort');
  const chatController = new AbortController();
  const chat = await remote.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], stream: true, max_tokens: 400, signal: chatController.signal });
  let lastChunk;
  for await (const c of chat) {
    lastChunk = c;
    if (c.choices[0].finish_reason === null) chatController.abort();
  }
  assert.equal(lastChunk.choices[0].finish_reason, 'abort');
  assert.equal(lastChunk.usage, null);

  // leaving the loop early cancels the request
  for await (const c of remote.generate(stories.prompt, { maxTokens: 400 })) { assert.ok(!c.done); break; }
  const again = await collect(remote.generate(stories.prompt, { maxTokens: 8, temperature: 0 }));
  assert.equal(again.text, greedyText(8));
  assert.equal(again.final.finishReason, 'length');
});

test('errors keep wick\'s codes: a wrong port, a wrong key or path give E_FETCH; bad options E_INVALID_ARG', { timeout: 60000 }, async () => {
  const port = await freePort();
  await assert.rejects(connect(`http://127.0.0.1:${port}`), (e) => e instanceof WickError && e.code === 'E_FETCH' && e.message.includes(String(port)));
  await assert.rejects(connect(base), (e) => e.code === 'E_FETCH' && e.status === 401 && /HTTP 401/.test(e.message));
  await assert.rejects(connect(base, { apiKey: 'wrong' }), (e) => e.code === 'E_FETCH' && e.status === 401 && /api key/i.test(e.message));
  await assert.rejects(connect(`${base}/elsewhere/v2`, { apiKey: API_KEY }), (e) => e.code === 'E_FETCH' && e.status === 404);
  // a server that goes away between requests: the stream fails with E_FETCH, not a TypeError
  const gone = await connect(base, { apiKey: API_KEY, model: 'stories260K' });
  gone.baseURL = `http://127.0.0.1:${port}/v1`;
  await assert.rejects(collect(gone.generate(stories.prompt, { maxTokens: 4 })), { code: 'E_FETCH' });
  await assert.rejects(gone.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] }), { code: 'E_FETCH' });
  assert.throws(() => remote.generate([]), { code: 'E_INVALID_ARG' });
  for (const options of [{ temperature: -1 }, { topP: 0 }, { maxTokens: -5 }, { stop: [''] }, { probs: 100 }, { temprature: 1 }]) {
    assert.throws(() => remote.generate('Once', options), (e) => e instanceof WickError && e.code === 'E_INVALID_ARG', JSON.stringify(options));
  }
  await assert.rejects(remote.chat.completions.create({ messages: [] }), { code: 'E_INVALID_ARG' });
  await assert.rejects(remote.chat.completions.create({ messages: [{ role: 'wizard', content: 'hi' }] }), /role "wizard"/);
  await assert.rejects(connect('ftp://127.0.0.1/'), { code: 'E_INVALID_ARG' });
  await assert.rejects(connect(base, { apikey: API_KEY }), { code: 'E_INVALID_ARG' });
  await assert.rejects(remote.tokenize('Once'), { code: 'E_UNSUPPORTED' });
  // after unload every call fails with E_UNLOADED, as a loaded engine's do
  await gone.unload();
  await assert.rejects(collect(gone.generate(stories.prompt)), { code: 'E_UNLOADED' });
});

test('connect.mjs imported on its own, before wick.mjs, gives the same WickErrors', () => {
  const script = "const { connect } = await import('./wasm_glue/connect.mjs'); const { Wick, WickError } = await import('./wasm_glue/wick.mjs');"
    + " for (const f of [connect, Wick.connect]) try { await f('ftp://x'); } catch (e) { console.log(e instanceof WickError, e.code); }";
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  // connect.mjs's own connect and Wick.connect (which loads connect.mjs on first use) refuse alike
  assert.equal(out.trim(), 'true E_INVALID_ARG\ntrue E_INVALID_ARG');
});

test('the README\'s server snippet runs against the server', { timeout: 60000 }, async () => {
  const snippet = readmeBlock('server');
  assert.ok(snippet.includes(`'${README_SERVER}'`) && snippet.includes(`'${README_KEY}'`), `the snippet connects to ${README_SERVER} with the key ${README_KEY}`);
  const code = snippet.replace(`'${README_SERVER}'`, `'${base}'`).replace(`'${README_KEY}'`, `'${API_KEY}'`)
    .replace(/from 'wick'/, `from '${pathToFileURL(path.join(root, 'wasm_glue', 'wick.mjs')).href}'`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-connect-'));
  try {
    fs.writeFileSync(path.join(dir, 'main.mjs'), code);
    const out = await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['main.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '', stderr = '';
      child.stdout.on('data', (d) => { stdout += d; });
      child.stderr.on('data', (d) => { stderr += d; });
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`the snippet exited with ${code}: ${stderr}`))));
    });
    assert.ok(out.startsWith(stories.greedy_text.slice(0, 60)), out.slice(0, 100));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
