// tests/package.test.mjs — the npm package as a web developer gets it. `npm pack` (its prepack
// runs `make dist`) gives a tarball: its files (dist/ with both wasm builds, no C sources, tests
// or models), its size (under 3 MB unpacked) and its package.json (exports, no install scripts).
// Installed into a new app with `npm install --prefer-offline`:
//   - under Node, the README's snippet and the same code given to `node --input-type=module`
//     (with -e and on stdin) load stories260K from a local HTTP server and give the reference
//     greedy text; a chat template renders with @huggingface/jinja found by name;
//   - the example apps of examples/ build from the tarball with Vite and with esbuild and, in
//     Debian's Chromium, stream the reference greedy text: Vite's page cross-origin isolated
//     (the pthreads build), esbuild's both isolated and not (the single-threaded build).
// One pack and one build of each example per run; everything talks to 127.0.0.1 only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from '../tools/serve.mjs';
import { root, models, loadReference } from './helpers.mjs';
import { launchBrowser } from './browser.mjs';
import { readmeBlock } from './readme.mjs';

const MAX_UNPACKED_BYTES = 4 * 1024 * 1024; // four engine builds (plain and relaxed SIMD, one thread and pthreads) and the glue
const README_MODEL_URL = 'https://example.org/models/stories260K.gguf'; // the Node snippet's, replaced by the local server's
const NPM_INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund'];
const stories = loadReference('stories260K.json');

let work, tarball, servers = [], browser;

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 300000, ...opts });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${opts.cwd || root}) failed:\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** run() without blocking this process (whose HTTP server the command talks to). */
function runAsync(cmd, args, { input, timeout = 60000, ...opts } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
    let stdout = '', stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill(), timeout);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      if (status === 0) resolve({ stdout, stderr });
      else reject(new Error(`${cmd} ${args.join(' ')} ended with ${status ?? signal}:\n${stdout}\n${stderr}`));
    });
    child.stdin.end(input ?? '');
  });
}

