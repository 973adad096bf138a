// wasm_glue/tool-calls.mjs — tool calls in a chat: the call format of each family wick runs,
// told apart by its chat template; the calls parsed out of a reply (whole, or held back from a
// stream while they may be one); the plan for a request's tools (what to render, how to parse,
// the grammar that forces a call); and, for a template with no tools section, the tools
// described in the system message and earlier calls written as text in the family's format.
import { WickError, invalid } from './options.mjs';
import { jsonSchemaToGrammar, literal as gbnfLiteral } from './json-schema.mjs';

const TOOL_SHAPE = "{type: 'function', function: {name, description, parameters}}";

// The formats of the families wick runs, told apart by the chat template that renders the tools:
//   hermes  <tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call> (one or more), text around
//           them is content — Qwen 2.5/3, SmolLM3, Hermes (templates that mention <tool_call>)
//   llama3  the whole reply is one JSON object {"name": "f", "parameters": {…}}, possibly after
//           <|python_tag|> — Llama 3.1/3.2/3.3 (templates with <|start_header_id|> that ask for
//           "parameters")
//   granite the whole reply is <|tool_call|> and a JSON list [{"name": "f", "arguments": {…}}, …]
//           — Granite 3.x (templates that mention <|tool_call|>)
//   xml     <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
//           (one or more), text before them is content; a value is text where the tool's schema
//           says string, else JSON when it parses as JSON — Qwen3.5 and Qwen3-Coder (templates
//           that mention <function=)
//   pythonic <|tool_call_start|>[f(a="x", b=1), g()]<|tool_call_end|>: a Python list of calls with
//           keyword arguments (Python literals), text around it is content — LFM2 and LFM2.5
//           (templates with <|tool_list_start|>, or arch lfm2)
//   gemma4  <|tool_call>call:f{a:<|"|>x<|"|>,b:1}<tool_call|> (one or more): keys bare, strings
//           between <|"|> marks, numbers, true/false/null, [lists] and {dicts} — Gemma 4
//           (templates that write <|tool_call>call:, or arch gemma4; llama.cpp's common/chat.cpp,
//           common_chat_params_init_gemma4, and the cases of its tests/test-chat.cpp)
//   mistral [TOOL_CALLS]f[ARGS]{…JSON…} (one or more; Mistral Small 3.2 puts [CALL_ID]id before
//           [ARGS]), text before them is content — Ministral 3, Mistral Small 3.x, Devstral
//           (templates with [TOOL_CALLS] and [ARGS], or arch mistral3; llama.cpp's
//           common_chat_params_init_ministral_3)
//   phi4    <|tool_call|>[{"name": "f", "arguments": {…}}, …]<|/tool_call|>, text around it is
//           content; the closing mark may be missing at the end of the reply — Phi-4-mini
//           (templates that take tools between <|tool|> and <|/tool|>; the format of the Berkeley
//           Function-Calling Leaderboard's Phi-4-mini handler, which the model card's tools feed)
// A reply that looks like a call but does not parse stays plain content (finish_reason 'stop').

/** The tool-call format of a chat template, or null when wick knows none for it; when the
 *  template names none, the family's own (arch qwen2, qwen3, smollm3: hermes; granite; qwen35:
 *  xml), as SmolLM3's template in llama.cpp's copy has no tools section while the model writes
 *  Hermes calls. */
export function toolCallFormat(template, arch) {
  if (typeof template === 'string') {
    if (template.includes(G4_CALL_START)) return 'gemma4';
    if (template.includes(MISTRAL_CALLS) && template.includes(MISTRAL_ARGS)) return 'mistral';
    if (template.includes('<|/tool|>')) return 'phi4';
    if (template.includes('<function=')) return 'xml';
    if (template.includes('<|tool_list_start|>') || template.includes(PY_CALL_START)) return 'pythonic';
    if (template.includes('<tool_call>')) return 'hermes';
    if (template.includes('<|tool_call|>')) return 'granite';
    if (template.includes('<|start_header_id|>') && template.includes('parameters')) return 'llama3';
  }
  if (arch === 'granite') return 'granite';
  if (arch === 'qwen35') return 'xml';
  if (arch === 'lfm2') return 'pythonic';
  if (arch === 'gemma4') return 'gemma4';
  if (arch === 'mistral3') return 'mistral';
  // Granite 4.0-H's template writes Hermes calls (<tool_call>), unlike Granite 3's
  return ['qwen2', 'qwen3', 'qwen2vl', 'qwen3vl', 'smollm3', 'granitehybrid'].includes(arch) ? 'hermes' : null;
}

