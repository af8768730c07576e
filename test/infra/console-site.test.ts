/**
 * The console in AWS (lib/constructs/console-site.ts, docs/console.md "In AWS"), read from the synthesized template:
 * a private bucket read only through origin access control; the API's paths routed to the REST API uncached with
 * the viewer's headers; SPA routing by a CloudFront function (run here on sample paths); the security headers (the
 * shared function's, lib/console-security-headers.ts); and /config.json written from the stack's own user pool.
 * `-c console=off` leaves it all out.
 */
import { runInNewContext } from 'node:vm';
import { consoleSecurityHeaders } from '../../lib/console-security-headers';
import { API_PATH_PATTERNS, SPA_ROUTING_CODE } from '../../lib/constructs/console-site';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

type Json = Record<string, unknown>;

let synth: Synthesized;
let off: Synthesized;

beforeAll(() => {
  synth = synthesizeUnbundled();
  off = synthesizeUnbundled({ console: 'off' });
});
afterAll(() => {
  synth?.dispose();
  off?.dispose();
});

const only = (type: string, from = synth): Json => {
  const found = Object.values(from.template.findResources(type)) as { Properties: Json }[];
  expect(found).toHaveLength(1);
  return found[0].Properties;
};

function distribution(): Json {
  return only('AWS::CloudFront::Distribution').DistributionConfig as Json;
}

it('keeps the files in a private, encrypted, TLS-only bucket that only the distribution reads (OAC)', () => {
  const files = synth.stack.console?.bucket;
  if (!files) throw new Error('no console bucket');
  const bucket = synth.template.toJSON().Resources[synth.stack.getLogicalId(files.node.defaultChild as never)]
    .Properties as Json;
  expect(bucket.PublicAccessBlockConfiguration).toEqual({
    BlockPublicAcls: true,
    BlockPublicPolicy: true,
    IgnorePublicAcls: true,
    RestrictPublicBuckets: true,
  });
  expect(JSON.stringify(bucket.BucketEncryption)).toContain('AES256');
  expect(bucket.LoggingConfiguration).toBeDefined();
  only('AWS::CloudFront::OriginAccessControl');
  const policies = Object.values(synth.template.findResources('AWS::S3::BucketPolicy')).map((r) =>
    JSON.stringify(r.Properties),
  );
  const reader = policies.find((policy) => policy.includes('cloudfront.amazonaws.com'));
  expect(reader).toContain('s3:GetObject');
  expect(reader).toContain('AWS:SourceArn');
  const origins = distribution().Origins as Json[];
  const s3 = origins.find((origin) => 'S3OriginConfig' in origin);
  expect(s3?.OriginAccessControlId).toBeDefined();
});

