import { getDocument } from '../../../core/knowledge/documents';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { documentQuerySchema } from './schemas';

export const handler = httpHandler('GetDocument', documentQuerySchema, async (input, caller) => ({
  body: { ...(await getDocument(container, caller, input)) },
}));
