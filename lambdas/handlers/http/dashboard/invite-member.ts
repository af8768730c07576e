import { membersContainer } from '#composition/members';
import { inviteMember } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import type { InviteMemberResponse } from './responses';
import { inviteMemberSchema } from './schemas';

export const handler = httpHandler('InviteMember', inviteMemberSchema, async (input, caller) => ({
  status: 201,
  body: (await inviteMember(membersContainer, caller, input)) satisfies InviteMemberResponse,
}));
