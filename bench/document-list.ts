/**
 * `npm run bench -- documents`: the rate limiter's cost per request, and GET /api/v1/knowledge/documents/list's use case on the local engine (dynalite in
 * memory behind the local transactions, the tables of lib/tables.ts) with 10,000 documents in the dataset, written
 * through the DynamoDocumentStore as upload-complete and processing write them. The baseline is GET of one document
 * (its use case) in the same run. It also prices the counters: a status change (a transaction with the dataset's
 * counters item) against a metadata change (one conditional update), both through the store.
 */
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoAgentStore } from '#adapters/store/dynamodb/agent-store';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { DynamoRateLimitCounters } from '#adapters/store/dynamodb/rate-limit-store';
import { checkRateLimit, DEFAULT_RATE_LIMIT } from '#core/auth/rate-limit';
import { type DatasetRef, reservationRecord } from '#core/knowledge/document';
import { getDocument } from '#core/knowledge/get-document';
import type { KnowledgeDeps } from '#core/knowledge/knowledge-deps';
import { listDocuments } from '#core/knowledge/list-documents';
import { createDynalite } from '../lib/local/dynalite-store';
import { serveTransactions } from '../lib/local/dynamo-transactions';
import { createTableInput } from '../lib/local/engines';
import { TABLES } from '../lib/tables';
import { type Benchmark, type BenchRow, type BenchSection, loadAverageAfter, medianMs } from './report';

const DOCUMENTS = 10_000;
const ORGANIZATION = 'bench-org';
const dataset: DatasetRef = {
  agentId: '0b5a1a9e-8c1f-4f0e-9a59-3f1d2c9a7b10',
  environment: 'production',
  knowledgeBaseId: '7d0f3c2e-5b4a-4e8f-8a1d-2c3b4a5d6e7f',
};
const caller = { organizationId: ORGANIZATION, tokenId: 'bench', scopes: ['knowledge-management'] };
const START = Date.parse('2025-01-06T00:00:00.000Z');
/** Writers at once while seeding (the documents of a busy dataset arrive together). */
const SEED_WIDTH = 16;

async function eachLimited(count: number, width: number, run: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await run(next++);
    }),
  );
}

/** Document i: 70 % ready, 20 % failed, 10 % still uploaded; label1 by tenth, one name in 1,000 starts `rare-`. */
async function seed(documents: DynamoDocumentStore): Promise<number> {
  const started = Date.now();
  await eachLimited(DOCUMENTS, SEED_WIDTH, async (i) => {
    const documentId = `doc-${String(i).padStart(6, '0')}`;
    const at = new Date(START + i * 1000).toISOString();
    const uploadId = `upload-${i}`;
    const fileName = `${i % 1000 === 0 ? 'rare' : 'guide'}-${i}.txt`;
    const reservation = reservationRecord({
      ...dataset,
      organizationId: ORGANIZATION,
      documentId,
      customDocumentId: documentId,
      s3Key: `${dataset.agentId}/${dataset.environment}/${dataset.knowledgeBaseId}/${documentId}/${fileName}`,
      fileName,
      uploadId,
      reservedUntil: at,
      contentType: 'text/plain',
      createdAt: at,
    });
    if (!(await documents.reserve(reservation, at))) throw new Error(`${documentId} was taken`);
    const content = {
      uploadId,
      objectKey: reservation.s3Key,
      fileName,
      contentType: 'text/plain',
      fileSize: 2048,
      updatedAt: at,
    };
    const label1 = `team:t${Math.floor((i % 100) / 10)}`;
    await documents.completeReservation(dataset, documentId, content, { label1 }, at);
    const outcome = i % 10;
    if (outcome === 9) return;
    const failed = outcome >= 7;
    await documents.setStatus(
      dataset,
      documentId,
      uploadId,
      failed ? 'failed' : 'ready',
      failed ? { code: 'PARSE_ERROR', message: 'not a PDF' } : null,
      at,
    );
  });
  return (Date.now() - started) / 1000;
}

