/**
 * Runs one Lambda handler module outside jest, whose module system cannot load the ESM-only @middy/core that every
 * HTTP handler is built on. stdin: JSON `{ handlerFile, events }`; after everything the handler logged, stdout ends
 * with RESULT_MARKER and JSON, one result per event, in order. Spawned by invokeHandler (handlers.ts).
 */
import { resolve } from 'node:path';
import type { Context } from 'aws-lambda';
import { RESULT_MARKER } from './handlers';

async function main(): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const { handlerFile, events } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    handlerFile: string;
    events: unknown[];
  };
  const { handler } = (await import(resolve(__dirname, '..', '..', handlerFile))) as {
    handler: (event: unknown, context: Context) => Promise<unknown>;
  };
  const results: unknown[] = [];
  for (const [index, event] of events.entries()) {
    const context = {
      functionName: 'under-test',
      awsRequestId: `request-${index}`,
      getRemainingTimeInMillis: () => 29_000,
    } as unknown as Context;
    results.push(await handler(event, context));
  }
  process.stdout.write(`${RESULT_MARKER}${JSON.stringify(results)}`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
