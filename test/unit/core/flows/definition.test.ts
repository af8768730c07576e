/** Validation of agent definitions: each rule as a case, and every problem reported at once with flow and node. */
import { type DefinitionProblem, UI_LIMITS, validateDefinition } from '#core/flows/definition';
import { checkDefinition } from '#core/flows/definitions';
import { refundFlow, scheduleFlow, supportDefinition, triageFlow } from '../../../helpers/flow-definitions';

const valid = () => {
  const definition = supportDefinition('https://tools.example.com');
  return { ...definition, flows: [...definition.flows, refundFlow, triageFlow, scheduleFlow('0 9 * * 1-5', 'UTC')] };
};

type Mutable = ReturnType<typeof valid> & Record<string, unknown>;

function problemsOf(change: (d: Mutable) => unknown): DefinitionProblem[] {
  const definition = structuredClone(valid()) as Mutable;
  const returned = change(definition);
  // A change either edits the clone in place or returns a new definition (`delete` returns true: not one).
  const changed = typeof returned === 'object' && returned !== null ? returned : definition;
  const outcome = validateDefinition(changed);
  if (outcome.valid) throw new Error('expected problems, the definition is valid');
  return [...outcome.problems];
}

// biome-ignore lint/suspicious/noExplicitAny: tests reach into the definition by index
const node = (d: Mutable, flow: number, index: number): any => d.flows[flow].nodes[index];
// biome-ignore lint/suspicious/noExplicitAny: tests reach into the definition by index
const edges = (d: Mutable, flow: number): any[] => d.flows[flow].edges as any[];

it('accepts the sample definitions and fills the defaults (sendAiMessage true, POST tools, no variables)', () => {
  const outcome = validateDefinition(valid());
  expect(outcome.problems).toEqual([]);
  if (!outcome.valid) return;
  const prompt = outcome.definition.flows[0].nodes[3];
  expect(prompt).toMatchObject({ type: 'promptNode', sendAiMessage: true });
  expect(outcome.definition.tools[0].method).toBe('POST');
});

it('needs no displayName on nodes other than prompt nodes (README: "Where the spec contradicts itself")', () => {
  const definition = structuredClone(valid()) as Mutable;
  const nodes = definition.flows.flatMap((flow) => flow.nodes as readonly { type: string; displayName?: string }[]);
  const others = nodes.filter((n) => n.type !== 'promptNode');
  expect(others.length).toBeGreaterThan(0);
  for (const other of others) delete other.displayName;
  expect(validateDefinition(definition).problems).toEqual([]);
});

it('accepts an empty llmConfig as the default model, the same as no llmConfig', () => {
  const definition = structuredClone(valid()) as Mutable;
  node(definition, 0, 3).llmConfig = {};
  const outcome = validateDefinition(definition);
  expect(outcome.problems).toEqual([]);
  if (!outcome.valid) return;
  const prompt = outcome.definition.flows[0].nodes[3];
  expect(prompt.type).toBe('promptNode');
  expect(prompt.type === 'promptNode' && prompt.llmConfig).toBeUndefined();
});

