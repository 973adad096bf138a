// tests/kvquant.test.mjs — the quantized KV cache (kvType q8_0 / q4_0) against llama.cpp itself:
//  - for each family in ../shared (the mini models of its README), llama.cpp (node-llama-cpp's
//    prebuilt libllama, run here at test time) evaluates the reference prompt as one batch and 8
//    greedy steps with its cache in F16, F32, Q8_0 and Q4_0 (every kvType wick offers; type_k = type_v; flash attention on, which
//    llama.cpp needs for a quantized V; its Hadamard rotations of a quantized cache included), and
//    both wick builds with the same cache type land within the shared tolerance for quantized
//    arithmetic (../shared/README.md: 5%) of llama.cpp's logits. llama.cpp's own deviation (its
//    logits when every weight moves by one F16 rounding step) is measured beside it and reported:
//    with a Q4_0 cache it is 5.2–12% on llama3, gemma2, gemma3, phi3, smollm3 and granite, so a
//    cache rounded to 4 bits turns differences of the order of an F16 rounding in a key or value
//    into whole steps of a block (an element that lay near the middle of two steps goes the other
//    way), and the layers after carry them on. wick lands within 5% because it rounds where
//    llama.cpp's CPU backend rounds: the activations of F16/BF16 weights to those types
//    (matmul.c, WICK_TYPE_F32_H) and GELU's input and output to F16 (elementwise.h gelu_f16).
//    Without those roundings the worst Q4_0 rows were 4.6–11.3% (llama3, phi3, smollm3, gemma3,
//    gemma2); with them (2026-12-03, AMD EPYC, llama.cpp's zen4 variant): smollm3 4.15%, gemma3
//    3.77%, gemma2 1.81%, every other family below 0.7%. llama.cpp's own CPU variants differ from
//    one another by up to 2.4% here (haswell, sse42 against zen4; icelake equals zen4);
//  - a knock-out: on the same files Q4_0's logits lie farther from F16's than Q8_0's do, and each
//    moves them at all (the cache type is really in effect); llama.cpp's Q4_0 rows differ from
//    its F16 rows (its quantized cache was in effect too);
//  - the KV bytes of a 4096-token context: at most 54% (Q8_0) and 29% (Q4_0) of F16's;
//  - the sliding-window rings, the shift and the trim under both types, native and wasm, 1 and 2
//    threads (test_context's kvquant checks run the C side; here the CLI's logits agree across
//    builds and thread counts bit for bit).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { shared, relRms, argmax, clearWinner, nativeCli, wasmCli, runWick } from './helpers.mjs';
import { nativeLlama, disposeNativeLlama } from './llama-native.mjs';
import { readGguf, writeGguf } from './gguf.mjs';

const builds = ['native', 'wasm'];
const kvTypes = ['q8_0', 'q4_0'];
// every cache type wick offers is compared with llama.cpp's cache in the same type
const comparedKvTypes = ['f16', 'f32', ...kvTypes];
const steps = 8;  // greedy steps after the prompt (the first is the last prompt row)
// the quantized cache is quantized arithmetic: the shared tolerance of the quantized types
const tol = 0.05;
const models = path.join(shared, 'models');
// one file of each family in ../shared, its F16 (or F32) weights, so that the cache is the only rounding that moves far
const families = [
  ['llama', 'mini/mini-f16'], ['qwen2', 'mini/mini-qwen2-f32'], ['llama3', 'families/mini-llama3-f16'],
  ['qwen3', 'families/mini-qwen3-f16'], ['gemma2', 'families/mini-gemma2-f16'], ['gemma3', 'families/mini-gemma3-f16'],
  ['phi3', 'families/mini-phi3-f16'], ['smollm3', 'families/mini-smollm3-f16'], ['granite', 'families/mini-granite-f16'],
  ['olmo2', 'families/mini-olmo2-f16'], ['lfm2', 'families/mini-lfm2-f16'], ['qwen35', 'families/mini-qwen35-f16'],
];
const fileOf = (rel) => path.join(models, `${rel}.gguf`);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-kvquant-'));

/** The file with each F16 weight moved one step of its last mantissa bit (F32: by 2^-11 of it),
 * the direction drawn per element from a fixed sequence: llama.cpp's inputs moved by about the
 * rounding of an F16 file, to see how far its own logits go then. */
