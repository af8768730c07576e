import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { type S3SignatureProxy, startS3SignatureProxy } from '../../../lib/local/s3-signature-proxy';
import S3rver from '../../../lib/local/s3rver';
import { storeObjectsSafely } from '../../../lib/local/s3rver-store';
import { verifySigV4 } from '../../../lib/local/sigv4-verifier';

const BUCKET = 'docs';
// Not s3rver's own pair: the proxy verifies these and hands requests on under s3rver's key id.
const CREDENTIALS = {
  accessKeyId: 'LOCAL0123456789ABCDEF',
  secretAccessKey: 'a-secret-of-this-data-folder-only-000000',
};
const REGION = 'us-east-1';

let directory: string;
let s3rver: InstanceType<typeof S3rver>;
let s3rverAddress: AddressInfo;
let proxy: S3SignatureProxy;
let clockOffsetMs = 0;
const clients: S3Client[] = [];

function client(credentials = CREDENTIALS): S3Client {
  const created = new S3Client({
    endpoint: proxy.url,
    forcePathStyle: true,
    region: REGION,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
  clients.push(created);
  return created;
}

/**
 * A pre-signed PUT whose Content-Type is signed. @aws-sdk/s3-request-presigner adds content-type to its unsignable
 * headers unless it is named in signableHeaders: without that, X-Amz-SignedHeaders is just `host`.
 */
function presignPut(key: string, expiresIn = 60): Promise<string> {
  return getSignedUrl(client(), new PutObjectCommand({ Bucket: BUCKET, Key: key, ContentType: 'text/plain' }), {
    expiresIn,
    signableHeaders: new Set(['content-type']),
  });
}

async function getBytes(key: string): Promise<Buffer> {
  const out = await client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

/** The Code and Message of an S3 XML error body. */
async function s3Error(response: Response): Promise<{ status: number; code?: string; message?: string; type: string }> {
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1],
    message: /<Message>([^<]*)<\/Message>/.exec(text)?.[1],
  };
}

const put = (url: string, body: string | Uint8Array, contentType = 'text/plain'): Promise<Response> =>
  fetch(url, { method: 'PUT', body, headers: { 'content-type': contentType } });

const sdkError = (promise: Promise<unknown>): Promise<{ name: string; status?: number }> =>
  promise.then(
    () => ({ name: 'no error' }),
    (error: { name: string; $metadata?: { httpStatusCode?: number } }) => ({
      name: error.name,
      status: error.$metadata?.httpStatusCode,
    }),
  );

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 's3-signature-proxy-'));
  s3rver = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: join(directory, 's3'),
    configureBuckets: [{ name: BUCKET }],
  });
  // As the local runtime composes it: a body cut off before its end leaves nothing (engines.ts).
  mkdirSync(join(directory, 'incoming'));
  storeObjectsSafely(s3rver, join(directory, 'incoming'));
  s3rverAddress = await s3rver.run();
  proxy = await startS3SignatureProxy({
    upstream: `http://127.0.0.1:${s3rverAddress.port}`,
    credentials: CREDENTIALS,
    region: REGION,
    now: () => new Date(Date.now() + clockOffsetMs),
  });
});

