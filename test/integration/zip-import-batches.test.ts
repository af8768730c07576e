/**
 * A ZIP import stores its files in windows (core/processing/zip-job.ts, ZIP_IMPORT_BATCH): each window's documents
 * reserved in one transaction and made `uploaded` in another with the dataset's counters, against the real store
 * (DynamoDB on an in-process dynalite, with the tables of lib/tables.ts, transactions as the local runtime serves
 * them). All or none: a window where one id is taken writes nothing together and goes one file at a time, so each
 * file still ends its own document with its CSV labels or refused with its code, and the counts stay exact.
 */

import { ZipArchiveImporter } from '#adapters/archive/zip-importer';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoZipJobStore } from '#adapters/store/dynamodb/zip-job-store';
import { type DatasetRef, type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { runWork } from '#core/processing/dispatch';
import { importZip, ZIP_IMPORT_BATCH } from '#core/processing/zip-job';
import { NO_METRICS } from '#ports/metrics';
import type { ProcessingMessage } from '#ports/services';
import type { DocumentStore } from '#ports/stores';
import type { ZipJobRecord, ZipJobStore } from '#ports/zip-jobs';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';
import { zipOf } from '../helpers/fixtures';

const NOW = '2030-01-01T00:00:00.000Z';

let dynamo: LocalDynamo;
let store: DocumentStore;
let zipJobs: ZipJobStore;
let datasets = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  await dynamo.createTable('documents', TABLES.documents);
  await dynamo.createTable('zipJobs', TABLES.zipJobs);
  store = new DynamoDocumentStore(dynamo.client, 'documents');
  zipJobs = new DynamoZipJobStore(dynamo.client, 'zipJobs');
});

afterAll(async () => {
  await dynamo?.stop();
});

function freshDataset(): DatasetRef {
  datasets += 1;
  return { agentId: 'agent-1', environment: 'production', knowledgeBaseId: `kb-batch-${datasets}` };
}

function reservation(ref: DatasetRef, documentId: string, uploadId: string): DocumentRecord {
  return reservationRecord({
    ...ref,
    organizationId: 'org-1',
    documentId,
    customDocumentId: null,
    s3Key: `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${documentId}/a.txt`,
    fileName: 'a.txt',
    uploadId,
    reservedUntil: NOW,
    contentType: 'text/plain',
    createdAt: NOW,
    zipJobId: uploadId,
  });
}

function completion(ref: DatasetRef, documentId: string, uploadId: string) {
  return {
    documentId,
    content: {
      uploadId,
      objectKey: `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/${documentId}/a.txt`,
      fileName: 'a.txt',
      contentType: 'text/plain',
      fileSize: 10,
      updatedAt: NOW,
    },
    metadata: { label1: 'topic:a', label2: null },
  };
}

describe('reservations in one write', () => {
  it('reserves and completes a window all at once, the counts moved by its number', async () => {
    const ref = freshDataset();
    const ids = Array.from({ length: 40 }, (_, i) => `doc-${i}`);
    expect(
      await store.reserveAll(
        ids.map((id) => reservation(ref, id, 'zip-1')),
        NOW,
      ),
    ).toBe(true);
    expect(await store.counts(ref)).toMatchObject({ uploaded: 0, ready: 0, failed: 0 });
    expect(
      await store.completeReservations(
        ref,
        ids.map((id) => completion(ref, id, 'zip-1')),
        NOW,
      ),
    ).toBe(true);
    expect(await store.counts(ref)).toMatchObject({ uploaded: 40, ready: 0, failed: 0 });
    const doc = await store.get(ref, 'doc-7');
    expect(doc).toMatchObject({ status: 'uploaded', uploadId: 'zip-1', label1: 'topic:a', fileSize: 10 });
    // Listed and found waiting for processing, as completeReservation leaves a document.
    expect((await store.list(ref, { limit: 100 })).documents).toHaveLength(40);
    expect(await store.zipImportUnfinished('zip-1', 100)).toHaveLength(40);
  });

  it('writes none of a window when one id is taken, and completes none when one reservation is not its own', async () => {
    const ref = freshDataset();
    expect(await store.reserve(reservation(ref, 'taken', 'other-upload'), '2999-01-01T00:00:00.000Z')).toBe(true);
    await store.completeReservation(ref, 'taken', completion(ref, 'taken', 'other-upload').content, {}, NOW);
    const window = ['free-1', 'taken', 'free-2'];
    expect(
      await store.reserveAll(
        window.map((id) => reservation(ref, id, 'zip-2')),
        NOW,
      ),
    ).toBe(false);
    expect(await store.get(ref, 'free-1')).toBeUndefined();
    expect(await store.get(ref, 'free-2')).toBeUndefined();
    expect(await store.get(ref, 'taken')).toMatchObject({ uploadId: 'other-upload', status: 'uploaded' });

    expect(
      await store.reserveAll(
        ['free-1', 'free-2'].map((id) => reservation(ref, id, 'zip-2')),
        NOW,
      ),
    ).toBe(true);
    expect(
      await store.completeReservations(
        ref,
        ['free-1', 'free-2', 'taken'].map((id) => completion(ref, id, 'zip-2')),
        NOW,
      ),
    ).toBe(false);
    expect(await store.get(ref, 'free-1')).toMatchObject({ status: 'reserved' });
    expect(await store.counts(ref)).toMatchObject({ uploaded: 1, ready: 0, failed: 0 });
  });
});

