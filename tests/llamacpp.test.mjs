// tests/llamacpp.test.mjs — files written by `wick synth` against llama.cpp itself: each type
// (f16, q8_0, q4_0, q4_k_m, shape mini) loads and generates in llama.cpp through node-llama-cpp
// (its prebuilt CPU binary, never a download or a build), and the logits of both wick builds
// (native and wasm) agree with llama.cpp's within the tolerances of ../shared/README.md.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runWick, shared, compareRows, relRms, argmax, clearWinner, toleranceFor } from './helpers.mjs';

const builds = ['native', 'wasm'];
const types = ['f16', 'q8_0', 'q4_0', 'q4_k_m'];
const vocab = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf');
const promptText = 'The quick brown fox jumps over the lazy dog, and then it sleeps.';
const nVocabSpm = 32000;  // the llama SPM vocabulary's size
const steps = 4;  // greedy steps after the prompt (the first is the last prompt row, as in cmd_logits)
const distinct = 0.3;  // RMS/stddev by which rows of different positions differ at least (≥ 6× any tolerance)

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-llamacpp-'));
const synth = (type, file) => runWick('native', ['synth', '--shape', 'mini', '--type', type, '-o', file, '--vocab', vocab]);

/** The path of the synth mini file of a type, written on first use. */
function fileOf(type) {
  const file = path.join(tmp, `synth-mini-${type}.gguf`);
  if (!fs.existsSync(file)) {
    const r = synth(type, file);
    assert.equal(r.code, 0, `wick synth --type ${type}: ${r.stderr}`);
  }
  return file;
}

// ---- llama.cpp through node-llama-cpp ----

let llamaPromise = null;
const handles = [];  // native objects to dispose before the process can exit (contexts, models)

function getNativeLlama() {
  // gpu: false, build: 'never' — the prebuilt linux CPU binary of @node-llama-cpp or an error
  // (which fails the tests that need it: no silent skip), never a download or a compilation
  llamaPromise ??= import('node-llama-cpp')
    .then(({ getLlama, LlamaLogLevel }) => getLlama({
      gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error,
    }))
    .catch((e) => { throw new Error(`node-llama-cpp 3.21.1 (devDependency: npm ci) could not load its prebuilt CPU binary: ${e.message}`); });
  return llamaPromise;
}

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
const references = new Map();
function referenceOf(type) {
  if (!references.has(type)) references.set(type, (async () => {
    const llama = await getNativeLlama();
    const model = await llama.loadModel({ modelPath: fileOf(type), gpuLayers: 0 });
    handles.push(model);
    const context = await model.createContext({ contextSize: 64, batchSize: 64, threads: 1, sequences: 1 });
    handles.push(context);
    const ids = [model.tokens.bos, ...model.tokenize(promptText, false)];
    const sequence = context.getSequence();
    const next = { generateNext: { probabilities: true, token: true } };
    const out = await sequence.controlledEvaluate(ids.map((t) => [t, next]));
    const promptRows = out.map((o) => logProbRow(o.next.probabilities, nVocabSpm));
    const greedy = [out.at(-1).next.token];
    const stepRows = [promptRows.at(-1)];
    for (let k = 1; k < steps; k++) {
      const [o] = await sequence.controlledEvaluate([[greedy.at(-1), next]]);
      stepRows.push(logProbRow(o.next.probabilities, nVocabSpm));
      greedy.push(o.next.token);
    }
    const text = model.detokenize(greedy);
    await context.dispose();
    await model.dispose();
    return { ids, greedy, text, nVocab: nVocabSpm, promptRows: promptRows.map(centred), stepRows: stepRows.map(centred) };
  })());
  return references.get(type);
}

