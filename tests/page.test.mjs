// tests/page.test.mjs — the web page (web/) end to end in Debian's Chromium (playwright-core,
// never a downloaded browser), served by tools/serve.mjs over a temporary root that links the
// repository's web/, wasm_glue/, build/ and node_modules/ and the shared models:
// the default model loads and streams; temperature 0 gives the CLI's greedy text; a fixed seed
// repeats and another seed differs; Stop ends at once and the page goes on; the look-inside
// panel (candidates, the drawn one, the context gauge with its drop mark); keyboard use; a
// dropped local file and chat mode; a bad URL; the <wick-chat> example; a host without the
// isolation headers (the service worker, and one thread where service workers are refused);
// tools in a chat: a Tools box that is wrong says where, a forced call shows as a card, and the
// result the user sends back reaches the next prompt (Qwen3's template, and SmolLM3's, which has
// no tools section); the same in <wick-chat>, the result given by the host page; a second chat
// turn with a hybrid model (mini-qwen35, Qwen3.5's template) evaluates only its new tokens, as
// chat.completions.create does: the page keeps the checkpoint the API computes.
// Screenshots go to $WICK_ARTIFACTS or the system's temporary folder (never committed).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models, runWick } from './helpers.mjs';
import { WEATHER } from './tool-fixtures.mjs';
import { launchChromium, setControl } from './browser.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { Wick } from '../wasm_glue/wick.mjs';

const ARTIFACTS = process.env.WICK_ARTIFACTS || path.join(os.tmpdir(), 'wick-page-artifacts');

// The random-weight Qwen3 and SmolLM3 models with their families' real chat templates
// (llama.cpp's models/templates/, from node-llama-cpp's llama.cpp bundle), so that the page
// chats in those templates: the mini files carry none.
const TOOL_MODELS = {
  'mini-qwen3-tools.gguf': ['families/mini-qwen3-q8_0.gguf', 'Qwen-Qwen3-0.6B'],
  'mini-smollm3-tools.gguf': ['families/mini-smollm3-q8_0.gguf', 'HuggingFaceTB-SmolLM3-3B'],
  'mini-qwen35-chat.gguf': ['families/mini-qwen35-q8_0.gguf', 'Qwen3.5-4B'],
};
const toolTemplates = {};
function writeToolModels(dir) {
  fs.mkdirSync(dir);
  const entries = Object.entries(TOOL_MODELS);
  const sources = readLlamaBundle(entries.map(([, [, template]]) => `models/templates/${template}.jinja`));
  entries.forEach(([name, [file]], i) => {
    toolTemplates[name] = sources[i].toString('utf8');
    fs.writeFileSync(path.join(dir, name), writeGguf(setKv(readGguf(path.join(models, file)), 'tokenizer.chat_template', T.STRING, toolTemplates[name])));
  });
}

let site, isolated, plain, browser;

async function serve(isolate) {
  const server = createServer(site, { isolate });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

const launch = (options) => launchChromium('page', options);

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-page-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  writeToolModels(path.join(site, 'tool-models'));
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  isolated = await serve(true);
  plain = await serve(false);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  for (const s of [isolated, plain]) if (s) { s.server.closeAllConnections(); s.server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function openPage(context = browser, base = isolated.base, file = '', viewport = { width: 1400, height: 900 }) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.errors = errors;
  await page.setViewportSize(viewport);
  await page.goto(`${base}/web/${file}`);
  return page;
}

async function ready(page) {
  await page.waitForSelector('body[data-state=ready]', { timeout: 30000 });
}

/** Sends a prompt with the keyboard and waits for the answer; returns its text (without the prompt) and stats. */
async function ask(page, prompt) {
  const before = await page.locator('.msg[data-done=true]').count();
  await page.fill('#prompt', prompt);
  await page.focus('#prompt');
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 30000 });
  return page.evaluate(() => {
    const msg = [...document.querySelectorAll('.msg[data-done=true]')].at(-1);
    const text = [...msg.querySelectorAll('.tok')].map((t) => t.textContent).join('');
    const stats = msg.querySelector('.stats');
    return { text, stats: stats.textContent, decodeTps: Number(stats.dataset.decodeTps || 0), finish: stats.dataset.finish, tokens: msg.querySelectorAll('.tok').length,
      promptTokens: Number(stats.dataset.promptTokens), promptEvalTokens: Number(stats.dataset.promptEvalTokens) };
  });
}

