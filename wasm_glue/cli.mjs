#!/usr/bin/env node
// wasm_glue/cli.mjs — the wick CLI on the WebAssembly build, under Node: the same subcommands and
// flags as the native build/native/wick (the C code of src/cli.c runs inside the wasm module).
// Files named by -m/-z/--grammar/--texts are read by Node's fs for the engine (Module.wickReadFile):
// the wasm builds have no Emscripten file system.
// --threads N > 1 selects the pthreads build (N workers), else the single-threaded one;
// WICK_WASM_BUILD=st|mt forces one; WICK_WASM_RELAXED=1 takes the relaxed-SIMD build of it.
// --json-schema FILE (this CLI only) is converted to a grammar by json-schema.mjs and given to
// the engine as --grammar.
// `wick index FOLDER -m EMBEDDING.gguf -o site-index.json [--max-tokens N] [--overlap N]
// [--threads N]` (this CLI only) chunks and embeds a folder's Markdown, HTML and text pages
// (retrieval.mjs) into one index file: the chunks, their vectors, each page's URL relative to
// the folder and title, and the model's id and SHA-256.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { jsonSchemaToGrammar } from './json-schema.mjs';

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

/** args with --json-schema FILE replaced by --grammar TEMPFILE; the temporary folder to remove. */
function schemaToGrammar(args) {
  const i = args.indexOf('--json-schema');
  if (i < 0) return { args };
  if (args.includes('--grammar')) throw new Error('give either --grammar or --json-schema');
  const file = args[i + 1];
  if (!file) throw new Error('--json-schema expects a file');
  let schema;
  try {
    schema = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`--json-schema ${file}: ${e.message}`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-schema-'));
  const grammarFile = path.join(dir, 'schema.gbnf');
  fs.writeFileSync(grammarFile, jsonSchemaToGrammar(schema));
  return { args: [...args.slice(0, i), '--grammar', grammarFile, ...args.slice(i + 2)], dir };
}

/** wick prefix -m MODEL (--system TEXT | -p TEXT) -o FILE [--ctx N] [--kv f16|f32] [--threads N]: the
 *  saved state (src/state.c) of a prompt prefix, a system prompt rendered with the model's chat
 *  template as a chat's first message, or a raw prompt (BOS added, special tokens parsed), for
 *  engine.addPrefix / loadState. This CLI only: the chat template is rendered in JavaScript. */
async function prefixCli(args) {
  const opt = {};
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    const key = { '-m': 'model', '--model': 'model', '--system': 'system', '-p': 'prompt', '--prompt': 'prompt', '-o': 'out', '--output': 'out',
      '--ctx': 'ctx', '-c': 'ctx', '--kv': 'kv', '--threads': 'threads', '-t': 'threads', '--template': 'template' }[flag];
    if (!key) throw new Error(`prefix: unknown option ${flag}`);
    opt[key] = value;
  }
  if (!opt.model || !opt.out || (opt.system === undefined) === (opt.prompt === undefined))
    throw new Error('usage: wick prefix -m MODEL (--system TEXT | -p TEXT) -o FILE [--ctx N] [--kv f16|f32] [--template FILE]');
  const { Wick } = await import('./wick.mjs');
  const engine = await Wick.load(path.resolve(opt.model), { threads: Number(opt.threads) || 1, device: 'cpu',
    ...(opt.ctx ? { contextSize: Number(opt.ctx) } : {}), ...(opt.kv ? { kvType: opt.kv } : {}) });
  try {
    const template = opt.template ? fs.readFileSync(opt.template, 'utf8') : undefined;
    const { blob, tokens } = await engine.savePrefix(opt.system !== undefined ? { system: opt.system } : opt.prompt, { template });
    fs.writeFileSync(opt.out, blob);
    process.stderr.write(`wick prefix: ${tokens} tokens, ${blob.length} bytes (${Math.round(blob.length / tokens)} bytes per token) → ${opt.out}\n`);
    return 0;
  } finally {
    await engine.unload();
  }
}

const PAGE_FILES = /\.(md|markdown|html?|txt)$/i;

/** The pages under a folder, as [relative URL with / separators], sorted. */
function pagesUnder(folder) {
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(folder, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile() && PAGE_FILES.test(e.name)) out.push(r);
    }
  };
  walk('');
  return out;
}

