// tests/vision-engine.test.mjs — pictures through the JS API (wasm_glue: Wick.load(model, { mmproj }),
// chat.completions.create with image_url content parts), against the native CLI on the same files:
//  - the prompt the API builds (template rendered with the media marker, the text around it tokenized
//    apart, the picture's ids in its place) gives the same greedy answer as `wick generate --mmproj
//    --image -p` with the rendered text, for a PNG (fast-png under Node) and for a PPM of the same pixels;
//  - a second question about the same picture in the same conversation encodes nothing (the
//    response's wick.images says encoded: false) and the prompt counts its positions; a new picture
//    is encoded;
//  - Qwen3-VL (qwen3vl + qwen3vl: M-RoPE's 2-D positions, deepstack rows): the API's greedy answer
//    equals the CLI's, and so does the second turn's, which reuses the picture's cached positions
//    (the rope positions after it carried by the cache, not evaluated again);
//  - refusals: an image part without an mmproj (E_NO_VISION), an unknown projector named at load,
//    an mmproj of another width, a picture of zero size or a truncated file (E_BAD_IMAGE).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode as encodePng } from 'fast-png';
import { Wick } from '../wasm_glue/wick.mjs';
import { runWick, models } from './helpers.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';
import { smolVocab, ppm } from './vision-fixtures.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-vision-engine-'));
const files = {};
// SmolVLM's template in outline: its messages' text, each image part where the text has it
const TEMPLATE = "{% for m in messages %}{{ m['role'] | capitalize }}:{{ m['content'] }}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}";

function pixels(width, height, seed) {
  const b = ppm(width, height, seed);
  return { width, height, rgb: b.subarray(b.length - width * height * 3) };
}
const pngUrl = ({ width, height, rgb }) => `data:image/png;base64,${Buffer.from(encodePng({ width, height, data: rgb, channels: 3, depth: 8 })).toString('base64')}`;
const ppmUrl = ({ width, height, rgb }) => `data:image/x-portable-pixmap;base64,${Buffer.concat([Buffer.from(`P6\n${width} ${height}\n255\n`), rgb]).toString('base64')}`;

let engine;
before(async () => {
  const vocab = path.join(tmp, 'vocab.gguf');
  smolVocab(vocab);
  fs.writeFileSync(vocab, writeGguf(setKv(readGguf(vocab), 'tokenizer.chat_template', T.STRING, TEMPLATE)));
  files.text = path.join(tmp, 'text-vl-f16.gguf');
  let r = runWick('native', ['synth', '--shape', 'vl', '--type', 'f16', '--vocab', vocab, '-o', files.text]);
  assert.equal(r.code, 0, r.stderr);
  files.mmproj = path.join(tmp, 'mmproj-idefics3-f16.gguf');
  r = runWick('native', ['synth', '--mmproj', 'idefics3', '--type', 'f16', '-o', files.mmproj]);
  assert.equal(r.code, 0, r.stderr);
  engine = await Wick.load(files.text, { mmproj: files.mmproj, threads: 1 });
});
after(async () => {
  await engine?.unload();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const ask = (messages, extra = {}) => engine.chat.completions.create({ messages, max_tokens: 6, temperature: 0, ...extra });

test('Wick.load with an mmproj: info.vision', () => {
  assert.deepEqual({ ...engine.info.vision, mmprojBytes: undefined }, { projector: 'idefics3', imageSize: 64, positionsPerImage: 16, dim: 96, mmprojBytes: undefined });
  assert.equal(engine.info.vision.mmprojBytes, fs.statSync(files.mmproj).size);
});

test('an image part: the same greedy answer as the native CLI with the rendered prompt, PNG and PPM alike', async () => {
  const px = pixels(41, 29, 3);
  const question = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: pngUrl(px) } }, { type: 'text', text: 'What is this?' }] }];
  const a = await ask(question);
  assert.equal(a.wick.prompt, 'User:<__media__>What is this?<end_of_utterance>\nAssistant:');
  assert.equal(a.wick.images.length, 1);
  const [im] = a.wick.images;
  assert.equal(im.width, 41);
  assert.equal(im.height, 29);
  assert.equal(im.positions, 80); // 2 × 2 tiles and the overview, 16 positions each
  assert.equal(im.encoded, true);
  assert.ok(im.encodeMs > 0);
  // the native CLI, the same text and pixels
  const file = path.join(tmp, 'q.ppm');
  fs.writeFileSync(file, Buffer.concat([Buffer.from('P6\n41 29\n255\n'), px.rgb]));
  const r = runWick('native', ['generate', '-m', files.text, '--mmproj', files.mmproj, '--image', file, '-p', a.wick.prompt, '-n', '6', '--temp', '0', '--ignore-eos']);
  assert.equal(r.code, 0, r.stderr);
  const m = /(\d+) positions of (\d+) prompt ids/.exec(r.stderr);
  assert.equal(Number(m[2]), a.usage.prompt_tokens, 'the prompt lengths differ');
  const native = r.stdout.replace(/\n$/, '');
  assert.ok(native.length > 0 && a.choices[0].message.content.length > 0, 'an empty answer');
  assert.equal(a.choices[0].message.content, native, 'the answers differ');
  process.stdout.write(`# the answer (random weights): ${JSON.stringify(native)}\n`);
  // the same pixels as a PPM: the same picture (its slot: nothing encoded) and the same answer
  const b = await ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: ppmUrl(px) } }, { type: 'text', text: 'What is this?' }] }]);
  assert.equal(b.choices[0].message.content, a.choices[0].message.content);
  assert.equal(b.wick.images[0].encoded, false);
});

