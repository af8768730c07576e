/**
 * A definition's MCP servers listed when it is validated or stored (docs/flows.md, "MCP tools"): each server is
 * asked for its tools (in parallel, each within its own bound and at most 10 s), and what the definition names that the server does
 * not offer is a problem at its field, as every other problem of a definition is. A server that cannot be listed
 * (refused by the outbound guard, unreachable, an error, a secret it cannot be given) is a problem of its `url` or
 * `bearerSecret`, never a failure of the request.
 */
import { AppError } from '#core/errors';
import type { McpClient, McpServerTarget, McpToolInfo } from '#ports/flows';
import type { AgentDefinition, DefinitionProblem, McpServerDefinition } from './definition';
import { mcpToolOf, nodesOf } from './definition-parts';

export function mcpTarget(server: McpServerDefinition, organizationId: string): McpServerTarget {
  return {
    url: server.url,
    ...(server.bearerSecret === undefined ? {} : { bearerSecret: server.bearerSecret }),
    organizationId,
    timeoutMs: server.timeoutSeconds * 1000,
  };
}

/**
 * The most one server's listing may take when a definition is checked, whatever its `timeoutSeconds` (up to 60 for
 * its calls): the servers are listed in parallel inside a request that API Gateway ends at 29 s.
 */
export const LISTING_AT_VALIDATION_MAX_MS = 10_000;

export async function mcpProblems(
  definition: AgentDefinition,
  client: McpClient,
  organizationId: string,
): Promise<DefinitionProblem[]> {
  const servers = definition.mcpServers ?? [];
  if (servers.length === 0) return [];
  const failures: (DefinitionProblem | undefined)[] = [];
  const listings = await Promise.all(
    servers.map(async (server, i): Promise<McpToolInfo[] | undefined> => {
      try {
        const target = mcpTarget(server, organizationId);
        return await client.listTools({
          ...target,
          timeoutMs: Math.min(target.timeoutMs, LISTING_AT_VALIDATION_MAX_MS),
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const secret = error.code === 'MCP_SECRET_UNAVAILABLE';
        failures[i] = {
          field: `mcpServers.${i}.${secret ? 'bearerSecret' : 'url'}`,
          rule: secret
            ? 'mcp.secretUnavailable'
            : error.code === 'TARGET_REFUSED'
              ? 'mcp.targetRefused'
              : 'mcp.unreachable',
          message: `MCP server ${server.name} could not be listed: ${error.message}`,
        };
        return undefined;
      }
    }),
  );

  // In the order of the servers, whichever answered first.
  const problems = failures.filter((failure): failure is DefinitionProblem => failure !== undefined);
  const offered = (i: number) => new Set((listings[i] ?? []).map((tool) => tool.name));
  servers.forEach((server, i) => {
    if (!listings[i]) return;
    (server.tools ?? []).forEach((tool, t) => {
      if (!offered(i).has(tool)) {
        problems.push({
          field: `mcpServers.${i}.tools.${t}`,
          rule: 'mcp.toolNotOffered',
          message: `MCP server ${server.name} offers no tool ${tool} (${describeOffer(listings[i] ?? [])})`,
        });
      }
    });
  });

  for (const { flow, flowIndex, node, index } of nodesOf(definition)) {
    const named: [string, string][] =
      node.type === 'tool'
        ? [['toolName', node.toolName]]
        : node.type === 'promptNode'
          ? (node.tools ?? []).map((tool, t): [string, string] => [`tools.${t}`, tool])
          : [];
    for (const [field, name] of named) {
      const ref = mcpToolOf(definition, name);
      const listing = ref ? listings[ref.index] : undefined;
      if (!ref || !listing) continue;
      const tool = listing.find((t) => t.name === ref.tool);
      const at = (suffix: string, rule: string, message: string) =>
        problems.push({
          field: `flows.${flowIndex}.nodes.${index}.${suffix}`,
          rule,
          flow: flow.name,
          node: node.name,
          message,
        });
      if (!tool) {
        at(
          field,
          'tool.unknown',
          `MCP server ${ref.server.name} offers no tool ${ref.tool} (${describeOffer(listing)})`,
        );
        continue;
      }
      // A tool node's fixed parameters, against the properties of a schema that takes no others.
      const properties = (tool.inputSchema.properties ?? {}) as Record<string, unknown>;
      if (node.type !== 'tool' || tool.inputSchema.additionalProperties !== false) continue;
      for (const key of Object.keys(node.parameters ?? {})) {
        if (!Object.hasOwn(properties, key)) {
          at(`parameters.${key}`, 'tool.unknownParameter', `MCP tool ${name} takes no parameter ${key}`);
        }
      }
    }
  }
  return problems;
}

function describeOffer(tools: readonly McpToolInfo[]): string {
  if (tools.length === 0) return 'it lists none';
  const names = tools.slice(0, 20).map((tool) => tool.name);
  return `it offers ${names.join(', ')}${tools.length > 20 ? `, and ${tools.length - 20} more` : ''}`;
}
