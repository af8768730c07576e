/**
 * `npm run restore-table -- --from <restored table> --to <live table> [--overwrite] [--key k=v …]`: step 3 of the
 * restore procedure (docs/operations.md, "Restore a table"). A point-in-time restore (or an AWS Backup restore)
 * makes a new table; this copies its items back into the table the stack uses, page by page (Scan, 1 MB a page).
 *
 * By default an item is written only where the live table has none under its key (PutItem with
 * `attribute_not_exists`): what the service wrote since the moment restored is never replaced by an older copy. With
 * `--overwrite` the restored item replaces the live one. `--key name=value` (repeatable) copies only the items whose
 * attribute has that value (one tenant's `tenantKey`, one agent's `agentId`). Both tables must have the same key
 * schema (the restore of a table of lib/tables.ts has). It prints how many items were read, written and left alone.
 * The SDK's own settings choose the account and Region (AWS_PROFILE, AWS_REGION; AWS_ENDPOINT_URL_DYNAMODB for the
 * local engines).
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';

export interface RestoreOptions {
  readonly from: string;
  readonly to: string;
  readonly overwrite?: boolean;
  /** Only items whose attribute `name` equals `value`, for each pair. */
  readonly where?: Readonly<Record<string, string>>;
}

export interface RestoreReport {
  readonly read: number;
  readonly written: number;
  /** Items the live table already had (never replaced without --overwrite). */
  readonly kept: number;
}

async function keySchema(client: DynamoDBClient, table: string): Promise<string[]> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  return (Table?.KeySchema ?? []).map((key) => key.AttributeName as string).sort();
}

export async function restoreTable(client: DynamoDBClient, options: RestoreOptions): Promise<RestoreReport> {
  const [fromKeys, toKeys] = await Promise.all([keySchema(client, options.from), keySchema(client, options.to)]);
  if (fromKeys.join() !== toKeys.join()) {
    throw new Error(`${options.from} is keyed by ${fromKeys.join(', ')} and ${options.to} by ${toKeys.join(', ')}`);
  }
  const documents = DynamoDBDocumentClient.from(client);
  const where = Object.entries(options.where ?? {});
  const names = Object.fromEntries(where.map(([name], i) => [`#w${i}`, name]));
  const values = Object.fromEntries(where.map(([, value], i) => [`:w${i}`, value]));
  const condition = toKeys.map((_, i) => `attribute_not_exists(#k${i})`).join(' AND ');
  const keyNames = Object.fromEntries(toKeys.map((name, i) => [`#k${i}`, name]));
  let read = 0;
  let written = 0;
  let kept = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new ScanCommand({
        TableName: options.from,
        ExclusiveStartKey: start,
        ConsistentRead: true,
        ...(where.length > 0
          ? {
              FilterExpression: where.map((_, i) => `#w${i} = :w${i}`).join(' AND '),
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
            }
          : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      read += 1;
      try {
        await documents.send(
          new PutCommand({
            TableName: options.to,
            Item: item,
            ...(options.overwrite ? {} : { ConditionExpression: condition, ExpressionAttributeNames: keyNames }),
          }),
        );
        written += 1;
      } catch (error) {
        if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
        kept += 1;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { read, written, kept };
}

function parse(argv: readonly string[]): RestoreOptions | undefined {
  let from: string | undefined;
  let to: string | undefined;
  let overwrite = false;
  const where: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--from') from = argv[++i];
    else if (arg === '--to') to = argv[++i];
    else if (arg === '--overwrite') overwrite = true;
    else if (arg === '--key') {
      const pair = argv[++i] ?? '';
      const at = pair.indexOf('=');
      if (at < 1) return undefined;
      where[pair.slice(0, at)] = pair.slice(at + 1);
    } else return undefined;
  }
  if (!from || !to || from === to) return undefined;
  return { from, to, overwrite, where };
}

async function main(argv: string[]): Promise<number> {
  const options = parse(argv);
  if (!options) {
    console.error(
      'usage: npm run restore-table -- --from <restored table> --to <live table> [--overwrite] [--key k=v]',
    );
    return 2;
  }
  const client = new DynamoDBClient({});
  try {
    const report = await restoreTable(client, options);
    console.log(
      `${options.from} → ${options.to}: ${report.read} items read, ${report.written} written, ` +
        `${report.kept} already in ${options.to} and left as they are${options.overwrite ? '' : ' (--overwrite replaces them)'}`,
    );
    return 0;
  } catch (error) {
    console.error(`restore-table: ${(error as Error).message}`);
    return 1;
  } finally {
    client.destroy();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
