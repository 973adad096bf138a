// wasm_glue/connect.mjs — an engine that runs on a server: the same `generate` and
// `chat.completions.create` as a loaded engine, over an OpenAI-compatible HTTP API (llama.cpp's
// llama-server, vLLM, Ollama, OpenAI itself), so that a page can fall back to a server on a
// device that cannot hold the model without changing its code:
//
//   const engine = fits ? await Wick.load(url) : await Wick.connect('https://llm.example', { apiKey, model });
//   for await (const chunk of engine.generate('Once upon a time', { maxTokens: 100 })) …
//
// generate() streams POST {base}/completions; chat.completions.create() POST {base}/chat/completions;
// embed() and embeddings.create() POST {base}/embeddings, rerank() POST {base}/rerank (llama-server
// started with --embeddings, or --reranking for a reranker), in the shapes a loaded engine returns;
// connect() itself asks GET {base}/models for the model's name. Streams are server-sent events.
// Errors are WickErrors with the codes a loaded engine uses: E_FETCH (network, HTTP status,
// a broken stream: the message holds the server's), E_INVALID_ARG, E_ABORTED, E_UNLOADED; the
// options are checked by the same table as a loaded engine's (options.mjs).
import { WickError, invalid, checkSignal, checkGenerateOptions } from './options.mjs';
import { embedSettings, embedInputs, cutDimensions, embeddingsResponse, rerankSettings, rankResults } from './embeddings.mjs';

const CHAT_ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer']);
const MAX_ERROR_TEXT = 500; // characters of a non-JSON error body kept in the message

/** The body fields of a /completions request for generate()'s options (only those given: the
 *  server's defaults apply to the rest; maxTokens 0 = no limit = the field left out). */
function completionFields(options) {
  const { given, stops, probs, grammar, logitBias } = checkGenerateOptions(options);
  const body = { ...given };
  // llama.cpp's server takes a GBNF grammar as `grammar`; the others refuse or ignore it
  if (grammar) body.grammar = grammar;
  if (logitBias.length) body.logit_bias = Object.fromEntries(logitBias.map(([t, b]) => [t, b === -Infinity ? -100 : b]));
  // llama.cpp and Ollama say repeat_penalty, vLLM repetition_penalty; each ignores the other
  if (given.repeat_penalty !== undefined) body.repetition_penalty = given.repeat_penalty;
  if (body.max_tokens === 0) delete body.max_tokens;
  if (stops.length) body.stop = stops;
  if (probs) body.logprobs = probs;
  if (options.ignoreEos) body.ignore_eos = true;
  return { body, stops };
}

/** The API root: baseURL as given when its path ends in a version (/v1), else baseURL + /v1. */
function apiBase(baseURL) {
  if (typeof baseURL !== 'string' && !(baseURL instanceof URL)) throw invalid('connect() takes the server\'s URL (e.g. "http://127.0.0.1:8080" or "https://api.example.com/v1")');
  let url;
  try {
    url = new URL(String(baseURL), globalThis.location?.href);
  } catch {
    throw invalid(`not a URL: ${baseURL}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`the server's URL must be http: or https: (got ${url.protocol})`);
  let path = url.pathname.replace(/\/+$/, '');
  if (!/\/v\d+$/.test(path)) path += '/v1';
  return url.origin + path;
}

// ---- HTTP and server-sent events ----

const isAbort = (e) => e?.name === 'AbortError';

/** fetch() whose failures are WickErrors: E_FETCH for the network and for a status other than
 *  2xx (with the server's message), the AbortError left as it is for the caller to tell apart. */
async function request(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    if (isAbort(e)) throw e;
    const cause = e.cause?.message || e.cause?.code || '';
    throw new WickError('E_FETCH', `could not reach ${url}: ${e.message}${cause ? ` (${cause})` : ''}`);
  }
  if (response.ok) return response;
  let detail = '';
  try {
    detail = await response.text();
    detail = serverMessage(JSON.parse(detail)) || detail;
  } catch { /* not JSON: the text is the message */ }
  const error = new WickError('E_FETCH', `${url}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${detail ? `: ${String(detail).slice(0, MAX_ERROR_TEXT)}` : ''}`);
  error.status = response.status;
  throw error;
}

/** The message of an error body: {error: {message}} (OpenAI, llama-server, vLLM), {error: "…"} (Ollama), {message}. */
function serverMessage(body) {
  const e = body?.error ?? body;
  if (typeof e === 'string') return e;
  return typeof e?.message === 'string' ? e.message : '';
}

/** The `data` of each event of a text/event-stream body, as text ('[DONE]' included). */
async function* sseData(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let end;
      while ((end = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, end).replace(/\r$/, '');
        buffered = buffered.slice(end + 1);
        if (line === '') {
          if (data.length) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
        // other fields (event, id, retry) and comments (": ping") carry nothing used here
      }
      if (done) break;
    }
    if (buffered.startsWith('data:')) data.push(buffered.slice(buffered[5] === ' ' ? 6 : 5));
    if (data.length) yield data.join('\n');
  } finally {
    reader.releaseLock();
  }
}

