// tools/llama-bundle.mjs — files of llama.cpp's source as node-llama-cpp ships it: a git bundle
// (node_modules/node-llama-cpp/llama/gitRelease.bundle, installed by npm ci), read without a
// checkout through one bare clone into a temporary folder that is removed again. Chat templates,
// grammars and vocabularies for the tests and the benchmarks; nothing of it is copied into wick.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const LLAMA_BUNDLE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle');

/** The files at these paths of the bundle's HEAD, as Buffers in the order given. */
export function readLlamaBundle(paths) {
  if (!fs.existsSync(LLAMA_BUNDLE)) throw new Error(`${LLAMA_BUNDLE} is missing: run npm ci (node-llama-cpp ships llama.cpp's source as this git bundle)`);
  const git = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-llama.cpp-'));
  try {
    execFileSync('git', ['clone', '--bare', '--quiet', LLAMA_BUNDLE, git], { stdio: ['ignore', 'ignore', 'inherit'] });
    return paths.map((p) => execFileSync('git', ['--git-dir', git, 'show', `HEAD:${p}`], { maxBuffer: 1 << 28 }));
  } finally {
    fs.rmSync(git, { recursive: true, force: true });
  }
}
