/**
 * The Bedrock adapter against recording fakes of the two SDK clients (Bedrock cannot run here). Expected requests are
 * typed as the SDK's command inputs, so `tsc` checks their shapes; the fake data source keeps document statuses and
 * honours clientTokens the way Bedrock documents them (a repeated token is ignored), so idempotency is exercised.
 */

import {
  BedrockAgentClient,
  DeleteKnowledgeBaseDocumentsCommand,
  type DeleteKnowledgeBaseDocumentsCommandInput,
  type DocumentStatus,
  GetKnowledgeBaseDocumentsCommand,
  type GetKnowledgeBaseDocumentsCommandInput,
  IngestKnowledgeBaseDocumentsCommand,
  type IngestKnowledgeBaseDocumentsCommandInput,
  type KnowledgeBaseDocumentDetail,
  ListKnowledgeBaseDocumentsCommand,
  type ListKnowledgeBaseDocumentsCommandInput,
  type MetadataAttribute,
} from '@aws-sdk/client-bedrock-agent';
import {
  BedrockAgentRuntimeClient,
  type KnowledgeBaseRetrievalResult,
  type RetrievalFilter,
  RetrieveCommand,
  type RetrieveCommandInput,
} from '@aws-sdk/client-bedrock-agent-runtime';
import * as fc from 'fast-check';
import {
  bedrockDocumentId,
  LABEL_ORDER_PARTS,
  labelOrder,
  metadataAttributes,
  normalizeScore,
} from '#adapters/index/bedrock-documents';
import { toRetrievalFilter } from '#adapters/index/bedrock-filters';
import {
  BEDROCK_KNOWLEDGE_BASES_VARIABLE,
  type BedrockKnowledgeBases,
  BedrockKnowledgeIndex,
  type ChunkTextSource,
  readKnowledgeBases,
} from '#adapters/index/bedrock-knowledge-base';
import { ChunkManifests, chunkManifestKey } from '#adapters/index/chunk-manifests';
import { deployedKnowledgeIndex } from '#composition/knowledge-index';
import type { DatasetRef } from '#core/knowledge/document';
import { documentOfObjectKey } from '#core/processing/work';
import type { ChunkMetadata, DocumentRef, IndexedChunk, IndexFilter } from '#ports/processing';
import { NO_METADATA } from '../../../helpers/chunks';
import { InMemoryBlobStore } from '../../../helpers/in-memory-ports';

const AGENT = '11111111-1111-4111-8111-111111111111';
const KB = '22222222-2222-4222-8222-222222222222';
const DOC = '33333333-3333-4333-8333-333333333333';
const OTHER_DOC = '44444444-4444-4444-8444-444444444444';
const REF: DocumentRef = { agentId: AGENT, environment: 'staging', knowledgeBaseId: KB, documentId: DOC };
const SCOPE: DatasetRef = { agentId: AGENT, environment: 'staging', knowledgeBaseId: KB };
const KNOWLEDGE_BASES: BedrockKnowledgeBases = {
  development: { knowledgeBaseId: 'KBDEV00001', dataSourceId: 'DSDEV00001' },
  staging: { knowledgeBaseId: 'KBSTG00001', dataSourceId: 'DSSTG00001' },
  production: { knowledgeBaseId: 'KBPRD00001', dataSourceId: 'DSPRD00001' },
};
const STAGING = KNOWLEDGE_BASES.staging;

function chunk(position: number, overrides: Partial<IndexedChunk> = {}): IndexedChunk {
  const documentId = overrides.documentId ?? DOC;
  const text = overrides.text ?? `text of chunk ${position}`;
  return {
    ...REF,
    ...NO_METADATA,
    documentId,
    chunkId: `${documentId}#${position}#${Buffer.from(text).toString('hex').slice(0, 16)}`,
    s3Key: `agents/${AGENT}/staging/${KB}/report.pdf`,
    position,
    text,
    ...overrides,
  };
}

const chunks = (count: number, overrides: Partial<IndexedChunk> = {}) =>
  Array.from({ length: count }, (_, i) => chunk(i, overrides));

// ---------------------------------------------------------------------------------------------------------------
// Fakes

interface StoredDocument {
  status: DocumentStatus;
  updatedAt: Date;
  text: string;
  attributes: MetadataAttribute[];
}

/** A custom data source as Bedrock describes it: ingest overwrites by id, a repeated clientToken is ignored. */
class FakeBedrockAgent {
  readonly client = new BedrockAgentClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
  readonly commands: object[] = [];
  readonly documents = new Map<string, StoredDocument>();
  /** ListKnowledgeBaseDocuments page size (Bedrock's is maxResults; smaller here to exercise nextToken). */
  pageSize = 1000;
  private readonly tokens = new Set<string>();
  private clock = Date.parse('2030-01-01T00:00:00Z');
  /** Makes the n-th next call of a command throw before anything happens. */
  failNext: { command: string; after: number } | undefined;

  constructor() {
    (this.client as unknown as { send: (command: object) => Promise<unknown> }).send = (command) =>
      this.handle(command);
  }

  inputs<T>(type: abstract new (...args: never[]) => { input: T }): T[] {
    return this.commands.filter((c) => c instanceof type).map((c) => (c as { input: T }).input);
  }

  indexAll(status: DocumentStatus = 'INDEXED'): void {
    for (const document of this.documents.values()) if (document.status === 'STARTING') document.status = status;
  }

