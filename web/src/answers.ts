/**
 * The success body of each route, as the service's OpenAPI document describes it (web/src/generated/api.ts, from the
 * response schemas the handlers answer with): the console's types of what it reads come from here, none written by
 * hand. Free of the browser's APIs (the unit tests import the modules that use it).
 */
import type { paths } from './generated/api';

/** The success body `method` of `path` answers (any of its 200, 201, 202), as the OpenAPI document describes it. */
export type Answer<P extends keyof paths, M extends 'get' | 'post' | 'put' | 'patch' | 'delete'> = paths[P][M] extends {
  responses: infer R;
}
  ? { [S in keyof R & Success]: JsonOf<R[S]> }[keyof R & Success]
  : never;

type Success = 200 | 201 | 202;
type JsonOf<S> = S extends { content: { 'application/json': infer B } } ? B : never;
