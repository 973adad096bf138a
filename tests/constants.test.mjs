// tests/constants.test.mjs — wasm_glue/constants.js against the C sources it restates (issue 26):
// the status codes (wick_status) and finish codes (WICK_FINISH_*) of src/wick.h, the tensor types a
// file may hold with their names and elements per block (enum wick_type and the QK macros of
// src/quant.h, the TYPE_ROW table of the quant sources), and the settings a new generator starts
// with (sampler_params_default in src/sampler.c, then what wick_gen_new in src/generate.c sets, the
// generator's own fields being zero from calloc; wick_gen_set names them). The C side has no cache
// names: those are checked to be written nowhere else in the glue and the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import '../wasm_glue/constants.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = (rel) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const { STATUS_CODES, FINISH_REASONS, TENSOR_TYPES, GENERATION_DEFAULTS, CACHE_NAMES } = globalThis.WickConstants;

/** The body of the C function `name` (from its opening brace to the brace that closes it). */
function functionBody(text, name) {
  const start = new RegExp(`^[\\w ]+\\b${name}\\([^)]*\\)\\s*\\{`, 'm').exec(text);
  assert.ok(start, `${name} is defined`);
  let depth = 0;
  for (let i = start.index + start[0].length - 1; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(start.index, i + 1);
  }
  throw new Error(`${name}: no closing brace`);
}

/** A C number literal as JS reads it: 0.8f → 0.8, 1 << 20 is not one (null). */
function cNumber(literal) {
  const m = /^\s*(-?[\d.]+(?:e[-+]?\d+)?)f?\s*$/i.exec(literal);
  return m ? Number(m[1]) : null;
}

test('status codes: every wick_status of src/wick.h but WICK_OK, named E_<name>', () => {
  const wickH = source('src/wick.h');
  const enumBody = /typedef enum \{([^}]*)\} wick_status;/.exec(wickH);
  assert.ok(enumBody, 'wick_status is a typedef enum in wick.h');
  const c = {};
  for (const [, name, value] of enumBody[1].matchAll(/WICK_(OK|ERR_\w+)\s*=\s*(\d+)/g)) if (name !== 'OK') c[value] = `E_${name.slice(4)}`;
  assert.ok(Object.keys(c).length >= 5, `wick.h's codes were read: ${JSON.stringify(c)}`);
  assert.deepEqual({ ...STATUS_CODES }, c);
});

test('finish codes: every WICK_FINISH_* of src/wick.h but NONE, in lower case', () => {
  const c = {};
  for (const [, name, value] of source('src/wick.h').matchAll(/WICK_FINISH_(\w+)\s*=\s*(\d+)/g)) if (name !== 'NONE') c[value] = name.toLowerCase();
  assert.ok(Object.keys(c).length >= 4, `wick.h's finish codes were read: ${JSON.stringify(c)}`);
  assert.deepEqual({ ...FINISH_REASONS }, c);
});

