// wasm_glue/json-schema.mjs — JSON schema → GBNF grammar (llama.cpp's grammar format, see
// src/grammar.h), for generate({ grammar }) and chat.completions' response_format.
//
//   import { jsonSchemaToGrammar } from './json-schema.mjs';
//   const grammar = jsonSchemaToGrammar({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
//
// The subset: type (string, number, integer, boolean, null, object, array, or a list of them),
// properties, required, additionalProperties (false, true or a schema), enum, const, items (a
// schema, or a list for a tuple) and prefixItems, minItems / maxItems, minLength / maxLength,
// string formats date, time, date-time and uuid, minimum / maximum / exclusiveMinimum /
// exclusiveMaximum on integers (not on other numbers), $ref to a place inside the schema (#/$defs/…,
// #/definitions/…, any JSON pointer; recursion allowed), anyOf and oneOf (both as "one of these").
// Words that only describe ($schema, $id, title, description, default, examples, $comment,
// deprecated, readOnly, writeOnly) are ignored. Anything else is refused with a WickError naming
// its JSON path ($.properties.age.minimum: "minimum" is not supported) — never silently dropped.
//
// The output it allows: properties in the schema's order, required ones first, each optional
// one present or not; no property beyond those listed unless additionalProperties says so (an
// object schema without properties takes any properties); at most one space after each token
// (compact JSON: a model constrained to the grammar cannot wander off into whitespace); numbers
// of at most 16 digits before and after the point and 3 in the exponent (what a double holds).
// The empty schema {} at the top is any JSON object (as OpenAI's json_object mode); inside, any
// JSON value.
import { WickError } from './options.mjs';

