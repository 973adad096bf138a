// tests/hostile.test.mjs — hand-made hostile model files, each named for what it breaks: every one
// must give a clean error (or, where noted, load and run) in both builds, never a crash or hang.
// Plus truncations and bit flips of a real file, in process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readGguf, writeGguf, setKv, dropKv, clone, T } from './gguf.mjs';
import { checkProblems } from './checks.mjs';
import { runProgram, runWick, models } from './helpers.mjs';
import '../wasm_glue/gguf-header.js';

// a run of test_load's --mutate mode: exactly these checks of tests/check.h, all passed
const checkRun = (r, ids) => assert.deepEqual(checkProblems(r, ids), [], r.stderr.slice(-2000));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-hostile-'));
const base = readGguf(path.join(models, 'mini', 'mini-q4_0.gguf'));
const Q4_0 = 2;

// name → [bytes, expected message pattern]
const cases = {};
function add(name, bytes, pattern) { cases[name] = [bytes, pattern]; }
function variant(fn) { const g = clone(base); fn(g); return writeGguf(g); }
const tensor = (g, name) => g.tensors.find((t) => t.name === name);
const u64max = (1n << 64n) - 1n;

add('empty-file', Buffer.alloc(0), /not a GGUF/);
add('bad-magic', Buffer.concat([Buffer.from('GGUX'), writeGguf(base).subarray(4)]), /not a GGUF/);
add('version-1', variant((g) => { g.version = 1; }), /version 1 not supported/);
add('version-99', variant((g) => { g.version = 99; }), /version 99 not supported/);
add('huge-metadata-count', writeGguf(base, { nKv: 1n << 62n }), /too many/);
add('huge-tensor-count', writeGguf(base, { nTensors: u64max }), /too many/);
add('metadata-count-past-end', writeGguf(base, { nKv: 100000 }), /truncated|cannot fit/);
add('key-length-huge', (() => { const b = writeGguf(base); b.writeBigUInt64LE(u64max, 24); return b; })(), /truncated/);
add('unknown-value-type', variant((g) => { g.kv.splice(1, 0, { key: 'x.bad', type: 99, value: 0 }); }), /unknown value type 99/);
add('array-length-huge', variant((g) => { g.kv.splice(1, 0, { key: 'x.arr', type: T.ARRAY, value: { arrayOf: T.U32, items: [1, 2], length: 1n << 61n } }); }), /past end of file|truncated/);
add('string-array-length-huge', variant((g) => { g.kv.splice(1, 0, { key: 'x.strs', type: T.ARRAY, value: { arrayOf: T.STRING, items: ['a'], length: 1n << 40n } }); }), /truncated/);
add('unknown-array-element-type', variant((g) => { g.kv.splice(1, 0, { key: 'x.arr', type: T.ARRAY, value: { arrayOf: 77, items: [] } }); }), /unknown array element type/);
add('arrays-nested-too-deep', variant((g) => {
  let v = { arrayOf: T.U8, items: [1] };
  for (let i = 0; i < 12; i++) v = { arrayOf: T.ARRAY, items: [v] };
  g.kv.splice(1, 0, { key: 'x.deep', type: T.ARRAY, value: v });
}), /nested too deeply/);
add('alignment-zero', variant((g) => { setKv(g, 'general.alignment', T.U32, 0); }), /general.alignment/);
add('alignment-not-power-of-two', variant((g) => { setKv(g, 'general.alignment', T.U32, 48); }), /general.alignment/);
add('tensor-five-dimensions', variant((g) => { const t = tensor(g, 'output_norm.weight'); t.ne = [256n, 1n, 1n, 1n, 1n]; }), /dimensions/);
add('tensor-zero-dimension', variant((g) => { tensor(g, 'output_norm.weight').ne = [0n]; }), /zero or too large/);
add('tensor-shape-overflows', variant((g) => { tensor(g, 'output_norm.weight').ne = [1n << 32n, 1n << 32n]; }), /too large/);
add('tensor-shape-product-overflows-64-bits', variant((g) => { tensor(g, 'output_norm.weight').ne = [1n << 40n, 1n << 30n, 1n << 30n]; }), /too large/);
add('tensor-unknown-type', variant((g) => { tensor(g, 'output_norm.weight').type = 99; }), /unsupported tensor type 99/);
// wick's own in-memory layouts (quant.h: Q6_K_R = 31, Q8_K_R = 32, Q4_K_R = 33, Q8_K_R32 = 34) are never taken from a file
for (const t of [31, 32, 33, 34])
  add(`tensor-internal-type-${t}`, variant((g) => { tensor(g, 'output_norm.weight').type = t; }), new RegExp(`unsupported tensor type ${t}`));
