/**
 * One function of the synthesized stack, run as Lambda runs it: this process loads the handler file of the asset
 * folder (argv[2], export argv[3]) once and serves one invocation at a time for the parent (lib/stack-check/
 * function-host.ts) over IPC. Every AWS request the function's SDK clients send, and every URL it pre-signs, is first
 * described to the parent as (action, resources) and goes out only if the parent's IAM check of this function's role
 * allows it; otherwise the SDK call fails with AccessDenied, as AWS would answer. The handler is not changed: the
 * check sits in the SDK's HTTP handler (the request as signed) and in the pre-signer, both loaded from NODE_PATH.
 */
'use strict';
const Module = require('node:module');
const { randomUUID } = require('node:crypto');
const { pathToFileURL } = require('node:url');

const [, , handlerFile, exportName] = process.argv;
const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME;
const region = process.env.AWS_REGION;
const account = '000000000000';

let nextCheck = 0;
const pendingChecks = new Map();

/** Asks the parent whether the function's role allows every (action, resource) of one request. */
function authorize(calls) {
  return new Promise((resolve, reject) => {
    const id = nextCheck++;
    pendingChecks.set(id, { resolve, reject });
    process.send({ type: 'check', id, calls });
  });
}

function accessDenied(message) {
  const error = new Error(message);
  error.name = 'AccessDeniedException';
  error.$metadata = { httpStatusCode: 403 };
  error.$fault = 'client';
  return error;
}

