/**
 * Prompt nodes that call their scoped tools, and retrieval from a flow, end to end on the local runtime
 * (`bin/local.ts` as a child process) whose default model is the scripted model server of this test
 * (MODEL_BASE_URL: OpenAI chat completions over real HTTP on loopback), with HTTP tools on a loopback server: what
 * the service sends the model (tool schemas, results as `tool` messages), calls that succeed, fail, are refused or
 * pass the limit, the offline model's call, and the retrieval tools on a document uploaded and processed through
 * the API, from a tool node and as a scoped call.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TOOL_CALL_LIMIT } from '#core/flows/run-context';
import { createDataset, type Dataset, uploadDocument } from '../helpers/fixtures';
import { pollUntil } from '../helpers/poll';
import {
  type ChatRequest,
  offersTools,
  type ScriptedModelServer,
  scriptedUsage,
  startScriptedModelServer,
  toolResults,
} from '../helpers/scripted-model-server';
import { client, startService, type TestService } from '../helpers/service';

const WARRANTY = 'The warranty of every Acme router lasts three years from the day of purchase.';
const MODEM_WARRANTY = 'The warranty of every Acme modem lasts one year from the day of purchase.';

let service: TestService;
let model: ScriptedModelServer;
let call: ReturnType<typeof client>;
let toolServer: Server;
let toolUrl: string;
let dataset: Dataset;
/** What each tool path of the tool server received, in order. */
const received: Record<string, unknown[]> = {};

