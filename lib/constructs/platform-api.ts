/**
 * The REST API: one Lambda function per entry of ROUTES (lib/routes.ts; a dashboard mirror adds its method to its
 * customer route's function), each granted exactly the resources its route names, behind a cached Lambda REQUEST
 * authorizer. The route functions (each with its role, policy and API Gateway's permission to invoke it) are in one
 * nested stack per area of the route table (`HttpRoute.area`); the API itself, its resources, methods, authorizer and
 * stage stay in the parent stack with everything stateful (docs/ARCHITECTURE.md, "Stacks"). Error responses API
 * Gateway makes itself (no token, throttled, integration failure) carry the same JSON error shape as the handlers'
 * errors, and the same CORS policy (lambdas/shared/cors.ts) as the handlers' answers and the preflight.
 */
import { Duration, NestedStack, Stack, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
  Cors,
  type CorsOptions,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  RequestAuthorizer,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import type { Permission } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { DEFAULT_UPLOAD_SESSION_TTL_SECONDS, DEFAULT_UPLOAD_URL_TTL_SECONDS } from '#shared/config';
import {
  CORS_ALLOW_HEADERS,
  CORS_ALLOWED_ORIGINS_VARIABLE,
  CORS_EXPOSE_HEADERS,
  CORS_MAX_AGE_SECONDS,
  type CorsPolicy,
  corsAllowMethods,
  edgeAllowOrigin,
} from '#shared/cors';
import { AUTHORIZER, type HttpRoute, type ResourceAccess, ROUTE_AREAS, ROUTES, type RouteArea } from '../routes';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction } from './service-function';

export type { PlatformResources } from './resource-access';

export interface PlatformApiProps {
  /** API Gateway stage name; route paths carry their own version (`/api/v1/...`), so this is the deployment stage. */
  readonly stageName: string;
  readonly resources: PlatformResources;
  /** Upload settings every function receives (the handlers validate and default them). */
  readonly uploadUrlTtl?: Duration;
  /** The rate limit of every token and organization; unset, the handlers' default (50 a second, burst 100). */
  readonly rateLimit?: { readonly perSecond: number; readonly burst: number };
  /**
   * The stage's throttle, shared by every tenant: well above one organization's limit (bin/app.ts,
   * DEFAULT_API_THROTTLE_FACTOR), so one busy organization meets its own limit before everyone meets this one.
   */
  readonly apiThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  readonly uploadSessionTtl?: Duration;
  /** Largest document and largest ZIP archive: a larger declared `fileSize` is refused at upload-link. */
  readonly maxFileBytes: number;
  readonly maxArchiveBytes: number;
  /**
   * Which other origins' pages may read the answers (`-c corsAllowedOrigins=...`, CORS_ALLOWED_ORIGINS of the
   * functions). Default: none, the console is served from the API's own origin through CloudFront.
   */
  readonly cors?: CorsPolicy;
}

/**
 * Retry-After of the stage throttle's 429: the stage's token bucket refills at its rate limit (500 requests a second
 * by default), so a second from now there is room again unless every caller comes back at once.
 */
export const THROTTLE_RETRY_AFTER_SECONDS = 1;

/** The handlers' error body (lambdas/shared/http.ts); `messageJson` is a JSON literal or a VTL expression yielding one. */
function errorTemplate(code: string, messageJson: string): string {
  return `{"success":false,"error":{"code":"${code}","message":${messageJson},"details":[]}}`;
}

