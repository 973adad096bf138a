// tests/vision.test.mjs — image encoders from mmproj files (src/vision.c) against llama.cpp's mtmd
// (tests/mtmd_ref.cpp: its clip loader, the projector's preprocessor and its encoder, 1 thread, no
// flash attention, built from the llama-server build's libraries by mk/mtmd-ref.mk):
//  - `wick synth --mmproj idefics3|gemma3|lfm2` files at f16 and q8_0 (a SmolVLM-, a Gemma-3- and an
//    LFM2-VL-shaped tower, synth.c), which llama.cpp loads; the same bytes every time;
//  - a fixed 50 × 37 test image with gradients (a PPM written here), which llama.cpp resizes to the
//    longest side and to whole tiles (2 × 2 of them), then once more to the overview: the batch wick
//    feeds its encoder (the tiles row by row, then the overview, as mtmd's prompt holds them) equals
//    llama.cpp's preprocessed images within 1/255 of the pixel range per value; so do a tall, a wide,
//    a tiny and a letterboxed image's, also through the file without its longest side (where
//    llama.cpp resizes the original to the nearest whole tiles and to the overview, bicubic);
//    gemma3's one image (the picture letterboxed bilinearly into 64²) likewise for each of them;
//    lfm2's images (the picture at its smart size within the token budget, each image its own
//    size; a picture above twice the budget tiled 512² per tile, then the thumbnail) likewise, for
//    pictures square, tall, wide, tiny, far from square, and tiled 2 × 2 and 3 × 2;
//  - the embeddings of every image of the batch: the same number of positions and width, cosine
//    per position ≥ 0.9999 (f16) and ≥ 0.999 (q8_0), native and wasm, 1 and 2 threads; 1 and 2
//    threads, native and wasm bit-identical; lfm2 (its position table resized to each image's
//    grid) also for a tiled picture (four tiles of 512² and a thumbnail of 512 × 480);
//  - knock-outs: the pixel shuffle's order matters to llama.cpp's own output (the file with the
//    projection's input columns permuted as a transposed shuffle would read them moves it far
//    beyond the tolerance), so the comparison tells the right order from the other; so does the
//    direction gemma3's pooling walks the patch grid (llama.cpp on the transposed picture through a
//    file with its patch kernel and position table transposed); and lfm2's pixel unshuffle (mm.1's
//    input columns and mm.input_norm permuted as a transposed unshuffle would read them) and the
//    orientation of its position table's resize (the table transposed in the file);
//  - hostile input refused with a message and no crash: a truncated mmproj, an unknown projector,
//    a gemma3 pooling window that does not divide the grid, a picture that would make more tiles
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

