/* web/coi-sw.js — a small service worker that makes a page cross-origin isolated on a static host
 * that cannot send headers (GitHub Pages and the like). It re-serves every response it can read
 * with the headers a server would have sent:
 *   Cross-Origin-Opener-Policy: same-origin       (the page gets its own browsing-context group)
 *   Cross-Origin-Embedder-Policy: require-corp    (every subresource must agree to be embedded)
 *   Cross-Origin-Resource-Policy: cross-origin    (added where the response has none)
 * With both policies the page is `crossOriginIsolated`, SharedArrayBuffer exists, and wick loads
 * its pthreads build. Opaque responses (cross-origin `no-cors`) cannot be rewritten and pass as
 * they are. web/coi.js registers this worker and reloads the page once it is in control. */
'use strict';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

function isolated(response) {
  // status 0: an opaque response (its headers cannot be read or changed)
  if (response.status === 0) return response;
  const headers = new Headers(response.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  if (!headers.has('Cross-Origin-Resource-Policy')) headers.set('Cross-Origin-Resource-Policy', 'cross-origin');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  // a request the browser makes only to read its own HTTP cache cannot be re-fetched from here
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  event.respondWith(fetch(request).then(isolated));
});
