/**
 * API Gateway REQUEST authorizer: `Authorization: Bearer <token>` → the token's organization, scopes and agent
 * restriction, or a person's memberships (core/auth/people.ts), passed to handlers in the request context. API Gateway caches the answer per header value (60 s, so
 * a deleted token works at most that long), so the policy allows every route of the API and each handler checks its
 * own route's scope (403 there, not here) and the core its agents (404).
 * Locally the router calls this same function on every request, with no cache.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { container } from '#composition/container';
import { operationalMetrics } from '#composition/metrics';
import { peopleContainer } from '#composition/people';
import { authenticatePerson, idTokenOf, personContext } from '#core/auth/people';
import { authenticate, callerContext } from '#core/auth/tokens';
import { UnauthorizedError } from '#core/errors';
import { METRIC } from '#ports/metrics';
import { logger } from '#shared/logger';
import { metrics } from '#shared/metrics';

/** `arn:aws:execute-api:region:account:api/stage/METHOD/path` → `arn:aws:execute-api:region:account:api/stage/*`. */
export function wholeApiArn(methodArn: string): string {
  const [prefix, apiGatewayPart] = methodArn.split(':execute-api:');
  if (!apiGatewayPart) return methodArn;
  const [region, account, path] = apiGatewayPart.split(':');
  const [apiId, stage] = path.split('/');
  return `${prefix}:execute-api:${region}:${account}:${apiId}/${stage}/*`;
}

/** The dashboard's routes of the API: the whole API's ARN with `/dashboard/` routes of any method only. */
export function dashboardArn(methodArn: string): string {
  return wholeApiArn(methodArn).replace(/\/\*$/, '/*/dashboard/*');
}

function authorizationHeader(event: APIGatewayRequestAuthorizerEvent): string | undefined {
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (name.toLowerCase() === 'authorization' && value) return value;
  }
  return undefined;
}

/** The path of the request a method ARN names (`…/stage/METHOD/dashboard/agents` → `/dashboard/agents`). */
function pathOf(methodArn: string): string {
  const [, apiGatewayPart = ''] = methodArn.split(':execute-api:');
  return `/${apiGatewayPart.split('/').slice(3).join('/')}`;
}

async function authorize(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  try {
    const header = authorizationHeader(event);
    const idToken = idTokenOf(header);
    let principalId: string;
    let context: Record<string, string>;
    let resource = wholeApiArn(event.methodArn);
    if (idToken) {
      // A person's ID token opens the dashboard and nothing else: the customer API stays organization tokens'. The
      // policy says so too, since API Gateway caches it for the token whatever path comes next.
      if (!pathOf(event.methodArn).startsWith('/dashboard/') && pathOf(event.methodArn) !== '/dashboard') {
        throw new UnauthorizedError();
      }
      const person = await authenticatePerson(peopleContainer, idToken, container.clock.now());
      context = personContext(person);
      principalId = context.tokenId;
      resource = dashboardArn(event.methodArn);
    } else {
      const caller = await authenticate(
        { tokens: container.tokens, memberships: peopleContainer.memberships },
        header,
        container.clock.now(),
        (error) => logger.warn('the token use was not recorded', { error: error as Error }),
      );
      principalId = caller.tokenId;
      context = callerContext(caller);
    }
    return {
      principalId,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: resource }],
      },
      context,
    };
  } catch (error) {
    if (error instanceof UnauthorizedError) operationalMetrics().count(METRIC.authorizerDenied);
    else logger.error('authorizer failed', { error: error as Error });
    // The exact message 'Unauthorized' makes API Gateway answer 401 (its UNAUTHORIZED gateway response).
    throw new Error('Unauthorized');
  }
}

/**
 * Metrics and the log context as every handler has them; no Powertools Tracer: the authorizer runs before every
 * uncached request and the X-Ray SDK would more than triple its bundle (51 KB → 176 KB); Lambda's active tracing
 * still records its invocation.
 */
export const handler = middy(authorize)
  .use(logMetrics(metrics))
  .use(injectLambdaContext(logger, { resetKeys: true }));
