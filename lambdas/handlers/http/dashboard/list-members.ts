import { membersContainer } from '#composition/members';
import { listMembers } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import type { MemberListResponse } from './responses';
import { noInputSchema } from './schemas';

export const handler = httpHandler('ListMembers', noInputSchema, async (_input, caller) => ({
  body: (await listMembers(membersContainer, caller)) satisfies MemberListResponse,
}));
