// tests/progress.test.mjs — the load progress contract (README, "The JavaScript API"): every event
// of a load is followed, in Node (no Cache API: download, load) and in Debian's Chromium with a
// split model, fresh (download and store per part, then the load into the engine) and cached (the
// parts read back from the Cache API, then the load). `progress` never decreases and ends at 1;
// `phase` comes in the order of the steps; `loaded` of `total` counts the model's bytes within
// each phase, never going back and ending at the whole.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { Wick } from '../wasm_glue/wick.mjs';
import { readGguf, splitGguf } from './gguf.mjs';
import { root, models } from './helpers.mjs';
import { launchChromium } from './browser.mjs';

const MODEL = path.join(models, 'mini', 'mini-f32.gguf'); // 7 MB: several events per phase
const PARTS = 3;
const modelBytes = fs.statSync(MODEL).size;
const parts = splitGguf(readGguf(MODEL), PARTS);
const splitBytes = parts.reduce((n, b) => n + b.length, 0); // each part has its own header

let site, server, base, browser;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-progress-'));
  for (const d of ['wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.copyFileSync(MODEL, path.join(site, 'mini.gguf'));
  parts.forEach((b, i) => fs.writeFileSync(path.join(site, `mini-0000${i + 1}-of-0000${PARTS}.gguf`), b));
  fs.writeFileSync(path.join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>wick progress</title>
<script type="module">import { Wick } from '/wasm_glue/wick.mjs'; window.Wick = Wick; window.ready = true;</script>`);
  // the model files at 20 MB/s (about 0.35 s for the 7 MB file): a download on an idle machine
  // lasts several of the engine's 50 ms progress intervals, so that several events can come
  server = createServer(site, { isolate: true, throttle: (rel) => (rel.endsWith('.gguf') ? 20e6 : 0) });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('progress');
});

after(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

/** Checks the events of one load against the contract; phases: the order they must come in. */
function checkEvents(events, phases, total) {
  assert.ok(events.length > phases.length, `${events.length} events`);
  for (const [i, e] of events.entries()) {
    assert.equal(typeof e.progress, 'number', `event ${i}: progress`);
    assert.ok(e.progress >= 0 && e.progress <= 1, `event ${i}: progress ${e.progress}`);
    if (i > 0) assert.ok(e.progress >= events[i - 1].progress, `event ${i} (${e.phase}): progress ${e.progress} after ${events[i - 1].progress}`);
    assert.ok(e.loaded <= e.total, `event ${i}: ${e.loaded} of ${e.total}`);
  }
  assert.equal(events.at(-1).progress, 1, 'the last event says the whole load is done');
  assert.equal(events.at(-1).phase, 'load');
  // the load into the engine comes last, once; each phase's bytes never go back
  const order = events.map((e) => e.phase).filter((p, i, all) => p !== all[i - 1]);
  assert.deepEqual([...new Set(order)], phases, `phases ${order.join(' → ')}`);
  assert.equal(order.indexOf('load'), order.length - 1, `the load comes last, once: ${order.join(' → ')}`);
  for (const phase of phases) {
    const mine = events.filter((e) => e.phase === phase);
    assert.ok(mine.length > 0, `a ${phase} event`);
    for (let i = 1; i < mine.length; i++) assert.ok(mine[i].loaded >= mine[i - 1].loaded, `${phase}: ${mine[i].loaded} after ${mine[i - 1].loaded}`);
    assert.equal(mine.at(-1).loaded, total, `${phase} ends at the whole model`);
    assert.equal(mine.at(-1).total, total);
  }
}

test('Node: a load over HTTP reports download, then load; progress grows to 1', { timeout: 60000 }, async () => {
  const events = [];
  const e = await Wick.load(`${base}/mini.gguf`, { threads: 1, onProgress: (p) => events.push(p) });
  await e.unload();
  checkEvents(events, ['download', 'load'], modelBytes);
  assert.ok(!events.some((p) => p.phase === 'store'), 'Node has no Cache API: nothing is stored');
  assert.ok(events.filter((p) => p.phase === 'download').length > 2, 'the download is reported as it comes');
});

test('Chromium: a split model, fresh then cached: every event keeps progress growing to 1', { timeout: 120000 }, async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`${base}/index.html`);
    await page.waitForFunction(() => window.ready === true);
    const load = (url) => page.evaluate(async (u) => {
      const events = [];
      const engine = await window.Wick.load(u, { threads: 1, onProgress: (p) => events.push(p) });
      const fromCache = engine.info.fromCache;
      await engine.unload();
      return { events, fromCache };
    }, url);
    await page.evaluate(() => window.Wick.cache.clear());
    const url = `/mini-00001-of-0000${PARTS}.gguf`;

    const fresh = await load(url);
    assert.equal(fresh.fromCache, false);
    checkEvents(fresh.events, ['download', 'store', 'load'], splitBytes);
    // each part is downloaded, then written to the cache, before the next one comes
    const order = fresh.events.map((e) => e.phase).filter((p, i, all) => p !== all[i - 1]);
    assert.deepEqual(order, [...Array(PARTS).fill(['download', 'store']).flat(), 'load']);
    assert.ok(fresh.events.every((e) => e.phase === 'load' || !e.cached));

    const cached = await load(url);
    assert.equal(cached.fromCache, true);
    checkEvents(cached.events, ['download', 'load'], splitBytes);
    assert.ok(cached.events.filter((e) => e.phase === 'download').every((e) => e.cached), 'read back from the Cache API');
    assert.ok(!cached.events.some((e) => e.phase === 'store'), 'nothing to store again');
  } finally {
    await page.close();
  }
});
