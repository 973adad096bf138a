// examples/esbuild/build.mjs — bundles src/main.js into public/build/, then copies beside the
// bundle the files that wick starts at run time: its worker, the worker's download code, the GGUF
// header reader, the constants they share and the wasm builds. esbuild leaves `new URL('…', import.meta.url)` as it is, so
// in the bundle these URLs resolve against the bundle's own URL; the package's dist/ folder has
// them in the same places.
import * as esbuild from 'esbuild';
import fs from 'node:fs';

await esbuild.build({ entryPoints: ['src/main.js'], bundle: true, format: 'esm', outdir: 'public/build' });

const wickDist = new URL('.', import.meta.resolve('wick')); // node_modules/wick/dist/
for (const name of ['worker.js', 'download.js', 'gguf-header.js', 'constants.js', 'wasm']) {
  fs.cpSync(new URL(name, wickDist), `public/build/${name}`, { recursive: true });
}
