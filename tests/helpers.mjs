// tests/helpers.mjs — shared by the node test suites: paths, running both CLIs, comparing logits
// the way ../shared/README.md prescribes.
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const shared = process.env.WICK_SHARED || path.resolve(root, '..', 'shared');
export const models = path.join(shared, 'models');
export const reference = path.join(shared, 'reference');
// WICK_NATIVE_DIR points the native tests at another build of the same programs (build/asan)
export const nativeDir = process.env.WICK_NATIVE_DIR ? path.resolve(root, process.env.WICK_NATIVE_DIR) : path.join(root, 'build', 'native');
export const nativeCli = path.join(nativeDir, 'wick');
export const wasmCli = path.join(root, 'wasm_glue', 'cli.mjs');

/** Runs the CLI of one build ('native' or 'wasm') and returns {code, stdout, stderr}. */
export function runWick(build, args, opts = {}) {
  const [cmd, argv] = build === 'native' ? [nativeCli, args] : [process.execPath, [wasmCli, ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 28, timeout: opts.timeout ?? 300000, env: { ...process.env, ...(opts.env || {}) } });
  if (r.error) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a C test program (build/native/NAME or build/wasm/NAME.js) and returns its output. */
export function runProgram(build, name, args = [], opts = {}) {
  const [cmd, argv] =
    build === 'native'
      ? [path.join(nativeDir, name), args]
      : [process.execPath, [path.join(root, 'build', 'wasm', `${name}.js`), ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 28, timeout: opts.timeout ?? 600000, cwd: opts.cwd ?? root });
  if (r.error) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function loadReference(name) {
  return JSON.parse(fs.readFileSync(path.join(reference, name), 'utf8'));
}

const greedyTexts = new Map();
/** The text of the first n tokens of stories260K's greedy reference (stories260K.json), as the
 * native CLI detokenizes them: a greedy run of n tokens streams exactly this. */
export function greedyText(n) {
  if (!greedyTexts.has(n)) {
    const ref = loadReference('stories260K.json');
    assert.ok(n > 0 && n <= ref.greedy_tokens.length, `${n} tokens of ${ref.greedy_tokens.length}`);
    const r = runWick('native', ['detokenize', '-m', path.join(models, 'stories260K.gguf'), '--ids', ref.greedy_tokens.slice(0, n).join(',')]);
    assert.equal(r.code, 0, r.stderr);
    const text = r.stdout.replace(/\n$/, '');
    assert.ok(ref.greedy_text.startsWith(text), `the first ${n} tokens detokenize to a prefix of the reference text`);
    greedyTexts.set(n, text);
  }
  return greedyTexts.get(n);
}

function stddev(row) {
  const mean = row.reduce((a, b) => a + b, 0) / row.length;
  return Math.sqrt(row.reduce((a, b) => a + (b - mean) ** 2, 0) / row.length);
}

/** RMS(ours − ref) / std(ref) of one logits row. */
export function relRms(ours, ref) {
  let s = 0;
  for (let i = 0; i < ref.length; i++) s += (ours[i] - ref[i]) ** 2;
  return Math.sqrt(s / ref.length) / stddev(ref);
}

export function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** Whether the reference row's top-2 gap exceeds 10% of its standard deviation. */
export function clearWinner(ref) {
  let first = -Infinity, second = -Infinity;  // the two largest (a sort costs 15 ms on 32000 logits)
  for (const v of ref) {
    if (v > first) { second = first; first = v; } else if (v > second) second = v;
  }
  return first - second > 0.1 * stddev(ref);
}

/** Tolerance by weight type, from ../shared/README.md. */
export function toleranceFor(file) {
  if (/f32|f16|stories260K/.test(file) && !/bf16/.test(file)) return 0.002;
  if (/bf16/.test(file)) return 0.01;
  return 0.05;
}

/** Checks each row; returns a list of problems (empty when all rows pass). */
export function compareRows(oursRows, refRows, tol, label) {
  const problems = [];
  if (oursRows.length !== refRows.length) return [`${label}: ${oursRows.length} rows, reference has ${refRows.length}`];
  refRows.forEach((ref, i) => {
    const ours = oursRows[i];
    if (ours.length !== ref.length) { problems.push(`${label}[${i}]: ${ours.length} logits, reference ${ref.length}`); return; }
    const e = relRms(ours, ref);
    if (!(e <= tol)) problems.push(`${label}[${i}]: relative RMS ${(e * 100).toFixed(3)}% > ${(tol * 100).toFixed(1)}%`);
    if (clearWinner(ref) && argmax(ours) !== argmax(ref)) problems.push(`${label}[${i}]: argmax ${argmax(ours)} ≠ reference ${argmax(ref)}`);
  });
  return problems;
}

/** A generate() stream read whole: its text, its tokens and its final chunk. */
export async function collect(stream) {
  const tokens = [];
  let text = '', done = null;
  for await (const c of stream) {
    if (c.done) done = c;
    else { text += c.text; tokens.push(...c.tokens); }
  }
  return { text, tokens, done };
}
