/**
 * Which AWS SDK errors mean "throttled" (lambdas/adapters/errors/aws-throttling.ts). First the SDK's own exception classes,
 * constructed as its deserializers construct them; then the real clients against a loopback server that answers
 * what DynamoDB, S3, SQS and Bedrock send when they throttle, so the SDK itself parses the bytes into its error (the
 * local engines never throttle, and Bedrock cannot run here).
 */
import { createServer } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import {
  ThrottlingException as AgentRuntimeThrottlingException,
  BedrockAgentRuntimeServiceException,
} from '@aws-sdk/client-bedrock-agent-runtime';
import {
  BedrockRuntimeClient,
  BedrockRuntimeServiceException,
  ThrottlingException as BedrockThrottlingException,
  ValidationException as BedrockValidationException,
  ConverseCommand,
  ModelNotReadyException,
  ServiceUnavailableException,
} from '@aws-sdk/client-bedrock-runtime';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  DynamoDBServiceException,
  ThrottlingException as DynamoThrottlingException,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand, NoSuchKey, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import {
  KmsThrottled,
  QueueDoesNotExist,
  RequestThrottled,
  SendMessageCommand,
  SQSClient,
  SQSServiceException,
} from '@aws-sdk/client-sqs';
import { isThrottlingError } from '@smithy/core/retry';
import { isThrottledByAws, SDK_THROTTLING_ERROR_NAMES } from '#adapters/errors/aws-throttling';

const metadata = (httpStatusCode: number) => ({ $metadata: { httpStatusCode, requestId: 'r-1', attempts: 3 } });

/** [label, error, throttled?]: each built with the options object the SDK's deserializers pass. */
const CASES: [string, Error, boolean][] = [
  [
    'DynamoDB ProvisionedThroughputExceededException',
    new ProvisionedThroughputExceededException({ message: 'exceeded', ...metadata(400) }),
    true,
  ],
  ['DynamoDB ThrottlingException', new DynamoThrottlingException({ message: 'throttled', ...metadata(400) }), true],
  ['DynamoDB RequestLimitExceeded', new RequestLimitExceeded({ message: 'account limit', ...metadata(400) }), true],
  ['SQS RequestThrottled', new RequestThrottled({ message: 'throttled', ...metadata(403) }), true],
  ['SQS KmsThrottled', new KmsThrottled({ message: 'KMS throttled', ...metadata(400) }), true],
  ['Bedrock ThrottlingException', new BedrockThrottlingException({ message: 'slow down', ...metadata(429) }), true],
  ['Bedrock ModelNotReadyException (429)', new ModelNotReadyException({ message: 'warming', ...metadata(429) }), true],
  [
    'Bedrock ServiceUnavailableException (503)',
    new ServiceUnavailableException({ message: 'x', ...metadata(503) }),
    true,
  ],
  [
    'Bedrock Retrieve ThrottlingException',
    new AgentRuntimeThrottlingException({ message: 'slow down', ...metadata(429) }),
    true,
  ],
  // S3 models no SlowDown class: its XML error code becomes the name of a plain S3ServiceException.
  [
    'S3 SlowDown (503)',
    new S3ServiceException({ name: 'SlowDown', $fault: 'server', message: 'reduce your rate', ...metadata(503) }),
    true,
  ],
  [
    'S3 HEAD answered 503 without a body',
    new S3ServiceException({ name: '503', $fault: 'server', message: 'UnknownError', ...metadata(503) }),
    true,
  ],
  [
    'any service answering 429',
    new BedrockAgentRuntimeServiceException({ name: 'Unmodeled', $fault: 'client', message: 'x', ...metadata(429) }),
    true,
  ],
  [
    'DynamoDB ConditionalCheckFailedException',
    new ConditionalCheckFailedException({ message: 'condition', ...metadata(400) }),
    false,
  ],
  [
    'DynamoDB ResourceNotFoundException',
    new ResourceNotFoundException({ message: 'no table', ...metadata(400) }),
    false,
  ],
  ['DynamoDB InternalServerError (500)', new InternalServerError({ message: 'oops', ...metadata(500) }), false],
  ['SQS QueueDoesNotExist', new QueueDoesNotExist({ message: 'gone', ...metadata(400) }), false],
  ['S3 NoSuchKey', new NoSuchKey({ message: 'missing', ...metadata(404) }), false],
  [
    'S3 AccessDenied (403)',
    new S3ServiceException({ name: 'AccessDenied', $fault: 'client', message: 'denied', ...metadata(403) }),
    false,
  ],
  ['Bedrock ValidationException', new BedrockValidationException({ message: 'bad input', ...metadata(400) }), false],
];

