// src/cli_library.js — the JS side of the CLI's output (linked with --js-library): Node's stdout
// through the glue, unbuffered, so generated text streams as it is produced. A JS library rather
// than EM_JS, because the relaxed-SIMD builds (mk/relaxed.mk) skip the binaryen step that reads
// EM_JS bodies out of the module.
mergeInto(LibraryManager.library, {
  js_write: function (fd, p, n) { Module['wickWrite'](fd, HEAPU8.slice(p, p + n)); },
});
