/**
 * The synthesized stack, checked property by property (no snapshot). The app is built the way `cdk synth` builds it
 * (bin/app.ts with cdk.json's context and the cdk-nag plugin) and synthesized once: bundling dominates the run time.
 * The route functions are in nested stacks (one per area: lib/constructs/platform-api.ts); the checks read the
 * deployed whole, the nested templates merged into the stack's with each parameter replaced by the value it passes
 * (test/helpers/synth.ts, `deployedTemplate`), so a route function's grant names the table itself.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { createApp, DEFAULT_MODEL, readConfig } from '../../bin/app';
import type { AgentPlatformStack } from '../../lib/agent-platform-stack';
import { GATEWAY_ERROR_TEMPLATES } from '../../lib/constructs/platform-api';
import {
  type Access,
  RESOURCE_ENV,
  ROUTES,
  routeById,
  SINGLE_WRITE_OF,
  type TableAccess,
  type TableName,
  WORKERS,
} from '../../lib/routes';
import { type Json, ResourceNames, resolveIntrinsics } from '../../lib/stack-check/cloud-assembly';
import { TABLES } from '../../lib/tables';
import { deployedTemplate, synthesizeUnbundled } from '../helpers/synth';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};
const TABLE_NAMES = Object.keys(TABLES) as TableName[];
/** cdk.json's stage is `dev`: its metrics go to their own namespace. */
const POWERTOOLS_SETTINGS = {
  POWERTOOLS_SERVICE_NAME: 'agent-platform',
  POWERTOOLS_METRICS_NAMESPACE: 'AgentPlatform/dev',
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_LOGGER_SAMPLE_RATE: '0.01',
};
const DYNAMODB_WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];

let outdir: string;
let stack: AgentPlatformStack;
let template: Template;
let resources: Resources;
let validationReport: { pluginReports: { pluginName: string; violations: unknown[] }[] } | undefined;

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'infra-test-'));
  const built = createApp({ context: { ...cdkJson.context }, outdir });
  stack = built.stack;
  // Under jest (in-memory app mode) a failing validation plugin makes synth() throw with the whole cdk-nag report
  // as the message, so an unacknowledged finding fails every test here, loudly.
  const assembly = built.app.synth();
  validationReport = JSON.parse(fs.readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8'));
  template = deployedTemplate(assembly.directory);
  resources = template.toJSON().Resources as Resources;
});

afterAll(() => {
  fs.rmSync(outdir, { recursive: true, force: true });
});

/** Every statement of the function's role policies, with the table / bucket / queue logical ids it names. */
function statementsOf(functionId: string): Statement[] {
  const fn = functionId === 'Authorizer' ? stack.api.authorizerFunction : stack.api.functions[functionId];
  const roleId = logicalId(fn.role as IConstruct);
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

function actionsOn(statements: Statement[], resourceLogicalId: string): string[] {
  return statements
    .filter((s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(`"${resourceLogicalId}"`))
    .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
}

function functionProperties(routeId: string): Record<string, unknown> {
  return resources[logicalId(stack.api.functions[routeId])].Properties;
}

describe('cdk-nag (AwsSolutions)', () => {
  test('synthesis reports no unacknowledged finding, error or warning', () => {
    // CDK leaves a plugin without violations out of the report, so no report at all is the clean outcome.
    expect(validationReport?.pluginReports.flatMap((r) => r.violations)).toEqual([]);
    // The same checks run directly over the synthesized tree, reading the acknowledgements the same way.
    const direct = new AwsSolutionsChecks().validateScope(stack.node.root);
    expect(direct.violations).toEqual([]);
    expect(direct.success).toBe(true);
  });

  test('an unacknowledged finding makes synthesis fail, so the check above is not vacuous', () => {
    const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), 'nag-probe-')) });
    const probe = new Stack(app, 'Probe');
    new Bucket(probe, 'PlainBucket');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).toThrow(/AwsSolutions-S10/);
    fs.rmSync(app.outdir, { recursive: true, force: true });
  });
});

