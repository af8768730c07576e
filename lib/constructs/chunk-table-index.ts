/**
 * The knowledge index of a deployment without Bedrock (`cdk deploy -c knowledgeIndex=dynamodb`, which
 * `npm run test:localstack` uses, since LocalStack emulates no Bedrock knowledge bases): one DynamoDB table of chunks,
 * ranked with BM25 by the functions themselves (lambdas/adapters/index/dynamodb-chunks.ts).
 */

import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { CHUNK_INDEX_TABLE_VARIABLE } from '#adapters/index/dynamodb-chunks';
import { CHUNK_INDEX_TABLE } from '../tables';
import { createTable } from './data-tables';
import type { KnowledgeIndexBackend } from './knowledge-index';

export class ChunkTableIndex extends Construct implements KnowledgeIndexBackend {
  public readonly table: Table;
  /** The chunk view reads the table (grantRetrieve). */
  public readonly chunkManifests = false;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = createTable(this, 'ChunksTable', CHUNK_INDEX_TABLE);
  }

  environment(): Record<string, string> {
    return { [CHUNK_INDEX_TABLE_VARIABLE]: this.table.tableName };
  }

  /** Writes: the processing function and the watchdog. */
  grantIngest(grantee: IGrantable): void {
    this.table.grantReadWriteData(grantee);
  }

  /** Reads: the retrieval functions. */
  grantRetrieve(grantee: IGrantable): void {
    this.table.grantReadData(grantee);
  }
}
