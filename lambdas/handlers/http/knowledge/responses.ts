/**
 * Success bodies of the knowledge routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows. The knowledge-base routes of the
 * dashboard (handlers/http/dashboard/*knowledge-base*.ts) answer from here too: a knowledge base is knowledge.
 */
import * as z from 'zod';
import { customDocumentId, customMeta, environment, label, uuid } from '#core/knowledge/fields';

/**
 * What a handler may answer for a response schema: the body it describes (its output type: what is sent), read-only
 * all the way down, so the read-only arrays the core returns satisfy it as mutable ones would.
 */
export type Answer<S extends z.ZodType> = DeepReadonly<z.output<S>>;
type DeepReadonly<T> = T extends readonly (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

// ---------------------------------------------------------------------------------------------------------------
// Fields the answers of the area share

/** An instant as the service writes it: ISO 8601 in UTC (`Date.prototype.toISOString`). */
export const timestamp = z.iso.datetime();
/** A count of things: a non-negative integer. */
export const count = z.int().min(0);
/** Where the next page starts; null on the last page. */
export const nextToken = z
  .string()
  .nullable()
  .meta({ description: 'Pass it as `nextToken` to get the next page; null on the last page.' });

/** Why a document (or a ZIP import, or one of its files) failed: a stable code and a sentence. */
export const failure = z.strictObject({ code: z.string(), message: z.string() });

export const documentStatus = z
  .enum(['uploaded', 'ready', 'failed'])
  .meta({ description: '`uploaded` until its processing ends `ready` (retrievable) or `failed` (see `error`).' });

const labelValue = label.nullable();
const customMetaValue = customMeta.nullable();

/** The labels and custom metadata of a document, null where none is set. */
const metadataFields = {
  label1: labelValue,
  label2: labelValue,
  customMeta1: customMetaValue,
  customMeta2: customMetaValue,
  customMeta3: customMetaValue,
  customMeta4: customMetaValue,
};

/** The ids, keys and instants the examples share, so that they describe one dataset. */
const AGENT_ID = '7d0c1f7e-2f7a-4c55-9a51-8a3f0e4b9c21';
const KNOWLEDGE_BASE_ID = '3b8e6a52-91d4-4e0f-b6a3-0c2d5f7e8a19';
const DOCUMENT_ID = 'f2a9c4d1-6b7e-4a38-9c05-1e2d3f4a5b6c';
export const EXAMPLE = {
  agentId: AGENT_ID,
  knowledgeBaseId: KNOWLEDGE_BASE_ID,
  documentId: DOCUMENT_ID,
  uploadId: 'c51e8f20-3d4b-4a96-8e7f-2b1a0c9d8e7f',
  zipJobId: '9e4d2c1b-0a8f-4e7d-b6c5-a4b3c2d1e0f9',
  s3Key: `${AGENT_ID}/production/${KNOWLEDGE_BASE_ID}/${DOCUMENT_ID}/refund-policy.pdf`,
  createdAt: '2026-11-28T09:14:03.512Z',
  updatedAt: '2026-11-28T09:14:07.188Z',
} as const;

// ---------------------------------------------------------------------------------------------------------------
// Documents

/** A document as GET, PATCH and retry answer it (core/knowledge/document.ts, documentView). */
export const documentAnswer = z.strictObject({
  s3Key: z.string().meta({ description: 'The document’s identifier path, fixed at creation.' }),
  documentId: z.string().meta({ description: 'Its customDocumentId when one was given, else a generated UUID.' }),
  customDocumentId: customDocumentId.nullable(),
  fileName: z.string(),
  status: documentStatus,
  contentType: z.string(),
  fileSize: count.nullable().meta({ description: 'Bytes of its current content.' }),
  ...metadataFields,
  error: failure.nullable().meta({ description: 'Why processing failed; null unless `failed`.' }),
  createdAt: timestamp,
  updatedAt: timestamp,
});

const EXAMPLE_DOCUMENT: z.output<typeof documentAnswer> = {
  s3Key: EXAMPLE.s3Key,
  documentId: EXAMPLE.documentId,
  customDocumentId: null,
  fileName: 'refund-policy.pdf',
  status: 'ready',
  contentType: 'application/pdf',
  fileSize: 48213,
  label1: 'topic:refunds',
  label2: null,
  customMeta1: 'Refund policy, 2026 edition',
  customMeta2: null,
  customMeta3: null,
  customMeta4: null,
  error: null,
  createdAt: EXAMPLE.createdAt,
  updatedAt: EXAMPLE.updatedAt,
};

const documentResponse = documentAnswer.meta({ description: 'The document.', examples: [EXAMPLE_DOCUMENT] });

/** Upload-link (a new document, a ZIP import, or new content of a document): where to PUT the file, and how. */
const uploadLinkAnswer = z.strictObject({
  uploadId: uuid.meta({ description: 'Name it to upload-complete once the file is PUT.' }),
  uploadUrl: z.url().meta({ description: 'A pre-signed URL: PUT the file there, with `requiredHeaders`.' }),
  expiresIn: z.int().positive().meta({ description: 'Seconds the URL works for.' }),
  s3Key: z.string(),
  documentId: z.string().optional(),
  zipJobId: uuid.optional(),
  requiredHeaders: z
    .record(z.string(), z.string())
    .meta({ description: 'Headers the PUT must send as they are (the content type, and the size when declared).' }),
});

const EXAMPLE_UPLOAD_URL = `https://agent-platform-documents.s3.eu-west-1.amazonaws.com/${EXAMPLE.s3Key}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=900&X-Amz-Signature=3f9c0e7b`;

export const uploadLinkResponse = uploadLinkAnswer.meta({
  description:
    'The upload session: PUT the file to `uploadUrl`, then call upload-complete with `uploadId`. A `.zip` file starts a ZIP import: `zipJobId` instead of `documentId`.',
  examples: [
    {
      uploadId: EXAMPLE.uploadId,
      uploadUrl: EXAMPLE_UPLOAD_URL,
      expiresIn: 900,
      s3Key: EXAMPLE.s3Key,
      documentId: EXAMPLE.documentId,
      requiredHeaders: { 'content-type': 'application/pdf' },
    },
  ],
});

export const updateUploadLinkResponse = uploadLinkAnswer
  .omit({ zipJobId: true })
  .extend({ documentId: z.string() })
  .meta({
    description:
      'The upload session of the document’s new content: PUT it to `uploadUrl`, then call update/upload-complete with `uploadId`. Nothing changes until then.',
    examples: [
      {
        uploadId: EXAMPLE.uploadId,
        uploadUrl: EXAMPLE_UPLOAD_URL.replace('refund-policy.pdf?', `_versions/${EXAMPLE.uploadId}/refund-policy.pdf?`),
        expiresIn: 900,
        s3Key: EXAMPLE.s3Key,
        documentId: EXAMPLE.documentId,
        requiredHeaders: { 'content-type': 'application/pdf', 'content-length': '51377' },
      },
    ],
  });

/** Upload-complete: the document (or ZIP import) is `uploaded` and its processing queued; a repeat answers the same. */
const uploadCompleteAnswer = z.strictObject({
  type: z.enum(['document', 'zip_import']),
  s3Key: z.string(),
  documentId: z.string().optional().meta({ description: 'With `type: document`.' }),
  zipJobId: uuid
    .optional()
    .meta({ description: 'With `type: zip_import`: follow it at GET /api/v1/knowledge/zip-jobs/{zipJobId}.' }),
  status: z.literal('uploaded'),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const uploadCompleteResponse = uploadCompleteAnswer.meta({
  description:
    'The upload is in: the document is `uploaded` and its processing queued (GET it until `ready` or `failed`), or the ZIP import is queued. A repeated call answers what the first answered.',
  examples: [
    {
      type: 'document',
      s3Key: EXAMPLE.s3Key,
      documentId: EXAMPLE.documentId,
      status: 'uploaded',
      createdAt: EXAMPLE.createdAt,
      updatedAt: EXAMPLE.createdAt,
    },
  ],
});

/** An update's completion is always a document's; the type the core gives both completions says no more. */
export const updateUploadCompleteResponse = uploadCompleteAnswer.meta({
  description:
    'The new content replaced the old: the document is `uploaded` again and reprocessed (`type` is always `document`); its previous chunks stay retrievable until then. A repeated call answers what the first answered.',
  examples: [
    {
      type: 'document',
      s3Key: EXAMPLE.s3Key,
      documentId: EXAMPLE.documentId,
      status: 'uploaded',
      createdAt: EXAMPLE.createdAt,
      updatedAt: EXAMPLE.updatedAt,
    },
  ],
});

export const deleteDocumentResponse = z
  .strictObject({ documentId: z.string(), s3Key: z.string(), deleted: z.literal(true) })
  .meta({
    description: 'The document is gone at once; its objects and chunks are removed after the answer.',
    examples: [{ documentId: EXAMPLE.documentId, s3Key: EXAMPLE.s3Key, deleted: true }],
  });

export const listDocumentsResponse = z
  .strictObject({
    documents: z.array(documentAnswer).meta({ description: 'Newest first, narrowed by the filters.' }),
    counts: z
      .strictObject({ uploaded: count, ready: count, failed: count, total: count })
      .meta({ description: 'The whole dataset’s documents per status, whatever the filters and the page.' }),
    nextToken,
  })
  .meta({
    description: 'A page of the documents of a knowledge base in one environment, with the dataset’s counts.',
    examples: [
      {
        documents: [EXAMPLE_DOCUMENT],
        counts: { uploaded: 1, ready: 41, failed: 2, total: 44 },
        nextToken: 'eyJwIjoiMjAyNi0xMS0yOFQwOToxNDowMy41MTJaI2YyYTljNGQxIn0',
      },
    ],
  });

/** The `metadata` of a retrieval result, and of a chunk in the chunk view: where it comes from, and its labels. */
export const chunkMetadata = z.strictObject({
  documentId: z.string(),
  s3Key: z.string(),
  chunkId: z.string().meta({ description: '`<documentId>#<position>#<hash of its text>`' }),
  position: count.meta({ description: '0-based order of the chunk in its document.' }),
  label1: labelValue,
  label2: labelValue,
  svc_internal_meta1: customMetaValue.meta({ description: 'The document’s customMeta1.' }),
  svc_internal_meta2: customMetaValue.meta({ description: 'The document’s customMeta2.' }),
  svc_internal_meta3: customMetaValue.meta({ description: 'The document’s customMeta3.' }),
  svc_internal_meta4: customMetaValue.meta({ description: 'The document’s customMeta4.' }),
});

export const EXAMPLE_CHUNK_METADATA: z.output<typeof chunkMetadata> = {
  documentId: EXAMPLE.documentId,
  s3Key: EXAMPLE.s3Key,
  chunkId: `${EXAMPLE.documentId}#0#9b1f2c7d`,
  position: 0,
  label1: 'topic:refunds',
  label2: null,
  svc_internal_meta1: 'Refund policy, 2026 edition',
  svc_internal_meta2: null,
  svc_internal_meta3: null,
  svc_internal_meta4: null,
};

export const EXAMPLE_CHUNK_TEXT =
  'Refunds are paid within 14 days of the return reaching our warehouse, to the card used for the purchase.';

export const listDocumentChunksResponse = z
  .strictObject({
    status: z.enum(['uploaded', 'ready']).meta({
      description: '`uploaded`: the chunks of its previous content while new content is processed, or none.',
    }),
    chunks: z.array(
      z.strictObject({ chunkId: z.string(), position: count, text: z.string(), metadata: chunkMetadata }),
    ),
    total: count.meta({ description: 'Chunks of the document, whatever `q`.' }),
    nextToken,
  })
  .meta({
    description: 'A page of the document’s chunks in position order, as retrieval finds them now.',
    examples: [
      {
        status: 'ready',
        chunks: [
          {
            chunkId: EXAMPLE_CHUNK_METADATA.chunkId,
            position: 0,
            text: EXAMPLE_CHUNK_TEXT,
            metadata: EXAMPLE_CHUNK_METADATA,
          },
        ],
        total: 12,
        nextToken: null,
      },
    ],
  });

// ---------------------------------------------------------------------------------------------------------------
// ZIP imports

const zipJobFields = {
  zipJobId: uuid,
  status: z.enum(['uploaded', 'processing', 'completed', 'failed']).meta({
    description:
      '`completed` once the archive is read through and every document it created is `ready` or `failed`; `failed` when the archive itself could not be imported (see `error`).',
  }),
  failedCount: count.meta({
    description: 'Its documents that are `failed` now, the files the archive rules refused included.',
  }),
  error: failure.nullable(),
  warnings: z.array(z.string()).meta({ description: 'What the archive rules noticed without failing a file.' }),
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const listZipJobsResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        ...zipJobFields,
        fileCount: count.nullable().meta({ description: 'Entries of the archive; null until it is read through.' }),
      }),
    ),
    count,
    nextToken,
  })
  .meta({
    description: 'A page of the ZIP imports of a knowledge base in one environment, newest first.',
    examples: [
      {
        data: [
          {
            zipJobId: EXAMPLE.zipJobId,
            status: 'completed',
            failedCount: 1,
            error: null,
            warnings: [],
            createdAt: EXAMPLE.createdAt,
            updatedAt: EXAMPLE.updatedAt,
            fileCount: 3,
          },
        ],
        count: 1,
        nextToken: null,
      },
    ],
  });

