/**
 * The documented constraints of the Amazon Bedrock request members this project's adapters send (bedrock-stand-in.ts
 * checks every request against them). Each entry names its operation, the member path, the rule and the API reference
 * page that states it. The values are the ones those pages give; they were read from the service models the pages are
 * generated from (botocore `data/bedrock-agent/2023-06-05`, `bedrock-agent-runtime/2023-07-26` and
 * `bedrock-runtime/2023-09-30`, as of 2026-08) and checked against the published pages where a page could be read.
 *
 * Conflicting, unconfirmed or deliberately left out:
 * - IngestKnowledgeBaseDocuments `documents`: the API reference says 1 to 10 items; the User Guide
 *   (kb-direct-ingestion-add) says the API takes up to 25 documents, citing a service quota. The table keeps the API
 *   reference's 10 and carries the User Guide's 25 as a note; which one the service enforces could not be confirmed.
 * - RetrievalFilter `andAll` / `orAll`: only "at least 2 members" is documented; the upper bound of 5 the adapter
 *   assumes (bedrock-filters.ts) is stated nowhere in the API reference and is not checked.
 * - The filterable-metadata size of the vector store (S3 Vectors' 2 KB a vector) and its non-filterable keys belong
 *   to the vector store, not to these APIs, and are not checked.
 * - Converse: that a conversation must open with a user message and alternate roles is not stated on the API
 *   reference pages read here and is not checked; per-model limits (context window, maxTokens ceiling, image size in
 *   pixels or bytes) are not checked either.
 * - Members the adapters never send (S3 locations, byte content, access control lists, guardrails, reranking,
 *   implicit filters, prompt variables, request metadata) are left out; their patterns (S3 URIs, MIME types, ARNs)
 *   need more than a simple character class.
 * - Converse `modelId`: its documented pattern is an alternation of a dozen ARN and id forms; only its plain-id
 *   alternative (`[a-zA-Z0-9-:.]+`) is checked, and an ARN is accepted by its `arn:` prefix alone.
 */

export type BedrockOperation =
  | 'IngestKnowledgeBaseDocuments'
  | 'DeleteKnowledgeBaseDocuments'
  | 'GetKnowledgeBaseDocuments'
  | 'ListKnowledgeBaseDocuments'
  | 'Retrieve'
  | 'Converse';

export type Rule =
  | { readonly kind: 'required' }
  | { readonly kind: 'type'; readonly type: 'string' | 'number' | 'boolean' | 'list' | 'structure' }
  | { readonly kind: 'length'; readonly min?: number; readonly max?: number }
  | { readonly kind: 'pattern'; readonly documented: string; readonly test: (value: string) => boolean }
  | { readonly kind: 'enum'; readonly values: readonly string[] }
  | { readonly kind: 'items'; readonly min?: number; readonly max?: number }
  | { readonly kind: 'range'; readonly min?: number; readonly max?: number; readonly integer?: boolean }
  /** "Choose a `type` and include the field that corresponds to it." */
  | { readonly kind: 'selects'; readonly discriminator: string; readonly members: Readonly<Record<string, string>> }
  /** A union: exactly one of the documented members is set, and no other. */
  | { readonly kind: 'union'; readonly members: readonly string[] }
  /** The document's dataSourceType must match the type of the data source the request names. */
  | { readonly kind: 'matchesDataSource' }
  /** At most `max` blocks of this kind in one message's content. */
  | { readonly kind: 'blockCount'; readonly block: string; readonly max: number }
  /** These block kinds only in messages of this role. */
  | { readonly kind: 'blocksOnlyIn'; readonly role: string; readonly blocks: readonly string[] }
  /** A RetrievalFilter: RETRIEVAL_FILTER_CONSTRAINTS apply to it and, recursively, to its andAll / orAll members. */
  | { readonly kind: 'retrievalFilter' };

