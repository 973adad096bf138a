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
import './gguf-header.js';
import { WickError, invalid, checkNumber, checkSignal, checkGenerateOptions } from './options.mjs';
import { connect } from './connect.mjs';
import { jsonSchemaToGrammar, JSON_OBJECT_GRAMMAR, literal as gbnfLiteral } from './json-schema.mjs';

const WickGguf = globalThis.WickGguf;
const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined' && typeof importScripts === 'undefined';
// Node's own modules, imported only under Node. The name is not a literal, so that a bundler
// building for the browser neither fails on them (esbuild) nor stubs them with a warning (Vite).
const nodeModule = (name) => import(/* @vite-ignore */ /* webpackIgnore: true */ `node:${name}`);
const nodeOs = isNode ? await nodeModule('os') : null;
const CACHE_NAME = 'wick-models-v1'; // the worker keeps downloads under the same name
// the worker keeps unfinished downloads here, one record per URL (the key) and pieces under PIECE_URL
const PARTIAL_CACHE = 'wick-partial-v1';
const PIECE_URL = 'https://wick.invalid/piece';
const PUSH_CHUNK = 16 << 20;         // an ArrayBuffer source is sent to the worker in pieces this big
const MAX_THREADS = 8;
const START_TIMEOUT_MS = 60000;
const SPLIT_NAME = /-(\d{5})-of-(\d{5})\.gguf$/;

export { WickError, jsonSchemaToGrammar };

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
// With temperature 0 and these defaults the text is the CLI's greedy text.
const SETTING_DEFAULTS = {
  max_tokens: 0, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, repeat_penalty: 1, // 1 = off, as llama.cpp
  repeat_last_n: 64, frequency_penalty: 0, presence_penalty: 0, ignore_eos: 0,
};

/** Turns generate() options into the engine's settings, refusing bad values with a clear Error. */
function generateSettings(options) {
  const { given, stops, probs, grammar, logitBias } = checkGenerateOptions(options);
  const settings = { ...SETTING_DEFAULTS, ...given };
  if (settings.seed === undefined) settings.seed = Math.floor(Math.random() * 2 ** 32);
  if (options.ignoreEos !== undefined) settings.ignore_eos = options.ignoreEos ? 1 : 0;
  return { settings, stops, probs, grammar, bias: logitBias };
}

// ---- where the files are ----

function moduleUrl(rel) {
  return new URL(rel, import.meta.url).href;
}

// The engine's files, each named by a literal `new URL('…', import.meta.url)`: bundlers (Vite,
// webpack 5, Parcel; Rollup with a plugin) recognise the pattern, copy the file into the app's
// build and rewrite the URL, so a bundled app needs no wasmBase option. esbuild leaves the URLs
// as they are: the files then go beside the bundle (README.md, "With a bundler"). The paths are
// the repository's; `make dist` rewrites them for its flat folder (the npm package's and a static
// host's), where the builds sit in wasm/ beside this module. A function: nothing is resolved
// before a load.
const engineFiles = () => ({
  worker: new URL('./worker.js', import.meta.url).href,
  gguf: new URL('./gguf-header.js', import.meta.url).href,
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
      ggufUrl: this._ggufUrl,
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
    const onProgress = options.onProgress;
    const report = (m) => {
      try { onProgress?.({ loaded: m.loaded, total: m.total, phase: m.phase, cached: !!m.cached, resumed: m.resumed || 0 }); } catch (e) { console.error(e); }
    };
    const request = this._request({
      type: 'load',
      source: { kind: described.kind, items: described.items, sizes: described.sizes },
      contextSize: options.contextSize || 0,
      kvType: options.kvType || 'f16',
      device: options.device || 'cpu',
      gpuAllowSoftware: options.gpuAllowSoftware === true,
    }, { onProgress: report });
    const onAbort = () => this._abort(request.id);
    options.signal?.addEventListener('abort', onAbort);
    // the signal may have fired while the worker was starting, before anyone listened
    if (options.signal?.aborted) onAbort();
    try {
      if (described.kind === 'push') this._pushBytes(request.id, described.bytes);
      const info = await request;
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
      files: r.files,
      fromCache: r.cached,
      contextSize: r.contextSize,
      kvBytes: r.kvBytes,
      stateBytes: r.stateBytes,
      kvType: this._kvType,
      build: r.build,
      multiThreaded: r.build.startsWith('mt'),
      relaxedSimd: r.build.endsWith('-relaxed'),
      threads: r.threads,
      wasmMemoryBytes: r.heapBytes,
    };
    this._setDevice(r.device);
  }

  _setDevice(d) {
    /** Where the forward pass runs: {type: 'gpu', adapter, software, converted} (the adapter's
     * description; tensors of types the shaders do not read, converted to F32 at load) or
     * {type: 'cpu', reason} (why not the GPU: asked for, no adapter, a software adapter, a
     * family the GPU path does not run, a GPU failure) */
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
    const checked = generateSettings(options);
    if (typeof prompt !== 'string' && !Array.isArray(prompt) && !ArrayBuffer.isView(prompt)) throw invalid('prompt must be a string or an array of token ids');
    if (typeof prompt !== 'string') checkTokens(prompt, this.info?.n_vocab);
    if (typeof prompt === 'string' && prompt === '' && options.addBos === false) throw invalid('the prompt is empty');
    return this._generate(prompt, checked, options);
  }

  async *_generate(prompt, { settings, stops, probs, grammar, bias }, options) {
    const tokens = typeof prompt === 'string' ? await this.tokenize(prompt, { addBos: options.addBos !== false }) : Array.from(prompt);
    if (!tokens.length) throw invalid('the prompt has no tokens');
    yield* this._stream({ type: 'generate', tokens, settings, stops, probs, grammar, bias }, options.signal);
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

  /** Stops every generation in progress (each ends with finishReason 'abort'). */
  abort() {
    for (const stop of this._active?.values() || []) stop();
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
  async applyChatTemplate(messages, { template, addGenerationPrompt = true, tools, now, extra = {} } = {}) {
    const source = template ?? this.info.chatTemplate;
    if (typeof source !== 'string' || !source)
      throw new WickError('E_NO_TEMPLATE', `${this.info.name} has no chat template (tokenizer.chat_template); pass chat_template with the request, or use engine.generate() for plain text`);
    return renderChatTemplate(source, messages, {
      addGenerationPrompt, tools, now, extra,
      toolFormat: toolCallFormat(source, this.info.architecture),
      bosToken: this.info.specialTokens.bos ?? '',
      eosToken: this.info.specialTokens.eos ?? '',
    });
  }

  async _chatCompletion(request) {
    if (request === null || typeof request !== 'object') throw invalid('create() takes a request object');
    checkMessages(request.messages);
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
    const renderOptions = { template: request.chat_template, tools: tools.render, extra: request.chat_template_kwargs || {} };
    const text = await this.applyChatTemplate(request.messages, renderOptions);
    const bos = this.info.specialTokens.bos;
    const addBos = !(bos && text.startsWith(bos));
    const tokens = await this.tokenize(text, { addBos, special: true });
    // a hybrid model's recurrent state cannot be cut back: it is also kept where the conversation
    // so far ends, before the template's answer prompt (which the next turn may render
    // differently, as Qwen3.5's drops the <think> it opened), so that the next turn goes on there
    let checkpoint = 0;
    if (this.info.stateBytes > 0) {
      const history = await this.tokenize(await this.applyChatTemplate(request.messages, { ...renderOptions, addGenerationPrompt: false }), { addBos, special: true });
      while (checkpoint < history.length && checkpoint < tokens.length && history[checkpoint] === tokens[checkpoint]) checkpoint++;
    }
    const stream = this._stream({ type: 'generate', tokens, settings: { ...checked.settings, checkpoint }, stops: checked.stops, probs: checked.probs, grammar: checked.grammar, bias: checked.bias }, options.signal);
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
            yield { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: {}, finish_reason: finishReason(c.finishReason, calls), logprobs: null }], usage: usageOf(c.timings), timings: c.timings };
            return;
          }
          const text = splitter ? splitter.push(c.text) : c.text;
          if (splitter && !text) continue;
          yield chunk({ content: text }, { logprobs: logprobsOf(c) || null });
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
    const parsed = tools.format ? parseToolCalls(tools.format, content, tools.render) : null;
    const message = parsed ? { role: 'assistant', content: parsed.content || null, tool_calls: parsed.calls } : { role: 'assistant', content };
    return {
      id, object: 'chat.completion', created, model,
      choices: [{ index: 0, message, finish_reason: finishReason(final.finishReason, parsed?.calls), logprobs: request.logprobs ? { content: logprobs } : null }],
      usage: usageOf(final.timings),
      timings: final.timings,
    };
  }
}

