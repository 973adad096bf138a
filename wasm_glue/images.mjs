// wasm_glue/images.mjs — pictures in chat messages: OpenAI content parts ({type: 'image_url',
// image_url: {url}}) turned into llama.cpp's media marker in the message text, and the pictures
// fetched and decoded into RGB pixels for the engine's encoder (src/images.c).
//
// As llama.cpp's server does (tools/server/server-common.cpp and common/chat.cpp): each image part
// becomes the marker "<__media__>", and a message's parts are joined into one text with a newline
// between text parts, none before or after a marker. The template then renders that text; the
// prompt is split at the markers and each picture's ids (wick_vision_layout) go in their place.
//
// Decoding: in a browser the platform's own decoder (createImageBitmap, drawn into an
// OffscreenCanvas, so every format the browser reads); under Node PNG (fast-png), JPEG (jpeg-js)
// and binary PPM (P6, read here). Pixels are sRGB bytes as decoded; alpha is dropped as llama.cpp's
// loader drops it (stb_image asked for 3 channels composites nothing: it takes R, G, B).
import { WickError } from './options.mjs';

export const MEDIA_MARKER = '<__media__>';
/** The largest side and pixel count taken (larger pictures are refused before decoding where the header says so). */
export const MAX_IMAGE_SIDE = 16384;
export const MAX_IMAGE_PIXELS = 64e6;

// Node's modules and the Node decoders by a computed name, so that a bundler leaves them out of a
// page's build (as wick.mjs's nodeModule does)
const nodeImport = (name) => import(/* @vite-ignore */ /* webpackIgnore: true */ name);
const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined' && typeof importScripts !== 'function';
const invalid = (m) => new WickError('E_INVALID_ARG', m);

/** Whether any message holds an image part. */
export function hasImages(messages) {
  return Array.isArray(messages) && messages.some((m) => Array.isArray(m?.content) && m.content.some((p) => p?.type === 'image_url'));
}

/**
 * The messages with each content array holding images joined into text with markers (llama.cpp's
 * rule), and the images' URLs in the order their markers appear. Arrays of text parts only are left
 * as they are.
 */
export function markImages(messages) {
  const urls = [];
  const out = messages.map((m, i) => {
    if (!Array.isArray(m?.content) || !m.content.some((p) => p?.type === 'image_url')) return m;
    let text = '', lastWasMarker = false;
    m.content.forEach((p, j) => {
      if (p?.type === 'image_url') {
        const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
        if (typeof url !== 'string' || !url) throw invalid(`messages[${i}].content[${j}].image_url.url must be a data:, blob: or http(s) URL`);
        urls.push(url);
        text += MEDIA_MARKER;
        lastWasMarker = true;
      } else if (p?.type === 'text' && typeof p.text === 'string') {
        if (!lastWasMarker && text) text += '\n';
        text += p.text;
        lastWasMarker = false;
      } else {
        throw invalid(`messages[${i}].content[${j}] must be {type: 'text', text} or {type: 'image_url', image_url: {url}}`);
      }
    });
    if (text.split(MEDIA_MARKER).length - 1 !== m.content.filter((p) => p?.type === 'image_url').length)
      throw invalid(`messages[${i}]: a text part holds the image marker ${MEDIA_MARKER}`);
    return { ...m, content: text };
  });
  return { messages: out, urls };
}

