// tests/engine.test.mjs — the engine end to end through both CLIs (native and wasm): greedy text
// of stories260K, logits against llama.cpp's references, native ≡ wasm, and clean errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runWick, loadReference, models, compareRows, toleranceFor } from './helpers.mjs';
import { readGguf, splitGguf, writeGguf, T } from './gguf.mjs';

const builds = ['native', 'wasm'];
const stories = loadReference('stories260K.json');

for (const build of builds) {
  test(`${build}: greedy stories260K.gguf reproduces the reference text (240 tokens)`, () => {
    const r = runWick(build, ['generate', '-m', path.join(models, 'stories260K.gguf'), '-p', 'Once upon a time', '-n', '240', '--temp', '0']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.replace(/\n$/, ''), stories.greedy_text);
    assert.match(r.stderr, /decode: \d+ tokens/);
  });

  test(`${build}: greedy stories260K.bin + tok512.bin reproduces the reference text`, () => {
    const r = runWick(build, ['generate', '-m', path.join(models, 'stories260K.bin'), '-z', path.join(models, 'tok512.bin'), '-p', 'Once upon a time', '-n', '240', '--temp', '0']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.replace(/\n$/, ''), stories.greedy_text);
  });

  test(`${build}: tokenize matches llama.cpp's prompt tokens`, () => {
    const r = runWick(build, ['tokenize', '-m', path.join(models, 'stories260K.gguf'), '-p', 'Once upon a time']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), stories.prompt_tokens);
    const mini = loadReference('mini-f32.json');
    const r2 = runWick(build, ['tokenize', '-m', path.join(models, 'mini', 'mini-f32.gguf'), '-p', mini.prompt]);
    assert.deepEqual(JSON.parse(r2.stdout), mini.prompt_tokens);
  });

  test(`${build}: info reports the architecture and hyperparameters`, () => {
    const r = runWick(build, ['info', '-m', path.join(models, 'mini', 'mini-qwen2-q8_0.gguf')]);
    assert.equal(r.code, 0, r.stderr);
    const info = JSON.parse(r.stdout);
    assert.equal(info.architecture, 'qwen2');
    assert.equal(info.embedding_length, 256);
    assert.equal(info.block_count, 2);
    assert.equal(info.head_count, 4);
    assert.equal(info.head_count_kv, 2);
    assert.equal(info.feed_forward_length, 768);
    assert.equal(info.rope_neox, true);
    assert.equal(info.rope_freq_base, 1000000);
    assert.ok(info.tensor_types.q8_0 > 0);
  });
}

