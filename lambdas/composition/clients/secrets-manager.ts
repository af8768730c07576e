/** The one Secrets Manager client of this process: the OpenAI-compatible model's API key (model-api-key.ts). */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { once } from '#composition/once';
import { captured } from './capture';
import { clientConfig } from './client-config';

export const secretsManagerClient = once(() => captured(new SecretsManagerClient(clientConfig('SECRETS_MANAGER'))));
