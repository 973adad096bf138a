// tests/browser.mjs — what the browser tests share: Debian's Chromium (installed by
// tools/setup.sh; without it these tests fail, they are never skipped), headless through
// playwright-core, each launch with a fresh temporary profile that goes away when it closes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
/** headless, no sandbox (containers), and nothing that would reach past 127.0.0.1 */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
/** the usual launch: no GPU (the WebGPU tests give their SwiftShader flags instead) */
export const NO_GPU_ARGS = [...CHROMIUM_ARGS, '--disable-gpu'];

async function playwright() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed: run tools/setup.sh (apt-get install chromium)`);
  return (await import('playwright-core')).chromium;
}

/** A persistent browser context with a new profile under the system's temporary folder (name:
 *  a word for the folder's name); closing it removes the profile. options go to playwright
 *  (args: NO_GPU_ARGS unless given). */
export async function launchChromium(name, options = {}) {
  const chromium = await playwright();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `wick-${name}-chromium-`));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: NO_GPU_ARGS, ...options });
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
  const close = context.close.bind(context);
  context.close = async (...a) => {
    try { await close(...a); } finally { fs.rmSync(profile, { recursive: true, force: true }); }
  };
  return context;
}

/** A browser without a persistent profile (playwright's own temporary one). */
export async function launchBrowser(options = {}) {
  const chromium = await playwright();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: NO_GPU_ARGS, ...options });
}
