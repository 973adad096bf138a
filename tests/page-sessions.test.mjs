// tests/page-sessions.test.mjs — saved sessions on the page and in <wick-chat> (issue 30,
// acceptance 4 and the shipped prefix), in Debian's Chromium (playwright-core) against
// tools/serve.mjs on 127.0.0.1, with the small mini-chat model (llama, a chat template):
// 1. The page: a two-turn chat, then the network goes away (the browser offline, the server
//    refusing everything) and the page is reloaded: the conversation comes back, and the next
//    reply evaluates exactly what the same turn evaluates in an engine that never stopped (the
//    API in Node, greedy: the same answers), the rest from the saved state (look inside says so).
//    The cache panel lists the saved conversation with its state's size; removing the state
//    there makes the next reload re-evaluate the whole history; Forget drops the conversation.
//    Where OPFS cannot be written from a page (createWritable taken away, as Safari lacks it),
//    the Cache API keeps the session and a reload goes on from it the same way.
//    After a reload, a New chat with the same (long) system prompt starts from the saved state.
// 2. <wick-chat prefix-state save-session>: a state written by `wick prefix` for its system
//    prompt makes the first reply evaluate only the visitor's message; after a reload the
//    conversation and its state come back and the next reply evaluates only the new message.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createServer } from '../tools/serve.mjs';
import { root, models, runWick } from './helpers.mjs';
import { launchChromium, setControl } from './browser.mjs';
import { Wick } from '../wasm_glue/wick.mjs';

const MODEL = path.join(models, 'mini', 'mini-chat-q8_0.gguf');
// screenshots go to $WICK_ARTIFACTS or the system's temporary folder (never committed)
const ARTIFACTS = process.env.WICK_ARTIFACTS || path.join(os.tmpdir(), 'wick-page-artifacts');
fs.mkdirSync(ARTIFACTS, { recursive: true });
const temps = [];
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

/** A site as tests/offline.test.mjs makes one: web/ and the wasm builds copied, its own shell list. */
function makeSite() {
  const site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-sessions-site-'));
  temps.push(site);
  fs.cpSync(path.join(root, 'web'), path.join(site, 'web'), { recursive: true });
  fs.mkdirSync(path.join(site, 'build', 'wasm'), { recursive: true });
  for (const f of fs.readdirSync(path.join(root, 'build', 'wasm')).filter((f) => /^wick.*\.(js|wasm)$|^package\.json$/.test(f)))
    fs.copyFileSync(path.join(root, 'build', 'wasm', f), path.join(site, 'build', 'wasm', f));
  for (const d of ['wasm_glue', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  const files = JSON.parse(fs.readFileSync(path.join(root, 'build', 'wick-shell.json'), 'utf8')).files;
  assert.ok(files.includes('../web/sessions.js') || files.some((f) => f.endsWith('web/sessions.js')), 'the offline shell keeps web/sessions.js (make build/wick-shell.json)');
  execFileSync(process.execPath, [path.join(root, 'tools', 'shell-manifest.mjs'), path.join(site, 'build', 'wick-shell.json'),
    ...files.map((f) => path.join(site, 'build', f))]);
  return site;
}

/** A server for the site that can be told to refuse everything; it counts what it serves. */
async function serve(site) {
  const server = createServer(site, { isolate: true });
  const served = [];
  let down = false;
  const handlers = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    if (down) { req.socket.destroy(); return; }
    served.push(req.url);
    for (const h of handlers) h.call(server, req, res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(async () => { server.closeAllConnections(); server.close(); });
  return { base: `http://127.0.0.1:${server.address().port}`, served, setDown(v) { down = v; } };
}

async function launch() {
  const context = await launchChromium('sessions');
  cleanups.push(() => context.close());
  return context;
}

async function openPage(context, url) {
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  if (process.env.WICK_DEBUG) page.on('console', (m) => console.log('console:', m.type(), m.text()));
  await page.goto(url);
  return page;
}

/** Loads the model the URL field holds (the page was opened with ?model=), greedy and short. */
async function loadModel(page) {
  await page.waitForFunction(() => document.querySelector('#model-check .memory') && document.body.dataset.state === 'idle', null, { timeout: 30000 });
  await page.click('#load-button');
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && /^Loaded /.test(document.getElementById('model-status').textContent), null, { timeout: 60000 });
  assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
  await setControl(page, 's-temperature', 0);
  await setControl(page, 's-maxTokens', 6);
}

/** Sends a chat message and waits for the reply and its save; returns the reply's text and figures. */
async function ask(page, prompt) {
  const before = await page.locator('.msg[data-done=true]').count();
  const messages = await page.evaluate(() => window.wickPage.state.messages.length);
  await page.fill('#prompt', prompt);
  await page.focus('#prompt');
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 30000 });
  // the reply's save: the messages and the engine's state written
  await page.waitForFunction((n) => Number(document.getElementById('log').dataset.saved) === n + 2, messages, { timeout: 30000 });
  return page.evaluate(() => {
    const msg = [...document.querySelectorAll('.msg[data-done=true]')].at(-1);
    const s = msg.querySelector('.stats').dataset;
    return { text: [...msg.querySelectorAll('.tok')].map((t) => t.textContent).join(''), stats: msg.querySelector('.stats').textContent,
      promptTokens: Number(s.promptTokens), promptEvalTokens: Number(s.promptEvalTokens), promptFromState: Number(s.promptFromState),
      phases: document.getElementById('phases').textContent, phasesFromState: Number(document.getElementById('phases').dataset.promptFromState) };
  });
}

