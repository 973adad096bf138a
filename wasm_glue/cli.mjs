#!/usr/bin/env node
// wasm_glue/cli.mjs — the wick CLI on the WebAssembly build, under Node: the same subcommands and
// flags as the native build/native/wick (the C code of src/cli.c runs inside the wasm module).
// Files named by -m/-z are read through Emscripten's NODEFS, mounted at /host.
// --threads N > 1 selects the pthreads build (N workers), else the single-threaded one;
// WICK_WASM_BUILD=st|mt forces one; WICK_WASM_RELAXED=1 takes the relaxed-SIMD build of it.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const buildDir = process.env.WICK_WASM_DIR || path.join(here, '..', 'build', 'wasm');

function threadsArg(args) {
  const i = args.findIndex((a) => a === '--threads' || a === '-t');
  const n = i >= 0 ? Number(args[i + 1]) : 1;
  return Number.isInteger(n) && n > 0 ? n : 1;
}

function writeAll(fd, bytes) {
  let off = 0;
  while (off < bytes.length) {
    try {
      off += fs.writeSync(fd, bytes, off, bytes.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

export async function runCli(args) {
  const threads = threadsArg(args);
  const kind = process.env.WICK_WASM_BUILD || (threads > 1 ? 'mt' : 'st');
  // WICK_WASM_RELAXED=1: the relaxed-SIMD build of the same kind (mk/relaxed.mk); Node 20 runs
  // it behind a V8 flag, which takes effect when set before the module is compiled
  const relaxed = process.env.WICK_WASM_RELAXED === '1';
  if (relaxed) (await import('node:v8')).setFlagsFromString('--experimental-wasm-relaxed-simd');
  const base = (kind === 'mt' ? 'wick-mt' : 'wick') + (relaxed ? '-relaxed' : '');
  const jsPath = path.join(buildDir, `${base}.js`);
  if (!fs.existsSync(jsPath)) throw new Error(`${jsPath} is missing: run make`);
  const require = createRequire(import.meta.url);
  const createWick = require(jsPath);
  const Module = await createWick({
    wasmBinary: fs.readFileSync(path.join(buildDir, `${base}.wasm`)),
    wickThreads: threads,
    wickWrite: (fd, bytes) => writeAll(fd === 1 ? 1 : 2, bytes),
    print: (s) => writeAll(1, Buffer.from(s + '\n')),
    printErr: (s) => writeAll(2, Buffer.from(s + '\n')),
  });
  Module.FS.mkdir('/host');
  Module.FS.mount(Module.NODEFS, { root: '/' }, '/host');
  const fileFlags = new Set(['-m', '--model', '-z', '--tokenizer']);
  // NODEFS does not follow symbolic links inside a path: hand it the real path where one exists
  const hostPath = (p) => '/host' + (fs.existsSync(p) ? fs.realpathSync(p) : path.resolve(p));
  const argv = ['wick', ...args.map((a, i) => (i > 0 && fileFlags.has(args[i - 1]) ? hostPath(a) : a))];
  const ptrs = argv.map((s) => {
    const n = Module.lengthBytesUTF8(s) + 1;
    const p = Module._malloc(n);
    Module.stringToUTF8(s, p, n);
    return p;
  });
  const argvPtr = Module._malloc(4 * ptrs.length);
  ptrs.forEach((p, i) => (Module.HEAPU32[(argvPtr >> 2) + i] = p));
  return Module._wick_cli_main(argv.length, argvPtr);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`wick: ${e.message || e}\n`);
      process.exit(1);
    },
  );
}