const GRANITE_CALL = '<|tool_call|>';
const PY_CALL_START = '<|tool_call_start|>', PY_CALL_END = '<|tool_call_end|>';
const G4_CALL_START = '<|tool_call>call:', G4_CALL_END = '<tool_call|>', G4_QUOTE = '<|"|>';
const MISTRAL_CALLS = '[TOOL_CALLS]', MISTRAL_ARGS = '[ARGS]', MISTRAL_CALL_ID = '[CALL_ID]';
const PHI4_CALL_START = '<|tool_call|>', PHI4_CALL_END = '<|/tool_call|>';
// where a call begins, per format that has content beside its calls (the splitter holds back from there)
const CALL_MARKS = { hermes: '<tool_call>', xml: '<tool_call>', pythonic: PY_CALL_START, gemma4: '<|tool_call>', mistral: MISTRAL_CALLS, phi4: PHI4_CALL_START };

let callCounter = 0;
const callId = () => `call_${Date.now().toString(36)}${(callCounter++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

/** One call as OpenAI's tool_calls entry, from a parsed {name, arguments|parameters}; null if it is not one. */
function toolCallOf(obj, argsKey) {
  if (obj === null || typeof obj !== 'object' || typeof obj.name !== 'string' || !obj.name) return null;
  let args = obj[argsKey] ?? obj.arguments ?? obj.parameters ?? {};
  if (typeof args === 'string') {
    try { args = JSON.parse(args); } catch { return null; }
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return null;
  return { id: callId(), type: 'function', function: { name: obj.name, arguments: JSON.stringify(args) } };
}

/** A parameter's schema in the tools (or undefined). */
function parameterSchema(tools, name, param) {
  const tool = (tools || []).find((t) => t?.function?.name === name);
  return tool?.function?.parameters?.properties?.[param];
}

/** An xml-format value: the text itself for a string parameter, else its JSON when it parses. */
function xmlValue(text, schema) {
  const stringy = schema && (schema.type === 'string' || (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === 'string')));
  if (stringy) return text;
  try { return JSON.parse(text); } catch { return text; }
}

/** The calls of an xml-format reply, as parseToolCalls gives them. */
function parseXmlCalls(text, tools) {
  const re = /<tool_call>\s*<function=([^>\n]+)>\n?([\s\S]*?)<\/function>\s*<\/tool_call>/g;
  const calls = [];
  let rest = '', last = 0, m;
  while ((m = re.exec(text))) {
    const name = m[1].trim(), body = m[2], args = {};
    const pre = /<parameter=([^>\n]+)>\n?([\s\S]*?)\n?<\/parameter>/g;
    let seen = 0, pm;
    while ((pm = pre.exec(body))) {
      if (body.slice(seen, pm.index).trim()) return null;
      const param = pm[1].trim();
      args[param] = xmlValue(pm[2], parameterSchema(tools, name, param));
      seen = pre.lastIndex;
    }
    if (body.slice(seen).trim() || !name) return null;
    calls.push(toolCallOf({ name, arguments: args }, 'arguments'));
    rest += text.slice(last, m.index);
    last = re.lastIndex;
  }
  if (!calls.length || text.slice(last).includes('<tool_call>')) return null;
  rest += text.slice(last);
  return { content: rest.trim(), calls };
}

/** A Python list of calls with keyword arguments, [f(a="x", b=1), g()], as [{name, args}]; throws
 *  where the text is not one (values: strings, numbers, True/False/None, lists, dicts). */
function parsePythonCalls(src) {
  let i = 0;
  const fail = () => { throw new Error(`not a call list at ${i}`); };
  const ws = () => { while (i < src.length && /\s/.test(src[i])) i++; };
  const eat = (c) => { ws(); if (src[i] !== c) fail(); i++; };
  const name = () => {
    ws();
    const m = /^[A-Za-z_][\w.-]*/.exec(src.slice(i));
    if (!m) fail();
    i += m[0].length;
    return m[0];
  };
  const ESC = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', 0: '\0', '\\': '\\', "'": "'", '"': '"' };
  const value = () => {
    ws();
    const c = src[i];
    if (c === '"' || c === "'") {
      let out = '';
      for (i++; i < src.length && src[i] !== c; i++) {
        if (src[i] !== '\\') { out += src[i]; continue; }
        const e = src[++i];
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 1, i + 5))) { out += String.fromCharCode(parseInt(src.slice(i + 1, i + 5), 16)); i += 4; }
        else out += ESC[e] ?? '\\' + e;
      }
      if (src[i] !== c) fail();
      i++;
      return out;
    }
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')', list = [];
      i++;
      for (ws(); src[i] !== close; ws()) {
        list.push(value());
        ws();
        if (src[i] === ',') i++;
        else if (src[i] !== close) fail();
      }
      i++;
      return list;
    }
    if (c === '{') {
      const obj = {};
      i++;
      for (ws(); src[i] !== '}'; ws()) {
        const k = value();
        eat(':');
        obj[String(k)] = value();
        ws();
        if (src[i] === ',') i++;
        else if (src[i] !== '}') fail();
      }
      i++;
      return obj;
    }
    const m = /^(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|True|False|None|true|false|null)/.exec(src.slice(i));
    if (!m) fail();
    i += m[0].length;
    return { True: true, true: true, False: false, false: false, None: null, null: null }[m[0]] ?? Number(m[0]);
  };
  const calls = [];
  eat('[');
  for (ws(); src[i] !== ']'; ws()) {
    const fn = name(), args = {};
    eat('(');
    for (ws(); src[i] !== ')'; ws()) {
      const key = name();
      eat('=');
      args[key] = value();
      ws();
      if (src[i] === ',') i++;
      else if (src[i] !== ')') fail();
    }
    i++;
    calls.push({ name: fn, args });
    ws();
    if (src[i] === ',') i++;
    else if (src[i] !== ']') fail();
  }
  i++;
  ws();
  if (i !== src.length) fail();
  return calls;
}

/** The calls of a pythonic-format reply, as parseToolCalls gives them. */
function parsePythonicCalls(text) {
  const start = text.indexOf(PY_CALL_START);
  if (start < 0) return null;
  const end = text.indexOf(PY_CALL_END, start);
  if (end < 0) return null;
  let list;
  try { list = parsePythonCalls(text.slice(start + PY_CALL_START.length, end)); } catch { return null; }
  if (!list.length) return null;
  const rest = text.slice(0, start) + text.slice(end + PY_CALL_END.length);
  if (rest.includes(PY_CALL_START)) return null;
  const calls = list.map(({ name, args }) => toolCallOf({ name, arguments: args }, 'arguments'));
  return { content: rest.trim(), calls };
}

/** A Gemma 4 value at src[i]: {value, end}, or null where it is not one. Strings are the text
 *  between two <|"|> marks, dict keys run to the next ':' (llama.cpp's gemma4 grammar). */
function gemma4Value(src, i) {
  const ws = (k) => { while (k < src.length && /\s/.test(src[k])) k++; return k; };
  if (src.startsWith(G4_QUOTE, i)) {
    const end = src.indexOf(G4_QUOTE, i + G4_QUOTE.length);
    return end < 0 ? null : { value: src.slice(i + G4_QUOTE.length, end), end: end + G4_QUOTE.length };
  }
  const open = src[i];
  if (open === '{' || open === '[') {
    const close = open === '{' ? '}' : ']', out = open === '{' ? {} : [];
    let k = ws(i + 1);
    if (src[k] === close) return { value: out, end: k + 1 };
    for (;;) {
      let item;
      if (open === '{') {
        const colon = src.indexOf(':', k);
        const key = colon < 0 ? '' : src.slice(k, colon).trim();
        if (!key || /[}]/.test(key)) return null;
        item = gemma4Value(src, ws(colon + 1));
        if (!item) return null;
        out[key] = item.value;
      } else {
        item = gemma4Value(src, k);
        if (!item) return null;
        out.push(item.value);
      }
      k = ws(item.end);
      if (src[k] === close) return { value: out, end: k + 1 };
      if (src[k] !== ',') return null;
      k = ws(k + 1);
    }
  }
  const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)/.exec(src.slice(i, i + 64));
  return m ? { value: JSON.parse(m[0]), end: i + m[0].length } : null;
}

/** The calls of a gemma4-format reply, as parseToolCalls gives them. */
function parseGemma4Calls(text) {
  const calls = [];
  let rest = '', last = 0, at;
  while ((at = text.indexOf(G4_CALL_START, last)) >= 0) {
    const brace = text.indexOf('{', at + G4_CALL_START.length);
    const name = brace < 0 ? '' : text.slice(at + G4_CALL_START.length, brace).trim();
    if (!name || /\s/.test(name)) return null;
    const args = gemma4Value(text, brace);
    if (!args || !text.startsWith(G4_CALL_END, args.end)) return null;
    calls.push(toolCallOf({ name, arguments: args.value }, 'arguments'));
    rest += text.slice(last, at);
    last = args.end + G4_CALL_END.length;
  }
  if (!calls.length) return null;
  rest += text.slice(last);
  return { content: rest.trim(), calls };
}

/** The end of the JSON value that starts at src[i] (objects, arrays, strings, scalars), or -1. */
function jsonEnd(src, i) {
  let depth = 0, k = i;
  for (; k < src.length; k++) {
    const c = src[k];
    if (c === '"') {
      for (k++; k < src.length && src[k] !== '"'; k++) if (src[k] === '\\') k++;
      if (k >= src.length) return -1;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') { if (--depth === 0) return k + 1; if (depth < 0) return -1; }
    else if (depth === 0 && /[\s,]/.test(c)) return k;
  }
  return depth === 0 ? k : -1;
}

/** The calls of a mistral-format reply, as parseToolCalls gives them. */
function parseMistralCalls(text) {
  const first = text.indexOf(MISTRAL_CALLS);
  if (first < 0) return null;
  const calls = [];
  let k = first;
  while (text.startsWith(MISTRAL_CALLS, k)) {
    const args = text.indexOf(MISTRAL_ARGS, k);
    if (args < 0) return null;
    let name = text.slice(k + MISTRAL_CALLS.length, args);
    const id = name.indexOf(MISTRAL_CALL_ID);
    if (id >= 0) name = name.slice(0, id);
    name = name.trim();
    if (!name || /\s/.test(name)) return null;
    let start = args + MISTRAL_ARGS.length;
    while (start < text.length && /\s/.test(text[start])) start++;
    const end = jsonEnd(text, start);
    if (end < 0) return null;
    let obj;
    try { obj = JSON.parse(text.slice(start, end)); } catch { return null; }
    const call = toolCallOf({ name, arguments: obj }, 'arguments');
    if (!call) return null;
    calls.push(call);
    k = end;
    while (k < text.length && /\s/.test(text[k])) k++;
  }
  // nothing but calls after the first one
  return k === text.length ? { content: text.slice(0, first).trim(), calls } : null;
}

/** The calls of a phi4-format reply, as parseToolCalls gives them. */
function parsePhi4Calls(text) {
  const start = text.indexOf(PHI4_CALL_START);
  if (start < 0) return null;
  let end = text.indexOf(PHI4_CALL_END, start);
  const close = end < 0 ? text.length : end;
  let body = text.slice(start + PHI4_CALL_START.length, close).trim();
  // a list, or (as the model sometimes writes parallel calls) objects separated by commas
  if (!body.startsWith('[')) body = `[${body}]`;
  let list;
  try { list = JSON.parse(body); } catch { return null; }
  if (!Array.isArray(list) || !list.length) return null;
  const calls = list.map((obj) => toolCallOf(obj, 'arguments'));
  if (!calls.every(Boolean)) return null;
  const rest = text.slice(0, start) + (end < 0 ? '' : text.slice(end + PHI4_CALL_END.length));
  if (rest.includes(PHI4_CALL_START)) return null;
  return { content: rest.trim(), calls };
}

/**
 * The tool calls in a reply of the given format: { content, calls } (content: the text outside
 * the calls, trimmed), or null when the reply holds no call or a call that does not parse.
 * tools (the request's): where a format writes values as text (xml), their schemas say which
 * values are strings.
 */
export function parseToolCalls(format, text, tools) {
  if (format === 'xml') return parseXmlCalls(text, tools);
  if (format === 'pythonic') return parsePythonicCalls(text);
  if (format === 'gemma4') return parseGemma4Calls(text);
  if (format === 'mistral') return parseMistralCalls(text);
  if (format === 'phi4') return parsePhi4Calls(text);
  if (format === 'hermes') {
    const re = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
    const calls = [];
    let rest = '', last = 0, m;
    while ((m = re.exec(text))) {
      let obj;
      try { obj = JSON.parse(m[1]); } catch { return null; }
      const call = toolCallOf(obj, 'arguments');
      if (!call) return null;
      calls.push(call);
      rest += text.slice(last, m.index);
      last = re.lastIndex;
    }
    if (!calls.length || text.slice(last).includes('<tool_call>')) return null;
    rest += text.slice(last);
    return { content: rest.trim(), calls };
  }
  if (format === 'llama3') {
    const body = text.trim().replace(/^<\|python_tag\|>/, '').trim();
    if (!body.startsWith('{')) return null;
    let obj;
    try { obj = JSON.parse(body); } catch { return null; }
    const call = toolCallOf(obj, 'parameters');
    return call ? { content: '', calls: [call] } : null;
  }
  if (format === 'granite') {
    const body = text.trim();
    if (!body.startsWith(GRANITE_CALL)) return null;
    let list;
    try { list = JSON.parse(body.slice(GRANITE_CALL.length)); } catch { return null; }
    if (!Array.isArray(list)) list = [list];
    const calls = list.map((obj) => toolCallOf(obj, 'arguments'));
    return calls.length && calls.every(Boolean) ? { content: '', calls } : null;
  }
  return null;
}

/** Streams content while holding back whatever may be the start of a tool call. */
export class ToolCallSplitter {
  constructor(format, tools) {
    this.format = format;
    this.tools = tools;
    this.text = '';   // all of the reply
    this.shown = 0;   // characters of it already streamed as content
    this.held = false; // a call has begun: nothing more is streamed
  }

  push(chunk) {
    this.text += chunk;
    if (this.held) return '';
    let safe;
    if (CALL_MARKS[this.format]) {
      const mark = CALL_MARKS[this.format];
      const at = this.text.indexOf(mark, this.shown);
      if (at >= 0) { this.held = true; safe = at; }
      else {
        // keep back a tail that could still become the mark
        safe = this.text.length;
        for (let k = Math.min(mark.length - 1, this.text.length - this.shown); k > 0; k--)
          if (mark.startsWith(this.text.slice(-k))) { safe = this.text.length - k; break; }
      }
      // whitespace is kept back until text follows it (content before a call is trimmed), and
      // the reply's leading whitespace is never shown
      while (safe > this.shown && /\s/.test(this.text[safe - 1])) safe--;
      if (this.shown === 0) while (this.shown < safe && /\s/.test(this.text[this.shown])) this.shown++;
    } else if (this.shown > 0) safe = this.text.length;
    else {
      // llama3: a reply whose first visible character is "{" (or <|python_tag|>) may be a call;
      // granite: one that starts with <|tool_call|>
      const lead = this.text.trimStart();
      const marks = this.format === 'granite' ? [GRANITE_CALL] : ['{', '<|python_tag|>'];
      if (marks.some((m) => lead.startsWith(m))) { this.held = true; safe = 0; }
      else safe = marks.some((m) => m.startsWith(lead)) ? 0 : this.text.length;
    }
    const out = this.text.slice(this.shown, safe);
    this.shown = Math.max(this.shown, safe);
    return out;
  }

  /** At the end: the calls (or null) and the content not streamed yet. */
  end() {
    const parsed = parseToolCalls(this.format, this.text, this.tools);
    if (!parsed) return { calls: null, content: this.text.slice(this.shown) };
    // what was streamed is the start of the content; the rest of it comes now
    const streamed = this.text.slice(0, this.shown).trim();
    const content = parsed.content.startsWith(streamed) ? parsed.content.slice(streamed.length) : '';
    return { calls: parsed.calls, content: this.shown === 0 ? parsed.content : content };
  }
}

/**
 * How a chat request's tools ({tools, tool_choice, response_format}) are used with a chat
 * template (its source) and a model architecture: the tools to render (render), the format the
 * reply is parsed in (format, or null), and the grammar that forces a call (grammar, or null:
 * tool_choice 'required' or a named function). Throws a WickError for a choice that cannot be
 * met (an unknown function, a forced call with no known format, parameters no grammar can express).
 */
export function planToolCalls(request, templateSource, arch) {
  const tools = checkTools(request.tools);
  const choice = request.tool_choice ?? 'auto';
  if (!tools) {
    if (choice !== 'auto' && choice !== 'none') throw invalid(`tool_choice ${JSON.stringify(choice)} needs tools`);
    return { render: undefined, format: null, grammar: null };
  }
  if (choice === 'none') return { render: undefined, format: null, grammar: null };
  const format = toolCallFormat(templateSource, arch);
  let chosen;
  if (choice === 'auto') chosen = null;
  else if (choice === 'required') chosen = tools;
  else if (choice && typeof choice === 'object' && choice.type === 'function' && typeof choice.function?.name === 'string') {
    chosen = tools.filter((t) => t.function?.name === choice.function.name);
    if (!chosen.length) throw invalid(`tool_choice names ${choice.function.name}, which is not among the tools`);
  } else throw invalid("tool_choice must be 'auto', 'none', 'required' or { type: 'function', function: { name } }");
  if (!chosen) return { render: tools, format, grammar: null };
  if (!format) throw new WickError('E_UNSUPPORTED', "tool_choice 'required' or a named function needs a chat template with a tool-call format wick knows (Hermes <tool_call>, Llama 3.x JSON, Granite <|tool_call|>, Qwen3.5's <function=…>, LFM2's <|tool_call_start|>, Gemma 4's <|tool_call>, Mistral's [TOOL_CALLS], Phi-4-mini's <|tool_call|>…<|/tool_call|>)");
  if (request.response_format && request.response_format.type !== 'text') throw invalid('give either response_format or a forced tool_choice, not both');
  if (format === 'xml' || format === 'pythonic' || format === 'gemma4') return { render: tools, format, grammar: textCallGrammar(format, chosen, tools) };
  if (format === 'mistral') return { render: tools, format, grammar: mistralCallGrammar(chosen, tools) };
  const argsKey = format === 'llama3' ? 'parameters' : 'arguments';
  const callSchema = {
    anyOf: chosen.map((t, i) => {
      const params = t.function.parameters ?? { type: 'object' };
      return {
        type: 'object',
        properties: { name: { const: t.function.name }, [argsKey]: params },
        required: ['name', argsKey],
        additionalProperties: false,
        $comment: `tools[${i}]`,
      };
    }),
  };
  let grammar;
  try {
    grammar = jsonSchemaToGrammar(callSchema, { root: 'tool-call' });
  } catch (e) {
    throw new WickError(e.code, `a tool's parameters: ${e.message.replace(/^\$\.anyOf\[(\d+)\]\.properties\.(arguments|parameters)/, (_, i) => `tools[${chosen === tools ? i : tools.indexOf(chosen[i])}].function.parameters`)}`);
  }
  const root = format === 'hermes' ? 'root ::= "<tool_call>\\n" tool-call "\\n</tool_call>"'
    : format === 'granite' ? `root ::= "${GRANITE_CALL}[" tool-call "]"`
      : format === 'phi4' ? `root ::= "${PHI4_CALL_START}[" tool-call "]${PHI4_CALL_END}"` : 'root ::= tool-call';
  return { render: tools, format, grammar: `${root}\n${grammar}` };
}

