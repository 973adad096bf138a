// tests/checks.test.mjs — the harness of the C tests itself: tests/check.h compiled into a small
// program (a duplicate id, a malformed id, a missing fixture, a note, the summary, the exit
// status), and tests/checks.mjs's verdicts on output with a failed, a missing, an unexpected or a
// repeated check, a lost summary line and a stray line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkProblems, expectedIds, parseChecks } from './checks.mjs';
import { root } from './helpers.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-checks-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

/** Compiles a C program of `body` (main's statements) against tests/check.h and runs it. */
function runC(name, body, args = []) {
  const src = path.join(dir, `${name}.c`), bin = path.join(dir, name);
  fs.writeFileSync(src, `#include "check.h"\nint main(int argc, char **argv) {\n(void)argc; (void)argv;\n${body}\n}\n`);
  const cc = spawnSync(process.env.CC || 'gcc', ['-std=c11', '-Wall', '-Wextra', '-Werror', `-I${path.join(root, 'tests')}`, '-o', bin, src], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const r = spawnSync(bin, args, { encoding: 'utf8' });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

test('check.h: one tab-separated line per check, notes, the summary and the exit status', () => {
  const fixture = path.join(dir, 'fixture.txt');
  fs.writeFileSync(fixture, 'data');
  const r = runC('lines', `
    check(1, "a.one", "value %d", 7);
    check_note("a note\\twith a tab");
    check(1, check_id("a.%s.%d", "two", 2), "multi\\nline");
    size_t n;
    char *f = check_read("a.fixture", argv[1], &n);
    check(f && n == 4 && !strcmp(f, "data"), "a.fixture-bytes", "%zu bytes", n);
    free(f);
    check(1, check_id("a.slug.%s", check_slug("Left Recursion (x)")), "slug");
    return check_summary();`, [fixture]);
  assert.equal(r.code, 0, r.stdout);
  assert.equal(r.stdout, [
    'ok\ta.one\tvalue 7', '# a note with a tab', 'ok\ta.two.2\tmulti line', `ok\ta.fixture\tread ${fixture} (4 bytes)`,
    'ok\ta.fixture-bytes\t4 bytes', 'ok\ta.slug.left-recursion-x\tslug', 'summary\t5 passed\t0 failed', ''].join('\n'));
  assert.deepEqual(checkProblems(r, ['a.one', 'a.two.2', 'a.fixture', 'a.fixture-bytes', 'a.slug.left-recursion-x']), []);
});

test('check.h: a missing fixture, a repeated id and a malformed id fail; no check at all fails', () => {
  const r = runC('failures', `
    check_read("b.fixture", "/nonexistent/fixture.bin", NULL);
    check(1, "b.same", "first");
    check(1, "b.same", "second");
    check(1, "b has spaces", "x");
    check(1, "b.fine", "y");
    return check_summary();`);
  assert.equal(r.code, 1);
  const { checks, summary } = parseChecks(r.stdout);
  assert.deepEqual(checks.map((c) => [c.ok, c.id]), [[false, 'b.fixture'], [true, 'b.same'], [false, 'b.same'], [false, 'b_has_spaces'], [true, 'b.fine']]);
  assert.match(checks[0].detail, /cannot read the fixture \/nonexistent\/fixture\.bin/);
  assert.match(checks[2].detail, /a second check with this id/);
  assert.match(checks[3].detail, /not a valid check id/);
  assert.deepEqual(summary, { passed: 2, failed: 3 });
  const none = runC('none', 'return check_summary();');
  assert.equal(none.code, 1);
  assert.deepEqual(checkProblems(none, []), ['no check ran']);
});

test('checks.mjs reports each problem of a run by id', () => {
  const out = (lines) => ({ code: 0, signal: null, stderr: '', stdout: `${lines.join('\n')}\n` });
  const good = ['ok\tx.a\tfine', 'ok\tx.b\tfine', 'summary\t2 passed\t0 failed'];
  assert.deepEqual(checkProblems(out(good), ['x.a', 'x.b']), []);
  assert.deepEqual(checkProblems(out(good), ['x.a', 'x.b', 'x.c']), ['missing x.c: the check did not run']);
  assert.deepEqual(checkProblems(out(good), ['x.a']), ['unexpected x.b: not in the list of this run']);
  assert.deepEqual(checkProblems({ ...out(['ok\tx.a\tfine', 'FAIL\tx.b\tbroken', 'summary\t1 passed\t1 failed']), code: 1 }, ['x.a', 'x.b']),
    ['FAIL x.b: broken']);
  assert.deepEqual(checkProblems(out(good.slice(0, 2)), ['x.a', 'x.b']), ['no summary line (the program stopped before its end)']);
  assert.deepEqual(checkProblems(out(['ok\tx.a\tfine', 'summary\t2 passed\t0 failed']), ['x.a']),
    ['the summary (2 passed, 0 failed) does not count the 1 check lines']);
  assert.deepEqual(checkProblems(out(['ok\tx.a\tfine', 'ok\tx.a\tagain', 'summary\t2 passed\t0 failed']), ['x.a']), ['x.a: printed 2 times']);
  assert.deepEqual(checkProblems(out(['stray', ...good]), ['x.a', 'x.b']), ['not a line of tests/check.h: "stray"']);
  assert.deepEqual(checkProblems({ ...out(good), signal: 'SIGSEGV' }, ['x.a', 'x.b']), ['killed by SIGSEGV']);
});

test('every list in tests/checks/ names each id once, for both builds or one', () => {
  const lists = fs.readdirSync(path.join(root, 'tests', 'checks')).filter((f) => f.endsWith('.txt'));
  assert.ok(lists.length >= 10, lists.join(' '));
  for (const f of lists) {
    for (const build of ['native', 'wasm']) {
      const ids = expectedIds(f.replace(/\.txt$/, ''), build);
      assert.ok(ids.length > 0, f);
      assert.equal(new Set(ids).size, ids.length, `${f} (${build}): an id listed twice`);
      for (const id of ids) assert.match(id, /^[A-Za-z0-9._\-+:/=@]+$/, `${f}: ${id}`);
    }
  }
});
