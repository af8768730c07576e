/**
 * The one way this app makes a Lambda function: a NodejsFunction with the defaults every handler shares, bundled by
 * the locally installed esbuild (never Docker) the same way `scripts/bundle-sizes.ts` measures it.
 */
import * as path from 'node:path';
import { Duration, type Size, Stack, Validations } from 'aws-cdk-lib';
import { Architecture, type RecursiveLoop, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { bundledRoutesDefine } from '../routes';

/** Handler paths in lib/routes.ts are relative to the repository root. */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export const SERVICE_NAME = 'agent-platform';

/** The CloudWatch namespace of the service's metrics in one stage: each stage's metrics and alarms stay apart. */
export function metricsNamespace(stage: string): string {
  return `AgentPlatform/${stage}`;
}

/**
 * Where a function finds its stage's namespace: the stack it is in says it (AgentPlatformStack does), or, for a function
 * in a nested stack (the API's route functions: platform-api.ts), the stack that nested stack is in.
 */
export interface ObservedStack {
  readonly metricsNamespace: string;
}

/** Namespace of a function in a stack that names none (a construct tested alone in a bare Stack). */
export const DEFAULT_METRICS_NAMESPACE = 'AgentPlatform';

/** Debug lines logged for this share of invocations (Powertools Logger sampling), at level INFO otherwise. */
export const DEBUG_LOG_SAMPLE_RATE = 0.01;

/**
 * The Powertools variables every function gets: service name, metrics namespace, log level and debug sampling.
 * (Each handler passes `captureResponse: false` to the tracer itself, so no tracer variable is needed.)
 */
export function powertoolsEnvironment(scope: Construct): Record<string, string> {
  let stack: Stack | undefined = Stack.of(scope);
  while (stack && (stack as Partial<ObservedStack>).metricsNamespace === undefined) stack = stack.nestedStackParent;
  const namespace = (stack as Partial<ObservedStack> | undefined)?.metricsNamespace ?? DEFAULT_METRICS_NAMESPACE;
  return {
    POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
    POWERTOOLS_METRICS_NAMESPACE: namespace,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_LOGGER_SAMPLE_RATE: String(DEBUG_LOG_SAMPLE_RATE),
  };
}

/** API Gateway gives up on an integration after 29 s, so an HTTP handler may not run longer. */
export const HTTP_TIMEOUT = Duration.seconds(29);

/** Shared with scripts/bundle-sizes.ts so the size check measures what is deployed. */
export const BUNDLING: BundlingOptions = {
  minify: true,
  sourceMap: true,
  target: 'node22',
  format: OutputFormat.CJS,
  // The nodejs22.x runtime ships AWS SDK v3; leaving it out keeps bundles small and cold starts short. Lambda has no
  // browser, so playwright-core and the driver over it (loaded only when BROWSER_DRIVER=playwright, which is the local
  // runtime's: every function that may run a browser task gets BROWSER_DRIVER=lambda) stay out as well. The
  // BrowserTask function, which does run Playwright, has bundling of its own (browser-task.ts).
  externalModules: [
    '@aws-sdk/*',
    'playwright-core',
    '#adapters/browser/playwright-driver',
    // The local runtime's AGENT_CODE module runner (composition/flow-container.ts): never set in Lambda.
    '#adapters/agent-code/module-functions',
  ],
  forceDockerBundling: false,
  // esbuild's per-bundle size listing adds nothing to `cdk synth`; `npm run bundle-sizes` reports sizes.
  logLevel: LogLevel.WARNING,
};

/**
 * The AWS SDK packages the functions import, all left to the Lambda runtime's own SDK except
 * `@aws-sdk/client-bedrock-agent`: its knowledge base document commands (IngestKnowledgeBaseDocuments and the
 * others, December 2024) are newer than the nodejs22.x runtime's first SDK, so the functions that ingest into Bedrock
 * (the processor and the watchdog) bundle the client they were tested with (`WITH_BEDROCK_AGENT_SDK`). Every other
 * command used predates that runtime (README, "The SDK the functions run with").
 */
export const RUNTIME_SDK_PACKAGES = [
  '@aws-sdk/client-bedrock-agent-runtime',
  '@aws-sdk/client-bedrock-runtime',
  '@aws-sdk/client-cognito-identity-provider',
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-lambda',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/client-sqs',
  '@aws-sdk/lib-dynamodb',
  '@aws-sdk/s3-request-presigner',
] as const;

/** Bundling of a function that ingests into Bedrock: the Bedrock Agent client bundled, the rest of the SDK not. */
export const WITH_BEDROCK_AGENT_SDK: readonly string[] = [...RUNTIME_SDK_PACKAGES, 'playwright-core'];

export interface ServiceFunctionProps {
  /** Handler file relative to the repository root; it exports `handler`. */
  readonly handlerFile: string;
  readonly description: string;
  /** @default HTTP_TIMEOUT */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** /tmp of the function. @default 512 MiB */
  readonly ephemeralStorageSize?: Size;
  /** @default ARM_64 */
  readonly architecture?: Architecture;
  /** Bundling on top of BUNDLING (e.g. packages shipped as node_modules instead of bundled). */
  readonly bundling?: BundlingOptions;
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * A log group the function shares with others (the API's route functions: platform-api.ts). @default one of its own,
   * kept a month.
   */
  readonly logGroup?: LogGroup;
  /** Concurrency set aside for (and capping) the function: a heavy worker then cannot starve the API. @default none */
  readonly reservedConcurrentExecutions?: number;
  /**
   * `ALLOW` for a function that sends to the queue that triggers it on purpose (a job in pages, a run handed to the
   * next invocation): Lambda's recursive-loop detection would otherwise stop such a chain after about 16 hops.
   * @default TERMINATE (Lambda's own default)
   */
  readonly recursiveLoop?: RecursiveLoop;
}

export class ServiceFunction extends NodejsFunction {
  /**
   * The function's log group, created explicitly so its retention is set and it is deleted with nothing else; shared
   * by the API's functions (each line names its function: Powertools' `function_name`).
   */
  public readonly functionLogGroup: LogGroup;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    const logGroup = props.logGroup ?? new LogGroup(scope, `${id}Logs`, { retention: RetentionDays.ONE_MONTH });
    super(scope, id, {
      entry: path.join(REPO_ROOT, props.handlerFile),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: props.architecture ?? Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      ephemeralStorageSize: props.ephemeralStorageSize,
      timeout: props.timeout ?? HTTP_TIMEOUT,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      recursiveLoop: props.recursiveLoop,
      tracing: Tracing.ACTIVE,
      logGroup,
      bundling: {
        ...BUNDLING,
        ...props.bundling,
        define: { ...bundledRoutesDefine(props.handlerFile), ...props.bundling?.define },
      },
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        ...powertoolsEnvironment(scope),
        ...props.environment,
      },
    });
    this.functionLogGroup = logGroup;

    Validations.of(this).acknowledge(
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason:
          'AWSLambdaBasicExecutionRole only allows writing to CloudWatch Logs; it is the AWS-maintained minimum for a ' +
          'function, and the function logs to its own log group created beside it.',
      },
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which X-Ray only supports on ' +
          'resource "*" (these actions have no resource-level permissions).',
      },
      {
        id: 'AwsSolutions-L1',
        reason:
          'nodejs22.x is pinned on purpose: the local runtime, the esbuild target (node22) and the size check all use ' +
          'Node 22, and they move to the next LTS together.',
      },
    );
  }
}
