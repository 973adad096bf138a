// web/documents.js — the page's documents (issue 29): an embedding model loaded beside the chat
// model (its own engine, in its own worker, through Wick.load; the memory both take shown and
// checked before it loads), files (plain text, Markdown, HTML; PDF through Mozilla's pdfjs-dist)
// or pasted text split into chunks by that model's tokens, embedded with a progress bar, and kept
// in IndexedDB (text, vectors, source, file hash, the embedding model's id and file hash) so that
// they survive a reload and work offline. Each chat message then retrieves the top-k chunks by
// exact cosine similarity (wasm_glue/retrieval.mjs) through app.js's state.retrieve hook, and the
// answer lists them as its sources, each chunk's text a click away.
// Imported by app.js with import() once the page has started: no part of its first download.
import { Wick } from '../wasm_glue/wick.mjs';
import { createIndex, loadIndex, pageText, vectorsToBase64, INDEX_FORMAT, INDEX_VERSION } from '../wasm_glue/retrieval.mjs';
import { controlledByServiceWorker, engineWorkerUrl } from './coi.js';
import { el, formatBytes, formatCount, inspectFile, memoryCheck, RateMeter, progressText } from './util.js';

const DB_NAME = 'wick-documents';
const STORE = 'documents';
const SETTINGS_KEY = 'wick-documents-settings';
const PDFJS = new URL('../node_modules/pdfjs-dist/build/pdf.min.mjs', import.meta.url).href;
const PDFJS_WORKER = new URL('../node_modules/pdfjs-dist/build/pdf.worker.min.mjs', import.meta.url).href;
const GiB = 1024 ** 3;
const $ = (id) => document.getElementById(id);

// ---- IndexedDB: one record per document ----

function request(r) {
  return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
}

/** The documents' database, or null where the browser offers none (they then last until a reload). */
async function openDb() {
  if (typeof indexedDB === 'undefined') return null;
  const open = indexedDB.open(DB_NAME, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(STORE, { keyPath: 'id' });
  return request(open);
}

async function withStore(db, mode, fn) {
  const tx = db.transaction(STORE, mode);
  const result = await fn(tx.objectStore(STORE));
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); tx.onabort = () => reject(tx.error); });
  return result;
}

