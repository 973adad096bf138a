// wasm_glue/gpu/verify.mjs — the GPU path proves itself before device 'auto' takes it: a short
// evaluation (a fixed prompt of 16 tokens, then 4 greedy decode steps) runs on the CPU context
// and on the GPU, every logits row is compared the way the project's tests compare against
// llama.cpp (../shared/README.md: RMS(gpu − cpu) / std(cpu) within the weights' tolerance, and
// the argmax wherever the CPU row's top-2 gap exceeds 10% of its std), and both runs are timed.
// The check runs here (gpuVerdict), on a CPU context the worker opens for it (worker.js
// gpuVerdict) and on the GPU forward; this module also holds the comparison, the verdict and
// where verdicts are kept, so that a check is paid once per adapter, browser, wick version,
// shaders and model file. Nothing here touches WebGPU.

/** wick's version (package.json's; tests/gpu-verify.test.mjs holds them equal): part of a verdict's key. */
export const WICK_VERSION = '0.1.0';

// the check's evaluation: this many prompt tokens, then this many decode steps
export const VERIFY_PROMPT_TOKENS = 16;
export const VERIFY_DECODE_STEPS = 4;
// tokenized with the model's own tokenizer; long enough for 16 tokens in any vocabulary
export const VERIFY_TEXT = 'Once upon a time, in a small town by the sea, there lived an old clockmaker who built a machine that could count the stars, the waves and the grains of sand on the shore.';

const FLOAT_TYPES = new Set([0, 1]); // F32, F16
const BF16 = 30;

/** The shared tolerance (../shared/README.md) for the model's weight types: 0.2% when every
 * matrix is F32 or F16, 1% with BF16, 5% with any quantized type. */
export function toleranceForTypes(types) {
  const ts = [...types];
  if (ts.every((t) => FLOAT_TYPES.has(t))) return 0.002;
  if (ts.every((t) => FLOAT_TYPES.has(t) || t === BF16)) return 0.01;
  return 0.05;
}

/** The weight types of a model's matrices (wick_model_tensors_json). */
export function matrixTypes(tensors) {
  const types = new Set();
  const add = (w) => w && types.add(w.type);
  add(tensors.tok_embd);
  add(tensors.output);
  for (const L of tensors.layers) for (const [, w] of Object.entries(L)) if (w && typeof w === 'object' && 'row_bytes' in w) add(w);
  return types;
}

