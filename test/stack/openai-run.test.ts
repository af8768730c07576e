/**
 * The stack as `cdk deploy -c modelBaseUrl=… -c modelName=…` deploys it: an OpenAI-compatible server as the default
 * model, its API key in the secret the stack creates empty. Run from its cloud assembly with the scripted model
 * server as the provider and the Secrets Manager stand-in holding the secret (lib/stack-check/secrets-stand-in.ts):
 * before the deployer fills the secret the model is called without a key; after `put-secret-value` every call
 * carries it, a container reads the secret once, the key is in no function's output, and only the model-calling
 * functions' roles may read it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  type CloudAssembly,
  nodeFunctions,
  ResourceNames,
  synthesizeCloudAssembly,
} from '../../lib/stack-check/cloud-assembly';
import { FunctionPermissions } from '../../lib/stack-check/iam';
import { type ScriptedModelServer, startScriptedModelServer } from '../helpers/scripted-model-server';
import { api, helloAgent } from '../helpers/stack-api';
import { type StackProcess, startStackProcess } from '../helpers/stack-process';

const KEY = 'sk-stack-check-0123456789';

let workdir: string;
let assembly: CloudAssembly;
let stack: StackProcess;
let model: ScriptedModelServer;

beforeAll(async () => {
  model = await startScriptedModelServer((request) => ({ content: `Hello from ${request.model}.` }));
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-openai-'));
  assembly = synthesizeCloudAssembly(path.join(workdir, 'cdk.out'), {
    models: 'offline',
    modelBaseUrl: model.baseUrl,
    modelName: 'scripted',
  });
  stack = await startStackProcess(assembly.directory);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await model?.close();
  fs.rmSync(workdir, { recursive: true, force: true });
});

const secretArn = () => {
  const [id] =
    Object.entries(assembly.template.Resources).find(([, r]) => r.Type === 'AWS::SecretsManager::Secret') ?? [];
  if (!id) throw new Error('no secret in the template');
  return new ResourceNames(assembly.template).arn(id);
};

test('prompt nodes answer through the OpenAI-compatible server, with the key the deployer put in the secret, read once', async () => {
  const call = api(stack, stack.token);
  const models = await call('GET', '/dashboard/models');
  expect(
    (models.body.data as { id: string; provider: string; default: boolean }[]).map((m) => [
      m.id,
      m.provider,
      m.default,
    ]),
  ).toEqual([
    ['scripted', 'openai-compatible', true],
    ['offline', 'offline', false],
  ]);
  const { run } = await helloAgent(call, 'Hosted model');

  // Deployed, not yet filled: the secret has no value, so the call goes without a key (and the secret is read again).
  const before = await run();
  expect(before.body).toMatchObject({
    status: 'completed',
    aiMessages: [{ model: 'openai-compatible:scripted', content: 'Hello from scripted.' }],
  });
  expect(model.authorizations).toEqual([undefined]);

  // The deployer's `aws secretsmanager put-secret-value --secret-id <ModelApiKeySecretArn> --secret-string <key>`.
  const deployer = new SecretsManagerClient({
    endpoint: stack.secretsEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'deployer', secretAccessKey: 'deployer' },
  });
  await deployer.send(new PutSecretValueCommand({ SecretId: secretArn(), SecretString: KEY }));

  for (let i = 0; i < 2; i++) expect((await run()).body).toMatchObject({ status: 'completed' });
  expect(model.authorizations).toEqual([undefined, `Bearer ${KEY}`, `Bearer ${KEY}`]);

  const report = await stack.report();
  expect(report.denials).toEqual([]);
  // One read before the value (not found), then one for the container's life: not one per call.
  expect(report.secrets).toEqual({ 'GetSecretValue 400': 1, 'PutSecretValue 200': 1, 'GetSecretValue 200': 1 });
  for (const [functionId, output] of Object.entries(report.output)) {
    expect([functionId, output.includes(KEY)]).toEqual([functionId, false]);
  }
}, 180_000);

test('only the functions that call the model may read the secret', async () => {
  const names = new ResourceNames(assembly.template);
  const decide = async (prefix: string) => {
    const fn = nodeFunctions(assembly).find((f) => f.logicalId.includes(prefix));
    if (!fn) throw new Error(`no ${prefix} function in the template`);
    return new FunctionPermissions(assembly.template, fn, names).decide('secretsmanager:GetSecretValue', secretArn());
  };
  for (const caller of ['InvokeWebhookFunction', 'GenerateFromKnowledgeBaseFunction', 'FlowRunnerFunction']) {
    expect([caller, await decide(caller)]).toEqual([caller, 'Allowed']);
  }
  for (const other of ['UploadLinkFunction', 'PutAgentDefinitionFunction', 'ListModelsFunction']) {
    expect([other, await decide(other)]).not.toEqual([other, 'Allowed']);
  }
});
