// wasm_glue/wick.d.ts — TypeScript declarations of wick's public API (wick.mjs).
import type { connect } from './connect.js';
export type { ConnectOptions, RemoteEngine, RemoteModelInfo, RemoteTimings } from './connect.js';

export type WickErrorCode =
  | 'E_FETCH' | 'E_NOT_GGUF' | 'E_TOO_LARGE' | 'E_UNSUPPORTED' | 'E_ABORTED' | 'E_INVALID_ARG' | 'E_FORMAT' | 'E_MODEL_MISMATCH'
  | 'E_NOMEM' | 'E_CONTEXT_FULL' | 'E_NO_TEMPLATE' | 'E_TEMPLATE' | 'E_NO_JINJA' | 'E_UNLOADED' | 'E_WORKER' | 'E_INTERNAL'
  | 'E_NO_VISION' | 'E_BAD_IMAGE';

export class WickError extends Error {
  readonly code: WickErrorCode;
  /** the HTTP status of an E_FETCH from a server that answered (Wick.connect) */
  readonly status?: number;
  constructor(code: WickErrorCode, message: string);
}

export interface LoadProgress {
  /** the whole load, from 0 to 1 across every phase: it never decreases and ends at 1 */
  progress: number;
  /** 'download': the bytes read (from the network, or the Cache API when `cached`); 'store': the
   * bytes written to the Cache API for offline use; 'load': the engine takes the model in */
  phase: 'download' | 'store' | 'load';
  /** bytes of the whole model (all parts of a split one) done in this phase: each phase starts at 0 */
  loaded: number;
  /** the model's bytes as far as known (a split model with sizes unknown beforehand: the parts so
   * far; 0: a download without Content-Length) */
  total: number;
  /** true when the bytes come from the Cache API */
  cached: boolean;
  /** bytes read back from an earlier download of the same URL that stopped part way (a reload,
   * an abort, a lost connection); the rest comes with a Range request. 0: none */
  resumed: number;
}

/** A KV cache type: 'q8_0' and 'q4_0' store each cached row as blocks of 32 values (the weight formats of the same names) */
export type KvType = 'f16' | 'f32' | 'q8_0' | 'q4_0';

