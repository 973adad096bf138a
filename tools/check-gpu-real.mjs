#!/usr/bin/env node
// tools/check-gpu-real.mjs — `npm run check:gpu-real`: wick's WebGPU path on a real GPU, for a
// Linux machine with a GPU and a Vulkan driver (Node's npm package `webgpu` is Dawn, which runs on
// Vulkan there). It finds the adapter without forcing SwiftShader (WICK_GPU_REAL=1 keeps the GPU
// suites from setting VK_ICD_FILENAMES), refuses when the only adapter is a software one unless
// --allow-software, runs the GPU test suites under Node (tests/gpu-*.test.mjs but the Chromium
// one) on that adapter, then measures prefill and decode tokens/s of the GPU path against the CPU
// path (the wasm build, all cores) on the synthetic 134m and 1b files in Q4_0 and Q4_K_M (made by
// `wick synth` on first use, in models/), and prints one table. About 10 minutes at most.
//
//   node tools/check-gpu-real.mjs [--allow-software] [--quick] [--suites gpu-kernels,gpu-glue | none]
//        [--models models/synth-134m-q4_0.gguf,…] [--prompt-tokens 128] [--tokens 32] [--threads N]
//        [--paths cpu,rows,auto] [--budget 540] [--record]
//   node tools/check-gpu-real.mjs --bundle wick-gpu-check.tar.gz   (for a machine with no registry)
//
// --quick: the 134m Q4_0 file only, a 16-token prompt, 4 decoded tokens, the gpu-kernels suite,
// the CPU and the decode kernels rows and mv
// (a run of the whole script in a minute or two; tests/check-gpu-real.test.mjs runs it so on
// SwiftShader). --paths: what is measured on each file, in this order: cpu (the wasm build), and the
// GPU path with each decode kernel named (backend.mjs DECODE_KERNELS: rows, the workgroup-per-row
// kernel of before; mv and mv_sg, the one-token kernels; mv_q8 and mv_q8_sg, those with 8-bit
// activations; auto, what a load takes: mv_q8_sg on AMD, Intel and NVIDIA, else mv_sg where the
// device has subgroups). --record appends the table to BENCHMARKS.md. --budget: seconds after which the
// models not yet measured are skipped (said in the table). Exit status: 0 when every suite passed
// and every measurement ran, 1 otherwise, 2 when refused (no adapter, or only a software one).
// --bundle FILE writes a .tar.gz with what the check needs and nothing else to install but Node and
// the Vulkan loader: the repository's files, build/ (run `make` first), the node_modules it uses
// (webgpu with Dawn's linux-x64 module, @huggingface/jinja, node-llama-cpp's llama.cpp source
// bundle) and ../shared's models, references and vocabularies, as wick/ and shared/ (README, "A
// real GPU").
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ROOT, parseArgs, list, ensureModel, modelLabel, buildPrompt, markdownTable, fmt, appendBenchmarks, machineInfo } from './bench-common.mjs';

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
const DEFAULTS = {
  allowSoftware: false,
  quick: false,
  suites: '',
  models: 'models/synth-134m-q4_0.gguf,models/synth-134m-q4_k_m.gguf,models/synth-1b-q4_0.gguf,models/synth-1b-q4_k_m.gguf',
  promptTokens: 128,
  tokens: 32,
  threads: 0,
  paths: 'cpu,rows,auto',
  budget: 540,
  record: false,
  bundle: '',
};
const QUICK = { models: 'models/synth-134m-q4_0.gguf', promptTokens: 16, tokens: 4, suites: 'gpu-kernels', paths: 'cpu,rows,mv' };
const MiB = 1024 * 1024;
// two decimals, or two significant digits below 0.1 (a software adapter's 0.0035)
const ratio = (x) => (Number.isFinite(x) && x > 0 && x < 0.1 ? x.toPrecision(2) : fmt(x, 2));
const log = (s) => process.stderr.write(`check-gpu-real: ${s}\n`);

/** The adapter Dawn finds with this environment, asked in a child process (Dawn reads
 * VK_ICD_FILENAMES once per process): {description, software} or {reason}. */
