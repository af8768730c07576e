/**
 * The local router's queue per function (lib/local/router.ts, Slots): at most N invocations of one function at once,
 * the others started in the order they arrived, and a failing invocation frees its slot.
 */
import { Slots } from '../../../lib/local/router';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

test('runs at most the limit at once and starts the rest in arrival order', async () => {
  const slots = new Slots(2);
  const gates = Array.from({ length: 5 }, deferred);
  const started: number[] = [];
  let running = 0;
  let most = 0;
  const all = gates.map((gate, index) =>
    slots.run(async () => {
      started.push(index);
      running += 1;
      most = Math.max(most, running);
      await gate.promise;
      running -= 1;
      return index;
    }),
  );
  await new Promise((done) => setImmediate(done));
  expect(started).toEqual([0, 1]);
  gates[1].resolve();
  await new Promise((done) => setImmediate(done));
  expect(started).toEqual([0, 1, 2]);
  // A newcomer after the queue formed waits behind it.
  const late = slots.run(async () => {
    started.push(99);
    return 99;
  });
  for (const gate of gates) gate.resolve();
  expect(await Promise.all([...all, late])).toEqual([0, 1, 2, 3, 4, 99]);
  expect(started).toEqual([0, 1, 2, 3, 4, 99]);
  expect(most).toBe(2);
});

test('a task that throws frees its slot for the next', async () => {
  const slots = new Slots(1);
  const failing = slots.run(async () => {
    throw new Error('handler failed');
  });
  const next = slots.run(async () => 'ran');
  await expect(failing).rejects.toThrow('handler failed');
  await expect(next).resolves.toBe('ran');
});

test('a limit below 1 is refused', () => {
  expect(() => new Slots(0)).toThrow(/whole number ≥ 1/);
  expect(() => new Slots(1.5)).toThrow(/whole number ≥ 1/);
});
