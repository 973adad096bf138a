// wasm_glue/options.mjs — what a loaded engine (wick.mjs) and one on a server (connect.mjs) share:
// WickError, and generate()'s options checked by one table. The names the options become
// (max_tokens, top_k, …) are both the engine's settings and the OpenAI / llama.cpp request fields.

/** An Error with a `code`: E_FETCH, E_NOT_GGUF, E_TOO_LARGE, E_UNSUPPORTED, E_ABORTED,
 *  E_INVALID_ARG, E_FORMAT, E_NOMEM, E_CONTEXT_FULL, E_NO_TEMPLATE, E_TEMPLATE, E_NO_JINJA, E_UNLOADED, E_WORKER,
 *  E_MODEL_MISMATCH (an index made with another embedding model: retrieval.mjs). */
export class WickError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'WickError';
    this.code = code;
  }
}

export const invalid = (message) => new WickError('E_INVALID_ARG', message);

export function checkNumber(name, v, { min = -Infinity, max = Infinity, integer = false, minExclusive = false } = {}) {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${name} must be a finite number (got ${JSON.stringify(v)})`);
  if (integer && !Number.isInteger(v)) throw invalid(`${name} must be an integer (got ${v})`);
  if (minExclusive ? v <= min : v < min) throw invalid(`${name} must be ${minExclusive ? 'greater than' : 'at least'} ${min} (got ${v})`);
  if (v > max) throw invalid(`${name} must be at most ${max} (got ${v})`);
  return v;
}

export function checkSignal(signal) {
  if (signal !== undefined && signal !== null && typeof signal.aborted !== 'boolean') throw invalid('signal must be an AbortSignal');
  if (signal?.aborted) throw new WickError('E_ABORTED', 'aborted before it started');
}

// generate()'s numeric options: the setting each becomes, and its range
const GENERATE_OPTIONS = {
  maxTokens: ['max_tokens', { min: 0, integer: true }],
  temperature: ['temperature', { min: 0 }],
  topK: ['top_k', { min: 0, integer: true }],
  topP: ['top_p', { min: 0, max: 1, minExclusive: true }],
  minP: ['min_p', { min: 0, max: 1 }],
  repeatPenalty: ['repeat_penalty', { min: 0, minExclusive: true }],
  repeatLastN: ['repeat_last_n', { min: 0, integer: true }],
  frequencyPenalty: ['frequency_penalty', { min: -2, max: 2 }],
  presencePenalty: ['presence_penalty', { min: -2, max: 2 }],
  seed: ['seed', { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }],
};
const OTHER_GENERATE_OPTIONS = new Set(['stop', 'signal', 'probs', 'ignoreEos', 'addBos', 'grammar', 'logitBias', 'prefixStates']);

/**
 * generate()'s options checked, bad values refused with a clear WickError: `given` holds the
 * numeric options that were given, under their setting names; `stops` the stop strings; `probs`
 * the count of top candidates asked for (true = 10); `grammar` the GBNF text of the constraint
 * ('' for none; its syntax is checked by the engine, which names the line and column);
 * `logitBias` [token id, bias] pairs from an object { id: bias } (OpenAI's logit_bias; a bias of
 * -Infinity or -100 and below bans the token).
 */
export function checkGenerateOptions(options) {
  if (options === null || typeof options !== 'object') throw invalid('options must be an object');
  const given = {};
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const known = GENERATE_OPTIONS[key];
    if (known) given[known[0]] = checkNumber(key, value, known[1]);
    else if (!OTHER_GENERATE_OPTIONS.has(key)) throw invalid(`unknown option ${key} (known: ${[...Object.keys(GENERATE_OPTIONS), ...OTHER_GENERATE_OPTIONS].join(', ')})`);
  }
  let stops = options.stop ?? [];
  if (typeof stops === 'string') stops = [stops];
  if (!Array.isArray(stops) || stops.some((s) => typeof s !== 'string' || s === '')) throw invalid('stop must be a non-empty string or an array of them');
  let probs = options.probs ?? 0;
  if (probs === true) probs = 10;
  if (probs === false) probs = 0;
  checkNumber('probs', probs, { min: 0, max: 64, integer: true });
  checkSignal(options.signal);
  const grammar = options.grammar ?? '';
  if (typeof grammar !== 'string') throw invalid('grammar must be a string of GBNF (llama.cpp\'s grammar format)');
  const logitBias = [];
  if (options.logitBias !== undefined && options.logitBias !== null) {
    if (typeof options.logitBias !== 'object' || Array.isArray(options.logitBias)) throw invalid('logitBias must be an object { tokenId: bias }');
    for (const [key, value] of Object.entries(options.logitBias)) {
      const id = Number(key);
      if (!Number.isInteger(id) || id < 0) throw invalid(`logitBias: ${JSON.stringify(key)} is not a token id`);
      if (typeof value !== 'number' || Number.isNaN(value) || value === Infinity) throw invalid(`logitBias[${key}] must be a number or -Infinity`);
      logitBias.push([id, value <= -100 ? -Infinity : value]);
    }
  }
  return { given, stops, probs, grammar, logitBias };
}
