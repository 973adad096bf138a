// tests/vision-prompt.test.mjs — a picture in a prompt (src/images.c, wick.h "images") against
// llama.cpp (tests/mtmd_chat_ref.cpp: the text model and its mmproj as llama-server loads them,
// mtmd_tokenize and mtmd_helper_eval_chunks, built by mk/mtmd-ref.mk):
//  - pairs written by `wick synth`: a text model (--shape vl, whose width is the synth mmproj's
//    projection width) on the gpt-2 vocabulary with SmolVLM's, Gemma 3's and LFM2-VL's image tokens
//    added, and its mmproj: SmolVLM's (llama + idefics3: tiles, overview and their markers), Gemma
//    3's (gemma3 + gemma3: one image between <start_of_image> and <end_of_image>, its positions
//    seeing each other both ways, embeddings not scaled by √dim) and LFM2-VL's (lfm2 + lfm2: the
//    hybrid text model; one image of the picture's own size between <|image_start|> and
//    <|image_end|>, or for a large picture <|img_row_R_col_C|> before each 512² tile and
//    <|img_thumbnail|> before the thumbnail); Gemma 4's text model (per-layer embeddings) with
//    Gemma 3's projector; Qwen2.5-VL's (qwen2vl + qwen2.5vl) and Qwen3-VL's (qwen3vl + qwen3vl:
//    deepstack rows) between <|vision_start|> and <|vision_end|>, their positions 2-D (M-RoPE);
//    Qwen3.5's (the hybrid qwen35 + qwen3vl without deepstack rows);
//    Gemma 4's (gemma4 + gemma4v: one pooled image between <|image> and <image|>, non-causal);
//    F16 and Q8_0;
//  - the prompt's layout: wick's ids equal llama.cpp's chunks (its text ids, and a run of image
//    positions where each image chunk is), tiles and overview included (lfm2: also a picture of
//    760 × 730, which it tiles 2 × 2, each image's positions its own);
//  - the last position's logits after the prompt within the shared tolerances (0.2% F16, 5% Q8_0
//    of the reference row's spread, argmax where the top two are apart), native and wasm, 1 and
//    2 threads, for three pictures of odd sizes (wide, tall, tiny); (Gemma 3's images evaluated
//    causally, as a decoder's tokens are, land 7.5% from llama.cpp: measured by hand, 2026-12-03;
//    Gemma 4's through the gemma4v pair, 35% on the wide picture: measured by hand the same way);
//  - knock-out: wick's logits with another picture are far from llama.cpp's for this one (the
//    picture's rows reach the logits), and so are llama.cpp's own with the image positions
//    filled by another picture: the comparison tells pictures apart; M-RoPE's height and width
//    sections (all pairs put on the time position in the text model's file) and qwen3vl's deepstack
//    rows (its mergers zeroed in the mmproj) each move llama.cpp's logits, and wick follows llama.cpp
//    on the edited files; an mmproj whose deepstack rows the text model does not take is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, shared, runWick, relRms, compareRows } from './helpers.mjs';
import { smolVocab, ppm } from './vision-fixtures.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';

