// tests/install.test.mjs — the page as an installed app keeps it (issue 14, acceptance 2 and 5):
// Chromium reports no installability errors for it (the DevTools protocol's
// Page.getInstallabilityErrors), its manifest parses without errors, and every icon it names loads
// as a PNG of the size it says; a page without a manifest (the <wick-chat> example) gets errors
// from the same check, so the check can fail. Once a model is kept, the page asks for persistent
// storage (observed) and the cache panel shows usage and quota; a model larger than the space
// the browser offers is refused before the download, with both numbers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models } from './helpers.mjs';
import { launchChromium } from './browser.mjs';

let server, base, context, site;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-install-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  server = createServer(site, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  context = await launchChromium('install');
});

after(async () => {
  await context?.close();
  server?.closeAllConnections();
  server?.close();
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function installability(file) {
  const page = await context.newPage();
  try {
    await page.goto(`${base}/web/${file}`);
    await page.waitForLoadState('load');
    const cdp = await context.newCDPSession(page);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    const manifest = await cdp.send('Page.getAppManifest');
    return { page, installabilityErrors, manifest };
  } catch (e) {
    await page.close();
    throw e;
  }
}

test('the page is installable: no installability errors, a manifest without errors, icons that load', { timeout: 60000 }, async () => {
  const { page, installabilityErrors, manifest } = await installability('index.html');
  try {
    assert.deepEqual(installabilityErrors, []);
    assert.deepEqual(manifest.errors, []);
    const data = JSON.parse(manifest.data);
    assert.equal(data.short_name, 'wick');
    assert.equal(data.display, 'standalone');
    assert.ok(data.start_url);
    const sizes = new Set(data.icons.map((i) => i.sizes));
    assert.ok(sizes.has('192x192') && sizes.has('512x512'), [...sizes].join(', '));
    // each icon, fetched from the page and decoded: a PNG of the size the manifest says
    const icons = await page.evaluate(async ({ icons, manifestUrl }) => Promise.all(icons.map(async (icon) => {
      const response = await fetch(new URL(icon.src, manifestUrl));
      const blob = await response.blob();
      const bitmap = await createImageBitmap(blob);
      return { sizes: icon.sizes, status: response.status, type: blob.type, width: bitmap.width, height: bitmap.height };
    })), { icons: data.icons, manifestUrl: manifest.url });
    for (const icon of icons) {
      assert.equal(icon.status, 200);
      assert.equal(icon.type, 'image/png');
      assert.equal(`${icon.width}x${icon.height}`, icon.sizes);
    }
  } finally {
    await page.close();
  }
});

test('the same check reports errors for a page without a manifest', { timeout: 60000 }, async () => {
  const { page, installabilityErrors } = await installability('embed-example.html');
  await page.close();
  assert.ok(installabilityErrors.length > 0, 'a page without a manifest would have passed');
  assert.ok(installabilityErrors.some((e) => /manifest/i.test(e.errorId)), JSON.stringify(installabilityErrors));
});

test('a kept model: persistent storage asked for once, usage and quota shown; too little space refuses before the download', { timeout: 60000 }, async () => {
  const page = await context.newPage();
  try {
    // count the page's calls of navigator.storage.persist (the browser's answer stays its own)
    await page.addInitScript(() => {
      const storage = navigator.storage, persist = storage.persist.bind(storage);
      window.persistCalls = 0;
      storage.persist = () => { window.persistCalls++; return persist(); };
    });
    await page.goto(`${base}/web/index.html`);
    await page.waitForSelector('body[data-state=ready]', { timeout: 30000 });
    await page.waitForSelector('.cache-entry');
    await page.waitForFunction(() => document.getElementById('storage-line').dataset.persisted !== '' &&
      document.getElementById('storage-line').dataset.persisted !== undefined);
    assert.equal(await page.evaluate(() => window.persistCalls), 1);
    const line = await page.evaluate(() => ({ ...document.getElementById('storage-line').dataset, text: document.getElementById('storage-line').textContent }));
    assert.ok(Number(line.usage) > 1e6, `usage ${line.usage} counts the kept model`);
    assert.ok(Number(line.quota) > Number(line.usage), `quota ${line.quota}`);
    assert.match(line.text, /^Storage: .* used, .* available to this site · the browser (keeps|may remove) these files/);
    // a second kept model does not ask again
    await page.evaluate(() => document.getElementById('cache-clear').click());
    await page.waitForFunction(() => !document.querySelector('.cache-entry'));
    assert.equal(await page.evaluate(() => window.persistCalls), 1);

    // the browser says only 1 MB is left: a file not kept yet is refused before any download
    await page.evaluate(() => {
      navigator.storage.estimate = async () => ({ usage: 5e6, quota: 6e6 });
    });
    await page.check('input[name=source][value=url]');
    await page.fill('#model-url', `${base}/models/mini/mini-q8_0.gguf`);
    await page.dispatchEvent('#model-url', 'change');
    await page.waitForSelector('#model-check .memory.error');
    assert.match(await page.textContent('#model-check'), /needs 1\.\d+ MiB of storage, but the browser gives this site only 976\.\d KiB more \(4\.\d+ MiB used of 5\.\d+ MiB\)/);
    await page.click('#load-button');
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready');
    assert.match(await page.textContent('#model-status'), /Loaded stories260K/, 'the loaded model stays');
  } finally {
    await page.close();
  }
});
