// wasm_glue/chat-template.mjs — a conversation's prompt text, rendered with the model's chat
// template (Jinja) as transformers and llama.cpp render it, and the checks on a request's messages.
import { WickError, invalid } from './options.mjs';
import { toolCallFormat, checkTools, TOOL_FORMATS, hasCalls, callsAsText, withToolsDescribed, withSystemTools } from './tool-calls.mjs';

// A model's tokenizer.chat_template is a Jinja template written for Hugging Face transformers'
// apply_chat_template; @huggingface/jinja renders it. The context holds what transformers and
// llama.cpp give a template: messages, add_generation_prompt, bos_token, eos_token, tools (only
// when the request has some, so that `tools is defined` keeps its meaning), raise_exception,
// range, strftime_now (English names and local time, as Python's strftime in the C locale, at the
// `now` of the call), and llama.cpp's date_string ("26 Jul 2024") and datetime ("Jul 26 2024").
// `extra` (chat_template_kwargs: enable_thinking, documents, …) adds or replaces variables, and
// `x | string` of a mapping or a list gives Python's str(x), which @huggingface/jinja lacks.
// The messages are prepared as llama.cpp's common chat code prepares them (common/chat.cpp):
//  - a 'developer' message becomes a 'system' one, unless the template names the developer role;
//  - for a template that takes no system message (it raises, as Gemma's do, or leaves it out of
//    the prompt), the system message is joined to the head of the next message with a newline;
//  - a tool call's arguments sent as a JSON string (the OpenAI format) are parsed into the object
//    that the templates print with tojson;
//  - for a template that reads the tools from the system message (Phi-4-mini's prints
//    message['tools'] between <|tool|> and <|/tool|>, and ignores `tools`), the tools go there.

const ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer']);
const TEMPLATE_CACHE_SIZE = 8;            // compiled templates kept: a page seldom has more models
const SYSTEM_PROBE = 'WICK-SYSTEM-PROBE'; // marks the system message in the probe render
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_MS = 86400000;
const SYSTEM_TOOLS = /message\s*(\[\s*['"]tools['"]\s*\]|\.tools\b)/; // a template that prints a message's own tools

function messageText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text).join('');
}

export function checkMessages(messages) {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages must be a non-empty array of {role, content}');
  messages.forEach((m, i) => {
    if (m === null || typeof m !== 'object') throw invalid(`messages[${i}] must be an object {role, content}`);
    if (!ROLES.has(m.role)) throw invalid(`messages[${i}].role ${JSON.stringify(m.role)} is not one of ${[...ROLES].join(', ')}`);
    const calls = m.tool_calls !== undefined && m.tool_calls !== null;
    if (calls) checkToolCalls(m.tool_calls, i);
    const text = typeof m.content === 'string' || (Array.isArray(m.content) && m.content.every((p) => p && p.type === 'text' && typeof p.text === 'string'));
    const callsOnly = calls && m.role === 'assistant' && (m.content === null || m.content === undefined);
    if (!text && !callsOnly) throw invalid(`messages[${i}].content must be a string or an array of {type: 'text', text}${m.role === 'assistant' ? ' (or null beside tool_calls)' : ''}`);
  });
}

function checkToolCalls(calls, i) {
  if (!Array.isArray(calls)) throw invalid(`messages[${i}].tool_calls must be an array of {type: 'function', function: {name, arguments}}`);
  calls.forEach((call, j) => {
    const ok = call && typeof call === 'object' && (call.type === undefined || call.type === 'function') && typeof call.function?.name === 'string';
    if (!ok) throw invalid(`messages[${i}].tool_calls[${j}] must be {type: 'function', function: {name, arguments}}`);
  });
}


/** The messages as the template sees them (see the notes at the head of this file). */
function templateMessages(messages, source) {
  const developerIsSystem = !/\bdeveloper\b/.test(source);
  return messages.map((m, i) => {
    const out = { ...m, content: messageText(m.content) };
    if (m.role === 'developer' && developerIsSystem) out.role = 'system';
    if (Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls.map((call, j) => {
        let args = call.function.arguments;
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args);
          } catch (e) {
            throw invalid(`messages[${i}].tool_calls[${j}].function.arguments is not JSON: ${e.message}`);
          }
        }
        return { ...call, function: { ...call.function, arguments: args } };
      });
    }
    return out;
  });
}