const chatRef = path.join(root, 'build', 'mtmd_chat_ref');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-vision-prompt-'));
const PAIRS = {
  idefics3: { arch: 'llama', prompt: 'User:<__media__>Can you describe this image?<end_of_utterance>\nAssistant:' },
  gemma3: { arch: 'gemma3', prompt: '<start_of_turn>user\n<__media__>Can you describe this image?<end_of_turn>\n<start_of_turn>model\n' },
  lfm2: { arch: 'lfm2', prompt: '<|im_start|>user\n<__media__>Can you describe this image?<|im_end|>\n<|im_start|>assistant\n' },
  // Gemma 4's text model (per-layer embeddings: an image position takes the padding token's row of the
  // per-layer table and its own unscaled row's projection) with Gemma 3's projector in front
  'gemma4+gemma3': { arch: 'gemma4', mmproj: 'gemma3', prompt: '<start_of_turn>user\n<__media__>Can you describe this image?<end_of_turn>\n<start_of_turn>model\n' },
  // Qwen-VL: one image of the picture's own size between <|vision_start|> and <|vision_end|>, its
  // positions 2-D (M-RoPE) and the text after it moved by the grid's longer side; qwen3vl's rows
  // carry two deepstack rows each, added after the text model's first two layers
  'qwen2.5vl': { arch: 'qwen2vl', prompt: '<|im_start|>user\n<__media__>Can you describe this image?<|im_end|>\n<|im_start|>assistant\n' },
  qwen3vl: { arch: 'qwen3vl', prompt: '<|im_start|>user\n<__media__>Can you describe this image?<|im_end|>\n<|im_start|>assistant\n' },
  // Qwen3.5 (the hybrid text model, interleaved M-RoPE) with Qwen3-VL's projector without deepstack rows, as its mmproj is
  'qwen35+qwen3vl': { arch: 'qwen35', mmproj: 'qwen3vl', prompt: '<|im_start|>user\n<__media__>Can you describe this image?<|im_end|>\n<|im_start|>assistant\n',
    editMmproj: (g) => {
      g.tensors = g.tensors.filter((t) => !t.name.startsWith('v.deepstack.'));
      const key = 'clip.vision.is_deepstack_layers', items = g.kv.find((e) => e.key === key).value.items;
      setKv(g, key, T.ARRAY, { arrayOf: T.BOOL, items: items.map(() => false) });
    } },
  // Gemma 4's text model with its own projector: one image of the picture's own size (pooled 3 × 3)
  // between <|image> and <image|>, in Gemma 4's chat turn; its positions see each other both ways
  // (the synth width of 96 is neither E2B's 1536 nor E4B's 2560, which mtmd keeps causal)
  gemma4v: { arch: 'gemma4', prompt: '<|turn>user\n<__media__>Can you describe this image?<turn|>\n<|turn>model\n' },
};
const TYPES = ['f16', 'q8_0'];
const files = {};
const images = {};