describe('functions', () => {
  test('there is one nodejs22.x function per route (a dashboard mirror shares its own), the authorizer and one per worker', () => {
    const nodeFunctions = Object.values(resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Runtime === 'nodejs22.x',
    );
    const owning = ROUTES.filter((r) => r.functionOf === undefined);
    expect(nodeFunctions).toHaveLength(owning.length + 1 + Object.keys(WORKERS).length);
    expect(Object.keys(stack.api.functions).sort()).toEqual(ROUTES.map((r) => r.id).sort());
    const mirrors = ROUTES.filter((r) => r.functionOf !== undefined);
    expect(mirrors.length).toBeGreaterThan(0);
    for (const mirror of mirrors) {
      const own = ROUTES.find((r) => r.id === mirror.functionOf);
      // The same code and the same grants: the customer route's function, its handler and its access.
      expect([own?.handler, own?.access]).toEqual([mirror.handler, mirror.access]);
      expect(stack.api.functions[mirror.id]).toBe(stack.api.functions[mirror.functionOf as string]);
    }
  });

  test.each(ROUTES.map((r) => [r.id]))(
    '%s runs on arm64 nodejs22.x with 512 MB, 29 s, tracing and its own logs',
    (id) => {
      const props = functionProperties(id);
      expect(props).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 512,
        Timeout: 29,
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogGroup: { Ref: logicalId(stack.api.functions[id].functionLogGroup) } },
      });
      expect(props).not.toHaveProperty('FunctionName');
    },
  );

  test("every function, workers and authorizer included, is traced and has the stage's Powertools settings", () => {
    const nodeFunctions = Object.values(resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Runtime === 'nodejs22.x',
    );
    expect(nodeFunctions.length).toBeGreaterThan(ROUTES.filter((r) => r.functionOf === undefined).length);
    for (const fn of nodeFunctions) {
      expect(fn.Properties).toMatchObject({
        TracingConfig: { Mode: 'Active' },
        Environment: { Variables: POWERTOOLS_SETTINGS },
      });
    }
  });

  test('the route functions and the authorizer write to one log group, in the parent stack', () => {
    const shared = logicalId(stack.api.functions.Health.functionLogGroup);
    for (const route of ROUTES) expect(logicalId(stack.api.functions[route.id].functionLogGroup)).toBe(shared);
    expect(logicalId(stack.api.authorizerFunction.functionLogGroup)).toBe(shared);
    expect(Stack.of(stack.api.functions.Health.functionLogGroup)).toBe(stack);
    // The workers keep one each (their logs are few and long).
    const logGroups = Object.values(resources).filter((r) => r.Type === 'AWS::Logs::LogGroup').length;
    const counts = [stack, ...Object.values(stack.api.areaStacks)].map(
      (s) => `${s.node.id} ${Object.keys(Template.fromStack(s).toJSON().Resources).length}`,
    );
    console.log(`[stack] resources of CloudFormation's 500 a template: ${counts.join(', ')} (${logGroups} log groups)`);
  });

  test('each route function, its role, its policy and its API permission are in the nested stack of its area', () => {
    for (const route of ROUTES) {
      const fn = stack.api.functions[route.id];
      const area = stack.api.areaStacks[route.area];
      expect([route.id, Stack.of(fn)]).toEqual([route.id, area]);
      expect(Stack.of(fn.role as IConstruct)).toBe(area);
    }
    for (const area of Object.values(stack.api.areaStacks)) {
      const nested = Template.fromStack(area);
      const functions = Object.keys(nested.findResources('AWS::Lambda::Function')).length;
      // A function, its role, the role's default policy and API Gateway's permission to invoke it: nothing else.
      expect(Object.keys(nested.findResources('AWS::IAM::Role'))).toHaveLength(functions);
      expect(Object.keys(nested.findResources('AWS::IAM::Policy'))).toHaveLength(functions);
      expect(Object.keys(nested.findResources('AWS::Lambda::Permission'))).toHaveLength(functions);
      expect(Object.keys(nested.toJSON().Resources)).toHaveLength(4 * functions);
      nested.allResourcesProperties('AWS::Lambda::Permission', {
        Principal: 'apigateway.amazonaws.com',
        Action: 'lambda:InvokeFunction',
      });
    }
    // The parent keeps the authorizer's function and no route's.
    const parentFunctions = Object.keys(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
    expect(parentFunctions).toContain(logicalId(stack.api.authorizerFunction));
    for (const route of ROUTES) expect(parentFunctions).not.toContain(logicalId(stack.api.functions[route.id]));
  });

  test('function log groups keep logs for one month', () => {
    const logGroupId = logicalId(stack.api.functions.Health.functionLogGroup);
    expect(resources[logGroupId].Properties).toMatchObject({ RetentionInDays: 30 });
    expect(resources[logGroupId].Properties).not.toHaveProperty('LogGroupName');
  });

  test.each(ROUTES.map((r) => [r.id]))('%s receives exactly the resource variables its route names', (id) => {
    const route = routeById(id);
    const variables = (functionProperties(id).Environment as { Variables: Record<string, unknown> }).Variables;
    const expected = [
      ...Object.keys(route.access.tables ?? {}).map((t) => RESOURCE_ENV.tables[t as TableName]),
      ...(route.access.documentsBucket || route.access.attachments || route.access.knowledgeIndex === 'listChunks'
        ? [RESOURCE_ENV.documentsBucket]
        : []),
      ...(route.access.processingQueue ? [RESOURCE_ENV.processingQueue] : []),
      ...(route.access.flowRunQueue ? [RESOURCE_ENV.flowRunQueue] : []),
      ...(route.access.knowledgeIndex === 'retrieve' ? ['BEDROCK_KNOWLEDGE_BASES'] : []),
      // The deployment's Bedrock models (the default model in this synth), where definitions are checked; the
      // default, where a model is called.
      ...(route.access.model === 'list' ? ['BEDROCK_MODELS'] : []),
      ...(route.access.model === 'invoke' ? ['BEDROCK_GENERATE_MODEL_ID'] : []),
      // The registered agent code functions (none in this synth: the variable empty), where definitions are checked.
      ...(route.access.agentCode === 'list' ? ['AGENT_CODE_FUNCTIONS'] : []),
      ...(route.access.browserTask ? ['BROWSER_DRIVER', RESOURCE_ENV.browserTask] : []),
      ...(route.access.people && route.access.people !== 'signUpMode'
        ? ['COGNITO_CLIENT_ID', 'COGNITO_USER_POOL_ID']
        : []),
      ...(route.access.people === 'signUp' || route.access.people === 'signUpMode' ? ['SIGNUP_MODE'] : []),
    ].sort();
    const settings = {
      NODE_OPTIONS: '--enable-source-maps',
      ...POWERTOOLS_SETTINGS,
      UPLOAD_URL_TTL_SECONDS: '900',
      UPLOAD_SESSION_TTL_SECONDS: '3600',
      MAX_FILE_BYTES: String(50 * 1024 * 1024),
      ZIP_MAX_ARCHIVE_BYTES: String(256 * 1024 * 1024),
    };
    const resourceVariables = Object.keys(variables).filter((name) => !(name in settings));
    expect(resourceVariables.sort()).toEqual(expected);
    expect(variables).toMatchObject(settings);
    for (const table of Object.keys(route.access.tables ?? {}) as TableName[]) {
      expect(variables[RESOURCE_ENV.tables[table]]).toEqual({ Ref: logicalId(stack.data.tables[table]) });
    }
  });
});

