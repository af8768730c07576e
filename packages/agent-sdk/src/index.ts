/** The agent SDK: an agent's code, in TypeScript, run where its owner likes, calling the platform back. */
export {
  type AgentDefinition,
  type AiMessage,
  type DefinedAgent,
  defineAgent,
  type HandlerContext,
  MAX_BODY_BYTES,
  type TriggerAnswer,
  type TriggerEvent,
} from './agent';
export {
  type Environment,
  type GeneratedAnswer,
  PlatformClient,
  type PlatformClientOptions,
  PlatformError,
  type RetrievalFilter,
  type RetrievedChunk,
  type RetrieveRequest,
  type TrackedEvent,
} from './client';
export { DEFAULT_TOLERANCE_SECONDS, type HeaderSource, verifyWebhook, WebhookVerificationError } from './webhooks';
