// tools/search-bench-core.mjs — the timed part of tools/bench-search.mjs, run as it is under
// Node and in Chromium (tools/bench-page/search.html): an index of `count` random unit vectors
// of `dim` values (a seeded generator: the same vectors everywhere) loaded with loadIndex, then
// `queries` searches for the k best, each timed alone after a few warm-up searches.
import { loadIndex, vectorsToBase64 } from '../wasm_glue/retrieval.mjs';

function random(seed) {
  let s = seed >>> 0;
  return () => { s = (s + 0x6d2b79f5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32 - 0.5; };
}

function unitRows(n, dim, next) {
  const v = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let ss = 0;
    for (let j = 0; j < dim; j++) { const x = next(); v[i * dim + j] = x; ss += x * x; }
    const inv = 1 / Math.sqrt(ss);
    for (let j = 0; j < dim; j++) v[i * dim + j] *= inv;
  }
  return v;
}

/** {median, p95, max, min} milliseconds of one search over count × dim, and the index's load time. */
export async function benchSearch({ count = 10000, dim = 384, k = 5, queries = 100, warmup = 10, seed = 1 } = {}) {
  const next = random(seed);
  const vectors = unitRows(count, dim, next);
  const chunks = Array.from({ length: count }, (_, i) => ({ text: `chunk ${i}`, source: `page-${i % 100}.html`, tokens: 64 }));
  const t0 = performance.now();
  const index = await loadIndex({ format: 'wick-index', version: 1, model: { id: 'random', dim }, dim, count, chunks, vectors: vectorsToBase64(vectors) });
  const loadMs = performance.now() - t0;
  const qs = unitRows(queries + warmup, dim, next);
  const times = [];
  for (let i = 0; i < queries + warmup; i++) {
    const q = qs.subarray(i * dim, (i + 1) * dim);
    const start = performance.now();
    const hits = await index.search(q, k);
    const ms = performance.now() - start;
    if (hits.length !== k) throw new Error(`${hits.length} hits, wanted ${k}`);
    if (i >= warmup) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const at = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  return { count, dim, k, queries, median: at(0.5), p95: at(0.95), min: times[0], max: times.at(-1), loadMs };
}
