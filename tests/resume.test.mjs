// tests/resume.test.mjs — downloads that survive a reload (issue 14, acceptance 4), in Debian's
// Chromium (playwright-core, never a downloaded browser): a 134m synth file served slowly is cut
// by a reload at about half; the next load reads the kept bytes back and asks the server for the
// rest with a Range request past 0 and If-Range, and the engine gives the same top-64
// probabilities and tokens as an uninterrupted load. A load stopped with an AbortSignal keeps its
// bytes the same way. With room for one copy only, the pieces make way for the whole file. A
// file changed on the server between the two visits is sent whole again (the server's answer to
// If-Range is 200) and gives the new file's numbers. First, the server's side on its own:
// tools/serve.mjs sends validators, honours If-Range and throttles.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createServer } from '../tools/serve.mjs';
import { root, shared, nativeCli } from './helpers.mjs';
import { launchChromium } from './browser.mjs';

const PAGE = `<!doctype html><meta charset="utf-8"><title>wick resume test</title>
<script type="module">import { Wick } from '/wasm_glue/wick.mjs'; window.Wick = Wick; window.ready = true;</script>`;
const MODEL = '/m/model.gguf';
const SLOW = 24 << 20; // bytes per second while a download is to be cut: about 3 s to half of the file

let dir, site, server, base, context, size, fileA, fileB;
const log = [];      // the server's answers to the model's URL
let rate = 0;        // the model's bytes per second (0: full speed), read as each answer starts

/** A 134m synth file (Q8_0, about 137 MiB): the same bytes for a seed, different ones for another. */
function synth(seed) {
  const file = path.join(dir, `synth-134m-q8_0-seed${seed}.gguf`);
  execFileSync(nativeCli, ['synth', '--shape', '134m', '--type', 'q8_0', '--seed', String(seed), '-o', file,
    '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')], { cwd: root });
  return file;
}

