// tests/page-images.test.mjs — images in the chat (issue 32), the page's side, in Debian's Chromium
// (playwright-core, never a downloaded browser), served from 127.0.0.1 by tools/serve.mjs:
//  - without an image encoder (engine.info.vision null) the image button is off, its title saying
//    to load a vision model with its mmproj; a pasted or dropped image is refused with that
//    reason (and a dropped image is never taken for a model to load); in completion mode too;
//  - the page's own work, with the engine's vision info given by the test (a chat model, its
//    engine.info.vision set and the requests recorded on their way to the engine, their images
//    then left out so that a text model answers): an image picked with the button's file chooser,
//    one pasted into the message box and one dropped onto the chat show as thumbnails, one is
//    removed, and the message goes as OpenAI content parts, the images first as data: URLs of
//    the very bytes, then the text; the conversation shows them in the user's message; the
//    saved conversation (web/sessions.js) holds them whole and a reload shows them again; the
//    look-inside panel lists each image of the prompt with its positions and its encoding time,
//    or "reused"; a message the engine refuses before any answer gives its images back to the tray;
//  - the same in <wick-chat>: the button, paste, drop, thumbnails and content parts;
//  - END TO END (it needs the engine API of issue 32: Wick.load(model, {mmproj}), image content
//    parts, wick.prompt's <__media__> and wick.images): a synth chat model and a synth idefics3
//    mmproj (`wick synth --mmproj idefics3`), loaded through the page's URL fields; a pasted image
//    and a question: the prompt holds the image marker inside the user's turn before the text, the
//    image is encoded; a second question about it reuses its positions (encoded: false).
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
import { smolVocab } from './vision-fixtures.mjs';

const ARTIFACTS = process.env.WICK_ARTIFACTS || path.join(os.tmpdir(), 'wick-page-artifacts');
const CHAT_MODEL = '/models/mini/mini-chat-q8_0.gguf';
// what the engine would report for a SmolVLM file (the test sets it: see fakeVision)
const VISION = { projector: 'idefics3', imageSize: 512, positionsPerImage: 64, mmprojBytes: 103_769_856, source: 'mmproj.gguf' };
// the engine's wick.images for a prompt with two images, the second one's positions reused
const IMAGES_REPORT = [{ width: 24, height: 16, positions: 64, tiles: 1, encoded: true, encodeMs: 37 },
  { width: 16, height: 24, positions: 64, tiles: 1, encoded: false, encodeMs: 0 }];
const NO_VISION = /cannot see images: load a vision model with its mmproj \(image encoder\)/;

let site, server, base, browser;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-page-images-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  server = createServer(site, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('page-images');
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openPage(query) {
  const page = await browser.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.goto(`${base}/web/?${query}`);
  return page;
}

/** The page with a model from a URL (and an mmproj: paths on the test's server), loaded by its Load button. */
async function loadByUrl(model, mmproj = null) {
  const query = `model=${encodeURIComponent(base + model)}${mmproj ? `&mmproj=${encodeURIComponent(base + mmproj)}` : ''}`;
  const page = await openPage(`autoload=0&${query}`);
  await page.waitForSelector('body[data-state=idle]', { timeout: 30000 });
  await page.waitForSelector('#model-check .memory', { timeout: 30000 });
  await page.click('#load-button');
  await page.waitForSelector('body[data-state=ready]', { timeout: 60000 });
  return page;
}

/** A small PNG drawn by the page (a solid colour): {name, base64, dataUrl}. */
function drawPng(page, name, colour, width, height) {
  return page.evaluate(async ([name, colour, width, height]) => {
    const canvas = new OffscreenCanvas(width, height);
    const g = canvas.getContext('2d');
    g.fillStyle = colour;
    g.fillRect(0, 0, width, height);
    const bytes = new Uint8Array(await (await canvas.convertToBlob({ type: 'image/png' })).arrayBuffer());
    let bin = '';
    for (const b of bytes) bin += String.fromCharCode(b);
    const base64 = btoa(bin);
    return { name, base64, dataUrl: `data:image/png;base64,${base64}` };
  }, [name, colour, width, height]);
}

/** Dispatches a paste of `image` into `target` (a selector function run in the page), as a user's Ctrl+V of a copied picture. */
function pasteImage(page, image, target = () => document.getElementById('prompt')) {
  return page.evaluate(([image, target]) => {
    const bytes = Uint8Array.from(atob(image.base64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], image.name, { type: 'image/png' }));
    const event = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true, composed: true });
    (0, eval)(`(${target})`)().dispatchEvent(event);
    return event.defaultPrevented;
  }, [image, target.toString()]);
}

