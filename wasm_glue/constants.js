/* wasm_glue/constants.js — what the C engine and its JavaScript share, written once for the glue,
 * the worker, the GPU backend and the page: wick_status and WICK_FINISH_* codes (src/wick.h), the
 * tensor types a file may hold with their elements per block (src/quant.c's table), a new
 * generator's settings (wick_gen_new) and the Cache API store names. tests/constants.test.mjs
 * fails when one of them differs from the C sources.
 *
 * A plain script, as gguf-header.js: a classic script in the Web Worker (importScripts), a script
 * under Node, imported for its side effect by the ES modules; it defines `WickConstants`. */
'use strict';
(function (root) {
  // wick_status → the WickError code (WICK_OK = 0 is not an error)
  const STATUS_CODES = { 1: 'E_INVALID_ARG', 2: 'E_FORMAT', 3: 'E_UNSUPPORTED', 4: 'E_NOMEM', 5: 'E_CONTEXT_FULL' };

  // wick_gen_finish → finishReason (WICK_FINISH_NONE = 0: still generating)
  const FINISH_REASONS = { 1: 'eog', 2: 'stop', 3: 'length', 4: 'grammar' };
  // the mmproj projectors src/vision.c reads (an mmproj with another is refused from its header)
  const VISION_PROJECTORS = ['idefics3', 'gemma3', 'lfm2', 'qwen2vl_merger', 'qwen2.5vl_merger', 'qwen3vl_merger', 'gemma4v'];

  // GGUF tensor type id (ggml's enum ggml_type) → its name and the elements of one block
  const TENSOR_TYPES = {
    0: { name: 'f32', block: 1 }, 1: { name: 'f16', block: 1 }, 30: { name: 'bf16', block: 1 },
    2: { name: 'q4_0', block: 32 }, 3: { name: 'q4_1', block: 32 }, 6: { name: 'q5_0', block: 32 },
    7: { name: 'q5_1', block: 32 }, 8: { name: 'q8_0', block: 32 }, 9: { name: 'q8_1', block: 32 },
    20: { name: 'iq4_nl', block: 32 },
    10: { name: 'q2_K', block: 256 }, 11: { name: 'q3_K', block: 256 }, 12: { name: 'q4_K', block: 256 },
    13: { name: 'q5_K', block: 256 }, 14: { name: 'q6_K', block: 256 }, 15: { name: 'q8_K', block: 256 },
  };

  // The settings (wick_gen_set's names) of a new generator: sampler_params_default (src/sampler.c),
  // then repeat_penalty 1; the others are zero
  const GENERATION_DEFAULTS = {
    max_tokens: 0, temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05,
    repeat_penalty: 1, // 1 = off, as llama.cpp: a penalty changes the greedy text
    repeat_last_n: 64, frequency_penalty: 0, presence_penalty: 0, ignore_eos: 0,
  };

  // The Cache API stores: whole model files (by URL), and unfinished downloads (download.js)
  const CACHE_NAMES = { models: 'wick-models-v1', partial: 'wick-partial-v1' };

  // frozen all the way down: no module can change what the others read
  const deepFreeze = (o) => {
    for (const v of Object.values(o)) if (typeof v === 'object') deepFreeze(v);
    return Object.freeze(o);
  };
  root.WickConstants = deepFreeze({ STATUS_CODES, FINISH_REASONS, VISION_PROJECTORS, TENSOR_TYPES, GENERATION_DEFAULTS, CACHE_NAMES });
})(typeof self !== 'undefined' ? self : globalThis);