export const GATEWAY_ERROR_TEMPLATES = {
  UNAUTHORIZED: errorTemplate('UNAUTHORIZED', JSON.stringify('A valid bearer token is required')),
  ACCESS_DENIED: errorTemplate('FORBIDDEN', JSON.stringify('The token is not allowed to call this route')),
  // $context.error.messageString is $context.error.message already quoted as a JSON string.
  DEFAULT_4XX: errorTemplate('BAD_REQUEST', '$context.error.messageString'),
  DEFAULT_5XX: errorTemplate('INTERNAL_ERROR', JSON.stringify('Internal error')),
  // API Gateway's answer to a path, or a method of a path, that no route has (its own 403 "Missing Authentication
  // Token"): a 404 in the API's error shape, as the local router answers an unknown path.
  MISSING_AUTHENTICATION_TOKEN: errorTemplate('ROUTE_NOT_FOUND', JSON.stringify('No route for this method and path')),
  // The code the WAF's rate rule answers with too (api-firewall.ts): a client handles one 429, whoever sent it.
  THROTTLED: errorTemplate(
    'RATE_LIMITED',
    JSON.stringify(`Too many requests to this API; retry in ${THROTTLE_RETRY_AFTER_SECONDS} second`),
  ),
} as const;

export class PlatformApi extends Construct {
  public readonly api: RestApi;
  /** API Gateway's execution logs (errors only) of the stage, kept a month. */
  public readonly executionLogs: LogGroup;
  /** Base URL of the stage, without a trailing slash: route paths are appended to it as they are. */
  public readonly url: string;
  public readonly authorizer: RequestAuthorizer;
  public readonly authorizerFunction: ServiceFunction;
  /** The function of each route, by route id. */
  public readonly functions: Readonly<Record<string, ServiceFunction>>;
  /** The nested stack of each area of the route table that has routes: their functions, roles and permissions. */
  public readonly areaStacks: Readonly<Partial<Record<RouteArea, NestedStack>>>;
  /** The preflight of every routed resource, or undefined when the API is same-origin only. */
  private readonly corsPreflight: CorsOptions | undefined;
  /** The method of each route, by route id. */
  public readonly methods: Readonly<Record<string, Method>>;

  /** Who may read the answers from another origin; the firewall's block responses follow it too. */
  public readonly cors: CorsPolicy;

  private readonly resources: PlatformResources;
  private readonly commonEnvironment: Readonly<Record<string, string>>;
  /**
   * The log group of every route function and the authorizer: one, not one each, so each template keeps room under
   * CloudFormation's 500 resources (a route costs a function, a role, a policy, a method, a permission and often a path
   * resource already). Each line names its function (`function_name`, Powertools); the streams are Lambda's own. It
   * stays in the parent stack, with what holds data: the nested stacks' functions get its name as a parameter.
   */
  private readonly functionLogs: LogGroup;