/** The same conversation through the API in Node, one engine that never stops: each turn's reply and timings. */
async function reference(contextSize, userTurns, system) {
  const engine = await Wick.load(MODEL, { threads: 1, contextSize, device: 'cpu' });
  try {
    const messages = system ? [{ role: 'system', content: system }] : [];
    const turns = [];
    for (const content of userTurns) {
      messages.push({ role: 'user', content });
      const r = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 6 });
      messages.push({ role: 'assistant', content: r.choices[0].message.content });
      turns.push({ text: r.choices[0].message.content, timings: r.timings });
    }
    return turns;
  } finally {
    await engine.unload();
  }
}

test('the page: a reloaded conversation, offline, evaluates only the new message; removing its state in the cache panel makes the next reload read it all', { timeout: 240000 }, async () => {
  const site = makeSite();
  const server = await serve(site);
  const context = await launch();
  const url = `${server.base}/web/index.html?model=${encodeURIComponent(`${server.base}/models/mini/mini-chat-q8_0.gguf`)}`;
  let page = await openPage(context, url);
  await loadModel(page);
  const contextSize = await page.evaluate(() => window.wickPage.state.engine.info.contextSize);
  const ref = await reference(contextSize, ['Hello!', 'Tell me more.', 'And then?', 'Why?']);
  const one = await ask(page, 'Hello!');
  const two = await ask(page, 'Tell me more.');
  assert.equal(one.text, ref[0].text);
  assert.equal(two.text, ref[1].text);
  assert.equal(two.promptEvalTokens, ref[1].timings.promptEvalTokens, 'a live turn evaluates what the API does');
  // the cache panel lists it, with its state's size
  await page.waitForFunction(() => Number(document.querySelector('#session-list .session-entry')?.dataset.bytes) > 0, null, { timeout: 10000 });
  const listed = await page.textContent('#session-list');
  assert.match(listed, /mini-chat-q8_0\.gguf: 4 messages.*state \d/s);
  // the shell and the model are kept: the next visit works offline
  await page.waitForFunction(async () => !!navigator.serviceWorker.controller &&
    (await caches.keys()).some((k) => /^wick-shell-[0-9a-f]{16} /.test(k)) && (await (await caches.open('wick-models-v1')).keys()).length > 0, null, { timeout: 30000, polling: 200 });
  assert.deepEqual(page.errors, []);

  await context.setOffline(true);
  server.setDown(true);
  const count = server.served.length;
  try {
    await page.reload();
    await loadModel(page);
    // the conversation is back, and the engine holds its state
    assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restored), '4');
    assert.ok(Number(await page.evaluate(() => document.getElementById('log').dataset.restoredTokens)) > 0);
    assert.deepEqual(await page.$$eval('#log .msg.user .user-text', (m) => m.map((x) => x.textContent)), ['Hello!', 'Tell me more.']);
    assert.deepEqual(await page.$$eval('#log .msg.assistant .reply-text', (m) => m.map((x) => x.textContent)), [ref[0].text, ref[1].text]);
    const three = await ask(page, 'And then?');
    assert.equal(three.text, ref[2].text, 'the same reply as the engine that never stopped');
    assert.equal(three.promptTokens, ref[2].timings.promptTokens);
    assert.equal(three.promptEvalTokens, ref[2].timings.promptEvalTokens,
      `after the reload ${three.promptEvalTokens} of ${three.promptTokens} evaluated; the live engine ${ref[2].timings.promptEvalTokens}`);
    assert.ok(three.promptEvalTokens < three.promptTokens / 2, `only the new message: ${three.promptEvalTokens} of ${three.promptTokens}`);
    assert.equal(three.promptFromState, three.promptTokens - three.promptEvalTokens, 'the rest came from the saved state');
    assert.equal(three.phasesFromState, three.promptFromState);
    assert.match(three.phases, new RegExp(`${three.promptEvalTokens} prompt tokens in one batch \\(${three.promptFromState} reused from the KV cache, ${three.promptFromState} of them from a saved state\\)`));
    assert.match(three.stats, new RegExp(`prefill ${three.promptEvalTokens} tok.*${three.promptFromState} from a saved state`));
    assert.equal(await page.evaluate(() => navigator.onLine), false);
    process.stdout.write(`# the page after an offline reload: ${three.promptEvalTokens} of ${three.promptTokens} prompt tokens evaluated, ${three.promptFromState} from the saved state\n`);

    // the cache panel: remove the state (the conversation stays); the next reload reads it all again
    await page.waitForFunction(() => document.querySelector('#session-list .session-entry')?.textContent.includes('6 messages'), null, { timeout: 10000 });
    await page.locator('section.cache').screenshot({ path: path.join(ARTIFACTS, 'page-sessions-panel.png') });
    await page.click('#session-list .session-entry .remove-state');
    await page.waitForFunction(() => document.querySelector('#session-list .session-entry')?.dataset.bytes === '0', null, { timeout: 10000 });
    assert.match(await page.textContent('#session-list'), /6 messages.*no state/s);
    await page.reload();
    await loadModel(page);
    assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restored), '6');
    assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restoredTokens), '0');
    const four = await ask(page, 'Why?');
    assert.equal(four.text, ref[3].text);
    assert.equal(four.promptTokens, ref[3].timings.promptTokens);
    assert.equal(four.promptEvalTokens, four.promptTokens, 'a fresh start evaluates the whole history');
    assert.equal(four.promptFromState, 0);
    process.stdout.write(`# the page after its state was removed: ${four.promptEvalTokens} of ${four.promptTokens} evaluated\n`);
    assert.deepEqual(server.served.slice(count), [], 'nothing came from the server');

    // Forget drops the conversation: the next reload starts empty
    await page.click('#session-list .session-entry .forget');
    await page.waitForFunction(() => document.getElementById('session-list').dataset.count === '0', null, { timeout: 10000 });
    await page.reload();
    await loadModel(page);
    assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restored), '');
    assert.equal(await page.locator('#log .msg').count(), 0);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.setOffline(false);
    server.setDown(false);
  }
});

