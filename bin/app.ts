#!/usr/bin/env node
/**
 * The CDK app: typed configuration from context (`cdk synth -c stage=prod -c waf=off`), the platform stack, and cdk-nag's
 * AWS Solutions checks over the whole app. Tests build the same app through `createApp`.
 */
import { Annotations, App, type AppProps, Duration, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LAMBDA_FUNCTION_ARN } from '#core/flows/definition';
import { type CorsPolicy, parseCorsAllowedOrigins } from '#shared/cors';
import { AgentPlatformStack } from '../lib/agent-platform-stack';
import { DEFAULT_RATE_LIMIT_PER_5_MINUTES } from '../lib/constructs/api-firewall';
import { bedrockModel, MODEL_ID } from '../lib/constructs/bedrock-models';
import type { McpSecretSetting } from '../lib/constructs/mcp-secrets';
import { readStageSettings, type StageSettings } from './stage-settings';

/** Bedrock models one deployment may list: each adds its ARNs to every flow function's policy. */
const MAX_MODELS = 10;

/**
 * The model a deployment calls when `-c models` is not given (README, "Models"): Amazon Nova 2 Lite through its
 * global cross-Region inference profile. An Amazon model needs no AWS Marketplace subscription nor a provider's
 * use-case form, so the first call works in a new account; the global profile can be called from every commercial
 * Region Bedrock serves, so the default holds wherever the stack is deployed; it reads images and calls tools.
 */
export const DEFAULT_MODEL = 'global.amazon.nova-2-lite-v1:0';

/** `-c models=offline`: no language model at all (local runs, LocalStack, the stack suites); synth warns. */
export const OFFLINE_MODELS = 'offline';

export interface AppConfig {
  /** Deployment stage: the API Gateway stage name and a tag; one stack per stage and account. */
  readonly stage: string;
  /**
   * `-c models=amazon.nova-lite-v1:0,us.anthropic.claude-3-5-haiku-20241022-v1:0`: the Bedrock models and
   * cross-Region inference profiles the flows and generate may call, the first the default (README, "Models").
   * `-c generateModelId=<id>` is the same as a list of one. Unset: DEFAULT_MODEL. `offline`: none (generate
   * extractive, flows on the offline model), with a warning at synth.
   */
  readonly models: readonly string[];
  /**
   * `-c modelBaseUrl=https://api.example.com/v1 -c modelName=<model>`: an OpenAI-compatible server as the default
   * model (ChatOpenAICompatible), its API key in a secret the stack creates empty (README, "Models").
   */
  readonly openAiCompatible?: { readonly baseUrl: string; readonly model: string };
  /**
   * `-c agentCodeFunctions=arn:aws:lambda:eu-west-1:111122223333:function:desk-agent,…`: Lambda functions that
   * definitions may name as agent code; the flow functions are granted exactly these (docs/agent-code.md).
   */
  readonly agentCodeFunctions: readonly string[];
  /**
   * `-c mcpSecrets=crm=https://mcp.crm.example,…`: bearer tokens of MCP servers that definitions may name
   * (`bearerSecret`), each sent to its origin only; the stack makes an empty secret for each (docs/flows.md, "MCP tools").
   */
  readonly mcpSecrets: readonly McpSecretSetting[];
  /** `-c knowledgeIndex=dynamodb`: a DynamoDB chunk table instead of Bedrock knowledge bases (for LocalStack). */
  readonly knowledgeIndex: 'bedrock' | 'dynamodb';
  /** `-c waf=off` leaves the WAF web ACL out of the stack; on by default. */
  readonly waf: boolean;
  /** `-c wafRateLimit=5000`: requests per source IP per five minutes before WAF answers 429 (default 2,000). */
  readonly wafRateLimit: number;
  /** `-c signUp=open`: anyone may sign up (a new organization each); default `invite`: owners invite people. */
  readonly signUp: 'open' | 'invite';
  /** `-c console=off` leaves the web console (CloudFront, its bucket) out of the stack; on by default. */
  readonly console: boolean;
  /** `-c corsAllowedOrigins=https://a.example,https://b.example` or `*`: other origins whose pages may read answers. */
  readonly cors: CorsPolicy;
  /** `-c uploadUrlTtlSeconds=300`: how long an upload URL stays valid (1 to 604800 s, S3's own limit; default 900). */
  readonly uploadUrlTtlSeconds?: number;
  /** `-c rateLimitPerSecond=50 -c rateLimitBurst=100`: requests per token and per organization (both or neither). */
  readonly rateLimit?: { readonly perSecond: number; readonly burst: number };
  /**
   * `-c apiRateLimit=500 -c apiBurstLimit=1000`: the API stage's own throttle, shared by every tenant, so well above
   * one organization's limit (default ten times it: DEFAULT_API_THROTTLE_FACTOR).
   */
  readonly apiThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  /** The stage file's `account` and `region`: the stack is then bound to them; unset, it is environment-agnostic. */
  readonly env?: { readonly account?: string; readonly region?: string };
  /** `-c reservedConcurrency=off`: no reserved concurrency for the heavy workers (accounts under 150 concurrency). */
  readonly reservedConcurrency: boolean;
  /** `-c terminationProtection=off`: the stack can be deleted without first turning protection off (a dev stage). */
  readonly terminationProtection: boolean;
  /**
   * `-c backup=off` leaves out the AWS Backup plan; `-c backupCopyVaultArn=arn:aws:backup:…` copies every recovery
   * point to that vault (another account's, for a copy the deploying account cannot delete).
   */
  readonly backup: { readonly enabled: boolean; readonly copyVaultArn?: string };
  /** `-c alarmEmail=ops@example.com` and/or `-c alarmTopicArn=arn:aws:sns:…`: who every alarm reaches. */
  readonly alarms: { readonly email?: string; readonly topicArn?: string };
  /** `-c cognitoEmailFrom=no-reply@example.com [-c cognitoEmailSesRegion=eu-west-1]`: Cognito's mail through SES. */
  readonly cognitoEmail?: { readonly from: string; readonly sesRegion?: string };
}

