/**
 * The stack as `npm run test:localstack` deploys it (`-c knowledgeIndex=dynamodb`): no Bedrock knowledge base and
 * no S3 Vectors, which LocalStack does not emulate, but a chunk table the functions rank with BM25; the functions
 * that use the index find it in CHUNK_INDEX_TABLE, writers may write it, readers only read it; cdk-nag stays clean.
 * Bundling is skipped (`aws:cdk:bundling-stacks`): test/infra/stack.test.ts bundles the same handlers already.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { createApp } from '../../bin/app';
import type { AgentPlatformStack } from '../../lib/agent-platform-stack';
import { ChunkTableIndex } from '../../lib/constructs/chunk-table-index';
import { ROUTES } from '../../lib/routes';
import { deployedTemplate } from '../helpers/synth';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

let outdir: string;
let stack: AgentPlatformStack;
let resources: Resources;
let validationReport: { pluginReports: { violations: unknown[] }[] } | undefined;

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'localstack-infra-'));
  const built = createApp({
    context: { ...cdkJson.context, knowledgeIndex: 'dynamodb', models: 'offline', 'aws:cdk:bundling-stacks': [] },
    outdir,
  });
  stack = built.stack;
  const assembly = built.app.synth();
  const report = path.join(assembly.directory, 'validation-report.json');
  validationReport = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : undefined;
  // The deployed whole: the route functions' nested stacks merged into the stack's template (test/helpers/synth.ts).
  resources = deployedTemplate(assembly.directory).toJSON().Resources as Resources;
});

afterAll(() => fs.rmSync(outdir, { recursive: true, force: true }));

function chunkTableId(): string {
  expect(stack.knowledgeIndex).toBeInstanceOf(ChunkTableIndex);
  return logicalId((stack.knowledgeIndex as ChunkTableIndex).table);
}

function statementsOfRole(role: IConstruct | undefined): Statement[] {
  const roleId = logicalId(role as IConstruct);
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function actionsOnChunkTable(role: IConstruct | undefined): string[] {
  const tableId = chunkTableId();
  return statementsOfRole(role)
    .filter((s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(`"${tableId}"`))
    .flatMap((s) => ([] as string[]).concat(s.Action));
}

function variablesOf(fn: IConstruct): Record<string, unknown> {
  return (resources[logicalId(fn)].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

const WRITES = ['dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:UpdateItem'];

test('has no Bedrock or S3 Vectors resource, and one chunk table keyed by dataset and chunk', () => {
  const types = new Set(Object.values(resources).map((r) => r.Type));
  expect([...types].filter((t) => t.startsWith('AWS::Bedrock::') || t.startsWith('AWS::S3Vectors::'))).toEqual([]);
  expect(resources[chunkTableId()].Properties).toMatchObject({
    KeySchema: [
      { AttributeName: 'tenantKey', KeyType: 'HASH' },
      { AttributeName: 'chunkId', KeyType: 'RANGE' },
    ],
    BillingMode: 'PAY_PER_REQUEST',
  });
});

test('cdk-nag reports nothing in this configuration either', () => {
  expect(validationReport?.pluginReports.flatMap((r) => r.violations) ?? []).toEqual([]);
});

test.each(ROUTES.filter((r) => r.access.knowledgeIndex).map((r) => [r.id]))(
  '%s reads the chunk table and nothing of Bedrock',
  (id) => {
    const fn = stack.api.functions[id];
    const variables = variablesOf(fn);
    expect(variables).toHaveProperty('CHUNK_INDEX_TABLE');
    expect(variables).not.toHaveProperty('BEDROCK_KNOWLEDGE_BASES');
    const actions = actionsOnChunkTable(fn.role);
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetItem']));
    expect(actions.filter((a) => WRITES.includes(a))).toEqual([]);
    expect(JSON.stringify(statementsOfRole(fn.role))).not.toContain('bedrock:');
  },
);

test.each([
  ['processor', () => stack.processing.processor],
  ['watchdog', () => stack.processing.watchdog],
])('the %s may write the chunk table and finds it in CHUNK_INDEX_TABLE', (_name, fn) => {
  expect(variablesOf(fn())).toHaveProperty('CHUNK_INDEX_TABLE');
  expect(actionsOnChunkTable(fn().role)).toEqual(expect.arrayContaining(WRITES));
});

test('routes without index access get neither the table name nor a grant on it', () => {
  const without = ROUTES.filter((r) => !r.access.knowledgeIndex);
  expect(without.length).toBeGreaterThan(0);
  for (const route of without) {
    const fn = stack.api.functions[route.id];
    expect(variablesOf(fn)).not.toHaveProperty('CHUNK_INDEX_TABLE');
    expect(actionsOnChunkTable(fn.role)).toEqual([]);
  }
});

test('an unknown knowledgeIndex value stops the synth', () => {
  expect(() => createApp({ context: { ...cdkJson.context, knowledgeIndex: 'opensearch' } })).toThrow(
    /Invalid context knowledgeIndex="opensearch"/,
  );
});
