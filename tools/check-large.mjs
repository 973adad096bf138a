#!/usr/bin/env node
// tools/check-large.mjs — loads a model larger than 2 GiB through the JS API over HTTP (the 1b
// shape in F16, written by `wick synth`, 2.2 GB) and generates a few tokens: wasm32 pointers and
// sizes past 2^31 must be handled as unsigned all the way, or the file refused at once with a
// clear error (one allocation above 2 GiB fails in Debian's Emscripten 3.1.6). Not part of CI
// (it writes 2.2 GB and needs ~3 GB of memory): `node tools/check-large.mjs`.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Wick } from '../wasm_glue/wick.mjs';
import { createServer } from './serve.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'models', 'synth-1b-f16.gguf');
if (!fs.existsSync(file)) {
  console.log(`writing ${file} …`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  execFileSync(path.join(root, 'build', 'native', 'wick'), ['synth', '--shape', '1b', '--type', 'f16', '-o', file,
    '--vocab', path.join(root, '..', 'shared', 'vocab', 'ggml-vocab-llama-spm.gguf')], { stdio: 'inherit' });
}
const size = fs.statSync(file).size;
const server = createServer(path.dirname(file));
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const site = `http://127.0.0.1:${server.address().port}`;
const t0 = performance.now();
try {
  const engine = await Wick.load(`${site}/${path.basename(file)}`, { threads: 2, contextSize: 256, cache: false });
  console.log(`loaded ${(size / 2 ** 30).toFixed(2)} GiB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  let text = '';
  for await (const c of engine.generate('Once upon a time', { maxTokens: 4, temperature: 0 })) if (!c.done) text += c.text;
  console.log(`generated ${JSON.stringify(text)}`);
  await engine.unload();
} catch (e) {
  console.log(`the ${(size / 2 ** 30).toFixed(2)} GiB file after ${((performance.now() - t0) / 1000).toFixed(1)} s: ${e.code}: ${e.message}`);
}
server.close();
