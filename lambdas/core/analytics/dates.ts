/**
 * The date filters of the analytics query. A bound is an ISO 8601 date (`2024-05-01`, a UTC day) or date-time, in
 * the extended format, with a zone (`2024-05-01T10:30Z`, `…:15.250+02:00`) or without one, which is taken as UTC
 * (`2024-05-01T10:30:00`). Both bounds are inclusive at the precision written: an endDate of `2024-05-01` includes
 * the whole day (to 23:59:59.999 UTC), `…T10:30Z` the whole minute.
 */

const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** The instants a written date covers, in epoch milliseconds: `[first, last]`, both inclusive. */
export interface InstantSpan {
  readonly first: number;
  readonly last: number;
}

const DAY_MS = 86_400_000;

/** The span of `value`, or undefined when it is not an ISO 8601 date or date-time that exists on the calendar. */
export function parseIsoSpan(value: string): InstantSpan | undefined {
  const match = ISO_8601.exec(value);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 to 1900–1999.
  const dayStart = new Date(0).setUTCFullYear(year, month - 1, day);
  if (h === undefined) return { first: dayStart, last: dayStart + DAY_MS - 1 };

  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const offset = zoneOffsetMs(zone);
  if (offset === undefined) return undefined;
  const millis = fraction === undefined ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  const first = dayStart + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset;
  let span: number;
  if (s === undefined) span = 60_000;
  else if (fraction === undefined) span = 1000;
  else span = 10 ** Math.max(0, 3 - fraction.length);
  return { first, last: first + span - 1 };
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
}

/** A date-time without a zone is UTC: the service records and answers every time in UTC. */
function zoneOffsetMs(zone: string | undefined): number | undefined {
  if (zone === undefined || zone === 'Z') return 0;
  const match = /^([+-])(\d{2})(?::?(\d{2}))?$/.exec(zone);
  if (!match) return undefined;
  const hours = Number(match[2]);
  const minutes = match[3] === undefined ? 0 : Number(match[3]);
  if (hours > 23 || minutes > 59) return undefined;
  return (match[1] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000;
}

/** The inclusive range of the query in epoch milliseconds; each end open when its filter is absent. */
export interface DateRange {
  readonly fromMs?: number;
  readonly toMs?: number;
}

export function dateRange(startDate: string | undefined, endDate: string | undefined): DateRange {
  const start = startDate === undefined ? undefined : parseIsoSpan(startDate);
  const end = endDate === undefined ? undefined : parseIsoSpan(endDate);
  return { fromMs: start?.first, toMs: end?.last };
}
