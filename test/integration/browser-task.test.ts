/**
 * Browser tasks end to end on the local runtime (`bin/local.ts` as a child process): a webhook runs a flow whose
 * browserTask node operates a real site on loopback (test/helpers/browser-site.ts) in the real Chromium, its model
 * the scripted OpenAI-compatible server of this test (MODEL_BASE_URL). Asserted: what the site received, the node's
 * output (answer, page, steps), the next node reading it, each step as a browser_step event, the step limit, and the
 * offline model reading the page in one step. Loopback is allowed here only (OUTBOUND_ALLOW_PRIVATE_NETWORK=true);
 * the guard's refusals are proved at the driver (test/unit/core/flows/browser-task.test.ts), with it off.
 */
import { BROWSER_MAX_STEPS } from '#core/flows/browser-task';
import { type BrowserSite, startBrowserSite } from '../helpers/browser-site';
import { pollUntil } from '../helpers/poll';
import { type ChatRequest, type ScriptedModelServer, startScriptedModelServer } from '../helpers/scripted-model-server';
import { client, startService, type TestService } from '../helpers/service';

interface Step {
  action: string;
  target: string | null;
  ok: boolean;
  error?: { code: string; message: string };
}

interface Result {
  sessionId: string;
  status: string;
  aiMessages: { node: string; content: string }[];
  outputs: Record<string, Record<string, unknown> & { steps?: Step[] }>;
  error: { code: string; message: string; node: string | null } | null;
}

interface RecordedEvent {
  eventName: string;
  payload: Record<string, unknown>;
}

let service: TestService;
let model: ScriptedModelServer;
let site: BrowserSite;
let call: ReturnType<typeof client>;
let agentId: string;

function definition() {
  const flow = (name: string, nodes: Record<string, unknown>[]) => ({
    name,
    nodes,
    edges: nodes.slice(1).map((node, i) => ({ from: nodes[i].name, to: node.name, type: 'stepForward' })),
  });
  const trigger = (name: string) => ({ name, type: 'trigger', triggerType: 'webhook' });
  return {
    instructions: 'You are the purchasing assistant.',
    flows: [
      flow('order', [
        trigger('Order'),
        {
          name: 'PlaceOrder',
          type: 'browserTask',
          prompt: 'Order a large router for {memory.customer} ({memory.email}) at {memory.shop}',
        },
        {
          name: 'Confirm',
          type: 'promptNode',
          displayName: 'Confirm',
          llmConfig: { name: 'ChatOffline' },
          prompt: 'Done: {tools.PlaceOrder.answer} ({tools.PlaceOrder.steps.3.action} on {tools.PlaceOrder.title})',
        },
      ]),
      flow('endless', [
        trigger('Endless'),
        { name: 'Search', type: 'browserTask', prompt: 'Find the end', url: '{memory.page}' },
      ]),
      flow('offline', [
        trigger('Read'),
        { name: 'ReadForm', type: 'browserTask', prompt: 'Read the form', url: '{memory.page}', model: 'ChatOffline' },
      ]),
    ],
  };
}

beforeAll(async () => {
  site = await startBrowserSite();
  model = await startScriptedModelServer();
  service = await startService({
    env: {
      // The site and the model server are on loopback, which the runtime refuses unless told so.
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      MODEL_BASE_URL: model.baseUrl,
      MODEL_NAME: 'scripted',
    },
  });
  call = client(service);
  agentId = (await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Buyer' } })).body
    .agentId;
  const put = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, { body: definition() });
  if (put.status !== 200) throw new Error(JSON.stringify(put.body));
});

afterAll(async () => {
  await service?.stop();
  await model?.close();
  await site?.close();
});

beforeEach(() => {
  site.reset();
});

/**
 * A browser task's bound (BROWSER_TIME_LIMIT_MS) does not fit in a request's 28 s: the webhook hands the run over
 * before the task starts (202 `running`) and the flow runner runs it; the session then holds what the run produced.
 */
async function webhook(trigger: string, body: Record<string, unknown>) {
  const answered = await call<Result>('POST', `/api/v1/webhooks/${agentId}/production/${trigger}`, { body });
  expect([answered.status, answered.body.status]).toEqual([202, 'running']);
  return pollUntil(
    () => call<Result>('GET', `/dashboard/agents/${agentId}/sessions/production/${answered.body.sessionId}`),
    (r) => r.body.status !== 'running',
    120_000,
  );
}

/**
 * The run's events of a name once `count` are there: the recorder writes them in the background, so they may land
 * a moment after the session ends (seen once on a loaded CI machine: none yet when the failed session was read).
 */
function recorded(sessionId: string, eventName: string, count: number): Promise<RecordedEvent[]> {
  return pollUntil(
    () => events(sessionId, eventName),
    (found) => found.length >= count,
    10_000,
  );
}

async function events(sessionId: string, eventName: string): Promise<RecordedEvent[]> {
  const page = await call<{ data: RecordedEvent[] }>('POST', '/api/v1/events/agent', {
    body: { agentId, filters: { environment: 'production', sessionId, eventName }, limit: 1000 },
  });
  expect(page.status).toBe(200);
  return [...page.body.data].reverse();
}

/** The ref of the element the question shows on a line matching `line`. */
function refOf(request: ChatRequest, line: RegExp): string {
  const question = request.messages.at(-1)?.content ?? '';
  const ref = /^- ((?:f\d+)?e\d+):/.exec(question.split('\n').find((l) => line.test(l)) ?? '')?.[1];
  if (!ref) throw new Error(`no element ${line} in the question:\n${question}`);
  return ref;
}

