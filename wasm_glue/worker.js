/* wasm_glue/worker.js — the engine's own thread: it loads one of the two wasm builds, streams the
 * model file into wasm memory (from the network, the Cache API, a Blob or chunks sent by the
 * host), keeps the downloaded file in the Cache API (and, while it arrives, its bytes in pieces,
 * so that a load cut by a reload or an abort resumes where it stopped), and runs generation one
 * token at a time, posting each piece of text as it is produced.
 *
 * A classic script: a page starts it with `new Worker(url)` (importScripts loads the Emscripten
 * script), Node starts it as a worker_threads Worker (it is then an ES module; the Emscripten
 * script is loaded with createRequire). Both speak the same messages, made by wick.mjs:
 *
 *   host → worker  {id, type: 'init'|'load'|'generate'|'tokenize'|'detokenize'|'unload', ...}
 *                  {id, type: 'abort'}              (stops request id: a load or a generation)
 *                  {type: 'gpu-lose'}               (destroys the GPU device: tests of the fallback)
 *                  {id, type: 'data', bytes|end}    (the bytes of a load from an ArrayBuffer)
 *   worker → host  {id, type: 'result', value} | {id, type: 'error', code, message}
 *                  {id, type: 'progress', loaded, total, phase, cached, resumed}
 *                  {id, type: 'chunk', text, tokens, probs?, shifted?, reevaluated?}
 *                  {type: 'fatal', message}         (the wasm instance trapped: the worker is done)
 *
 * Requests run one at a time in arrival order; 'abort', 'data' and 'gpu-lose' are handled at once.
 *
 * The WebGPU path (load option device 'gpu' or 'auto'): the engine parses the model as always,
 * but its context is an external one (src/wick.h, wick_ctx_new_external): the generator's
 * evaluations come out as a list of operations that gpu/backend.mjs carries out on the GPU,
 * and the logits it reads back go into the context, where the C sampler draws from them. So
 * sampling, grammar and stop strings are the same code on both paths. A GPU failure during a
 * request (a lost device, an out-of-memory) makes the worker fall back to the CPU: the request
 * ends with E_GPU, and the next one runs on a fresh CPU context. */
