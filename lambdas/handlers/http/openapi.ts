import * as z from 'zod';
import { httpHandler } from '#shared/http';
import { buildOpenApiDocument } from './openapi-document';

let document: ReturnType<typeof buildOpenApiDocument> | undefined;

export const handler = httpHandler('OpenApi', z.strictObject({}), async () => {
  document ??= buildOpenApiDocument();
  return { body: document, raw: true };
});
