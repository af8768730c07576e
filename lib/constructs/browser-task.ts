/**
 * The BrowserTask function: browser tasks of flows run here, in the Chromium of @sparticuz/chromium through
 * playwright-core, with the same driver, task loop and guard proxy as the local runtime
 * (lambdas/handlers/browser/browser-task.ts). The flow functions invoke it (`browserTask: 'invoke'` in
 * lib/routes.ts: BROWSER_DRIVER=lambda and lambda:InvokeFunction on it, nothing else may); it holds the model's
 * configuration and grant, and no table.
 *
 * The package carries the browser: @sparticuz/chromium is bundled into index.js (the handler gives it the folder of
 * its brotli archives), its bin/ (Chromium, the al2023 libraries, fonts, SwiftShader) is copied to bin/ beside it,
 * and playwright-core, which reads its own files at run time, ships as node_modules.
 */
import * as path from 'node:path';
import { Duration, Size } from 'aws-cdk-lib';
import { Architecture } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { BROWSER_TIME_LIMIT_MS } from '#core/flows/browser-task';
import { WORKERS } from '../routes';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction } from './service-function';

/** The task's time limit, and a minute for unpacking and starting Chromium on a cold start and for the last page. */
export const BROWSER_TASK_TIMEOUT = Duration.seconds(BROWSER_TIME_LIMIT_MS / 1000 + 60);
/** @sparticuz/chromium asks for 1,600 MB at least; Lambda's CPU share grows with memory, and pages render faster. */
export const BROWSER_TASK_MEMORY_MB = 2048;
/** /tmp holds the unpacked Chromium (about 210 MB), its libraries and fonts, and the profile of each task. */
export const BROWSER_TASK_EPHEMERAL_STORAGE = Size.mebibytes(1024);

export interface BrowserTaskProps {
  /** For the model's configuration and grant (the generate model of the stack), as the flow functions have it. */
  readonly resources: PlatformResources;
  /** Reserve BROWSER_TASK_CONCURRENCY for the task (default true). */
  readonly reservedConcurrency?: boolean;
}

/**
 * Browser tasks at once, reserved: as many as flow runners (a task runs only in the runner, docs/flows.md), so a
 * runner's task is never throttled, and 2 GB tasks cannot take the account's concurrency from the API.
 */
export const BROWSER_TASK_CONCURRENCY = 20;

export class BrowserTask extends Construct {
  public readonly function: ServiceFunction;

  constructor(scope: Construct, id: string, props: BrowserTaskProps) {
    super(scope, id);
    const { handler, access } = WORKERS.browserTask;
    this.function = new ServiceFunction(this, 'BrowserTaskFunction', {
      handlerFile: handler,
      description: 'Runs one browser task of a flow in Chromium: the page operated step by step by the model',
      timeout: BROWSER_TASK_TIMEOUT,
      memorySize: BROWSER_TASK_MEMORY_MB,
      ephemeralStorageSize: BROWSER_TASK_EPHEMERAL_STORAGE,
      ...(props.reservedConcurrency === false ? {} : { reservedConcurrentExecutions: BROWSER_TASK_CONCURRENCY }),
      // The Chromium of @sparticuz/chromium is built for x86_64 only.
      architecture: Architecture.X86_64,
      bundling: {
        externalModules: ['@aws-sdk/*', 'playwright-core'],
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (inputDir: string, outputDir: string) => [
            copy(path.join(inputDir, 'node_modules', '@sparticuz', 'chromium', 'bin'), path.join(outputDir, 'bin')),
            copy(
              path.join(inputDir, 'node_modules', 'playwright-core'),
              path.join(outputDir, 'node_modules', 'playwright-core'),
            ),
          ],
        },
      },
      environment: resourceEnvironment(props.resources, access),
    });
    grantAccess(this.function, props.resources, access);
  }
}

function copy(from: string, to: string): string {
  return `mkdir -p "${to}" && cp -R "${from}/." "${to}/"`;
}
