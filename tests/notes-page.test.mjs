// tests/notes-page.test.mjs — memory notes and a full context on the page (issue 29, acceptance 2
// and 3) in Debian's Chromium, served by tools/serve.mjs as tests/page.test.mjs does, with the
// random-weight Qwen3 mini model carrying Qwen3's real chat template: a note added is in the next
// conversation's system prompt (the rendered prompt the page keeps) and survives a reload; a
// `remember` call forced by the tool choice shows a confirmation, and only a confirmed note is
// saved; with a 256-token context a long conversation plus retrieved chunks loses the chunks
// first, then its oldest turns (dropped, or summarized as chosen), the look-inside panel listing
// the parts with token counts that add up to the prompt the engine prefilled; notes that cannot
// fit give a message, not a silent cut.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models } from './helpers.mjs';
import { launchChromium, setControl } from './browser.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';

const MODEL = 'mini-qwen3-chat.gguf';
let site, server, base, browser;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-notes-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  const template = readLlamaBundle(['models/templates/Qwen-Qwen3-0.6B.jinja'])[0].toString('utf8');
  fs.mkdirSync(path.join(site, 'chat-models'));
  fs.writeFileSync(path.join(site, 'chat-models', MODEL),
    writeGguf(setKv(readGguf(path.join(models, 'families', 'mini-qwen3-q8_0.gguf')), 'tokenizer.chat_template', T.STRING, template)));
  server = createServer(site, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('notes');
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openPage() {
  const page = await browser.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(`${base}/web/?autoload=0`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle' && window.wickPage?.state.notes);
  return page;
}

/** Loads the chat model by URL (optionally with a context size); greedy, a few tokens per answer. */
async function loadChat(page, { contextSize, maxTokens = 8 } = {}) {
  if (contextSize) await page.fill('#ctx-size', String(contextSize));
  await page.check('input[name=source][value=url]');
  await page.fill('#model-url', `${base}/chat-models/${MODEL}`);
  await page.dispatchEvent('#model-url', 'change');
  await page.waitForFunction((n) => document.querySelector('#model-check').textContent.includes(n) && document.querySelector('#model-check .memory'), MODEL);
  await page.press('#model-url', 'Enter');
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && /^Loaded .*synthetic/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
  await page.uncheck('#seed-random');
  await page.fill('#seed', '7');
  await setControl(page, 's-temperature', 0);
  await setControl(page, 's-maxTokens', maxTokens);
}

async function ask(page, prompt) {
  const before = await page.locator('.msg[data-done=true]').count();
  await page.fill('#prompt', prompt);
  await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 60000 });
  return page.evaluate(() => {
    const msg = [...document.querySelectorAll('.msg[data-done=true]')].at(-1);
    const stats = msg.querySelector('.stats');
    return { error: msg.querySelector('.msg-error')?.textContent ?? null, promptTokens: Number(stats.dataset.promptTokens), finish: stats.dataset.finish };
  });
}

/** The look-inside parts: [{kind, tokens, cut, text}] and the list's own total. */
function partsOf(page) {
  return page.evaluate(() => {
    const list = document.getElementById('parts-list');
    return { total: Number(list.dataset.tokens), budget: Number(list.dataset.budget), summary: document.getElementById('parts-text').textContent,
      parts: [...list.children].map((li) => ({ kind: li.dataset.kind, tokens: Number(li.dataset.tokens), cut: li.dataset.cut, text: li.textContent })) };
  });
}
const sum = (parts) => parts.reduce((a, p) => a + p.tokens, 0);

