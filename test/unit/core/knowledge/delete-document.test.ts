import { completeUpdateUpload } from '#core/knowledge/complete-update-upload';
import { createUpdateUploadLink } from '#core/knowledge/create-update-upload-link';
import { deleteDocument } from '#core/knowledge/delete-document';
import { getDocument } from '#core/knowledge/get-document';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

describe('deleteDocument', () => {
  it('removes the record and its object, owes its erasure and queues delete-document', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant);

    const answer = await deleteDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key });

    expect(answer).toEqual({ documentId: link.documentId, s3Key: link.s3Key, deleted: true });
    expect(knowledge.documents.all()).toEqual([]);
    // Owed until the worker has removed the chunks: the watchdog queues the work again should the message be lost.
    expect(
      await knowledge.documents.getOwed(tenant.dataset, link.documentId as string, 'delete-document'),
    ).toMatchObject({
      objectKeys: [link.s3Key],
      retries: 0,
    });
    expect(knowledge.blobs.objects.size).toBe(0);
    expect(knowledge.queue.messages.at(-1)).toEqual({
      kind: 'delete-document',
      ...tenant.dataset,
      documentId: link.documentId,
      // What the record knew of its chunks goes with the message: none yet (it was never processed).
      indexedChunks: [],
    });
    await expect(
      getDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('removes the current version object of an updated document too', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook' });
    const update = await createUpdateUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      customDocumentId: 'handbook',
      fileName: 'v2.txt',
    });
    knowledge.blobs.putObject(knowledge.blobs.signed.at(-1)?.key as string, 'v2');
    await completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId);
    expect(knowledge.blobs.objects.size).toBe(1);

    await deleteDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, customDocumentId: 'handbook' });

    expect(knowledge.blobs.objects.size).toBe(0);
  });

  it('answers 404 DOCUMENT_NOT_FOUND the second time and queues nothing more', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant);
    await deleteDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key });
    const queued = knowledge.queue.messages.length;

    await expect(
      deleteDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
    expect(knowledge.queue.messages).toHaveLength(queued);
  });

  it("answers 404 for another organization's document and leaves it in place", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const other = await knowledge.tenant('org-b');
    const { link } = await uploadDocument(knowledge, tenant);

    await expect(
      deleteDocument(knowledge.deps, other.caller, { ...other.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
    expect(knowledge.documents.all()).toHaveLength(1);
    expect(knowledge.blobs.objects.has(link.s3Key)).toBe(true);
  });
});