export interface Constraint {
  readonly operation: BedrockOperation;
  /** Dot-separated member path from the request; `[]` steps into every element of a list. */
  readonly member: string;
  readonly rule: Rule;
  /** The API reference page that states the rule. */
  readonly source: string;
  readonly note?: string;
}

const API_REFERENCE = 'https://docs.aws.amazon.com/bedrock/latest/APIReference';
const page = (name: string) => `${API_REFERENCE}/API_${name}.html`;
const USER_GUIDE_DIRECT_INGESTION = 'https://docs.aws.amazon.com/bedrock/latest/userguide/kb-direct-ingestion-add.html';

// Patterns. Each is checked with anchored character classes (and plain string tests), never a regex that could
// backtrack on request input.

const ID = /^[0-9a-zA-Z]{10}$/;
const CLIENT_TOKEN_CHARACTERS = /^[a-zA-Z0-9-]+$/;
const NO_WHITESPACE = /^\S*$/;
const TOOL_USE_ID = /^[a-zA-Z0-9_.:-]+$/;
const TOOL_NAME = /^[a-zA-Z0-9_-]+$/;
const PLAIN_MODEL_ID = /^[a-zA-Z0-9:.-]+$/;
const ACCOUNT = /^[0-9]{12}$/;
const REGION = /^[a-z0-9-]{1,20}$/;
const PARTITION_SUFFIX = /^-[^:]+$/;

/** `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,256}`: letters and digits, hyphens only between them. */
function isClientToken(value: string): boolean {
  return CLIENT_TOKEN_CHARACTERS.test(value) && !value.startsWith('-') && !value.endsWith('-');
}

/** `arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:knowledge-base/[0-9a-zA-Z]{10}`, by its parts. */
function isKnowledgeBaseArn(value: string): boolean {
  const parts = value.split(':');
  if (parts.length !== 6 || parts[0] !== 'arn' || parts[2] !== 'bedrock') return false;
  const partition = parts[1];
  if (partition !== 'aws' && !(partition.startsWith('aws') && PARTITION_SUFFIX.test(partition.slice(3)))) return false;
  const resource = parts[5];
  return (
    REGION.test(parts[3]) &&
    ACCOUNT.test(parts[4]) &&
    resource.startsWith('knowledge-base/') &&
    ID.test(resource.slice('knowledge-base/'.length))
  );
}

/** The knowledge base id a Retrieve `knowledgeBaseId` names (an id or a knowledge base ARN). */
export function knowledgeBaseIdOf(identifier: string): string {
  return isKnowledgeBaseArn(identifier) ? identifier.slice(identifier.lastIndexOf('/') + 1) : identifier;
}

const required: Rule = { kind: 'required' };
const idPattern: Rule = { kind: 'pattern', documented: '[0-9a-zA-Z]{10}', test: (v) => ID.test(v) };

function entries(operation: BedrockOperation, source: string, rules: readonly [string, Rule, string?][]): Constraint[] {
  return rules.map(([member, rule, note]) => ({ operation, member, rule, source, ...(note ? { note } : {}) }));
}

function dataSourceMembers(operation: BedrockOperation): Constraint[] {
  const source = page(`agent_${operation}`);
  return entries(operation, source, [
    ['knowledgeBaseId', required],
    ['knowledgeBaseId', idPattern],
    ['dataSourceId', required],
    ['dataSourceId', idPattern],
  ]);
}

function clientToken(operation: BedrockOperation): Constraint[] {
  return entries(operation, page(`agent_${operation}`), [
    ['clientToken', { kind: 'length', min: 33, max: 256 }],
    ['clientToken', { kind: 'pattern', documented: '[a-zA-Z0-9](-*[a-zA-Z0-9]){0,256}', test: isClientToken }],
  ]);
}