test.each<[string, (d: Mutable) => unknown, Partial<DefinitionProblem>]>([
  [
    'a node name used twice, even in another flow',
    (d) => {
      node(d, 1, 3).name = 'Lookup';
      edges(d, 1)[2].to = 'Lookup';
    },
    { field: 'flows.1.nodes.3.name', rule: 'name.unique', flow: 'refund', node: 'Lookup' },
  ],
  ['a node without a name', (d) => delete node(d, 0, 2).name, { field: 'flows.0.nodes.2.name', rule: 'required' }],
  [
    'a node name with spaces',
    (d) => {
      node(d, 0, 2).name = 'Route it';
    },
    { field: 'flows.0.nodes.2.name', rule: 'format.regex', flow: 'support', node: 'Route it' },
  ],
  [
    'an unknown node type',
    (d) => {
      node(d, 0, 2).type = 'switch';
    },
    { field: 'flows.0.nodes.2.type', node: 'Route' },
  ],
  [
    'a prompt node without displayName',
    (d) => delete node(d, 0, 3).displayName,
    { field: 'flows.0.nodes.3.displayName', rule: 'required', node: 'Shipped' },
  ],
  [
    'a prompt node without prompt',
    (d) => delete node(d, 0, 3).prompt,
    { field: 'flows.0.nodes.3.prompt', rule: 'required', node: 'Shipped' },
  ],
  [
    'a field a node type does not have',
    (d) => {
      node(d, 0, 2).prompt = 'junctions do not prompt';
    },
    { field: 'flows.0.nodes.2.prompt', rule: 'unknownField', node: 'Route' },
  ],
  [
    'an unknown trigger type',
    (d) => {
      node(d, 0, 0).triggerType = 'email';
    },
    { field: 'flows.0.nodes.0.triggerType', rule: 'enum', node: 'Start' },
  ],
  [
    'a schedule trigger without cronExpression',
    (d) => delete node(d, 3, 0).cronExpression,
    { field: 'flows.3.nodes.0.cronExpression', rule: 'required', node: 'Morning' },
  ],
  [
    'a bad cron',
    (d) => {
      node(d, 3, 0).cronExpression = '61 25 * * *';
    },
    { field: 'flows.3.nodes.0.cronExpression', rule: 'cron', node: 'Morning' },
  ],
  [
    'a cron with six fields',
    (d) => {
      node(d, 3, 0).cronExpression = '0 0 9 * * 1';
    },
    { field: 'flows.3.nodes.0.cronExpression', rule: 'cron' },
  ],
  [
    'a time zone that is not IANA',
    (d) => {
      node(d, 3, 0).timezone = 'Mars/Olympus';
    },
    { field: 'flows.3.nodes.0.timezone', rule: 'timezone', node: 'Morning' },
  ],
  [
    'a cron on a webhook trigger',
    (d) => {
      node(d, 0, 0).cronExpression = '0 9 * * *';
    },
    { field: 'flows.0.nodes.0.cronExpression', rule: 'scheduleOnly', node: 'Start' },
  ],
  [
    'defaultPayload on a schedule trigger',
    (d) => {
      node(d, 3, 0).defaultPayload = '{}';
    },
    { field: 'flows.3.nodes.0.defaultPayload', rule: 'webhookOnly' },
  ],
  [
    'a defaultPayload that is not JSON',
    (d) => {
      node(d, 0, 0).defaultPayload = '{orderId: 1}';
    },
    { field: 'flows.0.nodes.0.defaultPayload', rule: 'json', node: 'Start' },
  ],
  [
    'an app trigger without appName',
    (d) => {
      node(d, 0, 0).triggerType = 'app';
    },
    { field: 'flows.0.nodes.0.appName', rule: 'required', node: 'Start' },
  ],
  [
    'a tool that is not registered',
    (d) => {
      node(d, 0, 1).toolName = 'lookupInvoice';
    },
    { field: 'flows.0.nodes.1.toolName', rule: 'tool.unknown', node: 'Lookup' },
  ],
  [
    'a fixed parameter the tool does not declare',
    (d) => {
      node(d, 0, 1).parameters.customerId = 'c-1';
    },
    { field: 'flows.0.nodes.1.parameters.customerId', rule: 'tool.unknownParameter', node: 'Lookup' },
  ],
  [
    'a declared tool named like a built-in one',
    (d) => {
      d.tools[0].name = 'setMemory';
      node(d, 0, 1).toolName = 'setMemory';
    },
    { field: 'tools.0.name', rule: 'tool.builtInName' },
  ],
  [
    'a tool URL that is not http(s)',
    (d) => {
      d.tools[0].url = 'file:///etc/passwd';
    },
    { field: 'tools.0.url', rule: 'format.regex' },
  ],
  [
    'a targetNodeId that matches no node in any flow',
    (d) => {
      node(d, 2, 2).targetNodeId = 'AskReasons';
    },
    { field: 'flows.2.nodes.2.targetNodeId', rule: 'jump.unknownTarget', flow: 'triage', node: 'ToRefund' },
  ],
  [
    'a jump to itself',
    (d) => {
      node(d, 2, 2).targetNodeId = 'ToRefund';
    },
    { field: 'flows.2.nodes.2.targetNodeId', rule: 'jump.self' },
  ],
  [
    'an edge to a node of another flow',
    (d) => {
      edges(d, 0)[0].to = 'AskReason';
    },
    { field: 'flows.0.edges.0.to', rule: 'edge.unknownNode', node: 'Start' },
  ],
  [
    'an edge into a trigger',
    (d) => {
      edges(d, 0).push({ from: 'Route', to: 'Start', type: 'stepForward' });
    },
    { field: 'flows.0.edges.4.to', rule: 'edge.intoTrigger', node: 'Route' },
  ],
  [
    'a promptCondition edge without condition',
    (d) => delete edges(d, 1)[1].condition,
    { field: 'flows.1.edges.1.condition', rule: 'required', node: 'AskReason' },
  ],
  [
    'a promptCondition edge out of a junction',
    (d) => {
      edges(d, 0)[3] = { from: 'Route', to: 'Delayed', type: 'promptCondition', condition: 'late' };
    },
    { field: 'flows.0.edges.3.type', rule: 'edge.promptConditionSource', node: 'Route' },
  ],
  [
    'a when without the value its operator compares with',
    (d) => {
      delete edges(d, 0)[2].when.value;
    },
    { field: 'flows.0.edges.2.when.value', rule: 'required', node: 'Route' },
  ],
  [
    'a placeholder that names no node',
    (d) => {
      node(d, 0, 3).prompt = 'Shipped on {tools.Lokup.shippedAt}';
    },
    { field: 'flows.0.nodes.3.prompt', rule: 'placeholder.unknownNode', node: 'Shipped' },
  ],
  [
    'an env placeholder that names no variable',
    (d) => {
      node(d, 0, 4).prompt = 'Write to {env.SUPPORT_MAIL}';
    },
    { field: 'flows.0.nodes.4.prompt', rule: 'placeholder.unknownVariable', node: 'Delayed' },
  ],
  [
    'a definition without any trigger',
    (d) => ({ ...d, flows: [d.flows[1]].map((f) => ({ ...f, nodes: f.nodes.slice(1), edges: f.edges.slice(1) })) }),
    { field: 'flows', rule: 'trigger.required' },
  ],
  [
    'two flows of one name',
    (d) => ({
      ...d,
      flows: [...d.flows, { name: 'support', nodes: [{ name: 'Other', type: 'junction' }], edges: [] }],
    }),
    { field: 'flows.4.name', rule: 'flow.unique', flow: 'support' },
  ],
  [
    'a flow without nodes',
    (d) => ({ ...d, flows: [...d.flows, { name: 'empty', nodes: [] }] }),
    { field: 'flows.4.nodes', rule: 'minItems' },
  ],
  [
    'a tool declared twice',
    (d) => {
      d.tools.push({ ...d.tools[0] });
    },
    { field: 'tools.1.name', rule: 'tool.unique' },
  ],
  [
    'eventName on a webhook trigger',
    (d) => {
      node(d, 0, 0).eventName = 'ticket.created';
    },
    { field: 'flows.0.nodes.0.eventName', rule: 'appOnly', node: 'Start' },
  ],
  [
    'an edge out of a jumpToNode',
    (d) => {
      edges(d, 2).push({ from: 'ToRefund', to: 'Remember', type: 'stepForward' });
    },
    { field: 'flows.2.edges.2.from', rule: 'edge.fromJump', node: 'ToRefund' },
  ],
  [
    'a condition on a stepForward edge',
    (d) => {
      edges(d, 0)[0].condition = 'always';
    },
    { field: 'flows.0.edges.0.condition', rule: 'edge.conditionOnStepForward', node: 'Start' },
  ],
  [
    'a when on a promptCondition edge',
    (d) => {
      edges(d, 1)[1].when = { path: 'memory.x', operator: 'exists' };
    },
    { field: 'flows.1.edges.1.when', rule: 'edge.whenOnPromptCondition', node: 'AskReason' },
  ],
  [
    'a value on an exists test',
    (d) => {
      edges(d, 0)[2].when = { path: 'memory.x', operator: 'exists', value: 'y' };
    },
    { field: 'flows.0.edges.2.when.value', rule: 'when.noValue', node: 'Route' },
  ],
  [
    'a when path outside memory, tools and system',
    (d) => {
      edges(d, 0)[2].when.path = 'env.SECRET';
    },
    { field: 'flows.0.edges.2.when.path', rule: 'format.regex' },
  ],
  [
    'a when path naming no node',
    (d) => {
      edges(d, 0)[2].when.path = 'tools.Lokup.status';
    },
    { field: 'flows.0.edges.2.when.path', rule: 'placeholder.unknownNode', node: 'Route' },
  ],
  [
    'an llmConfig class that does not exist',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatSomethingElse' };
    },
    { field: 'flows.0.nodes.3.llmConfig.name', rule: 'enum', node: 'Shipped' },
  ],
  [
    'an llmConfig with properties but no name',
    (d) => {
      node(d, 0, 3).llmConfig = { properties: { temperature: 0.2 } };
    },
    { field: 'flows.0.nodes.3.llmConfig.name', rule: 'required', node: 'Shipped' },
  ],
  [
    'an llmConfig that names an endpoint',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatOpenAICompatible', properties: { baseUrl: 'http://169.254.169.254' } };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.baseUrl', rule: 'unknownField' },
  ],
  [
    'an inference parameter neither provider documents under that name',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatBedrockConverse', properties: { frequencyPenalty: 0.5 } };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.frequencyPenalty', rule: 'unknownField' },
  ],
  [
    'a Bedrock temperature over 1 (Converse takes 0 to 1)',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatBedrockConverse', properties: { temperature: 1.5 } };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.temperature', rule: 'max', node: 'Shipped' },
  ],
  [
    'a topP over 1',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatOpenAICompatible', properties: { topP: 1.2 } };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.topP', rule: 'max' },
  ],
  [
    'five stop sequences (both providers take 4)',
    (d) => {
      node(d, 0, 3).llmConfig = {
        name: 'ChatOpenAICompatible',
        properties: { stopSequences: ['a', 'b', 'c', 'd', 'e'] },
      };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.stopSequences', rule: 'maxItems' },
  ],
  [
    'properties given to the offline model, which takes none',
    (d) => {
      node(d, 0, 3).llmConfig = { name: 'ChatOffline', properties: { temperature: 0.2 } };
    },
    { field: 'flows.0.nodes.3.llmConfig.properties.temperature', rule: 'llmConfig.unsupportedProperty' },
  ],
  [
    'a browser task without prompt',
    (d) => ({
      ...d,
      flows: [...d.flows, { name: 'web', nodes: [{ name: 'Browse', type: 'browserTask', model: 'default' }] }],
    }),
    { field: 'flows.4.nodes.0.prompt', rule: 'required', node: 'Browse' },
  ],
  ['a definition without flows', (d) => ({ ...d, flows: [] }), { field: 'flows', rule: 'minItems' }],
  ['an unknown top-level field', (d) => ({ ...d, agentName: 'x' }), { field: 'agentName', rule: 'unknownField' }],
])('reports %s', (_name, change, expected) => {
  expect(problemsOf(change)).toContainEqual(expect.objectContaining(expected));
});

