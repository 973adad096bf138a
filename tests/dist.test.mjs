// tests/dist.test.mjs — the folder for a static host, no build step: `make dist` into a temporary
// folder, then a plain static server (no isolation headers) over a site holding a copy of it as
// wick/, the model, and the README's page. In Debian's Chromium, <wick-chat> streams text, the
// page's own `import { Wick } from './wick/wick.mjs'` gives the reference greedy text (the
// single-threaded build), a chat template renders with the folder's copy of @huggingface/jinja,
// and no request fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models, loadReference } from './helpers.mjs';
import { launchBrowser } from './browser.mjs';
import { readmeBlock } from './readme.mjs';

const stories = loadReference('stories260K.json');

let work, site, server, base, browser;

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-dist-'));
  const dist = path.join(work, 'dist');
  const r = spawnSync('make', ['dist', `DIST_DIR=${dist}`], { cwd: root, encoding: 'utf8', timeout: 600000 });
  assert.equal(r.status, 0, `make dist failed:\n${r.stdout}\n${r.stderr}`);
  site = path.join(work, 'site');
  fs.cpSync(dist, path.join(site, 'wick'), { recursive: true });
  fs.copyFileSync(path.join(models, 'stories260K.gguf'), path.join(site, 'stories260K.gguf'));
  fs.writeFileSync(path.join(site, 'index.html'), readmeBlock('static'));
  server = createServer(site, { isolate: false });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test('dist/ holds the glue, <wick-chat> and what they import, both builds and jinja, with no path into the repository', () => {
  const files = fs.readdirSync(path.join(site, 'wick'), { recursive: true }).map((f) => f.split(path.sep).join('/'));
  for (const f of ['wick.mjs', 'wick.d.ts', 'worker.js', 'download.js', 'gguf-header.js', 'constants.js', 'chat-template.mjs', 'tool-calls.mjs', 'wick-chat.js', 'images.js', 'sessions.js', 'tool-cards.js', 'coi.js', 'util.js', 'coi-sw.js', 'engine-worker.js',
    'jinja/index.js', 'wasm/wick.js', 'wasm/wick.wasm', 'wasm/wick-mt.js', 'wasm/wick-mt.wasm', 'wasm/wick-mt.worker.js']) {
    assert.ok(files.includes(f), `${f} (dist holds ${files.join(', ')})`);
  }
  // every relative import and new URL(…, import.meta.url) of the folder's modules stays inside it
  for (const f of files.filter((f) => /\.m?js$/.test(f) && !f.startsWith('wasm/') && !f.startsWith('jinja/'))) {
    const code = fs.readFileSync(path.join(site, 'wick', f), 'utf8').split('\n').filter((line) => !/^\s*(\/\/|\/?\*)/.test(line)).join('\n');
    for (const [, spec] of code.matchAll(/(?:from|import\(|new URL\()\s*'(\.{1,2}\/[^']+)'/g)) {
      assert.ok(files.includes(path.posix.normalize(path.posix.join(path.posix.dirname(f), spec))), `${f} imports ${spec}`);
    }
  }
});

test('from a plain static server: <wick-chat> streams, the page\'s own import gives the reference text, chat templates render', { timeout: 120000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [], failed = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
  try {
    await page.goto(`${base}/index.html`);
    // the page's module script: Wick from ./wick/wick.mjs, greedy, on one thread (no isolation)
    await page.waitForFunction((expected) => document.querySelector('#story').textContent === expected, stories.greedy_text, { timeout: 60000 });
    assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), false);

    // <wick-chat>: loads on the first Send and streams the answer piece by piece
    await page.evaluate(() => {
      const chat = document.querySelector('wick-chat');
      window.tokens = 0;
      chat.addEventListener('wick-token', () => window.tokens++);
      window.chatDone = new Promise((resolve) => chat.addEventListener('wick-done', (e) => resolve(e.detail), { once: true }));
      window.chatFailed = new Promise((resolve) => chat.addEventListener('wick-error', (e) => resolve(String(e.detail.error?.message ?? e.detail.error)), { once: true }));
    });
    const chat = page.locator('wick-chat');
    await chat.locator('textarea').fill('Once upon a time');
    await chat.locator('textarea').press('Enter');
    const outcome = await page.evaluate(() => Promise.race([window.chatDone.then((d) => ({ done: d })), window.chatFailed.then((error) => ({ error }))]));
    assert.equal(outcome.error, undefined, outcome.error);
    assert.ok(outcome.done.text.length > 20, outcome.done.text);
    assert.ok(await page.evaluate(() => window.tokens) > 5, 'streamed in several pieces');
    assert.equal(await page.evaluate(() => document.querySelector('wick-chat').engine.build), 'st-relaxed');

    // chat templates: @huggingface/jinja from wick/jinja/, with no bundler and no import map
    const rendered = await page.evaluate(async () => {
      const { Wick } = await import('./wick/wick.mjs');
      return Wick.renderChatTemplate('{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}', [{ role: 'user', content: 'Hello' }]);
    });
    assert.equal(rendered, '<user>Hello');
    assert.deepEqual(errors, []);
    assert.deepEqual(failed, [], 'no request fails (no 404 on the way to a file)');
  } finally {
    await context.close();
  }
});
