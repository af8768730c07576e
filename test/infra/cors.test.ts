/**
 * CORS in AWS under each value of `-c corsAllowedOrigins`: API Gateway's preflight methods, the functions' CORS_ALLOWED_ORIGINS
 * (which lambdas/shared/http.ts answers by), the gateway responses and the WAF's 429 all say the same. The local
 * runtime's side, from a browser, is test/integration/cors.test.ts. Under each setting, with either knowledge index,
 * every template (the stack's and each nested stack's) keeps room under CloudFormation's 500 resources.
 */
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { corsAllowMethods } from '#shared/cors';
import { readConfig } from '../../bin/app';
import { ROUTES } from '../../lib/routes';
import { type Synthesized, synthesizeUnbundled } from '../helpers/synth';

const CONSOLE = 'https://console.example.com';
const PARTNER = 'https://partner.example.org';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}

const synths: Record<string, Synthesized> = {};
/** The same settings with `-c knowledgeIndex=dynamodb` (LocalStack's): a chunk table instead of Bedrock's resources. */
const dynamodbSynths: Record<string, Synthesized> = {};

/** Resources a template may hold: CloudFormation takes 500; the rest is room for the routes to come. */
const RESOURCES_PER_TEMPLATE = 400;

const SETTINGS: Record<string, Record<string, string>> = {
  none: {},
  one: { corsAllowedOrigins: CONSOLE },
  two: { corsAllowedOrigins: `${CONSOLE},${PARTNER}` },
  any: { corsAllowedOrigins: '*' },
};

beforeAll(() => {
  for (const [setting, context] of Object.entries(SETTINGS)) {
    synths[setting] = synthesizeUnbundled(context);
    dynamodbSynths[setting] = synthesizeUnbundled({ ...context, knowledgeIndex: 'dynamodb' });
  }
});
afterAll(() => {
  for (const synth of [...Object.values(synths), ...Object.values(dynamodbSynths)]) synth.dispose();
});

/** Every synthesized setting, named `<CORS setting>` or `<CORS setting>, knowledgeIndex=dynamodb`. */
const everySetting = (): [string, Synthesized][] => [
  ...Object.entries(synths),
  ...Object.entries(dynamodbSynths).map(([setting, synth]): [string, Synthesized] => [
    `${setting}, knowledgeIndex=dynamodb`,
    synth,
  ]),
];

/** `AgentPlatformStack…KnowledgeRoutes1234ABCD.nested.template.json` → `KnowledgeRoutes`; the stack's own: `stack`. */
const templateName = (file: string): string =>
  path
    .basename(file)
    .replace(/^AgentPlatformStack(PlatformApi)?/, '')
    .replace(/([0-9A-F]{8}\.nested)?\.template\.json$/, '') || 'stack';

const resources = (synth: Synthesized, type: string): Resource[] =>
  Object.values(synth.template.findResources(type)) as Resource[];

const preflights = (synth: Synthesized) =>
  resources(synth, 'AWS::ApiGateway::Method').filter((method) => method.Properties.HttpMethod === 'OPTIONS');

/** The headers the preflight's mock integration answers with (name → API Gateway's quoted literal). */
function preflightHeaders(synth: Synthesized): Record<string, string> {
  const integration = preflights(synth)[0].Properties.Integration as {
    IntegrationResponses: { ResponseParameters: Record<string, string> }[];
  };
  return Object.fromEntries(
    Object.entries(integration.IntegrationResponses[0].ResponseParameters).map(([key, value]) => [
      key.replace('method.response.header.', ''),
      value,
    ]),
  );
}

/** Response headers of every gateway response, by response type. */
function gatewayHeaders(synth: Synthesized): Record<string, Record<string, string>> {
  return Object.fromEntries(
    resources(synth, 'AWS::ApiGateway::GatewayResponse').map((response) => [
      response.Properties.ResponseType as string,
      Object.fromEntries(
        Object.entries((response.Properties.ResponseParameters ?? {}) as Record<string, string>).map(([k, v]) => [
          k.replace('gatewayresponse.header.', ''),
          v,
        ]),
      ),
    ]),
  );
}

