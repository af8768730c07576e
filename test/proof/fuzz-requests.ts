/**
 * Malformed requests derived from the service's own OpenAPI document (test/proof/fuzz.test.ts sends them).
 *
 * For every operation a valid-ish request is generated from its path parameters, query parameters and JSON body
 * schema, with real ids where the service needs them (an agent, a knowledge base, a document, an upload, a session of
 * the fuzzing organization) so that many requests get past the 404s into validation and the handlers. Then one to
 * three mutations break it: a field of the wrong type, a required field left out, an unknown field, a huge string, odd
 * unicode, edge numbers, deep nesting, bad JSON text, a wrong or missing content type, a body over 1 MiB, odd path
 * segments, odd query strings, odd credentials, another method.
 */
import fc from 'fast-check';

export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly additionalProperties?: boolean | JsonSchema;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  readonly format?: string;
}

interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query';
  readonly required?: boolean;
  readonly schema?: JsonSchema;
}

interface OpenApiOperation {
  readonly operationId: string;
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  readonly security?: readonly unknown[];
}

export interface OpenApiDocument {
  readonly paths: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>;
}

/** One operation of the document: what a request to it is made of. */
export interface Operation {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly pathParameters: readonly string[];
  readonly query: readonly Parameter[];
  readonly body: JsonSchema | undefined;
  readonly secured: boolean;
}

export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const parameters = operation.parameters ?? [];
      operations.push({
        id: operation.operationId,
        method: method.toUpperCase(),
        path,
        pathParameters: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query'),
        body: operation.requestBody?.content['application/json']?.schema,
        secured: (operation.security ?? []).length > 0,
      });
    }
  }
  return operations;
}

/** Real resources of the fuzzing organization (A) and one of another organization (B). */
export interface FuzzFixtures {
  readonly tokens: readonly [string, string];
  readonly agentId: string;
  readonly knowledgeBaseId: string;
  readonly environment: string;
  readonly s3Key: string;
  readonly customDocumentId: string;
  /** An upload whose file is in place, not yet completed; and the same for an update (update/upload-complete). */
  readonly uploadId: string;
  readonly updateUploadId: string;
  readonly zipJobId: string;
  readonly sessionId: string;
  readonly triggerName: string;
  readonly appName: string;
  readonly eventName: string;
  /** A valid agent definition (PUT and validate start from it). */
  readonly definition: Record<string, unknown>;
  /** What DELETE routes address, so that a valid delete does not remove what every other request uses. */
  readonly disposableKnowledgeBaseId: string;
  readonly disposableS3Key: string;
  readonly disposableCustomDocumentId: string;
  /** Organization B's agent: addressed with A's token it must be a 404 like one that does not exist. */
  readonly otherAgentId: string;
}

/** A request as sent: the body is materialized only when it is sent (some are megabytes). */
export interface FuzzRequest {
  readonly operation: string;
  readonly method: string;
  /** Path and query exactly as they go on the request line. */
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: BodySpec | undefined;
  readonly mutations: readonly string[];
}

export type BodySpec =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'bytes'; readonly base64: string }
  /** `{"<field>":"xxxx…"}` of exactly `bytes` bytes: a body over a size limit. */
  | { readonly kind: 'padded'; readonly field: string; readonly bytes: number };

export function bodyLength(spec: BodySpec): number {
  if (spec.kind === 'padded') return spec.bytes;
  return spec.kind === 'text' ? Buffer.byteLength(spec.text, 'utf8') : Buffer.from(spec.base64, 'base64').length;
}

export function bodyBytes(spec: BodySpec): Buffer {
  if (spec.kind === 'text') return Buffer.from(spec.text, 'utf8');
  if (spec.kind === 'bytes') return Buffer.from(spec.base64, 'base64');
  const head = Buffer.from(`{${JSON.stringify(spec.field)}:"`);
  const body = Buffer.alloc(Math.max(spec.bytes, head.length + 2), 0x78);
  head.copy(body, 0);
  body.write('"}', body.length - 2);
  return body;
}

