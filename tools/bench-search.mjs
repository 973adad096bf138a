#!/usr/bin/env node
// tools/bench-search.mjs — `npm run bench:search`: retrieval.mjs's exact cosine search over 10,000
// stored chunks of 384 dimensions (bge-small's), timed under Node and in headless Chromium
// (Debian's /usr/bin/chromium through playwright-core, the page served from 127.0.0.1 by
// tools/serve.mjs), appended to BENCHMARKS.md with the machine and its SIMD flags.
//   node tools/bench-search.mjs [--count 10000,50000] [--dim 384] [--k 5] [--queries 200] [--browser 1|0] [--record 1|0]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, list, fmt, markdownTable, appendBenchmarks, ROOT } from './bench-common.mjs';
import { createServer } from './serve.mjs';
import { benchSearch } from './search-bench-core.mjs';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SIMD_FLAGS = ['sse4_1', 'sse4_2', 'avx', 'avx2', 'fma', 'f16c', 'bmi2', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'avx_vnni'];
const DEFAULTS = { count: '10000,50000', dim: 384, k: 5, queries: 200, browser: 1, record: 1 };

function simdFlags() {
  try {
    const flags = new Set((/^flags\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] || '').split(/\s+/));
    return SIMD_FLAGS.filter((f) => flags.has(f)).join(' ') || 'none of the listed';
  } catch {
    return 'unknown (no /proc/cpuinfo)';
  }
}

async function inChromium(cfg) {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  const { chromium } = await import('playwright-core');
  const server = createServer(ROOT);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-bench-search-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  try {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}/tools/bench-page/search.html`);
    await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30000 });
    const version = context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1]));
    return { ...(await page.evaluate((c) => window.benchSearch(c), cfg)), version };
  } finally {
    await context.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
    server.closeAllConnections?.();
    server.close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2), DEFAULTS);
  const counts = list(args.count).map(Number);
  const cfgs = counts.map((count) => ({ count, dim: Number(args.dim), k: Number(args.k), queries: Number(args.queries) }));
  const rows = [];
  for (const cfg of cfgs) rows.push([`Node ${process.version}`, await benchSearch(cfg)]);
  for (const cfg of Number(args.browser) ? cfgs : []) {
    const c = await inChromium(cfg);
    rows.push([`Chromium ${c.version} (headless)`, c]);
  }
  const cfg = cfgs[0];
  const table = markdownTable(['where', 'chunks × dim', 'k', 'median ms', 'p95 ms', 'max ms', 'index load ms'],
    rows.map(([where, r]) => [where, `${r.count} × ${r.dim}`, r.k, fmt(r.median, 2), fmt(r.p95, 2), fmt(r.max, 2), fmt(r.loadMs, 0)]));
  const body = `${table}

One search = the query vector normalized, its dot product with every stored unit vector (one flat
Float32Array, retrieval.mjs's cosineScores, plain JavaScript), and the k best kept; ${cfg.queries} random
queries, each timed alone after 10 warm-up searches. Index load = loadIndex of the JSON's base64 vectors.
- SIMD flags of the CPU: ${simdFlags()}
- the machine was shared with other work (builds and tests of other sessions) while this ran: figures are upper bounds`;
  process.stdout.write(body + '\n');
  if (Number(args.record)) appendBenchmarks('npm run bench:search', `npm run bench:search -- ${process.argv.slice(2).join(' ')}`.trim(), body);
}

main().catch((e) => { process.stderr.write(`bench-search: ${e.stack || e}\n`); process.exit(1); });
