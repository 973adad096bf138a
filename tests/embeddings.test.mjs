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
function llamaEmbeddings(file, idLists) {
  if (!refs.has(file)) {
    refs.set(file, (async () => {
      const llama = await nativeLlama();
      const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      try {
        const ctx = await model.createContext({ contextSize: 512, batchSize: 512, threads: 1, sequences: 1, flashAttention: false, _embeddings: true });
        const out = [];
        for (const [i, text] of texts.entries()) {
          const ids = idLists ? idLists[i] : [model.tokens.bos, ...model.tokenize(text, false), model.tokens.sep];
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

// ---- nomic-bert, modern-bert, gemma-embedding and a decoder with pooling_type (qwen3) ----
// Each on wick's own token ids (wick tokenize: the tokenizers are tested elsewhere), so that the
// comparison is of the forward pass and the pooling alone.

const spm = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf');
const FAMILIES = { 'nomic-bert': vocab, 'modern-bert': vocab, 'gemma-embedding': spm, qwen3: spm };
function synthArch(arch, type, pooling) {
  const key = `${arch}-${type}-${pooling ?? 'own'}`;
  if (!files[key]) {
    const file = path.join(tmp, `${key}.gguf`);
    const args = ['synth', '--arch', arch, '--shape', 'mini', '--type', type, '--vocab', FAMILIES[arch], '-o', file];
    if (pooling) args.push('--pooling', pooling);
    const r = runWick('native', args);
    assert.equal(r.code, 0, r.stderr);
    files[key] = file;
  }
  return files[key];
}
const idsOf = (file) => texts.map((text) => {
  const r = runWick('native', ['tokenize', '-m', file, '-p', text]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.match(/-?\d+/g).map(Number);
});
/** llama.cpp's embeddings of a file (or of `edit`'s version of it) on wick's ids */
function llamaOn(file, edit) {
  let f = file;
  if (edit) {
    f = file.replace(/\.gguf$/, `-${edit.name}.gguf`);
    if (!fs.existsSync(f)) fs.writeFileSync(f, writeGguf(edit(readGguf(file))));
  }
  return llamaEmbeddings(f, idsOf(f)).then((ref) => ({ file: f, ref }));
}
const worstCosine = (a, b) => Math.min(...a.map((x, i) => cosine(x.vector ?? x.embedding, b[i].vector ?? b[i].embedding)));
const POOLED = { 'nomic-bert': undefined, 'modern-bert': undefined, 'gemma-embedding': undefined, qwen3: 'last' };

for (const arch of Object.keys(FAMILIES)) {
  for (const type of ['f32', 'f16', 'q8_0']) {
    for (const build of ['native', 'wasm']) {
      for (const threads of [1, 2]) {
        test(`${build}, ${threads} thread${threads > 1 ? 's' : ''}: ${type} ${arch}${arch === 'qwen3' ? ' --pooling last' : ''}, equals llama.cpp's embeddings`, async () => {
          const file = synthArch(arch, type, POOLED[arch]);
          const { ref } = await llamaOn(file);
          const ours = wickEmbed(build, file, ['--threads', String(threads)]);
          assert.equal(ours.pooling, arch === 'qwen3' ? 'last' : 'mean');
          const min = type === 'q8_0' ? 0.999 : 0.9999;
          ours.texts.forEach((t, i) => {
            assert.equal(t.tokens, ref[i].ids.length);
            const c = cosine(t.embedding, ref[i].vector);
            assert.ok(c >= min, `text ${i}: cosine ${c} < ${min}`);
          });
        });
      }
    }
  }
  for (const build of ['native', 'wasm']) {
    test(`${build}: f16 ${arch}, pooling none: the last token's hidden state equals llama.cpp's`, async () => {
      const file = synthArch(arch, 'f16', 'none');
      const { ref } = await llamaOn(file);
      const ours = wickEmbed(build, file);
      assert.equal(ours.pooling, 'none');
      ours.texts.forEach((t, i) => {
        assert.equal(t.embedding.length, t.tokens);
        const e = relRms(t.embedding.at(-1), ref[i].vector);
        assert.ok(e <= toleranceFor(file), `text ${i}: last hidden state off by ${e} of its spread (tolerance ${toleranceFor(file)})`);
      });
    });
  }
}

// a knock-out: llama.cpp's own embeddings of the edited file move far from the file's (1 − cosine
// above `far`: 0.01, a hundred times what the comparisons above allow; a change of rope angles
// or of one activation for a near one moves a mean less, and 1e-3 is still ten times that), and
// wick's follow them there
async function knockOut(arch, edit, { follows = true, pooling, far = 0.01 } = {}) {
  const file = synthArch(arch, 'f16', pooling);
  const { ref } = await llamaOn(file);
  const { file: f, ref: moved } = await llamaOn(file, edit);
  const worst = worstCosine(moved, ref);
  assert.ok(1 - worst > far, `${edit.name}: llama.cpp's embeddings moved only to cosine ${worst}`);
  if (follows) {
    const ours = wickEmbed('native', f).texts;
    const c = worstCosine(ours, moved);
    assert.ok(c >= 0.9999, `${edit.name}: wick's embeddings are at cosine ${c} of llama.cpp's`);
  }
}
const rename = (g, from, to) => ({ ...g, tensors: g.tensors.map((t) => ({ ...t, name: t.name.replace(from, to) })) });
const dropTensors = (g, re) => ({ ...g, tensors: g.tensors.filter((t) => !re.test(t.name)) });

test('knock-outs, nomic-bert: rotary positions (the order of the tokens counts), SwiGLU (gate and up swapped)', async () => {
  // no position table: without rotation, mean pooling over bidirectional attention would not see
  // the order of the tokens; llama.cpp's embedding of the reversed ids is far from the original's
  const file = synthArch('nomic-bert', 'f16');
  const ids = idsOf(file);
  const reversed = ids.map((x) => [x[0], ...x.slice(1, -1).reverse(), x.at(-1)]);
  const f = file.replace(/\.gguf$/, '-reversed.gguf');
  fs.copyFileSync(file, f);
  const [a, b] = [(await llamaOn(file)).ref, await llamaEmbeddings(f, reversed)];
  const w = worstCosine(a, b);
  assert.ok(1 - w > 1e-3, `reversed texts: cosine ${w}`);
  await knockOut('nomic-bert', function rope_base(g) { return setKv(g, 'nomic-bert.rope.freq_base', T.F32, 1e6); }, { far: 1e-3 });
  await knockOut('nomic-bert', function swap_gate_up(g) { return rename(rename(rename(g, /ffn_gate/, 'ffn_tmp'), /ffn_up/, 'ffn_gate'), /ffn_tmp/, 'ffn_up'); });
});

test('knock-outs, modern-bert: local/global alternation, the local layers\' rope base, GeGLU', async () => {
  // every layer global: no window (a pattern of 1 says the same, but llama.cpp then aborts on the
  // unused window mask's missing buffer, as with a pattern of 0, every layer local)
  await knockOut('modern-bert', function every_layer_global(g) { return setKv(g, 'modern-bert.attention.sliding_window', T.U32, 0); });
  await knockOut('modern-bert', function wider_window(g) { return setKv(g, 'modern-bert.attention.sliding_window', T.U32, 64); });
  await knockOut('modern-bert', function swa_base_10(g) { return setKv(g, 'modern-bert.rope.freq_base_swa', T.F32, 10); }, { far: 1e-3 });
  // SiLU in GELU's place (GELU and SiLU are near each other: the bar is 1e-3)
  await knockOut('modern-bert', function swiglu(g) { return setKv(g, 'modern-bert.hidden_activation', T.STRING, 'silu'); }, { far: 1e-3 });
});

test('knock-outs, gemma-embedding: the dense projections, the symmetric window', async () => {
  await knockOut('gemma-embedding', function no_dense(g) { return dropTensors(g, /^dense_[23]\./); });
  await knockOut('gemma-embedding', function window_4096(g) { return setKv(g, 'gemma-embedding.attention.sliding_window', T.U32, 4096); });
});

test('a decoder embeds only when its file names a pooling; dimensions cut and renormalize', async () => {
  const plain = synthArch('qwen3', 'f16');
  const r = runWick('native', ['embed', '-m', plain, '-p', 'hello']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /generative model, not an embedding model/);
  // the qwen3 --pooling last file generates too
  const g = runWick('native', ['generate', '-m', synthArch('qwen3', 'f16', 'last'), '-p', 'hello', '-n', '2']);
  assert.equal(g.code, 0, g.stderr);
  // Matryoshka: the first 64 of nomic-bert's dimensions, renormalized (the glue's embed)
  const e = await Wick.load(synthArch('nomic-bert', 'f16'), { threads: 1 });
  try {
    const [full] = await e.embed(texts[1]);
    const [cut] = await e.embed(texts[1], { dimensions: 64 });
    assert.equal(cut.length, 64);
    assert.ok(Math.abs(Math.hypot(...cut) - 1) < 1e-5);
    assert.ok(cosine(cut, full.slice(0, 64)) > 0.999999);
  } finally {
    await e.unload();
  }
  const d = await Wick.load(synthArch('qwen3', 'f16', 'last'), { threads: 1 });
  try {
    const { ref } = await llamaOn(synthArch('qwen3', 'f16', 'last'));
    const [v] = await d.embed(texts[0]);
    assert.ok(cosine(v, ref[0].vector) >= 0.9999);
  } finally {
    await d.unload();
  }
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