test('where a page cannot write OPFS files (no createWritable, as in Safari), the Cache API keeps the session', { timeout: 180000 }, async () => {
  const site = makeSite();
  const server = await serve(site);
  const context = await launch();
  await context.addInitScript(() => { delete globalThis.FileSystemFileHandle?.prototype.createWritable; });
  const page = await openPage(context, `${server.base}/web/index.html?model=${encodeURIComponent(`${server.base}/models/mini/mini-chat-q8_0.gguf`)}`);
  await loadModel(page);
  const ref = await reference(await page.evaluate(() => window.wickPage.state.engine.info.contextSize), ['Hello!', 'Tell me more.']);
  const one = await ask(page, 'Hello!');
  assert.equal(one.text, ref[0].text);
  const kept = await page.evaluate(async () => {
    const cache = await caches.open('wick-sessions-v1');
    const sizes = await Promise.all((await cache.keys()).map(async (r) => [new URL(r.url).pathname.split('.').pop(), (await (await cache.match(r)).arrayBuffer()).byteLength]));
    const opfs = [];
    for await (const name of (await (await navigator.storage.getDirectory()).getDirectoryHandle('wick-sessions', { create: true })).keys()) opfs.push(name);
    return { sizes: Object.fromEntries(sizes), opfs: opfs.filter((n) => !n.startsWith('.')) };
  });
  assert.deepEqual(Object.keys(kept.sizes).sort(), ['json', 'state']);
  assert.ok(kept.sizes.state > 1000, `a state of ${kept.sizes.state} bytes`);
  assert.deepEqual(kept.opfs, [], 'nothing in OPFS');
  await page.waitForFunction(() => /Cache API/.test(document.querySelector('#session-list .session-entry')?.title || ''), null, { timeout: 10000 });
  await page.reload();
  await loadModel(page);
  assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restored), '2');
  const two = await ask(page, 'Tell me more.');
  assert.equal(two.text, ref[1].text);
  assert.equal(two.promptEvalTokens, ref[1].timings.promptEvalTokens);
  assert.equal(two.promptFromState, two.promptTokens - two.promptEvalTokens);
  assert.ok(two.promptFromState > 0);
  assert.deepEqual(page.errors, []);
});