before(() => {
  const vocab = path.join(tmp, 'vocab.gguf');
  smolVocab(vocab);
  for (const [proj, { arch }] of Object.entries(PAIRS))
    for (const type of TYPES) {
      files[`text-${proj}-${type}`] = path.join(tmp, `text-vl-${arch}-${type}.gguf`);
      let r = runWick('native', ['synth', '--shape', 'vl', '--arch', arch, '--type', type, '--vocab', vocab, '-o', files[`text-${proj}-${type}`]]);
      assert.equal(r.code, 0, r.stderr);
      files[`mmproj-${proj}-${type}`] = path.join(tmp, `mmproj-${proj}-${type}.gguf`);
      r = runWick('native', ['synth', '--mmproj', PAIRS[proj].mmproj ?? proj, '--type', type, '-o', files[`mmproj-${proj}-${type}`]]);
      assert.equal(r.code, 0, r.stderr);
      if (PAIRS[proj].editMmproj) {
        const g = readGguf(files[`mmproj-${proj}-${type}`]);
        PAIRS[proj].editMmproj(g);
        fs.writeFileSync(files[`mmproj-${proj}-${type}`], writeGguf(g));
      }
    }
  for (const [name, w, h, seed] of [['wide', 97, 31, 0], ['tall', 23, 88, 1], ['tiny', 3, 2, 2], ['other', 97, 31, 5], ['large', 760, 730, 3]]) {
    images[name] = path.join(tmp, `${name}.ppm`);
    fs.writeFileSync(images[name], ppm(w, h, seed));
  }
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const floats = (file) => { const b = fs.readFileSync(file); return Array.from(new Float32Array(b.buffer, b.byteOffset, b.length / 4)); };

const refs = new Map();
function reference(proj, type, image) {
  const tag = `${proj}.${type}.${path.basename(image)}`;
  if (!refs.has(tag)) {
    assert.ok(fs.existsSync(chatRef), `${chatRef} is missing: make mtmd-ref`);
    const out = path.join(tmp, `${tag}.ref.f32`);
    const r = spawnSync(chatRef, [files[`text-${proj}-${type}`], files[`mmproj-${proj}-${type}`], image, PAIRS[proj].prompt, out], { encoding: 'utf8', timeout: 120000 });
    assert.equal(r.status, 0, r.stderr);
    refs.set(tag, { ...JSON.parse(r.stdout), logits: floats(out) });
  }
  return refs.get(tag);
}

function ours(build, proj, type, image, threads) {
  const r = runWick(build, ['logits', '-m', files[`text-${proj}-${type}`], '--mmproj', files[`mmproj-${proj}-${type}`], '--image', image, '-p', PAIRS[proj].prompt,
    '--threads', String(threads)]);
  assert.equal(r.code, 0, `${build}: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  return { ids: out.prompt_ids, logits: out.prompt_logits[0] };
}

/** llama.cpp's chunks as ids: its text ids, and each image chunk as that many positions (null) */
const flatten = (chunks) => chunks.flatMap((c) => (c.text ? c.text : Array(c.image).fill(null)));

for (const proj of Object.keys(PAIRS))
test(`${proj}: the prompt is laid out as llama.cpp lays it out (markers, tiles, overview)`, () => {
  // lfm2 tiles only a picture above twice its budget (512² pixels): the large one, for it alone
  for (const name of proj === 'lfm2' ? ['wide', 'tall', 'tiny', 'large'] : ['wide', 'tall', 'tiny']) {
    const ref = reference(proj, 'f16', images[name]);
    const { ids } = ours('native', proj, 'f16', images[name], 1);
    const expect = flatten(ref.chunks);
    assert.equal(ids.length, expect.length, `${name}: ${ids.length} ids, llama.cpp ${expect.length}`);
    // llama.cpp's position count: one per id, but a Qwen picture's (M-RoPE) moves it by its grid's longer side only
    if (PAIRS[proj].arch.startsWith('qwen')) assert.ok(ref.n_past < ids.length, `${name}: ${ref.n_past} rope positions for ${ids.length} ids`);
    else assert.equal(ids.length, ref.n_past, `${name}: ${ids.length} positions, llama.cpp ${ref.n_past}`);
    assert.deepEqual(ids.map((t) => (t < 0 ? null : t)), expect, `${name}: the ids differ from llama.cpp's chunks`);
    // the image positions of one picture count up in prompt order: tiles, then the overview
    const positions = ids.filter((t) => t < 0).map((t) => -1 - t);
    assert.deepEqual(positions, positions.map((_, i) => i), `${name}: image positions out of order`);
    const chunks = ref.chunks.filter((c) => c.image).length;
    if (proj === 'idefics3') assert.ok(chunks >= 2, `${name}: llama.cpp made ${chunks} image chunks (tiles expected)`);
    else if (name === 'large') assert.equal(chunks, 5, `${name}: llama.cpp made ${chunks} image chunks (2 × 2 tiles and the thumbnail expected)`);
    else assert.equal(chunks, 1);
  }
});

for (const proj of Object.keys(PAIRS))
for (const type of TYPES) {
  test(`${proj}: logits after a prompt with a picture (${type}): within the shared tolerance of llama.cpp's, native and wasm, 1 and 2 threads`, () => {
    const tol = type === 'f16' ? 0.002 : 0.05;
    const problems = [];
    let worst = 0;
    for (const name of ['wide', 'tall', 'tiny']) {
      const ref = reference(proj, type, images[name]);
      const runs = [['native', 1], ['native', 2], ['wasm', 1], ['wasm', 2]].map(([build, threads]) => ({ build, threads, ...ours(build, proj, type, images[name], threads) }));
      for (const run of runs) {
        problems.push(...compareRows([run.logits], [ref.logits], tol, `${name} ${run.build} ${run.threads}t`));
        worst = Math.max(worst, relRms(run.logits, ref.logits));
      }
      // the same numbers whatever the build and thread count
      for (const run of runs.slice(1)) assert.deepEqual(run.logits, runs[0].logits, `${name}: ${run.build} ${run.threads} threads differs from native 1 thread`);
    }
    process.stdout.write(`# ${proj} ${type}: worst relative RMS against llama.cpp ${(worst * 100).toFixed(4)}%\n`);
    assert.deepEqual(problems, []);
  });
}

for (const proj of Object.keys(PAIRS))
test(`${proj}: knock-out: another picture moves the logits far beyond the tolerance, in wick and in llama.cpp`, () => {
  const ref = reference(proj, 'f16', images.wide), other = reference(proj, 'f16', images.other);
  const refMoved = relRms(other.logits, ref.logits);
  const wickOther = ours('native', proj, 'f16', images.other, 1).logits;
  const wickMoved = relRms(wickOther, ref.logits);
  process.stdout.write(`# ${proj}: another picture of the same size: llama.cpp moves ${(refMoved * 100).toFixed(2)}%, wick ${(wickMoved * 100).toFixed(2)}%\n`);
  // at least 5 times the F16 tolerance the comparison holds wick to (0.2%)
  assert.ok(refMoved > 0.01, `llama.cpp's logits moved only ${(refMoved * 100).toFixed(3)}% with another picture`);
  assert.ok(wickMoved > 0.01, `wick's logits moved only ${(wickMoved * 100).toFixed(3)}% with another picture`);
});

/** llama.cpp's logits and wick's (native, 1 thread) for a pair whose text model or mmproj is edited */
function edited(proj, which, edit, image) {
  const g = readGguf(files[`${which}-${proj}-f16`]);
  edit(g);
  const file = path.join(tmp, `edited-${which}-${proj}.gguf`);
  fs.writeFileSync(file, writeGguf(g));
  const text = which === 'text' ? file : files[`text-${proj}-f16`], mmproj = which === 'mmproj' ? file : files[`mmproj-${proj}-f16`];
  const out = path.join(tmp, `edited-${which}-${proj}.ref.f32`);
  const r = spawnSync(chatRef, [text, mmproj, image, PAIRS[proj].prompt, out], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  const w = runWick('native', ['logits', '-m', text, '--mmproj', mmproj, '--image', image, '-p', PAIRS[proj].prompt, '--threads', '1']);
  assert.equal(w.code, 0, w.stderr);
  return { ref: floats(out), wick: JSON.parse(w.stdout).prompt_logits[0] };
}

// M-RoPE's 2-D image positions: with every rotated pair on the time position (the sections
// [all, 0, 0, 0]), an image's positions turn as one and only the text after it sees its grid's size
for (const proj of ['qwen2.5vl', 'qwen3vl', 'qwen35+qwen3vl'])
test(`${proj}: knock-out: M-RoPE's height and width sections matter to llama.cpp's logits, and wick follows the file's`, () => {
  const key = `${PAIRS[proj].arch}.rope.dimension_sections`;
  const { ref, wick } = edited(proj, 'text', (g) => {
    const items = g.kv.find((e) => e.key === key).value.items, all = items.reduce((a, b) => a + b, 0);
    setKv(g, key, T.ARRAY, { arrayOf: T.I32, items: [all, 0, 0, 0] });
  }, images.wide);
  const base = reference(proj, 'f16', images.wide).logits;
  const moved = relRms(ref, base), diff = relRms(wick, ref);
  process.stdout.write(`# ${proj}: sections all on time: llama.cpp moves ${(moved * 100).toFixed(2)}%; wick on that file ${(diff * 100).toFixed(4)}% from llama.cpp\n`);
  assert.ok(moved > 0.01, `llama.cpp's logits moved only ${(moved * 100).toFixed(3)}%`);
  assert.ok(diff < 0.002, `wick is ${(diff * 100).toFixed(3)}% from llama.cpp on the edited file`);
});

test('qwen3vl: knock-out: the deepstack rows matter to llama.cpp\'s logits (its mergers zeroed), and wick follows them', () => {
  const { ref, wick } = edited('qwen3vl', 'mmproj', (g) => {
    for (const t of g.tensors) if (/^v\.deepstack\.\d+\.fc2\./.test(t.name)) t.data = Buffer.alloc(t.data.length);
  }, images.wide);
  const base = reference('qwen3vl', 'f16', images.wide).logits;
  const moved = relRms(ref, base), diff = relRms(wick, ref);
  process.stdout.write(`# qwen3vl: deepstack zeroed: llama.cpp moves ${(moved * 100).toFixed(2)}%; wick on that file ${(diff * 100).toFixed(4)}% from llama.cpp\n`);
  assert.ok(moved > 0.01, `llama.cpp's logits moved only ${(moved * 100).toFixed(3)}%`);
  assert.ok(diff < 0.002, `wick is ${(diff * 100).toFixed(3)}% from llama.cpp on the edited file`);
  // an mmproj whose deepstack rows the text model does not take is refused
  const r = runWick('native', ['logits', '-m', files['text-qwen2.5vl-f16'], '--mmproj', files['mmproj-qwen3vl-f16'], '--image', images.wide, '-p', PAIRS.qwen3vl.prompt]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /gives 2 deepstack rows per position but the text model takes 0/);
});

test('refusals: a prompt without the marker, an mmproj for another width, a model that takes no images', () => {
  const base = ['logits', '-m', files['text-idefics3-f16'], '--mmproj', files['mmproj-idefics3-f16'], '--image', images.wide];
  for (const build of ['native', 'wasm']) {
    let r = runWick(build, [...base, '-p', 'no marker here']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /image marker <__media__> once/);
    r = runWick(build, ['logits', '-m', path.join(shared, 'models', 'mini', 'mini-f16.gguf'), '--mmproj', files['mmproj-idefics3-f16'], '--image', images.wide, '-p', PAIRS.idefics3.prompt]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /feeds embeddings of 96 but the text model's are 256/);
  }
});
