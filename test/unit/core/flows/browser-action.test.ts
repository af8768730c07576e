/**
 * How a model's choice of browser action is asked and read: readBrowserAction (the lenient reading of a JSON answer)
 * and PromptedFlowModel.chooseBrowserAction against the scripted OpenAI-compatible server over real HTTP (what the
 * model is sent, and how its answer, fenced or wrapped in thoughts, comes back). The model of a node's `model`
 * property (browserTaskModel) is picked from the real resolver of the flow configuration.
 */
import { OpenAiCompatibleModel } from '#adapters/model/openai-compatible';
import { PromptedFlowModel } from '#adapters/model/prompted-flow-model';
import { flowModelResolverFromEnv } from '#composition/flow-model';
import { browserTaskModel, readBrowserAction } from '#core/flows/browser-task';
import type { BrowserActionRequest } from '#ports/flows';
import { type ScriptedModelServer, startScriptedModelServer } from '../../../helpers/scripted-model-server';

describe('readBrowserAction', () => {
  it.each([
    [
      { action: 'goto', url: ' https://example.com/a ' },
      { action: 'goto', url: 'https://example.com/a' },
    ],
    [
      { action: 'click', target: 'e12' },
      { action: 'click', target: 'e12' },
    ],
    [
      { action: 'click', ref: '[ref=f1e3]' },
      { action: 'click', target: 'f1e3' },
    ],
    [
      { action: 'Type', element: 'e4', value: 'Ada' },
      { action: 'type', target: 'e4', text: 'Ada' },
    ],
    [
      { action: 'select', target: 'e5', label: 'Large' },
      { action: 'select', target: 'e5', value: 'Large' },
    ],
    [
      { action: 'press', key: 'Enter' },
      { action: 'press', key: 'Enter' },
    ],
    [
      { action: 'press', key: 'Tab', target: 'e4' },
      { action: 'press', key: 'Tab', target: 'e4' },
    ],
    [{ action: 'scroll' }, { action: 'scroll', direction: 'down' }],
    [
      { action: 'scroll', direction: 'UP' },
      { action: 'scroll', direction: 'up' },
    ],
    [{ action: 'extract' }, { action: 'extract' }],
    [
      { action: 'done', result: 42 },
      { action: 'done', answer: '42' },
    ],
  ])('reads %j', (answer, action) => {
    expect(readBrowserAction(answer)).toEqual(action);
  });

  it.each([
    [undefined, 'the answer is not a JSON object with an "action"'],
    [['click'], 'the answer is not a JSON object with an "action"'],
    [{ target: 'e1' }, 'no "action": one of goto, click, type, select, press, scroll, extract, done'],
    [
      { action: 'hover', target: 'e1' },
      'unknown action "hover": one of goto, click, type, select, press, scroll, extract, done',
    ],
    [{ action: 'click' }, 'click needs "target"'],
    [{ action: 'type', target: 'e1' }, 'type needs "text"'],
    [{ action: 'goto' }, 'goto needs "url"'],
    [{ action: 'done' }, 'done needs "answer"'],
    [{ action: 'scroll', direction: 'left' }, 'scroll needs "direction": up or down'],
  ])('refuses %j: %s', (answer, reason) => {
    expect(readBrowserAction(answer)).toEqual({ action: 'invalid', reason });
  });

  it('cuts what a model types to 2,000 characters', () => {
    const read = readBrowserAction({ action: 'type', target: 'e1', text: 'x'.repeat(5_000) });
    expect(read.action === 'type' && [...read.text].length).toBe(2_000);
  });
});

