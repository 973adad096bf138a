// web/catalogue.js — the page's short list of popular GGUF files on Hugging Face, one or two per
// family that browser users run, each small enough for wasm32 (file + KV cache under about
// 3.5 GB). Nothing here is fetched until the user chooses an entry: then the page reads the
// file's header with Range requests (its exact size and what it needs), and loads it on a click.
//
// bytes: the file's size as listed on Hugging Face when this list was written (approximate: a
// repository may re-upload a file; the page shows the size the server reports once chosen).
// mmproj (vision models): {file, bytes, projector}, the image encoder loaded with the model.
// family: the file's general.architecture. params: the parameter count, embeddings included.
// effectiveParams (per-layer-embedding models: gemma4, gemma3n): what a token goes through, as the
// card counts it ("E2B"); the rest is a table read one row per token. Sizes "listed as" are
// Hugging Face's rounded decimal units.

/** Where the files live; `?hf=ORIGIN` in the page's address replaces it (a mirror, or a test server). */
export const HF = 'https://huggingface.co';

/** The most a listed file may weigh: wasm32 addresses 4 GiB, and the KV cache and scratch need room too. */
export const CATALOGUE_MAX_BYTES = 3.5e9;

export const CATALOGUE = Object.freeze([
  { id: 'llama-3.2-1b-instruct', name: 'Llama 3.2 1B Instruct', family: 'llama', params: 1.24e9, quant: 'Q4_K_M',
    repo: 'bartowski/Llama-3.2-1B-Instruct-GGUF', file: 'Llama-3.2-1B-Instruct-Q4_K_M.gguf', bytes: 807_694_464 },
  { id: 'llama-3.2-3b-instruct', name: 'Llama 3.2 3B Instruct', family: 'llama', params: 3.21e9, quant: 'Q4_K_M',
    repo: 'bartowski/Llama-3.2-3B-Instruct-GGUF', file: 'Llama-3.2-3B-Instruct-Q4_K_M.gguf', bytes: 2_019_377_696 },
  { id: 'qwen3-0.6b', name: 'Qwen3 0.6B', family: 'qwen3', params: 0.6e9, quant: 'Q8_0',
    repo: 'Qwen/Qwen3-0.6B-GGUF', file: 'Qwen3-0.6B-Q8_0.gguf', bytes: 639_446_688 },
  { id: 'qwen3-1.7b', name: 'Qwen3 1.7B', family: 'qwen3', params: 1.7e9, quant: 'Q4_K_M',
    repo: 'unsloth/Qwen3-1.7B-GGUF', file: 'Qwen3-1.7B-Q4_K_M.gguf', bytes: 1_282_959_136 },
  { id: 'gemma-3-270m-it', name: 'Gemma 3 270M IT', family: 'gemma3', params: 268e6, quant: 'Q8_0',
    repo: 'ggml-org/gemma-3-270m-it-GGUF', file: 'gemma-3-270m-it-Q8_0.gguf', bytes: 291_545_600 },
  { id: 'gemma-3-1b-it', name: 'Gemma 3 1B IT', family: 'gemma3', params: 1.0e9, quant: 'Q4_K_M',
    repo: 'unsloth/gemma-3-1b-it-GGUF', file: 'gemma-3-1b-it-Q4_K_M.gguf', bytes: 806_058_272 },
  { id: 'gemma-2-2b-it', name: 'Gemma 2 2B IT', family: 'gemma2', params: 2.61e9, quant: 'Q4_K_M',
    repo: 'bartowski/gemma-2-2b-it-GGUF', file: 'gemma-2-2b-it-Q4_K_M.gguf', bytes: 1_708_582_752 },
  { id: 'phi-3.5-mini-instruct', name: 'Phi-3.5 mini Instruct', family: 'phi3', params: 3.82e9, quant: 'Q4_K_M',
    repo: 'bartowski/Phi-3.5-mini-instruct-GGUF', file: 'Phi-3.5-mini-instruct-Q4_K_M.gguf', bytes: 2_393_232_672 },
  { id: 'smollm2-360m-instruct', name: 'SmolLM2 360M Instruct', family: 'llama', params: 362e6, quant: 'Q8_0',
    repo: 'HuggingFaceTB/SmolLM2-360M-Instruct-GGUF', file: 'smollm2-360m-instruct-q8_0.gguf', bytes: 386_404_992 },
  { id: 'smollm2-1.7b-instruct', name: 'SmolLM2 1.7B Instruct', family: 'llama', params: 1.71e9, quant: 'Q4_K_M',
    repo: 'HuggingFaceTB/SmolLM2-1.7B-Instruct-GGUF', file: 'smollm2-1.7b-instruct-q4_k_m.gguf', bytes: 1_055_609_536 },
  { id: 'smollm3-3b', name: 'SmolLM3 3B', family: 'smollm3', params: 3.08e9, quant: 'Q4_K_M',
    repo: 'ggml-org/SmolLM3-3B-GGUF', file: 'SmolLM3-Q4_K_M.gguf', bytes: 1_915_305_312 },
  { id: 'granite-3.3-2b-instruct', name: 'Granite 3.3 2B Instruct', family: 'granite', params: 2.53e9, quant: 'Q4_K_M',
    repo: 'ibm-granite/granite-3.3-2b-instruct-GGUF', file: 'granite-3.3-2b-instruct-Q4_K_M.gguf', bytes: 1_545_303_328 },
  { id: 'olmo-2-0425-1b-instruct', name: 'OLMo 2 1B Instruct', family: 'olmo2', params: 1.48e9, quant: 'Q4_K_M',
    repo: 'allenai/OLMo-2-0425-1B-Instruct-GGUF', file: 'OLMo-2-0425-1B-Instruct-Q4_K_M.gguf', bytes: 935_515_296 },
  // Issue 27's on-device models. No Hugging Face file listing of these repositories was readable
  // when they were added: "pinned" sizes are the exact bytes that public projects downloading the
  // file pin beside its SHA-256 and a revision (the commit that added them says which).
  // Gemma 4 E2B: 5.1B parameters with embeddings, 2.3B effective (google's card, quoted at
  // https://huggingface.co/cstr/gemma4-e2b-it-GGUF); pinned for the resolve URL of this file. Its
  // Q8_0 (4.6 GB) and every Gemma 4 E4B Q4_K_M seen (5.3 GB) are over CATALOGUE_MAX_BYTES.
  { id: 'gemma-4-e2b-it', name: 'Gemma 4 E2B IT', family: 'gemma4', params: 5.1e9, effectiveParams: 2.3e9, quant: 'Q4_K_M',
    repo: 'bartowski/google_gemma-4-E2B-it-GGUF', file: 'google_gemma-4-E2B-it-Q4_K_M.gguf', bytes: 3_462_678_272 },
  // Gemma 3n E2B: 5.44B parameters, 2B effective (https://raw.githubusercontent.com/jakemanger/whatmodel/main/pages/model/gemma-3n-e2b.md;
  // https://huggingface.co/collections/google/gemma-3n says 5B); pinned. The engine refuses gemma3n
  // for now (AltUp, Laurel, activation sparsity): the page says so from the header, before a download.
  { id: 'gemma-3n-e2b-it', name: 'Gemma 3n E2B IT', family: 'gemma3n', params: 5.44e9, effectiveParams: 2e9, quant: 'Q4_K_M',
    repo: 'unsloth/gemma-3n-E2B-it-GGUF', file: 'gemma-3n-E2B-it-Q4_K_M.gguf', bytes: 3_026_881_888 },
  // Phi-4-mini: 3.8B parameters, tied embeddings; pinned (other repositories' Q4_K_M of it are listed
  // as 2.49 GB: https://huggingface.co/second-state/Phi-4-mini-instruct-GGUF).
  { id: 'phi-4-mini-instruct', name: 'Phi-4 mini Instruct', family: 'phi3', params: 3.8e9, quant: 'Q4_K_M',
    repo: 'bartowski/microsoft_Phi-4-mini-instruct-GGUF', file: 'microsoft_Phi-4-mini-instruct-Q4_K_M.gguf', bytes: 2_491_874_688 },
  // Granite 4.0-H Micro: "a 3B parameter long-context instruct model" (IBM's card); pinned.
  { id: 'granite-4.0-h-micro', name: 'Granite 4.0-H Micro', family: 'granitehybrid', params: 3e9, quant: 'Q4_K_M',
    repo: 'ibm-granite/granite-4.0-h-micro-GGUF', file: 'granite-4.0-h-micro-Q4_K_M.gguf', bytes: 1_942_564_512 },
  // Ministral 3 3B: a 3.4B language model (the 0.4B vision encoder is not in this file:
  // https://huggingface.co/mistralai/Ministral-3-3B-Instruct-2512-BF16); pinned as its LFS size.
  { id: 'ministral-3-3b-instruct-2512', name: 'Ministral 3 3B Instruct', family: 'mistral3', params: 3.4e9, quant: 'Q4_K_M',
    repo: 'mistralai/Ministral-3-3B-Instruct-2512-GGUF', file: 'Ministral-3-3B-Instruct-2512-Q4_K_M.gguf', bytes: 2_147_023_008 },
  // Qwen3.5 0.8B: 0.8B parameters (https://docs.vultr.com/models/alibaba-qwen-35/qwen3.5-0.8b/nvidia); pinned.
  { id: 'qwen3.5-0.8b', name: 'Qwen3.5 0.8B', family: 'qwen35', params: 0.8e9, quant: 'Q8_0',
    repo: 'ggml-org/Qwen3.5-0.8B-GGUF', file: 'Qwen3.5-0.8B-Q8_0.gguf', bytes: 833_592_096 },
  // LFM2 350M: 354M parameters (https://raw.githubusercontent.com/jakemanger/whatmodel/main/pages/model/lfm2-350m.md);
  // listed as 379 MB at https://huggingface.co/LiquidAI/LFM2-350M-GGUF/tree/main
  { id: 'lfm2-350m', name: 'LFM2 350M', family: 'lfm2', params: 354e6, quant: 'Q8_0',
    repo: 'LiquidAI/LFM2-350M-GGUF', file: 'LFM2-350M-Q8_0.gguf', bytes: 379_000_000 },
  // LFM2.5 1.2B Instruct: "Number of parameters: 1.17B" (LiquidAI's card); pinned.
  { id: 'lfm2.5-1.2b-instruct', name: 'LFM2.5 1.2B Instruct', family: 'lfm2', params: 1.17e9, quant: 'Q4_K_M',
    repo: 'LiquidAI/LFM2.5-1.2B-Instruct-GGUF', file: 'LFM2.5-1.2B-Instruct-Q4_K_M.gguf', bytes: 730_895_168 },
  // Issue 32's vision models: a language model and its image encoder (mmproj: `mmproj.file`,
  // `mmproj.bytes`, the projector its clip.projector_type names), loaded together (Wick.load's
  // mmproj option); CATALOGUE_MAX_BYTES bounds the two together. params: the language model's, as
  // Hugging Face lists the GGUF (the vision tower is in the mmproj). How the sizes were found (the
  // search tool's pages; no Hugging Face listing with exact bytes was readable here):
  // SmolVLM 256M and 500M: the file names are those of ggml-org's repositories (llama.cpp's own
  // conversions); the bytes are "pinned" from a public browser demo's model list, which gives each
  // file's and mmproj's size to the byte (a wllama page listing ggml-org/SmolVLM-*-Instruct-GGUF);
  // the 256M mmproj agrees with the "104 MB" a copy of it is listed at
  // (https://huggingface.co/teragron/quantest/tree/main); the 500M pair was found in that list only.
  { id: 'smolvlm-256m-instruct', name: 'SmolVLM 256M Instruct', family: 'llama', params: 0.2e9, quant: 'Q8_0',
    repo: 'ggml-org/SmolVLM-256M-Instruct-GGUF', file: 'SmolVLM-256M-Instruct-Q8_0.gguf', bytes: 175_054_528,
    mmproj: { file: 'mmproj-SmolVLM-256M-Instruct-Q8_0.gguf', bytes: 103_769_856, projector: 'idefics3' } },
  { id: 'smolvlm-500m-instruct', name: 'SmolVLM 500M Instruct', family: 'llama', params: 0.4e9, quant: 'Q8_0',
    repo: 'ggml-org/SmolVLM-500M-Instruct-GGUF', file: 'SmolVLM-500M-Instruct-Q8_0.gguf', bytes: 436_806_912,
    mmproj: { file: 'mmproj-SmolVLM-500M-Instruct-Q8_0.gguf', bytes: 108_783_360, projector: 'idefics3' } },
  // Gemma 3 4B IT: listed as 2.49 GB and 851 MB at https://huggingface.co/ggml-org/gemma-3-4b-it-GGUF/tree/main;
  // the bytes (2,489,757,856 and 851,251,328, within those) as a public project's test fixture of that
  // listing gives them; 3.88B parameters as Hugging Face lists the GGUF (https://huggingface.co/gaianet/gemma-3-4b-it-GGUF).
  { id: 'gemma-3-4b-it', name: 'Gemma 3 4B IT', family: 'gemma3', params: 3.88e9, quant: 'Q4_K_M',
    repo: 'ggml-org/gemma-3-4b-it-GGUF', file: 'gemma-3-4b-it-Q4_K_M.gguf', bytes: 2_489_757_856,
    mmproj: { file: 'mmproj-model-f16.gguf', bytes: 851_251_328, projector: 'gemma3' } },
].map(Object.freeze));

