/**
 * What one upload can park in storage (issue 22, "Sizes"): a declared size is signed into the URL, so no other
 * length is stored; a declared size over the limit is refused before any URL exists; and an upload nobody completes
 * is removed from storage once its session ends.
 */
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createDataset, type Dataset, putFile, type UploadLink } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client, startService, type TestService } from '../helpers/service';

const LINK = '/api/v1/knowledge/documents/upload-link';
const COMPLETE = '/api/v1/knowledge/documents/upload-complete';
const MAX_FILE_BYTES = 4096;
const MAX_ARCHIVE_BYTES = 8192;

let service: TestService;
let call: ReturnType<typeof client>;
let dataset: Dataset;

beforeAll(async () => {
  service = await startService({
    env: {
      MAX_FILE_BYTES: String(MAX_FILE_BYTES),
      ZIP_MAX_ARCHIVE_BYTES: String(MAX_ARCHIVE_BYTES),
      UPLOAD_URL_TTL_SECONDS: '3',
      UPLOAD_SESSION_TTL_SECONDS: '4',
      WATCHDOG_INTERVAL_SECONDS: '1',
      ABANDONED_UPLOAD_GRACE_SECONDS: '1',
    },
  });
  call = client(service);
  dataset = await createDataset(call);
});
afterAll(() => service?.stop());

async function link(body: Record<string, unknown>) {
  return call<UploadLink>('POST', LINK, { body: { ...dataset, ...body } });
}

/** Whether the object exists in the local S3, asked with the data folder's own credentials. */
async function stored(key: string): Promise<boolean> {
  const s3 = new S3Client({
    endpoint: /S3 at (http:\/\/[^\s,)]+)/.exec(service.output())?.[1],
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: service.engineCredentials ?? undefined,
  });
  try {
    await s3.send(new HeadObjectCommand({ Bucket: 'documents', Key: key }));
    return true;
  } catch (error) {
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw error;
  }
}

describe('a declared fileSize', () => {
  it('is signed into the URL: the exact length is stored, any other is refused and nothing is stored', async () => {
    const content = 'Hold the power button for five seconds.';
    const declared = await link({ fileName: 'exact.txt', fileSize: Buffer.byteLength(content) });
    expect(declared.status).toBe(200);
    expect(declared.body.requiredHeaders).toEqual({
      'Content-Type': 'text/plain',
      'If-None-Match': '*',
      'x-amz-tagging': 'upload=pending',
      'Content-Length': String(Buffer.byteLength(content)),
    });

    // A client whose HTTP library sets Content-Length from the body it sends, as HTTP clients do.
    const { 'Content-Length': _signed, ...otherHeaders } = declared.body.requiredHeaders;
    const longer = await fetch(declared.body.uploadUrl, {
      method: 'PUT',
      headers: otherHeaders,
      body: `${content} And then some.`,
    });
    expect(longer.status).toBe(403);
    expect(await longer.text()).toContain('SignatureDoesNotMatch');
    expect(await stored(declared.body.s3Key)).toBe(false);

    expect((await putFile(declared.body, content)).status).toBe(200);
    const complete = await call('POST', COMPLETE, { body: { uploadId: declared.body.uploadId } });
    expect(complete.status).toBe(200);
  });

  it.each([
    ['a document', 'big.pdf', MAX_FILE_BYTES, 'document'],
    ['a ZIP archive', 'batch.zip', MAX_ARCHIVE_BYTES, 'ZIP archive'],
  ])('over the limit of %s is 400 fileSize.max at upload-link, before any URL', async (_, fileName, limit, what) => {
    const refused = await link({ fileName, fileSize: limit + 1 });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      success: false,
      error: {
        code: 'VALIDATION_ERROR',
        details: [
          {
            field: 'fileSize',
            rule: 'fileSize.max',
            message: `fileSize must be at most ${limit} bytes, the largest ${what} accepted`,
          },
        ],
      },
    });
    expect(refused.body).not.toHaveProperty('uploadUrl');
    expect((await link({ fileName, fileSize: limit })).status).toBe(200);
  });

  it.each([
    ['zero', 0, 'min'],
    ['a fraction', 1.5, 'type'],
    ['a string', '12', 'type'],
  ])('that is %s is a 400 naming fileSize', async (_, fileSize, rule) => {
    const refused = await link({ fileName: 'a.txt', fileSize });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { details: [{ field: 'fileSize', rule }] } });
  });

  it('may be left out: the URL then signs no length (the processing limit still applies)', async () => {
    const plain = await link({ fileName: 'plain.txt' });
    expect(plain.body.requiredHeaders).not.toHaveProperty('Content-Length');
  });
});

describe('an upload nobody completes', () => {
  it('has its object removed once its session ended; a completed one keeps its object', async () => {
    const abandoned = await link({ fileName: 'abandoned.txt' });
    const completed = await link({ fileName: 'completed.txt' });
    expect((await putFile(abandoned.body, 'never completed')).status).toBe(200);
    expect((await putFile(completed.body, 'completed in time')).status).toBe(200);
    expect((await call('POST', COMPLETE, { body: { uploadId: completed.body.uploadId } })).status).toBe(200);
    expect(await stored(abandoned.body.s3Key)).toBe(true);

    // The session ends 4 s after upload-link; the watchdog looks every second, one second of grace after the end.
    expect(
      await pollUntil(
        () => stored(abandoned.body.s3Key),
        (exists) => !exists,
        30_000,
      ),
    ).toBe(false);
    expect(await stored(completed.body.s3Key)).toBe(true);
    const doc = await call('GET', '/api/v1/knowledge/documents', {
      query: { ...dataset, s3Key: completed.body.s3Key },
    });
    expect(doc.body).toMatchObject({ status: 'ready' });
  });
});