interface Call {
  tool: string;
  parameters: unknown;
  status: string;
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

interface Result {
  sessionId: string;
  status: string;
  aiMessages: { node: string; content: string }[];
  memory: Record<string, unknown>;
  outputs: Record<string, { response?: string; calls?: Call[] } & Record<string, unknown>>;
  error: { code: string; message: string; node: string | null } | null;
}

interface RecordedEvent {
  eventName: string;
  payload: Record<string, unknown>;
}

function definition() {
  const flow = (name: string, nodes: Record<string, unknown>[]) => {
    const names = nodes.map((n) => n.name as string);
    return {
      name,
      nodes,
      edges: names.slice(1).map((to, i) => ({ from: names[i], to, type: 'stepForward' })),
    };
  };
  const trigger = (name: string) => ({ name, type: 'trigger', triggerType: 'webhook' });
  return {
    instructions: 'You are the support assistant of Acme routers.',
    tools: [
      {
        name: 'lookupOrder',
        description: 'Finds an order by its id',
        url: `${toolUrl}/orders`,
        parameters: { orderId: { type: 'string', required: true, description: 'the order id, such as A-1' } },
      },
      { name: 'brokenTool', description: 'Always fails', url: `${toolUrl}/fails` },
    ],
    flows: [
      flow('orders', [
        trigger('Orders'),
        {
          name: 'Answer',
          type: 'promptNode',
          displayName: 'Order answer',
          prompt: 'Tell {memory.customer} where order {memory.orderId} is.',
          tools: ['lookupOrder', 'setMemory'],
        },
        {
          name: 'Confirm',
          type: 'promptNode',
          displayName: 'Confirm',
          llmConfig: { name: 'ChatOffline' },
          prompt: 'The lookup said {tools.Answer.calls.0.result.status}.',
          sendAiMessage: false,
        },
      ]),
      flow('transcript', [
        trigger('Transcript'),
        {
          name: 'Greet',
          type: 'promptNode',
          displayName: 'Greet',
          prompt: 'Greet {memory.customer}.',
          llmConfig: {
            name: 'ChatOpenAICompatible',
            properties: { temperature: 0.3, maxTokens: 200, topP: 0.9, stopSequences: ['END'] },
          },
        },
        { name: 'Lookup', type: 'tool', toolName: 'lookupOrder', parameters: { orderId: '{memory.orderId}' } },
        { name: 'Report', type: 'promptNode', displayName: 'Report', prompt: 'Tell the customer where the order is.' },
        {
          name: 'Blind',
          type: 'promptNode',
          displayName: 'Blind',
          prompt: 'Say goodbye.',
          context: 'none',
          sendAiMessage: false,
        },
      ]),
      flow('failing', [
        trigger('Failing'),
        {
          name: 'Try',
          type: 'promptNode',
          displayName: 'Try',
          prompt: 'Try it.',
          tools: ['brokenTool', 'lookupOrder'],
        },
      ]),
      flow('scope', [
        trigger('Scope'),
        { name: 'Narrow', type: 'promptNode', displayName: 'Narrow', prompt: 'Help.', tools: ['lookupOrder'] },
      ]),
      flow('limit', [
        trigger('Limit'),
        { name: 'Busy', type: 'promptNode', displayName: 'Busy', prompt: 'Check orders.', tools: ['lookupOrder'] },
      ]),
      flow('offline', [
        trigger('Offline'),
        {
          name: 'OfflineAnswer',
          type: 'promptNode',
          displayName: 'Offline answer',
          llmConfig: { name: 'ChatOffline' },
          prompt: 'Use lookupOrder for order {memory.orderId}.',
          tools: ['lookupOrder'],
        },
      ]),
      flow('knowledge', [
        trigger('Knowledge'),
        {
          name: 'Search',
          type: 'tool',
          toolName: 'retrieveFromKnowledgeBase',
          parameters: { query: '{memory.question}', numberOfResults: 2 },
        },
        {
          name: 'Generate',
          type: 'tool',
          toolName: 'retrieveAndGenerateFromKnowledgeBase',
          parameters: { query: '{memory.question}', knowledgeBaseId: '{memory.kb}' },
        },
        {
          name: 'Reply',
          type: 'promptNode',
          displayName: 'Reply',
          llmConfig: { name: 'ChatOffline' },
          prompt: 'From the manual: {tools.Search.results.0.content} Generated: {tools.Generate.answer}',
        },
      ]),
      flow('filtered', [
        trigger('Filtered'),
        {
          name: 'ByProduct',
          type: 'tool',
          toolName: 'retrieveFromKnowledgeBase',
          parameters: {
            query: 'warranty',
            filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.product}' }],
          },
        },
      ]),
      flow('badKnowledge', [
        trigger('BadKnowledge'),
        {
          name: 'TooMany',
          type: 'tool',
          toolName: 'retrieveFromKnowledgeBase',
          parameters: { query: 'warranty', numberOfResults: 500, minScore: 2 },
        },
      ]),
      flow('librarian', [
        trigger('AskLibrarian'),
        {
          name: 'Librarian',
          type: 'promptNode',
          displayName: 'Librarian',
          prompt: 'Answer the question from the manual.',
          tools: ['retrieveFromKnowledgeBase'],
        },
      ]),
    ],
  };
}

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on('end', () => {
      const path = request.url ?? '';
      received[path] ??= [];
      received[path].push(text ? JSON.parse(text) : {});
      if (path === '/orders') {
        const body = JSON.parse(text) as { orderId?: string };
        const answer = body.orderId === 'A-1' ? { status: 'shipped', shippedAt: '2026-11-20' } : { status: 'delayed' };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
        return;
      }
      response.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
  });
  await new Promise<void>((done) => toolServer.listen(0, '127.0.0.1', done));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  model = await startScriptedModelServer();
  service = await startService({
    env: {
      // The tools and the model server of this test are on loopback, which the runtime refuses unless told so.
      OUTBOUND_ALLOW_PRIVATE_NETWORK: 'true',
      MODEL_BASE_URL: model.baseUrl,
      MODEL_NAME: 'scripted',
    },
  });
  call = client(service);
  dataset = await createDataset(call, 'production');
  const uploads = [
    await uploadDocument(call, dataset, { fileName: 'router.txt', label1: 'product:router' }, WARRANTY),
    await uploadDocument(call, dataset, { fileName: 'modem.txt', label1: 'product:modem' }, MODEM_WARRANTY),
  ];
  for (const { link } of uploads) {
    const processed = await pollUntil(
      () =>
        call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
      (r) => r.body.status === 'ready',
    );
    expect(processed.body.status).toBe('ready');
  }
  const put = await call('PUT', `/dashboard/agents/${dataset.agentId}/definition/production`, { body: definition() });
  if (put.status !== 200) throw new Error(JSON.stringify(put.body));
});

