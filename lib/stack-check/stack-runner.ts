/**
 * The synthesized stack run on this machine: its tables created from the template in dynalite, its bucket and
 * queues on the local engines (s3rver behind the SigV4 check, fauxqs, S3 → SQS forwarding), every Node function run
 * from its asset folder in a process of its own with its template environment and its role's IAM enforced on each
 * AWS call, its queues polled as its event source mappings say, and its REST API served as the template's resources,
 * methods, authorizer, Lambda permissions and gateway responses declare: all read from the template, none from
 * lib/routes.ts, so a drift between the two shows here.
 *
 * Over 400 lines on purpose: one runner whose engines, function pool, queue pollers and API server are started
 * and stopped together, in an order the template decides; the pieces that stand alone are in this folder's other files.
 */

import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AdminConfirmSignUpCommand,
  AdminGetUserCommand,
  InitiateAuthCommand,
  SignUpCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { cognitoClient, type LocalCognito, markAddressVerified, startCognito } from '../local/cognito';
import { LOCAL_REGION } from '../local/engine-credentials';
import {
  DOCUMENTS_BUCKET,
  type Engines,
  FLOW_RUN_DLQ,
  FLOW_RUN_MAX_RECEIVES,
  FLOW_RUN_QUEUE,
  type NotificationFilter,
  PROCESSING_DLQ,
  PROCESSING_MAX_RECEIVES,
  PROCESSING_QUEUE,
  startEngines,
} from '../local/engines';
import { runtimeNodePath } from './asset-checks';
import { bedrockIamCalls } from './bedrock-access';
import { type BedrockStandIn, startBedrockStandIn } from './bedrock-stand-in';
import {
  type CloudAssembly,
  type Json,
  logicalIdNamedBy,
  nodeFunctions,
  ResourceNames,
  resolvedEnvironment,
  resolveIntrinsics,
  SYNTHETIC_ACCOUNT,
  SYNTHETIC_REGION,
} from './cloud-assembly';
import { FunctionHost } from './function-host';
import { AccessDeniedError, FunctionPermissions } from './iam';
import { type SecretsStandIn, startSecretsStandIn } from './secrets-stand-in';
import { type ScheduledTrigger, scheduledTriggers, serveLambdaInvoke } from './triggers';

type Resources = CloudAssembly['template']['Resources'];
type Props = Record<string, Json>;

export interface RunningStack {
  readonly baseUrl: string;
  readonly names: ResourceNames;
  /** The function of each logical id, started on its first invocation. */
  readonly hosts: ReadonlyMap<string, FunctionHost>;
  /** Wiring the template gets wrong (a method without its Lambda permission, ...), found while serving. */
  readonly wiringErrors: string[];
  /** Every call refused by a function's role. */
  denials(): AccessDeniedError[];
  /** How many AWS calls were checked against a role, allowed or not. */
  callsChecked(): number;
  /** The Bedrock stand-in the functions' Bedrock clients call: each request it served, and each constraint broken. */
  readonly bedrock: Pick<BedrockStandIn, 'requests' | 'violations'>;
  /** The Secrets Manager stand-in: where a test puts a secret's value, and the requests it served. */
  readonly secrets: Pick<SecretsStandIn, 'endpoint' | 'requests'>;
  /**
   * The calls the functions made so far, evaluated again against another template's roles (a mutation of this one):
   * those its policies would refuse. The same names as this run, so a call names the same ARNs.
   */
  replay(template: CloudAssembly['template']): Promise<AccessDeniedError[]>;
  /** Fires every scheduled rule and schedule now, as their rate would: each trigger's id, and its error if it failed. */
  fireSchedules(): Promise<{ id: string; functionId: string; error?: string }[]>;
  /** Writes a token with these scopes of an organization (a new one by default) into the tokens table (its hash). */
  createToken(scopes: string[], organizationId?: string): Promise<string>;
  /**
   * A person (in the stack's user pool, cognito-local here) who owns a new organization (a row of the template's
   * memberships table), signed in: their ID token. What `npm run first-owner` makes, without its e-mail.
   */
  createOwner(
    email: string,
    password: string,
    organizationId?: string,
  ): Promise<{ idToken: string; organizationId: string }>;
  /** The user pool the stack's people sign in to (cognito-local here), and the credentials of its admin calls. */
  readonly people: PeoplePool | undefined;
  stop(): Promise<void>;
}

