/**
 * The logical ids of everything that holds data, pinned. CloudFormation replaces a resource whose logical id changes
 * (a new, empty table; the old one retained or deleted), and moving a resource into another stack changes it. So
 * each stateful resource stays in the stack's own template under the id it had before the route functions moved to
 * nested stacks (docs/ARCHITECTURE.md, "Stacks"), and a refactor that renames or moves one fails here instead of
 * emptying a stage at its next deploy. A new stateful resource is added to the list on purpose.
 */
import { ROUTE_AREAS } from '../../lib/routes';
import { STATEFUL_TYPES as DATA_TYPES } from '../../lib/stateful-resources';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

/** Types whose resources hold data, or an identity others hold (a user pool client's id is in the console's config). */
const STATEFUL_TYPES = [
  'AWS::DynamoDB::Table',
  'AWS::S3::Bucket',
  'AWS::SQS::Queue',
  'AWS::Cognito::UserPool',
  'AWS::Cognito::UserPoolClient',
  'AWS::Bedrock::KnowledgeBase',
  'AWS::Bedrock::DataSource',
  'AWS::S3Vectors::VectorBucket',
  'AWS::S3Vectors::Index',
  'AWS::Logs::LogGroup',
  'AWS::Backup::BackupVault',
  'AWS::SecretsManager::Secret',
];

/** In both variants: the ids of main before the split (commit 8fcb56a), each with its type. */
const PINNED: Record<string, string> = {
  PeopleUserPool5E462257: 'AWS::Cognito::UserPool',
  PeopleUserPoolConsoleClient50D1AFB0: 'AWS::Cognito::UserPoolClient',
  DataAgentDefinitionsTable9F08D9BB: 'AWS::DynamoDB::Table',
  DataAgentsTable3278BDCC: 'AWS::DynamoDB::Table',
  DataAnalyticsTable07AB382F: 'AWS::DynamoDB::Table',
  DataDocumentsTable0C9671B7: 'AWS::DynamoDB::Table',
  DataInvitationsTableF85516D3: 'AWS::DynamoDB::Table',
  DataKnowledgeBasesTableC658AE18: 'AWS::DynamoDB::Table',
  DataMembersTableAB3D032B: 'AWS::DynamoDB::Table',
  DataMembershipsTable92C6953C: 'AWS::DynamoDB::Table',
  DataOrganizationsTable2C4366A0: 'AWS::DynamoDB::Table',
  DataRateLimitsTableA01639FD: 'AWS::DynamoDB::Table',
  DataRetrievalConfigsTable969A8DCC: 'AWS::DynamoDB::Table',
  DataSessionsTable3E401EE2: 'AWS::DynamoDB::Table',
  DataTokensTable2A0C53A3: 'AWS::DynamoDB::Table',
  DataUploadsTable7BF5E71C: 'AWS::DynamoDB::Table',
  DataZipJobsTableA509635F: 'AWS::DynamoDB::Table',
  BrowserTaskBrowserTaskFunctionLogs195E5CF4: 'AWS::Logs::LogGroup',
  DocumentProcessingProcessorFunctionLogs0CF10C93: 'AWS::Logs::LogGroup',
  DocumentProcessingWatchdogFunctionLogs5998CC02: 'AWS::Logs::LogGroup',
  FlowRunnerFlowRunnerFunctionLogs5D45CC0D: 'AWS::Logs::LogGroup',
  FlowSchedulerScheduleTickFunctionLogsFFA84C89: 'AWS::Logs::LogGroup',
  PlatformApiAccessLogs375AAC67: 'AWS::Logs::LogGroup',
  PlatformApiFunctionLogsD2B473F8: 'AWS::Logs::LogGroup',
  ConsoleAccessLogs1A46EB79: 'AWS::S3::Bucket',
  ConsoleFiles2D43986C: 'AWS::S3::Bucket',
  DocumentStorageAccessLogsBucket44DCA81B: 'AWS::S3::Bucket',
  DocumentStorageDocumentsBucketE4094DCC: 'AWS::S3::Bucket',
  DocumentStorageProcessingDeadLetterQueue913C35DD: 'AWS::SQS::Queue',
  DocumentStorageProcessingQueueFB6D5784: 'AWS::SQS::Queue',
  FlowRunnerFlowRunDeadLetterQueueC713F92A: 'AWS::SQS::Queue',
  FlowRunnerFlowRunQueueF049E6F0: 'AWS::SQS::Queue',
  // Added after the split: the recovery points' vault, and the API's execution logs once API Gateway's own group.
  BackupVaultADF21B19: 'AWS::Backup::BackupVault',
  PlatformApiExecutionLogsBC66BF8F: 'AWS::Logs::LogGroup',
  // The console's edge secret (the web ACL trusts x-viewer-address only with it): a new id would be a new value.
  EdgeIdentityOriginVerifySecret8A1F03E2: 'AWS::SecretsManager::Secret',
  // The status webhooks (issue 39): their endpoints and delivery attempts, their queue and its DLQ, the worker's logs.
  DataWebhookDeliveriesTable68C40AD6: 'AWS::DynamoDB::Table',
  DataWebhookEndpointsTable9E51DC26: 'AWS::DynamoDB::Table',
  WebhookDeliveryWebhookDeadLetterQueueDE78AC34: 'AWS::SQS::Queue',
  WebhookDeliveryWebhookDeliveryFunctionLogsD279749D: 'AWS::Logs::LogGroup',
  WebhookDeliveryWebhookQueue9CB70715: 'AWS::SQS::Queue',
};

