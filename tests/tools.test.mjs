// tests/tools.test.mjs — the chat API's tools (issue 17, acceptance 3), through the JavaScript API:
// the real Qwen3, Llama 3.2, SmolLM3, Granite 3.3, Qwen3.5, LFM2.5, Gemma 4, Granite 4.0 and
// Ministral 3 templates (llama.cpp's models/templates/, read at test time from node-llama-cpp's
// llama.cpp bundle) and Phi-4-mini's (tests/templates/, as published) render a request with two tools (llama.cpp's SmolLM3
// copy has no tools section: wick describes them in its system message); a hand-written
// reply in each family's format is parsed into OpenAI's tool_calls, streamed and not (the reply
// is made the model's output by a grammar of exactly that text, so the whole chat path runs);
// a reply that does not parse stays content; and tool_choice naming a function (or 'required')
// forces a call that parses, on the random-weight model of each family.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { models } from './helpers.mjs';
import { WEATHER } from './tool-fixtures.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import fs from 'node:fs';
import { Wick, renderChatTemplate, parseToolCalls, toolCallFormat } from '../wasm_glue/wick.mjs';
import { ToolCallSplitter } from '../wasm_glue/tool-calls.mjs';
import { root } from './helpers.mjs';

const TEMPLATES = {
  qwen3: 'Qwen-Qwen3-0.6B',
  llama32: 'meta-llama-Llama-3.2-3B-Instruct',
  smollm3: 'HuggingFaceTB-SmolLM3-3B',
  granite33: 'ibm-granite-granite-3.3-2B-Instruct',
  qwen35: 'Qwen3.5-4B',
  lfm25: 'LFM2.5-Instruct',
  gemma4: 'google-gemma-4-31B-it',
  granite40: 'ibm-granite-granite-4.0',
  ministral3: 'mistralai-Ministral-3-14B-Reasoning-2512',
};
// the published template of a model whose template llama.cpp's folder lacks (tests/templates/README.md)
const OWN_TEMPLATES = { phi4mini: 'microsoft-Phi-4-mini-instruct' };
const FAMILIES = [
  // [name, model file, template, the format its replies are parsed in]
  ['Qwen3', 'families/mini-qwen3-q8_0.gguf', 'qwen3', 'hermes'],
  ['Llama 3.2', 'families/mini-llama3-q4_k_m.gguf', 'llama32', 'llama3'],
  ['SmolLM3', 'families/mini-smollm3-q8_0.gguf', 'smollm3', 'hermes'],
  ['Granite 3.3', 'families/mini-granite-q4_k_m.gguf', 'granite33', 'granite'],
  ['Qwen3.5', 'families/mini-qwen35-q8_0.gguf', 'qwen35', 'xml'],
  // LFM2.5's template lists the tools but names no call format: the model's own (arch lfm2)
  ['LFM2.5', 'families/mini-lfm2-q8_0.gguf', 'lfm25', 'pythonic'],
  // the 2026 families' templates on the qwen3 file: what is tested is the template and the call
  // format on the whole chat path, which the weights do not change (their own files: synth, elsewhere)
  ['Gemma 4', 'families/mini-qwen3-q8_0.gguf', 'gemma4', 'gemma4'],
  ['Granite 4.0', 'families/mini-granite-q4_k_m.gguf', 'granite40', 'hermes'],
  ['Ministral 3', 'families/mini-qwen3-q8_0.gguf', 'ministral3', 'mistral'],
  ['Phi-4-mini', 'families/mini-qwen3-q8_0.gguf', 'phi4mini', 'phi4'],
];

const SEARCH = {
  type: 'function',
  function: {
    name: 'search_page',
    description: 'Find text on the page',
    parameters: { type: 'object', properties: { query: { type: 'string', maxLength: 24 }, limit: { type: 'integer' } }, required: ['query', 'limit'] },
  },
};
const TOOLS = [WEATHER, SEARCH];
const ASK = [{ role: 'user', content: 'What is the weather in Paris?' }];

