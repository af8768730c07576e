/**
 * Schedule triggers: checks a trigger's `cronExpression` and `timezone`, and lists when it fires. The scheduler asks
 * `firesBetween(last tick, now]`; flow validation asks `cronProblems` and `isValidTimeZone`. Matching is croner's.
 *
 * The accepted cron is the classic 5-field crontab line, nothing more:
 * - `minute hour day-of-month month day-of-week`; each field `*`, a value, a range `a-b`, a step `*\/n` or `a-b/n`,
 *   or a comma list of those. Month names JAN-DEC and day names SUN-SAT (any case) stand for numbers; day-of-week
 *   is 0-7, 0 and 7 both Sunday.
 * - No seconds field (6 fields) and no year field (7): a schedule has minute resolution, and a 6-field line is
 *   rejected rather than guessed at, since another tool would read its first field as minutes.
 * - Nicknames @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly are the lines cron(5) gives them;
 *   @reboot is rejected (a flow has no machine that boots).
 * - Quartz and croner extensions (`?`, `L`, `W`, `#`, a `+` before day-of-week, `5/15` without a range) are
 *   rejected, so an expression means the same here as in crontab and on crontab.guru.
 *
 * Day-of-month and day-of-week, as Vixie cron (and cronie) match them: when both fields are restricted, a day
 * matches if EITHER matches (`0 9 1,15 * MON` runs on the 1st, the 15th and every Monday). When either field starts
 * with `*` (`*`, `*\/2`), a day must match both; for a plain `*` that is the other field alone. croner would OR
 * `0 0 1 * *\/2`; Vixie ANDs it, and so do we (croner's `domAndDow`, formerly the inverse `legacyMode`, is chosen
 * per expression).
 *
 * Daylight saving time, croner's rules (Vixie's): a fixed-time job, with no `*` or step in minute and hour
 * (`30 2 * * *`, also `30 2,14 * * *`: croner's `fixedTimeRule: 'no-wildcard'`), runs at the first valid minute
 * after a skipped local time (02:30 on a Berlin spring-forward day runs at 03:00) and once, at the first occurrence,
 * for a local time that happens twice. Other jobs (`*\/30 * * * *`) skip the missing times and run on both
 * occurrences of a repeated one.
 */
import { Cron, type CronOptions } from 'croner';
import { type ErrorDetail, ValidationError } from '#core/errors';

/** The timezone of a schedule trigger without one (spec: default UTC). */
export const DEFAULT_TIME_ZONE = 'UTC';

const NICKNAMES: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** The widest step that still means something (day-of-week: 7, as 7 is Sunday again). */
  readonly maxStep: number;
  readonly names?: readonly string[];
  /** The value of names[0]. */
  readonly namesFrom?: number;
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59, maxStep: 60 },
  { name: 'hour', min: 0, max: 23, maxStep: 24 },
  { name: 'day-of-month', min: 1, max: 31, maxStep: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    maxStep: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
    namesFrom: 1,
  },
  {
    name: 'day-of-week',
    min: 0,
    max: 7,
    maxStep: 7,
    names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
    namesFrom: 0,
  },
];

const FIELD_LIST = 'minute hour day-of-month month day-of-week';

/** Longest month length, by month 1-12 (February: 29, it happens). */
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

interface ParsedCron {
  /** Fields as croner reads them (nickname expanded, single spaces). */
  readonly line: string;
  /** Vixie's rule: AND the day fields when either starts with `*`. */
  readonly domAndDow: boolean;
}

type FieldResult = { readonly values: ReadonlySet<number> } | { readonly problem: string };

function parseValue(text: string, spec: FieldSpec): number | string {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    return value >= spec.min && value <= spec.max ? value : `${text} is out of range ${spec.min}-${spec.max}`;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0 && spec.namesFrom !== undefined) return index + spec.namesFrom;
  return `${JSON.stringify(text)} is not a number${spec.names ? ` or a name (${spec.names[0]}-${spec.names.at(-1)})` : ''}`;
}

