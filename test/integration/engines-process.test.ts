/**
 * `npm start`'s default (LOCAL_ENGINES=process): DynamoDB, S3 and SQS in a process of their own, which the runtime
 * starts before it listens and stops last, and which stops by itself when the runtime dies, even by SIGKILL.
 */
import { isRunning } from '../../lib/local/data-folder';
import { createDataset, readyDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const enginesPid = (service: TestService) =>
  Number(/Engines \(DynamoDB, S3, SQS\) in process (\d+)/.exec(service.output())?.[1]);

test('the service works with its engines in a process of their own, which stops with the runtime', async () => {
  const service = await startService({ env: { LOCAL_ENGINES: 'process' } });
  try {
    const pid = enginesPid(service);
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(service.pid);
    expect(isRunning(pid)).toBe(true);
    const call = client(service);
    const dataset = await createDataset(call);
    const link = await readyDocument(call, dataset, 'engines.txt', 'Stored by zqengines beside the runtime.');
    const found = await call<{ results: { metadata: { s3Key?: string; fileName?: string } }[] }>(
      'POST',
      `/dashboard/agents/${dataset.agentId}/knowledge/${dataset.environment}/kb/${dataset.knowledgeBaseId}/query`,
      { body: { query: 'zqengines' } },
    );
    expect(found.status).toBe(200);
    expect(found.body.results).toHaveLength(1);
    expect(JSON.stringify(found.body.results[0])).toContain(link.s3Key);
    await service.stop();
    const running = await pollUntil(
      async () => isRunning(pid),
      (alive) => !alive,
      15_000,
    );
    expect(running).toBe(false);
  } finally {
    await service.stop();
  }
});

test('a runtime killed with SIGKILL leaves no engines process behind', async () => {
  const service = await startService({ env: { LOCAL_ENGINES: 'process' } });
  const pid = enginesPid(service);
  expect(isRunning(pid)).toBe(true);
  await service.kill();
  const running = await pollUntil(
    async () => isRunning(pid),
    (alive) => !alive,
    15_000,
  );
  expect(running).toBe(false);
});
