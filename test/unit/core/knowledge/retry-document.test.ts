import { retryDocument } from '#core/knowledge/retry-document';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

async function failedDocument() {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant = await knowledge.tenant();
  const { link } = await uploadDocument(knowledge, tenant, { customDocumentId: 'manual' });
  const failed = await knowledge.documents.setStatus(
    tenant.dataset,
    link.documentId as string,
    link.uploadId,
    'failed',
    { code: 'PARSE_ERROR', message: 'The PDF could not be read' },
    '2026-11-25T10:00:00.000Z',
  );
  expect(failed?.status).toBe('failed');
  return { knowledge, tenant, link };
}

describe('retryDocument', () => {
  it('sets a failed document uploaded again, error cleared, and queues its current upload', async () => {
    const { knowledge, tenant, link } = await failedDocument();
    const queued = knowledge.queue.messages.length;

    const answer = await retryDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key });

    expect(answer).toMatchObject({ documentId: link.documentId, s3Key: link.s3Key, status: 'uploaded', error: null });
    expect(knowledge.documents.all()[0]).toMatchObject({ status: 'uploaded', error: null, watchdogRetries: 0 });
    expect(knowledge.queue.messages.slice(queued)).toEqual([
      { kind: 'process-document', ...tenant.dataset, documentId: link.documentId, uploadId: link.uploadId },
    ]);
  });

  it('finds the document by customDocumentId too', async () => {
    const { knowledge, tenant } = await failedDocument();
    const answer = await retryDocument(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      customDocumentId: 'manual',
    });
    expect(answer.status).toBe('uploaded');
  });

  it('answers 409 DOCUMENT_NOT_FAILED for a document that is not failed, and changes and queues nothing', async () => {
    const { knowledge, tenant, link } = await failedDocument();
    await retryDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key });
    const queued = knowledge.queue.messages.length;
    const before = knowledge.documents.all();

    await expect(
      retryDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({
      status: 409,
      code: 'DOCUMENT_NOT_FAILED',
      details: [{ field: 'status', rule: 'failed' }],
    });
    expect(knowledge.queue.messages).toHaveLength(queued);
    expect(knowledge.documents.all()).toEqual(before);
  });

  it('answers 404 for an unknown document and for another organization', async () => {
    const { knowledge, tenant, link } = await failedDocument();
    await expect(
      retryDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, customDocumentId: 'nothing' }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
    const other = await knowledge.tenant('org-b');
    await expect(
      retryDocument(knowledge.deps, other.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404 });
    expect(knowledge.documents.all()[0].status).toBe('failed');
  });
});
