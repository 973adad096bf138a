// tests/gguf.mjs — a small GGUF reader/writer for the tests: read a real file, change it, write it
// back, so hostile files can be made one defect at a time. Layout per the GGUF spec
// (ggml's docs/gguf.md): header, metadata, tensor directory, aligned data section.
import fs from 'node:fs';

export const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10, I64: 11, F64: 12 };
const SCALAR = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

class Reader {
  constructor(buf) { this.b = buf; this.p = 0; }
  u32() { const v = this.b.readUInt32LE(this.p); this.p += 4; return v; }
  u64() { const v = this.b.readBigUInt64LE(this.p); this.p += 8; return v; }
  str() { const n = Number(this.u64()); const s = this.b.toString('utf8', this.p, this.p + n); this.p += n; return s; }
  scalar(t) {
    const b = this.b, p = this.p;
    this.p += SCALAR[t];
    switch (t) {
      case T.U8: return b.readUInt8(p); case T.I8: return b.readInt8(p);
      case T.U16: return b.readUInt16LE(p); case T.I16: return b.readInt16LE(p);
      case T.U32: return b.readUInt32LE(p); case T.I32: return b.readInt32LE(p);
      case T.F32: return b.readFloatLE(p); case T.BOOL: return b.readUInt8(p) !== 0;
      case T.U64: return b.readBigUInt64LE(p); case T.I64: return b.readBigInt64LE(p);
      case T.F64: return b.readDoubleLE(p);
    }
    throw new Error(`type ${t}`);
  }
  value(t) {
    if (t === T.STRING) return this.str();
    if (t === T.ARRAY) {
      const et = this.u32(); const n = Number(this.u64());
      const items = [];
      for (let i = 0; i < n; i++) items.push(this.value(et));
      return { arrayOf: et, items };
    }
    return this.scalar(t);
  }
}

/** Parses a GGUF file into {version, kv: [{key, type, value}], tensors: [{name, ne, type, data}], alignment}. */
export function readGguf(path) {
  const buf = fs.readFileSync(path);
  const r = new Reader(buf);
  if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Error('not GGUF');
  r.p = 4;
  const version = r.u32();
  const nT = Number(r.u64()), nKv = Number(r.u64());
  const kv = [];
  for (let i = 0; i < nKv; i++) { const key = r.str(); const type = r.u32(); kv.push({ key, type, value: r.value(type) }); }
  const align = kv.find((e) => e.key === 'general.alignment')?.value ?? 32;
  const infos = [];
  for (let i = 0; i < nT; i++) {
    const name = r.str(); const nd = r.u32(); const ne = [];
    for (let d = 0; d < nd; d++) ne.push(r.u64());
    infos.push({ name, ne, type: r.u32(), offset: r.u64() });
  }
  const dataStart = Math.ceil(r.p / align) * align;
  const offsets = infos.map((t) => Number(t.offset));
  const tensors = infos.map((t, i) => {
    const start = dataStart + offsets[i];
    const next = offsets.filter((o) => o > offsets[i]).sort((a, b) => a - b)[0];
    const end = next !== undefined ? dataStart + next : buf.length;
    return { name: t.name, ne: t.ne, type: t.type, data: buf.subarray(start, end) };
  });
  return { version, kv, tensors, alignment: align };
}

class Writer {
  constructor() { this.parts = []; this.len = 0; }
  push(b) { this.parts.push(b); this.len += b.length; }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); this.push(b); }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v))); this.push(b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  scalar(t, v) {
    const b = Buffer.alloc(SCALAR[t] ?? 4); // an unknown type (hostile files) gets 4 zero bytes
    switch (t) {
      case T.U8: b.writeUInt8(v); break; case T.I8: b.writeInt8(v); break;
      case T.U16: b.writeUInt16LE(v); break; case T.I16: b.writeInt16LE(v); break;
      case T.U32: b.writeUInt32LE(v >>> 0); break; case T.I32: b.writeInt32LE(v); break;
      case T.F32: b.writeFloatLE(v); break; case T.BOOL: b.writeUInt8(v ? 1 : 0); break;
      case T.U64: b.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v))); break;
      case T.I64: b.writeBigInt64LE(BigInt(v)); break; case T.F64: b.writeDoubleLE(v); break;
    }
    this.push(b);
  }
  value(t, v) {
    if (t === T.STRING) return this.str(v);
    if (t === T.ARRAY) {
      this.u32(v.arrayOf);
      this.u64(v.length ?? v.items.length);
      for (const it of v.items) this.value(v.arrayOf, it);
      return;
    }
    this.scalar(t, v);
  }
}

/** Serializes {version, kv, tensors, alignment}; a tensor may carry `offset` (forced) and `nDims`. */
export function writeGguf(g, opts = {}) {
  const w = new Writer();
  w.push(Buffer.from(opts.magic ?? 'GGUF', 'latin1'));
  w.u32(g.version ?? 3);
  w.u64(opts.nTensors ?? g.tensors.length);
  w.u64(opts.nKv ?? g.kv.length);
  for (const e of g.kv) { w.str(e.key); w.u32(e.type); w.value(e.type, e.value); }
  const align = g.alignment ?? 32;
  let off = 0;
  const offsets = g.tensors.map((t) => { const o = off; off = Math.ceil((o + t.data.length) / align) * align; return o; });
  g.tensors.forEach((t, i) => {
    w.str(t.name);
    w.u32(t.nDims ?? t.ne.length);
    for (const d of t.ne) w.u64(d);
    w.u32(t.type);
    w.u64(t.offset ?? offsets[i]);
  });
  const pad = (Math.ceil(w.len / align) * align) - w.len;
  w.push(Buffer.alloc(pad));
  g.tensors.forEach((t, i) => {
    w.push(t.data);
    const end = (i + 1 < g.tensors.length ? offsets[i + 1] : off) - offsets[i] - t.data.length;
    if (end > 0) w.push(Buffer.alloc(end));
  });
  return Buffer.concat(w.parts);
}

export function setKv(g, key, type, value) {
  const e = g.kv.find((x) => x.key === key);
  if (e) { e.type = type; e.value = value; } else g.kv.push({ key, type, value });
  return g;
}
export function dropKv(g, key) { g.kv = g.kv.filter((x) => x.key !== key); return g; }
export function clone(g) { return { ...g, kv: g.kv.map((e) => ({ ...e })), tensors: g.tensors.map((t) => ({ ...t, ne: [...t.ne] })) }; }

/** Splits a parsed model into n GGUF files the way llama.cpp's gguf-split does: the first keeps
 * all metadata, every part gets split.no / split.count / split.tensors.count and a share of the tensors. */
export function splitGguf(g, n) {
  const per = Math.ceil(g.tensors.length / n);
  return Array.from({ length: n }, (_, i) => {
    const part = { version: g.version, alignment: g.alignment, kv: i === 0 ? g.kv.map((e) => ({ ...e })) : [], tensors: g.tensors.slice(i * per, (i + 1) * per) };
    part.kv.push({ key: 'split.no', type: T.U16, value: i }, { key: 'split.count', type: T.U16, value: n }, { key: 'split.tensors.count', type: T.I32, value: g.tensors.length });
    return writeGguf(part);
  });
}
