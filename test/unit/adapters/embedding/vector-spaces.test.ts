/**
 * The embedded index keeps the vectors of each embedding model in a table of its own: two models with the same
 * number of dimensions give vectors that cannot be compared, so switching EMBEDDER_MODEL must not mix them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenAiCompatibleEmbedder } from '#adapters/embedding/openai-compatible';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { tableNameFor } from '#adapters/index/lancedb-tables';
import type { DocumentRef } from '#ports/processing';
import { chunksOf } from '../../../helpers/chunks';
import {
  SCRIPTED_DIMENSIONS,
  type ScriptedEmbeddingsServer,
  startEmbeddingsServer,
} from '../../../helpers/embeddings-server';

const doc: DocumentRef = { agentId: 'a1', environment: 'development', knowledgeBaseId: 'kb1', documentId: 'refunds' };
const scope = { agentId: 'a1', environment: 'development', knowledgeBaseId: 'kb1' } as const;

let directory: string;
let first: ScriptedEmbeddingsServer;
let second: ScriptedEmbeddingsServer;

beforeAll(async () => {
  first = await startEmbeddingsServer({ model: 'nomic-embed-text' });
  second = await startEmbeddingsServer({ model: 'mxbai-embed-large:latest' });
});
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'aps-vector-spaces-'));
});
afterEach(() => rmSync(directory, { recursive: true, force: true }));
afterAll(async () => {
  await first.close();
  await second.close();
});

const embedderOf = (server: ScriptedEmbeddingsServer, model: string) =>
  new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model }, SCRIPTED_DIMENSIONS);

it('names a table per model, readable and within the characters LanceDB accepts', () => {
  expect(tableNameFor(undefined)).toBe('chunks');
  expect(tableNameFor({ dimensions: 1024 })).toBe('chunks_vec1024');
  const name = tableNameFor({ dimensions: 768, vectorSpace: 'openai-compatible:BAAI/bge-base-en-v1.5' });
  expect(name).toMatch(/^chunks_vec768_openai-compatible-BAAI-bge-base-en-v1\.5_[0-9a-f]{8}$/);
  // Names that read the same once cleaned are still apart.
  expect(tableNameFor({ dimensions: 768, vectorSpace: 'openai-compatible:a/b' })).not.toBe(
    tableNameFor({ dimensions: 768, vectorSpace: 'openai-compatible:a:b' }),
  );
});

it('starts an empty table when the model changes, even at the same dimensions, and finds the old one again', async () => {
  const nomic = embedderOf(first, 'nomic-embed-text');
  const index = await LanceKnowledgeIndex.open(directory, { embedder: nomic });
  await index.replaceDocument(doc, chunksOf(doc, ['Refunds are paid within ten days.']));
  expect(await index.countDocumentChunks(doc)).toBe(1);
  await index.close();

  const mxbai = embedderOf(second, 'mxbai-embed-large:latest');
  const other = await LanceKnowledgeIndex.open(directory, { embedder: mxbai });
  expect(other.space).not.toBe(index.space);
  expect(await other.countDocumentChunks(doc)).toBe(0);
  expect(await other.query({ scope, text: 'reimbursement', filters: [], limit: 5 })).toEqual([]);
  await other.close();

  const again = await LanceKnowledgeIndex.open(directory, { embedder: embedderOf(first, 'nomic-embed-text') });
  expect(again.space).toBe(index.space);
  const hits = await again.query({ scope, text: 'reimbursement', filters: [], limit: 5 });
  expect(hits.map((hit) => hit.chunk.documentId)).toEqual(['refunds']);
  await again.close();
});
