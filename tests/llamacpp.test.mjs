// tests/llamacpp.test.mjs — files written by `wick synth` against llama.cpp itself, through
// node-llama-cpp (its prebuilt CPU binary, never a download or a build):
//  - the llama architecture at each type (f16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k, shape mini);
//  - each family of `wick synth --arch` (llama3, qwen3, gemma2, gemma3, phi3, smollm3, granite,
//    olmo2, gemma4, gemma3n, mistral3, the Qwen-VL text models qwen2vl and qwen3vl (M-RoPE, which a
//    text-only prompt turns like NEOX rope; their image positions are tests/vision-prompt.test.mjs's),
//    and the hybrids lfm2, qwen35 and granite-hybrid) at f16 and one quantized type, with a prompt
//    longer than the sliding windows.
// For each file llama.cpp loads it and generates (one test), both wick builds (native and wasm)
// agree with llama.cpp's logits within the tolerances of ../shared/README.md (a test per build),
// and for each family llama.cpp's own logits move far when the family's distinctive step is
// switched off in the file (so the comparison tells a forward pass with the step from one without).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { runWick, shared, compareRows, relRms, argmax, clearWinner, toleranceFor, nativeCli, wasmCli } from './helpers.mjs';
import { readGguf, writeGguf, setKv, dropKv, T } from './gguf.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';

const builds = ['native', 'wasm'];
const types = ['f16', 'q8_0', 'q4_0', 'q4_k_m', 'q5_k_m', 'q6_k'];
const vocab = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf');
const promptText = 'The quick brown fox jumps over the lazy dog, and then it sleeps.';
const nVocabSpm = 32000;  // the llama SPM vocabulary's size
const steps = 4;  // greedy steps after the prompt (the first is the last prompt row, as in cmd_logits)
const distinct = 0.3;  // RMS/stddev by which rows of different positions differ at least (≥ 6× any tolerance)

