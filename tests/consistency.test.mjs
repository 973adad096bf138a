// tests/consistency.test.mjs — a prompt evaluated as one batch (prefill: gemm tiles, attention
// over the batch in runs of tokens) gives bit for bit the logits of the same tokens fed one at a
// time (decode: the eight-stream matrix-vector kernels, one-token attention), in both builds and
// at 1, 2 and 3 threads (3 threads leave rows over from the eight decode streams: 256 rows in
// groups of 4 split 88 + 84 + 84, and 84 = 8 × 10 + 4), for a grouped-query model (synth mini:
// 8 heads, 4 KV heads) and one with a KV head per query head (synth mini-mha), each in a
// 32-element block type and a K-quant mix, for stories260K (F32), and for each model family
// (the hybrids lfm2, qwen35 and granite-hybrid too: their recurrence runs token by token inside a batch;
// and the families that only `wick synth` files carry: gemma4's and gemma3n's KV-shared layers read the rings of earlier ones).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { runWick, shared, models, loadReference, nativeCli } from './helpers.mjs';

const vocab = path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wick-consistency-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// 13 prompt tokens: more than one run of attention tokens and of gemm tokens, with a partial last one
const ids = [1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29892];
// stories260K (F32, vocabulary 512, a 172-row feed-forward)
const storiesIds = [1, 403, 407, 261, 378, 300, 17, 92, 4, 5, 6, 7, 8];

function synth(shape, type, arch = 'llama', vocabFile = vocab) {
  const file = path.join(tmp, `synth-${arch}-${shape}-${type}.gguf`);
  if (!fs.existsSync(file)) {
    const r = runWick('native', ['synth', '--arch', arch, '--shape', shape, '--type', type, '-o', file, '--vocab', vocabFile]);
    assert.equal(r.code, 0, `wick synth --arch ${arch} --shape ${shape} --type ${type}: ${r.stderr}`);
  }
  return file;
}

const cases = [];
for (const shape of ['mini', 'mini-mha'])
  for (const type of ['q4_0', 'q4_k_m'])
    cases.push({ name: `synth ${shape} ${type}`, file: () => synth(shape, type), ids, nVocab: 32000 });
cases.push({ name: 'stories260K', file: () => path.join(models, 'stories260K.gguf'), ids: storiesIds, nVocab: 512 });
// every family, on its quantized file and its reference prompt (41 tokens for gemma2 and gemma3:
// longer than their sliding windows of 8 and 12, so the window and the ring both act)
for (const fam of ['llama3', 'qwen3', 'gemma2', 'gemma3', 'phi3', 'smollm3', 'granite', 'olmo2', 'lfm2', 'qwen35']) {
  const file = fs.readdirSync(path.join(models, 'families')).find((f) => f.startsWith(`mini-${fam}-`) && !f.endsWith('-f16.gguf'));
  const ref = loadReference(file.replace('.gguf', '.json'));
  cases.push({ name: `${fam} (${file})`, file: () => path.join(models, 'families', file), ids: ref.prompt_tokens, nVocab: ref.n_vocab });
}
// granite-hybrid (Mamba-2) has no file in ../shared: a synth one
cases.push({ name: 'granite-hybrid (synth mini q8_0)', file: () => synth('mini', 'q8_0', 'granite-hybrid'), ids, nVocab: 32000 });

// the families only wick synth writes (no shared reference file): mistral3's query temperature
// steps at multiples of its original context (16), so its prompt runs to 25 tokens
for (const arch of ['mistral3'])
  cases.push({ name: `synth mini --arch ${arch} q4_k_m`, file: () => synth('mini', 'q4_k_m', arch), ids: [...ids, ...ids.slice(1)], nVocab: 32000 });

// gemma4: 30 tokens, past its sliding window of 12, which its KV-shared layers see through their source layers' caches
const gemma4Ids = [...ids, ...ids.slice(1), 1701, 29916, 432, 17204, 975];
cases.push({ name: 'synth mini --arch gemma4 q4_k_m', file: () => synth('mini', 'q4_k_m', 'gemma4'), ids: gemma4Ids, nVocab: 32000 });
// gemma3n (stories260K's vocabulary: llama.cpp's per-layer table is 256 wide): its AltUp streams and
// Laurel per token, 30 tokens past its sliding window of 8, its KV-shared layers (20 to 24) reading
// layers 18 and 19
const gemma3nIds = [...storiesIds, ...storiesIds.slice(1), 261, 378, 300, 17, 92];
cases.push({ name: 'synth mini --arch gemma3n q8_0', file: () => synth('mini', 'q8_0', 'gemma3n', path.join(models, 'stories260K.gguf')), ids: gemma3nIds, nVocab: 512 });

