// web/sessions.js — saved sessions of the page and <wick-chat> (issue 30): when a reply ends, the
// conversation (its messages, as JSON) and the engine's state (engine.saveState(): the KV cache
// rows in use, src/state.c) are written to the origin's private file system (OPFS), or to the
// Cache API where OPFS cannot be written from a page (Safari has no createWritable there). A
// reload reads the messages back and loads the state, so the next reply evaluates only the new
// message. Both are local: this works offline. The restored conversation's system prompt becomes a
// shared prefix (engine.addPrefix), so a new chat with the same system prompt starts from it too. Imported lazily (import()), so that the page's
// first download does not carry it (tests/weight.test.mjs).
//
// A session is keyed by the model (its URL, or a local file's name and size: the state's own
// header holds the file's hash, and loadState refuses another file's) and by the conversation (a
// scope, e.g. 'page', and an id): two files, <name>.json (the messages) and <name>.state (the
// blob). Removing the state alone keeps the conversation: its next reply reads it all again.
// A message's images (content parts, web/images.js) are kept in its JSON as the data: URLs it was
// sent with, the whole image: a reopened conversation shows them and sends them again as they were.

import { el, formatBytes } from './util.js';

const DIR = 'wick-sessions';
const CACHE = 'wick-sessions-v1';

/** A short name for a key: hex of its SHA-256 (32 digits), FNV-1a where there is no crypto.subtle. */
async function nameOf(key) {
  const bytes = new TextEncoder().encode(key);
  if (globalThis.crypto?.subtle) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return [...digest.subarray(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
  }
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

/** OPFS, when a page can write files there (a browser that never answers counts as none). */
async function opfs() {
  try {
    const root = await Promise.race([navigator.storage.getDirectory(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), 5000))]);
    const dir = await root.getDirectoryHandle(DIR, { create: true });
    const probe = await dir.getFileHandle('.probe', { create: true });
    if (typeof probe.createWritable !== 'function') return null;
    return dir;
  } catch {
    return null;
  }
}

/** The files of one backend: get(name) → Blob | null, put(name, data), remove(name), names(). */
function opfsFiles(dir) {
  return {
    kind: 'opfs',
    async get(name) {
      try { return await (await dir.getFileHandle(name)).getFile(); } catch { return null; }
    },
    async put(name, data) {
      const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
      try { await w.write(data); await w.close(); } catch (e) { await w.abort?.().catch(() => {}); throw e; }
    },
    async remove(name) {
      try { await dir.removeEntry(name); return true; } catch { return false; }
    },
    async names() {
      const out = [];
      for await (const name of dir.keys()) out.push(name);
      return out;
    },
  };
}

function cacheFiles(cache) {
  // a synthetic URL under the page's own origin: nothing is ever fetched from it
  const url = (name) => new URL(`/.wick-sessions/${name}`, location.origin).href;
  return {
    kind: 'cache',
    async get(name) { const r = await cache.match(url(name)); return r ? r.blob() : null; },
    async put(name, data) { await cache.put(url(name), new Response(data)); },
    async remove(name) { return cache.delete(url(name)); },
    async names() { return (await cache.keys()).map((r) => decodeURIComponent(new URL(r.url).pathname.split('/').pop())); },
  };
}

let opened = null;

/** The sessions store, or null where this browser can keep nothing (no OPFS, no Cache API). */
export function openSessions() {
  opened ??= (async () => {
    const dir = globalThis.navigator?.storage?.getDirectory ? await opfs() : null;
    if (dir) return new Sessions(opfsFiles(dir));
    if (globalThis.caches) {
      try { return new Sessions(cacheFiles(await caches.open(CACHE))); } catch { return null; }
    }
    return null;
  })();
  return opened;
}

class Sessions {
  constructor(files) { this.files = files; this.kind = files.kind; }

  /** Writes a session: meta (JSON: {key, model, messages, …}), and the state blob (null: none). */
  async save(key, meta, blob) {
    const name = await nameOf(key);
    // the state first, then the messages that name it: a reload between the two finds the old
    // messages with a newer state, which goes on the same conversation (the prompt extends it or
    // the cache reuses what matches)
    if (blob) await this.files.put(`${name}.state`, blob);
    else await this.files.remove(`${name}.state`);
    await this.files.put(`${name}.json`, JSON.stringify({ ...meta, key, savedAt: Date.now(), stateBytes: blob ? blob.length : 0 }));
  }

