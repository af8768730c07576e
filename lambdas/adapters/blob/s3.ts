/** BlobStore on S3: pre-signed, write-once PUT URLs, HEAD, streamed downloads and delete. */
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobStore, ObjectHead, PresignedPut, PutConditions } from '#ports/services';

/**
 * The tag an upload URL writes its object with, removed by upload-complete. The bucket's lifecycle rule expires
 * objects that still carry it a day later: uploads nobody completed (lib/constructs/document-storage.ts).
 */
export const PENDING_UPLOAD_TAG = { key: 'upload', value: 'pending' } as const;

export class S3BlobStore implements BlobStore {
  constructor(
    protected readonly client: S3Client,
    protected readonly bucket: string,
  ) {}

  async presignPut(key: string, conditions: PutConditions, expiresInSeconds: number): Promise<PresignedPut> {
    // Content-Type is signed (the presigner leaves it out unless told), so the PUT must carry exactly the
    // requiredHeaders the API returns and an upload cannot change the type the document was announced with.
    // If-None-Match: * is signed too: S3 stores the object only while the key is free and answers a second PUT of
    // the same URL (a replay after upload-complete) 412 PreconditionFailed, so the content cannot change behind the
    // document's back. The pending-upload tag is a signed header (not hoisted into the query): the object carries
    // it from its first byte. A declared size is signed as Content-Length: S3 refuses a body of any other length.
    const tagging = `${PENDING_UPLOAD_TAG.key}=${PENDING_UPLOAD_TAG.value}`;
    const signed = ['content-type', 'if-none-match', 'x-amz-tagging'];
    if (conditions.contentLength !== undefined) signed.push('content-length');
    const url = await getSignedUrl(
      this.client,
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: conditions.contentType,
        IfNoneMatch: '*',
        Tagging: tagging,
        ...(conditions.contentLength !== undefined ? { ContentLength: conditions.contentLength } : {}),
      }),
      {
        expiresIn: expiresInSeconds,
        signableHeaders: new Set(signed),
        unhoistableHeaders: new Set(['x-amz-tagging']),
      },
    );
    return {
      url,
      headers: {
        'Content-Type': conditions.contentType,
        'If-None-Match': '*',
        'x-amz-tagging': tagging,
        ...(conditions.contentLength !== undefined ? { 'Content-Length': String(conditions.contentLength) } : {}),
      },
    };
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
    const read = await this.getWithin(key, Number.POSITIVE_INFINITY);
    return read && 'bytes' in read ? read.bytes : undefined;
  }

  async getWithin(key: string, maxBytes: number): Promise<{ bytes: Buffer } | { tooLarge: number } | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const size = object.ContentLength ?? 0;
      if (size > maxBytes) {
        // Its body is not read: the connection is dropped rather than drained.
        (object.Body as Readable | undefined)?.destroy();
        return { tooLarge: size };
      }
      if (!object.Body) return { bytes: Buffer.alloc(0) };
      return { bytes: Buffer.from(await object.Body.transformToByteArray()) };
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return undefined;
      throw error;
    }
  }

  async markCompleted(key: string): Promise<void> {
    await this.client.send(new PutObjectTaggingCommand({ Bucket: this.bucket, Key: key, Tagging: { TagSet: [] } }));
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
