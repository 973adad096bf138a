#!/usr/bin/env node
// tools/bench.mjs — `npm run bench`: prefill and decode tokens/s of the wick WebAssembly build
// under Node (the pthreads build when --threads > 1) and of its relaxed-SIMD twin (V8's flag
// --experimental-wasm-relaxed-simd, set by the CLI), with the native build alongside for
// reference, and the peak memory of each run: the wasm heap at the end of the run (the heap only
// grows, so its final size is its peak) and the process's peak resident set size.
//
//   node tools/bench.mjs [--models models/synth-134m-q4_0.gguf,…] [--threads 1,2]
//                        [--prompt-tokens 87] [--gen 32] [--repeat 3] [--ctx 2048]
//                        [--stat best|median] [--idle-wait 30] [--no-native] [--no-grammar] [--no-gpu] [--record]
//                        [--no-embed] [--embed-only] [--embed-texts 16] [--embed-shapes bge-small,EmbeddingGemma] [--embed-types f16,q8_0]
//                        [--no-kv] [--kv-only] [--kv-models …] [--kv-prompt-tokens 512] [--kv-threads 1]
//                        [--no-state] [--state-only] [--state-tokens 1000] [--state-threads 2]
//                        [--no-long] [--long-only] [--long-models …] [--long-contexts 64,512,2048] [--long-threads 1] [--long-kv f16,q8_0]
//                        [--no-vision] [--vision-only] [--vision-shapes SmolVLM-256M,Gemma-3] [--vision-types f16] [--vision-runs 3] [--vision-kinds native,wasm]
//
// Each run is `wasm_glue/cli.mjs generate -m MODEL -p PROMPT -n GEN --temp 0 --ignore-eos
// --threads T --ctx C` (and build/native/wick with the same flags); the figures come from the
// `prefill: … decode: …` line the CLI writes on stderr. The prompt is English text cut so that,
// with the BOS token the llama vocabulary adds, exactly --prompt-tokens tokens are evaluated.
// A missing models/synth-<shape>-<type>.gguf is made with `build/native/wick synth`.
// Before each run it waits (up to --idle-wait seconds) for the machine to be quiet, so that other
// work does not share the CPU with the measurement; a run that had to start anyway is noted.
// --record appends the table to BENCHMARKS.md with the date, command and machine.
// Then (unless --no-grammar) the cost of grammar-constrained sampling: bench/bench_grammar.c's
// microseconds per draw with and without a JSON grammar over a 152 064-token synthetic vocabulary
// (Qwen 2.5/3's size), and JSON-mode generation (the JSON-object grammar of json-schema.mjs) against
// unconstrained generation with the same sampler chain (temperature 0.8, seed 1) on the 134m
// Q4_K_M model of --models when it is there.
//
// Last (unless --no-gpu) the WebGPU path's structure per decoded token (tools/bench-gpu.mjs):
// weight bytes read, dispatches, submissions and readback bytes for 134m and 1b in Q4_0 and Q4_K_M.
//
// Then (unless --no-embed) embedding throughput (issue 28): texts/s embedding 256-token chunks
// (special tokens included) on a bge-small-shaped and an EmbeddingGemma-shaped synth file, F16 and
// Q8_0 (EMBED_SHAPES below), --embed-texts texts (half as many of EmbeddingGemma's) in passes of 8, with `wick embed` (wasm, wasm relaxed SIMD, native) against native llama.cpp's
// embedding mode on the same file, timed in C (bench/bench_embed_llama.c against node-llama-cpp's
// prebuilt libllama: no JS threads, see issue 33). --embed-only runs this section alone.
//
// Then (unless --no-kv) the KV cache types (issue 30): for --kv-models (134m and 1b Q4_K_M) at
// --ctx, the bytes of the cache in F16, Q8_0 and Q4_0 (`wick info --ctx N --kv T`: wick_kv_bytes,
// the fit check's count) and decode tokens/s after a --kv-prompt-tokens prompt with each type
// (wasm and native, --kv-threads). --kv-only runs this section alone.
//
// Then (unless --no-state) saved sessions (issue 30): on the --kv-models at --ctx, a conversation
// of --state-tokens tokens is evaluated and its state saved (engine.saveState, wasm under Node,
// --state-threads); then, as a reload would, a fresh engine answers its next 8-token message with
// and without loadState of that blob: the time to the first token of each (loadState's own time
// counted in the first), the tokens each evaluated, and the state's size. --state-only runs this
// section alone.
//
// Last (unless --no-long) long contexts (issue 33): decode tokens/s when the steps end at each of
// --long-contexts, against the shortest, per build and KV type. --long-only runs this section alone.
//
// Last (unless --no-vision) image encoders (issue 32): ms per image at the projector's native size
// for SmolVLM-256M- and Gemma-3-shaped mmproj files, wick (native, wasm) against llama.cpp's mtmd on
// the same file, at --threads (tools/bench-vision.mjs; a projector wick does not take yet is
// reported missing). [--vision-shapes SmolVLM-256M,Gemma-3] [--vision-types f16] [--vision-runs 3]
// [--vision-kinds native,wasm]; --vision-only runs this section alone.
//
// The helpers it shares with tools/bench-gpu.mjs and tools/bench-peers.mjs are in bench-common.mjs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import '../wasm_glue/gguf-header.js';
import { readLlamaBundle } from './llama-bundle.mjs';
import { visionBench, VISION_DEFAULTS } from './bench-vision.mjs';
import {
  ROOT, NATIVE_WICK, parseArgs, list, ensureModel, modelLabel, modelInfo, buildPrompt,
  waitForIdle, summarize, fmt, markdownTable, appendBenchmarks, simdFlags,
} from './bench-common.mjs';