  private detail(id: string, status?: DocumentStatus): KnowledgeBaseDocumentDetail {
    const stored = this.documents.get(id);
    return {
      knowledgeBaseId: STAGING.knowledgeBaseId,
      dataSourceId: STAGING.dataSourceId,
      identifier: { dataSourceType: 'CUSTOM', custom: { id } },
      status: status ?? stored?.status ?? 'NOT_FOUND',
      ...(stored ? { updatedAt: stored.updatedAt } : {}),
    };
  }

  private seen(token: string | undefined): boolean {
    if (token === undefined) return false;
    if (this.tokens.has(token)) return true;
    this.tokens.add(token);
    return false;
  }

  private async handle(command: object): Promise<unknown> {
    const name = command.constructor.name;
    if (this.failNext?.command === name) {
      if (this.failNext.after === 0) {
        this.failNext = undefined;
        throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      }
      this.failNext.after--;
    }
    this.commands.push(command);
    if (command instanceof IngestKnowledgeBaseDocumentsCommand) {
      const input = command.input;
      const ids = (input.documents ?? []).map((d) => d.content?.custom?.customDocumentIdentifier?.id as string);
      if (!this.seen(input.clientToken)) {
        for (const document of input.documents ?? []) {
          this.clock += 1000;
          this.documents.set(document.content?.custom?.customDocumentIdentifier?.id as string, {
            status: 'STARTING',
            updatedAt: new Date(this.clock),
            text: document.content?.custom?.inlineContent?.textContent?.data as string,
            attributes: document.metadata?.inlineAttributes ?? [],
          });
        }
      }
      return { documentDetails: ids.map((id) => this.detail(id, 'STARTING')) };
    }
    if (command instanceof DeleteKnowledgeBaseDocumentsCommand) {
      const input = command.input;
      const ids = (input.documentIdentifiers ?? []).map((d) => d.custom?.id as string);
      if (!this.seen(input.clientToken)) for (const id of ids) this.documents.delete(id);
      return { documentDetails: ids.map((id) => this.detail(id, 'DELETING')) };
    }
    if (command instanceof GetKnowledgeBaseDocumentsCommand) {
      const ids = (command.input.documentIdentifiers ?? []).map((d) => d.custom?.id as string);
      return { documentDetails: ids.map((id) => this.detail(id)) };
    }
    if (command instanceof ListKnowledgeBaseDocumentsCommand) {
      const all = [...this.documents.keys()].sort();
      const start = command.input.nextToken ? Number(command.input.nextToken) : 0;
      const size = Math.min(this.pageSize, command.input.maxResults ?? 10);
      const page = all.slice(start, start + size);
      const next = start + size < all.length ? String(start + size) : undefined;
      return { documentDetails: page.map((id) => this.detail(id)), ...(next ? { nextToken: next } : {}) };
    }
    throw new Error(`Unexpected command ${name}`);
  }
}

class FakeRuntime {
  readonly client = new BedrockAgentRuntimeClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
  readonly inputs: RetrieveCommandInput[] = [];
  results: KnowledgeBaseRetrievalResult[] = [];

  constructor() {
    (this.client as unknown as { send: (command: object) => Promise<unknown> }).send = async (command) => {
      if (!(command instanceof RetrieveCommand)) throw new Error('Unexpected command');
      this.inputs.push(command.input);
      return { retrievalResults: this.results };
    };
  }
}

function setup(chunkTexts: ChunkTextSource = { chunksOf: async () => [] }) {
  const agent = new FakeBedrockAgent();
  const runtime = new FakeRuntime();
  const index = new BedrockKnowledgeIndex({
    agentClient: agent.client,
    runtimeClient: runtime.client,
    knowledgeBases: KNOWLEDGE_BASES,
    chunkTexts,
    manifests: new ChunkManifests(new InMemoryBlobStore()),
  });
  return { agent, runtime, index };
}

/** Another process (a later Lambda invocation) over the same fake data source: nothing remembered. */
function anotherProcess(agent: FakeBedrockAgent, runtime: FakeRuntime, chunkTexts?: ChunkTextSource) {
  return new BedrockKnowledgeIndex({
    agentClient: agent.client,
    runtimeClient: runtime.client,
    knowledgeBases: KNOWLEDGE_BASES,
    chunkTexts: chunkTexts ?? { chunksOf: async () => [] },
    manifests: new ChunkManifests(new InMemoryBlobStore()),
  });
}

const idOf = (c: IndexedChunk) => bedrockDocumentId(c);
const storedIds = (agent: FakeBedrockAgent) => [...agent.documents.keys()].sort();
const attribute = (stored: StoredDocument, key: string) => stored.attributes.find((a) => a.key === key)?.value;

// ---------------------------------------------------------------------------------------------------------------

