// tests/cache-worker.mjs — the engine's worker (wasm_glue/worker.js) with a Cache API, for tests
// under Node, which has none: a CacheStorage whose entries' bodies are files in the folder
// WICK_TEST_CACHE_DIR, so that what download.js keeps for offline use (the whole file, the pieces
// of a download) is kept as a browser keeps it, outside the JS heap. Load it with the load
// option workerUrl. Only what download.js calls: caches.open/delete/keys, and a cache's
// match/put/delete/keys (with ignoreSearch).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const root = process.env.WICK_TEST_CACHE_DIR;
if (!root) throw new Error('tests/cache-worker.mjs: WICK_TEST_CACHE_DIR is not set');
const urlOf = (r) => (typeof r === 'string' ? r : r.url);
const withoutSearch = (u) => u.split('?')[0];

class DiskCache {
  constructor(dir) {
    this.dir = dir;
    this.entries = new Map(); // url → {file, headers}
    fs.mkdirSync(dir, { recursive: true });
  }

  async match(request) {
    const e = this.entries.get(urlOf(request));
    if (!e) return undefined;
    return new Response(Readable.toWeb(fs.createReadStream(e.file)), { headers: e.headers });
  }

  async put(request, response) {
    const url = urlOf(request);
    const file = path.join(this.dir, crypto.createHash('sha256').update(url).digest('hex'));
    if (response.body) await pipeline(Readable.fromWeb(response.body), fs.createWriteStream(file));
    else fs.writeFileSync(file, '');
    this.entries.set(url, { file, headers: [...response.headers] });
  }

  async delete(request) {
    const e = this.entries.get(urlOf(request));
    if (!e) return false;
    this.entries.delete(urlOf(request));
    fs.rmSync(e.file, { force: true });
    return true;
  }

  async keys(request, { ignoreSearch = false } = {}) {
    const want = request === undefined ? null : ignoreSearch ? withoutSearch(urlOf(request)) : urlOf(request);
    return [...this.entries.keys()].filter((u) => want === null || (ignoreSearch ? withoutSearch(u) : u) === want).map((url) => ({ url }));
  }
}

const stores = new Map();
globalThis.caches = {
  async open(name) {
    if (!stores.has(name)) stores.set(name, new DiskCache(path.join(root, encodeURIComponent(name))));
    return stores.get(name);
  },
  async delete(name) {
    const c = stores.get(name);
    if (!c) return false;
    stores.delete(name);
    fs.rmSync(c.dir, { recursive: true, force: true });
    return true;
  },
  async keys() { return [...stores.keys()]; },
  async has(name) { return stores.has(name); },
};

await import('../wasm_glue/worker.js');
