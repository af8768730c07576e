/**
 * MCP servers in a definition (docs/flows.md, "MCP tools"): the rules that need no server (names, the allow-list,
 * defaults), the arguments check against a tool's input schema, and the listing check with an in-memory client.
 */
import { mcpToolOf, splitMcpToolName, validateDefinition } from '#core/flows/definition';
import { schemaProblems } from '#core/flows/json-schema-check';
import { mcpProblems } from '#core/flows/mcp-listing-check';
import { nodeBoundMs } from '#core/flows/run-nodes';
import { type McpClient, McpError, OutboundError } from '#ports/flows';

const trigger = { name: 'Start', type: 'trigger', triggerType: 'webhook' };

function definitionWith(extra: Record<string, unknown>, nodes: Record<string, unknown>[]) {
  return {
    ...extra,
    flows: [
      {
        name: 'main',
        nodes: [trigger, ...nodes],
        edges: nodes.map((node, i) => ({
          from: i === 0 ? 'Start' : nodes[i - 1].name,
          to: node.name,
          type: 'stepForward',
        })),
      },
    ],
  };
}

const crm = { name: 'crm', url: 'https://mcp.example.com/mcp' };

describe('the definition', () => {
  it('accepts a server and tools named <server>__<tool>, with the 10 s default bound', () => {
    const outcome = validateDefinition(
      definitionWith({ mcpServers: [crm] }, [
        { name: 'Look', type: 'tool', toolName: 'crm__lookup_customer', parameters: { customerId: 'C-1' } },
        { name: 'Ask', type: 'promptNode', displayName: 'Ask', prompt: 'Hi', tools: ['crm__lookup_customer'] },
      ]),
    );
    expect(outcome.problems).toEqual([]);
    if (!outcome.valid) return;
    expect(outcome.definition.mcpServers?.[0].timeoutSeconds).toBe(10);
    expect(mcpToolOf(outcome.definition, 'crm__lookup_customer')).toMatchObject({ index: 0, tool: 'lookup_customer' });
    expect(mcpToolOf(outcome.definition, 'other__lookup_customer')).toBeUndefined();
  });

  it('splits at the first "__": tools may hold "__", server names may not', () => {
    expect(splitMcpToolName('crm__get__all')).toEqual({ server: 'crm', tool: 'get__all' });
    expect(splitMcpToolName('lookupOrder')).toBeUndefined();
    expect(splitMcpToolName('crm__')).toBeUndefined();
    const outcome = validateDefinition(definitionWith({ mcpServers: [{ ...crm, name: 'my__crm' }] }, []));
    expect(outcome.problems).toEqual([expect.objectContaining({ field: 'mcpServers.0.name' })]);
  });

  it('reports a duplicate server, a declared tool that would shadow an MCP name, a tool outside the allow-list, an unknown server', () => {
    const outcome = validateDefinition(
      definitionWith(
        {
          mcpServers: [{ ...crm, tools: ['lookup_customer'] }, crm],
          tools: [{ name: 'crm__lookup_customer', url: 'https://tools.example.com/x' }],
        },
        [
          { name: 'Open', type: 'tool', toolName: 'crm__open_ticket' },
          { name: 'Ask', type: 'promptNode', displayName: 'Ask', prompt: 'Hi', tools: ['billing__refund'] },
        ],
      ),
    );
    expect(outcome.problems.map((p) => [p.field, p.rule])).toEqual([
      ['mcpServers.1.name', 'mcpServer.unique'],
      ['tools.0.name', 'tool.mcpName'],
      ['flows.0.nodes.1.toolName', 'tool.notAllowed'],
      ['flows.0.nodes.2.tools.0', 'tool.unknown'],
    ]);
    expect(outcome.problems[3].message).toContain('MCP: crm__<tool>');
  });

  it('refuses an inline secret: bearerSecret is a name, and no other field is taken', () => {
    const outcome = validateDefinition(
      definitionWith({ mcpServers: [{ ...crm, bearerSecret: 'Bearer abc.def', headers: { authorization: 'x' } }] }, []),
    );
    expect(outcome.problems.map((p) => [p.field, p.rule])).toEqual(
      expect.arrayContaining([
        ['mcpServers.0.bearerSecret', expect.any(String)],
        ['mcpServers.0.headers', 'unknownField'],
      ]),
    );
  });
});

it("counts an MCP server's bound in a node's: a run is handed to the flow runner before a node that may outlast the request", () => {
  const outcome = validateDefinition(
    definitionWith({ mcpServers: [{ ...crm, timeoutSeconds: 45 }] }, [
      { name: 'Look', type: 'tool', toolName: 'crm__lookup_customer' },
      { name: 'Ask', type: 'promptNode', displayName: 'Ask', prompt: 'Hi', tools: ['setMemory', 'crm__open_ticket'] },
    ]),
  );
  if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
  const [, look, ask] = outcome.definition.flows[0].nodes;
  expect(nodeBoundMs(outcome.definition, look)).toBe(45_000);
  expect(nodeBoundMs(outcome.definition, ask)).toBe(45_000);
});