describe("people's accounts", () => {
  const poolId = () => logicalId(stack.people.userPool);

  test.each(ROUTES.map((r) => [r.id]))('%s may call exactly the user pool actions its route names', (id) => {
    const actions = actionsOn(statementsOf(id), poolId()).sort();
    if (routeById(id).access.people === 'manage') {
      // An account for an invited address; no function deletes anyone's account.
      expect(actions).toEqual(['cognito-idp:AdminCreateUser']);
    } else expect(actions).toEqual([]);
  });

  test('the authorizer verifies ID tokens of the pool and its console client, and may call nothing of it', () => {
    const variables = (
      resources[logicalId(stack.api.authorizerFunction)].Properties.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;
    expect(variables.COGNITO_ISSUER).toEqual({ 'Fn::GetAtt': [poolId(), 'ProviderURL'] });
    expect(variables.COGNITO_CLIENT_ID).toEqual({ Ref: logicalId(stack.people.client) });
    expect(actionsOn(statementsOf('Authorizer'), poolId())).toEqual([]);
  });

  test('sign-up is by invitation unless the deployer opens it; SignUp learns which', () => {
    expect(resources[poolId()].Properties).toMatchObject({
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ['email'],
      UsernameConfiguration: { CaseSensitive: false },
      Policies: {
        PasswordPolicy: {
          MinimumLength: 8,
          RequireLowercase: true,
          RequireUppercase: true,
          RequireNumbers: true,
          RequireSymbols: true,
        },
      },
    });
    const signUpVariables = (functionProperties('SignUp').Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(signUpVariables.SIGNUP_MODE).toBe('invite');
    const client = resources[logicalId(stack.people.client)].Properties as {
      GenerateSecret: boolean;
      ExplicitAuthFlows: string[];
      WriteAttributes: string[];
    };
    expect(client.GenerateSecret).toBe(false);
    // People cannot change their own address: only their name is theirs to write.
    expect(client.WriteAttributes).toEqual(['name']);
    expect([...client.ExplicitAuthFlows].sort()).toEqual([
      'ALLOW_REFRESH_TOKEN_AUTH',
      'ALLOW_USER_PASSWORD_AUTH',
      'ALLOW_USER_SRP_AUTH',
    ]);
  });
});

describe('least privilege', () => {
  test('GetDocument may read the documents table but not put items into it', () => {
    const onDocuments = actionsOn(statementsOf('GetDocument'), logicalId(stack.data.tables.documents));
    expect(onDocuments).toContain('dynamodb:GetItem');
    expect(onDocuments).not.toContain('dynamodb:PutItem');
  });

  test.each(ROUTES.map((r) => [r.id]))('%s can write exactly the tables its route marks readWrite', (id) => {
    const statements = statementsOf(id);
    const access = (routeById(id).access.tables ?? {}) as Partial<Record<TableName, Access>>;
    for (const table of TABLE_NAMES) {
      const actions = actionsOn(statements, logicalId(stack.data.tables[table]));
      if (access[table] === undefined) expect(actions).toEqual([]);
      else if ((access[table] as string) === 'update') {
        // The rate limit counters: UpdateItem, and nothing else (no read, no other write).
        expect(actions).toEqual(['dynamodb:UpdateItem']);
        continue;
      } else expect(actions).toContain('dynamodb:Query');
      for (const write of DYNAMODB_WRITES) {
        const single = SINGLE_WRITE_OF[access[table] as TableAccess] === write;
        if (access[table] === 'readWrite' || single) expect(actions).toContain(write);
        else expect(actions).not.toContain(write);
      }
    }
  });

  test.each(ROUTES.map((r) => [r.id]))('%s touches the bucket and the queue only as its route says', (id) => {
    const route = routeById(id);
    const statements = statementsOf(id);
    // The attachments/ prefix grant has its own test (test/infra/attachments.test.ts), the chunk manifests' below.
    const bucketActions = actionsOn(
      statements.filter(
        (s) => !JSON.stringify(s.Resource).includes('/attachments/*') && !isChunkManifestGrant(s, route.id),
      ),
      logicalId(stack.storage.bucket),
    );
    const queueActions = actionsOn(statements, logicalId(stack.storage.queue));
    if (route.access.documentsBucket === undefined) expect(bucketActions).toEqual([]);
    else expect(bucketActions).toContain('s3:GetObject*');
    const writes = route.access.documentsBucket === 'readWrite';
    expect(bucketActions.includes('s3:PutObject')).toBe(writes);
    expect(bucketActions.includes('s3:DeleteObject*')).toBe(writes);
    expect(queueActions.includes('sqs:SendMessage')).toBe(route.access.processingQueue === 'send');
    if (!route.access.processingQueue) expect(queueActions).toEqual([]);
  });

  test('the authorizer updates tokens (last use), puts memberships and deletes members rows (their move), and nothing else', () => {
    const statements = statementsOf('Authorizer');
    const onlyWrite: Partial<Record<TableName, string>> = {
      tokens: 'dynamodb:UpdateItem',
      memberships: 'dynamodb:PutItem',
      members: 'dynamodb:DeleteItem',
    };
    for (const table of TABLE_NAMES) {
      const actions = actionsOn(statements, logicalId(stack.data.tables[table]));
      const write = onlyWrite[table];
      if (write) {
        expect(actions).toContain('dynamodb:GetItem');
        expect(actions).toContain(write);
        for (const other of DYNAMODB_WRITES.filter((action) => action !== write)) expect(actions).not.toContain(other);
      } else {
        expect(actions).toEqual([]);
      }
    }
    expect(actionsOn(statements, logicalId(stack.storage.bucket))).toEqual([]);
  });
});

describe('data tables', () => {
  test('every table is on-demand, recoverable, encrypted, retained and has no hard-coded name', () => {
    const tables = Object.values(resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables).toHaveLength(TABLE_NAMES.length);
    for (const table of tables) {
      expect(table.Properties).not.toHaveProperty('TableName');
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      });
      expect(table.DeletionPolicy).toBe('Retain');
    }
  });

  test.each(TABLE_NAMES.map((t) => [t]))('the %s table has the key schema of lib/tables.ts', (name) => {
    const schema = TABLES[name];
    const props = resources[logicalId(stack.data.tables[name])].Properties;
    expect(props.KeySchema).toEqual([
      { AttributeName: schema.partitionKey, KeyType: 'HASH' },
      ...(schema.sortKey ? [{ AttributeName: schema.sortKey, KeyType: 'RANGE' }] : []),
    ]);
    if (schema.timeToLiveAttribute) {
      expect(props.TimeToLiveSpecification).toEqual({ AttributeName: schema.timeToLiveAttribute, Enabled: true });
    } else {
      expect(props).not.toHaveProperty('TimeToLiveSpecification');
    }
  });
});

