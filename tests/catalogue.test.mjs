// tests/catalogue.test.mjs — the page's catalogue of popular GGUF files (web/catalogue.js) in
// Debian's Chromium (playwright-core, never a downloaded browser). The catalogue lists every
// family; each entry is a Hugging Face resolve URL of a file wasm32 can hold. Against a local
// stand-in for Hugging Face (`?hf=`: a server that answers /<org>/<repo>/resolve/main/<file>.gguf
// with a 302 to a second, "CDN" origin serving the bytes with Range and CORS, as huggingface.co
// does), choosing an entry shows its exact size and the memory it needs after Range requests
// only (checked on the server), the keyboard moves through the list, a missing file is an error,
// and Load model downloads it with the progress bar, keeps it in the Cache API and runs it; a
// second visit loads it from the cache without the network. A file the engine refuses (a Gemma 4
// mixture of experts served under the E2B entry's path) is refused from its header, by name and
// with the reason, and Load downloads nothing. Without `?hf=` nothing leaves for huggingface.co until a load is
// asked. Vision entries (issue 32) pair a model with its image encoder (mmproj), both sizes listed:
// choosing one (a synth chat model and a synth idefics3 mmproj served under SmolVLM 256M's paths)
// shows both files' exact sizes and counts the encoder in the memory needed, after Range requests
// only; Load (END TO END: it needs Wick.load's mmproj option, issue 32's engine API) downloads and
// keeps both, and the engine sees images. Everything is served on 127.0.0.1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models, runWick } from './helpers.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { launchChromium } from './browser.mjs';
import { smolVocab } from './vision-fixtures.mjs';
import { CATALOGUE, CATALOGUE_MAX_BYTES, HF, approximateSize, catalogueUrl, mmprojUrl, hubFromParam } from '../web/catalogue.js';
import '../wasm_glue/gguf-header.js'; // globalThis.WickGguf: the page's own byte formatting

const ARTIFACTS = process.env.WICK_ARTIFACTS || path.join(os.tmpdir(), 'wick-page-artifacts');

// The families of issues 12 and 27 that the page must offer, and the models named there (issue
// 27: Gemma 4 E2B, Gemma 3n E2B, Phi-4-mini, Granite 4.0-H Micro, Ministral 3 3B, and the hybrids
// Qwen3.5 and LFM2/LFM2.5; Gemma 4 E4B is not listed: its Q4_K_M files are over CATALOGUE_MAX_BYTES).
const FAMILIES = ['llama', 'qwen3', 'gemma3', 'gemma2', 'phi3', 'smollm3', 'granite', 'olmo2',
  'gemma4', 'gemma3n', 'granitehybrid', 'mistral3', 'qwen35', 'lfm2'];
const NAMED = ['llama-3.2-1b-instruct', 'llama-3.2-3b-instruct', 'qwen3-0.6b', 'qwen3-1.7b', 'gemma-3-270m-it', 'gemma-3-1b-it',
  'gemma-2-2b-it', 'phi-3.5-mini-instruct', 'smollm2-360m-instruct', 'smollm2-1.7b-instruct', 'smollm3-3b', 'granite-3.3-2b-instruct',
  'olmo-2-0425-1b-instruct',
  'gemma-4-e2b-it', 'gemma-3n-e2b-it', 'phi-4-mini-instruct', 'granite-4.0-h-micro', 'ministral-3-3b-instruct-2512', 'qwen3.5-0.8b',
  'lfm2-350m', 'lfm2.5-1.2b-instruct', 'smolvlm-256m-instruct', 'smolvlm-500m-instruct', 'gemma-3-4b-it'];
// issue 32's vision models: a model and its image encoder (mmproj) each, with the projector it names
const VISION = { 'smolvlm-256m-instruct': 'idefics3', 'smolvlm-500m-instruct': 'idefics3', 'gemma-3-4b-it': 'gemma3' };
// Families whose parameter count is mostly a per-layer embedding table (PLE: a row of 256 values
// per layer for each vocabulary entry, read one row per token, kept outside wasm memory by
// issue 27): only their entries may give effectiveParams beside params.
const PER_LAYER_EMBEDDING = ['gemma4', 'gemma3n'];

