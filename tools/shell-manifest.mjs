#!/usr/bin/env node
// tools/shell-manifest.mjs — writes wick-shell.json, the list of files that web/coi-sw.js keeps
// for offline use (the app shell), with a version: the first 16 hex digits of a SHA-256 over each
// file's name and contents. Any change to any listed file gives a new version, and the service
// worker then replaces the whole set at the next visit.
//   node tools/shell-manifest.mjs OUT.json FILE...
// Names in the list are relative to OUT.json's folder (they resolve against its URL).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const [out, ...files] = process.argv.slice(2);
if (!out || !files.length) {
  console.error('usage: node tools/shell-manifest.mjs OUT.json FILE...');
  process.exit(2);
}
const hash = crypto.createHash('sha256');
const names = [];
for (const file of [...new Set(files)].sort()) {
  const name = path.relative(path.dirname(path.resolve(out)), path.resolve(file)).split(path.sep).join('/');
  let bytes;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    console.error(`shell-manifest: ${file}: ${e.message}`);
    process.exit(1);
  }
  hash.update(`${name}\0${bytes.length}\0`).update(bytes);
  names.push(name);
}
const manifest = { version: hash.digest('hex').slice(0, 16), files: names };
fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
fs.writeFileSync(out, `${JSON.stringify(manifest, null, 1)}\n`);
