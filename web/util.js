// web/util.js — small helpers shared by the page (app.js) and the custom element (wick-chat.js):
// building DOM safely, formatting, what the browser can do, and the memory check before a load.
import '../wasm_glue/gguf-header.js'; // defines globalThis.WickGguf (also imported by wick.mjs)
import { hasRelaxedSimd } from '../wasm_glue/wick.mjs';

const WickGguf = globalThis.WickGguf;
const GiB = 2 ** 30;

/**
 * Makes an element. Children are nodes or strings; strings become text nodes, so model output and
 * error messages can never turn into markup. attrs: properties (className, hidden, …), 'aria-*'
 * and 'data-*' attributes, and on* listeners.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k.includes('-') || k === 'role' || k === 'for') node.setAttribute(k, v === true ? '' : String(v));
    else node[k] = v;
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

/** "1.2 MiB" */
export function formatBytes(n) {
  if (!Number.isFinite(n)) return '?';
  return WickGguf.formatBytes(Math.round(n));
}

/** "850 ms", "12.3 s", "4 min 5 s" */
export function formatDuration(ms) {
  if (!Number.isFinite(ms)) return '?';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** "1,234" */
export function formatCount(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '?';
}

/** "0.3M", "1.5B" parameters */
export function formatParams(n) {
  if (!Number.isFinite(n) || n <= 0) return null;
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n < 1e7 ? 1 : 0)}M`;
  return `${(n / 1e3).toFixed(0)}K`;
}

/** A token's text made visible: spaces, newlines and tabs shown as ␣ ⏎ ⇥, nothing as ∅. */
export function visibleToken(text) {
  if (text === '') return '∅';
  return text.replace(/ /g, '␣').replace(/\n/g, '⏎').replace(/\t/g, '⇥');
}

// A module whose one function uses i8x16.splat and i8x16.popcnt: it validates only where the
// browser has WebAssembly SIMD128 (the bytes are wasm-feature-detect's SIMD test).
const SIMD_TEST = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/** What this browser offers wick: {wasm, simd, relaxedSimd, sharedMemory, isolated, threadsPossible, cores, deviceMemoryGiB}. */
export function detectFeatures() {
  const wasm = typeof WebAssembly === 'object' && typeof WebAssembly.validate === 'function';
  let simd = false;
  try { simd = wasm && WebAssembly.validate(SIMD_TEST); } catch { simd = false; }
  let sharedMemory = false;
  try {
    sharedMemory = typeof SharedArrayBuffer !== 'undefined' && new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch { sharedMemory = false; }
  const isolated = globalThis.crossOriginIsolated === true;
  return {
    wasm,
    simd,
    relaxedSimd: wasm && hasRelaxedSimd(),
    sharedMemory,
    isolated,
    threadsPossible: isolated && sharedMemory,
    cores: navigator.hardwareConcurrency || null,
    deviceMemoryGiB: typeof navigator.deviceMemory === 'number' ? navigator.deviceMemory : null,
  };
}

/** Why threads are not in use, in words for the page. */
export function threadsNote(features, isolation) {
  if (features.threadsPossible) return null;
  if (!features.isolated) return `one thread: the page is not cross-origin isolated (${isolation?.reason || 'no COOP/COEP headers'}), so SharedArrayBuffer is unavailable. The text is the same, only slower.`;
  return 'one thread: this browser has no shared WebAssembly memory. The text is the same, only slower.';
}

/** Reads a GGUF header from a File/Blob: {bytes, metadata}. */
export async function inspectFile(file) {
  for (let want = 1 << 18; ; want *= 4) {
    const head = new Uint8Array(await file.slice(0, want).arrayBuffer());
    try {
      const header = WickGguf.parseHeader(head, { tensors: true });
      return { bytes: file.size, metadata: header.metadata, tables: WickGguf.rowTables(header, file.size) };
    } catch (e) {
      if (!(e instanceof WickGguf.NeedMoreBytes) || head.length < want || want >= 1 << 28) throw new Error(`${file.name || 'the file'}: ${e.message}`);
    }
  }
}

/**
 * The memory check shown before a load: {fits, needed, kvBytes, contextSize, level, message}.
 * level: 'ok' | 'warn' (the device reports little memory) | 'error' (more than wasm32 can hold).
 */
export function memoryCheck({ bytes, mmprojBytes = 0, metadata, tables = [], contextSize = 0, kvType = 'f16', threads = 1 }, features) {
  // the row tables a load would keep outside wasm memory (gemma4's per-layer embeddings) are not counted;
  // an image encoder (mmproj) is held beside the weights
  const fit = WickGguf.checkFits({ fileBytes: bytes + mmprojBytes, metadata, contextSize, kvType, threads, tables });
  const unsupported = metadata && WickGguf.unsupportedReason(metadata);
  if (unsupported) return { ...fit, level: 'error', message: `wick cannot run this model: ${unsupported}.` };
  const parts = `${formatBytes(fit.fileBytes - fit.outsideBytes - mmprojBytes)} weights${fit.outsideBytes ? ` (${formatBytes(fit.outsideBytes)} more kept outside)` : ''}` +
    `${mmprojBytes ? ` + ${formatBytes(mmprojBytes)} image encoder` : ''} + ${formatBytes(fit.kvBytes)} KV cache (${formatCount(fit.contextSize)} tokens) + scratch`;
  if (!fit.fits) {
    // named, so that a file too large by design (Gemma 4 31B) says which model it is
    const name = metadata ? WickGguf.modelLabel(metadata).slice(2, -1) : '';
    return { ...fit, level: 'error', message: `${name ? `${name}: needs` : 'Needs'} about ${formatBytes(fit.needed)} (${parts}): more than the ${formatBytes(fit.available)} a WebAssembly page can address. Choose a smaller model or a shorter context.` };
  }
  const device = features?.deviceMemoryGiB;
  // navigator.deviceMemory is rounded down and capped at 8: half of it is about what one tab gets
  if (device && fit.needed > (device * GiB) / 2) {
    return { ...fit, level: 'warn', message: `Needs about ${formatBytes(fit.needed)} (${parts}); this device reports about ${device} GB of memory, so the load may fail or slow everything down.` };
  }
  return { ...fit, level: 'ok', message: `Needs about ${formatBytes(fit.needed)} of memory (${parts}).` };
}

/** Model facts for a line of text: "llama · 0.3M parameters · 5 layers · context 512". */
export function describeMetadata(md) {
  const arch = md['general.architecture'];
  const hp = WickGguf.hyperparameters(md);
  const bits = [];
  if (md['general.name'] && md['general.name'] !== arch) bits.push(String(md['general.name']));
  if (arch) bits.push(String(arch));
  if (md['general.size_label']) bits.push(`${md['general.size_label']} parameters`);
  if (hp?.layers) bits.push(`${hp.layers} layers`);
  if (hp?.contextTrain) bits.push(`trained context ${formatCount(hp.contextTrain)}`);
  if (typeof md['tokenizer.chat_template'] === 'string') bits.push('chat template');
  return bits.join(' · ');
}

/** Bytes per second from the last few seconds of progress samples. */
export class RateMeter {
  constructor(windowMs = 3000) { this.windowMs = windowMs; this.samples = []; }
  add(loaded, t = performance.now()) {
    this.samples.push({ t, loaded });
    while (this.samples.length > 2 && t - this.samples[0].t > this.windowMs) this.samples.shift();
  }
  rate() {
    if (this.samples.length < 2) return null;
    const a = this.samples[0], b = this.samples.at(-1);
    return b.t > a.t ? ((b.loaded - a.loaded) * 1000) / (b.t - a.t) : null;
  }
  reset() { this.samples = []; }
}

/** The progress line: "12.3 MiB of 450 MiB · 8.1 MiB/s · 53 s left". */
export function progressText(p, meter) {
  if (p.phase === 'load') return 'Preparing the model in the engine…';
  const of = p.total ? ` of ${formatBytes(p.total)}` : '';
  if (p.phase === 'store') return `Keeping it for offline use: ${formatBytes(p.loaded)}${of}`;
  if (p.cached) return `Reading from the browser cache: ${formatBytes(p.loaded)}${of}`;
  const rate = meter.rate();
  const bits = [`${formatBytes(p.loaded)}${of}`];
  // the bytes an earlier visit kept (wasm_glue/worker.js resumes after them with a Range request)
  if (p.resumed > 0) bits.push(`resumed at ${formatBytes(p.resumed)}`);
  if (rate) bits.push(`${formatBytes(rate)}/s`);
  if (rate && p.total) bits.push(`${formatDuration(((p.total - p.loaded) * 1000) / rate)} left`);
  return `Downloading: ${bits.join(' · ')}`;
}

export { WickGguf };