export interface LoadOptions {
  /** compute threads (default: half the logical cores, 1…8); 1 in the single-threaded build */
  threads?: number;
  /** the model's image encoder (an mmproj GGUF: projectors idefics3 (SmolVLM), gemma3 (Gemma 3), lfm2 (LFM2-VL),
   *  qwen2vl_merger, qwen2.5vl_merger and qwen3vl_merger (Qwen-VL, Qwen3.5), gemma4v (Gemma 4)), a source of
   *  the same kinds as the model's; read (and kept) as the model is, its header checked before the
   *  rest arrives (an unknown projector is refused by name). Images run on the CPU: with an mmproj,
   *  device 'auto' takes the CPU and 'gpu' is refused. info.vision describes it. */
  mmproj?: string | URL | Blob | ArrayBuffer | ArrayBufferView;
  /** context window in tokens (default: the model's, clamped to 2048…4096) */
  contextSize?: number;
  /** the KV cache's keys and values (default 'f16'): 'q8_0' keeps 34 bytes per 32 values (53% of f16), 'q4_0' 18 (28%), on the CPU path only (a GPU load refuses them: device 'auto' stays on the CPU, 'gpu' fails) */
  kvType?: KvType;
  /** the keys' own type, as llama.cpp's -ctk (default kvType) */
  kvTypeK?: KvType;
  /** the values' own type, as llama.cpp's -ctv (default kvType) */
  kvTypeV?: KvType;
  /** tables read one row per token (gemma4's per_layer_token_embd) kept outside wasm memory: true always, false never, unset when the file would not fit with them inside */
  tablesOutside?: boolean;
  /** false: no warm-up evaluation before load resolves (default true: a 16-token batch and 2 steps on the CPU path, so that the browser has optimized the kernels before the first prompt; info.warmUpMs says what it cost) */
  warmUp?: boolean;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
  /** false: neither read nor keep the download in the Cache API (default true) */
  cache?: boolean;
  /** false: the single-threaded build even where threads are possible */
  multiThreaded?: boolean;
  /** false: the plain SIMD128 build even where the browser has relaxed SIMD (same results, slower) */
  relaxedSimd?: boolean;
  /** folder with wick.js, wick.wasm, wick-mt.js, wick-mt.wasm, wick-mt.worker.js and their
   * -relaxed twins (default ../build/wasm/) */
  wasmBase?: string | URL;
  /** URL of worker.js (default: beside wick.mjs) */
  workerUrl?: string | URL;
  /** where the forward pass runs: 'cpu' (default), 'gpu' (WebGPU; an error when it cannot), or
   * 'auto' (the GPU when a hardware adapter exists, the family runs there, and the GPU path passes
   * its check on this device: the same logits as the CPU path and faster; else the CPU) */
  device?: 'auto' | 'gpu' | 'cpu';
  /** true: a software WebGPU adapter (SwiftShader, lavapipe) counts as a GPU (default false) */
  gpuAllowSoftware?: boolean;
  /** device 'auto''s check of the GPU path (engine.device.verify): 'once' (default: a verdict kept
   * for this adapter, browser, wick version and model file is reused), 'always' (checked at every
   * load), 'never' (no check: a hardware adapter is taken). device 'gpu' never checks */
  gpuVerify?: 'always' | 'once' | 'never';
  /** under Node: a JSON file where the verdicts are kept across processes (default: this process's
   * memory only; in a browser they are kept in IndexedDB, database "wick-gpu-verdicts") */
  gpuVerdictFile?: string;
  /** FOR TESTS ONLY: a GPU made slow or faulty on purpose (tests/gpu-verify.test.mjs) */
  gpuTestHooks?: GpuTestHooks;
  /** false: always read the whole logits row back from the GPU. By default, when the draw
   * depends only on the k best logits (greedy, or top_k ≤ 256 without penalties, logit bias or
   * grammar), the GPU ranks the row and only those k are read back: the same tokens, fewer bytes. */
  gpuTopK?: boolean;
  /** The GPU path's one-token kernels: 'auto' (default: 'mv_q8_sg' / 'mv_q8' on AMD, Intel and
   * NVIDIA GPUs whose WGSL has dot4I8Packed, else 'mv_sg' where the device has subgroups, else 'mv';
   * 'rows' on a software adapter), 'mv' (4 rows per workgroup; q, k and v in one dispatch, gate, up
   * and the GLU in one, the RMS norms folded into them; with the tiled product for batches of 256
   * and the split attention), 'mv_sg' (the same with subgroupAdd), 'mv_q8' / 'mv_q8_sg' (those with
   * 8-bit activations and dot4I8Packed on quantized matrices), or 'rows' (the kernels of before: a
   * workgroup per row, batches of 32), for comparisons. */
  gpuDecodeKernel?: 'auto' | 'rows' | 'mv' | 'mv_sg' | 'mv_q8' | 'mv_q8_sg';
  /** URL of the WebGPU backend module (default: gpu/backend.mjs beside wick.mjs) */
  gpuModuleUrl?: string | URL;
  /** on the GPU path the weight matrices go from the download (or the kept copy) straight into
   * GPU buffers and wasm memory holds only the header, the tokenizer and the small tensors
   * (default). A fallback to the CPU (a lost device, E_GPU) then reads the file again from what
   * is kept of it: the Cache API's copy (cache true), the file (Node), the Blob; with none
   * (cache: false, an ArrayBuffer source) the model is unloaded and the error says to load it
   * again. false: keep them in wasm memory as well (two copies; the fallback needs no re-read) */
  weightsOutside?: boolean;
  /** tests: a cap on wasm memory below wasm32's 4 GiB, checked before the download (a model that
   * fits only with its weights on the GPU is refused there, with the sizes, when no GPU path is
   * available) and after the load */
  maxHeapBytes?: number;
}

/** Where an engine's forward pass runs; `verify` is device 'auto''s check of the GPU path (absent
 * when no check was asked for or the GPU was refused before it: no adapter, a software one, a
 * family the GPU path does not run). */
export type Device =
  | { type: 'gpu'; /** the adapter's description */ adapter: string; software: boolean; /** tensors converted to F32 at load */ converted: string[]; /** the decode kernel taken (gpuDecodeKernel) */ decodeKernel: 'rows' | 'mv' | 'mv_sg' | 'mv_q8' | 'mv_q8_sg'; verify?: GpuVerdict }
  | { type: 'cpu'; /** why not the GPU ('asked for' when device was 'cpu'; a failed or slower check names its figures) */ reason: string; verify?: GpuVerdict };

/** Speeds of one path in the GPU check. */
export interface GpuCheckSpeed {
  prefillTps: number;
  decodeTps: number;
  prefillMs: number;
  decodeMs: number;
  promptTokens: number;
  decodeSteps: number;
}