test('notes: one added is in the next conversation\'s system prompt and survives a reload; edited and deleted ones leave it', { timeout: 120000 }, async () => {
  const page = await openPage();
  try {
    await page.fill('#note-new', 'The user lives in Lyon.');
    await page.click('#note-add');
    await page.fill('#note-new', 'The user likes trains.');
    await page.click('#note-add');
    assert.deepEqual(await page.$$eval('#notes-list .note-text', (ts) => ts.map((t) => t.value)), ['The user lives in Lyon.', 'The user likes trains.']);
    await loadChat(page);
    await page.fill('#system-prompt', 'You are terse.');
    const r = await ask(page, 'Where do I live?');
    assert.equal(r.error, null);
    const prompt = await page.evaluate(() => window.wickPage.state.prompt);
    assert.ok(prompt.startsWith('<|im_start|>system\nYou are terse.\n\nMemory notes from the user:\n- The user lives in Lyon.\n- The user likes trains.<|im_end|>\n<|im_start|>user\nWhere do I live?'), prompt);
    const { parts, total } = await partsOf(page);
    assert.deepEqual(parts.map((p) => p.kind), ['system', 'notes', 'chunks', 'message']);
    assert.ok(parts[1].tokens > 10 && parts[1].text.startsWith('Memory notes (2)'), JSON.stringify(parts));
    assert.equal(sum(parts), total);
    assert.equal(total, r.promptTokens, 'the parts add up to what the engine prefilled');

    // after a reload the notes are still there; one edited, one deleted
    await page.reload();
    await page.waitForFunction(() => window.wickPage?.state.notes);
    assert.deepEqual(await page.$$eval('#notes-list .note-text', (ts) => ts.map((t) => t.value)), ['The user lives in Lyon.', 'The user likes trains.']);
    await page.fill('#notes-list li:nth-child(1) .note-text', 'The user lives in Paris.');
    await page.dispatchEvent('#notes-list li:nth-child(1) .note-text', 'change');
    await page.click('#notes-list li:nth-child(2) .note-delete');
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem('wick-notes'))), ['The user lives in Paris.']);
    await loadChat(page);
    await ask(page, 'Where do I live?');
    const next = await page.evaluate(() => window.wickPage.state.prompt);
    assert.ok(next.includes('- The user lives in Paris.<|im_end|>') && !next.includes('Lyon') && !next.includes('trains'), next);
    // notes off: none in the prompt
    await page.click('#new-conversation');
    await page.uncheck('#notes-on');
    await ask(page, 'Hello');
    assert.ok(!(await page.evaluate(() => window.wickPage.state.prompt)).includes('Memory notes'));
    assert.deepEqual(page.errors, []);
  } finally {
    await page.evaluate(() => localStorage.clear());
    await page.close();
  }
});

test('a remember call forced by the tool choice shows a confirmation; only a confirmed note is saved', { timeout: 120000 }, async () => {
  const page = await openPage();
  try {
    await page.check('#notes-remember');
    await loadChat(page, { maxTokens: 400 });
    assert.ok((await page.$$eval('#tool-choice option', (os) => os.map((o) => o.value))).includes('function:remember'));
    await page.selectOption('#tool-choice', 'function:remember');
    const first = await ask(page, 'Remember that I like tea.');
    assert.equal(first.finish, 'grammar');
    assert.ok((await page.evaluate(() => window.wickPage.state.prompt)).includes('"name": "remember"'), 'the tool is in the prompt');
    const card = '.msg.assistant:last-of-type .tool-call[data-name=remember]';
    await page.waitForSelector(`${card} .remember-save`);
    const proposed = JSON.parse(await page.textContent(`${card} .tool-args`)).note;
    assert.equal(typeof proposed, 'string');
    assert.match(await page.textContent(`${card} .tool-call-status`), /proposes this note/);
    assert.equal(await page.isVisible('#tool-reply-note'), false, 'the next message is not the call\'s result');
    // declined: nothing saved, the model is told
    await page.click(`${card} .remember-discard`);
    assert.equal(await page.getAttribute(card, 'data-saved'), 'false');
    assert.equal(await page.evaluate(() => localStorage.getItem('wick-notes')), null);
    assert.equal(await page.locator('#notes-list .note-text').count(), 0);
    let messages = await page.evaluate(() => window.wickPage.state.messages);
    assert.deepEqual(messages.at(-1), { role: 'tool', tool_call_id: messages.at(-2).tool_calls[0].id, content: '{"saved":false,"reason":"the user declined"}' });

    // asked again: confirmed, the note is saved and goes into the next prompt
    const second = await ask(page, 'Remember that I like tea, please.');
    assert.equal(second.finish, 'grammar');
    await page.waitForSelector(`${card} .remember-save`);
    const note = JSON.parse(await page.textContent(`${card} .tool-args`)).note;
    assert.ok(note.trim().length > 0, `the model proposed ${JSON.stringify(note)}`);
    await page.click(`${card} .remember-save`);
    assert.equal(await page.getAttribute(card, 'data-saved'), 'true');
    assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem('wick-notes'))), [note.trim()]);
    messages = await page.evaluate(() => window.wickPage.state.messages);
    assert.equal(messages.at(-1).role, 'tool');
    assert.deepEqual(JSON.parse(messages.at(-1).content), { saved: true, note });
    await page.selectOption('#tool-choice', 'none');
    await ask(page, 'Thanks.');
    const prompt = await page.evaluate(() => window.wickPage.state.prompt);
    assert.ok(prompt.includes(`Memory notes from the user:\n- ${note.trim().replace(/\s*\n\s*/g, ' ')}`), prompt);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.evaluate(() => localStorage.clear());
    await page.close();
  }
});

