// tests/page-notes.test.mjs — the page's memory notes (web/notes.js) in Debian's Chromium: a note
// added in the Memory notes panel is in the next chat's system prompt (the prompt the page
// renders, window.wickPage.state.prompt), and after a reload without the panel opened; a note is
// edited and deleted; with "Let the model propose notes", a `remember` call forced by the tool
// choice on a random-weight Qwen3 file shows the proposed note with Save and Discard: a discarded
// one is not kept, a saved one is, and the model's next prompt carries the user's choice.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models } from './helpers.mjs';
import { launchChromium } from './browser.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { NOTES_HEADER } from '../web/notes.js';

let site, server, base, browser;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-notes-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  // the random-weight Qwen3 file with Qwen3's chat template (llama.cpp's, from node-llama-cpp's bundle)
  const [template] = readLlamaBundle(['models/templates/Qwen-Qwen3-0.6B.jinja']);
  fs.mkdirSync(path.join(site, 'tool-models'));
  fs.writeFileSync(path.join(site, 'tool-models', 'mini-qwen3-tools.gguf'),
    writeGguf(setKv(readGguf(path.join(models, 'families', 'mini-qwen3-q8_0.gguf')), 'tokenizer.chat_template', T.STRING, template.toString('utf8'))));
  server = createServer(site);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('notes');
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openChat(page) {
  await page.goto(`${base}/web/`);
  await page.waitForSelector('body[data-state=ready]', { timeout: 30000 });
  await page.check('input[name=source][value=url]');
  await page.fill('#model-url', `${base}/tool-models/mini-qwen3-tools.gguf`);
  await page.dispatchEvent('#model-url', 'change');
  await page.waitForFunction(() => document.querySelector('#model-check .memory'));
  await page.press('#model-url', 'Enter');
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && /^Loaded .*synthetic/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
  await setControl(page, 's-temperature', 0);
  await setControl(page, 's-maxTokens', 2);
}

async function setControl(page, id, value) {
  await page.evaluate(([id, value]) => {
    const input = document.getElementById(id);
    input.value = String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, value]);
}

async function ask(page, text) {
  const before = await page.locator('.msg[data-done=true]').count();
  await page.fill('#prompt', text);
  await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 60000 });
  return page.evaluate(() => window.wickPage.state.prompt);
}

async function openPanel(page) {
  if (!(await page.evaluate(() => document.getElementById('notes-field').open))) await page.click('#notes-field summary');
  await page.waitForSelector('#note-add');
}

const savedNotes = (page) => page.evaluate(() => JSON.parse(localStorage.getItem('wick-notes') || '[]').map((n) => n.text));

test('memory notes: added, edited and deleted in the panel; in every chat\'s system prompt, after a reload too', { timeout: 180000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await openChat(page);
    await page.fill('#system-prompt', 'You are terse.');
    await openPanel(page);
    assert.equal(await page.textContent('#notes-list'), 'No notes yet.');
    for (const note of ['My cat is called Miso.', 'I prefer metric units.']) {
      await page.fill('#note-new', note);
      await page.click('#note-add');
    }
    assert.deepEqual(await page.$$eval('#notes-list .note-text', (ts) => ts.map((t) => t.value)), ['My cat is called Miso.', 'I prefer metric units.']);
    const prompt = await ask(page, 'Hello');
    assert.ok(prompt.startsWith(`<|im_start|>system\nYou are terse.\n\n${NOTES_HEADER}\n- My cat is called Miso.\n- I prefer metric units.<|im_end|>\n<|im_start|>user\nHello<|im_end|>`), prompt);

    // edited, then one deleted
    await page.fill('#notes-list li:nth-child(1) .note-text', 'My cat is called Tofu.');
    await page.dispatchEvent('#notes-list li:nth-child(1) .note-text', 'change');
    await page.click('#notes-list li:nth-child(2) .note-delete');
    assert.deepEqual(await savedNotes(page), ['My cat is called Tofu.']);

    // after a reload, with the panel closed and no system prompt: the notes alone are the system message
    await openChat(page);
    assert.equal(await page.evaluate(() => document.getElementById('notes-field').open), false);
    const again = await ask(page, 'Hi');
    assert.ok(again.startsWith(`<|im_start|>system\n${NOTES_HEADER}\n- My cat is called Tofu.<|im_end|>\n<|im_start|>user\nHi<|im_end|>`), again);
    // a completion (not a chat) has no notes
    assert.equal(await page.isVisible('#notes-field'), true);
    await page.check('input[name=mode][value=completion]');
    assert.equal(await page.isVisible('#notes-field'), false);
    assert.deepEqual(errors, []);
  } finally {
    await page.evaluate(() => localStorage.clear()).catch(() => {});
    await page.close();
  }
});