/** For a template without a system role: the system message opens the next message. */
function joinSystemToNext(messages) {
  if (messages.length === 1) throw new WickError('E_TEMPLATE', 'the chat template takes no system message, and no message follows the system message to carry it');
  const [system, next, ...rest] = messages;
  return [{ ...next, content: `${system.content}\n${next.content}` }, ...rest];
}

/** Python's strftime in the C locale, on local time (as transformers' and llama.cpp's strftime_now). */
function strftime(date, format) {
  const pad = (n, width = 2) => String(n).padStart(width, '0');
  const [year, month, day, hours] = [date.getFullYear(), date.getMonth(), date.getDate(), date.getHours()];
  const fields = {
    a: WEEKDAYS[date.getDay()].slice(0, 3), A: WEEKDAYS[date.getDay()],
    b: MONTHS[month].slice(0, 3), B: MONTHS[month],
    d: pad(day), e: String(day).padStart(2, ' '), m: pad(month + 1), y: pad(year % 100), Y: String(year),
    F: `${year}-${pad(month + 1)}-${pad(day)}`,
    j: pad((Date.UTC(year, month, day) - Date.UTC(year, 0, 1)) / DAY_MS + 1, 3),
    H: pad(hours), I: pad(hours % 12 || 12), p: hours < 12 ? 'AM' : 'PM',
    M: pad(date.getMinutes()), S: pad(date.getSeconds()), '%': '%',
  };
  return format.replace(/%([A-Za-z%])/g, (directive, c) => fields[c] ?? directive);
}