const WASM_CLI = path.join(ROOT, 'wasm_glue', 'cli.mjs');
const MiB = 1024 * 1024;

/** Bytes of an F16 KV cache of n_ctx positions, from `wick info`, counted as the glue counts them
 *  (gguf-header.js: a sliding layer's ring holds window − 1 + batch positions when that is fewer). */
function kvCacheBytes(info, nCtx, nBatch = 256) {
  const hp = {
    layers: info.block_count, kvHeads: info.head_count_kv, keyLength: info.head_dim, valueLength: info.head_dim,
    window: info.family?.sliding_window || 0, slidingLayers: info.family?.sliding_layers || 0,
  };
  return globalThis.WickGguf.kvCacheBytes(hp, nCtx, 'f16', nBatch);
}

// ---- one run of the CLI ----

const TIMING_LINE = /prefill: (\d+) tokens in ([\d.]+) s \(([\d.]+) tok\/s\); decode: (\d+) tokens in ([\d.]+) s \(([\d.]+) tok\/s\)/;
const UNIT = { b: 1, byte: 1, bytes: 1, kb: 1e3, kib: 1024, mb: 1e6, mib: MiB, gb: 1e9, gib: 2 ** 30 };

/** Reads the CLI's stderr: the timing line, an optional "peak memory N UNIT", and our memory line. */
export function parseRun(stderr) {
  const t = TIMING_LINE.exec(stderr);
  if (!t) throw new Error(`no timing line in the output:\n${stderr.slice(-2000)}`);
  const run = {
    promptTokens: Number(t[1]), prefillSeconds: Number(t[2]),
    genTokens: Number(t[4]), decodeSeconds: Number(t[5]),
  };
  run.prefill = run.promptTokens / run.prefillSeconds;
  run.decode = run.genTokens / run.decodeSeconds;
  const peak = /peak memory[^\d]{0,8}([\d.]+)\s*([KMG]i?B|bytes?|B)?/i.exec(stderr);
  if (peak) run.enginePeakBytes = Number(peak[1]) * (UNIT[(peak[2] || 'mib').toLowerCase()] || MiB);
  const mem = /^bench-memory (\{.*\})$/m.exec(stderr);
  if (mem) Object.assign(run, JSON.parse(mem[1]));
  const rss = /^bench-maxrss-kib (\d+)$/m.exec(stderr);
  if (rss) run.maxRssBytes = Number(rss[1]) * 1024;
  return run;
}

function runOnce(kind, model, prompt, opts, threads, sampling = ['--temp', '0'], extra = []) {
  const flags = ['generate', '-m', model, '-p', prompt, '-n', String(opts.gen), ...sampling,
    '--ignore-eos', '--threads', String(threads), '--ctx', String(opts.ctx), ...extra];
  let cmd, args;
  let env = process.env;
  if (kind === 'wasm' || kind === 'wasm-relaxed') {
    // this file as a child: it runs the CLI in-process and reports the wasm heap and peak RSS
    // (wasm-relaxed: the relaxed-SIMD build, which the CLI runs behind V8's flag)
    cmd = process.execPath;
    args = [fileURLToPath(import.meta.url), '--cli-child', ...flags];
    if (kind === 'wasm-relaxed') env = { ...process.env, WICK_WASM_RELAXED: '1' };
  } else {
    // GNU time reports the peak RSS of the native process when it is installed
    const time = fs.existsSync('/usr/bin/time');
    cmd = time ? '/usr/bin/time' : NATIVE_WICK;
    args = time ? ['-f', 'bench-maxrss-kib %M', NATIVE_WICK, ...flags] : flags;
  }
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * MiB, timeout: opts.timeout * 1000, env });
  if (r.error) throw new Error(`${kind} run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${kind} run exited with ${r.status}:\n${r.stderr.slice(-2000)}`);
  return parseRun(r.stderr);
}

/**
 * In the child: runs wasm_glue/cli.mjs in this process, capturing the module's WebAssembly.Memory
 * when it is instantiated, and prints "bench-memory {heapBytes, maxRssBytes}" on stderr at the end.
 */
