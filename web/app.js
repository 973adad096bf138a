// web/app.js — the page: pick and load a model, chat or continue text with streamed tokens,
// sampling controls, tools the model may call in a chat (a call shows as a card, the user's next
// message is its result), memory notes (notes.js), stats under each answer, and the "Look inside" panel.
// Everything the model writes is put on the page as text (textContent), never as HTML.
import '../wasm_glue/constants.js'; // globalThis.WickConstants: the engine's defaults for the controls
import { Wick, planToolCalls } from '../wasm_glue/wick.mjs';
import { jsonSchemaToGrammar, JSON_OBJECT_GRAMMAR } from '../wasm_glue/json-schema.mjs';
import { ensureCrossOriginIsolation, controlledByServiceWorker, engineWorkerUrl } from './coi.js';
import { LookInside } from './look-inside.js';
import { parseToolsText, toolCallCard, answerCard } from './tool-cards.js';
import { CATALOGUE, HF, approximateSize, catalogueUrl, mmprojUrl, repositoryUrl, hubFromParam } from './catalogue.js';
import {
  el, formatBytes, formatCount, formatDuration, formatParams, detectFeatures, threadsNote, inspectFile,
  memoryCheck, describeMetadata, RateMeter, progressText,
} from './util.js';

const DEFAULT_MODEL = new URL('../models/stories260K.gguf', import.meta.url).href;
const PROBS_SHOWN = 10;
// A catalogue choice is looked at (its header fetched) once the selection has rested this long,
// so that moving through the list with the arrow keys does not fetch every header on the way.
const CHOOSE_DELAY_MS = 250;
const $ = (id) => document.getElementById(id);

// The sampling controls: [option, label, min, max, step, default, hint]; the defaults are the engine's
const DEFAULTS = globalThis.WickConstants.GENERATION_DEFAULTS;
const SAMPLING = [
  ['temperature', 'Temperature', 0, 2, 0.05, DEFAULTS.temperature, 'Divides the logits before softmax: 0 always takes the top token, above 1 flattens the odds.'],
  ['topK', 'Top-k', 0, 200, 1, DEFAULTS.top_k, 'Keep only the k most likely tokens (0: all).'],
  ['topP', 'Top-p', 0.05, 1, 0.01, DEFAULTS.top_p, 'Keep the smallest set of tokens whose probabilities add up to p.'],
  ['minP', 'Min-p', 0, 1, 0.01, DEFAULTS.min_p, 'Drop tokens less likely than min-p times the top one.'],
  ['repeatPenalty', 'Repetition penalty', 1, 2, 0.01, DEFAULTS.repeat_penalty, `Makes tokens seen in the last ${DEFAULTS.repeat_last_n} less likely (1: off).`],
  ['maxTokens', 'Maximum tokens', 1, 8192, 1, 256, 'Stop after this many new tokens.'],
];

const state = {
  features: null,
  isolation: null,
  engine: null,
  loading: null,      // AbortController of the load in progress
  generating: null,   // AbortController of the generation in progress
  source: null,       // {kind, source, label, bytes, metadata, entry?} of the chosen model
  checks: 0,          // how many looks at a source were started: a slower, older one is dropped
  hub: HF,            // where the catalogue's files are (?hf= replaces Hugging Face)
  chooseTimer: 0,     // the pending look at a catalogue entry
  messages: [],       // chat history: {role, content} (and {role: 'assistant', tool_calls}, {role: 'tool', tool_call_id})
  pendingCalls: [],   // the last answer's tool calls still waiting for a result: {call, card}
  prompt: '',         // the text of the last chat prompt, as the template rendered it
  last: null,         // what Regenerate repeats: {kind: 'chat'|'completion', prompt?, view}
  modelKey: null,     // the loaded model's key for saved sessions (web/sessions.js)
  conversation: null, // this chat's id, and the key of its saved session once written
  sessionKey: null,
  saving: null,       // the save in progress (the next generation waits for it)
  context: null,      // the last chat turn's assembled prompt (web/prompt-parts.js): messages, parts, tokens, budget
  summary: null,      // {text, covers}: the model's summary of the first `covers` messages, once some were summarized
  notes: null,        // web/notes.js's Notes, once loaded (after start)
  retrieve: null,     // async (new message) → chunks for its prompt [{text, source, score}], or null: no retrieval
  sourcesView: null,  // (the chunks a prompt kept) → the answer's list of sources (web/documents.js), or null
  documents: null,    // web/documents.js's Documents, once loaded (after start)
  tray: null,         // web/images.js's ImageTray: the images of the next message (once a vision model loaded)
};
// why the image controls are off: the loaded model has no image encoder
const NO_VISION = 'This model cannot see images: load a vision model with its mmproj (image encoder), e.g. SmolVLM from the list';
let noteTools = null; // web/notes.js, imported after the page started
let imagesApi = null; // web/images.js, imported once a model with an image encoder loads

/** The Tools box's tools, plus the remember tool when the user lets the model propose notes. */
function withRemember(tools) {
  if (!state.notes?.offersRemember()) return tools;
  return [...(tools || []).filter((t) => t.function.name !== 'remember'), noteTools.REMEMBER_TOOL];
}
const records = new WeakMap(); // token span → its record

// ---- small UI helpers ----

function setState(s) { document.body.dataset.state = s; updateButtons(); }

function notice(kind, text) {
  const item = el('p', { className: `notice ${kind}`, role: kind === 'error' ? 'alert' : null }, text);
  $('notices').append(item);
  return item;
}

function updateButtons() {
  const busy = !!state.generating;
  const ready = !!state.engine && !state.loading;
  $('send').disabled = !ready || busy;
  $('stop').disabled = !busy;
  // not between the results of several calls (the answer they are for would be asked again)
  $('regenerate').disabled = !ready || busy || !state.last || (state.last.kind === 'chat' && state.messages.at(-1)?.role === 'tool');
  $('load-button').disabled = !!state.loading || !state.features?.simd;
  $('cancel-load').hidden = !state.loading;
}

function mode() { return document.querySelector('input[name=mode]:checked').value; }

function settings() {
  const s = {};
  for (const [key] of SAMPLING) s[key] = Number($(`s-${key}`).value);
  s.seed = $('seed-random').checked ? Math.floor(Math.random() * 2 ** 32) : Math.max(0, Math.floor(Number($('seed').value) || 0));
  return s;
}

/** The grammar the Format control asks for ('' for free text); a bad schema throws, saying where. */
function formatGrammar() {
  const format = document.querySelector('input[name=format]:checked').value;
  if (format === 'json') return JSON_OBJECT_GRAMMAR;
  if (format !== 'schema') return '';
  let schema;
  try {
    schema = JSON.parse($('format-schema').value);
  } catch (e) {
    throw new Error(`the schema is not JSON: ${e.message}`);
  }
  return jsonSchemaToGrammar(schema);
}

function buildSamplingControls() {
  const box = $('sampling');
  for (const [key, label, min, max, step, value, hint] of SAMPLING) {
    const input = el('input', { type: 'range', id: `s-${key}`, min, max, step, value, 'aria-describedby': `h-${key}` });
    const out = el('output', { id: `o-${key}`, for: `s-${key}` });
    const show = () => {
      const v = Number(input.value);
      let text = step < 1 ? v.toFixed(2) : String(v);
      if (key === 'topK' && v === 0) text = 'off';
      if (key === 'repeatPenalty' && v === 1) text = 'off';
      if (key === 'temperature' && v === 0) text = '0 (greedy)';
      out.textContent = text;
      input.setAttribute('aria-valuetext', text);
    };
    input.addEventListener('input', show);
    show();
    box.append(el('div', { className: 'control' },
      el('div', { className: 'control-head' }, el('label', { for: `s-${key}` }, label), out),
      input,
      el('p', { className: 'hint', id: `h-${key}` }, hint)));
  }
  $('seed-random').addEventListener('change', () => { $('seed').disabled = $('seed-random').checked; });
  for (const r of document.querySelectorAll('input[name=format]'))
    r.addEventListener('change', () => { $('format-schema').hidden = r.value !== 'schema' || !r.checked; });
}

