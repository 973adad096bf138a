/* wasm_glue/download.js — a model's bytes on their way into wasm memory: from the network
 * (Range requests that resume a download broken off, If-Range so that a changed file comes
 * whole), from the Cache API (the whole files kept for offline use, and the pieces of a download
 * kept as they arrive, so that a load cut by a reload or an abort resumes where it stopped), from
 * a Blob, a file (Node) or chunks pushed by the host; the GGUF magic, header and memory need
 * checked as the bytes come; and the progress of a load.
 *
 * A plain script with no import/export, as gguf-header.js: the engine's worker loads it
 * (importScripts on a page, as a script under Node) and calls createLoader once the wasm module
 * is up; wick.mjs imports it for the cache's layout (Wick.cache). It defines one global,
 * `WickDownload`.
 *
 * Progress: every event has `phase` ('download': the bytes read, from the network or the cache;
 * 'store': the bytes written to the Cache API; 'load': 0, then all, the model taken in by the
 * engine), `loaded` of `total` (bytes of the whole model, all parts, within that phase) and
 * `progress`, the whole load from 0 to 1, which never decreases: each part of a split model has a
 * share of BEFORE_LOAD proportional to its size (equal shares when the sizes are not known
 * beforehand), of which STORE_SHARE is writing it to the cache when it is kept there; the load
 * into the engine is the rest. */
