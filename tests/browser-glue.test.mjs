// tests/browser-glue.test.mjs — the JavaScript API in Debian's Chromium (playwright-core, never a
// downloaded browser): the engine in a Web Worker with the pthreads build on a cross-origin
// isolated page and the single-threaded build on a plain one; downloads kept in the Cache API and
// loaded again with the network off; a download cut halfway resumed with Range and cached only
// whole; a local File not cached; chat completions with @huggingface/jinja loaded by the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models, greedyText } from './helpers.mjs';
import { launchChromium } from './browser.mjs';

// what loadAndGenerate's 40 greedy tokens of stories260K stream: the reference's first 40
const GREEDY_40 = greedyText(40);
const storiesBytes = fs.statSync(path.join(models, 'stories260K.gguf')).size;

const PAGE = `<!doctype html><meta charset="utf-8"><title>wick glue test</title>
<script type="module">import { Wick } from '/wasm_glue/wick.mjs'; window.Wick = Wick; window.ready = true;</script>`;

let site, browser, isolated, plain;

/** A server over a folder that links the repository's glue and builds and the shared models;
 *  it logs requests, can refuse model requests ("offline") and cut the first download of /cut/. */
async function startSite(isolate) {
  const handler = createServer(site, { isolate }).listeners('request')[0];
  const s = { log: [], offline: false, cutDone: false };
  s.server = http.createServer((req, res) => {
    s.log.push({ url: req.url, range: req.headers.range || null });
    const isModel = /\.gguf$/.test(req.url);
    if (isModel && s.offline) { req.socket.destroy(); return; }
    if (req.url.startsWith('/cut/') && !req.headers.range && !s.cutDone) {
      s.cutDone = true;
      const bytes = fs.readFileSync(path.join(models, path.basename(req.url)));
      res.writeHead(200, { 'Content-Length': String(bytes.length), 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream',
        'Cross-Origin-Resource-Policy': 'same-origin' });
      res.write(bytes.subarray(0, bytes.length >> 1), () => setTimeout(() => res.destroy(), 50));
      return;
    }
    if (req.url.startsWith('/cut/')) req.url = req.url.replace('/cut/', '/models/');
    handler(req, res);
  });
  await new Promise((r) => s.server.listen(0, '127.0.0.1', r));
  s.base = `http://127.0.0.1:${s.server.address().port}`;
  return s;
}

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-site-'));
  for (const d of ['wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  fs.writeFileSync(path.join(site, 'index.html'), PAGE);
  isolated = await startSite(true);
  plain = await startSite(false);
  browser = await launchChromium('glue');
});

after(async () => {
  await browser?.close();
  for (const s of [isolated, plain]) if (s) { s.server.closeAllConnections(); s.server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openPage(s) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e.message));
  await page.goto(`${s.base}/index.html`);
  await page.waitForFunction(() => window.ready === true);
  return page;
}

// Runs in the page: loads a model, generates greedily, returns what the test checks.
const loadAndGenerate = async ({ url, options }) => {
  const events = [];
  const engine = await window.Wick.load(url, { ...options, onProgress: (p) => events.push(p) });
  const chunks = [];
  let final;
  for await (const c of engine.generate('Once upon a time', { maxTokens: 40, temperature: 0 })) {
    if (c.done) final = c; else chunks.push(c.text);
  }
  const result = { isolated: self.crossOriginIsolated, build: engine.build, multiThreaded: engine.multiThreaded, relaxedSimd: engine.relaxedSimd, threads: engine.threads,
    fromCache: engine.info.fromCache, events, chunks, text: chunks.join(''), final };
  await engine.unload();
  return result;
};

test('cross-origin isolated page: the pthreads build in a Web Worker streams the greedy text', { timeout: 60000 }, async () => {
  const page = await openPage(isolated);
  try {
    const r = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 2, cache: false } });
    assert.equal(r.isolated, true);
    assert.equal(r.build, 'mt-relaxed', 'Chromium has relaxed SIMD: its build');
    assert.equal(r.multiThreaded, true);
    assert.equal(r.threads, 2);
    assert.ok(r.chunks.length > 5, 'several chunks');
    assert.equal(r.text, GREEDY_40);
    assert.ok(r.final.timings.decodeTokensPerSecond > 0);
    const download = r.events.filter((e) => e.phase === 'download');
    assert.equal(download.at(-1).loaded, storiesBytes);
    assert.equal(r.events.at(-1).phase, 'load');
  } finally {
    await page.close();
  }
});

test('relaxed SIMD reported missing: the plain builds, with the same greedy text as the relaxed ones', { timeout: 60000 }, async () => {
  for (const s of [isolated, plain]) {
    const page = await browser.newPage();
    try {
      // a browser without relaxed SIMD: the glue's probe (and any module with a relaxed dot) does not validate
      await page.addInitScript(() => {
        const validate = WebAssembly.validate;
        window.realValidate = validate;
        WebAssembly.validate = function (bytes) {
          const u = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
          for (let i = 0; i + 2 < u.length; i++) if (u[i] === 0xfd && u[i + 1] === 0x92 && u[i + 2] === 0x02) return false;
          return validate.call(this, bytes);
        };
      });
      await page.goto(`${s.base}/index.html`);
      await page.waitForFunction(() => window.ready === true);
      assert.equal(await page.evaluate(() => window.Wick.hasRelaxedSimd()), false);
      const r = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 2, cache: false } });
      assert.equal(r.build, s === isolated ? 'mt' : 'st');
      assert.equal(r.relaxedSimd, false);
      // the relaxed build in the same page when asked for; relaxedSimd: false forces the plain one
      await page.evaluate(() => { WebAssembly.validate = window.realValidate; });
      const relaxedAvailable = await page.evaluate(() => window.Wick.hasRelaxedSimd());
      const rx = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 2, cache: false } });
      const forced = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 2, cache: false, relaxedSimd: false } });
      assert.equal(relaxedAvailable, true);
      assert.equal(rx.build, s === isolated ? 'mt-relaxed' : 'st-relaxed');
      assert.equal(forced.build, r.build);
      assert.equal(r.text, GREEDY_40);
      assert.equal(rx.text, r.text);
      assert.equal(forced.text, r.text);
    } finally {
      await page.close();
    }
  }
});

