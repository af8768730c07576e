/** Small pieces every client of an operator-configured HTTP endpoint needs (the OpenAI-compatible model, the embedder). */

/** `fetch failed (connect ECONNREFUSED 127.0.0.1:8080)`: undici puts the useful part in `cause`. */
export function describeFetchFailure(error: unknown): string {
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { message?: unknown } };
  const text = typeof message === 'string' ? message : String(error);
  return typeof cause?.message === 'string' ? `${text} (${cause.message})` : text;
}

/** The body as JSON, or undefined when it is not JSON. */
export function parseJsonOrUndefined(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** `http://host/v1///` → `http://host/v1`, with a loop: `/\/+$/` is quadratic on a long run of slashes. */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}