test('the page loads the default model and streams an answer with its stats', { timeout: 60000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    assert.match(await page.textContent("#model-status"), /Loaded stories260K.* · relaxed SIMD · CPU \(not the GPU: [^)]+\)$/);
    // Chromium has relaxed SIMD: the page says so and takes that build
    assert.equal(await page.getAttribute('#model-status', 'data-build'), 'mt-relaxed');
    assert.match(await page.textContent('#env'), /relaxed SIMD ✓/);
    assert.match(await page.textContent('#model-check'), /1\.\d+ MiB.*Needs about/s);
    // count separate deliveries of text: one MutationObserver callback per task that added tokens
    // (the page puts tokens on screen once a frame), and how many tokens the first one brought
    await page.evaluate(() => {
      window.deliveries = 0;
      new MutationObserver((records) => {
        if (!records.some((r) => [...r.addedNodes].some((n) => n.classList?.contains('tok')))) return;
        if (window.deliveries++ === 0) window.firstDelivery = document.querySelectorAll('#log .tok').length;
      }).observe(document.getElementById('log'), { childList: true, subtree: true });
    });
    // a fixed seed: the answer's length is the same every run (a random one may end at once)
    await page.uncheck('#seed-random');
    await page.fill('#seed', '42');
    const r = await ask(page, 'Once upon a time');
    assert.ok(r.text.length > 20, r.text);
    // 256 tokens at over a thousand a second take a few frames; how many depends on the machine
    // (a busy one delays frames), so the check is that the first update came before the last token
    const { deliveries, firstDelivery, total } = await page.evaluate(() => ({ deliveries: window.deliveries, firstDelivery: window.firstDelivery, total: document.querySelectorAll('#log .tok').length }));
    assert.ok(deliveries >= 2 && firstDelivery < total, `text arrives in several separate updates (${deliveries}; the first with ${firstDelivery} of ${total} tokens)`);
    assert.ok(r.decodeTps > 0, r.stats);
    assert.match(r.stats, /first token after .* prefill \d+ tok .* decode \d+ tok at [\d,]+ tok\/s · context \d+ \/ 128.* KV cache .* of .* · \d threads? .* seed \d+/);
    // the cache list shows the download with its size
    await page.waitForSelector('.cache-entry');
    assert.match(await page.textContent('.cache-entry'), /stories260K\.gguf\s*1\.\d+ MiB/);
    // the prompt is shown as text, and model text never becomes markup
    assert.equal(await page.locator('.msg.completion .prompt-text').textContent(), 'Once upon a time');
    await page.screenshot({ path: path.join(ARTIFACTS, 'page-desktop.png') });
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('temperature 0 gives the CLI\'s greedy text; a fixed seed repeats and another seed differs', { timeout: 60000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    // keyboard: the temperature slider to its minimum (0 = greedy)
    await page.focus('#s-temperature');
    await page.keyboard.press('Home');
    assert.equal(await page.textContent('#o-temperature'), '0 (greedy)');
    await setControl(page, 's-maxTokens', 100);
    const greedy = await ask(page, 'Once upon a time');
    const cli = runWick(fs.existsSync(path.join(root, 'build/native/wick')) ? 'native' : 'wasm',
      ['generate', '-m', path.join(models, 'stories260K.gguf'), '-p', 'Once upon a time', '-n', '100', '--temp', '0', '--ctx', '128']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(greedy.text, cli.stdout.replace(/\n$/, ''));

    await setControl(page, 's-temperature', 1);
    await page.uncheck('#seed-random');
    await page.fill('#seed', '1234');
    const a = await ask(page, 'Once upon a time');
    const b = await ask(page, 'Once upon a time');
    assert.equal(a.text, b.text, 'the same seed gives the same text');
    assert.match(a.stats, /seed 1234/);
    await page.fill('#seed', '98765');
    const c = await ask(page, 'Once upon a time');
    assert.notEqual(c.text, a.text, 'another seed gives another text');
  } finally {
    await page.close();
  }
});

test('the Format control constrains the answer: a pasted JSON schema gives JSON valid for it; a bad schema says where', { timeout: 60000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    assert.equal(await page.isVisible('#format-schema'), false);
    await page.check('input[name=format][value=schema]');
    assert.equal(await page.isVisible('#format-schema'), true);
    const schema = { type: 'object', properties: { mood: { enum: ['happy', 'sad'] }, age: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['mood', 'age'] };
    await page.fill('#format-schema', JSON.stringify(schema));
    await setControl(page, 's-temperature', 1);
    for (const seed of [1, 2, 3]) {
      await page.uncheck('#seed-random');
      await page.fill('#seed', String(seed));
      const r = await ask(page, 'Once upon a time');
      const value = JSON.parse(r.text);
      assert.ok(['happy', 'sad'].includes(value.mood) && Number.isInteger(value.age) && value.age >= 1 && value.age <= 9, r.text);
      assert.deepEqual(Object.keys(value), ['mood', 'age']);
      assert.equal(r.finish, 'grammar');
      assert.match(r.stats, /format complete/);
    }
    await page.fill('#format-schema', '{"type": "string", "pattern": "^a"}');
    const answers = await page.locator('.msg').count();
    await page.fill('#prompt', 'Once upon a time');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.notice.error');
    assert.match(await page.textContent('.notice.error'), /Format: \$\.pattern: "pattern" is not supported/);
    assert.equal(await page.locator('.msg').count(), answers, 'nothing was generated');
    // back to free text: unconstrained again
    await page.check('input[name=format][value=text]');
    assert.equal(await page.isVisible('#format-schema'), false);
    const free = await ask(page, 'Once upon a time');
    assert.notEqual(free.finish, 'grammar');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('Stop ends generation at once, the next prompt works; look inside shows candidates and the context gauge', { timeout: 60000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    await setControl(page, 's-maxTokens', 8192);
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    // past the 128-token window: the engine has dropped tokens and shifted its cache; Stop at
    // once (the tiny model writes thousands of tokens a second)
    await page.waitForSelector('.tok.after-shift', { timeout: 20000 });
    const t0 = Date.now();
    await page.keyboard.press('Escape');
    await page.waitForSelector('body[data-state=ready]', { timeout: 5000 });
    const stopMs = Date.now() - t0;
    assert.ok(stopMs < 2000, `stopped after ${stopMs} ms`);
    const stopped = await page.evaluate(() => {
      const stats = document.querySelector('.msg[data-done=true] .stats');
      return { finish: stats.dataset.finish, tokens: document.querySelectorAll('.msg .tok').length };
    });
    assert.equal(stopped.finish, 'abort');
    assert.ok(stopped.tokens < 8192);
    await page.screenshot({ path: path.join(ARTIFACTS, 'page-after-stop.png') });
    assert.ok(Number(await page.getAttribute('#gauge', 'data-shifted')) > 0);
    assert.equal(await page.locator('#gauge .gauge-drop').count(), 1);
    assert.match(await page.textContent('#gauge-text'), /dropped/);
    assert.equal(await page.getAttribute('#gauge', 'aria-valuemax'), '128');

    // a fixed seed: the answer (and which of its tokens render as visible text) is the same every run
    await setControl(page, 's-maxTokens', 30);
    await page.uncheck('#seed-random');
    await page.fill('#seed', '42');
    const next = await ask(page, 'The cat');
    assert.ok(next.text.length > 0);
    assert.equal(next.finish, 'length');

    // keyboard: focus the answer, move to its first token with the arrow keys
    await page.focus('.msg[data-done=true]:last-of-type .tokens');
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    assert.match(await page.textContent('#cands-title'), /token 2 \(picked\)/);
    // click a token: its candidates, probabilities after truncation summing to at most 1, the drawn one marked
    // a token that renders as something (a newline token has no box to click), from the fifth on
    const nth = await page.$$eval('.msg[data-done=true]:last-of-type .tok', (toks) =>
      toks.findIndex((t, i) => i >= 4 && t.getBoundingClientRect().width > 0));
    assert.ok(nth >= 4, 'a visible token from the fifth on');
    await page.click(`.msg[data-done=true]:last-of-type .tok >> nth=${nth}`);
    assert.match(await page.textContent('#cands-title'), new RegExp(`token ${nth + 1} \\(picked\\)`));
    const cands = await page.$$eval('#cands li', (lis) => lis.map((li) => ({ p: Number(li.dataset.p), drawn: li.classList.contains('drawn'), current: li.getAttribute('aria-current') })));
    assert.ok(cands.length >= 1);
    const sum = cands.reduce((s, c) => s + c.p, 0);
    assert.ok(sum <= 1 + 1e-5 && sum > 0, `sum ${sum}`);
    assert.equal(cands.filter((c) => c.drawn).length, 1);
    assert.equal(cands.find((c) => c.drawn).current, 'true');
    for (let i = 1; i < cands.length; i++) assert.ok(cands[i].p <= cands[i - 1].p + 1e-7, 'ordered by probability');
    assert.equal(await page.getAttribute('#phases', 'data-phase'), 'done');
    assert.match(await page.textContent('#phases'), /Prefill.*prompt tokens in one batch.*Decode.*tokens, one at a time/s);
    await page.locator('#inside-panel').screenshot({ path: path.join(ARTIFACTS, 'page-look-inside.png') });
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('a dropped local file loads (chat mode with its template); a bad URL shows its error and the page goes on', { timeout: 60000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    // a URL that does not exist, then one that is not a GGUF file: errors, and the loaded model stays
    await page.check('input[name=source][value=url]');
    await page.fill('#model-url', `${isolated.base}/models/no-such-model.gguf`);
    await page.dispatchEvent('#model-url', 'change');
    await page.waitForSelector('#model-check .memory.error');
    assert.match(await page.textContent('#model-check'), /Cannot use no-such-model\.gguf: .*404/);
    await page.fill('#model-url', `${isolated.base}/web/index.html`);
    await page.dispatchEvent('#model-url', 'change');
    await page.waitForFunction(() => /GGUF/.test(document.querySelector('#model-check').textContent));
    await page.click('#load-button');
    assert.match(await page.textContent('#model-status'), /Loaded stories260K/);
    const still = await ask(page, 'Once upon a time');
    assert.ok(still.text.length > 0);

    // drop a file on the page
    await page.evaluate(async () => {
      const bytes = await (await fetch('/models/mini/mini-chat-q8_0.gguf')).arrayBuffer();
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'mini-chat-q8_0.gguf'));
      const drop = (type) => document.body.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
      drop('dragenter');
      drop('dragover');
      drop('drop');
    });
    await page.waitForFunction(() => document.body.dataset.state === 'ready' && /mini-chat-q8_0\.gguf/.test(document.getElementById('model-check').textContent) &&
      !/stories/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
    assert.match(await page.textContent('#model-status'), /^Loaded .*llama/);
    assert.equal(await page.isChecked('input[name=mode][value=chat]'), true, 'a model with a chat template opens in chat mode');
    await page.fill('#system-prompt', 'You are terse.');
    const answer = await ask(page, 'Hello!');
    assert.ok(answer.tokens > 0);
    assert.equal(await page.locator('.msg.user .user-text').last().textContent(), 'Hello!');
    // Regenerate replaces the last answer
    const answers = await page.locator('.msg.assistant').count();
    await page.click('#regenerate');
    await page.waitForSelector('body[data-state=ready]');
    await page.waitForFunction(() => document.querySelector('.msg.assistant:last-of-type')?.dataset.done === 'true');
    assert.equal(await page.locator('.msg.assistant').count(), answers);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('the <wick-chat> element works on its example page; the page is readable at phone width', { timeout: 60000 }, async () => {
  const page = await openPage(browser, isolated.base, 'embed-example.html', { width: 390, height: 844 });
  try {
    const chat = page.locator('wick-chat');
    await chat.locator('button.load').click();
    await page.waitForFunction(() => document.querySelector('wick-chat').engine, null, { timeout: 30000 });
    await chat.locator('textarea').fill('Once upon a time');
    await chat.locator('textarea').press('Enter');
    await chat.locator('.stats').waitFor({ timeout: 30000 });
    const text = await chat.locator('.msg.completion').textContent();
    assert.match(text, /^Once upon a time.{20,}/s);
    assert.ok(Number(await chat.locator('.stats').getAttribute('data-decode-tps')) > 0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'embed-phone.png') });

    const main = await openPage(browser, isolated.base, '', { width: 390, height: 844 });
    try {
      await ready(main);
      const overflow = await main.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `no sideways scrolling at phone width (overflow ${overflow}px)`);
      await ask(main, 'Once upon a time');
      await main.screenshot({ path: path.join(ARTIFACTS, 'page-phone.png'), fullPage: true });
    } finally {
      await main.close();
    }
  } finally {
    await page.close();
  }
});

test('without isolation headers: the service worker brings threads; where it is refused, one thread and a note', { timeout: 60000 }, async () => {
  const page = await openPage(browser, plain.base);
  try {
    await ready(page); // after one reload by web/coi.js
    const r = await page.evaluate(() => ({ isolated: crossOriginIsolated, build: window.wickPage.state.engine.build, badge: document.getElementById('env').textContent }));
    assert.equal(r.isolated, true);
    assert.equal(r.build, 'mt-relaxed');
    assert.match(r.badge, /threads ✓ \(via service worker\)/);
    const answer = await ask(page, 'Once upon a time');
    assert.ok(answer.decodeTps > 0);
  } finally {
    await page.close();
  }

  const refusing = await launch({ serviceWorkers: 'block' });
  try {
    const page2 = await openPage(refusing, plain.base);
    await ready(page2);
    const r = await page2.evaluate(() => ({ isolated: crossOriginIsolated, build: window.wickPage.state.engine.build }));
    assert.equal(r.isolated, false);
    assert.equal(r.build, 'st-relaxed');
    assert.match(await page2.textContent('#threads-note'), /one thread: the page is not cross-origin isolated/);
    const answer = await ask(page2, 'Once upon a time');
    assert.ok(answer.text.length > 0);
    assert.match(answer.stats, /1 thread \(single-threaded build\)/);
  } finally {
    await refusing.close();
  }
});

const SEARCH = { type: 'function', function: { name: 'search_page', description: 'Find text on the page', parameters: { type: 'object', properties: { query: { type: 'string', maxLength: 24 } }, required: ['query'] } } };
const ASK = 'What is the weather in Paris?';
const RESULT = '{"temperature": 21, "sky": "clear"}';

/** Loads one of the tool models by its URL; the page opens it in chat mode. */
async function loadToolModel(page, name) {
  await page.check('input[name=source][value=url]');
  await page.fill('#model-url', `${isolated.base}/tool-models/${name}`);
  await page.dispatchEvent('#model-url', 'change');
  await page.waitForFunction((n) => document.querySelector('#model-check').textContent.includes(n) && document.querySelector('#model-check .memory'), name);
  await page.press('#model-url', 'Enter'); // submits the model form, as the Load button does
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && /^Loaded .*synthetic/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  assert.equal(await page.isChecked('input[name=mode][value=chat]'), true);
}

/** The last answer's tool-call cards: [{name, args (the card's text), status}]. */
function cardsOf(page) {
  return page.$$eval('.msg.assistant:last-of-type .tool-call', (cards) => cards.map((c) => ({
    name: c.querySelector('.tool-name').textContent, args: c.querySelector('.tool-args').textContent, status: c.querySelector('.tool-call-status').textContent, id: c.dataset.callId,
  })));
}

test('tools in chat: a wrong Tools box says where; a forced call shows as a card; the result the user sends reaches the next prompt', { timeout: 120000 }, async () => {
  const page = await openPage();
  const engine = await Wick.load(path.join(site, 'tool-models', 'mini-qwen3-tools.gguf'), { threads: 1 });
  try {
    await ready(page);
    await loadToolModel(page, 'mini-qwen3-tools.gguf');
    assert.equal(await page.isVisible('#tools'), true, 'the Tools box shows in chat mode');

    // JSON that does not parse: the line and column, under the box and in a notice; nothing is generated
    const broken = '[\n  {"type": "function",\n   "function": {"name": "get_weather",}}\n]';
    await page.fill('#tools', broken);
    await page.dispatchEvent('#tools', 'change');
    assert.match(await page.textContent('#tools-error'), /^not JSON at line 3, column 39: /);
    assert.equal(await page.getAttribute('#tools', 'aria-invalid'), 'true');
    const answers = await page.locator('.msg').count();
    await page.fill('#prompt', ASK);
    await page.click('#send');
    await page.waitForSelector('.notice.error');
    assert.match(await page.textContent('.notice.error'), /^Tools: not JSON at line 3, column 39/);
    assert.equal(await page.locator('.msg').count(), answers, 'nothing was generated');
    // the caret is put where the JSON breaks
    const caret = await page.evaluate(() => ({ focused: document.activeElement.id, at: document.getElementById('tools').selectionStart }));
    assert.deepEqual(caret, { focused: 'tools', at: broken.indexOf('}}') });
    // a definition of the wrong shape: its path
    await page.fill('#tools', JSON.stringify([WEATHER, { type: 'function', function: { description: 'no name' } }]));
    await page.dispatchEvent('#tools', 'change');
    assert.equal(await page.textContent('#tools-error'), 'tools[1].function.name must be 1 to 64 letters, digits, _ or - (it is missing)');

    // two good tools: the choice offers each; get_weather is forced, greedy
    await page.fill('#tools', JSON.stringify([WEATHER, SEARCH], null, 2));
    await page.dispatchEvent('#tools', 'change');
    assert.equal(await page.isVisible('#tools-error'), false);
    assert.equal(await page.getAttribute('#tools', 'aria-invalid'), null);
    assert.deepEqual(await page.$$eval('#tool-choice option', (os) => os.map((o) => o.value)), ['auto', 'required', 'none', 'function:get_weather', 'function:search_page']);
    await page.selectOption('#tool-choice', 'function:get_weather');
    await page.uncheck('#seed-random');
    await page.fill('#seed', '7');
    await setControl(page, 's-temperature', 0);
    await setControl(page, 's-maxTokens', 300);
    const call = await ask(page, ASK);
    assert.equal(call.finish, 'grammar', call.stats);
    const cards = await cardsOf(page);
    assert.equal(cards.length, 1);
    assert.equal(cards[0].name, 'get_weather');
    const args = JSON.parse(cards[0].args);
    assert.equal(cards[0].args, JSON.stringify(args, null, 2), 'the arguments are pretty-printed');
    // the same request through the JavaScript API (greedy: the same tokens) gives these arguments
    const api = await engine.chat.completions.create({ messages: [{ role: 'user', content: ASK }], tools: [WEATHER, SEARCH], tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 0, max_tokens: 300 });
    assert.equal(api.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(args, JSON.parse(api.choices[0].message.tool_calls[0].function.arguments));
    // the model's <tool_call> text is not shown: it is folded away under the card
    assert.ok(call.text.startsWith('<tool_call>\n{'), call.text);
    assert.equal(await page.isVisible('.msg.assistant:last-of-type .tokens'), false);
    assert.ok(!(await page.locator('.msg.assistant:last-of-type').innerText()).includes('<tool_call>'));
    assert.match(await page.textContent('#tool-reply-note'), /^Your next message is the result of get_weather\.$/);
    assert.equal(cards[0].status, 'Waiting for its result.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'page-tool-call.png') });

    // the user's next message is the result: it shows as such, and the next answer follows it
    await page.selectOption('#tool-choice', 'auto');
    await setControl(page, 's-maxTokens', 20);
    const next = await ask(page, RESULT);
    assert.ok(next.tokens > 0);
    assert.equal(await page.textContent('.msg.tool h3'), 'Result of get_weather');
    assert.equal(await page.textContent('.msg.tool .tool-result-text'), RESULT);
    assert.equal(await page.getAttribute(`.tool-call[data-call-id="${cards[0].id}"]`, 'data-answered'), 'true');
    assert.equal(await page.isVisible('#tool-reply-note'), false);
    const { prompt, roles, toolMessage } = await page.evaluate(() => {
      const s = window.wickPage.state;
      return { prompt: s.prompt, roles: s.messages.map((m) => m.role), toolMessage: s.messages.find((m) => m.role === 'tool') };
    });
    assert.deepEqual(roles, ['user', 'assistant', 'tool', 'assistant']);
    assert.deepEqual(toolMessage, { role: 'tool', tool_call_id: cards[0].id, content: RESULT });
    // Qwen3's template: the call in the assistant's turn, then the result as a tool response, then the answer prompt
    const callText = `<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": ${JSON.stringify(args).replace(/":/g, '": ').replace(/,"/g, ', "')}}\n</tool_call><|im_end|>\n`;
    assert.ok(prompt.includes(callText), prompt);
    assert.ok(prompt.endsWith(`<|im_start|>user\n<tool_response>\n${RESULT}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`), prompt);
    assert.deepEqual(page.errors, []);
  } finally {
    await engine.unload();
    await page.close();
  }
});

test('tools in chat with llama.cpp\'s SmolLM3 template (no tools section): the tools reach the prompt, the call shows as a card, the result follows it', { timeout: 120000 }, async () => {
  const page = await openPage();
  try {
    await ready(page);
    await loadToolModel(page, 'mini-smollm3-tools.gguf');
    await page.fill('#tools', JSON.stringify([WEATHER]));
    await page.dispatchEvent('#tools', 'change');
    await page.selectOption('#tool-choice', 'function:get_weather');
    await page.uncheck('#seed-random');
    await page.fill('#seed', '7');
    await setControl(page, 's-temperature', 0);
    await setControl(page, 's-maxTokens', 300);
    await ask(page, ASK);
    const cards = await cardsOf(page);
    assert.deepEqual(cards.map((c) => c.name), ['get_weather']);
    const args = JSON.parse(cards[0].args);
    assert.equal(typeof args.city, 'string');
    const first = await page.evaluate(() => window.wickPage.state.prompt);
    const system = first.slice(0, first.indexOf('<|im_end|>'));
    assert.ok(system.includes('<tools>\n{"type": "function", "function": {"name": "get_weather"') && system.includes('<tool_call>'), first);

    await page.selectOption('#tool-choice', 'auto');
    await setControl(page, 's-maxTokens', 10);
    await ask(page, RESULT);
    const prompt = await page.evaluate(() => window.wickPage.state.prompt);
    // the call (written into the assistant's turn, as this template drops tool_calls), then the result
    const call = prompt.indexOf('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather"');
    assert.ok(call > 0, prompt);
    assert.ok(prompt.indexOf(RESULT) > call, prompt);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('<wick-chat> with tools: a forced call shows as a card and fires wick-tool-call; sendToolResult brings the next answer', { timeout: 120000 }, async () => {
  const tools = JSON.stringify([WEATHER, SEARCH]).replace(/&/g, '&amp;').replace(/'/g, '&#39;');
  fs.writeFileSync(path.join(site, 'tool-chat.html'), '<!doctype html><meta charset="utf-8"><title>tools</title>\n<script type="module" src="/web/wick-chat.js"></script>\n'
    + `<wick-chat model="/tool-models/mini-qwen3-tools.gguf" tools='${tools}' tool-choice="get_weather" temperature="0" seed="7" max-tokens="300"></wick-chat>\n`);
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${isolated.base}/tool-chat.html`);
    await page.evaluate(() => { window.toolCalls = []; document.addEventListener('wick-tool-call', (e) => window.toolCalls.push(e.detail.calls)); });
    const chat = page.locator('wick-chat');
    await chat.locator('textarea').fill(ASK);
    await chat.locator('textarea').press('Enter');
    await page.waitForFunction(() => window.toolCalls.length === 1, null, { timeout: 30000 });
    const [calls] = await page.evaluate(() => window.toolCalls);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'get_weather');
    const args = JSON.parse(calls[0].function.arguments);
    assert.equal(typeof args.city, 'string');
    // the card: the name and the arguments indented; the model's <tool_call> text is not shown
    assert.equal(await chat.locator('.tool-call .tool-name').textContent(), 'get_weather');
    assert.equal(await chat.locator('.tool-call .tool-args').textContent(), JSON.stringify(args, null, 2));
    assert.ok(!(await chat.locator('.msg.assistant').innerText()).includes('<tool_call>'));
    assert.equal(await chat.locator('textarea').getAttribute('placeholder'), 'The result of get_weather');

    // the host gives the result; the model's next answer follows (not forced now)
    await page.evaluate(() => document.querySelector('wick-chat').setAttribute('tool-choice', 'none'));
    const after = await page.evaluate(async ([id, result]) => {
      const el = document.querySelector('wick-chat');
      const answer = await el.sendToolResult(id, result);
      return { answer, messages: el.messages };
    }, [calls[0].id, RESULT]);
    assert.equal(typeof after.answer, 'string');
    assert.deepEqual(after.messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant']);
    assert.deepEqual(after.messages[1].tool_calls, calls);
    assert.deepEqual(after.messages[2], { role: 'tool', tool_call_id: calls[0].id, content: RESULT });
    assert.match(await chat.locator('.msg.tool').textContent(), /^Result of get_weather\{"temperature": 21/);
    assert.equal(await page.evaluate(() => window.toolCalls.length), 1);

    // a tools attribute that is not JSON: the error says where, and nothing is sent
    await page.evaluate(() => document.querySelector('wick-chat').setAttribute('tools', '[{"type": "function",]'));
    await chat.locator('textarea').fill('Hello');
    await chat.locator('textarea').press('Enter');
    await chat.locator('.msg.error').waitFor();
    assert.match(await chat.locator('.msg.error').textContent(), /^the tools attribute: not JSON at line 1, column 22: /);
    assert.equal(await page.evaluate(() => document.querySelector('wick-chat').messages.length), 4);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('a hybrid model on the page: the second chat turn evaluates only its new tokens, as chat.completions.create does', { timeout: 120000 }, async () => {
  const page = await openPage();
  const file = path.join(site, 'tool-models', 'mini-qwen35-chat.gguf');
  const engine = await Wick.load(file, { threads: 1, contextSize: 512 });
  try {
    await ready(page);
    await loadToolModel(page, 'mini-qwen35-chat.gguf');
    await page.uncheck('#seed-random');
    await page.fill('#seed', '7');
    await setControl(page, 's-temperature', 0);
    await setControl(page, 's-maxTokens', 6);
    const first = await ask(page, 'Hello');
    const second = await ask(page, 'And then?');
    // the same conversation through the API (greedy: the same answers)
    const turn = (messages) => engine.chat.completions.create({ messages, temperature: 0, max_tokens: 6 });
    const one = await turn([{ role: 'user', content: 'Hello' }]);
    const two = await turn([{ role: 'user', content: 'Hello' }, one.choices[0].message, { role: 'user', content: 'And then?' }]);
    assert.equal(first.text, one.choices[0].message.content);
    assert.equal(first.promptEvalTokens, first.promptTokens, 'the first turn evaluates its whole prompt');
    assert.equal(second.text, two.choices[0].message.content);
    assert.equal(second.promptTokens, two.timings.promptTokens);
    assert.equal(second.promptEvalTokens, two.timings.promptEvalTokens, `the page evaluated ${second.promptEvalTokens} of ${second.promptTokens}, the API ${two.timings.promptEvalTokens}`);
    assert.ok(second.promptEvalTokens < second.promptTokens, `the turn resumes from the checkpoint: ${second.promptEvalTokens} of ${second.promptTokens} evaluated`);
    assert.deepEqual(page.errors, []);
  } finally {
    await engine.unload();
    await page.close();
  }
});
