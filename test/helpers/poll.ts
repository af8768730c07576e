/** Calls `attempt` until `done` holds for its result, at most `ms` milliseconds; returns the last result. */
export async function pollUntil<T>(attempt: () => Promise<T>, done: (value: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}