/** DocumentIdentifier and CustomDocumentIdentifier, at `at` (a list of identifiers, 1 to 10 of them). */
function documentIdentifiers(operation: BedrockOperation, at: string): Constraint[] {
  return [
    ...entries(operation, page(`agent_${operation}`), [
      [at, required],
      [at, { kind: 'items', min: 1, max: 10 }],
    ]),
    ...entries(operation, page('agent_DocumentIdentifier'), [
      [`${at}[].dataSourceType`, required],
      [`${at}[].dataSourceType`, { kind: 'enum', values: ['CUSTOM', 'S3'] }],
    ]),
    ...entries(operation, page('agent_CustomDocumentIdentifier'), [
      [`${at}[].custom.id`, required],
      [`${at}[].custom.id`, { kind: 'length', min: 1, max: 2048 }],
    ]),
  ];
}

function ingestDocuments(): Constraint[] {
  const op = 'IngestKnowledgeBaseDocuments';
  const doc = 'documents[]';
  const custom = `${doc}.content.custom`;
  const inline = `${custom}.inlineContent`;
  const attribute = `${doc}.metadata.inlineAttributes[]`;
  return [
    ...entries(op, page('agent_IngestKnowledgeBaseDocuments'), [
      ['documents', required],
      [
        'documents',
        { kind: 'items', min: 1, max: 10 },
        `The User Guide (${USER_GUIDE_DIRECT_INGESTION}) says the API takes up to 25 documents; the API reference says 10.`,
      ],
      [`${doc}.content.dataSourceType`, { kind: 'matchesDataSource' }],
    ]),
    ...entries(op, page('agent_KnowledgeBaseDocument'), [[`${doc}.content`, required]]),
    ...entries(op, page('agent_DocumentContent'), [
      [`${doc}.content.dataSourceType`, required],
      [`${doc}.content.dataSourceType`, { kind: 'enum', values: ['CUSTOM', 'S3'] }],
      [`${doc}.content`, { kind: 'selects', discriminator: 'dataSourceType', members: { CUSTOM: 'custom', S3: 's3' } }],
    ]),
    ...entries(op, page('agent_CustomContent'), [
      [`${custom}.customDocumentIdentifier`, required],
      [`${custom}.sourceType`, required],
      [`${custom}.sourceType`, { kind: 'enum', values: ['IN_LINE', 'S3_LOCATION'] }],
      [
        custom,
        {
          kind: 'selects',
          discriminator: 'sourceType',
          members: { IN_LINE: 'inlineContent', S3_LOCATION: 's3Location' },
        },
      ],
    ]),
    ...entries(op, page('agent_CustomDocumentIdentifier'), [
      [`${custom}.customDocumentIdentifier.id`, required],
      [`${custom}.customDocumentIdentifier.id`, { kind: 'length', min: 1, max: 2048 }],
    ]),
    ...entries(op, page('agent_InlineContent'), [
      [`${inline}.type`, required],
      [`${inline}.type`, { kind: 'enum', values: ['BYTE', 'TEXT'] }],
      [inline, { kind: 'selects', discriminator: 'type', members: { BYTE: 'byteContent', TEXT: 'textContent' } }],
    ]),
    ...entries(op, page('agent_TextContentDoc'), [
      [`${inline}.textContent.data`, required],
      [`${inline}.textContent.data`, { kind: 'length', min: 1, max: 5_242_880 }],
    ]),
    ...entries(op, page('agent_DocumentMetadata'), [
      [`${doc}.metadata.type`, required],
      [`${doc}.metadata.type`, { kind: 'enum', values: ['IN_LINE_ATTRIBUTE', 'S3_LOCATION'] }],
      [
        `${doc}.metadata`,
        {
          kind: 'selects',
          discriminator: 'type',
          members: { IN_LINE_ATTRIBUTE: 'inlineAttributes', S3_LOCATION: 's3Location' },
        },
      ],
      [`${doc}.metadata.inlineAttributes`, { kind: 'items', min: 1, max: 50 }],
    ]),
    ...entries(op, page('agent_MetadataAttribute'), [
      [`${attribute}.key`, required],
      [`${attribute}.key`, { kind: 'length', min: 1, max: 200 }],
      [`${attribute}.value`, required],
    ]),
    ...entries(op, page('agent_MetadataAttributeValue'), [
      [`${attribute}.value.type`, required],
      [`${attribute}.value.type`, { kind: 'enum', values: ['BOOLEAN', 'NUMBER', 'STRING', 'STRING_LIST'] }],
      [
        `${attribute}.value`,
        {
          kind: 'selects',
          discriminator: 'type',
          members: {
            BOOLEAN: 'booleanValue',
            NUMBER: 'numberValue',
            STRING: 'stringValue',
            STRING_LIST: 'stringListValue',
          },
        },
      ],
      [`${attribute}.value.numberValue`, { kind: 'type', type: 'number' }],
      [`${attribute}.value.booleanValue`, { kind: 'type', type: 'boolean' }],
      [`${attribute}.value.stringValue`, { kind: 'length', min: 1, max: 2048 }],
      [`${attribute}.value.stringListValue`, { kind: 'items', min: 1, max: 10 }],
      [`${attribute}.value.stringListValue[]`, { kind: 'length', min: 1, max: 2048 }],
    ]),
  ];
}