/** A listed size, rounded as befits an approximate one: "369 MiB", "1.59 GiB" (the units the page's exact sizes use). */
export function approximateSize(bytes) {
  const MiB = 2 ** 20, GiB = 2 ** 30;
  return bytes >= 1000 * MiB ? `${(bytes / GiB).toFixed(2)} GiB` : `${Math.round(bytes / MiB)} MiB`;
}

/** The download URL of an entry: `<hub>/<org>/<repo>/resolve/main/<file>`. */
export function catalogueUrl(entry, hub = HF) {
  return `${hub}/${entry.repo}/resolve/main/${entry.file}`;
}

/** The download URL of an entry's image encoder (mmproj), or null for a text-only entry. */
export function mmprojUrl(entry, hub = HF) {
  return entry.mmproj ? `${hub}/${entry.repo}/resolve/main/${entry.mmproj.file}` : null;
}

/** The entry's repository page (its model card, licence and other quantizations). */
export function repositoryUrl(entry, hub = HF) {
  return `${hub}/${entry.repo}`;
}

/**
 * The hub named by the page's `?hf=` parameter: {hub} (an http(s) origin with an optional path,
 * no trailing slash), or {hub: HF, error} when the value is not such a URL.
 */
export function hubFromParam(value) {
  if (!value) return { hub: HF };
  let url;
  try { url = new URL(value); } catch { return { hub: HF, error: `?hf=${value} is not a URL` }; }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { hub: HF, error: `?hf=${value} is not an http(s) URL` };
  if (url.search || url.hash || url.username || url.password) return { hub: HF, error: `?hf=${value} must be an origin or a path, without a query or credentials` };
  return { hub: `${url.origin}${url.pathname.replace(/\/+$/, '')}` };
}
