/**
 * Bedrock at scale (issue 36): the calls one document's write, metadata change, content replacement and deletion
 * make to Bedrock do not grow with the data source. The real processing core, the real DynamoDB document store (on
 * dynalite, with the tables of lib/tables.ts) and the real BedrockKnowledgeIndex with the real SDK clients (retrying
 * as the deployed ones do) run against the Bedrock stand-in, whose staging data source is seeded with 10, then with
 * 100,000 documents of other tenants; every request the stand-in receives is counted by operation. A record written
 * before `indexedChunks` was kept still works, by listing the data source: its cost is measured too.
 */
import { BedrockAgentClient } from '@aws-sdk/client-bedrock-agent';
import { BedrockAgentRuntimeClient } from '@aws-sdk/client-bedrock-agent-runtime';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DocumentTextExtractor } from '#adapters/extraction/text-extractor';
import { type BedrockKnowledgeBases, BedrockKnowledgeIndex } from '#adapters/index/bedrock-knowledge-base';
import { ChunkManifests } from '#adapters/index/chunk-manifests';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { BEDROCK_AGENT_RETRY, BEDROCK_AGENT_RUNTIME_RETRY, type RetryConfig } from '#composition/clients/bedrock-retry';
import { type DocumentRecord, reservationRecord } from '#core/knowledge/document';
import { chunkText } from '#core/processing/chunking';
import {
  buildChunks,
  confirmIndexed,
  deleteDocumentChunks,
  type ProcessingDeps,
  processDocument,
  syncMetadata,
} from '#core/processing/process-document';
import { NO_METRICS } from '#ports/metrics';
import type { DocumentRef } from '#ports/processing';
import {
  type BedrockStandIn,
  type BedrockStandInOptions,
  startBedrockStandIn,
} from '../../lib/stack-check/bedrock-stand-in';
import { TABLES } from '../../lib/tables';
import { inMemoryBlobStore } from '../helpers/blobs';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';

const KNOWLEDGE_BASES: BedrockKnowledgeBases = {
  development: { knowledgeBaseId: 'KBDEV00001', dataSourceId: 'DSDEV00001' },
  staging: { knowledgeBaseId: 'KBSTG00001', dataSourceId: 'DSSTG00001' },
  production: { knowledgeBaseId: 'KBPRD00001', dataSourceId: 'DSPRD00001' },
};
const STAGING = KNOWLEDGE_BASES.staging;
const DECLARED = Object.fromEntries(
  Object.values(KNOWLEDGE_BASES).map(({ knowledgeBaseId, dataSourceId }) => [knowledgeBaseId, [dataSourceId]]),
);
const CLIENT_CONFIG = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } };
const NOW = '2026-11-28T12:00:00.000Z';

/** A text of about `chunks` chunks (1,000 characters a chunk). */
function textOf(chunks: number, topic: string): string {
  return Array.from(
    { length: chunks * 13 },
    (_, i) => `${topic} paragraph ${i} says the refund of order ${i} is paid within ${i % 30} days.`,
  ).join('\n\n');
}

let dynamo: LocalDynamo;
let table = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
});
afterAll(async () => {
  await dynamo?.stop();
});

type Counts = Record<string, number>;

interface World {
  readonly standIn: BedrockStandIn;
  readonly deps: ProcessingDeps;
  readonly store: DynamoDocumentStore;
  readonly index: BedrockKnowledgeIndex;
  readonly tableName: string;
  /** The requests `step` made to Bedrock, by operation. */
  calls(step: () => Promise<unknown>): Promise<Counts>;
  close(): Promise<void>;
}

