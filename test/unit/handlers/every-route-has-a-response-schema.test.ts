/**
 * Every route's success body has a schema (responses.ts of each area of lambdas/handlers/http, issue 39): the OpenAPI document
 * shows it and the suites' answer check (lib/local/openapi-check.ts) holds each success answer to it. Routes still
 * without one are listed here, by name: the list may only shrink, to empty (a route added without its schema fails,
 * and so does one given a schema but left on the list).
 */

import { responseSchemaOf } from '#handlers/http/responses';
import { ROUTES } from '../../../lib/routes';

/** Routes whose success body has no schema yet (their answers' statuses and error bodies are checked meanwhile). */
const STILL_WITHOUT_SCHEMA: readonly string[] = [
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

/** Not JSON of the service's shape: the document itself. */
const RAW = ['OpenApi'];

/** A dashboard mirror (lib/routes.ts, DASHBOARD_MIRRORS): `Dashboard<Id>` of a customer route `<Id>`. */
const isMirror = (id: string) => ROUTES.some((r) => `Dashboard${r.id}` === id);

describe('success body schemas', () => {
  it('every route has one, but for those still listed', () => {
    const without = ROUTES.filter((r) => !isMirror(r.id) && !RAW.includes(r.id) && !responseSchemaOf(r.id)).map(
      (r) => r.id,
    );
    expect(without).toEqual([...STILL_WITHOUT_SCHEMA]);
  });

  it('a dashboard mirror answers what its customer route answers', () => {
    for (const route of ROUTES.filter((r) => isMirror(r.id))) {
      expect([route.id, responseSchemaOf(route.id)]).toEqual([
        route.id,
        responseSchemaOf(route.id.replace(/^Dashboard/, '')),
      ]);
    }
  });
});