/** `wick index`: see the head of this file. */
async function runIndex(args) {
  const opts = { maxTokens: undefined, overlap: undefined, threads: 1 };
  let folder = null, model = null, out = null;
  const int = (flag, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} expects a whole number, got '${v}'`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i], v = args[i + 1];
    const need = () => { if (v === undefined) throw new Error(`${a} needs a value`); i++; return v; };
    if (a === '-m' || a === '--model') model = need();
    else if (a === '-o' || a === '--output') out = need();
    else if (a === '--max-tokens') opts.maxTokens = int(a, need());
    else if (a === '--overlap') opts.overlap = int(a, need());
    else if (a === '--threads' || a === '-t') opts.threads = int(a, need()) || 1;
    else if (a.startsWith('-')) throw new Error(`index: unknown option ${a}`);
    else if (folder === null) folder = a;
    else throw new Error(`index: one folder, got '${folder}' and '${a}'`);
  }
  if (!folder || !model || !out) throw new Error('usage: wick index FOLDER -m EMBEDDING.gguf -o site-index.json [--max-tokens N] [--overlap N] [--threads N]');
  if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`index: ${folder} is not a folder`);
  const pages = pagesUnder(folder);
  if (!pages.length) throw new Error(`index: no .md, .html or .txt pages under ${folder}`);
  const { Wick } = await import('./wick.mjs');
  const { createIndex, pageText } = await import('./retrieval.mjs');
  const engine = await Wick.load(model, { threads: opts.threads });
  try {
    const index = await createIndex(engine, { maxTokens: opts.maxTokens, overlap: opts.overlap });
    const docs = pages.map((rel) => ({ source: rel, ...pageText(fs.readFileSync(path.join(folder, rel), 'utf8'), rel) }));
    const tty = process.stderr.isTTY;
    let last = 0;
    await index.add(docs, {
      onProgress: ({ chunks, total, chunksPerSecond }) => {
        const now = Date.now();
        if (chunks < total && now - last < 250) return;
        last = now;
        const line = `index: ${chunks}/${total} chunks, ${chunksPerSecond.toFixed(1)} chunks/s`;
        process.stderr.write(tty ? `\r${line}${chunks === total ? '\n' : ''}` : `${line}\n`);
      },
    });
    fs.writeFileSync(out, JSON.stringify(index.toJSON()));
    process.stderr.write(`index: ${pages.length} pages, ${index.size} chunks of ${index.dim} dimensions, ${engine.info.name} → ${out}\n`);
    return 0;
  } finally {
    await engine.unload();
  }
}

export async function runCli(givenArgs) {
  if (givenArgs[0] === 'prefix') return prefixCli(givenArgs.slice(1));
  if (givenArgs[0] === 'index') return runIndex(givenArgs.slice(1));
  const { args, dir } = schemaToGrammar(givenArgs);
  try {
    return await runEngineCli(args);
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Reads the file at p into the wasm heap at alloc(size) (the heap's current view from heap(), as
 *  alloc may grow the memory), in 64 MiB reads; returns the size. */
function readInto(p, alloc, heap) {
  const fd = fs.openSync(p, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const at = alloc(size);
    for (let off = 0; off < size;) {
      const n = fs.readSync(fd, heap(), at + off, Math.min(size - off, 64 << 20), off);
      if (n === 0) throw new Error(`${p} ended at ${off} of ${size} bytes`);
      off += n;
    }
    return size;
  } finally {
    fs.closeSync(fd);
  }
}

async function runEngineCli(args) {
  const threads = threadsArg(args);
  const kind = process.env.WICK_WASM_BUILD || (threads > 1 ? 'mt' : 'st');
  // WICK_WASM_RELAXED=1: the relaxed-SIMD build of the same kind (mk/relaxed.mk); Node 20 runs
  // it behind a V8 flag, which takes effect when set before the module is compiled
  const relaxed = process.env.WICK_WASM_RELAXED === '1';
  if (relaxed) (await import('node:v8')).setFlagsFromString('--experimental-wasm-relaxed-simd');
  // the CLI's own builds (the page's, build/wasm/wick*.js, hold no CLI)
  const base = 'wick-cli' + (kind === 'mt' ? '-mt' : '') + (relaxed ? '-relaxed' : '');
  const jsPath = path.join(buildDir, `${base}.js`);
  if (!fs.existsSync(jsPath)) throw new Error(`${jsPath} is missing: run make`);
  const require = createRequire(import.meta.url);
  const createWick = require(jsPath);
  const Module = await createWick({
    wasmBinary: fs.readFileSync(path.join(buildDir, `${base}.wasm`)),
    wickThreads: threads,
    wickWrite: (fd, bytes) => writeAll(fd === 1 ? 1 : 2, bytes),
    wickReadFile: (p, alloc) => readInto(p, alloc, () => Module.HEAPU8),
    wickWriteFile: (p, bytes) => fs.writeFileSync(p, bytes),
    print: (s) => writeAll(1, Buffer.from(s + '\n')),
    printErr: (s) => writeAll(2, Buffer.from(s + '\n')),
  });
  const argv = ['wick', ...args];
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
