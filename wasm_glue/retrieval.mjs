// wasm_glue/retrieval.mjs — retrieval over an embedding engine: texts split into chunks by the
// embedding model's tokens, embedded in batches with progress, held as one flat Float32Array of
// unit vectors, and searched exactly (cosine = dot product of unit vectors, over every vector),
// optionally reranked by a reranker engine; an index is saved as JSON and loaded again.
//
//   import { createIndex } from './wasm_glue/retrieval.mjs';
//   const index = await createIndex(embedder);
//   await index.add([{ text, source: 'notes.md' }], { onProgress: (p) => … });
//   const hits = await index.search('what did the notes say about X?', 4);   // [{text, source, score, chunk}]
//   const reply = await chat.chat.completions.create({ messages, documents: hits });
//
// Not imported by wick.mjs nor by the page: an app imports it where it retrieves.
import { WickError, invalid, checkNumber } from './options.mjs';

export const INDEX_FORMAT = 'wick-index';
export const INDEX_VERSION = 1;
const DEFAULT_MAX_TOKENS = 256;  // a chunk's tokens ([CLS] and [SEP] included): bge-small's window is 512
const DEFAULT_OVERLAP = 32;      // tokens of the previous chunk's last sentences repeated at a chunk's head
const DEFAULT_BATCH = 16;        // chunks per engine.embed call (a progress report after each)

// ---- pages: the text and title of a Markdown, HTML or plain-text file ----

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };
const decodeEntities = (s) => s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
  if (e[0] === '#') {
    const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : Number(e.slice(1));
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : m;
  }
  return ENTITIES[e.toLowerCase()] ?? m;
});
const BLOCK_TAGS = /<\/?(p|div|section|article|header|footer|main|nav|aside|h[1-6]|li|ul|ol|table|tr|blockquote|pre|br|hr|dt|dd|figure|figcaption)\b[^>]*>/gi;

/**
 * The title and plain text of a page, by its file name's extension: HTML (title from <title>, else
 * the first <h1>; scripts, styles and tags removed, block elements kept as paragraphs, entities
 * decoded), Markdown (title from front matter's title: or the first # heading) or plain text.
 * The title defaults to the file's name without its extension.
 */
