/**
 * The response schemas of the knowledge and retrieval routes (lambdas/handlers/http/{knowledge,retrieval}/responses.ts)
 * as the OpenAPI document carries them: each route and its dashboard mirrors has a success body with a description
 * and an example, and every example is an answer its own schema admits. What the routes really answer is checked
 * against the same schemas in test/integration/knowledge-responses.test.ts.
 */
import * as z from 'zod';
import { buildOpenApiDocument } from '#handlers/http/openapi-document';
import { responseSchemaOf } from '#handlers/http/responses';
import { ROUTES } from '../../../lib/routes';

const AREA = [
  'UploadLink',
  'UploadComplete',
  'UpdateUploadLink',
  'UpdateUploadComplete',
  'PatchMetadata',
  'GetDocument',
  'ListDocumentChunks',
  'DeleteDocument',
  'ListDocuments',
  'RetryDocument',
  'ListZipJobs',
  'GetZipJob',
  'CreateKnowledgeBase',
  'ListKnowledgeBases',
  'GetKnowledgeBase',
  'UpdateKnowledgeBase',
  'DeleteKnowledgeBase',
  'ReindexKnowledgeBase',
  'GetKnowledgeBaseReindex',
  'QueryKnowledgeBase',
  'GenerateFromKnowledgeBase',
  'GetRetrievalConfig',
  'PutRetrievalConfig',
  'PreviewDefaultRetrieval',
];
const routes = ROUTES.filter((r) => AREA.includes(r.id) || AREA.includes(r.id.replace(/^Dashboard/, '')));

type JsonSchema = {
  description?: string;
  examples?: unknown[];
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: unknown;
};

const paths = buildOpenApiDocument().paths as Record<string, Record<string, { responses: object }>>;

function successSchemaOf(route: (typeof routes)[number]): { status: string; schema: JsonSchema | undefined } {
  const operation = paths[route.path][route.method.toLowerCase()];
  const [status, response] = Object.entries(operation.responses).find(([code]) => code.startsWith('2')) as [
    string,
    { content?: { 'application/json': { schema: JsonSchema } } },
  ];
  return { status, schema: response.content?.['application/json'].schema };
}

it('covers the 24 routes of the area and their 10 dashboard mirrors', () => {
  expect(routes.filter((r) => AREA.includes(r.id))).toHaveLength(24);
  expect(routes.filter((r) => !AREA.includes(r.id)).map((r) => r.id)).toHaveLength(10);
});

describe.each(routes.map((r) => [r.id, r] as const))('%s', (id, route) => {
  it('has a strict success body with success: true, a description and an example', () => {
    const { schema } = successSchemaOf(route);
    expect(schema).toMatchObject({
      additionalProperties: false,
      properties: { success: { const: true } },
      required: expect.arrayContaining(['success']),
      description: expect.any(String),
      examples: [expect.objectContaining({ success: true })],
    });
  });

  it('has examples its own schema admits', () => {
    const schema = responseSchemaOf(id) as z.ZodType;
    const { examples } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
    expect(examples?.length).toBeGreaterThan(0);
    for (const example of examples ?? []) {
      const parsed = schema.safeParse(example);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    }
  });
});

it('refuses an answer with a field its schema does not name', () => {
  const schema = responseSchemaOf('DeleteDocument') as z.ZodType;
  const answer = { documentId: 'doc-1', s3Key: 'a/production/b/doc-1/x.txt', deleted: true };
  expect(schema.safeParse(answer).success).toBe(true);
  expect(schema.safeParse({ ...answer, organizationId: 'org-1' }).success).toBe(false);
});

it('lists the status each handler answers with: 201 for a new knowledge base, 202 for the jobs', () => {
  const status = (id: string) => successSchemaOf(routes.find((r) => r.id === id) as (typeof routes)[number]).status;
  expect(status('CreateKnowledgeBase')).toBe('201');
  expect(status('DeleteKnowledgeBase')).toBe('202');
  expect(status('ReindexKnowledgeBase')).toBe('202');
  expect(status('UploadLink')).toBe('200');
});
