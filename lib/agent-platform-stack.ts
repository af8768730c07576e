/** The whole platform in one stack: data tables, document storage with its processing queue, and the REST API. */
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ChunkTableIndex } from './constructs/chunk-table-index';
import { DataTables, pascalCase } from './constructs/data-tables';
import { DocumentProcessing } from './constructs/document-processing';
import { DocumentStorage } from './constructs/document-storage';
import { FlowScheduler } from './constructs/flow-scheduler';
import { type KnowledgeIndexBackend, KnowledgeIndexInfra } from './constructs/knowledge-index';
import { PlatformApi } from './constructs/platform-api';
import type { TableName } from './routes';

export interface AgentPlatformStackProps extends StackProps {
  /** Deployment stage (`dev`, `prod`, ...): the API Gateway stage name. */
  readonly stage: string;
  /** Bedrock model id for generate (Converse), e.g. `amazon.nova-lite-v1:0`; unset: extractive answers. */
  readonly generateModelId?: string;
  /**
   * Where chunks are indexed: `bedrock` (default), a Bedrock knowledge base per environment over S3 Vectors; or
   * `dynamodb`, a chunk table ranked with BM25 by the functions, for deployments without Bedrock (LocalStack).
   */
  readonly knowledgeIndex?: 'bedrock' | 'dynamodb';
}

export class AgentPlatformStack extends Stack {
  public readonly data: DataTables;
  public readonly storage: DocumentStorage;
  public readonly api: PlatformApi;
  public readonly knowledgeIndex: KnowledgeIndexBackend;
  public readonly processing: DocumentProcessing;
  public readonly scheduler: FlowScheduler;

  constructor(scope: Construct, id: string, props: AgentPlatformStackProps) {
    super(scope, id, props);

    this.data = new DataTables(this, 'Data');
    this.storage = new DocumentStorage(this, 'DocumentStorage', {
      // Six times the 150 s a processing function is expected to need.
      processingVisibilityTimeout: Duration.seconds(900),
      maxReceiveCount: 3,
    });
    this.knowledgeIndex =
      props.knowledgeIndex === 'dynamodb'
        ? new ChunkTableIndex(this, 'ChunkIndex')
        : new KnowledgeIndexInfra(this, 'KnowledgeIndex');
    const resources = {
      tables: this.data.tables,
      documentsBucket: this.storage.bucket,
      processingQueue: this.storage.queue,
      knowledgeIndex: this.knowledgeIndex,
      generateModelId: props.generateModelId,
    };
    this.api = new PlatformApi(this, 'PlatformApi', {
      stageName: props.stage,
      resources,
      uploadUrlTtl: Duration.seconds(900),
      uploadSessionTtl: Duration.seconds(3600),
    });

    this.processing = new DocumentProcessing(this, 'DocumentProcessing', {
      resources: {
        tables: this.data.tables,
        documentsBucket: this.storage.bucket,
        processingQueue: this.storage.queue,
      },
      processingQueue: this.storage.queue,
      knowledgeIndex: this.knowledgeIndex,
      // The queue's visibility timeout (900 s) is six times this.
      timeout: Duration.seconds(150),
      maxFileBytes: 50 * 1024 * 1024,
    });

    this.scheduler = new FlowScheduler(this, 'FlowScheduler', { resources });

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.url,
      description: 'Base URL of the API, without a trailing slash',
    });
    new CfnOutput(this, 'DocumentsBucketName', { value: this.storage.bucket.bucketName });
    new CfnOutput(this, 'ProcessingQueueUrl', { value: this.storage.queue.queueUrl });
    for (const [name, table] of Object.entries(this.data.tables) as [TableName, { tableName: string }][]) {
      new CfnOutput(this, `${pascalCase(name)}TableName`, { value: table.tableName });
    }
  }
}
