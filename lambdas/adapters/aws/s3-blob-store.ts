/** BlobStore on S3: pre-signed, write-once PUT URLs, HEAD and delete. */
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobStore, ObjectHead, PresignedPut } from '../../ports/services';

export class S3BlobStore implements BlobStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async presignPut(key: string, headers: { contentType: string }, expiresInSeconds: number): Promise<PresignedPut> {
    // Content-Type is signed (the presigner leaves it out unless told), so the PUT must carry exactly the
    // requiredHeaders the API returns and an upload cannot change the type the document was announced with.
    // If-None-Match: * is signed too: S3 stores the object only while the key is free and answers a second PUT of
    // the same URL (a replay after upload-complete) 412 PreconditionFailed, so the content cannot change behind the
    // document's back.
    const url = await getSignedUrl(
      this.client,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: headers.contentType, IfNoneMatch: '*' }),
      { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type', 'if-none-match']) },
    );
    return { url, headers: { 'Content-Type': headers.contentType, 'If-None-Match': '*' } };
  }

  async head(key: string): Promise<ObjectHead | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: head.ContentLength ?? 0, contentType: head.ContentType ?? null };
    } catch (error) {
      if (error instanceof NotFound) return undefined;
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return undefined;
      throw error;
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!object.Body) return Buffer.alloc(0);
      return Buffer.from(await object.Body.transformToByteArray());
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return undefined;
      throw error;
    }
  }

  async put(key: string, bytes: Buffer, contentType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentType: contentType }),
    );
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += 1000) {
      const batch = keys.slice(start, start + 1000);
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      if (result.Errors?.length) {
        const first = result.Errors[0];
        throw new Error(`S3 could not delete ${result.Errors.length} object(s), first ${first.Key}: ${first.Code}`);
      }
    }
  }
}
