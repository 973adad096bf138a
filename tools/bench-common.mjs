// tools/bench-common.mjs — what the benchmarks share (tools/bench.mjs, bench-gpu.mjs and
// bench-peers.mjs): `--name value` arguments, the synthetic models made on demand with
// `build/native/wick synth`, a prompt of an exact token count, the machine's description and
// quiet moments, statistics, Markdown tables and BENCHMARKS.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readLlamaBundle } from './llama-bundle.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const NATIVE_WICK = path.join(ROOT, 'build', 'native', 'wick');
export const BENCHMARKS_MD = path.join(ROOT, 'BENCHMARKS.md');

// ---- arguments ----

/** Parses `--name value` / `--flag` arguments against a table of defaults (booleans are flags). */
export function parseArgs(argv, defaults) {
  const opts = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in defaults)) throw new Error(`unknown option ${a}`);
    if (typeof defaults[key] === 'boolean') { opts[key] = true; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    opts[key] = typeof defaults[key] === 'number' ? Number(v) : v;
    if (typeof defaults[key] === 'number' && !Number.isFinite(opts[key])) throw new Error(`${a}: not a number: ${v}`);
  }
  return opts;
}

export const list = (s) => String(s).split(',').map((x) => x.trim()).filter(Boolean);

// ---- models ----

// models/synth-[<arch>-]<shape>-<type>.gguf: `wick synth` makes them on demand
const SYNTH_NAME = /synth-(?:(llama3|qwen3|gemma2|gemma3|phi3|smollm3|granite|olmo2|lfm2|qwen35|gemma4|gemma3n|granite-hybrid|mistral3)-)?(134m|1b|0\.8b|e2b)-(f16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k)\.gguf$/;

// a family's own vocabulary where its size matters to speed (Qwen3.5's 248k-token output head), taken
// from the llama.cpp source bundle node-llama-cpp ships; the others use wick synth's default (32k)
const FAMILY_VOCAB = { qwen35: 'ggml-vocab-qwen35.gguf' };

function familyVocab(arch) {
  const name = FAMILY_VOCAB[arch];
  if (!name) return null;
  const out = path.join(ROOT, 'models', name);
  if (fs.existsSync(out)) return out;
  const [bytes] = readLlamaBundle([`models/${name}`]);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, bytes);
  return out;
}