/** `5/15` → `5-59/15`, `MON/2` → `MON-SAT/2`: the Vixie spelling of a step that starts at a value. */
function withRange(item: string, spec: FieldSpec): string {
  const [from, step] = item.split('/');
  const last = /^\d+$/.test(from) || !spec.names ? String(spec.max) : spec.names[spec.names.length - 1];
  return `${from}-${last}/${step}`;
}

/** The Quartz or croner extension an item uses, named so the author knows why it is refused. */
function extensionIn(item: string, spec: FieldSpec): string | undefined {
  if (item.includes('?')) return '`?` is Quartz syntax; use `*`';
  if (item.includes('#')) return `${item} (nth weekday, \`#\`) is Quartz syntax and is not supported`;
  if (item.startsWith('+')) return '`+` (day-of-month AND day-of-week) is not supported';
  const lastOrWeekday = spec.name === 'day-of-month' ? /^(L|LW|L-\d+|\d+W)$/i : /^(L|\d+L|[A-Z]{3}L)$/i;
  if (spec.name.startsWith('day-of-') && lastOrWeekday.test(item)) {
    return `${item} (\`L\`, \`W\`) is Quartz syntax and is not supported`;
  }
  if (/^\d+\/\d+$/.test(item)) {
    return `${item} is not supported; give the step a range, as ${withRange(item, spec)}`;
  }
  return undefined;
}

function parseField(text: string, spec: FieldSpec): FieldResult {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') return { problem: `${spec.name}: empty list item in ${JSON.stringify(text)}` };
    const extension = extensionIn(item, spec);
    if (extension) return { problem: `${spec.name}: ${extension}` };
    const match = /^(?:(\*)|([A-Za-z0-9]+)(?:-([A-Za-z0-9]+))?)(?:\/(\d+))?$/.exec(item);
    if (!match) return { problem: `${spec.name}: ${JSON.stringify(item)} is not a value, a range or a step` };
    const [, star, fromText, toText, stepText] = match;
    let from = spec.min;
    let to = spec.max;
    if (!star) {
      const first = parseValue(fromText, spec);
      if (typeof first === 'string') return { problem: `${spec.name}: ${first}` };
      from = first;
      to = first;
      if (toText !== undefined) {
        const last = parseValue(toText, spec);
        if (typeof last === 'string') return { problem: `${spec.name}: ${last}` };
        if (last < first) return { problem: `${spec.name}: range ${item} goes backwards (ranges do not wrap around)` };
        to = last;
      } else if (stepText !== undefined) {
        return {
          problem: `${spec.name}: ${item} is not supported; give the step a range, as ${withRange(item, spec)}`,
        };
      }
    }
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1 || step > spec.maxStep) {
      return { problem: `${spec.name}: step ${stepText} must be between 1 and ${spec.maxStep}` };
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return { values };
}