test('a second question about the same picture encodes nothing; a new picture is encoded', async () => {
  const px = pixels(70, 20, 4);
  const turn1 = [{ role: 'user', content: [{ type: 'text', text: 'Look:' }, { type: 'image_url', image_url: { url: pngUrl(px) } }, { type: 'text', text: 'Colours?' }] }];
  const a = await ask(turn1);
  assert.equal(a.wick.prompt, 'User:Look:<__media__>Colours?<end_of_utterance>\nAssistant:');
  assert.equal(a.wick.images[0].encoded, true);
  const turn2 = [...turn1, { role: 'assistant', content: a.choices[0].message.content }, { role: 'user', content: 'And the shapes?' }];
  const b = await ask(turn2);
  assert.equal(b.wick.images[0].encoded, false, 'the picture was encoded again');
  assert.equal(b.wick.images[0].encodeMs, 0);
  assert.equal(b.wick.images[0].positions, a.wick.images[0].positions);
  assert.ok(b.timings.cachedPromptTokens >= a.usage.prompt_tokens - 1, `only ${b.timings.cachedPromptTokens} of the first prompt's ${a.usage.prompt_tokens} positions were reused`);
  assert.ok(b.usage.prompt_tokens > a.usage.prompt_tokens + a.wick.images[0].positions - 100);
  // streamed: the final chunk carries the images too
  let last = null;
  for await (const c of await ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: pngUrl(pixels(12, 50, 6)) } }] }], { stream: true })) last = c;
  assert.equal(last.wick.images.length, 1);
  assert.equal(last.wick.images[0].encoded, true);
});

/** the native CLI's greedy answer to a rendered prompt with one picture */
function nativeAnswer(text, mmproj, px, prompt, n) {
  const file = path.join(tmp, `native-${px.width}x${px.height}.ppm`);
  fs.writeFileSync(file, Buffer.concat([Buffer.from(`P6\n${px.width} ${px.height}\n255\n`), px.rgb]));
  const r = runWick('native', ['generate', '-m', text, '--mmproj', mmproj, '--image', file, '-p', prompt, '-n', String(n), '--temp', '0', '--ignore-eos']);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.replace(/\n$/, '');
}

