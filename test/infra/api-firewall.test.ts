/**
 * The WAF web ACL on the API stage (lib/constructs/api-firewall.ts), synthesized the way `cdk synth` builds the app
 * (bin/app.ts, cdk.json's context, cdk-nag): on by default, left out with `-c waf=off`. Bundling is skipped
 * (`aws:cdk:bundling-stacks`): test/infra/stack.test.ts bundles the handlers already.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runInNewContext } from 'node:vm';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { createApp, readConfig } from '../../bin/app';
import type { AgentPlatformStack } from '../../lib/agent-platform-stack';
import { deployedTemplate } from '../helpers/synth';

const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};

interface Synthesized {
  stack: AgentPlatformStack;
  template: Template;
  violations: unknown[];
}

const outdirs: string[] = [];

function synthesize(context: Record<string, unknown>): Synthesized {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-firewall-'));
  outdirs.push(outdir);
  const built = createApp({
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context },
    outdir,
  });
  // An unacknowledged cdk-nag finding makes synth() throw here, with the report as the message.
  const assembly = built.app.synth();
  const report = path.join(assembly.directory, 'validation-report.json');
  const violations = fs.existsSync(report)
    ? (
        JSON.parse(fs.readFileSync(report, 'utf8')) as { pluginReports: { violations: unknown[] }[] }
      ).pluginReports.flatMap((r) => r.violations)
    : [];
  // The deployed whole: the route functions' nested stacks merged into the stack's template (test/helpers/synth.ts).
  return { stack: built.stack, template: deployedTemplate(assembly.directory), violations };
}

/** The rule ids acknowledged on a construct (Validations.acknowledge), whatever namespace CDK gives them. */
function acknowledged(construct: IConstruct): string[] {
  return construct.node.metadata
    .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
    .flatMap((entry) => Object.keys(entry.data as Record<string, string>));
}

let on: Synthesized;
let off: Synthesized;

/** The statement true of requests through the console's distribution: its secret header, resolved at deploy. */
function fromEdge(): { ByteMatchStatement: { SearchString: string } } {
  const acl = Object.values(on.template.findResources('AWS::WAFv2::WebACL'))[0].Properties as {
    Rules: { Name: string; Statement: { RateBasedStatement: { ScopeDownStatement: unknown } } }[];
  };
  const statement = acl.Rules.find((rule) => rule.Name === 'RateLimitPerViewerAddress')?.Statement.RateBasedStatement
    .ScopeDownStatement as { ByteMatchStatement: { SearchString: string } };
  expect(statement).toEqual({
    ByteMatchStatement: {
      FieldToMatch: { SingleHeader: { Name: 'x-origin-verify' } },
      PositionalConstraint: 'EXACTLY',
      SearchString: expect.anything(),
      TextTransformations: [{ Priority: 0, Type: 'NONE' }],
    },
  });
  // A CloudFormation dynamic reference to the generated secret: the value itself is in no template.
  expect(JSON.stringify(statement.ByteMatchStatement.SearchString)).toContain('{{resolve:secretsmanager:');
  return statement;
}

beforeAll(() => {
  on = synthesize({});
  off = synthesize({ waf: 'off' });
});

afterAll(() => {
  for (const outdir of outdirs) fs.rmSync(outdir, { recursive: true, force: true });
});

