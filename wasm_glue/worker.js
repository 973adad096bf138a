/* wasm_glue/worker.js — the engine's own thread: it loads one of the two wasm builds, has the
 * model file streamed into wasm memory (download.js: from the network, the Cache API, a Blob or
 * chunks sent by the host, with resumed downloads and the copy kept for offline use), hands it to
 * the engine, and runs generation one token at a time, posting each piece of text as it is produced.
 *
 * A classic script: a page starts it with `new Worker(url)` (importScripts loads the Emscripten
 * script), Node starts it as a worker_threads Worker (it is then an ES module; the Emscripten
 * script is loaded with createRequire). Both speak the same messages, made by wick.mjs:
 *
 *   host → worker  {id, type: 'init'|'load'|'generate'|'tokenize'|'detokenize'|'embed'|'rerank'|'unload', ...}
 *                  {id, type: 'abort'}              (stops request id: a load or a generation)
 *                  {type: 'gpu-lose'}               (destroys the GPU device: tests of the fallback)
 *                  {id, type: 'data', bytes|end}    (the bytes of a load from an ArrayBuffer)
 *   worker → host  {id, type: 'result', value} | {id, type: 'error', code, message}
 *                  {id, type: 'progress', loaded, total, phase, progress, cached, resumed} (download.js)
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
 * request (a lost device, an out-of-memory, a NaN or an infinity in a logits row) makes the
 * worker fall back to the CPU: the request ends with E_GPU, and the next one runs on a fresh CPU
 * context. Under device 'auto' the GPU path is first checked against the CPU, for the same logits
 * and more speed (gpu/verify.mjs gpuVerdict), unless the host sent a verdict
 * kept for this adapter and model. */
