/**
 * RetrievalConfigStore on DynamoDB: the default retrieval configuration of each agent and environment.
 */
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Environment } from '#core/knowledge/fields';
import type { RetrievalConfigRecord } from '#core/retrieval/retrieval-config';
import type { RetrievalConfigStore } from '#ports/retrieval-configs';
import { unlessConditionFails } from './expressions';

export class DynamoRetrievalConfigStore implements RetrievalConfigStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(agentId: string, environment: Environment): Promise<RetrievalConfigRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { agentId, environment } }),
    );
    return Item as RetrievalConfigRecord | undefined;
  }

  async put(record: RetrievalConfigRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: record }));
  }

  async replace(record: RetrievalConfigRecord, previousUpdatedAt: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          ConditionExpression: 'updatedAt = :previous',
          ExpressionAttributeValues: { ':previous': previousUpdatedAt },
        }),
      ),
    );
    return written !== undefined;
  }

  async delete(agentId: string, environment: Environment): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { agentId, environment } }));
  }
}
