/**
 * How the SDK clients of this folder are traced. The worker functions (shared/observed.ts) install Powertools
 * Tracer's `captureAWSv3Client` before any client is built, so each AWS call is an X-Ray subsegment. The API
 * functions keep the identity: Tracer and the X-Ray SDK weigh ~125 KB minified, which would put 12 of the 32 API
 * bundles over their 300 KB budget (scripts/bundle-sizes.ts); their invocations are still traced by Lambda's active
 * tracing and API Gateway's.
 */
let capture: <Client>(client: Client) => Client = (client) => client;

export function captureClientsWith(wrap: <Client>(client: Client) => Client): void {
  capture = wrap;
}

export function captured<Client>(client: Client): Client {
  return capture(client);
}
