import { membersContainer } from '#composition/members';
import { removeMember } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import type { RemoveMemberResponse } from './responses';
import { memberPathSchema } from './schemas';

export const handler = httpHandler('RemoveMember', memberPathSchema, async (input, caller) => ({
  body: (await removeMember(membersContainer, caller, input.email)) satisfies RemoveMemberResponse,
}));
