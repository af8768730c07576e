import { ValidationError } from '#core/errors';
import { cronProblems, firesBetween, isValidTimeZone, nextFire } from '#core/flows/schedule';

const iso = (dates: readonly Date[]) => dates.map((date) => date.toISOString());

/** Local wall-clock time of an instant in a zone, `2025-03-30 03:00`. */
const local = (date: Date, timeZone: string) => date.toLocaleString('sv-SE', { timeZone, hour12: false }).slice(0, 16);

describe('cronProblems accepts the classic 5-field crontab line', () => {
  test.each([
    ['every minute', '* * * * *'],
    ['a fixed time', '30 2 * * *'],
    ['lists, ranges and steps', '0,15,30-45/5 */2 1-10 1,6 1-5'],
    ['a step over a range', '0 8-18/2 * * *'],
    ['month and day names, any case', '0 9 * jan-MAR Mon-fri'],
    ['day-of-week 7 is Sunday', '0 0 * * 7'],
    ['a day-of-week range ending at 7', '0 0 * * 5-7'],
    ['both day fields restricted', '0 9 1,15 * MON'],
    ['the 29th of February (leap years)', '0 0 29 2 *'],
    ['tabs and extra spaces between fields', ' 0\t0  * * * '],
    ['a step as wide as the field', '*/60 * * * *'],
    ['@yearly', '@yearly'],
    ['@annually', '@annually'],
    ['@monthly', '@monthly'],
    ['@weekly', '@weekly'],
    ['@daily', '@daily'],
    ['@midnight', '@midnight'],
    ['@hourly, any case', '@HOURLY'],
  ])('accepts %s: %j', (_behaviour, expression) => {
    expect(cronProblems(expression)).toEqual([]);
  });

  test.each([
    ['an empty expression', '', 'must have 5 fields (minute hour day-of-month month day-of-week), got none'],
    ['4 fields', '* * * *', 'must have 5 fields (minute hour day-of-month month day-of-week), got 4'],
    [
      '6 fields (seconds)',
      '0 0 12 * * *',
      'must have 5 fields (minute hour day-of-month month day-of-week), got 6: seconds and years are not supported, schedules have minute resolution',
    ],
    ['7 fields (years)', '0 0 12 * * * 2030', 'must have 5 fields (minute hour day-of-month month day-of-week), got 7'],
    ['garbage', 'every day at noon', 'must have 5 fields (minute hour day-of-month month day-of-week), got 4'],
    ['a word in a field', '0 0 * * x', 'day-of-week: "x" is not a number or a name (SUN-SAT)'],
    ['minute 60', '60 * * * *', 'minute: 60 is out of range 0-59'],
    ['hour 24', '0 24 * * *', 'hour: 24 is out of range 0-23'],
    ['day-of-month 0', '0 0 0 * *', 'day-of-month: 0 is out of range 1-31'],
    ['day-of-month 32', '0 0 32 * *', 'day-of-month: 32 is out of range 1-31'],
    ['month 13', '0 0 1 13 *', 'month: 13 is out of range 1-12'],
    ['day-of-week 8', '0 0 * * 8', 'day-of-week: 8 is out of range 0-7'],
    ['an unknown month name', '0 0 1 JANUARY *', 'month: "JANUARY" is not a number or a name (JAN-DEC)'],
    ['a day name in the month field', '0 0 1 MON *', 'month: "MON" is not a number or a name (JAN-DEC)'],
    ['a backwards range', '5-1 * * * *', 'minute: range 5-1 goes backwards (ranges do not wrap around)'],
    ['a wrapping day range', '0 0 * * FRI-MON', 'day-of-week: range FRI-MON goes backwards'],
    ['step 0', '*/0 * * * *', 'minute: step 0 must be between 1 and 60'],
    ['a step wider than the field', '0 */25 * * *', 'hour: step 25 must be between 1 and 24'],
    ['a step without a range', '5/15 * * * *', 'minute: 5/15 is not supported; give the step a range, as 5-59/15'],
    ['a day-of-week step past Saturday', '* * * * */8', 'day-of-week: step 8 must be between 1 and 7'],
    [
      'a named step without a range',
      '0 0 * * MON/2',
      'day-of-week: MON/2 is not supported; give the step a range, as MON-SAT/2',
    ],
    ['an empty list item', '0 0 * * 1,,2', 'day-of-week: empty list item in "1,,2"'],
    ['a negative number', '-1 * * * *', 'minute: "-1" is not a value, a range or a step'],
    ['Quartz ?', '0 12 ? * MON', 'day-of-month: `?` is Quartz syntax; use `*`'],
    ['Quartz L', '0 12 L * *', 'day-of-month: L (`L`, `W`) is Quartz syntax and is not supported'],
    ['Quartz W', '0 12 15W * *', 'day-of-month: 15W (`L`, `W`) is Quartz syntax'],
    ['Quartz last weekday', '0 12 * * 5L', 'day-of-week: 5L (`L`, `W`) is Quartz syntax'],
    ['Quartz #', '0 12 * * MON#2', 'day-of-week: MON#2 (nth weekday, `#`) is Quartz syntax'],
    ['croner +', '0 12 1 * +MON', 'day-of-week: `+` (day-of-month AND day-of-week) is not supported'],
    ['@reboot', '@reboot', '@reboot is not a schedule'],
    ['an unknown nickname', '@every_5m', '@every_5m is not a known nickname; use one of @yearly, @annually'],
    ['a day no chosen month has', '0 0 30 2 *', 'never fires: month 2 has no day 30'],
    ['the 31st of 30-day months', '0 0 31 4,6,9,11 *', 'never fires: month 4,6,9,11 has no day 31'],
  ])('rejects %s: %j', (_behaviour, expression, message) => {
    const problems = cronProblems(expression);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(message);
  });

  test('lists a problem for every bad field at once', () => {
    expect(cronProblems('60 24 * * *')).toEqual(['minute: 60 is out of range 0-59', 'hour: 24 is out of range 0-23']);
    expect(cronProblems('a b c d e')).toHaveLength(5);
  });

  test('a day no month has still fires when a day-of-week is also restricted (either matches)', () => {
    expect(cronProblems('0 0 30 2 MON')).toEqual([]);
  });
});