add('tensor-offset-past-end', variant((g) => { tensor(g, 'output_norm.weight').offset = 1n << 40n; }), /past end of file/);
add('tensor-offset-wraps-around', variant((g) => { tensor(g, 'output_norm.weight').offset = u64max - 31n; }), /past end of file|not aligned/);
add('tensor-offset-misaligned', variant((g) => { tensor(g, 'output_norm.weight').offset = 4n; }), /not aligned/);
add('tensor-name-duplicated', variant((g) => { g.tensors[1].name = g.tensors[0].name; }), /appears twice/);
add('tensor-name-empty', variant((g) => { g.tensors[0].name = ''; }), /name length/);
add('tensor-row-not-whole-blocks', variant((g) => { const t = g.tensors.find((x) => x.type === Q4_0); t.ne = [33n, 1n]; }), /block size/);
add('data-truncated', writeGguf(base).subarray(0, writeGguf(base).length - 4096), /past end of file/);
add('directory-truncated', writeGguf(base).subarray(0, 4000), /truncated/);
add('architecture-missing', variant((g) => { dropKv(g, 'general.architecture'); }), /general.architecture is missing/);
add('architecture-unsupported', variant((g) => { setKv(g, 'general.architecture', T.STRING, 'mamba'); }), /architecture 'mamba' is not supported/);
add('mixture-of-experts', variant((g) => { setKv(g, 'llama.expert_count', T.U32, 8); }), /mixture-of-experts .*expert_count = 8/);
add('kv-head-count-per-layer', variant((g) => { setKv(g, 'llama.attention.head_count_kv', T.ARRAY, { arrayOf: T.U32, items: [4, 4] }); }), /head_count_kv is an array/);
add('block-count-missing', variant((g) => { dropKv(g, 'llama.block_count'); }), /block_count is missing/);
add('block-count-huge', variant((g) => { setKv(g, 'llama.block_count', T.U64, 1n << 40n); }), /out of range/);
add('block-count-too-many-for-tensors', variant((g) => { setKv(g, 'llama.block_count', T.U32, 3); }), /blk\.2\..* is missing/);
add('head-count-zero', variant((g) => { setKv(g, 'llama.attention.head_count', T.U32, 0); }), /head count 0 out of range/);
add('heads-do-not-divide-dim', variant((g) => { setKv(g, 'llama.attention.head_count', T.U32, 7); }), /multiple of the head count/);
add('kv-heads-above-heads', variant((g) => { setKv(g, 'llama.attention.head_count_kv', T.U32, 64); }), /KV head count .* out of range/);
add('kv-heads-do-not-divide-heads', variant((g) => { setKv(g, 'llama.attention.head_count_kv', T.U32, 3); }), /multiple of the KV head count/);
add('context-length-huge', variant((g) => { setKv(g, 'llama.context_length', T.U64, 1n << 40n); }), /out of range/);
add('rms-epsilon-negative', variant((g) => { setKv(g, 'llama.attention.layer_norm_rms_epsilon', T.F32, -1); }), /RMS epsilon/);
add('rope-base-nan', variant((g) => { setKv(g, 'llama.rope.freq_base', T.F32, NaN); }), /rope base/);
add('rope-dimension-odd', variant((g) => { setKv(g, 'llama.rope.dimension_count', T.U32, 31); }), /rope dimension 31 is odd/);
add('rope-scaling-unsupported', variant((g) => { setKv(g, 'llama.rope.scaling.type', T.STRING, 'dynamic'); }), /rope scaling type dynamic is not supported \(none, linear and yarn are\)/);
add('tensor-missing', variant((g) => { g.tensors = g.tensors.filter((t) => t.name !== 'blk.1.attn_q.weight'); }), /blk\.1\.attn_q\.weight is missing/);
add('tensor-wrong-shape', variant((g) => { const t = tensor(g, 'blk.0.ffn_up.weight'); t.ne = [t.ne[1], t.ne[0]]; }), /blk\.0\.ffn_up\.weight: shape/);
add('embedding-rows-huge', variant((g) => { tensor(g, 'token_embd.weight').ne = [256n, 1n << 30n]; }), /out of range|past end/);
add('tokens-missing', variant((g) => { dropKv(g, 'tokenizer.ggml.tokens'); }), /tokenizer|tokens/);
add('llama2c-truncated', fs.readFileSync(path.join(models, 'stories260K.bin')).subarray(0, 5000), /truncated/);
add('llama2c-negative-dims', (() => { const b = Buffer.from(fs.readFileSync(path.join(models, 'stories260K.bin'))); b.writeInt32LE(-64, 0); return b; })(), /dim|range/);
add('llama2c-huge-vocab', (() => { const b = Buffer.from(fs.readFileSync(path.join(models, 'stories260K.bin'))); b.writeInt32LE(2000000000, 20); return b; })(), /out of range|truncated/);

