/**
 * Use cases of the definition endpoints: validate (every problem at once), store (only a valid definition, as the
 * next version of the environment) and read. The agent must be the caller's.
 */

import { ConflictError, NotFoundError, ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { DefinitionStore, McpClient, SessionStore } from '#ports/flows';
import type { Clock } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import { sameDefinition } from './canonical-json';
import { type AgentDefinition, type DefinitionProblem, nodesOf, validateDefinition } from './definition';
import type { AgentDefinitionRecord, DefinitionAuthor } from './definition-record';
import { LLM_CLASS_NAMES, type LlmClassName } from './llm-config';
import { mcpProblems } from './mcp-listing-check';

/** Stored as one DynamoDB item (400 KB), with room for its keys. */
export const DEFINITION_MAX_BYTES = 300 * 1024;

export interface DefinitionDeps {
  readonly agents: AgentStore;
  readonly definitions: DefinitionStore;
  readonly clock: Clock;
  /**
   * The Bedrock models this deployment may call (BEDROCK_MODELS, from `-c models`): a prompt node naming another
   * is a problem when the definition is stored, not a failure when it runs. Undefined: not checked (local runs).
   */
  readonly bedrockModels?: readonly string[];
  /** The class of the deployment's default model (GET /dashboard/models), which a browser task's `model` names into. */
  readonly defaultModelClass?: LlmClassName;
  /**
   * The Lambda functions this deployment may invoke as agent code (AGENT_CODE_FUNCTIONS, from `-c
   * agentCodeFunctions`): a definition naming another is a problem when it is stored. Undefined: not checked.
   */
  readonly agentCodeFunctions?: readonly string[];
  /** Lists the definition's MCP servers (mcp-listing-check.ts); undefined: they are not listed (unit tests). */
  readonly mcp?: McpClient;
}

/** A definition's `agentCode.functionArn` that the deployment did not register (its functions are not granted it). */
export function agentCodeProblems(definition: AgentDefinition, registered: readonly string[]): DefinitionProblem[] {
  const arn = definition.agentCode?.functionArn;
  if (arn === undefined || registered.includes(arn)) return [];
  return [
    {
      field: 'agentCode.functionArn',
      rule: 'agentCode.functionNotRegistered',
      message:
        registered.length === 0
          ? 'this deployment invokes no Lambda function as agent code: register it with -c agentCodeFunctions (README, "Agent code")'
          : `${arn} is not one of the functions this deployment may invoke: ${registered.join(', ')}`,
    },
  ];
}

/**
 * The problems of a valid definition against the deployment's Bedrock models: a ChatBedrockConverse node that names
 * a model outside the list, or that needs one where the deployment has none; a browser task whose `model` names a
 * model of the default class (browser-task.ts, browserTaskModel) that the deployment cannot call: outside the list
 * when Bedrock is the default, any when the offline model is (it would run on the offline model unnoticed).
 */
export function modelProblems(
  definition: AgentDefinition,
  bedrockModels: readonly string[],
  defaultClass: LlmClassName = bedrockModels.length > 0 ? 'ChatBedrockConverse' : 'ChatOffline',
): DefinitionProblem[] {
  const listed = bedrockModels.length > 0 ? bedrockModels.join(', ') : 'none';
  return nodesOf(definition).flatMap(({ flow, flowIndex, node, index }): DefinitionProblem[] => {
    if (node.type === 'browserTask') {
      const model = node.model;
      if (model === undefined || defaultClass === 'ChatOpenAICompatible') return [];
      if ((LLM_CLASS_NAMES as readonly string[]).includes(model)) {
        if (model !== 'ChatBedrockConverse' || bedrockModels.length > 0) return [];
      } else if (defaultClass === 'ChatBedrockConverse' && bedrockModels.includes(model)) {
        return [];
      }
      return [
        {
          field: `flows.${flowIndex}.nodes.${index}.model`,
          rule: 'llmConfig.modelUnavailable',
          flow: flow.name,
          node: node.name,
          message:
            defaultClass === 'ChatOffline'
              ? `this deployment calls no language model to run ${model} on (GET /dashboard/models)`
              : `model ${model} is not one this deployment may call (GET /dashboard/models): ${listed}`,
        },
      ];
    }
    if (node.type !== 'promptNode' || node.llmConfig?.name !== 'ChatBedrockConverse') return [];
    const model = node.llmConfig.properties?.model;
    if (model === undefined ? bedrockModels.length > 0 : bedrockModels.includes(model)) return [];
    return [
      {
        field: `flows.${flowIndex}.nodes.${index}.llmConfig${model === undefined ? '.name' : '.properties.model'}`,
        rule: 'llmConfig.modelUnavailable',
        flow: flow.name,
        node: node.name,
        message:
          model === undefined
            ? 'this deployment calls no Bedrock model (GET /dashboard/models lists what it calls)'
            : `model ${model} is not one this deployment may call (GET /dashboard/models): ${listed}`,
      },
    ];
  });
}

export function checkDefinition(
  input: unknown,
  bedrockModels?: readonly string[],
  defaultClass?: LlmClassName,
  agentCodeFunctions?: readonly string[],
) {
  const size = Buffer.byteLength(JSON.stringify(input) ?? '', 'utf8');
  if (size > DEFINITION_MAX_BYTES) {
    const problem: DefinitionProblem = {
      field: '',
      rule: 'definition.maxBytes',
      message: `the definition is ${size} bytes as JSON; at most ${DEFINITION_MAX_BYTES} are stored`,
    };
    return { valid: false as const, problems: [problem] };
  }
  const outcome = validateDefinition(input);
  if (!outcome.valid) return outcome;
  const problems = [
    ...(bedrockModels === undefined ? [] : modelProblems(outcome.definition, bedrockModels, defaultClass)),
    ...(agentCodeFunctions === undefined ? [] : agentCodeProblems(outcome.definition, agentCodeFunctions)),
  ];
  return problems.length === 0 ? outcome : { valid: false as const, problems };
}

/**
 * checkDefinition, then, for a definition that passes it, its MCP servers listed: what it names that they do not
 * offer, and a server that cannot be listed, are problems too.
 */
export async function checkDefinitionAndServers(deps: DefinitionDeps, caller: Caller, input: unknown) {
  const outcome = checkDefinition(input, deps.bedrockModels, deps.defaultModelClass, deps.agentCodeFunctions);
  if (!outcome.valid || !deps.mcp) return outcome;
  const problems = await mcpProblems(outcome.definition, deps.mcp, caller.organizationId);
  return problems.length === 0 ? outcome : { valid: false as const, problems };
}

export async function validateAgentDefinition(deps: DefinitionDeps, caller: Caller, agentId: string, input: unknown) {
  await requireAgent(deps, caller, agentId);
  const outcome = await checkDefinitionAndServers(deps, caller, input);
  return { valid: outcome.valid, problems: outcome.problems };
}

/** Versions an environment keeps (the current one included): each save forgets the one that falls out. */
export const DEFINITION_VERSIONS_KEPT = 100;

/** A stored definition, and whether the save found it already current (nothing was written). */
export interface SavedDefinition {
  readonly record: AgentDefinitionRecord;
  readonly unchanged: boolean;
}

/**
 * PUT: the definition as the environment's next version.
 * 1. The agent must be the caller's; the definition must pass every rule (400 with all its problems).
 * 2. `expectedVersion` (when given) must still be the current version (409 VERSION_CONFLICT): two people editing
 *    do not overwrite each other unseen.
 * 3. A definition equal to the current one (canonical JSON) stores nothing: the current version, `unchanged`.
 * 4. Otherwise it is stored as version N+1 with who and when, the current one moving to the history.
 */
export async function putAgentDefinition(
  deps: DefinitionDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
  input: unknown,
  expectedVersion?: number,
): Promise<SavedDefinition> {
  await requireAgent(deps, caller, agentId);
  const outcome = await checkDefinitionAndServers(deps, caller, input);
  if (!outcome.valid) throw new ValidationError(outcome.problems);
  return saveNextVersion(deps, caller, { agentId, environment, definition: outcome.definition, expectedVersion });
}

/** Steps 2 to 4 of a save (a PUT's, a restore's) of a definition already valid. */
export async function saveNextVersion(
  deps: Pick<DefinitionDeps, 'definitions' | 'clock'>,
  caller: Caller,
  save: {
    readonly agentId: string;
    readonly environment: Environment;
    readonly definition: AgentDefinition;
    readonly expectedVersion?: number;
    readonly restoredFrom?: number;
  },
): Promise<SavedDefinition> {
  const { agentId, environment, definition } = save;
  const previous = await deps.definitions.get(agentId, environment);
  const currentVersion = previous?.version ?? 0;
  if (save.expectedVersion !== undefined && save.expectedVersion !== currentVersion) {
    throw versionConflict(currentVersion, save.expectedVersion);
  }
  if (previous && sameDefinition(previous.definition, definition)) return { record: previous, unchanged: true };
  const record: AgentDefinitionRecord = {
    agentId,
    environment,
    organizationId: caller.organizationId,
    definition,
    version: currentVersion + 1,
    updatedAt: deps.clock.now().toISOString(),
    updatedBy: authorOf(caller),
    ...(save.restoredFrom !== undefined ? { restoredFrom: save.restoredFrom } : {}),
    hasSchedule: nodesOf(definition).some(({ node }) => node.type === 'trigger' && node.triggerType === 'schedule'),
  };
  const forget = record.version - DEFINITION_VERSIONS_KEPT;
  const saved = await deps.definitions.saveVersion(record, previous, forget >= 1 ? forget : undefined);
  // Another save landed between the read and this write: the caller's edit was made on what is no longer current.
  if (!saved) throw versionConflict(undefined, currentVersion);
  return { record, unchanged: false };
}

function versionConflict(current: number | undefined, expected: number): ConflictError {
  const now = current === undefined ? 'another save stored a newer version meanwhile' : `it is at version ${current}`;
  return new ConflictError(
    'VERSION_CONFLICT',
    `The definition moved on since version ${expected}: ${now}. Read it again and save your changes on top of it`,
    [{ field: 'expectedVersion', rule: 'version.current', message: `${expected} is not the current version: ${now}` }],
  );
}

/** Who a save is recorded as: a person by their e-mail (a token's caller has none), a token by its id. */
export function authorOf(caller: Caller): DefinitionAuthor {
  return caller.email !== undefined
    ? { kind: 'person', email: caller.email }
    : { kind: 'token', tokenId: caller.tokenId };
}

export async function getAgentDefinition(
  deps: DefinitionDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
): Promise<AgentDefinitionRecord> {
  await requireAgent(deps, caller, agentId);
  const record = await deps.definitions.get(agentId, environment);
  if (!record) throw new NotFoundError('DEFINITION_NOT_FOUND', `Agent ${agentId} has no definition in ${environment}`);
  return record;
}

export async function getSession(
  deps: { agents: AgentStore; sessions: SessionStore },
  caller: Caller,
  agentId: string,
  environment: Environment,
  sessionId: string,
) {
  await requireAgent(deps, caller, agentId);
  const session = await deps.sessions.get(agentId, environment, sessionId);
  if (!session) throw new NotFoundError('SESSION_NOT_FOUND', `Session ${sessionId} was not found`);
  const { leaseUntil: _lease, organizationId: _org, ...view } = session;
  return view;
}

/** What the API answers for a stored definition. */
export function definitionView(record: AgentDefinitionRecord) {
  const { organizationId: _org, hasSchedule: _s, ...view } = record;
  return { ...view, updatedBy: record.updatedBy ?? null, restoredFrom: record.restoredFrom ?? null };
}
