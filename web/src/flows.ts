/** An agent definition as the console reads it: its flows, nodes and edges (the API checks the rest). */

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

export interface Problem {
  readonly field: string;
  readonly rule: string;
  readonly message: string;
  readonly flow?: string;
  readonly node?: string;
}

/** The webhook triggers of a definition, with the flow each starts. */
export function webhookTriggers(definition: AgentDefinition): { flow: string; node: FlowNodeDefinition }[] {
  return definition.flows.flatMap((flow) =>
    flow.nodes
      .filter((node) => node.type === 'trigger' && node.triggerType === 'webhook')
      .map((node) => ({ flow: flow.name, node })),
  );
}