async function cliChild(args) {
  let memory = null;
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = async function (source, imports) {
    const result = await instantiate.call(this, source, imports);
    const instance = result.instance || result;
    // -O3 minifies the export and import names: look for the Memory object itself
    const isMemory = (x) => x instanceof WebAssembly.Memory;
    memory = Object.values(instance.exports).find(isMemory) ||
      Object.values(imports || {}).flatMap((ns) => Object.values(ns)).find(isMemory) || memory;
    return result;
  };
  const { runCli } = await import(pathToFileURL(WASM_CLI).href);
  const code = await runCli(args);
  const report = { heapBytes: memory ? memory.buffer.byteLength : null, maxRssBytes: process.resourceUsage().maxRSS * 1024 };
  process.stderr.write(`bench-memory ${JSON.stringify(report)}\n`);
  process.exit(code);
}

// ---- main ----

const DEFAULTS = {
  models: 'models/synth-134m-q4_0.gguf,models/synth-134m-q8_0.gguf,models/synth-134m-q4_k_m.gguf',
  threads: '1,2', promptTokens: 87, gen: 32, repeat: 3, ctx: 2048, stat: 'best', timeout: 600, idleWait: 30,
  noNative: false, noGrammar: false, noGpu: false, record: false, noEmbed: false, embedOnly: false, embedTexts: 16, embedShapes: 'bge-small,EmbeddingGemma', embedTypes: 'f16,q8_0',
  noKv: false, kvOnly: false, kvModels: 'models/synth-134m-q4_k_m.gguf,models/synth-1b-q4_k_m.gguf', kvPromptTokens: 512, kvThreads: '1',
  noState: false, stateOnly: false, stateTokens: 1000, stateThreads: '2',
  noLong: false, longOnly: false, longModels: 'models/synth-134m-q4_k_m.gguf', longContexts: '64,512,2048', longThreads: '1', longKv: 'f16,q8_0',
  noVision: false, visionOnly: false, ...VISION_DEFAULTS,
};

// ---- KV cache types ----

const KV_TYPES = ['f16', 'q8_0', 'q4_0'];

/** KV bytes and decode tokens/s per cache type (issue 30), as a markdown section. */
async function kvBench(opts, kinds) {
  const rows = [];
  let busyRuns = 0;
  for (const file of list(opts.kvModels)) {
    const model = ensureModel(file);
    const info = modelInfo(model);
    const { text } = buildPrompt(model, opts.kvPromptTokens, info.bos >= 0 ? info.bos : 1);
    const bytes = {};
    for (const t of KV_TYPES) {
      const r = spawnSync(NATIVE_WICK, ['info', '-m', model, '--ctx', String(opts.ctx), '--kv', t], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`wick info --kv ${t}: ${r.stderr}`);
      bytes[t] = JSON.parse(r.stdout).kv_bytes;
    }
    for (const threads of list(opts.kvThreads).map(Number))
      for (const kind of kinds) {
        const decode = {};
        for (const t of KV_TYPES) {
          const runs = [];
          for (let i = 0; i < opts.repeat; i++) {
            const busy = await waitForIdle(opts.idleWait);
            if (busy !== null && busy >= 0.15) busyRuns++;
            runs.push(runOnce(kind, model, text, opts, threads, ['--temp', '0'], ['--kv', t]));
            process.stderr.write(`bench: kv ${t} ${modelLabel(model)} ${kind} t${threads} #${i + 1}: decode ${fmt(runs.at(-1).decode)} tok/s\n`);
          }
          decode[t] = summarize(runs.map((r) => r.decode), opts.stat);
        }
        rows.push([modelLabel(model), String(threads), { wasm: 'wasm (Node)', 'wasm-relaxed': 'wasm relaxed SIMD (Node)', native: 'native' }[kind],
          ...KV_TYPES.map((t) => `${fmt(bytes[t] / MiB, 1)} (${fmt(100 * bytes[t] / bytes.f16, 0)}%)`), ...KV_TYPES.map((t) => fmt(decode[t]))]);
      }
  }
  const table = markdownTable(['model', 'threads', 'build', ...KV_TYPES.map((t) => `KV MiB ${t}`), ...KV_TYPES.map((t) => `decode tok/s ${t}`)], rows);
  return `KV cache types (\`--kv f16|q8_0|q4_0\`): the cache's bytes at a ${opts.ctx}-token context (wick_kv_bytes, as the fit check ` +
    `counts them) and decode tokens/s after a ${opts.kvPromptTokens}-token prompt, ${opts.gen} greedy tokens, ${opts.stat} of ${opts.repeat}:\n\n${table}` +
    (busyRuns ? `\n\n${busyRuns} run(s) started while other work kept the CPU busy: those figures are low.` : '');
}

// ---- long contexts ----

/**
 * Decode tokens/s at each of --long-contexts (issue 33: at 2,048 tokens decode should keep at
 * least 60% of its speed at 64): a prompt of (context − gen) tokens, then gen greedy steps, so
 * that the steps attend over the last gen positions up to that context; per build, KV type and
 * thread count, with each figure's share of the same row's shortest context.
 */
