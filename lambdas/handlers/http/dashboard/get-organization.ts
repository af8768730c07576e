import { membersContainer } from '#composition/members';
import { describeOrganization } from '#core/dashboard/members';
import { httpHandler } from '#shared/http';
import type { OrganizationResponse } from './responses';
import { noInputSchema } from './schemas';

export const handler = httpHandler('GetOrganization', noInputSchema, async (_input, caller) => ({
  body: (await describeOrganization(membersContainer, caller)) satisfies OrganizationResponse,
}));