afterEach(() => {
  clockOffsetMs = 0;
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await proxy?.close();
  await s3rver?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('pre-signed URLs through the proxy', () => {
  it('accepts a pre-signed PUT, and the SDK (header auth) reads the object back', async () => {
    const url = await presignPut('notes/hello.txt');
    const response = await put(url, 'hello, world');
    expect(response.status).toBe(200);
    expect((await getBytes('notes/hello.txt')).toString()).toBe('hello, world');
  });

  it('rejects a changed signature', async () => {
    const url = new URL(await presignPut('notes/tampered.txt'));
    const signature = url.searchParams.get('X-Amz-Signature') ?? '';
    url.searchParams.set('X-Amz-Signature', (signature[0] === '0' ? '1' : '0') + signature.slice(1));
    const error = await s3Error(await put(url.toString(), 'x'));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch', type: 'application/xml' });
  });

  it('rejects another key in the path', async () => {
    const url = new URL(await presignPut('notes/allowed.txt'));
    url.pathname = url.pathname.replace('allowed', 'forbidden');
    const error = await s3Error(await put(url.toString(), 'x'));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    const missing = await sdkError(getBytes('notes/forbidden.txt'));
    expect(missing.name).toBe('NoSuchKey');
  });

  it('rejects another content-type than the signed one', async () => {
    const url = await presignPut('notes/typed.txt');
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host');
    const error = await s3Error(await put(url, '<p>x</p>', 'text/html'));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
  });

  it('does not hold the content-type to a URL that did not sign it (the presigner default)', async () => {
    const url = await getSignedUrl(
      client(),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'notes/unsigned-type.txt', ContentType: 'text/plain' }),
      { expiresIn: 60 },
    );
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect((await put(url, '<p>x</p>', 'text/html')).status).toBe(200);
  });

  it('rejects an altered X-Amz-Expires', async () => {
    const url = new URL(await presignPut('notes/longer.txt'));
    url.searchParams.set('X-Amz-Expires', '3600');
    const error = await s3Error(await put(url.toString(), 'x'));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
  });

  it('rejects an X-Amz-Expires over the maximum', async () => {
    const url = await presignPut('notes/too-long.txt', 604800);
    expect((await put(url, 'x')).status).toBe(200);
    const url2 = new URL(url);
    url2.searchParams.set('X-Amz-Expires', '604801');
    const error = await s3Error(await put(url2.toString(), 'x'));
    expect(error).toMatchObject({ status: 403, code: 'AuthorizationQueryParametersError' });
  });

  it('rejects an expired URL', async () => {
    const url = await presignPut('notes/late.txt', 60);
    clockOffsetMs = 61_000;
    const error = await s3Error(await put(url, 'x'));
    expect(error).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(error.message).toMatch(/expired/);
  });

  it('rejects a URL signed more than 15 minutes in the future', async () => {
    const url = await presignPut('notes/early.txt', 3600);
    clockOffsetMs = -16 * 60_000;
    const error = await s3Error(await put(url, 'x'));
    expect(error).toMatchObject({ status: 403, code: 'AccessDenied' });
  });

  it('rejects a credential scope for another region', async () => {
    const other = new S3Client({
      endpoint: proxy.url,
      forcePathStyle: true,
      region: 'eu-west-1',
      credentials: CREDENTIALS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    clients.push(other);
    const url = await getSignedUrl(other, new PutObjectCommand({ Bucket: BUCKET, Key: 'notes/region.txt' }));
    const error = await s3Error(await fetch(url, { method: 'PUT', body: 'x' }));
    expect(error).toMatchObject({ status: 403, code: 'AuthorizationQueryParametersError' });
    expect(error.message).toContain('eu-west-1');
  });

  it('rejects requests without any authentication', async () => {
    const error = await s3Error(await fetch(`${proxy.url}/${BUCKET}/notes/hello.txt`));
    expect(error).toMatchObject({ status: 403, code: 'AccessDenied', type: 'application/xml' });
  });

  it('answers CORS preflight requests unauthenticated, by the bucket rule (test/integration/cors.test.ts)', async () => {
    const response = await fetch(`${proxy.url}/${BUCKET}/notes/hello.txt`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'PUT' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('write-once URLs (If-None-Match: *, S3 conditional writes)', () => {
  /** What S3BlobStore issues: Content-Type and If-None-Match signed. */
  function presignCreate(key: string): Promise<string> {
    return getSignedUrl(
      client(),
      new PutObjectCommand({ Bucket: BUCKET, Key: key, ContentType: 'text/plain', IfNoneMatch: '*' }),
      { expiresIn: 60, signableHeaders: new Set(['content-type', 'if-none-match']) },
    );
  }
  const putOnce = (url: string, body: string, condition = '*'): Promise<Response> =>
    fetch(url, { method: 'PUT', body, headers: { 'content-type': 'text/plain', 'if-none-match': condition } });

  it('stores the first PUT and answers a replay of the same URL 412, keeping the first content', async () => {
    const url = await presignCreate('once/replayed.txt');
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host;if-none-match');
    expect((await putOnce(url, 'first')).status).toBe(200);
    const replay = await s3Error(await putOnce(url, 'second'));
    expect(replay).toMatchObject({ status: 412, code: 'PreconditionFailed', type: 'application/xml' });
    expect((await getBytes('once/replayed.txt')).toString()).toBe('first');
  });

  it('lets exactly one of concurrent PUTs win', async () => {
    const url = await presignCreate('once/raced.txt');
    const bodies = ['a', 'b', 'c', 'd', 'e', 'f'].map((c) => c.repeat(64 * 1024));
    const statuses = await Promise.all(bodies.map(async (body) => (await putOnce(url, body)).status));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(bodies.length - 1);
    expect((await getBytes('once/raced.txt')).toString()).toBe(bodies[statuses.indexOf(200)]);
  });

  it('refuses the PUT without the signed If-None-Match header', async () => {
    const url = await presignCreate('once/unconditional.txt');
    const error = await s3Error(await put(url, 'x'));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect((await sdkError(getBytes('once/unconditional.txt'))).name).toBe('NoSuchKey');
  });

  it('answers 501 NotImplemented for an If-None-Match other than *', async () => {
    const url = await getSignedUrl(
      client(),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'once/etag.txt', ContentType: 'text/plain', IfNoneMatch: '"abc"' }),
      { expiresIn: 60, signableHeaders: new Set(['content-type', 'if-none-match']) },
    );
    const error = await s3Error(await putOnce(url, 'x', '"abc"'));
    expect(error).toMatchObject({ status: 501, code: 'NotImplemented' });
  });

  it('leaves unconditional PUTs free to overwrite, as S3 does', async () => {
    const url = await presignPut('once/overwritable.txt');
    expect((await put(url, 'one')).status).toBe(200);
    expect((await put(url, 'two')).status).toBe(200);
    expect((await getBytes('once/overwritable.txt')).toString()).toBe('two');
  });
});

describe('unsigned x-amz-* headers', () => {
  it('refuses an x-amz-meta-* header the pre-signed URL did not sign, and stores nothing', async () => {
    const url = await presignPut('notes/meta.txt');
    const response = await fetch(url, {
      method: 'PUT',
      body: 'x',
      headers: { 'content-type': 'text/plain', 'x-amz-meta-owner': 'mallory', 'x-amz-acl': 'public-read' },
    });
    const error = await s3Error(response);
    expect(error).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(error.message).toBe(
      'There were headers present in the request which were not signed: x-amz-acl, x-amz-meta-owner',
    );
    expect((await sdkError(getBytes('notes/meta.txt'))).name).toBe('NoSuchKey');
  });

  it('accepts x-amz-meta-* headers that are signed (the SDK signs what it sends)', async () => {
    await client().send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'notes/meta-signed.txt', Body: 'y', Metadata: { owner: 'ops' } }),
    );
    expect((await getBytes('notes/meta-signed.txt')).toString()).toBe('y');
  });
});

describe('SDK requests (header auth) through the proxy', () => {
  it('fails with SignatureDoesNotMatch for a wrong secret key', async () => {
    const wrong = client({ accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: 'not-the-secret' });
    const error = await sdkError(wrong.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'sdk/wrong.txt', Body: 'x' })));
    expect(error).toEqual({ name: 'SignatureDoesNotMatch', status: 403 });
  });

  it('fails with InvalidAccessKeyId for an unknown access key', async () => {
    const unknown = client({ accessKeyId: 'SOMEONE', secretAccessKey: CREDENTIALS.secretAccessKey });
    const error = await sdkError(unknown.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'notes/hello.txt' })));
    expect(error).toEqual({ name: 'InvalidAccessKeyId', status: 403 });
  });

  it("refuses s3rver's own fixed pair, which s3rver itself accepts", async () => {
    const fixed = client({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    const error = await sdkError(fixed.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'sdk/fixed.txt', Body: 'x' })));
    expect(error).toEqual({ name: 'InvalidAccessKeyId', status: 403 });
    expect((await sdkError(getBytes('sdk/fixed.txt'))).name).toBe('NoSuchKey');
  });

  it('rejects a request whose clock is too far off', async () => {
    clockOffsetMs = 20 * 60_000;
    const error = await sdkError(client().send(new GetObjectCommand({ Bucket: BUCKET, Key: 'notes/hello.txt' })));
    expect(error.status).toBe(403);
    // The SDK corrects its clock skew from the Date header of the answer and retries once at most; with one attempt
    // the error surfaces.
    expect(error.name).toBe('RequestTimeTooSkewed');
  });
});

