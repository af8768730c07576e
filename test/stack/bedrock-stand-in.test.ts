/**
 * The project's real Bedrock adapters, with the real SDK clients, against the local Bedrock stand-in
 * (lib/stack-check/bedrock-stand-in.ts), which checks every request against the documented constraints of
 * lib/stack-check/bedrock-constraints.ts. Also: requests that break a constraint, sent with the raw SDK clients, are
 * refused with the error class the SDK raises for Bedrock's ValidationException and recorded with their rule.
 */
import {
  BedrockAgentClient,
  DeleteKnowledgeBaseDocumentsCommand,
  IngestKnowledgeBaseDocumentsCommand,
  type KnowledgeBaseDocument,
  ListKnowledgeBaseDocumentsCommand,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-bedrock-agent';
import {
  BedrockAgentRuntimeClient,
  type RetrievalFilter,
  RetrieveCommand,
  ValidationException as RuntimeValidationException,
} from '@aws-sdk/client-bedrock-agent-runtime';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import {
  type BedrockKnowledgeBases,
  BedrockKnowledgeIndex,
  type ChunkTextSource,
} from '#adapters/index/bedrock-knowledge-base';
import { ChunkManifests } from '#adapters/index/chunk-manifests';
import { BedrockConverseModel, CONVERSATION_START } from '#adapters/model/bedrock-converse';
import type { DatasetRef } from '#core/knowledge/document';
import type { ChunkMetadata, DocumentRef, FilterOperator, IndexQuery } from '#ports/processing';
import { bedrockIamCalls } from '../../lib/stack-check/bedrock-access';
import { BEDROCK_CONSTRAINTS, RETRIEVAL_FILTER_CONSTRAINTS } from '../../lib/stack-check/bedrock-constraints';
import {
  type BedrockCall,
  type BedrockStandIn,
  type BedrockStandInOptions,
  startBedrockStandIn,
  type Violation,
} from '../../lib/stack-check/bedrock-stand-in';
import { chunksOf, NO_METADATA } from '../helpers/chunks';
import { InMemoryBlobStore } from '../helpers/in-memory-ports';

const AGENT = '11111111-1111-4111-8111-111111111111';
const KB = '22222222-2222-4222-8222-222222222222';
const DOC = '33333333-3333-4333-8333-333333333333';
const OTHER_DOC = '44444444-4444-4444-8444-444444444444';
const SCOPE: DatasetRef = { agentId: AGENT, environment: 'staging', knowledgeBaseId: KB };
const REF: DocumentRef = { ...SCOPE, documentId: DOC };
const OTHER_REF: DocumentRef = { ...SCOPE, documentId: OTHER_DOC };
const KNOWLEDGE_BASES: BedrockKnowledgeBases = {
  development: { knowledgeBaseId: 'KBDEV00001', dataSourceId: 'DSDEV00001' },
  staging: { knowledgeBaseId: 'KBSTG00001', dataSourceId: 'DSSTG00001' },
  production: { knowledgeBaseId: 'KBPRD00001', dataSourceId: 'DSPRD00001' },
};
const STAGING = KNOWLEDGE_BASES.staging;
const DECLARED = Object.fromEntries(
  Object.values(KNOWLEDGE_BASES).map(({ knowledgeBaseId, dataSourceId }) => [knowledgeBaseId, [dataSourceId]]),
);
const INGEST_REFERENCE =
  'https://docs.aws.amazon.com/bedrock/latest/APIReference/API_agent_IngestKnowledgeBaseDocuments.html';

const CLIENT_CONFIG = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } };

/** Chunk i talks about refunds when i is even, about shipping when it is odd. */
function texts(count: number, prefix = ''): string[] {
  return Array.from({ length: count }, (_, i) =>
    i % 2 === 0
      ? `${prefix}Refunds are paid within ${i + 1} days of the return.`
      : `${prefix}Parcels ship on day ${i}.`,
  );
}

const LABELLED: ChunkMetadata = { ...NO_METADATA, label1: 'topic:billing', svc_internal_meta1: 'crm-7' };

// ---------------------------------------------------------------------------------------------------------------
// Every stand-in the tests start, split by who sent its requests: the adapters, or the deliberately bad probes.