  constructor(scope: Construct, id: string, props: PlatformApiProps) {
    super(scope, id);
    this.resources = props.resources;
    this.cors = props.cors ?? { kind: 'same-origin' };
    this.commonEnvironment = {
      ...corsEnvironment(this.cors),
      UPLOAD_URL_TTL_SECONDS: String(
        (props.uploadUrlTtl ?? Duration.seconds(DEFAULT_UPLOAD_URL_TTL_SECONDS)).toSeconds(),
      ),
      UPLOAD_SESSION_TTL_SECONDS: String(
        (props.uploadSessionTtl ?? Duration.seconds(DEFAULT_UPLOAD_SESSION_TTL_SECONDS)).toSeconds(),
      ),
      MAX_FILE_BYTES: String(props.maxFileBytes),
      ZIP_MAX_ARCHIVE_BYTES: String(props.maxArchiveBytes),
      ...(props.rateLimit
        ? {
            RATE_LIMIT_PER_SECOND: String(props.rateLimit.perSecond),
            RATE_LIMIT_BURST: String(props.rateLimit.burst),
          }
        : {}),
    };

    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: RetentionDays.ONE_MONTH });
    this.functionLogs = new LogGroup(this, 'FunctionLogs', { retention: RetentionDays.ONE_MONTH });
    this.api = new RestApi(this, 'RestApi', {
      // Per stage: the API's CloudWatch metrics are by API name, and dev's and prod's must not add up in one alarm.
      restApiName: `agent-platform-${props.stageName}`,
      description: 'Agent platform: knowledge documents and dashboard',
      endpointTypes: [EndpointType.REGIONAL],
      cloudWatchRole: true,
      deployOptions: {
        stageName: props.stageName,
        tracingEnabled: true,
        metricsEnabled: true,
        // Execution logs of errors only, without request or response bodies (those may carry end-user content); the
        // access log has a line per request already. Their log group is the stack's (executionLogs below).
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        throttlingBurstLimit: props.apiThrottle.burstLimit,
        throttlingRateLimit: props.apiThrottle.rateLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.custom(
          JSON.stringify({
            requestId: AccessLogField.contextRequestId(),
            requestTime: AccessLogField.contextRequestTime(),
            ip: AccessLogField.contextIdentitySourceIp(),
            method: AccessLogField.contextHttpMethod(),
            resourcePath: AccessLogField.contextResourcePath(),
            status: AccessLogField.contextStatus(),
            responseLength: AccessLogField.contextResponseLength(),
            responseLatency: AccessLogField.contextResponseLatency(),
            integrationLatency: AccessLogField.contextIntegrationLatency(),
            errorType: AccessLogField.contextErrorResponseType(),
            organizationId: '$context.authorizer.organizationId',
          }),
        ),
      },
    });
    // No preflight methods at all for same-origin only: a page of another origin is stopped at its preflight. With
    // CORS, a preflight on each resource that has a route (addRoute), not on every segment of their paths: the parent
    // stack stays under CloudFormation's 500 resources (an OPTIONS method on all 67 resources would take 497 of them).
    this.corsPreflight =
      this.cors.kind === 'same-origin'
        ? undefined
        : {
            allowOrigins: this.cors.kind === 'any' ? Cors.ALL_ORIGINS : [...this.cors.origins],
            allowMethods: corsAllowMethods(ROUTES),
            allowHeaders: [...CORS_ALLOW_HEADERS],
            maxAge: Duration.seconds(CORS_MAX_AGE_SECONDS),
          };
    // API Gateway writes execution logs to this group by name, and would create it itself (kept forever, outside the
    // stack) on the first log line: made here first, with a retention, and the stage waits for it.
    this.executionLogs = new LogGroup(this, 'ExecutionLogs', {
      logGroupName: `API-Gateway-Execution-Logs_${this.api.restApiId}/${props.stageName}`,
      retention: RetentionDays.ONE_MONTH,
    });
    this.api.deploymentStage.node.addDependency(this.executionLogs);
    // RestApi adds an `Endpoint` output with a trailing slash; the stack outputs `ApiUrl` (without one) instead.
    this.api.node.tryRemoveChild('Endpoint');
    this.url = `https://${this.api.restApiId}.execute-api.${Stack.of(this).region}.${Stack.of(this).urlSuffix}/${this.api.deploymentStage.stageName}`;

    this.authorizerFunction = this.createFunction('AuthorizerFunction', {
      handlerFile: AUTHORIZER.handler,
      description: 'Bearer token → organization and scopes (API Gateway REQUEST authorizer)',
      // One GetItem; a slow authorizer only delays the caller's 401.
      timeout: Duration.seconds(10),
      access: AUTHORIZER.access,
    });
    this.authorizer = new RequestAuthorizer(this, 'TokenAuthorizer', {
      handler: this.authorizerFunction,
      identitySources: [IdentitySource.header('Authorization')],
      // How long a deleted token, or one whose scopes or agents were changed, keeps its old answer (README, "Tokens").
      resultsCacheTtl: Duration.seconds(60),
    });

    const functions: Record<string, ServiceFunction> = {};
    const methods: Record<string, Method> = {};
    const areaStacks: Partial<Record<RouteArea, NestedStack>> = {};
    for (const route of ROUTES) {
      // A dashboard mirror is one more method on its customer route's function (lib/routes.ts, `functionOf`).
      const shared = route.functionOf === undefined ? undefined : functions[route.functionOf];
      if (route.functionOf !== undefined && !shared) throw new Error(`${route.id}: ${route.functionOf} comes later`);
      if (shared && Stack.of(shared) !== areaStacks[route.area]) {
        throw new Error(`${route.id}: its function is ${route.functionOf}'s, so its area is that route's`);
      }
      areaStacks[route.area] ??= new NestedStack(this, `${areaName(route.area)}Routes`, {
        description: `The functions of the API's ${route.area} routes: ${ROUTE_AREAS[route.area]}`,
      });
      functions[route.id] =
        shared ??
        this.createFunction(
          `${route.id}Function`,
          {
            handlerFile: route.handler,
            description: `${route.method} ${route.path}: ${route.summary}`,
            access: route.access,
          },
          areaStacks[route.area],
        );
      methods[route.id] = this.addRoute(route, functions[route.id]);
    }
    this.functions = functions;
    this.methods = methods;
    this.areaStacks = areaStacks;

    this.addGatewayResponses();
    this.acknowledgeApiFindings();
  }

  /** A function in `scope`: this construct (the authorizer, in the parent stack) or the nested stack of an area. */
  private createFunction(
    id: string,
    props: { handlerFile: string; description: string; access: ResourceAccess; timeout?: Duration },
    scope: Construct = this,
  ): ServiceFunction {
    const fn = new (scope === this ? ServiceFunction : RouteFunction)(scope, id, {
      handlerFile: props.handlerFile,
      description: props.description,
      timeout: props.timeout,
      logGroup: this.functionLogs,
      environment: { ...this.commonEnvironment, ...resourceEnvironment(this.resources, props.access) },
    });
    grantAccess(fn, this.resources, props.access);
    return fn;
  }

  private addRoute(route: HttpRoute, fn: ServiceFunction): Method {
    const resource = this.api.root.resourceForPath(route.path);
    if (this.corsPreflight && !resource.node.tryFindChild('OPTIONS')) resource.addCorsPreflight(this.corsPreflight);
    // One resource-policy statement per function, for this API (and no test-invoke one), not one per method: a
    // function that serves several routes (a dashboard mirror, a person's own routes) needs no more, and each template
    // keeps room under CloudFormation's 500 resources (test/infra/cors.test.ts). Only this API's integrations invoke
    // it, each of a route of its own. The permission is made beside the function, in its area's stack (RouteFunction).
    const integration = new LambdaIntegration(fn, { scopePermissionToMethod: false });
    if (route.scope === null) {
      const method = resource.addMethod(route.method, integration, { authorizationType: AuthorizationType.NONE });
      Validations.of(method).acknowledge(
        {
          id: 'AwsSolutions-APIG4',
          reason: `${route.method} ${route.path} is public by design (${route.summary.toLowerCase()}): route table scope is null.`,
        },
        {
          id: 'AwsSolutions-COG4',
          reason: `${route.method} ${route.path} is public by design (${route.summary.toLowerCase()}): no authorizer of any kind.`,
        },
      );
      return method;
    }
    const method = resource.addMethod(route.method, integration, {
      authorizationType: AuthorizationType.CUSTOM,
      authorizer: this.authorizer,
    });
    Validations.of(method).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        "Callers bring a bearer API token (created by POST /dashboard/tokens) or, on /dashboard only, a person's " +
        "Cognito ID token; the Lambda REQUEST authorizer checks both (the ID token against the user pool's keys, " +
        'issuer and client), so one authorizer serves both kinds of caller instead of a Cognito user pool authorizer.',
    });
    return method;
  }

  private addGatewayResponses(): void {
    const headers = gatewayCorsHeaders(this.cors);
    const json = (template: string) => ({ 'application/json': template });
    this.api.addGatewayResponse('Throttled', {
      type: ResponseType.THROTTLED,
      statusCode: '429',
      responseHeaders: { ...headers, 'Retry-After': `'${THROTTLE_RETRY_AFTER_SECONDS}'` },
      templates: json(GATEWAY_ERROR_TEMPLATES.THROTTLED),
    });
    this.api.addGatewayResponse('Unauthorized', {
      type: ResponseType.UNAUTHORIZED,
      statusCode: '401',
      responseHeaders: headers,
      templates: json(GATEWAY_ERROR_TEMPLATES.UNAUTHORIZED),
    });
    this.api.addGatewayResponse('AccessDenied', {
      type: ResponseType.ACCESS_DENIED,
      statusCode: '403',
      responseHeaders: headers,
      templates: json(GATEWAY_ERROR_TEMPLATES.ACCESS_DENIED),
    });
    this.api.addGatewayResponse('RouteNotFound', {
      type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: '404',
      responseHeaders: headers,
      templates: json(GATEWAY_ERROR_TEMPLATES.MISSING_AUTHENTICATION_TOKEN),
    });
    this.api.addGatewayResponse('Default4xx', {
      type: ResponseType.DEFAULT_4XX,
      responseHeaders: headers,
      templates: json(GATEWAY_ERROR_TEMPLATES.DEFAULT_4XX),
    });
    this.api.addGatewayResponse('Default5xx', {
      type: ResponseType.DEFAULT_5XX,
      responseHeaders: headers,
      templates: json(GATEWAY_ERROR_TEMPLATES.DEFAULT_5XX),
    });
  }

  private acknowledgeApiFindings(): void {
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG2',
      reason:
        'Every handler validates its path, query and body with a zod schema beside it and answers 400 in the API error ' +
        'shape; an API Gateway request validator would duplicate that with different error bodies.',
    });
    const cloudWatchRole = this.api.node.tryFindChild('CloudWatchRole');
    if (cloudWatchRole) {
      Validations.of(cloudWatchRole).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-level role API Gateway needs to write execution and access logs; the AWS-managed policy is the ' +
          'documented one and only allows CloudWatch Logs writes.',
      });
    }
  }
}

