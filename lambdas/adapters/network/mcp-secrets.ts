/**
 * The bearer tokens of MCP servers: secrets the deployment holds, named by definitions (`bearerSecret`), never written
 * in them. MCP_SECRETS is a JSON object, name → { origin, organizations?, value | secretArn }: locally the value
 * itself; in AWS the ARN of a Secrets Manager secret the stack made (`-c mcpSecrets`), read once per container. A
 * secret goes only to its `origin` (a definition, which a tenant writes, cannot send it elsewhere) and, with
 * `organizations`, only for those organizations' definitions.
 */
import { McpError, type McpServerTarget } from '#ports/flows';
import type { McpBearer } from './mcp-client';

export const MCP_SECRETS_ENV = 'MCP_SECRETS';

export interface McpSecretEntry {
  /** `https://host[:port]`: the only origin the secret is sent to. */
  readonly origin: string;
  /** When given, only these organizations' definitions may name it. */
  readonly organizations?: readonly string[];
  /** The token itself (a local run)… */
  readonly value?: string;
  /** …or the ARN of the Secrets Manager secret that holds it (AWS). */
  readonly secretArn?: string;
}

export type McpSecretEntries = Readonly<Record<string, McpSecretEntry>>;

/** MCP_SECRETS as entries; a malformed value fails loudly at the first MCP call that needs a secret. */
export function parseMcpSecrets(text: string | undefined): McpSecretEntries {
  const entries = (text ? JSON.parse(text) : {}) as Record<string, McpSecretEntry>;
  for (const [name, entry] of Object.entries(entries)) {
    const { origin, organizations, value, secretArn } = entry ?? {};
    const valid =
      typeof origin === 'string' &&
      originOf(origin) === origin &&
      (organizations === undefined || Array.isArray(organizations)) &&
      (typeof value === 'string') !== (typeof secretArn === 'string');
    if (!valid) {
      throw new Error(`${MCP_SECRETS_ENV}.${name} needs an origin (https://host[:port]) and a value or a secretArn`);
    }
  }
  return entries;
}

/** The token of a target from the entries; `readSecret` reads a secretArn's value (undefined: the secret is empty). */
export function mcpBearer(
  entries: () => McpSecretEntries,
  readSecret: (secretArn: string) => Promise<string | undefined>,
): McpBearer {
  return async (target: McpServerTarget) => {
    const name = target.bearerSecret;
    if (name === undefined) return undefined;
    const entry = Object.hasOwn(entries(), name) ? entries()[name] : undefined;
    const unavailable = (why: string) =>
      new McpError('MCP_SECRET_UNAVAILABLE', `The secret ${name} cannot be sent to ${originOf(target.url)}: ${why}`);
    if (!entry) throw unavailable(`this deployment holds no such secret (${MCP_SECRETS_ENV})`);
    if (originOf(target.url) !== entry.origin) throw unavailable(`it is held for ${entry.origin} only`);
    if (entry.organizations && !entry.organizations.includes(target.organizationId)) {
      throw unavailable('it is not held for this organization');
    }
    const value = entry.value ?? (await readSecret(entry.secretArn as string));
    if (!value) throw unavailable('the secret has no value yet');
    return value;
  };
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an invalid URL';
  }
}