'use strict';
(function (root) {
  // the Cache API stores (constants.js, loaded before this script): whole files, and unfinished
  // downloads, one record per URL (the key) and pieces under PIECE_URL (see PartialDownload)
  const CACHE_NAME = root.WickConstants.CACHE_NAMES.models;
  const PARTIAL_CACHE = root.WickConstants.CACHE_NAMES.partial;
  const PIECE_URL = 'https://wick.invalid/piece';
  const RESUME_ATTEMPTS = 5;     // Range requests after a download breaks off
  const CACHE_WRITE_CHUNK = 1 << 20;
  const PROGRESS_INTERVAL_MS = 50;
  const HEADER_FIRST_TRY = 1 << 16; // bytes of the file before the first try at its header
  const BEFORE_LOAD = 0.95;         // of `progress`: reading (and keeping) the file; the load into the engine is the rest
  const STORE_SHARE = 0.2;          // of a part's share: writing it to the Cache API, when it is kept
  const OUTSIDE_PIECE = 1 << 30;    // bytes of one JS buffer of a table kept outside wasm memory
  // the most of a file its row tables can be (Gemma 4 E2B's per-layer embeddings are 46% of an F16
  // file, more where the layers are quantized and the table less so): a larger file is refused at once
  const ROW_TABLE_SHARE = 0.6;

  /**
   * The overall measure of one load: part(i, phase, fraction, storing) when part i is `fraction`
   * read ('download') or written to the cache ('store'; storing: it will be), load(fraction) for
   * the load into the engine; each returns `progress`, never less than the one before.
   */
  function loadProgress(sizes, parts) {
    const known = sizes.length === parts && sizes.every((n) => n > 0);
    const weight = (i) => (known ? sizes[i] : 1);
    let sum = 0;
    const starts = [];
    for (let i = 0; i < parts; i++) { starts.push(sum); sum += weight(i); }
    let best = 0;
    const measure = (value) => (best = Math.max(best, Math.min(1, value)));
    return {
      part(i, phase, fraction, storing) {
        const read = storing ? 1 - STORE_SHARE : 1;
        const within = phase === 'store' ? read + STORE_SHARE * fraction : read * fraction;
        return measure((BEFORE_LOAD * (starts[i] + weight(i) * Math.min(1, within))) / sum);
      },
      load(fraction) { return measure(BEFORE_LOAD + (1 - BEFORE_LOAD) * fraction); },
    };
  }

  /**
   * The reader of one engine's loads. M: the Emscripten module (its heap and the engine's buffer
   * allocator); post(message): to the host; aborted: the ids of the requests aborted; threads:
   * the engine's (they count in the memory need); summarize(header): the metadata sent to the
   * host; WorkerError: the error class whose `code` the host receives; node: under Node, its
   * modules {fs, Readable} (file paths; a script has no import() there).
   */
  function createLoader({ M, post, aborted, threads, summarize, WorkerError, node }) {
    const feeds = new Map();  // load id → pushed data {chunks, wake, ended}

    function throwIfAborted(id) {
      if (aborted.has(id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
    }

    /**
     * Reports one phase of one part of a load at most every PROGRESS_INTERVAL_MS, `loaded` never
     * going backwards (bytes of the whole model: sink.before, the earlier parts, and this one's,
     * of `size`). report.resumed: the bytes of this file read back from an earlier, unfinished
     * download (added to sink.resumedBefore, the earlier files' own).
     */
    function progressReporter(sink, phase, size, cached) {
      let last = 0, best = 0;
      const report = (loaded, force) => {
        best = Math.max(best, loaded);
        const now = performance.now();
        if (!force && now - last < PROGRESS_INTERVAL_MS) return;
        last = now;
        const progress = sink.progress.part(sink.index, phase, size ? (best - sink.before) / size : 0, sink.storing);
        post({ id: sink.id, type: 'progress', phase, loaded: best, total: sink.total || sink.before + size, progress, cached, resumed: sink.resumedBefore + report.resumed });
      };
      report.resumed = 0;
      return report;
    }

    /**
     * Reads every part of a source into its own allocation, in order, pushing each {ptr, size,
     * cached, resumed} onto `parts` as it is read (the caller frees them when a later step
     * fails). Returns {meta (the first part's header summary, or null when it was not read as
     * the bytes came), progress (the load's overall measure, for the phase after)}.
     * opts.gpu: the GPU path is taken if the model allows: accepts(header, size, weights (its
     *   gpuWeights)) says from the first part's header whether its weight matrices stay outside wasm memory (gguf-header.js,
     *   gpuWeights), their bytes held in JS until they are on the GPU (it may throw to refuse).
     * opts.gpuReason: why there is no GPU path (said when a model does not fit without one).
     * opts.maxHeapBytes: a cap on wasm memory below wasm32's (tests). opts.keptOnly: read only
     *   what is kept (the Cache API's copy, a file, a Blob), never the network: a copy that is not
     *   there is an E_FETCH error (the CPU fallback of a model whose weights were on the GPU).
     */
    async function readParts(id, source, contextSize, kvType, parts, tablesOutside, opts = {}) {
      const sizes = source.sizes || [];
      const total = sizes.length === source.items.length ? sizes.reduce((a, b) => a + b, 0) : 0;
      const progress = loadProgress(sizes, source.items.length);
      let before = 0, resumedBefore = 0, meta = null;
      const outside = { value: tablesOutside === true, weights: false };
      const { gpu = null, gpuReason = null, maxHeapBytes = 0, keptOnly = false, mmproj = false } = opts;
      if (mmproj && source.items.length !== 1) throw new WorkerError('E_INVALID_ARG', 'an mmproj is one file');
      for (let i = 0; i < source.items.length; i++) {
        const sink = { id, index: i, first: i === 0 && !mmproj, mmproj, before, resumedBefore, total, contextSize, kvType, progress, storing: false, meta: null, tablesOutside, outside,
          gpu, gpuReason, maxHeapBytes, keptOnly };
        const part = await readSource(source.kind, source.items[i], sink);
        parts.push(part);
        before += part.size;
        resumedBefore += part.resumed || 0;
        if (i === 0) meta = sink.meta;
      }
      throwIfAborted(id);
      return { meta, progress };
    }

    async function readSource(kind, item, sink) {
      if (kind === 'url') return readUrl(item, sink);
      if (kind === 'blob') return readStream(item.stream(), item.size, sink, false);
      if (kind === 'path') {
        const { fs } = node;
        let size;
        try {
          size = fs.statSync(item).size;
        } catch (e) {
          throw new WorkerError('E_FETCH', `could not read ${item}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
        }
        return readStream(node.Readable.toWeb(fs.createReadStream(item, { highWaterMark: 1 << 20 })), size, sink, false);
      }
      if (kind === 'push') {
        if (sink.keptOnly) throw new WorkerError('E_FETCH', 'an ArrayBuffer source is not kept anywhere');
        return readStream(feedStream(sink.id), item.size, sink, false);
      }
      throw new WorkerError('E_INVALID_ARG', `unknown source kind ${kind}`);
    }

    /**
     * Checks the size before any byte is read: the file alone against wasm32 and the allocator,
     * less the most its row tables can be of it where they may stay outside (the header decides).
     */
    function checkSize(size, sink) {
      // on the GPU path the weights may stay outside wasm memory: the header says how much (readHeader);
      // an mmproj is checked by its header (readHeader)
      if (sink.gpu || sink.mmproj) return;
      const fileBytes = sink.before + size, inside = Math.ceil(fileBytes * (1 - (sink.tablesOutside === false ? 0 : ROW_TABLE_SHARE)));
      const fits = WickGguf.checkFits({ fileBytes: inside, contextSize: sink.contextSize, kvTypeK: sink.kvType?.k, kvTypeV: sink.kvType?.v, threads, maxHeapBytes: sink.maxHeapBytes });
      if (!fits.fits) throw tooLarge(fileBytes, fits.needed + fileBytes - inside, fits.available, fits.capped, sink.gpuReason);
    }

    function tooLarge(fileBytes, needed, available, capped, gpuReason) {
      return new WorkerError('E_TOO_LARGE', WickGguf.tooLargeMessage(null, { fileBytes, needed, available, capped, needsGpu: !!gpuReason, gpuReason }));
    }

    /**
     * Streams `stream` (size bytes) into a new allocation, checking the GGUF magic and, once the
     * header has arrived, the full memory need (file + KV cache for the asked context).
     * resume(loaded, error) → {reader, from} that continues at byte `from` (loaded, or 0 when the
     * file is sent again whole), or null: give up. With no stream, resume is asked for the first one.
     * opts.stored: where the download is kept as it arrives (a PartialDownload); with
     *   opts.fromStore, the bytes it holds from an earlier load are read in first (progress says
     *   how many in `resumed`) and resume continues after them.
     */
    async function readStream(stream, size, sink, cached, resume, opts = {}) {
      checkSize(size, sink);
      const report = progressReporter(sink, 'download', size, cached);
      const stored = opts.stored || null;
      let loaded = 0, nextHeaderTry = HEADER_FIRST_TRY;
      let reader = null, image = null, staged = [];
      // the first bytes are held here until the part's tensor directory has come: it says which
      // ranges stay outside wasm memory, and so how much to allocate
      const stagedBytes = () => concat(staged, staged.reduce((a, c) => a + c.length, 0));
      const bytesOf = (from, to) => (image ? image.slice(from, to) : stagedBytes().slice(from, to));
      const place = (chunk, at) => {
        if (image) return image.set(chunk, at);
        if (at === 0) staged = [];
        staged.push(chunk.slice());
        const got = at + chunk.length;
        if (got < 4) return;
        if (got - chunk.length < 4 && !WickGguf.isGguf(stagedBytes().subarray(0, 4))) throw notGguf(stagedBytes().subarray(0, 64));
        if (got < nextHeaderTry && got < size) return;
        nextHeaderTry = got * 2;
        const head = stagedBytes();
        const header = readHeader(head, size, sink);
        if (!header) return;
        image = fileImage(size, [...(sink.outside.value ? WickGguf.rowTables(header, size) : []), ...(sink.outside.weights ? WickGguf.gpuWeights(header, size) : [])]
          .sort((a, b) => a.offset - b.offset));
        staged = [];
        image.set(head, 0);
      };
      try {
        reader = stream ? stream.getReader() : null;
        report(sink.before, true);
        if (stored && opts.fromStore) {
          loaded = await stored.readInto(place, (n) => { throwIfAborted(sink.id); report.resumed = n; report(sink.before + n, false); });
          if (loaded) report(sink.before + loaded, true);
        }
        for (;;) {
          throwIfAborted(sink.id);
          let step;
          try {
            step = reader ? await reader.read() : { done: true };
          } catch (e) {
            if (e.code === 'E_ABORTED' || aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
            step = { done: true, error: e };
          }
          if (step.done) {
            if (loaded === size) break;
            const next = resume && (await resume(loaded, step.error));
            if (!next) throw new WorkerError('E_FETCH', `the download ended after ${loaded} of ${size} bytes${step.error ? `: ${step.error.message}` : ''}`);
            reader = next.reader;
            if (next.from !== loaded && stored) await stored.restart(next.validator);
            loaded = next.from;
            continue;
          }
          const chunk = step.value;
          if (loaded + chunk.length > size) throw new WorkerError('E_FETCH', `the server sent more than the announced ${size} bytes`);
          place(chunk, loaded);
          loaded += chunk.length;
          if (stored && image) await stored.arrived(bytesOf, loaded);
          report(sink.before + loaded, false);
        }
        if (!image) throw size < 4 || !WickGguf.isGguf(stagedBytes()) ? notGguf(stagedBytes().subarray(0, 64)) : new WorkerError('E_NOT_GGUF', 'not a valid GGUF file: the header runs past its end');
        report(sink.before + size, true);
        return { ptr: image.ptr, size, heapBytes: image.heapBytes, image, cached, resumed: report.resumed };
      } catch (e) {
        // the bytes that came are kept for the next load, unless they are not a model this engine takes
        if (stored) await (DROP_KEPT_AFTER.has(e.code) ? stored.drop() : stored.keepUpTo(bytesOf, loaded));
        image?.free();
        reader?.cancel().catch(() => {});
        throw e;
      }
    }

    /**
     * Where one file's bytes go: wasm memory, but for the holes (ranges {offset, bytes} in order:
     * the row tables kept outside it), which are held in JS in pieces of at most OUTSIDE_PIECE
     * bytes (V8 caps one ArrayBuffer). set/slice take file offsets; readInto(offset, dst, n)
     * copies bytes of a hole into wasm memory (the engine's row reads, Module.wickReadRows);
     * view(offset, n) is a view where the bytes lie in one place (a copy otherwise); release(h)
     * lets hole h's bytes go (they are on the GPU); heldBytes() counts what holes still hold.
     */
    function fileImage(size, holes) {
      const outside = holes.reduce((a, h) => a + h.bytes, 0), heapBytes = size - outside;
      // a model buffer may be larger than one malloc can give: the engine's own allocator
      const ptr = M._wick_buffer_alloc(heapBytes) >>> 0;
      if (!ptr) throw new WorkerError('E_TOO_LARGE', `out of wasm memory: could not allocate ${heapBytes} bytes for the model`);
      const pieces = holes.map((h) => {
        const list = [];
        for (let at = 0; at < h.bytes; at += OUTSIDE_PIECE) list.push(new Uint8Array(Math.min(OUTSIDE_PIECE, h.bytes - at)));
        return list;
      });
      // fn(piece (null: wasm memory), its offset (an address in wasm memory), offset from `from`, length) over [from, from + n)
      const each = (from, n, fn) => {
        let pos = from, cut = 0;
        const end = from + n;
        for (let h = 0; h <= holes.length && pos < end; h++) {
          const start = h < holes.length ? holes[h].offset : Infinity, stop = h < holes.length ? start + holes[h].bytes : Infinity;
          if (pos < start) {
            const len = Math.min(end, start) - pos;
            fn(null, ptr + pos - cut, pos - from, len);
            pos += len;
          }
          while (pos < end && pos < stop) {
            const inHole = pos - start, piece = pieces[h][Math.floor(inHole / OUTSIDE_PIECE)], at = inHole % OUTSIDE_PIECE;
            const len = Math.min(end - pos, piece.length - at);
            fn(piece, at, pos - from, len);
            pos += len;
          }
          if (h < holes.length) cut += holes[h].bytes;
        }
      };
      return {
        ptr, size, heapBytes, outsideBytes: outside, holes,
        set(chunk, at) { each(at, chunk.length, (piece, where, off, len) => (piece || M.HEAPU8).set(chunk.subarray(off, off + len), where)); },
        slice(from, to) {
          const out = new Uint8Array(to - from);
          each(from, to - from, (piece, where, off, len) => out.set((piece || M.HEAPU8).subarray(where, where + len), off));
          return out;
        },
        readInto(offset, dst, n) {
          if (offset + n > size) return false;
          each(offset, n, (piece, where, off, len) => M.HEAPU8.set(piece ? piece.subarray(where, where + len) : M.HEAPU8.slice(where, where + len), dst + off));
          return true;
        },
        view(offset, n) {
          let found = null, parts = 0;
          each(offset, n, (piece, where, off, len) => { parts++; found = (piece || M.HEAPU8).subarray(where, where + len); });
          return parts === 1 ? found : this.slice(offset, offset + n);
        },
        holeAt(offset) { return holes.findIndex((h) => offset >= h.offset && offset < h.offset + h.bytes); },
        release(h) { if (pieces[h]) pieces[h] = pieces[h].map(() => null); },
        heldBytes() { return pieces.reduce((a, list) => a + list.reduce((b, p) => b + (p ? p.length : 0), 0), 0); },
        free() { M._wick_buffer_free(ptr, heapBytes); pieces.length = 0; },
      };
    }

    /**
     * A body of unknown size (no Content-Length, or a compressed transfer): its chunks are held in
     * JS until it ends, then copied into wasm memory, so the peak is about twice the file.
     */
    async function readUnsized(stream, sink) {
      const chunks = [];
      let loaded = 0;
      const report = progressReporter(sink, 'download', 0, false);
      const reader = stream.getReader();
      for (;;) {
        throwIfAborted(sink.id);
        let step;
        try {
          step = await reader.read();
        } catch (e) {
          throw new WorkerError(aborted.has(sink.id) ? 'E_ABORTED' : 'E_FETCH', `the download broke off after ${loaded} bytes: ${e.message}`);
        }
        if (step.done) break;
        chunks.push(step.value);
        loaded += step.value.length;
        if (chunks.length === 1 || loaded - step.value.length < 4) {
          const first = concat(chunks, Math.min(loaded, 64));
          if (first.length >= 4 && !WickGguf.isGguf(first)) { reader.cancel().catch(() => {}); throw notGguf(first); }
        }
        checkSize(loaded, sink);
        report(sink.before + loaded, false);
      }
      const all = concat(chunks, loaded);
      chunks.length = 0;
      return readStream(new Blob([all]).stream(), loaded, sink, false);
    }

    function concat(chunks, n) {
      const out = new Uint8Array(n);
      let o = 0;
      for (const c of chunks) {
        if (o >= n) break;
        const take = Math.min(c.length, n - o);
        out.set(c.subarray(0, take), o);
        o += take;
      }
      return out;
    }

    /**
     * The header of a part from its first bytes (with its tensor directory), or null when more
     * are needed. The first part's is checked: the architecture, and the memory need, which
     * decides whether the row tables stay outside wasm memory (sink.outside, for every part).
     */
    function readHeader(head, size, sink) {
      let header;
      try {
        header = WickGguf.parseHeader(head, { keepArrays: sink.first ? ['tokenizer.ggml.tokens'] : [], tensors: true });
      } catch (e) {
        if (e instanceof WickGguf.NeedMoreBytes && head.length < size) return null;
        throw new WorkerError('E_NOT_GGUF', `not a valid GGUF file: ${e.message}`);
      }
      if (sink.mmproj) {
        // an unknown projector is refused by name from the header, before the rest arrives
        const md = header.metadata, projector = md['clip.projector_type'] ?? md['clip.vision.projector_type'];
        if (md['general.architecture'] !== 'clip') throw new WorkerError('E_UNSUPPORTED', `the mmproj's general.architecture is ${JSON.stringify(md['general.architecture'])}, not 'clip': not an mmproj file`);
        if (!WickConstants.VISION_PROJECTORS.includes(projector))
          throw new WorkerError('E_UNSUPPORTED', `mmproj: projector '${projector}' is not supported (supported: ${WickConstants.VISION_PROJECTORS.join(', ')})`);
        return header;
      }
      if (!sink.first) return header;
      const unsupported = WickGguf.unsupportedReason(header.metadata);
      if (unsupported) throw new WorkerError('E_UNSUPPORTED', unsupported);
      sink.meta = summarize(header);
      // the GPU path: the weight matrices stay outside wasm memory when the model can run there
      // (checkFits sees them either way, to say when a model needs a GPU)
      const all = WickGguf.gpuWeights(header, size), weights = sink.gpu && sink.gpu.accepts(header, size, all) ? all : [];
      const tables = WickGguf.rowTables(header, size);
      const fits = WickGguf.checkFits({ fileBytes: sink.total || size, metadata: header.metadata, contextSize: sink.contextSize, kvTypeK: sink.kvType?.k, kvTypeV: sink.kvType?.v, threads,
        tables, tablesOutside: sink.tablesOutside, weights: all, weightsOutside: weights.length > 0, maxHeapBytes: sink.maxHeapBytes });
      if (!fits.fits) throw new WorkerError('E_TOO_LARGE', WickGguf.tooLargeMessage(header.metadata, { ...fits, gpuReason: fits.needsGpu ? sink.gpuReason : null }));
      sink.outside.weights = weights.length > 0;
      sink.outside.value = fits.outsideBytes - weights.reduce((a, t) => a + t.bytes, 0) > 0;
      return header;
    }

    function notGguf(first) {
      const text = new TextDecoder().decode(first).replace(/\s+/g, ' ').trim();
      const html = /^<(!doctype|html|head|body|\?xml)/i.test(text);
      return new WorkerError('E_NOT_GGUF', html ? `got an HTML page instead of a GGUF model ("${text.slice(0, 40)}…")` : 'not a GGUF file (the first bytes are not "GGUF")');
    }

    // ---- from the network, through the Cache API ----

    async function openCache() {
      if (typeof caches === 'undefined') return null;
      try { return await caches.open(CACHE_NAME); } catch { return null; }
    }

    async function readUrl({ url, cache: useCache }, sink) {
      const cache = useCache ? await openCache() : null;
      if (cache) {
        const hit = await cache.match(url);
        const bytes = hit && Number(hit.headers.get('X-Wick-Bytes'));
        if (hit && bytes > 0 && hit.body) {
          try {
            return await readStream(hit.body, bytes, sink, true);
          } catch (e) {
            if (e.code === 'E_ABORTED' || e.code === 'E_TOO_LARGE' || sink.keptOnly) throw e;
            await cache.delete(url); // a damaged entry: fetch the file again
          }
        }
      }
      if (sink.keptOnly)
        throw new WorkerError('E_FETCH', `${url} is not kept (${!useCache ? 'the load said cache: false' : cache ? 'not in the Cache API' : 'no Cache API here'})`);
      // the bytes of an unfinished download of this URL, kept beside the whole files
      const stored = cache ? await PartialDownload.open(url) : null;
      sink.storing = !!cache; // the file is kept once read: the part's share of progress has a 'store' phase
      const controller = new AbortController();
      const abortPoll = setInterval(() => { if (aborted.has(sink.id)) controller.abort(); }, 50);
      // the whole file is kept, then its pieces go; when there is no room for both, the pieces go first
      const finish = async (part) => {
        const report = progressReporter(sink, 'store', part.size, false);
        const onBytes = (n, force) => report(sink.before + n, force);
        if (cache && !(await storeInCache(cache, url, part, onBytes, !!stored)) && stored) {
          await stored.drop();
          await storeInCache(cache, url, part, onBytes);
        }
        await stored?.drop();
        return part;
      };
      try {
        let first = null;
        if (stored && (await stored.load())) {
          // an earlier load stopped part way: its bytes from the store, then the rest with Range
          try {
            const resume = resumer(url, stored.validator, stored.total, controller.signal, sink, true);
            return await finish(await readStream(null, stored.total, sink, false, resume, { stored, fromStore: true }));
          } catch (e) {
            if (e.code !== 'E_START_OVER') throw e;
            first = e.response; // the whole file as it is now (If-Range did not match), or null
          }
        }
        first ||= await fetchChecked(url, {}, controller.signal, sink);
        const size = first.size;
        const validator = validatorOf(first.response);
        // a file is kept as it comes only when a later load can check that it has not changed
        const keep = stored && size !== null && validator ? stored.begin(validator, size) : null;
        const part = size === null
          ? await readUnsized(first.response.body, sink)
          : await readStream(first.response.body, size, sink, false, resumer(url, validator, size, controller.signal, sink, false), { stored: keep });
        return await finish(part);
      } finally {
        clearInterval(abortPoll);
      }
    }

    /**
     * What identifies the version of a file, for If-Range: its ETag when strong (a weak one never
     * matches If-Range), else its Last-Modified date; null: neither.
     */
    function validatorOf(response) {
      const etag = response.headers.get('ETag');
      return (etag && !etag.startsWith('W/') ? etag : null) || response.headers.get('Last-Modified');
    }

    /** The one error that is not an error: the kept bytes are stale, the file is downloaded again. */
    function startOver(response) {
      const e = new WorkerError('E_START_OVER', 'the file changed since its bytes were kept');
      e.response = response;
      return e;
    }

    /**
     * The function readStream asks for the rest of the file from byte `loaded`: a Range request
     * with If-Range, so that a file changed in between comes whole (200) instead of spliced.
     * fromStore: the first call continues bytes read back from the store, on a new visit: a 206
     * that starts at `loaded` with the same total and validator continues; anything else throws
     * startOver (the kept bytes are dropped). The calls after it, like those of a fresh download,
     * follow a body that broke off: RESUME_ATTEMPTS tries, a pause growing between them.
     */
    function resumer(url, validator, size, signal, sink, fromStore) {
      let attempts = 0, continuing = fromStore;
      const rangeFetch = (loaded, ifRange) => fetch(url, { headers: ifRange ? { Range: `bytes=${loaded}-`, 'If-Range': ifRange } : { Range: `bytes=${loaded}-` }, signal, cache: 'no-store' });
      const contentRange = (r) => {
        const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(r.headers.get('Content-Range') || '');
        return m && { start: Number(m[1]), total: Number(m[3]) };
      };
      const resume = async (loaded, error) => {
        if (continuing) {
          continuing = false;
          if (loaded === 0) throw startOver(null);
          let next, ifRange = validator;
          try {
            next = await rangeFetch(loaded, ifRange);
          } catch (e) {
            if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
            // If-Range is not a CORS-safelisted header: a cross-origin host may refuse its preflight;
            // then Range alone, and the validator of the answer is compared here
            ifRange = null;
            try { next = await rangeFetch(loaded, null); } catch {
              if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
              throw new WorkerError('E_FETCH', `could not fetch ${url}: ${e.message} (the network is down, the host is unreachable, or the server refused a cross-origin request: CORS); ${loaded} bytes of an earlier download are kept for the next try`);
            }
          }
          const range = contentRange(next);
          // a 206 to If-Range is the same version even when it repeats no validator
          const version = validatorOf(next) || ifRange;
          if (next.status === 206 && range && range.start === loaded && range.total === size && version === validator)
            return { reader: next.body.getReader(), from: loaded };
          if (next.status === 200) throw startOver(checkedResponse(url, next));
          next.body?.cancel().catch(() => {});
          throw startOver(null);
        }
        if (aborted.has(sink.id) || attempts++ >= RESUME_ATTEMPTS) return null;
        await new Promise((r) => setTimeout(r, 100 * attempts));
        let next;
        try {
          next = await rangeFetch(loaded, validator);
        } catch {
          return resume(loaded, error);
        }
        const range = contentRange(next);
        if (next.status === 206 && range && range.start === loaded && range.total === size) return { reader: next.body.getReader(), from: loaded };
        if (next.status === 200 && Number(next.headers.get('Content-Length')) === size) return { reader: next.body.getReader(), from: 0, validator: validatorOf(next) };
        next.body?.cancel().catch(() => {});
        return null;
      };
      return resume;
    }

    /** A GET that is refused early: HTTP errors, HTML pages, and sizes wasm32 cannot hold. */
    async function fetchChecked(url, headers, signal, sink) {
      let response;
      try {
        response = await fetch(url, { headers, signal, cache: 'no-store' });
      } catch (e) {
        if (aborted.has(sink.id)) throw new WorkerError('E_ABORTED', 'the load was aborted');
        throw new WorkerError('E_FETCH', `could not fetch ${url}: ${e.message} (the network is down, the host is unreachable, or the server refused a cross-origin request: CORS)`);
      }
      return checkedResponse(url, response);
    }

    /** {response, size} of an answer that can be a model (size null: not known before the end), or an error. */
    function checkedResponse(url, response) {
      if (!response.ok) {
        response.body?.cancel().catch(() => {});
        throw new WorkerError('E_FETCH', `could not fetch ${url}: HTTP ${response.status} ${response.statusText}`.trim());
      }
      const type = response.headers.get('Content-Type') || '';
      if (/^text\/html/i.test(type)) {
        response.body?.cancel().catch(() => {});
        throw new WorkerError('E_NOT_GGUF', `${url} is an HTML page (Content-Type ${type}), not a GGUF model`);
      }
      const encoded = response.headers.get('Content-Encoding');
      const length = response.headers.get('Content-Length');
      const size = length !== null && (!encoded || encoded === 'identity') ? Number(length) : null;
      return { response, size: Number.isFinite(size) ? size : null };
    }

    /** Keeps a complete file in the Cache API, copied out of wasm memory 1 MiB at a time (each
     *  one reported as the 'store' phase): true when it was kept. */
    async function storeInCache(cache, url, part, onBytes, quiet = false) {
      let offset = 0;
      const body = new ReadableStream({
        pull(controller) {
          if (offset >= part.size) { onBytes(part.size, true); controller.close(); return; }
          const n = Math.min(CACHE_WRITE_CHUNK, part.size - offset);
          controller.enqueue(part.image.slice(offset, offset + n));
          offset += n;
          onBytes(offset, false);
        },
      }, { highWaterMark: 0 });
      const headers = { 'Content-Type': 'application/octet-stream', 'X-Wick-Bytes': String(part.size), 'X-Wick-Date': new Date().toISOString() };
      try {
        await cache.put(url, new Response(body, { headers }));
        return true;
      } catch (e) {
        await cache.delete(url).catch(() => {});
        if (!quiet) console.warn(`wick: could not keep ${url} for offline use: ${e.message}`);
        return false;
      }
    }

    // ---- downloads kept as they arrive, so that the next load of the URL resumes them ----
    //
    // In the Cache API, in a cache of their own (PARTIAL_CACHE: listing the whole files never sees
    // them; Wick.cache.clear and delete remove them too):
    //   <url>                            the record: headers X-Wick-Total (the file's size),
    //                                    X-Wick-Validator (ETag or Last-Modified), X-Wick-Stored
    //                                    (bytes from 0 that are kept), X-Wick-Date; an empty body
    //   <PIECE_URL>?at=<offset>&url=<url, encoded>
    //                                    the file's bytes from offset on, header X-Wick-Validator
    // Pieces are PIECE_BYTES long; the last one kept when a load stops is shorter. A piece is
    // written from wasm memory once its bytes have all arrived (one copy, at most
    // PIECE_WRITES_AHEAD of them waiting), and the record after it: the record never counts a byte
    // that is not stored, and a reload at any moment loses at most the piece being filled.
    const PIECE_BYTES = 8 << 20;
    const PIECE_WRITES_AHEAD = 2;
    // errors after which the kept bytes are useless: the file is not a model this engine takes, or it changed
    const DROP_KEPT_AFTER = new Set(['E_NOT_GGUF', 'E_UNSUPPORTED', 'E_START_OVER']);

    const pieceKey = (url, at) => `${PIECE_URL}?at=${at}&url=${encodeURIComponent(url)}`;

    class PartialDownload {
      constructor(cache, url) {
        this.cache = cache;
        this.url = url;
        this.total = 0;
        this.validator = null;
        this.stored = 0;    // bytes from 0 that the store holds
        this.queued = 0;    // bytes from 0 copied out for writing
        this.writing = Promise.resolve();
        this.waiting = 0;   // pieces copied out and not yet written
        this.off = true;    // nothing is written (no version to check against, or the store failed)
      }

      static async open(url) {
        if (typeof caches === 'undefined') return null;
        try { return new PartialDownload(await caches.open(PARTIAL_CACHE), url); } catch { return null; }
      }

      /** Reads the record of an earlier download of the URL: true when there is one to resume. */
      async load() {
        const r = await this.cache.match(this.url).catch(() => null);
        if (!r) return false;
        const total = Number(r.headers.get('X-Wick-Total')), stored = Number(r.headers.get('X-Wick-Stored'));
        const validator = r.headers.get('X-Wick-Validator');
        if (!(total > 0) || !(stored > 0) || stored > total || !validator) { await this.drop(); return false; }
        Object.assign(this, { total, stored, validator, off: false });
        return true;
      }

      /** Starts keeping a download from byte 0. */
      begin(validator, total) {
        Object.assign(this, { validator, total, stored: 0, queued: 0, off: false });
        return this;
      }

      /**
       * Hands the kept pieces to place(bytes, offset), in order, up to the first one missing or
       * of another version; onBytes(n) after each (it may throw to stop). Returns the bytes read.
       */
      async readInto(place, onBytes) {
        let at = 0;
        while (at < this.stored) {
          const r = await this.cache.match(pieceKey(this.url, at)).catch(() => null);
          if (!r || r.headers.get('X-Wick-Validator') !== this.validator) break;
          const bytes = new Uint8Array(await r.arrayBuffer());
          if (!bytes.length || at + bytes.length > this.total) break;
          place(bytes, at);
          at += bytes.length;
          onBytes(at);
        }
        this.stored = this.queued = at;
        return at;
      }

      /** Bytes [0, loaded) have come (bytesOf(from, to) gives a copy): each whole piece among them is written. */
      async arrived(bytesOf, loaded) {
        while (!this.off && loaded - this.queued >= PIECE_BYTES) {
          this.write(bytesOf, this.queued + PIECE_BYTES);
          if (this.waiting > PIECE_WRITES_AHEAD) await this.writing;
        }
      }

      /** The load stops at `loaded`: the bytes not yet written are kept too, as a shorter piece. */
      async keepUpTo(bytesOf, loaded) {
        if (!this.off && loaded > this.queued) this.write(bytesOf, loaded);
        await this.writing;
      }

      /** Writes bytes [queued, end) as one piece: copied now (the caller may free the memory next), stored in turn. */
      write(bytesOf, end) {
        const at = this.queued, validator = this.validator, total = this.total;
        const bytes = bytesOf(at, end);
        this.queued = end;
        this.waiting++;
        this.writing = this.writing.then(async () => {
          try {
            if (this.off) return;
            await this.cache.put(pieceKey(this.url, at), new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream', 'X-Wick-Validator': validator } }));
            this.stored = end;
            await this.cache.put(this.url, new Response('', { headers: {
              'X-Wick-Total': String(total), 'X-Wick-Validator': validator, 'X-Wick-Stored': String(end), 'X-Wick-Date': new Date().toISOString(),
            } }));
          } catch (e) {
            this.off = true;
            console.warn(`wick: could not keep the bytes of ${this.url} as they came (a reload will download it from the start): ${e.message}`);
          } finally {
            this.waiting--;
          }
        });
      }

      /** The file came in another version (validator; null: none, so nothing more is kept): the kept bytes go. */
      async restart(validator) {
        await this.drop();
        if (validator) this.begin(validator, this.total);
      }

      /** Forgets the record and every piece of this URL (after the writes under way). */
      async drop() {
        this.off = true;
        await this.writing;
        try {
          await this.cache.delete(this.url);
          for (const key of await this.cache.keys(PIECE_URL, { ignoreSearch: true }))
            if (new URL(key.url).searchParams.get('url') === this.url) await this.cache.delete(key);
        } catch (e) {
          console.warn(`wick: could not delete the kept bytes of ${this.url}: ${e.message}`);
        }
        this.stored = this.queued = 0;
      }
    }

    // ---- bytes pushed by the host (ArrayBuffer sources) ----

    function feedOf(id) {
      let f = feeds.get(id);
      if (!f) feeds.set(id, (f = { chunks: [], wake: null, ended: false }));
      return f;
    }
    function feedPush({ id, bytes, end }) {
      const f = feedOf(id);
      if (bytes) f.chunks.push(new Uint8Array(bytes));
      if (end) f.ended = true;
      feedWake(id);
    }
    function feedWake(id) {
      const f = feeds.get(id);
      if (f && f.wake) { const w = f.wake; f.wake = null; w(); }
    }
    function feedStream(id) {
      const f = feedOf(id);
      return new ReadableStream({
        async pull(controller) {
          while (!f.chunks.length && !f.ended && !aborted.has(id)) await new Promise((r) => (f.wake = r));
          if (aborted.has(id)) controller.error(new WorkerError('E_ABORTED', 'the load was aborted'));
          else if (f.chunks.length) controller.enqueue(f.chunks.shift());
          else controller.close();
        },
      }, { highWaterMark: 0 });
    }

    return { readParts, feedPush, feedWake, feedEnd: (id) => feeds.delete(id) };
  }

  // ---- the kept files, for Wick.cache (URLs absolute) ----

  async function openModels() {
    return typeof caches === 'undefined' ? null : caches.open(CACHE_NAME);
  }

  /** [{url, bytes, date}] of the files kept whole; with partial, also [{url, bytes (kept so far), total, date, partial: true}]. */
  async function keptFiles(partial) {
    const c = await openModels();
    if (!c) return [];
    const out = [];
    for (const request of await c.keys()) {
      const r = await c.match(request);
      out.push({ url: request.url, bytes: Number(r?.headers.get('X-Wick-Bytes')) || 0, date: r?.headers.get('X-Wick-Date') || null });
    }
    if (partial) {
      const p = await caches.open(PARTIAL_CACHE);
      for (const request of await p.keys()) {
        if (request.url.startsWith(PIECE_URL)) continue;
        const r = await p.match(request);
        out.push({ url: request.url, bytes: Number(r?.headers.get('X-Wick-Stored')) || 0, total: Number(r?.headers.get('X-Wick-Total')) || 0, date: r?.headers.get('X-Wick-Date') || null, partial: true });
      }
    }
    return out;
  }

  /** Forgets one file, kept whole or in part: true when something was kept. */
  async function forget(url) {
    const c = await openModels();
    if (!c) return false;
    const whole = await c.delete(url);
    const p = await caches.open(PARTIAL_CACHE);
    let part = await p.delete(url);
    for (const key of await p.keys(PIECE_URL, { ignoreSearch: true }))
      if (new URL(key.url).searchParams.get('url') === url) part = (await p.delete(key)) || part;
    return whole || part;
  }

  /** Forgets every file, and every download that stopped part way. */
  async function forgetAll() {
    if (typeof caches === 'undefined') return false;
    const part = await caches.delete(PARTIAL_CACHE);
    return (await caches.delete(CACHE_NAME)) || part;
  }

  /** The Response of a file kept whole (its size in X-Wick-Bytes), or null. */
  async function keptFile(url) {
    const c = await openModels();
    return (c && (await c.match(url))) || null;
  }

  root.WickDownload = { CACHE_NAME, PARTIAL_CACHE, PIECE_URL, createLoader, keptFiles, keptFile, forget, forgetAll };
})(typeof self !== 'undefined' ? self : globalThis);
