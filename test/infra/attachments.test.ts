/**
 * Where the images attached to flow messages live in the stack: the webhook and app-event functions may get, put
 * and delete objects under the documents bucket's attachments/ prefix and nothing else of it (not the tenants'
 * documents), the other flow functions not at all; a lifecycle rule removes them after the session retention.
 */
import { type CfnElement, Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { ATTACHMENT_RETENTION_DAYS, ATTACHMENTS_PREFIX } from '#core/flows/attachments';
import { RESOURCE_ENV } from '../../lib/routes';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

let synthesized: Synthesized;

beforeAll(() => {
  synthesized = synthesizeUnbundled();
});
afterAll(() => synthesized.dispose());

const logicalId = (construct: IConstruct): string =>
  Stack.of(construct).getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);

function functionOf(id: string): IConstruct {
  return id === 'ScheduleTick' ? synthesized.stack.scheduler.tick : synthesized.stack.api.functions[id];
}

/** The statements of the function's role that name the documents bucket. */
function bucketStatements(id: string): Statement[] {
  const { stack, template } = synthesized;
  const roleId = logicalId((functionOf(id) as unknown as { role: IConstruct }).role);
  const bucketId = logicalId(stack.storage.bucket);
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .filter((statement) => JSON.stringify(statement.Resource).includes(`"${bucketId}"`));
}

function environmentOf(id: string): Record<string, unknown> {
  const resource = synthesized.template.toJSON().Resources[logicalId(functionOf(id))];
  return (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

it.each(['InvokeWebhook', 'SendAppEvent'])('%s may get, put and delete under attachments/ only', (id) => {
  const bucketId = logicalId(synthesized.stack.storage.bucket);
  expect(bucketStatements(id)).toEqual([
    {
      Effect: 'Allow',
      Action: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'],
      Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, `/${ATTACHMENTS_PREFIX}*`]] },
    },
  ]);
  expect(environmentOf(id)[RESOURCE_ENV.documentsBucket]).toEqual({ Ref: bucketId });
});

it.each(['ScheduleTick', 'GetSession'])('%s has no access to the documents bucket', (id) => {
  expect(bucketStatements(id)).toEqual([]);
  expect(environmentOf(id)).not.toHaveProperty(RESOURCE_ENV.documentsBucket);
});

it('expires attachments after the session retention by a lifecycle rule on their prefix', () => {
  synthesized.template.hasResourceProperties('AWS::S3::Bucket', {
    LifecycleConfiguration: {
      Rules: Match.arrayWith([
        Match.objectLike({
          Id: 'SessionAttachments',
          Status: 'Enabled',
          Prefix: ATTACHMENTS_PREFIX,
          ExpirationInDays: ATTACHMENT_RETENTION_DAYS,
        }),
      ]),
    },
  });
});

it('leaves no cdk-nag finding unacknowledged', () => {
  expect(synthesized.violations).toEqual([]);
});
