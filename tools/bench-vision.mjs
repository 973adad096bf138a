// tools/bench-vision.mjs — the vision section of `npm run bench` (issue 32, acceptance 5): the time to
// encode one image at the projector's native size, wick against llama.cpp's mtmd on the same mmproj
// file, 1 and 2 threads, for real models' shapes:
//  - SmolVLM-256M (idefics3): SigLIP base patch 16 at 512 — width 768, 12 layers, 12 heads, MLP 3072,
//    pixel shuffle 4 to 64 positions of 576;
//  - Gemma 3 (gemma3): SigLIP so400m at 896, patch 14 — width 1152, 27 layers, 16 heads, MLP 4304,
//    4 × 4 average pool to 256 positions of 2560.
// The files are written here (tests/gguf.mjs's writeGguf: the keys and tensor names of
// `wick synth --mmproj`, random weights of the same scales, F16 or Q8_0 matrices; `wick synth` makes
// only its tiny test shape) into models/synth-mmproj-<shape>-<type>.gguf, kept for later runs. A
// shape whose projector the engine does not take yet (`wick synth --mmproj <projector>` and
// `wick vision` on its file) is reported as missing, not measured.
// wick: `wick vision` on a <size> × <size> PPM (so preprocessing is a copy), its reported encode
// time (vision_encode: context, tower, projector), each run a fresh process: native, and the wasm
// build under Node as a user runs it (wasm_glue/cli.mjs: the single-threaded build for 1 thread,
// the pthreads build for 2). llama.cpp: bench/bench_mtmd.cpp (libmtmd's clip_image_encode with
// mtmd's defaults, one untimed encode, then the timed ones in one process). Median of --vision-runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { writeGguf, T } from '../tests/gguf.mjs';
import { ROOT, NATIVE_WICK, list, waitForIdle, summarize, fmt, markdownTable, simdFlags } from './bench-common.mjs';

const WASM_CLI = path.join(ROOT, 'wasm_glue', 'cli.mjs');
const BENCH_MTMD = path.join(ROOT, 'build', 'native', 'bench_mtmd');

export const VISION_SHAPES = [
  { name: 'SmolVLM-256M', file: 'smolvlm-256m', projector: 'idefics3', image: 512, patch: 16, dim: 768, layers: 12, heads: 12, ff: 3072, text: 576, merge: 4,
    about: 'idefics3: SigLIP base patch 16 at 512 (768 wide, 12 layers, 12 heads, MLP 3072), pixel shuffle 4, 64 positions of 576' },
  { name: 'Gemma-3', file: 'gemma3', projector: 'gemma3', image: 896, patch: 14, dim: 1152, layers: 27, heads: 16, ff: 4304, text: 2560, merge: 4,
    about: 'gemma3: SigLIP so400m at 896, patch 14 (1152 wide, 27 layers, 16 heads, MLP 4304), 4 × 4 average pool, 256 positions of 2560' },
];

// ---- the files ----

const GGML = { F32: 0, F16: 1, Q8_0: 8 };
const FTYPE = { f16: 1, q8_0: 7 };

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
/** IEEE half of x, rounded to nearest (ties away: enough for random weights) */
function half(x) {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000, e = ((b >>> 23) & 0xff) - 112, m = b & 0x7fffff;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) return sign | Math.round(Math.abs(x) * 2 ** 24);
  const h = (e << 10) | (m >>> 13);
  return sign | (h + ((m >>> 12) & 1));
}

/** n uniform values of standard deviation std around centre (xorshift32, seeded) */
function values(n, std, centre, seed) {
  const out = new Float32Array(n), a = std * Math.sqrt(3);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = centre + a * (s / 2147483648 - 1);
  }
  return out;
}

function encode(type, v) {
  if (type === GGML.F32) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (type === GGML.F16) {
    const h = new Uint16Array(v.length);
    for (let i = 0; i < v.length; i++) h[i] = half(v[i]);
    return Buffer.from(h.buffer);
  }
  // Q8_0: blocks of 32, an F16 scale (largest magnitude / 127) then 32 signed bytes
  const out = Buffer.alloc((v.length / 32) * 34);
  for (let b = 0; b < v.length / 32; b++) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(v[b * 32 + i]));
    const d = amax / 127, inv = d ? 1 / d : 0;
    out.writeUInt16LE(half(d), b * 34);
    for (let i = 0; i < 32; i++) out.writeInt8(Math.round(v[b * 32 + i] * inv), b * 34 + 2 + i);
  }
  return out;
}

