/**
 * Analytics events in DynamoDB: the AnalyticsSink (batched, idempotent writes) and the reader of
 * POST /api/v1/events/agent. Key schema: the `analytics` entry of lib/tables.ts; the design: docs/analytics.md.
 *
 * - One item per (agentId, eventKey): `pk` = `event#<agentId>#<eventKey>`. A retried write lands on the same item.
 * - Ids come from one counter item per agent (`counter#<agentId>`), one atomic `ADD` per batch that reserves a block
 *   of ids and stamps the batch's created_at; its condition keeps created_at from going back as ids grow, so
 *   newest-first by time is newest-first by id and a date range is a range of `position`.
 * - Each filter combination has its own index, partitioned by `<agentId>#<environment>[#<sessionId>][#<eventName>]`
 *   and sorted by `position` = `<created_at>#<id, 16 digits>`; the indexes hold keys only, records are read from the
 *   table once the page is known.
 */
import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { AnalyticsEventRecord, EventPosition, NewAnalyticsEvent } from '#core/analytics/event';
import { expiresAtEpochSeconds } from '#core/analytics/retention';
import type { Environment } from '#core/knowledge/fields';
import type { AnalyticsEventPage, AnalyticsEventQuery, AnalyticsStore, WriteOutcome } from '#ports/analytics';
import type { Clock } from '#ports/services';
import { type OffsetSkipper, WRITE_WINDOW_MS } from './analytics-offsets';
import { isConditionFailure } from './expressions';

/** Index names and their partition key attributes, as declared in lib/tables.ts. */
export const INDEXES = {
  environment: { indexName: 'byEnvironment', key: 'environmentKey' },
  session: { indexName: 'bySession', key: 'sessionKey' },
  eventName: { indexName: 'byEventName', key: 'eventNameKey' },
  sessionAndEventName: { indexName: 'bySessionAndEventName', key: 'sessionEventNameKey' },
} as const;

const ID_DIGITS = 16;
const LOWEST_ID = '0'.repeat(ID_DIGITS);
const HIGHEST_ID = '9'.repeat(ID_DIGITS);
/** created_at stays in the fixed-width `0000`–`9999` years, so positions compare as strings. */
const EARLIEST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');
const BATCH_WRITE_ITEMS = 25;
const BATCH_GET_KEYS = 100;
const RECORD_ATTRIBUTES = ['id', 'agentId', 'sessionId', 'environment', 'eventName', 'payload', 'created_at'] as const;

export interface AnalyticsStoreOptions {
  readonly clock: Clock;
  /** Days an event is kept: its `expiresAt` (the table's TTL attribute) is created_at + this. */
  readonly retentionDays: number;
  /** Calls per BatchWriteItem/BatchGetItem while some items stay unprocessed. Default 8. */
  readonly maxAttempts?: number;
  /** Batch calls in flight at once per write or read. Default 4. */
  readonly concurrency?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * What skips an offset: an OffsetIndex (analytics-offsets.ts: marks kept as long as it is). Only the query's
   * function asks for an offset (composition/analytics-query.ts hands it one); without it only offset 0 is served,
   * which keeps the marks' code out of the functions that only record events or read a session's trace.
   */
  readonly offsets?: OffsetSkipper;
}

type Item = Record<string, unknown>;

/** Key parts are URI-encoded, so a `#` inside a session id or event name cannot shift a key. */
const part = (value: string) => encodeURIComponent(value);

export function eventPk(agentId: string, eventKey: string): string {
  return `event#${agentId}#${eventKey}`;
}

function counterPk(agentId: string): string {
  return `counter#${agentId}`;
}

export function position(createdAt: string, id: number): string {
  return `${createdAt}#${String(id).padStart(ID_DIGITS, '0')}`;
}

function parsePosition(value: string): EventPosition {
  const at = value.lastIndexOf('#');
  return { createdAt: value.slice(0, at), id: Number(value.slice(at + 1)) };
}

function isoAt(ms: number): string {
  return new Date(Math.min(LATEST_MS, Math.max(EARLIEST_MS, ms))).toISOString();
}

function indexKeys(agentId: string, environment: Environment, sessionId: string, eventName: string) {
  const base = `${agentId}#${environment}`;
  return {
    [INDEXES.environment.key]: base,
    [INDEXES.session.key]: `${base}#${part(sessionId)}`,
    [INDEXES.eventName.key]: `${base}#${part(eventName)}`,
    [INDEXES.sessionAndEventName.key]: `${base}#${part(sessionId)}#${part(eventName)}`,
  };
}

