// web/notes.js — memory notes on the page (issue 29): saved text the user adds, edits and
// deletes, kept in localStorage (it survives a reload), put into every conversation's system
// prompt by wasm_glue/context-budget.mjs; and the built-in `remember` tool the page offers when
// the user lets the model propose notes: a call shows a confirmation on its card, and only a
// note the user confirms is saved. Loaded by app.js with import() once the page has started, so
// that it is no part of the page's first download.
import { el } from './util.js';

const KEY = 'wick-notes';
const SETTINGS_KEY = 'wick-notes-settings';

/** The remember tool: offered to the model when the user lets it propose notes. */
export const REMEMBER_TOOL = {
  type: 'function',
  function: {
    name: 'remember',
    description: 'Propose a short note to remember in every later conversation (the user confirms it before it is saved).',
    parameters: { type: 'object', properties: { note: { type: 'string', description: 'the note, one sentence', maxLength: 200 } }, required: ['note'] },
  },
};

function read(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v ?? fallback;
  } catch {
    return fallback;
  }
}

export class Notes {
  /** box: the element the list and the editor go in; the checkboxes #notes-on and #notes-remember. */
  constructor(box, { onChange = () => {} } = {}) {
    this.box = box;
    this.onChange = onChange;
    this.notes = read(KEY, []).filter((n) => typeof n === 'string');
    const s = read(SETTINGS_KEY, {});
    this.onBox = document.getElementById('notes-on');
    this.rememberBox = document.getElementById('notes-remember');
    this.onBox.checked = s.on !== false;
    this.rememberBox.checked = !!s.remember;
    for (const b of [this.onBox, this.rememberBox]) b.addEventListener('change', () => { this.saveSettings(); this.render(); this.onChange(); });
    this.render();
  }

  /** The notes that go into the system prompt ([] when notes are off). */
  active() { return this.onBox.checked ? [...this.notes] : []; }
  /** Whether the model is offered the remember tool. */
  offersRemember() { return this.onBox.checked && this.rememberBox.checked; }

  saveSettings() { localStorage.setItem(SETTINGS_KEY, JSON.stringify({ on: this.onBox.checked, remember: this.rememberBox.checked })); }
  save() { localStorage.setItem(KEY, JSON.stringify(this.notes)); this.render(); this.onChange(); }

  add(text) {
    const note = text.trim();
    if (!note) return false;
    this.notes.push(note);
    this.save();
    return true;
  }
  edit(i, text) {
    const note = text.trim();
    if (!note) this.notes.splice(i, 1);
    else this.notes[i] = note;
    this.save();
  }
  remove(i) { this.notes.splice(i, 1); this.save(); }

  render() {
    const list = el('ul', { className: 'notes-list', id: 'notes-list' }, ...this.notes.map((note, i) => {
      const text = el('textarea', { className: 'note-text', rows: 2, 'aria-label': `Note ${i + 1}` });
      text.value = note;
      text.addEventListener('change', () => this.edit(i, text.value));
      return el('li', { className: 'note' }, text,
        el('button', { type: 'button', className: 'small note-delete', 'aria-label': `Delete note ${i + 1}`, onclick: () => this.remove(i) }, 'Delete'));
    }));
    if (!this.notes.length) list.append(el('li', { className: 'hint' }, 'No notes yet: a note is put into the system prompt of every conversation.'));
    const input = el('textarea', { id: 'note-new', rows: 2, placeholder: 'A note, e.g. "I live in Lyon and prefer short answers."', 'aria-label': 'New note' });
    const addButton = el('button', { type: 'button', className: 'small', id: 'note-add', onclick: () => { if (this.add(input.value)) input.value = ''; } }, 'Add note');
    this.box.replaceChildren(list, el('div', { className: 'note-new' }, input, addButton));
    this.box.hidden = !this.onBox.checked;
  }

  /**
   * A remember call's card: the proposed note and Save / Discard; answer(result) is called once
   * with the tool's result text, after the note was saved (or not).
   */
  confirmCard(card, call, answer) {
    let note = '';
    try { note = String(JSON.parse(call.function.arguments).note ?? ''); } catch { note = ''; }
    card.classList.add('remember');
    const status = card.querySelector('.tool-call-status');
    status.textContent = note ? 'The model proposes this note. Save it?' : 'The model proposed a note without text: nothing to save.';
    const finish = (saved, reason) => {
      buttons.remove();
      card.dataset.answered = 'true';
      card.dataset.saved = String(saved);
      status.textContent = saved ? 'Saved to your notes.' : `Not saved${reason ? ` (${reason})` : ''}.`;
      answer(JSON.stringify(saved ? { saved: true, note } : { saved: false, reason: reason || 'the user declined' }));
    };
    const buttons = el('p', { className: 'remember-buttons' },
      el('button', { type: 'button', className: 'small remember-save', disabled: !note, onclick: () => { this.add(note); finish(true); } }, 'Save note'), ' ',
      el('button', { type: 'button', className: 'small remember-discard', onclick: () => finish(false, 'the user declined') }, 'Discard'));
    card.append(buttons);
  }
}
