/**
 * Processing of a document of more chunks than a part (CHUNKS_PER_PART) against the real stores (DynamoDB on an
 * in-process dynalite) and the real embedded index: its chunks are written in parts under a staged commit, it ends
 * `ready` with the exact count, and a write that fails midway leaves the chunks the index held before, the document
 * `uploaded` for the queue's retry, which then replaces them exactly.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { CHUNKS_PER_PART, type ProcessingDeps, processDocument } from '#core/processing/process-document';
import { NO_METRICS } from '#ports/metrics';
import type { DocumentRef, IndexedChunk, KnowledgeIndex } from '#ports/processing';
import type { BlobStore } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { chunksOf } from '../helpers/chunks';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';

const LONG_AGO = '2020-01-01T00:00:00.000Z';
/** About 5 MB of text, each paragraph numbered: well over one part of chunks. */
const TEXT = Array.from(
  { length: 50_000 },
  (_, i) => `Paragraph ${i} of the juniper handbook says the pump is serviced every ${i % 97} days, in the spring.`,
).join('\n\n');

let dynamo: LocalDynamo;
let store: DocumentStore;
let index: LanceKnowledgeIndex;
let dir: string;

beforeAll(async () => {
  dynamo = await startDynalite();
  await dynamo.createTable('documents', TABLES.documents);
  store = new DynamoDocumentStore(dynamo.client, 'documents');
  dir = mkdtempSync(join(tmpdir(), 'aps-staged-'));
  index = await LanceKnowledgeIndex.open(dir, { indexRefreshDelayMs: 60_000 });
});

afterAll(async () => {
  await index?.close();
  await dynamo?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const blobs: BlobStore = {
  ...inMemoryBlobStore(),
  head: async () => ({ size: Buffer.byteLength(TEXT), contentType: 'text/plain' }),
  get: async () => Buffer.from(TEXT),
};

function depsWith(overrides: Partial<ProcessingDeps> = {}): ProcessingDeps {
  return {
    documents: store,
    blobs,
    queue: { send: async () => undefined, sendAll: async () => undefined },
    index,
    extractor: new DocumentTextExtractor(),
    embedder: null,
    clock: { now: () => new Date() },
    metrics: NO_METRICS,
    settings: { maxFileBytes: 10_000_000, confirmAttempts: 1, confirmDelaySeconds: 1 },
    ...overrides,
  };
}

/** A document `uploaded` with upload `uploadId`, waiting for its processing. */
async function uploadedDocument(documentId: string, uploadId: string): Promise<DocumentRef> {
  const ref: DocumentRef = { agentId: 'agent-1', environment: 'production', knowledgeBaseId: 'kb-1', documentId };
  const s3Key = `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${documentId}/handbook.txt`;
  await store.reserve(
    reservationRecord({
      ...ref,
      organizationId: 'org-1',
      customDocumentId: null,
      s3Key,
      fileName: 'handbook.txt',
      uploadId,
      reservedUntil: LONG_AGO,
      contentType: 'text/plain',
      createdAt: LONG_AGO,
    }),
    LONG_AGO,
  );
  const content = {
    uploadId,
    objectKey: s3Key,
    fileName: 'handbook.txt',
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(TEXT),
    updatedAt: LONG_AGO,
  };
  expect(await store.completeReservation(ref, ref.documentId, content, {}, LONG_AGO)).toBeDefined();
  return ref;
}

/** The index, with its staged writes seen: the sizes of the parts each one was given. */
function recordingParts(failAtPart?: number): { index: KnowledgeIndex; parts: number[] } {
  const parts: number[] = [];
  const recording: KnowledgeIndex = Object.assign(Object.create(index) as LanceKnowledgeIndex, {
    replaceDocumentInParts: (ref: DocumentRef, given: AsyncIterable<readonly IndexedChunk[]>) =>
      index.replaceDocumentInParts(
        ref,
        (async function* () {
          for await (const part of given) {
            if (parts.length === failAtPart) throw new Error('the worker ran out of time midway');
            parts.push(part.length);
            yield part;
          }
        })(),
      ),
  });
  return { index: recording, parts };
}

it('writes a large document in parts and makes it ready with every chunk, exactly', async () => {
  const ref = await uploadedDocument('doc-large', 'upload-1');
  const { index: recording, parts } = recordingParts();

  expect(await processDocument(depsWith({ index: recording }), ref, 'upload-1')).toBe('ready');

  const total = parts.reduce((sum, size) => sum + size, 0);
  expect(total).toBeGreaterThan(CHUNKS_PER_PART);
  expect(parts.slice(0, -1).every((size) => size === CHUNKS_PER_PART)).toBe(true);
  const doc = (await store.get(ref, ref.documentId)) as DocumentRecord;
  expect(doc.indexedChunks).toEqual([{ uploadId: 'upload-1', count: total }]);
  expect(await index.countDocumentChunks(ref)).toBe(total);
  expect((await index.listDocumentChunks(ref, { afterPosition: null, limit: 1 })).total).toBe(total);
  const hits = await index.query({ scope: ref, text: 'juniper pump', filters: [], limit: 3 });
  expect(hits).toHaveLength(3);
});

it('a staged write that fails midway leaves the chunks indexed before; the retry replaces them exactly', async () => {
  const ref = await uploadedDocument('doc-replaced', 'upload-2');
  // What the index held of the document before (an earlier version's chunks).
  await index.replaceDocument(ref, chunksOf(ref, ['The old willow notes.', 'More old willow notes.']));
  const failing = recordingParts(1);

  await expect(processDocument(depsWith({ index: failing.index }), ref, 'upload-2')).rejects.toThrow(
    'the worker ran out of time midway',
  );

  expect(failing.parts).toEqual([CHUNKS_PER_PART]);
  expect(await index.countDocumentChunks(ref)).toBe(2);
  expect((await index.query({ scope: ref, text: 'willow', filters: [], limit: 10 })).length).toBe(2);
  expect(
    (await index.query({ scope: ref, text: 'juniper', filters: [], limit: 10 })).map((hit) => hit.chunk.documentId),
  ).not.toContain(ref.documentId);
  expect(((await store.get(ref, ref.documentId)) as DocumentRecord).status).toBe('uploaded');

  // The queue delivers the message again.
  const retry = recordingParts();
  expect(await processDocument(depsWith({ index: retry.index }), ref, 'upload-2')).toBe('ready');
  const total = retry.parts.reduce((sum, size) => sum + size, 0);
  expect(await index.countDocumentChunks(ref)).toBe(total);
  expect((await index.query({ scope: ref, text: 'willow', filters: [], limit: 10 })).length).toBe(0);
  const listed = (await index.listChunks(ref)).filter((chunk) => chunk.documentId === ref.documentId);
  expect(listed).toHaveLength(total);
  expect(new Set(listed.map((chunk) => chunk.position)).size).toBe(total);
});