describe('document storage', () => {
  test('the documents bucket blocks public access, encrypts, logs access and allows pre-signed PUTs from browsers', () => {
    const props = resources[logicalId(stack.storage.bucket)].Properties;
    expect(props).not.toHaveProperty('BucketName');
    expect(props).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: logicalId(stack.storage.accessLogsBucket) } },
      CorsConfiguration: {
        CorsRules: [{ AllowedMethods: ['PUT'], AllowedOrigins: ['*'], AllowedHeaders: ['*'] }],
      },
    });
  });

  test('the documents bucket denies requests without TLS', () => {
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logicalId(stack.storage.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test('the processing queue hands a message to the DLQ after 5 receives and outlasts any function timeout 6 times', () => {
    const props = resources[logicalId(stack.storage.queue)].Properties;
    expect(props).toMatchObject({
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(stack.storage.deadLetterQueue), 'Arn'] },
        maxReceiveCount: 5,
      },
    });
    // The flow runner (15 minutes) consumes a queue of its own: test/infra/flow-runner.test.ts. CDK's deploy-time
    // handlers (Python: the console's BucketDeployment, 15 minutes) consume no queue.
    const flowRunnerId = logicalId(stack.flowRunner.function);
    const longestTimeout = Math.max(
      ...Object.entries(resources)
        .filter(([id, r]) => r.Type === 'AWS::Lambda::Function' && id !== flowRunnerId)
        .filter(([, r]) => String(r.Properties.Runtime).startsWith('nodejs'))
        .map(([, r]) => Number(r.Properties.Timeout ?? 3)),
    );
    expect(props.VisibilityTimeout).toBe(6 * 360);
    expect(props.VisibilityTimeout as number).toBeGreaterThanOrEqual(6 * longestTimeout);
  });

  test.each([
    ['processing queue', () => stack.storage.queue],
    ['dead-letter queue', () => stack.storage.deadLetterQueue],
  ])('the %s is encrypted and denies requests without TLS', (_name, queue) => {
    expect(resources[logicalId(queue())].Properties).toMatchObject({ SqsManagedSseEnabled: true });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: logicalId(queue()) }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  test('S3 sends ObjectCreated events of the documents bucket to the processing queue', () => {
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: logicalId(stack.storage.bucket) },
      NotificationConfiguration: {
        QueueConfigurations: [
          {
            Events: ['s3:ObjectCreated:*'],
            QueueArn: { 'Fn::GetAtt': [logicalId(stack.storage.queue), 'Arn'] },
          },
        ],
      },
    });
  });
});

describe('API', () => {
  test('the authorizer is a REQUEST authorizer on the Authorization header, cached at most 60 s', () => {
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: 60,
    });
  });

  test.each(ROUTES.map((r) => [r.id, r.method, r.path]))('%s is served at %s %s', (id, method) => {
    const props = resources[logicalId(stack.api.methods[id])].Properties;
    expect(props).toMatchObject({
      HttpMethod: method,
      Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
    });
    expect(JSON.stringify(props.Integration)).toContain(logicalId(stack.api.functions[id]));
  });

  test('the resource tree has every segment of every route path', () => {
    for (const route of ROUTES) {
      expect(stack.api.methods[route.id].resource.path).toBe(route.path);
    }
  });

  test('every route with a scope uses the custom authorizer, and the public routes use none', () => {
    const authorizerId = logicalId(stack.api.authorizer);
    for (const route of ROUTES) {
      const props = resources[logicalId(stack.api.methods[route.id])].Properties;
      if (route.scope === null) {
        expect({ route: route.id, type: props.AuthorizationType }).toEqual({ route: route.id, type: 'NONE' });
        expect(props).not.toHaveProperty('AuthorizerId');
      } else {
        expect({ route: route.id, type: props.AuthorizationType }).toEqual({ route: route.id, type: 'CUSTOM' });
        expect(props.AuthorizerId).toEqual({ Ref: authorizerId });
      }
    }
    expect(routeById('Health').scope).toBeNull();
  });

  test('the stage traces, logs access as JSON and throttles', () => {
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('^\\{"requestId"') },
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingBurstLimit: 1000,
          ThrottlingRateLimit: 500,
          DataTraceEnabled: false,
          LoggingLevel: 'ERROR',
        }),
      ]),
    });
    template.resourceCountIs('AWS::ApiGateway::Account', 1);
  });

  test('has no CORS preflight by default: the console is same-origin (each setting: test/infra/cors.test.ts)', () => {
    expect(stack.api.methods.UploadLink.resource.node.tryFindChild('OPTIONS')).toBeUndefined();
    expect(Object.values(resources).filter((r) => r.Properties.HttpMethod === 'OPTIONS')).toEqual([]);
  });

  test.each([
    ['UNAUTHORIZED', 'with 401', '401', 'UNAUTHORIZED', 'A valid bearer token is required'],
    ['ACCESS_DENIED', 'with 403', '403', 'FORBIDDEN', 'The token is not allowed to call this route'],
    ['DEFAULT_5XX', 'with its own 5xx status', undefined, 'INTERNAL_ERROR', 'Internal error'],
    ['MISSING_AUTHENTICATION_TOKEN', 'with 404', '404', 'ROUTE_NOT_FOUND', 'No route for this method and path'],
  ])('the %s gateway response answers %s in the API error shape', (type, _label, status, code, message) => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: type,
      StatusCode: status ?? Match.absent(),
      ResponseTemplates: { 'application/json': Match.anyValue() },
    });
    const response = Object.values(resources).find(
      (r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties.ResponseType === type,
    );
    if (!response) throw new Error(`no ${type} gateway response`);
    const body = (response.Properties.ResponseTemplates as Record<string, string>)['application/json'];
    expect(JSON.parse(body)).toEqual({ success: false, error: { code, message, details: [] } });
  });

  test("the DEFAULT_4XX gateway response carries API Gateway's own message in the error shape", () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'DEFAULT_4XX',
      ResponseTemplates: { 'application/json': GATEWAY_ERROR_TEMPLATES.DEFAULT_4XX },
    });
    // API Gateway substitutes $context.error.messageString with a quoted JSON string.
    const rendered = GATEWAY_ERROR_TEMPLATES.DEFAULT_4XX.replace(
      '$context.error.messageString',
      '"Missing Authentication Token"',
    );
    expect(JSON.parse(rendered)).toEqual({
      success: false,
      error: { code: 'BAD_REQUEST', message: 'Missing Authentication Token', details: [] },
    });
  });

  test('the stack outputs the API URL without a trailing slash and the resource names', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    const apiUrl = outputs.ApiUrl.Value as { 'Fn::Join': [string, unknown[]] };
    const parts = apiUrl['Fn::Join'][1];
    expect(parts[0]).toBe('https://');
    expect(String(parts.at(-1)).endsWith('/')).toBe(false);
    expect(outputs.DocumentsBucketName.Value).toEqual({ Ref: logicalId(stack.storage.bucket) });
    expect(outputs.ProcessingQueueUrl.Value).toEqual({ Ref: logicalId(stack.storage.queue) });
    const tableOutputs = TABLE_NAMES.map((name) => `${name.charAt(0).toUpperCase()}${name.slice(1)}TableName`);
    for (const [i, name] of TABLE_NAMES.entries()) {
      expect(outputs[tableOutputs[i]].Value).toEqual({ Ref: logicalId(stack.data.tables[name]) });
    }
    // No engine endpoint leaks into the outputs (a table's name may say Endpoint: webhookEndpoints).
    expect(Object.keys(outputs).filter((k) => k.includes('Endpoint') && !tableOutputs.includes(k))).toEqual([]);
  });
});

