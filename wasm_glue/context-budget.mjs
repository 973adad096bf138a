// wasm_glue/context-budget.mjs — the whole prompt of one chat turn, assembled in a fixed order
// with a budget: the system prompt, the user's memory notes, the retrieved chunks, a summary of
// older turns, the history and the new message. When it does not fit, the retrieved chunks are
// cut first (lowest score first), then the oldest turns — dropped, or summarized by the model
// (the caller's callback); the system prompt and the notes are never cut: if they alone (with
// the new message) do not fit, assembleContext throws a ContextBudgetError that says so.
//
// The system prompt, notes, chunks and summary go into one system message, each as a block:
//
//   <system prompt>
//
//   Memory notes from the user:
//   - <note>
//
//   Retrieved documents (cite them as [n]):
//   [1] <source> (score 0.82)
//   <chunk text>
//
//   Summary of the earlier conversation (by the model; it replaces N messages):
//   <summary>
//
// A template that takes `documents` (Granite's, Command-R's: where chat-template.mjs's renderPrompt
// puts them, the library's one decision) gets the chunks there instead, with chunksIn: 'template':
// no block in the system message, the prompt's counts made with the chunks as the counter's
// `documents`, the chunks' part their cost in the whole prompt (the template may put them
// anywhere), and the result's `documents` to pass with the request.
//
// Token counts are the engine's own: every part's count is the difference between the token
// counts of the prompt rendered up to the end of that part and up to the end of the one before
// (the chat template's markup around a part is counted with it), so the parts add up exactly to
// the rendered prompt's length. Used by the page and by Node alike; it needs only a counter.
import { planToolCalls } from './tool-calls.mjs';

export class ContextBudgetError extends Error {
  constructor(message, details = {}) {
    super(message);
    this.name = 'ContextBudgetError';
    this.code = 'E_CONTEXT_FULL';
    Object.assign(this, details);
  }
}

export function notesBlock(notes) {
  if (!notes.length) return '';
  return 'Memory notes from the user:\n' + notes.map((n) => `- ${n.replace(/\s*\n\s*/g, ' ')}`).join('\n');
}

export function chunksBlock(chunks) {
  if (!chunks.length) return '';
  const entries = chunks.map((c, i) => `[${i + 1}] ${c.source ?? 'document'}${typeof c.score === 'number' ? ` (score ${c.score.toFixed(2)})` : ''}\n${c.text}`);
  return 'Retrieved documents (cite them as [n]):\n' + entries.join('\n\n');
}

export function summaryBlock(text, covers) {
  if (!text) return '';
  return `Summary of the earlier conversation (by the model; it replaces ${covers} message${covers === 1 ? '' : 's'}):\n${text}`;
}

/**
 * A token counter over an engine: async (messages, {addGenerationPrompt, withTools}) → the number
 * of tokens the engine's chat.completions.create would prefill for them (the same template,
 * tools as planToolCalls renders them, the same BOS rule and special-token parsing); option
 * documents: the request's documents, placed as chat.completions.create places them.
 */
export function engineTokenCounter(engine, { tools, tool_choice, template, extra } = {}) {
  const source = template ?? engine.info.chatTemplate;
  const render = tools ? planToolCalls({ tools, tool_choice }, source, engine.info.architecture).render : undefined;
  const bos = engine.info.specialTokens?.bos;
  return async (messages, { addGenerationPrompt = true, withTools = true, documents } = {}) => {
    const text = await engine.applyChatTemplate(messages, { template, addGenerationPrompt, tools: withTools ? render : undefined, extra, documents });
    const addBos = !(bos && text.startsWith(bos));
    return (await engine.tokenize(text, { addBos, special: true })).length;
  };
}

/** The history in exchanges: each starts at a user message and runs to the next one. */
function exchanges(history) {
  const groups = [];
  for (const [i, m] of history.entries()) {
    if (m.role === 'user' || !groups.length) groups.push({ start: i, end: i + 1 });
    else groups.at(-1).end = i + 1;
  }
  return groups;
}

/**
 * Assembles one turn's messages. options:
 *   system (string), notes (string[]), chunks ([{text, source, score}]), summary ({text, covers}
 *   or a string: an earlier summary of turns not in history), history (messages), message (the
 *   new message: a string or a message; a tool result's assistant call stays in history),
 *   countTokens (engineTokenCounter(engine, …) or the like), budget (the context size minus the
 *   reply's reserve), hasTools (the counter renders tools: their definitions are a part),
 *   overflow ('drop' | 'summarize'), summarize (async ({summary, turns, maxTokens}) → text),
 *   budgets ({chunks: most tokens the chunks may take, summary: the summary's maxTokens}),
 *   formatNotes, formatChunks, formatSummary (the blocks above by default), chunksIn ('system',
 *   the default: the chunks' block in the system message; 'template': as the template's documents).
 * Returns {messages, parts, tokens, budget, chunks (kept), documents (with chunksIn 'template':
 * the kept chunks, for the request's documents), summary ({text, covers} or null),
 * droppedChunks, droppedMessages}; parts: [{kind, tokens, cut, reason, …}] in prompt order, the
 * cut ones with 0 tokens; their tokens add up to `tokens`, the rendered prompt's length.
 */
