/**
 * The console's API client: openapi-fetch over the types openapi-typescript generates from the service's own OpenAPI
 * document (`npm run web:types`; a test fails when they are stale), so a path, a parameter or a body field the API
 * does not have is a type error here. Every call carries the person's ID token and, but for the person's own routes
 * (`/dashboard/me…`) and sign-up, the organization it acts in (`X-Organization-Id`: a person may belong to several);
 * every error answer becomes an ApiError with the API's code, message and details, which the screens show as they are.
 */
import createClient from 'openapi-fetch';
import type { paths } from './generated/api';

export type { Answer } from './answers';

export interface ErrorDetail {
  readonly field: string;
  readonly rule: string;
  readonly message?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly ErrorDetail[] = [],
  ) {
    super(message);
  }
}

export type Api = ReturnType<typeof createApi>;

/** The header that names the organization a person's request acts in (the API's core/auth/people.ts). */
export const ORGANIZATION_HEADER = 'X-Organization-Id';

/** Routes that act in no organization: the person's own (`/dashboard/me…`) and sign-up. */
export function actsInNoOrganization(schemaPath: string): boolean {
  return (
    schemaPath === '/dashboard/me' || schemaPath.startsWith('/dashboard/me/') || schemaPath === '/dashboard/signup'
  );
}

/**
 * A client whose every call carries the person's ID token and, when `organizationId` is given, names that
 * organization. The console makes one per organization chosen, so a request a screen starts always acts where the
 * screen was shown, even if the person switches organizations before it is sent.
 */
export function createApi(baseUrl: string, idToken: () => Promise<string | null>, organizationId?: string | null) {
  const client = createClient<paths>({ baseUrl: baseUrl || window.location.origin });
  client.use({
    async onRequest({ request, schemaPath }) {
      const token = await idToken();
      if (token) request.headers.set('Authorization', `Bearer ${token}`);
      if (organizationId && !actsInNoOrganization(schemaPath)) request.headers.set(ORGANIZATION_HEADER, organizationId);
      return request;
    },
  });
  return client;
}

interface ErrorBody {
  readonly error?: { code?: string; message?: string; details?: ErrorDetail[] };
}

/** The success body of a call (typed by the document: web/src/generated/api.ts), or its ApiError. */
export async function unwrap<D>(call: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data, error, response } = await call;
  if (response.ok) return data as D;
  const body = (error ?? {}) as ErrorBody;
  throw new ApiError(
    response.status,
    body.error?.code ?? `HTTP_${response.status}`,
    body.error?.message ?? response.statusText,
    body.error?.details ?? [],
  );
}
