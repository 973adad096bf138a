// tests/gpu-steps.test.mjs — the GPU path runs a model only if it implements every step the C side
// reports for it (model.c model_steps → wick_model_tensors_json's "steps"; backend.mjs GPU_STEPS).
// Every family `wick synth` writes is loaded in the wasm build: the families the shaders were tested
// on against llama.cpp (tests/gpu-forward.test.mjs) are taken, the others refused with the names of
// the steps missing. And a field added to model_config or layer_weights (src/model.h) must be named
// in model_steps or in this file's list of plain shape fields: a switch of the forward pass that
// model_steps does not report would otherwise run on the GPU as if it were llama.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, shared, runWick } from './helpers.mjs';
import { backend, loadEngine, loadModel } from './gpu-helpers.mjs';
import { readLlamaBundle } from '../tools/llama-bundle.mjs';

const M = await loadEngine();
const vocab = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-gpu-steps-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// the families the GPU path runs (gpu-forward.test.mjs compares each with llama.cpp) and, for the
// others, exactly the steps it lacks
// (the Qwen-VL text models qwen2vl and qwen3vl are qwen2's and qwen3's layers for text: M-RoPE and
// deepstack act on image positions alone, which run on the CPU only)
const TAKEN = ['llama', 'llama3', 'qwen3', 'gemma2', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2', 'lfm2', 'qwen35', 'qwen2vl', 'qwen3vl'];
const REFUSED = {
  'granite-hybrid': ['mamba2'],
  mistral3: ['rope_yarn', 'attn_temp_scale'],
  gemma4: ['rope_freqs_full_layers', 'layer_shapes', 'kv_shared_layers', 'v_norm', 'per_layer_embeddings', 'layer_output_scale'],
  gemma3n: ['layer_shapes', 'kv_shared_layers', 'v_norm', 'per_layer_embeddings', 'altup', 'laurel', 'activation_sparsity'],
  // the embedding models stay on the CPU (the worker refuses them before the steps: wick_model_pooling)
  'gemma-embedding': ['encoder', 'bidirectional', 'sliding_window_symmetric', 'dense_out'],
  bert: ['encoder', 'layernorm', 'bidirectional'],
  'nomic-bert': ['encoder', 'layernorm', 'bidirectional'],
  'modern-bert': ['encoder', 'layernorm', 'bidirectional', 'sliding_window_symmetric'],
};
// gemma3n's per-layer table is 256 values per layer and token (llama.cpp fixes the width): its file
// takes stories260K's vocabulary of 512, not the 32000 of the others
const VOCAB = { gemma3n: path.join(shared, 'models', 'stories260K.gguf') };

// the variants of a family that `wick synth` writes with --pooling (src/synth.c synth_write): the
// encoders and the rerankers run on the CPU only
const VARIANTS = {
  'qwen3 --pooling rank': { args: ['--arch', 'qwen3', '--pooling', 'rank'], refused: ['rank_head'] },
  'bert --pooling mean': { args: ['--arch', 'bert', '--pooling', 'mean'], refused: ['encoder', 'layernorm', 'bidirectional'] },
  'bert --pooling rank': { args: ['--arch', 'bert', '--pooling', 'rank'], refused: ['encoder', 'layernorm', 'bidirectional', 'rank_head'] },
};

function synthArchs() {
  const src = fs.readFileSync(path.join(root, 'src', 'synth.c'), 'utf8');
  const table = src.slice(src.indexOf('static const synth_family families[]'));
  // and the encoders, written by synth_write_bert
  const encoders = src.slice(src.indexOf('static const char *const encoders[]'));
  return [...table.slice(0, table.indexOf('};')).matchAll(/\.name = "([^"]+)"/g)].map((m) => m[1])
    .concat([...encoders.slice(0, encoders.indexOf('};')).matchAll(/"([^"]+)"/g)].map((m) => m[1]));
}

test('every family wick synth writes is either taken by the GPU path or refused with the steps it lacks', () => {
  const archs = synthArchs();
  assert.deepEqual([...archs].sort(), [...TAKEN, ...Object.keys(REFUSED)].sort(), 'a family without an expectation here');
  for (const arch of archs) {
    const file = path.join(tmp, `${arch}.gguf`);
    const r = runWick('native', ['synth', '--arch', arch, '--shape', 'mini', '--type', 'f16', '-o', file, '--vocab', VOCAB[arch] ?? vocab]);
    assert.equal(r.code, 0, `wick synth --arch ${arch}: ${r.stderr}`);
    const { tensors, model, ptr } = loadModel(M, file);
    assert.ok(Array.isArray(tensors.steps), `${arch}: no steps reported`);
    const why = backend.GpuForward.unsupported(tensors);
    if (TAKEN.includes(arch)) assert.equal(why, null, `${arch} (steps ${tensors.steps.join(', ')})`);
    else {
      const missing = tensors.steps.filter((s) => !backend.GPU_STEPS.has(s));
      assert.deepEqual(missing, REFUSED[arch], `${arch}: steps ${tensors.steps.join(', ')}`);
      assert.equal(why, `the ${tensors.config.arch} family runs on the CPU only: the GPU path does not implement ${REFUSED[arch].join(', ')}`);
    }
    M._wick_model_free(model);
    M._free(ptr);
    fs.rmSync(file);
  }
});

test('every --pooling variant wick synth writes (encoders, rerankers) is refused with the steps it lacks', () => {
  const src = fs.readFileSync(path.join(root, 'src', 'synth.c'), 'utf8');
  assert.match(src, /static const char \*const poolings\[\] = \{"none", "mean", "cls", "last", "rank"\}/, 'a pooling without a variant here');
  const bge = path.join(tmp, 'ggml-vocab-bert-bge.gguf');
  fs.writeFileSync(bge, readLlamaBundle(['models/ggml-vocab-bert-bge.gguf'])[0]);
  for (const [name, { args, refused }] of Object.entries(VARIANTS)) {
    const file = path.join(tmp, 'variant.gguf');
    const r = runWick('native', ['synth', ...args, '--shape', 'mini', '--type', 'f16', '-o', file, '--vocab', args[1] === 'bert' ? bge : vocab]);
    assert.equal(r.code, 0, `wick synth ${name}: ${r.stderr}`);
    const { tensors, model, ptr } = loadModel(M, file);
    const missing = tensors.steps.filter((s) => !backend.GPU_STEPS.has(s));
    assert.deepEqual(missing, refused, `${name}: steps ${tensors.steps.join(', ')}`);
    assert.match(backend.GpuForward.unsupported(tensors), new RegExp(`does not implement ${refused.join(', ')}`));
    M._wick_model_free(model);
    M._free(ptr);
    fs.rmSync(file);
  }
});

test('a model that reports no steps (an older engine) is refused', () => {
  const why = backend.GpuForward.unsupported({ config: { arch: 'llama' } });
  assert.match(why, /does not implement \(no steps reported\)/);
});

// the fields that are shapes, sizes and the plain llama path's own parameters, not switches: every
// other field of model_config and layer_weights must be named in model_steps
const PLAIN = new Set([
  // model_config
  'arch', 'dim', 'n_layers', 'n_heads', 'n_kv_heads', 'head_dim', 'hidden_dim', 'n_vocab', 'n_ctx_train', 'q_dim',
  'rope_base', 'n_ctx_orig', 'yarn_beta_fast', 'yarn_beta_slow', 'rms_eps', 'n_recurrent', 'conv_kernel',
  'ssm_state', 'ssm_k_heads', 'ssm_v_heads', 'ssm_inner', 'rope_dim_swa', 'n_swa',
  // how image rows are scaled (src/images.c), M-RoPE's sections and qwen3vl's deepstack rows (image
  // rows only): images run on the CPU only (an external context refuses them). A text token's first
  // three positions are one and its fourth 0: the GPU turns every pair as NEOX does, also those that
  // Qwen3-VL's interleaved sections leave to the fourth position (pairs 61 and 62 of its 64), which
  // llama.cpp leaves unturned; their angle is 4e-7 rad per position (1.7e-3 at 4,096 tokens)
  'embd_scale_tokens', 'mrope', 'rope_sections', 'n_deepstack',
  // layer_weights: the llama layer's own tensors, and the tensors of steps named by their kind
  'kind', 'attn_norm', 'wq', 'wk', 'wv', 'wo', 'ffn_norm', 'w_gate', 'w_down', 'w_up',
  'sc_in', 'sc_out', 'conv_w', 'dn_qkv', 'dn_gate', 'dn_alpha', 'dn_beta', 'dn_out', 'dn_dt', 'dn_a', 'dn_norm',
  'm2_in', 'm2_out', 'conv_b', 'm2_dt', 'm2_a', 'm2_d', 'm2_norm', 'ple_gate', 'ple_proj', 'ple_post_norm',
]);
// fields model_steps reads under another name (a layer's biases as bias, …)
const READ_AS = { bk: 'bq', bv: 'bq', ffn_up_b: 'bo', ffn_down_b: 'bo', attn_post_norm_b: 'bo', ffn_post_norm_b: 'bo', attn_k_norm: 'attn_q_norm', rope_attn_factor_swa: 'rope_attn_factor', rope_scale_swa: 'rope_scale',
  // gemma3n's AltUp tensors and active stream are its step "altup" (n_altup), Laurel's "laurel" (laurel_rank)
  altup_active: 'n_altup', altup_router: 'n_altup', altup_router_norm: 'n_altup', altup_predict: 'n_altup', altup_correct: 'n_altup',
  altup_correct_scale: 'n_altup', laurel_l: 'laurel_rank', laurel_r: 'laurel_rank', laurel_post_norm: 'laurel_rank' };

function structFields(header, name) {
  const end = header.indexOf(`} ${name};`);
  const start = header.lastIndexOf('typedef struct {', end);
  const body = header.slice(start + 'typedef struct {'.length, end).replace(/\/\*[\s\S]*?\*\//g, '');
  const fields = [];
  for (const decl of body.split(';')) {
    const d = decl.trim();
    if (!d) continue;
    // "const float *a, *b" / "weight wq, wk" / "int32_t dim, n_layers" / "char arch[32]"
    const words = d.replace(/\[[^\]]*\]/g, '').split(',');
    words.forEach((w, i) => {
      const m = (i === 0 ? w.trim().split(/\s+/).pop() : w.trim()).replace(/^\*+/, '');
      fields.push(m);
    });
  }
  return fields;
}

test("every field of model_config and layer_weights is a plain shape or named in model_steps", () => {
  const header = fs.readFileSync(path.join(root, 'src', 'model.h'), 'utf8');
  const src = fs.readFileSync(path.join(root, 'src', 'model.c'), 'utf8');
  const start = src.indexOf('int model_steps(');
  const body = src.slice(start, src.indexOf('\n}\n', start));
  const fields = [...structFields(header, 'model_config'), ...structFields(header, 'layer_weights')];
  assert.ok(fields.length > 60, `read ${fields.length} fields only: ${fields.join(' ')}`);
  const unnamed = fields.filter((f) => !PLAIN.has(f) && !new RegExp(`\\b${READ_AS[f] || f}\\b`).test(body));
  assert.deepEqual(unnamed, [], 'fields that are neither plain shapes nor reported by model_steps (src/model.c)');
});
