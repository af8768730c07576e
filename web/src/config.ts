/**
 * What the console needs to know of its deployment: `/config.json`, served by the local runtime (lib/local/console.ts)
 * or written at deploy (lib/constructs/console-site.ts); both take this type from here.
 */
export interface ConsoleConfig {
  /** Base of the API; empty: the console's own origin (the local runtime, CloudFront). */
  readonly apiUrl: string;
  /** People's sign-in; null when the deployment has none (the local runtime with COGNITO=off). */
  readonly cognito: {
    readonly region: string;
    /** cognito-local's address locally; absent in AWS (the SDK's regional endpoint). */
    readonly endpoint?: string;
    readonly userPoolId: string;
    readonly clientId: string;
  } | null;
  /** Whether anyone may sign up here (`open`), or only invited people (`invite`). */
  readonly signUp: 'open' | 'invite';
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch('/config.json', { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`/config.json answered ${response.status}`);
  return (await response.json()) as ConsoleConfig;
}
