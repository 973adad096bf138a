// tools/bench-memory.mjs — peak memory of one load (issue 31: one copy of the weights), each
// configuration in a fresh Node process: the process's peak resident set (JS heap, ArrayBuffers,
// wasm memory and, on SwiftShader, the "GPU" buffers, which live in host memory), and the parts
// the engine reports: wasm memory after the load, bytes JS still holds, the GPU path's buffers.
//
//   node tools/bench-memory.mjs [--model models/synth-134m-q4_0.gguf] [--tokens 8] [--record]
//
// --record appends the table to BENCHMARKS.md.
//
// Configurations: the CPU path; the GPU path with the weights in wasm memory too (weightsOutside:
// false, the GPU path before one copy); the GPU path with one copy. SwiftShader stands in for a
// GPU (gpuAllowSoftware), so the GPU rows measure memory, not speed.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, ensureModel, machineInfo, markdownTable, appendBenchmarks } from './bench-common.mjs';

const CONFIGS = {
  cpu: { device: 'cpu' },
  'gpu, weights in wasm too (before)': { device: 'gpu', gpuAllowSoftware: true, weightsOutside: false },
  'gpu, one copy (after)': { device: 'gpu', gpuAllowSoftware: true },
};

async function child(file, name, tokens) {
  process.env.VK_ICD_FILENAMES ??= '/usr/lib/chromium/vk_swiftshader_icd.json';
  const { Wick } = await import('../wasm_glue/wick.mjs');
  const engine = await Wick.load(file, { threads: 1, contextSize: 512, ...CONFIGS[name] });
  for await (const c of engine.generate('Once upon a time', { temperature: 0, maxTokens: tokens })) if (c.done) break;
  const { wasmMemoryBytes, jsBytes, gpuBytes, outsideBytes, fileBytes } = engine.info;
  const out = { device: engine.device.type, wasmMemoryBytes, jsBytes, gpuBytes, outsideBytes, fileBytes };
  await engine.unload();
  out.peakRssBytes = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify(out));
}

const opts = parseArgs(process.argv.slice(2), { model: 'models/synth-134m-q4_0.gguf', tokens: 8, record: false, child: '' });
if (opts.child) {
  await child(opts.model, opts.child, opts.tokens);
} else {
  const file = ensureModel(opts.model);
  const mib = (n) => (n / 2 ** 20).toFixed(1);
  const rows = [];
  for (const name of Object.keys(CONFIGS)) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', name, '--model', file, '--tokens', String(opts.tokens)], { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0) throw new Error(`${name}: ${r.stderr}`);
    const m = JSON.parse(r.stdout.trim().split('\n').at(-1));
    rows.push([name, m.device, mib(m.fileBytes), mib(m.wasmMemoryBytes), mib(m.jsBytes), mib(m.gpuBytes), mib(m.peakRssBytes)]);
  }
  const simd = (/^flags\s*:\s*(.+)$/m.exec(fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '')?.[1] || '').split(' ')
    .filter((f) => /^(sse4_1|sse4_2|avx|avx2|fma|f16c|bmi2|avx512f|avx512bw|avx512vl|avx512_vnni|avx_vnni)$/.test(f)).join(' ');
  const table = markdownTable(['load', 'device', 'file MiB', 'wasm memory MiB', 'JS holds MiB', 'GPU buffers MiB', 'peak RSS MiB'], rows);
  const body = `${path.basename(file)}, ${opts.tokens} tokens generated, context 512, one thread, each load in a fresh Node process; SIMD flags: ${simd}. ` +
    'Peak RSS is the process\'s peak resident set: JS, wasm memory and, on SwiftShader, the GPU buffers (host memory there).\n\n' + table;
  console.log(`${machineInfo()}\n\n${body}`);
  if (opts.record) appendBenchmarks('Peak memory of a load: one copy of the weights on the GPU path', `node tools/bench-memory.mjs --model ${opts.model} --tokens ${opts.tokens} --record`, body);
}
