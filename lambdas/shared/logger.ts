/** One Powertools logger per function. It logs request ids and errors, never request bodies. */
import { Logger } from '@aws-lambda-powertools/logger';

export const logger = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'agent-platform' });
