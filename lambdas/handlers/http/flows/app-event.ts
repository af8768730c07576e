import { invoke } from '../../../core/flows/runtime';
import { requireAgent } from '../../../core/tenancy/tenancy';
import { flowContainer } from '../../../shared/flow-container';
import { httpHandler } from '../../../shared/http';
import { appEventSchema } from './schemas';

/**
 * POST /api/v1/app-events/:agentId/:environment `{ appName, eventName, payload?, sessionId?, message? }`: the
 * first app trigger (in definition order) whose appName matches and whose eventName matches or is unset runs.
 */
export const handler = httpHandler('SendAppEvent', appEventSchema, async (input, caller) => {
  await requireAgent(flowContainer, caller, input.agentId);
  const result = await invoke(flowContainer, {
    agentId: input.agentId,
    environment: input.environment,
    organizationId: caller.organizationId,
    trigger: { type: 'app', appName: input.appName, eventName: input.eventName },
    sessionId: input.sessionId,
    message: input.message,
    body: { ...input.payload, app: { name: input.appName, event: input.eventName } },
    invocationId: flowContainer.ids.uuid(),
  });
  return { body: { ...result } };
});
