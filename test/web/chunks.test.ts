/**
 * The chunk view of a document (issue 38, item 4) in real Chromium against `npm start` with cognito-local: a person
 * signs up; through the API (a token they make) an agent, a knowledge base and a document of more than one page of
 * chunks; from the document's row they open its chunks, see them in order, search within the document; from a
 * retrieval playground hit they open its chunk, which the view loads pages to reach and marks. axe checks each state;
 * the view's picture is `chunk-view` (docs/screenshots with `npm run screenshots`).
 */
import type { Page } from 'playwright-core';
import {
  expectAccessible as axe,
  type ConsoleBrowser,
  closeConsole,
  openConsole,
  screenshot as picture,
} from '../helpers/console-browser';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import { client as apiClient, type TestService } from '../helpers/service';

let opened: ConsoleBrowser | undefined;
let service: TestService;
let page: Page;
let dataset: Dataset;

const OWNER = { email: 'chunks@console.example.com', password: 'Chunks-pass-1', organization: 'Chunk Co' };

/**
 * 500 paragraphs of about 160 characters (70 or so chunks: more than the view's first page of 50); the one about the
 * Zebra firewall is near the end, so a hit on it sits on the second page.
 */
const PARAGRAPHS = Array.from(
  { length: 500 },
  (_, i) =>
    `Paragraph ${i + 1}: the router model R${i + 1} is installed, configured and reset with its cable, ` +
    `its power supply and ${i === 479 ? 'the rules of the Zebra firewall' : 'the admin page of the device'}.`,
);

beforeAll(async () => {
  opened = await openConsole();
  ({ service, page } = opened);
}, 240_000);

afterAll(() => closeConsole(opened));

const expectAccessible = (screen: string) => axe(page, screen);
const screenshot = (name: string) => picture(page, name);

it('signs up, and gets a ready document of more than one page of chunks', async () => {
  await page.goto(`${service.baseUrl}/`);
  await page.getByRole('button', { name: 'No account? Sign up' }).click();
  await page.getByLabel('E-mail').fill(OWNER.email);
  await page.getByLabel('Organization name').fill(OWNER.organization);
  await page.getByLabel(/^Password/).fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign up', exact: true }).click();
  await page.getByRole('heading', { name: 'Agents' }).waitFor();

  // The person's ID token makes a token for the API's own routes (upload-link and upload-complete are /api/v1).
  const session = await page.evaluate('sessionStorage.getItem("agent-platform.session")');
  const person = apiClient(service, (JSON.parse(String(session)) as { idToken: string }).idToken);
  const made = await person<{ token: string }>('POST', '/dashboard/tokens', {
    body: { name: 'chunk test', scopes: ['dashboard', 'knowledge-management'] },
  });
  expect(made.status).toBe(201);
  const call = apiClient(service, made.body.token);
  dataset = await createDataset(call, 'development');
  const { link } = await uploadDocument(
    call,
    dataset,
    { fileName: 'routers.txt', label1: 'team:support' },
    PARAGRAPHS.join('\n\n'),
  );
  await pollUntil(
    () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
    (r) => r.body.status === 'ready',
  );
});

it("opens a ready document's chunks from its row, in order, with their metadata", async () => {
  await page.goto(`${service.baseUrl}/agents/${dataset.agentId}/knowledge/${dataset.knowledgeBaseId}`);
  await page.getByRole('link', { name: 'Chunks of routers.txt' }).click();
  await page.getByRole('heading', { name: 'Chunks of routers.txt', level: 1 }).waitFor();
  const count = page.getByText(/^\d+ chunks$/);
  await count.waitFor();
  const total = Number(((await count.textContent()) ?? '').split(' ')[0]);
  expect(total).toBeGreaterThan(50);
  const cards = page.getByRole('article');
  expect(await cards.count()).toBe(50);
  expect(await cards.first().getByRole('heading').textContent()).toBe('Chunk 1');
  expect(await cards.nth(49).getByRole('heading').textContent()).toBe('Chunk 50');
  expect(await cards.first().textContent()).toContain('Paragraph 1: the router model R1');
  expect(await cards.first().textContent()).toContain('label1 team:support');
  await expectAccessible('chunk view');
  await page.getByRole('button', { name: 'Load more chunks' }).click();
  await page.getByRole('heading', { name: `Chunk ${total}`, exact: true }).waitFor();
  expect(await cards.count()).toBe(total);
  expect(await page.getByRole('button', { name: 'Load more chunks' }).count()).toBe(0);
});

it('searches within the document, ignoring case, and marks what it found', async () => {
  await page.getByRole('textbox', { name: 'Search in the document' }).fill('zebra FIREWALL');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByText(/^1 chunk containing “zebra FIREWALL”, of \d+ in the document$/).waitFor();
  const cards = page.getByRole('article');
  expect(await cards.count()).toBe(1);
  expect(await cards.first().locator('mark').first().textContent()).toBe('Zebra firewall');
  await expectAccessible('chunk view, searched');
  await page.getByRole('button', { name: 'Show all chunks' }).click();
  await page.getByText(/^\d+ chunks$/).waitFor();
});

it('jumps from a retrieval playground hit to its chunk, loading the pages before it', async () => {
  await page.goto(`${service.baseUrl}/agents/${dataset.agentId}/knowledge/${dataset.knowledgeBaseId}/playground`);
  await page.getByRole('textbox', { name: 'Query' }).fill('Zebra firewall rules');
  await page.getByRole('button', { name: 'Query', exact: true }).click();
  const open = page.getByRole('link', { name: "Open in the document's chunks (result 1)" });
  await open.waitFor();
  await expectAccessible('retrieval playground, its links to the chunk view');
  await open.click();
  const current = page.locator('article[aria-current="true"]');
  await current.waitFor();
  expect(await current.textContent()).toContain('the rules of the Zebra firewall');
  const heading = (await current.getByRole('heading').textContent()) ?? '';
  expect(heading).toMatch(/^Chunk \d+ \(the retrieval result\)$/);
  // Past the first page: the view loaded more until it held the chunk.
  expect(Number(heading.split(' ')[1])).toBeGreaterThan(50);
  expect(new URL(page.url()).searchParams.get('chunk')).toMatch(/#/);
  // In view, and focused for the keyboard.
  expect(await current.isVisible()).toBe(true);
  expect(await page.evaluate('document.activeElement?.getAttribute("aria-current")')).toBe('true');
  await expectAccessible('chunk view, from a hit');
  await screenshot('chunk-view');
});
