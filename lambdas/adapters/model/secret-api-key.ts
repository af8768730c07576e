/**
 * The OpenAI-compatible model's API key in AWS: a Secrets Manager secret the stack creates without a value, which
 * the deployer fills (README, "Models"). Read at the first model call of a container and kept for its life, so a
 * container reads it once; while the secret has no value yet the model is called without a key and the secret is
 * read again at the next call, so filling it takes effect without a deploy. The value is never logged: a failure
 * names the secret's read, not what it holds.
 */
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { ModelError } from '#ports/model';

/** Resolves to the key, or undefined when there is none to send. */
export type ApiKeySource = () => Promise<string | undefined>;

export function secretApiKey(client: Pick<SecretsManagerClient, 'send'>, secretId: string): ApiKeySource {
  let key: Promise<string> | undefined;
  return async () => {
    if (key) return key;
    let value: string | undefined;
    try {
      const answer = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
      value = answer.SecretString?.trim();
    } catch (error) {
      // A secret created without a value has no AWSCURRENT version yet: Secrets Manager says it was not found.
      if (error instanceof ResourceNotFoundException) return undefined;
      const reason = error instanceof Error ? error.name : 'unknown error';
      throw new ModelError('The model API key could not be read', `GetSecretValue ${secretId}: ${reason}`);
    }
    if (!value) return undefined;
    key = Promise.resolve(value);
    return value;
  };
}
