/** Non-persistence ports: object storage, the processing queue, time and identifiers. */
import type { ChunkGeneration } from '#core/knowledge/document';
import type { Environment } from '#core/knowledge/fields';

export interface ObjectHead {
  readonly size: number;
  readonly contentType: string | null;
}

/** A pre-signed PUT: the URL, and the headers the PUT must carry exactly as given (they are signed). */
export interface PresignedPut {
  readonly url: string;
  readonly headers: Record<string, string>;
}

/** What `presignPut` signs into the URL besides the key. */
export interface PutConditions {
  readonly contentType: string;
  /** The exact size in bytes the upload must have, when the caller declared it: S3 refuses any other length. */
  readonly contentLength?: number;
}

/** An object copied to a local temporary file, for readers that need random access (a ZIP's central directory). */
export interface DownloadedObject {
  readonly path: string;
  readonly size: number;
  /** Deletes the temporary file. */
  remove(): Promise<void>;
}

/** The object is larger than the caller allowed: the copy stopped there and was deleted. */
export class ObjectTooLargeError extends Error {
  constructor(
    readonly key: string,
    readonly maxBytes: number,
  ) {
    super(`Object ${key} is larger than ${maxBytes} bytes`);
    this.name = 'ObjectTooLargeError';
  }
}

export interface BlobStore {
  /**
   * A URL that accepts one PUT of the object with exactly these headers until it expires. It creates the object only
   * while the key is free (S3 conditional write, `If-None-Match: *`): once the upload arrived, the same URL cannot
   * replace it, so what upload-complete records and processing indexes is what was uploaded first. The object is
   * tagged as a pending upload until `markCompleted`: a lifecycle rule removes the ones never completed.
   */
  presignPut(key: string, conditions: PutConditions, expiresInSeconds: number): Promise<PresignedPut>;
  head(key: string): Promise<ObjectHead | undefined>;
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Buffer | undefined>;
  /**
   * The object's bytes unless it is larger than `maxBytes` (then its size, as the answer declares it, and no byte of
   * its body read), or undefined when it does not exist: one request where `head` then `get` are two. A store without
   * it is read with `head` then `get`.
   */
  getWithin?(key: string, maxBytes: number): Promise<{ bytes: Buffer } | { tooLarge: number } | undefined>;
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The upload of `key` was completed: it is no longer a pending upload for the lifecycle rule. */
  markCompleted(key: string): Promise<void>;
  /** Deletes the objects; missing ones are not an error. */
  delete(keys: readonly string[]): Promise<void>;
}

/** A BlobStore that can also stream an object into a temporary file: what a ZIP import reads its archive with. */
export interface ArchiveStore extends BlobStore {
  /**
   * Streams the object into a temporary file, counting the bytes as they arrive (never trusting a declared size):
   * past `maxBytes` it stops and throws ObjectTooLargeError. Undefined when the object does not exist.
   */
  download(key: string, maxBytes: number): Promise<DownloadedObject | undefined>;
}

/** The dataset and document a message is about. */
interface DocumentMessage {
  readonly agentId: string;
  readonly environment: Environment;
  readonly knowledgeBaseId: string;
  readonly documentId: string;
}

/** Work for the processing pipeline. S3 object-created events arrive on the same queue in S3's own shape. */
export type ProcessingMessage =
  /** Extract, chunk, embed and index the content of upload `uploadId`. */
  | (DocumentMessage & { readonly kind: 'process-document'; readonly uploadId: string })
  /** The chunks of upload `uploadId` were handed to an asynchronous index: check they are retrievable. */
  | (DocumentMessage & { readonly kind: 'confirm-indexed'; readonly uploadId: string; readonly attempt: number })
  /** Labels or custom metadata changed: set them on the indexed chunks. */
  | (DocumentMessage & { readonly kind: 'sync-metadata' })
  /**
   * The document was deleted: remove its chunks. `indexedChunks` is what its record knew of them (absent in a message
   * queued before it was kept, or for a record that knew nothing: the index finds them itself).
   */
  | (DocumentMessage & { readonly kind: 'delete-document'; readonly indexedChunks?: readonly ChunkGeneration[] })
  /**
   * One page of the deletion of a knowledge base (`deleting`) in every environment: documents, their objects and
   * chunks, then ZIP jobs and the row. Each page queues the next.
   */
  | {
      readonly kind: 'delete-knowledge-base';
      readonly agentId: string;
      readonly knowledgeBaseId: string;
      readonly page: number;
    }
  /**
   * One page of the reindex of a knowledge base (its `reindex` job): the `ready` documents of the page get their
   * chunks written again from their stored objects. Each page queues the next.
   */
  | {
      readonly kind: 'reindex-knowledge-base';
      readonly agentId: string;
      readonly knowledgeBaseId: string;
      readonly page: number;
    }
  /**
   * One page of the deletion of an agent (`deleting`): its definitions, retrieval configurations, knowledge bases
   * (each by its own job) and sessions, then its row. Each page queues the next.
   */
  | {
      readonly kind: 'delete-agent';
      readonly organizationId: string;
      readonly agentId: string;
      readonly page: number;
    }
  /**
   * Whether ZIP import `zipJobId` has completed, asked again once the index of unfinished documents has caught up with
   * the last ones that finished (its status webhook, core/webhooks/publish.ts).
   */
  | {
      readonly kind: 'check-zip-completion';
      readonly agentId: string;
      readonly environment: Environment;
      readonly knowledgeBaseId: string;
      readonly zipJobId: string;
    }
  | {
      readonly kind: 'process-zip';
      readonly agentId: string;
      readonly environment: Environment;
      readonly knowledgeBaseId: string;
      readonly zipJobId: string;
      readonly uploadId: string;
    };

export interface ProcessingQueue {
  /** Queues a message; `delaySeconds` (at most 900) holds it back. */
  send(message: ProcessingMessage, options?: { delaySeconds?: number }): Promise<void>;
  /** Queues every message (SQS: 10 a request), in no particular order among them. */
  sendAll(messages: readonly ProcessingMessage[]): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export interface IdGenerator {
  uuid(): string;
}
