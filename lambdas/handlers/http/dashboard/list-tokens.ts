import { container } from '#composition/container';
import { listTokens } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { TokenListResponse } from './responses';
import { noInputSchema } from './schemas';

export const handler = httpHandler('ListTokens', noInputSchema, async (_input, caller) => ({
  body: (await listTokens(container, caller)) satisfies TokenListResponse,
}));
