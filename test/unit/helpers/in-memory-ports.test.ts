/**
 * The in-memory stores keep the conditions their DynamoDB adapters document; the use case tests rely on them, and
 * some conditions are only reached by races those tests cannot stage, so they are checked here directly.
 */
import { reservationRecord } from '#core/knowledge/document';
import type { UploadCompletion, UploadSession } from '#core/knowledge/upload-session';
import { InMemoryBlobStore, InMemoryDocumentStore, InMemoryUploadSessionStore } from '../../helpers/in-memory-ports';

const DATASET = { agentId: 'a', environment: 'development', knowledgeBaseId: 'kb' } as const;
const CONTENT = {
  uploadId: 'up-1',
  objectKey: 'a/development/kb/doc/f.txt',
  fileName: 'f.txt',
  contentType: 'text/plain',
  fileSize: 3,
  updatedAt: '2026-01-01T00:00:01.000Z',
};

function reservation(uploadId: string, reservedUntil: string) {
  return reservationRecord({
    ...DATASET,
    organizationId: 'org',
    documentId: 'doc',
    customDocumentId: null,
    s3Key: CONTENT.objectKey,
    fileName: 'f.txt',
    uploadId,
    reservedUntil,
    contentType: 'text/plain',
    createdAt: '2026-01-01T00:00:00.000Z',
  });
}

describe('InMemoryDocumentStore', () => {
  it('reserves a documentId only while it is free or its reservation expired', async () => {
    const store = new InMemoryDocumentStore();

    expect(await store.reserve(reservation('up-1', '2026-01-01T01:00:00.000Z'), '2026-01-01T00:00:00.000Z')).toBe(true);
    expect(await store.reserve(reservation('up-2', '2026-01-01T02:00:00.000Z'), '2026-01-01T00:59:59.000Z')).toBe(
      false,
    );
    expect(await store.reserve(reservation('up-2', '2026-01-01T02:00:00.000Z'), '2026-01-01T01:00:01.000Z')).toBe(true);
    await store.completeReservation(DATASET, 'doc', { ...CONTENT, uploadId: 'up-2' }, {}, CONTENT.updatedAt);
    expect(await store.reserve(reservation('up-3', '2026-01-01T09:00:00.000Z'), '2026-01-01T08:00:00.000Z')).toBe(
      false,
    );
  });

  it('sets a processing outcome once per upload, only while uploaded', async () => {
    const store = new InMemoryDocumentStore();
    await store.reserve(reservation('up-1', '2026-01-01T01:00:00.000Z'), '2026-01-01T00:00:00.000Z');
    expect(await store.setStatus(DATASET, 'doc', 'up-1', 'ready', null, 't')).toBeUndefined();
    await store.completeReservation(DATASET, 'doc', CONTENT, {}, CONTENT.updatedAt);

    expect(await store.setStatus(DATASET, 'doc', 'up-other', 'ready', null, 't')).toBeUndefined();
    expect(await store.setStatus(DATASET, 'doc', 'up-1', 'failed', { code: 'X', message: 'x' }, 't1')).toMatchObject({
      status: 'failed',
    });
    expect(await store.setStatus(DATASET, 'doc', 'up-1', 'ready', null, 't2')).toBeUndefined();
    expect((await store.get(DATASET, 'doc'))?.status).toBe('failed');
  });

  it('hands out copies: changing a returned record does not change the stored one', async () => {
    const store = new InMemoryDocumentStore();
    await store.reserve(reservation('up-1', '2026-01-01T01:00:00.000Z'), '2026-01-01T00:00:00.000Z');
    const read = (await store.get(DATASET, 'doc')) as { label1: string | null };

    read.label1 = 'changed';

    expect((await store.get(DATASET, 'doc'))?.label1).toBeNull();
  });
});

describe('InMemoryUploadSessionStore', () => {
  it('keeps the first completion and answers it to a later one', async () => {
    const store = new InMemoryUploadSessionStore();
    await store.put({ uploadId: 'up-1', completion: null } as unknown as UploadSession);
    const first = { type: 'document', s3Key: 'k', status: 'uploaded', createdAt: '1', updatedAt: '1' } as const;
    const second: UploadCompletion = { ...first, updatedAt: '2' };

    expect(await store.saveCompletion('up-1', first)).toEqual(first);
    expect(await store.saveCompletion('up-1', second)).toEqual(first);
    expect((await store.get('up-1'))?.completion).toEqual(first);
    await expect(store.put({ uploadId: 'up-1', completion: null } as unknown as UploadSession)).rejects.toThrow();
  });
});

describe('InMemoryBlobStore', () => {
  it('accepts a PUT only to a signed key, of the signed length, while the key is free', async () => {
    const blobs = new InMemoryBlobStore();
    await blobs.presignPut('k', { contentType: 'text/plain', contentLength: 3 }, 60);

    expect(() => blobs.putObject('other', 'abc')).toThrow('No URL was signed');
    expect(() => blobs.putObject('k', 'abcd')).toThrow('SignatureDoesNotMatch');
    blobs.putObject('k', 'abc');
    expect(() => blobs.putObject('k', 'xyz')).toThrow('PreconditionFailed');
    expect(await blobs.head('k')).toEqual({ size: 3, contentType: 'text/plain' });
  });
});