// The families of `wick synth --arch`, each at f16 and the quantized type given here (between them
// every type and mix: Q4_K_M with its Q6_K layers, Q4_0 with a Q6_K tied head, Q8_0), and the
// sliding window of the families that have one (the prompt must run well past it).
const families = [
  { arch: 'llama3', quant: 'q4_k_m' },
  { arch: 'qwen3', quant: 'q8_0' },
  { arch: 'gemma2', quant: 'q4_0', window: 8 },
  { arch: 'gemma3', quant: 'q4_k_m', window: 12 },
  { arch: 'phi3', quant: 'q4_k_m' },
  { arch: 'smollm3', quant: 'q4_0' },
  { arch: 'granite', quant: 'q8_0' },
  { arch: 'olmo2', quant: 'q4_k_m' },
  // per-layer head sizes, KV-shared layers, per-layer embeddings
  { arch: 'gemma4', quant: 'q4_k_m', window: 12 },
  // AltUp, Laurel, the sparse FFN gate, per-layer embeddings and KV-shared layers. llama.cpp fixes the
  // per-layer embedding width at 256 and the KV-shared layers from the 20th on (25 layers here): with
  // the 32000-token vocabulary the per-layer table alone would be 410 MB, so this family takes
  // stories260K's vocabulary of 512 and a prompt of its kind (36 tokens)
  { arch: 'gemma3n', quant: 'q8_0', window: 8, vocab: path.join(shared, 'models', 'stories260K.gguf'), nVocab: 512,
    prompt: 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.' },
  // the hybrids: a recurrent state carried through the prompt and the steps
  { arch: 'lfm2', quant: 'q8_0' },
  { arch: 'qwen35', quant: 'q4_k_m' },
  { arch: 'granite-hybrid', quant: 'q8_0' },
  // YaRN and the query temperature
  { arch: 'mistral3', quant: 'q4_k_m' },
  // M-RoPE's sections (every pair at the one position of a text token), attention biases, deepstack rows (none for text)
  { arch: 'qwen2vl', quant: 'q8_0' },
  { arch: 'qwen3vl', quant: 'q4_k_m' },
];
// 42 tokens with BOS: past gemma2's window (8) and gemma3's (12) several times over
const familyPrompt = 'The quick brown fox jumps over the lazy dog, and then it sleeps. Later that evening the old farmer ' +
  'walked slowly out to the red barn and counted his sheep one by one.';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-llamacpp-'));
const familyOf = (arch) => families.find((f) => f.arch === arch) ?? {};
/** The prompt, vocabulary size and vocabulary file of the llama file (no arch) or a family's. */
const promptOf = (arch) => (arch ? familyOf(arch).prompt ?? familyPrompt : promptText);
const nVocabOf = (arch) => familyOf(arch).nVocab ?? nVocabSpm;
const synth = (type, file, arch) =>
  runWick('native', ['synth', '--shape', 'mini', '--type', type, '-o', file, '--vocab', familyOf(arch).vocab ?? vocab, ...(arch ? ['--arch', arch] : [])]);

/** The path of the synth mini file of a type (of the llama architecture, or of a family), written on first use. */
function fileOf(type, arch) {
  const file = path.join(tmp, `synth-mini-${arch ? `${arch}-` : ''}${type}.gguf`);
  if (!fs.existsSync(file)) {
    const r = synth(type, file, arch);
    assert.equal(r.code, 0, `wick synth${arch ? ` --arch ${arch}` : ''} --type ${type}: ${r.stderr}`);
  }
  return file;
}

// ---- llama.cpp through node-llama-cpp ----

const handles = [];  // native objects to dispose before the process can exit (contexts, models)

/** Log-probabilities of a full-vocabulary Map<token, p> as a row indexed by token id. */
function logProbRow(probabilities, nVocab) {
  assert.equal(probabilities.size, nVocab, 'llama.cpp returned probabilities for part of the vocabulary');
  const row = new Array(nVocab);
  for (const [t, p] of probabilities) {
    assert.ok(p > 0, `llama.cpp's probability of token ${t} underflowed to ${p}`);
    row[t] = Math.log(p);
  }
  return row;
}

/** Subtracts the row's mean: logits and log-probabilities centred this way are the same numbers. */
function centred(row) {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  return row.map((v) => v - mean);
}

function stddev(row) {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  return Math.sqrt(row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length);
}

/*
 * llama.cpp's rows for one file: the prompt as one batch with a row per position, then greedy steps
 * one token at a time. node-llama-cpp 3.21.1 gives no raw logits; LlamaContextSequence's
 * controlledEvaluate with generateNext: {probabilities: true} gives, per position, the softmax of
 * the logits after its sampler chain — with temperature 0 (its default) that chain is only the
 * greedy sampler, which changes no logit, so the probabilities cover the whole vocabulary and
 * log p = logit − logsumexp(logits). That constant differs per row, so both sides are compared
 * centred (each row minus its mean), which changes neither a row's stddev nor its argmax.
 */
async function llamaCppRows(file, prompt, { greedySteps = steps, nVocab = nVocabSpm } = {}) {
  const llama = await nativeLlama();
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  handles.push(model);
  try {
    // flash attention off (node-llama-cpp's 'auto' turns it on for the CPU): that path sums the
    // weighted values in F16, the other keeps scores and sums in F32 (as wick does), the closer to
    // exact arithmetic — on the family files the two differ by up to 0.4% of a row's stddev
    const context = await model.createContext({ contextSize: 64, batchSize: 64, threads: 1, sequences: 1, flashAttention: false });
    handles.push(context);
    const ids = [model.tokens.bos, ...model.tokenize(prompt, false)];
    const sequence = context.getSequence();
    const next = { generateNext: { probabilities: true, token: true } };
    const out = await sequence.controlledEvaluate(ids.map((t) => [t, next]));
    const promptRows = out.map((o) => logProbRow(o.next.probabilities, nVocab));
    const greedy = [out.at(-1).next.token];
    const stepRows = [promptRows.at(-1)];
    for (let k = 1; k < greedySteps; k++) {
      const [o] = await sequence.controlledEvaluate([[greedy.at(-1), next]]);
      stepRows.push(logProbRow(o.next.probabilities, nVocab));
      greedy.push(o.next.token);
    }
    const text = model.detokenize(greedy);
    await context.dispose();
    return { ids, greedy, text, nVocab, promptRows: promptRows.map(centred), stepRows: stepRows.map(centred) };
  } finally {
    await model.dispose();
  }
}

const references = new Map();
/** llama.cpp's rows for the synth file of a type (and family), computed once. */
function referenceOf(type, arch) {
  const key = `${arch ?? 'llama'} ${type}`;
  if (!references.has(key)) references.set(key, llamaCppRows(fileOf(type, arch), promptOf(arch), { nVocab: nVocabOf(arch) }));
  return references.get(key);
}

after(async () => {
  for (const h of handles.reverse()) if (!h.disposed) await h.dispose();
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// ---- the tests ----

test('wick synth writes a mini file of each type and family, the same bytes every time', () => {
  for (const type of types) assert.ok(fs.statSync(fileOf(type)).size > 1e6, type);
  for (const { arch, quant } of families) for (const type of ['f16', quant]) assert.ok(fs.statSync(fileOf(type, arch)).size > 1e6, `${arch} ${type}`);
  const again = path.join(tmp, 'again.gguf');
  assert.equal(synth('q4_0', again).code, 0);
  assert.ok(fs.readFileSync(again).equals(fs.readFileSync(fileOf('q4_0'))), 'same shape, type and seed gave different bytes');
  assert.equal(synth('q4_0', again, 'llama').code, 0);
  assert.ok(fs.readFileSync(again).equals(fs.readFileSync(fileOf('q4_0'))), '--arch llama is not the default file');
  assert.equal(synth('q4_k_m', again, 'gemma3').code, 0);
  assert.ok(fs.readFileSync(again).equals(fs.readFileSync(fileOf('q4_k_m', 'gemma3'))), 'same arch, shape, type and seed gave different bytes');
  fs.unlinkSync(again);
  const bad = synth('f16', again, 'mamba');
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /unknown arch 'mamba'/);
});

const results = {};  // measured figures, printed at the end

/** runWick without blocking, so that both builds run at once: {code, stdout, stderr}. */
function runWickAsync(build, args) {
  const [cmd, argv] = build === 'native' ? [nativeCli, args] : [process.execPath, [wasmCli, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [], err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

/** Both builds' tokenization of the prompt and logits on a synth file, started together on first use. */
const wickRuns = new Map();
function wickRunsOf(type, arch) {
  const key = `${arch ?? 'llama'} ${type}`;
  if (!wickRuns.has(key)) wickRuns.set(key, referenceOf(type, arch).then((ref) => {
    const file = fileOf(type, arch);
    const run = async (build) => ({
      tokens: await runWickAsync(build, ['tokenize', '-m', file, '-p', promptOf(arch)]),
      logits: await runWickAsync(build, ['logits', '-m', file, '--tokens', ref.ids.join(','), '--steps', String(steps),
        '--follow', ref.greedy.join(','), '--threads', '1']),
    });
    return Object.fromEntries(builds.map((build) => [build, run(build)]));
  }));
  return wickRuns.get(key);
}

/** One build's logits for a synth file (the prompt as one batch, then the greedy steps) against llama.cpp's. */
async function compareWithLlamaCpp(build, type, arch) {
  const ref = await referenceOf(type, arch);
  const { tokens: tok, logits: r } = await (await wickRunsOf(type, arch))[build];
  // the same prompt ids in wick's tokenizer (the llama SPM vocab the file carries)
  assert.equal(tok.code, 0, tok.stderr);
  assert.deepEqual(JSON.parse(tok.stdout), ref.ids, `${build} tokenizer`);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.n_vocab, ref.nVocab);
  const ours = { prompt: out.prompt_logits.map(centred), step: out.greedy_step_logits.map(centred) };
  const tol = toleranceFor(`synth-${type}`);
  const all = [...ours.prompt, ...ours.step], refs = [...ref.promptRows, ...ref.stepRows];
  const errs = all.map((row, i) => relRms(row, refs[i]));
  const clear = refs.map((row, i) => [clearWinner(row), argmax(all[i]) === argmax(row)]);
  results[`${build} ${arch ? `${arch} ` : ''}${type}`] = {
    worst: `${(Math.max(...errs) * 100).toFixed(4)}%`, mean: `${((errs.reduce((a, b) => a + b, 0) / errs.length) * 100).toFixed(4)}%`,
    argmax: `${clear.filter(([, same]) => same).length}/${clear.length} (clear winners ${clear.filter(([c, same]) => c && same).length}/${clear.filter(([c]) => c).length})`,
    tol: `${tol * 100}%`,
  };
  assert.deepEqual([...compareRows(ours.prompt, ref.promptRows, tol, 'prompt'), ...compareRows(ours.step, ref.stepRows, tol, 'step')], []);
  // the same comparison shifted by one position fails: it tells the rows apart
  for (let i = 1; i < ours.prompt.length; i++)
    assert.ok(relRms(ours.prompt[i], ref.promptRows[i - 1]) > distinct, `our row ${i} is as close to llama.cpp's row ${i - 1}`);
}

/** What every llama.cpp reference must show before a comparison with it means anything. */
function checkReference(ref, minStddev, nVocab = nVocabSpm) {
  assert.equal(ref.nVocab, nVocab);
  assert.equal(ref.promptRows.length, ref.ids.length);
  assert.equal(ref.greedy.length, steps);
  for (const t of ref.greedy) assert.ok(Number.isInteger(t) && t >= 0 && t < ref.nVocab, `greedy token ${t}`);
  // its greedy choice is the argmax of the row it came from
  ref.stepRows.forEach((row, k) => { if (clearWinner(row)) assert.equal(argmax(row), ref.greedy[k], `step ${k}`); });
  // not trivially comparable: the rows have a real spread (not flat) and differ from position to
  // position far beyond the tolerances, so a comparison of flat or misaligned rows would fail
  const rows = [...ref.promptRows, ...ref.stepRows];
  for (const row of rows) assert.ok(stddev(row) > minStddev, `flat llama.cpp row: stddev ${stddev(row)}`);
  for (let i = 1; i < ref.promptRows.length; i++)
    assert.ok(relRms(ref.promptRows[i - 1], ref.promptRows[i]) > distinct, `prompt rows ${i - 1} and ${i} nearly equal`);
}

for (const type of types) {
  test(`llama.cpp (node-llama-cpp) loads synth mini ${type} and generates greedily`, async () => {
    const ref = await referenceOf(type);
    // the llama synth weights (std 0.02) give rows of stddev ≈ 0.32 that differ by 0.45–0.7 of a
    // row's stddev between neighbours, as random attention averages over the earlier positions
    checkReference(ref, 0.1);
    for (const build of builds) {
      const r = runWick(build, ['tokenize', '-m', fileOf(type), '-p', promptText]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), ref.ids, `${build} tokenizer`);
    }
  });

  for (const build of builds)
    test(`${build}: logits of synth mini ${type} match llama.cpp within ${toleranceFor(`synth-${type}`) * 100}%`, () => compareWithLlamaCpp(build, type));
}

// ---- the families ----

/*
 * What a family's distinctive step does to llama.cpp's own logits: each edit below switches one step
 * off (or changes it) in a copy of the f16 file, through metadata or tensors alone, and llama.cpp's
 * rows on the copy must move by more than `featureMoves` of a row's stddev somewhere — 50× the F16
 * tolerance and 2× the quantized one, so a forward pass that skips the step fails the comparison.
 * The synth weights were chosen for this (src/synth.c); measured with llama.cpp 80fb11ac the worst
 * rows move by 12% (smollm3's no-rope layer) to 127%. Steps no metadata edit can switch off
 * (qwen3's and olmo2's q/k norms, olmo2's post norms) are checked through their weights: replaced
 * by ones, the worst rows move by 38–69%.
 */
const featureMoves = 0.1;
const ones = (g, pattern) => { for (const t of g.tensors) if (pattern.test(t.name)) t.data = Buffer.from(new Float32Array(t.data.length / 4).fill(1).buffer); };
const renameArch = (g, from, to) => {
  for (const e of g.kv) {
    if (e.key === 'general.architecture') e.value = to;
    else if (e.key.startsWith(`${from}.`)) e.key = to + e.key.slice(from.length);
  }
};
/** Reverses the order of the taps (each run of k floats) of the F32 tensors whose names match. */
const reverseTaps = (g, pattern, k) => {
  for (const t of g.tensors) if (pattern.test(t.name)) {
    const v = new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.length));
    for (let i = 0; i < v.length; i += k) v.subarray(i, i + k).reverse();
    t.data = Buffer.from(v.buffer);
  }
};
const zeros = (g, pattern) => { for (const t of g.tensors) if (pattern.test(t.name)) t.data = Buffer.alloc(t.data.length); };
const featureEdits = {
  lfm2: {
    'with the convolution taps reversed': (g) => reverseTaps(g, /shortconv\.conv\.weight$/, 3),
    'with attn_q_norm/attn_k_norm weights of 1': (g) => ones(g, /attn_[qk]_norm/),
  },
  qwen35: {
    'with the convolution taps reversed': (g) => reverseTaps(g, /ssm_conv1d\.weight$/, 4),
    'with ssm_a of 0 (no decay)': (g) => zeros(g, /ssm_a$/),
    // attn_q holds per head its query rows then its gate rows: zeroed gates put sigmoid(0) = ½ on every output
    'with the attention output gate rows zeroed': (g) => {
      const hd = g.kv.find((e) => e.key === 'qwen35.attention.key_length').value;
      for (const t of g.tensors) if (/attn_q\.weight$/.test(t.name)) {
        const rowBytes = t.data.length / Number(t.ne[1]), data = Buffer.from(t.data);
        for (let r = 0; r < Number(t.ne[1]); r++) if (Math.floor(r / hd) % 2 === 1) data.fill(0, r * rowBytes, (r + 1) * rowBytes);
        t.data = data;
      }
    },
  },
  'granite-hybrid': {
    'with the convolution taps reversed': (g) => reverseTaps(g, /ssm_conv1d\.weight$/, 4),
    'with ssm_a of 0 (no decay)': (g) => zeros(g, /ssm_a$/),
    'with ssm_d of 0 (no skip)': (g) => zeros(g, /ssm_d$/),
    'with ssm_norm weights of 1': (g) => ones(g, /ssm_norm/),
    'without rope (rope.scaling.finetuned false, as Granite 4.0-H files)': (g) => setKv(g, 'granitehybrid.rope.scaling.finetuned', T.BOOL, false),
    'without residual_scale': (g) => dropKv(g, 'granitehybrid.residual_scale'),
  },
  llama3: { 'without rope_freqs.weight (Llama 3 rope factors)': (g) => { g.tensors = g.tensors.filter((t) => t.name !== 'rope_freqs.weight'); } },
  qwen3: { 'with attn_q_norm/attn_k_norm weights of 1': (g) => ones(g, /attn_[qk]_norm/) },
  qwen2vl: { 'without the attention biases (zeroed)': (g) => zeros(g, /attn_[qkv]\.bias$/) },
  qwen3vl: { 'with attn_q_norm/attn_k_norm weights of 1': (g) => ones(g, /attn_[qk]_norm/) },
  gemma2: {
    'without attn_logit_softcapping (llama.cpp then caps at 50)': (g) => dropKv(g, 'gemma2.attn_logit_softcapping'),
    'without final_logit_softcapping (then 30)': (g) => dropKv(g, 'gemma2.final_logit_softcapping'),
    'with a sliding window of 4096': (g) => setKv(g, 'gemma2.attention.sliding_window', T.U32, 4096),
  },
  gemma3: {
    'with a sliding window of 4096': (g) => setKv(g, 'gemma3.attention.sliding_window', T.U32, 4096),
    'with a sliding window one longer (13)': (g) => setKv(g, 'gemma3.attention.sliding_window', T.U32, 13),
    'with freq_base_swa = freq_base': (g) => setKv(g, 'gemma3.rope.freq_base_swa', T.F32, 1e6),
  },
  phi3: {
    'without rope.scaling.attn_factor': (g) => dropKv(g, 'phi3.rope.scaling.attn_factor'),
    'with the long rope factors in place of the short': (g) => {
      for (const t of g.tensors) t.name = { 'rope_factors_long.weight': 'rope_factors_short.weight', 'rope_factors_short.weight': 'rope_factors_long.weight' }[t.name] ?? t.name;
    },
  },
  smollm3: { 'as llama (rope on every fourth layer too)': (g) => renameArch(g, 'smollm3', 'llama') },
  granite: {
    'without embedding_scale': (g) => dropKv(g, 'granite.embedding_scale'),
    'without residual_scale': (g) => dropKv(g, 'granite.residual_scale'),
    'without attention.scale (then 1/sqrt(head size))': (g) => dropKv(g, 'granite.attention.scale'),
    'with logit_scale 16 for 8': (g) => setKv(g, 'granite.logit_scale', T.F32, 16),
  },
  mistral3: {
    'with linear rope scaling in place of YaRN': (g) => setKv(g, 'mistral3.rope.scaling.type', T.STRING, 'linear'),
    'without the query temperature': (g) => dropKv(g, 'mistral3.attention.temperature_scale'),
  },
  olmo2: {
    'with post_attention_norm/post_ffw_norm weights of 1': (g) => ones(g, /post_(attention|ffw)_norm/),
    'with attn_q_norm/attn_k_norm weights of 1': (g) => ones(g, /attn_[qk]_norm/),
  },
  gemma4: {
    // proj zeroed: each layer's per-layer embedding step adds rmsnorm(0) = 0
    'with the per-layer embeddings off (blk.*.proj zeroed)': (g) => zeros(g, /^blk\.\d+\.proj\.weight$/),
    // each KV-shared layer given its source layer's K (and V) weights, computing its own cache from its own input
    'with KV sharing off (the shared layers projecting K/V of their own)': (g) => {
      const kv = (k) => g.kv.find((e) => e.key === `gemma4.${k}`).value;
      const n = kv('block_count'), from = n - kv('attention.shared_kv_layers'), swa = kv('attention.sliding_window_pattern').items;
      for (let l = from; l < n; l++) {
        const src = from - (swa[l] ? 2 : 1);
        for (const t of g.tensors.filter((t) => new RegExp(`^blk\\.${src}\\.attn_(k|v|k_norm)\\.weight$`).test(t.name)))
          g.tensors.push({ ...t, name: t.name.replace(`blk.${src}.`, `blk.${l}.`) });
      }
      setKv(g, 'gemma4.attention.shared_kv_layers', T.U32, 0);
    },
    'without layer_output_scale': (g) => { g.tensors = g.tensors.filter((t) => !/layer_output_scale/.test(t.name)); },
    'without final_logit_softcapping': (g) => dropKv(g, 'gemma4.final_logit_softcapping'),
  },
  // llama.cpp fixes gemma3n's sparse layers (the first 10) and KV-shared ones (from the 20th) in its
  // graph whatever the file says: the sparse gate's check is wick's below
  gemma3n: {
    'with the per-layer embeddings off (blk.*.proj zeroed)': (g) => zeros(g, /^blk\.\d+\.proj\.weight$/),
    // a router of 0 gives coefficients of 0: no prediction, every stream corrected by the whole innovation
    'with AltUp\'s router zeroed': (g) => zeros(g, /altup_router\.weight$/),
    'with AltUp\'s prediction off (altup_predict_coef zeroed)': (g) => zeros(g, /altup_predict_coef/),
    'with AltUp\'s correction uniform (altup_correct_coef zeroed)': (g) => zeros(g, /altup_correct_coef/),
    // laurel_r zeroed: Laurel adds its input only, not its low-rank branch
    'with Laurel\'s low-rank branch off (laurel_r zeroed)': (g) => zeros(g, /laurel_r\.weight$/),
  },
};

const featureResults = [];
for (const { arch, quant, window } of families) {
  for (const type of ['f16', quant]) {
    test(`llama.cpp (node-llama-cpp) loads synth mini --arch ${arch} ${type} and generates greedily`, async () => {
      const ref = await referenceOf(type, arch);
      if (window) assert.ok(ref.ids.length > 3 * window, `prompt of ${ref.ids.length} tokens for a window of ${window}`);
      // the family weights aim at logits of stddev 3 (gemma2: 2.5 before its cap of 4, 2 after)
      checkReference(ref, 1, nVocabOf(arch));
    });
    for (const build of builds)
      test(`${build}: logits of synth mini --arch ${arch} ${type} match llama.cpp within ${toleranceFor(`synth-${type}`) * 100}%`, () => compareWithLlamaCpp(build, type, arch));
  }

  test(`${arch}: its distinctive steps move llama.cpp's logits by more than ${featureMoves * 100}% of a row's stddev`, async () => {
    const ref = await referenceOf('f16', arch);
    const original = readGguf(fileOf('f16', arch));
    const problems = [];
    for (const [what, edit] of Object.entries(featureEdits[arch])) {
      const g = { ...original, kv: original.kv.map((e) => ({ ...e })), tensors: original.tensors.map((t) => ({ ...t })) };
      edit(g);
      const file = path.join(tmp, `feature-${arch}.gguf`);
      fs.writeFileSync(file, writeGguf(g));
      const edited = await llamaCppRows(file, promptOf(arch), { greedySteps: 1, nVocab: nVocabOf(arch) });
      fs.unlinkSync(file);
      assert.deepEqual(edited.ids, ref.ids);
      const moved = Math.max(...ref.promptRows.map((row, i) => relRms(edited.promptRows[i], row)));
      featureResults.push(`${arch} ${what}: worst row moves ${(moved * 100).toFixed(1)}%`);
      if (!(moved > featureMoves)) problems.push(`${what}: the logits move by ${(moved * 100).toFixed(2)}% at most`);
    }
    assert.deepEqual(problems, []);
  });
}

// gemma4 and gemma3n have no file in ../shared, so engine.test.mjs's thread check is made here: 2
// threads give the logits of 1 bit for bit, in each build
for (const [arch, type] of [['gemma4', 'f16'], ['gemma4', 'q4_k_m'], ['gemma3n', 'f16'], ['gemma3n', 'q8_0']])
  test(`synth mini --arch ${arch} ${type}: 1 and 2 threads give identical logits (native and wasm)`, async () => {
    const ref = await referenceOf(type, arch);
    const run = (build, threads) => runWickAsync(build, ['logits', '-m', fileOf(type, arch), '--tokens', ref.ids.join(','),
      '--steps', String(steps), '--follow', ref.greedy.join(','), '--threads', String(threads)]);
    for (const build of builds) {
      const [one, two] = await Promise.all([run(build, 1), run(build, 2)]);
      assert.equal(one.code, 0, one.stderr);
      assert.equal(two.code, 0, two.stderr);
      assert.ok(one.stdout === two.stdout, `${build}: the logits differ`);
    }
  });

// gemma3n's sparse FFN gate: llama.cpp applies it to the first 10 layers whatever the file says,
// so no edit turns it off there. wick follows activation_sparsity_scale: set to −inf everywhere (the
// converter's value for a dense layer) wick skips the step, and its logits must then land far from
// llama.cpp's on the file, in both builds — the comparison above tells a forward pass with the step
// from one without it.
test(`gemma3n: wick without the sparse FFN gate lands more than ${featureMoves * 100}% from llama.cpp's logits`, async (t) => {
  const ref = await referenceOf('f16', 'gemma3n');
  const g = readGguf(fileOf('f16', 'gemma3n'));
  const key = g.kv.find((e) => e.key === 'gemma3n.activation_sparsity_scale');
  assert.ok(key.value.items.slice(0, 10).every(Number.isFinite), 'the first 10 layers are sparse in the synth file');
  key.value.items = key.value.items.map(() => -Infinity);
  const file = path.join(tmp, 'dense-gemma3n.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const args = ['logits', '-m', file, '--tokens', ref.ids.join(','), '--steps', '1', '--threads', '1'];
  for (const [build, r] of builds.map((build) => [build, runWick(build, args)])) {
    assert.equal(r.code, 0, `${build}: ${r.stderr}`);
    const rows = JSON.parse(r.stdout).prompt_logits.map(centred);
    const moved = Math.max(...rows.map((row, i) => relRms(row, ref.promptRows[i])));
    featureResults.push(`gemma3n without the sparse gate (wick ${build}): worst row ${(moved * 100).toFixed(1)}% from llama.cpp's`);
    assert.ok(moved > featureMoves, `${build}: ${(moved * 100).toFixed(2)}% only`);
  }
  fs.unlinkSync(file);
});

/** Both builds' logits for an edited F16 file (the prompt, then llama.cpp's greedy tokens) against
 * llama.cpp's rows `ref` of the same file, within the F16 tolerance; each build's worst row. */
async function matchEditedFile(file, ref) {
  const args = ['logits', '-m', file, '--tokens', ref.ids.join(','), '--steps', String(steps), '--follow', ref.greedy.join(','), '--threads', '1'];
  const runs = await Promise.all(builds.map((build) => runWickAsync(build, args)));
  const tol = toleranceFor('synth-f16');
  return runs.map((r, i) => {
    assert.equal(r.code, 0, `${builds[i]}: ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    const ours = { prompt: out.prompt_logits.map(centred), step: out.greedy_step_logits.map(centred) };
    assert.deepEqual([...compareRows(ours.prompt, ref.promptRows, tol, 'prompt'), ...compareRows(ours.step, ref.stepRows, tol, 'step')], []);
    const worst = Math.max(...ours.prompt.map((row, k) => relRms(row, ref.promptRows[k])), ...ours.step.map((row, k) => relRms(row, ref.stepRows[k])));
    return `${builds[i]}: worst row ${(worst * 100).toFixed(4)}%`;
  });
}

// ---- YaRN in a family whose loader reads only its factor and original context (Qwen3's files) ----
// factor 4 over an original context of 16: the ramp, and the magnitude correction 1 + 0.1·ln 4
// that mistral3's log multiplier cancels, both act within the prompt
test('qwen3 with rope.scaling.type yarn: both builds give llama.cpp\'s logits, far from the file without it', async (t) => {
  const g = readGguf(fileOf('f16', 'qwen3'));
  setKv(g, 'qwen3.rope.scaling.type', T.STRING, 'yarn');
  setKv(g, 'qwen3.rope.scaling.factor', T.F32, 4);
  setKv(g, 'qwen3.rope.scaling.original_context_length', T.U32, 16);
  const file = path.join(tmp, 'yarn-qwen3.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const ref = await llamaCppRows(file, familyPrompt);
  const plain = await referenceOf('f16', 'qwen3');
  const moved = Math.max(...plain.promptRows.map((row, i) => relRms(row, ref.promptRows[i])));
  assert.ok(moved > featureMoves, `YaRN moves llama.cpp's rows by ${(moved * 100).toFixed(1)}% only`);
  for (const line of await matchEditedFile(file, ref)) t.diagnostic(`${line} (YaRN moves llama.cpp's by ${(moved * 100).toFixed(1)}%)`);
});

// ---- Granite 4.0-H's own files rotate nothing (rope.scaling.finetuned false: NoPE attention) ----
test('granite-hybrid with rope.scaling.finetuned false (NoPE, as Granite 4.0-H files): both builds give llama.cpp\'s logits', async (t) => {
  const g = readGguf(fileOf('f16', 'granite-hybrid'));
  setKv(g, 'granitehybrid.rope.scaling.finetuned', T.BOOL, false);
  const file = path.join(tmp, 'nope-granite-hybrid.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const ref = await llamaCppRows(file, familyPrompt);
  for (const line of await matchEditedFile(file, ref)) t.diagnostic(line);
});

// ---- a tied output: each family's file without output.weight (Phi-4-mini is such a phi3 file) ----
// llama.cpp then takes token_embd.weight as the output projection, or refuses the file where the
// family requires its own (olmo2); wick must do the same: the same logits, or an error naming it.
for (const arch of [undefined, ...families.map((f) => f.arch)]) {
  const name = arch ?? 'llama';
  test(`${name} without output.weight: wick ties the output to token_embd as llama.cpp does, or refuses as it does`, async (t) => {
    const g = readGguf(fileOf('f16', arch));
    if (!g.tensors.some((e) => e.name === 'output.weight')) {
      // tied already: the comparisons above are this file's
      assert.ok(!['llama3', 'phi3', 'olmo2', 'qwen35'].includes(name), `the synth ${name} file has its own output.weight`);
      return;
    }
    g.tensors = g.tensors.filter((e) => e.name !== 'output.weight');
    const file = path.join(tmp, `tied-${name}.gguf`);
    fs.writeFileSync(file, writeGguf(g));
    // the synth embeddings are not scaled for an output: tied, some families' logits spread so far
    // that llama.cpp's probabilities (the reference's only way out) underflow. The final norm's
    // weights (F32) are scaled so that the rows have a stddev of about 3, as the untied ones do.
    const untied = await referenceOf('f16', arch);
    const probe = runWick('native', ['logits', '-m', file, '--tokens', untied.ids.join(','), '--steps', '1']);
    if (probe.code !== 0) {
      // wick refuses: so must llama.cpp, for the same reason, and the wasm build as wick does
      assert.match(probe.stderr, /tensor output\.weight is missing/);
      await assert.rejects(llamaCppRows(file, promptOf(arch), { nVocab: nVocabOf(arch) }), `llama.cpp loads ${name} without output.weight and wick refuses it`);
      const wasm = runWick('wasm', ['logits', '-m', file, '--tokens', untied.ids.join(','), '--steps', '1']);
      assert.notEqual(wasm.code, 0);
      assert.match(wasm.stderr, /tensor output\.weight is missing/);
      t.diagnostic(`${name}: refused by llama.cpp and by wick`);
      return;
    }
    const spread = Math.max(...JSON.parse(probe.stdout).prompt_logits.map(stddev));
    if (spread > 4) {
      const norm = g.tensors.find((e) => e.name === 'output_norm.weight' || e.name === 'token_embd_norm.weight');
      assert.equal(norm?.type, 0, 'the final norm is an F32 tensor');
      const w = new Float32Array(norm.data.buffer.slice(norm.data.byteOffset, norm.data.byteOffset + norm.data.length));
      for (let i = 0; i < w.length; i++) w[i] *= 3 / spread;
      norm.data = Buffer.from(w.buffer);
      fs.writeFileSync(file, writeGguf(g));
    }
    const ref = await llamaCppRows(file, promptOf(arch), { nVocab: nVocabOf(arch) });
    const lines = await matchEditedFile(file, ref);
    // the tie is what the comparison sees: the untied file's rows are far from the tied ones
    assert.ok(Math.max(...untied.promptRows.map((row, k) => relRms(row, ref.promptRows[k]))) > distinct, 'output.weight made no difference');
    for (const line of lines) t.diagnostic(`${name} tied, ${line}`);
  });
}

test('the measured agreement (diagnostics)', async (t) => {
  const cases = [...types.map((type) => [type]), ...families.flatMap(({ arch, quant }) => [['f16', arch], [quant, arch]])];
  for (const [type, arch] of cases) {
    const ref = await referenceOf(type, arch).catch(() => null);
    if (!ref) continue;
    const s = [...ref.promptRows, ...ref.stepRows].map(stddev);
    t.diagnostic(`llama.cpp ${arch ? `${arch} ` : ''}${type}: row stddev ${Math.min(...s).toFixed(3)}…${Math.max(...s).toFixed(3)}, greedy ${JSON.stringify(ref.greedy)} ${JSON.stringify(ref.text)}`);
  }
  for (const line of featureResults) t.diagnostic(line);
  for (const [key, r] of Object.entries(results))
    t.diagnostic(`${key}: RMS/stddev worst ${r.worst}, mean ${r.mean} (tolerance ${r.tol}); argmax agrees ${r.argmax}`);
});
