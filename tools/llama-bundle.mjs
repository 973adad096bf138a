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

/** The files at these paths of the bundle's HEAD, as Buffers in the order given. A path that ends
 * in '/' with a suffix after '*' (as 'grammars/*.gbnf') stands for every file of that folder
 * whose name ends so: its entries come back as [name, Buffer] pairs, in the folder's order. */
export function readLlamaBundle(paths) {
  if (!fs.existsSync(LLAMA_BUNDLE)) throw new Error(`${LLAMA_BUNDLE} is missing: run npm ci (node-llama-cpp ships llama.cpp's source as this git bundle)`);
  const git = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-llama.cpp-'));
  const show = (p) => execFileSync('git', ['--git-dir', git, 'show', `HEAD:${p}`], { maxBuffer: 1 << 28 });
  try {
    execFileSync('git', ['clone', '--bare', '--quiet', LLAMA_BUNDLE, git], { stdio: ['ignore', 'ignore', 'inherit'] });
    return paths.map((p) => {
      const star = p.indexOf('*');
      if (star < 0) return show(p);
      const dir = p.slice(0, star), suffix = p.slice(star + 1);
      return execFileSync('git', ['--git-dir', git, 'ls-tree', '--name-only', 'HEAD', dir], { encoding: 'utf8' })
        .split('\n').filter((n) => n && n.endsWith(suffix)).map((n) => [n, show(n)]);
    });
  } finally {
    fs.rmSync(git, { recursive: true, force: true });
  }
}
