/**
 * The local runtime's log level (lib/local/log-level.ts): WARN unless POWERTOOLS_LOG_LEVEL says otherwise, for every
 * request, not only the first (Powertools puts each warm invocation back to the level its logger was built with).
 */
import { client, startService } from '../helpers/service';

async function infoLinesAfterThreeRequests(env: Record<string, string>): Promise<number> {
  const service = await startService({ env });
  try {
    const call = client(service);
    for (let i = 0; i < 3; i++) expect((await call('GET', '/dashboard/agents')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return service
      .output()
      .split('\n')
      .filter((line) => line.includes('"message":"request"')).length;
  } finally {
    await service.stop();
  }
}

it('logs no request line at the default level (WARN), and one per request at INFO', async () => {
  expect(await infoLinesAfterThreeRequests({ POWERTOOLS_LOG_LEVEL: '' })).toBe(0);
  expect(await infoLinesAfterThreeRequests({ POWERTOOLS_LOG_LEVEL: 'INFO' })).toBe(3);
});