describe.each([
  ['spaces', 'with spaces/a b  c.txt'],
  ['unicode', 'unicodé/日本語 ✓ — ü.txt'],
  ['plus', 'plus/a+b+c.txt'],
  ['reserved characters', "odd/!'()*&$@=;:,?#[]%.txt"],
])('keys with %s', (_label, key) => {
  it('work pre-signed', async () => {
    const url = await presignPut(key);
    expect((await put(url, `pre-signed ${key}`)).status).toBe(200);
    expect((await getBytes(key)).toString()).toBe(`pre-signed ${key}`);
    const get = await getSignedUrl(client(), new GetObjectCommand({ Bucket: BUCKET, Key: key }), { expiresIn: 60 });
    const response = await fetch(get);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(`pre-signed ${key}`);
  });

  it('work with the SDK', async () => {
    await client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `sdk ${key}` }));
    expect((await getBytes(key)).toString()).toBe(`sdk ${key}`);
  });
});

describe('large bodies', () => {
  const body = Buffer.alloc(5 * 1024 * 1024);
  for (let i = 0; i < body.length; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i);
  const digest = createHash('sha256').update(body).digest('hex');

  it('streams a 5 MB pre-signed upload through', async () => {
    const url = await presignPut('big/presigned.bin');
    expect((await put(url, body)).status).toBe(200);
    expect(
      createHash('sha256')
        .update(await getBytes('big/presigned.bin'))
        .digest('hex'),
    ).toBe(digest);
  });

  it('streams a 5 MB chunked upload through (no content-length)', async () => {
    const url = await presignPut('big/chunked.bin');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += 256 * 1024) controller.enqueue(body.subarray(i, i + 256 * 1024));
        controller.close();
      },
    });
    const response = await fetch(url, {
      method: 'PUT',
      body: stream,
      headers: { 'content-type': 'text/plain' },
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(
      createHash('sha256')
        .update(await getBytes('big/chunked.bin'))
        .digest('hex'),
    ).toBe(digest);
  });

  it('streams a 5 MB SDK upload through', async () => {
    await client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'big/sdk.bin', Body: body }));
    expect(
      createHash('sha256')
        .update(await getBytes('big/sdk.bin'))
        .digest('hex'),
    ).toBe(digest);
  });
});