test('page without isolation: the single-threaded build generates the same text', { timeout: 60000 }, async () => {
  const page = await openPage(plain);
  try {
    const r = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { cache: false } });
    assert.equal(r.isolated, false);
    assert.equal(r.build, 'st-relaxed');
    assert.equal(r.multiThreaded, false);
    assert.equal(r.threads, 1);
    assert.equal(r.text, GREEDY_40);
  } finally {
    await page.close();
  }
});

test('a second load comes from the Cache API with the network off; the cache lists and forgets it', { timeout: 60000 }, async () => {
  const page = await openPage(isolated);
  try {
    await page.evaluate(() => window.Wick.cache.clear());
    const first = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 1 } });
    assert.equal(first.fromCache, false);
    const list = await page.evaluate(() => window.Wick.cache.list());
    assert.equal(list.length, 1);
    assert.equal(list[0].url, `${isolated.base}/models/stories260K.gguf`);
    assert.equal(list[0].bytes, storiesBytes);
    assert.ok(!Number.isNaN(Date.parse(list[0].date)));

    isolated.offline = true;
    const before = isolated.log.filter((e) => /\.gguf$/.test(e.url)).length;
    const second = await page.evaluate(loadAndGenerate, { url: '/models/stories260K.gguf', options: { threads: 1 } });
    assert.equal(isolated.log.filter((e) => /\.gguf$/.test(e.url)).length, before, 'no request for the model');
    assert.equal(second.fromCache, true);
    assert.equal(second.text, GREEDY_40);
    const download = second.events.filter((e) => e.phase === 'download');
    assert.ok(download.length >= 1 && download.every((e) => e.cached));
    assert.equal(download.at(-1).loaded, storiesBytes);

    assert.equal(await page.evaluate(() => window.Wick.cache.delete('/models/stories260K.gguf')), true);
    assert.deepEqual(await page.evaluate(() => window.Wick.cache.list()), []);
    // offline and not cached: a clear E_FETCH
    const err = await page.evaluate(() => window.Wick.load('/models/stories260K.gguf').then(() => null, (e) => ({ code: e.code, message: e.message })));
    assert.equal(err.code, 'E_FETCH');
  } finally {
    isolated.offline = false;
    await page.close();
  }
});

test('a download cut halfway resumes with Range and only the whole file is cached', { timeout: 60000 }, async () => {
  const page = await openPage(isolated);
  try {
    await page.evaluate(() => window.Wick.cache.clear());
    const r = await page.evaluate(loadAndGenerate, { url: '/cut/stories260K.gguf', options: { threads: 1 } });
    assert.equal(r.text, GREEDY_40);
    const cut = isolated.log.filter((e) => e.url === '/cut/stories260K.gguf');
    assert.equal(cut[0].range, null);
    assert.match(cut[1].range, /^bytes=[1-9]\d*-$/);
    const list = await page.evaluate(() => window.Wick.cache.list());
    assert.deepEqual(list.map((e) => [e.url, e.bytes]), [[`${isolated.base}/cut/stories260K.gguf`, storiesBytes]]);
    isolated.offline = true;
    const again = await page.evaluate(loadAndGenerate, { url: '/cut/stories260K.gguf', options: { threads: 1 } });
    assert.equal(again.fromCache, true);
    assert.equal(again.text, r.text);
  } finally {
    isolated.offline = false;
    await page.evaluate(() => window.Wick.cache.clear());
    await page.close();
  }
});

test('a local File loads without being cached; chat completions stream with the model\'s template', { timeout: 60000 }, async () => {
  const page = await openPage(isolated);
  try {
    const r = await page.evaluate(async () => {
      await window.Wick.cache.clear();
      const bytes = await (await fetch('/models/mini/mini-chat-q8_0.gguf')).arrayBuffer();
      const file = new File([bytes], 'mini-chat-q8_0.gguf');
      const engine = await window.Wick.load(file, { threads: 1 });
      const stream = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hello!' }], stream: true, max_tokens: 10, temperature: 0 });
      const chunks = [];
      for await (const c of stream) chunks.push(c);
      const cached = await window.Wick.cache.list();
      await engine.unload();
      return { chunks, cached, name: engine.info.name };
    });
    assert.deepEqual(r.cached, []);
    assert.ok(r.chunks.length >= 3);
    assert.equal(r.chunks[0].choices[0].delta.role, 'assistant');
    // greedy with max_tokens 10 (deterministic: the same in every build): ten tokens, cut by the length
    assert.equal(r.chunks.at(-1).choices[0].finish_reason, 'length');
    assert.equal(r.chunks.at(-1).usage.completion_tokens, 10);
  } finally {
    await page.close();
  }
});
