/**
 * The MCP client of flow tools and of definition checks: the outbound guard (OUTBOUND_ALLOW_PRIVATE_NETWORK), and
 * the bearer secrets of MCP_SECRETS, those held in Secrets Manager read once per container.
 */
import { GetSecretValueCommand, ResourceNotFoundException } from '@aws-sdk/client-secrets-manager';
import { GuardedMcpClient } from '#adapters/network/mcp-client';
import { MCP_SECRETS_ENV, mcpBearer, parseMcpSecrets } from '#adapters/network/mcp-secrets';
import { GuardedOutboundHttp } from '#adapters/network/outbound-http';
import { allowPrivateNetworkFromEnv } from '#adapters/network/url-guard';
import { McpError } from '#ports/flows';
import { handlerVariable } from '#shared/environment';
import { secretsManagerClient } from './clients/secrets-manager';
import { once } from './once';

const secretValues = new Map<string, string>();

async function readSecret(secretArn: string): Promise<string | undefined> {
  const known = secretValues.get(secretArn);
  if (known) return known;
  try {
    const answer = await secretsManagerClient().send(new GetSecretValueCommand({ SecretId: secretArn }));
    const value = answer.SecretString?.trim();
    if (value) secretValues.set(secretArn, value);
    return value || undefined;
  } catch (error) {
    // Made without a value, the secret has no AWSCURRENT version yet: Secrets Manager says it was not found.
    if (error instanceof ResourceNotFoundException) return undefined;
    throw new McpError('MCP_SECRET_UNAVAILABLE', `The secret ${secretArn} could not be read`);
  }
}

const entries = once(() => parseMcpSecrets(handlerVariable(MCP_SECRETS_ENV)));

export const mcpClient = once(
  () =>
    new GuardedMcpClient(
      new GuardedOutboundHttp({ allowPrivateNetwork: allowPrivateNetworkFromEnv() }),
      mcpBearer(entries, readSecret),
    ),
);
