/** What the analytics screen computes from the events it reads: the chart's days and series, and the CSV. */

export interface EventRecord {
  readonly id: string;
  readonly sessionId: string | null;
  readonly environment: string;
  readonly eventName: string;
  readonly payload: unknown;
  readonly created_at: string;
}

const DAY_MS = 86_400_000;

/** Events per UTC day and event name, for the chart: every day from the first to the last, a series per name. */
export function perDay(events: readonly EventRecord[]) {
  const seen = events.map((event) => Date.parse(event.created_at.slice(0, 10)));
  const days: string[] = [];
  if (seen.length > 0) {
    const last = seen.reduce((a, b) => Math.max(a, b));
    for (let day = seen.reduce((a, b) => Math.min(a, b)); day <= last; day += DAY_MS) {
      days.push(new Date(day).toISOString().slice(0, 10));
    }
  }
  const names = [...new Set(events.map((event) => event.eventName))].sort();
  const counts = new Map<string, number>();
  for (const event of events) {
    const key = `${event.eventName}|${event.created_at.slice(0, 10)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return {
    days,
    series: names.map((name) => ({ name, data: days.map((day) => counts.get(`${name}|${day}`) ?? 0) })),
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
