/**
 * Throttling at the API's edge: the stage's throttle (API Gateway's THROTTLED gateway response) and the WAF's rate
 * rule both answer 429 RATE_LIMITED in the API's error shape with a Retry-After header, so a client handles one 429
 * whoever sent it. A throttled dependency inside a handler is test/api/throttled-dependencies.test.ts's.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { THROTTLE_RETRY_AFTER_SECONDS } from '../../lib/constructs/platform-api';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

let synthesized: Synthesized;

beforeAll(() => {
  synthesized = synthesizeUnbundled();
});
afterAll(() => synthesized?.dispose());

/** A gateway response's body as API Gateway sends it (the template has no VTL to substitute). */
function gatewayResponse(type: string): {
  StatusCode?: string;
  ResponseParameters?: Record<string, string>;
  body: unknown;
} {
  const found = Object.values(
    synthesized.template.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: type } }),
  );
  expect(found).toHaveLength(1);
  const properties = found[0].Properties as {
    StatusCode?: string;
    ResponseParameters?: Record<string, string>;
    ResponseTemplates: Record<string, string>;
  };
  return { ...properties, body: JSON.parse(properties.ResponseTemplates['application/json']) };
}

it('answers the stage throttle with 429 RATE_LIMITED and Retry-After: 1', () => {
  const throttled = gatewayResponse('THROTTLED');
  expect(throttled.StatusCode).toBe('429');
  expect(throttled.body).toEqual({
    success: false,
    error: { code: 'RATE_LIMITED', message: 'Too many requests to this API; retry in 1 second', details: [] },
  });
  expect(throttled.ResponseParameters).toEqual({ 'gatewayresponse.header.Retry-After': "'1'" });
  expect(THROTTLE_RETRY_AFTER_SECONDS).toBe(1);
});

it('keeps the stage throttle it answers for (burst 1,000, 500 requests a second: ten organizations)', () => {
  synthesized.template.hasResourceProperties('AWS::ApiGateway::Stage', {
    MethodSettings: Match.arrayWith([Match.objectLike({ ThrottlingBurstLimit: 1000, ThrottlingRateLimit: 500 })]),
  });
});

it('answers with the same code as the WAF rate rule, whose 429 carries Retry-After: 60', () => {
  const acl = Object.values(synthesized.template.findResources('AWS::WAFv2::WebACL'))[0].Properties as {
    Rules: { Name: string; Action?: { Block?: { CustomResponse: WafResponse } } }[];
    CustomResponseBodies: Record<string, { Content: string }>;
  };
  const response = acl.Rules.find((r) => r.Name === 'RateLimitPerSourceIp')?.Action?.Block?.CustomResponse;
  expect(response?.ResponseCode).toBe(429);
  expect(response?.ResponseHeaders).toEqual([{ Name: 'Retry-After', Value: '60' }]);
  const body = JSON.parse(acl.CustomResponseBodies[response?.CustomResponseBodyKey ?? ''].Content);
  expect(body.error.code).toBe('RATE_LIMITED');
});

interface WafResponse {
  ResponseCode: number;
  CustomResponseBodyKey: string;
  ResponseHeaders: { Name: string; Value: string }[];
}

it('satisfies cdk-nag', () => {
  expect(synthesized.violations).toEqual([]);
});
