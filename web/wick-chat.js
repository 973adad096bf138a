// web/wick-chat.js — <wick-chat>: a language model chat box for any page, with one script tag.
//
//   <script type="module" src="https://example.org/wick/web/wick-chat.js"></script>
//   <wick-chat model="https://example.org/models/stories260K.gguf"></wick-chat>
//
// Attributes:
//   model           URL of a GGUF file (required; relative URLs resolve against the page)
//   mmproj          URL of the model's image encoder (an mmproj GGUF): with it, chat messages can
//                   carry images (the image button, a paste into the box, a drop onto the chat),
//                   shown as thumbnails before sending and sent as OpenAI content parts
//   mode            "chat" (the model's chat template) or "completion" (continue the text);
//                   default: chat when the model has a template, else completion
//   system          system prompt (chat mode)
//   placeholder     text of the empty prompt box
//   max-tokens      default 200;  temperature (default the engine's, 0.8);  seed (default random)
//   context-size    the context window in tokens (default: the engine's choice)
//   autoload        load the model at once (else: on the first Send, or the Load button)
//   service-worker  URL of coi-sw.js beside the page: registered when the page is not
//                   cross-origin isolated, so the engine gets threads (the page reloads once)
//   offline         with service-worker: the page, wick's files, the wasm builds and the index
//                   are kept at the first visit and served from the browser's cache, so the page
//                   and a model loaded once before work with no network (a new wick version is
//                   fetched as a whole at the next visit; see coi-sw.js)
//   tools           functions the model may call (chat mode), an OpenAI-style JSON array; or
//                   set the `tools` property to the array
//   tool-choice     auto (default), required, none, or the name of one function (forced)
//   save-session    chat mode: the conversation and the engine's state are kept on this device
//                   (OPFS, or the Cache API) when a reply ends, and a reload of the page brings
//                   them back: the next reply evaluates only the new message. The value names the
//                   conversation among this page's (default: one per page); see web/sessions.js
//   prefix-state    URL of a state file written by `wick prefix -m MODEL --system "…"` (the
//                   same model file and system attribute): loaded with engine.addPrefix, so a
//                   visitor's first reply evaluates only their own message (timings.promptFromState)
//   index           URL of a retrieval index (`wick index FOLDER -m EMBEDDING.gguf -o site-index.json`):
//                   each chat message's nearest chunks are given to the model as documents, and
//                   the answer lists them as links to their pages (the index's sources, relative
//                   to the index's URL)
//   embedding-model URL of the GGUF the index was made with (required with index; loaded beside
//                   the chat model, and checked against the index's model id)
//   top-k           chunks retrieved per message (default 4)
// A reply that calls tools shows a card per call (name and arguments) and fires wick-tool-call
// {calls}; each call's result is then given with sendToolResult(callId, text) (or typed by the
// user: while calls wait, a message is the next one's result), and once all are in, the model's
// next answer follows.
// Events (bubbling, composed): wick-ready {info}, wick-token {text}, wick-done {text, timings,
// finishReason, prompt (as the template rendered it), images (the engine's wick.images: per image of
// the prompt, its positions and whether it was encoded), sources (with index: the chunks given,
// each {text, source, title, score, url})}, wick-tool-call {calls}, wick-saved {key, bytes, reason} (save-session),
// wick-error {error}. Methods: load(), send(text),
// sendToolResult(callId, text), stop(). Properties: engine, tools, messages.
// The wick files (wasm_glue/, build/wasm/, node_modules/@huggingface/jinja) must be on the same
// site as this script: browsers start Web Workers only from the page's own origin.
import { Wick } from '../wasm_glue/wick.mjs';
import { ensureCrossOriginIsolation, controlledByServiceWorker, engineWorkerUrl, keepOffline } from './coi.js';
import { formatBytes, formatCount, formatDuration, detectFeatures, RateMeter, progressText } from './util.js';
import { parseToolsText, toolCallCard, answerCard } from './tool-cards.js';
import { ImageTray, imageFiles, userContent, contentText, contentImages, isImageUrl } from './images.js';

