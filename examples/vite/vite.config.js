// examples/vite/vite.config.js — nothing here is for wick's files: Vite finds them through
// `new URL('…', import.meta.url)` in wick's module, serves them in `vite dev` and copies them
// into the build. These headers make the page cross-origin isolated, which gives it
// SharedArrayBuffer, so that wick runs its multi-threaded build.
const isolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default {
  server: { headers: isolation },
  preview: { headers: isolation },
};
