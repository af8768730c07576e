/** Helpers that build what a test needs through the public API, as a user would. */
import { ZipFile } from 'yazl';
import { pollUntil } from './poll';
import type { client } from './service';

type Call = ReturnType<typeof client>;

export interface Dataset {
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly environment: 'development' | 'staging' | 'production';
}

export async function createDataset(call: Call, environment: Dataset['environment'] = 'production'): Promise<Dataset> {
  const agent = await call<{ agentId: string }>('POST', '/dashboard/agents', { body: { displayName: 'Support bot' } });
  if (agent.status !== 201) throw new Error(`create agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  const kb = await call<{ knowledgeBaseId: string }>(
    'POST',
    `/dashboard/agents/${agent.body.agentId}/knowledge/bases`,
    {
      body: { name: 'Manuals', description: 'Product manuals' },
    },
  );
  if (kb.status !== 201) throw new Error(`create knowledge base: ${kb.status} ${JSON.stringify(kb.body)}`);
  return { agentId: agent.body.agentId, knowledgeBaseId: kb.body.knowledgeBaseId, environment };
}

export interface UploadLink {
  uploadId: string;
  uploadUrl: string;
  expiresIn: number;
  s3Key: string;
  /** Absent for a ZIP import. */
  documentId?: string;
  zipJobId?: string;
  requiredHeaders: Record<string, string>;
}

/** PUTs bytes to a pre-signed URL with its required headers, as `curl -X PUT` would. */
export async function putFile(link: UploadLink, content: string | Buffer): Promise<Response> {
  return fetch(link.uploadUrl, { method: 'PUT', headers: link.requiredHeaders, body: content });
}

/** upload-link → PUT → upload-complete; returns both answers. */
export async function uploadDocument(
  call: Call,
  dataset: Dataset,
  fields: Record<string, unknown> & { fileName: string },
  content: string | Buffer = 'Hello knowledge base.',
) {
  const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, ...fields },
  });
  if (link.status !== 200) throw new Error(`upload-link: ${link.status} ${JSON.stringify(link.body)}`);
  const put = await putFile(link.body, content);
  if (put.status !== 200) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  const complete = await call('POST', '/api/v1/knowledge/documents/upload-complete', {
    body: { uploadId: link.body.uploadId },
  });
  if (complete.status !== 200) throw new Error(`upload-complete: ${complete.status} ${JSON.stringify(complete.body)}`);
  return { link: link.body, complete: complete.body };
}

/** uploadDocument, then waits until processing made it `ready` (a test fails here if it ends otherwise). */
export async function readyDocument(call: Call, dataset: Dataset, fileName: string, text = `The text of ${fileName}.`) {
  const { link } = await uploadDocument(call, dataset, { fileName }, text);
  const doc = await pollUntil(
    () => call<{ status: string }>('GET', '/api/v1/knowledge/documents', { query: { ...dataset, s3Key: link.s3Key } }),
    (r) => r.body.status !== 'uploaded',
    30_000,
  );
  if (doc.body.status !== 'ready') throw new Error(`${fileName} ended ${JSON.stringify(doc.body)}`);
  return link;
}

/** A ZIP archive of `files` (name → content), entries in the given order. */
export function zipOf(files: Record<string, string | Buffer>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const zip = new ZipFile();
    for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name);
    zip.end();
    const parts: Buffer[] = [];
    zip.outputStream.on('data', (part: Buffer) => parts.push(part));
    zip.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    zip.outputStream.on('error', reject);
  });
}
