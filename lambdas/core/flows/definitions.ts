/**
 * Use cases of the definition endpoints: validate (every problem at once), store (only a valid definition, as the
 * next version of the environment) and read. The agent must be the caller's.
 */

import { NotFoundError, ValidationError } from '#core/errors';
import type { Environment } from '#core/knowledge/fields';
import { type Caller, requireAgent } from '#core/tenancy/tenancy';
import type { DefinitionStore, SessionStore } from '#ports/flows';
import type { Clock } from '#ports/services';
import type { AgentStore } from '#ports/stores';
import { type AgentDefinition, type DefinitionProblem, nodesOf, validateDefinition } from './definition';
import type { AgentDefinitionRecord } from './definition-record';
import { LLM_CLASS_NAMES, type LlmClassName } from './llm-config';

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

export async function validateAgentDefinition(deps: DefinitionDeps, caller: Caller, agentId: string, input: unknown) {
  await requireAgent(deps, caller, agentId);
  const outcome = checkDefinition(input, deps.bedrockModels, deps.defaultModelClass, deps.agentCodeFunctions);
  return { valid: outcome.valid, problems: outcome.problems };
}

export async function putAgentDefinition(
  deps: DefinitionDeps,
  caller: Caller,
  agentId: string,
  environment: Environment,
  input: unknown,
): Promise<AgentDefinitionRecord> {
  await requireAgent(deps, caller, agentId);
  const outcome = checkDefinition(input, deps.bedrockModels, deps.defaultModelClass, deps.agentCodeFunctions);
  if (!outcome.valid) throw new ValidationError(outcome.problems);
  const previous = await deps.definitions.get(agentId, environment);
  const record: AgentDefinitionRecord = {
    agentId,
    environment,
    organizationId: caller.organizationId,
    definition: outcome.definition,
    version: (previous?.version ?? 0) + 1,
    updatedAt: deps.clock.now().toISOString(),
    hasSchedule: nodesOf(outcome.definition).some(
      ({ node }) => node.type === 'trigger' && node.triggerType === 'schedule',
    ),
  };
  await deps.definitions.put(record);
  return record;
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
  return view;
}
