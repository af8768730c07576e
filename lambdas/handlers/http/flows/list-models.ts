import { modelCatalogFromEnv } from '#composition/model-catalog';
import { httpHandler } from '#shared/http';
import type { ModelListResponse } from './responses';
import { listModelsSchema } from './schemas';

/** GET /dashboard/models: the models this deployment may call (README, "Models"), the default marked. */
export const handler = httpHandler('ListModels', listModelsSchema, async () => ({
  body: { data: modelCatalogFromEnv() } satisfies ModelListResponse,
}));
