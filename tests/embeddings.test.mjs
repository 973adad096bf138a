// tests/embeddings.test.mjs — the bert encoder (src/encoder.c) and the embeddings API against
// llama.cpp itself (node-llama-cpp's prebuilt libllama in its embedding mode, flash attention off):
//  - `wick synth --arch bert` files at f32, f16 and q8_0 (bge's WordPiece vocabulary from the
//    llama.cpp source bundle): wick's pooled embeddings (mean, cls, last) equal llama.cpp's within
//    cosine 0.9999 (f32/f16) and 0.999 (q8_0), and with pooling none the last token's hidden state
//    (what llama.cpp's embedding context returns then) within the shared logit tolerances; native
//    and wasm builds, 1 and 2 threads, [CLS] … [SEP] as llama.cpp wraps the text;
//  - knock-outs: no token types move llama.cpp's own output far beyond those tolerances; its [CLS]
//    rows differ between texts (bidirectional attention: a causal one would make them all one, as
//    wick's causal switch does), so the comparisons tell both steps apart;
//  - batching: 64 texts of mixed lengths in one call equal each embedded alone to 1e-6;
//  - the JS API: embed() options (pooling, normalize, dimensions, truncate), embeddings.create's
//    OpenAI shape and base64, and the refusals (embed on a generative model, generate on an
//    encoder, an over-long input without truncate).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { runWick, relRms, toleranceFor, shared } from './helpers.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';
import { Wick, WickError } from '../wasm_glue/wick.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-embed-'));
const vocab = path.join(tmp, 'ggml-vocab-bert-bge.gguf');
const texts = [
  'Hello world, this is a test.',
  'The quick brown fox jumps over the lazy dog, and then it sleeps. Later that evening the old farmer walked out to the red barn.',
  'Äpfel und Birnen: café, naïve résumé!',
  'search: 3 results',
];
const cosine = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};

const files = {};
function synth(type, pooling = 'mean') {
  const key = `${type}-${pooling}`;
  if (!files[key]) {
    const file = path.join(tmp, `bert-${key}.gguf`);
    const r = runWick('native', ['synth', '--arch', 'bert', '--shape', 'mini', '--type', type, '--pooling', pooling, '--vocab', vocab, '-o', file]);
    assert.equal(r.code, 0, r.stderr);
    files[key] = file;
  }
  return files[key];
}