it('accepts every documented inference parameter for each language model class', () => {
  const withConfig = (llmConfig: unknown) => {
    const definition = structuredClone(valid()) as Mutable;
    node(definition, 0, 3).llmConfig = llmConfig;
    return validateDefinition(definition);
  };
  for (const name of ['ChatBedrockConverse', 'ChatOpenAICompatible']) {
    const properties = { temperature: 1, maxTokens: 512, topP: 0.9, stopSequences: ['\n\nUser:', 'END'] };
    expect(withConfig({ name, properties })).toMatchObject({ valid: true, problems: [] });
  }
  // OpenAI-compatible servers take a temperature up to 2.
  expect(withConfig({ name: 'ChatOpenAICompatible', properties: { temperature: 1.8 } }).valid).toBe(true);
});

it('reports every problem at once, each with its flow, node, field and rule', () => {
  const problems = problemsOf((d) => {
    node(d, 0, 1).toolName = 'nope';
    node(d, 2, 2).targetNodeId = 'Nowhere';
    node(d, 3, 0).cronExpression = 'every day';
    node(d, 1, 1).name = 'Lookup';
    edges(d, 1)[0].to = 'Lookup';
    edges(d, 1)[1].from = 'Lookup';
    edges(d, 1)[2].from = 'Lookup';
  });
  expect(problems.map((p) => [p.node, p.field, p.rule])).toEqual(
    expect.arrayContaining([
      ['Lookup', 'flows.1.nodes.1.name', 'name.unique'],
      ['Lookup', 'flows.0.nodes.1.toolName', 'tool.unknown'],
      ['ToRefund', 'flows.2.nodes.2.targetNodeId', 'jump.unknownTarget'],
      ['Morning', 'flows.3.nodes.0.cronExpression', 'cron'],
    ]),
  );
  expect(problems.every((p) => typeof p.message === 'string' && p.message.length > 0)).toBe(true);
});

