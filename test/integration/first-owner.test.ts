/**
 * `npm run first-owner` (scripts/first-owner.ts), the documented command that makes the first owner of a deployment by
 * invitation, run as a process against the local engines the way it runs against a stack: the outputs file of
 * `cdk deploy`, the SDK's endpoint variables. The owner it makes signs in, chooses a password and owns the new
 * organization; a second run for the same person makes them the owner of a second organization, their password kept.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LOCAL_REGION, loadEngineCredentials } from '../../lib/local/engine-credentials';
import { cognitoOf, firstSignIn, type ServiceCognito, signIn as signInWith } from '../helpers/people';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, startService, type TestService } from '../helpers/service';

const ROOT = resolve(__dirname, '../..');
let service: TestService;
let cognito: ServiceCognito;
let folder: string;

beforeAll(async () => {
  service = await startService({ env: { COGNITO: 'on' } });
  cognito = cognitoOf(service);
  folder = mkdtempSync(join(tmpdir(), 'aps-first-owner-'));
});
afterAll(async () => {
  cognito?.client.destroy();
  await service?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

const signIn = (email: string, password: string) => signInWith(cognito, email, password);

/** The script as a process, with the local engines as its AWS and their table and pool names as the stack's outputs. */
function firstOwner(...args: string[]) {
  const outputs = join(folder, 'cdk-outputs.json');
  writeFileSync(
    outputs,
    JSON.stringify({
      'agent-platform-dev': {
        ApiUrl: service.baseUrl,
        UserPoolId: cognito.userPoolId,
        UserPoolClientId: cognito.clientId,
        MembershipsTableName: 'memberships',
        OrganizationsTableName: 'organizations',
      },
    }),
  );
  const credentials = loadEngineCredentials(service.dataDir as string);
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/first-owner.ts', '--outputs', outputs, ...args],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        ...process.env,
        AWS_REGION: LOCAL_REGION,
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_ENDPOINT_URL_DYNAMODB: service.dynamodbEndpoint as string,
        AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: cognito.endpoint,
      },
    },
  );
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

it('makes an organization and its owner, who signs in with the temporary password and owns it', async () => {
  const run = firstOwner('--email', 'First.Owner@Example.com', '--organization', 'Acme', '--print-temporary-password');
  expect(run).toMatchObject({ status: 0, stderr: '' });
  const temporary = /Temporary password of first\.owner@example\.com: (\S+)/.exec(run.stdout)?.[1];
  const organizationId = /Organization (\S+) "Acme": owner first\.owner@example\.com/.exec(run.stdout)?.[1];
  expect({ temporary, organizationId }).toEqual({ temporary: expect.any(String), organizationId: expect.any(String) });

  const idToken = await firstSignIn(cognito, 'first.owner@example.com', temporary as string, 'Chosen-pass-3');
  const api = apiClient(service, idToken);
  const organization = await api<Record<string, unknown>>('GET', '/dashboard/organization');
  expect(organization.body).toMatchObject({
    organizationId,
    name: 'Acme',
    caller: { kind: 'person', email: 'first.owner@example.com', role: 'owner' },
  });
  // An owner: they invite the next person.
  const invited = await api('POST', '/dashboard/members', { body: { email: 'second@example.com', role: 'owner' } });
  expect(invited.status).toBe(201);
});

it('makes a second organization for a person who has one, keeping their password, and refuses bad arguments', async () => {
  const again = firstOwner(
    '--email',
    'first.owner@example.com',
    '--organization',
    'Another',
    '--print-temporary-password',
  );
  expect(again).toMatchObject({ status: 0, stderr: '' });
  expect(again.stdout).toContain('(already in the user pool: their password stays theirs)');
  expect(again.stdout).not.toContain('Temporary password');
  const idToken = await signIn('first.owner@example.com', 'Chosen-pass-3');
  // Written by another process: the runtime's read cache of memberships sees it within 5 s (docs/ARCHITECTURE.md).
  const api = apiClient(service, idToken);
  const me = await pollUntil(
    () => api<{ organizations: { name: string; role: string }[] }>('GET', '/dashboard/me'),
    (answer) => answer.body.organizations.length === 2,
    10_000,
  );
  expect(me.body.organizations.map((o) => `${o.name} ${o.role}`)).toEqual(['Acme owner', 'Another owner']);
  const badEmail = firstOwner('--email', 'not-an-address', '--organization', 'X');
  expect(badEmail).toMatchObject({ status: 2, stderr: expect.stringContaining('email: must be an e-mail address') });
  const missing = firstOwner('--email', 'third@example.com');
  expect(missing).toMatchObject({ status: 2, stderr: expect.stringContaining('usage: npm run first-owner') });
});
