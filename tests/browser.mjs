// tests/browser.mjs — what the browser tests share: Debian's three browser engines (installed by
// tools/setup.sh; without one these tests fail naming its package, they are never skipped), each
// launch with a fresh temporary profile that goes away when it closes and nothing reaching past
// 127.0.0.1: Chromium headless through playwright-core; Firefox ESR headless over WebDriver BiDi
// through puppeteer-core; WebKitGTK's MiniBrowser through WebKitWebDriver on an Xvfb display.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Sets a range, number or text control of a page (playwright) as a user would, with the events the page listens to. */
export async function setControl(page, id, value) {
  await page.evaluate(([id, value]) => {
    const input = document.getElementById(id);
    input.value = String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, value]);
}

export const CHROMIUM = '/usr/bin/chromium';
/** headless, no sandbox (containers), and nothing that would reach past 127.0.0.1 */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
/** the usual launch: no GPU (the WebGPU tests give their SwiftShader flags instead) */
export const NO_GPU_ARGS = [...CHROMIUM_ARGS, '--disable-gpu'];

async function playwright() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed: run tools/setup.sh (apt-get install chromium)`);
  return (await import('playwright-core')).chromium;
}

/** A persistent browser context with a new profile under the system's temporary folder (name:
 *  a word for the folder's name); closing it removes the profile. options go to playwright
 *  (args: NO_GPU_ARGS unless given). */
export async function launchChromium(name, options = {}) {
  const chromium = await playwright();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `wick-${name}-chromium-`));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: NO_GPU_ARGS, ...options });
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
  const close = context.close.bind(context);
  context.close = async (...a) => {
    try { await close(...a); } finally { fs.rmSync(profile, { recursive: true, force: true }); }
  };
  return context;
}

/** A browser without a persistent profile (playwright's own temporary one). */
export async function launchBrowser(options = {}) {
  const chromium = await playwright();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: NO_GPU_ARGS, ...options });
}

// ---- Firefox and WebKitGTK ----
// Both give the same small driver for one tab, so that one set of checks runs in each (see
// tests/engine-checks.mjs): { engine, version, htmlPrelude, startMayStall, goto(url), reload(),
// freshTab() (where startMayStall: the same address in a new tab),
// evaluate(fn, arg), waitFor(fn, arg, timeoutMs), consoleErrors(), close() }. htmlPrelude: what a
// page must carry first in its <head> for consoleErrors to see its errors; startMayStall: whether
// the automation itself now and then stalls a worker's start (tests/engine-checks.mjs). evaluate runs
// fn(arg) in the page (fn may be async; its result must be JSON); consoleErrors() gives, and
// forgets, the errors the page's console showed since the last call; close() ends the browser
// and removes its temporary profile.

export const FIREFOX = '/usr/bin/firefox-esr';
export const WEBKIT_DRIVER = '/usr/bin/WebKitWebDriver';
export const XVFB = '/usr/bin/Xvfb';
/** A proxy that refuses every connection: the discard port, with nothing listening on it here. */
const REFUSING_PROXY_PORT = 9;
/** How long a waitFor polls by default, and how often. */
const WAIT_MS = 120000;
const POLL_MS = 250;

function requireFile(file, pkg) {
  if (!fs.existsSync(file)) throw new Error(`${file} is not installed: run tools/setup.sh (apt-get install ${pkg})`);
}

async function pollUntil(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Firefox's preferences beyond puppeteer's own test profile: every connection that is not to
 *  127.0.0.1 or localhost goes to a proxy that refuses it, and the services that would try one
 *  (telemetry, updates, captive-portal and connectivity checks, remote settings, push) are off. */
const FIREFOX_PREFS = {
  'network.proxy.type': 1,
  'network.proxy.http': '127.0.0.1',
  'network.proxy.http_port': REFUSING_PROXY_PORT,
  'network.proxy.share_proxy_settings': true,
  'network.proxy.ssl': '127.0.0.1',
  'network.proxy.ssl_port': REFUSING_PROXY_PORT,
  'network.proxy.allow_hijacking_localhost': false,
  'network.dns.disablePrefetch': true,
  'network.prefetch-next': false,
  'network.predictor.enabled': false,
  'network.trr.mode': 5,
  'network.captive-portal-service.enabled': false,
  'captivedetect.canonicalURL': '',
  'network.connectivity-service.enabled': false,
  'toolkit.telemetry.enabled': false,
  'toolkit.telemetry.unified': false,
  'toolkit.telemetry.archive.enabled': false,
  'toolkit.telemetry.server': '',
  'app.update.auto': false,
  'app.shield.optoutstudies.enabled': false,
  'messaging-system.rsexperimentloader.enabled': false,
  'browser.region.network.url': '',
  'browser.region.update.enabled': false,
  'extensions.blocklist.enabled': false,
  'dom.push.connection.enabled': false,
  'geo.provider.network.url': '',
  // remote settings (blocklists, search configuration, experiments: two dozen collections asked
  // for at start) retry many times a second through the refusing proxy; pointed at 127.0.0.1
  // they fail once each.
  // Firefox honours this preference only with MOZ_REMOTE_SETTINGS_DEVTOOLS set (see the launch).
  'services.settings.server': `http://127.0.0.1:${REFUSING_PROXY_PORT}/v1`,
};