afterAll(async () => {
  await service?.stop();
  await model?.close();
  await new Promise<void>((done) => toolServer?.close(() => done()));
});

beforeEach(() => {
  for (const key of Object.keys(received)) delete received[key];
});

const webhook = (trigger: string, body: Record<string, unknown>) =>
  call<Result>('POST', `/api/v1/webhooks/${dataset.agentId}/production/${trigger}`, { body });

async function events(sessionId: string): Promise<RecordedEvent[]> {
  const page = await call<{ data: RecordedEvent[] }>('POST', '/api/v1/events/agent', {
    body: { agentId: dataset.agentId, filters: { environment: 'production', sessionId }, limit: 1000 },
  });
  expect(page.status).toBe(200);
  return [...page.body.data].reverse();
}

/** The results of the last round the model was sent (what the service answered its calls with). */
const lastResults = (request: ChatRequest) => toolResults(request).map((r) => r.content as Record<string, unknown>);

describe('what a prompt node sees of the run', () => {
  it('the prompt after a tool node gets the tool call and its result as tool messages; context none gets none', async () => {
    model.script((request) => {
      const prompt = request.messages.at(-1)?.content ?? '';
      if (prompt.startsWith('Greet')) return { content: 'Hello Ada.' };
      if (prompt.startsWith('Tell')) return { content: 'Your order shipped.' };
      return { content: 'Goodbye.' };
    });
    const result = await webhook('Transcript', { customer: 'Ada', orderId: 'A-1' });
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(received['/orders']).toEqual([{ orderId: 'A-1' }]);
    const [greet, report, blind] = model.requests;
    expect(model.requests).toHaveLength(3);
    expect(greet.messages.map((m) => m.role)).toEqual(['system', 'user']);
    // Its llmConfig's inference parameters, under the protocol's names; the others get the server's defaults.
    expect(greet).toMatchObject({ temperature: 0.3, max_tokens: 200, top_p: 0.9, stop: ['END'] });
    expect(report).not.toHaveProperty('top_p');

    // The second prompt: the first prompt's answer, then the tool node's call and result, then its own prompt.
    const lookup = report.messages.find((m) => m.tool_calls?.length);
    expect(lookup?.tool_calls).toEqual([
      { id: 'tool_step_1', type: 'function', function: { name: 'lookupOrder', arguments: '{"orderId":"A-1"}' } },
    ]);
    expect(report.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.stringMatching(/^You are the support assistant of Acme routers\./)],
      ['assistant', 'Hello Ada.'],
      ['assistant', null],
      ['tool', JSON.stringify({ status: 'shipped', shippedAt: '2026-11-20' })],
      ['user', 'Tell the customer where the order is.'],
    ]);
    expect(report.messages[3].tool_call_id).toBe('tool_step_1');

    // context: none: the instructions and the node's prompt only.
    expect(blind.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', expect.stringMatching(/^You are the support assistant of Acme routers\./)],
      ['user', 'Say goodbye.'],
    ]);

    // The session keeps the step, bounded, for the nodes after it and for whoever reads the session.
    const session = await call<{ messages: { role: string; node?: string; tool?: unknown }[] }>(
      'GET',
      `/dashboard/agents/${dataset.agentId}/sessions/production/${result.body.sessionId}`,
    );
    // The trace: one step per node run, with its input, output, time and the edge it took.
    const trace = await call<{ steps: Record<string, unknown>[] }>(
      'GET',
      `/dashboard/agents/${dataset.agentId}/sessions/production/${result.body.sessionId}/trace`,
    );
    expect(trace.status).toBe(200);
    expect(trace.body.steps.map((s) => [s.node, s.status, s.edge])).toEqual([
      ['Transcript', 'succeeded', { to: 'Greet', reason: 'stepForward' }],
      ['Greet', 'succeeded', { to: 'Lookup', reason: 'stepForward' }],
      ['Lookup', 'succeeded', { to: 'Report', reason: 'stepForward' }],
      ['Report', 'succeeded', { to: 'Blind', reason: 'stepForward' }],
      ['Blind', 'succeeded', { to: null, reason: 'no edge leaves this node: the flow ends' }],
    ]);
    const [, greetStep, lookupStep, reportStep] = trace.body.steps;
    expect(greetStep).toMatchObject({
      input: { prompt: 'Greet Ada.', model: 'openai-compatible:scripted' },
      model: 'openai-compatible:scripted',
      output: { response: 'Hello Ada.' },
      error: null,
    });
    // The tokens each prompt node's call used, as the server reported them; none for the tool node (no model call).
    const tokensOf = (request: ChatRequest, content: string) => {
      const usage = scriptedUsage(request, { content });
      return { input: usage.prompt_tokens, output: usage.completion_tokens };
    };
    expect(greetStep.tokens).toEqual(tokensOf(greet, 'Hello Ada.'));
    expect(reportStep.tokens).toEqual(tokensOf(report, 'Your order shipped.'));
    expect(lookupStep.tokens).toBeNull();
    expect(lookupStep).toMatchObject({
      input: { toolName: 'lookupOrder', parameters: { orderId: 'A-1' } },
      output: { status: 'shipped', shippedAt: '2026-11-20' },
    });
    expect(reportStep).toMatchObject({ output: { response: 'Your order shipped.' } });
    for (const step of trace.body.steps) expect(typeof step.durationMs).toBe('number');

    expect(session.body.messages.filter((m) => m.role === 'tool')).toEqual([
      expect.objectContaining({
        node: 'Lookup',
        tool: {
          name: 'lookupOrder',
          input: { orderId: 'A-1' },
          output: { status: 'shipped', shippedAt: '2026-11-20' },
        },
      }),
    ]);
  });
});

