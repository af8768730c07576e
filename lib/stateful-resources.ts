/**
 * What holds data a deploy must never lose, and the gate that keeps a deploy from replacing it (`npm run diff --
 * <stage>`, scripts/diff-gate.ts; docs/operations.md, "Deploy without losing data"). CloudFormation replaces a
 * resource when its logical id changes (a new one is created, the old one deleted, or orphaned when `Retain`) or when
 * a property that cannot be updated in place changes (a table's key schema, a bucket's name, a vector index's
 * dimension): for a table that is an empty table in place of the full one. The change set says so only at deploy
 * time; this says so before, from the templates, with the resource specification `cdk diff` itself uses.
 */
import { fullDiff, ResourceImpact } from '@aws-cdk/cloudformation-diff';

/** Resource types that hold data (test/infra/stateful-resources.test.ts pins their logical ids). */
export const STATEFUL_TYPES: readonly string[] = [
  'AWS::DynamoDB::Table',
  'AWS::S3::Bucket',
  'AWS::S3Vectors::VectorBucket',
  'AWS::S3Vectors::Index',
  'AWS::Bedrock::KnowledgeBase',
  'AWS::Bedrock::DataSource',
  'AWS::Cognito::UserPool',
  'AWS::Backup::BackupVault',
];

/** What a deploy would do to a stateful resource that loses it. */
const LOSSES = new Set<ResourceImpact>([
  ResourceImpact.WILL_REPLACE,
  ResourceImpact.MAY_REPLACE,
  ResourceImpact.WILL_DESTROY,
  ResourceImpact.WILL_ORPHAN,
]);

export interface StatefulLoss {
  readonly logicalId: string;
  readonly type: string;
  /** WILL_REPLACE, MAY_REPLACE (a property whose change may replace), WILL_DESTROY or WILL_ORPHAN (removed). */
  readonly impact: string;
  /** The properties whose change replaces it, when that is the cause. */
  readonly properties: readonly string[];
}

type Template = { Resources?: Record<string, { Type: string }> };

/** The stateful resources of `deployed` that deploying `next` would replace, delete or leave behind. */
export function statefulLosses(deployed: Template, next: Template): StatefulLoss[] {
  const diff = fullDiff(deployed as never, next as never);
  const losses: StatefulLoss[] = [];
  diff.resources.forEachDifference((logicalId, change) => {
    const type = change.oldResourceType ?? change.newResourceType ?? '';
    if (!STATEFUL_TYPES.includes(type) || !LOSSES.has(change.changeImpact)) return;
    const properties = Object.entries(change.propertyUpdates)
      .filter(
        ([, update]) =>
          update.changeImpact === ResourceImpact.WILL_REPLACE || update.changeImpact === ResourceImpact.MAY_REPLACE,
      )
      .map(([name]) => name);
    losses.push({ logicalId, type, impact: change.changeImpact, properties });
  });
  return losses;
}