/** The mmproj of a shape, matrices of type (f16 or q8_0): keys and tensors as `wick synth --mmproj` writes them */
export function writeShapedMmproj(sh, type, file) {
  const mtype = type === 'q8_0' ? GGML.Q8_0 : GGML.F16, P = sh.patch, dim = sh.dim, nPatches = (sh.image / P) ** 2;
  const tensors = [];
  let seed = 1;
  const add = (name, ttype, ne, std, centre = 0) => {
    const n = ne.reduce((a, b) => a * b, 1);
    tensors.push({ name, type: ttype, ne: ne.map(BigInt), data: encode(ttype, values(n, std, centre, seed++ * 2654435761)) });
  };
  const qkStd = Math.sqrt(0.5) / Math.sqrt(dim); // scores of a moderate spread, as synth.c's SCORE_STD
  add('v.patch_embd.weight', GGML.F16, [P, P, 3, dim], 1 / Math.sqrt(3 * P * P));
  add('v.patch_embd.bias', GGML.F32, [dim], 0.2);
  add('v.position_embd.weight', GGML.F32, [dim, nPatches], 0.5);
  for (let l = 0; l < sh.layers; l++) {
    for (const [i, part] of ['attn_q', 'attn_k', 'attn_v', 'attn_out'].entries()) {
      add(`v.blk.${l}.${part}.weight`, mtype, [dim, dim], i < 2 ? qkStd : 1 / Math.sqrt(dim));
      add(`v.blk.${l}.${part}.bias`, GGML.F32, [dim], 0.2);
    }
    add(`v.blk.${l}.ln1.weight`, GGML.F32, [dim], 0.1, 1);
    add(`v.blk.${l}.ln1.bias`, GGML.F32, [dim], 0.2);
    add(`v.blk.${l}.ffn_up.weight`, mtype, [dim, sh.ff], 1 / Math.sqrt(dim));
    add(`v.blk.${l}.ffn_up.bias`, GGML.F32, [sh.ff], 0.2);
    add(`v.blk.${l}.ffn_down.weight`, mtype, [sh.ff, dim], 1 / Math.sqrt(sh.ff));
    add(`v.blk.${l}.ffn_down.bias`, GGML.F32, [dim], 0.2);
    add(`v.blk.${l}.ln2.weight`, GGML.F32, [dim], 0.1, 1);
    add(`v.blk.${l}.ln2.bias`, GGML.F32, [dim], 0.2);
  }
  add('v.post_ln.weight', GGML.F32, [dim], 0.1, 1);
  add('v.post_ln.bias', GGML.F32, [dim], 0.2);
  if (sh.projector === 'idefics3') {
    add('mm.model.fc.weight', mtype, [dim * sh.merge * sh.merge, sh.text], 1 / Math.sqrt(dim * sh.merge * sh.merge));
  } else {
    // gemma3 (clip.cpp): RMS norm of the pooled rows, then mm.input_projection [text][dim] read transposed
    add('mm.soft_emb_norm.weight', GGML.F32, [dim], 0.1, 1);
    add('mm.input_projection.weight', mtype, [sh.text, dim], 1 / Math.sqrt(dim));
  }
  const u32kv = (key, value) => ({ key, type: T.U32, value });
  const kv = [
    { key: 'general.architecture', type: T.STRING, value: 'clip' },
    { key: 'general.name', type: T.STRING, value: `wick bench mmproj ${sh.file} ${type}` },
    u32kv('general.file_type', FTYPE[type]),
    { key: 'clip.has_vision_encoder', type: T.BOOL, value: true },
    { key: 'clip.projector_type', type: T.STRING, value: sh.projector },
    { key: 'clip.use_gelu', type: T.BOOL, value: true },
    u32kv('clip.vision.image_size', sh.image),
    u32kv('clip.vision.patch_size', P),
    u32kv('clip.vision.embedding_length', dim),
    u32kv('clip.vision.feed_forward_length', sh.ff),
    u32kv('clip.vision.block_count', sh.layers),
    u32kv('clip.vision.projection_dim', sh.text),
    u32kv('clip.vision.attention.head_count', sh.heads),
    { key: 'clip.vision.attention.layer_norm_epsilon', type: T.F32, value: 1e-6 },
    { key: 'clip.vision.image_mean', type: T.ARRAY, value: { arrayOf: T.F32, items: [0.5, 0.5, 0.5] } },
    { key: 'clip.vision.image_std', type: T.ARRAY, value: { arrayOf: T.F32, items: [0.5, 0.5, 0.5] } },
    u32kv('clip.vision.projector.scale_factor', sh.merge),
  ];
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(`${file}.part`, writeGguf({ version: 3, kv, tensors, alignment: 32 }));
  fs.renameSync(`${file}.part`, file);
}

