// wasm_glue/wick.mjs — wick's public JavaScript API, for a page, a worker or Node:
//
//   import { Wick } from './wasm_glue/wick.mjs';
//   const engine = await Wick.load('models/stories260K.gguf', { onProgress: (p) => … });
//   for await (const chunk of engine.generate('Once upon a time', { maxTokens: 100 })) …
//   const stream = await engine.chat.completions.create({ messages, stream: true });
//
// Everything heavy runs in a dedicated worker (worker.js: a Web Worker on a page, a
// worker_threads Worker under Node): this thread only sends requests and receives text.
// The pthreads build is used when the page is cross-origin isolated (SharedArrayBuffer) and
// under Node, the single-threaded build otherwise; `engine.multiThreaded` says which. Where the
// browser has relaxed SIMD, the relaxed twin of that build (same results, faster kernels);
// `engine.build` names the one in use ('mt', 'st', 'mt-relaxed', 'st-relaxed').
import './constants.js';
import './gguf-header.js';
import './download.js';
import { WickError, invalid, checkNumber, checkSignal, checkGenerateOptions } from './options.mjs';
import { MEDIA_MARKER, hasImages, markImages, decodeImage, imageKey } from './images.mjs';
import { jsonSchemaToGrammar, JSON_OBJECT_GRAMMAR } from './json-schema.mjs';
import { toolCallFormat, parseToolCalls, planToolCalls, ToolCallSplitter } from './tool-calls.mjs';

const { WickConstants, WickGguf, WickDownload } = globalThis;
const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined' && typeof importScripts === 'undefined';
// Node's own modules, imported only under Node. The name is not a literal, so that a bundler
// building for the browser neither fails on them (esbuild) nor stubs them with a warning (Vite).
const nodeModule = (name) => import(/* @vite-ignore */ /* webpackIgnore: true */ `node:${name}`);
const nodeOs = isNode ? await nodeModule('os') : null;
const PUSH_CHUNK = 16 << 20;         // an ArrayBuffer source is sent to the worker in pieces this big
const MAX_THREADS = 8;
const KV_TYPES = ['f16', 'f32', 'q8_0', 'q4_0'];
const START_TIMEOUT_MS = 60000;
const SPLIT_NAME = /-(\d{5})-of-(\d{5})\.gguf$/;

export { WickError, jsonSchemaToGrammar, toolCallFormat, parseToolCalls, planToolCalls };

// chat-template.mjs (and through it @huggingface/jinja) is imported when a chat template is first
// rendered: a page that only loads a model, or only completes text, never downloads it.
const chatTemplates = () => import('./chat-template.mjs');
// loaded on first use, not with the page: a server connection (Wick.connect) and the embeddings' options
const connectModule = () => import('./connect.mjs');
const embeddingsModule = () => import('./embeddings.mjs');
// the GPU check's verdicts (device 'auto'), kept so that a check is paid once
const verifyModule = () => import('./gpu/verify.mjs');

/** The prompt text of a conversation rendered with a chat template, without a model (chat-template.mjs). */
export async function renderChatTemplate(source, messages, options) {
  return (await chatTemplates()).renderChatTemplate(source, messages, options);
}

/** Supplies @huggingface/jinja (the module object) where it cannot be imported by name. */
function useJinja(module) {
  if (!(module?.Template && module.Environment && module.Interpreter)) throw invalid('useJinja takes the @huggingface/jinja module (with its Template, Environment and Interpreter classes)');
  return chatTemplates().then((m) => m.useJinja(module));
}

/** About the number of physical cores: half the logical ones, at least 1, at most 8. */
export function defaultThreads() {
  const logical = isNode ? (nodeOs.availableParallelism?.() ?? nodeOs.cpus().length) : globalThis.navigator?.hardwareConcurrency || 2;
  return Math.min(MAX_THREADS, Math.max(1, Math.floor(logical / 2)));
}

// The smallest module that uses relaxed SIMD: () -> v128 returning
// i16x8.relaxed_dot_i8x16_i7x16_s(v128.const 0, v128.const 0). Browsers that know the instruction
// (Chrome 114+, Firefox 146+) validate it; the others (Safari today) do not.
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,               // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,                      // type: () -> v128
  0x03, 0x02, 0x01, 0x00,                                        // one function of that type
  0x0a, 0x2b, 0x01, 0x29, 0x00,                                  // code: one body of 41 bytes, no locals
  0xfd, 0x0c, ...new Array(16).fill(0), 0xfd, 0x0c, ...new Array(16).fill(0), // two v128.const 0
  0xfd, 0x92, 0x02, 0x0b,                                        // i16x8.relaxed_dot_i8x16_i7x16_s, end
]);

/** Whether this context runs relaxed SIMD (then the relaxed builds are loaded: same results, faster). */
export function hasRelaxedSimd() {
  try { return WebAssembly.validate(RELAXED_PROBE); } catch { return false; }
}

/** Whether this context can run the pthreads build (SharedArrayBuffer and cross-origin isolation). */
export function canUseThreads() {
  if (isNode) return true;
  return globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer !== 'undefined';
}

// ---- checking the caller's arguments ----

// Every setting is sent with each request: the engine keeps settings between generations.
// With temperature 0 and these defaults (constants.js, a new generator's) the text is the CLI's greedy text.
const SETTING_DEFAULTS = WickConstants.GENERATION_DEFAULTS;

/** Turns generate() options into the engine's settings, refusing bad values with a clear Error. */
function generateSettings(options) {
  const { given, stops, probs, grammar, logitBias } = checkGenerateOptions(options);
  const settings = { ...SETTING_DEFAULTS, ...given };
  if (settings.seed === undefined) settings.seed = Math.floor(Math.random() * 2 ** 32);
  if (options.ignoreEos !== undefined) settings.ignore_eos = options.ignoreEos ? 1 : 0;
  return { settings, stops, probs, grammar, bias: logitBias };
}

// ---- where the files are ----

