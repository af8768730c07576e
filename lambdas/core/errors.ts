/**
 * Errors the domain raises. Each carries an HTTP status and a stable `code`; one middleware turns them into the
 * error body `{ success: false, error: { code, message, details } }`. Anything else is an internal error.
 */

export interface ErrorDetail {
  /** Dot path of the offending field (`label1`, `filters.0.value`); empty for the request as a whole. */
  readonly field: string;
  /** Name of the rule the value broke (`label.format`, `maxLength`, `required`). */
  readonly rule: string;
  readonly message?: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends AppError {
  constructor(details: readonly ErrorDetail[], message = describe(details)) {
    super(400, 'VALIDATION_ERROR', message, details);
  }
}

export class NotFoundError extends AppError {
  constructor(code: string, message: string) {
    super(404, code, message);
  }
}

export class ConflictError extends AppError {
  constructor(code: string, message: string, details: readonly ErrorDetail[] = []) {
    super(409, code, message, details);
  }
}

export class GoneError extends AppError {
  constructor(code: string, message: string) {
    super(410, code, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'A valid bearer token is required') {
    super(401, 'UNAUTHORIZED', message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, details: readonly ErrorDetail[] = []) {
    super(403, 'FORBIDDEN', message, details);
  }
}

/**
 * A service the request needs (a table, the bucket, the queue, the model) is throttling or briefly unavailable, even
 * after the client's own retries. Nothing is wrong with the request: the caller may send it again after
 * `retryAfterSeconds` (the answer's Retry-After header).
 */
/** How long a caller is told to wait after a dependency still throttled through the SDK's own retries. */
export const SERVICE_BUSY_RETRY_AFTER_SECONDS = 5;

export class ServiceBusyError extends AppError {
  constructor(
    readonly retryAfterSeconds: number,
    message = `The service is busy; retry in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`,
  ) {
    super(503, 'SERVICE_BUSY', message);
  }
}

function describe(details: readonly ErrorDetail[]): string {
  if (details.length === 0) return 'The request is invalid';
  const first = details[0];
  const head = first.message ?? `${first.field || 'request'} breaks rule ${first.rule}`;
  return details.length === 1
    ? head
    : `${head} (and ${details.length - 1} more problem${details.length > 2 ? 's' : ''})`;
}
