/**
 * How the API's firewall tells a console request's viewer from CloudFront's edge (docs/operations.md, "Rate limits
 * behind CloudFront"). Through the console's distribution, the API's regional web ACL sees CloudFront's edge
 * addresses, so a per-source-IP rule would count every viewer of one edge as one address. CloudFront therefore:
 * - sets `x-viewer-address` to the viewer's own address (a viewer-request function; whatever the viewer sent under
 *   that name is overwritten), which the web ACL counts instead of the source address; and
 * - sends `x-origin-verify` with a secret only CloudFront and the web ACL know (a Secrets Manager secret the stack
 *   generates, resolved by CloudFormation into both), so that a caller going to the API directly cannot claim a viewer
 *   address of its choice: without the secret a request is counted by its source address, as before.
 */
import { SecretValue, Validations } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

/** The header carrying the viewer's address, set by CloudFront. */
export const VIEWER_ADDRESS_HEADER = 'x-viewer-address';
/** The header carrying the edge's secret, set by CloudFront on every request to the API origin. */
export const ORIGIN_VERIFY_HEADER = 'x-origin-verify';

/** The viewer-request function of the API behaviors: the viewer's address, and nothing a viewer can choose. */
export const VIEWER_ADDRESS_CODE = `function handler(event) {
  var request = event.request;
  request.headers['${VIEWER_ADDRESS_HEADER}'] = { value: event.viewer.ip };
  return request;
}`;

export class EdgeIdentity extends Construct {
  /** The secret's value as a CloudFormation dynamic reference: resolved at deploy, never in the template. */
  public readonly secretValue: string;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const secret = new Secret(this, 'OriginVerifySecret', {
      description: 'Sent by the console distribution to the API; the web ACL trusts x-viewer-address only with it',
      generateSecretString: { excludePunctuation: true, passwordLength: 48 },
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        "No rotation: the value only proves a request came through this stack's CloudFront distribution, and a new " +
        'one takes a deploy of the distribution and the web ACL together; it grants nothing and no function reads it.',
    });
    this.secretValue = SecretValue.secretsManager(secret.secretArn).unsafeUnwrap();
  }
}
