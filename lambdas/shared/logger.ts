/**
 * One Powertools logger per function. It logs request ids and errors, never request bodies. Its level comes from
 * POWERTOOLS_LOG_LEVEL and its debug sampling from POWERTOOLS_LOGGER_SAMPLE_RATE (both set by ServiceFunction).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { handlerVariable } from './environment';

export const SERVICE_NAME_DEFAULT = 'agent-platform';

export const logger = new Logger({ serviceName: handlerVariable('POWERTOOLS_SERVICE_NAME') ?? SERVICE_NAME_DEFAULT });