const ZIP_DOCUMENT_ID = '0b6f3e1a-8c2d-5e4f-a1b2-c3d4e5f6a7b8';
const REFUSED_DOCUMENT_ID = '5d7c9b2e-1f3a-5b4c-a6d8-e9f0a1b2c3d4';

export const getZipJobResponse = z
  .strictObject({
    ...zipJobFields,
    files: z.array(
      z.strictObject({
        fileName: z.string().meta({ description: 'Its path in the archive.' }),
        documentId: z.string().nullable(),
        s3Key: z.string().nullable(),
        ...metadataFields,
        status: documentStatus.meta({ description: 'Its document’s status now.' }),
        error: failure.nullable(),
      }),
    ),
  })
  .meta({
    description: 'A ZIP import, with each file of the archive and its document’s status now.',
    examples: [
      {
        zipJobId: EXAMPLE.zipJobId,
        status: 'processing',
        failedCount: 1,
        error: null,
        warnings: [
          'label file line 4: "policies/old.pdf" names no file of the archive: give the file name with its extension, its path in the archive, or its name without extension as a custom document id; the row is ignored',
        ],
        createdAt: EXAMPLE.createdAt,
        updatedAt: EXAMPLE.updatedAt,
        files: [
          {
            fileName: 'policies/refund-policy.pdf',
            documentId: ZIP_DOCUMENT_ID,
            s3Key: `${EXAMPLE.agentId}/production/${EXAMPLE.knowledgeBaseId}/${ZIP_DOCUMENT_ID}/refund-policy.pdf`,
            label1: 'topic:refunds',
            label2: null,
            customMeta1: null,
            customMeta2: null,
            customMeta3: null,
            customMeta4: null,
            status: 'uploaded',
            error: null,
          },
          {
            fileName: 'archive/2019-policies.zip',
            documentId: REFUSED_DOCUMENT_ID,
            s3Key: `${EXAMPLE.agentId}/production/${EXAMPLE.knowledgeBaseId}/${REFUSED_DOCUMENT_ID}/2019-policies.zip`,
            label1: null,
            label2: null,
            customMeta1: null,
            customMeta2: null,
            customMeta3: null,
            customMeta4: null,
            status: 'failed',
            error: {
              code: 'NESTED_ARCHIVE',
              message: 'refused: the content is a ZIP archive; archives inside the archive are not imported',
            },
          },
        ],
      },
    ],
  });

