/** Request schemas of the dashboard endpoints. */
import * as z from 'zod';
import { SCOPES } from '#core/auth/scopes';
import { uuid } from '#core/knowledge/fields';

const trimmed = (max: number) => z.string().trim().min(1).max(max);

export const createAgentSchema = z.strictObject({ displayName: trimmed(200) });
export const noInputSchema = z.strictObject({});
export const agentPathSchema = z.strictObject({ agentId: uuid });
export const renameAgentSchema = z.strictObject({ agentId: uuid, displayName: trimmed(200) });
export const knowledgeBasePathSchema = z.strictObject({ agentId: uuid, knowledgeBaseId: uuid });

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
