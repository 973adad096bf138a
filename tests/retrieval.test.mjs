// tests/retrieval.test.mjs — retrieval (wasm_glue/retrieval.mjs) and documents in chat (wick.mjs,
// chat-template.mjs) under Node:
//  - chunkText: paragraphs, then sentences, then runs of words, within maxTokens, with overlap;
//    pageText: an HTML page's title and text without tags, a Markdown page's title;
//  - `wick synth --arch bert --lexical` (src/synth.c): an encoder whose cosine similarities follow
//    the words texts share (llama.cpp embeds the file as wick does); with it, a fact planted in one of five documents is the chunk that
//    createIndex/search retrieves for a question sharing its words, a question sharing none is not
//    near it, an index saved by toJSON and read by loadIndex gives the same results, and a reranker
//    engine reorders the candidates as its own rerank() does;
//  - `wick index FOLDER` (wasm_glue/cli.mjs) over five pages written here: one JSON file whose
//    search returns the right page for a question, with titles, URLs and the model's SHA-256;
//  - chat.completions.create({documents}) on a random-weight qwen3 file: the chunks are in the
//    rendered prompt (the response's wick.prompt) through the template's `documents` for Granite
//    3.3's and 4.0's templates and Command R7B's, and in the system message's context block for Qwen3's, which takes
//    none; the response's wick.sources lists them (stream and not);
//  - Wick.connect: documents reach an OpenAI-compatible server as the same context block in the
//    system message (the OpenAI API has no documents field);
//  - in Chromium (a page on 127.0.0.1 importing the same modules): the same chunks, scores and
//    rendered prompt as under Node for the same inputs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import http from 'node:http';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { runWick, models, root } from './helpers.mjs';
import { createServer } from '../tools/serve.mjs';
import { launchChromium } from './browser.mjs';
import { Wick } from '../wasm_glue/wick.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';
import { createIndex, loadIndex, chunkText, pageText, cosineScores } from '../wasm_glue/retrieval.mjs';
import { DOCUMENTS_HEADER } from '../wasm_glue/chat-template.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-retrieval-'));
const vocab = path.join(tmp, 'ggml-vocab-bert-bge.gguf');
const lexicalFile = path.join(tmp, 'lexical.gguf');
const rerankerFile = path.join(tmp, 'reranker.gguf');
const templates = {};
let lexical, chat;

const PLANTED = 'The lighthouse keeper Marguerite painted the northern tower violet in 1887.';
const QUESTION = 'Who painted the northern tower violet?';
const UNRELATED = 'quantum entanglement experiments';
// five documents of several paragraphs on other things, the planted fact inside the third
const TOPICS = [
  ['Bread', 'Bakers knead dough until it becomes elastic. Yeast ferments sugars and releases gas. A hot oven sets the crust quickly.'],
  ['Rivers', 'Rivers carry sediment toward the sea. Floods spread silt across plains. Deltas form where currents slow down.'],
  ['Harbour', 'Fishing boats return each evening with their catch. Nets are mended on the quay at dawn. Gulls circle above the market stalls.'],
  ['Gardens', 'Roses need sunlight and well drained soil. Gardeners prune shrubs in late winter. Compost feeds worms and enriches beds.'],
  ['Trains', 'Steam engines burned coal to boil water. Signals guarded junctions along busy lines. Stations grew into small towns.'],
];
const documents = TOPICS.map(([title, body], i) => ({
  title, source: `${title.toLowerCase()}.md`,
  text: [body, i === 2 ? `${body.split('. ')[0]}. ${PLANTED} ${body.split('. ').slice(1).join('. ')}` : body, body.split('. ').reverse().join('. ')].join('\n\n'),
}));

function synth(out, extra) {
  const r = runWick('native', ['synth', '--arch', 'bert', '--shape', 'mini', '--type', 'f16', '--vocab', vocab, '-o', out, ...extra]);
  assert.equal(r.code, 0, r.stderr);
}