/** models/synth-mmproj-<shape>-<type>.gguf, written when missing */
function shapedMmproj(sh, type) {
  const file = path.join(ROOT, 'models', `synth-mmproj-${sh.file}-${type}.gguf`);
  if (!fs.existsSync(file)) {
    process.stderr.write(`bench: writing ${path.relative(ROOT, file)}\n`);
    writeShapedMmproj(sh, type, file);
  }
  return file;
}

/** null when wick takes the projector (synth writes it and `wick vision` encodes that file), else why not */
function projectorMissing(projector, dir, image) {
  const file = path.join(dir, `probe-${projector}.gguf`);
  const s = spawnSync(NATIVE_WICK, ['synth', '--mmproj', projector, '--type', 'f16', '-o', file], { encoding: 'utf8' });
  if (s.status !== 0) return `\`wick synth --mmproj ${projector}\`: ${s.stderr.trim().replace(/^wick: /, '')}`;
  const v = spawnSync(NATIVE_WICK, ['vision', '-m', file, '--image', image], { encoding: 'utf8' });
  if (v.status !== 0) return `\`wick vision\` on its file: ${v.stderr.trim().replace(/^wick: /, '')}`;
  return null;
}

// ---- one run ----

const ENCODE_LINE = /positions × (\d+); preprocess [\d.]+ ms, encode ([\d.]+) ms \((\d+) threads?\)/;

function wickRun(kind, file, image, threads, opts) {
  const args = ['vision', '-m', file, '--image', image, '--threads', String(threads)];
  const [cmd, argv] = kind === 'native' ? [NATIVE_WICK, args] : [process.execPath, [WASM_CLI, ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: opts.timeout * 1000 });
  if (r.status !== 0) throw new Error(`wick ${kind} vision exited with ${r.status}: ${(r.stderr || String(r.error)).slice(-1500)}`);
  const m = ENCODE_LINE.exec(r.stderr);
  if (!m) throw new Error(`wick ${kind}: no encode line:\n${r.stderr.slice(-1500)}`);
  // a picture is several images where the projector tiles it (idefics3: tiles and the overview):
  // the time and positions per image, as llama.cpp's clip_image_encode times one
  const out = JSON.parse(r.stdout), images = out.images || 1;
  return { ms: Number(m[2]) / images, positions: out.positions / images, images };
}

