/**
 * AgentStore on DynamoDB: agents by organization (lib/tables.ts).
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AgentRecord, AgentStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

export class DynamoAgentStore implements AgentStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(agent: AgentRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: agent }));
  }

  async get(organizationId: string, agentId: string): Promise<AgentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { organizationId, agentId } }),
    );
    return Item as AgentRecord | undefined;
  }

  async rename(organizationId: string, agentId: string, displayName: string): Promise<AgentRecord | undefined> {
    return unlessConditionFails(async () => {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, agentId },
          UpdateExpression: 'SET displayName = :d',
          // An agent that does not exist is not created as a bare item.
          ConditionExpression: 'attribute_exists(agentId)',
          ExpressionAttributeValues: { ':d': displayName },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return Attributes as AgentRecord;
    });
  }

  async list(organizationId: string): Promise<AgentRecord[]> {
    const agents = await collect(
      queryAll<AgentRecord>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'organizationId = :o',
        ExpressionAttributeValues: { ':o': organizationId },
      }),
    );
    return agents.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.agentId.localeCompare(b.agentId));
  }
}