// ---- tool calls ----
//
// The formats of the families wick runs, told apart by the chat template that renders the tools:
//   hermes  <tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call> (one or more), text around
//           them is content — Qwen 2.5/3, SmolLM3, Hermes (templates that mention <tool_call>)
//   llama3  the whole reply is one JSON object {"name": "f", "parameters": {…}}, possibly after
//           <|python_tag|> — Llama 3.1/3.2/3.3 (templates with <|start_header_id|> that ask for
//           "parameters")
//   granite the whole reply is <|tool_call|> and a JSON list [{"name": "f", "arguments": {…}}, …]
//           — Granite 3.x (templates that mention <|tool_call|>)
//   xml     <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
//           (one or more), text before them is content; a value is text where the tool's schema
//           says string, else JSON when it parses as JSON — Qwen3.5 and Qwen3-Coder (templates
//           that mention <function=)
//   pythonic <|tool_call_start|>[f(a="x", b=1), g()]<|tool_call_end|>: a Python list of calls with
//           keyword arguments (Python literals), text around it is content — LFM2 and LFM2.5
//           (templates with <|tool_list_start|>, or arch lfm2)
// A reply that looks like a call but does not parse stays plain content (finish_reason 'stop').

/** The tool-call format of a chat template, or null when wick knows none for it; when the
 *  template names none, the family's own (arch qwen2, qwen3, smollm3: hermes; granite; qwen35:
 *  xml), as SmolLM3's template in llama.cpp's copy has no tools section while the model writes
 *  Hermes calls. */
export function toolCallFormat(template, arch) {
  if (typeof template === 'string') {
    if (template.includes('<function=')) return 'xml';
    if (template.includes('<|tool_list_start|>') || template.includes(PY_CALL_START)) return 'pythonic';
    if (template.includes('<tool_call>')) return 'hermes';
    if (template.includes('<|tool_call|>')) return 'granite';
    if (template.includes('<|start_header_id|>') && template.includes('parameters')) return 'llama3';
  }
  if (arch === 'granite') return 'granite';
  if (arch === 'qwen35') return 'xml';
  if (arch === 'lfm2') return 'pythonic';
  return ['qwen2', 'qwen3', 'smollm3'].includes(arch) ? 'hermes' : null;
}

const GRANITE_CALL = '<|tool_call|>';
const PY_CALL_START = '<|tool_call_start|>', PY_CALL_END = '<|tool_call_end|>';

