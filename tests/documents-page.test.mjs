// tests/documents-page.test.mjs — the page's documents (issue 29, acceptance 1) in Debian's
// Chromium, served by tools/serve.mjs on 127.0.0.1 as tests/notes-page.test.mjs does: an
// embedding model (a lexical encoder that `wick synth --arch bert --lexical` writes here with
// bge's WordPiece vocabulary, so that cosine similarity follows shared words) loaded beside the
// random-weight Qwen3 mini chat model; two documents added, a Markdown file and a PDF written by
// hand below (read by pdfjs-dist), the progress bar reaching its end; a question sharing words
// with a sentence planted in the PDF retrieves that chunk first, the prompt the chat model
// receives (the rendered prompt the page keeps) contains it, and the answer lists it as its
// first source, its text opening from there; after a reload, and then with no network at all,
// the documents are still there and the same question retrieves the same chunks. Acceptance 5:
// the same texts, chunk size, k and question through wasm_glue/retrieval.mjs under Node give the
// same chunks and scores, and chat.completions.create({documents}) is given the page's chunks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models, runWick } from './helpers.mjs';
import { launchChromium, setControl } from './browser.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { Wick } from '../wasm_glue/wick.mjs';
import { createIndex } from '../wasm_glue/retrieval.mjs';

const MODEL = 'mini-qwen3-chat.gguf';
const GRANITE = 'mini-qwen3-granite-template.gguf'; // the same weights with Granite 3.3's template, which takes documents
const PLANTED = 'The lighthouse keeper Marguerite painted the northern tower violet in 1887.';
const QUESTION = 'Who painted the northern tower violet?';
const MARKDOWN = `# Everyday things

Bakers knead dough until it becomes elastic. Yeast ferments sugars and releases gas. A hot oven sets the crust quickly.

Rivers carry sediment toward the sea. Floods spread silt across plains. Deltas form where currents slow down.

Roses need sunlight and well drained soil. Gardeners prune shrubs in late winter. Compost feeds worms and enriches beds.

Steam engines burned coal to boil water. Signals guarded junctions along busy lines. Stations grew into small towns.
`;
const PDF_LINES = [
  'Fishing boats return each evening with their catch.',
  'Nets are mended on the quay at dawn.',
  'Gulls circle above the market stalls.',
  PLANTED,
  'Ferries cross the bay twice a day in summer.',
  'Storms close the harbour for a week each winter.',
  'Merchants weigh salted cod on iron scales.',
];