describe('the Host header', () => {
  it('serves a request addressed to another host name path-style (s3rver would take the name for a bucket)', async () => {
    const endpoint = `http://files.internal:${proxy.port}`;
    const named = new S3Client({
      endpoint,
      forcePathStyle: true,
      region: REGION,
      credentials: CREDENTIALS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    clients.push(named);
    const url = new URL(
      await getSignedUrl(named, new PutObjectCommand({ Bucket: BUCKET, Key: 'notes/named-host.txt' }), {
        expiresIn: 60,
      }),
    );
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: proxy.port,
          method: 'PUT',
          path: url.pathname + url.search,
          headers: { host: url.host, 'content-length': '5' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        },
      );
      req.on('error', reject);
      req.end('named');
    });
    expect(status).toBe(200);
    expect((await getBytes('notes/named-host.txt')).toString()).toBe('named');
  });
});

describe('failures around the upstream', () => {
  it('answers 500 InternalError, as S3 would, when s3rver is not reachable', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createNetServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const dead = await startS3SignatureProxy({
      upstream: `http://127.0.0.1:${closed}`,
      credentials: CREDENTIALS,
      region: REGION,
    });
    try {
      const deadClient = new S3Client({
        endpoint: dead.url,
        forcePathStyle: true,
        region: REGION,
        credentials: CREDENTIALS,
        requestChecksumCalculation: 'WHEN_REQUIRED',
      });
      clients.push(deadClient);
      const signed = await getSignedUrl(deadClient, new GetObjectCommand({ Bucket: BUCKET, Key: 'notes/dead.txt' }));
      const error = await s3Error(await fetch(signed));
      expect(error).toMatchObject({ status: 500, code: 'InternalError', type: 'application/xml' });
    } finally {
      await dead.close();
    }
  });

  it('survives a client that aborts an upload half-way', async () => {
    const url = new URL(await presignPut('notes/aborted.bin'));
    await new Promise<void>((resolve) => {
      const req = httpRequest(url, {
        method: 'PUT',
        headers: { 'content-type': 'text/plain', 'content-length': String(1024 * 1024) },
      });
      req.on('error', () => resolve());
      req.write(Buffer.alloc(64 * 1024), () => setTimeout(() => req.destroy(), 50));
    });
    // The proxy still serves requests afterwards.
    const again = await presignPut('notes/after-abort.txt');
    expect((await put(again, 'still here')).status).toBe(200);
    expect((await getBytes('notes/after-abort.txt')).toString()).toBe('still here');
  });
});

