import { membersContainer } from '#composition/members';
import { signUp } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import type { SignUpResponse } from './responses';
import { signUpSchema } from './schemas';

export const handler = httpHandler('SignUp', signUpSchema, async (input) => ({
  status: 201,
  body: (await signUp(membersContainer, input)) satisfies SignUpResponse,
}));
