// tools/bench-page/bench-page.mjs — the in-page half of `npm run bench:peers`. tools/bench-peers.mjs
// opens index.html in headless Chromium (served with COOP/COEP, so the page is cross-origin
// isolated and both engines may use threads) and calls, one engine at a time:
//   window.benchWick(cfg)   — wick's own harness, wick-worker.js (the C API, no glue);
//   window.benchWllama(cfg) — @wllama/wllama 3.13.0 with the wasm file of its npm package.
// cfg: {modelUrl, threads, nCtx, nBatch, promptText, promptIds, gen, repeat}. Both return
// {runs: [{prefillMs, decodeMs, promptTokens, decodeSteps}], …}: prefillMs is the prompt
// evaluated as one batch, decodeMs covers decodeSteps single-token evaluations (greedy).
import { Wllama, LoggerWithoutDebug } from '/node_modules/@wllama/wllama/esm/index.js';

const WLLAMA_WASM = '/node_modules/@wllama/wllama/esm/wasm/wllama.wasm';

window.benchWick = (cfg) => new Promise((resolve, reject) => {
  const worker = new Worker(new URL('wick-worker.js', import.meta.url));
  worker.onmessage = ({ data }) => {
    worker.terminate();
    if (data.ok) resolve(data); else reject(new Error(data.error));
  };
  worker.onerror = (e) => {
    worker.terminate();
    reject(new Error(`wick worker: ${e.message}`));
  };
  worker.postMessage(cfg);
});

window.benchWllama = async (cfg) => {
  // One wasm file serves both the single-thread and the multi-thread path in wllama 3.x: it
  // starts pthreads when n_threads > 1 and the page is cross-origin isolated.
  const wllama = new Wllama({ default: WLLAMA_WASM }, { logger: LoggerWithoutDebug, suppressNativeLog: true });
  wllama.setCompat(null); // never the CDN compat build
  try {
    const t0 = performance.now();
    const resp = await fetch(cfg.modelUrl);
    if (!resp.ok) throw new Error(`${cfg.modelUrl}: HTTP ${resp.status}`);
    const blob = await resp.blob();
    const t1 = performance.now();
    await wllama.loadModel([blob], {
      n_ctx: cfg.nCtx, n_batch: cfg.nBatch, n_threads: cfg.threads, n_gpu_layers: 0,
      n_parallel: 1, cache_type_k: 'f16', cache_type_v: 'f16',
    });
    const t2 = performance.now();
    const runs = [];
    for (let r = 0; r <= cfg.repeat; r++) {
      const a = performance.now();
      const res = await wllama.createCompletion({
        prompt: cfg.promptText,
        max_tokens: cfg.gen + 1,   // the first token comes from the prompt's logits, then gen decode steps
        temperature: 0, temp: 0, top_k: 1, ignore_eos: true, cache_prompt: false, seed: 0,
        ...(cfg.ban?.length ? { logit_bias: Object.fromEntries(cfg.ban.map((id) => [String(id), -1000])) } : {}),
      });
      const wallMs = performance.now() - a;
      const t = res.timings;
      if (!t) throw new Error('wllama returned no timings');
      // llama-server's clock: prompt_ms ends when the prompt batch is decoded; predicted_ms runs
      // from there to the last token, so it covers predicted_n - 1 single-token evaluations
      if (r > 0) runs.push({
        prefillMs: t.prompt_ms, decodeMs: t.predicted_ms, promptTokens: t.prompt_n,
        decodeSteps: t.predicted_n - 1, wallMs, cached: t.cache_n,
      });
    }
    return {
      engine: `wllama ${Wllama.getLibllamaVersion?.() || ''}`.trim(), runs,
      multithread: wllama.isMultithread(), threads: wllama.getNumThreads(),
      fetchMs: t1 - t0, loadMs: t2 - t1,
    };
  } finally {
    await wllama.exit().catch(() => {});
  }
};

window.benchReady = true;
