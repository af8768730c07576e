/**
 * The restore procedure's copy step (docs/operations.md, "Restore a table"; scripts/restore-table.ts) on DynamoDB
 * (dynalite): a table restored to a moment before the damage gives back what was deleted since, without replacing
 * what the service wrote since (unless asked), one tenant at a time if wanted. PITR itself is AWS's; the copy is ours.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { TABLES } from '../../lib/tables';
import { restoreTable } from '../../scripts/restore-table';
import { type LocalDynamo, startDynalite } from '../helpers/dynalite';

let dynamo: LocalDynamo;
let raw: DynamoDBClient;
let round = 0;

beforeAll(async () => {
  dynamo = await startDynalite();
  raw = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  raw?.destroy();
  await dynamo?.stop();
});

const doc = (tenant: string, id: string, status: string) => ({
  tenantKey: `${tenant}#production#kb-1`,
  documentId: id,
  status,
  fileName: `${id}.txt`,
});

/** A live table and its restore at the moment both held the same five documents of two tenants. */
async function damagedStage() {
  round += 1;
  const live = await dynamo.createTable(`documents-live-${round}`, TABLES.documents);
  const restored = await dynamo.createTable(`documents-restored-${round}`, TABLES.documents);
  const before = [
    doc('a', 'd1', 'ready'),
    doc('a', 'd2', 'ready'),
    doc('a', 'd3', 'ready'),
    doc('b', 'd4', 'ready'),
    doc('b', 'd5', 'ready'),
  ];
  for (const item of before) {
    for (const table of [live, restored]) await dynamo.client.send(new PutCommand({ TableName: table, Item: item }));
  }
  // The damage: three documents deleted by mistake; meanwhile the service went on and changed another one.
  for (const [tenant, id] of [
    ['a', 'd1'],
    ['a', 'd2'],
    ['b', 'd4'],
  ]) {
    await dynamo.client.send(
      new DeleteCommand({ TableName: live, Key: { tenantKey: `${tenant}#production#kb-1`, documentId: id } }),
    );
  }
  await dynamo.client.send(new PutCommand({ TableName: live, Item: doc('a', 'd3', 'failed') }));
  const statusOf = async (tenant: string, id: string) =>
    (
      await dynamo.client.send(
        new GetCommand({ TableName: live, Key: { tenantKey: `${tenant}#production#kb-1`, documentId: id } }),
      )
    ).Item?.status;
  return { live, restored, statusOf };
}

it('brings back what was deleted and leaves what changed since as it is', async () => {
  const { live, restored, statusOf } = await damagedStage();
  await expect(restoreTable(raw, { from: restored, to: live })).resolves.toEqual({ read: 5, written: 3, kept: 2 });
  expect(await Promise.all([statusOf('a', 'd1'), statusOf('a', 'd2'), statusOf('b', 'd4')])).toEqual([
    'ready',
    'ready',
    'ready',
  ]);
  expect(await statusOf('a', 'd3')).toBe('failed');
  // Run again (a retry after a cut-off run): nothing more is written.
  await expect(restoreTable(raw, { from: restored, to: live })).resolves.toEqual({ read: 5, written: 0, kept: 5 });
});

it('replaces what changed since only with --overwrite, and copies one tenant alone with --key', async () => {
  const { live, restored, statusOf } = await damagedStage();
  await expect(
    restoreTable(raw, { from: restored, to: live, where: { tenantKey: 'b#production#kb-1' } }),
  ).resolves.toEqual({ read: 2, written: 1, kept: 1 });
  expect(await statusOf('b', 'd4')).toBe('ready');
  expect(await statusOf('a', 'd1')).toBeUndefined();
  await restoreTable(raw, { from: restored, to: live, overwrite: true });
  expect(await statusOf('a', 'd3')).toBe('ready');
});

it('refuses tables keyed differently, and runs as the command the procedure gives', async () => {
  const { live, restored } = await damagedStage();
  const other = await dynamo.createTable(`agents-${round}`, TABLES.agents);
  await expect(restoreTable(raw, { from: other, to: live })).rejects.toThrow(/is keyed by .* and .* by/);
  // Asynchronously: dynalite answers from this process, which a synchronous spawn would block.
  const run = (...args: string[]) =>
    new Promise<{ status: number; stdout: string }>((resolve) => {
      execFile(
        'npx',
        ['tsx', 'scripts/restore-table.ts', ...args],
        {
          cwd: path.join(__dirname, '..', '..'),
          env: {
            ...process.env,
            AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
            AWS_REGION: 'us-east-1',
            AWS_ACCESS_KEY_ID: 'local',
            AWS_SECRET_ACCESS_KEY: 'local',
          },
        },
        (error, stdout) => resolve({ status: error ? Number(error.code) : 0, stdout }),
      );
    });
  const done = await run('--from', restored, '--to', live);
  expect({ status: done.status, out: done.stdout.trim() }).toEqual({
    status: 0,
    out: `${restored} → ${live}: 5 items read, 3 written, 2 already in ${live} and left as they are (--overwrite replaces them)`,
  });
  expect((await run('--from', restored)).status).toBe(2);
}, 60_000);