async function serve(dir, isolate) {
  const server = createServer(dir, { isolate });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${server.address().port}`;
}

/** A copy of examples/NAME with the tarball installed as its `wick` dependency. */
function exampleApp(name) {
  const app = path.join(work, name);
  fs.cpSync(path.join(root, 'examples', name), app, { recursive: true, filter: (f) => !/node_modules|[\\/]dist$|[\\/]build$/.test(path.relative(root, f)) });
  run('npm', [...NPM_INSTALL, tarball], { cwd: app });
  return app;
}

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-package-'));
  const packs = path.join(work, 'packs');
  fs.mkdirSync(packs);
  run('npm', ['pack', '--pack-destination', packs], { cwd: root });
  const made = fs.readdirSync(packs).filter((f) => f.endsWith('.tgz'));
  assert.equal(made.length, 1, `npm pack made ${made.join(', ')}`);
  tarball = path.join(packs, made[0]);
});

after(async () => {
  await browser?.close();
  for (const s of servers) { s.closeAllConnections(); s.close(); }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test('the tarball holds the glue, its types, the four wasm builds, the worker and <wick-chat>, and nothing else', (t) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.equal(path.basename(tarball), `${pkg.name}-${pkg.version}.tgz`);
  const unpacked = path.join(work, 'unpacked');
  fs.mkdirSync(unpacked);
  run('tar', ['xzf', tarball, '-C', unpacked]);
  const files = fs.readdirSync(path.join(unpacked, 'package'), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile()).map((d) => path.relative(path.join(unpacked, 'package'), path.join(d.parentPath ?? d.path, d.name)).split(path.sep).join('/'));
  for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/wick.mjs', 'dist/wick.d.ts', 'dist/worker.js', 'dist/download.js', 'dist/gguf-header.js', 'dist/constants.js', 'dist/chat-template.mjs', 'dist/tool-calls.mjs',
    'dist/retrieval.mjs', 'dist/retrieval.d.ts', 'dist/wick-chat.js', 'dist/coi.js', 'dist/coi-sw.js', 'dist/engine-worker.js', 'dist/util.js', 'dist/jinja/index.js',
    'dist/wasm/package.json', 'dist/wasm/wick.js', 'dist/wasm/wick.wasm', 'dist/wasm/wick-mt.js', 'dist/wasm/wick-mt.wasm', 'dist/wasm/wick-mt.worker.js',
    'dist/wasm/wick-relaxed.js', 'dist/wasm/wick-relaxed.wasm', 'dist/wasm/wick-mt-relaxed.js', 'dist/wasm/wick-mt-relaxed.wasm',
    'dist/wasm/wick-mt-relaxed.worker.js', 'dist/wick-shell.json']) {
    assert.ok(files.includes(f), `${f} is in the package (it holds ${files.join(', ')})`);
  }
  const strays = files.filter((f) => !/^(package\.json|README\.md|LICENSE|dist\/.+)$/.test(f) || /\.(c|h|gguf|bin)$|test|bench|cli\.mjs/.test(f));
  assert.deepEqual(strays, [], 'no C sources, tests, models or CLI');
  const bytes = files.reduce((n, f) => n + fs.statSync(path.join(unpacked, 'package', f)).size, 0);
  assert.ok(bytes < MAX_UNPACKED_BYTES, `unpacked ${bytes} bytes, under ${MAX_UNPACKED_BYTES}`);
  t.diagnostic(`${path.basename(tarball)}: ${fs.statSync(tarball).size} bytes packed, ${bytes} unpacked, ${files.length} files`);

  const packed = JSON.parse(fs.readFileSync(path.join(unpacked, 'package', 'package.json'), 'utf8'));
  assert.equal(packed.private, undefined, 'publishable');
  assert.deepEqual(Object.keys(packed.exports['.']), ['types', 'import', 'default']);
  for (const target of Object.values(packed.exports['.'])) assert.ok(files.includes(target.replace(/^\.\//, '')), target);
  // wick/retrieval: the retrieval helper and its types
  for (const target of Object.values(packed.exports['./retrieval'])) assert.ok(files.includes(target.replace(/^\.\//, '')), target);
  assert.ok(packed.sideEffects, 'sideEffects is declared');
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) assert.equal(packed.scripts?.[hook], undefined, `no ${hook} script`);
});

test('installed into a new app, Node imports { Wick } and generates the reference greedy text (README snippet, -e, stdin)', { timeout: 120000 }, async () => {
  const app = path.join(work, 'node-app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'node-app', private: true, type: 'module' }));
  run('npm', [...NPM_INSTALL, tarball], { cwd: app });
  const base = await serve(models, false);

  const snippet = readmeBlock('node');
  assert.ok(snippet.includes(README_MODEL_URL), `the README's Node snippet loads ${README_MODEL_URL}`);
  const code = snippet.replace(README_MODEL_URL, `${base}/stories260K.gguf`);
  fs.writeFileSync(path.join(app, 'main.mjs'), code);
  // the snippet and the same code run by `node --input-type=module`: the engine's worker must
  // not inherit --input-type (a worker started with it dies at once with E_WORKER)
  const ways = [
    ['a file', [process.execPath, ['main.mjs']]],
    ['-e', [process.execPath, ['--input-type=module', '-e', code]]],
    ['stdin', [process.execPath, ['--input-type=module'], { input: code }]],
  ];
  for (const [label, [cmd, args, extra]] of ways) {
    const r = await runAsync(cmd, args, { cwd: app, ...extra });
    assert.equal(r.stdout, stories.greedy_text, `${label}: the reference text`);
  }

  const chat = run(process.execPath, ['--input-type=module', '-e', `
    import { Wick } from 'wick';
    console.log(await Wick.renderChatTemplate("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}", [{ role: 'user', content: 'Hello' }]));`], { cwd: app });
  assert.equal(chat.stdout.trim(), '<user>Hello');
});

async function launch() {
  browser ??= await launchBrowser();
  return browser;
}

// wick.mjs imports gguf-header.js for its side effect (it defines WickGguf, which Wick.inspect
// uses): package.json's sideEffects must keep a bundler from dropping it
const HEADER_READER_CODE = 'the GGUF header needs more than';

