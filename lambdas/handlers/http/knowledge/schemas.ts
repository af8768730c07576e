/** Request schemas of the Knowledge API, one per route; the OpenAPI document is generated from these. */
import * as z from 'zod';
import {
  customDocumentId,
  datasetFields,
  documentIdentifierFields,
  exactlyOneIdentifier,
  fileName,
  label,
  labelAndMetaFields,
} from '#core/knowledge/fields';
import { pageLimit } from '#core/paging/pages';

/** The upload's size, when the caller knows it: signed into the URL, so S3 accepts no other length. */
const fileSize = z.int().min(1).max(Number.MAX_SAFE_INTEGER).optional();

export const uploadLinkSchema = z.strictObject({
  ...datasetFields,
  fileName,
  fileSize,
  ...labelAndMetaFields,
  customDocumentId: customDocumentId.optional(),
});

export const uploadCompleteSchema = z.strictObject({ uploadId: z.uuid() });

export const updateUploadLinkSchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields, fileName, fileSize, ...labelAndMetaFields })
  .superRefine(exactlyOneIdentifier);

export const patchMetadataSchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields, ...labelAndMetaFields })
  .superRefine(exactlyOneIdentifier);

export const documentQuerySchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields })
  .superRefine(exactlyOneIdentifier);

export const zipJobPathSchema = z.strictObject({ zipJobId: z.uuid() });

export const listDocumentsSchema = z.strictObject({
  ...datasetFields,
  status: z.enum(['uploaded', 'ready', 'failed']).optional(),
  label1: label.optional(),
  label2: label.optional(),
  fileNamePrefix: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'Lists documents whose file name starts with it (case as written).' }),
  limit: pageLimit('Documents'),
  nextToken: z.string().min(1).max(1000).optional(),
});

export const listZipJobsSchema = z.strictObject({
  ...datasetFields,
  limit: pageLimit('ZIP imports'),
  nextToken: z.string().min(1).max(1000).optional(),
});

export const listDocumentChunksSchema = z
  .strictObject({
    ...datasetFields,
    ...documentIdentifierFields,
    limit: pageLimit('Chunks'),
    nextToken: z.string().min(1).max(1000).optional(),
    q: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .meta({ description: 'Lists only the chunks whose text contains it, ignoring case (a plain substring).' }),
  })
  .superRefine(exactlyOneIdentifier);
