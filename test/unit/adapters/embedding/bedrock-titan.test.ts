/** Titan embeddings: Bedrock cannot run here, so the client's `send` is a recording fake (this adapter's test only). */
import type { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { TITAN_EMBED_MODEL_ID, TitanEmbedder } from '#adapters/embedding/bedrock-titan';

function fakeClient(dimensions: number, answer?: (input: { inputText: string }) => unknown) {
  const requests: InvokeModelCommand['input'][] = [];
  const client = {
    send: async (command: InvokeModelCommand) => {
      requests.push(command.input);
      const input = JSON.parse(String(command.input.body)) as { inputText: string };
      const body = answer?.(input) ?? {
        embedding: Array.from({ length: dimensions }, (_, i) => input.inputText.length + i),
      };
      return { body: new TextEncoder().encode(JSON.stringify(body)) };
    },
  } as unknown as BedrockRuntimeClient;
  return { client, requests };
}

it('asks Titan V2 for normalized vectors of the configured size, one per text, in order', async () => {
  const { client, requests } = fakeClient(256);
  const vectors = await new TitanEmbedder(client, 256, 2).embed(['a', 'bbb', 'cc']);
  expect(vectors.map((v) => v[0])).toEqual([1, 3, 2]);
  expect(vectors.every((v) => v.length === 256)).toBe(true);
  expect(requests).toHaveLength(3);
  for (const request of requests) {
    expect(request).toMatchObject({
      modelId: TITAN_EMBED_MODEL_ID,
      contentType: 'application/json',
      accept: 'application/json',
    });
    expect(JSON.parse(String(request.body))).toMatchObject({ dimensions: 256, normalize: true });
  }
});

it('fails loudly on an answer without an embedding of the right size', async () => {
  const { client } = fakeClient(1024, () => ({ embedding: [1, 2, 3] }));
  await expect(new TitanEmbedder(client).embed(['x'])).rejects.toThrow(/1024-dimension/);
});