/** Longest request target sent: huge query values are cut here. */
export const MAX_TARGET = 8000;
export const ONE_MIB = 1024 * 1024;
export const TEN_MB = 10 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// Valid-ish values from a JSON schema
// ---------------------------------------------------------------------------------------------------------------

const WORD = fc.stringMatching(/^[a-z][a-z0-9]{2,11}$/);
const MAX_DEPTH = 6;

function typesOf(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return typeof schema.type === 'string' ? [schema.type] : [...schema.type];
}

/** What a value is generated for: known ids come from the fixtures, and some depend on the operation. */
export interface ValueContext {
  readonly fixtures: FuzzFixtures;
  readonly operation: string;
}

/** Values that satisfy what the document says about a field, with a few rules the document cannot express. */
export function schemaValue(schema: JsonSchema, name: string, context: ValueContext, depth = 0): fc.Arbitrary<unknown> {
  const known = knownValue(name, context);
  if (known) return known;
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const choices = schema.oneOf ?? schema.anyOf;
  if (choices) return fc.oneof(...choices.map((choice) => schemaValue(choice, name, context, depth)));
  const types = typesOf(schema);
  if (types.length > 1) return fc.oneof(...types.map((type) => schemaValue({ ...schema, type }, name, context, depth)));
  switch (types[0]) {
    case 'string':
      return stringValue(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      if (depth >= MAX_DEPTH || !schema.items) return fc.constant([]);
      const maxLength = Math.min(schema.maxItems ?? minLength + 3, minLength + 3);
      return fc.array(schemaValue(schema.items, name, context, depth + 1), { minLength, maxLength });
    }
    case 'object':
      return objectValue(schema, context, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectValue(schema: JsonSchema, context: ValueContext, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  if (depth >= MAX_DEPTH) return fc.constant({});
  const entries = Object.entries(properties).map(([key, property]) => {
    const value = schemaValue(property, key, context, depth + 1);
    // Optional fields now and then: each one present in about a third of the requests.
    return fc.tuple(
      fc.constant(key),
      required.has(key)
        ? value.map((v) => [v])
        : fc.option(
            value.map((v) => [v]),
            { freq: 2 },
          ),
    );
  });
  const extra =
    Object.keys(properties).length === 0 && typeof schema.additionalProperties === 'object'
      ? fc.dictionary(WORD, schemaValue(schema.additionalProperties, '', context, depth + 1), { maxKeys: 3 })
      : fc.constant({});
  return fc.tuple(fc.tuple(...entries), extra).map(([pairs, more]) => {
    const object: Record<string, unknown> = { ...more };
    for (const [key, value] of pairs) if (value !== null) object[key] = value[0];
    return object;
  });
}

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid({ version: 4 });
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, Math.max(minLength, 40));
  if (schema.pattern) {
    try {
      return fc
        .stringMatching(new RegExp(schema.pattern), { size: 'xsmall' })
        .map((value) => (value.length > maxLength ? value.slice(0, maxLength) : value));
    } catch {
      // a pattern fast-check cannot generate from: any short string (valid-ish is enough)
    }
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme-ascii' });
}

/** Fields whose valid values the schema cannot generate: ids of real resources, labels, file names. */
function knownValue(name: string, { fixtures, operation }: ValueContext): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case 'agentId':
      return fc.constant(fixtures.agentId);
    case 'knowledgeBaseId':
      return fc.constant(fixtures.knowledgeBaseId);
    case 'environment':
      return fc.oneof({ arbitrary: fc.constant(fixtures.environment), weight: 4 }, fc.constant('staging'));
    case 's3Key':
      return fc.constant(fixtures.s3Key);
    case 'customDocumentId':
      return fc.constant(fixtures.customDocumentId);
    case 'uploadId':
      return fc.constant(operation === 'UpdateUploadComplete' ? fixtures.updateUploadId : fixtures.uploadId);
    case 'zipJobId':
      return fc.constant(fixtures.zipJobId);
    case 'sessionId':
      return fc.constant(fixtures.sessionId);
    case 'triggerName':
      return fc.constant(fixtures.triggerName);
    case 'appName':
      return fc.constant(fixtures.appName);
    case 'eventName':
      return fc.constant(fixtures.eventName);
    case 'fileName':
      return fc.tuple(WORD, fc.constantFrom('txt', 'md', 'pdf', 'csv', 'zip')).map(([w, ext]) => `${w}.${ext}`);
    case 'label1':
    case 'label2':
      return fc.tuple(WORD, WORD).map(([a, b]) => `${a}:${b}`);
    case 'key':
      return fc.constantFrom('label1', 'label2');
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Drafts: a request before it is encoded, so mutations can work on fields
// ---------------------------------------------------------------------------------------------------------------

interface Draft {
  readonly operation: Operation;
  method: string;
  /** Decoded path parameter values; `rawPath` holds segments to put on the wire as they are. */
  pathValues: Record<string, string>;
  rawPath: Record<string, string>;
  /** Appended to the path as it is: a trailing slash, `/..`, an encoded slash. */
  pathSuffix: string;
  /** Where the request's fields go: the JSON body, or the query (GET, and DELETE without a body). */
  carrier: 'body' | 'query';
  fields: Record<string, unknown>;
  /** Extra raw query text appended as it is. */
  rawQuery: string[];
  /** Replaces the JSON text of `fields`. */
  rawBody: BodySpec | undefined;
  contentType: string | null;
  authorization: string | null;
  mutations: string[];
}

function schemaOfFields(operation: Operation): JsonSchema {
  if (operation.body) return operation.body;
  return {
    type: 'object',
    properties: Object.fromEntries(operation.query.map((p) => [p.name, p.schema ?? {}])),
    required: operation.query.filter((p) => p.required).map((p) => p.name),
  };
}

function pathValue(operation: Operation, name: string, fixtures: FuzzFixtures): string {
  if (name === 'knowledgeBaseId' && operation.id === 'DeleteKnowledgeBase') return fixtures.disposableKnowledgeBaseId;
  const known = {
    agentId: fixtures.agentId,
    knowledgeBaseId: fixtures.knowledgeBaseId,
    environment: fixtures.environment,
    zipJobId: fixtures.zipJobId,
    sessionId: fixtures.sessionId,
    triggerName: fixtures.triggerName,
  } as Record<string, string>;
  return known[name] ?? 'x';
}

function baseDraft(operation: Operation, fixtures: FuzzFixtures): fc.Arbitrary<Draft> {
  const usesQuery = operation.method === 'GET' || (operation.method === 'DELETE' && operation.query.length > 0);
  const carrierArb: fc.Arbitrary<'body' | 'query'> =
    operation.method === 'GET'
      ? fc.constant('query')
      : usesQuery
        ? fc.constantFrom('body', 'query')
        : fc.constant('body');
  let fieldsArb = schemaValue(schemaOfFields(operation), '', { fixtures, operation: operation.id }) as fc.Arbitrary<
    Record<string, unknown>
  >;
  if (operation.id === 'PutAgentDefinition' || operation.id === 'ValidateAgentDefinition') {
    fieldsArb = fc.oneof({ arbitrary: fc.constant(structuredClone(fixtures.definition)), weight: 3 }, fieldsArb);
  }
  if (operation.id === 'DeleteDocument') {
    fieldsArb = fieldsArb.map((f) => ({
      ...f,
      ...('s3Key' in f ? { s3Key: fixtures.disposableS3Key } : {}),
      ...('customDocumentId' in f ? { customDocumentId: fixtures.disposableCustomDocumentId } : {}),
    }));
  }
  return fc.tuple(carrierArb, fieldsArb).map(([carrier, fields]) => ({
    operation,
    method: operation.method,
    pathValues: Object.fromEntries(
      operation.pathParameters.map((name) => [name, pathValue(operation, name, fixtures)]),
    ),
    rawPath: {},
    pathSuffix: '',
    carrier,
    fields: structuredClone(fields),
    rawQuery: [],
    rawBody: undefined,
    contentType: carrier === 'body' ? 'application/json' : null,
    authorization: operation.secured ? `Bearer ${fixtures.tokens[0]}` : null,
    mutations: [],
  }));
}

// ---------------------------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------------------------

type Mutation = (draft: Draft) => void;
type Path = readonly (string | number)[];

/** Every place in a value that can be replaced: its own path and those of everything inside it. */
function placesIn(value: unknown, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (out.length > 400 || path.length > 8) return out;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) placesIn(item, [...path, index], out);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) placesIn(item, [...path, key], out);
  }
  return out;
}

