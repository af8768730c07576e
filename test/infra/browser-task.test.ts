/**
 * The BrowserTask function in the synthesized stack (bin/app.ts with cdk.json's context and cdk-nag, a generate
 * model given, the handlers bundled, once for this file): how it is sized, what it may do, who may invoke it, that
 * the flow functions are told to use it, and that its package holds the browser.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { createApp } from '../../bin/app';
import type { AgentPlatformStack } from '../../lib/agent-platform-stack';
import { ROUTES, WORKERS } from '../../lib/routes';
import { deployedTemplate } from '../helpers/synth';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const MODEL = 'amazon.nova-lite-v1:0';
const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

let outdir: string;
let assemblyDir: string;
let stack: AgentPlatformStack;
let resources: Resources;
let browserId: string;

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'browser-infra-'));
  const built = createApp({ context: { ...cdkJson.context, generateModelId: MODEL }, outdir });
  stack = built.stack;
  // Under jest a cdk-nag finding nobody acknowledged makes synth() throw: the function and its grants pass AwsSolutions.
  assemblyDir = built.app.synth().directory;
  // The deployed whole: the route functions' nested stacks merged into the stack's template (test/helpers/synth.ts).
  resources = deployedTemplate(assemblyDir).toJSON().Resources as Resources;
  browserId = logicalId(stack.browserTask.function);
});

afterAll(() => {
  fs.rmSync(outdir, { recursive: true, force: true });
});

/** Every statement of the policies attached to a role, by the role's logical id. */
function statementsOfRole(roleId: string): Statement[] {
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const actionsOf = (statements: Statement[]) => statements.flatMap((s) => ([] as string[]).concat(s.Action)).sort();

describe('the BrowserTask function', () => {
  it('runs on x86_64 nodejs22.x, sized for Chromium: 2,048 MB, 180 s, 1 GiB of /tmp, no table in its environment', () => {
    const props = resources[browserId].Properties;
    expect(props).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['x86_64'],
      MemorySize: 2048,
      Timeout: 180,
      EphemeralStorage: { Size: 1024 },
      Handler: 'index.handler',
      TracingConfig: { Mode: 'Active' },
    });
    const variables = (props.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      POWERTOOLS_SERVICE_NAME: 'agent-platform',
      POWERTOOLS_METRICS_NAMESPACE: 'AgentPlatform/dev',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      POWERTOOLS_LOGGER_SAMPLE_RATE: '0.01',
      // The model of the flow functions: the same configuration, so the same resolver picks the same model.
      BEDROCK_GENERATE_MODEL_ID: MODEL,
    });
  });

  it('may invoke the generate model and nothing else: no table, bucket, queue or function', () => {
    const roleId = logicalId(stack.browserTask.function.role as IConstruct);
    const statements = statementsOfRole(roleId);
    expect(actionsOf(statements)).toEqual(['bedrock:InvokeModel', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    const invoke = statements.find((s) => actionsOf([s]).includes('bedrock:InvokeModel'));
    expect(JSON.stringify(invoke?.Resource)).toContain(`foundation-model/${MODEL}`);
  });

  it('is invoked by the flow functions only, each told BROWSER_DRIVER=lambda and its name', () => {
    // Functions, not routes: the dashboard's mirror of the webhook runs on InvokeWebhook's function (functionOf).
    const flowRoutes = ROUTES.filter((r) => r.access.browserTask === 'invoke' && r.functionOf === undefined);
    // The MCP server's invoke_agent runs a webhook trigger's flow, browser tasks and all.
    expect(flowRoutes.map((r) => r.id).sort()).toEqual(['InvokeWebhook', 'Mcp', 'SendAppEvent']);
    // The schedule tick runs no flow (the flow runner runs its fires): it may not invoke it.
    expect(WORKERS.scheduleTick.access).not.toHaveProperty('browserTask');
    expect(WORKERS.flowRunner.access.browserTask).toBe('invoke');
    const flowFunctions = [...flowRoutes.map((r) => stack.api.functions[r.id]), stack.flowRunner.function];
    const expectedRoles = flowFunctions.map((fn) => logicalId(fn.role as IConstruct)).sort();

    const invokers = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .filter((r) =>
        (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
          (s) => actionsOf([s]).includes('lambda:InvokeFunction') && JSON.stringify(s.Resource).includes(browserId),
        ),
      )
      .flatMap((r) => (r.Properties.Roles as { Ref: string }[]).map((role) => role.Ref))
      .sort();
    expect(invokers).toEqual(expectedRoles);
    // The function itself, unqualified: not its versions or aliases.
    const statement = statementsOfRole(expectedRoles[0]).find((s) => actionsOf([s]).includes('lambda:InvokeFunction'));
    expect(statement?.Resource).toEqual({ 'Fn::GetAtt': [browserId, 'Arn'] });
    // No resource policy lets anything else (an API, a service) invoke it.
    const permissions = Object.values(resources).filter(
      (r) => r.Type === 'AWS::Lambda::Permission' && JSON.stringify(r.Properties.FunctionName).includes(browserId),
    );
    expect(permissions).toEqual([]);

    for (const fn of flowFunctions) {
      const variables = (resources[logicalId(fn)].Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      expect(variables).toMatchObject({ BROWSER_DRIVER: 'lambda', BROWSER_TASK_FUNCTION: { Ref: browserId } });
    }
    const health = resources[logicalId(stack.api.functions.Health)].Properties.Environment as {
      Variables: Record<string, unknown>;
    };
    expect(health.Variables).not.toHaveProperty('BROWSER_DRIVER');
  });

  it('has the browser in its package: the handler, Chromium and its libraries, and playwright-core', () => {
    const code = resources[browserId].Properties.Code as { S3Key: string };
    const asset = path.join(assemblyDir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
    const files = (folder: string): string[] =>
      fs.readdirSync(path.join(asset, folder)).filter((name) => fs.statSync(path.join(asset, folder, name)).isFile());
    expect(files('.').sort()).toEqual(['index.js', 'index.js.map']);
    expect(files('bin').sort()).toEqual(['al2023.tar.br', 'chromium.br', 'fonts.tar.br', 'swiftshader.tar.br']);
    const packaged = path.join(__dirname, '..', '..', 'node_modules', '@sparticuz', 'chromium', 'bin', 'chromium.br');
    expect(fs.statSync(path.join(asset, 'bin', 'chromium.br')).size).toBe(fs.statSync(packaged).size);
    const playwright = JSON.parse(
      fs.readFileSync(path.join(asset, 'node_modules', 'playwright-core', 'package.json'), 'utf8'),
    ) as { version: string };
    expect(playwright.version).toBe('1.64.1');
    // @sparticuz/chromium is in the bundle (it is ES modules only, and the handler loads it only in Lambda).
    expect(fs.readFileSync(path.join(asset, 'index.js'), 'utf8')).toContain('al2023.tar.br');
  });
});
