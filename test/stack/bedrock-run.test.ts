/**
 * The default variant, as `cdk deploy -c models=<a foundation model>,<an inference profile>` deploys it (Bedrock
 * knowledge bases, Bedrock models for generate and the flows), and as a plain `cdk deploy` deploys it (the default
 * model, DEFAULT_MODEL of bin/app.ts), run from its cloud assembly with its Bedrock calls served by the stand-in
 * (lib/stack-check/bedrock-stand-in.ts): the bundled bedrock-agent client of the processor and the runtime's HTTP/2
 * clients each reach it under their function's own path, where the function's role is checked. The HTTP suites run
 * through this variant too (scripts/test-stack-suites.ts, without a model); what only this file shows is Converse,
 * and the mutations of the grants only this variant has.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_MODEL } from '../../bin/app';
import {
  type CloudAssembly,
  nodeFunctions,
  ResourceNames,
  synthesizeCloudAssembly,
} from '../../lib/stack-check/cloud-assembly';
import { FunctionPermissions } from '../../lib/stack-check/iam';
import { helloFlow } from '../helpers/flow-definitions';
import { pollUntil } from '../helpers/poll';
import { api, dataset, helloAgent, uploadProcessed } from '../helpers/stack-api';
import { type StackProcess, startStackProcess } from '../helpers/stack-process';
import { MUTATIONS } from './mutations';

const MODEL = 'amazon.nova-lite-v1:0';
/** A cross-Region inference profile, as most current models must be called. */
const PROFILE = 'us.anthropic.claude-3-5-haiku-20241022-v1:0';

let workdir: string;
let assembly: CloudAssembly;
let stack: StackProcess;

beforeAll(async () => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-bedrock-'));
  assembly = synthesizeCloudAssembly(path.join(workdir, 'cdk.out'), { models: `${MODEL},${PROFILE}` });
  stack = await startStackProcess(assembly.directory);
}, 300_000);

afterAll(async () => {
  if (stack) {
    const report = await stack.report();
    const requests = Object.entries(report.bedrock.requests).map(([request, n]) => `${request} ×${n}`);
    console.log(
      `[stack bedrock] ${report.functionsRun} of ${report.functions} functions run, ${report.callsChecked} AWS calls ` +
        `checked, ${report.denials.length} refused; Bedrock stand-in: ${requests.join(', ')}; ` +
        `${report.bedrock.violations.length} documented constraints broken`,
    );
    await stack.stop();
  }
  fs.rmSync(workdir, { recursive: true, force: true });
});

test('a document is ingested into the Bedrock knowledge base, retrieved, listed in its chunk view, deleted, and generate answers with the model, every call allowed', async () => {
  const call = api(stack, stack.token);
  const d = await dataset(call, 'staging');
  const { s3Key, document } = await uploadProcessed(
    call,
    d,
    'zebra.txt',
    'The zebra crossing manual: stripes are repainted every spring.',
  );
  expect(document.body.status).toBe('ready');

  const kbPath = `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}`;
  const found = await call('POST', `${kbPath}/query`, { query: 'zebra stripes' });
  expect(found.status).toBe(200);
  expect(JSON.stringify(found.body.results)).toContain('zebra crossing manual');

  // The chunk view reads the chunk manifest the processor wrote beside the document, with the route's own grant (no
  // Bedrock call): the chunk, its metadata exactly the retrieval result's.
  const chunks = await call('GET', `/api/v1/knowledge/documents/chunks?${new URLSearchParams({ ...d, s3Key })}`);
  expect(chunks.status).toBe(200);
  const [hit] = found.body.results as { content: string; metadata: Record<string, unknown> }[];
  expect(chunks.body).toMatchObject({ status: 'ready', total: 1, nextToken: null });
  expect(chunks.body.chunks).toEqual([
    { chunkId: hit.metadata.chunkId, position: 0, text: hit.content, metadata: hit.metadata },
  ]);

  const generated = await call('POST', `${kbPath}/generate`, { query: 'When are the stripes repainted?' });
  expect(generated.status).toBe(200);
  expect(generated.body.model).toBe(`bedrock-converse:${MODEL}`);
  expect(typeof generated.body.answer).toBe('string');
  expect(String(generated.body.answer).length).toBeGreaterThan(0);

  expect((await call('DELETE', '/api/v1/knowledge/documents', { ...d, s3Key })).status).toBe(200);
  // Retrieval drops the deleted document at once (its record is gone); its chunks are erased after the answer, by the
  // delete-document message the processor runs: wait for that call, not for the query.
  const gone = await call('POST', `${kbPath}/query`, { query: 'zebra stripes' });
  expect(JSON.stringify(gone.body.results)).not.toContain('zebra crossing manual');
  const report = await pollUntil(
    () => stack.report(),
    (r) => Object.keys(r.bedrock.requests).some((request) => request.startsWith('DeleteKnowledgeBaseDocuments 20')),
    60_000,
  );
  expect(report.denials).toEqual([]);
  expect(report.wiringErrors).toEqual([]);
  expect(report.bedrock.violations).toEqual([]);
  const served = Object.keys(report.bedrock.requests);
  for (const operation of ['IngestKnowledgeBaseDocuments 202', 'Retrieve 200', 'Converse 200']) {
    expect(served).toContain(operation);
  }
  expect(served.some((request) => request.startsWith('DeleteKnowledgeBaseDocuments 20'))).toBe(true);
}, 180_000);