function listDocuments(): Constraint[] {
  const op = 'ListKnowledgeBaseDocuments';
  return entries(op, page('agent_ListKnowledgeBaseDocuments'), [
    ['maxResults', { kind: 'range', min: 1, max: 1000, integer: true }],
    ['nextToken', { kind: 'length', min: 1, max: 2048 }],
    ['nextToken', { kind: 'pattern', documented: '\\S*', test: (v) => NO_WHITESPACE.test(v) }],
  ]);
}

/** The operators of a RetrievalFilter that compare one attribute (FilterAttribute). */
export const FILTER_ATTRIBUTE_OPERATORS = [
  'equals',
  'notEquals',
  'greaterThan',
  'greaterThanOrEquals',
  'lessThan',
  'lessThanOrEquals',
  'in',
  'notIn',
  'startsWith',
  'listContains',
  'stringContains',
] as const;

export const FILTER_LIST_OPERATORS = ['andAll', 'orAll'] as const;

/**
 * The rules of one RetrievalFilter node; `member` is relative to the node ('' is the node itself). The validator
 * applies them to the filter of a Retrieve request and again to every member of its andAll / orAll lists.
 */
export const RETRIEVAL_FILTER_CONSTRAINTS: readonly Constraint[] = [
  ...entries('Retrieve', page('agent-runtime_RetrievalFilter'), [
    ['', { kind: 'union', members: [...FILTER_LIST_OPERATORS, ...FILTER_ATTRIBUTE_OPERATORS] }],
    ['andAll', { kind: 'items', min: 2 }],
    ['orAll', { kind: 'items', min: 2 }],
  ]),
  ...FILTER_ATTRIBUTE_OPERATORS.flatMap((operator) =>
    entries('Retrieve', page('agent-runtime_FilterAttribute'), [
      [`${operator}.key`, required],
      [`${operator}.key`, { kind: 'length', min: 1, max: 100 }],
      [`${operator}.value`, required],
    ]),
  ),
];

function retrieve(): Constraint[] {
  const op = 'Retrieve';
  const vector = 'retrievalConfiguration.vectorSearchConfiguration';
  return [
    ...entries(op, page('agent-runtime_Retrieve'), [
      ['knowledgeBaseId', required],
      ['knowledgeBaseId', { kind: 'length', min: 10, max: 2048 }],
      [
        'knowledgeBaseId',
        {
          kind: 'pattern',
          documented:
            '^[0-9a-zA-Z]{10}$|^arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:knowledge-base/[0-9a-zA-Z]{10}$',
          test: (v) => ID.test(v) || isKnowledgeBaseArn(v),
        },
      ],
      ['retrievalQuery', required],
      ['nextToken', { kind: 'length', min: 1, max: 2048 }],
      ['nextToken', { kind: 'pattern', documented: '^\\S*$', test: (v) => NO_WHITESPACE.test(v) }],
    ]),
    ...entries(op, page('agent-runtime_KnowledgeBaseQuery'), [
      ['retrievalQuery.text', { kind: 'length', min: 0, max: 20_000 }],
      ['retrievalQuery.type', { kind: 'enum', values: ['TEXT', 'IMAGE'] }],
    ]),
    ...entries(op, page('agent-runtime_KnowledgeBaseVectorSearchConfiguration'), [
      [`${vector}.numberOfResults`, { kind: 'range', min: 1, max: 100, integer: true }],
      [`${vector}.overrideSearchType`, { kind: 'enum', values: ['HYBRID', 'SEMANTIC'] }],
      [`${vector}.filter`, { kind: 'retrievalFilter' }],
    ]),
  ];
}