describe('scoped tools of a prompt node', () => {
  it('gives the model the tool schemas, runs its call through the HTTP tool, sends the result back and keeps it for later nodes', async () => {
    model.script((request) => {
      const results = lastResults(request);
      if (results.length === 0) return { toolCalls: [{ name: 'lookupOrder', arguments: { orderId: 'A-1' } }] };
      return { content: `Ada, your order shipped on ${results[0].shippedAt}.` };
    });
    const result = await webhook('Orders', { customer: 'Ada', orderId: 'A-1' });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(result.body.aiMessages.map((m) => [m.node, m.content])).toEqual([
      ['Answer', 'Ada, your order shipped on 2026-11-20.'],
    ]);
    expect(result.body.outputs.Answer).toEqual({
      response: 'Ada, your order shipped on 2026-11-20.',
      calls: [
        {
          tool: 'lookupOrder',
          parameters: { orderId: 'A-1' },
          status: 'succeeded',
          result: { status: 'shipped', shippedAt: '2026-11-20' },
        },
      ],
    });
    // A later node reads the call's result by its index (from 0).
    expect(result.body.outputs.Confirm).toEqual({ response: 'The lookup said shipped.' });
    expect(received['/orders']).toEqual([{ orderId: 'A-1' }]);

    // What the service sent the model: the tools as JSON schemas, then the result as a `tool` message.
    const [first, second] = model.requests;
    expect(model.requests).toHaveLength(2);
    expect(first.model).toBe('scripted');
    expect(first.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'lookupOrder',
          description: 'Finds an order by its id',
          parameters: {
            type: 'object',
            properties: { orderId: { type: 'string', description: 'the order id, such as A-1' } },
            required: ['orderId'],
            additionalProperties: false,
          },
        },
      },
      {
        type: 'function',
        function: {
          name: 'setMemory',
          description: 'Writes each of its parameters into the session memory under the same name',
          parameters: { type: 'object', properties: {}, additionalProperties: true },
        },
      },
    ]);
    expect(first.messages.at(-1)).toEqual({ role: 'user', content: 'Tell Ada where order A-1 is.' });
    const assistant = second.messages.at(-2);
    expect(assistant?.tool_calls?.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['lookupOrder', { orderId: 'A-1' }],
    ]);
    expect(second.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: assistant?.tool_calls?.[0].id,
      content: JSON.stringify({ status: 'shipped', shippedAt: '2026-11-20' }),
    });

    const recorded = await events(result.body.sessionId);
    expect(recorded.map((e) => [e.eventName, e.payload.nodeName])).toEqual([
      ['invocation_start', undefined],
      ['node_execution', 'Orders'],
      ['node_result', 'Orders'],
      ['node_execution', 'Answer'],
      ['tool_call', 'Answer'],
      ['node_result', 'Answer'],
      ['node_execution', 'Confirm'],
      ['node_result', 'Confirm'],
    ]);
    expect(recorded[3].payload.parameters).toMatchObject({ tools: ['lookupOrder', 'setMemory'] });
    expect(recorded[4].payload).toEqual({
      nodeName: 'Answer',
      callIndex: 0,
      tool: 'lookupOrder',
      parameters: { orderId: 'A-1' },
      status: 'succeeded',
      durationMs: expect.any(Number),
    });
  });

  it('hands a failing tool and parameters that break the declaration back to the model as errors, and goes on', async () => {
    model.script((request) => {
      if (lastResults(request).length === 0) {
        return {
          toolCalls: [
            { name: 'brokenTool', arguments: {} },
            { name: 'lookupOrder', arguments: { orderId: 42 } },
          ],
        };
      }
      return { content: 'Sorry, I cannot check that right now.' };
    });
    const result = await webhook('Failing', {});
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual(['Sorry, I cannot check that right now.']);
    const failed = {
      brokenTool: { code: 'TOOL_FAILED', message: 'Tool brokenTool answered HTTP 500' },
      lookupOrder: { code: 'TOOL_PARAMETERS_INVALID', message: 'Tool lookupOrder: orderId must be string' },
    };
    expect(result.body.outputs.Try.calls).toEqual([
      { tool: 'brokenTool', parameters: {}, status: 'failed', error: failed.brokenTool },
      { tool: 'lookupOrder', parameters: { orderId: 42 }, status: 'failed', error: failed.lookupOrder },
    ]);
    // The HTTP tool was called; the call with a number for a string never left the service.
    expect(received['/fails']).toHaveLength(1);
    expect(received['/orders']).toBeUndefined();
    expect(lastResults(model.requests[1])).toEqual([{ error: failed.brokenTool }, { error: failed.lookupOrder }]);
    const calls = (await events(result.body.sessionId)).filter((e) => e.eventName === 'tool_call');
    expect(calls.map((e) => [e.payload.tool, e.payload.status, e.payload.error])).toEqual([
      ['brokenTool', 'failed', failed.brokenTool],
      ['lookupOrder', 'failed', failed.lookupOrder],
    ]);
  });

  it('refuses a call to a tool that is not in the node’s scope: not run, recorded, and the model told', async () => {
    model.script((request) => {
      if (lastResults(request).length === 0) {
        return {
          toolCalls: [
            { name: 'setMemory', arguments: { role: 'admin' } },
            { name: 'deleteEverything', arguments: {} },
          ],
        };
      }
      return { content: 'I cannot do that.' };
    });
    const result = await webhook('Scope', {});
    expect(result.body).toMatchObject({ status: 'completed' });
    expect(result.body.memory).not.toHaveProperty('role');
    const refused = (tool: string) => ({
      code: 'TOOL_NOT_IN_SCOPE',
      message: `Tool ${tool} is not one of the tools of node Narrow (lookupOrder); it was not called`,
    });
    expect(result.body.outputs.Narrow.calls?.map((c) => [c.tool, c.status, c.error])).toEqual([
      ['setMemory', 'refused', refused('setMemory')],
      ['deleteEverything', 'refused', refused('deleteEverything')],
    ]);
    expect(lastResults(model.requests[1])).toEqual([
      { error: refused('setMemory') },
      { error: refused('deleteEverything') },
    ]);
    const calls = (await events(result.body.sessionId)).filter((e) => e.eventName === 'tool_call');
    expect(calls.map((e) => [e.payload.tool, e.payload.status])).toEqual([
      ['setMemory', 'refused'],
      ['deleteEverything', 'refused'],
    ]);
  });

  it(`runs ${TOOL_CALL_LIMIT} calls in one node run, one per model turn, and then takes the answer`, async () => {
    model.script((request) => {
      const done = request.messages.filter((m) => m.role === 'tool').length;
      if (done < TOOL_CALL_LIMIT) return { toolCalls: [{ name: 'lookupOrder', arguments: { orderId: `C-${done}` } }] };
      return { content: `Checked ${done} orders.` };
    });
    const result = await webhook('Limit', {});
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([`Checked ${TOOL_CALL_LIMIT} orders.`]);
    expect(received['/orders']).toHaveLength(TOOL_CALL_LIMIT);
    expect(model.requests).toHaveLength(TOOL_CALL_LIMIT + 1);
  });

  it('fails the node with TOOL_CALL_LIMIT when an answer asks past the limit, running none of that answer’s calls', async () => {
    const turns = [4, 3, 2];
    model.script((_, index) => ({
      toolCalls: Array.from({ length: turns[index] ?? 1 }, (__, i) => ({
        name: 'lookupOrder',
        arguments: { orderId: `D-${index}-${i}` },
      })),
    }));
    const result = await webhook('Limit', {});
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'failed', error: { code: 'TOOL_CALL_LIMIT', node: 'Busy' } });
    expect(result.body.error?.message).toBe(
      `Prompt node Busy: the model asked for 2 more tool call(s) after 7; a node run makes at most ${TOOL_CALL_LIMIT}`,
    );
    // 4 + 3 ran; the answer asking for 2 more ran none.
    expect(received['/orders']).toHaveLength(7);
    expect(result.body.outputs.Busy.calls).toHaveLength(7);
    expect(result.body.outputs.Busy).not.toHaveProperty('response');
    const recorded = await events(result.body.sessionId);
    expect(recorded.filter((e) => e.eventName === 'tool_call')).toHaveLength(7);
    expect(recorded.at(-1)).toMatchObject({
      eventName: 'invocation_error',
      payload: { code: 'TOOL_CALL_LIMIT', nodeName: 'Busy' },
    });
  });

  it('lets the offline model call the tool its prompt names, with parameters from memory, once, then answer', async () => {
    model.script(() => ({ status: 500, body: { error: { message: 'the offline node must not ask the server' } } }));
    const result = await webhook('Offline', { orderId: 'B-2' });
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(received['/orders']).toEqual([{ orderId: 'B-2' }]);
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([
      'Use lookupOrder for order B-2.\nlookupOrder: {"status":"delayed"}',
    ]);
    expect(result.body.outputs.OfflineAnswer.calls).toEqual([
      { tool: 'lookupOrder', parameters: { orderId: 'B-2' }, status: 'succeeded', result: { status: 'delayed' } },
    ]);
    expect(model.requests).toHaveLength(0);
  });
});

