// wasm_glue/connect.d.ts — TypeScript declarations of Wick.connect (connect.mjs): an engine on an
// OpenAI-compatible server with the generate / chat.completions API of a loaded one.
import type {
  GenerateOptions, GenerateChunk, Timings, ChatCompletionRequest, ChatCompletionChunk, ChatCompletion,
  EmbedOptions, EmbeddingsRequest, EmbeddingsResponse, RerankOptions, RerankResult,
} from './wick.js';

export interface ConnectOptions {
  /** sent as `Authorization: Bearer <apiKey>` */
  apiKey?: string;
  /** the model to ask for (default: the first one the server lists at GET /v1/models) */
  model?: string;
  /** more headers for every request */
  headers?: Record<string, string>;
  /** aborts connect() itself (E_ABORTED) */
  signal?: AbortSignal;
}

/** wick's timings from what the server reports (llama-server: all but the context fields; other
 *  servers: token counts from `usage`, times measured on this side, network included); null = not reported. */
export type RemoteTimings = { [K in keyof Timings]: Timings[K] | null } & { generatedTokens: number; decodeMs: number };

export interface RemoteGenerateDone {
  done: true;
  /** the server's 'stop' is 'eog' when no stop strings were asked, 'stop' otherwise */
  finishReason: 'eog' | 'stop' | 'length' | 'abort';
  /** null after an abort */
  timings: RemoteTimings | null;
}

/** what the server says about the model: the name always, the rest where it tells (llama-server does) */
export interface RemoteModelInfo {
  name: string;
  /** the API root (…/v1) */
  source: string;
  remote: true;
  architecture: null;
  ownedBy: string | null;
  n_vocab: number | null;
  /** the model's training context (llama-server's n_ctx_train) */
  context_length: number | null;
  embedding_length: number | null;
  n_params: number | null;
  /** unknown: llama-server's metadata.size counts the tensors' bytes only */
  fileBytes: null;
  contextSize: null;
  chatTemplate: null;
  /** the `meta` of the model's entry in GET /v1/models ({} when none; llama-server: vocab_type, n_vocab, n_ctx_train, n_embd, n_params, size) */
  metadata: Record<string, unknown>;
  /** every model the server lists */
  models: string[];
  build: 'remote';
  multiThreaded: false;
  threads: null;
}

export interface RemoteEngine {
  readonly info: RemoteModelInfo;
  /** the API root requests go to: baseURL, with /v1 appended unless its path ends in /v<n> */
  readonly baseURL: string;
  readonly build: 'remote';
  readonly multiThreaded: false;
  readonly threads: null;
  /** streams POST /v1/completions; `tokens` holds the token id only when the server reports it
   *  (llama-server, with `probs`), else it is empty; `addBos` is the server's business */
  generate(prompt: string | number[], options?: GenerateOptions): AsyncGenerator<GenerateChunk | RemoteGenerateDone>;
  chat: {
    completions: {
      /** POST /v1/chat/completions with the request as it is (plus `model`); a stream comes in the
       *  chunks a loaded engine streams; server extras in a delta (reasoning_content, tool_calls) are kept */
      create(request: ChatCompletionRequest & { stream: true; [field: string]: unknown }): Promise<AsyncIterable<Omit<ChatCompletionChunk, 'timings'> & { timings?: RemoteTimings | null }>>;
      create(request: ChatCompletionRequest & { stream?: false; [field: string]: unknown }): Promise<Omit<ChatCompletion, 'timings'> & { timings: RemoteTimings | null }>;
    };
  };
  /** POST /v1/embeddings (llama-server --embeddings): one vector per input, unit length unless
   *  normalize: false, `dimensions` cut here; the server pools as it was started (a `pooling` or
   *  `truncate` is refused with E_UNSUPPORTED) */
  embed(input: string | string[] | number[] | number[][], options?: Omit<EmbedOptions, 'pooling' | 'truncate'>): Promise<Float32Array[]>;
  embeddings: { create(request: EmbeddingsRequest): Promise<EmbeddingsResponse> };
  /** POST /v1/rerank (llama-server --reranking): the documents from the most relevant down, the server's relevance_score as score */
  rerank(query: string, documents: string[], options?: RerankOptions): Promise<RerankResult[]>;
  /** E_UNSUPPORTED: the server renders templates and tokenizes */
  applyChatTemplate(...args: unknown[]): Promise<never>;
  tokenize(...args: unknown[]): Promise<never>;
  detokenize(...args: unknown[]): Promise<never>;
  /** stops every generation in progress (each ends with finishReason 'abort') */
  abort(): void;
  /** cancels the requests in progress; later calls fail with E_UNLOADED */
  unload(): Promise<void>;
}

/**
 * An engine on an OpenAI-compatible server (llama.cpp's llama-server, vLLM, Ollama, …).
 * Resolves once GET /v1/models has answered; E_FETCH when the server cannot be reached or
 * answers with an error status (the WickError then has `status`), E_INVALID_ARG for a bad option.
 */
export declare function connect(baseURL: string | URL, options?: ConnectOptions): Promise<RemoteEngine>;
export default connect;