describe('isValidTimeZone accepts IANA time zone names', () => {
  test.each([
    ['UTC', true],
    ['Europe/Berlin', true],
    ['America/New_York', true],
    ['Asia/Kolkata', true],
    ['America/Argentina/Buenos_Aires', true],
    ['Etc/GMT+2', true],
    ['US/Eastern', true],
    ['Mars/Olympus', false],
    ['', false],
    [' ', false],
    ['+02:00', false],
    ['UTC+2', false],
    ['Berlin', false],
    ['Europe/Berlin ', false],
  ])('%j is %s', (tz, valid) => {
    expect(isValidTimeZone(tz)).toBe(valid);
  });
});

describe('firesBetween lists fire times in (from, to]', () => {
  test('every 30 minutes in UTC: from is exclusive, to is inclusive', () => {
    const fires = firesBetween(
      '*/30 * * * *',
      'UTC',
      new Date('2025-01-01T00:00:00Z'),
      new Date('2025-01-01T02:00:00Z'),
    );
    expect(iso(fires)).toEqual([
      '2025-01-01T00:30:00.000Z',
      '2025-01-01T01:00:00.000Z',
      '2025-01-01T01:30:00.000Z',
      '2025-01-01T02:00:00.000Z',
    ]);
  });

  test('a fire a millisecond after from is included; a fire at from is not', () => {
    const at = new Date('2025-01-01T09:00:00Z');
    expect(iso(firesBetween('0 9 * * *', 'UTC', new Date(at.getTime() - 1), at))).toEqual([at.toISOString()]);
    expect(firesBetween('0 9 * * *', 'UTC', at, new Date('2025-01-01T23:59:00Z'))).toEqual([]);
  });

  test('an undefined time zone means UTC', () => {
    const fires = firesBetween(
      '0 9 * * *',
      undefined,
      new Date('2025-01-01T00:00:00Z'),
      new Date('2025-01-02T00:00:00Z'),
    );
    expect(iso(fires)).toEqual(['2025-01-01T09:00:00.000Z']);
  });

  test('returns at most max fires, the earliest ones', () => {
    const fires = firesBetween(
      '* * * * *',
      'UTC',
      new Date('2025-01-01T00:00:00Z'),
      new Date('2025-01-02T00:00:00Z'),
      3,
    );
    expect(iso(fires)).toEqual(['2025-01-01T00:01:00.000Z', '2025-01-01T00:02:00.000Z', '2025-01-01T00:03:00.000Z']);
    expect(
      firesBetween('* * * * *', 'UTC', new Date('2025-01-01T00:00:00Z'), new Date('2025-01-02T00:00:00Z')),
    ).toHaveLength(100);
  });

  test('an empty window gives no fires', () => {
    const at = new Date('2025-01-01T00:00:00Z');
    expect(firesBetween('* * * * *', 'UTC', at, at)).toEqual([]);
  });

  test('09:00 in America/New_York is 14:00 UTC in winter and 13:00 UTC after the March DST change', () => {
    const fires = firesBetween(
      '0 9 * * *',
      'America/New_York',
      new Date('2025-03-08T00:00:00Z'),
      new Date('2025-03-10T23:59:00Z'),
    );
    expect(iso(fires)).toEqual(['2025-03-08T14:00:00.000Z', '2025-03-09T13:00:00.000Z', '2025-03-10T13:00:00.000Z']);
  });

  test('09:00 in Asia/Kolkata (+05:30, no DST) is 03:30 UTC', () => {
    const fires = firesBetween(
      '0 9 * * MON-FRI',
      'Asia/Kolkata',
      new Date('2025-06-06T00:00:00Z'),
      new Date('2025-06-10T00:00:00Z'),
    );
    // Friday the 6th and Monday the 9th; the weekend is skipped.
    expect(iso(fires)).toEqual(['2025-06-06T03:30:00.000Z', '2025-06-09T03:30:00.000Z']);
  });

  test('a day in the Kolkata calendar starts at 18:30 UTC the day before', () => {
    const fires = firesBetween(
      '30 0 1 * *',
      'Asia/Kolkata',
      new Date('2025-05-31T00:00:00Z'),
      new Date('2025-06-01T00:00:00Z'),
    );
    expect(iso(fires)).toEqual(['2025-05-31T19:00:00.000Z']);
  });
});

