/**
 * Pieces the success-body schemas (responses.ts of each area) share: the instants every answer carries, the ids the
 * service makes, and the type a handler's answer is checked against at compile time.
 */
import * as z from 'zod';
import { SESSION_STATUSES } from '#core/flows/session';

/** An instant as the service writes it: ISO 8601 in UTC with milliseconds (`Date.prototype.toISOString`). */
export const instant = z.iso.datetime();

/** An id the service made (agents, tokens, organizations, sessions): a UUID. */
export const id = z.uuid();

/** Free-form JSON a caller or a flow wrote (session memory, event payloads, node outputs). */
export const freeForm = z.record(z.string(), z.unknown());

export const sessionStatus = z.enum(SESSION_STATUSES);

/** Its arrays read-only, at every depth: what the core answers is often `readonly T[]`, which `T[]` would refuse. */
export type Readable<T> = T extends readonly (infer U)[]
  ? readonly Readable<U>[]
  : T extends object
    ? { readonly [K in keyof T]: Readable<T[K]> }
    : T;

/**
 * What a handler may answer for a response schema (without `success: true`): `body satisfies Answer<typeof schema>`
 * with a type-only import ties the handler to the document at compile time, and no schema reaches its bundle.
 */
export type Answer<S extends z.ZodType> = Readable<z.input<S>>;