function probeAdapter(env) {
  const backend = pathToFileURL(path.join(ROOT, 'wasm_glue', 'gpu', 'backend.mjs')).href;
  const code = `const b = await import(${JSON.stringify(backend)}); const f = await b.findAdapter();
    console.log(JSON.stringify(f.adapter ? { description: f.description, software: f.software } : { reason: f.reason })); process.exit(0);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { env, encoding: 'utf8', timeout: 60000 });
  const line = r.stdout?.trim().split('\n').pop();
  try {
    return JSON.parse(line);
  } catch {
    return { reason: `the adapter probe failed: ${(r.stderr || r.error?.message || '').trim().split('\n').pop()}` };
  }
}

/** The adapter to run on and the environment that selects it, or an exit with the reason. */
function chooseAdapter(allowSoftware) {
  const real = { ...process.env, WICK_GPU_REAL: '1' };
  const found = probeAdapter(real);
  if (found.description && !found.software) return { ...found, env: real };
  if (!allowSoftware) {
    log(found.description
      ? `the only WebGPU adapter is a software one (${found.description}): its speed says nothing about a GPU. Check the vendor's Vulkan driver (vulkaninfo --summary), or pass --allow-software to run anyway`
      : `no WebGPU adapter (${found.reason}): this needs a GPU with a Vulkan driver (libvulkan1 and the vendor's ICD), or --allow-software with SwiftShader`);
    process.exit(2);
  }
  if (found.description) return { ...found, env: real };
  // SwiftShader, as the test suites use it
  const env = { ...process.env, VK_ICD_FILENAMES: process.env.VK_ICD_FILENAMES || SWIFTSHADER_ICD };
  delete env.WICK_GPU_REAL;
  const soft = probeAdapter(env);
  if (!soft.description) {
    log(`no WebGPU adapter, not even SwiftShader (${soft.reason})`);
    process.exit(2);
  }
  return { ...soft, env };
}

/** The GPU suites under Node (not the Chromium one), one process each: {name, pass, fail, skipped, seconds}. */
async function runSuites(names, env) {
  const results = [];
  // a node --test inside another (this script run by a test) would otherwise skip its files
  env = { ...env };
  delete env.NODE_TEST_CONTEXT;
  for (const name of names) {
    const file = path.join('tests', `${name}.test.mjs`);
    if (!fs.existsSync(path.join(ROOT, file))) throw new Error(`${file} does not exist`);
    log(`running ${file}`);
    const t0 = performance.now();
    const out = await new Promise((resolve) => {
      const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (d) => { text += d; });
      child.on('close', (code) => resolve({ text, code }));
    });
    const count = (what) => Number(new RegExp(`^# ${what} (\\d+)`, 'm').exec(out.text)?.[1] ?? NaN);
    const failed = out.text.split('\n').filter((l) => /^not ok /.test(l)).map((l) => l.replace(/^not ok \d+ - /, ''));
    if (!Number.isFinite(count('pass'))) failed.push(`no test summary (exit status ${out.code})`);
    results.push({ name, pass: count('pass'), fail: count('fail'), skipped: count('skipped'), code: out.code, failed, seconds: (performance.now() - t0) / 1000 });
  }
  return results;
}

/** Prefill and decode tokens/s of one file on one device, greedy: {prefill, decode, tokens, readback}. */
async function measure(Wick, file, device, opts, software, decodeKernel = 'auto') {
  const engine = await Wick.load(file, {
    device, gpuAllowSoftware: software, contextSize: Math.max(256, opts.promptTokens + opts.tokens + 16), gpuDecodeKernel: decodeKernel,
    ...(opts.threads ? { threads: opts.threads } : {}),
  });
  try {
    if (device === 'gpu' && engine.device.type !== 'gpu') throw new Error(`the GPU path was not taken: ${engine.device.reason}`);
    const { ids } = buildPrompt(file, opts.promptTokens);
    const run = async (prompt, maxTokens) => {
      const tokens = [];
      let done = null;
      for await (const c of engine.generate(prompt, { temperature: 0, maxTokens, ignoreEos: true })) {
        if (c.done) done = c;
        else tokens.push(...c.tokens);
      }
      return { tokens, timings: done.timings };
    };
    // a first short run (shaders and buffers warm; its prompt shares only BOS with the measured one)
    await run([ids[0], ...ids.slice(1, 9).reverse()], 2);
    const r = await run(ids, opts.tokens);
    return {
      prefill: r.timings.prefillTokensPerSecond, decode: r.timings.decodeTokensPerSecond, tokens: r.tokens,
      evaluated: r.timings.promptEvalTokens, readback: r.timings.gpuReadbackBytes,
      threads: engine.info.threads, build: engine.info.build, decodeKernel: engine.device.decodeKernel,
    };
  } finally {
    await engine.unload();
  }
}

