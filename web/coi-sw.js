/* web/coi-sw.js — wick's one service worker. Two jobs:
 *
 * 1. Cross-origin isolation on a static host that cannot send headers (GitHub Pages and the
 *    like): every response it can read is re-served with the headers a server would have sent,
 *      Cross-Origin-Opener-Policy: same-origin       (the page gets its own browsing-context group)
 *      Cross-Origin-Embedder-Policy: require-corp    (every subresource must agree to be embedded)
 *      Cross-Origin-Resource-Policy: cross-origin    (added where the response has none)
 *    so the page is `crossOriginIsolated`, SharedArrayBuffer exists, and wick loads its pthreads
 *    build. Opaque responses (cross-origin `no-cors`) cannot be rewritten and pass as they are.
 *
 * 2. The app shell offline, when registered as `coi-sw.js?shell=<URL of wick-shell.json>` (web/coi.js
 *    does so for a page that opts in). wick-shell.json, written by `make` (tools/shell-manifest.mjs),
 *    names the page's files (HTML, scripts, styles, icons, the wasm builds) and a version, a hash
 *    of their contents. The files of one version are kept together in the cache
 *    `wick-shell-<version> <scope>` and served from it first, so a page, its glue and its wasm always
 *    come from the same version. Each navigation with a network first asks for wick-shell.json
 *    (a small file, CHECK_TIMEOUT_MS at most); when its version is new, the whole new set is
 *    downloaded before the page is served, becomes the current set, and the old set is deleted
 *    once no open page was served from it. Offline, or when the check fails, the current set
 *    serves. Pages that are not in the list (a site's own page with <wick-chat>) are served from
 *    the network first and kept for offline use.
 *
 * Downloads that must not be kept here pass untouched: requests with a Range header or
 * `cache: 'no-store'` (the engine keeps model files itself: whole in the cache `wick-models-v1`,
 * unfinished downloads in pieces in `wick-partial-v1`). */
'use strict';

const SHELL_PREFIX = 'wick-shell-';
const META_CACHE = 'wick-shell-meta';
const CHECK_TIMEOUT_MS = 3000;
const KEEP_MAX_BYTES = 32 << 20;   // a page's own file larger than this is not kept for offline use

const shellParam = new URL(self.location.href).searchParams.get('shell');
const SHELL_URL = shellParam ? new URL(shellParam, self.location.href).href : null;
const META_KEY = new URL('wick-shell-current', self.registration.scope).href;
// one site may register this worker for several folders (scopes), each with its own list
const setName = (version) => `${SHELL_PREFIX}${version} ${self.registration.scope}`;

let current = null;          // {version, files: Set of absolute URLs} of the set in use
let updating = null;         // the update under way (navigations share it)
// page client id → the version that served it; kept in the meta cache too, because the browser
// stops an idle service worker and starts it again with empty globals
const clientVersions = new Map();
const CLIENTS_KEY = new URL('wick-shell-clients', self.registration.scope).href;
let clientsLoaded = null;

function loadClients() {
  clientsLoaded ||= (async () => {
    const kept = await (await caches.open(META_CACHE)).match(CLIENTS_KEY);
    if (kept) for (const [id, version] of Object.entries(await kept.json())) if (!clientVersions.has(id)) clientVersions.set(id, version);
  })().catch(() => {});
  return clientsLoaded;
}

async function setClientVersion(id, version) {
  await loadClients();
  clientVersions.set(id, version);
  await saveClients();
}

async function saveClients() {
  await (await caches.open(META_CACHE)).put(CLIENTS_KEY, new Response(JSON.stringify(Object.fromEntries(clientVersions))));
}

self.addEventListener('install', (event) => {
  self.skipWaiting();
  // a set that cannot be fetched now leaves isolation working; the next navigation tries again
  if (SHELL_URL) event.waitUntil(update().catch((e) => console.warn(`wick: the app shell was not kept for offline use: ${e.message}`)));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    await self.clients.claim();
    if (!SHELL_URL) return;
    const set = await currentSet();
    if (!set) return;
    // the pages open now were served by the network: keep the ones the list does not name
    const cache = await caches.open(setName(set.version));
    for (const client of await self.clients.matchAll({ type: 'window' })) {
      await setClientVersion(client.id, set.version);
      const url = pageKey(client.url);
      if (!set.files.has(url) && !(await cache.match(url))) await keep(cache, url, new Request(url)).catch(() => {});
    }
  })());
});

self.addEventListener('message', (event) => {
  // a page asks which version serves it and whether the set is complete
  if (event.data?.type !== 'wick-shell-status') return;
  event.waitUntil((async () => {
    const set = await currentSet();
    await loadClients();
    const version = clientVersions.get(event.source?.id) || set?.version || null;
    event.source?.postMessage({ type: 'wick-shell-status', version, current: set?.version || null, files: set ? set.files.size : 0 });
  })());
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  // a request the browser makes only to read its own HTTP cache cannot be re-fetched from here
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  if (request.method !== 'GET' || !SHELL_URL) { event.respondWith(fetch(request).then(isolated)); return; }
  // parts of files and downloads their caller keeps itself: straight to the network
  if (request.headers.has('Range') || request.cache === 'no-store') return;
  if (request.mode === 'navigate') event.respondWith(navigate(event));
  else event.respondWith(subresource(event));
});

