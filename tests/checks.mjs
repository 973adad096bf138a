// tests/checks.mjs — reads the output of the C test programs (tests/check.h) by check id, and
// compares the ids a run printed with the list that run must print: tests/checks/<key>.txt, one
// id a line ("native ID" or "wasm ID" for a check only one build runs; "#" begins a comment). A
// run passes when it exited cleanly, printed its summary line, failed no check, and printed
// every listed id and no other: a check that silently stops running fails the suite as surely
// as one that fails, and each problem is reported by its id.
//
// After a change that adds, renames or removes checks, WICK_WRITE_CHECKS=1 node --test
// tests/programs.test.mjs rewrites the lists of the runs it made in both builds (the ids it saw,
// when none failed); the diff shows what changed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './helpers.mjs';

export const checksDir = path.join(root, 'tests', 'checks');
export const writing = Boolean(process.env.WICK_WRITE_CHECKS);

/** Splits a program's stdout into checks ({ok, id, detail}), notes, the summary and other lines. */
export function parseChecks(stdout) {
  const checks = [], notes = [], other = [];
  let summary = null;
  for (const line of stdout.split('\n')) {
    if (line === '') continue;
    let m;
    if ((m = /^(ok|FAIL)\t([^\t]+)\t(.*)$/.exec(line))) checks.push({ ok: m[1] === 'ok', id: m[2], detail: m[3] });
    else if ((m = /^summary\t(\d+) passed\t(\d+) failed$/.exec(line))) summary = { passed: Number(m[1]), failed: Number(m[2]) };
    else if (line.startsWith('# ')) notes.push(line.slice(2));
    else other.push(line);
  }
  return { checks, notes, summary, other };
}

/** The ids run `key` must print in `build` ('native' or 'wasm'), from tests/checks/<key>.txt. */
export function expectedIds(key, build) {
  const file = path.join(checksDir, `${key}.txt`);
  assert.ok(fs.existsSync(file), `${path.relative(root, file)} is missing (WICK_WRITE_CHECKS=1 node --test tests/programs.test.mjs writes it)`);
  const ids = [];
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [a, b] = line.split(/\s+/);
    if (b === undefined) ids.push(a);
    else if (a === build) ids.push(b);
    else assert.ok(a === 'native' || a === 'wasm', `${path.relative(root, file)}: "${line}"`);
  }
  return ids;
}

/** Every problem of a run, each naming its check id: [] when it passed. `expected` null: no list. */
export function checkProblems(r, expected) {
  const { checks, summary, other } = parseChecks(r.stdout);
  const problems = [];
  if (r.signal) problems.push(`killed by ${r.signal}`);
  for (const c of checks) if (!c.ok) problems.push(`FAIL ${c.id}: ${c.detail}`);
  if (!summary) problems.push('no summary line (the program stopped before its end)');
  else if (summary.passed + summary.failed !== checks.length || summary.failed !== checks.filter((c) => !c.ok).length)
    problems.push(`the summary (${summary.passed} passed, ${summary.failed} failed) does not count the ${checks.length} check lines`);
  else if (summary.passed === 0) problems.push('no check ran');
  if (r.code !== 0 && problems.length === 0) problems.push(`exit status ${r.code}`);
  for (const line of other) problems.push(`not a line of tests/check.h: ${JSON.stringify(line.slice(0, 200))}`);
  const seen = new Map();
  for (const c of checks) seen.set(c.id, (seen.get(c.id) ?? 0) + 1);
  for (const [id, n] of seen) if (n > 1) problems.push(`${id}: printed ${n} times`);
  if (expected) {
    const want = new Set(expected);
    for (const id of want) if (!seen.has(id)) problems.push(`missing ${id}: the check did not run`);
    for (const c of checks) if (c.ok && !want.has(c.id)) problems.push(`unexpected ${c.id}: not in the list of this run`);
  }
  return problems;
}

const observed = new Map(); // key → {native: ids, wasm: ids}, for WICK_WRITE_CHECKS

/**
 * Asserts that run `key` of a program passed in `build` with exactly the listed ids (see the top
 * of this file); returns the parsed output. With WICK_WRITE_CHECKS the list is not read but
 * recorded, for writeExpectedIds.
 */
export function assertChecks(r, key, build) {
  const parsed = parseChecks(r.stdout);
  const problems = checkProblems(r, writing ? null : expectedIds(key, build));
  assert.deepEqual(problems, [], `${key} (${build}): ${problems.length} problem(s)\n${problems.slice(0, 60).join('\n')}\n${r.stderr.slice(-2000)}`);
  if (writing) {
    const runs = observed.get(key) ?? {};
    runs[build] = parsed.checks.map((c) => c.id);
    observed.set(key, runs);
  }
  return parsed;
}

/** Writes tests/checks/<key>.txt for each run recorded in both builds (WICK_WRITE_CHECKS). */
export function writeExpectedIds(describe) {
  if (!writing) return;
  for (const [key, runs] of observed) {
    if (!runs.native || !runs.wasm) continue;
    const wasm = new Set(runs.wasm), native = new Set(runs.native);
    const lines = [...runs.native.map((id) => (wasm.has(id) ? id : `native ${id}`)), ...runs.wasm.filter((id) => !native.has(id)).map((id) => `wasm ${id}`)];
    const head = [`# tests/checks/${key}.txt — the check ids of ${describe(key)} (tests/check.h, tests/checks.mjs),`,
      '# written by WICK_WRITE_CHECKS=1 node --test tests/programs.test.mjs'];
    fs.mkdirSync(checksDir, { recursive: true });
    fs.writeFileSync(path.join(checksDir, `${key}.txt`), [...head, ...lines, ''].join('\n'));
  }
}
