/**
 * How a function gets the stateful resources lib/routes.ts names for it: their physical names in the environment
 * variables lambdas/shared/config.ts reads, and exactly the grants the access levels say. Shared by the API's
 * route functions and the processing functions, so both follow one rule.
 */
import { type CfnElement, Names, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { CHUNK_MANIFEST_FOLDER } from '#adapters/index/chunk-manifests';
import { ATTACHMENTS_PREFIX } from '#core/flows/attachments';
import { RESOURCE_ENV, type ResourceAccess, SINGLE_WRITE_OF, type TableAccess, type TableName } from '../routes';
import { TABLES } from '../tables';
import { bedrockModel, modelArns } from './bedrock-models';
import type { KnowledgeIndexBackend } from './knowledge-index';
import type { PeopleAccounts } from './people';

/** The stateful resources a function may be granted, by the logical names used in lib/routes.ts. */
export interface PlatformResources {
  readonly tables: Readonly<Record<TableName, ITable>>;
  readonly documentsBucket: IBucket;
  readonly processingQueue: IQueue;
  /** The flow runner's queue (lib/constructs/flow-runner.ts); functions with `flowRunQueue: 'send'` send to it. */
  readonly flowRunQueue?: IQueue;
  /** The status webhooks' queue (lib/constructs/webhook-delivery.ts); `webhookQueue: 'send'` functions send to it. */
  readonly webhookQueue?: IQueue;
  /** The knowledge index (Bedrock, or the chunk table on LocalStack); routes with `knowledgeIndex: 'retrieve'` query it. */
  readonly knowledgeIndex?: KnowledgeIndexBackend;
  /**
   * The Bedrock models and inference profiles the platform may call, the default first (bedrock-models.ts); empty:
   * generate is extractive and flows run on the offline model (no model call).
   */
  readonly models: readonly string[];
  /** An OpenAI-compatible server (`-c modelBaseUrl`, `-c modelName`) and the secret of its API key (model-api-key.ts). */
  readonly openAiCompatible?: { readonly baseUrl: string; readonly model: string; readonly apiKey: ISecret };
  /**
   * The Lambda functions (in the customers' accounts) registered as agent code (`-c agentCodeFunctions`): functions
   * with `agentCode: 'invoke'` may invoke exactly these; `list` ones check definitions against them. Default none.
   */
  readonly agentCodeFunctions?: readonly string[];
  /** The bearer tokens of MCP servers (`-c mcpSecrets`, mcp-secrets.ts); functions with `mcpSecrets: 'read'` read them. */
  readonly mcpSecrets?: readonly McpSecretResource[];
  /** The BrowserTask function (lib/constructs/browser-task.ts); functions with `browserTask: 'invoke'` invoke it. */
  readonly browserTask?: IFunction;
  /** People's accounts (lib/constructs/people.ts); functions with `people` get its ids, `manage` its admin calls. */
  readonly people?: PeopleAccounts;
}

/** A bearer token of an MCP server: the name definitions give it, the only origin it goes to, its secret. */
export interface McpSecretResource {
  readonly name: string;
  readonly origin: string;
  readonly secret: ISecret;
}

/** The physical name of every resource the access names, under the variable lambdas/shared/config.ts reads. */
export function resourceEnvironment(resources: PlatformResources, access: ResourceAccess): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const name of Object.keys(access.tables ?? {}) as TableName[]) {
    environment[RESOURCE_ENV.tables[name]] = resources.tables[name].tableName;
  }
  if (access.documentsBucket || access.attachments) {
    environment[RESOURCE_ENV.documentsBucket] = resources.documentsBucket.bucketName;
  }
  if (access.processingQueue) environment[RESOURCE_ENV.processingQueue] = resources.processingQueue.queueUrl;
  if (access.flowRunQueue) environment[RESOURCE_ENV.flowRunQueue] = requireFlowRunQueue(resources).queueUrl;
  if (access.webhookQueue) environment[RESOURCE_ENV.webhookQueue] = requireWebhookQueue(resources).queueUrl;
  // The chunk view of a Bedrock deployment reads the chunk manifests of the documents bucket, no knowledge base.
  if (access.knowledgeIndex === 'listChunks' && requireIndex(resources).chunkManifests) {
    environment[RESOURCE_ENV.documentsBucket] = resources.documentsBucket.bucketName;
  } else if (access.knowledgeIndex) Object.assign(environment, requireIndex(resources).environment());
  // The default answers generate and every node without llmConfig; the list bounds what a definition may name
  // (empty: no Bedrock model at all), read where definitions are checked and models listed.
  if (access.model === 'invoke' && resources.models.length > 0) {
    environment.BEDROCK_GENERATE_MODEL_ID = resources.models[0];
  }
  if (access.model === 'list') environment.BEDROCK_MODELS = resources.models.join(',');
  // The OpenAI-compatible server: where models are listed, its name; where they are called, the key's secret too
  // (its ARN; the key itself never leaves Secrets Manager but to the function that calls the model).
  const server = resources.openAiCompatible;
  if (server && access.model) {
    environment.MODEL_BASE_URL = server.baseUrl;
    environment.MODEL_NAME = server.model;
    if (access.model === 'invoke') environment.MODEL_API_KEY_SECRET_ARN = server.apiKey.secretArn;
  }
  if (access.people) {
    const people = requirePeople(resources);
    if (access.people !== 'signUpMode') {
      environment.COGNITO_CLIENT_ID = people.client.userPoolClientId;
      if (access.people === 'verify') environment.COGNITO_ISSUER = people.issuer;
      else environment.COGNITO_USER_POOL_ID = people.userPool.userPoolId;
    }
    if (access.people === 'signUp' || access.people === 'signUpMode') environment.SIGNUP_MODE = people.signUpMode;
  }
  // Empty too: a definition naming a function is then refused when stored, not when it runs.
  if (access.agentCode === 'list') environment.AGENT_CODE_FUNCTIONS = (resources.agentCodeFunctions ?? []).join(',');
  // Names, origins and ARNs only: the tokens stay in Secrets Manager until an MCP call reads them.
  const mcpSecrets = resources.mcpSecrets ?? [];
  if (access.mcpSecrets && mcpSecrets.length > 0) {
    environment.MCP_SECRETS = Stack.of(resources.documentsBucket).toJsonString(
      Object.fromEntries(mcpSecrets.map(({ name, origin, secret }) => [name, { origin, secretArn: secret.secretArn }])),
    );
  }
  if (access.browserTask) {
    environment.BROWSER_DRIVER = 'lambda';
    environment[RESOURCE_ENV.browserTask] = requireBrowserTask(resources).functionName;
  }
  return environment;
}

