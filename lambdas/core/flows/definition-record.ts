/** A stored definition: the validated definition of one agent in one environment, and what the scheduler needs. */
import type { Environment } from '#core/knowledge/fields';
import type { AgentDefinition } from './definition';

export interface AgentDefinitionRecord {
  readonly agentId: string;
  readonly environment: Environment;
  /** The agent's organization: the runtime acts for it (default retrieval checks knowledge bases against it). */
  readonly organizationId: string;
  readonly definition: AgentDefinition;
  /** 1 for the first definition of the environment, +1 on every PUT. */
  readonly version: number;
  readonly updatedAt: string;
  /** Whether any flow holds a schedule trigger (the store indexes only those). */
  readonly hasSchedule: boolean;
}