/** Makes models/synth-[<arch>-]<shape>-<type>.gguf with `wick synth` when it is missing. */
export function ensureModel(file) {
  const abs = path.resolve(ROOT, file);
  if (fs.existsSync(abs)) return abs;
  const m = SYNTH_NAME.exec(abs);
  if (!m) throw new Error(`${file} does not exist (only models/synth-[<arch>-]<134m|1b|0.8b|e2b>-<f16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k>.gguf are made on demand)`);
  if (!fs.existsSync(NATIVE_WICK)) throw new Error(`${NATIVE_WICK} is missing: run make native`);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  const vocab = familyVocab(m[1]);
  const args = ['synth', ...(m[1] ? ['--arch', m[1]] : []), '--shape', m[2], '--type', m[3], ...(vocab ? ['--vocab', vocab] : []), '-o', abs];
  process.stderr.write(`bench: making ${path.relative(ROOT, abs)} (wick ${args.slice(0, -2).join(' ')})\n`);
  const r = spawnSync(NATIVE_WICK, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wick synth failed: ${r.stderr || r.error}`);
  return abs;
}

/** A short label for a model file: "134m Q4_0" (or "gemma3 134m Q4_K_M") for the synthetic files, else the file name. */
export function modelLabel(file) {
  const m = SYNTH_NAME.exec(file);
  return m ? `${m[1] ? `${m[1]} ` : ''}${m[2]} ${m[3].toUpperCase()}` : path.basename(file);
}

/** Hyperparameters from `wick info` (JSON). */
export function modelInfo(file) {
  const r = spawnSync(NATIVE_WICK, ['info', '-m', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wick info ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// ---- the prompt ----

// Plain prose, long enough for a few hundred tokens; cut to the asked length.
const PROMPT_SOURCE = `The old lighthouse stood at the edge of the cliff, where the land gave way to a grey and restless
sea. For more than a hundred years its lamp had turned every night, guiding fishing boats and cargo ships
past the rocks that lay hidden beneath the waves. The keeper, a quiet woman named Margaret, climbed the
spiral stairs each evening at dusk. She carried a small tin of oil, a clean cloth, and a notebook in which
she wrote down the weather, the passing ships, and anything else that seemed worth remembering. Over the
years the notebook had grown into a shelf of notebooks, and the shelf into a small library that filled
the room below the lamp. Visitors sometimes asked her whether she felt lonely out there, so far from the
village and its bright windows. She would smile and point to the sea, which changed its colour with every
hour, and to the birds that nested in the rocks, and to the long line of the horizon where the sun went
down. There was always something to watch, she said, and always something to write. One winter a storm
came that was stronger than any she had seen before. The wind tore slates from the roof and the rain
struck the glass so hard that she feared it would break. All night she kept the lamp burning, trimming
the wick and polishing the lens, while the tower shook beneath her feet. In the morning the sea was calm
again, and far below she saw a small boat rowing slowly toward the harbour, its crew waving their arms
to thank the light that had brought them home. She wrote it all down in her notebook, closed it, and went
to sleep until the afternoon.`;

function tokenCount(model, text) {
  const r = spawnSync(NATIVE_WICK, ['tokenize', '-m', model, '-p', text, '--no-bos'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wick tokenize: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Text that tokenizes (llama vocabulary, no BOS) to exactly nTokens - 1 ids, so that with BOS the
 * prefill evaluates nTokens tokens. Returns { text, ids } (ids with BOS first).
 */
export function buildPrompt(model, nTokens, bos = 1) {
  const want = nTokens - 1;
  if (want < 1) throw new Error('--prompt-tokens must be at least 2');
  const words = PROMPT_SOURCE.split(/\s+/);
  // the longest prefix of whole words that fits (binary search: counts grow with the prefix)
  let lo = 0, hi = words.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tokenCount(model, words.slice(0, mid).join(' ')).length <= want) lo = mid; else hi = mid - 1;
  }
  let text = words.slice(0, lo).join(' ');
  let ids = tokenCount(model, text);
  // pad with short words (" a" is one token in the llama vocabulary) up to the exact count: all the
  // missing ones at once (a long context's prompt is mostly padding), checked, until it is reached
  for (let guard = 0; ids.length < want && guard < 4 * nTokens; guard++) {
    text += ' a'.repeat(want - ids.length);
    ids = tokenCount(model, text);
  }
  if (ids.length !== want) throw new Error(`prompt of ${ids.length + 1} tokens, wanted ${nTokens}`);
  return { text, ids: [bos, ...ids] };
}

// ---- the machine, statistics, BENCHMARKS.md ----

export function machineInfo() {
  let cpu = os.cpus()[0]?.model || 'unknown CPU';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpu = m[1].trim();
  } catch { /* not Linux: keep os.cpus() */ }
  const nproc = spawnSync('nproc', { encoding: 'utf8' }).stdout?.trim() || String(os.cpus().length);
  return `${cpu}, nproc ${nproc}, SIMD flags ${simdFlags()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}`;
}

/** The CPU's SIMD flags that decide which ggml variant native llama.cpp runs and how fast wick's
 *  kernels are against it (issue 33: every BENCHMARKS.md entry names them). */
export function simdFlags() {
  const wanted = ['sse4_1', 'sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'bmi2', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'avx_vnni'];
  try {
    const have = new Set((/^flags\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] || '').split(/\s+/));
    return wanted.filter((f) => have.has(f)).join(' ') || 'none of SSE4.1-AVX-512';
  } catch {
    return 'unknown (no /proc/cpuinfo)';
  }
}

function cpuTimes() {
  const f = /^cpu\s+(.+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'))[1].trim().split(/\s+/).map(Number);
  // user nice system idle iowait …: niced work counts as busy too — even at nice 19 it takes
  // time slices that stall the barriers of a multi-threaded engine
  return { idle: f[3] + (f[4] || 0), total: f.reduce((a, b) => a + b, 0) };
}

/**
 * Waits (up to maxSeconds) until the machine is quiet: less than `threshold` of its CPU time
 * busy at normal priority over one second, so that other work (builds, tests) does not share the
 * CPU with a measurement.
 * Returns the busy fraction of the last second sampled (null where /proc/stat is missing).
 */
export async function waitForIdle(maxSeconds, threshold = 0.15) {
  if (!fs.existsSync('/proc/stat') || maxSeconds <= 0) return null;
  const deadline = Date.now() + maxSeconds * 1000;
  let busy, warned = false;
  for (;;) {
    const a = cpuTimes();
    await new Promise((r) => setTimeout(r, 1000));
    const b = cpuTimes();
    busy = 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
    if (busy < threshold) break;
    if (Date.now() >= deadline) {
      process.stderr.write(`bench: still busy (${(busy * 100).toFixed(0)}% CPU): measuring anyway\n`);
      break;
    }
    if (!warned) process.stderr.write(`bench: the machine is busy (${(busy * 100).toFixed(0)}% CPU): waiting up to ${maxSeconds} s\n`);
    warned = true;
  }
  return busy;
}

/** best (highest tokens/s) or median of the repeats */
export function summarize(values, stat) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return NaN;
  if (stat === 'best') return v[v.length - 1];
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '—');

export function markdownTable(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

const BENCHMARKS_HEADER = `# wick benchmarks

Runs recorded by \`npm run bench\` (the wick WebAssembly build under Node, native build for
reference) and \`npm run bench:peers\` (wick against wllama in headless Chromium and against native
llama.cpp through node-llama-cpp). Models are the deterministic random-weight files of
\`build/native/wick synth\` (llama architecture, llama vocabulary), never committed. Tokens/s:
prefill is the prompt evaluated as one batch; decode is greedy generation, one token per step.
Newest runs at the end.
`;

/** Appends one run (a section with date, command, machine and the table) to BENCHMARKS.md. */
export function appendBenchmarks(title, command, body) {
  if (!fs.existsSync(BENCHMARKS_MD)) fs.writeFileSync(BENCHMARKS_MD, BENCHMARKS_HEADER);
  const date = new Date().toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  const section = `\n## ${title} — ${date}\n\n- command: \`${command}\`\n- machine: ${machineInfo()}\n\n${body.trim()}\n`;
  fs.appendFileSync(BENCHMARKS_MD, section);
  process.stderr.write(`bench: appended to ${path.relative(ROOT, BENCHMARKS_MD)}\n`);
}