describe('document processing', () => {
  const processorId = () => stack.getLogicalId(stack.processing.processor.node.defaultChild as CfnElement);

  test('the processor consumes the processing queue with partial batch responses', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: processorId() },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  test("the queue's visibility timeout exceeds the processor's timeout", () => {
    const processor = resources[processorId()].Properties;
    const queue = resources[stack.getLogicalId(stack.storage.queue.node.defaultChild as CfnElement)].Properties;
    expect(queue.VisibilityTimeout as number).toBeGreaterThan(processor.Timeout as number);
  });

  test('a batch of files that all run into the extraction time limit ends inside the processor timeout', () => {
    const processor = resources[processorId()].Properties;
    const { Variables: environment } = processor.Environment as { Variables: Record<string, string> };
    const mapping = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Lambda::EventSourceMapping' &&
        JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ Ref: processorId() }),
    );
    const batchSize = Number(mapping?.Properties.BatchSize);
    const extractionSeconds = Number(environment.EXTRACTION_TIMEOUT_SECONDS);
    expect({ batchSize, extractionSeconds, memory: environment.EXTRACTION_MEMORY_MB }).toEqual({
      batchSize: 5,
      extractionSeconds: 60,
      memory: '1024',
    });
    // Extractions run one at a time: all of them at the limit, plus a minute for the rest of the work.
    expect(processor.Timeout as number).toBeGreaterThanOrEqual(batchSize * extractionSeconds + 60);
    // The extraction child's memory fits in the function's with room for the handler's own.
    expect(Number(environment.EXTRACTION_MEMORY_MB)).toBeLessThanOrEqual((processor.MemorySize as number) / 2);
  });

  test('the processor has temporary storage for the largest archive it reads from a copy', () => {
    const processor = resources[processorId()].Properties;
    const { Variables: environment } = processor.Environment as { Variables: Record<string, string> };
    const archiveMiB = Number(environment.ZIP_MAX_ARCHIVE_BYTES) / 1024 / 1024;
    expect((processor.EphemeralStorage as { Size: number }).Size).toBeGreaterThanOrEqual(archiveMiB + 256);
  });

  test('objects of uploads never completed expire by their pending-upload tag', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Id: 'AbandonedUploads',
            Status: 'Enabled',
            ExpirationInDays: 1,
            TagFilters: [{ Key: 'upload', Value: 'pending' }],
          }),
        ]),
      },
    });
  });

  test('the watchdog may read upload sessions and delete what abandoned uploads wrote', () => {
    const watchdogId = stack.getLogicalId(stack.processing.watchdog.node.defaultChild as CfnElement);
    const { Variables: environment } = resources[watchdogId].Properties.Environment as {
      Variables: Record<string, unknown>;
    };
    expect(Object.keys(environment)).toEqual(expect.arrayContaining(['UPLOADS_TABLE', 'DOCUMENTS_BUCKET']));
  });

  test('the processor knows the Bedrock knowledge base of each environment', () => {
    const { Variables: environment } = resources[processorId()].Properties.Environment as {
      Variables: Record<string, unknown>;
    };
    expect(Object.keys(environment)).toEqual(
      expect.arrayContaining(['BEDROCK_KNOWLEDGE_BASES', 'DOCUMENTS_TABLE', 'ZIP_JOBS_TABLE']),
    );
  });

  test('the watchdog runs on a schedule', () => {
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
  });

  test('the watchdog sees stuck documents and stuck ZIP imports', () => {
    const watchdogId = stack.getLogicalId(stack.processing.watchdog.node.defaultChild as CfnElement);
    const { Variables: environment } = resources[watchdogId].Properties.Environment as {
      Variables: Record<string, unknown>;
    };
    expect(Object.keys(environment)).toEqual(expect.arrayContaining(['DOCUMENTS_TABLE', 'ZIP_JOBS_TABLE']));
  });
});

/** The chunk view's grant on the chunk manifests (`*\/_chunks/*`, and ListBucket for their 404): its routes only. */
function isChunkManifestGrant(statement: Statement, routeId: string): boolean {
  if (routeById(routeId).access.knowledgeIndex !== 'listChunks') return false;
  const resource = JSON.stringify(statement.Resource);
  return (
    (statement.Action === 's3:GetObject' && resource.includes('/*/_chunks/*')) ||
    (statement.Action === 's3:ListBucket' && !resource.includes('/*'))
  );
}

