/** The scopes an organization token may hold; each route of lib/routes.ts requires one. */

/** `webhook`: call an agent's webhook and app-event endpoints (the flow runtime; docs/flows.md). */
export const SCOPES = ['knowledge-management', 'analytics', 'dashboard', 'webhook'] as const;
export type Scope = (typeof SCOPES)[number];
