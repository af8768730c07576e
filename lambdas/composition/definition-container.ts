/**
 * Composition root of the definition and session endpoints (PUT/GET/validate a definition, GET a session): the stores
 * of definitions and sessions and the agents they belong to, without the flow runtime's models, outbound HTTP and
 * browser, so these functions stay small (the 300 KB budget of an API bundle). The flow container reuses the stores.
 */
import { DynamoDefinitionStore, DynamoSessionStore } from '#adapters/store/dynamodb/flow-stores';
import type { DefinitionDeps } from '#core/flows/definitions';
import type { SessionStore } from '#ports/flows';
import { config, positiveInteger } from '#shared/config';
import { dynamoDocumentClient } from './clients/dynamodb';
import { agentsStore, clock } from './container';
import { mcpClient } from './mcp-client';
import { agentCodeFunctionsFromEnv, bedrockModelsFromEnv, modelCatalogFromEnv } from './model-catalog';
import { once } from './once';

export const definitionStore = once(
  () => new DynamoDefinitionStore(dynamoDocumentClient(), config.tableName('agentDefinitions')),
);
export const sessionStore = once(
  () =>
    new DynamoSessionStore(
      dynamoDocumentClient(),
      config.tableName('sessions'),
      positiveInteger('SESSION_RETENTION_DAYS', 30),
    ),
);

export const definitionContainer = {
  get agents() {
    return agentsStore();
  },
  get definitions() {
    return definitionStore();
  },
  get sessions(): SessionStore {
    return sessionStore();
  },
  clock: clock,
  get bedrockModels() {
    return bedrockModelsFromEnv();
  },
  get agentCodeFunctions() {
    return agentCodeFunctionsFromEnv();
  },
  get mcp() {
    return mcpClient();
  },
  get defaultModelClass() {
    return modelCatalogFromEnv().find((model) => model.default)?.llmConfigName;
  },
} satisfies DefinitionDeps & { sessions: SessionStore };