let callCounter = 0;
const callId = () => `call_${Date.now().toString(36)}${(callCounter++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

/** One call as OpenAI's tool_calls entry, from a parsed {name, arguments|parameters}; null if it is not one. */
function toolCallOf(obj, argsKey) {
  if (obj === null || typeof obj !== 'object' || typeof obj.name !== 'string' || !obj.name) return null;
  let args = obj[argsKey] ?? obj.arguments ?? obj.parameters ?? {};
  if (typeof args === 'string') {
    try { args = JSON.parse(args); } catch { return null; }
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  return { id: callId(), type: 'function', function: { name: obj.name, arguments: JSON.stringify(args) } };
}

/** A parameter's schema in the tools (or undefined). */
function parameterSchema(tools, name, param) {
  const tool = (tools || []).find((t) => t?.function?.name === name);
  return tool?.function?.parameters?.properties?.[param];
}

/** An xml-format value: the text itself for a string parameter, else its JSON when it parses. */
function xmlValue(text, schema) {
  const stringy = schema && (schema.type === 'string' || (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === 'string')));
  if (stringy) return text;
  try { return JSON.parse(text); } catch { return text; }
}

/** The calls of an xml-format reply, as parseToolCalls gives them. */
function parseXmlCalls(text, tools) {
  const re = /<tool_call>\s*<function=([^>\n]+)>\n?([\s\S]*?)<\/function>\s*<\/tool_call>/g;
  const calls = [];
  let rest = '', last = 0, m;
  while ((m = re.exec(text))) {
    const name = m[1].trim(), body = m[2], args = {};
    const pre = /<parameter=([^>\n]+)>\n?([\s\S]*?)\n?<\/parameter>/g;
    let seen = 0, pm;
    while ((pm = pre.exec(body))) {
      if (body.slice(seen, pm.index).trim()) return null;
      const param = pm[1].trim();
      args[param] = xmlValue(pm[2], parameterSchema(tools, name, param));
      seen = pre.lastIndex;
    }
    if (body.slice(seen).trim() || !name) return null;
    calls.push(toolCallOf({ name, arguments: args }, 'arguments'));
    rest += text.slice(last, m.index);
    last = re.lastIndex;
  }
  if (!calls.length || text.slice(last).includes('<tool_call>')) return null;
  rest += text.slice(last);
  return { content: rest.trim(), calls };
}

/** A Python list of calls with keyword arguments, [f(a="x", b=1), g()], as [{name, args}]; throws
 *  where the text is not one (values: strings, numbers, True/False/None, lists, dicts). */
function parsePythonCalls(src) {
  let i = 0;
  const fail = () => { throw new Error(`not a call list at ${i}`); };
  const ws = () => { while (i < src.length && /\s/.test(src[i])) i++; };
  const eat = (c) => { ws(); if (src[i] !== c) fail(); i++; };
  const name = () => {
    ws();
    const m = /^[A-Za-z_][\w.-]*/.exec(src.slice(i));
    if (!m) fail();
    i += m[0].length;
    return m[0];
  };
  const ESC = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', 0: '\0', '\\': '\\', "'": "'", '"': '"' };
  const value = () => {
    ws();
    const c = src[i];
    if (c === '"' || c === "'") {
      let out = '';
      for (i++; i < src.length && src[i] !== c; i++) {
        if (src[i] !== '\\') { out += src[i]; continue; }
        const e = src[++i];
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 1, i + 5))) { out += String.fromCharCode(parseInt(src.slice(i + 1, i + 5), 16)); i += 4; }
        else out += ESC[e] ?? '\\' + e;
      }
      if (src[i] !== c) fail();
      i++;
      return out;
    }
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')', list = [];
      i++;
      for (ws(); src[i] !== close; ws()) {
        list.push(value());
        ws();
        if (src[i] === ',') i++;
        else if (src[i] !== close) fail();
      }
      i++;
      return list;
    }
    if (c === '{') {
      const obj = {};
      i++;
      for (ws(); src[i] !== '}'; ws()) {
        const k = value();
        eat(':');
        obj[String(k)] = value();
        ws();
        if (src[i] === ',') i++;
        else if (src[i] !== '}') fail();
      }
      i++;
      return obj;
    }
    const m = /^(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|True|False|None|true|false|null)/.exec(src.slice(i));
    if (!m) fail();
    i += m[0].length;
    return { True: true, true: true, False: false, false: false, None: null, null: null }[m[0]] ?? Number(m[0]);
  };
  const calls = [];
  eat('[');
  for (ws(); src[i] !== ']'; ws()) {
    const fn = name(), args = {};
    eat('(');
    for (ws(); src[i] !== ')'; ws()) {
      const key = name();
      eat('=');
      args[key] = value();
      ws();
      if (src[i] === ',') i++;
      else if (src[i] !== ')') fail();
    }
    i++;
    calls.push({ name: fn, args });
    ws();
    if (src[i] === ',') i++;
    else if (src[i] !== ']') fail();
  }
  i++;
  ws();
  if (i !== src.length) fail();
  return calls;
}

/** The calls of a pythonic-format reply, as parseToolCalls gives them. */
function parsePythonicCalls(text) {
  const start = text.indexOf(PY_CALL_START);
  if (start < 0) return null;
  const end = text.indexOf(PY_CALL_END, start);
  if (end < 0) return null;
  let list;
  try { list = parsePythonCalls(text.slice(start + PY_CALL_START.length, end)); } catch { return null; }
  if (!list.length) return null;
  const rest = text.slice(0, start) + text.slice(end + PY_CALL_END.length);
  if (rest.includes(PY_CALL_START)) return null;
  const calls = list.map(({ name, args }) => toolCallOf({ name, arguments: args }, 'arguments'));
  return { content: rest.trim(), calls };
}

/**
 * The tool calls in a reply of the given format: { content, calls } (content: the text outside
 * the calls, trimmed), or null when the reply holds no call or a call that does not parse.
 * tools (the request's): where a format writes values as text (xml), their schemas say which
 * values are strings.
 */
export function parseToolCalls(format, text, tools) {
  if (format === 'xml') return parseXmlCalls(text, tools);
  if (format === 'pythonic') return parsePythonicCalls(text);
  if (format === 'hermes') {
    const re = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
    const calls = [];
    let rest = '', last = 0, m;
    while ((m = re.exec(text))) {
      let obj;
      try { obj = JSON.parse(m[1]); } catch { return null; }
      const call = toolCallOf(obj, 'arguments');
      if (!call) return null;
      calls.push(call);
      rest += text.slice(last, m.index);
      last = re.lastIndex;
    }
    if (!calls.length || text.slice(last).includes('<tool_call>')) return null;
    rest += text.slice(last);
    return { content: rest.trim(), calls };
  }
  if (format === 'llama3') {
    const body = text.trim().replace(/^<\|python_tag\|>/, '').trim();
    if (!body.startsWith('{')) return null;
    let obj;
    try { obj = JSON.parse(body); } catch { return null; }
    const call = toolCallOf(obj, 'parameters');
    return call ? { content: '', calls: [call] } : null;
  }
  if (format === 'granite') {
    const body = text.trim();
    if (!body.startsWith(GRANITE_CALL)) return null;
    let list;
    try { list = JSON.parse(body.slice(GRANITE_CALL.length)); } catch { return null; }
    if (!Array.isArray(list)) list = [list];
    const calls = list.map((obj) => toolCallOf(obj, 'arguments'));
    return calls.length && calls.every(Boolean) ? { content: '', calls } : null;
  }
  return null;
}

/** Streams content while holding back whatever may be the start of a tool call. */
class ToolCallSplitter {
  constructor(format, tools) {
    this.format = format;
    this.tools = tools;
    this.text = '';   // all of the reply
    this.shown = 0;   // characters of it already streamed as content
    this.held = false; // a call has begun: nothing more is streamed
  }

  push(chunk) {
    this.text += chunk;
    if (this.held) return '';
    let safe;
    if (this.format === 'hermes' || this.format === 'xml' || this.format === 'pythonic') {
      const mark = this.format === 'pythonic' ? PY_CALL_START : '<tool_call>';
      const at = this.text.indexOf(mark, this.shown);
      if (at >= 0) { this.held = true; safe = at; }
      else {
        // keep back a tail that could still become the mark
        safe = this.text.length;
        for (let k = Math.min(mark.length - 1, this.text.length - this.shown); k > 0; k--)
          if (mark.startsWith(this.text.slice(-k))) { safe = this.text.length - k; break; }
      }
      // whitespace is kept back until text follows it (content before a call is trimmed), and
      // the reply's leading whitespace is never shown
      while (safe > this.shown && /\s/.test(this.text[safe - 1])) safe--;
      if (this.shown === 0) while (this.shown < safe && /\s/.test(this.text[this.shown])) this.shown++;
    } else if (this.shown > 0) safe = this.text.length;
    else {
      // llama3: a reply whose first visible character is "{" (or <|python_tag|>) may be a call;
      // granite: one that starts with <|tool_call|>
      const lead = this.text.trimStart();
      const marks = this.format === 'granite' ? [GRANITE_CALL] : ['{', '<|python_tag|>'];
      if (marks.some((m) => lead.startsWith(m))) { this.held = true; safe = 0; }
      else safe = marks.some((m) => m.startsWith(lead)) ? 0 : this.text.length;
    }
    const out = this.text.slice(this.shown, safe);
    this.shown = Math.max(this.shown, safe);
    return out;
  }

  /** At the end: the calls (or null) and the content not streamed yet. */
  end() {
    const parsed = parseToolCalls(this.format, this.text, this.tools);
    if (!parsed) return { calls: null, content: this.text.slice(this.shown) };
    // what was streamed is the start of the content; the rest of it comes now
    const streamed = this.text.slice(0, this.shown).trim();
    const content = parsed.content.startsWith(streamed) ? parsed.content.slice(streamed.length) : '';
    return { calls: parsed.calls, content: this.shown === 0 ? parsed.content : content };
  }
}

/**
 * How a chat request's tools ({tools, tool_choice, response_format}) are used with a chat
 * template (its source) and a model architecture: the tools to render (render), the format the
 * reply is parsed in (format, or null), and the grammar that forces a call (grammar, or null:
 * tool_choice 'required' or a named function). Throws a WickError for a choice that cannot be
 * met (an unknown function, a forced call with no known format, parameters no grammar can express).
 */
export function planToolCalls(request, templateSource, arch) {
  const tools = checkTools(request.tools);
  const choice = request.tool_choice ?? 'auto';
  if (!tools) {
    if (choice !== 'auto' && choice !== 'none') throw invalid(`tool_choice ${JSON.stringify(choice)} needs tools`);
    return { render: undefined, format: null, grammar: null };
  }
  if (choice === 'none') return { render: undefined, format: null, grammar: null };
  const format = toolCallFormat(templateSource, arch);
  let chosen;
  if (choice === 'auto') chosen = null;
  else if (choice === 'required') chosen = tools;
  else if (choice && typeof choice === 'object' && choice.type === 'function' && typeof choice.function?.name === 'string') {
    chosen = tools.filter((t) => t.function?.name === choice.function.name);
    if (!chosen.length) throw invalid(`tool_choice names ${choice.function.name}, which is not among the tools`);
  } else throw invalid("tool_choice must be 'auto', 'none', 'required' or { type: 'function', function: { name } }");
  if (!chosen) return { render: tools, format, grammar: null };
  if (!format) throw new WickError('E_UNSUPPORTED', "tool_choice 'required' or a named function needs a chat template with a tool-call format wick knows (Hermes <tool_call>, Llama 3.x JSON, Granite <|tool_call|>, Qwen3.5's <function=…>, LFM2's <|tool_call_start|>)");
  if (request.response_format && request.response_format.type !== 'text') throw invalid('give either response_format or a forced tool_choice, not both');
  if (format === 'xml' || format === 'pythonic') return { render: tools, format, grammar: textCallGrammar(format, chosen, tools) };
  const argsKey = format === 'llama3' ? 'parameters' : 'arguments';
  const callSchema = {
    anyOf: chosen.map((t, i) => {
      const params = t.function.parameters ?? { type: 'object' };
      return {
        type: 'object',
        properties: { name: { const: t.function.name }, [argsKey]: params },
        required: ['name', argsKey],
        additionalProperties: false,
        $comment: `tools[${i}]`,
      };
    }),
  };
  let grammar;
  try {
    grammar = jsonSchemaToGrammar(callSchema, { root: 'tool-call' });
  } catch (e) {
    throw new WickError(e.code, `a tool's parameters: ${e.message.replace(/^\$\.anyOf\[(\d+)\]\.properties\.(arguments|parameters)/, (_, i) => `tools[${chosen === tools ? i : tools.indexOf(chosen[i])}].function.parameters`)}`);
  }
  const root = format === 'hermes' ? 'root ::= "<tool_call>\\n" tool-call "\\n</tool_call>"'
    : format === 'granite' ? `root ::= "${GRANITE_CALL}[" tool-call "]"` : 'root ::= tool-call';
  return { render: tools, format, grammar: `${root}\n${grammar}` };
}

