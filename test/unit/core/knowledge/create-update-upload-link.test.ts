import { createUpdateUploadLink } from '#core/knowledge/create-update-upload-link';
import { createUploadLink } from '#core/knowledge/create-upload-link';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

describe('createUpdateUploadLink', () => {
  it('signs a PUT of a version object beside the document and changes nothing yet', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook' });
    const before = await knowledge.documents.get(tenant.dataset, 'handbook');

    const update = await createUpdateUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      customDocumentId: 'handbook',
      fileName: 'v2.md',
      label2: 'second',
    });

    const versionKey = `${tenant.agentId}/development/${tenant.knowledgeBaseId}/handbook/_versions/${update.uploadId}/v2.md`;
    expect(update).toMatchObject({ s3Key: link.s3Key, documentId: 'handbook' });
    expect(knowledge.blobs.signed.at(-1)).toMatchObject({
      key: versionKey,
      conditions: { contentType: 'text/markdown' },
    });
    expect(await knowledge.uploads.get(update.uploadId)).toMatchObject({
      kind: 'update',
      objectKey: versionKey,
      metadata: { label2: 'second' },
    });
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toEqual(before);
  });

  it('refuses a ZIP archive as new content with 400 fileName.notZip', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant);

    await expect(
      createUpdateUploadLink(knowledge.deps, tenant.caller, {
        ...tenant.dataset,
        s3Key: link.s3Key,
        fileName: 'a.zip',
      }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'fileName', rule: 'fileName.notZip' }] });
  });

  it('answers 404 DOCUMENT_NOT_FOUND for a document that is only reserved', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await createUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      fileName: 'a.txt',
      customDocumentId: 'pending',
    });

    await expect(
      createUpdateUploadLink(knowledge.deps, tenant.caller, {
        ...tenant.dataset,
        customDocumentId: 'pending',
        fileName: 'b.txt',
      }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
  });

  it('refuses a declared size above the limit before looking the document up', async () => {
    const knowledge = inMemoryKnowledgeDeps({ maxFileBytes: 10 });
    const tenant = await knowledge.tenant();

    await expect(
      createUpdateUploadLink(knowledge.deps, tenant.caller, {
        ...tenant.dataset,
        customDocumentId: 'absent',
        fileName: 'b.txt',
        fileSize: 11,
      }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'fileSize', rule: 'fileSize.max' }] });
  });
});
