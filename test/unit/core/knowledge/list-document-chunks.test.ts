import { type ChunkListDeps, listDocumentChunks, SEARCH_SCAN_LIMIT } from '#core/knowledge/list-document-chunks';
import type {
  DocumentChunkPage,
  DocumentChunkRange,
  DocumentRef,
  IndexedChunk,
  KnowledgeChunkListing,
} from '#ports/processing';
import { chunksOf } from '../../../helpers/chunks';
import { inMemoryKnowledgeDeps, type Tenant } from '../../../helpers/in-memory-ports';
import { uploadDocument } from '../../../helpers/knowledge-steps';

/** An index holding given chunks per document (or none it can list: `unlisted`), counting the chunks it reads. */
class ListedChunks implements KnowledgeChunkListing {
  readonly chunks = new Map<string, IndexedChunk[]>();
  unlisted = false;
  read = 0;

  async listDocumentChunks(ref: DocumentRef, range: DocumentChunkRange): Promise<DocumentChunkPage | undefined> {
    if (this.unlisted) return undefined;
    const all = this.chunks.get(ref.documentId) ?? [];
    const page = all
      .filter((c) => range.afterPosition === null || c.position > range.afterPosition)
      .slice(0, range.limit);
    this.read += page.length;
    return { chunks: page, total: all.length };
  }
}

async function setup(status: 'uploaded' | 'ready' | 'failed', texts: readonly string[]) {
  const knowledge = inMemoryKnowledgeDeps();
  const tenant: Tenant = await knowledge.tenant();
  const { link } = await uploadDocument(knowledge, tenant, {}, 'content');
  const doc = await knowledge.deps.documents.get(tenant.dataset, link.documentId as string);
  if (!doc) throw new Error('no document');
  if (status !== 'uploaded') {
    const error = status === 'failed' ? { code: 'EMPTY_DOCUMENT', message: 'empty' } : null;
    await knowledge.deps.documents.setStatus(
      tenant.dataset,
      doc.documentId,
      doc.uploadId,
      status,
      error,
      doc.updatedAt,
    );
  }
  const index = new ListedChunks();
  index.chunks.set(doc.documentId, chunksOf({ ...tenant.dataset, documentId: doc.documentId }, texts));
  const deps: ChunkListDeps = { ...knowledge.deps, index };
  const request = { ...tenant.dataset, s3Key: link.s3Key };
  return { deps, index, tenant, request, knowledge };
}

describe('listDocumentChunks', () => {
  it('pages in position order; a page of exactly the rest ends the list (no token)', async () => {
    const { deps, tenant, request } = await setup('ready', ['a', 'b', 'c', 'd', 'e']);
    const first = await listDocumentChunks(deps, tenant.caller, { ...request, limit: 3 });
    expect(first).toMatchObject({ status: 'ready', total: 5 });
    expect(first.chunks.map((c) => [c.position, c.text])).toEqual([
      [0, 'a'],
      [1, 'b'],
      [2, 'c'],
    ]);
    expect(first.chunks[0].metadata).toMatchObject({ position: 0, chunkId: first.chunks[0].chunkId, label1: null });
    const rest = await listDocumentChunks(deps, tenant.caller, {
      ...request,
      limit: 2,
      nextToken: first.nextToken as string,
    });
    expect(rest.chunks.map((c) => c.text)).toEqual(['d', 'e']);
    expect(rest.nextToken).toBeNull();
  });

  it('a search reads at most SEARCH_SCAN_LIMIT chunks a request, and its token goes on from there', async () => {
    const texts = Array.from({ length: SEARCH_SCAN_LIMIT + 1500 }, (_, i) =>
      i === SEARCH_SCAN_LIMIT + 700 ? 'The NEEDLE is here' : `hay ${i}`,
    );
    const { deps, index, tenant, request } = await setup('ready', texts);
    const first = await listDocumentChunks(deps, tenant.caller, { ...request, q: 'needle' });
    expect(first.chunks).toEqual([]);
    expect(first.nextToken).not.toBeNull();
    expect(index.read).toBe(SEARCH_SCAN_LIMIT);
    const second = await listDocumentChunks(deps, tenant.caller, {
      ...request,
      q: 'needle',
      nextToken: first.nextToken as string,
    });
    expect(second.chunks.map((c) => c.position)).toEqual([SEARCH_SCAN_LIMIT + 700]);
    expect(second.nextToken).toBeNull();
    // A token is bound to its search.
    await expect(
      listDocumentChunks(deps, tenant.caller, { ...request, q: 'hay', nextToken: first.nextToken as string }),
    ).rejects.toMatchObject({ status: 400, details: [{ field: 'nextToken', rule: 'nextToken.query' }] });
  });

  it('an uploaded document shows what the index holds now, nothing when it keeps no listing for it yet', async () => {
    const { deps, index, tenant, request } = await setup('uploaded', ['previous content']);
    const held = await listDocumentChunks(deps, tenant.caller, request);
    expect(held).toMatchObject({ status: 'uploaded', total: 1 });
    index.unlisted = true;
    expect(await listDocumentChunks(deps, tenant.caller, request)).toEqual({
      status: 'uploaded',
      chunks: [],
      total: 0,
      nextToken: null,
    });
  });

  it('a failed document is 409 DOCUMENT_FAILED; a ready one the index cannot list, 409 CHUNKS_NOT_LISTED', async () => {
    const failed = await setup('failed', ['x']);
    await expect(listDocumentChunks(failed.deps, failed.tenant.caller, failed.request)).rejects.toMatchObject({
      status: 409,
      code: 'DOCUMENT_FAILED',
    });
    const ready = await setup('ready', ['x']);
    ready.index.unlisted = true;
    await expect(listDocumentChunks(ready.deps, ready.tenant.caller, ready.request)).rejects.toMatchObject({
      status: 409,
      code: 'CHUNKS_NOT_LISTED',
    });
  });

  it("another organization's document is 404", async () => {
    const { deps, request, knowledge } = await setup('ready', ['x']);
    const other = await knowledge.tenant('org-b');
    await expect(listDocumentChunks(deps, other.caller, request)).rejects.toMatchObject({ status: 404 });
  });
});
