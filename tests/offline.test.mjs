// tests/offline.test.mjs — the page with no network after one visit (issue 14, acceptance 1 and 3),
// in Debian's Chromium (playwright-core) against tools/serve.mjs on 127.0.0.1.
// 1. Visit the page, let it load the default model, answer greedily; take the network away
//    (the browser context offline, and the server refusing every request from then on); reload:
//    the page, the model and generation work, with the same greedy text, and the server saw no
//    request. The same for the <wick-chat> example page.
//    Offline, the model list marks the kept model and refuses one that is not kept, saying why.
// 2. A new version is deployed (the site's page and wasm change, and so the version in
//    wick-shell.json): the next visit gets the new page and the new wasm together and the engine
//    runs; a page left open on the old version keeps its files and is told of the new one; once
//    it is closed, the next visit deletes the old set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createServer } from '../tools/serve.mjs';
import { root, models } from './helpers.mjs';
import { launchChromium } from './browser.mjs';


const temps = [];
const contexts = [];

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(name) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), name));
  temps.push(d);
  return d;
}

/**
 * A site: web/ and build/wasm copied (a test may change them), the rest linked; its own
 * wick-shell.json made by tools/shell-manifest.mjs from the site's files, as `make` does.
 */
function makeSite() {
  const site = tempDir('wick-offline-site-');
  fs.cpSync(path.join(root, 'web'), path.join(site, 'web'), { recursive: true });
  fs.mkdirSync(path.join(site, 'build', 'wasm'), { recursive: true });
  for (const f of fs.readdirSync(path.join(root, 'build', 'wasm')).filter((f) => /^wick.*\.(js|wasm)$|^package\.json$/.test(f))) {
    fs.copyFileSync(path.join(root, 'build', 'wasm', f), path.join(site, 'build', 'wasm', f));
  }
  for (const d of ['wasm_glue', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  writeShellList(site);
  return site;
}

function writeShellList(site) {
  const files = JSON.parse(fs.readFileSync(path.join(root, 'build', 'wick-shell.json'), 'utf8')).files;
  execFileSync(process.execPath, [path.join(root, 'tools', 'shell-manifest.mjs'), path.join(site, 'build', 'wick-shell.json'),
    ...files.map((f) => path.join(site, 'build', f))]);
  return JSON.parse(fs.readFileSync(path.join(site, 'build', 'wick-shell.json'), 'utf8')).version;
}

/** A server for the site that can be told to refuse everything; it counts the requests it serves. */
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
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    served,
    setDown(v) { down = v; },
    close() { server.closeAllConnections(); server.close(); },
  };
}

async function launch() {
  const context = await launchChromium('offline');
  contexts.push(context);
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

/** Waits until a service worker controls the page and the shell's files are in a cache; returns the cache names. */
async function shellKept(page) {
  await page.waitForFunction(async () => !!navigator.serviceWorker.controller &&
    (await caches.keys()).some((k) => /^wick-shell-[0-9a-f]{16} /.test(k)), null, { timeout: 30000, polling: 200 });
  return page.evaluate(async () => (await caches.keys()).filter((k) => /^wick-shell-[0-9a-f]{16} /.test(k)));
}

async function greedyOnPage(page) {
  await page.waitForSelector('body[data-state=ready]', { timeout: 30000 });
  await page.focus('#s-temperature');
  await page.keyboard.press('Home');
  const before = await page.locator('.msg[data-done=true]').count();
  await page.fill('#prompt', 'Once upon a time');
  await page.focus('#prompt');
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 30000 });
  return page.evaluate(() => [...[...document.querySelectorAll('.msg[data-done=true]')].at(-1).querySelectorAll('.tok')].map((t) => t.textContent).join(''));
}

async function greedyOnEmbed(page) {
  const chat = page.locator('wick-chat');
  await page.evaluate(() => document.querySelector('wick-chat').setAttribute('temperature', '0'));
  await chat.locator('button.load').click();
  await page.waitForFunction(() => document.querySelector('wick-chat').engine, null, { timeout: 30000 });
  await chat.locator('textarea').fill('Once upon a time');
  await chat.locator('textarea').press('Enter');
  await chat.locator('.stats').waitFor({ timeout: 30000 });
  // the answer's text, without its line of figures
  return page.evaluate(() => {
    const msg = document.querySelector('wick-chat').shadowRoot.querySelector('.msg.completion');
    return [...msg.childNodes].filter((n) => !n.classList?.contains('stats')).map((n) => n.textContent).join('');
  });
}