/** GBNF for one call of one of the chosen tools in a format whose values are not JSON: xml
 *  (<parameter=p>\nvalue\n</parameter>, in the order of the tool's schema, the required ones
 *  always and the others optionally), pythonic (<|tool_call_start|>[f(p=value, …)]<|tool_call_end|>)
 *  or gemma4 (<|tool_call>call:f{p:value,…}<tool_call|>), these two with the required arguments
 *  first, then the others optionally. A value is text (xml: without '<' or a newline; pythonic: a
 *  double-quoted string without quotes, backslashes or newlines; gemma4: between <|"|> marks,
 *  without '<'), up to maxLength characters, for a string; one of the literals of an enum; an
 *  integer, number or boolean. Other parameter types cannot be forced in these formats. */
function textCallGrammar(format, chosen, tools) {
  const xml = format === 'xml', g4 = format === 'gemma4';
  const rules = [];
  const calls = chosen.map((t, i) => {
    const params = t.function.parameters ?? { type: 'object' };
    const props = Object.entries(params.properties ?? {}), required = new Set(params.required ?? []);
    const where = `tools[${tools.indexOf(t)}].function.parameters`;
    const item = ([name, schema], j) => {
      let value;
      const text = (v) => (xml ? v : g4 ? `${G4_QUOTE}${v}${G4_QUOTE}` : `"${v}"`);
      if (Array.isArray(schema?.enum) && schema.enum.length)
        value = schema.enum.map((v) => gbnfLiteral(typeof v === 'string' ? text(v) : xml || g4 ? JSON.stringify(v) : pythonLiteral(v))).join(' | ');
      else if (schema?.type === 'string') {
        const chars = `${xml ? '[^<\\n]' : g4 ? '[^<]' : '[^"\\\\\\n]'}${Number.isInteger(schema.maxLength) ? `{0,${schema.maxLength}}` : '*'}`;
        value = xml ? chars : g4 ? `${gbnfLiteral(G4_QUOTE)} ${chars} ${gbnfLiteral(G4_QUOTE)}` : `"\\"" ${chars} "\\""`;
      } else if (schema?.type === 'integer') value = '"-"? ("0" | [1-9] [0-9]{0,15})';
      else if (schema?.type === 'number') value = '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})?';
      else if (schema?.type === 'boolean') value = xml || g4 ? '"true" | "false"' : '"True" | "False"';
      else throw new WickError('E_UNSUPPORTED', `${where}.properties.${name}: a forced call in this model's call format takes string, integer, number, boolean and enum parameters`);
      rules.push(xml ? `call${i}-p${j} ::= ${gbnfLiteral(`<parameter=${name}>\n`)} (${value}) ${gbnfLiteral('\n</parameter>\n')}`
        : `call${i}-p${j} ::= ${gbnfLiteral(`${name}${g4 ? ':' : '='}`)} (${value})`);
      return `call${i}-p${j}`;
    };
    let body;
    if (xml) body = props.map((p, j) => (required.has(p[0]) ? item(p, j) : `${item(p, j)}?`)).join(' ');
    else {
      const sep = g4 ? '","' : '", "';
      const indexed = props.map((p, j) => [p, j]);
      const req = indexed.filter(([p]) => required.has(p[0])).map(([p, j]) => item(p, j));
      const opt = indexed.filter(([p]) => !required.has(p[0])).map(([p, j]) => item(p, j));
      // optional ones after the required (each its own separator first), or, with none required,
      // a chain that starts at the first optional one
      body = req.length ? [req.join(` ${sep} `), ...opt.map((o) => `(${sep} ${o})?`)].join(' ')
        : opt.length ? `(${opt[0]} ${opt.slice(1).map((o) => `(${sep} ${o})?`).join(' ')})?` : '';
    }
    rules.push(xml ? `call${i} ::= ${gbnfLiteral(`<function=${t.function.name}>\n`)} ${body} ${gbnfLiteral('</function>')}`
      : g4 ? `call${i} ::= ${gbnfLiteral(`${G4_CALL_START}${t.function.name}{`)} ${body} ${gbnfLiteral(`}${G4_CALL_END}`)}`
        : `call${i} ::= ${gbnfLiteral(`${t.function.name}(`)} ${body} ")"`);
    return `call${i}`;
  });
  const root = xml ? `root ::= "<tool_call>\\n" (${calls.join(' | ')}) "\\n</tool_call>"`
    : g4 ? `root ::= ${calls.join(' | ')}`
      : `root ::= ${gbnfLiteral(`${PY_CALL_START}[`)} (${calls.join(' | ')}) ${gbnfLiteral(`]${PY_CALL_END}`)}`;
  return [root, ...rules].join('\n');
}

/** GBNF for one mistral-format call of one of the chosen tools: [TOOL_CALLS]f[ARGS] and the JSON
 *  of its parameters' schema. Each tool's schema is its own grammar (json-schema.mjs) whose rules
 *  are renamed apart (tool<i>-…); the building blocks they share (ws, string, …) are kept once. */
function mistralCallGrammar(chosen, tools) {
  const rules = new Map();
  const alternatives = chosen.map((t, i) => {
    const prefix = `tool${i}`;
    let grammar;
    try {
      grammar = jsonSchemaToGrammar(t.function.parameters ?? { type: 'object' }, { root: `${prefix}-args` });
    } catch (e) {
      throw new WickError(e.code, `tools[${tools.indexOf(t)}].function.parameters${e.message.replace(/^\$/, '')}`);
    }
    for (const line of grammar.split('\n').filter(Boolean)) {
      const renamed = renameRules(line, (name) => (name.startsWith('root-') ? `${prefix}-${name}` : name));
      const [name] = renamed.split(' ::= ', 1);
      if (rules.has(name) && rules.get(name) !== renamed) throw new Error(`tool grammars disagree on rule ${name}`);
      rules.set(name, renamed);
    }
    return `${gbnfLiteral(`${MISTRAL_CALLS}${t.function.name}${MISTRAL_ARGS}`)} ${prefix}-args`;
  });
  return [`root ::= ${alternatives.join(' | ')}`, ...rules.values()].join('\n');
}

/** A GBNF line with its rule names (outside "literals" and [classes]) passed through rename. */
function renameRules(line, rename) {
  return line.replace(/"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z][\w-]*/g, (token) => (/^["[]/.test(token) ? token : rename(token)));
}