function isolated(response) {
  // status 0: an opaque response (its headers cannot be read or changed)
  if (response.status === 0) return response;
  const headers = new Headers(response.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  if (!headers.has('Cross-Origin-Resource-Policy')) headers.set('Cross-Origin-Resource-Policy', 'cross-origin');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** A page's URL as it is kept: no query or fragment, a folder's page as index.html. */
function pageKey(href) {
  const url = new URL(href);
  url.search = '';
  url.hash = '';
  if (url.pathname.endsWith('/')) url.pathname += 'index.html';
  return url.href;
}

async function currentSet() {
  if (current) return current;
  const meta = await (await caches.open(META_CACHE)).match(META_KEY);
  if (!meta) return null;
  const { version, files } = await meta.json();
  if (!(await caches.has(setName(version)))) return null;
  current = { version, files: new Set(files) };
  return current;
}

/** Fetches wick-shell.json; when it names a new version, keeps that whole set and makes it current. */
function update() {
  updating ||= (async () => {
    const response = await fetch(SHELL_URL, { cache: 'no-store', signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`${SHELL_URL}: HTTP ${response.status}`);
    const shell = await response.json();
    if (typeof shell.version !== 'string' || !Array.isArray(shell.files)) throw new Error(`${SHELL_URL} is not a wick shell list`);
    const set = await currentSet();
    if (set?.version === shell.version) return set;
    const files = shell.files.map((f) => new URL(f, SHELL_URL).href);
    const name = setName(shell.version);
    const cache = await caches.open(name);
    try {
      // every file or none: a set with a hole would mix versions once the network is gone
      await Promise.all(files.map(async (url) => {
        const r = await fetch(url, { cache: 'no-store' });
        if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
        await cache.put(url, r);
      }));
      // the pages that the old set kept beside the list (a site's own page) move along
      if (set) {
        const old = await caches.open(setName(set.version));
        for (const request of await old.keys()) {
          if (!set.files.has(request.url) && !files.includes(request.url)) await keep(cache, request.url, new Request(request.url)).catch(() => {});
        }
      }
    } catch (e) {
      await caches.delete(name);
      throw e;
    }
    await (await caches.open(META_CACHE)).put(META_KEY, new Response(JSON.stringify({ version: shell.version, files })));
    current = { version: shell.version, files: new Set(files) };
    // the pages still open on an older set go on with it, and are told that a new one is ready
    await loadClients();
    for (const client of await self.clients.matchAll({ type: 'window' })) {
      const version = clientVersions.get(client.id);
      if (version && version !== shell.version) client.postMessage({ type: 'wick-shell-updated', version: shell.version });
    }
    return current;
  })().finally(() => { updating = null; });
  return updating;
}

/** Deletes the sets that are neither current nor serving an open page (or `coming`, the page being loaded). */
async function dropOldSets(coming) {
  const set = await currentSet();
  const open = new Set((await self.clients.matchAll({ type: 'window' })).map((c) => c.id));
  open.add(coming);
  await loadClients();
  for (const id of clientVersions.keys()) if (!open.has(id)) clientVersions.delete(id);
  await saveClients();
  const used = new Set([set?.version, ...clientVersions.values()].filter(Boolean).map(setName));
  const mine = ` ${self.registration.scope}`;
  for (const name of await caches.keys()) {
    if (name.startsWith(SHELL_PREFIX) && name.endsWith(mine) && !used.has(name)) await caches.delete(name);
  }
}

/** Keeps a response of this site for offline use, when it is small enough. */
async function keep(cache, key, request) {
  const response = await fetch(request);
  const length = Number(response.headers.get('Content-Length'));
  if (response.ok && response.type === 'basic' && !(length > KEEP_MAX_BYTES)) await cache.put(key, response.clone());
  return response;
}

async function navigate(event) {
  let set = null;
  try {
    set = await update();
  } catch {
    set = await currentSet(); // offline, or the check failed: the set we have
  }
  if (!set) return isolated(await fetch(event.request));
  if (event.resultingClientId) await setClientVersion(event.resultingClientId, set.version);
  event.waitUntil(dropOldSets(event.resultingClientId));
  const key = pageKey(event.request.url);
  const cache = await caches.open(setName(set.version));
  const kept = await cache.match(key);
  if (kept && set.files.has(key)) return isolated(kept);
  // a page the list does not name: the network first, the kept copy when there is none
  try {
    return isolated(await keep(cache, key, event.request));
  } catch (e) {
    if (kept) return isolated(kept);
    throw e;
  }
}

async function subresource(event) {
  const request = event.request;
  const set = await currentSet();
  await loadClients();
  const version = clientVersions.get(event.clientId) || set?.version;
  const cache = version && (await caches.open(setName(version)));
  const kept = cache && (await cache.match(request));
  if (kept) return isolated(kept);
  try {
    const sameOrigin = new URL(request.url).origin === self.location.origin;
    return isolated(cache && sameOrigin ? await keep(cache, request.url, request) : await fetch(request));
  } catch (e) {
    // offline, and not in the client's set: any kept copy of it
    const any = await caches.match(request);
    if (any) return isolated(any);
    throw e;
  }
}