// The engine's files, each named by a literal `new URL('…', import.meta.url)`: bundlers (Vite,
// webpack 5, Parcel; Rollup with a plugin) recognise the pattern, copy the file into the app's
// build and rewrite the URL, so a bundled app needs no wasmBase option. esbuild leaves the URLs
// as they are: the files then go beside the bundle (README.md, "With a bundler"). The paths are
// the repository's; `make dist` rewrites them for its flat folder (the npm package's and a static
// host's), where the builds sit in wasm/ beside this module. A function: nothing is resolved
// before a load.
const engineFiles = () => ({
  worker: new URL('./worker.js', import.meta.url).href,
  constants: new URL('./constants.js', import.meta.url).href,
  gguf: new URL('./gguf-header.js', import.meta.url).href,
  download: new URL('./download.js', import.meta.url).href,
  gpu: new URL('./gpu/backend.mjs', import.meta.url).href,
  st: {
    script: new URL('../build/wasm/wick.js', import.meta.url).href,
    wasm: new URL('../build/wasm/wick.wasm', import.meta.url).href,
  },
  mt: {
    script: new URL('../build/wasm/wick-mt.js', import.meta.url).href,
    wasm: new URL('../build/wasm/wick-mt.wasm', import.meta.url).href,
    threadWorker: new URL('../build/wasm/wick-mt.worker.js', import.meta.url).href,
  },
  'st-relaxed': {
    script: new URL('../build/wasm/wick-relaxed.js', import.meta.url).href,
    wasm: new URL('../build/wasm/wick-relaxed.wasm', import.meta.url).href,
  },
  'mt-relaxed': {
    script: new URL('../build/wasm/wick-mt-relaxed.js', import.meta.url).href,
    wasm: new URL('../build/wasm/wick-mt-relaxed.wasm', import.meta.url).href,
    threadWorker: new URL('../build/wasm/wick-mt-relaxed.worker.js', import.meta.url).href,
  },
});

/** The builds' files in one folder (the wasmBase option), by their names in the build. */
function filesIn(base) {
  const at = (name) => new URL(name, base).href;
  return {
    st: { script: at('wick.js'), wasm: at('wick.wasm') },
    mt: { script: at('wick-mt.js'), wasm: at('wick-mt.wasm'), threadWorker: at('wick-mt.worker.js') },
    'st-relaxed': { script: at('wick-relaxed.js'), wasm: at('wick-relaxed.wasm') },
    'mt-relaxed': { script: at('wick-mt-relaxed.js'), wasm: at('wick-mt-relaxed.wasm'), threadWorker: at('wick-mt-relaxed.worker.js') },
  };
}

/** The absolute URL of a string source (relative ones against the page). */
function absoluteUrl(s) {
  const base = globalThis.location?.href;
  try { return new URL(s, base).href; } catch { throw invalid(`not a URL: ${s}`); }
}

/** The absolute URL of wasmBase or workerUrl: against the page, or a file path under Node. */
async function resourceUrl(u, folder) {
  let s = String(u);
  if (folder && !s.endsWith('/')) s += '/';
  if (isNode && !/^[a-z][a-z0-9+.-]*:/i.test(s)) {
    const { pathToFileURL } = await nodeModule('url');
    return pathToFileURL(s).href + (folder && !pathToFileURL(s).href.endsWith('/') ? '/' : '');
  }
  return absoluteUrl(s);
}

/** The URLs of all parts of a split model, from the first one's name (name-00001-of-00003.gguf). */
export function splitUrls(first) {
  const m = SPLIT_NAME.exec(first);
  if (!m) return [first];
  const n = Number(m[2]);
  if (Number(m[1]) !== 1) throw invalid(`${first} is part ${Number(m[1])} of a split model: give the first part (-00001-of-${m[2]})`);
  return Array.from({ length: n }, (_, i) => first.replace(SPLIT_NAME, `-${String(i + 1).padStart(5, '0')}-of-${m[2]}.gguf`));
}

/** The description of a source the worker understands: {kind, items, sizes?}. */
async function describeSource(source, useCache) {
  if (typeof source === 'string' || source instanceof URL) {
    const s = String(source);
    if (isNode && !/^(https?|data|blob):/i.test(s)) {
      const { fileURLToPath } = await nodeModule('url');
      const path = await nodeModule('path');
      const file = s.startsWith('file:') ? fileURLToPath(s) : path.resolve(s);
      return { kind: 'path', items: splitUrls(file), label: file };
    }
    const urls = splitUrls(absoluteUrl(s));
    return { kind: 'url', items: urls.map((url) => ({ url, cache: useCache })), label: urls[0], sizes: urls.length > 1 ? await headSizes(urls) : undefined };
  }
  if (Array.isArray(source)) {
    if (!source.length || source.some((u) => typeof u !== 'string' && !(u instanceof URL))) throw invalid('an array source must hold the URLs of the parts of a split model');
    if (isNode && source.every((u) => !/^(https?|data|blob):/i.test(String(u)))) {
      const path = await nodeModule('path');
      return { kind: 'path', items: source.map((u) => path.resolve(String(u))), label: String(source[0]) };
    }
    const urls = source.map((u) => absoluteUrl(String(u)));
    return { kind: 'url', items: urls.map((url) => ({ url, cache: useCache })), label: urls[0], sizes: urls.length > 1 ? await headSizes(urls) : undefined };
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) return { kind: 'blob', items: [source], label: source.name || 'blob' };
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source) || (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer)) {
    const bytes = source instanceof ArrayBuffer || source instanceof SharedArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    return { kind: 'push', items: [{ size: bytes.length }], bytes, label: 'ArrayBuffer' };
  }
  throw invalid('source must be a URL, an array of URLs (a split model), a File/Blob or an ArrayBuffer');
}

/** Sizes of the parts of a split model (HEAD requests), so the whole is checked before any download. */
async function headSizes(urls) {
  try {
    const sizes = await Promise.all(urls.map(async (u) => Number((await fetch(u, { method: 'HEAD' })).headers.get('Content-Length'))));
    return sizes.every((n) => Number.isFinite(n) && n > 0) ? sizes : undefined;
  } catch {
    return undefined; // offline (the parts may be cached) or HEAD refused: each part is checked as it comes
  }
}

// ---- the worker ----

/** A worker of either kind behind one small interface: post, terminate, and three callbacks. */
async function startWorker(url, { onMessage, onCrash }) {
  if (isNode) {
    const { Worker } = await nodeModule('worker_threads');
    // No Node options: the worker needs none, and some of the parent's refuse to apply to it
    // (`node --input-type=module -e …` would kill it at once). V8 flags are process-wide anyway.
    const w = new Worker(new URL(url), { execArgv: [] });
    w.on('message', onMessage);
    w.on('error', (e) => onCrash(e));
    w.on('exit', (code) => onCrash(new Error(`the worker exited (code ${code})`)));
    return { post: (m, t) => w.postMessage(m, t), terminate: () => w.terminate(), ref: () => w.ref(), unref: () => w.unref(), raw: w };
  }
  const w = new Worker(url);
  w.onmessage = (e) => onMessage(e.data);
  w.onerror = (e) => { e.preventDefault?.(); onCrash(new Error(e.message || 'the worker failed to start or threw')); };
  w.onmessageerror = () => onCrash(new Error('a message from the worker could not be read'));
  return { post: (m, t) => w.postMessage(m, t), terminate: () => w.terminate(), ref() {}, unref() {}, raw: w };
}

/** A queue between the worker's messages and an async iterator. */
class ChunkQueue {
  constructor() { this.items = []; this.wake = null; }
  push(item) { this.items.push(item); if (this.wake) { const w = this.wake; this.wake = null; w(); } }
  async next() {
    while (!this.items.length) await new Promise((r) => (this.wake = r));
    return this.items.shift();
  }
}

