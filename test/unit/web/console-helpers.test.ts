/**
 * The console's pure helpers (web/src): the metadata rules it checks before sending, the PATCH it builds, its polling
 * backoff, the analytics chart's days and the CSV export, and the flow graph's layout. The screens that use them are
 * driven in Chromium by test/web/console.test.ts.
 */
import { eventsCsv, perDay } from '../../../web/src/analytics';
import { detailText, fieldLabel, otherErrorText, refusalTitle } from '../../../web/src/errors';
import { layoutDefinition, NODE_HEIGHT, NODE_WIDTH } from '../../../web/src/flow-layout';
import type { AgentDefinition } from '../../../web/src/flows';
import { type Metadata, metadataChanges, metadataProblem, pollDelay } from '../../../web/src/knowledge';

const EMPTY: Metadata = {
  label1: null,
  label2: null,
  customMeta1: null,
  customMeta2: null,
  customMeta3: null,
  customMeta4: null,
};

describe('metadata edits', () => {
  it("refuses what the API refuses, with the API's rule names", () => {
    expect(metadataProblem('label1', 'Topic:Hardware')?.rule).toBe('label.characters');
    expect(metadataProblem('label2', 'tier:2024-01-31')?.rule).toBe('label.noIsoDate');
    expect(metadataProblem('label1', 'no-colon')?.rule).toBe('label.format');
    expect(metadataProblem('customMeta1', 'x'.repeat(501))?.rule).toBe('maxLength');
    // 500 emoji are 500 characters, as the API counts them (code points), not 1,000 UTF-16 units.
    expect(metadataProblem('customMeta1', '😀'.repeat(500))).toBeNull();
    expect(metadataProblem('label1', 'topic:hardware')).toBeNull();
    expect(metadataProblem('label1', '')).toBeNull();
  });

  it('sends only what changed: a value sets, an emptied field clears (null), an untouched one is absent', () => {
    const before = { ...EMPTY, label1: 'topic:billing', customMeta1: 'kept', customMeta2: 'dropped' };
    const after = { label1: 'topic:billing', label2: 'tier:gold', customMeta1: 'kept', customMeta2: '' } as Record<
      keyof Metadata,
      string
    >;
    for (const field of ['customMeta3', 'customMeta4'] as const) after[field] = '';
    expect(metadataChanges(before, after)).toEqual({ label2: 'tier:gold', customMeta2: null });
  });
});

it('polls at 0.5 s, growing by half while nothing changes, never slower than every 5 s', () => {
  expect([0, 1, 2, 3, 4, 5, 6, 7, 50].map(pollDelay)).toEqual([500, 750, 1125, 1688, 2531, 3797, 5000, 5000, 5000]);
});

describe('analytics', () => {
  const event = (id: number, created_at: string, eventName: string, payload: Record<string, unknown> = {}) => ({
    id,
    agentId: 'a-1',
    created_at,
    eventName,
    payload,
    environment: 'development' as const,
    sessionId: 's-1',
  });

  it('counts events per UTC day and name, with the days between that had none', () => {
    const { days, series } = perDay([
      event(3, '2026-11-03T23:59:59.999Z', 'node_execution'),
      event(2, '2026-11-01T10:00:00.000Z', 'node_execution'),
      event(1, '2026-11-01T00:00:00.000Z', 'invocation_start'),
    ]);
    expect(days).toEqual(['2026-11-01', '2026-11-02', '2026-11-03']);
    expect(series).toEqual([
      { name: 'invocation_start', data: [1, 0, 0] },
      { name: 'node_execution', data: [1, 0, 1] },
    ]);
    expect(perDay([])).toEqual({ days: [], series: [] });
  });

  it('spans the range chosen, quiet days and all; an open side ends at the events; a reversed or huge range at them', () => {
    const events = [event(1, '2026-11-03T12:00:00.000Z', 'invocation_start')];
    expect(perDay(events, { from: '2026-11-01', to: '2026-11-05' })).toEqual({
      days: ['2026-11-01', '2026-11-02', '2026-11-03', '2026-11-04', '2026-11-05'],
      series: [{ name: 'invocation_start', data: [0, 0, 1, 0, 0] }],
    });
    expect(perDay(events, { from: '2026-11-02' }).days).toEqual(['2026-11-02', '2026-11-03']);
    expect(perDay(events, { to: '2026-11-04' }).days).toEqual(['2026-11-03', '2026-11-04']);
    expect(perDay([], { from: '2026-11-01', to: '2026-11-02' }).days).toEqual(['2026-11-01', '2026-11-02']);
    expect(perDay(events, { from: '2026-11-05', to: '2026-11-01' }).days).toEqual(['2026-11-03']);
    expect(perDay(events, { from: '1990-01-01', to: '2026-11-05' }).days).toEqual(['2026-11-03']);
  });

  it('writes CSV a spreadsheet reads as data: quoted where needed, formulas defused', () => {
    const csv = eventsCsv([
      event(1, '2026-11-01T00:00:00.000Z', 'custom', { text: 'a "quoted", multi\nline' }),
      event(2, '2026-11-01T00:00:01.000Z', '=HYPERLINK("x")'),
    ]);
    expect(csv.split('\r\n')).toEqual([
      'id,created_at,eventName,environment,sessionId,payload',
      '1,2026-11-01T00:00:00.000Z,custom,development,s-1,"{""text"":""a \\""quoted\\"", multi\\nline""}"',
      `2,2026-11-01T00:00:01.000Z,"'=HYPERLINK(""x"")",development,s-1,{}`,
      '',
    ]);
  });
});

