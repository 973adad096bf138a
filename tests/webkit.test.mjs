// tests/webkit.test.mjs — wick in Debian's WebKitGTK (webkit2gtk-driver: WebKitWebDriver and its
// MiniBrowser on an Xvfb display of the test's own): the checks of tests/engine-checks.mjs.
// WebKitGTK gives no SharedArrayBuffer even to a cross-origin isolated page, and has no relaxed
// SIMD: the single-threaded st build. It has service workers on 127.0.0.1, so the offline reload
// is checked as in the other engines.
import { engineChecks } from './engine-checks.mjs';
import { launchWebKit } from './browser.mjs';

engineChecks({ launch: () => launchWebKit('engines'), build: 'st', multiThreaded: false, relaxedSimd: false });