async function longBench(opts, kinds) {
  const contexts = list(opts.longContexts).map(Number);
  const rows = [];
  let busyRuns = 0;
  for (const file of list(opts.longModels)) {
    const model = ensureModel(file);
    const info = modelInfo(model);
    const prompts = contexts.map((n) => buildPrompt(model, Math.max(1, n - opts.gen), info.bos >= 0 ? info.bos : 1).text);
    for (const threads of list(opts.longThreads).map(Number))
      for (const kv of list(opts.longKv))
        for (const kind of kinds) {
          const decode = contexts.map((n, c) => {
            const text = prompts[c];
            const runs = [];
            for (let i = 0; i < opts.repeat; i++) {
              runs.push(runOnce(kind, model, text, { ...opts, ctx: Math.max(n, opts.ctx) }, threads, ['--temp', '0'], ['--kv', kv]));
              process.stderr.write(`bench: long ${modelLabel(model)} ${kind} ${kv} t${threads} context ${n} #${i + 1}: decode ${fmt(runs.at(-1).decode)} tok/s\n`);
            }
            return summarize(runs.map((r) => r.decode), opts.stat);
          });
          rows.push([modelLabel(model), String(threads), { wasm: 'wasm (Node)', 'wasm-relaxed': 'wasm relaxed SIMD (Node)', native: 'native' }[kind], kv,
            ...decode.map((d) => `${fmt(d)} (${fmt(100 * d / decode[0], 0)}%)`)]);
        }
    const busy = await waitForIdle(0);
    if (busy !== null && busy >= 0.15) busyRuns++;
  }
  const table = markdownTable(['model', 'threads', 'build', 'KV', ...contexts.map((n) => `decode tok/s at ${n}`)], rows);
  return `Long contexts: decode tokens/s when the ${opts.gen} greedy steps end at each context (a prompt of context − ${opts.gen} tokens first), ` +
    `${opts.stat} of ${opts.repeat}, and each figure's share of the row's ${contexts[0]}-token one:\n\n${table}` +
    (busyRuns ? '\n\nThe machine was busy while it ran: ratios within a row count, absolute figures are low.' : '');
}

// ---- saved sessions ----

/** The first token of a generation from a fresh engine: its time (after loadState, when a blob is
 *  given, which the time includes) and the tokens it evaluated. */
async function firstToken(Wick, model, opts, threads, tokens, blob) {
  const engine = await Wick.load(model, { threads, contextSize: opts.ctx, device: 'cpu' });
  try {
    const t0 = performance.now();
    if (blob) await engine.loadState(blob);
    let first = null, timings = null;
    for await (const c of engine.generate(tokens, { temperature: 0, maxTokens: 1, ignoreEos: true })) {
      if (c.done) timings = c.timings;
      else first ??= performance.now();
    }
    return { ms: (first ?? performance.now()) - t0, evaluated: timings.promptEvalTokens, fromState: timings.promptFromState ?? 0 };
  } finally {
    await engine.unload();
  }
}

/** Time to the first token of a reloaded conversation, with and without its saved state (issue 30). */
async function stateBench(opts) {
  const { Wick } = await import('../wasm_glue/wick.mjs');
  const rows = [];
  let busyRuns = 0;
  for (const file of list(opts.kvModels)) {
    const model = ensureModel(file);
    const info = modelInfo(model);
    const { ids } = buildPrompt(model, opts.stateTokens, info.bos >= 0 ? info.bos : 1);
    const next = buildPrompt(model, 9, info.bos >= 0 ? info.bos : 1).ids.slice(1); // an 8-token message
    for (const threads of list(opts.stateThreads).map(Number)) {
      const engine = await Wick.load(model, { threads, contextSize: opts.ctx, device: 'cpu' });
      let blob;
      try {
        for await (const c of engine.generate(ids, { temperature: 0, maxTokens: 1, ignoreEos: true })) void c;
        blob = await engine.saveState();
      } finally {
        await engine.unload();
      }
      const conversation = [...ids, ...next];
      const cold = [], warm = [];
      for (let i = 0; i < opts.repeat; i++) {
        for (const [runs, b] of [[cold, null], [warm, blob]]) {
          const busy = await waitForIdle(opts.idleWait);
          if (busy !== null && busy >= 0.15) busyRuns++;
          runs.push(await firstToken(Wick, model, opts, threads, conversation, b));
          process.stderr.write(`bench: state ${modelLabel(model)} t${threads} ${b ? 'with' : 'without'} #${i + 1}: first token after ${fmt(runs.at(-1).ms, 0)} ms, ${runs.at(-1).evaluated} evaluated\n`);
        }
      }
      // times: the best is the shortest (summarize's best is the largest, for rates)
      const c = -summarize(cold.map((r) => -r.ms), opts.stat), w = -summarize(warm.map((r) => -r.ms), opts.stat);
      rows.push([modelLabel(model), String(threads), String(conversation.length), `${fmt(blob.length / MiB, 1)} MiB (${fmt(blob.length / ids.length, 0)} B/token)`,
        `${fmt(c, 0)} ms (${cold[0].evaluated} evaluated)`, `${fmt(w, 0)} ms (${warm[0].evaluated} evaluated, ${warm[0].fromState} from the state)`, `${fmt(c / w, 1)}×`]);
    }
  }
  const table = markdownTable(['model', 'threads', 'prompt tokens', 'saved state', 'first token, no state', 'first token, state loaded', 'speed-up'], rows);
  return `Saved sessions: a ${opts.stateTokens}-token conversation's state (engine.saveState, F16 cache, ${opts.ctx}-token context), then a fresh ` +
    `engine (wasm under Node, as after a reload) answers its next 8-token message; the time to its first token with loadState ` +
    `of the blob (its time included) and without, ${opts.stat} of ${opts.repeat}:\n\n${table}` +
    (busyRuns ? `\n\n${busyRuns} run(s) started while other work kept the CPU busy: those figures are low.` : '');
}

