// tests/structured.test.mjs — grammar-constrained generation through the JavaScript API (the wasm
// engine in its worker), issue 17's acceptance 2: on random-weight mini models and stories260K,
// llama.cpp's grammars/json.gbnf (read from node-llama-cpp's llama.cpp bundle) and three JSON
// schemas (an object with required fields and an enum; an array of objects; nested objects with
// a $ref) give text that JSON.parse takes and that validates against the schema, for 20 seeds each
// at temperature 1. Random weights make this a test of the constraint, not of the model.
//
// The sampling: temperature 1 and the default truncation, plus a logit bias toward the tokens
// that close a string (+8), an object or an array (+6), and against (-6) those with a comma and
// (-4) whitespace-only ones, so that a random walk through JSON ends within the token budget
// instead of writing one endless string or list. The bias only makes the text shorter: the same
// settings without the grammar give text that is not JSON (checked below).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { models } from './helpers.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { Wick, jsonSchemaToGrammar } from '../wasm_glue/wick.mjs';

const SEEDS = 20;
const MAX_TOKENS = 600;
// (mini-qwen2's random logits are so peaked that it writes one digit forever inside a number,
// which json.gbnf allows: it is left out here, its runs end on max_tokens as a valid prefix)
const MODELS = ['mini/mini-q8_0.gguf', 'mini/mini-q4_k_m.gguf', 'stories260K.gguf'];

// An object with required fields and an enum.
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    mood: { enum: ['happy', 'sad', 'angry'] },
    age: { type: 'integer' },
    pet: { type: 'boolean' },
  },
  required: ['name', 'mood'],
};
// An array of objects.
const POINTS = {
  type: 'array',
  items: { type: 'object', properties: { x: { type: 'number' }, label: { type: 'string', maxLength: 12 } }, required: ['x', 'label'] },
  minItems: 1,
  maxItems: 4,
};
// Nested objects with a $ref.
const ROUTE = {
  $defs: { point: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'] } },
  type: 'object',
  properties: {
    from: { $ref: '#/$defs/point' },
    to: { $ref: '#/$defs/point' },
    meta: { type: 'object', properties: { tag: { type: 'string' }, day: { type: 'string', format: 'date' } }, required: ['tag'] },
  },
  required: ['from', 'to', 'meta'],
};

/** Validates v against the schema subset used here; returns a list of problems (empty: valid). */
function validate(v, schema, rootSchema = schema, at = '$') {
  if (schema.$ref) return validate(v, schema.$ref.split('/').slice(1).reduce((n, k) => n[k], rootSchema), rootSchema, at);
  const problems = [];
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) problems.push(`${at}: ${JSON.stringify(v)} not in enum`);
  const type = schema.type;
  const isType = {
    object: (x) => x !== null && typeof x === 'object' && !Array.isArray(x),
    array: Array.isArray,
    string: (x) => typeof x === 'string',
    number: (x) => typeof x === 'number',
    integer: Number.isInteger,
    boolean: (x) => typeof x === 'boolean',
  };
  if (type && !isType[type](v)) return [`${at}: not a ${type}: ${JSON.stringify(v)}`];
  if (type === 'object') {
    for (const r of schema.required || []) if (!(r in v)) problems.push(`${at}: ${r} is missing`);
    for (const [k, x] of Object.entries(v)) {
      if (!schema.properties?.[k]) problems.push(`${at}: unexpected property ${k}`);
      else problems.push(...validate(x, schema.properties[k], rootSchema, `${at}.${k}`));
    }
  }
  if (type === 'array') {
    if (schema.minItems !== undefined && v.length < schema.minItems) problems.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && v.length > schema.maxItems) problems.push(`${at}: more than ${schema.maxItems} items`);
    v.forEach((x, i) => problems.push(...validate(x, schema.items, rootSchema, `${at}[${i}]`)));
  }
  if (type === 'string') {
    if (schema.maxLength !== undefined && [...v].length > schema.maxLength) problems.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.format === 'date' && !/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/.test(v)) problems.push(`${at}: not a date: ${v}`);
  }
  return problems;
}

let jsonGbnf;
before(() => {
  jsonGbnf = readLlamaBundle(['grammars/json.gbnf'])[0].toString('utf8');
});

