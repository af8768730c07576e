/**
 * ArchiveStore on S3: the BlobStore of lambdas/adapters/blob/s3.ts, and the streamed download of an object into a
 * temporary file that a ZIP import reads its archive from. Apart from s3.ts so that only the functions that import
 * archives bundle it (the API functions stay within their budget: scripts/bundle-sizes.ts).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, NoSuchKey, S3ServiceException } from '@aws-sdk/client-s3';
import { type ArchiveStore, type DownloadedObject, ObjectTooLargeError } from '#ports/services';
import { S3BlobStore } from './s3';

export class S3ArchiveStore extends S3BlobStore implements ArchiveStore {
  async download(key: string, maxBytes: number): Promise<DownloadedObject | undefined> {
    let body: Readable;
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      body = object.Body as Readable;
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return undefined;
      throw error;
    }
    const dir = await mkdtemp(join(tmpdir(), 'aps-object-'));
    const remove = () => rm(dir, { recursive: true, force: true });
    const path = join(dir, 'object');
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        done(size > maxBytes ? new ObjectTooLargeError(key, maxBytes) : null, chunk);
      },
    });
    try {
      await pipeline(body, counter, createWriteStream(path));
    } catch (error) {
      await remove();
      throw error;
    }
    return { path, size, remove };
  }
}
