// tests/context-budget.test.mjs — the whole prompt of a chat turn (issue 29, acceptance 3, the
// library side): wasm_glue/context-budget.mjs against a real engine (the random-weight Qwen3 mini
// model with Qwen3's real chat template, llama.cpp's, from node-llama-cpp's bundle) in a
// 256-token context: the parts' token counts add up to the prompt's length, which is the very
// number chat.completions.create prefills; a long conversation with retrieved chunks loses the
// chunks first, lowest score first, then its oldest turns, dropped or summarized by the model as
// chosen; notes that cannot fit are an error, never a silent cut.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { models } from './helpers.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { Wick } from '../wasm_glue/wick.mjs';
import { assembleContext, engineTokenCounter, ContextBudgetError, chunksBlock, notesBlock } from '../wasm_glue/context-budget.mjs';

const CONTEXT = 256;
const RESERVE = 32;
const BUDGET = CONTEXT - RESERVE;
const REMEMBER = { type: 'function', function: { name: 'remember', description: 'Save a note', parameters: { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] } } };

let engine, template, granite;
before(async () => {
  [template, granite] = readLlamaBundle(['models/templates/Qwen-Qwen3-0.6B.jinja', 'models/templates/ibm-granite-granite-3.3-2B-Instruct.jinja']).map((b) => b.toString('utf8'));
  engine = await Wick.load(path.join(models, 'families', 'mini-qwen3-q8_0.gguf'), { threads: 1, contextSize: CONTEXT });
});
after(async () => { await engine?.unload(); });

const SYSTEM = 'Be brief.';
const NOTES = ['Likes tea.', 'Lives in Lyon.'];
const CHUNKS = [
  { text: 'Lyon is on the Rhône.', source: 'lyon.md', score: 0.71 },
  { text: 'Spring in Lyon is mild.', source: 'weather.md', score: 0.93 },
  { text: 'Paris to Lyon: 2 hours.', source: 'trains.md', score: 0.42 },
];
function conversation(n) {
  const history = [];
  for (let i = 0; i < n; i++) {
    history.push({ role: 'user', content: `Day ${i}?` });
    history.push({ role: 'assistant', content: `Walk, day ${i}.` });
  }
  return history;
}
const sum = (parts) => parts.reduce((a, p) => a + p.tokens, 0);

/** The number of tokens chat.completions.create prefills for these messages (its usage). */
async function prefilled(messages, tools) {
  const r = await engine.chat.completions.create({ messages, chat_template: template, max_tokens: 1, temperature: 0, ...(tools ? { tools, tool_choice: 'none' } : {}) });
  return r.usage.prompt_tokens;
}

test('a turn that fits: every part is there, in order, and the parts add up to what the engine prefills', async () => {
  const countTokens = engineTokenCounter(engine, { template });
  const r = await assembleContext({ system: SYSTEM, notes: NOTES, chunks: CHUNKS.slice(0, 1), history: conversation(1), message: 'Tea?', countTokens, budget: CONTEXT });
  assert.deepEqual(r.parts.map((p) => p.kind), ['system', 'notes', 'chunks', 'history', 'history', 'message']);
  assert.ok(r.parts.every((p) => p.tokens > 0 && p.cut === null), JSON.stringify(r.parts));
  assert.equal(sum(r.parts), r.tokens);
  assert.equal(r.tokens, await countTokens(r.messages));
  assert.equal(r.tokens, await prefilled(r.messages));
  const system = r.messages[0];
  assert.equal(system.role, 'system');
  assert.equal(system.content, `${SYSTEM}\n\n${notesBlock(NOTES)}\n\n${chunksBlock(CHUNKS.slice(0, 1))}`);
  assert.ok(system.content.includes('Memory notes from the user:\n- Likes tea.\n- Lives in Lyon.') && system.content.includes('Retrieved documents (cite them as [n]):\n[1] lyon.md (score 0.71)\nLyon is on the Rhône.'), system.content);
  assert.deepEqual(r.messages.slice(1), [...conversation(1), { role: 'user', content: 'Tea?' }]);
});