/** GBNF for one call of one of the chosen tools in a format whose values are not JSON: xml
 *  (<parameter=p>\nvalue\n</parameter>, in the order of the tool's schema, the required ones
 *  always and the others optionally) or pythonic (<|tool_call_start|>[f(p=value, …)]<|tool_call_end|>,
 *  the required arguments first, then the others optionally). A value is text (xml: without '<'
 *  or a newline; pythonic: a double-quoted string without quotes, backslashes or newlines), up
 *  to maxLength characters, for a string; one of the literals of an enum; an integer, number or
 *  boolean. Other parameter types cannot be forced in these formats. */
function textCallGrammar(format, chosen, tools) {
  const xml = format === 'xml';
  const rules = [];
  const calls = chosen.map((t, i) => {
    const params = t.function.parameters ?? { type: 'object' };
    const props = Object.entries(params.properties ?? {}), required = new Set(params.required ?? []);
    const where = `tools[${tools.indexOf(t)}].function.parameters`;
    const item = ([name, schema], j) => {
      let value;
      const text = (v) => (xml ? v : `"${v}"`);
      if (Array.isArray(schema?.enum) && schema.enum.length)
        value = schema.enum.map((v) => gbnfLiteral(typeof v === 'string' ? text(v) : xml ? JSON.stringify(v) : pythonLiteral(v))).join(' | ');
      else if (schema?.type === 'string') {
        const chars = `${xml ? '[^<\\n]' : '[^"\\\\\\n]'}${Number.isInteger(schema.maxLength) ? `{0,${schema.maxLength}}` : '*'}`;
        value = xml ? chars : `"\\"" ${chars} "\\""`;
      } else if (schema?.type === 'integer') value = '"-"? ("0" | [1-9] [0-9]{0,15})';
      else if (schema?.type === 'number') value = '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})?';
      else if (schema?.type === 'boolean') value = xml ? '"true" | "false"' : '"True" | "False"';
      else throw new WickError('E_UNSUPPORTED', `${where}.properties.${name}: a forced call in this model's call format takes string, integer, number, boolean and enum parameters`);
      rules.push(xml ? `call${i}-p${j} ::= ${gbnfLiteral(`<parameter=${name}>\n`)} (${value}) ${gbnfLiteral('\n</parameter>\n')}`
        : `call${i}-p${j} ::= ${gbnfLiteral(`${name}=`)} (${value})`);
      return `call${i}-p${j}`;
    };
    let body;
    if (xml) body = props.map((p, j) => (required.has(p[0]) ? item(p, j) : `${item(p, j)}?`)).join(' ');
    else {
      const indexed = props.map((p, j) => [p, j]);
      const req = indexed.filter(([p]) => required.has(p[0])).map(([p, j]) => item(p, j));
      const opt = indexed.filter(([p]) => !required.has(p[0])).map(([p, j]) => item(p, j));
      // optional ones after the required (each its own ", " first), or, with none required, a
      // chain that starts at the first optional one
      body = req.length ? [req.join(' ", " '), ...opt.map((o) => `(", " ${o})?`)].join(' ')
        : opt.length ? `(${opt[0]} ${opt.slice(1).map((o) => `(", " ${o})?`).join(' ')})?` : '';
    }
    rules.push(xml ? `call${i} ::= ${gbnfLiteral(`<function=${t.function.name}>\n`)} ${body} ${gbnfLiteral('</function>')}`
      : `call${i} ::= ${gbnfLiteral(`${t.function.name}(`)} ${body} ")"`);
    return `call${i}`;
  });
  const root = xml ? `root ::= "<tool_call>\\n" (${calls.join(' | ')}) "\\n</tool_call>"`
    : `root ::= ${gbnfLiteral(`${PY_CALL_START}[`)} (${calls.join(' | ')}) ${gbnfLiteral(`]${PY_CALL_END}`)}`;
  return [root, ...rules].join('\n');
}

/** A value as a Python literal (the pythonic call format): True, False, None, JSON otherwise. */
function pythonLiteral(v) {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  if (Array.isArray(v)) return `[${v.map(pythonLiteral).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pythonLiteral(x)}`).join(', ')}}`;
  return JSON.stringify(v);
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

function checkTokens(tokens, nVocab) {
  if (!Array.isArray(tokens) && !ArrayBuffer.isView(tokens)) throw invalid('tokens must be an array of token ids');
  for (const t of tokens) if (!Number.isInteger(t) || t < 0 || (nVocab && t >= nVocab)) throw invalid(`token id ${t} is not in the vocabulary${nVocab ? ` (0…${nVocab - 1})` : ''}`);
}

// ---- chat templates ----
//
// A model's tokenizer.chat_template is a Jinja template written for Hugging Face transformers'
// apply_chat_template; @huggingface/jinja renders it. The context holds what transformers and
// llama.cpp give a template: messages, add_generation_prompt, bos_token, eos_token, tools (only
// when the request has some, so that `tools is defined` keeps its meaning), raise_exception,
// range, strftime_now (English names and local time, as Python's strftime in the C locale, at the
// `now` of the call), and llama.cpp's date_string ("26 Jul 2024") and datetime ("Jul 26 2024").
// `extra` (chat_template_kwargs: enable_thinking, documents, …) adds or replaces variables, and
// `x | string` of a mapping or a list gives Python's str(x), which @huggingface/jinja lacks.
// The messages are prepared as llama.cpp's common chat code prepares them (common/chat.cpp):
//  - a 'developer' message becomes a 'system' one, unless the template names the developer role;
//  - for a template that takes no system message (it raises, as Gemma's do, or leaves it out of
//    the prompt), the system message is joined to the head of the next message with a newline;
//  - a tool call's arguments sent as a JSON string (the OpenAI format) are parsed into the object
//    that the templates print with tojson.

const ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer']);
const TOOL_SHAPE = "{type: 'function', function: {name, description, parameters}}";
const TEMPLATE_CACHE_SIZE = 8;            // compiled templates kept: a page seldom has more models
const SYSTEM_PROBE = 'WICK-SYSTEM-PROBE'; // marks the system message in the probe render
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_MS = 86400000;

function messageText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text).join('');
}

function checkMessages(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages must be a non-empty array of {role, content}');
  messages.forEach((m, i) => {
    if (m === null || typeof m !== 'object') throw invalid(`messages[${i}] must be an object {role, content}`);
    if (!ROLES.has(m.role)) throw invalid(`messages[${i}].role ${JSON.stringify(m.role)} is not one of ${[...ROLES].join(', ')}`);
    const calls = m.tool_calls !== undefined && m.tool_calls !== null;
    if (calls) checkToolCalls(m.tool_calls, i);
    const text = typeof m.content === 'string' || (Array.isArray(m.content) && m.content.every((p) => p && p.type === 'text' && typeof p.text === 'string'));
    const callsOnly = calls && m.role === 'assistant' && (m.content === null || m.content === undefined);
    if (!text && !callsOnly) throw invalid(`messages[${i}].content must be a string or an array of {type: 'text', text}${m.role === 'assistant' ? ' (or null beside tool_calls)' : ''}`);
  });
}

function checkToolCalls(calls, i) {
  if (!Array.isArray(calls)) throw invalid(`messages[${i}].tool_calls must be an array of {type: 'function', function: {name, arguments}}`);
  calls.forEach((call, j) => {
    const ok = call && typeof call === 'object' && (call.type === undefined || call.type === 'function') && typeof call.function?.name === 'string';
    if (!ok) throw invalid(`messages[${i}].tool_calls[${j}] must be {type: 'function', function: {name, arguments}}`);
  });
}

/** OpenAI-style tool definitions, or undefined when there are none (an empty list is none). */
function checkTools(tools) {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalid(`tools must be an array of ${TOOL_SHAPE}`);
  tools.forEach((t, i) => {
    if (t === null || typeof t !== 'object' || t.type !== 'function' || typeof t.function?.name !== 'string') throw invalid(`tools[${i}] must be ${TOOL_SHAPE}`);
  });
  return tools.length ? tools : undefined;
}

/** The messages as the template sees them (see the notes at the head of this section). */
function templateMessages(messages, source) {
  const developerIsSystem = !/\bdeveloper\b/.test(source);
  return messages.map((m, i) => {
    const out = { ...m, content: messageText(m.content) };
    if (m.role === 'developer' && developerIsSystem) out.role = 'system';
    if (Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls.map((call, j) => {
        let args = call.function.arguments;
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args);
          } catch (e) {
            throw invalid(`messages[${i}].tool_calls[${j}].function.arguments is not JSON: ${e.message}`);
          }
        }
        return { ...call, function: { ...call.function, arguments: args } };
      });
    }
    return out;
  });
}

/** For a template without a system role: the system message opens the next message. */
function joinSystemToNext(messages) {
  if (messages.length === 1) throw new WickError('E_TEMPLATE', 'the chat template takes no system message, and no message follows the system message to carry it');
  const [system, next, ...rest] = messages;
  return [{ ...next, content: `${system.content}\n${next.content}` }, ...rest];
}

/** Python's strftime in the C locale, on local time (as transformers' and llama.cpp's strftime_now). */
function strftime(date, format) {
  const pad = (n, width = 2) => String(n).padStart(width, '0');
  const [year, month, day, hours] = [date.getFullYear(), date.getMonth(), date.getDate(), date.getHours()];
  const fields = {
    a: WEEKDAYS[date.getDay()].slice(0, 3), A: WEEKDAYS[date.getDay()],
    b: MONTHS[month].slice(0, 3), B: MONTHS[month],
    d: pad(day), e: String(day).padStart(2, ' '), m: pad(month + 1), y: pad(year % 100), Y: String(year),
    F: `${year}-${pad(month + 1)}-${pad(day)}`,
    j: pad((Date.UTC(year, month, day) - Date.UTC(year, 0, 1)) / DAY_MS + 1, 3),
    H: pad(hours), I: pad(hours % 12 || 12), p: hours < 12 ? 'AM' : 'PM',
    M: pad(date.getMinutes()), S: pad(date.getSeconds()), '%': '%',
  };
  return format.replace(/%([A-Za-z%])/g, (directive, c) => fields[c] ?? directive);
}

/** Python's range(stop) / range(start, stop[, step]). */
function pythonRange(start, stop, step = 1) {
  if (stop === undefined) [start, stop] = [0, start];
  if (![start, stop, step].every(Number.isInteger) || step === 0) throw new Error('range() takes integers and a step other than 0');
  const out = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

class TemplateRaised extends Error {}

// The globals of @huggingface/jinja's Template.render (which refuses to redefine them), with our
// raise_exception (to tell a template's refusal from a failure) and, per render, strftime_now.
const TEMPLATE_GLOBALS = {
  true: true, false: false, none: null, True: true, False: false, None: null,
  range: pythonRange,
  raise_exception: (message) => { throw new TemplateRaised(String(message)); },
};

const compiledTemplates = new Map(); // source → { template, takesSystem: undefined until probed }

function compileTemplate(Template, source) {
  let entry = compiledTemplates.get(source);
  if (entry) return entry;
  try {
    entry = { template: new Template(source), takesSystem: undefined };
  } catch (e) {
    throw new WickError('E_TEMPLATE', `the chat template does not parse: ${e.message}`);
  }
  compiledTemplates.set(source, entry);
  if (compiledTemplates.size > TEMPLATE_CACHE_SIZE) compiledTemplates.delete(compiledTemplates.keys().next().value);
  return entry;
}

function runTemplate(module, template, context) {
  const env = new module.Environment();
  for (const [name, value] of Object.entries(context)) env.set(name, value);
  return new (interpreterOf(module))(env).run(template.parsed).value;
}

// As llama.cpp's template capabilities: a template takes a system message when a render of
// [system, user] succeeds and shows the system text (Gemma's raise, Phi-3-mini's drop it).
function takesSystemMessage(module, entry, context) {
  if (entry.takesSystem === undefined) {
    try {
      const messages = [{ role: 'system', content: SYSTEM_PROBE }, { role: 'user', content: 'Hello' }];
      entry.takesSystem = runTemplate(module, entry.template, { ...context, messages }).includes(SYSTEM_PROBE);
    } catch {
      entry.takesSystem = false;
    }
  }
  return entry.takesSystem;
}

/** Whether a template writes an assistant message's tool_calls (Granite 3.3's, for one, writes
 *  only the content), found by rendering a probe call once per template. */
function rendersToolCalls(module, entry, context) {
  if (entry.rendersCalls === undefined) {
    const call = { id: 'call_probe', type: 'function', function: { name: CALL_PROBE, arguments: {} } };
    const messages = [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{}' }];
    try {
      entry.rendersCalls = runTemplate(module, entry.template, { ...context, messages }).includes(CALL_PROBE);
    } catch {
      entry.rendersCalls = false;
    }
  }
  return entry.rendersCalls;
}
const CALL_PROBE = 'wick_probe_function';

// `x | string` of a mapping or a list is Python's str(x), its repr, in transformers' Jinja; the
// original SmolLM3 template prints its xml_tools so. @huggingface/jinja has no such filter: its
// Interpreter, extended here, gets it (the rest of its filters are untouched).
const interpreters = new WeakMap(); // jinja module → its Interpreter with that filter

function interpreterOf(module) {
  let Extended = interpreters.get(module);
  if (!Extended) {
    const StringValue = new module.Environment().set('text', '').constructor;
    Extended = class extends module.Interpreter {
      applyFilter(operand, filter, environment) {
        if (filter.type === 'Identifier' && filter.value === 'string' && (operand.type === 'ObjectValue' || operand.type === 'ArrayValue'))
          return new StringValue(pythonRepr(operand));
        return super.applyFilter(operand, filter, environment);
      }
    };
    interpreters.set(module, Extended);
  }
  return Extended;
}

/** Python's repr of a Jinja runtime value (mappings, lists, strings, numbers, True/False/None). */
function pythonRepr(value) {
  switch (value.type) {
    case 'ObjectValue': return `{${[...value.value].map(([key, v]) => `${pythonStringRepr(key)}: ${pythonRepr(v)}`).join(', ')}}`;
    case 'ArrayValue': return `[${value.value.map(pythonRepr).join(', ')}]`;
    case 'StringValue': return pythonStringRepr(value.value);
    case 'BooleanValue': return value.value ? 'True' : 'False';
    case 'NullValue': case 'UndefinedValue': return 'None';
    case 'FloatValue': return Number.isInteger(value.value) ? `${value.value}.0` : String(value.value);
    default: return String(value.value);
  }
}

/** Python's repr of a str: single quotes unless only double quotes avoid escaping. */
function pythonStringRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escapes = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', [quote]: `\\${quote}` };
  const control = (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  return quote + text.replace(/[\\'"\x00-\x1f\x7f]/g, (c) => escapes[c] ?? (c === "'" || c === '"' ? c : control(c))) + quote;
}

/**
 * The prompt text of a conversation rendered with a chat template (the Jinja source), without a
 * model. Options: addGenerationPrompt (default true), bosToken and eosToken (default ''), tools
 * (OpenAI-style function definitions, given to the template as `tools`; a template without a
 * tools section gets them described in the system message, in toolFormat), toolFormat (the call
 * format, 'hermes', 'llama3', 'granite', 'xml' or 'pythonic'; default: the template's own, toolCallFormat(source); null: the
 * tools are left to the template alone), now (the Date of strftime_now and date_string; default: now),
 * extra (more template variables, e.g. {enable_thinking: false}).
 */
export async function renderChatTemplate(source, messages, { addGenerationPrompt = true, bosToken = '', eosToken = '', tools, toolFormat, now, extra = {} } = {}) {
  if (typeof source !== 'string' || !source) throw invalid('the chat template must be a non-empty string');
  checkMessages(messages);
  const toolList = checkTools(tools);
  if (now === undefined) now = new Date();
  else if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw invalid('now must be a valid Date');
  if (extra === null || typeof extra !== 'object') throw invalid('extra (chat_template_kwargs) must be an object');
  const module = await loadJinja();
  const entry = compileTemplate(module.Template, source);
  const base = {
    ...TEMPLATE_GLOBALS,
    strftime_now: (format) => strftime(now, String(format)),
    date_string: strftime(now, '%d %b %Y'),
    datetime: strftime(now, '%b %d %Y'),
    add_generation_prompt: true,
    bos_token: bosToken,
    eos_token: eosToken,
  };
  if (toolFormat === undefined) toolFormat = toolCallFormat(source);
  else if (toolFormat !== null && !TOOL_FORMATS.includes(toolFormat)) throw invalid(`toolFormat must be one of ${TOOL_FORMATS.join(', ')} or null`);
  const render = (prepared, withTools) => {
    if (prepared[0].role === 'system' && !takesSystemMessage(module, entry, base)) prepared = joinSystemToNext(prepared);
    const context = { ...base, ...extra, messages: prepared, add_generation_prompt: addGenerationPrompt, bos_token: bosToken, eos_token: eosToken };
    if (withTools) context.tools = toolList;
    try {
      return runTemplate(module, entry.template, context);
    } catch (e) {
      if (e instanceof TemplateRaised) throw new WickError('E_TEMPLATE', `the chat template refused the conversation: ${e.message}`);
      throw new WickError('E_TEMPLATE', `the chat template failed: ${e.message}`);
    }
  };
  let prepared = templateMessages(messages, source);
  // a template that drops the assistant's calls (Granite 3.3's) gets them written into the
  // message's text in the family's format, so that the model sees what it called before a result
  if (toolFormat && prepared.some(hasCalls) && !rendersToolCalls(module, entry, base)) prepared = callsAsText(prepared, toolFormat);
  const text = render(prepared, !!toolList);
  // a template with no tools section (llama.cpp's SmolLM3 copy) renders the same with and
  // without them: the model would never learn of the tools, so wick tells it in the system message
  if (!toolList || !toolFormat || text !== render(prepared, false)) return text;
  return render(withToolsDescribed(prepared, toolList, toolFormat), true);
}

// ---- tools for a template that has no tools section ----
//
// The tools are described in the system message (a new one when the conversation has none), in
// the words below: each definition as one line of JSON, then how a call is written in the
// family's format. The assistant's earlier calls, which such a template drops, are written into
// its message as text in that same format, so that the model sees what it called before a result.

const TOOL_FORMATS = ['hermes', 'llama3', 'granite', 'xml', 'pythonic'];

/** JSON with a space after each comma and colon, as Python's json.dumps (the templates' tojson) writes it. */
function spacedJson(value) {
  if (Array.isArray(value)) return `[${value.map(spacedJson).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}: ${spacedJson(v)}`).join(', ')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** The text of one call as the model writes it in a format. */
function toolCallText(format, name, args) {
  if (format === 'granite') return `${GRANITE_CALL}${spacedJson([{ name, arguments: args }])}`;
  if (format === 'pythonic') return `${PY_CALL_START}[${pythonCall(name, args)}]${PY_CALL_END}`;
  if (format === 'xml') {
    const params = Object.entries(args).map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : spacedJson(v)}\n</parameter>\n`).join('');
    return `<tool_call>\n<function=${name}>\n${params}</function>\n</tool_call>`;
  }
  return format === 'hermes'
    ? `<tool_call>\n${spacedJson({ name, arguments: args })}\n</tool_call>`
    : spacedJson({ name, parameters: args });
}

