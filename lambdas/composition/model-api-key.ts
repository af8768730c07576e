/**
 * Where the OpenAI-compatible model's API key comes from: MODEL_API_KEY_SECRET_ARN (in AWS: the secret the stack
 * creates, read once per container by adapters/model/secret-api-key.ts) or MODEL_API_KEY (a local run). One source
 * per process, shared by generate and every flow model of the container.
 */
import { type ApiKeySource, secretApiKey } from '#adapters/model/secret-api-key';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';
import { secretsManagerClient } from './clients/secrets-manager';

export const MODEL_API_KEY_SECRET_ENV = 'MODEL_API_KEY_SECRET_ARN';

const sources = new Map<string, ApiKeySource>();

/** The key source of MODEL_API_KEY_SECRET_ARN; undefined without it (MODEL_API_KEY, if any, is read as it is). */
export function modelApiKeyFromEnv(env: EnvironmentValues = handlerEnvironment()): ApiKeySource | undefined {
  const secretId = env[MODEL_API_KEY_SECRET_ENV];
  if (!secretId) return undefined;
  let source = sources.get(secretId);
  if (!source) {
    source = secretApiKey(secretsManagerClient(), secretId);
    sources.set(secretId, source);
  }
  return source;
}
