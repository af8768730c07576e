import { createUploadLink } from '#core/knowledge/create-upload-link';
import { getDocument } from '#core/knowledge/get-document';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

describe('getDocument', () => {
  it('finds a document by s3Key and by customDocumentId, as the API shows it', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook', label1: 'faq' }, 'abc');

    const byKey = await getDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key });
    const byCustomId = await getDocument(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      customDocumentId: 'handbook',
    });

    expect(byKey).toEqual(byCustomId);
    expect(byKey).toMatchObject({
      documentId: 'handbook',
      customDocumentId: 'handbook',
      s3Key: link.s3Key,
      fileName: 'notes.txt',
      status: 'uploaded',
      contentType: 'text/plain',
      fileSize: 3,
      label1: 'faq',
      error: null,
    });
    // The view holds the spec's fields, not the store's bookkeeping.
    expect(byKey).not.toHaveProperty('uploadId');
    expect(byKey).not.toHaveProperty('organizationId');
  });

  it('answers 404 DOCUMENT_NOT_FOUND for a reservation whose upload is not complete', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const link = await createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'a.txt' });

    await expect(
      getDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
  });

  it("answers 404 for another organization's document and for its knowledge base", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const other = await knowledge.tenant('org-b');
    const { link } = await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook' });

    await expect(
      getDocument(knowledge.deps, other.caller, { ...other.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
    await expect(
      getDocument(knowledge.deps, other.caller, { ...tenant.dataset, customDocumentId: 'handbook' }),
    ).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
  });

  it('answers 404 naming the customDocumentId that no document of the dataset has', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook' });

    await expect(
      getDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, customDocumentId: 'missing' }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND', message: expect.stringContaining('missing') });
  });
});