describe('by default', () => {
  it('puts a regional web ACL that allows what no rule blocks', () => {
    on.template.resourceCountIs('AWS::WAFv2::WebACL', 1);
    on.template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Scope: 'REGIONAL',
      DefaultAction: { Allow: {} },
      VisibilityConfig: Match.objectLike({ CloudWatchMetricsEnabled: true, SampledRequestsEnabled: true }),
    });
  });

  it('limits each source IP to 2,000 requests in five minutes, answering 429 RATE_LIMITED in the API error shape', () => {
    on.template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Rules: Match.arrayWith([
        Match.objectLike({
          Name: 'RateLimitPerSourceIp',
          Priority: 0,
          Statement: { RateBasedStatement: { Limit: 2000, AggregateKeyType: 'IP', EvaluationWindowSec: 300 } },
          Action: { Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'rateLimited' } } },
        }),
      ]),
      CustomResponseBodies: Match.objectLike({
        rateLimited: {
          ContentType: 'APPLICATION_JSON',
          Content: Match.stringLikeRegexp('"success":false,"error":\\{"code":"RATE_LIMITED"'),
        },
      }),
    });
  });

  it('limits each source IP to 10 sign-ups (and organizations founded) in five minutes, answering 429', () => {
    on.template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Rules: Match.arrayWith([
        Match.objectLike({
          Name: 'SignUpLimitPerSourceIp',
          Priority: 1,
          Statement: {
            RateBasedStatement: {
              Limit: 10,
              AggregateKeyType: 'IP',
              EvaluationWindowSec: 300,
              ScopeDownStatement: {
                AndStatement: {
                  Statements: [
                    Match.objectLike({ ByteMatchStatement: Match.objectLike({ SearchString: 'POST' }) }),
                    {
                      OrStatement: {
                        Statements: ['/dashboard/signup', '/dashboard/me/organizations'].map((path) => ({
                          ByteMatchStatement: Match.objectLike({
                            FieldToMatch: { UriPath: {} },
                            PositionalConstraint: 'ENDS_WITH',
                            SearchString: path,
                          }),
                        })),
                      },
                    },
                    // Not through the console's distribution: those are counted by viewer (below).
                    { NotStatement: { Statement: fromEdge() } },
                  ],
                },
              },
            },
          },
          Action: { Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'signUpLimited' } } },
        }),
      ]),
      CustomResponseBodies: Match.objectLike({
        signUpLimited: {
          ContentType: 'APPLICATION_JSON',
          Content: Match.stringLikeRegexp('"code":"RATE_LIMITED".*sign-ups'),
        },
      }),
    });
  });

  it("runs AWS's common rule set with its 8 KB body rule only counting, and the known-bad-inputs set", () => {
    on.template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Rules: Match.arrayWith([
        Match.objectLike({
          Name: 'AWSManagedRulesCommonRuleSet',
          OverrideAction: { None: {} },
          Statement: {
            ManagedRuleGroupStatement: {
              VendorName: 'AWS',
              Name: 'AWSManagedRulesCommonRuleSet',
              RuleActionOverrides: [{ Name: 'SizeRestrictions_BODY', ActionToUse: { Count: {} } }],
            },
          },
        }),
        Match.objectLike({
          Name: 'AWSManagedRulesKnownBadInputsRuleSet',
          OverrideAction: { None: {} },
          Statement: {
            ManagedRuleGroupStatement: { VendorName: 'AWS', Name: 'AWSManagedRulesKnownBadInputsRuleSet' },
          },
        }),
      ]),
    });
  });

  it('is associated with the API stage', () => {
    const stageId = on.stack.getLogicalId(on.stack.api.api.deploymentStage.node.defaultChild as never);
    const apiId = on.stack.getLogicalId(on.stack.api.api.node.defaultChild as never);
    const aclId = on.stack.getLogicalId(on.stack.firewall?.webAcl as never);
    on.template.resourceCountIs('AWS::WAFv2::WebACLAssociation', 1);
    on.template.hasResourceProperties('AWS::WAFv2::WebACLAssociation', {
      WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] },
      ResourceArn: {
        'Fn::Join': ['', Match.arrayWith([':apigateway:', { Ref: apiId }, '/stages/', { Ref: stageId }])],
      },
    });
  });

  it('answers what a managed rule blocks with the API error shape (403 REQUEST_BLOCKED)', () => {
    on.template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'WAF_FILTERED',
      StatusCode: '403',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"REQUEST_BLOCKED"') },
    });
  });

  it('satisfies cdk-nag without acknowledging the missing-WAF rule (AwsSolutions-APIG3)', () => {
    expect(on.violations).toEqual([]);
    expect(acknowledged(on.stack.api.api.deploymentStage).filter((id) => id.endsWith('APIG3'))).toEqual([]);
  });
});

