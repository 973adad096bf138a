#!/usr/bin/env node
// tools/serve.mjs — serves the repository as static files on 127.0.0.1 with the cross-origin
// isolation headers (COOP/COEP) that multi-threaded WebAssembly needs, and HTTP Range support
// with validators (ETag, Last-Modified, If-Range: resumable model downloads that notice a changed
// file). `/` opens the page in web/.
//   node tools/serve.mjs [--port 8080] [--root DIR]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.ico': 'image/x-icon', '.webmanifest': 'application/manifest+json', '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8',
};

/**
 * A static file server over root. Options (all off by default but isolate):
 *   isolate    the COOP/COEP/CORP headers (default true)
 *   onRequest  (entry) → void, for each file request as its answer starts: entry = {method, path,
 *              range, ifRange (the request headers, or null), status, start, end, size}; entry.sent
 *              counts the body bytes written so far and entry.closed turns true when the answer ends
 *              (whole or cut)
 *   throttle   bytes per second for every file body, or (path) → bytes per second (0: full speed),
 *              asked when each answer starts
 */
export function createServer(root, { isolate = true, onRequest = null, throttle = 0 } = {}) {
  root = path.resolve(root);
  return http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    let rel = decodeURIComponent(url.pathname);
    if (rel === '/') { res.writeHead(302, { Location: '/web/' }); res.end(); return; }
    const file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root + path.sep)) { res.writeHead(403); res.end('forbidden'); return; }
    let target = file;
    try { if (fs.statSync(target).isDirectory()) target = path.join(target, 'index.html'); } catch { /* 404 below */ }
    fs.stat(target, (err, st) => {
      if (err || !st.isFile()) { res.writeHead(404, { 'Content-Type': 'text/plain' }); res.end('not found'); return; }
      // a strong validator: it changes when the size or the modification time does
      const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs * 1000).toString(16)}"`;
      const lastModified = st.mtime.toUTCString();
      const headers = {
        'Content-Type': TYPES[path.extname(target)] || 'application/octet-stream',
        'Accept-Ranges': 'bytes',
        'Cache-Control': 'no-cache',
        ETag: etag,
        'Last-Modified': lastModified,
      };
      if (isolate) {
        headers['Cross-Origin-Opener-Policy'] = 'same-origin';
        headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
        headers['Cross-Origin-Resource-Policy'] = 'same-origin';
      }
      let start = 0, end = st.size - 1, status = 200;
      const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
      // RFC 9110 13.1.5: a Range whose If-Range names another version is ignored (the whole file, 200)
      const ifRange = req.headers['if-range'];
      // (a date matches only when the file is more than a second older than now: two versions
      // written within the same second share their Last-Modified)
      const sameVersion = ifRange === undefined || ifRange === etag || (ifRange === lastModified && Date.now() - st.mtimeMs > 1000);
      if (range && (range[1] || range[2]) && sameVersion) {
        if (range[1]) { start = Number(range[1]); if (range[2]) end = Math.min(Number(range[2]), end); }
        else { start = Math.max(0, st.size - Number(range[2])); }
        if (start > end || start >= st.size) {
          res.writeHead(416, { 'Content-Range': `bytes */${st.size}` });
          res.end();
          return;
        }
        status = 206;
        headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
      }
      headers['Content-Length'] = String(end - start + 1);
      const entry = { method: req.method, path: rel, range: req.headers.range || null, ifRange: ifRange ?? null, status, start, end, size: st.size, sent: 0, closed: false };
      res.on('close', () => { entry.closed = true; });
      onRequest?.(entry);
      res.writeHead(status, headers);
      if (req.method === 'HEAD') { res.end(); return; }
      const rate = typeof throttle === 'function' ? throttle(rel) : throttle;
      const body = fs.createReadStream(target, { start, end, highWaterMark: rate > 0 ? Math.max(1024, Math.min(1 << 16, Math.floor(rate / 20))) : 1 << 16 });
      body.on('data', (chunk) => { entry.sent += chunk.length; });
      res.on('close', () => body.destroy());
      if (rate > 0) paced(body, res, rate);
      else body.pipe(res);
    });
  });
}

/** Writes a file stream to res no faster than `rate` bytes per second on average since its start. */
function paced(body, res, rate) {
  const t0 = Date.now();
  let bytes = 0;
  body.on('data', (chunk) => {
    bytes += chunk.length;
    body.pause();
    const go = () => setTimeout(() => body.resume(), Math.max(0, (bytes / rate) * 1000 - (Date.now() - t0)));
    if (res.write(chunk)) go();
    else res.once('drain', go);
  });
  body.on('end', () => res.end());
  body.on('error', () => res.destroy());
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
  const port = Number(opt('--port', process.env.PORT || 8080));
  const root = opt('--root', path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'));
  createServer(root).listen(port, '127.0.0.1', () => {
    console.log(`wick: serving ${root} at http://127.0.0.1:${port}/ (Ctrl-C stops)`);
  });
}
