// tests/llama-native.mjs — llama.cpp itself for the tests that compare against it at test time:
// node-llama-cpp 3.21.1's prebuilt linux CPU binary (a devDependency, installed by npm ci), loaded
// once per process with gpu: false and build: 'never' — never a download or a compilation. A
// missing or unloadable binary is an error that fails the test that asked (no silent skip).
let llamaPromise = null;

/** The process's one llama.cpp instance (a node-llama-cpp Llama). */
export function nativeLlama() {
  llamaPromise ??= import('node-llama-cpp')
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
