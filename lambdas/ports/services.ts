/** Non-persistence ports: object storage, the processing queue, time and identifiers. */

export interface ObjectHead {
  readonly size: number;
  readonly contentType: string | null;
}

export interface BlobStore {
  /** A URL that accepts one PUT of the object with exactly these headers until it expires. */
  presignPut(key: string, headers: { contentType: string }, expiresInSeconds: number): Promise<string>;
  head(key: string): Promise<ObjectHead | undefined>;
  /** Deletes the objects; missing ones are not an error. */
  delete(keys: readonly string[]): Promise<void>;
}

/** Work for the processing pipeline. S3 object-created events arrive on the same queue in S3's own shape. */
export type ProcessingMessage =
  | {
      readonly kind: 'process-document';
      readonly agentId: string;
      readonly environment: string;
      readonly knowledgeBaseId: string;
      readonly documentId: string;
      readonly uploadId: string;
    }
  | {
      readonly kind: 'process-zip';
      readonly agentId: string;
      readonly environment: string;
      readonly knowledgeBaseId: string;
      readonly zipJobId: string;
      readonly uploadId: string;
    };

export interface ProcessingQueue {
  send(message: ProcessingMessage): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export interface IdGenerator {
  uuid(): string;
}
