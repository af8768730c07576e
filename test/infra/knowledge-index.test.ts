/**
 * The knowledge index infrastructure on its own, in a fresh stack with the same cdk-nag plugin as the app: three
 * Bedrock knowledge bases, each with a custom data source (chunking NONE) over its own S3 Vectors index, service
 * roles limited to the embedding model and their index, grants limited to the adapter's calls.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { NON_FILTERABLE_METADATA_KEYS } from '#adapters/index/bedrock-documents';
import { readKnowledgeBases } from '#adapters/index/bedrock-knowledge-base';
import { ENVIRONMENTS } from '#core/knowledge/fields';
import {
  INGEST_ACTIONS,
  KnowledgeIndexInfra,
  knowledgeBasesEnvironment,
  RETRIEVE_ACTIONS,
} from '../../lib/constructs/knowledge-index';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
  Principal?: unknown;
}

let outdir: string;
let stack: Stack;
let infra: KnowledgeIndexInfra;
let writer: Role;
let reader: Role;
let resources: Resources;
let validationReport: { pluginReports: { violations: unknown[] }[] } | undefined;

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
const getAtt = (construct: IConstruct, attribute: string) => ({ 'Fn::GetAtt': [logicalId(construct), attribute] });
const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

beforeAll(() => {
  outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'knowledge-index-test-'));
  const app = new App({ outdir });
  stack = new Stack(app, 'KnowledgeIndexTest');
  infra = new KnowledgeIndexInfra(stack, 'KnowledgeIndex');
  writer = new Role(stack, 'Writer', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  reader = new Role(stack, 'Reader', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
  infra.grantIngest(writer);
  infra.grantRetrieve(reader);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  // An unacknowledged cdk-nag finding makes synth() throw here, with the report as the message.
  const assembly = app.synth();
  const reportFile = path.join(assembly.directory, 'validation-report.json');
  validationReport = fs.existsSync(reportFile) ? JSON.parse(fs.readFileSync(reportFile, 'utf8')) : undefined;
  resources = Template.fromStack(stack).toJSON().Resources as Resources;
});

afterAll(() => {
  fs.rmSync(outdir, { recursive: true, force: true });
});

test('there is one Bedrock knowledge base per environment, a vector knowledge base embedding with Titan V2', () => {
  const knowledgeBases = ofType('AWS::Bedrock::KnowledgeBase');
  expect(knowledgeBases).toHaveLength(3);
  for (const environment of ENVIRONMENTS) {
    const kb = resources[logicalId(infra.knowledgeBaseResources[environment])].Properties;
    expect(kb).toMatchObject({
      RoleArn: getAtt(infra.serviceRoles[environment], 'Arn'),
      KnowledgeBaseConfiguration: {
        Type: 'VECTOR',
        VectorKnowledgeBaseConfiguration: {
          EmbeddingModelConfiguration: {
            BedrockEmbeddingModelConfiguration: { Dimensions: 1024, EmbeddingDataType: 'FLOAT32' },
          },
        },
      },
      StorageConfiguration: {
        Type: 'S3_VECTORS',
        S3VectorsConfiguration: { IndexArn: getAtt(infra.vectorIndexes[environment], 'IndexArn') },
      },
    });
    expect(String(kb.Name)).toMatch(/^([0-9a-zA-Z][_-]?){1,100}$/);
    // The model ARN is built from the stack's region and partition.
    const modelArn = JSON.stringify(
      (kb.KnowledgeBaseConfiguration as { VectorKnowledgeBaseConfiguration: { EmbeddingModelArn: unknown } })
        .VectorKnowledgeBaseConfiguration.EmbeddingModelArn,
    );
    expect(modelArn).toContain('{"Ref":"AWS::Region"}');
    expect(modelArn).toContain('::foundation-model/amazon.titan-embed-text-v2:0');
  }
  const names = knowledgeBases.map(([, r]) => r.Properties.Name);
  expect(new Set(names).size).toBe(3);
});

test('each knowledge base has one CUSTOM data source with chunking NONE', () => {
  expect(ofType('AWS::Bedrock::DataSource')).toHaveLength(3);
  for (const environment of ENVIRONMENTS) {
    expect(resources[logicalId(infra.dataSources[environment])].Properties).toMatchObject({
      KnowledgeBaseId: getAtt(infra.knowledgeBaseResources[environment], 'KnowledgeBaseId'),
      DataSourceConfiguration: { Type: 'CUSTOM' },
      VectorIngestionConfiguration: { ChunkingConfiguration: { ChunkingStrategy: 'NONE' } },
      DataDeletionPolicy: 'RETAIN',
    });
  }
});

test('the vector store: one encrypted S3 vector bucket, one 1024-dimension cosine float32 index per environment', () => {
  expect(ofType('AWS::S3Vectors::VectorBucket')).toHaveLength(1);
  expect(resources[logicalId(infra.vectorBucket)].Properties).toEqual({
    EncryptionConfiguration: { SseType: 'AES256' },
  });
  expect(ofType('AWS::S3Vectors::Index')).toHaveLength(3);
  for (const environment of ENVIRONMENTS) {
    const index = resources[logicalId(infra.vectorIndexes[environment])].Properties;
    expect(index).toEqual({
      VectorBucketArn: getAtt(infra.vectorBucket, 'VectorBucketArn'),
      DataType: 'float32',
      Dimension: 1024,
      DistanceMetric: 'cosine',
      MetadataConfiguration: { NonFilterableMetadataKeys: [...NON_FILTERABLE_METADATA_KEYS] },
    });
  }
  // S3 Vectors allows at most 10 non-filterable keys, and Bedrock's text and metadata fields must be among them.
  expect(NON_FILTERABLE_METADATA_KEYS.length).toBeLessThanOrEqual(10);
  expect(NON_FILTERABLE_METADATA_KEYS).toEqual(
    expect.arrayContaining(['AMAZON_BEDROCK_TEXT', 'AMAZON_BEDROCK_METADATA']),
  );
});

test('each service role may invoke the embedding model and use its own vector index, nothing else', () => {
  for (const environment of ENVIRONMENTS) {
    const role = resources[logicalId(infra.serviceRoles[environment])].Properties;
    const trust = (role.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement;
    expect(trust).toEqual([
      {
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { Service: 'bedrock.amazonaws.com' },
        Condition: {
          StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          ArnLike: { 'aws:SourceArn': expect.objectContaining({ 'Fn::Join': expect.any(Array) }) },
        },
      },
    ]);
    expect(JSON.stringify(trust)).toContain(':knowledge-base/*');
    expect(role).not.toHaveProperty('ManagedPolicyArns');
    const policies = role.Policies as { PolicyDocument: { Statement: Statement[] } }[];
    const statements = policies.flatMap((p) => p.PolicyDocument.Statement);
    expect(statements).toHaveLength(2);
    const [model, vectors] = statements;
    expect(model).toMatchObject({ Effect: 'Allow', Action: 'bedrock:InvokeModel' });
    expect(JSON.stringify(model.Resource)).toContain('::foundation-model/amazon.titan-embed-text-v2:0');
    expect(vectors).toEqual({
      Effect: 'Allow',
      Action: [
        's3vectors:GetIndex',
        's3vectors:PutVectors',
        's3vectors:GetVectors',
        's3vectors:DeleteVectors',
        's3vectors:QueryVectors',
      ],
      Resource: getAtt(infra.vectorIndexes[environment], 'IndexArn'),
    });
    for (const s of statements) expect(JSON.stringify(s)).not.toContain('*');
  }
  // The construct creates no separate AWS::IAM::Policy: the only ones here are the grants to the test's roles.
  expect(ofType('AWS::IAM::Policy').every(([, p]) => JSON.stringify(p.Properties.Roles).match(/Writer|Reader/))).toBe(
    true,
  );
});

test.each([
  ['grantIngest', () => writer, INGEST_ACTIONS],
  ['grantRetrieve', () => reader, RETRIEVE_ACTIONS],
])('%s allows exactly the adapter actions on the three knowledge bases', (_name, grantee, expected) => {
  const roleId = logicalId(grantee());
  const statements = ofType('AWS::IAM::Policy')
    .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  expect(statements).toEqual([
    {
      Effect: 'Allow',
      Action: [...expected],
      Resource: ENVIRONMENTS.map((environment) =>
        getAtt(infra.knowledgeBaseResources[environment], 'KnowledgeBaseArn'),
      ),
    },
  ]);
});

test('BEDROCK_KNOWLEDGE_BASES carries each environment ids in the format the adapter reads', () => {
  const resolved = stack.resolve(knowledgeBasesEnvironment(infra).BEDROCK_KNOWLEDGE_BASES) as {
    'Fn::Join': [string, (string | { 'Fn::GetAtt': [string, string] })[]];
  };
  // Stand in for CloudFormation: each GetAtt becomes "<logical id>.<attribute>".
  const json = resolved['Fn::Join'][1]
    .map((part) => (typeof part === 'string' ? part : part['Fn::GetAtt'].join('.')))
    .join(resolved['Fn::Join'][0]);
  const parsed = readKnowledgeBases({ BEDROCK_KNOWLEDGE_BASES: json });
  for (const environment of ENVIRONMENTS) {
    expect(parsed[environment]).toEqual({
      knowledgeBaseId: `${logicalId(infra.knowledgeBaseResources[environment])}.KnowledgeBaseId`,
      dataSourceId: `${logicalId(infra.dataSources[environment])}.DataSourceId`,
    });
  }
});

test('cdk-nag (AwsSolutions) reports no unacknowledged finding for the construct', () => {
  expect(validationReport?.pluginReports.flatMap((r) => r.violations) ?? []).toEqual([]);
  const direct = new AwsSolutionsChecks().validateScope(stack);
  expect(direct.violations).toEqual([]);
  expect(direct.success).toBe(true);
});