const adapterStandIns: BedrockStandIn[] = [];
const probeStandIns: BedrockStandIn[] = [];
const clients: { destroy(): void }[] = [];

interface Harness {
  readonly standIn: BedrockStandIn;
  readonly agent: BedrockAgentClient;
  readonly runtime: BedrockAgentRuntimeClient;
  readonly converse: BedrockRuntimeClient;
  index(chunkTexts?: ChunkTextSource): BedrockKnowledgeIndex;
}

async function harness(kind: 'adapter' | 'probe', options: BedrockStandInOptions = {}): Promise<Harness> {
  const standIn = await startBedrockStandIn({ knowledgeBases: DECLARED, ...options });
  (kind === 'adapter' ? adapterStandIns : probeStandIns).push(standIn);
  const config = { ...CLIENT_CONFIG, endpoint: standIn.endpoint };
  const agent = new BedrockAgentClient(config);
  const runtime = new BedrockAgentRuntimeClient(config);
  const converse = new BedrockRuntimeClient(config);
  clients.push(agent, runtime, converse);
  return {
    standIn,
    agent,
    runtime,
    converse,
    index: (chunkTexts = { chunksOf: async () => [] }) =>
      new BedrockKnowledgeIndex({
        agentClient: agent,
        runtimeClient: runtime,
        knowledgeBases: KNOWLEDGE_BASES,
        chunkTexts,
        manifests: new ChunkManifests(new InMemoryBlobStore()),
      }),
  };
}

afterAll(async () => {
  for (const client of clients) client.destroy();
  const all = [...adapterStandIns, ...probeStandIns];
  await Promise.all(all.map((standIn) => standIn.stop()));
  const validated = all.reduce((sum, standIn) => sum + standIn.requests.length, 0);
  const found = adapterStandIns.reduce((sum, standIn) => sum + standIn.violations.length, 0);
  console.log(`[bedrock-stand-in] ${validated} requests validated, ${found} violations found in the adapters`);
});

const query = (text: string, filters: IndexQuery['filters'] = [], limit = 100): IndexQuery => ({
  scope: SCOPE,
  text,
  filters,
  limit,
});

const label1 = (operator: FilterOperator, value: string): IndexQuery['filters'] => [{ key: 'label1', operator, value }];

/** countDocumentChunks until it reaches `expected` (at most 5 looks): the counts seen on the way. */
async function countsUntil(index: BedrockKnowledgeIndex, expected: number): Promise<number[]> {
  const counts: number[] = [];
  while (counts.at(-1) !== expected && counts.length < 5) counts.push(await index.countDocumentChunks(REF));
  return counts;
}

const summary = (violations: readonly Violation[]) =>
  violations.map(({ operation, member, rule, detail }) => ({ operation, member, rule, detail }));

// ---------------------------------------------------------------------------------------------------------------

describe('the constraints table', () => {
  test('every entry names an API reference page or the User Guide as its source', () => {
    for (const constraint of [...BEDROCK_CONSTRAINTS, ...RETRIEVAL_FILTER_CONSTRAINTS]) {
      expect(constraint.source).toMatch(
        /^https:\/\/docs\.aws\.amazon\.com\/bedrock\/latest\/(APIReference|userguide)\//,
      );
    }
  });
});