// ---- the log ----

function stickToBottom(fn) {
  const log = $('log');
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  fn();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

/** The view of one answer: its tokens (each a span with its record), a status and the stats line. */
function answerView(kind, promptText) {
  const tokens = el('div', { className: 'tokens', tabIndex: 0, role: 'group', 'aria-label': 'Answer (← → inspect its tokens)' });
  if (kind === 'completion') tokens.append(el('span', { className: 'prompt-text' }, promptText));
  const stats = el('p', { className: 'stats' });
  const box = el('article', { className: `msg ${kind === 'chat' ? 'assistant' : 'completion'}`, 'aria-busy': 'true' },
    el('h3', { className: 'visually-hidden' }, kind === 'chat' ? 'Answer' : 'Completion'), tokens, stats);
  return { box, tokens, stats, text: '', records: [] };
}

/** A user message: its images (content parts, web/images.js) as thumbnails, then its text. */
function userView(content) {
  const parts = Array.isArray(content) ? content : [{ type: 'text', text: content ?? '' }];
  const images = parts.filter((p) => p.type === 'image_url' && /^(data:image\/|blob:)/.test(p.image_url?.url))
    .map((p, i) => el('img', { className: 'msg-image', src: p.image_url.url, alt: `Image ${i + 1}` }));
  return el('article', { className: 'msg user' }, el('h3', { className: 'visually-hidden' }, 'You'),
    images.length ? el('div', { className: 'msg-images' }, images) : null,
    el('div', { className: 'user-text' }, parts.filter((p) => p.type === 'text').map((p) => p.text).join('')));
}

function tokenSpan(record) {
  const span = el('span', { className: record.shifted ? 'tok after-shift' : 'tok' }, record.text);
  if (record.shifted) span.title = `The context window was full: ${record.shifted} older tokens were dropped before this one` +
    (record.reevaluated ? ` (the model's recurrent state cannot drop them: the ${record.reevaluated} kept tokens were evaluated again)` : '');
  records.set(span, record);
  return span;
}

function selectToken(span) {
  for (const s of document.querySelectorAll('.tok.selected')) s.classList.remove('selected');
  span.classList.add('selected');
  lookInside.pin(records.get(span));
}

function statsText(done, run) {
  const t = done.timings;
  if (!t) return `Stopped before the first token. ${run.threadsText}`;
  const bits = [];
  if (t.timeToFirstTokenMs !== null) bits.push(`first token after ${formatDuration(t.timeToFirstTokenMs)}`);
  bits.push(`prefill ${formatCount(t.promptEvalTokens)} tok${t.prefillTokensPerSecond ? ` at ${formatCount(t.prefillTokensPerSecond)} tok/s` : ''}` +
    (t.cachedPromptTokens ? ` (+${formatCount(t.cachedPromptTokens)} cached${t.promptFromState ? `, ${formatCount(t.promptFromState)} from a saved state` : ''})` : ''));
  bits.push(`decode ${formatCount(t.generatedTokens)} tok${t.decodeTokensPerSecond ? ` at ${formatCount(t.decodeTokensPerSecond)} tok/s` : ''}`);
  bits.push(`context ${formatCount(t.contextUsed)} / ${formatCount(t.contextSize)}${t.contextShiftedTokens ? ` (${formatCount(t.contextShiftedTokens)} dropped)` : ''}`);
  bits.push(`KV cache ${formatBytes((run.kvBytes * t.contextUsed) / t.contextSize)} of ${formatBytes(run.kvBytes)}`);
  bits.push(run.threadsText);
  bits.push(`seed ${run.settings.seed}`);
  bits.push({ eog: 'end of text', length: 'length limit', stop: 'stop string', grammar: 'format complete', abort: 'stopped' }[done.finishReason] || done.finishReason);
  return bits.join(' · ');
}

// ---- tools (chat mode) ----

function showToolsError(e) {
  $('tools-error').hidden = !e;
  $('tools-error').textContent = e ? e.message : '';
  if (e) $('tools').setAttribute('aria-invalid', 'true');
  else $('tools').removeAttribute('aria-invalid');
}

/** The Tool choice list: auto, required, none, then one entry per function of the Tools box. */
function refreshToolChoice(tools = []) {
  const select = $('tool-choice');
  const was = select.value;
  for (const option of [...select.options]) if (option.value.startsWith('function:')) option.remove();
  for (const t of tools) select.append(el('option', { value: `function:${t.function.name}` }, `${t.function.name}: it calls this one`));
  select.value = [...select.options].some((o) => o.value === was) ? was : 'auto';
}

/** Reads the Tools box as the user types: a box that is right updates the choices; errors show on change. */
function checkToolsBox(showError) {
  try {
    refreshToolChoice(withRemember(parseToolsText($('tools').value)));
    showToolsError(null);
  } catch (e) {
    if (showError) showToolsError(e);
  }
}

/** How this chat turn uses the Tools box: {list, choice} for the request (planToolCalls checks
 *  them here, to show what is wrong beside the box), or null without tools. */
function toolsPlan(engine, formatGrammarText) {
  let tools;
  try {
    tools = withRemember(parseToolsText($('tools').value));
  } catch (e) {
    showToolsError(e);
    throw controlError('Tools', e, 'tools');
  }
  refreshToolChoice(tools);
  $('tools-note')?.remove();
  if (!tools) return null;
  const value = $('tool-choice').value;
  const choice = value.startsWith('function:') ? { type: 'function', function: { name: value.slice('function:'.length) } } : value;
  let plan;
  try {
    plan = planToolCalls({ tools, tool_choice: choice }, engine.info.chatTemplate, engine.info.architecture);
  } catch (e) {
    showToolsError(e);
    throw controlError('Tools', e, 'tools');
  }
  if (plan.grammar && formatGrammarText) throw controlError('Tools', new Error('a tool choice that forces a call and a Format other than free text cannot go together: choose one'), 'tools');
  showToolsError(null);
  if (plan.render && !plan.format) {
    notice('warn', "This model's chat template has no tool-call format wick knows (Hermes <tool_call>, Llama 3 JSON): the tools are in the prompt, but a call shows as plain text.").id = 'tools-note';
  }
  return { list: tools, choice };
}

/** The composer says whose result the next message is, while calls wait for one. */
function showToolReply() {
  const next = mode() === 'chat' ? state.pendingCalls[0] : null;
  const note = $('tool-reply-note');
  note.hidden = !next;
  if (!next) { note.textContent = ''; applyPlaceholder(); return; }
  const name = next.call.function.name;
  const more = state.pendingCalls.length - 1;
  note.textContent = `Your next message is the result of ${name}${more ? ` (then ${more} more call${more > 1 ? 's' : ''})` : ''}.`;
  $('prompt').placeholder = `The result of ${name}, e.g. {"temperature": 21}`;
}

/** Puts a chat answer into the conversation: as tool calls (cards waiting for results) when it is one, else as text. */
function finishChatAnswer(view, done) {
  if (!done.calls?.length) {
    state.messages.push({ role: 'assistant', content: view.text });
    return;
  }
  const content = done.content.trim();
  state.messages.push({ role: 'assistant', content: content || null, tool_calls: done.calls });
  const cards = done.calls.map(toolCallCard);
  const asked = state.messages.at(-1);
  // a remember call waits for the user's confirmation on its card, not for a message
  const remember = (call) => call.function.name === 'remember' && state.notes?.offersRemember();
  done.calls.forEach((call, i) => remember(call) && state.notes.confirmCard(cards[i], call, (result) => {
    let at = state.messages.indexOf(asked) + 1;
    while (state.messages[at]?.role === 'tool') at++;
    state.messages.splice(at, 0, { role: 'tool', tool_call_id: call.id, content: result });
    updateButtons();
  }));
  // the model's own text (and its tokens, for Look inside) stays, folded away under the cards
  const raw = el('details', { className: 'raw-reply' }, el('summary', {}, 'The reply as the model wrote it'));
  view.tokens.replaceWith(...(content ? [el('div', { className: 'reply-text' }, content)] : []), ...cards, raw);
  raw.append(view.tokens);
  view.box.dataset.toolCalls = String(done.calls.length);
  state.pendingCalls = done.calls.map((call, i) => ({ call, card: cards[i] })).filter((p) => !remember(p.call));
  showToolReply();
}

function toolResultView(call, text) {
  return el('article', { className: 'msg tool', 'data-call-id': call.id },
    el('h3', {}, `Result of ${call.function.name}`), el('div', { className: 'tool-result-text' }, text));
}

// ---- generating ----

/** A completion of the prompt's tokens: generate()'s chunks. */
const completionStream = (tokens) => (run, signal) =>
  state.engine.generate(tokens, { ...run.settings, grammar: run.grammar, probs: PROBS_SHOWN, signal });

/**
 * The conversation's next answer through chat.completions.create, which renders the template,
 * keeps a hybrid model's recurrent state where the conversation ends and parses tool calls:
 * yields the engine's pieces (the chunks' `wick` extension), then the final record with the
 * answer's content and tool calls.
 */
async function* chatStream(run, signal) {
  const s = run.settings;
  // the whole prompt within the context: system prompt, notes, history, the new message (web/prompt-parts.js)
  const parts = await import('./prompt-parts.js');
  const overflow = document.querySelector('input[name=overflow]:checked')?.value || 'drop';
  const context = await parts.assembleTurn({
    engine: state.engine, system: $('system-prompt').value.trim(), notes: state.notes?.active() ?? [], conversation: state.messages,
    // retrieved chunks [{text, source, score}]: state.retrieve is where retrieval plugs in (issue 29)
    chunks: (await state.retrieve?.(state.messages.at(-1))) ?? [],
    summary: state.summary, overflow, tools: run.tools?.list, toolChoice: run.tools?.choice, maxTokens: s.maxTokens,
  });
  if (context.summary?.fresh) state.summary = { text: context.summary.text, covers: context.summary.covers };
  state.context = context;
  run.sources = context.chunks ?? [];
  parts.showParts($('prompt-parts'), context);
  const messages = context.messages;
  const request = {
    messages, stream: true, signal, logprobs: true, top_logprobs: PROBS_SHOWN, max_tokens: s.maxTokens, seed: s.seed,
    temperature: s.temperature, top_k: s.topK, top_p: s.topP, min_p: s.minP, repeat_penalty: s.repeatPenalty,
  };
  if (run.grammar) request.grammar = run.grammar;
  if (context.documents) request.documents = context.documents;
  if (run.tools) Object.assign(request, { tools: run.tools.list, tool_choice: run.tools.choice });
  // the prompt text this request renders, for a reader of the page (window.wickPage.state.prompt)
  // (replaced by the engine's own once the answer is done: it shows where each image went)
  state.prompt = await state.engine.applyChatTemplate(messages, { tools: run.tools?.choice === 'none' ? undefined : run.tools?.list, documents: context.documents }).catch(() => '');
  let content = '';
  const calls = [];
  for await (const c of await state.engine.chat.completions.create(request)) {
    const delta = c.choices[0].delta;
    content += delta.content || '';
    // a call comes whole at the end of the stream: its id and name, then its arguments
    for (const d of delta.tool_calls || []) {
      const slot = (calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (d.id) slot.id = d.id;
      slot.function.name += d.function?.name || '';
      slot.function.arguments += d.function?.arguments || '';
    }
    if (c.wick && !c.wick.done) yield c.wick;
    if (c.choices[0].finish_reason) { parts.showParts($('prompt-parts'), context, c.timings); state.prompt = c.wick?.prompt ?? state.prompt; }
    if (c.choices[0].finish_reason) yield { ...c.wick, done: true, finishReason: c.wick?.finishReason ?? c.choices[0].finish_reason, timings: c.timings, content, calls };
  }
}

async function generate(view, run, open, promptTokens = null) {
  const engine = state.engine;
  const controller = new AbortController();
  state.generating = controller;
  setState('generating');
  await state.saving; // the last reply's state is written before the cache moves on
  lookInside.startRun({ promptTokens, contextSize: engine.info.contextSize, settings: run.settings, kvBytes: run.kvBytes });
  let done = null, error = null;
  // Tokens can come faster than the screen refreshes: they are put on the page once a frame.
  const pending = [];
  let frame = 0;
  const flush = () => {
    frame = 0;
    if (!pending.length) return;
    stickToBottom(() => view.tokens.append(...pending.map(tokenSpan)));
    pending.length = 0;
  };
  try {
    for await (const chunk of open(run, controller.signal)) {
      if (chunk.done) { done = chunk; break; }
      const record = { index: view.records.length, text: chunk.text, tokenCount: chunk.tokens.length, probs: chunk.probs, shifted: chunk.shifted || 0, reevaluated: chunk.reevaluated || 0, settings: run.settings, promptTokens: chunk.promptTokens };
      view.records.push(record);
      view.text += record.text;
      pending.push(record);
      frame ||= requestAnimationFrame(flush);
      lookInside.onToken(record);
    }
  } catch (e) {
    error = e;
    view.box.append(el('p', { className: 'msg-error', role: 'alert' }, `${e.code ? `${e.code}: ` : ''}${e.message}`));
    if (e.code === 'E_GPU') {
      // the engine went on on the CPU: the conversation stays, the next answer runs there
      notice('warn', `The GPU stopped working (${e.message}). The model now runs on the CPU; send again to continue.`);
      $('model-status').dataset.device = engine.device.type;
      $('model-status').textContent = $('model-status').textContent.replace(/ · GPU: .*$/, ` · ${deviceText(engine.device)}`);
    }
  } finally {
    cancelAnimationFrame(frame);
    flush();
    state.generating = null;
    view.box.setAttribute('aria-busy', 'false');
    done ||= { done: true, finishReason: 'abort', timings: null, error };
    lookInside.finishRun(done);
    view.stats.textContent = statsText(done, run);
    if (done.timings) {
      view.stats.dataset.decodeTps = String(done.timings.decodeTokensPerSecond ?? 0);
      view.stats.dataset.ttftMs = String(done.timings.timeToFirstTokenMs ?? 0);
      view.stats.dataset.promptTokens = String(done.timings.promptTokens);
      view.stats.dataset.promptEvalTokens = String(done.timings.promptEvalTokens);
      view.stats.dataset.promptFromState = String(done.timings.promptFromState ?? 0);
    }
    view.stats.dataset.finish = done.finishReason;
    // the retrieved chunks the prompt kept: the answer's sources, each opening on its text
    const sources = run.sources?.length ? state.sourcesView?.(run.sources) : null;
    if (sources) view.stats.before(sources);
    view.box.dataset.done = 'true';
    setState('ready');
  }
  return done;
}

/** Where the forward pass runs, and why not on the GPU, in words. */
function deviceText(d) {
  if (d.type === 'gpu') return `GPU: ${d.adapter}${d.software ? ' (a software adapter)' : ''}`;
  return d.reason === 'asked for' ? 'CPU' : `CPU (not the GPU: ${d.reason})`;
}

/** How many threads an engine computes with, in words. */
function threadsText(e) {
  return e.multiThreaded ? `${e.threads} thread${e.threads > 1 ? 's' : ''}` : '1 thread (single-threaded build)';
}

/** runInfo(kind), or null with the reason shown (a Format schema that does not convert, a Tools box that is wrong). */
function runInfoOrNotice(kind) {
  try {
    return runInfo(kind);
  } catch (e) {
    notice('error', e.message);
    if (e.field === 'tools') {
      // the Tools box, with the caret where its JSON breaks
      $('settings-panel').open = true;
      $('tools').focus();
      if (e.offset !== null && e.offset !== undefined) $('tools').setSelectionRange(e.offset, e.offset);
    }
    return null;
  }
}

/** An error of one control, its name in front ("Format: …"); field names the control to show. */
function controlError(label, e, field) {
  const error = new Error(`${label}: ${e.message}`);
  error.field = field;
  error.offset = e.offset ?? null;
  return error;
}

function runInfo(kind) {
  const e = state.engine;
  const run = { settings: settings(), grammar: '', tools: null, kvBytes: e.info.kvBytes, threadsText: threadsText(e) };
  try {
    run.grammar = formatGrammar();
  } catch (err) {
    throw controlError('Format', err, 'format');
  }
  if (kind === 'chat') run.tools = toolsPlan(e, run.grammar);
  return run;
}

async function send(text) {
  if (!state.engine || state.generating) return;
  const kind = mode();
  // while the last answer's tool calls wait for results, a chat message is the next one's result
  const answering = kind === 'chat' && state.pendingCalls.length > 0;
  const withImages = kind === 'chat' && !answering && state.tray?.images.length > 0;
  if (!text.trim() && kind === 'chat' && !withImages) return;
  const run = runInfoOrNotice(kind);
  if (!run) return;
  let view, tokens, images = [];
  try {
    if (kind === 'chat') {
      if (answering) {
        const { call, card } = state.pendingCalls.shift();
        state.messages.push({ role: 'tool', tool_call_id: call.id, content: text });
        answerCard(card);
        stickToBottom(() => $('log').append(toolResultView(call, text)));
        $('prompt').value = '';
        showToolReply();
        if (state.pendingCalls.length) { updateButtons(); return; } // the other calls' results come first
      } else {
        images = withImages ? state.tray.take() : [];
        const content = images.length ? imagesApi.userContent(text, images) : text;
        state.messages.push({ role: 'user', content });
        stickToBottom(() => $('log').append(userView(content)));
        $('prompt').value = '';
      }
      view = answerView('chat');
      stickToBottom(() => $('log').append(view.box));
    } else {
      view = answerView('completion', text);
      stickToBottom(() => $('log').append(view.box));
      tokens = await state.engine.tokenize(text, { addBos: true });
    }
  } catch (e) {
    if (kind === 'chat' && !answering) state.messages.pop();
    (view?.box || $('log')).append(el('p', { className: 'msg-error', role: 'alert' }, `${e.code ? `${e.code}: ` : ''}${e.message}`));
    view?.box.setAttribute('aria-busy', 'false');
    return;
  }
  state.last = { kind, prompt: text, view };
  if (kind === 'chat') {
    const done = await generate(view, run, chatStream);
    // a request refused before any token (a template that fails): the message is not kept, its images go back to the tray
    if (done.error && !view.records.length && !answering) { state.messages.pop(); state.tray?.restore(images); }
    else { finishChatAnswer(view, done); saveConversation(); }
  } else await generate(view, run, completionStream(tokens), tokens.length);
  updateButtons();
}

async function regenerate() {
  const last = state.last;
  if (!last || !state.engine || state.generating) return;
  const run = runInfoOrNotice(last.kind);
  if (!run) return;
  const fresh = answerView(last.kind, last.prompt);
  last.view.box.replaceWith(fresh.box);
  last.view = fresh;
  if (last.kind === 'chat') {
    if (state.messages.at(-1)?.role === 'assistant') state.messages.pop();
    state.pendingCalls = [];
    showToolReply();
    const done = await generate(fresh, run, chatStream);
    if (!done.error || fresh.records.length) { finishChatAnswer(fresh, done); saveConversation(); }
  } else {
    let tokens;
    try {
      tokens = await state.engine.tokenize(last.prompt, { addBos: true });
    } catch (e) {
      fresh.box.append(el('p', { className: 'msg-error', role: 'alert' }, e.message));
      return;
    }
    await generate(fresh, run, completionStream(tokens), tokens.length);
  }
  updateButtons();
}

function stop() {
  state.generating?.abort();
}

function newConversation() {
  stop();
  leaveConversation();
  state.messages = [];
  state.pendingCalls = [];
  state.last = null;
  state.summary = null;
  $('log').replaceChildren();
  showToolReply();
  updateButtons();
}

// ---- choosing and loading a model ----

function sourceKind() { return document.querySelector('input[name=source]:checked').value; }

function showSourceFields() {
  const kind = sourceKind();
  $('catalogue-field').hidden = kind !== 'catalogue';
  $('url-field').hidden = kind !== 'url';
  $('file-field').hidden = kind !== 'file';
}

// ---- the catalogue of popular files ----

function chosenEntry() {
  const input = document.querySelector('input[name=catalogue-entry]:checked');
  return input ? CATALOGUE.find((e) => e.id === input.value) : null;
}

/** One radio button per catalogue entry: name and approximate size, then family, parameters and quantization. */
function buildCatalogue() {
  $('catalogue-list').replaceChildren(...CATALOGUE.map((entry) => {
    // a per-layer-embedding model (Gemma 4, 3n) is named by its effective size: say both
    const params = `${formatParams(entry.params)} parameters${entry.effectiveParams ? ` (${formatParams(entry.effectiveParams)} effective)` : ''}`;
    const input = el('input', { type: 'radio', name: 'catalogue-entry', value: entry.id, 'data-family': entry.family, 'data-url': catalogueUrl(entry, state.hub),
      'data-mmproj': mmprojUrl(entry, state.hub) });
    const about = (bytes) => [el('span', { 'aria-hidden': 'true' }, '≈ '), el('span', { className: 'visually-hidden' }, 'about '), approximateSize(bytes)];
    input.addEventListener('change', chooseEntry);
    return el('label', { className: 'entry' }, input,
      el('span', { className: 'entry-text' },
        el('span', { className: 'entry-head' },
          el('span', { className: 'entry-name' }, entry.name), ' ',
          el('span', { className: 'entry-size' }, about(entry.bytes)),
          entry.mmproj ? el('span', { className: 'entry-mmproj' }, ' + ', about(entry.mmproj.bytes), ' image encoder') : null),
        ' ', el('span', { className: 'entry-facts' }, `${entry.family} · ${params} · ${entry.quant}${entry.mmproj ? ` · sees images (${entry.mmproj.projector})` : ''}`,
          el('span', { className: 'entry-kept', hidden: true }, ' · kept on this device'))));
  }));
  if (state.hub !== HF) $('catalogue-hint').append(` Files come from ${state.hub} (set by ?hf= in the address), not from Hugging Face.`);
}

/** A catalogue entry was chosen: say what it is at once, look at its header once the choice rests. */
function chooseEntry() {
  const entry = chosenEntry();
  if (!entry) return;
  $('catalogue-detail').replaceChildren(`${entry.file}${entry.mmproj ? ` and ${entry.mmproj.file}` : ''} from `,
    el('a', { href: repositoryUrl(entry, state.hub), target: '_blank', rel: 'noopener' }, entry.repo));
  clearTimeout(state.chooseTimer);
  state.chooseTimer = setTimeout(checkSource, CHOOSE_DELAY_MS);
}

/** The model's training context (from its GGUF metadata), if known. */
function trainedContext(metadata) {
  const arch = metadata?.['general.architecture'];
  const n = Number(metadata?.[`${arch}.context_length`]);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

// A model trained on a short window (stories260K: 128 tokens) gets that window, so what it
// writes stays in the range it learned and the context gauge shows the window filling; others
// get the glue's default (the training context clamped to 2048…4096).
const SHORT_CONTEXT = 2048;

function loadOptions(metadata = state.source?.metadata) {
  const trained = trainedContext(metadata);
  const ctx = Number($('ctx-size').value) || (trained && trained < SHORT_CONTEXT ? trained : 0);
  const threads = Math.max(1, Math.min(8, Number($('threads').value) || Wick.defaultThreads()));
  const device = $('device')?.value || 'auto';
  // choosing the GPU by hand takes a software adapter too (slow, but what was asked for)
  return { contextSize: ctx, threads, device, gpuAllowSoftware: device === 'gpu' };
}

/** The chosen source, looked at (size, metadata, memory) without loading it. */
/** The network went away or came back: say what still works. */
function showNetwork() {
  const offline = globalThis.navigator?.onLine === false;
  document.body.dataset.network = offline ? 'offline' : 'online';
  $('offline-note')?.remove();
  if (offline) {
    notice('warn', 'You are offline. Models kept on this device (marked “kept on this device”, and listed under Kept for offline use) still load and run; others need the network.').id = 'offline-note';
  }
}

/** Marks the models whose whole file is kept here, so they are known to work offline. */
function markKept() {
  const kept = state.kept || new Set();
  for (const input of document.querySelectorAll('input[name=catalogue-entry]')) {
    const label = input.closest('.entry');
    const isKept = kept.has(input.dataset.url) && (!input.dataset.mmproj || kept.has(input.dataset.mmproj));
    label.dataset.kept = String(isKept);
    label.querySelector('.entry-kept').hidden = !isKept;
  }
  $('default-label').closest('label').dataset.kept = String(kept.has(DEFAULT_MODEL));
}

/** A URL source that cannot be used now: offline and not kept (null when it can). */
function offlineRefusal(chosen) {
  if (chosen.kind === 'file' || globalThis.navigator?.onLine !== false) return null;
  let url;
  try { url = [chosen.source, chosen.mmproj?.source].filter(Boolean).map((u) => new URL(u, location.href).href); } catch { return null; }
  if (url.every((u) => state.kept?.has(u))) return null;
  return `You are offline and ${chosen.label} is not kept on this device: it can be downloaded once the network is back. The models marked “kept on this device” work offline.`;
}

async function checkSource() {
  clearTimeout(state.chooseTimer);
  const check = ++state.checks;
  const kind = sourceKind();
  const box = $('model-check');
  let chosen;
  if (kind === 'default') chosen = { kind, source: DEFAULT_MODEL, label: 'stories260K' };
  else if (kind === 'catalogue') {
    const entry = chosenEntry();
    if (!entry) { box.replaceChildren(el('p', { className: 'hint' }, 'Choose a model from the list.')); state.source = null; return null; }
    chosen = { kind, source: catalogueUrl(entry, state.hub), label: entry.file, entry, mmproj: entry.mmproj && { source: mmprojUrl(entry, state.hub), label: entry.mmproj.file } };
  } else if (kind === 'url') {
    const url = $('model-url').value.trim();
    if (!url) { box.replaceChildren(el('p', { className: 'hint' }, 'Enter the URL of a .gguf file.')); state.source = null; return null; }
    const label = (u) => u.split(/[?#]/)[0].split('/').pop() || u;
    const mmproj = $('mmproj-url').value.trim();
    chosen = { kind, source: url, label: label(url), mmproj: mmproj && { source: mmproj, label: label(mmproj) } };
  } else {
    const file = state.droppedFile || $('model-file').files[0];
    if (!file) { box.replaceChildren(el('p', { className: 'hint' }, 'Choose a .gguf file.')); state.source = null; return null; }
    const mmproj = $('mmproj-file').files[0];
    chosen = { kind, source: file, label: file.name, mmproj: mmproj && { source: mmproj, label: mmproj.name } };
  }
  const refusal = offlineRefusal(chosen);
  if (refusal) {
    state.source = null;
    box.replaceChildren(el('p', { className: 'memory error offline', role: 'alert' }, refusal));
    return null;
  }
  box.replaceChildren(el('p', { className: 'hint' }, `Looking at ${chosen.label}…`));
  try {
    const look = (source) => (kind === 'file' ? inspectFile(source) : Wick.inspect(source));
    // the image encoder's header too: its exact size and projector
    const [head, proj] = await Promise.all([look(chosen.source), chosen.mmproj && look(chosen.mmproj.source)]);
    if (check !== state.checks) return null; // another choice was made meanwhile
    const { contextSize, threads } = loadOptions(head.metadata);
    chosen.bytes = head.bytes;
    chosen.metadata = head.metadata;
    if (proj) Object.assign(chosen.mmproj, { bytes: proj.bytes, projector: proj.metadata['clip.projector_type'] });
    chosen.check = memoryCheck({ bytes: head.bytes, mmprojBytes: proj?.bytes, metadata: head.metadata, tables: head.tables, contextSize, threads }, state.features);
    const embedder = state.documents?.embedderBytes() || 0;
    if (embedder && chosen.check.level !== 'error') {
      const both = chosen.check.needed + embedder;
      chosen.check = { ...chosen.check, message: `${chosen.check.message} With the embedding model loaded (about ${formatBytes(embedder)}), both take about ${formatBytes(both)}.` };
      const device = state.features?.deviceMemoryGiB;
      if (device && both > device * 2 ** 29 && chosen.check.level === 'ok') chosen.check.level = 'warn';
    }
    if (chosen.check.level !== 'error' && kind !== 'file') {
      const room = await storageRoom(chosen.source, head.bytes + (proj?.bytes || 0));
      if (check !== state.checks) return null;
      if (room) chosen.check = { ...chosen.check, level: 'error', message: room };
    }
    state.source = chosen;
    const params = formatParams(Number(head.metadata['general.parameter_count']));
    box.replaceChildren(
      el('p', { className: 'model-facts' }, `${chosen.label}: ${formatBytes(head.bytes)}${params ? ` · ${params} parameters` : ''}`),
      ...(proj ? [el('p', { className: 'model-facts mmproj-facts' }, `${chosen.mmproj.label}: ${formatBytes(proj.bytes)} · image encoder${chosen.mmproj.projector ? ` (${chosen.mmproj.projector})` : ''}`)] : []),
      el('p', { className: 'hint' }, describeMetadata(head.metadata)),
      el('p', { className: `memory ${chosen.check.level}`, role: chosen.check.level === 'ok' ? null : 'alert' }, chosen.check.message));
    return chosen;
  } catch (e) {
    if (check !== state.checks) return null;
    state.source = null;
    // the network went away while looking: say so rather than show a fetch error
    const message = offlineRefusal(chosen) || `Cannot use ${chosen.label}: ${e.message}`;
    box.replaceChildren(el('p', { className: 'memory error', role: 'alert' }, message));
    return null;
  }
}

async function loadChosen() {
  if (state.loading) return;
  // a new engine would get the new version's worker and wasm under this page's older glue
  if (state.updateReady) { $('update-note')?.scrollIntoView({ block: 'nearest' }); $('model-status').textContent = 'Reload the page (a new version is ready) to load another model.'; return; }
  const looked = state.source;
  const current = looked && looked.kind === sourceKind() && (looked.kind !== 'catalogue' || looked.entry === chosenEntry());
  const chosen = current ? looked : await checkSource();
  if (!chosen) return;
  if (chosen.check?.level === 'error') return;
  stop();
  const controller = new AbortController();
  state.loading = controller;
  setState('loading');
  const meter = new RateMeter();
  $('progress').hidden = false;
  $('progress-bar').value = 0;
  $('progress-text').textContent = 'Starting the engine…';
  $('model-status').textContent = '';
  const t0 = performance.now();
  const previous = state.engine;
  state.engine = null;
  applyImageControls();
  await previous?.unload().catch(() => {});
  const { contextSize, threads, device, gpuAllowSoftware } = loadOptions();
  const options = {
    contextSize,
    threads,
    device,
    gpuAllowSoftware,
    signal: controller.signal,
    onProgress: (p) => {
      if (p.phase === 'download') meter.add(p.loaded - (p.resumed || 0)); // kept bytes read back are no download speed
      $('progress-bar').value = p.progress;
      $('progress-text').textContent = progressText(p, meter);
    },
  };
  if (controlledByServiceWorker()) options.workerUrl = engineWorkerUrl();
  if (chosen.mmproj) options.mmproj = chosen.mmproj.source;
  try {
    let engine;
    try {
      engine = await Wick.load(chosen.source, options);
    } catch (e) {
      // a browser that offers threads but cannot start the pthreads build: one thread still works
      if (e.code !== 'E_WORKER' || !state.features.threadsPossible || controller.signal.aborted) throw e;
      notice('warn', `The multi-threaded engine did not start (${e.message}); using one thread.`);
      engine = await Wick.load(chosen.source, { ...options, multiThreaded: false, workerUrl: undefined });
    }
    state.engine = engine;
    const info = engine.info;
    await applyVision(info);
    state.messages = [];
    state.pendingCalls = [];
    state.last = null;
    await restoreConversation(engine, chosen).catch((e) => notice('warn', `The saved conversation could not be restored: ${e.message}`));
    state.summary = null;
    const params = formatParams(info.n_params);
    const name = info.name && info.name !== info.architecture ? info.name : chosen.label;
    $('model-status').textContent = `Loaded ${name} (${params ? `${params} parameters, ` : ''}${info.architecture}) in ` +
      `${formatDuration(performance.now() - t0)}${info.fromCache ? ' from the cache' : ''} · context ${formatCount(info.contextSize)} tokens · ` +
      `KV cache ${formatBytes(info.kvBytes)}${info.stateBytes ? ` · recurrent state ${formatBytes(info.stateBytes)}` : ''} · ${threadsText(engine)}` +
      ` · ${engine.relaxedSimd ? 'relaxed SIMD' : 'SIMD128'} · ${deviceText(engine.device)}` +
      (info.vision ? ` · sees images (${info.vision.projector} image encoder, ${formatBytes(info.vision.mmprojBytes)})` : '');
    $('model-status').dataset.build = engine.build;
    $('model-status').dataset.device = engine.device.type;
    $('model-status').dataset.loaded = name;
    const chat = $('mode-field').querySelector('input[value=chat]');
    chat.disabled = !info.chatTemplate;
    $('chat-hint').textContent = info.chatTemplate ? "(messages in the model's chat template)" : '(this model has no chat template)';
    const story = /stories|tinystories/i.test(info.name + String(chosen.label));
    document.querySelector(`input[name=mode][value=${info.chatTemplate && !story ? 'chat' : 'completion'}]`).checked = true;
    applyMode();
    setState('ready');
  } catch (e) {
    const aborted = controller.signal.aborted || e.code === 'E_ABORTED';
    $('model-status').textContent = aborted ? 'Loading cancelled.' : `Could not load ${chosen.label}: ${e.code ? `${e.code}: ` : ''}${e.message}`;
    $('model-status').dataset.loaded = '';
    setState(aborted ? 'idle' : 'error');
  } finally {
    state.loading = null;
    $('progress').hidden = true;
    updateButtons();
    refreshCache();
  }
}

function applyMode() {
  const chat = mode() === 'chat';
  $('system-field').hidden = !chat;
  $('tools-field').hidden = !chat;
  document.body.dataset.mode = mode();
  showToolReply();
  applyImageControls();
}

// ---- images (issue 32): with a model that has an image encoder, web/images.js's tray ----

/** After a load: the image controls for the model (web/images.js is imported for the first vision model). */
async function applyVision(info) {
  if (info?.vision && !state.tray) {
    imagesApi ??= await import('./images.js');
    state.tray = new imagesApi.ImageTray({ tray: $('image-tray'), button: $('image-button'), input: $('image-file'),
      onError: (message) => { $('vision-note')?.remove(); notice('warn', message).id = 'vision-note'; } });
  }
  applyImageControls();
}

/** The image button on in chat mode with a vision model; else off, its title saying why. */
function applyImageControls() {
  const reason = !state.engine?.info.vision ? NO_VISION : mode() !== 'chat' ? 'Images go with chat messages: choose Chat mode' : '';
  if (state.tray) state.tray.setEnabled(!reason, reason);
  else Object.assign($('image-button'), { disabled: true, title: reason });
}

/** The image files of a paste or a drop. */
function imagesIn(transfer) {
  return [...(transfer?.files || [])].filter((f) => /^image\//.test(f.type));
}

/** Images pasted, dropped or picked: into the tray, or a note saying why they cannot go. */
function addImages(files) {
  if (state.tray?.enabled) return state.tray.add(files);
  $('vision-note')?.remove();
  notice('warn', `${$('image-button').title}.`).id = 'vision-note';
}

function applyPlaceholder() {
  $('prompt').placeholder = mode() === 'chat' ? 'Write a message' : 'Once upon a time';
}

// ---- the cache ----

/** Why a download of `bytes` cannot be kept (less storage available than it needs), or null. */
async function storageRoom(url, bytes) {
  const storage = globalThis.navigator?.storage;
  if (!Wick.cache.supported || !storage?.estimate) return null;
  try {
    if (await Wick.cache.has(url)) return null; // already kept: nothing to download
    const { usage = 0, quota = 0 } = await storage.estimate();
    // the part an earlier visit kept is in the usage already, and will not be downloaded again
    const abs = new URL(url, location.href).href;
    const kept = (await Wick.cache.list({ partial: true })).find((e) => e.partial && e.url === abs)?.bytes || 0;
    if (!quota || bytes - kept <= quota - usage) return null;
    return `This file needs ${formatBytes(bytes)} of storage, but the browser gives this site only ${formatBytes(Math.max(0, quota - usage))} more ` +
      `(${formatBytes(usage)} used of ${formatBytes(quota)}). Remove kept models below, or free space on the device.`;
  } catch {
    return null; // no estimate: the download itself will say if it cannot be kept
  }
}

/** Asks once that kept models survive storage pressure; says what the browser answered. */
async function keepPersistently() {
  const storage = globalThis.navigator?.storage;
  if (!storage?.persist || state.persistAsked) return;
  state.persistAsked = true;
  let granted = false;
  try { granted = (await storage.persisted?.()) || (await storage.persist()); } catch { granted = false; }
  state.persisted = granted;
  refreshCache();
}

async function refreshCache() {
  refreshSessions();
  const list = $('cache-list');
  if (!Wick.cache.supported) { list.replaceChildren(el('li', { className: 'hint' }, 'This browser offers no Cache API: models are downloaded each time.')); return; }
  let all = [];
  try { all = await Wick.cache.list({ partial: true }); } catch (e) { list.replaceChildren(el('li', { className: 'hint' }, `The cache cannot be read: ${e.message}`)); return; }
  // whole files (they work offline), and downloads a reload or Cancel stopped part way
  const entries = all.filter((e) => !e.partial), partial = all.filter((e) => e.partial);
  state.kept = new Set(entries.map((e) => e.url));
  markKept();
  const total = all.reduce((a, e) => a + e.bytes, 0);
  list.replaceChildren(...all.map((e) => {
    const name = decodeURIComponent(new URL(e.url).pathname.split('/').pop());
    return el('li', { className: `cache-entry${e.partial ? ' partial' : ''}`, title: e.url },
      el('span', { className: 'cache-name' }, name),
      el('span', { className: 'cache-size' }, e.partial ? `${formatBytes(e.bytes)} of ${formatBytes(e.total)}, resumes on the next load` : formatBytes(e.bytes)),
      el('button', { type: 'button', className: 'small', 'aria-label': `Remove ${name} from the cache`, onclick: async () => { await Wick.cache.delete(e.url); refreshCache(); } }, 'Remove'));
  }));
  if (!all.length) list.append(el('li', { className: 'hint' }, 'Nothing yet: a downloaded model is kept here.'));
  else {
    list.append(el('li', { className: 'cache-total hint' }, `${entries.length} file${entries.length === 1 ? '' : 's'}` +
      `${partial.length ? ` and ${partial.length} unfinished download${partial.length > 1 ? 's' : ''}` : ''}, ${formatBytes(total)} in all`));
  }
  $('cache-clear').disabled = !all.length;
  if (entries.length) keepPersistently();
  const line = $('storage-line');
  const storage = globalThis.navigator?.storage;
  if (!storage?.estimate) { line.textContent = ''; return; }
  try {
    const { usage = 0, quota = 0 } = await storage.estimate();
    const kept = state.persisted === undefined ? '' : state.persisted
      ? ' · the browser keeps these files (persistent storage granted)'
      : ' · the browser may remove these files when space runs low (persistent storage not granted)';
    line.textContent = `Storage: ${formatBytes(usage)} used, ${formatBytes(Math.max(0, quota - usage))} available to this site${kept}`;
    line.dataset.usage = String(usage);
    line.dataset.quota = String(quota);
    line.dataset.persisted = state.persisted === undefined ? '' : String(state.persisted);
  } catch (e) {
    line.textContent = `Storage: unknown (${e.message})`;
  }
}

// ---- saved conversations (web/sessions.js, imported once a chat model loads or the cache is listed) ----

let sessionsModule = null;
const sessionsApi = () => (sessionsModule ??= import('./sessions.js'));
const SCOPE = 'page';

/** A chat model loaded: its last conversation here comes back, and the engine loads its state,
 *  so that the next reply evaluates only the new message. */
async function restoreConversation(engine, chosen) {
  state.conversation = state.sessionKey = null;
  $('log').dataset.restored = '';
  const api = await sessionsApi();
  state.modelKey = api.modelKeyOf(chosen.source);
  if (!engine.info.chatTemplate) return;
  const saved = await api.restoreSession(engine, state.modelKey, SCOPE);
  if (saved) await showRestored(saved);
}

/** A restored conversation on screen: its messages, its system prompt, and what the next reply evaluates. */
async function showRestored({ meta, tokens, error }) {
  if (error) notice('warn', `The saved state of this conversation cannot be used (${error.code ? `${error.code}: ` : ''}${error.message}): its next reply reads the conversation again.`);
  Object.assign(state, { conversation: meta.conversation, sessionKey: meta.key, messages: meta.messages });
  $('system-prompt').value = meta.system || '';
  await showSavedMessages(meta.messages);
  Object.assign($('log').dataset, { restored: String(meta.messages.length), restoredTokens: String(tokens) });
  $('log').append(el('p', { className: 'hint restored-note' }, tokens
    ? `This conversation was kept on this device with the engine's state (${formatCount(tokens)} tokens): the next reply evaluates only your new message.`
    : 'This conversation was kept on this device (without its state): the next reply reads it all again.'));
}

/** The messages of a saved conversation, as text (their tokens and candidates were not kept). */
async function showSavedMessages(messages) {
  const { views, waiting } = (await sessionsApi()).savedViews(messages, { el, userView, toolCallCard, answerCard, toolResultView });
  $('log').replaceChildren(...views);
  state.pendingCalls = waiting;
  showToolReply();
}

/** A reply ended: the conversation and the engine's state are written (the next generation waits for it). */
function saveConversation() {
  const engine = state.engine;
  if (!engine || !state.modelKey || !state.messages.length) return;
  const conversation = { modelKey: state.modelKey, scope: SCOPE, conversation: state.conversation, model: engine.info.name,
    messages: JSON.parse(JSON.stringify(state.messages)), system: $('system-prompt').value.trim() };
  const saving = (async () => {
    const api = await sessionsApi();
    conversation.conversation = state.conversation ||= api.newConversationId();
    const store = await api.openSessions();
    if (!store) return;
    const r = await api.saveConversation(store, engine, conversation);
    if (state.engine !== engine) return;
    state.sessionKey = r.key;
    if (r.reason && !$('session-note')) notice('warn', `The conversation is kept, but not the engine's state (${r.reason}): after a reload its next reply reads it again.`).id = 'session-note';
    $('log').dataset.saved = String(conversation.messages.length);
    $('log').dataset.savedBytes = String(r.bytes);
    refreshSessions();
  })().catch((e) => { notice('warn', `This conversation could not be saved: ${e.message}`); })
    .finally(() => { if (state.saving === saving) state.saving = null; });
  state.saving = saving;
}

/** New conversation: the old one stays saved, listed in the cache panel, which opens it again. */
function leaveConversation() {
  state.conversation = state.sessionKey = null;
  refreshSessions().catch(() => {});
}

/** The cache panel's Open: a saved conversation of the loaded model comes back (the one on screen
 *  is kept as its last reply left it), and the engine loads its state, so that the next reply
 *  evaluates only the new message. */
async function openConversation(key) {
  const engine = state.engine;
  if (!engine || state.generating || key === state.sessionKey) return;
  await state.saving;
  stop();
  Object.assign(state, { conversation: null, sessionKey: null, messages: [], pendingCalls: [], last: null, summary: null });
  $('log').replaceChildren();
  $('log').dataset.restored = '';
  try {
    const saved = await (await sessionsApi()).restoreSession(engine, state.modelKey, SCOPE, key);
    if (saved && state.engine === engine) await showRestored(saved);
    else if (!saved) notice('warn', 'That conversation is no longer saved on this device.');
  } catch (e) {
    notice('warn', `The saved conversation could not be opened: ${e.message}`);
  }
  showToolReply();
  updateButtons();
  refreshSessions().catch(() => {});
}

/** The cache panel's list of saved conversations (web/sessions.js draws it). */
async function refreshSessions() {
  const api = await sessionsApi();
  await api.renderSessions($('session-list'), SCOPE, (key) => { if (key === state.sessionKey) state.conversation = state.sessionKey = null; },
    state.engine?.info.chatTemplate && state.modelKey ? { modelKey: state.modelKey, current: state.sessionKey, onOpen: openConversation } : null);
}

// ---- wiring ----

const lookInside = new LookInside({
  phases: $('phases'), cands: $('cands'), caption: $('cands-caption'), title: $('cands-title'), gauge: $('gauge'), gaugeText: $('gauge-text'),
});

function wire() {
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); send($('prompt').value); });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); if (!$('send').disabled) send($('prompt').value); }
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && state.generating) { e.preventDefault(); stop(); } });
  $('prompt').addEventListener('paste', (e) => {
    const images = imagesIn(e.clipboardData);
    if (!images.length) return;
    if (!e.clipboardData.types.includes('text/plain')) e.preventDefault();
    addImages(images);
  });
  $('stop').addEventListener('click', stop);
  $('regenerate').addEventListener('click', regenerate);
  $('new-conversation').addEventListener('click', newConversation);
  for (const r of document.querySelectorAll('input[name=mode]')) r.addEventListener('change', applyMode);
  $('tools').addEventListener('input', () => checkToolsBox(false));
  $('tools').addEventListener('change', () => checkToolsBox(true));

  // tokens: click one, or focus an answer and move with the arrow keys
  $('log').addEventListener('click', (e) => {
    const span = e.target.closest?.('.tok');
    if (span) selectToken(span);
  });
  $('log').addEventListener('keydown', (e) => {
    if (!e.target.classList?.contains('tokens') || !['ArrowLeft', 'ArrowRight', 'Home', 'End'].includes(e.key)) return;
    const spans = [...e.target.querySelectorAll('.tok')];
    if (!spans.length) return;
    e.preventDefault();
    let i = spans.findIndex((s) => s.classList.contains('selected'));
    if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = spans.length - 1;
    else if (i < 0) i = e.key === 'ArrowLeft' ? spans.length - 1 : 0;
    else i = Math.max(0, Math.min(spans.length - 1, i + (e.key === 'ArrowLeft' ? -1 : 1)));
    selectToken(spans[i]);
  });

  for (const r of document.querySelectorAll('input[name=source]')) r.addEventListener('change', () => { state.droppedFile = null; showSourceFields(); checkSource(); });
  $('model-url').addEventListener('change', checkSource);
  $('mmproj-url').addEventListener('change', checkSource);
  $('mmproj-file').addEventListener('change', checkSource);
  $('model-file').addEventListener('change', () => { state.droppedFile = null; checkSource(); });
  $('ctx-size').addEventListener('change', () => { if (state.source) checkSource(); });
  $('model-form').addEventListener('submit', (e) => { e.preventDefault(); loadChosen(); });
  $('cancel-load').addEventListener('click', () => state.loading?.abort());
  $('cache-clear').addEventListener('click', async () => { await Wick.cache.clear(); refreshCache(); });

  // a .gguf dropped anywhere on the page
  let depth = 0;
  const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes('Files');
  document.addEventListener('dragenter', (e) => {
    if (!hasFiles(e)) return;
    depth++;
    $('drop-overlay').hidden = false;
    $('drop-text').textContent = [...e.dataTransfer.items].some((i) => /^image\//.test(i.type)) ? 'Drop the image to add it to your message' : 'Drop the .gguf file to load it';
  });
  document.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; $('drop-overlay').hidden = true; } });
  document.addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
  document.addEventListener('drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    $('drop-overlay').hidden = true;
    // an image goes with the next message; a .gguf is loaded
    const images = imagesIn(e.dataTransfer);
    if (images.length) { addImages(images); return; }
    const file = e.dataTransfer.files[0];
    if (!file) return;
    document.querySelector('input[name=source][value=file]').checked = true;
    showSourceFields();
    state.droppedFile = file;
    state.source = null;
    loadChosen();
  });
}

