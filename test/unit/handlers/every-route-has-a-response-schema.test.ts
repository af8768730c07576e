/**
 * Every route's success body has a schema (responses.ts of each area of lambdas/handlers/http, issue 39): the OpenAPI document
 * shows it and the suites' answer check (lib/local/openapi-check.ts) holds each success answer to it. A route added
 * without its schema fails here.
 */

import { responseSchemaOf } from '#handlers/http/responses';
import { ROUTES } from '../../../lib/routes';

/** Not JSON of the service's shape: the document itself. */
const RAW = ['OpenApi'];

/** A dashboard mirror (lib/routes.ts, DASHBOARD_MIRRORS): `Dashboard<Id>` of a customer route `<Id>`. */
const isMirror = (id: string) => ROUTES.some((r) => `Dashboard${r.id}` === id);

describe('success body schemas', () => {
  it('every route has one', () => {
    const without = ROUTES.filter((r) => !isMirror(r.id) && !RAW.includes(r.id) && !responseSchemaOf(r.id)).map(
      (r) => r.id,
    );
    expect(without).toEqual([]);
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
