/** MemberStore on DynamoDB: one item per person, by e-mail; an organization's through `byOrganization` (lib/tables.ts). */
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { MemberRecord, MemberStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

export class DynamoMemberStore implements MemberStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(email: string): Promise<MemberRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { email }, ConsistentRead: true }),
    );
    return Item as MemberRecord | undefined;
  }

  async create(member: MemberRecord): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: member,
          ConditionExpression: 'attribute_not_exists(email)',
        }),
      ),
    );
    return written !== undefined;
  }

  async list(organizationId: string): Promise<MemberRecord[]> {
    return collect(
      queryAll<MemberRecord>(this.client, {
        TableName: this.tableName,
        IndexName: 'byOrganization',
        KeyConditionExpression: 'organizationId = :organizationId',
        ExpressionAttributeValues: { ':organizationId': organizationId },
      }),
    );
  }

  async delete(email: string, organizationId: string): Promise<boolean> {
    const deleted = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { email },
          ConditionExpression: 'organizationId = :organizationId',
          ExpressionAttributeValues: { ':organizationId': organizationId },
        }),
      ),
    );
    return deleted !== undefined;
  }
}