/** The GPU check's verdict: a fixed prompt of 16 tokens, then 4 greedy decode steps on the CPU and
 * the GPU, every logits row compared (RMS(gpu − cpu) / std(cpu) within `tolerance`: 0.2% for
 * F32/F16 weights, 1% BF16, 5% quantized; the argmax wherever the CPU row's top-2 gap exceeds 10% of
 * its std) and both runs timed. The GPU is chosen when correct and faster at decode and prefill. */
export interface GpuVerdict {
  correct: boolean;
  faster: boolean;
  chosen: boolean;
  /** why the CPU was kept (null when the GPU was chosen) */
  reason: string | null;
  rows: number;
  /** rows whose CPU argmax was clear, and those where the GPU's agreed */
  argmaxChecked: number;
  argmaxAgree: number;
  /** the largest relative RMS of a row (null: a row had NaN or Inf), and which row */
  relRms: number | null;
  worstRow: number;
  tolerance: number;
  /** the first rows that failed, in words */
  problems: string[];
  cpu: GpuCheckSpeed;
  gpu: GpuCheckSpeed;
  /** both paths' speeds in words */
  speeds: string;
  /** what the verdict is kept by: adapter, agent (navigator.userAgent or `node <version>`), wick
   * (version), shaders (a digest of the WGSL), model (the model file's hash, as a saved state
   * names it), build, threads, hooks (test hooks, when any) */
  key: { adapter: string; agent: string; wick: string; shaders: string; model: string; build: Build; threads: number; hooks?: string };
  /** true: a verdict kept from an earlier load was used (no check ran) */
  reused: boolean;
  /** milliseconds this load spent on the check (0 when reused) */
  checkMs: number;
  /** when the check ran (ISO 8601) */
  checkedAt: string;
}

/** FOR TESTS ONLY (load option gpuTestHooks): a simulated slow or faulty GPU. */
export interface GpuTestHooks {
  /** milliseconds waited after each GPU queue submission (a slow GPU) */
  submitDelayMs?: number;
  /** milliseconds waited per token the CPU evaluates in the GPU check (a slow CPU) */
  cpuDelayMs?: number;
  /** 'matmul-scale': layer 0's FFN down projection adds 1.25 × its product (a faulty GPU; families without post norms) */
  perturb?: 'matmul-scale';
  /** the n-th GPU evaluation since load (from 1; the check's count too) returns a NaN logit */
  nanAtStep?: number;
}

export type Build = 'mt' | 'st' | 'mt-relaxed' | 'st-relaxed';

export type ModelSource = string | URL | Array<string | URL> | Blob | ArrayBuffer | ArrayBufferView;

export interface GenerateOptions {
  /** false: never start from a shared prefix (addPrefix); default true */
  prefixStates?: boolean;
  /** 0 = no limit but the context */
  maxTokens?: number;
  /** 0 = greedy (default 0.8) */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  /** 1 = off (default) */
  repeatPenalty?: number;
  repeatLastN?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** default: random */
  seed?: number;
  stop?: string | string[];
  signal?: AbortSignal;
  /** top candidates reported per token: true = 10, at most 64 */
  probs?: boolean | number;
  ignoreEos?: boolean;
  /** prepend BOS to a string prompt as the model asks (default true) */
  addBos?: boolean;
  /** a GBNF grammar (llama.cpp's format) every token must keep the text a prefix of; a grammar that
   *  does not parse is refused with its line and column. jsonSchemaToGrammar makes one from a JSON schema */
  grammar?: string;
  /** { tokenId: bias } added to the logits (OpenAI's logit_bias); -100 or below (or -Infinity) bans */
  logitBias?: Record<number, number>;
}

export interface TokenProb {
  token: number;
  text: string;
  /** probability after truncation and temperature */
  p: number;
  /** the token drawn */
  drawn: boolean;
}

export interface GenerateChunk {
  text: string;
  tokens: number[];
  probs?: TokenProb[];
  /** tokens dropped by a context shift before this token */
  shifted?: number;
  /** Tokens evaluated again before this one because the context could not shift (hybrid models). */
  reevaluated?: number;
  done?: undefined;
}