async function world(
  otherDocuments: number,
  options: Pick<BedrockStandInOptions, 'throttle' | 'failIndexing'> & { agentRetry?: RetryConfig } = {},
): Promise<World> {
  table += 1;
  const tableName = await dynamo.createTable(`documents-${table}`, TABLES.documents);
  const store = new DynamoDocumentStore(dynamo.client, tableName);
  const standIn = await startBedrockStandIn({
    knowledgeBases: DECLARED,
    throttle: options.throttle,
    failIndexing: options.failIndexing,
  });
  // Other tenants' chunks, named as the adapter names them, on both sides of ours in the listing order.
  standIn.seed(
    STAGING.knowledgeBaseId,
    STAGING.dataSourceId,
    Array.from({ length: otherDocuments }, (_, i) => ({
      id: `agent-${String(i % 97).padStart(2, '0')}/kb-${i % 13}/doc-${i}#u:upload-${i}#0`,
      text: `Other tenant document ${i} about shipping.`,
    })),
  );
  expect(standIn.documentCount(STAGING.knowledgeBaseId, STAGING.dataSourceId)).toBe(otherDocuments);
  const config = { ...CLIENT_CONFIG, endpoint: standIn.endpoint };
  const agent = new BedrockAgentClient({ ...config, ...(options.agentRetry ?? BEDROCK_AGENT_RETRY) });
  const runtime = new BedrockAgentRuntimeClient({ ...config, ...BEDROCK_AGENT_RUNTIME_RETRY });
  const blobs = inMemoryBlobStore();
  const deps: ProcessingDeps = {
    documents: store,
    blobs,
    queue: { send: async () => undefined, sendAll: async () => undefined },
    // Replaced below: the index reads chunk texts back through deps.
    index: undefined as never,
    extractor: new DocumentTextExtractor(),
    embedder: null,
    clock: { now: () => new Date(NOW) },
    metrics: NO_METRICS,
    settings: { maxFileBytes: 10_000_000, confirmAttempts: 3, confirmDelaySeconds: 1 },
  };
  const index = new BedrockKnowledgeIndex({
    agentClient: agent,
    runtimeClient: runtime,
    knowledgeBases: KNOWLEDGE_BASES,
    // As the processing container does: the current content's chunks, of the upload asked for only.
    chunkTexts: {
      chunksOf: async (ref, uploadId) => {
        const doc = await store.get(ref, ref.documentId);
        return doc && doc.status !== 'reserved' && (uploadId === undefined || doc.uploadId === uploadId)
          ? buildChunks(deps, doc)
          : [];
      },
    },
    manifests: new ChunkManifests(blobs),
  });
  const withIndex = { ...deps, index };
  return {
    standIn,
    deps: withIndex,
    store,
    index,
    tableName,
    calls: async (step) => {
      const before = standIn.requests.length;
      await step();
      const counts: Counts = {};
      for (const request of standIn.requests.slice(before)) {
        const operation = request.operation ?? 'unknown';
        counts[operation] = (counts[operation] ?? 0) + 1;
      }
      return counts;
    },
    close: async () => {
      agent.destroy();
      runtime.destroy();
      await standIn.stop();
    },
  };
}

const REF: DocumentRef = {
  agentId: 'agent-50',
  environment: 'staging',
  knowledgeBaseId: 'kb-7',
  documentId: 'doc-under-test',
};
const S3_KEY = `${REF.agentId}/${REF.environment}/${REF.knowledgeBaseId}/${REF.documentId}/notes.txt`;

/** A new document (reserved, then uploaded) holding `text`, as upload-link and upload-complete make one. */
async function createDocument(w: World, uploadId: string, text: string): Promise<void> {
  await w.deps.blobs.put(S3_KEY, Buffer.from(text), 'text/plain');
  const reservation = reservationRecord({
    ...REF,
    organizationId: 'org-1',
    customDocumentId: null,
    s3Key: S3_KEY,
    fileName: 'notes.txt',
    uploadId,
    reservedUntil: NOW,
    contentType: 'text/plain',
    createdAt: NOW,
  });
  expect(await w.store.reserve(reservation, NOW)).toBe(true);
  const content = {
    uploadId,
    objectKey: S3_KEY,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(text),
    updatedAt: NOW,
  };
  expect(await w.store.completeReservation(REF, REF.documentId, content, {}, NOW)).toBe(true);
}