const IGNORED = new Set(['$schema', '$id', 'title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$defs', 'definitions']);
const KNOWN = new Set(['type', 'properties', 'required', 'additionalProperties', 'enum', 'const', 'items', 'prefixItems',
  'minItems', 'maxItems', 'minLength', 'maxLength', 'format', '$ref', 'anyOf', 'oneOf',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);
const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const MAX_DIGITS = 16; // an integer has at most 16 digits (the plain integer rule's limit too)
const FORMATS = new Set(['date', 'time', 'date-time', 'uuid']);
const MAX_REPEAT = 10000; // the grammar engine's largest {m,n}

// The building blocks every grammar may use, by rule name.
const PRIMITIVES = {
  ws: 'ws ::= " "?',
  char: 'char ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  string: 'string ::= "\\"" char* "\\"" ws',
  integer: 'integer ::= "-"? ("0" | [1-9] [0-9]{0,15}) ws',
  number: 'number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? ws',
  boolean: 'boolean ::= ("true" | "false") ws',
  null: 'null ::= "null" ws',
  value: 'value ::= object | array | string | number | boolean | null',
  object: 'object ::= "{" ws (string ":" ws value ("," ws string ":" ws value)*)? "}" ws',
  array: 'array ::= "[" ws (value ("," ws value)*)? "]" ws',
  date: 'date ::= [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
  time: 'time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])',
  uuid: 'uuid ::= [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}',
};
// what each building block needs
const NEEDS = {
  string: ['char', 'ws'], integer: ['ws'], number: ['ws'], boolean: ['ws'], null: ['ws'],
  value: ['object', 'array', 'string', 'number', 'boolean', 'null'],
  object: ['ws', 'string', 'value'], array: ['ws', 'value'],
};

const unsupported = (path, what) => new WickError('E_UNSUPPORTED', `${path}: ${what} is not supported in a JSON schema for a grammar`);
const bad = (path, what) => new WickError('E_INVALID_ARG', `${path}: ${what}`);

/** A GBNF string literal of text. */
export function literal(text) {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + '"';
}

/** GBNF for the decimal strings of the integers in [lo, hi] (BigInts, 0 <= lo <= hi), each with
 *  as many digits as it needs (no leading zeros). */
function naturalRange(lo, hi) {
  const alts = [];
  const digits = (n) => n.toString().length;
  for (let len = digits(lo); len <= digits(hi); len++) {
    const first = len === 1 ? 0n : 10n ** BigInt(len - 1), last = 10n ** BigInt(len) - 1n;
    const a = lo > first ? lo : first, b = hi < last ? hi : last;
    if (a <= b) alts.push(sameLength(a.toString(), b.toString()));
  }
  return alts.length === 1 ? alts[0] : `(${alts.join(' | ')})`;
}

/** GBNF for the digit strings from a to b, both of the same length (a <= b). */
function sameLength(a, b) {
  const n = a.length;
  if (n === 0) return '';
  const any = (k) => (k === 0 ? '' : k === 1 ? ' [0-9]' : ` [0-9]{${k}}`);
  const cls = (x, y) => (x === y ? `"${x}"` : `[${x}-${y}]`);
  if (a[0] === b[0]) return `"${a[0]}"${n > 1 ? ' ' + sameLength(a.slice(1), b.slice(1)) : ''}`.trim();
  const restA = a.slice(1), restB = b.slice(1);
  const lowFull = /^0*$/.test(restA), highFull = /^9*$/.test(restB);
  const da = Number(a[0]), db = Number(b[0]);
  const alts = [];
  // from a up to a[0] 999…, the whole middle, then b[0] 000… up to b
  let from = da, to = db;
  if (!lowFull) { alts.push(`"${da}" ${sameLength(restA, '9'.repeat(n - 1))}`); from = da + 1; }
  if (!highFull) to = db - 1;
  if (from <= to) alts.push(`${cls(from, to)}${any(n - 1)}`);
  if (!highFull) alts.push(`"${db}" ${sameLength('0'.repeat(n - 1), restB)}`);
  return alts.length === 1 ? alts[0] : `(${alts.join(' | ')})`;
}

/** GBNF for the integers in [min, max] (BigInts or null for no bound), at most MAX_DIGITS digits. */
function integerRange(min, max) {
  const top = 10n ** BigInt(MAX_DIGITS) - 1n;
  const lo = min ?? -top, hi = max ?? top;
  const alts = [];
  if (lo < 0n) alts.push(`"-" ${naturalRange(hi < 0n ? -hi : 1n, -lo > top ? top : -lo)}`);
  if (hi >= 0n) alts.push(naturalRange(lo > 0n ? lo : 0n, hi > top ? top : hi));
  return alts.length === 1 ? alts[0] : `(${alts.join(' | ')})`;
}

/** "x" repeated {min, max} (max Infinity: no limit), joined by sep (a GBNF sequence or ''). */
function repeated(item, min, max, sep) {
  if (max === 0) return '';
  if (!sep) return `${item}${max === Infinity ? (min === 0 ? '*' : min === 1 ? '+' : `{${min},}`) : min === max ? `{${min}}` : `{${min},${max}}`}`;
  const restMin = Math.max(0, min - 1), restMax = max === Infinity ? Infinity : max - 1;
  const rest = restMax === 0 ? '' : ` (${sep} ${item})${restMax === Infinity ? (restMin === 0 ? '*' : `{${restMin},}`) : restMin === restMax ? `{${restMin}}` : `{${restMin},${restMax}}`}`;
  const body = `${item}${rest}`;
  return min === 0 ? `(${body})?` : body;
}

/**
 * The GBNF grammar (start rule `root`, or options.root) of the JSON texts a schema allows (see the
 * top of this file for the subset). Throws a WickError naming the JSON path of anything it cannot
 * express. With options.root the grammar can be part of a larger one (its other rule names are
 * the schema's; the building blocks' names are in PRIMITIVES).
 */
export function jsonSchemaToGrammar(schema, { root: rootName = 'root' } = {}) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    if (schema === true) schema = {};
    else throw bad('$', 'a JSON schema must be an object');
  }
  const rules = new Map();     // name → definition (without "name ::=")
  const used = new Set();      // building blocks used
  const refRules = new Map();  // JSON pointer → rule name
  const names = new Set(['root', rootName, ...Object.keys(PRIMITIVES)]);

  const use = (name) => {
    if (used.has(name)) return name;
    used.add(name);
    for (const n of NEEDS[name] || []) use(n);
    return name;
  };
  const fresh = (hint) => {
    let base = String(hint).replace(/[^A-Za-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'rule';
    let name = base, k = 2;
    while (names.has(name)) name = `${base}-${k++}`;
    names.add(name);
    return name;
  };
  const define = (hint, body) => {
    const name = fresh(hint);
    rules.set(name, body);
    return name;
  };

  const resolve = (ref, path) => {
    if (typeof ref !== 'string' || !ref.startsWith('#')) throw unsupported(`${path}.$ref`, `a $ref outside the schema (${JSON.stringify(ref)})`);
    let node = schema;
    const parts = ref.slice(1).split('/').filter((p, i) => i > 0 || p !== '');
    for (const raw of parts) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (node === null || typeof node !== 'object' || !(key in node)) throw bad(`${path}.$ref`, `${ref} points at nothing in the schema`);
      node = node[key];
    }
    return node;
  };

  const count = (s, key, path) => {
    const v = s[key];
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || v < 0 || v > MAX_REPEAT) throw bad(`${path}.${key}`, `must be an integer from 0 to ${MAX_REPEAT}`);
    return v;
  };

  // The GBNF expression (a rule name or a short sequence) of the values s allows.
  function visit(s, path, hint, top = false) {
    if (s === true) s = {};
    if (s === false) throw unsupported(path, 'the schema false (no value at all)');
    if (s === null || typeof s !== 'object' || Array.isArray(s)) throw bad(path, 'a schema must be an object');
    for (const key of Object.keys(s))
      if (!KNOWN.has(key) && !IGNORED.has(key)) throw unsupported(`${path}.${key}`, `"${key}"`);

    if (s.$ref !== undefined) {
      if (Object.keys(s).some((k) => KNOWN.has(k) && k !== '$ref')) throw unsupported(path, '$ref beside other constraints');
      if (refRules.has(s.$ref)) return refRules.get(s.$ref);
      const name = fresh(String(s.$ref).split('/').pop() || 'ref');
      refRules.set(s.$ref, name);
      rules.set(name, null); // reserved first: a recursive $ref meets the name
      rules.set(name, visit(resolve(s.$ref, path), `${path}.$ref(${s.$ref})`, name));
      return name;
    }
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives !== undefined) {
      const key = s.anyOf !== undefined ? 'anyOf' : 'oneOf';
      if (s.anyOf !== undefined && s.oneOf !== undefined) throw unsupported(path, 'anyOf and oneOf together');
      if (!Array.isArray(alternatives) || !alternatives.length) throw bad(`${path}.${key}`, 'must be a non-empty array of schemas');
      if (Object.keys(s).some((k) => KNOWN.has(k) && k !== key)) throw unsupported(path, `${key} beside other constraints`);
      return define(hint, alternatives.map((a, i) => visit(a, `${path}.${key}[${i}]`, `${hint}-${i}`)).join(' | '));
    }
    if (s.const !== undefined) return `${literal(JSON.stringify(s.const))} ${use('ws')}`;
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || !s.enum.length) throw bad(`${path}.enum`, 'must be a non-empty array');
      return define(hint, `(${s.enum.map((v) => literal(JSON.stringify(v))).join(' | ')}) ${use('ws')}`);
    }

    let types = s.type;
    if (types === undefined) {
      if (s.properties !== undefined || s.additionalProperties !== undefined || s.required !== undefined) types = 'object';
      else if (s.items !== undefined || s.prefixItems !== undefined || s.minItems !== undefined || s.maxItems !== undefined) types = 'array';
      else if (s.format !== undefined || s.minLength !== undefined || s.maxLength !== undefined) types = 'string';
      else return use(top ? 'object' : 'value');
    }
    if (Array.isArray(types)) {
      if (!types.length) throw bad(`${path}.type`, 'must not be empty');
      return define(hint, types.map((t, i) => visitType(s, t, `${path}.type[${i}]`, `${hint}-${t}`)).join(' | '));
    }
    return visitType(s, types, `${path}.type`, hint);
  }

  function visitType(s, type, typePath, hint) {
    const path = typePath.replace(/\.type(\[\d+\])?$/, '');
    switch (type) {
      case 'string': return stringRule(s, path, hint);
      case 'integer': return integerRule(s, path, hint);
      case 'number': case 'boolean': case 'null':
        for (const key of BOUNDS) if (s[key] !== undefined) throw unsupported(`${path}.${key}`, `"${key}" on a ${type} (only on integers)`);
        return use(type);
      case 'object': return objectRule(s, path, hint);
      case 'array': return arrayRule(s, path, hint);
      default: throw unsupported(typePath, `the type ${JSON.stringify(type)}`);
    }
  }

  function integerRule(s, path, hint) {
    if (!BOUNDS.some((k) => s[k] !== undefined)) return use('integer');
    const bound = (key) => {
      const v = s[key];
      if (v === undefined) return null;
      if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${path}.${key}`, 'must be a number');
      if (Math.abs(v) >= 10 ** MAX_DIGITS) throw unsupported(`${path}.${key}`, `a bound of more than ${MAX_DIGITS} digits`);
      return v;
    };
    // the integers the bounds leave: the largest lower one, the smallest upper one
    const lows = [bound('minimum'), bound('exclusiveMinimum')].map((v, i) => (v === null ? null : i ? BigInt(Math.floor(v)) + 1n : BigInt(Math.ceil(v))));
    const highs = [bound('maximum'), bound('exclusiveMaximum')].map((v, i) => (v === null ? null : i ? BigInt(Math.ceil(v)) - 1n : BigInt(Math.floor(v))));
    const pick = (xs, better) => xs.filter((x) => x !== null).reduce((a, b) => (a === null || better(b, a) ? b : a), null);
    const min = pick(lows, (b, a) => b > a), max = pick(highs, (b, a) => b < a);
    if (min !== null && max !== null && min > max) throw bad(path, 'no integer lies within the bounds');
    return define(hint, `${integerRange(min, max)} ${use('ws')}`);
  }

  function stringRule(s, path, hint) {
    if (s.format !== undefined) {
      if (!FORMATS.has(s.format)) throw unsupported(`${path}.format`, `the format ${JSON.stringify(s.format)}`);
      if (s.minLength !== undefined || s.maxLength !== undefined) throw unsupported(path, 'minLength/maxLength with a format');
      const body = s.format === 'date-time' ? `${use('date')} "T" ${use('time')}` : use(s.format);
      return define(hint, `"\\"" ${body} "\\"" ${use('ws')}`);
    }
    const min = count(s, 'minLength', path) ?? 0, max = count(s, 'maxLength', path) ?? Infinity;
    if (max < min) throw bad(path, 'maxLength is below minLength');
    if (min === 0 && max === Infinity) return use('string');
    use('ws');
    return define(hint, `"\\"" ${repeated(use('char'), min, max, '') || ''} "\\"" ws`);
  }

  function objectRule(s, path, hint) {
    const props = s.properties ?? {};
    if (props === null || typeof props !== 'object' || Array.isArray(props)) throw bad(`${path}.properties`, 'must be an object');
    const required = s.required ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) throw bad(`${path}.required`, 'must be an array of property names');
    for (const r of required) if (!(r in props) && s.additionalProperties === false) throw bad(`${path}.required`, `"${r}" is required but not among the properties`);
    const names = Object.keys(props);
    // a required property that is not listed may only come in as an additional one: refused
    for (const r of required) if (!(r in props)) throw unsupported(`${path}.required`, `a required property without a schema in properties ("${r}")`);
    use('ws');
    const kv = (name) => define(`${hint}-${name}-kv`, `${literal(JSON.stringify(name))} ws ":" ws ${visit(props[name], `${path}.properties.${name}`, `${hint}-${name}`)}`);
    const req = names.filter((n) => required.includes(n)).map(kv);
    const opt = names.filter((n) => !required.includes(n)).map(kv);
    let extra = null; // the rule of one additional key/value pair, if any are allowed
    const ap = s.additionalProperties ?? (names.length ? false : true);
    if (ap !== false) {
      const valueExpr = ap === true ? use('value') : visit(ap, `${path}.additionalProperties`, `${hint}-additional`);
      // an additional key must not repeat a listed one
      const key = names.length ? keyOtherThan(names, path, hint) : use('string');
      extra = define(`${hint}-additional-kv`, `${key} ":" ws ${valueExpr}`);
    }
    // the optional ones in order, each there or not; the additional ones after them
    const items = [...opt.map((o) => ({ rule: o, many: false })), ...(extra ? [{ rule: extra, many: true }] : [])];
    let body;
    if (req.length) {
      body = req.join(' "," ws ') + items.map((it) => ` ("," ws ${it.rule})${it.many ? '*' : '?'}`).join('');
    } else if (items.length) {
      // no required property: the first one present has no comma before it
      const tails = items.map((it, i) => {
        const after = items.slice(i + 1).map((n) => ` ("," ws ${n.rule})${n.many ? '*' : '?'}`).join('');
        return `${it.rule}${it.many ? ` ("," ws ${it.rule})*` : ''}${after}`;
      });
      body = `(${define(`${hint}-props`, tails.join(' | '))})?`;
    } else body = '';
    return define(hint, `"{" ws ${body} "}" ws`);
  }

  // A JSON string that is none of the given keys: at each point along the keys' common prefixes
  // the text either goes on with one of them or leaves them all (another character, an escape,
  // or the closing quote where no key ends).
  function keyOtherThan(keys, path, hint) {
    const trie = {};
    for (const k of keys) {
      if (JSON.stringify(k) !== `"${k}"`) throw unsupported(`${path}.additionalProperties`, `additional properties beside a property name that JSON escapes (${JSON.stringify(k)})`);
      let node = trie;
      for (const ch of k) node = node[ch] ??= {};
      node.$end = true;
    }
    use('char');
    const rest = define(`${hint}-key-rest`, 'char* "\\""');
    const build = (node, depth) => {
      const chars = Object.keys(node).filter((c) => c !== '$end');
      const avoid = chars.map((c) => (c === ']' || c === '\\' || c === '^' || c === '-' ? '\\' + c : c)).join('');
      const alts = [`[^"\\\\\\x7F\\x00-\\x1F${avoid}] ${rest}`, `"\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4}) ${rest}`];
      if (!node.$end) alts.push('"\\""');
      for (const c of chars) alts.push(`${literal(c)} ${build(node[c], depth + 1)}`);
      return define(`${hint}-key-${depth}`, alts.join(' | '));
    };
    return `"\\"" ${build(trie, 0)} ws`;
  }

  function arrayRule(s, path, hint) {
    const min = count(s, 'minItems', path) ?? 0, max = count(s, 'maxItems', path) ?? Infinity;
    if (max < min) throw bad(path, 'maxItems is below minItems');
    use('ws');
    const tuple = s.prefixItems ?? (Array.isArray(s.items) ? s.items : null);
    if (tuple) {
      const key = s.prefixItems ? 'prefixItems' : 'items';
      if (s.prefixItems && s.items !== undefined && s.items !== false) throw unsupported(`${path}.items`, 'items after prefixItems');
      const parts = tuple.map((t, i) => visit(t, `${path}.${key}[${i}]`, `${hint}-${i}`));
      return define(hint, `"[" ws ${parts.join(' "," ws ')} "]" ws`);
    }
    const item = s.items === undefined ? use('value') : visit(s.items, `${path}.items`, `${hint}-item`);
    return define(hint, `"[" ws ${repeated(item, min, max, '"," ws')} "]" ws`);
  }

  const root = visit(schema, '$', 'root', true);
  const out = [`${rootName} ::= ${root}`];
  for (const [name, body] of rules) out.push(`${name} ::= ${body}`);
  for (const name of Object.keys(PRIMITIVES)) if (used.has(name)) out.push(PRIMITIVES[name]);
  return out.join('\n') + '\n';
}

/** The grammar of any JSON object (response_format { type: 'json_object' }). */
export const JSON_OBJECT_GRAMMAR = jsonSchemaToGrammar({});
