/**
 * Operable in production (docs/operations.md): data that can be recovered, queues that do not dead-letter healthy
 * work, limits fair between tenants, alarms that reach someone, and settings kept per stage. Each test reads the
 * synthesized template (test/helpers/synth.ts), as CloudFormation would receive it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { readConfig } from '../../bin/app';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] };
type Resources = Record<string, Resource>;

const ofType = (resources: Resources, type: string) =>
  Object.entries(resources).filter(([, resource]) => resource.Type === type);

let synth: Synthesized;
let resources: Resources;
beforeAll(() => {
  synth = synthesizeUnbundled();
  resources = synth.template.toJSON().Resources as Resources;
});
afterAll(() => synth.dispose());

describe('recoverable data', () => {
  test('every table has deletion protection and point-in-time recovery; the stack has termination protection', () => {
    const tables = ofType(resources, 'AWS::DynamoDB::Table');
    expect(tables.length).toBeGreaterThanOrEqual(13);
    for (const [, table] of tables) {
      expect(table.Properties).toMatchObject({
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      });
    }
    expect(synth.stack.terminationProtection).toBe(true);
  });

  test('the documents bucket is versioned, and a noncurrent version expires after a week', () => {
    const bucket = resources[synth.stack.getLogicalId(synth.stack.storage.bucket.node.defaultChild as never)];
    expect(bucket.Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    const rules = (bucket.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({
        Id: 'NoncurrentVersions',
        NoncurrentVersionExpiration: { NoncurrentDays: 7 },
        ExpiredObjectDeleteMarker: true,
        Status: 'Enabled',
      }),
    );
  });

  test('the vector indexes keep their vectors when the data source or the stack goes (RETAIN)', () => {
    const dataSources = ofType(resources, 'AWS::Bedrock::DataSource');
    expect(dataSources).toHaveLength(3);
    for (const [, source] of dataSources) expect(source.Properties.DataDeletionPolicy).toBe('RETAIN');
  });

  test('AWS Backup backs up every table and the documents bucket daily, kept 35 days, in a retained vault', () => {
    const [[, plan]] = ofType(resources, 'AWS::Backup::BackupPlan');
    const rules = (plan.Properties.BackupPlan as { BackupPlanRule: Record<string, unknown>[] }).BackupPlanRule;
    expect(rules).toEqual([
      expect.objectContaining({
        RuleName: 'Daily',
        ScheduleExpression: 'cron(0 3 * * ? *)',
        Lifecycle: { DeleteAfterDays: 35 },
      }),
    ]);
    expect(rules[0].CopyActions).toBeUndefined();
    const [[, selection]] = ofType(resources, 'AWS::Backup::BackupSelection');
    const selected = JSON.stringify(selection.Properties.BackupSelection);
    for (const [id] of ofType(resources, 'AWS::DynamoDB::Table')) expect(selected).toContain(`"${id}"`);
    const bucketId = synth.stack.getLogicalId(synth.stack.storage.bucket.node.defaultChild as never);
    expect(selected).toContain(`"${bucketId}"`);
  });
});

describe('queues and workers', () => {
  test('every queue a function consumes: visibility at least 6× its timeout, at least 5 receives before the DLQ', () => {
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping');
    expect(mappings.length).toBeGreaterThanOrEqual(2);
    for (const [, mapping] of mappings) {
      const idIn = (value: unknown) =>
        JSON.stringify(value).match(/"(?:Ref|Fn::GetAtt)":\[?"([A-Za-z0-9]+)"/)?.[1] as string;
      const queueId = idIn(mapping.Properties.EventSourceArn);
      const functionId = idIn(mapping.Properties.FunctionName);
      const queue = resources[queueId].Properties;
      const timeout = resources[functionId].Properties.Timeout as number;
      expect({ queueId, visibility: queue.VisibilityTimeout }).toEqual({
        queueId,
        visibility: expect.any(Number),
      });
      expect(queue.VisibilityTimeout as number).toBeGreaterThanOrEqual(6 * timeout);
      expect((queue.RedrivePolicy as { maxReceiveCount: number }).maxReceiveCount).toBeGreaterThanOrEqual(5);
      // A consumer never starts more invocations than are reserved for it, so its own batches are not throttled.
      const reserved = resources[functionId].Properties.ReservedConcurrentExecutions;
      expect(reserved).toBe((mapping.Properties.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency);
      // It re-queues onto its own trigger on purpose: Lambda must not stop the chain as a loop.
      expect(resources[functionId].Properties.RecursiveLoop).toBe('Allow');
    }
  });

  test('the processor, the flow runner and the browser task have reserved concurrency; -c reservedConcurrency=off none', () => {
    const reserved = (s: Synthesized) =>
      [s.stack.processing.processor, s.stack.flowRunner.function, s.stack.browserTask.function].map(
        (fn) =>
          (s.template.toJSON().Resources as Resources)[s.stack.getLogicalId(fn.node.defaultChild as never)].Properties
            .ReservedConcurrentExecutions,
      );
    expect(reserved(synth)).toEqual([10, 20, 20]);
    const off = synthesizeUnbundled({ reservedConcurrency: 'off' });
    try {
      expect(reserved(off)).toEqual([undefined, undefined, undefined]);
    } finally {
      off.dispose();
    }
  });

  test("the processor's /tmp holds a whole batch of the largest archives", () => {
    const processor = resources[synth.stack.getLogicalId(synth.stack.processing.processor.node.defaultChild as never)];
    expect(processor.Properties.EphemeralStorage).toEqual({ Size: 5 * 256 + 512 });
  });
});

describe('fair between tenants', () => {
  test("the stage throttle is ten times one organization's limit, and follows a configured one", () => {
    const [[, stage]] = ofType(resources, 'AWS::ApiGateway::Stage');
    expect(stage.Properties.MethodSettings).toEqual([
      expect.objectContaining({ ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000, LoggingLevel: 'ERROR' }),
    ]);
    const config = (context: Record<string, unknown>) => readConfig(new App({ context }));
    expect(config({ rateLimitPerSecond: '20', rateLimitBurst: '40' }).apiThrottle).toEqual({
      rateLimit: 200,
      burstLimit: 400,
    });
    expect(() => config({ apiRateLimit: '50' })).toThrow(/must be above one organization's limit \(50\/s\)/);
  });
});

describe('alerts that reach someone', () => {
  test('the API is named per stage; its execution logs go to a group of the stack, kept a month', () => {
    const [[, api]] = ofType(resources, 'AWS::ApiGateway::RestApi');
    expect(api.Properties.Name).toBe('agent-platform-dev');
    const logs = ofType(resources, 'AWS::Logs::LogGroup').find(([, group]) =>
      JSON.stringify(group.Properties.LogGroupName ?? '').includes('API-Gateway-Execution-Logs_'),
    );
    expect(logs?.[1].Properties.RetentionInDays).toBe(30);
    const [[stageId, stage]] = ofType(resources, 'AWS::ApiGateway::Stage');
    expect(stage.DependsOn ?? []).toContain(logs?.[0]);
    expect(stageId).toBeDefined();
  });

  test('the workers, the schedules and the queues each have an alarm, and each alarm names its runbook section', () => {
    const alarms = ofType(resources, 'AWS::CloudWatch::Alarm').map(([id, alarm]) => ({
      id,
      description: alarm.Properties.AlarmDescription as string,
      missing: alarm.Properties.TreatMissingData,
    }));
    const ids = alarms.map((alarm) => alarm.id).join(' ');
    for (const name of [
      'ProcessorErrors',
      'WatchdogErrors',
      'FlowRunnerErrors',
      'ScheduleTickErrors',
      'BrowserTaskErrors',
      'ProcessingQueueAge',
      'FlowRunQueueAge',
      'WatchdogSilent',
      'ScheduleTickSilent',
      'ApiLatency',
      'Throttles',
    ]) {
      expect(ids).toContain(`${name}Alarm`);
    }
    // A watchdog that stopped running is missing data: that must breach, not read as OK.
    expect(alarms.find((alarm) => alarm.id.includes('WatchdogSilent'))?.missing).toBe('breaching');
    const runbook = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    const anchors = new Set(
      [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
        m[1]
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const alarm of alarms) {
      const section = alarm.description.match(/Runbook: docs\/operations\.md#([a-z0-9-]+)/)?.[1];
      expect({ alarm: alarm.id, section: section && anchors.has(section) ? section : 'missing' }).toEqual({
        alarm: alarm.id,
        section,
      });
    }
  });

  test('-c alarmEmail subscribes the address; -c alarmTopicArn is notified by every alarm as well', () => {
    const topicArn = 'arn:aws:sns:eu-west-1:123456789012:pager';
    const withTargets = synthesizeUnbundled({ alarmEmail: 'ops@example.com', alarmTopicArn: topicArn });
    try {
      const json = withTargets.template.toJSON().Resources as Resources;
      expect(ofType(json, 'AWS::SNS::Subscription').map(([, s]) => s.Properties)).toEqual([
        expect.objectContaining({ Protocol: 'email', Endpoint: 'ops@example.com' }),
      ]);
      for (const [, alarm] of ofType(json, 'AWS::CloudWatch::Alarm')) {
        expect(alarm.Properties.AlarmActions).toContain(topicArn);
        expect(alarm.Properties.AlarmActions).toHaveLength(2);
      }
    } finally {
      withTargets.dispose();
    }
  });
});

describe('settings per stage (config/<stage>.json)', () => {
  let configDir: string;
  beforeEach(() => {
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stage-config-'));
  });
  afterEach(() => fs.rmSync(configDir, { recursive: true, force: true }));
  const write = (stage: string, settings: unknown) =>
    fs.writeFileSync(path.join(configDir, `${stage}.json`), JSON.stringify(settings));
  const config = (context: Record<string, unknown>) => readConfig(new App({ context: { configDir, ...context } }));

  test("a stage's file gives its settings, and a -c flag overrides one for that deploy", () => {
    write('prod', {
      account: '123456789012',
      region: 'eu-west-1',
      models: ['eu.amazon.nova-lite-v1:0'],
      signUp: 'open',
      alarmEmail: 'ops@example.com',
      backupCopyVaultArn: 'arn:aws:backup:eu-west-1:210987654321:backup-vault:copies',
    });
    expect(config({ stage: 'prod' })).toMatchObject({
      env: { account: '123456789012', region: 'eu-west-1' },
      models: ['eu.amazon.nova-lite-v1:0'],
      signUp: 'open',
      alarms: { email: 'ops@example.com' },
      backup: { enabled: true, copyVaultArn: 'arn:aws:backup:eu-west-1:210987654321:backup-vault:copies' },
    });
    expect(config({ stage: 'prod', signUp: 'invite' }).signUp).toBe('invite');
    // Another stage does not read prod's file.
    expect(config({ stage: 'dev' })).toMatchObject({ signUp: 'invite', alarms: {} });
    expect(config({ stage: 'dev' }).env).toBeUndefined();
  });

  test('a misspelt key or a wrong type stops the synth, naming the file and the key', () => {
    write('prod', { signup: 'open' });
    expect(() => config({ stage: 'prod' })).toThrow(/prod\.json: \(file\): Unrecognized key.* signup/);
    write('prod', { account: '1234' });
    expect(() => config({ stage: 'prod' })).toThrow(/account: an AWS account id is 12 digits/);
    write('prod', { signUp: 'anyone' });
    expect(() => config({ stage: 'prod' })).toThrow(/signUp/);
    fs.writeFileSync(path.join(configDir, 'prod.json'), '{ not json');
    expect(() => config({ stage: 'prod' })).toThrow(/prod\.json: not JSON/);
  });

  test('a backup copy vault, an alarm topic and an SES sender are checked as they are read', () => {
    expect(() => config({ backupCopyVaultArn: 'vault' })).toThrow(/backupCopyVaultArn.*ARN of a backup vault/);
    expect(() => config({ alarmTopicArn: 'arn:aws:sqs:eu-west-1:123456789012:q' })).toThrow(/alarmTopicArn/);
    expect(() => config({ cognitoEmailSesRegion: 'eu-west-1' })).toThrow(/with cognitoEmailFrom/);
    // SES is regional: without the stage's region (config file) the sender's region must be given.
    expect(() => config({ cognitoEmailFrom: 'no-reply@example.com' })).toThrow(/cognitoEmailSesRegion/);
    write('prod', { region: 'eu-west-1' });
    expect(config({ stage: 'prod', cognitoEmailFrom: 'no-reply@example.com' }).cognitoEmail).toEqual({
      from: 'no-reply@example.com',
      sesRegion: 'eu-west-1',
    });
  });

  test("with cognitoEmailFrom, Cognito's mail goes through SES from that address", () => {
    const withSes = synthesizeUnbundled({
      cognitoEmailFrom: 'no-reply@example.com',
      cognitoEmailSesRegion: 'eu-west-1',
    });
    try {
      const [[, pool]] = ofType(withSes.template.toJSON().Resources as Resources, 'AWS::Cognito::UserPool');
      expect(pool.Properties.EmailConfiguration).toMatchObject({
        EmailSendingAccount: 'DEVELOPER',
        From: 'Agent platform <no-reply@example.com>',
      });
    } finally {
      withSes.dispose();
    }
  });
});