/** A value as a Python literal (the pythonic call format): True, False, None, JSON otherwise. */
function pythonLiteral(v) {
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  if (Array.isArray(v)) return `[${v.map(pythonLiteral).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pythonLiteral(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

/** OpenAI-style tool definitions, or undefined when there are none (an empty list is none). */
export function checkTools(tools) {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalid(`tools must be an array of ${TOOL_SHAPE}`);
  tools.forEach((t, i) => {
    if (t === null || typeof t !== 'object' || t.type !== 'function' || typeof t.function?.name !== 'string') throw invalid(`tools[${i}] must be ${TOOL_SHAPE}`);
  });
  return tools.length ? tools : undefined;
}

// ---- tools for a template that has no tools section ----
//
// The tools are described in the system message (a new one when the conversation has none), in
// the words below: each definition as one line of JSON, then how a call is written in the
// family's format. The assistant's earlier calls, which such a template drops, are written into
// its message as text in that same format, so that the model sees what it called before a result.

export const TOOL_FORMATS = ['hermes', 'llama3', 'granite', 'xml', 'pythonic', 'gemma4', 'mistral', 'phi4'];

/** JSON with a space after each comma and colon, as Python's json.dumps (the templates' tojson) writes it. */
function spacedJson(value) {
  if (Array.isArray(value)) return `[${value.map(spacedJson).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}: ${spacedJson(v)}`).join(', ')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** The text of one call as the model writes it in a format. */
function toolCallText(format, name, args) {
  if (format === 'granite') return `${GRANITE_CALL}${spacedJson([{ name, arguments: args }])}`;
  if (format === 'phi4') return `${PHI4_CALL_START}${spacedJson([{ name, arguments: args }])}${PHI4_CALL_END}`;
  if (format === 'mistral') return `${MISTRAL_CALLS}${name}${MISTRAL_ARGS}${spacedJson(args)}`;
  if (format === 'gemma4') return `${G4_CALL_START}${name}${gemma4Text(args, false)}${G4_CALL_END}`;
  if (format === 'pythonic') return `${PY_CALL_START}[${pythonCall(name, args)}]${PY_CALL_END}`;
  if (format === 'xml') {
    const params = Object.entries(args).map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : spacedJson(v)}\n</parameter>\n`).join('');
    return `<tool_call>\n<function=${name}>\n${params}</function>\n</tool_call>`;
  }
  return format === 'hermes'
    ? `<tool_call>\n${spacedJson({ name, arguments: args })}\n</tool_call>`
    : spacedJson({ name, parameters: args });
}

