/**
 * The artifacts a deploy uploads, checked from the synthesized cloud assembly (the default variant; run.test.ts checks the knowledgeIndex=dynamodb one): every
 * Node.js function of the template loads from its asset folder on Node 22 in a process of its own with its template
 * environment, reads every variable the template gives it, and its package size is reported.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadHandler, runtimeNodePath, unusedEnvironmentVariables } from '../../lib/stack-check/asset-checks';
import {
  type CloudAssembly,
  nodeFunctions,
  ResourceNames,
  resolvedEnvironment,
  synthesizeCloudAssembly,
  type TemplateFunction,
} from '../../lib/stack-check/cloud-assembly';
import { assetChecks } from '../helpers/stack-assets';

/** The dynamodb variant's assets are checked by run.test.ts, which synthesizes it: one bundling per variant. */
const VARIANTS: Record<string, Record<string, string>> = { default: {} };

let workdir: string;
let nodePath: string;
const assemblies: Record<string, CloudAssembly> = {};

beforeAll(() => {
  workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-assets-'));
  nodePath = runtimeNodePath();
  for (const [name, context] of Object.entries(VARIANTS)) {
    assemblies[name] = synthesizeCloudAssembly(path.join(workdir, name.replace(/\W/g, '-')), context);
  }
}, 300_000);

afterAll(() => {
  fs.rmSync(workdir, { recursive: true, force: true });
  fs.rmSync(path.dirname(nodePath), { recursive: true, force: true });
});

/** A function of `assembly` whose template entry is changed by `edit`, the asset folder shared. */
function edited(fn: TemplateFunction, edit: Partial<TemplateFunction>): TemplateFunction {
  return { ...fn, ...edit };
}

assetChecks(
  'default',
  () => assemblies.default,
  () => nodePath,
);

test('the functions that ingest into Bedrock carry the Bedrock Agent client; the API functions leave the SDK to the runtime', () => {
  const handlerFile = (prefix: string) => {
    const fn = nodeFunctions(assemblies.default).find((f) => f.logicalId.startsWith(prefix));
    if (!fn) throw new Error(`no ${prefix} function in the template`);
    return fs.readFileSync(path.join(fn.assetDirectory, 'index.js'), 'utf8');
  };
  for (const prefix of ['DocumentProcessingProcessorFunction', 'DocumentProcessingWatchdogFunction']) {
    const code = handlerFile(prefix);
    // Bundled: the command's own code (its operation name as the SDK sends it), no require of the package.
    expect([prefix, code.includes('"IngestKnowledgeBaseDocuments"')]).toEqual([prefix, true]);
    expect([prefix, code.includes('require("@aws-sdk/client-bedrock-agent")')]).toEqual([prefix, false]);
    expect([prefix, code.includes('require("@aws-sdk/client-dynamodb")')]).toEqual([prefix, true]);
  }
  const query = handlerFile('QueryKnowledgeBaseFunction');
  expect(query.includes('require("@aws-sdk/client-bedrock-agent-runtime")')).toBe(true);
  expect(query.includes('"IngestKnowledgeBaseDocuments"')).toBe(false);
});

test("an API function's bundle carries its own routes' facts, not the route table", () => {
  const code = (prefix: string) => {
    const fn = nodeFunctions(assemblies.default).find((f) => f.logicalId.startsWith(prefix));
    if (!fn) throw new Error(`no ${prefix} function in the template`);
    return fs.readFileSync(path.join(fn.assetDirectory, 'index.js'), 'utf8');
  };
  // GetMe's file serves four routes, each its own function: each bundle knows all four, and no other route.
  const me = code('GetMeFunction');
  for (const id of ['GetMe', 'AcceptInvitation', 'DeclineInvitation', 'CreateOrganization']) {
    expect([id, me.includes(`"id":"${id}"`)]).toEqual([id, true]);
  }
  expect(me.includes('UploadLink')).toBe(false);
  // A table entry's summary and a route of another function are nowhere in the webhook's bundle.
  const webhook = code('InvokeWebhookFunction');
  expect(webhook.includes('/dashboard/agents/{agentId}/webhooks/{environment}/{triggerName}')).toBe(true);
  expect(webhook.includes('Get a pre-signed URL for a new document')).toBe(false);
  expect(webhook.includes('upload-link')).toBe(false);
});

describe('what the checks catch (on a copy of a function entry)', () => {
  const uploadLink = () => {
    const fn = nodeFunctions(assemblies.default).find((f) => f.logicalId.startsWith('UploadLinkFunction'));
    if (!fn) throw new Error('no UploadLink function in the template');
    return fn;
  };
  const names = () => new ResourceNames(assemblies.default.template);

  test('a handler path typo fails to load, naming the function', async () => {
    const fn = edited(uploadLink(), { handler: 'indx.handler' });
    const result = await loadHandler(fn, resolvedEnvironment(fn, names()), nodePath);
    expect(result.ok).toBe(false);
    expect(result.error).toContain(fn.logicalId);
    expect(result.error).toContain('indx');
  });

  test('a wrong export name fails to load', async () => {
    const fn = edited(uploadLink(), { handler: 'index.main' });
    const result = await loadHandler(fn, resolvedEnvironment(fn, names()), nodePath);
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining('export main is not a function') });
  });

  test('a bundle that needs a package neither bundled nor in the runtime fails to load', async () => {
    const dir = fs.mkdtempSync(path.join(workdir, 'asset-'));
    // Like a bundle built with a package marked external that Lambda's runtime does not have.
    fs.writeFileSync(path.join(dir, 'index.js'), "const z = require('zod'); exports.handler = async () => z;");
    const fn = edited(uploadLink(), { assetDirectory: dir });
    const result = await loadHandler(fn, {}, nodePath);
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining("Cannot find module 'zod'") });
  });

  test('a variable the bundle never reads is reported', () => {
    const fn = edited(uploadLink(), { environment: { ...uploadLink().environment, UPLOAD_URL_TTL_SECOND: '900' } });
    expect(unusedEnvironmentVariables(fn)).toEqual(['UPLOAD_URL_TTL_SECOND']);
  });
});