export function pageText(content, name = '') {
  const base = String(name).split(/[\\/]/).pop().replace(/\.[^.]*$/, '');
  if (/\.html?$/i.test(name)) {
    const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(content)?.[1] ?? /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(content)?.[1];
    const body = content
      .replace(/<(script|style|noscript|template|head)\b[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(BLOCK_TAGS, '\n\n')
      .replace(/<[^>]+>/g, '');
    const text = decodeEntities(body).split(/\n\s*\n/).map((p) => p.replace(/\s+/g, ' ').trim()).filter(Boolean).join('\n\n');
    const clean = title && decodeEntities(title.replace(/<[^>]+>/g, '')).replace(/\s+/g, ' ').trim();
    return { title: clean || base, text };
  }
  if (/\.(md|markdown)$/i.test(name)) {
    let text = content;
    let title = null;
    const front = /^---\r?\n([\s\S]*?)\r?\n---\r?\n/.exec(text);
    if (front) {
      title = /^title:\s*["']?(.*?)["']?\s*$/m.exec(front[1])?.[1] || null;
      text = text.slice(front[0].length);
    }
    title ??= /^#\s+(.+?)\s*#*\s*$/m.exec(text)?.[1] ?? null;
    return { title: title || base, text: text.trim() };
  }
  return { title: base, text: content.trim() };
}

// ---- chunking ----

/** Paragraphs: text between blank lines, each trimmed, empty ones left out. */
function paragraphs(text) {
  return text.split(/\n[ \t]*\n+/).map((p) => p.trim()).filter(Boolean);
}

/** Sentences of a paragraph: cut after . ! ? (and 。！？) followed by space, or at a line break. */
function sentences(paragraph) {
  return paragraph.split(/(?<=[.!?。！？])\s+|\n+/).map((s) => s.trim()).filter(Boolean);
}

/**
 * Splits a text into chunks of at most maxTokens tokens as counted by countTokens (async, the
 * embedding model's tokens of a piece of text without [CLS]/[SEP]; `reserve` more are added per
 * chunk for them): whole paragraphs while they fit (one that would fit in a chunk of its own
 * starts a new chunk rather than being split), else whole sentences, else (a sentence longer than
 * a chunk) runs of words; each chunk after the first opens with the previous chunk's last
 * sentences, up to `overlap` tokens, where they fit.
 * Returns [{text, tokens}] (tokens: the pieces' counts summed, plus reserve).
 */
export async function chunkText(text, countTokens, { maxTokens = DEFAULT_MAX_TOKENS, overlap = DEFAULT_OVERLAP, reserve = 0 } = {}) {
  if (typeof text !== 'string') throw invalid('chunkText: text must be a string');
  checkNumber('maxTokens', maxTokens, { min: 8, integer: true });
  checkNumber('overlap', overlap, { min: 0, integer: true });
  const budget = maxTokens - reserve;
  if (overlap >= budget / 2) throw invalid(`overlap (${overlap}) must be under half of maxTokens less ${reserve} (${budget})`);
  // the units: sentences with their token counts, each marked with its paragraph
  const units = [];
  for (const [p, para] of paragraphs(text).entries()) {
    for (const sentence of sentences(para)) {
      const n = await countTokens(sentence);
      if (n <= budget) { units.push({ text: sentence, tokens: n, p }); continue; }
      // a sentence longer than a chunk: runs of words under the budget, by the words' own counts
      // (a WordPiece or BPE text's tokens are about its words' summed), each run counted again
      // whole and shortened while it is over (a word longer than a chunk stays alone: the
      // embedding truncates it)
      const words = sentence.split(/\s+/);
      const counts = [];
      for (const w of words) counts.push(await countTokens(w));
      for (let i = 0; i < words.length;) {
        let j = i + 1, sum = counts[i];
        while (j < words.length && sum + counts[j] <= budget) sum += counts[j++];
        let n = await countTokens(words.slice(i, j).join(' '));
        while (n > budget && j - i > 1) n = await countTokens(words.slice(i, --j).join(' '));
        units.push({ text: words.slice(i, j).join(' '), tokens: n, p });
        i = j;
      }
    }
  }
  // greedy packing; the joined text keeps paragraph breaks as blank lines
  const chunks = [];
  let current = [];
  const size = (list) => list.reduce((a, u) => a + u.tokens, 0);
  const emit = () => {
    if (!current.length) return;
    const text = current.map((u, i) => (i && u.p !== current[i - 1].p ? '\n\n' : i ? ' ' : '') + u.text).join('');
    chunks.push({ text, tokens: size(current) + reserve });
  };
  const paragraphTokens = [];
  for (const u of units) paragraphTokens[u.p] = (paragraphTokens[u.p] || 0) + u.tokens;
  for (const [k, u] of units.entries()) {
    // a paragraph that fits in a chunk of its own is not split across two
    const opens = k === 0 || units[k - 1].p !== u.p;
    const whole = opens && paragraphTokens[u.p] <= budget ? paragraphTokens[u.p] : u.tokens;
    if (current.length && size(current) + whole > budget) {
      emit();
      // the overlap: the last sentences of the chunk just written, while they fit in `overlap`
      const carried = [];
      for (let i = current.length - 1; i >= 0 && size(carried) + current[i].tokens <= overlap && carried.length < current.length - 1; i--)
        carried.unshift(current[i]);
      current = size(carried) + whole <= budget ? carried : [];
    }
    current.push(u);
  }
  emit();
  return chunks;
}

// ---- vectors ----

/** The k best of n scores, best first (equal scores in insertion order): [[index, score]]. */
function topK(scores, n, k) {
  const idx = new Int32Array(k), val = new Float32Array(k);
  let m = 0;
  for (let i = 0; i < n; i++) {
    const s = scores[i];
    if (m === k && s <= val[m - 1]) continue;
    let j = m < k ? m++ : m - 1;
    while (j > 0 && val[j - 1] < s) { val[j] = val[j - 1]; idx[j] = idx[j - 1]; j--; }
    val[j] = s; idx[j] = i;
  }
  return Array.from({ length: m }, (_, i) => [idx[i], val[i]]);
}

/**
 * The cosine similarity of a unit query vector with each of n unit vectors of dim values stored
 * one after another in `vectors` (a dot product each), into `out` (a Float32Array of n).
 */
export function cosineScores(vectors, n, dim, query, out = new Float32Array(n)) {
  for (let i = 0, base = 0; i < n; i++, base += dim) {
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, j = 0;
    for (; j + 4 <= dim; j += 4) {
      s0 += vectors[base + j] * query[j];
      s1 += vectors[base + j + 1] * query[j + 1];
      s2 += vectors[base + j + 2] * query[j + 2];
      s3 += vectors[base + j + 3] * query[j + 3];
    }
    for (; j < dim; j++) s0 += vectors[base + j] * query[j];
    out[i] = s0 + s1 + s2 + s3;
  }
  return out;
}

function unit(v) {
  const out = Float32Array.from(v);
  let ss = 0;
  for (const x of out) ss += x * x;
  const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0;
  for (let i = 0; i < out.length; i++) out[i] *= inv;
  return out;
}

/** Base64 of a Float32Array's little-endian bytes, and back (an index's vectors in JSON). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function vectorsToBase64(v) {
  let bytes;
  if (LITTLE_ENDIAN) bytes = new Uint8Array(v.buffer, v.byteOffset, v.length * 4);
  else {
    bytes = new Uint8Array(v.length * 4);
    const view = new DataView(bytes.buffer);
    for (let i = 0; i < v.length; i++) view.setFloat32(4 * i, v[i], true);
  }
  // Node's Buffer where there is one: its atob and btoa are many times slower than a browser's
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
const NodeBuffer = typeof process !== 'undefined' && process.versions?.node ? globalThis.Buffer : null;

export function vectorsFromBase64(text, count) {
  if (typeof text !== 'string') throw new WickError('E_FORMAT', "the index's vectors are not a base64 string");
  let bytes;
  if (NodeBuffer) bytes = new Uint8Array(NodeBuffer.from(text, 'base64'));
  else {
    const s = atob(text);
    bytes = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  }
  if (bytes.length !== count * 4) throw new WickError('E_FORMAT', `the index's vectors hold ${bytes.length} bytes, not ${count} floats`);
  if (LITTLE_ENDIAN) return new Float32Array(bytes.buffer);
  const view = new DataView(bytes.buffer);
  return Float32Array.from({ length: count }, (_, i) => view.getFloat32(4 * i, true));
}

// ---- the index ----

/** The embedding model an engine holds, as an index records it: {id, dim, bytes, sha256?}. */
async function modelOf(engine, given = {}) {
  const info = engine?.info;
  if (!info) throw invalid('createIndex needs a loaded embedding engine (Wick.load of an embedding model)');
  const model = { id: info.name, dim: info.embedding_length, bytes: info.fileBytes };
  // the file's SHA-256 where it can be read here (a local file under Node), else the caller's
  if (given.sha256) model.sha256 = given.sha256;
  else if (typeof process !== 'undefined' && process.versions?.node && typeof info.source === 'string' && !/^[a-z]+:/i.test(info.source))
    model.sha256 = await fileSha256(info.source).catch(() => undefined);
  if (given.id) model.id = given.id;
  return model;
}

/** The SHA-256 (hex) of a local file, under Node. */
export async function fileSha256(file) {
  const name = (n) => import(/* @vite-ignore */ /* webpackIgnore: true */ `node:${n}`);
  const [{ createHash }, fs] = [await name('crypto'), await name('fs')];
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    fs.createReadStream(file).on('data', (d) => h.update(d)).on('error', reject).on('end', () => resolve(h.digest('hex')));
  });
}

class Index {
  constructor(engine, model, { maxTokens, overlap, batch }) {
    this.engine = engine;
    this.model = model;
    this.dim = model.dim;
    this.chunkOptions = { maxTokens, overlap };
    this.batch = batch;
    this.chunks = [];                      // [{text, source, title, tokens, document}]
    this.vectors = new Float32Array(0);    // chunks.length × dim, unit vectors
    this.count = 0;
    this._scores = null;
  }

  get size() { return this.count; }

  _reserve(n) {
    if (this.count + n <= this.vectors.length / this.dim) return;
    const grown = new Float32Array(Math.max(this.count + n, 2 * this.vectors.length / this.dim || 64) * this.dim);
    grown.set(this.vectors.subarray(0, this.count * this.dim));
    this.vectors = grown;
  }

  _append(chunk, vector) {
    if (vector.length !== this.dim) throw new WickError('E_FORMAT', `a vector of ${vector.length} values in an index of ${this.dim}`);
    this._reserve(1);
    this.vectors.set(unit(vector), this.count * this.dim);
    this.chunks.push(chunk);
    this.count++;
  }

  /**
   * Splits texts (strings, or {text, source, title}) into chunks and embeds them, in batches.
   * onProgress({chunks, total, chunksPerSecond, phase: 'chunk' | 'embed'}) after each batch.
   * Returns the chunks added: [{text, source, title, tokens, chunk}] (chunk: its number in the index).
   */
  async add(texts, { onProgress, signal } = {}) {
    if (!this.engine) throw new WickError('E_UNSUPPORTED', 'this index was loaded without an embedding engine: loadIndex(json, { engine }) to add to it');
    const docs = (Array.isArray(texts) ? texts : [texts]).map((d, i) => {
      if (typeof d === 'string') return { text: d };
      if (d && typeof d.text === 'string') return d;
      throw invalid(`add: texts[${i}] must be a string or {text, source?, title?}`);
    });
    if (onProgress !== undefined && typeof onProgress !== 'function') throw invalid('onProgress must be a function');
    // [CLS] and [SEP]: what tokenize adds to an empty text
    const reserve = (await this.engine.tokenize('', { addBos: true })).length;
    const count = async (s) => (await this.engine.tokenize(s, { addBos: false })).length;
    const pending = [];
    for (const d of docs) {
      for (const c of await chunkText(d.text, count, { ...this.chunkOptions, reserve })) {
        const chunk = { text: c.text, tokens: c.tokens };
        if (d.source !== undefined) chunk.source = d.source;
        if (d.title !== undefined) chunk.title = d.title;
        pending.push(chunk);
      }
      if (signal?.aborted) throw new WickError('E_ABORTED', 'add: aborted');
    }
    const start = Date.now();
    const first = this.count;
    const report = (done) => {
      const seconds = (Date.now() - start) / 1000;
      try { onProgress?.({ phase: 'embed', chunks: done, total: pending.length, chunksPerSecond: seconds > 0 ? done / seconds : 0 }); } catch (e) { console.error(e); }
    };
    report(0);
    for (let i = 0; i < pending.length; i += this.batch) {
      if (signal?.aborted) throw new WickError('E_ABORTED', 'add: aborted');
      const part = pending.slice(i, i + this.batch);
      const vectors = await this.engine.embed(part.map((c) => c.text), { truncate: true });
      part.forEach((c, j) => this._append(c, vectors[j]));
      report(Math.min(pending.length, i + this.batch));
    }
    return pending.map((c, j) => ({ ...c, chunk: first + j }));
  }

  /** Removes the chunks of one source; returns how many went. */
  remove(source) {
    let kept = 0;
    const before = this.count;
    for (let i = 0; i < this.count; i++) {
      if (this.chunks[i].source === source) continue;
      if (kept !== i) { this.vectors.copyWithin(kept * this.dim, i * this.dim, (i + 1) * this.dim); this.chunks[kept] = this.chunks[i]; }
      kept++;
    }
    this.chunks.length = kept;
    this.count = kept;
    return before - kept;
  }

  /**
   * The k chunks most similar to the query (a string, embedded by the engine, or a vector):
   * [{text, source, title, tokens, score, chunk}] best first, score the cosine similarity.
   * rerank: a reranker engine (engine.rerank): the best `candidates` (default 4k) by cosine are
   * reranked by it, score is then its relevance and `similarity` the cosine.
   */
  async search(query, k = 4, { rerank, candidates } = {}) {
    checkNumber('k', k, { min: 1, integer: true });
    let q;
    if (typeof query === 'string') {
      if (!this.engine) throw new WickError('E_UNSUPPORTED', 'this index was loaded without an embedding engine: search with a vector, or loadIndex(json, { engine })');
      [q] = await this.engine.embed(query, { truncate: true });
    } else if (Array.isArray(query) || ArrayBuffer.isView(query)) q = query;
    else throw invalid('search: the query must be a string or a vector');
    if (q.length !== this.dim) throw invalid(`search: a query vector of ${q.length} values, the index's are ${this.dim}`);
    const wanted = rerank ? Math.max(k, candidates ?? 4 * k) : k;
    const hits = this.searchVector(unit(q), Math.min(wanted, this.count));
    if (!rerank || !hits.length) return hits.slice(0, k);
    if (typeof rerank.rerank !== 'function') throw invalid('search: rerank must be a reranker engine (with rerank())');
    const ranked = await rerank.rerank(query, hits.map((h) => h.text));
    return ranked.slice(0, k).map(({ index, score }) => ({ ...hits[index], similarity: hits[index].score, score }));
  }

  /** search() over a unit vector, synchronously (no engine): the same results. */
  searchVector(q, k) {
    if (!this.count) return [];
    if (!this._scores || this._scores.length < this.count) this._scores = new Float32Array(this.vectors.length / this.dim);
    const scores = cosineScores(this.vectors, this.count, this.dim, q, this._scores);
    return topK(scores, this.count, Math.min(k, this.count)).map(([i, score]) => ({ ...this.chunks[i], score, chunk: i }));
  }

  /** The index as JSON: the chunks, the vectors (base64 of little-endian float32) and the model. */
  toJSON() {
    const sources = [];
    const seen = new Set();
    for (const c of this.chunks.slice(0, this.count))
      if (c.source !== undefined && !seen.has(c.source)) seen.add(c.source), sources.push({ source: c.source, title: c.title });
    return {
      format: INDEX_FORMAT, version: INDEX_VERSION,
      model: this.model, dim: this.dim, count: this.count,
      chunkOptions: this.chunkOptions,
      sources,
      chunks: this.chunks.slice(0, this.count),
      vectors: vectorsToBase64(this.vectors.subarray(0, this.count * this.dim)),
    };
  }
}

/**
 * A new, empty index over an embedding engine. Options: maxTokens (a chunk's tokens, [CLS] and
 * [SEP] included; default 256, at most the model's window), overlap (default 32, or an eighth of maxTokens when less), batch (chunks
 * per embedding call, default 16), model ({id, sha256}: what the index records of the model when
 * the engine cannot tell; under Node the SHA-256 of a model loaded from a file is computed).
 */
export async function createIndex(engine, { maxTokens = DEFAULT_MAX_TOKENS, overlap, batch = DEFAULT_BATCH, model } = {}) {
  overlap ??= Math.min(DEFAULT_OVERLAP, Math.floor(maxTokens / 8));
  if (!engine || typeof engine.embed !== 'function') throw invalid('createIndex needs an embedding engine');
  const m = await modelOf(engine, model);
  const window = engine.info.contextSize;
  checkNumber('maxTokens', maxTokens, { min: 8, max: window || Infinity, integer: true });
  checkNumber('batch', batch, { min: 1, integer: true });
  return new Index(engine, m, { maxTokens, overlap, batch });
}

/**
 * An index from its JSON (toJSON's object or its text). With {engine}: queries as text, and more
 * chunks can be added; the engine must hold the index's model (the same id and dimensions, and
 * the same SHA-256 where both are known), else an E_MODEL_MISMATCH error.
 */
export async function loadIndex(json, { engine } = {}) {
  const j = typeof json === 'string' ? JSON.parse(json) : json;
  if (!j || j.format !== INDEX_FORMAT) throw new WickError('E_FORMAT', `not a wick index (format ${JSON.stringify(j?.format)})`);
  if (j.version !== INDEX_VERSION) throw new WickError('E_FORMAT', `a wick index of version ${j.version}; this wick reads version ${INDEX_VERSION}`);
  if (!Number.isInteger(j.dim) || j.dim < 1 || !Number.isInteger(j.count) || !Array.isArray(j.chunks) || j.chunks.length !== j.count)
    throw new WickError('E_FORMAT', 'the index\'s dim, count and chunks do not agree');
  if (engine) {
    const m = await modelOf(engine);
    const differs = m.id !== j.model?.id || m.dim !== j.dim || (m.sha256 && j.model?.sha256 && m.sha256 !== j.model.sha256);
    if (differs) throw new WickError('E_MODEL_MISMATCH', `the index was made with ${j.model?.id} (${j.dim} dimensions${j.model?.sha256 ? `, sha256 ${j.model.sha256.slice(0, 12)}…` : ''}); the engine holds ${m.id} (${m.dim}${m.sha256 ? `, ${m.sha256.slice(0, 12)}…` : ''})`);
  }
  const index = new Index(engine ?? null, j.model || { dim: j.dim }, { ...DEFAULT_CHUNKING, ...(j.chunkOptions || {}), batch: DEFAULT_BATCH });
  index.dim = j.dim;
  index.vectors = vectorsFromBase64(j.vectors, j.count * j.dim);
  index.chunks = j.chunks.map((c) => ({ ...c }));
  index.count = j.count;
  return index;
}
const DEFAULT_CHUNKING = { maxTokens: DEFAULT_MAX_TOKENS, overlap: DEFAULT_OVERLAP };
