// tests/structure.test.mjs — the engine's units (src/*.c) depend on each other without a circle.
// Unit A depends on unit B when A uses a function or object that B defines, as `nm` reads them
// from the native objects (build/native/obj/*.o): an include graph would miss a function declared
// in one header and defined in another unit's file. A circle is printed with the symbols that
// make each of its edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './helpers.mjs';

const objDir = path.join(root, 'build', 'native', 'obj');

// { unit: { defines: Set, uses: Set } } from `nm` of each object
function readUnits() {
  const units = {};
  for (const f of fs.readdirSync(objDir).filter((f) => f.endsWith('.o'))) {
    const out = execFileSync('nm', ['-P', path.join(objDir, f)], { encoding: 'utf8' });
    const unit = { defines: new Set(), uses: new Set() };
    for (const line of out.split('\n')) {
      const [name, type] = line.trim().split(/\s+/);
      if (!type) continue;
      if (type === 'U') unit.uses.add(name);
      else if (/^[A-TV-Z]$/.test(type)) unit.defines.add(name); // global definitions (upper case), not undefined
    }
    units[f.replace(/\.o$/, '')] = unit;
  }
  return units;
}

// edges[a][b] = the symbols a uses that b defines
function dependencies(units) {
  const definer = new Map();
  for (const [name, u] of Object.entries(units)) for (const s of u.defines) definer.set(s, name);
  const edges = {};
  for (const [name, u] of Object.entries(units)) {
    edges[name] = {};
    for (const s of u.uses) {
      const b = definer.get(s);
      if (b && b !== name) (edges[name][b] ??= []).push(s);
    }
  }
  return edges;
}

// the first circle a depth-first search meets, as a list of units (first = last), or null
export function findCycle(edges) {
  const state = {}; // undefined: not seen, 1: on the path, 2: done
  const stack = [];
  function visit(a) {
    state[a] = 1;
    stack.push(a);
    for (const b of Object.keys(edges[a] ?? {}).sort()) {
      if (state[b] === 1) return [...stack.slice(stack.indexOf(b)), b];
      if (!state[b]) {
        const c = visit(b);
        if (c) return c;
      }
    }
    stack.pop();
    state[a] = 2;
    return null;
  }
  for (const a of Object.keys(edges).sort()) {
    if (state[a]) continue;
    const c = visit(a);
    if (c) return c;
  }
  return null;
}

test('the cycle finder finds a circle and passes a tree', () => {
  assert.deepEqual(findCycle({ a: { b: ['f'] }, b: { c: ['g'] }, c: { a: ['h'] } }), ['a', 'b', 'c', 'a']);
  assert.equal(findCycle({ a: { b: ['f'], c: ['g'] }, b: { c: ['h'] }, c: {} }), null);
});

test('no circle among the engine units by the symbols they use (nm of build/native/obj)', () => {
  assert.ok(fs.existsSync(objDir), `${objDir} is missing: make native first`);
  const units = readUnits();
  assert.ok(Object.keys(units).length >= 10, `${Object.keys(units).length} objects in ${objDir}`);
  const edges = dependencies(units);
  const cycle = findCycle(edges);
  const why = cycle && cycle.slice(0, -1).map((a, i) => `  ${a} -> ${cycle[i + 1]}: ${edges[a][cycle[i + 1]].sort().slice(0, 6).join(', ')}`);
  assert.equal(cycle, null, cycle ? `circle ${cycle.join(' -> ')}\n${why.join('\n')}` : '');
});