'use strict';
(function () {
  const isNode = typeof importScripts !== 'function';

  let post = null;          // (message, transfer?) → void
  let M = null;             // the Emscripten module
  let buildInfo = null;     // {build, threads}
  let loader = null;        // download.js's reader of model bytes, made at init
  const state = { model: 0, ctx: 0, gen: 0, buffers: [], size: 0, meta: null, gpu: null, device: null, ctxOptions: null, warmUpMs: 0,
    vision: 0, visionBuffer: null, visionInfo: null, imageSlots: new Map(), imagePixels: new Map() };
  // the warm-up evaluation after a load (warmUp): a batch of this many tokens, then single steps
  const WARM_TOKENS = 16, WARM_STEPS = 2;
  let gpuUrl = null;        // gpu/backend.mjs, as the host names it
  const aborted = new Set();
  let queue = Promise.resolve();

  class WorkerError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  // ---- the message loop ----

  function onMessage(msg) {
    if (msg.type === 'abort') { aborted.add(msg.id); loader?.feedWake(msg.id); return; }
    if (msg.type === 'data') { loader?.feedPush(msg); return; }
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
      loader?.feedEnd(id);
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
    softmax: (m) => softmax(m.logits, m.temperature), embed, rerank,
    unload: () => { unloadModel(); return true; },
    saveState, loadState, addPrefix, clearPrefixes: () => { prefixes.length = 0; return true; }, savePrefix, image,
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
    // the engine's reads of the rows of a table kept outside wasm memory (src/engine_library.js)
    M.wickReadRows = (part, offset, dst, n) => !!state.buffers[part]?.image.readInto(offset, dst, n);
    buildInfo = { build, threads };
    const node = isNode ? { fs: await import('node:fs'), Readable: (await import('node:stream')).Readable } : null;
    loader = WickDownload.createLoader({ M, post, aborted, threads, summarize, WorkerError, node });
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
    throw new WorkerError(WickConstants.STATUS_CODES[status] || 'E_INTERNAL', detail ? (context ? `${context}: ${detail}` : detail) : context || `status ${status}`);
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
    for (const b of state.buffers) b.image.free();
    if (state.vision) M._wick_vision_free(state.vision);
    state.visionBuffer?.image.free();
    Object.assign(state, { vision: 0, visionBuffer: null, visionInfo: null });
    state.imageSlots.clear();
    state.imagePixels.clear();
    dropGpu();
    Object.assign(state, { model: 0, ctx: 0, gen: 0, buffers: [], size: 0, meta: null, gpu: null, device: null, ctxOptions: null, warmUpMs: 0,
      source: null, weightsOutside: false, maxHeapBytes: 0, headerDigest: null });
    pieceCache.clear();
    prefixes.length = 0; // states of this model's file
    fromState = 0;
  }


  async function load(msg) {
    const { id, source, contextSize, kvType, kvTypeV } = msg;
    if (!M) throw new WorkerError('E_INTERNAL', 'the worker was not initialised');
    unloadModel();
    if (source.items.length > 1 && typeof M._wick_model_load_gguf_parts !== 'function')
      throw new WorkerError('E_UNSUPPORTED', `a model split into ${source.items.length} files needs wick_model_load_gguf_parts, which this build of the engine does not export`);
    // the GPU before any byte is read: with a usable adapter the weight matrices go from the
    // download (or the kept copy) straight to it, and only the rest of the file into wasm memory
    const probe = msg.device && msg.device !== 'cpu' ? await probeGpu(msg) : null;
    const parts = [];
    try {
      const oneCopy = probe?.adapter && msg.weightsOutside !== false && typeof M._wick_model_load_gguf_external === 'function';
      // under 'auto' the GPU check runs the model on the CPU as well, so its weights come into wasm
      // memory, unless a verdict kept for this adapter and this file's header chose the GPU already
      const mustCheck = msg.device === 'auto' && msg.gpuVerify !== 'never';
      if (probe?.adapter && mustCheck) probe.shaders = probe.gpu.verify.digest(Object.values(await probe.gpu.shaderSources()));
      const accepts = (header, size, weights) => {
        state.headerDigest = probe.gpu.verify.headerDigest(header, size);
        if (!oneCopy) return false;
        if (mustCheck && !(msg.keptByHeader = probe.gpu.verify.keptChoice({ adapter: probe.description, build: buildInfo.build, threads: buildInfo.threads, shaders: probe.shaders, msg, digest: state.headerDigest }))) return false;
        return gpuAccepts(probe, header, size, weights, msg);
      };
      const { meta, progress } = await loader.readParts(id, source, contextSize, { k: kvType, v: kvTypeV }, parts, msg.tablesOutside, {
        gpu: probe?.adapter ? { accepts } : null,
        gpuReason: probe ? probe.reason || null : "the load asked for device 'cpu'",
        maxHeapBytes: msg.maxHeapBytes,
      });
      state.meta = meta || headerOf(parts[0]);
      const size = parts.reduce((a, p) => a + p.size, 0);
      post({ id, type: 'progress', phase: 'load', loaded: 0, total: size, progress: progress.load(0) });

      state.model = parseModel(parts);
      state.buffers = parts.splice(0); // the model's now: freed by unloadModel (or replaced by reloadWhole)
      state.size = size;
      Object.assign(state, { source, tablesOutside: msg.tablesOutside, maxHeapBytes: msg.maxHeapBytes || 0, weightsOutside: weightsOutside(state.buffers) });
      state.ctxOptions = { contextSize, kvType, kvTypeV };
      const gpu = probe?.adapter ? await openGpu(msg, probe) : probe;
      if (gpu?.forward) {
        state.gpu = gpu;
        gpu.topK = msg.gpuTopK !== false; // the top-k readback (runGpuOps)
        state.ctx = gpu.ctx;
        state.device = { type: 'gpu', adapter: gpu.description, software: gpu.software, converted: gpu.forward.converted, decodeKernel: gpu.forward.decodeKernel, ...(gpu.verify ? { verify: gpu.verify } : {}) };
        withScratch(4, (out) => { check(M._wick_gen_new(state.ctx, out)); state.gen = u32At(out); });
      } else {
        // the GPU path refused the model after its weights were left for it: the CPU reads them again
        if (state.weightsOutside) await reloadWhole(id, `the GPU path is not taken (${gpu?.reason})`);
        cpuContext();
        state.device = { type: 'cpu', reason: gpu?.reason || (msg.device === 'cpu' ? 'asked for' : 'no GPU path in this engine'), ...(gpu?.verify ? { verify: gpu.verify } : {}) };
        state.warmUpMs = msg.warmUp === false ? 0 : warmUp();
      }
      if (msg.mmproj) await loadVision(id, msg.mmproj);
      if (state.maxHeapBytes && M.HEAPU8.length > state.maxHeapBytes)
        throw new WorkerError('E_TOO_LARGE', `wasm memory grew to ${M.HEAPU8.length} bytes, above the load's maxHeapBytes ${state.maxHeapBytes}`);
      post({ id, type: 'progress', phase: 'load', loaded: size, total: size, progress: progress.load(1) });
      return describe(state.buffers);
    } catch (e) {
      if (state.model === 0) for (const p of parts) if (!state.buffers.includes(p)) p.image.free();
      if (!state.gpu) try { probe?.device?.destroy(); } catch { /* never opened */ }
      unloadModel();
      throw e;
    }
  }

  // ---- images (src/images.c): the mmproj file, a picture's ids in a prompt, its encoding ----

  /** The mmproj file beside the model: read as the model is (download.js: cache, progress), checked as it arrives. */
  async function loadVision(id, source) {
    if (state.gpu) throw new WorkerError('E_UNSUPPORTED', 'images run on the CPU: load the model with device \'cpu\' to use an mmproj');
    if (typeof M._wick_vision_load !== 'function') throw new WorkerError('E_UNSUPPORTED', 'this build of the engine has no image encoders (wick_vision_*)');
    const parts = [];
    await loader.readParts(id, source, 0, null, parts, false, { mmproj: true });
    try {
      state.vision = withScratch(4, (out) => { check(M._wick_vision_load(parts[0].ptr, parts[0].size, out), 'mmproj'); return u32At(out); });
    } catch (e) {
      parts[0].image.free();
      throw e;
    }
    state.visionBuffer = parts[0];
    const info = JSON.parse(withScratch(1024, (buf) => withScratch(4, (need) => { check(M._wick_vision_info_json(state.vision, buf, 1024, need)); return M.UTF8ToString(buf); })));
    if (info.n_embd !== modelInfo().embedding_length)
      throw new WorkerError('E_INVALID_ARG', `the mmproj feeds embeddings of ${info.n_embd} but the model's are ${modelInfo().embedding_length}: it is not this model's projector`);
    state.visionInfo = { projector: info.projector, imageSize: info.image_size, positionsPerImage: info.positions, mmprojBytes: parts[0].size, dim: info.n_embd };
  }

  /**
   * A picture ({key, width, height, rgb}) for the next prompts: its slot (the same picture keeps its
   * slot, so its cached positions are reused) and its ids in a prompt (wick_vision_layout). The
   * pixels are kept until the slot is encoded (generate, when its positions are not cached).
   */
  function image({ key, width, height, rgb }) {
    requireModel();
    if (!state.vision) throw new WorkerError('E_NO_VISION', 'this model was loaded without an mmproj: it cannot see images');
    let slot = state.imageSlots.get(key);
    if (slot === undefined) {
      slot = state.imageSlots.size;
      if (slot >= 32768) throw new WorkerError('E_TOO_LARGE', 'more than 32768 different pictures since the load');
      state.imageSlots.set(key, slot);
    }
    if (!state.imagePixels.has(slot) && !M._wick_ctx_has_image(state.ctx, slot)) state.imagePixels.set(slot, { width, height, rgb: new Uint8Array(rgb) });
    return withScratch(8, (out) => {
      check(M._wick_vision_layout(state.vision, state.model, width, height, slot, 0, 0, out, out + 4), 'image');
      const n = i32At(out);
      return withScratch(4 * n, (buf) => {
        check(M._wick_vision_layout(state.vision, state.model, width, height, slot, buf, n, out, out + 4), 'image');
        const tokens = Array.from(M.HEAP32.subarray(buf >>> 2, (buf >>> 2) + n));
        return { slot, tokens, positions: i32At(out + 4), width, height };
      });
    });
  }

  /**
   * Encodes the pictures of a prompt whose positions are not cached (from the first id the
   * generator cannot reuse on): [{slot, encoded, encodeMs}] per slot in the prompt, in order.
   */
  function encodeImages(tokens, buf) {
    const reused = M._wick_gen_reusable(state.gen, buf, tokens.length);
    const seen = new Map();
    tokens.forEach((t, i) => {
      if (t >= 0) return;
      const slot = (-1 - t) >>> 16;
      if (!seen.has(slot)) seen.set(slot, { slot, first: i, encoded: false, encodeMs: 0 });
      if (i >= reused) seen.get(slot).needed = true;
    });
    for (const im of seen.values()) {
      if (!im.needed || M._wick_ctx_has_image(state.ctx, im.slot)) continue;
      const px = state.imagePixels.get(im.slot);
      if (!px) throw new WorkerError('E_INVALID_ARG', `image slot ${im.slot} has no picture: send it again`);
      const t0 = performance.now();
      withScratch(px.rgb.length, (p) => {
        M.HEAPU8.set(px.rgb, p);
        check(M._wick_vision_encode(state.vision, state.ctx, p, px.width, px.height, im.slot), 'image');
      });
      Object.assign(im, { encoded: true, encodeMs: performance.now() - t0 });
      state.imagePixels.delete(im.slot);
    }
    return [...seen.values()].map(({ slot, encoded, encodeMs }) => ({ slot, encoded, encodeMs }));
  }

  /** Whether the parts left weight matrices out of wasm memory (not only row tables): the model is then an external context's only. */
  function weightsOutside(parts) {
    return parts.some((p) => p.image.holes.some((h) => !WickGguf.ROW_TABLES.includes(h.name)));
  }

  /** The engine's model of the parts read: whole, split, with row tables outside, or (weights outside) for an external context only. */
  function parseModel(parts) {
    return withScratch(4, (out) => {
      const holes = parts.flatMap((p, k) => p.image.holes.map((h) => [k, h.offset, h.bytes]));
      const n = parts.length;
      if (holes.length) {
        // the row tables kept outside: the engine reads their rows through Module.wickReadRows;
        // weight matrices kept outside: never read by the engine (they go to the GPU)
        withScratch(8 * n + 24 * holes.length, (arr) => {
          parts.forEach((p, k) => { M.HEAPU32[(arr >>> 2) + k] = p.ptr; M.HEAPU32[(arr >>> 2) + n + k] = p.heapBytes; });
          const at = (arr + 8 * n) >>> 2; // 8-aligned: malloc's alignment, 8 n bytes before
          holes.flat().forEach((v, k) => { M.HEAPU32[at + 2 * k] = v % 2 ** 32; M.HEAPU32[at + 2 * k + 1] = Math.floor(v / 2 ** 32); });
          if (weightsOutside(parts)) check(M._wick_model_load_gguf_external(arr, arr + 4 * n, n, arr + 8 * n, holes.length, out));
          else check(M._wick_model_load_gguf_sparse(arr, arr + 4 * n, n, arr + 8 * n, holes.length, 0, 0, out));
        });
      } else if (n === 1) {
        check(M._wick_model_load_gguf(parts[0].ptr, parts[0].size, out));
      } else {
        withScratch(8 * n, (arr) => {
          parts.forEach((p, k) => { M.HEAPU32[(arr >>> 2) + k] = p.ptr; M.HEAPU32[(arr >>> 2) + n + k] = p.size; });
          check(M._wick_model_load_gguf_parts(arr, arr + 4 * n, n, out));
        });
      }
      return u32At(out);
    });
  }

  /**
   * The model read again whole into wasm memory, from what is kept of it (the Cache API's copy,
   * the file, the Blob; never the network), for a CPU context: its weights had gone to the GPU
   * only. Without a kept copy (cache: false, no Cache API, an ArrayBuffer source) the model is
   * unloaded and the error says to load it again. why: what happened to the GPU path.
   */
  async function reloadWhole(id, why) {
    const parts = [];
    try {
      await loader.readParts(id, state.source, state.ctxOptions.contextSize, { k: state.ctxOptions.kvType, v: state.ctxOptions.kvTypeV }, parts, state.tablesOutside,
        { keptOnly: true, maxHeapBytes: state.maxHeapBytes });
      const model = parseModel(parts);
      M._wick_model_free(state.model);
      for (const b of state.buffers) b.image.free();
      Object.assign(state, { model, buffers: parts, weightsOutside: false });
    } catch (e) {
      for (const p of parts) p.image.free();
      unloadModel();
      throw new WorkerError(e.code === 'E_ABORTED' ? 'E_ABORTED' : 'E_GPU', `${why}; the weights were held on the GPU only and cannot be read again for the CPU (${e.message}): load the model again`);
    }
  }


  /** The CPU context and generator (a load on the CPU path, or the fallback from the GPU). */
  function cpuContext() {
    state.ctx = newCpuCtx(state.ctxOptions.contextSize);
    fromState = 0;
    if (typeof M._wick_gen_new === 'function') withScratch(4, (out) => {
      check(M._wick_gen_new(state.ctx, out));
      state.gen = u32At(out);
    });
  }

  /** A CPU context of contextSize positions (0: the model's) with the load's KV types. */
  function newCpuCtx(contextSize) {
    const { kvType, kvTypeV } = state.ctxOptions;
    return withScratch(24, (params) => withScratch(4, (out) => {
      M._wick_ctx_default_params(params);
      const p32 = params >>> 2;
      if (contextSize) M.HEAP32[p32] = contextSize;
      M.HEAP32[p32 + 2] = buildInfo.threads;
      // wick_ctx_params' kv_type, kv_type_k, kv_type_v (src/wick.h: 0 there is "as kv_type")
      const code = ['f32', 'f16', 'q8_0', 'q4_0'], k = code.indexOf(kvType || 'f16'), v = code.indexOf(kvTypeV || kvType || 'f16');
      const both = k && v && k;
      M.HEAP32[p32 + 3] = both;
      M.HEAP32[p32 + 4] = k === both ? 0 : k;
      M.HEAP32[p32 + 5] = v === both ? 0 : v;
      check(M._wick_ctx_new(state.model, params, out));
      return u32At(out);
    }));
  }

  /**
   * Runs the kernels of this model once before `load` resolves (issue 33): a batch of WARM_TOKENS
   * tokens and WARM_STEPS single-token steps through the CPU context, then the cache cut back to
   * empty. A browser compiles wasm first with a quick baseline compiler and recompiles a function
   * with its optimizing one only once it has run a while: without this the user's first prompt
   * ran its prefill in baseline code, about 30% slower than the second (Chromium, 134m Q4_0, 2
   * threads). These are the forward pass's own functions on this model's tensor types (batch and
   * one-token kernels, attention, norms), so they are the ones that get recompiled. Milliseconds
   * spent (0 for an encoder, whose embeddings take another path, or where it failed).
   */
  function warmUp() {
    if (M._wick_model_pooling(state.model) >= 0) return 0;
    const t0 = performance.now();
    const nVocab = Math.max(1, modelInfo().n_vocab || 1);
    const steps = [Array.from({ length: WARM_TOKENS }, (_, i) => (i * 7919 + 1) % nVocab), ...Array.from({ length: WARM_STEPS }, (_, i) => [(i * 104729 + 3) % nVocab])];
    try {
      for (const ids of steps) {
        const n = Math.min(ids.length, M._wick_n_ctx(state.ctx) - M._wick_n_past(state.ctx));
        if (n <= 0) break;
        const status = withScratch(4 * n, (p) => { M.HEAP32.set(ids.slice(0, n), p >>> 2); return M._wick_eval(state.ctx, p, n, 0); });
        if (status !== 0) break;
      }
    } finally {
      M._wick_kv_trim(state.ctx, 0);
    }
    return performance.now() - t0;
  }

  function dropGpu() {
    if (!state.gpu) return;
    try { state.gpu.forward?.destroy(); } catch { /* a lost device's buffers are gone already */ }
    try { state.gpu.forward?.device.destroy(); } catch { /* idem */ }
    state.gpu = null;
  }

  /** A refusal of the GPU path: under device 'gpu' an error (E_GPU, E_UNSUPPORTED for a model it does not run), under 'auto' {reason}. */
  function gpuRefusal(device) {
    return (reason, code = 'E_GPU') => {
      if (device === 'gpu') throw new WorkerError(code, `the GPU path is not available: ${reason}`);
      return { reason };
    };
  }

  /**
   * What the GPU path needs before a byte of the model is read: {gpu (the module), adapter,
   * device, description, software}, or {reason} why the CPU path is taken instead (device
   * 'auto'; with device 'gpu' an error).
   */
  async function probeGpu({ device, gpuAllowSoftware, kvType, kvTypeV }) {
    const refuse = gpuRefusal(device);
    // the GPU path's cache is F32 (gpu/backend.mjs)
    for (const t of [kvType, kvTypeV])
      if (t === 'q8_0' || t === 'q4_0') return refuse(`a ${t} KV cache runs on the CPU only`, 'E_UNSUPPORTED');
    if (typeof M._wick_ctx_new_external !== 'function') return refuse('this build of the engine has no external context (wick_ctx_new_external)');
    if (!gpuUrl) return refuse('the host named no GPU module');
    let gpu;
    try {
      gpu = await import(gpuUrl);
    } catch (e) {
      return refuse(`the GPU module did not load: ${e.message}`);
    }
    const found = await gpu.findAdapter();
    if (!found.adapter) return refuse(found.reason);
    if (found.software && !gpuAllowSoftware)
      return refuse(`the only WebGPU adapter is a software one (${found.description}), slower than the CPU path`);
    let gpuDevice;
    try {
      gpuDevice = await gpu.openDevice(found.adapter);
    } catch (e) {
      return refuse(`the adapter gave no device: ${e.message}`);
    }
    return { gpu, adapter: found.adapter, device: gpuDevice, description: found.description, software: found.software };
  }

  /**
   * From a model's header: whether its weight matrices may stay outside wasm memory for the GPU
   * (a family the GPU path runs, each weight row and one layer's KV cache within the device's
   * buffer limits, the estimated GPU memory within the device memory the browser reports). A
   * model it refuses loads whole, and openGpu says why it stays on the CPU.
   */
  function gpuAccepts(probe, header, size, weights, msg) {
    const md = header.metadata;
    if (probe.gpu.headerUnsupported?.(md) || Number.isFinite(md[`${md['general.architecture']}.pooling_type`])) return false;
    const limit = Math.min(probe.device.limits.maxStorageBufferBindingSize, probe.device.limits.maxBufferSize);
    const hp = WickGguf.hyperparameters(md);
    if (!hp) return false;
    const nCtx = msg.contextSize > 0 ? msg.contextSize : WickGguf.defaultContext(hp);
    if (nCtx * hp.kvHeads * Math.max(hp.keyLength, hp.valueLength) * 4 > limit) return false;
    if (weights.some((w) => w.bytes / Math.max(1, header.tensors.find((t) => t.offset === w.offset).dims[1]) > limit)) return false;
    // the device memory the browser reports (navigator.deviceMemory, GiB, rounded and capped): an upper bound
    const memory = globalThis.navigator?.deviceMemory;
    const fits = WickGguf.checkFits({ fileBytes: size, metadata: md, contextSize: msg.contextSize, weights, weightsOutside: true });
    if (memory > 0 && fits.gpuBytes > memory * 2 ** 30) {
      if (msg.device === 'gpu') throw new WorkerError('E_TOO_LARGE', `the GPU path would need about ${WickGguf.formatBytes(fits.gpuBytes)} (${fits.gpuBytes} bytes) of GPU memory, and this device reports ${memory} GiB`);
      return false;
    }
    return true;
  }

  /**
   * The GPU path for the loaded model, on the device probeGpu opened: {forward, ctx, description,
   * software}, or {reason} why the CPU path is taken instead (device 'auto'). With device 'gpu' a
   * reason is an E_GPU error (E_UNSUPPORTED for a family the GPU path does not run). Weights left
   * outside wasm memory are uploaded from the loader's JS pieces, which go as each is on the GPU
   * (but the token embeddings', whose rows each evaluation reads).
   */
  async function openGpu(msg, probe) {
    const { device, contextSize, gpuMaxBatch } = msg;
    const refuse = gpuRefusal(device);
    const fail = (reason, code) => {
      try { probe.device.destroy(); } catch { /* lost already */ }
      return refuse(reason, code);
    };
    // an encoder, or a decoder whose file names a pooling (its embeddings are the CPU context's)
    if (M._wick_model_pooling(state.model) >= 0) return fail('an encoder (an embedding model): the GPU path runs decoders only, and embeds nothing', 'E_UNSUPPORTED');
    const tensors = modelTensors();
    const unsupported = probe.gpu.GpuForward.unsupported(tensors);
    if (unsupported) return fail(unsupported, 'E_UNSUPPORTED');
    const image = (w) => state.buffers[w.part].image;
    const holeKey = (w) => `${w.part}:${image(w).holeAt(w.offset)}`;
    // the weights still to upload from each hole; the embeddings' hole is kept
    const pending = new Map();
    for (const w of [tensors.output, ...tensors.layers.flatMap((L) => Object.values(L).filter((v) => v && typeof v === 'object' && 'row_bytes' in v))]) {
      if (!w?.outside) continue;
      if (!pending.has(holeKey(w))) pending.set(holeKey(w), new Set());
      pending.get(holeKey(w)).add(`${w.offset}:${w.rows}`);
    }
    const keep = tensors.tok_embd?.outside ? holeKey(tensors.tok_embd) : null;
    let ctx = 0, forward = null;
    try {
      ctx = withScratch(4, (out) => {
        check(M._wick_ctx_new_external(state.model, contextSize || 0, out));
        return u32At(out);
      });
      forward = await probe.gpu.GpuForward.create(probe.device, {
        tensors,
        nCtx: M._wick_n_ctx(ctx),
        heap: () => M.HEAPU8,
        dequantize,
        bytesOf: (w, from, n) => (w.outside ? image(w).view(w.offset + from, n) : M.HEAPU8.subarray(w.ptr + from, w.ptr + from + n)),
        rowsOf: (w, r0, n) => {
          if (!w.outside) return dequantize(w.type, w.ptr + r0 * w.row_bytes, n * w.cols);
          // through a scratch of these rows only: the weights stay out of wasm memory
          return withScratch(n * w.row_bytes, (p) => {
            M.HEAPU8.set(image(w).view(w.offset + r0 * w.row_bytes, n * w.row_bytes), p);
            return dequantize(w.type, p, n * w.cols);
          });
        },
        onUploaded: (w) => {
          const left = w.outside && pending.get(holeKey(w));
          if (!left) return;
          left.delete(`${w.offset}:${w.rows}`);
          if (!left.size && holeKey(w) !== keep) image(w).release(image(w).holeAt(w.offset));
        },
        maxBatch: gpuMaxBatch || undefined, // backend.mjs: 256 tokens with the tiled product, else 32
        software: probe.software,
        decodeKernel: msg.gpuDecodeKernel || 'auto',
        testHooks: msg.gpuTestHooks || null,
      });
      if (device === 'auto' && msg.gpuVerify !== 'never') {
        // the weights left outside for the GPU only where a kept verdict for this adapter and this
        // file's header chose it (load): that verdict stands, the CPU could not run the check
        const kept = state.weightsOutside ? msg.keptByHeader : null;
        const verify = kept ? { ...kept.verdict, key: kept.key, reused: true, byHeader: true, checkMs: 0, checkedAt: kept.at }
          : await gpuVerdict(probe.gpu, forward, tensors, probe.description, msg);
        verify.header = state.headerDigest;
        if (!verify.chosen) {
          M._wick_ctx_free(ctx);
          try { forward.destroy(); } catch { /* nothing more to free */ }
          return { ...fail(verify.reason), verify };
        }
        return { forward, ctx, description: probe.description, software: probe.software, verify };
      }
      return { forward, ctx, description: probe.description, software: probe.software };
    } catch (e) {
      if (ctx) M._wick_ctx_free(ctx);
      try { forward?.destroy(); } catch { /* nothing to free */ }
      if (e.code === 'E_GPU' || e.code === 'E_UNSUPPORTED') return fail(e.message, e.code);
      try { probe.device.destroy(); } catch { /* idem */ }
      throw e;
    }
  }

  /**
   * Device 'auto': the verdict on the GPU path for this model on this adapter (gpu/verify.mjs
   * gpuVerdict runs the check, or reuses a verdict the host kept). The CPU side of the check is
   * a fresh CPU context of the same model, through the interface below.
   */
  function gpuVerdict(gpu, forward, tensors, adapter, msg) {
    const nVocab = tensors.config.n_vocab;
    const cpu = {
      tokenize: (text) => tokenize(text, true, false),
      open(nTokens) {
        const cctx = newCpuCtx(nTokens);
        // the CPU context may have rewritten the weights into its kernels' layout (the relaxed
        // builds' Q4_K/Q6_K, wick.h): the GPU reads its embedding rows from wasm memory by type
        forward.t.tok_embd = modelTensors().tok_embd;
        return {
          eval: (tokens, all) => withScratch(4 * tokens.length, (buf) => {
            M.HEAP32.set(tokens, buf >>> 2);
            const st = M._wick_eval(cctx, buf, tokens.length, all ? 1 : 0);
            if (st !== 0) throw new WorkerError(WickConstants.STATUS_CODES[st] || 'E_INTERNAL', `the GPU check's CPU run: ${M.UTF8ToString(M._wick_ctx_last_error(cctx))}`);
          }),
          row: (i) => { const at = M._wick_get_logits(cctx, i) >>> 2; return M.HEAPF32.slice(at, at + nVocab); },
          trim: () => check(M._wick_kv_trim(cctx, 0)),
          free: () => M._wick_ctx_free(cctx),
        };
      },
    };
    return gpu.verify.gpuVerdict({ gpu, forward, tensors, adapter, msg, build: buildInfo.build, threads: buildInfo.threads, cpu });
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

  /**
   * Carries out the external context's queued evaluations on the GPU and hands it the logits.
   * When the generator's next draw depends only on the k best logits of the row
   * (wick_gen_candidates: greedy, or top_k without penalties, logit bias or grammar) and the
   * load did not turn it off (gpuTopK: false), the GPU ranks the row and only those k pairs are
   * read back (wick_ctx_external_top_logits: the rest of the row is -Infinity, the draw the same).
   * Returns what was read: {values, ids (the top-k pairs' tokens; null for whole rows)}, or null.
   */
  async function runGpuOps() {
    const { forward, ctx, topK: topKAllowed } = state.gpu;
    const [ptr, n] = withScratch(4, (p) => { const n = M._wick_ctx_external_ops(ctx, p); return [u32At(p), n]; });
    const ops = M.HEAP32.slice(ptr >>> 2, (ptr >>> 2) + n);
    const topK = topKAllowed && state.gen && typeof M._wick_gen_candidates === 'function' ? M._wick_gen_candidates(state.gen) : 0;
    // ops: 2 trim (n), 3 snapshot (slot), else an evaluation (pos, count, all, the tokens)
    const width = (i) => (ops[i] === 2 || ops[i] === 3 ? 2 : 4 + ops[i + 2]);
    let lastEval = -1;
    for (let i = 0; i < ops.length; i += width(i)) if (ops[i] !== 2 && ops[i] !== 3) lastEval = i;
    let logits = null, rows = 0;
    for (let i = 0; i < ops.length; i += width(i)) {
      // trim (a hybrid's recurrent state zeroed or restored) and snapshot (WICK_OP_TRIM, _SNAPSHOT: src/wick.h)
      if (ops[i] === 2) { forward.trim(ops[i + 1]); continue; }
      if (ops[i] === 3) { forward.snapshot(ops[i + 1]); continue; }
      const pos = ops[i + 1], count = ops[i + 2], all = ops[i + 3] === 1;
      // only the last evaluation's logits are sampled from: an earlier one (a full context
      // evaluated again) reads back a single candidate
      logits = await forward.eval(Array.from(ops.subarray(i + 4, i + 4 + count)), pos, all, all ? 0 : i !== lastEval ? 1 : topK);
      rows = all ? count : 1;
    }
    if (!logits) return null;
    if (logits.ids) {
      const k = logits.ids.length;
      withScratch(8 * k, (buf) => {
        M.HEAP32.set(logits.ids, buf >>> 2);
        M.HEAPF32.set(logits.values, (buf >>> 2) + k);
        check(M._wick_ctx_external_top_logits(ctx, k, buf, buf + 4 * k));
      });
      return { values: logits.values, ids: logits.ids };
    }
    const dst = M._wick_ctx_external_logits(ctx, rows) >>> 0;
    if (!dst) throw new WorkerError('E_NOMEM', 'out of memory for the logits');
    M.HEAPF32.set(logits, dst >>> 2);
    return { values: logits, ids: null };
  }

  /**
   * After a GPU failure: the GPU path is dropped and the conversation goes on on the CPU; a
   * model whose weights were on the GPU only is read again whole from its kept copy first
   * (reloadWhole: without one the model is unloaded, and the error says to load it again).
   */
  async function fallBackToCpu(e, id = 0) {
    const reason = e.message || String(e);
    if (state.gen) M._wick_gen_free(state.gen);
    if (state.ctx) M._wick_ctx_free(state.ctx);
    state.gen = state.ctx = 0;
    dropGpu();
    if (state.weightsOutside) {
      try {
        await reloadWhole(id, `the GPU failed (${reason})`);
      } catch (r) {
        r.device = { type: 'cpu', reason: r.message };
        return r;
      }
    }
    cpuContext();
    state.device = { type: 'cpu', reason: `the GPU failed (${reason}): switched to the CPU` };
    const err = new WorkerError('E_GPU', `${reason}; the engine switched to the CPU, where the next request runs`);
    err.device = state.device;
    return err;
  }

  function headerOf(part) {
    return summarize(WickGguf.parseHeader(M.HEAPU8.subarray(part.ptr, part.ptr + part.heapBytes), { keepArrays: ['tokenizer.ggml.tokens'] }));
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

  /** The loaded model's wick_model_info_json, parsed. */
  function modelInfo() {
    return JSON.parse(withScratch(1 << 14, (buf) => withScratch(4, (needed) => {
      check(M._wick_model_info_json(state.model, buf, 1 << 14, needed));
      return M.UTF8ToString(buf);
    })));
  }

  function describe(parts) {
    return {
      model: modelInfo(),
      header: state.meta,
      fileBytes: state.size,
      outsideBytes: parts.reduce((a, p) => a + p.image.outsideBytes, 0),
      // of those, what JS still holds (the GPU path's token embeddings, row tables), and the GPU's buffers
      jsBytes: parts.reduce((a, p) => a + p.image.heldBytes(), 0),
      gpuBytes: state.gpu ? state.gpu.forward.bufferBytes() : 0,
      files: parts.length,
      cached: parts.every((p) => p.cached),
      contextSize: M._wick_n_ctx(state.ctx),
      kvBytes: state.gpu ? state.gpu.forward.kvBytes : M._wick_kv_bytes(state.ctx) >>> 0,
      device: state.device,
      stateBytes: M._wick_state_bytes(state.ctx) >>> 0,
      build: buildInfo.build,
      threads: buildInfo.threads,
      heapBytes: M.HEAPU8.length,
      warmUpMs: state.warmUpMs || 0,
      vision: state.visionInfo,
    };
  }

  /** Reads one file into its own allocation: {ptr, size, cached}. */

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

  // ---- embeddings ----

  /** wick_embed over every sequence at once: a Float32Array per sequence (pooling none: per token). */
  function embed({ sequences, pooling, normalize, dim }) {
    requireModel();
    const lens = sequences.map((q) => q.length), total = lens.reduce((a, n) => a + n, 0);
    const perToken = pooling === 0 || (pooling < 0 && M._wick_model_pooling(state.model) === 0);
    const rows = perToken ? total : sequences.length;
    return withScratch(4 * total, (ids) => withScratch(4 * lens.length, (lp) => withScratch(4 * rows * dim, (out) => {
      M.HEAP32.set(sequences.flat(), ids >>> 2);
      M.HEAP32.set(lens, lp >>> 2);
      check(M._wick_embed(state.ctx, ids, lp, sequences.length, pooling, normalize ? 1 : 0, out));
      const at = (r) => M.HEAPF32.slice((out >>> 2) + r * dim, (out >>> 2) + (r + 1) * dim);
      if (!perToken) return sequences.map((_, s) => at(s));
      let r = 0;
      return lens.map((n) => Array.from({ length: n }, () => at(r++)));
    })));
  }

  /** wick_rerank over every (query, document) pair, paired by wick_rerank_tokens as llama.cpp's server pairs them: {scores, tokens}. */
  function rerank({ query, documents }) {
    requireModel();
    const sequences = documents.map((doc) => withString(query, (qp, ql) => withString(doc, (dp, dl) => withScratch(4, (nOut) => {
      let cap = ql + dl + 64;
      for (;;) {
        const ids = withScratch(4 * cap, (buf) => {
          check(M._wick_rerank_tokens(state.model, qp, ql, dp, dl, buf, cap, nOut));
          const n = i32At(nOut);
          return n <= cap ? Array.from(M.HEAP32.subarray(buf >>> 2, (buf >>> 2) + n)) : n;
        });
        if (Array.isArray(ids)) return ids;
        cap = ids;
      }
    }))));
    const lens = sequences.map((q) => q.length), total = lens.reduce((a, n) => a + n, 0);
    return withScratch(4 * total, (ids) => withScratch(4 * lens.length, (lp) => withScratch(4 * lens.length, (out) => {
      M.HEAP32.set(sequences.flat(), ids >>> 2);
      M.HEAP32.set(lens, lp >>> 2);
      check(M._wick_rerank(state.ctx, ids, lp, sequences.length, out));
      return { scores: M.HEAPF32.slice(out >>> 2, (out >>> 2) + lens.length), tokens: total };
    })));
  }

  function requireModel() {
    if (!state.model) throw new WorkerError('E_UNLOADED', 'no model is loaded');
  }

  // ---- saved sessions (src/state.c) and shared prefixes ----

  // how many of the cache's first positions came from a loaded state (timings.promptFromState),
  // and the states a prompt that starts with their tokens goes on from (addPrefix): {tokens, blob}
  let fromState = 0;
  const prefixes = [];

  function requireCpuGenerator() {
    requireModel();
    if (state.gpu) throw new WorkerError('E_UNSUPPORTED', 'saved states: the GPU path keeps its cache on the device; load the engine with device: "cpu" to save or load one');
    if (!state.gen) throw new WorkerError('E_UNSUPPORTED', 'this model has no generation context (an encoder) and so no state to save');
  }

  function saveState() {
    requireCpuGenerator();
    const need = withScratch(4, (n) => { check(M._wick_gen_state_save(state.gen, 0, 0, n), 'saving the state'); return u32At(n); });
    const buf = malloc(need);
    try {
      withScratch(4, (n) => check(M._wick_gen_state_save(state.gen, buf, need, n), 'saving the state'));
      return bytesAt(buf, need);
    } finally {
      M._free(buf);
    }
  }

  /** Replaces the context's state by the blob's (checked by the engine first: a refusal leaves it as it was). */
  function loadBlob(blob) {
    if (!(blob instanceof Uint8Array)) throw new WorkerError('E_INVALID_ARG', 'a saved state is a Uint8Array');
    const buf = malloc(blob.length);
    try {
      M.HEAPU8.set(blob, buf);
      check(M._wick_gen_state_load(state.gen, buf, blob.length), 'loading the state');
    } finally {
      M._free(buf);
    }
    return M._wick_n_past(state.ctx);
  }

  function loadState({ blob }) {
    requireCpuGenerator();
    fromState = loadBlob(blob);
    return { tokens: fromState };
  }

  /** The token ids a blob holds (its header: state.c), once the engine has accepted it. */
  function blobTokens(blob) {
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    const nLayers = view.getUint32(32, true), nPast = view.getUint32(40, true), at = 80 + 12 * nLayers;
    return Int32Array.from({ length: nPast }, (_, i) => view.getInt32(at + 4 * i, true));
  }

  /** Registers a shared prefix: checked by loading it (the context's own state is put back after). */
  function addPrefix({ blob }) {
    requireCpuGenerator();
    const own = saveState();
    try {
      loadBlob(blob);
    } finally {
      loadBlob(own);
    }
    const tokens = blobTokens(blob);
    if (tokens.length < 1) throw new WorkerError('E_INVALID_ARG', 'a shared prefix holds no tokens');
    prefixes.push({ tokens, blob: blob.slice() });
    return { tokens: tokens.length };
  }

  /** The state after evaluating these tokens (a prompt prefix to ship or to share). */
  function savePrefix({ tokens }) {
    requireCpuGenerator();
    withString('checkpoint', (p) => check(M._wick_gen_set(state.gen, p, 0)));
    withScratch(4 * Math.max(1, tokens.length), (buf) => {
      M.HEAP32.set(tokens, buf >>> 2);
      check(M._wick_gen_start(state.gen, buf, tokens.length), 'evaluating the prefix');
    });
    const blob = saveState();
    return { blob, tokens: tokens.length, evaluated: M._wick_gen_n_prompt_eval(state.gen) };
  }

  /** Before a prompt: the longest shared prefix it starts with, loaded when it saves more than the cache does. */
  function startFromPrefix(tokens, buf) {
    if (!prefixes.length || state.gpu) return;
    const reusable = M._wick_gen_reusable(state.gen, buf, tokens.length);
    let best = null;
    for (const p of prefixes)
      if (p.tokens.length > reusable && p.tokens.length < tokens.length && (!best || p.tokens.length > best.tokens.length) && p.tokens.every((t, i) => t === tokens[i])) best = p;
    if (best) fromState = loadBlob(best.blob);
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

  async function generate({ id, tokens, settings, stops, probs: nProbs, grammar = '', bias = [], prefixStates = true }) {
    requireModel();
    if (!state.gen) throw new WorkerError('E_UNSUPPORTED', 'this build of the engine has no generation API (wick_gen_*)');
    // a device lost between requests: this one runs on the CPU already
    if (state.gpu && state.gpu.forward.lostReason !== null) {
      const e = await fallBackToCpu(new Error(`the GPU device was lost: ${state.gpu.forward.lostReason}`), id);
      if (!state.model) throw e; // the weights could not be read again
    }
    const g = state.gen;
    // checkpoint: where a hybrid model also keeps its recurrent state (chat requests set it; 0 = none)
    for (const [name, value] of Object.entries({ checkpoint: 0, ...settings, n_probs: nProbs || 0 }))
      withString(name, (p) => check(M._wick_gen_set(g, p, value), `setting ${name}=${value}`));
    check(M._wick_gen_clear_stops(g));
    for (const s of stops) withString(s, (p) => check(M._wick_gen_add_stop(g, p), `stop string ${JSON.stringify(s)}`));
    check(M._wick_gen_clear_bias(g));
    for (const [token, b] of bias) check(M._wick_gen_set_bias(g, token, b), `logit bias of token ${token}`);
    withString(grammar, (p) => check(M._wick_gen_set_grammar(g, p, 0)));

    const readback0 = state.gpu ? state.gpu.forward.stats.readbackBytes : 0;
    const t0 = performance.now();
    let images = [];
    withScratch(4 * Math.max(1, tokens.length), (buf) => {
      M.HEAP32.set(tokens, buf >>> 2);
      if (prefixStates) startFromPrefix(tokens, buf);
      if (tokens.some((t) => t < 0)) images = encodeImages(tokens, buf);
      check(M._wick_gen_start(g, buf, tokens.length));
    });
    await gpuStep(id);
    const t1 = performance.now();
    const promptEval = M._wick_gen_n_prompt_eval(g);
    // the positions reused that a loaded state (loadState, a shared prefix) supplied
    fromState = Math.min(fromState, tokens.length - promptEval);
    const promptFromState = fromState;
    let generated = 0, firstTokenAt = 0, finishReason = null, shiftedTotal = 0, reevaluatedTotal = 0;
    const scratch = malloc(8);
    try {
      for (;;) {
        if (aborted.has(id)) { finishReason = 'abort'; break; }
        check(M._wick_gen_next(g));
        await gpuStep(id);
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
        if (finish) { finishReason = WickConstants.FINISH_REASONS[finish] || 'stop'; break; }
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
      images,
      timings: {
        promptTokens: tokens.length,
        promptEvalTokens: promptEval,
        cachedPromptTokens: tokens.length - promptEval,
        promptFromState,
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
        // the GPU path: bytes of logits read back for this answer (whole rows, or top-k pairs)
        ...(state.gpu ? { gpuReadbackBytes: state.gpu.forward.stats.readbackBytes - readback0 } : {}),
      },
    };
  }

  /** On the GPU path: the evaluations the generator just asked for (a GPU failure falls back). */
  async function gpuStep(id) {
    if (!state.gpu) return;
    try {
      const read = await runGpuOps();
      // a NaN or an infinity: this GPU computes wrong here, and its path ends as a lost device's does
      const row = read?.values || [];
      for (let i = 0; i < row.length; i++)
        if (!Number.isFinite(row[i])) throw new WorkerError('E_GPU', `the GPU returned a logit of ${row[i]} (token ${read.ids ? read.ids[i] : i % state.gpu.forward.c.n_vocab})`);
    } catch (e) {
      if (e.code === 'E_GPU') throw await fallBackToCpu(e, id);
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
        if (msg.type === 'init') {
          // the shared constants, the header reader and the download code, run as the classic
          // scripts they are (as importScripts does on a page). Not import(url): a dynamic import of
          // a variable makes Vite's dev server add an import statement to this file, which a
          // classic worker cannot run.
          for (const [url, name] of [[msg.constantsUrl, 'WickConstants'], [msg.ggufUrl, 'WickGguf'], [msg.downloadUrl, 'WickDownload']])
            if (!globalThis[name]) queue = queue.then(() => runScript(url)).catch((e) => console.error(`wick: ${url}: ${e.message}`));
        }
        onMessage(msg);
      });
    });
  } else {
    post = (m, t) => self.postMessage(m, t);
    self.onmessage = (e) => {
      const msg = e.data;
      // the shared constants, the header reader and the download code: where the host says (a
      // bundler may have renamed them), else beside this script
      if (msg.type === 'init') {
        if (!self.WickConstants) importScripts(msg.constantsUrl || new URL('constants.js', self.location.href).href);
        if (!self.WickGguf) importScripts(msg.ggufUrl || new URL('gguf-header.js', self.location.href).href);
        if (!self.WickDownload) importScripts(msg.downloadUrl || new URL('download.js', self.location.href).href);
      }
      onMessage(msg);
    };
  }
})();