/** The stage throttle, by default, is this many times one organization's own limit (core/auth/rate-limit.ts). */
export const DEFAULT_API_THROTTLE_FACTOR = 10;
/** One organization's limit when none is configured: 50 requests a second, bursts of 100 (core/auth/rate-limit.ts). */
const DEFAULT_ORGANIZATION_LIMIT = { perSecond: 50, burst: 100 } as const;

/** `on`/`off`/true/false of `name`, or `fallback` when it is not given. */
function contextSwitch(setting: Setting, name: keyof StageSettings, fallback: boolean): boolean {
  const raw: unknown = setting(name) ?? fallback;
  if (raw !== 'on' && raw !== 'off' && raw !== true && raw !== false) {
    throw new Error(`Invalid context ${name}=${JSON.stringify(raw)}: expected on or off`);
  }
  return raw === 'on' || raw === true;
}

/** A string setting that must match `pattern` (described by `expected`), or undefined. */
function contextText(setting: Setting, name: keyof StageSettings, pattern: RegExp, expected: string) {
  const raw: unknown = setting(name);
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !pattern.test(raw)) {
    throw new Error(`Invalid context ${name}=${JSON.stringify(raw)}: expected ${expected}`);
  }
  return raw;
}

const EMAIL = /^[^\s@]{1,64}@[a-z0-9.-]{1,253}\.[a-z]{2,63}$/i;
const REGION = /^[a-z]{2}(-gov)?-[a-z]+-\d$/;

/** A whole number of context `name` from 1 to 1,000,000, or undefined when it is not given. */
function contextCount(setting: Setting, name: keyof StageSettings): number | undefined {
  const raw: unknown = setting(name);
  if (raw === undefined) return undefined;
  const value = typeof raw === 'string' && /^\d{1,7}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000) {
    throw new Error(`Invalid context ${name}=${JSON.stringify(raw)}: expected a whole number from 1 to 1000000`);
  }
  return value;
}

/**
 * A list setting, comma-separated or a JSON array: up to `max` distinct strings, each one `valid`; undefined when the
 * value is not such a list (the caller names what it expected).
 */
function contextList(raw: unknown, max: number, valid: (item: string) => boolean): string[] | undefined {
  const list =
    typeof raw === 'string'
      ? raw
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== '')
      : raw;
  if (!Array.isArray(list) || list.length > max || new Set(list).size !== list.length) return undefined;
  return list.every((item) => typeof item === 'string' && valid(item)) ? (list as string[]) : undefined;
}

const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,19}$/;

/** A setting's raw value: its `-c` flag, else its value in the stage file, else undefined. */
type Setting = (name: keyof StageSettings) => unknown;

/**
 * `-c modelBaseUrl` and `-c modelName`, both or neither. The URL is https (the API key travels with every call),
 * or http to a loopback address, where nothing leaves the machine: the stack-check's own model server.
 */
