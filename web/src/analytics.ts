/** What the analytics screen computes from the events it reads: the chart's days and series, and the CSV. */

import type { Answer } from './answers';

/** One analytics event, as the events query answers it. */
export type EventRecord = Answer<'/dashboard/agents/{agentId}/events', 'post'>['data'][number];

const DAY_MS = 86_400_000;

/** The most days the chart draws: a wider range is drawn from the first to the last day that has events. */
export const CHART_MAX_DAYS = 3660;

/**
 * Events per UTC day and event name, for the chart: a series per name, and every day of the range chosen (`from` and
 * `to`, `YYYY-MM-DD`, UTC, both inclusive), so a quiet stretch shows as quiet; a side left open is the first (or last)
 * day with events, and with no range and no events there are no days. A range of more than CHART_MAX_DAYS days is
 * drawn over the days that have events.
 */
export function perDay(events: readonly EventRecord[], range: { from?: string; to?: string } = {}) {
  const seen = events.map((event) => Date.parse(event.created_at.slice(0, 10)));
  const first = seen.length > 0 ? seen.reduce((a, b) => Math.min(a, b)) : undefined;
  const last = seen.length > 0 ? seen.reduce((a, b) => Math.max(a, b)) : undefined;
  const day = (value: string | undefined) => {
    const parsed = value ? Date.parse(value.slice(0, 10)) : Number.NaN;
    return Number.isNaN(parsed) ? undefined : parsed;
  };
  let start = day(range.from) ?? first ?? day(range.to);
  let end = day(range.to) ?? last ?? day(range.from);
  if (start !== undefined && end !== undefined && (end < start || (end - start) / DAY_MS >= CHART_MAX_DAYS)) {
    start = first;
    end = last;
  }
  const days: string[] = [];
  if (start !== undefined && end !== undefined) {
    for (let at = start; at <= end; at += DAY_MS) days.push(new Date(at).toISOString().slice(0, 10));
  }
  const names = [...new Set(events.map((event) => event.eventName))].sort();
  const counts = new Map<string, number>();
  for (const event of events) {
    const key = `${event.eventName}|${event.created_at.slice(0, 10)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return {
    days,
    series: names.map((name) => ({ name, data: days.map((at) => counts.get(`${name}|${at}`) ?? 0) })),
  };
}

/** A CSV cell: quoted when it holds a comma, quote or line break; a leading = + - @ is defused for spreadsheets. */
function cell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function eventsCsv(events: readonly EventRecord[]): string {
  const header = ['id', 'created_at', 'eventName', 'environment', 'sessionId', 'payload'];
  const rows = events.map((event) =>
    [event.id, event.created_at, event.eventName, event.environment, event.sessionId, event.payload]
      .map(cell)
      .join(','),
  );
  return `${[header.join(','), ...rows].join('\r\n')}\r\n`;
}
