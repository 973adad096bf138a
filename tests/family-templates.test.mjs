// tests/family-templates.test.mjs — the real chat templates of Gemma 4, Gemma 3n, Granite 4.0,
// Ministral 3 and Phi-4-mini, rendered by wick (renderChatTemplate, @huggingface/jinja) exactly as
// the real Jinja renders them: tests/template-reference.json holds Python jinja2's renders (set up
// as transformers sets it up, tools/jinja-reference.py) of the cases of tests/template-cases.mjs,
// each with the SHA-256 of its template, so a changed template or case fails until the reference
// is made again (node tools/template-reference.mjs). The cases cover a system message (and its
// absence), several turns, tools, calls, parallel calls and their results. Then the tool-call
// format wick reads each family's replies in: told from the template, or from the architecture
// where the file has none.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { renderChatTemplate, toolCallFormat } from '../wasm_glue/wick.mjs';
import { CASES, readTemplates, sha256, GEMMA4, GEMMA3N, GRANITE4, MINISTRAL3, PHI4MINI } from './template-cases.mjs';
import { root } from './helpers.mjs';

const REFERENCE = path.join(root, 'tests', 'template-reference.json');
let templates, reference;

before(() => {
  templates = readTemplates();
  reference = JSON.parse(fs.readFileSync(REFERENCE, 'utf8'));
});

test('the reference holds every case, rendered from the template the case names (not a stale copy)', () => {
  assert.match(reference.renderer, /^jinja2 \d/);
  assert.deepEqual(reference.cases.map((c) => c.name), CASES.map((c) => c.name));
  for (const c of CASES) {
    const ref = reference.cases.find((r) => r.name === c.name);
    assert.equal(ref.templateSha256, sha256(templates.get(c.template)), `${c.name}: the reference was rendered from this template`);
    assert.ok(ref.expected.length > 40, c.name);
  }
});

for (const c of CASES) {
  test(`renders as the real Jinja does: ${c.name}`, async () => {
    const ref = reference.cases.find((r) => r.name === c.name);
    assert.equal(await renderChatTemplate(templates.get(c.template), c.messages, c.options), ref.expected);
  });
}

test('the renders carry each family\'s own markup (the reference is not empty of what it should show)', () => {
  const text = (name) => reference.cases.find((r) => r.name === name).expected;
  assert.match(text('Gemma 4: tools, a call, its result, the answer'), /<\|tool>declaration:get_weather\{.*<\|tool_call>call:get_weather\{city:<\|"\|>Paris<\|"\|>\}<tool_call\|><\|tool_response>response:get_weather/s);
  assert.match(text('Granite 4.0: tools, a call, its result, the answer'), /<tools>\n\{"type": "function".*<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris"\}\}\n<\/tool_call>.*<tool_response>/s);
  assert.match(text('Ministral 3: tools, a call, its result, the answer'), /\[AVAILABLE_TOOLS\]\[\{"type": "function".*\[TOOL_CALLS\]get_weather\[ARGS\]\{"city": "Paris"\}<\/s>\[TOOL_RESULTS\]/s);
  assert.match(text('Phi-4-mini: tools in the system message, the call written as the model writes it'),
    /^<\|system\|>You are a helpful assistant<\|tool\|>\[\{"name": "get_weather".*<\|\/tool\|><\|end\|>.*<\|assistant\|><\|tool_call\|>\[\{"name": "get_weather", "arguments": \{"city": "Paris"\}\}\]<\|\/tool_call\|><\|end\|>/s);
  assert.match(text('Gemma 3n: the system message opens the first user turn'), /^<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>/);
});

test('the tool-call format of each family: from its template, else from its architecture', () => {
  assert.equal(toolCallFormat(templates.get(GEMMA4)), 'gemma4');
  assert.equal(toolCallFormat(templates.get(GRANITE4)), 'hermes');
  assert.equal(toolCallFormat(templates.get(MINISTRAL3)), 'mistral');
  assert.equal(toolCallFormat(templates.get(PHI4MINI)), 'phi4');
  assert.equal(toolCallFormat(templates.get(GEMMA3N)), null, 'Gemma 3n has no tool-call format');
  // files without a template: the family's format
  assert.equal(toolCallFormat(null, 'gemma4'), 'gemma4');
  assert.equal(toolCallFormat(null, 'granitehybrid'), 'hermes');
  assert.equal(toolCallFormat(null, 'mistral3'), 'mistral');
  assert.equal(toolCallFormat(null, 'gemma3n'), null);
  assert.equal(toolCallFormat(null, 'phi3'), null, 'phi3 is Phi-3.5 too, which has no tool format: only a Phi-4-mini template says phi4');
});
