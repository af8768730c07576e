/**
 * Whether two definitions are the same: equal as canonical JSON (object keys sorted, array order kept, undefined
 * left out as JSON leaves it). A save equal to the current version stores nothing.
 */

/** JSON text of `value` with every object's keys in sorted order, so equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

export function sameDefinition(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
