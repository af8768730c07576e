/**
 * The typed client of the Agent Platform Service: openapi-fetch over the types openapi-typescript generates from the
 * service's own OpenAPI document (`npm run web:types` in the repository writes src/generated/api.ts; a test fails
 * when it is stale), so a path, parameter or body field the API does not have is a type error. Beside the typed
 * `GET`/`POST`/… calls it gives the upload-in-steps flow as one call (uploadDocument: upload-link → PUT to the
 * pre-signed URL → upload-complete, and, if asked, polling until the document is `ready` or `failed`).
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type {
  DocumentFields,
  Environment,
  KnowledgeDocument,
  UploadCompletion,
  UploadCompletionFields,
  UploadLinkFields,
} from './answers';
import { apiErrorOf, storageErrorOf, WaitTimeoutError } from './errors';
import type { paths } from './generated/api';

export type * from './answers';
export { ApiError, type ErrorDetail, WaitTimeoutError } from './errors';
export type { components, operations, paths } from './generated/api';

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:4000` or the API Gateway stage URL (no trailing path). */
  readonly baseUrl: string;
  /** An organization token (`Authorization: Bearer …`) with the scopes of the routes called. */
  readonly token: string;
  /** Another fetch (a proxy's, a test's); the global one by default. */
  readonly fetch?: typeof fetch;
}

/** A knowledge base in one environment: where a document lives. */
export interface DatasetOptions {
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly environment: Environment;
}

/** One document, by its s3Key or its customDocumentId. */
export type DocumentRef = DatasetOptions &
  (
    | { readonly s3Key: string; readonly customDocumentId?: never }
    | { readonly customDocumentId: string; readonly s3Key?: never }
  );

/** Labels and custom metadata: a value sets, null clears (on an update), absent keeps. */
export interface MetadataOptions {
  readonly labels?: { readonly label1?: string | null; readonly label2?: string | null };
  readonly customMeta?: {
    readonly customMeta1?: string | null;
    readonly customMeta2?: string | null;
    readonly customMeta3?: string | null;
    readonly customMeta4?: string | null;
  };
}

export interface WaitOptions {
  /** How long to poll before WaitTimeoutError; default 120 s. */
  readonly timeoutMs?: number;
  /** First pause between two reads, doubling up to 2 s; default 250 ms. */
  readonly intervalMs?: number;
}

export interface UploadOptions extends DatasetOptions, MetadataOptions {
  /** Your own id for the document, unique in its knowledge base and environment (a second upload with it: 409). */
  readonly customDocumentId?: string;
  /** Poll until the document is `ready` or `failed` and answer it; without, answer upload-complete's answer. */
  readonly wait?: boolean | WaitOptions;
}

/** A new version of an existing document's content (the update endpoints). */
export type UpdateOptions = DocumentRef & MetadataOptions & { readonly wait?: boolean | WaitOptions };

/** The bytes of a file: text is sent as UTF-8. */
export type UploadContent = Uint8Array | ArrayBuffer | Blob | string;

/** The content to upload and its file name (the name's extension decides how it is read), or a `File`. */
export type UploadFile =
  | { readonly name: string; readonly content: UploadContent }
  | (Blob & { readonly name: string });

type Waiting = { readonly wait: true | WaitOptions };
type NotWaiting = { readonly wait?: false };

export interface PlatformHelpers {
  /**
   * upload-link → PUT → upload-complete. With `wait`, then polls the document until it is `ready` or `failed` and
   * answers it (a failed one carries `error.code`: `UNSUPPORTED_TYPE`, `EMPTY_DOCUMENT`, `PARSE_ERROR`, …).
   */
  uploadDocument(file: UploadFile, options: UploadOptions & Waiting): Promise<KnowledgeDocument>;
  uploadDocument(file: UploadFile, options: UploadOptions & NotWaiting): Promise<UploadCompletion>;
  uploadDocument(file: UploadFile, options: UploadOptions): Promise<KnowledgeDocument | UploadCompletion>;
  /** The same for new content of an existing document (update/upload-link → PUT → update/upload-complete). */
  updateDocument(file: UploadFile, options: UpdateOptions & Waiting): Promise<KnowledgeDocument>;
  updateDocument(file: UploadFile, options: UpdateOptions & NotWaiting): Promise<UploadCompletion>;
  updateDocument(file: UploadFile, options: UpdateOptions): Promise<KnowledgeDocument | UploadCompletion>;
  /** PUTs the content to an upload link's URL with the headers it signed (the step between link and complete). */
  putUpload(link: UploadLinkFields, content: UploadContent): Promise<void>;
  /** GET /api/v1/knowledge/documents. */
  getDocument(ref: DocumentRef): Promise<KnowledgeDocument>;
  /** Polls the document until it is `ready` or `failed` (an update: until its new content is). */
  waitForDocument(ref: DocumentRef, options?: WaitOptions): Promise<KnowledgeDocument>;
  /** DELETE /api/v1/knowledge/documents. */
  deleteDocument(ref: DocumentRef): Promise<void>;
}

export type PlatformClient = Client<paths> & PlatformHelpers;

/**
 * The success body of a typed call, or its ApiError:
 * `const agents = await unwrap(client.GET('/api/v1/agents/list'))`.
 */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw apiErrorOf(response, error);
  return data as T;
}

