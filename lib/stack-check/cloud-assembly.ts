/**
 * The synthesized stack as a deploy sees it: the app synthesized into a cloud assembly (template + bundled asset
 * folders), its Lambda functions read from the TEMPLATE (not from lib/routes.ts), and the template's intrinsic
 * functions resolved to the names and ARNs the resources get. `npm run test:stack` (test/stack) is built on this.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createApp } from '../../bin/app';
import { type AssemblyTemplate, flattenTemplate } from './nested-stacks';

export const SYNTHETIC_ACCOUNT = '000000000000';
export const SYNTHETIC_REGION = 'us-east-1';
const STACK_NAME = 'agent-platform-dev';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, Json>;
  readonly Metadata?: Record<string, Json>;
  readonly DependsOn?: Json;
}

export interface CfnTemplate {
  readonly Resources: Record<string, TemplateResource>;
}

export interface CloudAssembly {
  readonly directory: string;
  /** The stack's own template file (its nested stacks' files are in `templates`). */
  readonly templateFile: string;
  /** The deployed whole: the stack's template with its nested stacks merged in (nested-stacks.ts). */
  readonly template: CfnTemplate;
  /** Every template file as synthesized, the stack's first: what CloudFormation's quotas per template count. */
  readonly templates: readonly AssemblyTemplate[];
}

const REPO_ROOT = path.resolve(__dirname, '..', '..');

/**
 * Synthesizes the app as `cdk synth` does (bin/app.ts, cdk.json's context, cdk-nag, handlers bundled by the local
 * esbuild) into `outdir`, with extra context such as `{ knowledgeIndex: 'dynamodb' }`.
 */
export function synthesizeCloudAssembly(outdir: string, context: Record<string, string> = {}): CloudAssembly {
  const cdkJson = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  const built = createApp({ context: { ...cdkJson.context, ...context }, outdir });
  const assembly = built.app.synth();
  return readCloudAssembly(assembly.directory);
}

/**
 * Reads a cloud assembly folder that `cdk synth -o <dir>` (or synthesizeCloudAssembly) wrote: its one stack, with its
 * nested stacks (`*.nested.template.json`) flattened into one template.
 */
export function readCloudAssembly(directory: string): CloudAssembly {
  const templates = fs
    .readdirSync(directory)
    .filter((f) => f.endsWith('.template.json') && !f.endsWith('.nested.template.json'));
  if (templates.length !== 1) throw new Error(`expected one stack template in ${directory}, found ${templates.length}`);
  const templateFile = path.join(directory, templates[0]);
  return { directory, templateFile, ...flattenTemplate(directory, templateFile) };
}

/** A function of the template, with what Lambda would run it with. */
export interface TemplateFunction {
  readonly logicalId: string;
  /** `index.handler`: file `index.js` of the asset, export `handler`. */
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  /** The asset folder a deploy zips and uploads. */
  readonly assetDirectory: string;
  /** Environment as written in the template (values may be intrinsic functions). */
  readonly environment: Record<string, Json>;
  /** Logical id of the function's execution role. */
  readonly roleLogicalId: string;
}

