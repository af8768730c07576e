/**
 * Browser tasks in the real Chromium (the one of @sparticuz/chromium, or CHROMIUM_PATH): PlaywrightBrowserDriver and
 * the task loop (core/flows/browser-task.ts) against a real site on 127.0.0.1 (test/helpers/browser-site.ts), with
 * the model's choices scripted (a language model cannot run here; test/integration/browser-task.test.ts drives the
 * same through the OpenAI-compatible protocol). What the site received is asserted, not only what the driver says.
 * Guard decisions are real: `blocked.localhost` resolves, for the guard, to a private address, and Chromium would
 * resolve it to loopback by itself, so the site would see any request to it that got past the guard.
 */

import {
  LAMBDA_CHROMIUM_FLAGS,
  MAX_PAGE_TEXT_CHARS,
  PlaywrightBrowserDriver,
} from '#adapters/browser/playwright-driver';
import type { HostLookup } from '#adapters/network/url-guard';
import { BROWSER_MAX_STEPS } from '#core/flows/browser-task';
import { OfflineFlowModel } from '#core/flows/offline-model';
import type {
  BrowserActionRequest,
  BrowserChoice,
  FlowModel,
  FlowModelContext,
  FlowModelResolver,
  LlmConfig,
} from '#ports/flows';
import { ModelError } from '#ports/model';
import { type BrowserSite, startBrowserSite } from '../../../helpers/browser-site';

/** A model whose browser choices a test scripts; it records what it was asked. Nothing else is asked of it here. */
class ScriptedBrowserModel implements FlowModel {
  readonly name = 'scripted';
  readonly asked: { context: FlowModelContext; request: BrowserActionRequest }[] = [];
  constructor(private readonly script: (request: BrowserActionRequest, index: number) => BrowserChoice) {}
  async chooseBrowserAction(context: FlowModelContext, request: BrowserActionRequest): Promise<BrowserChoice> {
    this.asked.push({ context, request });
    return this.script(request, this.asked.length - 1);
  }
  respond(): Promise<string> {
    throw new Error('not asked in these tests');
  }
  chooseCondition(): Promise<number | 'stay' | null> {
    throw new Error('not asked in these tests');
  }
  inferParameters(): Promise<Record<string, unknown>> {
    throw new Error('not asked in these tests');
  }
  respondWithTools(): never {
    throw new Error('not asked in these tests');
  }
}

let site: BrowserSite;
let model: ScriptedBrowserModel;
const picked: (LlmConfig | undefined)[] = [];
const models: FlowModelResolver = (config) => {
  picked.push(config);
  return config?.name === 'ChatOffline' ? new OfflineFlowModel() : model;
};
const lookup: HostLookup = async (host) => ({ 'blocked.localhost': ['10.0.0.8'] })[host] ?? [];
/** OUTBOUND_ALLOW_PRIVATE_NETWORK=true, as the local runtime of a test has it. */
const driver = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, lookup, models });
/** Loopback allowed (the site) but no other private address. */
const loopbackOnly = new PlaywrightBrowserDriver({
  allowPrivateNetwork: false,
  allowedKinds: ['loopback'],
  lookup,
  models,
});

beforeAll(async () => {
  site = await startBrowserSite();
});

beforeEach(() => {
  site.reset();
  picked.length = 0;
});

afterAll(async () => {
  await Promise.all([driver.close(), loopbackOnly.close()]);
  await site.close();
});

/** The ref of the element with this role and name in the observation the model was given last. */
function ref(request: BrowserActionRequest, role: string, name: string): string {
  const found = request.observation.elements.find((e) => e.role === role && e.name === name);
  if (!found) throw new Error(`no ${role} "${name}" in ${JSON.stringify(request.observation.elements)}`);
  return found.ref;
}

