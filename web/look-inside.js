// web/look-inside.js — the "Look inside" panel: the two phases of a generation (prefill, then
// decode), the candidates the sampler had for a token (probabilities after temperature and
// truncation, the drawn one highlighted), and the context window with a mark where tokens
// were dropped, and each image of the prompt: the positions it took and its encoding time, or that
// its positions were reused. It shows the token being produced, or a token the reader picked afterwards.
import { el, formatBytes, formatCount, formatDuration, visibleToken } from './util.js';

const FINISH_WORDS = { eog: 'the model ended its text', length: 'the length limit', stop: 'a stop string', abort: 'stopped by you' };

export class LookInside {
  constructor({ phases, cands, caption, title, gauge, gaugeText }) {
    Object.assign(this, { phasesEl: phases, candsEl: cands, captionEl: caption, titleEl: title, gaugeEl: gauge, gaugeTextEl: gaugeText });
    this.run = null;
    this.pinned = null;
  }

  /** A generation starts: prefill of `promptTokens` tokens (null: known with the first token) into a window of `contextSize`. */
  startRun({ promptTokens, contextSize, settings, kvBytes }) {
    this.run = { promptTokens, contextSize, settings, kvBytes, generated: 0, shifted: 0, t0: performance.now(), tFirst: null, timings: null, finish: null };
    this.pinned = null;
    this.renderPhases();
    this.renderGauge();
  }

  /** A token arrived (record: {index, text, probs, shifted, settings}). */
  onToken(record) {
    const run = this.run;
    if (!run) return;
    if (run.tFirst === null) run.tFirst = performance.now();
    run.generated += record.tokenCount;
    run.promptTokens ??= record.promptTokens ?? null;
    run.shifted += record.shifted || 0;
    run.latest = record;
    this.scheduleRender();
  }

  /** The generation ended with the engine's timings (null when it was stopped before any token). */
  finishRun(done) {
    if (!this.run) return;
    this.run.timings = done.timings;
    this.run.finish = done.finishReason;
    this.run.images = done.images || []; // the engine's wick.images, one per image in prompt order
    if (this.run.latest && !this.pinned) this.renderCandidates(this.run.latest, false);
    this.renderPhases();
    this.renderGauge();
  }

  /** The reader picked a token of an answer: show its candidates until the next generation. */
  pin(record) {
    this.pinned = record;
    this.renderCandidates(record, true);
  }