for (const [file, greedy] of [['index.html', greedyOnPage], ['embed-example.html', greedyOnEmbed]]) {
  test(`${file}: after one visit it opens, loads the model and gives the same greedy text with no network`, { timeout: 120000 }, async () => {
    const site = makeSite();
    const server = await serve(site);
    const context = await launch();
    try {
      const page = await openPage(context, `${server.base}/web/${file}`);
      const online = await greedy(page);
      assert.ok(online.length > 20, online);
      await shellKept(page);
      await page.waitForFunction(async () => (await (await caches.open('wick-models-v1')).keys()).length > 0, null, { timeout: 30000 });
      assert.deepEqual(page.errors, []);

      await context.setOffline(true);
      server.setDown(true);
      const count = server.served.length;
      await page.reload();
      const offline = await greedy(page);
      assert.equal(offline, online);
      assert.equal(await page.evaluate(() => navigator.onLine), false);
      assert.deepEqual(server.served.slice(count), [], 'nothing came from the server');
      if (file === 'index.html') {
        // the model list says what works offline; a model that is not kept is refused with that reason
        assert.match(await page.textContent('#offline-note'), /You are offline\. Models kept on this device/);
        assert.equal(await page.evaluate(() => document.getElementById('default-label').closest('label').dataset.kept), 'true');
        await page.check('input[name=source][value=catalogue]');
        await page.locator('input[name=catalogue-entry]').first().check();
        await page.waitForFunction(() => /You are offline and .+ is not kept on this device/.test(document.getElementById('model-check').textContent), null, { timeout: 10000 });
        assert.equal(await page.evaluate(() => document.querySelector('input[name=catalogue-entry]').closest('.entry').dataset.kept), 'false');
        assert.equal(await page.isDisabled('#load-button'), false);
        await page.click('#load-button');
        assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', 'the loaded model stays');
      }
      assert.deepEqual(page.errors, []);
      await page.close();
    } finally {
      await context.setOffline(false);
      server.close();
    }
  });
}

/** Appends a custom section named `wick-deploy` holding `mark` to a wasm file (valid, and ignored by the engine). */
function markWasm(file, mark) {
  const name = Buffer.from('wick-deploy');
  const payload = Buffer.from(mark);
  const body = Buffer.concat([Buffer.from([name.length]), name, payload]);
  assert.ok(body.length < 128);
  fs.appendFileSync(file, Buffer.concat([Buffer.from([0, body.length]), body]));
}

/** The last 8 bytes of each wasm build as this page gets them (through its service worker). */
function wasmTails(page) {
  return page.evaluate(async () => Promise.all(['wick.wasm', 'wick-mt.wasm', 'wick-relaxed.wasm', 'wick-mt-relaxed.wasm'].map(async (f) => {
    const bytes = new Uint8Array(await (await fetch(`../build/wasm/${f}`)).arrayBuffer());
    return new TextDecoder().decode(bytes.subarray(bytes.length - 8));
  })));
}

const shellSets = (page) => page.evaluate(async () => (await caches.keys()).filter((k) => k.startsWith('wick-shell-') && k !== 'wick-shell-meta'));

test('a new version: the next visit gets the new page and wasm together; an open old page keeps its set; the old set is deleted', { timeout: 120000 }, async () => {
  const site = makeSite();
  const server = await serve(site);
  const context = await launch();
  try {
    const v1 = JSON.parse(fs.readFileSync(path.join(site, 'build', 'wick-shell.json'), 'utf8')).version;
    const page1 = await openPage(context, `${server.base}/web/`);
    await page1.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    const sets1 = await shellKept(page1);
    assert.equal(sets1.length, 1);
    assert.ok(sets1[0].startsWith(`wick-shell-${v1} `), sets1[0]);
    const oldTails = await wasmTails(page1);

    // deploy: a changed page and changed wasm builds, and their list with its new version
    const index = path.join(site, 'web', 'index.html');
    fs.writeFileSync(index, fs.readFileSync(index, 'utf8').replace('<head>', '<head>\n<meta name="wick-deploy" content="2">'));
    for (const f of ['wick.wasm', 'wick-mt.wasm', 'wick-relaxed.wasm', 'wick-mt-relaxed.wasm']) markWasm(path.join(site, 'build', 'wasm', f), 'deploy-2');
    const v2 = writeShellList(site);
    assert.notEqual(v2, v1);

    // the next visit (page1 still open in another tab)
    const page2 = await openPage(context, `${server.base}/web/`);
    await page2.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    assert.equal(await page2.evaluate(() => document.querySelector('meta[name=wick-deploy]')?.content), '2', 'the new page');
    assert.deepEqual(await wasmTails(page2), ['deploy-2', 'deploy-2', 'deploy-2', 'deploy-2'], 'the new wasm');
    assert.ok((await greedyOnPage(page2)).length > 20, 'the engine runs');

    // the open old page goes on with its own files, and is told that a new version is ready
    await page1.waitForSelector('#update-note', { timeout: 10000 });
    assert.deepEqual(await wasmTails(page1), oldTails);
    assert.equal(await page1.evaluate(() => document.querySelector('meta[name=wick-deploy]')), null);
    assert.equal((await shellSets(page2)).length, 2, 'the old set stays while a page uses it');
    assert.deepEqual(page1.errors, []);
    await page1.close();

    // with the old page gone, the next visit deletes the old set
    const page3 = await openPage(context, `${server.base}/web/`);
    await page3.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    await page3.waitForFunction(async (v) => {
      const sets = (await caches.keys()).filter((k) => k.startsWith('wick-shell-') && k !== 'wick-shell-meta');
      return sets.length === 1 && sets[0].startsWith(`wick-shell-${v} `);
    }, v2, { timeout: 30000, polling: 200 });
    assert.deepEqual(page2.errors, []);
    assert.deepEqual(page3.errors, []);
    await page2.close();
    await page3.close();
  } finally {
    server.close();
  }
});
