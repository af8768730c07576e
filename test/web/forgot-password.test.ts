/**
 * A forgotten password in the web console, in real Chromium (@sparticuz/chromium through playwright-core, as
 * test/web/console.test.ts) against `npm start` with cognito-local behind its guard: the sign-in form's "Forgot your
 * password?", the same words for an address with an account and one without, the code `npm start` printed, a new
 * password checked in the page before it is sent, and the person signed in with it; one message for a wrong password
 * and an unknown address. It serves web/dist as console.test.ts does (built if missing: `npm run build:web` after a
 * change to web/).
 */
import type { Page } from 'playwright-core';
import { type ConsoleBrowser, closeConsole, openConsole } from '../helpers/console-browser';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, type TestService } from '../helpers/service';

const PERSON = { email: 'forgetful@console.example.com', password: 'First-pass-1', organization: 'Forgetful Co' };

let opened: ConsoleBrowser | undefined;
let service: TestService;
let page: Page;

beforeAll(async () => {
  opened = await openConsole();
  ({ service, page } = opened);
  const signUp = await apiClient(service, null)('POST', '/dashboard/signup', {
    body: { email: PERSON.email, password: PERSON.password, organizationName: PERSON.organization },
  });
  expect(signUp.status).toBe(201);
}, 240_000);

afterAll(() => closeConsole(opened));

async function signInWith(email: string, password: string): Promise<string> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel(/^Password/).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  return (await alert.textContent()) ?? '';
}

it('says one thing for a wrong password and an unknown address', async () => {
  await page.goto(`${service.baseUrl}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  const wrong = await signInWith(PERSON.email, 'Wrong-pass-1');
  expect(wrong).toContain('Incorrect e-mail or password.');
  expect(wrong).not.toMatch(/Exception/);
  const unknown = await signInWith('nobody@console.example.com', 'Wrong-pass-1');
  expect(unknown).toBe(wrong);
});

it('resets a forgotten password with the printed code, and signs the person in', async () => {
  await page.getByRole('button', { name: 'Forgot your password?' }).click();
  await page.getByRole('heading', { name: 'Reset your password' }).waitFor();

  // An address without an account: the same words, and no code printed.
  await page.getByLabel('E-mail').fill('nobody@console.example.com');
  await page.getByRole('button', { name: 'Send a code' }).click();
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  const noAccount = (await page.getByRole('status').textContent()) ?? '';
  expect(noAccount).toContain('a code is on its way');
  await page.getByRole('button', { name: 'Back to sign-in' }).click();
  await page.getByRole('button', { name: 'Forgot your password?' }).click();

  await page.getByLabel('E-mail').fill(PERSON.email);
  await page.getByRole('button', { name: 'Send a code' }).click();
  await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
  const withAccount = (await page.getByRole('status').textContent()) ?? '';
  expect(withAccount.replace(PERSON.email, 'X')).toBe(noAccount.replace('nobody@console.example.com', 'X'));
  const code = await pollUntil(
    async () => /Password reset code for forgetful@console\.example\.com: (\d{6})/.exec(service.output())?.[1],
    (found) => found !== undefined,
    10_000,
  );
  if (!code) throw new Error(`no code was printed:\n${service.output().slice(-2000)}`);
  expect(service.output()).not.toContain('Password reset code for nobody@console.example.com');

  // A password the pool's policy refuses is caught in the page.
  await page.getByLabel('Code').fill(code);
  await page.getByLabel(/^New password/).fill('alllowercase1!');
  await page.getByText('It needs an upper-case letter.').waitFor();
  expect(await page.getByRole('button', { name: 'Reset password' }).isDisabled()).toBe(true);
  // A wrong code, in words.
  await page.getByLabel('Code').fill(code === '000000' ? '000001' : '000000');
  await page.getByLabel(/^New password/).fill('Second-pass-2');
  await page.getByRole('button', { name: 'Reset password' }).click();
  await page.getByText('That code is not the one we sent').waitFor();
  // The right one: signed in with the new password.
  await page.getByLabel('Code').fill(code);
  await page.getByLabel(/^New password/).fill('Second-pass-2');
  await page.getByRole('button', { name: 'Reset password' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  expect(await page.getByRole('banner').textContent()).toContain(PERSON.email);

  // The old password no longer signs in; the new one does.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  expect(await signInWith(PERSON.email, PERSON.password)).toContain('Incorrect e-mail or password.');
  await page.getByLabel(/^Password/).fill('Second-pass-2');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
});
