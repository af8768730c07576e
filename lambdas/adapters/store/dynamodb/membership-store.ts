/**
 * MembershipStore on DynamoDB (lib/tables.ts, `memberships`): one item per person and organization, keyed by the
 * person's `sub` so the authorizer reads a person's memberships consistently in one query; an organization's people
 * through the index `byOrganization`.
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import type { MembershipRecord, MembershipStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

export class DynamoMembershipStore implements MembershipStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listByPerson(sub: string): Promise<MembershipRecord[]> {
    // A person belongs to at most MAX_MEMBERSHIPS organizations (core/auth/people.ts): one page.
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#sub = :sub',
        ExpressionAttributeNames: { '#sub': 'sub' },
        ExpressionAttributeValues: { ':sub': sub },
        ConsistentRead: true,
      }),
    );
    return (Items ?? []) as MembershipRecord[];
  }

  async get(sub: string, organizationId: string): Promise<MembershipRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { sub, organizationId }, ConsistentRead: true }),
    );
    return Item as MembershipRecord | undefined;
  }

  async listByOrganization(organizationId: string): Promise<MembershipRecord[]> {
    return collect(
      queryAll<MembershipRecord>(this.client, {
        TableName: this.tableName,
        IndexName: 'byOrganization',
        KeyConditionExpression: 'organizationId = :organizationId',
        ExpressionAttributeValues: { ':organizationId': organizationId },
      }),
    );
  }

  async create(membership: MembershipRecord): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: membership,
          ConditionExpression: 'attribute_not_exists(#sub)',
          ExpressionAttributeNames: { '#sub': 'sub' },
        }),
      ),
    );
    return written !== undefined;
  }

  async delete(sub: string, organizationId: string): Promise<boolean> {
    const deleted = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { sub, organizationId },
          ConditionExpression: 'attribute_exists(#sub)',
          ExpressionAttributeNames: { '#sub': 'sub' },
        }),
      ),
    );
    return deleted !== undefined;
  }
}