/** Python's range(stop) / range(start, stop[, step]). */
function pythonRange(start, stop, step = 1) {
  if (stop === undefined) [start, stop] = [0, start];
  if (![start, stop, step].every(Number.isInteger) || step === 0) throw new Error('range() takes integers and a step other than 0');
  const out = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

class TemplateRaised extends Error {}

// The globals of @huggingface/jinja's Template.render (which refuses to redefine them), with our
// raise_exception (to tell a template's refusal from a failure) and, per render, strftime_now.
const TEMPLATE_GLOBALS = {
  true: true, false: false, none: null, True: true, False: false, None: null,
  range: pythonRange,
  raise_exception: (message) => { throw new TemplateRaised(String(message)); },
};

const compiledTemplates = new Map(); // source → { template, takesSystem: undefined until probed }

function compileTemplate(Template, source) {
  let entry = compiledTemplates.get(source);
  if (entry) return entry;
  try {
    entry = { template: new Template(source), takesSystem: undefined };
  } catch (e) {
    throw new WickError('E_TEMPLATE', `the chat template does not parse: ${e.message}`);
  }
  compiledTemplates.set(source, entry);
  if (compiledTemplates.size > TEMPLATE_CACHE_SIZE) compiledTemplates.delete(compiledTemplates.keys().next().value);
  return entry;
}

function runTemplate(module, template, context) {
  const env = new module.Environment();
  for (const [name, value] of Object.entries(context)) env.set(name, value);
  return new (interpreterOf(module))(env).run(template.parsed).value;
}

// As llama.cpp's template capabilities: a template takes a system message when a render of
// [system, user] succeeds and shows the system text (Gemma's raise, Phi-3-mini's drop it).
function takesSystemMessage(module, entry, context) {
  if (entry.takesSystem === undefined) {
    try {
      const messages = [{ role: 'system', content: SYSTEM_PROBE }, { role: 'user', content: 'Hello' }];
      entry.takesSystem = runTemplate(module, entry.template, { ...context, messages }).includes(SYSTEM_PROBE);
    } catch {
      entry.takesSystem = false;
    }
  }
  return entry.takesSystem;
}

/** Whether a template writes an assistant message's tool_calls (Granite 3.3's, for one, writes
 *  only the content), found by rendering a probe call once per template. */
function rendersToolCalls(module, entry, context) {
  if (entry.rendersCalls === undefined) {
    const call = { id: 'call_probe', type: 'function', function: { name: CALL_PROBE, arguments: {} } };
    const messages = [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: '', tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{}' }];
    try {
      entry.rendersCalls = runTemplate(module, entry.template, { ...context, messages }).includes(CALL_PROBE);
    } catch {
      entry.rendersCalls = false;
    }
  }
  return entry.rendersCalls;
}
const CALL_PROBE = 'wick_probe_function';

// `x | string` of a mapping or a list is Python's str(x), its repr, in transformers' Jinja; the
// original SmolLM3 template prints its xml_tools so. @huggingface/jinja has no such filter: its
// Interpreter, extended here, gets it. And a string filter of an undefined value is the filter of
// '' in Python's Jinja (Undefined prints as ''), where @huggingface/jinja throws: Gemma 4's
// template writes `value['type'] | upper` of a parameter that has no type. A for loop over an
// undefined variable runs no times (its else block, if any), as in Python's Jinja, where
// @huggingface/jinja throws: Command R7B's writes `for tool in tools` when it has documents and
// no tools. The rest of its filters and statements are untouched.
const interpreters = new WeakMap(); // jinja module → its Interpreter with that filter
const STRING_FILTERS = new Set(['upper', 'lower', 'title', 'capitalize', 'trim']); // each gives '' of Undefined in Python's Jinja

function interpreterOf(module) {
  let Extended = interpreters.get(module);
  if (!Extended) {
    const StringValue = new module.Environment().set('text', '').constructor;
    Extended = class extends module.Interpreter {
      applyFilter(operand, filter, environment) {
        if (filter.type === 'Identifier' && filter.value === 'string' && (operand.type === 'ObjectValue' || operand.type === 'ArrayValue'))
          return new StringValue(pythonRepr(operand));
        if (filter.type === 'Identifier' && STRING_FILTERS.has(filter.value) && operand.type === 'UndefinedValue')
          return new StringValue('');
        return super.applyFilter(operand, filter, environment);
      }
      evaluateFor(node, environment) {
        if (node.iterable.type === 'Identifier' && this.evaluate(node.iterable, environment).type === 'UndefinedValue')
          return super.evaluateFor({ ...node, iterable: { type: 'ArrayLiteral', value: [] } }, environment);
        return super.evaluateFor(node, environment);
      }
    };
    interpreters.set(module, Extended);
  }
  return Extended;
}

/** Python's repr of a Jinja runtime value (mappings, lists, strings, numbers, True/False/None). */
function pythonRepr(value) {
  switch (value.type) {
    case 'ObjectValue': return `{${[...value.value].map(([key, v]) => `${pythonStringRepr(key)}: ${pythonRepr(v)}`).join(', ')}}`;
    case 'ArrayValue': return `[${value.value.map(pythonRepr).join(', ')}]`;
    case 'StringValue': return pythonStringRepr(value.value);
    case 'BooleanValue': return value.value ? 'True' : 'False';
    case 'NullValue': case 'UndefinedValue': return 'None';
    case 'FloatValue': return Number.isInteger(value.value) ? `${value.value}.0` : String(value.value);
    default: return String(value.value);
  }
}

/** Python's repr of a str: single quotes unless only double quotes avoid escaping. */
function pythonStringRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escapes = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', [quote]: `\\${quote}` };
  const control = (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  return quote + text.replace(/[\\'"\x00-\x1f\x7f]/g, (c) => escapes[c] ?? (c === "'" || c === '"' ? c : control(c))) + quote;
}

// ---- documents (retrieval-augmented chat) ----
//
// A request's documents (strings, or {text, title, source}) go where the template wants them: a
// template that reads a `documents` variable (Granite 3.3's and 4.x's, Command-R's: transformers'
// apply_chat_template(documents=…), each a mapping with title and text) gets them there, as
// {doc_id, title, text, source}; any other template gets them as a context block at the end of the
// system message (a system message is added when there is none): DOCUMENTS_HEADER, then each
// document as "[n] title (source)" on its own line and its text, separated by blank lines.
export const DOCUMENTS_HEADER = 'Use the following documents to answer where they are relevant. Each begins with its number in brackets, then its title and source where known.';

/** A request's documents checked and made uniform: [{text, title?, source?, …the caller's other fields}]. */
export function checkDocuments(documents) {
  if (!Array.isArray(documents)) throw invalid('documents must be an array of strings or {text, title?, source?}');
  return documents.map((d, i) => {
    if (typeof d === 'string') return { text: d };
    if (d === null || typeof d !== 'object' || typeof d.text !== 'string') throw invalid(`documents[${i}] must be a string or {text, title?, source?}`);
    for (const k of ['title', 'source'])
      if (d[k] !== undefined && d[k] !== null && typeof d[k] !== 'string') throw invalid(`documents[${i}].${k} must be a string`);
    return { ...d };
  });
}

/** The documents as a template's `documents` variable sees them (Granite's doc_id, Command-R's title and text). */
function templateDocuments(documents) {
  return documents.map((d, i) => {
    const out = { doc_id: String(i + 1), title: d.title ?? d.source ?? `Document ${i + 1}`, text: d.text };
    if (d.source) out.source = d.source;
    return out;
  });
}

/** The context block of documents for a template that takes none (see DOCUMENTS_HEADER). */
export function documentsBlock(documents) {
  const entries = documents.map((d, i) => {
    const label = [d.title, d.source && d.source !== d.title ? `(${d.source})` : ''].filter(Boolean).join(' ');
    return `[${i + 1}]${label ? ' ' + label : ''}\n${d.text}`;
  });
  return [DOCUMENTS_HEADER, ...entries].join('\n\n');
}

/** The messages with the documents' context block at the end of the system message (one added when there is none). */
export function withDocumentsInSystem(messages, documents) {
  const block = documentsBlock(documents);
  if (messages[0].role === 'system') return [{ ...messages[0], content: `${messageText(messages[0].content)}\n\n${block}` }, ...messages.slice(1)];
  return [{ role: 'system', content: block }, ...messages];
}

/**
 * The prompt text of a conversation rendered with a chat template (the Jinja source), without a
 * model. Options: addGenerationPrompt (default true), bosToken and eosToken (default ''), tools
 * (OpenAI-style function definitions, given to the template as `tools`; a template without a
 * tools section gets them described in the system message, in toolFormat), toolFormat (the call
 * format, 'hermes', 'llama3', 'granite', 'xml' or 'pythonic'; default: the template's own, toolCallFormat(source); null: the
 * tools are left to the template alone), now (the Date of strftime_now and date_string; default: now),
 * extra (more template variables, e.g. {enable_thinking: false}), documents (see renderPrompt).
 */
export async function renderChatTemplate(source, messages, options = {}) {
  return (await renderPrompt(source, messages, options)).text;
}

/**
 * renderChatTemplate's work, and where the documents went: {text, documentsIn: 'template' (the
 * template's documents variable) | 'system' (a context block in the system message) | null (none given)}.
 * Option documents: strings or {text, title?, source?} (see DOCUMENTS_HEADER).
 */
export async function renderPrompt(source, messages, { documents, ...options } = {}) {
  if (documents === undefined || documents === null || (Array.isArray(documents) && !documents.length))
    return { text: await renderConversation(source, messages, options), documentsIn: null };
  const docs = checkDocuments(documents);
  checkMessages(messages);
  // as with tools: a template that names `documents` and renders differently with them takes them
  if (/\bdocuments\b/.test(source)) {
    const extra = { ...(options.extra || {}), documents: templateDocuments(docs) };
    const text = await renderConversation(source, messages, { ...options, extra });
    if (text !== await renderConversation(source, messages, options)) return { text, documentsIn: 'template' };
  }
  return { text: await renderConversation(source, withDocumentsInSystem(messages, docs), options), documentsIn: 'system' };
}

async function renderConversation(source, messages, { addGenerationPrompt = true, bosToken = '', eosToken = '', tools, toolFormat, now, extra = {} } = {}) {
  if (typeof source !== 'string' || !source) throw invalid('the chat template must be a non-empty string');
  checkMessages(messages);
  const toolList = checkTools(tools);
  if (now === undefined) now = new Date();
  else if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw invalid('now must be a valid Date');
  if (extra === null || typeof extra !== 'object') throw invalid('extra (chat_template_kwargs) must be an object');
  const module = await loadJinja();
  const entry = compileTemplate(module.Template, source);
  const base = {
    ...TEMPLATE_GLOBALS,
    strftime_now: (format) => strftime(now, String(format)),
    date_string: strftime(now, '%d %b %Y'),
    datetime: strftime(now, '%b %d %Y'),
    add_generation_prompt: true,
    bos_token: bosToken,
    eos_token: eosToken,
  };
  if (toolFormat === undefined) toolFormat = toolCallFormat(source);
  else if (toolFormat !== null && !TOOL_FORMATS.includes(toolFormat)) throw invalid(`toolFormat must be one of ${TOOL_FORMATS.join(', ')} or null`);
  const render = (prepared, withTools) => {
    if (prepared[0].role === 'system' && !takesSystemMessage(module, entry, base)) prepared = joinSystemToNext(prepared);
    const context = { ...base, ...extra, messages: prepared, add_generation_prompt: addGenerationPrompt, bos_token: bosToken, eos_token: eosToken };
    if (withTools) context.tools = toolList;
    try {
      return runTemplate(module, entry.template, context);
    } catch (e) {
      if (e instanceof TemplateRaised) throw new WickError('E_TEMPLATE', `the chat template refused the conversation: ${e.message}`);
      throw new WickError('E_TEMPLATE', `the chat template failed: ${e.message}`);
    }
  };
  let prepared = templateMessages(messages, source);
  const toolsInSystem = !!toolList && toolFormat === 'phi4' && SYSTEM_TOOLS.test(source);
  if (toolsInSystem) prepared = withSystemTools(prepared, toolList);
  // a template that drops the assistant's calls (Granite 3.3's) gets them written into the
  // message's text in the family's format, so that the model sees what it called before a result
  if (toolFormat && prepared.some(hasCalls) && !rendersToolCalls(module, entry, base)) prepared = callsAsText(prepared, toolFormat);
  const text = render(prepared, !!toolList);
  // a template with no tools section (llama.cpp's SmolLM3 copy) renders the same with and
  // without them: the model would never learn of the tools, so wick tells it in the system message
  if (!toolList || !toolFormat || toolsInSystem || text !== render(prepared, false)) return text;
  return render(withToolsDescribed(prepared, toolList, toolFormat), true);
}


// @huggingface/jinja renders chat templates. Under Node and with a bundler or an import map the
// bare name resolves; a page without either finds it in the repository's node_modules, in
// dist/jinja/ (`make dist` rewrites the first path), or in the node_modules holding this package.
let jinja = null;
// not a literal new URL(…): a bundler is not to copy these places in, they are looked up at run time
const moduleUrl = (rel) => new URL(rel, import.meta.url).href;
const isJinja = (module) => !!(module?.Template && module.Environment && module.Interpreter);
async function loadJinja() {
  if (jinja) return jinja;
  // by name first, as a literal: a bundler puts the package into the app (as a lazy chunk)
  try {
    jinja = await import('@huggingface/jinja');
    if (isJinja(jinja)) return jinja;
  } catch { /* a page without a bundler or an import map: the places below */ }
  const candidates = [moduleUrl('../node_modules/@huggingface/jinja/dist/index.js'), moduleUrl('../../@huggingface/jinja/dist/index.js')];
  for (const c of candidates) {
    try {
      jinja = await import(/* @vite-ignore */ /* webpackIgnore: true */ c);
      if (isJinja(jinja)) return jinja;
    } catch { /* try the next place */ }
  }
  jinja = null;
  throw new WickError('E_NO_JINJA', 'chat templates need @huggingface/jinja: install it (npm install @huggingface/jinja) so that it is in node_modules beside wick, or map the name "@huggingface/jinja" with an import map, or call Wick.useJinja(module)');
}
/** Supplies @huggingface/jinja (the module object, its shape checked by Wick.useJinja) where it cannot be imported by name. */
export function useJinja(module) {
  jinja = module;
  compiledTemplates.clear();
}