function getAt(root: unknown, path: Path): unknown {
  let value = root;
  for (const key of path) value = (value as Record<string | number, unknown>)?.[key];
  return value;
}

function setAt(draft: Draft, path: Path, value: unknown): void {
  if (path.length === 0) {
    // The fields as a whole: only an object can carry fields, anything else becomes the whole JSON body.
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      draft.fields = value as Record<string, unknown>;
    else draft.rawBody = { kind: 'text', text: jsonText(value) };
    return;
  }
  const parent = getAt(draft.fields, path.slice(0, -1));
  if (parent !== null && typeof parent === 'object') {
    Object.defineProperty(parent, path[path.length - 1], {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
}

function deleteAt(draft: Draft, path: Path): void {
  const parent = getAt(draft.fields, path.slice(0, -1));
  if (parent === null || typeof parent !== 'object') return;
  if (Array.isArray(parent)) parent.splice(Number(path[path.length - 1]), 1);
  else delete (parent as Record<string, unknown>)[path[path.length - 1] as string];
}

/** Numbers JSON can carry but JavaScript cannot: written into the JSON text as they are. */
const RAW_NUMBER = '\u0001raw-number:';
/** Nesting too deep to build as a value (JSON.stringify would overflow the stack): written into the JSON text. */
const DEEP = '\u0001deep:';

function deep(depth: number, asArray: boolean): string {
  return `${DEEP}${depth}:${asArray ? 'arrays' : 'objects'}`;
}

function jsonText(value: unknown): string {
  return JSON.stringify(value)
    .replace(/"\\u0001raw-number:([^"]*)"/g, '$1')
    .replace(/"\\u0001deep:(\d+):(arrays|objects)"/g, (_all, depth: string, kind: string) => {
      const n = Number(depth);
      return kind === 'arrays'
        ? `${'['.repeat(n)}"leaf"${']'.repeat(n)}`
        : `${'{"a":'.repeat(n)}"leaf"${'}'.repeat(n)}`;
    });
}

const WRONG_TYPES: readonly unknown[] = [
  0,
  -1,
  1.5,
  1e308,
  true,
  false,
  null,
  [],
  ['a', 1],
  {},
  { a: { b: 1 } },
  '',
  'string',
  '0',
  'true',
  'null',
  '{}',
];

/** Strings that have tripped parsers, databases, indexes and encoders. */
export const ODD_STRINGS: readonly string[] = [
  '\ud800',
  '\udfff',
  'a\ud83dz',
  '\u202eevil\u202c',
  'مرحبا بالعالم',
  'שלום',
  'a\u0000b',
  '\u0000',
  '😀🎉👩‍👩‍👧‍👦',
  'e\u0301\u0301\u0301\u0301\u0301',
  'Z̷̡̛̜͇̝͎̫̤̩͕̓̈́̊̈́̉̽a̴̧̦̓l̵̨̛g̶o̵',
  '\ufeffbom',
  '\uffff\ufffe',
  '\u200b\u200c\u200d',
  '\u2028\u2029',
  '\r\n\t\b\f\v',
  '../../etc/passwd',
  '..\\..\\windows',
  "' OR '1'='1",
  '"; DROP TABLE x; --',
  '{state.memory.x}',
  '{memory.__proto__}',
  `\${7*7}{{7*7}}`,
  '<script>alert(1)</script>',
  'AND OR NOT ( ) " * ~ ^ : [ ] { } \\',
  '%00%2F%ZZ',
  ' ',
  '   padded   ',
  '𝕦𝕟𝕚𝕔𝕠𝕕𝕖',
  'İıǅǈ',
  '\u0085\u00a0\u1680',
];

const EDGE_NUMBERS: readonly unknown[] = [
  -1,
  0,
  -0,
  0.5,
  1e-320,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  1e308,
  `${RAW_NUMBER}1e400`,
  `${RAW_NUMBER}-1e400`,
  `${RAW_NUMBER}1.0`,
  `${RAW_NUMBER}100000000000000000000000000000001`,
];

const ODD_KEYS: readonly string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  ' ',
  'a.b',
  '$where',
  'label3',
  '\u0000',
  '😀',
  'k'.repeat(1000),
  'agentId',
  'organizationId',
];

function maxLengthAt(schema: JsonSchema, path: Path): number | undefined {
  let current: JsonSchema | undefined = schema;
  for (const key of path) {
    if (!current) return undefined;
    current = typeof key === 'number' ? current.items : current.properties?.[key];
  }
  return current?.maxLength;
}

/** Field mutations: they need the draft's fields, so they are built from it. */
function fieldMutation(draft: Draft, fixtures: FuzzFixtures): fc.Arbitrary<[string, Mutation]> {
  const places = placesIn(draft.fields);
  const place = fc.constantFrom(...places);
  const inner = places.filter((p) => p.length > 0);
  const innerPlace = inner.length ? fc.constantFrom(...inner) : place;
  const schema = schemaOfFields(draft.operation);
  const inQuery = draft.carrier === 'query';
  const hugeLengths = inQuery ? [2000, 6000] : [100_000, 300_000];
  const required = schema.required ?? [];
  return fc.oneof(
    fc
      .tuple(
        innerPlace,
        fc.oneof(fc.constantFrom(fixtures.otherAgentId, fixtures.knowledgeBaseId, fixtures.agentId), fc.uuid()),
      )
      .map(([p, id]): [string, Mutation] => [`otherId:${p.join('.')}`, (d) => setAt(d, p, id)]),
    fc
      .tuple(innerPlace, fc.constantFrom(...WRONG_TYPES))
      .map(([p, v]): [string, Mutation] => [`wrongType:${p.join('.')}`, (d) => setAt(d, p, structuredClone(v))]),
    fc
      .tuple(required.length ? fc.constantFrom(...required.map((r) => [r] as Path)) : innerPlace, fc.boolean())
      .map(([p, all]): [string, Mutation] =>
        all
          ? [
              'missing:all-required',
              (d) => {
                for (const r of required) deleteAt(d, [r]);
              },
            ]
          : [`missing:${p.join('.')}`, (d) => deleteAt(d, p)],
      ),
    fc
      .tuple(
        place,
        fc.oneof(fc.constantFrom(...ODD_KEYS), fc.string({ unit: 'binary', maxLength: 12 })),
        fc.jsonValue({ maxDepth: 2 }),
      )
      .map(([p, key, value]): [string, Mutation] => [
        `extraField:${p.join('.')}[${key.slice(0, 20)}]`,
        (d) => {
          const target = p.length ? getAt(d.fields, p) : d.fields;
          if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
            Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
          } else setAt(d, p, { [key]: value });
        },
      ]),
    fc
      .tuple(innerPlace, fc.constantFrom('x', '😀', 'é', 'a\u0301', 'ab '), fc.constantFrom(...hugeLengths, 0))
      .map(([p, unit, length]): [string, Mutation] => {
        const limit = maxLengthAt(schema, p);
        const size = length === 0 ? (limit ?? 100) + 1 : length;
        return [`hugeString:${p.join('.')}(${size})`, (d) => setAt(d, p, unit.repeat(Math.ceil(size / unit.length)))];
      }),
    fc
      .tuple(
        innerPlace,
        fc.oneof(fc.constantFrom(...ODD_STRINGS), fc.string({ unit: 'binary', maxLength: 40 })),
        fc.constantFrom('replace', 'append', 'prepend'),
      )
      .map(([p, text, how]): [string, Mutation] => [
        `unicode:${how}:${p.join('.')}`,
        (d) => {
          const current = getAt(d.fields, p);
          const base = typeof current === 'string' ? current : '';
          setAt(d, p, how === 'replace' ? text : how === 'append' ? base + text : text + base);
        },
      ]),
    fc
      .tuple(innerPlace, fc.constantFrom(...EDGE_NUMBERS))
      .map(([p, n]): [string, Mutation] => [
        `number:${p.join('.')}=${String(n).replace(RAW_NUMBER, '')}`,
        (d) => setAt(d, p, n),
      ]),
    fc
      .tuple(place, fc.constantFrom(20, 33, 100, 1000, 5000), fc.boolean())
      .map(([p, depth, asArray]): [string, Mutation] => [
        `deep:${p.join('.')}(${depth}${asArray ? ' arrays' : ' objects'})`,
        (d) => {
          const value = deep(depth, asArray);
          if (p.length === 0) setAt(d, [Object.keys(d.fields)[0] ?? 'payload'], value);
          else setAt(d, p, value);
        },
      ]),
    fc.tuple(innerPlace, fc.constantFrom(100, 10_000)).map(([p, n]): [string, Mutation] => [
      `bigArray:${p.join('.')}(${n})`,
      (d) => {
        const current = getAt(d.fields, p);
        const first = Array.isArray(current) && current.length ? current[0] : (current ?? 1);
        // Many small items, not many copies of a huge one (that is hugeString's and oversized's job).
        const item = jsonText(first).length > 200 ? 1 : first;
        setAt(
          d,
          p,
          Array.from({ length: n }, () => structuredClone(item)),
        );
      },
    ]),
  );
}

