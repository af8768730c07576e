/**
 * One settings file per stage (`config/<stage>.json`, README "Deploy", docs/operations.md "Settings per stage"):
 * what a deploy of that stage must not forget (account, region, models, sign-up mode, limits, alarm target), kept
 * in the repository instead of retyped as `-c` flags. A `-c` flag given on the command line overrides the file's
 * value for that deploy. The file is checked here, at synth: an unknown key (a typo that would silently leave a
 * setting at its default) or a value of the wrong type stops the synth; app.ts then checks each value's range as it
 * checks a flag's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';

const text = z.string().min(1).max(2048);
const count = z.union([z.number().int().positive(), z.string().regex(/^\d{1,10}$/)]);
const onOff = z.union([z.boolean(), z.enum(['on', 'off'])]);

/** Every key a stage file may hold: the context names of bin/app.ts, plus the stack's account and region. */
export const STAGE_SETTINGS = z
  .object({
    /** The AWS account the stage deploys to; a deploy with credentials of another account fails. */
    account: z.string().regex(/^\d{12}$/, 'an AWS account id is 12 digits'),
    /** The stage's Region (us-east-1, eu-west-1, …). */
    region: z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-\d$/, 'a Region name such as eu-west-1'),
    models: z.union([text, z.array(text).max(10)]),
    agentCodeFunctions: z.union([z.string().max(8192), z.array(text).max(20)]),
    /** `crm=https://mcp.crm.example,…`, or a list of { name, origin }: bearer tokens of MCP servers. */
    mcpSecrets: z.union([z.string().max(8192), z.array(z.object({ name: text, origin: text })).max(20)]),
    generateModelId: text,
    modelBaseUrl: text,
    modelName: text,
    knowledgeIndex: z.enum(['bedrock', 'dynamodb']),
    waf: onOff,
    wafRateLimit: count,
    signUp: z.enum(['open', 'invite']),
    console: onOff,
    corsAllowedOrigins: z.string().max(4096),
    uploadUrlTtlSeconds: count,
    rateLimitPerSecond: count,
    rateLimitBurst: count,
    apiRateLimit: count,
    apiBurstLimit: count,
    reservedConcurrency: onOff,
    terminationProtection: onOff,
    backup: onOff,
    backupCopyVaultArn: text,
    alarmEmail: text,
    alarmTopicArn: text,
    cognitoEmailFrom: text,
    cognitoEmailSesRegion: text,
  })
  .partial()
  .strict();

export type StageSettings = z.infer<typeof STAGE_SETTINGS>;

/** Where the stage files are: `config/` at the repository's root, or `-c configDir=…` (tests). */
export const DEFAULT_CONFIG_DIR = path.join(__dirname, '..', 'config');

/**
 * The settings of `config/<stage>.json`, validated; an empty object when the stage has no file (every setting is
 * then its flag or its default, as before stage files existed).
 */
export function readStageSettings(stage: string, configDir: string = DEFAULT_CONFIG_DIR): StageSettings {
  const file = path.join(configDir, `${stage}.json`);
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new Error(`Invalid stage settings ${file}: not JSON (${(error as Error).message})`);
  }
  const result = STAGE_SETTINGS.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const where = issue.path.length > 0 ? issue.path.join('.') : '(file)';
      const keys = issue.code === 'unrecognized_keys' ? ` ${issue.keys.join(', ')}` : '';
      return `${where}: ${issue.message}${keys}`;
    });
    throw new Error(`Invalid stage settings ${file}: ${problems.join('; ')}`);
  }
  return result.data;
}
