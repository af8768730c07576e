/**
 * Placeholders in prompt text and tool parameters (docs/flows.md): `{state.memory.<path>}` or `{memory.<path>}`,
 * `{tools.<NodeName>.<path>}`, `{env.<VARIABLE_NAME>}` and `{system.<path>}`. A string is inserted as is, a number
 * or boolean as its text, an object or array as JSON, null as `null`; a value that does not exist (undefined
 * included) leaves the placeholder as written. Anything else in braces, such as JSON in a prompt, is left alone.
 *
 * Substitution is a single pass: text that a value brings in is never scanned again, so a user who stores
 * `{env.API_KEY}` in memory gets that text back, not the key. Paths walk own properties only, and the segments
 * `__proto__`, `prototype` and `constructor` never resolve. `env` is whatever the caller passes (the runtime
 * passes the definition's variables), never the process environment.
 */

export interface PlaceholderScope {
  readonly memory: unknown;
  /** Outputs of the nodes that have run, by node name. */
  readonly tools: Readonly<Record<string, unknown>>;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly system: Readonly<Record<string, unknown>>;
}

export type PlaceholderKind = 'memory' | 'tools' | 'env' | 'system';

export interface PlaceholderRef {
  /** `{state.memory.x}` and `{memory.x}` are both `memory`. */
  readonly kind: PlaceholderKind;
  /**
   * Dot path after the kind, array indexes as segments (`items[0].name` gives `items.0.name`). For `tools` the
   * first segment is the node name; for `env` it is the variable name.
   */
  readonly path: string;
  /** The placeholder as written, braces included. */
  readonly raw: string;
}

/** A path segment (as in retrieval filters), optionally followed by array indexes: `items`, `items[0][1]`. */
const SEGMENT = String.raw`[A-Za-z0-9_$-]+(?:\[\d+\])*`;
const PATH = String.raw`${SEGMENT}(?:\.${SEGMENT})*`;
const PLACEHOLDER = String.raw`\{(?:(state\.memory|memory|system)\.(${PATH})|tools\.([A-Za-z0-9_-]+)\.(${PATH})|env\.([A-Za-z_][A-Za-z0-9_]*))\}`;

const ANY_PLACEHOLDER = new RegExp(PLACEHOLDER, 'g');
const ONLY_PLACEHOLDER = new RegExp(`^${PLACEHOLDER}$`);

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'prototype', 'constructor']);

/** Marks a placeholder whose value does not exist, as distinct from a value that is undefined in JSON terms. */
const MISSING = Symbol('missing');

function refOf(match: RegExpMatchArray): PlaceholderRef {
  const [raw, memoryOrSystem, path, node, toolPath, variable] = match;
  if (memoryOrSystem !== undefined) {
    return { kind: memoryOrSystem === 'system' ? 'system' : 'memory', path: normalize(path), raw };
  }
  if (node !== undefined) return { kind: 'tools', path: `${node}.${normalize(toolPath)}`, raw };
  return { kind: 'env', path: variable, raw };
}

/** `items[0].name` → `items.0.name`. */
function normalize(path: string): string {
  return path.replace(/\[(\d+)\]/g, '.$1');
}

function walk(root: unknown, segments: readonly string[]): unknown {
  let value = root;
  for (const segment of segments) {
    if (FORBIDDEN_SEGMENTS.has(segment)) return MISSING;
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) return MISSING;
    value = (value as Record<string, unknown>)[segment];
  }
  return value === undefined ? MISSING : value;
}

function resolve(ref: PlaceholderRef, scope: PlaceholderScope): unknown {
  const segments = ref.path.split('.');
  switch (ref.kind) {
    case 'memory':
      return walk(scope.memory, segments);
    case 'tools':
      return walk(scope.tools, segments);
    case 'env':
      return walk(scope.env, segments);
    case 'system':
      return walk(scope.system, segments);
  }
}

/** The text of a value by the substitution rules, or MISSING when it has none (functions, cycles). */
function textOf(value: unknown): string | typeof MISSING {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      try {
        return JSON.stringify(value);
      } catch {
        return MISSING;
      }
    default:
      return MISSING;
  }
}

/**
 * The value a placeholder path names (`memory.a.b`, `tools.Node.x`, `system.date`; the text between the braces), or
 * undefined when it does not exist. Edge conditions test values this way, by the same rules as substitution.
 */
export function valueAtPath(path: string, scope: PlaceholderScope): { readonly value: unknown } | undefined {
  const only = ONLY_PLACEHOLDER.exec(`{${path}}`);
  if (!only) return undefined;
  const value = resolve(refOf(only), scope);
  return value === MISSING ? undefined : { value };
}

/** Every placeholder in a text, in order, repeats included (flow validation lists node and variable references). */
export function placeholdersIn(template: string): PlaceholderRef[] {
  return Array.from(template.matchAll(ANY_PLACEHOLDER), (match) => refOf(match));
}

/** The text with each placeholder whose value exists replaced by that value's text. */
export function renderText(template: string, scope: PlaceholderScope): string {
  let text = '';
  let end = 0;
  for (const match of template.matchAll(ANY_PLACEHOLDER)) {
    const ref = refOf(match);
    const value = resolve(ref, scope);
    const rendered = value === MISSING ? MISSING : textOf(value);
    text += template.slice(end, match.index) + (rendered === MISSING ? ref.raw : rendered);
    end = match.index + ref.raw.length;
  }
  return text + template.slice(end);
}

/**
 * Tool parameters: strings are rendered, arrays and plain objects walked (keys as they are), other values kept. A
 * string that is exactly one placeholder whose value exists becomes that value with its type (`"{memory.n}"` → 3;
 * the value itself, not a copy).
 */
export function renderValue(value: unknown, scope: PlaceholderScope): unknown {
  if (typeof value === 'string') {
    const only = ONLY_PLACEHOLDER.exec(value);
    if (only) {
      const found = resolve(refOf(only), scope);
      if (found !== MISSING) return found;
    }
    return renderText(value, scope);
  }
  if (Array.isArray(value)) return value.map((item) => renderValue(item, scope));
  if (isPlainObject(value)) {
    // fromEntries defines own properties, so a `__proto__` key stays a key and never becomes the prototype.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderValue(item, scope)]));
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
