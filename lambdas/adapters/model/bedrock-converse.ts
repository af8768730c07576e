/**
 * ModelProvider on the Bedrock Converse API: for generating with citations from results of the embedded index or of
 * a composed retrieval, where RetrieveAndGenerate (which retrieves by itself) does not fit.
 */

import {
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ImageFormat,
  type Message,
  ModelTimeoutException,
  type ToolConfiguration,
  type ToolUseBlock,
} from '@aws-sdk/client-bedrock-runtime';
import { isThrottledByAws } from '#adapters/errors/aws-throttling';
import { SERVICE_BUSY_RETRY_AFTER_SECONDS, ServiceBusyError } from '#core/errors';
import {
  type ImageMediaType,
  ModelError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ModelToolCall,
  type ModelToolRound,
  type ModelUsage,
} from '#ports/model';

/** Converse's JSON document type (the SDK does not export it by name). */
type DocumentType = NonNullable<ToolUseBlock['input']>;

/** The user turn put ahead of a conversation that starts with an assistant message. */
export const CONVERSATION_START = '(The conversation starts here.)';

export class BedrockConverseModel implements ModelProvider {
  readonly name: string;
  readonly imageInput: boolean;

  constructor(
    private readonly client: BedrockRuntimeClient,
    /** A model id or inference profile id (`anthropic.claude-3-haiku-20240307-v1:0`, `eu.amazon.nova-lite-v1:0`). */
    private readonly modelId: string,
    /** `imageInput` (BEDROCK_IMAGE_INPUT): whether the model reads images; default true. */
    options: { readonly imageInput?: boolean } = {},
  ) {
    this.name = `bedrock-converse:${modelId}`;
    this.imageInput = options.imageInput ?? true;
  }

  async generate(request: ModelRequest): Promise<ModelResponse> {
    // Converse takes system text apart and wants the conversation to alternate user and assistant turns.
    const system = [request.system, ...request.messages.filter((m) => m.role === 'system').map((m) => m.content)]
      .filter((text): text is string => text !== undefined && text !== '')
      .map((text) => ({ text }));
    const messages: Message[] = [];
    for (const message of request.messages) {
      if (message.role === 'system') continue;
      // An earlier tool node's step is said in words in a user turn: Converse takes tool blocks only with a toolConfig.
      const role = message.role === 'tool' ? 'user' : message.role;
      const last = messages.at(-1);
      if (last?.role === role) last.content?.push(...contentBlocksOf(message));
      else messages.push({ role, content: contentBlocksOf(message) });
    }
    // Converse refuses a conversation that opens with the assistant, which a flow does when its first prompt node
    // greets before the user has said anything.
    if (messages[0]?.role === 'assistant') messages.unshift({ role: 'user', content: [{ text: CONVERSATION_START }] });
    for (const round of request.toolRounds ?? []) messages.push(...toolRoundMessages(round));
    const toolConfig: ToolConfiguration | undefined = request.tools?.length
      ? {
          tools: request.tools.map(({ name, description, inputSchema }) => ({
            toolSpec: { name, description, inputSchema: { json: inputSchema as DocumentType } },
          })),
        }
      : undefined;

    let output: Message | undefined;
    let usage: ModelUsage | undefined;
    try {
      const response = await this.client.send(
        new ConverseCommand({
          modelId: this.modelId,
          system: system.length > 0 ? system : undefined,
          messages,
          inferenceConfig: {
            maxTokens: request.maxTokens,
            temperature: bedrockTemperature(request.temperature),
            topP: request.topP,
            stopSequences: request.stopSequences ? [...request.stopSequences] : undefined,
          },
          toolConfig,
        }),
      );
      output = response.output?.message;
      const { inputTokens, outputTokens } = response.usage ?? {};
      if (inputTokens !== undefined && outputTokens !== undefined) usage = { inputTokens, outputTokens };
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      if (error instanceof ModelTimeoutException) {
        throw new ModelError(`The model ${this.name} did not answer in time`, reason, 'timeout');
      }
      // Throttled through the SDK's own retries: the caller is told to come back (503 SERVICE_BUSY), as for any
      // throttled AWS dependency, not that the model failed.
      if (isThrottledByAws(error)) throw new ServiceBusyError(SERVICE_BUSY_RETRY_AFTER_SECONDS);
      // A ValidationException (400) is how Converse refuses an image block the model cannot read.
      const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
      throw new ModelError(`The model ${this.name} failed`, reason, 'unavailable', status);
    }

    const blocks: ContentBlock[] = output?.content ?? [];
    const texts = blocks.map((block) => block.text).filter((t): t is string => t !== undefined);
    const toolCalls: ModelToolCall[] = toolConfig
      ? blocks.flatMap((block) =>
          block.toolUse?.toolUseId && block.toolUse.name
            ? [{ id: block.toolUse.toolUseId, name: block.toolUse.name, input: block.toolUse.input ?? {} }]
            : [],
        )
      : [];
    if (toolCalls.length > 0) return { text: texts.join(''), toolCalls, ...(usage ? { usage } : {}) };
    if (texts.length === 0) {
      throw new ModelError(`The model ${this.name} answered without text`, 'Converse output held no text block');
    }
    return { text: texts.join(''), ...(usage ? { usage } : {}) };
  }
}

const IMAGE_FORMATS: Readonly<Record<ImageMediaType, ImageFormat>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/**
 * A message's text block, then an `image` block with the bytes of each image of a user message. A message that is
 * only images has no text block: Converse refuses an empty one.
 */
function contentBlocksOf({ role, content, images }: ModelMessage): ContentBlock[] {
  if (role !== 'user' || !images?.length) return [{ text: content }];
  return [
    ...(content === '' ? [] : [{ text: content }]),
    ...images.map((image) => ({
      image: { format: IMAGE_FORMATS[image.mediaType], source: { bytes: image.data } },
    })),
  ];
}

/**
 * A round as Converse carries it: the assistant's `toolUse` blocks, then one user turn of `toolResult` blocks. A
 * result that is a JSON object goes as a `json` block, anything else as its JSON text. No `status` is sent: only
 * some models accept it, and a failed call's result already says `error`.
 */
function toolRoundMessages(round: ModelToolRound): Message[] {
  return [
    {
      role: 'assistant',
      content: [
        ...(round.text ? [{ text: round.text }] : []),
        ...round.calls.map((call) => ({
          toolUse: {
            toolUseId: call.id,
            name: call.name,
            input: (isPlainObject(call.input) ? call.input : {}) as DocumentType,
          },
        })),
      ],
    },
    {
      role: 'user',
      content: round.results.map((result) => ({
        toolResult: {
          toolUseId: result.callId,
          content: [
            isPlainObject(result.content)
              ? { json: result.content as DocumentType }
              : { text: JSON.stringify(result.content) ?? 'null' },
          ],
        },
      })),
    },
  ];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Converse takes a temperature of 0 to 1 (InferenceConfiguration); a flow may set 0 to 2, the range of the
 * OpenAI-compatible class. Above 1 is sent as 1, the most random Bedrock allows, rather than refused at run time.
 */
export function bedrockTemperature(temperature: number | undefined): number | undefined {
  return temperature === undefined ? undefined : Math.min(1, temperature);
}