describe('the flow graph', () => {
  const definition: AgentDefinition = {
    flows: [
      {
        name: 'main',
        nodes: [
          { name: 'Start', type: 'trigger', triggerType: 'webhook' },
          { name: 'Ask', type: 'promptNode' },
          { name: 'Hop', type: 'jumpToNode', targetNodeId: 'Other' },
        ],
        edges: [
          { from: 'Start', to: 'Ask', type: 'stepForward' },
          { from: 'Ask', to: 'Hop', type: 'promptCondition', condition: 'the customer wants a human' },
          { from: 'Ask', to: 'Ghost', type: 'stepForward' },
        ],
      },
      { name: 'side', nodes: [{ name: 'Other', type: 'promptNode' }] },
    ],
  };

  it('draws a group per flow, its nodes inside it, edges by kind and the jump across flows', () => {
    const { nodes, edges } = layoutDefinition(definition, [
      { field: 'flows.0.nodes.2.targetNodeId', rule: 'x', message: 'y', node: 'Hop' },
    ]);
    // A box per flow, behind its nodes (the canvas places nodes absolutely, so a node can be dragged anywhere).
    expect(nodes.filter((n) => n.type === 'flowGroup').map((n) => n.id)).toEqual(['flow:main:0', 'flow:side:1']);
    expect(nodes.filter((n) => n.type === 'definition').map((n) => [n.id, n.data.flow])).toEqual([
      ['Start', 'main'],
      ['Ask', 'main'],
      ['Hop', 'main'],
      ['Other', 'side'],
    ]);
    // The edge to a node that does not exist is not drawn (validation names it).
    expect(edges.map((e) => [e.source, e.target, e.data?.kind, e.label])).toEqual([
      ['Start', 'Ask', 'stepForward', undefined],
      ['Ask', 'Hop', 'promptCondition', 'the customer wants a human'],
      ['Hop', 'Other', 'jumpToNode', 'jump'],
    ]);
    expect(nodes.find((n) => n.id === 'Hop')?.data.problems).toHaveLength(1);
    expect(nodes.find((n) => n.id === 'Ask')?.data.problems).toHaveLength(0);
  });

  it('keeps every node inside its group and the groups apart', () => {
    const { nodes } = layoutDefinition(definition, []);
    const groups = nodes.filter((n) => n.type === 'flowGroup');
    expect(groups).toHaveLength(2);
    for (const node of nodes.filter((n) => n.type === 'definition')) {
      const group = groups.find((g) => g.data.label === node.data.flow);
      expect(group).toBeDefined();
      const left = Number(group?.position.x);
      const top = Number(group?.position.y);
      expect(node.position.x).toBeGreaterThanOrEqual(left);
      expect(node.position.y).toBeGreaterThanOrEqual(top);
      expect(node.position.x + NODE_WIDTH).toBeLessThanOrEqual(left + Number(group?.style?.width));
      expect(node.position.y + NODE_HEIGHT).toBeLessThanOrEqual(top + Number(group?.style?.height));
    }
    const [a, b] = groups.map((g) => ({
      left: g.position.x,
      top: g.position.y,
      right: g.position.x + Number(g.style?.width),
      bottom: g.position.y + Number(g.style?.height),
    }));
    const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    expect(overlap).toBe(false);
  });
});

describe('what the console says when something is refused', () => {
  it('names a field as a person reads it, and drops the field from its message', () => {
    expect(fieldLabel('displayName')).toBe('Display name');
    expect(fieldLabel('organizationName')).toBe('Organization name');
    expect(fieldLabel('knowledgeBases.0.minScore')).toBe('Knowledge bases, 1, min score');
    expect(fieldLabel('')).toBe('The request');
    expect(detailText('displayName', 'displayName must not be empty')).toBe('must not be empty.');
    expect(detailText('knowledgeBases.0.minScore', 'minScore must be at most 1')).toBe('must be at most 1.');
    expect(detailText('label1', 'label1: must be namespace:value.')).toBe('must be namespace:value.');
    expect(detailText('', 'Unexpected end of JSON input')).toBe('Unexpected end of JSON input.');
  });

  it('opens with a sentence for the kind of refusal, and says a network failure in words', () => {
    expect(refusalTitle(400, 'VALIDATION_ERROR')).toBe('Some of what was entered is not accepted.');
    expect(refusalTitle(429, 'RATE_LIMITED')).toMatch(/^Too many requests/);
    expect(refusalTitle(404, 'AGENT_NOT_FOUND')).toBe('It is not there (any more).');
    expect(refusalTitle(502, 'MODEL_ERROR')).toMatch(/could not do this/);
    expect(otherErrorText(new TypeError('Failed to fetch'))).toMatch(/could not be reached/);
    expect(otherErrorText(new Error('Incorrect e-mail or password.'))).toBe('Incorrect e-mail or password.');
  });
});