/** One call in the pythonic format: f(a="x", b=1) */
const pythonCall = (name, args) => `${name}(${Object.entries(args).map(([k, v]) => `${k}=${pythonLiteral(v)}`).join(', ')})`;

/** The tools section wick writes into the system message for a template that has none. */
function describeTools(tools, format) {
  const list = tools.map(spacedJson).join('\n');
  if (format === 'hermes' || format === 'xml') {
    const how = format === 'hermes' ? 'a JSON object with its name and its arguments' : 'its name and each argument';
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line, between <tools> and </tools>:\n'
      + `<tools>\n${list}\n</tools>\n\n`
      + `To call a function, write ${how} between <tool_call> and </tool_call>, as here:\n`
      + `${toolCallText(format, 'function_name', { argument_name: 'value' })}\n`
      + 'Write one such block for each call. The results come back in the next message.';
  }
  if (format === 'pythonic') {
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line:\n'
      + `${list}\n\n`
      + `To call functions, write a Python list of calls with keyword arguments between ${PY_CALL_START} and ${PY_CALL_END}, as here:\n`
      + toolCallText('pythonic', 'function_name', { argument_name: 'value' });
  }
  if (format === 'granite') {
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line:\n'
      + `${list}\n\n`
      + `To call functions, answer with nothing but ${GRANITE_CALL} and a JSON list of calls, each with its name and its arguments, as here:\n`
      + toolCallText('granite', 'function_name', { argument_name: 'value' });
  }
  return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
    + '(its name, what it does, and a JSON schema of its parameters), one per line:\n'
    + `${list}\n\n`
    + 'To call a function, answer with nothing but a JSON object with its name and its parameters, as here:\n'
    + toolCallText('llama3', 'function_name', { argument_name: 'value' });
}

