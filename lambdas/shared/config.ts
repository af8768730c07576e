/**
 * Typed configuration from the environment, read once per cold start. A resource a handler uses but was not given
 * fails loudly at first use, naming the variable; numbers are validated, never silently defaulted from garbage.
 */

import { DEFAULT_RATE_LIMIT, type RateLimitSettings } from '#core/auth/rate-limit';
import { DEFAULT_FLOW_WORK, type FlowWorkSettings } from '#core/flows/work-budget';
import { corsPolicyFromEnv } from './cors';
import { handlerVariable } from './environment';
import { RESOURCE_ENV, type TableName } from './resources';

export function requireEnv(name: string): string {
  const value = handlerVariable(name);
  if (value === undefined || value === '') throw new Error(`Missing configuration: environment variable ${name}`);
  return value;
}

export function positiveInteger(name: string, fallback: number): number {
  const raw = handlerVariable(name);
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`Invalid configuration: ${name} must be a positive integer`);
  return value;
}

/** How long an upload URL stays valid, and an upload session open, unless UPLOAD_URL_TTL_SECONDS / UPLOAD_SESSION_TTL_SECONDS say otherwise. */
export const DEFAULT_UPLOAD_URL_TTL_SECONDS = 900;
export const DEFAULT_UPLOAD_SESSION_TTL_SECONDS = 3600;

/** How long a document may stay `uploaded` before the watchdog retries, then fails it (PROCESSING_TIMEOUT_SECONDS). */
export const DEFAULT_PROCESSING_TIMEOUT_SECONDS = 900;

/** 50 MB per file, the anchor of the issue and Bedrock's own limit. */
export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024;

/** 256 MiB per ZIP archive: the processing function copies it to its temporary storage before reading it. */
export const DEFAULT_MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;

export const config = {
  tableName: (table: TableName) => requireEnv(RESOURCE_ENV.tables[table]),
  documentsBucket: () => requireEnv(RESOURCE_ENV.documentsBucket),
  processingQueueUrl: () => requireEnv(RESOURCE_ENV.processingQueue),
  flowRunQueueUrl: () => requireEnv(RESOURCE_ENV.flowRunQueue),
  /** The status webhooks' queue (docs/webhooks.md); unset in a function that publishes no status event. */
  webhookQueueUrl: () => handlerVariable(RESOURCE_ENV.webhookQueue) || undefined,
  /**
   * Runs longer than a request (docs/flows.md, "Long runs"): FLOW_SYNC_BUDGET_MS, after which a webhook or app event
   * starts no further node and hands the run over to the flow runner (under API Gateway's 29 s, with room for the
   * node in flight); FLOW_SESSION_LEASE_MS, how long a session stays held by an invocation that stopped renewing it.
   */
  flowRuns: () => ({
    syncBudgetMs: positiveInteger('FLOW_SYNC_BUDGET_MS', 20_000),
    leaseMs: positiveInteger('FLOW_SESSION_LEASE_MS', 60_000),
  }),
  /** Local S3 engines need path-style addressing; real S3 does not. */
  /**
   * Path-style S3 URLs: S3_FORCE_PATH_STYLE=true|false, or, unset, whenever S3 is reached at a custom endpoint
   * (AWS_ENDPOINT_URL[_S3], as LocalStack sets it in its Lambda containers), where bucket host names do not resolve.
   */
  s3ForcePathStyle: () => {
    const value = handlerVariable('S3_FORCE_PATH_STYLE');
    if (value === 'true' || value === 'false') return value === 'true';
    if (value) throw new Error(`S3_FORCE_PATH_STYLE must be true or false, got ${value}`);
    return Boolean(handlerVariable('AWS_ENDPOINT_URL_S3') || handlerVariable('AWS_ENDPOINT_URL'));
  },
  /** CORS_ALLOWED_ORIGINS: which other origins' pages may read the answers (shared/cors.ts); unset, none. */
  cors: () => corsPolicyFromEnv(),
  /** RATE_LIMIT_PER_SECOND (sustained) and RATE_LIMIT_BURST (one window) of every token and organization. */
  rateLimit: (): RateLimitSettings => {
    const limit = {
      perSecond: positiveInteger('RATE_LIMIT_PER_SECOND', DEFAULT_RATE_LIMIT.perSecond),
      burst: positiveInteger('RATE_LIMIT_BURST', DEFAULT_RATE_LIMIT.burst),
    };
    if (limit.burst < limit.perSecond) {
      throw new Error('Invalid configuration: RATE_LIMIT_BURST must be at least RATE_LIMIT_PER_SECOND');
    }
    return limit;
  },
  /**
   * The flow work budget of every organization (core/flows/work-budget.ts): FLOW_WORK_PER_SECOND (sustained),
   * FLOW_WORK_BURST (one window) and BROWSER_SECOND_UNITS (a browser task's cost per started second).
   */
  flowWork: (): FlowWorkSettings => {
    const work = {
      perSecond: positiveInteger('FLOW_WORK_PER_SECOND', DEFAULT_FLOW_WORK.perSecond),
      burst: positiveInteger('FLOW_WORK_BURST', DEFAULT_FLOW_WORK.burst),
      browserSecondUnits: positiveInteger('BROWSER_SECOND_UNITS', DEFAULT_FLOW_WORK.browserSecondUnits),
    };
    if (work.burst < work.perSecond) {
      throw new Error('Invalid configuration: FLOW_WORK_BURST must be at least FLOW_WORK_PER_SECOND');
    }
    return work;
  },
  uploads: () => ({
    uploadUrlTtlSeconds: positiveInteger('UPLOAD_URL_TTL_SECONDS', DEFAULT_UPLOAD_URL_TTL_SECONDS),
    uploadSessionTtlSeconds: positiveInteger('UPLOAD_SESSION_TTL_SECONDS', DEFAULT_UPLOAD_SESSION_TTL_SECONDS),
    maxFileBytes: positiveInteger('MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES),
    maxArchiveBytes: positiveInteger('ZIP_MAX_ARCHIVE_BYTES', DEFAULT_MAX_ARCHIVE_BYTES),
  }),
};
