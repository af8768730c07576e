/**
 * DynamoDB stores of the flow runtime (key schemas: lib/tables.ts). Definitions and session state are stored as
 * JSON text: they hold caller-chosen keys (memory, variables, parameters) that DynamoDB maps would constrain.
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import type { AgentDefinition } from '#core/flows/definition';
import type { AgentDefinitionRecord, DefinitionVersionSummary } from '#core/flows/definition-record';
import type { FlowSession, SessionStatus } from '#core/flows/session';
import type { Environment } from '#core/knowledge/fields';
import {
  type DefinitionStore,
  SESSION_LIST_SCAN,
  type SessionStore,
  type SessionSummary,
  SessionTooLargeError,
  sessionPosition,
} from '#ports/flows';
import { unlessConditionFails } from './expressions';
import { collect, deleteKeys, queryAll } from './queries';
import { transactUnlessFirstFails } from './transactions';

const SCHEDULED = 'scheduled';
/** DynamoDB's item limit is 400 KB; session state is trimmed (oldest messages first) to stay under this. */
export const MAX_SESSION_STATE_BYTES = 350 * 1024;

/**
 * A version of the history shares the table with the current definition: same partition (`agentId`), sort key
 * `<environment>#v#<version, 10 digits>`, so an environment's history is one key range, newest last, and the
 * current item (sort key `<environment>`) stays the one GetItem the runtime makes.
 */
const historyPrefix = (environment: Environment) => `${environment}#v#`;
const historyKey = (environment: Environment, version: number) =>
  `${historyPrefix(environment)}${String(version).padStart(10, '0')}`;

interface DefinitionItem extends Omit<AgentDefinitionRecord, 'definition'> {
  readonly definition: string;
  readonly scheduleKey?: string;
  readonly agentKey?: string;
}

/** A version of the history: the record whole (never in the `scheduled` index), and what the list shows of it. */
interface HistoryItem extends Omit<DefinitionItem, 'environment' | 'scheduleKey' | 'agentKey'> {
  readonly environment: string;
  readonly flowCount: number;
  readonly nodeCount: number;
}

/** What the version list reads of a history item (not the definition). */
const SUMMARY_ATTRIBUTES = ['version', 'updatedAt', 'updatedBy', 'restoredFrom', 'flowCount', 'nodeCount'];

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
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: currentItem(record) }));
  }

  async saveVersion(
    record: AgentDefinitionRecord,
    previous: AgentDefinitionRecord | undefined,
    forget?: number,
  ): Promise<boolean> {
    const { agentId, environment } = record;
    const current = {
      Put: {
        TableName: this.tableName,
        Item: currentItem(record),
        ...(previous
          ? { ConditionExpression: 'version = :previous', ExpressionAttributeValues: { ':previous': previous.version } }
          : { ConditionExpression: 'attribute_not_exists(agentId)' }),
      },
    };
    const kept = previous ? [{ Put: { TableName: this.tableName, Item: historyItem(previous) } }] : [];
    const forgotten =
      forget === undefined
        ? []
        : [{ Delete: { TableName: this.tableName, Key: { agentId, environment: historyKey(environment, forget) } } }];
    return transactUnlessFirstFails(this.client, [current, ...kept, ...forgotten]);
  }

  async getVersion(
    agentId: string,
    environment: Environment,
    version: number,
  ): Promise<AgentDefinitionRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { agentId, environment: historyKey(environment, version) },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const { flowCount: _f, nodeCount: _n, ...rest } = Item as HistoryItem;
    return fromItem({ ...rest, environment });
  }

  async listVersions(
    agentId: string,
    environment: Environment,
    page: { readonly limit: number; readonly before: number },
  ): Promise<{ versions: DefinitionVersionSummary[]; more: boolean }> {
    if (page.before <= 1) return { versions: [], more: false };
    const versions: DefinitionVersionSummary[] = [];
    // One more than the page, to tell whether older versions follow. A Query reads at most 1 MB before it projects,
    // and a version may weigh 300 KB: the pages are read until the list has enough.
    const items = queryAll<
      Pick<HistoryItem, 'version' | 'updatedAt' | 'updatedBy' | 'restoredFrom' | 'flowCount' | 'nodeCount'>
    >(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'agentId = :agentId AND environment BETWEEN :first AND :last',
      ExpressionAttributeValues: {
        ':agentId': agentId,
        ':first': historyKey(environment, 1),
        ':last': historyKey(environment, page.before - 1),
      },
      ExpressionAttributeNames: Object.fromEntries(SUMMARY_ATTRIBUTES.map((name) => [`#${name}`, name])),
      ProjectionExpression: SUMMARY_ATTRIBUTES.map((name) => `#${name}`).join(', '),
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: page.limit + 1,
    });
    for await (const item of items) {
      if (versions.length === page.limit) return { versions, more: true };
      versions.push({
        version: item.version,
        updatedAt: item.updatedAt,
        updatedBy: item.updatedBy ?? null,
        restoredFrom: item.restoredFrom ?? null,
        flowCount: item.flowCount,
        nodeCount: item.nodeCount,
      });
    }
    return { versions, more: false };
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

  async delete(agentId: string, environment: Environment): Promise<void> {
    // The history first: a deletion cut off between the two leaves the current item, and is run again.
    const history = await collect(
      queryAll<{ environment: string }>(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'agentId = :agentId AND begins_with(environment, :prefix)',
        ExpressionAttributeValues: { ':agentId': agentId, ':prefix': historyPrefix(environment) },
        ProjectionExpression: 'environment',
      }),
    );
    await deleteKeys(
      this.client,
      this.tableName,
      history.map((item) => ({ agentId, environment: item.environment })),
    );
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: { agentId, environment } }));
  }
}

