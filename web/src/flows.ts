/** An agent definition as the console reads it: its flows, nodes and edges (the API checks the rest). */
import type { Answer } from './answers';

export interface FlowNodeDefinition {
  readonly name: string;
  readonly type: string;
  readonly displayName?: string;
  readonly triggerType?: string;
  readonly autoTrigger?: boolean;
  readonly defaultPayload?: string;
  readonly targetNodeId?: string;
  readonly humanInTheLoop?: boolean;
}

export interface FlowEdgeDefinition {
  readonly from: string;
  readonly to: string;
  readonly type: string;
  readonly condition?: string;
  readonly when?: { path: string; operator: string; value?: unknown };
}

export interface FlowDefinition {
  readonly name: string;
  readonly nodes: readonly FlowNodeDefinition[];
  readonly edges?: readonly FlowEdgeDefinition[];
}

export interface AgentDefinition {
  readonly flows: readonly FlowDefinition[];
  readonly [key: string]: unknown;
}

/** A problem the API found in a definition (POST …/validate), at its field, flow and node. */
export type Problem = Answer<
  '/dashboard/agents/{agentId}/definition/{environment}/validate',
  'post'
>['problems'][number];

/** The webhook triggers of a definition, with the flow each starts. */
export function webhookTriggers(definition: AgentDefinition): { flow: string; node: FlowNodeDefinition }[] {
  return definition.flows.flatMap((flow) =>
    flow.nodes
      .filter((node) => node.type === 'trigger' && node.triggerType === 'webhook')
      .map((node) => ({ flow: flow.name, node })),
  );
}