  /** {meta, blob (a Uint8Array, or null when the state was removed)} of a key, or null. */
  async load(key) {
    const name = await nameOf(key);
    const json = await this.files.get(`${name}.json`);
    if (!json) return null;
    let meta;
    try { meta = JSON.parse(await json.text()); } catch { return null; }
    const state = await this.files.get(`${name}.state`);
    return { meta, blob: state ? new Uint8Array(await state.arrayBuffer()) : null };
  }

  /** Every saved session: [{key, meta, bytes (its state's size, 0 when removed)}], newest first. */
  async list() {
    const names = await this.files.names();
    const out = [];
    for (const n of names) {
      if (!n.endsWith('.json')) continue;
      const base = n.slice(0, -'.json'.length);
      try {
        const meta = JSON.parse(await (await this.files.get(n)).text());
        const state = names.includes(`${base}.state`) ? await this.files.get(`${base}.state`) : null;
        out.push({ key: meta.key, meta, bytes: state ? state.size : 0 });
      } catch {
        // a half-written or foreign file: not a session
      }
    }
    return out.sort((a, b) => (b.meta.savedAt || 0) - (a.meta.savedAt || 0));
  }

  /** Removes a session's state only: the conversation stays, and its next reply reads it again. */
  async removeState(key) { return this.files.remove(`${await nameOf(key)}.state`); }

  /** Removes a session whole (its messages and its state). */
  async forget(key) {
    const name = await nameOf(key);
    await this.files.remove(`${name}.state`);
    return this.files.remove(`${name}.json`);
  }
}

/** The newest session of a model in a scope (the page, one <wick-chat>), or null. */
export async function latestSession(store, modelKey, scope) {
  const found = (await store.list()).find((s) => s.meta.modelKey === modelKey && s.meta.scope === scope);
  return found ? store.load(found.key) : null;
}

/** The key of a model: its URL, or a local file's name, size and date. */
export function modelKeyOf(source) {
  if (typeof source === 'string') return new URL(source, location.href).href;
  if (source && typeof source === 'object' && 'name' in source) return `file:${source.name}:${source.size}:${source.lastModified || 0}`;
  return String(source);
}

/** A new conversation's id. */
export function newConversationId() {
  return `${Date.now().toString(36)}-${Math.floor(Math.random() * 2 ** 32).toString(36)}`;
}

/** Saves the conversation and the engine's state; the state is left out (with the reason) where the engine cannot save one (the GPU path). */
export async function saveConversation(store, engine, { modelKey, scope, conversation, model, messages, system }) {
  let blob = null, reason = null;
  try {
    blob = await engine.saveState();
  } catch (e) {
    reason = e.message;
  }
  const key = `${scope}\n${modelKey}\n${conversation}`;
  await store.save(key, { modelKey, scope, conversation, model, system: system || '', messages }, blob);
  return { key, bytes: blob ? blob.length : 0, reason };
}

/** After a load: the newest conversation of this model in this scope (or the one of `key`: the
 *  cache panel's Open), its state loaded into the
 *  engine, and its system prompt's state given to the engine as a shared prefix (a new chat with
 *  the same system prompt starts from it): {meta, tokens (the state's, 0 without one), prefixTokens
 *  (the shared prefix's, 0 without one), error (why the state was refused)}, or null. */
export async function restoreSession(engine, modelKey, scope, key = null) {
  const store = await openSessions();
  const saved = store && (key ? await store.load(key) : await latestSession(store, modelKey, scope));
  if (!saved?.meta.messages?.length) return null;
  let tokens = 0, prefixTokens = 0, error = null;
  if (saved.blob) {
    try { tokens = (await engine.loadState(saved.blob)).tokens; } catch (e) { error = e; }
  }
  if (tokens && saved.meta.system) prefixTokens = await shareSystemPrompt(engine, saved.meta.system, saved.blob);
  return { meta: saved.meta, tokens, prefixTokens, error };
}

/** The state of a system prompt as a shared prefix (engine.addPrefix): the cache holds the loaded
 *  conversation, which starts with it, so savePrefix evaluates at most its last token; the
 *  conversation's state is put back after. Returns the prefix's tokens (0 where it could not be
 *  made: the conversation goes on as loaded all the same). A prefix only matches a prompt that
 *  starts with all of its tokens, so the conversation's own state would not serve a new chat. */
async function shareSystemPrompt(engine, system, blob) {
  let tokens = 0;
  try {
    const prefix = await engine.savePrefix({ system });
    tokens = (await engine.addPrefix(prefix.blob)).tokens;
  } catch {
    // no shared prefix: a new chat reads its system prompt again
  }
  await engine.loadState(blob);
  return tokens;
}