/** The bytes and type behind an image URL (data:, blob:, http(s):; under Node also a file path or file: URL). */
async function fetchImage(url) {
  if (isNode && !/^(https?|data|blob):/i.test(url)) {
    const fs = await nodeImport('node:fs');
    const { fileURLToPath } = await nodeImport('node:url');
    try {
      return { bytes: new Uint8Array(fs.readFileSync(url.startsWith('file:') ? fileURLToPath(url) : url)), type: '' };
    } catch (e) {
      throw new WickError('E_FETCH', `could not read the image ${url}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
    }
  }
  let r;
  try {
    r = await fetch(url);
  } catch (e) {
    throw new WickError('E_FETCH', `could not fetch the image ${url.slice(0, 80)}: ${e.message}`);
  }
  if (!r.ok) throw new WickError('E_FETCH', `could not fetch the image ${url.slice(0, 80)}: HTTP ${r.status}`);
  return { bytes: new Uint8Array(await r.arrayBuffer()), type: r.headers.get('content-type') || '' };
}

function sniff(b) {
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 2 && b[0] === 0x50 && b[1] === 0x36) return 'ppm';
  return null;
}

function checkSize(width, height, what) {
  if (!(width >= 1 && height >= 1)) throw new WickError('E_BAD_IMAGE', `${what}: an image of ${width} × ${height} pixels has nothing to encode`);
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS)
    throw new WickError('E_BAD_IMAGE', `${what}: ${width} × ${height} pixels is larger than wick takes (sides up to ${MAX_IMAGE_SIDE}, ${MAX_IMAGE_PIXELS / 1e6} M pixels)`);
}

/** Binary PPM (P6, maxval 255): header fields separated by whitespace, no comments. */
function decodePpm(b, what) {
  let at = 2;
  const field = () => {
    while (at < b.length && /\s/.test(String.fromCharCode(b[at]))) at++;
    const start = at;
    let v = 0;
    while (at < b.length && b[at] >= 48 && b[at] <= 57 && at - start < 9) v = v * 10 + (b[at++] - 48);
    if (at === start) throw new WickError('E_BAD_IMAGE', `${what}: a PPM header field is not a number`);
    return v;
  };
  const width = field(), height = field(), maxval = field();
  at++;
  if (maxval !== 255) throw new WickError('E_BAD_IMAGE', `${what}: PPM maximum ${maxval}: only 8-bit images are read`);
  checkSize(width, height, what);
  if (b.length - at < width * height * 3)
    throw new WickError('E_BAD_IMAGE', `${what}: ${width} × ${height} pixels need ${width * height * 3} bytes, the file has ${Math.max(0, b.length - at)} (truncated)`);
  return { width, height, rgb: b.slice(at, at + width * height * 3) };
}

function dropAlpha(data, width, height, channels) {
  if (channels === 3) return data instanceof Uint8Array ? data : Uint8Array.from(data);
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; j < rgb.length; i += channels, j += 3) {
    if (channels >= 3) { rgb[j] = data[i]; rgb[j + 1] = data[i + 1]; rgb[j + 2] = data[i + 2]; }
    else rgb[j] = rgb[j + 1] = rgb[j + 2] = data[i]; // grey, grey + alpha
  }
  return rgb;
}

async function decodeInNode(bytes, kind, what) {
  if (kind === 'png') {
    const { decode } = await nodeImport('fast-png');
    let png;
    try { png = decode(bytes); } catch (e) { throw new WickError('E_BAD_IMAGE', `${what}: not a readable PNG (${e.message})`); }
    checkSize(png.width, png.height, what);
    let data = png.data;
    if (png.depth === 16) data = Uint8Array.from(data, (v) => v >> 8);
    if (png.palette) {
      const rgb = new Uint8Array(png.width * png.height * 3);
      for (let i = 0; i < png.width * png.height; i++) { const c = png.palette[data[i]] || [0, 0, 0]; rgb.set(c.slice(0, 3), i * 3); }
      return { width: png.width, height: png.height, rgb };
    }
    return { width: png.width, height: png.height, rgb: dropAlpha(data, png.width, png.height, png.channels) };
  }
  const jpeg = (await nodeImport('jpeg-js')).default;
  let img;
  try { img = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: false, maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6 }); } catch (e) { throw new WickError('E_BAD_IMAGE', `${what}: not a readable JPEG (${e.message})`); }
  checkSize(img.width, img.height, what);
  return { width: img.width, height: img.height, rgb: dropAlpha(img.data, img.width, img.height, img.data.length / (img.width * img.height)) };
}

async function decodeInBrowser(bytes, type, what) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(new Blob([bytes], { type }), { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
  } catch (e) {
    throw new WickError('E_BAD_IMAGE', `${what}: the browser cannot decode it (${e.message})`);
  }
  const { width, height } = bitmap;
  checkSize(width, height, what);
  const canvas = new OffscreenCanvas(width, height);
  const g = canvas.getContext('2d', { willReadFrequently: true });
  g.drawImage(bitmap, 0, 0);
  bitmap.close?.();
  return { width, height, rgb: dropAlpha(g.getImageData(0, 0, width, height).data, width, height, 4) };
}

/** An image URL's pixels: {width, height, rgb} (3 bytes a pixel, rows top to bottom). */
export async function decodeImage(url) {
  const what = `image ${url.length > 60 ? `${url.slice(0, 57)}…` : url}`;
  const { bytes, type } = await fetchImage(url);
  if (!bytes.length) throw new WickError('E_BAD_IMAGE', `${what}: empty`);
  const kind = sniff(bytes);
  if (kind === 'ppm') return decodePpm(bytes, what);
  if (!isNode && typeof createImageBitmap === 'function') return decodeInBrowser(bytes, type || (kind ? `image/${kind}` : ''), what);
  if (!kind) throw new WickError('E_BAD_IMAGE', `${what}: not a PNG, JPEG or PPM file (under Node those are read)`);
  return decodeInNode(bytes, kind, what);
}

/** A digest of the pixels: the same picture gets the same slot, so its cached positions are reused. */
export async function imageKey({ width, height, rgb }) {
  const head = new Uint8Array(8);
  new DataView(head.buffer).setUint32(0, width, true);
  new DataView(head.buffer).setUint32(4, height, true);
  const all = new Uint8Array(8 + rgb.length);
  all.set(head);
  all.set(rgb, 8);
  const d = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', all));
  return Array.from(d.subarray(0, 16), (x) => x.toString(16).padStart(2, '0')).join('');
}
