#!/usr/bin/env node
// tools/bench-gpu.mjs — the WebGPU path's structure per decoded token, counted from the dispatch
// plan as it is encoded (wasm_glue/gpu/backend.mjs): bytes read from weight buffers (against the
// weights' size on the GPU), compute dispatches, queue submissions and bytes read back, for the
// synthetic 134m and 1b files in Q4_0 and Q4_K_M; with the adapter it ran on and its decode
// tokens/s (meaningless on a software adapter such as SwiftShader, which computes on the CPU).
// `npm run bench` runs it after the CPU tables (unless --no-gpu); alone:
//   node tools/bench-gpu.mjs [--models models/synth-1b-q4_0.gguf,…] [--tokens 3] [--decode-kernels rows,auto] [--record]
// Under Node the adapter comes from the npm package webgpu (Dawn); without a GPU, Chromium's
// SwiftShader driver (VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json, set here when unset).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ROOT, parseArgs, list, ensureModel, modelLabel, markdownTable, fmt, appendBenchmarks } from './bench-common.mjs';

const MiB = 1024 * 1024;
export const GPU_DEFAULTS = {
  models: 'models/synth-134m-q4_0.gguf,models/synth-134m-q4_k_m.gguf,models/synth-1b-q4_0.gguf,models/synth-1b-q4_k_m.gguf',
  tokens: 3,
  decodeKernels: 'rows,auto',
  record: false,
};

async function engine() {
  const script = path.join(ROOT, 'build', 'wasm', 'wick.js');
  const createWick = createRequire(script)(script);
  return createWick({ wasmBinary: fs.readFileSync(path.join(ROOT, 'build', 'wasm', 'wick.wasm')), print: () => {}, printErr: () => {} });
}

function check(M, status) {
  if (status !== 0) throw new Error(M.UTF8ToString(M._wick_last_error()));
}