test('tools are a part of their own when the counter renders them, and the sum still holds', async () => {
  const tools = [REMEMBER];
  const countTokens = engineTokenCounter(engine, { template, tools, tool_choice: 'auto' });
  // (Qwen3's tools section alone is about 500 tokens of this byte-level vocabulary: a larger budget, counted only)
  const r = await assembleContext({ system: SYSTEM, notes: NOTES, history: [], message: 'Remember that I like tea.', countTokens, budget: 1000, hasTools: true });
  assert.deepEqual(r.parts.map((p) => p.kind), ['system', 'tools', 'notes', 'chunks', 'message']);
  assert.ok(r.parts[1].tokens > 20, `the remember tool's definition costs tokens (${r.parts[1].tokens})`);
  assert.equal(r.parts[3].tokens, 0, 'no chunks, no tokens');
  assert.equal(sum(r.parts), r.tokens);
  const rendered = await engine.applyChatTemplate(r.messages, { template, tools });
  assert.ok(rendered.includes('"name": "remember"'), rendered);
  assert.equal(r.tokens, (await engine.tokenize(rendered, { addBos: true, special: true })).length);
});

test("chunksIn 'template': the chunks as Granite 3.3's documents, none in the system message; the parts still add up", async () => {
  const countTokens = engineTokenCounter(engine, { template: granite });
  // (Granite's default system message and documents turns are long in this byte-level vocabulary: counted only)
  const options = { system: SYSTEM, notes: NOTES, chunks: CHUNKS, history: conversation(1), message: 'Tea?', countTokens, chunksIn: 'template' };
  const r = await assembleContext({ ...options, budget: 2000 });
  assert.deepEqual(r.parts.map((p) => p.kind), ['system', 'notes', 'chunks', 'history', 'history', 'message']);
  assert.ok(r.parts.every((p) => p.tokens > 0 && p.cut === null), JSON.stringify(r.parts));
  assert.equal(r.parts[2].in, 'template');
  assert.deepEqual(r.documents.map((c) => c.source), ['weather.md', 'lyon.md', 'trains.md']);
  assert.equal(r.messages[0].content, `${SYSTEM}\n\n${notesBlock(NOTES)}`);
  assert.equal(sum(r.parts), r.tokens);
  const rendered = await engine.applyChatTemplate(r.messages, { template: granite, documents: r.documents });
  assert.ok(rendered.includes(`<|start_of_role|>document {"document_id": "1"}<|end_of_role|>\n${CHUNKS[1].text}<|end_of_text|>`), rendered);
  assert.equal(r.tokens, (await engine.tokenize(rendered, { addBos: true, special: true })).length);
  const without = await countTokens(r.messages);
  assert.equal(r.parts[2].tokens, r.tokens - without, "the chunks' part is what the documents add to the prompt");
  // short of room: the lowest-scoring chunk goes first, as in the system message
  const tight = await assembleContext({ ...options, budget: r.tokens - 1 });
  assert.deepEqual(tight.documents.map((c) => c.source), ['weather.md', 'lyon.md']);
  assert.equal(sum(tight.parts), tight.tokens);
  assert.ok(tight.tokens <= r.tokens - 1);
});