/** The index and partition that answer a query: exactly one for each combination of filters. */
function indexFor(query: AnalyticsEventQuery): { indexName: string; key: string; value: string } {
  const keys = indexKeys(query.agentId, query.environment, query.sessionId ?? '', query.eventName ?? '');
  const index =
    query.sessionId !== undefined && query.eventName !== undefined
      ? INDEXES.sessionAndEventName
      : query.sessionId !== undefined
        ? INDEXES.session
        : query.eventName !== undefined
          ? INDEXES.eventName
          : INDEXES.environment;
  return { indexName: index.indexName, key: index.key, value: keys[index.key] };
}

/** The `position` range of a query: inclusive bounds from the dates, the upper one lowered to just below a cursor. */
function positionRange(query: AnalyticsEventQuery): { lower?: string; upper?: string } | 'empty' {
  const lower = query.fromMs === undefined ? undefined : `${isoAt(query.fromMs)}#${LOWEST_ID}`;
  let upper = query.toMs === undefined ? undefined : `${isoAt(query.toMs)}#${HIGHEST_ID}`;
  if (query.before) {
    // Positions are unique and fixed-width: the largest one below the cursor's is its created_at with id - 1.
    const belowCursor = position(query.before.createdAt, query.before.id - 1);
    if (upper === undefined || belowCursor < upper) upper = belowCursor;
  }
  if (lower !== undefined && upper !== undefined && lower > upper) return 'empty';
  return { lower, upper };
}

/**
 * The Query of one index partition within inclusive `position` bounds, newest first; TTL deletes within days of
 * expiry, not at once, so an expired event (expiresAt at or before `liveAfter`, epoch seconds) is filtered out.
 */
function keyQuery(
  tableName: string,
  index: { indexName: string; key: string; value: string },
  range: { lower?: string; upper?: string },
  liveAfter: number,
) {
  const values: Record<string, unknown> = { ':partition': index.value, ':now': liveAfter };
  const names: Record<string, string> = { '#partition': index.key };
  let condition = '#partition = :partition';
  if (range.lower !== undefined || range.upper !== undefined) names['#position'] = 'position';
  if (range.lower !== undefined && range.upper !== undefined) {
    condition += ' AND #position BETWEEN :lower AND :upper';
    values[':lower'] = range.lower;
    values[':upper'] = range.upper;
  } else if (range.upper !== undefined) {
    condition += ' AND #position <= :upper';
    values[':upper'] = range.upper;
  } else if (range.lower !== undefined) {
    condition += ' AND #position >= :lower';
    values[':lower'] = range.lower;
  }
  return {
    TableName: tableName,
    IndexName: index.indexName,
    KeyConditionExpression: condition,
    FilterExpression: 'expiresAt > :now',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ScanIndexForward: false,
  };
}

/** The skipper of a store that was given none: offset 0 only (see AnalyticsStoreOptions.offsets). */
const firstPageOnly: OffsetSkipper = {
  skip: async (_partition, _range, offset) => {
    if (offset === 0) return {};
    throw new Error('analytics: an offset needs an OffsetIndex');
  },
};