function showEnvironment() {
  const f = state.features;
  const env = $('env');
  const badge = (ok, text, title) => el('li', { className: `badge ${ok ? 'ok' : 'no'}`, title }, text);
  env.replaceChildren(
    badge(f.simd, f.simd ? 'SIMD ✓' : 'no SIMD', 'WebAssembly SIMD128'),
    badge(f.relaxedSimd, f.relaxedSimd ? 'relaxed SIMD ✓' : 'no relaxed SIMD', f.relaxedSimd
      ? 'WebAssembly relaxed SIMD: the faster build of the engine, with the same results'
      : 'no WebAssembly relaxed SIMD here: the plain SIMD128 build, with the same results, somewhat slower'),
    badge(f.threadsPossible, f.threadsPossible ? `threads ✓${state.isolation?.how === 'service worker' ? ' (via service worker)' : ''}` : '1 thread', 'cross-origin isolation and shared memory'));
  if (!f.wasm) notice('error', 'This browser has no WebAssembly: wick cannot run here.');
  else if (!f.simd) notice('error', 'This browser lacks WebAssembly SIMD, which wick needs. Use a current Chrome, Edge, Firefox (89+) or Safari (16.4+).');
  const note = threadsNote(f, state.isolation);
  if (f.simd && note) notice('warn', `Running on ${note}`).id = 'threads-note';
}

