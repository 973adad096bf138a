// tools/template-reference.mjs — writes tests/template-reference.json: each case of
// tests/template-cases.mjs rendered by the real Jinja (Python's jinja2, set up as transformers
// sets it up: tools/jinja-reference.py), with the SHA-256 of the template it rendered, so that a
// changed template or case shows as a stale reference rather than passing. Run it again after
// changing a case: `node tools/template-reference.mjs` (needs python3 with jinja2; the tests
// themselves need neither).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CASES, readTemplates, referenceContext, sha256 } from '../tests/template-cases.mjs';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const templates = readTemplates();
const jobs = CASES.map((c) => ({ template: templates.get(c.template), context: referenceContext(c) }));
const out = JSON.parse(execFileSync('python3', [path.join(ROOT, 'tools', 'jinja-reference.py')], { input: JSON.stringify(jobs), encoding: 'utf8', maxBuffer: 1 << 26 }));
const cases = CASES.map((c, i) => {
  const r = out.renders[i];
  if (r.error) throw new Error(`${c.name}: the reference refused it: ${r.error}`);
  return { name: c.name, template: c.template.bundle || `tests/${c.template.file}`, templateSha256: sha256(jobs[i].template), context: jobs[i].context, expected: r.text };
});
const file = path.join(ROOT, 'tests', 'template-reference.json');
fs.writeFileSync(file, `${JSON.stringify({ renderer: `jinja2 ${out.jinja2} (tools/jinja-reference.py)`, cases }, null, 1)}\n`);
console.log(`${file}: ${cases.length} renders by jinja2 ${out.jinja2}`);