/** Fills the order form (name, email, size), sends it, then answers with what the result page says. */
function orderScript(request: BrowserActionRequest, index: number): BrowserChoice {
  switch (index) {
    case 0:
      return { action: 'type', target: ref(request, 'textbox', 'Name'), text: 'Ada Lovelace' };
    case 1:
      return { action: 'type', target: ref(request, 'textbox', 'Email'), text: 'ada@example.com' };
    case 2:
      return { action: 'select', target: ref(request, 'combobox', 'Size'), value: 'Large' };
    case 3:
      return { action: 'click', target: ref(request, 'button', 'Send order') };
    default: {
      const sent = /Received: .*/.exec(request.observation.text)?.[0] ?? 'nothing';
      return { action: 'done', answer: sent };
    }
  }
}

describe('a browser task operating a page', () => {
  it('fills a form, selects an option, submits it and answers from the result page', async () => {
    model = new ScriptedBrowserModel(orderScript);
    const context = { system: 'You are the order assistant.', messages: [{ role: 'user' as const, content: 'Order' }] };
    const result = await driver.run({ prompt: 'Order a large router for Ada', url: `${site.base}/form`, context });

    expect(site.orders).toEqual([{ name: 'Ada Lovelace', email: 'ada@example.com', size: 'l' }]);
    expect(result).toMatchObject({
      answer: 'Received: name=Ada Lovelace; email=ada@example.com; size=l',
      url: `${site.base}/submit`,
      status: 200,
      title: 'Order received',
      text: 'Thank you Received: name=Ada Lovelace; email=ada@example.com; size=l',
    });
    expect(result.failure).toBeUndefined();
    const field = (name: string, n: number) =>
      `textbox "${name}" [ref=${model.asked[n].request.observation.elements.find((e) => e.name === name)?.ref}]`;
    expect(result.steps.map(({ action, target, ok, value }) => ({ action, target, ok, value }))).toEqual([
      { action: 'type', target: field('Name', 0), ok: true, value: 'Ada Lovelace' },
      { action: 'type', target: field('Email', 1), ok: true, value: 'ada@example.com' },
      { action: 'select', target: expect.stringMatching(/^combobox "Size" \[ref=e\d+\]$/), ok: true, value: 'Large' },
      {
        action: 'click',
        target: expect.stringMatching(/^button "Send order" \[ref=e\d+\]$/),
        ok: true,
        value: undefined,
      },
      { action: 'done', target: null, ok: true, value: undefined },
    ]);
    expect(result.steps.map((s) => s.url)).toEqual([
      `${site.base}/form`,
      `${site.base}/form`,
      `${site.base}/form`,
      `${site.base}/submit`,
      `${site.base}/submit`,
    ]);

    // What the model saw: the page's interactive elements by ref (the same ref for the same field each time), its
    // state after each step, its text, the task and the conversation.
    const [first, second, , fourth] = model.asked.map((a) => a.request);
    expect(first.observation).toMatchObject({ url: `${site.base}/form`, title: 'Order form', cut: false });
    expect(first.observation.elements.map(({ role, name }) => `${role} ${name}`)).toEqual([
      'textbox Name',
      'textbox Email',
      'combobox Size',
      'button Send order',
      'link Help',
    ]);
    expect(first.observation.elements[2]).toMatchObject({ options: ['Small', 'Medium', 'Large'], selected: 'Small' });
    expect(first.observation.text).toContain('Fill in the form and send it.');
    expect(second.observation.elements[0]).toMatchObject({
      ref: first.observation.elements[0].ref,
      value: 'Ada Lovelace',
    });
    expect(fourth.observation.elements[2]).toMatchObject({ selected: 'Large' });
    expect(first).toMatchObject({ task: 'Order a large router for Ada', stepsLeft: BROWSER_MAX_STEPS, history: [] });
    expect(fourth.history.map((h) => [h.choice.action, h.ok])).toEqual([
      ['type', true],
      ['type', true],
      ['select', true],
    ]);
    expect(model.asked[0].context).toEqual(context);
    expect(picked).toEqual([undefined]);
  });

  it('tells the model about a step that failed and goes on: an unknown ref, an answer that is no action', async () => {
    model = new ScriptedBrowserModel((request, index) => {
      if (index === 0) return { action: 'click', target: 'e999' };
      if (index === 1) return { action: 'invalid', reason: 'unknown action "hover": one of goto, click, …' };
      if (index === 2) return { action: 'extract', target: ref(request, 'link', 'Help') };
      return { action: 'done', answer: `read: ${request.history.at(-1)?.extracted}` };
    });
    const result = await driver.run({ prompt: 'Find help', url: `${site.base}/form` });

    expect(result.answer).toBe('read: Help');
    expect(result.steps.map(({ action, ok, error }) => ({ action, ok, error }))).toEqual([
      {
        action: 'click',
        ok: false,
        error: {
          code: 'BROWSER_ELEMENT_NOT_FOUND',
          message: 'No element e999 on the page: use a ref of the last observation',
        },
      },
      {
        action: 'invalid',
        ok: false,
        error: { code: 'BROWSER_ACTION_INVALID', message: 'unknown action "hover": one of goto, click, …' },
      },
      { action: 'extract', ok: true, error: undefined },
      { action: 'done', ok: true, error: undefined },
    ]);
    expect(result.steps[0].target).toBe('e999');
    expect(model.asked[1].request.history[0]).toMatchObject({
      ok: false,
      error: { code: 'BROWSER_ELEMENT_NOT_FOUND' },
    });
  });

  it(`stops after ${BROWSER_MAX_STEPS} steps without done: BROWSER_STEP_LIMIT, with the steps and the page kept`, async () => {
    model = new ScriptedBrowserModel(() => ({ action: 'scroll', direction: 'down' }));
    const result = await driver.run({ prompt: 'Look for the end', url: `${site.base}/endless` });

    expect(result.failure).toEqual({
      code: 'BROWSER_STEP_LIMIT',
      message: `The browser task took ${BROWSER_MAX_STEPS} steps without the model answering done`,
    });
    expect(result.steps).toHaveLength(BROWSER_MAX_STEPS);
    expect(result.steps.every((s) => s.action === 'scroll' && s.ok && s.target === 'down')).toBe(true);
    expect(model.asked).toHaveLength(BROWSER_MAX_STEPS);
    expect(model.asked.at(-1)?.request.stepsLeft).toBe(1);
    expect(result).toMatchObject({ answer: null, title: 'Endless', text: 'Keep looking. Look again' });
  });

  it('stops with BROWSER_STEP_LIMIT when the time is up, before asking the model', async () => {
    model = new ScriptedBrowserModel(() => ({ action: 'done', answer: 'too late' }));
    const hurried = new PlaywrightBrowserDriver({ allowPrivateNetwork: true, models, timeLimitMs: 0 });
    try {
      const result = await hurried.run({ prompt: 'Read it', url: `${site.base}/form` });
      expect(result.failure).toEqual({
        code: 'BROWSER_STEP_LIMIT',
        message: 'The browser task ran out of time before the model answered done',
      });
      expect(result).toMatchObject({ answer: null, steps: [], title: 'Order form' });
      expect(model.asked).toEqual([]);
    } finally {
      await hurried.close();
    }
  });

  it("ends with the model's error when the model fails, keeping the steps it took", async () => {
    model = new ScriptedBrowserModel((request, index) => {
      if (index === 0) return { action: 'type', target: ref(request, 'textbox', 'Name'), text: 'Ada' };
      throw new ModelError('The model openai-compatible:x failed (HTTP 500)', 'detail for the log');
    });
    const result = await driver.run({ prompt: 'Order', url: `${site.base}/form` });
    expect(result.failure).toEqual({ code: 'MODEL_ERROR', message: 'The model openai-compatible:x failed (HTTP 500)' });
    expect(result.steps.map((s) => [s.action, s.ok])).toEqual([['type', true]]);
    expect(result.answer).toBeNull();
  });

  it('reads the page in one step with the offline model, and picks the model the node names', async () => {
    const result = await driver.run({ prompt: 'Read the form', url: `${site.base}/form`, model: 'ChatOffline' });
    expect(picked).toEqual([{ name: 'ChatOffline' }]);
    expect(result.steps.map(({ action, target, ok }) => ({ action, target, ok }))).toEqual([
      { action: 'done', target: null, ok: true },
    ]);
    expect(result.answer).toBe(
      'Order a router Fill in the form and send it. Name Email Size Small Medium Large Send order Help',
    );
    expect(result.text).toBe(result.answer);
  });
});

