/**
 * The offset marks of one process shared with the others (docs/analytics.md, "Shared between processes"): one item
 * per index partition, so that a new container resumes from the marks another one counted instead of counting the
 * settled past again. Only the query's function uses it (composition/analytics-query.ts).
 *
 * - In the functions' small shared-state table, `rateLimits` (lib/tables.ts), beside the rate limit counters and the
 *   schedule tick's items: every route may already UpdateItem it, so the query function needs only GetItem more, and
 *   no write on the analytics table, whose events it only reads.
 * - Key `key` = `analytics-marks#<index>#<partition value>`, which no counter key can be.
 * - Its marks are one JSON text, `[[rank, position, pk], …]`: the index key of a mark is the partition's, so it is
 *   stored once (in the key) and each mark's ExclusiveStartKey is rebuilt from it. At most MAX_MARKS_BYTES: a larger
 *   chain keeps every other mark (and its last) until it fits, which is still exact (fewer marks, more counting).
 * - `v`, a version: a write replaces the item only at the version its chain was read from (or when there was none),
 *   so a process never writes over marks it has not seen; it reads and merges them, then writes (OffsetIndex).
 * - `expiresAt` = the chain's `validUntil`: the table's TTL removes it after readers stopped using it.
 * - Anything that is not exactly such an item (another format, another partition, a rank out of order, a key that
 *   does not parse) is ignored as if there were none: a mark can only ever save counting, never fail a query.
 */
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Chain, Mark, SharedMarks } from './analytics-offsets';
import { INDEXES } from './analytics-store';
import { isConditionFailure } from './expressions';

/** The marks' JSON text at most: 16 KiB is 2 read units (eventually consistent) and 16 write units. */
export const MAX_MARKS_BYTES = 16 * 1024;
/** DynamoDB's limit on a partition key value. */
const MAX_KEY_BYTES = 2048;
const KIND = 'offsetMarks';
const ROOT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/;
const POSITION = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z#\d{16}$/;

type Item = Record<string, unknown>;

export function marksKey(partition: string): string {
  return `analytics-marks#${partition}`;
}

/** The index key attribute and value of a partition named `<indexName>#<value>` (analytics-store.ts). */
function indexKeyOf(partition: string): { name: string; value: string } | undefined {
  const at = partition.indexOf('#');
  const index = Object.values(INDEXES).find((candidate) => candidate.indexName === partition.slice(0, at));
  return at > 0 && index ? { name: index.key, value: partition.slice(at + 1) } : undefined;
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The chain of a stored item, or undefined for anything that is not exactly one of this partition. */
export function chainOf(item: Item, partition: string): Chain | undefined {
  const indexKey = indexKeyOf(partition);
  const { root, validUntil, total, frozen, marks: text } = item;
  if (!indexKey || item.kind !== KIND || item.partition !== partition) return undefined;
  if (typeof root !== 'string' || !ROOT.test(root) || !isCount(validUntil)) return undefined;
  if ((total !== undefined && !isCount(total)) || (frozen !== undefined && typeof frozen !== 'boolean'))
    return undefined;
  if (typeof text !== 'string' || text.length > MAX_MARKS_BYTES) return undefined;
  let rows: unknown;
  try {
    rows = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(rows)) return undefined;
  const marks: Mark[] = [];
  for (const row of rows) {
    if (!Array.isArray(row) || row.length !== 3) return undefined;
    const [rank, position, pk] = row as unknown[];
    const previous = marks[marks.length - 1];
    if (!isCount(rank) || rank === 0 || (previous && rank <= previous.rank)) return undefined;
    if (typeof position !== 'string' || !POSITION.test(position) || position >= (previous?.position ?? root)) {
      return undefined;
    }
    if (typeof pk !== 'string' || !pk.startsWith('event#')) return undefined;
    marks.push({ key: { pk, [indexKey.name]: indexKey.value, position }, position, rank });
  }
  if (total !== undefined && total < (marks[marks.length - 1]?.rank ?? 0)) return undefined;
  return { root, marks, validUntil, ...(total === undefined ? {} : { total }), ...(frozen ? { frozen } : {}) };
}

/** The marks' JSON text, every other mark dropped (the last kept) until it fits MAX_MARKS_BYTES. */
export function marksText(chain: Chain, partition: string): string {
  const indexKey = indexKeyOf(partition);
  if (!indexKey) throw new Error(`analytics marks: ${partition} is not an index partition`);
  let rows = chain.marks.map((mark) => {
    const { pk, position, ...rest } = mark.key;
    if (typeof pk !== 'string' || position !== mark.position || Object.keys(rest).length !== 1) {
      throw new Error('analytics marks: a mark whose key is not an index entry of the partition');
    }
    if (rest[indexKey.name] !== indexKey.value) throw new Error('analytics marks: a mark of another partition');
    return [mark.rank, mark.position, pk] as const;
  });
  for (;;) {
    const text = JSON.stringify(rows);
    if (Buffer.byteLength(text) <= MAX_MARKS_BYTES) return text;
    rows = rows.filter((_, i) => i % 2 === 1 || i === rows.length - 1);
  }
}

export class TableMarks implements SharedMarks {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    /** The rateLimits table (lib/tables.ts). */
    private readonly tableName: string,
  ) {}

  /**
   * One GetItem, eventually consistent: every version of the item describes the settled past, which no longer
   * changes, so an older version is a chain as exact as the newest, only shorter or from an older root.
   */
  async read(partition: string): Promise<{ chain?: Chain; version?: number }> {
    const key = marksKey(partition);
    if (Buffer.byteLength(key) > MAX_KEY_BYTES) return {};
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: { key } }));
    if (!Item) return {};
    const version = isCount(Item.v) && Item.v > 0 ? Item.v : undefined;
    return { chain: version === undefined ? undefined : chainOf(Item, partition), version };
  }

  /**
   * One conditional UpdateItem: only over the version the chain includes (or over no valid item). It sets every
   * attribute a chain has and removes the optional ones this chain lacks, so what it leaves is exactly this chain.
   */
  async write(partition: string, chain: Chain, version: number | undefined): Promise<number | 'conflict'> {
    const key = marksKey(partition);
    if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new Error('analytics marks: partition key too long');
    const next = (version ?? 0) + 1;
    const fields: Record<string, unknown> = {
      kind: KIND,
      partition,
      v: next,
      root: chain.root,
      validUntil: chain.validUntil,
      expiresAt: chain.validUntil,
      marks: marksText(chain, partition),
      ...(chain.total === undefined ? {} : { total: chain.total }),
      ...(chain.frozen ? { frozen: true } : {}),
    };
    const absent = ['total', 'frozen'].filter((name) => !(name in fields));
    const names = Object.keys(fields);
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { key },
          UpdateExpression:
            `SET ${names.map((_, i) => `#f${i} = :f${i}`).join(', ')}` +
            (absent.length > 0 ? ` REMOVE ${absent.map((_, i) => `#r${i}`).join(', ')}` : ''),
          ConditionExpression:
            version === undefined ? 'attribute_not_exists(#v) OR NOT attribute_type(#v, :number)' : '#v = :v',
          ExpressionAttributeNames: {
            '#v': 'v',
            ...Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
            ...Object.fromEntries(absent.map((name, i) => [`#r${i}`, name])),
          },
          ExpressionAttributeValues: {
            ...Object.fromEntries(names.map((name, i) => [`:f${i}`, fields[name]])),
            ...(version === undefined ? { ':number': 'N' } : { ':v': version }),
          },
        }),
      );
      return next;
    } catch (error) {
      if (isConditionFailure(error)) return 'conflict';
      throw error;
    }
  }
}