/** Opens an example's page, presses Generate and returns what it streamed. */
async function generateInPage(base) {
  const context = await (await launch()).newContext();
  const page = await context.newPage();
  const errors = [], missing = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('response', (r) => { if (r.status() >= 400) missing.push(`${r.status()} ${r.url()}`); });
  try {
    await page.goto(`${base}/index.html`);
    await page.locator('button:not([disabled])').waitFor({ timeout: 30000 });
    const env = await page.evaluate(() => ({ isolated: globalThis.crossOriginIsolated, status: document.querySelector('#status').textContent }));
    // count the pieces as they arrive: the text must stream, not appear at the end
    await page.evaluate(() => {
      window.pieces = 0;
      new MutationObserver(() => window.pieces++).observe(document.querySelector('#out'), { childList: true, characterData: true, subtree: true });
    });
    await page.locator('button').click();
    await page.waitForSelector('body[data-state=done]', { timeout: 60000 });
    const text = await page.locator('#out').textContent();
    const pieces = await page.evaluate(() => window.pieces);
    assert.deepEqual(errors, []);
    assert.deepEqual(missing, []);
    return { text, pieces, ...env };
  } finally {
    await context.close();
  }
}

test('the Vite example builds from the tarball and streams the reference greedy text in Chromium', { timeout: 180000 }, async () => {
  const app = exampleApp('vite');
  assert.equal(fs.readFileSync(path.join(app, 'vite.config.js'), 'utf8'), readmeBlock('examples/vite/vite.config.js'));
  assert.equal(fs.readFileSync(path.join(app, 'src', 'main.js'), 'utf8'), readmeBlock('examples/main.js'));
  fs.mkdirSync(path.join(app, 'public'), { recursive: true });
  fs.copyFileSync(path.join(models, 'stories260K.gguf'), path.join(app, 'public', 'stories260K.gguf'));
  run('npm', ['run', 'build'], { cwd: app });
  const assets = fs.readdirSync(path.join(app, 'dist', 'assets'));
  for (const re of [/^wick-.*\.wasm$/, /^wick-mt-.*\.wasm$/, /^worker-.*\.js$/]) assert.ok(assets.some((f) => re.test(f)), `Vite copied ${re} (${assets.join(', ')})`);
  const entry = assets.find((f) => /^index-.*\.js$/.test(f));
  assert.ok(fs.readFileSync(path.join(app, 'dist', 'assets', entry), 'utf8').includes(HEADER_READER_CODE), 'the bundle keeps gguf-header.js');

  const r = await generateInPage(await serve(path.join(app, 'dist'), true));
  assert.equal(r.isolated, true);
  assert.match(r.status, /multi-threaded build/);
  assert.equal(r.text, stories.greedy_text);
  assert.ok(r.pieces > 10, `streamed in ${r.pieces} pieces`);
});

test('the esbuild example builds from the tarball and streams the reference greedy text, with and without isolation', { timeout: 180000 }, async () => {
  const app = exampleApp('esbuild');
  assert.equal(fs.readFileSync(path.join(app, 'build.mjs'), 'utf8'), readmeBlock('examples/esbuild/build.mjs'));
  assert.equal(fs.readFileSync(path.join(app, 'src', 'main.js'), 'utf8'), readmeBlock('examples/main.js'));
  fs.copyFileSync(path.join(models, 'stories260K.gguf'), path.join(app, 'public', 'stories260K.gguf'));
  run('npm', ['run', 'build'], { cwd: app });
  assert.ok(fs.readFileSync(path.join(app, 'public', 'build', 'main.js'), 'utf8').includes(HEADER_READER_CODE), 'the bundle keeps gguf-header.js');

  const isolated = await generateInPage(await serve(path.join(app, 'public'), true));
  assert.equal(isolated.isolated, true);
  assert.match(isolated.status, /multi-threaded build/);
  assert.equal(isolated.text, stories.greedy_text);
  assert.ok(isolated.pieces > 10, `streamed in ${isolated.pieces} pieces`);

  const plain = await generateInPage(await serve(path.join(app, 'public'), false));
  assert.equal(plain.isolated, false);
  assert.match(plain.status, /single-threaded build/);
  assert.equal(plain.text, stories.greedy_text);
});
