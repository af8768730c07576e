/**
 * The platform's API as an agent's code calls it, with a token the agent's owner made for it (best restricted to
 * that agent: `POST /dashboard/tokens { scopes: ['analytics', 'dashboard'], agentIds: [agentId] }`): custom analytics
 * events (scope `analytics`) and retrieval from its knowledge bases (scope `dashboard`).
 */

export type Environment = 'development' | 'staging' | 'production';

export interface PlatformClientOptions {
  /** The API's base URL, e.g. `https://api.example.com` (the stack output ApiUrl) or `http://localhost:3000`. */
  readonly baseUrl: string;
  readonly token: string;
  readonly agentId: string;
  /** Default `production`. */
  readonly environment?: Environment;
  /** Default: the global fetch. */
  readonly fetch?: typeof fetch;
}

/** An error answer of the platform: `{ success: false, error: { code, message, details } }`. */
export class PlatformError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: readonly { field: string; rule: string; message?: string }[] = [],
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}

export interface TrackedEvent {
  readonly agentId: string;
  readonly environment: Environment;
  readonly sessionId: string;
  readonly eventName: string;
  readonly eventKey: string;
  /** An event of this key was recorded before (a retried call): nothing was recorded again. */
  readonly duplicate: boolean;
}

/** A label filter: `{ field: 'label1', operator: 'equals', value }`, the value possibly `{state.memory.path}`. */
export type RetrievalFilter = Readonly<Record<string, unknown>>;

export interface RetrieveRequest {
  readonly knowledgeBaseId: string;
  readonly query: string;
  readonly numberOfResults?: number;
  readonly minScore?: number;
  readonly filters?: readonly RetrievalFilter[];
  /** Values for `{state.memory.…}` in filters. */
  readonly memory?: Readonly<Record<string, unknown>>;
  /** Default: the client's environment. */
  readonly environment?: Environment;
}

export interface RetrievedChunk {
  readonly content: string;
  readonly score: number;
  readonly metadata: {
    readonly documentId: string;
    readonly s3Key: string;
    readonly chunkId: string;
    readonly position: number;
    readonly label1: string | null;
    readonly label2: string | null;
    readonly svc_internal_meta1?: string | null;
    readonly svc_internal_meta2?: string | null;
    readonly svc_internal_meta3?: string | null;
    readonly svc_internal_meta4?: string | null;
  };
}

export interface GeneratedAnswer {
  readonly answer: string;
  readonly citations: readonly {
    readonly resultIndex: number;
    readonly documentId: string;
    readonly s3Key: string;
    readonly chunkId: string;
    readonly sentence?: string;
  }[];
  readonly results: readonly RetrievedChunk[];
  readonly model: string;
}

export class PlatformClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  readonly agentId: string;
  readonly environment: Environment;

  constructor(private readonly options: PlatformClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? fetch;
    this.agentId = options.agentId;
    this.environment = options.environment ?? 'production';
  }

  /**
   * Records a custom analytics event of the agent (ANALYTICS_EVENT), returned by POST /api/v1/events/agent with the
   * built-in ones. Give `eventKey` (unique within the agent, e.g. derived from what happened) to make a retry record
   * it once; `sessionId` ties it to a session (default `external`).
   */
  trackAnalyticsEvent(
    eventName: string,
    payload: Readonly<Record<string, unknown>> = {},
    options: { sessionId?: string; eventKey?: string; environment?: Environment } = {},
  ): Promise<TrackedEvent> {
    return this.post<TrackedEvent>('/api/v1/events/track', {
      agentId: this.agentId,
      environment: options.environment ?? this.environment,
      eventName,
      payload,
      ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
      ...(options.eventKey !== undefined ? { eventKey: options.eventKey } : {}),
    });
  }

  /** The chunks of the knowledge base nearest to the query, with their metadata. */
  async retrieveFromKnowledgeBase(request: RetrieveRequest): Promise<RetrievedChunk[]> {
    const answer = await this.post<{ results: RetrievedChunk[] }>(
      this.knowledgePath(request, 'query'),
      retrievalBody(request),
    );
    return answer.results;
  }

  /** An answer from the knowledge base's chunks, with citations that point at them. */
  retrieveAndGenerateFromKnowledgeBase(request: RetrieveRequest): Promise<GeneratedAnswer> {
    return this.post<GeneratedAnswer>(this.knowledgePath(request, 'generate'), retrievalBody(request));
  }

  private knowledgePath(request: RetrieveRequest, action: 'query' | 'generate'): string {
    const environment = request.environment ?? this.environment;
    const parts = [this.agentId, environment, request.knowledgeBaseId].map(encodeURIComponent);
    return `/dashboard/agents/${parts[0]}/knowledge/${parts[1]}/kb/${parts[2]}/${action}`;
  }

  private async post<T>(path: string, body: unknown): Promise<T> {
    const response = await this.fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = (parsed?.error ?? {}) as { code?: string; message?: string; details?: PlatformError['details'] };
      throw new PlatformError(
        response.status,
        error.code ?? `HTTP_${response.status}`,
        error.message ?? `The platform answered ${response.status}`,
        error.details ?? [],
      );
    }
    const { success: _success, ...rest } = parsed ?? {};
    return rest as T;
  }
}

function retrievalBody(request: RetrieveRequest) {
  const { knowledgeBaseId: _id, environment: _environment, ...body } = request;
  return body;
}
