import { listAgents } from '../../../core/dashboard/dashboard';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { noInputSchema } from '../dashboard/schemas';

/** GET /api/v1/agents/list: `{ success, data: [{ agentId, displayName, createdAt }], count }`, this organization only. */
export const handler = httpHandler('AgentsList', noInputSchema, async (_input, caller) => {
  const data = await listAgents(container, caller);
  return { body: { data, count: data.length } };
});
