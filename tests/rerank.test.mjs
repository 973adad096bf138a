// tests/rerank.test.mjs — rerankers (src/rerank.c) against llama.cpp itself (node-llama-cpp's
// prebuilt libllama with pooling rank, flash attention off), on files `wick synth` writes:
//  - `--arch bert --pooling rank` (bge-reranker's shape: bert with cls.weight/bias and
//    cls.output.weight/bias) at f32, f16 and q8_0: each pair's score — the classification head
//    over the [CLS] row of "[CLS] query [SEP] document", as llama.cpp's server pairs them —
//    equals llama.cpp's within 1e-3 relative; native and wasm builds, 1 and 2 threads;
//  - `--arch qwen3 --pooling rank` (Qwen3-Reranker's shape: cls.output with the "yes" and "no"
//    rows, classifier.output_labels, the rerank prompt in tokenizer.chat_template.rerank, on
//    Qwen2's vocabulary): P(yes), softmax over the two of the last token's hidden state, likewise;
//  - knock-outs: llama.cpp's own scores spread across the documents far beyond the tolerance, and
//    leaving out the [SEP] between query and document moves them far beyond it;
//  - batching: many pairs in one pass equal each scored alone;
//  - the JS API: engine.rerank(query, documents, {topN}) sorted, cut, equal to the CLI's scores,
//    and its refusals.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { runWick } from './helpers.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';
import { Wick, WickError } from '../wasm_glue/wick.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-rerank-'));
const vocabs = { bert: path.join(tmp, 'ggml-vocab-bert-bge.gguf'), qwen3: path.join(tmp, 'ggml-vocab-qwen2.gguf') };
const query = 'what is a fox?';
const documents = [
  'The quick brown fox jumps over the lazy dog.',
  'Paris is the capital of France.',
  'Foxes are small to medium-sized omnivorous mammals of the dog family.',
  'A fox is a small wild animal with a pointed muzzle and a bushy tail; foxes hunt at night.',
  'Banana bread: flour, sugar, butter and three ripe bananas, baked for an hour.',
  'Äpfel und Birnen: café, naïve résumé!',
];
const TOLERANCE = 1e-3; // relative

const files = {};
function synth(arch, type) {
  const key = `${arch}-${type}`;
  if (!files[key]) {
    const file = path.join(tmp, `${key}-rank.gguf`);
    const r = runWick('native', ['synth', '--arch', arch, '--shape', 'mini', '--type', type, '--pooling', 'rank', '--vocab', vocabs[arch], '-o', file]);
    assert.equal(r.code, 0, r.stderr);
    files[key] = file;
  }
  return files[key];
}