describe('chunk → Bedrock custom document', () => {
  test('replaceDocument ingests a chunk as an inline text document with every metadata attribute', async () => {
    const { agent, index } = setup();
    const labelled = chunk(0, {
      text: 'Refunds are paid within 14 days.',
      label1: 'topic:billing',
      label2: null,
      svc_internal_meta1: 'crm-7',
      svc_internal_meta2: '',
    });
    await index.replaceDocument(REF, [labelled]);

    const expected: IngestKnowledgeBaseDocumentsCommandInput = {
      knowledgeBaseId: 'KBSTG00001',
      dataSourceId: 'DSSTG00001',
      clientToken: expect.stringMatching(/^[0-9a-f]{64}$/),
      documents: [
        {
          content: {
            dataSourceType: 'CUSTOM',
            custom: {
              customDocumentIdentifier: { id: `${AGENT}/${KB}/${labelled.chunkId}` },
              sourceType: 'IN_LINE',
              inlineContent: { type: 'TEXT', textContent: { data: 'Refunds are paid within 14 days.' } },
            },
          },
          metadata: {
            type: 'IN_LINE_ATTRIBUTE',
            inlineAttributes: [
              { key: 'agentId', value: { type: 'STRING', stringValue: AGENT } },
              { key: 'knowledgeBaseId', value: { type: 'STRING', stringValue: KB } },
              { key: 'environment', value: { type: 'STRING', stringValue: 'staging' } },
              { key: 'documentId', value: { type: 'STRING', stringValue: DOC } },
              { key: 'chunkId', value: { type: 'STRING', stringValue: labelled.chunkId } },
              { key: 's3Key', value: { type: 'STRING', stringValue: labelled.s3Key } },
              { key: 'position', value: { type: 'NUMBER', numberValue: 0 } },
              { key: 'label1', value: { type: 'STRING', stringValue: 'topic:billing' } },
              ...labelOrder('topic:billing').map((part, i) => ({
                key: `label1_order${i}`,
                value: { type: 'NUMBER' as const, numberValue: part },
              })),
              { key: 'svc_internal_meta1', value: { type: 'STRING', stringValue: '=crm-7' } },
              { key: 'svc_internal_meta2', value: { type: 'STRING', stringValue: '=' } },
            ],
          },
        },
      ],
    };
    expect(agent.inputs(IngestKnowledgeBaseDocumentsCommand)).toEqual([expected]);
  });

  test('null labels and custom metadata are left out, so notEquals matches them as it does locally', () => {
    const keys = metadataAttributes(chunk(3)).map((a) => a.key);
    expect(keys).toEqual(['agentId', 'knowledgeBaseId', 'environment', 'documentId', 'chunkId', 's3Key', 'position']);
  });

  test('ids are percent-encoded outside [A-Za-z0-9._:#/-], and a chunkId of another document is refused', () => {
    expect(bedrockDocumentId(chunk(0, { chunkId: `${DOC}#0#a b%é` }))).toBe(`${AGENT}/${KB}/${DOC}#0#a%20b%25%C3%A9`);
    expect(() => bedrockDocumentId(chunk(0, { chunkId: `${OTHER_DOC}#0#ab` }))).toThrow(/must start with/);
    expect(() => bedrockDocumentId(chunk(0, { chunkId: `${DOC}#0#${'x'.repeat(2000)}` }))).toThrow(/max 2048/);
  });
});