async function replaceContent(w: World, uploadId: string, text: string): Promise<void> {
  const objectKey = `${REF.agentId}/${REF.environment}/${REF.knowledgeBaseId}/${REF.documentId}/_versions/${uploadId}/notes.txt`;
  await w.deps.blobs.put(objectKey, Buffer.from(text), 'text/plain');
  const content = {
    uploadId,
    objectKey,
    fileName: 'notes.txt',
    contentType: 'text/plain',
    fileSize: Buffer.byteLength(text),
    updatedAt: NOW,
  };
  expect(await w.store.replaceContent(REF, REF.documentId, content, {})).toBeDefined();
}

const ours = (w: World) => w.standIn.documentCount(STAGING.knowledgeBaseId, STAGING.dataSourceId);

/** The document's whole life, with the Bedrock calls of each step. */
async function lifecycle(w: World, otherDocuments: number) {
  const first = textOf(25, 'Billing');
  const second = textOf(12, 'Shipping');
  const firstChunks = chunkText(first).length;
  const secondChunks = chunkText(second).length;
  await createDocument(w, 'upload-1', first);

  const write = await w.calls(async () => expect(await processDocument(w.deps, REF, 'upload-1')).toBe('ready'));
  const written = (await w.store.get(REF, REF.documentId)) as DocumentRecord;
  expect(written.status).toBe('ready');
  expect(written.indexedChunks).toEqual([{ uploadId: 'upload-1', count: firstChunks }]);
  expect(ours(w)).toBe(otherDocuments + firstChunks);

  await w.store.patchMetadata(REF, REF.documentId, { label1: 'topic:billing' }, NOW);
  const relabel = await w.calls(async () => expect(await syncMetadata(w.deps, REF)).toBe('ready'));
  const labelled = await w.index.query({
    scope: REF,
    text: 'refund paid',
    filters: [{ key: 'label1', operator: 'equals', value: 'topic:billing' }],
    limit: 100,
  });
  expect(labelled).toHaveLength(firstChunks);

  await replaceContent(w, 'upload-2', second);
  const replace = await w.calls(async () => expect(await processDocument(w.deps, REF, 'upload-2')).toBe('ready'));
  expect(((await w.store.get(REF, REF.documentId)) as DocumentRecord).indexedChunks).toEqual([
    { uploadId: 'upload-2', count: secondChunks },
  ]);
  // The first upload's 25 chunks are gone, the second's 12 are there.
  expect(ours(w)).toBe(otherDocuments + secondChunks);
  const found = await w.index.query({ scope: REF, text: 'Shipping refund', filters: [], limit: 100 });
  expect(found).toHaveLength(secondChunks);
  expect(found.filter((hit) => hit.chunk.text.includes('Billing'))).toEqual([]);

  const removed = (await w.store.delete(REF, REF.documentId)) as DocumentRecord;
  const remove = await w.calls(async () =>
    expect(await deleteDocumentChunks(w.deps, REF, removed.indexedChunks)).toBe('ready'),
  );
  expect(ours(w)).toBe(otherDocuments);
  expect(await w.index.query({ scope: REF, text: 'Shipping refund', filters: [], limit: 100 })).toEqual([]);
  expect(w.standIn.violations).toEqual([]);
  return { chunks: { first: firstChunks, second: secondChunks }, write, relabel, replace, remove };
}

/** Calls of 10 documents for `n` chunks. */
const callsFor = (n: number) => Math.ceil(n / 10);

const figures: Record<number, Awaited<ReturnType<typeof lifecycle>>> = {};

