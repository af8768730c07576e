/**
 * The flow runner's queue on SQS (adapters/queue/sqs-flow-runs.ts): a run the flow work budget stopped is sent with
 * DelaySeconds in whole seconds, capped at SQS's 900; one not delayed without it. That the local engine (fauxqs 1.9)
 * holds a delayed message back is shown through the runtime by test/integration/flow-work.test.ts.
 */
import type { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsFlowRunQueue } from '#adapters/queue/sqs-flow-runs';
import type { FlowRunMessage } from '#ports/flows';

const message = (sessionId: string): FlowRunMessage => ({
  kind: 'continue-run',
  agentId: 'agent-1',
  environment: 'production',
  sessionId,
  invocationId: 'invocation-1',
});

it('sends the delay in whole seconds, at most 900, and no DelaySeconds for none', async () => {
  const sent: SendMessageCommand[] = [];
  const client = { send: async (command: SendMessageCommand) => sent.push(command) } as unknown as SQSClient;
  const queue = new SqsFlowRunQueue(client, 'queue-url');
  await queue.send(message('a'), { delaySeconds: 1.2 });
  await queue.send(message('b'), { delaySeconds: 3_600 });
  await queue.send(message('c'), { delaySeconds: 0 });
  await queue.send(message('d'));
  expect(sent.map((command) => command.input.DelaySeconds)).toEqual([2, 900, undefined, undefined]);
  expect(
    sent.map((command) => [command.input.QueueUrl, JSON.parse(command.input.MessageBody as string).sessionId]),
  ).toEqual([
    ['queue-url', 'a'],
    ['queue-url', 'b'],
    ['queue-url', 'c'],
    ['queue-url', 'd'],
  ]);
});
