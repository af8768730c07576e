/**
 * AgentCodeFunctions over Lambda's Invoke API: the agent's code deployed as a function in the customer's account
 * (docs/agent-code.md, "A Lambda function"). The signed request goes as a function URL event (payload format 2.0), so
 * the SDK's `lambda` handler reads it as it reads one from a function URL, and verifies the same signature.
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { type AgentCodeFunctions, OutboundError, type OutboundResponse } from '#ports/flows';
import { functionUrlEvent, functionUrlResponse } from './function-url';

export class LambdaAgentCodeFunctions implements AgentCodeFunctions {
  constructor(private readonly client: LambdaClient) {}

  async invoke(request: Parameters<AgentCodeFunctions['invoke']>[0]): Promise<OutboundResponse> {
    const event = functionUrlEvent(request.headers, request.body);
    let answer: { FunctionError?: string; Payload?: Uint8Array };
    try {
      answer = await this.client.send(
        new InvokeCommand({
          FunctionName: request.functionArn,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(event)),
        }),
        { abortSignal: AbortSignal.timeout(request.timeoutMs) },
      );
    } catch (error) {
      const { name, $metadata } = (error ?? {}) as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw new OutboundError('OUTBOUND_FAILED', `The agent code function timed out after ${request.timeoutMs} ms`, {
          timedOut: true,
        });
      }
      // Lambda's own refusal (403: not granted or not allowed by the function's policy; 404; 429): its name only.
      const status = $metadata?.httpStatusCode;
      throw new OutboundError(
        'OUTBOUND_FAILED',
        `The agent code function could not be invoked (${status ? `HTTP ${status} ` : ''}${name ?? 'no answer'})`,
      );
    }
    if (answer.FunctionError !== undefined) {
      throw new OutboundError('OUTBOUND_FAILED', `The agent code function failed (${answer.FunctionError})`);
    }
    return functionUrlResponse(Buffer.from(answer.Payload ?? new Uint8Array()).toString('utf8'));
  }
}