after(async () => {
  for (const h of handles.reverse()) if (!h.disposed) await h.dispose();
  if (llamaPromise) await (await llamaPromise.catch(() => null))?.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// ---- the tests ----

test('wick synth writes a mini file of each type, the same bytes every time', () => {
  for (const type of types) assert.ok(fs.statSync(fileOf(type)).size > 1e6, type);
  const again = path.join(tmp, 'again.gguf');
  assert.equal(synth('q4_0', again).code, 0);
  assert.ok(fs.readFileSync(again).equals(fs.readFileSync(fileOf('q4_0'))), 'same shape, type and seed gave different bytes');
  fs.unlinkSync(again);
});

const results = {};  // measured figures, printed at the end
for (const type of types) {
  test(`llama.cpp (node-llama-cpp) loads synth mini ${type} and generates greedily`, async () => {
    const ref = await referenceOf(type);
    assert.equal(ref.nVocab, 32000);
    assert.equal(ref.promptRows.length, ref.ids.length);
    assert.equal(ref.greedy.length, steps);
    for (const t of ref.greedy) assert.ok(Number.isInteger(t) && t >= 0 && t < ref.nVocab, `greedy token ${t}`);
    // its greedy choice is the argmax of the row it came from
    ref.stepRows.forEach((row, k) => { if (clearWinner(row)) assert.equal(argmax(row), ref.greedy[k], `step ${k}`); });
    // the same prompt ids in wick's tokenizer (the llama SPM vocab the file carries)
    for (const build of builds) {
      const r = runWick(build, ['tokenize', '-m', fileOf(type), '-p', promptText]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), ref.ids, `${build} tokenizer`);
    }
    // Not trivially comparable: the rows have a real spread (stddev ≈ 0.32 with the synth weights,
    // not flat) and differ from position to position — by 0.45–0.7 of a row's stddev between
    // neighbours, as random attention averages over the earlier positions — far beyond the
    // tolerances, so a comparison of flat or misaligned rows would fail.
    const rows = [...ref.promptRows, ...ref.stepRows];
    for (const row of rows) assert.ok(stddev(row) > 0.1, `flat llama.cpp row: stddev ${stddev(row)}`);
    for (let i = 1; i < ref.promptRows.length; i++)
      assert.ok(relRms(ref.promptRows[i - 1], ref.promptRows[i]) > distinct, `prompt rows ${i - 1} and ${i} nearly equal`);
  });

  for (const build of builds) {
    test(`${build}: logits of synth mini ${type} match llama.cpp within ${toleranceFor(`synth-${type}`) * 100}%`, async () => {
      const ref = await referenceOf(type);
      const r = runWick(build, ['logits', '-m', fileOf(type), '--tokens', ref.ids.join(','), '--steps', String(steps),
        '--follow', ref.greedy.join(','), '--threads', '1']);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.n_vocab, ref.nVocab);
      const ours = { prompt: out.prompt_logits.map(centred), step: out.greedy_step_logits.map(centred) };
      const tol = toleranceFor(`synth-${type}`);
      const all = [...ours.prompt, ...ours.step], refs = [...ref.promptRows, ...ref.stepRows];
      const errs = all.map((row, i) => relRms(row, refs[i]));
      const clear = refs.map((row, i) => [clearWinner(row), argmax(all[i]) === argmax(row)]);
      results[`${build} ${type}`] = {
        worst: `${(Math.max(...errs) * 100).toFixed(4)}%`, mean: `${((errs.reduce((a, b) => a + b, 0) / errs.length) * 100).toFixed(4)}%`,
        argmax: `${clear.filter(([, same]) => same).length}/${clear.length} (clear winners ${clear.filter(([c, same]) => c && same).length}/${clear.filter(([c]) => c).length})`,
        tol: `${tol * 100}%`,
      };
      assert.deepEqual([...compareRows(ours.prompt, ref.promptRows, tol, 'prompt'), ...compareRows(ours.step, ref.stepRows, tol, 'step')], []);
      // the same comparison shifted by one position fails: it tells the rows apart
      for (let i = 1; i < ours.prompt.length; i++)
        assert.ok(relRms(ours.prompt[i], ref.promptRows[i - 1]) > distinct, `our row ${i} is as close to llama.cpp's row ${i - 1}`);
    });
  }
}

test('the measured agreement (diagnostics)', async (t) => {
  for (const type of types) {
    const ref = await referenceOf(type);
    const s = [...ref.promptRows, ...ref.stepRows].map(stddev);
    t.diagnostic(`llama.cpp ${type}: row stddev ${Math.min(...s).toFixed(3)}…${Math.max(...s).toFixed(3)}, greedy ${JSON.stringify(ref.greedy)} ${JSON.stringify(ref.text)}`);
  }
  for (const [key, r] of Object.entries(results))
    t.diagnostic(`${key}: RMS/stddev worst ${r.worst}, mean ${r.mean} (tolerance ${r.tol}); argmax agrees ${r.argmax}`);
});