describe('chunk view', () => {
  test("the chunk routes may read the chunk manifests of the documents bucket, not the documents' files", () => {
    const listing = ROUTES.filter((route) => route.access.knowledgeIndex === 'listChunks');
    expect(listing.map((route) => route.id).sort()).toEqual(['DashboardListDocumentChunks', 'ListDocumentChunks']);
    const statements = statementsOf('ListDocumentChunks').filter((s) =>
      ([] as string[]).concat(s.Action as string).some((a) => a.startsWith('s3:')),
    );
    expect(statements.map((s) => s.Action).sort()).toEqual(['s3:GetObject', 's3:ListBucket']);
    const get = statements.find((s) => s.Action === 's3:GetObject');
    expect(JSON.stringify(get?.Resource)).toContain('/*/_chunks/*');
    expect(JSON.stringify(get?.Resource)).toContain(logicalId(stack.storage.bucket));
  });
});

describe('retrieval', () => {
  test('only routes that retrieve may call Bedrock Retrieve', () => {
    for (const route of ROUTES) {
      const statements = statementsOf(route.id).filter((s) =>
        ([] as string[]).concat(s.Action).some((a) => a.startsWith('bedrock:')),
      );
      const actions = statements
        .flatMap((s) => ([] as string[]).concat(s.Action))
        .filter((action) => action !== 'bedrock:InvokeModel')
        .sort();
      expect([route.id, actions]).toEqual([
        route.id,
        route.access.knowledgeIndex === 'retrieve' ? ['bedrock:Retrieve', 'bedrock:RetrieveAndGenerate'] : [],
      ]);
    }
  });
});

describe('generate model', () => {
  test('without model context, generate and the flows call the default model, through its global inference profile', () => {
    const generate = statementsOf('GenerateFromKnowledgeBase').filter((s) => s.Action === 'bedrock:InvokeModel');
    expect(JSON.stringify(generate)).toContain(`inference-profile/${DEFAULT_MODEL}`);
    expect(JSON.stringify(generate)).toContain(`foundation-model/${DEFAULT_MODEL.replace(/^global\./, '')}`);
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('models=offline'))).toEqual([]);
  });

  test('models=offline: no function may invoke a model, and synth warns that no language model answers', () => {
    const { stack: offline } = createApp({
      context: { ...cdkJson.context, models: 'offline', 'aws:cdk:bundling-stacks': [] },
    });
    // Function policies only: the knowledge bases' service roles invoke their embedding model whatever the models.
    const invoking = [offline, ...Object.values(offline.api.areaStacks)]
      .flatMap((s) => Object.entries(Template.fromStack(s).findResources('AWS::IAM::Policy')))
      .filter(([, policy]) => JSON.stringify(policy).includes('bedrock:InvokeModel'))
      .map(([id]) => id);
    expect(invoking).toEqual([]);
    const warnings = Annotations.fromStack(offline).findWarning('*', Match.stringLikeRegexp('models=offline'));
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0].entry.data)).toContain('no language model is called');
  });

  test('with generateModelId, the generate function may invoke exactly that model', () => {
    const { stack: withModel } = createApp({
      context: { ...cdkJson.context, generateModelId: 'amazon.nova-lite-v1:0' },
    });
    // The functions that may invoke it are route functions: every nested stack's template, and the parent's.
    const generate = withModel.api.functions.GenerateFromKnowledgeBase;
    expect(Stack.of(generate)).toBe(withModel.api.areaStacks.knowledge);
    const invoking = [withModel, ...Object.values(withModel.api.areaStacks)]
      .flatMap((s) => Object.entries(Template.fromStack(s).toJSON().Resources as Resources))
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties).includes('bedrock:InvokeModel'));
    const generateRole = Stack.of(generate).getLogicalId(generate.role?.node.defaultChild as CfnElement);
    const rolesAllowed = invoking.map(([, r]) => JSON.stringify(r.Properties.Roles));
    expect(rolesAllowed.filter((roles) => roles.includes(generateRole))).toHaveLength(1);
    expect(JSON.stringify(invoking)).toContain('foundation-model/amazon.nova-lite-v1:0');
  });

  test('with a models list, each flow function may invoke exactly those, in the form Bedrock checks each', () => {
    const models = [
      'amazon.nova-lite-v1:0',
      'eu.anthropic.claude-3-7-sonnet-20250219-v1:0',
      'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
    ];
    // Under jest an unacknowledged cdk-nag finding throws at synth: the global profile's `*` Region is acknowledged.
    const synth = synthesizeUnbundled({ models: models.join(',') });
    try {
      expect(synth.violations).toEqual([]);
      const webhook = synth.stack.api.functions.InvokeWebhook;
      const role = Stack.of(webhook).getLogicalId(webhook.role?.node.defaultChild as CfnElement);
      const statements = Object.values(Template.fromStack(Stack.of(webhook)).toJSON().Resources as Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes(`"${role}"`))
        .flatMap(
          (r) => (r.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
        )
        .filter((s) => s.Action === 'bedrock:InvokeModel');
      expect(statements).toHaveLength(1);
      // The ARNs as a deploy in us-east-1, account 000000000000, resolves them (the stack-check's resolver).
      const names = new ResourceNames({ Resources: {} });
      const arns = (statements[0].Resource as Json[]).map((arn) => resolveIntrinsics(arn, names));
      expect(arns.sort()).toEqual(
        [
          'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0',
          'arn:aws:bedrock:us-east-1:000000000000:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0',
          ...[
            'eu-central-1',
            'eu-central-2',
            'eu-north-1',
            'eu-south-1',
            'eu-south-2',
            'eu-west-1',
            'eu-west-2',
            'eu-west-3',
          ].map((region) => `arn:aws:bedrock:${region}::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0`),
          'arn:aws:bedrock:us-east-1:000000000000:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0',
          'arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0',
        ].sort(),
      );
      // The default answers generate and flows; the list bounds what a stored definition may name.
      const variablesOf = (fn: typeof webhook) =>
        (
          (Template.fromStack(Stack.of(fn)).toJSON().Resources as Resources)[
            Stack.of(fn).getLogicalId(fn.node.defaultChild as CfnElement)
          ].Properties.Environment as { Variables: Record<string, unknown> }
        ).Variables;
      expect(variablesOf(webhook)).toMatchObject({ BEDROCK_GENERATE_MODEL_ID: 'amazon.nova-lite-v1:0' });
      expect(variablesOf(synth.stack.api.functions.PutAgentDefinition)).toMatchObject({
        BEDROCK_MODELS: models.join(','),
      });
    } finally {
      synth.dispose();
    }
  });

  test('-c modelBaseUrl and modelName: the key in a secret created empty, its ARN and the server given to the model functions', () => {
    const synth = synthesizeUnbundled({ modelBaseUrl: 'https://api.example.com/v1', modelName: 'gpt-4.1-mini' });
    try {
      expect(synth.violations).toEqual([]);
      const parent = Template.fromStack(synth.stack).toJSON();
      // Besides the console's edge secret (test/infra/api-firewall.test.ts): the model's key.
      const secrets = Object.entries(parent.Resources as Resources).filter(
        ([id, r]) => r.Type === 'AWS::SecretsManager::Secret' && id.startsWith('ModelApiKey'),
      );
      expect(secrets).toHaveLength(1);
      const [secretId, secret] = secrets[0];
      // Neither a value nor a generated one: the deployer puts the provider's key in it.
      expect(secret.Properties).not.toHaveProperty('SecretString');
      expect(secret.Properties).not.toHaveProperty('GenerateSecretString');
      expect(parent.Outputs.ModelApiKeySecretArn.Value).toEqual({ Ref: secretId });
      const webhook = synth.stack.api.functions.InvokeWebhook;
      const variables = (
        (Template.fromStack(Stack.of(webhook)).toJSON().Resources as Resources)[
          Stack.of(webhook).getLogicalId(webhook.node.defaultChild as CfnElement)
        ].Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      expect(variables).toMatchObject({ MODEL_BASE_URL: 'https://api.example.com/v1', MODEL_NAME: 'gpt-4.1-mini' });
      expect(variables).toHaveProperty('MODEL_API_KEY_SECRET_ARN');
      expect(variables).not.toHaveProperty('MODEL_API_KEY');
    } finally {
      synth.dispose();
    }
  });

  test('an http model server other than loopback, or one of modelBaseUrl and modelName alone, stops the synth', () => {
    const config = (context: Record<string, unknown>) => () =>
      createApp({ context: { ...cdkJson.context, ...context } });
    expect(config({ modelBaseUrl: 'http://api.example.com/v1', modelName: 'm' })).toThrow(/modelBaseUrl/);
    expect(config({ modelBaseUrl: 'https://api.example.com/v1' })).toThrow(/Invalid context modelName/);
    expect(config({ modelName: 'm' })).toThrow(/Invalid context modelBaseUrl/);
    expect(config({ modelBaseUrl: 'https://api.example.com/v1', modelName: 'two words' })).toThrow(/modelName/);
  });

  test('models and generateModelId together, an id that is no model id, or a repeated one stop the synth', () => {
    const config = (context: Record<string, unknown>) => () =>
      createApp({ context: { ...cdkJson.context, ...context } });
    expect(config({ models: 'a.b:0', generateModelId: 'a.b:0' })).toThrow(/models or generateModelId, not both/);
    expect(config({ models: 'Amazon Nova' })).toThrow(/Invalid context models/);
    expect(config({ models: 'amazon.nova-lite-v1:0,amazon.nova-lite-v1:0' })).toThrow(/Invalid context models/);
  });

  test('agentCodeFunctions: Lambda function ARNs only, distinct, at most 20; read from a list or comma-separated', () => {
    const config = (context: Record<string, unknown>) => () =>
      readConfig(new App({ context: { ...cdkJson.context, ...context } }));
    const arn = (name: string) => `arn:aws:lambda:eu-west-1:111122223333:function:${name}`;
    expect(config({ agentCodeFunctions: `${arn('a')}, ${arn('b')}:live` })().agentCodeFunctions).toEqual([
      arn('a'),
      `${arn('b')}:live`,
    ]);
    expect(config({ agentCodeFunctions: [arn('a')] })().agentCodeFunctions).toEqual([arn('a')]);
    expect(config({})().agentCodeFunctions).toEqual([]);
    for (const wrong of [
      'arn:aws:s3:::bucket',
      `${arn('a')},${arn('a')}`,
      Array.from({ length: 21 }, (_, i) => arn(`f${i}`)).join(','),
    ]) {
      expect(config({ agentCodeFunctions: wrong })).toThrow(/Invalid context agentCodeFunctions/);
    }
  });
});

