/**
 * The API's edge in AWS: a WAF web ACL on the API Gateway stage with a per-source-IP rate rule, a per-source-IP rule of
 * sign-ups, AWS's managed common rule set and its known-bad-inputs set. Per-organization limits are not the firewall's: it sees addresses, not
 * tokens.
 */

import { Duration, Stack } from 'aws-cdk-lib';
import { ResponseType, type RestApi } from 'aws-cdk-lib/aws-apigateway';
import { type IMetric, MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { CORS_EXPOSE_HEADERS, type CorsPolicy, edgeAllowOrigin } from '#shared/cors';
import { routeById, SIGN_UP_ROUTES } from '../routes';
import { type EdgeIdentity, ORIGIN_VERIFY_HEADER, VIEWER_ADDRESS_HEADER } from './edge-identity';
import { gatewayCorsHeaders } from './platform-api';

/** Requests one source address may send in five minutes (WAF's window) before it is answered 429. */
export const DEFAULT_RATE_LIMIT_PER_5_MINUTES = 2000;

/**
 * Sign-ups (and organizations founded: SIGN_UP_ROUTES) one source address may make in five minutes: WAF's smallest
 * rate limit, 10. The local runtime counts the same (lib/local/client-limits.ts).
 */
export const DEFAULT_SIGNUP_LIMIT_PER_5_MINUTES = 10;

/**
 * Retry-After of the rate rule's 429. WAF re-counts the last five minutes every few seconds and lifts a block within
 * about 30 s of the count falling under the limit; how long that takes depends on how the address's requests spread
 * over the window, so a minute is a fair first wait, not a promise.
 */
export const RATE_LIMITED_RETRY_AFTER_SECONDS = 60;

/** The handlers' error body (lambdas/shared/http.ts). */
const errorBody = (code: string, message: string): string =>
  JSON.stringify({ success: false, error: { code, message, details: [] } });

export interface ApiFirewallProps {
  /** The API whose deployment stage the web ACL guards. */
  readonly api: RestApi;
  /** Requests per source IP per five minutes (default DEFAULT_RATE_LIMIT_PER_5_MINUTES); WAF allows 10 to 2e9. */
  readonly rateLimitPer5Minutes?: number;
  /** The API's CORS policy (PlatformApi.cors): the block responses carry the same Allow-Origin as its gateway responses. */
  readonly cors?: CorsPolicy;
  /**
   * The console's CloudFront distribution in front of the API (edge-identity.ts): its requests are counted by the
   * viewer's address it sends, not by CloudFront's own; every other request by its source address.
   */
  readonly edgeIdentity?: EdgeIdentity;
}

/** Metric names of the web ACL and of its rate rule: WAF's CloudWatch dimensions `WebACL` and `Rule`. */
const WEB_ACL_METRIC = 'AgentPlatformApi';
const RATE_RULE_METRIC = 'RateLimitPerSourceIp';
const SIGNUP_RULE_METRIC = 'SignUpLimitPerSourceIp';
const VIEWER_RATE_RULE_METRIC = 'RateLimitPerViewerAddress';
const VIEWER_SIGNUP_RULE_METRIC = 'SignUpLimitPerViewerAddress';

export class ApiFirewall extends Construct {
  public readonly webAcl: CfnWebACL;

  /**
   * RateLimited: requests the rate rule answered 429, from WAF's own metrics (AWS/WAFV2 BlockedRequests of the rule).
   * The service emits no metric of its own for it: the request never reaches a function.
   */
  rateLimitedMetric(): IMetric {
    const blocked = (rule: string) =>
      new Metric({
        namespace: 'AWS/WAFV2',
        metricName: 'BlockedRequests',
        dimensionsMap: { WebACL: WEB_ACL_METRIC, Rule: rule, Region: Stack.of(this).region },
        statistic: 'Sum',
        period: Duration.minutes(5),
        label: 'RateLimited',
      });
    if (!this.countsViewers) return blocked(RATE_RULE_METRIC);
    return new MathExpression({
      expression: 'FILL(direct, 0) + FILL(viewers, 0)',
      usingMetrics: { direct: blocked(RATE_RULE_METRIC), viewers: blocked(VIEWER_RATE_RULE_METRIC) },
      period: Duration.minutes(5),
      label: 'RateLimited',
    });
  }

  /** True when console requests are counted by the viewer's address (an EdgeIdentity was given). */
  private readonly countsViewers: boolean;

  constructor(scope: Construct, id: string, props: ApiFirewallProps) {
    super(scope, id);
    this.countsViewers = props.edgeIdentity !== undefined;
    const limit = props.rateLimitPer5Minutes ?? DEFAULT_RATE_LIMIT_PER_5_MINUTES;
    if (!Number.isInteger(limit) || limit < 10 || limit > 2_000_000_000) {
      throw new Error(`The WAF rate limit must be a whole number from 10 to 2000000000, got ${limit}`);
    }
    const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    const managed = (priority: number, name: string, overrides?: CfnWebACL.RuleActionOverrideProperty[]) => ({
      name,
      priority,
      overrideAction: { none: {} },
      statement: {
        managedRuleGroupStatement: {
          vendorName: 'AWS',
          name,
          ...(overrides ? { ruleActionOverrides: overrides } : {}),
        },
      },
      visibilityConfig: visibility(name),
    });

    const headers = rateLimitedHeaders(props.cors ?? { kind: 'same-origin' });
    const block = (bodyKey: string): CfnWebACL.RuleActionProperty => ({
      block: { customResponse: { responseCode: 429, customResponseBodyKey: bodyKey, responseHeaders: headers } },
    });
    // A request through the console's distribution carries the edge's secret; only those are counted by the viewer
    // address CloudFront sets, the rest by their source address (edge-identity.ts).
    const fromEdge: CfnWebACL.StatementProperty | undefined = props.edgeIdentity && {
      byteMatchStatement: {
        // singleHeader is passed to CloudFormation as written: its key is `Name`.
        fieldToMatch: { singleHeader: { Name: ORIGIN_VERIFY_HEADER } },
        positionalConstraint: 'EXACTLY',
        searchString: props.edgeIdentity.secretValue,
        textTransformations: [{ priority: 0, type: 'NONE' }],
      },
    };
    const both = (
      ...statements: (CfnWebACL.StatementProperty | undefined)[]
    ): CfnWebACL.StatementProperty | undefined => {
      // An `and` of `and`s is one `and` of all their statements.
      const present = statements
        .filter((statement) => statement !== undefined)
        .flatMap(
          (statement) =>
            ((statement.andStatement as CfnWebACL.AndStatementProperty | undefined)?.statements as
              | CfnWebACL.StatementProperty[]
              | undefined) ?? [statement],
        );
      return present.length > 1 ? { andStatement: { statements: present } } : present[0];
    };
    const perSource = (scopeDown: CfnWebACL.StatementProperty | undefined, ruleLimit: number) => ({
      rateBasedStatement: {
        limit: ruleLimit,
        aggregateKeyType: 'IP',
        evaluationWindowSec: 300,
        ...(scopeDown ? { scopeDownStatement: scopeDown } : {}),
      },
    });
    const perViewer = (scopeDown: CfnWebACL.StatementProperty, ruleLimit: number) => ({
      rateBasedStatement: {
        limit: ruleLimit,
        aggregateKeyType: 'FORWARDED_IP',
        // CloudFront always sets it on these requests; MATCH counts a request without it rather than letting it by.
        forwardedIpConfig: { headerName: VIEWER_ADDRESS_HEADER, fallbackBehavior: 'MATCH' },
        evaluationWindowSec: 300,
        scopeDownStatement: scopeDown,
      },
    });
    const direct = fromEdge && { notStatement: { statement: fromEdge } };
    const rateRules: CfnWebACL.RuleProperty[] = [
      {
        name: RATE_RULE_METRIC,
        priority: 0,
        action: block('rateLimited'),
        statement: perSource(direct, limit),
        visibilityConfig: visibility(RATE_RULE_METRIC),
      },
      {
        // No token pays for a sign-up: each makes an organization with a rate budget of its own.
        name: SIGNUP_RULE_METRIC,
        priority: 1,
        action: block('signUpLimited'),
        statement: perSource(both(signUpPaths(), direct), DEFAULT_SIGNUP_LIMIT_PER_5_MINUTES),
        visibilityConfig: visibility(SIGNUP_RULE_METRIC),
      },
      ...(fromEdge
        ? [
            {
              name: VIEWER_RATE_RULE_METRIC,
              priority: 2,
              action: block('rateLimited'),
              statement: perViewer(fromEdge, limit),
              visibilityConfig: visibility(VIEWER_RATE_RULE_METRIC),
            },
            {
              name: VIEWER_SIGNUP_RULE_METRIC,
              priority: 3,
              action: block('signUpLimited'),
              statement: perViewer(
                both(signUpPaths(), fromEdge) as CfnWebACL.StatementProperty,
                DEFAULT_SIGNUP_LIMIT_PER_5_MINUTES,
              ),
              visibilityConfig: visibility(VIEWER_SIGNUP_RULE_METRIC),
            },
          ]
        : []),
    ];

    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      description: 'Agent platform API: per-IP rate limit and AWS managed rules',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(WEB_ACL_METRIC),
      customResponseBodies: {
        rateLimited: {
          contentType: 'APPLICATION_JSON',
          content: errorBody(
            'RATE_LIMITED',
            `More than ${limit} requests from this address in five minutes; retry in a minute or more`,
          ),
        },
        signUpLimited: {
          contentType: 'APPLICATION_JSON',
          content: errorBody(
            'RATE_LIMITED',
            `More than ${DEFAULT_SIGNUP_LIMIT_PER_5_MINUTES} sign-ups from this address in five minutes; retry later`,
          ),
        },
      },
      rules: [
        ...rateRules,
        // SizeRestrictions_BODY blocks bodies over 8 KB, and flow definitions and document metadata are larger:
        // it only counts, the handlers bound bodies themselves (1 MiB, 413 PAYLOAD_TOO_LARGE).
        managed(rateRules.length, 'AWSManagedRulesCommonRuleSet', [
          { name: 'SizeRestrictions_BODY', actionToUse: { count: {} } },
        ]),
        managed(rateRules.length + 1, 'AWSManagedRulesKnownBadInputsRuleSet'),
      ],
    });

    new CfnWebACLAssociation(this, 'StageAssociation', {
      resourceArn: props.api.deploymentStage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });

    // A request a managed rule blocks gets the API's JSON error shape, naming the firewall, instead of WAF's bare 403.
    props.api.addGatewayResponse('WafFiltered', {
      type: ResponseType.WAF_FILTERED,
      statusCode: '403',
      responseHeaders: gatewayCorsHeaders(props.cors ?? { kind: 'same-origin' }),
      templates: {
        'application/json': errorBody('REQUEST_BLOCKED', 'The API firewall (AWS WAF) refused this request'),
      },
    });
  }
}