/** A PUT sent chunk by chunk over one connection; `declared` sets Content-Length (else the body is chunked). */
function rawPut(
  url: string,
  chunks: Buffer[],
  headers: Record<string, string> = {},
): Promise<{ status?: number; code?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'PUT', headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode, code: /<Code>([^<]*)<\/Code>/.exec(body)?.[1], body }));
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('keys S3 or the disk store cannot hold', () => {
  it.each([
    ['a key over 1,024 UTF-8 bytes (2,004)', `zip/${'n'.repeat(2000)}`, 'KeyTooLongError'],
    ["a 254-byte name ('é' × 125 + '.txt')", `org/agent/${'é'.repeat(125)}.txt`, 'KeyTooLongError'],
    ['a 245-character ASCII name', `org/agent/${'a'.repeat(241)}.txt`, 'KeyTooLongError'],
    ['a folder segment over 255 bytes', `org/${'f'.repeat(256)}/x.txt`, 'KeyTooLongError'],
    ["a '..' segment (the disk store would write outside the bucket)", 'org/../../escaped.txt', 'InvalidArgument'],
  ])('refuses %s with 400, and answers the next request', async (_label, key, code) => {
    const error = await sdkError(client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x' })));
    expect(error).toEqual({ name: code, status: 400 });
    const url = await presignPut('notes/after-refusal.txt');
    expect((await put(url, `after ${code}`)).status).toBe(200);
    expect((await getBytes('notes/after-refusal.txt')).toString()).toBe(`after ${code}`);
  });

  it("answers S3's XML body, with the key's size", async () => {
    const key = `zip/${'n'.repeat(2000)}`;
    const url = await getSignedUrl(client(), new PutObjectCommand({ Bucket: BUCKET, Key: key }), { expiresIn: 60 });
    const response = await fetch(url, { method: 'PUT', body: 'x' });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(text).toContain('<Code>KeyTooLongError</Code><Message>Your key is too long</Message>');
    expect(text).toContain('<Size>2004</Size><MaxSizeAllowed>1024</MaxSizeAllowed>');
  });

  it('stores the longest name the disk store can hold (233 bytes) and a 1,024-byte key of short segments', async () => {
    const longest = `org/${'é'.repeat(114)}.txt`; // 228 + 4 bytes in the last segment
    const deep = Array.from({ length: 128 }, (_, i) => `s${String(i).padStart(6, '0')}`).join('/'); // 1,023 bytes
    for (const key of [longest, `${deep}x`]) {
      await client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key.slice(0, 10) }));
      expect((await getBytes(key)).toString()).toBe(key.slice(0, 10));
    }
  });
});

describe('the size of what one request may store', () => {
  const LIMIT = 64 * 1024;
  let capped: S3SignatureProxy;
  let cappedClient: S3Client;

  beforeAll(async () => {
    capped = await startS3SignatureProxy({
      upstream: `http://127.0.0.1:${s3rverAddress.port}`,
      credentials: CREDENTIALS,
      region: REGION,
      maxUploadBytes: LIMIT,
    });
    cappedClient = new S3Client({
      endpoint: capped.url,
      forcePathStyle: true,
      region: REGION,
      credentials: CREDENTIALS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      maxAttempts: 1,
    });
    clients.push(cappedClient);
  });
  afterAll(() => capped?.close());

  const presignCapped = (key: string): Promise<string> =>
    getSignedUrl(cappedClient, new PutObjectCommand({ Bucket: BUCKET, Key: key }), { expiresIn: 60 });

  it('stores a body of exactly the limit', async () => {
    const response = await rawPut(await presignCapped('capped/exact.bin'), [Buffer.alloc(LIMIT, 1)]);
    expect(response.status).toBe(200);
    expect((await getBytes('capped/exact.bin')).length).toBe(LIMIT);
  });

  it('refuses a chunked body that passes the limit while streaming (no Content-Length to trust), storing nothing', async () => {
    const chunks = Array.from({ length: 8 }, () => Buffer.alloc(16 * 1024, 2)); // 128 KiB in 16 KiB chunks
    const response = await rawPut(await presignCapped('capped/streamed.bin'), chunks);
    expect(response).toMatchObject({ status: 400, code: 'EntityTooLarge' });
    expect(response.body).toContain(`<MaxSizeAllowed>${LIMIT}</MaxSizeAllowed>`);
    expect((await sdkError(getBytes('capped/streamed.bin'))).name).toBe('NoSuchKey');
  });

  it('refuses a declared Content-Length over the limit before reading the body', async () => {
    const response = await rawPut(await presignCapped('capped/declared.bin'), [Buffer.alloc(LIMIT + 1, 3)], {
      'content-length': String(LIMIT + 1),
    });
    expect(response).toMatchObject({ status: 400, code: 'EntityTooLarge' });
    expect((await sdkError(getBytes('capped/declared.bin'))).name).toBe('NoSuchKey');
  });

  it('keeps the object a refused overwrite would have replaced', async () => {
    expect((await rawPut(await presignCapped('capped/kept.bin'), [Buffer.from('first')])).status).toBe(200);
    const chunks = Array.from({ length: 8 }, () => Buffer.alloc(16 * 1024, 4));
    expect((await rawPut(await presignCapped('capped/kept.bin'), chunks)).status).toBe(400);
    expect((await getBytes('capped/kept.bin')).toString()).toBe('first');
  });
});

