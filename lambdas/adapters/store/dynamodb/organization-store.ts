/** OrganizationStore on DynamoDB: one item per organization made by a sign-up (lib/tables.ts). */
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { OrganizationRecord, OrganizationStore } from '#ports/stores';

export class DynamoOrganizationStore implements OrganizationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(organization: OrganizationRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: organization }));
  }

  async get(organizationId: string): Promise<OrganizationRecord | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { organizationId } }));
    return Item as OrganizationRecord | undefined;
  }

  async delete(organizationId: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { organizationId } }));
  }
}
