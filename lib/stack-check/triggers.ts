/**
 * What invokes the stack's functions besides its API and its queues: EventBridge rules with a schedule (the watchdog),
 * EventBridge Scheduler schedules (the flow scheduler's tick), and the functions themselves through Lambda's Invoke
 * API (BrowserTask, from the flow functions). Each delivers the event AWS delivers, and only where the template lets
 * that service invoke the function (lib/stack-check/deploy-rules.ts).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import {
  type CfnTemplate,
  type Json,
  logicalIdNamedBy,
  type ResourceNames,
  SYNTHETIC_ACCOUNT,
  SYNTHETIC_REGION,
} from './cloud-assembly';
import { DEPLOY_RULES } from './deploy-rules';
import { type FunctionHost, InvocationError } from './function-host';

type Props = Record<string, Json>;

export interface ScheduledTrigger {
  /** Logical id of the rule or schedule. */
  readonly id: string;
  readonly functionId: string;
  readonly everySeconds: number;
  /** The payload AWS sends the function. */
  event(): unknown;
}

/** `rate(5 minutes)` in seconds; cron expressions are not run here (none in the stack). */
function rateSeconds(expression: string, id: string): number {
  const match = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!match) throw new Error(`${id}: the stack check runs rate() schedules only, not ${expression}`);
  const unit = { minute: 60, hour: 3600, day: 86_400 }[match[2].replace(/s$/, '') as 'minute' | 'hour' | 'day'];
  return Number(match[1]) * unit;
}

/**
 * The scheduled triggers of the template whose target may be invoked: a rule or schedule the deploy rules find unable
 * to invoke its function is left out and named in `refused`, as AWS would silently not invoke it.
 */
export async function scheduledTriggers(
  template: CfnTemplate,
  names: ResourceNames,
): Promise<{ triggers: ScheduledTrigger[]; refused: string[] }> {
  const refused: string[] = [];
  for (const id of ['eventbridge-rule-may-invoke-its-function', 'scheduler-role-may-invoke-its-target']) {
    const rule = DEPLOY_RULES.find((r) => r.id === id);
    if (!rule) throw new Error(`no deploy rule ${id}`);
    refused.push(...(await rule.check(template)));
  }
  const blocked = (id: string) => refused.some((problem) => problem.startsWith(`${id}:`));
  const triggers: ScheduledTrigger[] = [];
  const time = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (const [id, resource] of Object.entries(template.Resources)) {
    const p = (resource.Properties ?? {}) as Props;
    if (resource.Type === 'AWS::Events::Rule' && typeof p.ScheduleExpression === 'string' && p.State !== 'DISABLED') {
      for (const t of (p.Targets as Props[] | undefined) ?? []) {
        const functionId = logicalIdNamedBy(t.Arn);
        if (!functionId || template.Resources[functionId]?.Type !== 'AWS::Lambda::Function' || blocked(id)) continue;
        // EventBridge's Scheduled Event (EventBridge User Guide, "Creating a rule that runs on a schedule").
        triggers.push({
          id,
          functionId,
          everySeconds: rateSeconds(p.ScheduleExpression, id),
          event: () => ({
            version: '0',
            id: randomUUID(),
            'detail-type': 'Scheduled Event',
            source: 'aws.events',
            account: SYNTHETIC_ACCOUNT,
            time: time(),
            region: SYNTHETIC_REGION,
            resources: [names.arn(id)],
            detail: {},
          }),
        });
      }
    }
    if (resource.Type === 'AWS::Scheduler::Schedule' && p.State !== 'DISABLED') {
      const t = p.Target as Props;
      const functionId = logicalIdNamedBy(t.Arn);
      if (!functionId || template.Resources[functionId]?.Type !== 'AWS::Lambda::Function' || blocked(id)) continue;
      const input = typeof t.Input === 'string' ? t.Input : undefined;
      triggers.push({
        id,
        functionId,
        everySeconds: rateSeconds(String(p.ScheduleExpression), id),
        // The target's Input, or Scheduler's default notification (Scheduler API Reference, Target.Input).
        event: () =>
          input !== undefined
            ? JSON.parse(input)
            : {
                version: '0',
                id: randomUUID(),
                'detail-type': 'Scheduled Event',
                source: 'aws.scheduler',
                account: SYNTHETIC_ACCOUNT,
                time: time(),
                region: SYNTHETIC_REGION,
                resources: [`arn:aws:scheduler:${SYNTHETIC_REGION}:${SYNTHETIC_ACCOUNT}:schedule/default/${id}`],
                detail: '{}',
              },
      });
    }
  }
  return { triggers, refused };
}

/**
 * Lambda's Invoke API (`POST /2015-03-31/functions/<name or ARN>/invocations`) for the functions' own calls. The call
 * was authorized in the caller's process against its role (lambda-child.cjs); here it reaches the function it names,
 * synchronously (RequestResponse) or not (Event), with Lambda's answer: the result, or `X-Amz-Function-Error`.
 * `external` are functions outside the stack (a customer's agent code, registered with `-c agentCodeFunctions`): by
 * their ARN, a URL that takes the event as a POST body and answers the function's result.
 */
export function serveLambdaInvoke(
  functionNamed: (name: string) => FunctionHost | undefined,
  external: Readonly<Record<string, string>> = {},
): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        response.writeHead(status, { 'content-type': 'application/json', ...headers });
        response.end(body === undefined ? '' : JSON.stringify(body));
      };
      const match = /^\/2015-03-31\/functions\/([^/?]+)\/invocations(?:\?.*)?$/.exec(request.url ?? '');
      if (request.method !== 'POST' || !match) {
        reply(404, { message: `not an Invoke request: ${request.method} ${request.url}` });
        return;
      }
      const name = decodeURIComponent(match[1]);
      const externalUrl = Object.hasOwn(external, name) ? external[name] : undefined;
      const host = externalUrl
        ? externalHost(externalUrl)
        : functionNamed(name.includes(':function:') ? name.split(':function:')[1].split(':')[0] : name);
      if (!host) {
        reply(
          404,
          { Type: 'User', message: `Function not found: ${name}` },
          {
            'x-amzn-errortype': 'ResourceNotFoundException',
          },
        );
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      let event: unknown;
      try {
        event = text ? JSON.parse(text) : {};
      } catch {
        // Lambda refuses a payload that is not JSON before the function sees it.
        reply(
          400,
          { Type: 'User', message: 'Could not parse request body into json' },
          {
            'x-amzn-errortype': 'InvalidRequestContentException',
          },
        );
        return;
      }
      const invocation = host.invoke(event);
      if (request.headers['x-amz-invocation-type'] === 'Event') {
        invocation.catch(() => undefined);
        reply(202, undefined);
        return;
      }
      invocation.then(
        (result) => reply(200, result ?? null, { 'x-amz-executed-version': '$LATEST' }),
        (error: unknown) => {
          const errorType = error instanceof InvocationError ? error.errorName : 'Error';
          reply(
            200,
            { errorType, errorMessage: String((error as Error).message) },
            { 'x-amz-function-error': 'Unhandled' },
          );
        },
      );
    });
  });
}

/** A function outside the stack, served at `url`: the event POSTed, the result answered (a 5xx: the function failed). */
function externalHost(url: string): Pick<FunctionHost, 'invoke'> {
  return {
    invoke: async <T>(event: unknown): Promise<T> => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event),
      });
      const text = await response.text();
      if (!response.ok) throw new InvocationError(url, 'Error', `the function failed (${response.status})`);
      return (text === '' ? null : JSON.parse(text)) as T;
    },
  };
}
