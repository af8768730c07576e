import { flowContainer } from '#composition/flow-container';
import { invoke } from '#core/flows/runtime';
import { requireAgent } from '#core/tenancy/tenancy';
import { httpHandler } from '#shared/http';
import { invocationAnswer } from './answer';
import { webhookSchema } from './schemas';

/**
 * POST /api/v1/webhooks/:agentId/:environment/:triggerName: runs the flow until it ends or pauses and answers the
 * session's result (200 also when the flow failed: `status: "failed"` with the error's code); past FLOW_SYNC_BUDGET_MS
 * it hands the run over to the flow runner and answers 202 (docs/flows.md, "Long runs"). Images in `attachments`
 * join the user's message (docs/flows.md, "Attachments").
 */
export const handler = httpHandler('InvokeWebhook', webhookSchema, async (input, caller) => {
  const { agentId, environment, triggerName, sessionId, message, attachments, ...body } = input;
  await requireAgent(flowContainer, caller, agentId);
  const result = await invoke(
    flowContainer,
    {
      agentId,
      environment,
      organizationId: caller.organizationId,
      trigger: { type: 'webhook', name: triggerName },
      sessionId,
      message,
      attachments,
      body,
      invocationId: flowContainer.ids.uuid(),
    },
    { budgetMs: flowContainer.syncBudgetMs },
  );
  return invocationAnswer(result);
});
