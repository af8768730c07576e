/**
 * The BrowserTask function: runs one browser task (the page opened, then operated by the task's model) in the
 * Chromium of @sparticuz/chromium, with the same driver and task loop as the local runtime, behind the same guard
 * proxy. The stack's flow functions invoke it (lambdas/adapters/browser/lambda-driver.ts); it answers a
 * BrowserTaskReply, never throws for a task that failed. Its model comes from the same configuration as the flow
 * functions' (lambdas/composition/flow-model.ts); it touches no table.
 */
import { join } from 'node:path';
import type { BrowserTaskReply } from '#adapters/browser/lambda-driver';
import { LAMBDA_CHROMIUM_FLAGS, PlaywrightBrowserDriver } from '#adapters/browser/playwright-driver';
import { allowPrivateNetworkFromEnv } from '#adapters/network/url-guard';
import { flowModelResolverFromEnv } from '#composition/flow-model';
import { AppError } from '#core/errors';
import { parseInput } from '#core/validation';
import { handlerVariable } from '#shared/environment';
import { logger } from '#shared/logger';
import { observed } from '#shared/observed';
import { tracedUseCase } from '#shared/tracer';
import { browserTaskRequest } from './schemas';

/**
 * In Lambda: the package's own unpacking (its al2023 libraries into /tmp, LD_LIBRARY_PATH set as it loads), from the
 * bin/ folder the stack copies beside this bundle (lib/constructs/browser-task.ts). Loaded only there: the package is
 * ES modules only, and anywhere else the driver unpacks the binary into a private folder itself.
 */
async function lambdaChromium(): Promise<string> {
  const { default: chromium } = await import('@sparticuz/chromium');
  chromium.setGraphicsMode = false; // pages are read, never drawn: SwiftShader is not unpacked
  return chromium.executablePath(join(__dirname, 'bin'));
}

const inLambda = () => handlerVariable('AWS_LAMBDA_FUNCTION_NAME') !== undefined && !handlerVariable('CHROMIUM_PATH');

/** One per execution environment: Chromium stays up between tasks (composition/container.ts is not loaded here). */
let browser: PlaywrightBrowserDriver | undefined;
const driver = () => {
  browser ??= new PlaywrightBrowserDriver({
    allowPrivateNetwork: allowPrivateNetworkFromEnv(),
    models: flowModelResolverFromEnv(),
    ...(inLambda() ? { executablePath: lambdaChromium, extraFlags: LAMBDA_CHROMIUM_FLAGS } : {}),
  });
  return browser;
};

/** Chromium is closed with the process (tests, the local stand-in); Lambda freezes and ends it by itself. */
export async function closeBrowser(): Promise<void> {
  await browser?.close();
  browser = undefined;
}

export const handler = observed(async (event: unknown): Promise<BrowserTaskReply> => {
  try {
    const request = parseInput(browserTaskRequest, event);
    return { ok: true, result: await tracedUseCase('browser-task', {}, () => driver().run(request)) };
  } catch (error) {
    if (!(error instanceof AppError)) {
      logger.error('browser task failed', { error: error as Error });
      throw error;
    }
    return {
      ok: false,
      error: { status: error.status, code: error.code, message: error.message, details: error.details },
    };
  }
});
