// tests/families-chat.test.mjs — chat prefix reuse for every attention family (tests/chat-turns.mjs:
// four turns on one engine evaluate only what each adds, regenerate and abort, every answer a
// fresh engine's), with each family's real chat template from llama.cpp's bundle where it has one:
// the ../shared family files, and the families only `wick synth` writes — gemma4 (its KV-shared
// layers read their source layers' caches, its sliding layers rings; a 512-token context and a
// chat past its sliding window) and mistral3 (the query temperature by position). The hybrids are
// in tests/hybrid.test.mjs; context shifts of every cache kind in test_context (programs suite).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';
import { models, runWick, shared } from './helpers.mjs';
import { chatTurnsAnswerAsFresh } from './chat-turns.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-families-chat-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// [name, file, architecture, template in the bundle]
const FAMILIES = [
  ['llama3', 'families/mini-llama3-q4_k_m.gguf', 'llama', 'meta-llama-Llama-3.2-3B-Instruct.jinja'],
  ['qwen3', 'families/mini-qwen3-q8_0.gguf', 'qwen3', 'Qwen-Qwen3-0.6B.jinja'],
  ['gemma2', 'families/mini-gemma2-q8_0.gguf', 'gemma2', 'google-gemma-2-2b-it.jinja'],
  ['gemma3', 'families/mini-gemma3-q4_k_m.gguf', 'gemma3', 'google-gemma-2-2b-it.jinja'],
  ['phi3', 'families/mini-phi3-q8_0.gguf', 'phi3', 'microsoft-Phi-3.5-mini-instruct.jinja'],
  ['smollm3', 'families/mini-smollm3-q8_0.gguf', 'smollm3', 'HuggingFaceTB-SmolLM3-3B.jinja'],
  ['granite', 'families/mini-granite-q4_k_m.gguf', 'granite', 'ibm-granite-granite-3.3-2B-Instruct.jinja'],
  ['olmo2', 'families/mini-olmo2-q4_k_m.gguf', 'olmo2', 'Qwen-Qwen3-0.6B.jinja'],
  ['gemma4', null, 'gemma4', 'google-gemma-4-31B-it.jinja'],
  ['mistral3', null, 'mistral3', 'mistralai-Ministral-3-14B-Reasoning-2512.jinja'],
];

const templates = {};
before(() => {
  const names = [...new Set(FAMILIES.map((f) => f[3]))];
  const texts = readLlamaBundle(names.map((n) => `models/templates/${n}`));
  names.forEach((n, i) => { templates[n] = texts[i].toString('utf8'); });
});

function fileOf(name, file) {
  if (file) return path.join(models, file);
  const out = path.join(tmp, `${name}.gguf`);
  const r = runWick('native', ['synth', '--arch', name, '--shape', 'mini', '--type', 'q4_k_m', '-o', out,
    '--vocab', path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

for (const [name, file, arch, template] of FAMILIES)
  test(`${name}: chat turns reuse the cached prefix (only the new part evaluated; regenerate; abort) and answer as a fresh engine does`,
    { timeout: 180000 }, () => chatTurnsAnswerAsFresh(fileOf(name, file), templates[template], { arch }));