it('routes the API paths to the REST API stage, uncached, with the viewer headers but Host, every method', () => {
  const config = distribution();
  const behaviors = config.CacheBehaviors as Json[];
  expect(behaviors.map((b) => b.PathPattern)).toEqual([...API_PATH_PATTERNS]);
  const apiOrigin = (config.Origins as Json[]).find((origin) => 'CustomOriginConfig' in origin) as Json;
  expect(JSON.stringify(apiOrigin.DomainName)).toContain('execute-api');
  // The stage: "/" and the fourth segment of the stage's URL (https://<id>.execute-api.<region>.<suffix>/<stage>/).
  expect(JSON.stringify(apiOrigin.OriginPath)).toMatch(/^\{"Fn::Join":\["",\["\/",\{"Fn::Select":\[3,/);
  for (const behavior of behaviors) {
    expect(behavior).toMatchObject({
      TargetOriginId: apiOrigin.Id,
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      // AWS's managed policies: CachingDisabled, AllViewerExceptHostHeader.
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
    });
  }
  const byDefault = config.DefaultCacheBehavior as Json;
  expect(byDefault.ViewerProtocolPolicy).toBe('redirect-to-https');
  expect(config.DefaultRootObject).toBe('index.html');
  // No custom error responses: they would replace the API's own 403 and 404 answers with the console's page.
  expect(config.CustomErrorResponses).toBeUndefined();
});

it("answers a console route with index.html and leaves files alone (the viewer-request function's code)", () => {
  // The API behaviors' function (the viewer's address for the web ACL) is test/infra/api-firewall.test.ts's.
  const functions = Object.values(synth.template.findResources('AWS::CloudFront::Function')).map(
    (r) => r.Properties as Json,
  );
  const fn = functions.find((f) => f.FunctionCode === SPA_ROUTING_CODE) as Json;
  expect(fn).toBeDefined();
  const association = ((distribution().DefaultCacheBehavior as Json).FunctionAssociations as Json[])[0];
  expect(association.EventType).toBe('viewer-request');
  const route = (uri: string): string => {
    const handler = runInNewContext(`${SPA_ROUTING_CODE}; handler`) as (event: unknown) => { uri: string };
    return handler({ request: { uri } }).uri;
  };
  expect(['/', '/agents', '/agents/a1/knowledge/k1/playground', '/members'].map(route)).toEqual(
    Array(4).fill('/index.html'),
  );
  expect(['/config.json', '/assets/index-abc123.js', '/assets/index.css', '/favicon.ico'].map(route)).toEqual([
    '/config.json',
    '/assets/index-abc123.js',
    '/assets/index.css',
    '/favicon.ico',
  ]);
});

it('sends a CSP that lets the page reach only its origin, Cognito and the documents bucket; HSTS; no framing', () => {
  const config = only('AWS::CloudFront::ResponseHeadersPolicy').ResponseHeadersPolicyConfig as Json;
  const security = config.SecurityHeadersConfig as Json;
  const csp = JSON.stringify((security.ContentSecurityPolicy as Json).ContentSecurityPolicy);
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self';");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("object-src 'none'");
  expect(csp).toMatch(
    /connect-src 'self' https:\/\/cognito-idp\.[\s\S]*amazonaws\.com https:\/\/[\s\S]*RegionalDomainName/,
  );
  expect(csp).not.toMatch(/script-src[^;]*unsafe/);
  // Exactly the shared function's policy (the local runtime's too), given this stack's region and bucket.
  const shared = consoleSecurityHeaders({
    cognito: [`https://cognito-idp.${synth.stack.region}.amazonaws.com`],
    documents: [`https://${synth.stack.storage.bucket.bucketRegionalDomainName}`],
    https: true,
  });
  expect((security.ContentSecurityPolicy as Json).ContentSecurityPolicy).toEqual(
    synth.stack.resolve(shared.contentSecurityPolicy),
  );
  expect(security.StrictTransportSecurity).toMatchObject({
    AccessControlMaxAgeSec: 31_536_000,
    IncludeSubdomains: true,
    Override: true,
  });
  expect(security.FrameOptions).toMatchObject({ FrameOption: 'DENY', Override: true });
  expect(security.ContentTypeOptions).toMatchObject({ Override: true });
  expect(security.ReferrerPolicy).toEqual({ ReferrerPolicy: 'strict-origin-when-cross-origin', Override: true });
  // Every behaviour, the API's included, carries it.
  const policyId = (distribution().DefaultCacheBehavior as Json).ResponseHeadersPolicyId;
  for (const behavior of distribution().CacheBehaviors as Json[]) {
    expect(behavior.ResponseHeadersPolicyId).toEqual(policyId);
  }
});

it("writes /config.json at deploy from the stack's user pool and app client, the API on the same origin", () => {
  const deployment = only('Custom::CDKBucketDeployment');
  const markers = JSON.stringify(deployment.SourceMarkers);
  const userPool = synth.stack.getLogicalId(synth.stack.people.userPool.node.defaultChild as never);
  const client = synth.stack.getLogicalId(synth.stack.people.client.node.defaultChild as never);
  expect(markers).toContain(userPool);
  expect(markers).toContain(client);
  expect(deployment.Prune).toBe(false);
  expect(JSON.stringify(deployment.DistributionPaths)).toContain('/config.json');
  const outputs = synth.template.toJSON().Outputs as Json;
  expect(JSON.stringify(outputs.ConsoleUrl)).toContain('DomainName');
});

it('passes cdk-nag with each finding acknowledged; -c console=off leaves the console out', () => {
  expect(synth.violations).toEqual([]);
  expect(Object.keys(off.template.findResources('AWS::CloudFront::Distribution'))).toHaveLength(0);
  expect(Object.keys(off.template.findResources('Custom::CDKBucketDeployment'))).toHaveLength(0);
  expect(off.violations).toEqual([]);
});