/** A user pool as a test signs in to it: its endpoint, ids, and the credentials of its admin calls. */
export interface PeoplePool {
  readonly endpoint: string;
  readonly userPoolId: string;
  readonly clientId: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

function propsOf(resources: Resources, id: string): Props {
  const resource = resources[id];
  if (!resource) throw new Error(`no resource ${id} in the template`);
  return (resource.Properties ?? {}) as Props;
}

const getAttTarget = (value: Json): string | undefined => {
  const att = (value as { 'Fn::GetAtt'?: [string, string] } | null)?.['Fn::GetAtt'];
  return att?.[0];
};
const refTarget = (value: Json): string | undefined => (value as { Ref?: string } | null)?.Ref;

/** The first function whose Arn or Ref an intrinsic value names (Integration.Uri, AuthorizerUri, FunctionName). */
function functionNamedBy(resources: Resources, value: Json): string | undefined {
  let found: string | undefined;
  const walk = (v: Json) => {
    if (found || v === null || typeof v !== 'object') return;
    const target = getAttTarget(v) ?? refTarget(v);
    if (target && resources[target]?.Type === 'AWS::Lambda::Function') {
      found = target;
      return;
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) walk(child);
  };
  walk(value);
  return found;
}

function ofType(resources: Resources, type: string): [string, Props][] {
  return Object.entries(resources)
    .filter(([, r]) => r.Type === type)
    .map(([id, r]) => [id, (r.Properties ?? {}) as Props]);
}

/**
 * The documents bucket and the queues, named as the local engines name theirs, found from the template's wiring;
 * throws on wiring the engines could not reproduce (no bucket notification, a queue without its dead-letter queue).
 */
export function engineNames(resources: Resources): {
  overrides: Record<string, string>;
  processingQueue: string;
  flowRunQueue: string;
  notificationFilter: NotificationFilter;
} {
  const notifications = ofType(resources, 'Custom::S3BucketNotifications');
  if (notifications.length !== 1) throw new Error(`expected one bucket notification, found ${notifications.length}`);
  const [, notification] = notifications[0];
  const bucket = refTarget(notification.BucketName);
  const queueConfigs =
    (notification.NotificationConfiguration as { QueueConfigurations?: Props[] }).QueueConfigurations ?? [];
  if (queueConfigs.length !== 1 || !(queueConfigs[0].Events as string[]).includes('s3:ObjectCreated:*')) {
    throw new Error('the documents bucket must send s3:ObjectCreated:* to one queue, as the local engines forward it');
  }
  const processingQueue = getAttTarget(queueConfigs[0].QueueArn);
  // S3 notifies only keys that pass the configuration's filter; the engines forward the same ones.
  const rules =
    (queueConfigs[0].Filter as { Key?: { FilterRules?: { Name: string; Value: string }[] } } | undefined)?.Key
      ?.FilterRules ?? [];
  const rule = (name: string) => rules.find((r) => r.Name.toLowerCase() === name)?.Value;
  const notificationFilter = { prefix: rule('prefix'), suffix: rule('suffix') };
  if (!bucket || !processingQueue) throw new Error('the bucket notification names no bucket or queue of the stack');
  const deadLetterOf = (queue: string) => {
    const redrive = propsOf(resources, queue).RedrivePolicy as { deadLetterTargetArn: Json; maxReceiveCount: number };
    const target = getAttTarget(redrive?.deadLetterTargetArn);
    if (!target) throw new Error(`${queue} has no dead-letter queue`);
    return { target, maxReceiveCount: Number(redrive.maxReceiveCount) };
  };
  const processingDlq = deadLetterOf(processingQueue);
  if (processingDlq.maxReceiveCount !== PROCESSING_MAX_RECEIVES) {
    throw new Error(
      `${processingQueue} moves messages to its DLQ after ${processingDlq.maxReceiveCount} receives; the engines after ${PROCESSING_MAX_RECEIVES}`,
    );
  }
  const consumed = ofType(resources, 'AWS::Lambda::EventSourceMapping').map(([, p]) => getAttTarget(p.EventSourceArn));
  const flowRunQueue = consumed.find((q): q is string => q !== undefined && q !== processingQueue);
  if (!flowRunQueue) throw new Error('no queue besides the processing queue is consumed by a function');
  const flowDlq = deadLetterOf(flowRunQueue);
  if (flowDlq.maxReceiveCount !== FLOW_RUN_MAX_RECEIVES) {
    throw new Error(
      `${flowRunQueue} redrives after ${flowDlq.maxReceiveCount} receives; the engines after ${FLOW_RUN_MAX_RECEIVES}`,
    );
  }
  return {
    overrides: {
      [bucket]: DOCUMENTS_BUCKET,
      [processingQueue]: PROCESSING_QUEUE,
      [processingDlq.target]: PROCESSING_DLQ,
      [flowRunQueue]: FLOW_RUN_QUEUE,
      [flowDlq.target]: FLOW_RUN_DLQ,
    },
    processingQueue,
    flowRunQueue,
    notificationFilter,
  };
}

/** A template table as CreateTable: keys, attributes and indexes as declared (billing and encryption do not matter here). */
function createTableInput(name: string, p: Props): CreateTableCommandInput {
  return {
    TableName: name,
    KeySchema: p.KeySchema as never,
    AttributeDefinitions: p.AttributeDefinitions as never,
    BillingMode: 'PAY_PER_REQUEST',
    ...(p.GlobalSecondaryIndexes
      ? {
          GlobalSecondaryIndexes: (p.GlobalSecondaryIndexes as Props[]).map((index) => ({
            IndexName: index.IndexName as string,
            KeySchema: index.KeySchema as never,
            Projection: index.Projection as never,
          })),
        }
      : {}),
  };
}

/** `*` in an ARN pattern of a policy or a permission matches any run of characters. */
function arnMatches(pattern: string, arn: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return regex.test(arn);
}

interface Method {
  readonly id: string;
  readonly httpMethod: string;
  readonly resourcePath: string;
  readonly pattern: RegExp;
  readonly parameterNames: string[];
  readonly authorizer: string | undefined;
  readonly functionId: string;
}

function apiMethods(resources: Resources): Method[] {
  const pathOf = (resourceId: Json): string => {
    const ref = refTarget(resourceId);
    if (!ref) return ''; // the root resource (Fn::GetAtt RestApi.RootResourceId)
    const p = propsOf(resources, ref);
    return `${pathOf(p.ParentId)}/${p.PathPart as string}`;
  };
  return ofType(resources, 'AWS::ApiGateway::Method')
    .filter(([, p]) => (p.Integration as Props | undefined)?.Type === 'AWS_PROXY')
    .map(([id, p]) => {
      const resourcePath = pathOf(p.ResourceId) || '/';
      const parameterNames: string[] = [];
      const pattern = new RegExp(
        `^${resourcePath.replace(/\{([^}+]+)(\+?)\}/g, (_, name: string, greedy: string) => {
          parameterNames.push(name);
          return greedy ? '(.+)' : '([^/]+)';
        })}$`,
      );
      const functionId = functionNamedBy(resources, (p.Integration as Props).Uri);
      if (!functionId) throw new Error(`${id}: its integration names no function of the stack`);
      return {
        id,
        httpMethod: p.HttpMethod as string,
        resourcePath,
        pattern,
        parameterNames,
        authorizer: p.AuthorizationType === 'CUSTOM' ? refTarget(p.AuthorizerId) : undefined,
        functionId,
      };
    });
}

export async function runStack(
  assembly: CloudAssembly,
  options: {
    readonly dataDir: string;
    /** Lambda functions outside the stack, by ARN: the URL that serves each (triggers.ts, serveLambdaInvoke). */
    readonly externalFunctions?: Readonly<Record<string, string>>;
  },
): Promise<RunningStack> {
  const resources = assembly.template.Resources;
  const wiring = engineNames(resources);
  const visibility = (queue: string) => Number(propsOf(resources, queue).VisibilityTimeout ?? 30);
  const wiringErrors: string[] = [];
  const engines: Engines = await startEngines({
    dataDir: options.dataDir,
    host: '127.0.0.1',
    s3Port: 0,
    visibilityTimeoutSeconds: visibility(wiring.processingQueue),
    flowRunVisibilityTimeoutSeconds: visibility(wiring.flowRunQueue),
    notificationFilter: wiring.notificationFilter,
    // Every object the stack writes is one the processing needs to hear of (an upload, a ZIP): none may be filtered.
    onNotificationFiltered: (key) =>
      wiringErrors.push(
        `the bucket notification's filter (${JSON.stringify(wiring.notificationFilter)}) keeps S3 from notifying ` +
          `the processing queue of ${key}`,
      ),
  });
  const stops: (() => Promise<unknown>)[] = [() => engines.stop()];
  try {
    const queueUrls: Record<string, string> = {
      [PROCESSING_QUEUE]: engines.processingQueueUrl,
      [PROCESSING_DLQ]: engines.deadLetterQueueUrl,
      [FLOW_RUN_QUEUE]: engines.flowRunQueueUrl,
      [FLOW_RUN_DLQ]: engines.flowRunDeadLetterQueueUrl,
    };
    const overrides: Record<string, string> = { ...wiring.overrides };
    for (const [logicalId, name] of Object.entries(wiring.overrides)) {
      if (queueUrls[name]) overrides[`${logicalId}.QueueUrl`] = queueUrls[name];
    }
    // People's accounts: the stack's user pool and app client are cognito-local's (lib/local/cognito.ts).
    const [pool] = ofType(resources, 'AWS::Cognito::UserPool');
    const [poolClient] = ofType(resources, 'AWS::Cognito::UserPoolClient');
    let cognitoEndpoint: string | undefined;
    let cognito: LocalCognito | undefined;
    if (pool && poolClient) {
      cognito = await startCognito({ dataDir: options.dataDir, host: '127.0.0.1' });
      const started = cognito;
      stops.push(() => started.stop());
      overrides[pool[0]] = cognito.userPoolId;
      overrides[`${pool[0]}.ProviderURL`] = cognito.issuer;
      overrides[poolClient[0]] = cognito.clientId;
      cognitoEndpoint = cognito.endpoint;
    }
    const names = new ResourceNames(assembly.template, overrides);
    const credentials = { ...engines.credentials };

    const dynamodb = new DynamoDBClient({ endpoint: engines.dynamodbEndpoint, region: LOCAL_REGION, credentials });
    stops.push(async () => dynamodb.destroy());
    for (const [id, p] of ofType(resources, 'AWS::DynamoDB::Table')) {
      await dynamodb.send(new CreateTableCommand(createTableInput(names.physicalName(id), p)));
    }

    const nodePath = runtimeNodePath();
    const hosts = new Map<string, FunctionHost>();
    // Bedrock: the stand-in, holding the template's knowledge bases and their data sources under the ids the
    // functions' environments name; each function calls it under a path of its own, so its role is checked there.
    const knowledgeBases = ofType(resources, 'AWS::Bedrock::KnowledgeBase').map(([id]) => id);
    const dataSources = ofType(resources, 'AWS::Bedrock::DataSource');
    const bedrock = await startBedrockStandIn({
      knowledgeBases:
        knowledgeBases.length > 0
          ? Object.fromEntries(
              knowledgeBases.map((kb) => [
                names.bedrockId(kb),
                dataSources
                  .filter(([, p]) => logicalIdNamedBy(p.KnowledgeBaseId) === kb)
                  .map(([d]) => names.bedrockId(d)),
              ]),
            )
          : undefined,
      authorize: async (call) => {
        const host = call.caller === undefined ? undefined : hosts.get(call.caller);
        if (!host) return `${call.operation} from ${call.caller ?? 'no caller'}: not a function of the stack`;
        return host.authorize(bedrockIamCalls(call, SYNTHETIC_REGION, SYNTHETIC_ACCOUNT));
      },
    });
    stops.push(() => bedrock.stop());
    // Secrets Manager: the template's secrets, empty until a test puts a value as the deployer would.
    const secrets = await startSecretsStandIn(
      ofType(resources, 'AWS::SecretsManager::Secret').map(([id]) => names.arn(id)),
    );
    stops.push(() => secrets.stop());
    // Lambda's Invoke API for the functions' own calls (BrowserTask from the flow functions).
    const lambdaServer = serveLambdaInvoke(
      (name) => [...hosts.values()].find((h) => names.physicalName(h.fn.logicalId) === name),
      options.externalFunctions,
    );
    const lambdaAddress = await new Promise<AddressInfo>((resolve) =>
      lambdaServer.listen(0, '127.0.0.1', () => resolve(lambdaServer.address() as AddressInfo)),
    );
    stops.push(() => new Promise((resolve) => lambdaServer.close(resolve)));
    for (const fn of nodeFunctions(assembly)) {
      const environment = {
        ...resolvedEnvironment(fn, names),
        // The role's credentials in Lambda; here the engines', which check every signature.
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_ENDPOINT_URL_DYNAMODB: engines.dynamodbEndpoint,
        AWS_ENDPOINT_URL_S3: engines.s3Endpoint,
        AWS_ENDPOINT_URL_SQS: engines.sqsEndpoint,
        AWS_ENDPOINT_URL_LAMBDA: `http://127.0.0.1:${lambdaAddress.port}`,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
        ...Object.fromEntries(
          ['BEDROCK_AGENT', 'BEDROCK_AGENT_RUNTIME', 'BEDROCK_RUNTIME'].map((service) => [
            `AWS_ENDPOINT_URL_${service}`,
            `${bedrock.endpoint}/caller/${encodeURIComponent(fn.logicalId)}`,
          ]),
        ),
        ...(cognitoEndpoint ? { AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: cognitoEndpoint } : {}),
      };
      const host = new FunctionHost(fn, environment, new FunctionPermissions(assembly.template, fn, names), nodePath);
      hosts.set(fn.logicalId, host);
      stops.push(() => host.stop());
    }
    const hostOf = (id: string) => {
      const host = hosts.get(id);
      if (!host) throw new Error(`${id} is not a Node function of the stack`);
      return host;
    };

    // Event source mappings: Lambda polls with the function's role, which must allow receiving and deleting.
    const sqs = new SQSClient({ endpoint: engines.sqsEndpoint, region: LOCAL_REGION, credentials });
    let polling = true;
    const pollers: Promise<void>[] = [];
    for (const [id, p] of ofType(resources, 'AWS::Lambda::EventSourceMapping')) {
      const queue = getAttTarget(p.EventSourceArn);
      const functionId = functionNamedBy(resources, p.FunctionName);
      if (!queue || !functionId) throw new Error(`${id}: not a queue → function mapping of the stack`);
      const host = hostOf(functionId);
      const queueArn = names.arn(queue);
      const granted = await Promise.all(
        ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'].map(
          (action) =>
            host.permissions.check(action, queueArn).then(
              () => true,
              (error: AccessDeniedError) => {
                host.denials.push(error);
                return false;
              },
            ),
        ),
      );
      if (granted.includes(false)) {
        wiringErrors.push(`${id}: ${functionId}'s role cannot consume ${queue}`);
        continue;
      }
      const queueUrl = names.queueUrl(queue);
      const batchSize = Number(p.BatchSize ?? 10);
      const reportsFailures = ((p.FunctionResponseTypes as string[] | undefined) ?? []).includes(
        'ReportBatchItemFailures',
      );
      pollers.push(
        (async () => {
          while (polling) {
            const received = await sqs
              .send(
                new ReceiveMessageCommand({
                  QueueUrl: queueUrl,
                  MaxNumberOfMessages: Math.min(batchSize, 10),
                  WaitTimeSeconds: 1,
                  MessageSystemAttributeNames: ['All'],
                  MessageAttributeNames: ['All'],
                }),
              )
              .catch(() => ({ Messages: [] }));
            const messages = received.Messages ?? [];
            if (messages.length === 0 || !polling) continue;
            const records = messages.map((m) => ({
              messageId: m.MessageId,
              receiptHandle: m.ReceiptHandle,
              body: m.Body,
              attributes: m.Attributes ?? {},
              messageAttributes: m.MessageAttributes ?? {},
              md5OfBody: m.MD5OfBody,
              eventSource: 'aws:sqs',
              eventSourceARN: queueArn,
              awsRegion: SYNTHETIC_REGION,
            }));
            let failed: Set<string>;
            try {
              const result = await host.invoke<{ batchItemFailures?: { itemIdentifier: string }[] } | null>({
                Records: records,
              });
              failed = new Set(reportsFailures ? (result?.batchItemFailures ?? []).map((f) => f.itemIdentifier) : []);
            } catch {
              continue; // the whole batch returns to the queue after its visibility timeout, as in Lambda
            }
            for (const m of messages.filter((m) => !failed.has(m.MessageId as string))) {
              await sqs
                .send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }))
                .catch(() => undefined);
            }
          }
        })(),
      );
    }
    stops.push(async () => {
      polling = false;
      await Promise.all(pollers);
      sqs.destroy();
    });

    // The scheduled rules and schedules, each at its rate, as EventBridge and Scheduler invoke them.
    const scheduled = await scheduledTriggers(assembly.template, names);
    wiringErrors.push(...scheduled.refused);
    const fire = (trigger: ScheduledTrigger) =>
      hostOf(trigger.functionId)
        .invoke(trigger.event())
        .then(
          () => undefined,
          (error: unknown) => String((error as Error).message),
        );
    const timers = scheduled.triggers.map((trigger) =>
      setInterval(() => void fire(trigger), trigger.everySeconds * 1000),
    );
    stops.push(async () => {
      for (const timer of timers) clearInterval(timer);
    });

    // OPENAPI_CHECK_DIR (set by test/helpers/stack-process.ts): every answer checked against the OpenAPI document.
    const checkDir = process.env.OPENAPI_CHECK_DIR;
    const check = checkDir ? await import('../local/openapi-check') : undefined;
    const recorder = check && checkDir ? check.createAnswerRecorder(checkDir) : undefined;
    const server = serveApi(
      resources,
      names,
      hostOf,
      wiringErrors,
      check && recorder
        ? (method, path, result, body) => {
            recorder.record({
              target: check.gatewayTargetOf(method, path),
              method,
              path,
              status: result.statusCode,
              headers: result.headers ?? {},
              body: body.toString('utf8'),
            });
          }
        : undefined,
    );
    const address = await new Promise<AddressInfo>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)),
    );
    stops.push(() => new Promise((resolve) => server.close(resolve)));

    const tableKeyedBy = (key: string) =>
      ofType(resources, 'AWS::DynamoDB::Table').find(([, p]) => JSON.stringify(p.KeySchema).includes(`"${key}"`))?.[0];
    const tokensTable = tableKeyedBy('tokenHash');
    const membershipsTable = tableKeyedBy('sub');
    return {
      baseUrl: `http://127.0.0.1:${address.port}`,
      names,
      hosts,
      wiringErrors,
      denials: () => [...hosts.values()].flatMap((h) => h.denials),
      callsChecked: () => [...hosts.values()].reduce((n, h) => n + h.permissions.calls.length, 0),
      bedrock: { requests: bedrock.requests, violations: bedrock.violations },
      secrets: { endpoint: secrets.endpoint, requests: secrets.requests },
      fireSchedules: () =>
        Promise.all(
          scheduled.triggers.map(async (trigger) => {
            const error = await fire(trigger);
            return { id: trigger.id, functionId: trigger.functionId, ...(error ? { error } : {}) };
          }),
        ),
      async replay(template) {
        const replayNames = new ResourceNames(template, overrides);
        const byId = new Map(nodeFunctions({ ...assembly, template }).map((fn) => [fn.logicalId, fn]));
        const refused: AccessDeniedError[] = [];
        for (const host of hosts.values()) {
          const fn = byId.get(host.fn.logicalId);
          const calls = new Map(host.permissions.calls.map((c) => [`${c.action} ${c.resource}`, c]));
          if (!fn) {
            if (calls.size > 0)
              wiringErrors.push(`${host.fn.logicalId} made calls and is not in the replayed template`);
            continue;
          }
          const permissions = new FunctionPermissions(template, fn, replayNames);
          for (const call of calls.values()) {
            const decision = await permissions.decide(call.action, call.resource);
            if (decision !== 'Allowed') {
              refused.push(new AccessDeniedError(fn.logicalId, call.action, call.resource, decision));
            }
          }
        }
        return refused;
      },
      people: cognito
        ? {
            endpoint: cognito.endpoint,
            userPoolId: cognito.userPoolId,
            clientId: cognito.clientId,
            credentials: cognito.credentials,
          }
        : undefined,
      async createToken(scopes, organizationId = randomUUID()) {
        if (!tokensTable) throw new Error('no table keyed by tokenHash in the template');
        const token = `aps_stack_${randomUUID().replace(/-/g, '')}`;
        await dynamodb.send(
          new (await import('@aws-sdk/client-dynamodb')).PutItemCommand({
            TableName: names.physicalName(tokensTable),
            Item: {
              tokenHash: { S: createHash('sha256').update(token).digest('hex') },
              tokenId: { S: randomUUID() },
              organizationId: { S: organizationId },
              name: { S: 'stack-check' },
              scopes: { L: scopes.map((s) => ({ S: s })) },
              createdAt: { S: new Date().toISOString() },
            },
          }),
        );
        return token;
      },
      async createOwner(email, password, organizationId = randomUUID()) {
        if (!cognito || !membershipsTable) throw new Error('no user pool, or no table keyed by sub, in the template');
        const { userPoolId, clientId } = cognito;
        const people = cognitoClient(cognito.endpoint, cognito.credentials);
        try {
          await people.send(new SignUpCommand({ ClientId: clientId, Username: email, Password: password }));
          await people.send(new AdminConfirmSignUpCommand({ UserPoolId: userPoolId, Username: email }));
          await markAddressVerified(people, userPoolId, email);
          const user = await people.send(new AdminGetUserCommand({ UserPoolId: userPoolId, Username: email }));
          const sub = user.UserAttributes?.find((a) => a.Name === 'sub')?.Value as string;
          await dynamodb.send(
            new PutItemCommand({
              TableName: names.physicalName(membershipsTable),
              Item: {
                sub: { S: sub },
                organizationId: { S: organizationId },
                email: { S: email },
                role: { S: 'owner' },
                createdAt: { S: new Date().toISOString() },
              },
            }),
          );
          const signedIn = await people.send(
            new InitiateAuthCommand({
              ClientId: clientId,
              AuthFlow: 'USER_PASSWORD_AUTH',
              AuthParameters: { USERNAME: email, PASSWORD: password },
            }),
          );
          return { idToken: signedIn.AuthenticationResult?.IdToken as string, organizationId };
        } finally {
          people.destroy();
        }
      },
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}

