/**
 * A token past its `expiresAt` is refused with 401 and listed as expired. Time is moved by writing the token's
 * `expiresAt` in the local runtime's tokens table, which a test cannot reach in a deployment: this suite runs on the
 * local runtime only (the stack-check runs test/api/dashboard.test.ts, which holds anywhere).
 */

import { client, startService, type TestService } from '../helpers/service';
import { tokenTable } from '../helpers/token-table';

let service: TestService;
let call: ReturnType<typeof client>;

beforeAll(async () => {
  service = await startService();
  call = client(service);
});
afterAll(() => service?.stop());

it('refuses an expired token with 401 and lists it as expired', async () => {
  const created = await call<{ token: string; tokenId: string }>('POST', '/dashboard/tokens', {
    body: { scopes: ['dashboard'], expiresInDays: 1 },
  });
  expect(created.status).toBe(201);
  const probe = () => call('GET', '/dashboard/agents', { token: created.body.token });
  expect((await probe()).status).toBe(200);
  const table = tokenTable(service);
  if (!table) throw new Error('the tokens table of the local runtime is needed');
  try {
    await table.expire(created.body.token, new Date(Date.now() - 1000).toISOString());
  } finally {
    table.close();
  }
  expect((await probe()).status).toBe(401);
  const list = await call<{ data: { tokenId: string; status: string }[] }>('GET', '/dashboard/tokens');
  expect(list.body.data.find((t) => t.tokenId === created.body.tokenId)?.status).toBe('expired');
});
