// topk.wgsl — the k highest logits of one row, in the sampler's order (src/sampler.c: logit
// descending, equal logits by lower id; NaN ranks as -inf), so that the worker reads back k
// (id, logit) pairs instead of the whole row when the sampler needs no more
// (wick_gen_candidates). Each workgroup sorts a segment of SEG entries in workgroup memory
// (a bitonic network) and writes its first k; the backend runs the same entry point again on
// those lists until one segment holds them all (a 32000-token row and k = 40: 32 segments, then
// 2, then 1). An entry is vec2<u32>(order key, id); the key is the float's bits mapped so that
// unsigned order is float order (negative: all bits flipped; positive: the sign bit set), with
// -0 as +0 (C's == treats them as equal, so their tie goes to the lower id).
// The pass over the row also counts its logits that are Inf or NaN: the worker then reads the
// whole row instead, so that such a row is seen as it is.

struct Params {
  n: u32,          // entries in: the row's length, or the previous pass's list
  k: u32,          // entries kept per segment (k <= WG)
  from_row: u32,   // 1: read the logits row (ids are the positions), 0: read src's entries
  pad: u32,
}

@group(0) @binding(0) var<storage, read> row: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read_write> non_finite: atomic<u32>;

const WG: u32 = 256u;
const SEG: u32 = 1024u;          // 8 KiB of workgroup memory, half of WebGPU's default limit
// after every real entry, also after an id's -inf (key 0x007fffff)
const PADDING: vec2<u32> = vec2<u32>(0u, 0xffffffffu);

var<workgroup> seg: array<vec2<u32>, 1024>;

fn order_key(bits_in: u32) -> u32 {
  var b = bits_in;
  if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u) { b = 0xff800000u; } // NaN → -inf
  if (b == 0x80000000u) { b = 0u; }                                                       // -0 → +0
  if ((b & 0x80000000u) != 0u) { return ~b; }
  return b | 0x80000000u;
}

// whether entry a ranks before entry b
fn before(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.x > b.x || (a.x == b.x && a.y < b.y);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let base = wg.x * SEG;
  var bad = 0u;
  for (var j = 0u; j < SEG / WG; j++) {
    let i = j * WG + li;
    let g = base + i;
    var e = PADDING;
    if (g < p.n) {
      if (p.from_row != 0u) {
        let b = bitcast<u32>(row[g]);
        if ((b & 0x7f800000u) == 0x7f800000u) { bad += 1u; }
        e = vec2<u32>(order_key(b), g);
      } else {
        e = src[g];
      }
    }
    seg[i] = e;
  }
  if (bad > 0u) { atomicAdd(&non_finite, bad); }
  workgroupBarrier();

  // bitonic sort, best first: in the merge of blocks of `size`, a block whose index bit `size` is
  // clear is put in best-first order, its neighbour in worst-first, until size = SEG sorts all
  for (var size = 2u; size <= SEG; size = size << 1u) {
    for (var stride = size >> 1u; stride > 0u; stride = stride >> 1u) {
      for (var j = 0u; j < SEG / 2u / WG; j++) {
        let t = j * WG + li;                                  // compare-exchange pair t
        let lo = (t / stride) * 2u * stride + (t % stride);
        let hi = lo + stride;
        let a = seg[lo];
        let b = seg[hi];
        let best_first = (lo & size) == 0u;
        if ((best_first && before(b, a)) || (!best_first && before(a, b))) {
          seg[lo] = b;
          seg[hi] = a;
        }
      }
      workgroupBarrier();
    }
  }
  if (li < p.k) { dst[wg.x * p.k + li] = seg[li]; }
}
