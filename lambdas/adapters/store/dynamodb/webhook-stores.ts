/**
 * The status webhooks' stores on DynamoDB (lib/tables.ts): `webhookEndpoints` (organizationId, endpointId) and
 * `webhookDeliveries` (endpointId, attemptKey = `<attemptedAt>#<webhook-id>#<attempt, 3 digits>`, so a Query read
 * backwards is newest first), whose items DynamoDB's TTL removes after WEBHOOK_DELIVERY_RETENTION_DAYS.
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  WEBHOOK_DELIVERY_RETENTION_DAYS,
  type WebhookAttemptRecord,
  type WebhookEndpointRecord,
  type WebhookSecrets,
} from '#core/webhooks/endpoint';
import type { WebhookDeliveryLog, WebhookEndpointStore } from '#ports/webhooks';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

export class DynamoWebhookEndpointStore implements WebhookEndpointStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(record: WebhookEndpointRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: record }));
  }

  async get(organizationId: string, endpointId: string): Promise<WebhookEndpointRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { organizationId, endpointId }, ConsistentRead: true }),
    );
    return Item as WebhookEndpointRecord | undefined;
  }

  async list(organizationId: string): Promise<WebhookEndpointRecord[]> {
    const records = await collect(
      queryAll<WebhookEndpointRecord>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'organizationId = :organizationId',
        ExpressionAttributeValues: { ':organizationId': organizationId },
        ConsistentRead: true,
      }),
    );
    return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async replace(record: WebhookEndpointRecord, expectedUpdatedAt: string): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
          ConditionExpression: 'updatedAt = :expected',
          ExpressionAttributeValues: { ':expected': expectedUpdatedAt },
        }),
      ),
    );
    return written !== undefined;
  }

  async delete(organizationId: string, endpointId: string): Promise<boolean> {
    const { Attributes } = await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: { organizationId, endpointId }, ReturnValues: 'ALL_OLD' }),
    );
    return Attributes !== undefined;
  }

  async replaceSecrets(
    organizationId: string,
    endpointId: string,
    secrets: WebhookSecrets,
    expected: string,
  ): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, endpointId },
          UpdateExpression: 'SET secrets = :secrets',
          ConditionExpression: 'secrets.#current.secret = :expected',
          ExpressionAttributeNames: { '#current': 'current' },
          ExpressionAttributeValues: { ':secrets': secrets, ':expected': expected },
        }),
      ),
    );
    return written !== undefined;
  }

  async recordDelivered(organizationId: string, endpointId: string, at: string): Promise<void> {
    await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, endpointId },
          UpdateExpression: 'SET lastDeliveryAt = :at REMOVE failingSince',
          ConditionExpression: 'attribute_exists(endpointId)',
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
  }

  async recordFailed(
    organizationId: string,
    endpointId: string,
    at: string,
    disableIfFailingSince: string,
  ): Promise<WebhookEndpointRecord | undefined> {
    const failing = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, endpointId },
          UpdateExpression: 'SET failingSince = if_not_exists(failingSince, :at)',
          ConditionExpression: 'attribute_exists(endpointId)',
          ExpressionAttributeValues: { ':at': at },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    const record = failing?.Attributes as WebhookEndpointRecord | undefined;
    if (!record?.enabled || record.failingSince === undefined || record.failingSince > disableIfFailingSince) {
      return record;
    }
    // Disabled only while still enabled and failing since then: a PATCH that enabled it meanwhile starts over.
    const disabled = await unlessConditionFails(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, endpointId },
          UpdateExpression: 'SET enabled = :false, disabledReason = :failing, disabledAt = :at',
          ConditionExpression: 'enabled = :true AND failingSince = :since',
          ExpressionAttributeValues: {
            ':false': false,
            ':true': true,
            ':failing': 'failing',
            ':at': at,
            ':since': record.failingSince,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return (disabled?.Attributes as WebhookEndpointRecord | undefined) ?? (await this.get(organizationId, endpointId));
  }
}

export class DynamoWebhookDeliveryLog implements WebhookDeliveryLog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async record(attempt: WebhookAttemptRecord): Promise<void> {
    const attemptKey = `${attempt.attemptedAt}#${attempt.messageId}#${String(attempt.attempt).padStart(3, '0')}`;
    const expiresAt = Math.floor(Date.parse(attempt.attemptedAt) / 1000) + WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400;
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: { ...attempt, attemptKey, expiresAt } }));
  }

  async list(
    endpointId: string,
    options: { readonly limit: number; readonly after?: string },
  ): Promise<{ attempts: WebhookAttemptRecord[]; next?: string }> {
    const { Items = [], LastEvaluatedKey } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'endpointId = :endpointId',
        ExpressionAttributeValues: { ':endpointId': endpointId },
        ScanIndexForward: false,
        Limit: options.limit,
        ...(options.after !== undefined ? { ExclusiveStartKey: { endpointId, attemptKey: options.after } } : {}),
      }),
    );
    const attempts = Items.map((item) => {
      const { attemptKey: _key, expiresAt: _expires, ...attempt } = item;
      return attempt as WebhookAttemptRecord;
    });
    const next = LastEvaluatedKey?.attemptKey as string | undefined;
    return next === undefined ? { attempts } : { attempts, next };
  }
}
