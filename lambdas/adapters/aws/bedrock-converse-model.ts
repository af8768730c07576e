/**
 * ModelProvider on the Bedrock Converse API: for generating with citations from results of the embedded index or of
 * a composed retrieval, where RetrieveAndGenerate (which retrieves by itself) does not fit.
 */
import {
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type Message,
  ModelTimeoutException,
} from '@aws-sdk/client-bedrock-runtime';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from '../../ports/model';

/** The user turn put ahead of a conversation that starts with an assistant message. */
export const CONVERSATION_START = '(The conversation starts here.)';

export class BedrockConverseModel implements ModelProvider {
  readonly name: string;

  constructor(
    private readonly client: BedrockRuntimeClient,
    /** A model id or inference profile id (`anthropic.claude-3-haiku-20240307-v1:0`, `eu.amazon.nova-lite-v1:0`). */
    private readonly modelId: string,
  ) {
    this.name = `bedrock-converse:${modelId}`;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    // Converse takes system text apart and wants the conversation to alternate user and assistant turns.
    const system = [request.system, ...request.messages.filter((m) => m.role === 'system').map((m) => m.content)]
      .filter((text): text is string => text !== undefined && text !== '')
      .map((text) => ({ text }));
    const messages: Message[] = [];
    for (const { role, content } of request.messages) {
      if (role === 'system') continue;
      const last = messages.at(-1);
      if (last?.role === role) last.content?.push({ text: content });
      else messages.push({ role, content: [{ text: content }] });
    }
    // Converse refuses a conversation that opens with the assistant, which a flow does when its first prompt node
    // greets before the user has said anything.
    if (messages[0]?.role === 'assistant') messages.unshift({ role: 'user', content: [{ text: CONVERSATION_START }] });

    let output: Message | undefined;
    try {
      const response = await this.client.send(
        new ConverseCommand({
          modelId: this.modelId,
          system: system.length > 0 ? system : undefined,
          messages,
          inferenceConfig: { maxTokens: request.maxTokens, temperature: request.temperature },
        }),
      );
      output = response.output?.message;
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (error instanceof ModelTimeoutException) {
        throw new ModelError(`The model ${this.name} did not answer in time`, reason, 'timeout');
      }
      throw new ModelError(`The model ${this.name} failed`, reason);
    }

    const texts = (output?.content ?? [])
      .map((block: ContentBlock) => block.text)
      .filter((t): t is string => t !== undefined);
    if (texts.length === 0) {
      throw new ModelError(`The model ${this.name} answered without text`, 'Converse output held no text block');
    }
    return { text: texts.join('') };
  }
}
