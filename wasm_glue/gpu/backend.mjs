// wasm_glue/gpu/backend.mjs — wick's WebGPU backend: the forward pass of the llama lineage on the
// GPU, fed by the engine's parsed model (wick_model_tensors_json: addresses in wasm memory, types,
// shapes and the family switches). The weights are uploaded once and stay in their GGUF block
// formats (F32, F16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K), dequantized inside the shaders (the .wgsl
// files beside this one); other types are converted to F32 once at load (`converted` says which).
// The KV cache stays on the GPU, and so does the hybrids' recurrent state (lfm2's short
// convolution, qwen35's gated DeltaNet: recurrent.wgsl), trimmed and snapshotted as the external
// context asks (trim, snapshot); each batch is one queue submission, and only the logits rows
// asked for are read back; when the sampler needs only the k best logits of the last row
// (wick_gen_candidates: greedy, or top_k without penalties, bias or grammar), topk.wgsl ranks the
// row on the GPU and only those k (id, logit) pairs are read back. Sampling, grammar and stop strings stay in C: the worker drives an
// external context (src/wick.h, wick_ctx_new_external) whose evaluations this backend carries out.
// Numbers: activations and accumulation in f32, the KV cache in F16 as the CPU path's (halves
// packed two per word with pack2x16float: no shader-f16 needed); they differ from the CPU path's
// (8-bit activation blocks) in the low bits. One token (decode) on a GPU: the RMS norms before
// attention and the FFN are folded into the products after them (matmul.wgsl main_mv3: q, k and v
// in one dispatch; main_mv_glu: gate, up and the GLU in one).

const SHADER_FILES = ['matmul', 'dequant', 'norm', 'rope', 'attention', 'elementwise', 'recurrent', 'topk'];

// The tensor types' names and block sizes (constants.js). In the engine's worker the script is
// already loaded, from the URL the host named (a bundler may have moved it); imported from beside
// the glue otherwise (a page or a test that imports this module itself).
if (!globalThis.WickConstants) await import('../constants.js');
const { TENSOR_TYPES } = globalThis.WickConstants;

// the check device 'auto' runs before it takes the GPU (the worker reaches it through this module)
export * as verify from './verify.mjs';

// GGUF type ids the shaders read directly, each with its name, which names its unit function (dequant.wgsl)
export const GPU_TYPES = new Map([0, 1, 2, 8, 12, 13, 14].map((type) => [type, TENSOR_TYPES[type].name]));

const WG = 64;
const TOKEN_TILE = 8;             // tokens per matmul workgroup (matmul.wgsl TILE)
const ROWS_PER_Y = 32768;         // matmul.wgsl ROWS_PER_Y
const GROUPS_PER_Y = 32768;       // elementwise.wgsl: 32768 workgroups of 64 per y step
const MAX_HEAD_DIM = 256;         // attention.wgsl
const TOPK_SEGMENT = 1024;        // topk.wgsl SEG: entries one workgroup sorts
export const TOPK_MAX = 256;      // topk.wgsl WG: the most candidates a top-k readback holds
const TOPK_HEADER = 8;            // bytes before the pairs in the top-k readback: the row's Inf/NaN count
// the forward pass's steps beyond plain llama's that the shaders implement, by the names the C
// side reports for each model (model.c model_steps): an allowlist, so a step added on the C side
// keeps its models on the CPU until the GPU path is taught it and tested against llama.cpp
export const GPU_STEPS = new Set([
  'rope_neox', 'partial_rope', 'rope_freqs', 'rope_factors', 'rope_scale', 'rope_attn_factor', 'gelu_tanh',
  'qk_norm_per_head', 'qk_norm_full', 'attn_bias', 'attn_post_norm', 'ffn_post_norm', 'no_pre_norm',
  'unrotated_layers', 'embd_scale', 'residual_scale', 'attn_scale', 'attn_softcap', 'final_softcap',
  'logit_scale', 'sliding_window', 'rope_base_swa', 'fused_qkv', 'fused_gate_up', 'tied_output',
  // the hybrids (recurrent.wgsl): lfm2's short convolution, qwen35's gated DeltaNet and its attention's output gate
  'shortconv', 'deltanet', 'attn_out_gate',
]);
// the recurrent state's snapshots a context keeps (src/context.h STATE_SNAPSHOTS): WICK_OP_SNAPSHOT names one
const STATE_SNAPSHOTS = 2;
// the matrices of a layer, by the names of wick_model_tensors_json: attention's, the FFN's, the recurrent mixers'
const LAYER_MATRICES = ['wq', 'wk', 'wv', 'wo', 'w_gate', 'w_up', 'w_down', 'sc_in', 'sc_out', 'dn_qkv', 'dn_gate', 'dn_alpha', 'dn_beta', 'dn_out'];
// families whose models the GPU path cannot run, known from a file's header before its weights
// are read (the allowlist above decides once the model is parsed): encoders, Mamba-2 layers,
// per-layer embeddings and AltUp (lfm2 and qwen35 run there: recurrent.wgsl). Their weights load into wasm memory for the CPU.
const HEADER_CPU_ONLY = new Set(['bert', 'nomic-bert', 'modern-bert', 'gemma-embedding', 'granitehybrid', 'gemma4', 'gemma3n']);

/** Why a model with this GGUF metadata stays on the CPU, from its header alone, or null (it may run here). */
export function headerUnsupported(metadata) {
  const arch = metadata['general.architecture'];
  return HEADER_CPU_ONLY.has(arch) ? `the ${arch} family runs on the CPU only` : null;
}
const UNIFORM_SLOT = 256;         // minUniformBufferOffsetAlignment's default
// software rasterizers that expose WebGPU adapters: real, but slower than wick's own CPU path
const SOFTWARE_ADAPTER = /swiftshader|lavapipe|llvmpipe|softpipe|software|basic render/i;

/** A GPU failure: lost device, out of memory on upload, shader compilation (WickError E_GPU). */
export class GpuError extends Error {
  constructor(message, code = 'E_GPU') {
    super(message);
    this.code = code;
  }
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined' && typeof importScripts !== 'function';
let nodeGpu = null;

/** navigator.gpu, or under Node the npm package `webgpu` (Dawn) when it is installed; null if neither. */
async function gpuEntry() {
  if (globalThis.navigator?.gpu) return globalThis.navigator.gpu;
  if (!isNode) return null;
  if (!nodeGpu) {
    let pkg;
    try {
      pkg = await import('webgpu');
    } catch {
      return null;
    }
    Object.assign(globalThis, pkg.globals);
    nodeGpu = pkg.create([]);
  }
  return nodeGpu;
}

/** The adapter and what it is: {adapter, description, software} or {adapter: null, reason}. */
export async function findAdapter() {
  const gpu = await gpuEntry();
  if (!gpu) return { adapter: null, reason: isNode ? 'no WebGPU in this Node (install the npm package "webgpu")' : 'this browser has no WebGPU' };
  let adapter = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return { adapter: null, reason: `no WebGPU adapter: ${e.message}` };
  }
  if (!adapter) return { adapter: null, reason: 'no WebGPU adapter' };
  const info = adapter.info || {};
  const description = [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' ').trim() || 'unknown adapter';
  const software = !!(info.isFallbackAdapter || adapter.isFallbackAdapter) || SOFTWARE_ADAPTER.test(description);
  return { adapter, description, software };
}

async function readShader(name) {
  const url = new URL(`./${name}.wgsl`, import.meta.url);
  if (url.protocol === 'file:') {
    const fs = await import('node:fs/promises');
    const { fileURLToPath } = await import('node:url');
    return fs.readFile(fileURLToPath(url), 'utf8');
  }
  const r = await fetch(url);
  if (!r.ok) throw new GpuError(`shader ${name}.wgsl: HTTP ${r.status}`);
  return r.text();
}

let shaderTexts = null;
async function shaders() {
  if (!shaderTexts) {
    const texts = await Promise.all(SHADER_FILES.map(readShader));
    shaderTexts = Object.fromEntries(SHADER_FILES.map((n, i) => [n, texts[i]]));
  }
  return shaderTexts;
}

/** Every shader's WGSL ({name: text}): what a verdict of the GPU check depends on. */
export const shaderSources = () => shaders();
/** The WGSL text of one of the shader files, by name ('topk': the tests run it alone). */
export async function readShaderText(name) {
  return (await shaders())[name];
}

/** The WGSL of the matrix product for GGUF type `type` (one of GPU_TYPES); with subgroups, the
 * module enables them and holds main_mv_sg (a device opened with the `subgroups` feature). */
