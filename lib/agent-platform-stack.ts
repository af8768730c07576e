/** The whole platform in one stack: data tables, document storage with its processing queue, and the REST API. */
import { CfnOutput, type Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { CorsPolicy } from '#shared/cors';
import { ApiFirewall } from './constructs/api-firewall';
import { BrowserTask } from './constructs/browser-task';
import { ChunkTableIndex } from './constructs/chunk-table-index';
import { ConsoleSite } from './constructs/console-site';
import { DataBackup } from './constructs/data-backup';
import { DataTables, pascalCase } from './constructs/data-tables';
import {
  DocumentProcessing,
  PROCESSING_MAX_RECEIVES,
  PROCESSING_VISIBILITY_TIMEOUT,
} from './constructs/document-processing';
import { DocumentStorage } from './constructs/document-storage';
import { EdgeIdentity } from './constructs/edge-identity';
import { FlowRunner } from './constructs/flow-runner';
import { FlowScheduler } from './constructs/flow-scheduler';
import { type KnowledgeIndexBackend, KnowledgeIndexInfra } from './constructs/knowledge-index';
import { type McpSecretSetting, McpSecrets } from './constructs/mcp-secrets';
import { ModelApiKey } from './constructs/model-api-key';
import { Operations } from './constructs/operations';
import { PeopleAccounts, type SignUpMode } from './constructs/people';
import { PlatformApi } from './constructs/platform-api';
import { metricsNamespace, type ObservedStack } from './constructs/service-function';
import { WebhookDelivery } from './constructs/webhook-delivery';
import type { TableName } from './routes';

/** Largest document processed: 50 MB, Bedrock's own limit. */
const MAX_FILE_BYTES = 50 * 1024 * 1024;
/** Largest ZIP archive imported; the processing function copies it to its temporary storage. */
const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;

export interface AgentPlatformStackProps extends StackProps {
  /** Deployment stage (`dev`, `prod`, ...): the API Gateway stage name. */
  readonly stage: string;
  /**
   * The Bedrock models and inference profiles the flows and generate may call, the default first (README,
   * "Models"); none: generate answers extractively and flows run on the offline model.
   */
  readonly models?: readonly string[];
  /**
   * Lambda functions in customers' accounts that definitions may name as agent code (`agentCode.functionArn`,
   * docs/agent-code.md): the flow functions may invoke exactly these. Default none.
   */
  readonly agentCodeFunctions?: readonly string[];
  /** Bearer tokens of MCP servers that definitions may name (`bearerSecret`): an empty secret each (McpSecrets). */
  readonly mcpSecrets?: readonly McpSecretSetting[];
  /**
   * An OpenAI-compatible server as the default model: its base URL and model name; the stack creates the secret its
   * API key goes in (ModelApiKey).
   */
  readonly openAiCompatible?: { readonly baseUrl: string; readonly model: string };
  /**
   * Where chunks are indexed: `bedrock` (default), a Bedrock knowledge base per environment over S3 Vectors; or
   * `dynamodb`, a chunk table ranked with BM25 by the functions, for deployments without Bedrock (LocalStack).
   */
  readonly knowledgeIndex?: 'bedrock' | 'dynamodb';
  /** A WAF web ACL on the API stage (default true): per-IP rate rule and AWS managed rules (api-firewall.ts). */
  readonly waf?: boolean;
  /** Requests per source IP per five minutes before WAF answers 429 (default 2,000). */
  readonly wafRateLimit?: number;
  /** Which other origins' pages may read the API's answers (default none: same origin only). */
  readonly cors?: CorsPolicy;
  /** How long an upload URL stays valid (default 900 s). */
  readonly uploadUrlTtl?: Duration;
  /** Requests per token and per organization (core/auth/rate-limit.ts; default 50 a second, burst 100). */
  readonly rateLimit?: { readonly perSecond: number; readonly burst: number };
  /** Who may sign up (docs/people.md): `invite` (default), only people an owner invites; `open`, anyone. */
  readonly signUp?: SignUpMode;
  /** The web console on CloudFront (docs/console.md, "In AWS"); default true. */
  readonly console?: boolean;
  /** The API stage's throttle over all tenants; default ten times one organization's limit (500/s, burst 1,000). */
  readonly apiThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** Reserved concurrency for the processor, the flow runner and the browser task (default true). */
  readonly reservedConcurrency?: boolean;
  /** The AWS Backup plan of the tables and the documents bucket (default on), and a vault to copy to. */
  readonly backup?: { readonly enabled: boolean; readonly copyVaultArn?: string };
  /** Who the alarms reach besides the stack's topic: an e-mail address subscribed to it, another topic. */
  readonly alarms?: { readonly email?: string; readonly topicArn?: string };
  /** Cognito's mail (invitations, codes) through SES from this verified address instead of Cognito's own sender. */
  readonly cognitoEmail?: { readonly from: string; readonly sesRegion?: string };
}

export class AgentPlatformStack extends Stack implements ObservedStack {
  /** CloudWatch namespace of this stage's metrics (POWERTOOLS_METRICS_NAMESPACE of every function). */
  public readonly metricsNamespace: string;
  public readonly data: DataTables;
  public readonly storage: DocumentStorage;
  public readonly api: PlatformApi;
  public readonly knowledgeIndex: KnowledgeIndexBackend;
  public readonly processing: DocumentProcessing;
  public readonly scheduler: FlowScheduler;
  /** Where the flow functions run their browser tasks (Chromium). */
  public readonly browserTask: BrowserTask;
  /** Where runs that outlive a webhook's budget go on: the flow runner's queue and function. */
  public readonly flowRunner: FlowRunner;
  /** The status webhooks' queue and delivery worker (docs/webhooks.md). */
  public readonly webhooks: WebhookDelivery;
  /** Alarms (to the topic of output AlarmTopicArn) and the CloudWatch dashboard. */
  public readonly operations: Operations;
  /** People's accounts: the user pool and the console's app client. */
  public readonly people: PeopleAccounts;
  /** The API's web ACL; undefined with `-c waf=off`. */
  public readonly firewall: ApiFirewall | undefined;
  /** The web console and the API on one CloudFront origin; undefined with `-c console=off`. */
  public readonly console: ConsoleSite | undefined;
  /** The AWS Backup plan; undefined with `-c backup=off`. */
  public readonly backup: DataBackup | undefined;

  constructor(scope: Construct, id: string, props: AgentPlatformStackProps) {
    super(scope, id, props);
    // Before any function is made: ServiceFunction reads it from the stack.
    this.metricsNamespace = metricsNamespace(props.stage);

    this.data = new DataTables(this, 'Data');
    this.storage = new DocumentStorage(this, 'DocumentStorage', {
      processingVisibilityTimeout: PROCESSING_VISIBILITY_TIMEOUT,
      maxReceiveCount: PROCESSING_MAX_RECEIVES,
    });
    this.knowledgeIndex =
      props.knowledgeIndex === 'dynamodb'
        ? new ChunkTableIndex(this, 'ChunkIndex')
        : new KnowledgeIndexInfra(this, 'KnowledgeIndex');
    this.people = new PeopleAccounts(this, 'People', { signUp: props.signUp ?? 'invite', email: props.cognitoEmail });
    this.backup =
      props.backup?.enabled === false
        ? undefined
        : new DataBackup(this, 'Backup', {
            tables: Object.values(this.data.tables),
            documentsBucket: this.storage.bucket,
            copyVaultArn: props.backup?.copyVaultArn,
          });
    const modelApiKey = props.openAiCompatible ? new ModelApiKey(this, 'ModelApiKey') : undefined;
    if (modelApiKey) {
      new CfnOutput(this, 'ModelApiKeySecretArn', {
        description:
          'Put the OpenAI-compatible model API key here: aws secretsmanager put-secret-value (README, "Models")',
        value: modelApiKey.secret.secretArn,
      });
    }
    const mcpSecrets = props.mcpSecrets?.length
      ? new McpSecrets(this, 'McpSecrets', { secrets: props.mcpSecrets }).secrets
      : [];
    const stateful = {
      people: this.people,
      tables: this.data.tables,
      documentsBucket: this.storage.bucket,
      processingQueue: this.storage.queue,
      knowledgeIndex: this.knowledgeIndex,
      models: props.models ?? [],
      agentCodeFunctions: props.agentCodeFunctions ?? [],
      mcpSecrets,
      ...(props.openAiCompatible && modelApiKey
        ? { openAiCompatible: { ...props.openAiCompatible, apiKey: modelApiKey.secret } }
        : {}),
    };
    const reservedConcurrency = props.reservedConcurrency ?? true;
    this.browserTask = new BrowserTask(this, 'BrowserTask', { resources: stateful, reservedConcurrency });
    this.flowRunner = new FlowRunner(this, 'FlowRunner', {
      resources: { ...stateful, browserTask: this.browserTask.function },
      reservedConcurrency,
    });
    this.webhooks = new WebhookDelivery(this, 'WebhookDelivery', { resources: stateful, reservedConcurrency });
    const resources = {
      ...stateful,
      browserTask: this.browserTask.function,
      flowRunQueue: this.flowRunner.queue,
      webhookQueue: this.webhooks.queue,
    };
    this.api = new PlatformApi(this, 'PlatformApi', {
      stageName: props.stage,
      resources,
      maxFileBytes: MAX_FILE_BYTES,
      maxArchiveBytes: MAX_ARCHIVE_BYTES,
      cors: props.cors,
      uploadUrlTtl: props.uploadUrlTtl,
      rateLimit: props.rateLimit,
      apiThrottle: props.apiThrottle ?? { rateLimit: 500, burstLimit: 1000 },
    });

    // With both the console's distribution and the web ACL, the ACL counts console requests by their viewer.
    const edgeIdentity =
      props.waf !== false && props.console !== false ? new EdgeIdentity(this, 'EdgeIdentity') : undefined;
    if (props.waf === false) {
      this.firewall = undefined;
      Validations.of(this.api.api.deploymentStage).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          "Deployed with -c waf=off, the operator's choice (a web ACL costs per month and per request): every " +
          'non-public route still needs a bearer token checked by the authorizer, every token and organization has ' +
          'its own rate limit, and the stage is throttled.',
      });
    } else {
      this.firewall = new ApiFirewall(this, 'ApiFirewall', {
        api: this.api.api,
        rateLimitPer5Minutes: props.wafRateLimit,
        cors: this.api.cors,
        edgeIdentity,
      });
    }

    this.console =
      props.console === false
        ? undefined
        : new ConsoleSite(this, 'Console', {
            api: this.api.api,
            userPool: this.people.userPool,
            client: this.people.client,
            signUp: this.people.signUpMode,
            documentsBucket: this.storage.bucket,
            edgeIdentity,
          });

    this.processing = new DocumentProcessing(this, 'DocumentProcessing', {
      resources,
      processingQueue: this.storage.queue,
      knowledgeIndex: this.knowledgeIndex,
      maxFileBytes: MAX_FILE_BYTES,
      maxArchiveBytes: MAX_ARCHIVE_BYTES,
      reservedConcurrency,
    });

    this.scheduler = new FlowScheduler(this, 'FlowScheduler', { resources });

    this.operations = new Operations(this, 'Operations', {
      metricsNamespace: this.metricsNamespace,
      rateLimited: this.firewall?.rateLimitedMetric(),
      api: this.api.api,
      deadLetterQueues: {
        Processing: this.storage.deadLetterQueue,
        FlowRun: this.flowRunner.deadLetterQueue,
        Webhook: this.webhooks.deadLetterQueue,
      },
      workQueues: { Processing: this.storage.queue, FlowRun: this.flowRunner.queue, Webhook: this.webhooks.queue },
      workers: {
        Processor: this.processing.processor,
        Watchdog: this.processing.watchdog,
        FlowRunner: this.flowRunner.function,
        ScheduleTick: this.scheduler.tick,
        BrowserTask: this.browserTask.function,
        WebhookDelivery: this.webhooks.function,
      },
      heartbeats: { Watchdog: this.processing.watchdog, ScheduleTick: this.scheduler.tick },
      alarmEmail: props.alarms?.email,
      alarmTopicArn: props.alarms?.topicArn,
      processor: this.processing.processor,
      authorizer: this.api.authorizerFunction,
      throttleWatched: {
        Processor: this.processing.processor,
        Watchdog: this.processing.watchdog,
        FlowRunner: this.flowRunner.function,
        ScheduleTick: this.scheduler.tick,
        BrowserTask: this.browserTask.function,
        WebhookDelivery: this.webhooks.function,
        Authorizer: this.api.authorizerFunction,
      },
    });

    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.operations.alarmTopic.topicArn,
      description: 'SNS topic every alarm notifies: subscribe to it to be told (README, "Operating it")',
    });
    new CfnOutput(this, 'DashboardName', { value: this.operations.dashboard.dashboardName });
    new CfnOutput(this, 'ApiUrl', {
      value: this.api.url,
      description: 'Base URL of the API, without a trailing slash',
    });
    if (this.console) {
      new CfnOutput(this, 'ConsoleUrl', {
        value: this.console.url,
        description: 'The web console; the API is also served under this origin (/api/*, /dashboard/*)',
      });
    }
    new CfnOutput(this, 'DocumentsBucketName', { value: this.storage.bucket.bucketName });
    new CfnOutput(this, 'UserPoolId', { value: this.people.userPool.userPoolId });
    new CfnOutput(this, 'UserPoolClientId', { value: this.people.client.userPoolClientId });
    new CfnOutput(this, 'ProcessingQueueUrl', { value: this.storage.queue.queueUrl });
    // `npm run redrive -- flow-run --stage <stage>` finds the flow runner's queue (and from it its DLQ) here.
    new CfnOutput(this, 'FlowRunQueueUrl', { value: this.flowRunner.queue.queueUrl });
    // `npm run redrive -- webhook --stage <stage>` finds the status webhooks' queue here.
    new CfnOutput(this, 'WebhookQueueUrl', { value: this.webhooks.queue.queueUrl });
    for (const [name, table] of Object.entries(this.data.tables) as [TableName, { tableName: string }][]) {
      new CfnOutput(this, `${pascalCase(name)}TableName`, { value: table.tableName });
    }
  }
}
