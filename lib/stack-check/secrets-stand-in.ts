/**
 * A stand-in for the two Secrets Manager operations the stack's functions and its deployer use, on Secrets
 * Manager's wire protocol (JSON 1.1, `X-Amz-Target: secretsmanager.<Operation>`): GetSecretValue, which the
 * model-calling functions send (their role is checked by lambda-child.cjs before the request leaves), and
 * PutSecretValue, which the deployer sends once after deploy (README, "Models"). It holds the template's secrets,
 * created as the stack creates them: without a value, so GetSecretValue answers ResourceNotFoundException until one
 * is put (Secrets Manager API reference, GetSecretValue, "Errors").
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SecretsStandIn {
  readonly endpoint: string;
  /** Each request served: its operation, the secret it named and the status answered (never a value). */
  readonly requests: { operation: string; secretId: string; status: number }[];
  stop(): Promise<void>;
}

/** `arns`: the ARN of each secret of the template, as ResourceNames resolves its Ref. */
export async function startSecretsStandIn(arns: readonly string[]): Promise<SecretsStandIn> {
  const values = new Map<string, string | undefined>(arns.map((arn) => [arn, undefined]));
  const requests: SecretsStandIn['requests'] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(body));
      };
      const operation = String(request.headers['x-amz-target'] ?? '').replace(/^secretsmanager\./, '');
      let input: { SecretId?: string; SecretString?: string };
      try {
        input = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
      } catch {
        send(400, { __type: 'InvalidRequestException', message: 'the body is not JSON' });
        return;
      }
      const secretId = String(input.SecretId ?? '');
      const answer = (status: number, body: unknown) => {
        requests.push({ operation, secretId, status });
        send(status, body);
      };
      // A secret is named by its ARN here (the functions' environment holds the ARN, and so does the output).
      if (!values.has(secretId)) {
        answer(400, {
          __type: 'ResourceNotFoundException',
          message: "Secrets Manager can't find the specified secret.",
        });
        return;
      }
      if (operation === 'GetSecretValue') {
        const value = values.get(secretId);
        if (value === undefined) {
          answer(400, {
            __type: 'ResourceNotFoundException',
            message: "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
          });
          return;
        }
        answer(200, {
          ARN: secretId,
          Name: secretId.split(':').at(-1),
          SecretString: value,
          VersionStages: ['AWSCURRENT'],
        });
        return;
      }
      if (operation === 'PutSecretValue') {
        if (typeof input.SecretString !== 'string' || input.SecretString.length === 0) {
          answer(400, { __type: 'InvalidParameterException', message: 'SecretString is required here' });
          return;
        }
        values.set(secretId, input.SecretString);
        answer(200, { ARN: secretId, VersionStages: ['AWSCURRENT'] });
        return;
      }
      answer(400, { __type: 'InvalidRequestException', message: `${operation} is not served by the stand-in` });
    });
  });
  const address = await new Promise<AddressInfo>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)),
  );
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    requests,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