/** CORS_ALLOWED_ORIGINS of every API function (undefined where unset). */
function functionSettings(synth: Synthesized): Set<string | undefined> {
  const ids = Object.values(synth.stack.api.functions).map((fn) =>
    synth.stack.getLogicalId(fn.node.defaultChild as never),
  );
  return new Set(
    ids.map((id) => {
      const properties = synth.template.toJSON().Resources[id].Properties as {
        Environment: { Variables: Record<string, string> };
      };
      return properties.Environment.Variables.CORS_ALLOWED_ORIGINS;
    }),
  );
}

function wafRateHeaders(synth: Synthesized): { Name: string; Value: string }[] {
  const acl = resources(synth, 'AWS::WAFv2::WebACL')[0].Properties as {
    Rules: {
      Name: string;
      Action?: { Block?: { CustomResponse: { ResponseHeaders: { Name: string; Value: string }[] } } };
    }[];
  };
  return acl.Rules.find((rule) => rule.Name === 'RateLimitPerSourceIp')?.Action?.Block?.CustomResponse
    .ResponseHeaders as { Name: string; Value: string }[];
}

describe('by default (same origin only, the console behind the same CloudFront)', () => {
  it('has no preflight methods, and no answer names an origin', () => {
    expect(preflights(synths.none)).toEqual([]);
    for (const headers of Object.values(gatewayHeaders(synths.none))) {
      expect(Object.keys(headers).filter((name) => name.startsWith('Access-Control'))).toEqual([]);
    }
    expect(functionSettings(synths.none)).toEqual(new Set([undefined]));
    expect(wafRateHeaders(synths.none).map((header) => header.Name)).toEqual(['Retry-After']);
  });
});

describe('with one origin', () => {
  it('answers preflights for that origin with the route table’s methods, the request headers and a max age', () => {
    expect(preflights(synths.one).length).toBeGreaterThan(ROUTES.length / 2);
    expect(preflightHeaders(synths.one)).toMatchObject({
      'Access-Control-Allow-Origin': `'${CONSOLE}'`,
      'Access-Control-Allow-Methods': `'${corsAllowMethods(ROUTES).join(',')}'`,
      'Access-Control-Allow-Headers': "'Authorization,Content-Type,X-Organization-Id'",
      'Access-Control-Max-Age': "'600'",
    });
    for (const method of preflights(synths.one)) expect(method.Properties.AuthorizationType).toBe('NONE');
  });

  it('gives the functions the origin, and every gateway response and the WAF’s 429 that origin and Retry-After', () => {
    expect(functionSettings(synths.one)).toEqual(new Set([CONSOLE]));
    const gateway = gatewayHeaders(synths.one);
    expect(Object.keys(gateway).sort()).toEqual(
      [
        'ACCESS_DENIED',
        'DEFAULT_4XX',
        'DEFAULT_5XX',
        'MISSING_AUTHENTICATION_TOKEN',
        'THROTTLED',
        'UNAUTHORIZED',
        'WAF_FILTERED',
      ].sort(),
    );
    for (const headers of Object.values(gateway)) {
      expect(headers).toMatchObject({
        'Access-Control-Allow-Origin': `'${CONSOLE}'`,
        'Access-Control-Expose-Headers':
          "'Retry-After,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy'",
      });
    }
    expect(wafRateHeaders(synths.one)).toEqual([
      { Name: 'Retry-After', Value: '60' },
      { Name: 'Access-Control-Allow-Origin', Value: CONSOLE },
      {
        Name: 'Access-Control-Expose-Headers',
        Value: 'Retry-After,RateLimit-Limit,RateLimit-Remaining,RateLimit-Reset,RateLimit-Policy',
      },
    ]);
  });
});

