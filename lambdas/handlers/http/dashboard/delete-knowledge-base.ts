import { DynamoRetrievalConfigStore } from '../../../adapters/store/dynamodb/retrieval-config-store';
import { dynamoDocumentClient } from '../../../composition/clients/dynamodb';
import { container } from '../../../composition/container';
import { once } from '../../../composition/once';
import { deleteKnowledgeBase } from '../../../core/dashboard/dashboard';
import { config } from '../../../shared/config';
import { httpHandler } from '../../../shared/http';
import { knowledgeBasePathSchema } from './schemas';

const retrievalConfigs = once(
  () => new DynamoRetrievalConfigStore(dynamoDocumentClient(), config.tableName('retrievalConfigs')),
);

/** The knowledge base leaves the default retrieval configurations here, in the request, so the answer can say where. */
const deps = {
  get agents() {
    return container.agents;
  },
  get knowledgeBases() {
    return container.knowledgeBases;
  },
  get queue() {
    return container.queue;
  },
  get retrievalConfigs() {
    return retrievalConfigs();
  },
  clock: container.clock,
};

/** 202: the deletion is a job (core/processing/knowledge-base-deletion.ts); a repeat answers the same job. */
export const handler = httpHandler('DeleteKnowledgeBase', knowledgeBasePathSchema, async (input, caller) => ({
  status: 202,
  body: { ...(await deleteKnowledgeBase(deps, caller, input.agentId, input.knowledgeBaseId)) },
}));