const CONTENT_BLOCK_MEMBERS = [
  'text',
  'image',
  'document',
  'video',
  'audio',
  'toolUse',
  'toolResult',
  'guardContent',
  'cachePoint',
  'reasoningContent',
  'citationsContent',
  'searchResult',
  'toolAddition',
  'toolRemoval',
];

function toolUseId(op: BedrockOperation, at: string, source: string): Constraint[] {
  return entries(op, source, [
    [at, required],
    [at, { kind: 'length', min: 1, max: 64 }],
    [at, { kind: 'pattern', documented: '[a-zA-Z0-9_.:-]+', test: (v) => TOOL_USE_ID.test(v) }],
  ]);
}

function toolName(op: BedrockOperation, at: string, source: string): Constraint[] {
  return entries(op, source, [
    [at, required],
    [at, { kind: 'length', min: 1, max: 64 }],
    [at, { kind: 'pattern', documented: '[a-zA-Z0-9_-]+', test: (v) => TOOL_NAME.test(v) }],
  ]);
}

function converseMessages(): Constraint[] {
  const op = 'Converse';
  const block = 'messages[].content[]';
  return [
    ...entries(op, page('runtime_Converse'), [['messages', { kind: 'type', type: 'list' }]]),
    ...entries(op, page('runtime_Message'), [
      ['messages[].role', required],
      ['messages[].role', { kind: 'enum', values: ['user', 'assistant', 'system'] }],
      ['messages[].content', required],
      ['messages[].content', { kind: 'type', type: 'list' }],
      ['messages[].content', { kind: 'blockCount', block: 'image', max: 20 }],
      ['messages[].content', { kind: 'blockCount', block: 'document', max: 5 }],
      ['messages[]', { kind: 'blocksOnlyIn', role: 'user', blocks: ['image', 'document'] }],
    ]),
    ...entries(op, page('runtime_ContentBlock'), [[block, { kind: 'union', members: CONTENT_BLOCK_MEMBERS }]]),
    ...entries(op, page('runtime_ImageBlock'), [
      [`${block}.image.format`, required],
      [`${block}.image.format`, { kind: 'enum', values: ['png', 'jpeg', 'gif', 'webp'] }],
      [`${block}.image.source`, required],
    ]),
    ...entries(op, page('runtime_ImageSource'), [
      [`${block}.image.source`, { kind: 'union', members: ['bytes', 's3Location'] }],
      // A blob travels as base64 text: a non-empty text is a non-empty blob.
      [`${block}.image.source.bytes`, { kind: 'length', min: 1 }],
    ]),
    ...toolUseId(op, `${block}.toolUse.toolUseId`, page('runtime_ToolUseBlock')),
    ...toolName(op, `${block}.toolUse.name`, page('runtime_ToolUseBlock')),
    ...entries(op, page('runtime_ToolUseBlock'), [[`${block}.toolUse.input`, required]]),
    ...toolUseId(op, `${block}.toolResult.toolUseId`, page('runtime_ToolResultBlock')),
    ...entries(op, page('runtime_ToolResultBlock'), [
      [`${block}.toolResult.content`, required],
      [`${block}.toolResult.content`, { kind: 'type', type: 'list' }],
      [`${block}.toolResult.status`, { kind: 'enum', values: ['success', 'error'] }],
    ]),
    ...entries(op, page('runtime_ToolResultContentBlock'), [
      [
        `${block}.toolResult.content[]`,
        { kind: 'union', members: ['json', 'text', 'image', 'document', 'video', 'searchResult'] },
      ],
    ]),
  ];
}

