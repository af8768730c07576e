/** Calls to a stack run by bin/run-stack.ts (test/helpers/stack-process.ts), as the test/stack suites make them. */
import type { Json } from '../../lib/stack-check/cloud-assembly';
import { helloFlow } from './flow-definitions';
import { pollUntil } from './poll';
import type { StackProcess } from './stack-process';

export type StackCall = (
  method: string,
  route: string,
  body?: unknown,
) => Promise<{ status: number; body: Record<string, Json> }>;

/** JSON requests to the stack's API with `token` (none: anonymous). */
export function api(stack: Pick<StackProcess, 'baseUrl'>, token: string | null): StackCall {
  return async (method, route, body) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    const response = await fetch(stack.baseUrl + route, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as Record<string, Json> };
  };
}

/** A dataset as the knowledge API names it (a record of strings, so it is a query string as it is). */
export type StackDataset = Readonly<Record<'agentId' | 'knowledgeBaseId' | 'environment', string>>;

/** A new agent with one knowledge base, and the dataset of `environment` in it. */
export async function dataset(call: StackCall, environment = 'production'): Promise<StackDataset> {
  const agent = await call('POST', '/dashboard/agents', { displayName: 'Support bot' });
  expect(agent.status).toBe(201);
  const kb = await call('POST', `/dashboard/agents/${agent.body.agentId}/knowledge/bases`, {
    name: 'Manuals',
    description: 'Product manuals',
  });
  expect(kb.status).toBe(201);
  return { agentId: String(agent.body.agentId), knowledgeBaseId: String(kb.body.knowledgeBaseId), environment };
}

/** upload-link → PUT to the signed URL → upload-complete, then the document once processed (ready or failed). */
export async function uploadProcessed(call: StackCall, d: StackDataset, fileName: string, text: string) {
  const link = await call('POST', '/api/v1/knowledge/documents/upload-link', { ...d, fileName });
  expect(link.status).toBe(200);
  const put = await fetch(String(link.body.uploadUrl), {
    method: 'PUT',
    headers: link.body.requiredHeaders as Record<string, string>,
    body: text,
  });
  expect(put.status).toBe(200);
  const complete = await call('POST', '/api/v1/knowledge/documents/upload-complete', { uploadId: link.body.uploadId });
  expect(complete.status).toBe(200);
  const byKey = new URLSearchParams({ ...d, s3Key: String(link.body.s3Key) });
  const document = await pollUntil(
    () => call('GET', `/api/v1/knowledge/documents?${byKey}`),
    (r) => r.body.status === 'ready' || r.body.status === 'failed',
    60_000,
  );
  return { s3Key: String(link.body.s3Key), document };
}

/** A new agent whose production definition is helloFlow(): its id, and a call of its webhook. */
export async function helloAgent(call: StackCall, displayName: string) {
  const agent = await call('POST', '/dashboard/agents', { displayName });
  const agentId = String(agent.body.agentId);
  const stored = await call('PUT', `/dashboard/agents/${agentId}/definition/production`, helloFlow());
  expect(stored.status).toBe(200);
  return {
    agentId,
    run: () => call('POST', `/api/v1/webhooks/${agentId}/production/Start`, { message: 'Hi' }),
  };
}
