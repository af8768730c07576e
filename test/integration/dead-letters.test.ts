/**
 * Erasure that always finishes, against the local runtime's real engines and a separate worker process: a delete
 * whose message the queue dead-letters is listed by `npm run redrive -- processing --peek` and moved back by
 * `npm run redrive -- processing` (receive → send → delete on fauxqs, which has no message move task), and its
 * chunks go; a delete whose message is lost altogether is queued again by the worker's watchdog, and its chunks go
 * too. Meanwhile (between the answer to DELETE and the erasure) the document is gone from the API, retrieval drops its
 * chunks, and the index still holds them: what docs/processing.md, "Owed work", says a reader sees.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { LanceKnowledgeIndex } from '#adapters/index/lancedb';
import { main as redrive } from '../../scripts/redrive';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';
import { startWorker } from '../helpers/worker';

const DOCS = '/api/v1/knowledge/documents';

let service: TestService;
let call: ReturnType<typeof client>;
let sqs: SQSClient;
let dataset: Dataset;
let queueUrl: string;
let deadLetterUrl: string;
const dataDir = mkdtempSync(join(tmpdir(), 'aps-dead-letters-'));

beforeAll(async () => {
  // Messages taken and not deleted come back after 1 s: three such receives dead-letter one.
  service = await startService({ dataDir, env: { LOCAL_WORKER: 'off', PROCESSING_VISIBILITY_TIMEOUT_SECONDS: '1' } });
  call = client(service);
  sqs = new SQSClient({
    endpoint: /SQS at (http:\/\/[^\s,]+)/.exec(service.output())?.[1],
    region: 'us-east-1',
    credentials: service.engineCredentials ?? undefined,
    useQueueUrlAsEndpoint: false,
  });
  queueUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing' }))).QueueUrl as string;
  deadLetterUrl = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'processing-dlq' }))).QueueUrl as string;
  dataset = await createDataset(call);
}, 120_000);

afterAll(async () => {
  sqs?.destroy();
  await service?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const depth = async (url: string) => {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible);
};

/** What the retrieval API finds of the document for `text`. */
async function retrieved(documentId: string, text: string): Promise<string[]> {
  const answer = await call<{ results: { content: string; metadata: { documentId: string } }[] }>(
    'POST',
    `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`,
    { body: { query: text, numberOfResults: 50 } },
  );
  expect(answer.status).toBe(200);
  return answer.body.results.filter((r) => r.metadata.documentId === documentId).map((r) => r.content);
}

/** The document's chunks in the index itself, read from the data folder as a second process would. */
async function indexed(documentId: string): Promise<number> {
  const index = await LanceKnowledgeIndex.open(join(dataDir, 'index'));
  try {
    return await index.countDocumentChunks({ ...dataset, documentId });
  } finally {
    await index.close();
  }
}

/** Takes every message of the processing queue; those `dies` picks are never deleted (the consumer dies). */
async function consume(dies: (body: { kind?: string; documentId?: string }) => boolean, until: () => Promise<boolean>) {
  const deadline = Date.now() + 30_000;
  while (!(await until()) && Date.now() < deadline) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    for (const message of Messages) {
      if (dies(JSON.parse(message.Body ?? '{}'))) continue;
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
    }
  }
}

