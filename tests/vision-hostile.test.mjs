// tests/vision-hostile.test.mjs — hostile mmproj files and images (issue 32, acceptance 4): each is
// refused with a message naming the problem, or, where the change leaves a valid file, encoded;
// never a crash, in the native and the wasm build (and under ASan: `make test-asan` runs the
// "native: " tests against build/asan).
//  - mmproj mutants, at least 300 per build: named ones made here from `wick synth --mmproj
//    idefics3` files (F16 and Q8_0), one defect each — keys out of range (image size 0 or huge,
//    a patch size that does not divide it, heads that do not divide the width, scale factor 0 …),
//    tensors of the wrong shape or type, offsets past the end, broken headers — and from `wick
//    synth --mmproj lfm2` files, its projector's (mm.1, mm.2, mm.input_norm, the scale factor, blocks
//    that do not divide its 512² tiles) and from `wick synth --mmproj qwen2.5vl|qwen3vl` files (the
//    window pattern, the merge size, the activation, the second frame's kernel, the gate, the fused
//    qkv, the deepstack mergers and is_deepstack_layers, mm.0 / mm.2) and `wick synth --mmproj
//    gemma4v` files (its two position tables, the clamp scalars: type, size, NaN; the query/key
//    norms, out_scale, the input projection, the tensors its graph leaves out) — each with the
//    message it must give (or "encodes"), loaded and encoded in one process by tests/test_vision.c;
//    then test_vision's --mutate mode: truncations at random offsets and 1–4 bit flips in the
//    header, key/value and tensor-information region of the F32, F16 and Q8_0 files, each refused
//    with a message or encoded (checks vision.mutate.*);
//  - hostile images through `wick vision` (the CLI's PPM reader): zero width or height, 30000 ×
//    30000 declared with a short body, a truncated body, files that are not binary PPM, maximum
//    values other than 255: exit 1 with the message, no signal; a small valid image with a header
//    comment still encodes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readGguf, writeGguf, setKv, dropKv, clone, T } from './gguf.mjs';
import { checkProblems } from './checks.mjs';
import { runProgram, runWick } from './helpers.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-vision-hostile-'));
const files = {};
const ENCODES = 'encodes';
const u64max = (1n << 64n) - 1n;

