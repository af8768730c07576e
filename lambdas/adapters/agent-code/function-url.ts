/**
 * The shape agent code deployed as a function receives and answers (docs/agent-code.md, "A Lambda function"): a
 * function URL event (payload format 2.0) carrying the signed request, and a function URL's reading of the result.
 */
import { OutboundError, type OutboundResponse } from '#ports/flows';

/** The most of an answer's body kept (the HTTP adapter's bound). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function functionUrlEvent(headers: Readonly<Record<string, string>>, body: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/',
    rawQueryString: '',
    headers,
    requestContext: { http: { method: 'POST', path: '/' } },
    body,
    isBase64Encoded: false,
  };
}

/**
 * `{ statusCode, body }` is the response; any other JSON result is a 200 whose body is that JSON (and nothing at all
 * a 200 with no body), as a function URL reads a result.
 */
export function functionUrlResponse(text: string): OutboundResponse {
  let result: unknown;
  try {
    result = text === '' ? null : JSON.parse(text.slice(0, MAX_ANSWER_BYTES));
  } catch {
    throw new OutboundError('OUTBOUND_FAILED', 'The agent code function answered something that is not JSON');
  }
  if (
    result !== null &&
    typeof result === 'object' &&
    typeof (result as { statusCode?: unknown }).statusCode === 'number'
  ) {
    const { statusCode, body } = result as { statusCode: number; body?: unknown };
    return { status: statusCode, body: typeof body === 'string' ? parsedBody(body) : (body ?? '') };
  }
  return { status: 200, body: result ?? '' };
}

function parsedBody(body: string): unknown {
  try {
    return body === '' ? '' : JSON.parse(body);
  } catch {
    return body;
  }
}