const BAD_JSON_TEXTS: readonly string[] = [
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{a:1}',
  'NaN',
  'undefined',
  '/* comment */ {}',
  '\ufeff{}',
  'null',
  '[]',
  '[1,2,3]',
  '"just a string"',
  '123',
  'true',
  '{"a":"\\ud800"}',
  '{"a":"\\x41"}',
  '{"a":"tab\there"}',
  '{"a":"\u0000"}',
  '{"a":1}{"b":2}',
  '{"a":1} trailing',
  '   ',
  '\n',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":1e}',
  '{"a":Infinity}',
  `${'['.repeat(100_000)}`,
  `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
  `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
];

const CONTENT_TYPES: readonly (string | null)[] = [
  null,
  '',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/problem+json',
  'application/vnd.api+json',
  'application/jsonp',
  'application/json-patch+json',
  'APPLICATION/JSON',
  'application/json;;;',
  ' application/json ',
  'application/json, text/plain',
  'json',
  '*/*',
  `application/${'x'.repeat(2000)}`,
  'application/\u00e9json',
];

function latin1(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/** Encodes as UTF-8 and percent-encodes everything but unreserved characters; lone surrogates become U+FFFD. */
export function encode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const ODD_SEGMENTS: readonly string[] = [
  '',
  '.',
  '..',
  '%2e%2e',
  '%2E',
  '%2F',
  'a%2Fb',
  '..%2F..%2Fetc',
  '%00',
  '%',
  '%zz',
  '%ED%A0%80',
  '%FF%FE',
  '%C0%AF',
  encode('😀'),
  encode('\u202eabc'),
  encode('e\u0301'),
  'x'.repeat(3000),
  '%20',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '{agentId}',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  ';',
  '*',
  '~',
];

const ODD_QUERIES: readonly string[] = [
  '__proto__=x',
  '__proto__[polluted]=1',
  'constructor=x',
  'constructor[prototype][polluted]=1',
  'toString=1',
  'hasOwnProperty=1',
  'valueOf=1',
  '=x',
  '&&&',
  '=',
  'a',
  'a[]=1&a[]=2',
  'a[0]=1&a[1]=2',
  'a=1&a=2&a=3',
  '%zz=1',
  'a=%zz',
  'a=%ED%A0%80',
  'a=%00',
  `${'k'.repeat(2000)}=1`,
  `a=${'v'.repeat(6000)}`,
  'a=1;b=2',
  'a=%E2%80%AE',
  'a+b=c+d',
  '?a=1',
  '#fragment',
];

function requestMutation(draft: Draft, fixtures: FuzzFixtures): fc.Arbitrary<[string, Mutation]> {
  const names = draft.operation.pathParameters;
  const fieldNames = Object.keys(draft.fields);
  const arbitraries: fc.Arbitrary<[string, Mutation]>[] = [
    fc.constantFrom(...BAD_JSON_TEXTS).map((text): [string, Mutation] => [
      `badJson:${text.slice(0, 24)}${text.length > 24 ? `…(${text.length})` : ''}`,
      (d) => {
        d.rawBody = { kind: 'text', text };
        d.contentType ??= 'application/json';
        d.carrier = 'body';
      },
    ]),
    fc.constantFrom(...BAD_JSON_TEXTS.slice(0, 12), 'fields').map((which): [string, Mutation] => [
      `badBytes:${which === 'fields' ? 'invalid-utf8-in-fields' : which.slice(0, 12)}`,
      (d) => {
        const text = which === 'fields' ? jsonText(d.fields) : which;
        // Invalid UTF-8 inside the body: a lone continuation byte, an overlong slash, a truncated sequence.
        const bytes = Buffer.concat([
          Buffer.from(text.slice(0, -1)),
          Buffer.from([0x80, 0xc0, 0xaf, 0xe2, 0x82]),
          Buffer.from(text.slice(-1)),
        ]);
        d.rawBody = { kind: 'bytes', base64: bytes.toString('base64') };
        d.contentType ??= 'application/json';
        d.carrier = 'body';
      },
    ]),
    fc.constantFrom(...CONTENT_TYPES).map((type): [string, Mutation] => [
      `contentType:${type === null ? 'none' : type.slice(0, 40)}`,
      (d) => {
        d.contentType = type;
        d.carrier = 'body';
      },
    ]),
    fc.integer({ min: ONE_MIB + 1, max: ONE_MIB + 64 * 1024 }).map((bytes): [string, Mutation] => [
      `oversized:${bytes}`,
      (d) => {
        d.rawBody = { kind: 'padded', field: fieldNames[0] ?? 'padding', bytes };
        d.contentType = 'application/json';
        d.carrier = 'body';
      },
    ]),
    fc.constantFrom(...ODD_QUERIES).map((query): [string, Mutation] => [
      `query:${query.slice(0, 40)}`,
      (d) => {
        d.rawQuery.push(query);
      },
    ]),
    fc
      .constantFrom(
        null,
        'Bearer',
        'Bearer ',
        'Bearer not-a-token',
        `bearer ${fixtures.tokens[0]}`,
        `Bearer  ${fixtures.tokens[0]}`,
        `Bearer ${fixtures.tokens[0]} `,
        `Bearer ${fixtures.tokens[1]}`,
        `Basic ${Buffer.from('user:pass').toString('base64')}`,
        `Bearer ${'t'.repeat(4000)}`,
        `Bearer ${fixtures.tokens[0]}, Bearer ${fixtures.tokens[1]}`,
        `Bearer ${latin1('tökén')}`,
        `Bearer ${fixtures.tokens[0]}\t`,
      )
      .map((authorization): [string, Mutation] => [
        `auth:${authorization === null ? 'none' : authorization.slice(0, 24)}`,
        (d) => {
          d.authorization = authorization;
        },
      ]),
    fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS').map((method): [string, Mutation] => [
      `method:${method}`,
      (d) => {
        d.method = method;
      },
    ]),
    fc.constantFrom('//', '/', '/..', '/.', '%2F', '/%2e%2e/x', '?', '#').map((suffix): [string, Mutation] => [
      `pathSuffix:${suffix}`,
      (d) => {
        d.pathSuffix = suffix;
      },
    ]),
  ];
  if (names.length) {
    arbitraries.push(
      fc
        .tuple(
          fc.constantFrom(...names),
          fc.oneof(
            fc.constantFrom(...ODD_SEGMENTS).map((raw) => ({ raw })),
            fc.constantFrom(fixtures.otherAgentId, fixtures.agentId.toUpperCase()).map((value) => ({ value })),
            fc.uuid({ version: 4 }).map((value) => ({ value })),
            fc.string({ unit: 'binary', maxLength: 20 }).map((value) => ({ value })),
          ),
        )
        .map(([name, segment]): [string, Mutation] => [
          `pathParam:${name}=${('raw' in segment ? segment.raw : segment.value).slice(0, 40)}`,
          (d) => {
            if ('raw' in segment) d.rawPath[name] = segment.raw;
            else d.pathValues[name] = segment.value;
          },
        ]),
    );
  }
  return fc.oneof(...arbitraries);
}

