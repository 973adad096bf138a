// tests/readme.mjs — the code blocks of README.md that tests run, so that what the README shows
// is what works. A block is marked by the HTML comment on the line before its fence:
//
//   <!-- tested: NAME -->
//   ```js
//   …
//   ```
//
// The comment is invisible where the README is rendered.
import fs from 'node:fs';
import path from 'node:path';
import { root } from './helpers.mjs';

/** The text of the README block marked `tested: name` (without its fences). */
export function readmeBlock(name) {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const marker = `<!-- tested: ${name} -->`;
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no block marked "${marker}"`);
  const m = /^\n(`{3,})[^\n]*\n([\s\S]*?)\n\1\n/.exec(readme.slice(at + marker.length));
  if (!m) throw new Error(`README.md: "${marker}" is not followed by a fenced code block`);
  return m[2] + '\n';
}
