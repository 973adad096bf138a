// tests/gpu-browser.test.mjs — the WebGPU path in Debian's Chromium (playwright-core, never a
// downloaded browser) on SwiftShader (--use-webgpu-adapter=swiftshader), from 127.0.0.1:
// logits of every mini/families file the GPU path runs against llama.cpp's references (the
// backend module and the wasm engine on the page itself), stories260K's greedy text through
// Wick.load({device: 'gpu'}) in the engine's Web Worker (and after a device lost mid-generation,
// on the CPU), Auto's check of the GPU path with its verdict kept in IndexedDB, and the page: Auto takes the CPU on a
// software adapter and says why; choosing GPU runs there and says on which adapter.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models, loadReference, toleranceFor, compareRows } from './helpers.mjs';
import { CHROMIUM_ARGS, launchChromium } from './browser.mjs';

// Chromium's WebGPU on its SwiftShader adapter; no GPU watchdog (a software GPU on a busy
// machine can take longer than it allows for one submission, and the GPU process would be killed)
const ARGS = [...CHROMIUM_ARGS, '--disable-gpu-watchdog', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--enable-unsafe-swiftshader'];

// the page of the logits test: the single-threaded engine and the GPU backend, side by side
const PAGE = `<!doctype html><meta charset="utf-8"><title>wick gpu test</title>
<script src="/build/wasm/wick.js"></script>
<script type="module">
import { Wick } from '/wasm_glue/wick.mjs';
import * as gpu from '/wasm_glue/gpu/backend.mjs';
window.Wick = Wick;
let M = null, device = null;
window.gpuLogits = async (url, promptTokens, greedy, steps) => {
  M ??= await createWick({ locateFile: (n) => '/build/wasm/' + n });
  if (!device) {
    const found = await gpu.findAdapter();
    if (!found.adapter) throw new Error('no adapter: ' + found.reason);
    device = await gpu.openDevice(found.adapter);
    window.adapter = found.description;
  }
  const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
  const ptr = M._malloc(bytes.length);
  M.HEAPU8.set(bytes, ptr);
  const out = M._malloc(4);
  if (M._wick_model_load_gguf(ptr, bytes.length, out)) throw new Error(M.UTF8ToString(M._wick_last_error()));
  const model = M.HEAPU32[out >> 2];
  M._wick_model_tensors_json(model, 0, 0, out);
  const len = M.HEAPU32[out >> 2], buf = M._malloc(len);
  M._wick_model_tensors_json(model, buf, len, out);
  const tensors = JSON.parse(M.UTF8ToString(buf));
  const dequantize = (type, p, n) => {
    const o = M._malloc(n * 4);
    M._wick_dequantize(type, p, n, o);
    const v = M.HEAPF32.slice(o >> 2, (o >> 2) + n);
    M._free(o);
    return v;
  };
  const f = await gpu.GpuForward.create(device, { tensors, heap: () => M.HEAPU8, dequantize, nCtx: 128, software: true });
  try {
    const prompt = Array.from(await f.eval(promptTokens, 0, true));
    const after = [];
    for (let s = 0; s < steps; s++) after.push(Array.from(await f.eval([greedy[s]], promptTokens.length + s, false)));
    return { prompt, after };
  } finally {
    f.destroy();
    M._wick_model_free(model);
    [ptr, out, buf].forEach((p) => M._free(p));
  }
};
window.ready = true;
</script>`;

let site, server, base, browser;

before(async () => {
  site = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-site-'));
  for (const d of ['web', 'wasm_glue', 'build', 'node_modules']) fs.symlinkSync(path.join(root, d), path.join(site, d));
  fs.symlinkSync(models, path.join(site, 'models'));
  fs.writeFileSync(path.join(site, 'gpu.html'), PAGE);
  server = createServer(site, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium('gpu', { args: ARGS });
});

after(async () => {
  await browser?.close();
  if (server) { server.closeAllConnections(); server.close(); }
  if (site) fs.rmSync(site, { recursive: true, force: true });
});

async function testPage() {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e.message));
  await page.goto(`${base}/gpu.html`);
  await page.waitForFunction(() => window.ready === true);
  return page;
}

