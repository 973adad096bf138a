// web/prompt-parts.js — one chat turn's prompt on the page (issue 29): assembled by
// wasm_glue/context-budget.mjs (the system prompt, memory notes, retrieved chunks, a summary of
// older turns, the history, the new message) within the context minus the reply's reserve, and
// shown in the look-inside panel as its parts with their token counts, which of them the engine
// took from its prefix cache, and what was cut or summarized and why. The chunks go where
// chat.completions.create({documents}) would put them: as the template's documents when it takes
// them (Granite's, Command-R's: chat-template.mjs's renderPrompt decides), else as the context
// block in the system message. Imported with import() on the first chat turn: no part of the
// page's first download.
import { assembleContext, engineTokenCounter } from '../wasm_glue/context-budget.mjs';
import { el, formatCount } from './util.js';

const NAMES = { system: 'System prompt', tools: 'Tool definitions', notes: 'Memory notes', chunks: 'Retrieved chunks', summary: 'Summary of older turns', history: 'History', message: 'New message' };

/** What the reply keeps free: the Maximum tokens setting, at most half the context. */
export function replyReserve(contextSize, maxTokens) {
  return Math.max(1, Math.min(maxTokens, Math.floor(contextSize / 2)));
}

/**
 * The messages of the next request. conversation: the page's whole history, its last message the
 * new one; summary: {text, covers} from an earlier turn (covers: how many of the first messages
 * it replaces); chunks: retrieved chunks [{text, source, score}] (web/documents.js's retrieval).
 * The result's documents (assembleContext's) go with the request where the template takes them.
 */
export async function assembleTurn({ engine, system, notes, conversation, summary, chunks = [], overflow, tools, toolChoice, maxTokens }) {
  const covers = summary?.covers ?? 0;
  const history = conversation.slice(covers, -1);
  const message = conversation.at(-1);
  const render = tools && toolChoice !== 'none' ? tools : undefined;
  const counter = engineTokenCounter(engine, { tools: render, tool_choice: toolChoice });
  // an image takes the encoder's positions, not its marker's tokens: each one counted as
  // positionsPerImage (SmolVLM's tiles of a large image take more; the engine's usage says how many)
  const perImage = engine.info.vision?.positionsPerImage || 0;
  const countTokens = perImage ? async (messages, options) => (await counter(messages, options)) + perImage * imageCount(messages) : counter;
  const contextSize = engine.info.contextSize;
  const budget = contextSize - replyReserve(contextSize, maxTokens);
  // where the library would put documents: asked of its own renderer with the first chunk
  let chunksIn = 'system';
  if (chunks.length && engine.info.chatTemplate) {
    const { renderPrompt } = await import('../wasm_glue/chat-template.mjs');
    ({ documentsIn: chunksIn } = await renderPrompt(engine.info.chatTemplate, [{ role: 'user', content: '?' }], { documents: chunks.slice(0, 1) }));
  }
  const summarize = async ({ summary: earlier, turns, maxTokens: most }) => {
    let transcript = turns.map((m) => `${m.role}: ${Array.isArray(m.content) ? m.content.map((p) => (p.type === 'text' ? p.text : '[an image]')).join(' ') : m.content ?? JSON.stringify(m.tool_calls ?? '')}`).join('\n');
    const ask = () => [{ role: 'user', content: `${earlier ? `An earlier summary: ${earlier}\n\n` : ''}Summarize this conversation in a few sentences, keeping names, facts and decisions:\n\n${transcript}` }];
    // the request itself must fit in the context: the transcript loses its oldest text until it does
    const plain = engineTokenCounter(engine);
    while (transcript && (await plain(ask())) > contextSize - most) transcript = transcript.slice(Math.ceil(transcript.length / 4));
    const r = await engine.chat.completions.create({ messages: ask(), max_tokens: most, temperature: 0 });
    return r.choices[0].message.content ?? '';
  };
  const result = await assembleContext({
    system, notes, chunks, chunksIn, history, message, countTokens, budget, hasTools: !!render,
    summary: covers ? summary : null, overflow, summarize, budgets: { summary: Math.max(16, Math.min(128, Math.floor(budget / 8))) },
  });
  result.contextSize = contextSize;
  result.reserve = contextSize - budget;
  return result;
}

/** How many images the messages' content parts hold. */
function imageCount(messages) {
  return messages.reduce((n, m) => n + (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image_url').length : 0), 0);
}

/** Shows a turn's parts in `box` (the look-inside panel); timings, once the answer is done, say
 *  how many prompt tokens came from the prefix cache. */
export function showParts(box, result, timings = null) {
  const cached = timings?.cachedPromptTokens ?? null;
  const rows = result.parts.map((p) => {
    let what = NAMES[p.kind] || p.kind;
    if (p.kind === 'history' && p.role && !p.cut) what += ` (${p.role})`;
    if (p.kind === 'notes' && p.count) what += ` (${p.count})`;
    if (p.kind === 'chunks' && p.count) what += ` (${p.chunks.map((c) => `${c.source ?? '?'}${typeof c.score === 'number' ? ` ${c.score.toFixed(2)}` : ''}`).join(', ')})`;
    if (p.kind === 'chunks' && p.count && p.in === 'template') what += ' as the template\'s documents';
    if (p.cut && p.kind === 'history') what = `${p.count} older message${p.count === 1 ? '' : 's'}`;
    let cache = '';
    if (cached !== null && p.tokens > 0 && !p.cut) {
      const end = p.start + p.tokens;
      cache = end <= cached ? 'from the prefix cache' : p.start < cached ? `${formatCount(cached - p.start)} from the prefix cache` : 'evaluated';
    }
    return el('li', { className: `part${p.cut ? ' cut' : ''}`, 'data-kind': p.kind, 'data-tokens': String(p.tokens), 'data-cut': p.cut || '' },
      el('span', { className: 'part-name' }, what),
      el('span', { className: 'part-tokens' }, p.cut ? `${p.cut}` : `${formatCount(p.tokens)} tok`),
      cache ? el('span', { className: 'part-cache' }, cache) : null,
      p.reason && (p.cut || p.kind === 'summary') ? el('span', { className: 'part-reason' }, p.reason) : null);
  });
  const list = el('ol', { className: 'parts-list', id: 'parts-list', 'data-tokens': String(result.tokens), 'data-budget': String(result.budget) }, ...rows);
  const cut = result.parts.filter((p) => p.cut);
  const text = `${formatCount(result.tokens)} prompt tokens of ${formatCount(result.budget)} available ` +
    `(context ${formatCount(result.contextSize)} minus ${formatCount(result.reserve)} kept for the reply)` +
    (cut.length ? `; cut to fit: ${cut.map((p) => (p.kind === 'history' ? `${p.count} messages ${p.cut}` : `${p.kind} ${p.cut}`)).join(', ')}.` : '; nothing was cut.') +
    (cached !== null ? ` ${formatCount(cached)} tokens came from the prefix cache.` : '');
  box.replaceChildren(list, el('p', { className: 'hint', id: 'parts-text' }, text));
}