before(() => {
  for (const type of ['f32', 'f16', 'q8_0']) {
    files[type] = path.join(dir, `mmproj-idefics3-${type}.gguf`);
    const r = runWick('native', ['synth', '--mmproj', 'idefics3', '--type', type, '-o', files[type]]);
    assert.equal(r.code, 0, r.stderr);
  }
  for (const proj of ['lfm2', 'qwen2.5vl', 'qwen3vl', 'gemma4v'])
    for (const type of ['f16', 'q8_0']) {
      files[`${proj}-${type}`] = path.join(dir, `mmproj-${proj}-${type}.gguf`);
      const r = runWick('native', ['synth', '--mmproj', proj, '--type', type, '-o', files[`${proj}-${type}`]]);
      assert.equal(r.code, 0, r.stderr);
    }
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

// ---- named mmproj mutants: name → [bytes, the message pattern, or ENCODES] ----

/** The named mutants of one base file (the synth file of `type`): each changes one thing. */
function namedMutants(type) {
  const base = readGguf(files[type]);
  const cases = [];
  const add = (name, bytes, expect) => cases.push({ name: `${type}-${name}`, bytes, expect });
  const variant = (fn) => { const g = clone(base); fn(g); return writeGguf(g); };
  const tensor = (g, name) => { const t = g.tensors.find((x) => x.name === name); assert.ok(t, name); return t; };
  const key = (name, type_, value, expect) => add(`key-${name}`, variant((g) => setKv(g, `clip.vision.${name.split('=')[0]}`, type_, value)), expect);
  const whole = writeGguf(base);

  // the header and the directory
  add('empty-file', Buffer.alloc(0), /not a GGUF|truncated|too small/);
  add('magic-only', Buffer.from('GGUF'), /truncated|too small/);
  add('bad-magic', Buffer.concat([Buffer.from('GGUX'), whole.subarray(4)]), /not a GGUF/);
  add('version-1', variant((g) => { g.version = 1; }), /version 1 not supported/);
  add('key-count-huge', writeGguf(base, { nKv: 1n << 62n }), /too many/);
  add('tensor-count-huge', writeGguf(base, { nTensors: u64max }), /too many/);
  add('key-count-past-end', writeGguf(base, { nKv: 100000 }), /truncated|cannot fit/);
  add('alignment-zero', variant((g) => setKv(g, 'general.alignment', T.U32, 0)), /general.alignment/);
  add('alignment-not-power-of-two', variant((g) => setKv(g, 'general.alignment', T.U32, 48)), /general.alignment/);
  add('directory-truncated', whole.subarray(0, 2000), /truncated/);
  add('data-truncated', whole.subarray(0, whole.length - 100), /past end of file/);
  add('data-half', whole.subarray(0, whole.length >> 1), /past end of file/);

  // what the file is
  add('architecture-llama', variant((g) => setKv(g, 'general.architecture', T.STRING, 'llama')), /general.architecture is not 'clip'/);
  add('architecture-missing', variant((g) => dropKv(g, 'general.architecture')), /general.architecture is not 'clip'/);
  add('no-vision-encoder', variant((g) => setKv(g, 'clip.has_vision_encoder', T.BOOL, false)), /no vision encoder/);
  add('projector-unknown', variant((g) => setKv(g, 'clip.projector_type', T.STRING, 'xyz')), /projector 'xyz' is not supported \(supported: idefics3, gemma3, lfm2, qwen2vl_merger, qwen2\.5vl_merger, qwen3vl_merger, gemma4v\)/);
  add('projector-missing', variant((g) => dropKv(g, 'clip.projector_type')), /clip.projector_type is missing/);
  add('projector-as-number', variant((g) => setKv(g, 'clip.projector_type', T.U32, 3)), /clip.projector_type is missing/);
  add('projector-under-vision-key', variant((g) => { dropKv(g, 'clip.projector_type'); setKv(g, 'clip.vision.projector_type', T.STRING, 'idefics3'); }), ENCODES);
  add('gelu-off', variant((g) => setKv(g, 'clip.use_gelu', T.BOOL, false)), /must use GELU/);
  // both set: clip.cpp refuses the file so too
  add('silu-on', variant((g) => setKv(g, 'clip.use_silu', T.BOOL, true)), /both clip\.use_gelu and clip\.use_silu are set/);
  add('silu-instead-of-gelu', variant((g) => { setKv(g, 'clip.use_gelu', T.BOOL, false); setKv(g, 'clip.use_silu', T.BOOL, true); }), /must use GELU/);

  // the tower's shape keys, out of range or not agreeing with each other
  key('image_size=0', T.U32, 0, /image_size = 0 is out of range/);
  key('image_size=huge', T.U32, 0xffffffff, /image_size = 4294967295 is out of range/);
  key('image_size=2^63', T.U64, 1n << 63n, /image_size = 9223372036854775808 is out of range/);
  key('image_size=negative', T.I32, -64, /image_size .*(not an unsigned integer|out of range)/);
  key('image_size=string', T.STRING, '64', /image_size is not an unsigned integer/);
  key('image_size=8192', T.U32, 8192, /patches per image are too many/);
  key('image_size=128', T.U32, 128, /v\.position_embd\.weight/);
  add('key-image_size-missing', variant((g) => dropKv(g, 'clip.vision.image_size')), /clip.vision.image_size is missing/);
  key('patch_size=0', T.U32, 0, /patch_size = 0 is out of range/);
  key('patch_size=7', T.U32, 7, /image size 64 is not a multiple of the patch size 7/);
  key('patch_size=64', T.U32, 64, /1 patches per side do not divide by the scale factor 2/);
  key('patch_size=16', T.U32, 16, /v\.patch_embd\.weight: shape/);
  key('patch_size=huge', T.U32, 1 << 30, /patch_size = 1073741824 is out of range/);
  key('attention.head_count=0', T.U32, 0, /head_count = 0 is out of range/);
  key('attention.head_count=5', T.U32, 5, /embedding length 64 is not a multiple of the 5 heads/);
  key('attention.head_count=16', T.U32, 16, /head size 4 is not supported/);
  key('attention.head_count=huge', T.U32, 1 << 20, /head_count = 1048576 is out of range/);
  key('attention.head_count_kv=2', T.U32, 2, /grouped-query towers are not supported/);
  key('attention.head_dim=32', T.U32, 32, /head size 32 is not embedding length \/ heads \(16\)/);
  key('embedding_length=0', T.U32, 0, /embedding_length = 0 is out of range/);
  key('embedding_length=128', T.U32, 128, /shape|missing/);
  key('embedding_length=huge', T.U32, 1 << 30, /embedding_length = 1073741824 is out of range/);
  key('feed_forward_length=0', T.U32, 0, /feed_forward_length = 0 is out of range/);
  key('feed_forward_length=256', T.U32, 256, /ffn_(up|down)\.weight: shape/);
  key('block_count=0', T.U32, 0, /block_count = 0 is out of range/);
  key('block_count=3', T.U32, 3, /v\.blk\.2\..* is missing/);
  key('block_count=huge', T.U64, 1n << 40n, /block_count = 1099511627776 is out of range/);
  key('projector.scale_factor=0', T.U32, 0, /scale_factor = 0 is out of range/);
  key('projector.scale_factor=1', T.U32, 1, /scale_factor = 1 is out of range/);
  key('projector.scale_factor=3', T.U32, 3, /8 patches per side do not divide by the scale factor 3/);
  key('projector.scale_factor=4', T.U32, 4, /mm\.model\.fc\.weight: shape/);
  key('projector.scale_factor=huge', T.U32, 1 << 20, /scale_factor = 1048576 is out of range/);
  add('key-scale_factor-missing', variant((g) => dropKv(g, 'clip.vision.projector.scale_factor')), /scale_factor is missing/);
  key('preproc_image_size=0', T.U32, 0, /preproc_image_size = 0 is out of range/);
  key('preproc_image_size=huge', T.U32, 1 << 20, /preproc_image_size = 1048576 is out of range/);
  key('preproc_image_size=1024', T.U32, 1024, ENCODES);
  add('key-preproc_image_size-missing', variant((g) => dropKv(g, 'clip.vision.preproc_image_size')), ENCODES);
  key('projection_dim=0', T.U32, 0, /projection_dim = 0 is out of range/);
  // the text width comes from mm.model.fc's rows, as clip.cpp's clip_n_mmproj_embd takes it
  key('projection_dim=50', T.U32, 50, ENCODES);
  key('attention.layer_norm_epsilon=nan', T.F32, NaN, /layer_norm_epsilon nan is out of range/);
  key('attention.layer_norm_epsilon=-1', T.F32, -1, /layer_norm_epsilon -1 is out of range/);
  add('key-layer_norm_epsilon-missing', variant((g) => dropKv(g, 'clip.vision.attention.layer_norm_epsilon')), /layer_norm_epsilon is missing/);
  key('image_mean=short', T.ARRAY, { arrayOf: T.F32, items: [0.5, 0.5] }, /image_mean has 2 values, 3 are needed/);
  key('image_mean=nan', T.ARRAY, { arrayOf: T.F32, items: [0.5, NaN, 0.5] }, /image_mean\[1\] = nan is not usable/);
  key('image_mean=u32', T.ARRAY, { arrayOf: T.U32, items: [1, 2, 3] }, /image_mean is missing or not an array of f32/);
  key('image_std=zero', T.ARRAY, { arrayOf: T.F32, items: [0.25, 0, 0.25] }, /image_std\[1\] = 0 is not usable/);
  key('image_std=inf', T.ARRAY, { arrayOf: T.F32, items: [Infinity, 0.25, 0.25] }, /image_std\[0\] = inf is not usable/);
  key('image_std=length-huge', T.ARRAY, { arrayOf: T.F32, items: [0.25, 0.25, 0.25], length: 1n << 60n }, /past end of file|truncated/);
  add('key-unknown-extra', variant((g) => g.kv.push({ key: 'clip.vision.something_new', type: T.U32, value: 7 })), ENCODES);

  // tensors: missing, of the wrong shape, of a type that cannot be used, data outside the file
  const drop = (name) => (g) => { g.tensors = g.tensors.filter((t) => t.name !== name); };
  add('tensor-attn_k-missing', variant(drop('v.blk.1.attn_k.weight')), /v\.blk\.1\.attn_k\.weight is missing/);
  add('tensor-ln1-missing', variant(drop('v.blk.0.ln1.weight')), /v\.blk\.0\.ln1\.weight is missing/);
  add('tensor-fc-missing', variant(drop('mm.model.fc.weight')), /mm\.model\.fc\.weight is missing/);
  add('tensor-patch_embd-missing', variant(drop('v.patch_embd.weight')), /v\.patch_embd\.weight is missing/);
  // optional in clip.cpp too: a tower without biases, position table or final norm still runs
  add('tensor-post_ln-missing', variant((g) => { drop('v.post_ln.weight')(g); drop('v.post_ln.bias')(g); }), ENCODES);
  add('tensor-attn_q-bias-missing', variant(drop('v.blk.0.attn_q.bias')), ENCODES);
  add('tensor-class_embd-extra', variant((g) => g.tensors.push({ name: 'v.class_embd', ne: [64n], type: 0, data: Buffer.alloc(256) })), /v\.class_embd is not supported for idefics3/);
  add('tensor-patch_embd-3-dims', variant((g) => { const t = tensor(g, 'v.patch_embd.weight'); t.ne = [8n, 8n, 192n]; }), /v\.patch_embd\.weight: shape/);
  add('tensor-patch_embd-channels', variant((g) => { const t = tensor(g, 'v.patch_embd.weight'); t.ne = [8n, 8n, 4n, 48n]; }), /v\.patch_embd\.weight: shape \[8, 8, 4, 48\]/);
  add(`tensor-patch_embd-q8_0`, variant((g) => { const t = tensor(g, 'v.patch_embd.weight'); t.type = 8; }), /patch_embd|past end|not supported/);
  add('tensor-position_embd-short', variant((g) => { tensor(g, 'v.position_embd.weight').ne = [64n, 63n]; }), /v\.position_embd\.weight/);
  add('tensor-attn_q-narrow', variant((g) => { tensor(g, 'v.blk.0.attn_q.weight').ne = [64n, 32n]; }), /v\.blk\.0\.attn_q\.weight: shape/);
  add('tensor-ffn_up-transposed', variant((g) => { tensor(g, 'v.blk.1.ffn_up.weight').ne = [128n, 64n]; }), /v\.blk\.1\.ffn_up\.weight: shape/);
  // older conversions named the MLP's matrices the other way round: clip.cpp swaps them back
  add('tensor-ffn-names-swapped', variant((g) => {
    for (const t of g.tensors) {
      const m = /^(v\.blk\.\d+\.)ffn_(up|down)(\..*)$/.exec(t.name);
      if (m) t.name = `${m[1]}ffn_${m[2] === 'up' ? 'down' : 'up'}${m[3]}`;
    }
  }), ENCODES);
  add('tensor-fc-columns', variant((g) => { tensor(g, 'mm.model.fc.weight').ne = [128n, 192n]; }), /mm\.model\.fc\.weight: shape/);
  add('tensor-fc-rows-huge', variant((g) => { tensor(g, 'mm.model.fc.weight').ne = [256n, 1n << 21n]; }), /mm\.model\.fc\.weight: .*(output rows|past end)/);
  add('tensor-type-unknown', variant((g) => { tensor(g, 'v.blk.0.attn_v.weight').type = 99; }), /unsupported tensor type 99/);
  add('tensor-type-internal', variant((g) => { tensor(g, 'v.blk.0.attn_v.weight').type = 31; }), /unsupported tensor type 31/);
  // a norm of another type is converted to F32 at load (model.c's bind_floats), as ggml would read it
  add('tensor-norm-q4_0', variant((g) => { tensor(g, 'v.blk.0.ln2.weight').type = 2; }), ENCODES);
  add('tensor-norm-f16', variant((g) => { tensor(g, 'v.blk.0.ln2.weight').type = 1; }), ENCODES);
  add('tensor-offset-past-end', variant((g) => { tensor(g, 'v.post_ln.bias').offset = 1n << 40n; }), /past end of file/);
  add('tensor-offset-wraps-around', variant((g) => { tensor(g, 'mm.model.fc.weight').offset = u64max - 31n; }), /past end of file|not aligned/);
  add('tensor-offset-misaligned', variant((g) => { tensor(g, 'v.blk.0.ln1.bias').offset = 4n; }), /not aligned/);
  add('tensor-name-duplicated', variant((g) => { g.tensors[2].name = g.tensors[1].name; }), /appears twice/);
  add('tensor-five-dimensions', variant((g) => { tensor(g, 'v.post_ln.weight').ne = [64n, 1n, 1n, 1n, 1n]; }), /dimensions/);
  add('tensor-shape-overflows', variant((g) => { tensor(g, 'v.blk.0.attn_q.weight').ne = [1n << 32n, 1n << 32n]; }), /too large/);
  return cases;
}

/** The named mutants of an lfm2 file (`wick synth --mmproj lfm2` of `type`): its projector's keys and tensors. */
function lfm2Mutants(type) {
  const base = readGguf(files[`lfm2-${type}`]);
  const cases = [];
  const add = (name, fn, expect) => { const g = clone(base); fn(g); cases.push({ name: `lfm2-${type}-${name}`, bytes: writeGguf(g), expect }); };
  const drop = (...names) => (g) => { g.tensors = g.tensors.filter((t) => !names.includes(t.name)); };
  const tensor = (g, name) => { const t = g.tensors.find((x) => x.name === name); assert.ok(t, name); return t; };
  add('as-is', () => {}, ENCODES);
  add('tensor-mm1-missing', drop('mm.1.weight'), /mm\.1\.weight is missing/);
  add('tensor-mm2-missing', drop('mm.2.weight'), /mm\.2\.weight is missing/);
  add('tensor-mm1-bias-missing', drop('mm.1.bias'), /mm\.1\.bias is missing/);
  add('tensor-mm2-bias-short', (g) => { tensor(g, 'mm.2.bias').ne = [95n]; }, /mm\.2\.bias/);
  // optional in clip.cpp: without its input norm the projector still runs
  add('tensor-input_norm-missing', drop('mm.input_norm.weight', 'mm.input_norm.bias'), ENCODES);
  add('tensor-input_norm-short', (g) => { tensor(g, 'mm.input_norm.weight').ne = [128n]; }, /mm\.input_norm\.weight/);
  add('tensor-mm1-columns', (g) => { tensor(g, 'mm.1.weight').ne = [128n, 384n]; }, /mm\.1\.weight: shape/);
  add('tensor-mm2-columns', (g) => { tensor(g, 'mm.2.weight').ne = [96n, 192n]; }, /mm\.2\.weight: shape/);
  add('tensor-mm1-rows-huge', (g) => { tensor(g, 'mm.1.weight').ne = [256n, 1n << 19n]; }, /mm\.1\.weight: .*(output rows|past end)/);
  add('tensor-position_embd-missing', drop('v.position_embd.weight'), ENCODES);
  add('key-scale_factor-missing', (g) => dropKv(g, 'clip.vision.projector.scale_factor'), /scale_factor is missing/);
  add('key-scale_factor=1', (g) => setKv(g, 'clip.vision.projector.scale_factor', T.U32, 1), /scale_factor = 1 is out of range/);
  add('key-scale_factor=3', (g) => setKv(g, 'clip.vision.projector.scale_factor', T.U32, 3), /16 patches per side do not divide by the scale factor 3/);
  // 384 / 16 = 24 patches per side divide by 3, but blocks of 48 pixels do not divide lfm2's 512² tiles
  add('key-image_size=384-scale_factor=3', (g) => { setKv(g, 'clip.vision.image_size', T.U32, 384); setKv(g, 'clip.vision.projector.scale_factor', T.U32, 3); },
    /tiles of 512 pixels do not divide into blocks of 48/);
  return cases;
}

/** The named mutants of a qwen2.5vl or qwen3vl file (`wick synth --mmproj PROJ` of `type`): their
 * keys (the window pattern, the merge size, the activation) and tensors (the second frame's kernel,
 * the gate, the fused qkv, the deepstack mergers, the merger mm.0 / mm.2). */
function qwenMutants(proj, type) {
  const base = readGguf(files[`${proj}-${type}`]);
  const cases = [];
  const add = (name, fn, expect) => { const g = clone(base); fn(g); cases.push({ name: `${proj}-${type}-${name}`, bytes: writeGguf(g), expect }); };
  const drop = (...names) => (g) => { g.tensors = g.tensors.filter((t) => !names.includes(t.name)); };
  const tensor = (g, name) => { const t = g.tensors.find((x) => x.name === name); assert.ok(t, name); return t; };
  const extra = (name, ne) => (g) => g.tensors.push({ name, ne: ne.map(BigInt), type: 0, data: Buffer.alloc(4 * ne.reduce((a, b) => a * b, 1)) });
  const common = () => {
    add('as-is', () => {}, ENCODES);
    add('tensor-patch_embd-1-missing', drop('v.patch_embd.weight.1'), /v\.patch_embd\.weight\.1 is missing/);
    add('tensor-patch_embd-1-shape', (g) => { tensor(g, 'v.patch_embd.weight.1').ne = [8n, 8n, 12n, 64n]; }, /v\.patch_embd\.weight\.1: shape/);
    add('tensor-mm0-missing', drop('mm.0.weight'), /mm\.0\.weight is missing/);
    add('tensor-mm2-missing', drop('mm.2.weight'), /mm\.2\.weight is missing/);
    add('tensor-mm0-bias-missing', drop('mm.0.bias'), /mm\.0\.bias is missing/);
    add('tensor-mm0-columns', (g) => { tensor(g, 'mm.0.weight').ne = [128n, 512n]; }, /mm\.0\.weight: shape/);
    add('tensor-mm2-rows-huge', (g) => { tensor(g, 'mm.2.weight').ne = [256n, 1n << 21n]; }, /mm\.2\.weight: .*(output rows|past end)/);
    add('tensor-class_embd-extra', extra('v.class_embd', [64]), /v\.class_embd is not supported/);
    add('tensor-q_norm-extra', extra('v.blk.0.attn_q_norm.weight', [16]), /attn_q_norm\.weight is not supported/);
    add('key-spatial_merge_size=3', (g) => setKv(g, 'clip.vision.spatial_merge_size', T.U32, 3), /spatial_merge_size 3 \(the qwen merger takes 2 × 2 patches only\)/);
    add('key-spatial_merge_size=0', (g) => setKv(g, 'clip.vision.spatial_merge_size', T.U32, 0), /spatial_merge_size = 0 is out of range/);
    add('key-gelu-and-silu', (g) => { setKv(g, 'clip.use_gelu', T.BOOL, true); setKv(g, 'clip.use_silu', T.BOOL, true); }, /both clip\.use_gelu and clip\.use_silu/);
    add('key-patch_size=huge', (g) => setKv(g, 'clip.vision.patch_size', T.U32, 1000), /image size .* is not a multiple of the patch size 1000|patch_size = 1000/);
  };
  common();
  if (proj === 'qwen2.5vl') {
    add('key-n_wa_pattern-missing', (g) => dropKv(g, 'clip.vision.n_wa_pattern'), /clip\.vision\.n_wa_pattern is missing/);
    add('key-n_wa_pattern=0', (g) => setKv(g, 'clip.vision.n_wa_pattern', T.U32, 0), ENCODES);
    add('key-n_wa_pattern=1', (g) => setKv(g, 'clip.vision.n_wa_pattern', T.U32, 1), ENCODES);
    add('key-n_wa_pattern=huge', (g) => setKv(g, 'clip.vision.n_wa_pattern', T.U32, 1 << 30), /n_wa_pattern = 1073741824 is out of range/);
    // patches of 112 pixels: 112 / 112 / 2 leaves a window of no position
    add('key-patch_size=112', (g) => setKv(g, 'clip.vision.patch_size', T.U32, 112), /patches of 112 pixels leave no window of 112 pixels/);
    add('key-silu-off', (g) => setKv(g, 'clip.use_silu', T.BOOL, false), /gated MLP with GELU-quick/);
    add('key-gelu-instead-of-silu', (g) => { setKv(g, 'clip.use_silu', T.BOOL, false); setKv(g, 'clip.use_gelu', T.BOOL, true); }, ENCODES);
    add('tensor-ffn_gate-missing', drop('v.blk.0.ffn_gate.weight', 'v.blk.0.ffn_gate.bias'), ENCODES);
    add('tensor-ffn_gate-shape', (g) => { tensor(g, 'v.blk.1.ffn_gate.weight').ne = [128n, 64n]; }, /v\.blk\.1\.ffn_gate\.weight: shape/);
    add('tensor-patch_embd-bias-extra', extra('v.patch_embd.bias', [64]), /v\.patch_embd\.bias is not supported for qwen2\.5vl_merger/);
    add('tensor-position_embd-extra', extra('v.position_embd.weight', [64, 64]), /v\.position_embd\.weight is not supported for qwen2\.5vl_merger/);
    add('tensor-attn_qkv-extra', extra('v.blk.0.attn_qkv.weight', [64, 192]), ENCODES);
    // as Qwen2-VL: LayerNorms (the RMS norms' weights serve), no windows
    add('projector-qwen2vl', (g) => { setKv(g, 'clip.projector_type', T.STRING, 'qwen2vl_merger'); setKv(g, 'clip.vision.n_wa_pattern', T.U32, 0); }, ENCODES);
    add('projector-qwen2vl-windows', (g) => setKv(g, 'clip.projector_type', T.STRING, 'qwen2vl_merger'), /qwen2vl_merger with window attention \(n_wa_pattern 2\) is not supported/);
  } else {
    add('tensor-attn_qkv-missing', drop('v.blk.1.attn_qkv.weight'), /v\.blk\.1\.attn_qkv\.weight is missing/);
    add('tensor-attn_qkv-shape', (g) => { tensor(g, 'v.blk.0.attn_qkv.weight').ne = [64n, 128n]; }, /v\.blk\.0\.attn_qkv\.weight: shape/);
    add('tensor-attn_qkv-bias-short', (g) => { tensor(g, 'v.blk.0.attn_qkv.bias').ne = [64n]; }, /v\.blk\.0\.attn_qkv\.bias/);
    add('tensor-patch_embd-bias-missing', drop('v.patch_embd.bias'), /v\.patch_embd\.bias is missing/);
    add('tensor-position_embd-missing', drop('v.position_embd.weight'), /v\.position_embd\.weight is missing/);
    add('tensor-deepstack-fc2-missing', drop('v.deepstack.0.fc2.weight'), /v\.deepstack\.0\.fc2\.weight is missing/);
    add('tensor-deepstack-norm-missing', drop('v.deepstack.1.norm.weight'), /v\.deepstack\.1\.norm\.weight is missing/);
    add('tensor-deepstack-fc1-columns', (g) => { tensor(g, 'v.deepstack.0.fc1.weight').ne = [128n, 512n]; }, /v\.deepstack\.0\.fc1\.weight: shape/);
    add('tensor-deepstack-fc2-rows', (g) => { tensor(g, 'v.deepstack.1.fc2.weight').ne = [256n, 95n]; tensor(g, 'v.deepstack.1.fc2.bias').ne = [95n]; },
      /v\.deepstack\.1\.fc2\.weight: 95 output rows where mm\.2 has 96/);
    add('key-is_deepstack_layers-disagrees', (g) => setKv(g, 'clip.vision.is_deepstack_layers', T.ARRAY, { arrayOf: T.BOOL, items: [true, false, false] }),
      /is_deepstack_layers does not match the deepstack tensors \(layer 1\)/);
    add('key-is_deepstack_layers-short', (g) => setKv(g, 'clip.vision.is_deepstack_layers', T.ARRAY, { arrayOf: T.BOOL, items: [true, true] }),
      /is_deepstack_layers does not match/);
    add('key-is_deepstack_layers-missing', (g) => dropKv(g, 'clip.vision.is_deepstack_layers'), ENCODES);
    // one deepstack layer fewer (the key says so too): a narrower output, still encoded
    add('deepstack-layer-1-removed', (g) => {
      drop(...['norm.weight', 'norm.bias', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias'].map((p) => `v.deepstack.1.${p}`))(g);
      setKv(g, 'clip.vision.is_deepstack_layers', T.ARRAY, { arrayOf: T.BOOL, items: [true, false, false] });
    }, ENCODES);
    add('key-gelu-off', (g) => setKv(g, 'clip.use_gelu', T.BOOL, false), ENCODES); // GELU-quick, as Qwen2-VL's
    add('tensor-ffn_gate-extra', extra('v.blk.0.ffn_gate.weight', [64, 128]), ENCODES);
  }
  return cases;
}

/** The named mutants of a gemma4v file (`wick synth --mmproj gemma4v` of `type`): its position
 * tables, clamps, per-layer norms and scale, input projection, and what its graph leaves out. */
function gemma4vMutants(type) {
  const base = readGguf(files[`gemma4v-${type}`]);
  const cases = [];
  const add = (name, fn, expect) => { const g = clone(base); fn(g); cases.push({ name: `gemma4v-${type}-${name}`, bytes: writeGguf(g), expect }); };
  const drop = (...names) => (g) => { g.tensors = g.tensors.filter((t) => !names.includes(t.name)); };
  const tensor = (g, name) => { const t = g.tensors.find((x) => x.name === name); assert.ok(t, name); return t; };
  const f32 = (values) => Buffer.from(new Float32Array(values).buffer);
  const extra = (name, ne, data = null) => (g) => g.tensors.push({ name, ne: ne.map(BigInt), type: 0, data: data ?? Buffer.alloc(4 * ne.reduce((a, b) => a * b, 1)) });
  add('as-is', () => {}, ENCODES);
  add('projector-under-vision-key', (g) => { dropKv(g, 'clip.projector_type'); setKv(g, 'clip.vision.projector_type', T.STRING, 'gemma4v'); }, ENCODES);
  // the position tables: [64, 512, 2], F32
  add('tensor-position_embd-missing', drop('v.position_embd.weight'), /v\.position_embd\.weight is missing/);
  add('tensor-position_embd-2d', (g) => { tensor(g, 'v.position_embd.weight').ne = [64n, 1024n]; }, /v\.position_embd\.weight: shape/);
  add('tensor-position_embd-width', (g) => { tensor(g, 'v.position_embd.weight').ne = [32n, 1024n, 2n]; }, /v\.position_embd\.weight: shape/);
  add('tensor-position_embd-f16', (g) => { const t = tensor(g, 'v.position_embd.weight'); t.type = 1; t.data = t.data.subarray(0, t.data.length / 2); },
    /v\.position_embd\.weight: type f16 is not supported/);
  // the clamps: one F32 value each, not NaN; absent ones are no clamp
  add('clamp-f16', (g) => { const t = tensor(g, 'v.blk.0.attn_q.input_min'); t.type = 1; t.data = Buffer.alloc(2); }, /v\.blk\.0\.attn_q\.input_min: type f16 where f32/);
  add('clamp-two-values', (g) => { const t = tensor(g, 'v.blk.0.ffn_down.output_max'); t.ne = [2n]; t.data = f32([1, 2]); },
    /v\.blk\.0\.ffn_down\.output_max: a clamp bound must be one value/);
  add('clamp-nan', (g) => { tensor(g, 'mm.input_projection.input_max').data = f32([NaN]); }, /mm\.input_projection\.input_max: the clamp bound is NaN/);
  add('clamp-infinite', (g) => { tensor(g, 'mm.input_projection.input_max').data = f32([Infinity]); }, ENCODES);
  add('clamps-removed', (g) => { g.tensors = g.tensors.filter((t) => !/_(min|max)$/.test(t.name)); }, ENCODES);
  add('clamp-extra-on-gate', extra('v.blk.1.ffn_gate.output_min', [1], f32([-0.25])), ENCODES);
  add('clamp-min-above-max', (g) => { tensor(g, 'v.blk.0.attn_q.input_min').data = f32([3]); }, ENCODES);
  // the layer's norms and scale
  add('tensor-q_norm-width', (g) => { const t = tensor(g, 'v.blk.0.attn_q_norm.weight'); t.ne = [32n]; t.data = Buffer.alloc(128); }, /v\.blk\.0\.attn_q_norm\.weight: shape/);
  add('tensor-q_norm-whole-row', (g) => { for (const n of ['attn_q_norm', 'attn_k_norm']) { const t = tensor(g, `v.blk.1.${n}.weight`); t.ne = [64n]; t.data = f32(Array(64).fill(0.5)); } }, ENCODES);
  add('tensor-qk_norm-missing', drop('v.blk.0.attn_q_norm.weight', 'v.blk.0.attn_k_norm.weight'), ENCODES);
  add('tensor-post-norms-missing', drop('v.blk.1.attn_post_norm.weight', 'v.blk.1.ffn_post_norm.weight'), ENCODES);
  add('tensor-out_scale-per-dim', (g) => { const t = tensor(g, 'v.blk.0.out_scale.weight'); t.ne = [64n]; t.data = f32(Array(64).fill(0.9)); }, ENCODES);
  add('tensor-out_scale-shape', (g) => { const t = tensor(g, 'v.blk.0.out_scale.weight'); t.ne = [3n]; t.data = f32([1, 1, 1]); }, /v\.blk\.0\.out_scale\.weight: shape/);
  add('tensor-ffn_gate-missing', drop('v.blk.0.ffn_gate.weight'), ENCODES);
  add('tensor-std_scale-missing', drop('v.std_scale'), ENCODES);
  add('tensor-std_bias-short', (g) => { const t = tensor(g, 'v.std_bias'); t.ne = [32n]; t.data = t.data.subarray(0, 128); }, /v\.std_bias: shape/);
  add('tensor-input_projection-missing', drop('mm.input_projection.weight'), /mm\.input_projection\.weight is missing/);
  add('tensor-input_projection-columns', (g) => { tensor(g, 'mm.input_projection.weight').ne = [128n, 48n]; }, /mm\.input_projection\.weight: shape/);
  // what gemma4v.cpp's graph leaves out
  add('tensor-patch_embd-bias-extra', extra('v.patch_embd.bias', [64]), /v\.patch_embd\.bias is not supported for gemma4v/);
  add('tensor-attn_qkv-extra', extra('v.blk.0.attn_qkv.weight', [64, 192]), /v\.blk\.0\.attn_qkv\.weight is not supported for gemma4v/);
  add('tensor-ls1-extra', extra('v.blk.0.ls1.weight', [64]), /v\.blk\.0\.ls1\.weight is not supported for gemma4v/);
  // keys: the pooling window, the activation
  add('key-scale_factor=2', (g) => setKv(g, 'clip.vision.projector.scale_factor', T.U32, 2), ENCODES);
  add('key-scale_factor=0', (g) => setKv(g, 'clip.vision.projector.scale_factor', T.U32, 0), /scale_factor = 0 is out of range/);
  add('key-scale_factor=huge', (g) => setKv(g, 'clip.vision.projector.scale_factor', T.U32, 1000), /scale_factor = 1000 is out of range/);
  add('key-gelu', (g) => setKv(g, 'clip.use_gelu', T.BOOL, true), ENCODES);
  add('key-silu', (g) => setKv(g, 'clip.use_silu', T.BOOL, true), ENCODES);
  add('key-head_count=8', (g) => setKv(g, 'clip.vision.attention.head_count', T.U32, 8), /attn_q_norm\.weight: shape/);
  return cases;
}

/** Writes the named mutants of every base file; returns them with their paths. */
function writeNamed() {
  const cases = [...['f16', 'q8_0'].flatMap(namedMutants), ...['f16', 'q8_0'].flatMap(lfm2Mutants),
    ...['qwen2.5vl', 'qwen3vl'].flatMap((proj) => ['f16', 'q8_0'].flatMap((type) => qwenMutants(proj, type))),
    ...['f16', 'q8_0'].flatMap(gemma4vMutants)];
  for (const c of cases) {
    c.file = path.join(dir, `${c.name}.gguf`);
    fs.writeFileSync(c.file, c.bytes);
  }
  return cases;
}

/** The --mutate runs: [base file, truncations and flips each, seed] — 2 × 445 variants in all (lfm2's, qwen's and gemma4v's too) */
const MUTATE_RUNS = [['f16', 150, 7], ['q8_0', 150, 11], ['f32', 25, 13], ['lfm2-f16', 40, 17], ['qwen2.5vl-f16', 30, 19], ['qwen3vl-q8_0', 30, 23],
  ['gemma4v-q8_0', 20, 29]];

for (const build of ['native', 'wasm']) {
  test(`${build}: named mmproj mutants are refused with the message for their defect, or encode`, () => {
    const cases = writeNamed();
    assert.ok(cases.length >= 150, `${cases.length} named mutants`);
    const r = runProgram(build, 'test_vision', cases.map((c) => c.file));
    assert.equal(r.signal, null, r.stderr.slice(-2000));
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, cases.length, r.stdout.slice(-2000));
    const problems = [];
    let refused = 0;
    lines.forEach((line, i) => {
      const c = cases[i];
      const [file, status, message = ''] = line.split('\t');
      assert.equal(file, c.file);
      if (c.expect === ENCODES) {
        if (status !== 'OK' || message !== 'encode:ok') problems.push(`${c.name}: should encode, got ${status} ${message}`);
      } else if (status !== 'ERR') {
        problems.push(`${c.name}: loaded (${message}), should be refused with ${c.expect}`);
      } else if (!message.trim() || !c.expect.test(message)) {
        problems.push(`${c.name}: message "${message}" does not match ${c.expect}`);
      } else refused++;
    });
    assert.deepEqual(problems, []);
    process.stdout.write(`# ${build}: ${cases.length} named mutants, ${refused} refused with their message, ${cases.length - refused} encoded\n`);
  });

  test(`${build}: truncated and bit-flipped mmproj files are refused with a message or encode, never crash`, () => {
    let total = 0;
    for (const [type, count, seed] of MUTATE_RUNS) {
      // native on 2 threads: the encoder's pool runs too (the single-threaded wasm build takes 1)
      const r = runProgram(build, 'test_vision', ['--mutate', files[type], String(count), String(seed), build === 'native' ? '2' : '1']);
      assert.deepEqual(checkProblems(r, ['vision.mutate.read', 'vision.mutate.truncations', 'vision.mutate.flips']), [], r.stderr.slice(-2000));
      for (const m of r.stdout.matchAll(/^ok\tvision\.mutate\.\w+\t(\d+) /gm)) total += Number(m[1]);
      process.stdout.write(r.stdout.split('\n').filter((l) => /^ok\tvision\.mutate\.(truncations|flips)/.test(l)).map((l) => `# ${build}: ${l.split('\t')[2]}\n`).join(''));
    }
    assert.equal(total, 2 * MUTATE_RUNS.reduce((n, [, count]) => n + count, 0));
    assert.ok(total >= 300, `${total} variants`);
  });
}

// ---- hostile images through `wick vision` ----

/** a width × height RGB image with a PPM header that may declare other sizes or another maximum */
function ppm(width, height, { declared = null, maxval = 255, header = null } = {}) {
  const px = Buffer.alloc(width * height * 3);
  for (let i = 0; i < px.length; i++) px[i] = (i * 37) & 255;
  const [w, h] = declared ?? [width, height];
  return Buffer.concat([Buffer.from(header ?? `P6\n${w} ${h}\n${maxval}\n`, 'latin1'), px]);
}

const IMAGES = [
  ['zero-width', ppm(0, 16, { declared: [0, 16] }), /width, height and maximum must be numbers from 1/],
  ['zero-height', ppm(16, 0, { declared: [16, 0] }), /width, height and maximum must be numbers from 1/],
  ['zero-size', Buffer.from('P6\n0 0\n255\n', 'latin1'), /width, height and maximum must be numbers from 1/],
  ['declares-30000x30000', ppm(16, 16, { declared: [30000, 30000] }), /sides up to 16384/],
  ['declares-16000x16000-short-body', ppm(16, 16, { declared: [16000, 16000] }), /16000 × 16000 pixels need 768000000 bytes, the file has 768 after its header/],
  ['body-truncated', ppm(50, 37).subarray(0, ppm(50, 37).length - 100), /50 × 37 pixels need 5550 bytes, the file has 5450 after its header/],
  ['header-only', Buffer.from('P6\n50 37\n255\n', 'latin1'), /need 5550 bytes, the file has 0/],
  ['header-cut', Buffer.from('P6\n50 ', 'latin1'), /width, height and maximum must be numbers/],
  ['width-negative', ppm(4, 4, { header: 'P6\n-4 4\n255\n' }), /width, height and maximum must be numbers/],
  ['width-ten-digits', ppm(4, 4, { header: 'P6\n4000000000 4\n255\n' }), /width, height and maximum must be numbers/],
  ['maxval-65535', ppm(4, 4, { maxval: 65535 }), /PPM maximum 65535: only 8-bit images \(255\) are read/],
  ['maxval-15', ppm(4, 4, { maxval: 15 }), /PPM maximum 15: only 8-bit images/],
  ['maxval-zero', ppm(4, 4, { maxval: 0 }), /width, height and maximum must be numbers from 1/],
  ['ascii-ppm-p3', Buffer.from('P3\n2 2\n255\n0 0 0 1 1 1 2 2 2 3 3 3\n', 'latin1'), /not a binary PPM image \(P6\)/],
  ['png-signature', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), /not a binary PPM image \(P6\)/],
  ['empty-file', Buffer.alloc(0), /not a binary PPM image \(P6\)/],
  ['one-byte', Buffer.from('P'), /not a binary PPM image \(P6\)/],
];

for (const build of ['native', 'wasm']) {
  test(`${build}: hostile images are refused with a message, no crash; a valid one still encodes`, () => {
    const problems = [];
    for (const [name, bytes, pattern] of IMAGES) {
      const file = path.join(dir, `${name}.ppm`);
      fs.writeFileSync(file, bytes);
      const r = runWick(build, ['vision', '-m', files.f16, '--image', file]);
      if (r.signal !== null) problems.push(`${name}: killed by ${r.signal}`);
      else if (r.code !== 1) problems.push(`${name}: exit ${r.code} (${r.stderr.trim().slice(-300)})`);
      else if (!r.stderr.includes(`${name}.ppm: `) || !pattern.test(r.stderr)) problems.push(`${name}: message "${r.stderr.trim()}" does not name the file and match ${pattern}`);
    }
    assert.deepEqual(problems, []);
    // the positive control: a 1 × 1 image with a header comment (netpbm allows them anywhere in the header)
    const tiny = path.join(dir, 'tiny-with-comment.ppm');
    fs.writeFileSync(tiny, ppm(1, 1, { header: 'P6 # a comment\n1 1\n255\n' }));
    const r = runWick(build, ['vision', '-m', files.f16, '--image', tiny]);
    assert.equal(r.code, 0, r.stderr);
    // a 1 × 1 picture is resized to the file's longest side (128), so 2 × 2 tiles and the overview, 16 positions each
    assert.deepEqual(JSON.parse(r.stdout), { positions: 80, n_embd: 96, image_size: 64, images: 5, grid_x: 2, grid_y: 2, sizes: Array(5).fill([64, 64]) });
  });
}
