/**
 * s3rver's bucket and bucket configurations kept in memory (lib/local/s3rver-store.ts, cacheBucketConfiguration):
 * read from disk once, then answered without it, and read again after s3rver's store writes one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from '../../../lib/local/s3rver';
import { cacheBucketConfiguration } from '../../../lib/local/s3rver-store';

const BUCKET = 'cached-bucket';
const CORS = `<CORSConfiguration><CORSRule><AllowedOrigin>https://a.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>`;

interface Store {
  getBucket(bucket: string): Promise<{ name: string } | null>;
  deleteBucket(bucket: string): Promise<unknown>;
  putBucket(bucket: string): Promise<unknown>;
  getSubresource(bucket: string, key: string | undefined, type: string): Promise<{ type: string } | null>;
  putSubresource(bucket: string, key: string | undefined, resource: { type: string }): Promise<void>;
  deleteSubresource(bucket: string, key: string | undefined, type: string): Promise<void>;
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
}

let directory: string;
let s3rver: InstanceType<typeof S3rver>;
let store: Store;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 's3rver-bucket-cache-'));
  s3rver = new S3rver({ silent: true, directory, configureBuckets: [{ name: BUCKET, configs: [CORS] }] });
  cacheBucketConfiguration(s3rver);
  store = (s3rver as unknown as { store: Store }).store;
  await (s3rver as unknown as { configureBuckets(): Promise<void> }).configureBuckets();
});

afterAll(() => rmSync(directory, { recursive: true, force: true }));

it('answers a bucket configuration read before without the disk, and reads it again after a write', async () => {
  const first = await store.getSubresource(BUCKET, undefined, 'cors');
  expect(first?.type).toBe('cors');
  expect(await store.getSubresource(BUCKET, undefined, 'website')).toBeNull();
  // Removed behind the store's back: the kept answers stand (they were not read again).
  rmSync(store.getResourcePath(BUCKET, undefined, 'cors.xml'));
  expect(await store.getSubresource(BUCKET, undefined, 'cors')).toBe(first);

  // A write through the store forgets them: the disk is read again.
  await store.deleteSubresource(BUCKET, undefined, 'website');
  expect(await store.getSubresource(BUCKET, undefined, 'cors')).toBeNull();
  await store.putSubresource(BUCKET, undefined, first as { type: string });
  expect((await store.getSubresource(BUCKET, undefined, 'cors'))?.type).toBe('cors');
});

it('keeps the bucket until it is deleted or made through the store', async () => {
  expect((await store.getBucket(BUCKET))?.name).toBe(BUCKET);
  await store.deleteBucket(BUCKET);
  expect(await store.getBucket(BUCKET)).toBeNull();
  await store.putBucket(BUCKET);
  expect((await store.getBucket(BUCKET))?.name).toBe(BUCKET);
});

it("reads an object's own subresources from the disk every time", async () => {
  const key = 'notes.txt';
  expect(await store.getSubresource(BUCKET, key, 'tagging')).toBeNull();
  const tagging = { type: 'tagging', toXML: () => '<Tagging><TagSet></TagSet></Tagging>' };
  await store.putSubresource(BUCKET, key, tagging);
  rmSync(store.getResourcePath(BUCKET, key, 'tagging.xml'));
  expect(await store.getSubresource(BUCKET, key, 'tagging')).toBeNull();
});
