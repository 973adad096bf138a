// tests/template-cases.mjs — the conversations that the chat templates of the 2026 on-device
// families (Gemma 4, Gemma 3n, Granite 4.0, Ministral 3, Phi-4-mini) are rendered with, by wick
// (tests/family-templates.test.mjs) and by the real Jinja (tools/template-reference.mjs, which
// writes tests/template-reference.json). Each case: the template (a path in llama.cpp's bundle,
// or a file of tests/templates/), what wick is given (OpenAI-style messages, whose tool-call
// arguments are JSON strings, and renderChatTemplate's options), and the context the reference
// renders with: what Hugging Face transformers' apply_chat_template gives a template for the same
// request (arguments as objects, the special tokens, the tools), unless the case says otherwise.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export const GEMMA4 = { bundle: 'models/templates/google-gemma-4-31B-it.jinja' };
export const GRANITE4 = { bundle: 'models/templates/ibm-granite-granite-4.0.jinja' };
export const MINISTRAL3 = { bundle: 'models/templates/mistralai-Ministral-3-14B-Reasoning-2512.jinja' };
export const GEMMA3N = { file: 'templates/google-gemma-3n-E2B-it.jinja' };
export const PHI4MINI = { file: 'templates/microsoft-Phi-4-mini-instruct.jinja' };

export const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] },
  },
};
// every kind of parameter the Gemma 4 declaration format spells out: enum, integer, boolean, array, nested object, untyped
export const BOOKING_TOOL = {
  type: 'function',
  function: {
    name: 'book_table',
    description: 'Book a table at a restaurant',
    parameters: {
      type: 'object',
      properties: {
        restaurant: { type: 'string', description: 'its name' },
        seats: { type: 'integer', description: 'how many people' },
        terrace: { type: 'boolean' },
        time: { type: 'string', enum: ['19:00', '20:30'] },
        diets: { type: 'array', items: { type: 'string' } },
        contact: { type: 'object', properties: { name: { type: 'string' }, phone: { type: 'string' } }, required: ['name'] },
        // no type (an enum alone, as OpenAI's examples write it): Python's Jinja prints '' for the missing one
        note: { enum: ['quiet', 'window'] },
      },
      required: ['restaurant', 'seats'],
    },
  },
};