describe("console requests, which reach the API from CloudFront's addresses", () => {
  type Json = Record<string, unknown>;
  const rules = (from: Synthesized) =>
    (Object.values(from.template.findResources('AWS::WAFv2::WebACL'))[0].Properties as { Rules: Json[] }).Rules;

  it('are counted by the viewer address CloudFront sets, trusted only with the edge secret CloudFront sends', () => {
    const byName = Object.fromEntries(rules(on).map((rule) => [rule.Name, rule]));
    expect(rules(on).map((rule) => [rule.Name, rule.Priority])).toEqual([
      ['RateLimitPerSourceIp', 0],
      ['SignUpLimitPerSourceIp', 1],
      ['RateLimitPerViewerAddress', 2],
      ['SignUpLimitPerViewerAddress', 3],
      ['AWSManagedRulesCommonRuleSet', 4],
      ['AWSManagedRulesKnownBadInputsRuleSet', 5],
    ]);
    // Every other request (a caller of the API's own URL) is counted by its source address, as before.
    expect(byName.RateLimitPerSourceIp.Statement).toEqual({
      RateBasedStatement: {
        Limit: 2000,
        AggregateKeyType: 'IP',
        EvaluationWindowSec: 300,
        ScopeDownStatement: { NotStatement: { Statement: fromEdge() } },
      },
    });
    expect(byName.RateLimitPerViewerAddress).toMatchObject({
      Action: { Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'rateLimited' } } },
      Statement: {
        RateBasedStatement: {
          Limit: 2000,
          AggregateKeyType: 'FORWARDED_IP',
          ForwardedIPConfig: { HeaderName: 'x-viewer-address', FallbackBehavior: 'MATCH' },
          ScopeDownStatement: fromEdge(),
        },
      },
    });
    const signUps = byName.SignUpLimitPerViewerAddress.Statement as { RateBasedStatement: Json };
    expect(signUps.RateBasedStatement).toMatchObject({ Limit: 10, AggregateKeyType: 'FORWARDED_IP' });
    expect(JSON.stringify(signUps)).toContain('/dashboard/signup');
    expect(JSON.stringify(signUps)).toContain(JSON.stringify(fromEdge()));
  });

  it("the distribution sends the same secret to the API origin and sets the viewer's address itself", () => {
    const distribution = Object.values(on.template.findResources('AWS::CloudFront::Distribution'))[0].Properties
      .DistributionConfig as { Origins: Json[]; CacheBehaviors: Json[] };
    const apiOrigin = distribution.Origins.find((origin) => 'CustomOriginConfig' in origin);
    expect(apiOrigin?.OriginCustomHeaders).toEqual([
      { HeaderName: 'x-origin-verify', HeaderValue: fromEdge().ByteMatchStatement.SearchString },
    ]);
    const functions = on.template.findResources('AWS::CloudFront::Function');
    const [viewerId, viewer] = Object.entries(functions).find(([, fn]) =>
      String(fn.Properties.FunctionCode).includes('x-viewer-address'),
    ) as [string, { Properties: { FunctionCode: string } }];
    for (const behavior of distribution.CacheBehaviors) {
      expect(behavior.FunctionAssociations).toEqual([
        { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [viewerId, 'FunctionARN'] } },
      ]);
    }
    // What a viewer sends under that name is replaced by the address CloudFront saw.
    const handler = runInNewContext(`${viewer.Properties.FunctionCode}; handler`) as (event: unknown) => {
      headers: Record<string, { value: string }>;
    };
    const request = handler({
      viewer: { ip: '203.0.113.7' },
      request: { headers: { 'x-viewer-address': { value: '198.51.100.1' } } },
    });
    expect(request.headers['x-viewer-address']).toEqual({ value: '203.0.113.7' });
  });

  it('without the console there is no edge, no secret, and every request is counted by its source address', () => {
    const alone = synthesize({ console: 'off' });
    expect(rules(alone).map((rule) => rule.Name)).toEqual([
      'RateLimitPerSourceIp',
      'SignUpLimitPerSourceIp',
      'AWSManagedRulesCommonRuleSet',
      'AWSManagedRulesKnownBadInputsRuleSet',
    ]);
    expect(JSON.stringify(rules(alone))).not.toContain('x-origin-verify');
    expect(alone.template.findResources('AWS::SecretsManager::Secret')).toEqual({});
  });
});

describe('with -c waf=off', () => {
  it('leaves the web ACL, its association and its gateway response out', () => {
    off.template.resourceCountIs('AWS::WAFv2::WebACL', 0);
    off.template.resourceCountIs('AWS::WAFv2::WebACLAssociation', 0);
    expect(
      off.template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: 'WAF_FILTERED' } }),
    ).toEqual({});
    expect(off.stack.firewall).toBeUndefined();
  });

  it('acknowledges AwsSolutions-APIG3 with the reason, and cdk-nag reports nothing else', () => {
    expect(off.violations).toEqual([]);
    expect(
      acknowledged(off.stack.api.api.deploymentStage).filter((id) => id.endsWith('AwsSolutions-APIG3')),
    ).toHaveLength(1);
  });
});

describe('the context', () => {
  const config = (context: Record<string, unknown>) => readConfig(new App({ context }));

  it('takes waf on/off and a rate limit', () => {
    expect(config({})).toMatchObject({ waf: true, wafRateLimit: 2000 });
    expect(config({ waf: 'off' })).toMatchObject({ waf: false });
    expect(config({ waf: 'on', wafRateLimit: '500' })).toMatchObject({ waf: true, wafRateLimit: 500 });
  });

  it.each([
    [{ waf: 'no' }, /Invalid context waf="no"/],
    [{ wafRateLimit: '9' }, /Invalid context wafRateLimit="9"/],
    [{ wafRateLimit: '2.5' }, /Invalid context wafRateLimit="2.5"/],
    [{ wafRateLimit: 'many' }, /Invalid context wafRateLimit="many"/],
    [{ uploadUrlTtlSeconds: '0' }, /Invalid context uploadUrlTtlSeconds="0"/],
    [{ uploadUrlTtlSeconds: '604801' }, /Invalid context uploadUrlTtlSeconds="604801"/],
    [{ uploadUrlTtlSeconds: 'soon' }, /Invalid context uploadUrlTtlSeconds="soon"/],
  ])('refuses %j', (context, message) => {
    expect(() => config(context)).toThrow(message);
  });

  it('takes an upload URL lifetime, which the upload functions get', () => {
    expect(config({})).not.toHaveProperty('uploadUrlTtlSeconds');
    expect(config({ uploadUrlTtlSeconds: '60' })).toMatchObject({ uploadUrlTtlSeconds: 60 });
    const { stack, template, violations } = synthesize({ uploadUrlTtlSeconds: '60', waf: 'off' });
    expect(violations).toEqual([]);
    const fn = stack.api.functions.UploadLink;
    const uploadLink = template.toJSON().Resources[Stack.of(fn).getLogicalId(fn.node.defaultChild as never)];
    expect(uploadLink.Properties.Environment.Variables.UPLOAD_URL_TTL_SECONDS).toBe('60');
  });
});
