// tests/ple-outside.test.mjs — gemma4's per-layer embedding table kept outside wasm memory
// (load option tablesOutside; download.js keeps its bytes in JS, the engine reads the rows of each
// batch through Module.wickReadRows, src/engine_library.js): the same numbers as with the table
// inside, a heap that does not hold it, and a fit check (Wick.inspect, WickGguf.checkFits) that
// counts only what goes into wasm memory. On `wick synth --arch gemma4 --shape mini` files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Wick } from '../wasm_glue/wick.mjs';
import '../wasm_glue/gguf-header.js';
import { createServer } from '../tools/serve.mjs';
import { runProgram, runWick, shared } from './helpers.mjs';
import { checkProblems } from './checks.mjs';

const WickGguf = globalThis.WickGguf;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-ple-outside-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

function synth(type) {
  const file = path.join(dir, `gemma4-mini-${type}.gguf`);
  const r = runWick('native', ['synth', '--arch', 'gemma4', '--shape', 'mini', '--type', type, '-o', file, '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  return file;
}

/** The per-layer embedding table's range in the file, from its tensor directory. */
function pleTable(file) {
  const bytes = fs.readFileSync(file);
  const header = WickGguf.parseHeader(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), { tensors: true });
  const tables = WickGguf.rowTables(header, bytes.length);
  assert.deepEqual(tables.map((t) => t.name), ['per_layer_token_embd.weight']);
  return { header, tables, size: bytes.length };
}

/** Text, tokens and the top-8 probabilities of every step of a seeded sampled run. */
async function run(file, options) {
  const engine = await Wick.load(file, { contextSize: 128, ...options });
  try {
    const steps = [];
    let text = '';
    for await (const c of engine.generate('Once upon a time there was', { maxTokens: 12, temperature: 1, seed: 42, topK: 0, topP: 1, minP: 0, probs: 8 })) {
      if (c.done) break;
      text += c.text;
      steps.push({ tokens: c.tokens, probs: (c.probs || []).map((p) => [p.token, p.p]) });
    }
    return { text, steps, info: engine.info };
  } finally {
    await engine.unload();
  }
}

for (const type of ['f16', 'q8_0']) {
  test(`gemma4 ${type}: the per-layer embeddings outside wasm memory give the same numbers, 1 and 2 threads`, async () => {
    const file = synth(type);
    const { tables, size } = pleTable(file);
    for (const threads of [1, 2]) {
      const base = { threads, multiThreaded: threads > 1 };
      const inside = await run(file, { ...base, tablesOutside: false });
      const outside = await run(file, { ...base, tablesOutside: true });
      assert.equal(inside.info.outsideBytes, 0);
      assert.equal(outside.info.outsideBytes, tables[0].bytes, 'the table, its padding included, is what stayed outside');
      assert.ok(inside.steps.length >= 8 && inside.steps.every((s) => s.probs.length === 8), 'eight probabilities a step');
      assert.ok(inside.steps.some((s) => s.probs[0][1] < 0.9), 'the probabilities are not all one-hot');
      // every probability of every step, exactly: the logits are the same numbers
      assert.deepEqual(outside.steps, inside.steps, `${threads} thread(s): the steps differ`);
      assert.equal(outside.text, inside.text);
      assert.equal(outside.info.build.startsWith('mt'), threads > 1);
      if (type === 'f16') {
        // the heap holds the file less the table: less than the whole file, less than the run with it inside
        assert.ok(outside.info.wasmMemoryBytes < size, `heap ${outside.info.wasmMemoryBytes} with the table outside, file ${size}`);
        assert.ok(inside.info.wasmMemoryBytes > size, `heap ${inside.info.wasmMemoryBytes} with the table inside, file ${size}`);
      }
      assert.ok(outside.info.wasmMemoryBytes < inside.info.wasmMemoryBytes);
    }
  });
}

// the C side alone (tests/test_load.c --sparse): the table cut out of the buffer and read back
// through a reader gives every prompt row's logits bit for bit (native: 1 and 2 threads; the wasm
// test programs are single-threaded, the public API's runs above take 2); a failing reader
// fails the evaluation, a hole that cuts a tensor is refused
for (const build of ['native', 'wasm']) {
  test(`${build}: wick_model_load_gguf_sparse gives the whole file's logits`, () => {
    for (const type of ['f16', 'q8_0']) {
      const file = synth(type);
      const [t] = pleTable(file).tables;
      const threads = build === 'native' ? 2 : 1;
      const r = runProgram(build, 'test_load', ['--sparse', file, String(t.offset), String(t.bytes), String(threads)]);
      const ids = ['load.sparse.read', 'load.sparse.whole', 'load.sparse.cut',
        ...Array.from({ length: threads }, (_, k) => `load.sparse.logits.t${k + 1}`), 'load.sparse.reader-fails', 'load.sparse.cut-tensor'];
      assert.deepEqual(checkProblems(r, ids), [], r.stdout + r.stderr);
    }
  });
}

test('the fit check counts only what goes into wasm memory (Wick.inspect, checkFits)', async () => {
  const file = synth('q8_0');
  const { header, tables, size } = pleTable(file);
  const server = createServer(dir);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${server.address().port}/${path.basename(file)}`;
    const auto = await Wick.inspect(url, { contextSize: 128 });
    const out = await Wick.inspect(url, { contextSize: 128, tablesOutside: true });
    assert.deepEqual(auto.tables, tables);
    assert.equal(auto.fits.outsideBytes, 0, 'a file that fits keeps its table inside');
    assert.equal(out.fits.outsideBytes, tables[0].bytes);
    assert.equal(auto.fits.needed - out.fits.needed, tables[0].bytes);
  } finally {
    server.close();
  }
  // a file too large for wasm32 with the table, small enough without it: the table goes outside
  const md = header.metadata, available = WickGguf.WASM_MEMORY_LIMIT - WickGguf.ENGINE_RESERVE;
  const big = [{ name: 'per_layer_token_embd.weight', offset: 0, bytes: 3 * 2 ** 30 }];
  const fileBytes = available - 2 ** 30 + big[0].bytes;
  const fit = WickGguf.checkFits({ fileBytes, metadata: md, contextSize: 128, tables: big });
  assert.equal(fit.fits, true);
  assert.equal(fit.outsideBytes, big[0].bytes);
  const kept = WickGguf.checkFits({ fileBytes, metadata: md, contextSize: 128, tables: big, tablesOutside: false });
  assert.equal(kept.fits, false);
  assert.equal(kept.needed - fit.needed, big[0].bytes);
  assert.equal(WickGguf.checkFits({ fileBytes: size, metadata: md, contextSize: 128, tables }).outsideBytes, 0);
});