it('reports a shape problem together with the reference problems it used to hide, in one answer', () => {
  const problems = problemsOf((d) => {
    // A browserTask without its prompt (a shape problem) ...
    d.flows[0].nodes.push({ name: 'Browse', type: 'browserTask' } as never);
    // ... beside a jump to nowhere and an unknown tool, both of nodes that have their shape.
    node(d, 2, 2).targetNodeId = 'Nowhere';
    node(d, 0, 1).toolName = 'nope';
    // A node with a bad field is still a node: a jump to it is not a jump to nowhere.
    node(d, 1, 1).displayName = '';
    d.flows[2].nodes.push({ name: 'ToAsk', type: 'jumpToNode', targetNodeId: 'AskReason' } as never);
  });
  expect(node(structuredClone(valid()) as Mutable, 1, 1).name).toBe('AskReason');
  expect(problems.map((p) => [p.node, p.field, p.rule])).toEqual(
    expect.arrayContaining([
      ['Browse', `flows.0.nodes.${valid().flows[0].nodes.length}.prompt`, 'required'],
      ['AskReason', 'flows.1.nodes.1.displayName', 'minLength'],
      ['ToRefund', 'flows.2.nodes.2.targetNodeId', 'jump.unknownTarget'],
      ['Lookup', 'flows.0.nodes.1.toolName', 'tool.unknown'],
    ]),
  );
  expect(problems.filter((p) => p.rule === 'jump.unknownTarget')).toHaveLength(1);
  // Each problem once.
  const keys = problems.map((p) => `${p.field} ${p.rule}`);
  expect(new Set(keys).size).toBe(keys.length);
});