function readOpenAiCompatible(setting: Setting): AppConfig['openAiCompatible'] {
  const baseUrl: unknown = setting('modelBaseUrl');
  const model: unknown = setting('modelName');
  if (baseUrl === undefined && model === undefined) return undefined;
  const url = typeof baseUrl === 'string' && URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  const loopback = url?.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (typeof baseUrl !== 'string' || !url || (url.protocol !== 'https:' && !loopback)) {
    throw new Error(
      `Invalid context modelBaseUrl=${JSON.stringify(baseUrl)}: expected the https URL of an OpenAI-compatible API ` +
        'up to its version (https://api.example.com/v1), given with modelName',
    );
  }
  if (typeof model !== 'string' || !/^[\w.:/-]{1,200}$/.test(model)) {
    throw new Error(
      `Invalid context modelName=${JSON.stringify(model)}: expected the server's model name (letters, digits, ` +
        '`.`, `:`, `/`, `_`, `-`), given with modelBaseUrl',
    );
  }
  return { baseUrl, model };
}

/** Reads and validates the context once; a bad value stops the synth instead of deploying a surprise. */
/** How many agent code functions one deployment may register: each is a resource of the flow functions' policies. */
const MAX_AGENT_CODE_FUNCTIONS = 20;

function readAgentCodeFunctions(setting: Setting): string[] {
  const raw: unknown = setting('agentCodeFunctions') ?? [];
  const list = contextList(raw, MAX_AGENT_CODE_FUNCTIONS, (arn) => LAMBDA_FUNCTION_ARN.test(arn));
  if (!list) {
    throw new Error(
      `Invalid context agentCodeFunctions=${JSON.stringify(raw)}: expected up to ${MAX_AGENT_CODE_FUNCTIONS} distinct ` +
        'Lambda function ARNs (arn:aws:lambda:<region>:<account>:function:<name>), comma-separated',
    );
  }
  return list;
}

/** How many MCP secrets one deployment may hold: each is a secret and a resource of the flow functions' policies. */
const MAX_MCP_SECRETS = 20;

function readMcpSecrets(setting: Setting): McpSecretSetting[] {
  const raw: unknown = setting('mcpSecrets') ?? [];
  const list =
    typeof raw === 'string'
      ? raw
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '')
          .map((entry) => {
            const at = entry.indexOf('=');
            return { name: entry.slice(0, at), origin: entry.slice(at + 1) };
          })
      : raw;
  const isOrigin = (origin: unknown) => {
    try {
      return typeof origin === 'string' && origin.startsWith('https://') && new URL(origin).origin === origin;
    } catch {
      return false;
    }
  };
  if (
    !Array.isArray(list) ||
    list.length > MAX_MCP_SECRETS ||
    new Set(list.map((entry) => entry?.name)).size !== list.length ||
    list.some((entry) => !/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(String(entry?.name)) || !isOrigin(entry?.origin))
  ) {
    throw new Error(
      `Invalid context mcpSecrets=${JSON.stringify(raw)}: expected up to ${MAX_MCP_SECRETS} distinct ` +
        '<name>=<https origin> pairs (crm=https://mcp.crm.example), comma-separated',
    );
  }
  return (list as McpSecretSetting[]).map(({ name, origin }) => ({ name, origin }));
}