function bundle(out) {
  const shared = process.env.WICK_SHARED || path.resolve(ROOT, '..', 'shared');
  const need = [path.join(ROOT, 'build', 'native', 'wick'), path.join(ROOT, 'build', 'wasm', 'wick.wasm'), path.join(ROOT, 'node_modules', 'webgpu', 'package.json'), path.join(shared, 'models')];
  for (const p of need) if (!fs.existsSync(p)) throw new Error(`${p} is missing (make, npm ci and ../shared first)`);
  const tracked = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (tracked.status !== 0) throw new Error(`git ls-files: ${tracked.stderr}`);
  const files = tracked.stdout.split('\0').filter((f) => f && fs.existsSync(path.join(ROOT, f)) && f !== 'node_modules');
  const wasm = fs.readdirSync(path.join(ROOT, 'build', 'wasm')).filter((f) => /\.(js|wasm|json)$/.test(f)).map((f) => `build/wasm/${f}`);
  const webgpu = fs.readdirSync(path.join(ROOT, 'node_modules', 'webgpu')).filter((f) => f !== 'dist').map((f) => `node_modules/webgpu/${f}`);
  const repo = [...files, 'build/native/wick', ...wasm, ...webgpu, 'node_modules/webgpu/dist/linux-x64', 'node_modules/@huggingface/jinja',
    'node_modules/node-llama-cpp/llama/gitRelease.bundle'].map((f) => `./${f}`);
  const listFile = path.join(os.tmpdir(), `wick-bundle-${process.pid}.txt`);
  fs.writeFileSync(listFile, repo.join('\n'));
  try {
    // the repository's paths as wick/…, ../shared's as shared/… (tests find it beside the repository);
    // -h: node_modules may be a link to another checkout's
    const r = spawnSync('tar', ['-czhf', path.resolve(out), '--transform', 's,^\\./,wick/,', '-C', ROOT, '-T', listFile,
      '-C', path.dirname(shared), ...['models', 'reference', 'vocab', 'README.md'].map((d) => path.join(path.basename(shared), d))], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('tar failed');
  } finally {
    fs.rmSync(listFile, { force: true });
  }
  log(`wrote ${out} (${fmt(fs.statSync(out).size / MiB)} MiB): on the GPU machine, tar -xzf ${path.basename(out)} && cd wick && node tools/check-gpu-real.mjs`);
}

async function main(argv) {
  const opts = parseArgs(argv, DEFAULTS);
  if (opts.bundle) return bundle(opts.bundle), 0;
  if (opts.quick) for (const [k, v] of Object.entries(QUICK)) if (!argv.includes(`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`)) opts[k] = v;
  const t0 = performance.now();
  const adapter = chooseAdapter(opts.allowSoftware);
  log(`adapter: ${adapter.description}${adapter.software ? ' (software: the numbers mean nothing)' : ''}`);
  // this process's own loads (the worker's Dawn) see the same environment
  for (const k of ['VK_ICD_FILENAMES', 'WICK_GPU_REAL']) {
    if (adapter.env[k] === undefined) delete process.env[k];
    else process.env[k] = adapter.env[k];
  }

  const suiteNames = opts.suites === 'none' ? [] : opts.suites ? list(opts.suites)
    : fs.readdirSync(path.join(ROOT, 'tests')).filter((f) => /^gpu-.*\.test\.mjs$/.test(f) && f !== 'gpu-browser.test.mjs').map((f) => f.replace(/\.test\.mjs$/, '')).sort();
  const suites = await runSuites(suiteNames, adapter.env);

  const { Wick } = await import('../wasm_glue/wick.mjs');
  const rows = [];
  let cpuBuild = 'the wasm build';
  let failures = suites.filter((s) => s.fail !== 0 || s.code !== 0).length;
  const paths = list(opts.paths);
  const { DECODE_KERNELS } = await import('../wasm_glue/gpu/backend.mjs');
  for (const p of paths) if (p !== 'cpu' && !DECODE_KERNELS.includes(p)) throw new Error(`--paths: ${p} is not cpu or a decode kernel (${DECODE_KERNELS.join(', ')})`);
  for (const file of list(opts.models)) {
    const label = modelLabel(file);
    if ((performance.now() - t0) / 1000 > opts.budget) {
      rows.push([label, '—', '—', '—', '—', '—', `skipped: past the ${opts.budget} s budget`]);
      continue;
    }
    let model, cpu = null, first = null;
    try {
      model = ensureModel(file);
    } catch (e) {
      failures++;
      rows.push([label, '—', '—', '—', '—', '—', `failed: ${e.message}`]);
      continue;
    }
    const mib = fmt(fs.statSync(model).size / MiB, 0);
    for (const p of paths) {
      try {
        log(`${label}: ${p === 'cpu' ? 'CPU path' : `GPU path, decode kernel ${p}`}`);
        const r = p === 'cpu' ? await measure(Wick, model, 'cpu', opts, false) : await measure(Wick, model, 'gpu', opts, adapter.software, p);
        let notes;
        if (p === 'cpu') {
          cpu = r;
          cpuBuild = `${r.build}, ${r.threads} thread${r.threads === 1 ? '' : 's'}`;
          notes = '';
        } else {
          const ref = cpu || first;
          const same = ref ? ref.tokens.findIndex((t, i) => t !== r.tokens[i]) : -1;
          notes = `${fmt(r.readback / (r.tokens.length || 1), 0)} B${ref ? `; greedy tokens equal ${same < 0 ? ref.tokens.length : same} of ${ref.tokens.length}${cpu ? '' : ' (the first GPU row\'s)'}` : ''}`;
          first ??= r;
        }
        rows.push([label, mib, p === 'cpu' ? 'CPU' : `GPU ${r.decodeKernel}`, fmt(r.prefill), fmt(r.decode, 2), cpu && p !== 'cpu' ? ratio(r.decode / cpu.decode) : '—', notes]);
      } catch (e) {
        failures++;
        rows.push([label, mib, p === 'cpu' ? 'CPU' : `GPU ${p}`, '—', '—', '—', `failed: ${e.message}`]);
      }
    }
  }
  const table = markdownTable(['model', 'MiB', 'path', 'prefill tok/s', 'decode tok/s', 'decode ÷ CPU', 'GPU readback per token; notes'], rows);
  const suiteLine = suites.length
    ? suites.map((s) => `${s.name} ${s.pass} passed, ${s.fail} failed, ${s.skipped} skipped (${fmt(s.seconds, 0)} s)${s.failed.length ? `: ${s.failed.join('; ')}` : ''}`).join('; ')
    : 'none run';
  const notes = [
    `- adapter: ${adapter.description}${adapter.software ? ' — a software adapter (SwiftShader computes on the CPU): these tokens/s say nothing about a GPU' : ''}`,
    `- GPU suites (Node, this adapter): ${suiteLine}`,
    `- prompt ${opts.promptTokens} tokens, then ${opts.tokens} greedy tokens; GPU rows by decode kernel (rows: matmul.wgsl main_wg, a workgroup per row, prompts in batches of 32; mv: main_mv, 4 rows per 256-thread workgroup, prompts through main_gemm in batches of 256; mv_sg: main_mv with subgroupAdd; on a software adapter prompts go through main in batches of 32); CPU: the wasm build under Node (${cpuBuild}; --threads sets them); GPU: device 'gpu' (the top-k readback on); machine: ${machineInfo()}; ${fmt((performance.now() - t0) / 1000, 0)} s in all`,
  ].join('\n');
  const text = `${table}\n\n${notes}`;
  process.stdout.write(`${text}\n`);
  if (opts.record) appendBenchmarks('npm run check:gpu-real', `node tools/check-gpu-real.mjs ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), text);
  return failures ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    console.error(`check-gpu-real: ${e.message}`);
    process.exit(1);
  });
}