/** Debian's Firefox ESR, headless, driven over WebDriver BiDi by puppeteer-core (never a
 *  downloaded browser), with a new profile under the system's temporary folder. */
export async function launchFirefox(name) {
  requireFile(FIREFOX, 'firefox-esr');
  const puppeteer = (await import('puppeteer-core')).default;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `wick-${name}-firefox-`));
  let browser;
  try {
    browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile,
      extraPrefsFirefox: FIREFOX_PREFS, protocolTimeout: 300000, env: { ...process.env, MOZ_REMOTE_SETTINGS_DEVTOOLS: '1' } });
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
  let errors = [];
  const watch = (tab) => {
    tab.on('console', (m) => {
      if (process.env.WICK_DEBUG) console.log('console:', m.type(), m.text());
      if (m.type() === 'error') errors.push(m.text());
    });
    tab.on('pageerror', (e) => errors.push(e.message));
    return tab;
  };
  let page = watch((await browser.pages())[0] ?? await browser.newPage());
  const navigation = { waitUntil: 'load', timeout: WAIT_MS };
  return {
    engine: 'firefox',
    version: await browser.version(),
    htmlPrelude: '',
    // the remote agent watches every worker of a BiDi session: see tests/engine-checks.mjs
    startMayStall: true,
    async goto(url) { await page.goto(url, navigation); },
    async reload() { await page.reload(navigation); },
    // a new tab in place of the current one, at the same address (a stalled start's retry)
    async freshTab() {
      const url = page.url(), old = page;
      page = watch(await browser.newPage());
      await old.close();
      await page.goto(url, navigation);
    },
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    waitFor: (fn, arg, timeoutMs = WAIT_MS) => pollUntil(() => page.evaluate(fn, arg), timeoutMs, fn.toString()),
    consoleErrors() { const e = errors; errors = []; return e; },
    async close() {
      try { await browser.close(); } finally { fs.rmSync(profile, { recursive: true, force: true }); }
    },
  };
}

/** WebKitWebDriver keeps no console log and speaks no WebDriver BiDi here, and its MiniBrowser
 *  does not write console messages out in automation mode: a page given to WebKit carries this
 *  script first in its <head>, and the driver reads what it caught (console.error, uncaught
 *  errors, rejections nobody handled, and resources that failed to load). */
export const WEBKIT_CONSOLE_PROBE = `<script>(() => {
  const caught = [];
  Object.defineProperty(window, '__wickConsoleErrors', { value: caught });
  const error = console.error.bind(console);
  console.error = (...args) => { caught.push(args.map(String).join(' ')); error(...args); };
  addEventListener('error', (e) => caught.push(e.message ? e.message + ' (' + e.filename + ':' + e.lineno + ')'
    : 'could not load ' + (e.target.src || e.target.href || e.target.tagName)), true);
  addEventListener('unhandledrejection', (e) => caught.push('unhandled rejection: ' + (e.reason instanceof Error ? e.reason.message + ' | ' + e.reason.stack : e.reason)));
})();</script>`;

/** Starts Xvfb on a display it picks itself (-displayfd), and resolves to that display's number. */
function startXvfb() {
  requireFile(XVFB, 'xvfb');
  const xvfb = spawn(XVFB, ['-displayfd', '3', '-screen', '0', '1400x900x24', '-nolisten', 'tcp'], { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  xvfb.stderr.on('data', (d) => { stderr += d; });
  const display = new Promise((resolve, reject) => {
    let out = '';
    xvfb.stdio[3].on('data', (d) => { out += d; if (out.includes('\n')) resolve(Number(out.trim())); });
    xvfb.on('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it gave a display: ${stderr}`)));
    xvfb.on('error', reject);
  });
  return { process: xvfb, display };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => { const { port } = server.address(); server.close(() => resolve(port)); });
  });
}

