/**
 * The versions of an agent's definition in one environment: the list (who stored each and when), one version whole,
 * and a restore, which stores an old version's definition as the next version. The current version is the store's
 * current item; the ones it replaced are its history, the last DEFINITION_VERSIONS_KEPT in all (definitions.ts).
 * Two versions are compared in the console, from the two definitions.
 */
import { NotFoundError, ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { pageTokens } from '#core/paging/pages';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { AgentDefinitionRecord, DefinitionVersionSummary } from './definition-record';
import {
  checkDefinitionAndServers,
  DEFINITION_VERSIONS_KEPT,
  type DefinitionDeps,
  type SavedDefinition,
  saveNextVersion,
} from './definitions';

export const DEFAULT_VERSION_PAGE = 50;

/** The position is the last version listed; the next page lists the versions below it. */
const tokens = pageTokens(/^[1-9][0-9]{0,9}$/, 'agent or environment');

interface VersionList {
  readonly agentId: string;
  readonly environment: Environment;
}

const identity = (list: VersionList) => ['definitionVersions', list.agentId, list.environment];

/** What the list shows of a version. */
export function versionSummary(record: AgentDefinitionRecord): DefinitionVersionSummary {
  const { flows } = record.definition;
  return {
    version: record.version,
    updatedAt: record.updatedAt,
    updatedBy: record.updatedBy ?? null,
    restoredFrom: record.restoredFrom ?? null,
    flowCount: flows.length,
    nodeCount: flows.reduce((count, flow) => count + flow.nodes.length, 0),
  };
}

/**
 * GET …/versions: newest first, the current version at the top of the first page (`current: true`). An
 * environment without a definition has an empty list.
 */
export async function listDefinitionVersions(
  deps: Pick<DefinitionDeps, 'agents' | 'definitions'>,
  caller: Caller,
  request: VersionList & { readonly limit?: number; readonly nextToken?: string },
) {
  const list = { agentId: request.agentId, environment: request.environment };
  const after = request.nextToken === undefined ? undefined : Number(tokens.decode(request.nextToken, identity(list)));
  await requireAgent(deps, caller, request.agentId);
  const limit = request.limit ?? DEFAULT_VERSION_PAGE;
  const current = await deps.definitions.get(request.agentId, request.environment);
  if (!current) return { data: [], count: 0, nextToken: null };
  const withCurrent = after === undefined;
  const { versions, more } = await deps.definitions.listVersions(request.agentId, request.environment, {
    limit: withCurrent ? limit - 1 : limit,
    before: after ?? current.version,
  });
  const data = [
    ...(withCurrent ? [{ ...versionSummary(current), current: true }] : []),
    ...versions.map((version) => ({ ...version, current: version.version === current.version })),
  ];
  const last = data.at(-1);
  return {
    data,
    count: data.length,
    nextToken: more && last ? tokens.encode(String(last.version), identity(list)) : null,
  };
}

/** The version `version`, whole: the current one or one of its history; 404 DEFINITION_VERSION_NOT_FOUND. */
export async function getDefinitionVersion(
  deps: Pick<DefinitionDeps, 'agents' | 'definitions'>,
  caller: Caller,
  agentId: string,
  environment: Environment,
  version: number,
): Promise<AgentDefinitionRecord> {
  await requireAgent(deps, caller, agentId);
  return findVersion(deps, agentId, environment, version);
}

async function findVersion(
  deps: Pick<DefinitionDeps, 'definitions'>,
  agentId: string,
  environment: Environment,
  version: number,
): Promise<AgentDefinitionRecord> {
  const current = await deps.definitions.get(agentId, environment);
  const found =
    current === undefined || version > current.version
      ? undefined
      : version === current.version
        ? current
        : await deps.definitions.getVersion(agentId, environment, version);
  if (!found) {
    throw new NotFoundError(
      'DEFINITION_VERSION_NOT_FOUND',
      `Agent ${agentId} has no version ${version} of its definition in ${environment}` +
        (current ? ` (the current one is ${current.version}; the last ${DEFINITION_VERSIONS_KEPT} are kept)` : ''),
    );
  }
  return found;
}

/**
 * POST …/versions/{version}/restore: the version's definition stored as the next version, checked by today's rules
 * as a PUT is (an old version that no longer passes them is a 400 with its problems); equal to the current one, it
 * is the unchanged save. `expectedVersion` guards against a save in between, as on a PUT.
 */
export async function restoreDefinitionVersion(
  deps: DefinitionDeps,
  caller: Caller,
  request: VersionList & { readonly version: number; readonly expectedVersion?: number },
): Promise<SavedDefinition> {
  const { agentId, environment, version } = request;
  await requireAgent(deps, caller, agentId);
  const old = await findVersion(deps, agentId, environment, version);
  const outcome = await checkDefinitionAndServers(deps, caller, old.definition);
  if (!outcome.valid) {
    throw new ValidationError(
      outcome.problems,
      `Version ${version} does not pass today's rules, so it cannot be restored as it is: ${outcome.problems.length} problem(s)`,
    );
  }
  return saveNextVersion(deps, caller, {
    agentId,
    environment,
    definition: outcome.definition,
    restoredFrom: version,
    ...(request.expectedVersion !== undefined ? { expectedVersion: request.expectedVersion } : {}),
  });
}