/** The Node.js functions of the template (CDK's own Python custom resource handlers are left out). */
export function nodeFunctions(assembly: CloudAssembly): TemplateFunction[] {
  return Object.entries(assembly.template.Resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function')
    .filter(([, r]) => String(r.Properties?.Runtime ?? '').startsWith('nodejs'))
    .map(([logicalId, r]) => {
      const p = r.Properties as Record<string, Json>;
      const code = p.Code as { S3Key?: string };
      if (typeof code?.S3Key !== 'string') throw new Error(`${logicalId}: Code has no S3Key (an inline function?)`);
      const role = p.Role as { 'Fn::GetAtt'?: [string, string] };
      if (!role?.['Fn::GetAtt']) throw new Error(`${logicalId}: Role is not a role of the stack`);
      return {
        logicalId,
        handler: String(p.Handler),
        runtime: String(p.Runtime),
        timeoutSeconds: Number(p.Timeout ?? 3),
        memorySize: Number(p.MemorySize ?? 128),
        assetDirectory: path.join(assembly.directory, `asset.${code.S3Key.replace(/\.zip$/, '')}`),
        environment: ((p.Environment as { Variables?: Record<string, Json> } | undefined)?.Variables ?? {}) as Record<
          string,
          Json
        >,
        roleLogicalId: role['Fn::GetAtt'][0],
      };
    });
}

/**
 * Physical names of the stack's resources. Unless overridden (the local engines' names), a resource is named after
 * its logical id, as a deploy would name it after the stack and that id; ARNs are in SYNTHETIC_ACCOUNT and
 * SYNTHETIC_REGION.
 */
export class ResourceNames {
  constructor(
    private readonly template: CfnTemplate,
    private readonly overrides: Readonly<Record<string, string>> = {},
  ) {}

  private typeOf(logicalId: string): string {
    const resource = this.template.Resources[logicalId];
    if (!resource) throw new Error(`no resource ${logicalId} in the template`);
    return resource.Type;
  }

  /** What `Ref` returns. */
  ref(logicalId: string): string {
    const type = this.typeOf(logicalId);
    if (type === 'AWS::SQS::Queue') return this.queueUrl(logicalId);
    if (type === 'AWS::SecretsManager::Secret') return this.arn(logicalId);
    return this.physicalName(logicalId);
  }

  physicalName(logicalId: string): string {
    const type = this.typeOf(logicalId);
    if (type === 'AWS::ApiGateway::Stage') return String(this.template.Resources[logicalId].Properties?.StageName);
    const name = this.overrides[logicalId] ?? logicalId;
    return type === 'AWS::S3::Bucket' ? name.toLowerCase() : name;
  }

  queueUrl(logicalId: string): string {
    return (
      this.overrides[`${logicalId}.QueueUrl`] ??
      `https://sqs.${SYNTHETIC_REGION}.amazonaws.com/${SYNTHETIC_ACCOUNT}/${this.physicalName(logicalId)}`
    );
  }

  arn(logicalId: string): string {
    const type = this.typeOf(logicalId);
    const name = this.physicalName(logicalId);
    const at = `${SYNTHETIC_REGION}:${SYNTHETIC_ACCOUNT}`;
    switch (type) {
      case 'AWS::DynamoDB::Table':
      case 'AWS::DynamoDB::GlobalTable':
        return `arn:aws:dynamodb:${at}:table/${name}`;
      case 'AWS::S3::Bucket':
        return `arn:aws:s3:::${name}`;
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${at}:${name}`;
      case 'AWS::Lambda::Function':
        return `arn:aws:lambda:${at}:function:${name}`;
      case 'AWS::IAM::Role':
        return `arn:aws:iam::${SYNTHETIC_ACCOUNT}:role/${name}`;
      case 'AWS::Logs::LogGroup':
        return `arn:aws:logs:${at}:log-group:${name}:*`;
      case 'AWS::Bedrock::KnowledgeBase':
        return `arn:aws:bedrock:${at}:knowledge-base/${this.bedrockId(logicalId)}`;
      case 'AWS::Events::Rule':
        return `arn:aws:events:${at}:rule/${name}`;
      case 'AWS::S3Vectors::VectorBucket':
        return `arn:aws:s3vectors:${at}:bucket/${name}`;
      case 'AWS::Cognito::UserPool':
        return `arn:aws:cognito-idp:${at}:userpool/${name}`;
      case 'AWS::SecretsManager::Secret':
        // Secrets Manager ends a secret's ARN with a hyphen and six random characters.
        return `arn:aws:secretsmanager:${at}:secret:${name}-Ab12Cd`;
      default:
        return `arn:aws:${type.split('::')[1].toLowerCase()}:${at}:${name}`;
    }
  }

  /**
   * The id Bedrock gives a knowledge base or a data source: ten upper-case letters and digits (the API reference's
   * pattern `[0-9a-zA-Z]{10}`), derived from the logical id so that every run names it the same.
   */
  bedrockId(logicalId: string): string {
    this.typeOf(logicalId);
    const digest = createHash('sha256').update(this.physicalName(logicalId)).digest();
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    return Array.from(digest.subarray(0, 10), (byte) => alphabet[byte % alphabet.length]).join('');
  }

  /** What `Fn::GetAtt` returns. */
  attribute(logicalId: string, attribute: string): string {
    switch (attribute) {
      case 'Arn':
      case 'KnowledgeBaseArn':
      case 'VectorBucketArn':
        return this.arn(logicalId);
      case 'QueueUrl':
        return this.queueUrl(logicalId);
      case 'QueueName':
        return this.physicalName(logicalId);
      case 'RootResourceId':
        return `${logicalId}Root`;
      case 'KnowledgeBaseId':
      case 'DataSourceId':
        return this.bedrockId(logicalId);
      case 'ProviderURL':
        // A user pool's issuer; the runner's own pool (cognito-local) overrides it.
        return (
          this.overrides[`${logicalId}.ProviderURL`] ??
          `https://cognito-idp.${SYNTHETIC_REGION}.amazonaws.com/${this.physicalName(logicalId)}`
        );
      default:
        throw new Error(`Fn::GetAtt ${logicalId}.${attribute} is not resolved by the stack check`);
    }
  }
}

