/**
 * AgentStore on DynamoDB: agents by organization (lib/tables.ts), and a sparse index of those being deleted (their
 * `pendingKey` and the job's last progress in `updatedAt`) for the watchdog. Each agent's callback secrets sit on its item
 * (DynamoDB encrypts them at rest): they must stay usable for an HMAC, so they cannot be hashed as tokens are.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AgentRecord, AgentStore, CallbackSecrets } from '#ports/stores';
import { DELETING, DeletionJobRows } from './deletion-jobs';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

export function agentOf(item: Record<string, unknown> | undefined): AgentRecord | undefined {
  if (!item) return undefined;
  const { pendingKey: _pending, ...agent } = item;
  return agent as unknown as AgentRecord;
}

export class DynamoAgentStore implements AgentStore {
  private readonly jobs: DeletionJobRows;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {
    this.jobs = new DeletionJobRows(client, tableName);
  }

  async put(agent: AgentRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: agent }));
  }

  async get(organizationId: string, agentId: string): Promise<AgentRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { organizationId, agentId }, ConsistentRead: true }),
    );
    return agentOf(Item);
  }

  async rename(organizationId: string, agentId: string, displayName: string): Promise<AgentRecord | undefined> {
    return unlessConditionFails(async () => {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, agentId },
          UpdateExpression: 'SET displayName = :d',
          // An agent that does not exist is not created as a bare item; one being deleted is not renamed.
          ConditionExpression: 'attribute_exists(agentId) AND attribute_not_exists(#status)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':d': displayName },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return agentOf(Attributes) as AgentRecord;
    });
  }

  async replaceCallbackSecrets(
    organizationId: string,
    agentId: string,
    secrets: CallbackSecrets,
    expected: string | null,
  ): Promise<boolean> {
    const stored = await unlessConditionFails(async () => {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, agentId },
          UpdateExpression: 'SET #secrets = :secrets',
          // Only an agent in use, and only over the secret the caller read: a rotation and a first callback that
          // race keep one winner, and the other reads again.
          ConditionExpression: `attribute_exists(agentId) AND attribute_not_exists(#status) AND ${
            expected === null ? 'attribute_not_exists(#secrets)' : '#secrets.#current.#secret = :expected'
          }`,
          ExpressionAttributeNames: {
            '#status': 'status',
            '#secrets': 'callbackSecrets',
            ...(expected === null ? {} : { '#current': 'current', '#secret': 'secret' }),
          },
          ExpressionAttributeValues: { ':secrets': secrets, ...(expected === null ? {} : { ':expected': expected }) },
        }),
      );
      return true;
    });
    return stored === true;
  }

  async markDeleting(organizationId: string, agentId: string, startedAt: string): Promise<AgentRecord | undefined> {
    return unlessConditionFails(async () => {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { organizationId, agentId },
          UpdateExpression: 'SET #status = :deleting, deletion = :job, pendingKey = :deleting, updatedAt = :at',
          ConditionExpression: 'attribute_exists(agentId) AND attribute_not_exists(#status)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':deleting': DELETING,
            ':job': { startedAt, page: 0 },
            ':at': startedAt,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return agentOf(Attributes) as AgentRecord;
    });
  }

  advanceDeletion(organizationId: string, agentId: string, page: number, updatedAt: string): Promise<boolean> {
    return this.jobs.advance({ organizationId, agentId }, page, updatedAt);
  }

  async listDeleting(updatedBefore: string, limit: number): Promise<{ organizationId: string; agentId: string }[]> {
    return (await this.jobs.listStale(updatedBefore, limit)).map((item) => ({
      organizationId: String(item.organizationId),
      agentId: String(item.agentId),
    }));
  }

  removeDeleted(organizationId: string, agentId: string): Promise<boolean> {
    return this.jobs.remove({ organizationId, agentId });
  }

  async list(organizationId: string): Promise<AgentRecord[]> {
    const items = await collect(
      queryAll<Record<string, unknown>>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'organizationId = :o',
        ExpressionAttributeValues: { ':o': organizationId },
      }),
    );
    const agents = items.map((item) => agentOf(item) as AgentRecord).filter((agent) => agent.status !== 'deleting');
    return agents.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.agentId.localeCompare(b.agentId));
  }
}
