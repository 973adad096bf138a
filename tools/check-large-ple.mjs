#!/usr/bin/env node
// tools/check-large-ple.mjs — a Gemma-4-E4B-shaped file larger than 4 GiB (`wick synth --arch gemma4
// --shape e4b --type q4_0`, 5.9 GB, of which the per-layer embedding table is 2.3 GB) loads through
// Wick.load in Node and generates a few tokens: the table stays outside wasm memory (download.js
// keeps it in JS, the engine reads the rows of each batch's tokens), so the heap stays below
// 4 GiB. Prints the file size, what stayed outside, the wasm heap and the process's peak memory.
// Not part of make test (it writes 5.9 GB and needs about 7 GB of memory):
// `node tools/check-large-ple.mjs [--keep]` (--keep: leave the file in models/ for the next run).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Wick } from '../wasm_glue/wick.mjs';
import { readLlamaBundle } from './llama-bundle.mjs';
import { createServer } from './serve.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'models');
const file = path.join(dir, 'synth-gemma4-e4b-q4_0.gguf');
const vocab = path.join(dir, 'ggml-vocab-gemma-4.gguf');
fs.mkdirSync(dir, { recursive: true });
// Gemma 4's own vocabulary (262,144 tokens): the table's size is vocabulary × layers × 256
if (!fs.existsSync(vocab)) fs.writeFileSync(vocab, readLlamaBundle(['models/ggml-vocab-gemma-4.gguf'])[0]);
if (!fs.existsSync(file)) {
  console.log(`writing ${file} …`);
  execFileSync(path.join(root, 'build', 'native', 'wick'), ['synth', '--arch', 'gemma4', '--shape', 'e4b', '--type', 'q4_0', '-o', file, '--vocab', vocab], { stdio: 'inherit' });
}
const size = fs.statSync(file).size;
const gib = (n) => `${(n / 2 ** 30).toFixed(2)} GiB (${n} bytes)`;
const server = createServer(dir);
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/${path.basename(file)}`;
try {
  const head = await Wick.inspect(url, { contextSize: 256 });
  console.log(`file ${gib(size)}; Wick.inspect: needs ${gib(head.fits.needed)} of wasm memory, ${gib(head.fits.outsideBytes)} kept outside, fits ${head.fits.fits}`);
  const t0 = performance.now();
  const engine = await Wick.load(url, { threads: 2, contextSize: 256, cache: false });
  console.log(`loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${engine.info.architecture}, ${engine.info.block_count} layers of ${engine.info.embedding_length}, build ${engine.info.build}; outside wasm memory ${gib(engine.info.outsideBytes)}; wasm heap ${gib(engine.info.wasmMemoryBytes)}`);
  let text = '', n = 0, timings = null;
  const t1 = performance.now();
  for await (const c of engine.generate('Once upon a time', { maxTokens: 8, temperature: 0 })) {
    if (c.done) timings = c.timings;
    else { text += c.text; n += c.tokens.length; }
  }
  console.log(`generated ${n} tokens in ${((performance.now() - t1) / 1000).toFixed(1)} s (decode ${timings?.decodeTokensPerSecond?.toFixed(2)} tok/s): ${JSON.stringify(text)}`);
  await engine.unload();
} catch (e) {
  console.log(`the ${gib(size)} file: ${e.code}: ${e.message}`);
  process.exitCode = 1;
} finally {
  server.close();
  console.log(`peak resident memory of the process (its worker included): ${gib(process.resourceUsage().maxRSS * 1024)}`);
  if (!process.argv.includes('--keep')) fs.rmSync(file, { force: true });
}
