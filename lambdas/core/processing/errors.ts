/** Why a document ended `failed`: the codes a client reads in `error.code` of GET /knowledge/documents. */

export const PROCESSING_ERROR_CODES = [
  'UNSUPPORTED_TYPE',
  'FILE_TOO_LARGE',
  'EMPTY_DOCUMENT',
  'PARSE_ERROR',
  'EXTRACTION_TIMEOUT',
  'INDEXING_FAILED',
] as const;
export type ProcessingErrorCode = (typeof PROCESSING_ERROR_CODES)[number];

/** A failure that is the document's own (retrying will not help): the document ends `failed` with this code. */
export class ProcessingError extends Error {
  constructor(
    readonly code: ProcessingErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ProcessingError';
  }
}
