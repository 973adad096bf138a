#!/usr/bin/env node
// tools/bench-peers.mjs — `npm run bench:peers`: wick against its peers on the same GGUF file, the
// same prompt, the same generation length and the same thread count:
//   wick    in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the
//           engine's C API called from a Web Worker by tools/bench-page/wick-worker.js, the
//           single-threaded build for 1 thread, the pthreads build otherwise; `wick-relaxed`
//           the same with the relaxed-SIMD twin of the build (what Chromium users get);
//   wllama  @wllama/wllama 3.13.0 in the same browser, with the wasm file of its npm package;
//   native  llama.cpp timed in C (bench/bench_decode_llama.c, built by make over node-llama-cpp
//           3.21.1's prebuilt linux-x64 libllama: no JS threads, issue 33), the ceiling; a figure
//           below the same engine's at fewer threads (oversubscribed threads) is reported in the
//           notes and left out of the table.
// Prefill tokens/s = prompt tokens / time to evaluate the prompt as one batch (and pick the first
// token); decode tokens/s = single-token evaluations / their time (greedy, EOS ignored). Every
// engine runs once to warm up, then --repeat times; the table shows the best (or median) run.
//
//   node tools/bench-peers.mjs [--models models/synth-134m-q4_0.gguf,…] [--threads 1,2]
//       (models/synth-[<arch>-]<134m|1b>-<type>.gguf are made by wick synth on demand: the families'
//        rows are e.g. models/synth-gemma3-134m-q4_k_m.gguf, compared per parameter with the llama row)
//       [--prompt-tokens 64] [--gen 32] [--repeat 3] [--ctx 512] [--engines wick,wick-relaxed,wllama,native]
//       [--stat best|median] [--timeout 300] [--idle-wait 30] [--record]
//
// Everything is served from 127.0.0.1 by tools/serve.mjs (COOP/COEP: the page is cross-origin
// isolated, so both wasm engines may start threads). Before each engine's runs it waits (up to
// --idle-wait seconds) for the machine to be quiet. --record appends the run to BENCHMARKS.md.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import '../wasm_glue/gguf-header.js'; // globalThis.WickGguf: the header parser the wllama rows use
import { createServer } from './serve.mjs';
import {
  ROOT, parseArgs, list, ensureModel, modelInfo, modelLabel, buildPrompt, summarize, fmt,
  markdownTable, appendBenchmarks, waitForIdle, machineInfo,
} from './bench-common.mjs';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const DEFAULTS = {
  models: 'models/synth-134m-q4_0.gguf,models/synth-134m-q8_0.gguf,models/synth-134m-q4_k_m.gguf',
  threads: '1,2', promptTokens: 64, gen: 32, repeat: 3, ctx: 512, batch: 512,
  engines: 'wick,wick-relaxed,wllama,native', stat: 'best', timeout: 300, idleWait: 30, record: false,
};

const log = (s) => process.stderr.write(`bench:peers: ${s}\n`);