describe('arguments against an input schema', () => {
  const schema = {
    type: 'object',
    properties: {
      subject: { type: 'string', minLength: 3 },
      priority: { type: 'integer', minimum: 1, maximum: 3 },
      tags: { type: 'array', items: { type: 'string', enum: ['router', 'modem'] }, maxItems: 2 },
    },
    required: ['subject'],
    additionalProperties: false,
  };

  it('passes what the schema admits', () => {
    expect(schemaProblems(schema, { subject: 'Broken', priority: 2, tags: ['router'] })).toEqual([]);
  });

  it('names each problem with its path', () => {
    expect(schemaProblems(schema, { priority: 1.5, tags: ['router', 'fridge', 'modem'], colour: 'red' })).toEqual([
      'arguments needs subject',
      'arguments.priority must be integer',
      'arguments.tags must hold at most 2 items',
      'arguments.tags.1 must be one of ["router","modem"]',
      'arguments takes no colour',
    ]);
    expect(schemaProblems(schema, { subject: 'ab', priority: 7 })).toEqual([
      'arguments.subject must hold at least 3 characters',
      'arguments.priority must be at most 3',
    ]);
  });

  it('leaves keywords outside its subset to the server', () => {
    expect(
      schemaProblems({ type: 'object', properties: { a: { pattern: '^x', format: 'email' } } }, { a: 'y' }),
    ).toEqual([]);
  });
});

describe('the listing check', () => {
  const tools = [
    {
      name: 'lookup_customer',
      inputSchema: { type: 'object', properties: { customerId: { type: 'string' } }, additionalProperties: false },
    },
  ];
  const listing = (answer: () => Promise<typeof tools>): McpClient => ({
    listTools: answer,
    callTool: async () => {
      throw new Error('not called');
    },
  });
  const parsed = (extra: Record<string, unknown>, nodes: Record<string, unknown>[]) => {
    const outcome = validateDefinition(definitionWith(extra, nodes));
    if (!outcome.valid) throw new Error(JSON.stringify(outcome.problems));
    return outcome.definition;
  };

  it("names a fixed parameter the tool's closed schema does not take", async () => {
    const definition = parsed({ mcpServers: [crm] }, [
      {
        name: 'Look',
        type: 'tool',
        toolName: 'crm__lookup_customer',
        parameters: { customerId: 'C-1', colour: 'red' },
      },
    ]);
    const problems = await mcpProblems(
      definition,
      listing(async () => tools),
      'org-1',
    );
    expect(problems).toEqual([
      expect.objectContaining({
        field: 'flows.0.nodes.1.parameters.colour',
        rule: 'tool.unknownParameter',
        node: 'Look',
      }),
    ]);
  });

  it('maps the failures of a listing to the field they concern', async () => {
    const definition = parsed({ mcpServers: [crm, { ...crm, name: 'b' }, { ...crm, name: 'c' }] }, []);
    const failures = [
      new OutboundError('TARGET_REFUSED', 'private'),
      new McpError('MCP_SECRET_UNAVAILABLE', 'no secret'),
      new McpError('TOOL_FAILED', 'HTTP 500'),
    ];
    let i = 0;
    const problems = await mcpProblems(
      definition,
      listing(async () => {
        throw failures[i++];
      }),
      'org-1',
    );
    expect(problems.map((p) => [p.field, p.rule])).toEqual([
      ['mcpServers.0.url', 'mcp.targetRefused'],
      ['mcpServers.1.bearerSecret', 'mcp.secretUnavailable'],
      ['mcpServers.2.url', 'mcp.unreachable'],
    ]);
  });

  it('lists each server within its bound, and at most 10 s when a definition is checked', async () => {
    const definition = parsed(
      {
        mcpServers: [
          { ...crm, timeoutSeconds: 3 },
          { ...crm, name: 'slow', timeoutSeconds: 60 },
        ],
      },
      [],
    );
    const bounds: number[] = [];
    await mcpProblems(
      definition,
      {
        listTools: async (target) => {
          bounds.push(target.timeoutMs);
          return [];
        },
        callTool: async () => {
          throw new Error('not called');
        },
      },
      'org-1',
    );
    expect(bounds).toEqual([3_000, 10_000]);
  });

  it('lets a fault of the service itself (not an AppError) fail the request', async () => {
    const definition = parsed({ mcpServers: [crm] }, []);
    await expect(
      mcpProblems(
        definition,
        listing(async () => {
          throw new TypeError('bug');
        }),
        'org-1',
      ),
    ).rejects.toThrow('bug');
  });
});