describe('daylight saving time in Europe/Berlin', () => {
  // 2025-03-30: 02:00 CET jumps to 03:00 CEST (02:00-02:59 does not exist).
  const springDay = [new Date('2025-03-29T23:00:00Z'), new Date('2025-03-30T22:00:00Z')] as const;
  // 2025-10-26: 03:00 CEST falls back to 02:00 CET (02:00-02:59 happens twice).
  const fallDay = [new Date('2025-10-25T22:00:00Z'), new Date('2025-10-26T23:00:00Z')] as const;
  const berlin = (dates: readonly Date[]) => dates.map((date) => local(date, 'Europe/Berlin'));

  test('spring forward: a fixed time in the gap (02:30) runs at 03:00, the first valid minute after it', () => {
    const fires = firesBetween('30 2 * * *', 'Europe/Berlin', ...springDay);
    expect(iso(fires)).toEqual(['2025-03-30T01:00:00.000Z']);
    expect(berlin(fires)).toEqual(['2025-03-30 03:00']);
  });

  test('spring forward: a list of fixed times is fixed-time too (Vixie), so 02:30 still runs at 03:00', () => {
    expect(berlin(firesBetween('30 2,14 * * *', 'Europe/Berlin', ...springDay))).toEqual([
      '2025-03-30 03:00',
      '2025-03-30 14:30',
    ]);
  });

  test('spring forward: an interval job skips the times that do not exist', () => {
    const fires = firesBetween(
      '*/30 * * * *',
      'Europe/Berlin',
      new Date('2025-03-30T00:00:00Z'),
      new Date('2025-03-30T02:00:00Z'),
    );
    expect(berlin(fires)).toEqual(['2025-03-30 01:30', '2025-03-30 03:00', '2025-03-30 03:30', '2025-03-30 04:00']);
  });

  test('fall back: a fixed time that happens twice (02:30) runs once, at the first occurrence', () => {
    const fires = firesBetween('30 2 * * *', 'Europe/Berlin', ...fallDay);
    expect(iso(fires)).toEqual(['2025-10-26T00:30:00.000Z']);
  });

  test('fall back: an interval job runs on both occurrences of the repeated hour', () => {
    const fires = firesBetween(
      '*/30 * * * *',
      'Europe/Berlin',
      new Date('2025-10-25T23:00:00Z'),
      new Date('2025-10-26T02:00:00Z'),
    );
    expect(iso(fires)).toEqual([
      '2025-10-25T23:30:00.000Z', // 01:30 CEST
      '2025-10-26T00:00:00.000Z', // 02:00 CEST
      '2025-10-26T00:30:00.000Z', // 02:30 CEST
      '2025-10-26T01:00:00.000Z', // 02:00 CET
      '2025-10-26T01:30:00.000Z', // 02:30 CET
      '2025-10-26T02:00:00.000Z', // 03:00 CET
    ]);
  });

  test('a daily 09:00 keeps local time across both changes (23 and 25 hour days)', () => {
    expect(berlin(firesBetween('0 9 * * *', 'Europe/Berlin', ...springDay))).toEqual(['2025-03-30 09:00']);
    expect(iso(firesBetween('0 9 * * *', 'Europe/Berlin', ...springDay))).toEqual(['2025-03-30T07:00:00.000Z']);
    expect(iso(firesBetween('0 9 * * *', 'Europe/Berlin', ...fallDay))).toEqual(['2025-10-26T08:00:00.000Z']);
  });
});