function mutations(draft: Draft, fixtures: FuzzFixtures): fc.Arbitrary<[string, Mutation][]> {
  const one = fc.oneof(
    { arbitrary: fieldMutation(draft, fixtures), weight: 6 },
    { arbitrary: requestMutation(draft, fixtures), weight: 4 },
  );
  return fc.oneof(
    { arbitrary: fc.constant<[string, Mutation][]>([]), weight: 1 },
    { arbitrary: fc.array(one, { minLength: 1, maxLength: 3 }), weight: 19 },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------------------------

function queryText(fields: Record<string, unknown>): string[] {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const values = Array.isArray(value) ? value : [value];
    for (const item of values) {
      const text = typeof item === 'string' ? item : jsonText(item);
      parts.push(`${encode(key)}=${encode(text)}`);
    }
  }
  return parts;
}

function encodeDraft(draft: Draft): FuzzRequest {
  let path = draft.operation.path.replace(/\{([^}]+)\}/g, (_all, name: string) =>
    name in draft.rawPath ? draft.rawPath[name] : encode(draft.pathValues[name] ?? ''),
  );
  path += draft.pathSuffix;
  const query = [...(draft.carrier === 'query' ? queryText(draft.fields) : []), ...draft.rawQuery];
  let target = query.length ? `${path}${path.includes('?') ? '&' : '?'}${query.join('&')}` : path;
  // Within API Gateway's 10 KB for the request line and headers (and Node's 16 KB): a longer one never reaches a route.
  if (target.length > MAX_TARGET) {
    target = target.slice(0, MAX_TARGET);
    draft.mutations.push('truncatedTarget');
  }
  let body = draft.rawBody;
  if (!body && draft.carrier === 'body' && draft.method !== 'GET')
    body = { kind: 'text', text: jsonText(draft.fields) };
  const headers: Record<string, string> = {};
  if (draft.contentType !== null && body) headers['content-type'] = draft.contentType;
  if (draft.authorization !== null) headers.authorization = draft.authorization;
  return { operation: draft.operation.id, method: draft.method, target, headers, body, mutations: draft.mutations };
}

