import { flowContainer } from '#composition/flow-container';
import { invoke } from '#core/flows/runtime';
import { requireAgent } from '#core/tenancy/tenancy';
import { httpHandler } from '#shared/http';
import { invocationAnswer } from './answer';
import { appEventSchema } from './schemas';

/**
 * POST /api/v1/app-events/:agentId/:environment `{ appName, eventName, payload?, sessionId?, message?, attachments? }`:
 * the first app trigger (in definition order) whose appName matches and whose eventName matches or is unset runs;
 * answered as a webhook is (200 with the result, or 202 once handed over to the flow runner: answer.ts).
 */
export const handler = httpHandler('SendAppEvent', appEventSchema, async (input, caller) => {
  await requireAgent(flowContainer, caller, input.agentId);
  const result = await invoke(
    flowContainer,
    {
      agentId: input.agentId,
      environment: input.environment,
      organizationId: caller.organizationId,
      trigger: { type: 'app', appName: input.appName, eventName: input.eventName },
      sessionId: input.sessionId,
      message: input.message,
      attachments: input.attachments,
      body: { ...input.payload, app: { name: input.appName, event: input.eventName } },
      invocationId: flowContainer.ids.uuid(),
    },
    { budgetMs: flowContainer.syncBudgetMs },
  );
  return invocationAnswer(result);
});
