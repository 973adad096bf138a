#!/usr/bin/env node
// tools/bench-first.mjs — `npm run bench:first`: the time to the first token of the first prompt
// after a load against the second's (issue 33), in headless Chromium (Debian's /usr/bin/chromium,
// playwright-core) through the public API (Wick.load, engine.generate) on a cross-origin isolated
// page from 127.0.0.1. A browser compiles wasm with a baseline compiler first and optimizes a
// function only after it has run a while, so a user's first question ran in slower code than the
// next; the load's warm-up evaluation (LoadOptions.warmUp, on by default) is meant to close that.
// Each repeat loads the model afresh in a new page (cache: false, a new worker, new wasm), asks
// prompt A (maxTokens 1), then prompt B of the same length with no common prefix; both with and
// without the warm-up, interleaved, so that the machine's noise falls on both alike.
//
//   node tools/bench-first.mjs [--models models/synth-134m-q4_k_m.gguf,models/synth-1b-q4_k_m.gguf]
//       [--threads 2] [--prompt-tokens 94] [--repeat 5] [--idle-wait 30] [--record]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from './serve.mjs';
import { ROOT, parseArgs, list, ensureModel, modelLabel, fmt, markdownTable, appendBenchmarks, waitForIdle } from './bench-common.mjs';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const DEFAULTS = {
  models: 'models/synth-134m-q4_k_m.gguf,models/synth-1b-q4_k_m.gguf', threads: '2', promptTokens: 94, repeat: 5,
  idleWait: 30, record: false,
};
const log = (s) => process.stderr.write(`bench:first: ${s}\n`);

/** In the page: loads the model, asks two prompts of the same length, returns both times to the first token. */
const firstAndSecond = async ({ url, threads, warmUp, idsA, idsB }) => {
  const engine = await window.Wick.load(url, { cache: false, threads, warmUp });
  try {
    const ttft = async (ids) => {
      let final;
      for await (const c of engine.generate(ids, { maxTokens: 1, temperature: 0 })) if (c.done) final = c;
      return { ms: final.timings.timeToFirstTokenMs, evaluated: final.timings.promptEvalTokens };
    };
    const a = await ttft(idsA), b = await ttft(idsB);
    return { first: a.ms, second: b.ms, evaluated: [a.evaluated, b.evaluated], warmUpMs: engine.info.warmUpMs, build: engine.build };
  } finally {
    await engine.unload();
  }
};

const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function main(argv) {
  const opts = parseArgs(argv, DEFAULTS);
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  const { chromium } = await import('playwright-core');
  const server = createServer(ROOT, { isolate: true });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-first-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const rows = [], notes = [];
  const started = Date.now();
  try {
    for (const file of list(opts.models)) {
      const model = ensureModel(file);
      const label = modelLabel(model);
      const url = `/${path.relative(ROOT, model).split(path.sep).join('/')}`;
      // two prompts of token ids with no common prefix past BOS (the generator reuses a cached prefix)
      const n = opts.promptTokens;
      const idsA = [1, ...Array.from({ length: n - 1 }, (_, i) => 300 + ((i * 37) % 5000))];
      const idsB = [1, ...Array.from({ length: n - 1 }, (_, i) => 6000 + ((i * 53) % 5000))];
      for (const threads of list(opts.threads).map(Number)) {
        const runs = { true: [], false: [] };
        for (let r = 0; r < opts.repeat; r++) {
          for (const warmUp of [false, true]) {
            const busy = await waitForIdle(opts.idleWait);
            if (busy !== null && busy >= 0.15) notes.push(`${label} t${threads} warmUp ${warmUp} run ${r + 1}: other work kept ${(busy * 100).toFixed(0)}% of the CPU busy`);
            const page = await context.newPage();
            try {
              await page.goto(`${base}/tools/bench-page/api.html`);
              await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30000 });
              if (!await page.evaluate(() => self.crossOriginIsolated)) throw new Error('the page is not cross-origin isolated');
              const x = await page.evaluate(firstAndSecond, { url, threads, warmUp, idsA, idsB });
              if (x.evaluated[0] !== n || x.evaluated[1] !== n - 1) notes.push(`${label}: evaluated ${x.evaluated.join(' and ')} prompt tokens, not ${n} and ${n - 1}`);
              runs[warmUp].push(x);
              log(`${label} t${threads} warmUp ${warmUp}: first ${fmt(x.first)} ms, second ${fmt(x.second)} ms (warm-up ${fmt(x.warmUpMs)} ms, ${x.build})`);
            } finally {
              await page.close().catch(() => {});
            }
          }
        }
        for (const warmUp of [false, true]) {
          const v = runs[warmUp];
          const first = median(v.map((x) => x.first)), second = median(v.map((x) => x.second));
          const ratios = v.map((x) => x.first / x.second);
          rows.push([label, String(threads), warmUp ? 'on' : 'off', fmt(median(v.map((x) => x.warmUpMs))), fmt(first), fmt(second),
            `${median(ratios).toFixed(2)}×`, `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`]);
        }
      }
    }
  } finally {
    await context.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
    server.close();
  }
  const table = markdownTable(['model', 'threads', 'warm-up', 'warm-up ms', 'first prompt TTFT ms', 'second prompt TTFT ms', 'first / second (median)', 'range'], rows);
  const method = `Headless Chromium, the public API (Wick.load with cache: false, then engine.generate of ${opts.promptTokens} token ids and of ${opts.promptTokens} others ` +
    `sharing only BOS, maxTokens 1, temperature 0): time to the first token of each (timings.timeToFirstTokenMs); each of ${opts.repeat} repeats loads the model ` +
    `in a new page (a new worker and wasm instance), with and without the load's warm-up, interleaved; medians; ${((Date.now() - started) / 1000).toFixed(0)} s in all.`;
  const body = `${table}\n\n${method}${notes.length ? `\n\nNotes:\n${notes.map((x) => `- ${x}`).join('\n')}` : ''}`;
  process.stdout.write(`${body}\n`);
  if (opts.record) appendBenchmarks('npm run bench:first', `npm run bench:first -- ${argv.filter((a) => a !== '--record').join(' ')}`.trim(), body);
}

main(process.argv.slice(2)).then(() => process.exit(0), (e) => { process.stderr.write(`bench:first: ${e.stack || e}\n`); process.exit(1); });
