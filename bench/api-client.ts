/** A JSON client of the local runtime for the benchmarks: every call has a time limit, and an unexpected status is an error. */
export function apiClient(baseUrl: string, token: string, timeoutMs: number) {
  return async function call<T>(
    method: string,
    path: string,
    options: { body?: unknown; query?: Record<string, string>; expect?: number } = {},
  ): Promise<T> {
    const url = new URL(baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status !== (options.expect ?? 200)) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
}

export type ApiCall = ReturnType<typeof apiClient>;