describe('replaceDocument', () => {
  test('ingests 60 chunks in batches of 10, after listing the data source 1,000 at a time', async () => {
    const { agent, index } = setup();
    await index.replaceDocument(REF, chunks(60));

    expect(agent.inputs(IngestKnowledgeBaseDocumentsCommand).map((i) => i.documents?.length)).toEqual([
      10, 10, 10, 10, 10, 10,
    ]);
    const list: ListKnowledgeBaseDocumentsCommandInput = {
      knowledgeBaseId: 'KBSTG00001',
      dataSourceId: 'DSSTG00001',
      maxResults: 1000,
    };
    expect(agent.inputs(ListKnowledgeBaseDocumentsCommand)).toEqual([list]);
    // The new ids are then checked, 10 a call (GetKnowledgeBaseDocuments' limit).
    expect(agent.inputs(GetKnowledgeBaseDocumentsCommand).map((i) => i.documentIdentifiers?.length)).toEqual([
      10, 10, 10, 10, 10, 10,
    ]);
    expect(storedIds(agent)).toEqual(chunks(60).map(idOf).sort());
  });

  test('clientTokens are deterministic: the same call from the same state sends the same tokens', async () => {
    const first = setup();
    const second = setup();
    await first.index.replaceDocument(REF, chunks(30));
    await second.index.replaceDocument(REF, chunks(30));
    const tokens = (agent: FakeBedrockAgent) =>
      agent.inputs(IngestKnowledgeBaseDocumentsCommand).map((i) => i.clientToken);
    expect(tokens(second.agent)).toEqual(tokens(first.agent));
    expect(new Set(tokens(first.agent)).size).toBe(3);
  });

  test('a retry after a throttled batch resends that batch with its token; an applied batch gets a new one', async () => {
    const clean = setup();
    await clean.index.replaceDocument(REF, chunks(30));
    const [t1, t2, t3] = clean.agent.inputs(IngestKnowledgeBaseDocumentsCommand).map((i) => i.clientToken);

    const { agent, index } = setup();
    agent.failNext = { command: 'IngestKnowledgeBaseDocumentsCommand', after: 1 };
    await expect(index.replaceDocument(REF, chunks(30))).rejects.toThrow('Rate exceeded');
    await index.replaceDocument(REF, chunks(30));

    const sent = agent.inputs(IngestKnowledgeBaseDocumentsCommand).map((i) => i.clientToken);
    // Batch 1 was applied before the throttle: its documents changed, so resending it is a new request (it
    // overwrites them with the same content). Batches 2 and 3 never reached Bedrock: same tokens as a clean run.
    expect(sent).toHaveLength(4);
    expect(sent[0]).toBe(t1);
    expect(sent[1]).not.toBe(t1);
    expect(sent.slice(2)).toEqual([t2, t3]);
    expect(storedIds(agent)).toEqual(storedIds(clean.agent));
  });

  test('deletes the previous version ids that are not in the new set, 10 a call, and no other document', async () => {
    const { agent, index } = setup();
    agent.pageSize = 7; // several pages: the listing follows nextToken
    const otherChunks = chunks(4, { documentId: OTHER_DOC });
    await index.replaceDocument({ ...REF, documentId: OTHER_DOC }, otherChunks);
    const previous = Array.from({ length: 30 }, (_, i) => chunk(i, { text: `old ${i}` }));
    await index.replaceDocument(REF, previous);
    agent.commands.length = 0;

    // Positions 0-4 keep their text (same ids); 5-7 are new; the previous 5-29 must go.
    const next = [...previous.slice(0, 5), ...[5, 6, 7].map((i) => chunk(i, { text: `new ${i}` }))];
    await index.replaceDocument(REF, next);

    expect(agent.inputs(ListKnowledgeBaseDocumentsCommand).length).toBeGreaterThan(1);
    const deletes = agent.inputs(DeleteKnowledgeBaseDocumentsCommand);
    expect(deletes.map((d) => d.documentIdentifiers?.length)).toEqual([10, 10, 5]);
    const first: DeleteKnowledgeBaseDocumentsCommandInput = {
      knowledgeBaseId: 'KBSTG00001',
      dataSourceId: 'DSSTG00001',
      clientToken: expect.stringMatching(/^[0-9a-f]{64}$/),
      documentIdentifiers: previous
        .slice(5)
        .map(idOf)
        .sort()
        .slice(0, 10)
        .map((id) => ({ dataSourceType: 'CUSTOM', custom: { id } })),
    };
    expect(deletes[0]).toEqual(first);
    expect(storedIds(agent)).toEqual([...next.map(idOf), ...otherChunks.map(idOf)].sort());
  });

  test('content A, then B, then A again: the second A is not swallowed as a duplicate of the first', async () => {
    const { agent, index } = setup();
    const a = [0, 1, 2].map((i) => chunk(i, { text: `A ${i}` }));
    const b = [0, 1, 2].map((i) => chunk(i, { text: `B ${i}` }));
    await index.replaceDocument(REF, a);
    await index.replaceDocument(REF, b);
    await index.replaceDocument(REF, a);
    expect(storedIds(agent)).toEqual(a.map(idOf).sort());
    expect([...agent.documents.values()].map((d) => d.text).sort()).toEqual(['A 0', 'A 1', 'A 2']);
  });

  test('a replacement after the document was deleted is indexed again (the fresh-token repair)', async () => {
    const { agent, index } = setup();
    await index.replaceDocument(REF, chunks(12));
    await index.deleteDocument(REF);
    expect(storedIds(agent)).toEqual([]);
    agent.commands.length = 0;
    await index.replaceDocument(REF, chunks(12));

    expect(storedIds(agent)).toEqual(chunks(12).map(idOf).sort());
    const tokens = agent.inputs(IngestKnowledgeBaseDocumentsCommand).map((i) => i.clientToken ?? '');
    // The deterministic token repeats the swallowed one; the repair batch carries a fresh UUID.
    expect(tokens.at(-1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  test('refuses chunks of another document or a repeated chunkId', async () => {
    const { index } = setup();
    await expect(index.replaceDocument(REF, [chunk(0, { documentId: OTHER_DOC })])).rejects.toThrow(/does not belong/);
    await expect(index.replaceDocument(REF, [chunk(0), chunk(0)])).rejects.toThrow(/Duplicate chunkId/);
  });
});

describe('countDocumentChunks', () => {
  test('counts the chunks Bedrock reports INDEXED, looking up the ingested ids 10 at a time', async () => {
    const { agent, index } = setup();
    await index.replaceDocument(REF, chunks(23));
    expect(await index.countDocumentChunks(REF)).toBe(0);

    agent.indexAll();
    const ids = chunks(23).map(idOf);
    const failed = agent.documents.get(ids[4]);
    if (failed) failed.status = 'FAILED';
    agent.commands.length = 0;
    expect(await index.countDocumentChunks(REF)).toBe(22);
    const get: GetKnowledgeBaseDocumentsCommandInput = {
      knowledgeBaseId: 'KBSTG00001',
      dataSourceId: 'DSSTG00001',
      documentIdentifiers: ids.slice(0, 10).map((id) => ({ dataSourceType: 'CUSTOM', custom: { id } })),
    };
    expect(agent.inputs(GetKnowledgeBaseDocumentsCommand)[0]).toEqual(get);
    expect(agent.inputs(GetKnowledgeBaseDocumentsCommand).map((i) => i.documentIdentifiers?.length)).toEqual([
      10, 10, 3,
    ]);
  });

  test('another process lists the data source and counts the document ids that are INDEXED', async () => {
    const { agent, runtime, index } = setup();
    await index.replaceDocument({ ...REF, documentId: OTHER_DOC }, chunks(5, { documentId: OTHER_DOC }));
    await index.replaceDocument(REF, chunks(8));
    agent.indexAll();
    const later = anotherProcess(agent, runtime);
    agent.commands.length = 0;
    expect(await later.countDocumentChunks(REF)).toBe(8);
    expect(agent.inputs(ListKnowledgeBaseDocumentsCommand)).toHaveLength(1);
    expect(agent.inputs(GetKnowledgeBaseDocumentsCommand)).toHaveLength(0);
  });
});

describe('deleteDocument', () => {
  test('deletes every id of the document, 10 a call, and nothing of other documents', async () => {
    const { agent, index } = setup();
    await index.replaceDocument({ ...REF, documentId: OTHER_DOC }, chunks(2, { documentId: OTHER_DOC }));
    await index.replaceDocument(REF, chunks(23));
    agent.commands.length = 0;
    await index.deleteDocument(REF);
    expect(agent.inputs(DeleteKnowledgeBaseDocumentsCommand).map((i) => i.documentIdentifiers?.length)).toEqual([
      10, 10, 3,
    ]);
    expect(storedIds(agent)).toEqual(chunks(2, { documentId: OTHER_DOC }).map(idOf).sort());
  });

  test('nothing to remove is not an error and sends no delete', async () => {
    const { agent, index } = setup();
    await index.deleteDocument(REF);
    expect(agent.inputs(DeleteKnowledgeBaseDocumentsCommand)).toEqual([]);
  });
});

describe('listDocumentChunks (the chunk manifest)', () => {
  /** Two processes (the worker that ingests, the API function that lists) over one data source and one bucket. */
  function withManifests() {
    const agent = new FakeBedrockAgent();
    const runtime = new FakeRuntime();
    const blobs = new InMemoryBlobStore();
    const index = new BedrockKnowledgeIndex({
      agentClient: agent.client,
      runtimeClient: runtime.client,
      knowledgeBases: KNOWLEDGE_BASES,
      chunkTexts: { chunksOf: async () => chunks(12) },
      manifests: new ChunkManifests(blobs),
    });
    return { agent, blobs, index, listing: new ChunkManifests(blobs) };
  }
  const positions = (page: { chunks: readonly { position: number }[] } | undefined) =>
    page?.chunks.map((c) => c.position);

  test('pages through the chunks as ingested, in position order, as the query reads them back', async () => {
    const { index, listing } = withManifests();
    const ingested = chunks(12, { label1: 'team:a', svc_internal_meta2: 'm2' });
    await index.replaceDocument(REF, [...ingested].reverse(), { uploadId: 'upload-1', previous: [] });
    const first = await listing.listDocumentChunks(REF, { afterPosition: null, limit: 5 });
    expect(positions(first)).toEqual([0, 1, 2, 3, 4]);
    expect(first?.total).toBe(12);
    expect(positions(await listing.listDocumentChunks(REF, { afterPosition: 9, limit: 5 }))).toEqual([10, 11]);
    expect(positions(await listing.listDocumentChunks(REF, { afterPosition: 11, limit: 5 }))).toEqual([]);
    const { vector: _vector, ...expected } = ingested[3];
    expect(first?.chunks[3]).toEqual(expected);
  });

  test('follows a metadata change, and leaves another upload alone', async () => {
    const { agent, index, listing } = withManifests();
    await index.replaceDocument(REF, chunks(12), { uploadId: 'upload-1', previous: [] });
    agent.indexAll();
    const metadata = { ...NO_METADATA, label2: 'tier:gold', svc_internal_meta4: 'owner' };
    await index.updateDocumentMetadata(REF, metadata, {
      uploadId: 'upload-1',
      indexed: [{ uploadId: 'upload-1', count: 12 }],
    });
    const page = await listing.listDocumentChunks(REF, { afterPosition: null, limit: 100 });
    expect(page?.chunks).toHaveLength(12);
    for (const listed of page?.chunks ?? []) expect(listed).toMatchObject(metadata);
    // An update for an upload the manifest is not of changes nothing there.
    await index.updateDocumentMetadata(REF, NO_METADATA, { uploadId: 'upload-0', indexed: [] });
    expect((await listing.listDocumentChunks(REF, { afterPosition: null, limit: 1 }))?.chunks[0]).toMatchObject(
      metadata,
    );
  });

  test("goes with the document's chunks: deleteDocument, or deleteUploads of its upload (not another's)", async () => {
    const { index, listing } = withManifests();
    await index.replaceDocument(REF, chunks(3), { uploadId: 'upload-2', previous: [] });
    await index.deleteUploads(REF, [{ uploadId: 'upload-1', count: 3 }]);
    expect(positions(await listing.listDocumentChunks(REF, { afterPosition: null, limit: 10 }))).toEqual([0, 1, 2]);
    await index.deleteUploads(REF, [{ uploadId: 'upload-2', count: 3 }]);
    expect(await listing.listDocumentChunks(REF, { afterPosition: null, limit: 10 })).toBeUndefined();
    await index.replaceDocument(REF, chunks(3));
    expect((await listing.listDocumentChunks(REF, { afterPosition: null, limit: 10 }))?.total).toBe(3);
    await index.deleteDocument(REF);
    expect(await listing.listDocumentChunks(REF, { afterPosition: null, limit: 10 })).toBeUndefined();
  });

  test('reads a manifest again when it met one half rewritten (s3rver writes in place), and fails if it stays so', async () => {
    const { blobs, index } = withManifests();
    await index.replaceDocument(REF, chunks(4), { uploadId: 'upload-1', previous: [] });
    const whole = blobs.objects.get(chunkManifestKey(REF))?.bytes as Buffer;
    expect(whole).toBeDefined();
    // The first read meets the first half of the object (a writer replacing it); the second the whole.
    let reads = 0;
    const halfThenWhole = {
      get: async (key: string) => (++reads === 1 ? whole.subarray(0, whole.length >> 1) : blobs.get(key)),
      put: blobs.put.bind(blobs),
      delete: blobs.delete.bind(blobs),
    };
    const page = await new ChunkManifests(halfThenWhole).listDocumentChunks(REF, { afterPosition: null, limit: 10 });
    expect([reads, page?.total]).toEqual([2, 4]);
    const alwaysHalf = { ...halfThenWhole, get: async () => whole.subarray(0, whole.length >> 1) };
    await expect(
      new ChunkManifests(alwaysHalf).listDocumentChunks(REF, { afterPosition: null, limit: 10 }),
    ).rejects.toThrow();
  });

  test('lives beside the document under _chunks/, a key the processing queue ignores', async () => {
    const { blobs, index } = withManifests();
    await index.replaceDocument(REF, chunks(2), { uploadId: 'upload-1', previous: [] });
    const keys = [...blobs.objects.keys()];
    expect(keys).toEqual([chunkManifestKey(REF)]);
    expect(keys[0]).toBe(`${AGENT}/staging/${KB}/${DOC}/_chunks/manifest.json.gz`);
    expect(documentOfObjectKey(keys[0])).toBeUndefined();
  });
});

describe('updateDocumentMetadata', () => {
  const labels = (label1: string | null): ChunkMetadata => ({ ...NO_METADATA, label1, svc_internal_meta4: 'm4' });

  test('re-ingests the indexed chunks with their text and the new metadata', async () => {
    const source = chunks(3);
    const { agent, runtime, index } = setup();
    await index.replaceDocument(REF, source);
    agent.indexAll();
    const later = anotherProcess(agent, runtime, { chunksOf: async () => [...source, chunk(3)] });
    agent.commands.length = 0;
    await later.updateDocumentMetadata(REF, labels('topic:sales'));

    const ingests = agent.inputs(IngestKnowledgeBaseDocumentsCommand);
    // chunk 3 is not in the index (new content being processed): it is left to that processing.
    expect(
      ingests.flatMap((i) => i.documents ?? []).map((d) => d.content?.custom?.customDocumentIdentifier?.id),
    ).toEqual(source.map(idOf));
    for (const stored of agent.documents.values()) {
      expect(attribute(stored, 'label1')).toEqual({ type: 'STRING', stringValue: 'topic:sales' });
      expect(attribute(stored, 'svc_internal_meta4')).toEqual({ type: 'STRING', stringValue: '=m4' });
      expect(stored.text).toMatch(/^text of chunk /);
    }
  });

  test('labels changed X → Y → X end as X (the third update is not taken for the first)', async () => {
    const source = chunks(2);
    const { agent, index } = setup({ chunksOf: async () => source });
    await index.replaceDocument(REF, source);
    for (const label of ['topic:x', 'topic:y', 'topic:x']) {
      agent.indexAll();
      await index.updateDocumentMetadata(REF, labels(label));
    }
    for (const stored of agent.documents.values()) {
      expect(attribute(stored, 'label1')).toEqual({ type: 'STRING', stringValue: 'topic:x' });
    }
  });

  test('a document with nothing indexed sends nothing and does not read its chunks', async () => {
    const chunksOf = jest.fn(async () => chunks(2));
    const { agent, index } = setup({ chunksOf });
    await index.updateDocumentMetadata(REF, labels('topic:x'));
    expect(chunksOf).not.toHaveBeenCalled();
    expect(agent.inputs(IngestKnowledgeBaseDocumentsCommand)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Filters

const scopeFilters: RetrievalFilter[] = [
  { equals: { key: 'agentId', value: AGENT } },
  { equals: { key: 'knowledgeBaseId', value: KB } },
  { equals: { key: 'environment', value: 'staging' } },
];

/** Bedrock's documented semantics over a chunk's attributes; notEquals also matches a missing key. */
function evaluate(filter: RetrievalFilter, attributes: readonly MetadataAttribute[]): boolean {
  const attributeValue = (key: string | undefined) => {
    const v = attributes.find((a) => a.key === key)?.value;
    return v?.type === 'NUMBER' ? v.numberValue : v?.stringValue;
  };
  if (filter.andAll) return filter.andAll.every((f) => evaluate(f, attributes));
  if (filter.orAll) return filter.orAll.some((f) => evaluate(f, attributes));
  const [operator, attr] = Object.entries(filter)[0] as [string, { key: string; value: unknown }];
  const actual = attributeValue(attr.key);
  switch (operator) {
    case 'equals':
      return actual !== undefined && actual === attr.value;
    case 'notEquals':
      return actual === undefined || actual !== attr.value;
    case 'greaterThan':
      return typeof actual === 'number' && actual > (attr.value as number);
    case 'lessThan':
      return typeof actual === 'number' && actual < (attr.value as number);
    default:
      throw new Error(`operator ${operator} not used by the adapter`);
  }
}

/** Every andAll / orAll has 2 to 5 members, and every range value is a number. */
function checkShape(filter: RetrievalFilter): void {
  const group = filter.andAll ?? filter.orAll;
  if (group) {
    expect(group.length).toBeGreaterThanOrEqual(2);
    expect(group.length).toBeLessThanOrEqual(5);
    group.forEach(checkShape);
    return;
  }
  expect(Object.keys(filter)).toHaveLength(1);
  if (filter.greaterThan) expect(typeof filter.greaterThan.value).toBe('number');
  if (filter.lessThan) expect(typeof filter.lessThan.value).toBe('number');
}

describe('toRetrievalFilter', () => {
  test('no label filter: the tenant scope alone, as one andAll', () => {
    expect(toRetrievalFilter(SCOPE, [])).toEqual({ andAll: scopeFilters });
  });

  test.each<[IndexFilter, RetrievalFilter]>([
    [
      { key: 'label1', operator: 'equals', value: 'topic:billing' },
      { equals: { key: 'label1', value: 'topic:billing' } },
    ],
    [{ key: 'label2', operator: 'notEquals', value: 'lang:en' }, { notEquals: { key: 'label2', value: 'lang:en' } }],
    [
      { key: 'label1', operator: 'greaterThan', value: 'v:2' },
      { greaterThan: { key: 'label1_order0', value: labelOrder('v:2')[0] } },
    ],
    [
      { key: 'label2', operator: 'lessThan', value: 'v:2' },
      { lessThan: { key: 'label2_order0', value: labelOrder('v:2')[0] } },
    ],
    [
      { key: 'label1', operator: 'greaterThan', value: 'topic:billing' },
      {
        orAll: [
          { greaterThan: { key: 'label1_order0', value: labelOrder('topic:billing')[0] } },
          {
            andAll: [
              { equals: { key: 'label1_order0', value: labelOrder('topic:billing')[0] } },
              { greaterThan: { key: 'label1_order1', value: labelOrder('topic:billing')[1] } },
            ],
          },
        ],
      },
    ],
  ])('a single %o filter is ANDed with the tenant scope', (filter, translated) => {
    const result = toRetrievalFilter(SCOPE, [filter]);
    expect(result).toEqual({ andAll: [...scopeFilters, translated] });
    checkShape(result);
  });

  test('many filters nest so that no andAll has more than 5 members', () => {
    const filters: IndexFilter[] = Array.from({ length: 7 }, (_, i) => ({
      key: 'label1',
      operator: 'notEquals',
      value: `topic:t${i}`,
    }));
    const result = toRetrievalFilter(SCOPE, filters);
    checkShape(result);
    expect(result.andAll?.slice(0, 4)).toEqual([...scopeFilters, { notEquals: { key: 'label1', value: 'topic:t0' } }]);
    const matching = metadataAttributes(chunk(0, { label1: 'topic:other' }));
    expect(evaluate(result, matching)).toBe(true);
    expect(evaluate(result, metadataAttributes(chunk(0, { label1: 'topic:t6' })))).toBe(false);
    expect(evaluate(result, metadataAttributes(chunk(0, { agentId: 'someone-else', label1: 'topic:other' })))).toBe(
      false,
    );
  });

  test('a custom metadata key or an unknown operator is refused', () => {
    expect(() =>
      toRetrievalFilter(SCOPE, [{ key: 'svc_internal_meta1' as 'label1', operator: 'equals', value: 'x' }]),
    ).toThrow(/only label1, label2 are filterable/);
    expect(() => toRetrievalFilter(SCOPE, [{ key: 'label1', operator: 'startsWith' as 'equals', value: 'x' }])).toThrow(
      /Unknown filter operator/,
    );
  });

  const labelArbitrary = fc
    .array(fc.constantFrom(...'-0123456789:_abcdefghijklmnopqrstuvwxyz'), { minLength: 1, maxLength: 50 })
    .map((chars) => chars.join(''));
  const valueArbitrary = fc.oneof(
    labelArbitrary,
    fc.string({ unit: 'binary', minLength: 0, maxLength: 70 }),
    labelArbitrary.chain((label) => fc.nat(label.length).map((n) => label.slice(0, n))),
    labelArbitrary.chain((label) => fc.string({ maxLength: 10 }).map((tail) => label + tail)),
  );
  const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

  test.each(['greaterThan', 'lessThan'] as const)(
    '%s on a label matches exactly the labels the local index matches (byte-wise), never a missing label',
    (operator) => {
      fc.assert(
        fc.property(fc.option(labelArbitrary, { nil: null }), valueArbitrary, (label, value) => {
          const filter = toRetrievalFilter(SCOPE, [{ key: 'label2', operator, value }]);
          checkShape(filter);
          const matched = evaluate(filter, metadataAttributes(chunk(0, { label2: label })));
          const expected =
            label !== null && (operator === 'greaterThan' ? byteOrder(label, value) > 0 : byteOrder(label, value) < 0);
          expect(matched).toBe(expected);
        }),
        { numRuns: 2000 },
      );
    },
  );

  test('equals and notEquals match as the local index does, a missing label included', () => {
    fc.assert(
      fc.property(fc.option(labelArbitrary, { nil: null }), labelArbitrary, (label, value) => {
        const attributes = metadataAttributes(chunk(0, { label1: label }));
        const equals = evaluate(toRetrievalFilter(SCOPE, [{ key: 'label1', operator: 'equals', value }]), attributes);
        const notEquals = evaluate(
          toRetrievalFilter(SCOPE, [{ key: 'label1', operator: 'notEquals', value }]),
          attributes,
        );
        expect(equals).toBe(label === value);
        expect(notEquals).toBe(label !== value);
      }),
    );
  });

  test('the label order parts are integers a double holds exactly', () => {
    const parts = labelOrder('z'.repeat(80));
    expect(parts).toHaveLength(LABEL_ORDER_PARTS);
    for (const part of parts) expect(Number.isSafeInteger(part)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Retrieval

function result(overrides: Record<string, unknown>, score?: number): KnowledgeBaseRetrievalResult {
  return {
    content: { type: 'TEXT', text: 'Refunds are paid within 14 days.' },
    location: { type: 'CUSTOM', customDocumentLocation: { id: `${AGENT}/${KB}/${DOC}#2#abc` } },
    ...(score === undefined ? {} : { score }),
    metadata: {
      agentId: AGENT,
      knowledgeBaseId: KB,
      environment: 'staging',
      documentId: DOC,
      chunkId: `${DOC}#2#abc`,
      s3Key: 'agents/a/report.pdf',
      position: 2,
      label1: 'topic:billing',
      svc_internal_meta1: '=crm-7',
      svc_internal_meta2: '=',
      'x-amz-bedrock-kb-source-uri': `${AGENT}/${KB}/${DOC}#2#abc`,
      'x-amz-bedrock-kb-data-source-id': 'DSSTG00001',
      ...overrides,
    },
  };
}

describe('query', () => {
  test('sends Retrieve to the environment knowledge base with numberOfResults and the translated filter', async () => {
    const { runtime, index } = setup();
    const filters: IndexFilter[] = [{ key: 'label1', operator: 'equals', value: 'topic:billing' }];
    await index.query({ scope: SCOPE, text: 'refund policy', filters, limit: 7 });
    const expected: RetrieveCommandInput = {
      knowledgeBaseId: 'KBSTG00001',
      retrievalQuery: { text: 'refund policy' },
      retrievalConfiguration: {
        vectorSearchConfiguration: {
          numberOfResults: 7,
          filter: { andAll: [...scopeFilters, { equals: { key: 'label1', value: 'topic:billing' } }] },
        },
      },
    };
    expect(runtime.inputs).toEqual([expected]);
  });

  test('asks for at most 100 results and sends nothing for an empty query or limit', async () => {
    const { runtime, index } = setup();
    await index.query({ scope: SCOPE, text: 'x', filters: [], limit: 500 });
    expect(runtime.inputs[0].retrievalConfiguration?.vectorSearchConfiguration?.numberOfResults).toBe(100);
    expect(await index.query({ scope: SCOPE, text: '   ', filters: [], limit: 5 })).toEqual([]);
    expect(await index.query({ scope: SCOPE, text: 'x', filters: [], limit: 0 })).toEqual([]);
    expect(runtime.inputs).toHaveLength(1);
  });

  test('maps the result metadata back to the chunk fields (absent → null, custom metadata unprefixed)', async () => {
    const { runtime, index } = setup();
    runtime.results = [result({}, 0.61)];
    const hits = await index.query({ scope: SCOPE, text: 'refund', filters: [], limit: 5 });
    expect(hits).toEqual([
      {
        score: 0.61,
        chunk: {
          chunkId: `${DOC}#2#abc`,
          agentId: AGENT,
          environment: 'staging',
          knowledgeBaseId: KB,
          documentId: DOC,
          s3Key: 'agents/a/report.pdf',
          position: 2,
          text: 'Refunds are paid within 14 days.',
          label1: 'topic:billing',
          label2: null,
          svc_internal_meta1: 'crm-7',
          svc_internal_meta2: '',
          svc_internal_meta3: null,
          svc_internal_meta4: null,
        },
      },
    ]);
  });

  test('drops a result of another tenant or one failing the filters, whatever Bedrock returned', async () => {
    const { runtime, index } = setup();
    runtime.results = [
      result({ agentId: '99999999-9999-4999-8999-999999999999' }, 0.9),
      result({ knowledgeBaseId: 'other' }, 0.9),
      result({ environment: 'production' }, 0.9),
      result({ label1: 'topic:sales' }, 0.8),
      result({ position: 'not a number' }, 0.8),
      result({}, 0.5),
    ];
    const filters: IndexFilter[] = [{ key: 'label1', operator: 'lessThan', value: 'topic:c' }];
    const hits = await index.query({ scope: SCOPE, text: 'refund', filters, limit: 5 });
    expect(hits.map((h) => [h.chunk.label1, h.score])).toEqual([['topic:billing', 0.5]]);
  });

  test.each([
    [0.73, 0.73],
    [1.4, 1],
    [-0.2, 0],
    [undefined, 0],
    [Number.NaN, 0],
  ])('a Bedrock score of %p is %p on the 0..1 scale', (score, expected) => {
    expect(normalizeScore(score)).toBe(expected);
  });

  test('hits come back best first, limited to the requested number', async () => {
    const { runtime, index } = setup();
    runtime.results = [result({ chunkId: 'a' }, 0.2), result({ chunkId: 'b' }, 0.9), result({ chunkId: 'c' }, 0.5)];
    const hits = await index.query({ scope: SCOPE, text: 'q', filters: [], limit: 2 });
    expect(hits.map((h) => [h.chunk.chunkId, h.score])).toEqual([
      ['b', 0.9],
      ['c', 0.5],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('configuration', () => {
  const json = JSON.stringify(KNOWLEDGE_BASES);

  test('reads one knowledge base and data source per environment from BEDROCK_KNOWLEDGE_BASES', () => {
    expect(readKnowledgeBases({ [BEDROCK_KNOWLEDGE_BASES_VARIABLE]: json })).toEqual(KNOWLEDGE_BASES);
    const index = deployedKnowledgeIndex({ chunksOf: async () => [] }, { BEDROCK_KNOWLEDGE_BASES: json });
    expect(index).toBeInstanceOf(BedrockKnowledgeIndex);
  });

  test.each([
    [{}, /Missing configuration: environment variable BEDROCK_KNOWLEDGE_BASES/],
    [{ BEDROCK_KNOWLEDGE_BASES: '{' }, /BEDROCK_KNOWLEDGE_BASES is not JSON/],
    [
      { BEDROCK_KNOWLEDGE_BASES: JSON.stringify({ ...KNOWLEDGE_BASES, production: { knowledgeBaseId: 'K' } }) },
      /BEDROCK_KNOWLEDGE_BASES needs "production"/,
    ],
  ])('fails loudly, naming the variable, for %o', (env, message) => {
    expect(() => readKnowledgeBases(env)).toThrow(message);
    expect(() => deployedKnowledgeIndex({ chunksOf: async () => [] }, env)).toThrow(message);
  });
});
