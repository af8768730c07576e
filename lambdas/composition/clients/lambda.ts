/**
 * The Lambda clients of a flow function, built with what uses them: the BrowserTask function is invoked from the flow
 * functions of the stack (BROWSER_DRIVER=lambda), once per browser task; agent code deployed as a Lambda function, once
 * per call of it (docs/agent-code.md).
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { LambdaAgentCodeFunctions } from '#adapters/agent-code/lambda-functions';
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
  return new LambdaBrowserDriver({ functionName, client: lambdaClient(env, region) });
}

/**
 * Agent code functions, invoked with the function's own role (its grant names exactly the registered functions);
 * the region of the invoke is the function ARN's own, as the SDK takes it from a full ARN.
 */
export function lambdaAgentCodeFunctionsFromEnv(
  env: EnvironmentValues = handlerEnvironment(),
): LambdaAgentCodeFunctions {
  return new LambdaAgentCodeFunctions(lambdaClient(env, env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1'));
}

/**
 * The endpoint (AWS_ENDPOINT_URL_LAMBDA or AWS_ENDPOINT_URL, as the SDK reads them) and the function's credentials
 * from `env`. One attempt: a retried invoke would run a second browser task, or a second handler call, with the same
 * effects.
 */
function lambdaClient(env: EnvironmentValues, region: string): LambdaClient {
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = env;
  return new LambdaClient({
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
    maxAttempts: 1,
  });
}
