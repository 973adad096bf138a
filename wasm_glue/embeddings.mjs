// wasm_glue/embeddings.mjs — what engine.embed() and engine.embeddings.create() (wick.mjs) do
// around the engine's wick_embed: the options checked, each input's tokens fitted to the window
// (truncated only when asked: never silently), Matryoshka truncation to `dimensions` with the
// vector renormalized, and the OpenAI embeddings response (float arrays or base64 of
// little-endian float32, as api.openai.com sends them); and what engine.rerank() checks and
// returns (the same for Wick.connect's llama-server).
import { WickError, invalid, checkNumber } from './options.mjs';

/** wick_embed's pooling codes (src/wick.h WICK_POOLING_*): -1 is the model's own. */
export const POOLING = { none: 0, mean: 1, cls: 2, last: 3 };

/** The options of embed(), checked: {pooling: code, normalize, dimensions, truncate}. */
export function embedSettings({ pooling, normalize = true, dimensions, truncate = false } = {}, dim) {
  if (pooling !== undefined && !(pooling in POOLING)) throw invalid(`pooling must be one of ${Object.keys(POOLING).join(', ')} (got ${JSON.stringify(pooling)})`);
  if (typeof normalize !== 'boolean') throw invalid('normalize must be true or false');
  if (typeof truncate !== 'boolean') throw invalid('truncate must be true or false');
  if (dimensions !== undefined) checkNumber('dimensions', dimensions, { min: 1, max: dim, integer: true });
  return { pooling: pooling === undefined ? -1 : POOLING[pooling], normalize, dimensions, truncate };
}

/** The inputs as lists of strings or token-id arrays: a string, an array of strings, or token ids. */
export function embedInputs(input) {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.length && input.every((t) => Number.isInteger(t))) return [input];
  if (Array.isArray(input) && input.length && input.every((t) => typeof t === 'string' || Array.isArray(t) || ArrayBuffer.isView(t))) return input;
  throw invalid('input must be a string, an array of strings, or token ids');
}

/**
 * Fits one input's token ids ([CLS] … [SEP]) to a window of nCtx: as they are when they fit; the
 * first nCtx − 1 and the last (the closing [SEP]) with truncate; else an E_CONTEXT_FULL error.
 */
export function fitTokens(ids, nCtx, truncate, index) {
  if (!ids.length) throw invalid(`input ${index} has no tokens`);
  if (ids.length <= nCtx) return ids;
  if (!truncate)
    throw new WickError('E_CONTEXT_FULL', `input ${index} has ${ids.length} tokens and the model's window is ${nCtx}: shorten it, or pass truncate: true to keep its first ${nCtx}`);
  return [...ids.slice(0, nCtx - 1), ids[ids.length - 1]];
}

/** A vector cut to its first d values (Matryoshka embeddings), renormalized to unit length when asked. */
export function cutDimensions(v, d, normalize) {
  if (d === undefined || d >= v.length) return v;
  const out = v.slice(0, d);
  if (normalize) {
    let ss = 0;
    for (const x of out) ss += x * x;
    const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0;
    for (let i = 0; i < d; i++) out[i] *= inv;
  }
  return out;
}

/** Base64 of a Float32Array's little-endian bytes (OpenAI's encoding_format: 'base64'). */
export function float32Base64(v) {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  v.forEach((x, i) => view.setFloat32(4 * i, x, true));
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The OpenAI embeddings.create() response for vectors of inputs that took `tokens` tokens in all. */
export function embeddingsResponse(vectors, { model, tokens, encodingFormat = 'float' }) {
  if (encodingFormat !== 'float' && encodingFormat !== 'base64') throw invalid(`encoding_format must be 'float' or 'base64' (got ${JSON.stringify(encodingFormat)})`);
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: encodingFormat === 'base64' ? float32Base64(v) : Array.from(v) })),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** rerank()'s arguments, checked: {topN} (the number of documents when not given). */
export function rerankSettings(query, documents, { topN } = {}) {
  if (typeof query !== 'string') throw invalid('rerank: the query must be a string');
  if (!Array.isArray(documents) || !documents.length || !documents.every((d) => typeof d === 'string'))
    throw invalid('rerank: documents must be a non-empty array of strings');
  if (topN !== undefined) checkNumber('topN', topN, { min: 1, integer: true });
  return { topN: topN === undefined ? documents.length : Math.min(topN, documents.length) };
}

/** [{index, score}] from the most relevant down (equal scores in the documents' order), the first topN. */
export function rankResults(scores, topN) {
  return Array.from(scores, (score, index) => ({ index, score }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, topN);
}