describe('day-of-month and day-of-week, as Vixie cron matches them', () => {
  const june = [new Date('2025-06-01T00:00:00Z'), new Date('2025-06-30T23:59:00Z')] as const;
  const days = (expression: string) =>
    firesBetween(expression, 'UTC', ...june).map((date) => date.toISOString().slice(8, 10));

  test('both restricted: a day matches if either matches (the 1st, the 15th or a Friday)', () => {
    expect(days('0 12 1,15 * FRI')).toEqual(['01', '06', '13', '15', '20', '27']);
  });

  test('day-of-week * : the day-of-month alone', () => {
    expect(days('0 12 1,15 * *')).toEqual(['01', '15']);
  });

  test('day-of-month * : the day-of-week alone', () => {
    expect(days('0 12 * * FRI')).toEqual(['06', '13', '20', '27']);
  });

  test('a field starting with * (*/2) makes both fields required, as in Vixie cron and cronie', () => {
    // June 2025: the 1st is a Sunday (0, even), so it matches; the 15th is a Sunday too.
    expect(days('0 12 1,15,16 * */2')).toEqual(['01', '15']);
  });

  test('both restricted: 0 and 7 are both Sunday', () => {
    expect(days('0 12 31 * 7')).toEqual(days('0 12 31 * 0'));
    expect(days('0 12 31 * 7')).toEqual(['01', '08', '15', '22', '29']);
  });
});

describe('nextFire', () => {
  test('is the first fire strictly after the instant', () => {
    expect(nextFire('0 9 * * *', 'Asia/Kolkata', new Date('2025-06-01T03:30:00Z'))?.toISOString()).toBe(
      '2025-06-02T03:30:00.000Z',
    );
    expect(nextFire('@monthly', 'UTC', new Date('2025-06-15T00:00:00Z'))?.toISOString()).toBe(
      '2025-07-01T00:00:00.000Z',
    );
  });

  test('matches the first of firesBetween', () => {
    const from = new Date('2025-03-29T23:00:00Z');
    const [first] = firesBetween('30 2 * * *', 'Europe/Berlin', from, new Date('2025-04-30T00:00:00Z'));
    expect(nextFire('30 2 * * *', 'Europe/Berlin', from)).toEqual(first);
  });
});

describe('invalid schedules', () => {
  test.each([
    ['an invalid expression', '0 0 12 * * *', 'UTC', ['cronExpression']],
    ['an invalid time zone', '0 9 * * *', 'Mars/Olympus', ['timezone']],
    ['both', '61 * * * *', '+02:00', ['cronExpression', 'timezone']],
  ])('firesBetween and nextFire throw a ValidationError for %s', (_behaviour, expression, timezone, fields) => {
    const from = new Date('2025-01-01T00:00:00Z');
    for (const call of [
      () => firesBetween(expression, timezone, from, new Date('2025-01-02T00:00:00Z')),
      () => nextFire(expression, timezone, from),
    ]) {
      let thrown: unknown;
      try {
        call();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ValidationError);
      expect((thrown as ValidationError).details.map((detail) => detail.field)).toEqual(fields);
    }
  });
});