function perturbedFileOf(rel) {
  const out = path.join(tmp, `${path.basename(rel)}-moved.gguf`);
  if (fs.existsSync(out)) return out;
  const g = readGguf(fileOf(rel));
  let seed = 12345;
  const bit = () => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed >>> 16) & 1; };
  for (const t of g.tensors) {
    if (t.ne.length < 2 || !/\.weight$/.test(t.name)) continue;
    const data = Buffer.from(t.data);
    if (t.type === 1) for (let i = 0; i < data.length; i += 2) data.writeUInt16LE(data.readUInt16LE(i) ^ bit(), i);
    else if (t.type === 0) for (let i = 0; i < data.length; i += 4) data.writeFloatLE(data.readFloatLE(i) * (1 + (bit() ? 1 : -1) * 2 ** -11), i);
    t.data = data;
  }
  fs.writeFileSync(out, writeGguf(g));
  return out;
}
const referenceOf = (rel) => JSON.parse(fs.readFileSync(path.join(shared, 'reference', `${path.basename(rel)}.json`), 'utf8'));

const handles = [];
after(async () => {
  for (const h of handles.reverse()) if (!h.disposed) await h.dispose();
  await disposeNativeLlama();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function centred(row) {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  return row.map((v) => v - mean);
}

// llama.cpp's sampler chain at this temperature (top-k, top-p and min-p off): the softmax of
// logits / T, which some of ../shared's files (qwen2, qwen3: rows of a wide spread) need so that
// no probability underflows in F32
const temperature = 4;
const samplerOptions = { temperature, topK: 0, topP: 1, minP: 0, seed: 1 };

/** T · log-probabilities of a full-vocabulary Map<token, p> as a row indexed by token id: the logits less a constant. */
function logitRow(probabilities, nVocab) {
  assert.equal(probabilities.size, nVocab, 'llama.cpp returned probabilities for part of the vocabulary');
  const row = new Array(nVocab);
  for (const [t, p] of probabilities) {
    assert.ok(p > 0, `llama.cpp's probability of token ${t} underflowed to ${p}`);
    row[t] = temperature * Math.log(p);
  }
  return row;
}

/*
 * llama.cpp's rows with its cache in a type: the prompt ids as one batch, a row per position, then
 * greedy steps (the argmax of each row, fed back). As in tests/llamacpp.test.mjs, node-llama-cpp
 * gives no raw logits but the probabilities after its sampler chain, here softmax(logit / T), so
 * T · log p = logit − T · logsumexp, compared centred.
 */
const llamaRuns = new Map();
function llamaCppRows(rel, kvType, { file = fileOf(rel), follow = null } = {}) {
  const key = `${file} ${kvType}`;
  if (!llamaRuns.has(key)) llamaRuns.set(key, (async () => {
    const ref = referenceOf(rel);
    const llama = await nativeLlama();
    const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
    handles.push(model);
    const type = kvType.toUpperCase();
    const context = await model.createContext({ contextSize: 64, batchSize: 64, threads: 1, sequences: 1, flashAttention: true,
      experimentalKvCacheKeyType: type, experimentalKvCacheValueType: type });
    handles.push(context);
    const ids = ref.prompt_tokens, nVocab = ref.n_vocab;
    const sequence = context.getSequence();
    const next = { generateNext: { probabilities: true, options: samplerOptions } };
    const out = await sequence.controlledEvaluate(ids.map((t) => [t, next]));
    const promptRows = out.map((o) => logitRow(o.next.probabilities, nVocab));
    // the greedy tokens, or those of another run (to compare the rows of the same tokens)
    const greedy = [follow ? follow[0] : argmax(promptRows.at(-1))];
    const stepRows = [promptRows.at(-1)];
    for (let k = 1; k < steps; k++) {
      const [o] = await sequence.controlledEvaluate([[greedy.at(-1), next]]);
      stepRows.push(logitRow(o.next.probabilities, nVocab));
      greedy.push(follow ? follow[k] : argmax(stepRows.at(-1)));
    }
    await context.dispose();
    await model.dispose();
    return { ids, greedy, nVocab, promptRows: promptRows.map(centred), stepRows: stepRows.map(centred) };
  })());
  return llamaRuns.get(key);
}

/** runWick without blocking: {code, stdout, stderr}. */
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

/** One build's centred rows for a file with a cache type: the prompt as one batch, then `follow` one at a time. */
async function wickRows(build, rel, kvType, follow, threads = 1) {
  const ids = referenceOf(rel).prompt_tokens;
  const r = await runWickAsync(build, ['logits', '-m', fileOf(rel), '--tokens', ids.join(','), '--steps', String(steps),
    '--follow', follow.join(','), '--threads', String(threads), '--kv', kvType]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  return { raw: r.stdout, prompt: out.prompt_logits.map(centred), step: out.greedy_step_logits.map(centred) };
}

const results = {};

const rowsOf = (r) => [...r.promptRows ?? r.prompt, ...r.stepRows ?? r.step];
const pct = (x) => `${(x * 100).toFixed(3)}%`;

for (const [family, rel] of families)
  for (const kvType of comparedKvTypes)
    test(`${family}: both builds' logits with a ${kvType} cache are within ${tol * 100}% of llama.cpp's with its ${kvType} cache`, async () => {
      const ref = await llamaCppRows(rel, kvType);
      // rows of a real spread that differ from position to position (a comparison of misaligned rows fails)
      for (let i = 1; i < ref.promptRows.length; i++)
        assert.ok(relRms(ref.promptRows[i - 1], ref.promptRows[i]) > 0.3, `llama.cpp's prompt rows ${i - 1} and ${i} nearly equal`);
      // llama.cpp's own deviation (reported, and for the argmax check): its rows for the same tokens
      // with every weight moved by an F16 rounding step
      const moved = await llamaCppRows(rel, kvType, { file: perturbedFileOf(rel), follow: ref.greedy });
      const own = Math.max(...rowsOf(moved).map((row, j) => relRms(row, rowsOf(ref)[j])));
      const bound = tol;
      const runs = await Promise.all(builds.map((b) => wickRows(b, rel, kvType, ref.greedy)));
      for (const [i, build] of builds.entries()) {
        const errs = rowsOf(runs[i]).map((row, j) => relRms(row, rowsOf(ref)[j]));
        results[`${build} ${family} ${kvType}`] = `worst ${pct(Math.max(...errs))}, mean ${pct(errs.reduce((a, b) => a + b, 0) / errs.length)}; llama.cpp's own ${pct(own)}, bound ${pct(bound)}`;
        const problems = errs.flatMap((e, j) => (e <= bound ? [] : [`${build} row ${j}: ${pct(e)} > ${pct(bound)}`]));
        // the argmax agrees wherever llama.cpp's row has a clear winner that its own moved run keeps
        rowsOf(ref).forEach((row, j) => {
          if (clearWinner(row) && argmax(rowsOf(moved)[j]) === argmax(row) && argmax(rowsOf(runs[i])[j]) !== argmax(row))
            problems.push(`${build} row ${j}: argmax ${argmax(rowsOf(runs[i])[j])}, llama.cpp's ${argmax(row)}`);
        });
        assert.deepEqual(problems, []);
      }
    });

// the knock-out: the cache type is in effect, and the coarser type moves the logits farther
test('the quantized caches move the logits from F16\'s, Q4_0 farther than Q8_0 (each family)', async () => {
  const problems = [];
  await Promise.all(families.map(async ([family, rel]) => {
    const follow = referenceOf(rel).greedy_tokens.slice(0, steps);
    const [f16, q8, q4] = await Promise.all(['f16', 'q8_0', 'q4_0'].map((t) => wickRows('native', rel, t, follow)));
    const dist = (a) => Math.max(...a.prompt.map((row, i) => relRms(row, f16.prompt[i])));
    const d8 = dist(q8), d4 = dist(q4);
    results[`knock-out ${family}`] = `q8_0 ${(d8 * 100).toFixed(3)}%, q4_0 ${(d4 * 100).toFixed(3)}% from f16`;
    if (!(d8 > 1e-4)) problems.push(`${family}: q8_0 leaves the logits where f16 has them (${d8})`);
    if (!(d4 > d8)) problems.push(`${family}: q4_0 (${d4}) is not farther from f16 than q8_0 (${d8})`);
  }));
  assert.deepEqual(problems, []);
});

// the same knock-out on llama.cpp's side: its rows with a Q4_0 cache are not its F16 rows (its
// quantized cache was in effect, so that the comparisons above compare quantized caches)
test('llama.cpp\'s own rows with a q4_0 cache differ from its rows with an f16 cache (each family)', async () => {
  const problems = [];
  for (const [family, rel] of families) {
    const f16 = await llamaCppRows(rel, 'f16');
    const q4 = await llamaCppRows(rel, 'q4_0');
    const d4 = Math.max(...q4.promptRows.map((row, i) => relRms(row, f16.promptRows[i])));
    results[`llama.cpp knock-out ${family}`] = `q4_0 ${pct(d4)} from f16`;
    if (!(d4 > 1e-3)) problems.push(`${family}: llama.cpp's q4_0 rows are its f16 rows (${d4})`);
  }
  assert.deepEqual(problems, []);
});

// a sliding-window model (gemma3, window 12 on 5 of 6 layers) with rings far smaller than the
// context, and a hybrid, at 1 and 2 threads, native and wasm: bit for bit the same logits
for (const kvType of kvTypes)
  test(`${kvType} cache: gemma3 (sliding rings) and lfm2 give the same logits natively and in wasm, at 1 and 2 threads`, async () => {
    for (const rel of ['families/mini-gemma3-f16', 'families/mini-lfm2-f16']) {
      const follow = referenceOf(rel).greedy_tokens.slice(0, steps);
      const runs = await Promise.all([['native', 1], ['native', 2], ['wasm', 1], ['wasm', 2]].map(([b, t]) => wickRows(b, rel, kvType, follow, t)));
      for (const r of runs.slice(1)) assert.ok(r.raw === runs[0].raw, `${rel}: logits differ between builds or thread counts`);
    }
  });

test('KV bytes at a 4096-token context: q8_0 at most 54% and q4_0 at most 29% of f16\'s, as wick_kv_bytes and the fit check count them', async () => {
  await import('../wasm_glue/gguf-header.js');
  const { WickGguf } = globalThis;
  for (const rel of ['mini/mini-f16', 'families/mini-gemma3-f16', 'families/mini-qwen35-f16']) {
    const file = fileOf(rel);
    const { metadata } = WickGguf.parseHeader(new Uint8Array(fs.readFileSync(file)));
    const bytes = {}, fit = {};
    for (const t of ['f16', 'q8_0', 'q4_0']) {
      const r = runWick('native', ['info', '-m', file, '--ctx', '4096', '--kv', t]);
      assert.equal(r.code, 0, r.stderr);
      bytes[t] = JSON.parse(r.stdout).kv_bytes;
      fit[t] = WickGguf.checkFits({ fileBytes: fs.statSync(file).size, metadata, contextSize: 4096, kvType: t }).kvBytes;
    }
    results[`kv bytes at 4096, ${path.basename(rel)}`] = bytes;
    assert.ok(bytes.f16 > 0, rel);
    assert.ok(bytes.q8_0 <= 0.54 * bytes.f16, `${rel} q8_0: ${bytes.q8_0} of ${bytes.f16}`);
    assert.ok(bytes.q4_0 <= 0.29 * bytes.f16, `${rel} q4_0: ${bytes.q4_0} of ${bytes.f16}`);
    // exactly the blocks: 34 and 18 bytes per 32 values against 64
    assert.equal(bytes.q8_0, bytes.f16 / 64 * 34, rel);
    assert.equal(bytes.q4_0, bytes.f16 / 64 * 18, rel);
    assert.deepEqual(fit, bytes, `${rel}: the fit check's count`);
  }
  // keys and values apart: q8_0 keys and f32 values
  const r = runWick('native', ['info', '-m', fileOf('mini/mini-f16'), '--ctx', '4096', '--kv-k', 'q8_0', '--kv-v', 'f32']);
  assert.equal(r.code, 0, r.stderr);
  const f16 = 2 * 4096 * 2 * 128 * 2;  // 2 layers, K and V, 4 KV heads x 32, 2 bytes
  assert.equal(JSON.parse(r.stdout).kv_bytes, f16 / 2 / 64 * 34 + f16 / 2 * 2);
});

test('Wick.load: kvType q8_0 / q4_0 and kvTypeK / kvTypeV reach the worker\'s context (kvBytes); the GPU path refuses them; bad types and head sizes are refused', async () => {
  const { Wick } = await import('../wasm_glue/wick.mjs');
  const file = fileOf('mini/mini-f16');
  const f16 = 2 * 4096 * 2 * 128 * 2;  // 2 layers, K and V, 4 KV heads x 32, 2 bytes
  const cases = [
    [{ kvType: 'q8_0' }, f16 / 64 * 34, 'q8_0', 'q8_0'],
    [{ kvType: 'q4_0' }, f16 / 64 * 18, 'q4_0', 'q4_0'],
    [{ kvTypeK: 'q4_0', kvTypeV: 'f32' }, f16 / 2 / 64 * 18 + f16, 'q4_0', 'f32'],
    [{ kvType: 'q8_0', kvTypeV: 'f16' }, f16 / 2 / 64 * 34 + f16 / 2, 'q8_0', 'f16'],
  ];
  for (const [options, bytes, k, v] of cases) {
    const engine = await Wick.load(file, { threads: 1, contextSize: 4096, device: 'auto', ...options });
    try {
      assert.equal(engine.info.kvBytes, bytes, JSON.stringify(options));
      assert.equal(engine.info.kvTypeK, k);
      assert.equal(engine.info.kvTypeV, v);
      // device 'auto' stays on the CPU and says why
      assert.equal(engine.device.type, 'cpu');
      assert.match(engine.device.reason, /KV cache runs on the CPU only/);
    } finally {
      await engine.unload();
    }
  }
  await assert.rejects(Wick.load(file, { threads: 1, device: 'gpu', kvType: 'q4_0' }), (e) => e.code === 'E_UNSUPPORTED' && /q4_0 KV cache runs on the CPU only/.test(e.message));
  await assert.rejects(Wick.load(file, { threads: 1, kvTypeV: 'q5_0' }), { code: 'E_INVALID_ARG' });
  // stories260K's heads are 8 wide: no whole blocks of 32
  await assert.rejects(Wick.load(path.join(models, 'stories260K.gguf'), { threads: 1, kvType: 'q8_0' }), /multiples of 32/);
});

test('the measured agreement (diagnostics)', (t) => { t.diagnostic(JSON.stringify(results, null, 1)); });
