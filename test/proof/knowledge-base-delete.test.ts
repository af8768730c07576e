/**
 * Deleting a large knowledge base while the worker is killed (issue 13, item 2): documents in all three environments,
 * then DELETE, and the worker (`bin/worker.ts`, beside a runtime started with LOCAL_WORKER=off) is SIGKILLed while the
 * job removes pages of documents, and started again. Afterwards nothing of the knowledge base is left: no record in
 * the documents table, no object under its prefixes in the bucket, no chunk in the LanceDB index, no ZIP job, and no
 * row; another knowledge base of the same agent keeps everything.
 *
 * The documents are real: in each environment a ZIP import of tiny files and one document updated once (its content
 * under `_versions/`) go through the public API and the worker; the bulk is written straight into the stores the
 * way processing leaves a `ready` document (the record through the document store's own conditional writes, the
 * object in the bucket, the chunks of the real chunker through the LanceDB index), since ingesting 2,000 documents
 * through the pipeline would take minutes and is not what this proves.
 *
 * `npm test`: 200 documents, pages of 25, one kill. `PROOF_SIZE=full`: 2,000 documents, pages of 100 (the default),
 * two kills.
 */

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { reservationRecord } from '#core/knowledge/document';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import { CHUNK_OVERLAP, CHUNK_SIZE, chunkId, chunkText } from '#core/processing/chunking';
import { DOCUMENTS_BUCKET } from '../../lib/local/engines';
import { NO_METADATA } from '../helpers/chunks';
import { createDataset, type Dataset, putFile, type UploadLink, uploadDocument, zipOf } from '../helpers/fixtures';
import { type EngineReader, engineReader, NOTHING_LEFT } from '../helpers/knowledge-base-remains';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker, type TestWorker } from '../helpers/worker';
import { FULL_SIZE, printFigures, proofSize } from './size';

const SIZE = proofSize({ documents: 200, pageSize: 25, kills: 1 }, { documents: 2000, pageSize: 100, kills: 2 });
const PER_ENVIRONMENT = Math.ceil(SIZE.documents / ENVIRONMENTS.length);
/** Files of each environment's ZIP import; one more document is uploaded and updated; the rest is written directly. */
const ZIP_FILES = 20;
const DIRECT = PER_ENVIRONMENT - ZIP_FILES - 1;
/** A message received by a killed worker comes back this soon; the watchdog resumes a lost one after the timeout. */
const VISIBILITY_TIMEOUT_SECONDS = 3;
const WORKER_ENV = {
  PROCESSING_TIMEOUT_SECONDS: '10',
  WATCHDOG_INTERVAL_SECONDS: '1',
  KNOWLEDGE_BASE_DELETION_PAGE_SIZE: String(SIZE.pageSize),
};

jest.setTimeout(FULL_SIZE ? 1_200_000 : 240_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Direct writes of documents at once (the index retries commits that conflict). */
const WRITES_IN_FLIGHT = 4;

async function eachLimited(count: number, limit: number, run: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await run(next++);
    }),
  );
}

let service: TestService;
let dataDir: string;
const workers: TestWorker[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'aps-kb-delete-proof-'));
  service = await startService({
    dataDir,
    env: { LOCAL_WORKER: 'off', PROCESSING_VISIBILITY_TIMEOUT_SECONDS: String(VISIBILITY_TIMEOUT_SECONDS) },
  });
});

afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await service?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

