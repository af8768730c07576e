/**
 * Starts a reindex of every knowledge base of a stage, or follows them (docs/operations.md, "Rebuild the index"): what
 * to run after the index was replaced or lost, when every document is still `ready` and none is found. Each
 * knowledge base gets the job POST …/reindex starts (core/processing/knowledge-base-reindex.ts), run by the stage's
 * own processing worker; the script only starts them, so it is quick, and running it again starts only those not
 * running already.
 *
 *   npm run reindex -- --stage prod --environment production   # AWS: the stack agent-platform-prod
 *   npm run reindex -- --outputs cdk-outputs.json               # AWS: tables and queue from `cdk deploy --outputs-file`
 *   npm run reindex -- --local [.data]                           # the local runtime of that DATA_DIR
 *   npm run reindex -- --stage prod --status                     # each knowledge base's last reindex, starting none
 *
 * `--environment` reindexes that environment's datasets alone (default: all three); `--agent <agentId>` one agent's
 * knowledge bases. It prints one line a knowledge base and a summary; exits 0, or 2 on a usage error.
 */

import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { SqsProcessingQueue } from '#adapters/queue/sqs-processing';
import { DynamoDocumentStore } from '#adapters/store/dynamodb/document-store';
import { DynamoKnowledgeBaseStore } from '#adapters/store/dynamodb/knowledge-base-store';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';
import { reindexView, startKnowledgeBaseReindex } from '#core/processing/knowledge-base-reindex';
import { readEnginesFile } from '../lib/local/data-folder';
import { LOCAL_REGION } from '../lib/local/engine-credentials';
import { requiredOutputs, runMain, withLocalDefault } from './operator';

const USAGE =
  'usage: npm run reindex -- [--stage <stage> | --outputs <cdk-outputs.json> | --local [DATA_DIR]] ' +
  '[--environment development|staging|production] [--agent <agentId>] [--status]';

type Print = (line: string) => void;

interface Target {
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly knowledgeBasesTable: string;
  readonly documentsTable: string;
  readonly queueUrl: string;
}

async function target(values: { local?: string; outputs?: string; stage?: string }): Promise<Target> {
  if (values.local !== undefined) {
    const engines = readEnginesFile(values.local || process.env.DATA_DIR || '.data');
    const config = { region: LOCAL_REGION, credentials: engines.credentials };
    return {
      dynamo: new DynamoDBClient({ ...config, endpoint: engines.dynamodbEndpoint }),
      sqs: new SQSClient({ ...config, endpoint: engines.sqsEndpoint, useQueueUrlAsEndpoint: false }),
      knowledgeBasesTable: engines.tableNames.knowledgeBases,
      documentsTable: engines.tableNames.documents,
      queueUrl: engines.processingQueueUrl,
    };
  }
  const outputs = await requiredOutputs(
    ['KnowledgeBasesTableName', 'DocumentsTableName', 'ProcessingQueueUrl'] as const,
    values,
  );
  return {
    dynamo: new DynamoDBClient({}),
    sqs: new SQSClient({}),
    knowledgeBasesTable: outputs.KnowledgeBasesTableName,
    documentsTable: outputs.DocumentsTableName,
    queueUrl: outputs.ProcessingQueueUrl,
  };
}

/** Every knowledge base's key, a page (1 MB) at a time; one agent's alone with `agentId`. */
async function* knowledgeBaseKeys(
  client: DynamoDBDocumentClient,
  table: string,
  agentId: string | undefined,
): AsyncIterable<{ agentId: string; knowledgeBaseId: string }> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table,
        ProjectionExpression: 'agentId, knowledgeBaseId',
        ConsistentRead: true,
        ...(agentId ? { FilterExpression: 'agentId = :a', ExpressionAttributeValues: { ':a': agentId } } : {}),
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      yield { agentId: String(item.agentId), knowledgeBaseId: String(item.knowledgeBaseId) };
    }
    start = page.LastEvaluatedKey;
  } while (start);
}

export interface ReindexAllReport {
  readonly started: number;
  /** A reindex of it was running already (started by the API, or an earlier run of this script). */
  readonly running: number;
  /** Being deleted, or gone since the scan. */
  readonly skipped: number;
}

export async function reindexAll(
  target: Target,
  options: { environments: readonly Environment[]; agentId?: string; statusOnly?: boolean },
  print: Print,
): Promise<ReindexAllReport> {
  const client = DynamoDBDocumentClient.from(target.dynamo, { marshallOptions: { removeUndefinedValues: true } });
  const knowledgeBases = new DynamoKnowledgeBaseStore(client, target.knowledgeBasesTable);
  const deps = {
    knowledgeBases,
    documents: new DynamoDocumentStore(client, target.documentsTable),
    queue: new SqsProcessingQueue(target.sqs, target.queueUrl),
    clock: { now: () => new Date() },
  };
  let started = 0;
  let running = 0;
  let skipped = 0;
  for await (const key of knowledgeBaseKeys(client, target.knowledgeBasesTable, options.agentId)) {
    const kb = await knowledgeBases.get(key.agentId, key.knowledgeBaseId);
    const name = `${key.agentId}/${key.knowledgeBaseId}`;
    if (!kb || kb.status === 'deleting') {
      skipped += 1;
      print(`${name}: being deleted, left alone`);
      continue;
    }
    if (options.statusOnly) {
      const view = reindexView(kb);
      if (view?.status === 'running') running += 1;
      print(
        view
          ? `${name}: ${view.status} (${view.environments.join(', ')}): ${view.reindexed} reindexed, ${view.skipped} skipped, ${view.failed} failed of ${view.total}`
          : `${name}: never reindexed`,
      );
      continue;
    }
    const result = await startKnowledgeBaseReindex(deps, kb, options.environments);
    if (result.started) {
      started += 1;
      print(`${name}: started, ${result.view.total} ready documents`);
    } else if (result.reason === 'running') {
      running += 1;
      print(`${name}: a reindex is running already`);
    } else {
      skipped += 1;
      print(`${name}: ${result.reason === 'deleting' ? 'being deleted' : 'gone'}, left alone`);
    }
  }
  return { started, running, skipped };
}

const OPTIONS = {
  stage: { type: 'string' },
  outputs: { type: 'string' },
  local: { type: 'string' },
  environment: { type: 'string' },
  agent: { type: 'string' },
  status: { type: 'boolean' },
} as const;

export async function main(argv: readonly string[], print: Print = console.log): Promise<number> {
  let values: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS }>>['values'];
  try {
    const args = withLocalDefault(argv);
    values = parseArgs({ args, options: OPTIONS }).values;
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const environment = values.environment;
  if (environment !== undefined && !(ENVIRONMENTS as readonly string[]).includes(environment)) {
    console.error(`--environment must be one of ${ENVIRONMENTS.join(', ')}\n${USAGE}`);
    return 2;
  }
  const resolved = await target(values);
  try {
    const report = await reindexAll(
      resolved,
      {
        environments: environment ? [environment as Environment] : ENVIRONMENTS,
        ...(values.agent ? { agentId: values.agent } : {}),
        statusOnly: values.status === true,
      },
      print,
    );
    print(
      values.status
        ? `${report.running} running`
        : `${report.started} started, ${report.running} already running, ${report.skipped} left alone; follow them with --status`,
    );
    return 0;
  } finally {
    resolved.dynamo.destroy();
    resolved.sqs.destroy();
  }
}

runMain(module, main);
