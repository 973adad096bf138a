// src/cli_library.js — the JS side of the CLI's input and output (linked with --js-library): its
// files read and written by the host, and Node's stdout through the glue, unbuffered, so generated text streams
// as it is produced. A JS library rather
// than EM_JS, because the relaxed-SIMD builds (mk/relaxed.mk) skip the binaryen step that reads
// EM_JS bodies out of the module.
mergeInto(LibraryManager.library, {
  js_write: function (fd, p, n) { Module['wickWrite'](fd, HEAPU8.slice(p, p + n)); },
  // The CLI's files (model, tokenizer, grammar, texts): the builds have no Emscripten file system,
  // so Module.wickReadFile(path, alloc) (Node's fs, in wasm_glue/cli.mjs) reads one whole straight
  // into a buffer it asks alloc for (malloc'd here, the file's bytes never held twice) and returns
  // its size; the address and size go to *buf and *len. 0, or -1 with the reason in why.
  js_read_file__deps: ['malloc', 'free'],
  js_read_file: function (path, buf, len, why, whyLen) {
    var p = 0, n;
    try {
      n = Module['wickReadFile'](UTF8ToString(path), function (size) {
        p = _malloc(size || 1);
        if (!p) throw new Error('out of memory for ' + size + ' bytes');
        return p;
      });
    } catch (e) {
      if (p) _free(p);
      // Node's "ENOENT: no such file or directory, open '…'" as the C library says it
      var text = String(e && e.message || e);
      if (e && e.code && e.syscall) text = text.replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*'$/, '');
      stringToUTF8(text, why, whyLen);
      return -1;
    }
    HEAPU32[buf >> 2] = p;
    HEAPU32[len >> 2] = n;
    return 0;
  },
  // A file the CLI writes (wick vision's -o and --dump-input): Module.wickWriteFile(path, bytes)
  // (Node's fs in wasm_glue/cli.mjs) writes len bytes from buf. 0, or -1 with the reason in why.
  js_write_file: function (path, buf, len, why, whyLen) {
    try {
      Module['wickWriteFile'](UTF8ToString(path), HEAPU8.subarray(buf, buf + len));
    } catch (e) {
      var text = String(e && e.message || e);
      if (e && e.code && e.syscall) text = text.replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*'$/, '');
      stringToUTF8(text, why, whyLen);
      return -1;
    }
    return 0;
  },
});
