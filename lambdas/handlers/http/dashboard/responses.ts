/**
 * Success bodies of the dashboard routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows.
 */
import * as z from 'zod';
import { SCOPES } from '#core/auth/scopes';
import { type Answer, id, instant } from '../response-fields';
import { EMAIL_PATTERN } from './schemas';

const role = z.enum(['owner', 'member']);
/** An e-mail as the service takes it (schemas.ts, EMAIL_PATTERN): stored lower case. */
const email = z.string().max(254).regex(EMAIL_PATTERN);

const AGENT_EXAMPLE = {
  agentId: '3f6c2a8e-8d1b-4c2e-9a57-0b6f1d2e4c10',
  displayName: 'Support assistant',
  createdAt: '2026-11-20T09:15:02.481Z',
};

/** An agent as every route answers it. */
export const agentSchema = z.strictObject({ agentId: id, displayName: z.string(), createdAt: instant });

export const createAgentResponse = agentSchema
  .extend({
    callbackSecret: z.string().nullable().meta({
      description:
        'The secret that signs its AI-message callbacks, shown here only (docs/flows.md, "Signed callbacks"); null for a member, who may not rotate it',
    }),
  })
  .meta({
    description: 'The agent made, with the secret of its callbacks',
    examples: [{ ...AGENT_EXAMPLE, callbackSecret: 'whsec_7Jq0cV2mXo9pL4tR1sYb8nE3uAzKdHfW' }],
  });

export const agentListResponse = z.strictObject({ data: z.array(agentSchema), count: z.int().min(0) }).meta({
  description: 'The agents the caller may use, oldest first',
  examples: [{ data: [AGENT_EXAMPLE], count: 1 }],
});

export const agentResponse = agentSchema.meta({ description: 'The agent', examples: [AGENT_EXAMPLE] });

export const deleteAgentResponse = z
  .strictObject({
    agentId: id,
    status: z.literal('deleting'),
    startedAt: instant.nullable().meta({ description: 'When the deletion job started' }),
  })
  .meta({
    description:
      'The deletion job, the first time and every time after while it runs: from now on the agent is gone for every request',
    examples: [{ agentId: AGENT_EXAMPLE.agentId, status: 'deleting', startedAt: '2026-11-29T07:01:44.120Z' }],
  });

export const rotateCallbackSecretResponse = z
  .strictObject({
    secret: z.string().meta({ description: 'The new secret, shown here only' }),
    createdAt: instant,
    previousSecretValidUntil: instant
      .nullable()
      .meta({ description: 'Until when the secret it replaced still signs beside it; null: there was none' }),
  })
  .meta({
    description: 'The secret that now signs the agent’s callbacks',
    examples: [
      {
        secret: 'whsec_Q2m8Yx0bN5vK1rT7pL3cZ9aF4hJ6sD0e',
        createdAt: '2026-11-29T07:02:10.004Z',
        previousSecretValidUntil: '2026-11-30T07:02:10.004Z',
      },
    ],
  });

const createdBy = z
  .discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('person'), email }),
    z.strictObject({ kind: z.literal('token'), tokenId: id }),
  ])
  .nullable()
  .meta({
    description: 'Who made it: an owner signed in, or another token; null for a token made before this was kept',
  });

const tokenFields = {
  tokenId: id,
  name: z.string().nullable(),
  prefix: z
    .string()
    .nullable()
    .meta({ description: 'Its first 8 characters; null for tokens made before they were kept' }),
  scopes: z.array(z.enum(SCOPES)),
  agentIds: z.array(id).nullable().meta({ description: 'The agents it is restricted to; null: every agent' }),
  createdAt: instant,
  expiresAt: instant.nullable().meta({ description: 'null: it does not expire' }),
  createdBy,
};

const TOKEN_EXAMPLE = {
  tokenId: '9b2e41d7-5c0a-4f3e-8e61-2d7c9a1b0f44',
  name: 'CI uploads',
  prefix: 'aps_k3Vq',
  scopes: ['knowledge-management'],
  agentIds: null,
  createdAt: '2026-11-21T14:03:55.902Z',
  expiresAt: '2027-02-19T14:03:55.902Z',
  createdBy: { kind: 'person', email: 'owner@example.com' },
};