/** A client whose every call carries the token. */
export function createClient(options: ClientOptions): PlatformClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const client = createFetchClient<paths>({ baseUrl, fetch: fetchImpl });
  client.use({
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${options.token}`);
      return request;
    },
  });

  async function putUpload(link: UploadLinkFields, content: UploadContent): Promise<void> {
    // fetch sets Content-Length from the body itself: the same value the link signed (the size was declared).
    const headers = Object.fromEntries(
      Object.entries(link.requiredHeaders).filter(([name]) => name.toLowerCase() !== 'content-length'),
    );
    const response = await fetchImpl(link.uploadUrl, { method: 'PUT', headers, body: bodyOf(content) });
    const text = await response.text();
    if (!response.ok) throw storageErrorOf(response, text);
  }

  async function getDocument(ref: DocumentRef): Promise<KnowledgeDocument> {
    return (await unwrap(
      client.GET('/api/v1/knowledge/documents', { params: { query: identify(ref) } }),
    )) as unknown as KnowledgeDocument;
  }

  async function waitForDocument(ref: DocumentRef, wait: WaitOptions = {}): Promise<KnowledgeDocument> {
    const deadline = Date.now() + (wait.timeoutMs ?? 120_000);
    let pause = wait.intervalMs ?? 250;
    for (;;) {
      const document = await getDocument(ref);
      const { status } = document as unknown as DocumentFields;
      if (status === 'ready' || status === 'failed') return document;
      if (Date.now() + pause > deadline) {
        throw new WaitTimeoutError(`the document is still ${status} after ${wait.timeoutMs ?? 120_000} ms`, document);
      }
      await new Promise((done) => setTimeout(done, pause));
      pause = Math.min(pause * 2, 2_000);
    }
  }

  async function finish(
    ref: DocumentRef,
    completion: UploadCompletion,
    wait: boolean | WaitOptions | undefined,
  ): Promise<KnowledgeDocument | UploadCompletion> {
    if (!wait) return completion;
    const { type } = completion as unknown as UploadCompletionFields;
    if (type !== 'document') {
      throw new Error(
        'wait applies to a document; a ZIP import is followed at GET /api/v1/knowledge/zip-jobs/{zipJobId}',
      );
    }
    return waitForDocument(ref, wait === true ? {} : wait);
  }

  async function uploadDocument(
    file: UploadFile,
    upload: UploadOptions,
  ): Promise<KnowledgeDocument | UploadCompletion> {
    const content = await bytesOf(file);
    const dataset = datasetOf(upload);
    const link = (await unwrap(
      client.POST('/api/v1/knowledge/documents/upload-link', {
        body: {
          ...dataset,
          ...metadataOf(upload),
          fileName: file.name,
          fileSize: content.byteLength || undefined,
          ...(upload.customDocumentId !== undefined ? { customDocumentId: upload.customDocumentId } : {}),
        },
      }),
    )) as unknown as UploadLinkFields;
    await putUpload(link, content);
    const completion = (await unwrap(
      client.POST('/api/v1/knowledge/documents/upload-complete', { body: { uploadId: link.uploadId } }),
    )) as unknown as UploadCompletion;
    return finish({ ...dataset, s3Key: link.s3Key }, completion, upload.wait);
  }

  async function updateDocument(
    file: UploadFile,
    update: UpdateOptions,
  ): Promise<KnowledgeDocument | UploadCompletion> {
    const content = await bytesOf(file);
    const link = (await unwrap(
      client.POST('/api/v1/knowledge/documents/update/upload-link', {
        body: {
          ...identify(update),
          ...metadataOf(update),
          fileName: file.name,
          fileSize: content.byteLength || undefined,
        },
      }),
    )) as unknown as UploadLinkFields;
    await putUpload(link, content);
    const completion = (await unwrap(
      client.POST('/api/v1/knowledge/documents/update/upload-complete', { body: { uploadId: link.uploadId } }),
    )) as unknown as UploadCompletion;
    return finish({ ...datasetOf(update), s3Key: link.s3Key }, completion, update.wait);
  }

  async function deleteDocument(ref: DocumentRef): Promise<void> {
    await unwrap(client.DELETE('/api/v1/knowledge/documents', { params: { query: identify(ref) } }));
  }

  const helpers: PlatformHelpers = {
    uploadDocument: uploadDocument as PlatformHelpers['uploadDocument'],
    updateDocument: updateDocument as PlatformHelpers['updateDocument'],
    putUpload,
    getDocument,
    waitForDocument,
    deleteDocument,
  };
  return Object.assign(client, helpers);
}

function datasetOf(options: DatasetOptions): DatasetOptions {
  return { agentId: options.agentId, knowledgeBaseId: options.knowledgeBaseId, environment: options.environment };
}

function identify(ref: DocumentRef) {
  return {
    ...datasetOf(ref),
    ...(ref.s3Key !== undefined ? { s3Key: ref.s3Key } : { customDocumentId: ref.customDocumentId as string }),
  };
}

function metadataOf(options: MetadataOptions) {
  return { ...(options.labels ?? {}), ...(options.customMeta ?? {}) };
}

async function bytesOf(file: UploadFile): Promise<Uint8Array> {
  const content = 'content' in file ? file.content : file;
  if (typeof content === 'string') return new TextEncoder().encode(content);
  if (content instanceof Uint8Array) return content;
  if (content instanceof ArrayBuffer) return new Uint8Array(content);
  return new Uint8Array(await content.arrayBuffer());
}

function bodyOf(content: UploadContent): Blob | string | ArrayBuffer | Uint8Array<ArrayBuffer> {
  if (typeof content === 'string' || content instanceof Blob || content instanceof ArrayBuffer) return content;
  // A view of its own bytes exactly (a Buffer may be a slice of a larger pool).
  return content.byteOffset === 0 && content.byteLength === content.buffer.byteLength
    ? (content as Uint8Array<ArrayBuffer>)
    : (content.slice() as Uint8Array<ArrayBuffer>);
}
