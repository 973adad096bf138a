// tools/extract-grammar-cases.mjs — writes tests/grammar-cases.json: the grammar and JSON-schema
// cases of llama.cpp's tests/test-grammar-integration.cpp as data (grammar or schema text, strings
// that must match, strings that must not, grammars that must fail to build). The source is read
// from the git bundle of llama.cpp that node-llama-cpp ships (npm ci installs it), or from a
// checkout given as the first argument. Only the cases are taken, none of the code.
//
//   node tools/extract-grammar-cases.mjs [llama.cpp checkout] > tests/grammar-cases.json
//
// Output: { source, grammars: [case], schemas: [case], build_failures: [{what, grammar, root}],
//           build_successes: [{what, grammar, root}] }
// where case = { what, text, pass: [input], fail: [input] } and an input is a string, or, when it
// holds token markers (the C++ file's token(N)), an array of parts: strings and token ids.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLlamaBundle } from './llama-bundle.mjs';

const FILE = 'tests/test-grammar-integration.cpp';

function readSource() {
  if (process.argv[2]) return readFileSync(join(process.argv[2], FILE), 'utf8');
  return readLlamaBundle([FILE])[0].toString('utf8');
}

// ---- a tokenizer for the small part of C++ the test file uses around its data ----
function lex(src) {
  const out = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) { i++; continue; }
    if (src.startsWith('//', i)) { i = src.indexOf('\n', i); if (i < 0) break; continue; }
    if (src.startsWith('/*', i)) { i = src.indexOf('*/', i) + 2; continue; }
    const raw = /^R"([^(]*)\(/.exec(src.slice(i, i + 40));
    if (raw) {
      const end = src.indexOf(`)${raw[1]}"`, i + raw[0].length);
      out.push({ t: 'str', v: src.slice(i + raw[0].length, end) });
      i = end + raw[1].length + 2;
      continue;
    }
    if (c === '"') {
      let j = i + 1, v = '';
      while (src[j] !== '"') {
        if (src[j] === '\\') {
          const e = src[j + 1];
          const simple = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0' };
          if (e === 'x') { const m = /^[0-9a-fA-F]+/.exec(src.slice(j + 2)); v += String.fromCharCode(parseInt(m[0], 16)); j += 2 + m[0].length; continue; }
          if (!(e in simple)) throw new Error(`unknown escape \\${e}`);
          v += simple[e];
          j += 2;
        } else v += src[j++];
      }
      out.push({ t: 'str', v });
      i = j + 1;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_:]*/.exec(src.slice(i, i + 200));
    if (word) { out.push({ t: 'id', v: word[0] }); i += word[0].length; continue; }
    const num = /^[0-9]+/.exec(src.slice(i, i + 20));
    if (num) { out.push({ t: 'num', v: Number(num[0]) }); i += num[0].length; continue; }
    out.push({ t: 'p', v: c });
    i++;
  }
  return out;
}

// An expression of the data: string literals (adjacent ones concatenated), token(N), joined by +.
// Returns the parts and the index after it.
function parseExpr(toks, i) {
  const parts = [];
  for (;;) {
    const t = toks[i];
    if (t.t === 'str') { parts.push(t.v); i++; }
    else if (t.t === 'id' && t.v === 'token' && toks[i + 1].v === '(') { parts.push(toks[i + 2].v); i += 4; }
    else throw new Error(`unexpected ${JSON.stringify(t)} in a data expression`);
    if (toks[i].v === '+' || toks[i].t === 'str') { if (toks[i].v === '+') i++; continue; }
    break;
  }
  const merged = [];
  for (const p of parts) {
    if (typeof p === 'string' && typeof merged[merged.length - 1] === 'string') merged[merged.length - 1] += p;
    else merged.push(p);
  }
  return [merged.length === 1 && typeof merged[0] === 'string' ? merged[0] : merged, i];
}

function parseList(toks, i) {
  if (toks[i].v !== '{') throw new Error('expected {');
  i++;
  const items = [];
  while (toks[i].v !== '}') {
    const [v, j] = parseExpr(toks, i);
    items.push(v);
    i = j;
    if (toks[i].v === ',') i++;
  }
  return [items, i + 1];
}

function extract(src) {
  const toks = lex(src);
  const grammars = [], schemas = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t.t !== 'id' || (t.v !== 'test_grammar' && t.v !== 'test_schema') || toks[i + 1].v !== '(') continue;
    if (toks[i + 2].t !== 'str') continue; // the definitions themselves
    let j = i + 2;
    const [what, a] = parseExpr(toks, j);
    const [text, b] = parseExpr(toks, a + 1);
    const [pass, c] = parseList(toks, b + 1);
    const [fail] = parseList(toks, c + 1);
    (t.v === 'test_grammar' ? grammars : schemas).push({ what, text, pass, fail });
  }
  // The build-failure tests: the raw grammar strings of each test_failure_* / custom-root function.
  const body = (name) => {
    const start = src.indexOf(`static void ${name}()`);
    const end = src.indexOf('\n}\n', start);
    return lex(src.slice(start, end)).filter((x) => x.t === 'str' && x.v.includes('::='));
  };
  const build_failures = [], build_successes = [];
  for (const g of body('test_failure_missing_root')) build_failures.push({ what: 'no root rule', grammar: g.v, root: 'root' });
  for (const g of body('test_failure_missing_reference')) build_failures.push({ what: 'reference to an undefined rule', grammar: g.v, root: 'root' });
  for (const g of body('test_failure_left_recursion')) build_failures.push({ what: 'left recursion', grammar: g.v, root: 'root' });
  for (const g of body('test_failure_missing_root_symbol')) build_failures.push({ what: 'the root asked for is not defined', grammar: g.v, root: 'nonexistent' });
  for (const g of body('test_custom_root_symbol_check')) {
    build_failures.push({ what: 'no rule named root', grammar: g.v, root: 'root' });
    build_successes.push({ what: 'a custom root rule', grammar: g.v, root: 'foobar' });
  }
  return { grammars, schemas, build_failures, build_successes };
}

const data = extract(readSource());
process.stdout.write(JSON.stringify({ source: `llama.cpp ${FILE} (MIT licence), as shipped in node-llama-cpp 3.21.1's gitRelease.bundle`, ...data }, null, 1) + '\n');
