import { completeUpdateUpload } from '#core/knowledge/complete-update-upload';
import { createUpdateUploadLink } from '#core/knowledge/create-update-upload-link';
import { deleteDocument } from '#core/knowledge/delete-document';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

async function documentWithUpdateLink() {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant = await knowledge.tenant();
  const { link } = await uploadDocument(knowledge, tenant, { customDocumentId: 'handbook', label1: 'one' }, 'v1');
  await knowledge.documents.setStatus(tenant.dataset, 'handbook', link.uploadId, 'ready', null, 'later');
  knowledge.clock.advanceSeconds(10);
  const update = await createUpdateUploadLink(knowledge.deps, tenant.caller, {
    ...tenant.dataset,
    customDocumentId: 'handbook',
    fileName: 'v2.txt',
    label2: 'two',
  });
  const versionKey = knowledge.blobs.signed.at(-1)?.key as string;
  return { knowledge, tenant, link, update, versionKey };
}

describe('completeUpdateUpload', () => {
  it('replaces the content, deletes the old object, sets the document uploaded and queues reprocessing', async () => {
    const { knowledge, tenant, link, update, versionKey } = await documentWithUpdateLink();
    knowledge.blobs.putObject(versionKey, 'version two');

    const completion = await completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId);

    expect(completion).toMatchObject({ type: 'document', documentId: 'handbook', s3Key: link.s3Key });
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toMatchObject({
      status: 'uploaded',
      uploadId: update.uploadId,
      objectKey: versionKey,
      s3Key: link.s3Key,
      fileName: 'v2.txt',
      fileSize: 11,
      label1: 'one',
      label2: 'two',
    });
    expect([...knowledge.blobs.objects.keys()]).toEqual([versionKey]);
    expect(knowledge.queue.messages.at(-1)).toEqual({
      kind: 'process-document',
      ...tenant.dataset,
      documentId: 'handbook',
      uploadId: update.uploadId,
    });
  });

  it('answers a repeated call as the first and queues nothing more', async () => {
    const { knowledge, tenant, update, versionKey } = await documentWithUpdateLink();
    knowledge.blobs.putObject(versionKey, 'version two');
    const first = await completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId);
    const queued = knowledge.queue.messages.length;

    await expect(completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId)).resolves.toEqual(first);
    expect(knowledge.queue.messages).toHaveLength(queued);
    expect(knowledge.blobs.objects.has(versionKey)).toBe(true);
  });

  it('answers as the first when an earlier attempt replaced the content but did not save its answer', async () => {
    const { knowledge, tenant, update, versionKey } = await documentWithUpdateLink();
    knowledge.blobs.putObject(versionKey, 'version two');
    const appliedAt = knowledge.clock.now().toISOString();
    // An attempt cut off after its conditional write: the document holds the upload, the session no answer.
    await knowledge.documents.replaceContent(
      tenant.dataset,
      'handbook',
      {
        uploadId: update.uploadId,
        objectKey: versionKey,
        fileName: 'v2.txt',
        contentType: 'text/plain',
        fileSize: 11,
        updatedAt: appliedAt,
      },
      { label2: 'two' },
    );
    knowledge.clock.advanceSeconds(20);

    const completion = await completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId);

    expect(completion).toMatchObject({ documentId: 'handbook', updatedAt: appliedAt });
    expect((await knowledge.documents.get(tenant.dataset, 'handbook'))?.updatedAt).toBe(appliedAt);
    expect(knowledge.blobs.objects.has(versionKey)).toBe(true);
  });

  it('answers 404 DOCUMENT_NOT_FOUND and removes the new object when the document was deleted meanwhile', async () => {
    const { knowledge, tenant, update, versionKey } = await documentWithUpdateLink();
    knowledge.blobs.putObject(versionKey, 'version two');
    await deleteDocument(knowledge.deps, tenant.caller, { ...tenant.dataset, customDocumentId: 'handbook' });

    await expect(completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId)).rejects.toMatchObject({
      status: 404,
      code: 'DOCUMENT_NOT_FOUND',
    });
    expect(knowledge.blobs.objects.size).toBe(0);
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toBeUndefined();
  });

  it('answers 410 UPLOAD_EXPIRED after the session ended and leaves the document as it was', async () => {
    const { knowledge, tenant, link, update, versionKey } = await documentWithUpdateLink();
    knowledge.blobs.putObject(versionKey, 'version two');
    knowledge.clock.advanceSeconds(3601);

    await expect(completeUpdateUpload(knowledge.deps, tenant.caller, update.uploadId)).rejects.toMatchObject({
      status: 410,
      code: 'UPLOAD_EXPIRED',
    });
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toMatchObject({
      status: 'ready',
      uploadId: link.uploadId,
    });
  });

  it('refuses an upload of a new document with 400 naming upload-complete', async () => {
    const { knowledge, tenant, link } = await documentWithUpdateLink();

    await expect(completeUpdateUpload(knowledge.deps, tenant.caller, link.uploadId)).rejects.toMatchObject({
      status: 400,
      details: [{ field: 'uploadId', rule: 'uploadKind', message: 'uploadId belongs to upload-complete' }],
    });
  });

  it("answers 404 UPLOAD_NOT_FOUND for another organization's update", async () => {
    const { knowledge, update, versionKey } = await documentWithUpdateLink();
    const other = await knowledge.tenant('org-b');
    knowledge.blobs.putObject(versionKey, 'version two');

    await expect(completeUpdateUpload(knowledge.deps, other.caller, update.uploadId)).rejects.toMatchObject({
      status: 404,
      code: 'UPLOAD_NOT_FOUND',
    });
  });
});
