// tests/firefox.test.mjs — wick in Debian's Firefox ESR (firefox-esr, driven over WebDriver BiDi by
// puppeteer-core, never a downloaded browser): the checks of tests/engine-checks.mjs. Firefox has
// SharedArrayBuffer on a cross-origin isolated page and relaxed SIMD: the mt-relaxed build.
import { engineChecks } from './engine-checks.mjs';
import { launchFirefox } from './browser.mjs';

engineChecks({ launch: () => launchFirefox('engines'), build: 'mt-relaxed', multiThreaded: true, relaxedSimd: true });