before(() => {
  const [bytes] = readLlamaBundle(['models/ggml-vocab-bert-bge.gguf']);
  fs.writeFileSync(vocab, bytes);
});
after(async () => {
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** llama.cpp's embedding of each text of a file ([CLS] text [SEP], as its embedding context adds them), and the ids. */
const refs = new Map();
function llamaEmbeddings(file) {
  if (!refs.has(file)) {
    refs.set(file, (async () => {
      const llama = await nativeLlama();
      const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      try {
        const ctx = await model.createContext({ contextSize: 512, batchSize: 512, threads: 1, sequences: 1, flashAttention: false, _embeddings: true });
        const out = [];
        for (const text of texts) {
          const ids = [model.tokens.bos, ...model.tokenize(text, false), model.tokens.sep];
          const seq = ctx.getSequence();
          for await (const _ of seq.evaluate(ids, { _noSampling: true })) break; // eslint-disable-line no-unused-vars
          out.push({ ids, vector: Array.from(ctx._ctx.getEmbedding(ids.length)) });
          await seq.dispose();
        }
        await ctx.dispose();
        return out;
      } finally {
        await model.dispose();
      }
    })());
  }
  return refs.get(file);
}

/** wick embed over all texts in one call: [{tokens, embedding}] */
function wickEmbed(build, file, args = []) {
  const list = path.join(tmp, 'texts.bin');
  fs.writeFileSync(list, texts.join('\0'));
  const r = runWick(build, ['embed', '-m', file, '--texts', list, ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

for (const type of ['f32', 'f16', 'q8_0']) {
  for (const build of ['native', 'wasm']) {
    for (const threads of [1, 2]) {
      test(`${build}, ${threads} thread${threads > 1 ? 's' : ''}: ${type} bert, mean pooling, equals llama.cpp's embeddings`, async () => {
        const file = synth(type);
        const ref = await llamaEmbeddings(file);
        const ours = wickEmbed(build, file, ['--threads', String(threads)]);
        assert.equal(ours.pooling, 'mean');
        const min = type === 'q8_0' ? 0.999 : 0.9999;
        ours.texts.forEach((t, i) => {
          assert.equal(t.tokens, ref[i].ids.length, `text ${i}: ${t.tokens} tokens, llama.cpp ${ref[i].ids.length}`);
          const c = cosine(t.embedding, ref[i].vector);
          assert.ok(c >= min, `text ${i}: cosine ${c} < ${min}`);
        });
      });
    }
  }
}

test('[CLS] … [SEP]: wick tokenize wraps the text as llama.cpp does', async () => {
  const file = synth('f16');
  const ref = await llamaEmbeddings(file);
  for (const [i, text] of texts.entries()) {
    const r = runWick('native', ['tokenize', '-m', file, '-p', text]);
    assert.equal(r.code, 0, r.stderr);
    const ids = r.stdout.match(/-?\d+/g).map(Number);
    assert.deepEqual(ids, ref[i].ids, `text ${i}`);
  }
});

for (const pooling of ['cls', 'last', 'none']) {
  for (const build of ['native', 'wasm']) {
    test(`${build}: f16 bert, pooling ${pooling}, equals llama.cpp`, async () => {
      const file = synth('f16', pooling);
      const ref = await llamaEmbeddings(file);
      const ours = wickEmbed(build, file);
      assert.equal(ours.pooling, pooling);
      ours.texts.forEach((t, i) => {
        if (pooling === 'none') {
          // a row per token; llama.cpp's embedding context gives the last one
          assert.equal(t.embedding.length, t.tokens);
          const last = t.embedding.at(-1);
          const e = relRms(last, ref[i].vector);
          assert.ok(e <= toleranceFor(file), `text ${i}: last hidden state off by ${e} of its spread (tolerance ${toleranceFor(file)})`);
        } else {
          const c = cosine(t.embedding, ref[i].vector);
          assert.ok(c >= 0.9999, `text ${i}: cosine ${c}`);
        }
      });
    });
  }
}

test('knock-outs: no token types, or a causal mask, move the embeddings far', async () => {
  const file = synth('f16');
  const ref = await llamaEmbeddings(file);
  const g = readGguf(file);
  // token types: llama.cpp's own embeddings of a file without token_types.weight move far, and wick's with them
  const noTypes = path.join(tmp, 'bert-no-types.gguf');
  fs.writeFileSync(noTypes, writeGguf({ ...g, tensors: g.tensors.filter((t) => t.name !== 'token_types.weight') }));
  const moved = await llamaEmbeddings(noTypes);
  const worst = Math.min(...moved.map((m, i) => cosine(m.vector, ref[i].vector)));
  assert.ok(1 - worst > 0.01, `no token types: llama.cpp's embeddings moved only to cosine ${worst}`);
  wickEmbed('native', noTypes).texts.forEach((t, i) => assert.ok(cosine(t.embedding, moved[i].vector) >= 0.9999, `no token types: text ${i}`));
  // bidirectional attention: the [CLS] row sees the text after it. Under a causal mask it would see
  // only itself, the same row for every text; llama.cpp's cls-pooled embeddings of different texts
  // differ far (and wick's equal them: the cls test above), while wick's own causal switch
  // (bert.attention.causal true) makes them all one
  const cls = await llamaEmbeddings(synth('f16', 'cls'));
  assert.ok(cosine(cls[0].vector, cls[1].vector) < 0.99, `llama.cpp's [CLS] rows of two texts: cosine ${cosine(cls[0].vector, cls[1].vector)}`);
  const causal = path.join(tmp, 'bert-causal-cls.gguf');
  fs.writeFileSync(causal, writeGguf(setKv(readGguf(synth('f16', 'cls')), 'bert.attention.causal', T.BOOL, true)));
  const c = wickEmbed('native', causal).texts;
  assert.ok(cosine(c[0].embedding, c[1].embedding) > 0.999999, 'a causal [CLS] row is the same for every text');
});

// ---- the JS API (the glue under Node: the wasm build in a worker) ----

let engine;
const engineOf = async () => (engine ??= await Wick.load(synth('f16'), { threads: 1 }));
after(async () => { await engine?.unload(); });

/** 64 texts of mixed lengths, 3 to about 200 tokens */
const many = Array.from({ length: 64 }, (_, i) => `text ${i}: ` + 'lorem ipsum dolor sit amet '.repeat(1 + (i * 7) % 40).slice(0, 5 + (i * 37) % 900));

test('batching: 64 texts of mixed lengths in one call equal each embedded alone (1e-6)', async () => {
  const e = await engineOf();
  const together = await e.embed(many);
  assert.equal(together.length, 64);
  for (const [i, text] of many.entries()) {
    const [alone] = await e.embed(text);
    let worst = 0;
    for (let k = 0; k < alone.length; k++) worst = Math.max(worst, Math.abs(alone[k] - together[i][k]) / (Math.abs(alone[k]) + 1e-6));
    assert.ok(worst <= 1e-6, `text ${i}: relative difference ${worst}`);
  }
  // the same through the native CLI, in passes of few texts and of many
  const list = path.join(tmp, 'many.bin');
  fs.writeFileSync(list, many.join('\0'));
  const small = JSON.parse(runWick('native', ['embed', '-m', synth('f16'), '--texts', list, '--batch', '512', '--normalize']).stdout);
  const big = JSON.parse(runWick('native', ['embed', '-m', synth('f16'), '--texts', list, '--batch', '8192', '--normalize']).stdout);
  small.texts.forEach((t, i) => {
    assert.deepEqual(t.embedding, big.texts[i].embedding, `text ${i}: batch 512 vs 8192`);
    assert.ok(cosine(t.embedding, together[i]) > 0.9999999, `text ${i}: native vs wasm`);
  });
});

test('embed(): pooling, normalize, dimensions, truncate', async () => {
  const e = await engineOf();
  assert.equal(e.info.encoder, true);
  assert.equal(e.info.pooling, 'mean');
  const ref = await llamaEmbeddings(synth('f16'));
  const [v] = await e.embed(texts[0], { normalize: false });
  assert.ok(v instanceof Float32Array && v.length === e.info.embedding_length);
  assert.ok(cosine(v, ref[0].vector) >= 0.9999);
  const [n] = await e.embed(texts[0]);
  assert.ok(Math.abs(Math.hypot(...n) - 1) < 1e-5, 'normalized by default');
  const [d] = await e.embed(texts[0], { dimensions: 64 });
  assert.equal(d.length, 64);
  assert.ok(Math.abs(Math.hypot(...d) - 1) < 1e-5, 'renormalized after the cut');
  assert.ok(cosine(d, n.slice(0, 64)) > 0.999999);
  const [cls] = await e.embed(texts[0], { pooling: 'cls', normalize: false });
  assert.ok(cosine(cls, v) < 0.999, 'cls pooling differs from mean');
  const [rows] = await e.embed(texts[0], { pooling: 'none' });
  assert.equal(rows.length, ref[0].ids.length);
  // a text longer than the window (512): refused, or truncated to its first 511 tokens and [SEP]
  const long = 'word '.repeat(600);
  await assert.rejects(e.embed(long), (err) => err instanceof WickError && err.code === 'E_CONTEXT_FULL' && /truncate/.test(err.message));
  const [cut] = await e.embed(long, { truncate: true });
  const ids = await e.tokenize(long);
  const [byIds] = await e.embed([...ids.slice(0, 511), ids.at(-1)]);
  assert.ok(cosine(cut, byIds) > 0.9999999);
  await assert.rejects(e.embed(texts[0], { pooling: 'rank' }), { code: 'E_INVALID_ARG' });
});

test('embeddings.create(): the OpenAI shape, usage, base64', async () => {
  const e = await engineOf();
  const r = await e.embeddings.create({ input: texts, model: 'bge' });
  assert.equal(r.object, 'list');
  assert.equal(r.model, 'bge');
  assert.equal(r.data.length, texts.length);
  const ref = await llamaEmbeddings(synth('f16'));
  assert.equal(r.usage.prompt_tokens, ref.reduce((a, x) => a + x.ids.length, 0));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  r.data.forEach((d, i) => {
    assert.equal(d.object, 'embedding');
    assert.equal(d.index, i);
    assert.ok(cosine(d.embedding, ref[i].vector) >= 0.9999);
  });
  const b = await e.embeddings.create({ input: texts[1], dimensions: 32, encoding_format: 'base64' });
  const bytes = Buffer.from(b.data[0].embedding, 'base64');
  const floats = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const [want] = await e.embed(texts[1], { dimensions: 32 });
  assert.deepEqual(Array.from(floats), Array.from(want));
});

test('refusals: generate on an encoder, embed on a generative model', async () => {
  const e = await engineOf();
  assert.throws(() => e.generate('hello'), (err) => err instanceof WickError && err.code === 'E_UNSUPPORTED' && /embedding model/.test(err.message));
  const decoder = await Wick.load(path.join(shared, 'models', 'stories260K.gguf'), { threads: 1 });
  try {
    await assert.rejects(decoder.embed('hello'), (err) => err instanceof WickError && err.code === 'E_UNSUPPORTED' && /not an embedding model/.test(err.message));
    await assert.rejects(decoder.embeddings.create({ input: 'hello' }), { code: 'E_UNSUPPORTED' });
  } finally {
    await decoder.unload();
  }
  const r = runWick('native', ['generate', '-m', synth('f16'), '-p', 'hello', '-n', '2']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /embedding model/);
});
