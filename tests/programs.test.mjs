// tests/programs.test.mjs — the C test programs (kernels: SIMD against scalar; dequantization
// against the F32 file; sampler; tokenizer, with Qwen3.5's vectors from llama.cpp's source
// bundle; context shifts; hybrid models' recurrent state; attention's fast paths against its scalar
// reference), each run in the native and the wasm build. Each
// program prints one line per check and closes with "N passed, M failed".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, runProgram, runWick, shared } from './helpers.mjs';

const programs = {
  test_kernels: [],
  test_dequant: [path.join(shared, 'models', 'mini')],
  test_sampler: [],
  test_tokenizer: [path.join(shared, 'vocab'), path.join(shared, 'models')],
  test_attention: [],
  test_grammar: null, // its arguments are set once the grammars are out of the bundle (before)
};

// test_grammar reads llama.cpp's grammars/*.gbnf, and the tokenizer tests below its
// models/ggml-vocab-{qwen35,gemma-4}.gguf with their vectors (.inp, .out): taken at test time from
// the git bundle of llama.cpp's source that node-llama-cpp ships (none are copied into this repository).
const BUNDLE_VOCABS = { qwen35: "Qwen3.5's tokenizer (pre-type qwen35)", 'gemma-4': "Gemma 4's tokenizer (model gemma4: raw-byte BPE over lines)" };
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
});

const outputs = {};
for (const [name, args] of Object.entries(programs)) {
  for (const build of ['native', 'wasm']) {
    test(`${build}: ${name}`, () => {
      const r = runProgram(build, name, programs[name] ?? args);
      outputs[`${build}:${name}`] = r.stdout;
      const failures = r.stdout.split('\n').filter((l) => /^(FAIL|not ok)/i.test(l));
      assert.equal(r.signal, null, r.stderr);
      assert.equal(r.code, 0, `${failures.join('\n')}\n${r.stderr}`);
      const m = /^(\d+) passed, (\d+) failed/m.exec(r.stdout);
      assert.ok(m, 'closing line present');
      assert.ok(Number(m[1]) > 0, 'checks ran');
      assert.equal(Number(m[2]), 0);
      if (name === 'test_grammar') {
        // every extracted case ran, and llama.cpp's grammar files were there to parse
        assert.match(r.stdout, /^ok  : json\.gbnf parses/m);
        assert.match(r.stdout, /^ok  : the directory holds llama\.cpp's grammars/m);
      }
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
      assert.equal(r.code, 0, r.stdout.split('\n').filter((l) => l.startsWith('FAIL')).join('\n') + r.stderr);
      assert.match(r.stdout, new RegExp(`ok   ${name}: ${texts} of ${texts} texts tokenize as llama.cpp does`));
      assert.match(r.stdout, new RegExp(`ok   ${name}: ${texts} of ${texts} texts come back from their ids`));
    });
  }
}

test('the sampler draws the same sequence in the native and the wasm build', () => {
  const hash = (s) => (s.match(/draw hash[^\n]*/gi) || []).join('\n');
  const a = outputs['native:test_sampler'] ?? runProgram('native', 'test_sampler').stdout;
  const b = outputs['wasm:test_sampler'] ?? runProgram('wasm', 'test_sampler').stdout;
  assert.ok(hash(a).length > 0, 'the sampler test prints its draw hash');
  assert.equal(hash(a), hash(b));
});

for (const build of ['native', 'wasm']) {
  test(`${build}: test_state (hybrid models: chat turns, regenerate, abort and overflow over the recurrent state)`, () => {
    const r = runProgram(build, 'test_state', [...['mini-qwen35-q8_0.gguf', 'mini-lfm2-f16.gguf'].map((f) => path.join(shared, 'models', 'families', f)),
      graniteHybridFile()]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^\d+ passed, 0 failed/m);
    // both files ran every case: the state's size at two context sizes, three turns (at 1 and 2
    // threads natively; the wasm test programs are single-threaded), regenerate, abort, and the
    // window overflow
    for (const f of ['mini-qwen35-q8_0.gguf', 'mini-lfm2-f16.gguf', 'mini-granite-hybrid-q8_0.gguf']) {
      assert.match(r.stdout, new RegExp(`ok  : ${f}: recurrent state (\\d+) bytes at 128 tokens, \\1 at 2048`));
      assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`ok  : ${f}, `) && /turn 3: 12 of 43/.test(l)).length, build === 'native' ? 2 : 1);
      assert.match(r.stdout, new RegExp(`ok  : ${f}: regenerate evaluates 1 token`));
      assert.match(r.stdout, new RegExp(`ok  : ${f}: after an abort`));
      assert.match(r.stdout, new RegExp(`ok  : ${f}: the logits after each re-evaluation equal a fresh evaluation`));
    }
  });

  test(`${build}: test_context (cached keys after a context shift equal fresh ones; gemma3's sliding-window rings; gemma4's and gemma3n's shared caches)`, () => {
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
    const r = runProgram(build, 'test_context', [path.join(shared, 'models', 'stories260K.gguf'),
      path.join(shared, 'models', 'families', 'mini-gemma3-f16.gguf'), gemma4, gemma3n]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^\d+ passed, 0 failed/m);
    // the gemma3 part ran: the rings' memory, their logits and the shift past the window
    assert.match(r.stdout, /ok  : KV cache of a 1024-token context/);
    assert.match(r.stdout, /ok  : all layers sliding: the next token's logits after the shift match a fresh evaluation/);
    // and the gemma4 part
    assert.match(r.stdout, /ok  : gemma4: a KV cache of \d+ bytes, none for its 3 KV-shared layers/);
    assert.match(r.stdout, /ok  : gemma4: generation past a full 64-token context/);
    // and the gemma3n part: layers 20 to 24 read the caches of 18 and 19
    assert.match(r.stdout, /ok  : gemma3n: a KV cache of \d+ bytes, none for its 5 KV-shared layers/);
    assert.match(r.stdout, /ok  : gemma3n: the window's layer-0 keys after a shift equal fresh ones/);
    assert.match(r.stdout, /ok  : gemma3n: generation past a full 64-token context/);
    // the external context (the WebGPU path's) ran
    assert.match(r.stdout, /ok  : greedy tokens through the external context equal the CPU generator's/);
    assert.match(r.stdout, /ok  : a full external context is evaluated again/);
  });
}
