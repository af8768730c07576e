/**
 * The web console in AWS (docs/console.md, "In AWS"): its built files in a private bucket behind CloudFront with
 * origin access control; the API on the same origin (`/api/*`, `/dashboard/*` and `/health` go to the REST API,
 * uncached, every viewer header but Host forwarded), so the console needs no CORS; a response headers policy built from
 * the console's security headers, the local runtime's too (lib/console-security-headers.ts: a CSP that lets the page
 * reach only its own origin, Cognito and the documents bucket, frame-ancestors none, nosniff; here HSTS as well); SPA
 * routing by a CloudFront function (a path without a file extension is the console's index.html); and
 * `/config.json` written at deploy time from the stack's own user pool.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { type CfnResource, DockerImage, Duration, Stack, Validations } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as EdgeFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  OriginRequestPolicy,
  ResponseHeadersPolicy,
  type ResponseSecurityHeadersBehavior,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { RestApiOrigin, S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import type { UserPool, UserPoolClient } from 'aws-cdk-lib/aws-cognito';
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import type { ConsoleConfig } from '../../web/src/config';
import { type ConsoleSecurityHeaders, consoleSecurityHeaders } from '../console-security-headers';
import { type EdgeIdentity, ORIGIN_VERIFY_HEADER, VIEWER_ADDRESS_CODE } from './edge-identity';
import type { SignUpMode } from './people';

const ROOT = resolve(__dirname, '../..');

/** The API's paths on the console's origin; the console's own paths never start with these (docs/console.md). */
export const API_PATH_PATTERNS = ['/api/*', '/dashboard/*', '/health'] as const;

/**
 * The viewer-request function: a path with no file extension is a route of the console, answered by index.html;
 * `/config.json`, `/assets/…` and the like are files. CloudFront Functions' JavaScript runtime 2.0.
 */
export const SPA_ROUTING_CODE = `function handler(event) {
  var request = event.request;
  if (!/\\.[A-Za-z0-9]+$/.test(request.uri)) request.uri = '/index.html';
  return request;
}`;

export interface ConsoleSiteProps {
  readonly api: RestApi;
  readonly userPool: UserPool;
  readonly client: UserPoolClient;
  readonly signUp: SignUpMode;
  /** The bucket the console's uploads PUT to (pre-signed URLs): the CSP allows it. */
  readonly documentsBucket: IBucket;
  /**
   * With a web ACL on the API: each request to the API origin carries the viewer's address and the edge's secret
   * (edge-identity.ts), so the ACL counts viewers, not CloudFront's addresses.
   */
  readonly edgeIdentity?: EdgeIdentity;
}