export const createTokenResponse = z
  .strictObject({
    token: z.string().meta({ description: 'The token itself, shown here only: only its hash is stored' }),
    ...tokenFields,
  })
  .meta({
    description: 'The token made',
    examples: [{ token: 'aps_k3Vq8ZxT0mW2pR7yLc5bN1fH9dJ4sG6aE', ...TOKEN_EXAMPLE }],
  });

export const tokenListResponse = z
  .strictObject({
    data: z.array(
      z.strictObject({
        ...tokenFields,
        lastUsedAt: instant.nullable().meta({ description: 'When it last authenticated a request, to the minute' }),
        status: z.enum(['active', 'expired']),
      }),
    ),
    count: z.int().min(0),
  })
  .meta({
    description: 'The organization’s tokens, newest first; never their secrets',
    examples: [{ data: [{ ...TOKEN_EXAMPLE, lastUsedAt: '2026-11-28T18:40:00.000Z', status: 'active' }], count: 1 }],
  });

export const revokeTokenResponse = z
  .strictObject({
    tokenId: id,
    revokedAt: instant,
    descendantsRevoked: z.int().min(0).meta({ description: 'Tokens made from it, revoked with it' }),
  })
  .meta({
    description: 'The token revoked, and how many made from it went with it',
    examples: [{ tokenId: TOKEN_EXAMPLE.tokenId, revokedAt: '2026-11-29T07:05:12.300Z', descendantsRevoked: 0 }],
  });

const ORGANIZATION_ID = '5a1d7e2c-0b4f-4c69-a3e8-7f2b9d6c1e05';

export const signUpResponse = z
  .strictObject({
    organizationId: id,
    email,
    confirmed: z
      .boolean()
      .meta({ description: 'false: the address must be confirmed (a code by e-mail) before signing in' }),
  })
  .meta({
    description: 'The account made, and the organization it owns',
    examples: [{ organizationId: ORGANIZATION_ID, email: 'founder@example.com', confirmed: false }],
  });

export const organizationResponse = z
  .strictObject({
    organizationId: id,
    name: z.string().nullable(),
    createdAt: instant.nullable(),
    caller: z.strictObject({
      kind: z.enum(['person', 'token']),
      email: email.nullable(),
      role: role.meta({ description: 'A whole-organization token manages tokens as an owner does' }),
    }),
  })
  .meta({
    description: 'The caller’s organization and who the caller is in it',
    examples: [
      {
        organizationId: ORGANIZATION_ID,
        name: 'Acme Support',
        createdAt: '2026-11-02T08:00:00.000Z',
        caller: { kind: 'person', email: 'owner@example.com', role: 'owner' },
      },
    ],
  });

const invitationFields = {
  email,
  role,
  createdAt: instant,
};

/** A person invited, as the list and the invitation answer it. */
const invitedSchema = z.strictObject({
  ...invitationFields,
  status: z.literal('invited'),
  expiresAt: instant.meta({ description: 'From then on the invitation is as if it did not exist' }),
});

const INVITATION_EXAMPLE = {
  email: 'agent.smith@example.com',
  role: 'member',
  status: 'invited',
  createdAt: '2026-11-29T07:06:00.000Z',
  expiresAt: '2026-12-06T07:06:00.000Z',
};

export const inviteMemberResponse = invitedSchema.meta({
  description: 'The invitation: an offer that becomes a membership when the person accepts it',
  examples: [INVITATION_EXAMPLE],
});

export const memberListResponse = z
  .strictObject({
    data: z.array(
      z.discriminatedUnion('status', [
        z.strictObject({ ...invitationFields, status: z.literal('active'), expiresAt: z.null() }),
        invitedSchema,
      ]),
    ),
    count: z.int().min(0),
  })
  .meta({
    description: 'The organization’s people, owners first, then by e-mail, and after them its open invitations',
    examples: [
      {
        data: [
          {
            email: 'owner@example.com',
            role: 'owner',
            status: 'active',
            createdAt: '2026-11-02T08:00:00.000Z',
            expiresAt: null,
          },
          INVITATION_EXAMPLE,
        ],
        count: 2,
      },
    ],
  });

export const removeMemberResponse = z
  .strictObject({
    email,
    removedAt: instant,
    status: z.enum(['removed', 'invitationCancelled']),
    tokensRevoked: z.int().min(0).meta({ description: 'The tokens they made here, and the tokens made from those' }),
  })
  .meta({
    description: 'The person removed, or their invitation cancelled',
    examples: [
      { email: 'agent.smith@example.com', removedAt: '2026-11-29T07:08:30.000Z', status: 'removed', tokensRevoked: 1 },
    ],
  });