test('a remember call forced on a random-weight model: the note is kept only when the user saves it', { timeout: 180000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await openChat(page);
    await openPanel(page);
    // not offered until asked for
    assert.ok(!(await page.$$eval('#tool-choice option', (os) => os.map((o) => o.value))).includes('function:remember'));
    await page.check('#notes-offer');
    assert.deepEqual(await page.$$eval('#tool-choice option', (os) => os.map((o) => o.value)), ['auto', 'required', 'none', 'function:remember']);
    await page.selectOption('#tool-choice', 'function:remember');
    await setControl(page, 's-maxTokens', 300);

    const proposal = async (text) => {
      await ask(page, text);
      const finish = await page.evaluate(() => [...document.querySelectorAll('.msg[data-done=true] .stats')].at(-1).dataset.finish);
      assert.equal(finish, 'grammar', 'the forced call is complete');
      const card = page.locator('.msg.assistant:last-of-type .tool-call.remember');
      await card.waitFor();
      return { card, text: await card.locator('.note-proposed').textContent() };
    };
    const first = await proposal('Remember that I like tea.');
    assert.ok(first.text.length > 0, 'the model proposed a note');
    // the call's text was the model's: the same note as its arguments
    const call = await page.evaluate(() => window.wickPage.state.messages.at(-1).tool_calls[0]);
    assert.equal(call.function.name, 'remember');
    assert.equal(first.text, JSON.parse(call.function.arguments).note);
    assert.equal(await page.isVisible('#tool-reply-note'), false, 'a remember call waits for no typed result');
    assert.deepEqual(await savedNotes(page), [], 'nothing is saved before the user chooses');
    await first.card.locator('.note-discard').click();
    assert.equal(await first.card.locator('.tool-call-status').textContent(), 'Not saved.');
    assert.deepEqual(await savedNotes(page), []);
    assert.deepEqual(await page.evaluate(() => window.wickPage.state.messages.at(-1)), { role: 'tool', tool_call_id: call.id, content: 'The user chose not to save the note.' });

    const second = await proposal('Remember that I live in Lyon.');
    await second.card.locator('.note-save').click();
    assert.equal(await second.card.locator('.tool-call-status').textContent(), 'Saved to your notes.');
    assert.deepEqual(await savedNotes(page), [second.text.trim()]);
    assert.deepEqual(await page.$$eval('#notes-list .note-text', (ts) => ts.map((t) => t.value)), [second.text.trim()]);
    // the next prompt: the saved note in the system message, the user's choices as the calls' results
    await page.selectOption('#tool-choice', 'none');
    await setControl(page, 's-maxTokens', 2);
    const prompt = await ask(page, 'Thanks');
    assert.ok(prompt.startsWith(`<|im_start|>system\n${NOTES_HEADER}\n- ${second.text.trim()}`), prompt);
    assert.ok(prompt.includes('<tool_response>\nThe user chose not to save the note.\n</tool_response>'), prompt);
    assert.ok(prompt.includes('<tool_response>\nThe user saved the note.\n</tool_response>'), prompt);
    assert.deepEqual(errors, []);
  } finally {
    await page.evaluate(() => localStorage.clear()).catch(() => {});
    await page.close();
  }
});