async function sha256(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- a file's text ----

let pdfjs = null;
/** The text of a PDF, page by page (pdfjs-dist, imported on the first PDF). */
async function pdfText(bytes) {
  if (!pdfjs) {
    pdfjs = await import(PDFJS);
    pdfjs.GlobalWorkerOptions.workerSrc = PDFJS_WORKER;
  }
  const doc = await pdfjs.getDocument({ data: bytes, isEvalSupported: false }).promise;
  try {
    const pages = [];
    for (let i = 1; i <= doc.numPages; i++) {
      const content = await (await doc.getPage(i)).getTextContent();
      pages.push(content.items.map((item) => (item.str ?? '') + (item.hasEOL ? '\n' : '')).join('').trim());
    }
    return pages.filter(Boolean).join('\n\n');
  } finally {
    await doc.destroy();
  }
}

/** {title, text, kind} of a file by its name or type: PDF, HTML, Markdown or plain text. */
export async function fileText(name, bytes) {
  if (/\.pdf$/i.test(name)) return { kind: 'pdf', title: name.replace(/\.[^.]*$/, ''), text: await pdfText(bytes.slice()) };
  const content = new TextDecoder().decode(bytes);
  const kind = /\.html?$/i.test(name) ? 'html' : /\.(md|markdown)$/i.test(name) ? 'markdown' : 'text';
  return { kind, ...pageText(content, name) };
}

// ---- the panel ----

function readSettings() {
  try { return JSON.parse(localStorage.getItem(SETTINGS_KEY)) || {}; } catch { return {}; }
}

export class Documents {
  /**
   * page: {state (app.js's), features, notice(kind, text), onCacheChange()}. Sets state.retrieve
   * (the retrieval of each chat message) and state.sourcesView (an answer's list of sources).
   */
  constructor(page) {
    this.page = page;
    this.state = page.state;
    this.docs = [];          // the stored records: {id, name, kind, title, bytes, sha256, added, model, chunks, vectors}
    this.engine = null;      // the embedding engine
    this.model = null;       // {id, dim, url?, sha256?, bytes} of the loaded embedding model
    this.chosen = null;      // the looked-at embedding model: {kind, source, label, bytes, check}
    this.index = null;       // the searchable index over the documents made with the loaded model
    this.busy = null;        // the add in progress
    this.settings = readSettings();
    this.state.retrieve = (message) => this.retrieve(message);
    this.state.sourcesView = (chunks) => sourcesView(chunks);
    this.wire();
    this.ready = this.start();
  }

  wire() {
    for (const r of document.querySelectorAll('input[name=emb-source]')) r.addEventListener('change', () => { this.showFields(); this.check(); });
    // (a click on Load fires the field's change first: the same URL is not looked at again, so
    // that the panel does not move under the pointer between the press and the release)
    $('emb-url').addEventListener('change', () => {
      const url = $('emb-url').value.trim();
      if (this.chosen?.kind === 'url' && url && this.chosen.source === new URL(url, location.href).href) return;
      this.check();
    });
    $('emb-file').addEventListener('change', () => this.check());
    $('emb-form').addEventListener('submit', (e) => { e.preventDefault(); this.load(); });
    $('emb-load').addEventListener('click', () => this.load());
    $('doc-files').addEventListener('change', () => {
      const files = [...$('doc-files').files];
      $('doc-files').value = '';
      if (files.length) this.addFiles(files);
    });
    $('doc-paste-add').addEventListener('click', () => {
      const text = $('doc-paste').value;
      if (!text.trim()) return;
      const name = $('doc-paste-name').value.trim() || `Pasted text ${new Date().toLocaleString()}`;
      this.addTexts([{ name, bytes: new TextEncoder().encode(text), kind: 'text' }]).then((ok) => { if (ok) $('doc-paste').value = ''; });
    });
    $('doc-k').value = String(this.settings.k ?? 3);
    $('doc-chunk-tokens').value = String(this.settings.chunkTokens ?? 256);
    $('docs-on').checked = this.settings.on !== false;
    for (const id of ['doc-k', 'doc-chunk-tokens', 'docs-on']) $(id).addEventListener('change', () => this.saveSettings());
  }

  saveSettings() {
    Object.assign(this.settings, { k: this.k(), chunkTokens: this.chunkTokens(), on: $('docs-on').checked });
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.settings));
  }

  k() { return Math.max(1, Math.min(32, Math.floor(Number($('doc-k').value)) || 3)); }
  chunkTokens() { return Math.max(16, Math.min(2048, Math.floor(Number($('doc-chunk-tokens').value)) || 256)); }

  showFields() {
    const kind = document.querySelector('input[name=emb-source]:checked').value;
    $('emb-url-field').hidden = kind !== 'url';
    $('emb-file-field').hidden = kind !== 'file';
  }

  async start() {
    if (this.settings.url) $('emb-url').value = this.settings.url;
    this.showFields();
    try {
      this.db = await openDb();
      if (this.db) this.docs = await withStore(this.db, 'readonly', (s) => request(s.getAll()));
      this.docs.sort((a, b) => a.added - b.added);
    } catch (e) {
      this.db = null;
      this.page.notice('warn', `Documents cannot be kept on this device (${e.message}): they last until the page is closed.`);
    }
    this.render();
    // documents kept from an earlier visit: their embedding model loads again (from the cache offline)
    if (this.docs.length && this.settings.url && document.querySelector('input[name=emb-source]:checked').value === 'url') {
      const chosen = await this.check();
      if (chosen && chosen.check.level !== 'error') await this.load();
    }
  }

  /** The chosen embedding model looked at (size, metadata, memory with the chat model's), not loaded. */
  async check() {
    const kind = document.querySelector('input[name=emb-source]:checked').value;
    const box = $('emb-check');
    let chosen;
    if (kind === 'url') {
      const url = $('emb-url').value.trim();
      if (!url) { box.replaceChildren(el('p', { className: 'hint' }, 'Enter the URL of an embedding model (.gguf), e.g. bge-small-en-v1.5.')); return (this.chosen = null); }
      chosen = { kind, source: new URL(url, location.href).href, label: url.split(/[?#]/)[0].split('/').pop() || url };
    } else {
      const file = $('emb-file').files[0];
      if (!file) { box.replaceChildren(el('p', { className: 'hint' }, 'Choose a .gguf embedding model.')); return (this.chosen = null); }
      chosen = { kind, source: file, label: file.name };
    }
    box.replaceChildren(el('p', { className: 'hint' }, `Looking at ${chosen.label}…`));
    try {
      const head = kind === 'file' ? await inspectFile(chosen.source) : await Wick.inspect(chosen.source);
      chosen.bytes = head.bytes;
      chosen.metadata = head.metadata;
      chosen.check = this.memory(memoryCheck({ bytes: head.bytes, metadata: head.metadata, tables: head.tables, threads: 1 }, this.page.features()));
      this.chosen = chosen;
      box.replaceChildren(el('p', { className: 'model-facts' }, `${chosen.label}: ${formatBytes(head.bytes)} · ${head.metadata['general.architecture'] ?? '?'}`),
        el('p', { className: `memory ${chosen.check.level}`, id: 'emb-memory', 'data-needed': String(chosen.check.needed ?? 0), 'data-both': String(chosen.check.both ?? 0),
          role: chosen.check.level === 'ok' ? null : 'alert' }, chosen.check.message));
      return chosen;
    } catch (e) {
      this.chosen = null;
      box.replaceChildren(el('p', { className: 'memory error', role: 'alert' }, `Cannot use ${chosen.label}: ${e.message}`));
      return null;
    }
  }

  /** The embedding model's own check, with what the chat model takes beside it: each engine has
   *  its own worker and wasm memory, both come out of the device's. */
  memory(check) {
    if (check.level === 'error') return check;
    const chat = this.state.source?.check?.needed || 0;
    const both = (check.needed || 0) + chat;
    const device = this.page.features()?.deviceMemoryGiB;
    let message = check.message;
    if (chat) message += ` With the chat model (about ${formatBytes(chat)}), both take about ${formatBytes(both)}.`;
    const level = device && both > (device * GiB) / 2 ? 'warn' : check.level;
    if (level === 'warn' && check.level !== 'warn') message += ` This device reports about ${device} GB of memory: the two may not fit together.`;
    return { ...check, both, level, message };
  }

  /** What the loaded embedding model takes, for the chat model's own check (app.js): bytes, or 0. */
  embedderBytes() { return this.engine ? this.model.needed || 0 : 0; }

  async load() {
    if (this.loading) return;
    const chosen = this.chosen && this.chosen.kind === document.querySelector('input[name=emb-source]:checked').value ? this.chosen : await this.check();
    if (!chosen || chosen.check.level === 'error') return;
    this.loading = new AbortController();
    const meter = new RateMeter();
    $('emb-progress').hidden = false;
    $('emb-load').disabled = true;
    const status = $('emb-status');
    status.textContent = '';
    const previous = this.engine;
    this.engine = this.index = null;
    await previous?.unload().catch(() => {});
    const options = {
      threads: 1,
      signal: this.loading.signal,
      onProgress: (p) => {
        if (p.phase === 'download') meter.add(p.loaded - (p.resumed || 0));
        $('emb-progress-bar').value = p.progress;
        $('emb-progress-text').textContent = progressText(p, meter);
      },
    };
    if (controlledByServiceWorker()) options.workerUrl = engineWorkerUrl();
    try {
      const engine = await Wick.load(chosen.source, options);
      // a generative model embeds only where its file sets a pooling type: try once, and say why not
      try { await engine.embed('test', { truncate: true }); } catch (e) { await engine.unload(); throw e; }
      this.engine = engine;
      const url = chosen.kind === 'url' ? chosen.source : null;
      this.model = { id: engine.info.name, dim: engine.info.embedding_length, bytes: chosen.bytes, url, needed: chosen.check.needed, sha256: await this.modelHash(chosen) };
      if (url) { this.settings.url = url; this.saveSettings(); }
      status.textContent = `Embedding model: ${engine.info.name} (${engine.info.architecture}, ${formatCount(this.model.dim)} dimensions, ` +
        `window ${formatCount(engine.info.contextSize)} tokens)${engine.info.fromCache ? ' from the cache' : ''}`;
      status.dataset.loaded = engine.info.name;
      await this.rebuild();
    } catch (e) {
      status.textContent = `Could not load ${chosen.label}: ${e.code ? `${e.code}: ` : ''}${e.message}`;
      status.dataset.loaded = '';
    } finally {
      this.loading = null;
      $('emb-progress').hidden = true;
      $('emb-load').disabled = false;
      this.render();
      this.page.onCacheChange?.();
    }
  }

  /** The SHA-256 of the embedding model's file: a local file read whole, a URL's copy in the cache (else unknown). */
  async modelHash(chosen) {
    try {
      if (chosen.kind === 'file') return await sha256(await chosen.source.arrayBuffer());
      const known = this.settings.hashes?.[chosen.source];
      if (known && known.bytes === chosen.bytes) return known.sha256;
      const kept = await globalThis.WickDownload?.keptFile(chosen.source);
      if (!kept) return undefined;
      const hash = await sha256(await kept.arrayBuffer());
      this.settings.hashes = { ...this.settings.hashes, [chosen.source]: { bytes: chosen.bytes, sha256: hash } };
      this.saveSettings();
      return hash;
    } catch {
      return undefined;
    }
  }

  /** Whether a stored document's vectors came from the loaded model (same id, dimensions and, where both are known, file). */
  matches(doc) {
    const m = this.model, d = doc.model;
    return !!m && d.id === m.id && d.dim === m.dim && !(d.sha256 && m.sha256 && d.sha256 !== m.sha256);
  }

  /** The index searched for each message: every document embedded with the loaded model. */
  async rebuild() {
    this.index = null;
    if (!this.engine) return;
    const docs = this.docs.filter((d) => this.matches(d));
    const count = docs.reduce((a, d) => a + d.chunks.length, 0);
    const vectors = new Float32Array(count * this.model.dim);
    const chunks = [];
    for (const d of docs) {
      vectors.set(d.vectors, chunks.length * this.model.dim);
      d.chunks.forEach((c, i) => chunks.push({ text: c.text, tokens: c.tokens, source: d.name, title: d.title, document: d.id, part: i }));
    }
    this.index = await loadIndex({ format: INDEX_FORMAT, version: INDEX_VERSION, model: { id: this.model.id, dim: this.model.dim }, dim: this.model.dim,
      count, chunks, vectors: vectorsToBase64(vectors) }, { engine: this.engine });
  }

  /** state.retrieve: the top-k chunks for a new user message ([] without documents or a model). */
  async retrieve(message) {
    // a message with images (content parts) is searched by its text
    const text = Array.isArray(message?.content) ? message.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n') : message?.content;
    if (!$('docs-on').checked || !this.index?.size || message?.role !== 'user' || typeof text !== 'string' || !text.trim()) return [];
    const t0 = performance.now();
    const hits = await this.index.search(text, this.k());
    this.lastSearch = { ms: performance.now() - t0, chunks: this.index.size };
    $('doc-search').textContent = `Last search: ${formatCount(this.index.size)} chunks in ${this.lastSearch.ms.toFixed(1)} ms (the query embedded, then every vector compared).`;
    return hits.map((h) => ({ text: h.text, source: h.source, title: h.title, score: h.score, document: h.document, part: h.part, tokens: h.tokens }));
  }

  async addFiles(files) {
    const items = [];
    for (const f of files) items.push({ name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) });
    return this.addTexts(items);
  }

  /** Reads, chunks, embeds and stores documents one after another: items [{name, bytes, kind?}]. */
  async addTexts(items) {
    const line = $('doc-progress-text');
    if (!this.engine) { line.textContent = 'Load an embedding model first: documents are embedded by it.'; $('doc-progress').hidden = false; return false; }
    if (this.busy) { line.textContent = 'Documents are being added: wait for them to finish.'; return false; }
    const engine = this.engine;
    this.busy = true;
    $('doc-progress').hidden = false;
    const bar = $('doc-progress-bar');
    let ok = true;
    try {
      for (const item of items) {
        bar.value = 0;
        bar.removeAttribute('data-done');
        line.textContent = `Reading ${item.name}…`;
        const hash = await sha256(item.bytes);
        if (this.docs.some((d) => d.sha256 === hash && this.matches(d))) { line.textContent = `${item.name} is already here.`; continue; }
        let page;
        try {
          page = item.kind === 'text' ? { kind: 'text', title: item.name, text: new TextDecoder().decode(item.bytes).trim() } : await fileText(item.name, item.bytes);
        } catch (e) {
          line.textContent = `Cannot read ${item.name}: ${e.message}`;
          ok = false;
          continue;
        }
        if (!page.text) { line.textContent = `${item.name} holds no text.`; ok = false; continue; }
        line.textContent = `Splitting ${item.name} into chunks…`;
        const maxTokens = Math.min(this.chunkTokens(), engine.info.contextSize || Infinity);
        const index = await createIndex(engine, { maxTokens, model: { id: this.model.id, sha256: this.model.sha256 } });
        const t0 = performance.now();
        await index.add([{ text: page.text, source: item.name, title: page.title }], {
          onProgress: (p) => {
            bar.max = Math.max(1, p.total);
            bar.value = p.chunks;
            bar.dataset.chunks = String(p.chunks);
            bar.dataset.total = String(p.total);
            line.textContent = `${item.name}: ${formatCount(p.chunks)} / ${formatCount(p.total)} chunks embedded` +
              (p.chunks ? ` · ${p.chunksPerSecond ? p.chunksPerSecond.toFixed(1) : '…'} chunks/s` : '');
          },
        });
        if (engine !== this.engine) return false; // another embedding model was loaded meanwhile
        const n = index.size;
        const doc = {
          id: `${Date.now().toString(36)}-${hash.slice(0, 12)}`, name: item.name, kind: page.kind, title: page.title, bytes: item.bytes.length, sha256: hash,
          added: Date.now(), model: { id: this.model.id, dim: this.model.dim, sha256: this.model.sha256, url: this.model.url },
          chunkTokens: maxTokens, chunks: index.chunks.slice(0, n).map((c) => ({ text: c.text, tokens: c.tokens })),
          vectors: index.vectors.slice(0, n * index.dim),
        };
        if (this.db) await withStore(this.db, 'readwrite', (s) => request(s.put(doc)));
        this.docs.push(doc);
        const seconds = (performance.now() - t0) / 1000;
        bar.dataset.done = 'true';
        line.textContent = `${item.name}: ${formatCount(n)} chunks embedded in ${seconds.toFixed(1)} s (${(n / Math.max(seconds, 1e-3)).toFixed(1)} chunks/s).`;
        await this.rebuild();
        this.render();
      }
    } catch (e) {
      line.textContent = `Could not add the document: ${e.code ? `${e.code}: ` : ''}${e.message}`;
      ok = false;
    } finally {
      this.busy = false;
    }
    return ok;
  }

  async remove(id) {
    if (this.db) await withStore(this.db, 'readwrite', (s) => request(s.delete(id)));
    this.docs = this.docs.filter((d) => d.id !== id);
    await this.rebuild();
    this.render();
  }

  render() {
    const list = $('doc-list');
    list.replaceChildren(...this.docs.map((d) => {
      const sizes = d.chunks.map((c) => c.tokens);
      const mean = sizes.length ? Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length) : 0;
      const usable = this.matches(d);
      const facts = `${d.kind} · ${formatBytes(d.bytes)} · ${formatCount(d.chunks.length)} chunk${d.chunks.length === 1 ? '' : 's'} of ` +
        `${formatCount(Math.min(...sizes))}–${formatCount(Math.max(...sizes))} tokens (mean ${formatCount(mean)})`;
      const chunks = el('details', { className: 'doc-chunks' }, el('summary', {}, 'Chunks'),
        el('ol', {}, ...d.chunks.map((c) => el('li', { title: `${c.tokens} tokens` }, el('span', { className: 'hint' }, `${c.tokens} tok: `), c.text))));
      return el('li', { className: `doc-entry${usable ? '' : ' unusable'}`, 'data-id': d.id, 'data-name': d.name, 'data-chunks': String(d.chunks.length) },
        el('span', { className: 'doc-name', title: `SHA-256 ${d.sha256}` }, d.title && d.title !== d.name.replace(/\.[^.]*$/, '') ? `${d.title} (${d.name})` : d.name),
        el('span', { className: 'doc-facts hint' }, facts,
          usable ? '' : ` · embedded with ${d.model.id} (${d.model.dim} dimensions): not searched until that model is loaded`),
        chunks,
        el('button', { type: 'button', className: 'small doc-remove', 'aria-label': `Remove ${d.name}`, onclick: () => this.remove(d.id) }, 'Remove'));
    }));
    if (!this.docs.length) list.append(el('li', { className: 'hint' }, 'No documents yet: add files or paste text; they are kept on this device.'));
    list.dataset.count = String(this.docs.length);
    const total = this.docs.reduce((a, d) => a + d.chunks.length, 0);
    $('doc-summary').textContent = this.docs.length
      ? `${this.docs.length} document${this.docs.length === 1 ? '' : 's'}, ${formatCount(total)} chunks${this.index ? `; ${formatCount(this.index.size)} searched with ${this.model.id}` : '; load their embedding model to search them'}.`
      : '';
    $('doc-files').disabled = $('doc-paste-add').disabled = !this.engine;
  }
}

/** The sources of an answer: one <details> per chunk (its document, its number, its score) that opens on its text. */
export function sourcesView(chunks) {
  if (!chunks?.length) return null;
  return el('section', { className: 'sources', 'data-count': String(chunks.length) },
    el('h4', {}, `Sources (${chunks.length})`),
    ...chunks.map((c, i) => el('details', { className: 'source', 'data-source': c.source ?? '', 'data-part': String(c.part ?? ''), 'data-score': typeof c.score === 'number' ? c.score.toFixed(4) : '' },
      el('summary', {}, `[${i + 1}] ${c.title && c.title !== c.source ? `${c.title} (${c.source})` : c.source ?? 'document'}` +
        `${c.part !== undefined ? ` · chunk ${c.part + 1}` : ''}${typeof c.score === 'number' ? ` · score ${c.score.toFixed(3)}` : ''}`),
      el('p', { className: 'source-text' }, c.text))));
}
