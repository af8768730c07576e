import { invoke } from '../../../core/flows/runtime';
import { requireAgent } from '../../../core/tenancy/tenancy';
import { flowContainer } from '../../../shared/flow-container';
import { httpHandler } from '../../../shared/http';
import { webhookSchema } from './schemas';

/**
 * POST /api/v1/webhooks/:agentId/:environment/:triggerName: runs the flow until it ends or pauses and answers the
 * session's result (200 also when the flow failed: `status: "failed"` with the error's code).
 */
export const handler = httpHandler('InvokeWebhook', webhookSchema, async (input, caller) => {
  const { agentId, environment, triggerName, sessionId, message, ...body } = input;
  await requireAgent(flowContainer, caller, agentId);
  const result = await invoke(flowContainer, {
    agentId,
    environment,
    organizationId: caller.organizationId,
    trigger: { type: 'webhook', name: triggerName },
    sessionId,
    message,
    body,
    invocationId: flowContainer.ids.uuid(),
  });
  return { body: { ...result } };
});
