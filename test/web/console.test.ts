/**
 * The web console (issue 19) in real Chromium (the Chromium of @sparticuz/chromium, driven by playwright-core) against
 * `npm start` with cognito-local: a person signs up and owns a new organization; creates, renames and deletes an agent;
 * sees an API error with its code and field; creates a token (its secret shown once, usable) and revokes it (refused
 * from then on); invites a member, who signs in with the printed temporary password, chooses their own and sees what
 * a member sees; signs out. axe checks every screen (no serious or critical violation), and the first screen's
 * JavaScript and CSS are weighed against the 300 KB (gzip) budget.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM_FLAGS, packagedChromium } from '#adapters/browser/playwright-driver';
import { uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, startService, type TestService } from '../helpers/service';

const ROOT = resolve(__dirname, '../..');
const DIST = join(ROOT, 'web/dist');
const FIRST_SCREEN_BUDGET_BYTES = 300 * 1024;

let service: TestService;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  // The build npm start would make (CONSOLE_BUILD is off in the test runtimes); kept if another suite made it.
  const build = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-web.ts', '--if-missing'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (build.status !== 0) throw new Error(`the console did not build:\n${build.stdout}\n${build.stderr}`);
  [service, browser] = await Promise.all([
    startService({ env: { COGNITO: 'on' } }),
    packagedChromium().then((executablePath) => chromium.launch({ executablePath, args: CHROMIUM_FLAGS })),
  ]);
  // Reduced motion: the console's dialogs then open without a fade, which axe would read as faint text.
  page = await (await browser.newContext({ reducedMotion: 'reduce' })).newPage();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

/** No serious or critical accessibility violation on the page as it is now. */
async function expectAccessible(screen: string) {
  const { violations } = await new AxeBuilder({ page }).analyze();
  const serious = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(serious).toEqual([]);
}

/** The signed-in person's ID token, from the console's session. */
async function personToken(): Promise<string> {
  const session = await page.evaluate(() => sessionStorage.getItem('agent-platform.session'));
  return (JSON.parse(session ?? '{}') as { idToken: string }).idToken;
}

const OWNER = { email: 'owner@console.example.com', password: 'Console-pass-1', organization: 'Console Co' };

it('weighs the first screen within its budget', () => {
  const manifest = JSON.parse(readFileSync(join(DIST, '.vite/manifest.json'), 'utf8')) as Record<
    string,
    { file: string; imports?: string[]; css?: string[]; isEntry?: boolean }
  >;
  const files = new Set<string>();
  const visit = (key: string) => {
    const chunk = manifest[key];
    if (!chunk || files.has(chunk.file)) return;
    files.add(chunk.file);
    for (const css of chunk.css ?? []) files.add(css);
    for (const imported of chunk.imports ?? []) visit(imported);
  };
  visit('index.html');
  const gzipped = [...files].reduce((sum, file) => sum + gzipSync(readFileSync(join(DIST, file))).length, 0);
  console.log(`[console] first screen: ${files.size} files, ${(gzipped / 1024).toFixed(1)} KB gzip (budget 300 KB)`);
  expect(gzipped).toBeLessThanOrEqual(FIRST_SCREEN_BUDGET_BYTES);
});