class Engine {
  constructor() {
    this._nextId = 1;
    this._pending = new Map();
    this._dead = null;
    this.chat = { completions: { create: (request) => this._chatCompletion(request) } };
    this.embeddings = { create: (request) => this._embeddingsCreate(request) };
  }

  async _start({ threads, build }) {
    const files = this._files[build];
    this._worker = await startWorker(this._workerUrl, {
      onMessage: (m) => this._onMessage(m),
      onCrash: (e) => this._crash(e),
    });
    const starting = this._request({
      type: 'init',
      build,
      threads,
      scriptUrl: files.script,
      wasmUrl: files.wasm,
      threadWorkerUrl: files.threadWorker,
      constantsUrl: this._constantsUrl,
      ggufUrl: this._ggufUrl,
      downloadUrl: this._downloadUrl,
      gpuModuleUrl: this._gpuUrl,
    });
    // A wasm module that never comes up (a missing or half-written file, a blocked thread
    // worker) would otherwise leave the load pending for ever.
    const timer = setTimeout(() => this._crash(new WickError('E_WORKER', `the engine did not start within ${START_TIMEOUT_MS / 1000} s (${files.script})`)), START_TIMEOUT_MS);
    const init = await starting.finally(() => clearTimeout(timer));
    /** 'mt' (pthreads) or 'st' (single-threaded), with '-relaxed' for the relaxed-SIMD builds */
    this.build = init.build;
    /** true when the pthreads build is in use */
    this.multiThreaded = init.build.startsWith('mt');
    /** true when the relaxed-SIMD build is in use */
    this.relaxedSimd = init.build.endsWith('-relaxed');
    /** threads the engine computes with */
    this.threads = init.threads;
  }

  _onMessage(m) {
    if (m.type === 'fatal') { this._crash(new WickError('E_WORKER', m.message)); return; }
    const p = this._pending.get(m.id);
    if (!p) return;
    if (m.type === 'progress') p.onProgress?.(m);
    else if (m.type === 'chunk') p.onChunk?.(m);
    else {
      this._pending.delete(m.id);
      if (!this._pending.size) this._worker?.unref();
      if (m.device) this._setDevice(m.device); // a GPU failure: the engine went on on the CPU
      if (m.type === 'result') p.resolve(m.value);
      else p.reject(new WickError(m.code, m.message));
    }
  }

  _crash(e) {
    if (this._dead) return;
    this._dead = e instanceof WickError ? e : new WickError('E_WORKER', `the engine's worker died: ${e.message || e}`);
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(this._dead);
    try { this._worker?.terminate(); } catch { /* already gone */ }
  }

  _request(message, { onProgress, onChunk, transfer } = {}) {
    if (this._dead) return Promise.reject(this._dead);
    const id = this._nextId++;
    const done = new Promise((resolve, reject) => this._pending.set(id, { resolve, reject, onProgress, onChunk }));
    this._worker.ref();
    this._worker.post({ ...message, id }, transfer);
    done.id = id;
    return done;
  }

  _abort(id) {
    if (!this._dead && this._pending.has(id)) this._worker.post({ type: 'abort', id });
  }