// Every mini model (each tensor type, llama.cpp's mixes, qwen2), every file of the families wick
// runs (Llama 3 rope factors, qwen3, gemma2, gemma3, phi3, smollm3, granite, olmo2, and the
// hybrids with a recurrent state: lfm2's short convolutions, qwen35's gated DeltaNet) and stories260K.
const familyFiles = fs.readdirSync(path.join(models, 'families')).filter((f) => /^mini-.*\.gguf$/.test(f)).sort();
const families = ['llama3', 'qwen3', 'gemma2', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2', 'lfm2', 'qwen35'];
test('every family has an F16 and a quantized file with its reference', () => {
  for (const fam of families) {
    const files = familyFiles.filter((f) => f.startsWith(`mini-${fam}-`));
    assert.equal(files.length, 2, `${fam}: ${files}`);
    assert.ok(files.some((f) => f.endsWith('-f16.gguf')), fam);
  }
});
// info shows each family's switches as the forward pass took them from the file
const familySwitches = {
  llama3: { rope_factors: 'rope_freqs', norms: 'pre', activation: 'silu' },
  qwen3: { q_width: 512, qk_norm: 'per head', tied_output: true, fused_qkv: false },
  gemma2: { activation: 'gelu (tanh)', norms: 'pre and post', attn_softcap: 3, final_softcap: 4, sliding_window: 8, sliding_layers: 2, embedding_scale: 16 },
  gemma3: { qk_norm: 'per head', sliding_window: 12, sliding_layers: 5, rope_freq_base_swa: 10000, attn_softcap: 0, fused_qkv: false },
  phi3: { fused_qkv: true, fused_gate_up: true, rope_factors: 'short/long', sliding_window: 0 },
  smollm3: { unrotated_layers: 1 },
  granite: { embedding_scale: 10, residual_scale: 0.5, attention_scale: 0.03125, logit_scale: 0.25 },
  olmo2: { norms: 'post', qk_norm: 'full width', tied_output: false },
  // lfm2: layers 0, 1 and 3 convolve (KV head count 0), l_cache 3: 2 inputs of 256 floats each kept
  lfm2: { layer_pattern: 'CCAC', recurrent_layers: 3, conv_kernel: 3, state_bytes: 3 * 2 * 256 * 4, qk_norm: 'per head', tied_output: true },
  // qwen35: full attention every 4th layer; per DeltaNet layer 3 inputs of (2·2 + 4)·32 channels
  // and 4 value heads of 32×32
  qwen35: { layer_pattern: 'DDDA', recurrent_layers: 3, conv_kernel: 4, ssm_state: 32, ssm_k_heads: 2, ssm_v_heads: 4,
    state_bytes: 3 * (3 * 256 + 4 * 32 * 32) * 4, attn_output_gate: true, q_width: 256, tied_output: false },
};
for (const build of builds) {
  test(`${build}: info shows each family's switches`, () => {
    for (const [fam, want] of Object.entries(familySwitches)) {
      const file = familyFiles.find((f) => f.startsWith(`mini-${fam}-`));
      const r = runWick(build, ['info', '-m', path.join(models, 'families', file)]);
      assert.equal(r.code, 0, r.stderr);
      const info = JSON.parse(r.stdout);
      assert.equal(info.architecture, fam === 'llama3' ? 'llama' : fam);
      for (const [k, v] of Object.entries(want)) assert.equal(info.family[k], v, `${fam}: ${k}`);
    }
    // phi3's attn_factor, read from phi3.rope.scaling.attn_factor
    const phi3 = JSON.parse(runWick(build, ['info', '-m', path.join(models, 'families', 'mini-phi3-f16.gguf')]).stdout);
    assert.ok(Math.abs(phi3.family.rope_attn_factor - 1.1902) < 1e-3, phi3.family.rope_attn_factor);
  });
}

const logitFiles = [...fs.readdirSync(path.join(models, 'mini')).filter((f) => /^mini-.*\.gguf$/.test(f) && f !== 'mini-chat-q8_0.gguf')
  .sort().map((f) => `mini/${f}`), ...familyFiles.map((f) => `families/${f}`), 'stories260K.gguf'];

function logitsOf(build, file, ref, threads = 1) {
  const r = runWick(build, ['logits', '-m', path.join(models, file), '--tokens', ref.prompt_tokens.join(','), '--steps', String(ref.greedy_step_logits.length),
    '--follow', ref.greedy_tokens.join(','), '--threads', String(threads)]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

const results = {};
for (const file of logitFiles) {
  const ref = loadReference(path.basename(file).replace('.gguf', '.json'));
  for (const build of builds) {
    test(`${build}: logits of ${file} match llama.cpp within ${toleranceFor(file) * 100}%`, () => {
      const out = logitsOf(build, file, ref);
      results[`${build}:${file}`] = out;
      assert.equal(out.n_vocab, ref.n_vocab);
      const tol = toleranceFor(file);
      const problems = [
        ...compareRows(out.prompt_logits, ref.prompt_logits, tol, 'prompt'),
        ...compareRows(out.greedy_step_logits, ref.greedy_step_logits, tol, 'step'),
      ];
      assert.deepEqual(problems, []);
    });
  }
  test(`${file}: 1 and 2 threads give identical logits (native and wasm)`, () => {
    for (const build of builds) {
      const one = results[`${build}:${file}`] ?? logitsOf(build, file, ref);
      const two = logitsOf(build, file, ref, 2);
      assert.deepEqual(two, one, build);
    }
  });
  test(`native and wasm logits of ${file} agree within 1e-5 relative`, () => {
    const a = results[`native:${file}`] ?? logitsOf('native', file, ref);
    const b = results[`wasm:${file}`] ?? logitsOf('wasm', file, ref);
    assert.deepEqual(a.greedy_tokens, b.greedy_tokens);
    const rows = (o) => [...o.prompt_logits, ...o.greedy_step_logits];
    const ra = rows(a), rb = rows(b);
    assert.equal(ra.length, rb.length);
    let worst = 0;
    ra.forEach((row, i) => {
      const scale = Math.max(...row.map(Math.abs));
      row.forEach((v, j) => { worst = Math.max(worst, Math.abs(v - rb[i][j]) / scale); });
    });
    assert.ok(worst <= 1e-5, `largest difference ${worst} of the row's magnitude`);
  });
}

// A Qwen3.5 file with a multi-token-prediction block (nextn_predict_layers, as converters write
// for Qwen3.5's MTP head): the block is loaded by llama.cpp only for drafting and never run in the
// main pass, so the logits are those of the file without it. Here the extra block is a copy of
// layer 3's tensors renamed blk.4 (a full-attention block, as the MTP block is).
test('qwen35 with a trailing nextn_predict_layers block gives the logits of the trunk alone', () => {
  const src = path.join(models, 'families', 'mini-qwen35-q8_0.gguf');
  const g = readGguf(src);
  for (const e of g.kv) if (e.key === 'qwen35.block_count') e.value = 5;
  g.kv.push({ key: 'qwen35.nextn_predict_layers', type: T.U32, value: 1 });
  g.tensors.push(...g.tensors.filter((t) => t.name.startsWith('blk.3.')).map((t) => ({ ...t, name: t.name.replace('blk.3.', 'blk.4.') })));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-mtp-'));
  const file = path.join(dir, 'mtp.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const args = ['logits', '--tokens', '1,403,407,261,378', '--steps', '2'];
  for (const build of builds) {
    const base = runWick(build, [...args, '-m', src]);
    const mtp = runWick(build, [...args, '-m', file]);
    assert.equal(mtp.code, 0, mtp.stderr);
    assert.equal(mtp.stdout, base.stdout, build);
    assert.equal(JSON.parse(runWick(build, ['info', '-m', file]).stdout).block_count, 4);
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the greedy tokens of stories260K match the reference run', () => {
  const out = results['native:stories260K.gguf'] ?? logitsOf('native', 'stories260K.gguf', stories);
  assert.deepEqual(out.greedy_tokens, stories.greedy_tokens.slice(0, out.greedy_tokens.length));
});

// ---- bad input: one line naming the problem, non-zero exit, no crash ----
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bad-'));
const good = fs.readFileSync(path.join(models, 'mini', 'mini-q4_0.gguf'));
const badFiles = {
  'missing.gguf': null,
  'not-gguf.gguf': Buffer.from('this is not a model file at all\n'),
  'truncated-header.gguf': good.subarray(0, 20),
  'truncated-data.gguf': good.subarray(0, good.length - 1000),
};
for (const [name, bytes] of Object.entries(badFiles)) if (bytes) fs.writeFileSync(path.join(tmp, name), bytes);

const expectations = {
  'missing.gguf': /cannot open/,
  'not-gguf.gguf': /not a GGUF/,
  'truncated-header.gguf': /truncated/,
  'truncated-data.gguf': /past end of file/,
};
for (const build of builds) {
  for (const [name, pattern] of Object.entries(expectations)) {
    test(`${build}: ${name} gives one clean error line`, () => {
      const r = runWick(build, ['generate', '-m', path.join(tmp, name), '-p', 'hi', '-n', '4']);
      assert.notEqual(r.code, 0);
      assert.equal(r.signal, null);
      assert.match(r.stderr, pattern);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(r.stdout, '');
    });
  }
  test(`${build}: bad flags are refused clearly`, () => {
    for (const args of [['generate'], ['frobnicate', '-m', 'x'], ['generate', '-m', 'x', '-n', 'many'], ['logits', '-m', path.join(models, 'stories260K.gguf'), '--tokens', '1,99999']]) {
      const r = runWick(build, args);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.match(r.stderr, /^wick: /);
    }
  });
}

// ---- split models (gguf-split): the parts load as one model and give the same logits ----
for (const build of builds) {
  test(`${build}: a model split in three parts gives the logits of the whole file`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-split-'));
    const parts = splitGguf(readGguf(path.join(models, 'mini', 'mini-q4_k_m.gguf')), 3);
    parts.forEach((b, i) => fs.writeFileSync(path.join(dir, `mini-0000${i + 1}-of-00003.gguf`), b));
    const args = ['logits', '--tokens', '1,403,407,261', '--steps', '2'];
    const whole = runWick(build, [...args, '-m', path.join(models, 'mini', 'mini-q4_k_m.gguf')]);
    const split = runWick(build, [...args, '-m', path.join(dir, 'mini-00001-of-00003.gguf')]);
    assert.equal(split.code, 0, split.stderr);
    assert.equal(split.stdout, whole.stdout);
    const info = JSON.parse(runWick(build, ['info', '-m', path.join(dir, 'mini-00001-of-00003.gguf')]).stdout);
    assert.equal(info.parts, 3);
    fs.unlinkSync(path.join(dir, 'mini-00002-of-00003.gguf'));
    const missing = runWick(build, [...args, '-m', path.join(dir, 'mini-00001-of-00003.gguf')]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /cannot open .*00002-of-00003/);
  });
}

// ---- tokenize --special and detokenize through both CLIs, on vocab-only files ----
const vocab = path.join(models, '..', 'vocab');
for (const build of builds) {
  test(`${build}: tokenize --special recognises control tokens; detokenize gives the text back`, () => {
    const phi3 = path.join(vocab, 'ggml-vocab-phi-3.gguf');
    const special = JSON.parse(runWick(build, ['tokenize', '-m', phi3, '-p', '<|user|>', '--special']).stdout);
    const plain = JSON.parse(runWick(build, ['tokenize', '-m', phi3, '-p', '<|user|>']).stdout);
    assert.deepEqual(special, [1, 32010]);
    assert.ok(plain.length > 2 && !plain.includes(32010));
    const gpt2 = path.join(vocab, 'ggml-vocab-gpt-2.gguf');
    const text = 'Hello world, héllo 世界 🙂';
    const ids = JSON.parse(runWick(build, ['tokenize', '-m', gpt2, '-p', text, '--no-bos']).stdout);
    const back = runWick(build, ['detokenize', '-m', gpt2, '--ids', ids.join(',')]);
    assert.equal(back.code, 0, back.stderr);
    assert.equal(back.stdout, text + '\n');
    const bad = runWick(build, ['detokenize', '-m', gpt2, '--ids', '1,9999999']);
    assert.notEqual(bad.code, 0);
  });
}