/** Drags `image` onto `target` and drops it there (dragenter, dragover, drop); returns what the overlay said on the way. */
function dropImage(page, image, target = () => document.getElementById('log')) {
  return page.evaluate(([image, target]) => {
    const bytes = Uint8Array.from(atob(image.base64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], image.name, { type: 'image/png' }));
    const at = (0, eval)(`(${target})`)();
    at.dispatchEvent(new DragEvent('dragenter', { dataTransfer: data, bubbles: true, cancelable: true, composed: true }));
    const overlay = document.getElementById('drop-text')?.textContent ?? null;
    at.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true, composed: true }));
    at.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true, composed: true }));
    return overlay;
  }, [image, target.toString()]);
}

/** The engine's side, given by the test: engine.info.vision set (as Wick.load({mmproj}) sets it),
 *  and each chat request recorded (window.requests), its images then replaced by their text so
 *  that the text-only engine answers; the final chunk carries IMAGES_REPORT as wick.images. */
async function fakeVision(page) {
  await page.evaluate(async ([vision, report]) => {
    const { state, applyVision } = window.wickPage;
    const engine = state.engine;
    engine.info.vision = vision;
    await applyVision(engine.info);
    window.requests = [];
    const textOnly = (messages) => messages.map((m) => (Array.isArray(m.content)
      ? { ...m, content: m.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join('') } : m));
    const template = engine.applyChatTemplate.bind(engine);
    engine.applyChatTemplate = (messages, options) => template(textOnly(messages), options);
    const create = engine.chat.completions.create;
    engine.chat.completions.create = async (request) => {
      const { signal, ...recorded } = request;
      window.requests.push(JSON.parse(JSON.stringify(recorded)));
      // a request the engine refuses before any token (window.refuseNext)
      if (window.refuseNext) { window.refuseNext = false; throw Object.assign(new Error('refused by the test'), { code: 'E_TEST' }); }
      const stream = await create({ ...request, messages: textOnly(request.messages) });
      if (!request.stream) return stream;
      return (async function* () {
        for await (const c of stream) {
          if (c.choices[0].finish_reason) c.wick = { ...c.wick, images: report };
          yield c;
        }
      })();
    };
  }, [VISION, IMAGES_REPORT]);
}