for (const { name, file: fileOf, ids, nVocab } of cases)
    for (const build of ['native', 'wasm'])
      for (const threads of [1, 2, 3])
        test(`${build}, ${threads} thread(s): ${name}: batch prefill equals token-by-token decode bit for bit`, () => {
          const file = fileOf();
          const common = ['logits', '-m', file, '--threads', String(threads)];
          // one batch: the prompt rows
          const batch = runWick(build, [...common, '--tokens', ids.join(','), '--steps', '1']);
          assert.equal(batch.code, 0, batch.stderr);
          const rowsBatch = JSON.parse(batch.stdout).prompt_logits;
          // one token at a time: the first token, then each following one fed as a step
          const seq = runWick(build, [...common, '--tokens', String(ids[0]), '--steps', String(ids.length),
            '--follow', ids.slice(1).join(',')]);
          assert.equal(seq.code, 0, seq.stderr);
          const rowsSeq = JSON.parse(seq.stdout).greedy_step_logits;
          assert.equal(rowsBatch.length, ids.length);
          assert.equal(rowsSeq.length, ids.length);
          for (let i = 0; i < ids.length; i++) {
            assert.equal(rowsBatch[i].length, nVocab);
            const diff = rowsBatch[i].findIndex((v, k) => v !== rowsSeq[i][k]);
            assert.equal(diff, -1, `position ${i}: logit ${diff} is ${rowsBatch[i][diff]} as a batch, ${rowsSeq[i][diff]} one at a time`);
          }
          // and the rows are not trivially equal: consecutive positions differ
          assert.notDeepEqual(rowsBatch[1], rowsBatch[2]);
        });

// Attention folds the F16 cache's rebias (× 2^112) into the query and the probabilities
// (src/attention.c, fold_query): the same real products, so the same floats. build/native/wick-nofold
// never folds (the path a query with a huge element takes): its logits equal wick's bit for bit,
// for a prompt long enough that attention is most of a step.
const nofold = path.join(path.dirname(nativeCli), 'wick-nofold');
const longIds = Array.from({ length: 300 }, (_, i) => 3 + ((i * 7919) % 240));
for (const { name, file: fileOf } of cases.filter((c) => /synth mini q4_k_m|synth mini-mha q4_0|llama3|gemma3|gemma4|qwen3/.test(c.name)))
  for (const threads of [1, 2])
    test(`native, ${threads} thread(s): ${name}: attention with the rebias folded equals it unfolded bit for bit`, () => {
      const args = ['logits', '-m', fileOf(), '--threads', String(threads), '--tokens', longIds.join(','), '--steps', '4'];
      const folded = spawnSync(nativeCli, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
      const plain = spawnSync(nofold, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
      assert.equal(folded.status, 0, folded.stderr);
      assert.equal(plain.status, 0, plain.stderr);
      const a = JSON.parse(folded.stdout), b = JSON.parse(plain.stdout);
      assert.equal(a.prompt_logits.length, longIds.length);
      assert.equal(a.greedy_step_logits.length, 4);
      assert.ok(folded.stdout === plain.stdout, 'the logits differ');
    });

// A Q8_0 cache's values are summed in integers against 16-bit weights, 32 positions a pass
// (src/attention.c, q8_0_values_pass: two rows' values interleaved into one integer dot product);
// wick-nofold sums the same passes in scalar C (q8_0_pass_ref). Integer sums have no order, so the
// logits are the same bit for bit: decode over a KV head per query head (mini-mha, attend_decode,
// whose keys go through q8_0_keys) and grouped-query (mini, attend_heads), the prompt and the steps.
for (const { name, file: fileOf } of cases.filter((c) => /synth mini q4_k_m|synth mini-mha q4_0/.test(c.name)))
  test(`native: ${name}: a Q8_0 cache's values summed by the SIMD kernel equal the scalar sums bit for bit`, () => {
    const args = ['logits', '-m', fileOf(), '--kv', 'q8_0', '--tokens', longIds.join(','), '--steps', '4'];
    const split = spawnSync(nativeCli, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
    const plain = spawnSync(nofold, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
    assert.equal(split.status, 0, split.stderr);
    assert.equal(plain.status, 0, plain.stderr);
    const a = JSON.parse(split.stdout);
    assert.equal(a.greedy_step_logits.length, 4);
    assert.ok(split.stdout === plain.stdout, 'the logits differ');
  });
