/**
 * A processing outcome written on DynamoDB (adapters/store/dynamodb/document-store.ts, setStatus) against dynalite,
 * with the record the caller read (`seen`): answered without a read back while the labels and custom metadata are
 * those seen, read back when they changed meanwhile, refused when the document moved on; the counters move once.
 */
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let store: DynamoDocumentStore;

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-01T00:01:00.000Z';
const ref = { agentId: 'agent-1', environment: 'production' as const, knowledgeBaseId: 'kb-1' };

beforeAll(async () => {
  dynamo = await startDynalite();
  store = new DynamoDocumentStore(dynamo.client, await dynamo.createTable('documents', TABLES.documents));
});

afterAll(() => dynamo?.stop());

/** A document `uploaded` with `label1`, as processing reads it. */
async function uploaded(documentId: string, label1: string | null): Promise<DocumentRecord> {
  const uploadId = `upload-${documentId}`;
  const s3Key = `agent-1/production/kb-1/${documentId}/notes.txt`;
  const reservation = reservationRecord({
    ...ref,
    organizationId: 'org-a',
    documentId,
    customDocumentId: null,
    s3Key,
    fileName: 'notes.txt',
    uploadId,
    reservedUntil: LATER,
    contentType: 'text/plain',
    createdAt: NOW,
    zipJobId: undefined,
    refusedByImport: undefined,
  });
  expect(await store.reserve(reservation, NOW)).toBe(true);
  const content = {
    uploadId,
    objectKey: s3Key,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: 5,
    updatedAt: NOW,
  };
  expect(await store.completeReservation(ref, documentId, content, { label1 }, NOW)).toBe(true);
  return (await store.get(ref, documentId)) as DocumentRecord;
}

it('answers the record seen with the outcome written, as a read back would', async () => {
  const seen = await uploaded('doc-1', null);
  const generation = [{ uploadId: seen.uploadId, count: 3 }];

  const answered = await store.setStatus(ref, 'doc-1', seen.uploadId, 'ready', null, LATER, {
    indexedChunks: generation,
    seen,
  });

  const stored = await store.get(ref, 'doc-1');
  const { pendingKey: _pending, ...storedRecord } = stored as DocumentRecord & { pendingKey?: string };
  expect(answered).toEqual(storedRecord);
  expect(stored).toMatchObject({ status: 'ready', updatedAt: LATER, error: null, indexedChunks: generation });
  expect(stored).not.toHaveProperty('pendingKey');
  expect(await store.counts(ref)).toMatchObject({ uploaded: 0, ready: 1 });
});

it('reads the record back when its metadata changed after it was seen, and writes the outcome once', async () => {
  const seen = await uploaded('doc-2', 'topic:old');
  await store.patchMetadata(ref, 'doc-2', { label1: 'topic:new' }, NOW);

  const answered = await store.setStatus(ref, 'doc-2', seen.uploadId, 'ready', null, LATER, { seen });

  expect(answered).toMatchObject({ status: 'ready', label1: 'topic:new' });
  expect(await store.counts(ref)).toMatchObject({ uploaded: 0, ready: 2 });
});

it('writes nothing when the document moved on since it was seen', async () => {
  const seen = await uploaded('doc-3', null);
  expect(await store.setStatus(ref, 'doc-3', seen.uploadId, 'failed', { code: 'X', message: 'x' }, NOW)).toBeDefined();

  expect(await store.setStatus(ref, 'doc-3', seen.uploadId, 'ready', null, LATER, { seen })).toBeUndefined();
  expect(await store.get(ref, 'doc-3')).toMatchObject({ status: 'failed' });
  expect(await store.counts(ref)).toMatchObject({ uploaded: 0, ready: 2, failed: 1 });
});
