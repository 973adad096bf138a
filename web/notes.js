// web/notes.js — the page's memory notes (loaded by app.js when first needed, not with the page):
// short texts the user adds, edits and deletes, kept on this device (localStorage), and put into
// every chat's system prompt after the user's own system prompt. With "Let the model propose
// notes", chats offer the model a `remember` tool; a call to it shows the proposed note with Save
// and Discard, and only a note the user saves is kept (the model is told which it was).
// Everything is put on the page as text (textContent), never as HTML.
import { el } from './util.js';

const STORE_KEY = 'wick-notes';
const OFFER_KEY = 'wick-notes-offer-remember';
export const NOTES_HEADER = 'Notes the user saved about themselves and their wishes (memory):';
const NOTE_MAX_CHARS = 300;
const PROPOSED_MAX_CHARS = 120; // what the model may propose at once: a short note, and a bounded call

/** The tool a chat offers the model when it may propose notes. */
export const REMEMBER_TOOL = {
  type: 'function',
  function: {
    name: 'remember',
    description: 'Propose a short note about the user to keep for future conversations; the user confirms it before it is saved.',
    parameters: { type: 'object', properties: { note: { type: 'string', maxLength: PROPOSED_MAX_CHARS } }, required: ['note'] },
  },
};

/** The saved notes: [{id, text}], oldest first. */
export function loadNotes() {
  try {
    const list = JSON.parse(localStorage.getItem(STORE_KEY) || '[]');
    return Array.isArray(list) ? list.filter((n) => n && typeof n.text === 'string' && n.text.trim()) : [];
  } catch {
    return []; // storage refused (a private window) or damaged: no notes
  }
}

function storeNotes(list) {
  localStorage.setItem(STORE_KEY, JSON.stringify(list));
}

/** Saves a new note; returns it. */
export function addNote(text) {
  const note = { id: `n${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`, text: text.trim().slice(0, NOTE_MAX_CHARS) };
  if (!note.text) return null;
  storeNotes([...loadNotes(), note]);
  return note;
}

/** The system message of a chat: the user's system prompt, then the notes (or null when both are empty). */
export function systemWithNotes(system, notes = loadNotes()) {
  const block = notes.length ? `${NOTES_HEADER}\n${notes.map((n) => `- ${n.text}`).join('\n')}` : '';
  return [system, block].filter(Boolean).join('\n\n') || null;
}

/** Whether chats offer the remember tool (the panel's checkbox). */
export function offersRemember() {
  try { return localStorage.getItem(OFFER_KEY) === '1'; } catch { return false; }
}

/** A chat's tools (the Tools box's, or undefined) with the remember tool when it is offered. */
export function withRemember(tools) {
  if (!offersRemember() || tools?.some((t) => t.function.name === 'remember')) return tools;
  return [...(tools || []), REMEMBER_TOOL];
}

let panel = null; // the Memory notes panel once drawn: {refresh}

/** Draws the Memory notes panel into container the first time (later calls keep it). */
export function openPanel(container, onChange) {
  panel ??= renderNotesPanel(container, { onChange });
  return panel;
}

/** Fills the Memory notes panel: the list (each editable and removable), a box to add one, and the checkbox. */
export function renderNotesPanel(container, { onChange = () => {} } = {}) {
  const list = el('ul', { className: 'notes-list', id: 'notes-list' });
  const draw = () => {
    const notes = loadNotes();
    list.replaceChildren(...notes.map((n) => {
      const text = el('textarea', { className: 'note-text', rows: 2, 'aria-label': 'Note', maxLength: NOTE_MAX_CHARS });
      text.value = n.text;
      text.addEventListener('change', () => {
        const next = loadNotes().map((m) => (m.id === n.id ? { ...m, text: text.value.trim() } : m)).filter((m) => m.text);
        storeNotes(next);
        draw();
        onChange();
      });
      const remove = el('button', { type: 'button', className: 'note-delete', 'aria-label': `Delete the note “${n.text.slice(0, 40)}”`, onclick: () => {
        storeNotes(loadNotes().filter((m) => m.id !== n.id));
        draw();
        onChange();
      } }, 'Delete');
      return el('li', { className: 'note', 'data-note-id': n.id }, text, remove);
    }));
    if (!notes.length) list.append(el('li', { className: 'hint' }, 'No notes yet.'));
  };
  const input = el('textarea', { id: 'note-new', rows: 2, maxLength: NOTE_MAX_CHARS, placeholder: 'I prefer metric units.', 'aria-label': 'A new note' });
  const add = el('button', { type: 'button', id: 'note-add', onclick: () => {
    if (addNote(input.value)) { input.value = ''; draw(); onChange(); }
  } }, 'Add note');
  const offer = el('input', { type: 'checkbox', id: 'notes-offer' });
  offer.checked = offersRemember();
  offer.addEventListener('change', () => { localStorage.setItem(OFFER_KEY, offer.checked ? '1' : '0'); onChange(); });
  container.replaceChildren(
    el('p', { className: 'hint' }, 'Kept on this device and put into every chat\'s system prompt.'),
    list, input, add,
    el('label', {}, offer, ' Let the model propose notes (a remember tool; you confirm each)'));
  draw();
  return { refresh: draw };
}

/**
 * A remember call as a card (null for any other call): the proposed note, Save and Discard. Once
 * the user chose, reply(message) gets the call's result, the tool message saying which it was.
 */
export function confirmCard(call, reply) {
  if (call.function.name !== 'remember') return null;
  let text = '';
  try { text = String(JSON.parse(call.function.arguments).note ?? ''); } catch { text = call.function.arguments; }
  const status = el('p', { className: 'tool-call-status' }, 'The model proposes this note. Save it?');
  const decide = (saved) => {
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    card.dataset.answered = 'true';
    card.dataset.saved = String(saved);
    const note = saved ? addNote(text) : null;
    status.textContent = note ? 'Saved to your notes.' : 'Not saved.';
    reply({ role: 'tool', tool_call_id: call.id, content: note ? 'The user saved the note.' : 'The user chose not to save the note.' });
    panel?.refresh();
  };
  const card = el('section', { className: 'tool-call remember', 'data-name': 'remember', 'data-note': 'proposed', 'data-call-id': call.id, 'aria-label': 'The model proposes a note' },
    el('p', { className: 'tool-call-head' }, el('span', { className: 'tool-call-label' }, 'Proposes a note')),
    el('blockquote', { className: 'note-proposed' }, text),
    el('p', {},
      el('button', { type: 'button', className: 'note-save', onclick: () => decide(true) }, 'Save note'), ' ',
      el('button', { type: 'button', className: 'note-discard', onclick: () => decide(false) }, 'Discard')),
    status);
  return card;
}
