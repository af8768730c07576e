import { container } from '#composition/container';
import { revokeToken } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { RevokeTokenResponse } from './responses';
import { tokenPathSchema } from './schemas';

export const handler = httpHandler('RevokeToken', tokenPathSchema, async (input, caller) => ({
  body: (await revokeToken(container, caller, input.tokenId)) satisfies RevokeTokenResponse,
}));