before(async () => {
  const [bytes, granite33, granite40, qwen3, commandR7b] = readLlamaBundle(['models/ggml-vocab-bert-bge.gguf',
    'models/templates/ibm-granite-granite-3.3-2B-Instruct.jinja', 'models/templates/ibm-granite-granite-4.0.jinja', 'models/templates/Qwen-Qwen3-0.6B.jinja',
    'models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja']);
  fs.writeFileSync(vocab, bytes);
  Object.assign(templates, { granite33: granite33.toString('utf8'), granite40: granite40.toString('utf8'), qwen3: qwen3.toString('utf8'), commandR7b: commandR7b.toString('utf8') });
  synth(lexicalFile, ['--lexical']);
  lexical = await Wick.load(lexicalFile, { threads: 1 });
});
after(async () => {
  await lexical?.unload();
  await chat?.unload();
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('chunkText: whole paragraphs while they fit, then sentences, then runs of words, with overlap', async () => {
  const words = async (s) => s.split(/\s+/).length;
  const text = 'One two three. Four five six seven.\n\nEight nine ten. Eleven twelve.\n\n' + Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ') + '.';
  const chunks = await chunkText(text, words, { maxTokens: 12, overlap: 3, reserve: 2 });
  for (const c of chunks) assert.ok(c.tokens <= 12, `${c.tokens} tokens: ${c.text}`);
  assert.equal(chunks[0].text, 'One two three. Four five six seven.');
  // the second paragraph would fit in a chunk of its own: it is not split across the first two;
  // the first's last sentence (4 words) is over the overlap (3) and is not repeated
  assert.equal(chunks[1].text, 'Eight nine ten. Eleven twelve.');
  // a 30-word sentence: runs of words, the next opening with the last run's tail only at sentence grain
  const rest = chunks.slice(2).map((c) => c.text).join(' ');
  assert.equal(rest.replace(/\s+/g, ' '), Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ') + '.');
  // overlap: a short last sentence of one chunk repeats at the head of the next
  const short = await chunkText('A b c d e. F g. H i j k l. M n o p.', words, { maxTokens: 9, overlap: 2, reserve: 0 });
  assert.deepEqual(short.map((c) => c.text), ['A b c d e. F g.', 'F g. H i j k l.', 'M n o p.']);
  await assert.rejects(chunkText('x', words, { maxTokens: 10, overlap: 5 }), /overlap/);
});

test('pageText: an HTML page without its tags, scripts and styles; titles of HTML and Markdown', () => {
  const html = pageText('<html><head><title>Opening &amp; hours</title><style>p{}</style></head><body><nav>Menu</nav><h1>Hours</h1><p>Open <b>daily</b> from 9.</p><script>var x = "<p>";</script><p>Closed&nbsp;Mondays&#33;</p></body></html>', 'about/hours.html');
  assert.equal(html.title, 'Opening & hours');
  assert.equal(html.text, 'Menu\n\nHours\n\nOpen daily from 9.\n\nClosed Mondays!');
  assert.equal(pageText('---\ntitle: "Price list"\n---\n# Prices\n\nTea 2', 'p.md').title, 'Price list');
  assert.equal(pageText('Intro\n\n# Prices\n\nTea 2', 'p.md').title, 'Prices');
  assert.equal(pageText('plain words', 'notes/a.txt').title, 'a');
});

test('synth --lexical: cosine similarity follows shared words; two texts without a common word score about 0', async () => {
  const [a, b, c] = await lexical.embed(['the cat sat on the mat', 'a cat sat on a mat', 'quantum entanglement experiments']);
  const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
  // four of six tokens shared, each side with two others: 4 / √(8·8) = 0.5
  assert.ok(Math.abs(dot(a, b) - 0.5) < 0.12, `cat/mat: ${dot(a, b)}`);
  assert.ok(Math.abs(dot(a, c)) < 0.15 && Math.abs(dot(b, c)) < 0.15, `no common word: ${dot(a, c)}, ${dot(b, c)}`);
  assert.equal(lexical.info.name, 'wick synth bert lexical mini f16');
  const r = runWick('native', ['synth', '--arch', 'nomic-bert', '--lexical', '--shape', 'mini', '--type', 'f16', '--vocab', vocab, '-o', path.join(tmp, 'x.gguf')]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /--lexical is for --arch bert/);
});

test('synth --lexical: llama.cpp embeds the file as wick does (the same token ids, the same pooled vectors)', async () => {
  const llama = await nativeLlama();
  const model = await llama.loadModel({ modelPath: lexicalFile, gpuLayers: 0 });
  try {
    const ctx = await model.createContext({ contextSize: 512, batchSize: 512, threads: 1, sequences: 1, flashAttention: false, _embeddings: true });
    const texts = ['the cat sat on the mat', 'a cat sat on a mat', PLANTED, QUESTION];
    const ref = [];
    for (const text of texts) {
      const ids = [model.tokens.bos, ...model.tokenize(text, false), model.tokens.sep];
      const seq = ctx.getSequence();
      for await (const _ of seq.evaluate(ids, { _noSampling: true })) break; // eslint-disable-line no-unused-vars
      ref.push({ ids, vector: Array.from(ctx._ctx.getEmbedding(ids.length)) });
      await seq.dispose();
    }
    await ctx.dispose();
    const ours = await lexical.embed(texts);
    const unit = (v) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
    for (const [i, r] of ref.entries()) {
      assert.deepEqual(await lexical.tokenize(texts[i]), r.ids, texts[i]);
      const a = unit(r.vector), b = Array.from(ours[i]);
      const cos = a.reduce((t, x, j) => t + x * b[j], 0);
      assert.ok(cos > 0.9999, `${texts[i]}: cosine ${cos} with llama.cpp's`);
    }
  } finally {
    await model.dispose();
  }
});

test('createIndex/search: the planted fact is retrieved first for a question that shares its words', async () => {
  const index = await createIndex(lexical, { maxTokens: 48, overlap: 12 });
  const progress = [];
  const added = await index.add(documents, { onProgress: (p) => progress.push(p) });
  assert.equal(index.size, added.length);
  assert.ok(added.length >= 10, `${added.length} chunks`);
  for (const c of added) assert.ok(c.tokens <= 48, `a chunk of ${c.tokens} tokens`);
  // the progress: from 0 to all chunks, in batches, with a rate
  assert.equal(progress[0].chunks, 0);
  assert.equal(progress.at(-1).chunks, added.length);
  assert.equal(progress.at(-1).total, added.length);
  assert.ok(progress.at(-1).chunksPerSecond > 0);
  // each chunk's token count is what the engine counts for its text
  for (const c of added.slice(0, 3)) assert.equal(c.tokens, (await lexical.tokenize(c.text)).length);

  const hits = await index.search(QUESTION, 3);
  assert.equal(hits.length, 3);
  assert.ok(hits[0].text.includes(PLANTED), `first hit: ${hits[0].text}`);
  assert.equal(hits[0].source, 'harbour.md');
  assert.equal(hits[0].title, 'Harbour');
  assert.ok(hits[0].score > hits[1].score + 0.1, `scores ${hits.map((h) => h.score)}`);
  assert.equal(hits[0].chunk, added.find((c) => c.text === hits[0].text).chunk);
  // the score is the cosine similarity of the two embeddings
  const [q, d] = await lexical.embed([QUESTION, hits[0].text]);
  assert.ok(Math.abs(hits[0].score - q.reduce((s, v, i) => s + v * d[i], 0)) < 1e-5);
  // a question that shares no word with it is not near it
  const far = await index.search(UNRELATED, index.size);
  const planted = far.find((h) => h.text.includes(PLANTED));
  assert.ok(planted.score < 0.2, `unrelated question's score against the planted chunk: ${planted.score}`);

  // saved and loaded: the same chunks, scores and order; the model recorded with its SHA-256
  const json = JSON.parse(JSON.stringify(index.toJSON()));
  assert.equal(json.model.id, lexical.info.name);
  assert.equal(json.model.sha256, crypto.createHash('sha256').update(fs.readFileSync(lexicalFile)).digest('hex'));
  assert.deepEqual(json.sources.map((s) => s.source), documents.map((d) => d.source));
  const again = await loadIndex(json, { engine: lexical });
  assert.deepEqual(await again.search(QUESTION, 3), hits);
  // without an engine, search by vector
  const bare = await loadIndex(JSON.stringify(json));
  assert.deepEqual((await bare.search(q, 3)).map((h) => h.chunk), hits.map((h) => h.chunk));
  await assert.rejects(bare.search(QUESTION, 3), /without an embedding engine/);
  await assert.rejects(loadIndex({ ...json, model: { ...json.model, id: 'another model' } }, { engine: lexical }), (e) => e.code === 'E_MODEL_MISMATCH');
  await assert.rejects(loadIndex({ ...json, format: 'x' }), (e) => e.code === 'E_FORMAT');

  // remove: a source's chunks go, the rest still found
  const n = index.remove('harbour.md');
  assert.ok(n > 0);
  assert.ok(!(await index.search(QUESTION, index.size)).some((h) => h.source === 'harbour.md'));
});

test('search with a reranker: the candidates in the reranker\'s order, its scores', async () => {
  synth(rerankerFile, ['--pooling', 'rank']);
  const reranker = await Wick.load(rerankerFile, { threads: 1 });
  try {
    const index = await createIndex(lexical, { maxTokens: 48, overlap: 12 });
    await index.add(documents);
    const candidates = await index.search(QUESTION, 8);
    const ranked = await reranker.rerank(QUESTION, candidates.map((h) => h.text));
    const hits = await index.search(QUESTION, 3, { rerank: reranker, candidates: 8 });
    assert.deepEqual(hits.map((h) => h.text), ranked.slice(0, 3).map((r) => candidates[r.index].text));
    assert.deepEqual(hits.map((h) => h.score), ranked.slice(0, 3).map((r) => r.score));
    assert.deepEqual(hits.map((h) => h.similarity), ranked.slice(0, 3).map((r) => candidates[r.index].score));
  } finally {
    await reranker.unload();
  }
});

test('cosineScores: the dot products of 10,000 vectors of 384 (every one, in order)', () => {
  const n = 10000, dim = 384;
  const v = new Float32Array(n * dim).map((_, i) => Math.sin(i * 0.37));
  const q = new Float32Array(dim).map((_, i) => Math.cos(i));
  const s = cosineScores(v, n, dim, q);
  for (const i of [0, 1, 4999, 9999]) {
    let d = 0;
    for (let j = 0; j < dim; j++) d += v[i * dim + j] * q[j];
    assert.ok(Math.abs(s[i] - d) < 1e-3 * Math.max(1, Math.abs(d)), `${i}: ${s[i]} vs ${d}`);
  }
});

test('wick index FOLDER: five pages into one file; search returns the right page', async () => {
  const site = path.join(tmp, 'site');
  fs.mkdirSync(path.join(site, 'guide'), { recursive: true });
  const pages = {
    'index.md': '# Welcome\n\nThis site describes the village museum and its collections.\n\nOpening hours are posted at the entrance.',
    'guide/boats.md': '---\ntitle: Boats\n---\nWooden rowing boats hang from the ceiling of the west hall.\n\nEach was built by local carpenters.',
    'guide/clocks.html': '<html><head><title>Clocks</title></head><body><h1>Clock room</h1><p>The astronomical <em>clock</em> shows moon phases and tides.</p><script>ignored()</script></body></html>',
    'tickets.html': '<html><body><h1>Tickets</h1><p>Children enter free; adults pay five coins.</p></body></html>',
    'notes.txt': 'The garden behind the museum grows herbs for the kitchen.',
  };
  for (const [rel, text] of Object.entries(pages)) fs.writeFileSync(path.join(site, rel), text);
  fs.writeFileSync(path.join(site, 'logo.png'), 'not a page');
  const out = path.join(tmp, 'site-index.json');
  const r = runWick('wasm', ['index', site, '-m', lexicalFile, '-o', out, '--max-tokens', '64']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /index: \d+\/\d+ chunks, [\d.]+ chunks\/s/);
  assert.match(r.stderr, /5 pages/);
  const json = JSON.parse(fs.readFileSync(out, 'utf8'));
  assert.deepEqual(json.sources.map((s) => s.source).sort(), Object.keys(pages).sort());
  assert.deepEqual(Object.fromEntries(json.sources.map((s) => [s.source, s.title])),
    { 'index.md': 'Welcome', 'guide/boats.md': 'Boats', 'guide/clocks.html': 'Clocks', 'tickets.html': 'Tickets', 'notes.txt': 'notes' });
  assert.equal(json.model.sha256, crypto.createHash('sha256').update(fs.readFileSync(lexicalFile)).digest('hex'));
  assert.equal(json.model.id, lexical.info.name);
  for (const c of json.chunks) assert.ok(!/[<>]/.test(c.text) && !c.text.includes('ignored'), c.text);
  const index = await loadIndex(json, { engine: lexical });
  assert.equal((await index.search('Which room shows moon phases and tides?', 1))[0].source, 'guide/clocks.html');
  assert.equal((await index.search('Do children enter free?', 1))[0].source, 'tickets.html');
  assert.equal((await index.search('Who built the wooden rowing boats?', 1))[0].source, 'guide/boats.md');
  // errors say what is wrong
  const bad = runWick('wasm', ['index', path.join(tmp, 'nowhere'), '-m', lexicalFile, '-o', out]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /is not a folder/);
});

test('chat.completions.create({documents}): the chunks in the rendered prompt, where the template wants them', async () => {
  chat = await Wick.load(path.join(models, 'families', 'mini-qwen3-q8_0.gguf'), { threads: 1 });
  const index = await createIndex(lexical, { maxTokens: 48, overlap: 12 });
  await index.add(documents);
  const hits = await index.search(QUESTION, 2);
  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: QUESTION }];
  const base = { messages, documents: hits, max_tokens: 2, temperature: 0 };

  // Granite 3.3: its documents turns, one per document with its doc_id
  const g33 = await chat.chat.completions.create({ ...base, chat_template: templates.granite33 });
  assert.equal(g33.wick.documentsIn, 'template');
  assert.ok(g33.wick.prompt.includes(`<|start_of_role|>document {"document_id": "1"}<|end_of_role|>\n${hits[0].text}<|end_of_text|>`), g33.wick.prompt);
  assert.ok(g33.wick.prompt.includes(PLANTED));
  assert.ok(!g33.wick.prompt.includes(DOCUMENTS_HEADER));
  assert.deepEqual(g33.wick.sources.map((s) => [s.index, s.source, s.text, s.score]), hits.map((h, i) => [i, h.source, h.text, h.score]));
  assert.equal(g33.wick.promptTokens, (await chat.tokenize(g33.wick.prompt, { special: true })).length);
  assert.equal(g33.usage.prompt_tokens, g33.wick.promptTokens);
  // Granite 4.0: each document as JSON inside <documents>
  const g40 = await chat.chat.completions.create({ ...base, chat_template: templates.granite40 });
  assert.equal(g40.wick.documentsIn, 'template');
  assert.ok(g40.wick.prompt.includes('<documents>') && g40.wick.prompt.includes(JSON.stringify(PLANTED).slice(1, -1)), g40.wick.prompt);
  // Command R7B: after the user's turn, as the result of its direct-injected-document tool, each
  // document as JSON (tojson) under its index (rendered only: its preamble alone outgrows this
  // model's 4096-token context)
  const cr = await chat.applyChatTemplate(messages, { template: templates.commandR7b, documents: hits });
  const injected = cr.indexOf('"tool_name": "direct-injected-document"');
  assert.ok(injected > cr.indexOf(`<|USER_TOKEN|>${QUESTION}<|END_OF_TURN_TOKEN|>`) && cr.indexOf('<|USER_TOKEN|>') > 0, cr);
  assert.ok(cr.indexOf(PLANTED, injected) > injected && cr.includes('<|START_TOOL_RESULT|>'), cr);
  assert.ok(!cr.includes(DOCUMENTS_HEADER));

  // Qwen3: no documents in its template: the context block at the end of the system message
  const q3 = await chat.chat.completions.create({ ...base, chat_template: templates.qwen3 });
  assert.equal(q3.wick.documentsIn, 'system');
  const block = `You are terse.\n\n${DOCUMENTS_HEADER}\n\n[1] ${hits[0].title} (${hits[0].source})\n${hits[0].text}\n\n[2] ${hits[1].title} (${hits[1].source})\n${hits[1].text}`;
  assert.ok(q3.wick.prompt.startsWith(`<|im_start|>system\n${block}<|im_end|>\n<|im_start|>user\n${QUESTION}<|im_end|>`), q3.wick.prompt);
  // without a system message, one is added; strings are documents too
  const plain = await chat.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], documents: ['Fact one.', 'Fact two.'], max_tokens: 1, chat_template: templates.qwen3 });
  assert.ok(plain.wick.prompt.startsWith(`<|im_start|>system\n${DOCUMENTS_HEADER}\n\n[1]\nFact one.\n\n[2]\nFact two.<|im_end|>`), plain.wick.prompt);
  // no documents: the prompt as before, no sources
  const none = await chat.chat.completions.create({ messages, max_tokens: 1, chat_template: templates.qwen3 });
  assert.equal(none.wick.documentsIn, null);
  assert.deepEqual(none.wick.sources, []);
  assert.equal(none.wick.prompt, await chat.applyChatTemplate(messages, { template: templates.qwen3 }));
  assert.equal(await chat.applyChatTemplate(messages, { template: templates.qwen3, documents: hits }), q3.wick.prompt);

  // streaming: the last chunk carries the prompt and the sources
  let last;
  for await (const c of await chat.chat.completions.create({ ...base, chat_template: templates.granite33, stream: true })) last = c;
  assert.equal(last.wick.prompt, g33.wick.prompt);
  assert.deepEqual(last.wick.sources, g33.wick.sources);
  await assert.rejects(chat.chat.completions.create({ ...base, documents: [{ title: 'no text' }] }), /documents\[0\] must be a string or \{text/);
  await assert.rejects(chat.chat.completions.create({ ...base, documents: 'one' }), /documents must be an array/);
});