/** Puts a synth file where the server serves the model, with its own modification time (so its own ETag). */
function serveModel(file, mtime) {
  const target = path.join(site, 'm', 'model.gguf');
  fs.copyFileSync(file, target);
  fs.utimesSync(target, mtime, mtime);
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-resume-'));
  site = path.join(dir, 'site');
  fs.mkdirSync(path.join(site, 'm'), { recursive: true });
  for (const d of ['wasm_glue', 'build', 'node_modules', 'web']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.writeFileSync(path.join(site, 'index.html'), PAGE);
  fileA = synth(1);
  fileB = synth(2);
  size = fs.statSync(fileA).size;
  assert.equal(fs.statSync(fileB).size, size);
  server = createServer(site, {
    isolate: true,
    onRequest: (entry) => { if (entry.path === MODEL) log.push(entry); },
    throttle: (p) => (p === MODEL ? rate : 0),
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  context = await launchChromium('resume');
});

after(async () => {
  await context?.close();
  server?.closeAllConnections();
  server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function openPage() {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error('page error:', e.message));
  await page.goto(`${base}/index.html`);
  await page.waitForFunction(() => window.ready === true);
  return page;
}

// Runs in the page: loads the model and returns what the engine makes of it (the top 64
// probabilities of each step of a seeded draw at temperature 1, the greedy tokens) and the progress.
const loadAndRun = async ({ url, options }) => {
  const events = [];
  const engine = await window.Wick.load(url, { threads: 1, contextSize: 256, ...options, onProgress: (p) => events.push(p) });
  const steps = [];
  for await (const c of engine.generate('Once upon a time', { maxTokens: 6, temperature: 1, seed: 7, probs: 64 }))
    if (!c.done) steps.push({ tokens: c.tokens, probs: c.probs.map((p) => [p.token, p.p]) });
  const greedy = [];
  for await (const c of engine.generate('Once upon a time', { maxTokens: 6, temperature: 0 })) if (!c.done) greedy.push(...c.tokens);
  const fromCache = engine.info.fromCache;
  await engine.unload();
  return { steps, greedy, fromCache, events };
};

/** What an uninterrupted load of the file now served gives (nothing read from or kept in the cache). */
async function reference(page) {
  const r = await page.evaluate(loadAndRun, { url: MODEL, options: { cache: false } });
  assert.equal(r.steps.length, 6);
  return { steps: r.steps, greedy: r.greedy };
}

/** Starts a slow load in the page and returns once the server has sent about half of the file. */
async function startSlowLoad(page) {
  rate = SLOW;
  const at = log.length;
  await page.evaluate((url) => {
    window.events = [];
    window.controller = new AbortController();
    window.loading = window.Wick.load(url, { threads: 1, contextSize: 256, signal: window.controller.signal, onProgress: (p) => window.events.push(p) })
      .then(() => 'loaded', (e) => e.code);
  }, MODEL);
  const deadline = Date.now() + 60000;
  while (!(log.length > at && log.at(-1).sent >= size / 2)) {
    assert.ok(Date.now() < deadline, 'the slow download never reached half of the file');
    await new Promise((r) => setTimeout(r, 20));
  }
  const entry = log.at(-1);
  assert.equal(entry.status, 200);
  assert.equal(entry.range, null);
  return entry;
}

/** Waits until the server's answer has ended (the browser dropped the connection), then serves at full speed. */
async function untilClosed(entry) {
  // (well under a second alone; once over 10 s in a full make test with another suite on both cores)
  const deadline = Date.now() + 30000;
  while (!entry.closed) {
    assert.ok(Date.now() < deadline, 'the cut download was never closed');
    await new Promise((r) => setTimeout(r, 20));
  }
  rate = 0;
}

/** A slow load of the served file in the page, stopped with its AbortSignal at about half; returns the kept entries. */
async function cutByAbort(page) {
  await page.evaluate(() => window.Wick.cache.clear());
  await startSlowLoad(page);
  await page.evaluate(() => window.controller.abort());
  assert.equal(await page.evaluate(() => window.loading), 'E_ABORTED');
  rate = 0;
  const kept = await partials(page);
  assert.equal(kept.length, 1);
  return kept;
}

test('tools/serve.mjs: ETag and Last-Modified on every file; a Range whose If-Range does not match gets the whole file', async () => {
  serveModel(fileA, new Date('2025-12-31T00:00:00Z'));
  const url = `${base}${MODEL}`;
  const head = await fetch(url, { method: 'HEAD' });
  const etag = head.headers.get('ETag'), lastModified = head.headers.get('Last-Modified');
  assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
  assert.equal(lastModified, 'Wed, 31 Dec 2025 00:00:00 GMT');
  const ask = async (headers) => {
    const r = await fetch(url, { headers: { Range: 'bytes=100-199', ...headers } });
    const body = await r.arrayBuffer();
    return [r.status, r.headers.get('Content-Range'), body.byteLength];
  };
  assert.deepEqual(await ask({}), [206, `bytes 100-199/${size}`, 100]);
  assert.deepEqual(await ask({ 'If-Range': etag }), [206, `bytes 100-199/${size}`, 100]);
  assert.deepEqual(await ask({ 'If-Range': lastModified }), [206, `bytes 100-199/${size}`, 100]);
  assert.deepEqual(await ask({ 'If-Range': '"another-version"' }), [200, null, size]);
  assert.deepEqual(await ask({ 'If-Range': 'Thu, 01 Jan 2026 00:00:00 GMT' }), [200, null, size]);
  // another version of the file, the same size: another ETag
  serveModel(fileB, new Date('2025-12-31T00:00:01Z'));
  assert.notEqual((await fetch(url, { method: 'HEAD' })).headers.get('ETag'), etag);
  assert.deepEqual(await ask({ 'If-Range': etag }), [200, null, size]);
  // the throttle holds a body to its rate
  rate = 8 << 20;
  const t0 = Date.now();
  const r = await fetch(url, { headers: { Range: `bytes=0-${(4 << 20) - 1}` } });
  assert.equal((await r.arrayBuffer()).byteLength, 4 << 20);
  rate = 0;
  assert.ok(Date.now() - t0 >= 400, `4 MiB at 8 MiB/s took ${Date.now() - t0} ms`);
});

const partials = (page) => page.evaluate(() => window.Wick.cache.list({ partial: true }));

test('a download cut by a reload at half resumes from the kept bytes with Range, and gives the same numbers', { timeout: 240000 }, async () => {
  serveModel(fileA, new Date('2026-01-01T00:00:00Z'));
  const page = await openPage();
  try {
    await page.evaluate(() => window.Wick.cache.clear());
    const ref = await reference(page);

    const cut = await startSlowLoad(page);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    await untilClosed(cut);
    const cutSent = cut.sent;
    assert.ok(cutSent < size, `the cut download sent ${cutSent} of ${size} bytes`);

    // the kept bytes are listed apart from the whole files
    const kept = await partials(page);
    assert.deepEqual(await page.evaluate(() => window.Wick.cache.list()), []);
    assert.equal(kept.length, 1, JSON.stringify(kept));
    assert.equal(kept[0].url, `${base}${MODEL}`);
    assert.equal(kept[0].partial, true);
    assert.equal(kept[0].total, size);
    // a reload loses the piece being filled and the writes under way: most of what came is kept
    assert.ok(kept[0].bytes >= size / 8 && kept[0].bytes <= cutSent, `kept ${kept[0].bytes} bytes of the ${cutSent} sent`);
    console.log(`# cut by a reload after ${cutSent} of ${size} bytes sent: ${kept[0].bytes} kept`);

    const at = log.length;
    const r = await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    const asked = log.slice(at);
    assert.equal(asked.length, 1, JSON.stringify(asked.map((e) => [e.range, e.status])));
    assert.equal(asked[0].range, `bytes=${kept[0].bytes}-`);
    assert.ok(asked[0].ifRange, 'the Range request carries If-Range');
    assert.equal(asked[0].status, 206);
    assert.equal(asked[0].sent, size - kept[0].bytes);
    const download = r.events.filter((e) => e.phase === 'download');
    assert.equal(download.at(-1).resumed, kept[0].bytes);
    assert.equal(download.at(-1).loaded, size);
    assert.ok(download.every((e) => e.cached === false));
    assert.equal(r.fromCache, false);
    assert.deepEqual(r.steps, ref.steps);
    assert.deepEqual(r.greedy, ref.greedy);

    // the whole file is kept as before, and the pieces are gone
    const list = await partials(page);
    assert.deepEqual(list.map((e) => [e.url, e.bytes, !!e.partial]), [[`${base}${MODEL}`, size, false]]);
    const again = await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    assert.equal(again.fromCache, true);
    assert.deepEqual(again.steps, ref.steps);
  } finally {
    rate = 0;
    await page.close();
  }
});

test('a load stopped with an AbortSignal keeps its bytes for the next load; Wick.cache.delete forgets them', { timeout: 240000 }, async () => {
  serveModel(fileA, new Date('2026-01-02T00:00:00Z'));
  const page = await openPage();
  try {
    const kept = await cutByAbort(page);
    // every byte that reached the worker is kept, the last ones as a shorter piece
    const received = await page.evaluate(() => Math.max(...window.events.filter((e) => e.phase === 'download').map((e) => e.loaded)));
    assert.ok(kept[0].bytes >= received && kept[0].bytes >= size / 4 && kept[0].bytes < size, `kept ${kept[0].bytes}, received ${received}`);

    const at = log.length;
    const r = await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    assert.deepEqual(log.slice(at).map((e) => [e.range, e.status]), [[`bytes=${kept[0].bytes}-`, 206]]);
    assert.equal(r.events.filter((e) => e.phase === 'download').at(-1).resumed, kept[0].bytes);

    // cut again, then forgotten: the next load starts from 0
    await page.evaluate(() => window.Wick.cache.clear());
    await startSlowLoad(page);
    await page.evaluate(() => window.controller.abort());
    assert.equal(await page.evaluate(() => window.loading), 'E_ABORTED');
    rate = 0;
    assert.equal((await partials(page)).length, 1);
    assert.equal(await page.evaluate((url) => window.Wick.cache.delete(url), MODEL), true);
    assert.deepEqual(await partials(page), []);
    const next = log.length;
    await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    assert.deepEqual(log.slice(next).map((e) => [e.range, e.status]), [[null, 200]]);
  } finally {
    rate = 0;
    await page.close();
  }
});

test('with room for one copy of the file only, the pieces give way and the whole file is kept', { timeout: 240000 }, async () => {
  serveModel(fileA, new Date('2026-01-05T00:00:00Z'));
  const page = await openPage();
  const cdp = await context.newCDPSession(page);
  try {
    await page.evaluate(() => window.Wick.cache.clear());
    // (enforced by puts, although this Chromium's navigator.storage.estimate() does not report it)
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: base, quotaSize: Math.round(size * 1.5) });
    const r = await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    assert.equal(r.fromCache, false);
    const list = await partials(page);
    assert.deepEqual(list.map((e) => [e.url, e.bytes, !!e.partial]), [[`${base}${MODEL}`, size, false]]);
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: base }).catch(() => {});
    await cdp.detach().catch(() => {});
    await page.close();
  }
});

