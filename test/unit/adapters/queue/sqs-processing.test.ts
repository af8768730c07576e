import type { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsProcessingQueue } from '#adapters/queue/sqs-processing';
import type { ProcessingMessage } from '#ports/services';

const message = (i: number): ProcessingMessage => ({
  kind: 'process-document',
  agentId: 'agent-1',
  environment: 'production',
  knowledgeBaseId: 'kb-1',
  documentId: `doc-${i}`,
  uploadId: 'upload-1',
});

/** An SQS client that answers SendMessageBatch, failing the entries `fail` picks (by call and entry id). */
function fakeSqs(fail: (call: number, id: string) => boolean) {
  const batches: string[][] = [];
  const client = {
    send: async (command: SendMessageBatchCommand) => {
      const entries = command.input.Entries ?? [];
      const call = batches.length;
      batches.push(entries.map((entry) => JSON.parse(entry.MessageBody as string).documentId));
      const failed = entries.filter((entry) => fail(call, entry.Id as string));
      return {
        Successful: [],
        Failed: failed.map((entry) => ({ Id: entry.Id, Code: 'InternalError', SenderFault: false, Message: 'busy' })),
      };
    },
  } as unknown as SQSClient;
  return { client, batches };
}

test('sendAll queues 10 messages a request, and sends again only the entries SQS failed', async () => {
  const sqs = fakeSqs((call, id) => call === 0 && id === '3');
  await new SqsProcessingQueue(sqs.client, 'queue-url').sendAll(Array.from({ length: 23 }, (_, i) => message(i)));
  expect(sqs.batches.map((batch) => batch.length)).toEqual([10, 1, 10, 3]);
  expect(sqs.batches[1]).toEqual(['doc-3']);
  expect(new Set(sqs.batches.flat()).size).toBe(23);
});

test('sendAll fails when SQS keeps failing an entry, after 3 sends of it', async () => {
  const sqs = fakeSqs((_call, id) => id === '0');
  await expect(new SqsProcessingQueue(sqs.client, 'queue-url').sendAll([message(1), message(2)])).rejects.toThrow(
    /did not queue 1 messages: InternalError/,
  );
  expect(sqs.batches).toEqual([['doc-1', 'doc-2'], ['doc-1'], ['doc-1']]);
});
