/**
 * The rate limiter every authenticated HTTP route runs through (shared/http.ts): the counters table and the
 * settings (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST), built on first use; and the flow work budget the flow functions
 * count in the same table (FLOW_WORK_PER_SECOND, FLOW_WORK_BURST, BROWSER_SECOND_UNITS; core/flows/work-budget.ts).
 */
import { DynamoRateLimitCounters } from '#adapters/store/dynamodb/rate-limit-store';
import { checkRateLimit, type RateLimitVerdict } from '#core/auth/rate-limit';
import type { FlowWorkBudget } from '#core/flows/work-budget';
import type { Caller } from '#core/tenancy/tenancy';
import { config } from '#shared/config';
import { dynamoDocumentClient } from './clients/dynamodb';
import { once } from './once';

const counters = once(() => new DynamoRateLimitCounters(dynamoDocumentClient(), config.tableName('rateLimits')));
const settings = once(() => config.rateLimit());

export const flowWorkBudget = once((): FlowWorkBudget => ({ counters: counters(), settings: config.flowWork() }));

export function rateLimit(caller: Pick<Caller, 'tokenId'> & { organizationId?: string }): Promise<RateLimitVerdict> {
  return checkRateLimit(counters(), settings(), caller, Date.now());
}
