// tests/fuzz/seeds.mjs — writes the fuzzers' seed corpora from the shared test files:
//   node tests/fuzz/seeds.mjs SHARED_DIR OUT_DIR      → OUT_DIR/fuzz_gguf, fuzz_llama2c, fuzz_tokenizer, fuzz_state
// The real files are large (1–7 MB, almost all tensor data), and a fuzzer spends its mutations
// uniformly over the bytes, so the seeds are mostly shrunken copies that keep every structure a
// parser walks: one layer, tiny dimensions (256 where a K-quant block needs it), a short vocabulary
// (with its control and user-defined tokens, and the BPE merges among the kept pieces), each tensor
// holding the first bytes of the real tensor's data. Nothing here is committed: make fuzz writes it
// into build/.
import fs from 'node:fs';
import path from 'node:path';
import { readGguf, writeGguf, setKv, dropKv, clone, T } from '../gguf.mjs';

const [shared, out] = process.argv.slice(2);
if (!shared || !out) throw new Error('usage: node tests/fuzz/seeds.mjs SHARED_DIR OUT_DIR');
const models = path.join(shared, 'models');
const vocabDir = path.join(shared, 'vocab');
const dirs = {};
for (const t of ['fuzz_gguf', 'fuzz_llama2c', 'fuzz_tokenizer', 'fuzz_state']) {
  dirs[t] = path.join(out, t);
  fs.mkdirSync(dirs[t], { recursive: true });
}
const save = (target, name, bytes) => fs.writeFileSync(path.join(dirs[target], name), bytes);

// ggml's block layout: [elements per block, bytes per block] of each tensor type used here
const BLOCK = { 0: [1, 4], 1: [1, 2], 2: [32, 18], 3: [32, 20], 6: [32, 22], 7: [32, 24], 8: [32, 34],
  10: [256, 84], 11: [256, 110], 12: [256, 144], 13: [256, 176], 14: [256, 210], 20: [32, 18], 30: [1, 2] };
const CONTROL = 3, USER_DEFINED = 4;

/** Keeps the first `n` tokens plus up to `extra` control/user-defined ones from the rest;
 *  renumbers the special-token ids and drops those not kept; filters the BPE merges. */
function shrinkVocab(g, n, extra = 16) {
  const kv = (k) => g.kv.find((e) => e.key === k);
  const tokens = kv('tokenizer.ggml.tokens');
  if (!tokens) return;
  const types = kv('tokenizer.ggml.token_type');
  const total = tokens.value.items.length;
  const keep = [];
  for (let i = 0; i < Math.min(n, total); i++) keep.push(i);
  if (types) for (let i = n; i < total && keep.length < n + extra; i++) {
    const ty = types.value.items[i];
    if (ty === CONTROL || ty === USER_DEFINED) keep.push(i);
  }
  const newId = new Map(keep.map((old, i) => [old, i]));
  for (const k of ['tokens', 'scores', 'token_type']) {
    const e = kv(`tokenizer.ggml.${k}`);
    if (e) e.value = { arrayOf: e.value.arrayOf, items: keep.map((i) => e.value.items[i]) };
  }
  for (const e of [...g.kv]) {
    if (/^tokenizer\.ggml\..*_token_id$/.test(e.key)) {
      const id = Number(e.value);
      if (newId.has(id)) e.value = newId.get(id);
      else if (id !== 0xFFFFFFFF) dropKv(g, e.key); // 0xFFFFFFFF ("none") stays as it is
    }
  }
  const merges = kv('tokenizer.ggml.merges');
  if (merges) {
    const pieces = new Set(tokens.value.items);
    merges.value = { arrayOf: T.STRING, items: merges.value.items.filter((m) => {
      const [a, b] = m.split(' ');
      return pieces.has(a) && pieces.has(b) && pieces.has(a + b);
    }) };
  }
  for (const e of g.kv) if (/\.vocab_size$/.test(e.key)) e.value = keep.length;
}

/** A one-layer copy of a model with dimensions from `cfg`; each tensor takes the first bytes of
 *  the real one's data (whole blocks, so quantized data stays well-formed). */
