/**
 * TenancyReads on DynamoDB: the agent (agents table) and the knowledge base (knowledge bases table) of a request in
 * one BatchGetItem, both strongly consistent as their stores' own reads are, so a request's tenancy check is one
 * round trip for the same read units as two GetItems.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TenancyReads } from '#ports/stores';
import { agentOf } from './agent-store';
import { knowledgeBaseOf } from './knowledge-base-store';

/** BatchGetItem calls for the keys DynamoDB left unprocessed, before giving up. */
const MAX_TRIES = 10;

export class DynamoTenancyReads implements TenancyReads {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly agentsTable: string,
    private readonly knowledgeBasesTable: string,
  ) {}

  async agentAndKnowledgeBase(organizationId: string, agentId: string, knowledgeBaseId: string) {
    const found: Record<string, Record<string, unknown>> = {};
    let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> = {
      [this.agentsTable]: { Keys: [{ organizationId, agentId }], ConsistentRead: true },
      [this.knowledgeBasesTable]: { Keys: [{ agentId, knowledgeBaseId }], ConsistentRead: true },
    };
    for (let attempt = 1; Object.keys(request).length > 0; attempt++) {
      if (attempt > MAX_TRIES) throw new Error('tenancy: keys still unprocessed');
      // 50 ms doubling, with full jitter, before a call for what the last one left.
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * 2 ** attempt));
      const { Responses, UnprocessedKeys } = await this.client.send(new BatchGetCommand({ RequestItems: request }));
      for (const [table, items] of Object.entries(Responses ?? {})) if (items[0]) found[table] = items[0];
      request = (UnprocessedKeys ?? {}) as typeof request;
    }
    return { agent: agentOf(found[this.agentsTable]), knowledgeBase: knowledgeBaseOf(found[this.knowledgeBasesTable]) };
  }
}