test('a prompt node on the listed inference profile runs through Converse, allowed; an unlisted model is refused when stored and by IAM', async () => {
  const call = api(stack, stack.token);
  const agent = await call('POST', '/dashboard/agents', { displayName: 'Models' });
  const path_ = `/dashboard/agents/${agent.body.agentId}/definition/production`;
  const definition = (model: string) => helloFlow({ name: 'ChatBedrockConverse', properties: { model } });
  const unlisted = await call('PUT', path_, definition('anthropic.claude-3-opus-20240229-v1:0'));
  expect(unlisted.status).toBe(400);
  expect(JSON.stringify(unlisted.body)).toContain('llmConfig.modelUnavailable');
  const models = await call('GET', '/dashboard/models');
  expect((models.body.data as { id: string; default: boolean }[]).map((m) => [m.id, m.default])).toEqual([
    [MODEL, true],
    [PROFILE, false],
    ['offline', false],
  ]);

  expect((await call('PUT', path_, definition(PROFILE))).status).toBe(200);
  const run = await call('POST', `/api/v1/webhooks/${agent.body.agentId}/production/Start`, { message: 'Hi' });
  expect(run.status).toBe(200);
  expect(run.body).toMatchObject({ status: 'completed', aiMessages: [{ model: `bedrock-converse:${PROFILE}` }] });
  const report = await stack.report();
  expect(report.denials).toEqual([]);

  // The roles themselves: the webhook function may invoke the listed model and profile, and nothing else.
  const fn = nodeFunctions(assembly).find((f) => f.logicalId.startsWith('InvokeWebhookFunction'));
  if (!fn) throw new Error('no webhook function in the template');
  const permissions = new FunctionPermissions(assembly.template, fn, new ResourceNames(assembly.template));
  const decide = (resource: string) => permissions.decide('bedrock:InvokeModel', resource);
  expect(await decide(`arn:aws:bedrock:us-east-1::foundation-model/${MODEL}`)).toBe('Allowed');
  expect(await decide(`arn:aws:bedrock:us-east-1:000000000000:inference-profile/${PROFILE}`)).toBe('Allowed');
  // Where the profile routes: its model in each US Region.
  expect(await decide('arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0')).toBe(
    'Allowed',
  );
  expect(await decide('arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-opus-20240229-v1:0')).not.toBe(
    'Allowed',
  );
  expect(await decide('arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0')).not.toBe(
    'Allowed',
  );
}, 120_000);