const SYSTEM = { role: 'system', content: 'You are a helpful assistant' };
const CHAT = [
  SYSTEM,
  { role: 'user', content: 'Hello' },
  { role: 'assistant', content: 'Hi there' },
  { role: 'user', content: 'Who are you' },
];
// a call, its result, the answer and the next question
const CALL = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } };
const TOOL_CHAT = [
  SYSTEM,
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [CALL] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 18, "sky": "clear"}' },
  { role: 'assistant', content: 'It is 18 °C and clear in Paris.' },
  { role: 'user', content: 'Book a table for two at Chez Marie, then.' },
];
const PARALLEL_CALLS = [
  { role: 'user', content: 'Weather in Paris and London?' },
  {
    role: 'assistant', content: 'Let me look.', tool_calls: [CALL,
      { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "London"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
  { role: 'tool', tool_call_id: 'call_2', content: 'rain' },
];

const GEMMA_TOKENS = { bosToken: '<bos>', eosToken: '<eos>' };
const TOOLS = [WEATHER_TOOL, BOOKING_TOOL];

export const CASES = [
  { name: 'Gemma 4: system and turns', template: GEMMA4, messages: CHAT, options: GEMMA_TOKENS },
  { name: 'Gemma 4: no system message', template: GEMMA4, messages: CHAT.slice(1), options: GEMMA_TOKENS },
  { name: 'Gemma 4: thinking on', template: GEMMA4, messages: CHAT, options: { ...GEMMA_TOKENS, extra: { enable_thinking: true } } },
  { name: 'Gemma 4: tools, a call, its result, the answer', template: GEMMA4, messages: TOOL_CHAT, options: { ...GEMMA_TOKENS, tools: TOOLS } },
  { name: 'Gemma 4: tools without a system message', template: GEMMA4, messages: TOOL_CHAT.slice(1), options: { ...GEMMA_TOKENS, tools: [WEATHER_TOOL] } },
  { name: 'Gemma 4: two calls and their results, the generation prompt after them', template: GEMMA4, messages: PARALLEL_CALLS, options: { ...GEMMA_TOKENS, tools: [WEATHER_TOOL] } },

  { name: 'Gemma 3n: the system message opens the first user turn', template: GEMMA3N, messages: CHAT, options: GEMMA_TOKENS },
  { name: 'Gemma 3n: no system message', template: GEMMA3N, messages: CHAT.slice(1), options: GEMMA_TOKENS },

  { name: 'Granite 4.0: system and turns', template: GRANITE4, messages: CHAT, options: { eosToken: '<|end_of_text|>' } },
  { name: 'Granite 4.0: its default system message', template: GRANITE4, messages: CHAT.slice(1), options: {} },
  { name: 'Granite 4.0: tools, a call, its result, the answer', template: GRANITE4, messages: TOOL_CHAT, options: { tools: TOOLS } },
  { name: 'Granite 4.0: tools without a system message; two calls, two results', template: GRANITE4, messages: PARALLEL_CALLS, options: { tools: [WEATHER_TOOL] } },

  { name: 'Ministral 3: system and turns', template: MINISTRAL3, messages: CHAT, options: { bosToken: '<s>', eosToken: '</s>' } },
  { name: 'Ministral 3: its default system message', template: MINISTRAL3, messages: CHAT.slice(1), options: { bosToken: '<s>', eosToken: '</s>' } },
  { name: 'Ministral 3: tools, a call, its result, the answer', template: MINISTRAL3, messages: TOOL_CHAT, options: { bosToken: '<s>', eosToken: '</s>', tools: TOOLS } },
  { name: 'Ministral 3: two calls, two results', template: MINISTRAL3, messages: PARALLEL_CALLS, options: { bosToken: '<s>', eosToken: '</s>', tools: [WEATHER_TOOL] } },

  { name: 'Phi-4-mini: system and turns', template: PHI4MINI, messages: CHAT, options: { bosToken: '<|endoftext|>', eosToken: '<|endoftext|>' } },
  {
    name: 'Phi-4-mini: tools in the system message, the call written as the model writes it',
    template: PHI4MINI, messages: TOOL_CHAT, options: { eosToken: '<|endoftext|>', tools: TOOLS },
    // the model card's placement: the function definitions, as one JSON list, in the system
    // message's `tools`; the template prints no tool_calls, so the call is the reply's text
    reference: (context) => ({
      ...context,
      messages: context.messages.map((m, i) => (i === 0 ? { ...m, tools: pyJson(TOOLS.map((t) => t.function)) }
        : m.tool_calls ? { role: 'assistant', content: `<|tool_call|>${pyJson(m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments })))}<|/tool_call|>` } : m)),
    }),
  },
  {
    name: 'Phi-4-mini: tools without a system message get the model card\'s one',
    template: PHI4MINI, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], options: { eosToken: '<|endoftext|>', tools: [WEATHER_TOOL] },
    reference: (context) => ({
      ...context,
      messages: [{ role: 'system', content: 'You are a helpful assistant with some tools.', tools: pyJson([WEATHER_TOOL.function]) }, ...context.messages],
    }),
  },
];

/** Python's json.dumps(x): ", " and ": " between items. */
export function pyJson(value) {
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(', ')}}`;
  return JSON.stringify(value);
}

/** The sources of the cases' templates, by the template object. */
export function readTemplates() {
  const bundled = [...new Set(CASES.map((c) => c.template.bundle).filter(Boolean))];
  const texts = readLlamaBundle(bundled).map((b) => b.toString('utf8'));
  const out = new Map();
  for (const c of CASES) {
    if (out.has(c.template)) continue;
    out.set(c.template, c.template.bundle ? texts[bundled.indexOf(c.template.bundle)] : fs.readFileSync(path.join(HERE, c.template.file), 'utf8'));
  }
  return out;
}

export const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/** The context the reference renders a case with (see the head of this file). */
export function referenceContext(c) {
  const o = c.options;
  const messages = c.messages.map((m) => {
    const out = { ...m, content: m.content ?? '' };
    if (m.tool_calls) out.tool_calls = m.tool_calls.map((t) => ({ ...t, function: { ...t.function, arguments: JSON.parse(t.function.arguments) } }));
    return out;
  });
  const context = { messages, add_generation_prompt: o.addGenerationPrompt ?? true, bos_token: o.bosToken ?? '', eos_token: o.eosToken ?? '', ...(o.extra || {}) };
  if (o.tools) context.tools = o.tools;
  return c.reference ? c.reference(context) : context;
}
