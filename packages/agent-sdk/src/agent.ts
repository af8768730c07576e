/**
 * `defineAgent`: an agent's handlers, served from one definition as a `node:http` request handler and as an AWS Lambda
 * handler (API Gateway or a function URL). Every request is verified (webhooks.ts) before a handler sees it.
 *
 * Point the definition's `agentCode.url` at where it is served: the platform then calls `onTrigger` with each
 * TRIGGER_EVENT (before default retrieval; its answer may set memory, add messages or stop the run) and `onAiMessage`
 * with each AI message (unless the definition has a `callbackUrl` of its own).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Environment, PlatformClient, type PlatformClientOptions } from './client';
import type { AiMessage, TriggerAnswer, TriggerEvent } from './generated/events';
import { type HeaderSource, verifyWebhook, WebhookVerificationError } from './webhooks';

/** Largest body read: an AI message is far smaller; a larger request is refused (413) before it is read whole. */
export const MAX_BODY_BYTES = 1024 * 1024;

// The events and the answer, generated from the schemas the platform builds and checks them with (npm run sdk:types).
export type { AiMessage, TriggerAnswer, TriggerEvent } from './generated/events';

// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing lets the run go on as it is
type TriggerResult = TriggerAnswer | void;

export interface HandlerContext {
  /** `webhook-id`: the same when the platform sends a message again; drop repeats by it. */
  readonly messageId: string;
  /** The platform's API for this agent and environment, when `platform` was given to defineAgent. */
  readonly platform?: PlatformClient;
}

export interface AgentDefinition {
  /** The agent's callback secret (its creation or rotation answer); several while you switch after a rotation. */
  readonly secrets: string | readonly string[];
  readonly onAiMessage?: (message: AiMessage, context: HandlerContext) => Promise<void> | void;
  readonly onTrigger?: (event: TriggerEvent, context: HandlerContext) => Promise<TriggerResult> | TriggerResult;
  /** Base URL and token for `context.platform`; its agent and environment are the message's. */
  readonly platform?: Omit<PlatformClientOptions, 'agentId' | 'environment'>;
  /** Default 300 s. */
  readonly toleranceSeconds?: number;
}

interface Answer {
  readonly statusCode: number;
  readonly body?: string;
}

export interface DefinedAgent {
  /** Handles one request whose body was read: what to answer. */
  handle(headers: HeaderSource, rawBody: string): Promise<Answer>;
  /** A `node:http` request listener: `createServer(agent.http)`. */
  http(request: IncomingMessage, response: ServerResponse): void;
  /** An AWS Lambda handler for an API Gateway (REST or HTTP API) or function URL event. */
  lambda(event: {
    headers?: Record<string, string | undefined> | null;
    body?: string | null;
    isBase64Encoded?: boolean;
  }): Promise<{ statusCode: number; body: string }>;
}

const refusal = (statusCode: number, message: string): Answer => ({
  statusCode,
  body: JSON.stringify({ error: message }),
});

export function defineAgent(definition: AgentDefinition): DefinedAgent {
  const handle = async (headers: HeaderSource, rawBody: string): Promise<Answer> => {
    let messageId: string;
    try {
      messageId = verifyWebhook(definition.secrets, headers, rawBody, {
        toleranceSeconds: definition.toleranceSeconds,
      });
    } catch (error) {
      if (error instanceof WebhookVerificationError) return refusal(401, error.message);
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawBody);
    } catch {
      return refusal(400, 'the body is not JSON');
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return refusal(400, 'the body is not a JSON object');
    }
    const event = parsed as { event?: unknown };
    const scoped = event as { agentId: string; environment: Environment };
    const platform = definition.platform
      ? new PlatformClient({ ...definition.platform, agentId: scoped.agentId, environment: scoped.environment })
      : undefined;
    const context: HandlerContext = { messageId, ...(platform ? { platform } : {}) };
    if (event.event === 'TRIGGER_EVENT' && definition.onTrigger) {
      const answer = await definition.onTrigger(event as TriggerEvent, context);
      return answer ? { statusCode: 200, body: JSON.stringify(answer) } : { statusCode: 204 };
    }
    if (event.event === 'AgentEvents.AI_MESSAGE' && definition.onAiMessage) {
      await definition.onAiMessage(event as AiMessage, context);
      return { statusCode: 204 };
    }
    if (event.event === 'TRIGGER_EVENT') return { statusCode: 204 };
    return refusal(422, `no handler for event ${String(event.event)}`);
  };

  const answer = (response: ServerResponse, result: Answer) => {
    response.writeHead(result.statusCode, result.body ? { 'content-type': 'application/json' } : {});
    response.end(result.body);
  };

  return {
    handle,
    http(request, response) {
      const parts: Buffer[] = [];
      let size = 0;
      let refused = false;
      request.on('data', (part: Buffer) => {
        size += part.length;
        if (size > MAX_BODY_BYTES && !refused) {
          // Answered now; the rest is read and dropped (nothing more is kept), and the connection closed after.
          refused = true;
          parts.length = 0;
          response.setHeader('connection', 'close');
          answer(response, refusal(413, `the body is over ${MAX_BODY_BYTES} bytes`));
        } else if (!refused) parts.push(part);
      });
      request.on('end', () => {
        if (refused) return;
        handle(request.headers, Buffer.concat(parts).toString('utf8')).then(
          (result) => answer(response, result),
          () => answer(response, refusal(500, 'the handler failed')),
        );
      });
    },
    async lambda(event) {
      const raw = event.body ?? '';
      const body = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) {
        return { statusCode: 413, body: JSON.stringify({ error: 'the body is too large' }) };
      }
      const result = await handle(event.headers ?? {}, body).catch(() => refusal(500, 'the handler failed'));
      return { statusCode: result.statusCode, body: result.body ?? '' };
    },
  };
}
