/** Request schemas of the dashboard endpoints. */
import * as z from 'zod';
import { SCOPES } from '#core/auth/scopes';
import { environment, uuid } from '#core/knowledge/fields';

const trimmed = (max: number) => z.string().trim().min(1).max(max);

export const createAgentSchema = z.strictObject({ displayName: trimmed(200) });
export const noInputSchema = z.strictObject({});
export const agentPathSchema = z.strictObject({ agentId: uuid });
export const renameAgentSchema = z.strictObject({ agentId: uuid, displayName: trimmed(200) });
export const knowledgeBasePathSchema = z.strictObject({ agentId: uuid, knowledgeBaseId: uuid });

/** POST …/reindex: one environment's dataset, or (no body, or no `environment`) all three. */
export const reindexKnowledgeBaseSchema = z.strictObject({
  agentId: uuid,
  knowledgeBaseId: uuid,
  environment: environment.optional(),
});

export const createKnowledgeBaseSchema = z.strictObject({
  agentId: uuid,
  name: trimmed(100),
  description: z.string().max(1000).nullable().optional(),
});

export const updateKnowledgeBaseSchema = z
  .strictObject({
    agentId: uuid,
    knowledgeBaseId: uuid,
    name: trimmed(100).optional(),
    description: z.string().max(1000).nullable().optional(),
  })
  .refine((v) => v.name !== undefined || v.description !== undefined, {
    message: 'give name or description',
    params: { rule: 'atLeastOneOf' },
  });

/** Most agents one token can be restricted to: the list travels in every authorizer answer. */
export const MAX_TOKEN_AGENTS = 100;

/** Each repeat of an earlier item, at its own index, so the detail names it (`agentIds.3`, rule `unique`). */
const uniqueItems = <T>(items: readonly T[], ctx: z.RefinementCtx) => {
  items.forEach((item, index) => {
    const first = items.indexOf(item);
    if (first !== index) {
      ctx.addIssue({
        code: 'custom',
        path: [index],
        message: `is the same as item ${first}`,
        params: { rule: 'unique' },
      });
    }
  });
};

export const createTokenSchema = z.strictObject({
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  agentIds: z
    .array(uuid)
    .min(1)
    .max(MAX_TOKEN_AGENTS)
    .superRefine(uniqueItems)
    .meta({
      uniqueItems: true,
      description:
        'Restricts the token to these agents of the organization; any other agent is 404 to it. Absent: every agent. A token restricted to agents must give some of its own.',
    })
    .optional(),
  name: trimmed(100).optional(),
  expiresInDays: z.number().int().min(1).max(3650).optional().meta({
    description: 'The token is refused (401) from this many days after its creation on. Absent: it does not expire.',
  }),
});
export const tokenPathSchema = z.strictObject({ tokenId: uuid });

/**
 * An e-mail as the people directory takes it: trimmed, lower case (Cognito's ID token carries it so, and the members
 * table is keyed by it), at most 254 characters. Local part and domain labels exclude the separators they are
 * split by, so the match is linear.
 */
export const EMAIL_PATTERN = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

// The document states the rule itself (its pattern), not JSON Schema's `format: email`, which is stricter than what
// the service takes: a client validating by the document then accepts and refuses what the service does.
export const email = z
  .string()
  .trim()
  .max(254)
  .regex(EMAIL_PATTERN, { message: 'must be an e-mail address' })
  .transform((value) => value.toLowerCase());

/** The user pool's password policy (lib/constructs/people.ts), checked here first so both runtimes answer alike. */
export const PASSWORD_RULES = [
  { rule: 'password.lowercase', test: /[a-z]/, message: 'needs a lower-case letter' },
  { rule: 'password.uppercase', test: /[A-Z]/, message: 'needs an upper-case letter' },
  { rule: 'password.digit', test: /[0-9]/, message: 'needs a digit' },
  { rule: 'password.symbol', test: /[^A-Za-z0-9\s]/, message: 'needs a symbol' },
] as const;

export const password = z
  .string()
  .min(8)
  .max(256)
  .superRefine((value, ctx) => {
    for (const { rule, test, message } of PASSWORD_RULES) {
      if (!test.test(value)) ctx.addIssue({ code: 'custom', message, params: { rule } });
    }
  })
  .meta({
    description: 'At least 8 characters with a lower-case and an upper-case letter, a digit and a symbol.',
  });

export const signUpSchema = z.strictObject({ email, password, organizationName: trimmed(100) });
export const ROLES = ['owner', 'member'] as const;
export const inviteMemberSchema = z.strictObject({
  email,
  role: z.enum(ROLES).default('member').meta({ description: 'Default `member`.' }),
});
export const memberPathSchema = z.strictObject({ email });
export const invitationPathSchema = z.strictObject({ organizationId: uuid });
export const createOrganizationSchema = z.strictObject({ name: trimmed(100) });
