// tests/generation.test.mjs — generation through both CLIs: seeded sampling is reproducible
// across builds and thread counts, the context window shifts instead of failing, stop strings,
// and the probabilities output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { runWick, models } from './helpers.mjs';

const stories = path.join(models, 'stories260K.gguf');
const sampled = ['generate', '-m', stories, '-p', 'Once upon a time', '-n', '200', '--temp', '1', '--top-p', '0.9', '--top-k', '0', '--min-p', '0', '--seed', '1234', '--ignore-eos'];

test('the same seed gives the same 200-token text: native vs wasm, 1 vs 2 threads', () => {
  const runs = [['native', 1], ['native', 2], ['wasm', 1], ['wasm', 2]].map(([build, t]) => {
    const r = runWick(build, [...sampled, '--threads', String(t)]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /decode: 200 tokens/);
    return r.stdout;
  });
  assert.ok(runs[0].length > 300, 'a long text');
  for (const r of runs.slice(1)) assert.equal(r, runs[0]);
  const other = runWick('native', [...sampled.slice(0, -3), '--seed', '99', '--ignore-eos']);
  assert.notEqual(other.stdout, runs[0], 'another seed gives another text');
});

for (const build of ['native', 'wasm']) {
  test(`${build}: 1000 tokens in a 128-token context run to the end with shifts`, () => {
    const r = runWick(build, ['generate', '-m', stories, '-p', 'Once upon a time', '-n', '1000', '--ctx', '128', '--temp', '0.8', '--seed', '5', '--ignore-eos']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /decode: 1000 tokens/);
    const dropped = Number(/context shifts dropped (\d+) tokens/.exec(r.stderr)[1]);
    assert.ok(dropped >= 1000 - 128, `dropped ${dropped}`);
    // still words at the end: the last 200 characters hold several common English words
    const tail = r.stdout.slice(-300);
    const words = tail.match(/\b(the|a|and|to|was|she|he|they|it|her|his|said)\b/gi) || [];
    assert.ok(words.length >= 5, tail);
  });
}

test('a prompt longer than the context is refused, or truncated on request', () => {
  const long = 'Once upon a time there was a cat. '.repeat(40);
  const r = runWick('native', ['generate', '-m', stories, '-p', long, '-n', '5', '--ctx', '64']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /the prompt has \d+ tokens but the context holds 64/);
  const t = runWick('native', ['generate', '-m', stories, '-p', long, '-n', '5', '--ctx', '64', '--truncate', '--temp', '0']);
  assert.equal(t.code, 0, t.stderr);
});

test('a stop string ends generation and is never shown', () => {
  const base = runWick('native', ['generate', '-m', stories, '-p', 'Once upon a time', '-n', '60', '--temp', '0']);
  assert.ok(base.stdout.includes('Lily'));
  const r = runWick('native', ['generate', '-m', stories, '-p', 'Once upon a time', '-n', '60', '--temp', '0', '--stop', 'Lily']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.replace(/\n$/, ''), base.stdout.slice(0, base.stdout.indexOf('Lily')));
  assert.match(r.stderr, /finish: stop string/);
});

test('--probs reports the top candidates and the token drawn', () => {
  const r = runWick('wasm', ['generate', '-m', stories, '-p', 'Once upon a time', '-n', '5', '--temp', '1', '--top-k', '3', '--top-p', '1', '--min-p', '0', '--probs', '3', '--seed', '2']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('{'));
  assert.equal(lines.length, 5);
  for (const l of lines) {
    const rec = JSON.parse(l);
    assert.equal(rec.top.length, 3);
    const sum = rec.top.reduce((a, c) => a + c.p, 0);
    assert.ok(Math.abs(sum - 1) < 1e-5, `top-3 after top-k 3 sums to 1 (${sum})`);
    assert.ok(rec.top.some((c) => c.id === rec.drawn));
  }
});