const STYLE = `
:host { display: block; --wick-accent: #b55d0b; --wick-bg: #fff; --wick-ink: #1d1d1f; --wick-muted: #5c5f66;
  --wick-line: #d9d7d0; --wick-user: #e9f0fb; font: 15px/1.5 system-ui, sans-serif; color: var(--wick-ink); }
@media (prefers-color-scheme: dark) { :host { --wick-accent: #f0a04b; --wick-bg: #202124; --wick-ink: #e8e6e3;
  --wick-muted: #a4a7ad; --wick-line: #3a3b3f; --wick-user: #243049; } }
.box { background: var(--wick-bg); border: 1px solid var(--wick-line); border-radius: 10px; padding: 0.75rem;
  display: flex; flex-direction: column; gap: 0.6rem; }
.head { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; justify-content: space-between; font-size: 0.85rem; }
.name { font-weight: 600; }
.status { color: var(--wick-muted); }
progress { width: 100%; accent-color: var(--wick-accent); }
progress[hidden], [hidden] { display: none !important; }
.log { min-height: 6rem; max-height: var(--wick-log-height, 22rem); overflow-y: auto; display: flex; flex-direction: column; gap: 0.5rem; }
.log:empty::before { content: attr(data-empty); color: var(--wick-muted); font-size: 0.9rem; }
.msg { white-space: pre-wrap; overflow-wrap: anywhere; }
.user { align-self: flex-end; background: var(--wick-user); padding: 0.35rem 0.6rem; border-radius: 8px; max-width: 85%; }
.prompt { color: var(--wick-accent); font-weight: 600; }
.error { color: #b3261e; font-size: 0.88rem; }
.stats { font-size: 0.75rem; color: var(--wick-muted); white-space: normal; margin-top: 0.15rem; }
form { display: flex; gap: 0.5rem; align-items: flex-end; flex-wrap: wrap; }
textarea { flex: 1 1 12rem; font: inherit; color: inherit; background: transparent; border: 1px solid var(--wick-line);
  border-radius: 6px; padding: 0.4rem 0.5rem; resize: vertical; min-width: 0; }
button { font: inherit; font-size: 0.9rem; padding: 0.4rem 0.85rem; border-radius: 6px; border: 1px solid var(--wick-line);
  background: transparent; color: inherit; cursor: pointer; min-height: 2.2rem; }
button.primary { background: var(--wick-accent); border-color: var(--wick-accent); color: #fff; font-weight: 600; }
button:disabled { opacity: 0.5; cursor: not-allowed; }
:focus-visible { outline: 3px solid #1a66d2; outline-offset: 2px; }
.note { font-size: 0.78rem; color: var(--wick-muted); margin: 0; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.tool-call { border: 1px solid var(--wick-line); border-left: 4px solid var(--wick-accent); border-radius: 8px; padding: 0.35rem 0.6rem; margin: 0.25rem 0; white-space: normal; }
.tool-call p { margin: 0; }
.tool-call-label, .tool-call-status { color: var(--wick-muted); font-size: 0.85rem; }
.tool-name { font-weight: 600; }
.tool-args { margin: 0.25rem 0; font-size: 0.82rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.tool { align-self: flex-end; border: 1px dashed var(--wick-line); padding: 0.35rem 0.6rem; border-radius: 8px; max-width: 85%; }
.tool-head { display: block; color: var(--wick-muted); font-size: 0.8rem; }
.sources { font-size: 0.8rem; color: var(--wick-muted); white-space: normal; margin-top: 0.15rem; }
.sources a { color: var(--wick-accent); margin-right: 0.6rem; }
.images { display: flex; flex-wrap: wrap; gap: 0.5rem; padding-top: 0.4rem; }
.image-thumb { position: relative; margin: 0; }
.image-thumb img, .thumbs img { display: block; height: 3.5rem; max-width: 7rem; object-fit: cover; border-radius: 4px; border: 1px solid var(--wick-line); }
.image-remove { position: absolute; top: -0.4rem; right: -0.4rem; min-height: 0; padding: 0 0.35rem; border-radius: 999px; background: var(--wick-bg); }
.thumbs { display: flex; flex-wrap: wrap; gap: 0.3rem; margin-bottom: 0.25rem; }
`;
const NO_VISION = 'This model cannot see images: give <wick-chat> a vision model and its mmproj attribute (the image encoder)';
const DEFAULT_TOP_K = 4;

let instances = 0;

class WickChat extends HTMLElement {
  static get observedAttributes() { return ['model']; }