function header(request, name) {
  const key = Object.keys(request.headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : request.headers[key];
}

function tableArn(name) {
  return `arn:aws:dynamodb:${region}:${account}:table/${name}`;
}

function queueArn(url) {
  const match = /\/(\d{12})\/([^/?]+)$/.exec(String(url));
  if (!match) throw new Error(`cannot read a queue ARN from ${url}`);
  return `arn:aws:sqs:${region}:${match[1]}:${match[2]}`;
}

/** DynamoDB's JSON protocol: X-Amz-Target names the operation, the body the table(s). */
function dynamodbCalls(operation, input) {
  const action = (op) => `dynamodb:${op}`;
  switch (operation) {
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(input.RequestItems ?? {}).map((t) => ({ action: action(operation), resource: tableArn(t) }));
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (input.TransactItems ?? []).map((item) => {
        const [kind, body] = Object.entries(item)[0];
        const op = {
          Put: 'PutItem',
          Update: 'UpdateItem',
          Delete: 'DeleteItem',
          ConditionCheck: 'ConditionCheckItem',
          Get: 'GetItem',
        }[kind];
        return { action: action(op), resource: tableArn(body.TableName) };
      });
    case 'ListTables':
      return [{ action: action(operation), resource: '*' }];
    default: {
      const base = tableArn(input.TableName);
      return [{ action: action(operation), resource: input.IndexName ? `${base}/index/${input.IndexName}` : base }];
    }
  }
}

const SQS_ACTIONS = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

/** S3's REST protocol, path-style (the engines' endpoint): the method, the key and the query name the action. */
function s3Calls(request) {
  const [bucket, ...keyParts] = request.path.replace(/^\//, '').split('/');
  const key = decodeURIComponent(keyParts.join('/'));
  const query = request.query ?? {};
  const object = `arn:aws:s3:::${bucket}/${key}`;
  const method = request.method.toUpperCase();
  if (!key) {
    if (method === 'GET' || method === 'HEAD')
      return [{ action: method === 'GET' ? 's3:ListBucket' : 's3:ListBucket', resource: `arn:aws:s3:::${bucket}` }];
    if (method === 'POST' && 'delete' in query) {
      return [...bodyText(request).matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => ({
        action: 's3:DeleteObject',
        resource: `arn:aws:s3:::${bucket}/${m[1]}`,
      }));
    }
    return [{ action: `s3:${method}Bucket?`, resource: `arn:aws:s3:::${bucket}` }];
  }
  // Sub-resources name their own actions (the S3 API reference's "Permissions" of each operation).
  for (const [subresource, actions] of Object.entries(S3_OBJECT_SUBRESOURCES)) {
    if (subresource in query && actions[method]) return [{ action: actions[method], resource: object }];
  }
  if (method === 'GET' || method === 'HEAD') return [{ action: 's3:GetObject', resource: object }];
  if (method === 'DELETE')
    return [{ action: 'uploadId' in query ? 's3:AbortMultipartUpload' : 's3:DeleteObject', resource: object }];
  if (method === 'PUT' || method === 'POST') {
    const calls = [{ action: 's3:PutObject', resource: object }, ...headerImplied(request, object)];
    const source = header(request, 'x-amz-copy-source');
    if (source)
      calls.push({
        action: 's3:GetObject',
        resource: `arn:aws:s3:::${decodeURIComponent(String(source).replace(/^\//, '').split('?')[0])}`,
      });
    return calls;
  }
  return [{ action: `s3:${method}?`, resource: object }];
}

/** Object sub-resources: the action each method on them needs. */
const S3_OBJECT_SUBRESOURCES = {
  tagging: { GET: 's3:GetObjectTagging', PUT: 's3:PutObjectTagging', DELETE: 's3:DeleteObjectTagging' },
  acl: { GET: 's3:GetObjectAcl', PUT: 's3:PutObjectAcl' },
  retention: { GET: 's3:GetObjectRetention', PUT: 's3:PutObjectRetention' },
  'legal-hold': { GET: 's3:GetObjectLegalHold', PUT: 's3:PutObjectLegalHold' },
  attributes: { GET: 's3:GetObjectAttributes' },
  restore: { POST: 's3:RestoreObject' },
};

/**
 * Actions a write needs besides s3:PutObject because of its headers: tags (`x-amz-tagging`) need
 * s3:PutObjectTagging, a canned ACL or grants s3:PutObjectAcl, object lock settings s3:PutObjectRetention and
 * s3:PutObjectLegalHold (S3 API reference, PutObject and CopyObject, "Permissions").
 */
function headerImplied(request, object) {
  const implied = [];
  const copy = header(request, 'x-amz-copy-source');
  const taggingDirective = String(header(request, 'x-amz-tagging-directive') ?? 'COPY').toUpperCase();
  if (header(request, 'x-amz-tagging') !== undefined && (!copy || taggingDirective === 'REPLACE')) {
    implied.push({ action: 's3:PutObjectTagging', resource: object });
  }
  const grants = Object.keys(request.headers ?? {}).some((h) => /^x-amz-grant-/i.test(h));
  if (header(request, 'x-amz-acl') !== undefined || grants) {
    implied.push({ action: 's3:PutObjectAcl', resource: object });
  }
  if (header(request, 'x-amz-object-lock-mode') !== undefined) {
    implied.push({ action: 's3:PutObjectRetention', resource: object });
  }
  if (header(request, 'x-amz-object-lock-legal-hold') !== undefined) {
    implied.push({ action: 's3:PutObjectLegalHold', resource: object });
  }
  return implied;
}

/** The request body as text when the SDK built it in memory (JSON and XML protocols); '' for a stream. */
function bodyText(request) {
  if (typeof request.body === 'string') return request.body;
  // A Uint8Array (the SDK's JSON codec may hand a subclass with string methods that warn): read its bytes.
  if (request.body instanceof Uint8Array) return new TextDecoder().decode(request.body);
  return '';
}

/** Cognito user pool operations that take no IAM authorization. */
const COGNITO_PUBLIC = new Set(['SignUp', 'ConfirmSignUp', 'InitiateAuth', 'RespondToAuthChallenge']);

function describe(request) {
  const target = header(request, 'x-amz-target');
  const auth = String(header(request, 'authorization') ?? '');
  const service = /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\//.exec(auth)?.[1];
  const body = bodyText(request);
  if (target?.startsWith('DynamoDB_')) return dynamodbCalls(target.split('.')[1], JSON.parse(body || '{}'));
  if (target?.startsWith('AmazonSQS.')) {
    const operation = target.split('.')[1];
    const input = JSON.parse(body || '{}');
    const action = `sqs:${SQS_ACTIONS[operation] ?? operation}`;
    return [{ action, resource: input.QueueUrl ? queueArn(input.QueueUrl) : '*' }];
  }
  if (target?.startsWith('AWSCognitoIdentityProviderService.')) {
    const operation = target.split('.')[1];
    // A person's own calls (sign-up, sign-in) are not authorized by IAM: Cognito takes them from anyone.
    if (COGNITO_PUBLIC.has(operation)) return [];
    const input = JSON.parse(body || '{}');
    const pool = input.UserPoolId ? `arn:aws:cognito-idp:${region}:${account}:userpool/${input.UserPoolId}` : '*';
    return [{ action: `cognito-idp:${operation}`, resource: pool }];
  }
  if (target?.startsWith('secretsmanager.')) {
    const input = JSON.parse(body || '{}');
    return [{ action: `secretsmanager:${target.split('.')[1]}`, resource: input.SecretId ?? '*' }];
  }
  if (service === 's3') return s3Calls(request);
  // Bedrock's endpoint is the stand-in, which checks each request against this function's role itself (the bundled
  // bedrock-agent client and the HTTP/2 runtime clients never pass through this handler).
  if (service === 'bedrock') return [];
  if (service === 'lambda') {
    const name = decodeURIComponent(/\/functions\/([^/]+)\/invocations/.exec(request.path)?.[1] ?? '?');
    const arn = name.startsWith('arn:') ? name : `arn:aws:lambda:${region}:${account}:function:${name}`;
    return [{ action: 'lambda:InvokeFunction', resource: arn }];
  }
  return [{ action: `${service ?? 'unknown'}:${target ?? request.path}`, resource: '*' }];
}

function guard(calls, proceed) {
  return authorize(calls).then((answer) => {
    if (answer.denied) throw accessDenied(answer.denied);
    return proceed();
  });
}

/** The SDK's Node HTTP handler, the one every client sends through: the request here is the one AWS receives. */
const clientPath = require.resolve('@aws-sdk/client-dynamodb', { paths: process.env.NODE_PATH.split(':') });
const { NodeHttpHandler } = require(require.resolve('@smithy/node-http-handler', { paths: [clientPath] }));
const handle = NodeHttpHandler.prototype.handle;
NodeHttpHandler.prototype.handle = function checkedHandle(request, options) {
  return guard(describe(request), () => handle.call(this, request, options));
};

/** A pre-signed URL carries the function's authority: the call it signs is checked when it is signed. */
const load = Module._load;
Module._load = function loadChecked(request, parent, isMain) {
  const loaded = load.call(this, request, parent, isMain);
  if (request !== '@aws-sdk/s3-request-presigner') return loaded;
  return {
    ...loaded,
    getSignedUrl(client, command, options) {
      const operation = command.constructor.name.replace(/Command$/, '');
      const { Bucket, Key } = command.input;
      const object = `arn:aws:s3:::${Bucket}/${Key}`;
      const calls = [{ action: `s3:${operation === 'HeadObject' ? 'GetObject' : operation}`, resource: object }];
      // What the signed request's headers will ask for is checked against the signer's role too (headerImplied).
      if (operation === 'PutObject') {
        const { Tagging, ACL, GrantRead, GrantFullControl, GrantReadACP, GrantWriteACP } = command.input;
        if (Tagging !== undefined) calls.push({ action: 's3:PutObjectTagging', resource: object });
        if ([ACL, GrantRead, GrantFullControl, GrantReadACP, GrantWriteACP].some((v) => v !== undefined)) {
          calls.push({ action: 's3:PutObjectAcl', resource: object });
        }
      }
      return guard(calls, () => loaded.getSignedUrl(client, command, options));
    },
  };
};

function context(requestId, deadline) {
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${account}:function:${functionName}`,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'stack-check',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
}

function serialize(error) {
  return { name: error?.name ?? 'Error', message: String(error?.message ?? error), stack: String(error?.stack ?? '') };
}

import(pathToFileURL(handlerFile).href).then(
  (module) => {
    const handler = module[exportName] ?? module.default?.[exportName];
    if (typeof handler !== 'function') {
      process.send({
        type: 'load-error',
        error: { name: 'Error', message: `export ${exportName} is not a function`, stack: '' },
      });
      return;
    }
    process.on('message', (message) => {
      if (message.type === 'decision') {
        const pending = pendingChecks.get(message.id);
        pendingChecks.delete(message.id);
        pending?.resolve(message);
        return;
      }
      if (message.type !== 'invoke') return;
      const requestId = randomUUID();
      Promise.resolve()
        .then(() => handler(message.event, context(requestId, message.deadline)))
        .then(
          (result) => process.send({ type: 'result', id: message.id, result: result === undefined ? null : result }),
          (error) => process.send({ type: 'error', id: message.id, error: serialize(error) }),
        );
    });
    process.send({ type: 'ready' });
  },
  (error) => process.send({ type: 'load-error', error: serialize(error) }),
);