  async _load(source, options) {
    const described = await describeSource(source, options.cache !== false);
    // device 'auto' proves the GPU path before taking it (worker.js gpuVerdict): the verdicts kept so far go with the load
    const gpuVerify = options.gpuVerify || 'once';
    const verdicts = options.device === 'auto' && gpuVerify !== 'never' ? (await verifyModule()).verdictStore({ file: options.gpuVerdictFile }) : null;
    const onProgress = options.onProgress;
    const report = (m) => {
      try { onProgress?.({ progress: m.progress, phase: m.phase, loaded: m.loaded, total: m.total, cached: !!m.cached, resumed: m.resumed || 0 }); } catch (e) { console.error(e); }
    };
    // an mmproj (images, src/images.c) comes beside the model; images run on the CPU
    let mmproj = null;
    if (options.mmproj !== undefined && options.mmproj !== null) {
      let m = options.mmproj;
      if (m instanceof ArrayBuffer || ArrayBuffer.isView(m)) m = new Blob([m]);
      const d = await describeSource(m, options.cache !== false);
      if (d.items.length !== 1) throw invalid('mmproj must be one file');
      mmproj = { kind: d.kind, items: d.items, sizes: d.sizes };
      // 'auto' takes the CPU; 'gpu' is refused
      if (options.device === 'gpu') throw invalid("an mmproj runs on the CPU: load it with device 'cpu' or 'auto' (asked for 'gpu')");
      if (options.device === 'auto') options = { ...options, device: 'cpu' };
    }
    const request = this._request({
      type: 'load',
      mmproj,
      source: { kind: described.kind, items: described.items, sizes: described.sizes },
      contextSize: options.contextSize || 0,
      kvType: this._kvTypeK,
      kvTypeV: this._kvTypeV,
      tablesOutside: options.tablesOutside,
      weightsOutside: options.weightsOutside,
      maxHeapBytes: options.maxHeapBytes || 0,
      device: options.device || 'cpu',
      gpuAllowSoftware: options.gpuAllowSoftware === true,
      warmUp: options.warmUp !== false,
      gpuVerify,
      gpuVerdicts: verdicts && gpuVerify === 'once' ? await verdicts.list() : [],
      gpuTestHooks: options.gpuTestHooks || null,
      gpuTopK: options.gpuTopK !== false,
      gpuDecodeKernel: options.gpuDecodeKernel || 'auto',
    }, { onProgress: report });
    const onAbort = () => this._abort(request.id);
    options.signal?.addEventListener('abort', onAbort);
    // the signal may have fired while the worker was starting, before anyone listened
    if (options.signal?.aborted) onAbort();
    try {
      if (described.kind === 'push') this._pushBytes(request.id, described.bytes);
      const info = await request;
      const verify = info.device?.verify;
      if (verify?.fresh) {
        delete verify.fresh;
        const { key, reused, checkMs, checkedAt, ...verdict } = verify;
        await verdicts?.put({ key, verdict, at: checkedAt }).catch(() => {});
      }
      this._label = described.label;
      this._setInfo(info);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Sends an ArrayBuffer source in pieces: the worker writes each into wasm memory as it comes. */
  _pushBytes(id, bytes) {
    for (let off = 0; off < bytes.length; off += PUSH_CHUNK) {
      const piece = bytes.slice(off, Math.min(bytes.length, off + PUSH_CHUNK));
      this._worker.post({ type: 'data', id, bytes: piece.buffer }, [piece.buffer]);
    }
    this._worker.post({ type: 'data', id, end: true });
  }

  _setInfo(r) {
    const md = r.header?.metadata || {};
    /** What the engine reports about the model, the GGUF metadata (big arrays summarised), and the run. */
    this.info = {
      ...r.model,
      name: md['general.name'] || String(this._label).split(/[\\/]/).pop(),
      source: this._label,
      metadata: md,
      specialTokens: r.header?.specialTokens || {},
      chatTemplate: typeof md['tokenizer.chat_template'] === 'string' ? md['tokenizer.chat_template'] : null,
      fileBytes: r.fileBytes,
      outsideBytes: r.outsideBytes,
      jsBytes: r.jsBytes,
      gpuBytes: r.gpuBytes,
      files: r.files,
      fromCache: r.cached,
      contextSize: r.contextSize,
      kvBytes: r.kvBytes,
      stateBytes: r.stateBytes,
      kvType: this._kvType,
      kvTypeK: this._kvTypeK,
      kvTypeV: this._kvTypeV,
      build: r.build,
      multiThreaded: r.build.startsWith('mt'),
      relaxedSimd: r.build.endsWith('-relaxed'),
      threads: r.threads,
      wasmMemoryBytes: r.heapBytes,
      warmUpMs: r.warmUpMs,
      /** the mmproj's projector, input side, positions per encoded image and size; null without one */
      vision: r.vision || null,
    };
    this._setDevice(r.device);
  }

  _setDevice(d) {
    /** Where the forward pass runs: {type: 'gpu', adapter, software, converted} (the adapter's
     * description; tensors of types the shaders do not read, converted to F32 at load) or
     * {type: 'cpu', reason} (why not the GPU: asked for, no adapter, a software adapter, a
     * family the GPU path does not run, the GPU check failed or was slower, a GPU failure); under
     * device 'auto' also `verify`, the GPU check's verdict (wick.d.ts GpuVerdict) */
    this.device = d || { type: 'cpu', reason: 'asked for' };
  }

  /** Token ids of a text. addBos: prepend BOS as the model asks (default true); special: parse special-token texts. */
  /** p_i = exp(z_i/T) / Σ_j exp(z_j/T) computed by the engine (T = 0: all mass on the argmax). */
  async softmax(logits, temperature = 1) {
    if (!Array.isArray(logits) && !ArrayBuffer.isView(logits)) throw invalid('softmax: logits must be an array of numbers');
    if (logits.length === 0 || Array.from(logits).some((z) => typeof z !== 'number' || Number.isNaN(z))) throw invalid('softmax: logits must be numbers');
    if (typeof temperature !== 'number' || !(temperature >= 0)) throw invalid('softmax: temperature must be a number ≥ 0');
    return this._request({ type: 'softmax', logits: Array.from(logits), temperature });
  }

  async tokenize(text, { addBos = true, special = false } = {}) {
    if (typeof text !== 'string') throw invalid('tokenize: text must be a string');
    return this._request({ type: 'tokenize', text, addBos, special });
  }

  /** The text of token ids. */
  async detokenize(tokens) {
    checkTokens(tokens, this.info?.n_vocab);
    return this._request({ type: 'detokenize', tokens: Array.from(tokens) });
  }

  /**
   * Streams a continuation of `prompt` (a string, or token ids used as they are): yields
   * {text, tokens, probs?, shifted?} as tokens are produced, then
   * {done: true, finishReason: 'eog'|'stop'|'length'|'grammar'|'abort', timings}.
   * With `grammar` (GBNF text, llama.cpp's format; jsonSchemaToGrammar makes one from a JSON
   * schema) every token keeps the text a prefix of the grammar's language, and generation ends
   * with finishReason 'grammar' once the text is complete and the grammar allows nothing more
   * (or 'eog' when the model ends it where the text is complete).
   */
  generate(prompt, options = {}) {
    if (this.info?.encoder)
      throw new WickError('E_UNSUPPORTED', `${this.info.name} is an embedding model (${this.info.architecture}, an encoder): it cannot generate text; use embed()`);
    const checked = generateSettings(options);
    if (typeof prompt !== 'string' && !Array.isArray(prompt) && !ArrayBuffer.isView(prompt)) throw invalid('prompt must be a string or an array of token ids');
    if (typeof prompt !== 'string') checkTokens(prompt, this.info?.n_vocab);
    if (typeof prompt === 'string' && prompt === '' && options.addBos === false) throw invalid('the prompt is empty');
    return this._generate(prompt, checked, options);
  }

  async *_generate(prompt, { settings, stops, probs, grammar, bias }, options) {
    const tokens = typeof prompt === 'string' ? await this.tokenize(prompt, { addBos: options.addBos !== false }) : Array.from(prompt);
    if (!tokens.length) throw invalid('the prompt has no tokens');
    yield* this._stream({ type: 'generate', tokens, settings, stops, probs, grammar, bias, prefixStates: options.prefixStates !== false }, options.signal);
  }

  async *_stream(message, signal) {
    checkSignal(signal);
    const queue = new ChunkQueue();
    const request = this._request(message, { onChunk: (c) => queue.push({ chunk: c }) });
    request.then((v) => queue.push({ end: v }), (e) => queue.push({ error: e }));
    const id = request.id;
    // Once stopped, text already on its way is dropped: the next record is the final one.
    let stopped = false;
    const onAbort = () => { stopped = true; this._abort(id); };
    this._active = this._active || new Map();
    this._active.set(id, onAbort);
    signal?.addEventListener('abort', onAbort);
    let finished = false;
    try {
      for (;;) {
        const item = await queue.next();
        if (item.chunk && stopped) continue;
        if (item.chunk) {
          const { text, tokens, probs, shifted, reevaluated } = item.chunk;
          const out = { text, tokens };
          if (probs) out.probs = probs;
          if (shifted) out.shifted = shifted;
          if (reevaluated) out.reevaluated = reevaluated;
          yield out;
        } else if (item.error) {
          finished = true;
          if (item.error.code === 'E_ABORTED') { yield { done: true, finishReason: 'abort', timings: null }; return; }
          throw item.error;
        } else {
          finished = true;
          yield item.end;
          return;
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this._active.delete(id);
      if (!finished) this._abort(id); // the caller stopped iterating: stop the engine too
    }
  }

  /**
   * Embeddings of `input` (a string, an array of strings, or token ids), one Float32Array per
   * input (with pooling 'none', an array of one per token): [CLS] … [SEP] added as llama.cpp adds
   * them, every input in as few passes of the engine as its batch allows. pooling: the model's
   * own unless 'none' | 'mean' | 'cls' | 'last'; normalize (default true): unit length;
   * dimensions: the first d values only (Matryoshka), renormalized; truncate (default false): an
   * input longer than the window keeps its first tokens instead of failing with E_CONTEXT_FULL.
   */
  async embed(input, options = {}) {
    return (await this._embed(input, options)).vectors;
  }

  async _embed(input, options) {
    if (!this.info) throw new WickError('E_UNLOADED', 'no model is loaded');
    if (!this.info.pooling) // an encoder, or a decoder whose file names its pooling (Qwen3-Embedding)
      throw new WickError('E_UNSUPPORTED', `${this.info.name} is a generative model (${this.info.architecture}), not an embedding model: embed() needs an encoder such as bert, or a decoder whose file sets ${this.info.architecture}.pooling_type`);
    const dim = this.info.embedding_length;
    const { embedSettings, embedInputs, fitTokens, cutDimensions } = await embeddingsModule();
    const s = embedSettings(options, dim);
    const inputs = embedInputs(input);
    const sequences = [];
    for (const [i, x] of inputs.entries()) {
      const ids = typeof x === 'string' ? await this.tokenize(x, { addBos: true }) : Array.from(x);
      if (typeof x !== 'string') checkTokens(ids, this.info.n_vocab);
      sequences.push(fitTokens(ids, this.info.contextSize, s.truncate, i));
    }
    const rows = await this._request({ type: 'embed', sequences, pooling: s.pooling, normalize: s.normalize, dim });
    const cut = (v) => cutDimensions(v, s.dimensions, s.normalize);
    const vectors = rows.map((r) => (Array.isArray(r) ? r.map(cut) : cut(r)));
    return { vectors, tokens: sequences.reduce((a, q) => a + q.length, 0) };
  }

  /** OpenAI's embeddings.create: {input, dimensions?, encoding_format?: 'float' | 'base64'} → {object: 'list', data, model, usage}. */
  async _embeddingsCreate(request) {
    if (!request || typeof request !== 'object') throw invalid('embeddings.create: the request must be an object');
    const { input, dimensions, encoding_format: encodingFormat = 'float' } = request;
    if (this.info?.encoder && this.info.pooling === 'none')
      throw new WickError('E_UNSUPPORTED', `${this.info.name} pools nothing (pooling_type none): embed(input, { pooling: 'mean' }) gives one vector per input`);
    const { vectors, tokens } = await this._embed(input, { dimensions, truncate: request.truncate === true });
    const { embeddingsResponse } = await embeddingsModule();
    return embeddingsResponse(vectors, { model: request.model || this.info.name, tokens, encodingFormat });
  }

  /**
   * How relevant each document is to the query, by a reranker (pooling_type rank: bge-reranker,
   * Qwen3-Reranker): [{index, score}] from the most relevant down, the first topN (default all).
   * Each pair is formed and scored as llama.cpp's server does for /v1/rerank (the same scores as
   * its relevance_score: bge-reranker's logit, Qwen3-Reranker's P(yes)).
   */
  async rerank(query, documents, options = {}) {
    if (!this.info) throw new WickError('E_UNLOADED', 'no model is loaded');
    if (!this.info.reranker)
      throw new WickError('E_UNSUPPORTED', `${this.info.name} is not a reranker (${this.info.architecture} without pooling_type rank): rerank() needs one such as bge-reranker or Qwen3-Reranker`);
    const { rerankSettings, rankResults } = await embeddingsModule();
    const { topN } = rerankSettings(query, documents, options);
    const { scores } = await this._request({ type: 'rerank', query, documents });
    return rankResults(scores, topN);
  }

  /** Stops every generation in progress (each ends with finishReason 'abort'). */
  abort() {
    for (const stop of this._active?.values() || []) stop();
  }

  // ---- saved sessions and shared prefixes (src/state.c; documented in wick.d.ts) ----

  async saveState() {
    return this._request({ type: 'saveState' });
  }

  async loadState(blob) {
    return this._request({ type: 'loadState', blob: stateBytes(blob) });
  }

  async addPrefix(blob) {
    return this._request({ type: 'addPrefix', blob: stateBytes(blob) });
  }

  async clearPrefixes() {
    return this._request({ type: 'clearPrefixes' });
  }

  async savePrefix(prefix, { template } = {}) {
    let tokens;
    if (typeof prefix === 'string') tokens = await this.tokenize(prefix, { special: true });
    else if (Array.isArray(prefix) || ArrayBuffer.isView(prefix)) {
      checkTokens(prefix, this.info?.n_vocab);
      tokens = Array.from(prefix);
    }
    else if (prefix && (typeof prefix.system === 'string' || Array.isArray(prefix.messages))) {
      const messages = prefix.messages ?? [{ role: 'system', content: prefix.system }];
      const text = await this.applyChatTemplate(messages, { template, addGenerationPrompt: false });
      const bos = this.info.specialTokens.bos;
      tokens = await this.tokenize(text, { addBos: !(bos && text.startsWith(bos)), special: true });
    } else throw invalid('savePrefix takes a string, token ids, {system} or {messages}');
    if (!tokens.length) throw invalid('the prefix has no tokens');
    return this._request({ type: 'savePrefix', tokens });
  }

  /** Tests: destroys the GPU device, as a lost one (a driver reset, a removed GPU) would be. */
  _loseGpuDevice() {
    if (!this._dead) this._worker.post({ type: 'gpu-lose' });
  }

  /** Frees the model and ends the worker (and its threads). The engine cannot be used afterwards. */
  async unload() {
    if (this._dead) return;
    this._dead = new WickError('E_UNLOADED', 'the engine was unloaded');
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(this._dead);
    await this._worker.terminate();
  }

  // ---- chat ----

  /** The prompt text of a conversation, rendered with the model's chat template (or `template`):
   *  see renderChatTemplate for the options `tools`, `now` and `extra`. */
  async applyChatTemplate(messages, options = {}) {
    return (await this._renderPrompt(messages, options)).text;
  }

  /** applyChatTemplate's text and where the documents went ({text, documentsIn}: chat-template.mjs's renderPrompt). */
  async _renderPrompt(messages, { template, addGenerationPrompt = true, tools, now, extra = {}, documents } = {}) {
    // image parts render as the media marker (images.mjs), as the chat request renders them
    if (hasImages(messages)) messages = markImages(messages).messages;
    const source = template ?? this.info.chatTemplate;
    if (typeof source !== 'string' || !source)
      throw new WickError('E_NO_TEMPLATE', `${this.info.name} has no chat template (tokenizer.chat_template); pass chat_template with the request, or use engine.generate() for plain text`);
    return (await chatTemplates()).renderPrompt(source, messages, {
      addGenerationPrompt, tools, now, extra, documents,
      toolFormat: toolCallFormat(source, this.info.architecture),
      bosToken: this.info.specialTokens.bos ?? '',
      eosToken: this.info.specialTokens.eos ?? '',
    });
  }

  /**
   * A rendered prompt holding image markers, as token ids: the text between the markers tokenized
   * apart (BOS first, special tokens parsed), each picture's ids (wick_vision_layout) in its
   * marker's place, as llama.cpp's mtmd_tokenize lays it out. Also the images: {slot, width,
   * height, positions}, in prompt order.
   */
  async _promptWithImages(text, urls, addBos) {
    const pieces = text.split(MEDIA_MARKER);
    if (pieces.length - 1 !== urls.length)
      throw invalid(`the chat template placed ${pieces.length - 1} image markers for ${urls.length} images (does it print every part of a message?)`);
    const tokens = [], images = [];
    for (let i = 0; i < pieces.length; i++) {
      tokens.push(...await this.tokenize(pieces[i], { addBos: i === 0 && addBos, special: true }));
      if (i === urls.length) break;
      const px = await decodeImage(urls[i]);
      const key = await imageKey(px);
      const r = await this._request({ type: 'image', key, width: px.width, height: px.height, rgb: px.rgb.buffer }, { transfer: [px.rgb.buffer] });
      tokens.push(...r.tokens);
      images.push({ slot: r.slot, width: r.width, height: r.height, positions: r.positions });
    }
    return { tokens, images };
  }

  async _chatCompletion(request) {
    if (request === null || typeof request !== 'object') throw invalid('create() takes a request object');
    const { checkMessages, checkDocuments } = await chatTemplates();
    // images: each becomes the media marker in its message's text (llama.cpp's rule), the
    // pictures are decoded here and placed in the prompt at the markers below
    let messages = request.messages, imageUrls = [];
    if (hasImages(messages)) {
      if (!this.info.vision)
        throw new WickError('E_NO_VISION', `${this.info.name} was loaded without an mmproj, so it cannot see images: load it with Wick.load(model, { mmproj })`);
      ({ messages, urls: imageUrls } = markImages(messages));
    }
    checkMessages(messages);
    // documents (retrieval): placed by the template or in the system message (chat-template.mjs)
    const documents = request.documents === undefined || request.documents === null ? [] : checkDocuments(request.documents);
    if (request.n !== undefined && request.n !== 1) throw invalid('only n = 1 is supported');
    const options = {
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
      temperature: request.temperature ?? undefined,
      topP: request.top_p ?? undefined,
      topK: request.top_k ?? undefined,
      minP: request.min_p ?? undefined,
      repeatPenalty: request.repetition_penalty ?? request.repeat_penalty ?? undefined,
      frequencyPenalty: request.frequency_penalty ?? undefined,
      presencePenalty: request.presence_penalty ?? undefined,
      seed: request.seed ?? undefined,
      stop: request.stop ?? undefined,
      signal: request.signal ?? undefined,
      probs: request.logprobs ? request.top_logprobs ?? 1 : undefined,
      logitBias: request.logit_bias ?? undefined,
      grammar: responseGrammar(request),
    };
    const templateSource = request.chat_template ?? this.info.chatTemplate;
    const tools = planToolCalls(request, templateSource, this.info.architecture);
    if (tools.grammar) options.grammar = tools.grammar;
    if (options.maxTokens === null) options.maxTokens = undefined;
    const checked = generateSettings(options);
    const renderOptions = { template: request.chat_template, tools: tools.render, extra: request.chat_template_kwargs || {}, documents };
    const { text, documentsIn } = await this._renderPrompt(messages, renderOptions);
    // wick's extension on the response: the prompt as rendered and the documents it was given
    const extension = { prompt: text, documentsIn, sources: documents.map((d, index) => ({ index, ...d })) };
    const bos = this.info.specialTokens.bos;
    const addBos = !(bos && text.startsWith(bos));
    const { tokens, images } = imageUrls.length ? await this._promptWithImages(text, imageUrls, addBos) : { tokens: await this.tokenize(text, { addBos, special: true }), images: null };
    if (images) extension.images = images;
    // a hybrid model's recurrent state cannot be cut back: it is also kept where the conversation
    // so far ends, before the template's answer prompt (which the next turn may render
    // differently, as Qwen3.5's drops the <think> it opened), so that the next turn goes on there
    let checkpoint = 0;
    if (this.info.stateBytes > 0) {
      const history = await this.tokenize(await this.applyChatTemplate(messages, { ...renderOptions, addGenerationPrompt: false }), { addBos, special: true });
      while (checkpoint < history.length && checkpoint < tokens.length && history[checkpoint] === tokens[checkpoint]) checkpoint++;
    }
    const stream = this._stream({ type: 'generate', tokens, settings: { ...checked.settings, checkpoint }, stops: checked.stops, probs: checked.probs, grammar: checked.grammar, bias: checked.bias,
      prefixStates: request.prefix_states !== false }, options.signal);
    const id = `chatcmpl-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const created = Math.floor(Date.now() / 1000);
    const model = this.info.name;
    const finishReason = (r, calls) => (calls ? 'tool_calls' : r === 'length' ? 'length' : r === 'abort' ? 'abort' : 'stop');
    const logprobsOf = (c) => c.probs && { content: [{ token: c.text, logprob: Math.log(c.probs.find((p) => p.drawn)?.p ?? 0), top_logprobs: c.probs.map((p) => ({ token: p.text, logprob: Math.log(p.p) })) }] };
    const usageOf = (t) => t && { prompt_tokens: t.promptTokens, completion_tokens: t.generatedTokens, total_tokens: t.promptTokens + t.generatedTokens };

    if (request.stream) {
      const format = tools.format;
      return (async function* chunks() {
        let first = true;
        const chunk = (delta, extra = {}) => {
          if (first) delta = { role: 'assistant', ...delta };
          first = false;
          return { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: null, logprobs: null, ...extra }] };
        };
        // with tools, the text that may be a tool call is held back until it can be parsed
        const splitter = format ? new ToolCallSplitter(format, tools.render) : null;
        for await (const c of stream) {
          if (c.done) {
            encodedImages(extension.images, c.images);
            let calls = null;
            if (splitter) {
              const end = splitter.end();
              calls = end.calls;
              if (end.content) yield chunk({ content: end.content });
              if (calls) {
                for (const [index, call] of calls.entries()) {
                  yield chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
                  yield chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
                }
              }
            }
            yield { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: {}, finish_reason: finishReason(c.finishReason, calls), logprobs: null }], usage: usageOf(c.timings), timings: c.timings, wick: { ...c, ...extension, promptTokens: tokens.length } };
            return;
          }
          // wick's extension: the engine's own piece (generate()'s chunk) beside OpenAI's fields;
          // a piece held back as a possible tool call comes with an empty delta
          const piece = { ...c, promptTokens: tokens.length };
          const text = splitter ? splitter.push(c.text) : c.text;
          if (splitter && !text) { yield { ...chunk({}), wick: piece }; continue; }
          yield { ...chunk({ content: text }, { logprobs: logprobsOf(c) || null }), wick: piece };
        }
      })();
    }
    let content = '';
    let final = null;
    const logprobs = [];
    for await (const c of stream) {
      if (c.done) final = c;
      else {
        content += c.text;
        if (c.probs) logprobs.push(...logprobsOf(c).content);
      }
    }
    encodedImages(extension.images, final.images);
    const parsed = tools.format ? parseToolCalls(tools.format, content, tools.render) : null;
    const message = parsed ? { role: 'assistant', content: parsed.content || null, tool_calls: parsed.calls } : { role: 'assistant', content };
    return {
      id, object: 'chat.completion', created, model,
      choices: [{ index: 0, message, finish_reason: finishReason(final.finishReason, parsed?.calls), logprobs: request.logprobs ? { content: logprobs } : null }],
      usage: usageOf(final.timings),
      timings: final.timings,
      wick: { ...extension, promptTokens: tokens.length },
    };
  }
}

/** Fills a prompt's images (the response's wick.images) with what the engine did for each slot: encoded or not, and how long it took. */
function encodedImages(images, done) {
  if (!images) return;
  for (const im of images) {
    const e = (done || []).find((d) => d.slot === im.slot);
    im.encoded = !!e?.encoded;
    im.encodeMs = e?.encoded ? e.encodeMs : 0;
  }
}

/** The grammar a chat request asks for: response_format { type: 'json_object' } (any JSON
 *  object), { type: 'json_schema', json_schema: { schema } }, or llama.cpp's `grammar` field. */
function responseGrammar(request) {
  const rf = request.response_format;
  if (request.grammar !== undefined && request.grammar !== null) {
    if (rf !== undefined && rf !== null && rf.type !== 'text') throw invalid('give either grammar or response_format, not both');
    if (typeof request.grammar !== 'string') throw invalid('grammar must be a string of GBNF');
    return request.grammar;
  }
  if (rf === undefined || rf === null) return undefined;
  if (typeof rf !== 'object') throw invalid("response_format must be an object such as { type: 'json_object' }");
  if (rf.type === 'text') return undefined;
  // llama.cpp's server also takes a schema beside json_object
  if (rf.type === 'json_object') return rf.schema ? jsonSchemaToGrammar(rf.schema) : JSON_OBJECT_GRAMMAR;
  if (rf.type === 'json_schema') {
    const schema = rf.json_schema?.schema ?? rf.schema;
    if (schema === undefined || schema === null || typeof schema !== 'object') throw invalid("response_format { type: 'json_schema' } needs json_schema: { schema: {…} }");
    return jsonSchemaToGrammar(schema);
  }
  throw invalid(`response_format.type must be 'text', 'json_object' or 'json_schema' (got ${JSON.stringify(rf.type)})`);
}

/** A saved state's bytes as a Uint8Array (an ArrayBuffer or any view of one). */
function stateBytes(blob) {
  if (blob instanceof Uint8Array) return blob;
  if (blob instanceof ArrayBuffer) return new Uint8Array(blob);
  if (ArrayBuffer.isView(blob)) return new Uint8Array(blob.buffer, blob.byteOffset, blob.byteLength);
  throw invalid('a saved state is a Uint8Array or an ArrayBuffer');
}

function checkTokens(tokens, nVocab) {
  if (!Array.isArray(tokens) && !ArrayBuffer.isView(tokens)) throw invalid('tokens must be an array of token ids');
  for (const t of tokens) if (!Number.isInteger(t) || t < 0 || (nVocab && t >= nVocab)) throw invalid(`token id ${t} is not in the vocabulary${nVocab ? ` (0…${nVocab - 1})` : ''}`);
}

// ---- the Cache API (downloads kept for offline use) ----

const cache = {
  /** Whether downloads can be kept here (the Cache API exists: pages and workers, not Node). */
  get supported() { return typeof caches !== 'undefined'; },
  /**
   * The kept files: [{url, bytes, date}]. With {partial: true}, also the downloads that stopped
   * part way (a later load of the URL resumes them): [{url, bytes (kept so far), total, date, partial: true}].
   */
  list: ({ partial = false } = {}) => WickDownload.keptFiles(partial),
  /** Forgets one file, kept whole or in part (true when something was kept). */
  delete: (url) => WickDownload.forget(absoluteUrl(String(url))),
  /** Forgets every file, and every download that stopped part way. */
  clear: () => WickDownload.forgetAll(),
  /** Whether the file at url is kept whole. */
  has: async (url) => !!(await WickDownload.keptFile(absoluteUrl(String(url)))),
};

// ---- looking at a model before loading it ----

/**
 * The size and GGUF metadata of a model at a URL (from the cache, or the first bytes fetched with
 * Range requests), and whether it fits: {url, bytes, metadata, fits: {fits, needed, available, kvBytes,
 * needsGpu, gpuBytes, reason}} (reason: why a load would refuse it, naming the model, where it
 * would; needsGpu: it fits only on the GPU path, its weights outside wasm memory, which then needs
 * about gpuBytes of GPU memory). With weightsOutside the figures are the GPU path's.
 */
async function inspect(url, { contextSize = 0, kvType = 'f16', kvTypeK, kvTypeV, tablesOutside, weightsOutside = false, maxHeapBytes = 0 } = {}) {
  const abs = absoluteUrl(String(url));
  const hit = await WickDownload.keptFile(abs);
  let bytes = hit ? Number(hit.headers.get('X-Wick-Bytes')) : null;
  for (let want = 1 << 18; ; want *= 4) {
    let head;
    if (hit) head = new Uint8Array(await (await WickDownload.keptFile(abs)).arrayBuffer()).subarray(0, want); // a body reads once
    else {
      const r = await fetch(abs, { headers: { Range: `bytes=0-${want - 1}` } }).catch((e) => { throw new WickError('E_FETCH', `could not fetch ${abs}: ${e.message}`); });
      if (!r.ok) throw new WickError('E_FETCH', `could not fetch ${abs}: HTTP ${r.status}`);
      const total = /\/(\d+)$/.exec(r.headers.get('Content-Range') || '');
      bytes = total ? Number(total[1]) : Number(r.headers.get('Content-Length'));
      head = new Uint8Array(await r.arrayBuffer());
    }
    try {
      const header = WickGguf.parseHeader(head, { tensors: true });
      // the row tables a load keeps outside wasm memory when the file would not fit with them (or when asked)
      const tables = WickGguf.rowTables(header, bytes);
      const weights = WickGguf.gpuWeights(header, bytes);
      const fits = WickGguf.checkFits({ fileBytes: bytes, metadata: header.metadata, contextSize, kvType, kvTypeK, kvTypeV, tables, tablesOutside, weights, weightsOutside, maxHeapBytes });
      // what the load would refuse it for, by name (a mixture of experts, an architecture not run yet, too large)
      const unsupported = WickGguf.unsupportedReason(header.metadata);
      if (unsupported || !fits.fits) fits.reason = unsupported || WickGguf.tooLargeMessage(header.metadata, fits);
      return { url: abs, bytes, version: header.version, tensorCount: header.tensorCount, metadata: header.metadata, tables, fits };
    } catch (e) {
      if (!(e instanceof WickGguf.NeedMoreBytes) || head.length < want || want >= 1 << 28) throw new WickError('E_NOT_GGUF', `${abs}: ${e.message}`);
    }
  }
}

// ---- loading ----

/**
 * Loads a model and returns a ready engine.
 * source: a URL (split models: the first part's URL, or an array of the parts' URLs), a
 *   File/Blob, or an ArrayBuffer/typed array; under Node also a file path.
 * options: threads (default: about the physical cores), contextSize (0: the model's, clamped to
 *   2048…4096), kvType / kvTypeK / kvTypeV (wick.d.ts), onProgress({progress (0 → 1 over the whole load, never
 *   decreasing), phase: 'download'|'store'|'load', loaded, total (bytes within the phase), cached, resumed}),
 *   signal (AbortSignal), cache (false: neither read nor keep a download in the Cache API),
 *   multiThreaded (false: the single-threaded build even where threads are possible),
 *   relaxedSimd (false: the plain SIMD128 build even where relaxed SIMD is available),
 *   wasmBase (the URL of the folder with wick.js, wick.wasm, wick-mt.*, wick-relaxed.*,
 *   wick-mt-relaxed.*), workerUrl, device ('cpu', 'gpu', 'auto'), weightsOutside (false: on the
 *   GPU path keep the weights in wasm memory as well), maxHeapBytes (tests: a cap on wasm memory).
 */
async function load(source, options = {}) {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const threadsAsked = options.threads === undefined ? defaultThreads() : checkNumber('threads', options.threads, { min: 1, max: 64, integer: true });
  if (options.contextSize !== undefined && options.contextSize !== 0) checkNumber('contextSize', options.contextSize, { min: 1, max: 1 << 22, integer: true });
  for (const key of ['kvType', 'kvTypeK', 'kvTypeV'])
    if (options[key] !== undefined && !KV_TYPES.includes(options[key])) throw invalid(`${key} must be one of ${KV_TYPES.join(', ')} (got ${JSON.stringify(options[key])})`);
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw invalid('onProgress must be a function');
  if (options.device !== undefined && !['auto', 'gpu', 'cpu'].includes(options.device)) throw invalid(`device must be 'auto', 'gpu' or 'cpu' (got ${JSON.stringify(options.device)})`);
  if (options.gpuVerify !== undefined && !['always', 'once', 'never'].includes(options.gpuVerify)) throw invalid(`gpuVerify must be 'always', 'once' or 'never' (got ${JSON.stringify(options.gpuVerify)})`);
  if (options.gpuVerdictFile !== undefined && (typeof options.gpuVerdictFile !== 'string' || !isNode)) throw invalid('gpuVerdictFile is a file path, under Node');
  checkGpuTestHooks(options.gpuTestHooks);
  if (options.maxHeapBytes !== undefined && options.maxHeapBytes !== 0) checkNumber('maxHeapBytes', options.maxHeapBytes, { min: 1 << 20, max: 2 ** 32, integer: true });
  if (options.gpuTopK !== undefined && typeof options.gpuTopK !== 'boolean') throw invalid(`gpuTopK must be true or false (got ${JSON.stringify(options.gpuTopK)})`);
  const kernels = ['auto', 'rows', 'mv', 'mv_sg', 'mv_q8', 'mv_q8_sg']; // gpu/backend.mjs DECODE_KERNELS (not imported: a CPU load never reads it)
  if (options.gpuDecodeKernel !== undefined && !kernels.includes(options.gpuDecodeKernel))
    throw invalid(`gpuDecodeKernel must be one of ${kernels.join(', ')} (got ${JSON.stringify(options.gpuDecodeKernel)})`);
  checkSignal(options.signal);
  const mt = options.multiThreaded !== false && canUseThreads();
  const relaxed = options.relaxedSimd !== false && hasRelaxedSimd();
  const engine = new Engine();
  const files = engineFiles();
  engine._files = options.wasmBase ? filesIn(await resourceUrl(options.wasmBase, true)) : files;
  engine._workerUrl = options.workerUrl ? await resourceUrl(options.workerUrl, false) : files.worker;
  engine._constantsUrl = files.constants;
  engine._ggufUrl = files.gguf;
  engine._downloadUrl = files.download;
  engine._gpuUrl = options.gpuModuleUrl ? await resourceUrl(options.gpuModuleUrl, false) : files.gpu;
  engine._kvType = options.kvType || 'f16';
  engine._kvTypeK = options.kvTypeK || engine._kvType;
  engine._kvTypeV = options.kvTypeV || engine._kvType;
  try {
    await engine._start({ threads: mt ? threadsAsked : 1, build: (mt ? 'mt' : 'st') + (relaxed ? '-relaxed' : '') });
    await engine._load(source, options);
    return engine;
  } catch (e) {
    await engine.unload().catch(() => {});
    throw e instanceof WickError ? e : new WickError('E_WORKER', e.message || String(e));
  }
}

// load option gpuTestHooks, for tests only: a GPU made slow or faulty on purpose (gpu/backend.mjs
// GpuForward.create's testHooks) and a CPU made slow in the GPU check (worker.js checkGpu)
const GPU_TEST_HOOKS = { submitDelayMs: 'number', cpuDelayMs: 'number', nanAtStep: 'number', perturb: ['matmul-scale'] };
function checkGpuTestHooks(hooks) {
  if (hooks === undefined || hooks === null) return;
  if (typeof hooks !== 'object') throw invalid('gpuTestHooks must be an object (tests only)');
  for (const [k, v] of Object.entries(hooks)) {
    const kind = GPU_TEST_HOOKS[k];
    if (!kind) throw invalid(`gpuTestHooks: unknown hook ${k} (known: ${Object.keys(GPU_TEST_HOOKS).join(', ')})`);
    if (Array.isArray(kind) ? !kind.includes(v) : !(typeof v === 'number' && v >= 0 && Number.isFinite(v))) throw invalid(`gpuTestHooks.${k}: ${JSON.stringify(v)} is not ${Array.isArray(kind) ? kind.join(' or ') : 'a number ≥ 0'}`);
  }
}

/** Wick.connect: connect.mjs's connect, the module loaded on the first call. */
async function connect(baseURL, options) {
  return (await connectModule()).connect(baseURL, options);
}

export const Wick = {
  load,
  connect,
  inspect,
  cache,
  defaultThreads,
  canUseThreads,
  hasRelaxedSimd,
  splitUrls,
  useJinja,
  renderChatTemplate,
  WickError,
};

export default Wick;