export async function assembleContext(options) {
  const {
    system = '', notes = [], chunks = [], history = [], countTokens, budget, hasTools = false,
    overflow = 'drop', summarize, budgets = {},
    formatNotes = notesBlock, formatSummary = summaryBlock, chunksIn = 'system',
  } = options;
  const inTemplate = chunksIn === 'template';
  const formatChunks = inTemplate ? () => '' : options.formatChunks ?? chunksBlock;
  if (typeof countTokens !== 'function') throw new TypeError('assembleContext: countTokens must be a function');
  if (!(budget > 0)) throw new ContextBudgetError(`no room for a prompt: the budget is ${budget} tokens`, { budget });
  if (overflow === 'summarize' && typeof summarize !== 'function') throw new TypeError("assembleContext: overflow 'summarize' needs a summarize callback");
  const message = typeof options.message === 'string' ? { role: 'user', content: options.message } : options.message;
  let summary = typeof options.summary === 'string' ? { text: options.summary, covers: 0 } : options.summary?.text ? { ...options.summary } : null;
  const prior = summary ? { ...summary } : null;

  const memo = new Map();
  const count = async (messages, opts) => {
    // no messages, no prompt (a template may not render an empty list, even with tools: the
    // tools' definitions are then counted with the first message)
    if (!messages.length) return 0;
    const key = JSON.stringify([messages, opts]);
    if (!memo.has(key)) memo.set(key, await countTokens(messages, opts));
    return memo.get(key);
  };

  // the blocks of the system message, each on its own after a blank line
  const systemText = (upTo, state) => {
    const blocks = [system.trim()];
    if (upTo >= 1) blocks.push(formatNotes(notes));
    if (upTo >= 2) blocks.push(formatChunks(state.chunks));
    if (upTo >= 3) blocks.push(summaryOf(state));
    return blocks.filter(Boolean).join('\n\n');
  };
  const summaryOf = (state) => (state.summary ? formatSummary(state.summary.text, state.summary.covers) : '');
  const systemMessages = (upTo, state) => {
    const text = systemText(upTo, state);
    return text ? [{ role: 'system', content: text }] : [];
  };
  const build = (state) => [...systemMessages(3, state), ...history.slice(state.from), message];
  // the counts from the chunks' part on, with the chunks as the template's documents where it takes them
  const withChunks = (opts, state) => (inTemplate && state.chunks.length ? { ...opts, documents: state.chunks } : opts);
  const total = (state) => count(build(state), withChunks({ addGenerationPrompt: true, withTools: true }, state));
  // what the chunks add: their block in the system message, or (the template's documents, which
  // it may place anywhere) the whole prompt with them less the whole prompt without
  const chunksCost = async (state) => (inTemplate
    ? (await total(state)) - (await count(build(state), { addGenerationPrompt: true, withTools: true }))
    : (await count(systemMessages(2, state), { addGenerationPrompt: false, withTools: false })) - (await count(systemMessages(1, state), { addGenerationPrompt: false, withTools: false })));

  // chunks by score, best first (the block lists them so); cut from the end
  const state = { chunks: [...chunks].sort((a, b) => (b.score ?? 0) - (a.score ?? 0)), from: 0, summary };
  const droppedChunks = [];
  const chunkReasons = [];

  // the parts that are never cut: alone, do they fit?
  const floor = await count([...systemMessages(1, { chunks: [] }), ...history.slice(protectedFrom(history, message)), message], { addGenerationPrompt: true, withTools: true });
  if (floor > budget) {
    const sys = await count(systemMessages(0, {}), { addGenerationPrompt: false, withTools: false });
    const withNotes = await count(systemMessages(1, { chunks: [] }), { addGenerationPrompt: false, withTools: false });
    throw new ContextBudgetError(
      `The prompt cannot fit: the system prompt (${sys} tokens), the memory notes (${withNotes - sys} tokens) and the new message take ${floor} tokens ` +
      `with the template, and only ${budget} are available (the context minus the reply's reserve). Shorten the system prompt or the notes, or load the model with a larger context.`,
      { budget, tokens: floor, systemTokens: sys, notesTokens: withNotes - sys });
  }

  // the chunks' own budget, then the whole: lowest score first
  if (budgets.chunks !== undefined) {
    while (state.chunks.length) {
      if (await chunksCost(state) <= budgets.chunks) break;
      droppedChunks.push(state.chunks.pop());
      chunkReasons.push(`over the chunks' budget of ${budgets.chunks} tokens`);
    }
  }
  let tokens = await total(state);
  while (tokens > budget && state.chunks.length) {
    droppedChunks.push(state.chunks.pop());
    chunkReasons.push(`the prompt did not fit in ${budget} tokens (the lowest-scoring chunk goes first)`);
    tokens = await total(state);
  }

  // then the oldest exchanges, never the one the new message belongs to
  const groups = exchanges(history).filter((g) => g.end <= protectedFrom(history, message));
  let dropped = 0; // exchanges out of the prompt
  while (tokens > budget && dropped < groups.length) {
    dropped++;
    state.from = groups[dropped - 1].end;
    if (overflow === 'summarize') {
      const turns = history.slice(0, state.from);
      const maxTokens = budgets.summary ?? Math.max(16, Math.min(128, Math.floor(budget / 4)));
      const text = String(await summarize({ summary: prior?.text ?? null, turns, maxTokens }) ?? '').trim();
      state.summary = text ? { text, covers: (prior?.covers ?? 0) + state.from, summarized: state.from } : null;
    }
    tokens = await total(state);
  }
  let summaryReason = null;
  if (tokens > budget && state.summary) {
    summaryReason = `the prompt did not fit in ${budget} tokens even with every older turn out of it`;
    state.summary = null;
    tokens = await total(state);
  }
  if (tokens > budget) {
    throw new ContextBudgetError(`The prompt cannot fit: ${tokens} tokens after every cut, ${budget} available`, { budget, tokens });
  }

  // the parts, each the difference of two counts along the prompt
  const parts = [];
  let at = 0;
  // as the template's documents, the chunks' part is their cost in the whole prompt, and every
  // later part is counted without them plus that cost, so that the parts still end at `tokens`
  const documentsCost = inTemplate && state.chunks.length ? await chunksCost(state) : 0;
  const add = async (part, messages, opts, offset = 0) => {
    const end = (await count(messages, opts)) + offset;
    parts.push({ ...part, tokens: end - at, start: at });
    at = end;
  };
  const sys = { addGenerationPrompt: false, withTools: false };
  const sysT = { addGenerationPrompt: false, withTools: true };
  await add({ kind: 'system', cut: null }, systemMessages(0, state), sys);
  if (hasTools) await add({ kind: 'tools', cut: null }, systemMessages(0, state), sysT);
  await add({ kind: 'notes', cut: null, count: notes.length }, systemMessages(1, state), sysT);
  await add({ kind: 'chunks', cut: null, count: state.chunks.length, chunks: state.chunks.map(({ source, score }) => ({ source, score })), in: chunksIn }, systemMessages(2, state), sysT, documentsCost);
  for (const [i, c] of droppedChunks.entries())
    parts.push({ kind: 'chunks', tokens: 0, start: at, cut: 'dropped', count: 1, chunks: [{ source: c.source, score: c.score }], reason: chunkReasons[i] });
  if (state.summary) {
    const made = state.summary !== prior;
    await add({ kind: 'summary', cut: null, covers: state.summary.covers,
      reason: made ? `${state.from} older message${state.from === 1 ? '' : 's'} summarized by the model: the prompt did not fit in ${budget} tokens` : 'an earlier summary of older turns' },
    systemMessages(3, state), sysT, documentsCost);
  } else if (prior) {
    parts.push({ kind: 'summary', tokens: 0, start: at, cut: 'dropped', covers: prior.covers, reason: summaryReason });
  } else if (summaryReason) {
    parts.push({ kind: 'summary', tokens: 0, start: at, cut: 'dropped', reason: summaryReason });
  }
  if (state.from > 0) {
    const how = state.summary && state.summary !== prior ? 'summarized' : 'dropped';
    parts.push({ kind: 'history', tokens: 0, start: at, cut: how, count: state.from,
      reason: `the oldest ${state.from} message${state.from === 1 ? '' : 's'} ${how === 'summarized' ? 'replaced by the summary' : 'left out'}: the prompt did not fit in ${budget} tokens` });
  }
  const head = systemMessages(3, state);
  for (let i = state.from; i < history.length; i++)
    await add({ kind: 'history', cut: null, role: history[i].role, index: i }, [...head, ...history.slice(state.from, i + 1)], sysT, documentsCost);
  await add({ kind: 'message', cut: null, role: message.role }, build(state), { addGenerationPrompt: true, withTools: true }, documentsCost);
  if (at !== tokens) throw new Error(`context-budget: parts end at ${at}, the prompt has ${tokens} tokens`);

  return {
    messages: build(state), parts, tokens, budget,
    chunks: state.chunks, documents: inTemplate && state.chunks.length ? state.chunks : undefined, droppedChunks, droppedMessages: state.from,
    summary: state.summary ? { text: state.summary.text, covers: state.summary.covers, fresh: state.summary !== prior } : null,
  };
}

/** Where the messages the new one needs start: a tool result keeps the call it answers and the
 *  turn that asked for it (everything from the last user message on). */
function protectedFrom(history, message) {
  if (message.role === 'user') return history.length;
  for (let i = history.length - 1; i >= 0; i--) if (history[i].role === 'user') return i;
  return 0;
}