interface ProxyResult {
  statusCode: number;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
}

/** API Gateway (REST, Lambda proxy integrations, a REQUEST authorizer) as the template declares it. */
function serveApi(
  resources: Resources,
  names: ResourceNames,
  hostOf: (id: string) => FunctionHost,
  wiringErrors: string[],
  /** Sees every answer once it went out (the tests' check against the OpenAPI document: lib/local/openapi-check.ts). */
  observe?: (method: string, path: string, result: ProxyResult, body: Buffer) => void,
): Server {
  const methods = apiMethods(resources);
  const [restApiId] = ofType(resources, 'AWS::ApiGateway::RestApi').map(([id]) => id);
  const [stageId, stage] = ofType(resources, 'AWS::ApiGateway::Stage')[0];
  const stageName = String(stage.StageName);
  const apiArn = `arn:aws:execute-api:${SYNTHETIC_REGION}:${SYNTHETIC_ACCOUNT}:${names.ref(restApiId)}`;
  void stageId;
  const permissions = ofType(resources, 'AWS::Lambda::Permission').map(([, p]) => ({
    functionId: functionNamedBy(resources, p.FunctionName),
    principal: p.Principal,
    sourceArn: p.SourceArn === undefined ? '*' : String(resolveIntrinsics(p.SourceArn, names)),
  }));
  /** Whether API Gateway may invoke the function for `sourceArn` (else it answers 500, "Invalid permissions"). */
  const mayInvoke = (functionId: string, sourceArn: string) =>
    permissions.some(
      (p) =>
        p.functionId === functionId && p.principal === 'apigateway.amazonaws.com' && arnMatches(p.sourceArn, sourceArn),
    );
  const responses = new Map(
    ofType(resources, 'AWS::ApiGateway::GatewayResponse').map(([, p]) => [String(p.ResponseType), p]),
  );
  const gatewayResponse = (type: string, fallbackStatus: number, message: string): ProxyResult => {
    const p = responses.get(type) ?? responses.get(fallbackStatus >= 500 ? 'DEFAULT_5XX' : 'DEFAULT_4XX');
    const template = (p?.ResponseTemplates as Record<string, string> | undefined)?.['application/json'];
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const [key, value] of Object.entries((p?.ResponseParameters as Record<string, string> | undefined) ?? {})) {
      headers[key.replace(/^gatewayresponse\.header\./, '')] = value.replace(/^'|'$/g, '');
    }
    const body = template
      ? template.replace(/\$context\.error\.messageString/g, JSON.stringify(message))
      : JSON.stringify({ message });
    return { statusCode: Number(p?.StatusCode ?? fallbackStatus), headers, body };
  };
  const authorizers = new Map(ofType(resources, 'AWS::ApiGateway::Authorizer'));
  const cache = new Map<
    string,
    { until: number; result: { principalId?: string; policyDocument?: { Statement: Props[] }; context?: Props } }
  >();

  const dispatch = async (request: IncomingMessage, body: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const method = (request.method ?? 'GET').toUpperCase();
    const candidates = methods.filter((m) => m.pattern.test(url.pathname));
    const match = candidates.find((m) => m.httpMethod === method || m.httpMethod === 'ANY');
    // API Gateway answers a path or method it does not know with 403 MISSING_AUTHENTICATION_TOKEN.
    if (!match) return gatewayResponse('MISSING_AUTHENTICATION_TOKEN', 403, 'Missing Authentication Token');
    const values = match.pattern.exec(url.pathname) as RegExpExecArray;
    const decode = (value: string) => {
      try {
        return decodeURIComponent(value);
      } catch {
        return value; // a malformed escape reaches the function as sent
      }
    };
    const pathParameters = Object.fromEntries(match.parameterNames.map((n, i) => [n, decode(values[i + 1])]));
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined) continue;
      const list = Array.isArray(value) ? value : [value];
      headers[name] = list.join(',');
      multiValueHeaders[name] = list;
    }
    // Maps, then plain objects: a query key such as `valueOf` or `constructor` must not meet Object.prototype.
    const queryValues = new Map<string, string[]>();
    for (const [k, v] of url.searchParams) queryValues.set(k, [...(queryValues.get(k) ?? []), v]);
    const query: Record<string, string> = Object.fromEntries([...queryValues].map(([k, v]) => [k, v[v.length - 1]]));
    const multiQuery: Record<string, string[]> = Object.fromEntries(queryValues);
    const methodArn = `${apiArn}/${stageName}/${method}${url.pathname}`;
    const requestContext: Record<string, unknown> = {
      accountId: SYNTHETIC_ACCOUNT,
      apiId: names.ref(restApiId),
      httpMethod: method,
      path: `/${stageName}${url.pathname}`,
      protocol: 'HTTP/1.1',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: match.id,
      resourcePath: match.resourcePath,
      stage: stageName,
      identity: { sourceIp: request.socket.remoteAddress ?? '127.0.0.1' },
    };
    let authorizerContext: Props | null = null;
    if (match.authorizer) {
      const p = authorizers.get(match.authorizer);
      if (!p) throw new Error(`${match.id} names authorizer ${match.authorizer}, not in the template`);
      const identityHeader = String(p.IdentitySource)
        .replace(/^method\.request\.header\./, '')
        .toLowerCase();
      const identity = headers[identityHeader];
      if (!identity) return gatewayResponse('UNAUTHORIZED', 401, 'Unauthorized');
      const authorizerFunction = functionNamedBy(resources, p.AuthorizerUri) as string;
      if (!mayInvoke(authorizerFunction, `${apiArn}/authorizers/${names.ref(match.authorizer)}`)) {
        wiringErrors.push(`API Gateway may not invoke the authorizer ${authorizerFunction}`);
        return gatewayResponse('AUTHORIZER_CONFIGURATION_ERROR', 500, 'Authorizer configuration error');
      }
      const cacheKey = `${match.authorizer}\n${identity}`;
      let cached = cache.get(cacheKey);
      if (!cached || cached.until < Date.now()) {
        try {
          const result = await hostOf(authorizerFunction).invoke<NonNullable<typeof cached>['result']>({
            type: 'REQUEST',
            methodArn,
            resource: match.resourcePath,
            path: url.pathname,
            httpMethod: method,
            headers,
            multiValueHeaders,
            queryStringParameters: query,
            multiValueQueryStringParameters: multiQuery,
            pathParameters,
            stageVariables: {},
            requestContext,
          });
          cached = { until: Date.now() + Number(p.AuthorizerResultTtlInSeconds ?? 300) * 1000, result };
          if (cached.until > Date.now()) cache.set(cacheKey, cached);
        } catch (error) {
          if (/Unauthorized/.test(String(error))) return gatewayResponse('UNAUTHORIZED', 401, 'Unauthorized');
          return gatewayResponse('AUTHORIZER_FAILURE', 500, 'Authorizer failure');
        }
      }
      const statements = cached.result.policyDocument?.Statement ?? [];
      const covers = (s: Props) =>
        ([] as Json[]).concat(s.Resource ?? []).some((r) => arnMatches(String(r), methodArn));
      const allowed =
        statements.some((s) => s.Effect === 'Allow' && covers(s)) &&
        !statements.some((s) => s.Effect === 'Deny' && covers(s));
      if (!allowed) return gatewayResponse('ACCESS_DENIED', 403, 'User is not authorized to access this resource');
      authorizerContext = { ...(cached.result.context ?? {}), principalId: cached.result.principalId ?? null };
    }
    if (
      !mayInvoke(match.functionId, `${apiArn}/${stageName}/${method}${match.resourcePath.replace(/\{[^}]+\}/g, '*')}`)
    ) {
      wiringErrors.push(`API Gateway may not invoke ${match.functionId} for ${method} ${match.resourcePath}`);
      return gatewayResponse('DEFAULT_5XX', 500, 'Internal server error');
    }
    const event = {
      resource: match.resourcePath,
      path: url.pathname,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: match.parameterNames.length ? pathParameters : null,
      stageVariables: null,
      body: body.length ? body.toString('utf8') : null,
      isBase64Encoded: false,
      requestContext: { ...requestContext, authorizer: authorizerContext },
    };
    try {
      const result = await hostOf(match.functionId).invoke<ProxyResult>(event);
      if (!result || typeof result.statusCode !== 'number') {
        return gatewayResponse('DEFAULT_5XX', 502, 'Malformed Lambda proxy response');
      }
      return result;
    } catch {
      return gatewayResponse('DEFAULT_5XX', 502, 'Internal server error');
    }
  };

  return createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      dispatch(request, Buffer.concat(chunks)).then(
        (result) => {
          const body = result.isBase64Encoded
            ? Buffer.from(result.body ?? '', 'base64')
            : Buffer.from(result.body ?? '');
          response.writeHead(result.statusCode, { ...(result.headers ?? {}), 'content-length': body.length });
          response.end(body);
          observe?.(
            (request.method ?? 'GET').toUpperCase(),
            new URL(request.url ?? '/', 'http://localhost').pathname,
            result,
            body,
          );
        },
        (error: unknown) => {
          wiringErrors.push(String(error));
          response.writeHead(500).end();
        },
      );
    });
  });
}
