/** A person's own routes, one function (lib/routes.ts: GetMe and the routes whose `functionOf` it is). */
import { membersContainer } from '#composition/members';
import { acceptInvitation, createOrganization, declineInvitation, describeMe } from '#core/dashboard/my-account';
import { handlerPerRoute, personHandler } from '#shared/http';
import type {
  AcceptInvitationResponse,
  CreateOrganizationResponse,
  DeclineInvitationResponse,
  MeResponse,
} from './responses';
import { createOrganizationSchema, invitationPathSchema, noInputSchema } from './schemas';

export const handler = handlerPerRoute({
  GetMe: personHandler('GetMe', noInputSchema, async (_input, person) => ({
    body: (await describeMe(membersContainer, person)) satisfies MeResponse,
  })),
  AcceptInvitation: personHandler('AcceptInvitation', invitationPathSchema, async (input, person) => ({
    status: 201,
    body: (await acceptInvitation(membersContainer, person, input.organizationId)) satisfies AcceptInvitationResponse,
  })),
  DeclineInvitation: personHandler('DeclineInvitation', invitationPathSchema, async (input, person) => ({
    body: (await declineInvitation(membersContainer, person, input.organizationId)) satisfies DeclineInvitationResponse,
  })),
  CreateOrganization: personHandler('CreateOrganization', createOrganizationSchema, async (input, person) => ({
    status: 201,
    body: (await createOrganization(membersContainer, person, input)) satisfies CreateOrganizationResponse,
  })),
});
