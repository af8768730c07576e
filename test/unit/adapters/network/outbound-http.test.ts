/**
 * GuardedOutboundHttp against a real HTTP server on 127.0.0.1 that records each request. The guard decides on real
 * addresses: loopback is let through with allowPrivateNetwork or allowedKinds, and host names resolve through an
 * injected lookup that the connection itself then uses.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GuardedOutboundHttp, MAX_OUTBOUND_ANSWER_BYTES } from '#adapters/network/outbound-http';
import type { HostLookup } from '#adapters/network/url-guard';
import { OutboundError, type OutboundRequest } from '#ports/flows';

interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly host: string | undefined;
}

let server: Server;
let port: number;
let base: string;
let recorded: Recorded[];

const json = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
const redirect = (response: ServerResponse, status: number, location: string) =>
  response.writeHead(status, { location }).end();

function answer(request: IncomingMessage, text: string, response: ServerResponse) {
  const url = new URL(request.url ?? '/', base);
  const hops = /^\/redirect\/(\d+)$/.exec(url.pathname);
  if (hops) {
    const left = Number(hops[1]);
    if (left === 0) json(response, 200, { arrived: true });
    else redirect(response, 302, `/redirect/${left - 1}`);
    return;
  }
  switch (url.pathname) {
    case '/echo':
      return json(response, 200, {
        method: request.method,
        contentType: request.headers['content-type'] ?? null,
        authorization: request.headers.authorization ?? null,
        body: text === '' ? null : JSON.parse(text),
      });
    case '/raw':
      return json(response, 200, {
        text,
        contentType: request.headers['content-type'] ?? null,
        contentLength: request.headers['content-length'] ?? null,
        webhookId: request.headers['webhook-id'] ?? null,
      });
    case '/text':
      return response.writeHead(200, { 'content-type': 'text/plain' }).end('plain answer');
    case '/missing':
      return json(response, 404, { error: 'no such thing' });
    case '/stall':
      return; // never answers
    case '/go':
      return redirect(response, Number(url.searchParams.get('status')), url.searchParams.get('to') ?? '/');
    case '/big-text':
      return response
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('x'.repeat(MAX_OUTBOUND_ANSWER_BYTES + 4096));
    case '/big-json':
      return json(response, 200, { padding: 'x'.repeat(MAX_OUTBOUND_ANSWER_BYTES) });
    case '/bad-json':
      return response.writeHead(200, { 'content-type': 'application/json' }).end('internal stack trace, not JSON');
    default:
      return json(response, 500, { error: 'unexpected path' });
  }
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      recorded.push({ method: request.method ?? '', path: request.url ?? '', host: request.headers.host });
      answer(request, Buffer.concat(parts).toString('utf8'), response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

beforeEach(() => {
  recorded = [];
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const privateAllowed = new GuardedOutboundHttp({ allowPrivateNetwork: true });

async function failure(http: GuardedOutboundHttp, request: OutboundRequest): Promise<OutboundError> {
  const error = await http.request(request).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof OutboundError)) throw new Error(`expected an OutboundError, got ${String(error)}`);
  return error;
}

const resolvesTo =
  (table: Record<string, string[]>): HostLookup =>
  async (host) =>
    table[host] ?? [];

describe('GuardedOutboundHttp', () => {
  it('sends the body as JSON with the given headers and parses the JSON answer', async () => {
    const answer = await privateAllowed.request({
      url: `${base}/echo`,
      method: 'POST',
      headers: { Authorization: 'Bearer tool-token' },
      body: { question: 'status?', n: 1 },
    });
    expect(answer).toEqual({
      status: 200,
      body: {
        method: 'POST',
        contentType: 'application/json',
        authorization: 'Bearer tool-token',
        body: { question: 'status?', n: 1 },
      },
    });
  });

  it('sends a serialized body byte for byte (what a signature covers), as JSON with its extra headers', async () => {
    const serializedBody = '{"content":"Grüße 🚀",  "spaced":true}';
    const answer = await privateAllowed.request({
      url: `${base}/raw`,
      method: 'POST',
      headers: { 'webhook-id': 'msg_1' },
      serializedBody,
    });
    expect(answer.body).toEqual({
      text: serializedBody,
      contentType: 'application/json',
      contentLength: String(Buffer.byteLength(serializedBody)),
      webhookId: 'msg_1',
    });
  });

  it('refuses a loopback target for a serialized body as for any other', async () => {
    const error = await failure(new GuardedOutboundHttp({ allowPrivateNetwork: false }), {
      url: `${base}/raw`,
      method: 'POST',
      serializedBody: '{}',
    });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(recorded).toEqual([]);
  });

  it('sends no content-type without a body', async () => {
    const answer = await privateAllowed.request({ url: `${base}/echo`, method: 'GET' });
    expect(answer.body).toMatchObject({ method: 'GET', contentType: null, body: null });
  });

  it('reads a text answer as text', async () => {
    await expect(privateAllowed.request({ url: `${base}/text`, method: 'GET' })).resolves.toEqual({
      status: 200,
      body: 'plain answer',
    });
  });

  it('resolves a non-2xx answer with its status and body', async () => {
    await expect(privateAllowed.request({ url: `${base}/missing`, method: 'DELETE' })).resolves.toEqual({
      status: 404,
      body: { error: 'no such thing' },
    });
  });

  it('fails with OUTBOUND_FAILED when the target does not answer in time', async () => {
    const started = Date.now();
    const error = await failure(privateAllowed, { url: `${base}/stall`, method: 'GET', timeoutMs: 300 });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe(`The request to 127.0.0.1:${port} timed out after 300 ms`);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('fails with OUTBOUND_FAILED and only the error code when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(privateAllowed, { url: `http://127.0.0.1:${closedPort}/`, method: 'POST', body: {} });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe(`The request to 127.0.0.1:${closedPort} failed (ECONNREFUSED)`);
  });

  it('refuses a loopback target before connecting when the private network is not allowed', async () => {
    const error = await failure(new GuardedOutboundHttp({ allowPrivateNetwork: false }), {
      url: `${base}/echo`,
      method: 'POST',
      body: { secret: 'never sent' },
    });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target 127.0.0.1: a loopback address');
    expect(recorded).toEqual([]);
  });

  it('refuses a redirect to the cloud metadata address although the first hop was allowed', async () => {
    const http = new GuardedOutboundHttp({ allowPrivateNetwork: false, allowedKinds: ['loopback'] });
    const metadata = encodeURIComponent('http://169.254.169.254/latest/meta-data/iam/security-credentials/');
    const error = await failure(http, { url: `${base}/go?status=302&to=${metadata}`, method: 'GET' });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target 169.254.169.254: a link-local address');
    expect(recorded.map(({ path }) => path)).toEqual([`/go?status=302&to=${metadata}`]);
  });

  it('follows three redirects and fails on the fourth', async () => {
    await expect(privateAllowed.request({ url: `${base}/redirect/3`, method: 'GET' })).resolves.toEqual({
      status: 200,
      body: { arrived: true },
    });
    recorded = [];
    const error = await failure(privateAllowed, { url: `${base}/redirect/4`, method: 'GET' });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe(`The request to 127.0.0.1:${port} was redirected more than 3 times`);
    expect(recorded).toHaveLength(4);
  });

  it('turns a POST into a GET without body on 303 and keeps it on 307', async () => {
    const seeOther = await privateAllowed.request({ url: `${base}/go?status=303&to=/echo`, method: 'POST', body: [1] });
    expect(seeOther.body).toMatchObject({ method: 'GET', contentType: null, body: null });
    const temporary = await privateAllowed.request({
      url: `${base}/go?status=307&to=/echo`,
      method: 'POST',
      body: [1],
    });
    expect(temporary.body).toMatchObject({ method: 'POST', contentType: 'application/json', body: [1] });
  });

  it('drops the Authorization header on a redirect to another origin', async () => {
    const http = new GuardedOutboundHttp({
      allowPrivateNetwork: true,
      lookup: resolvesTo({ 'other.test': ['127.0.0.1'] }),
    });
    const request = { method: 'GET', headers: { authorization: 'Bearer tool-token' } } as const;
    const sameOrigin = await http.request({ ...request, url: `${base}/go?status=302&to=/echo` });
    expect(sameOrigin.body).toMatchObject({ authorization: 'Bearer tool-token' });
    const to = encodeURIComponent(`http://other.test:${port}/echo`);
    const otherOrigin = await http.request({ ...request, url: `${base}/go?status=302&to=${to}` });
    expect(otherOrigin.body).toMatchObject({ authorization: null });
    expect(recorded.at(-1)?.host).toBe(`other.test:${port}`);
    // A later 303 on the other origin does not bring it back.
    const seeOther = encodeURIComponent(`http://other.test:${port}/go?status=303&to=/echo`);
    const afterSeeOther = await http.request({
      ...request,
      method: 'POST',
      url: `${base}/go?status=307&to=${seeOther}`,
    });
    expect(afterSeeOther.body).toMatchObject({ method: 'GET', authorization: null });
  });

  it('connects to the addresses the guard resolved, not to a fresh answer of the system resolver', async () => {
    const http = new GuardedOutboundHttp({
      allowPrivateNetwork: false,
      allowedKinds: ['loopback'],
      lookup: resolvesTo({ 'tool.test': ['127.0.0.1'] }),
    });
    const answer = await http.request({ url: `http://tool.test:${port}/echo`, method: 'GET' });
    expect(answer.status).toBe(200);
    expect(recorded).toEqual([{ method: 'GET', path: '/echo', host: `tool.test:${port}` }]);
  });

  it('refuses a name that resolves to a public address for the check and to loopback for the connection', async () => {
    const answers = [['93.184.215.14'], ['127.0.0.1']];
    const lookup = jest.fn(async () => answers.shift() ?? ['127.0.0.1']);
    const http = new GuardedOutboundHttp({ allowPrivateNetwork: false, lookup });
    const error = await failure(http, { url: `http://rebind.test:${port}/echo`, method: 'POST', body: {} });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target rebind.test: it resolves to a loopback address');
    expect(lookup).toHaveBeenCalledTimes(2);
    expect(recorded).toEqual([]);
  });

  it('reads at most 1 MB of a text answer', async () => {
    const answer = await privateAllowed.request({ url: `${base}/big-text`, method: 'GET' });
    expect(answer.body).toBe('x'.repeat(MAX_OUTBOUND_ANSWER_BYTES));
  });

  it('fails with OUTBOUND_FAILED on a JSON answer larger than 1 MB', async () => {
    const error = await failure(privateAllowed, { url: `${base}/big-json`, method: 'GET' });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe(
      `The JSON answer of 127.0.0.1:${port} is larger than ${MAX_OUTBOUND_ANSWER_BYTES} bytes`,
    );
  });

  it('fails with OUTBOUND_FAILED on an answer that claims JSON but is not, without echoing it', async () => {
    const error = await failure(privateAllowed, { url: `${base}/bad-json`, method: 'GET' });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe(`The answer of 127.0.0.1:${port} is not valid JSON`);
  });
});
