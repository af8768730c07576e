/**
 * Moves the messages of a dead-letter queue back to the queue they came from, so its consumer tries them again
 * (docs/operations.md, "Dead-letter queues"):
 *
 *   npm run redrive -- processing --peek                       # what waits in the DLQ, moving nothing
 *   npm run redrive -- processing                              # AWS: the stack named by --stage (default dev)
 *   npm run redrive -- flow-run --stage prod
 *   npm run redrive -- processing --outputs cdk-outputs.json   # AWS: the queue from `cdk deploy --outputs-file`
 *   npm run redrive -- processing --local [.data]              # the local runtime of that DATA_DIR
 *
 * <queue> is `processing` (documents, imports, deletions) or `flow-run` (runs handed over to the flow runner). The
 * dead-letter queue is the one the queue's RedrivePolicy names, so only the work queue's URL is looked up: in AWS from
 * the stack's outputs (`ProcessingQueueUrl`, `FlowRunQueueUrl`; `--queue-url` gives it directly), locally from
 * DATA_DIR/engines.json of the running runtime. In AWS the move is SQS's own message move task (StartMessageMoveTask,
 * followed until it ends); the local queue (fauxqs) has none, so there the messages are received, sent to the queue
 * and deleted from the DLQ, ten at a time, at most as many as the DLQ held at the start (a message that fails again
 * and comes back is not moved twice in one run). A message sent and not yet deleted when the script is cut off is
 * in both queues: every message of the service is idempotent, so it is done once.
 */

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { readEnginesFile } from '../lib/local/data-folder';
import { LOCAL_REGION } from '../lib/local/engine-credentials';
import { runMain, stackOutputs, withLocalDefault } from './operator';

const USAGE =
  'usage: npm run redrive -- <processing|flow-run|webhook> [--peek] [--stage <stage> | --outputs <cdk-outputs.json> | ' +
  '--queue-url <url> | --local [DATA_DIR]] [--rate <messages per second>]';

export const QUEUES = {
  processing: { output: 'ProcessingQueueUrl', local: 'processingQueueUrl' },
  'flow-run': { output: 'FlowRunQueueUrl', local: 'flowRunQueueUrl' },
  webhook: { output: 'WebhookQueueUrl', local: 'webhookQueueUrl' },
} as const;
export type QueueName = keyof typeof QUEUES;

export interface QueuePair {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterUrl: string;
  readonly deadLetterArn: string;
}

type Print = (line: string) => void;

/** The queue and the dead-letter queue its RedrivePolicy names. */
export async function queuePair(sqs: SQSClient, queueUrl: string): Promise<QueuePair> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'RedrivePolicy'] }),
  );
  if (!Attributes.RedrivePolicy || !Attributes.QueueArn) {
    throw new Error(`${queueUrl} has no dead-letter queue (no RedrivePolicy)`);
  }
  const deadLetterArn = String(JSON.parse(Attributes.RedrivePolicy).deadLetterTargetArn);
  // arn:aws:sqs:<region>:<account>:<name>
  const [, , , , account, name] = deadLetterArn.split(':');
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }));
  if (!QueueUrl) throw new Error(`no URL for the dead-letter queue ${deadLetterArn}`);
  return { queueUrl, queueArn: Attributes.QueueArn, deadLetterUrl: QueueUrl, deadLetterArn };
}

/** Messages in the queue, those received and not yet deleted or visible again included. */
async function waiting(sqs: SQSClient, url: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages ?? 0) + Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/** What a message asks for, in one line: its kind and the ids it names (never its whole body). */
export function describeMessage(body: string | undefined): string {
  try {
    const parsed = JSON.parse(body ?? '') as Record<string, unknown>;
    if (Array.isArray(parsed.Records)) return `S3 event (${parsed.Records.length} records)`;
    const ids = Object.entries(parsed)
      .filter(([key, value]) => key !== 'kind' && (typeof value === 'string' || typeof value === 'number'))
      .map(([key, value]) => `${key}=${value}`);
    return [String(parsed.kind ?? 'unknown'), ...ids].join(' ');
  } catch {
    return 'not JSON';
  }
}

/**
 * Lists what waits in the dead-letter queue without moving it: the messages are received (hidden for a minute, so
 * each receive brings others), printed, then made visible again at once. Receiving a message of a DLQ changes nothing
 * else: it has no redrive policy of its own.
 */
export async function peek(sqs: SQSClient, pair: QueuePair, print: Print, max = 100): Promise<number> {
  const seen = new Map<string, string>();
  try {
    while (seen.size < max) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: pair.deadLetterUrl,
          MaxNumberOfMessages: Math.min(10, max - seen.size),
          VisibilityTimeout: 60,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['SentTimestamp'],
        }),
      );
      const fresh = Messages.filter((message) => message.MessageId && !seen.has(message.MessageId));
      if (fresh.length === 0) break;
      for (const message of fresh) {
        seen.set(message.MessageId as string, message.ReceiptHandle as string);
        const sent = Number(message.Attributes?.SentTimestamp);
        const since = Number.isFinite(sent) ? new Date(sent).toISOString() : '?';
        print(`${message.MessageId}  dead-lettered since ${since}  ${describeMessage(message.Body)}`);
      }
    }
  } finally {
    const handles = [...seen.values()];
    for (let i = 0; i < handles.length; i += 10) {
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: pair.deadLetterUrl,
          Entries: handles
            .slice(i, i + 10)
            .map((ReceiptHandle, j) => ({ Id: String(j), ReceiptHandle, VisibilityTimeout: 0 })),
        }),
      );
    }
  }
  return seen.size;
}

