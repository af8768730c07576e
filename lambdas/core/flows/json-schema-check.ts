/**
 * Arguments of an MCP tool checked against its `inputSchema` before the call (docs/flows.md, "MCP tools"): a subset
 * of JSON Schema small enough for the webhook bundles, the keywords that catch a model's mistakes: `type` (one or a
 * list, `integer` too), `properties`, `required`, `additionalProperties` (false or a schema), `items`, `enum`,
 * `const`, `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`. The rest (`pattern`, `format`, `$ref`,
 * `anyOf`, …) is left to the server, which checks its arguments itself; no schema of a server's is compiled or run.
 */

const MAX_DEPTH = 20;
const MAX_PROBLEMS = 10;

type Schema = Readonly<Record<string, unknown>>;

/** Each way `value` breaks `schema`, as `<path> <rule>`; empty when it holds (as far as the subset sees). */
export function schemaProblems(schema: unknown, value: unknown): string[] {
  const problems: string[] = [];
  check(schema, value, 'arguments', 0, problems);
  return problems.slice(0, MAX_PROBLEMS);
}

function check(schema: unknown, value: unknown, path: string, depth: number, problems: string[]): void {
  if (!isObject(schema) || depth > MAX_DEPTH || problems.length >= MAX_PROBLEMS) return;
  const s = schema as Schema;
  const fail = (rule: string) => problems.push(`${path} ${rule}`);
  const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type : undefined;
  if (types && !types.some((type) => hasType(value, type))) return void fail(`must be ${types.join(' or ')}`);
  if (Array.isArray(s.enum) && !s.enum.some((option) => same(option, value))) {
    fail(`must be one of ${JSON.stringify(s.enum).slice(0, 200)}`);
  }
  if ('const' in s && !same(s.const, value)) fail(`must be ${JSON.stringify(s.const).slice(0, 200)}`);
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) fail(`must be at least ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum) fail(`must be at most ${s.maximum}`);
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (typeof s.minLength === 'number' && length < s.minLength) fail(`must hold at least ${s.minLength} characters`);
    if (typeof s.maxLength === 'number' && length > s.maxLength) fail(`must hold at most ${s.maxLength} characters`);
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) fail(`must hold at least ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) fail(`must hold at most ${s.maxItems} items`);
    if (isObject(s.items)) {
      for (const [i, item] of value.entries()) check(s.items, item, `${path}.${i}`, depth + 1, problems);
    }
  }
  if (isObject(value)) {
    const properties = isObject(s.properties) ? (s.properties as Schema) : {};
    for (const name of Array.isArray(s.required) ? s.required : []) {
      if (typeof name === 'string' && value[name] === undefined) fail(`needs ${name}`);
    }
    for (const [name, item] of Object.entries(value)) {
      if (Object.hasOwn(properties, name)) check(properties[name], item, `${path}.${name}`, depth + 1, problems);
      else if (s.additionalProperties === false) fail(`takes no ${name}`);
      else check(s.additionalProperties, item, `${path}.${name}`, depth + 1, problems);
    }
  }
}

function hasType(value: unknown, type: unknown): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    case 'string':
    case 'boolean':
      return typeof value === type;
    default:
      return true;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function same(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}