const hasCalls = (m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0;

/** The conversation with each assistant message's tool_calls written into its text, in a format. */
function callsAsText(messages, format) {
  return messages.map((m) => {
    if (!hasCalls(m)) return m;
    const calls = format === 'granite'
      ? [`${GRANITE_CALL}${spacedJson(m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments ?? {} })))}`]
      : format === 'pythonic'
        ? [`${PY_CALL_START}[${m.tool_calls.map((c) => pythonCall(c.function.name, c.function.arguments ?? {})).join(', ')}]${PY_CALL_END}`]
        : m.tool_calls.map((c) => toolCallText(format, c.function.name, c.function.arguments ?? {}));
    const written = { ...m, content: [m.content, ...calls].filter(Boolean).join('\n') };
    delete written.tool_calls;
    return written;
  });
}

/** The conversation with the tools described in its system message and the calls written as text. */
function withToolsDescribed(messages, tools, format) {
  const description = describeTools(tools, format);
  const out = callsAsText(messages, format);
  if (out[0].role === 'system') {
    const system = out[0].content.trimEnd();
    return [{ ...out[0], content: system ? `${system}\n\n${description}` : description }, ...out.slice(1)];
  }
  return [{ role: 'system', content: description }, ...out];
}

// @huggingface/jinja renders chat templates. Under Node and with a bundler or an import map the
// bare name resolves; a page without either finds it in the repository's node_modules, in
// dist/jinja/ (`make dist` rewrites the first path), or in the node_modules holding this package.
let jinja = null;
const isJinja = (module) => !!(module?.Template && module.Environment && module.Interpreter);
async function loadJinja() {
  if (jinja) return jinja;
  // by name first, as a literal: a bundler puts the package into the app (as a lazy chunk)
  try {
    jinja = await import('@huggingface/jinja');
    if (isJinja(jinja)) return jinja;
  } catch { /* a page without a bundler or an import map: the places below */ }
  const candidates = [moduleUrl('../node_modules/@huggingface/jinja/dist/index.js'), moduleUrl('../../@huggingface/jinja/dist/index.js')];
  for (const c of candidates) {
    try {
      jinja = await import(/* @vite-ignore */ /* webpackIgnore: true */ c);
      if (isJinja(jinja)) return jinja;
    } catch { /* try the next place */ }
  }
  jinja = null;
  throw new WickError('E_NO_JINJA', 'chat templates need @huggingface/jinja: install it (npm install @huggingface/jinja) so that it is in node_modules beside wick, or map the name "@huggingface/jinja" with an import map, or call Wick.useJinja(module)');
}

// ---- the Cache API (downloads kept for offline use) ----

async function openCache() {
  if (typeof caches === 'undefined') return null;
  return caches.open(CACHE_NAME);
}

const cache = {
  /** Whether downloads can be kept here (the Cache API exists: pages and workers, not Node). */
  get supported() { return typeof caches !== 'undefined'; },
  /**
   * The kept files: [{url, bytes, date}]. With {partial: true}, also the downloads that stopped
   * part way (a later load of the URL resumes them): [{url, bytes (kept so far), total, date, partial: true}].
   */
  async list({ partial = false } = {}) {
    const c = await openCache();
    if (!c) return [];
    const out = [];
    for (const request of await c.keys()) {
      const r = await c.match(request);
      out.push({ url: request.url, bytes: Number(r?.headers.get('X-Wick-Bytes')) || 0, date: r?.headers.get('X-Wick-Date') || null });
    }
    if (partial) {
      const p = await caches.open(PARTIAL_CACHE);
      for (const request of await p.keys()) {
        if (request.url.startsWith(PIECE_URL)) continue;
        const r = await p.match(request);
        out.push({ url: request.url, bytes: Number(r?.headers.get('X-Wick-Stored')) || 0, total: Number(r?.headers.get('X-Wick-Total')) || 0, date: r?.headers.get('X-Wick-Date') || null, partial: true });
      }
    }
    return out;
  },
  /** Forgets one file, kept whole or in part (true when something was kept). */
  async delete(url) {
    const c = await openCache();
    if (!c) return false;
    const abs = absoluteUrl(String(url));
    const whole = await c.delete(abs);
    const p = await caches.open(PARTIAL_CACHE);
    let part = await p.delete(abs);
    for (const key of await p.keys(PIECE_URL, { ignoreSearch: true }))
      if (new URL(key.url).searchParams.get('url') === abs) part = (await p.delete(key)) || part;
    return whole || part;
  },
  /** Forgets every file, and every download that stopped part way. */
  async clear() {
    if (typeof caches === 'undefined') return false;
    const part = await caches.delete(PARTIAL_CACHE);
    return (await caches.delete(CACHE_NAME)) || part;
  },
  /** Whether the file at url is kept whole. */
  async has(url) {
    const c = await openCache();
    return !!(c && (await c.match(absoluteUrl(String(url)))));
  },
};

// ---- looking at a model before loading it ----

/**
 * The size and GGUF metadata of a model at a URL (from the cache, or the first bytes fetched with
 * Range requests), and whether it fits: {url, bytes, metadata, fits: {fits, needed, available, kvBytes}}.
 */
async function inspect(url, { contextSize = 0, kvType = 'f16' } = {}) {
  const abs = absoluteUrl(String(url));
  const c = await openCache();
  const hit = c && (await c.match(abs));
  let bytes = hit ? Number(hit.headers.get('X-Wick-Bytes')) : null;
  for (let want = 1 << 18; ; want *= 4) {
    let head;
    if (hit) head = new Uint8Array(await (await c.match(abs)).arrayBuffer()).subarray(0, want);
    else {
      const r = await fetch(abs, { headers: { Range: `bytes=0-${want - 1}` } }).catch((e) => { throw new WickError('E_FETCH', `could not fetch ${abs}: ${e.message}`); });
      if (!r.ok) throw new WickError('E_FETCH', `could not fetch ${abs}: HTTP ${r.status}`);
      const total = /\/(\d+)$/.exec(r.headers.get('Content-Range') || '');
      bytes = total ? Number(total[1]) : Number(r.headers.get('Content-Length'));
      head = new Uint8Array(await r.arrayBuffer());
    }
    try {
      const header = WickGguf.parseHeader(head);
      return { url: abs, bytes, version: header.version, tensorCount: header.tensorCount, metadata: header.metadata, fits: WickGguf.checkFits({ fileBytes: bytes, metadata: header.metadata, contextSize, kvType }) };
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
 *   2048…4096), kvType ('f16' | 'f32'), onProgress({loaded, total, phase: 'download'|'load', cached, resumed}),
 *   signal (AbortSignal), cache (false: neither read nor keep a download in the Cache API),
 *   multiThreaded (false: the single-threaded build even where threads are possible),
 *   relaxedSimd (false: the plain SIMD128 build even where relaxed SIMD is available),
 *   wasmBase (the URL of the folder with wick.js, wick.wasm, wick-mt.*, wick-relaxed.*,
 *   wick-mt-relaxed.*), workerUrl.
 */
async function load(source, options = {}) {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const threadsAsked = options.threads === undefined ? defaultThreads() : checkNumber('threads', options.threads, { min: 1, max: 64, integer: true });
  if (options.contextSize !== undefined && options.contextSize !== 0) checkNumber('contextSize', options.contextSize, { min: 1, max: 1 << 22, integer: true });
  if (options.kvType !== undefined && options.kvType !== 'f16' && options.kvType !== 'f32') throw invalid(`kvType must be 'f16' or 'f32' (got ${JSON.stringify(options.kvType)})`);
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw invalid('onProgress must be a function');
  if (options.device !== undefined && !['auto', 'gpu', 'cpu'].includes(options.device)) throw invalid(`device must be 'auto', 'gpu' or 'cpu' (got ${JSON.stringify(options.device)})`);
  checkSignal(options.signal);
  const mt = options.multiThreaded !== false && canUseThreads();
  const relaxed = options.relaxedSimd !== false && hasRelaxedSimd();
  const engine = new Engine();
  const files = engineFiles();
  engine._files = options.wasmBase ? filesIn(await resourceUrl(options.wasmBase, true)) : files;
  engine._workerUrl = options.workerUrl ? await resourceUrl(options.workerUrl, false) : files.worker;
  engine._ggufUrl = files.gguf;
  engine._gpuUrl = options.gpuModuleUrl ? await resourceUrl(options.gpuModuleUrl, false) : files.gpu;
  engine._kvType = options.kvType || 'f16';
  try {
    await engine._start({ threads: mt ? threadsAsked : 1, build: (mt ? 'mt' : 'st') + (relaxed ? '-relaxed' : '') });
    await engine._load(source, options);
    return engine;
  } catch (e) {
    await engine.unload().catch(() => {});
    throw e instanceof WickError ? e : new WickError('E_WORKER', e.message || String(e));
  }
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
  /** Supplies @huggingface/jinja (the module object) where it cannot be imported by name. */
  useJinja(module) {
    if (!isJinja(module)) throw invalid('useJinja takes the @huggingface/jinja module (with its Template, Environment and Interpreter classes)');
    jinja = module;
    compiledTemplates.clear();
  },
  renderChatTemplate,
  WickError,
};

export default Wick;