describe('with two origins', () => {
  it('answers each origin’s preflight with that origin (API Gateway picks it from the request)', () => {
    const integration = preflights(synths.two)[0].Properties.Integration as {
      IntegrationResponses: { ResponseTemplates: Record<string, string> }[];
    };
    const template = integration.IntegrationResponses[0].ResponseTemplates['application/json'];
    // CDK's way: the first origin as the fixed value, replaced by the request's Origin when it is another listed one.
    expect(preflightHeaders(synths.two)['Access-Control-Allow-Origin']).toBe(`'${CONSOLE}'`);
    expect(template).toContain(`#if($origin == "${PARTNER}")`);
    expect(template).toContain('#set($context.responseOverride.header.Access-Control-Allow-Origin = $origin)');
    expect(preflightHeaders(synths.two).Vary).toBe("'Origin'");
    expect(functionSettings(synths.two)).toEqual(new Set([`${CONSOLE},${PARTNER}`]));
  });

  it('lets the fixed-text answers of the edge be read by any page, as one fixed value cannot name both', () => {
    for (const headers of Object.values(gatewayHeaders(synths.two))) {
      expect(headers['Access-Control-Allow-Origin']).toBe("'*'");
    }
  });
});

describe('with *', () => {
  it('allows every origin everywhere, never with credentials', () => {
    expect(preflightHeaders(synths.any)['Access-Control-Allow-Origin']).toBe("'*'");
    expect(preflightHeaders(synths.any)['Access-Control-Allow-Credentials']).toBeUndefined();
    expect(functionSettings(synths.any)).toEqual(new Set(['*']));
    expect(gatewayHeaders(synths.any).UNAUTHORIZED['Access-Control-Allow-Origin']).toBe("'*'");
  });
});

it('keeps the upload bucket’s CORS at any origin for PUT under every setting', () => {
  for (const [, synth] of everySetting()) {
    synth.template.hasResourceProperties('AWS::S3::Bucket', {
      CorsConfiguration: {
        CorsRules: [{ AllowedMethods: ['PUT'], AllowedOrigins: ['*'], AllowedHeaders: ['*'], MaxAge: 3000 }],
      },
    });
  }
});

it(`keeps every template within ${RESOURCES_PER_TEMPLATE} of CloudFormation’s 500 resources under every setting, preflights included`, () => {
  for (const [setting, synth] of everySetting()) {
    const counts = synth.templates.map((t) => ({
      template: templateName(t.file),
      resources: Object.keys(t.template.Resources).length,
    }));
    process.stderr.write(
      `[stack] CORS ${setting}: ${counts.map((c) => `${c.template} ${c.resources}`).join(', ')} resources of 500\n`,
    );
    // The stack's own and one per area of the route table.
    expect(counts.length).toBe(1 + Object.keys(synth.stack.api.areaStacks).length);
    for (const count of counts) {
      expect({ setting, ...count, within: count.resources <= RESOURCES_PER_TEMPLATE }).toEqual({
        setting,
        ...count,
        within: true,
      });
    }
    // The deployed whole is every resource of every template but the nested stacks themselves.
    const nestedStacks = counts.length - 1;
    const total = counts.reduce((sum, c) => sum + c.resources, 0);
    expect(Object.keys(synth.template.toJSON().Resources)).toHaveLength(total - nestedStacks);
  }
});

it('satisfies cdk-nag under every setting', () => {
  for (const [, synth] of everySetting()) expect(synth.violations).toEqual([]);
});

it.each([
  ['https://console.example.com/app', /context corsAllowedOrigins entry "https:\/\/console.example.com\/app"/],
  ['*,https://console.example.com', /context corsAllowedOrigins is either \* alone/],
])('refuses -c corsAllowedOrigins=%s', (value, message) => {
  expect(() => readConfig(new App({ context: { corsAllowedOrigins: value } }))).toThrow(message);
});
