/** The model API key read from its secret: once a value is there, once per container; nothing while it is empty. */
import { ResourceNotFoundException } from '@aws-sdk/client-secrets-manager';
import { secretApiKey } from '#adapters/model/secret-api-key';
import { ModelError } from '#ports/model';

function client(answers: (() => unknown)[]) {
  let reads = 0;
  return {
    reads: () => reads,
    send: async () => {
      const answer = answers[Math.min(reads, answers.length - 1)];
      reads += 1;
      return answer();
    },
  };
}

const notFound = () => {
  throw new ResourceNotFoundException({ message: 'no value for staging label AWSCURRENT', $metadata: {} });
};

it('sends no key while the secret has no value, reads again at the next call, and keeps the key once read', async () => {
  const secrets = client([notFound, () => ({ SecretString: ' sk-123 \n' })]);
  const key = secretApiKey(secrets as never, 'arn:aws:secretsmanager:us-east-1:1:secret:k');
  expect(await key()).toBeUndefined();
  expect(await key()).toBe('sk-123');
  expect(await key()).toBe('sk-123');
  expect(secrets.reads()).toBe(2);
});

it('treats an empty value as no key and does not keep it', async () => {
  const secrets = client([() => ({ SecretString: '' }), () => ({ SecretString: 'sk-1' })]);
  const key = secretApiKey(secrets as never, 'k');
  expect(await key()).toBeUndefined();
  expect(await key()).toBe('sk-1');
});

it('fails the model call with a ModelError naming the read, not the secret value, when the read is refused', async () => {
  const denied = Object.assign(new Error('User is not authorized'), { name: 'AccessDeniedException' });
  const key = secretApiKey(client([() => Promise.reject(denied)]) as never, 'arn:secret');
  const error = await key().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ModelError);
  expect(error).toMatchObject({
    status: 502,
    code: 'MODEL_ERROR',
    detail: 'GetSecretValue arn:secret: AccessDeniedException',
  });
});