test('a file changed on the server between two visits is downloaded again from the start', { timeout: 240000 }, async () => {
  serveModel(fileA, new Date('2026-01-03T00:00:00Z'));
  const page = await openPage();
  try {
    await page.evaluate(() => window.Wick.cache.clear());
    const refA = await reference(page);
    const cut = await startSlowLoad(page);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    await untilClosed(cut);
    const kept = await partials(page);
    assert.equal(kept.length, 1);
    assert.ok(kept[0].bytes > 0);

    // a new version of the file, the same size: only its validators tell it apart
    serveModel(fileB, new Date('2026-01-04T00:00:00Z'));
    const at = log.length;
    const r = await page.evaluate(loadAndRun, { url: MODEL, options: {} });
    const asked = log.slice(at);
    // the kept bytes' Range request is answered with the whole new file (If-Range did not match)
    assert.deepEqual(asked.map((e) => [e.range, e.status]), [[`bytes=${kept[0].bytes}-`, 200]]);
    assert.equal(asked[0].sent, size);
    const refB = await reference(page);
    assert.notDeepEqual(refB.steps, refA.steps);
    assert.deepEqual(r.steps, refB.steps);
    assert.deepEqual(r.greedy, refB.greedy);
    const list = await partials(page);
    assert.deepEqual(list.map((e) => [e.url, e.bytes, !!e.partial]), [[`${base}${MODEL}`, size, false]]);
  } finally {
    rate = 0;
    await page.close();
  }
});