it('refuses a definition too large to store as one item', () => {
  const definition = valid();
  const big = { ...definition, instructions: 'x'.repeat(19_000) };
  const flows = Array.from({ length: 20 }, (_, i) => ({
    name: `f${i}`,
    nodes: [{ name: `n${i}`, type: 'promptNode', displayName: 'd', prompt: 'y'.repeat(19_000) }],
  }));
  const outcome = checkDefinition({ ...big, flows: [...definition.flows, ...flows] });
  expect(outcome.valid).toBe(false);
  expect(outcome.problems).toContainEqual(expect.objectContaining({ rule: 'definition.maxBytes' }));
});

it("accepts the console's ui block (node positions) and keeps it, bounded, without a rule reading it", () => {
  const ui = { positions: { 'refund/RefundStart': { x: 10, y: -20.5 }, 'refund/AskReason': { x: 300, y: 0 } } };
  const outcome = validateDefinition({ ...valid(), ui });
  expect(outcome.problems).toEqual([]);
  expect(outcome.valid && outcome.definition.ui).toEqual(ui);
  // Positions of nodes that do not exist are no problem: the console drops them when it next saves.
  expect(validateDefinition({ ...valid(), ui: { positions: { 'gone/Nowhere': { x: 1, y: 1 } } } }).valid).toBe(true);

  const positions = Object.fromEntries(
    Array.from({ length: UI_LIMITS.positions + 1 }, (_, i) => [`f/n${i}`, { x: i, y: 0 }]),
  );
  const rules = (uiBlock: unknown) => problemsOf((d) => ({ ...d, ui: uiBlock })).map((p) => [p.field, p.rule]);
  expect(rules({ positions })).toEqual([['ui.positions', 'custom']]);
  expect(rules({ positions: { 'no-slash': { x: 0, y: 0 } } })[0][0]).toMatch(/^ui\.positions/);
  expect(rules({ positions: { 'f/n': { x: 2_000_000, y: 0 } } })).toEqual([['ui.positions.f/n.x', 'max']]);
  expect(rules({ positions: { 'f/n': { x: 0, y: 0, z: 1 } } })).toEqual([['ui.positions.f/n.z', 'unknownField']]);
  expect(rules({ zoom: 1 })).toEqual([['ui.zoom', 'unknownField']]);
});