describe('Bedrock calls per document write, with 10 and with 100,000 documents in the data source', () => {
  test.each([10, 100_000])('%i documents of other tenants: no call lists the data source', async (others) => {
    const w = await world(others);
    try {
      figures[others] = await lifecycle(w, others);
    } finally {
      await w.close();
    }
    const { chunks: _, ...steps } = figures[others];
    for (const step of Object.values(steps)) expect(step.ListKnowledgeBaseDocuments).toBeUndefined();
    console.log(`[bedrock-scale] ${others} documents in the data source: ${JSON.stringify(figures[others])}`);
  });

  test('the calls are the same at 100,000 documents as at 10: they follow the document, not the data source', () => {
    expect(figures[100_000]).toEqual(figures[10]);
    const { first, second } = figures[10].chunks;
    expect(first).toBeGreaterThan(20);
    // Ingest the chunks, 10 a call; look the new ids up once, to catch an ingest Bedrock took for a duplicate and to
    // count them indexed.
    expect(figures[10].write).toEqual({
      IngestKnowledgeBaseDocuments: callsFor(first),
      GetKnowledgeBaseDocuments: callsFor(first),
    });
    // Which of the upload's ids Bedrock holds, then those ingested again with the new metadata.
    expect(figures[10].relabel).toEqual({
      GetKnowledgeBaseDocuments: callsFor(first),
      IngestKnowledgeBaseDocuments: callsFor(first),
    });
    // The new chunks in; the old upload's looked up and deleted; the new ones looked up (and counted) once.
    expect(figures[10].replace).toEqual({
      IngestKnowledgeBaseDocuments: callsFor(second),
      GetKnowledgeBaseDocuments: callsFor(first) + callsFor(second),
      DeleteKnowledgeBaseDocuments: callsFor(first),
    });
    expect(figures[10].remove).toEqual({
      GetKnowledgeBaseDocuments: callsFor(second),
      DeleteKnowledgeBaseDocuments: callsFor(second),
    });
  });
});

describe('a record written before indexedChunks was kept', () => {
  /** Deletes a document whose record has no indexedChunks: the calls of that deletion. */
  async function legacyDeletion(others: number): Promise<Counts> {
    const w = await world(others);
    try {
      await createDocument(w, 'upload-1', textOf(25, 'Billing'));
      expect(await processDocument(w.deps, REF, 'upload-1')).toBe('ready');
      // As an older deployment left it: no indexedChunks on the record.
      await dynamo.client.send(
        new UpdateCommand({
          TableName: w.tableName,
          Key: { tenantKey: `${REF.agentId}#${REF.environment}#${REF.knowledgeBaseId}`, documentId: REF.documentId },
          UpdateExpression: 'REMOVE indexedChunks',
        }),
      );
      const removed = (await w.store.delete(REF, REF.documentId)) as DocumentRecord;
      expect(removed.indexedChunks).toBeUndefined();
      const calls = await w.calls(async () =>
        expect(await deleteDocumentChunks(w.deps, REF, removed.indexedChunks)).toBe('ready'),
      );
      expect(ours(w)).toBe(others);
      return calls;
    } finally {
      await w.close();
    }
  }

  test('is still deleted whole, by listing the data source: 1 page at 10 documents, 101 at 100,000', async () => {
    const small = await legacyDeletion(10);
    const large = await legacyDeletion(100_000);
    console.log(
      `[bedrock-scale] older record deleted: 10 → ${JSON.stringify(small)}, 100,000 → ${JSON.stringify(large)}`,
    );
    const deletes = callsFor(chunkText(textOf(25, 'Billing')).length);
    expect(small).toEqual({ ListKnowledgeBaseDocuments: 1, DeleteKnowledgeBaseDocuments: deletes });
    expect(large).toEqual({ ListKnowledgeBaseDocuments: 101, DeleteKnowledgeBaseDocuments: deletes });
  });

  test('is named exactly again by its next processing, which lists once and then writes indexedChunks', async () => {
    const w = await world(1000);
    try {
      await createDocument(w, 'upload-1', textOf(25, 'Billing'));
      // An older deployment's chunks: content-named ids, and a record without indexedChunks.
      const key = { tenantKey: `${REF.agentId}#${REF.environment}#${REF.knowledgeBaseId}`, documentId: REF.documentId };
      await dynamo.client.send(
        new UpdateCommand({ TableName: w.tableName, Key: key, UpdateExpression: 'REMOVE indexedChunks' }),
      );
      const doc = (await w.store.get(REF, REF.documentId)) as DocumentRecord;
      const older = await buildChunks(w.deps, doc);
      await w.index.replaceDocument(REF, older);
      expect(ours(w)).toBe(1000 + older.length);

      const second = textOf(12, 'Shipping');
      await replaceContent(w, 'upload-2', second);
      const calls = await w.calls(async () => expect(await processDocument(w.deps, REF, 'upload-2')).toBe('ready'));
      // 1,000 other documents and ours: two pages, once.
      expect(calls.ListKnowledgeBaseDocuments).toBe(2);
      const n = chunkText(second).length;
      expect(ours(w)).toBe(1000 + n);
      const now = (await w.store.get(REF, REF.documentId)) as DocumentRecord;
      expect(now.indexedChunks).toEqual([{ uploadId: 'upload-2', count: n }]);
      // From now on it is addressed directly.
      const removed = (await w.store.delete(REF, REF.documentId)) as DocumentRecord;
      const remove = await w.calls(() => deleteDocumentChunks(w.deps, REF, removed.indexedChunks));
      expect(remove).toEqual({ GetKnowledgeBaseDocuments: callsFor(n), DeleteKnowledgeBaseDocuments: callsFor(n) });
      expect(ours(w)).toBe(1000);
    } finally {
      await w.close();
    }
  });
});