describe('the outbound guard in a task', () => {
  it('refuses a goto to a private host without a request, and the task goes on', async () => {
    model = new ScriptedBrowserModel((request, index) =>
      index === 0
        ? { action: 'goto', url: `http://blocked.localhost:${site.port}/secret` }
        : { action: 'done', answer: request.observation.title },
    );
    const result = await loopbackOnly.run({ prompt: 'Go', url: `${site.base}/form` });
    expect(result.steps[0]).toMatchObject({
      action: 'goto',
      target: `http://blocked.localhost:${site.port}/secret`,
      ok: false,
      error: {
        code: 'TARGET_REFUSED',
        message: 'Refused the outbound target blocked.localhost: it resolves to a private address',
      },
    });
    expect(result).toMatchObject({ answer: 'Order form', url: `${site.base}/form` });
    expect(site.requests.filter((r) => r.startsWith('blocked.localhost'))).toEqual([]);
  });

  it('refuses a link that redirects to a private host, over http and https, and goes back to the page', async () => {
    for (const scheme of ['http', 'https']) {
      site.reset();
      const secret = `${scheme}://blocked.localhost:${site.port}/secret`;
      const href = `/go?to=${encodeURIComponent(secret)}`;
      model = new ScriptedBrowserModel((request, index) =>
        index === 0
          ? { action: 'click', target: ref(request, 'link', 'Onward') }
          : { action: 'done', answer: request.observation.url },
      );
      const result = await loopbackOnly.run({
        prompt: 'Follow the link',
        url: `${site.base}/links?href=${encodeURIComponent(href)}`,
      });
      expect([scheme, result.steps[0]]).toMatchObject([
        scheme,
        {
          action: 'click',
          ok: false,
          error: {
            code: 'TARGET_REFUSED',
            message: 'Refused the outbound target blocked.localhost: it resolves to a private address',
          },
        },
      ]);
      expect(result.answer).toBe(`${site.base}/links?href=${encodeURIComponent(href)}`);
      expect(site.requests.filter((r) => r.startsWith('blocked.localhost'))).toEqual([]);
      expect(site.requests).toContain(`127.0.0.1:${site.port}${href}`);
    }
  });

  it('refuses a first page that redirects to a private host: the task does not begin', async () => {
    model = new ScriptedBrowserModel(() => ({ action: 'done', answer: 'never' }));
    const to = encodeURIComponent(`http://blocked.localhost:${site.port}/secret`);
    await expect(loopbackOnly.run({ prompt: 'Open it', url: `${site.base}/go?to=${to}` })).rejects.toMatchObject({
      code: 'TARGET_REFUSED',
      message: 'Refused the outbound target blocked.localhost: it resolves to a private address',
    });
    expect(model.asked).toEqual([]);
    expect(site.requests.filter((r) => r.startsWith('blocked.localhost'))).toEqual([]);
  });
});

describe('Chromium with the flags of the BrowserTask function', () => {
  it('runs one task after another without a zygote (--no-zygote), Chromium kept between them', async () => {
    const lambdaLike = new PlaywrightBrowserDriver({
      allowPrivateNetwork: true,
      models,
      extraFlags: LAMBDA_CHROMIUM_FLAGS,
    });
    try {
      model = new ScriptedBrowserModel(orderScript);
      const first = await lambdaLike.run({ prompt: 'Order', url: `${site.base}/form` });
      model = new ScriptedBrowserModel(orderScript);
      const second = await lambdaLike.run({ prompt: 'Order again', url: `${site.base}/form` });
      expect([first.title, second.title]).toEqual(['Order received', 'Order received']);
      expect(site.orders).toHaveLength(2);
      expect(first.text.length).toBeLessThanOrEqual(MAX_PAGE_TEXT_CHARS);
    } finally {
      await lambdaLike.close();
    }
  });
});