test('the page lists an unfinished download apart from kept models, and its progress says where it resumed', { timeout: 240000 }, async () => {
  serveModel(fileA, new Date('2026-01-06T00:00:00Z'));
  const page = await openPage();
  try {
    await cutByAbort(page);

    // the page (no autoload): the cache panel shows the unfinished download with its figures
    await page.goto(`${base}/web/index.html?autoload=0`);
    await page.waitForSelector('.cache-entry.partial', { timeout: 30000 });
    const entry = await page.textContent('.cache-entry.partial');
    assert.match(entry, /model\.gguf.*of .*, resumes on the next load/s);
    assert.match(await page.textContent('.cache-total'), /0 files and 1 unfinished download/);
    assert.equal(await page.isDisabled('#cache-clear'), false);
    // not counted as available offline
    assert.equal(await page.evaluate(() => window.wickPage.state.kept.size), 0);

    // loading it by URL: the progress line says where the download resumed
    await page.evaluate(() => {
      window.progressLines = [];
      new MutationObserver(() => window.progressLines.push(document.getElementById('progress-text').textContent))
        .observe(document.getElementById('progress-text'), { childList: true, characterData: true, subtree: true });
    });
    await page.check('input[name=source][value=url]');
    await page.fill('#model-url', `${base}${MODEL}`);
    await page.click('#load-button'); // looks at the URL's header first, then loads
    // (the rest of 137 MiB downloaded, kept whole in the Cache API, the pieces dropped, the model
    // loaded: seconds alone, but once over 60 s while another suite kept both cores busy)
    await page.waitForSelector('body[data-state=ready]', { timeout: 150000 });
    const lines = await page.evaluate(() => window.progressLines);
    assert.ok(lines.some((l) => /^Downloading: .* · resumed at /.test(l)), lines.slice(0, 5).join(' | '));
    // now kept whole: listed as a model, no unfinished entry left
    await page.waitForFunction(() => !document.querySelector('.cache-entry.partial') && document.querySelectorAll('.cache-entry').length === 1);
  } finally {
    rate = 0;
    await page.close();
  }
});