export interface Timings {
  promptTokens: number;
  /** prompt tokens actually evaluated (the rest was reused from the cache) */
  promptEvalTokens: number;
  cachedPromptTokens: number;
  /** of the prompt tokens reused, those a loaded state supplied (loadState, a shared prefix: addPrefix) */
  promptFromState: number;
  generatedTokens: number;
  prefillMs: number;
  decodeMs: number;
  timeToFirstTokenMs: number | null;
  prefillTokensPerSecond: number | null;
  decodeTokensPerSecond: number | null;
  contextShiftedTokens: number;
  /** Tokens evaluated again because the cache could not shift (a hybrid model's recurrent state): the kept ones, anew. */
  contextReevaluatedTokens: number;
  contextUsed: number;
  contextSize: number;
  /** The GPU path only: bytes of logits read back from the GPU for this answer. A whole row
   * (4 × n_vocab bytes) per evaluation, or, when the draw depends only on the k best logits
   * (greedy: k = 1; top_k = k with no repeat/frequency/presence penalty, logit bias or grammar,
   * k ≤ 256), 8 + 8k bytes (unless the load set gpuTopK: false). */
  gpuReadbackBytes?: number;
}

export interface GenerateDone {
  done: true;
  /** 'grammar': the text is complete for options.grammar and the grammar allows nothing more */
  finishReason: 'eog' | 'stop' | 'length' | 'grammar' | 'abort';
  timings: Timings | null;
}

export interface ChatToolCall {
  id?: string;
  type?: 'function';
  /** arguments as a JSON string (OpenAI) or an object; a string is parsed before rendering */
  function: { name: string; arguments?: string | Record<string, unknown> };
}

export interface ChatMessage {
  /** 'developer' is given to the template as 'system' unless the template names the developer role */
  role: 'system' | 'user' | 'assistant' | 'tool' | 'developer';
  /** null only on an assistant message with tool_calls */
  /** image parts need a model loaded with an mmproj (E_NO_VISION otherwise): each becomes the media
   *  marker <__media__> in the message's text (text parts joined with newlines, none around a
   *  marker, as llama.cpp's server joins them) and the picture's positions take the marker's place
   *  in the prompt. url: data:, blob:, http(s): (under Node also a file path); PNG, JPEG (under Node;
   *  every format the browser decodes on a page) and binary PPM. */
  content: string | Array<{ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }> | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
  /** passed to the template (Qwen3 renders it inside <think>) */
  reasoning_content?: string;
}

/** An OpenAI-style tool definition: the template renders it where its tools section is. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

export interface ChatTemplateOptions {
  /** end with the assistant's turn header (default true) */
  addGenerationPrompt?: boolean;
  /** tool definitions, given to the template as `tools` (an empty list is none); a template without a
   *  tools section (Gemma 2, Phi-3.5, llama.cpp's SmolLM3 template) gets them described in the system
   *  message when the family's call format is known (an engine's: SmolLM3, Qwen; see toolFormat),
   *  else leaves them out of the prompt */
  tools?: ChatTool[];
  /** the time strftime_now, date_string and datetime show (default: the current time) */
  now?: Date;
  /** more template variables (chat_template_kwargs), e.g. { enable_thinking: false } */
  extra?: Record<string, unknown>;
  /** documents, placed as ChatCompletionRequest.documents are */
  documents?: Array<string | ChatDocument>;
}

export interface RenderChatTemplateOptions extends ChatTemplateOptions {
  /** the text of bos_token and eos_token in the template (default '') */
  bosToken?: string;
  eosToken?: string;
  /** the call format to describe the tools in, in the system message, when the template renders
   *  the same with and without them (default: the template's own, toolCallFormat(source); null: never) */
  toolFormat?: ToolCallFormat | null;
}

/** What a chat request's tools come to (planToolCalls). */
export interface ToolCallPlan {
  /** the tools given to the template (undefined: none, as with tool_choice 'none') */
  render: ChatTool[] | undefined;
  /** the format replies are parsed in (parseToolCalls), or null when wick knows none for the template */
  format: ToolCallFormat | null;
  /** GBNF that forces a call (tool_choice 'required' or a named function), or null */
  grammar: string | null;
}

