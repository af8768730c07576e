/**
 * The members table of before issue 33 on DynamoDB (e-mail → one organization): only read and emptied, one row at a
 * time, as people sign in and their row becomes a membership (core/auth/people.ts, adoptLegacyMembership).
 */
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { MemberRecord, MemberStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';

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
