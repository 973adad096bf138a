// tests/pretokenizer.test.mjs — byte-level BPE pre-tokenizers that llama.cpp's bundle has no test
// vectors for (GPT-4o's o200k split, tokenizer.ggml.pre "gpt-4o", which Phi-4-mini uses), checked
// against llama.cpp's own tokenizer at test time (node-llama-cpp's libllama, vocab only).
//
// The vocabulary is written for the test: the 256 byte tokens, and every run of up to MAX_TOKEN
// bytes of the test texts as a token, with a merge for each way of splitting it in two (shorter
// results first). A piece of the pre-tokenizer of up to that length then merges into one token
// whatever the merge order, and no token can cross a piece's edge: the token ids show where the
// pieces begin and end, so two pre-tokenizers that split differently give different ids.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runWick, shared } from './helpers.mjs';
import { readGguf, writeGguf, setKv, dropKv, T } from './gguf.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';

const MAX_TOKEN = 8;

// llama.cpp's tokenizer test texts (the gpt-2 vocabulary's .inp) and texts for the o200k pattern's
// cases: cased words, runs of capitals, non-ASCII letters (both cases at once in llama.cpp's
// collapsed text), marks, contractions in either case, digits of other scripts in threes, slashes
// after punctuation, whitespace runs with and without newlines, non-ASCII spaces
const texts = [
  ...fs.readFileSync(path.join(shared, 'vocab', 'ggml-vocab-gpt-2.gguf.inp'), 'utf8').split('\n__ggml_vocab_test__\n').filter((t) => t.length),
  'HelloWorld CamelCase iPhone HTTPServer XMLHttpRequest ABCdef aBC',
  'ÉCOLE École straße STRASSE ПРИВЕТмир Привет ΑΘΗΝΑ αθήνα',
  "don't DON'T we'Re I'LL you've SHE'D it's 'tis o'clock ’twas",
  'naïve cafe\u0301 e\u0301te\u0301 \u0301alone',
  '1234567 ٣٤٥٦٧ १२३४ 12.345,678 x1y22z333',
  'a/b//c\n http://x.y/z/ ?!/ ...// ,\r\n',
  'a   b\n\n  \t\nx  end   \t',
  'no\u00a0break\u00a0\u00a0space\u2003em\u3000ideo',
  '日本語テキスト 한국어 中文abc',
  '  ,,Hello!! (x) [y] {z} "q" <tag> #1 $2 %3 &4',
  '👍🏽ok 🚀🚀 a🙂b',
];

/** GPT-2's byte-level alphabet: byte b as the code point that stands for it in tokens. */
function byteAlphabet() {
  const keep = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) map[b] = String.fromCodePoint(keep(b) ? b : next++);
  return map;
}

function writeVocab(file, pre) {
  const alphabet = byteAlphabet();
  const encoded = texts.map((t) => [...Buffer.from(t, 'utf8')].map((b) => alphabet[b]));
  const tokens = [...alphabet];
  const known = new Set(tokens);
  const merges = new Map();  // "left right" → length of the result
  for (const chars of encoded)
    for (let i = 0; i < chars.length; i++)
      for (let n = 2; n <= MAX_TOKEN && i + n <= chars.length; n++) {
        const run = chars.slice(i, i + n);
        const token = run.join('');
        if (!known.has(token)) { known.add(token); tokens.push(token); }
        for (let k = 1; k < n; k++) merges.set(`${run.slice(0, k).join('')} ${run.slice(k).join('')}`, n);
      }
  const mergeList = [...merges].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([m]) => m);
  tokens.push('<|endoftext|>');
  // the gpt-2 vocabulary file's metadata, with this vocabulary and pre-tokenizer in it
  const g = readGguf(path.join(shared, 'vocab', 'ggml-vocab-gpt-2.gguf'));
  setKv(g, 'tokenizer.ggml.pre', T.STRING, pre);
  setKv(g, 'tokenizer.ggml.tokens', T.ARRAY, { arrayOf: T.STRING, items: tokens });
  setKv(g, 'tokenizer.ggml.merges', T.ARRAY, { arrayOf: T.STRING, items: mergeList });
  const types = tokens.map((_, i) => (i === tokens.length - 1 ? 3 : 1));  // the last is a control token
  setKv(g, 'tokenizer.ggml.token_type', T.ARRAY, { arrayOf: T.I32, items: types });
  setKv(g, 'tokenizer.ggml.bos_token_id', T.U32, tokens.length - 1);
  setKv(g, 'tokenizer.ggml.eos_token_id', T.U32, tokens.length - 1);
  dropKv(g, 'tokenizer.ggml.add_bos_token');
  fs.writeFileSync(file, writeGguf(g));
  return { nTokens: tokens.length, nMerges: mergeList.length };
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-pretok-'));
const models = [];
after(async () => {
  for (const m of models) await m.dispose();
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

for (const pre of ['gpt-4o', 'llama4']) {
  test(`pre-tokenizer ${pre}: both builds give llama.cpp's token ids on ${texts.length} texts`, { timeout: 300000 }, async (t) => {
    const file = path.join(tmp, `vocab-${pre}.gguf`);
    const { nTokens, nMerges } = writeVocab(file, pre);
    t.diagnostic(`${nTokens} tokens, ${nMerges} merges`);
    const llama = await nativeLlama();
    const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
    models.push(model);
    let pieces = 0;
    for (const text of texts) {
      const ref = [...model.tokenize(text, false)];
      assert.ok(ref.length > 0);
      pieces += ref.length;
      for (const build of ['native', 'wasm']) {
        const r = runWick(build, ['tokenize', '-m', file, '-p', text, '--no-bos']);
        assert.equal(r.code, 0, `${build}: ${r.stderr}`);
        assert.deepEqual(JSON.parse(r.stdout), ref, `${build}, ${JSON.stringify(text)}`);
      }
    }
    t.diagnostic(`${pieces} tokens in all`);
  });
}

test('the test vocabulary tells pre-tokenizers apart: llama.cpp splits the same texts otherwise under llama3\'s pattern', async () => {
  const llama = await nativeLlama();
  const ids = {};
  for (const pre of ['gpt-4o', 'llama-bpe']) {
    const file = path.join(tmp, `vocab-diff-${pre}.gguf`);
    writeVocab(file, pre);
    const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
    models.push(model);
    ids[pre] = texts.map((text) => [...model.tokenize(text, false)]);
  }
  const differing = texts.filter((_, i) => JSON.stringify(ids['gpt-4o'][i]) !== JSON.stringify(ids['llama-bpe'][i]));
  assert.ok(differing.length >= 4, `only ${differing.length} texts split differently`);
});
