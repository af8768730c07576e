/**
 * Whether an AWS SDK v3 error says the service is throttling us (or is briefly unavailable), so that the error
 * middleware answers 503 SERVICE_BUSY with Retry-After instead of 500. The SDK's client has already retried such an
 * error by the time it reaches a handler (standard retry mode: 3 attempts, 4 for DynamoDB, waiting a random part of
 * 1 s, 2 s, 4 s between throttled ones; the Bedrock clients retry adaptively, with more attempts where the caller can
 * wait: composition/clients/bedrock-retry.ts). The processing worker does not use it: a throttled error there fails
 * the message, which the queue redelivers.
 *
 * The rule is the SDK's own (`isThrottlingError` of @smithy/core/retry, which is not a dependency of this project, so
 * it is restated here and test/unit/adapters/errors/aws-throttling.test.ts checks it against the SDK's list): HTTP 429, an error
 * name from its throttling list, or the `$retryable.throttling` trait. Added to it: SQS's `KmsThrottled` (SQS
 * throttled by KMS), and HTTP 503 from any service: S3 answers 503 `SlowDown` or `ServiceUnavailable` ("reduce your
 * request rate"), a HEAD answered 503 has no body to name its error at all, and Bedrock's
 * `ServiceUnavailableException` is 503 as well.
 */

/** The names @smithy/core 3.x lists as throttling (THROTTLING_ERROR_CODES). */
export const SDK_THROTTLING_ERROR_NAMES: readonly string[] = [
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
];

const THROTTLING_NAMES = new Set([...SDK_THROTTLING_ERROR_NAMES, 'KmsThrottled']);

/** How deep a chain of `cause`s is followed (as the SDK's isTransientError does): an adapter may wrap the error. */
const MAX_CAUSE_DEPTH = 10;

interface SdkErrorShape {
  readonly name?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
  readonly $retryable?: { readonly throttling?: unknown };
  readonly cause?: unknown;
}

function throttledItself(error: SdkErrorShape): boolean {
  // Every error the SDK deserializes from a service's answer carries $metadata; a name alone could be anyone's.
  if (typeof error.$metadata !== 'object' || error.$metadata === null) return false;
  const status = error.$metadata.httpStatusCode;
  return (
    status === 429 ||
    status === 503 ||
    (typeof error.name === 'string' && THROTTLING_NAMES.has(error.name)) ||
    error.$retryable?.throttling === true
  );
}

export function isThrottledByAws(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH; depth += 1) {
    if (typeof current !== 'object' || current === null) return false;
    if (throttledItself(current as SdkErrorShape)) return true;
    current = (current as SdkErrorShape).cause;
  }
  return false;
}
