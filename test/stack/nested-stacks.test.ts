/**
 * A stack with nested stacks read as one template equivalent to the deployed whole (lib/stack-check/nested-stacks.ts):
 * parameters replaced by what the parent passes, outputs by their values, in Ref, Fn::GetAtt and Fn::Sub, nested
 * stacks within nested stacks included, and a logical id declared twice refused. The synthesized stack itself is
 * flattened in test/infra (cors.test.ts: every resource of every template, none of the nested stacks).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type CfnTemplate, type Json, readCloudAssembly } from '../../lib/stack-check/cloud-assembly';
import { flattenTemplate } from '../../lib/stack-check/nested-stacks';

let directory: string;

beforeEach(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'nested-stacks-'));
});
afterEach(() => fs.rmSync(directory, { recursive: true, force: true }));

type Document = Record<string, Json>;

/** `${name}` as Fn::Sub writes it. */
const v = (name: string): string => `\${${name}}`;

function write(file: string, document: Document): string {
  fs.writeFileSync(path.join(directory, file), JSON.stringify(document));
  return path.join(directory, file);
}

/** A nested stack resource as CDK writes it, its template named by asset metadata. */
function nestedStack(file: string, parameters: Record<string, Json> = {}, extra: Document = {}): Json {
  return {
    Type: 'AWS::CloudFormation::Stack',
    Properties: { Parameters: parameters, TemplateURL: `https://s3.amazonaws.com/assets/${file}` },
    Metadata: { 'aws:asset:path': file, 'aws:asset:property': 'TemplateURL' },
    ...extra,
  };
}

const flatten = (file = 'Parent.template.json') => flattenTemplate(directory, path.join(directory, file));

/** A table in the parent, a function in the nested stack that reads its name and ARN and gives back its own ARN. */
function tableAndFunction(): void {
  write('Child.nested.template.json', {
    Parameters: {
      TableName: { Type: 'String' },
      TableArn: { Type: 'String' },
      Stage: { Type: 'String', Default: 'dev' },
    },
    Resources: {
      Fn: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Environment: { Variables: { TABLE: { Ref: 'TableName' }, STAGE: { Ref: 'Stage' } } },
          Description: { 'Fn::Sub': `reads ${v('TableName')} in ${v('AWS::Region')}, ${v('!Literal')} stays` },
        },
      },
      Policy: {
        Type: 'AWS::IAM::Policy',
        Properties: { Resource: { 'Fn::Sub': [`${v('TableArn')}/index/${v('Suffix')}`, { Suffix: '*' }] } },
      },
    },
    Outputs: { FnArn: { Value: { 'Fn::GetAtt': ['Fn', 'Arn'] } }, Table: { Value: { Ref: 'TableName' } } },
  });
  write('Parent.template.json', {
    Parameters: { BootstrapVersion: { Type: 'String' } },
    Resources: {
      Table: { Type: 'AWS::DynamoDB::Table' },
      Child: nestedStack('Child.nested.template.json', {
        TableName: { Ref: 'Table' },
        TableArn: { 'Fn::GetAtt': ['Table', 'Arn'] },
      }),
      Method: {
        Type: 'AWS::ApiGateway::Method',
        Properties: {
          Uri: { 'Fn::Join': ['', ['arn:', { 'Fn::GetAtt': ['Child', 'Outputs.FnArn'] }, '/invocations']] },
          Short: { 'Fn::GetAtt': 'Child.Outputs.Table' },
          Sub: { 'Fn::Sub': `path/${v('Child.Outputs.FnArn')}/${v('Table')}` },
        },
        DependsOn: ['Child', 'Table'],
      },
    },
    Outputs: { FunctionArn: { Value: { 'Fn::GetAtt': ['Child', 'Outputs.FnArn'] } } },
  });
}

test('a nested parameter becomes the value the parent passes, or its default', () => {
  tableAndFunction();
  const { template } = flatten();
  expect(Object.keys(template.Resources).sort()).toEqual(['Fn', 'Method', 'Policy', 'Table']);
  const fn = template.Resources.Fn.Properties as Document;
  expect(fn.Environment).toEqual({ Variables: { TABLE: { Ref: 'Table' }, STAGE: 'dev' } });
});

test('a nested parameter in a Fn::Sub becomes a variable of its map holding the parent’s value', () => {
  tableAndFunction();
  const { template } = flatten();
  expect((template.Resources.Fn.Properties as Document).Description).toEqual({
    'Fn::Sub': [
      `reads ${v('TableName')} in ${v('AWS::Region')}, ${v('!Literal')} stays`,
      { TableName: { Ref: 'Table' } },
    ],
  });
  expect((template.Resources.Policy.Properties as Document).Resource).toEqual({
    'Fn::Sub': [`${v('TableArn')}/index/${v('Suffix')}`, { Suffix: '*', TableArn: { 'Fn::GetAtt': ['Table', 'Arn'] } }],
  });
});

