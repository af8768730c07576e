/**
 * The rate limiter every authenticated HTTP route runs through (shared/http.ts): the counters table and the
 * settings (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST), built on first use.
 */
import { DynamoRateLimitCounters } from '#adapters/store/dynamodb/rate-limit-store';
import { checkRateLimit, type RateLimitVerdict } from '#core/auth/rate-limit';
import type { Caller } from '#core/tenancy/tenancy';
import { config } from '#shared/config';
import { dynamoDocumentClient } from './clients/dynamodb';
import { once } from './once';

const counters = once(() => new DynamoRateLimitCounters(dynamoDocumentClient(), config.tableName('rateLimits')));
const settings = once(() => config.rateLimit());

export function rateLimit(caller: Caller): Promise<RateLimitVerdict> {
  return checkRateLimit(counters(), settings(), caller, Date.now());
}