test('without an image encoder the image controls are off and say why; a pasted or dropped image is refused, never loaded as a model', { timeout: 90000 }, async () => {
  const page = await openPage('');
  try {
    await page.waitForSelector('body[data-state=ready]', { timeout: 30000 }); // stories260K, no mmproj
    assert.equal(await page.evaluate(() => window.wickPage.state.engine.info.vision ?? null), null);
    assert.equal(await page.isDisabled('#image-button'), true);
    assert.match(await page.getAttribute('#image-button', 'title'), NO_VISION);
    const image = await drawPng(page, 'cat.png', '#c33', 24, 16);
    // completion mode (a story model): the reason is still the missing encoder
    await pasteImage(page, image);
    await page.waitForSelector('#vision-note');
    assert.match(await page.textContent('#vision-note'), NO_VISION);
    assert.equal(await page.isHidden('#image-tray'), true);
    const loaded = await page.getAttribute('#model-status', 'data-loaded');
    assert.equal(await dropImage(page, image), 'Drop the image to add it to your message');
    await page.waitForTimeout(300);
    assert.equal(await page.getAttribute('body', 'data-state'), 'ready', 'a dropped image is not loaded as a model');
    assert.equal(await page.getAttribute('#model-status', 'data-loaded'), loaded);
    assert.equal(await page.isChecked('input[name=source][value=default]'), true);
    assert.match(await page.textContent('#vision-note'), NO_VISION);
    assert.equal(await page.locator('.image-thumb').count(), 0);
    assert.equal(await page.evaluate(() => window.wickPage.state.tray), null, 'web/images.js is not even imported');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('picked, pasted and dropped images show as thumbnails, one is removed, and the message goes as content parts; the conversation, its saved copy and Look inside keep them', { timeout: 120000 }, async () => {
  const page = await loadByUrl(CHAT_MODEL);
  try {
    assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
    assert.equal(await page.isDisabled('#image-button'), true, 'a chat model without an mmproj: off');
    await fakeVision(page);
    assert.equal(await page.isDisabled('#image-button'), false);
    assert.match(await page.getAttribute('#image-button', 'title'), /Add an image/);
    const red = await drawPng(page, 'red.png', '#d22', 24, 16);
    const green = await drawPng(page, 'green.png', '#2a2', 20, 20);
    const blue = await drawPng(page, 'blue.png', '#22d', 16, 24);

    // the button opens a file chooser for images
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.click('#image-button')]);
    assert.equal(await chooser.element().getAttribute('accept'), 'image/*');
    await chooser.setFiles({ name: red.name, mimeType: 'image/png', buffer: Buffer.from(red.base64, 'base64') });
    await page.waitForSelector('#image-tray[data-count="1"]');
    // a paste into the message box, a drop onto the conversation
    assert.equal(await pasteImage(page, green), true, 'an image-only paste puts no text into the box');
    await page.waitForSelector('#image-tray[data-count="2"]');
    assert.equal(await dropImage(page, blue), 'Drop the image to add it to your message');
    await page.waitForSelector('#image-tray[data-count="3"]');
    const thumbs = await page.$$eval('#image-tray .image-thumb img', (imgs) => imgs.map((i) => ({ src: i.src, alt: i.alt, width: i.naturalWidth })));
    assert.deepEqual(thumbs.map((t) => t.src), [red.dataUrl, green.dataUrl, blue.dataUrl]);
    assert.deepEqual(thumbs.map((t) => t.alt), ['Image 1: red.png', 'Image 2: green.png', 'Image 3: blue.png']);
    assert.deepEqual(thumbs.map((t) => t.width), [24, 20, 16], 'the thumbnails are the images, decoded');
    assert.equal(await page.getAttribute('body', 'data-state'), 'ready', 'the dropped image was not taken for a model');
    await page.locator('#image-tray').screenshot({ path: path.join(ARTIFACTS, 'page-image-tray.png') });
    // the keyboard: the second one's Remove button
    await page.focus('#image-tray .image-thumb:nth-child(2) .image-remove');
    assert.equal(await page.getAttribute('#image-tray .image-thumb:nth-child(2) .image-remove', 'aria-label'), 'Remove image 2 (green.png)');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#image-tray[data-count="2"]');

    await page.fill('#prompt', 'What is in these pictures?');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done=true]', { timeout: 30000 });
    const sent = await page.evaluate(() => window.requests.at(-1).messages.at(-1));
    assert.deepEqual(sent, { role: 'user', content: [
      { type: 'image_url', image_url: { url: red.dataUrl } },
      { type: 'image_url', image_url: { url: blue.dataUrl } },
      { type: 'text', text: 'What is in these pictures?' }] });
    assert.equal(await page.isHidden('#image-tray'), true, 'the tray empties when the message goes');
    assert.deepEqual(await page.$$eval('.msg.user .msg-image', (imgs) => imgs.map((i) => i.src)), [red.dataUrl, blue.dataUrl]);
    assert.equal(await page.textContent('.msg.user .user-text'), 'What is in these pictures?');
    // Look inside: each image of the prompt, its positions and its encoding (the engine's wick.images)
    const inside = await page.$$eval('.images-inside li', (li) => li.map((l) => ({ text: l.textContent, encoded: l.dataset.encoded })));
    assert.deepEqual(inside, [
      { text: 'Image 1 (24 × 16): 64 positions · encoded in 37 ms', encoded: 'true' },
      { text: 'Image 2 (16 × 24): 64 positions · reused from the KV cache, not encoded again', encoded: 'false' }]);
    // the prompt's parts count each image as the encoder's positions
    const tokens = Number(await page.getAttribute('#parts-list', 'data-tokens'));
    assert.ok(tokens > 2 * VISION.positionsPerImage, `the prompt's count (${tokens}) holds both images' positions`);

    // an image alone (no text) is a message too
    await pasteImage(page, green);
    await page.waitForSelector('#image-tray[data-count="1"]');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done=true]').length === 2, null, { timeout: 30000 });
    assert.deepEqual(await page.evaluate(() => window.requests.at(-1).messages.at(-1).content), [{ type: 'image_url', image_url: { url: green.dataUrl } }]);

    // the saved conversation holds the images whole; a reload shows them again
    await page.waitForFunction(() => document.getElementById('log').dataset.saved === '4', null, { timeout: 30000 });
    const saved = await page.evaluate(async () => {
      const api = await import('./sessions.js');
      const store = await api.openSessions();
      return (await store.list())[0].meta.messages.filter((m) => m.role === 'user').map((m) => m.content);
    });
    assert.deepEqual(saved, [sent.content, [{ type: 'image_url', image_url: { url: green.dataUrl } }]]);
    await page.reload();
    await page.waitForSelector('body[data-state=idle]', { timeout: 30000 });
    await page.waitForSelector('#model-check .memory', { timeout: 30000 });
    await page.click('#load-button');
    await page.waitForSelector('body[data-state=ready]', { timeout: 60000 });
    await page.waitForSelector('.msg.user .msg-image');
    assert.deepEqual(await page.$$eval('.msg.user .msg-image', (imgs) => imgs.map((i) => i.src)), [red.dataUrl, blue.dataUrl, green.dataUrl]);
    assert.match(await page.textContent('#session-list'), /4 messages \(“\[image\] \[image\] What is in these picture…”\)/, 'the saved list names the first message\'s images');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('a message refused before any answer gives its images back to the tray; completion mode turns the image button off and clears the tray', { timeout: 90000 }, async () => {
  const page = await loadByUrl(CHAT_MODEL);
  try {
    await fakeVision(page);
    const red = await drawPng(page, 'red.png', '#d22', 8, 8);
    await pasteImage(page, red);
    await page.waitForSelector('#image-tray[data-count="1"]');
    await page.evaluate(() => { window.refuseNext = true; });
    // the conversation as it was (an earlier test's saved one may be open)
    const kept = await page.evaluate(() => window.wickPage.state.messages.length);
    await page.fill('#prompt', 'Hi');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.msg-error');
    assert.match(await page.textContent('.msg-error'), /E_TEST: refused by the test/);
    assert.equal(await page.evaluate(() => window.requests.at(-1).messages.at(-1).content[0].image_url.url), red.dataUrl, 'it was sent');
    await page.waitForSelector('#image-tray[data-count="1"]');
    assert.equal(await page.getAttribute('#image-tray img', 'src'), red.dataUrl);
    assert.equal(await page.evaluate(() => window.wickPage.state.messages.length), kept, 'the refused message is not kept');
    await page.check('input[name=mode][value=completion]');
    assert.equal(await page.isDisabled('#image-button'), true);
    assert.match(await page.getAttribute('#image-button', 'title'), /chat messages: choose Chat mode/);
    assert.equal(await page.isHidden('#image-tray'), true);
    await page.check('input[name=mode][value=chat]');
    assert.equal(await page.isDisabled('#image-button'), false);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('<wick-chat>: the image button (off without an mmproj), paste, drop, thumbnails and content parts', { timeout: 90000 }, async () => {
  fs.writeFileSync(path.join(site, 'chat.html'), `<!doctype html><meta charset="utf-8"><title>chat</title>
<script type="module" src="/web/wick-chat.js"></script>
<wick-chat model="${CHAT_MODEL}" max-tokens="3" temperature="0" autoload></wick-chat>`);
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${base}/chat.html`);
    await page.waitForFunction(() => document.querySelector('wick-chat')?.engine, null, { timeout: 60000 });
    const button = page.locator('wick-chat button.image');
    assert.equal(await button.isDisabled(), true);
    assert.match(await button.getAttribute('title'), /cannot see images: give <wick-chat> a vision model and its mmproj attribute/);
    // the engine's side, given by the test (as for the page)
    await page.evaluate(([vision, report]) => {
      const chat = document.querySelector('wick-chat');
      chat.engine.info.vision = vision;
      chat._showImageControls();
      window.requests = [];
      const create = chat.engine.chat.completions.create;
      chat.engine.chat.completions.create = async (request) => {
        window.requests.push(JSON.parse(JSON.stringify({ ...request, signal: undefined })));
        const messages = request.messages.map((m) => (Array.isArray(m.content) ? { ...m, content: m.content.filter((p) => p.type === 'text').map((p) => p.text).join('') || '?' } : m));
        const stream = await create({ ...request, messages });
        return (async function* () { for await (const c of stream) { if (c.choices[0].finish_reason) c.wick = { ...c.wick, images: report }; yield c; } })();
      };
      window.done = new Promise((resolve) => chat.addEventListener('wick-done', (e) => resolve(e.detail), { once: true }));
    }, [VISION, IMAGES_REPORT.slice(0, 1)]);
    assert.equal(await button.isDisabled(), false);
    const red = await drawPng(page, 'red.png', '#d22', 12, 10);
    const blue = await drawPng(page, 'blue.png', '#22d', 10, 12);
    const green = await drawPng(page, 'green.png', '#2a2', 9, 9);
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), button.click()]);
    await chooser.setFiles({ name: red.name, mimeType: 'image/png', buffer: Buffer.from(red.base64, 'base64') });
    await page.locator('wick-chat .images[data-count="1"]').waitFor();
    await pasteImage(page, blue, () => document.querySelector('wick-chat').shadowRoot.querySelector('textarea'));
    await page.locator('wick-chat .images[data-count="2"]').waitFor();
    await dropImage(page, green, () => document.querySelector('wick-chat').shadowRoot.querySelector('.log'));
    await page.locator('wick-chat .images[data-count="3"]').waitFor();
    assert.deepEqual(await page.locator('wick-chat .image-thumb img').evaluateAll((imgs) => imgs.map((i) => i.src)), [red.dataUrl, blue.dataUrl, green.dataUrl]);
    await page.locator('wick-chat .image-thumb:nth-child(1) .image-remove').click();
    await page.locator('wick-chat textarea').fill('Which colours?');
    await page.locator('wick-chat textarea').press('Enter');
    const done = await page.evaluate(() => window.done);
    assert.deepEqual(done.images, IMAGES_REPORT.slice(0, 1), 'wick-done carries the engine\'s wick.images');
    const sent = await page.evaluate(() => window.requests.at(-1).messages.at(-1));
    assert.deepEqual(sent, { role: 'user', content: [{ type: 'image_url', image_url: { url: blue.dataUrl } },
      { type: 'image_url', image_url: { url: green.dataUrl } }, { type: 'text', text: 'Which colours?' }] });
    assert.deepEqual(await page.evaluate(() => document.querySelector('wick-chat').messages[0].content.length), 3);
    assert.deepEqual(await page.locator('wick-chat .msg.user .thumbs img').evaluateAll((imgs) => imgs.map((i) => i.src)), [blue.dataUrl, green.dataUrl]);
    assert.match(await page.locator('wick-chat .msg.user').textContent(), /Which colours\?$/);
    assert.equal(await page.locator('wick-chat .images').isHidden(), true);
    await page.locator('wick-chat').screenshot({ path: path.join(ARTIFACTS, 'wick-chat-images.png') });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

// ---- END TO END: depends on the engine API of issue 32 (Wick.load(model, {mmproj}), image
// content parts in chat.completions.create, wick.prompt's <__media__> marker, wick.images) ----

/** A synth chat model (Qwen3's template from llama.cpp's bundle; the gpt-2 vocabulary with SmolVLM's
 * image tokens, at the synth mmproj's width: --shape vl) and a synth idefics3 mmproj, written into the site. */
function writeVisionModels() {
  const dir = path.join(site, 'vision');
  fs.mkdirSync(dir, { recursive: true });
  const [template] = readLlamaBundle(['models/templates/Qwen-Qwen3-0.6B.jinja']);
  smolVocab(path.join(dir, 'vocab.gguf'));
  const text = path.join(dir, 'text.gguf');
  let r = runWick('native', ['synth', '--arch', 'llama', '--shape', 'vl', '--type', 'q8_0', '--vocab', path.join(dir, 'vocab.gguf'), '-o', text]);
  assert.equal(r.code, 0, r.stderr);
  fs.writeFileSync(path.join(dir, 'chat.gguf'), writeGguf(setKv(readGguf(text), 'tokenizer.chat_template', T.STRING, template.toString('utf8'))));
  r = runWick('native', ['synth', '--mmproj', 'idefics3', '--type', 'f16', '-o', path.join(dir, 'mmproj.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  return { model: '/vision/chat.gguf', mmproj: '/vision/mmproj.gguf' };
}

test('END TO END (engine API): a pasted image reaches the prompt as <__media__> in the user\'s turn; a second question reuses its positions', { timeout: 180000 }, async () => {
  const files = writeVisionModels();
  const page = await loadByUrl(files.model, files.mmproj);
  try {
    assert.match(await page.textContent('#model-check'), /mmproj\.gguf: .* · image encoder \(idefics3\)/);
    const vision = await page.evaluate(() => window.wickPage.state.engine.info.vision);
    assert.equal(vision?.projector, 'idefics3', JSON.stringify(vision));
    assert.match(await page.textContent('#model-status'), /sees images \(idefics3 image encoder/);
    assert.equal(await page.isDisabled('#image-button'), false);
    await page.check('input[name=mode][value=chat]');
    const image = await drawPng(page, 'gradient.png', '#7a4', 50, 37);
    await pasteImage(page, image);
    await page.waitForSelector('#image-tray[data-count="1"]');
    await page.fill('#prompt', 'What is this?');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done=true]', { timeout: 60000 });
    const prompt = await page.evaluate(() => window.wickPage.state.prompt);
    assert.match(prompt, /<\|im_start\|>user\n<__media__>\s*What is this\?<\|im_end\|>/, prompt);
    assert.equal(prompt.split('<__media__>').length, 2, 'one marker');
    const first = await page.$$eval('.images-inside li', (li) => li.map((l) => ({ encoded: l.dataset.encoded, positions: Number(l.dataset.positions) })));
    assert.equal(first.length, 1);
    assert.equal(first[0].encoded, 'true');
    assert.ok(first[0].positions > 0);
    const promptTokens = Number(await page.getAttribute('.msg.assistant .stats', 'data-prompt-tokens'));
    assert.ok(promptTokens > first[0].positions, `prompt_tokens (${promptTokens}) counts the image's ${first[0].positions} positions`);

    await page.fill('#prompt', 'And what colour is it?');
    await page.press('#prompt', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done=true]').length === 2, null, { timeout: 60000 });
    const second = await page.$$eval('.images-inside li', (li) => li.map((l) => ({ encoded: l.dataset.encoded, positions: Number(l.dataset.positions), text: l.textContent })));
    assert.equal(second.length, 1, 'the same image, once');
    assert.equal(second[0].encoded, 'false', 'its positions came from the cache');
    assert.equal(second[0].positions, first[0].positions);
    assert.match(second[0].text, /reused/);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});