test('a 256-token context: chunks go first, then the oldest turns (dropped or summarized); the parts add up; notes that cannot fit give a message', { timeout: 180000 }, async () => {
  const page = await openPage();
  try {
    await page.fill('#note-new', 'Lyon.');
    await page.click('#note-add');
    await loadChat(page, { contextSize: 256, maxTokens: 32 });
    // a long conversation so far, and three retrieved chunks (state.retrieve: where retrieval plugs in)
    await page.evaluate(() => {
      const s = window.wickPage.state;
      for (let i = 0; i < 8; i++) s.messages.push({ role: 'user', content: `Day ${i}?` }, { role: 'assistant', content: `Walk, day ${i}.` });
      s.retrieve = async () => [
        { text: 'Lyon is on the Rhône.', source: 'lyon.md', score: 0.71 },
        { text: 'Spring in Lyon is mild.', source: 'weather.md', score: 0.93 },
        { text: 'Paris to Lyon: 2 hours.', source: 'trains.md', score: 0.42 },
      ];
    });
    const r = await ask(page, 'Last day?');
    assert.equal(r.error, null);
    let { parts, total, budget, summary } = await partsOf(page);
    assert.equal(budget, 256 - 32);
    assert.ok(total <= budget);
    assert.equal(sum(parts), total);
    assert.equal(total, r.promptTokens, 'the parts add up to the prompt the engine prefilled');
    const cutChunks = parts.filter((p) => p.kind === 'chunks' && p.cut === 'dropped');
    assert.deepEqual(cutChunks.map((p) => p.text.match(/\((\w+\.md)/)[1]), ['trains.md', 'lyon.md', 'weather.md'], 'every chunk cut, lowest score first');
    const dropped = parts.find((p) => p.kind === 'history' && p.cut);
    assert.equal(dropped.cut, 'dropped');
    assert.match(dropped.text, /^\d+ older messages.*did not fit in 224 tokens/);
    assert.match(summary, /cut to fit: chunks dropped, .*messages dropped/);
    assert.ok(parts.find((p) => p.kind === 'notes').tokens > 0, 'the notes stay');
    assert.match(summary, /tokens came from the prefix cache/);

    // summarize instead: the model writes a summary that replaces the oldest turns
    await page.check('input[name=overflow][value=summarize]');
    const s = await ask(page, 'Museums?');
    assert.equal(s.error, null);
    ({ parts, total } = await partsOf(page));
    assert.equal(sum(parts), total);
    assert.equal(total, s.promptTokens);
    const part = parts.find((p) => p.kind === 'summary');
    assert.ok(part && part.tokens > 0 && !part.cut && /summarized by the model/.test(part.text), JSON.stringify(parts));
    assert.equal(parts.find((p) => p.kind === 'history' && p.cut).cut, 'summarized');
    const state = await page.evaluate(() => ({ summary: window.wickPage.state.summary, prompt: window.wickPage.state.prompt }));
    assert.ok(state.summary.covers > 0 && state.prompt.includes(`Summary of the earlier conversation (by the model; it replaces ${state.summary.covers} messages):\n${state.summary.text}`), state.prompt);

    // notes too long for the context: a message, nothing generated, nothing cut silently
    await page.fill('#note-new', 'The user prefers trains to planes and tea to coffee. '.repeat(30));
    await page.click('#note-add');
    const big = await ask(page, 'Hello?');
    assert.match(big.error, /^E_CONTEXT_FULL: The prompt cannot fit: the system prompt \(\d+ tokens\), the memory notes \(\d+ tokens\) and the new message take \d+ tokens with the template, and only 224 are available/);
    assert.equal(big.finish, 'abort');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.evaluate(() => localStorage.clear());
    await page.close();
  }
});