// Runs in the page and under Node: an index of the documents, the hits of the question, and the
// prompt a chat model gets with them (Granite 3.3's template).
async function retrieveAndRender({ Wick, createIndex, lexicalUrl, chatUrl, documents, question, template }) {
  const encoder = await Wick.load(lexicalUrl, { threads: 1 });
  const chatEngine = await Wick.load(chatUrl, { threads: 1 });
  try {
    const index = await createIndex(encoder, { maxTokens: 48, overlap: 12, model: { sha256: 'given' } });
    await index.add(documents);
    const hits = await index.search(question, 3);
    const reply = await chatEngine.chat.completions.create({ messages: [{ role: 'user', content: question }], documents: hits, max_tokens: 1, temperature: 0, chat_template: template });
    return { hits, prompt: reply.wick.prompt, chunks: index.size };
  } finally {
    await encoder.unload();
    await chatEngine.unload();
  }
}

test('in Chromium: the same retrieved chunks, scores and rendered prompt as under Node', { timeout: 180000 }, async () => {
  const site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-retrieval-site-'));
  for (const d of ['wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.mkdirSync(path.join(site, 'models'));
  fs.symlinkSync(lexicalFile, path.join(site, 'models', 'lexical.gguf'));
  fs.symlinkSync(path.join(models, 'families', 'mini-qwen3-q8_0.gguf'), path.join(site, 'models', 'chat.gguf'));
  fs.writeFileSync(path.join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>wick retrieval test</title>
<script type="module">import { Wick } from '/wasm_glue/wick.mjs'; import { createIndex } from '/wasm_glue/retrieval.mjs';
window.Wick = Wick; window.createIndex = createIndex; window.ready = true;</script>`);
  const server = createServer(site);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchChromium('retrieval');
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/index.html`);
    await page.waitForFunction(() => window.ready === true);
    const args = { documents, question: QUESTION, template: templates.granite33 };
    const there = await page.evaluate(async ({ src, ...a }) => {
      const run = new Function(`return (${src})`)();
      return run({ ...a, Wick: window.Wick, createIndex: window.createIndex, lexicalUrl: '/models/lexical.gguf', chatUrl: '/models/chat.gguf' });
    }, { src: retrieveAndRender.toString(), ...args });
    const here = await retrieveAndRender({ ...args, Wick, createIndex, lexicalUrl: lexicalFile, chatUrl: path.join(models, 'families', 'mini-qwen3-q8_0.gguf') });
    assert.deepEqual(errors, []);
    assert.equal(there.chunks, here.chunks);
    assert.deepEqual(there.hits.map((h) => [h.chunk, h.source, h.text]), here.hits.map((h) => [h.chunk, h.source, h.text]));
    assert.ok(here.hits[0].text.includes(PLANTED));
    for (const [i, h] of here.hits.entries()) assert.ok(Math.abs(h.score - there.hits[i].score) < 1e-4, `score ${i}: ${h.score} here, ${there.hits[i].score} there`);
    assert.equal(there.prompt, here.prompt);
  } finally {
    await browser.close();
    server.closeAllConnections?.();
    server.close();
    fs.rmSync(site, { recursive: true, force: true });
  }
});

test('Wick.connect: documents go to the server as the context block in the system message', async () => {
  const bodies = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d) => { text += d; });
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      if (req.url === '/v1/models') { res.end(JSON.stringify({ data: [{ id: 'fake-model' }] })); return; }
      bodies.push(JSON.parse(text));
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'fake-model',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const remote = await Wick.connect(`http://127.0.0.1:${server.address().port}/v1`);
    const docs = [{ text: PLANTED, title: 'Harbour', source: 'harbour.md' }, 'Fact two.'];
    await remote.chat.completions.create({ messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: QUESTION }], documents: docs });
    await remote.chat.completions.create({ messages: [{ role: 'user', content: QUESTION }], documents: docs });
    assert.equal(bodies.length, 2);
    const block = `${DOCUMENTS_HEADER}\n\n[1] Harbour (harbour.md)\n${PLANTED}\n\n[2]\nFact two.`;
    assert.deepEqual(bodies[0].messages, [{ role: 'system', content: `You are terse.\n\n${block}` }, { role: 'user', content: QUESTION }]);
    assert.deepEqual(bodies[1].messages, [{ role: 'system', content: block }, { role: 'user', content: QUESTION }]);
    assert.ok(!('documents' in bodies[0]) && !('documents' in bodies[1]));
    await assert.rejects(remote.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], documents: [{}] }), /documents\[0\] must be/);
    await remote.unload();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