/**
 * The requests of SIGN_UP_ROUTES: a POST whose path ends in one of their paths (WAF sees the stage in front of it, and
 * CloudFront's origin path). Their paths have no parameters.
 */
function signUpPaths(): CfnWebACL.StatementProperty {
  const paths = SIGN_UP_ROUTES.map((id) => routeById(id).path);
  const endsWith = (path: string): CfnWebACL.StatementProperty => ({
    byteMatchStatement: {
      fieldToMatch: { uriPath: {} },
      positionalConstraint: 'ENDS_WITH',
      searchString: path,
      textTransformations: [{ priority: 0, type: 'LOWERCASE' }],
    },
  });
  const post: CfnWebACL.StatementProperty = {
    byteMatchStatement: {
      fieldToMatch: { method: {} },
      positionalConstraint: 'EXACTLY',
      searchString: 'POST',
      textTransformations: [{ priority: 0, type: 'NONE' }],
    },
  };
  return { andStatement: { statements: [post, { orStatement: { statements: paths.map(endsWith) } }] } };
}

function rateLimitedHeaders(cors: CorsPolicy): CfnWebACL.CustomHTTPHeaderProperty[] {
  const origin = edgeAllowOrigin(cors);
  return [
    { name: 'Retry-After', value: String(RATE_LIMITED_RETRY_AFTER_SECONDS) },
    ...(origin === undefined
      ? []
      : [
          { name: 'Access-Control-Allow-Origin', value: origin },
          { name: 'Access-Control-Expose-Headers', value: CORS_EXPOSE_HEADERS.join(',') },
        ]),
  ];
}
