/**
 * tracedUseCase against a stand-in for the X-Ray segment (X-Ray cannot run here): one subsegment per use case, its
 * annotations, its error, always closed; nothing at all where tracing is off.
 */
import { tracedUseCase, type UseCaseTracer } from '#shared/tracer';

interface FakeSubsegment {
  name: string;
  annotations: Record<string, string>;
  errors: Error[];
  closed: boolean;
}

function fakeTracer(enabled: boolean) {
  const subsegments: FakeSubsegment[] = [];
  const segment = {
    addNewSubsegment(name: string) {
      const sub: FakeSubsegment = { name, annotations: {}, errors: [], closed: false };
      subsegments.push(sub);
      return {
        addAnnotation: (key: string, value: string) => {
          sub.annotations[key] = value;
        },
        addError: (error: Error) => sub.errors.push(error),
        close: () => {
          sub.closed = true;
        },
      };
    },
  };
  const tracer = { isTracingEnabled: () => enabled, getSegment: () => segment } as unknown as UseCaseTracer;
  return { tracer, subsegments };
}

it('runs the use case in a closed subsegment named after it, annotated with the ids given', async () => {
  const { tracer, subsegments } = fakeTracer(true);
  const result = await tracedUseCase(
    'process-document',
    { agentId: 'a1', environment: 'production', organizationId: undefined },
    async () => 42,
    tracer,
  );
  expect(result).toBe(42);
  expect(subsegments).toEqual([
    {
      name: '### process-document',
      annotations: { agentId: 'a1', environment: 'production' },
      errors: [],
      closed: true,
    },
  ]);
});

it('marks the subsegment with the error, closes it and rethrows', async () => {
  const { tracer, subsegments } = fakeTracer(true);
  const failure = new Error('index unreachable');
  await expect(tracedUseCase('process-zip', {}, async () => Promise.reject(failure), tracer)).rejects.toBe(failure);
  expect(subsegments[0]).toMatchObject({ name: '### process-zip', errors: [failure], closed: true });
});

it('only runs the use case where tracing is off', async () => {
  const { tracer, subsegments } = fakeTracer(false);
  expect(await tracedUseCase('watchdog', { agentId: 'a1' }, async () => 'done', tracer)).toBe('done');
  expect(subsegments).toEqual([]);
  // The module's own tracer is off outside Lambda, as in the local runtime.
  expect(await tracedUseCase('watchdog', {}, async () => 'also done')).toBe('also done');
});