it(`deletes ${SIZE.documents} documents in three environments to the last trace while the worker is killed`, async () => {
  const call = client(service);
  const started = Date.now();
  const kb = await createDataset(call, 'production');
  const control: Dataset = {
    ...kb,
    knowledgeBaseId: (
      await call<{ knowledgeBaseId: string }>('POST', `/dashboard/agents/${kb.agentId}/knowledge/bases`, {
        body: { name: 'Control' },
      })
    ).body.knowledgeBaseId,
  };
  const engines = engineReader(dataDir);
  // Before any worker runs: this process is then the only one writing the index.
  await writeReadyDocuments(engines, kb, DIRECT);
  const directAt = Date.now();

  let worker = await startWorker(dataDir, WORKER_ENV);
  workers.push(worker);
  const zipJobIds: string[] = [];
  for (const environment of ENVIRONMENTS) {
    const dataset = { ...kb, environment };
    const files = Object.fromEntries(
      Array.from({ length: ZIP_FILES }, (_, i) => [
        `file-${String(i).padStart(4, '0')}.txt`,
        `Document ${i} of ${environment}: the router manual, page ${i}.`,
      ]),
    );
    const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
      body: { ...dataset, fileName: `batch-${environment}.zip` },
    });
    expect((await putFile(link.body, await zipOf(files))).status).toBe(200);
    const complete = await call('POST', '/api/v1/knowledge/documents/upload-complete', {
      body: { uploadId: link.body.uploadId },
    });
    expect(complete.status).toBe(200);
    zipJobIds.push(link.body.zipJobId as string);

    const { link: single } = await uploadDocument(call, dataset, { fileName: 'updated.txt' }, 'First version.');
    await pollUntil(
      () =>
        call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: single.s3Key } }),
      (r) => r.body.status === 'ready',
      60_000,
    );
    const update = await call<UploadLink>('POST', '/api/v1/knowledge/documents/update/upload-link', {
      body: { ...dataset, s3Key: single.s3Key, fileName: 'updated-v2.txt' },
    });
    await putFile(update.body, 'Second version of the router manual.');
    const updated = await call('POST', '/api/v1/knowledge/documents/update/upload-complete', {
      body: { uploadId: update.body.uploadId },
    });
    expect(updated.status).toBe(200);
  }
  await uploadDocument(call, control, { fileName: 'kept.txt' }, 'The control knowledge base keeps this.');
  for (const zipJobId of zipJobIds) {
    const job = await pollUntil(
      () => call<{ status: string }>('GET', `/api/v1/knowledge/zip-jobs/${zipJobId}`),
      (r) => r.body.status === 'completed' || r.body.status === 'failed',
      120_000,
    );
    expect(job.body.status).toBe('completed');
  }
  // Every document ready, with its chunks: no upload left to race the deletion (that race has a test of its own).
  const ready = await pollUntil(
    () => engines.remains(kb.agentId, kb.knowledgeBaseId, zipJobIds),
    (remains) => ENVIRONMENTS.every((env) => remains.chunks[env] >= PER_ENVIRONMENT),
    120_000,
  );
  expect(ready.documents).toEqual({
    development: PER_ENVIRONMENT,
    staging: PER_ENVIRONMENT,
    production: PER_ENVIRONMENT,
  });
  expect(ready.objects).toHaveLength(PER_ENVIRONMENT * ENVIRONMENTS.length);
  expect(ready.objects.filter((key) => key.includes('/_versions/'))).toHaveLength(ENVIRONMENTS.length);
  expect(ready.zipJobItems).toBe((ZIP_FILES + 1) * ENVIRONMENTS.length);
  const ingestedAt = Date.now();

  // The documents left, counted cheaply (a COUNT query per environment) while the job runs.
  const count = async () => {
    let total = 0;
    for (const environment of ENVIRONMENTS) {
      const { Count } = await engines.dynamo.send(
        new QueryCommand({
          TableName: 'documents',
          // Documents only: their ids start with a letter or digit, so they sort after the counters item (`#counts`).
          KeyConditionExpression: 'tenantKey = :t AND documentId >= :first',
          ExpressionAttributeValues: {
            ':t': `${kb.agentId}#${environment as Environment}#${kb.knowledgeBaseId}`,
            ':first': '0',
          },
          Select: 'COUNT',
          ConsistentRead: true,
        }),
      );
      total += Count ?? 0;
    }
    return total;
  };

  const total = await count();
  expect(total).toBe(PER_ENVIRONMENT * ENVIRONMENTS.length);
  const deleteStarted = Date.now();
  const deleted = await call('DELETE', `/dashboard/agents/${kb.agentId}/knowledge/bases/${kb.knowledgeBaseId}`);
  expect(deleted.status).toBe(202);
  // The kills are spread over the job: the k-th when at most (kills + 1 - k) / (kills + 1) of the documents are left,
  // a random moment later (mid-page, most often), and each after the job moved since the worker (re)started.
  const killedAt: number[] = [];
  let restartedAt = { at: Date.now(), left: total };
  while (killedAt.length < SIZE.kills) {
    const left = await count();
    if (left === 0) break;
    const threshold = (total * (SIZE.kills - killedAt.length)) / (SIZE.kills + 1);
    if (left <= threshold && left < restartedAt.left) {
      await sleep(Math.random() * 200);
      await worker.kill();
      killedAt.push(left);
      worker = await startWorker(dataDir, WORKER_ENV);
      workers.push(worker);
      restartedAt = { at: Date.now(), left: await count() };
    }
    await sleep(50);
  }
  expect(killedAt).toHaveLength(SIZE.kills);
  const gone = await pollUntil(
    () => call('DELETE', `/dashboard/agents/${kb.agentId}/knowledge/bases/${kb.knowledgeBaseId}`),
    (r) => r.status === 404,
    FULL_SIZE ? 600_000 : 120_000,
  );
  expect(gone.status).toBe(404);
  const endedAt = Date.now();
  const deleteSeconds = (endedAt - deleteStarted) / 1000;
  const lastRunSeconds = (endedAt - restartedAt.at) / 1000;

  expect(await engines.remains(kb.agentId, kb.knowledgeBaseId, zipJobIds)).toEqual(NOTHING_LEFT);
  const kept = await engines.remains(control.agentId, control.knowledgeBaseId);
  expect({ documents: kept.documents.production, objects: kept.objects.length, row: kept.knowledgeBaseRow }).toEqual({
    documents: 1,
    objects: 1,
    row: true,
  });
  engines.close();

  const resumed = workers
    .map((w) => w.output())
    .join('\n')
    .match(/"deletionsResumed":[1-9]/g);
  printFigures('kb-delete', [
    `${total} documents, ${PER_ENVIRONMENT} in each environment (${DIRECT} written directly, a ZIP import of ${ZIP_FILES}, one updated document), pages of ${SIZE.pageSize}`,
    `deleted in ${deleteSeconds.toFixed(1)} s from DELETE to the row gone (${(total / deleteSeconds).toFixed(0)} documents/s); setup ${((ingestedAt - started) / 1000).toFixed(1)} s (direct writes ${((directAt - started) / 1000).toFixed(1)} s)`,
    `worker killed with SIGKILL ${killedAt.length} times, with ${killedAt.join(' and ')} documents left; watchdog resumed the job ${resumed?.length ?? 0} times`,
    `after the last restart, undisturbed: ${restartedAt.left} documents in ${lastRunSeconds.toFixed(1)} s (${(restartedAt.left / lastRunSeconds).toFixed(0)} documents/s)`,
    'left: 0 documents, 0 objects, 0 chunks, 0 ZIP job items, no row; the control knowledge base kept its document',
  ]);
});