test('a nested output the parent reads becomes its value, in Fn::GetAtt of both forms and in Fn::Sub', () => {
  tableAndFunction();
  const { template } = flatten();
  const method = template.Resources.Method.Properties as Document;
  expect(method.Uri).toEqual({ 'Fn::Join': ['', ['arn:', { 'Fn::GetAtt': ['Fn', 'Arn'] }, '/invocations']] });
  // An output that passes a parameter on is the parent's own value.
  expect(method.Short).toEqual({ Ref: 'Table' });
  expect(method.Sub).toEqual({
    'Fn::Sub': [`path/${v('ChildOutputsFnArn')}/${v('Table')}`, { ChildOutputsFnArn: { 'Fn::GetAtt': ['Fn', 'Arn'] } }],
  });
  expect((template as unknown as { Outputs: Document }).Outputs).toEqual({
    FunctionArn: { Value: { 'Fn::GetAtt': ['Fn', 'Arn'] } },
  });
  // Waiting for the nested stack is waiting for each of its resources.
  expect((template.Resources.Method as unknown as { DependsOn: string[] }).DependsOn.sort()).toEqual([
    'Fn',
    'Policy',
    'Table',
  ]);
});

test('the files are listed as synthesized, the parent first, for the quotas counted per template', () => {
  tableAndFunction();
  const { templates } = flatten();
  expect(templates.map((t) => [path.basename(t.file), t.nestedAt, Object.keys(t.template.Resources).length])).toEqual([
    ['Parent.template.json', [], 3],
    ['Child.nested.template.json', ['Child'], 2],
  ]);
});

test('a logical id declared by the parent and a nested stack is refused, naming both files', () => {
  tableAndFunction();
  const child = JSON.parse(fs.readFileSync(path.join(directory, 'Child.nested.template.json'), 'utf8'));
  child.Resources.Table = { Type: 'AWS::SQS::Queue' };
  write('Child.nested.template.json', child);
  expect(() => flatten()).toThrow(/logical id Table is declared by both .*Parent\.template\.json and .*Child\.nested/);
});

test('a logical id declared by two nested stacks is refused', () => {
  write('A.nested.template.json', { Resources: { Same: { Type: 'AWS::SQS::Queue' } } });
  write('B.nested.template.json', { Resources: { Same: { Type: 'AWS::SQS::Queue' } } });
  write('Parent.template.json', {
    Resources: { A: nestedStack('A.nested.template.json'), B: nestedStack('B.nested.template.json') },
  });
  expect(() => flatten()).toThrow(/logical id Same is declared by both .*A\.nested.* and .*B\.nested/);
});

test('CDK’s version report, in every template under one id with its condition, is kept once: the stack’s', () => {
  const available = { 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'us-east-1'] };
  const report = (modules: string): Json => ({
    Type: 'AWS::CDK::Metadata',
    Properties: { Analytics: modules },
    Condition: 'CDKMetadataAvailable',
  });
  write('Child.nested.template.json', {
    Resources: { Queue: { Type: 'AWS::SQS::Queue' }, CDKMetadata: report('child') },
    Conditions: { CDKMetadataAvailable: available },
  });
  write('Parent.template.json', {
    Resources: { Child: nestedStack('Child.nested.template.json'), CDKMetadata: report('parent') },
    Conditions: { CDKMetadataAvailable: available },
  });
  const { template } = flatten();
  expect(template.Resources.CDKMetadata.Properties).toEqual({ Analytics: 'parent' });
  expect(Object.keys(template.Resources).sort()).toEqual(['CDKMetadata', 'Queue']);
  expect(template.Conditions).toEqual({ CDKMetadataAvailable: available });
  // A condition of one name that says something else in the nested template is not the same condition.
  write('Child.nested.template.json', {
    Resources: { Queue: { Type: 'AWS::SQS::Queue' } },
    Conditions: { CDKMetadataAvailable: { 'Fn::Equals': ['a', 'b'] } },
  });
  expect(() => flatten()).toThrow(/Conditions CDKMetadataAvailable: declared differently/);
});

