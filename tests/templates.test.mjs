// tests/templates.test.mjs — the chat templates of the model families render as llama.cpp expects.
// The six real templates come from llama.cpp's models/templates/, read at test time from the git
// bundle of llama.cpp's source that node-llama-cpp ships (installed by npm ci); the expected prompts
// are written out by hand from each template's documented format, and where llama.cpp's
// tests/test-chat-template.cpp has a case of the same format, its expected string (read from the
// same bundle) must come out of the real template too. No model is needed: renderChatTemplate is
// the engine-less path of engine.applyChatTemplate.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { renderChatTemplate } from '../wasm_glue/wick.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';

const LLAMA32 = 'meta-llama-Llama-3.2-3B-Instruct';
const QWEN3 = 'Qwen-Qwen3-0.6B';
const GEMMA2 = 'google-gemma-2-2b-it';
const PHI35 = 'microsoft-Phi-3.5-mini-instruct';
const SMOLLM3 = 'HuggingFaceTB-SmolLM3-3B';
const GRANITE33 = 'ibm-granite-granite-3.3-2B-Instruct';

const templates = {};
let templateTests = '';

before(() => {
  const names = [LLAMA32, QWEN3, GEMMA2, PHI35, SMOLLM3, GRANITE33];
  const files = readLlamaBundle([...names.map((name) => `models/templates/${name}.jinja`), 'tests/test-chat-template.cpp'])
    .map((b) => b.toString('utf8'));
  names.forEach((name, i) => { templates[name] = files[i]; });
  templateTests = files[names.length];
});

// The first four messages of the conversation in llama.cpp's tests/test-chat-template.cpp.
const CONVERSATION = [
  { role: 'system', content: 'You are a helpful assistant' },
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi there' },
  { role: 'user', content: 'Who are you' },
];
// The whole conversation of that file.
const LLAMA_CPP_CONVERSATION = [
  ...CONVERSATION,
  { role: 'assistant', content: '   I am an assistant   ' },
  { role: 'user', content: 'Another question' },
];
// llama.cpp's tests fix the date; so do these (26 Jul 2024 is also Llama 3's own fallback date).
const NOW = new Date(2024, 6, 26, 10, 30);

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] },
  },
};
// Python's json.dumps(tool): what `tool | tojson` gives (", " and ": " separators).
const WEATHER_TOOL_JSON = '{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city", '
  + '"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}, "required": ["city"]}}}';
// json.dumps(x, indent=4) lays out as JSON.stringify(x, null, 4).
const indented = (x) => JSON.stringify(x, null, 4);

const render = (name, messages, options = {}) => renderChatTemplate(templates[name], messages, { now: NOW, ...options });

/** The expected prompt of a case of llama.cpp's test-chat-template.cpp: its expected_output_jinja,
 *  or its expected_output when that is empty (the rule of that file's jinja loop). */
