// tests/relaxed.test.mjs — the relaxed-SIMD builds (mk/relaxed.mk, issue 16): the kernel test in
// the relaxed wasm build (V8's relaxed SIMD under Node's flag) and natively with the instruction
// emulated, every kernel against the scalar reference bit for bit; then the logits of every model
// in ../shared (mini, families, stories260K) byte-identical between the plain and relaxed builds,
// wasm at 1 and 2 threads and native. (The page and Wick.load choosing the build in Chromium:
// tests/browser-glue.test.mjs and tests/page.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { assertChecks } from './checks.mjs';
import { root, models, nativeCli, wasmCli } from './helpers.mjs';

const build = (f) => path.join(root, 'build', f);
for (const f of ['native/test_kernels-relaxed', 'wasm/test_kernels-relaxed.js', 'native/wick-relaxed', 'wasm/wick-relaxed.js', 'wasm/wick-mt-relaxed.js']) {
  if (!fs.existsSync(build(f))) throw new Error(`build/${f} is missing: run make`);
}

function run(cmd, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env } });
    const out = [], err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }));
  });
}

for (const [name, kind, cmd, args] of [
  ['wasm (relaxed SIMD in V8)', 'wasm', process.execPath, ['--experimental-wasm-relaxed-simd', build('wasm/test_kernels-relaxed.js')]],
  ['native (the instruction emulated)', 'native', build('native/test_kernels-relaxed'), []],
]) {
  test(`the relaxed kernels equal the scalar reference bit for bit: ${name}`, { timeout: 300000 }, async () => {
    const r = await run(cmd, args);
    // every check of the plain build's test_kernels, by id (tests/checks/test_kernels.txt), passed
    const { checks } = assertChecks({ ...r, signal: null }, 'test_kernels', kind);
    // every type with a relaxed path was among them
    for (const t of ['q4_0', 'q4_1', 'q5_0', 'q5_1', 'q2_K', 'q3_K', 'q4_K', 'q5_K', 'q6_K'])
      assert.ok(checks.some((c) => c.id.startsWith(`kernels.${t}.gemm.`)), t);
  });
}

const files = [
  ...fs.readdirSync(path.join(models, 'mini')).filter((f) => f.endsWith('.gguf')).map((f) => path.join(models, 'mini', f)),
  ...fs.readdirSync(path.join(models, 'families')).filter((f) => f.endsWith('.gguf')).map((f) => path.join(models, 'families', f)),
  path.join(models, 'stories260K.gguf'),
];
// a batch (prefill: the gemm tiles) and single tokens after it (decode: the eight-row kernels)
const TOKENS = Array.from({ length: 23 }, (_, i) => 1 + ((i * 37) % 250)).join(',');

test('logits of every shared model: plain and relaxed builds byte-identical, wasm at 1 and 2 threads and native', { timeout: 900000 }, async () => {
  let compared = 0;
  for (const file of files) {
    const args = ['logits', '-m', file, '--tokens', TOKENS, '--ctx', '64'];
    const runs = {
      'wasm st': run(process.execPath, [wasmCli, ...args, '--threads', '1']),
      'wasm st relaxed': run(process.execPath, [wasmCli, ...args, '--threads', '1'], { WICK_WASM_RELAXED: '1' }),
    };
    const a = await Promise.all(Object.values(runs));
    const b = await Promise.all([
      run(process.execPath, [wasmCli, ...args, '--threads', '2']),
      run(process.execPath, [wasmCli, ...args, '--threads', '2'], { WICK_WASM_RELAXED: '1' }),
    ]);
    const c = await Promise.all([run(nativeCli, args), run(build('native/wick-relaxed'), args)]);
    const all = { ...Object.fromEntries(Object.keys(runs).map((k, i) => [k, a[i]])), 'wasm mt': b[0], 'wasm mt relaxed': b[1], native: c[0], 'native relaxed': c[1] };
    const name = path.basename(file);
    if (all.native.code !== 0 && /is not supported/.test(all.native.stderr)) {
      // an architecture this engine does not run yet: every build refuses it alike
      for (const [k, r] of Object.entries(all)) assert.match(r.stderr, /is not supported/, `${name} ${k}`);
      continue;
    }
    for (const [k, r] of Object.entries(all)) assert.equal(r.code, 0, `${name} ${k}: ${r.stderr.slice(-500)}`);
    assert.ok(JSON.parse(all['wasm st'].stdout).prompt_logits.length > 0, name);
    assert.equal(all['wasm st relaxed'].stdout, all['wasm st'].stdout, `${name}: relaxed st`);
    assert.equal(all['wasm mt'].stdout, all['wasm st'].stdout, `${name}: plain mt`);
    assert.equal(all['wasm mt relaxed'].stdout, all['wasm st'].stdout, `${name}: relaxed mt`);
    assert.equal(all['native relaxed'].stdout, all.native.stdout, `${name}: native relaxed`);
    compared++;
  }
  assert.ok(compared >= 30, `${compared} files`);
});