function converse(): Constraint[] {
  const op = 'Converse';
  const inference = 'inferenceConfig';
  const tools = 'toolConfig.tools';
  return [
    ...entries(op, page('runtime_Converse'), [
      ['modelId', required],
      ['modelId', { kind: 'length', min: 1, max: 2048 }],
      [
        'modelId',
        {
          kind: 'pattern',
          documented: '([a-zA-Z0-9-:.]+) or a Bedrock / SageMaker ARN (one alternative of the documented pattern)',
          test: (v) => v.startsWith('arn:') || PLAIN_MODEL_ID.test(v),
        },
      ],
      ['system', { kind: 'type', type: 'list' }],
    ]),
    ...converseMessages(),
    ...entries(op, page('runtime_SystemContentBlock'), [
      ['system[]', { kind: 'union', members: ['text', 'guardContent', 'cachePoint'] }],
      ['system[].text', { kind: 'length', min: 1 }],
    ]),
    ...entries(op, page('runtime_InferenceConfiguration'), [
      [`${inference}.maxTokens`, { kind: 'range', min: 1, integer: true }],
      [`${inference}.temperature`, { kind: 'range', min: 0, max: 1 }],
      [`${inference}.topP`, { kind: 'range', min: 0, max: 1 }],
      [`${inference}.stopSequences`, { kind: 'items', min: 0, max: 2500 }],
      [`${inference}.stopSequences[]`, { kind: 'length', min: 1 }],
    ]),
    ...entries(op, page('runtime_ToolConfiguration'), [
      [tools, required],
      [tools, { kind: 'items', min: 1 }],
      ['toolConfig.toolChoice', { kind: 'union', members: ['auto', 'any', 'tool'] }],
    ]),
    ...entries(op, page('runtime_Tool'), [
      [`${tools}[]`, { kind: 'union', members: ['toolSpec', 'systemTool', 'cachePoint'] }],
    ]),
    ...toolName(op, `${tools}[].toolSpec.name`, page('runtime_ToolSpecification')),
    ...entries(op, page('runtime_ToolSpecification'), [
      [`${tools}[].toolSpec.description`, { kind: 'length', min: 1 }],
      [`${tools}[].toolSpec.inputSchema`, required],
    ]),
    ...entries(op, page('runtime_ToolInputSchema'), [
      [`${tools}[].toolSpec.inputSchema`, { kind: 'union', members: ['json'] }],
    ]),
  ];
}

/** The table: every documented constraint the stand-in checks, by operation. */
export const BEDROCK_CONSTRAINTS: readonly Constraint[] = [
  ...dataSourceMembers('IngestKnowledgeBaseDocuments'),
  ...clientToken('IngestKnowledgeBaseDocuments'),
  ...ingestDocuments(),
  ...dataSourceMembers('DeleteKnowledgeBaseDocuments'),
  ...clientToken('DeleteKnowledgeBaseDocuments'),
  ...documentIdentifiers('DeleteKnowledgeBaseDocuments', 'documentIdentifiers'),
  ...dataSourceMembers('GetKnowledgeBaseDocuments'),
  ...documentIdentifiers('GetKnowledgeBaseDocuments', 'documentIdentifiers'),
  ...dataSourceMembers('ListKnowledgeBaseDocuments'),
  ...listDocuments(),
  ...retrieve(),
  ...converse(),
];

// ---------------------------------------------------------------------------------------------------------------
// Applying the table to a request

/** One member of one request that breaks one rule. */
export interface Finding {
  readonly operation: BedrockOperation;
  /** The concrete member path (`documents[3].metadata.inlineAttributes[0].key`). */
  readonly member: string;
  /** The rule as `describeRule` words it (`items 1..10`). */
  readonly rule: string;
  /** What the request had instead (`25 items`). */
  readonly detail: string;
  readonly source: string;
}