describe('an ingest Bedrock throttles', () => {
  /** Processes a new document while Bedrock throttles the first `throttled` ingests: the outcome and the 429s. */
  async function throttledWrite(throttled: number, agentRetry?: RetryConfig) {
    let answered = 0;
    const w = await world(10, {
      agentRetry,
      throttle: ({ operation }) => operation === 'IngestKnowledgeBaseDocuments' && answered++ < throttled,
    });
    try {
      await createDocument(w, 'upload-1', textOf(5, 'Billing'));
      const outcome = await processDocument(w.deps, REF, 'upload-1').catch((error: Error) => error.name);
      const status = (await w.store.get(REF, REF.documentId))?.status;
      return { outcome, status, throttledAnswers: w.standIn.requests.filter((r) => r.status === 429).length };
    } finally {
      await w.close();
    }
  }

  test('three times in a row is retried with backoff by the deployed clients, and the document ends ready', async () => {
    expect(BEDROCK_AGENT_RETRY).toEqual({ retryMode: 'adaptive', maxAttempts: 8 });
    expect(await throttledWrite(3)).toEqual({ outcome: 'ready', status: 'ready', throttledAnswers: 3 });
  });

  test("with the SDK's default 3 attempts the same throttling fails the message (the queue's receives count down)", async () => {
    expect(await throttledWrite(3, { retryMode: 'standard', maxAttempts: 3 })).toEqual({
      outcome: 'ThrottlingException',
      status: 'uploaded',
      throttledAnswers: 3,
    });
  });
});

describe('a chunk Bedrock accepts and then fails to index', () => {
  test('is ingested again by the next confirm-indexed, and the document ends ready instead of INDEXING_FAILED', async () => {
    // The chunk at position 3 fails its first indexing inside Bedrock (as when the embedding model throttles it).
    const failedOnce = new Set<string>();
    const w = await world(10, {
      failIndexing: (id) => {
        if (!id.endsWith('#u:upload-1#3') || failedOnce.has(id)) return false;
        failedOnce.add(id);
        return true;
      },
    });
    try {
      const text = textOf(25, 'Billing');
      await createDocument(w, 'upload-1', text);
      expect(await processDocument(w.deps, REF, 'upload-1')).toBe('pending-index');
      expect(failedOnce.size).toBe(1);
      // The first confirm finds it FAILED and sends it again; the next one counts every chunk.
      const first = await w.calls(async () =>
        expect(await confirmIndexed(w.deps, REF, 'upload-1', 1)).toBe('pending-index'),
      );
      expect(first).toEqual({
        GetKnowledgeBaseDocuments: callsFor(chunkText(text).length),
        IngestKnowledgeBaseDocuments: 1,
      });
      expect(await confirmIndexed(w.deps, REF, 'upload-1', 2)).toBe('ready');
      expect(ours(w)).toBe(10 + chunkText(text).length);
    } finally {
      await w.close();
    }
  });
});