const PSEUDO: Record<string, string> = {
  'AWS::Region': SYNTHETIC_REGION,
  'AWS::AccountId': SYNTHETIC_ACCOUNT,
  'AWS::Partition': 'aws',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': STACK_NAME,
};

/** The logical id a `Ref` or `Fn::GetAtt` names; undefined for any other value. */
export function logicalIdNamedBy(value: Json): string | undefined {
  const v = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | null;
  return v?.Ref ?? v?.['Fn::GetAtt']?.[0];
}

/** Resolves Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split; anything else is an error. */
export function resolveIntrinsics(value: Json, names: ResourceNames): Json {
  if (Array.isArray(value)) return value.map((v) => resolveIntrinsics(v, names));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && (keys[0] === 'Ref' || keys[0].startsWith('Fn::'))) {
    const arg = value[keys[0]];
    switch (keys[0]) {
      case 'Ref': {
        const id = String(arg);
        return PSEUDO[id] ?? names.ref(id);
      }
      case 'Fn::GetAtt': {
        const [id, attribute] = Array.isArray(arg) ? arg.map(String) : String(arg).split('.');
        return names.attribute(id, attribute);
      }
      case 'Fn::Join': {
        const [separator, parts] = arg as [string, Json[]];
        return (resolveIntrinsics(parts, names) as Json[]).map(String).join(separator);
      }
      case 'Fn::Select': {
        const [index, list] = arg as [Json, Json];
        return (resolveIntrinsics(list, names) as Json[])[Number(resolveIntrinsics(index, names))];
      }
      case 'Fn::Split': {
        const [separator, text] = arg as [string, Json];
        return String(resolveIntrinsics(text, names)).split(separator);
      }
      case 'Fn::Sub': {
        const [text, vars] = (typeof arg === 'string' ? [arg, {}] : arg) as [string, Record<string, Json>];
        return text.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
          if (name in vars) return String(resolveIntrinsics(vars[name], names));
          if (PSEUDO[name]) return PSEUDO[name];
          const [id, attribute] = name.split('.');
          return attribute ? names.attribute(id, attribute) : names.ref(id);
        });
      }
      default:
        throw new Error(`${keys[0]} is not resolved by the stack check`);
    }
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveIntrinsics(v, names)]));
}

/** The function's environment with every value a plain string, as Lambda gives it to the process. */
export function resolvedEnvironment(fn: TemplateFunction, names: ResourceNames): Record<string, string> {
  return Object.fromEntries(
    Object.entries(fn.environment).map(([k, v]) => {
      const resolved = resolveIntrinsics(v, names);
      if (typeof resolved !== 'string') throw new Error(`${fn.logicalId}: ${k} does not resolve to a string`);
      return [k, resolved];
    }),
  );
}
