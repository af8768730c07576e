/** Steps the knowledge use case tests share: a document uploaded through the use cases themselves, not seeded. */
import { completeUpload } from '#core/knowledge/complete-upload';
import { createUploadLink, type UploadLinkRequest } from '#core/knowledge/create-upload-link';
import type { InMemoryKnowledge, Tenant } from './in-memory-ports';

/** upload-link, the client's PUT, upload-complete: the document is `uploaded`. */
export async function uploadDocument(
  knowledge: InMemoryKnowledge,
  tenant: Tenant,
  request: Partial<UploadLinkRequest> = {},
  content = 'Hello from a unit test',
) {
  const link = await createUploadLink(knowledge.deps, tenant.caller, {
    ...tenant.dataset,
    fileName: 'notes.txt',
    ...request,
  });
  knowledge.blobs.putObject(knowledge.blobs.signed.at(-1)?.key as string, content);
  const completion = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);
  return { link, completion };
}
