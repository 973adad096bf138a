// tests/setup.test.mjs — tools/setup.sh, the first thing a newcomer runs (issue 25):
//  - with a Node.js older than the tests need first on PATH, it stops at once, non-zero, with one
//    sentence naming the version needed (and installs nothing);
//  - every file the builds name by an absolute path (the Makefile, mk/*.mk, the tests and tools)
//    is a file setup.sh checks for, so a package that holds it cannot go missing from its list
//    unseen (llvm-19's llvm-ar once did: clang-19 only recommends llvm-19).
// The whole install on a clean system is `make check-fresh` (tools/check-fresh.sh), in CI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { root } from './helpers.mjs';

const setup = path.join(root, 'tools', 'setup.sh');

test('setup.sh refuses a Node.js older than 20 with one sentence naming the version needed', () => {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-old-node-'));
  try {
    // a node that answers as Node 18 does: `node --version` and `node -p process.versions.node…`
    fs.writeFileSync(path.join(bin, 'node'), '#!/bin/sh\ncase "$1" in --version) echo v18.19.0 ;; -p) echo 18 ;; *) exit 1 ;; esac\n', { mode: 0o755 });
    // apt-get first on PATH too: setup.sh must stop before it would install anything
    fs.writeFileSync(path.join(bin, 'apt-get'), '#!/bin/sh\necho "apt-get was called" >&2\nexit 99\n', { mode: 0o755 });
    const r = spawnSync('bash', [setup], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.doesNotMatch(r.stderr, /apt-get was called/);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /needs Node\.js 20 or later.*v18\.19\.0/);
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
});

test('setup.sh with the real Node.js on this machine has nothing left to install', () => {
  const r = spawnSync('bash', [setup], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stdout + r.stderr, '', 'make test ran setup.sh already: a second run must find everything');
});

test('every absolute tool path in the Makefile, mk/, tests/ and tools/ is a file setup.sh checks for', () => {
  const script = fs.readFileSync(setup, 'utf8');
  const checked = new Set([...script.matchAll(/^\s*"(\/\S+)\s+\S+/gm)].map((m) => m[1]));
  assert.ok(checked.has('/usr/lib/llvm-19/bin/llvm-ar'), 'the table of files is where this test reads it');
  const sources = ['Makefile', ...fs.readdirSync(path.join(root, 'mk')).map((f) => `mk/${f}`),
    ...['tests', 'tools'].flatMap((d) => fs.readdirSync(path.join(root, d)).filter((f) => /\.(mjs|js|sh)$/.test(f)).map((f) => `${d}/${f}`))]
    .filter((f) => !['tools/setup.sh', 'tools/check-fresh.sh', 'tests/setup.test.mjs'].includes(f));
  const named = new Map();
  for (const file of sources) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    // programs and data under /usr/bin and /usr/lib (not /usr/bin/env, which every system has)
    for (const m of text.matchAll(/\/usr\/(?:bin|lib)\/[\w.+/-]*[\w+-]/g)) {
      const p = m[0];
      if (p === '/usr/bin/env' || p === '/usr/bin/time' || p.endsWith('/')) continue;
      if (!named.has(p)) named.set(p, file);
    }
  }
  assert.ok(named.size >= 3, `found ${[...named.keys()]}`);
  const unchecked = [...named].filter(([p]) => !checked.has(p) && !fs.statSync(p, { throwIfNoEntry: false })?.isDirectory());
  assert.deepEqual(unchecked, [], 'files the project uses that setup.sh never checks for');
});
