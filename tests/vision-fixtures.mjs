// tests/vision-fixtures.mjs — what the picture-in-a-prompt tests share: a vocabulary with SmolVLM's,
// Gemma 3's, LFM2-VL's, Qwen-VL's and Gemma 4's image tokens, and test pictures.
import fs from 'node:fs';
import path from 'node:path';
import { shared } from './helpers.mjs';
import { readGguf, writeGguf, setKv, T } from './gguf.mjs';

/** The gpt-2 vocabulary with SmolVLM's, Gemma 3's, LFM2-VL's, Qwen-VL's and Gemma 4's image and turn tokens added (user-defined, as SmolVLM's GGUF files have them). */
export function smolVocab(file) {
  const g = readGguf(path.join(shared, 'vocab', 'ggml-vocab-gpt-2.gguf'));
  const get = (k) => g.kv.find((e) => e.key === k)?.value.items;
  const tokens = [...get('tokenizer.ggml.tokens')];
  const types = get('tokenizer.ggml.token_type') ? [...get('tokenizer.ggml.token_type')] : tokens.map(() => 1);
  const added = ['<fake_token_around_image>', '<global-img>', '<image>', '<end_of_utterance>',
    '<start_of_image>', '<end_of_image>', '<start_of_turn>', '<end_of_turn>'];  // Gemma 3's
  for (let r = 1; r <= 6; r++) for (let c = 1; c <= 6; c++) added.push(`<row_${r}_col_${c}>`);
  // LFM2-VL's: its image markers, a tile marker for every grid of up to 10 tiles, its turn markers
  added.push('<|image_start|>', '<|image_end|>', '<|img_thumbnail|>', '<|im_start|>', '<|im_end|>');
  added.push('<|vision_start|>', '<|vision_end|>');  // Qwen-VL's
  for (let r = 1; r <= 10; r++) for (let c = 1; r * c <= 10; c++) added.push(`<|img_row_${r}_col_${c}|>`);
  added.push('<|image>', '<image|>', '<|turn>', '<turn|>');  // Gemma 4's (last: the ids before them stay)
  for (const t of added) { tokens.push(t); types.push(4); }
  setKv(g, 'tokenizer.ggml.tokens', T.ARRAY, { arrayOf: T.STRING, items: tokens });
  setKv(g, 'tokenizer.ggml.token_type', T.ARRAY, { arrayOf: T.I32, items: types });
  fs.writeFileSync(file, writeGguf(g));
}

/** A width × height binary PPM with gradients and a ripple; seed changes the ripple. */
export function ppm(width, height, seed = 0) {
  const px = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      px[i] = Math.floor((x * 255) / Math.max(1, width - 1));
      px[i + 1] = Math.floor((y * 255) / Math.max(1, height - 1));
      px[i + 2] = ((x * (7 + seed) + y * (13 + 3 * seed)) * 5 + 90 * seed) % 256;
    }
  return Buffer.concat([Buffer.from(`P6\n${width} ${height}\n255\n`, 'latin1'), px]);
}