export function readConfig(app: App): AppConfig {
  const stage: unknown = app.node.tryGetContext('stage') ?? 'dev';
  if (typeof stage !== 'string' || !STAGE_PATTERN.test(stage)) {
    throw new Error(`Invalid context stage=${JSON.stringify(stage)}: expected lower-case letters, digits and dashes`);
  }
  const configDir: unknown = app.node.tryGetContext('configDir');
  const file = readStageSettings(stage, typeof configDir === 'string' ? configDir : undefined);
  // A -c flag overrides the stage file's value for this deploy (bin/stage-settings.ts).
  const setting: Setting = (name) => app.node.tryGetContext(name) ?? file[name];
  const generateModelId: unknown = setting('generateModelId');
  if (generateModelId !== undefined && (typeof generateModelId !== 'string' || !MODEL_ID.test(generateModelId))) {
    throw new Error(`Invalid context generateModelId=${JSON.stringify(generateModelId)}: expected a Bedrock model id`);
  }
  const rawModels: unknown = setting('models');
  if (rawModels !== undefined && generateModelId !== undefined) {
    throw new Error('Invalid context: give models or generateModelId, not both (generateModelId=x is models=x)');
  }
  const models =
    rawModels === undefined ? (generateModelId === undefined ? [DEFAULT_MODEL] : [generateModelId]) : rawModels;
  const modelList = models === OFFLINE_MODELS ? [] : contextList(models, MAX_MODELS, (m) => MODEL_ID.test(m));
  if (!modelList) {
    throw new Error(
      `Invalid context models=${JSON.stringify(rawModels)}: expected up to ${MAX_MODELS} distinct Bedrock model or ` +
        `inference profile ids, comma-separated, the default first (or ${OFFLINE_MODELS})`,
    );
  }
  for (const id of modelList) bedrockModel(id);
  const openAiCompatible = readOpenAiCompatible(setting);
  const agentCodeFunctions = readAgentCodeFunctions(setting);
  const mcpSecrets = readMcpSecrets(setting);
  const knowledgeIndex: unknown = setting('knowledgeIndex') ?? 'bedrock';
  if (knowledgeIndex !== 'bedrock' && knowledgeIndex !== 'dynamodb') {
    throw new Error(`Invalid context knowledgeIndex=${JSON.stringify(knowledgeIndex)}: expected bedrock or dynamodb`);
  }
  const waf = contextSwitch(setting, 'waf', true);
  const rawLimit: unknown = setting('wafRateLimit') ?? DEFAULT_RATE_LIMIT_PER_5_MINUTES;
  const wafRateLimit = typeof rawLimit === 'string' && /^\d+$/.test(rawLimit) ? Number(rawLimit) : rawLimit;
  if (typeof wafRateLimit !== 'number' || !Number.isInteger(wafRateLimit) || wafRateLimit < 10 || wafRateLimit > 2e9) {
    throw new Error(
      `Invalid context wafRateLimit=${JSON.stringify(rawLimit)}: expected a whole number from 10 to 2000000000`,
    );
  }
  const signUp: unknown = setting('signUp') ?? 'invite';
  if (signUp !== 'open' && signUp !== 'invite') {
    throw new Error(`Invalid context signUp=${JSON.stringify(signUp)}: expected open or invite`);
  }
  const consoleSite = contextSwitch(setting, 'console', true);
  const rawCors: unknown = setting('corsAllowedOrigins') ?? '';
  if (typeof rawCors !== 'string') {
    throw new Error(`Invalid context corsAllowedOrigins=${JSON.stringify(rawCors)}: expected comma-separated origins`);
  }
  const cors = parseCorsAllowedOrigins(rawCors, 'context corsAllowedOrigins');
  const rawTtl: unknown = setting('uploadUrlTtlSeconds');
  const uploadUrlTtlSeconds = typeof rawTtl === 'string' && /^\d+$/.test(rawTtl) ? Number(rawTtl) : rawTtl;
  if (
    uploadUrlTtlSeconds !== undefined &&
    (typeof uploadUrlTtlSeconds !== 'number' ||
      !Number.isInteger(uploadUrlTtlSeconds) ||
      uploadUrlTtlSeconds < 1 ||
      uploadUrlTtlSeconds > 604_800)
  ) {
    throw new Error(
      `Invalid context uploadUrlTtlSeconds=${JSON.stringify(rawTtl)}: expected a whole number of seconds from 1 to 604800`,
    );
  }
  const perSecond = contextCount(setting, 'rateLimitPerSecond');
  const burst = contextCount(setting, 'rateLimitBurst');
  if ((perSecond === undefined) !== (burst === undefined) || (perSecond && burst && burst < perSecond)) {
    throw new Error(
      'Invalid context: give rateLimitPerSecond and rateLimitBurst together, the burst at least the rate',
    );
  }
  const organization = perSecond && burst ? { perSecond, burst } : DEFAULT_ORGANIZATION_LIMIT;
  const apiThrottle = {
    rateLimit: contextCount(setting, 'apiRateLimit') ?? organization.perSecond * DEFAULT_API_THROTTLE_FACTOR,
    burstLimit: contextCount(setting, 'apiBurstLimit') ?? organization.burst * DEFAULT_API_THROTTLE_FACTOR,
  };
  if (apiThrottle.rateLimit <= organization.perSecond || apiThrottle.burstLimit < apiThrottle.rateLimit) {
    // A stage throttle at or under one organization's limit lets one busy organization get every tenant 429s.
    throw new Error(
      `Invalid context: apiRateLimit (${apiThrottle.rateLimit}) must be above one organization's limit ` +
        `(${organization.perSecond}/s) and apiBurstLimit (${apiThrottle.burstLimit}) at least apiRateLimit`,
    );
  }
  const copyVaultArn = contextText(
    setting,
    'backupCopyVaultArn',
    /^arn:aws[a-z-]*:backup:[a-z0-9-]+:\d{12}:backup-vault:[A-Za-z0-9_.-]{2,50}$/,
    'the ARN of a backup vault (arn:aws:backup:<region>:<account>:backup-vault:<name>)',
  );
  const alarmEmail = contextText(setting, 'alarmEmail', EMAIL, 'an e-mail address');
  const alarmTopicArn = contextText(
    setting,
    'alarmTopicArn',
    /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/,
    'the ARN of an SNS topic',
  );
  const cognitoEmailFrom = contextText(setting, 'cognitoEmailFrom', EMAIL, 'the SES-verified sender address');
  const cognitoEmailSesRegion = contextText(setting, 'cognitoEmailSesRegion', REGION, 'a Region such as eu-west-1');
  if (cognitoEmailSesRegion && !cognitoEmailFrom) {
    throw new Error('Invalid context: cognitoEmailSesRegion is given with cognitoEmailFrom');
  }
  const env = { account: file.account, region: file.region };
  const sesRegion = cognitoEmailSesRegion ?? env.region;
  if (cognitoEmailFrom && !sesRegion) {
    // SES identities are regional, and an environment-agnostic stack does not know its Region at synth.
    throw new Error(
      'Invalid context: give cognitoEmailSesRegion (the Region of the SES identity) with cognitoEmailFrom, or the ' +
        "stage's region in config/<stage>.json",
    );
  }
  return {
    ...(perSecond && burst ? { rateLimit: { perSecond, burst } } : {}),
    apiThrottle,
    ...(env.account || env.region ? { env } : {}),
    reservedConcurrency: contextSwitch(setting, 'reservedConcurrency', true),
    terminationProtection: contextSwitch(setting, 'terminationProtection', true),
    backup: { enabled: contextSwitch(setting, 'backup', true), ...(copyVaultArn ? { copyVaultArn } : {}) },
    alarms: { ...(alarmEmail ? { email: alarmEmail } : {}), ...(alarmTopicArn ? { topicArn: alarmTopicArn } : {}) },
    ...(cognitoEmailFrom && sesRegion ? { cognitoEmail: { from: cognitoEmailFrom, sesRegion } } : {}),
    stage,
    knowledgeIndex,
    signUp,
    cors,
    waf,
    console: consoleSite,
    wafRateLimit,
    models: modelList,
    agentCodeFunctions,
    mcpSecrets,
    ...(openAiCompatible ? { openAiCompatible } : {}),
    ...(uploadUrlTtlSeconds !== undefined ? { uploadUrlTtlSeconds } : {}),
  };
}