before(() => {
  const [bge, qwen2] = readLlamaBundle(['models/ggml-vocab-bert-bge.gguf', 'models/ggml-vocab-qwen2.gguf']);
  fs.writeFileSync(vocabs.bert, bge);
  fs.writeFileSync(vocabs.qwen3, qwen2);
});
after(async () => {
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/**
 * llama.cpp's score of each document (its rank-pooled output's first value, what its server
 * reports), the pair formed as tools/server's format_prompt_rerank forms it: the rerank template
 * with the texts put in and special tokens parsed, else BOS query SEP document (WordPiece adds
 * [CLS] and [SEP], no EOS). `sep: false` leaves the [SEP] out (a knock-out).
 */
const refs = new Map();
function llamaScores(file, { sep = true } = {}) {
  const key = `${file}:${sep}`;
  if (!refs.has(key)) {
    refs.set(key, (async () => {
      const llama = await nativeLlama();
      const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
      try {
        const ctx = await model.createContext({ contextSize: 512, batchSize: 512, threads: 1, sequences: 1, flashAttention: false, _embeddings: true, _ranking: true });
        const template = model.fileInfo.metadata?.tokenizer?.['chat_template.rerank'];
        const out = [];
        for (const doc of documents) {
          const ids = template
            ? model.tokenize(template.replaceAll('{query}', query).replaceAll('{document}', doc), true)
            : [model.tokens.bos, ...model.tokenize(query, false), ...(sep ? [model.tokens.sep] : []), ...model.tokenize(doc, false)];
          const seq = ctx.getSequence();
          for await (const _ of seq.evaluate(ids, { _noSampling: true })) break; // eslint-disable-line no-unused-vars
          out.push({ tokens: ids.length, score: ctx._ctx.getEmbedding(ids.length)[0] });
          await seq.dispose();
        }
        await ctx.dispose();
        return out;
      } finally {
        await model.dispose();
      }
    })());
  }
  return refs.get(key);
}

/** wick rerank over all documents in one call: {documents: [{tokens, score}], ranking} */
function wickRerank(build, file, args = [], docs = documents) {
  const r = runWick(build, ['rerank', '-m', file, '-q', query, ...args, ...docs]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

const relative = (a, b) => Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));

for (const [arch, types] of [['bert', ['f32', 'f16', 'q8_0']], ['qwen3', ['f32', 'f16']]]) {
  for (const type of types) {
    for (const build of ['native', 'wasm']) {
      for (const threads of [1, 2]) {
        test(`${build}, ${threads} thread${threads > 1 ? 's' : ''}: ${type} ${arch} reranker, scores equal llama.cpp's (1e-3 relative)`, { timeout: 300000 }, async () => {
          const file = synth(arch, type);
          const ref = await llamaScores(file);
          const ours = wickRerank(build, file, ['--threads', String(threads)]);
          ours.documents.forEach((d, i) => {
            assert.equal(d.tokens, ref[i].tokens, `document ${i}: ${d.tokens} tokens, llama.cpp ${ref[i].tokens}`);
            const e = relative(d.score, ref[i].score);
            assert.ok(e <= TOLERANCE, `document ${i}: score ${d.score}, llama.cpp ${ref[i].score} (relative ${e})`);
          });
          // the ranking is llama.cpp's, except where two of its scores lie within the tolerance
          assert.deepEqual([...ours.ranking].sort(), documents.map((_, i) => i));
          for (let k = 1; k < ours.ranking.length; k++) {
            const [p, q] = [ref[ours.ranking[k - 1]].score, ref[ours.ranking[k]].score];
            assert.ok(p >= q || relative(p, q) <= 2 * TOLERANCE, `documents ${ours.ranking[k - 1]} and ${ours.ranking[k]} ranked against llama.cpp's scores ${p} < ${q}`);
          }
        });
      }
    }
  }
}

test('knock-outs: llama.cpp\'s scores spread far beyond the tolerance, and the [SEP] between query and document matters to them', async () => {
  for (const arch of ['bert', 'qwen3']) {
    const ref = await llamaScores(synth(arch, 'f16'));
    const scores = ref.map((r) => r.score);
    const spread = (Math.max(...scores) - Math.min(...scores)) / Math.max(...scores.map(Math.abs));
    assert.ok(spread > 30 * TOLERANCE, `${arch}: llama.cpp's scores spread by ${spread} only`);
  }
  const file = synth('bert', 'f16');
  const [withSep, without] = [await llamaScores(file), await llamaScores(file, { sep: false })];
  const moved = Math.min(...withSep.map((r, i) => relative(r.score, without[i].score)));
  assert.ok(moved > 10 * TOLERANCE, `no [SEP]: llama.cpp's scores moved by ${moved} only`);
});

test('batching: many pairs in one pass equal each scored alone; the decoder leaves its cache empty', () => {
  const many = Array.from({ length: 24 }, (_, i) => `${documents[i % documents.length]} (${i})`);
  for (const arch of ['bert', 'qwen3']) {
    const file = synth(arch, 'f16');
    const together = wickRerank('native', file, ['--batch', '4096'], many).documents;
    const small = wickRerank('native', file, ['--batch', '512'], many).documents;
    const alone = many.slice(0, 4).map((d) => wickRerank('native', file, [], [d]).documents[0]);
    alone.forEach((a, i) => assert.equal(a.score, together[i].score, `${arch}: document ${i} alone`));
    small.forEach((s, i) => assert.equal(s.score, together[i].score, `${arch}: document ${i} in passes of 512`));
  }
});

// ---- the JS API (the glue under Node: the wasm build in a worker) ----

test('engine.rerank(): sorted, topN, the CLI\'s scores; info says reranker', { timeout: 120000 }, async () => {
  for (const arch of ['bert', 'qwen3']) {
    const file = synth(arch, 'f16');
    const cli = wickRerank('wasm', file).documents;
    const e = await Wick.load(file, { threads: 1 });
    try {
      assert.equal(e.info.reranker, true);
      assert.equal(e.info.pooling, 'rank');
      const all = await e.rerank(query, documents);
      assert.equal(all.length, documents.length);
      assert.deepEqual(all.map((r) => r.index).sort(), documents.map((_, i) => i));
      for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].score >= all[i].score, 'most relevant first');
      for (const r of all) assert.ok(relative(r.score, cli[r.index].score) < 1e-6, `${arch}: document ${r.index}`);
      const top = await e.rerank(query, documents, { topN: 2 });
      assert.deepEqual(top, all.slice(0, 2));
      await assert.rejects(e.rerank(query, []), { code: 'E_INVALID_ARG' });
      await assert.rejects(e.rerank(query, ['a', 3]), { code: 'E_INVALID_ARG' });
      await assert.rejects(e.rerank(query, documents, { topN: 0 }), { code: 'E_INVALID_ARG' });
      await assert.rejects(e.rerank(42, documents), { code: 'E_INVALID_ARG' });
      if (arch === 'bert') {
        // a reranker's embed() without a pooling: refused with the reason, not a vector of scores
        await assert.rejects(e.embed('hello'), (err) => err instanceof WickError && err.code === 'E_INVALID_ARG' && /reranker/.test(err.message));
        const [cls] = await e.embed('hello', { pooling: 'cls' });
        assert.equal(cls.length, e.info.embedding_length);
      } else {
        // Qwen3-Reranker is a qwen3 decoder: it still generates, and reranks again after
        for await (const c of e.generate('Hello', { maxTokens: 2, temperature: 0 })) if (c.done) assert.equal(c.finishReason, 'length');
        assert.deepEqual(await e.rerank(query, documents), all);
      }
    } finally {
      await e.unload();
    }
  }
  // a model without pooling rank refuses
  const bert = path.join(tmp, 'bert-mean.gguf');
  assert.equal(runWick('native', ['synth', '--arch', 'bert', '--shape', 'mini', '--type', 'f16', '--vocab', vocabs.bert, '-o', bert]).code, 0);
  const e = await Wick.load(bert, { threads: 1 });
  try {
    await assert.rejects(e.rerank(query, documents), (err) => err instanceof WickError && err.code === 'E_UNSUPPORTED' && /not a reranker/.test(err.message));
  } finally {
    await e.unload();
  }
  const r = runWick('native', ['rerank', '-m', bert, '-q', query, 'a document']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /not a reranker/);
});