describe('uploads named in the ids keep racing writers apart', () => {
  test('a document deleted and created again before its delete-document runs keeps the new chunks only', async () => {
    const w = await world(10);
    try {
      const first = textOf(25, 'Billing');
      await createDocument(w, 'upload-1', first);
      expect(await processDocument(w.deps, REF, 'upload-1')).toBe('ready');
      const removed = (await w.store.delete(REF, REF.documentId)) as DocumentRecord;
      // The same customDocumentId is used again at once; its processing knows nothing of the deleted one's chunks.
      const again = textOf(12, 'Shipping');
      await createDocument(w, 'upload-3', again);
      expect(await processDocument(w.deps, REF, 'upload-3')).toBe('ready');
      expect(ours(w)).toBe(10 + chunkText(first).length + chunkText(again).length);

      expect(await deleteDocumentChunks(w.deps, REF, removed.indexedChunks)).toBe('ready');
      expect(ours(w)).toBe(10 + chunkText(again).length);
      const found = await w.index.query({ scope: REF, text: 'refund paid', filters: [], limit: 100 });
      expect(found).toHaveLength(chunkText(again).length);
      expect(found.filter((hit) => hit.chunk.text.includes('Billing'))).toEqual([]);
    } finally {
      await w.close();
    }
  });

  test('a worker killed after its chunks reached Bedrock leaves a record that names them: the deletion removes them all', async () => {
    const w = await world(10);
    try {
      const first = textOf(25, 'Billing');
      const second = textOf(12, 'Shipping');
      await createDocument(w, 'upload-1', first);
      expect(await processDocument(w.deps, REF, 'upload-1')).toBe('ready');
      await replaceContent(w, 'upload-2', second);
      // Worker B sends upload-2's chunks and dies before it removes upload-1's or narrows the record.
      const dying = Object.assign(Object.create(w.index) as BedrockKnowledgeIndex, {
        replaceDocument: async (...[ref, chunks]: Parameters<BedrockKnowledgeIndex['replaceDocument']>) => {
          await w.index.replaceDocument(ref, chunks, { uploadId: 'upload-2', previous: [] });
          throw new Error('worker killed');
        },
      });
      await expect(processDocument({ ...w.deps, index: dying }, REF, 'upload-2')).rejects.toThrow('worker killed');
      expect(ours(w)).toBe(10 + chunkText(first).length + chunkText(second).length);
      const removed = (await w.store.delete(REF, REF.documentId)) as DocumentRecord;
      expect(removed.indexedChunks).toEqual([
        { uploadId: 'upload-1', count: chunkText(first).length },
        { uploadId: 'upload-2', count: chunkText(second).length },
      ]);
      expect(await deleteDocumentChunks(w.deps, REF, removed.indexedChunks)).toBe('ready');
      expect(ours(w)).toBe(10);
    } finally {
      await w.close();
    }
  });

  test("a worker whose upload was replaced while it indexed removes its own chunks, not the newer upload's", async () => {
    const w = await world(10);
    try {
      const first = textOf(25, 'Billing');
      const second = textOf(12, 'Shipping');
      await createDocument(w, 'upload-1', first);
      // Worker A indexes upload-1; just before its chunks reach Bedrock, upload-2 replaces the content and its
      // processing (worker B) runs to `ready`, finding none of A's chunks to remove yet.
      const slow = Object.assign(Object.create(w.index) as BedrockKnowledgeIndex, {
        replaceDocument: async (...args: Parameters<BedrockKnowledgeIndex['replaceDocument']>) => {
          await replaceContent(w, 'upload-2', second);
          expect(await processDocument(w.deps, REF, 'upload-2')).toBe('ready');
          await w.index.replaceDocument(...args);
        },
      });
      expect(await processDocument({ ...w.deps, index: slow }, REF, 'upload-1')).toBe('skipped');

      const doc = (await w.store.get(REF, REF.documentId)) as DocumentRecord;
      expect(doc).toMatchObject({ status: 'ready', uploadId: 'upload-2' });
      expect(doc.indexedChunks).toEqual([{ uploadId: 'upload-2', count: chunkText(second).length }]);
      expect(ours(w)).toBe(10 + chunkText(second).length);
      const found = await w.index.query({ scope: REF, text: 'refund paid', filters: [], limit: 100 });
      expect(found.filter((hit) => hit.chunk.text.includes('Billing'))).toEqual([]);
    } finally {
      await w.close();
    }
  });
});
