/* web/engine-worker.js — starts wick's engine worker (../wasm_glue/worker.js) where the page is
 * cross-origin isolated by the service worker coi-sw.js rather than by the server's headers.
 *
 * A service worker controls the clients inside its scope (this folder). The engine worker and
 * the pthread workers it starts live elsewhere (wasm_glue/, build/wasm/), so the browser would
 * fetch their scripts straight from the server, without the COEP header an isolated page demands
 * of its workers, and refuse them. So web/coi.js starts this script from a blob: URL: a blob:
 * worker inherits the page's service worker and isolation, and its importScripts() go through
 * that service worker. In the same way this script starts the pthread workers from blob: URLs
 * that import their real script. */
'use strict';
(function () {
  // set by the blob: script that web/coi.js makes to start this one (a blob: URL has no folder)
  const glueWorker = self.WICK_GLUE_WORKER || new URL('../wasm_glue/worker.js', self.location.href).href;
  const NativeWorker = self.Worker;
  function InScopeWorker(url, options) {
    const script = new URL(String(url), glueWorker).href;
    const source = `importScripts(${JSON.stringify(script)});`;
    const blobUrl = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    return new NativeWorker(blobUrl, options);
  }
  InScopeWorker.prototype = NativeWorker.prototype;
  self.Worker = InScopeWorker;
  // worker.js finds its scripts (constants.js, gguf-header.js, download.js) beside itself through self.location
  Object.defineProperty(self, 'location', { value: new URL(glueWorker), configurable: true });
  importScripts(glueWorker);
})();
