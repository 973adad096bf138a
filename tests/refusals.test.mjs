// tests/refusals.test.mjs — models that wick refuses by name rather than with something obscure
// (issue 27): the gemma4 mixture of experts (26B-A4B), which wick does not run and which would
// not fit wasm32 anyway; and the Gemma 4 31B, dense but far beyond wasm32's 4 GiB. The files are a
// `wick synth --arch gemma4` file with the metadata that the real ones carry (general.name,
// general.size_label, expert counts), refused by the engine (native CLI) and, from the header
// alone, by the glue (Wick.load in Node, the wasm build) with the same words; Wick.inspect's fit
// check names the 31B. gemma3n, refused here until the engine ran it, now loads and generates.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { readGguf, writeGguf, setKv, clone, T } from './gguf.mjs';
import { runWick, shared } from './helpers.mjs';
import { Wick } from '../wasm_glue/wick.mjs';
import '../wasm_glue/gguf-header.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-refusals-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let gemma4;

before(() => {
  const file = path.join(dir, 'gemma4.gguf');
  const r = runWick('native', ['synth', '--arch', 'gemma4', '--shape', 'mini', '--type', 'q8_0', '-o', file, '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  gemma4 = readGguf(file);
});

/** A variant of the gemma4 file, written to dir/name.gguf; returns its path. */
function variant(name, edit) {
  const g = clone(gemma4);
  edit(g);
  const file = path.join(dir, `${name}.gguf`);
  fs.writeFileSync(file, writeGguf(g));
  return file;
}

const engineError = (file) => {
  const r = runWick('native', ['info', '-m', file]);
  assert.notEqual(r.code, 0, `${file} loaded: ${r.stdout}`);
  return r.stderr.trim().split('\n').at(-1);
};
const glueError = async (file) => {
  try {
    const engine = await Wick.load(file, { threads: 1 });
    await engine.unload();
  } catch (e) {
    return e;
  }
  assert.fail(`${file} loaded through the glue`);
};

test('the gemma4 file itself loads (the variants below change only what they say)', () => {
  const r = runWick('native', ['info', '-m', path.join(dir, 'gemma4.gguf')]);
  assert.equal(r.code, 0, r.stderr);
});

test('Gemma 4 26B-A4B (a mixture of experts) is refused by name, by the engine and by the glue alike', async () => {
  const file = variant('gemma4-26b-a4b', (g) => {
    setKv(g, 'general.name', T.STRING, 'Gemma 4 26B A4B It');
    setKv(g, 'general.size_label', T.STRING, '26B-A4B');
    setKv(g, 'gemma4.expert_count', T.U32, 128);
    setKv(g, 'gemma4.expert_used_count', T.U32, 8);
  });
  const message = engineError(file);
  assert.match(message, /gemma4 \(Gemma 4 26B A4B It, 26B-A4B\) is a mixture-of-experts model \(gemma4\.expert_count = 128\): not supported; Gemma 4's mixture of experts \(26B-A4B\) would not fit wasm32 either/);
  const e = await glueError(file);
  assert.equal(e.code, 'E_UNSUPPORTED');
  assert.ok(message.endsWith(e.message), `the glue says what the engine says:\n${e.message}\n${message}`);
  // a file without a name is still refused, by its architecture
  assert.match(engineError(variant('gemma4-moe-unnamed', (g) => {
    g.kv = g.kv.filter((kv) => kv.key !== 'general.name' && kv.key !== 'general.size_label');
    setKv(g, 'gemma4.expert_count', T.U32, 128);
  })), /gemma4 is a mixture-of-experts model \(gemma4\.expert_count = 128\)/);
});

test('gemma3n loads and generates (refused until wick ran AltUp, Laurel and the sparse gate), in the engine and through the glue', async () => {
  const file = path.join(dir, 'gemma3n.gguf');
  const r = runWick('native', ['synth', '--arch', 'gemma3n', '--shape', 'mini', '--type', 'q8_0', '-o', file, '--vocab', path.join(shared, 'models', 'stories260K.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  const info = runWick('native', ['info', '-m', file]);
  assert.equal(info.code, 0, info.stderr);
  assert.equal(JSON.parse(info.stdout).architecture, 'gemma3n');
  assert.equal(globalThis.WickGguf.unsupportedReason({ 'general.architecture': 'gemma3n' }), null);
  const engine = await Wick.load(file, { threads: 1 });
  try {
    let text = '', n = 0;
    for await (const c of engine.generate('Once upon a time', { maxTokens: 8, temperature: 0, ignoreEos: true })) if (!c.done) text += c.text, n++;
    assert.equal(n, 8, `generated ${JSON.stringify(text)}`);
  } finally {
    await engine.unload();
  }
  // a gemma4 file renamed gemma3n lacks AltUp's and Laurel's tensors: refused for those, not for its architecture
  const renamed = variant('gemma3n-without-altup', (g) => {
    for (const kv of g.kv) if (kv.key.startsWith('gemma4.')) kv.key = `gemma3n.${kv.key.slice(7)}`;
    setKv(g, 'general.architecture', T.STRING, 'gemma3n');
  });
  assert.match(engineError(renamed), /tensor (blk\.0\.laurel_l|altup_proj)\.weight is missing/);
});

test('Gemma 4 31B does not fit wasm32, and the fit check says so by name (Wick.inspect, the load)', async () => {
  // the header of a 31B file at Q4_K_M (about 18.3 GB): served with its real size, bytes past the header are never read
  const header = writeGguf((() => {
    const g = clone(gemma4);
    setKv(g, 'general.name', T.STRING, 'Gemma 4 31B It');
    setKv(g, 'general.size_label', T.STRING, '31B');
    return g;
  })());
  const size = 18_300_000_000;
  const server = http.createServer((req, res) => {
    const m = /bytes=(\d+)-(\d+)/.exec(req.headers.range || '');
    const start = m ? Number(m[1]) : 0, end = Math.min(m ? Number(m[2]) : size - 1, size - 1);
    const body = Buffer.alloc(Math.min(end - start + 1, 1 << 20));
    header.subarray(start, start + body.length).copy(body);
    res.writeHead(m ? 206 : 200, { 'Content-Length': String(body.length), 'Content-Range': `bytes ${start}-${start + body.length - 1}/${size}`, 'Accept-Ranges': 'bytes' });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const r = await Wick.inspect(`http://127.0.0.1:${server.address().port}/gemma-4-31B-it-Q4_K_M.gguf`);
    assert.equal(r.fits.fits, false);
    assert.match(r.fits.reason, /^Gemma 4 31B It \(gemma4, 31B\) does not fit in WebAssembly memory: it needs .* file 17\.0 GiB/);
  } finally {
    server.close();
  }
  // what the load's header check throws (download.js), from the same metadata
  const metadata = globalThis.WickGguf.parseHeader(header).metadata;
  const fits = globalThis.WickGguf.checkFits({ fileBytes: size, metadata });
  assert.match(globalThis.WickGguf.tooLargeMessage(metadata, fits), /^Gemma 4 31B It \(gemma4, 31B\) does not fit in WebAssembly memory/);
  assert.match(globalThis.WickGguf.tooLargeMessage(null, fits), /^the model does not fit in WebAssembly memory/);
});
