/**
 * How s3rver stores an object, made safe: the object and its metadata written aside and renamed, so a request cut off
 * or two PUTs of one key never leave a half-written object (s3rver's own store writes in place).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { dirname, join } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type S3rver from './s3rver';

/** What engines.ts uses of s3rver beyond its typed API: its store, and listening on a path. */
export interface S3rverInternals {
  store: S3rverStore;
  httpServer?: Server;
  configureBuckets(): Promise<void>;
  listen(path: string): Promise<Server>;
}

interface S3rverObject {
  bucket: string;
  key: string;
  content: Readable | Buffer;
  metadata: Record<string, unknown>;
}

interface S3rverStore {
  rootDirectory: string;
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, unknown>, md5: string): Promise<void>;
  putObject(object: S3rverObject): Promise<{ size: number; md5: string }>;
  putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    content: Readable,
  ): Promise<{ size: number; md5: string }>;
  deleteObject(bucket: string, key: string): Promise<void>;
  getBucket(bucket: string): Promise<unknown>;
  putBucket(bucket: string): Promise<unknown>;
  deleteBucket(bucket: string): Promise<unknown>;
  getSubresource(bucket: string, key: string | undefined, type: string): Promise<unknown>;
  putSubresource(bucket: string, key: string | undefined, resource: { type: string }): Promise<void>;
  deleteSubresource(bucket: string, key: string | undefined, type: string): Promise<void>;
}

/**
 * Writes `content` to `target` through a file in `incoming`, renamed into place once complete. s3rver's own writes
 * have no error handler on their file stream (a name too long for the disk, a folder in the way: the error ends the
 * process) and leave half an object behind when the request breaks off; here a failure rejects, and leaves nothing.
 */
async function storeAtomically(
  incoming: string,
  target: string,
  content: Readable | Buffer,
): Promise<{ size: number; md5: string }> {
  await mkdir(dirname(target), { recursive: true });
  const temporary = join(incoming, randomUUID());
  const md5 = createHash('md5');
  let size = 0;
  try {
    if (Buffer.isBuffer(content)) {
      md5.update(content);
      size = content.length;
      await writeFile(temporary, content);
    } else {
      const count = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          md5.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      });
      await pipeline(content, count, createWriteStream(temporary));
    }
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return { size, md5: md5.digest('hex') };
}

/**
 * Replaces s3rver's two streaming writes (PutObject, UploadPart) with storeAtomically; `incoming` must be on the
 * file system of s3rver's directory, and not inside it. Also lets deletes race: after removing an object's files,
 * s3rver removes the folders the delete left empty, and of the deletes of one DeleteObjects request in the same
 * folder, all but the first find that folder gone (ENOENT) and the whole request answered 500.
 */
export function storeObjectsSafely(s3: InstanceType<typeof S3rver>, incoming: string): void {
  const { store } = s3 as unknown as S3rverInternals;
  const deleteObject = store.deleteObject.bind(store);
  store.deleteObject = async (bucket, key) => {
    try {
      await deleteObject(bucket, key);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTEMPTY') throw error;
    }
  };
  store.putObject = async (object) => {
    const stored = await storeAtomically(
      incoming,
      store.getResourcePath(object.bucket, object.key, 'object'),
      object.content,
    );
    await store.putMetadata(object.bucket, object.key, object.metadata, stored.md5);
    return stored;
  };
  store.putPart = async (bucket, uploadId, partNumber, content) => {
    const partPath = join(store.getResourcePath(bucket, undefined, 'uploads'), uploadId, String(partNumber));
    const stored = await storeAtomically(incoming, partPath, content);
    await writeFile(`${partPath}.md5`, stored.md5);
    return stored;
  };
}

/**
 * Keeps what s3rver reads of a bucket on every request: the bucket itself (a `stat` of its folder) and its `cors` and
 * `website` configurations (two files read, the second usually absent), which its middleware asks for whatever the
 * request. 500 ms of the engines' 1.8 s in s3rver under the load benchmark (bench/RESULTS.md). Only s3rver's store
 * writes them, through the methods wrapped here, which forget what was kept before and after they write; an object's
 * own subresources (its tagging) are read as before.
 */
export function cacheBucketConfiguration(s3: InstanceType<typeof S3rver>): void {
  const { store } = s3 as unknown as S3rverInternals;
  const kept = new Map<string, Promise<unknown>>();
  const cached = (key: string, read: () => Promise<unknown>): Promise<unknown> => {
    const hit = kept.get(key);
    if (hit) return hit;
    const reading = read();
    kept.set(key, reading);
    // A failed read is not kept. A write empties the map as it starts and as it ends, so a read it overtook is not
    // kept either: what stays was read after the last write ended.
    reading.catch(() => {
      if (kept.get(key) === reading) kept.delete(key);
    });
    return reading;
  };
  const writing =
    <Args extends unknown[], Result>(write: (...args: Args) => Promise<Result>) =>
    async (...args: Args): Promise<Result> => {
      kept.clear();
      try {
        return await write(...args);
      } finally {
        kept.clear();
      }
    };
  const getBucket = store.getBucket.bind(store);
  const getSubresource = store.getSubresource.bind(store);
  store.getBucket = (bucket) => cached(JSON.stringify(['bucket', bucket]), () => getBucket(bucket));
  store.getSubresource = (bucket, key, type) =>
    key === undefined
      ? cached(JSON.stringify(['config', bucket, type]), () => getSubresource(bucket, key, type))
      : getSubresource(bucket, key, type);
  store.putBucket = writing(store.putBucket.bind(store));
  store.deleteBucket = writing(store.deleteBucket.bind(store));
  store.putSubresource = writing(store.putSubresource.bind(store));
  store.deleteSubresource = writing(store.deleteSubresource.bind(store));
}