/** The default variant's knowledge index: a knowledge base, data source and vector index per environment. */
const PINNED_BEDROCK: Record<string, string> = {
  KnowledgeIndexDevelopmentDataSource109F43EA: 'AWS::Bedrock::DataSource',
  KnowledgeIndexProductionDataSource1B2D5A20: 'AWS::Bedrock::DataSource',
  KnowledgeIndexStagingDataSource48B26D42: 'AWS::Bedrock::DataSource',
  KnowledgeIndexDevelopmentKnowledgeBase656CB85C: 'AWS::Bedrock::KnowledgeBase',
  KnowledgeIndexProductionKnowledgeBase84D834E8: 'AWS::Bedrock::KnowledgeBase',
  KnowledgeIndexStagingKnowledgeBase828884F2: 'AWS::Bedrock::KnowledgeBase',
  KnowledgeIndexDevelopmentVectorIndexFCECDAA7: 'AWS::S3Vectors::Index',
  KnowledgeIndexProductionVectorIndexAF0CC2B2: 'AWS::S3Vectors::Index',
  KnowledgeIndexStagingVectorIndexBD3275C5: 'AWS::S3Vectors::Index',
  KnowledgeIndexVectorBucketB096F16E: 'AWS::S3Vectors::VectorBucket',
};

/** `-c knowledgeIndex=dynamodb`'s knowledge index: the chunk table. */
const PINNED_DYNAMODB: Record<string, string> = {
  ChunkIndexChunksTableDBA410C7: 'AWS::DynamoDB::Table',
};

const VARIANTS = {
  default: { context: {}, pinned: { ...PINNED, ...PINNED_BEDROCK } },
  'knowledgeIndex=dynamodb': { context: { knowledgeIndex: 'dynamodb' }, pinned: { ...PINNED, ...PINNED_DYNAMODB } },
} as const;

const synths: Record<string, Synthesized> = {};

beforeAll(() => {
  for (const [variant, { context }] of Object.entries(VARIANTS)) synths[variant] = synthesizeUnbundled(context);
});
afterAll(() => {
  for (const synth of Object.values(synths)) synth.dispose();
});

/** The resources of a stateful type in a template, as `{ logical id: type }`. */
const statefulOf = (resources: Record<string, { Type: string }>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(resources)
      .filter(([, r]) => STATEFUL_TYPES.includes(r.Type))
      .map(([id, r]) => [id, r.Type]),
  );

describe.each(Object.keys(VARIANTS) as (keyof typeof VARIANTS)[])('the %s stack', (variant) => {
  const { pinned } = VARIANTS[variant];

  test('keeps every stateful resource in its own template, under its id of before the split', () => {
    const [own] = synths[variant].templates;
    expect(own.nestedAt).toEqual([]);
    expect(statefulOf(own.template.Resources)).toEqual(pinned);
  });

  test('keeps what holds data when the stack is deleted or a deploy replaces it (Retain on delete and on replace)', () => {
    const resources = synths[variant].template.toJSON().Resources as Record<
      string,
      { Type: string; DeletionPolicy?: string; UpdateReplacePolicy?: string }
    >;
    const held = Object.entries(resources).filter(([, r]) => DATA_TYPES.includes(r.Type));
    expect(held.length).toBeGreaterThanOrEqual(20);
    const notRetained = held
      .filter(([, r]) => r.DeletionPolicy !== 'Retain' || r.UpdateReplacePolicy !== 'Retain')
      .map(([id, r]) => `${id}: ${r.DeletionPolicy}/${r.UpdateReplacePolicy}`);
    expect(notRetained).toEqual([]);
  });

  test('deploys no stateful resource besides those, and none in a nested stack', () => {
    expect(statefulOf(synths[variant].template.toJSON().Resources)).toEqual(pinned);
    const nested = synths[variant].templates.slice(1);
    expect(nested.length).toBe(Object.keys(ROUTE_AREAS).length);
    for (const { template } of nested) expect(statefulOf(template.Resources)).toEqual({});
  });
});