test('Chromium, GPU path on SwiftShader: logits of every mini and families file it runs match llama.cpp', { timeout: 900000 }, async () => {
  const page = await testPage();
  try {
    const problems = [];
    let files = 0;
    for (const dir of ['mini', 'families']) {
      for (const name of fs.readdirSync(path.join(models, dir)).filter((n) => n.endsWith('.gguf')).map((n) => n.replace(/\.gguf$/, ''))) {
        if (/mini-chat/.test(name)) continue; // no reference (the chat suites test it)
        const ref = loadReference(`${name}.json`);
        const steps = ref.greedy_step_logits.length;
        const r = await page.evaluate(([u, p, g, s]) => window.gpuLogits(u, p, g, s), [`/models/${dir}/${name}.gguf`, ref.prompt_tokens, ref.greedy_tokens, steps - 1]);
        const V = ref.n_vocab, n = ref.prompt_tokens.length;
        const rows = Array.from({ length: n }, (_, i) => r.prompt.slice(i * V, (i + 1) * V));
        problems.push(...compareRows(rows, ref.prompt_logits, toleranceFor(name), `${name} prompt`));
        problems.push(...compareRows([rows[n - 1], ...r.after], ref.greedy_step_logits, toleranceFor(name), `${name} greedy`));
        files++;
      }
    }
    assert.ok(files >= 38, `${files} files (the hybrids lfm2 and qwen35 among them)`);
    assert.deepEqual(problems, []);
    assert.match(await page.evaluate(() => window.adapter), /swiftshader/i);
  } finally {
    await page.close();
  }
});

test("Chromium: Wick.load({device: 'gpu'}) runs stories260K in the worker on the GPU, greedy text as the reference; a lost device falls back to the CPU", { timeout: 300000 }, async () => {
  const page = await testPage();
  try {
    const r = await page.evaluate(async () => {
      const engine = await window.Wick.load('/models/stories260K.gguf', { device: 'gpu', gpuAllowSoftware: true, threads: 1, contextSize: 512 });
      const run = async (lose) => {
        let text = '', chunks = 0;
        for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: 240 })) {
          if (c.done) break;
          text += c.text;
          if (lose && ++chunks === 3) engine._loseGpuDevice();
        }
        return text;
      };
      const text = await run(false);
      const device = engine.device;
      // a device lost mid-generation: E_GPU, then the CPU path answers
      const lost = await run(true).then(() => 'no error', (e) => `${e.code}: ${e.message}`);
      const after = engine.device;
      const again = await run(false);
      const auto = await window.Wick.load('/models/stories260K.gguf', { device: 'auto', threads: 1 });
      const autoDevice = auto.device;
      await engine.unload();
      await auto.unload();
      return { text, device, lost, after, again, autoDevice };
    });
    const greedy = loadReference('stories260K.json').greedy_text;
    assert.equal(r.device.type, 'gpu');
    assert.match(r.device.adapter, /swiftshader/i);
    assert.equal(r.text, greedy);
    assert.match(r.lost, /^E_GPU: .*switched to the CPU/);
    assert.equal(r.after.type, 'cpu');
    assert.equal(r.again, greedy);
    assert.equal(r.autoDevice.type, 'cpu');
    assert.match(r.autoDevice.reason, /software/);
  } finally {
    await page.close();
  }
});

test("Chromium: Auto (software adapter allowed) checks the GPU path against the CPU in the worker; the verdict is kept in IndexedDB across page loads", { timeout: 300000 }, async () => {
  const page = await testPage();
  try {
    const loadAuto = () => page.evaluate(async () => {
      const engine = await window.Wick.load('/models/stories260K.gguf', { device: 'auto', gpuAllowSoftware: true, threads: 1, contextSize: 256 });
      const d = engine.device;
      await engine.unload();
      return d;
    });
    const first = await loadAuto();
    assert.equal(first.verify.correct, true, first.reason);
    assert.equal(first.verify.reused, false);
    assert.equal(first.type, first.verify.faster ? 'gpu' : 'cpu');
    assert.match(first.verify.key.agent, /Chrom/);
    // a new page load: the module's memory is gone, the verdict comes from IndexedDB
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const second = await loadAuto();
    assert.equal(second.verify.reused, true);
    assert.equal(second.verify.checkMs, 0);
    assert.deepEqual(second.verify.key, first.verify.key);
    assert.equal(second.type, first.type);
  } finally {
    await page.close();
  }
});

test('the page: Auto takes the CPU on a software adapter and says why; GPU chosen runs on it', { timeout: 300000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${base}/web/`);
    await page.waitForSelector('body[data-state=ready]', { timeout: 60000 });
    const status = await page.textContent('#model-status');
    assert.match(status, /CPU \(not the GPU: the only WebGPU adapter is a software one \(.*SwiftShader.*\), slower than the CPU path\)/i);
    assert.equal(await page.getAttribute('#model-status', 'data-device'), 'cpu');
    await page.selectOption('#device', 'gpu');
    await page.click('#load-button');
    await page.waitForSelector('#model-status[data-device=gpu]', { timeout: 120000 });
    await page.waitForSelector('body[data-state=ready]', { timeout: 60000 });
    assert.match(await page.textContent('#model-status'), /GPU: .*SwiftShader.* \(a software adapter\)/i);
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    await page.waitForSelector('.msg[data-done=true]', { timeout: 120000 });
    const text = await page.evaluate(() => [...document.querySelectorAll('.msg[data-done=true] .tok')].map((t) => t.textContent).join(''));
    assert.ok(text.length > 20, text);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});