test('the same calls replayed against the template as synthesized are all allowed', async () => {
  const unchanged = path.join(workdir, 'unchanged.json');
  fs.writeFileSync(unchanged, JSON.stringify(assembly.template));
  expect(await stack.replay(unchanged)).toEqual([]);
});

test.each(MUTATIONS.filter((m) => m.variant === 'bedrock').map((m) => [m.id, m]))(
  'mutation %s is caught: a call of the default variant the functions made is refused by the mutated roles',
  async (_id, mutation) => {
    const copy = structuredClone(assembly.template);
    mutation.apply(copy);
    const file = path.join(workdir, `mutation-${mutation.id}.json`);
    fs.writeFileSync(file, JSON.stringify(copy));
    const refused = await stack.replay(file);
    const lines = refused.map((d) => `${d.functionId} ${d.action} ${d.resource}`);
    expect(lines.filter((line) => mutation.expected.test(line))).not.toEqual([]);
  },
);

describe('a plain cdk deploy (no model context)', () => {
  let plainDir: string;
  let plain: CloudAssembly;
  let plainStack: StackProcess;

  beforeAll(async () => {
    plainDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-bedrock-plain-'));
    plain = synthesizeCloudAssembly(path.join(plainDir, 'cdk.out'));
    plainStack = await startStackProcess(plain.directory);
  }, 300_000);

  afterAll(async () => {
    await plainStack?.stop();
    fs.rmSync(plainDir, { recursive: true, force: true });
  });

  test('prompt nodes and generate call the default Bedrock model through its global inference profile, allowed by IAM', async () => {
    expect(DEFAULT_MODEL).toMatch(/^global\./);
    const call = api(plainStack, plainStack.token);
    const models = await call('GET', '/dashboard/models');
    expect((models.body.data as { id: string; default: boolean }[]).map((m) => [m.id, m.default])).toEqual([
      [DEFAULT_MODEL, true],
      ['offline', false],
    ]);

    const run = await (await helloAgent(call, 'Default model')).run();
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      status: 'completed',
      aiMessages: [{ model: `bedrock-converse:${DEFAULT_MODEL}` }],
    });

    const d = await dataset(call, 'staging');
    await uploadProcessed(call, d, 'ferry.txt', 'The ferry leaves the harbour at nine every morning.');
    const kbPath = `/dashboard/agents/${d.agentId}/knowledge/${d.environment}/kb/${d.knowledgeBaseId}`;
    const generated = await call('POST', `${kbPath}/generate`, { query: 'When does the ferry leave?' });
    expect(generated.status).toBe(200);
    expect(generated.body.model).toBe(`bedrock-converse:${DEFAULT_MODEL}`);

    const report = await plainStack.report();
    expect(report.denials).toEqual([]);
    expect(report.bedrock.violations).toEqual([]);
    expect(report.bedrock.requests['Converse 200']).toBe(2);

    // The grant, as IAM evaluates it: the profile in the stack's Region, its model wherever the profile routes
    // (a global profile: any Region, `arn:aws:bedrock:*::…`, whose `*` also matches the Region-less ARN Bedrock
    // checks for global routing; the simulator knows no Region-less resource, so that one is not asked), nothing else.
    const fn = nodeFunctions(plain).find((f) => f.logicalId.startsWith('InvokeWebhookFunction'));
    if (!fn) throw new Error('no webhook function in the template');
    const permissions = new FunctionPermissions(plain.template, fn, new ResourceNames(plain.template));
    const decide = (resource: string) => permissions.decide('bedrock:InvokeModel', resource);
    const model = DEFAULT_MODEL.slice('global.'.length);
    expect(await decide(`arn:aws:bedrock:us-east-1:000000000000:inference-profile/${DEFAULT_MODEL}`)).toBe('Allowed');
    expect(await decide(`arn:aws:bedrock:ap-southeast-2::foundation-model/${model}`)).toBe('Allowed');
    expect(await decide('arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0')).not.toBe('Allowed');
    expect(await decide(`arn:aws:bedrock:us-east-1:000000000000:inference-profile/us.${model}`)).not.toBe('Allowed');
  }, 180_000);
});