function shrinkModel(file, cfg) { return writeGguf(shrunkenModel(file, cfg)); }
function shrunkenModel(file, cfg) {
  const g = clone(readGguf(file));
  const arch = g.kv.find((e) => e.key === 'general.architecture').value;
  // a K-quant row is whole blocks of 256: the dimension its rows run along must be 256
  const isK = (t) => BLOCK[t.type][0] === 256;
  const dim = cfg.dim ?? (g.tensors.some((t) => isK(t) && !/ffn_down/.test(t.name)) ? 256 : 32);
  const hidden = cfg.hidden ?? (g.tensors.some((t) => isK(t) && /ffn_down/.test(t.name)) ? 256 : 32);
  const heads = cfg.heads ?? 4, kvHeads = cfg.kvHeads ?? 2;
  const kvDim = (dim / heads) * kvHeads;
  shrinkVocab(g, cfg.vocab ?? 32, 0);
  const nVocab = g.kv.find((e) => e.key === 'tokenizer.ggml.tokens').value.items.length;
  setKv(g, `${arch}.embedding_length`, T.U32, dim);
  setKv(g, `${arch}.feed_forward_length`, T.U32, hidden);
  setKv(g, `${arch}.attention.head_count`, T.U32, heads);
  setKv(g, `${arch}.attention.head_count_kv`, T.U32, kvHeads);
  setKv(g, `${arch}.block_count`, T.U32, cfg.layers ?? 1);
  if (g.kv.some((e) => e.key === `${arch}.rope.dimension_count`)) setKv(g, `${arch}.rope.dimension_count`, T.U32, dim / heads);
  const shape = (name) => {
    if (/^(token_embd|output)\.weight$/.test(name)) return [dim, nVocab];
    if (/norm\.weight$/.test(name) || /attn_q\.bias$/.test(name)) return [dim];
    if (/attn_[kv]\.bias$/.test(name)) return [kvDim];
    if (/attn_(q|output)\.weight$/.test(name)) return [dim, dim];
    if (/attn_[kv]\.weight$/.test(name)) return [dim, kvDim];
    if (/ffn_(gate|up)\.weight$/.test(name)) return [dim, hidden];
    if (/ffn_down\.weight$/.test(name)) return [hidden, dim];
    throw new Error(`no shape for ${name}`);
  };
  const layers = cfg.layers ?? 1;
  g.tensors = g.tensors
    .filter((t) => { const m = /^blk\.(\d+)\./.exec(t.name); return !m || Number(m[1]) < layers; })
    .map((t) => {
      const ne = shape(t.name).map(BigInt);
      const [per, bytes] = BLOCK[t.type];
      const size = (Number(ne[0]) / per) * bytes * (ne.length > 1 ? Number(ne[1]) : 1);
      if (size > t.data.length) throw new Error(`${file}: ${t.name} has ${t.data.length} bytes, needs ${size}`);
      return { ...t, ne, data: t.data.subarray(0, size) };
    });
  return g;
}

// ---- fuzz_gguf: a shrunken copy of every model file (each tensor type, both architectures) ----
const ggufSeeds = [];
for (const f of fs.readdirSync(path.join(models, 'mini')).filter((x) => x.endsWith('.gguf')).sort()) {
  ggufSeeds.push([`small-${f}`, shrinkModel(path.join(models, 'mini', f), {})]);
}
ggufSeeds.push(['small-stories260K.gguf', shrinkModel(path.join(models, 'stories260K.gguf'), { dim: 32, hidden: 48, layers: 2, vocab: 512 })]);
ggufSeeds.push(['small-stories260K-gqa1.gguf', shrinkModel(path.join(models, 'stories260K.gguf'), { dim: 16, heads: 2, kvHeads: 1, vocab: 32 })]);
// split models (gguf-split): the parts one after another; the target cuts at each "GGUF"
function splitModel(file, cfg, nParts) {
  const small = shrunkenModel(file, cfg);
  const per = Math.ceil(small.tensors.length / nParts);
  const parts = [];
  for (let i = 0; i < nParts; i++) {
    const split = [{ key: 'split.no', type: T.U16, value: i }, { key: 'split.count', type: T.U16, value: nParts },
      { key: 'split.tensors.count', type: T.I32, value: small.tensors.length }];
    const kv = i === 0 ? [...small.kv, ...split] : split;
    parts.push(writeGguf({ ...small, kv, tensors: small.tensors.slice(i * per, (i + 1) * per) }));
  }
  return Buffer.concat(parts);
}
ggufSeeds.push(['split2-mini-q8_0.gguf', splitModel(path.join(models, 'mini', 'mini-q8_0.gguf'), {}, 2)]);
ggufSeeds.push(['split3-mini-qwen2-f32.gguf', splitModel(path.join(models, 'mini', 'mini-qwen2-f32.gguf'), {}, 3)]);
for (const [name, bytes] of ggufSeeds) save('fuzz_gguf', name, bytes);