  // Redrawn at most once a frame, however fast the tokens come.
  scheduleRender() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this.run?.latest && !this.pinned) this.renderCandidates(this.run.latest, false);
      this.renderPhases();
      this.renderGauge();
    });
  }

  renderCandidates(record, pinned) {
    const probs = record.probs || [];
    const s = record.settings || {};
    this.titleEl.textContent = `Candidates for token ${record.index + 1}${pinned ? ' (picked)' : ''}`;
    const sum = probs.reduce((a, p) => a + p.p, 0);
    const drawn = probs.find((p) => p.drawn);
    const source = record.index === 0 ? 'from the last prompt position, after prefill' : `from decode step ${record.index}`;
    const truncation = [`T ${s.temperature}`, s.topK ? `top-k ${s.topK}` : 'no top-k', `top-p ${s.topP}`, `min-p ${s.minP}`].join(', ');
    let caption;
    if (!probs.length) caption = `“${visibleToken(record.text)}”: no candidates were recorded for this token.`;
    else if (s.temperature === 0) caption = `Temperature 0 is greedy: the most likely token always wins (${source}).`;
    else caption = `Drawn ${source}. ${truncation}. The ${probs.length} shown hold ${(sum * 100).toFixed(1)}% of the probability.`;
    if (drawn === undefined && probs.length) caption += ' The drawn token is not among these.';
    this.captionEl.textContent = caption;
    this.candsEl.replaceChildren(...probs.map((p) => {
      const pct = p.p * 100;
      return el('li', { className: p.drawn ? 'cand drawn' : 'cand', 'data-p': String(p.p), 'aria-current': p.drawn ? 'true' : null },
        el('span', { className: 'cand-token', title: `token id ${p.token}` }, visibleToken(p.text)),
        el('span', { className: 'cand-bar', 'aria-hidden': 'true' }, el('span', { className: 'cand-fill', style: `width:${Math.max(0.5, pct).toFixed(2)}%` })),
        el('span', { className: 'cand-p' }, pct >= 10 ? `${pct.toFixed(1)}%` : `${pct.toFixed(2)}%`),
        p.drawn ? el('span', { className: 'visually-hidden' }, ' (drawn)') : null);
    }));
  }

  renderPhases() {
    const run = this.run;
    if (!run) return;
    const t = run.timings;
    const now = performance.now();
    const prefillMs = t ? t.prefillMs : (run.tFirst ?? now) - run.t0;
    const decodeMs = t ? t.decodeMs : run.tFirst ? now - run.tFirst : 0;
    const total = Math.max(1, prefillMs + decodeMs);
    const prefilling = !t && run.tFirst === null;
    const evalTokens = t ? t.promptEvalTokens : null;
    // reused: from the cache as the last reply left it, or from a saved state loaded into it
    // (a reloaded conversation, a site's shipped prefix: timings.promptFromState)
    const fromState = t?.promptFromState ? `, ${formatCount(t.promptFromState)} of them from a saved state` : '';
    const reused = t?.cachedPromptTokens ? ` (${formatCount(t.cachedPromptTokens)} reused from the KV cache${fromState})` : '';
    const prefillText = prefilling
      ? `running ${run.promptTokens === null ? 'the prompt' : `${formatCount(run.promptTokens)} prompt tokens`} through the network as one batch…`
      : `${formatCount(evalTokens ?? run.promptTokens)} prompt tokens in one batch${reused} · ${formatDuration(prefillMs)}` +
        (t?.prefillTokensPerSecond ? ` · ${formatCount(t.prefillTokensPerSecond)} tok/s` : '');
    const generated = t ? t.generatedTokens : run.generated;
    const liveRate = decodeMs > 0 && generated > 1 ? ((generated - 1) * 1000) / decodeMs : null;
    const rate = t ? t.decodeTokensPerSecond : liveRate;
    let decodeText = prefilling ? 'waiting for the first token' :
      `${formatCount(generated)} tokens, one at a time · ${formatDuration(decodeMs)}${rate ? ` · ${formatCount(rate)} tok/s` : ''}`;
    if (run.finish) decodeText += ` · ended by ${FINISH_WORDS[run.finish] || run.finish}`;
    const row = (name, cls, width, text, active) =>
      el('div', { className: `phase ${cls}${active ? ' active' : ''}` },
        el('span', { className: 'phase-name' }, name),
        el('span', { className: 'phase-track', 'aria-hidden': 'true' }, el('span', { className: 'phase-fill', style: `width:${width.toFixed(1)}%` })),
        el('span', { className: 'phase-text' }, text));
    this.phasesEl.replaceChildren(...[
      row('Prefill', 'prefill', prefilling ? 100 : (prefillMs / total) * 100, prefillText, prefilling),
      row('Decode', 'decode', prefilling ? 0 : (decodeMs / total) * 100, decodeText, !prefilling && !t),
      run.images?.length ? el('ul', { className: 'images-inside', 'aria-label': 'Images of the prompt' }, run.images.map((im, i) =>
        el('li', { 'data-positions': String(im.positions), 'data-encoded': String(im.encoded) },
          `Image ${i + 1} (${im.width} × ${im.height}${im.tiles > 1 ? `, ${im.tiles} tiles` : ''}): ${formatCount(im.positions)} positions · ` +
          (im.encoded ? `encoded in ${formatDuration(im.encodeMs)}` : 'reused from the KV cache, not encoded again')))) : null].filter(Boolean));
    this.phasesEl.dataset.phase = prefilling ? 'prefill' : t ? 'done' : 'decode';
    this.phasesEl.dataset.promptEval = t ? String(t.promptEvalTokens) : '';
    this.phasesEl.dataset.promptFromState = t ? String(t.promptFromState ?? 0) : '';
  }

  renderGauge() {
    const run = this.run;
    if (!run) return;
    const n = run.contextSize;
    const t = run.timings;
    const shifted = t ? t.contextShiftedTokens : run.shifted;
    const generated = t ? t.generatedTokens : run.generated;
    const used = t ? t.contextUsed : Math.min(n, run.promptTokens + generated - shifted);
    // a shift keeps the first token(s) and drops the oldest after them: prompt tokens first
    const keep = shifted ? 1 : 0;
    const promptIn = Math.min(used, Math.max(keep, run.promptTokens - shifted));
    const genIn = Math.max(0, used - promptIn);
    const pct = (x) => `${((x / n) * 100).toFixed(2)}%`;
    const parts = [
      el('span', { className: 'gauge-prompt', style: `width:${pct(promptIn)}`, title: `${promptIn} prompt tokens` }),
      el('span', { className: 'gauge-gen', style: `width:${pct(genIn)}`, title: `${genIn} generated tokens` }),
    ];
    if (shifted) parts.push(el('span', { className: 'gauge-drop', style: `left:${pct(keep)}`, title: `${shifted} tokens dropped here` }));
    this.gaugeEl.replaceChildren(...parts);
    this.gaugeEl.setAttribute('aria-valuemax', String(n));
    this.gaugeEl.setAttribute('aria-valuenow', String(used));
    this.gaugeEl.setAttribute('aria-valuetext', `${used} of ${n} tokens`);
    this.gaugeEl.dataset.shifted = String(shifted);
    const kv = run.kvBytes ? ` · KV cache ${formatBytes((run.kvBytes * used) / n)} of ${formatBytes(run.kvBytes)}` : '';
    let text = `${formatCount(used)} of ${formatCount(n)} tokens in use (${formatCount(promptIn)} prompt, ${formatCount(genIn)} generated)${kv}.`;
    if (shifted) text += ` The window filled: ${formatCount(shifted)} old tokens were dropped after the first and the cache shifted (red mark).`;
    this.gaugeTextEl.textContent = text;
  }
}
