/**
 * The success body of every route, by route id (lib/routes.ts): one zod schema per route, written beside the
 * request schemas of its area. The OpenAPI document (openapi-document.ts) is generated from these, and a jest helper
 * checks every answer the integration suites receive against that document.
 */
import * as z from 'zod';
import { RESPONSES as analytics } from './analytics/responses';
import { RESPONSES as dashboard } from './dashboard/responses';
import { RESPONSES as flows } from './flows/responses';
import { RESPONSES as knowledge } from './knowledge/responses';
import { RESPONSES as mcp } from './mcp/responses';
import { RESPONSES as retrieval } from './retrieval/responses';
import { RESPONSES as webhooks } from './webhooks/responses';

const SERVICE: Readonly<Record<string, z.ZodType>> = {
  Health: z.strictObject({ status: z.literal('ok') }),
};

const RESPONSE_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  ...SERVICE,
  ...knowledge,
  ...retrieval,
  ...dashboard,
  ...flows,
  ...analytics,
  ...mcp,
  ...webhooks,
};

/** Routes whose success body is sent as it is, without `success: true` (HttpResult.raw): a JSON-RPC message. */
export const RAW_RESPONSE_ROUTES: ReadonlySet<string> = new Set(['Mcp']);

/**
 * The success body of `routeId`, without `success: true`; a dashboard mirror (lib/routes.ts, DASHBOARD_MIRRORS)
 * answers what its customer route answers. Undefined where none is written yet.
 */
export function responseSchemaOf(routeId: string): z.ZodType | undefined {
  return RESPONSE_SCHEMAS[routeId] ?? RESPONSE_SCHEMAS[routeId.replace(/^Dashboard(?=[A-Z])/, '')];
}