const SYSTEM = 'You are the guide of a small museum of maps. Answer in one short sentence, and name the room where each map is kept.';

test('<wick-chat prefix-state save-session>: a `wick prefix` file makes the first reply evaluate only the visitor\'s message; a reload goes on from the saved state', { timeout: 240000 }, async () => {
  const site = makeSite();
  const out = path.join(site, 'prefix.state');
  const r = runWick('wasm', ['prefix', '-m', MODEL, '--system', SYSTEM, '-o', out, '--ctx', '512']);
  assert.equal(r.code, 0, r.stderr);
  const prefixTokens = Number(/(\d+) tokens/.exec(r.stderr)[1]);
  assert.ok(prefixTokens > 20, r.stderr);
  fs.writeFileSync(path.join(site, 'web', 'sessions-embed.html'), `<!doctype html><meta charset="utf-8"><title>sessions</title>
<script type="module" src="./wick-chat.js"></script>
<script>window.done = []; window.saved = []; window.errors = [];
document.addEventListener('wick-done', (e) => window.done.push(e.detail));
document.addEventListener('wick-saved', (e) => window.saved.push(e.detail));
document.addEventListener('wick-error', (e) => window.errors.push(e.detail.error.message));</script>
<wick-chat model="../models/mini/mini-chat-q8_0.gguf" mode="chat" system="${SYSTEM}" prefix-state="../prefix.state" temperature="0" max-tokens="6" context-size="512" save-session></wick-chat>`);
  const server = await serve(site);
  const context = await launch();
  const page = await openPage(context, `${server.base}/web/sessions-embed.html`);
  const ref = await reference(512, ['Where is the oldest map?', 'And the newest?'], SYSTEM);

  await page.waitForFunction(() => customElements.get('wick-chat'), null, { timeout: 10000 });
  await page.evaluate(() => document.querySelector('wick-chat').load());
  assert.equal(await page.evaluate(() => document.querySelector('wick-chat').prefixTokens), prefixTokens);
  const first = await page.evaluate(async () => {
    const answer = await document.querySelector('wick-chat').send('Where is the oldest map?');
    return { answer, timings: window.done.at(-1).timings };
  });
  assert.equal(first.answer, ref[0].text);
  assert.equal(first.timings.promptFromState, prefixTokens, 'the first reply starts from the shipped prefix');
  assert.equal(first.timings.promptEvalTokens, first.timings.promptTokens - prefixTokens, 'only the visitor\'s message is evaluated');
  assert.ok(ref[0].timings.promptEvalTokens === ref[0].timings.promptTokens, 'without the prefix the whole prompt is evaluated');
  await page.waitForFunction(() => window.saved.length === 1, null, { timeout: 30000 });
  assert.ok((await page.evaluate(() => window.saved[0].bytes)) > 0);

  await page.reload();
  await page.waitForFunction(() => customElements.get('wick-chat'), null, { timeout: 10000 });
  await page.evaluate(() => document.querySelector('wick-chat').load());
  const restored = await page.evaluate(() => {
    const chat = document.querySelector('wick-chat');
    return { messages: chat.messages.length, tokens: chat.restoredTokens, lines: [...chat.shadowRoot.querySelectorAll('.msg.restored')].map((m) => m.textContent) };
  });
  assert.equal(restored.messages, 2);
  assert.ok(restored.tokens > prefixTokens, `the state holds the conversation: ${restored.tokens} tokens`);
  assert.deepEqual(restored.lines, ['Where is the oldest map?', ref[0].text]);
  const second = await page.evaluate(async () => {
    const answer = await document.querySelector('wick-chat').send('And the newest?');
    return { answer, timings: window.done.at(-1).timings };
  });
  assert.equal(second.answer, ref[1].text);
  assert.equal(second.timings.promptEvalTokens, ref[1].timings.promptEvalTokens,
    `after the reload ${second.timings.promptEvalTokens} evaluated, the live engine ${ref[1].timings.promptEvalTokens}`);
  assert.equal(second.timings.promptFromState, second.timings.promptTokens - second.timings.promptEvalTokens);
  process.stdout.write(`# <wick-chat>: prefix of ${prefixTokens} tokens (${fs.statSync(out).size} bytes); first reply ${first.timings.promptEvalTokens} of ${first.timings.promptTokens} evaluated; ` +
    `after a reload ${second.timings.promptEvalTokens} of ${second.timings.promptTokens}, ${second.timings.promptFromState} from the saved state\n`);
  assert.deepEqual(await page.evaluate(() => window.errors), []);
  assert.deepEqual(page.errors, []);
});