const projectors = ['idefics3', 'gemma3', 'lfm2'];
before(() => {
  fs.writeFileSync(image, ppm(50, 37));
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

/** the lowest cosine over the positions, after checking the shapes agree */
function worstCosine(a, ref) {
  assert.equal(a.positions, ref.positions, 'positions');
  assert.equal(a.n_embd, ref.n_embd, 'width');
  assert.equal(a.embd.length, ref.embd.length);
  let worst = 1;
  for (let p = 0; p < ref.positions; p++) {
    const row = (e) => e.subarray(p * ref.n_embd, (p + 1) * ref.n_embd);
    worst = Math.min(worst, cosine(row(a.embd), row(ref.embd)));
  }
  return worst;
}

test('wick synth --mmproj idefics3|gemma3|lfm2 writes the same bytes every time', () => {
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

// positions llama.cpp gives for the test picture: idefics3 4 tiles and the overview, 16 each; gemma3
// one image of 16; lfm2 one image of 320 × 224 (10 × 7 blocks of 2 × 2 patches)
const expectedPositions = { idefics3: 5 * 16, gemma3: 16, lfm2: 70 };
for (const proj of projectors) for (const [type, bound] of [['f16', 0.9999], ['q8_0', 0.999]]) {
  test(`embeddings (${proj} ${type}): cosine ≥ ${bound} per position against llama.cpp, native and wasm, 1 and 2 threads`, () => {
    const files_ = files[proj];
    const ref = reference(files_[type]);
    assert.equal(ref.positions, expectedPositions[proj]);
    const bytes = (r) => Buffer.from(r.embd.buffer, r.embd.byteOffset, r.embd.byteLength);
    let native = null;
    for (const build of ['native', 'wasm']) {
      const one = ours(build, files_[type], 1), two = ours(build, files_[type], 2);
      const worst = worstCosine(one, ref);
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
  const swapBlocks = (t, bytes) => {
    const [cols, rows] = [Number(t.ne[0]), t.ne.length > 1 ? Number(t.ne[1]) : 1];
    const data = Buffer.from(t.data);
    for (let r = 0; r < rows; r++) {
      const row = r * cols * bytes, b1 = row + dim * bytes, b2 = row + 2 * dim * bytes;
      const one = Buffer.from(data.subarray(b1, b1 + dim * bytes));
      data.copy(data, b1, b2, b2 + dim * bytes);
      one.copy(data, b2);
    }
    t.data = data;
  };
  const byName = (name) => g.tensors.find((t) => t.name === name);
  assert.deepEqual([byName('mm.1.weight').type, byName('mm.input_norm.weight').type, byName('mm.input_norm.bias').type], [1, 0, 0]); // F16, F32, F32
  swapBlocks(byName('mm.1.weight'), 2);
  swapBlocks(byName('mm.input_norm.weight'), 4);
  swapBlocks(byName('mm.input_norm.bias'), 4);
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
  const [cols, rows] = fc.ne.map(Number), dim = 64, bytes = 2;
  const data = Buffer.from(fc.data);
  for (let r = 0; r < rows; r++) {
    const row = r * cols * bytes, b1 = row + dim * bytes, b2 = row + 2 * dim * bytes;
    const one = Buffer.from(data.subarray(b1, b1 + dim * bytes));
    data.copy(data, b1, b2, b2 + dim * bytes);
    one.copy(data, b2);
  }
  fc.data = data;
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
  const side = 64, n = 16, P = 4, dim = 64;
  const square = path.join(tmp, 'square.ppm'), transposedImg = path.join(tmp, 'square-transposed.ppm');
  const px = ppm(side, side), header = px.length - side * side * 3;
  const t = Buffer.from(px);
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) px.copy(t, header + (x * side + y) * 3, header + (y * side + x) * 3, header + (y * side + x) * 3 + 3);
  fs.writeFileSync(square, px);
  fs.writeFileSync(transposedImg, t);
  const g = readGguf(files.gemma3.f16);
  const kernel = g.tensors.find((e) => e.name === 'v.patch_embd.weight'), pos = g.tensors.find((e) => e.name === 'v.position_embd.weight');
  assert.deepEqual([kernel.type, pos.type], [0, 0]); // F32, as gemma3's converter writes them
  const k = new Float32Array(new Uint8Array(kernel.data).buffer), kt = new Float32Array(k.length);
  for (let plane = 0; plane < 3 * dim; plane++)
    for (let ky = 0; ky < P; ky++) for (let kx = 0; kx < P; kx++) kt[plane * P * P + kx * P + ky] = k[plane * P * P + ky * P + kx];
  const e = new Float32Array(new Uint8Array(pos.data).buffer), et = new Float32Array(e.length);
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) et.set(e.subarray((y * n + x) * dim, (y * n + x + 1) * dim), (x * n + y) * dim);
  kernel.data = Buffer.from(kt.buffer);
  pos.data = Buffer.from(et.buffer);
  const file = path.join(tmp, 'mmproj-gemma3-transposed.gguf');
  fs.writeFileSync(file, writeGguf(g));
  const original = reference(files.gemma3.f16, square), flipped = reference(file, transposedImg);
  const worst = worstCosine(flipped, original);
  assert.ok(worst < 0.99, `the transposed pooling still gives cosine ${worst.toFixed(6)}`);
  const m = 4, back = new Float32Array(flipped.embd.length), N = original.n_embd;
  for (let Y = 0; Y < m; Y++) for (let X = 0; X < m; X++) back.set(flipped.embd.subarray((X * m + Y) * N, (X * m + Y + 1) * N), (Y * m + X) * N);
  const same = worstCosine({ ...flipped, embd: back }, original);
  assert.ok(same >= 0.9999, `llama.cpp's transposed run, its positions put back, gives cosine ${same.toFixed(6)}: the construction is wrong`);
  process.stdout.write(`# knock-out gemma3: llama.cpp pooling the transposed grid, lowest cosine per position ${worst.toFixed(4)} (${same.toFixed(7)} with its positions put back)\n`);
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
  check(['vision', '-m', unknown, '--image', image], /projector 'xyz' is not supported \(supported: idefics3, gemma3, lfm2\)/, 'unknown projector');

  // gemma3: a pooling window that does not divide the 16 patches per side
  const window3 = path.join(tmp, 'gemma3-window3.gguf');
  fs.writeFileSync(window3, writeGguf(setKv(readGguf(files.gemma3.f16), 'clip.vision.projector.scale_factor', T.U32, 3)));
  check(['vision', '-m', window3, '--image', image], /16 patches per side do not divide by the pooling window 3/, 'gemma3 window 3');

  // idefics3 with a longest side of 8192 makes 128 × 95 tiles of 64² of the 50 × 37 picture: more
  // floats than a batch holds (VISION_MAX_BATCH_FLOATS), refused before anything is allocated
  const longest = path.join(tmp, 'idefics3-longest-8192.gguf');
  fs.writeFileSync(longest, writeGguf(setKv(readGguf(files.idefics3.f16), 'clip.vision.preproc_image_size', T.U32, 8192)));
  check(['vision', '-m', longest, '--image', image], /make 128 × 95 tiles of 64², more than a batch holds/, 'too many tiles');

  const empty = path.join(tmp, 'empty.ppm');
  fs.writeFileSync(empty, Buffer.from('P6\n0 0\n255\n', 'latin1'));
  check(['vision', '-m', files.idefics3.f16, '--image', empty], /empty\.ppm: .*width, height/, 'zero-size image');

  const huge = path.join(tmp, 'huge.ppm');
  fs.writeFileSync(huge, ppm(16, 16, [30000, 30000]));
  check(['vision', '-m', files.idefics3.f16, '--image', huge], /huge\.ppm: .*(sides up to|bytes)/, '30000 × 30000 declared');
});