// ---- embeddings ----

const EMBED_TOKENS = 256;   // per chunk, [CLS] and [SEP] included
const EMBED_PER_PASS = 8;   // chunks per evaluation (wick's --batch 2048, llama.cpp's n_seq 8)
const LLAMA_BINS = path.join(ROOT, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
const EMBED_LINE = /embed: (\d+) texts, (\d+) tokens in ([\d.]+) s/;

// The two embedding shapes of acceptance 6: bge-small on bge's WordPiece vocabulary, and
// EmbeddingGemma-300m's layers (gemma-embedding, 24 × 768, 3 heads and 1 KV head of 256, FFN 1152,
// the dense_2/dense_3 projections) on llama's SentencePiece vocabulary (32,000 pieces for Gemma's
// 262,144: the table is read one row per token, so only the file's size differs)
const EMBED_SHAPES = [
  { name: 'bge-small', arch: 'bert', shape: 'bge-small', vocab: 'ggml-vocab-bert-bge.gguf', bos: false,
    about: 'bert, 384 wide, 12 layers, 12 heads, FFN 1536, bge\'s WordPiece vocabulary' },
  { name: 'EmbeddingGemma', arch: 'gemma-embedding', shape: 'embeddinggemma', vocab: 'ggml-vocab-llama-spm.gguf', bos: true, textsDivisor: 2,
    about: 'gemma-embedding, 768 wide, 24 layers, 3 query heads and 1 KV head of 256, FFN 1152, dense_2/dense_3, llama\'s SentencePiece vocabulary' },
];

/** models/synth-<arch>-<shape>-<type>.gguf, made with the shape's vocabulary when missing */
function embedModel(sh, type) {
  const file = path.join(ROOT, 'models', `synth-${sh.arch}-${sh.shape}-${type}.gguf`);
  if (fs.existsSync(file)) return file;
  const vocab = path.join(ROOT, 'models', sh.vocab);
  if (!fs.existsSync(vocab)) {
    fs.mkdirSync(path.dirname(vocab), { recursive: true });
    fs.writeFileSync(vocab, readLlamaBundle([`models/${sh.vocab}`])[0]);
  }
  const r = spawnSync(NATIVE_WICK, ['synth', '--arch', sh.arch, '--shape', sh.shape, '--type', type, '--vocab', vocab, '-o', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wick synth failed: ${r.stderr}`);
  return file;
}

/** One pass of `wick embed` (or the C harness over libllama) over the texts: texts/s and tokens/s. */
function embedRun(kind, model, textsFile, threads, opts) {
  let cmd, args, env = process.env;
  if (kind === 'llama.cpp') {
    cmd = path.join(ROOT, 'build', 'native', 'bench_embed_llama');
    args = [LLAMA_BINS, model, textsFile, String(threads), String(EMBED_PER_PASS), String(opts.repeat)];
  } else {
    const flags = ['embed', '-m', model, '--texts', textsFile, '--threads', String(threads), '--batch', String(EMBED_PER_PASS * EMBED_TOKENS)];
    [cmd, args] = kind === 'native' ? [NATIVE_WICK, flags] : [process.execPath, [WASM_CLI, ...flags]];
    if (kind === 'wasm-relaxed') env = { ...process.env, WICK_WASM_RELAXED: '1' };
  }
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * MiB, timeout: opts.timeout * 1000, env });
  if (r.status !== 0) throw new Error(`${kind} embed run exited with ${r.status}: ${(r.stderr || String(r.error)).slice(-2000)}`);
  const m = EMBED_LINE.exec(kind === 'llama.cpp' ? r.stdout : r.stderr);
  if (!m) throw new Error(`${kind}: no embed timing line:\n${(r.stdout + r.stderr).slice(-1500)}`);
  const variant = /loaded CPU backend from \S*libggml-cpu-([\w-]+)\.so/.exec(r.stderr)?.[1];
  return { texts: Number(m[1]), tokens: Number(m[2]), seconds: Number(m[3]), textsPerSecond: Number(m[1]) / Number(m[3]), variant };
}

/** The embedding section: a table of texts/s per file, thread count and engine, with wick's share of llama.cpp's. */
async function embedBench(opts, threadCounts) {
  const built = spawnSync('make', ['-s', 'build/native/bench_embed_llama'], { cwd: ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`make build/native/bench_embed_llama: ${built.stderr}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-embed-'));
  const rows = [];
  let variant = null, busyRuns = 0;
  const shapes = list(opts.embedShapes).map((name) => EMBED_SHAPES.find((sh) => sh.name === name) || (() => { throw new Error(`--embed-shapes: no shape ${name}`); })());

  try {
    for (const sh of shapes) for (const type of list(opts.embedTypes)) {
      const model = embedModel(sh, type);
      const nTexts = Math.max(EMBED_PER_PASS, Math.round(opts.embedTexts / (sh.textsDivisor || 1)));
      // bert: EMBED_TOKENS − 2 word pieces, then [CLS] and [SEP]; gemma: BOS, then EMBED_TOKENS − 1 pieces
      const { text } = sh.bos ? buildPrompt(model, EMBED_TOKENS, 1) : buildPrompt(model, EMBED_TOKENS - 1, 0);
      const textsFile = path.join(dir, 'texts.bin');
      fs.writeFileSync(textsFile, Array.from({ length: nTexts }, () => text).join('\0'));
      for (const threads of threadCounts) {
        const best = {};
        for (const kind of ['llama.cpp', 'wasm', 'wasm-relaxed', 'native']) {
          const runs = [];
          // the C harness repeats inside one process (after a warm-up pass); wick's CLI once per process
          for (let i = 0; i < (kind === 'llama.cpp' ? 1 : opts.repeat); i++) {
            const busy = await waitForIdle(opts.idleWait);
            if (busy !== null && busy >= 0.15) busyRuns++;
            const run = embedRun(kind, model, textsFile, threads, opts);
            if (run.tokens !== nTexts * EMBED_TOKENS) throw new Error(`${kind}: ${run.tokens} tokens, not ${nTexts} × ${EMBED_TOKENS}`);
            variant ||= run.variant;
            runs.push(run.textsPerSecond);
            process.stderr.write(`bench: embed ${sh.name} ${type} ${kind} t${threads} #${i + 1}: ${fmt(run.textsPerSecond)} texts/s\n`);
          }
          best[kind] = summarize(runs, opts.stat);
        }
        for (const kind of ['llama.cpp', 'wasm', 'wasm-relaxed', 'native'])
          rows.push([`${sh.name} ${type.toUpperCase()}`, String(threads), { 'llama.cpp': 'llama.cpp (native, C harness)', wasm: 'wick wasm (Node)', 'wasm-relaxed': 'wick wasm relaxed SIMD (Node)', native: 'wick native' }[kind],
            fmt(best[kind]), fmt(best[kind] * EMBED_TOKENS, 0), kind === 'llama.cpp' ? '—' : `${fmt((100 * best[kind]) / best['llama.cpp'], 0)}%`]);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const table = markdownTable(['model', 'threads', 'engine', 'texts/s', 'tokens/s', 'of llama.cpp'], rows);
  return `Embedding chunks of ${EMBED_TOKENS} tokens (special tokens included), ${EMBED_PER_PASS} per evaluation, mean pooling, ` +
    `${opts.stat} of ${opts.repeat} runs, on \`wick synth\` files: ${shapes.map((sh) => `${sh.name} (\`--arch ${sh.arch} --shape ${sh.shape}\`: ${sh.about}; ${Math.max(EMBED_PER_PASS, Math.round(opts.embedTexts / (sh.textsDivisor || 1)))} texts)`).join(', ')}:\n\n${table}\n\n` +
    `CPU flags: ${simdFlags()}. llama.cpp: node-llama-cpp 3.21.1's prebuilt libllama (ggml CPU variant ${variant || 'unknown'}), embedding mode, flash attention off, ` +
    'timed in C by bench/bench_embed_llama.c around llama_decode and the reading of the pooled vectors (best of the passes after a warm-up); ' +
    'wick: the time of wick_embed as `wick embed` reports it.' +
    (busyRuns ? ` ${busyRuns} run(s) started while other work kept the CPU busy: those figures are low.` : '');
}

const GRAMMAR_VOCAB = 152064; // Qwen 2.5 / Qwen 3

/** The grammar section: per-draw cost at GRAMMAR_VOCAB, and JSON mode against free decoding. */
async function grammarBench(opts, threadCounts, kinds) {
  const { JSON_OBJECT_GRAMMAR } = await import('../wasm_glue/json-schema.mjs');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-grammar-'));
  const grammarFile = path.join(dir, 'json-object.gbnf');
  fs.writeFileSync(grammarFile, JSON_OBJECT_GRAMMAR);
  try {
    const built = spawnSync('make', ['-s', 'build/native/bench_grammar', 'build/wasm/bench_grammar.js', 'build/wasm/package.json'], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`make bench_grammar: ${built.stderr}`);
    const costRows = [];
    for (const kind of kinds) {
      const [cmd, args] = kind === 'wasm'
        ? [process.execPath, [path.join(ROOT, 'build', 'wasm', 'bench_grammar.js'), grammarFile, String(GRAMMAR_VOCAB)]]
        : [path.join(ROOT, 'build', 'native', 'bench_grammar'), [grammarFile, String(GRAMMAR_VOCAB)]];
      await waitForIdle(opts.idleWait);
      const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: opts.timeout * 1000 });
      if (r.status !== 0) throw new Error(`bench_grammar (${kind}): ${r.stderr || r.error}`);
      for (const m of r.stdout.matchAll(/^grammar-bench (\S+) n_vocab=\d+ unconstrained_us=([\d.]+) constrained_us=([\d.]+) fallback=(\d+)%/gm))
        costRows.push([kind === 'wasm' ? 'wasm (Node)' : 'native', m[1], fmt(Number(m[2])), fmt(Number(m[3])), fmt(Number(m[3]) - Number(m[2])), `${m[4]}%`]);
    }
    const costTable = markdownTable(['build', 'grammar state', 'chain alone µs/token', 'chain + grammar µs/token', 'grammar adds µs', 'draws that filtered the whole vocabulary'], costRows);
    let text = `Grammar sampling cost, n_vocab ${GRAMMAR_VOCAB} (synthetic BPE-like pieces, random logits, chain: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05; the JSON-object grammar of json-schema.mjs):\n\n${costTable}`;
    const model = list(opts.models).map((f) => path.resolve(ROOT, f)).find((f) => /134m-q4_k_m\.gguf$/.test(f));
    if (model) {
      const info = modelInfo(ensureModel(model));
      const { text: prompt } = buildPrompt(model, opts.promptTokens, info.bos >= 0 ? info.bos : 1);
      const rows = [];
      for (const threads of threadCounts) {
        for (const kind of kinds) {
          const free = [], json = [];
          for (let i = 0; i < opts.repeat; i++) {
            await waitForIdle(opts.idleWait);
            free.push(runOnce(kind, model, prompt, opts, threads, ['--temp', '0.8', '--seed', '1']));
            await waitForIdle(opts.idleWait);
            json.push(runOnce(kind, model, prompt, opts, threads, ['--temp', '0.8', '--seed', '1', '--grammar', grammarFile]));
          }
          const a = summarize(free.map((r) => r.decode), opts.stat), b = summarize(json.map((r) => r.decode), opts.stat);
          rows.push([modelLabel(model), String(threads), { wasm: 'wasm (Node)', 'wasm-relaxed': 'wasm relaxed SIMD (Node)', native: 'native' }[kind], fmt(a), fmt(b), `${fmt((100 * b) / a, 0)}%`, String(json[0].genTokens)]);
          process.stderr.write(`bench: JSON mode ${kind} t${threads}: free ${fmt(a)} tok/s, JSON ${fmt(b)} tok/s\n`);
        }
      }
      text += `\n\nJSON mode (the JSON-object grammar) against free text, the same chain (temperature 0.8, seed 1, EOS ignored), ${opts.gen} tokens at most, ${opts.stat} of ${opts.repeat}:\n\n` +
        markdownTable(['model', 'threads', 'build', 'free decode tok/s', 'JSON-mode decode tok/s', 'JSON / free', 'JSON tokens generated'], rows);
    }
    return text;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(argv) {
  const opts = parseArgs(argv, DEFAULTS);
  if (!['best', 'median'].includes(opts.stat)) throw new Error('--stat is best or median');
  if (!fs.existsSync(NATIVE_WICK)) throw new Error(`${NATIVE_WICK} is missing: run make`);
  const threadCounts = list(opts.threads).map(Number);
  if (opts.kvOnly) {
    const section = await kvBench(opts, opts.noNative ? ['wasm'] : ['wasm', 'native']);
    process.stdout.write(`${section}\n`);
    if (opts.record) appendBenchmarks('npm run bench', `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), section);
    return;
  }
  if (opts.longOnly) {
    const section = await longBench(opts, opts.noNative ? ['wasm', 'wasm-relaxed'] : ['wasm', 'wasm-relaxed', 'native']);
    process.stdout.write(`${section}\n`);
    if (opts.record) appendBenchmarks('npm run bench', `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), section);
    return;
  }
  if (opts.stateOnly) {
    const section = await stateBench(opts);
    process.stdout.write(`${section}\n`);
    if (opts.record) appendBenchmarks('npm run bench', `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), section);
    return;
  }
  if (opts.visionOnly) {
    const section = await visionBench(opts, threadCounts);
    process.stdout.write(`${section}\n`);
    if (opts.record) appendBenchmarks('npm run bench', `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), section);
    return;
  }
  if (opts.embedOnly) {
    const section = await embedBench(opts, threadCounts);
    process.stdout.write(`${section}\n`);
    if (opts.record) appendBenchmarks('npm run bench', `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), section);
    return;
  }
  const kinds = opts.noNative ? ['wasm', 'wasm-relaxed'] : ['wasm', 'wasm-relaxed', 'native'];
  const rows = [];
  let busyRuns = 0;
  for (const file of list(opts.models)) {
    const model = ensureModel(file);
    const info = modelInfo(model);
    const { text } = buildPrompt(model, opts.promptTokens, info.bos >= 0 ? info.bos : 1);
    const fileBytes = fs.statSync(model).size;
    const budget = fileBytes + kvCacheBytes(info, opts.ctx) + 64 * MiB;
    for (const threads of threadCounts) {
      for (const kind of kinds) {
        const runs = [];
        for (let i = 0; i < opts.repeat; i++) {
          const busy = await waitForIdle(opts.idleWait);
          if (busy !== null && busy >= 0.15) busyRuns++;
          const run = runOnce(kind, model, text, opts, threads);
          if (run.promptTokens !== opts.promptTokens) throw new Error(`the prompt evaluated ${run.promptTokens} tokens, not ${opts.promptTokens}`);
          runs.push(run);
          process.stderr.write(`bench: ${modelLabel(model)} ${kind} t${threads} #${i + 1}: prefill ${fmt(run.prefill)} tok/s, decode ${fmt(run.decode)} tok/s\n`);
        }
        const heap = Math.max(...runs.map((r) => r.heapBytes ?? r.enginePeakBytes ?? NaN));
        const enginePeak = Math.max(...runs.map((r) => r.enginePeakBytes ?? NaN));
        rows.push([
          modelLabel(model), String(threads), { wasm: 'wasm (Node)', 'wasm-relaxed': 'wasm relaxed SIMD (Node)', native: 'native' }[kind],
          fmt(summarize(runs.map((r) => r.prefill), opts.stat)),
          fmt(summarize(runs.map((r) => r.decode), opts.stat)),
          kind !== 'native' ? `${fmt(heap / MiB, 0)} (≤ ${fmt(budget / MiB, 0)} ${heap <= budget ? 'ok' : 'OVER'})` : '—',
          fmt(enginePeak / MiB, 0),
          fmt(Math.max(...runs.map((r) => r.maxRssBytes ?? NaN)) / MiB, 0),
        ]);
      }
    }
  }
  const table = markdownTable(
    ['model', 'threads', 'build', 'prefill tok/s', 'decode tok/s', 'wasm heap MiB (budget: file + KV + 64)', 'CLI peak memory MiB', 'peak RSS MiB'],
    rows,
  );
  const notes = `Prompt ${opts.promptTokens} tokens (BOS included), ${opts.gen} greedy tokens, context ${opts.ctx} (F16 KV), ` +
    `${opts.stat} of ${opts.repeat} runs, figures as the CLI reports them (its sampler chain at temperature 0); ` +
    'wasm heap = size of the wasm memory at the end of the run (it never shrinks, so this is its peak); ' +
    'CLI peak memory = the "peak memory" the CLI reports; peak RSS = the process (Node for wasm) as the OS counts it.' +
    (busyRuns ? ` ${busyRuns} run(s) started while other work kept the CPU busy: those figures are low.` : '');
  const grammar = opts.noGrammar ? '' : `\n\n${await grammarBench(opts, threadCounts, kinds)}`;
  // the WebGPU path's structure per token (tools/bench-gpu.mjs): 134m and 1b, Q4_0 and Q4_K_M
  let gpu = '';
  if (!opts.noGpu) {
    const { gpuBench, GPU_DEFAULTS } = await import('./bench-gpu.mjs');
    try {
      gpu = `\n\n${await gpuBench(GPU_DEFAULTS)}`;
    } catch (e) {
      gpu = `\n\nGPU path: not measured (${e.message}).`;
    }
  }
  const embed = opts.noEmbed ? '' : `\n\n${await embedBench(opts, threadCounts)}`;
  const kv = opts.noKv ? '' : `\n\n${await kvBench(opts, opts.noNative ? ['wasm'] : ['wasm', 'native'])}`;
  const saved = opts.noState ? '' : `\n\n${await stateBench(opts)}`;
  const long = opts.noLong ? '' : `\n\n${await longBench(opts, opts.noNative ? ['wasm', 'wasm-relaxed'] : ['wasm', 'wasm-relaxed', 'native'])}`;
  const vision = opts.noVision ? '' : `\n\n${await visionBench(opts, threadCounts)}`;
  process.stdout.write(`${table}\n\n${notes}${grammar}${gpu}${embed}${kv}${saved}${long}${vision}\n`);
  if (opts.record) {
    const command = `npm run bench -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim();
    appendBenchmarks('npm run bench', command, `${table}\n\n${notes}${grammar}${gpu}${embed}${kv}${saved}${long}${vision}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const argv = process.argv.slice(2);
  const run = argv[0] === '--cli-child' ? cliChild(argv.slice(1)) : main(argv);
  run.catch((e) => {
    process.stderr.write(`bench: ${e.message || e}\n`);
    process.exit(1);
  });
}