const engines = new Map();
async function engineFor(file) {
  if (!engines.has(file)) {
    const engine = await Wick.load(path.join(models, file), { threads: 1 });
    // the bias toward closing tokens and against commas and whitespace (see the top)
    const bias = {};
    for (let t = 0; t < engine.info.n_vocab; t++) {
      const s = await engine.detokenize([t]);
      if (s.includes(',')) bias[t] = -6;
      else if (s.includes('"')) bias[t] = 8;
      else if (/[}\]]/.test(s)) bias[t] = 6;
      else if (/^\s+$/.test(s)) bias[t] = -4;
    }
    engines.set(file, { engine, bias });
  }
  return engines.get(file);
}
after(async () => {
  for (const { engine } of engines.values()) await engine.unload();
});

async function run(engine, options) {
  let text = '', done;
  for await (const c of engine.generate('Once upon a time', { temperature: 1, maxTokens: MAX_TOKENS, ...options })) {
    if (c.done) done = c;
    else text += c.text;
  }
  return { text, done };
}

const GRAMMARS = [
  ['grammars/json.gbnf', () => jsonGbnf, null],
  ['schema: object with required fields and an enum', () => jsonSchemaToGrammar(PERSON), PERSON],
  ['schema: array of objects', () => jsonSchemaToGrammar(POINTS), POINTS],
  ['schema: nested objects with a $ref', () => jsonSchemaToGrammar(ROUTE), ROUTE],
];

for (const file of MODELS) {
  for (const [what, grammarOf, schema] of GRAMMARS) {
    test(`${file}, ${what}: ${SEEDS} seeds at temperature 1 give JSON${schema ? ' valid for the schema' : ''}`, async () => {
      const { engine, bias } = await engineFor(file);
      const grammar = grammarOf();
      let tokens = 0;
      const shapes = new Set();
      for (let seed = 1; seed <= SEEDS; seed++) {
        const { text, done } = await run(engine, { grammar, seed, logitBias: bias });
        assert.ok(['grammar', 'eog'].includes(done.finishReason), `seed ${seed}: ended by ${done.finishReason}: ${JSON.stringify(text)}`);
        let value;
        assert.doesNotThrow(() => { value = JSON.parse(text); }, `seed ${seed}: not JSON: ${JSON.stringify(text)}`);
        if (schema) assert.deepEqual(validate(value, schema), [], `seed ${seed}: ${text}`);
        tokens += done.timings.generatedTokens;
        shapes.add(text);
      }
      assert.ok(shapes.size >= SEEDS / 2, `the seeds give different texts (${shapes.size} distinct)`);
      assert.ok(tokens >= SEEDS * 5, `${tokens} tokens generated in all`);
    });
  }
}

test('the same settings without the grammar do not give JSON (the constraint does the work)', async () => {
  const { engine, bias } = await engineFor('mini/mini-q8_0.gguf');
  let parsed = 0;
  for (let seed = 1; seed <= 5; seed++) {
    const { text } = await run(engine, { seed, logitBias: bias, maxTokens: 60 });
    try { JSON.parse(text); parsed++; } catch { /* expected */ }
  }
  assert.equal(parsed, 0);
});

test('a grammar that does not parse is refused with its line and column; finishReason grammar; greedy with a grammar', async () => {
  const { engine } = await engineFor('stories260K.gguf');
  await assert.rejects(run(engine, { grammar: 'root ::= "a"\nb ::= [0-9' }), /grammar: line 2, column 7: unterminated character class/);
  await assert.rejects(run(engine, { grammar: 'root ::= x' }), /undefined rule 'x'/);
  await assert.rejects(run(engine, { grammar: 42 }), /grammar must be a string/);
  // the engine is still usable, and a small language ends with finishReason 'grammar'
  const { text, done } = await run(engine, { grammar: 'root ::= ("yes" | "no") "!"', temperature: 0 });
  assert.match(text, /^(yes|no)!$/);
  assert.equal(done.finishReason, 'grammar');
  // a grammar of one fixed text is followed exactly, whatever the model prefers
  const fixed = await run(engine, { grammar: 'root ::= "Lily had a 🐶 named \\"Max\\"."', temperature: 1, seed: 7 });
  assert.equal(fixed.text, 'Lily had a 🐶 named "Max".');
  // the next plain generation is unconstrained again (the reference greedy text)
  const plain = await run(engine, { temperature: 0, maxTokens: 12 });
  assert.match(plain.text, /^, there was a little girl named Lily/);
});