// ---- fuzz_tokenizer: text against each vocabulary (selector byte first), shrunken vocab files ----
const inputs = [];
for (const f of fs.readdirSync(vocabDir).filter((x) => x.endsWith('.inp'))) {
  for (const s of fs.readFileSync(path.join(vocabDir, f), 'utf8').split('\n__ggml_vocab_test__\n')) inputs.push(s);
}
const unique = [...new Set(inputs)].filter((s) => s.length > 0);
unique.push('<s>[INST] hi [/INST]</s><|im_start|>user\nhello<|im_end|><|endoftext|>', '\xff\xfe\x80 broken \xc3', 'a'.repeat(300));
unique.forEach((s, i) => {
  const text = Buffer.from(s, 'utf8');
  for (let v = 0; v < 6; v++) {
    // alternate parse_special and add_bos across the seeds; mode 0 (text)
    const sel = v | ((i + v) % 2) << 3 | ((i >> 1) % 2) << 4;
    if ((i + v) % 3 === 0) save('fuzz_tokenizer', `text-${v}-${i}`, Buffer.concat([Buffer.from([sel]), text]));
  }
});
// id lists (mode 2: pieces and whole detokenization; mode 3: streaming)
for (let v = 0; v < 6; v++) {
  for (const mode of [2, 3]) {
    const ids = Buffer.alloc(128);
    for (let i = 0; i < 64; i++) ids.writeUInt16LE((i * 2654435761 + v * 977) % 65536 & ~63 | (i % 60), 2 * i);
    save('fuzz_tokenizer', `ids-${v}-${mode}`, Buffer.concat([Buffer.from([v | mode << 5]), ids]));
  }
}
for (const f of fs.readdirSync(vocabDir).filter((x) => x.endsWith('.gguf')).sort()) {
  const g = clone(readGguf(path.join(vocabDir, f)));
  shrinkVocab(g, 300, 24);
  save('fuzz_tokenizer', `vocab-${f}`, writeGguf(g));
}
for (const n of ['small-stories260K-gqa1.gguf', 'small-mini-chat-q8_0.gguf'])
  save('fuzz_tokenizer', `model-${n}`, ggufSeeds.find(([name]) => name === n)[1]);

// ---- fuzz_llama2c: mode byte, then (0) u32 length + checkpoint + tokenizer, (1) checkpoint, (2) tokenizer ----
/** A llama2.c checkpoint (header of 7 i32, then the F32 weights in run.c's order) with small
 *  random weights; vocab < 0 means an unshared classifier follows. */
function checkpoint({ dim, hidden, layers, heads, kvHeads, vocab, seqLen }) {
  const headSize = dim / heads, kvDim = headSize * kvHeads, nv = Math.abs(vocab);
  const counts = [nv * dim, layers * dim, layers * dim * dim, layers * dim * kvDim, layers * dim * kvDim,
    layers * dim * dim, layers * dim, layers * hidden * dim, layers * dim * hidden, layers * hidden * dim, dim,
    seqLen * headSize / 2, seqLen * headSize / 2, vocab < 0 ? nv * dim : 0];
  const n = counts.reduce((a, b) => a + b, 0);
  const b = Buffer.alloc(28 + 4 * n);
  [dim, hidden, layers, heads, kvHeads, vocab, seqLen].forEach((v, i) => b.writeInt32LE(v, 4 * i));
  let x = 12345;
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) >>> 0; b.writeFloatLE(((x >>> 8) / (1 << 24) - 0.5) * 0.2, 28 + 4 * i); }
  return b;
}
const tok = fs.readFileSync(path.join(models, 'tok512.bin'));
const ckpts = {
  'small': checkpoint({ dim: 16, hidden: 24, layers: 1, heads: 2, kvHeads: 1, vocab: 512, seqLen: 16 }),
  'small-unshared': checkpoint({ dim: 16, hidden: 16, layers: 2, heads: 2, kvHeads: 2, vocab: -512, seqLen: 8 }),
  'small-vocab32': checkpoint({ dim: 8, hidden: 8, layers: 1, heads: 1, kvHeads: 1, vocab: 32, seqLen: 8 }),
};
const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; };
for (const [name, ck] of Object.entries(ckpts)) {
  save('fuzz_llama2c', `both-${name}`, Buffer.concat([Buffer.from([0]), u32(ck.length), ck, tok]));
  save('fuzz_llama2c', `ckpt-${name}`, Buffer.concat([Buffer.from([1]), ck]));
}
save('fuzz_llama2c', 'tok-tok512', Buffer.concat([Buffer.from([2]), tok]));
save('fuzz_llama2c', 'both-small-tok-truncated', Buffer.concat([Buffer.from([0]), u32(ckpts.small.length), ckpts.small, tok.subarray(0, 3000)]));

// ---- fuzz_state: mode byte (tests/fuzz/fuzz_state.c), then edits of a real blob (length, offset/xor pairs) or a blob ----
{
  const edits = (len, pairs) => Buffer.concat([u32(len), ...pairs.map(([o, x]) => Buffer.concat([u32(o), Buffer.from([x])]))]);
  for (const model of [0, 1]) {
    save('fuzz_state', `whole-${model}`, Buffer.concat([Buffer.from([model | 2 | 4]), edits(0xffffffff, [])]));
    save('fuzz_state', `header-${model}`, Buffer.concat([Buffer.from([model | 2 | 4]), edits(0xffffffff, [[40, 1], [60, 4], [84, 1]])]));
    save('fuzz_state', `cut-${model}`, Buffer.concat([Buffer.from([model | 2]), edits(1000, [])]));
  }
  save('fuzz_state', 'raw-magic', Buffer.concat([Buffer.from([0]), Buffer.from('WICKSTAT'), Buffer.alloc(100)]));
}

for (const t of Object.keys(dirs)) console.log(`seeds: ${t}: ${fs.readdirSync(dirs[t]).length} files`);
