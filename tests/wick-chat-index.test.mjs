// tests/wick-chat-index.test.mjs — a static site that answers from its own pages, in Debian's
// Chromium: `wick index` (the Node CLI) over a folder of five pages written here with the lexical
// synth encoder (`wick synth --arch bert --lexical`), then <wick-chat index="site-index.json"
// embedding-model="…"> on a page of that folder served from 127.0.0.1: a question that shares its
// words with one page gets that page's chunk in the prompt the chat model receives (wick-done's
// prompt) and a source link to that page under the answer; and after one visit of a page with
// service-worker and offline, the same answer and links with no network (the page, wick's files,
// the index and both models kept).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models, runWick } from './helpers.mjs';
import { launchChromium } from './browser.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { execFileSync } from 'node:child_process';

let site, server, base, browser;
const PAGES = {
  'index.md': '# Welcome\n\nThis site describes the village museum and its collections.\n\nOpening hours are posted at the entrance.',
  'guide/boats.md': '---\ntitle: Boats\n---\nWooden rowing boats hang from the ceiling of the west hall.\n\nEach was built by local carpenters.',
  'guide/clocks.html': '<html><head><title>Clocks</title></head><body><h1>Clock room</h1><p>The astronomical clock shows moon phases and tides.</p></body></html>',
  'tickets.html': '<html><body><h1>Tickets</h1><p>Children enter free; adults pay five coins.</p></body></html>',
  'notes.txt': 'The garden behind the museum grows herbs for the kitchen.',
};

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-chat-index-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  const [vocab, template] = readLlamaBundle(['models/ggml-vocab-bert-bge.gguf', 'models/templates/Qwen-Qwen3-0.6B.jinja']);
  fs.mkdirSync(path.join(site, 'models'));
  fs.writeFileSync(path.join(site, 'models', 'vocab-bge.gguf'), vocab);
  const encoder = path.join(site, 'models', 'lexical.gguf');
  const r = runWick('native', ['synth', '--arch', 'bert', '--lexical', '--shape', 'mini', '--type', 'f16', '--vocab', path.join(site, 'models', 'vocab-bge.gguf'), '-o', encoder]);
  assert.equal(r.code, 0, r.stderr);
  fs.writeFileSync(path.join(site, 'models', 'chat.gguf'),
    writeGguf(setKv(readGguf(path.join(models, 'families', 'mini-qwen3-q8_0.gguf')), 'tokenizer.chat_template', T.STRING, template.toString('utf8'))));
  const pages = path.join(site, 'museum');
  fs.mkdirSync(path.join(pages, 'guide'), { recursive: true });
  for (const [rel, text] of Object.entries(PAGES)) fs.writeFileSync(path.join(pages, rel), text);
  const built = runWick('wasm', ['index', pages, '-m', encoder, '-o', path.join(pages, 'site-index.json'), '--max-tokens', '64']);
  assert.equal(built.code, 0, built.stderr);
  // the assistant's page, in the same folder as the index (its sources are relative to it)
  fs.writeFileSync(path.join(pages, 'ask.html'), `<!doctype html><meta charset="utf-8"><title>Ask the museum</title>
<script type="module" src="/web/wick-chat.js"></script>
<wick-chat model="/models/chat.gguf" index="site-index.json" embedding-model="/models/lexical.gguf" max-tokens="2" temperature="0" top-k="2"></wick-chat>`);
  server = createServer(site);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('chat-index');
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

/** Sends a question to the page's <wick-chat>: the prompt, the sources' pages and the answer's links. */
function askChat(page, question) {
  return page.evaluate(async (q) => {
    const chat = document.querySelector('wick-chat');
    const done = new Promise((resolve) => chat.addEventListener('wick-done', (e) => resolve(e.detail), { once: true }));
    await chat.send(q);
    const d = await done;
    const links = [...chat.shadowRoot.querySelectorAll('.msg.assistant:last-of-type .sources a')].map((a) => ({ href: a.href, text: a.textContent }));
    return { prompt: d.prompt, sources: d.sources.map((s) => s.source), links };
  }, question);
}