async function start() {
  const params = new URLSearchParams(location.search);
  const hub = hubFromParam(params.get('hf'));
  state.hub = hub.hub;
  if (hub.error) notice('warn', `${hub.error}: the list of popular models uses ${HF}.`);
  buildCatalogue();
  buildSamplingControls();
  wire();
  showSourceFields();
  applyMode();
  state.features = detectFeatures();
  // threads where the host sends no isolation headers (may reload the page once), and the page's
  // own files kept so that it opens with no network after this visit
  state.isolation = await ensureCrossOriginIsolation(undefined, { offline: true });
  state.features = detectFeatures();
  $('threads').value = state.features.threadsPossible ? String(Wick.defaultThreads()) : '1';
  $('threads').disabled = !state.features.threadsPossible;
  showEnvironment();
  setState('idle');
  showNetwork();
  // another tab brought a new version of the page: this one keeps its own files until reloaded
  globalThis.navigator?.serviceWorker?.addEventListener('message', (e) => {
    if (e.data?.type !== 'wick-shell-updated' || $('update-note')) return;
    state.updateReady = true;
    const item = notice('info', 'A new version of this page is ready. ');
    item.id = 'update-note';
    item.append(el('button', { type: 'button', className: 'small', onclick: () => location.reload() }, 'Reload to use it'));
  });
  for (const change of ['online', 'offline']) {
    globalThis.addEventListener(change, () => { showNetwork(); if (state.source === null || change === 'online') checkSource(); });
  }
  // memory notes: after the page is up, so that they are no part of its first download
  // documents (the embedding model, the files, retrieval per message): the same, from web/documents.js
  const docs = await import('./documents.js');
  state.documents = new docs.Documents({ state, notice, features: () => state.features, onCacheChange: () => refreshCache() });
  noteTools = await import('./notes.js');
  state.notes = new noteTools.Notes($('notes-box'), { onChange: () => checkToolsBox(false) });
  await refreshCache();
  if (params.get('model')) {
    document.querySelector('input[name=source][value=url]').checked = true;
    $('model-url').value = params.get('model');
    $('mmproj-url').value = params.get('mmproj') || '';
    showSourceFields();
  }
  if (!state.features.simd) return;
  const chosen = await checkSource();
  if (chosen && chosen.kind === 'default' && params.get('autoload') !== '0') loadChosen();
}

window.wickPage = { state, lookInside, applyVision };
start();