const templates = {};
before(() => {
  const keys = Object.keys(TEMPLATES);
  readLlamaBundle(keys.map((k) => `models/templates/${TEMPLATES[k]}.jinja`)).forEach((b, i) => { templates[keys[i]] = b.toString('utf8'); });
  for (const [k, name] of Object.entries(OWN_TEMPLATES)) templates[k] = fs.readFileSync(path.join(root, 'tests', 'templates', `${name}.jinja`), 'utf8');
});

const engines = new Map();
async function engineFor(file) {
  if (!engines.has(file)) engines.set(file, await Wick.load(path.join(models, file), { threads: 1 }));
  return engines.get(file);
}
after(async () => {
  for (const e of engines.values()) await e.unload();
});

const gbnfLiteral = (text) => '"' + [...text].map((c) => (c === '"' || c === '\\' ? '\\' + c : c === '\n' ? '\\n' : c)).join('') + '"';

/** The chat completion for request, non-streamed and streamed, the stream folded into one message. */
async function both(engine, request) {
  const whole = await engine.chat.completions.create({ ...request, stream: false });
  const chunks = [];
  for await (const c of await engine.chat.completions.create({ ...request, stream: true })) chunks.push(c);
  const folded = { content: '', tool_calls: [] };
  let finish = null;
  for (const c of chunks) {
    const d = c.choices[0].delta;
    if (d.content) folded.content += d.content;
    for (const tc of d.tool_calls || []) {
      const slot = (folded.tool_calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.function.name += tc.function.name;
      if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
    }
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  return { whole, streamed: { message: folded, finish_reason: finish, chunks } };
}

test('the Qwen3 and Llama 3.2 templates render both tools in their tool sections', async () => {
  const qwen = await renderChatTemplate(templates.qwen3, ASK, { tools: TOOLS });
  assert.match(qwen, /<tools>\n\{"type": "function", "function": \{"name": "get_weather"[^\n]*\}\n\{"type": "function", "function": \{"name": "search_page"[^\n]*\}\n<\/tools>/);
  assert.ok(qwen.includes('<tool_call></tool_call>'), 'the call format is explained');
  const llama = await renderChatTemplate(templates.llama32, ASK, { tools: TOOLS, bosToken: '<|begin_of_text|>' });
  assert.ok(llama.includes('Given the following functions, please respond with a JSON for a function call'), llama);
  assert.ok(llama.includes('"name": "get_weather"') && llama.includes('"name": "search_page"'), llama);
  // the tool formats wick parses replies in, from these templates (SmolLM3's own is Hermes)
  assert.equal(toolCallFormat(templates.qwen3), 'hermes');
  assert.equal(toolCallFormat(templates.llama32), 'llama3');
  assert.equal(toolCallFormat(templates.smollm3, 'smollm3'), 'hermes');
  // Granite 3.3: the tools as a JSON list in its available_tools turn, calls as <|tool_call|>[…]
  const granite = await renderChatTemplate(templates.granite33, ASK, { tools: TOOLS });
  assert.ok(granite.includes('<|start_of_role|>available_tools<|end_of_role|>[') && granite.includes('"name": "get_weather"') && granite.includes('"name": "search_page"'), granite);
  assert.ok(granite.includes('respond only with <|tool_call|> followed by a JSON list'), granite);
  assert.equal(toolCallFormat(templates.granite33), 'granite');
  // Qwen3.5: JSON definitions inside <tools>, calls as <tool_call><function=…><parameter=…>
  const qwen35 = await renderChatTemplate(templates.qwen35, ASK, { tools: TOOLS });
  assert.match(qwen35, /<tools>\n\{"type": "function", "function": \{"name": "get_weather"[^\n]*\}\n\{"type": "function", "function": \{"name": "search_page"[^\n]*\}\n<\/tools>/);
  assert.ok(qwen35.includes('<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>'), qwen35);
  assert.equal(toolCallFormat(templates.qwen35), 'xml');
  assert.equal(toolCallFormat(null, 'qwen35'), 'xml');
  // LFM2.5: the tools as a JSON list in the system turn; the format is the family's (lfm2: pythonic)
  const lfm = await renderChatTemplate(templates.lfm25, ASK, { tools: TOOLS });
  assert.ok(lfm.startsWith('<|im_start|>system\nList of tools: [{"type": "function", "function": {"name": "get_weather"') && lfm.includes('"name": "search_page"'), lfm);
  assert.equal(toolCallFormat(templates.lfm25), null);
  assert.equal(toolCallFormat(templates.lfm25, 'lfm2'), 'pythonic');
  assert.equal(toolCallFormat('List of tools: <|tool_list_start|>[…]<|tool_list_end|>'), 'pythonic');
});

test('SmolLM3: llama.cpp\'s copy of its template has no tools section, so wick describes the tools in the system message', async () => {
  const engine = await engineFor('families/mini-smollm3-q8_0.gguf');
  const plain = await engine.applyChatTemplate(ASK, { template: templates.smollm3 });
  const smol = await engine.applyChatTemplate(ASK, { template: templates.smollm3, tools: TOOLS });
  assert.notEqual(smol, plain);
  // inside the system turn (the template's "Custom Instructions"), before the user's message
  const system = smol.slice(0, smol.indexOf('<|im_end|>'));
  assert.ok(system.startsWith('<|im_start|>system\n## Metadata'), smol);
  assert.match(system, /<tools>\n\{"type": "function", "function": \{"name": "get_weather"[^\n]*\}\n\{"type": "function", "function": \{"name": "search_page"[^\n]*\}\n<\/tools>/);
  assert.ok(system.includes('"maxLength": 16') && system.includes('"required": ["query", "limit"]'), 'the parameter schemas are there');
  // the Hermes call format is explained, with an example a parser of that format reads as a call
  const example = system.match(/<tool_call>\n[^\n]*\n<\/tool_call>/);
  assert.ok(example, system);
  assert.deepEqual(parseToolCalls('hermes', example[0]).calls.map((c) => c.function.name), ['function_name']);
  // the rest of the prompt is as without tools: the user's turn and the answer prompt
  assert.ok(smol.endsWith(plain.slice(plain.indexOf('<|im_end|>'))), smol);
  // a system message of the caller's stays, with the tools after it
  const own = await engine.applyChatTemplate([{ role: 'system', content: 'Answer in French.' }, ...ASK], { template: templates.smollm3, tools: TOOLS });
  assert.match(own, /## Custom Instructions\n\nAnswer in French\.\n\n[^]*<tools>[^]*<\/tools>[^]*<\|im_end\|>\n<\|im_start\|>user\nWhat is the weather in Paris\?/);
  // renderChatTemplate without a model does the same when told the format, and nothing without one
  assert.equal(await renderChatTemplate(templates.smollm3, ASK, { tools: TOOLS, toolFormat: 'hermes' }), smol);
  assert.equal(await renderChatTemplate(templates.smollm3, ASK, { tools: TOOLS }), plain);
  // the templates that render tools themselves are left alone, even when told the format
  for (const [key, format] of [['qwen3', 'hermes'], ['llama32', 'llama3']]) {
    const own = await renderChatTemplate(templates[key], ASK, { tools: TOOLS, toolFormat: format, now: new Date(2025, 0, 5) });
    assert.equal(own, await renderChatTemplate(templates[key], ASK, { tools: TOOLS, toolFormat: null, now: new Date(2025, 0, 5) }), key);
    assert.ok(!own.includes('### Tools'), key);
  }
});

test('the description in the Llama 3 JSON and Granite formats, and a toolFormat that is not one', async () => {
  const plain = '{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}';
  const text = await renderChatTemplate(plain, [{ role: 'system', content: 'Be brief.' }, ...ASK], { tools: TOOLS, toolFormat: 'llama3' });
  const system = text.slice(0, text.indexOf('<user>'));
  assert.ok(system.startsWith('<system>Be brief.\n\n### Tools\n'), text);
  assert.ok(system.includes('\n{"type": "function", "function": {"name": "get_weather"') && system.includes('\n{"type": "function", "function": {"name": "search_page"'), text);
  assert.ok(!system.includes('<tool_call>'), 'no Hermes tags in the Llama 3 description');
  const example = system.trimEnd().split('\n').at(-1);
  assert.deepEqual(parseToolCalls('llama3', example).calls.map((c) => c.function.name), ['function_name']);
  // an earlier call is written into the assistant's message in that format
  const history = [...ASK, { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] }, { role: 'tool', tool_call_id: 'call_1', content: '21' }];
  assert.ok((await renderChatTemplate(plain, history, { tools: TOOLS, toolFormat: 'llama3' })).includes('<assistant>{"name": "get_weather", "parameters": {"city": "Oslo"}}\n<tool>21'));
  // and in Granite's: the example is a <|tool_call|> list its parser reads
  const granite = await renderChatTemplate(plain, ASK, { tools: TOOLS, toolFormat: 'granite' });
  assert.deepEqual(parseToolCalls('granite', granite.slice(0, granite.indexOf('<user>')).trimEnd().split('\n').at(-1)).calls.map((c) => c.function.name), ['function_name']);
  // and in the <function=…> format: the example is a call its parser reads
  const xml = await renderChatTemplate(plain, ASK, { tools: TOOLS, toolFormat: 'xml' });
  const xmlExample = xml.match(/<tool_call>\n<function=[^]*?<\/tool_call>/);
  assert.ok(xmlExample, xml);
  assert.deepEqual(parseToolCalls('xml', xmlExample[0]).calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [['function_name', { argument_name: 'value' }]]);
  // and in LFM2's: a Python list of calls between its marks
  const py = await renderChatTemplate(plain, ASK, { tools: TOOLS, toolFormat: 'pythonic' });
  const pyExample = py.slice(0, py.indexOf('<user>')).trimEnd().split('\n').at(-1);
  assert.equal(pyExample, '<|tool_call_start|>[function_name(argument_name="value")]<|tool_call_end|>');
  assert.deepEqual(parseToolCalls('pythonic', pyExample).calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [['function_name', { argument_name: 'value' }]]);
  await assert.rejects(renderChatTemplate(plain, ASK, { tools: TOOLS, toolFormat: 'yaml' }), { code: 'E_INVALID_ARG', message: /toolFormat must be one of hermes, llama3, granite, xml, pythonic, gemma4, mistral, phi4 or null/ });
});

test('parseToolCalls: Hermes calls with text around them, Llama 3 JSON calls, Granite lists, and what does not parse', () => {
  const h = parseToolCalls('hermes', 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "search_page", "arguments": {"query": "rain", "limit": 3}}\n</tool_call>');
  assert.equal(h.content, 'Let me look.');
  assert.deepEqual(h.calls.map((c) => [c.type, c.function.name, JSON.parse(c.function.arguments)]),
    [['function', 'get_weather', { city: 'Paris' }], ['function', 'search_page', { query: 'rain', limit: 3 }]]);
  assert.notEqual(h.calls[0].id, h.calls[1].id);
  const l = parseToolCalls('llama3', '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "celsius"}}');
  assert.deepEqual([l.content, l.calls[0].function.name, JSON.parse(l.calls[0].function.arguments)], ['', 'get_weather', { city: 'Oslo', unit: 'celsius' }]);
  assert.equal(parseToolCalls('hermes', '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'), null);
  assert.equal(parseToolCalls('hermes', 'no call here'), null);
  assert.equal(parseToolCalls('llama3', 'It is sunny.'), null);
  assert.equal(parseToolCalls('llama3', '{"city": "Paris"}'), null);
  // Granite: <|tool_call|> and a list of calls (or one object), nothing else in the reply
  const g = parseToolCalls('granite', '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Rome"}}, {"name": "search_page", "arguments": {"query": "sun", "limit": 1}}]');
  assert.deepEqual(g.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [['get_weather', { city: 'Rome' }], ['search_page', { query: 'sun', limit: 1 }]]);
  assert.equal(g.content, '');
  assert.equal(parseToolCalls('granite', '<|tool_call|>{"name": "get_weather", "arguments": {}}').calls.length, 1);
  assert.equal(parseToolCalls('granite', '[{"name": "get_weather", "arguments": {}}]'), null);
  assert.equal(parseToolCalls('granite', '<|tool_call|>[{"name": "get_weather", "arguments": {"city": }]'), null);
  assert.equal(parseToolCalls('granite', '<|tool_call|>[{"city": "Rome"}]'), null);
  // <function=…>: text before the calls is content; a value is text where the tool's schema says
  // string, else JSON where it parses (without the tools: JSON where it parses)
  const xmlReply = 'Let me look.\n<tool_call>\n<function=search_page>\n<parameter=query>\n42\n</parameter>\n<parameter=limit>\n3\n</parameter>\n</function>\n</tool_call>\n'
    + '<tool_call>\n<function=get_weather>\n<parameter=city>\nSan José\nde Costa Rica\n</parameter>\n</function>\n</tool_call>';
  const x = parseToolCalls('xml', xmlReply, TOOLS);
  assert.equal(x.content, 'Let me look.');
  assert.deepEqual(x.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    [['search_page', { query: '42', limit: 3 }], ['get_weather', { city: 'San José\nde Costa Rica' }]]);
  assert.deepEqual(JSON.parse(parseToolCalls('xml', xmlReply).calls[0].function.arguments), { query: 42, limit: 3 });
  assert.equal(parseToolCalls('xml', '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>'), null);
  assert.equal(parseToolCalls('xml', '<tool_call>\n<function=get_weather>\nParis\n</function>\n</tool_call>'), null);
  assert.equal(parseToolCalls('xml', 'It is sunny.'), null);
  // pythonic: a Python list of calls, keyword arguments as Python literals, text around it is content
  const p = parseToolCalls('pythonic', 'Let me look. <|tool_call_start|>[get_weather(city="Rome"), search_page(query=\'it\\\'s "x"\', limit=3, tags=["a", None], exact=True)]<|tool_call_end|> Done.');
  assert.equal(p.content, 'Let me look.  Done.');
  assert.deepEqual(p.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    [['get_weather', { city: 'Rome' }], ['search_page', { query: 'it\'s "x"', limit: 3, tags: ['a', null], exact: true }]]);
  assert.equal(parseToolCalls('pythonic', '<|tool_call_start|>[get_weather()]<|tool_call_end|>').calls.length, 1);
  assert.equal(parseToolCalls('pythonic', '<|tool_call_start|>[get_weather(city="Rome"]<|tool_call_end|>'), null);
  assert.equal(parseToolCalls('pythonic', '<|tool_call_start|>[get_weather("Rome")]<|tool_call_end|>'), null);
  assert.equal(parseToolCalls('pythonic', '[get_weather(city="Rome")]'), null);
});

test('parseToolCalls: Gemma 4, Mistral (Ministral 3) and Phi-4-mini replies, as llama.cpp\'s tests/test-chat.cpp writes them', () => {
  const calls = (format, text) => parseToolCalls(format, text)?.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]);
  // Gemma 4: the cases of test-chat.cpp's google-gemma-4-31B-it block
  assert.deepEqual(calls('gemma4', '<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|>'), [['get_time', { city: 'London' }]]);
  assert.deepEqual(calls('gemma4', '<|tool_call>call:get_time{city:<|"|>San Francisco<|"|>}<tool_call|>'), [['get_time', { city: 'San Francisco' }]]);
  assert.deepEqual(calls('gemma4', '<|tool_call>call:empty_args{}<tool_call|>'), [['empty_args', {}]]);
  const withContent = parseToolCalls('gemma4', 'Hello, world!\nWhat\'s up?<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>');
  assert.equal(withContent.content, 'Hello, world!\nWhat\'s up?');
  assert.deepEqual(calls('gemma4', '<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'),
    [['get_time', { city: 'London' }], ['get_weather', { city: 'Paris' }]]);
  for (const [args, want] of [['{arg1:42}', { arg1: 42 }], ['{arg1:-7}', { arg1: -7 }], ['{orig:3.14}', { orig: 3.14 }], ['{enabled:true}', { enabled: true }],
    ['{enabled:false}', { enabled: false }], ['{value:null}', { value: null }], ['{todos:[<|"|>buy milk<|"|>,<|"|>walk dog<|"|>]}', { todos: ['buy milk', 'walk dog'] }],
    ['{config:{theme:<|"|>dark<|"|>,count:3}}', { config: { theme: 'dark', count: 3 } }], ['{todos:[]}', { todos: [] }], ['{config:{}}', { config: {} }], ['{orig:1.5e10}', { orig: 1.5e10 }]])
    assert.deepEqual(calls('gemma4', `<|tool_call>call:f${args}<tool_call|>`), [['f', want]], args);
  // a string may hold what would end anything but a string
  assert.deepEqual(calls('gemma4', '<|tool_call>call:note{text:<|"|>a}, b: [c<|"|>}<tool_call|>'), [['note', { text: 'a}, b: [c' }]]);
  for (const broken of ['<|tool_call>call:f{city:<|"|>Paris}<tool_call|>', '<|tool_call>call:f{city:<|"|>Paris<|"|>', '<|tool_call>call:{city:1}<tool_call|>', '<|tool_call>call:f{city}<tool_call|>', 'no call'])
    assert.equal(parseToolCalls('gemma4', broken), null, broken);

  // Mistral: the cases of test-chat.cpp's Ministral-3-14B-Reasoning-2512 and Mistral Small 3.2 blocks
  assert.deepEqual(calls('mistral', '[TOOL_CALLS]special_function[ARGS]{"arg1":1}'), [['special_function', { arg1: 1 }]]);
  assert.deepEqual(calls('mistral', '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[ARGS]{"arg1": 1, "arg2": 2}'),
    [['special_function', { arg1: 1 }], ['special_function_with_opt', { arg1: 1, arg2: 2 }]]);
  assert.deepEqual(calls('mistral', '[TOOL_CALLS]special_function[CALL_ID]123456789[ARGS]{"arg1": 1}'), [['special_function', { arg1: 1 }]]);
  const m = parseToolCalls('mistral', 'Hello, world!\nWhat\'s up?[TOOL_CALLS]special_function[ARGS]{"arg1": 1}');
  assert.equal(m.content, 'Hello, world!\nWhat\'s up?');
  assert.deepEqual(calls('mistral', '[TOOL_CALLS]f[ARGS]{"s": "a } [TOOL_CALLS] \\" {"}'), [['f', { s: 'a } [TOOL_CALLS] " {' }]]);
  for (const broken of ['[TOOL_CALLS]f[ARGS]{"arg1": 1', '[TOOL_CALLS]f{"arg1": 1}', '[TOOL_CALLS]f[ARGS]{"arg1": 1} and then text', '[TOOL_CALLS]f[ARGS][1]', 'plain'])
    assert.equal(parseToolCalls('mistral', broken), null, broken);

  // Phi-4-mini: a JSON list between <|tool_call|> and <|/tool_call|> (the Berkeley leaderboard's
  // examples); the closing mark may be missing at the end, and parallel calls may come unlisted
  assert.deepEqual(calls('phi4', '<|tool_call|>[{"name": "calculate_final_velocity", "arguments": {"height": 150, "initial_velocity": 0}}]<|/tool_call|>'),
    [['calculate_final_velocity', { height: 150, initial_velocity: 0 }]]);
  assert.deepEqual(calls('phi4', '<|tool_call|>[{"name": "calculate_final_velocity", "arguments": {"height": 150, "initial_velocity": 0}}]'),
    [['calculate_final_velocity', { height: 150, initial_velocity: 0 }]]);
  assert.deepEqual(calls('phi4', '<|tool_call|>{"name": "tax", "arguments": {"city": "Chicago"}}, {"name": "tax", "arguments": {"city": "Portland"}}<|/tool_call|>'),
    [['tax', { city: 'Chicago' }], ['tax', { city: 'Portland' }]]);
  assert.equal(parseToolCalls('phi4', 'Sure.<|tool_call|>[{"name": "f", "arguments": {}}]<|/tool_call|>').content, 'Sure.');
  for (const broken of ['<|tool_call|>[{"name": "f", "arguments": {]<|/tool_call|>', '<|tool_call|>[{"arguments": {}}]<|/tool_call|>', '<|tool_call|>[]<|/tool_call|>', '[{"name": "f", "arguments": {}}]'])
    assert.equal(parseToolCalls('phi4', broken), null, broken);
});

test('streaming: each new format holds its call back from the first character of its mark, and shows the text before it', () => {
  const cases = {
    gemma4: ['Hello, world!\nWhat\'s up?', '<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>'],
    mistral: ['Hello, world!\nWhat\'s up?', '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}'],
    phi4: ['Sure.', '<|tool_call|>[{"name": "get_time", "arguments": {"city": "Paris"}}]<|/tool_call|>'],
  };
  for (const [format, [content, call]] of Object.entries(cases)) {
    // one character at a time: the worst case for a mark split across pieces
    const splitter = new ToolCallSplitter(format);
    let shown = '';
    for (const c of content + call) {
      shown += splitter.push(c);
      assert.ok(!shown.includes(call[0] === '[' ? '[TOOL' : '<|'), `${format}: nothing of the mark is shown (${JSON.stringify(shown)})`);
    }
    const end = splitter.end();
    assert.equal(shown + end.content, content, format);
    assert.equal(end.calls.length, 1, format);
    // a reply that only looks like the start of a mark is shown whole at the end
    const plain = new ToolCallSplitter(format);
    const text = `${content} ${call.slice(0, 5)}`;
    let out = '';
    for (const c of text) out += plain.push(c);
    const rest = plain.end();
    assert.equal(rest.calls, null, format);
    assert.equal(out + rest.content, text, format);
  }
});

const REPLIES = {
  hermes: 'I will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>',
  llama3: '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
  granite: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]',
  xml: 'I will check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>',
  pythonic: 'I will check.\n<|tool_call_start|>[get_weather(city="Paris", unit="celsius")]<|tool_call_end|>',
  gemma4: 'I will check.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,unit:<|"|>celsius<|"|>}<tool_call|>',
  mistral: 'I will check.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}',
  phi4: 'I will check.<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]<|/tool_call|>',
};
const BROKEN = {
  hermes: '<tool_call>\n{"name": "get_weather", "arguments": {"city": \n</tool_call>',
  llama3: '{"name": "get_weather", "parameters": {"city"',
  granite: '<|tool_call|>[{"name": "get_weather", "arguments": {"city"',
  xml: '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>',
  pythonic: '<|tool_call_start|>[get_weather(city="Paris"]<|tool_call_end|>',
  gemma4: '<|tool_call>call:get_weather{city:<|"|>Paris}<tool_call|>',
  mistral: '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"',
  phi4: '<|tool_call|>[{"name": "get_weather", "arguments": {"city": }]<|/tool_call|>',
};

for (const [family, file, template, format] of FAMILIES) {
  test(`${family}: a hand-written ${format} reply comes back as tool_calls, streamed and not`, async () => {
    const engine = await engineFor(file);
    const reply = REPLIES[format];
    const request = { messages: ASK, tools: TOOLS, chat_template: templates[template], grammar: `root ::= ${gbnfLiteral(reply)}`, temperature: 0, max_tokens: 200 };
    const { whole, streamed } = await both(engine, request);
    const want = { name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } };
    for (const [how, message, finish] of [['non-streamed', whole.choices[0].message, whole.choices[0].finish_reason], ['streamed', streamed.message, streamed.finish_reason]]) {
      assert.equal(finish, 'tool_calls', how);
      assert.equal(message.tool_calls.length, 1, how);
      assert.equal(message.tool_calls[0].function.name, want.name, how);
      assert.deepEqual(JSON.parse(message.tool_calls[0].function.arguments), want.args, how);
      assert.match(message.tool_calls[0].id, /^call_/, how);
      assert.equal(message.content || '', ['llama3', 'granite'].includes(format) ? '' : 'I will check.', how);
    }
    // the stream never shows the call's text as content
    assert.ok(!streamed.chunks.some((c) => (c.choices[0].delta.content || '').includes('get_weather')));
    // a tool result goes back as a role 'tool' message and renders, after the call (which wick
    // writes into the assistant's message for llama.cpp's SmolLM3 copy and for Granite 3.3's
    // template, as they drop it)
    const followUp = [...ASK, { role: 'assistant', content: null, tool_calls: whole.choices[0].message.tool_calls }, { role: 'tool', tool_call_id: whole.choices[0].message.tool_calls[0].id, content: '{"temperature": 21}' }];
    const prompt = await engine.applyChatTemplate(followUp, { template: templates[template], tools: TOOLS });
    assert.ok(prompt.includes('temperature') && prompt.includes('21'), prompt);
    const call = prompt.indexOf('get_weather', prompt.indexOf(ASK[0].content));
    assert.ok(call > 0 && call < prompt.lastIndexOf('21'), 'the call is in the history, before its result');
  });

  test(`${family}: a reply that looks like a call but does not parse is plain content with finish_reason stop`, async () => {
    const engine = await engineFor(file);
    const broken = BROKEN[format];
    const request = { messages: ASK, tools: TOOLS, chat_template: templates[template], grammar: `root ::= ${gbnfLiteral(broken)}`, temperature: 0, max_tokens: 200 };
    const { whole, streamed } = await both(engine, request);
    assert.equal(whole.choices[0].finish_reason, 'stop');
    assert.equal(whole.choices[0].message.content, broken);
    assert.equal(whole.choices[0].message.tool_calls, undefined);
    assert.equal(streamed.finish_reason, 'stop');
    assert.equal(streamed.message.content, broken);
  });

  test(`${family}: tool_choice naming a function forces a call that parses (random weights, 10 seeds, temperature 1)`, async () => {
    const engine = await engineFor(file);
    for (let seed = 1; seed <= 10; seed++) {
      const request = { messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'search_page' } }, chat_template: templates[template], temperature: 1, seed, max_tokens: 300 };
      const { whole, streamed } = await both(engine, request);
      for (const [how, message, finish] of [['non-streamed', whole.choices[0].message, whole.choices[0].finish_reason], ['streamed', streamed.message, streamed.finish_reason]]) {
        assert.equal(finish, 'tool_calls', `seed ${seed}, ${how}: ${JSON.stringify(message)}`);
        assert.equal(message.tool_calls.length, 1);
        assert.equal(message.tool_calls[0].function.name, 'search_page');
        const args = JSON.parse(message.tool_calls[0].function.arguments);
        assert.equal(typeof args.query, 'string');
        assert.ok(Number.isInteger(args.limit), JSON.stringify(args));
      }
      assert.deepEqual(streamed.message.tool_calls.map((c) => c.function.arguments), whole.choices[0].message.tool_calls.map((c) => c.function.arguments), 'the same seed gives the same call either way');
    }
    // 'required' lets the model pick among the tools, and still gives a call
    const required = await engine.chat.completions.create({ messages: ASK, tools: TOOLS, tool_choice: 'required', chat_template: templates[template], temperature: 1, seed: 3, max_tokens: 300 });
    assert.equal(required.choices[0].finish_reason, 'tool_calls');
    assert.ok(['get_weather', 'search_page'].includes(required.choices[0].message.tool_calls[0].function.name));
  });
}

test('tool_choice errors: an unknown function, tool_choice without tools, a template with no known format', async () => {
  const engine = await engineFor('families/mini-qwen3-q8_0.gguf');
  await assert.rejects(engine.chat.completions.create({ messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } }, chat_template: templates.qwen3 }), /nope, which is not among the tools/);
  await assert.rejects(engine.chat.completions.create({ messages: ASK, tool_choice: 'required', chat_template: templates.qwen3 }), /needs tools/);
  const stories = await engineFor('stories260K.gguf');
  await assert.rejects(stories.chat.completions.create({ messages: ASK, tools: TOOLS, tool_choice: 'required', chat_template: '{% for m in messages %}{{ m.content }}{% endfor %}' }), /tool-call format wick knows/);
});
