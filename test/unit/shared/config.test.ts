/** lambdas/shared/config.ts: when upload URLs are path-style (local S3, LocalStack) and when a value is refused. */
import { config, positiveInteger } from '#shared/config';

const NAMES = ['S3_FORCE_PATH_STYLE', 'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3'] as const;
const saved = Object.fromEntries(NAMES.map((name) => [name, process.env[name]]));

afterEach(() => {
  for (const name of NAMES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

function withEnv(values: Partial<Record<(typeof NAMES)[number], string>>): void {
  for (const name of NAMES) delete process.env[name];
  Object.assign(process.env, values);
}

it.each([
  ['AWS itself (no endpoint, nothing set)', {}, false],
  ['LocalStack Lambda (AWS_ENDPOINT_URL set)', { AWS_ENDPOINT_URL: 'http://localhost.localstack.cloud:4566' }, true],
  ['an S3-only endpoint', { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4001' }, true],
  ['explicit true', { S3_FORCE_PATH_STYLE: 'true' }, true],
  ['explicit false beats an endpoint', { S3_FORCE_PATH_STYLE: 'false', AWS_ENDPOINT_URL: 'http://x:1' }, false],
])('path-style S3 for %s', (_name, env, expected) => {
  withEnv(env);
  expect(config.s3ForcePathStyle()).toBe(expected);
});

it('refuses a value that is neither true nor false', () => {
  withEnv({ S3_FORCE_PATH_STYLE: 'yes' });
  expect(() => config.s3ForcePathStyle()).toThrow(/S3_FORCE_PATH_STYLE must be true or false, got yes/);
});

describe('positiveInteger', () => {
  const name = 'WATCHDOG_INTERVAL_SECONDS';
  afterEach(() => {
    delete process.env[name];
  });

  it('refuses what is not a positive whole number, naming the variable, instead of running with NaN', () => {
    for (const raw of ['abc', '0', '-5', '1.5', '1e400']) {
      process.env[name] = raw;
      expect(() => positiveInteger(name, 60)).toThrow(`Invalid configuration: ${name} must be a positive integer`);
    }
  });

  it('takes the default when unset or empty, and the value otherwise', () => {
    expect(positiveInteger(name, 60)).toBe(60);
    process.env[name] = '';
    expect(positiveInteger(name, 60)).toBe(60);
    process.env[name] = '15';
    expect(positiveInteger(name, 60)).toBe(15);
  });
});

describe('flowWork', () => {
  const names = ['FLOW_WORK_PER_SECOND', 'FLOW_WORK_BURST', 'BROWSER_SECOND_UNITS'];
  afterEach(() => {
    for (const name of names) delete process.env[name];
  });

  it('takes the defaults unset: 500 units a second, 1,000 a window, 10 a browser second', () => {
    expect(config.flowWork()).toEqual({ perSecond: 500, burst: 1_000, browserSecondUnits: 10 });
  });

  it('takes the values set, and refuses a burst below the rate a second', () => {
    Object.assign(process.env, { FLOW_WORK_PER_SECOND: '4', FLOW_WORK_BURST: '20', BROWSER_SECOND_UNITS: '3' });
    expect(config.flowWork()).toEqual({ perSecond: 4, burst: 20, browserSecondUnits: 3 });
    process.env.FLOW_WORK_BURST = '2';
    expect(() => config.flowWork()).toThrow('FLOW_WORK_BURST must be at least FLOW_WORK_PER_SECOND');
  });
});
