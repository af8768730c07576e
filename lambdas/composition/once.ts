/** A value built on first use and kept for the life of the process (a Lambda cold start). */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= build();
    return value;
  };
}
