import { patchMetadata } from '#core/knowledge/patch-metadata';
import { inMemoryKnowledgeDeps } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

async function uploaded() {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant = await knowledge.tenant();
  const { link } = await uploadDocument(knowledge, tenant, { label1: 'old', customMeta1: 'kept' });
  return { knowledge, tenant, link };
}

describe('patchMetadata', () => {
  it('writes the given fields, clears the null ones, keeps the others, owes and queues sync-metadata', async () => {
    const { knowledge, tenant, link } = await uploaded();
    knowledge.clock.advanceSeconds(120);

    const view = await patchMetadata(knowledge.deps, tenant.caller, {
      ...tenant.dataset,
      s3Key: link.s3Key,
      label1: null,
      label2: 'new',
    });

    expect(view).toMatchObject({
      s3Key: link.s3Key,
      label1: null,
      label2: 'new',
      customMeta1: 'kept',
      updatedAt: '2026-01-01T00:02:00.000Z',
    });
    expect(await knowledge.documents.get(tenant.dataset, link.documentId as string)).toMatchObject({
      label1: null,
      label2: 'new',
      customMeta1: 'kept',
      status: 'uploaded',
    });
    expect(await knowledge.documents.getOwed(tenant.dataset, link.documentId as string, 'sync-metadata')).toMatchObject(
      { since: '2026-01-01T00:02:00.000Z' },
    );
    expect(knowledge.queue.messages.at(-1)).toEqual({
      kind: 'sync-metadata',
      ...tenant.dataset,
      documentId: link.documentId,
    });
  });

  it('refuses a request that changes nothing with 400 atLeastOneOf and queues nothing', async () => {
    const { knowledge, tenant, link } = await uploaded();
    const queued = knowledge.queue.messages.length;

    await expect(
      patchMetadata(knowledge.deps, tenant.caller, { ...tenant.dataset, s3Key: link.s3Key }),
    ).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR', details: [{ rule: 'atLeastOneOf' }] });
    expect(knowledge.queue.messages).toHaveLength(queued);
  });

  it("answers 404 for another organization's document, even when naming its s3Key in one's own dataset", async () => {
    const { knowledge, link } = await uploaded();
    const other = await knowledge.tenant('org-b');

    await expect(
      patchMetadata(knowledge.deps, other.caller, { ...other.dataset, s3Key: link.s3Key, label1: 'x' }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
    expect(knowledge.documents.all()[0]).toMatchObject({ label1: 'old' });
  });

  it('answers 404 when the s3Key names a document of another environment', async () => {
    const { knowledge, tenant, link } = await uploaded();

    await expect(
      patchMetadata(knowledge.deps, tenant.caller, {
        ...tenant.dataset,
        environment: 'production',
        s3Key: link.s3Key,
        label1: 'x',
      }),
    ).rejects.toMatchObject({ status: 404, code: 'DOCUMENT_NOT_FOUND' });
  });
});