test('too many chunks for a short prompt: the lowest-scoring ones go, the best stay', async () => {
  const countTokens = engineTokenCounter(engine, { template });
  const many = [...CHUNKS, ...CHUNKS.map((c) => ({ ...c, source: `copy-${c.source}`, score: c.score - 0.3 }))];
  const r = await assembleContext({ system: SYSTEM, notes: NOTES, chunks: many, history: [], message: 'Tips?', countTokens, budget: BUDGET });
  assert.ok(r.droppedChunks.length > 0 && r.chunks.length > 0, `some cut (${r.droppedChunks.length}), some kept (${r.chunks.length})`);
  const scores = r.droppedChunks.map((c) => c.score);
  assert.deepEqual(scores, [...scores].sort((a, b) => a - b), 'cut lowest score first');
  assert.ok(Math.min(...r.chunks.map((c) => c.score)) >= Math.max(...scores), 'every kept chunk scores at least as high as every cut one');
  assert.equal(r.droppedMessages, 0);
  assert.ok(r.tokens <= BUDGET);
  const cut = r.parts.filter((p) => p.cut === 'dropped');
  assert.equal(cut.length, r.droppedChunks.length);
  assert.ok(cut.every((p) => p.kind === 'chunks' && p.tokens === 0 && /did not fit in 224 tokens/.test(p.reason)), JSON.stringify(cut));
  assert.equal(sum(r.parts), r.tokens);
  assert.equal(r.tokens, await prefilled(r.messages));
  // the one more chunk that was cut would not have fitted
  const back = await countTokens([{ role: 'system', content: `${SYSTEM}\n\n${notesBlock(NOTES)}\n\n${chunksBlock([...r.chunks, r.droppedChunks.at(-1)])}` }, ...r.messages.slice(1)]);
  assert.ok(back > BUDGET, `${back} > ${BUDGET}`);
});

test('a long conversation with chunks in 256 tokens: every chunk goes first, then the oldest turns are dropped', async () => {
  const countTokens = engineTokenCounter(engine, { template });
  const history = conversation(8);
  const r = await assembleContext({ system: SYSTEM, notes: NOTES, chunks: CHUNKS, history, message: 'What about the last day?', countTokens, budget: BUDGET, overflow: 'drop' });
  assert.deepEqual(r.droppedChunks.map((c) => c.score), [0.42, 0.71, 0.93], 'all chunks cut, lowest score first');
  assert.equal(r.chunks.length, 0);
  assert.ok(r.droppedMessages > 0 && r.droppedMessages % 2 === 0, `whole exchanges dropped (${r.droppedMessages})`);
  assert.ok(r.droppedMessages < history.length, 'the recent turns stay');
  assert.deepEqual(r.messages.slice(1, -1), history.slice(r.droppedMessages), 'the newest turns, unchanged');
  assert.equal(r.messages[0].content, `${SYSTEM}\n\n${notesBlock(NOTES)}`, 'the system prompt and notes stay whole');
  assert.ok(r.tokens <= BUDGET, `${r.tokens} ≤ ${BUDGET}`);
  // one exchange fewer dropped would not fit
  const more = await countTokens([r.messages[0], ...history.slice(r.droppedMessages - 2), r.messages.at(-1)]);
  assert.ok(more > BUDGET, `${more} > ${BUDGET}`);
  const dropped = r.parts.find((p) => p.kind === 'history' && p.cut);
  assert.equal(dropped.cut, 'dropped');
  assert.equal(dropped.count, r.droppedMessages);
  assert.equal(dropped.tokens, 0);
  assert.equal(r.summary, null);
  assert.equal(sum(r.parts), r.tokens);
  assert.equal(r.tokens, await prefilled(r.messages));
});

