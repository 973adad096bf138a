// web/coi.js — cross-origin isolation on a static host that cannot send headers.
//
//   import { ensureCrossOriginIsolation } from './coi.js';
//   const iso = await ensureCrossOriginIsolation();   // {isolated, how?, reason?}
//
// A page needs `crossOriginIsolated` for SharedArrayBuffer, which wick's pthreads build needs.
// Served by tools/serve.mjs (or any server sending COOP/COEP) the page already is. Elsewhere this
// registers coi-sw.js (a service worker that adds the headers to every response) and reloads the
// page once, when the worker controls it. Where that is impossible (no service workers, plain
// http, a private window that refuses them) or did not help, it says why, and wick runs on one
// thread. The promise never settles when the page is about to reload.
const RELOAD_KEY = 'wick-coi-reloaded';
const CONTROL_TIMEOUT_MS = 4000;

function session() {
  try { return globalThis.sessionStorage; } catch { return null; } // storage can be refused
}

export async function ensureCrossOriginIsolation(swUrl = new URL('coi-sw.js', import.meta.url)) {
  const store = session();
  const sw = globalThis.navigator?.serviceWorker;
  if (globalThis.crossOriginIsolated) {
    store?.removeItem(RELOAD_KEY);
    return { isolated: true, how: sw?.controller ? 'service worker' : 'headers' };
  }
  if (!sw) return { isolated: false, reason: 'this browser offers no service workers' };
  if (!globalThis.isSecureContext) return { isolated: false, reason: 'the page is not served over HTTPS' };
  if (store?.getItem(RELOAD_KEY)) {
    return { isolated: false, reason: 'the isolation service worker did not take effect' };
  }
  try {
    await sw.register(swUrl);
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

/** Whether the page's isolation comes from a service worker (then start the engine with engineWorkerUrl()). */
export function isolatedByServiceWorker() {
  return globalThis.crossOriginIsolated === true && !!globalThis.navigator?.serviceWorker?.controller;
}

/**
 * A blob: URL that starts wick's engine worker under the service worker's isolation (see
 * engine-worker.js); pass it to Wick.load as `workerUrl`.
 */
export function engineWorkerUrl(glueWorker = new URL('../wasm_glue/worker.js', import.meta.url)) {
  const shim = new URL('engine-worker.js', import.meta.url).href;
  const source = `self.WICK_GLUE_WORKER = ${JSON.stringify(String(glueWorker))};\nimportScripts(${JSON.stringify(shim)});\n`;
  return URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
}
