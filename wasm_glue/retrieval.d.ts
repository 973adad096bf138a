// wasm_glue/retrieval.d.ts — TypeScript declarations of retrieval.mjs (import … from 'wick/retrieval');
// the index's types are in wick.d.ts.
import type { Engine, CreateIndexOptions, RetrievalIndex, IndexJSON } from './wick';

export type { CreateIndexOptions, RetrievalIndex, RetrievalHit, IndexJSON, IndexChunk, IndexModel, IndexAddProgress } from './wick';

/** a new, empty index over an embedding engine */
export declare function createIndex(engine: Engine, options?: CreateIndexOptions): Promise<RetrievalIndex>;
/** an index from its JSON; with an engine (holding the same model, else E_MODEL_MISMATCH) text queries and add() work */
export declare function loadIndex(json: IndexJSON | string, options?: { engine?: Engine }): Promise<RetrievalIndex>;
/** a text split into chunks of at most maxTokens as countTokens counts them (paragraphs, then sentences, then words; with overlap) */
export declare function chunkText(text: string, countTokens: (piece: string) => Promise<number> | number, options?: { maxTokens?: number; overlap?: number; reserve?: number }): Promise<Array<{ text: string; tokens: number }>>;
/** the title and plain text of an HTML, Markdown or text page, by its file name */
export declare function pageText(content: string, name?: string): { title: string; text: string };
/** the dot products of a unit query with n unit vectors of dim values stored one after another */
export declare function cosineScores(vectors: Float32Array, n: number, dim: number, query: Float32Array | number[], out?: Float32Array): Float32Array;
export declare function fileSha256(file: string): Promise<string>;
export declare const INDEX_FORMAT: 'wick-index';
export declare const INDEX_VERSION: 1;
