/**
 * One Powertools Tracer per function: `captureLambdaHandler` in each middy chain, every SDK client of
 * composition/clients captured. Outside Lambda (the local runtime, tests) it is disabled and wraps nothing.
 * Annotations are ids only (organizationId, agentId, environment), never contents or tokens.
 */
// First: the X-Ray SDK's mode, read once as it loads.
import './xray-mode';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { handlerVariable } from './environment';
import { SERVICE_NAME_DEFAULT } from './logger';

export const tracer = new Tracer({ serviceName: handlerVariable('POWERTOOLS_SERVICE_NAME') ?? SERVICE_NAME_DEFAULT });

/** What tracedUseCase needs of a Tracer (the module's own in the functions; tests hand another). */
export type UseCaseTracer = Pick<Tracer, 'isTracingEnabled' | 'getSegment'>;

/**
 * Runs one use case of a worker in a subsegment of its own, `### <useCase>`, annotated with the ids it concerns
 * (`organizationId`, `agentId`, `environment`; undefined ones left out) and marked with its error if it throws: in
 * X-Ray each record of a batch is one subsegment, and a trace search by agent or environment finds it. The SDK calls
 * it makes stay subsegments of the invocation (records of a batch run concurrently, and the segment a call attaches to
 * is the function's). Where tracing is off (locally, in tests), it only runs the use case.
 */
export async function tracedUseCase<T>(
  useCase: string,
  annotations: Readonly<Record<string, string | undefined>>,
  run: () => Promise<T>,
  using: UseCaseTracer = tracer,
): Promise<T> {
  const parent = using.isTracingEnabled() ? using.getSegment() : undefined;
  if (!parent) return run();
  const subsegment = parent.addNewSubsegment(`### ${useCase}`);
  for (const [name, value] of Object.entries(annotations)) if (value) subsegment.addAnnotation(name, value);
  try {
    return await run();
  } catch (error) {
    subsegment.addError(error as Error);
    throw error;
  } finally {
    subsegment.close();
  }
}