export interface RequestContext {
  /** The type of the data source the request names (the stand-in's are all CUSTOM). */
  readonly dataSourceType?: string;
}

function bounds(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return `${min}..${max}`;
  if (min !== undefined) return `≥ ${min}`;
  return `≤ ${max}`;
}

export function describeRule(rule: Rule): string {
  switch (rule.kind) {
    case 'required':
      return 'required';
    case 'type':
      return `type ${rule.type}`;
    case 'length':
      return `length ${bounds(rule.min, rule.max)}`;
    case 'pattern':
      return `pattern ${rule.documented}`;
    case 'enum':
      return `enum ${rule.values.join(' | ')}`;
    case 'items':
      return `items ${bounds(rule.min, rule.max)}`;
    case 'range':
      return `${rule.integer ? 'integer' : 'number'} ${bounds(rule.min, rule.max)}`;
    case 'selects':
      return `${rule.discriminator} selects its member (${Object.entries(rule.members)
        .map(([value, member]) => `${value} → ${member}`)
        .join(', ')})`;
    case 'union':
      return `exactly one of ${rule.members.join(', ')}`;
    case 'matchesDataSource':
      return 'matches the type of the data source';
    case 'blockCount':
      return `at most ${rule.max} ${rule.block} blocks`;
    case 'blocksOnlyIn':
      return `${rule.blocks.join(' and ')} blocks only in ${rule.role} messages`;
    case 'retrievalFilter':
      return 'RetrievalFilter';
  }
}

type Json = unknown;

interface Located {
  readonly path: string;
  readonly value: Json;
}

function isObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** Every value at `member` under `root` ([] expands lists); absent members and wrong intermediate types are skipped. */
function locate(root: Located, member: string): Located[] {
  if (member === '') return [root];
  let current: Located[] = [root];
  for (const step of member.split('.')) {
    const each = step.endsWith('[]');
    const key = each ? step.slice(0, -2) : step;
    const next: Located[] = [];
    for (const { path, value } of current) {
      if (!isObject(value) || value[key] === undefined || value[key] === null) continue;
      const child = value[key];
      const childPath = join(path, key);
      if (!each) next.push({ path: childPath, value: child });
      else if (Array.isArray(child)) {
        child.forEach((item, i) => {
          next.push({ path: `${childPath}[${i}]`, value: item });
        });
      }
    }
    current = next;
  }
  return current;
}

function typeOf(value: Json): string {
  if (Array.isArray(value)) return 'list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'structure' : typeof value;
}

function expectType(value: Json, type: string): string | undefined {
  return typeOf(value) === type ? undefined : `a ${typeOf(value)}`;
}

function outside(value: number, min: number | undefined, max: number | undefined): boolean {
  return (min !== undefined && value < min) || (max !== undefined && value > max);
}