// What the stand-in serves under a catalogue entry's path: a qwen3 file to look at, and a llama
// file with a chat template that the engine loads today (under the SmolLM2 360M entry); before()
// adds a Gemma 4 mixture-of-experts header (the qwen3 file relabelled) under Gemma 4 E2B's path.
const SERVED = {
  'qwen3-0.6b': path.join(models, 'families', 'mini-qwen3-q8_0.gguf'),
  'smollm2-360m-instruct': path.join(models, 'mini', 'mini-chat-q8_0.gguf'),
};  // SmolVLM 256M's: a synth text model at the synth mmproj's width, written by before()
// and an entry's image encoder (before() writes a synth idefics3 mmproj for SmolVLM 256M), on the
// CDN as /repos/<id>--mmproj
const SERVED_MMPROJ = {};
const entry = (id) => CATALOGUE.find((e) => e.id === id);
const sizeOf = (id) => fs.statSync(SERVED[id]).size;
const formatBytes = (n) => globalThis.WickGguf.formatBytes(n);

let site, page0, hub, cdn, browser;
const log = []; // every request to the stand-in: {server, method, path, range, status, bytes}

function listen(server) {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r({ server, base: `http://127.0.0.1:${server.address().port}` })));
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'Content-Range, Content-Length, Accept-Ranges, ETag',
};

/** Records a request and answers it; a preflight (OPTIONS) is allowed the headers a download sends. */
function handler(name, respond) {
  return (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const record = { server: name, method: req.method, path: url.pathname, range: req.headers.range || null, status: 0, bytes: 0 };
    log.push(record);
    const send = (status, headers = {}, body) => {
      record.status = status;
      res.writeHead(status, { ...CORS, ...headers });
      res.end(body);
    };
    if (req.method === 'OPTIONS') {
      send(204, { 'Access-Control-Allow-Methods': 'GET, HEAD', 'Access-Control-Allow-Headers': 'Range, If-Range', 'Access-Control-Max-Age': '600' });
      return;
    }
    respond(req, res, url, record, send);
  };
}

/** huggingface.co's part: /<org>/<repo>/resolve/main/<file> redirects to the file's CDN address. */
function hubRespond(req, res, url, record, send) {
  const at = (u) => u && new URL(u).pathname === url.pathname;
  const found = Object.keys(SERVED).find((id) => at(catalogueUrl(entry(id), hub.base)));
  const encoder = Object.keys(SERVED_MMPROJ).find((id) => at(mmprojUrl(entry(id), hub.base)));
  if (!found && !encoder) { send(404, { 'Content-Type': 'text/plain' }, 'Entry not found'); return; }
  send(302, { Location: `${cdn.base}/repos/${found || `${encoder}--mmproj`}?expires=9999999999&signature=test` });
}

/** The CDN's part: the bytes, whole (200) or a range (206), with CORS. */
function cdnRespond(req, res, url, record, send) {
  const id = /^\/repos\/([\w.-]+)$/.exec(url.pathname)?.[1];
  const file = id && (SERVED[id] || SERVED_MMPROJ[id.replace(/--mmproj$/, '')]);
  if (!file) { send(404, { 'Content-Type': 'text/plain' }, 'not found'); return; }
  const size = fs.statSync(file).size;
  const headers = { 'Content-Type': 'application/octet-stream', 'Accept-Ranges': 'bytes', ETag: `"${id}-${size}"` };
  let start = 0, end = size - 1, status = 200;
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
  if (range && (range[1] || range[2])) {
    if (range[1]) { start = Number(range[1]); if (range[2]) end = Math.min(Number(range[2]), end); } else start = Math.max(0, size - Number(range[2]));
    if (start > end) { send(416, { 'Content-Range': `bytes */${size}` }); return; }
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  }
  headers['Content-Length'] = String(end - start + 1);
  record.status = status;
  res.writeHead(status, { ...CORS, ...headers });
  if (req.method === 'HEAD') { res.end(); return; }
  record.bytes = end - start + 1;
  fs.createReadStream(file, { start, end }).pipe(res);
}

