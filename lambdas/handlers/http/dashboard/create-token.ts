import { container } from '#composition/container';
import { createToken } from '#core/dashboard/dashboard';
import { httpHandler } from '#shared/http';
import type { CreateTokenResponse } from './responses';
import { createTokenSchema } from './schemas';

export const handler = httpHandler('CreateToken', createTokenSchema, async (input, caller) => ({
  status: 201,
  body: (await createToken(container, caller, input)) satisfies CreateTokenResponse,
}));