describe('the real BedrockKnowledgeIndex through the stand-in', () => {
  test('replaces 30 chunks, counts, relabels, retrieves with filters and deletes, every request conforming', async () => {
    // 'record' serves requests that break a constraint, so the whole flow runs and every violation in it would show.
    const h = await harness('adapter', { onViolation: 'record' });
    const chunks = chunksOf(REF, texts(30));
    const other = chunksOf(OTHER_REF, texts(3, 'Other: '));
    const index = h.index({ chunksOf: async (ref) => (ref.documentId === DOC ? chunks : other) });

    await index.replaceDocument(REF, chunks);
    await index.replaceDocument(OTHER_REF, other);
    expect(await index.countDocumentChunks(REF)).toBe(30);
    // Another process has nothing remembered: it lists the data source instead.
    expect(await h.index().countDocumentChunks(REF)).toBe(30);

    await index.updateDocumentMetadata(REF, LABELLED);
    const billing = await index.query(query('refunds paid', label1('equals', 'topic:billing')));
    expect(billing).toHaveLength(30);
    expect(billing[0].chunk.text).toMatch(/^Refunds are paid/);
    expect(billing[0].score).toBe(1);
    expect(billing[0].chunk).toMatchObject({ documentId: DOC, label1: 'topic:billing', svc_internal_meta1: 'crm-7' });
    expect(billing.at(-1)?.chunk.text).toMatch(/^Parcels ship/);

    // notEquals matches the chunks without the label; greaterThan / lessThan go through the label order keys.
    const unlabelled = await index.query(query('refunds', label1('notEquals', 'topic:billing')));
    expect(new Set(unlabelled.map((hit) => hit.chunk.documentId))).toEqual(new Set([OTHER_DOC]));
    expect(await index.query(query('refunds', label1('greaterThan', 'topic:b')))).toHaveLength(30);
    expect(await index.query(query('refunds', label1('lessThan', 'topic:billing')))).toEqual([]);
    expect(await index.query(query('refunds', [], 4))).toHaveLength(4);

    await index.deleteDocument(REF);
    expect(await index.countDocumentChunks(REF)).toBe(0);
    expect(new Set((await index.query(query('refunds'))).map((hit) => hit.chunk.documentId))).toEqual(
      new Set([OTHER_DOC]),
    );

    // The API reference allows 1 to 10 documents an ingest (the User Guide speaks of 25): the adapter sends 10. It
    // sent 25 until this stand-in refused them.
    expect(summary(h.standIn.violations)).toEqual([]);
    const ingests = h.standIn.requests.filter((r) => r.operation === 'IngestKnowledgeBaseDocuments');
    expect(ingests.length).toBeGreaterThanOrEqual(6);
  });

  test('a stand-in that refuses what breaks a constraint, as Bedrock does, takes a 30-chunk replacement', async () => {
    const h = await harness('adapter');
    await h.index().replaceDocument(REF, chunksOf(REF, texts(30)));
    expect(await h.index().countDocumentChunks(REF)).toBe(30);
    expect(h.standIn.violations).toEqual([]);
    expect(INGEST_REFERENCE).toMatch(/IngestKnowledgeBaseDocuments/);
  });

  test('with 10 chunks, slow indexing and DELETING observations, every request of the flow conforms', async () => {
    const h = await harness('adapter', { indexingObservations: 2, reportDeletingOnce: true });
    const chunks = chunksOf(REF, texts(10));
    const index = h.index({ chunksOf: async () => chunks });

    await index.replaceDocument(REF, chunks);
    // The replacement's own check was the first of the two observations that still see the chunks STARTING.
    expect(await countsUntil(index, 10)).toEqual([0, 10]);
    await index.updateDocumentMetadata(REF, LABELLED);
    const billing = query('refunds', label1('equals', 'topic:billing'));
    expect(await index.query(billing)).toEqual([]);
    expect(await countsUntil(index, 10)).toEqual([0, 0, 10]);
    expect(await index.query(billing)).toHaveLength(10);

    await index.deleteDocument(REF);
    expect(await index.countDocumentChunks(REF)).toBe(0);
    expect(await index.query(query('refunds'))).toEqual([]);
    const statuses = h.standIn.requests
      .filter((r) => r.operation === 'ListKnowledgeBaseDocuments')
      .map((r) => r.status);
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect(h.standIn.violations).toEqual([]);
  });

  test('a replacement after a deletion: Bedrock ignores the repeated clientToken and the adapter re-ingests with a fresh one', async () => {
    const h = await harness('adapter');
    const chunks = chunksOf(REF, texts(8));
    const index = h.index();
    await index.replaceDocument(REF, chunks);
    await index.deleteDocument(REF);
    await index.replaceDocument(REF, chunks);

    expect(await index.countDocumentChunks(REF)).toBe(8);
    const tokens = h.standIn.requests
      .filter((r) => r.operation === 'IngestKnowledgeBaseDocuments')
      .map((r) => String(r.input?.clientToken));
    expect(tokens).toHaveLength(3);
    expect(tokens[1]).toBe(tokens[0]);
    expect(tokens[2]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(h.standIn.violations).toEqual([]);
  });
});

describe('the real BedrockConverseModel through the stand-in', () => {
  test('answers a conversation that opens with the assistant, with a system prompt and an image', async () => {
    const h = await harness('adapter', { converseAnswer: 'Refunds are paid within 14 days.' });
    const model = new BedrockConverseModel(h.converse, 'anthropic.claude-3-haiku-20240307-v1:0');
    const answer = await model.generate({
      system: 'Answer briefly.',
      messages: [
        { role: 'assistant', content: 'Hello, how can I help?' },
        {
          role: 'user',
          content: 'When are refunds paid?',
          images: [{ mediaType: 'image/png', data: new Uint8Array([137, 80, 78, 71]) }],
        },
      ],
      maxTokens: 200,
      temperature: 0,
    });

    // The stand-in counts a token per word: the six words of the answer, and the words of system, turns and opener.
    expect(answer).toEqual({
      text: 'Refunds are paid within 14 days.',
      usage: { inputTokens: expect.any(Number), outputTokens: 6 },
    });
    expect(answer.usage?.inputTokens).toBeGreaterThan(6);
    const [request] = h.standIn.requests;
    expect(request).toMatchObject({ operation: 'Converse', status: 200 });
    expect(request.input).toMatchObject({
      modelId: 'anthropic.claude-3-haiku-20240307-v1:0',
      system: [{ text: 'Answer briefly.' }],
      messages: [{ role: 'user', content: [{ text: CONVERSATION_START }] }, { role: 'assistant' }, { role: 'user' }],
    });
    expect(h.standIn.violations).toEqual([]);
  });

  test('a flow temperature above 1 (a definition allows up to 2) is sent as 1, the most Converse accepts', async () => {
    const h = await harness('adapter');
    const model = new BedrockConverseModel(h.converse, 'amazon.nova-lite-v1:0');
    await model.generate({ messages: [{ role: 'user', content: 'Hi' }], temperature: 1.5 });
    expect(h.standIn.requests[0].input).toMatchObject({ inferenceConfig: { temperature: 1 } });
    expect(h.standIn.violations).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

function inlineDocument(i: number): KnowledgeBaseDocument {
  return {
    content: {
      dataSourceType: 'CUSTOM',
      custom: {
        customDocumentIdentifier: { id: `doc-${i}` },
        sourceType: 'IN_LINE',
        inlineContent: { type: 'TEXT', textContent: { data: `text ${i}` } },
      },
    },
  };
}

const customIdentifier = (i: number) => ({ dataSourceType: 'CUSTOM' as const, custom: { id: `doc-${i}` } });

describe('requests that break a documented constraint are refused with ValidationException and recorded', () => {
  const cases: [string, (h: Harness) => Promise<unknown>, Partial<Violation>][] = [
    [
      '26 documents in one ingest',
      (h) =>
        h.agent.send(
          new IngestKnowledgeBaseDocumentsCommand({
            ...STAGING,
            documents: Array.from({ length: 26 }, (_, i) => inlineDocument(i)),
          }),
        ),
      { operation: 'IngestKnowledgeBaseDocuments', member: 'documents', rule: 'items 1..10', detail: '26 items' },
    ],
    [
      '11 document identifiers in one delete',
      (h) =>
        h.agent.send(
          new DeleteKnowledgeBaseDocumentsCommand({
            ...STAGING,
            documentIdentifiers: Array.from({ length: 11 }, (_, i) => customIdentifier(i)),
          }),
        ),
      { operation: 'DeleteKnowledgeBaseDocuments', member: 'documentIdentifiers', rule: 'items 1..10' },
    ],
    [
      'a knowledgeBaseId of the wrong pattern',
      (h) =>
        h.agent.send(
          new ListKnowledgeBaseDocumentsCommand({ knowledgeBaseId: 'kb-staging', dataSourceId: 'DSSTG00001' }),
        ),
      {
        operation: 'ListKnowledgeBaseDocuments',
        member: 'knowledgeBaseId',
        rule: 'pattern [0-9a-zA-Z]{10}',
        detail: '"kb-staging"',
      },
    ],
    [
      'numberOfResults 101',
      (h) =>
        h.runtime.send(
          new RetrieveCommand({
            knowledgeBaseId: STAGING.knowledgeBaseId,
            retrievalQuery: { text: 'refunds' },
            retrievalConfiguration: { vectorSearchConfiguration: { numberOfResults: 101 } },
          }),
        ),
      {
        operation: 'Retrieve',
        member: 'retrievalConfiguration.vectorSearchConfiguration.numberOfResults',
        rule: 'integer 1..100',
        detail: '101',
      },
    ],
    [
      'an unknown filter operator',
      (h) =>
        h.runtime.send(
          new RetrieveCommand({
            knowledgeBaseId: STAGING.knowledgeBaseId,
            retrievalQuery: { text: 'refunds' },
            retrievalConfiguration: {
              vectorSearchConfiguration: {
                filter: {
                  andAll: [
                    { equals: { key: 'agentId', value: AGENT } },
                    { $unknown: ['matchesRegex', { key: 'label1', value: '^topic' }] },
                  ],
                },
              },
            },
          }),
        ),
      {
        operation: 'Retrieve',
        member: 'retrievalConfiguration.vectorSearchConfiguration.filter.andAll[1]',
        detail: 'unknown member "matchesRegex"',
      },
    ],
  ];

  test.each(cases)('%s', async (_, send, expected) => {
    const h = await harness('probe');
    const error = await send(h).catch((e: unknown) => e);
    expect(error instanceof ValidationException || error instanceof RuntimeValidationException).toBe(true);
    expect((error as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode).toBe(400);
    expect(h.standIn.violations).toEqual([expect.objectContaining(expected)]);
    expect(h.standIn.violations[0].source).toMatch(
      /^https:\/\/docs\.aws\.amazon\.com\/bedrock\/latest\/APIReference\//,
    );
    expect((error as Error).message).toContain(`Value at '${h.standIn.violations[0].member}'`);
  });

  test('the unknown operator is named with the documented operators', async () => {
    const h = await harness('probe');
    await h.runtime
      .send(
        new RetrieveCommand({
          knowledgeBaseId: STAGING.knowledgeBaseId,
          retrievalQuery: { text: 'refunds' },
          retrievalConfiguration: {
            vectorSearchConfiguration: { filter: { $unknown: ['fuzzy', { key: 'a', value: 1 }] } },
          },
        }),
      )
      .catch(() => undefined);
    expect(h.standIn.violations[0].rule).toMatch(/^exactly one of andAll, orAll, equals, notEquals, greaterThan/);
  });

  test('a filter nested past the stand-in limit is refused before anything walks it', async () => {
    const h = await harness('probe');
    let filter: RetrievalFilter = { equals: { key: 'agentId', value: AGENT } };
    for (let i = 0; i < 70; i++) filter = { andAll: [filter, { equals: { key: 'agentId', value: AGENT } }] };
    const error = await h.runtime
      .send(
        new RetrieveCommand({
          knowledgeBaseId: STAGING.knowledgeBaseId,
          retrievalQuery: { text: 'refunds' },
          retrievalConfiguration: { vectorSearchConfiguration: { filter } },
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RuntimeValidationException);
    expect(h.standIn.violations).toEqual([
      expect.objectContaining({ rule: 'nesting ≤ 64', source: expect.stringContaining('stand-in limit') }),
    ]);
  });

  test('without declared knowledge bases, any id of the documented pattern exists and starts empty', async () => {
    const h = await harness('probe', { knowledgeBases: undefined });
    const page = await h.agent.send(
      new ListKnowledgeBaseDocumentsCommand({ knowledgeBaseId: 'KBANY00001', dataSourceId: 'DSANY00001' }),
    );
    expect(page.documentDetails).toEqual([]);
    expect(h.standIn.violations).toEqual([]);
  });

  test('an unknown knowledge base is a ResourceNotFoundException, and a valid request is not a violation', async () => {
    const h = await harness('probe');
    const error = await h.agent
      .send(new ListKnowledgeBaseDocumentsCommand({ knowledgeBaseId: 'KBUNKNOWN1', dataSourceId: 'DSSTG00001' }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceNotFoundException);
    expect(h.standIn.violations).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('each caller under a path of its own, authorized before its request is served', () => {
  test('the SDK clients keep the caller prefix of their endpoint; a refusal is AccessDeniedException, not served', async () => {
    const asked: BedrockCall[] = [];
    const standIn = await startBedrockStandIn({
      knowledgeBases: DECLARED,
      authorize: async (call) => {
        asked.push(call);
        return call.caller === 'Reader' ? undefined : `${call.caller} may not ${call.operation}`;
      },
    });
    probeStandIns.push(standIn);
    const clientOf = (caller: string) => {
      const client = new BedrockAgentClient({ ...CLIENT_CONFIG, endpoint: `${standIn.endpoint}/caller/${caller}` });
      clients.push(client);
      return client;
    };
    const runtime = new BedrockAgentRuntimeClient({ ...CLIENT_CONFIG, endpoint: `${standIn.endpoint}/caller/Reader` });
    clients.push(runtime);

    const page = await clientOf('Reader').send(
      new ListKnowledgeBaseDocumentsCommand({
        knowledgeBaseId: STAGING.knowledgeBaseId,
        dataSourceId: STAGING.dataSourceId,
      }),
    );
    expect(page.documentDetails).toEqual([]);
    // HTTP/2 (the runtime client) carries the prefix too.
    await runtime.send(
      new RetrieveCommand({ knowledgeBaseId: STAGING.knowledgeBaseId, retrievalQuery: { text: 'x' } }),
    );
    const refused = await clientOf('Writer')
      .send(
        new IngestKnowledgeBaseDocumentsCommand({
          knowledgeBaseId: STAGING.knowledgeBaseId,
          dataSourceId: STAGING.dataSourceId,
          documents: [inlineDocument(1)],
        }),
      )
      .catch((e: unknown) => e);

    expect(refused).toMatchObject({
      name: 'AccessDeniedException',
      message: 'Writer may not IngestKnowledgeBaseDocuments',
    });
    expect(asked.map(({ caller, operation, input }) => [caller, operation, input.knowledgeBaseId])).toEqual([
      ['Reader', 'ListKnowledgeBaseDocuments', STAGING.knowledgeBaseId],
      ['Reader', 'Retrieve', STAGING.knowledgeBaseId],
      ['Writer', 'IngestKnowledgeBaseDocuments', STAGING.knowledgeBaseId],
    ]);
    expect(standIn.requests.map((r) => r.status)).toEqual([200, 200, 403]);
    // The refused document was not stored.
    const after = await clientOf('Reader').send(
      new ListKnowledgeBaseDocumentsCommand({
        knowledgeBaseId: STAGING.knowledgeBaseId,
        dataSourceId: STAGING.dataSourceId,
      }),
    );
    expect(after.documentDetails).toEqual([]);
  });

  test('what each operation needs of the role: its own action on the knowledge base, InvokeModel on the model', () => {
    const call = (operation: BedrockCall['operation'], input: Record<string, unknown>) =>
      bedrockIamCalls({ caller: 'F', operation, input }, 'eu-west-1', '123456789012');
    const kb = 'arn:aws:bedrock:eu-west-1:123456789012:knowledge-base/KBSTG00001';
    for (const operation of [
      'IngestKnowledgeBaseDocuments',
      'DeleteKnowledgeBaseDocuments',
      'GetKnowledgeBaseDocuments',
      'ListKnowledgeBaseDocuments',
      'Retrieve',
    ] as const) {
      expect(call(operation, { knowledgeBaseId: 'KBSTG00001' })).toEqual([
        { action: `bedrock:${operation}`, resource: kb },
      ]);
    }
    expect(call('Converse', { modelId: 'amazon.nova-lite-v1:0' })).toEqual([
      { action: 'bedrock:InvokeModel', resource: 'arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0' },
    ]);
    expect(call('Converse', { modelId: 'eu.anthropic.claude-3-7-sonnet-20250219-v1:0' })).toEqual([
      {
        action: 'bedrock:InvokeModel',
        resource:
          'arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0',
      },
    ]);
    const arn = 'arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123';
    expect(call('Converse', { modelId: arn })).toEqual([{ action: 'bedrock:InvokeModel', resource: arn }]);
  });
});