/** What is wrong with `value` under `rule`, or undefined. ('required' and the recursive rules are handled apart.) */
function breach(rule: Rule, value: Json, context: RequestContext): string | undefined {
  switch (rule.kind) {
    case 'type':
      return expectType(value, rule.type);
    case 'length': {
      if (typeof value !== 'string') return expectType(value, 'string');
      const length = [...value].length;
      return outside(length, rule.min, rule.max) ? `${length} characters` : undefined;
    }
    case 'pattern':
      if (typeof value !== 'string') return expectType(value, 'string');
      return rule.test(value) ? undefined : JSON.stringify(value.slice(0, 80));
    case 'enum':
      if (typeof value !== 'string') return expectType(value, 'string');
      return rule.values.includes(value) ? undefined : JSON.stringify(value.slice(0, 80));
    case 'items':
      if (!Array.isArray(value)) return expectType(value, 'list');
      return outside(value.length, rule.min, rule.max) ? `${value.length} items` : undefined;
    case 'range':
      if (typeof value !== 'number') return expectType(value, 'number');
      if (rule.integer && !Number.isInteger(value)) return String(value);
      return outside(value, rule.min, rule.max) ? String(value) : undefined;
    case 'selects': {
      if (!isObject(value)) return expectType(value, 'structure');
      const selected = rule.members[String(value[rule.discriminator])];
      return selected && value[selected] === undefined ? `no ${selected}` : undefined;
    }
    case 'union':
      return unionBreach(rule.members, value);
    case 'matchesDataSource':
      return context.dataSourceType && value !== context.dataSourceType
        ? `${JSON.stringify(value)} in a ${context.dataSourceType} data source`
        : undefined;
    case 'blockCount': {
      if (!Array.isArray(value)) return undefined;
      const count = value.filter((block) => isObject(block) && block[rule.block] !== undefined).length;
      return count > rule.max ? `${count} ${rule.block} blocks` : undefined;
    }
    case 'blocksOnlyIn': {
      if (!isObject(value) || value.role === rule.role || !Array.isArray(value.content)) return undefined;
      const found = rule.blocks.find((kind) =>
        (value.content as Json[]).some((block) => isObject(block) && block[kind] !== undefined),
      );
      return found ? `a ${found} block in a ${String(value.role)} message` : undefined;
    }
    default:
      return undefined;
  }
}

function unionBreach(members: readonly string[], value: Json): string | undefined {
  if (!isObject(value)) return expectType(value, 'structure');
  const set = Object.keys(value).filter((key) => value[key] !== undefined && value[key] !== null);
  const unknown = set.filter((key) => !members.includes(key));
  if (unknown.length > 0) return `unknown member ${unknown.map((key) => JSON.stringify(key.slice(0, 80))).join(', ')}`;
  return set.length === 1 ? undefined : `${set.length} members set`;
}

function parentAndKey(member: string): [string, string] {
  const dot = member.lastIndexOf('.');
  return dot < 0 ? ['', member] : [member.slice(0, dot), member.slice(dot + 1)];
}

function finding(constraint: Constraint, path: string, detail: string): Finding {
  return {
    operation: constraint.operation,
    member: path,
    rule: describeRule(constraint.rule),
    detail,
    source: constraint.source,
  };
}

function apply(constraint: Constraint, root: Located, context: RequestContext, findings: Finding[]): void {
  const { rule, member } = constraint;
  if (rule.kind === 'required') {
    const [parent, key] = parentAndKey(member);
    for (const located of locate(root, parent)) {
      const value = isObject(located.value) ? located.value[key] : undefined;
      if (value === undefined || value === null) findings.push(finding(constraint, join(located.path, key), 'missing'));
    }
    return;
  }
  for (const located of locate(root, member)) {
    if (rule.kind === 'retrievalFilter') {
      checkFilter(located, context, findings);
      continue;
    }
    const detail = breach(rule, located.value, context);
    if (detail !== undefined) findings.push(finding(constraint, located.path, detail));
  }
}

/** A RetrievalFilter node and, depth first, the members of its andAll / orAll lists. */
function checkFilter(node: Located, context: RequestContext, findings: Finding[]): void {
  for (const constraint of RETRIEVAL_FILTER_CONSTRAINTS) apply(constraint, node, context, findings);
  if (!isObject(node.value)) return;
  for (const operator of FILTER_LIST_OPERATORS) {
    const members = node.value[operator];
    if (!Array.isArray(members)) continue;
    members.forEach((child, i) => {
      checkFilter({ path: `${join(node.path, operator)}[${i}]`, value: child }, context, findings);
    });
  }
}

/** Every documented constraint of `operation` that `request` (its path labels and body as one object) breaks. */
export function checkRequest(
  operation: BedrockOperation,
  request: Record<string, unknown>,
  context: RequestContext = {},
): Finding[] {
  const findings: Finding[] = [];
  const root: Located = { path: '', value: request };
  for (const constraint of BEDROCK_CONSTRAINTS) {
    if (constraint.operation === operation) apply(constraint, root, context, findings);
  }
  return findings;
}
