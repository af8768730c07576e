/**
 * Success bodies of the retrieval routes (without the `success: true` every answer carries), one zod schema per route id
 * of lib/routes.ts: the OpenAPI document is generated from them, and the integration suites check every answer
 * against it. Handlers import these as types only (`satisfies`), so no bundle grows.
 */
import * as z from 'zod';
import { environment, uuid } from '#core/knowledge/fields';
import { FILTER_OPERATORS } from '#core/retrieval/filters';
import { retrievalConfigSchema } from '#core/retrieval/retrieval-config';
import { FILTERABLE_KEYS } from '#ports/processing';
import {
  type Answer,
  chunkMetadata,
  count,
  EXAMPLE,
  EXAMPLE_CHUNK_METADATA,
  EXAMPLE_CHUNK_TEXT,
  timestamp,
} from '../knowledge/responses';

/** Scores are on a fixed 0..1 scale on every backend, higher is better. */
const score = z.number().min(0).max(1);

/** One chunk retrieval found: its text, its score, and where it comes from (core/retrieval/retrieve.ts, resultOf). */
const retrievalResult = z.strictObject({
  content: z.string(),
  score,
  metadata: chunkMetadata,
});

const EXAMPLE_RESULT: z.input<typeof retrievalResult> = {
  content: EXAMPLE_CHUNK_TEXT,
  score: 0.82,
  metadata: EXAMPLE_CHUNK_METADATA,
};

/** `explain: true`: how the query was run, and every candidate the index returned before the minScore cut. */
const explanation = z
  .strictObject({
    filters: z
      .array(z.strictObject({ key: z.enum(FILTERABLE_KEYS), operator: z.enum(FILTER_OPERATORS), value: z.string() }))
      .meta({ description: 'The filters applied, memory placeholders resolved.' }),
    skippedFilters: z
      .array(z.strictObject({ index: count, key: z.string(), value: z.string(), reason: z.string() }))
      .meta({ description: 'Filters left out: their memory value was null or absent.' }),
    backendFilter: z.unknown().meta({ description: 'The filter as the index backend received it; null when none.' }),
    retrieval: z.enum(['lexical', 'hybrid']),
    numberOfResults: count,
    minScore: score,
    candidates: z.array(
      z.strictObject({
        documentId: z.string(),
        chunkId: z.string(),
        score,
        lexicalScore: score.optional().meta({ description: 'Of a hybrid score: its lexical part.' }),
        vectorScore: score.optional().meta({ description: 'Of a hybrid score: its vector part.' }),
        kept: z.boolean().meta({ description: 'Whether its score reached minScore.' }),
      }),
    ),
  })
  .meta({ description: 'Present when the request asked `explain: true`.' });

export const queryResponse = z
  .strictObject({
    results: z.array(retrievalResult).meta({ description: 'Best first.' }),
    explain: explanation.optional(),
  })
  .meta({
    description: 'The chunks of the knowledge base that best match the query, best first.',
    examples: [{ results: [EXAMPLE_RESULT] }],
  });

export const generateResponse = z
  .strictObject({
    answer: z.string(),
    citations: z.array(
      z.strictObject({
        resultIndex: count.meta({ description: '0-based index into `results`.' }),
        documentId: z.string(),
        s3Key: z.string(),
        chunkId: z.string(),
        sentence: z
          .string()
          .optional()
          .meta({ description: 'The sentence of that result quoted (extractive answers).' }),
      }),
    ),
    results: z.array(retrievalResult).meta({ description: 'What the answer was generated from, best first.' }),
    model: z.string().meta({ description: 'The model that answered, or `extractive` when none is configured.' }),
    explain: explanation.optional(),
  })
  .meta({
    description: 'An answer from the knowledge base, each citation pointing at the result it came from.',
    examples: [
      {
        answer: 'Refunds are paid within 14 days of the return reaching the warehouse [1].',
        citations: [
          {
            resultIndex: 0,
            documentId: EXAMPLE.documentId,
            s3Key: EXAMPLE.s3Key,
            chunkId: EXAMPLE_CHUNK_METADATA.chunkId,
          },
        ],
        results: [EXAMPLE_RESULT],
        model: 'anthropic.claude-3-haiku-20240307-v1:0',
      },
    ],
  });

const configFields = { agentId: uuid, environment, ...retrievalConfigSchema.shape };

const EXAMPLE_CONFIG = {
  agentId: EXAMPLE.agentId,
  environment: 'production',
  enabled: true,
  knowledgeBases: [
    {
      knowledgeBaseId: EXAMPLE.knowledgeBaseId,
      numberOfResults: 3,
      minScore: 0.3,
      filters: [{ key: 'label1', operator: 'equals', value: '{state.memory.topic}' }],
    },
  ],
  updatedAt: EXAMPLE.updatedAt,
} as const;

export const getRetrievalConfigResponse = z
  .strictObject({
    ...configFields,
    updatedAt: timestamp.nullable().meta({ description: 'Null: never set, so default retrieval is off.' }),
  })
  .meta({
    description:
      'The default retrieval configuration of the agent’s environment (off, with no knowledge bases, until set).',
    examples: [EXAMPLE_CONFIG],
  });

export const putRetrievalConfigResponse = z.strictObject({ ...configFields, updatedAt: timestamp }).meta({
  description: 'The configuration as stored.',
  examples: [EXAMPLE_CONFIG],
});

export const previewResponse = z
  .strictObject({
    systemMessage: z
      .string()
      .nullable()
      .meta({ description: 'The system message a trigger would inject; null when off or nothing was found.' }),
    results: z
      .array(retrievalResult.extend({ knowledgeBaseId: uuid, environment }))
      .meta({ description: 'Of every configured knowledge base, best first.' }),
    explain: z.strictObject({
      warnings: z
        .array(
          z.strictObject({
            code: z.literal('KNOWLEDGE_BASE_NOT_FOUND'),
            knowledgeBaseId: uuid,
            environment,
            message: z.string(),
          }),
        )
        .meta({ description: 'Configured knowledge bases that were not searched, and why.' }),
    }),
  })
  .meta({
    description: 'What default retrieval would inject for a trigger with this query.',
    examples: [
      {
        systemMessage: `Relevant knowledge (use it to answer; it may be incomplete):\n[1] (document ${EXAMPLE.documentId}, score 0.82) ${EXAMPLE_CHUNK_TEXT}`,
        results: [{ ...EXAMPLE_RESULT, knowledgeBaseId: EXAMPLE.knowledgeBaseId, environment: 'production' }],
        explain: { warnings: [] },
      },
    ],
  });

export type QueryResponse = Answer<typeof queryResponse>;
export type GenerateResponse = Answer<typeof generateResponse>;
export type GetRetrievalConfigResponse = Answer<typeof getRetrievalConfigResponse>;
export type PutRetrievalConfigResponse = Answer<typeof putRetrievalConfigResponse>;
export type PreviewResponse = Answer<typeof previewResponse>;

export const RESPONSES: Readonly<Record<string, z.ZodType>> = {
  QueryKnowledgeBase: queryResponse,
  GenerateFromKnowledgeBase: generateResponse,
  GetRetrievalConfig: getRetrievalConfigResponse,
  PutRetrievalConfig: putRetrievalConfigResponse,
  PreviewDefaultRetrieval: previewResponse,
};