function stats(row) {
  let mean = 0;
  for (let i = 0; i < row.length; i++) mean += row[i];
  mean /= row.length;
  let v = 0, first = -Infinity, second = -Infinity, arg = 0;
  for (let i = 0; i < row.length; i++) {
    v += (row[i] - mean) ** 2;
    if (row[i] > first) { second = first; first = row[i]; arg = i; } else if (row[i] > second) second = row[i];
  }
  return { std: Math.sqrt(v / row.length), arg, gap: first - second };
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** The index of the first NaN or ±Infinity in a logits row, or -1. */
export function firstNonFinite(row) {
  for (let i = 0; i < row.length; i++) if (!Number.isFinite(row[i])) return i;
  return -1;
}

/**
 * Compares the GPU's logits rows against the CPU's (arrays of Float32Array, the same length):
 * {rows, argmaxChecked, argmaxAgree, relRms (the largest), worstRow, tolerance, problems}.
 * A row with NaN or Inf is a problem of its own.
 */
export function compareLogits(cpuRows, gpuRows, tolerance) {
  const problems = [];
  let argmaxChecked = 0, argmaxAgree = 0, worst = 0, worstRow = -1;
  cpuRows.forEach((ref, i) => {
    const ours = gpuRows[i];
    if (!ours || ours.length !== ref.length) { problems.push(`row ${i}: ${ours ? ours.length : 0} logits, the CPU's ${ref.length}`); worst = Infinity; return; }
    const bad = firstNonFinite(ours);
    if (bad >= 0) { problems.push(`row ${i}: logit ${bad} is ${ours[bad]}`); worst = Infinity; worstRow = i; return; }
    const s = stats(ref);
    let d = 0;
    for (let k = 0; k < ref.length; k++) d += (ours[k] - ref[k]) ** 2;
    const e = Math.sqrt(d / ref.length) / s.std;
    if (!(e <= worst)) { worst = e; worstRow = i; }
    if (!(e <= tolerance)) problems.push(`row ${i}: relative RMS ${(e * 100).toFixed(3)}% > ${(tolerance * 100).toFixed(1)}%`);
    if (s.gap > 0.1 * s.std) {
      argmaxChecked++;
      const a = argmax(ours);
      if (a === s.arg) argmaxAgree++;
      else problems.push(`row ${i}: argmax ${a} ≠ the CPU's ${s.arg}`);
    }
  });
  return { rows: cpuRows.length, argmaxChecked, argmaxAgree, relRms: worst, worstRow, tolerance, problems };
}

const fmt = (x) => (x === null || !Number.isFinite(x) ? String(x) : x >= 100 ? x.toFixed(0) : x.toFixed(1));

/**
 * The verdict of one check: the comparison, both runs' speeds ({prefillTps, decodeTps}) and the
 * choice. The GPU is taken when its logits agree and it is faster at both decode and prefill.
 */
export function verdict(comparison, cpu, gpu, adapter) {
  const correct = comparison.problems.length === 0;
  const faster = gpu.decodeTps > cpu.decodeTps && gpu.prefillTps > cpu.prefillTps;
  const speeds = `decode ${fmt(gpu.decodeTps)} tokens/s on the GPU against ${fmt(cpu.decodeTps)} on the CPU, prefill ${fmt(gpu.prefillTps)} against ${fmt(cpu.prefillTps)}`;
  const { rows, argmaxChecked, argmaxAgree, relRms, worstRow, tolerance, problems } = comparison;
  let reason = null;
  if (!correct) {
    const shown = problems.slice(0, 3).join('; ') + (problems.length > 3 ? `; and ${problems.length - 3} more` : '');
    reason = `the GPU path's logits do not match the CPU path's on this adapter (${adapter}): ${shown} ` +
      `(argmax agrees in ${argmaxAgree} of ${argmaxChecked} rows with a clear winner, largest relative RMS ${fmt(relRms * 100)}% in row ${worstRow} of ${rows}, tolerance ${(tolerance * 100).toFixed(1)}%); the CPU path is kept`;
  } else if (!faster) {
    reason = `the GPU path is slower on this adapter (${adapter}): ${speeds}; the CPU path is kept`;
  }
  return {
    correct, faster, chosen: correct && faster, reason,
    rows, argmaxChecked, argmaxAgree, relRms: Number.isFinite(relRms) ? relRms : null, worstRow, tolerance,
    problems: problems.slice(0, 8),
    cpu, gpu, speeds,
  };
}

/** The verdict's key: what a check depends on (a verdict of another key is not reused). */
export function verdictKey({ adapter, modelHash, build, threads, shaders, hooks }) {
  const agent = typeof navigator !== 'undefined' && navigator.userAgent && !/^Node\.js/.test(navigator.userAgent)
    ? navigator.userAgent
    : typeof process !== 'undefined' && process.versions?.node ? `node ${process.version}` : 'unknown';
  return { adapter, agent, wick: WICK_VERSION, shaders, model: modelHash, build, threads, ...(hooks ? { hooks } : {}) };
}

export const keyString = (key) => JSON.stringify(Object.keys(key).sort().map((k) => [k, key[k]]));

/** A short digest (FNV-1a, 32 bits, hex) of texts: the shaders' part of a verdict's key. */
export function digest(texts) {
  let h = 0x811c9dc5;
  for (const t of texts) for (let i = 0; i < t.length; i++) h = Math.imul(h ^ t.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

// ---- where verdicts are kept (the host side: wick.mjs) ----

const MAX_VERDICTS = 64;
const DB_NAME = 'wick-gpu-verdicts', DB_STORE = 'verdicts';
const memory = new Map(); // keyString → {key, verdict, at}: this process's (Node) or this page's

/**
 * The store of verdicts: list() → [{key, verdict, at}], put(entry). In a browser (a page or a
 * worker) IndexedDB's database "wick-gpu-verdicts"; under Node this process's memory, and the
 * JSON file `file` when given (the load option gpuVerdictFile). Failures to read or write the
 * store leave the check to be run again, nothing worse.
 */
export function verdictStore({ file } = {}) {
  const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';
  if (file && isNode) return fileStore(file);
  if (!isNode && typeof indexedDB !== 'undefined') return idbStore();
  return {
    async list() { return [...memory.values()]; },
    async put(entry) { remember(memory, entry); },
  };
}

function remember(map, entry) {
  map.delete(keyString(entry.key));
  map.set(keyString(entry.key), entry);
  while (map.size > MAX_VERDICTS) map.delete(map.keys().next().value);
}

function fileStore(file) {
  // not a literal name: a bundler building for the browser neither fails on it nor stubs it (as wick.mjs's nodeModule)
  const fsp = (name = 'fs/promises') => import(/* @vite-ignore */ /* webpackIgnore: true */ `node:${name}`);
  const read = async () => {
    try {
      const j = JSON.parse(await (await fsp()).readFile(file, 'utf8'));
      return Array.isArray(j.verdicts) ? j.verdicts : [];
    } catch {
      return [];
    }
  };
  return {
    list: read,
    async put(entry) {
      const map = new Map((await read()).map((e) => [keyString(e.key), e]));
      remember(map, entry);
      const fs = await fsp();
      const tmp = `${file}.${process.pid}.tmp`;
      await fs.writeFile(tmp, JSON.stringify({ format: 'wick-gpu-verdicts', verdicts: [...map.values()] }, null, 1));
      await fs.rename(tmp, file);
    },
  };
}

function idbStore() {
  const open = () => new Promise((resolve, reject) => {
    const r = indexedDB.open(DB_NAME, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(DB_STORE);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const run = async (mode, fn) => {
    const db = await open();
    try {
      return await new Promise((resolve, reject) => {
        const tx = db.transaction(DB_STORE, mode);
        const r = fn(tx.objectStore(DB_STORE));
        tx.oncomplete = () => resolve(r?.result);
        tx.onerror = () => reject(tx.error);
      });
    } finally {
      db.close();
    }
  };
  return {
    async list() {
      try { return (await run('readonly', (s) => s.getAll())) || []; } catch { return [...memory.values()]; }
    },
    async put(entry) {
      remember(memory, entry);
      try { await run('readwrite', (s) => s.put(entry, keyString(entry.key))); } catch { /* kept in memory only */ }
    },
  };
}

/**
 * Device 'auto': the verdict on the GPU path for this model on this adapter: the one the host
 * kept for the same key (gpuVerify 'once', the default), else a fresh check's, marked `fresh`
 * for the host to keep. checkMs is this load's time spent checking (0: reused). cpu: the
 * worker's CPU side, {tokenize(text), open(nTokens) → {eval(tokens, all), row(i), trim(), free()}}.
 */
export async function gpuVerdict({ gpu, forward, tensors, adapter, msg, build, threads, cpu }) {
  const key = verdictKey({
    adapter, modelHash: tensors.model_hash, build, threads,
    shaders: digest(Object.values(await gpu.shaderSources())),
    hooks: msg.gpuTestHooks ? JSON.stringify(msg.gpuTestHooks) : undefined,
  });
  if (msg.gpuVerify !== 'always') {
    const kept = (msg.gpuVerdicts || []).find((e) => e && e.key && keyString(e.key) === keyString(key));
    if (kept) return { ...kept.verdict, key, reused: true, checkMs: 0, checkedAt: kept.at };
  }
  const t0 = performance.now();
  const result = await runCheck(cpu, forward, tensors, adapter, msg.gpuTestHooks || {});
  return { ...result, key, reused: false, checkMs: performance.now() - t0, checkedAt: new Date().toISOString(), fresh: true };
}

/** The check itself: the fixed prompt and the decode steps on a CPU context and on the GPU,
 * the same tokens fed to both (each step's the CPU's greedy choice), compared and timed. */
async function runCheck(cpu, forward, tensors, adapter, hooks) {
  const steps = VERIFY_DECODE_STEPS;
  let prompt = cpu.tokenize(VERIFY_TEXT);
  while (prompt.length < VERIFY_PROMPT_TOKENS) prompt = prompt.concat(prompt.slice(1));
  prompt = prompt.slice(0, Math.max(1, Math.min(VERIFY_PROMPT_TOKENS, forward.nCtx - steps - 1)));
  const n = prompt.length, nVocab = tensors.config.n_vocab;
  const cpuRows = [], gpuRows = [];
  // hooks.cpuDelayMs (tests only): a wait per token the CPU evaluates, a slow CPU, so that a
  // correct GPU also wins on speed
  const cpuWait = hooks.cpuDelayMs > 0 ? (tokens) => new Promise((r) => setTimeout(r, tokens * hooks.cpuDelayMs)) : null;
  const cpuSpeed = {}, gpuSpeed = {};
  const c = cpu.open(n + steps + 8);
  try {
    // a warm-up token on each path (first-use costs: pipelines, caches), then the timed runs
    c.eval([prompt[0]], false);
    c.trim();
    let t = performance.now();
    c.eval(prompt, true);
    if (cpuWait) await cpuWait(n);
    cpuSpeed.prefillMs = performance.now() - t;
    for (let i = 0; i < n; i++) cpuRows.push(c.row(i));
    const fed = [];
    t = performance.now();
    for (let k = 0; k < steps; k++) {
      const tok = argmaxOf(cpuRows[cpuRows.length - 1]);
      fed.push(tok);
      c.eval([tok], false);
      if (cpuWait) await cpuWait(1);
      cpuRows.push(c.row(-1));
    }
    cpuSpeed.decodeMs = performance.now() - t;

    await forward.eval([prompt[0]], 0, false);
    t = performance.now();
    const all = await forward.eval(prompt, 0, true);
    gpuSpeed.prefillMs = performance.now() - t;
    for (let i = 0; i < n; i++) gpuRows.push(all.subarray(i * nVocab, (i + 1) * nVocab));
    t = performance.now();
    for (let k = 0; k < steps; k++) gpuRows.push(await forward.eval([fed[k]], n + k, false));
    gpuSpeed.decodeMs = performance.now() - t;
  } finally {
    c.free();
  }
  const speed = (s) => ({ prefillTps: (n * 1000) / Math.max(s.prefillMs, 1e-3), decodeTps: (steps * 1000) / Math.max(s.decodeMs, 1e-3), prefillMs: s.prefillMs, decodeMs: s.decodeMs, promptTokens: n, decodeSteps: steps });
  const comparison = compareLogits(cpuRows, gpuRows, toleranceForTypes(matrixTypes(tensors)));
  return verdict(comparison, speed(cpuSpeed), speed(gpuSpeed), adapter);
}

function argmaxOf(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** A digest of what a GGUF header says (its tensors' names, types, shapes and places, its
 *  metadata but the long arrays, the file's size): which file a kept GPU verdict was for, known
 *  before the weights are read. Two fine-tunes of one model share it, and the verdict: the check
 *  is of the shaders on these shapes and types, which they share. */
export function headerDigest(header, size) {
  const big = (v) => typeof v === 'bigint' ? v.toString() : v;
  const md = Object.entries(header.metadata).filter(([, v]) => !Array.isArray(v) && !ArrayBuffer.isView(v));
  return digest([String(size), JSON.stringify(md, (k, v) => big(v)), JSON.stringify(header.tensors.map((t) => [t.name, t.type, t.dims, t.offset]), (k, v) => big(v))]);
}

/** The kept verdict (msg.gpuVerdicts) that chose the GPU path for a file with this header
 *  digest on this adapter, browser, wick version, shaders and build (gpuVerify 'once'), or null. */
export function keptChoice({ adapter, build, threads, shaders, msg, digest: header }) {
  const now = keyString({ ...verdictKey({ adapter, modelHash: null, build, threads, shaders,
    hooks: msg.gpuTestHooks ? JSON.stringify(msg.gpuTestHooks) : undefined }), model: null });
  return (msg.gpuVerdicts || []).find((e) => e?.key && e.verdict?.chosen && e.verdict.header === header && keyString({ ...e.key, model: null }) === now) || null;
}
