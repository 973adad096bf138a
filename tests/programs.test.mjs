// tests/programs.test.mjs — the C test programs (kernels: SIMD against scalar; dequantization
// against the F32 file; sampler; tokenizer, with Qwen3.5's vectors from llama.cpp's source
// bundle; context shifts; hybrid models' recurrent state; attention's fast paths against its scalar
// reference), each run in the native and the wasm build. Each program prints one line per
// check, by id (tests/check.h), and each run must print exactly the ids of its list in
// tests/checks/ (tests/checks.mjs): a failed check, a check that did not run, a missing fixture
// or a crash fails the test, named by check id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { assertChecks, parseChecks, writeExpectedIds } from './checks.mjs';
import { root, runProgram, runWick, shared } from './helpers.mjs';

const programs = {
  test_kernels: [],
  test_dequant: [path.join(shared, 'models', 'mini')],
  test_sampler: [],
  test_tokenizer: [path.join(shared, 'vocab'), path.join(shared, 'models'), path.join(shared, 'reference')],
  test_attention: [],
  test_grammar: null, // its arguments are set once the grammars are out of the bundle (before)
};

// test_grammar reads llama.cpp's grammars/*.gbnf, and the tokenizer tests below its
// models/ggml-vocab-{qwen35,gemma-4,bert-bge}.gguf with their vectors (.inp, .out): taken at test time from
// the git bundle of llama.cpp's source that node-llama-cpp ships (none are copied into this repository).
const BUNDLE_VOCABS = {
  qwen35: "Qwen3.5's tokenizer (pre-type qwen35)", 'gemma-4': "Gemma 4's tokenizer (model gemma4: raw-byte BPE over lines)",
  // WordPiece: its text does not come back (lowercased, accents stripped), the ids of its text do (test_tokenizer.c)
  'bert-bge': "bge's WordPiece tokenizer (model bert)",
};
const VOCAB_FILES = Object.keys(BUNDLE_VOCABS).flatMap((name) => ['', '.inp', '.out'].map((ext) => `ggml-vocab-${name}.gguf${ext}`));
let llamaDir;
// granite-hybrid (Mamba-2) has no file in ../shared: test_state takes a synth one, written there
const graniteHybridFile = () => path.join(llamaDir, 'mini-granite-hybrid-q8_0.gguf');
before(() => {
  llamaDir = mkdtempSync(path.join(tmpdir(), 'wick-llama.cpp-'));
  const [gbnfs, ...vocab] = readLlamaBundle(['grammars/*.gbnf', ...VOCAB_FILES.map((f) => `models/${f}`)]);
  const gbnfDir = path.join(llamaDir, 'grammars');
  mkdirSync(gbnfDir);
  for (const [name, bytes] of gbnfs) writeFileSync(path.join(gbnfDir, path.basename(name)), bytes);
  VOCAB_FILES.forEach((f, i) => writeFileSync(path.join(llamaDir, f), vocab[i]));
  programs.test_grammar = [path.join(root, 'tests', 'grammar-cases.json'), gbnfDir];
  const r = runWick('native', ['synth', '--shape', 'mini', '--type', 'q8_0', '--arch', 'granite-hybrid', '-o', graniteHybridFile(),
    '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
  assert.equal(r.code, 0, r.stderr);
});
after(() => {
  if (llamaDir) rmSync(llamaDir, { recursive: true, force: true });
  writeExpectedIds((key) => `build/*/${key.split('.')[0]} as tests/programs.test.mjs runs it${key.includes('.') ? ` (${key.split('.').slice(1).join('.')})` : ''}`);
});

const outputs = {};
for (const [name, args] of Object.entries(programs)) {
  for (const build of ['native', 'wasm']) {
    test(`${build}: ${name}`, () => {
      const r = runProgram(build, name, programs[name] ?? args);
      outputs[`${build}:${name}`] = r.stdout;
      // test_grammar's list holds every extracted case and each of llama.cpp's grammar files
      assertChecks(r, name, build);
    });
  }
}

// the bundle's tokenizers with their test vectors (written to llamaDir before the tests)
for (const [name, what] of Object.entries(BUNDLE_VOCABS)) {
  for (const build of ['native', 'wasm']) {
    test(`${build}: ${what} passes llama.cpp's test vectors`, () => {
      const dir = llamaDir;
      const texts = fs.readFileSync(path.join(dir, `ggml-vocab-${name}.gguf.out`), 'utf8').split('\n').filter((l, i, all) => i < all.length - 1 || l).length;
      assert.ok(texts >= 40, `${texts} texts`);
      const r = runProgram(build, 'test_tokenizer', ['--vectors', dir, `${name}:${texts}`]);
      // one check per text, and the counts: every text tokenizes as llama.cpp does and comes back
      const { checks } = assertChecks(r, `test_tokenizer.${name}`, build);
      assert.equal(checks.filter((c) => /\.text\d+$/.test(c.id)).length, texts);
      assert.match(checks.find((c) => c.id === `tokenizer.vectors.${name}.tokenize`).detail, new RegExp(`^${name}: ${texts} of ${texts} texts`));
      assert.match(checks.find((c) => c.id === `tokenizer.vectors.${name}.round-trip`).detail, new RegExp(`^${name}: ${texts} of ${texts} texts`));
    });
  }
}

test('the sampler draws the same sequence in the native and the wasm build', () => {
  const hash = (s) => parseChecks(s).notes.filter((n) => n.startsWith('draw hash')).join('\n');
  const a = outputs['native:test_sampler'] ?? runProgram('native', 'test_sampler').stdout;
  const b = outputs['wasm:test_sampler'] ?? runProgram('wasm', 'test_sampler').stdout;
  assert.ok(hash(a).length > 0, 'the sampler test prints its draw hash');
  assert.equal(hash(a), hash(b));
});

for (const build of ['native', 'wasm']) {
  test(`${build}: test_state (hybrid models: chat turns, regenerate, abort and overflow over the recurrent state)`, () => {
    const r = runProgram(build, 'test_state', [...['mini-qwen35-q8_0.gguf', 'mini-lfm2-f16.gguf'].map((f) => path.join(shared, 'models', 'families', f)),
      graniteHybridFile()]);
    // every file ran every case (the list): the state's size at two context sizes, three turns
    // (at 1 and 2 threads natively; the wasm test programs are single-threaded), regenerate,
    // abort, and the window overflow
    const { checks } = assertChecks(r, 'test_state', build);
    for (const f of ['mini-qwen35-q8_0.gguf', 'mini-lfm2-f16.gguf', 'mini-granite-hybrid-q8_0.gguf']) {
      assert.match(checks.find((c) => c.id === `state.${f}.memory`).detail, /recurrent state (\d+) bytes at 128 tokens, \1 at 2048/);
      // the third turn evaluates its 11 new tokens and the last answer's token, of 43
      for (const t of build === 'native' ? [1, 2] : [1])
        assert.match(checks.find((c) => c.id === `state.${f}.t${t}.turn3.evaluated`).detail, /turn 3: 12 of 43 prompt tokens evaluated \(want 12\)/);
    }
  });

  test(`${build}: test_session (saved states: bit-identical continuation in a fresh context for attention, sliding-window and hybrid models; 300 mutated blobs refused)`, () => {
    const files = ['mini-llama3-f16.gguf', 'mini-gemma3-f16.gguf', 'mini-gemma2-q8_0.gguf', 'mini-lfm2-f16.gguf', 'mini-qwen35-f16.gguf'];
    const r = runProgram(build, 'test_session', [...files.map((f) => path.join(shared, 'models', 'families', f)), graniteHybridFile()]);
    const { checks } = assertChecks(r, 'test_session', build);
    for (const f of [...files, 'mini-granite-hybrid-q8_0.gguf']) {
      assert.match(checks.find((c) => c.id === `session.${f}.fresh.evaluated`).detail, /^after loading: 5 of 45 prompt tokens evaluated/);
      assert.match(checks.find((c) => c.id === `session.${f}.mutations`).detail, /^300 of 300 mutated blobs refused, 300 with a message/);
    }
  });

  test(`${build}: test_context (cached keys after a context shift equal fresh ones; gemma3's sliding-window rings; gemma4's and gemma3n's shared caches; lfm2's external context)`, () => {
    // gemma4 and gemma3n files (no such files in ../shared): their KV-shared layers through a shift;
    // gemma3n on stories260K's vocabulary (its per-layer table is 256 values per layer and token)
    const synthFile = (arch, vocab) => {
      const file = path.join(llamaDir, `synth-${arch}-f16.gguf`);
      if (!fs.existsSync(file)) {
        const s = runWick('native', ['synth', '--arch', arch, '--shape', 'mini', '--type', 'f16', '-o', file, '--vocab', vocab]);
        assert.equal(s.code, 0, s.stderr);
      }
      return file;
    };
    const gemma4 = synthFile('gemma4', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf'));
    const gemma3n = synthFile('gemma3n', path.join(shared, 'models', 'stories260K.gguf'));
    const qwen2vl = synthFile('qwen2vl', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf'));
    const qwen3vl = synthFile('qwen3vl', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf'));
    const r = runProgram(build, 'test_context', [path.join(shared, 'models', 'stories260K.gguf'),
      path.join(shared, 'models', 'families', 'mini-gemma3-f16.gguf'), gemma4, gemma3n, path.join(shared, 'models', 'families', 'mini-lfm2-f16.gguf'), qwen2vl,
      qwen3vl]);
    // every part ran (the list): the shifts, the external context (the WebGPU path's), the status
    // codes, gemma3's rings (their memory, their logits, the shift past the window), gemma4's shared
    // caches and gemma3n's (layers 20 to 24 read the caches of 18 and 19), and a hybrid's external
    // context (the GPU path's: its snapshots and trims)
    const { checks } = assertChecks(r, 'test_context', build);
    assert.match(checks.find((c) => c.id === 'context.gemma4.kv-bytes').detail, /none for its 3 KV-shared layers/);
    assert.match(checks.find((c) => c.id === 'context.gemma3n.kv-bytes').detail, /none for its 5 KV-shared layers/);
    assert.match(checks.find((c) => c.id === 'context.lfm2.external.resume').detail, /trims back to the snapshot at 7 and evaluates 3 of 10/);
  });
}