const args = Object.entries(cases).map(([name, [bytes]]) => {
  const isBin = name.startsWith('llama2c');
  const file = path.join(dir, `${name}.${isBin ? 'bin' : 'gguf'}`);
  fs.writeFileSync(file, bytes);
  return isBin ? `${file}:${path.join(models, 'tok512.bin')}` : file;
});

test('at least 30 hostile files are checked', () => assert.ok(args.length >= 30, String(args.length)));

for (const build of ['native', 'wasm']) {
  test(`${build}: every hostile file gives a clean error naming the problem`, () => {
    const r = runProgram(build, 'test_load', args);
    assert.equal(r.signal, null, r.stderr);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, args.length);
    const problems = [];
    lines.forEach((line, i) => {
      const name = Object.keys(cases)[i];
      const [, status, message] = line.split('\t');
      if (status !== 'ERR') problems.push(`${name}: loaded (${message})`);
      else if (!cases[name][1].test(message)) problems.push(`${name}: message "${message}" does not match ${cases[name][1]}`);
    });
    assert.deepEqual(problems, []);
  });

  test(`${build}: truncations and bit flips of a real file never crash`, () => {
    for (const f of ['mini/mini-q4_0.gguf', 'mini/mini-qwen2-q8_0.gguf', 'families/mini-qwen35-q8_0.gguf', 'families/mini-lfm2-q8_0.gguf']) {
      const r = runProgram(build, 'test_load', ['--mutate', path.join(models, f), build === 'native' ? '400' : '150', '7']);
      // every truncation and every flip loaded or was refused, and the program reached its end
      checkRun(r, ['load.mutate.read', 'load.mutate.truncations', 'load.mutate.flips']);
    }
  });
}

// the glue refuses from the header what the engine would refuse after the download: the same list
test('the glue\'s list of architectures is the engine\'s, and both refuse a mixture of experts', () => {
  const file = path.join(dir, 'list-architectures.gguf');
  fs.writeFileSync(file, variant((g) => { setKv(g, 'general.architecture', T.STRING, 'mamba'); }));
  const r = runWick('native', ['info', '-m', file]);
  const listed = /\(([^()]*) are\)/.exec(r.stderr);
  assert.ok(listed, r.stderr);
  assert.deepEqual(listed[1].split(', '), globalThis.WickGguf.ARCHITECTURES);
  assert.match(globalThis.WickGguf.unsupportedReason({ 'general.architecture': 'mamba' }), /architecture 'mamba' is not supported/);
  assert.match(globalThis.WickGguf.unsupportedReason({ 'general.architecture': 'llama', 'llama.expert_count': 8 }), /mixture-of-experts/);
  assert.equal(globalThis.WickGguf.unsupportedReason({ 'general.architecture': 'gemma3' }), null);
});