it('lets a person sign up and land in their new organization', async () => {
  await page.goto(`${service.baseUrl}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await expectAccessible('sign-in');
  await page.getByRole('button', { name: 'No account? Sign up' }).click();
  await page.getByLabel('E-mail').fill(OWNER.email);
  await page.getByLabel('Organization name').fill(OWNER.organization);
  await page.getByLabel(/^Password/).fill('weak');
  await page.getByRole('button', { name: 'Sign up', exact: true }).click();
  // The API's refusal, with its code and the field and rule it names.
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  expect(await refusal.textContent()).toMatch(/VALIDATION_ERROR \(400\)[\s\S]*password[\s\S]*minLength/);
  await expectAccessible('sign-up with an error');
  await page.getByLabel(/^Password/).fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign up', exact: true }).click();
  await page.getByRole('heading', { name: 'Agents' }).waitFor();
  expect(await page.getByRole('banner').textContent()).toContain(`${OWNER.email} (owner)`);
  expect(await page.getByRole('banner').textContent()).toContain(OWNER.organization);
  expect(new URL(page.url()).pathname).toBe('/agents');
});

it('creates, renames and deletes an agent, naming what the deletion takes', async () => {
  await page.getByLabel("New agent's name").fill('Support bot');
  await page.getByRole('button', { name: 'Create agent' }).click();
  const table = page.getByRole('table', { name: 'Agents' });
  await table.getByRole('cell', { name: 'Support bot' }).waitFor();
  await expectAccessible('agents');

  await table.getByRole('button', { name: 'Rename' }).click();
  await table.getByLabel('New name').fill('Helpdesk bot');
  await table.getByRole('button', { name: 'Save' }).click();
  await table.getByRole('cell', { name: 'Helpdesk bot' }).waitFor();

  // Through the API, with the person's own ID token (the console's session): the rename is stored.
  const agentId = (
    (await page
      .getByRole('cell', { name: /^[0-9a-f-]{36}$/ })
      .first()
      .textContent()) ?? ''
  ).trim();
  const person = apiClient(service, await personToken());
  expect((await person('GET', `/dashboard/agents/${agentId}`)).body).toMatchObject({ displayName: 'Helpdesk bot' });

  await table.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete Helpdesk bot?' });
  expect(await dialog.textContent()).toMatch(/knowledge bases[\s\S]*documents and chunks[\s\S]*sessions/);
  await expectAccessible('delete confirmation');
  await dialog.getByRole('button', { name: 'Delete agent' }).click();
  await page.getByText('No agents yet.').waitFor();
  expect((await person('GET', `/dashboard/agents/${agentId}`)).status).toBe(404);
});

it('creates a token whose secret is shown once and works, and revokes it', async () => {
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('heading', { name: 'Tokens' }).waitFor();
  await page.getByLabel('Token name').fill('ci pipeline');
  await page.getByRole('checkbox', { name: 'dashboard' }).check();
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.getByTestId('new-token').textContent()) ?? '';
  expect(token).toMatch(/^aps_/);
  const row = page.getByRole('row', { name: /ci pipeline/ });
  expect(await row.textContent()).toContain(token.slice(0, 8));
  expect(await row.textContent()).not.toContain(token.slice(8));
  await expectAccessible('tokens');

  const call = apiClient(service, token);
  expect((await call('GET', '/dashboard/agents')).status).toBe(200);
  await row.getByRole('button', { name: 'Revoke' }).click();
  await page.getByRole('dialog', { name: 'Revoke ci pipeline?' }).getByRole('button', { name: 'Revoke token' }).click();
  await row.waitFor({ state: 'detached' });
  expect((await call('GET', '/dashboard/agents')).status).toBe(401);
});

it('invites a member, who signs in with the printed password, chooses their own and sees what a member sees', async () => {
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByLabel('E-mail').fill('member@console.example.com');
  await page.getByRole('button', { name: 'Invite' }).click();
  await page
    .getByRole('status')
    .getByText(/member@console\.example\.com is invited/)
    .waitFor();
  await page
    .getByRole('table', { name: 'Members' })
    .getByRole('cell', { name: 'member@console.example.com' })
    .waitFor();
  await expectAccessible('members (owner)');
  const printed = await pollUntil(
    async () => /Invitation for member@console\.example\.com: temporary password (\S+)/.exec(service.output())?.[1],
    (value) => value !== undefined,
    10_000,
  );
  if (!printed) throw new Error('no invitation was printed');

  const memberPage = await (await browser.newContext({ reducedMotion: 'reduce' })).newPage();
  await memberPage.goto(`${service.baseUrl}/members`);
  await memberPage.getByLabel('E-mail').fill('member@console.example.com');
  await memberPage.getByLabel(/^Password/).fill(printed);
  await memberPage.getByRole('button', { name: 'Sign in' }).click();
  await memberPage.getByRole('heading', { name: 'Choose your password' }).waitFor();
  await memberPage.getByLabel(/^New password/).fill('Member-pass-2');
  await memberPage.getByRole('button', { name: 'Save password' }).click();
  await memberPage.getByRole('heading', { name: 'Members' }).waitFor();
  expect(await memberPage.getByRole('banner').textContent()).toContain('member@console.example.com (member)');
  // A member reads the people and manages none of them, and has no tokens screen.
  await memberPage.getByRole('cell', { name: OWNER.email }).waitFor();
  expect(await memberPage.getByRole('button', { name: 'Invite' }).count()).toBe(0);
  expect(await memberPage.getByRole('link', { name: 'Tokens' }).count()).toBe(0);
  await memberPage.close();
});

it("manages an agent's knowledge bases and queries one in the playground, with a label filter and explain", async () => {
  await page.getByRole('link', { name: 'Agents' }).click();
  await page.getByLabel("New agent's name").fill('Docs bot');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page.getByRole('table', { name: 'Agents' }).getByRole('cell', { name: 'Docs bot' }).waitFor();
  await page
    .getByRole('row', { name: /Docs bot/ })
    .getByRole('link', { name: 'Knowledge' })
    .click();
  await page.getByRole('heading', { name: 'Knowledge of Docs bot' }).waitFor();
  for (const name of ['Manuals', 'Drafts']) {
    await page.getByLabel('Knowledge base name').fill(name);
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await page.getByRole('table', { name: 'Knowledge bases' }).getByRole('cell', { name, exact: true }).waitFor();
  }
  await expectAccessible('knowledge bases');
  // Deleting one names what goes with it.
  await page
    .getByRole('row', { name: /Drafts/ })
    .getByRole('button', { name: 'Delete' })
    .click();
  const dialog = page.getByRole('dialog', { name: 'Delete Drafts?' });
  expect(await dialog.textContent()).toMatch(/documents, their files and chunks[\s\S]*all three environments/);
  await dialog.getByRole('button', { name: 'Delete knowledge base' }).click();
  await page.getByRole('row', { name: /Drafts/ }).waitFor({ state: 'detached' });

  // Two documents in development through the customer API, with a token the owner makes for it.
  const path = new URL(page.url()).pathname.split('/');
  const agentId = path[2];
  const knowledgeBaseId = (
    (await page
      .getByRole('row', { name: /Manuals/ })
      .getByRole('cell', { name: /^[0-9a-f-]{36}$/ })
      .textContent()) ?? ''
  ).trim();
  const person = apiClient(service, await personToken());
  const minted = await person<{ token: string }>('POST', '/dashboard/tokens', {
    body: { name: 'uploads', scopes: ['knowledge-management'] },
  });
  const uploads = apiClient(service, minted.body.token);
  const dataset = { agentId, knowledgeBaseId, environment: 'development' as const };
  const keys = [
    (
      await uploadDocument(
        uploads,
        dataset,
        { fileName: 'router.txt', label1: 'topic:hardware' },
        'Reset the router by holding the reset button for ten seconds.',
      )
    ).link.s3Key,
    (
      await uploadDocument(
        uploads,
        dataset,
        { fileName: 'billing.txt', label1: 'topic:billing' },
        'Reset your billing cycle from the account page.',
      )
    ).link.s3Key,
  ];
  for (const s3Key of keys) {
    const done = await pollUntil(
      () => uploads<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key } }),
      (response) => response.body.status !== 'uploaded',
    );
    expect(done.body.status).toBe('ready');
  }

  await page
    .getByRole('row', { name: /Manuals/ })
    .getByRole('link', { name: 'Playground' })
    .click();
  await page.getByRole('heading', { name: 'Retrieval playground' }).waitFor();
  await page.getByRole('textbox', { name: 'Query' }).fill('reset');
  await page.getByRole('button', { name: 'Add a label filter' }).click();
  await page.getByLabel('Filter 1 value').fill('topic:hardware');
  await page.getByRole('button', { name: 'Query', exact: true }).click();
  const results = page.getByRole('region', { name: 'Results' });
  await page.getByRole('heading', { name: '1 result' }).waitFor();
  expect(await results.textContent()).toContain('Reset the router');
  expect(await results.textContent()).not.toContain('billing cycle');
  const explain = page.getByRole('region', { name: 'Explain' });
  expect(await explain.textContent()).toMatch(/"key":"label1"[\s\S]*"value":"topic:hardware"/);
  expect(await page.getByRole('table', { name: 'Candidates' }).getByRole('row').count()).toBe(2); // header + 1
  await expectAccessible('retrieval playground');

  // Generate: an answer whose citations point at the result cards.
  await page.getByRole('button', { name: 'Generate' }).click();
  await page.getByRole('heading', { name: 'Answer' }).waitFor();
  const citation = page.getByRole('link', { name: '[1]' });
  expect(await citation.getAttribute('href')).toBe('#result-1');
  expect(await page.locator('#result-1').textContent()).toContain('Reset the router');

  // Memory the API cannot take is refused before anything is sent.
  await page.getByLabel('Memory (JSON)').fill('[1, 2]');
  await page.getByRole('button', { name: 'Query', exact: true }).click();
  await page.getByText('Memory must be a JSON object').waitFor();
});

it('signs out to the sign-in screen', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.reload();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
});
