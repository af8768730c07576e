import { listAgents } from '../../../core/dashboard/dashboard';
import { container } from '../../../shared/container';
import { httpHandler } from '../../../shared/http';
import { noInputSchema } from './schemas';

export const handler = httpHandler('ListAgents', noInputSchema, async (_input, caller) => {
  const data = await listAgents(container, caller);
  return { body: { data, count: data.length } };
});