/** The cache panel's list of saved conversations: each one's model, messages and state size, a
 *  button that removes the state (the conversation stays) and one that forgets it (onForget(key));
 *  where `open` is given ({modelKey, current, onOpen(key)}: the loaded model, the conversation on
 *  screen), the other conversations of that model in this scope have an Open button (onOpen(key)). */
export async function renderSessions(list, scope, onForget, open = null) {
  let store, sessions;
  try {
    store = await openSessions();
    sessions = store ? await store.list() : [];
  } catch (e) {
    list.replaceChildren(el('li', { className: 'hint' }, `The saved conversations cannot be read: ${e.message}`));
    return;
  }
  if (!store) { list.replaceChildren(el('li', { className: 'hint' }, 'This browser offers no storage for conversations.')); return; }
  const where = store.kind === 'opfs' ? 'the origin private file system' : 'the Cache API';
  const again = () => renderSessions(list, scope, onForget, open);
  list.replaceChildren(...sessions.map((s) => {
    const key = String(s.meta.modelKey);
    let model = s.meta.model || key;
    try { model = key.startsWith('file:') ? key.split(':')[1] : decodeURIComponent(new URL(key).pathname.split('/').pop()); } catch { /* the name the engine gave */ }
    const n = s.meta.messages?.length || 0;
    const asked = s.meta.messages?.find((m) => m.role === 'user')?.content;
    const first = Array.isArray(asked) ? asked.map((p) => (p.type === 'text' ? p.text : '[image] ')).join('') : asked || '';
    const opens = open && s.meta.scope === scope && key === open.modelKey && s.key !== open.current;
    return el('li', { className: 'cache-entry session-entry', title: `${key} (${where})`, 'data-bytes': String(s.bytes), 'data-current': String(!!open && s.key === open.current) },
      el('span', { className: 'cache-name' }, `${model}${s.meta.scope === scope ? '' : ' (<wick-chat>)'}: ${n} message${n === 1 ? '' : 's'}${first ? ` (“${first.length > 40 ? `${first.slice(0, 40)}…` : first}”)` : ''}`),
      opens ? el('button', { type: 'button', className: 'small open-session', 'aria-label': `Open the conversation with ${model} again`,
        onclick: () => open.onOpen(s.key) }, 'Open') : null,
      el('span', { className: 'cache-size' }, s.bytes ? `state ${formatBytes(s.bytes)}` : 'no state: its next reply reads it again'),
      s.bytes ? el('button', { type: 'button', className: 'small remove-state', 'aria-label': `Remove the saved state of the conversation with ${model}`,
        onclick: async () => { await store.removeState(s.key); again(); } }, 'Remove state') : null,
      el('button', { type: 'button', className: 'small forget', 'aria-label': `Forget the conversation with ${model}`,
        onclick: async () => { await store.forget(s.key); onForget?.(s.key); again(); } }, 'Forget'));
  }));
  if (!sessions.length) list.append(el('li', { className: 'hint' }, 'None yet: a chat is kept here when a reply ends.'));
  list.dataset.count = String(sessions.length);
}

/** The page's views of a saved conversation's messages (as text: their tokens were not kept), and
 *  the tool calls of its last reply still waiting for a result: {views, waiting: [{call, card}]}. */
export function savedViews(messages, { userView, toolCallCard, answerCard, toolResultView }) {
  const views = [], calls = new Map();
  let waiting = [];
  for (const m of messages) {
    if (m.role === 'user') views.push(userView(m.content));
    else if (m.role === 'assistant') {
      const box = el('article', { className: 'msg assistant restored' }, el('h3', { className: 'visually-hidden' }, 'Answer'));
      if (m.content) box.append(el('div', { className: 'reply-text' }, m.content));
      const cards = (m.tool_calls || []).map(toolCallCard);
      box.append(...cards);
      waiting = (m.tool_calls || []).map((call, i) => ({ call, card: cards[i] }));
      for (const w of waiting) calls.set(w.call.id, w.call);
      views.push(box);
    } else if (m.role === 'tool') {
      const at = waiting.findIndex((w) => w.call.id === m.tool_call_id);
      if (at >= 0) answerCard(waiting.splice(at, 1)[0].card);
      views.push(toolResultView(calls.get(m.tool_call_id) || { id: m.tool_call_id, function: { name: 'a tool' } }, m.content));
    }
  }
  return { views, waiting };
}
