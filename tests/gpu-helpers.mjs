// tests/gpu-helpers.mjs — for the WebGPU suites: the wasm engine in this process (its kernels and
// model parser), a WebGPU device on SwiftShader through the npm package `webgpu` (Dawn), and a
// GPU forward pass of a model file as the worker builds one.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { root } from './helpers.mjs';

// Chromium's SwiftShader Vulkan driver (Debian's lavapipe is refused by Dawn); set before the
// first adapter is requested
// WICK_GPU_REAL=1 (npm run check:gpu-real on a machine with a GPU): the system's Vulkan driver instead
if (process.env.WICK_GPU_REAL !== '1') process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';

const backendUrl = new URL('../wasm_glue/gpu/backend.mjs', import.meta.url);
export const backend = await import(backendUrl);

export async function loadEngine() {
  const script = path.join(root, 'build', 'wasm', 'wick.js');
  const createWick = createRequire(script)(script);
  return createWick({ wasmBinary: fs.readFileSync(path.join(root, 'build', 'wasm', 'wick.wasm')), print: () => {}, printErr: () => {} });
}

let devicePromise = null;
/** One SwiftShader device for the whole test file. */
export function gpuDevice() {
  devicePromise ??= (async () => {
    const found = await backend.findAdapter();
    if (!found.adapter) throw new Error(`no WebGPU adapter: ${found.reason}`);
    return { device: await backend.openDevice(found.adapter), ...found };
  })();
  return devicePromise;
}

/** The engine's dequantization of n elements at ptr, as a Float32Array copy. */
export function dequantizer(M) {
  return (type, ptr, n) => {
    const out = M._malloc(n * 4) >>> 0;
    try {
      if (M._wick_dequantize(type, ptr, n, out) !== 0) throw new Error(M.UTF8ToString(M._wick_last_error()));
      return M.HEAPF32.slice(out >>> 2, (out >>> 2) + n);
    } finally {
      M._free(out);
    }
  };
}

/** A model file parsed by the engine: {model, tensors} (the model stays in wasm memory). */
export function loadModel(M, file) {
  const bytes = fs.readFileSync(file);
  const ptr = M._malloc(bytes.length) >>> 0;
  M.HEAPU8.set(bytes, ptr);
  const out = M._malloc(4) >>> 0;
  if (M._wick_model_load_gguf(ptr, bytes.length, out) !== 0) throw new Error(M.UTF8ToString(M._wick_last_error()));
  const model = M.HEAPU32[out >>> 2];
  const need = M._malloc(4) >>> 0;
  M._wick_model_tensors_json(model, 0, 0, need);
  const len = M.HEAPU32[need >>> 2];
  const buf = M._malloc(len) >>> 0;
  if (M._wick_model_tensors_json(model, buf, len, need) !== 0) throw new Error(M.UTF8ToString(M._wick_last_error()));
  const tensors = JSON.parse(M.UTF8ToString(buf));
  [out, need, buf].forEach((p) => M._free(p));
  return { model, tensors, ptr };
}
