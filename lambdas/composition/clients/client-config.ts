/**
 * Region, endpoint and credentials of an AWS SDK client, from the handlers' environment (shared/environment.ts) and
 * read as the SDK reads them from `process.env` (AWS_REGION, AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL, the
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN of the function's role in Lambda), so a handler
 * run by the local runtime reaches its engines without the runtime writing the process environment. What is not
 * set is left to the SDK's own defaults.
 */
import { handlerEnvironment } from '#shared/environment';

export interface ClientConfig {
  region?: string;
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/** `service` as in the SDK's service-specific endpoint variable: DYNAMODB, S3, SQS, BEDROCK_RUNTIME, … */
export function clientConfig(service: string): ClientConfig {
  const env = handlerEnvironment();
  const config: ClientConfig = {};
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (region) config.region = region;
  const endpoint = env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL;
  if (endpoint) config.endpoint = endpoint;
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN } = env;
  if (AWS_ACCESS_KEY_ID && AWS_SECRET_ACCESS_KEY) {
    config.credentials = {
      accessKeyId: AWS_ACCESS_KEY_ID,
      secretAccessKey: AWS_SECRET_ACCESS_KEY,
      ...(AWS_SESSION_TOKEN ? { sessionToken: AWS_SESSION_TOKEN } : {}),
    };
  }
  return config;
}