async function inParallel<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await run(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class DynamoAnalyticsStore implements AnalyticsStore {
  private readonly maxAttempts: number;
  private readonly concurrency: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly offsets: OffsetSkipper;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: AnalyticsStoreOptions,
  ) {
    this.maxAttempts = options.maxAttempts ?? 8;
    this.concurrency = options.concurrency ?? 4;
    this.sleep = options.sleep ?? defaultSleep;
    this.offsets = options.offsets ?? firstPageOnly;
  }

  /**
   * Primary course: drop repeats of a key within the batch and keys already stored (a retry), reserve one block of
   * ids per agent, then put the items with BatchWriteItem, retrying what DynamoDB leaves unprocessed.
   */
  async write(events: readonly NewAnalyticsEvent[]): Promise<WriteOutcome> {
    const unique = new Map<string, NewAnalyticsEvent>();
    for (const event of events) {
      const pk = eventPk(event.agentId, event.eventKey);
      if (!unique.has(pk)) unique.set(pk, event);
    }
    const stored = await this.existingKeys([...unique.keys()]);
    const fresh = [...unique].filter(([pk]) => !stored.has(pk)).map(([, event]) => event);

    const byAgent = new Map<string, NewAnalyticsEvent[]>();
    for (const event of fresh) {
      const agentEvents = byAgent.get(event.agentId);
      if (agentEvents) agentEvents.push(event);
      else byAgent.set(event.agentId, [event]);
    }
    const items: Item[] = [];
    for (const [agentId, agentEvents] of byAgent) {
      const { lastId, createdAt } = await this.reserveIds(agentId, agentEvents.length);
      const firstId = lastId - agentEvents.length + 1;
      agentEvents.forEach((event, index) => {
        items.push(this.item(event, firstId + index, createdAt));
      });
    }
    await inParallel(chunks(items, BATCH_WRITE_ITEMS), this.concurrency, (chunk) => this.putBatch(chunk));
    return { written: items.length, alreadyStored: events.length - items.length };
  }

  private item(event: NewAnalyticsEvent, id: number, createdAt: string): Item {
    return {
      pk: eventPk(event.agentId, event.eventKey),
      eventKey: event.eventKey,
      id,
      agentId: event.agentId,
      sessionId: event.sessionId,
      environment: event.environment,
      eventName: event.eventName,
      // Stored as JSON text: what is returned is exactly what was recorded (no DynamoDB type or nesting limits).
      payload: JSON.stringify(event.payload),
      created_at: createdAt,
      expiresAt: expiresAtEpochSeconds(Date.parse(createdAt), this.options.retentionDays),
      position: position(createdAt, id),
      ...indexKeys(event.agentId, event.environment, event.sessionId, event.eventName),
    };
  }

  /**
   * Adds `count` to the agent's counter and stamps the batch with the current time, unless another writer already
   * stamped a later time (its clock is ahead): then the batch takes that time, so created_at never decreases as
   * ids increase. Returns the last id of the reserved block.
   */
  private async reserveIds(agentId: string, count: number): Promise<{ lastId: number; createdAt: string }> {
    let createdAt = this.options.clock.now().toISOString();
    for (let attempt = 1; ; attempt += 1) {
      try {
        const { Attributes } = await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: counterPk(agentId) },
            UpdateExpression: 'SET lastAt = :at ADD lastId :count',
            ConditionExpression: 'attribute_not_exists(lastAt) OR lastAt <= :at',
            ExpressionAttributeValues: { ':at': createdAt, ':count': count },
            ReturnValues: 'UPDATED_NEW',
          }),
        );
        return { lastId: Number(Attributes?.lastId), createdAt };
      } catch (error) {
        if (!isConditionFailure(error) || attempt >= this.maxAttempts) throw error;
        const { Item } = await this.client.send(
          new GetCommand({ TableName: this.tableName, Key: { pk: counterPk(agentId) }, ConsistentRead: true }),
        );
        // ISO strings of one fixed width: the later time is the greater string.
        if (typeof Item?.lastAt === 'string' && Item.lastAt > createdAt) createdAt = Item.lastAt;
      }
    }
  }

  /**
   * Puts the items, retrying the unprocessed ones, as long as their id reservation is younger than WRITE_WINDOW_MS:
   * an older one fails the write (the caller's retry stores what is missing under fresh ids), so no event appears
   * with a created_at older than that, which is what lets a reader count the settled past once (analytics-offsets).
   */
  private async putBatch(items: readonly Item[]): Promise<void> {
    let requests = items.map((Item) => ({ PutRequest: { Item } }));
    const reservedAt = Math.min(...items.map((item) => Date.parse(item.created_at as string)));
    for (let attempt = 1; ; attempt += 1) {
      if (this.options.clock.now().getTime() - reservedAt > WRITE_WINDOW_MS) {
        throw new Error(
          `analytics: ${requests.length} events not stored within ${WRITE_WINDOW_MS / 1000} s of their id ` +
            'reservation; a retry of the batch stores them under new ids',
        );
      }
      const { UnprocessedItems } = await this.client.send(
        new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } }),
      );
      requests = (UnprocessedItems?.[this.tableName] ?? []) as typeof requests;
      if (requests.length === 0) return;
      if (attempt >= this.maxAttempts) {
        throw new Error(`analytics: ${requests.length} events still unprocessed after ${attempt} BatchWriteItem calls`);
      }
      await this.sleep(backoffMs(attempt));
    }
  }

  /** The given primary keys that exist, read in BatchGetItem calls of 100. */
  private async existingKeys(pks: readonly string[]): Promise<Set<string>> {
    const found = await this.getItems(pks, ['pk']);
    return new Set(found.keys());
  }

  private async getItems(pks: readonly string[], attributes: readonly string[]): Promise<Map<string, Item>> {
    const wanted = [...new Set(['pk', ...attributes])];
    const names = Object.fromEntries(wanted.map((name, i) => [`#a${i}`, name]));
    const projection = Object.keys(names).join(', ');
    const found = new Map<string, Item>();
    await inParallel(chunks(pks, BATCH_GET_KEYS), this.concurrency, async (chunk) => {
      let keys: Item[] = chunk.map((pk) => ({ pk }));
      for (let attempt = 1; ; attempt += 1) {
        const { Responses, UnprocessedKeys } = await this.client.send(
          new BatchGetCommand({
            RequestItems: {
              [this.tableName]: { Keys: keys, ProjectionExpression: projection, ExpressionAttributeNames: names },
            },
          }),
        );
        for (const item of Responses?.[this.tableName] ?? []) found.set(item.pk as string, item);
        keys = UnprocessedKeys?.[this.tableName]?.Keys ?? [];
        if (keys.length === 0) return;
        if (attempt >= this.maxAttempts) {
          throw new Error(`analytics: ${keys.length} keys still unprocessed after ${attempt} BatchGetItem calls`);
        }
        await this.sleep(backoffMs(attempt));
      }
    });
    return found;
  }

  /**
   * Primary course: walk the one index of the filters backwards (newest first) within the position range, reading
   * keys only; count past the first `offset` entries without reading them, keep `limit`, read one more to know
   * whether a next page exists; then fetch those records from the table.
   */
  async query(query: AnalyticsEventQuery): Promise<AnalyticsEventPage> {
    const range = positionRange(query);
    if (range === 'empty') return { events: [] };
    const index = indexFor(query);
    const pageQuery = (bounds: { lower?: string; upper?: string }, liveAfter: number) =>
      keyQuery(this.tableName, index, bounds, liveAfter);
    const nowSeconds = Math.floor(query.now.getTime() / 1000);
    const base = pageQuery(range, nowSeconds);
    // Skip `offset` entries: counted (Select COUNT: the engine returns no items), from marks of the settled part of
    // the partition once an offset was counted there (analytics-offsets.ts).
    const skipped = await this.offsets.skip(
      `${index.indexName}#${index.value}`,
      range,
      query.offset,
      query.now,
      async (request) => {
        const counted = await this.client.send(
          new QueryCommand({
            ...pageQuery(request, request.liveAfter),
            Select: 'COUNT',
            Limit: request.limit,
            ExclusiveStartKey: request.startKey,
          }),
        );
        return { count: counted.Count ?? 0, scanned: counted.ScannedCount ?? 0, lastKey: counted.LastEvaluatedKey };
      },
    );
    if (skipped === 'end') return { events: [] };
    let startKey = skipped.startKey;
    const wanted = query.limit + 1;
    const page: Item[] = [];
    do {
      const result = await this.client.send(
        new QueryCommand({ ...base, Limit: wanted - page.length, ExclusiveStartKey: startKey }),
      );
      for (const item of result.Items ?? []) {
        page.push(item);
        if (page.length >= wanted) break;
      }
      startKey = result.LastEvaluatedKey;
    } while (page.length < wanted && startKey);

    const keys = page.slice(0, query.limit);
    const records = await this.getItems(
      keys.map((key) => key.pk as string),
      RECORD_ATTRIBUTES,
    );
    const events: AnalyticsEventRecord[] = [];
    for (const key of keys) {
      const item = records.get(key.pk as string);
      // Gone between the index read and the get (TTL): the page is one shorter, never wrong.
      if (item) events.push(toRecord(item));
    }
    const more = page.length > query.limit;
    return more ? { events, next: parsePosition(keys[keys.length - 1].position as string) } : { events };
  }
}

function toRecord(item: Item): AnalyticsEventRecord {
  return {
    id: Number(item.id),
    agentId: item.agentId as string,
    sessionId: item.sessionId as string,
    environment: item.environment as Environment,
    eventName: item.eventName as string,
    payload: JSON.parse(item.payload as string) as Record<string, unknown>,
    created_at: item.created_at as string,
  };
}

/** 50 ms doubling to at most 2 s, with full jitter so retrying writers spread out. */
function backoffMs(attempt: number): number {
  return Math.random() * Math.min(2000, 50 * 2 ** attempt);
}
