/** The credentials of a data folder (lib/local/engines.ts): made once, random, owner-only. */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CREDENTIALS_FILE, loadEngineCredentials } from '../../../lib/local/engine-credentials';

const mode = (path: string): number => statSync(path).mode & 0o777;
const folders: string[] = [];
const folder = (): string => {
  const made = mkdtempSync(join(tmpdir(), 'engine-credentials-'));
  folders.push(made);
  return made;
};

afterAll(() => {
  for (const made of folders) rmSync(made, { recursive: true, force: true });
});

it('are made at the first start of a folder: random, in a file only its owner may read', () => {
  const dir = folder();
  const made = loadEngineCredentials(dir);
  expect(made.accessKeyId).toMatch(/^LOCAL[0-9A-F]{16}$/);
  expect(made.secretAccessKey).toMatch(/^[A-Za-z0-9_-]{40}$/);
  expect(mode(join(dir, CREDENTIALS_FILE))).toBe(0o600);
});

it('stay the same for that folder, and differ for another one', () => {
  const dir = folder();
  const made = loadEngineCredentials(dir);
  expect(loadEngineCredentials(dir)).toEqual(made);
  const theirs = loadEngineCredentials(folder());
  expect(theirs.accessKeyId).not.toBe(made.accessKeyId);
  expect(theirs.secretAccessKey).not.toBe(made.secretAccessKey);
});

it('are made owner-only again when their file was opened to others', () => {
  const dir = folder();
  const made = loadEngineCredentials(dir);
  chmodSync(join(dir, CREDENTIALS_FILE), 0o644);
  expect(loadEngineCredentials(dir)).toEqual(made);
  expect(mode(join(dir, CREDENTIALS_FILE))).toBe(0o600);
});

it("refuse a file that holds no credentials of theirs (s3rver's fixed pair), saying what to do", () => {
  const dir = folder();
  writeFileSync(join(dir, CREDENTIALS_FILE), '{"accessKeyId":"S3RVER","secretAccessKey":"S3RVER"}', { mode: 0o600 });
  expect(() => loadEngineCredentials(dir)).toThrow(/remove it, and the next start makes new ones/);
});
