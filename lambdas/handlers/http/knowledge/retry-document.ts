import { container } from '#composition/container';
import { retryDocument } from '#core/knowledge/retry-document';
import { httpHandler } from '#shared/http';
import type { DocumentResponse } from './responses';
import { documentQuerySchema } from './schemas';

/** 200 with the document, `uploaded` again; its processing is queued. */
export const handler = httpHandler('RetryDocument', documentQuerySchema, async (input, caller) => ({
  body: { ...(await retryDocument(container, caller, input)) } satisfies DocumentResponse,
}));