/** Receive → send → delete, ten at a time, at most `limit` messages. */
export async function moveByCopy(sqs: SQSClient, pair: QueuePair, limit: number): Promise<number> {
  let moved = 0;
  while (moved < limit) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: pair.deadLetterUrl,
        MaxNumberOfMessages: Math.min(10, limit - moved),
        VisibilityTimeout: 60,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) break;
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: pair.queueUrl,
        Entries: Messages.map((message, i) => ({
          Id: String(i),
          MessageBody: message.Body ?? '',
          ...(message.MessageAttributes ? { MessageAttributes: message.MessageAttributes } : {}),
        })),
      }),
    );
    // Only what the queue took leaves the DLQ; the rest is visible there again after its visibility timeout.
    const taken = (sent.Successful ?? []).map((entry) => Messages[Number(entry.Id)]);
    if (taken.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: pair.deadLetterUrl,
          Entries: taken.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
        }),
      );
    }
    moved += taken.length;
    if ((sent.Failed ?? []).length > 0) {
      throw new Error(`the queue refused ${sent.Failed?.length} messages: ${sent.Failed?.[0]?.Message ?? ''}`);
    }
  }
  return moved;
}

/** SQS's message move task, followed until it ends (one task per DLQ at a time: a running one is followed). */
export async function moveByTask(
  sqs: SQSClient,
  pair: QueuePair,
  print: Print,
  options: { rate?: number; pollMs?: number } = {},
): Promise<number> {
  const running = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: pair.deadLetterArn, MaxResults: 1 }));
  if (running.Results?.[0]?.Status !== 'RUNNING') {
    await sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: pair.deadLetterArn,
        DestinationArn: pair.queueArn,
        ...(options.rate ? { MaxNumberOfMessagesPerSecond: options.rate } : {}),
      }),
    );
  } else {
    print('a move task of this dead-letter queue is running already: following it');
  }
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 2000));
    const { Results = [] } = await sqs.send(
      new ListMessageMoveTasksCommand({ SourceArn: pair.deadLetterArn, MaxResults: 1 }),
    );
    const task = Results[0];
    const moved = Number(task?.ApproximateNumberOfMessagesMoved ?? 0);
    if (task?.Status === 'RUNNING') {
      print(`moving: ${moved} of ${task.ApproximateNumberOfMessagesToMove ?? '?'}`);
      continue;
    }
    if (task?.Status === 'COMPLETED') return moved;
    throw new Error(`the move task ended ${task?.Status ?? 'unseen'}: ${task?.FailureReason ?? 'no reason given'}`);
  }
}

interface Target {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly local: boolean;
}

async function target(queue: QueueName, values: Record<string, string | boolean | undefined>): Promise<Target> {
  if (values.local !== undefined) {
    const dataDir =
      typeof values.local === 'string' && values.local !== '' ? values.local : process.env.DATA_DIR || '.data';
    const engines = readEnginesFile(dataDir);
    const sqs = new SQSClient({
      endpoint: engines.sqsEndpoint,
      region: LOCAL_REGION,
      credentials: engines.credentials,
      useQueueUrlAsEndpoint: false,
    });
    return { sqs, queueUrl: engines[QUEUES[queue].local], local: true };
  }
  const output = QUEUES[queue].output;
  let queueUrl = typeof values['queue-url'] === 'string' ? values['queue-url'] : undefined;
  if (!queueUrl && typeof values.outputs === 'string') {
    const stacks = JSON.parse(readFileSync(values.outputs, 'utf8')) as Record<string, Record<string, string>>;
    queueUrl = Object.values(stacks).find((outputs) => outputs[output])?.[output];
    if (!queueUrl) throw new Error(`${values.outputs} has no output ${output}`);
  }
  if (!queueUrl) {
    const stackName = `agent-platform-${typeof values.stage === 'string' ? values.stage : 'dev'}`;
    queueUrl = (await stackOutputs(stackName))[output];
    if (!queueUrl) throw new Error(`stack ${stackName} has no output ${output}`);
  }
  return { sqs: new SQSClient({}), queueUrl, local: false };
}

export async function main(argv: readonly string[], print: Print = console.log): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>;
  try {
    const args = withLocalDefault(argv);
    parsed = parseArgs({ args, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const [queue, ...rest] = parsed.positionals;
  if (queue === undefined || !Object.hasOwn(QUEUES, queue) || rest.length > 0) {
    console.error(USAGE);
    return 2;
  }
  const rate = parsed.values.rate === undefined ? undefined : Number(parsed.values.rate);
  if (rate !== undefined && !(Number.isInteger(rate) && rate >= 1 && rate <= 500)) {
    console.error(`--rate must be a whole number of messages per second from 1 to 500\n${USAGE}`);
    return 2;
  }
  const { sqs, queueUrl, local } = await target(queue as QueueName, parsed.values);
  try {
    const pair = await queuePair(sqs, queueUrl);
    const before = await waiting(sqs, pair.deadLetterUrl);
    print(`${pair.deadLetterArn}: about ${before} messages waiting`);
    if (parsed.values.peek) {
      const listed = await peek(sqs, pair, print);
      print(`${listed} listed; nothing moved`);
      return 0;
    }
    if (before === 0) return 0;
    const moved = local ? await moveByCopy(sqs, pair, before) : await moveByTask(sqs, pair, print, { rate });
    print(`moved ${moved} messages to ${pair.queueArn}; about ${await waiting(sqs, pair.deadLetterUrl)} left`);
    return 0;
  } finally {
    sqs.destroy();
  }
}

const OPTIONS = {
  peek: { type: 'boolean' },
  stage: { type: 'string' },
  outputs: { type: 'string' },
  'queue-url': { type: 'string' },
  local: { type: 'string' },
  rate: { type: 'string' },
} as const;

runMain(module, main);
