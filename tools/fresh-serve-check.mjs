#!/usr/bin/env node
// tools/fresh-serve-check.mjs — the last step of `make check-fresh` (tools/check-fresh.sh): the
// page that `make serve` serves, opened in Debian's Chromium as a user would, loads the default
// model and generates. Exits non-zero with the reason when the page is not ready in time, shows
// an error, or no token comes.
//   node tools/fresh-serve-check.mjs [http://127.0.0.1:8080/]
import { launchChromium } from '../tests/browser.mjs';

const url = process.argv[2] || 'http://127.0.0.1:8080/';
const context = await launchChromium('fresh-serve');
let failure = null;
try {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url);
  await page.waitForSelector('body[data-state=ready]', { timeout: 120000 });
  const status = await page.textContent('#model-status');
  await page.fill('#prompt', 'Once upon a time');
  await page.focus('#prompt');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg .tok', { timeout: 60000 });
  const text = await page.evaluate(() => [...document.querySelectorAll('.msg .tok')].map((t) => t.textContent).join(''));
  if (errors.length) failure = `the page reported errors: ${errors.join(' | ')}`;
  else console.log(`serve check: ${status.trim()}; first tokens: ${JSON.stringify(text.slice(0, 60))}`);
} catch (e) {
  failure = `the page at ${url} did not generate: ${e.message.split('\n')[0]}`;
} finally {
  await context.close();
}
if (failure) { console.error(`serve check: ${failure}`); process.exit(1); }