/** Requests for every operation of the document, each mutated one to three times (one in twenty left valid). */
export function fuzzRequests(operations: readonly Operation[], fixtures: FuzzFixtures): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom(...operations)
    .chain((operation) => baseDraft(operation, fixtures))
    .chain((draft) =>
      mutations(draft, fixtures).map((chosen) => {
        const copy: Draft = {
          ...draft,
          fields: structuredClone(draft.fields),
          pathValues: { ...draft.pathValues },
          rawPath: {},
          rawQuery: [],
          mutations: [],
        };
        for (const [name, apply] of chosen) {
          apply(copy);
          copy.mutations.push(name);
        }
        if (chosen.length === 0) copy.mutations.push('none');
        return encodeDraft(copy);
      }),
    );
}

/** `count` bodies over API Gateway's 10 MB limit, to operations taken in turn. */
export function overTenMegabytes(
  operations: readonly Operation[],
  fixtures: FuzzFixtures,
  count: number,
): FuzzRequest[] {
  const withBody = operations.filter((o) => o.method !== 'GET');
  return Array.from({ length: count }, (_, i) => {
    const operation = withBody[(i * 7) % withBody.length];
    const path = operation.path.replace(/\{([^}]+)\}/g, (_all, name: string) =>
      encode(pathValue(operation, name, fixtures)),
    );
    return {
      operation: operation.id,
      method: operation.method,
      target: path,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${fixtures.tokens[0]}` },
      body: { kind: 'padded', field: 'padding', bytes: TEN_MB + 1 + i * 1024 * 1024 },
      mutations: [`oversized:${TEN_MB + 1 + i * 1024 * 1024}`],
    };
  });
}