  constructor() {
    super();
    const id = ++instances;
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = STYLE;
    const box = document.createElement('div');
    box.className = 'box';
    box.setAttribute('part', 'box');
    // static markup only: everything that varies is set as text below
    box.innerHTML = `
      <div class="head"><span class="name"></span><span class="status" role="status"></span>
        <button type="button" class="load">Load model</button></div>
      <progress max="1" value="0" hidden></progress>
      <div class="log" part="log" aria-live="polite" data-empty="Ask something, or start a story."></div>
      <div class="images" role="group" aria-label="Images for the next message" hidden></div>
      <form>
        <label class="sr" for="wick-prompt-${id}">Prompt</label>
        <textarea id="wick-prompt-${id}" rows="2"></textarea>
        <button type="button" class="image" disabled>Add image</button>
        <input type="file" accept="image/*" multiple hidden>
        <button type="submit" class="primary send">Send</button>
        <button type="button" class="stop" disabled>Stop</button>
      </form>
      <p class="note"></p>`;
    root.append(style, box);
    const q = (s) => root.querySelector(s);
    this.ui = { name: q('.name'), status: q('.status'), loadButton: q('.load'), progress: q('progress'), log: q('.log'),
      form: q('form'), prompt: q('textarea'), send: q('.send'), stop: q('.stop'), note: q('.note'), image: q('.image') };
    this.ui.image.title = NO_VISION;
    this._tray = new ImageTray({ tray: q('.images'), button: this.ui.image, input: q('input[type=file]'), onError: (m) => this._setStatus(m) });
    // an image pasted into the box or dropped onto the chat goes with the next message
    this.ui.prompt.addEventListener('paste', (e) => {
      const files = imageFiles(e.clipboardData);
      if (!files.length) return;
      if (!e.clipboardData.types.includes('text/plain')) e.preventDefault();
      this._tray.add(files);
    });
    box.addEventListener('dragover', (e) => { if ([...(e.dataTransfer?.types || [])].includes('Files')) e.preventDefault(); });
    box.addEventListener('drop', (e) => {
      const files = imageFiles(e.dataTransfer);
      if (!files.length) return;
      e.preventDefault();
      this._tray.add(files);
    });
    this.engine = null;
    this.messages = [];
    this._tools = undefined;  // set by the property; else read from the attribute
    this._pending = [];       // the last answer's tool calls still waiting for a result: {call, card}
    this._loading = null;
    this._controller = null;
    this._saving = null;      // the save of the last reply's state (save-session)
    this._conversation = null;
    this._retrieval = null;   // with index: the promise of {index, encoder, base}
    this.ui.loadButton.addEventListener('click', () => this.load());
    this.ui.form.addEventListener('submit', (e) => { e.preventDefault(); this.send(this.ui.prompt.value); });
    this.ui.prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.send(this.ui.prompt.value); }
      if (e.key === 'Escape') this.stop();
    });
    this.ui.stop.addEventListener('click', () => this.stop());
  }

  connectedCallback() {
    this.ui.prompt.placeholder = this.getAttribute('placeholder') || 'Once upon a time';
    this._describe();
    // kept at the first visit, before any load: the page must open offline next time
    const sw = this.getAttribute('service-worker');
    if (sw && this.hasAttribute('offline')) keepOffline(new URL(sw, document.baseURI)).then((r) => r.registered && this._keepPage());
    if (this.hasAttribute('autoload')) this.load();
  }

  /** Once the service worker controls the page: the page itself and the index fetched through it,
   *  so that both are kept at the first visit (wick's own files are in its shell list; they are not). */
  async _keepPage() {
    const sw = navigator.serviceWorker;
    await sw.ready;
    if (!sw.controller) await new Promise((r) => sw.addEventListener('controllerchange', r, { once: true }));
    const page = new URL(location.href);
    page.search = '';
    page.hash = '';
    if (page.pathname.endsWith('/')) page.pathname += 'index.html'; // as the service worker keys a folder's page
    const index = this.getAttribute('index');
    await Promise.all([page.href, index && new URL(index, document.baseURI).href].filter(Boolean).map((u) => fetch(u).catch(() => {})));
  }

  disconnectedCallback() {
    this.stop();
    // kept for a moment: moving the element around the page must not drop its model
    setTimeout(() => { if (!this.isConnected) this._unload(); }, 1000);
  }

  attributeChangedCallback(name, before, after) {
    if (name === 'model' && before !== null && before !== after) {
      this._unload();
      this._describe();
    }
  }

  /** The tools of a chat: the property's array, else the `tools` attribute's JSON (a ToolsError says where it is wrong). */
  get tools() {
    if (this._tools !== undefined) return this._tools;
    if (!this.hasAttribute('tools')) return undefined;
    try {
      return parseToolsText(this.getAttribute('tools'));
    } catch (e) {
      throw new Error(`the tools attribute: ${e.message}`);
    }
  }

  set tools(value) { this._tools = value === null || value === undefined ? undefined : parseToolsText(JSON.stringify(value)); }

  get modelUrl() { return this.getAttribute('model') ? new URL(this.getAttribute('model'), document.baseURI).href : null; }

  _mode() {
    const asked = this.getAttribute('mode');
    if (asked === 'chat' || asked === 'completion') return asked;
    return this.engine?.info.chatTemplate ? 'chat' : 'completion';
  }

  _setStatus(text) { this.ui.status.textContent = text; }

  _emit(type, detail) { this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true })); }

  /** Shows the model's name and size before anything is downloaded. */
  async _describe() {
    const url = this.modelUrl;
    this.ui.name.textContent = url ? decodeURIComponent(new URL(url).pathname.split('/').pop()) : 'no model';
    if (!url) { this._setStatus('set the model attribute to a GGUF URL'); return; }
    const features = detectFeatures();
    if (!features.simd) { this._setStatus('this browser lacks WebAssembly SIMD, which wick needs'); this.ui.loadButton.disabled = true; return; }
    try {
      const head = await Wick.inspect(url, { contextSize: Number(this.getAttribute('context-size')) || 0 });
      if (this.engine || this._loading) return;
      this._setStatus(`${formatBytes(head.bytes)} · needs about ${formatBytes(head.fits.needed)} of memory${head.fits.fits ? '' : ' (too large for WebAssembly)'}`);
      this.ui.loadButton.textContent = `Load model (${formatBytes(head.bytes)})`;
    } catch (e) {
      if (!this.engine) this._setStatus(`cannot read the model: ${e.message}`);
    }
  }

  /** Loads the model (once; later calls wait for the same load). */
  load() {
    if (this.engine) return Promise.resolve(this.engine);
    if (this._loading) return this._loading.promise;
    const controller = new AbortController();
    const promise = this._load(controller.signal);
    this._loading = { controller, promise };
    return promise.finally(() => { this._loading = null; });
  }

  async _load(signal) {
    const url = this.modelUrl;
    const ui = this.ui;
    ui.loadButton.disabled = true;
    try {
      if (!url) throw new Error('the model attribute is not set');
      const sw = this.getAttribute('service-worker');
      const isolation = sw ? await ensureCrossOriginIsolation(new URL(sw, document.baseURI), { offline: this.hasAttribute('offline') }) : { isolated: globalThis.crossOriginIsolated === true, reason: 'the page is not cross-origin isolated' };
      const meter = new RateMeter();
      ui.progress.hidden = false;
      const options = {
        signal,
        contextSize: Number(this.getAttribute('context-size')) || 0,
        onProgress: (p) => {
          if (p.phase === 'download') meter.add(p.loaded - (p.resumed || 0)); // kept bytes read back are no download speed
          ui.progress.value = p.progress;
          this._setStatus(progressText(p, meter));
        },
      };
      if (controlledByServiceWorker()) options.workerUrl = engineWorkerUrl();
      if (this.getAttribute('mmproj')) options.mmproj = new URL(this.getAttribute('mmproj'), document.baseURI).href;
      this._setStatus('starting the engine…');
      const t0 = performance.now();
      const engine = await Wick.load(url, options);
      await this._prepare(engine);
      this.engine = engine;
      this._showImageControls();
      ui.loadButton.hidden = true;
      this._setStatus(`ready in ${formatDuration(performance.now() - t0)}${engine.info.fromCache ? ' (from the cache)' : ''}`);
      ui.note.textContent = engine.multiThreaded
        ? `${engine.threads} thread${engine.threads > 1 ? 's' : ''} · runs in your browser`
        : `1 thread: ${isolation.reason || 'no cross-origin isolation'} · runs in your browser`;
      if (!this.getAttribute('placeholder')) ui.prompt.placeholder = this._mode() === 'chat' ? 'Write a message' : 'Once upon a time';
      this._emit('wick-ready', { info: engine.info });
      return engine;
    } catch (e) {
      this._setStatus(`could not load the model: ${e.message}`);
      ui.loadButton.disabled = false;
      this._emit('wick-error', { error: e });
      throw e;
    } finally {
      ui.progress.hidden = true;
    }
  }

  /** After a load: the shipped prefix (prefix-state), then this page's saved conversation (save-session). */
  async _prepare(engine) {
    const prefix = this.getAttribute('prefix-state');
    if (prefix) {
      try {
        const r = await fetch(new URL(prefix, document.baseURI));
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        this.prefixTokens = (await engine.addPrefix(new Uint8Array(await r.arrayBuffer()))).tokens;
      } catch (e) {
        this.prefixTokens = 0;
        this._emit('wick-error', { error: new Error(`the prefix-state file cannot be used: ${e.message}`) });
      }
    }
    if (!this.hasAttribute('save-session') || !engine.info.chatTemplate || this.getAttribute('mode') === 'completion') return;
    const saved = await (await import('./sessions.js')).restoreSession(engine, this.modelUrl, this._scope());
    if (!saved) return;
    if (saved.error) this._emit('wick-error', { error: saved.error });
    this._conversation = saved.meta.conversation;
    this.messages = saved.meta.messages;
    this.restoredTokens = saved.tokens;
    for (const m of this.messages) {
      if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'tool') continue;
      const line = document.createElement('div');
      line.className = `msg ${m.role} restored`;
      const thumbs = WickChat.thumbnails(m.content);
      if (thumbs) line.append(thumbs);
      line.append(contentText(m.content) || (m.tool_calls || []).map((c) => `${c.function.name}(${c.function.arguments})`).join('\n'));
      this.ui.log.append(line);
    }
  }

  /** The image button: on for a chat with a model that has an image encoder, else off and saying why. */
  _showImageControls() {
    const reason = !this.engine?.info.vision ? NO_VISION : this._mode() !== 'chat' ? 'Images go with chat messages (mode="chat")' : '';
    this._tray.setEnabled(!reason, reason);
  }

  /** A message's images as thumbnails (an element), or null without images. */
  static thumbnails(content) {
    const urls = contentImages(content).filter(isImageUrl);
    if (!urls.length) return null;
    const box = document.createElement('div');
    box.className = 'thumbs';
    urls.forEach((url, i) => {
      const img = document.createElement('img');
      img.src = url;
      img.alt = `Image ${i + 1}`;
      box.append(img);
    });
    return box;
  }

  _scope() { return `wick-chat ${location.pathname} ${this.getAttribute('save-session') || ''}`; }

  /** A chat reply ended (save-session): the conversation and the engine's state are written. */
  _save(engine) {
    if (!this.hasAttribute('save-session') || !this.messages.length) return;
    const meta = { modelKey: this.modelUrl, scope: this._scope(), model: engine.info.name, system: this.getAttribute('system') || '',
      messages: JSON.parse(JSON.stringify(this.messages)) };
    this._saving = (async () => {
      const api = await import('./sessions.js');
      meta.conversation = this._conversation ||= api.newConversationId();
      const store = await api.openSessions();
      if (store) this._emit('wick-saved', await api.saveConversation(store, engine, meta));
    })().catch((e) => this._emit('wick-error', { error: e })).finally(() => { this._saving = null; });
  }

  /** With the index attribute: the embedding model loaded and the index read (once). */
  _retriever() {
    const at = this.getAttribute('index');
    if (!at) return null;
    this._retrieval ??= (async () => {
      const modelAt = this.getAttribute('embedding-model');
      if (!modelAt) throw new Error('the index attribute needs embedding-model: the GGUF the index was made with');
      const base = new URL(at, document.baseURI);
      this._setStatus('loading the site index…');
      const [{ loadIndex }, json] = await Promise.all([import('../wasm_glue/retrieval.mjs'), fetch(base).then((r) => {
        if (!r.ok) throw new Error(`the index ${base.href}: HTTP ${r.status}`);
        return r.json();
      })]);
      const options = controlledByServiceWorker() ? { workerUrl: engineWorkerUrl() } : {};
      const encoder = await Wick.load(new URL(modelAt, document.baseURI).href, options);
      return { index: await loadIndex(json, { engine: encoder }), encoder, base };
    })();
    this._retrieval.catch(() => { this._retrieval = null; }); // a later message tries again
    return this._retrieval;
  }

  /** The link of an index's source: its URL against the index's, http(s) only. */
  static sourceUrl(source, base) {
    try {
      const u = new URL(source, base);
      return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
    } catch {
      return null;
    }
  }

  _unload() {
    this.stop();
    this._conversation = null;
    this._retrieval?.then((r) => r.encoder.unload(), () => {});
    this._retrieval = null;
    this._loading?.controller.abort();
    const engine = this.engine;
    this.engine = null;
    this.messages = [];
    this._pending = [];
    this.ui.log.replaceChildren();
    this.ui.loadButton.hidden = false;
    this.ui.loadButton.disabled = false;
    this.ui.loadButton.textContent = 'Load model';
    this._showImageControls();
    engine?.unload().catch(() => {});
  }

  stop() { this._controller?.abort(); }

  /** Sends a prompt (chat: a user message, or while tool calls wait, the next one's result;
   *  completion: text to continue); resolves with the answer. */
  async send(text) {
    const images = this._tray.enabled && this._tray.images.length > 0;
    if (this._controller || (!String(text ?? '').trim() && !images)) return null;
    if (this._pending.length && this._mode() === 'chat') return this.sendToolResult(this._pending[0].call.id, text);
    return this._run(text);
  }

  /** Gives the result of one of the last answer's tool calls; once every call has one, the model answers (resolves with that answer, else null). */
  async sendToolResult(callId, text) {
    if (this._controller) return null;
    const at = this._pending.findIndex((p) => p.call.id === callId);
    if (at < 0) throw new Error(`no tool call ${callId} waits for a result`);
    const [{ call, card }] = this._pending.splice(at, 1);
    const content = String(text);
    this.messages.push({ role: 'tool', tool_call_id: call.id, content });
    answerCard(card);
    const line = document.createElement('div');
    line.className = 'msg tool';
    const head = document.createElement('span');
    head.className = 'tool-head';
    head.textContent = `Result of ${call.function.name}`;
    line.append(head, content);
    this.ui.log.append(line);
    this.ui.prompt.value = '';
    this._showPending();
    return this._pending.length ? null : this._run(null);
  }

  _showPending() {
    const next = this._pending[0];
    if (next) this.ui.prompt.placeholder = `The result of ${next.call.function.name}`;
    else this.ui.prompt.placeholder = this.getAttribute('placeholder') || (this._mode() === 'chat' ? 'Write a message' : 'Once upon a time');
  }

  /** tool_choice from the attribute: auto, required, none, or a function's name. */
  _toolChoice() {
    const choice = this.getAttribute('tool-choice') || 'auto';
    return ['auto', 'required', 'none'].includes(choice) ? choice : { type: 'function', function: { name: choice } };
  }

  /** One turn: text is the user's message (null: the model answers the tool results just given). */
  async _run(text) {
    const ui = this.ui;
    const controller = new AbortController();
    this._controller = controller;
    ui.send.disabled = true;
    ui.stop.disabled = false;
    const line = (cls, ...children) => {
      const p = document.createElement('div');
      p.className = `msg ${cls}`;
      p.append(...children);
      ui.log.append(p);
      ui.log.scrollTop = ui.log.scrollHeight;
      return p;
    };
    let answer = '';
    try {
      const engine = await this.load();
      await this._saving;
      const mode = this._mode();
      const settings = {
        max_tokens: Number(this.getAttribute('max-tokens')) || 200,
        temperature: this.hasAttribute('temperature') ? Number(this.getAttribute('temperature')) : undefined,
        seed: this.hasAttribute('seed') ? Number(this.getAttribute('seed')) : undefined,
        signal: controller.signal,
      };
      let out, done = null, sources = null, prompt = null, images = null;
      ui.prompt.value = '';
      if (mode === 'chat') {
        const tools = this.tools;
        if (text !== null) {
          const content = userContent(text, this._tray.enabled ? this._tray.take() : []);
          line('user', ...[WickChat.thumbnails(content), text].filter(Boolean));
          this.messages.push({ role: 'user', content });
        }
        out = line('assistant');
        const system = this.getAttribute('system');
        const messages = system ? [{ role: 'system', content: system }, ...this.messages] : this.messages;
        const request = { ...settings, messages, stream: true };
        if (tools) Object.assign(request, { tools, tool_choice: this._toolChoice() });
        const retrieval = this._retriever();
        if (retrieval && text) {
          const { index, base } = await retrieval;
          const k = Number(this.getAttribute('top-k')) || DEFAULT_TOP_K;
          sources = (await index.search(text, k)).map((h) => ({ ...h, url: WickChat.sourceUrl(h.source, base) }));
          request.documents = sources.map(({ text: t, title, source }) => ({ text: t, title, source }));
        }
        const stream = await engine.chat.completions.create(request);
        const calls = [];
        for await (const c of stream) {
          const delta = c.choices[0].delta;
          if (delta.content) { answer += delta.content; out.append(delta.content); this._emit('wick-token', { text: delta.content }); }
          // a call comes whole at the end of the stream: its id and name, then its arguments
          for (const d of delta.tool_calls || []) {
            const slot = (calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
            if (d.id) slot.id = d.id;
            slot.function.name += d.function?.name || '';
            slot.function.arguments += d.function?.arguments || '';
          }
          if (c.choices[0].finish_reason) { done = { finishReason: c.choices[0].finish_reason, timings: c.timings }; prompt = c.wick?.prompt ?? null; images = c.wick?.images ?? null; }
          ui.log.scrollTop = ui.log.scrollHeight;
        }
        this.messages.push(calls.length ? { role: 'assistant', content: answer || null, tool_calls: calls } : { role: 'assistant', content: answer });
        if (calls.length) {
          const cards = calls.map(toolCallCard);
          out.append(...cards);
          this._pending = calls.map((call, i) => ({ call, card: cards[i] }));
          this._showPending();
          this._emit('wick-tool-call', { calls });
        }
        this._save(engine);
      } else {
        const prompt = document.createElement('span');
        prompt.className = 'prompt';
        prompt.textContent = text;
        out = line('completion', prompt);
        const { max_tokens: maxTokens, ...rest } = settings;
        for await (const c of engine.generate(text, { ...rest, maxTokens })) {
          if (c.done) { done = c; break; }
          answer += c.text;
          out.append(c.text);
          this._emit('wick-token', { text: c.text });
          ui.log.scrollTop = ui.log.scrollHeight;
        }
      }
      const t = done?.timings;
      const stats = document.createElement('div');
      stats.className = 'stats';
      stats.textContent = t
        ? `${formatCount(t.generatedTokens)} tokens · first after ${formatDuration(t.timeToFirstTokenMs ?? 0)} · ${formatCount(t.decodeTokensPerSecond ?? 0)} tok/s · context ${formatCount(t.contextUsed)}/${formatCount(t.contextSize)}${t.promptFromState ? ` · ${formatCount(t.promptFromState)} prompt tokens from a saved state` : ''}`
        : 'stopped';
      if (t) stats.dataset.decodeTps = String(t.decodeTokensPerSecond ?? 0);
      out.append(stats);
      if (sources?.length) {
        // the answer's sources: one link per page (its best chunk's score as the title), as text
        const list = document.createElement('div');
        list.className = 'sources';
        list.append('Sources: ');
        const seen = new Set();
        for (const s of sources) {
          if (seen.has(s.source)) continue;
          seen.add(s.source);
          const a = document.createElement(s.url ? 'a' : 'span');
          if (s.url) a.href = s.url;
          a.textContent = s.title || s.source || 'document';
          a.title = `${s.source ?? ''} · similarity ${s.score.toFixed(3)}`;
          list.append(a);
        }
        out.append(list);
      }
      this._emit('wick-done', { text: answer, timings: t || null, finishReason: done?.finishReason || 'abort', prompt, images, sources });
      return answer;
    } catch (e) {
      line('error', e.message);
      this._emit('wick-error', { error: e });
      return null;
    } finally {
      this._controller = null;
      ui.send.disabled = false;
      ui.stop.disabled = true;
    }
  }
}

if (!customElements.get('wick-chat')) customElements.define('wick-chat', WickChat);
export { WickChat };