/** Exactly the access named, nothing more. */
export function grantAccess(fn: IFunction, resources: PlatformResources, access: ResourceAccess): void {
  for (const [name, level] of Object.entries(access.tables ?? {}) as [TableName, TableAccess][]) {
    const table = resources.tables[name];
    if (level === 'readWrite') table.grantReadWriteData(fn);
    else if (level === 'update') table.grant(fn, 'dynamodb:UpdateItem');
    else table.grantReadData(fn);
    const write = SINGLE_WRITE_OF[level];
    if (write) table.grant(fn, write);
    if (TABLES[name].indexes?.length) {
      const tableArn = arnAsNagNamesIt(fn, table);
      Validations.of(fn).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${tableArn}/index/*]`,
        reason: `The ${name} table has global secondary indexes (lib/tables.ts); the table grant covers them as <table>/index/*, and the function may query only this table's indexes.`,
      });
    }
  }
  const bucket = resources.documentsBucket;
  if (access.documentsBucket) {
    // grantReadWrite includes s3:DeleteObject*, so no separate grantDelete is needed.
    if (access.documentsBucket === 'readWrite') bucket.grantReadWrite(fn);
    else bucket.grantRead(fn);
    acknowledgeBucketGrantWildcards(fn, bucket, access.documentsBucket);
  }
  if (access.attachments) {
    // Exactly the calls of the attachment code (get, put, delete), on its prefix only: not the tenants' documents.
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: access.attachments === 'read' ? ['s3:GetObject'] : ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [bucket.arnForObjects(`${ATTACHMENTS_PREFIX}*`)],
      }),
    );
    const bucketArn = arnAsNagNamesIt(fn, bucket);
    Validations.of(fn).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${bucketArn}/${ATTACHMENTS_PREFIX}*]`,
      reason:
        'Attachment keys hold the session and a random id known only at run time; the grant is limited to the ' +
        'attachments/ prefix of the documents bucket and to GetObject, PutObject and DeleteObject.',
    });
  }
  if (access.processingQueue === 'send') resources.processingQueue.grantSendMessages(fn);
  if (access.flowRunQueue === 'send') requireFlowRunQueue(resources).grantSendMessages(fn);
  if (access.webhookQueue === 'send') requireWebhookQueue(resources).grantSendMessages(fn);
  if (access.browserTask === 'invoke') {
    // The function itself, unqualified (as the driver invokes it): not its versions and aliases (grantInvoke's :*).
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [requireBrowserTask(resources).functionArn],
      }),
    );
  }
  const codeFunctions = resources.agentCodeFunctions ?? [];
  if (access.agentCode === 'invoke' && codeFunctions.length > 0) {
    // Exactly the registered ARNs, as registered (an unqualified one is not its versions and aliases): the grant is
    // half of the permission; the customer's function policy, which names this role, is the other (README).
    fn.addToRolePolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [...codeFunctions] }));
  }
  if (access.mcpSecrets === 'read' && (resources.mcpSecrets ?? []).length > 0) {
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: (resources.mcpSecrets ?? []).map(({ secret }) => secret.secretArn),
      }),
    );
  }
  if (access.people === 'manage') {
    // The invitation's call of the people directory (adapters/auth/cognito-directory.ts); no account is ever deleted.
    requirePeople(resources).userPool.grant(fn, 'cognito-idp:AdminCreateUser');
  }
  if (access.knowledgeIndex === 'retrieve') requireIndex(resources).grantRetrieve(fn);
  if (access.knowledgeIndex === 'listChunks') {
    if (requireIndex(resources).chunkManifests) grantChunkManifests(fn, bucket);
    else requireIndex(resources).grantRetrieve(fn);
  }
  if (access.model === 'invoke' && resources.openAiCompatible) {
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [resources.openAiCompatible.apiKey.secretArn],
      }),
    );
  }
  if (access.model === 'invoke' && resources.models.length > 0) {
    const arns = [...new Set(resources.models.flatMap((id) => modelArns(Stack.of(fn), id)))];
    fn.addToRolePolicy(new PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: arns }));
    for (const model of resources.models.map(bedrockModel).filter((m) => m.destinations === '*')) {
      Validations.of(fn).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${model.model}]`,
        reason:
          `The global inference profile ${model.id} routes to ${model.model} in any commercial Region, and Bedrock ` +
          'checks the caller may invoke that model there: the model is named, the Region cannot be.',
      });
    }
  }
}

function requireFlowRunQueue(resources: PlatformResources): IQueue {
  if (!resources.flowRunQueue) throw new Error('a function sends to the flow runner, but no flow run queue was given');
  return resources.flowRunQueue;
}

function requireWebhookQueue(resources: PlatformResources): IQueue {
  if (!resources.webhookQueue) throw new Error('a function sends to the webhook queue, but no webhook queue was given');
  return resources.webhookQueue;
}

function requireBrowserTask(resources: PlatformResources): IFunction {
  if (!resources.browserTask) throw new Error('a function runs browser tasks, but no BrowserTask function was given');
  return resources.browserTask;
}

function requirePeople(resources: PlatformResources): PeopleAccounts {
  if (!resources.people) throw new Error("a function needs people's accounts, but no user pool was given");
  return resources.people;
}

function requireIndex(resources: PlatformResources): KnowledgeIndexBackend {
  if (!resources.knowledgeIndex) throw new Error('a function needs the knowledge index, but none was given');
  return resources.knowledgeIndex;
}

/**
 * How cdk-nag writes the ARN of `resource` in a finding on `fn`'s role policy: `<LogicalId.Arn>` when both are in one
 * stack; for a function in a nested stack (the API's route functions), the nested stack's parameter that CDK passes
 * the ARN in, `<referenceto<unique id of the resource>Arn>` (aws-cdk-lib, core/lib/private/refs.ts). A name that
 * does not match leaves the finding unacknowledged, and the synth fails (test/infra/stack.test.ts).
 */
function arnAsNagNamesIt(fn: IConstruct, resource: IConstruct): string {
  const element = resource.node.defaultChild as CfnElement;
  const stack = Stack.of(fn);
  if (Stack.of(element) === stack) return `<${stack.getLogicalId(element)}.Arn>`;
  return `<referenceto${Names.nodeUniqueId(element.node)}Arn>`;
}

/**
 * The chunk view of a Bedrock deployment: GetObject on the chunk manifests only (`<document folder>/_chunks/…`), not
 * the documents' files; and ListBucket, without which S3 answers a missing manifest (a document indexed before they
 * were kept) 403 instead of 404. ListBucket shows keys, never content.
 */
function grantChunkManifests(fn: IFunction, bucket: IBucket): void {
  const pattern = `*/${CHUNK_MANIFEST_FOLDER}/*`;
  fn.addToRolePolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: [bucket.arnForObjects(pattern)] }));
  fn.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
  const bucketArn = arnAsNagNamesIt(fn, bucket);
  Validations.of(fn).acknowledge({
    id: `AwsSolutions-IAM5[Resource::${bucketArn}/${pattern}]`,
    reason:
      'Chunk manifest keys hold the agent, environment, knowledge base and document, known only at run time; the ' +
      'grant is GetObject on the _chunks/ folders of the documents bucket only, not the documents themselves.',
  });
}

function acknowledgeBucketGrantWildcards(fn: IFunction, bucket: IBucket, level: 'read' | 'readWrite'): void {
  const bucketArn = arnAsNagNamesIt(fn, bucket);
  const findings = [
    `Resource::${bucketArn}/*`,
    'Action::s3:GetObject*',
    'Action::s3:GetBucket*',
    'Action::s3:List*',
    ...(level === 'readWrite' ? ['Action::s3:DeleteObject*', 'Action::s3:Abort*'] : []),
  ];
  for (const finding of findings) {
    Validations.of(fn).acknowledge({
      id: `AwsSolutions-IAM5[${finding}]`,
      reason:
        'Granted by bucket.grantRead/grantReadWrite on the documents bucket only: object keys are per document and ' +
        'only known at run time (hence <bucket>/*), and the grant action groups (GetObject*, List*, DeleteObject*, ' +
        'Abort*) are the CDK minimum for HEAD/GET, pre-signed PUT and delete of those objects.',
    });
  }
}
