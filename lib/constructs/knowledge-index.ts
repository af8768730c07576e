/**
 * Where chunks become retrievable in AWS: per environment (development, staging, production) one Amazon Bedrock
 * knowledge base over its own Amazon S3 Vectors index, with a custom data source the processing function ingests
 * chunks into. The pipeline chunks documents itself, so the data source's chunking strategy is NONE: one ingested
 * custom document is one chunk. Functions find the ids in BEDROCK_KNOWLEDGE_BASES (`knowledgeBasesEnvironment`).
 */
import { type CfnResource, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { CfnDataSource, CfnKnowledgeBase, FoundationModel, FoundationModelIdentifier } from 'aws-cdk-lib/aws-bedrock';
import { Grant, type IGrantable, PolicyDocument, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { CfnIndex, CfnVectorBucket } from 'aws-cdk-lib/aws-s3vectors';
import { Construct } from 'constructs';
import { NON_FILTERABLE_METADATA_KEYS } from '#adapters/index/bedrock-documents';
import { BEDROCK_KNOWLEDGE_BASES_VARIABLE } from '#adapters/index/bedrock-knowledge-base';
import { ENVIRONMENTS, type Environment } from '#core/knowledge/fields';

/** Titan Text Embeddings V2 at its largest size; the vector index is created with the same dimension. */
export const EMBEDDING_MODEL = FoundationModelIdentifier.AMAZON_TITAN_EMBED_TEXT_V2_0;
export const EMBEDDING_DIMENSIONS = 1024;

/** What the Bedrock adapter calls to write (lambdas/adapters/index/bedrock-knowledge-base.ts), and nothing more. */
export const INGEST_ACTIONS = [
  'bedrock:IngestKnowledgeBaseDocuments',
  'bedrock:DeleteKnowledgeBaseDocuments',
  'bedrock:GetKnowledgeBaseDocuments',
  'bedrock:ListKnowledgeBaseDocuments',
] as const;
/** Retrieval. RetrieveAndGenerate also needs bedrock:InvokeModel on the generating model, granted where it is chosen. */
export const RETRIEVE_ACTIONS = ['bedrock:Retrieve', 'bedrock:RetrieveAndGenerate'] as const;

/** What the knowledge base's service role may do on its vector index: what Bedrock needs to write and query it. */
const VECTOR_INDEX_ACTIONS = [
  's3vectors:GetIndex',
  's3vectors:PutVectors',
  's3vectors:GetVectors',
  's3vectors:DeleteVectors',
  's3vectors:QueryVectors',
];

export interface KnowledgeBaseResources {
  readonly knowledgeBaseId: string;
  readonly dataSourceId: string;
  readonly knowledgeBaseArn: string;
}

/**
 * What the rest of the stack needs of a knowledge index: the environment its adapter reads, and the grants to write
 * and to query it. KnowledgeIndexInfra (Bedrock) in AWS; ChunkTableIndex where Bedrock is not (LocalStack).
 */
export interface KnowledgeIndexBackend {
  environment(): Record<string, string>;
  /**
   * Whether a document's chunks are listed from the chunk manifests of the documents bucket (Bedrock, which lists no
   * chunks: adapters/index/chunk-manifests.ts) rather than from the index itself (`knowledgeIndex: 'listChunks'`).
   */
  readonly chunkManifests: boolean;
  grantIngest(grantee: IGrantable): void;
  grantRetrieve(grantee: IGrantable): void;
}

const titleCase = (environment: Environment) => environment.charAt(0).toUpperCase() + environment.slice(1);

/** A knowledge base name: `([0-9a-zA-Z][_-]?){1,100}`, unique in the account and region, derived from the path. */
function knowledgeBaseName(scope: Construct): string {
  return Names.uniqueResourceName(scope, { maxLength: 100, separator: '-' })
    .replace(/[^0-9A-Za-z-]/g, '')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
}

export class KnowledgeIndexInfra extends Construct implements KnowledgeIndexBackend {
  public readonly chunkManifests = true;
  /** Per environment: the ids the adapter needs and the ARN the grants name. */
  public readonly knowledgeBases: Record<Environment, KnowledgeBaseResources>;
  public readonly vectorBucket: CfnVectorBucket;
  public readonly vectorIndexes: Record<Environment, CfnIndex>;
  /** The service role each knowledge base uses to embed with the model and write its vector index. */
  public readonly serviceRoles: Record<Environment, Role>;
  public readonly knowledgeBaseResources: Record<Environment, CfnKnowledgeBase>;
  public readonly dataSources: Record<Environment, CfnDataSource>;
  public readonly embeddingModelArn: string;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const stack = Stack.of(this);
    this.embeddingModelArn = FoundationModel.fromFoundationModelId(this, 'EmbeddingModel', EMBEDDING_MODEL).modelArn;

    // One vector bucket (SSE-S3) holds one index per environment; no physical names, CloudFormation picks them.
    this.vectorBucket = new CfnVectorBucket(this, 'VectorBucket', { encryptionConfiguration: { sseType: 'AES256' } });
    this.vectorBucket.applyRemovalPolicy(RemovalPolicy.RETAIN);

    const knowledgeBases = {} as Record<Environment, KnowledgeBaseResources>;
    const vectorIndexes = {} as Record<Environment, CfnIndex>;
    const serviceRoles = {} as Record<Environment, Role>;
    const knowledgeBaseResources = {} as Record<Environment, CfnKnowledgeBase>;
    const dataSources = {} as Record<Environment, CfnDataSource>;

    for (const environment of ENVIRONMENTS) {
      const scopeOf = new Construct(this, titleCase(environment));

      const index = new CfnIndex(scopeOf, 'VectorIndex', {
        vectorBucketArn: this.vectorBucket.attrVectorBucketArn,
        dataType: 'float32',
        dimension: EMBEDDING_DIMENSIONS,
        distanceMetric: 'cosine',
        // The chunk text, Bedrock's own metadata and our long values stay out of the 2 KB of filterable metadata.
        metadataConfiguration: { nonFilterableMetadataKeys: [...NON_FILTERABLE_METADATA_KEYS] },
      });

      const role = new Role(scopeOf, 'ServiceRole', {
        description: `Bedrock knowledge base (${environment}): embeds with Titan V2 and writes its S3 Vectors index`,
        // Only Bedrock, acting for a knowledge base of this account, may assume it (confused-deputy guard).
        assumedBy: new ServicePrincipal('bedrock.amazonaws.com', {
          conditions: {
            StringEquals: { 'aws:SourceAccount': stack.account },
            ArnLike: {
              'aws:SourceArn': stack.formatArn({ service: 'bedrock', resource: 'knowledge-base', resourceName: '*' }),
            },
          },
        }),
        inlinePolicies: {
          KnowledgeBase: new PolicyDocument({
            statements: [
              new PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: [this.embeddingModelArn] }),
              new PolicyStatement({ actions: VECTOR_INDEX_ACTIONS, resources: [index.attrIndexArn] }),
            ],
          }),
        },
      });

      const knowledgeBase = new CfnKnowledgeBase(scopeOf, 'KnowledgeBase', {
        name: knowledgeBaseName(scopeOf),
        description: `Agent platform knowledge (${environment}): chunks ingested by the processing pipeline`,
        roleArn: role.roleArn,
        knowledgeBaseConfiguration: {
          type: 'VECTOR',
          vectorKnowledgeBaseConfiguration: {
            embeddingModelArn: this.embeddingModelArn,
            embeddingModelConfiguration: {
              bedrockEmbeddingModelConfiguration: { dimensions: EMBEDDING_DIMENSIONS, embeddingDataType: 'FLOAT32' },
            },
          },
        },
        storageConfiguration: { type: 'S3_VECTORS', s3VectorsConfiguration: { indexArn: index.attrIndexArn } },
      });

      const dataSource = new CfnDataSource(scopeOf, 'DataSource', {
        knowledgeBaseId: knowledgeBase.attrKnowledgeBaseId,
        name: 'pipeline-chunks',
        description: 'Chunks ingested directly (IngestKnowledgeBaseDocuments) by the processing function',
        dataSourceConfiguration: { type: 'CUSTOM' },
        // NONE: each ingested document is one chunk, because the pipeline has already chunked it.
        vectorIngestionConfiguration: { chunkingConfiguration: { chunkingStrategy: 'NONE' } },
        // RETAIN: deleting the data source (or the stack) leaves the vectors in place; they took embedding calls to
        // make, and the documents table still says `ready` for each of them (docs/operations.md, "Backups and restore").
        dataDeletionPolicy: 'RETAIN',
      });
      // The index, the knowledge base and its data source stay when the stack is deleted (a deploy can still
      // replace one: the stateful logical ids are pinned by test/infra/stateful-resources.test.ts and `npm run diff`).
      for (const resource of [index, knowledgeBase, dataSource] as CfnResource[]) {
        resource.applyRemovalPolicy(RemovalPolicy.RETAIN);
      }

      knowledgeBases[environment] = {
        knowledgeBaseId: knowledgeBase.attrKnowledgeBaseId,
        dataSourceId: dataSource.attrDataSourceId,
        knowledgeBaseArn: knowledgeBase.attrKnowledgeBaseArn,
      };
      vectorIndexes[environment] = index;
      serviceRoles[environment] = role;
      knowledgeBaseResources[environment] = knowledgeBase;
      dataSources[environment] = dataSource;
    }

    this.knowledgeBases = knowledgeBases;
    this.vectorIndexes = vectorIndexes;
    this.serviceRoles = serviceRoles;
    this.knowledgeBaseResources = knowledgeBaseResources;
    this.dataSources = dataSources;
  }

  /** BEDROCK_KNOWLEDGE_BASES, for the Bedrock adapter. */
  environment(): Record<string, string> {
    return knowledgeBasesEnvironment(this);
  }

  private get knowledgeBaseArns(): string[] {
    return ENVIRONMENTS.map((environment) => this.knowledgeBases[environment].knowledgeBaseArn);
  }

  /** Ingest, delete, get and list documents of the three knowledge bases: what the processing function calls. */
  grantIngest(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({ grantee, actions: [...INGEST_ACTIONS], resourceArns: this.knowledgeBaseArns });
  }

  /** Retrieve and RetrieveAndGenerate on the three knowledge bases: what the retrieval functions call. */
  grantRetrieve(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({ grantee, actions: [...RETRIEVE_ACTIONS], resourceArns: this.knowledgeBaseArns });
  }
}

/**
 * The environment variable the adapter reads (`bedrockIndexFromEnv`): BEDROCK_KNOWLEDGE_BASES =
 * `{"development":{"knowledgeBaseId":"…","dataSourceId":"…"},"staging":{…},"production":{…}}`.
 */
export function knowledgeBasesEnvironment(index: KnowledgeIndexInfra): Record<string, string> {
  const value = Object.fromEntries(
    ENVIRONMENTS.map((environment) => [
      environment,
      {
        knowledgeBaseId: index.knowledgeBases[environment].knowledgeBaseId,
        dataSourceId: index.knowledgeBases[environment].dataSourceId,
      },
    ]),
  );
  return { [BEDROCK_KNOWLEDGE_BASES_VARIABLE]: Stack.of(index).toJsonString(value) };
}