describe('PromptedFlowModel.chooseBrowserAction', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await startScriptedModelServer();
  });
  afterAll(async () => {
    await server.close();
  });

  const request: BrowserActionRequest = {
    task: 'Order a large router\nfor Ada',
    stepsLeft: 18,
    history: [
      { choice: { action: 'type', target: 'e4', text: 'Ada' }, ok: true, url: 'https://shop.example/form' },
      {
        choice: { action: 'click', target: 'e9' },
        ok: false,
        error: { code: 'BROWSER_ELEMENT_NOT_FOUND', message: 'No element e9 on the page' },
        url: 'https://shop.example/form',
      },
    ],
    observation: {
      url: 'https://shop.example/form',
      title: 'Order form',
      elements: [
        { ref: 'e4', role: 'textbox', name: 'Name', value: 'Ada' },
        { ref: 'e5', role: 'combobox', name: 'Size', options: ['Small', 'Large'], selected: 'Small' },
        { ref: 'e6', role: 'checkbox', name: 'Gift', checked: false },
        { ref: 'e7', role: 'link', name: 'Help', url: '/help' },
      ],
      text: 'Order a router Name Size',
      cut: false,
    },
  };
  const model = () => new PromptedFlowModel(new OpenAiCompatibleModel({ baseUrl: server.baseUrl, model: 'scripted' }));

  it('asks once, at temperature 0, with the task, the steps so far and the page, and reads a fenced answer', async () => {
    server.script(() => ({
      content:
        '<think>The size is next.</think>Next:\n```json\n{"action": "select", "target": "e5", "value": "Large"}\n```',
    }));
    const choice = await model().chooseBrowserAction(
      { system: 'Agent rules', messages: [{ role: 'user', content: 'Hi' }] },
      request,
    );

    expect(choice).toEqual({ action: 'select', target: 'e5', value: 'Large' });
    expect(server.requests).toHaveLength(1);
    const [sent] = server.requests;
    expect(sent.temperature).toBe(0);
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toMatch(/^Agent rules\n\nYou operate a web browser/);
    expect(sent.messages[1]).toEqual({ role: 'user', content: 'Hi' });
    const question = sent.messages[2].content ?? '';
    expect(question.split('\n').slice(0, 6)).toEqual([
      'Task: Order a large router for Ada',
      'Steps left (this one included): 18',
      'Steps so far:',
      '1. {"action":"type","target":"e4","text":"Ada"} -> ok',
      '2. {"action":"click","target":"e9"} -> failed: BROWSER_ELEMENT_NOT_FOUND: No element e9 on the page',
      '',
    ]);
    expect(question).toContain(
      [
        'URL: https://shop.example/form',
        'Title: Order form',
        'Elements (ref, role, name, state):',
        '- e4: textbox "Name" value="Ada"',
        '- e5: combobox "Size" options=["Small","Large"] selected="Small"',
        '- e6: checkbox "Gift" unchecked',
        '- e7: link "Help" url=/help',
        'Visible text:',
        'Order a router Name Size',
      ].join('\n'),
    );
    expect(question).toContain('{"action":"done","answer":"<the answer to the task, from what the pages showed>"}');
  });

  it('reads an answer that is no action as invalid, with the reason', async () => {
    server.script((_, index) => ({
      content: index === 0 ? 'I would click the button.' : '{"action": "click", "target": ',
    }));
    expect(await model().chooseBrowserAction({ messages: [] }, request)).toEqual({
      action: 'invalid',
      reason: 'the answer is not a JSON object with an "action"',
    });
    expect(await model().chooseBrowserAction({ messages: [] }, request)).toEqual({
      action: 'invalid',
      reason: 'the answer is not a JSON object with an "action"',
    });
  });
});

describe("the model of a browser task's `model` property", () => {
  const env = { MODEL_BASE_URL: 'http://127.0.0.1:9/v1', MODEL_NAME: 'default-model' };

  it('is the default model when absent, a model of the default class when named, a class when a class is named', () => {
    const models = flowModelResolverFromEnv(env);
    expect(browserTaskModel(models, undefined).name).toBe('openai-compatible:default-model');
    expect(browserTaskModel(models, 'vision-model').name).toBe('openai-compatible:vision-model');
    expect(browserTaskModel(models, 'ChatOffline').name).toBe('offline');
  });

  it('is the offline model, whatever is named, when the deployment has no model', () => {
    const models = flowModelResolverFromEnv({});
    expect(browserTaskModel(models, 'gpt-4o').name).toBe('offline');
    expect(() => browserTaskModel(models, 'ChatOpenAICompatible')).toThrow('MODEL_BASE_URL');
  });

  it('is a Bedrock model id of the Bedrock default', () => {
    const models = flowModelResolverFromEnv({ BEDROCK_FLOW_MODEL_ID: 'amazon.nova-lite-v1:0' });
    expect(browserTaskModel(models, 'amazon.nova-pro-v1:0').name).toBe('bedrock-converse:amazon.nova-pro-v1:0');
  });
});