describe('a pre-signed URL that signs content-length', () => {
  /** What upload-link issues when the declared size is signed into the URL. */
  const presignSized = (key: string, size: number): Promise<string> =>
    getSignedUrl(client(), new PutObjectCommand({ Bucket: BUCKET, Key: key, ContentLength: size }), {
      expiresIn: 60,
      signableHeaders: new Set(['content-length']),
    });

  it('stores a body of the signed length', async () => {
    const url = await presignSized('sized/ten.txt', 10);
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host');
    expect((await fetch(url, { method: 'PUT', body: '0123456789' })).status).toBe(200);
    expect((await getBytes('sized/ten.txt')).toString()).toBe('0123456789');
  });

  it('refuses 11 bytes on a URL signed for 10 (SignatureDoesNotMatch), storing nothing', async () => {
    const url = await presignSized('sized/eleven.txt', 10);
    const error = await s3Error(await fetch(url, { method: 'PUT', body: '0123456789X' }));
    expect(error).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect((await sdkError(getBytes('sized/eleven.txt'))).name).toBe('NoSuchKey');
  });

  it('refuses the body sent without Content-Length (chunked): the signed header is missing', async () => {
    const url = await presignSized('sized/chunked.txt', 10);
    const response = await rawPut(url, [Buffer.from('01234'), Buffer.from('56789')]);
    expect(response).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect(response.body).toContain('Signed header missing: content-length');
    expect((await sdkError(getBytes('sized/chunked.txt'))).name).toBe('NoSuchKey');
  });
});

describe('verifySigV4 against AWS published examples', () => {
  it('checks the S3 pre-signed URL example of the S3 API reference', () => {
    const credentials = {
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    };
    const query =
      'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
      '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
      '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
    const req = { method: 'GET', path: '/test.txt', query, headers: { host: 'examplebucket.s3.amazonaws.com' } };
    const opts = { credentials, region: 'us-east-1', now: new Date('2013-05-24T01:00:00Z') };
    expect(verifySigV4(req, opts)).toEqual({ ok: true });
    expect(verifySigV4({ ...req, path: '/test2.txt' }, opts)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(req, { ...opts, now: new Date('2013-05-25T00:00:01Z') })).toMatchObject({
      ok: false,
      code: 'AccessDenied',
      message: 'Request has expired',
    });
  });

  it('checks the get-vanilla case of the SigV4 test suite', () => {
    const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
    const req = {
      method: 'GET',
      path: '/',
      query: '',
      headers: {
        host: 'example.amazonaws.com',
        'x-amz-date': '20150830T123600Z',
        // Not signed in this case; the hash of the empty body, which the test suite uses as the payload hash.
        'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
          'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
      },
    };
    const opts = { credentials, region: 'us-east-1', service: 'service', now: new Date('2015-08-30T12:36:00Z') };
    expect(verifySigV4(req, opts)).toEqual({ ok: true });
    expect(verifySigV4({ ...req, query: 'a=b' }, opts)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifySigV4(req, { ...opts, now: new Date('2015-08-30T13:00:00Z') })).toMatchObject({
      ok: false,
      code: 'RequestTimeTooSkewed',
    });
  });

  it('requires host to be signed', () => {
    const req = {
      method: 'GET',
      path: '/',
      query:
        `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${CREDENTIALS.accessKeyId}%2F20240101%2Fus-east-1%2Fs3%2Faws4_request` +
        '&X-Amz-Date=20240101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=content-type&X-Amz-Signature=00',
      headers: { host: 'h', 'content-type': 'text/plain' },
    };
    expect(
      verifySigV4(req, { credentials: CREDENTIALS, region: REGION, now: new Date('2024-01-01T00:00:10Z') }),
    ).toMatchObject({
      ok: false,
      code: 'AccessDenied',
    });
  });
});