function withTimeout(promise, seconds, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no result after ${seconds} s`)), seconds * 1000); }),
  ]);
}

// ---- the browser engines ----

async function startBrowser() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
    handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false,  // main() closes it, see below
  });
  const close = async () => { await context.close().catch(() => {}); fs.rmSync(profile, { recursive: true, force: true }); };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => { close().finally(() => process.exit(130)); });
  }
  return { context, close };
}

/** Runs window.benchWick or window.benchWllama in a fresh page and returns its result. */
async function benchInBrowser(browser, base, fn, cfg, timeout) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  try {
    await page.goto(`${base}/tools/bench-page/index.html`);
    await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30000 });
    const isolated = await page.evaluate(() => self.crossOriginIsolated);
    if (!isolated) throw new Error('the page is not cross-origin isolated');
    return await withTimeout(page.evaluate(([name, c]) => window[name](c), [fn, cfg]), timeout, fn);
  } catch (e) {
    if (errors.length) e.message += `\npage errors: ${errors.slice(-5).join('\n')}`;
    throw e;
  } finally {
    await page.close().catch(() => {});
  }
}

/** Token ids whose text is not whole UTF-8 by itself (pieces of a character), for a byte-level BPE
 * vocabulary ('gpt2' tokenizer). A random-weight model draws them freely, and wllama's
 * createCompletion then fails ("invalid UTF-8 byte" when its server code writes the text as JSON),
 * so the wllama runs of such a model are given a logit bias that bans them; the speed of a step does
 * not depend on which token it picks. */
function partialUtf8Tokens(modelPath) {
  const fd = fs.openSync(modelPath, 'r');
  let bytes = Buffer.alloc(1 << 20);
  try {
    for (;;) {
      const n = fs.readSync(fd, bytes, 0, bytes.length, 0);
      try {
        const { metadata } = globalThis.WickGguf.parseHeader(new Uint8Array(bytes.buffer, 0, n), { keepArrays: ['tokenizer.ggml.tokens'] });
        if (metadata['tokenizer.ggml.model'] !== 'gpt2') return [];
        // GPT-2's byte-level alphabet: printable bytes stand for themselves, the others map to U+0100 and up
        const byteOf = new Map();
        let extra = 0;
        for (let b = 0; b < 256; b++) {
          const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
          byteOf.set(printable ? b : 256 + extra++, b);
        }
        const strict = new TextDecoder('utf-8', { fatal: true });
        const banned = [];
        metadata['tokenizer.ggml.tokens'].forEach((tok, id) => {
          const cps = [...tok].map((c) => byteOf.get(c.codePointAt(0)));
          if (cps.some((b) => b === undefined)) return;  // a special or added token, not byte-level text
          try { strict.decode(Uint8Array.from(cps)); } catch { banned.push(id); }
        });
        return banned;
      } catch (e) {
        if (!(e instanceof globalThis.WickGguf.NeedMoreBytes)) throw e;
        bytes = Buffer.alloc(Math.max(e.needed ?? 0, bytes.length * 2));
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

// ---- native llama.cpp ----

const LLAMA_BINS = path.join(ROOT, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
const NATIVE_HARNESS = path.join(ROOT, 'build', 'native', 'bench_decode_llama');
const HARNESS_RUN = /^run \d+: prefill (\d+) tokens in ([\d.]+) ms, decode (\d+) steps in ([\d.]+) ms$/gm;

/** Native llama.cpp timed in C (bench/bench_decode_llama.c over node-llama-cpp's prebuilt
 *  libllama): the same token ids, one warm-up run, then cfg.repeat runs; no JS threads. */
async function benchNative(modelPath, cfg) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-native-'));
  try {
    const ids = path.join(dir, 'ids.txt');
    fs.writeFileSync(ids, cfg.promptIds.join(' '));
    const r = await run(NATIVE_HARNESS, [LLAMA_BINS, modelPath, ids, cfg.threads, cfg.gen, cfg.repeat, cfg.nCtx, cfg.nBatch].map(String));
    if (r.code !== 0) throw new Error(`bench_decode_llama exited with ${r.code}: ${r.stderr.slice(-1500)}`);
    const runs = [...r.stdout.matchAll(HARNESS_RUN)].map((m) => ({
      promptTokens: Number(m[1]), prefillMs: Number(m[2]), decodeSteps: Number(m[3]), decodeMs: Number(m[4]) }));
    if (runs.length !== cfg.repeat) throw new Error(`bench_decode_llama printed ${runs.length} runs, not ${cfg.repeat}:\n${r.stdout.slice(-1500)}`);
    const tokens = (/^tokens:(.*)$/m.exec(r.stdout)?.[1] || '').trim().split(/\s+/).map(Number);
    const variant = /loaded CPU backend from \S*libggml-cpu-([\w-]+)\.so/.exec(r.stderr)?.[1] || 'unknown';
    return { engine: `llama.cpp (bench_decode_llama, ggml CPU variant ${variant})`, runs, tokens, variant };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs a program to its end without blocking the event loop: {code, stdout, stderr}. */
function run(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The figures of an engine that got slower with more threads: each (thread count, kind) whose
 * rate is below the same engine's rate at fewer threads on the same file. On a machine with as
 * many cores as threads that means the threads were oversubscribed (other work, or the
 * engine's own helper threads), not the engine's speed: such a figure is reported in the notes
 * and left out of the table.
 */
function oversubscribed(byThreads, engine) {
  const found = [];
  for (const kind of ['prefill', 'decode']) {
    let best = null;
    for (const { threads, r } of [...byThreads].sort((a, b) => a.threads - b.threads)) {
      const v = r[engine]?.[kind];
      if (!Number.isFinite(v)) continue;
      if (best && v < best.v) found.push({ threads, kind, v, fewer: best });
      else best = { threads, v };
    }
  }
  return found;
}

// ---- main ----

function rates(result, stat) {
  const runs = result.runs;
  return {
    prefill: summarize(runs.map((r) => (r.promptTokens / r.prefillMs) * 1000), stat),
    decode: summarize(runs.map((r) => (r.decodeSteps / r.decodeMs) * 1000), stat),
  };
}

async function main(argv) {
  const opts = parseArgs(argv, DEFAULTS);
  if (!['best', 'median'].includes(opts.stat)) throw new Error('--stat is best or median');
  const engines = list(opts.engines);
  for (const e of engines) if (!['wick', 'wick-relaxed', 'wllama', 'native'].includes(e)) throw new Error(`unknown engine ${e}`);
  const threadCounts = list(opts.threads).map(Number);
  if (engines.some((e) => e.startsWith('wick'))) {
    for (const f of ['wick.js', 'wick.wasm', 'wick-mt.js', 'wick-mt.wasm', 'wick-mt.worker.js',
      'wick-relaxed.js', 'wick-relaxed.wasm', 'wick-mt-relaxed.js', 'wick-mt-relaxed.wasm', 'wick-mt-relaxed.worker.js'])
      if (!fs.existsSync(path.join(ROOT, 'build', 'wasm', f))) throw new Error(`build/wasm/${f} is missing: run make`);
  }

  if (engines.includes('native')) {
    const built = spawnSync('make', ['-s', 'build/native/bench_decode_llama'], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`make build/native/bench_decode_llama: ${built.stderr}`);
  }
  const server = createServer(ROOT);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = engines.some((e) => e !== 'native') ? await startBrowser() : null;
  const rows = [];
  const notes = [];
  const agreement = []; // greedy tokens wick and llama.cpp agree on, from the first
  let variant = null;   // the ggml CPU variant native llama.cpp loaded
  const perParam = [];  // wick's speed × weights multiplied per token, per model and thread count, to compare families
  const started = Date.now();
  try {
    for (const file of list(opts.models)) {
      const model = ensureModel(file);
      const info = modelInfo(model);
      const { text, ids } = buildPrompt(model, opts.promptTokens, info.bos >= 0 ? info.bos : 1);
      const label = modelLabel(model);
      const byThreads = [];  // {threads, r}: this file's rates per thread count, for the oversubscription check
      for (const threads of threadCounts) {
        const cfg = {
          modelUrl: `/${path.relative(ROOT, model).split(path.sep).join('/')}`, threads, nCtx: opts.ctx, nBatch: opts.batch,
          promptText: text, promptIds: ids, gen: opts.gen, repeat: opts.repeat,
        };
        if (!cfg.modelUrl.startsWith('/models/') && engines.some((e) => e !== 'native'))
          throw new Error(`${file}: the browser engines load models from the repository's models/ folder`);
        const result = {};
        for (const engine of engines) {
          const busy = await waitForIdle(opts.idleWait);
          if (busy !== null && busy >= 0.15) notes.push(`${label}, ${threads} thread(s): ${engine} ran while other work kept ${(busy * 100).toFixed(0)}% of the CPU busy`);
          const t0 = Date.now();
          try {
            if (engine === 'wick') result.wick = await benchInBrowser(browser, base, 'benchWick', cfg, opts.timeout);
            else if (engine === 'wick-relaxed') result[engine] = await benchInBrowser(browser, base, 'benchWick', { ...cfg, relaxed: true }, opts.timeout);
            else if (engine === 'wllama') {
              const ban = partialUtf8Tokens(model);
              if (ban.length && threads === threadCounts[0]) notes.push(`${label}: wllama's runs ban the ${ban.length} tokens that are not whole UTF-8 by themselves (its createCompletion fails on such text; a step costs the same whichever token it picks)`);
              result.wllama = await benchInBrowser(browser, base, 'benchWllama', { ...cfg, ban }, opts.timeout);
            }
            else result.native = await withTimeout(benchNative(model, cfg), opts.timeout, 'bench_decode_llama');
            const r = result[engine];
            const bad = r.runs.find((x) => x.promptTokens !== ids.length);
            if (bad) notes.push(`${label}, ${threads} thread(s): ${engine} evaluated a prompt of ${bad.promptTokens} tokens, not ${ids.length}`);
            if (engine === 'wllama' && threads > 1 && !r.multithread) notes.push(`${label}: wllama did not start threads`);
            if (engine === 'native') variant ||= r.variant;
            const { prefill, decode } = rates(r, opts.stat);
            log(`${label} t${threads} ${engine}: prefill ${fmt(prefill)} tok/s, decode ${fmt(decode)} tok/s (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
          } catch (e) {
            log(`${label} t${threads} ${engine} FAILED: ${e.message}`);
            notes.push(`${label}, ${threads} thread(s): ${engine} failed: ${e.message.split('\n')[0]}`);
          }
        }
        // the same model should give the same greedy start (random weights make long runs diverge)
        const rxTokens = result['wick-relaxed']?.runs[0]?.tokens;
        if (rxTokens && result.wick?.runs[0]?.tokens && rxTokens.join() !== result.wick.runs[0].tokens.join())
          notes.push(`${label} t${threads}: the relaxed build's greedy tokens differ from the plain build's (they must be identical)`);
        const wickTokens = result.wick?.runs[0]?.tokens, nativeTokens = result.native?.tokens;
        if (wickTokens && nativeTokens) {
          let k = 0;
          while (k < Math.min(wickTokens.length, nativeTokens.length) && wickTokens[k] === nativeTokens[k]) k++;
          agreement.push(`${label} t${threads} ${k}/${Math.min(wickTokens.length, nativeTokens.length)}`);
        }
        byThreads.push({ threads, r: Object.fromEntries(engines.map((e) => [e, result[e] ? rates(result[e], opts.stat) : { prefill: NaN, decode: NaN }])) });
      }
      // a figure below the same engine's at fewer threads is oversubscription, not speed: reported, not recorded
      for (const engine of engines) {
        for (const o of oversubscribed(byThreads, engine)) {
          notes.push(`${label}: ${engine}'s ${o.kind} at ${o.threads} threads read ${fmt(o.v)} tok/s, below its ${fmt(o.fewer.v)} at ${o.fewer.threads} ` +
            `(oversubscribed threads on ${os.cpus().length} CPUs): left out of the table`);
          byThreads.find((b) => b.threads === o.threads).r[engine][o.kind] = NaN;
        }
      }
      for (const { threads, r } of byThreads) {
        const get = (e, k) => r[e]?.[k] ?? NaN;
        // the weights each token multiplies: all but the embedding table, which a tied model
        // multiplies again as its output head
        const weights = info.n_params - (info.family?.tied_output ? 0 : info.n_vocab * info.embedding_length);
        perParam.push({ label, threads, arch: info.architecture, params: weights, type: label.split(' ').at(-1),
          llama: !/^(llama3|qwen3|gemma2|gemma3|phi3|smollm3|granite|olmo2) /.test(label),
          prefill: get('wick', 'prefill') * weights, decode: get('wick', 'decode') * weights });
        const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '—');
        // the ratios are those of the build Chromium users get: the relaxed one where it ran
        const best = engines.includes('wick-relaxed') ? 'wick-relaxed' : 'wick';
        rows.push([
          label, String(threads),
          fmt(get('wick', 'prefill')), fmt(get('wick-relaxed', 'prefill')), fmt(get('wllama', 'prefill')), fmt(get('native', 'prefill')),
          ratio(get(best, 'prefill'), get('wllama', 'prefill')), ratio(get(best, 'prefill'), get('native', 'prefill')),
          fmt(get('wick', 'decode')), fmt(get('wick-relaxed', 'decode')), fmt(get('wllama', 'decode')), fmt(get('native', 'decode')),
          ratio(get(best, 'decode'), get('wllama', 'decode')), ratio(get(best, 'decode'), get('native', 'decode')),
        ]);
      }
    }
  } finally {
    await browser?.close();
    server.closeAllConnections?.();
    server.close();
  }

  const table = markdownTable([
    'model', 'threads', 'prefill wick', 'prefill wick-rx', 'prefill wllama', 'prefill native', 'wick/wllama', 'wick/native',
    'decode wick', 'decode wick-rx', 'decode wllama', 'decode native', 'wick/wllama', 'wick/native',
  ], rows);
  const method = [
    `Tokens/s; prompt ${opts.promptTokens} tokens (BOS included), ${opts.gen} decode steps (greedy, EOS ignored), ` +
      `context ${opts.ctx}, F16 KV cache, ${opts.stat} of ${opts.repeat} runs after one warm-up run; ${((Date.now() - started) / 1000).toFixed(0)} s in all.`,
    '- wick: headless Chromium, tools/bench-page/wick-worker.js in a Web Worker calling the C API ' +
      '(wick_eval of the prompt as one batch, then one wick_eval per token, argmax in wick_sample_simple); ' +
      'build/wasm/wick.js for 1 thread, wick-mt.js (pthreads) otherwise; wick-rx: their relaxed-SIMD twins ' +
      '(wick-relaxed.js, wick-mt-relaxed.js). The ratios are wick-rx\'s where it ran (what Chromium users get).',
    '- wllama: @wllama/wllama 3.13.0 in the same browser with the package\'s own esm/wasm/wllama.wasm, createCompletion ' +
      '(temperature 0, ignore_eos, cache_prompt false); figures from llama-server\'s timings (prompt_ms; predicted_ms ' +
      'over predicted_n − 1 single-token evaluations).',
    `- native: llama.cpp timed in C by bench/bench_decode_llama.c (no JS, no JS threads) over node-llama-cpp 3.21.1's prebuilt ` +
      `linux-x64 libllama (ggml CPU variant ${variant || 'unknown'}; never built or downloaded): after a warm-up run, greedy ` +
      'generations from the same token ids, the prompt as one llama_decode with its last logits, then one llama_decode per step ' +
      'with its logits and argmax, timed around those calls.',
    `- CPU: ${machineInfo()}.`,
  ];
  // a family's cost per parameter against the plain llama file of the same type and thread count
  const relative = [];
  for (const row of perParam.filter((x) => !x.llama)) {
    const base = perParam.find((x) => x.llama && x.type === row.type && x.threads === row.threads);
    if (!base) continue;
    const f = (a, b) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '—');
    relative.push(`${row.label} t${row.threads} (${(row.params / 1e6).toFixed(0)}M): prefill ${f(row.prefill, base.prefill)}, decode ${f(row.decode, base.decode)}`);
  }
  if (relative.length) notes.push(`wick's speed per parameter (tok/s × the weights a token multiplies: all but the embedding table, which a tied model multiplies again as its output) against the llama file of the same type (${(perParam.find((x) => x.llama)?.params / 1e6).toFixed(0)}M), 1.00× = as fast: ${relative.join('; ')}`);
  if (agreement.length) notes.push(`greedy tokens on which wick and llama.cpp agree, from the first: ${agreement.join(', ')}`);
  const body = `${table}\n\n${method.join('\n')}${notes.length ? `\n\nNotes:\n${notes.map((n) => `- ${n}`).join('\n')}` : ''}`;
  process.stdout.write(`${body}\n`);
  if (opts.record) {
    const command = `npm run bench:peers -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim();
    appendBenchmarks('npm run bench:peers', command, body);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench:peers: ${e.stack || e.message || e}\n`);
    process.exit(1);
  },
);