describe('retrieval from a flow', () => {
  it('retrieves and generates from tool nodes, records them like any tool, and a prompt node reads the results', async () => {
    model.script((request) => {
      if (offersTools(request)) throw new Error('no tools expected');
      // As for any tool node, the model is asked for the parameters the node leaves out: it gives none here.
      if (request.messages.at(-1)?.content?.startsWith('Tool: ')) return { content: '{}' };
      // The generate step of retrieveAndGenerateFromKnowledgeBase: the deployment's generate model.
      return { content: 'Three years from the day of purchase [1].' };
    });
    const question = 'How long is the warranty of the router?';
    const result = await webhook('Knowledge', { question, kb: dataset.knowledgeBaseId });
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    const search = result.body.outputs.Search as { results: { content: string; score: number; metadata: unknown }[] };
    expect(search.results).toHaveLength(2);
    expect(search.results[0]).toMatchObject({ content: WARRANTY, metadata: { label1: 'product:router' } });
    expect(result.body.outputs.Generate).toMatchObject({
      answer: 'Three years from the day of purchase [1].',
      citations: [{ resultIndex: 0 }],
      model: 'openai-compatible:scripted',
    });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([
      `From the manual: ${WARRANTY} Generated: Three years from the day of purchase [1].`,
    ]);
    const generate = model.requests.filter((r) => r.messages[0].content?.startsWith('You answer questions'));
    expect(generate).toHaveLength(1);
    expect(generate[0].messages.at(-1)?.content).toContain(`[1] ${WARRANTY}`);

    const nodes = (await events(result.body.sessionId)).filter((e) => e.eventName === 'node_execution');
    expect(nodes.find((e) => e.payload.nodeName === 'Search')?.payload).toMatchObject({
      nodeType: 'tool',
      parameters: { toolName: 'retrieveFromKnowledgeBase', parameters: { query: question, numberOfResults: 2 } },
    });
  });

  it('resolves a memory placeholder in a filter as default retrieval does: a value filters, no value skips the filter', async () => {
    const contents = (result: { body: Result }) =>
      (result.body.outputs.ByProduct.results as { content: string }[]).map((r) => r.content).sort();
    const modem = await webhook('Filtered', { product: 'product:modem' });
    expect(modem.body).toMatchObject({ status: 'completed', error: null });
    expect(contents(modem)).toEqual([MODEM_WARRANTY]);
    const unfiltered = await webhook('Filtered', {});
    expect(contents(unfiltered)).toEqual([MODEM_WARRANTY, WARRANTY]);
  });

  it('fails a retrieval tool node whose parameters break the query rules with TOOL_PARAMETERS_INVALID', async () => {
    const result = await webhook('BadKnowledge', {});
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({
      status: 'failed',
      error: { code: 'TOOL_PARAMETERS_INVALID', node: 'TooMany' },
    });
    expect(result.body.error?.message).toBe(
      'retrieveFromKnowledgeBase: numberOfResults must be at most 100 (numberOfResults: max); minScore must be at most 1 (minScore: max)',
    );
  });

  it('lets the model call retrieveFromKnowledgeBase as a scoped tool, the knowledge base left out', async () => {
    model.script((request) => {
      const results = lastResults(request);
      if (results.length === 0) {
        return { toolCalls: [{ name: 'retrieveFromKnowledgeBase', arguments: { query: 'router warranty' } }] };
      }
      const found = results[0].results as { content: string }[];
      return { content: `According to the manual: ${found[0].content}` };
    });
    const result = await webhook('AskLibrarian', { message: 'How long is my warranty?' });
    expect(result.body).toMatchObject({ status: 'completed', error: null });
    expect(result.body.aiMessages.map((m) => m.content)).toEqual([`According to the manual: ${WARRANTY}`]);
    const [sent] = lastResults(model.requests[1]);
    // Both documents match "warranty"; the router's ranks first.
    expect((sent.results as { content: string }[]).map((r) => r.content)).toEqual([WARRANTY, MODEM_WARRANTY]);
    expect(result.body.outputs.Librarian.calls?.[0]).toMatchObject({
      tool: 'retrieveFromKnowledgeBase',
      parameters: { query: 'router warranty' },
      status: 'succeeded',
      result: { results: [{ content: WARRANTY }, { content: MODEM_WARRANTY }] },
    });
    expect(model.requests[0].tools?.[0].function).toMatchObject({
      name: 'retrieveFromKnowledgeBase',
      parameters: { required: ['query'], properties: { filters: { type: 'array', items: {} } } },
    });
  });
});

describe('validation through the API', () => {
  it('answers every problem of scoped tools at once: unknown names and duplicates', async () => {
    const bad = definition();
    const answer = bad.flows[0].nodes[1] as { tools: string[] };
    answer.tools = ['lookupOrder', 'sendEmail', 'lookupOrder'];
    const validation = await call<{ valid: boolean; problems: { field: string; rule: string; node: string }[] }>(
      'POST',
      `/dashboard/agents/${dataset.agentId}/definition/production/validate`,
      { body: bad },
    );
    expect(validation.body.valid).toBe(false);
    expect(validation.body.problems.map((p) => [p.node, p.field, p.rule])).toEqual([
      ['Answer', 'flows.0.nodes.1.tools.1', 'tool.unknown'],
      ['Answer', 'flows.0.nodes.1.tools.2', 'tool.duplicate'],
    ]);
    const put = await call<{ error: { code: string } }>(
      'PUT',
      `/dashboard/agents/${dataset.agentId}/definition/production`,
      {
        body: bad,
      },
    );
    expect(put.status).toBe(400);
    expect(put.body.error.code).toBe('VALIDATION_ERROR');
  });
});