function currentItem(record: AgentDefinitionRecord): DefinitionItem {
  return {
    ...record,
    definition: JSON.stringify(record.definition),
    ...(record.hasSchedule ? { scheduleKey: SCHEDULED, agentKey: `${record.agentId}#${record.environment}` } : {}),
  };
}

function historyItem(record: AgentDefinitionRecord): HistoryItem {
  const { flows } = record.definition;
  return {
    ...record,
    environment: historyKey(record.environment, record.version),
    definition: JSON.stringify(record.definition),
    flowCount: flows.length,
    nodeCount: flows.reduce((count, flow) => count + flow.nodes.length, 0),
  };
}

function fromItem(item: DefinitionItem): AgentDefinitionRecord {
  const { scheduleKey: _s, agentKey: _a, definition, ...rest } = item;
  return { ...rest, definition: JSON.parse(definition) as AgentDefinition };
}

type SessionState = Pick<FlowSession, 'memory' | 'messages' | 'outputs' | 'aiMessages'>;

interface SessionItem extends Omit<FlowSession, keyof SessionState> {
  readonly sessionKey: string;
  readonly createdKey: string;
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

  async deleteSome(agentId: string, environment: Environment, limit: number): Promise<number> {
    const sessionKey = `${agentId}#${environment}`;
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'sessionKey = :k',
        ExpressionAttributeValues: { ':k': sessionKey },
        ProjectionExpression: 'sessionId',
        Limit: limit,
      }),
    );
    await deleteKeys(
      this.client,
      this.tableName,
      Items.map((item) => ({ sessionKey, sessionId: item.sessionId })),
    );
    return Items.length;
  }

  async get(agentId: string, environment: Environment, sessionId: string): Promise<FlowSession | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { sessionKey: `${agentId}#${environment}`, sessionId },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    const { sessionKey: _k, createdKey: _c, state, expiresAt: _e, ...rest } = Item as SessionItem;
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
    const sessionKey = `${session.agentId}#${session.environment}`;
    return { ...rest, sessionKey, createdKey: sessionPosition(session), state, expiresAt };
  }

  async list(
    agentId: string,
    environment: Environment,
    options: { readonly limit: number; readonly status?: SessionStatus; readonly before?: string },
  ): Promise<{ sessions: SessionSummary[]; next: string | null }> {
    const sessions: SessionSummary[] = [];
    let read = 0;
    let startKey: Record<string, unknown> | undefined;
    const values: Record<string, unknown> = { ':k': `${agentId}#${environment}` };
    if (options.before !== undefined) values[':before'] = options.before;
    for (;;) {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: SESSIONS_BY_CREATION,
          KeyConditionExpression:
            options.before === undefined ? 'sessionKey = :k' : 'sessionKey = :k AND createdKey < :before',
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: Math.min(SESSION_LIST_PAGE, SESSION_LIST_SCAN - read),
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      const items = (page.Items ?? []) as SessionItem[];
      for (let i = 0; i < items.length; i++) {
        read++;
        const item = items[i];
        // The status is filtered here, not by a FilterExpression: a read stops at exactly `limit` matches.
        if (options.status !== undefined && item.status !== options.status) continue;
        sessions.push(summaryOf(item));
        if (sessions.length === options.limit) {
          const more = i < items.length - 1 || page.LastEvaluatedKey !== undefined;
          return { sessions, next: more ? item.createdKey : null };
        }
      }
      startKey = page.LastEvaluatedKey;
      if (!startKey) return { sessions, next: null };
      // Read as much as a call may: go on from the last session read, whatever its status.
      if (read >= SESSION_LIST_SCAN) return { sessions, next: String(startKey.createdKey) };
    }
  }
}

const SESSIONS_BY_CREATION = 'byCreation';
/** Sessions a query of the list reads at once. */
const SESSION_LIST_PAGE = 200;

function summaryOf(item: SessionItem): SessionSummary {
  const { sessionId, status, flowName, currentNode, trigger, createdAt, updatedAt } = item;
  return { sessionId, status, flowName, currentNode, trigger, createdAt, updatedAt };
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