/** The JSON objects of an OpenAI-style stream, until [DONE]; an {error} event becomes E_FETCH.
 *  Once `signal` is aborted, events already received are dropped (one read may hold many). */
async function* sseJson(body, url, signal) {
  for await (const text of sseData(body)) {
    signal.throwIfAborted();
    if (text === '[DONE]') return;
    let event;
    try {
      event = JSON.parse(text);
    } catch {
      throw new WickError('E_FETCH', `${url}: the stream holds an event that is not JSON: ${text.slice(0, MAX_ERROR_TEXT)}`);
    }
    if (event?.error) throw new WickError('E_FETCH', `${url}: the server failed during the stream: ${serverMessage(event) || JSON.stringify(event.error)}`);
    yield event;
  }
}

// ---- what the server reports, in the shapes of a loaded engine ----

/** wick's timings from the server's (llama-server's `timings`), its usage and this side's clock;
 *  what no one reports is null. The clock's times include the network. */
function timingsOf(server, usage, clock, contextSize) {
  const generated = usage?.completion_tokens ?? server?.predicted_n ?? clock.chunks;
  const decodeMs = server?.predicted_ms ?? (clock.first ? clock.last - clock.first : 0);
  return {
    promptTokens: usage?.prompt_tokens ?? (server ? server.prompt_n + (server.cache_n ?? 0) : null),
    promptEvalTokens: server?.prompt_n ?? null,
    cachedPromptTokens: server?.cache_n ?? usage?.prompt_tokens_details?.cached_tokens ?? null,
    generatedTokens: generated,
    prefillMs: server?.prompt_ms ?? null,
    decodeMs,
    timeToFirstTokenMs: clock.first ? clock.first - clock.start : null,
    prefillTokensPerSecond: server?.prompt_per_second ?? null,
    decodeTokensPerSecond: server?.predicted_per_second ?? (generated > 1 && decodeMs > 0 ? ((generated - 1) * 1000) / decodeMs : null),
    contextShiftedTokens: null,
    contextReevaluatedTokens: null,
    promptFromState: null, // a server's saved states are its own: none reported
    contextUsed: null,
    contextSize: contextSize ?? null,
  };
}

/** generate()'s `probs` from a completion chunk's logprobs: llama-server's {content: [{id, token,
 *  logprob, top_logprobs}]} or the OpenAI completions format {tokens, top_logprobs: [{text: logprob}]}. */
function probsOf(logprobs) {
  if (!logprobs) return null;
  const entry = logprobs.content?.[0];
  if (entry) {
    return (entry.top_logprobs || []).map((p) => ({ token: p.id ?? null, text: p.token, p: Math.exp(p.logprob), drawn: p.id !== undefined ? p.id === entry.id : p.token === entry.token }));
  }
  const top = logprobs.top_logprobs?.[0];
  if (top) return Object.entries(top).map(([text, logprob]) => ({ token: null, text, p: Math.exp(logprob), drawn: text === logprobs.tokens?.[0] }));
  return null;
}

