import { container } from '#composition/container';
import { rotateCallbackSecret } from '#core/dashboard/rotate-callback-secret';
import { httpHandler } from '#shared/http';
import type { RotateCallbackSecretResponse } from './responses';
import { agentPathSchema } from './schemas';

export const handler = httpHandler('RotateCallbackSecret', agentPathSchema, async (input, caller) => ({
  status: 201,
  body: (await rotateCallbackSecret(container, caller, input.agentId)) satisfies RotateCallbackSecretResponse,
}));