function llamaRuns(file, size, threads, runs, opts) {
  const r = spawnSync(BENCH_MTMD, [file, String(size), String(threads), String(runs)], { encoding: 'utf8', timeout: opts.timeout * 1000 * (runs + 2) });
  if (r.status !== 0) throw new Error(`bench_mtmd exited with ${r.status}: ${(r.stderr || String(r.error)).slice(-1500)}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  out.flashAttention = /flash attention is (enabled|disabled)/.exec(r.stderr)?.[1] ?? 'unknown';
  return out;
}

// ---- the section ----

export const VISION_DEFAULTS = { visionShapes: 'SmolVLM-256M,Gemma-3', visionTypes: 'f16', visionRuns: 3, visionKinds: 'native,wasm' };

/** The vision section's Markdown: a table of ms per image, or the shapes that could not be measured and why. */
export async function visionBench(opts, threadCounts) {
  const built = spawnSync('make', ['-s', 'build/native/bench_mtmd'], { cwd: ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`make build/native/bench_mtmd: ${built.stderr}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-vision-'));
  const rows = [], missing = [];
  const kinds = list(opts.visionKinds);
  let busyRuns = 0, fa = null;
  try {
    const tiny = path.join(dir, 'tiny.ppm');
    fs.writeFileSync(tiny, Buffer.concat([Buffer.from('P6\n2 2\n255\n'), Buffer.alloc(12, 128)]));
    for (const name of list(opts.visionShapes)) {
      const sh = VISION_SHAPES.find((s) => s.name === name);
      if (!sh) throw new Error(`--vision-shapes: no shape ${name} (${VISION_SHAPES.map((s) => s.name).join(', ')})`);
      const why = projectorMissing(sh.projector, dir, tiny);
      if (why) {
        missing.push(`${sh.name} (${sh.about}): **missing, not measured** — wick does not take the ${sh.projector} projector yet (${why})`);
        continue;
      }
      // the image at the native size: preprocessing is a copy, the encoder sees exactly these pixels
      const image = path.join(dir, `image-${sh.image}.ppm`);
      const px = Buffer.alloc(sh.image * sh.image * 3);
      for (let i = 0; i < px.length; i++) px[i] = (i * 7 + ((i / (sh.image * 3)) | 0) * 13) & 255;
      fs.writeFileSync(image, Buffer.concat([Buffer.from(`P6\n${sh.image} ${sh.image}\n255\n`), px]));
      for (const type of list(opts.visionTypes)) {
        const file = shapedMmproj(sh, type);
        for (const threads of threadCounts) {
          const ms = {};
          await waitForIdle(opts.idleWait);
          const ref = llamaRuns(file, sh.image, threads, opts.visionRuns, opts);
          fa ??= ref.flashAttention;
          ms['llama.cpp'] = ref.median_ms;
          process.stderr.write(`bench: vision ${sh.name} ${type} llama.cpp t${threads}: ${ref.ms.map((x) => fmt(x, 0)).join(', ')} ms\n`);
          for (const kind of kinds) {
            const runs = [];
            for (let i = 0; i < opts.visionRuns; i++) {
              const busy = await waitForIdle(opts.idleWait);
              if (busy !== null && busy >= 0.15) busyRuns++;
              const run = wickRun(kind, file, image, threads, opts);
              if (run.positions !== ref.positions) throw new Error(`wick ${kind}: ${run.positions} positions, llama.cpp ${ref.positions}`);
              runs.push(run.ms);
              process.stderr.write(`bench: vision ${sh.name} ${type} ${kind} t${threads} #${i + 1}: ${fmt(run.ms, 0)} ms\n`);
            }
            ms[kind] = summarize(runs, 'median');
          }
          for (const kind of ['llama.cpp', ...kinds])
            rows.push([`${sh.name} ${type.toUpperCase()}`, `${sh.image}² → ${ref.positions} × ${ref.n_embd}`, String(threads),
              { 'llama.cpp': 'llama.cpp mtmd (native)', native: 'wick native', wasm: 'wick wasm (Node)' }[kind],
              fmt(ms[kind], 0), kind === 'llama.cpp' ? '—' : `${fmt(ms[kind] / ms['llama.cpp'], 2)}×`]);
        }
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const measured = rows.length ? markdownTable(['mmproj', 'image → output', 'threads', 'engine', 'ms per image (median)', 'time of llama.cpp\'s'], rows) : 'No shape measured.';
  return `Image encode time at the projector's native size (one image, the encoder and projector only: no preprocessing), median of ${opts.visionRuns}, ` +
    `on mmproj files of real models' shapes with random weights (tools/bench-vision.mjs: models/synth-mmproj-<shape>-<type>.gguf):\n\n${measured}\n\n` +
    (missing.length ? `${missing.map((m) => `- ${m}`).join('\n')}\n\n` : '') +
    `CPU flags: ${simdFlags()}. llama.cpp: bench/bench_mtmd.cpp on libmtmd and ggml as the llama-server build compiles them (mk/llama-server.mk: ` +
    `GGML_NATIVE=OFF, so AVX2/FMA/F16C kernels and no AVX-512), clip_image_encode with mtmd's defaults (flash attention auto: ${fa ?? 'not run'}), ` +
    'one untimed encode, then the timed ones in the same process. wick: the encode time `wick vision` reports (vision_encode: the context, the tower, the projector), ' +
    'each run a fresh process; native (SIMDe on SSE4.1), and wasm under Node (wasm_glue/cli.mjs: the single-threaded build for 1 thread, the pthreads build for 2).' +
    (busyRuns ? ` ${busyRuns} run(s) started while other work kept the CPU busy: those figures are high.` : '');
}
