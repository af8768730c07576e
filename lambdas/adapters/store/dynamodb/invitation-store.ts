/**
 * InvitationStore on DynamoDB (lib/tables.ts, `invitations`): one item per invited address and organization, keyed by
 * the address so a person's invitations are one query; an organization's through the index `byOrganization`. The
 * table's TTL (`expiresAtEpoch`) removes expired ones; until it does, the core ignores them by `expiresAt`.
 */
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { InvitationRecord, InvitationStore } from '#ports/stores';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

/** The TTL attribute, seconds since the epoch, from `expiresAt`. */
const TTL_ATTRIBUTE = 'expiresAtEpoch';

function withoutTtl(item: Record<string, unknown> | undefined): InvitationRecord | undefined {
  if (!item) return undefined;
  const { [TTL_ATTRIBUTE]: _ttl, ...invitation } = item;
  return invitation as unknown as InvitationRecord;
}

export class DynamoInvitationStore implements InvitationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(invitation: InvitationRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...invitation, [TTL_ATTRIBUTE]: Math.ceil(Date.parse(invitation.expiresAt) / 1000) },
      }),
    );
  }

  async get(email: string, organizationId: string): Promise<InvitationRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { email, organizationId }, ConsistentRead: true }),
    );
    return withoutTtl(Item);
  }

  async listByEmail(email: string): Promise<InvitationRecord[]> {
    const items = await collect(
      queryAll<Record<string, unknown>>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'email = :email',
        ExpressionAttributeValues: { ':email': email },
        ConsistentRead: true,
      }),
    );
    return items.map((item) => withoutTtl(item) as InvitationRecord);
  }

  async listByOrganization(organizationId: string): Promise<InvitationRecord[]> {
    const items = await collect(
      queryAll<Record<string, unknown>>(this.client, {
        TableName: this.tableName,
        IndexName: 'byOrganization',
        KeyConditionExpression: 'organizationId = :organizationId',
        ExpressionAttributeValues: { ':organizationId': organizationId },
      }),
    );
    return items.map((item) => withoutTtl(item) as InvitationRecord);
  }

  async delete(email: string, organizationId: string): Promise<boolean> {
    const deleted = await unlessConditionFails(() =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { email, organizationId },
          ConditionExpression: 'attribute_exists(email)',
        }),
      ),
    );
    return deleted !== undefined;
  }
}
