/**
 * DynamoDB stores of the flow runtime (key schemas: lib/tables.ts). Definitions and session state are stored as
 * JSON text: they hold caller-chosen keys (memory, variables, parameters) that DynamoDB maps would constrain.
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { AgentDefinition } from '#core/flows/definition';
import type { AgentDefinitionRecord } from '#core/flows/definition-record';
import type { FlowSession } from '#core/flows/session';
import type { Environment } from '#core/knowledge/fields';
import { type DefinitionStore, type SessionStore, SessionTooLargeError } from '#ports/flows';
import { unlessConditionFails } from './expressions';
import { collect, queryAll } from './queries';

const SCHEDULED = 'scheduled';
/** DynamoDB's item limit is 400 KB; session state is trimmed (oldest messages first) to stay under this. */
export const MAX_SESSION_STATE_BYTES = 350 * 1024;

interface DefinitionItem extends Omit<AgentDefinitionRecord, 'definition'> {
  readonly definition: string;
  readonly scheduleKey?: string;
  readonly agentKey?: string;
}

export class DynamoDefinitionStore implements DefinitionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(agentId: string, environment: Environment): Promise<AgentDefinitionRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: { agentId, environment }, ConsistentRead: true }),
    );
    return Item ? fromItem(Item as DefinitionItem) : undefined;
  }

  async put(record: AgentDefinitionRecord): Promise<void> {
    const item: DefinitionItem = {
      ...record,
      definition: JSON.stringify(record.definition),
      ...(record.hasSchedule ? { scheduleKey: SCHEDULED, agentKey: `${record.agentId}#${record.environment}` } : {}),
    };
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: item }));
  }

  async listScheduled(): Promise<AgentDefinitionRecord[]> {
    const items = await collect(
      queryAll<DefinitionItem>(this.client, {
        TableName: this.tableName,
        IndexName: 'scheduled',
        KeyConditionExpression: 'scheduleKey = :s',
        ExpressionAttributeValues: { ':s': SCHEDULED },
      }),
    );
    return items.map(fromItem);
  }
}

function fromItem(item: DefinitionItem): AgentDefinitionRecord {
  const { scheduleKey: _s, agentKey: _a, definition, ...rest } = item;
  return { ...rest, definition: JSON.parse(definition) as AgentDefinition };
}

type SessionState = Pick<FlowSession, 'memory' | 'messages' | 'outputs' | 'aiMessages'>;

interface SessionItem extends Omit<FlowSession, keyof SessionState> {
  readonly sessionKey: string;
  readonly state: string;
  readonly expiresAt: number;
}

export class DynamoSessionStore implements SessionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** Days an idle session is kept before TTL removes it. */
    private readonly retentionDays = 30,
  ) {}

  async get(agentId: string, environment: Environment, sessionId: string): Promise<FlowSession | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { sessionKey: `${agentId}#${environment}`, sessionId },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const { sessionKey: _k, state, expiresAt: _e, ...rest } = Item as SessionItem;
    return { ...rest, ...(JSON.parse(state) as SessionState) };
  }

  async create(session: FlowSession): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: this.toItem(session),
          ConditionExpression: 'attribute_not_exists(sessionId)',
        }),
      ),
    );
    return written !== undefined;
  }

  async save(session: FlowSession, expectedVersion: number): Promise<boolean> {
    const written = await unlessConditionFails(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: this.toItem(session),
          ConditionExpression: 'version = :expected',
          ExpressionAttributeValues: { ':expected': expectedVersion },
        }),
      ),
    );
    return written !== undefined;
  }

  private toItem(session: FlowSession): SessionItem {
    const { memory, messages, outputs, aiMessages, ...rest } = session;
    const state = fittedState({ memory, messages, outputs, aiMessages });
    const expiresAt = Math.floor(Date.parse(session.updatedAt) / 1000) + this.retentionDays * 86_400;
    return { ...rest, sessionKey: `${session.agentId}#${session.environment}`, state, expiresAt };
  }
}

/** The state as JSON, the oldest messages dropped while it is too large; memory and outputs are never cut. */
function fittedState(state: SessionState): string {
  let fitted = state;
  let text = JSON.stringify(fitted);
  while (Buffer.byteLength(text, 'utf8') > MAX_SESSION_STATE_BYTES) {
    if (fitted.messages.length === 0 && fitted.aiMessages.length === 0) {
      throw new SessionTooLargeError(MAX_SESSION_STATE_BYTES);
    }
    fitted = {
      ...fitted,
      messages: fitted.messages.slice(Math.max(1, Math.floor(fitted.messages.length / 4))),
      aiMessages: fitted.aiMessages.slice(Math.max(1, Math.floor(fitted.aiMessages.length / 4))),
    };
    text = JSON.stringify(fitted);
  }
  return text;
}
