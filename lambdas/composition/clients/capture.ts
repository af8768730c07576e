/**
 * How the SDK clients of this folder are traced. The worker functions (shared/observed.ts) install Powertools
 * Tracer's `captureAWSv3Client` before any client is built, so each AWS call is an X-Ray subsegment. The API
 * functions keep the identity: Tracer and the X-Ray SDK weigh ~125 KB minified, which would put 12 of the 32 API
 * bundles over their 300 KB budget (scripts/bundle-sizes.ts); their invocations are still traced by Lambda's active
 * tracing and API Gateway's.
 *
 * Wrappers compose, in the order they were installed: the cost benchmark (bench/costs.ts) counts every call of the
 * local runtime's handlers with one of its own, beside the worker functions' tracer.
 */
type Wrap = <Client>(client: Client) => Client;

const wraps: Wrap[] = [];

/** Every client built from now on goes through `wrap` too (after the wrappers installed before it). */
export function captureClientsWith(wrap: Wrap): void {
  wraps.push(wrap);
}

/**
 * Every client of this folder passes here once, as it is built. Its SDK logger middleware is removed first: with no
 * logger configured the SDK still walks every input and output through its sensitive-field filters after each call
 * (to hand them to a no-op `info`), about 2 % of the local API process's CPU under load (bench/RESULTS.md). The
 * service logs through Powertools, never through the SDK's logger.
 */
export function captured<Client>(client: Client): Client {
  (client as { middlewareStack?: { remove(name: string): boolean } }).middlewareStack?.remove('loggerMiddleware');
  let wrapped = client;
  for (const wrap of wraps) wrapped = wrap(wrapped);
  return wrapped;
}
