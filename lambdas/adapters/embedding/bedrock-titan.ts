/**
 * Embedder on Amazon Titan Text Embeddings V2 (Bedrock InvokeModel). It gives the local index vectors, and so
 * hybrid (lexical + vector) retrieval, when EMBEDDER=bedrock-titan is configured and AWS credentials reach Bedrock.
 * (In AWS the Bedrock knowledge base embeds chunks itself; this adapter is for the embedded index.)
 */
import { type BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import type { Embedder } from '#ports/processing';

export const TITAN_EMBED_MODEL_ID = 'amazon.titan-embed-text-v2:0';

/** Titan V2 accepts up to 8,192 tokens; chunks are 1,000 characters, so a hard cut far above that is only a guard. */
const MAX_INPUT_CHARACTERS = 40_000;

export class TitanEmbedder implements Embedder {
  constructor(
    private readonly client: BedrockRuntimeClient,
    readonly dimensions: 256 | 512 | 1024 = 1024,
    private readonly concurrency = 4,
  ) {}

  async embed(texts: readonly string[]): Promise<number[][]> {
    const vectors: number[][] = new Array(texts.length);
    let next = 0;
    const worker = async () => {
      while (next < texts.length) {
        const index = next++;
        vectors[index] = await this.embedOne(texts[index]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, texts.length) }, worker));
    return vectors;
  }

  private async embedOne(text: string): Promise<number[]> {
    const response = await this.client.send(
      new InvokeModelCommand({
        modelId: TITAN_EMBED_MODEL_ID,
        contentType: 'application/json',
        accept: 'application/json',
        body: JSON.stringify({
          inputText: text.slice(0, MAX_INPUT_CHARACTERS),
          dimensions: this.dimensions,
          normalize: true,
        }),
      }),
    );
    const body = JSON.parse(new TextDecoder().decode(response.body)) as { embedding?: unknown };
    const embedding = body.embedding;
    if (
      !Array.isArray(embedding) ||
      embedding.length !== this.dimensions ||
      !embedding.every((x) => typeof x === 'number')
    ) {
      throw new Error(`Titan returned no ${this.dimensions}-dimension embedding`);
    }
    return embedding;
  }
}
