/**
 * The Lambda client of a flow function, built with the driver that uses it: the BrowserTask function is invoked from
 * the flow functions of the stack (BROWSER_DRIVER=lambda), once per browser task.
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { LambdaBrowserDriver, unavailable } from '#adapters/browser/lambda-driver';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';

/**
 * The driver of a flow function in the stack: BROWSER_TASK_FUNCTION, the region, the endpoint
 * (AWS_ENDPOINT_URL_LAMBDA or AWS_ENDPOINT_URL, as the SDK reads them) and the function's credentials from `env`.
 */
export function lambdaBrowserDriverFromEnv(env: EnvironmentValues = handlerEnvironment()): LambdaBrowserDriver {
  const functionName = env.BROWSER_TASK_FUNCTION;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!functionName || !region) {
    throw unavailable('BROWSER_DRIVER=lambda needs BROWSER_TASK_FUNCTION and AWS_REGION');
  }
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = env;
  const client = new LambdaClient({
    region,
    endpoint: env.AWS_ENDPOINT_URL_LAMBDA || env.AWS_ENDPOINT_URL || undefined,
    // Without keys in the environment nothing can sign the invoke: said at the call, not as a provider chain search.
    credentials: async () => {
      if (!AWS_ACCESS_KEY_ID || !AWS_SECRET_ACCESS_KEY) throw new Error('NoCredentials');
      return {
        accessKeyId: AWS_ACCESS_KEY_ID,
        secretAccessKey: AWS_SECRET_ACCESS_KEY,
        sessionToken: AWS_SESSION_TOKEN,
      };
    },
    // One attempt: a retried invoke would run a second browser task with the same effects on the page's site.
    maxAttempts: 1,
  });
  return new LambdaBrowserDriver({ functionName, client });
}
