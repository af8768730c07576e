/** `aps query`, `aps flows pull|push|validate` and `aps events export`: each a few typed calls of the client. */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError, type PlatformClient, type paths, unwrap } from '@agent-platform/client';
import { UsageError } from './config';

export const ENVIRONMENTS = ['development', 'staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

// ---------------------------------------------------------------------------------------------------------------
// aps query
// ---------------------------------------------------------------------------------------------------------------

const OPERATORS = [
  ['!=', 'notEquals'],
  ['>', 'greaterThan'],
  ['<', 'lessThan'],
  ['=', 'equals'],
] as const;

type Filter = { key: string; operator: (typeof OPERATORS)[number][1]; value: string };

/** `label1=topic:billing`, `label2!=lang:de`, `label1>a`, `label1<m`: the query endpoint's filter entries. */
export function parseFilter(text: string): Filter {
  for (const [symbol, operator] of OPERATORS) {
    const at = text.indexOf(symbol);
    if (at > 0) return { key: text.slice(0, at).trim(), operator, value: text.slice(at + symbol.length).trim() };
  }
  throw new UsageError(`--filter ${JSON.stringify(text)}: write key=value, key!=value, key>value or key<value`);
}

export interface QueryHit {
  readonly content: string;
  readonly score: number;
  readonly metadata: { readonly documentId: string; readonly label1?: string | null; readonly label2?: string | null };
}

export async function query(
  api: PlatformClient,
  options: {
    agentId: string;
    knowledgeBaseId: string;
    environment: Environment;
    text: string;
    filters: Filter[];
    numberOfResults?: number;
    minScore?: number;
  },
): Promise<{ results: QueryHit[] }> {
  const answer = await unwrap(
    api.POST('/dashboard/agents/{agentId}/knowledge/{environment}/kb/{knowledgeBaseId}/query', {
      params: {
        path: { agentId: options.agentId, environment: options.environment, knowledgeBaseId: options.knowledgeBaseId },
      },
      body: {
        query: options.text,
        ...(options.filters.length ? { filters: options.filters } : {}),
        ...(options.numberOfResults !== undefined ? { numberOfResults: options.numberOfResults } : {}),
        ...(options.minScore !== undefined ? { minScore: options.minScore } : {}),
      },
    }),
  );
  return answer as unknown as { results: QueryHit[] };
}

export function formatHits(results: readonly QueryHit[]): string {
  if (results.length === 0) return 'no results\n';
  return results
    .map((hit, i) => {
      const labels = [hit.metadata.label1, hit.metadata.label2].filter(Boolean).join(' ');
      const text = hit.content.replace(/\s+/g, ' ').trim();
      const shown = text.length > 300 ? `${text.slice(0, 297)}…` : text;
      return `[${i + 1}] score ${hit.score.toFixed(3)}  document ${hit.metadata.documentId}${labels ? `  ${labels}` : ''}\n    ${shown}\n`;
    })
    .join('');
}

// ---------------------------------------------------------------------------------------------------------------
// aps flows pull | push | validate
// ---------------------------------------------------------------------------------------------------------------

/** The versions pulled, so that a push refuses to overwrite a definition changed since (409 VERSION_CONFLICT). */
export const FLOWS_STATE_FILE = '.aps-flows.json';
const DEFINITION_FILE = /^([0-9a-f-]{36})\.(development|staging|production)\.json$/;

type PutDefinitionBody = NonNullable<
  paths['/dashboard/agents/{agentId}/definition/{environment}']['put']['requestBody']
>['content']['application/json'];

interface DefinitionView {
  readonly definition: Record<string, unknown>;
  readonly version: number;
  readonly unchanged?: boolean;
}

export interface DefinitionFile {
  readonly file: string;
  readonly agentId: string;
  readonly environment: Environment;
}

export function definitionFileName(agentId: string, environment: Environment): string {
  return `${agentId}.${environment}.json`;
}

/** The definition files of a folder (`<agentId>.<environment>.json`), narrowed to an agent and environment. */
export function definitionFiles(folder: string, agentId?: string, environment?: Environment): DefinitionFile[] {
  if (!existsSync(folder)) throw new UsageError(`${folder} does not exist`);
  return readdirSync(folder)
    .sort()
    .flatMap((file) => {
      const match = DEFINITION_FILE.exec(file);
      if (!match) return [];
      const found = { file, agentId: match[1], environment: match[2] as Environment };
      return (agentId && found.agentId !== agentId) || (environment && found.environment !== environment)
        ? []
        : [found];
    });
}

function readVersions(folder: string): Record<string, number> {
  try {
    return JSON.parse(readFileSync(join(folder, FLOWS_STATE_FILE), 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

function writeVersions(folder: string, versions: Record<string, number>): void {
  writeFileSync(join(folder, FLOWS_STATE_FILE), `${JSON.stringify(versions, null, 2)}\n`);
}

/** Writes every stored definition of the agents (all, unless one is named) as a file; answers the files written. */
export async function pullFlows(
  api: PlatformClient,
  folder: string,
  agentId?: string,
  environment?: Environment,
): Promise<{ file: string; version: number }[]> {
  mkdirSync(folder, { recursive: true });
  const agentIds = agentId
    ? [agentId]
    : ((await unwrap(api.GET('/dashboard/agents'))) as unknown as { data: { agentId: string }[] }).data.map(
        (agent) => agent.agentId,
      );
  const versions = readVersions(folder);
  const written: { file: string; version: number }[] = [];
  for (const id of agentIds) {
    for (const env of environment ? [environment] : ENVIRONMENTS) {
      let view: DefinitionView;
      try {
        view = (await unwrap(
          api.GET('/dashboard/agents/{agentId}/definition/{environment}', {
            params: { path: { agentId: id, environment: env } },
          }),
        )) as unknown as DefinitionView;
      } catch (error) {
        if (error instanceof ApiError && error.code === 'DEFINITION_NOT_FOUND') continue;
        throw error;
      }
      const file = definitionFileName(id, env);
      writeFileSync(join(folder, file), `${JSON.stringify(view.definition, null, 2)}\n`);
      versions[file] = view.version;
      written.push({ file, version: view.version });
    }
  }
  writeVersions(folder, versions);
  return written;
}

export interface PushResult {
  readonly file: string;
  readonly version?: number;
  readonly unchanged?: boolean;
  readonly error?: {
    code: string;
    message: string;
    details: readonly { field: string; rule: string; message?: string }[];
  };
}

/**
 * Stores each file's definition as its agent's, in its environment. Unless `force`, with the version it was pulled
 * at: a definition changed on the service since is not overwritten (409 VERSION_CONFLICT: pull, merge, push).
 */
export async function pushFlows(
  api: PlatformClient,
  folder: string,
  options: { agentId?: string; environment?: Environment; force: boolean },
): Promise<PushResult[]> {
  const versions = readVersions(folder);
  const results: PushResult[] = [];
  for (const { file, agentId, environment } of definitionFiles(folder, options.agentId, options.environment)) {
    const definition = readDefinition(folder, file);
    const expectedVersion = options.force ? undefined : (versions[file] ?? 0);
    try {
      const view = (await unwrap(
        api.PUT('/dashboard/agents/{agentId}/definition/{environment}', {
          params: { path: { agentId, environment } },
          body: { ...definition, ...(expectedVersion !== undefined ? { expectedVersion } : {}) } as PutDefinitionBody,
        }),
      )) as unknown as DefinitionView;
      versions[file] = view.version;
      results.push({ file, version: view.version, unchanged: view.unchanged === true });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      results.push({ file, error: { code: error.code, message: error.message, details: error.details } });
    }
  }
  writeVersions(folder, versions);
  return results;
}

export interface ValidateResult {
  readonly file: string;
  readonly valid: boolean;
  readonly problems: readonly { field: string; rule: string; message: string; flow?: string; node?: string }[];
}

export async function validateFlows(
  api: PlatformClient,
  folder: string,
  options: { agentId?: string; environment?: Environment },
): Promise<ValidateResult[]> {
  const results: ValidateResult[] = [];
  for (const { file, agentId, environment } of definitionFiles(folder, options.agentId, options.environment)) {
    const answer = (await unwrap(
      api.POST('/dashboard/agents/{agentId}/definition/{environment}/validate', {
        params: { path: { agentId, environment } },
        body: readDefinition(folder, file) as PutDefinitionBody,
      }),
    )) as unknown as Omit<ValidateResult, 'file'>;
    results.push({ file, valid: answer.valid, problems: answer.problems });
  }
  return results;
}

function readDefinition(folder: string, file: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(join(folder, file), 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${(error as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// aps events export
// ---------------------------------------------------------------------------------------------------------------

export interface EventRecord {
  readonly id: string | number;
  readonly agentId: string;
  readonly sessionId: string;
  readonly environment: string;
  readonly eventName: string;
  readonly payload: unknown;
  readonly created_at: string;
}

export const EVENT_COLUMNS = ['id', 'created_at', 'environment', 'sessionId', 'eventName', 'payload'] as const;

/** Every event of the agent in the window, newest first, page after page (by nextToken, up to 1,000 a page). */
export async function* exportEvents(
  api: PlatformClient,
  options: {
    agentId: string;
    environment: Environment;
    from?: string;
    to?: string;
    eventName?: string;
    sessionId?: string;
    pageSize?: number;
  },
): AsyncGenerator<EventRecord> {
  let nextToken: string | null = null;
  do {
    const page = (await unwrap(
      api.POST('/api/v1/events/agent', {
        body: {
          agentId: options.agentId,
          filters: {
            environment: options.environment,
            ...(options.from ? { startDate: options.from } : {}),
            ...(options.to ? { endDate: options.to } : {}),
            ...(options.eventName ? { eventName: options.eventName } : {}),
            ...(options.sessionId ? { sessionId: options.sessionId } : {}),
          },
          limit: Math.min(options.pageSize ?? 1000, 1000),
          ...(nextToken ? { nextToken } : {}),
        },
      }),
    )) as unknown as { data: EventRecord[]; nextToken?: string | null };
    yield* page.data;
    nextToken = page.nextToken ?? null;
  } while (nextToken);
}

/** RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled. */
export function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvRow(event: EventRecord): string {
  return `${EVENT_COLUMNS.map((column) => csvCell(event[column])).join(',')}\r\n`;
}
