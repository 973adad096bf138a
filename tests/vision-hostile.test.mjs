// tests/vision-hostile.test.mjs — hostile mmproj files and images (issue 32, acceptance 4): each is
// refused with a message naming the problem, or, where the change leaves a valid file, encoded;
// never a crash, in the native and the wasm build (and under ASan: `make test-asan` runs the
// "native: " tests against build/asan).
//  - mmproj mutants, at least 300 per build: named ones made here from `wick synth --mmproj
//    idefics3` files (F16 and Q8_0), one defect each — keys out of range (image size 0 or huge,
//    a patch size that does not divide it, heads that do not divide the width, scale factor 0 …),
//    tensors of the wrong shape or type, offsets past the end, broken headers — and from `wick
//    synth --mmproj lfm2` files, its projector's (mm.1, mm.2, mm.input_norm, the scale factor, blocks
//    that do not divide its 512² tiles) — each with the message it must give (or "encodes"), loaded
//    and encoded in one process by tests/test_vision.c;
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
  for (const type of ['f16', 'q8_0']) {
    files[`lfm2-${type}`] = path.join(dir, `mmproj-lfm2-${type}.gguf`);
    const r = runWick('native', ['synth', '--mmproj', 'lfm2', '--type', type, '-o', files[`lfm2-${type}`]]);
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
  add('projector-unknown', variant((g) => setKv(g, 'clip.projector_type', T.STRING, 'xyz')), /projector 'xyz' is not supported \(supported: idefics3, gemma3, lfm2\)/);
  add('projector-missing', variant((g) => dropKv(g, 'clip.projector_type')), /clip.projector_type is missing/);
  add('projector-as-number', variant((g) => setKv(g, 'clip.projector_type', T.U32, 3)), /clip.projector_type is missing/);
  add('projector-under-vision-key', variant((g) => { dropKv(g, 'clip.projector_type'); setKv(g, 'clip.vision.projector_type', T.STRING, 'idefics3'); }), ENCODES);
  add('gelu-off', variant((g) => setKv(g, 'clip.use_gelu', T.BOOL, false)), /must use GELU/);
  add('silu-on', variant((g) => setKv(g, 'clip.use_silu', T.BOOL, true)), /must use GELU/);

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

/** Writes the named mutants of every base file; returns them with their paths. */
function writeNamed() {
  const cases = [...['f16', 'q8_0'].flatMap(namedMutants), ...['f16', 'q8_0'].flatMap(lfm2Mutants)];
  for (const c of cases) {
    c.file = path.join(dir, `${c.name}.gguf`);
    fs.writeFileSync(c.file, c.bytes);
  }
  return cases;
}

/** The --mutate runs: [base file, truncations and flips each, seed] — 2 × 365 variants in all (lfm2's too) */
const MUTATE_RUNS = [['f16', 150, 7], ['q8_0', 150, 11], ['f32', 25, 13], ['lfm2-f16', 40, 17]];

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
