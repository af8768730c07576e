/**
 * AWS Backup of what holds customer data (docs/operations.md, "Backups and restore"): every table and the documents
 * bucket, once a day, kept 35 days in a vault the stack retains; with `backupCopyVaultArn`, each recovery point is
 * also copied to that vault (another account's: a copy the deploying account's credentials cannot delete).
 * Point-in-time recovery already covers the tables' last 35 days to the second; the plan adds the bucket, a copy
 * outside the account, and recovery points that survive a deleted table.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { BackupPlan, BackupPlanRule, BackupResource, BackupVault, type IBackupVault } from 'aws-cdk-lib/aws-backup';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Schedule } from 'aws-cdk-lib/aws-events';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/** How long a daily recovery point is kept: PITR's own window, and as long as erased content may live on in one. */
export const BACKUP_RETENTION = Duration.days(35);

export interface DataBackupProps {
  readonly tables: readonly ITable[];
  readonly documentsBucket: IBucket;
  /** A vault (usually of another account) every recovery point is copied to. */
  readonly copyVaultArn?: string;
}

export class DataBackup extends Construct {
  public readonly vault: BackupVault;
  public readonly plan: BackupPlan;

  constructor(scope: Construct, id: string, props: DataBackupProps) {
    super(scope, id);
    // Retained with the stack's deletion: the recovery points are what a deleted stack is rebuilt from.
    this.vault = new BackupVault(this, 'Vault', { removalPolicy: RemovalPolicy.RETAIN });
    const copyTo: IBackupVault | undefined = props.copyVaultArn
      ? BackupVault.fromBackupVaultArn(this, 'CopyVault', props.copyVaultArn)
      : undefined;
    this.plan = new BackupPlan(this, 'Plan', { backupVault: this.vault });
    this.plan.addRule(
      new BackupPlanRule({
        ruleName: 'Daily',
        // 03:00 UTC; Backup starts it within the hour and lets it run up to a day.
        scheduleExpression: Schedule.cron({ minute: '0', hour: '3' }),
        startWindow: Duration.hours(1),
        completionWindow: Duration.hours(24),
        deleteAfter: BACKUP_RETENTION,
        ...(copyTo ? { copyActions: [{ destinationBackupVault: copyTo, deleteAfter: BACKUP_RETENTION }] } : {}),
      }),
    );
    // S3 backups need their own AWS-managed policies beside the general ones the selection attaches.
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('backup.amazonaws.com'),
      description: 'AWS Backup backs up and restores the tables and the documents bucket',
      managedPolicies: ['AWSBackupServiceRolePolicyForS3Backup', 'AWSBackupServiceRolePolicyForS3Restore'].map((name) =>
        ManagedPolicy.fromAwsManagedPolicyName(name),
      ),
    });
    this.plan.addSelection('Data', {
      resources: [
        ...props.tables.map((table) => BackupResource.fromDynamoDbTable(table)),
        BackupResource.fromArn(props.documentsBucket.bucketArn),
      ],
      role,
      allowRestores: true,
    });
    const reason =
      "AWS Backup's own service-role policies (backup, restore, and their S3 variants) are what AWS documents for a " +
      'backup selection; AWS keeps them current as Backup gains features, and the role is for Backup alone.';
    Validations.of(role).acknowledge(
      ...[
        'AWSBackupServiceRolePolicyForS3Backup',
        'AWSBackupServiceRolePolicyForS3Restore',
        'service-role/AWSBackupServiceRolePolicyForBackup',
        'service-role/AWSBackupServiceRolePolicyForRestores',
      ].map((policy) => ({ id: `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${policy}]`, reason })),
    );
  }
}