export async function matmulSource(type, { subgroups = false, w2 = type, w3 = type, int8 = false } = {}) {
  const s = await shaders();
  const name = (ty) => GPU_TYPES.get(ty);
  // second and third copies of the byte helpers and a type's functions, reading W2 and W3
  // (main_mv_glu's up rows; main_mv3's k and v rows, each of its own type)
  const helpers = /\/\/HELPERS_BEGIN\/\/([\s\S]*)\/\/HELPERS_END\/\//.exec(s.matmul)[1];
  const on = (W) => (helpers + s.dequant).replace(/\bW\[/g, `${W}[`)
    .replace(/\b(byte_at|sbyte_at|u16_at|bytes4_at|f16_at|scale_min_k4|k_scale_min|q6_piece|unit_\w+|piece_x_\w+|piece_\w+|qpiece_\w+)\(/g, `$1_${W.toLowerCase()}(`)
    .replace(/\bQ6Piece\b/g, `Q6Piece_${W.toLowerCase()}`);
  const act = /\/\/ACT_BEGIN\/\/([\s\S]*)\/\/ACT_END\/\//.exec(s.elementwise)[1];
  let code = s.matmul.replace('//DEQUANT//', `${s.dequant}\n${on('W2')}\n${on('W3')}`).replace('//ACT//', act)
    .replace(/\bUNIT_FN\(/g, `unit_${name(type)}(`)
    .replace(/\b(Q?PIECE|PIECE_X)_FN_W([23])\(/g, (_, f, k) => `${f === 'PIECE_X' ? 'piece_x' : f.toLowerCase()}_${name(k === '2' ? w2 : w3)}_w${k}(`)
    .replace(/\b(Q?PIECE|PIECE_X)_FN\(/g, (_, f) => `${f === 'PIECE_X' ? 'piece_x' : f.toLowerCase()}_${name(type)}(`);
  // the int8 kernels where asked (every type of the module quantized: Q8_TYPES), else not a line of them
  if (!int8) code = code.replace(/\/\/INT8_BEGIN\/\/[\s\S]*?\/\/INT8_END\/\//g, '');
  if (subgroups) code = `enable subgroups;\n${code}`;
  else code = code.replace(/\/\/SUBGROUPS_BEGIN\/\/[\s\S]*?\/\/SUBGROUPS_END\/\//g, '');
  return code;
}

// matmul.wgsl's decode kernel: rows per workgroup, row groups per y step of the dispatch
const MV_ROWS = 4;
const MV_GROUPS_PER_Y = 8192;
// the int8 kernels (matmul.wgsl MV_Q8_COLS): rows at most this long; the types they read (qpiece_T)
const MV_Q8_COLS = 8192;
const Q8_TYPES = new Set([2, 8, 12, 13, 14]);
const INT8_VENDORS = /^(nvidia|amd|ati|intel)$/i;
const mvGroups = (g) => [Math.min(g, MV_GROUPS_PER_Y), Math.ceil(g / MV_GROUPS_PER_Y), 1];
// matmul.wgsl's Params: 20 words
const MATMUL_PARAMS = 80;
/** matmul.wgsl's Params as bytes (fields not given: 0; scale 1). */
export function matmulParams({ rows, cols, rowBytes, row0 = 0, xStride, yStride, flags = 0, scale = 1, bias = 0, normOff = 0, eps = 0, rows2 = 0, rows3 = 0, rowBytes2 = 0, rowBytes3 = 0, bias2 = 0, bias3 = 0 }) {
  const dv = new DataView(new ArrayBuffer(MATMUL_PARAMS));
  [rows, cols, rowBytes, row0, xStride, yStride, flags].forEach((v, i) => dv.setUint32(4 * i, v, true));
  dv.setFloat32(28, scale, true);
  dv.setUint32(32, bias, true);
  dv.setUint32(36, normOff, true);
  dv.setFloat32(40, eps, true);
  [rows2, rows3, rowBytes2, rowBytes3, bias2, bias3].forEach((v, i) => dv.setUint32(44 + 4 * i, v, true));
  return dv.buffer;
}
/** 'q,k,v' types of an attention layer whose one token can take main_mv3 (each matrix in one
 * buffer, x as wide as q's rows are long), else null. */
function qkvKey(l) {
  const ws = [l.wq, l.wk, l.wv];
  if (l.L.kind !== 'attention' || ws.some((w) => !w || w.chunks.length !== 1 || w.cols !== ws[0].cols)) return null;
  return ws.map((w) => w.type).join(',');
}
// matmul.wgsl main_gemm's tile: rows and tokens per workgroup
const GEMM_ROWS = 64;
const GEMM_TOKS = 64;
// attention.wgsl SPLIT: positions per workgroup of the one-token attention
const ATT_SPLIT = 256;
/** The decode kernels (one token): 'rows' is matmul.wgsl main / main_wg (a row per invocation or
 * per workgroup, the token tile of 8) and attention.wgsl main (a workgroup per head walks the whole
 * context); 'mv' is main_mv (4 rows per 256-thread workgroup, activations loaded once for the 4),
 * main_mv3 (an attention layer's q, k and v) and main_mv_glu (gate, up and the GLU), those two with
 * the RMS norm before them folded in, and the split attention (split_attend over chunks of 256
 * positions, split_reduce); 'mv_sg' is 'mv' with their subgroupAdd variants (needs the `subgroups`
 * feature); 'mv_q8' and 'mv_q8_sg' are those with the activations quantized to 8-bit blocks in
 * each workgroup and the products by dot4I8Packed where the matrices are quantized (main_mv_q8,
 * main_mv3_q8, main_mv_glu_q8; needs WGSL's packed_4x8_integer_dot_product). 'auto' takes 'rows' on
 * a software adapter, else mv_q8(_sg) on AMD, Intel and NVIDIA GPUs that have int8 dot products,
 * mv(_sg) on the others. */
export const DECODE_KERNELS = ['auto', 'rows', 'mv', 'mv_sg', 'mv_q8', 'mv_q8_sg'];

/** Runs fn inside validation and out-of-memory error scopes; a GPU error becomes a GpuError. */
async function checked(device, what, fn) {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let value;
  try {
    value = await fn();
  } finally {
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();
    if (oom) throw new GpuError(`${what}: out of GPU memory (${oom.message})`);
    if (validation) throw new GpuError(`${what}: ${validation.message}`);
  }
  return value;
}

export async function makePipeline(device, code, entryPoint, label) {
  return checked(device, `shader ${label}`, async () => {
    const module = device.createShaderModule({ code, label });
    const info = await module.getCompilationInfo?.();
    const errors = (info?.messages || []).filter((m) => m.type === 'error');
    if (errors.length) throw new GpuError(`shader ${label} does not compile: ${errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ')}`);
    return device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint }, label });
  });
}

/** Whether the device's WGSL has dot4I8Packed and pack4xI8 (the language feature
 * packed_4x8_integer_dot_product: matmul.wgsl's int8 decode kernels), by compiling a line of it
 * (asked once per device). */
const int8Known = new WeakMap();
export async function int8Supported(device) {
  if (!int8Known.has(device)) {
    int8Known.set(device, (async () => {
      try {
        await makePipeline(device, `@group(0) @binding(0) var<storage, read_write> O: array<i32>;
@compute @workgroup_size(1) fn main() { O[0] = dot4I8Packed(pack4xI8(vec4i(O[1])), 0x01010101u); }`, 'main', 'int8 probe');
        return true;
      } catch {
        return false;
      }
    })());
  }
  return int8Known.get(device);
}

/** A device with the adapter's own limits (at least WebGPU's defaults, which every adapter grants:
 * maxStorageBufferBindingSize 128 MiB, maxBufferSize 256 MiB; the backend splits larger tensors
 * to fit) and its `subgroups` feature where it has one; the defaults alone if that is refused. */
export async function openDevice(adapter) {
  // the adapter's own limits where they are larger (a real GPU binds far more than 128 MiB at once,
  // which splits fewer weights into row chunks), and its subgroups (main_mv_sg)
  const want = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX'];
  const requiredLimits = {};
  for (const k of want) if (adapter.limits?.[k] !== undefined) requiredLimits[k] = adapter.limits[k];
  const requiredFeatures = ['subgroups'].filter((f) => adapter.features?.has(f));
  try {
    return await adapter.requestDevice({ label: 'wick', requiredLimits, requiredFeatures });
  } catch {
    return adapter.requestDevice({ label: 'wick' });
  }
}

function align(n, a) {
  return Math.ceil(n / a) * a;
}

/** Buffer from bytes (a view on wasm memory): created mapped, filled, unmapped. */
function bufferFrom(device, bytes, usage, label) {
  const size = align(Math.max(4, bytes.byteLength), 4);
  const buf = device.createBuffer({ size, usage, mappedAtCreation: true, label });
  new Uint8Array(buf.getMappedRange()).set(bytes);
  buf.unmap();
  return buf;
}

/**
 * The forward pass of one model on one device. create() uploads the weights; evaluate() runs a
 * batch and returns the logits rows asked for.
 *   tensors     the parsed JSON of wick_model_tensors_json
 *   heap()      the current wasm memory (Uint8Array; it changes when memory grows)
 *   dequantize(type, ptr, n) → Float32Array: the engine's wick_dequantize
 *   nCtx        positions of the KV cache
 *   testHooks   for tests only (the load option gpuTestHooks): a GPU made slow or faulty on purpose,
 *               {submitDelayMs: a wait after each queue submission, perturb: 'matmul-scale' (layer
 *               0's FFN down projection adds 1.25 × its product to the residual: llama-style
 *               families, without post norms), nanAtStep: n (the n-th evaluate() since create,
 *               counting from 1, returns a NaN logit)}
 * A weight left outside wasm memory (its JSON says outside, with part and offset in the file;
 * the worker's one copy of the weights) is read through the worker's functions instead:
 *   bytesOf(w, from, n) → Uint8Array   n bytes of weight w from byte `from` (a view where it can be)
 *   rowsOf(w, r0, n) → Float32Array    rows r0… of w dequantized (through a small wasm scratch)
 *   onUploaded(w)                      w is on the GPU: its bytes may go
 * (by default both read wasm memory: heap() and dequantize).
 */
export class GpuForward {
  static async create(device, { tensors, heap, dequantize, nCtx, maxBatch, maxBinding, software = false, decodeKernel = 'auto', testHooks = null, bytesOf, rowsOf, onUploaded }) {
    // one token (decode, and the output head's one row): main_mv on a GPU, main_mv_sg where the
    // device has subgroups; a software adapter keeps main (its barriers are slow)
    if (!DECODE_KERNELS.includes(decodeKernel)) throw new GpuError(`decodeKernel must be one of ${DECODE_KERNELS.join(', ')} (got ${JSON.stringify(decodeKernel)})`, 'E_INVALID_ARG');
    const subgroups = !!device.features?.has('subgroups');
    if (decodeKernel.endsWith('_sg') && !subgroups) throw new GpuError(`decodeKernel ${decodeKernel} needs a device with the subgroups feature`, 'E_UNSUPPORTED');
    const int8 = await int8Supported(device);
    if (decodeKernel.includes('_q8') && !int8) throw new GpuError(`decodeKernel ${decodeKernel} needs WGSL's packed_4x8_integer_dot_product (dot4I8Packed), which this device lacks`, 'E_UNSUPPORTED');
    // int8 where the GPU has dot products of packed bytes in hardware (AMD, Intel, NVIDIA; Apple's
    // and a software adapter's would compute them in steps)
    const q8 = int8 && INT8_VENDORS.test(device.adapterInfo?.vendor || '') ? '_q8' : '';
    const kernel = decodeKernel === 'auto' ? (software ? 'rows' : `mv${q8}${subgroups ? '_sg' : ''}`) : decodeKernel;
    // batches: an invocation per row on a software adapter (main); on a GPU the tiled product
    // (main_gemm, 64 rows × 64 tokens per workgroup) with batches of 256 tokens, or with the
    // kernels of before ('rows') a workgroup per row (main_wg) with batches of 32
    const gemm = !software && kernel !== 'rows';
    const f = new GpuForward(device, tensors, nCtx, maxBatch ?? (gemm ? 256 : 32), maxBinding);
    f.hooks = testHooks || {};
    f.matmulEntry = software ? 'main' : gemm ? 'main_gemm' : 'main_wg';
    f.tokenTile = gemm ? GEMM_TOKS : TOKEN_TILE;
    f.decodeKernel = kernel;
    f.bytesOf = bytesOf || ((w, from, n) => heap().subarray(w.ptr + from, w.ptr + from + n));
    f.rowsOf = rowsOf || ((w, r0, n) => dequantize(w.type, w.ptr + r0 * w.row_bytes, n * w.cols));
    f.onUploaded = onUploaded || (() => {});
    await f.#build(heap);
    f.setRopeFactors(heap);
    return f;
  }

  constructor(device, tensors, nCtx, maxBatch, maxBinding) {
    const c = tensors.config;
    const unsupported = GpuForward.unsupported(tensors);
    if (unsupported) throw new GpuError(unsupported, 'E_UNSUPPORTED');
    this.device = device;
    this.t = tensors;
    this.c = c;
    this.nCtx = nCtx;
    this.B = Math.max(1, Math.min(maxBatch, nCtx));
    this.limit = Math.min(maxBinding || Infinity, device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
    this.kvDim = c.n_kv_heads * c.head_dim;
    if (nCtx * this.kvDim * 2 > this.limit)
      throw new GpuError(`the KV cache of one layer (${nCtx} positions × ${this.kvDim} halves) exceeds the GPU's ${this.limit} bytes per buffer: ask for a smaller context`);
    this.half = c.rope_dim / 2;
    // the FFN's hidden rows padded to whole 32-element units (the padding stays zero)
    this.hidStride = align(c.hidden_dim, 32);
    this.lostReason = null;
    // a hybrid's recurrent state follows the positions evaluated: nPast, and the positions its
    // snapshots hold (-1: none), as the external context's (src/context.c kv_cache_trim)
    this.recurrent = c.n_recurrent > 0;
    this.nPast = 0;
    this.snapPos = new Array(STATE_SNAPSHOTS).fill(-1);
    this.converted = [];      // names of the tensors converted to F32 at load
    this.weightBytes = 0;     // bytes of weights on the GPU
    this.buffers = [];
    this.stats = { submissions: 0, computePasses: 0, dispatches: 0, weightBytesRead: 0, readbackBytes: 0, tokens: 0, activationBytesRead: 0, weightsRead: 0 };
    this.hooks = {};          // create()'s testHooks
    this.evaluations = 0;     // evaluate() calls (testHooks.nanAtStep counts them)
    device.lost.then((info) => {
      this.lostReason = info.message || info.reason || 'lost';
    });
  }

  /** Why this model cannot run here (a family or shape the shaders do not take), or null. */
  static unsupported(tensors) {
    const c = tensors.config;
    const missing = (tensors.steps || ['(no steps reported)']).filter((step) => !GPU_STEPS.has(step));
    if (missing.length) return `the ${c.arch} family runs on the CPU only: the GPU path does not implement ${missing.join(', ')}`;
    if (c.head_dim > MAX_HEAD_DIM) return `head dimension ${c.head_dim} is above the GPU path's ${MAX_HEAD_DIM}`;
    if (c.n_heads % c.n_kv_heads) return `${c.n_heads} heads do not group over ${c.n_kv_heads} KV heads`;
    if (c.dim % 32 || c.q_dim % 32) return `widths ${c.dim} and ${c.q_dim} are not multiples of 32`;
    const kinds = new Set((tensors.layers || []).map((l) => l.kind));
    if (kinds.has('deltanet') && (c.ssm_v_heads * c.ssm_state) % 32) return `DeltaNet's value width ${c.ssm_v_heads * c.ssm_state} is not a multiple of 32`;
    return null;
  }

  #buffer(size, usage, label) {
    const b = this.device.createBuffer({ size: align(Math.max(4, size), 4), usage, label });
    this.buffers.push(b);
    return b;
  }

  /** A weight matrix on the GPU: row chunks each within the binding limit. */
  #uploadWeight(name, w) {
    const S = GPUBufferUsage.STORAGE;
    let type = w.type, rowBytes = w.row_bytes, convert = !GPU_TYPES.has(type);
    if (convert) {
      this.converted.push(`${name} (${TENSOR_TYPES[type]?.name || type})`);
      type = 0;
      rowBytes = w.cols * 4;
    }
    // rows of a float type whose width is not whole 32-element units (stories260K's hidden 172)
    // become F32 rows padded with zeros to the next unit; their input rows are padded alike
    const cols = align(w.cols, 32);
    if (cols !== w.cols) {
      if (TENSOR_TYPES[w.type]?.block !== 1) throw new GpuError(`${name}: rows of ${w.cols} elements are not whole 32-element units`, 'E_UNSUPPORTED');
      convert = true;
      type = 0;
      rowBytes = cols * 4;
    }
    const rowsPerChunk = Math.max(1, Math.floor(this.limit / rowBytes));
    const chunks = [];
    for (let r0 = 0; r0 < w.rows; r0 += rowsPerChunk) {
      const rows = Math.min(rowsPerChunk, w.rows - r0);
      let buffer;
      if (convert) {
        buffer = this.device.createBuffer({ size: rows * rowBytes, usage: S, mappedAtCreation: true, label: name });
        const out = new Float32Array(buffer.getMappedRange());
        if (cols !== w.cols) {
          for (let r = 0; r < rows; r++) out.set(this.rowsOf(w, r0 + r, 1), r * cols);
        } else {
          // rows per conversion call: a small scratch in wasm memory (a weight outside it is copied in a few rows at a time)
          const step = Math.max(1, Math.floor((1 << 18) / w.cols));
          for (let r = 0; r < rows; r += step) {
            const n = Math.min(step, rows - r);
            out.set(this.rowsOf(w, r0 + r, n), r * w.cols);
          }
        }
        buffer.unmap();
        this.buffers.push(buffer);
      } else {
        buffer = bufferFrom(this.device, this.bytesOf(w, r0 * rowBytes, rows * rowBytes), S, name);
        this.buffers.push(buffer);
      }
      chunks.push({ buffer, row0: r0, rows, bytes: rows * rowBytes });
      this.weightBytes += rows * rowBytes;
    }
    return { type, cols, rows: w.rows, rowBytes, chunks };
  }

  /** The hybrids' buffers: the mixers' scratch rows (sized as src/context.c recurrent_state_init
   * sizes them) and each recurrent layer's state (the convolution's previous inputs; DeltaNet's
   * S×S matrix per value head), zero at position 0, with a copy per snapshot slot. */
  #recurrentBuffers(f) {
    const c = this.c, B = this.B, nv = c.ssm_v_heads, Sd = c.ssm_state, vd = nv * Sd;
    let projW = c.attn_out_gate ? 2 * c.q_dim : 0, mixW = 0, mix2W = 0;
    this.state = this.layers.map((l, i) => {
      const kind = l.L.kind;
      if (kind === 'attention') return null;
      const channels = kind === 'shortconv' ? c.dim : (2 * c.ssm_k_heads + nv) * Sd;
      const sizes = [(c.conv_kernel - 1) * channels];
      if (kind === 'shortconv') {
        projW = Math.max(projW, 3 * c.dim);          // B | C | x
        mixW = Math.max(mixW, c.dim);
      } else {
        projW = Math.max(projW, channels + vd + 2 * nv); // q k v | z | α | β
        mixW = Math.max(mixW, channels);
        mix2W = Math.max(mix2W, vd);
        sizes.push(nv * Sd * Sd);
      }
      const make = (what) => sizes.map((n, k) => f(n, `${k ? 'delta rule' : 'conv'} state ${i}${what}`));
      return { channels, bufs: make(''), snaps: Array.from({ length: STATE_SNAPSHOTS }, (_, slot) => make(` snapshot ${slot}`)) };
    });
    this.stateBytes = this.state.reduce((a, st) => a + (st ? st.bufs.reduce((b, buf) => b + buf.size, 0) : 0), 0);
    if (projW) this.proj = f(B * projW, 'mixer projections');
    if (mixW) this.mix = f(B * mixW, 'convolution output');
    if (mix2W) this.mix2 = f(B * mix2W, 'delta rule output');
  }

  async #build(heap) {
    const d = this.device, c = this.c, t = this.t, B = this.B;
    const S = GPUBufferUsage.STORAGE, CD = GPUBufferUsage.COPY_DST, CS = GPUBufferUsage.COPY_SRC;
    await checked(d, 'uploading the model', async () => {
      // the model's vectors (norm weights, biases) in one buffer
      const vecs = [];
      const vecOff = new Map();
      let nVec = 0;
      const addVec = (v) => {
        if (!v) return -1;
        if (!vecOff.has(v.ptr)) {
          vecOff.set(v.ptr, nVec);
          vecs.push([v.ptr, v.n, nVec]);
          nVec += v.n;
        }
        return vecOff.get(v.ptr);
      };
      const layers = t.layers.map((L) => ({
        L,
        attn_norm: addVec(L.attn_norm), bq: addVec(L.bq), bk: addVec(L.bk), bv: addVec(L.bv),
        q_norm: addVec(L.attn_q_norm), k_norm: addVec(L.attn_k_norm), attn_post: addVec(L.attn_post_norm),
        ffn_norm: addVec(L.ffn_norm), ffn_post: addVec(L.ffn_post_norm),
        conv_w: addVec(L.conv_w), dn_dt: addVec(L.dn_dt), dn_a: addVec(L.dn_a), dn_norm: addVec(L.dn_norm),
      }));
      const outNorm = addVec(t.output_norm);
      const vecData = new Float32Array(Math.max(1, nVec));
      const h = heap();
      for (const [ptr, n, off] of vecs) vecData.set(new Float32Array(h.buffer, h.byteOffset + ptr, n), off);
      this.vectors = bufferFrom(d, new Uint8Array(vecData.buffer), S, 'vectors');
      this.buffers.push(this.vectors);

      const uploaded = new Map(); // by place in the file: a tied output shares the embedding's upload
      const weight = (name, w) => {
        const key = `${w.outside ? `${w.part}:${w.offset}` : w.ptr}:${w.rows}`;
        if (!uploaded.has(key)) {
          uploaded.set(key, this.#uploadWeight(name, w));
          this.onUploaded(w);
        }
        return uploaded.get(key);
      };
      for (const [i, l] of layers.entries())
        for (const n of LAYER_MATRICES) if (l.L[n]) l[n] = weight(`blk.${i}.${n}`, l.L[n]);
      this.output = weight('output', t.output);
      this.layers = layers;
      this.outNorm = outNorm;

      // activations of one batch, the KV cache, the readback
      const qd = c.q_dim, kvd = this.kvDim, dim = c.dim, hid = this.hidStride;
      const f = (n, label, extra = 0) => this.#buffer(4 * n, S | CD | CS | extra, label);
      this.x = f(B * dim, 'x');
      this.xn = f(B * dim, 'xn');
      this.q = f(B * qd, 'q');
      this.att = f(B * qd, 'att');
      this.y = f(B * dim, 'y');
      this.g = f(B * hid, 'gate');
      this.u = f(B * hid, 'up');
      this.hn = f(B * dim, 'head rows');
      this.logitRows = Math.max(1, Math.min(B, Math.floor(this.limit / (4 * c.n_vocab))));
      this.logits = f(this.logitRows * c.n_vocab, 'logits');
      this.readback = this.#buffer(4 * this.logitRows * c.n_vocab, GPUBufferUsage.MAP_READ | CD, 'readback');
      this.rope = f(2 * 2 * B * Math.max(1, this.half), 'rope tables');
      const attention = (l) => l.L.kind === 'attention';
      // the cache in F16, two halves per word (rope.wgsl stores the batch's new rows, kn and vn, there)
      this.kc = layers.map((l, i) => (attention(l) ? f((this.nCtx * kvd) / 2, `k cache ${i}`) : null));
      this.vc = layers.map((l, i) => (attention(l) ? f((this.nCtx * kvd) / 2, `v cache ${i}`) : null));
      this.kn = f(B * kvd, 'new keys');
      this.vn = f(B * kvd, 'new values');
      this.#recurrentBuffers(f);
      this.step = this.#buffer(16, GPUBufferUsage.UNIFORM | CD, 'step');
    });
    this.kvBytes = 2 * this.nCtx * this.kvDim * 2 * this.kc.filter((b) => b).length;

    // pipelines
    const s = await shaders();
    const types = new Set([...this.layers.flatMap((l) => LAYER_MATRICES.filter((n) => l[n]).map((n) => l[n].type)), this.output.type]);
    this.pipes = { matmul: new Map() };
    for (const ty of types) this.pipes.matmul.set(ty, await makePipeline(d, await matmulSource(ty), this.matmulEntry, `matmul ${GPU_TYPES.get(ty)}`));
    this.pipes.matmulMv = new Map();     // by type: the f32 one-token kernel
    this.pipes.matmulMvQ8 = new Map();   // by type: its int8 variant (the _q8 decode kernels)
    this.pipes.matmulGlu = new Map();    // by type
    this.pipes.matmulMv3 = new Map();    // by the types of q, k and v: 'q,k,v'
    if (this.decodeKernel !== 'rows') {
      const sg = this.decodeKernel.endsWith('_sg') ? '_sg' : '';
      const q8 = this.decodeKernel.includes('_q8');
      // the int8 kernels take products whose matrices are all quantized and whose rows fit
      // mv_quantize's workgroup memory; the others stay in f32
      this.int8 = (...ws) => q8 && ws.every((w) => Q8_TYPES.has(w.type) && w.cols <= MV_Q8_COLS);
      const label = (ty) => `matmul ${GPU_TYPES.get(ty)}`;
      for (const ty of types) {
        const code = await matmulSource(ty, { subgroups: !!sg, int8: q8 && Q8_TYPES.has(ty) });
        this.pipes.matmulMv.set(ty, await makePipeline(d, code, `main_mv${sg}`, `${label(ty)} ${this.decodeKernel}`));
        if (q8 && Q8_TYPES.has(ty)) this.pipes.matmulMvQ8.set(ty, await makePipeline(d, code, `main_mv_q8${sg}`, `${label(ty)} int8 ${this.decodeKernel}`));
        const gate = this.layers.find((l) => l.w_gate?.type === ty)?.w_gate;
        if (gate) this.pipes.matmulGlu.set(ty, await makePipeline(d, code, `main_mv_glu${this.int8(gate) ? '_q8' : ''}${sg}`, `${label(ty)} glu ${this.decodeKernel}`));
      }
      for (const l of this.layers) {
        const key = qkvKey(l);
        if (key && !this.c.attn_out_gate && !this.pipes.matmulMv3.has(key)) {
          const int8 = this.int8(l.wq, l.wk, l.wv);
          const code = await matmulSource(l.wq.type, { subgroups: !!sg, w2: l.wk.type, w3: l.wv.type, int8 });
          this.pipes.matmulMv3.set(key, await makePipeline(d, code, `main_mv3${int8 ? '_q8' : ''}${sg}`, `matmul q,k,v ${key} ${this.decodeKernel}`));
        }
      }
    }
    this.pipes.norm = await makePipeline(d, s.norm, 'main', 'norm');
    this.pipes.normInPlace = await makePipeline(d, s.norm, 'in_place', 'norm in place');
    this.pipes.rope = await makePipeline(d, s.rope, 'main', 'rope');
    this.pipes.attention = await makePipeline(d, s.attention, 'main', 'attention');
    if (this.decodeKernel !== 'rows') {
      // one token: attention.wgsl's split_attend over chunks of ATT_SPLIT positions, then split_reduce
      this.pipes.attSplit = await makePipeline(d, s.attention, 'split_attend', 'attention split');
      this.pipes.attReduce = await makePipeline(d, s.attention, 'split_reduce', 'attention reduce');
      this.attPart = this.#buffer(c.n_heads * Math.ceil(this.nCtx / ATT_SPLIT) * (c.head_dim + 2) * 4, GPUBufferUsage.STORAGE, 'attention partials');
    }
    this.pipes.glu = await makePipeline(d, s.elementwise, 'glu', 'glu');
    this.pipes.residual = await makePipeline(d, s.elementwise, 'residual', 'residual');
    this.pipes.logits = await makePipeline(d, s.elementwise, 'logits', 'logits');
    if (this.recurrent || c.attn_out_gate)
      for (const e of ['conv', 'l2norm', 'deltanet', 'gated_norm', 'split_q', 'out_gate']) this.pipes[e] = await makePipeline(d, s.recurrent, e, e);
    this.pipes.topk = await makePipeline(d, s.topk, 'main', 'topk');
    await checked(d, 'the top-k buffers', () => this.#topKBuffers());
    await checked(d, 'building the dispatch plan', () => this.#plan());
  }

  // ---- the plan: every dispatch of one batch, its bind group made once ----

  #plan() {
    const c = this.c, d = this.device;
    const params = [];                 // each op's uniforms (an ArrayBuffer), one UNIFORM_SLOT apart
    const ops = [];                    // dispatches {pipe, entries, groups(n_tok, n_out), one: the dispatches of a one-token batch}
    const uniform = (words) => {
      const off = params.length * UNIFORM_SLOT;
      params.push(words);
      return off;
    };
    const u32f32 = (spec) => {
      // spec: [value, 'u' (u32) | 'f' (f32)] per field
      const buf = new ArrayBuffer(spec.length * 4);
      const dv = new DataView(buf);
      spec.forEach(([v, k], i) => (k === 'f' ? dv.setFloat32(i * 4, v, true) : dv.setUint32(i * 4, v, true)));
      return buf;
    };
    // entries name buffers, 'step', a params slot, or null (a binding the entry point does not
    // use); the bind groups are made below, once the params buffer exists
    const op = (pipe, entries, groups, extra = {}) => ops.push({ pipe, entries, groups, ...extra });
    const P = (size, off) => ({ kind: 'params', off, size });

    // testHooks.perturb: one matrix product made wrong on purpose (a faulty GPU, for tests)
    const perturbed = this.hooks.perturb === 'matmul-scale' ? this.layers[0]?.w_down : null;
    // `at`: where the product's rows start in each Y row (a part of the rows of several products)
    const mm = (w, X, Y, xStride, yStride, { bias = -1, acc = false, scale = 1, head = false, at = 0 } = {}) => {
      if (w === perturbed && acc) scale *= 1.25;
      for (const ch of w.chunks) {
        const flags = (bias >= 0 ? 1 : 0) | (acc ? 2 : 0) | (head ? 4 : 0);
        const off = uniform(matmulParams({ rows: ch.rows, cols: w.cols, rowBytes: w.rowBytes, row0: at + ch.row0, xStride, yStride, flags, scale, bias: Math.max(0, bias) }));
        op(this.pipes.matmul.get(w.type), [ch.buffer, X, Y, P(MATMUL_PARAMS, off), 'step', this.vectors],
          this.matmulEntry === 'main'
            ? (n, nOut) => [Math.ceil(ch.rows / WG), 1, Math.ceil((head ? nOut : n) / TOKEN_TILE)]
            : this.matmulEntry === 'main_gemm'
              ? (n, nOut) => [Math.ceil(ch.rows / GEMM_ROWS), Math.ceil((head ? nOut : n) / GEMM_TOKS), 1]
              : (n, nOut) => [Math.min(ch.rows, ROWS_PER_Y), Math.ceil(ch.rows / ROWS_PER_Y), Math.ceil((head ? nOut : n) / TOKEN_TILE)],
          { weightBytes: ch.bytes, head, weights: ch.rows * w.cols });
        const q8 = !!this.int8?.(w);
        const mv = (q8 ? this.pipes.matmulMvQ8 : this.pipes.matmulMv).get(w.type);
        if (mv) {
          ops[ops.length - 1].q8 = q8;
          // the one-token kernel beside it, taken when the op has one token (encode)
          const g = Math.ceil(ch.rows / MV_ROWS);
          // (main_mv reads W2 and W3 in main_mv3's branches: bound to W, never read)
          ops[ops.length - 1].one = [{ pipe: mv, entries: [ch.buffer, X, Y, P(MATMUL_PARAMS, off), null, this.vectors, ch.buffer, ch.buffer], groups: () => mvGroups(g) }];
        }
      }
    };
    const norm = (X, Y, wOff, n, groups, stride, { head = false } = {}) => {
      const off = uniform(u32f32([[n, 'u'], [groups, 'u'], [stride, 'u'], [wOff, 'u'], [c.rms_eps, 'f'], [head ? 1 : 0, 'u'], [0, 'u'], [0, 'u']]));
      if (X === Y) op(this.pipes.normInPlace, [null, Y, this.vectors, P(32, off), null], (nt, nOut) => [(head ? nOut : nt) * groups, 1, 1]);
      else op(this.pipes.norm, [X, Y, this.vectors, P(32, off), 'step'], (nt, nOut) => [(head ? nOut : nt) * groups, 1, 1]);
    };
    const elementwise = (pipe, A, Bb, n, stride, { act = 0, scale = 1, cap = 0, head = false } = {}) => {
      const off = uniform(u32f32([[n, 'u'], [stride, 'u'], [act, 'u'], [head ? 1 : 0, 'u'], [scale, 'f'], [cap, 'f'], [0, 'u'], [0, 'u']]));
      const groups = (nt, nOut) => {
        const g = Math.ceil(((head ? nOut : nt) * n) / WG);
        return [Math.min(g, GROUPS_PER_Y), Math.ceil(g / GROUPS_PER_Y), 1];
      };
      op(pipe, [A, Bb, P(32, off), 'step'], groups);
    };
    const ownSwaTable = c.n_swa > 0 && (c.rope_base_swa !== c.rope_base || c.rope_scale_swa !== c.rope_scale);
    // the queries (Q, stride floats per token) rotated, and the new keys and values (kn, vn) into
    // layer i's cache, the keys rotated: one dispatch (rope.wgsl)
    const rope = (Q, i, stride, sliding, rotate) => {
      const table = sliding && ownSwaTable ? 2 * this.B * this.half : 0;
      const ropeDim = rotate ? c.rope_dim : 0;
      const off = uniform(u32f32([[c.n_heads, 'u'], [c.head_dim, 'u'], [ropeDim, 'u'], [c.rope_neox ? 1 : 0, 'u'], [stride, 'u'], [table, 'u'], [c.n_kv_heads, 'u'], [this.kvDim, 'u']]));
      op(this.pipes.rope, [Q, this.rope, P(32, off), 'step', this.kc[i], this.kn, this.vc[i], this.vn],
        (nt) => [Math.ceil((nt * (c.n_heads * (ropeDim / 2) + this.kvDim)) / WG), 1, 1]);
    };

    const dim = c.dim, qd = c.q_dim, kvd = this.kvDim, hid = this.hidStride;
    // recurrent.wgsl's steps: fields of its Params by name, one invocation per `count` items
    const rec = (pipe, entries, fields, count) => {
      const f = { n: 0, taps: 0, in_stride: 0, out_stride: 0, mode: 0, w_off: 0, w_off2: 0, in_off: 0, k_heads: 0, size: 0, eps: 0, mix_stride: 0, ...fields };
      const off = uniform(u32f32(Object.entries(f).map(([k, v]) => [v, k === 'eps' ? 'f' : 'u'])));
      const e = [null, null, null, null, P(48, off), 'step', null];
      for (const [b, buf] of Object.entries(entries)) e[b] = buf;
      op(this.pipes[pipe], e, (nt) => {
        const g = Math.ceil(count(nt) / WG);
        return [Math.min(g, GROUPS_PER_Y), Math.ceil(g / GROUPS_PER_Y), 1];
      });
    };
    const nv = c.ssm_v_heads, nk = c.ssm_k_heads, Sd = c.ssm_state, vd = nv * Sd;
    // lfm2: B | C | x = in_proj(xn); y = C ⊙ conv(B ⊙ x) (recurrent.c shortconv_block)
    const shortconv = (l, i, input) => {
      mm(l.sc_in, input, this.proj, dim, 3 * dim);
      rec('conv', { 0: this.proj, 1: this.mix, 2: this.state[i].bufs[0], 3: this.vectors }, { n: dim, taps: c.conv_kernel, in_stride: 3 * dim, out_stride: dim, mode: 0, w_off: l.conv_w }, () => dim);
      this.#blockOut(mm, norm, elementwise, l.sc_out, this.mix, dim, l.attn_post);
    };
    // qwen35: q k v | z | α | β = projections of xn; q k v through the convolution and SiLU; q, k
    // L2-normed; the delta rule; each head's output normed and gated (recurrent.c deltanet_block)
    const deltanet = (l, i, input) => {
      const ch = this.state[i].channels, Pw = ch + vd + 2 * nv;
      mm(l.dn_qkv, input, this.proj, dim, Pw);
      mm(l.dn_gate, input, this.proj, dim, Pw, { at: ch });
      mm(l.dn_alpha, input, this.proj, dim, Pw, { at: ch + vd });
      mm(l.dn_beta, input, this.proj, dim, Pw, { at: ch + vd + nv });
      rec('conv', { 0: this.proj, 1: this.mix, 2: this.state[i].bufs[0], 3: this.vectors }, { n: ch, taps: c.conv_kernel, in_stride: Pw, out_stride: ch, mode: 1, w_off: l.conv_w }, () => ch);
      rec('l2norm', { 1: this.mix }, { n: 2 * nk, out_stride: ch, size: Sd, eps: c.rms_eps }, (nt) => nt * 2 * nk);
      rec('deltanet', { 0: this.proj, 1: this.mix2, 2: this.state[i].bufs[1], 3: this.vectors, 6: this.mix },
        { n: nv, in_stride: Pw, out_stride: vd, w_off: l.dn_dt, w_off2: l.dn_a, in_off: ch + vd, k_heads: nk, size: Sd, mix_stride: ch }, () => vd);
      rec('gated_norm', { 0: this.proj, 1: this.mix2, 3: this.vectors }, { n: nv, in_stride: Pw, out_stride: vd, w_off: l.dn_norm, in_off: ch, size: Sd, eps: c.rms_eps }, (nt) => nt * nv);
      this.#blockOut(mm, norm, elementwise, l.dn_out, this.mix2, vd, l.attn_post);
    };

    // softmax(q·Kᵀ)·V with the cache; qwen35's attn_q holds each head's query then its output gate.
    // normOp: the index of the norm before it (its output is input), -1 without one
    const attention = (l, i, input, normOp) => {
      const L = l.L;
      const first = ops.length;
      if (c.attn_out_gate) {
        mm(l.wq, input, this.proj, dim, 2 * qd);
        rec('split_q', { 0: this.proj, 1: this.q }, { n: qd, size: c.head_dim }, (nt) => nt * qd);
      } else {
        mm(l.wq, input, this.q, dim, qd, { bias: l.bq });
      }
      // the batch's new keys and values, normed and rotated there, then stored in the cache (rope)
      mm(l.wk, input, this.kn, dim, kvd, { bias: l.bk });
      mm(l.wv, input, this.vn, dim, kvd, { bias: l.bv });
      const mv3 = this.pipes.matmulMv3.get(qkvKey(l));
      if (mv3 && !c.attn_out_gate) {
        // one token: q, k and v in one dispatch (matmul.wgsl main_mv3) from x, the norm folded in
        const fold = normOp >= 0;
        const g = [l.wq, l.wk, l.wv].reduce((a, w) => a + Math.ceil(w.rows / MV_ROWS), 0);
        const off = uniform(matmulParams({
          rows: qd, cols: dim, rowBytes: l.wq.rowBytes, xStride: dim, yStride: qd,
          flags: (l.bq >= 0 ? 1 : 0) | (fold ? 32 : 0) | (l.bk >= 0 ? 64 : 0) | (l.bv >= 0 ? 128 : 0), bias: Math.max(0, l.bq),
          normOff: fold ? l.attn_norm : 0, eps: c.rms_eps, rows2: kvd, rows3: kvd, rowBytes2: l.wk.rowBytes, rowBytes3: l.wv.rowBytes,
          bias2: Math.max(0, l.bk), bias3: Math.max(0, l.bv),
        }));
        const w = (m) => m.chunks[0].buffer;
        for (let k = 0; k < 3; k++) ops[first + k].q8 = this.int8(l.wq, l.wk, l.wv);
        ops[first].one = [{ pipe: mv3, entries: [w(l.wq), fold ? this.x : input, this.q, P(MATMUL_PARAMS, off), null, this.vectors, w(l.wk), w(l.wv), this.kn, this.vn], groups: () => mvGroups(g) }];
        ops[first + 1].one = [];
        ops[first + 2].one = [];
        if (fold) ops[normOp].one = [];
      }
      if (c.qk_norm === 'per_head') {
        norm(this.q, this.q, l.q_norm, c.head_dim, c.n_heads, qd);
        norm(this.kn, this.kn, l.k_norm, c.head_dim, c.n_kv_heads, kvd);
      } else if (c.qk_norm === 'full') {
        norm(this.q, this.q, l.q_norm, qd, 1, qd);
        norm(this.kn, this.kn, l.k_norm, kvd, 1, kvd);
      }
      rope(this.q, i, qd, L.sliding, L.rotate);
      const aOff = uniform(u32f32([[c.n_heads, 'u'], [c.n_kv_heads, 'u'], [c.head_dim, 'u'], [qd, 'u'], [kvd, 'u'], [L.sliding ? c.n_swa : 0, 'u'], [c.attn_scale, 'f'], [c.attn_softcap, 'f']]));
      op(this.pipes.attention, [this.q, this.kc[i], this.vc[i], this.att, P(32, aOff), 'step'], (nt) => [nt * c.n_heads, 1, 1]);
      if (this.pipes.attSplit) {
        // one token: past ATT_SPLIT positions seen, they are split over workgroups of ATT_SPLIT and
        // combined; up to it, main's one workgroup per head (the dispatches that do not apply are empty)
        const window = L.sliding ? c.n_swa : 0;
        const chunks = (pos) => Math.floor((pos - (window > 0 && pos >= window ? pos - window + 1 : 0)) / ATT_SPLIT) + 1;
        const entries = [this.q, this.kc[i], this.vc[i], this.att, P(32, aOff), 'step'];
        ops[ops.length - 1].one = [
          { pipe: this.pipes.attention, entries, groups: (pos) => [chunks(pos) === 1 ? c.n_heads : 0, 1, 1] },
          { pipe: this.pipes.attSplit, entries: [this.q, this.kc[i], this.vc[i], null, P(32, aOff), 'step', this.attPart], groups: (pos) => [chunks(pos) > 1 ? c.n_heads * chunks(pos) : 0, 1, 1] },
          { pipe: this.pipes.attReduce, entries: [null, null, null, this.att, P(32, aOff), 'step', this.attPart], groups: (pos) => [chunks(pos) > 1 ? c.n_heads : 0, 1, 1] },
        ];
      }
      if (c.attn_out_gate) rec('out_gate', { 0: this.proj, 1: this.att }, { n: qd, size: c.head_dim }, (nt) => nt * qd);
      this.#blockOut(mm, norm, elementwise, l.wo, this.att, qd, l.attn_post);
    };

    this.layers.forEach((l, i) => {
      const L = l.L;
      let input = this.x, normOp = -1;
      if (l.attn_norm >= 0) {
        normOp = ops.length;
        norm(this.x, this.xn, l.attn_norm, dim, 1, dim);
        input = this.xn;
      }
      if (L.kind === 'shortconv') shortconv(l, i, input);
      else if (L.kind === 'deltanet') deltanet(l, i, input);
      else attention(l, i, input, normOp);
      let fIn = this.x, ffnNormOp = -1;
      if (l.ffn_norm >= 0) {
        ffnNormOp = ops.length;
        norm(this.x, this.xn, l.ffn_norm, dim, 1, dim);
        fIn = this.xn;
      }
      const first = ops.length;
      mm(l.w_gate, fIn, this.g, dim, hid);
      mm(l.w_up, fIn, this.u, dim, hid);
      elementwise(this.pipes.glu, this.g, this.u, c.hidden_dim, hid, { act: c.act === 'gelu_tanh' ? 1 : 0 });
      const glu = this.pipes.matmulGlu.get(l.w_gate.type);
      if (glu && l.w_up.type === l.w_gate.type && l.w_gate.chunks.length === 1 && l.w_up.chunks.length === 1) {
        // one token: gate, up and the GLU in one dispatch (matmul.wgsl main_mv_glu) from x, the
        // norm folded in
        const rows = l.w_gate.rows, g = Math.ceil(rows / 2), fold = ffnNormOp >= 0;
        const off = uniform(matmulParams({ rows, cols: l.w_gate.cols, rowBytes: l.w_gate.rowBytes, xStride: dim, yStride: hid,
          flags: (c.act === 'gelu_tanh' ? 16 : 0) | (fold ? 32 : 0), normOff: fold ? l.ffn_norm : 0, eps: c.rms_eps }));
        ops[first].q8 = ops[first + 1].q8 = this.int8(l.w_gate);
        ops[first].one = [{ pipe: glu, entries: [l.w_gate.chunks[0].buffer, this.x, this.g, P(MATMUL_PARAMS, off), null, this.vectors, l.w_up.chunks[0].buffer], groups: () => mvGroups(g) }];
        ops[first + 1].one = [];
        ops[first + 2].one = [];
        if (fold) ops[ffnNormOp].one = [];
      }
      this.#blockOut(mm, norm, elementwise, l.w_down, this.g, hid, l.ffn_post);
    });
    this.layerOps = ops.length;
    // the output head on the rows asked for (n_out from first_out): norm, product, scale and cap
    norm(this.x, this.hn, this.outNorm, dim, 1, dim, { head: true });
    mm(this.output, this.hn, this.logits, dim, c.n_vocab, { head: true });
    if (c.logit_scale !== 1 || c.final_softcap > 0)
      elementwise(this.pipes.logits, this.logits, null, c.n_vocab, c.n_vocab, { scale: c.logit_scale, cap: c.final_softcap, head: true });
    this.ops = ops;

    // the uniforms, written once
    this.params = this.#buffer(Math.max(1, params.length) * UNIFORM_SLOT, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'params');
    const all = new Uint8Array(Math.max(1, params.length) * UNIFORM_SLOT);
    params.forEach((buf, k) => all.set(new Uint8Array(buf), k * UNIFORM_SLOT));
    d.queue.writeBuffer(this.params, 0, all);
    const bindings = (list) => {
      const entries = [];
      list.forEach((e, binding) => {
        if (e === null) return;
        if (e === 'step') entries.push({ binding, resource: { buffer: this.step } });
        else if (e.kind === 'params') entries.push({ binding, resource: { buffer: this.params, offset: e.off, size: e.size } });
        else entries.push({ binding, resource: { buffer: e } });
      });
      return entries;
    };
    for (const o of ops) {
      if (!o.pipe) continue;
      o.bindGroup = d.createBindGroup({ layout: o.pipe.getBindGroupLayout(0), entries: bindings(o.entries) });
      for (const a of o.one || []) a.bindGroup = d.createBindGroup({ layout: a.pipe.getBindGroupLayout(0), entries: bindings(a.entries) });
    }
  }

  /** A block's output Y = W·in added to the residual stream: straight into x when there is no
   * post norm, else into y, normed there, then added (× the residual scale). */
  #blockOut(mm, norm, elementwise, w, input, inStride, postNorm) {
    const c = this.c, dim = c.dim;
    if (postNorm < 0) {
      mm(w, input, this.x, inStride, dim, { acc: true, scale: c.residual_scale });
      return;
    }
    mm(w, input, this.y, inStride, dim);
    norm(this.y, this.y, postNorm, dim, 1, dim);
    elementwise(this.pipes.residual, this.x, this.y, dim, dim, { scale: c.residual_scale });
  }

  // ---- running a batch ----

  /** cos/sin of every rotated pair for n positions from pos0, as src/forward.c's rope_tables. */
  #ropeTables(pos0, n) {
    const c = this.c, half = this.half, B = this.B;
    const out = new Float32Array(2 * 2 * B * Math.max(1, half));
    const factors = this.ropeFactors;
    const fill = (base, scale, at) => {
      const thetaScale = Math.fround(Math.pow(base, Math.fround(-2 / c.rope_dim)));
      for (let t = 0; t < n; t++) {
        let theta = Math.fround(pos0 + t);
        for (let i = 0; i < half; i++) {
          const ff = factors ? factors[i] : 1;
          const angle = Math.fround(scale * Math.fround(theta / ff));
          out[at + t * half + i] = Math.fround(Math.fround(Math.cos(angle)) * c.rope_attn_factor);
          out[at + n * half + t * half + i] = Math.fround(Math.fround(Math.sin(angle)) * c.rope_attn_factor);
          theta = Math.fround(theta * thetaScale);
        }
      }
    };
    fill(c.rope_base, c.rope_scale, 0);
    if (c.n_swa > 0) fill(c.rope_base_swa, c.rope_scale_swa, 2 * B * half);
    return out;
  }

  /** Frequency divisors in effect (Llama 3's rope_freqs, phi3's short or long set for this
   * context), read once from the engine's memory. */
  setRopeFactors(heap) {
    const t = this.t;
    let v = t.rope_freqs;
    if (t.rope_factors_short) v = this.nCtx > this.c.n_ctx_orig ? t.rope_factors_long : t.rope_factors_short;
    const h = heap();
    this.ropeFactors = v ? Float32Array.from(new Float32Array(h.buffer, h.byteOffset + v.ptr, v.n)) : null;
  }

  #checkLost() {
    if (this.lostReason !== null) throw new GpuError(`the GPU device was lost: ${this.lostReason}`);
  }

  /** The embeddings of tokens, dequantized by the engine and scaled (as src/forward.c does). */
  embed(tokens) {
    const c = this.c, e = this.t.tok_embd;
    const x = new Float32Array(tokens.length * c.dim);
    tokens.forEach((tok, i) => {
      if (!(tok >= 0 && tok < c.n_vocab)) throw new GpuError(`token id ${tok} out of range (vocabulary of ${c.n_vocab})`, 'E_INVALID_ARG');
      x.set(this.rowsOf(e, tok, 1), i * c.dim);
    });
    if (c.embd_scale !== 1) for (let i = 0; i < x.length; i++) x[i] *= c.embd_scale;
    return x;
  }

  /** evaluate() on token ids. */
  eval(tokens, pos0, allLogits, topK = 0) {
    return this.evaluate(this.embed(tokens), tokens.length, pos0, allLogits, topK);
  }

  /**
   * Evaluates tokens at positions pos0… (their embeddings given: Float32Array, n × dim, already
   * scaled), keeping their K/V. Returns the logits of every row (allLogits) or of the last,
   * as one Float32Array of rows × n_vocab. With topK = k (1 ≤ k ≤ TOPK_MAX, k < n_vocab, not
   * allLogits) only the last row's k best logits are read back: {ids: Int32Array, values:
   * Float32Array}, best first (logit descending, ties by lower id, as the C sampler ranks);
   * a row holding Inf or NaN is read back whole instead (a Float32Array, as without topK).
   */
  async evaluate(embeddings, n, pos0, allLogits, topK = 0) {
    this.#checkLost();
    const c = this.c, d = this.device, B = this.B, V = c.n_vocab;
    if (pos0 + n > this.nCtx) throw new GpuError(`${n} tokens do not fit in the context: ${pos0} of ${this.nCtx} positions used`, 'E_CONTEXT_FULL');
    // the KV cache takes any position (later ones are overwritten); a recurrent state goes on
    // from where it is, or starts again from position 0
    if (this.recurrent && pos0 !== this.nPast) {
      if (pos0 !== 0)
        throw new GpuError(`the recurrent state holds ${this.nPast} positions: evaluating from ${pos0} needs a trim to a snapshot taken there`, 'E_INVALID_ARG');
      this.#clearState();
    }
    const rows = allLogits ? n : 1;
    const sparse = !allLogits && Number.isInteger(topK) && topK >= 1 && topK <= TOPK_MAX && topK < V;
    let out = null, outRow = 0, top = null;
    for (let done = 0; done < n; ) {
      const nt = Math.min(B, n - done);
      const last = done + nt === n;
      // output rows of this chunk: all of them, or its last when it is the last chunk
      const wantRows = allLogits ? nt : last ? 1 : 0;
      d.queue.writeBuffer(this.x, 0, embeddings, done * c.dim, nt * c.dim);
      d.queue.writeBuffer(this.rope, 0, this.#ropeTables(pos0 + done, nt));
      let first = allLogits ? 0 : nt - 1, layers = true;
      do {
        // a vocabulary too large for all rows in one logits buffer takes several head passes
        const nOut = wantRows ? Math.min(this.logitRows, nt - first) : 0;
        d.queue.writeBuffer(this.step, 0, new Uint32Array([nt, pos0 + done, nOut, first]));
        // one compute pass: the layers, the output head, the top-k ranking; then the readback copies
        const enc = d.createCommandEncoder();
        if (nOut && sparse) this.#topKPrepare(enc, topK);
        const pass = enc.beginComputePass();
        if (layers) this.#encode(pass, this.ops.slice(0, this.layerOps), nt, nOut, pos0 + done);
        if (nOut) this.#encode(pass, this.ops.slice(this.layerOps), nt, nOut, pos0 + done);
        if (nOut && sparse) this.#encodeTopK(pass, topK);
        pass.end();
        this.stats.computePasses++;
        if (nOut && sparse) this.#topKCopies(enc, topK);
        else if (nOut) enc.copyBufferToBuffer(this.logits, 0, this.readback, 0, nOut * V * 4);
        d.queue.submit([enc.finish()]);
        this.stats.submissions++;
        if (this.hooks.submitDelayMs > 0) await new Promise((r) => setTimeout(r, this.hooks.submitDelayMs));
        if (nOut && sparse) {
          top = await this.#readTopK(topK);
          if (!top) {
            // Inf or NaN in the row: the row itself, so that it is seen as it is
            const whole = d.createCommandEncoder();
            whole.copyBufferToBuffer(this.logits, 0, this.readback, 0, nOut * V * 4);
            d.queue.submit([whole.finish()]);
            this.stats.submissions++;
          }
        }
        if (nOut && !top) {
          await this.readback.mapAsync(GPUMapMode.READ, 0, nOut * V * 4).catch((e) => {
            this.#checkLost();
            throw new GpuError(`reading the logits back: ${e.message}`);
          });
          out ??= new Float32Array(rows * V);
          out.set(new Float32Array(this.readback.getMappedRange(0, nOut * V * 4)), outRow * V);
          this.readback.unmap();
          this.stats.readbackBytes += nOut * V * 4;
          outRow += nOut;
        }
        this.#checkLost();
        layers = false;
        first += nOut;
      } while (wantRows && first < nt);
      done += nt;
      this.nPast = pos0 + done;
    }
    this.stats.tokens += n;
    // testHooks.nanAtStep: this evaluation's logits made NaN (the sparse readback's too)
    if (++this.evaluations === this.hooks.nanAtStep) {
      if (top) top.values[top.values.length - 1] = NaN;
      else out[out.length - 1] = NaN;
    }
    return top || out;
  }

  // ---- the top-k readback (topk.wgsl) ----

  /** Two lists of (key, id) entries that the passes write in turn, the Inf/NaN count, the
   * readback, each pass's uniforms; the bind groups per pass are made once. */
  #topKBuffers() {
    const V = this.c.n_vocab, S = GPUBufferUsage.STORAGE, CS = GPUBufferUsage.COPY_SRC, CD = GPUBufferUsage.COPY_DST;
    const listBytes = 8 * Math.ceil(V / TOPK_SEGMENT) * TOPK_MAX;
    this.topkLists = [this.#buffer(listBytes, S | CS, 'top-k list a'), this.#buffer(listBytes, S | CS, 'top-k list b')];
    this.topkCount = this.#buffer(TOPK_HEADER, S | CS | CD, 'top-k Inf/NaN count');
    this.topkReadback = this.#buffer(TOPK_HEADER + 8 * TOPK_MAX, GPUBufferUsage.MAP_READ | CD, 'top-k readback');
    const passes = this.#topKPasses(TOPK_MAX).length; // the most passes any k takes
    this.topkParams = this.#buffer(passes * UNIFORM_SLOT, GPUBufferUsage.UNIFORM | CD, 'top-k params');
    this.topkGroups = Array.from({ length: passes }, (_, i) => this.device.createBindGroup({
      layout: this.pipes.topk.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: this.logits } },
        { binding: 1, resource: { buffer: this.topkLists[(i + 1) % 2] } },
        { binding: 2, resource: { buffer: this.topkLists[i % 2] } },
        { binding: 3, resource: { buffer: this.topkParams, offset: i * UNIFORM_SLOT, size: 16 } },
        { binding: 4, resource: { buffer: this.topkCount } },
      ],
    }));
    this.topkParamsK = 0;
  }

  /** The passes for k: each sorts segments of its input and keeps k per segment, until one is left. */
  #topKPasses(k) {
    const passes = [];
    for (let n = this.c.n_vocab; ; ) {
      const groups = Math.ceil(n / TOPK_SEGMENT);
      passes.push({ n, groups, fromRow: passes.length === 0 ? 1 : 0 });
      if (groups === 1) return passes;
      n = groups * k;
    }
  }

  /** After the output head: the last row's k best into the top-k readback (the count first). */
  #topKPrepare(enc, k) {
    const passes = this.#topKPasses(k);
    if (this.topkParamsK !== k) {
      const words = new Uint32Array((passes.length * UNIFORM_SLOT) / 4);
      passes.forEach((p, i) => words.set([p.n, k, p.fromRow, 0], (i * UNIFORM_SLOT) / 4));
      this.device.queue.writeBuffer(this.topkParams, 0, words);
      this.topkParamsK = k;
    }
    enc.clearBuffer(this.topkCount);
  }

  /** The ranking's dispatches, in the batch's compute pass (after #topKPrepare on its encoder). */
  #encodeTopK(pass, k) {
    pass.setPipeline(this.pipes.topk);
    this.#topKPasses(k).forEach((p, i) => {
      pass.setBindGroup(0, this.topkGroups[i]);
      pass.dispatchWorkgroups(p.groups);
      this.stats.dispatches++;
    });
  }

  #topKCopies(enc, k) {
    enc.copyBufferToBuffer(this.topkCount, 0, this.topkReadback, 0, TOPK_HEADER);
    enc.copyBufferToBuffer(this.topkLists[(this.#topKPasses(k).length - 1) % 2], 0, this.topkReadback, TOPK_HEADER, 8 * k);
  }

  /** The k pairs read back ({ids, values}), or null when the row held Inf or NaN. */
  async #readTopK(k) {
    const bytes = TOPK_HEADER + 8 * k;
    await this.topkReadback.mapAsync(GPUMapMode.READ, 0, bytes).catch((e) => {
      this.#checkLost();
      throw new GpuError(`reading the top-k logits back: ${e.message}`);
    });
    const words = new Uint32Array(this.topkReadback.getMappedRange(0, bytes).slice(0));
    this.topkReadback.unmap();
    this.stats.readbackBytes += bytes;
    if (words[0] !== 0) return null;
    const ids = new Int32Array(k), bits = new Uint32Array(k);
    for (let i = 0; i < k; i++) {
      const key = words[TOPK_HEADER / 4 + 2 * i], id = words[TOPK_HEADER / 4 + 2 * i + 1];
      if (id >= this.c.n_vocab) throw new GpuError(`the top-k pass returned token id ${id} (vocabulary of ${this.c.n_vocab})`);
      ids[i] = id;
      bits[i] = key & 0x80000000 ? key & 0x7fffffff : ~key >>> 0; // topk.wgsl order_key, inverted
    }
    return { ids, values: new Float32Array(bits.buffer) };
  }

  /** WICK_OP_TRIM (src/wick.h): the first n positions kept. A recurrent state is zeroed (n = 0)
   * or restored from the snapshot taken at n (the context allows no other trim); snapshots of
   * later positions are forgotten. */
  trim(n) {
    this.#checkLost();
    if (!(Number.isInteger(n) && n >= 0)) throw new GpuError(`cannot keep ${n} positions`, 'E_INVALID_ARG');
    if (this.recurrent && n > this.nPast) throw new GpuError(`cannot keep ${n} positions of the recurrent state's ${this.nPast}`, 'E_INVALID_ARG');
    if (this.recurrent && n !== this.nPast) {
      const slot = this.snapPos.indexOf(n);
      if (n === 0) this.#clearState();
      else if (slot >= 0) this.#copyState(slot, false);
      else throw new GpuError(`cannot cut the recurrent state back to ${n} positions: no snapshot was taken there`, 'E_INVALID_ARG');
    }
    this.snapPos = this.snapPos.map((p) => (p > n ? -1 : p));
    this.nPast = n;
  }

  /** WICK_OP_SNAPSHOT: a copy of the recurrent state as it is now, in slot `slot`. */
  snapshot(slot) {
    this.#checkLost();
    if (!(Number.isInteger(slot) && slot >= 0 && slot < STATE_SNAPSHOTS)) throw new GpuError(`no snapshot slot ${slot}`, 'E_INVALID_ARG');
    if (!this.recurrent) return;
    this.#copyState(slot, true);
    this.snapPos[slot] = this.nPast;
  }

  /** Every recurrent layer's state into snapshot slot `slot` (save) or back from it, queued after
   * the evaluations submitted before. */
  #copyState(slot, save) {
    const enc = this.device.createCommandEncoder();
    for (const st of this.state) {
      if (!st) continue;
      st.bufs.forEach((b, k) => {
        const snap = st.snaps[slot][k];
        if (save) enc.copyBufferToBuffer(b, 0, snap, 0, b.size);
        else enc.copyBufferToBuffer(snap, 0, b, 0, b.size);
      });
    }
    this.device.queue.submit([enc.finish()]);
  }

  #clearState() {
    const enc = this.device.createCommandEncoder();
    for (const st of this.state) if (st) for (const b of st.bufs) enc.clearBuffer(b);
    this.device.queue.submit([enc.finish()]);
  }

  /** Records ops into one compute pass (the KV copies between passes). */
  #encode(pass, ops, nt, nOut, pos) {
    for (const o of ops) {
      const tokens = o.head ? nOut : nt;
      const one = o.one && tokens === 1;
      for (const a of one ? o.one : [o]) {
        const [x, y, z] = one ? a.groups(pos) : o.groups(nt, nOut);
        if (x === 0 || z === 0) continue;
        pass.setPipeline(a.pipe);
        pass.setBindGroup(0, a.bindGroup);
        pass.dispatchWorkgroups(x, y, z);
        this.stats.dispatches++;
      }
      if (o.weightBytes && tokens > 0) {
        this.stats.weightBytesRead += o.weightBytes * (one ? 1 : Math.ceil(tokens / this.tokenTile));
        // f32 activations loaded: each weight's once per token (main, main_wg), once per MV_ROWS rows (main_mv)
        this.stats.activationBytesRead += (one ? 4 / MV_ROWS : 4 * tokens) * o.weights;
        this.stats.weightsRead += o.weights;
      }
    }
  }

  /** Structural figures of one decode step (one token), counted from the plan. */
  structure() {
    let dispatches = 0, weightBytesRead = 0, activationBytes = 0, weights = 0, layerWeightBytes = 0, int8Weights = 0;
    for (const o of this.ops) {
      dispatches++;
      if (o.weightBytes) {
        weightBytesRead += o.weightBytes;
        if (!o.head) layerWeightBytes += o.weightBytes;
        activationBytes += (o.one ? 4 / MV_ROWS : 4) * o.weights;
        weights += o.weights;
        if (o.q8) int8Weights += o.weights;
      }
    }
    return {
      decodeKernel: this.decodeKernel,
      batchEntry: this.matmulEntry,
      batch: this.B,
      // a full batch of a prompt: the layers' weight bytes read per token (the head reads its rows for one)
      prefillWeightBytesPerToken: (layerWeightBytes * Math.ceil(this.B / this.tokenTile)) / this.B,
      layerWeightBytes,
      activationBytesPerWeight: activationBytes / weights,
      // of the weights a decode step reads, the share read by the int8 kernels (the _q8 decode kernels)
      int8WeightShare: int8Weights / weights,
      weightBytes: this.weightBytes,
      weightBytesReadPerToken: weightBytesRead,
      dispatchesPerToken: dispatches,
      kvBytesPerPosition: 2 * this.kvDim * 2 * this.kc.filter((b) => b).length,
      submissionsPerToken: 1,
      readbackBytesPerToken: 4 * this.c.n_vocab,
      buffers: this.buffers.length,
      largestBuffer: Math.max(...this.buffers.map((b) => b.size)),
    };
  }

  /** Bytes of every buffer this forward pass holds on the GPU (weights, KV cache, activations, uniforms). */
  bufferBytes() {
    return this.buffers.reduce((a, b) => a + b.size, 0);
  }

  destroy() {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
  }
}