describe('-c mcpSecrets: bearer tokens of MCP servers', () => {
  test('a secret created empty per name, its ARN and origin given (MCP_SECRETS) and readable where MCP servers are listed or called', () => {
    const synth = synthesizeUnbundled({
      mcpSecrets: 'crm=https://mcp.crm.example,billing=https://billing.example:8443',
    });
    try {
      expect(synth.violations).toEqual([]);
      const all = synth.template.toJSON().Resources as Resources;
      const secrets = Object.entries(all).filter(
        ([id, r]) => r.Type === 'AWS::SecretsManager::Secret' && id.startsWith('McpSecrets'),
      );
      expect(secrets).toHaveLength(2);
      for (const [, secret] of secrets) {
        expect(secret.Properties).not.toHaveProperty('SecretString');
        expect(secret.Properties).not.toHaveProperty('GenerateSecretString');
      }
      const secretRefs = secrets.map(([id]) => ({ Ref: id }));
      const variablesOf = (fn: IConstruct) =>
        (
          (Template.fromStack(Stack.of(fn)).toJSON().Resources as Resources)[
            Stack.of(fn).getLogicalId(fn.node.defaultChild as CfnElement)
          ].Properties.Environment as { Variables: Record<string, unknown> }
        ).Variables;
      const functions = synth.stack.api.functions;
      for (const id of ['InvokeWebhook', 'SendAppEvent', 'PutAgentDefinition', 'ValidateAgentDefinition']) {
        const value = JSON.stringify(variablesOf(functions[id]).MCP_SECRETS);
        expect(value).toContain('https://mcp.crm.example');
        expect(value).toContain('https://billing.example:8443');
        expect(value).toContain('secretArn');
      }
      expect(variablesOf(functions.GetAgentDefinition)).not.toHaveProperty('MCP_SECRETS');
      expect(variablesOf(synth.stack.flowRunner.function)).toHaveProperty('MCP_SECRETS');
      // GetSecretValue on exactly those secrets (the deployed whole: each nested parameter replaced by its value).
      const grants = Object.values(all)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((statement) => statement.Action === 'secretsmanager:GetSecretValue');
      // The webhook (its dashboard mirror on the same function), the app event, the MCP server (its invoke_agent runs
      // a webhook trigger), the flow runner, and put, validate and restore of definitions.
      const exact = grants.filter((g) => JSON.stringify(g.Resource) === JSON.stringify(secretRefs));
      expect(exact).toHaveLength(7);
    } finally {
      synth.dispose();
    }
  });

  test('names and https origins only, distinct, at most 20; read from a list or comma-separated', () => {
    const config = (context: Record<string, unknown>) => () =>
      readConfig(new App({ context: { ...cdkJson.context, ...context } }));
    expect(config({ mcpSecrets: 'crm=https://mcp.crm.example, b=https://b.example:8443' })().mcpSecrets).toEqual([
      { name: 'crm', origin: 'https://mcp.crm.example' },
      { name: 'b', origin: 'https://b.example:8443' },
    ]);
    expect(config({ mcpSecrets: [{ name: 'crm', origin: 'https://mcp.crm.example' }] })().mcpSecrets).toHaveLength(1);
    expect(config({})().mcpSecrets).toEqual([]);
    for (const wrong of [
      'crm=http://mcp.crm.example',
      'crm=https://mcp.crm.example/mcp',
      'crm=https://a.example,crm=https://b.example',
      '1crm=https://a.example',
      Array.from({ length: 21 }, (_, i) => `s${i}=https://a.example`).join(','),
    ]) {
      expect(config({ mcpSecrets: wrong })).toThrow(/Invalid context mcpSecrets/);
    }
  });
});

