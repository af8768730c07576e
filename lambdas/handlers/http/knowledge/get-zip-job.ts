import { readContainer } from '#composition/container';
import { zipJobView } from '#core/processing/zip-job';
import { httpHandler } from '#shared/http';
import type { GetZipJobResponse } from './responses';
import { zipJobPathSchema } from './schemas';

/** GET /api/v1/knowledge/zip-jobs/:zipJobId */
export const handler = httpHandler('GetZipJob', zipJobPathSchema, async (input, caller) => ({
  body: (await zipJobView(readContainer, caller, input.zipJobId)) satisfies GetZipJobResponse,
}));
