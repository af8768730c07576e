/**
 * Where `aps login` keeps the service's address and token: `$XDG_CONFIG_HOME/aps/config.json` (or
 * `~/.config/aps/config.json`), readable by the user alone (folder 0700, file 0600). APS_BASE_URL and APS_TOKEN
 * override what it holds, so a CI job needs no file.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createClient, type PlatformClient } from '@agent-platform/client';

export interface Credentials {
  readonly baseUrl: string;
  readonly token: string;
}

export function configFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'aps', 'config.json');
}

export function readConfig(file = configFile()): Partial<Credentials> {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Credentials>;
    return {
      ...(typeof parsed.baseUrl === 'string' ? { baseUrl: parsed.baseUrl } : {}),
      ...(typeof parsed.token === 'string' ? { token: parsed.token } : {}),
    };
  } catch {
    return {};
  }
}

/** Written to a file of mode 0600 first, then renamed over the old one: the token is never readable by others. */
export function writeConfig(credentials: Credentials, file = configFile()): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, file);
}

export function removeConfig(file = configFile()): void {
  rmSync(file, { force: true });
}

export class UsageError extends Error {}

/** The credentials to call with: the environment's, else the config file's; neither is a UsageError. */
export function credentials(env: NodeJS.ProcessEnv = process.env): Credentials {
  const stored = readConfig(configFile(env));
  const baseUrl = env.APS_BASE_URL || stored.baseUrl;
  const token = env.APS_TOKEN || stored.token;
  if (!baseUrl || !token) {
    throw new UsageError(
      'not logged in: run `aps login --base-url <url> --token <token>` (or set APS_BASE_URL and APS_TOKEN)',
    );
  }
  return { baseUrl, token };
}

export function platform(env: NodeJS.ProcessEnv = process.env): PlatformClient {
  return createClient(credentials(env));
}