test('the same conversation summarized: the model writes the summary, it replaces the oldest turns and is marked as such', async () => {
  const countTokens = engineTokenCounter(engine, { template });
  const history = conversation(8);
  const calls = [];
  // the summary asked of the engine itself, as the page does (random weights: some text)
  const summarize = async ({ summary, turns, maxTokens }) => {
    calls.push({ summary, turns: turns.length, maxTokens });
    const transcript = turns.map((m) => `${m.role}: ${m.content}`).join('\n');
    const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: `Summarize:\n${transcript}`.slice(0, 120) }], chat_template: template, max_tokens: Math.min(maxTokens, 12), temperature: 0 });
    return r.choices[0].message.content || 'They planned a trip.';
  };
  const r = await assembleContext({ system: SYSTEM, notes: NOTES, chunks: CHUNKS, history, message: 'What about the last day?', countTokens, budget: BUDGET, overflow: 'summarize', summarize, budgets: { summary: 24 } });
  assert.equal(r.chunks.length, 0, 'the chunks went first');
  assert.ok(calls.length >= 1 && calls.every((c) => c.maxTokens === 24 && c.summary === null));
  assert.equal(calls.at(-1).turns, r.droppedMessages, 'the last summary covers exactly the turns it replaces');
  assert.ok(r.summary?.fresh && r.summary.covers === r.droppedMessages && r.summary.text.length > 0, JSON.stringify(r.summary));
  assert.ok(r.messages[0].content.endsWith(`Summary of the earlier conversation (by the model; it replaces ${r.droppedMessages} messages):\n${r.summary.text}`), r.messages[0].content);
  const part = r.parts.find((p) => p.kind === 'summary');
  assert.ok(part.tokens > 0 && part.cut === null && /summarized by the model/.test(part.reason), JSON.stringify(part));
  assert.equal(r.parts.find((p) => p.kind === 'history' && p.cut).cut, 'summarized');
  assert.deepEqual(r.messages.slice(1, -1), history.slice(r.droppedMessages));
  assert.ok(r.tokens <= BUDGET);
  assert.equal(sum(r.parts), r.tokens);
  assert.equal(r.tokens, await prefilled(r.messages));

  // the next turn builds on that summary: the page passes it with the history it does not cover
  const next = [...history, { role: 'user', content: 'What about the last day?' }, { role: 'assistant', content: 'Rest.' }];
  calls.length = 0;
  const r2 = await assembleContext({ system: SYSTEM, notes: NOTES, history: next.slice(r.summary.covers), summary: { text: r.summary.text, covers: r.summary.covers }, message: 'Thanks!', countTokens, budget: BUDGET, overflow: 'summarize', summarize });
  assert.equal(sum(r2.parts), r2.tokens);
  assert.ok(r2.tokens <= BUDGET);
  if (calls.length) assert.equal(calls[0].summary, r.summary.text, 'a new summary is told the earlier one');
  else assert.equal(r2.parts.find((p) => p.kind === 'summary').reason, 'an earlier summary of older turns');
});

test('notes that cannot fit are an error that says so, never a silent cut', async () => {
  const countTokens = engineTokenCounter(engine, { template });
  const notes = Array.from({ length: 30 }, (_, i) => `Note ${i}: the user prefers trains to planes and tea to coffee.`);
  await assert.rejects(
    assembleContext({ system: SYSTEM, notes, chunks: CHUNKS, history: conversation(2), message: 'Hello', countTokens, budget: BUDGET }),
    (e) => {
      assert.ok(e instanceof ContextBudgetError);
      assert.equal(e.code, 'E_CONTEXT_FULL');
      assert.match(e.message, /^The prompt cannot fit: the system prompt \(\d+ tokens\), the memory notes \(\d+ tokens\) and the new message take \d+ tokens with the template, and only 224 are available/);
      assert.ok(e.notesTokens > BUDGET - e.systemTokens, `${e.notesTokens} notes tokens`);
      return true;
    });
  // a system prompt alone too long: the same error
  await assert.rejects(assembleContext({ system: 'Be brief. '.repeat(120), history: [], message: 'Hi', countTokens, budget: BUDGET }), /the system prompt \(\d+ tokens\)/);
});

test('a tool result keeps the call it answers: the exchange it belongs to is never cut', async () => {
  const countTokens = engineTokenCounter(engine, { template, tools: [REMEMBER], tool_choice: 'auto' });
  const call = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'remember', arguments: '{"note":"tea"}' } }] };
  const history = [...conversation(8), { role: 'user', content: 'Remember that I like tea.' }, call];
  const r = await assembleContext({ system: SYSTEM, history, message: { role: 'tool', tool_call_id: 'c1', content: '{"saved": true}' }, countTokens, budget: 800, hasTools: true });
  assert.ok(r.droppedMessages > 0);
  assert.deepEqual(r.messages.slice(-3), [history.at(-2), call, { role: 'tool', tool_call_id: 'c1', content: '{"saved": true}' }]);
  assert.equal(sum(r.parts), r.tokens);
  assert.ok(r.tokens <= 800);
});