test('tensor types: the type table\'s rows a file may hold, with their names and elements per block', () => {
  const quantH = source('src/quant.h');
  const ids = Object.fromEntries([...quantH.matchAll(/WICK_TYPE_(\w+)\s*=\s*(\d+)/g)].map(([, t, id]) => [t, Number(id)]));
  const fileCount = Number(/#define WICK_TYPE_FILE_COUNT (\d+)/.exec(quantH)?.[1]);
  assert.ok(fileCount > 0, 'quant.h defines WICK_TYPE_FILE_COUNT');
  const macros = Object.fromEntries([...quantH.matchAll(/^#define (QK\w*) (\d+)/gm)].map(([, n, v]) => [n, Number(v)]));
  // the table is in whichever quant source holds it (quant.c today; quant_table.c once it has its own file)
  const table = ['src/quant_table.c', 'src/quant.c'].filter((f) => fs.existsSync(path.join(ROOT, f))).map(source).join('\n');
  const rows = [...table.matchAll(/^\s*TYPE_ROW\((\w+),\s*"([^"]+)",\s*(\w+),/gm)];
  assert.ok(rows.length >= 16, `the type table was read (${rows.length} rows)`);
  const c = {};
  for (const [, t, name, block] of rows) {
    assert.ok(t in ids, `WICK_TYPE_${t} is in enum wick_type`);
    const elements = /^\d+$/.test(block) ? Number(block) : macros[block];
    assert.ok(elements > 0, `${t}: block size ${block} is a number or a QK macro of quant.h`);
    if (ids[t] < fileCount) c[ids[t]] = { name, block: elements };
  }
  assert.deepEqual(JSON.parse(JSON.stringify(TENSOR_TYPES)), c);
});

test('generation defaults: what wick_gen_new leaves in a new generator, for every setting that is not zero there', () => {
  const sampler = functionBody(source('src/sampler.c'), 'sampler_params_default');
  const generate = source('src/generate.c');
  const genNew = functionBody(generate, 'wick_gen_new');
  const genSet = functionBody(generate, 'wick_gen_set');
  assert.match(sampler, /memset\(p, 0, sizeof \*p\)/, 'sampler_params_default starts from zeros');
  assert.match(genNew, /calloc\(1, sizeof \*g\)/, 'wick_gen_new starts from zeros');
  assert.match(genNew, /sampler_params_default\(&g->sp\)/, 'wick_gen_new takes the sampler defaults');
  const assigned = (body, prefix) => Object.fromEntries([...body.matchAll(new RegExp(`${prefix}(\\w+)\\s*=\\s*([^;]+);`, 'g'))]
    .map(([, field, v]) => [field, cNumber(v)]).filter(([, v]) => v !== null));
  const fromSampler = assigned(sampler, 'p->');
  const samplerOverrides = assigned(genNew, 'g->sp\\.');
  const own = assigned(genNew, 'g->');
  // wick_gen_set: each setting's name and the field it writes (g->sp.top_k, g->max_tokens)
  const settings = Object.fromEntries([...genSet.matchAll(/strcmp\(name, "(\w+)"\)\) \{[^}]*?g->(sp\.)?(\w+) =/g)]
    .map(([, name, sp, field]) => [name, { sp: !!sp, field }]));
  assert.ok(Object.keys(settings).length >= 10, `wick_gen_set's settings were read: ${Object.keys(settings)}`);
  const c = {};
  for (const [name, { sp, field }] of Object.entries(settings))
    c[name] = sp ? (samplerOverrides[field] ?? fromSampler[field] ?? 0) : (own[field] ?? 0);
  assert.equal(c.repeat_penalty, 1, 'wick_gen_new turns the repetition penalty off');
  for (const [name, value] of Object.entries(GENERATION_DEFAULTS)) {
    assert.ok(name in c, `${name} is a setting of wick_gen_set`);
    assert.equal(value, c[name], `${name}: constants.js says ${value}, a new generator has ${c[name]}`);
  }
  for (const [name, value] of Object.entries(c))
    if (value !== 0 && name !== 'seed') assert.ok(name in GENERATION_DEFAULTS, `${name} (${value} in C) is in constants.js's GENERATION_DEFAULTS`);
});

test('src/wick.h\'s comment on the settings says what a new generator has', () => {
  const comment = /Sets one setting by name[\s\S]*?\*\//.exec(source('src/wick.h'))[0];
  for (const [name, value] of Object.entries(GENERATION_DEFAULTS)) {
    const said = new RegExp(`\\b${name} \\(([^)]*)\\)`).exec(comment);
    if (!said) continue; // max_tokens and ignore_eos are described in words
    const numbers = [...said[1].matchAll(/(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])/g)].map((m) => Number(m[1]));
    assert.ok(numbers.includes(value), `wick.h says ${name} (${said[1]}), the default is ${value}`);
    if (name === 'repeat_penalty') assert.doesNotMatch(said[1], /1\.1/, 'repeat_penalty is not 1.1 by default');
  }
});

test('cache names and the C tables are written once: in constants.js, not again in the glue or the page', () => {
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (/\.m?js$/.test(e.name) && rel !== 'wasm_glue/constants.js') files.push(rel);
    }
  };
  walk('wasm_glue');
  walk('web');
  // copies as they were written before: a quoted cache name, an id → code or name table entry
  const copies = [
    ...Object.values(CACHE_NAMES).map((n) => new RegExp(`['"\`]${n}['"\`]`)),
    /\b1:\s*'E_INVALID_ARG'/, /\b1:\s*'eog'/, /\b12:\s*'q4_K'/, /\b12:\s*256\b/,
  ];
  for (const f of files) {
    const text = source(f).replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    for (const re of copies) assert.doesNotMatch(text, re, `${f} holds its own copy (${re}): take it from constants.js`);
  }
});
