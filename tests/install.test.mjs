// tests/install.test.mjs — the page is an installable web app (issue 14, acceptance 2): Chromium
// reports no installability errors for it (the DevTools protocol's Page.getInstallabilityErrors),
// its manifest parses without errors, and every icon it names loads as a PNG of the size it says.
// A page without a manifest (the <wick-chat> example) gets errors from the same check, so the
// check can fail.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root } from './helpers.mjs';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

let server, base, context, profile;

before(async () => {
  server = createServer(root, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  const { chromium } = await import('playwright-core');
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-install-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
});

after(async () => {
  await context?.close();
  server?.closeAllConnections();
  server?.close();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
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