/** The structural table (markdown) and the adapter, for the files of opts.models. */
export async function gpuBench(opts) {
  if (process.env.WICK_GPU_REAL !== '1') process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json'; // check:gpu-real on a GPU: the system's driver
  const gpu = await import('../wasm_glue/gpu/backend.mjs');
  const found = await gpu.findAdapter();
  if (!found.adapter) throw new Error(`no WebGPU adapter: ${found.reason}`);
  const device = await gpu.openDevice(found.adapter);
  const M = await engine();
  const dequantize = (type, ptr, n) => {
    const out = M._malloc(4 * n) >>> 0;
    check(M, M._wick_dequantize(type, ptr, n, out));
    const v = M.HEAPF32.slice(out >>> 2, (out >>> 2) + n);
    M._free(out);
    return v;
  };
  const rows = [];
  for (const file of list(opts.models)) {
    const model = ensureModel(file);
    const bytes = fs.readFileSync(model);
    const ptr = M._malloc(bytes.length) >>> 0;
    if (!ptr) throw new Error(`${file}: out of wasm memory`);
    M.HEAPU8.set(bytes, ptr);
    const out = M._malloc(4) >>> 0;
    check(M, M._wick_model_load_gguf(ptr, bytes.length, out));
    const handle = M.HEAPU32[out >>> 2];
    M._wick_model_tensors_json(handle, 0, 0, out);
    const need = M.HEAPU32[out >>> 2], buf = M._malloc(need) >>> 0;
    check(M, M._wick_model_tensors_json(handle, buf, need, out));
    const tensors = JSON.parse(M.UTF8ToString(buf));
    M._free(buf);
    try {
      for (const decodeKernel of list(opts.decodeKernels)) {
        process.stderr.write(`bench-gpu: ${modelLabel(model)}: uploading to ${found.description} (decode kernel ${decodeKernel})\n`);
        // 'auto' as a GPU takes it (a software adapter's own plan keeps 'rows'); batches go through
        // the adapter's own entry point (main on a software adapter), which changes no count
        const kernel = decodeKernel === 'auto' && found.software ? (device.features.has('subgroups') ? 'mv_sg' : 'mv') : decodeKernel;
        const f = await gpu.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize, nCtx: 64, software: found.software, decodeKernel: kernel });
        try {
          await f.eval([1, 2, 3, 4], 0, false);
          const before = { ...f.stats };
          const t0 = performance.now();
          // greedy, as the engine decodes it: the top-k readback of the best logit (k = 1)
          for (let i = 0; i < opts.tokens; i++) await f.eval([5 + i], 4 + i, false, 1);
          const seconds = (performance.now() - t0) / 1000;
          const per = (k) => (f.stats[k] - before[k]) / opts.tokens;
          const s = f.structure();
          // the plan a GPU takes (on a software adapter the batches run main, 32 at a time): built, not run
          let gpuPlan = s;
          if (found.software) {
            const g = await gpu.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize, nCtx: 512, software: false, decodeKernel: kernel });
            gpuPlan = g.structure();
            g.destroy();
          }
          rows.push([
            modelLabel(model),
            s.decodeKernel,
            fmt(s.weightBytes / MiB),
            fmt(per('weightBytesRead') / MiB),
            fmt(per('weightBytesRead') / s.weightBytes, 3),
            fmt(per('activationBytesRead') / per('weightsRead'), 2),
            fmt(s.int8WeightShare, 2),
            `${gpuPlan.batchEntry}, ${gpuPlan.batch}: 1/${fmt(gpuPlan.layerWeightBytes / gpuPlan.prefillWeightBytesPerToken, 0)}`,
            fmt(per('dispatches'), 0),
            fmt(per('computePasses'), 0),
            fmt(per('submissions'), 0),
            fmt(per('readbackBytes'), 0),
            fmt(s.kvBytesPerPosition, 0),
            `${s.buffers} (largest ${fmt(s.largestBuffer / MiB)} MiB)`,
            fmt(opts.tokens / seconds, 2),
          ]);
        } finally {
          f.destroy();
        }
      }
    } finally {
      M._wick_model_free(handle);
      M._free(ptr);
      M._free(out);
    }
  }
  device.destroy();
  const table = markdownTable(['model', 'decode kernel', 'weights on GPU MiB', 'weight MiB read per token', 'read / weights', 'activation bytes per weight', 'int8 share of weights', 'prefill: kernel, batch: layer weights read per token', 'dispatches per token', 'compute passes per token', 'submissions per token', 'readback bytes per greedy token', 'KV bytes per position', 'buffers', 'decode tok/s'], rows);
  const notes = `GPU path (wasm_glue/gpu/backend.mjs), adapter: ${found.description}${found.software ? ' (a software adapter: computes on the CPU, its tokens/s say nothing about a GPU)' : ''}; ` +
    `maxStorageBufferBindingSize ${fmt(device.limits.maxStorageBufferBindingSize / MiB, 0)} MiB (tensors above it are split by rows); ` +
    `figures counted over ${opts.tokens} decode steps after a 4-token prompt, context 64; decode kernel rows: matmul.wgsl main_wg on a GPU, main on a software adapter (a row per workgroup or invocation, 8 token slots), ` +
    'mv: main_mv (4 rows per 256-thread workgroup, the activations loaded once for the 4), main_mv3 (q, k and v in one dispatch) and main_mv_glu (gate, up and the GLU), ' +
    'the RMS norms before those two folded in; mv_sg: those with subgroupAdd; mv_q8, mv_q8_sg: those with 8-bit activations and dot4I8Packed on quantized matrices; ' +
    'activation bytes per weight: f32 activations the matrix products load from memory over the weights they multiply; int8 share: of the weights a step reads, those the int8 kernels read. ' +
    'The embedding table stays on the CPU side ' +
    '(one row dequantized per token) unless the output shares it; KV bytes per position: all layers\' K and V caches.';
  return `${table}\n\n${notes}`;
}

async function main(argv) {
  const opts = parseArgs(argv, GPU_DEFAULTS);
  const text = await gpuBench(opts);
  process.stdout.write(`${text}\n`);
  if (opts.record) appendBenchmarks('npm run bench (GPU structure)', `node tools/bench-gpu.mjs ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), text);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main(process.argv.slice(2)).then(() => process.exit(0), (e) => {
    console.error(`bench-gpu: ${e.message}`);
    process.exit(1);
  });
}
