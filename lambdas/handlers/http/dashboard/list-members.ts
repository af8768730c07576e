import { membersContainer } from '#composition/members';
import { listMembers } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import { noInputSchema } from './schemas';

export const handler = httpHandler('ListMembers', noInputSchema, async (_input, caller) => ({
  body: await listMembers(membersContainer, caller),
}));