describe('a browserTask node operating a page', () => {
  it('fills the form, selects, submits and answers; the next node reads it; each step is a browser_step', async () => {
    model.script((request, index) => {
      const question = request.messages.at(-1)?.content ?? '';
      const action = [
        () => ({ action: 'type', target: refOf(request, /textbox "Name"/), text: 'Ada Lovelace' }),
        () => ({ action: 'type', target: refOf(request, /textbox "Email"/), text: 'ada@example.com' }),
        () => ({ action: 'select', target: refOf(request, /combobox "Size"/), value: 'Large' }),
        () => ({ action: 'click', target: refOf(request, /button "Send order"/) }),
        () => ({ action: 'done', answer: /Received: .*/.exec(question)?.[0] ?? 'no confirmation' }),
      ][index]();
      return { content: JSON.stringify(action) };
    });
    const result = await webhook('Order', {
      customer: 'Ada Lovelace',
      email: 'ada@example.com',
      shop: `${site.base}/form`,
    });

    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(site.orders).toEqual([{ name: 'Ada Lovelace', email: 'ada@example.com', size: 'l' }]);
    const output = result.body.outputs.PlaceOrder;
    expect(output).toMatchObject({
      answer: 'Received: name=Ada Lovelace; email=ada@example.com; size=l',
      url: `${site.base}/submit`,
      status: 200,
      title: 'Order received',
      text: 'Thank you Received: name=Ada Lovelace; email=ada@example.com; size=l',
    });
    expect(output.steps).toEqual([
      { action: 'type', target: expect.stringMatching(/^textbox "Name" \[ref=e\d+\]$/), ok: true },
      { action: 'type', target: expect.stringMatching(/^textbox "Email" \[ref=e\d+\]$/), ok: true },
      { action: 'select', target: expect.stringMatching(/^combobox "Size" \[ref=e\d+\]$/), ok: true },
      { action: 'click', target: expect.stringMatching(/^button "Send order" \[ref=e\d+\]$/), ok: true },
      { action: 'done', target: null, ok: true },
    ]);
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([
      'Done: Received: name=Ada Lovelace; email=ada@example.com; size=l (click on Order received)',
    ]);

    // The model got the agent's instructions, the task with memory filled in, and the page.
    const first = model.requests[0];
    expect(first.temperature).toBe(0);
    expect(first.messages[0].content).toContain('You are the purchasing assistant.');
    expect(first.messages.at(-1)?.content).toContain(
      `Task: Order a large router for Ada Lovelace (ada@example.com) at ${site.base}/form`,
    );
    expect(model.requests).toHaveLength(5);

    const steps = await recorded(result.body.sessionId, 'browser_step', 5);
    expect(steps.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        nodeName: 'PlaceOrder',
        stepIndex: 0,
        action: 'type',
        value: 'Ada Lovelace',
        ok: true,
      }),
      expect.objectContaining({ stepIndex: 1, action: 'type', value: 'ada@example.com', ok: true }),
      expect.objectContaining({ stepIndex: 2, action: 'select', value: 'Large', ok: true }),
      expect.objectContaining({ stepIndex: 3, action: 'click', ok: true, url: `${site.base}/submit` }),
      expect.objectContaining({ stepIndex: 4, action: 'done', target: null, ok: true, url: `${site.base}/submit` }),
    ]);
    expect(steps.every((e) => typeof e.payload.durationMs === 'number')).toBe(true);
  });

  it(`fails the node with BROWSER_STEP_LIMIT after ${BROWSER_MAX_STEPS} steps, keeping its steps and the page`, async () => {
    model.script(() => ({ content: '{"action":"scroll","direction":"down"}' }));
    const result = await webhook('Endless', { page: `${site.base}/endless` });

    expect(result.body).toMatchObject({
      status: 'failed',
      error: {
        code: 'BROWSER_STEP_LIMIT',
        message: `The browser task took ${BROWSER_MAX_STEPS} steps without the model answering done`,
        node: 'Search',
      },
    });
    const output = result.body.outputs.Search;
    expect(output).toMatchObject({ answer: null, title: 'Endless', url: `${site.base}/endless` });
    expect(output.steps).toHaveLength(BROWSER_MAX_STEPS);
    expect(model.requests).toHaveLength(BROWSER_MAX_STEPS);
    expect(await recorded(result.body.sessionId, 'browser_step', BROWSER_MAX_STEPS)).toHaveLength(BROWSER_MAX_STEPS);
    const errors = await recorded(result.body.sessionId, 'invocation_error', 1);
    expect(errors.map((e) => e.payload.code)).toEqual(['BROWSER_STEP_LIMIT']);
  });

  it('with the offline model (the node names ChatOffline), reads the page in one step and asks no model', async () => {
    model.script(() => ({ content: 'the model must not be asked' }));
    const result = await webhook('Read', { page: `${site.base}/form` });

    expect(result.body).toMatchObject({ status: 'completed', error: null });
    const text = 'Order a router Fill in the form and send it. Name Email Size Small Medium Large Send order Help';
    expect(result.body.outputs.ReadForm).toEqual({
      answer: text,
      url: `${site.base}/form`,
      status: 200,
      title: 'Order form',
      text,
      steps: [{ action: 'done', target: null, ok: true }],
    });
    expect(model.requests).toEqual([]);
  });
});