function withRetryableThrottling(): Error {
  // What a class generated from a shape with the @retryable(throttling: true) trait carries as a field.
  const error = new SQSServiceException({ name: 'Backoff', $fault: 'client', message: 'x', ...metadata(400) });
  return Object.assign(error, { $retryable: { throttling: true } });
}

describe('the SDK exception classes', () => {
  it.each(CASES.map(([label, error, throttled]) => [label, throttled, error] as const))(
    '%s: throttled is %s',
    (_label, throttled, error) => {
      expect(isThrottledByAws(error)).toBe(throttled);
    },
  );

  it('counts the $retryable.throttling trait as throttling', () => {
    expect(isThrottledByAws(withRetryableThrottling())).toBe(true);
  });

  it('agrees with the SDK’s own isThrottlingError, adding only 503 and KmsThrottled', () => {
    for (const [label, error] of [...CASES, ['trait', withRetryableThrottling()] as const]) {
      const status = (error as unknown as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode;
      const sdk = isThrottlingError(error as never) || status === 503 || error.name === 'KmsThrottled';
      expect([label, isThrottledByAws(error)]).toEqual([label, sdk]);
    }
    for (const name of SDK_THROTTLING_ERROR_NAMES) {
      expect([name, isThrottlingError({ name, $metadata: {} } as never)]).toEqual([name, true]);
    }
  });

  it('finds a throttling error an adapter wrapped as the cause of its own', () => {
    const cause = new ProvisionedThroughputExceededException({ message: 'exceeded', ...metadata(400) });
    expect(isThrottledByAws(new Error('the store failed', { cause }))).toBe(true);
    expect(isThrottledByAws(new Error('the store failed', { cause: new Error('plain') }))).toBe(false);
  });

  it('does not take an error for the SDK’s by its name alone', () => {
    const lookalike = Object.assign(new Error('not from AWS'), { name: 'ThrottlingException' });
    expect(isThrottledByAws(lookalike)).toBe(false);
    for (const other of [undefined, null, 'ThrottlingException', 429]) expect(isThrottledByAws(other)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------------------------

interface Reply {
  writeHead(status: number, headers?: Record<string, string>): unknown;
  end(body: string): unknown;
}
type Answer = (request: { readonly method?: string }, response: Reply) => void;

const client = { region: 'us-east-1', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } };
const closers: (() => void)[] = [];
afterAll(() => {
  for (const close of closers) close();
});

/**
 * A loopback endpoint answering every request with `answer`, counting them. HTTP/2 for Bedrock Runtime, whose client
 * speaks only that (its default handler is the SDK's HTTP/2 one).
 */
async function endpoint(answer: Answer, protocol: 'http1' | 'h2c' = 'http1') {
  let count = 0;
  const onRequest = (request: Readable & { readonly method?: string }, response: Reply) => {
    request.resume();
    request.on('end', () => {
      count += 1;
      answer(request, response);
    });
  };
  const server =
    protocol === 'h2c'
      ? createHttp2Server((request, response) => onRequest(request, response))
      : createServer((request, response) => onRequest(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests: () => count };
}

/** DynamoDB's answer when a table is over its provisioned throughput (awsJson1_0). */
const dynamoThrottles: Answer = (_request, response) => {
  response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'r-1' });
  response.end(
    JSON.stringify({
      __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
      message: 'The level of configured provisioned throughput for the table was exceeded.',
    }),
  );
};

describe('the real clients, answered as the services answer when they throttle', () => {
  it('DynamoDB: ProvisionedThroughputExceededException', async () => {
    const { url, requests } = await endpoint(dynamoThrottles);
    const dynamo = new DynamoDBClient({ ...client, endpoint: url, maxAttempts: 1 });
    const error = await dynamo.send(new GetItemCommand({ TableName: 't', Key: { id: { S: '1' } } })).catch((e) => e);
    expect(error).toBeInstanceOf(ProvisionedThroughputExceededException);
    expect(error).toBeInstanceOf(DynamoDBServiceException);
    expect(requests()).toBe(1);
    expect(isThrottledByAws(error)).toBe(true);
  });

  it('S3: 503 SlowDown to a PUT, and a bare 503 to a HEAD', async () => {
    const { url } = await endpoint((request, response) => {
      if (request.method === 'HEAD') {
        response.writeHead(503);
        response.end('');
        return;
      }
      response.writeHead(503, { 'content-type': 'application/xml' });
      response.end('<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
    });
    const s3 = new S3Client({ ...client, endpoint: url, forcePathStyle: true, maxAttempts: 1 });
    const put = await s3.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'x' })).catch((e) => e);
    expect(put).toBeInstanceOf(S3ServiceException);
    expect(put.name).toBe('SlowDown');
    expect(isThrottledByAws(put)).toBe(true);
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'b', Key: 'k' })).catch((e) => e);
    expect(head).toBeInstanceOf(S3ServiceException);
    expect(head.$metadata.httpStatusCode).toBe(503);
    expect(isThrottledByAws(head)).toBe(true);
  });

  it('SQS: RequestThrottled (403, awsJson with the query-compatible error code)', async () => {
    const { url } = await endpoint((_request, response) => {
      response.writeHead(403, {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-query-error': 'RequestThrottled;Sender',
      });
      response.end(JSON.stringify({ __type: 'com.amazonaws.sqs#RequestThrottled', message: 'Request is throttled.' }));
    });
    const sqs = new SQSClient({ ...client, endpoint: url, useQueueUrlAsEndpoint: false, maxAttempts: 1 });
    const error = await sqs.send(new SendMessageCommand({ QueueUrl: `${url}/q`, MessageBody: 'x' })).catch((e) => e);
    expect(error).toBeInstanceOf(RequestThrottled);
    expect(isThrottledByAws(error)).toBe(true);
  });

  it('Bedrock: ThrottlingException (429) to Converse', async () => {
    const { url } = await endpoint((_request, response) => {
      response.writeHead(429, {
        'content-type': 'application/json',
        'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/',
      });
      response.end(JSON.stringify({ message: 'Too many requests, please wait before trying again.' }));
    }, 'h2c');
    const bedrock = new BedrockRuntimeClient({ ...client, endpoint: url, maxAttempts: 1 });
    const error = await bedrock
      .send(new ConverseCommand({ modelId: 'm', messages: [{ role: 'user', content: [{ text: 'hi' }] }] }))
      .catch((e) => e);
    expect(error).toBeInstanceOf(BedrockThrottlingException);
    expect(error).toBeInstanceOf(BedrockRuntimeServiceException);
    expect(isThrottledByAws(error)).toBe(true);
  });

  it('DynamoDB: a missing table is not throttling', async () => {
    const { url } = await endpoint((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(
        JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
          message: 'Requested resource not found',
        }),
      );
    });
    const dynamo = new DynamoDBClient({ ...client, endpoint: url, maxAttempts: 1 });
    const error = await dynamo.send(new GetItemCommand({ TableName: 't', Key: { id: { S: '1' } } })).catch((e) => e);
    expect(error).toBeInstanceOf(ResourceNotFoundException);
    expect(isThrottledByAws(error)).toBe(false);
  });
});