// ---------------------------------------------------------------------------------------------------------------
// Knowledge bases (the dashboard's routes)

const knowledgeBaseAnswer = z.strictObject({
  knowledgeBaseId: uuid,
  agentId: uuid,
  name: z.string(),
  description: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

const EXAMPLE_KNOWLEDGE_BASE: z.output<typeof knowledgeBaseAnswer> = {
  knowledgeBaseId: EXAMPLE.knowledgeBaseId,
  agentId: EXAMPLE.agentId,
  name: 'Customer policies',
  description: 'Refund, shipping and warranty policies the support agent answers from',
  createdAt: '2026-11-20T16:02:41.007Z',
  updatedAt: '2026-11-20T16:02:41.007Z',
};

export const knowledgeBaseResponse = knowledgeBaseAnswer.meta({
  description: 'The knowledge base.',
  examples: [EXAMPLE_KNOWLEDGE_BASE],
});

export const listKnowledgeBasesResponse = z
  .strictObject({ data: z.array(knowledgeBaseAnswer), count })
  .meta({ description: 'The agent’s knowledge bases.', examples: [{ data: [EXAMPLE_KNOWLEDGE_BASE], count: 1 }] });

export const deleteKnowledgeBaseResponse = z
  .strictObject({
    knowledgeBaseId: uuid,
    agentId: uuid,
    status: z.literal('deleting'),
    startedAt: timestamp,
    defaultRetrievalChanged: z
      .array(environment)
      .meta({ description: 'Environments whose default retrieval named the knowledge base and no longer does.' }),
  })
  .meta({
    description:
      'The deletion job: the knowledge base is gone for every request from now on; its documents, objects and chunks are removed by the job. A repeat answers the same job.',
    examples: [
      {
        knowledgeBaseId: EXAMPLE.knowledgeBaseId,
        agentId: EXAMPLE.agentId,
        status: 'deleting',
        startedAt: EXAMPLE.updatedAt,
        defaultRetrievalChanged: ['production'],
      },
    ],
  });

export const knowledgeBaseReindexResponse = z
  .strictObject({
    knowledgeBaseId: uuid,
    status: z.enum(['running', 'completed']),
    startedAt: timestamp,
    updatedAt: timestamp.meta({ description: 'Its last progress.' }),
    completedAt: timestamp.nullable(),
    environments: z.array(environment).meta({ description: 'The datasets it reindexes, in order.' }),
    total: count.meta({ description: '`ready` documents when it started, of every environment it reindexes.' }),
    reindexed: count,
    skipped: count.meta({ description: 'Documents no longer `ready`: their own processing indexes them.' }),
    failed: count,
    failures: z
      .array(z.strictObject({ environment, documentId: z.string(), code: z.string(), message: z.string() }))
      .meta({ description: 'The first failures (at most 20); a failed document stays as it was.' }),
  })
  .meta({
    description: 'The knowledge base’s reindex job, running or completed.',
    examples: [
      {
        knowledgeBaseId: EXAMPLE.knowledgeBaseId,
        status: 'running',
        startedAt: EXAMPLE.createdAt,
        updatedAt: EXAMPLE.updatedAt,
        completedAt: null,
        environments: ['development', 'staging', 'production'],
        total: 44,
        reindexed: 20,
        skipped: 0,
        failed: 0,
        failures: [],
      },
    ],
  });

export type UploadLinkResponse = Answer<typeof uploadLinkResponse>;
export type UpdateUploadLinkResponse = Answer<typeof updateUploadLinkResponse>;
export type UploadCompleteResponse = Answer<typeof uploadCompleteResponse>;
export type UpdateUploadCompleteResponse = Answer<typeof updateUploadCompleteResponse>;
export type DocumentResponse = Answer<typeof documentResponse>;
export type DeleteDocumentResponse = Answer<typeof deleteDocumentResponse>;
export type ListDocumentsResponse = Answer<typeof listDocumentsResponse>;
export type ListDocumentChunksResponse = Answer<typeof listDocumentChunksResponse>;
export type ListZipJobsResponse = Answer<typeof listZipJobsResponse>;
export type GetZipJobResponse = Answer<typeof getZipJobResponse>;
export type KnowledgeBaseResponse = Answer<typeof knowledgeBaseResponse>;
export type ListKnowledgeBasesResponse = Answer<typeof listKnowledgeBasesResponse>;
export type DeleteKnowledgeBaseResponse = Answer<typeof deleteKnowledgeBaseResponse>;
export type KnowledgeBaseReindexResponse = Answer<typeof knowledgeBaseReindexResponse>;

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  UploadLink: uploadLinkResponse,
  UploadComplete: uploadCompleteResponse,
  UpdateUploadLink: updateUploadLinkResponse,
  UpdateUploadComplete: updateUploadCompleteResponse,
  PatchMetadata: documentAnswer.meta({
    description: 'The document with its new labels and custom metadata; its chunks follow without re-embedding.',
    examples: [EXAMPLE_DOCUMENT],
  }),
  GetDocument: documentResponse,
  DeleteDocument: deleteDocumentResponse,
  RetryDocument: documentAnswer.meta({
    description: 'The document, `uploaded` again with its error cleared; its processing is queued.',
    examples: [{ ...EXAMPLE_DOCUMENT, status: 'uploaded' }],
  }),
  ListDocuments: listDocumentsResponse,
  ListDocumentChunks: listDocumentChunksResponse,
  ListZipJobs: listZipJobsResponse,
  GetZipJob: getZipJobResponse,
  CreateKnowledgeBase: knowledgeBaseAnswer.meta({
    description: 'The knowledge base created.',
    examples: [EXAMPLE_KNOWLEDGE_BASE],
  }),
  ListKnowledgeBases: listKnowledgeBasesResponse,
  GetKnowledgeBase: knowledgeBaseResponse,
  UpdateKnowledgeBase: knowledgeBaseAnswer.meta({
    description: 'The knowledge base as changed.',
    examples: [{ ...EXAMPLE_KNOWLEDGE_BASE, updatedAt: EXAMPLE.updatedAt }],
  }),
  DeleteKnowledgeBase: deleteKnowledgeBaseResponse,
  ReindexKnowledgeBase: knowledgeBaseReindexResponse.meta({
    description: 'The reindex job started: follow it with GET …/reindex.',
    examples: [
      {
        knowledgeBaseId: EXAMPLE.knowledgeBaseId,
        status: 'running',
        startedAt: EXAMPLE.createdAt,
        updatedAt: EXAMPLE.createdAt,
        completedAt: null,
        environments: ['production'],
        total: 41,
        reindexed: 0,
        skipped: 0,
        failed: 0,
        failures: [],
      },
    ],
  }),
  GetKnowledgeBaseReindex: knowledgeBaseReindexResponse,
};
