/* wasm_glue/gguf-header.js — reads the metadata of a GGUF file from its first bytes, and estimates
 * the memory a model needs (file + KV cache + scratch) against what wasm32 can hold.
 *
 * A plain script with no import/export, so the same file runs as a classic script in the Web
 * Worker (importScripts), as a module under Node, and is imported by wick.mjs on the page; it
 * defines one global, `WickGguf`.
 *
 * Layout per the GGUF spec (ggml's docs/gguf.md), versions 2 and 3:
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv, then n_kv × (string key, u32 type, value),
 *   then the tensor directory and the aligned data. Strings are u64 length + UTF-8 bytes. */
'use strict';
(function (root) {
  const TYPE = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12 };
  const SCALAR_BYTES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  // Arrays longer than this are summarised as {arrayOf, length} unless asked for by key (the
  // vocabulary of a 150k-token model would otherwise be several MB of JS strings).
  const SMALL_ARRAY = 64;
  // A string or array length beyond this is not a real header: the file is damaged.
  const MAX_COUNT = 2 ** 31;

  // wasm32 with -sMAXIMUM_MEMORY=4GB, less what the engine holds besides the model, the KV cache
  // and the scratch estimated below (code, stack, allocator bookkeeping, the JS side's buffers).
  const WASM_MEMORY_LIMIT = 4 * 2 ** 30;
  const ENGINE_RESERVE = 96 * 2 ** 20;

  /** Thrown when the bytes end before the header does: read more and try again. */
  class NeedMoreBytes extends Error {
    constructor(needed) {
      super(`the GGUF header needs more than ${needed} bytes`);
      this.needed = needed;
    }
  }

  /** Whether the first bytes are the GGUF magic. */
  function isGguf(bytes) {
    return bytes.length >= 4 && bytes[0] === 0x47 && bytes[1] === 0x47 && bytes[2] === 0x55 && bytes[3] === 0x46;
  }

  /**
   * Parses the header in `bytes` (a Uint8Array over the start of the file; it may sit on a
   * SharedArrayBuffer). Returns {version, tensorCount, metadata, headerBytes} where metadata maps
   * each key to its value (numbers for integers, BigInt never: u64 values above 2^53 are rounded).
   * Throws NeedMoreBytes when the header runs past the end of `bytes`, Error when it is not GGUF.
   * keepArrays: keys whose arrays are kept whole however long. tensors: also read the tensor
   * directory, adding tensors [{name, type, dims, offset (in the file)}] and dataOffset.
   */
  function parseHeader(bytes, { keepArrays = [], tensors: withTensors = false } = {}) {
    if (bytes.length < 24) throw new NeedMoreBytes(24);
    if (!isGguf(bytes)) throw new Error('not a GGUF file (the first bytes are not "GGUF")');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const decoder = new TextDecoder('utf-8');
    let p = 4;
    const need = (n) => {
      if (p + n > bytes.length) throw new NeedMoreBytes(p + n);
    };
    const u32 = () => { need(4); const v = view.getUint32(p, true); p += 4; return v; };
    const u64 = () => { need(8); const v = Number(view.getBigUint64(p, true)); p += 8; return v; };
    const count = (what) => {
      const n = u64();
      if (n > MAX_COUNT) throw new Error(`GGUF header: ${what} count ${n} is not plausible`);
      return n;
    };
    // slice(): TextDecoder refuses views on a SharedArrayBuffer (the pthreads build's memory)
    const str = () => { const n = count('string length'); need(n); const s = decoder.decode(bytes.slice(p, p + n)); p += n; return s; };
    const scalar = (t) => {
      const n = SCALAR_BYTES[t];
      if (n === undefined) throw new Error(`GGUF header: unknown value type ${t}`);
      need(n);
      let v;
      switch (t) {
        case TYPE.U8: v = view.getUint8(p); break;
        case TYPE.I8: v = view.getInt8(p); break;
        case TYPE.U16: v = view.getUint16(p, true); break;
        case TYPE.I16: v = view.getInt16(p, true); break;
        case TYPE.U32: v = view.getUint32(p, true); break;
        case TYPE.I32: v = view.getInt32(p, true); break;
        case TYPE.F32: v = view.getFloat32(p, true); break;
        case TYPE.BOOL: v = view.getUint8(p) !== 0; break;
        case TYPE.U64: v = Number(view.getBigUint64(p, true)); break;
        case TYPE.I64: v = Number(view.getBigInt64(p, true)); break;
        case TYPE.F64: v = view.getFloat64(p, true); break;
      }
      p += n;
      return v;
    };
    const value = (t, keep) => {
      if (t === TYPE.STRING) return str();
      if (t !== TYPE.ARRAY) return scalar(t);
      const itemType = u32();
      const n = count('array');
      if (n <= SMALL_ARRAY || keep) {
        const items = new Array(n);
        for (let i = 0; i < n; i++) items[i] = value(itemType, false);
        return items;
      }
      if (itemType === TYPE.ARRAY) throw new Error('GGUF header: nested arrays are not supported');
      if (itemType === TYPE.STRING) for (let i = 0; i < n; i++) { const len = count('string length'); need(len); p += len; }
      else { const size = SCALAR_BYTES[itemType]; if (size === undefined) throw new Error(`GGUF header: unknown array type ${itemType}`); need(n * size); p += n * size; }
      return { arrayOf: itemType, length: n };
    };

    const version = u32();
    if (version !== 2 && version !== 3) throw new Error(`GGUF version ${version} is not supported (2 and 3 are)`);
    const tensorCount = count('tensor');
    const kvCount = count('metadata');
    const metadata = {};
    for (let i = 0; i < kvCount; i++) {
      const key = str();
      metadata[key] = value(u32(), keepArrays.includes(key));
    }
    if (!withTensors) return { version, tensorCount, metadata, headerBytes: p };
    // each: name, n_dims, dims (u64 each), type (u32), offset (u64) from the aligned data section
    const tensors = [];
    for (let i = 0; i < tensorCount; i++) {
      const name = str(), nDims = u32();
      if (nDims > 4) throw new Error(`GGUF header: tensor ${name} has ${nDims} dimensions`);
      const dims = [];
      for (let d = 0; d < nDims; d++) dims.push(u64());
      tensors.push({ name, type: u32(), dims, offset: u64() });
    }
    const align = Number.isInteger(metadata['general.alignment']) && metadata['general.alignment'] > 0 ? metadata['general.alignment'] : 32;
    const dataOffset = Math.ceil(p / align) * align;
    for (const t of tensors) t.offset += dataOffset;
    return { version, tensorCount, metadata, headerBytes: p, tensors, dataOffset };
  }

  // Tensors read one row per token that may stay outside wasm memory (src/model.c's
  // place_outside_tables): gemma4's per-layer embeddings, most of an E2B/E4B file.
  const ROW_TABLES = ['per_layer_token_embd.weight'];

  /**
   * The row tables of a file from its tensor directory (parseHeader with tensors): [{name,
   * offset, bytes}], bytes running to the next tensor's data (its padding included) or the file's end.
   */
  function rowTables(header, fileBytes) {
    if (!header?.tensors) return [];
    const starts = header.tensors.map((t) => t.offset).sort((a, b) => a - b);
    return header.tensors.filter((t) => ROW_TABLES.includes(t.name)).map((t) => {
      const next = starts.find((o) => o > t.offset);
      return { name: t.name, offset: t.offset, bytes: (next ?? fileBytes) - t.offset };
    });
  }

  // The weight matrices the GPU path uploads (gpu/backend.mjs: every layer's projections, the
  // output head, and the token embeddings it reads a row of per token): on that path they may
  // stay outside wasm memory, their bytes going from the download to the GPU.
  const GPU_WEIGHT = /^(token_embd|output)\.weight$|^blk\.\d+\.(attn_(q|k|v|qkv|output)|ffn_(gate|up|down|gate_up))\.weight$/;

  /**
   * The GPU path's weight matrices of a file from its tensor directory, as rowTables gives the
   * row tables: [{name, offset, bytes}] in file order, bytes running to the next tensor's data.
   */
  function gpuWeights(header, fileBytes) {
    if (!header?.tensors) return [];
    const starts = header.tensors.map((t) => t.offset).sort((a, b) => a - b);
    return header.tensors.filter((t) => GPU_WEIGHT.test(t.name) && t.dims.length >= 2 && t.dims[1] > 1).map((t) => {
      const next = starts.find((o) => o > t.offset);
      return { name: t.name, offset: t.offset, bytes: (next ?? fileBytes) - t.offset };
    }).sort((a, b) => a.offset - b.offset);
  }

  /** The hyperparameters that size the KV cache, from the metadata. */
  function hyperparameters(metadata) {
    const arch = metadata['general.architecture'];
    const get = (k) => metadata[`${arch}.${k}`];
    const embd = get('embedding_length');
    const heads = get('attention.head_count');
    if (typeof arch !== 'string' || !Number.isFinite(embd) || !Number.isFinite(heads) || heads <= 0) return null;
    const kvList = get('attention.head_count_kv');
    // lfm2 lists a KV head count per layer, 0 marking a convolution layer (src/model.c)
    const kvHeads = Array.isArray(kvList) ? Math.max(0, ...kvList) : Number.isFinite(kvList) ? kvList : heads;
    const keyLength = Number.isFinite(get('attention.key_length')) ? get('attention.key_length') : embd / heads;
    const valueLength = Number.isFinite(get('attention.value_length')) ? get('attention.value_length') : keyLength;
    const vocab = metadata['tokenizer.ggml.tokens'];
    // trailing multi-token-prediction blocks (nextn_predict_layers) are not run (src/model.c)
    const layers = Math.max(0, (get('block_count') || 0) - (Number.isFinite(get('nextn_predict_layers')) ? get('nextn_predict_layers') : 0));
    const { recurrentLayers, stateBytes } = recurrentState(arch, get, layers, embd, kvList);
    // sliding-window layers keep only their window in the cache (src/model.c's family table)
    const swa = SLIDING[arch];
    let window = 0, slidingLayers = 0, caches = null;
    if (arch === 'gemma4' || arch === 'gemma3n') {
      window = get('attention.sliding_window') || 0;
      caches = layerCaches(get, layers, heads);
    } else if (swa) {
      const w = get('attention.sliding_window');
      window = Number.isFinite(w) ? w : swa.window;
      const period = Number.isFinite(get('attention.sliding_window_pattern')) ? get('attention.sliding_window_pattern') : swa.period;
      if (window > 0) for (let l = 0; l < layers; l++) if (period === 0 || l % period < period - 1) slidingLayers++;
    }
    return {
      arch,
      layers,
      recurrentLayers,
      stateBytes,
      window,
      slidingLayers,
      embd,
      heads,
      kvHeads,
      keyLength,
      valueLength,
      caches,
      // gemma4: a width per layer (the widest sizes the scratch), and its per-layer embeddings
      ffn: Array.isArray(get('feed_forward_length')) ? Math.max(...get('feed_forward_length')) : get('feed_forward_length') || 0,
      perLayerEmbd: (get('embedding_length_per_layer_input') || 0) * layers,
      // gemma3n: AltUp's streams of the residual
      altupStreams: get('altup.num_inputs') || 0,
      contextTrain: get('context_length') || 0,
      vocab: Array.isArray(vocab) ? vocab.length : vocab?.length || 0,
    };
  }

  // the context keeps two snapshots of the recurrent state besides the live one (src/forward.h)
  const STATE_COPIES = 3;

  /**
   * The hybrids' recurrent layers and the bytes of their state (wick_state_bytes): lfm2's
   * convolution layers keep l_cache − 1 inputs of the embedding width; qwen35's DeltaNet layers
   * keep conv_kernel − 1 inputs of (2·group_count + time_step_rank)·state_size channels and a
   * state_size² matrix per value head (time_step_rank of them); granitehybrid's Mamba-2 layers (KV
   * head count 0) keep conv_kernel − 1 inputs of inner_size + 2·group_count·state_size channels and
   * state_size values per channel of inner_size. F32 throughout.
   */
  function recurrentState(arch, get, layers, embd, kvList) {
    let recurrentLayers = 0, perLayer = 0;
    if (arch === 'lfm2' || arch === 'granitehybrid') {
      recurrentLayers = Array.isArray(kvList) ? kvList.slice(0, layers).filter((n) => n === 0).length : 0;
      if (arch === 'lfm2') perLayer = Math.max(0, (get('shortconv.l_cache') || 0) - 1) * embd;
      else {
        const S = get('ssm.state_size') || 0, ng = get('ssm.group_count') || 0, inner = get('ssm.inner_size') || 0;
        perLayer = Math.max(0, (get('ssm.conv_kernel') || 0) - 1) * (inner + 2 * ng * S) + inner * S;
      }
    } else if (arch === 'qwen35') {
      const list = get('attention.recurrent_layers');
      const interval = Number.isFinite(get('full_attention_interval')) ? get('full_attention_interval') : 4;
      for (let l = 0; l < layers; l++) if (Array.isArray(list) ? list[l] : (l + 1) % interval !== 0) recurrentLayers++;
      const S = get('ssm.state_size') || 0, nk = get('ssm.group_count') || 0, nv = get('ssm.time_step_rank') || 0;
      perLayer = Math.max(0, (get('ssm.conv_kernel') || 0) - 1) * (2 * nk + nv) * S + nv * S * S;
    }
    return { recurrentLayers, stateBytes: recurrentLayers * perLayer * 4 * STATE_COPIES };
  }

  // families with sliding-window layers: llama.cpp's default window and layer pattern period
  const SLIDING = { gemma2: { window: 4096, period: 2 }, gemma3: { window: 0, period: 6 }, olmo2: { window: 0, period: 4 } };
  // the architectures the engine runs (src/model.c)
  const ARCHITECTURES = ['llama', 'qwen2', 'qwen3', 'gemma2', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2', 'lfm2', 'qwen35', 'qwen2vl', 'qwen3vl', 'granitehybrid', 'mistral3', 'gemma4', 'bert', 'gemma3n', 'nomic-bert', 'modern-bert', 'gemma-embedding'];

  /**
   * gemma4's and gemma3n's layers with a cache of their own (src/model.c, read_layer_shapes): the last
   * shared_kv_layers read an earlier layer's and keep none; a layer slides where the
   * sliding_window_pattern array says, with heads of key_length_swa (key_length on the full
   * layers, and on all of gemma3n's) and its own KV head count. Each: whether it slides, and its K and V values per position.
   */
  function layerCaches(get, layers, heads) {
    const pattern = get('attention.sliding_window_pattern'), kv = get('attention.head_count_kv');
    const caches = [];
    for (let l = 0; l < layers - (get('attention.shared_kv_layers') || 0); l++) {
      const sliding = Array.isArray(pattern) && pattern[l] === true;
      const headSize = (sliding && get('attention.key_length_swa') || get('attention.key_length')) || 0;
      caches.push({ sliding, values: 2 * headSize * (Array.isArray(kv) ? kv[l] : Number.isFinite(kv) ? kv : heads) });
    }
    return caches;
  }

  /** The model's name for a message, from general.name and general.size_label: " (Gemma 4 31B It, 31B)", or "" (src/model.c's model_label). */
  function modelLabel(metadata) {
    const str = (k, n) => (typeof metadata[k] === 'string' && metadata[k] ? metadata[k].slice(0, n) : '');
    const parts = [str('general.name', 80), str('general.size_label', 24)].filter(Boolean);
    return parts.length ? ` (${parts.join(', ')})` : '';
  }

  /**
   * Why the engine cannot run a model with this metadata, or null: an architecture it does not
   * know, or a mixture of experts. Known from the header, before the weights are
   * downloaded; the messages are the engine's (src/model.c).
   */
  function unsupportedReason(metadata) {
    const arch = metadata['general.architecture'];
    if (typeof arch !== 'string') return null; // a vocabulary-only file, or the engine says why
    if (!ARCHITECTURES.includes(arch)) return `architecture '${arch.slice(0, 40)}' is not supported (${ARCHITECTURES.join(', ')} are)`;
    const experts = metadata[`${arch}.expert_count`];
    if (Number.isFinite(experts) && experts > 0) {
      const gemma4 = arch === 'gemma4' ? "; Gemma 4's mixture of experts (26B-A4B) would not fit wasm32 either" : '';
      return `${arch}${modelLabel(metadata)} is a mixture-of-experts model (${arch}.expert_count = ${experts}): not supported${gemma4}`;
    }
    return null;
  }

  /** The message for a model that does not fit (checkFits's fits false), naming it: "Gemma 4 31B It (gemma4, 31B) does not fit in WebAssembly memory: …". */
  function tooLargeMessage(metadata, { needed, available, fileBytes, outsideBytes = 0, capped = false, needsGpu = false, gpuReason = null }) {
    const arch = metadata && typeof metadata['general.architecture'] === 'string' ? metadata['general.architecture'] : '';
    const name = metadata && typeof metadata['general.name'] === 'string' && metadata['general.name'] ? metadata['general.name'].slice(0, 80) : '';
    const label = metadata && typeof metadata['general.size_label'] === 'string' ? metadata['general.size_label'].slice(0, 24) : '';
    const what = name ? `${name} (${[arch, label].filter(Boolean).join(', ')})` : arch ? `this ${arch} model${label ? ` (${label})` : ''}` : 'the model';
    const holds = capped ? 'the heap cap (maxHeapBytes) leaves' : 'wasm32 holds';
    const gpu = needsGpu ? `; it needs a GPU: on the WebGPU path the weights stay outside wasm memory${gpuReason ? `, but that path is not available here (${gpuReason})` : ''}` : '';
    return `${what} does not fit in WebAssembly memory: it needs ${formatBytes(needed)} (${needed} bytes: file ${formatBytes(fileBytes)}${outsideBytes ? ` less ${formatBytes(outsideBytes)} kept outside it` : ''} plus KV cache and scratch), and ${holds} ${formatBytes(available)} (${available} bytes)${gpu}`;
  }

  /** The context the engine picks when none is asked: the training context clamped to 2048…4096 (src/forward.c). */
  function defaultContext(hp) {
    return Math.min(4096, Math.max(2048, hp?.contextTrain || 0));
  }

  /** Bytes per cached value of each KV type (src/wick.h) */
  const KV_VALUE_BYTES = { f32: 4, f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };

  /**
   * Bytes of the KV cache (keys and values of every layer and position), as wick_kv_bytes counts
   * them: a sliding-window layer holds window − 1 + nBatch positions when that is fewer, a
   * recurrent layer (lfm2, qwen35) none. kvType: the keys' type, kvTypeV the values'.
   */
  function kvCacheBytes(hp, nCtx, kvType = 'f16', nBatch = 256, kvTypeV = kvType) {
    if (!hp) return 0;
    const k = KV_VALUE_BYTES[kvType] ?? 2, v = KV_VALUE_BYTES[kvTypeV] ?? 2;
    const batch = Math.min(nBatch, nCtx), ring = hp.window > 0 ? hp.window - 1 + batch : nCtx;
    if (hp.caches) return hp.caches.reduce((sum, c) => sum + (c.sliding ? Math.min(ring, nCtx) : nCtx) * c.values, 0) * (k + v) / 2;
    const attention = hp.layers - (hp.recurrentLayers || 0);
    const positions = (attention - (hp.slidingLayers || 0)) * nCtx + (hp.slidingLayers || 0) * Math.min(ring, nCtx);
    return positions * hp.kvHeads * (hp.keyLength * k + hp.valueLength * v);
  }

  /** A rough bound of the forward pass's scratch: activations of one batch, logits, attention rows. */
  function scratchBytes(hp, nCtx, nBatch = 256, threads = 8) {
    if (!hp) return 0;
    const perToken = 8 * hp.embd + 3 * hp.ffn + hp.heads * hp.keyLength * 2 + (hp.perLayerEmbd || 0) + (hp.altupStreams || 0) * hp.embd;
    return 4 * (nBatch * perToken + 2 * hp.vocab + threads * nCtx);
  }

  // the GPU path's context in wasm memory: rows of logits written back (a batch of them at most)
  // and the sampler's arrays over the vocabulary; its KV cache and activations are on the GPU
  const GPU_LOGIT_ROWS = 40;

  /** What wasm memory holds: the build's 4 GiB, or less under the test option maxHeapBytes (less a reserve in proportion). */
  function heapLimit(maxHeapBytes) {
    const limit = maxHeapBytes > 0 ? Math.min(WASM_MEMORY_LIMIT, maxHeapBytes) : WASM_MEMORY_LIMIT;
    return { available: limit - Math.min(ENGINE_RESERVE, Math.floor(limit / 8)), capped: limit < WASM_MEMORY_LIMIT };
  }

  /**
   * Whether a model fits in wasm32 memory. Returns {fits, needed, available, fileBytes, kvBytes,
   * outsideBytes, needsGpu, gpuBytes}. fileBytes: the model file(s); metadata may be null (only
   * the file size is checked then). tables: its row tables (rowTables), which stay outside wasm
   * memory when tablesOutside is true, or when it is not false and the model would not fit with
   * them inside (the loader's choice, download.js); outsideBytes counts them, needed does not.
   * weights: the GPU path's weight matrices (gpuWeights); with weightsOutside (the GPU path
   * chosen) they stay outside too, and the KV cache and scratch are the GPU's. needsGpu: the model
   * does not fit with its weights inside but would with them on the GPU. gpuBytes: an estimate of
   * the GPU memory that path takes (weights, F16 KV cache, activations). maxHeapBytes: a cap below
   * wasm32's 4 GiB (tests).
   */
  function checkFits({ fileBytes, metadata = null, contextSize = 0, kvType = 'f16', kvTypeK, kvTypeV, threads = 1, tables = [], tablesOutside,
    weights = [], weightsOutside = false, maxHeapBytes = 0 }) {
    const hp = metadata ? hyperparameters(metadata) : null;
    const nCtx = contextSize > 0 ? contextSize : defaultContext(hp);
    const kvBytes = kvCacheBytes(hp, nCtx, kvTypeK || kvType, 256, kvTypeV || kvType);
    const rest = kvBytes + (hp?.stateBytes || 0) + scratchBytes(hp, nCtx, 256, threads);
    const { available, capped } = heapLimit(maxHeapBytes);
    const tableBytes = tables.reduce((a, t) => a + t.bytes, 0), weightBytes = weights.reduce((a, t) => a + t.bytes, 0);
    const tablesOut = (inside) => (tableBytes && (tablesOutside === true || (tablesOutside !== false && inside > available)) ? tableBytes : 0);
    const gpuRest = 4 * (hp?.vocab || 0) * GPU_LOGIT_ROWS;
    // the GPU path: the weights outside, and the tables too where they would not fit beside the rest
    const gpuTables = tablesOut(fileBytes - weightBytes + gpuRest);
    const gpuNeeded = fileBytes - weightBytes - gpuTables + gpuRest;
    const cpuTables = tablesOut(fileBytes + rest);
    const cpuNeeded = fileBytes - cpuTables + rest;
    const gpu = weightsOutside && weightBytes > 0;
    const needed = gpu ? gpuNeeded : cpuNeeded, outsideBytes = gpu ? weightBytes + gpuTables : cpuTables;
    const gpuKv = hp ? (hp.layers - (hp.recurrentLayers || 0)) * nCtx * hp.kvHeads * (hp.keyLength + hp.valueLength) * 2 : 0;
    const gpuBytes = weightBytes ? weightBytes + gpuKv + 4 * (hp?.vocab || 0) * 32 + (hp ? 4 * 32 * (8 * hp.embd + 3 * hp.ffn) : 0) : 0;
    return { fits: needed <= available, needed, available, capped, fileBytes, kvBytes, outsideBytes, contextSize: nCtx,
      needsGpu: cpuNeeded > available && weightBytes > 0 && gpuNeeded <= available, gpuBytes };
  }

  /** "1.2 GB" */
  function formatBytes(n) {
    if (n < 1024) return `${n} B`;
    const units = ['KiB', 'MiB', 'GiB', 'TiB'];
    let v = n, u = -1;
    do { v /= 1024; u++; } while (v >= 1024 && u < units.length - 1);
    return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
  }

  root.WickGguf = { TYPE, NeedMoreBytes, isGguf, parseHeader, rowTables, ROW_TABLES, gpuWeights, heapLimit, hyperparameters, unsupportedReason, tooLargeMessage, modelLabel, ARCHITECTURES, defaultContext, kvCacheBytes, checkFits, formatBytes, WASM_MEMORY_LIMIT, ENGINE_RESERVE };
})(typeof self !== 'undefined' ? self : globalThis);