/** `knowledge` → `Knowledge`: the nested stack of an area is `<Area>Routes`. */
function areaName(area: RouteArea): string {
  return area.charAt(0).toUpperCase() + area.slice(1);
}

/**
 * A route's function, in its area's nested stack. LambdaIntegration makes the API-scoped permission to invoke it under
 * the RestApi (`scope`), which would leave it in the parent stack, one for each route function; here it is made
 * beside the function instead (same id, principal and source ARN), once for all the function's methods, so the
 * parent holds no resource for each route function.
 */
class RouteFunction extends ServiceFunction {
  public override addPermission(id: string, permission: Permission): void {
    if (this.node.tryFindChild(id)) return;
    super.addPermission(id, { ...permission, scope: this });
  }
}

/** CORS_ALLOWED_ORIGINS for the functions, as lambdas/shared/cors.ts parses it; unset for same-origin only. */
function corsEnvironment(cors: CorsPolicy): Record<string, string> {
  if (cors.kind === 'same-origin') return {};
  return { [CORS_ALLOWED_ORIGINS_VARIABLE]: cors.kind === 'any' ? '*' : cors.origins.join(',') };
}

/**
 * CORS headers of the answers API Gateway and WAF make themselves (gateway responses are fixed values, quoted as
 * API Gateway wants them): see edgeAllowOrigin. Exported for the firewall's gateway response.
 */
export function gatewayCorsHeaders(cors: CorsPolicy): Record<string, string> {
  const origin = edgeAllowOrigin(cors);
  if (origin === undefined) return {};
  return {
    'Access-Control-Allow-Origin': `'${origin}'`,
    'Access-Control-Expose-Headers': `'${CORS_EXPOSE_HEADERS.join(',')}'`,
  };
}