describe('a ZIP import in windows', () => {
  async function waitingImport(ref: DatasetRef, zipJobId: string, files: Record<string, string>) {
    const job: ZipJobRecord = {
      ...ref,
      zipJobId,
      organizationId: 'org-1',
      uploadId: `${zipJobId}-upload`,
      s3Key: `${ref.agentId}/${ref.environment}/${ref.knowledgeBaseId}/_zip/${zipJobId}/batch.zip`,
      label1: 'source:zip',
      label2: null,
      status: 'uploaded',
      error: null,
      fileCount: null,
      createdAt: NOW,
      updatedAt: NOW,
    };
    const objects = new Map([[job.s3Key, await zipOf(files)]]);
    await zipJobs.create(job);
    const sent: ProcessingMessage[] = [];
    const deps = {
      documents: store,
      zipJobs,
      archives: new ZipArchiveImporter(),
      clock: { now: () => new Date() },
      metrics: NO_METRICS,
      blobs: inMemoryBlobStore(objects),
      queue: {
        send: async (message: ProcessingMessage) => {
          sent.push(message);
        },
        sendAll: async (messages: readonly ProcessingMessage[]) => {
          sent.push(...messages);
        },
      },
    };
    return { job, objects, deps, sent, message: { ...job, zipJobId, uploadId: job.uploadId } };
  }

  it('makes each file its own document with its CSV label, once, however often the message comes', async () => {
    const ref = freshDataset();
    const names = Array.from({ length: ZIP_IMPORT_BATCH + 5 }, (_, i) => `file-${String(i).padStart(3, '0')}.txt`);
    const csv = ['file,label1', 'refused.txt,no-colon', ...names.map((name, i) => `${name},topic:t${i % 3}`)].join(
      '\n',
    );
    const { job, objects, deps, sent, message } = await waitingImport(ref, 'zip-windows', {
      'labels.csv': `${csv}\n`,
      'refused.txt': 'Its row has an invalid label.',
      ...Object.fromEntries(names.map((name) => [name, `Text of ${name}.`])),
    });
    // The store's single-document writes are counted: the accepted files go in windows, the refused one alone.
    const single = { reserve: 0, completeReservation: 0 };
    const counting: DocumentStore = Object.create(store, {
      reserve: {
        value: (...args: Parameters<DocumentStore['reserve']>) => {
          single.reserve++;
          return store.reserve(...args);
        },
      },
      completeReservation: {
        value: (...args: Parameters<DocumentStore['completeReservation']>) => {
          single.completeReservation++;
          return store.completeReservation(...args);
        },
      },
    });
    expect(await importZip({ ...deps, documents: counting }, message)).toBe('ready');
    expect(single).toEqual({ reserve: 1, completeReservation: 1 });
    const files = await zipJobs.listFiles(job.zipJobId);
    expect(files).toHaveLength(names.length + 1);
    const imported = files.filter((f) => f.error === null);
    expect(imported.map((f) => f.fileName).sort()).toEqual(names);
    for (const [i, name] of names.entries()) {
      const file = imported.find((f) => f.fileName === name);
      const doc = await store.get(ref, file?.documentId as string);
      expect(doc).toMatchObject({
        status: 'uploaded',
        label1: `topic:t${i % 3}`,
        fileName: name,
        zipJobId: job.zipJobId,
      });
      expect(objects.get(doc?.objectKey as string)?.toString()).toBe(`Text of ${name}.`);
    }
    expect(files.filter((f) => f.error !== null).map((f) => [f.fileName, f.error?.code])).toEqual([
      ['refused.txt', 'INVALID_LABEL'],
    ]);
    expect(await store.counts(ref)).toMatchObject({ uploaded: names.length, ready: 0, failed: 1 });
    expect(sent.filter((m) => m.kind === 'process-document')).toHaveLength(names.length);

    // A copy of the message: nothing more created, queued or counted.
    expect(await importZip(deps, message)).toBe('skipped');
    expect(sent.filter((m) => m.kind === 'process-document')).toHaveLength(names.length);
    expect(await store.counts(ref)).toMatchObject({ uploaded: names.length, ready: 0, failed: 1 });
  });

  it('goes one file at a time in a window where a custom document id is taken: that file refused, the rest imported', async () => {
    const ref = freshDataset();
    expect(await store.reserve(reservation(ref, 'policy-7', 'someone-else'), '2999-01-01T00:00:00.000Z')).toBe(true);
    await store.completeReservation(ref, 'policy-7', completion(ref, 'policy-7', 'someone-else').content, {}, NOW);
    const names = ['a.txt', 'policy-7.txt', 'b.txt', 'c.txt'];
    const { job, deps, sent, message } = await waitingImport(ref, 'zip-taken', {
      'labels.csv': 'file,label1\npolicy-7,topic:policy\na.txt,topic:a\n',
      ...Object.fromEntries(names.map((name) => [name, `Text of ${name}.`])),
    });
    expect(await importZip(deps, message)).toBe('ready');
    const files = await zipJobs.listFiles(job.zipJobId);
    expect(files.map((f) => [f.fileName, f.error?.code ?? null])).toEqual([
      ['a.txt', null],
      ['policy-7.txt', 'DUPLICATE_CUSTOM_DOCUMENT_ID'],
      ['b.txt', null],
      ['c.txt', null],
    ]);
    const a = await store.get(ref, files[0].documentId as string);
    expect(a).toMatchObject({ status: 'uploaded', label1: 'topic:a' });
    // The other upload's document is left alone.
    expect(await store.get(ref, 'policy-7')).toMatchObject({ uploadId: 'someone-else', status: 'uploaded' });
    // Its own document (1) and the import's three files uploaded and the refused one failed.
    expect(await store.counts(ref)).toMatchObject({ uploaded: 4, ready: 0, failed: 1 });
    expect(sent.filter((m) => m.kind === 'process-document')).toHaveLength(3);
  });

  it('leaves the object-created event of an imported file alone: the import queued its processing', async () => {
    const ref = freshDataset();
    const { job, deps, sent, message } = await waitingImport(ref, 'zip-events', {
      'a.txt': 'Alpha.',
      'b.txt': 'Beta.',
    });
    expect(await importZip(deps, message)).toBe('ready');
    const [file] = await zipJobs.listFiles(job.zipJobId);
    const doc = (await store.get(ref, file.documentId as string)) as DocumentRecord;
    const unused = () => {
      throw new Error('the event must not be processed');
    };
    const outcome = await runWork(
      { ...deps, index: unused, extractor: unused, embedder: null, settings: unused } as never,
      { kind: 's3-object', objectKey: doc.objectKey, ...ref, documentId: doc.documentId },
    );
    expect(outcome).toBe('skipped');
    expect(await store.get(ref, doc.documentId)).toMatchObject({ status: 'uploaded' });
    expect(sent.filter((m) => m.kind === 'process-document')).toHaveLength(2);
  });
});
