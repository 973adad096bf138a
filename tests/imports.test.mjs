// tests/imports.test.mjs — no import circle among the JavaScript modules of tools/, wasm_glue/ and
// web/ (issue 26): module A depends on module B when A names B by a literal in an import or
// export-from statement, a dynamic import('…'), importScripts('…') or new URL('…', base) (the way
// the glue starts its worker and the worker finds its scripts). A circle is printed as
// `a → b → a`. Names built at run time (a variable, a template with ${…}) are not followed, and
// neither are packages or files outside the three folders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const FOLDERS = ['tools', 'wasm_glue', 'web'];

// each pattern's group 1 is the literal it names; `relativeOnly`: a name without ./ or ../ is a package
const REFERENCES = [
  { kind: 'import', relativeOnly: true, re: /^\s*(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/gm },
  { kind: 'import', relativeOnly: true, re: /^\s*import\s*['"]([^'"]+)['"]/gm },
  { kind: 'import()', relativeOnly: true, re: /\bimport\(\s*(?:\/\*.*?\*\/\s*)*['"]([^'"]+)['"]\s*\)/g },
  { kind: 'importScripts', relativeOnly: false, re: /\bimportScripts\(\s*['"]([^'"]+)['"]/g },
  { kind: 'new URL', relativeOnly: false, re: /\bnew URL\(\s*['"]([^'"]+)['"]\s*,/g },
];

/** The .js and .mjs files under `folders` of `root`, as paths relative to root. */
function modules(root, folders) {
  const out = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (/\.m?js$/.test(e.name)) out.push(rel);
    }
  };
  for (const f of folders) if (fs.existsSync(path.join(root, f))) walk(f);
  return out.sort();
}

/** The text without its comment lines (a line that starts with //, /* or *), so that prose
 * naming a file is not taken for a reference; the line count is kept for the messages. */
function code(text) {
  return text.replace(/^\s*(?:\/\/|\/\*|\*).*$/gm, '');
}

/** {file: [{to, kind}]}: the references of each module to the others. */
function importGraph(root, folders) {
  const files = modules(root, folders);
  const known = new Set(files);
  const graph = {};
  for (const file of files) {
    const text = code(fs.readFileSync(path.join(root, file), 'utf8'));
    const edges = [];
    for (const { kind, relativeOnly, re } of REFERENCES) {
      for (const m of text.matchAll(re)) {
        const name = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(name) || name.startsWith('/')) continue;   // a URL or an absolute path
        if (relativeOnly && !/^\.\.?\//.test(name)) continue;                         // a package
        const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), name));
        if (known.has(to) && !edges.some((e) => e.to === to)) edges.push({ to, kind });
      }
    }
    graph[file] = edges;
  }
  return graph;
}

/** Every elementary circle found by a depth-first search, each as [a, b, …, a], once per set of modules. */
function circles(graph) {
  const found = new Map();
  const state = new Map(); // file → 'open' while on the current path, 'done' once fully explored
  const stack = [];
  const visit = (file) => {
    state.set(file, 'open');
    stack.push(file);
    for (const { to } of graph[file] || []) {
      if (state.get(to) === 'open') {
        const circle = [...stack.slice(stack.indexOf(to)), to];
        const key = [...new Set(circle)].sort().join(' ');
        if (!found.has(key)) found.set(key, circle);
      } else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of Object.keys(graph)) if (!state.has(file)) visit(file);
  return [...found.values()];
}

const show = (graph, circle) =>
  circle.map((f, i) => (i === 0 ? f : `(${graph[circle[i - 1]].find((e) => e.to === f).kind}) ${f}`)).join(' → ');

test('the reader sees every kind of reference in the repository (so that an empty graph cannot pass)', () => {
  const graph = importGraph(ROOT, FOLDERS);
  const has = (from, to, kind) => graph[from]?.some((e) => e.to === to && e.kind === kind);
  assert.ok(has('wasm_glue/wick.mjs', 'wasm_glue/options.mjs', 'import'), 'wick.mjs imports options.mjs');
  assert.ok(has('wasm_glue/wick.mjs', 'wasm_glue/constants.js', 'import'), 'wick.mjs imports constants.js');
  assert.ok(has('wasm_glue/wick.mjs', 'wasm_glue/chat-template.mjs', 'import()'), 'wick.mjs imports chat-template.mjs when a template is rendered');
  assert.ok(has('wasm_glue/wick.mjs', 'wasm_glue/worker.js', 'new URL'), 'wick.mjs names its worker');
  assert.ok(has('wasm_glue/worker.js', 'wasm_glue/constants.js', 'new URL'), 'the worker finds constants.js beside itself');
  assert.ok(has('wasm_glue/gpu/backend.mjs', 'wasm_glue/constants.js', 'import()'), 'the GPU backend imports constants.js outside the worker');
  assert.ok(has('tools/bench.mjs', 'tools/bench-gpu.mjs', 'import()'), 'bench.mjs runs bench-gpu.mjs');
  assert.ok(has('tools/bench-gpu.mjs', 'tools/bench-common.mjs', 'import'), 'bench-gpu.mjs takes the helpers from bench-common.mjs');
  assert.ok(has('web/app.js', 'wasm_glue/wick.mjs', 'import'), 'the page imports the glue');
  assert.ok(!graph['wasm_glue/wick.mjs'].some((e) => e.to.startsWith('build/')), 'the builds are outside the three folders');
});

test('a circle is found and printed: a synthetic tree where a static import closes a loop over a dynamic one', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-imports-'));
  try {
    fs.mkdirSync(path.join(dir, 'tools'));
    fs.writeFileSync(path.join(dir, 'tools', 'a.mjs'), "// a\nimport { b } from './b.mjs';\nexport const a = 1;\n");
    fs.writeFileSync(path.join(dir, 'tools', 'b.mjs'), "// b\nexport const b = async () => import('./c.mjs');\n");
    fs.writeFileSync(path.join(dir, 'tools', 'c.mjs'), "// c: mentions import('./a.mjs') only in this comment\nimport {\n  a,\n} from './a.mjs';\n");
    fs.writeFileSync(path.join(dir, 'tools', 'd.mjs'), "// d: no circle through here\n// import './a.mjs';\nimport 'node:fs';\n");
    const graph = importGraph(dir, ['tools']);
    const found = circles(graph);
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(show(graph, found[0]), 'tools/a.mjs → (import) tools/b.mjs → (import()) tools/c.mjs → (import) tools/a.mjs');
    assert.deepEqual(graph['tools/d.mjs'], [], 'comments and packages are not references');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('no import circle among the modules of tools/, wasm_glue/ and web/', () => {
  const graph = importGraph(ROOT, FOLDERS);
  const found = circles(graph);
  assert.deepEqual(found.map((c) => show(graph, c)), [], `import circles:\n${found.map((c) => `  ${show(graph, c)}`).join('\n')}`);
});
