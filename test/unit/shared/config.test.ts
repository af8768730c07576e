/** lambdas/shared/config.ts: when upload URLs are path-style (local S3, LocalStack) and when a value is refused. */
import { config } from '../../../lambdas/shared/config';

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
