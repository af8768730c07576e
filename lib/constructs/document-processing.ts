/**
 * Document processing in AWS: the processing queue's consumer (S3 object-created events and the service's own
 * messages, partial batch responses, DLQ after PROCESSING_MAX_RECEIVES receives) and the watchdog on a schedule, both writing to the
 * Bedrock knowledge base of each environment. Grants follow WORKERS in lib/routes.ts.
 */
import { Duration, Size } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Architecture, RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_PROCESSING_TIMEOUT_SECONDS } from '#shared/config';
import { WORKERS } from '../routes';
import type { KnowledgeIndexBackend } from './knowledge-index';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction, WITH_BEDROCK_AGENT_SDK } from './service-function';

/** Packages the processor loads from node_modules at run time (see the bundling note below). */
const SHIPPED_MODULES = ['pdfjs-dist', '@napi-rs/canvas', '@napi-rs/canvas-linux-x64-gnu'] as const;

function copyModule(inputDir: string, outputDir: string, name: string): string {
  return `mkdir -p "${outputDir}/node_modules/${name}" && cp -R "${inputDir}/node_modules/${name}/." "${outputDir}/node_modules/${name}/"`;
}

export interface DocumentProcessingProps {
  readonly resources: PlatformResources;
  readonly processingQueue: IQueue;
  readonly knowledgeIndex: KnowledgeIndexBackend;
  /** Largest file processed (bytes). */
  readonly maxFileBytes: number;
  /** Largest ZIP archive imported (bytes); the function's temporary storage holds a copy while it is read. */
  readonly maxArchiveBytes: number;
  /** Reserve PROCESSOR_CONCURRENCY for the processor (default true; off for accounts under 150 concurrency). */
  readonly reservedConcurrency?: boolean;
}

/**
 * Processor invocations at once: the queue's event source never starts more, and as many are reserved for it, so a
 * bulk import neither throttles itself (a throttled batch waits out its visibility) nor takes the API's concurrency.
 */
export const PROCESSOR_CONCURRENCY = 10;

/** Messages per invocation of the processor. */
export const PROCESSING_BATCH_SIZE = 5;
/** Longest one file's text extraction may take before its child process is killed (EXTRACTION_TIMEOUT_SECONDS). */
export const EXTRACTION_TIMEOUT = Duration.seconds(60);
/** Memory of the extraction child process (EXTRACTION_MEMORY_MB), inside the function's 2,048 MB. */
export const EXTRACTION_MEMORY_MB = 1024;
/**
 * The processor's timeout: a batch whose every file runs into the extraction limit (extractions run one at a time)
 * still ends inside it, with a minute for reading, chunking and indexing, so a hostile file never makes the
 * invocation time out and takes the rest of its batch back to the queue with it.
 */
export const PROCESSING_TIMEOUT = Duration.seconds(PROCESSING_BATCH_SIZE * EXTRACTION_TIMEOUT.toSeconds() + 60);
/** Six times the processor's timeout, as AWS recommends for a queue a function consumes (docs/operations.md). */
export const PROCESSING_VISIBILITY_TIMEOUT = Duration.seconds(PROCESSING_TIMEOUT.toSeconds() * 6);
/** Receives of a processing message before the dead-letter queue: a throttled or cut-off batch is not one of them. */
export const PROCESSING_MAX_RECEIVES = 5;

export class DocumentProcessing extends Construct {
  public readonly processor: ServiceFunction;
  public readonly watchdog: ServiceFunction;

  constructor(scope: Construct, id: string, props: DocumentProcessingProps) {
    super(scope, id);
    const common = {
      ...props.knowledgeIndex.environment(),
      MAX_FILE_BYTES: String(props.maxFileBytes),
      ZIP_MAX_ARCHIVE_BYTES: String(props.maxArchiveBytes),
    };

    this.processor = new ServiceFunction(this, 'ProcessorFunction', {
      handlerFile: WORKERS.processing.handler,
      description: 'Extracts, chunks and indexes uploaded documents; imports ZIP archives',
      timeout: PROCESSING_TIMEOUT,
      memorySize: 2048,
      // A ZIP archive is read from a copy in /tmp (random access to its central directory), never from memory; a
      // batch's messages are worked on at once, so /tmp holds a whole batch of the largest archives, and room besides.
      ephemeralStorageSize: Size.mebibytes(
        PROCESSING_BATCH_SIZE * Math.ceil(props.maxArchiveBytes / 1024 / 1024) + 512,
      ),
      ...(props.reservedConcurrency === false ? {} : { reservedConcurrentExecutions: PROCESSOR_CONCURRENCY }),
      // It sends to its own queue on purpose: a document's confirm-indexed check, the next page of a deletion.
      recursiveLoop: RecursiveLoop.ALLOW,
      // pdfjs-dist cannot be bundled (it loads @napi-rs/canvas, a native addon, as it starts): both ship as
      // node_modules copied from this checkout. The registry mirror these machines use has the linux-x64-gnu build
      // of the addon only, so the processor runs on x86_64.
      architecture: Architecture.X86_64,
      bundling: {
        externalModules: [...WITH_BEDROCK_AGENT_SDK, ...SHIPPED_MODULES],
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (inputDir: string, outputDir: string) =>
            SHIPPED_MODULES.map((name) => copyModule(inputDir, outputDir, name)),
        },
      },
      environment: {
        ...common,
        EXTRACTION_TIMEOUT_SECONDS: String(EXTRACTION_TIMEOUT.toSeconds()),
        EXTRACTION_MEMORY_MB: String(EXTRACTION_MEMORY_MB),
        ...resourceEnvironment(props.resources, WORKERS.processing.access),
      },
    });
    grantAccess(this.processor, props.resources, WORKERS.processing.access);
    props.knowledgeIndex.grantIngest(this.processor);
    this.processor.addEventSource(
      new SqsEventSource(props.processingQueue, {
        batchSize: PROCESSING_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: PROCESSOR_CONCURRENCY,
      }),
    );

    this.watchdog = new ServiceFunction(this, 'WatchdogFunction', {
      handlerFile: WORKERS.watchdog.handler,
      description: 'Retries, then fails, documents left uploaded past the processing time limit',
      timeout: Duration.minutes(2),
      bundling: { externalModules: [...WITH_BEDROCK_AGENT_SDK] },
      // Only the watchdog reads it: how long a document may stay `uploaded` before it is retried, then failed.
      environment: {
        ...common,
        PROCESSING_TIMEOUT_SECONDS: String(DEFAULT_PROCESSING_TIMEOUT_SECONDS),
        ...resourceEnvironment(props.resources, WORKERS.watchdog.access),
      },
    });
    grantAccess(this.watchdog, props.resources, WORKERS.watchdog.access);
    props.knowledgeIndex.grantIngest(this.watchdog);
    new Rule(this, 'WatchdogSchedule', {
      schedule: Schedule.rate(Duration.minutes(5)),
      targets: [new LambdaFunction(this.watchdog)],
    });
  }
}
