/**
 * The AWS path of a browser task, short of AWS: the flow functions' driver (BROWSER_DRIVER=lambda) signs a Lambda
 * Invoke with Signature Version 4; a stand-in for Lambda's Invoke endpoint on 127.0.0.1 checks that signature with
 * the local S3 endpoint's independent verifier (service `lambda`) and the payload's hash, then runs the BrowserTask
 * function's handler in this process, which runs the task in the real Chromium on a real site, its model the
 * scripted OpenAI-compatible server (MODEL_BASE_URL, as the flow functions' configuration gives it). Lambda's own
 * refusals and a crashed function are answered the way Lambda answers them.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { LambdaBrowserDriver } from '#adapters/browser/lambda-driver';
import { lambdaBrowserDriverFromEnv } from '#composition/clients/lambda';
import { closeBrowser, handler } from '#handlers/browser/browser-task';
import { verifySigV4 } from '../../../../lib/local/sigv4-verifier';
import { type BrowserSite, startBrowserSite } from '../../../helpers/browser-site';
import {
  type ChatRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../../helpers/scripted-model-server';

const REGION = 'eu-west-1';
const FUNCTION = 'agent-platform-BrowserTaskFunction-Ab12';
const CREDENTIALS = {
  accessKeyId: 'AKIDTEST',
  secretAccessKey: 'secret-of-the-flow-function',
  sessionToken: 'token-1',
};

interface Invocation {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly payload: unknown;
}

type Mode = 'handler' | 'crash' | 'throttle';

let site: BrowserSite;
let model: ScriptedModelServer;
let lambda: Server;
let endpoint: string;
let mode: Mode = 'handler';
const invocations: Invocation[] = [];
const saved = { ...process.env };

/** Lambda's Invoke API, as far as a synchronous invocation goes. */
async function invokeEndpoint(
  request: IncomingMessage,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  const [path, query = ''] = (request.url ?? '').split('?');
  const signature = verifySigV4(
    { method: request.method ?? '', path, query, headers: request.headers },
    { credentials: CREDENTIALS, region: REGION, service: 'lambda' },
  );
  const hashed = createHash('sha256').update(body).digest('hex') === request.headers['x-amz-content-sha256'];
  if (!signature.ok || !hashed || request.headers['x-amz-security-token'] !== CREDENTIALS.sessionToken) {
    const type = signature.ok ? 'InvalidSignatureException' : signature.code;
    return {
      status: 403,
      headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/` },
      body: '{"message":"denied"}',
    };
  }
  const name = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(path)?.[1];
  if (name !== FUNCTION) return { status: 404, headers: {}, body: '{"Type":"User","message":"Function not found"}' };
  invocations.push({ path, headers: request.headers, payload: JSON.parse(body) });
  if (mode === 'throttle') {
    return {
      status: 429,
      headers: { 'x-amzn-errortype': 'TooManyRequestsException' },
      body: '{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}',
    };
  }
  if (mode === 'crash') {
    return {
      status: 200,
      headers: { 'x-amz-function-error': 'Unhandled' },
      body: JSON.stringify({
        errorType: 'Runtime.ExitError',
        errorMessage: 'RequestId: 1 Error: secret internal detail',
      }),
    };
  }
  return { status: 200, headers: {}, body: JSON.stringify(await handler(JSON.parse(body))) };
}

beforeAll(async () => {
  site = await startBrowserSite();
  model = await startScriptedModelServer();
  // The BrowserTask function's configuration: the flow functions' model, and (for this loopback site) private targets.
  Object.assign(process.env, {
    MODEL_BASE_URL: model.baseUrl,
    MODEL_NAME: 'scripted',
    OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
  });
  lambda = createServer((request, response) => {
    invokeEndpoint(request).then(
      ({ status, headers, body }) =>
        response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body),
      (error: Error) => response.writeHead(500).end(error.message),
    );
  });
  await new Promise<void>((resolve) => lambda.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`;
});

beforeEach(() => {
  mode = 'handler';
  invocations.length = 0;
  site.reset();
});

afterAll(async () => {
  process.env = saved;
  await closeBrowser();
  await model.close();
  await site.close();
  lambda.closeAllConnections();
  await new Promise((resolve) => lambda.close(resolve));
});

const driver = (credentials = CREDENTIALS) =>
  new LambdaBrowserDriver({
    functionName: FUNCTION,
    client: new LambdaClient({ region: REGION, endpoint, credentials, maxAttempts: 1 }),
  });

/** The element refs the model was shown, from the page lines of its question. */
const refOf = (request: ChatRequest, line: RegExp): string => {
  const question = request.messages.at(-1)?.content ?? '';
  const found = question.split('\n').find((l) => line.test(l));
  const ref = /^- ((?:f\d+)?e\d+):/.exec(found ?? '')?.[1];
  if (!ref) throw new Error(`no line ${line} in:\n${question}`);
  return ref;
};

describe('LambdaBrowserDriver and the BrowserTask function', () => {
  it('runs the task in the function: signed invoke, Chromium, the model of the flow configuration', async () => {
    model.script((request, index) => {
      const actions = [
        () => ({ action: 'type', target: refOf(request, /textbox "Name"/), text: 'Grace Hopper' }),
        () => ({ action: 'type', target: refOf(request, /textbox "Email"/), text: 'grace@example.com' }),
        () => ({ action: 'select', target: refOf(request, /combobox "Size"/), value: 'Medium' }),
        () => ({ action: 'click', target: refOf(request, /button "Send order"/) }),
        () => ({ action: 'done', answer: 'The order was received.' }),
      ];
      return { content: `\`\`\`json\n${JSON.stringify(actions[index]())}\n\`\`\`` };
    });
    const context = { system: 'Agent instructions', messages: [{ role: 'user' as const, content: 'Order for Grace' }] };
    const result = await driver().run({ prompt: 'Order a medium router', url: `${site.base}/form`, context });

    expect(site.orders).toEqual([{ name: 'Grace Hopper', email: 'grace@example.com', size: 'm' }]);
    expect(result).toMatchObject({ answer: 'The order was received.', title: 'Order received', status: 200 });
    expect(result.steps.map((s) => [s.action, s.ok])).toEqual([
      ['type', true],
      ['type', true],
      ['select', true],
      ['click', true],
      ['done', true],
    ]);
    expect(invocations).toHaveLength(1);
    expect(invocations[0].payload).toEqual({
      prompt: 'Order a medium router',
      url: `${site.base}/form`,
      context,
    });
    expect(invocations[0].headers['x-amz-invocation-type']).toBe('RequestResponse');
    // The model got the agent's instructions and the conversation, then the task and the page.
    expect(model.requests[0].messages[0]).toMatchObject({ role: 'system' });
    expect(model.requests[0].messages[0].content).toContain('Agent instructions');
    expect(model.requests[0].messages.slice(1, -1)).toEqual([{ role: 'user', content: 'Order for Grace' }]);
    expect(model.requests[0].messages.at(-1)?.content).toContain('Task: Order a medium router');
  });

  it('rethrows the error that ended a task before its first step with its code', async () => {
    const refused = driver().run({ prompt: 'Open it', url: 'ftp://example.com/file' });
    await expect(refused).rejects.toMatchObject({
      code: 'TARGET_REFUSED',
      status: 400,
      message: 'Refused the outbound target: ftp: URLs are not allowed',
    });
    const notConfigured = driver().run({ prompt: 'Open it', url: `${site.base}/form`, model: 'ChatBedrockConverse' });
    await expect(notConfigured).rejects.toMatchObject({ code: 'MODEL_NOT_CONFIGURED', status: 503 });
    expect(invocations).toHaveLength(2);
  });

  it('is refused by Lambda when the signature is not the credentials’ (BROWSER_UNAVAILABLE)', async () => {
    const error = driver({ ...CREDENTIALS, secretAccessKey: 'another secret' }).run({
      prompt: `Open ${site.base}/form`,
    });
    await expect(error).rejects.toMatchObject({
      code: 'BROWSER_UNAVAILABLE',
      message:
        'No browser for this task: the BrowserTask function could not be invoked (HTTP 403 SignatureDoesNotMatch)',
    });
    expect(invocations).toEqual([]);
  });

  it('answers a throttled invoke with BROWSER_UNAVAILABLE and a crashed function with BROWSER_FAILED, without its detail', async () => {
    mode = 'throttle';
    await expect(driver().run({ prompt: `Open ${site.base}/form` })).rejects.toMatchObject({
      code: 'BROWSER_UNAVAILABLE',
      message:
        'No browser for this task: the BrowserTask function could not be invoked (HTTP 429 TooManyRequestsException)',
    });
    mode = 'crash';
    const crashed = await driver()
      .run({ prompt: `Open ${site.base}/form` })
      .catch((error: Error) => error);
    expect(crashed).toMatchObject({
      code: 'BROWSER_FAILED',
      message: 'The BrowserTask function failed (Unhandled: Runtime.ExitError)',
    });
    expect(JSON.stringify(crashed)).not.toContain('secret');
  });

  it('reads BROWSER_TASK_FUNCTION, the region, the endpoint and the credentials from the environment', async () => {
    expect(() => lambdaBrowserDriverFromEnv({ AWS_REGION: REGION })).toThrow('BROWSER_TASK_FUNCTION');
    const fromEnv = lambdaBrowserDriverFromEnv({
      BROWSER_TASK_FUNCTION: FUNCTION,
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL_LAMBDA: endpoint,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: CREDENTIALS.sessionToken,
    });
    await expect(fromEnv.run({ prompt: 'Open it', url: 'ftp://example.com/' })).rejects.toMatchObject({
      code: 'TARGET_REFUSED',
    });
    expect(invocations).toHaveLength(1);
    const withoutCredentials = lambdaBrowserDriverFromEnv({ BROWSER_TASK_FUNCTION: FUNCTION, AWS_REGION: REGION });
    await expect(withoutCredentials.run({ prompt: 'Open it' })).rejects.toMatchObject({ code: 'BROWSER_UNAVAILABLE' });
  });
});

describe('the BrowserTask handler', () => {
  it('answers a request that is not a task with VALIDATION_ERROR naming the field, and runs nothing', async () => {
    const reply = await handler({ prompt: 7, url: `${site.base}/form`, extra: true });
    expect(reply).toMatchObject({ ok: false, error: { status: 400, code: 'VALIDATION_ERROR' } });
    const details = reply.ok ? [] : (reply.error.details ?? []);
    expect(details.map((d) => d.field).sort()).toEqual(['extra', 'prompt']);
    expect(site.requests).toEqual([]);
  });
});

describe('BROWSER_DRIVER in the flow container', () => {
  it('refuses an unknown driver, and with `lambda` invokes the BrowserTask function', async () => {
    const { flowContainer } = await import('#composition/flow-container');
    Object.assign(process.env, {
      BROWSER_DRIVER: 'firefox',
      BROWSER_TASK_FUNCTION: FUNCTION,
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL_LAMBDA: endpoint,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: CREDENTIALS.sessionToken,
    });
    await expect(flowContainer.browser.run({ prompt: 'Open it' })).rejects.toMatchObject({
      code: 'BROWSER_UNAVAILABLE',
      message: 'BROWSER_DRIVER=firefox is not a browser driver: playwright (this process) or lambda',
    });
    process.env.BROWSER_DRIVER = 'lambda';
    try {
      await expect(flowContainer.browser.run({ prompt: 'Open it', url: 'ftp://example.com/' })).rejects.toMatchObject({
        code: 'TARGET_REFUSED',
      });
      expect(invocations.map((i) => i.path)).toEqual([`/2015-03-31/functions/${FUNCTION}/invocations`]);
    } finally {
      await flowContainer.browser.close();
    }
  });
});
