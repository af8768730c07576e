import { container } from '#composition/container';
import { listAgents } from '#core/dashboard/dashboard';
import type { AgentListResponse } from '#handlers/http/dashboard/responses';
import { noInputSchema } from '#handlers/http/dashboard/schemas';
import { httpHandler } from '#shared/http';

/**
 * GET /api/v1/agents/list (scope analytics) and GET /dashboard/agents (scope dashboard): `{ data: [{ agentId,
 * displayName, createdAt }], count }` (with `success`), this organization's agents only.
 */
export const handler = httpHandler(['AgentsList', 'ListAgents'], noInputSchema, async (_input, caller) => {
  const data = await listAgents(container, caller);
  return { body: { data, count: data.length } satisfies AgentListResponse };
});