/** Ends a process that this module started, with its process group (the browser and its helpers), and waits for it. */
async function stopGroup(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
  await exited;
  clearTimeout(timer);
}

/** Debian's WebKitGTK: WebKitWebDriver starts its MiniBrowser on an Xvfb display of its own;
 *  plain WebDriver calls over HTTP to 127.0.0.1. HOME and the XDG folders point into a new
 *  temporary folder, so the browser's data starts empty and goes when it closes; every connection
 *  not to 127.0.0.1 or localhost goes to a proxy that refuses it. */
export async function launchWebKit(name) {
  requireFile(WEBKIT_DRIVER, 'webkit2gtk-driver');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `wick-${name}-webkit-`));
  const children = [];
  // a test process that ends without closing (an uncaught error) takes the display and browser with it
  const killAtExit = () => { for (const child of children) try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
  process.once('exit', killAtExit);
  const cleanUp = async () => {
    for (const child of children.reverse()) await stopGroup(child);
    process.removeListener('exit', killAtExit);
    fs.rmSync(profile, { recursive: true, force: true });
  };
  try {
    const xvfb = startXvfb();
    children.push(xvfb.process);
    const display = await xvfb.display;
    const port = await freePort();
    const home = (dir) => { const d = path.join(profile, dir); fs.mkdirSync(d, { recursive: true }); return d; };
    const env = { ...process.env, DISPLAY: `:${display}`, HOME: home('home'), XDG_CONFIG_HOME: home('config'), XDG_DATA_HOME: home('data'),
      XDG_CACHE_HOME: home('cache'),
      // Xvfb has no GPU: in compositing mode WebKitGTK draws a frame about once a second there
      // (one requestAnimationFrame a second, seen), without it sixty
      WEBKIT_DISABLE_COMPOSITING_MODE: '1' };
    const driver = spawn(WEBKIT_DRIVER, [`--port=${port}`, '--host=local'], { env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(driver);
    let driverLog = '';
    driver.stderr.on('data', (d) => { driverLog += d; });
    const base = `http://127.0.0.1:${port}`;
    const call = async (method, route, body) => {
      const r = await fetch(base + route, { method, headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
      const answer = await r.json();
      if (!r.ok) throw new Error(`WebDriver ${method} ${route}: ${answer.value?.error}: ${answer.value?.message}`);
      return answer.value;
    };
    await pollUntil(() => call('GET', '/status').then((s) => s.ready, () => false), 30000, `${WEBKIT_DRIVER} to listen (${driverLog})`);
    const session = await call('POST', '/session', { capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': {
      args: ['--automation', `--proxy=http://127.0.0.1:${REFUSING_PROXY_PORT}`, '--ignore-host=127.0.0.1', '--ignore-host=localhost'] } } } });
    const at = `/session/${session.sessionId}`;
    await call('POST', `${at}/timeouts`, { script: WAIT_MS, pageLoad: WAIT_MS });
    await call('POST', `${at}/window/rect`, { width: 1400, height: 900 });
    // (WebDriver's own proxy capability leaves https direct here: MiniBrowser's options do not)
    // the function's source goes into the script as it is, its argument as JSON through WebDriver
    const evaluate = async (fn, arg) => {
      const r = await call('POST', `${at}/execute/async`, { args: [arg ?? null], script: `const done = arguments[arguments.length - 1];
        Promise.resolve().then(() => (${fn.toString()})(arguments[0])).then((value) => done({ value: value === undefined ? null : value }),
          (e) => done({ error: e instanceof Error ? e.message + ' | ' + e.stack : String(e) }));` });
      if ('error' in r) throw new Error(`in the page: ${r.error}`);
      return r.value;
    };
    let errors = [];
    // what the probe caught on the page now shown (a navigation would lose it)
    const collect = async () => {
      errors.push(...await evaluate(() => (window.__wickConsoleErrors || []).splice(0)).catch(() => []));
    };
    return {
      engine: 'webkit',
      version: session.capabilities.browserVersion,
      htmlPrelude: WEBKIT_CONSOLE_PROBE,
      startMayStall: false,
      async goto(url) { await collect(); await call('POST', `${at}/url`, { url }); },
      async reload() { await collect(); await call('POST', `${at}/refresh`, {}); },
      evaluate,
      waitFor: (fn, arg, timeoutMs = WAIT_MS) => pollUntil(() => evaluate(fn, arg), timeoutMs, fn.toString()),
      async consoleErrors() { await collect(); const e = errors; errors = []; return e; },
      async close() {
        try { await call('DELETE', at); } finally { await cleanUp(); }
      },
    };
  } catch (e) {
    await cleanUp();
    throw e;
  }
}
