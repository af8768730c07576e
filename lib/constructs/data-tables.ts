/** One DynamoDB table per entry of lib/tables.ts, so the cloud and the local runtime share one key schema. */
import { RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import type { TableName } from '../routes';
import { type IndexSchema, TABLES, type TableSchema } from '../tables';

/** `knowledgeBases` → `KnowledgeBases`: construct ids and output names are PascalCase. */
export function pascalCase(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

export class DataTables extends Construct {
  public readonly tables: Readonly<Record<TableName, ITable>>;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const tables: Partial<Record<TableName, ITable>> = {};
    for (const [name, schema] of Object.entries(TABLES) as [TableName, TableSchema][]) {
      tables[name] = this.createTable(name, schema);
    }
    this.tables = tables as Record<TableName, ITable>;
  }

  private createTable(name: TableName, schema: TableSchema): Table {
    return createTable(this, `${pascalCase(name)}Table`, schema);
  }
}

/** A table of lib/tables.ts with the settings every table of the app shares. */
export function createTable(scope: Construct, id: string, schema: TableSchema): Table {
  const table = new Table(scope, id, {
    partitionKey: { name: schema.partitionKey, type: AttributeType.STRING },
    sortKey: schema.sortKey ? { name: schema.sortKey, type: attributeType(schema.sortKeyType) } : undefined,
    timeToLiveAttribute: schema.timeToLiveAttribute,
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: TableEncryption.AWS_MANAGED,
    // Customer data: deleting the stack must never delete it, nor may a console click or a stray API call.
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: true,
  });
  for (const index of schema.indexes ?? []) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: { name: index.partitionKey.name, type: attributeType(index.partitionKey.type) },
      sortKey: index.sortKey ? { name: index.sortKey.name, type: attributeType(index.sortKey.type) } : undefined,
      ...projection(index),
    });
  }
  return table;
}

function attributeType(type: 'S' | 'N' | undefined): AttributeType {
  return type === 'N' ? AttributeType.NUMBER : AttributeType.STRING;
}

function projection(index: IndexSchema) {
  if (index.nonKeyAttributes === undefined) return { projectionType: ProjectionType.ALL };
  if (index.nonKeyAttributes.length === 0) return { projectionType: ProjectionType.KEYS_ONLY };
  return { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: [...index.nonKeyAttributes] };
}
