// tests/chat-turns.mjs — one check shared by the hybrid and the family suites: a chat of four
// turns on one engine evaluates only what each turn adds (the API's promptEvalTokens and
// cachedPromptTokens), regenerating goes back to the snapshot before the answer, an aborted answer
// leaves the next turn intact, and every answer equals a fresh engine's given the whole
// conversation (greedy). For a hybrid the resume point is a recurrent-state snapshot; for an
// attention family the KV cache's prefix (sliding-window rings and KV-shared layers included).
import assert from 'node:assert/strict';
import { Wick } from '../wasm_glue/wick.mjs';

/** The check on `file` with the chat `template`; `arch` is what the load info must name, and
 * `stateBytes` (where given) the recurrent state and its snapshots; `engineOptions` are the load
 * options of the engine under test (device: 'gpu': the GPU path's answers against the CPU's). */
export async function chatTurnsAnswerAsFresh(file, template, { arch, stateBytes, engineOptions = {} } = {}) {
  const e = await Wick.load(file, { threads: 1, contextSize: 512, ...engineOptions });
  const fresh = await Wick.load(file, { threads: 1, contextSize: 512 });
  try {
    assert.equal(e.info.architecture, arch);
    if (engineOptions.device) assert.equal(e.device.type, engineOptions.device);
    if (stateBytes !== undefined) assert.equal(e.info.stateBytes, stateBytes, 'the state and its two snapshots');
    const ask = (engine, messages, extra = {}) =>
      engine.chat.completions.create({ messages, max_tokens: 6, temperature: 0, chat_template: template, ...extra });
    const messages = [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Tell me a story.' }];
    // the tokens of a conversation without the template's answer prompt: where the glue asks
    // the engine to keep the state (the next turn renders the answer prompt anew)
    const historyTokens = async (msgs) =>
      (await e.tokenize(await e.applyChatTemplate(msgs, { template, addGenerationPrompt: false }), { addBos: true, special: true })).length;
    const turns = [];
    for (const [k, question] of ['Another one.', 'And a third.'].entries()) {
      const history = await historyTokens(messages);
      const r = await ask(e, messages);
      turns.push({ ...r.timings, history });
      // a fresh engine given the same conversation answers the same (greedy)
      const f = await ask(fresh, messages);
      assert.equal(r.choices[0].message.content, f.choices[0].message.content, `turn ${k + 1}: the answer differs from a fresh engine's`);
      messages.push({ role: 'assistant', content: r.choices[0].message.content }, { role: 'user', content: question });
    }
    const r3 = await ask(e, messages);
    turns.push({ ...r3.timings, history: await historyTokens(messages) });
    const f3 = await ask(fresh, messages);
    assert.equal(r3.choices[0].message.content, f3.choices[0].message.content, 'turn 3: the answer differs from a fresh engine\'s');
    // turns 2 and 3 evaluate only what follows the previous conversation: the previous answer
    // prompt (which this template may render anew), the answer and the new question
    for (const [k, t] of turns.entries()) {
      if (k === 0) { assert.equal(t.promptEvalTokens, t.promptTokens); continue; }
      const previous = turns[k - 1].history;
      assert.ok(t.cachedPromptTokens >= previous, `turn ${k + 1}: ${t.cachedPromptTokens} cached of the previous conversation's ${previous}`);
      assert.equal(t.promptEvalTokens, t.promptTokens - t.cachedPromptTokens);
    }
    assert.ok(turns[2].promptEvalTokens < turns[2].promptTokens / 2, `turn 3: ${turns[2].promptEvalTokens} of ${turns[2].promptTokens} evaluated`);
    // regenerate: the same conversation again goes back to the snapshot before its last token
    const again = await ask(e, messages);
    assert.equal(again.timings.promptEvalTokens, 1);
    assert.equal(again.choices[0].message.content, r3.choices[0].message.content);
    // abort an answer after two chunks, then go on with the next turn
    const controller = new AbortController();
    let seen = 0;
    const stream = await ask(e, messages, { stream: true, max_tokens: 40, signal: controller.signal });
    for await (const c of stream) { if (c.choices?.[0]?.delta?.content !== undefined && ++seen === 2) controller.abort(); }
    messages.push({ role: 'assistant', content: r3.choices[0].message.content }, { role: 'user', content: 'Thanks.' });
    const r4 = await ask(e, messages);
    const f4 = await ask(fresh, messages);
    assert.equal(r4.choices[0].message.content, f4.choices[0].message.content, 'after an abort, the next turn differs from a fresh engine\'s');
    assert.ok(r4.timings.promptEvalTokens < r4.timings.promptTokens / 2, `after the abort ${r4.timings.promptEvalTokens} of ${r4.timings.promptTokens} evaluated`);
  } finally {
    await e.unload();
    await fresh.unload();
  }
}