test('<wick-chat index=…>: the right page\'s chunk reaches the prompt, and the answer links to that page', { timeout: 180000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${base}/museum/ask.html`);
    await page.waitForFunction(() => customElements.get('wick-chat'));
    const ask = (q) => askChat(page, q);
    const clocks = await ask('Which room shows moon phases and tides?');
    assert.equal(clocks.sources[0], 'guide/clocks.html');
    assert.ok(clocks.prompt.includes('The astronomical clock shows moon phases and tides.'), clocks.prompt);
    assert.ok(clocks.prompt.includes('[1] Clocks (guide/clocks.html)'), clocks.prompt);
    assert.deepEqual(clocks.links[0], { href: `${base}/museum/guide/clocks.html`, text: 'Clocks' });
    const tickets = await ask('Do children enter free?');
    assert.equal(tickets.sources[0], 'tickets.html');
    assert.deepEqual(tickets.links[0], { href: `${base}/museum/tickets.html`, text: 'Tickets' });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('<wick-chat index=… offline>: after one visit the same answer and links with no network', { timeout: 180000 }, async () => {
  // a site of its own, as tests/offline.test.mjs makes one: web/ and the builds copied (the
  // service worker keeps the files its shell list names), the museum's pages inside web/ (the
  // service worker's scope)
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-chat-index-offline-'));
  fs.cpSync(path.join(root, 'web'), path.join(own, 'web'), { recursive: true });
  fs.mkdirSync(path.join(own, 'build', 'wasm'), { recursive: true });
  for (const f of fs.readdirSync(path.join(root, 'build', 'wasm')).filter((f) => /^wick.*\.(js|wasm)$|^package\.json$/.test(f)))
    fs.copyFileSync(path.join(root, 'build', 'wasm', f), path.join(own, 'build', 'wasm', f));
  for (const d of ['wasm_glue', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(own, d));
  fs.symlinkSync(path.join(site, 'models'), path.join(own, 'models'));
  const files = JSON.parse(fs.readFileSync(path.join(root, 'build', 'wick-shell.json'), 'utf8')).files;
  execFileSync(process.execPath, [path.join(root, 'tools', 'shell-manifest.mjs'), path.join(own, 'build', 'wick-shell.json'), ...files.map((f) => path.join(own, 'build', f))]);
  fs.cpSync(path.join(site, 'museum'), path.join(own, 'web', 'museum'), { recursive: true });
  fs.writeFileSync(path.join(own, 'web', 'museum', 'ask.html'), `<!doctype html><meta charset="utf-8"><title>Ask the museum</title>
<script type="module" src="../wick-chat.js"></script>
<wick-chat model="/models/chat.gguf" index="site-index.json" embedding-model="/models/lexical.gguf" max-tokens="2" temperature="0" top-k="2"
  service-worker="../coi-sw.js" offline></wick-chat>`);
  const ownServer = createServer(own, { isolate: true });
  const handlers = ownServer.listeners('request');
  ownServer.removeAllListeners('request');
  let down = false, served = 0;
  ownServer.on('request', (req, res) => {
    if (down) { req.socket.destroy(); return; }
    served++;
    for (const h of handlers) h.call(ownServer, req, res);
  });
  await new Promise((r) => ownServer.listen(0, '127.0.0.1', r));
  const ownBase = `http://127.0.0.1:${ownServer.address().port}`;
  const context = await launchChromium('chat-index-offline');
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${ownBase}/web/museum/ask.html`);
    await page.waitForFunction(() => customElements.get('wick-chat'));
    const online = await askChat(page, 'Which room shows moon phases and tides?');
    assert.equal(online.sources[0], 'guide/clocks.html');
    assert.deepEqual(online.links[0], { href: `${ownBase}/web/museum/guide/clocks.html`, text: 'Clocks' });
    // kept: the shell (a service worker in control), both models
    await page.waitForFunction(async () => !!navigator.serviceWorker.controller && (await caches.keys()).some((k) => /^wick-shell-[0-9a-f]{16} /.test(k)), null, { timeout: 30000, polling: 200 });
    await page.waitForFunction(async () => (await (await caches.open('wick-models-v1')).keys()).length >= 2, null, { timeout: 30000 });
    // the page and the index, which the shell list does not name, kept at this first visit too
    for (const u of [`${ownBase}/web/museum/ask.html`, `${ownBase}/web/museum/site-index.json`])
      await page.waitForFunction(async (url) => !!(await caches.match(url)), u, { timeout: 30000, polling: 200 });

    await context.setOffline(true);
    down = true;
    const before = served;
    await page.reload();
    await page.waitForFunction(() => customElements.get('wick-chat'));
    const offline = await askChat(page, 'Which room shows moon phases and tides?');
    assert.deepEqual(offline, online);
    assert.equal(served, before, 'no request reached the server');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    ownServer.closeAllConnections();
    ownServer.close();
    fs.rmSync(own, { recursive: true, force: true });
  }
});
