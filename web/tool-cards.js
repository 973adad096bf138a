// web/tool-cards.js — tools in a chat on the page: the Tools box's JSON read and checked (an error
// says where: the line and column of a JSON syntax error, the path of a definition that is wrong),
// and a tool call the model made shown as a card (the function's name, its arguments
// pretty-printed) rather than as the text the model wrote.
import { el } from './util.js';

// OpenAI's rule for a function's name (the chat APIs that mirror it refuse others)
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_SHAPE = '{"type": "function", "function": {"name": …, "description": …, "parameters": {…}}}';

/** A Tools box that cannot be used: the message says where; offset is the character at fault, if known. */
export class ToolsError extends Error {
  constructor(message, offset = null) {
    super(message);
    this.name = 'ToolsError';
    this.offset = offset;
  }
}

/** 1-based line and column of a character offset. */
function lineColumn(text, offset) {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1).length + 1 };
}

/** The offset of a 1-based line and column. */
function offsetOf(text, line, column) {
  const lines = text.split('\n');
  let offset = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
  return offset + column - 1;
}

/** JSON.parse, with an error that says the line and column (browsers word and place it differently). */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    // Chromium/Node: "… in JSON at position 42 (line 3 column 5)"; Firefox: "JSON.parse: … at line 3 column 5 of the JSON data"
    const position = /position (\d+)/.exec(e.message);
    const lineCol = /line (\d+) column (\d+)/.exec(e.message);
    let offset = null;
    if (position) offset = Number(position[1]);
    else if (lineCol) offset = offsetOf(text, Number(lineCol[1]), Number(lineCol[2]));
    else if (/end of (JSON|data)/i.test(e.message)) offset = text.length;
    const reason = e.message.replace(/^JSON\.parse: /, '').replace(/,? (in JSON )?at (position|line) \d+.*$/s, '');
    if (offset === null) throw new ToolsError(`not JSON: ${reason}`);
    const { line, column } = lineColumn(text, offset);
    throw new ToolsError(`not JSON at line ${line}, column ${column}: ${reason}`, offset);
  }
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The tools a Tools box holds: an array of OpenAI-style function definitions, or undefined when
 * the box is empty (or holds []). Anything else throws a ToolsError naming the place.
 */
export function parseToolsText(text) {
  if (!text.trim()) return undefined;
  const tools = parseJson(text);
  if (!Array.isArray(tools)) throw new ToolsError(`must be a JSON array of tools: [${TOOL_SHAPE}, …]`);
  const names = new Map();
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    if (!isObject(tool)) throw new ToolsError(`${at} must be an object ${TOOL_SHAPE}`);
    if (tool.type !== 'function') throw new ToolsError(`${at}.type must be "function"${tool.type === undefined ? ' (it is missing)' : ` (not ${JSON.stringify(tool.type)})`}`);
    const f = tool.function;
    if (!isObject(f)) throw new ToolsError(`${at}.function must be an object {"name": …, "description": …, "parameters": {…}}`);
    if (typeof f.name !== 'string' || !FUNCTION_NAME.test(f.name))
      throw new ToolsError(`${at}.function.name must be 1 to 64 letters, digits, _ or -${f.name === undefined ? ' (it is missing)' : ` (not ${JSON.stringify(f.name)})`}`);
    if (names.has(f.name)) throw new ToolsError(`${at}.function.name "${f.name}" is already the name of tools[${names.get(f.name)}]`);
    names.set(f.name, i);
    if (f.description !== undefined && typeof f.description !== 'string') throw new ToolsError(`${at}.function.description must be a string`);
    if (f.parameters !== undefined && !isObject(f.parameters)) throw new ToolsError(`${at}.function.parameters must be a JSON schema object, such as {"type": "object", "properties": {…}}`);
  });
  return tools.length ? tools : undefined;
}

/** A tool call as a card: what is called and with which arguments (JSON, indented); the result comes later. */
export function toolCallCard(call) {
  const name = call.function.name;
  let args;
  try {
    args = JSON.stringify(JSON.parse(call.function.arguments), null, 2);
  } catch {
    args = call.function.arguments; // shown as the model wrote it
  }
  return el('section', { className: 'tool-call', 'data-name': name, 'data-call-id': call.id, 'aria-label': `Tool call: ${name}` },
    el('p', { className: 'tool-call-head' }, el('span', { className: 'tool-call-label' }, 'Calls'), ' ', el('code', { className: 'tool-name' }, name)),
    el('pre', { className: 'tool-args', 'aria-label': 'Arguments' }, args),
    el('p', { className: 'tool-call-status' }, 'Waiting for its result.'));
}

/** Marks a card's call as answered. */
export function answerCard(card) {
  card.dataset.answered = 'true';
  card.querySelector('.tool-call-status').textContent = 'Answered: the result follows.';
}