test('a nested stack within a nested stack is flattened first, its values passed through both', () => {
  write('Inner.nested.template.json', {
    Parameters: { QueueArn: { Type: 'String' } },
    Resources: { Consumer: { Type: 'AWS::Lambda::EventSourceMapping', Properties: { Source: { Ref: 'QueueArn' } } } },
    Outputs: { ConsumerId: { Value: { Ref: 'Consumer' } } },
  });
  write('Outer.nested.template.json', {
    Parameters: { Arn: { Type: 'String' } },
    Resources: { Inner: nestedStack('Inner.nested.template.json', { QueueArn: { Ref: 'Arn' } }) },
    Outputs: { Mapping: { Value: { 'Fn::GetAtt': ['Inner', 'Outputs.ConsumerId'] } } },
  });
  write('Parent.template.json', {
    Resources: {
      Queue: { Type: 'AWS::SQS::Queue' },
      Outer: nestedStack('Outer.nested.template.json', { Arn: { 'Fn::GetAtt': ['Queue', 'Arn'] } }),
      Alarm: { Type: 'AWS::CloudWatch::Alarm', Properties: { Of: { 'Fn::GetAtt': ['Outer', 'Outputs.Mapping'] } } },
    },
  });
  const { template, templates } = flatten();
  expect(template.Resources.Consumer.Properties).toEqual({ Source: { 'Fn::GetAtt': ['Queue', 'Arn'] } });
  expect(template.Resources.Alarm.Properties).toEqual({ Of: { Ref: 'Consumer' } });
  expect(Object.keys(template.Resources).sort()).toEqual(['Alarm', 'Consumer', 'Queue']);
  expect(templates.map((t) => t.nestedAt)).toEqual([[], ['Outer'], ['Outer', 'Inner']]);
});

test('a parameter given no value, or a value for no parameter, is refused', () => {
  write('Child.nested.template.json', { Parameters: { Needed: { Type: 'String' } }, Resources: {} });
  write('Parent.template.json', { Resources: { Child: nestedStack('Child.nested.template.json') } });
  expect(() => flatten()).toThrow(/Child gives no value for parameter Needed/);
  write('Parent.template.json', {
    Resources: { Child: nestedStack('Child.nested.template.json', { Needed: 'x', Other: 'y' }) },
  });
  expect(() => flatten()).toThrow(/Child passes parameter Other/);
});

test('a nested stack read for anything but its outputs, or an output it does not have, is refused', () => {
  write('Child.nested.template.json', { Resources: {}, Outputs: { Out: { Value: 'v' } } });
  const parent = (properties: Json) =>
    write('Parent.template.json', {
      Resources: {
        Child: nestedStack('Child.nested.template.json'),
        User: { Type: 'AWS::SNS::Topic', Properties: { Value: properties } },
      },
    });
  parent({ Ref: 'Child' });
  expect(() => flatten()).toThrow(/Ref Child/);
  parent({ 'Fn::GetAtt': ['Child', 'Outputs.Missing'] });
  expect(() => flatten()).toThrow(/Child has no output Missing/);
  parent({ 'Fn::GetAtt': ['Child', 'Arn'] });
  expect(() => flatten()).toThrow(/only the outputs of a nested stack/);
});

test('without asset metadata, the template is the asset whose object key the TemplateURL names', () => {
  write('AgentPlatformStackChildABC.nested.template.json', { Resources: { Inside: { Type: 'AWS::SQS::Queue' } } });
  write('Parent.template.json', {
    Resources: {
      Child: {
        Type: 'AWS::CloudFormation::Stack',
        Properties: {
          TemplateURL: {
            'Fn::Join': ['', ['https://s3.', { Ref: 'AWS::Region' }, '.amazonaws.com/bucket', '/abc123.json']],
          },
        },
      },
    },
  });
  write('Parent.assets.json', {
    version: '48.0.0',
    files: {
      abc123: {
        source: { path: 'AgentPlatformStackChildABC.nested.template.json', packaging: 'file' },
        destinations: { 'current_account-current_region': { bucketName: 'bucket', objectKey: 'abc123.json' } },
      },
    },
  });
  expect(Object.keys(flatten().template.Resources)).toEqual(['Inside']);
});

test('readCloudAssembly reads the stack’s own template, its nested ones merged in, and keeps its path', () => {
  tableAndFunction();
  const assembly = readCloudAssembly(directory);
  expect(assembly.templateFile).toBe(path.join(directory, 'Parent.template.json'));
  expect(Object.keys(assembly.template.Resources).sort()).toEqual(['Fn', 'Method', 'Policy', 'Table']);
  expect(assembly.templates).toHaveLength(2);
  // A copy of the flattened template is a template of its own: `bin/run-stack.ts --template` reads it as it is.
  const copy = JSON.parse(JSON.stringify(assembly.template)) as CfnTemplate;
  expect(JSON.stringify(copy)).not.toMatch(/Outputs\.|"Child"/);
});
