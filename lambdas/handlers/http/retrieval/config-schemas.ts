/** Request schemas of the default retrieval endpoints. */
import * as z from 'zod';
import { environment, uuid } from '#core/knowledge/fields';
import { retrievalConfigSchema } from '#core/retrieval/retrieval-config';

export const configPathSchema = z.strictObject({ agentId: uuid, environment });
export const putConfigSchema = retrievalConfigSchema.extend({ agentId: uuid, environment });
export const previewSchema = z.strictObject({
  agentId: uuid,
  environment,
  query: z.string().trim().min(1).max(2000),
  memory: z.record(z.string(), z.unknown()).optional(),
});
