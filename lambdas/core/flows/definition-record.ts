/** A stored definition: the validated definition of one agent in one environment, and what the scheduler needs. */
import type { Environment } from '#core/knowledge/fields';
import type { AgentDefinition } from './definition';

/**
 * Who stored a version, as the version list shows it: the person's e-mail, or the token's id (the token list,
 * GET /dashboard/tokens, names it). The same shape as a token's `createdBy`.
 */
export type DefinitionAuthor =
  | { readonly kind: 'person'; readonly email: string }
  | { readonly kind: 'token'; readonly tokenId: string };

export interface AgentDefinitionRecord {
  readonly agentId: string;
  readonly environment: Environment;
  /** The agent's organization: the runtime acts for it (default retrieval checks knowledge bases against it). */
  readonly organizationId: string;
  readonly definition: AgentDefinition;
  /** 1 for the first definition of the environment, +1 on every save that changes it. */
  readonly version: number;
  readonly updatedAt: string;
  /** Absent on a definition stored before versions recorded their author. */
  readonly updatedBy?: DefinitionAuthor;
  /** The version this one is a copy of, when it was stored by a restore. */
  readonly restoredFrom?: number;
  /** Whether any flow holds a schedule trigger (the store indexes only those). */
  readonly hasSchedule: boolean;
}

/** A version as the version list shows it: who stored it and when, and its size, without the definition itself. */
export interface DefinitionVersionSummary {
  readonly version: number;
  readonly updatedAt: string;
  readonly updatedBy: DefinitionAuthor | null;
  readonly restoredFrom: number | null;
  readonly flowCount: number;
  readonly nodeCount: number;
}
