/**
 * Where document content lives and how processing starts: clients PUT to the bucket with a pre-signed URL, S3 sends
 * ObjectCreated to the processing queue, a failing message goes to the dead-letter queue after five receives.
 */
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  EventType,
  HttpMethods,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { SqsDestination } from 'aws-cdk-lib/aws-s3-notifications';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PENDING_UPLOAD_TAG } from '#adapters/blob/s3';
import { ATTACHMENT_RETENTION_DAYS, ATTACHMENTS_PREFIX } from '#core/flows/attachments';
import { UPLOAD_CORS_RULE } from '#shared/cors';

/** Days a noncurrent version of a document's object is kept (an undo window for deletes and overwrites). */
export const NONCURRENT_VERSION_DAYS = 7;

export interface DocumentStorageProps {
  /**
   * Visibility timeout of the processing queue: at least six times the processing function's timeout, as AWS
   * recommends for a queue a function consumes, so that a message the poller could not hand over (the function
   * throttled) is not counted as failed while it waits (docs/operations.md, "Queues").
   */
  readonly processingVisibilityTimeout: Duration;
  /** Receives before a message goes to the dead-letter queue. */
  readonly maxReceiveCount: number;
}

export class DocumentStorage extends Construct {
  public readonly bucket: Bucket;
  public readonly accessLogsBucket: Bucket;
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: DocumentStorageProps) {
    super(scope, id);

    // Server access logs of the documents bucket. It has no access logs of its own (they would log the log writes);
    // cdk-nag recognizes a log target and does not raise AwsSolutions-S1 for it.
    this.accessLogsBucket = new Bucket(this, 'AccessLogsBucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(365) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.bucket = new Bucket(this, 'DocumentsBucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // Versioned, so an object deleted by mistake (or by a compromised caller) can be brought back, and AWS Backup
      // can back the bucket up (it requires versioning). A deleted document's content is erased for good once its
      // noncurrent version expires (NONCURRENT_VERSION_DAYS) and the last recovery point holding it ages out.
      versioned: true,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'documents-bucket/',
      // Browsers upload straight to S3 with the pre-signed PUT URL; the signature, not the origin, authorizes it, so any
      // origin, not the API's CORS list (see UPLOAD_CORS_RULE; the local S3 endpoint answers by the same rule).
      cors: [
        {
          allowedMethods: UPLOAD_CORS_RULE.allowedMethods.map((method) => HttpMethods[method]),
          allowedOrigins: [...UPLOAD_CORS_RULE.allowedOrigins],
          allowedHeaders: [...UPLOAD_CORS_RULE.allowedHeaders],
          maxAge: UPLOAD_CORS_RULE.maxAgeSeconds,
        },
      ],
      lifecycleRules: [
        {
          // An upload URL writes its object tagged `upload=pending`; upload-complete removes the tag. What still has
          // it a day later is an upload nobody completed (the watchdog removes those sooner, when their session
          // ends): no file parks in the bucket for good. A day is the shortest expiration S3 offers.
          id: 'AbandonedUploads',
          tagFilters: { [PENDING_UPLOAD_TAG.key]: PENDING_UPLOAD_TAG.value },
          expiration: Duration.days(1),
        },
        // Parts of multipart uploads (the API issues none, but S3 accepts them from any signed client) do not linger.
        { id: 'IncompleteMultipartUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        {
          // What a delete or an expiration leaves behind: kept a week to undo a mistake, then gone; delete markers
          // with nothing under them are removed.
          id: 'NoncurrentVersions',
          noncurrentVersionExpiration: Duration.days(NONCURRENT_VERSION_DAYS),
          expiredObjectDeleteMarker: true,
        },
        {
          // Images attached to flow messages live as long as an idle session (SESSION_RETENTION_DAYS, whose TTL
          // removes it): counted from the upload, so a session may outlive its images, never the reverse. A rule,
          // not a sweep on the session's TTL delete: nothing to run, and nothing missed when a delete is late.
          id: 'SessionAttachments',
          prefix: ATTACHMENTS_PREFIX,
          expiration: Duration.days(ATTACHMENT_RETENTION_DAYS),
        },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // SQS-managed SSE, not a KMS key: S3 event notifications cannot publish to a queue encrypted with the
    // AWS-managed aws/sqs key, and SSE-SQS needs no key policy.
    this.deadLetterQueue = new Queue(this, 'ProcessingDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'ProcessingQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: props.processingVisibilityTimeout,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });

    this.bucket.addEventNotification(EventType.OBJECT_CREATED, new SqsDestination(this.queue));
    this.acknowledgeNotificationsHandler();
  }

  /**
   * `addEventNotification` adds a stack-wide singleton function (BucketNotificationsHandler…) that CDK writes and
   * manages; its role cannot be changed from here.
   */
  private acknowledgeNotificationsHandler(): void {
    const stack = Stack.of(this);
    const handler = stack.node.children.find((child) => child.node.id.startsWith('BucketNotificationsHandler'));
    if (!handler) return;
    Validations.of(handler).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason:
        "CDK's own bucket-notifications custom resource (deploy time only); the managed policy only lets it write its " +
        'CloudWatch logs, and CDK generates the role.',
    });
  }
}
