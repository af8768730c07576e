import { completeUpload } from '#core/knowledge/complete-upload';
import { createUpdateUploadLink } from '#core/knowledge/create-update-upload-link';
import { createUploadLink } from '#core/knowledge/create-upload-link';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

async function linked(request: { fileName?: string; customDocumentId?: string; label1?: string } = {}) {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant = await knowledge.tenant();
  const link = await createUploadLink(knowledge.deps, tenant.caller, {
    ...tenant.dataset,
    fileName: 'notes.txt',
    ...request,
  });
  return { knowledge, tenant, link };
}

describe('completeUpload', () => {
  it('turns the reservation into an uploaded document, applies its metadata and queues its processing', async () => {
    const { knowledge, tenant, link } = await linked({ label1: 'faq' });
    knowledge.blobs.putObject(link.s3Key, 'twelve bytes');
    knowledge.clock.advanceSeconds(30);

    const completion = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);

    expect(completion).toEqual({
      type: 'document',
      s3Key: link.s3Key,
      documentId: link.documentId,
      status: 'uploaded',
      createdAt: '2026-01-01T00:00:30.000Z',
      updatedAt: '2026-01-01T00:00:30.000Z',
    });
    expect(await knowledge.documents.get(tenant.dataset, link.documentId as string)).toMatchObject({
      status: 'uploaded',
      fileSize: 12,
      label1: 'faq',
      reservedUntil: null,
    });
    expect(knowledge.blobs.objects.get(link.s3Key)?.pendingUpload).toBe(false);
    expect(knowledge.queue.messages).toEqual([
      {
        kind: 'process-document',
        ...tenant.dataset,
        documentId: link.documentId,
        uploadId: link.uploadId,
      },
    ]);
    expect((await knowledge.uploads.get(link.uploadId))?.completion).toEqual(completion);
  });

  it('counts the upload once in DocumentsUploaded, however often the call is repeated', async () => {
    const { knowledge, tenant, link } = await linked();
    knowledge.blobs.putObject(link.s3Key, 'content');
    await completeUpload(knowledge.deps, tenant.caller, link.uploadId);
    await completeUpload(knowledge.deps, tenant.caller, link.uploadId);
    expect(knowledge.metrics.sum('DocumentsUploaded')).toBe(1);
  });

  it('answers a repeated call as the first, without changing the document again', async () => {
    const { knowledge, tenant, link } = await linked();
    knowledge.blobs.putObject(link.s3Key, 'content');
    const first = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);
    knowledge.clock.advanceSeconds(60);

    const again = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);

    expect(again).toEqual(first);
    expect((await knowledge.documents.get(tenant.dataset, link.documentId as string))?.updatedAt).toBe(first.updatedAt);
  });

  it('answers as the first when an earlier attempt completed the document but not the session', async () => {
    const { knowledge, tenant, link } = await linked();
    knowledge.blobs.putObject(link.s3Key, 'content');
    const now = knowledge.clock.now().toISOString();
    // An attempt cut off after its conditional write: the document is uploaded, the session holds no answer.
    await knowledge.documents.completeReservation(
      tenant.dataset,
      link.documentId as string,
      {
        uploadId: link.uploadId,
        objectKey: link.s3Key,
        fileName: 'notes.txt',
        contentType: 'text/plain',
        fileSize: 7,
        updatedAt: now,
      },
      {},
      now,
    );
    knowledge.clock.advanceSeconds(5);

    const completion = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);

    expect(completion).toMatchObject({ documentId: link.documentId, createdAt: now, updatedAt: now });
    expect(knowledge.queue.messages).toHaveLength(1);
  });

  it('answers 409 UPLOAD_NOT_RECEIVED before the file was PUT, and completes once it is', async () => {
    const { knowledge, tenant, link } = await linked();

    await expect(completeUpload(knowledge.deps, tenant.caller, link.uploadId)).rejects.toMatchObject({
      status: 409,
      code: 'UPLOAD_NOT_RECEIVED',
    });
    expect((await knowledge.documents.get(tenant.dataset, link.documentId as string))?.status).toBe('reserved');
    expect(knowledge.queue.messages).toEqual([]);

    knowledge.blobs.putObject(link.s3Key, 'late');
    await expect(completeUpload(knowledge.deps, tenant.caller, link.uploadId)).resolves.toMatchObject({
      status: 'uploaded',
    });
  });

  it('answers 410 UPLOAD_EXPIRED after the session ended, though the file arrived', async () => {
    const { knowledge, tenant, link } = await linked();
    knowledge.blobs.putObject(link.s3Key, 'content');
    knowledge.clock.advanceSeconds(3601);

    await expect(completeUpload(knowledge.deps, tenant.caller, link.uploadId)).rejects.toMatchObject({
      status: 410,
      code: 'UPLOAD_EXPIRED',
    });
    expect(knowledge.queue.messages).toEqual([]);
  });

  it('answers 410 UPLOAD_EXPIRED when its expired reservation was taken by another upload', async () => {
    const { knowledge, tenant, link } = await linked({ customDocumentId: 'handbook' });
    knowledge.blobs.putObject(link.s3Key, 'content');
    // Another upload takes the documentId once the reservation has expired (at +3600 s)...
    knowledge.clock.advanceSeconds(3601);
    const taker = await createUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      fileName: 'other.txt',
      customDocumentId: 'handbook',
    });
    // ...and the first session still looks open: the use case must not complete the other upload's reservation.
    const session = knowledge.uploads.records.get(link.uploadId);
    if (!session) throw new Error('session missing');
    knowledge.uploads.records.set(link.uploadId, { ...session, expiresAt: '2026-01-01T02:00:00.000Z' });

    await expect(completeUpload(knowledge.deps, tenant.caller, link.uploadId)).rejects.toMatchObject({
      status: 410,
      code: 'UPLOAD_EXPIRED',
    });
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toMatchObject({
      status: 'reserved',
      uploadId: taker.uploadId,
    });
  });

  it("answers 404 UPLOAD_NOT_FOUND for another organization's upload and for an unknown one", async () => {
    const { knowledge, link } = await linked();
    const other = await knowledge.tenant('org-b');
    knowledge.blobs.putObject(link.s3Key, 'content');

    await expect(completeUpload(knowledge.deps, other.caller, link.uploadId)).rejects.toMatchObject({
      status: 404,
      code: 'UPLOAD_NOT_FOUND',
    });
    await expect(completeUpload(knowledge.deps, other.caller, 'no-such-upload')).rejects.toMatchObject({
      status: 404,
      code: 'UPLOAD_NOT_FOUND',
    });
    expect(knowledge.queue.messages).toEqual([]);
  });

  it('answers 404 KNOWLEDGE_BASE_NOT_FOUND when the knowledge base is being deleted since upload-link', async () => {
    const { knowledge, tenant, link } = await linked();
    knowledge.blobs.putObject(link.s3Key, 'content');
    await knowledge.knowledgeBases.markDeleting(
      tenant.agentId,
      tenant.knowledgeBaseId,
      { startedAt: '2026-01-01T00:00:00.000Z', page: 0, defaultRetrievalChanged: [] },
      '2026-01-01T00:00:00.000Z',
    );

    await expect(completeUpload(knowledge.deps, tenant.caller, link.uploadId)).rejects.toMatchObject({
      status: 404,
      code: 'KNOWLEDGE_BASE_NOT_FOUND',
    });
  });

  it('refuses an update upload with 400 naming update/upload-complete', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const { link } = await uploadDocument(knowledge, tenant);
    const update = await createUpdateUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      s3Key: link.s3Key,
      fileName: 'v2.txt',
    });

    await expect(completeUpload(knowledge.deps, tenant.caller, update.uploadId)).rejects.toMatchObject({
      status: 400,
      details: [{ field: 'uploadId', rule: 'uploadKind', message: 'uploadId belongs to update/upload-complete' }],
    });
  });

  it('records the ZIP import job with the metadata every file inherits and queues process-zip', async () => {
    const { knowledge, tenant, link } = await linked({ fileName: 'batch.zip', label1: 'imported' });
    knowledge.blobs.putObject(link.s3Key, 'PK archive bytes');

    const completion = await completeUpload(knowledge.deps, tenant.caller, link.uploadId);

    expect(completion).toMatchObject({ type: 'zip_import', zipJobId: link.zipJobId, s3Key: link.s3Key });
    expect(await knowledge.zipJobs.get(link.zipJobId as string)).toMatchObject({
      status: 'uploaded',
      uploadId: link.uploadId,
      label1: 'imported',
      label2: null,
      customMeta1: null,
      fileCount: null,
    });
    expect(knowledge.queue.messages).toEqual([
      { kind: 'process-zip', ...tenant.dataset, zipJobId: link.zipJobId, uploadId: link.uploadId },
    ]);
    // The archive keeps its pending-upload tag: it is deleted once imported.
    expect(knowledge.blobs.objects.get(link.s3Key)?.pendingUpload).toBe(true);
    expect(knowledge.documents.all()).toEqual([]);
  });
});