async function run(): Promise<BenchSection> {
  const server = createDynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  serveTransactions(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const raw = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region: 'us-east-1',
    credentials,
  });
  const client = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  try {
    for (const table of ['agents', 'knowledgeBases', 'documents', 'rateLimits'] as const) {
      await raw.send(new CreateTableCommand(createTableInput(table, TABLES[table])));
    }
    const agents = new DynamoAgentStore(client, 'agents');
    const knowledgeBases = new DynamoKnowledgeBaseStore(client, 'knowledgeBases');
    const documents = new DynamoDocumentStore(client, 'documents');
    const at = new Date(START).toISOString();
    await agents.put({
      organizationId: ORGANIZATION,
      agentId: dataset.agentId,
      displayName: 'Bench bot',
      createdAt: at,
    });
    await knowledgeBases.put({
      organizationId: ORGANIZATION,
      agentId: dataset.agentId,
      knowledgeBaseId: dataset.knowledgeBaseId,
      name: 'Bench',
      description: null,
      createdAt: at,
      updatedAt: at,
    });
    const seconds = await seed(documents);
    const deps = { agents, knowledgeBases, documents } as unknown as KnowledgeDeps;

    const counts = await documents.counts(dataset);
    const expected = { uploaded: DOCUMENTS / 10, ready: (DOCUMENTS * 7) / 10, failed: (DOCUMENTS * 2) / 10 };
    if (counts.uploaded !== expected.uploaded || counts.ready !== expected.ready || counts.failed !== expected.failed) {
      throw new Error(`the counts are not exact: ${JSON.stringify(counts)}`);
    }

    const getOne = medianMs(() => getDocument(deps, caller, { ...dataset, customDocumentId: 'doc-005000' }), 50, 5);
    const baseline = await getOne;
    const rows: BenchRow[] = [];
    const lists: [string, Record<string, string | number>][] = [
      ['first page of 50, no filter', {}],
      ['first page of 100, no filter', { limit: 100 }],
      ['status failed, 50', { status: 'failed' }],
      ['label1 team:t3 and status ready, 50', { label1: 'team:t3', status: 'ready' }],
      ['fileNamePrefix rare- (1 in 1,000: reads 1,000 a call)', { fileNamePrefix: 'rare-' }],
    ];
    for (const [name, filters] of lists) {
      const request = { ...dataset, ...filters };
      const page = await listDocuments(deps, caller, request);
      const ms = await medianMs(() => listDocuments(deps, caller, request), 30, 3);
      rows.push({
        name: `GET /list ${name}: ${page.documents.length} documents, ${DOCUMENTS.toLocaleString('en')} in the dataset`,
        value: ms,
        unit: 'ms',
        baseline,
        baselineName: 'GET one document',
        reading: 'p50; counts read with every page',
      });
    }
    // A status change against a metadata change: the counters' transaction costs the difference.
    let flips = 0;
    const statusChange = await medianMs(
      async () => {
        const i = 9 + 10 * flips++;
        const documentId = `doc-${String(i).padStart(6, '0')}`;
        await documents.setStatus(dataset, documentId, `upload-${i}`, 'ready', null, at);
      },
      50,
      5,
    );
    let patches = 0;
    const metadataChange = await medianMs(
      () => documents.patchMetadata(dataset, `doc-${String(patches++).padStart(6, '0')}`, { label2: 'kind:x' }, at),
      50,
      5,
    );
    rows.push({
      name: 'a status change (document write + counters, one transaction)',
      value: statusChange,
      unit: 'ms',
      baseline: metadataChange,
      baselineName: 'a metadata change (one conditional update)',
      reading: 'the counters cost: 2 items written, transactional (4 write units in AWS against 1)',
    });
    // The rate limiter every authenticated request runs first: one UpdateItem on the organization's window.
    const counters = new DynamoRateLimitCounters(client, 'rateLimits');
    let tick = 0;
    const limiter = await medianMs(
      // A new window every 10 requests, so the figure holds the window's first request (a new item) as often as real
      // traffic at 10 requests a window would.
      () => checkRateLimit(counters, DEFAULT_RATE_LIMIT, caller, START + Math.floor(tick++ / 10) * 2000),
      100,
      10,
    );
    rows.push({
      name: 'the rate limiter of one request (the organization’s window, one UpdateItem)',
      value: limiter,
      unit: 'ms',
      baseline,
      baselineName: 'GET one document',
      reading: 'what every authenticated request pays first (1 write, a window’s first too)',
    });
    return {
      title: 'Document list and rate limiter on the local engine',
      notes: [
        `dynalite in memory behind the local TransactWriteItems (lib/local/dynamo-transactions.ts), tables of ` +
          `lib/tables.ts; ${DOCUMENTS.toLocaleString('en')} documents of one dataset written through the ` +
          `DynamoDocumentStore (reserve, upload-complete, outcome), ${SEED_WIDTH} at a time, in ${seconds.toFixed(0)} s ` +
          `(${(DOCUMENTS / seconds).toFixed(0)} documents/s); the counts read back exact.`,
        'Each figure is the use case (tenancy reads, the page, the counters item), without HTTP and authorizer.',
        loadAverageAfter(),
      ],
      rows,
    };
  } finally {
    client.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

export const documentListBenchmark: Benchmark = { id: 'documents', run };
