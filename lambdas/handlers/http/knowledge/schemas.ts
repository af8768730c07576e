/** Request schemas of the Knowledge API, one per route; the OpenAPI document is generated from these. */
import * as z from 'zod';
import {
  customDocumentId,
  datasetFields,
  documentIdentifierFields,
  exactlyOneIdentifier,
  fileName,
  labelAndMetaFields,
} from '../../../core/knowledge/fields';

export const uploadLinkSchema = z.strictObject({
  ...datasetFields,
  fileName,
  ...labelAndMetaFields,
  customDocumentId: customDocumentId.optional(),
});

export const uploadCompleteSchema = z.strictObject({ uploadId: z.uuid() });

export const updateUploadLinkSchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields, fileName, ...labelAndMetaFields })
  .superRefine(exactlyOneIdentifier);

export const patchMetadataSchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields, ...labelAndMetaFields })
  .superRefine(exactlyOneIdentifier);

export const documentQuerySchema = z
  .strictObject({ ...datasetFields, ...documentIdentifierFields })
  .superRefine(exactlyOneIdentifier);

export const zipJobPathSchema = z.strictObject({ zipJobId: z.uuid() });
