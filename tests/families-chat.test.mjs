// tests/families-chat.test.mjs — chat prefix reuse for every attention family (tests/chat-turns.mjs:
// four turns on one engine evaluate only what each adds, regenerate and abort, every answer a
// fresh engine's), with each family's real chat template from llama.cpp's bundle where it has one:
// the ../shared family files, and the families only `wick synth` writes — gemma4 (its KV-shared
// layers read their source layers' caches, its sliding layers rings; a 512-token context and a
// chat past its sliding window), gemma3n (AltUp's streams around those layers) and mistral3 (the
// query temperature by position). The hybrids are
// in tests/hybrid.test.mjs; context shifts of every cache kind in test_context (programs suite).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { root, models, runWick, shared } from './helpers.mjs';
import { chatTurnsAnswerAsFresh } from './chat-turns.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-families-chat-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// each family's template in the bundle; its file is ../shared's families/mini-<name>-<type>.gguf
// (type given) or a `wick synth --arch <name>` one, of architecture arch (the name unless given)
const FAMILIES = {
  llama3: { type: 'q4_k_m', arch: 'llama', template: 'meta-llama-Llama-3.2-3B-Instruct.jinja' },
  qwen3: { type: 'q8_0', template: 'Qwen-Qwen3-0.6B.jinja' },
  gemma2: { type: 'q8_0', template: 'google-gemma-2-2b-it.jinja' },
  gemma3: { type: 'q4_k_m', template: 'google-gemma-2-2b-it.jinja' },
  phi3: { type: 'q8_0', template: 'microsoft-Phi-3.5-mini-instruct.jinja' },
  smollm3: { type: 'q8_0', template: 'HuggingFaceTB-SmolLM3-3B.jinja' },
  granite: { type: 'q4_k_m', template: 'ibm-granite-granite-3.3-2B-Instruct.jinja' },
  olmo2: { type: 'q4_k_m', template: 'Qwen-Qwen3-0.6B.jinja' },
  gemma4: { template: 'google-gemma-4-31B-it.jinja' },
  mistral3: { template: 'mistralai-Ministral-3-14B-Reasoning-2512.jinja' },
  // gemma3n on stories260K's vocabulary (its per-layer table is 256 values per layer and token);
  // its template is not in the bundle (tests/templates/, with its source)
  gemma3n: { vocab: path.join(models, 'stories260K.gguf'), template: 'google-gemma-3n-E2B-it.jinja', own: true },
};

const templates = {};
before(() => {
  const names = [...new Set(Object.values(FAMILIES).filter((f) => !f.own).map((f) => f.template))];
  const texts = readLlamaBundle(names.map((n) => `models/templates/${n}`));
  names.forEach((n, i) => { templates[n] = texts[i].toString('utf8'); });
  for (const f of Object.values(FAMILIES).filter((f) => f.own))
    templates[f.template] = fs.readFileSync(path.join(root, 'tests', 'templates', f.template), 'utf8');
});

function fileOf(name, type, vocab = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')) {
  if (type) return path.join(models, 'families', `mini-${name}-${type}.gguf`);
  const out = path.join(tmp, `${name}.gguf`);
  const r = runWick('native', ['synth', '--arch', name, '--shape', 'mini', '--type', 'q4_k_m', '-o', out,
    '--vocab', vocab]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

for (const [name, { type, arch = name, template, vocab }] of Object.entries(FAMILIES))
  test(`${name}: chat turns reuse the cached prefix (only the new part evaluated; regenerate; abort) and answer as a fresh engine does`,
    { timeout: 180000 }, () => chatTurnsAnswerAsFresh(fileOf(name, type, vocab), templates[template], { arch }));
