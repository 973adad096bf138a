// tests/kernel-insns.test.mjs — tools/kernel-insns.mjs on the built kernel objects
// (build/wasm/obj{,-rx}/kernels_simd.o, or WICK_BUILD_DIR's): a row for each of Q4_0, Q8_0, Q4_K
// and Q6_K in both builds, decode and prefill, every count a positive finite number, and every
// relaxed decode kernel at or above its format's floor (a count below the floor means the tool
// miscounts). Missing objects fail the test: make builds them (`make test` depends on `all`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { root } from './helpers.mjs';
import { CLASSES, REQUIRED_TYPES, measure, total } from '../tools/kernel-insns.mjs';

const build = process.env.WICK_BUILD_DIR || path.join(root, 'build');

test('kernel-insns: a measured row per required type, build and role; relaxed decode at or above the floor', () => {
  const rows = measure(build);
  for (const type of REQUIRED_TYPES)
    for (const b of ['simd128', 'relaxed'])
      for (const role of ['decode', 'prefill tile']) {
        const r = rows.find((x) => x.type === type && x.build === b && x.role === role);
        assert.ok(r, `${type} ${b} ${role}: no row`);
        assert.equal(r.error, undefined, `${type} ${b} ${role}: ${r.error}`);
      }
  for (const r of rows) {
    if (r.error) continue;
    const counts = [...CLASSES.map((c) => r.per256[c]), total(r.per256), r.weightsPerIter, r.min];
    for (const x of counts) assert.ok(Number.isFinite(x) && x >= 0, `${r.kernel} ${r.build}: ${x}`);
    for (const x of [total(r.per256), r.weightsPerIter, r.min, r.per256.load, r.per256.dot])
      assert.ok(x > 0, `${r.kernel} ${r.build}: a count of ${x}`);
    if (r.build === 'relaxed' && r.role === 'decode')
      assert.ok(total(r.per256) >= r.min, `${r.kernel}: ${total(r.per256)} instructions per 256 weights, under the floor ${r.min}`);
  }
});

test('kernel-insns: the command prints the table', () => {
  const r = spawnSync(process.execPath, [path.join(root, 'tools', 'kernel-insns.mjs'), '--build', build], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  for (const type of REQUIRED_TYPES)
    for (const b of ['simd128', 'relaxed'])
      assert.match(r.stdout, new RegExp(`^\\| ${type} \\| quant_gemv8_\\w+ \\| ${b} \\| decode \\| \\d+ × 8 rows \\| [\\d.]+ \\|`, 'm'));
});

test('kernel-insns: a missing object is an error, not an empty table', () => {
  assert.throws(() => measure(path.join(root, 'no-such-build-dir')), /kernels_simd\.o is missing/);
});