/** A one-page PDF 1.4 file with the lines as text (Helvetica), its cross-reference table by byte offsets (PDF 32000-1, 7.5). */
function makePdf(lines) {
  const escape = (s) => s.replace(/[\\()]/g, (c) => `\\${c}`);
  const stream = `BT /F1 12 Tf 72 720 Td 16 TL\n${lines.map((l) => `(${escape(l)}) Tj T*`).join('\n')}\nET\n`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(stream)} >>\nstream\n${stream}endstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets = [];
  objects.forEach((o, i) => { offsets.push(Buffer.byteLength(out)); out += `${i + 1} 0 obj\n${o}\nendobj\n`; });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((n) => `${String(n).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

let site, server, base, browser, down = false;
const served = [];

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-docs-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  const [template, vocab, granite] = readLlamaBundle(['models/templates/Qwen-Qwen3-0.6B.jinja', 'models/ggml-vocab-bert-bge.gguf',
    'models/templates/ibm-granite-granite-3.3-2B-Instruct.jinja']);
  fs.mkdirSync(path.join(site, 'chat-models'));
  for (const [name, t] of [[MODEL, template], [GRANITE, granite]]) {
    fs.writeFileSync(path.join(site, 'chat-models', name),
      writeGguf(setKv(readGguf(path.join(models, 'families', 'mini-qwen3-q8_0.gguf')), 'tokenizer.chat_template', T.STRING, t.toString('utf8'))));
  }
  fs.mkdirSync(path.join(site, 'emb'));
  fs.writeFileSync(path.join(site, 'emb', 'vocab.gguf'), vocab);
  const r = runWick('native', ['synth', '--arch', 'bert', '--shape', 'mini', '--type', 'f16', '--vocab', path.join(site, 'emb', 'vocab.gguf'),
    '-o', path.join(site, 'emb', 'lexical.gguf'), '--lexical']);
  assert.equal(r.code, 0, r.stderr);
  // a server that can be told to refuse everything (offline), counting what it serves
  server = createServer(site, { isolate: true });
  const handlers = server.listeners('request');
  server.removeAllListeners('request');
  server.on('request', (req, res) => {
    if (down) { req.socket.destroy(); return; }
    served.push(req.url);
    for (const h of handlers) h.call(server, req, res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('documents');
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

/** The page up with its documents read from IndexedDB (and, when some are kept, their embedding model loaded again). */
async function ready(page, documents) {
  await page.waitForFunction(() => document.body.dataset.state === 'idle' && window.wickPage?.state.documents);
  await page.evaluate(() => window.wickPage.state.documents.ready);
  if (documents) {
    await page.waitForFunction((n) => document.querySelectorAll('#doc-list .doc-entry').length === n &&
      document.getElementById('emb-status').dataset.loaded && window.wickPage.state.documents.index?.size > 0, documents, { timeout: 30000 });
  }
}

async function loadChat(page, model = MODEL) {
  await page.fill('#ctx-size', '1024');
  await page.check('input[name=source][value=url]');
  await page.fill('#model-url', `${base}/chat-models/${model}`);
  await page.dispatchEvent('#model-url', 'change');
  await page.waitForFunction((n) => document.querySelector('#model-check').textContent.includes(n) && document.querySelector('#model-check .memory'), model);
  const check = await page.textContent('#model-check .memory');
  assert.match(check, /Needs about .* With the embedding model loaded \(about .+\), both take about /, check);
  await page.press('#model-url', 'Enter');
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && /^Loaded .*synthetic/.test(document.getElementById('model-status').textContent), null, { timeout: 30000 });
  await page.click('#new-conversation');
  await page.uncheck('#seed-random');
  await page.fill('#seed', '7');
  await setControl(page, 's-temperature', 0);
  await setControl(page, 's-maxTokens', 8);
}

/** Asks the question; returns the rendered prompt, the look-inside chunks part and the answer's sources. */
async function ask(page) {
  const before = await page.locator('.msg[data-done=true]').count();
  await page.fill('#prompt', QUESTION);
  await page.click('#send');
  await page.waitForFunction((n) => document.querySelectorAll('.msg[data-done=true]').length > n, before, { timeout: 60000 });
  const answer = page.locator('.msg.assistant[data-done=true]').last();
  assert.equal(await answer.locator('.msg-error').count(), 0);
  // the first source opens on its text
  await answer.locator('.sources details.source').first().locator('summary').click();
  return page.evaluate(() => {
    const msg = [...document.querySelectorAll('.msg.assistant[data-done=true]')].at(-1);
    const first = msg.querySelector('.sources details.source');
    return {
      prompt: window.wickPage.state.prompt,
      chunks: window.wickPage.state.context.chunks.map((c) => ({ text: c.text, source: c.source, score: c.score })),
      chunksPart: document.querySelector('#parts-list [data-kind=chunks]')?.textContent ?? '',
      firstOpen: first.open, firstText: first.querySelector('.source-text').textContent,
      sources: [...msg.querySelectorAll('.sources details.source')].map((d) => ({ source: d.dataset.source, part: d.dataset.part, score: d.dataset.score, text: d.querySelector('.source-text').textContent })),
    };
  });
}

test('documents: a Markdown file and a PDF embedded with a progress bar; the planted chunk is retrieved, in the prompt and listed as the source; the same after a reload and offline', { timeout: 300000 }, async () => {
  const page = await browser.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  if (process.env.WICK_DEBUG) page.on('console', (m) => console.log('console:', m.type(), m.text()));
  await page.setViewportSize({ width: 1400, height: 900 });
  try {
    await page.goto(`${base}/web/?autoload=0`);
    await ready(page, 0);
    assert.equal(await page.isDisabled('#doc-files'), true, 'no documents before an embedding model');
    // the embedding model: looked at (its memory) before it loads
    await page.fill('#emb-url', `${base}/emb/lexical.gguf`);
    await page.dispatchEvent('#emb-url', 'change');
    await page.waitForSelector('#emb-memory');
    assert.match(await page.textContent('#emb-memory'), /^Needs about /);
    assert.ok(Number(await page.getAttribute('#emb-memory', 'data-needed')) > 0);
    await page.click('#emb-load');
    await page.waitForFunction(() => document.getElementById('emb-status').dataset.loaded !== undefined, null, { timeout: 30000 })
      .catch(async (e) => { throw new Error(`${e.message}: ${await page.textContent('#emb-status')} ${await page.textContent('#emb-progress-text')}`); });
    assert.ok(await page.getAttribute('#emb-status', 'data-loaded'), await page.textContent('#emb-status'));
    assert.match(await page.textContent('#emb-status'), /^Embedding model: .* dimensions/);
    assert.equal(await page.isDisabled('#doc-files'), false);

    await setControl(page, 'doc-chunk-tokens', 32);
    await setControl(page, 'doc-k', 3);
    await page.setInputFiles('#doc-files', [
      { name: 'things.md', mimeType: 'text/markdown', buffer: Buffer.from(MARKDOWN) },
      { name: 'harbour.pdf', mimeType: 'application/pdf', buffer: makePdf(PDF_LINES) },
    ]);
    await page.waitForFunction(() => document.querySelectorAll('#doc-list .doc-entry').length === 2, null, { timeout: 60000 });
    const bar = await page.evaluate(() => {
      const b = document.getElementById('doc-progress-bar');
      return { value: b.value, max: b.max, done: b.dataset.done, chunks: Number(b.dataset.chunks), total: Number(b.dataset.total), text: document.getElementById('doc-progress-text').textContent };
    });
    assert.equal(bar.done, 'true');
    assert.equal(bar.value, bar.max, 'the progress bar reached its end');
    assert.equal(bar.chunks, bar.total);
    assert.match(bar.text, /^harbour\.pdf: \d+ chunks embedded in [\d.]+ s \([\d.]+ chunks\/s\)\.$/);
    const entries = await page.$$eval('#doc-list .doc-entry', (es) => es.map((e) => ({ name: e.dataset.name, chunks: Number(e.dataset.chunks), facts: e.querySelector('.doc-facts').textContent })));
    assert.deepEqual(entries.map((e) => e.name), ['things.md', 'harbour.pdf']);
    for (const e of entries) {
      assert.ok(e.chunks >= 2, JSON.stringify(e));
      assert.match(e.facts, /\d+ chunks of \d+–\d+ tokens \(mean \d+\)/);
    }
    assert.match(entries[1].facts, /^pdf · /);
    // what IndexedDB holds: text, vectors, source, the file's hash, the embedding model's id and hash
    const stored = await page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('wick-documents');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const r = open.result.transaction('documents').objectStore('documents').getAll();
        r.onsuccess = () => resolve(r.result.map((d) => ({ name: d.name, sha256: d.sha256, model: d.model, chunks: d.chunks.length,
          vectors: d.vectors.length, isFloat32: d.vectors instanceof Float32Array, text: d.chunks.map((c) => c.text).join(' '),
          chunkTokens: d.chunkTokens, chunkTexts: d.chunks.map((c) => c.text) })));
      };
    }));
    assert.equal(stored.length, 2);
    const pdf = stored.find((d) => d.name === 'harbour.pdf');
    assert.ok(pdf.text.includes(PLANTED), `the PDF's text, as pdfjs read it: ${pdf.text}`);
    for (const d of stored) {
      assert.match(d.sha256, /^[0-9a-f]{64}$/);
      assert.match(d.model.sha256, /^[0-9a-f]{64}$/);
      assert.ok(d.model.id && d.model.dim > 0 && d.isFloat32 && d.vectors === d.chunks * d.model.dim, JSON.stringify(d.model));
    }

    await loadChat(page);
    const first = await ask(page);
    assert.equal(first.sources.length, 3);
    assert.equal(first.sources[0].source, 'harbour.pdf');
    assert.ok(first.sources[0].text.includes(PLANTED), JSON.stringify(first.sources));
    assert.ok(first.firstOpen && first.firstText.includes(PLANTED), 'the source opens on its chunk');
    assert.ok(Number(first.sources[0].score) > Number(first.sources[1].score));
    assert.ok(first.prompt.includes(PLANTED), first.prompt);
    assert.ok(first.prompt.indexOf(PLANTED) < first.prompt.indexOf(QUESTION), 'the chunk comes in the system message, before the question');
    assert.match(first.chunksPart, /^Retrieved chunks \(harbour\.pdf \d\.\d\d, /);
    assert.deepEqual(page.errors, []);

    // acceptance 5: the same inputs under Node give the same chunks. The page's own reading of the
    // two files (fileText: pageText for the Markdown, pdfjs-dist for the PDF; the page keeps only
    // the chunks, not the whole text) goes through wasm_glue/retrieval.mjs's createIndex/add/search
    // with the same embedding file, chunk size, k and question: the same chunks as IndexedDB holds,
    // and the same hits in the same order (text, source, score within 1e-6) as the page retrieved.
    // Those hits, as chat.completions.create({documents}) under Node, are the chunks the page put in
    // its prompt; only the layout differs by design: the page's prompt has them in the system
    // message's context block (wasm_glue/context-budget.mjs, budgeted with the other parts), the
    // library where the template takes documents, else in the same kind of block.
    const read = await page.evaluate(async (files) => {
      const { fileText } = await import('/web/documents.js');
      const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      return Promise.all(files.map(async ([name, b64]) => ({ name, ...(await fileText(name, bytes(b64))) })));
    }, [['things.md', Buffer.from(MARKDOWN).toString('base64')], ['harbour.pdf', makePdf(PDF_LINES).toString('base64')]]);
    const embedder = await Wick.load(path.join(site, 'emb', 'lexical.gguf'), { threads: 1 });
    const chat = await Wick.load(path.join(site, 'chat-models', MODEL), { threads: 1 });
    try {
      const index = await createIndex(embedder, { maxTokens: stored[0].chunkTokens });
      for (const f of read) {
        const from = index.size;
        await index.add([{ text: f.text, source: f.name, title: f.title }]);
        assert.deepEqual(index.chunks.slice(from, index.size).map((c) => c.text), stored.find((d) => d.name === f.name).chunkTexts, `${f.name}'s chunks`);
      }
      const hits = await index.search(QUESTION, 3);
      assert.deepEqual(hits.map((h) => [h.text, h.source]), first.chunks.map((c) => [c.text, c.source]));
      hits.forEach((h, i) => assert.ok(Math.abs(h.score - first.chunks[i].score) < 1e-6, `score ${i}: ${h.score} under Node, ${first.chunks[i].score} on the page`));
      const reply = await chat.chat.completions.create({ messages: [{ role: 'user', content: QUESTION }], documents: hits, max_tokens: 1, temperature: 0 });
      assert.deepEqual(reply.wick.sources.map((s) => s.text), first.chunks.map((c) => c.text));
      for (const c of first.chunks) assert.ok(reply.wick.prompt.includes(c.text) && first.prompt.includes(c.text), c.text);
    } finally {
      await embedder.unload();
      await chat.unload();
    }

    // a template that takes documents (Granite 3.3's): the chunks go there, as chat.completions.create
    // would put them, not in the system message's block; the look-inside parts still add up to the prompt
    await loadChat(page, GRANITE);
    const granite = await ask(page);
    assert.deepEqual(granite.chunks.map((c) => c.text), first.chunks.map((c) => c.text));
    assert.ok(granite.prompt.includes(`<|start_of_role|>document {"document_id": "1"}<|end_of_role|>\n${granite.chunks[0].text}<|end_of_text|>`), granite.prompt);
    assert.ok(!granite.prompt.includes('Retrieved documents (cite them as [n])'), granite.prompt);
    assert.match(granite.chunksPart, /^Retrieved chunks \(harbour\.pdf .*\) as the template's documents/);
    const parts = await page.evaluate(async () => {
      const list = document.getElementById('parts-list');
      const { state } = window.wickPage;
      return { total: Number(list.dataset.tokens), chunks: Number(list.querySelector('[data-kind=chunks]').dataset.tokens),
        sum: [...list.querySelectorAll('li')].reduce((a, li) => a + Number(li.dataset.tokens), 0),
        rendered: (await state.engine.tokenize(state.prompt, { special: true })).length };
    });
    assert.equal(parts.sum, parts.total, JSON.stringify(parts));
    assert.equal(parts.total, parts.rendered, JSON.stringify(parts));
    assert.ok(parts.chunks > 0, JSON.stringify(parts));
    assert.deepEqual(page.errors, []);

    // a reload: the documents come back from IndexedDB, the embedding model loads again, the same chunks
    await page.waitForFunction(async () => !!navigator.serviceWorker.controller &&
      (await caches.keys()).some((k) => /^wick-shell-[0-9a-f]{16} /.test(k)), null, { timeout: 30000, polling: 200 });
    await page.reload();
    await ready(page, 2);
    await loadChat(page);
    const again = await ask(page);
    assert.deepEqual(again.sources, first.sources);
    assert.ok(again.prompt.includes(PLANTED));

    // offline: no network for the browser, the server refusing everything
    await browser.setOffline(true);
    down = true;
    const count = served.length;
    await page.reload();
    await ready(page, 2);
    assert.equal(await page.evaluate(() => navigator.onLine), false);
    await loadChat(page);
    const offline = await ask(page);
    assert.deepEqual(offline.sources, first.sources);
    assert.ok(offline.prompt.includes(PLANTED));
    assert.deepEqual(served.slice(count), [], 'nothing came from the server');

    // one removed: it goes from the list, from IndexedDB and from retrieval
    await page.click('#doc-list .doc-entry[data-name="harbour.pdf"] .doc-remove');
    await page.waitForFunction(() => document.querySelectorAll('#doc-list .doc-entry').length === 1);
    const left = await ask(page);
    assert.ok(left.sources.every((s) => s.source === 'things.md'), JSON.stringify(left.sources));
    assert.ok(!left.prompt.includes(PLANTED));
    assert.deepEqual(page.errors, []);
  } finally {
    await browser.setOffline(false);
    down = false;
    await page.close();
  }
});
