// tests/llama-native.mjs — llama.cpp itself for the tests that compare against it at test time:
// node-llama-cpp 3.21.1's prebuilt linux CPU binary (a devDependency, installed by npm ci), loaded
// once per process with gpu: false and build: 'never' — never a download or a compilation. A
// missing or unloadable binary is an error that fails the test that asked (no silent skip).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let llamaPromise = null;

/*
 * The AMX variant of the prebuilt CPU backend computes some products differently from every other
 * variant and reads past a 2-D weight in a batched F16 product (see LLAMA_AMX_VARIANT in the Makefile,
 * whose `npm ci` step removes it). A reference made with it would judge wick against that, so a test
 * run on a machine with AMX refuses to start llama.cpp while the file is there.
 */
function checkNoAmxVariant() {
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
  const variant = path.join(root, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64', 'libggml-cpu-sapphirerapids.so');
  const cpuHasAmx = process.platform === 'linux' && /^flags\s*:.*\bamx_int8\b/m.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  if (cpuHasAmx && fs.existsSync(variant))
    throw new Error(`${variant} would be llama.cpp's CPU backend on this AMX machine: run \`make build/.npm-stamp\` (npm ci, then it is removed)`);
}

/** The process's one llama.cpp instance (a node-llama-cpp Llama). */
export function nativeLlama() {
  llamaPromise ??= Promise.resolve().then(checkNoAmxVariant).then(() => import('node-llama-cpp'))
    .then(({ getLlama, LlamaLogLevel }) => getLlama({
      gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.error,
    }))
    .catch((e) => { throw new Error(`node-llama-cpp 3.21.1 (devDependency: npm ci) could not load its prebuilt CPU binary: ${e.message}`); });
  return llamaPromise;
}

/** Releases the instance, if one was made (call it in the suite's after hook, after its models). */
export async function disposeNativeLlama() {
  if (llamaPromise) await (await llamaPromise.catch(() => null))?.dispose();
  llamaPromise = null;
}