// acceptance 5 on the page: a system prompt of over 200 tokens, a reply, a reload, a New chat
// with the same system prompt: its first reply starts from the saved state (web/sessions.js makes
// the restored conversation's system prompt a shared prefix, engine.addPrefix) and evaluates only
// its own tokens beyond the system prompt, even when the cache holds another text by then
const LONG_SYSTEM = `${SYSTEM} ${Array.from({ length: 4 }, (_, i) => `Room ${i + 1} keeps the maps of the ${['north', 'south', 'east', 'west'][i % 4]} coast drawn in the ${1500 + 25 * i}s, on paper and on vellum.`).join(' ')}`;

test('the page: a New chat after a reload with the same long system prompt starts from the saved state (a shared prefix)', { timeout: 240000 }, async () => {
  const site = makeSite();
  const server = await serve(site);
  const context = await launch();
  const page = await openPage(context, `${server.base}/web/index.html?model=${encodeURIComponent(`${server.base}/models/mini/mini-chat-q8_0.gguf`)}`);
  await loadModel(page);
  const contextSize = await page.evaluate(() => window.wickPage.state.engine.info.contextSize);
  const systemTokens = (await page.evaluate((s) => window.wickPage.state.engine.tokenize(s), LONG_SYSTEM)).length;
  assert.ok(systemTokens >= 200, `a system prompt of ${systemTokens} tokens`);
  const [ref] = await reference(contextSize, ['Where is the oldest map?'], LONG_SYSTEM);
  await page.fill('#system-prompt', LONG_SYSTEM);
  const one = await ask(page, 'Which room has the vellum maps?');
  assert.equal(one.promptEvalTokens, one.promptTokens, 'the first conversation reads its system prompt');

  await page.reload();
  await loadModel(page);
  assert.equal(await page.evaluate(() => document.getElementById('log').dataset.restored), '2');
  assert.equal(await page.inputValue('#system-prompt'), LONG_SYSTEM);
  await page.click('#new-conversation');
  assert.equal(await page.locator('#log .msg').count(), 0);
  // the cache now holds another text (a completion, as the Complete mode leaves one): the restored
  // conversation's rows are gone, and only the shared prefix can give the system prompt back
  const other = await page.evaluate(async () => {
    let done = null;
    for await (const c of window.wickPage.state.engine.generate('Once upon a time', { temperature: 0, maxTokens: 2 })) if (c.done) done = c;
    return done.timings;
  });
  assert.ok(other.cachedPromptTokens <= 1, `the completion reused ${other.cachedPromptTokens} cached tokens (at most the BOS)`);
  const fresh = await ask(page, 'Where is the oldest map?');
  assert.equal(fresh.text, ref.text, 'the same reply as a fresh engine that read it all');
  assert.equal(fresh.promptTokens, ref.timings.promptTokens);
  assert.equal(ref.timings.promptEvalTokens, ref.timings.promptTokens, 'a fresh engine evaluates the whole prompt');
  assert.ok(fresh.promptFromState >= systemTokens, `${fresh.promptFromState} prompt tokens from the saved state, the system prompt has ${systemTokens}`);
  assert.equal(fresh.promptEvalTokens, fresh.promptTokens - fresh.promptFromState);
  assert.ok(fresh.promptEvalTokens < 40, `only the new chat's own tokens: ${fresh.promptEvalTokens} of ${fresh.promptTokens}`);
  assert.equal(fresh.phasesFromState, fresh.promptFromState);
  assert.match(fresh.stats, new RegExp(`prefill ${fresh.promptEvalTokens} tok.*${fresh.promptFromState} from a saved state`));
  process.stdout.write(`# the page, a New chat after a reload: ${fresh.promptEvalTokens} of ${fresh.promptTokens} prompt tokens evaluated, ${fresh.promptFromState} from the saved state (system prompt ${systemTokens})\n`);

  // nothing lost: the New chat kept the first conversation; the cache panel lists both, and
  // opens the first again with its state: its next reply evaluates only the new message, and
  // answers as an engine that read the first conversation's two turns from the start
  await page.waitForFunction(() => document.getElementById('session-list').dataset.count === '2', null, { timeout: 10000 });
  const entries = await page.$$eval('#session-list .session-entry', (lis) => lis.map((li) => ({ text: li.textContent, current: li.dataset.current, open: !!li.querySelector('.open-session') })));
  assert.deepEqual(entries.map((e) => [e.current, e.open]), [['true', false], ['false', true]], JSON.stringify(entries));
  assert.match(entries[1].text, /2 messages.*Which room has the vellum maps/s);
  await page.click('#session-list .session-entry .open-session');
  await page.waitForFunction(() => document.getElementById('log').dataset.restored === '2', null, { timeout: 30000 });
  assert.equal(await page.locator('#log .msg').count(), 2);
  assert.match(await page.textContent('#log'), /Which room has the vellum maps/);
  const [, refAgain] = await reference(contextSize, ['Which room has the vellum maps?', 'Where is the oldest map?'], LONG_SYSTEM);
  const again = await ask(page, 'Where is the oldest map?');
  assert.equal(again.text, refAgain.text, 'the reopened conversation answers as an engine that never stopped');
  assert.equal(again.promptTokens, refAgain.timings.promptTokens);
  assert.equal(again.promptEvalTokens, refAgain.timings.promptEvalTokens, 'only the new message is evaluated, as in an engine that never stopped');
  assert.equal(again.promptEvalTokens, again.promptTokens - again.promptFromState);
  await page.waitForFunction(() => document.getElementById('session-list').dataset.count === '2', null, { timeout: 10000 });
  process.stdout.write(`# the page, the first conversation opened again from the cache panel: ${again.promptEvalTokens} of ${again.promptTokens} prompt tokens evaluated, ${again.promptFromState} from its saved state\n`);
  assert.deepEqual(page.errors, []);
});
