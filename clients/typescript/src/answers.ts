/**
 * The success bodies the client's helpers return, taken from the generated types (src/generated/api.ts) where the
 * OpenAPI document describes them, and otherwise the fields the helpers rely on (as the README's API overview states
 * them). Regenerating the types with body schemas makes each type the document's own; the helpers read only the
 * fields below, so they keep working whatever else the document adds.
 */
import type { paths } from './generated/api';

type JsonOf<R> = R extends { content: { 'application/json': infer Body } } ? Body : never;
type SuccessBody<Operation> = Operation extends { responses: infer R }
  ? JsonOf<R[200 & keyof R]> | JsonOf<R[201 & keyof R]> | JsonOf<R[202 & keyof R]>
  : never;

/** The success body of `method path` as the document describes it, or `Fallback` when it describes none. */
export type SuccessOf<P extends keyof paths, M extends keyof paths[P], Fallback> = [SuccessBody<paths[P][M]>] extends [
  never,
]
  ? Fallback
  : SuccessBody<paths[P][M]>;

export type Environment = 'development' | 'staging' | 'production';

export interface DocumentErrorFields {
  readonly code: string;
  readonly message: string;
}

export interface UploadLinkFields {
  readonly uploadId: string;
  readonly uploadUrl: string;
  readonly expiresIn: number;
  readonly s3Key: string;
  /** Absent for a ZIP import, which names its job instead. */
  readonly documentId?: string;
  readonly zipJobId?: string;
  /** Every header the PUT must send (the URL signs them). */
  readonly requiredHeaders: Record<string, string>;
}

export interface UploadCompletionFields {
  readonly type: 'document' | 'zip_import';
  readonly s3Key: string;
  readonly documentId?: string;
  readonly zipJobId?: string;
  readonly status: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface DocumentFields {
  readonly s3Key: string;
  readonly documentId: string;
  readonly customDocumentId: string | null;
  readonly fileName: string;
  readonly status: 'uploaded' | 'ready' | 'failed';
  readonly contentType: string;
  readonly fileSize: number | null;
  readonly label1: string | null;
  readonly label2: string | null;
  readonly customMeta1: string | null;
  readonly customMeta2: string | null;
  readonly customMeta3: string | null;
  readonly customMeta4: string | null;
  /** `{ code, message }` when `failed`, else null. */
  readonly error: DocumentErrorFields | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type UploadLink = SuccessOf<'/api/v1/knowledge/documents/upload-link', 'post', UploadLinkFields>;
export type UploadCompletion = SuccessOf<'/api/v1/knowledge/documents/upload-complete', 'post', UploadCompletionFields>;
export type KnowledgeDocument = SuccessOf<'/api/v1/knowledge/documents', 'get', DocumentFields>;