// OpenAI's 'stop' is both the model's end and a stop string: with no stop strings asked, the end
function generateFinish(reason, stops) {
  if (reason === 'length') return 'length';
  return stops.length ? 'stop' : 'eog';
}

class RemoteEngine {
  constructor(base, { apiKey, model, headers }) {
    /** the API root requests go to (…/v1) */
    this.baseURL = base;
    /** 'remote': the model runs on the server */
    this.build = 'remote';
    this.multiThreaded = false;
    this.threads = null;
    this._model = model;
    this._headers = { ...headers, ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) };
    this._active = new Set(); // a stop function per request in flight
    this._dead = null;
    this.chat = { completions: { create: (req) => this._chatCompletion(req) } };
    this.embeddings = { create: (req) => this._embeddingsCreate(req) };
  }

  /** Asks the server for its models: the name to send (the first one listed unless `model` was
   *  given) and what it says about it. A server without a list is fine when `model` was given. */
  async _probe(signal) {
    const url = `${this.baseURL}/models`;
    let listed = [];
    try {
      const r = await request(url, { headers: this._headers, signal });
      listed = (await r.json().catch(() => ({})))?.data ?? [];
      if (!Array.isArray(listed)) listed = [];
    } catch (e) {
      if (isAbort(e)) throw new WickError('E_ABORTED', 'connect() was aborted');
      if (!(this._model && (e.status === 404 || e.status === 405))) throw e;
    }
    if (!this._model) this._model = listed[0]?.id;
    const entry = listed.find((m) => m?.id === this._model) || {};
    const meta = entry.meta || {}; // llama-server: vocab_type, n_vocab, n_ctx_train, n_embd, n_params, size
    /** What the server says about the model (llama-server says the most; others give the name). */
    this.info = {
      name: this._model ?? this.baseURL,
      source: this.baseURL,
      remote: true,
      architecture: null,
      ownedBy: entry.owned_by ?? null,
      n_vocab: meta.n_vocab ?? null,
      context_length: meta.n_ctx_train ?? null,
      embedding_length: meta.n_embd ?? null,
      n_params: meta.n_params ?? null,
      fileBytes: null, // llama-server's meta.size counts the tensors' bytes only
      contextSize: null,
      chatTemplate: null,
      metadata: meta,
      models: listed.map((m) => m?.id).filter((id) => typeof id === 'string'),
      build: 'remote',
      multiThreaded: false,
      threads: null,
    };
  }

  /** Starts a streamed POST; its AbortController answers the caller's signal, abort() and unload(). */
  async _post(path, body, controller) {
    if (this._dead) throw this._dead;
    return request(`${this.baseURL}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: body.stream ? 'text/event-stream' : 'application/json', ...this._headers },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  }

  /** Runs `produce(controller)` (an async generator) with the abort wiring of a loaded engine: a
   *  stop (signal, abort(), unload()) ends the stream with `onAbort()`'s record; leaving the loop
   *  early cancels the request. */
  async *_guarded(signal, produce, onAbort) {
    checkSignal(signal);
    const controller = new AbortController();
    let stopped = false;
    const stop = () => { stopped = true; controller.abort(); };
    this._active.add(stop);
    signal?.addEventListener('abort', stop);
    try {
      yield* produce(controller);
    } catch (e) {
      if (!stopped || !(isAbort(e) || controller.signal.aborted)) throw e;
      if (this._dead) throw this._dead;
      yield onAbort();
    } finally {
      signal?.removeEventListener('abort', stop);
      this._active.delete(stop);
      controller.abort(); // a no-op after the end; else the caller left the loop: close the stream
    }
  }

  /**
   * Streams a continuation of `prompt` (text, or token ids) from the server's completions
   * endpoint: yields {text, tokens, probs?} as the server sends them, then
   * {done: true, finishReason: 'eog'|'stop'|'length'|'abort', timings}. `tokens` holds the ids
   * only when the server reports them (llama-server, with `probs`); else it is empty.
   */
  generate(prompt, options = {}) {
    const { body, stops } = completionFields(options);
    if (typeof prompt !== 'string' && !Array.isArray(prompt) && !ArrayBuffer.isView(prompt)) throw invalid('prompt must be a string or an array of token ids');
    if (typeof prompt !== 'string' && Array.from(prompt).some((t) => !Number.isInteger(t) || t < 0)) throw invalid('token ids must be integers ≥ 0');
    if (typeof prompt === 'string' ? prompt === '' && options.addBos === false : prompt.length === 0) throw invalid('the prompt is empty');
    const request = {
      ...(this._model !== undefined ? { model: this._model } : {}),
      prompt: typeof prompt === 'string' ? prompt : Array.from(prompt),
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    };
    const engine = this;
    return this._guarded(options.signal, async function* produce(controller) {
      const clock = { start: Date.now(), first: 0, last: 0, chunks: 0 };
      const response = await engine._post('/completions', request, controller);
      let finish = null, usage = null, timings = null;
      for await (const event of sseJson(response.body, `${engine.baseURL}/completions`, controller.signal)) {
        const choice = event.choices?.[0];
        if (event.usage) usage = event.usage;
        if (event.timings) timings = event.timings;
        if (!choice) continue;
        const probs = probsOf(choice.logprobs);
        if (choice.text || probs) {
          clock.last = Date.now();
          clock.first ||= clock.last;
          clock.chunks++;
          const drawn = probs?.find((p) => p.drawn);
          const out = { text: choice.text || '', tokens: drawn && drawn.token !== null ? [drawn.token] : [] };
          if (probs) out.probs = probs;
          yield out;
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (!finish) throw new WickError('E_FETCH', `${engine.baseURL}/completions: the stream ended without a finish reason`);
      yield { done: true, finishReason: generateFinish(finish, stops), timings: timingsOf(timings, usage, clock, engine.info?.contextSize) };
    }, () => ({ done: true, finishReason: 'abort', timings: null }));
  }

  /** Stops every generation in progress (each ends with finishReason 'abort'). */
  abort() {
    for (const stop of [...this._active]) stop();
  }

  /** Ends the engine: requests in progress are cancelled, later calls fail with E_UNLOADED. */
  async unload() {
    if (this._dead) return;
    this._dead = new WickError('E_UNLOADED', 'the engine was unloaded');
    this.abort();
  }

  /** A POST answered with JSON, cancelled by abort() and unload() as a stream is. */
  async _postJson(path, body) {
    const controller = new AbortController();
    const stop = () => controller.abort();
    this._active.add(stop);
    try {
      return await (await this._post(path, body, controller)).json();
    } catch (e) {
      if (this._dead) throw this._dead;
      if (isAbort(e)) throw new WickError('E_ABORTED', `${this.baseURL}${path}: aborted`);
      throw e;
    } finally {
      this._active.delete(stop);
    }
  }

  /** The server's vectors of the inputs (its own pooling, L2-normalized when asked) and its token count. */
  async _embed(input, options) {
    const { pooling, normalize, dimensions, truncate } = options;
    if (pooling !== undefined) throw new WickError('E_UNSUPPORTED', 'a connected engine pools as its server was started (llama-server --pooling): leave pooling out');
    if (truncate) throw new WickError('E_UNSUPPORTED', 'a connected engine cannot truncate its inputs: llama-server refuses an input longer than its batch');
    const s = embedSettings({ normalize, dimensions }, Infinity);
    const inputs = embedInputs(input).map((x) => (typeof x === 'string' ? x : Array.from(x)));
    const body = { ...(this._model !== undefined ? { model: this._model } : {}), input: inputs, encoding_format: 'float', embd_normalize: s.normalize ? 2 : -1 };
    const r = await this._postJson('/embeddings', body);
    if (!Array.isArray(r?.data) || r.data.length !== inputs.length) throw new WickError('E_FETCH', `${this.baseURL}/embeddings: ${inputs.length} inputs, ${r?.data?.length} embeddings in the answer`);
    const vectors = [...r.data].sort((a, b) => a.index - b.index).map((d) => cutDimensions(Float32Array.from(d.embedding), s.dimensions, s.normalize));
    return { vectors, tokens: r.usage?.prompt_tokens ?? 0 };
  }

  /** embed() as a loaded engine's: one Float32Array per input, unit length unless normalize: false; dimensions cut here. */
  async embed(input, options = {}) {
    return (await this._embed(input, options)).vectors;
  }

  /** OpenAI's embeddings.create, the server's vectors in a loaded engine's response (dimensions and base64 done here). */
  async _embeddingsCreate(request) {
    if (!request || typeof request !== 'object') throw invalid('embeddings.create: the request must be an object');
    const { input, dimensions, encoding_format: encodingFormat = 'float' } = request;
    if (encodingFormat !== 'float' && encodingFormat !== 'base64') throw invalid(`encoding_format must be 'float' or 'base64' (got ${JSON.stringify(encodingFormat)})`);
    const { vectors, tokens } = await this._embed(input, { dimensions, truncate: request.truncate === true });
    return embeddingsResponse(vectors, { model: request.model || this.info.name, tokens, encodingFormat });
  }

  /** rerank() as a loaded engine's: POST /rerank, [{index, score}] from the most relevant down (the server's relevance_score). */
  async rerank(query, documents, options = {}) {
    const { topN } = rerankSettings(query, documents, options);
    const body = { ...(this._model !== undefined ? { model: this._model } : {}), query, documents, top_n: documents.length };
    const r = await this._postJson('/rerank', body);
    if (!Array.isArray(r?.results) || r.results.length !== documents.length) throw new WickError('E_FETCH', `${this.baseURL}/rerank: ${documents.length} documents, ${r?.results?.length} results in the answer`);
    const scores = new Array(documents.length);
    for (const x of r.results) scores[x.index] = x.relevance_score;
    return rankResults(scores, topN);
  }

  // The server renders the chat template and tokenizes: the OpenAI API has no calls for these.
  async applyChatTemplate() { throw new WickError('E_UNSUPPORTED', 'a connected engine renders chat templates on the server: use chat.completions.create'); }
  async tokenize() { throw new WickError('E_UNSUPPORTED', 'a connected engine cannot tokenize: the OpenAI API has no such call'); }
  async detokenize() { throw new WickError('E_UNSUPPORTED', 'a connected engine cannot detokenize: the OpenAI API has no such call'); }

  /** chat.completions.create: the request goes to the server as it is (plus `model`, and
   *  repetition_penalty and repeat_penalty under both names; `documents`, which the OpenAI API
   *  lacks, as the context block at the end of the system message that a loaded engine writes for
   *  a template without documents: chat-template.mjs); a stream comes back in the shape
   *  a loaded engine streams, the last chunk with finish_reason, usage and wick's timings. */
  async _chatCompletion(req) {
    if (req === null || typeof req !== 'object') throw invalid('create() takes a request object');
    const { signal, ...rest } = req;
    const messages = rest.messages;
    if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages must be a non-empty array of {role, content}');
    messages.forEach((m, i) => {
      if (m === null || typeof m !== 'object') throw invalid(`messages[${i}] must be an object {role, content}`);
      if (!CHAT_ROLES.has(m.role)) throw invalid(`messages[${i}].role ${JSON.stringify(m.role)} is not one of ${[...CHAT_ROLES].join(', ')}`);
    });
    if (rest.n !== undefined && rest.n !== 1) throw invalid('only n = 1 is supported');
    checkSignal(signal);
    const body = { ...(this._model !== undefined ? { model: this._model } : {}), ...rest };
    if (rest.documents !== undefined && rest.documents !== null) {
      const { checkDocuments, withDocumentsInSystem } = await import('./chat-template.mjs');
      const documents = checkDocuments(rest.documents);
      delete body.documents;
      if (documents.length) body.messages = withDocumentsInSystem(messages, documents);
    }
    const penalty = rest.repetition_penalty ?? rest.repeat_penalty;
    if (penalty !== undefined) Object.assign(body, { repetition_penalty: penalty, repeat_penalty: penalty });
    if (body.max_tokens === null) delete body.max_tokens;
    if (body.stream) body.stream_options = { include_usage: true, ...rest.stream_options };
    const url = `${this.baseURL}/chat/completions`;
    const engine = this;
    const created = Math.floor(Date.now() / 1000);

    if (!rest.stream) {
      const stream = this._guarded(signal, async function* produce(controller) {
        const clock = { start: Date.now(), first: 0, last: 0, chunks: 0 };
        const completion = await (await engine._post('/chat/completions', body, controller)).json();
        clock.first = clock.last = Date.now();
        yield { ...completion, timings: timingsOf(completion.timings, completion.usage, clock, engine.info?.contextSize) };
      }, () => ({
        id: `chatcmpl-abort-${Date.now().toString(36)}`, object: 'chat.completion', created, model: this.info.name,
        choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'abort', logprobs: null }],
        usage: null, timings: null,
      }));
      for await (const completion of stream) return completion;
    }

    return this._guarded(signal, async function* produce(controller) {
      const clock = { start: Date.now(), first: 0, last: 0, chunks: 0 };
      const response = await engine._post('/chat/completions', body, controller);
      let head = null, finish = null, usage = null, timings = null, first = true;
      for await (const event of sseJson(response.body, url, controller.signal)) {
        head ||= { id: event.id, created: event.created ?? created, model: event.model ?? engine.info.name };
        if (event.usage) usage = event.usage;
        if (event.timings) timings = event.timings;
        const choice = event.choices?.[0];
        if (!choice) continue;
        const { role, content, ...more } = choice.delta || {};
        const delta = { ...(typeof content === 'string' && content !== '' ? { content } : {}), ...more };
        if (Object.keys(delta).length) {
          clock.last = Date.now();
          clock.first ||= clock.last;
          clock.chunks++;
          yield { id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model, choices: [{ index: 0, delta: first ? { role: 'assistant', ...delta } : delta, finish_reason: null, logprobs: choice.logprobs ?? null }] };
          first = false;
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (!finish) throw new WickError('E_FETCH', `${url}: the stream ended without a finish reason`);
      head ||= { id: undefined, created, model: engine.info.name };
      yield {
        id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model,
        choices: [{ index: 0, delta: {}, finish_reason: finish, logprobs: null }],
        usage: usage && { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens },
        timings: timingsOf(timings, usage, clock, engine.info?.contextSize),
      };
    }, () => ({
      id: undefined, object: 'chat.completion.chunk', created, model: this.info.name,
      choices: [{ index: 0, delta: {}, finish_reason: 'abort', logprobs: null }], usage: null, timings: null,
    }));
  }
}

/**
 * An engine on an OpenAI-compatible server (llama-server, vLLM, Ollama, …) with the API of a
 * loaded one. baseURL: the server ("http://127.0.0.1:8080") or its API root ("…/v1"; a path
 * that does not end in /v<n> gets /v1). options: apiKey (sent as `Authorization: Bearer`),
 * model (default: the first one the server lists), headers (more request headers), signal.
 * Resolves once the server has answered GET /v1/models; E_FETCH when it cannot be reached.
 */
export async function connect(baseURL, options = {}) {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const { apiKey, model, headers, signal, ...unknown } = options;
  const extra = Object.keys(unknown);
  if (extra.length) throw invalid(`unknown option ${extra[0]} (known: apiKey, model, headers, signal)`);
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === '')) throw invalid('apiKey must be a non-empty string');
  if (model !== undefined && (typeof model !== 'string' || model === '')) throw invalid('model must be a non-empty string');
  if (headers !== undefined && (headers === null || typeof headers !== 'object' || Object.values(headers).some((v) => typeof v !== 'string'))) throw invalid('headers must be an object of strings');
  checkSignal(signal);
  const engine = new RemoteEngine(apiBase(baseURL), { apiKey, model, headers });
  await engine._probe(signal);
  return engine;
}

export default connect;
