/**
 * Retention of analytics events: each event carries `expiresAt` (epoch seconds) = created_at + the retention, and
 * DynamoDB's TTL deletes it after that; queries stop returning it at once, even before TTL has removed it.
 */

export const DEFAULT_RETENTION_DAYS = 400;
export const MAX_RETENTION_DAYS = 3650;

/** ANALYTICS_RETENTION_DAYS: unset or empty = 400; anything but a whole number of days in 1..3650 fails loudly. */
export function retentionDaysFrom(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_RETENTION_DAYS;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS) {
    throw new Error(
      `Invalid configuration: ANALYTICS_RETENTION_DAYS must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}`,
    );
  }
  return days;
}

/** The TTL attribute value of an event recorded at `createdAtMs`. */
export function expiresAtEpochSeconds(createdAtMs: number, retentionDays: number): number {
  return Math.floor(createdAtMs / 1000) + retentionDays * 86_400;
}