export class ConsoleSite extends Construct {
  public readonly bucket: Bucket;
  public readonly distribution: Distribution;
  /** `https://<distribution domain>`: the console, and the API under the same origin. */
  public readonly url: string;

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);
    const region = Stack.of(this).region;

    const logs = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      // CloudFront's standard logs are written with an ACL.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
    });
    this.bucket = new Bucket(this, 'Files', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      serverAccessLogsBucket: logs,
      serverAccessLogsPrefix: 'console-bucket/',
    });

    // The console's headers, the local runtime's too (lib/console-security-headers.ts); HSTS: CloudFront is HTTPS.
    const security = consoleSecurityHeaders({
      cognito: [`https://cognito-idp.${region}.amazonaws.com`],
      documents: [`https://${props.documentsBucket.bucketRegionalDomainName}`],
      https: true,
    });
    const headers = new ResponseHeadersPolicy(this, 'Headers', {
      comment: 'Agent Platform console: CSP (own origin, Cognito, documents bucket), HSTS, no framing',
      securityHeadersBehavior: cloudFrontSecurityHeaders(security),
    });
    const spaRouting = new EdgeFunction(this, 'SpaRouting', {
      code: FunctionCode.fromInline(SPA_ROUTING_CODE),
      runtime: FunctionRuntime.JS_2_0,
      comment: 'A console route (no file extension) is index.html',
    });

    const viewerAddress = props.edgeIdentity
      ? new EdgeFunction(this, 'ViewerAddress', {
          code: FunctionCode.fromInline(VIEWER_ADDRESS_CODE),
          runtime: FunctionRuntime.JS_2_0,
          comment: "The viewer's address for the API's web ACL (x-viewer-address)",
        })
      : undefined;
    const api = {
      origin: new RestApiOrigin(props.api, {
        ...(props.edgeIdentity ? { customHeaders: { [ORIGIN_VERIFY_HEADER]: props.edgeIdentity.secretValue } } : {}),
      }),
      ...(viewerAddress
        ? { functionAssociations: [{ function: viewerAddress, eventType: FunctionEventType.VIEWER_REQUEST }] }
        : {}),
      viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: AllowedMethods.ALLOW_ALL,
      // Every answer is per caller: never cached; Authorization and the rest reach the API (Host is the API's own).
      cachePolicy: CachePolicy.CACHING_DISABLED,
      originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      responseHeadersPolicy: headers,
    };
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Agent Platform console and API',
      defaultRootObject: 'index.html',
      httpVersion: HttpVersion.HTTP2_AND_3,
      enableLogging: true,
      logBucket: logs,
      logFilePrefix: 'distribution/',
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        functionAssociations: [{ function: spaRouting, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
      additionalBehaviors: Object.fromEntries(API_PATH_PATTERNS.map((pattern) => [pattern, api])),
    });
    this.url = `https://${this.distribution.distributionDomainName}`;

    new BucketDeployment(this, 'Deploy', {
      sources: [
        Source.asset(join(ROOT, 'web'), {
          exclude: ['dist', '.dist-*', 'node_modules'],
          bundling: {
            // Built here (Vite needs no Docker); the image is only named because CDK requires one.
            image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22'),
            local: { tryBundle: (outputDir) => buildConsoleInto(outputDir) },
          },
        }),
        // What the console reads first: the API is on its own origin; sign-in is this stack's user pool.
        Source.jsonData('config.json', {
          apiUrl: '',
          cognito: { region, userPoolId: props.userPool.userPoolId, clientId: props.client.userPoolClientId },
          signUp: props.signUp,
        } satisfies ConsoleConfig),
      ],
      destinationBucket: this.bucket,
      // Hashed assets of the previous build stay for pages still open; index.html and config.json are replaced.
      prune: false,
      distribution: this.distribution,
      distributionPaths: ['/index.html', '/config.json'],
      memoryLimit: 512,
    });

    this.acknowledgeFindings();
  }

  private acknowledgeFindings(): void {
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason: 'The console and API serve customers wherever they are; no country is restricted by design.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason:
          "The API behind it has its own regional WAF web ACL (ApiFirewall); the console's files are static and public by design.",
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'The distribution uses its default *.cloudfront.net certificate, whose minimum protocol CloudFront fixes; a custom domain and certificate (TLSv1.2_2021) is a deployment choice documented in docs/console.md.',
      },
    );
    // BucketDeployment's handler is a stack-wide singleton function (Custom::CDKBucketDeployment…) CDK writes and
    // manages; its role and runtime cannot be changed from here.
    const stack = Stack.of(this);
    const handler = stack.node.children.find((child) => child.node.id.startsWith('Custom::CDKBucketDeployment'));
    if (!handler) return;
    Validations.of(handler).acknowledge(
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason:
          "CDK's BucketDeployment handler (deploy time only): the managed policy only lets it write its CloudWatch logs.",
      },
      ...[
        'Action::s3:GetObject*',
        'Action::s3:GetBucket*',
        'Action::s3:List*',
        'Action::s3:Abort*',
        'Action::s3:DeleteObject*',
        'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
        `Resource::<${stack.getLogicalId(this.bucket.node.defaultChild as CfnResource)}.Arn>/*`,
        'Resource::*',
      ].map((finding) => ({
        id: `AwsSolutions-IAM5[${finding}]`,
        reason:
          "CDK's BucketDeployment handler (deploy time only) reads the console's asset from CDK's asset bucket, writes " +
          "the console bucket's objects, and invalidates the distribution (CloudFront's CreateInvalidation takes no " +
          'resource narrower than *); CDK generates this policy.',
      })),
      {
        id: 'AwsSolutions-L1',
        reason: "CDK's BucketDeployment handler's runtime is chosen by the CDK release, not by this stack.",
      },
    );
  }
}

/**
 * The shared headers as CloudFront's security headers behaviour, each overriding what an origin sends (the API's
 * answers included). A value CloudFront's enums do not have is an error, not a header left out.
 */
export function cloudFrontSecurityHeaders(headers: ConsoleSecurityHeaders): ResponseSecurityHeadersBehavior {
  const frameOption = Object.values(HeadersFrameOption).find((option) => option === headers.frameOptions);
  const referrerPolicy = Object.values(HeadersReferrerPolicy).find((policy) => policy === headers.referrerPolicy);
  if (!frameOption || !referrerPolicy) {
    throw new Error(
      `CloudFront has no ${headers.frameOptions} frame option or ${headers.referrerPolicy} referrer policy`,
    );
  }
  const hsts = headers.strictTransportSecurity;
  return {
    contentSecurityPolicy: { contentSecurityPolicy: headers.contentSecurityPolicy, override: true },
    ...(hsts
      ? {
          strictTransportSecurity: {
            accessControlMaxAge: Duration.seconds(hsts.maxAgeSeconds),
            includeSubdomains: hsts.includeSubdomains,
            override: true,
          },
        }
      : {}),
    frameOptions: { frameOption, override: true },
    // CloudFront's only value: nosniff.
    contentTypeOptions: { override: true },
    referrerPolicy: { referrerPolicy, override: true },
  };
}

/** CDK's local bundling of the console: `vite build` into the asset's output folder. */
function buildConsoleInto(outputDir: string): boolean {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'scripts/build-web.ts'), '--out', outputDir],
    { cwd: ROOT, encoding: 'utf8', timeout: 300_000 },
  );
  if (result.status !== 0) throw new Error(`the console did not build:\n${result.stdout}\n${result.stderr}`);
  return true;
}
