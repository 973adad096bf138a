// tests/vision.test.mjs — image encoders from mmproj files (src/vision.c) against llama.cpp's mtmd
// (tests/mtmd_ref.cpp: its clip loader, the projector's preprocessor and its encoder, 1 thread, no
// flash attention, built from the llama-server build's libraries by mk/mtmd-ref.mk):
//  - `wick synth --mmproj idefics3|gemma3|lfm2|qwen2.5vl|qwen3vl|gemma4v` files at f16 and q8_0 (a
//    SmolVLM-, a Gemma-3-, an LFM2-VL-, a Qwen2.5-VL-, a Qwen3-VL- and a Gemma-4-shaped tower,
//    synth.c), which llama.cpp loads; the same bytes every time;
//  - a fixed 50 × 37 test image with gradients (a PPM written here), which llama.cpp resizes to the
//    longest side and to whole tiles (2 × 2 of them), then once more to the overview: the batch wick
//    feeds its encoder (the tiles row by row, then the overview, as mtmd's prompt holds them) equals
//    llama.cpp's preprocessed images within 1/255 of the pixel range per value; so do a tall, a wide,
//    a tiny and a letterboxed image's, also through the file without its longest side (where
//    llama.cpp resizes the original to the nearest whole tiles and to the overview, bicubic);
//    gemma3's one image (the picture letterboxed bilinearly into 64²) likewise for each of them;
//    lfm2's images (the picture at its smart size within the token budget, each image its own
//    size; a picture above twice the budget tiled 512² per tile, then the thumbnail) likewise, for
//    pictures square, tall, wide, tiny, far from square, and tiled 2 × 2 and 3 × 2; qwen2.5vl's and
//    qwen3vl's one image (dyn_size: the picture at its smart size, bicubic) likewise for pictures
//    tall, wide, tiny, far from square and large; gemma4v's one image (dyn_size with its budget of
//    70 to 1120 positions of 48² pixels, bicubic) likewise for pictures tall, wide, tiny, far from
//    square and large;
//  - the embeddings of every image of the batch: the same number of positions and width, cosine
//    per position ≥ 0.9999 (f16) and ≥ 0.999 (q8_0), native and wasm, 1 and 2 threads; 1 and 2
//    threads, native and wasm bit-identical; lfm2 (its position table resized to each image's
//    grid) also for a tiled picture (four tiles of 512² and a thumbnail of 512 × 480); the qwen
//    projectors on a 200 × 150 picture (qwen2.5vl: 7 × 5 positions, its windows of 4 × 4 in effect
//    in layer 0; qwen3vl: each position's main embedding and its two deepstack layers' compared
//    apart); qwen2vl_merger through the qwen2.5vl file relabelled (LayerNorms, no windows; gated,
//    and with GELU-quick without the gate); gemma4v on the qwen picture (480 × 384: 10 × 8 pooled
//    positions; its clamps in the file, which move llama.cpp's output when taken out);
//  - knock-outs: the pixel shuffle's order matters to llama.cpp's own output (the file with the
//    projection's input columns permuted as a transposed shuffle would read them moves it far
//    beyond the tolerance), so the comparison tells the right order from the other; so does the
//    direction gemma3's pooling walks the patch grid (llama.cpp on the transposed picture through a
//    file with its patch kernel and position table transposed); and lfm2's pixel unshuffle (mm.1's
//    input columns and mm.input_norm permuted as a transposed unshuffle would read them) and the
//    orientation of its position table's resize (the table transposed in the file); qwen2.5vl's
//    window attention (the file with n_wa_pattern 0 or 3 instead of 2: llama.cpp far from the
//    original, wick with it on each) and the orientation of its 2-D rope (llama.cpp on a square
//    picture transposed through a file transposed to match, except for the rope; checked with the
//    queries and keys zeroed); and gemma4v's 2-D rope (the same construction: its patch kernel
//    transposed and its x and y position tables exchanged) and its pooling (llama.cpp's transposed
//    run, with the queries and keys zeroed, far from the original until its positions are put back);
//  - hostile input refused with a message and no crash: a truncated mmproj, an unknown projector,
//    a gemma3 pooling window that does not divide the grid, gemma4v position tables too short for
//    the picture's patch grid, a picture that would make more tiles
//    than a batch holds, an image of zero size, a truncated image that declares 30000 × 30000.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, runWick } from './helpers.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';

const mtmdRef = path.join(root, 'build', 'mtmd_ref');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-vision-'));
const image = path.join(tmp, 'gradients.ppm');
const files = {};
// the synth files' image_std (synth.c, CLIP's): 1/255 of the pixel range in normalized units per channel
const imageStd = [0.26862954, 0.26130258, 0.27577711];

const cosine = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};
const floats = (file) => { const b = fs.readFileSync(file); return new Float32Array(b.buffer, b.byteOffset, b.length / 4); };

/** A width × height RGB image: red along x, green along y, blue a diagonal ripple (so that each
 * channel and direction of the resize shows). */
function ppm(width, height, declared = null) {
  const px = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      px[i] = Math.floor((x * 255) / Math.max(1, width - 1));
      px[i + 1] = Math.floor((y * 255) / Math.max(1, height - 1));
      px[i + 2] = ((x * 7 + y * 13) * 5) % 256;
    }
  const [w, h] = declared ?? [width, height];
  return Buffer.concat([Buffer.from(`P6\n${w} ${h}\n255\n`, 'latin1'), px]);
}

