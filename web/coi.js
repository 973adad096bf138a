// web/coi.js — cross-origin isolation on a static host that cannot send headers, and the page's
// files kept for offline use. Both are the work of one service worker, coi-sw.js.
//
//   import { ensureCrossOriginIsolation } from './coi.js';
//   const iso = await ensureCrossOriginIsolation();   // {isolated, how?, reason?, offline?}
//   await ensureCrossOriginIsolation(swUrl, { offline: true }); // also keep the app shell
//
// A page needs `crossOriginIsolated` for SharedArrayBuffer, which wick's pthreads build needs.
// Served by tools/serve.mjs (or any server sending COOP/COEP) the page already is. Elsewhere this
// registers coi-sw.js (a service worker that adds the headers to every response) and reloads the
// page once, when the worker controls it. Where that is impossible (no service workers, plain
// http, a private window that refuses them) or did not help, it says why, and wick runs on one
// thread. The promise never settles when the page is about to reload.
// With `offline`, the worker is registered as coi-sw.js?shell=<wick-shell.json> even where the
// page is isolated already: it then keeps the files that list names (the page, the glue, the wasm
// builds) and serves them first, so the page opens and runs with no network after one visit (see
// coi-sw.js for versions and updates). { offline: { registered: true } | { registered: false, reason } }.
const RELOAD_KEY = 'wick-coi-reloaded';
const CONTROL_TIMEOUT_MS = 4000;
/** The list of the app shell's files that `make` writes (`make dist`: beside this script). */
export const SHELL_LIST_URL = new URL('../build/wick-shell.json', import.meta.url);

function session() {
  try { return globalThis.sessionStorage; } catch { return null; } // storage can be refused
}

/** The URL to register: coi-sw.js, with the shell list when the page is to work offline. */
export function serviceWorkerUrl(swUrl = new URL('coi-sw.js', import.meta.url), { offline = false, shell = SHELL_LIST_URL } = {}) {
  const url = new URL(swUrl, globalThis.document?.baseURI);
  if (offline) url.searchParams.set('shell', new URL(shell, globalThis.document?.baseURI).href);
  return url;
}

/** Registers the service worker that keeps the page's files for offline use (no reload). */
export async function keepOffline(swUrl, options = {}) {
  const sw = globalThis.navigator?.serviceWorker;
  if (!sw) return { registered: false, reason: 'this browser offers no service workers' };
  if (!globalThis.isSecureContext) return { registered: false, reason: 'the page is not served over HTTPS' };
  try {
    await sw.register(serviceWorkerUrl(swUrl, { ...options, offline: true }));
    return { registered: true };
  } catch (e) {
    return { registered: false, reason: `the service worker could not be registered (${e.message})` };
  }
}

export async function ensureCrossOriginIsolation(swUrl = new URL('coi-sw.js', import.meta.url), { offline = false, shell } = {}) {
  const store = session();
  const sw = globalThis.navigator?.serviceWorker;
  if (globalThis.crossOriginIsolated) {
    store?.removeItem(RELOAD_KEY);
    const how = sw?.controller ? 'service worker' : 'headers';
    return offline ? { isolated: true, how, offline: await keepOffline(swUrl, { shell }) } : { isolated: true, how };
  }
  if (!sw) return { isolated: false, reason: 'this browser offers no service workers' };
  if (!globalThis.isSecureContext) return { isolated: false, reason: 'the page is not served over HTTPS' };
  if (store?.getItem(RELOAD_KEY)) {
    return { isolated: false, reason: 'the isolation service worker did not take effect' };
  }
  try {
    await sw.register(serviceWorkerUrl(swUrl, { offline, shell }));
  } catch (e) {
    return { isolated: false, reason: `the isolation service worker could not be registered (${e.message})` };
  }
  if (!sw.controller) {
    const controlled = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), CONTROL_TIMEOUT_MS);
      sw.addEventListener('controllerchange', () => { clearTimeout(timer); resolve(true); }, { once: true });
    });
    if (!controlled) return { isolated: false, reason: 'the isolation service worker did not take control' };
  }
  if (!store) return { isolated: false, reason: 'the page cannot reload itself safely (no sessionStorage)' };
  store.setItem(RELOAD_KEY, '1');
  globalThis.location.reload();
  return new Promise(() => {});
}

/** Whether the page's isolation comes from a service worker. */
export function isolatedByServiceWorker() {
  return globalThis.crossOriginIsolated === true && !!globalThis.navigator?.serviceWorker?.controller;
}

/**
 * Whether a service worker serves this page (for isolation, offline use or both): then start the
 * engine with engineWorkerUrl(), so that the engine's own scripts come through it too.
 */
export function controlledByServiceWorker() {
  return !!globalThis.navigator?.serviceWorker?.controller;
}

/**
 * A blob: URL that starts wick's engine worker under the page's service worker (see
 * engine-worker.js), which then serves its scripts (isolation headers, offline copies); pass it
 * to Wick.load as `workerUrl`.
 */
export function engineWorkerUrl(glueWorker = new URL('../wasm_glue/worker.js', import.meta.url)) {
  const shim = new URL('engine-worker.js', import.meta.url).href;
  const source = `self.WICK_GLUE_WORKER = ${JSON.stringify(String(glueWorker))};\nimportScripts(${JSON.stringify(shim)});\n`;
  return URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
}
