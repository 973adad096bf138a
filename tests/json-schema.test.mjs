// tests/json-schema.test.mjs — wasm_glue/json-schema.mjs (JSON schema → GBNF) checked through the
// engine's grammar matcher (`wick match`, native and wasm builds): the JSON-schema cases of
// llama.cpp's tests/test-grammar-integration.cpp (extracted as data into tests/grammar-cases.json)
// give the same verdicts wherever the schema's features are in the supported subset, and the
// others are refused with the JSON path of the feature; then the subset itself, feature by
// feature, and errors that name where.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, runWick } from './helpers.mjs';
import { jsonSchemaToGrammar } from '../wasm_glue/json-schema.mjs';

const cases = JSON.parse(fs.readFileSync(path.join(root, 'tests', 'grammar-cases.json'), 'utf8'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-schema-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

/** The verdict of the grammar for each text ('complete', 'prefix' or 'no'), from one run of wick match. */
function verdicts(build, grammar, texts) {
  const g = path.join(tmp, `g${Math.random().toString(36).slice(2)}.gbnf`);
  const t = path.join(tmp, `t${Math.random().toString(36).slice(2)}.txt`);
  fs.writeFileSync(g, grammar);
  fs.writeFileSync(t, texts.join('\0'));
  const r = runWick(build, ['match', '--grammar', g, '--texts', t]);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout.trim().split('\n');
  assert.equal(out.length, texts.length);
  return out;
}

// Features the converter refuses, and the llama.cpp cases that use them.
const UNSUPPORTED = /"exclusiveMinimum" on a number|"pattern"/;

for (const build of ['native', 'wasm']) {
  test(`${build}: llama.cpp's JSON-schema cases give llama.cpp's verdicts (supported subset)`, () => {
    let checked = 0;
    const refused = [];
    const wrong = [];
    for (const c of cases.schemas) {
      let grammar;
      try {
        grammar = jsonSchemaToGrammar(JSON.parse(c.text));
      } catch (e) {
        assert.match(e.message, /^\$[^:]*: /, 'an error names its JSON path');
        assert.match(e.message, UNSUPPORTED, `${c.what}: refused for a feature outside the documented subset: ${e.message}`);
        refused.push(`${c.what} (${e.message})`);
        continue;
      }
      const texts = [...c.pass, ...c.fail];
      const v = verdicts(build, grammar, texts);
      texts.forEach((text, i) => {
        const shouldMatch = i < c.pass.length;
        if ((v[i] === 'complete') !== shouldMatch) wrong.push(`${c.what}: ${JSON.stringify(text)} should ${shouldMatch ? '' : 'not '}match (got ${v[i]})`);
        checked++;
      });
    }
    assert.deepEqual(wrong, []);
    assert.ok(checked >= 60, `${checked} strings checked`);
    // the cases left out: patterns, an exclusiveMinimum on a number (counted, not passed)
    assert.ok(refused.length <= 3, refused.join('\n'));
    console.log(`# ${checked} strings of ${cases.schemas.length - refused.length} schemas checked; ${refused.length} schemas refused as unsupported:\n# ${refused.join('\n# ')}`);
  });
}

test('the subset: types, required and optional properties, enum, const, arrays, formats, $ref, anyOf/oneOf, additionalProperties', () => {
  const check = (schema, pass, fail) => {
    const grammar = jsonSchemaToGrammar(schema);
    const v = verdicts('native', grammar, [...pass, ...fail]);
    pass.forEach((t, i) => assert.equal(v[i], 'complete', `${JSON.stringify(schema)} should take ${t}\n${grammar}`));
    fail.forEach((t, i) => assert.notEqual(v[pass.length + i], 'complete', `${JSON.stringify(schema)} should refuse ${t}\n${grammar}`));
  };
  check({ type: 'object', properties: { name: { type: 'string' }, kind: { enum: ['cat', 'dog', 3] }, age: { type: 'integer' } }, required: ['name', 'kind'] },
    ['{"name": "Rex", "kind": "dog"}', '{"name":"Rex","kind":3,"age":4}', '{ "name": "é\\n", "kind": "cat" }'],
    ['{"name": "Rex"}', '{"kind": "dog", "name": "Rex"}', '{"name": "Rex", "kind": "cow"}', '{"name": "Rex", "kind": "dog", "x": 1}', '{"name": "Rex", "kind": "dog", "age": 4.5}']);
  check({ type: 'array', items: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] }, minItems: 1, maxItems: 2 },
    ['[{"x": 1}]', '[{"x": -1.5e3}, {"x": 0}]'], ['[]', '[{"x": 1}, {"x": 2}, {"x": 3}]', '[{"y": 1}]']);
  check({ $defs: { node: { type: 'object', properties: { v: { type: 'boolean' }, next: { $ref: '#/$defs/node' } }, required: ['v'] } }, $ref: '#/$defs/node' },
    ['{"v": true}', '{"v": false, "next": {"v": true, "next": {"v": false}}}'], ['{"next": {"v": true}}', '{"v": null}']);
  check({ const: { a: [1, 'x'] } }, ['{"a":[1,"x"]}'], ['{"a": [1, "x"]}']);
  check({ type: 'string', format: 'date' }, ['"2024-07-26"'], ['"2024-13-01"', '"24-07-26"']);
  check({ type: 'string', format: 'time' }, ['"10:30:00Z"', '"23:59:59.123+02:00"'], ['"24:00:00Z"']);
  check({ type: 'string', format: 'date-time' }, ['"2024-07-26T10:30:00Z"'], ['"2024-07-26 10:30:00Z"']);
  check({ type: 'string', format: 'uuid' }, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567-e89b-12d3-a456"']);
  check({ anyOf: [{ type: 'integer' }, { type: 'null' }] }, ['12', 'null'], ['"12"']);
  check({ oneOf: [{ type: 'string', maxLength: 2 }, { type: 'array', items: { type: 'boolean' } }] }, ['"ab"', '[true, false]', '[]'], ['"abc"', '[1]']);
  check({ type: ['string', 'null'] }, ['"x"', 'null'], ['1']);
  check({ type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: { type: 'string' } },
    ['{"a": 1, "b": "x", "ab": "y"}', '{"b": "x"}', '{}'], ['{"a": "x"}', '{"b": 1}', '{"a": 1, "a": 2}']);
  check({ type: 'object', additionalProperties: false }, ['{}', '{ }'], ['{"a": 1}']);
  check({}, ['{}', '{"a": [1, {"b": null}]}'], ['[]', '1']);
  check({ type: 'integer', minimum: -15, maximum: 107 }, ['-15', '-9', '0', '7', '99', '100', '107'], ['-16', '-0', '108', '200', '1000', '007']);
  check({ type: 'integer', exclusiveMinimum: 9, exclusiveMaximum: 1000 }, ['10', '999', '500'], ['9', '1000', '0']);
});

test('unsupported features and bad schemas are refused with their JSON path', () => {
  const refuse = (schema, message) => assert.throws(() => jsonSchemaToGrammar(schema), (e) => {
    assert.ok(e.message.includes(message), `${e.message} should contain ${message}`);
    return true;
  });
  refuse({ type: 'object', properties: { price: { type: 'number', minimum: 0 } } }, '$.properties.price.minimum: "minimum" on a number (only on integers) is not supported');
  refuse({ type: 'integer', minimum: 5, maximum: 4 }, '$: no integer lies within the bounds');
  refuse({ type: 'array', items: { type: 'string', pattern: '^a' } }, '$.items.pattern: "pattern" is not supported');
  refuse({ allOf: [{ type: 'string' }] }, '$.allOf: "allOf" is not supported');
  refuse({ anyOf: [{ type: 'string' }, { type: 'strin' }] }, '$.anyOf[1].type: the type "strin" is not supported');
  refuse({ type: 'string', format: 'email' }, '$.format: the format "email" is not supported');
  refuse({ $ref: 'https://example.com/s.json' }, '$.$ref: a $ref outside the schema');
  refuse({ $ref: '#/$defs/missing' }, '$.$ref: #/$defs/missing points at nothing');
  refuse({ type: 'array', minItems: 3, maxItems: 2 }, '$: maxItems is below minItems');
  refuse([], '$: a JSON schema must be an object');
});