/**
 * `count` documents per environment as processing leaves them `ready`: reserved, object stored, completed, `ready`
 * (the document store's own conditional writes), and the chunks of the real chunker in the index.
 */
async function writeReadyDocuments(engines: EngineReader, kb: Dataset, count: number): Promise<void> {
  const store = new DynamoDocumentStore(engines.dynamo, 'documents');
  const { Item } = await engines.dynamo.send(
    new GetCommand({ TableName: 'knowledgeBases', Key: { agentId: kb.agentId, knowledgeBaseId: kb.knowledgeBaseId } }),
  );
  const organizationId = String(Item?.organizationId);
  const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'));
  try {
    for (const environment of ENVIRONMENTS) {
      const ref = { agentId: kb.agentId, environment, knowledgeBaseId: kb.knowledgeBaseId };
      await eachLimited(count, WRITES_IN_FLIGHT, async (i) => {
        const documentId = randomUUID();
        const uploadId = randomUUID();
        const fileName = `direct-${String(i).padStart(4, '0')}.txt`;
        const s3Key = `${kb.agentId}/${environment}/${kb.knowledgeBaseId}/${documentId}/${fileName}`;
        const text = `Direct document ${i} of ${environment}: how to reset the router, step ${i}.`;
        const now = new Date().toISOString();
        const record = reservationRecord({
          ...ref,
          organizationId,
          documentId,
          customDocumentId: null,
          s3Key,
          fileName,
          uploadId,
          reservedUntil: now,
          contentType: 'text/plain',
          createdAt: now,
        });
        expect(await store.reserve(record, now)).toBe(true);
        await engines.s3.send(
          new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: s3Key, Body: text, ContentType: 'text/plain' }),
        );
        const content = {
          uploadId,
          objectKey: s3Key,
          fileName,
          contentType: 'text/plain',
          fileSize: text.length,
          updatedAt: now,
        };
        await store.completeReservation(ref, documentId, content, {}, now);
        const pieces = chunkText(text, { size: CHUNK_SIZE, overlap: CHUNK_OVERLAP });
        await index.replaceDocument(
          { ...ref, documentId },
          pieces.map((piece, position) => ({
            ...ref,
            documentId,
            chunkId: chunkId(documentId, position, piece),
            s3Key,
            position,
            text: piece,
            ...NO_METADATA,
          })),
        );
        expect(await store.setStatus(ref, documentId, uploadId, 'ready', null, now)).toBeDefined();
      });
    }
  } finally {
    await index.close();
  }
}