export function createApp(props?: AppProps): { app: App; stack: AgentPlatformStack; config: AppConfig } {
  const app = new App(props);
  const config = readConfig(app);
  // Environment-agnostic unless the stage file names them: account and region then come from the deploying
  // credentials, and synth needs none.
  const stack = new AgentPlatformStack(app, 'AgentPlatformStack', {
    ...(config.env ? { env: config.env } : {}),
    terminationProtection: config.terminationProtection,
    stackName: `agent-platform-${config.stage}`,
    description: `Agent platform (${config.stage}): knowledge documents and dashboard API`,
    stage: config.stage,
    models: config.models,
    agentCodeFunctions: config.agentCodeFunctions,
    mcpSecrets: config.mcpSecrets,
    openAiCompatible: config.openAiCompatible,
    knowledgeIndex: config.knowledgeIndex,
    waf: config.waf,
    wafRateLimit: config.wafRateLimit,
    cors: config.cors,
    uploadUrlTtl: config.uploadUrlTtlSeconds === undefined ? undefined : Duration.seconds(config.uploadUrlTtlSeconds),
    rateLimit: config.rateLimit,
    apiThrottle: config.apiThrottle,
    reservedConcurrency: config.reservedConcurrency,
    backup: config.backup,
    alarms: config.alarms,
    cognitoEmail: config.cognitoEmail,
    signUp: config.signUp,
    console: config.console,
  });
  if (config.models.length === 0 && !config.openAiCompatible) {
    // cdk synth and cdk deploy print it; a deployment that wants answers from a model must not get this by mistake.
    Annotations.of(stack).addWarningV2(
      'agent-platform:models-offline',
      'models=offline: prompt nodes answer with their own prompt text and route by shared words, and generate ' +
        'answers extractively; no language model is called. Leave out -c models for the default ' +
        `(${DEFAULT_MODEL}) or list the Bedrock models to allow (README, "Models").`,
    );
  }
  Tags.of(app).add('project', 'agent-platform');
  Tags.of(app).add('stage', config.stage);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, config };
}

if (require.main === module) {
  createApp().app.synth();
}
