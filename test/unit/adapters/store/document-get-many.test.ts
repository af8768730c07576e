/**
 * DocumentStore.getMany on dynalite: the records of many documents of one dataset in BatchGetItem calls of 100 keys,
 * the same records `get` answers one by one, and nothing of another dataset (GET …/zip-jobs/{id} reads its files so).
 */
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import type { DatasetRef } from '#core/knowledge/document';
import { reservationRecord } from '#core/knowledge/document';
import { TABLES } from '../../../../lib/tables';
import { type LocalDynamo, startDynalite } from '../../../helpers/dynalite';

let dynamo: LocalDynamo;
let store: DynamoDocumentStore;
const commands: string[] = [];

const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-01T00:01:00.000Z';
const ref: DatasetRef = { agentId: 'agent-1', environment: 'production', knowledgeBaseId: 'kb-1' };
const other: DatasetRef = { ...ref, knowledgeBaseId: 'kb-2' };

beforeAll(async () => {
  dynamo = await startDynalite();
  const table = await dynamo.createTable('documents', TABLES.documents);
  const send = dynamo.client.send.bind(dynamo.client);
  const counting = Object.create(dynamo.client) as typeof dynamo.client;
  counting.send = ((command: { constructor: { name: string } }, ...rest: unknown[]) => {
    commands.push(command.constructor.name);
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof dynamo.client.send;
  store = new DynamoDocumentStore(counting, table);
});

afterAll(() => dynamo?.stop());

async function reserved(dataset: DatasetRef, documentId: string): Promise<void> {
  const record = reservationRecord({
    ...dataset,
    organizationId: 'org-a',
    documentId,
    customDocumentId: null,
    s3Key: `${dataset.agentId}/production/${dataset.knowledgeBaseId}/${documentId}/notes.txt`,
    fileName: `${documentId}.txt`,
    uploadId: `upload-${documentId}`,
    reservedUntil: LATER,
    contentType: 'text/plain',
    createdAt: NOW,
    zipJobId: undefined,
    refusedByImport: undefined,
  });
  expect(await store.reserve(record, NOW)).toBe(true);
}

it('answers what get answers for each id found, in one BatchGetItem per 100 keys, and nothing of another dataset', async () => {
  const present = Array.from({ length: 130 }, (_, i) => `doc-${String(i).padStart(3, '0')}`);
  for (const id of present) await reserved(ref, id);
  await reserved(other, 'only-in-kb-2');
  const missing = Array.from({ length: 20 }, (_, i) => `missing-${i}`);
  const asked = [...present, ...missing, 'only-in-kb-2', present[0]];

  commands.length = 0;
  const found = await store.getMany(ref, asked);
  expect(commands).toEqual(['BatchGetCommand', 'BatchGetCommand']);

  expect([...found.keys()].sort()).toEqual(present);
  for (const id of [present[0], present[77], present[129]]) {
    expect(found.get(id)).toEqual(await store.get(ref, id));
  }
  expect(found.get(present[5])).not.toHaveProperty('tenantKey');
});

it('reads nothing for no ids', async () => {
  commands.length = 0;
  expect((await store.getMany(ref, [])).size).toBe(0);
  expect(commands).toEqual([]);
});
