import { readContainer } from '#composition/container';
import { listZipJobs } from '#core/processing/zip-job';
import { httpHandler } from '#shared/http';
import type { ListZipJobsResponse } from './responses';
import { listZipJobsSchema } from './schemas';

/** GET /api/v1/knowledge/zip-jobs */
export const handler = httpHandler('ListZipJobs', listZipJobsSchema, async (input, caller) => ({
  body: (await listZipJobs(readContainer, caller, input)) satisfies ListZipJobsResponse,
}));