/** A value as Gemma 4's template writes it (format_argument): strings between <|"|> marks, keys
 *  sorted and bare (quoted when quoteKeys), no spaces. */
function gemma4Text(value, quoteKeys = true) {
  if (typeof value === 'string') return `${G4_QUOTE}${value}${G4_QUOTE}`;
  if (Array.isArray(value)) return `[${value.map((v) => gemma4Text(v, quoteKeys)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${quoteKeys ? `${G4_QUOTE}${k}${G4_QUOTE}` : k}:${gemma4Text(value[k], quoteKeys)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** One call in the pythonic format: f(a="x", b=1) */
const pythonCall = (name, args) => `${name}(${Object.entries(args).map(([k, v]) => `${k}=${pythonLiteral(v)}`).join(', ')})`;

/** The tools section wick writes into the system message for a template that has none. */
function describeTools(tools, format) {
  const list = tools.map(spacedJson).join('\n');
  if (format === 'hermes' || format === 'xml') {
    const how = format === 'hermes' ? 'a JSON object with its name and its arguments' : 'its name and each argument';
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line, between <tools> and </tools>:\n'
      + `<tools>\n${list}\n</tools>\n\n`
      + `To call a function, write ${how} between <tool_call> and </tool_call>, as here:\n`
      + `${toolCallText(format, 'function_name', { argument_name: 'value' })}\n`
      + 'Write one such block for each call. The results come back in the next message.';
  }
  if (format === 'pythonic') {
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line:\n'
      + `${list}\n\n`
      + `To call functions, write a Python list of calls with keyword arguments between ${PY_CALL_START} and ${PY_CALL_END}, as here:\n`
      + toolCallText('pythonic', 'function_name', { argument_name: 'value' });
  }
  if (format === 'granite') {
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line:\n'
      + `${list}\n\n`
      + `To call functions, answer with nothing but ${GRANITE_CALL} and a JSON list of calls, each with its name and its arguments, as here:\n`
      + toolCallText('granite', 'function_name', { argument_name: 'value' });
  }
  if (format === 'gemma4' || format === 'mistral' || format === 'phi4') {
    return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
      + '(its name, what it does, and a JSON schema of its arguments), one per line:\n'
      + `${list}\n\n`
      + 'To call a function, write its name and its arguments as here:\n'
      + toolCallText(format, 'function_name', { argument_name: 'value' });
  }
  return '### Tools\n\nYou can call functions to help with the request. Each one is given below as a JSON object '
    + '(its name, what it does, and a JSON schema of its parameters), one per line:\n'
    + `${list}\n\n`
    + 'To call a function, answer with nothing but a JSON object with its name and its parameters, as here:\n'
    + toolCallText('llama3', 'function_name', { argument_name: 'value' });
}

export const hasCalls = (m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0;

/** The conversation with each assistant message's tool_calls written into its text, in a format. */
export function callsAsText(messages, format) {
  return messages.map((m) => {
    if (!hasCalls(m)) return m;
    const calls = format === 'granite'
      ? [`${GRANITE_CALL}${spacedJson(m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments ?? {} })))}`]
      : format === 'phi4'
        ? [`${PHI4_CALL_START}${spacedJson(m.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments ?? {} })))}${PHI4_CALL_END}`]
      : format === 'pythonic'
        ? [`${PY_CALL_START}[${m.tool_calls.map((c) => pythonCall(c.function.name, c.function.arguments ?? {})).join(', ')}]${PY_CALL_END}`]
        : m.tool_calls.map((c) => toolCallText(format, c.function.name, c.function.arguments ?? {}));
    const written = { ...m, content: [m.content, ...calls].filter(Boolean).join('\n') };
    delete written.tool_calls;
    return written;
  });
}

// the system message of Phi-4-mini's model card, for a conversation that has none
const PHI4_SYSTEM = 'You are a helpful assistant with some tools.';

/** The conversation with the tools in its system message's `tools` field, as a template that
 *  prints message['tools'] takes them (Phi-4-mini's, between <|tool|> and <|/tool|>): the
 *  function definitions as one JSON list (json.dumps, as its model card shows them). */
export function withSystemTools(messages, tools) {
  const json = spacedJson(tools.map((t) => t.function));
  if (messages[0].role === 'system') return [{ ...messages[0], tools: json }, ...messages.slice(1)];
  return [{ role: 'system', content: PHI4_SYSTEM, tools: json }, ...messages];
}

/** The conversation with the tools described in its system message and the calls written as text. */
export function withToolsDescribed(messages, tools, format) {
  const description = describeTools(tools, format);
  const out = callsAsText(messages, format);
  if (out[0].role === 'system') {
    const system = out[0].content.trimEnd();
    return [{ ...out[0], content: system ? `${system}\n\n${description}` : description }, ...out.slice(1)];
  }
  return [{ role: 'system', content: description }, ...out];
}
