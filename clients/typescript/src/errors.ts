/** The service's error answer (`{ success: false, error: { code, message, details } }`) as an exception. */

export interface ErrorDetail {
  readonly field: string;
  readonly rule: string;
  readonly message?: string;
}

/**
 * An answer that is not a success: `code` is the API's stable code (`DUPLICATE_CUSTOM_DOCUMENT_ID`,
 * `VALIDATION_ERROR`, …), `details` the fields and rules a 400 names. The pre-signed PUT's failure is one too, with
 * S3's code (`SignatureDoesNotMatch`, `PreconditionFailed`, …), or `HTTP_<status>` when the answer names none.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
  }
}

interface ErrorBody {
  readonly error?: { code?: unknown; message?: unknown; details?: unknown };
}

/** The ApiError of a JSON error answer (whatever its shape: a proxy's answer is not the service's). */
export function apiErrorOf(response: Response, body: unknown): ApiError {
  const error = (body as ErrorBody | null)?.error;
  return new ApiError(
    response.status,
    typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`,
    typeof error?.message === 'string' ? error.message : response.statusText || `HTTP ${response.status}`,
    Array.isArray(error?.details) ? (error.details as ErrorDetail[]) : [],
  );
}

/** S3's XML error answer (`<Error><Code>…</Code><Message>…</Message></Error>`) as an ApiError. */
export function storageErrorOf(response: Response, text: string): ApiError {
  const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP_${response.status}`;
  const message = /<Message>([^<]+)<\/Message>/.exec(text)?.[1] ?? `the upload URL answered ${response.status}`;
  return new ApiError(response.status, code, message);
}

/** waitForDocument (and `uploadDocument(…, { wait })`) ran out of time: the document as last read. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';

  constructor(
    message: string,
    readonly document: unknown,
  ) {
    super(message);
  }
}
