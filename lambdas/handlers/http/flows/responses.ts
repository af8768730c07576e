/**
 * Success bodies of the flows routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows.
 */
import type * as z from 'zod';

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {};