it('erases a dead-lettered delete once redriven, and a lost one through the watchdog', async () => {
  // Two documents, processed by a worker of the same data folder, then the worker stops.
  const indexing = await startWorker(dataDir);
  const docs: { documentId: string; s3Key: string; word: string }[] = [];
  try {
    for (const word of ['aubergine', 'zucchini']) {
      const { link } = await uploadDocument(call, dataset, { fileName: `${word}.txt` }, `The ${word} is a vegetable.`);
      docs.push({ documentId: link.documentId as string, s3Key: link.s3Key, word });
      const ready = await pollUntil(
        () => call<{ status: string }>('GET', DOCS, { query: { ...dataset, s3Key: link.s3Key } }),
        (r) => r.body.status !== 'uploaded',
        30_000,
      );
      expect(ready.body.status).toBe('ready');
    }
  } finally {
    await indexing.stop();
  }
  const [deadLettered, lost] = docs;
  expect(await retrieved(deadLettered.documentId, deadLettered.word)).toHaveLength(1);

  for (const doc of docs) {
    expect((await call('DELETE', DOCS, { body: { ...dataset, s3Key: doc.s3Key } })).status).toBe(200);
  }
  // The first delete's message is taken by a consumer that dies with it until the queue dead-letters it; the
  // second's is taken and deleted unprocessed: lost.
  await consume(
    (body) => body.kind === 'delete-document' && body.documentId === deadLettered.documentId,
    async () => (await depth(deadLetterUrl)) === 1 && (await depth(queueUrl)) === 0,
  );
  expect(await depth(deadLetterUrl)).toBe(1);
  expect(await depth(queueUrl)).toBe(0);

  // Meanwhile: the documents are gone from the API and from retrieval, while the index still holds their chunks.
  for (const doc of docs) {
    expect((await call('GET', DOCS, { query: { ...dataset, s3Key: doc.s3Key } })).status).toBe(404);
    expect(await retrieved(doc.documentId, doc.word)).toEqual([]);
    expect(await indexed(doc.documentId)).toBe(1);
  }

  // What waits in the DLQ, listed without moving it.
  const peeked: string[] = [];
  expect(await redrive(['processing', '--peek', '--local', dataDir], (line) => peeked.push(line))).toBe(0);
  expect(peeked.join('\n')).toContain(`delete-document agentId=${dataset.agentId}`);
  expect(peeked.join('\n')).toContain(`documentId=${deadLettered.documentId}`);
  expect(await depth(deadLetterUrl)).toBe(1);

  // Redriven: back in the processing queue, the DLQ empty.
  const printed: string[] = [];
  expect(await redrive(['processing', '--local', dataDir], (line) => printed.push(line))).toBe(0);
  expect(printed.at(-1)).toMatch(/^moved 1 messages to .*processing; about 0 left$/);
  expect(await depth(deadLetterUrl)).toBe(0);
  expect(await depth(queueUrl)).toBe(1);

  // A worker whose watchdog waits the default 15 minutes: only the redriven message erases anything.
  const redriven = await startWorker(dataDir);
  try {
    expect(
      await pollUntil(
        () => indexed(deadLettered.documentId),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect(
      await pollUntil(
        () => depth(queueUrl),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect(await indexed(lost.documentId)).toBe(1);
  } finally {
    await redriven.stop();
  }

  // A worker whose watchdog finds the lost delete owed past its 3 s: queued again, erased.
  const watching = await startWorker(dataDir, { PROCESSING_TIMEOUT_SECONDS: '3', WATCHDOG_INTERVAL_SECONDS: '1' });
  try {
    expect(
      await pollUntil(
        () => indexed(lost.documentId),
        (n) => n === 0,
        30_000,
      ),
    ).toBe(0);
    expect(watching.output()).toMatch(/"erasuresRequeued":1/);
  } finally {
    await watching.stop();
  }
});

it('finds the dead-letter queue of the flow runner by the name flow-run', async () => {
  const printed: string[] = [];
  expect(await redrive(['flow-run', '--peek', '--local', dataDir], (line) => printed.push(line))).toBe(0);
  expect(printed[0]).toMatch(/:flow-runs-dlq: about 0 messages waiting$/);
});

it('refuses an unknown queue name with its usage, moving nothing', async () => {
  await sqs.send(new SendMessageCommand({ QueueUrl: deadLetterUrl, MessageBody: '{"kind":"sync-metadata"}' }));
  const errors: string[] = [];
  const original = console.error;
  console.error = (line: string) => errors.push(line);
  try {
    expect(await redrive(['documents', '--local', dataDir])).toBe(2);
    expect(await redrive(['toString', '--local', dataDir])).toBe(2);
    expect(await redrive(['--local', dataDir])).toBe(2);
    expect(await redrive(['processing', '--rate', '0', '--local', dataDir])).toBe(2);
  } finally {
    console.error = original;
  }
  expect(errors.join('\n')).toMatch(/usage: npm run redrive -- <processing\|flow-run\|webhook>/);
  expect(await depth(deadLetterUrl)).toBe(1);
});