'use strict';
(function () {
  const isNode = typeof importScripts !== 'function';
  const CACHE_NAME = 'wick-models-v1';
  const STATUS_CODES = { 1: 'E_INVALID_ARG', 2: 'E_FORMAT', 3: 'E_UNSUPPORTED', 4: 'E_NOMEM', 5: 'E_CONTEXT_FULL' };
  const FINISH = { 1: 'eog', 2: 'stop', 3: 'length', 4: 'grammar' };
  const RESUME_ATTEMPTS = 5;     // Range requests after a download breaks off
  const CACHE_WRITE_CHUNK = 1 << 20;
  const PROGRESS_INTERVAL_MS = 50;
  const HEADER_FIRST_TRY = 1 << 16; // bytes of the file before the first try at its header

  let post = null;          // (message, transfer?) → void
  let M = null;             // the Emscripten module
  let buildInfo = null;     // {build, threads}
  const state = { model: 0, ctx: 0, gen: 0, buffers: [], size: 0, meta: null, gpu: null, device: null, ctxOptions: null };
  let gpuUrl = null;        // gpu/backend.mjs, as the host names it
  const aborted = new Set();
  const feeds = new Map();  // load id → pushed data {chunks, waiting, ended}
  let queue = Promise.resolve();

  class WorkerError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  // ---- the message loop ----

  function onMessage(msg) {
    if (msg.type === 'abort') { aborted.add(msg.id); feedWake(msg.id); return; }
    if (msg.type === 'data') { feedPush(msg); return; }
    if (msg.type === 'gpu-lose') { state.gpu?.forward.device.destroy(); return; }
    queue = queue.then(() => handle(msg));
  }

  async function handle(msg) {
    const { id } = msg;
    try {
      if (aborted.has(id)) throw new WorkerError('E_ABORTED', 'aborted');
      const value = await HANDLERS[msg.type](msg);
      post({ id, type: 'result', value });
    } catch (e) {
      if (isTrap(e)) { fatal(e); return; }
      post({ id, type: 'error', code: /^E_[A-Z_]+$/.test(e.code) ? e.code : 'E_INTERNAL', message: e.message || String(e), ...(e.device ? { device: e.device } : {}) });
    } finally {
      aborted.delete(id);
      feeds.delete(id);
    }
  }

  // A trap or an Emscripten abort leaves the instance unusable: report it and stop taking requests.
  function isTrap(e) {
    return (typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError) || /^(abort|Aborted)\(/.test(e?.message || '');
  }

  function fatal(e) {
    post({ type: 'fatal', message: `the engine crashed: ${e?.message || e}` });
    queue = new Promise(() => {});
  }

  const HANDLERS = {
    init, load, generate, tokenize: (m) => tokenize(m.text, m.addBos, m.special), detokenize: (m) => detokenize(m.tokens),
    softmax: (m) => softmax(m.logits, m.temperature),
    unload: () => { unloadModel(); return true; },
  };

  // ---- starting the wasm module ----

  async function init({ scriptUrl, wasmUrl, threadWorkerUrl, build, threads, gpuModuleUrl }) {
    gpuUrl = gpuModuleUrl || null;
    const options = {
      wickThreads: threads,
      print: (s) => console.log(s),
      printErr: (s) => console.warn(s),
      onAbort: (what) => fatal(new Error(`abort(${what})`)),
    };
    let createWick;
    if (isNode) {
      const { createRequire } = await import('node:module');
      const { fileURLToPath } = await import('node:url');
      const fs = await import('node:fs');
      const scriptPath = fileURLToPath(scriptUrl);
      createWick = createRequire(scriptPath)(scriptPath);
      options.wasmBinary = fs.readFileSync(fileURLToPath(wasmUrl));
    } else {
      importScripts(scriptUrl);
      createWick = self.createWick;
      options.mainScriptUrlOrBlob = scriptUrl;
      // The host names each file: a bundler may have renamed them (wick-mt.worker-1a2b3c.js) or
      // put them in different folders, so nothing is looked up beside the script by its old name.
      const threadWorker = threadWorkerUrl && (await scriptAsSameOrigin(threadWorkerUrl));
      options.locateFile = (name) => {
        if (name.endsWith('.wasm') && wasmUrl) return wasmUrl;
        if (name.endsWith('.worker.js') && threadWorker) return threadWorker;
        return new URL(name, scriptUrl).href;
      };
    }
    M = await createWick(options);
    buildInfo = { build, threads };
    return { build, threads, genApi: typeof M._wick_gen_new === 'function', splitApi: typeof M._wick_model_load_gguf_parts === 'function' };
  }

  /** A script URL a worker can start from: a data: URL (a bundler inlines small files so) becomes
   * a blob: URL, because a worker started from data: has an opaque origin and cannot share the
   * engine's memory. */
  async function scriptAsSameOrigin(url) {
    if (!/^data:/i.test(url)) return url;
    const blob = await (await fetch(url)).blob();
    return URL.createObjectURL(new Blob([blob], { type: 'text/javascript' }));
  }

  // ---- calling C ----

  function check(status, context) {
    if (status === 0) return;
    const detail = M.UTF8ToString(M._wick_last_error());
    throw new WorkerError(STATUS_CODES[status] || 'E_INTERNAL', detail ? (context ? `${context}: ${detail}` : detail) : context || `status ${status}`);
  }

  function malloc(n) {
    const p = M._malloc(Math.max(1, n)) >>> 0;
    if (!p) throw new WorkerError('E_TOO_LARGE', `out of wasm memory: could not allocate ${n} bytes`);
    return p;
  }

  /** Runs fn(ptr) with a scratch allocation of n bytes. */
  function withScratch(n, fn) {
    const p = malloc(n);
    try { return fn(p); } finally { M._free(p); }
  }

  function withString(s, fn) {
    const n = M.lengthBytesUTF8(s);
    return withScratch(n + 1, (p) => { M.stringToUTF8(s, p, n + 1); return fn(p, n); });
  }

  // slice(): TextDecoder refuses views on a SharedArrayBuffer (the pthreads build)
  function bytesAt(ptr, n) { return M.HEAPU8.slice(ptr, ptr + n); }
  const i32At = (ptr) => M.HEAP32[ptr >>> 2];
  const u32At = (ptr) => M.HEAPU32[ptr >>> 2];

  // ---- loading ----

  function unloadModel() {
    if (!M) return;
    if (state.gen) M._wick_gen_free(state.gen);
    if (state.ctx) M._wick_ctx_free(state.ctx);
    if (state.model) M._wick_model_free(state.model);
    for (const b of state.buffers) M._wick_buffer_free(b.ptr, b.size);
    dropGpu();
    Object.assign(state, { model: 0, ctx: 0, gen: 0, buffers: [], size: 0, meta: null, gpu: null, device: null, ctxOptions: null });
    pieceCache.clear();
  }

  function throwIfAborted(id) {
    if (aborted.has(id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
  }

  /**
   * Reports progress at most every PROGRESS_INTERVAL_MS, never going backwards. report.resumed:
   * the bytes of this file read back from an earlier, unfinished download (added to resumedBefore,
   * the earlier files' own).
   */
  function progressReporter(id, phase, total, cached, resumedBefore = 0) {
    let last = 0, best = 0;
    const report = (loaded, force) => {
      best = Math.max(best, loaded);
      const now = performance.now();
      if (!force && now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      post({ id, type: 'progress', phase, loaded: best, total, cached, resumed: resumedBefore + report.resumed });
    };
    report.resumed = 0;
    return report;
  }

  async function load(msg) {
    const { id, source, contextSize, kvType } = msg;
    if (!M) throw new WorkerError('E_INTERNAL', 'the worker was not initialised');
    unloadModel();
    if (source.items.length > 1 && typeof M._wick_model_load_gguf_parts !== 'function')
      throw new WorkerError('E_UNSUPPORTED', `a model split into ${source.items.length} files needs wick_model_load_gguf_parts, which this build of the engine does not export`);
    const parts = [];
    try {
      const sizes = source.sizes || [];
      const total = sizes.length === source.items.length ? sizes.reduce((a, b) => a + b, 0) : 0;
      let before = 0, resumedBefore = 0;
      for (let i = 0; i < source.items.length; i++) {
        const item = source.items[i];
        const sink = {
          id,
          first: i === 0,
          before,
          resumedBefore,
          total,
          contextSize,
          kvType,
          headerChecked: false,
          meta: null,
        };
        const part = await readSource(source.kind, item, sink);
        parts.push(part);
        before += part.size;
        resumedBefore += part.resumed || 0;
        if (i === 0) state.meta = sink.meta;
      }
      throwIfAborted(id);
      if (!state.meta) state.meta = headerOf(parts[0]);
      const size = parts.reduce((a, p) => a + p.size, 0);
      post({ id, type: 'progress', phase: 'load', loaded: 0, total: size });

      const out = malloc(4);
      try {
        if (parts.length === 1) {
          check(M._wick_model_load_gguf(parts[0].ptr, parts[0].size, out));
        } else {
          const n = parts.length;
          withScratch(8 * n, (arr) => {
            parts.forEach((p, k) => { M.HEAPU32[(arr >>> 2) + k] = p.ptr; M.HEAPU32[(arr >>> 2) + n + k] = p.size; });
            check(M._wick_model_load_gguf_parts(arr, arr + 4 * n, n, out));
          });
        }
        state.model = u32At(out);
        state.buffers = parts;
        state.size = size;

        state.ctxOptions = { contextSize, kvType };
        const gpu = msg.device && msg.device !== 'cpu' ? await openGpu(msg) : null;
        if (gpu?.forward) {
          state.gpu = gpu;
          state.ctx = gpu.ctx;
          state.device = { type: 'gpu', adapter: gpu.description, software: gpu.software, converted: gpu.forward.converted };
          check(M._wick_gen_new(state.ctx, out));
          state.gen = u32At(out);
        } else {
          cpuContext();
          state.device = { type: 'cpu', reason: gpu?.reason || (msg.device === 'cpu' ? 'asked for' : 'no GPU path in this engine') };
        }
      } finally {
        M._free(out);
      }
      post({ id, type: 'progress', phase: 'load', loaded: size, total: size });
      return describe(parts);
    } catch (e) {
      if (state.model === 0) for (const p of parts) if (!state.buffers.includes(p)) M._wick_buffer_free(p.ptr, p.size);
      unloadModel();
      throw e;
    }
  }

  /** The CPU context and generator (a load on the CPU path, or the fallback from the GPU). */
  function cpuContext() {
    const { contextSize, kvType } = state.ctxOptions;
    withScratch(16, (params) => withScratch(4, (out) => {
      M._wick_ctx_default_params(params);
      const p32 = params >>> 2;
      if (contextSize) M.HEAP32[p32] = contextSize;
      M.HEAP32[p32 + 2] = buildInfo.threads;
      M.HEAP32[p32 + 3] = kvType === 'f32' ? 0 : 1;
      check(M._wick_ctx_new(state.model, params, out));
      state.ctx = u32At(out);
      if (typeof M._wick_gen_new === 'function') {
        check(M._wick_gen_new(state.ctx, out));
        state.gen = u32At(out);
      }
    }));
  }

  function dropGpu() {
    if (!state.gpu) return;
    try { state.gpu.forward?.destroy(); } catch { /* a lost device's buffers are gone already */ }
    try { state.gpu.forward?.device.destroy(); } catch { /* idem */ }
    state.gpu = null;
  }

  /**
   * The GPU path for the loaded model: {forward, ctx, description, software}, or {reason} why
   * the CPU path is taken instead (device 'auto'). With device 'gpu' a reason is an E_GPU error
   * (E_UNSUPPORTED for a family the GPU path does not run).
   */
  async function openGpu({ device, gpuAllowSoftware, contextSize, gpuMaxBatch }) {
    const forced = device === 'gpu';
    const refuse = (reason, code = 'E_GPU') => {
      if (forced) throw new WorkerError(code, `the GPU path is not available: ${reason}`);
      return { reason };
    };
    if (typeof M._wick_ctx_new_external !== 'function') return refuse('this build of the engine has no external context (wick_ctx_new_external)');
    if (!gpuUrl) return refuse('the host named no GPU module');
    let gpu;
    try {
      gpu = await import(gpuUrl);
    } catch (e) {
      return refuse(`the GPU module did not load: ${e.message}`);
    }
    const tensors = modelTensors();
    const unsupported = gpu.GpuForward.unsupported(tensors);
    if (unsupported) return refuse(unsupported, 'E_UNSUPPORTED');
    const found = await gpu.findAdapter();
    if (!found.adapter) return refuse(found.reason);
    if (found.software && !gpuAllowSoftware)
      return refuse(`the only WebGPU adapter is a software one (${found.description}), slower than the CPU path`);
    let ctx = 0, forward = null;
    try {
      ctx = withScratch(4, (out) => {
        check(M._wick_ctx_new_external(state.model, contextSize || 0, out));
        return u32At(out);
      });
      const gpuDevice = await gpu.openDevice(found.adapter);
      forward = await gpu.GpuForward.create(gpuDevice, {
        tensors,
        nCtx: M._wick_n_ctx(ctx),
        heap: () => M.HEAPU8,
        dequantize,
        maxBatch: gpuMaxBatch || 32,
        software: found.software,
      });
      return { forward, ctx, description: found.description, software: found.software };
    } catch (e) {
      if (ctx) M._wick_ctx_free(ctx);
      try { forward?.device.destroy(); } catch { /* nothing to free */ }
      if (e.code === 'E_GPU' || e.code === 'E_UNSUPPORTED') return refuse(e.message, e.code);
      throw e;
    }
  }

  function modelTensors() {
    const need = withScratch(4, (n) => { M._wick_model_tensors_json(state.model, 0, 0, n); return u32At(n); });
    return JSON.parse(withScratch(need, (buf) => {
      check(M._wick_model_tensors_json(state.model, buf, need, 0));
      return M.UTF8ToString(buf);
    }));
  }

  function dequantize(type, ptr, n) {
    return withScratch(4 * n, (out) => {
      check(M._wick_dequantize(type, ptr, n, out));
      return M.HEAPF32.slice(out >>> 2, (out >>> 2) + n);
    });
  }

  /** Carries out the external context's queued evaluations on the GPU and hands it the logits. */
  async function runGpuOps() {
    const { forward, ctx } = state.gpu;
    const [ptr, n] = withScratch(4, (p) => { const n = M._wick_ctx_external_ops(ctx, p); return [u32At(p), n]; });
    const ops = M.HEAP32.slice(ptr >>> 2, (ptr >>> 2) + n);
    let logits = null, rows = 0;
    for (let i = 0; i < ops.length; ) {
      if (ops[i] === 2) { i += 2; continue; } // trim: the next evaluation says its positions
      const pos = ops[i + 1], count = ops[i + 2], all = ops[i + 3] === 1;
      logits = await forward.eval(Array.from(ops.subarray(i + 4, i + 4 + count)), pos, all);
      rows = all ? count : 1;
      i += 4 + count;
    }
    if (!logits) return;
    const dst = M._wick_ctx_external_logits(ctx, rows) >>> 0;
    if (!dst) throw new WorkerError('E_NOMEM', 'out of memory for the logits');
    M.HEAPF32.set(logits, dst >>> 2);
  }

  /** After a GPU failure: the GPU path is dropped and the conversation goes on on the CPU. */
  function fallBackToCpu(e) {
    const reason = e.message || String(e);
    if (state.gen) M._wick_gen_free(state.gen);
    if (state.ctx) M._wick_ctx_free(state.ctx);
    state.gen = state.ctx = 0;
    dropGpu();
    cpuContext();
    state.device = { type: 'cpu', reason: `the GPU failed (${reason}): switched to the CPU` };
    const err = new WorkerError('E_GPU', `${reason}; the engine switched to the CPU, where the next request runs`);
    err.device = state.device;
    return err;
  }

  function headerOf(part) {
    return summarize(WickGguf.parseHeader(M.HEAPU8.subarray(part.ptr, part.ptr + part.size), { keepArrays: ['tokenizer.ggml.tokens'] }));
  }

  /** The metadata to send to the host: arrays of the vocabulary dropped, BOS/EOS texts resolved. */
  function summarize(header) {
    const md = { ...header.metadata };
    const tokens = md['tokenizer.ggml.tokens'];
    const special = {};
    if (Array.isArray(tokens)) {
      for (const name of ['bos', 'eos', 'unknown', 'padding']) {
        const tid = md[`tokenizer.ggml.${name}_token_id`];
        if (Number.isInteger(tid) && tid >= 0 && tid < tokens.length) special[name] = tokens[tid];
      }
      md['tokenizer.ggml.tokens'] = { arrayOf: WickGguf.TYPE.STRING, length: tokens.length };
    }
    return { version: header.version, tensorCount: header.tensorCount, metadata: md, specialTokens: special };
  }

  function describe(parts) {
    const json = withScratch(1 << 14, (buf) => withScratch(4, (needed) => {
      check(M._wick_model_info_json(state.model, buf, 1 << 14, needed));
      return M.UTF8ToString(buf);
    }));
    return {
      model: JSON.parse(json),
      header: state.meta,
      fileBytes: state.size,
      files: parts.length,
      cached: parts.every((p) => p.cached),
      contextSize: M._wick_n_ctx(state.ctx),
      kvBytes: state.gpu ? state.gpu.forward.kvBytes : M._wick_kv_bytes(state.ctx) >>> 0,
      device: state.device,
      stateBytes: M._wick_state_bytes(state.ctx) >>> 0,
      build: buildInfo.build,
      threads: buildInfo.threads,
      heapBytes: M.HEAPU8.length,
    };
  }

  /** Reads one file into its own allocation: {ptr, size, cached}. */
  async function readSource(kind, item, sink) {
    if (kind === 'url') return readUrl(item, sink);
    if (kind === 'blob') return readStream(item.stream(), item.size, sink, false);
    if (kind === 'path') {
      const fs = await import('node:fs');
      let size;
      try {
        size = fs.statSync(item).size;
      } catch (e) {
        throw new WorkerError('E_FETCH', `could not read ${item}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
      }
      const { Readable } = await import('node:stream');
      return readStream(Readable.toWeb(fs.createReadStream(item, { highWaterMark: 1 << 20 })), size, sink, false);
    }
    if (kind === 'push') return readStream(feedStream(sink.id), item.size, sink, false);
    throw new WorkerError('E_INVALID_ARG', `unknown source kind ${kind}`);
  }

  /** Checks the size before any byte is read: the file alone against wasm32 and the allocator. */
  function checkSize(size, sink) {
    const fits = WickGguf.checkFits({ fileBytes: sink.before + size, contextSize: sink.contextSize, kvType: sink.kvType, threads: buildInfo.threads });
    if (!fits.fits) throw tooLarge(sink.before + size, fits.needed, fits.available);
  }

  function tooLarge(fileBytes, needed, available) {
    const f = WickGguf.formatBytes;
    return new WorkerError('E_TOO_LARGE', `the model does not fit in WebAssembly memory: it needs ${f(needed)} (${needed} bytes: file ${f(fileBytes)} plus KV cache and scratch), and wasm32 holds ${f(available)} (${available} bytes)`);
  }

  /**
   * Streams `stream` (size bytes) into a new allocation, checking the GGUF magic and, once the
   * header has arrived, the full memory need (file + KV cache for the asked context).
   * resume(loaded, error) → {reader, from} that continues at byte `from` (loaded, or 0 when the
   * file is sent again whole), or null: give up. With no stream, resume is asked for the first one.
   * opts.stored: where the download is kept as it arrives (a PartialDownload); with
   *   opts.fromStore, the bytes it holds from an earlier load are read in first (progress says
   *   how many in `resumed`) and resume continues after them.
   */
  async function readStream(stream, size, sink, cached, resume, opts = {}) {
    checkSize(size, sink);
    // a model buffer may be larger than one malloc can give: the engine's own allocator
    const ptr = M._wick_buffer_alloc(size) >>> 0;
    if (!ptr) throw new WorkerError('E_TOO_LARGE', `out of wasm memory: could not allocate ${size} bytes for the model`);
    const report = progressReporter(sink.id, 'download', sink.total || sink.before + size, cached, sink.resumedBefore);
    const stored = opts.stored || null;
    let loaded = 0, nextHeaderTry = HEADER_FIRST_TRY;
    let reader = null;
    try {
      reader = stream ? stream.getReader() : null;
      report(sink.before, true);
      if (stored && opts.fromStore) {
        loaded = await stored.readInto(ptr, (n) => { throwIfAborted(sink.id); report.resumed = n; report(sink.before + n, false); });
        if (loaded) report(sink.before + loaded, true);
      }
      for (;;) {
        throwIfAborted(sink.id);
        let step;
        try {
          step = reader ? await reader.read() : { done: true };
        } catch (e) {
          if (e.code === 'E_ABORTED' || aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
          step = { done: true, error: e };
        }
        if (step.done) {
          if (loaded === size) break;
          const next = resume && (await resume(loaded, step.error));
          if (!next) throw new WorkerError('E_FETCH', `the download ended after ${loaded} of ${size} bytes${step.error ? `: ${step.error.message}` : ''}`);
          reader = next.reader;
          if (next.from !== loaded && stored) await stored.restart(next.validator);
          loaded = next.from;
          continue;
        }
        const chunk = step.value;
        if (loaded + chunk.length > size) throw new WorkerError('E_FETCH', `the server sent more than the announced ${size} bytes`);
        M.HEAPU8.set(chunk, ptr + loaded);
        if (loaded < 4 && loaded + chunk.length >= 4 && !WickGguf.isGguf(M.HEAPU8.subarray(ptr, ptr + 4)))
          throw notGguf(M.HEAPU8.slice(ptr, ptr + Math.min(64, loaded + chunk.length)));
        loaded += chunk.length;
        if (stored) await stored.arrived(ptr, loaded);
        if (sink.first && !sink.headerChecked && (loaded >= nextHeaderTry || loaded === size)) {
          nextHeaderTry = loaded * 2;
          tryHeader(ptr, loaded, size, sink);
        }
        report(sink.before + loaded, false);
      }
      if (size < 4 || !WickGguf.isGguf(M.HEAPU8.subarray(ptr, ptr + 4))) throw notGguf(M.HEAPU8.slice(ptr, ptr + Math.min(64, size)));
      if (sink.first && !sink.headerChecked) tryHeader(ptr, size, size, sink);
      report(sink.before + size, true);
      return { ptr, size, cached, resumed: report.resumed };
    } catch (e) {
      // the bytes that came are kept for the next load, unless they are not a model this engine takes
      if (stored) await (DROP_KEPT_AFTER.has(e.code) ? stored.drop() : stored.keepUpTo(ptr, loaded));
      M._wick_buffer_free(ptr, size);
      reader?.cancel().catch(() => {});
      throw e;
    }
  }

  /**
   * A body of unknown size (no Content-Length, or a compressed transfer): its chunks are held in
   * JS until it ends, then copied into wasm memory, so the peak is about twice the file.
   */
  async function readUnsized(stream, sink) {
    const chunks = [];
    let loaded = 0;
    const report = progressReporter(sink.id, 'download', 0, false);
    const reader = stream.getReader();
    for (;;) {
      throwIfAborted(sink.id);
      let step;
      try {
        step = await reader.read();
      } catch (e) {
        throw new WorkerError(aborted.has(sink.id) ? 'E_ABORTED' : 'E_FETCH', `the download broke off after ${loaded} bytes: ${e.message}`);
      }
      if (step.done) break;
      chunks.push(step.value);
      loaded += step.value.length;
      if (chunks.length === 1 || loaded - step.value.length < 4) {
        const first = concat(chunks, Math.min(loaded, 64));
        if (first.length >= 4 && !WickGguf.isGguf(first)) { reader.cancel().catch(() => {}); throw notGguf(first); }
      }
      checkSize(loaded, sink);
      report(sink.before + loaded, false);
    }
    const all = concat(chunks, loaded);
    chunks.length = 0;
    return readStream(new Blob([all]).stream(), loaded, sink, false);
  }

  function concat(chunks, n) {
    const out = new Uint8Array(n);
    let o = 0;
    for (const c of chunks) {
      if (o >= n) break;
      const take = Math.min(c.length, n - o);
      out.set(c.subarray(0, take), o);
      o += take;
    }
    return out;
  }

  function tryHeader(ptr, loaded, size, sink) {
    let header;
    try {
      header = WickGguf.parseHeader(M.HEAPU8.subarray(ptr, ptr + loaded), { keepArrays: ['tokenizer.ggml.tokens'] });
    } catch (e) {
      if (e instanceof WickGguf.NeedMoreBytes && loaded < size) return;
      throw new WorkerError('E_NOT_GGUF', `not a valid GGUF file: ${e.message}`);
    }
    sink.headerChecked = true;
    const unsupported = WickGguf.unsupportedReason(header.metadata);
    if (unsupported) throw new WorkerError('E_UNSUPPORTED', unsupported);
    sink.meta = summarize(header);
    const fits = WickGguf.checkFits({ fileBytes: sink.total || size, metadata: header.metadata, contextSize: sink.contextSize, kvType: sink.kvType, threads: buildInfo.threads });
    if (!fits.fits) throw tooLarge(sink.total || size, fits.needed, fits.available);
  }

  function notGguf(first) {
    const text = new TextDecoder().decode(first).replace(/\s+/g, ' ').trim();
    const html = /^<(!doctype|html|head|body|\?xml)/i.test(text);
    return new WorkerError('E_NOT_GGUF', html ? `got an HTML page instead of a GGUF model ("${text.slice(0, 40)}…")` : 'not a GGUF file (the first bytes are not "GGUF")');
  }

  // ---- from the network, through the Cache API ----

  async function openCache() {
    if (typeof caches === 'undefined') return null;
    try { return await caches.open(CACHE_NAME); } catch { return null; }
  }

  async function readUrl({ url, cache: useCache }, sink) {
    const cache = useCache ? await openCache() : null;
    if (cache) {
      const hit = await cache.match(url);
      const bytes = hit && Number(hit.headers.get('X-Wick-Bytes'));
      if (hit && bytes > 0 && hit.body) {
        try {
          return await readStream(hit.body, bytes, sink, true);
        } catch (e) {
          if (e.code === 'E_ABORTED' || e.code === 'E_TOO_LARGE') throw e;
          await cache.delete(url); // a damaged entry: fetch the file again
        }
      }
    }
    // the bytes of an unfinished download of this URL, kept beside the whole files
    const stored = cache ? await PartialDownload.open(url) : null;
    const controller = new AbortController();
    const abortPoll = setInterval(() => { if (aborted.has(sink.id)) controller.abort(); }, 50);
    // the whole file is kept, then its pieces go; when there is no room for both, the pieces go first
    const finish = async (part) => {
      if (cache && !(await storeInCache(cache, url, part, !!stored)) && stored) {
        await stored.drop();
        await storeInCache(cache, url, part);
      }
      await stored?.drop();
      return part;
    };
    try {
      let first = null;
      if (stored && (await stored.load())) {
        // an earlier load stopped part way: its bytes from the store, then the rest with Range
        try {
          const resume = resumer(url, stored.validator, stored.total, controller.signal, sink, true);
          return await finish(await readStream(null, stored.total, sink, false, resume, { stored, fromStore: true }));
        } catch (e) {
          if (e.code !== 'E_START_OVER') throw e;
          first = e.response; // the whole file as it is now (If-Range did not match), or null
        }
      }
      first ||= await fetchChecked(url, {}, controller.signal, sink);
      const size = first.size;
      const validator = validatorOf(first.response);
      // a file is kept as it comes only when a later load can check that it has not changed
      const keep = stored && size !== null && validator ? stored.begin(validator, size) : null;
      const part = size === null
        ? await readUnsized(first.response.body, sink)
        : await readStream(first.response.body, size, sink, false, resumer(url, validator, size, controller.signal, sink, false), { stored: keep });
      return await finish(part);
    } finally {
      clearInterval(abortPoll);
    }
  }

  /**
   * What identifies the version of a file, for If-Range: its ETag when strong (a weak one never
   * matches If-Range), else its Last-Modified date; null: neither.
   */
  function validatorOf(response) {
    const etag = response.headers.get('ETag');
    return (etag && !etag.startsWith('W/') ? etag : null) || response.headers.get('Last-Modified');
  }

  /** The one error that is not an error: the kept bytes are stale, the file is downloaded again. */
  function startOver(response) {
    const e = new WorkerError('E_START_OVER', 'the file changed since its bytes were kept');
    e.response = response;
    return e;
  }

  /**
   * The function readStream asks for the rest of the file from byte `loaded`: a Range request
   * with If-Range, so that a file changed in between comes whole (200) instead of spliced.
   * fromStore: the first call continues bytes read back from the store, on a new visit: a 206
   * that starts at `loaded` with the same total and validator continues; anything else throws
   * startOver (the kept bytes are dropped). The calls after it, like those of a fresh download,
   * follow a body that broke off: RESUME_ATTEMPTS tries, a pause growing between them.
   */
  function resumer(url, validator, size, signal, sink, fromStore) {
    let attempts = 0, continuing = fromStore;
    const rangeFetch = (loaded, ifRange) => fetch(url, { headers: ifRange ? { Range: `bytes=${loaded}-`, 'If-Range': ifRange } : { Range: `bytes=${loaded}-` }, signal, cache: 'no-store' });
    const contentRange = (r) => {
      const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(r.headers.get('Content-Range') || '');
      return m && { start: Number(m[1]), total: Number(m[3]) };
    };
    const resume = async (loaded, error) => {
      if (continuing) {
        continuing = false;
        if (loaded === 0) throw startOver(null);
        let next, ifRange = validator;
        try {
          next = await rangeFetch(loaded, ifRange);
        } catch (e) {
          if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
          // If-Range is not a CORS-safelisted header: a cross-origin host may refuse its preflight;
          // then Range alone, and the validator of the answer is compared here
          ifRange = null;
          try { next = await rangeFetch(loaded, null); } catch {
            if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
            throw new WorkerError('E_FETCH', `could not fetch ${url}: ${e.message} (the network is down, the host is unreachable, or the server refused a cross-origin request: CORS); ${loaded} bytes of an earlier download are kept for the next try`);
          }
        }
        const range = contentRange(next);
        // a 206 to If-Range is the same version even when it repeats no validator
        const version = validatorOf(next) || ifRange;
        if (next.status === 206 && range && range.start === loaded && range.total === size && version === validator)
          return { reader: next.body.getReader(), from: loaded };
        if (next.status === 200) throw startOver(checkedResponse(url, next));
        next.body?.cancel().catch(() => {});
        throw startOver(null);
      }
      if (aborted.has(sink.id) || attempts++ >= RESUME_ATTEMPTS) return null;
      await new Promise((r) => setTimeout(r, 100 * attempts));
      let next;
      try {
        next = await rangeFetch(loaded, validator);
      } catch {
        return resume(loaded, error);
      }
      const range = contentRange(next);
      if (next.status === 206 && range && range.start === loaded && range.total === size) return { reader: next.body.getReader(), from: loaded };
      if (next.status === 200 && Number(next.headers.get('Content-Length')) === size) return { reader: next.body.getReader(), from: 0, validator: validatorOf(next) };
      next.body?.cancel().catch(() => {});
      return null;
    };
    return resume;
  }

  /** A GET that is refused early: HTTP errors, HTML pages, and sizes wasm32 cannot hold. */
  async function fetchChecked(url, headers, signal, sink) {
    let response;
    try {
      response = await fetch(url, { headers, signal, cache: 'no-store' });
    } catch (e) {
      if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
      throw new WorkerError('E_FETCH', `could not fetch ${url}: ${e.message} (the network is down, the host is unreachable, or the server refused a cross-origin request: CORS)`);
    }
    return checkedResponse(url, response);
  }

  /** {response, size} of an answer that can be a model (size null: not known before the end), or an error. */
  function checkedResponse(url, response) {
    if (!response.ok) {
      response.body?.cancel().catch(() => {});
      throw new WorkerError('E_FETCH', `could not fetch ${url}: HTTP ${response.status} ${response.statusText}`.trim());
    }
    const type = response.headers.get('Content-Type') || '';
    if (/^text\/html/i.test(type)) {
      response.body?.cancel().catch(() => {});
      throw new WorkerError('E_NOT_GGUF', `${url} is an HTML page (Content-Type ${type}), not a GGUF model`);
    }
    const encoded = response.headers.get('Content-Encoding');
    const length = response.headers.get('Content-Length');
    const size = length !== null && (!encoded || encoded === 'identity') ? Number(length) : null;
    return { response, size: Number.isFinite(size) ? size : null };
  }

  /** Keeps a complete file in the Cache API, copied out of wasm memory 1 MiB at a time: true when it was kept. */
  async function storeInCache(cache, url, part, quiet = false) {
    let offset = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (offset >= part.size) { controller.close(); return; }
        const n = Math.min(CACHE_WRITE_CHUNK, part.size - offset);
        controller.enqueue(M.HEAPU8.slice(part.ptr + offset, part.ptr + offset + n));
        offset += n;
      },
    }, { highWaterMark: 0 });
    const headers = { 'Content-Type': 'application/octet-stream', 'X-Wick-Bytes': String(part.size), 'X-Wick-Date': new Date().toISOString() };
    try {
      await cache.put(url, new Response(body, { headers }));
      return true;
    } catch (e) {
      await cache.delete(url).catch(() => {});
      if (!quiet) console.warn(`wick: could not keep ${url} for offline use: ${e.message}`);
      return false;
    }
  }

  // ---- downloads kept as they arrive, so that the next load of the URL resumes them ----
  //
  // In the Cache API, in a cache of their own (PARTIAL_CACHE: listing the whole files never sees
  // them; Wick.cache.clear and delete remove them too):
  //   <url>                            the record: headers X-Wick-Total (the file's size),
  //                                    X-Wick-Validator (ETag or Last-Modified), X-Wick-Stored
  //                                    (bytes from 0 that are kept), X-Wick-Date; an empty body
  //   <PIECE_URL>?at=<offset>&url=<url, encoded>
  //                                    the file's bytes from offset on, header X-Wick-Validator
  // Pieces are PIECE_BYTES long; the last one kept when a load stops is shorter. A piece is
  // written from wasm memory once its bytes have all arrived (one copy, at most
  // PIECE_WRITES_AHEAD of them waiting), and the record after it: the record never counts a byte
  // that is not stored, and a reload at any moment loses at most the piece being filled.
  const PARTIAL_CACHE = 'wick-partial-v1';
  const PIECE_URL = 'https://wick.invalid/piece';
  const PIECE_BYTES = 8 << 20;
  const PIECE_WRITES_AHEAD = 2;
  // errors after which the kept bytes are useless: the file is not a model this engine takes, or it changed
  const DROP_KEPT_AFTER = new Set(['E_NOT_GGUF', 'E_UNSUPPORTED', 'E_START_OVER']);

  const pieceKey = (url, at) => `${PIECE_URL}?at=${at}&url=${encodeURIComponent(url)}`;

  class PartialDownload {
    constructor(cache, url) {
      this.cache = cache;
      this.url = url;
      this.total = 0;
      this.validator = null;
      this.stored = 0;    // bytes from 0 that the store holds
      this.queued = 0;    // bytes from 0 copied out for writing
      this.writing = Promise.resolve();
      this.waiting = 0;   // pieces copied out and not yet written
      this.off = true;    // nothing is written (no version to check against, or the store failed)
    }

    static async open(url) {
      if (typeof caches === 'undefined') return null;
      try { return new PartialDownload(await caches.open(PARTIAL_CACHE), url); } catch { return null; }
    }

    /** Reads the record of an earlier download of the URL: true when there is one to resume. */
    async load() {
      const r = await this.cache.match(this.url).catch(() => null);
      if (!r) return false;
      const total = Number(r.headers.get('X-Wick-Total')), stored = Number(r.headers.get('X-Wick-Stored'));
      const validator = r.headers.get('X-Wick-Validator');
      if (!(total > 0) || !(stored > 0) || stored > total || !validator) { await this.drop(); return false; }
      Object.assign(this, { total, stored, validator, off: false });
      return true;
    }

    /** Starts keeping a download from byte 0. */
    begin(validator, total) {
      Object.assign(this, { validator, total, stored: 0, queued: 0, off: false });
      return this;
    }

    /**
     * Copies the kept pieces into wasm memory at ptr, in order, up to the first one missing or
     * of another version; onBytes(n) after each (it may throw to stop). Returns the bytes read.
     */
    async readInto(ptr, onBytes) {
      let at = 0;
      while (at < this.stored) {
        const r = await this.cache.match(pieceKey(this.url, at)).catch(() => null);
        if (!r || r.headers.get('X-Wick-Validator') !== this.validator) break;
        const bytes = new Uint8Array(await r.arrayBuffer());
        if (!bytes.length || at + bytes.length > this.total) break;
        M.HEAPU8.set(bytes, ptr + at);
        at += bytes.length;
        onBytes(at);
      }
      this.stored = this.queued = at;
      return at;
    }

    /** Bytes [0, loaded) are in wasm memory at ptr: each whole piece among them is written. */
    async arrived(ptr, loaded) {
      while (!this.off && loaded - this.queued >= PIECE_BYTES) {
        this.write(ptr, this.queued + PIECE_BYTES);
        if (this.waiting > PIECE_WRITES_AHEAD) await this.writing;
      }
    }

    /** The load stops at `loaded`: the bytes not yet written are kept too, as a shorter piece. */
    async keepUpTo(ptr, loaded) {
      if (!this.off && loaded > this.queued) this.write(ptr, loaded);
      await this.writing;
    }

    /** Writes bytes [queued, end) as one piece: copied now (the caller may free the memory next), stored in turn. */
    write(ptr, end) {
      const at = this.queued, validator = this.validator, total = this.total;
      const bytes = M.HEAPU8.slice(ptr + at, ptr + end);
      this.queued = end;
      this.waiting++;
      this.writing = this.writing.then(async () => {
        try {
          if (this.off) return;
          await this.cache.put(pieceKey(this.url, at), new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream', 'X-Wick-Validator': validator } }));
          this.stored = end;
          await this.cache.put(this.url, new Response('', { headers: {
            'X-Wick-Total': String(total), 'X-Wick-Validator': validator, 'X-Wick-Stored': String(end), 'X-Wick-Date': new Date().toISOString(),
          } }));
        } catch (e) {
          this.off = true;
          console.warn(`wick: could not keep the bytes of ${this.url} as they came (a reload will download it from the start): ${e.message}`);
        } finally {
          this.waiting--;
        }
      });
    }

    /** The file came in another version (validator; null: none, so nothing more is kept): the kept bytes go. */
    async restart(validator) {
      await this.drop();
      if (validator) this.begin(validator, this.total);
    }

    /** Forgets the record and every piece of this URL (after the writes under way). */
    async drop() {
      this.off = true;
      await this.writing;
      try {
        await this.cache.delete(this.url);
        for (const key of await this.cache.keys(PIECE_URL, { ignoreSearch: true }))
          if (new URL(key.url).searchParams.get('url') === this.url) await this.cache.delete(key);
      } catch (e) {
        console.warn(`wick: could not delete the kept bytes of ${this.url}: ${e.message}`);
      }
      this.stored = this.queued = 0;
    }
  }

  // ---- bytes pushed by the host (ArrayBuffer sources) ----

  function feedOf(id) {
    let f = feeds.get(id);
    if (!f) feeds.set(id, (f = { chunks: [], wake: null, ended: false }));
    return f;
  }
  function feedPush({ id, bytes, end }) {
    const f = feedOf(id);
    if (bytes) f.chunks.push(new Uint8Array(bytes));
    if (end) f.ended = true;
    feedWake(id);
  }
  function feedWake(id) {
    const f = feeds.get(id);
    if (f && f.wake) { const w = f.wake; f.wake = null; w(); }
  }
  function feedStream(id) {
    const f = feedOf(id);
    return new ReadableStream({
      async pull(controller) {
        while (!f.chunks.length && !f.ended && !aborted.has(id)) await new Promise((r) => (f.wake = r));
        if (aborted.has(id)) controller.error(new WorkerError('E_ABORTED', 'the load was aborted'));
        else if (f.chunks.length) controller.enqueue(f.chunks.shift());
        else controller.close();
      },
    }, { highWaterMark: 0 });
  }

  // ---- tokens ----

  // the engine's softmax with temperature (the sampler's own code), for the seed chapter's example
  function softmax(logits, temperature) {
    const n = logits.length;
    return withScratch(4 * n, (inp) => withScratch(4 * n, (out) => {
      M.HEAPF32.set(Float32Array.from(logits), inp >>> 2);
      check(M._wick_softmax(inp, n, temperature, out));
      return Array.from(M.HEAPF32.subarray(out >>> 2, (out >>> 2) + n));
    }));
  }

  function tokenize(text, addBos = true, special = false) {
    requireModel();
    return withString(text, (ptr, len) => withScratch(4, (nOut) => {
      let cap = len + 8;
      for (;;) {
        const ids = withScratch(4 * cap, (buf) => {
          check(M._wick_tokenize(state.model, ptr, len, addBos ? 1 : 0, special ? 1 : 0, buf, cap, nOut));
          const n = i32At(nOut);
          return n <= cap ? Array.from(M.HEAP32.subarray(buf >>> 2, (buf >>> 2) + n)) : n;
        });
        if (Array.isArray(ids)) return ids;
        cap = ids;
      }
    }));
  }

  const pieceCache = new Map();
  const decoder = new TextDecoder('utf-8');
  function pieceBytes(token) {
    let bytes = pieceCache.get(token);
    if (bytes) return bytes;
    bytes = withScratch(4, (nOut) => {
      let cap = 64;
      for (;;) {
        const r = withScratch(cap, (buf) => {
          check(M._wick_token_to_piece(state.model, token, buf, cap, nOut));
          const n = i32At(nOut);
          return n <= cap ? bytesAt(buf, n) : n;
        });
        if (typeof r !== 'number') return r;
        cap = r;
      }
    });
    pieceCache.set(token, bytes);
    return bytes;
  }

  function detokenize(tokens) {
    requireModel();
    const pieces = tokens.map(pieceBytes);
    const all = new Uint8Array(pieces.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of pieces) { all.set(p, o); o += p.length; }
    return decoder.decode(all);
  }

  function requireModel() {
    if (!state.model) throw new WorkerError('E_UNLOADED', 'no model is loaded');
  }

  // ---- generation ----

  // A macrotask boundary between tokens, so that an 'abort' message can arrive.
  const yieldToEvents = isNode
    ? () => new Promise((r) => setImmediate(r))
    : (() => {
        const channel = new MessageChannel();
        const waiting = [];
        channel.port1.onmessage = () => waiting.shift()?.();
        return () => new Promise((r) => { waiting.push(r); channel.port2.postMessage(0); });
      })();

  async function generate({ id, tokens, settings, stops, probs: nProbs, grammar = '', bias = [] }) {
    requireModel();
    if (!state.gen) throw new WorkerError('E_UNSUPPORTED', 'this build of the engine has no generation API (wick_gen_*)');
    // a device lost between requests: this one runs on the CPU already
    if (state.gpu && state.gpu.forward.lostReason !== null) fallBackToCpu(new Error(`the GPU device was lost: ${state.gpu.forward.lostReason}`));
    const g = state.gen;
    // checkpoint: where a hybrid model also keeps its recurrent state (chat requests set it; 0 = none)
    for (const [name, value] of Object.entries({ checkpoint: 0, ...settings, n_probs: nProbs || 0 }))
      withString(name, (p) => check(M._wick_gen_set(g, p, value), `setting ${name}=${value}`));
    check(M._wick_gen_clear_stops(g));
    for (const s of stops) withString(s, (p) => check(M._wick_gen_add_stop(g, p), `stop string ${JSON.stringify(s)}`));
    check(M._wick_gen_clear_bias(g));
    for (const [token, b] of bias) check(M._wick_gen_set_bias(g, token, b), `logit bias of token ${token}`);
    withString(grammar, (p) => check(M._wick_gen_set_grammar(g, p, 0)));

    const t0 = performance.now();
    withScratch(4 * Math.max(1, tokens.length), (buf) => {
      M.HEAP32.set(tokens, buf >>> 2);
      check(M._wick_gen_start(g, buf, tokens.length));
    });
    await gpuStep();
    const t1 = performance.now();
    const promptEval = M._wick_gen_n_prompt_eval(g);
    let generated = 0, firstTokenAt = 0, finishReason = null, shiftedTotal = 0, reevaluatedTotal = 0;
    const scratch = malloc(8);
    try {
      for (;;) {
        if (aborted.has(id)) { finishReason = 'abort'; break; }
        check(M._wick_gen_next(g));
        await gpuStep();
        const token = M._wick_gen_token(g);
        const finish = M._wick_gen_finish(g);
        if (!firstTokenAt) firstTokenAt = performance.now();
        const textPtr = M._wick_gen_text(g, scratch) >>> 0;
        const textLen = i32At(scratch);
        const text = textPtr && textLen > 0 ? decoder.decode(bytesAt(textPtr, textLen)) : '';
        const chunk = { id, type: 'chunk', text, tokens: finish === 1 || token < 0 ? [] : [token] };
        if (finish !== 1 && token >= 0) generated++;
        const shifted = M._wick_gen_shifted(g);
        if (shifted) { chunk.shifted = shifted; shiftedTotal += shifted; }
        const reevaluated = M._wick_gen_reevaluated(g); // a hybrid's state cannot shift: the kept tokens ran again
        if (reevaluated) { chunk.reevaluated = reevaluated; reevaluatedTotal += reevaluated; }
        if (nProbs) chunk.probs = readProbs(g, scratch, token);
        if (chunk.text || chunk.tokens.length || chunk.shifted) post(chunk);
        if (finish) { finishReason = FINISH[finish] || 'stop'; break; }
        await yieldToEvents();
      }
    } finally {
      M._free(scratch);
    }
    const t2 = performance.now();
    const decodeMs = t2 - (firstTokenAt || t2);
    return {
      done: true,
      finishReason,
      timings: {
        promptTokens: tokens.length,
        promptEvalTokens: promptEval,
        cachedPromptTokens: tokens.length - promptEval,
        generatedTokens: generated,
        prefillMs: t1 - t0,
        decodeMs,
        timeToFirstTokenMs: firstTokenAt ? firstTokenAt - t0 : null,
        prefillTokensPerSecond: promptEval > 0 && t1 > t0 ? (promptEval * 1000) / (t1 - t0) : null,
        decodeTokensPerSecond: generated > 1 && decodeMs > 0 ? ((generated - 1) * 1000) / decodeMs : null,
        contextShiftedTokens: shiftedTotal,
        contextReevaluatedTokens: reevaluatedTotal,
        contextUsed: M._wick_n_past(state.ctx),
        contextSize: M._wick_n_ctx(state.ctx),
      },
    };
  }

  /** On the GPU path: the evaluations the generator just asked for (a GPU failure falls back). */
  async function gpuStep() {
    if (!state.gpu) return;
    try {
      await runGpuOps();
    } catch (e) {
      if (e.code === 'E_GPU') throw fallBackToCpu(e);
      throw e;
    }
  }

  function readProbs(g, scratch, drawn) {
    const n = M._wick_gen_probs(g, scratch, scratch + 4);
    const ids = u32At(scratch), ps = u32At(scratch + 4);
    const out = [];
    for (let k = 0; k < n; k++) {
      const token = M.HEAP32[(ids >>> 2) + k];
      out.push({ token, text: decoder.decode(pieceBytes(token)), p: M.HEAPF32[(ps >>> 2) + k], drawn: token === drawn });
    }
    return out;
  }

  // ---- start ----

  async function runScript(url) {
    const { runInThisContext } = await import('node:vm');
    const { fileURLToPath } = await import('node:url');
    const fs = await import('node:fs');
    const file = fileURLToPath(url);
    runInThisContext(fs.readFileSync(file, 'utf8'), { filename: file });
  }

  if (isNode) {
    import('node:worker_threads').then(({ parentPort }) => {
      post = (m, t) => parentPort.postMessage(m, t);
      parentPort.on('message', (msg) => {
        if (msg.type === 'init' && !globalThis.WickGguf) {
          // the header reader, run as the classic script it is (as importScripts does on a page).
          // Not import(url): a dynamic import of a variable makes Vite's dev server add an import
          // statement to this file, which a classic worker cannot run.
          queue = queue.then(() => runScript(msg.ggufUrl)).catch((e) => console.error(`wick: ${msg.ggufUrl}: ${e.message}`));
        }
        onMessage(msg);
      });
    });
  } else {
    post = (m, t) => self.postMessage(m, t);
    self.onmessage = (e) => {
      const msg = e.data;
      // the header reader: where the host says (a bundler may have renamed it), else beside this script
      if (msg.type === 'init' && !self.WickGguf) importScripts(msg.ggufUrl || new URL('gguf-header.js', self.location.href).href);
      onMessage(msg);
    };
  }
})();