describe('operations: alarms, their topic and the dashboard', () => {
  const topicRef = () => ({ Ref: logicalId(stack.operations.alarmTopic) });

  test('the alarm topic enforces TLS, has no fixed name, and its ARN is a stack output', () => {
    const topic = resources[logicalId(stack.operations.alarmTopic)];
    expect(topic.Type).toBe('AWS::SNS::Topic');
    expect(topic.Properties).not.toHaveProperty('TopicName');
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [topicRef()],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    template.hasOutput('AlarmTopicArn', { Value: topicRef() });
  });

  test.each([
    ['ProcessingDeadLetters', () => stack.storage.deadLetterQueue],
    ['FlowRunDeadLetters', () => stack.flowRunner.deadLetterQueue],
  ])('%s: one message in the dead-letter queue alarms', (name, queue) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue()), 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [topicRef()],
    });
    expect(stack.operations.alarms[name]).toBeDefined();
  });

  test('a document the watchdog finds stuck `uploaded` alarms, from the metric the watchdog emits', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AgentPlatform/dev',
      MetricName: 'DocumentsStuckUploaded',
      Dimensions: [{ Name: 'service', Value: 'agent-platform' }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      AlarmActions: [topicRef()],
    });
  });

  test('more than 5% of API requests answered 5xx over two periods alarms', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Statistic: 'Average',
      Threshold: 0.05,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      AlarmActions: [topicRef()],
    });
  });

  test('processor errors alarm on the processor function itself', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.processing.processor) } }],
      Threshold: 1,
      AlarmActions: [topicRef()],
    });
  });

  test('authorizer errors alarm on errors that are not denials; throttles on the workers and the authorizer', () => {
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const byExpression = (text: string) =>
      alarms.find((a) => JSON.stringify(a.Properties.Metrics ?? []).includes(text))?.Properties;
    const authorizer = byExpression('errors - FILL(denied, 0)');
    expect(JSON.stringify(authorizer)).toContain('"MetricName":"AuthorizerDenied"');
    expect(JSON.stringify(authorizer)).toContain(logicalId(stack.api.authorizerFunction));
    const throttles = byExpression('t0 + t1');
    const watched = [
      stack.processing.processor,
      stack.processing.watchdog,
      stack.flowRunner.function,
      stack.scheduler.tick,
      stack.browserTask.function,
      stack.webhooks.function,
      stack.api.authorizerFunction,
    ];
    for (const fn of watched) expect(JSON.stringify(throttles)).toContain(logicalId(fn));
    expect(JSON.stringify(throttles)).toContain('"MetricName":"Throttles"');
  });

  test('every alarm notifies the topic on alarm and on recovery', () => {
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(alarms).toHaveLength(Object.keys(stack.operations.alarms).length);
    // Dead letters ×3, stuck documents, 5xx, latency, queue age ×3, errors ×6, silent ×2, throttles, authorizer.
    expect(alarms.length).toBe(19);
    for (const alarm of alarms) {
      expect(alarm.Properties).toMatchObject({ AlarmActions: [topicRef()], OKActions: [topicRef()] });
    }
  });

  test('the dashboard has a row per area and charts the service metrics', () => {
    const dashboard = resources[logicalId(stack.operations.dashboard)];
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const row of ['## Documents', '## Retrieval', '## Flows', '## API', '## Workers', '## Sign-in']) {
      expect(body).toContain(row);
    }
    for (const metric of [
      'DocumentsReady',
      'DocumentsFailed',
      'ProcessingDuration',
      'ChunksIndexed',
      'AuthorizerDenied',
      'Runs',
      'NodeFailures',
      'ModelCalls',
      'ToolCalls',
      'BrowserSteps',
      'ZipFilesImported',
    ]) {
      expect(body).toContain(metric);
    }
    // RateLimited: the firewall's rate rule, from WAF's metrics.
    const unescaped = body.replace(/\\/g, '');
    expect(unescaped).toContain('"AWS/WAFV2","BlockedRequests","Region"');
    expect(unescaped).toContain('"Rule","RateLimitPerSourceIp","WebACL","AgentPlatformApi",{"label":"RateLimited"');
    expect(dashboard.Properties).not.toHaveProperty('DashboardName');
  });
});
