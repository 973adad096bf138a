// tests/check-gpu-real.test.mjs — `npm run check:gpu-real` (tools/check-gpu-real.mjs) end to end on
// SwiftShader: refused without --allow-software when the only adapter is a software one (exit 2,
// saying so), and with it, --quick (a 16-token prompt, 4 tokens; here on ../shared's mini Q4_0 in place
// of 134m Q4_0, and the gpu-steps suite: the same code, minutes less on SwiftShader) runs the suite,
// measures the CPU path and the GPU path with two decode kernels (rows, mv) and prints the table; the
// numbers mean nothing here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { root, models } from './helpers.mjs';

const script = path.join(root, 'tools', 'check-gpu-real.mjs');
const swiftshader = { ...process.env, VK_ICD_FILENAMES: '/usr/lib/chromium/vk_swiftshader_icd.json' };
delete swiftshader.WICK_GPU_REAL;

test('check:gpu-real refuses a software adapter unless --allow-software', { timeout: 120000 }, () => {
  const r = spawnSync(process.execPath, [script, '--quick'], { cwd: root, env: swiftshader, encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /only WebGPU adapter is a software one \(.*swiftshader.*\).*--allow-software/i);
  assert.equal(r.stdout, '');
});

test('check:gpu-real --quick --allow-software runs end to end on SwiftShader: a suite, both paths, one table', { timeout: 600000 }, () => {
  // the quick run's suite here is gpu-steps (make test runs gpu-kernels itself; twice would cost minutes on SwiftShader)
  const mini = path.join(models, 'mini', 'mini-q4_0.gguf');
  const r = spawnSync(process.execPath, [script, '--quick', '--allow-software', '--suites', 'gpu-steps', '--models', mini], { cwd: root, env: swiftshader, encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const lines = r.stdout.split('\n');
  assert.match(lines[0], /^\| model \| MiB \| path \| prefill tok\/s \| decode tok\/s \| decode ÷ CPU \|/);
  const cells = (p) => {
    const row = lines.find((l) => l.startsWith(`| mini-q4_0.gguf |`) && l.includes(`| ${p} |`));
    assert.ok(row, `no ${p} row: ${r.stdout}`);
    return row.split('|').map((c) => c.trim()).filter(Boolean);
  };
  const cpu = cells('CPU');
  for (const c of cpu.slice(3, 5)) assert.ok(Number(c) > 0, `a measured figure: ${cpu}`);
  // the GPU path with the kernel of before (main on a software adapter) and the one-token kernel main_mv
  for (const p of ['GPU rows', 'GPU mv']) {
    const g = cells(p);
    for (const c of g.slice(3, 6)) assert.ok(Number(c) > 0, `a measured figure: ${g}`);
    // greedy on both paths: the GPU reads back the best logit only (8 + 8 bytes per token)
    assert.match(g[6], /^16 B; greedy tokens equal \d of 4$/);
  }
  assert.match(r.stdout, /adapter: .*swiftshader.*a software adapter/i);
  assert.match(r.stdout, /gpu-steps \d+ passed, 0 failed, 0 skipped/);
});