test('Qwen3-VL: the API\'s greedy answers equal the CLI\'s, the second turn reusing the picture\'s cached positions', async () => {
  const text = path.join(tmp, 'text-qwen3vl-f16.gguf'), mmproj = path.join(tmp, 'mmproj-qwen3vl-f16.gguf');
  let r = runWick('native', ['synth', '--shape', 'vl', '--arch', 'qwen3vl', '--type', 'f16', '--vocab', path.join(tmp, 'vocab.gguf'), '-o', text]);
  assert.equal(r.code, 0, r.stderr);
  r = runWick('native', ['synth', '--mmproj', 'qwen3vl', '--type', 'f16', '-o', mmproj]);
  assert.equal(r.code, 0, r.stderr);
  const qwen = await Wick.load(text, { mmproj, threads: 1 });
  try {
    assert.equal(qwen.info.vision.projector, 'qwen3vl_merger');
    const px = pixels(90, 60, 7);
    const turn1 = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: pngUrl(px) } }, { type: 'text', text: 'What is this?' }] }];
    const a = await qwen.chat.completions.create({ messages: turn1, max_tokens: 6, temperature: 0 });
    assert.equal(a.wick.images[0].encoded, true);
    assert.equal(a.choices[0].message.content, nativeAnswer(text, mmproj, px, a.wick.prompt, 6), 'turn 1: the answers differ');
    const turn2 = [...turn1, { role: 'assistant', content: a.choices[0].message.content }, { role: 'user', content: 'And the shapes?' }];
    const b = await qwen.chat.completions.create({ messages: turn2, max_tokens: 6, temperature: 0 });
    assert.equal(b.wick.images[0].encoded, false, 'the picture was encoded again');
    assert.ok(b.timings.cachedPromptTokens >= a.usage.prompt_tokens - 1, `only ${b.timings.cachedPromptTokens} positions reused`);
    assert.equal(b.choices[0].message.content, nativeAnswer(text, mmproj, px, b.wick.prompt, 6), 'turn 2 (cached picture): the answers differ');
    process.stdout.write(`# qwen3vl answers (random weights): ${JSON.stringify(a.choices[0].message.content)}, ${JSON.stringify(b.choices[0].message.content)}\n`);
  } finally {
    await qwen.unload();
  }
});

test('refusals: no mmproj, unknown projector, another width, bad pictures', async () => {
  const png = pngUrl(pixels(8, 8, 1));
  const plain = await Wick.load(files.text, { threads: 1 });
  try {
    assert.equal(plain.info.vision, null);
    await assert.rejects(plain.chat.completions.create({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: png } }] }] }),
      (e) => e.code === 'E_NO_VISION' && /without an mmproj/.test(e.message));
  } finally {
    await plain.unload();
  }
  const other = path.join(tmp, 'mmproj-other.gguf');
  fs.writeFileSync(other, writeGguf(setKv(readGguf(files.mmproj), 'clip.projector_type', T.STRING, 'pixtral')));
  await assert.rejects(Wick.load(files.text, { mmproj: other, threads: 1 }), (e) => e.code === 'E_UNSUPPORTED' && /projector 'pixtral' is not supported/.test(e.message));
  await assert.rejects(Wick.load(path.join(models, 'mini', 'mini-f16.gguf'), { mmproj: files.mmproj, threads: 1 }),
    (e) => /feeds embeddings of 96 but the model's are 256/.test(e.message));
  await assert.rejects(ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: ppmUrl({ width: 0, height: 3, rgb: Buffer.alloc(0) }) } }] }]),
    (e) => e.code === 'E_BAD_IMAGE' && /0 × 3 pixels has nothing to encode/.test(e.message));
  const truncated = `data:image/x-portable-pixmap;base64,${Buffer.from('P6\n30000 30000\n255\nabc').toString('base64')}`;
  await assert.rejects(ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: truncated } }] }]),
    (e) => e.code === 'E_BAD_IMAGE' && /larger than wick takes/.test(e.message));
  const short = `data:image/x-portable-pixmap;base64,${Buffer.from('P6\n30 30\n255\nabc').toString('base64')}`;
  await assert.rejects(ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: short } }] }]),
    (e) => e.code === 'E_BAD_IMAGE' && /truncated/.test(e.message));
  await assert.rejects(ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }]),
    (e) => e.code === 'E_BAD_IMAGE');
  await assert.rejects(ask([{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }]), (e) => e.code === 'E_INVALID_ARG');
  // the engine still answers after the refusals
  const ok = await ask([{ role: 'user', content: [{ type: 'image_url', image_url: { url: png } }, { type: 'text', text: 'hi' }] }]);
  assert.equal(ok.wick.images.length, 1);
});