/** An organization of the person's, as their own routes answer it. */
const myOrganization = z.strictObject({
  organizationId: id,
  name: z.string().nullable(),
  role,
  joinedAt: instant,
});

const MY_ORGANIZATION_EXAMPLE = {
  organizationId: ORGANIZATION_ID,
  name: 'Acme Support',
  role: 'member',
  joinedAt: '2026-11-29T07:10:00.000Z',
};

export const meResponse = z
  .strictObject({
    email,
    organizations: z.array(myOrganization),
    invitations: z.array(
      z.strictObject({
        organizationId: id,
        organizationName: z.string().nullable(),
        role,
        invitedBy: email.meta({ description: 'The address of the owner who invited' }),
        createdAt: instant,
        expiresAt: instant,
      }),
    ),
  })
  .meta({
    description:
      'Who the person is: their organizations (oldest membership first) and the open invitations to their address',
    examples: [
      {
        email: 'agent.smith@example.com',
        organizations: [MY_ORGANIZATION_EXAMPLE],
        invitations: [
          {
            organizationId: '0c9e3b7a-2f61-4d8e-b5a4-6e1f0d3c2b97',
            organizationName: 'Acme Sales',
            role: 'owner',
            invitedBy: 'owner@example.com',
            createdAt: '2026-11-28T16:20:00.000Z',
            expiresAt: '2026-12-05T16:20:00.000Z',
          },
        ],
      },
    ],
  });

export const acceptInvitationResponse = myOrganization.meta({
  description: 'The membership the invitation became',
  examples: [MY_ORGANIZATION_EXAMPLE],
});

export const declineInvitationResponse = z.strictObject({ organizationId: id, declinedAt: instant }).meta({
  description: 'The invitation declined',
  examples: [{ organizationId: ORGANIZATION_ID, declinedAt: '2026-11-29T07:11:00.000Z' }],
});

export const createOrganizationResponse = myOrganization.meta({
  description: 'The organization founded, which the person owns',
  examples: [{ ...MY_ORGANIZATION_EXAMPLE, name: 'Acme Labs', role: 'owner' }],
});

export type CreateAgentResponse = Answer<typeof createAgentResponse>;
export type AgentListResponse = Answer<typeof agentListResponse>;
export type AgentResponse = Answer<typeof agentResponse>;
export type DeleteAgentResponse = Answer<typeof deleteAgentResponse>;
export type RotateCallbackSecretResponse = Answer<typeof rotateCallbackSecretResponse>;
export type CreateTokenResponse = Answer<typeof createTokenResponse>;
export type TokenListResponse = Answer<typeof tokenListResponse>;
export type RevokeTokenResponse = Answer<typeof revokeTokenResponse>;
export type SignUpResponse = Answer<typeof signUpResponse>;
export type OrganizationResponse = Answer<typeof organizationResponse>;
export type InviteMemberResponse = Answer<typeof inviteMemberResponse>;
export type MemberListResponse = Answer<typeof memberListResponse>;
export type RemoveMemberResponse = Answer<typeof removeMemberResponse>;
export type MeResponse = Answer<typeof meResponse>;
export type AcceptInvitationResponse = Answer<typeof acceptInvitationResponse>;
export type DeclineInvitationResponse = Answer<typeof declineInvitationResponse>;
export type CreateOrganizationResponse = Answer<typeof createOrganizationResponse>;

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  CreateAgent: createAgentResponse,
  ListAgents: agentListResponse,
  GetAgent: agentResponse,
  RenameAgent: agentResponse,
  DeleteAgent: deleteAgentResponse,
  RotateCallbackSecret: rotateCallbackSecretResponse,
  CreateToken: createTokenResponse,
  ListTokens: tokenListResponse,
  RevokeToken: revokeTokenResponse,
  SignUp: signUpResponse,
  GetOrganization: organizationResponse,
  InviteMember: inviteMemberResponse,
  ListMembers: memberListResponse,
  RemoveMember: removeMemberResponse,
  GetMe: meResponse,
  AcceptInvitation: acceptInvitationResponse,
  DeclineInvitation: declineInvitationResponse,
  CreateOrganization: createOrganizationResponse,
};
