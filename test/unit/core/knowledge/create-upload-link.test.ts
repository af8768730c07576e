import { createUploadLink } from '#core/knowledge/create-upload-link';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';

describe('createUploadLink', () => {
  it('reserves the documentId, records a session and signs a PUT of the document s3Key', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    const link = await createUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      fileName: 'notes.txt',
      fileSize: 12,
      label1: 'faq',
    });

    const s3Key = `${tenant.agentId}/development/${tenant.knowledgeBaseId}/${link.documentId}/notes.txt`;
    expect(link).toMatchObject({ s3Key, expiresIn: 900 });
    expect(link.requiredHeaders).toMatchObject({ 'content-type': 'text/plain', 'content-length': '12' });
    expect(knowledge.blobs.signed).toEqual([
      { key: s3Key, conditions: { contentType: 'text/plain', contentLength: 12 }, expiresInSeconds: 900 },
    ]);
    const reserved = await knowledge.documents.get(tenant.dataset, link.documentId as string);
    expect(reserved).toMatchObject({
      status: 'reserved',
      uploadId: link.uploadId,
      organizationId: 'org-a',
      reservedUntil: '2026-01-01T01:00:00.000Z',
      label1: null,
    });
    const session = await knowledge.uploads.get(link.uploadId);
    expect(session).toMatchObject({ kind: 'create', metadata: { label1: 'faq' }, declaredSize: 12, completion: null });
    expect(knowledge.queue.messages).toEqual([]);
  });

  it('uses the customDocumentId as the documentId', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    const link = await createUploadLink(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      fileName: 'a.md',
      customDocumentId: 'handbook',
    });

    expect(link.documentId).toBe('handbook');
    expect(await knowledge.documents.get(tenant.dataset, 'handbook')).toMatchObject({
      customDocumentId: 'handbook',
      contentType: 'text/markdown',
    });
  });

  it('refuses a customDocumentId held by an unexpired reservation with 409 DUPLICATE_CUSTOM_DOCUMENT_ID', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const request = { ...tenant.dataset, fileName: 'a.txt', customDocumentId: 'handbook' };
    const first = await createUploadLink(knowledge.deps, tenant.caller, request);

    await expect(createUploadLink(knowledge.deps, tenant.caller, request)).rejects.toMatchObject({
      status: 409,
      code: 'DUPLICATE_CUSTOM_DOCUMENT_ID',
      details: [{ field: 'customDocumentId', rule: 'unique' }],
    });
    expect((await knowledge.documents.get(tenant.dataset, 'handbook'))?.uploadId).toBe(first.uploadId);
  });

  it('lets a new upload take the customDocumentId of a reservation that expired', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    const request = { ...tenant.dataset, fileName: 'a.txt', customDocumentId: 'handbook' };
    await createUploadLink(knowledge.deps, tenant.caller, request);
    knowledge.clock.advanceSeconds(3601);

    const second = await createUploadLink(knowledge.deps, tenant.caller, request);

    expect((await knowledge.documents.get(tenant.dataset, 'handbook'))?.uploadId).toBe(second.uploadId);
  });

  it('signs a ZIP archive under _imports with a zipJobId and reserves no document', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    const link = await createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'batch.ZIP' });

    expect(link.documentId).toBeUndefined();
    expect(link.zipJobId).toBeDefined();
    expect(link.s3Key).toBe(
      `${tenant.agentId}/development/${tenant.knowledgeBaseId}/_imports/${link.zipJobId}/batch.ZIP`,
    );
    expect(knowledge.documents.all()).toEqual([]);
    expect(await knowledge.uploads.get(link.uploadId)).toMatchObject({ kind: 'zip', zipJobId: link.zipJobId });
  });

  it('refuses a customDocumentId for a ZIP import with 400 customDocumentId.notForZip', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'b.zip', customDocumentId: 'x' }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
      details: [{ field: 'customDocumentId', rule: 'customDocumentId.notForZip' }],
    });
    expect(knowledge.uploads.records.size).toBe(0);
  });

  it('refuses a declared size above the document limit, and a larger one for an archive below its own', async () => {
    const knowledge = inMemoryKnowledgeDeps({ maxFileBytes: 100, maxArchiveBytes: 1000 });
    const tenant = await knowledge.tenant();

    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'a.txt', fileSize: 101 }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'fileSize', rule: 'fileSize.max' }] });
    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'a.zip', fileSize: 1000 }),
    ).resolves.toMatchObject({ expiresIn: 900 });
    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'a.zip', fileSize: 1001 }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'fileSize', rule: 'fileSize.max' }] });
  });

  it("answers 404 for another organization's agent, and for a knowledge base its agent does not have", async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant('org-a');
    const other = await knowledge.tenant('org-b');

    await expect(
      createUploadLink(knowledge.deps, tenant.caller, {
        ...other.dataset,
        agentId: tenant.agentId,
        fileName: 'a.txt',
      }),
    ).rejects.toMatchObject({ status: 404, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...other.dataset, fileName: 'a.txt' }),
    ).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
    expect(knowledge.documents.all()).toEqual([]);
  });

  it('answers 404 for a knowledge base being deleted', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();
    await knowledge.knowledgeBases.markDeleting(
      tenant.agentId,
      tenant.knowledgeBaseId,
      { startedAt: '2026-01-01T00:00:00.000Z', page: 0, defaultRetrievalChanged: [] },
      '2026-01-01T00:00:00.000Z',
    );

    await expect(
      createUploadLink(knowledge.deps, tenant.caller, { ...tenant.dataset, fileName: 'a.txt' }),
    ).rejects.toMatchObject({ status: 404, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
  });

  it('answers 404 AGENT_NOT_FOUND to a token restricted to other agents', async () => {
    const knowledge = inMemoryKnowledgeDeps();
    const tenant = await knowledge.tenant();

    await expect(
      createUploadLink(
        knowledge.deps,
        { ...tenant.caller, agentIds: ['agent-elsewhere'] },
        { ...tenant.dataset, fileName: 'a.txt' },
      ),
    ).rejects.toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
  });
});
