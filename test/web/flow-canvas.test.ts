/**
 * The flow editor on the canvas (issue 38, item 1) in real Chromium against `npm start` with cognito-local: a person
 * builds the refund flow of docs/flows.md ("Try it on the local runtime") from an empty canvas without typing JSON
 * (the palette, dragged and clicked; edges connected by dragging from a handle with the mouse; names, prompts,
 * switches and edge types in the properties panel), sees the JSON follow, undoes and redoes, saves it (a marker while
 * unsaved, Save disabled after), is asked before leaving unsaved changes, and runs the flow in the flow playground
 * through its pause. A 30-node definition opens with every node's name at 12 px or more; edge labels are never under
 * a node. axe checks the canvas screen; its picture is `flow-canvas`.
 */

import type { Locator, Page } from 'playwright-core';
import {
  expectAccessible as axe,
  type ConsoleBrowser,
  closeConsole,
  openConsole,
  screenshot as picture,
} from '../helpers/console-browser';
import { refundFlow } from '../helpers/flow-definitions';
import { client as apiClient, type TestService } from '../helpers/service';

let opened: ConsoleBrowser | undefined;
let service: TestService;
let page: Page;

beforeAll(async () => {
  opened = await openConsole({ viewport: { width: 1440, height: 1000 } });
  ({ service, page } = opened);
}, 240_000);

afterAll(() => closeConsole(opened));

const expectAccessible = (screen: string) => axe(page, screen);
const screenshot = (name: string) => picture(page, name);

const OWNER = { email: 'canvas@console.example.com', password: 'Canvas-pass-1', organization: 'Canvas Co' };

const canvas = () => page.getByRole('figure', { name: 'Flow graph' });
const properties = () => page.getByRole('region', { name: 'Properties' });
const node = (name: string) => canvas().locator(`[data-node="${name}"]`);