export interface ChatCompletionRequest {
  messages: ChatMessage[];
  stream?: boolean;
  max_tokens?: number | null;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  seed?: number;
  stop?: string | string[];
  n?: 1;
  logprobs?: boolean;
  top_logprobs?: number;
  /** a Jinja template used instead of the model's tokenizer.chat_template */
  chat_template?: string;
  chat_template_kwargs?: Record<string, unknown>;
  /** wick's: false never starts the chat from a shared prefix (addPrefix); default true */
  prefix_states?: boolean;
  /** constrains the reply: any JSON object, or JSON valid for the schema (see jsonSchemaToGrammar) */
  response_format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; json_schema: { name?: string; schema: Record<string, unknown>; strict?: boolean } };
  /** a GBNF grammar for the reply (llama.cpp's server field); not together with response_format */
  grammar?: string;
  logit_bias?: Record<number, number>;
  /** tool definitions rendered by the chat template; the reply's calls in the family's format
   *  (Hermes <tool_call>{…}</tool_call>: Qwen 2.5/3, SmolLM3; Llama 3.x JSON; Granite <|tool_call|>[…]) come back as tool_calls
   *  (streamed as deltas), finish_reason 'tool_calls'; a call that does not parse stays content */
  tools?: ChatTool[];
  /** 'auto' (default), 'none' (tools neither rendered nor parsed), 'required' or a named function:
   *  the reply is grammar-constrained to one call (of that function) that always parses */
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
  /** documents to answer from (retrieved chunks: RetrievalHit is one): a template that reads
   *  `documents` (Granite, Command-R) gets them as {doc_id, title, text, source}; any other gets a
   *  context block at the end of the system message (README, "Documents in chat") */
  documents?: Array<string | ChatDocument>;
  signal?: AbortSignal;
}

export interface ChatDocument { text: string; title?: string; source?: string; [field: string]: unknown }

/** wick's extension on a chat completion (and on a stream's last chunk): the prompt as rendered,
 *  its tokens, and the documents given, in order */
export interface ChatPromptInfo {
  prompt: string;
  promptTokens: number;
  /** where the documents went: the template's `documents`, the system message, or none given */
  documentsIn: 'template' | 'system' | null;
  sources: Array<ChatDocument & { index: number }>;
  /** the prompt's pictures in order (when it has any): their size, the KV positions each took,
   *  whether it was encoded for this request (false: its positions were already cached, or the same
   *  picture was encoded earlier since the load) and how long that took */
  images?: Array<{ slot: number; width: number; height: number; positions: number; encoded: boolean; encodeMs: number }>;
}

export interface ChatCompletionUsage { prompt_tokens: number; completion_tokens: number; total_tokens: number }
type FinishReason = 'stop' | 'length' | 'tool_calls' | 'abort';
export interface ChatCompletionToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }
export interface ChatCompletionToolCallDelta { index: number; id?: string; type?: 'function'; function: { name?: string; arguments?: string } }

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: 0; delta: { role?: 'assistant'; content?: string; tool_calls?: ChatCompletionToolCallDelta[] }; finish_reason: FinishReason | null; logprobs: unknown }>;
  /** on the last chunk */
  usage?: ChatCompletionUsage;
  timings?: Timings | null;
  /** wick's extension, on every chunk of generated text: the engine's piece as generate() yields
   * it (its text and token ids, probs with logprobs, shifted, reevaluated) and the prompt's token
   * count; a piece held back while it may be a tool call comes with an empty delta. On the last
   * chunk: generate()'s final record (the engine's own finishReason: 'eog', 'grammar', …). */
  wick?: (GenerateChunk & { promptTokens: number }) | (GenerateDone & ChatPromptInfo);
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{ index: 0; message: { role: 'assistant'; content: string | null; tool_calls?: ChatCompletionToolCall[] }; finish_reason: FinishReason; logprobs: unknown }>;
  usage: ChatCompletionUsage;
  timings: Timings | null;
  wick: ChatPromptInfo;
}

export type Pooling = 'none' | 'mean' | 'cls' | 'last';

export interface EmbedOptions {
  /** the model's own (<arch>.pooling_type) unless given; 'none': one vector per token */
  pooling?: Pooling;
  /** scale each vector to unit length (L2); default true */
  normalize?: boolean;
  /** keep the first d values only (Matryoshka-trained models), renormalized */
  dimensions?: number;
  /** an input longer than the window keeps its first tokens (and its closing [SEP]) instead of failing with E_CONTEXT_FULL; default false */
  truncate?: boolean;
}