async function launch(options = {}) {
  const context = await launchChromium('catalogue', options);
  // nothing may leave this machine: a request to the real hub fails and is counted
  context.outside = [];
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) => { context.outside.push(route.request().url()); route.abort(); });
  return context;
}

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-catalogue-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  // a Gemma 4 mixture-of-experts header (26B-A4B: gemma4.expert_count, as its converter writes);
  // the page must refuse it from the header, so its tensors are the qwen3 file's
  const g = readGguf(SERVED['qwen3-0.6b']);
  for (const kv of g.kv) if (kv.key.startsWith('qwen3.')) kv.key = `gemma4.${kv.key.slice(6)}`;
  setKv(g, 'general.architecture', T.STRING, 'gemma4');
  setKv(g, 'general.name', T.STRING, 'Gemma 4 26B A4B It');
  setKv(g, 'general.size_label', T.STRING, '26B-A4B');
  setKv(g, 'gemma4.expert_count', T.U32, 128);
  SERVED['gemma-4-e2b-it'] = path.join(site, 'gemma4-moe.gguf');
  fs.writeFileSync(SERVED['gemma-4-e2b-it'], writeGguf(g));
  SERVED_MMPROJ['smolvlm-256m-instruct'] = path.join(site, 'mmproj-idefics3.gguf');
  let r = runWick('native', ['synth', '--mmproj', 'idefics3', '--type', 'f16', '-o', SERVED_MMPROJ['smolvlm-256m-instruct']]);
  assert.equal(r.code, 0, r.stderr);
  // its text model: the mmproj's width (--shape vl), SmolVLM's image tokens, mini-chat's template
  smolVocab(path.join(site, 'vocab-vl.gguf'));
  r = runWick('native', ['synth', '--shape', 'vl', '--type', 'q8_0', '--vocab', path.join(site, 'vocab-vl.gguf'), '-o', path.join(site, 'vl.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  const template = readGguf(SERVED['smollm2-360m-instruct']).kv.find((e) => e.key === 'tokenizer.chat_template').value;
  SERVED['smolvlm-256m-instruct'] = path.join(site, 'smolvlm-vl.gguf');
  fs.writeFileSync(SERVED['smolvlm-256m-instruct'], writeGguf(setKv(readGguf(path.join(site, 'vl.gguf')), 'tokenizer.chat_template', T.STRING, template)));
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  page0 = await listen(createServer(site, { isolate: true }));
  hub = await listen(http.createServer(handler('hub', hubRespond)));
  cdn = await listen(http.createServer(handler('cdn', cdnRespond)));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  for (const s of [page0, hub, cdn]) if (s) { s.server.closeAllConnections(); s.server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openPage(query, context = browser) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(`${page0.base}/web/?autoload=0${query ? `&${query}` : ''}`);
  await page.waitForSelector('body[data-state=idle]', { timeout: 30000 });
  return page;
}

/** The requests for one served entry (its resolve path on the hub, its bytes on the CDN), from index `from` of the log. */
function requestsFor(id, from = 0) {
  const resolvePath = new URL(catalogueUrl(entry(id), hub.base)).pathname;
  return log.slice(from).filter((r) => (r.server === 'hub' && r.path === resolvePath) || (r.server === 'cdn' && r.path === `/repos/${id}`));
}

/** The requests for a served entry's image encoder (its mmproj resolve path, its bytes). */
function mmprojRequestsFor(id, from = 0) {
  const resolvePath = new URL(mmprojUrl(entry(id), hub.base)).pathname;
  return log.slice(from).filter((r) => (r.server === 'hub' && r.path === resolvePath) || (r.server === 'cdn' && r.path === `/repos/${id}--mmproj`));
}

/** Waits for the model check to name a file and returns its text. */
async function checked(page, file) {
  await page.waitForFunction((f) => {
    const box = document.getElementById('model-check');
    return box.querySelector('.memory') && box.textContent.includes(f);
  }, file, { timeout: 20000 });
  return page.textContent('#model-check');
}

test('the catalogue lists every family with real Hugging Face URLs, each file small enough for wasm32', () => {
  const ids = CATALOGUE.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, 'ids are unique');
  for (const id of NAMED) assert.ok(ids.includes(id), `${id} is listed`);
  for (const family of FAMILIES) assert.ok(CATALOGUE.some((e) => e.family === family), `family ${family} is offered`);
  for (const e of CATALOGUE) {
    assert.match(catalogueUrl(e), /^https:\/\/huggingface\.co\/[\w.-]+\/[\w.-]+\/resolve\/main\/[\w.-]+\.gguf$/, e.id);
    assert.ok(e.bytes > 1e8 && e.bytes + (e.mmproj?.bytes ?? 0) < CATALOGUE_MAX_BYTES, `${e.id}: ${e.bytes} bytes${e.mmproj ? ` + ${e.mmproj.bytes}` : ''}`);
    assert.equal(!!e.mmproj, e.id in VISION, `${e.id}: an image encoder exactly for the vision entries`);
    if (!e.mmproj) assert.equal(mmprojUrl(e), null);
    assert.ok(e.file.toLowerCase().includes(e.quant.toLowerCase()), `${e.id}: ${e.file} is ${e.quant}`);
    assert.ok(['Q4_K_M', 'Q8_0'].includes(e.quant), `${e.id}: ${e.quant}`);
    // the parameter bound is on what each token goes through: for most families that is every
    // parameter; a per-layer-embedding model's card counts its effective ones (Gemma 4 E2B: 5.1B
    // with the table, 2.3B effective), since its table is read one row per token and kept out of
    // wasm memory. What the file stores is bounded by its bytes (CATALOGUE_MAX_BYTES) either way.
    const computed = e.effectiveParams ?? e.params;
    assert.ok(computed > 1e8 && computed < 5e9, `${e.id}: ${computed} parameters a token goes through`);
    if (e.effectiveParams !== undefined) {
      assert.ok(PER_LAYER_EMBEDDING.includes(e.family), `${e.id}: only a per-layer-embedding family counts effective parameters`);
      assert.ok(e.effectiveParams < e.params, `${e.id}: effective ${e.effectiveParams} < ${e.params}`);
    }
    // every family is one the engine runs, or one it refuses by name with what it lacks
    assert.ok(globalThis.WickGguf.ARCHITECTURES.includes(e.family), `${e.id}: ${e.family} is not an architecture the engine runs`);
    assert.ok(e.name && e.repo.endsWith(e.repo.split('/')[1]) && /GGUF$/i.test(e.repo), `${e.id}: ${e.repo}`);
  }
  // each vision entry: the model and its image encoder, both files named and sized, from the same repository
  for (const [id, projector] of Object.entries(VISION)) {
    const e = entry(id);
    assert.ok(e.mmproj, `${id} has an mmproj`);
    assert.match(e.mmproj.file, /^mmproj-[\w.-]+\.gguf$/, id);
    assert.ok(Number.isInteger(e.mmproj.bytes) && e.mmproj.bytes > 5e7 && e.mmproj.bytes < 1e9, `${id}: mmproj ${e.mmproj.bytes} bytes`);
    assert.equal(e.mmproj.projector, projector, id);
    assert.equal(mmprojUrl(e), `https://huggingface.co/${e.repo}/resolve/main/${e.mmproj.file}`);
  }
  assert.equal(catalogueUrl(entry('smolvlm-256m-instruct')), 'https://huggingface.co/ggml-org/SmolVLM-256M-Instruct-GGUF/resolve/main/SmolVLM-256M-Instruct-Q8_0.gguf');
  assert.equal(mmprojUrl(entry('smolvlm-256m-instruct')), 'https://huggingface.co/ggml-org/SmolVLM-256M-Instruct-GGUF/resolve/main/mmproj-SmolVLM-256M-Instruct-Q8_0.gguf');
  assert.equal(mmprojUrl(entry('gemma-3-4b-it')), 'https://huggingface.co/ggml-org/gemma-3-4b-it-GGUF/resolve/main/mmproj-model-f16.gguf');
  assert.equal(approximateSize(639_446_688), '610 MiB');
  assert.equal(approximateSize(1_055_609_536), '0.98 GiB');
  assert.equal(catalogueUrl(entry('qwen3-0.6b')), 'https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf');
  assert.equal(catalogueUrl(entry('qwen3-0.6b'), 'http://127.0.0.1:9/mirror'), 'http://127.0.0.1:9/mirror/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf');
  // ?hf=: an http(s) origin (or origin and path), anything else falls back to Hugging Face
  assert.deepEqual(hubFromParam(null), { hub: HF });
  assert.deepEqual(hubFromParam('http://127.0.0.1:8081/'), { hub: 'http://127.0.0.1:8081' });
  assert.deepEqual(hubFromParam('https://hf-mirror.example/hf//'), { hub: 'https://hf-mirror.example/hf' });
  for (const bad of ['javascript:alert(1)', 'not a url', 'ftp://127.0.0.1/', 'http://u:p@127.0.0.1/', 'http://127.0.0.1/?x=1']) {
    const r = hubFromParam(bad);
    assert.equal(r.hub, HF, bad);
    assert.ok(r.error, bad);
  }
});

test('choosing an entry shows its size and memory after Range requests only; the keyboard moves through the list; Load downloads, caches and runs it', { timeout: 90000 }, async () => {
  const page = await openPage(`hf=${encodeURIComponent(hub.base)}`);
  try {
    // keyboard: from the default source, ↓ picks the catalogue; the list appears, labelled
    await page.focus('input[name=source][value=default]');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.isChecked('input[name=source][value=catalogue]'), true);
    assert.equal(await page.isVisible('#catalogue-field'), true);
    assert.equal(await page.textContent('#catalogue-field legend'), 'Popular GGUF files');
    const listed = await page.$$eval('input[name=catalogue-entry]', (inputs) => inputs.map((i) => ({
      id: i.value, family: i.dataset.family, url: i.dataset.url, label: i.closest('label').textContent, name: i.labels[0]?.textContent,
    })));
    assert.deepEqual(listed.map((l) => l.id), CATALOGUE.map((e) => e.id));
    for (const family of FAMILIES) assert.ok(listed.some((l) => l.family === family), `the page offers ${family}`);
    for (const l of listed) {
      const e = entry(l.id);
      assert.equal(l.url, catalogueUrl(e, hub.base));
      // name, approximate size (a vision entry's image encoder's too), family, parameters and quantization, all in the radio's label
      const sizes = `≈ about ${approximateSize(e.bytes)}${e.mmproj ? ` + ≈ about ${approximateSize(e.mmproj.bytes)} image encoder` : ''}`;
      assert.ok(l.name.includes(`${e.name} ${sizes} ${e.family}`) && l.name.includes(e.quant), l.name);
      if (e.mmproj) assert.ok(l.name.includes(`sees images (${e.mmproj.projector})`), l.name);
      assert.match(l.name, /parameters/);
    }
    assert.match(await page.textContent('#catalogue-hint'), new RegExp(`Files come from ${hub.base}`));
    assert.match(await page.textContent('#model-check'), /Choose a model from the list/);
    assert.equal(log.length, 0, 'showing the list fetches nothing');

    // choose the qwen3 entry: its exact size, what it is and the memory it needs, before any load
    await page.click(`input[name=catalogue-entry][value="qwen3-0.6b"]`);
    const qwen = entry('qwen3-0.6b');
    const text = await checked(page, qwen.file);
    assert.match(text, new RegExp(`${qwen.file.replace(/\./g, '\\.')}: ${formatBytes(sizeOf('qwen3-0.6b')).replace('.', '\\.')}`));
    assert.match(text, /qwen3/);
    assert.match(text, /Needs about .* of memory \(.* weights \+ .* KV cache \(\d[\d,]* tokens\) \+ scratch\)/);
    assert.equal(await page.getAttribute('#model-check .memory', 'class'), 'memory ok');
    assert.match(await page.textContent('#catalogue-detail'), /Qwen3-0\.6B-Q8_0\.gguf from Qwen\/Qwen3-0\.6B-GGUF/);
    assert.equal(await page.getAttribute('#catalogue-detail a', 'href'), `${hub.base}/Qwen/Qwen3-0.6B-GGUF`);
    const looked = requestsFor('qwen3-0.6b');
    assert.ok(looked.some((r) => r.server === 'hub' && r.method === 'GET' && r.status === 302), 'through the resolve URL\'s redirect');
    assert.ok(looked.some((r) => r.server === 'cdn' && r.method === 'GET' && r.status === 206), 'a ranged read of the bytes');
    for (const r of looked) assert.ok(r.method === 'OPTIONS' || r.method === 'HEAD' || (r.method === 'GET' && r.range), `only Range or HEAD requests: ${JSON.stringify(r)}`);
    const read = looked.reduce((n, r) => n + r.bytes, 0);
    assert.ok(read < sizeOf('qwen3-0.6b'), `read ${read} bytes of ${sizeOf('qwen3-0.6b')}: the header, not the file`);
    assert.equal(await page.textContent('#model-status'), '', 'nothing loaded');

    // keyboard: ↓ moves to the next entry (Qwen3 1.7B), which the stand-in does not have: an error, and the page goes on
    await page.focus('input[name=catalogue-entry][value="qwen3-0.6b"]');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.isChecked('input[name=catalogue-entry][value="qwen3-1.7b"]'), true);
    await page.waitForSelector('#model-check .memory.error');
    assert.match(await page.textContent('#model-check'), /Cannot use Qwen3-1\.7B-Q4_K_M\.gguf: .*404/);

    // choose SmolLM2 360M (a llama file with a chat template here) and load it: progress, cache, chat
    await page.click('input[name=catalogue-entry][value="smollm2-360m-instruct"]');
    const smol = entry('smollm2-360m-instruct');
    await checked(page, smol.file);
    assert.match(await page.textContent('#model-check .model-facts'), new RegExp(`: ${formatBytes(sizeOf('smollm2-360m-instruct')).replace('.', '\\.')}`));
    await page.evaluate(() => {
      window.progressSeen = [];
      new MutationObserver(() => {
        if (!document.getElementById('progress').hidden) window.progressSeen.push(document.getElementById('progress-text').textContent);
      }).observe(document.getElementById('model-panel'), { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const before = log.length;
    await page.click('#load-button');
    await page.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    assert.match(await page.textContent('#model-status'), /^Loaded .*llama/);
    const seen = await page.evaluate(() => window.progressSeen);
    assert.ok(seen.some((t) => /^Downloading: .* of /.test(t)), `the progress bar showed the download: ${JSON.stringify(seen)}`);
    const loaded = requestsFor('smollm2-360m-instruct', before);
    assert.ok(loaded.some((r) => r.server === 'hub' && r.method === 'GET' && !r.range && r.status === 302), JSON.stringify(loaded));
    assert.ok(loaded.some((r) => r.server === 'cdn' && r.method === 'GET' && !r.range && r.status === 200 && r.bytes === sizeOf('smollm2-360m-instruct')), JSON.stringify(loaded));
    await page.waitForFunction((f) => [...document.querySelectorAll('.cache-entry')].some((li) => li.textContent.includes(f)), smol.file);
    assert.equal(await page.isChecked('input[name=mode][value=chat]'), true, 'a model with a chat template opens in chat mode');
    await page.fill('#prompt', 'Hello!');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done=true]', { timeout: 30000 });
    assert.ok(await page.locator('.msg.assistant .tok').count() > 0, 'the loaded model answers');
    await page.locator('#model-panel').screenshot({ path: path.join(ARTIFACTS, 'page-catalogue.png') });
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }

  // a second visit: the entry is looked at and loaded from the Cache API, without the network
  const again = await openPage(`hf=${encodeURIComponent(hub.base)}`);
  try {
    const before = log.length;
    await again.check('input[name=source][value=catalogue]');
    await again.check('input[name=catalogue-entry][value="smollm2-360m-instruct"]');
    await checked(again, entry('smollm2-360m-instruct').file);
    await again.focus('#load-button'); // the keyboard loads it too

    await again.keyboard.press('Enter');
    await again.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    assert.match(await again.textContent('#model-status'), /from the cache/);
    assert.deepEqual(requestsFor('smollm2-360m-instruct', before), []);
    assert.deepEqual(again.errors, []);
  } finally {
    await again.close();
  }
  assert.deepEqual(browser.outside, [], 'no request left 127.0.0.1');
});

test('a file the engine refuses (a Gemma 4 mixture of experts) is refused from its header, by name and with the reason; Load downloads nothing', { timeout: 60000 }, async () => {
  const page = await openPage(`hf=${encodeURIComponent(hub.base)}`);
  try {
    await page.check('input[name=source][value=catalogue]');
    // a per-layer-embedding entry names both counts
    assert.match(await page.textContent('label:has(input[value="gemma-3n-e2b-it"]) .entry-facts'), /^gemma3n · 5\.4B parameters \(2\.0B effective\) · Q4_K_M/);
    assert.match(await page.textContent('label:has(input[value="gemma-4-e2b-it"]) .entry-facts'), /^gemma4 · 5\.1B parameters \(2\.3B effective\) · Q4_K_M/);
    const before = log.length;
    await page.click('input[name=catalogue-entry][value="gemma-4-e2b-it"]');
    await page.waitForSelector('#model-check .memory.error', { timeout: 20000 });
    const text = await page.textContent('#model-check');
    assert.match(text, /google_gemma-4-E2B-it-Q4_K_M\.gguf: /, 'the file was looked at (its header read)');
    assert.match(text, /wick cannot run this model: gemma4 \(Gemma 4 26B A4B It, 26B-A4B\) is a mixture-of-experts model \(gemma4\.expert_count = 128\)/);
    assert.equal(await page.getAttribute('#model-check .memory', 'role'), 'alert');
    // Load is refused before any download: only the header's Range requests reach the CDN
    await page.click('#load-button');
    await page.waitForTimeout(500);
    assert.equal(await page.getAttribute('body', 'data-state'), 'idle');
    const asked = requestsFor('gemma-4-e2b-it', before);
    assert.ok(asked.some((r) => r.server === 'cdn' && r.status === 206), JSON.stringify(asked));
    for (const r of asked) assert.ok(r.method === 'OPTIONS' || r.method === 'HEAD' || (r.method === 'GET' && r.range), `only the header was read: ${JSON.stringify(r)}`);
    assert.ok(asked.reduce((n, r) => n + r.bytes, 0) < sizeOf('gemma-4-e2b-it'), 'not the whole file');
    assert.equal(await page.textContent('#model-status'), '', 'nothing loaded');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('without ?hf= the entries point at huggingface.co and nothing is fetched until one is chosen; a bad ?hf= is refused', { timeout: 60000 }, async () => {
  const page = await openPage('');
  try {
    await page.check('input[name=source][value=catalogue]');
    const urls = await page.$$eval('input[name=catalogue-entry]', (inputs) => inputs.map((i) => i.dataset.url));
    assert.deepEqual(urls, CATALOGUE.map((e) => catalogueUrl(e)));
    assert.doesNotMatch(await page.textContent('#catalogue-hint'), /Files come from/);
    // every control of the list has a name (its label)
    const unnamed = await page.$$eval('#catalogue-field input', (inputs) => inputs.filter((i) => !i.labels?.length || !i.labels[0].textContent.trim()).length);
    assert.equal(unnamed, 0);
    await page.waitForTimeout(400);
    assert.deepEqual(browser.outside, [], 'showing the list reaches no outside host');
    // choosing one asks huggingface.co (blocked here: the page says it cannot reach it)
    await page.click('input[name=catalogue-entry][value="gemma-3-270m-it"]');
    await page.waitForSelector('#model-check .memory.error', { timeout: 20000 });
    assert.ok(browser.outside.length > 0 && browser.outside.every((u) => u === catalogueUrl(entry('gemma-3-270m-it'))), JSON.stringify(browser.outside));
    assert.match(await page.textContent('#model-check'), /Cannot use gemma-3-270m-it-Q8_0\.gguf/);
    browser.outside.length = 0;
    // at phone width the list fits the screen
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `no sideways scrolling at phone width (overflow ${overflow}px)`);
    await page.locator('#model-panel').screenshot({ path: path.join(ARTIFACTS, 'page-catalogue-phone.png') });
  } finally {
    await page.close();
  }
  const bad = await openPage('hf=javascript%3Aalert(1)');
  try {
    assert.match(await bad.textContent('#notices'), /is not an http\(s\) URL: the list of popular models uses https:\/\/huggingface\.co/);
    const first = await bad.getAttribute('input[name=catalogue-entry]', 'data-url');
    assert.match(first, /^https:\/\/huggingface\.co\//);
    assert.deepEqual(bad.errors, []);
  } finally {
    await bad.close();
  }
});

test('a vision entry lists its model and image encoder; choosing it shows both exact sizes and counts the encoder in the memory, after Range requests only', { timeout: 60000 }, async () => {
  const id = 'smolvlm-256m-instruct', e = entry(id), mmprojBytes = fs.statSync(SERVED_MMPROJ[id]).size;
  const page = await openPage(`hf=${encodeURIComponent(hub.base)}`);
  try {
    await page.check('input[name=source][value=catalogue]');
    const label = `label:has(input[value="${id}"])`;
    assert.equal(await page.textContent(`${label} .entry-size`), `≈ about ${approximateSize(e.bytes)}`);
    assert.equal(await page.textContent(`${label} .entry-mmproj`), ` + ≈ about ${approximateSize(e.mmproj.bytes)} image encoder`);
    assert.match(await page.textContent(`${label} .entry-facts`), /^llama · .* parameters · Q8_0 · sees images \(idefics3\)/);
    const before = log.length;
    await page.click(`input[name=catalogue-entry][value="${id}"]`);
    const text = await checked(page, e.file);
    const bytes = (n) => formatBytes(n).replace(/[.()]/g, '\\$&');
    assert.match(text, new RegExp(`${e.file.replace(/\./g, '\\.')}: ${bytes(sizeOf(id))}`));
    assert.match(text, new RegExp(`${e.mmproj.file.replace(/\./g, '\\.')}: ${bytes(mmprojBytes)} · image encoder \\(idefics3\\)`));
    assert.match(text, new RegExp(`Needs about .* of memory \\(.* weights \\+ ${bytes(mmprojBytes)} image encoder \\+ .* KV cache`));
    assert.match(await page.textContent('#catalogue-detail'), new RegExp(`${e.file.replace(/\./g, '\\.')} and ${e.mmproj.file.replace(/\./g, '\\.')} from ggml-org/SmolVLM-256M-Instruct-GGUF`));
    for (const asked of [requestsFor(id, before), mmprojRequestsFor(id, before)]) {
      assert.ok(asked.some((r) => r.server === 'hub' && r.status === 302) && asked.some((r) => r.server === 'cdn' && r.status === 206), JSON.stringify(asked));
      for (const r of asked) assert.ok(r.method === 'OPTIONS' || r.method === 'HEAD' || (r.method === 'GET' && r.range), `only Range or HEAD requests: ${JSON.stringify(r)}`);
    }
    assert.equal(await page.textContent('#model-status'), '', 'nothing loaded');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

// END TO END: depends on issue 32's engine API (Wick.load's mmproj option, engine.info.vision).
test('END TO END (engine API): Load downloads and keeps a vision entry\'s model and image encoder, and the engine sees images', { timeout: 90000 }, async () => {
  const id = 'smolvlm-256m-instruct', e = entry(id), mmprojBytes = fs.statSync(SERVED_MMPROJ[id]).size;
  const page = await openPage(`hf=${encodeURIComponent(hub.base)}`);
  try {
    await page.check('input[name=source][value=catalogue]');
    await page.click(`input[name=catalogue-entry][value="${id}"]`);
    await checked(page, e.file);
    const before = log.length;
    await page.click('#load-button');
    await page.waitForSelector('body[data-state=ready], body[data-state=error]', { timeout: 60000 });
    assert.match(await page.textContent('#model-status'), /^Loaded .* · sees images \(idefics3 image encoder, /);
    assert.equal(await page.evaluate(() => window.wickPage.state.engine.info.vision?.projector), 'idefics3');
    const got = mmprojRequestsFor(id, before);
    assert.ok(got.some((r) => r.server === 'cdn' && r.method === 'GET' && !r.range && r.status === 200 && r.bytes === mmprojBytes), JSON.stringify(got));
    // both files kept: the entry is marked as working offline only now
    await page.waitForFunction((files) => files.every((f) => [...document.querySelectorAll('.cache-entry')].some((li) => li.textContent.includes(f))), [e.file, e.mmproj.file]);
    assert.equal(await page.getAttribute(`label:has(input[value="${id}"])`, 'data-kept'), 'true');
    assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
    assert.equal(await page.isDisabled('#image-button'), false);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});