/** The expression as croner should read it, or every problem with it. */
function compile(expression: string): { readonly cron: ParsedCron } | { readonly problems: string[] } {
  let line = expression.trim();
  if (line === '') return { problems: [`must have 5 fields (${FIELD_LIST}), got none`] };
  if (line.startsWith('@')) {
    const nickname = line.toLowerCase();
    if (nickname === '@reboot') {
      return { problems: ['@reboot is not a schedule (a flow has no machine that boots); use 5 cron fields'] };
    }
    if (!Object.hasOwn(NICKNAMES, nickname)) {
      return { problems: [`${line} is not a known nickname; use one of ${Object.keys(NICKNAMES).join(', ')}`] };
    }
    line = NICKNAMES[nickname];
  }
  const fields = line.split(/\s+/);
  if (fields.length !== FIELDS.length) {
    const why =
      fields.length === 6 || fields.length === 7
        ? ': seconds and years are not supported, schedules have minute resolution'
        : '';
    return { problems: [`must have 5 fields (${FIELD_LIST}), got ${fields.length}${why}`] };
  }
  const problems: string[] = [];
  const sets: ReadonlySet<number>[] = [];
  fields.forEach((field, index) => {
    const result = parseField(field, FIELDS[index]);
    if ('problem' in result) problems.push(result.problem);
    else sets.push(result.values);
  });
  if (problems.length > 0) return { problems };

  const [, , dayOfMonthField, monthField, dayOfWeekField] = fields;
  const domAndDow = dayOfMonthField.startsWith('*') || dayOfWeekField.startsWith('*');
  // When the day of the month must match, a day no chosen month has (30 in February) never comes.
  if (domAndDow) {
    const [, , daysOfMonth, months] = sets;
    const firstDay = Math.min(...daysOfMonth);
    if (![...months].some((month) => DAYS_IN_MONTH[month - 1] >= firstDay)) {
      return { problems: [`never fires: month ${monthField} has no day ${dayOfMonthField}`] };
    }
  }
  const cron = { line: fields.join(' '), domAndDow };
  try {
    cronFor(cron, DEFAULT_TIME_ZONE);
  } catch (error) {
    // The grammar above is a subset of croner's, so this is a safety net, not a path we expect.
    return { problems: [error instanceof Error ? error.message : String(error)] };
  }
  return { cron };
}

function cronFor(cron: ParsedCron, timezone: string): Cron {
  const options: CronOptions = {
    mode: '5-part',
    timezone,
    domAndDow: cron.domAndDow,
    fixedTimeRule: 'no-wildcard',
  };
  return new Cron(cron.line, options);
}

/** What is wrong with a cron expression, one readable message per problem; empty when it is valid. */
export function cronProblems(expression: string): string[] {
  const compiled = compile(expression);
  return 'problems' in compiled ? compiled.problems : [];
}

/**
 * True for an IANA time zone name the runtime knows (`Europe/Berlin`, `UTC`, links such as `US/Eastern`), matched
 * case-insensitively as Intl does. UTC offsets (`+02:00`) are refused even where a newer Intl accepts them: a fixed
 * offset ignores daylight saving time, which is rarely what a schedule means.
 */
export function isValidTimeZone(tz: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(tz)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function scheduleFor(expression: string, timezone: string | undefined): Cron {
  const zone = timezone ?? DEFAULT_TIME_ZONE;
  const compiled = compile(expression);
  const details: ErrorDetail[] = [];
  if ('problems' in compiled) {
    for (const message of compiled.problems) {
      details.push({ field: 'cronExpression', rule: 'schedule.cron', message: `cronExpression ${message}` });
    }
  }
  if (!isValidTimeZone(zone)) {
    details.push({ field: 'timezone', rule: 'schedule.timezone', message: `timezone ${zone} is not an IANA name` });
  }
  if ('problems' in compiled || details.length > 0) throw new ValidationError(details);
  return cronFor(compiled.cron, zone);
}

/**
 * Every fire time in (fromExclusive, toInclusive], earliest first, at most `max` of them (the earliest). Times are
 * computed in `timezone` (undefined: UTC). Throws ValidationError for an invalid expression or time zone.
 */
export function firesBetween(
  expression: string,
  timezone: string | undefined,
  fromExclusive: Date,
  toInclusive: Date,
  max = 100,
): Date[] {
  const schedule = scheduleFor(expression, timezone);
  const fires: Date[] = [];
  let after = fromExclusive;
  while (fires.length < max) {
    const next = schedule.nextRun(after);
    if (!next || next.getTime() > toInclusive.getTime()) break;
    fires.push(next);
    after = next;
  }
  return fires;
}

/** The first fire time strictly after `after`, or null when the schedule never fires again. */
export function nextFire(expression: string, timezone: string | undefined, after: Date): Date | null {
  return scheduleFor(expression, timezone).nextRun(after);
}
