/**
 * One Powertools Tracer per function: `captureLambdaHandler` in each middy chain, every SDK client of
 * composition/clients captured. Outside Lambda (the local runtime, tests) it is disabled and wraps nothing.
 * Annotations are ids only (organizationId, agentId, environment), never contents or tokens.
 */
import { Tracer } from '@aws-lambda-powertools/tracer';
import { handlerVariable } from './environment';
import { SERVICE_NAME_DEFAULT } from './logger';

export const tracer = new Tracer({ serviceName: handlerVariable('POWERTOOLS_SERVICE_NAME') ?? SERVICE_NAME_DEFAULT });
