/** Request schemas of the dashboard endpoints. */
import * as z from 'zod';
import { SCOPES } from '../../../../lib/routes';
import { uuid } from '../../../core/knowledge/fields';

const trimmed = (max: number) => z.string().trim().min(1).max(max);

export const createAgentSchema = z.strictObject({ displayName: trimmed(200) });
export const noInputSchema = z.strictObject({});
export const agentPathSchema = z.strictObject({ agentId: uuid });
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

export const createTokenSchema = z.strictObject({
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  name: trimmed(100).optional(),
});