function llamaCppExpected(caseName) {
  const at = templateTests.indexOf(`/* .name= */ ${JSON.stringify(caseName)}`);
  assert.ok(at >= 0, `test-chat-template.cpp has a case ${caseName}`);
  const literal = (field) => {
    const m = new RegExp(`/\\* \\.${field}= \\*/\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(templateTests.slice(at));
    return JSON.parse(`"${m[1]}"`);
  };
  return literal('expected_output_jinja') || literal('expected_output');
}

// ---- the four-message conversation, one test per template ----

test('Llama 3.2: the system header carries the knowledge and today dates before the system text', async () => {
  assert.equal(await render(LLAMA32, CONVERSATION, { bosToken: '<|begin_of_text|>', eosToken: '<|eot_id|>' }),
    '<|begin_of_text|>'
    + '<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful assistant<|eot_id|>'
    + '<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>'
    + '<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>'
    + '<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>'
    + '<|start_header_id|>assistant<|end_header_id|>\n\n');
});

test('Qwen3: ChatML; no empty think block unless thinking is switched off', async () => {
  const chatml = '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n'
    + '<|im_start|>user\nHello<|im_end|>\n'
    + '<|im_start|>assistant\nHi there<|im_end|>\n'
    + '<|im_start|>user\nWho are you<|im_end|>\n'
    + '<|im_start|>assistant\n';
  assert.equal(await render(QWEN3, CONVERSATION, { eosToken: '<|im_end|>' }), chatml);
  assert.equal(await render(QWEN3, CONVERSATION, { extra: { enable_thinking: false } }), `${chatml}<think>\n\n</think>\n\n`);
});

test('Gemma 2: no system role, so the system message opens the first user turn (as llama.cpp joins it)', async () => {
  assert.equal(await render(GEMMA2, CONVERSATION, { bosToken: '<bos>', eosToken: '<eos>' }),
    '<bos><start_of_turn>user\nYou are a helpful assistant\nHello<end_of_turn>\n'
    + '<start_of_turn>model\nHi there<end_of_turn>\n'
    + '<start_of_turn>user\nWho are you<end_of_turn>\n'
    + '<start_of_turn>model\n');
});

test('Phi-3.5: <|role|> turns closed by <|end|>, the system turn included', async () => {
  assert.equal(await render(PHI35, CONVERSATION, { bosToken: '<s>', eosToken: '<|endoftext|>' }),
    '<|system|>\nYou are a helpful assistant<|end|>\n'
    + '<|user|>\nHello<|end|>\n'
    + '<|assistant|>\nHi there<|end|>\n'
    + '<|user|>\nWho are you<|end|>\n'
    + '<|assistant|>\n');
});

test('SmolLM3: a metadata system block with the reasoning mode, the system text as custom instructions', async () => {
  assert.equal(await render(SMOLLM3, CONVERSATION, { eosToken: '<|im_end|>' }),
    '<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: /think\n\n'
    + '## Custom Instructions\n\nYou are a helpful assistant\n\n<|im_end|>\n'
    + '<|im_start|>user\nHello<|im_end|>\n'
    + '<|im_start|>assistant\nHi there<|im_end|>\n'
    + '<|im_start|>user\nWho are you<|im_end|>\n'
    + '<|im_start|>assistant\n');
});

test('Granite 3.3: <|start_of_role|> turns closed by <|end_of_text|>', async () => {
  assert.equal(await render(GRANITE33, CONVERSATION, { eosToken: '<|end_of_text|>' }),
    '<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n'
    + '<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n'
    + '<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n'
    + '<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n'
    + '<|start_of_role|>assistant<|end_of_role|>');
});

test("the real templates give llama.cpp's expected prompts where test-chat-template.cpp has their format", async () => {
  // Each case's template string renders the same turns as the real file: Gemma 2's adds only
  // {{ bos_token }} (empty here, as in that test), Phi-3-small's prints every role as Phi-3.5's does.
  const pairs = [
    [QWEN3, 'teknium/OpenHermes-2.5-Mistral-7B'],
    [GEMMA2, 'google/gemma-7b-it'],
    [PHI35, 'Phi-3-small'],
    [GRANITE33, 'ibm-granite/granite-3.0-8b-instruct'],
  ];
  for (const [name, caseName] of pairs)
    assert.equal(await renderChatTemplate(templates[name], LLAMA_CPP_CONVERSATION), llamaCppExpected(caseName), `${name} as ${caseName}`);
  // Llama-3's case has no date header; Llama 3.2 adds it to the system turn and trims as it does.
  const llama3 = llamaCppExpected('Llama-3');
  const header = 'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n';
  assert.equal(await render(LLAMA32, LLAMA_CPP_CONVERSATION), llama3.replace('<|end_header_id|>\n\n', `<|end_header_id|>\n\n${header}`));
});

// ---- tool definitions ----

test('Llama 3.2 puts the tools, 4-space JSON, in the first user message and says "Environment: ipython"', async () => {
  assert.equal(await render(LLAMA32, CONVERSATION, { tools: [WEATHER_TOOL], bosToken: '<|begin_of_text|>' }),
    '<|begin_of_text|>'
    + '<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n'
    + 'You are a helpful assistant<|eot_id|>'
    + '<|start_header_id|>user<|end_header_id|>\n\n'
    + 'Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n'
    + 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n'
    + `${indented(WEATHER_TOOL)}\n\nHello<|eot_id|>`
    + '<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>'
    + '<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>'
    + '<|start_header_id|>assistant<|end_header_id|>\n\n');
  // tools_in_user_message = false moves them into the system header
  const inSystem = await render(LLAMA32, CONVERSATION, { tools: [WEATHER_TOOL], extra: { tools_in_user_message: false } });
  assert.ok(inSystem.includes(`Today Date: 26 Jul 2024\n\nYou have access to the following functions.`));
  assert.ok(inSystem.includes(`Do not use variables.\n\n${indented(WEATHER_TOOL)}\n\nYou are a helpful assistant<|eot_id|>`));
});

test('Qwen3 lists the tools, one JSON line each, inside <tools></tools> after the system text', async () => {
  const second = { type: 'function', function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: {} } } };
  assert.equal(await render(QWEN3, CONVERSATION, { tools: [WEATHER_TOOL, second] }),
    '<|im_start|>system\nYou are a helpful assistant\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
    + 'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n'
    + `${WEATHER_TOOL_JSON}\n`
    + '{"type": "function", "function": {"name": "get_time", "description": "Local time", "parameters": {"type": "object", "properties": {}}}}\n'
    + '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n'
    + '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    + '<|im_start|>user\nHello<|im_end|>\n'
    + '<|im_start|>assistant\nHi there<|im_end|>\n'
    + '<|im_start|>user\nWho are you<|im_end|>\n'
    + '<|im_start|>assistant\n');
});

test('Granite 3.3 gives the tools an available_tools turn after the system turn', async () => {
  assert.equal(await render(GRANITE33, CONVERSATION, { tools: [WEATHER_TOOL] }),
    '<|start_of_role|>system<|end_of_role|>You are a helpful assistant<|end_of_text|>\n'
    + `<|start_of_role|>available_tools<|end_of_role|>${indented([WEATHER_TOOL])}<|end_of_text|>\n`
    + '<|start_of_role|>user<|end_of_role|>Hello<|end_of_text|>\n'
    + '<|start_of_role|>assistant<|end_of_role|>Hi there<|end_of_text|>\n'
    + '<|start_of_role|>user<|end_of_role|>Who are you<|end_of_text|>\n'
    + '<|start_of_role|>assistant<|end_of_role|>');
  // without a system message, the default one says the tools are there (and today's date)
  const alone = await render(GRANITE33, [{ role: 'user', content: 'Hello' }], { tools: [WEATHER_TOOL] });
  assert.ok(alone.startsWith("<|start_of_role|>system<|end_of_role|>Knowledge Cutoff Date: April 2024. Today's Date: July 26, 2024. "
    + 'You are Granite, developed by IBM. You are a helpful assistant with access to the following tools.'), alone);
});

// (with no tool-call format to describe them in: for a model whose family has one, as SmolLM3's,
// wick writes them into the system message, see tests/tools.test.mjs)
test('Gemma 2, Phi-3.5 and llama.cpp\'s SmolLM3 template have no tools section: the tools leave the prompt as it was', async () => {
  for (const name of [GEMMA2, PHI35, SMOLLM3]) {
    const plain = await render(name, CONVERSATION);
    assert.equal(await render(name, CONVERSATION, { tools: [WEATHER_TOOL] }), plain, name);
  }
});

test('an empty tool list is no tools; a template sees `tools` only when there are some', async () => {
  assert.equal(await render(LLAMA32, CONVERSATION, { tools: [] }), await render(LLAMA32, CONVERSATION));
  const probe = '{% if tools is defined %}T{{ tools | length }}{% else %}none{% endif %}';
  assert.equal(await renderChatTemplate(probe, CONVERSATION), 'none');
  assert.equal(await renderChatTemplate(probe, CONVERSATION, { tools: [WEATHER_TOOL] }), 'T1');
});

test('tool calls and results render in the history; OpenAI string arguments become the JSON object', async () => {
  const history = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21}' },
    { role: 'assistant', content: 'It is 21 °C.' },
    { role: 'user', content: 'Thanks' },
  ];
  const qwen = await render(QWEN3, history, { tools: [WEATHER_TOOL] });
  assert.ok(qwen.endsWith('<|im_start|>user\nWeather in Paris?<|im_end|>\n'
    + '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
    + '<|im_start|>user\n<tool_response>\n{"temperature": 21}\n</tool_response><|im_end|>\n'
    + '<|im_start|>assistant\nIt is 21 °C.<|im_end|>\n'
    + '<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n'), qwen);
  const llama = await render(LLAMA32, history, { tools: [WEATHER_TOOL] });
  assert.ok(llama.includes('<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'), llama);
  // the template prints a string tool result with tojson, as Python's Jinja does (a str is iterable)
  assert.ok(llama.includes('<|start_header_id|>ipython<|end_header_id|>\n\n"{\\"temperature\\": 21}"<|eot_id|>'), llama);

  const broken = structuredClone(history);
  broken[1].tool_calls[0].function.arguments = '{"city":';
  await assert.rejects(render(QWEN3, broken), { code: 'E_INVALID_ARG', message: /messages\[1\]\.tool_calls\[0\]\.function\.arguments is not JSON/ });
  await assert.rejects(render(QWEN3, [{ role: 'user', content: null }]), { code: 'E_INVALID_ARG', message: /messages\[0\]\.content/ });
  await assert.rejects(render(QWEN3, CONVERSATION, { tools: [{ name: 'get_weather' }] }), { code: 'E_INVALID_ARG', message: /tools\[0\] must be/ });
  await assert.rejects(render(QWEN3, CONVERSATION, { tools: WEATHER_TOOL }), { code: 'E_INVALID_ARG', message: /tools must be an array/ });
});

// ---- reasoning switches, roles, dates, errors ----

test('Qwen3 drops the reasoning of earlier turns; SmolLM3 follows enable_thinking and /no_think', async () => {
  const thought = [CONVERSATION[0], CONVERSATION[1], { role: 'assistant', content: '<think>\nThe user greets me.\n</think>\n\nHi there' }, CONVERSATION[3]];
  assert.equal(await render(QWEN3, thought), await render(QWEN3, CONVERSATION));

  const noThink = '<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: /no_think\n\n'
    + '## Custom Instructions\n\nYou are a helpful assistant\n\n<|im_end|>\n'
    + '<|im_start|>user\nHello<|im_end|>\n'
    + '<|im_start|>assistant\n<think>\n\n</think>\nHi there<|im_end|>\n'
    + '<|im_start|>user\nWho are you<|im_end|>\n'
    + '<|im_start|>assistant\n<think>\n\n</think>\n';
  assert.equal(await render(SMOLLM3, CONVERSATION, { extra: { enable_thinking: false } }), noThink);
  const flagged = [{ role: 'system', content: 'You are a helpful assistant /no_think' }, ...CONVERSATION.slice(1)];
  assert.equal(await render(SMOLLM3, flagged), noThink);
  // without a system message, SmolLM3's default instructions
  assert.ok((await render(SMOLLM3, CONVERSATION.slice(1), { extra: { enable_thinking: false } }))
    .includes('## Custom Instructions\n\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n<|im_end|>\n'));
});

test('Gemma 2 refuses what it cannot take with E_TEMPLATE and the template\'s reason', async () => {
  await assert.rejects(render(GEMMA2, [CONVERSATION[0]]), { code: 'E_TEMPLATE', message: /takes no system message/ });
  await assert.rejects(render(GEMMA2, [CONVERSATION[1], CONVERSATION[3]]),
    { code: 'E_TEMPLATE', message: 'the chat template refused the conversation: Conversation roles must alternate user/assistant/user/assistant/...' });
  // without a system message nothing is joined
  assert.equal(await render(GEMMA2, CONVERSATION.slice(1)),
    '<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\n');
});

test('a developer message is a system message, unless the template knows the developer role', async () => {
  const developer = [{ role: 'developer', content: 'You are a helpful assistant' }, ...CONVERSATION.slice(1)];
  assert.equal(await render(QWEN3, developer), await render(QWEN3, CONVERSATION));
  assert.equal(await render(GEMMA2, developer), await render(GEMMA2, CONVERSATION));
  const own = "{% for m in messages %}{{ m.role }}{% if m.role == 'developer' %}!{% endif %} {% endfor %}";
  assert.equal(await renderChatTemplate(own, developer), 'developer! user assistant user ');
});

test('strftime_now and date_string follow `now` in English, or the current date without it', async () => {
  const dates = '{{ strftime_now("%d %b %Y|%B %d, %Y|%Y-%m-%d|%a %A %H:%M:%S %I %p %j %%") }}|{{ date_string }}|{{ datetime }}';
  assert.equal(await renderChatTemplate(dates, CONVERSATION, { now: new Date(2025, 0, 5, 14, 7, 9) }),
    '05 Jan 2025|January 05, 2025|2025-01-05|Sun Sunday 14:07:09 02 PM 005 %|05 Jan 2025|Jan 05 2025');
  // extra (chat_template_kwargs) may set date_string, as with llama.cpp
  assert.ok((await render(LLAMA32, CONVERSATION, { extra: { date_string: '01 Jan 2030' } })).includes('Today Date: 01 Jan 2030\n'));
  const before = new Date();
  const today = await renderChatTemplate(templates[LLAMA32], CONVERSATION);
  const after = new Date();
  const shown = /Today Date: (\d\d [A-Z][a-z]{2} \d{4})\n/.exec(today)[1];
  const format = (d) => `${String(d.getDate()).padStart(2, '0')} ${d.toLocaleString('en-US', { month: 'short' })} ${d.getFullYear()}`;
  assert.ok([format(before), format(after)].includes(shown), `${shown} is today`);
});

test('range, namespace, loop controls and slices work in templates', async () => {
  const source = '{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}'
    + '|{{ range(6, 0, -2) | join(",") }}'
    + '|{% set ns = namespace(n=0) %}{% for m in messages[::-1] %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}'
    + '|{{ messages[1:] | map(attribute="role") | join(",") }}';
  assert.equal(await renderChatTemplate(source, LLAMA_CPP_CONVERSATION.slice(1)), '023|6,4,2|5|assistant,user,assistant,user');
});

test("`| string` of a mapping or a list is Python's str(), as the original SmolLM3 template prints its xml_tools", async () => {
  // the xml_tools loop of HuggingFaceTB/SmolLM3-3B's own template (llama.cpp's copy drops it)
  const source = '{%- if xml_tools -%}{%- set ns = namespace(xml_tool_string="<tools>\\n") -%}'
    + '{%- for tool in xml_tools[:] -%}{%- set ns.xml_tool_string = ns.xml_tool_string ~ (tool | string) ~ "\\n" -%}{%- endfor -%}'
    + '{{- ns.xml_tool_string + "</tools>" -}}{%- endif -%}';
  const tool = structuredClone(WEATHER_TOOL);
  Object.assign(tool.function, { description: "the city's weather", strict: true, cache: null, version: 1.5 });
  assert.equal(await renderChatTemplate(source, CONVERSATION, { extra: { xml_tools: [tool] } }),
    "<tools>\n{'type': 'function', 'function': {'name': 'get_weather', 'description': \"the city's weather\", 'parameters': {'type': 'object', "
    + "'properties': {'city': {'type': 'string', 'description': 'the city'}}, 'required': ['city']}, 'strict': True, 'cache': None, 'version': 1.5}}\n</tools>");
  assert.equal(await renderChatTemplate(`{{ ['a\\'b', 'say "hi"', "tab\\tend\\\\"] | string }}|{{ 'text' | string }}|{{ 7 | string }}`, CONVERSATION),
    `["a'b", 'say "hi"', 'tab\\tend\\\\']|text|7`);
});

test('templates that do not parse or fail give E_TEMPLATE; bad options give E_INVALID_ARG', async () => {
  await assert.rejects(renderChatTemplate('{% for m in messages %}', CONVERSATION), { code: 'E_TEMPLATE', message: /does not parse/ });
  await assert.rejects(renderChatTemplate('{{ messages | no_such_filter }}', CONVERSATION), { code: 'E_TEMPLATE', message: /the chat template failed/ });
  await assert.rejects(renderChatTemplate("{{ raise_exception('no, thanks') }}", CONVERSATION), { code: 'E_TEMPLATE', message: 'the chat template refused the conversation: no, thanks' });
  await assert.rejects(renderChatTemplate('', CONVERSATION), { code: 'E_INVALID_ARG' });
  await assert.rejects(renderChatTemplate(templates[QWEN3], []), { code: 'E_INVALID_ARG' });
  await assert.rejects(renderChatTemplate(templates[QWEN3], CONVERSATION, { now: 'today' }), { code: 'E_INVALID_ARG', message: /now must be a valid Date/ });
});
