/**
 * The local runtime's engines as `npm start` runs them: every engine checks the credentials of its data folder
 * (DATA_DIR/engine-credentials.json, and engines.json for a separate worker, both 0600), s3rver answers only through
 * the SigV4 proxy, and a write the disk cannot take is an S3 error, not the end of the process.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { EnginesFile } from '../../lib/local/data-folder';
import { CREDENTIALS_FILE, LOCAL_REGION, type LocalCredentials } from '../../lib/local/engine-credentials';
import { DOCUMENTS_BUCKET } from '../../lib/local/engines';
import { s3rverXmlParser } from '../../lib/local/s3rver';
import { startService, type TestService } from '../helpers/service';

const FIXED_PAIR = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const MAX_UPLOAD_BYTES = 1024 * 1024;
const mode = (path: string): number => statSync(path).mode & 0o777;

let parent: string;
let dataDir: string;
let service: TestService;
let engines: EnginesFile;
const clients: { destroy(): void }[] = [];

function s3(credentials: LocalCredentials = engines.credentials): S3Client {
  const made = new S3Client({
    endpoint: engines.s3Endpoint,
    forcePathStyle: true,
    region: LOCAL_REGION,
    credentials: { ...credentials },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
  clients.push(made);
  return made;
}

function dynamo(credentials: LocalCredentials): DynamoDBClient {
  const made = new DynamoDBClient({
    endpoint: engines.dynamodbEndpoint,
    region: LOCAL_REGION,
    credentials: { ...credentials },
    maxAttempts: 1,
  });
  clients.push(made);
  return made;
}

function sqs(credentials: LocalCredentials): SQSClient {
  const made = new SQSClient({
    endpoint: engines.sqsEndpoint,
    region: LOCAL_REGION,
    credentials: { ...credentials },
    maxAttempts: 1,
  });
  clients.push(made);
  return made;
}

const failure = (promise: Promise<unknown>): Promise<{ name: string; status?: number }> =>
  promise.then(
    () => ({ name: 'no error' }),
    (error: { name: string; $metadata?: { httpStatusCode?: number } }) => ({
      name: error.name,
      status: error.$metadata?.httpStatusCode,
    }),
  );

const read = async (key: string): Promise<string> => {
  const object = await s3().send(new GetObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: key }));
  return (object.Body as { transformToString(): Promise<string> }).transformToString();
};

beforeAll(async () => {
  parent = mkdtempSync(join(tmpdir(), 'local-engines-'));
  dataDir = join(parent, 'data');
  // Open to everyone, as a folder made under a common umask would be: the runtime makes it owner-only.
  mkdirSync(dataDir, { mode: 0o755 });
  service = await startService({ dataDir, env: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) } });
  engines = JSON.parse(readFileSync(join(dataDir, 'engines.json'), 'utf8')) as EnginesFile;
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await service?.stop();
  rmSync(parent, { recursive: true, force: true });
});

describe('the credentials of a fresh data folder', () => {
  it('are random, and kept owner-only in engine-credentials.json and engines.json, in an owner-only folder', () => {
    expect(engines.credentials.accessKeyId).toMatch(/^LOCAL[0-9A-F]{16}$/);
    expect(engines.credentials).not.toEqual(FIXED_PAIR);
    expect(JSON.parse(readFileSync(join(dataDir, CREDENTIALS_FILE), 'utf8'))).toEqual(engines.credentials);
    expect(mode(join(dataDir, 'engines.json'))).toBe(0o600);
    expect(mode(join(dataDir, CREDENTIALS_FILE))).toBe(0o600);
    expect(mode(dataDir)).toBe(0o700);
    expect(service.engineCredentials).toEqual(engines.credentials);
  });
});

describe('every engine checks them', () => {
  it('S3: a request signed with the old fixed pair S3RVER/S3RVER is refused (403)', async () => {
    await s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'org-a/secret.txt', Body: 'org A only' }));
    const get = new GetObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'org-a/secret.txt' });
    expect(await failure(s3(FIXED_PAIR).send(get))).toEqual({ name: 'InvalidAccessKeyId', status: 403 });
    const put = new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'org-a/secret.txt', Body: 'overwritten' });
    expect(await failure(s3(FIXED_PAIR).send(put))).toEqual({ name: 'InvalidAccessKeyId', status: 403 });
    const url = await getSignedUrl(s3(FIXED_PAIR), get, { expiresIn: 60 });
    expect((await fetch(url)).status).toBe(403);
    expect(await read('org-a/secret.txt')).toBe('org A only');
  });

  it('DynamoDB (dynalite checks no signature itself): refused with the JSON error DynamoDB sends', async () => {
    expect((await dynamo(engines.credentials).send(new ListTablesCommand({}))).TableNames).toContain('tokens');
    expect(await failure(dynamo(FIXED_PAIR).send(new ListTablesCommand({})))).toEqual({
      name: 'UnrecognizedClientException',
      status: 400,
    });
    const wrongSecret = { accessKeyId: engines.credentials.accessKeyId, secretAccessKey: 'x'.repeat(40) };
    expect(await failure(dynamo(wrongSecret).send(new ListTablesCommand({})))).toEqual({
      name: 'InvalidSignatureException',
      status: 400,
    });
    const unsigned = await fetch(engines.dynamodbEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' },
      body: '{}',
    });
    expect(unsigned.status).toBe(400);
    expect(((await unsigned.json()) as { __type: string }).__type).toBe(
      'com.amazon.coral.service#MissingAuthenticationTokenException',
    );
  });

  it('SQS (nor does fauxqs), its inspection routes that list messages included', async () => {
    // The processing queue, the flow runner's and the status webhooks', each with its dead-letter queue.
    expect((await sqs(engines.credentials).send(new ListQueuesCommand({}))).QueueUrls).toHaveLength(6);
    expect(await failure(sqs(FIXED_PAIR).send(new ListQueuesCommand({})))).toEqual({
      name: 'UnrecognizedClientException',
      status: 400,
    });
    for (const path of ['/_fauxqs/queues', '/_fauxqs/queues/processing']) {
      expect((await fetch(`${engines.sqsEndpoint}${path}`)).status).toBe(400);
    }
  });
});

describe('s3rver behind the proxy', () => {
  it('parses and writes its XML (DeleteObjects, ListObjectsV2, NoSuchKey) on fast-xml-parser 4', async () => {
    const keys = ['xml/a.txt', 'xml/b & c.txt', 'xml/<d>.txt'];
    for (const key of keys) await s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: key, Body: key }));
    const listed = await s3().send(new ListObjectsV2Command({ Bucket: DOCUMENTS_BUCKET, Prefix: 'xml/' }));
    expect(listed.Contents?.map((c) => c.Key).sort()).toEqual([...keys].sort());
    const deleted = await s3().send(
      new DeleteObjectsCommand({ Bucket: DOCUMENTS_BUCKET, Delete: { Objects: keys.map((Key) => ({ Key })) } }),
    );
    expect(deleted.Deleted?.map((d) => d.Key).sort()).toEqual([...keys].sort());
    expect(await failure(read('xml/a.txt'))).toEqual({ name: 'NoSuchKey', status: 404 });
    // s3rver 3.7.1 asks for fast-xml-parser 3 (prototype pollution, fixed in 4 only): package.json's overrides
    // install 4.5.7 in its place, and lib/local/s3rver.ts gives s3rver v3's API on it.
    expect(s3rverXmlParser()).toMatch(/fast-xml-parser-v3-compat\.cjs$/);
    const installed = require.resolve('fast-xml-parser/package.json', { paths: [dirname(require.resolve('s3rver'))] });
    expect((JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version).toBe('4.5.7');
  });

  it.each([
    ["'é' × 125 + '.txt' (254 bytes)", `org/kb/doc/${'é'.repeat(125)}.txt`],
    ['245 ASCII characters', `org/kb/doc/${'a'.repeat(241)}.txt`],
    ['a key of 2,004 bytes', `org/kb/doc/${'z'.repeat(1993)}`],
  ])('answers a name of %s 400 KeyTooLongError, and the next request', async (_label, key) => {
    expect(await failure(s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: key, Body: 'x' })))).toEqual({
      name: 'KeyTooLongError',
      status: 400,
    });
    await s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'org/kb/doc/next.txt', Body: 'next' }));
    expect(await read('org/kb/doc/next.txt')).toBe('next');
    expect((await fetch(`${service.baseUrl}/health`)).status).toBe(200);
  });

  it('answers a write the disk cannot take (a folder where the file goes) 500 InternalError, and lives on', async () => {
    // `x/y._S3rver_object/z` makes a folder named like the file that holds the object `x/y`.
    await s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'x/y._S3rver_object/z', Body: 'z' }));
    const blocked = new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'x/y', Body: 'y' });
    expect(await failure(s3().send(blocked))).toEqual({ name: 'InternalError', status: 500 });
    await s3().send(new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'x/after.txt', Body: 'alive' }));
    expect(await read('x/after.txt')).toBe('alive');
    expect((await fetch(`${service.baseUrl}/health`)).status).toBe(200);
  });

  it('refuses a PUT over MAX_UPLOAD_BYTES with EntityTooLarge, storing nothing', async () => {
    const at = new PutObjectCommand({
      Bucket: DOCUMENTS_BUCKET,
      Key: 'big/at.bin',
      Body: Buffer.alloc(MAX_UPLOAD_BYTES),
    });
    await s3().send(at);
    const over = Buffer.alloc(MAX_UPLOAD_BYTES + 1);
    const put = new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'big/over.bin', Body: over });
    expect(await failure(s3().send(put))).toEqual({ name: 'EntityTooLarge', status: 400 });
    expect(await failure(read('big/over.bin'))).toEqual({ name: 'NoSuchKey', status: 404 });
    expect((await read('big/at.bin')).length).toBe(MAX_UPLOAD_BYTES);
  });

  it('keeps nothing of a body that ends short of its signed Content-Length', async () => {
    const url = await getSignedUrl(
      s3(),
      new PutObjectCommand({ Bucket: DOCUMENTS_BUCKET, Key: 'short/nine-of-ten.txt', ContentLength: 10 }),
      { expiresIn: 60, signableHeaders: new Set(['content-length']) },
    );
    const ended = await new Promise<string>((resolve) => {
      const req = httpRequest(url, { method: 'PUT', headers: { 'content-length': '10' } });
      req.on('error', (error) => resolve(error.message));
      req.on('response', (res) => {
        res.resume();
        resolve(`answered ${res.statusCode}`);
      });
      // The tenth byte never comes: the client gives up, as a dropped connection would.
      req.write('012345678', () => setTimeout(() => req.destroy(), 200));
    });
    expect(ended).toBe('socket hang up');
    expect(await failure(read('short/nine-of-ten.txt'))).toEqual({ name: 'NoSuchKey', status: 404 });
    expect(readdirSync(join(dataDir, 's3-incoming'))).toEqual([]);
  });
});
