/* tools/bench-page/wick-worker.js — measures the wick engine itself in a classic Web Worker,
 * without the glue: it loads build/wasm/wick.js (1 thread) or wick-mt.js (pthreads) with
 * importScripts, fetches the GGUF into _malloc'ed wasm memory and calls the C API of src/wick.h.
 *
 * One message in: {modelUrl, threads, nCtx, nBatch, promptIds, gen, repeat}; out:
 * {ok: true, runs: [{prefillMs, decodeMs, promptTokens, decodeSteps, tokens}], heapBytes, ...}
 * or {ok: false, error}. Each run starts from an empty KV cache:
 *   prefill = wick_eval(prompt as one batch) + argmax of the last logits (the first token);
 *   decode  = `gen` steps of wick_eval(one token) + argmax (greedy), so gen + 1 tokens come out.
 * A first run, not reported, warms the engine up (as llama.cpp's warmup decode does). */
'use strict';

const STATUS = ['ok', 'invalid argument', 'format', 'unsupported', 'out of memory', 'context full'];

self.onmessage = async (event) => {
  try {
    self.postMessage({ ok: true, ...(await bench(event.data)) });
  } catch (e) {
    self.postMessage({ ok: false, error: String(e && e.stack || e) });
  }
};

async function bench(cfg) {
  // cfg.relaxed: the relaxed-SIMD twin of the build (mk/relaxed.mk)
  const build = (cfg.threads > 1 ? 'wick-mt' : 'wick') + (cfg.relaxed ? '-relaxed' : '');
  const base = new URL('/build/wasm/', self.location.origin).href;
  const scriptUrl = base + build + '.js';
  importScripts(scriptUrl);
  const t0 = performance.now();
  const M = await self.createWick({
    mainScriptUrlOrBlob: scriptUrl,  // the pthread workers load the same script
    wickThreads: cfg.threads,
    locateFile: (file) => base + file,
    print: () => {},
    printErr: (s) => console.warn('[wick]', s),
  });
  // the shared memory of the pthreads build, or the memory the single-threaded module exports
  const memory = M.wasmMemory || Object.values(M.asm).find((x) => x instanceof WebAssembly.Memory);
  const u8 = () => new Uint8Array(memory.buffer);
  const i32 = () => new Int32Array(memory.buffer);
  const u32 = () => new Uint32Array(memory.buffer);
  const check = (status, what) => {
    if (status !== 0) throw new Error(`${what}: ${STATUS[status] || status}: ${M.UTF8ToString(M._wick_last_error())}`);
  };

  // the file, streamed into one allocation (the size comes from Content-Length)
  const resp = await fetch(cfg.modelUrl);
  if (!resp.ok) throw new Error(`${cfg.modelUrl}: HTTP ${resp.status}`);
  const size = Number(resp.headers.get('Content-Length'));
  const filePtr = M._malloc(size);
  if (!filePtr) throw new Error(`cannot allocate ${size} bytes for the model`);
  let off = 0;
  for (const reader = resp.body.getReader(); ;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (off + value.length > size) throw new Error('the body is longer than its Content-Length');
    u8().set(value, filePtr + off);
    off += value.length;
  }
  if (off !== size) throw new Error(`read ${off} of ${size} bytes`);
  const t1 = performance.now();

  const out = M._malloc(4);
  check(M._wick_model_load_gguf(filePtr, size, out), 'wick_model_load_gguf');
  const model = u32()[out >> 2];
  const infoPtr = M._malloc(256);   // wick_model_info: char arch[32], then int32 n_vocab, …
  check(M._wick_model_get_info(model, infoPtr), 'wick_model_get_info');
  const nVocab = i32()[(infoPtr + 32) >> 2];
  // wick_ctx_params {n_ctx, n_batch, n_threads, kv_type (F16 by default), kv_type_k, kv_type_v}:
  // the engine's defaults first, so that fields it gains later are never garbage
  const params = M._malloc(64);
  M._wick_ctx_default_params(params);
  i32().set([cfg.nCtx, cfg.nBatch, cfg.threads], params >> 2);
  check(M._wick_ctx_new(model, params, out), 'wick_ctx_new');
  const ctx = u32()[out >> 2];
  const t2 = performance.now();

  const n = cfg.promptIds.length;
  const prompt = M._malloc(4 * n);
  i32().set(cfg.promptIds, prompt >> 2);
  const one = M._malloc(4);
  const argmax = () => M._wick_sample_simple(M._wick_get_logits(ctx, -1), nVocab, 0, 0);

  const runs = [];
  for (let r = 0; r <= cfg.repeat; r++) {
    check(M._wick_kv_trim(ctx, 0), 'wick_kv_trim');
    const a = performance.now();
    check(M._wick_eval(ctx, prompt, n, 0), 'wick_eval (prompt)');
    let token = argmax();
    const b = performance.now();
    const tokens = [token];
    for (let i = 0; i < cfg.gen; i++) {
      i32()[one >> 2] = token;
      check(M._wick_eval(ctx, one, 1, 0), 'wick_eval (decode)');
      token = argmax();
      tokens.push(token);
    }
    const c = performance.now();
    if (r > 0) runs.push({ prefillMs: b - a, decodeMs: c - b, promptTokens: n, decodeSteps: cfg.gen, tokens });
  }
  return {
    engine: build, runs, heapBytes: memory.buffer.byteLength, fileBytes: size,
    kvBytes: M._wick_kv_bytes(ctx) >>> 0, fetchMs: t1 - t0, loadMs: t2 - t1,
  };
}
