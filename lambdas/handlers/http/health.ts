import * as z from 'zod';
import { httpHandler } from '#shared/http';

export const handler = httpHandler('Health', z.strictObject({}), async () => ({ body: { status: 'ok' } }));
