// src/engine_library.js — what the engine asks its host for (linked with --js-library into every
// wasm build): the bytes of a table left outside wasm memory (wick_model_load_gguf_sparse), read
// by Module.wickReadRows(part, offset, dst, n), which wasm_glue/worker.js sets: it copies n bytes
// of the file's part at offset into the heap at dst and returns true, or false when it cannot.
// A JS library rather than EM_JS for the reason src/cli_library.js gives (the relaxed builds).
mergeInto(LibraryManager.library, {
  wick_host_read: function (part, offset, dst, n) {
    var read = Module['wickReadRows'];
    try {
      return read && read(part, offset, dst >>> 0, n >>> 0) ? 0 : -1;
    } catch (e) {
      return -1;
    }
  },
});