async function center(locator: Locator): Promise<{ x: number; y: number }> {
  const box = await locator.boundingBox();
  if (!box) throw new Error('not on the page');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** The canvas in the middle of the window (clear of the console's header). */
async function showCanvas() {
  await page.evaluate("document.querySelector('[aria-label=\\'Flow graph\\']').scrollIntoView({ block: 'center' })");
}

/** A drag with the mouse from a node's out handle to another's in handle, in steps, as a person would. */
async function connect(from: string, to: string) {
  await showCanvas();
  const start = await center(node(from).locator('.react-flow__handle.source'));
  const end = await center(node(to).locator('.react-flow__handle.target'));
  await page.mouse.move(start.x, start.y);
  await page.mouse.down();
  await page.mouse.move((start.x + end.x) / 2, (start.y + end.y) / 2, { steps: 5 });
  await page.mouse.move(end.x, end.y, { steps: 5 });
  await page.mouse.up();
  await canvas().locator(`.react-flow__edge[aria-label="Edge from ${from} to ${to}"]`).waitFor();
}

/** The node just added is selected: its properties set in the panel's fields. */
async function rename(name: string) {
  const field = properties().getByRole('textbox', { name: /^Name/ });
  await field.fill(name);
  await field.press('Enter');
  await node(name).waitFor();
}

async function definitionText(): Promise<Record<string, unknown>> {
  const text = await page.getByRole('textbox', { name: 'Definition (JSON)' }).textContent();
  return JSON.parse(text ?? '{}');
}

/** The zoom of the canvas's viewport, from its transform. */
async function zoom(): Promise<number> {
  const transform = String(
    await page.evaluate("getComputedStyle(document.querySelector('.react-flow__viewport')).transform"),
  );
  const scale = /matrix\(([-\d.e]+)/.exec(transform);
  return scale ? Number(scale[1]) : 1;
}

it('signs up and opens the flows of a new agent', async () => {
  await page.goto(`${service.baseUrl}/`);
  await page.getByRole('button', { name: 'No account? Sign up' }).click();
  await page.getByLabel('E-mail').fill(OWNER.email);
  await page.getByLabel('Organization name').fill(OWNER.organization);
  await page.getByLabel(/^Password/).fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign up', exact: true }).click();
  await page.getByRole('heading', { name: 'Agents' }).waitFor();
  await page.getByLabel("New agent's name").fill('Refund bot');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page
    .getByRole('row', { name: /Refund bot/ })
    .getByRole('link', { name: 'Flows' })
    .click();
  await page.getByRole('heading', { name: 'Flows', exact: true }).waitFor();
  await page.getByText('No definition stored in development yet').waitFor();
}, 60_000);

it('builds the refund flow from an empty canvas without typing JSON, undoes and redoes, and saves it', async () => {
  await page.getByRole('button', { name: 'Start from empty' }).click();
  await node('Greet').waitFor({ state: 'detached' });
  expect(await canvas().locator('[data-node]').count()).toBe(0);
  const flowName = page.getByRole('textbox', { name: 'Flow name' });
  await flowName.fill('refund');
  await flowName.press('Enter');

  // The trigger dragged from the palette onto the canvas; the prompt nodes added by the palette's buttons.
  await page.getByRole('button', { name: 'Add Trigger' }).dragTo(canvas(), { targetPosition: { x: 200, y: 150 } });
  await node('Trigger1').waitFor();
  await rename('RefundStart');
  await properties()
    .getByLabel(/^Display name/)
    .fill('Refund request');
  expect(
    await properties()
      .getByLabel(/^Trigger type/)
      .inputValue(),
  ).toBe('webhook');

  await page.getByRole('button', { name: 'Add Prompt' }).click();
  await rename('AskReason');
  await properties()
    .getByLabel(/^Display name/)
    .fill('Ask the reason');
  await properties()
    .getByLabel(/^Prompt/)
    .fill('Ask {memory.customer.name} why they want a refund.');
  await properties().getByRole('switch', { name: 'Human in the loop' }).check();
  await properties().getByRole('switch', { name: 'Can stay on node' }).check();

  for (const [name, shown, prompt] of [
    ['Approve', 'Approve', 'Confirm the refund of the damaged router to {memory.customer.name}.'],
    ['Decline', 'Decline', 'Explain that a router that works cannot be refunded after 30 days.'],
  ]) {
    await page.getByRole('button', { name: 'Add Prompt' }).click();
    await rename(name);
    await properties()
      .getByLabel(/^Display name/)
      .fill(shown);
    await properties()
      .getByLabel(/^Prompt/)
      .fill(prompt);
  }

  // All four in view, then connected by dragging from handle to handle.
  await page.getByRole('button', { name: 'Tidy up' }).click();
  await connect('RefundStart', 'AskReason');
  await connect('AskReason', 'Approve');
  await connect('AskReason', 'Decline');
  // Laid out again, ranked left to right: each edge's middle clear of the nodes.
  await page.getByRole('button', { name: 'Tidy up' }).click();
  await showCanvas();

  // Each edge's type chosen on the edge: promptCondition with its condition.
  for (const [to, condition] of [
    ['Approve', 'the router arrived damaged or broken'],
    ['Decline', 'the customer changed their mind'],
  ]) {
    await canvas().locator(`.react-flow__edge[aria-label="Edge from AskReason to ${to}"]`).click();
    await properties()
      .getByRole('heading', { name: `Edge AskReason → ${to}` })
      .waitFor();
    await properties().getByLabel(/^Type/).click();
    await page.getByRole('option', { name: 'promptCondition' }).click();
    await properties()
      .getByLabel(/^Condition/)
      .fill(condition);
    await canvas().getByText(condition).waitFor();
  }
  await page.getByRole('button', { name: 'Tidy up' }).click();

  // The JSON followed every edit: the walk-through's flow, each node placed in the ui block.
  const built = (await definitionText()) as {
    flows: { name: string; nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] }[];
    ui: { positions: Record<string, unknown> };
  };
  // The walk-through's flow of docs/flows.md, as the integration tests define it.
  expect(built.flows).toEqual([refundFlow]);
  expect(Object.keys(built.ui.positions).sort()).toEqual(
    ['refund/Approve', 'refund/AskReason', 'refund/Decline', 'refund/RefundStart'].sort(),
  );

  // Revalidated as it changed: valid, no problem left from an earlier state.
  await page.getByText('Valid', { exact: true }).waitFor();
  expect(await page.getByRole('alert').filter({ hasText: 'problems' }).count()).toBe(0);

  // Edge labels are never under a node: no label's box meets a node's.
  const overlaps = await page.evaluate(`(() => {
    const boxes = (selector) => [...document.querySelectorAll(selector)].map((el) => el.getBoundingClientRect());
    const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const labels = boxes('[data-edge-label]');
    const nodes = boxes('.react-flow__node-definition');
    return { labels: labels.length, overlaps: labels.filter((l) => nodes.some((n) => meet(l, n))).length };
  })()`);
  expect(overlaps).toEqual({ labels: 2, overlaps: 0 });

  // Delete, undo, redo, undo: the keyboard and the buttons walk the same history.
  await node('Decline').click();
  await page.keyboard.press('Delete');
  await node('Decline').waitFor({ state: 'detached' });
  await page.keyboard.press('Control+z');
  await node('Decline').waitFor();
  await page.getByRole('button', { name: 'Redo' }).click();
  await node('Decline').waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Undo' }).click();
  await node('Decline').waitFor();
  expect(((await definitionText()) as { flows: { edges: unknown[] }[] }).flows[0].edges).toHaveLength(3);

  // Duplicate and multi-select: two copies deleted together.
  await node('Approve').click();
  await page.getByRole('button', { name: 'Duplicate' }).click();
  await node('Approve1').waitFor();
  await node('Decline').click();
  await page.getByRole('button', { name: 'Duplicate' }).click();
  await node('Decline1').waitFor();
  await node('Approve1').click();
  await node('Decline1').click({ modifiers: ['Shift'] });
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await node('Approve1').waitFor({ state: 'detached' });
  await node('Decline1').waitFor({ state: 'detached' });

  // Unsaved until saved; then the marker goes and Save waits for a change.
  await page.getByRole('status').filter({ hasText: 'Unsaved changes' }).waitFor();
  await page.getByRole('button', { name: 'Save a new version' }).click();
  await page.getByText(/^version 1, saved/).waitFor();
  expect(await page.getByText('Unsaved changes').count()).toBe(0);
  expect(await page.getByRole('button', { name: 'Save a new version' }).isDisabled()).toBe(true);

  await expectAccessible('flow canvas');
  await screenshot('flow-canvas');
}, 180_000);

it('asks before unsaved changes are left: a link, an environment tab, closing the page', async () => {
  await page.getByRole('button', { name: 'Add Junction' }).click();
  await node('Junction1').waitFor();
  await page.getByRole('status').filter({ hasText: 'Unsaved changes' }).waitFor();

  const asked: string[] = [];
  page.on('dialog', (dialog) => {
    asked.push(dialog.message());
    dialog.dismiss().catch(() => undefined);
  });
  await page.getByRole('link', { name: 'Flow playground' }).click();
  await page.getByRole('tab', { name: 'staging' }).click();
  expect(asked).toHaveLength(2);
  expect(asked[0]).toContain('unsaved changes');
  // Stayed: the same screen, the same environment, the edit still there.
  await node('Junction1').waitFor();
  expect(await page.getByRole('tab', { name: 'development' }).getAttribute('aria-selected')).toBe('true');
  const unloadAsks = await page.evaluate(
    "(() => { const e = new Event('beforeunload', { cancelable: true }); window.dispatchEvent(e); return e.defaultPrevented; })()",
  );
  expect(unloadAsks).toBe(true);

  // Undone: nothing unsaved, nothing asked.
  await page.getByRole('button', { name: 'Undo' }).click();
  await node('Junction1').waitFor({ state: 'detached' });
  expect(await page.getByText('Unsaved changes').count()).toBe(0);
  page.removeAllListeners('dialog');
});

it('runs the flow built on the canvas in the flow playground through its pause', async () => {
  await page.getByRole('link', { name: 'Flow playground' }).click();
  await page.getByRole('heading', { name: 'Flow playground' }).waitFor();
  await page.getByRole('combobox', { name: 'Trigger' }).click();
  await page.getByRole('option', { name: 'RefundStart (flow refund)' }).click();
  await page.getByLabel('Payload (JSON)').fill('{"customer":{"name":"Ada"}}');
  await page.getByRole('button', { name: 'Run' }).click();
  const chat = page.getByRole('log', { name: 'Chat' });
  await chat.getByText('Ask Ada why they want a refund.').waitFor();
  await page.getByText('paused at AskReason').waitFor();
  await page.getByLabel(/Your answer/).fill('The router arrived broken');
  await page.getByRole('button', { name: 'Send' }).click();
  await chat.getByText('Confirm the refund of the damaged router to Ada.').waitFor();
  await page.getByText('completed', { exact: true }).waitFor();
}, 60_000);

it('lists the versions with who and when, compares two, and restores the previous one as a new version', async () => {
  const agentId = new URL(page.url()).pathname.split('/')[2];
  await page.goto(`${service.baseUrl}/agents/${agentId}/flows`);
  await node('Approve').waitFor();
  // Version 2: Approve says something else.
  await node('Approve').click();
  await properties()
    .getByLabel(/^Prompt/)
    .fill('Refund {memory.customer.name} at once.');
  await page.getByRole('button', { name: 'Save a new version' }).click();
  await page.getByText(/^version 2, saved/).waitFor();

  await page.getByRole('button', { name: 'Versions' }).click();
  const versions = page.getByRole('table', { name: 'Versions of the definition' });
  await versions.locator('tr[data-version="1"]').waitFor();
  expect(await versions.locator('tbody tr').count()).toBe(2);
  expect(await versions.locator('tr[data-version="2"]').textContent()).toMatch(
    /2\s*current[\s\S]*canvas@console\.example\.com/,
  );
  expect(await versions.locator('tr[data-version="1"]').textContent()).toContain(OWNER.email);

  // The diff of the two: the one line of Approve's prompt, removed and added.
  await page.getByRole('checkbox', { name: 'Compare version 1' }).check();
  await page.getByRole('checkbox', { name: 'Compare version 2' }).check();
  const diff = page.getByRole('region', { name: 'Changes from version 1 to 2' });
  await diff.getByText('1 lines added, 1 removed', { exact: false }).waitFor();
  expect(await diff.locator('.diff-removed').textContent()).toContain('- ');
  expect(await diff.locator('.diff-removed').textContent()).toContain('Confirm the refund of the damaged router');
  expect(await diff.locator('.diff-added').textContent()).toContain('Refund {memory.customer.name} at once.');
  await expectAccessible('flow versions');
  await screenshot('flow-versions');

  // Restored: version 1 stored again as version 3, the editor holding it, nothing unsaved.
  await page.getByRole('button', { name: 'Restore version 1' }).click();
  const dialog = page.getByRole('dialog', { name: 'Restore version 1?' });
  expect(await dialog.textContent()).toMatch(/as version 3; version 2 stays in the list/);
  await dialog.getByRole('button', { name: 'Store it as version 3' }).click();
  await page.getByText(/^version 3, saved/).waitFor();
  await versions.locator('tr[data-version="3"]').getByText('restored from 1').waitFor();
  const approve = (
    (await definitionText()) as { flows: { nodes: { name: string; prompt?: string }[] }[] }
  ).flows[0].nodes.find((n) => n.name === 'Approve');
  expect(approve?.prompt).toBe('Confirm the refund of the damaged router to {memory.customer.name}.');
  expect(await page.getByText('Unsaved changes').count()).toBe(0);
  const session = await page.evaluate("sessionStorage.getItem('agent-platform.session')");
  const person = apiClient(service, (JSON.parse(String(session)) as { idToken: string }).idToken);
  const stored = await person<{ version: number; restoredFrom: number }>(
    'GET',
    `/dashboard/agents/${agentId}/definition/development`,
  );
  expect(stored.body).toMatchObject({ version: 3, restoredFrom: 1 });
}, 90_000);

it('opens a 30-node definition with every node name at 12 px or more, the rest reached by scrolling', async () => {
  const agentId = new URL(page.url()).pathname.split('/')[2];
  const session = await page.evaluate("sessionStorage.getItem('agent-platform.session')");
  const person = apiClient(service, (JSON.parse(String(session)) as { idToken: string }).idToken);
  const names = Array.from({ length: 30 }, (_, i) => `Step${i + 1}`);
  const stored = await person('PUT', `/dashboard/agents/${agentId}/definition/staging`, {
    body: {
      flows: [
        {
          name: 'long',
          nodes: [
            { name: names[0], type: 'trigger', triggerType: 'webhook' },
            ...names.slice(1).map((name) => ({ name, type: 'junction', displayName: `Check ${name}` })),
          ],
          edges: names.slice(1).map((name, i) => ({ from: names[i], to: name, type: 'stepForward' })),
        },
      ],
    },
  });
  expect(stored.status).toBe(200);
  await page.goto(`${service.baseUrl}/agents/${agentId}/flows`);
  await page.getByRole('tab', { name: 'staging' }).click();
  await node('Step30').waitFor({ state: 'attached' });
  await page.waitForTimeout(300);
  const scale = await zoom();
  const sizes = await page.evaluate(
    "[...document.querySelectorAll('[data-node-name]')].map((el) => parseFloat(getComputedStyle(el).fontSize))",
  );
  expect((sizes as number[]).length).toBe(30);
  const smallest = Math.min(...(sizes as number[])) * scale;
  console.log(`[flow-canvas] 30 nodes: zoom ${scale.toFixed(3)}, smallest node name ${smallest.toFixed(1)} px`);
  expect(smallest).toBeGreaterThanOrEqual(12);
}, 60_000);