export interface EmbeddingsRequest {
  input: string | string[] | number[] | number[][];
  /** echoed in the response (the loaded model answers whatever it says) */
  model?: string;
  dimensions?: number;
  /** 'base64': each embedding as base64 of its little-endian float32 bytes, as OpenAI sends it */
  encoding_format?: 'float' | 'base64';
  /** wick's extension: truncate over-long inputs (EmbedOptions.truncate) */
  truncate?: boolean;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface RerankOptions {
  /** only the topN most relevant documents; default all */
  topN?: number;
}

/** one document's place in a ranking: its index among the documents given, and its relevance */
export interface RerankResult {
  index: number;
  /** as llama.cpp's /v1/rerank relevance_score: bge-reranker's logit, Qwen3-Reranker's P(yes) */
  score: number;
}

export interface ModelInfo {
  architecture: string;
  /** an embedding model (bert, nomic-bert, modern-bert, gemma-embedding): embed() and embeddings.create() work, generate() refuses */
  encoder?: boolean;
  /** the model's own pooling: an encoder's, or a decoder's whose file sets it (Qwen3-Embedding: 'last'; embed() works, and generate()); 'rank' for a reranker */
  pooling?: Pooling | 'rank';
  /** a reranker (pooling_type rank: bge-reranker on bert, Qwen3-Reranker on qwen3): rerank() works */
  reranker?: boolean;
  name: string;
  source: string;
  n_vocab: number;
  embedding_length?: number;
  block_count?: number;
  head_count?: number;
  head_count_kv?: number;
  context_length?: number;
  n_params?: number;
  bos: number;
  eos: number;
  tensor_types: Record<string, number>;
  /** the GGUF metadata (arrays longer than 64 items summarised as {arrayOf, length}) */
  metadata: Record<string, unknown>;
  specialTokens: { bos?: string; eos?: string; unknown?: string; padding?: string };
  chatTemplate: string | null;
  fileBytes: number;
  /** bytes of the file kept outside wasm memory (its row tables, and on the GPU path its weight matrices; 0 when all of it is inside) */
  outsideBytes: number;
  /** of those, the bytes JS still holds after the load (row tables; on the GPU path the token embeddings, whose rows each evaluation reads) */
  jsBytes: number;
  /** bytes of the GPU path's buffers (weights, KV cache, activations); 0 on the CPU */
  gpuBytes: number;
  files: number;
  fromCache: boolean;
  contextSize: number;
  kvBytes: number;
  /** Bytes of the recurrent state of a hybrid model (lfm2, qwen35), its two snapshots included; 0 otherwise. Fixed at load, whatever the number of tokens. */
  stateBytes: number;
  kvType: KvType;
  kvTypeK: KvType;
  kvTypeV: KvType;
  build: Build;
  multiThreaded: boolean;
  relaxedSimd: boolean;
  threads: number;
  wasmMemoryBytes: number;
  /** ms the warm-up evaluation of the load took (0: none: warmUp false, an encoder, the GPU path) */
  warmUpMs: number;
  /** the mmproj loaded beside the model (LoadOptions.mmproj), or null: its projector, input side in
   *  pixels, positions per encoded image (a tiled picture takes several images), the text width it
   *  feeds, and its file's size */
  vision: { projector: string; imageSize: number; positionsPerImage: number; dim: number; mmprojBytes: number } | null;
  [key: string]: unknown;
}

export interface Engine {
  readonly info: ModelInfo;
  /** 'mt': the pthreads build; 'st': the single-threaded build; '-relaxed': with relaxed SIMD */
  readonly build: Build;
  readonly multiThreaded: boolean;
  readonly relaxedSimd: boolean;
  readonly threads: number;
  /** where the forward pass runs; becomes {type: 'cpu'} after a GPU failure (E_GPU) */
  readonly device: Device;
  /** The engine's state (src/state.c): the token ids its cache holds, the keys and values in use, a
   *  hybrid's recurrent state, the model file's identity. Refused (E_UNSUPPORTED) on the GPU path. */
  saveState(): Promise<Uint8Array>;
  /** Loads a saveState blob (same model file and kvType, a contextSize at least its positions): the
   *  next prompt that extends its tokens evaluates only its new ones. A blob of another model, truncated,
   *  damaged or hostile is refused with a WickError (E_INVALID_ARG, E_FORMAT, E_UNSUPPORTED, E_CONTEXT_FULL)
   *  and the engine stays as it was. */
  loadState(blob: Uint8Array | ArrayBuffer): Promise<{ tokens: number }>;
  /** Registers a shared prefix (checked as loadState checks it): a prompt that starts with its tokens,
   *  and shares fewer with the cache, starts from it (timings.promptFromState). */
  addPrefix(blob: Uint8Array | ArrayBuffer): Promise<{ tokens: number }>;
  clearPrefixes(): Promise<true>;
  /** The state after a prompt prefix: text (BOS added, special tokens parsed), token ids, or {system} /
   *  {messages} rendered as a chat's first messages without the answer prompt. `wick prefix` writes one. */
  savePrefix(prefix: string | number[] | { system: string } | { messages: ChatMessage[] }, options?: { template?: string }): Promise<{ blob: Uint8Array; tokens: number; evaluated: number }>;
  /** refused (E_UNSUPPORTED) on an embedding model */
  generate(prompt: string | number[], options?: GenerateOptions): AsyncGenerator<GenerateChunk | GenerateDone>;
  /** an encoder's embeddings, one per input (with pooling 'none', one array of per-token vectors per input); refused (E_UNSUPPORTED) on a generative model */
  embed(input: string | string[] | number[] | number[][], options?: EmbedOptions & { pooling?: Exclude<Pooling, 'none'> }): Promise<Float32Array[]>;
  embed(input: string | string[] | number[] | number[][], options: EmbedOptions & { pooling: 'none' }): Promise<Float32Array[][]>;
  embeddings: { create(request: EmbeddingsRequest): Promise<EmbeddingsResponse> };
  /** a reranker's relevance of each document to the query, the most relevant first; refused (E_UNSUPPORTED) on other models */
  rerank(query: string, documents: string[], options?: RerankOptions): Promise<RerankResult[]>;
  chat: {
    completions: {
      create(request: ChatCompletionRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
      create(request: ChatCompletionRequest & { stream?: false }): Promise<ChatCompletion>;
    };
  };
  /** the prompt text of a conversation in the model's chat template (or `template`), with the model's BOS and EOS text */
  applyChatTemplate(messages: ChatMessage[], options?: ChatTemplateOptions & { template?: string }): Promise<string>;
  tokenize(text: string, options?: { addBos?: boolean; special?: boolean }): Promise<number[]>;
  detokenize(tokens: number[]): Promise<string>;
  /** stops every generation in progress */
  abort(): void;
  /** frees the model and ends the worker */
  unload(): Promise<void>;
}

export interface CacheEntry {
  url: string;
  /** the file's size; for a partial entry, the bytes kept so far */
  bytes: number;
  date: string | null;
  /** a download that stopped part way (listed with {partial: true}): the next load resumes it */
  partial?: true;
  /** a partial entry's whole size */
  total?: number;
}

export interface FitCheck { fits: boolean; needed: number; available: number; fileBytes: number; kvBytes: number; contextSize: number; /** of fileBytes, the row tables (and with weightsOutside the weight matrices) a load keeps outside wasm memory (not in needed) */ outsideBytes: number; /** the model fits only on the GPU path (its weights outside wasm memory: over 4 GiB, or above maxHeapBytes) */ needsGpu: boolean; /** about the GPU memory the GPU path takes (weights, F16 KV cache, activations) */ gpuBytes: number; /** Wick.inspect: why a load would refuse the model, naming it (too large for wasm32, a mixture of experts, an architecture not run yet) */ reason?: string }

export interface InspectResult { url: string; bytes: number; version: number; tensorCount: number; metadata: Record<string, unknown>; /** the tables read one row per token, which may stay outside wasm memory */ tables: { name: string; offset: number; bytes: number }[]; fits: FitCheck }

export declare const Wick: {
  load(source: ModelSource, options?: LoadOptions): Promise<Engine>;
  /** an engine with the same generate / chat.completions API on an OpenAI-compatible server */
  connect: typeof connect;
  inspect(url: string | URL, options?: { contextSize?: number; kvType?: KvType; kvTypeK?: KvType; kvTypeV?: KvType; tablesOutside?: boolean; weightsOutside?: boolean; maxHeapBytes?: number }): Promise<InspectResult>;
  cache: {
    readonly supported: boolean;
    /** the files kept whole; with {partial: true} also the downloads that stopped part way */
    list(options?: { partial?: boolean }): Promise<CacheEntry[]>;
    delete(url: string | URL): Promise<boolean>;
    clear(): Promise<boolean>;
    has(url: string | URL): Promise<boolean>;
  };
  defaultThreads(): number;
  canUseThreads(): boolean;
  /** whether this context runs relaxed SIMD (the relaxed builds are then chosen) */
  hasRelaxedSimd(): boolean;
  splitUrls(firstUrl: string): string[];
  useJinja(module: { Template: unknown; Environment: unknown; Interpreter: unknown }): Promise<void>;
  renderChatTemplate: typeof renderChatTemplate;
  WickError: typeof WickError;
};

/**
 * A conversation rendered with a chat template (Jinja source), no model needed. A template that
 * takes no system message (it raises, as Gemma's do, or leaves it out) gets the system message at
 * the head of the next message, joined by a newline, as llama.cpp does; E_TEMPLATE when the
 * template does not parse, raises (the message says why), or fails.
 */
export declare function renderChatTemplate(source: string, messages: ChatMessage[], options?: RenderChatTemplateOptions): Promise<string>;

/** The GBNF grammar of the JSON a schema allows (types, properties, required, enum, const, items,
 *  minItems/maxItems, minLength/maxLength, formats date/time/date-time/uuid, integer minimum/maximum, additionalProperties,
 *  $ref inside the schema, anyOf/oneOf); anything else throws a WickError naming its JSON path. */
export declare function jsonSchemaToGrammar(schema: Record<string, unknown> | boolean): string;
/** The tool-call formats wick parses: Hermes <tool_call> JSON, Llama 3.x JSON, Granite <|tool_call|> lists, Qwen3.5's <function=…>, LFM2's <|tool_call_start|>[f(a=…)]. */
export type ToolCallFormat = 'hermes' | 'llama3' | 'granite' | 'xml' | 'pythonic';
/** The tool-call format wick parses a chat template's replies in, or null. */
export declare function toolCallFormat(template: string | null | undefined, arch?: string): ToolCallFormat | null;
/** How a request's tools are used with a chat template and a model architecture; throws a WickError
 *  for a tool_choice that cannot be met (an unknown function, a forced call with no known format). */
export declare function planToolCalls(request: { tools?: ChatTool[] | null; tool_choice?: ChatCompletionRequest['tool_choice']; response_format?: ChatCompletionRequest['response_format'] }, template: string | null | undefined, architecture?: string): ToolCallPlan;
/** The tool calls in a reply: { content, calls }, or null when it holds none or one that does not parse. */
export declare function parseToolCalls(format: ToolCallFormat, text: string, tools?: ChatTool[]): { content: string; calls: ChatCompletionToolCall[] } | null;
export declare function defaultThreads(): number;
export declare function canUseThreads(): boolean;
export declare function hasRelaxedSimd(): boolean;
export declare function splitUrls(firstUrl: string): string[];
export default Wick;

// ---- retrieval (retrieval.mjs: import { createIndex, loadIndex } from 'wick/retrieval') ----

/** the embedding model an index was made with */
export interface IndexModel { id: string; dim: number; bytes?: number; sha256?: string }

export interface IndexChunk { text: string; source?: string; title?: string; tokens: number }

/** one search result: a chunk, its cosine similarity (or, reranked, the reranker's score and the cosine as similarity) and its number in the index */
export interface RetrievalHit extends IndexChunk { score: number; chunk: number; similarity?: number }

export interface IndexAddProgress { phase: 'embed'; chunks: number; total: number; chunksPerSecond: number }

export interface CreateIndexOptions {
  /** a chunk's tokens, [CLS] and [SEP] included (default 256, at most the model's window) */
  maxTokens?: number;
  /** tokens of the previous chunk's last sentences repeated at a chunk's head (default 32, or maxTokens/8 when less) */
  overlap?: number;
  /** chunks per embedding call (default 16) */
  batch?: number;
  /** what the index records of the model where the engine cannot tell (in a page: the file's SHA-256) */
  model?: { id?: string; sha256?: string };
}

export interface IndexJSON {
  format: 'wick-index'; version: 1;
  model: IndexModel; dim: number; count: number;
  chunkOptions: { maxTokens: number; overlap: number };
  sources: Array<{ source: string; title?: string }>;
  chunks: IndexChunk[];
  /** base64 of count × dim little-endian float32, unit vectors */
  vectors: string;
}

export interface RetrievalIndex {
  readonly size: number;
  readonly dim: number;
  readonly model: IndexModel;
  /** chunks texts by the model's tokens and embeds them in batches; the chunks added */
  add(texts: string | Array<string | { text: string; source?: string; title?: string }>, options?: { onProgress?: (p: IndexAddProgress) => void; signal?: AbortSignal }): Promise<Array<IndexChunk & { chunk: number }>>;
  /** exact cosine search over every vector; rerank: a reranker engine for the best `candidates` (default 4k) */
  search(query: string | Float32Array | number[], k?: number, options?: { rerank?: Engine; candidates?: number }): Promise<RetrievalHit[]>;
  searchVector(unitQuery: Float32Array, k: number): RetrievalHit[];
  /** removes a source's chunks; how many went */
  remove(source: string): number;
  toJSON(): IndexJSON;
}
