import { membersContainer } from '#composition/members';
import { inviteMember } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import { inviteMemberSchema } from './schemas';

export const handler = httpHandler('InviteMember', inviteMemberSchema, async (input, caller) => ({
  status: 201,
  body: await inviteMember(membersContainer, caller, input),
}));