const projectors = ['idefics3', 'gemma3', 'lfm2', 'qwen2.5vl', 'qwen3vl', 'gemma4v'];
// the qwen projectors' picture: 200 × 150, a grid of 7 × 5 positions for qwen2.5vl (more than its
// windows of 4 × 4 in both directions) and 6 × 5 for qwen3vl (its position table of 8² resized to 12 × 10)
const qwenImage = path.join(tmp, 'qwen-200x150.ppm');
const pictureOf = (proj) => (proj.startsWith('qwen') || proj === 'gemma4v' ? qwenImage : image);
before(() => {
  fs.writeFileSync(image, ppm(50, 37));
  fs.writeFileSync(qwenImage, ppm(200, 150));
  for (const proj of projectors) {
    files[proj] = {};
    for (const type of ['f16', 'q8_0']) {
      const file = path.join(tmp, `mmproj-${proj}-${type}.gguf`);
      const r = runWick('native', ['synth', '--mmproj', proj, '--type', type, '-o', file]);
      assert.equal(r.code, 0, r.stderr);
      files[proj][type] = file;
    }
  }
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** llama.cpp's embeddings and preprocessed overview of an image (the test image unless given) through file */
const refs = new Map();
function reference(file, img = image) {
  const tag = `${path.basename(file)}.${path.basename(img)}`;
  if (!refs.has(tag)) {
    assert.ok(fs.existsSync(mtmdRef), `${mtmdRef} is missing: make mtmd-ref`);
    const out = path.join(tmp, `${tag}.ref.f32`), input = path.join(tmp, `${tag}.ref-in.f32`);
    const r = spawnSync(mtmdRef, [file, img, out, input], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    refs.set(tag, { ...JSON.parse(r.stdout), embd: floats(out), input: floats(input) });
  }
  return refs.get(tag);
}

/** wick's, through the native or the wasm CLI on threads threads */
function ours(build, file, threads, img = image) {
  const tag = `${path.basename(file)}.${path.basename(img)}.${build}.${threads}`;
  const out = path.join(tmp, `${tag}.f32`), input = path.join(tmp, `${tag}.in.f32`);
  const r = runWick(build, ['vision', '-m', file, '--image', img, '--threads', String(threads), '-o', out, '--dump-input', input]);
  assert.equal(r.code, 0, r.stderr);
  return { ...JSON.parse(r.stdout), embd: floats(out), input: floats(input) };
}

/** the lowest cosine over the positions, after checking the shapes agree; each position's row
 * taken in parts of `part` values where given (qwen3vl: the main embedding and each deepstack
 * layer's, 96 each) */
function worstCosine(a, ref, part = ref.n_embd) {
  assert.equal(a.positions, ref.positions, 'positions');
  assert.equal(a.n_embd, ref.n_embd, 'width');
  assert.equal(a.embd.length, ref.embd.length);
  let worst = 1;
  for (let p = 0; p < ref.positions; p++)
    for (let at = p * ref.n_embd; at < (p + 1) * ref.n_embd; at += part) {
      const row = (e) => e.subarray(at, at + part);
      worst = Math.min(worst, cosine(row(a.embd), row(ref.embd)));
    }
  return worst;
}
const TEXT_WIDTH = 96; // the synth files' projection width (synth.c's MMPROJ_TEXT)

/** In each row of tensor t (bytes per value), the blocks 1 and 2 of dim columns exchanged: a merged
 * row of 2 × 2 patches (block dy·2 + dx) read with dy and dx exchanged */
function swapBlocks(t, bytes, dim) {
  const [cols, rows] = [Number(t.ne[0]), t.ne.length > 1 ? Number(t.ne[1]) : 1];
  const data = Buffer.from(t.data);
  for (let r = 0; r < rows; r++) {
    const row = r * cols * bytes, b1 = row + dim * bytes, b2 = row + 2 * dim * bytes;
    const one = Buffer.from(data.subarray(b1, b1 + dim * bytes));
    data.copy(data, b1, b2, b2 + dim * bytes);
    one.copy(data, b2);
  }
  t.data = data;
}

/** A patch kernel [P, P, 3, dim] (values of bytes each) transposed in each plane: kx and ky exchanged */
function transposeKernel(t, P, bytes) {
  const src = Buffer.from(t.data), dst = Buffer.alloc(src.length);
  for (let plane = 0; plane < src.length / (P * P * bytes); plane++)
    for (let ky = 0; ky < P; ky++)
      for (let kx = 0; kx < P; kx++) src.copy(dst, ((plane * P + kx) * P + ky) * bytes, ((plane * P + ky) * P + kx) * bytes, ((plane * P + ky) * P + kx + 1) * bytes);
  t.data = dst;
}

/** A side × side picture and the same transposed, as two PPM files: [picture, transposed] */
function squarePictures(side, name) {
  const files_ = [path.join(tmp, `${name}.ppm`), path.join(tmp, `${name}-transposed.ppm`)];
  const px = ppm(side, side), header = px.length - side * side * 3, t = Buffer.from(px);
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) px.copy(t, header + (x * side + y) * 3, header + (y * side + x) * 3, header + (y * side + x) * 3 + 3);
  fs.writeFileSync(files_[0], px);
  fs.writeFileSync(files_[1], t);
  return files_;
}

/** a run's rows on an m × m grid of positions put back from transposed order: row (X, Y) to (Y, X) */
function untranspose(run, m) {
  const N = run.n_embd, back = new Float32Array(run.embd.length);
  for (let Y = 0; Y < m; Y++) for (let X = 0; X < m; X++) back.set(run.embd.subarray((X * m + Y) * N, (X * m + Y + 1) * N), (Y * m + X) * N);
  return { ...run, embd: back };
}

test('wick synth --mmproj idefics3|gemma3|lfm2|qwen2.5vl|qwen3vl|gemma4v writes the same bytes every time', () => {
  for (const proj of projectors) {
    const again = path.join(tmp, `again-${proj}.gguf`);
    const r = runWick('native', ['synth', '--mmproj', proj, '--type', 'f16', '-o', again]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(fs.readFileSync(again).equals(fs.readFileSync(files[proj].f16)), proj);
  }
});

/** the largest difference of two preprocessed batches (each image planes [3][h][w], sizes from
 * llama.cpp's), in units of the pixel range (1 = 255 levels) */
function inputDifference(a, ref) {
  assert.equal(a.images, ref.images, 'images');
  assert.equal(a.grid_x, ref.grid_x, 'grid_x');
  assert.equal(a.grid_y, ref.grid_y, 'grid_y');
  assert.equal(a.input.length, ref.input.length);
  let worst = 0, at = 0;
  for (const [w, h] of ref.sizes) {
    const plane = w * h;
    for (let i = 0; i < 3 * plane; i++, at++)
      worst = Math.max(worst, Math.abs(a.input[at] - ref.input[at]) * imageStd[Math.floor(i / plane)]);
  }
  assert.equal(at, ref.input.length);
  return worst;
}

test("preprocessing: wick's tiles and overview equal llama.cpp's resized, normalized images within 1/255, in prompt order", () => {
  const ref = reference(files.idefics3.f16);
  // 50 × 37 → 128 × 94 (longest side 128, even) → 128 × 128: 2 × 2 tiles of 64², then the overview
  assert.deepEqual([ref.images, ref.grid_x, ref.grid_y, ref.image_size], [5, 2, 2, 64]);
  for (const build of ['native', 'wasm']) {
    const worst = inputDifference(ours(build, files.idefics3.f16, 1), ref);
    assert.ok(worst <= 1 / 255, `${build}: largest difference ${(worst * 255).toFixed(3)}/255 of the pixel range`);
    process.stdout.write(`# preprocessing idefics3 ${build}: largest difference from llama.cpp's ${(worst * 255).toFixed(4)}/255 of the pixel range\n`);
  }
});

test('preprocessing: tall, wide and tiny images, with and without the file\'s longest side, within 1/255', () => {
  // without clip.vision.preproc_image_size (older conversions) llama.cpp resizes once, bicubic
  const g = readGguf(files.idefics3.f16);
  const oneStep = path.join(tmp, 'mmproj-no-longest-edge.gguf');
  fs.writeFileSync(oneStep, writeGguf({ ...g, kv: g.kv.filter((e) => e.key !== 'clip.vision.preproc_image_size') }));
  // the grids llama.cpp makes: with the longest side (128) and without it (the nearest whole tiles
  // of 64, the refined picture letterboxed)
  const grids = { '23x71': [[1, 2], [1, 1]], '97x20': [[2, 1], [2, 1]], '5x3': [[2, 2], [1, 1]], '150x40': [[2, 1], [2, 1]] };
  for (const [size, [withLongest, without]] of Object.entries(grids)) {
    const [w, h] = size.split('x').map(Number);
    const img = path.join(tmp, `image-${size}.ppm`);
    fs.writeFileSync(img, ppm(w, h));
    for (const [file, grid] of [[files.idefics3.f16, withLongest], [oneStep, without]]) {
      const ref = reference(file, img);
      assert.deepEqual([ref.grid_x, ref.grid_y], grid, `${size} ${path.basename(file)}: llama.cpp's grid`);
      const worst = inputDifference(ours('native', file, 1, img), ref);
      assert.ok(worst <= 1 / 255, `${size} ${path.basename(file)}: largest difference ${(worst * 255).toFixed(3)}/255`);
    }
  }
});

test("preprocessing (gemma3): one image, the picture letterboxed into 64² bilinearly, equal to llama.cpp's within 1/255", () => {
  for (const [w, h] of [[50, 37], [23, 71], [97, 20], [5, 3], [64, 64]]) {
    const img = path.join(tmp, `image-${w}x${h}.ppm`);
    fs.writeFileSync(img, ppm(w, h));
    const ref = reference(files.gemma3.f16, img);
    assert.deepEqual([ref.images, ref.grid_x, ref.grid_y, ref.image_size], [1, 0, 0, 64]);
    for (const build of w === 50 ? ['native', 'wasm'] : ['native']) {
      const worst = inputDifference(ours(build, files.gemma3.f16, 1, img), ref);
      assert.ok(worst <= 1 / 255, `${w}×${h} ${build}: largest difference ${(worst * 255).toFixed(3)}/255`);
      if (w === 50) process.stdout.write(`# preprocessing gemma3 ${build}: largest difference from llama.cpp's ${(worst * 255).toFixed(4)}/255 of the pixel range\n`);
    }
  }
});

test("preprocessing (lfm2): each image at its own size, tiles where the picture is large, equal to llama.cpp's within 1/255", () => {
  // [width, height] → llama.cpp's images ([w, h] each): the smart size within 256² … 512² pixels
  // (blocks of 32), one image; above twice that (rounded to blocks), 512² tiles and the thumbnail
  const cases = {
    '50x37': [[320, 224]], '23x71': [[160, 480]], '97x20': [[576, 128]], '5x3': [[352, 224]], '256x256': [[256, 256]],
    '3x400': [[32, 2976]], '640x640': [[512, 512]],
    '760x730': [...Array(4).fill([512, 512]), [512, 480]], '1000x700': [...Array(6).fill([512, 512]), [608, 416]],
  };
  const grids = { '760x730': [2, 2], '1000x700': [3, 2] };
  for (const [size, sizes] of Object.entries(cases)) {
    const [w, h] = size.split('x').map(Number);
    const img = path.join(tmp, `image-${size}.ppm`);
    fs.writeFileSync(img, ppm(w, h));
    const ref = reference(files.lfm2.f16, img);
    assert.deepEqual(ref.sizes, sizes, `${size}: llama.cpp's images`);
    assert.deepEqual([ref.grid_x, ref.grid_y], grids[size] ?? [0, 0], `${size}: llama.cpp's grid`);
    for (const build of size === '50x37' || size === '760x730' ? ['native', 'wasm'] : ['native']) {
      const mine = ours(build, files.lfm2.f16, 1, img);
      assert.deepEqual(mine.sizes, sizes, `${size} ${build}: wick's images`);
      const worst = inputDifference(mine, ref);
      assert.ok(worst <= 1 / 255, `${size} ${build}: largest difference ${(worst * 255).toFixed(3)}/255`);
      if (size === '50x37' || size === '760x730') process.stdout.write(`# preprocessing lfm2 ${size} ${build}: largest difference from llama.cpp's ${(worst * 255).toFixed(4)}/255 of the pixel range\n`);
    }
  }
});

test("preprocessing (qwen2.5vl, qwen3vl): the picture at its smart size (bicubic, within 8 to 4096 positions), equal to llama.cpp's within 1/255", () => {
  // [width, height] → llama.cpp's one image: sides in whole blocks of 2 patches (28, 32), scaled up
  // to at least 8 positions, letterboxed where the rounding changes the aspect
  const cases = {
    '200x150': [[196, 140], [192, 160]], '50x37': [[112, 84], [128, 96]], '23x71': [[56, 140], [64, 160]], '97x20': [[196, 56], [224, 64]],
    '5x3': [[112, 84], [128, 96]], '3x400': [[28, 392], [32, 416]], '1000x700': [[1008, 700], [992, 704]],
  };
  for (const [size, [q25, q3]] of Object.entries(cases)) {
    const [w, h] = size.split('x').map(Number);
    const img = path.join(tmp, `image-${size}.ppm`);
    fs.writeFileSync(img, ppm(w, h));
    for (const [proj, dims] of [['qwen2.5vl', q25], ['qwen3vl', q3]]) {
      const ref = reference(files[proj].f16, img);
      assert.deepEqual([ref.images, ref.grid_x, ref.grid_y, ref.sizes], [1, 0, 0, [dims]], `${proj} ${size}: llama.cpp's image`);
      for (const build of size === '200x150' ? ['native', 'wasm'] : ['native']) {
        const mine = ours(build, files[proj].f16, 1, img);
        assert.deepEqual(mine.sizes, [dims], `${proj} ${size} ${build}: wick's image`);
        const worst = inputDifference(mine, ref);
        assert.ok(worst <= 1 / 255, `${proj} ${size} ${build}: largest difference ${(worst * 255).toFixed(3)}/255`);
        if (size === '200x150') process.stdout.write(`# preprocessing ${proj} ${size} ${build}: largest difference from llama.cpp's ${(worst * 255).toFixed(4)}/255 of the pixel range\n`);
      }
    }
  }
});

test("preprocessing (gemma4v): the picture at its smart size (bicubic, within 70 to 1120 positions of 48²), equal to llama.cpp's within 1/255", () => {
  // [width, height] → llama.cpp's one image: sides in whole blocks of 3 patches (48), scaled up to at
  // least 70 positions, letterboxed where the rounding changes the aspect
  const cases = {
    '200x150': [480, 384], '50x37': [480, 384], '23x71': [240, 720], '97x20': [912, 192], '5x3': [528, 336], '3x400': [48, 4656],
    '1000x700': [1008, 720],
  };
  for (const [size, dims] of Object.entries(cases)) {
    const [w, h] = size.split('x').map(Number);
    const img = path.join(tmp, `image-${size}.ppm`);
    fs.writeFileSync(img, ppm(w, h));
    const ref = reference(files.gemma4v.f16, img);
    assert.deepEqual([ref.images, ref.grid_x, ref.grid_y, ref.sizes], [1, 0, 0, [dims]], `gemma4v ${size}: llama.cpp's image`);
    for (const build of size === '200x150' ? ['native', 'wasm'] : ['native']) {
      const mine = ours(build, files.gemma4v.f16, 1, img);
      assert.deepEqual(mine.sizes, [dims], `gemma4v ${size} ${build}: wick's image`);
      const worst = inputDifference(mine, ref);
      assert.ok(worst <= 1 / 255, `gemma4v ${size} ${build}: largest difference ${(worst * 255).toFixed(3)}/255`);
      process.stdout.write(`# preprocessing gemma4v ${size} ${build}: largest difference from llama.cpp's ${(worst * 255).toFixed(4)}/255 of the pixel range\n`);
    }
  }
});

// positions llama.cpp gives for the test picture: idefics3 4 tiles and the overview, 16 each; gemma3
// one image of 16; lfm2 one image of 320 × 224 (10 × 7 blocks of 2 × 2 patches); for the qwen picture
// (200 × 150), qwen2.5vl one image of 196 × 140 (7 × 5 positions), qwen3vl 192 × 160 (6 × 5), gemma4v
// 480 × 384 (10 × 8 blocks of 3 × 3 patches), each position of 96 values and, for qwen3vl, two
// deepstack layers' 96 more each
const expectedPositions = { idefics3: 5 * 16, gemma3: 16, lfm2: 70, 'qwen2.5vl': 35, qwen3vl: 30, gemma4v: 80 };
const expectedWidth = { qwen3vl: 3 * TEXT_WIDTH };
for (const proj of projectors) for (const [type, bound] of [['f16', 0.9999], ['q8_0', 0.999]]) {
  test(`embeddings (${proj} ${type}): cosine ≥ ${bound} per position against llama.cpp, native and wasm, 1 and 2 threads`, () => {
    const files_ = files[proj], img = pictureOf(proj);
    const ref = reference(files_[type], img);
    assert.equal(ref.positions, expectedPositions[proj]);
    assert.equal(ref.n_embd, expectedWidth[proj] ?? TEXT_WIDTH);
    const bytes = (r) => Buffer.from(r.embd.buffer, r.embd.byteOffset, r.embd.byteLength);
    let native = null;
    for (const build of ['native', 'wasm']) {
      const one = ours(build, files_[type], 1, img), two = ours(build, files_[type], 2, img);
      const worst = worstCosine(one, ref, TEXT_WIDTH);
      assert.ok(worst >= bound, `${proj} ${build} ${type}: lowest cosine ${worst.toFixed(6)} < ${bound}`);
      assert.ok(bytes(one).equals(bytes(two)), `${proj} ${build} ${type}: 1 and 2 threads differ`);
      if (native) assert.ok(bytes(native).equals(bytes(one)), `${proj} ${type}: native and wasm differ`);
      native ??= one;
      process.stdout.write(`# ${proj} ${type} ${build}: lowest cosine per position ${worst.toFixed(7)} (bound ${bound})\n`);
    }
  });
}

test('embeddings (lfm2, tiled): four 512² tiles and a 512 × 480 thumbnail, cosine per position against llama.cpp, 1 and 2 threads', () => {
  const img = path.join(tmp, 'image-760x730.ppm');
  fs.writeFileSync(img, ppm(760, 730));
  for (const [type, bound] of [['f16', 0.9999], ['q8_0', 0.999]]) {
    const ref = reference(files.lfm2[type], img);
    assert.equal(ref.positions, 4 * 256 + 16 * 15);
    const runs = type === 'f16' ? [['native', 1], ['native', 2], ['wasm', 2]] : [['native', 1]];
    let first = null;
    for (const [build, threads] of runs) {
      const mine = ours(build, files.lfm2[type], threads, img);
      const worst = worstCosine(mine, ref);
      assert.ok(worst >= bound, `lfm2 tiled ${type} ${build} ${threads}t: lowest cosine ${worst.toFixed(6)} < ${bound}`);
      if (first) assert.ok(Buffer.from(mine.embd.buffer, mine.embd.byteOffset, mine.embd.byteLength).equals(first), `lfm2 tiled ${type}: ${build} ${threads} threads differs`);
      first ??= Buffer.from(mine.embd.buffer, mine.embd.byteOffset, mine.embd.byteLength);
      process.stdout.write(`# lfm2 tiled ${type} ${build} ${threads}t: lowest cosine per position ${worst.toFixed(7)} (bound ${bound})\n`);
    }
  }
});

test("knock-out (lfm2): the pixel unshuffle's order moves llama.cpp's own output beyond the tolerance", () => {
  // mm.1's input columns and mm.input_norm's weight and bias come in s² blocks of dim, block
  // dy·s + dx (s = 2, dim = 64); the file with blocks 1 and 2 swapped in all three is the original
  // with the unshuffle's dy and dx exchanged (the LayerNorm's mean and variance do not depend on
  // the order)
  const g = readGguf(files.lfm2.f16);
  const dim = 64;
  const byName = (name) => g.tensors.find((t) => t.name === name);
  assert.deepEqual([byName('mm.1.weight').type, byName('mm.input_norm.weight').type, byName('mm.input_norm.bias').type], [1, 0, 0]); // F16, F32, F32
  swapBlocks(byName('mm.1.weight'), 2, dim);
  swapBlocks(byName('mm.input_norm.weight'), 4, dim);
  swapBlocks(byName('mm.input_norm.bias'), 4, dim);
  const swapped = path.join(tmp, 'mmproj-lfm2-unshuffle-transposed.gguf');
  fs.writeFileSync(swapped, writeGguf(g));
  const worst = worstCosine(reference(swapped), reference(files.lfm2.f16));
  assert.ok(worst < 0.99, `the transposed unshuffle still gives cosine ${worst.toFixed(6)}`);
  process.stdout.write(`# knock-out lfm2: llama.cpp with the unshuffle's order transposed, lowest cosine per position ${worst.toFixed(4)}\n`);
});

test("knock-out (lfm2): the position table read transposed moves llama.cpp's own output beyond the tolerance", () => {
  // the test picture's image is 320 × 224 (a grid of 20 × 14 patches): llama.cpp resizes the 16 × 16
  // table to it; with the table transposed in the file, each position's embedding comes from the
  // other axis, as a resize that mixed up width and height would give
  const g = readGguf(files.lfm2.f16);
  const pos = g.tensors.find((t) => t.name === 'v.position_embd.weight');
  assert.equal(pos.type, 0); // F32
  const n = 16, dim = 64;
  const e = new Float32Array(new Uint8Array(pos.data).buffer), et = new Float32Array(e.length);
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) et.set(e.subarray((y * n + x) * dim, (y * n + x + 1) * dim), (x * n + y) * dim);
  pos.data = Buffer.from(et.buffer);
  const file = path.join(tmp, 'mmproj-lfm2-positions-transposed.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const worst = worstCosine(reference(file), reference(files.lfm2.f16));
  assert.ok(worst < 0.99, `the transposed position table still gives cosine ${worst.toFixed(6)}`);
  process.stdout.write(`# knock-out lfm2: llama.cpp with its position table transposed, lowest cosine per position ${worst.toFixed(4)}\n`);
});

test("knock-out: the pixel shuffle's order moves llama.cpp's own output beyond the tolerance", () => {
  // mm.model.fc's input columns come in s² blocks of dim, block dy·s + dx (s = 2, dim = 64); the
  // file with blocks 1 and 2 swapped is the original with the shuffle's dy and dx exchanged
  const g = readGguf(files.idefics3.f16);
  const fc = g.tensors.find((t) => t.name === 'mm.model.fc.weight');
  assert.equal(fc.type, 1); // F16
  swapBlocks(fc, 2, 64);
  const swapped = path.join(tmp, 'mmproj-shuffle-transposed.gguf');
  fs.writeFileSync(swapped, writeGguf(g));
  const worst = worstCosine(reference(swapped), reference(files.idefics3.f16));
  assert.ok(worst < 0.99, `the transposed shuffle still gives cosine ${worst.toFixed(6)}`);
  process.stdout.write(`# knock-out: llama.cpp with the shuffle's order transposed, lowest cosine per position ${worst.toFixed(4)}\n`);
});

test("knock-out (gemma3): pooling the patch grid's columns instead of its rows moves llama.cpp's own output beyond the tolerance", () => {
  // llama.cpp given the picture transposed, through a file whose patch kernel and position table are
  // transposed too, runs its tower on the original's patch grid transposed (attention does not care
  // where a patch sits), so its pooling reads the grid's blocks transposed: each output position
  // (Y, X) is the original's (X, Y). So a pooling that walked the grid the wrong way round would be
  // this far off; and the construction is checked by that transposed order matching the original.
  const n = 16, P = 4, dim = 64;
  const [square, transposedImg] = squarePictures(64, 'square');
  const g = readGguf(files.gemma3.f16);
  const kernel = g.tensors.find((e) => e.name === 'v.patch_embd.weight'), pos = g.tensors.find((e) => e.name === 'v.position_embd.weight');
  assert.deepEqual([kernel.type, pos.type], [0, 0]); // F32, as gemma3's converter writes them
  transposeKernel(kernel, P, 4);
  const e = new Float32Array(new Uint8Array(pos.data).buffer), et = new Float32Array(e.length);
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) et.set(e.subarray((y * n + x) * dim, (y * n + x + 1) * dim), (x * n + y) * dim);
  pos.data = Buffer.from(et.buffer);
  const file = path.join(tmp, 'mmproj-gemma3-transposed.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const original = reference(files.gemma3.f16, square), flipped = reference(file, transposedImg);
  const worst = worstCosine(flipped, original);
  assert.ok(worst < 0.99, `the transposed pooling still gives cosine ${worst.toFixed(6)}`);
  const same = worstCosine(untranspose(flipped, 4), original);
  assert.ok(same >= 0.9999, `llama.cpp's transposed run, its positions put back, gives cosine ${same.toFixed(6)}: the construction is wrong`);
  process.stdout.write(`# knock-out gemma3: llama.cpp pooling the transposed grid, lowest cosine per position ${worst.toFixed(4)} (${same.toFixed(7)} with its positions put back)\n`);
});

test('embeddings (qwen2vl_merger): the qwen2.5vl file relabelled (LayerNorms, no windows), gated and with GELU-quick, cosine ≥ 0.9999 against llama.cpp', () => {
  // Qwen2-VL's tower is qwen2.5vl's with LayerNorms (the RMS norms' weights serve, without biases)
  // and no window attention; its MLP is GELU-quick without a gate (neither use_gelu nor use_silu)
  const relabelled = setKv(setKv(readGguf(files['qwen2.5vl'].f16), 'clip.projector_type', T.STRING, 'qwen2vl_merger'), 'clip.vision.n_wa_pattern', T.U32, 0);
  const gated = path.join(tmp, 'mmproj-qwen2vl-gated.gguf'), quick = path.join(tmp, 'mmproj-qwen2vl-quick.gguf');
  fs.writeFileSync(gated, writeGguf(relabelled));
  relabelled.tensors = relabelled.tensors.filter((t) => !/ffn_gate/.test(t.name));
  fs.writeFileSync(quick, writeGguf(setKv(relabelled, 'clip.use_silu', T.BOOL, false)));
  for (const file of [gated, quick]) {
    const ref = reference(file, qwenImage);
    assert.equal(ref.positions, 35);
    for (const build of ['native', 'wasm']) {
      const worst = worstCosine(ours(build, file, 2, qwenImage), ref);
      assert.ok(worst >= 0.9999, `${path.basename(file)} ${build}: lowest cosine ${worst.toFixed(6)}`);
      process.stdout.write(`# ${path.basename(file)} ${build}: lowest cosine per position ${worst.toFixed(7)} (bound 0.9999)\n`);
    }
  }
});

test("knock-out (qwen2.5vl): window attention moves llama.cpp's own output beyond the tolerance, and wick follows it", () => {
  // the file's pattern 2 makes layer 0 attend within windows of 4 × 4 positions and layer 1 fully;
  // pattern 0 (no windows) and 3 (both layers windowed) move llama.cpp far from it on the qwen
  // picture (7 × 5 positions: four windows), and wick matches llama.cpp on each, so the comparison
  // tells windows from none and which layers have them
  const original = reference(files['qwen2.5vl'].f16, qwenImage);
  for (const pattern of [0, 3]) {
    const file = path.join(tmp, `mmproj-qwen2.5vl-wa${pattern}.gguf`);
    fs.writeFileSync(file, writeGguf(setKv(readGguf(files['qwen2.5vl'].f16), 'clip.vision.n_wa_pattern', T.U32, pattern)));
    const ref = reference(file, qwenImage);
    const far = worstCosine(ref, original);
    assert.ok(far < 0.99, `n_wa_pattern ${pattern} still gives cosine ${far.toFixed(6)}`);
    const mine = worstCosine(ours('native', file, 2, qwenImage), ref);
    assert.ok(mine >= 0.9999, `wick with n_wa_pattern ${pattern}: lowest cosine ${mine.toFixed(6)} against llama.cpp`);
    process.stdout.write(`# knock-out qwen2.5vl: llama.cpp with n_wa_pattern ${pattern}, lowest cosine per position ${far.toFixed(4)} against pattern 2; wick ${mine.toFixed(7)} against it\n`);
  }
});

test("knock-out (qwen2.5vl): the 2-D rope's orientation moves llama.cpp's own output beyond the tolerance", () => {
  // llama.cpp given a square picture transposed (196², 7 × 7 positions, windows that transpose into
  // themselves), through a file whose two patch kernels are transposed and whose merger reads each
  // position's 2 × 2 patches with dy and dx exchanged (mm.0's column blocks 1 and 2), runs on the
  // original's patches transposed: everything but the rotary positions is the same up to that
  // transposition, while the rope now turns each patch's first section by its column instead of
  // its row. So a rope with rows and columns mixed up would be this far off. The construction is
  // checked by the same pair of files with the attention's queries and keys zeroed (positions then
  // cannot matter): there the transposed run, its positions put back, equals the original.
  const [square, transposedImg] = squarePictures(196, 'qwen-square');
  const build = (transposed, zeroQK) => {
    const g = readGguf(files['qwen2.5vl'].f16);
    const byName = (name) => g.tensors.find((t) => t.name === name);
    if (transposed) {
      for (const name of ['v.patch_embd.weight', 'v.patch_embd.weight.1']) transposeKernel(byName(name), 14, 2);
      swapBlocks(byName('mm.0.weight'), 2, 64);
    }
    if (zeroQK)
      for (const t of g.tensors) if (/^v\.blk\.\d+\.attn_[qk]\./.test(t.name)) t.data = Buffer.alloc(t.data.length);
    const file = path.join(tmp, `mmproj-qwen2.5vl${transposed ? '-transposed' : ''}${zeroQK ? '-zero-qk' : ''}.gguf`);
    fs.writeFileSync(file, writeGguf(g));
    return file;
  };
  assert.deepEqual(readGguf(files['qwen2.5vl'].f16).tensors.filter((t) => /patch_embd|mm\.0\.weight/.test(t.name)).map((t) => t.type), [1, 1, 1]); // F16
  const original = reference(files['qwen2.5vl'].f16, square), flipped = reference(build(true, false), transposedImg);
  assert.equal(original.positions, 49);
  const worst = worstCosine(untranspose(flipped, 7), original);
  assert.ok(worst < 0.99, `the transposed rope still gives cosine ${worst.toFixed(6)}`);
  const same = worstCosine(untranspose(reference(build(true, true), transposedImg), 7), reference(build(false, true), square));
  assert.ok(same >= 0.9999, `without positions, llama.cpp's transposed run put back gives cosine ${same.toFixed(6)}: the construction is wrong`);
  const mine = worstCosine(ours('native', build(true, false), 1, transposedImg), flipped);
  assert.ok(mine >= 0.9999, `wick on the transposed file and picture: lowest cosine ${mine.toFixed(6)} against llama.cpp`);
  process.stdout.write(`# knock-out qwen2.5vl: llama.cpp with the rope's rows and columns exchanged, lowest cosine per position ${worst.toFixed(4)} (${same.toFixed(7)} without positions; wick on it ${mine.toFixed(7)})\n`);
});

test("knock-out (gemma4v): the 2-D rope's orientation and the pooling's move llama.cpp's own output beyond the tolerance", () => {
  // llama.cpp given a square picture transposed (432², 9 × 9 positions of 3 × 3 patches, the picture's
  // own smart size), through a file whose patch kernel is transposed and whose x and y position
  // tables are exchanged, runs on the original's patches transposed: everything but the rope is the
  // same up to that transposition, while the rope now turns each head's first half by the patch's
  // row instead of its column. So a rope with its halves' positions mixed up would be this far off.
  // With the attention's queries and keys zeroed (positions then cannot matter), the transposed run
  // differs from the original only in where its pooled positions lie: far as it comes (a pooling
  // that walked the patch grid the wrong way round would be so), equal with its positions put back.
  const [square, transposedImg] = squarePictures(432, 'gemma4v-square');
  const dim = 64;
  const build = (transposed, zeroQK) => {
    const g = readGguf(files.gemma4v.f16);
    const byName = (name) => g.tensors.find((t) => t.name === name);
    if (transposed) {
      transposeKernel(byName('v.patch_embd.weight'), 16, 2);
      const pos = byName('v.position_embd.weight'), half = pos.data.length / 2;
      pos.data = Buffer.concat([pos.data.subarray(half), pos.data.subarray(0, half)]);
    }
    if (zeroQK)
      for (const t of g.tensors) if (/^v\.blk\.\d+\.attn_[qk]\.weight$/.test(t.name)) t.data = Buffer.alloc(t.data.length);
    const file = path.join(tmp, `mmproj-gemma4v${transposed ? '-transposed' : ''}${zeroQK ? '-zero-qk' : ''}.gguf`);
    fs.writeFileSync(file, writeGguf(g));
    return file;
  };
  const g = readGguf(files.gemma4v.f16);
  assert.deepEqual(g.tensors.filter((t) => /patch_embd|position_embd/.test(t.name)).map((t) => [t.type, t.ne.map(Number)]),
    [[1, [16, 16, 3, dim]], [0, [dim, 512, 2]]]); // F16 kernel, F32 tables
  const original = reference(files.gemma4v.f16, square), flipped = reference(build(true, false), transposedImg);
  assert.equal(original.positions, 81);
  const rope = worstCosine(untranspose(flipped, 9), original);
  assert.ok(rope < 0.99, `the transposed rope still gives cosine ${rope.toFixed(6)}`);
  const original0 = reference(build(false, true), square), flipped0 = reference(build(true, true), transposedImg);
  const pooling = worstCosine(flipped0, original0), same = worstCosine(untranspose(flipped0, 9), original0);
  assert.ok(pooling < 0.99, `the transposed pooling still gives cosine ${pooling.toFixed(6)}`);
  assert.ok(same >= 0.9999, `without positions, llama.cpp's transposed run put back gives cosine ${same.toFixed(6)}: the construction is wrong`);
  const mine = worstCosine(ours('native', build(true, false), 1, transposedImg), flipped);
  assert.ok(mine >= 0.9999, `wick on the transposed file and picture: lowest cosine ${mine.toFixed(6)} against llama.cpp`);
  process.stdout.write(`# knock-out gemma4v: llama.cpp with the rope's halves exchanged, lowest cosine per position ${rope.toFixed(4)}; pooling the transposed grid ${pooling.toFixed(4)} (${same.toFixed(7)} with its positions put back); wick on it ${mine.toFixed(7)}\n`);
});

test("knock-out (gemma4v): the file's clamps move llama.cpp's own output beyond the tolerance, and wick follows them", () => {
  // the synth file clamps layer 0's query input, its ffn_down output and the projection's input;
  // without those scalars llama.cpp's output moves, so the comparison above tells clamps applied
  // from clamps ignored
  const g = readGguf(files.gemma4v.f16);
  const names = g.tensors.filter((t) => /\.(input|output)_(min|max)$/.test(t.name)).map((t) => t.name);
  assert.deepEqual(names, ['v.blk.0.attn_q.input_min', 'v.blk.0.attn_q.input_max', 'v.blk.0.ffn_down.output_min', 'v.blk.0.ffn_down.output_max',
    'mm.input_projection.input_min', 'mm.input_projection.input_max']);
  const file = path.join(tmp, 'mmproj-gemma4v-no-clamps.gguf');
  fs.writeFileSync(file, writeGguf({ ...g, tensors: g.tensors.filter((t) => !names.includes(t.name)) }));
  const ref = reference(file, qwenImage);
  const far = worstCosine(ref, reference(files.gemma4v.f16, qwenImage));
  assert.ok(far < 0.9999, `without its clamps llama.cpp still gives cosine ${far.toFixed(6)}`);
  const mine = worstCosine(ours('native', file, 2, qwenImage), ref);
  assert.ok(mine >= 0.9999, `wick without clamps: lowest cosine ${mine.toFixed(6)} against llama.cpp`);
  process.stdout.write(`# knock-out gemma4v: llama.cpp without the file's clamps, lowest cosine per position ${far.toFixed(5)} against it with them; wick ${mine.toFixed(7)}\n`);
});

test('hostile input: refused with a message, no crash', () => {
  const check = (args, pattern, what) => {
    for (const build of ['native', 'wasm']) {
      const r = runWick(build, args);
      assert.equal(r.signal, null, `${build} ${what}: killed by ${r.signal}`);
      assert.equal(r.code, 1, `${build} ${what}: exit ${r.code}\n${r.stderr}`);
      assert.match(r.stderr, pattern, `${build} ${what}`);
    }
  };
  const bytes = fs.readFileSync(files.idefics3.f16);
  const truncated = path.join(tmp, 'truncated.gguf');
  fs.writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)));
  check(['vision', '-m', truncated, '--image', image], /truncated\.gguf: .*(past|end|truncated|outside)/i, 'truncated mmproj');

  const unknown = path.join(tmp, 'unknown.gguf');
  fs.writeFileSync(unknown, writeGguf(setKv(readGguf(files.idefics3.f16), 'clip.projector_type', T.STRING, 'xyz')));
  check(['vision', '-m', unknown, '--image', image], /projector 'xyz' is not supported \(supported: idefics3, gemma3, lfm2, qwen2vl_merger, qwen2\.5vl_merger, qwen3vl_merger, gemma4v\)/, 'unknown projector');

  // gemma3: a pooling window that does not divide the 16 patches per side
  const window3 = path.join(tmp, 'gemma3-window3.gguf');
  fs.writeFileSync(window3, writeGguf(setKv(readGguf(files.gemma3.f16), 'clip.vision.projector.scale_factor', T.U32, 3)));
  check(['vision', '-m', window3, '--image', image], /16 patches per side do not divide by the pooling window 3/, 'gemma3 window 3');

  // idefics3 with a longest side of 8192 makes 128 × 95 tiles of 64² of the 50 × 37 picture: more
  // floats than a batch holds (VISION_MAX_BATCH_FLOATS), refused before anything is allocated
  const longest = path.join(tmp, 'idefics3-longest-8192.gguf');
  fs.writeFileSync(longest, writeGguf(setKv(readGguf(files.idefics3.f16), 'clip.vision.preproc_image_size', T.U32, 8192)));
  check(['vision', '-m', longest, '--image', image], /make 128 × 95 tiles of 64², more than a batch holds/, 'too many tiles');

  // gemma4v: position tables of 8 entries, fewer than the test picture's 30 × 24 patches need
  // (llama.cpp's get_rows would read past them): refused before the tower runs
  const g4 = readGguf(files.gemma4v.f16), table = g4.tensors.find((t) => t.name === 'v.position_embd.weight');
  table.ne = [64n, 8n, 2n];
  table.data = table.data.subarray(0, 64 * 8 * 2 * 4);
  const shortTables = path.join(tmp, 'gemma4v-tables-8.gguf');
  fs.writeFileSync(shortTables, writeGguf(g4));
  check(['vision', '-m', shortTables, '--image', image], /make an image of 30 × 24 patches, more than the 8 positions of the file's tables/, 'gemma4v short tables');

  const empty = path.join(tmp, 'empty.ppm');
  fs.writeFileSync(empty, Buffer.from('P6\n0 0\n255\n', 'latin1'));
  check(['vision', '-m', files.idefics3.f16, '--image', empty], /empty\.ppm: .*width, height/, 'zero-size image');

  const huge = path.join(tmp, 'huge.ppm');
  fs.writeFileSync(huge, ppm(16, 16, [30000, 30000]));
  check(['vision', '-m', files.idefics3.f16, '--image', huge], /huge\.ppm: .*(sides up to|bytes)/, '30000 × 30000 declared');
});
