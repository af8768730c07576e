/**
 * FlowModel on any ModelProvider (an OpenAI-compatible server, Bedrock Converse): each call is one generate call
 * whose answer is read back robustly, since a model may wrap it in words, fences or a <think> block. A provider
 * failure propagates as its ModelError; an answer that cannot be read is "no condition" or "no parameter".
 */
import { ImagesRefusedError } from '#core/flows/attachments';
import { readBrowserAction } from '#core/flows/browser-task';
import { isParameterValueOfType } from '#core/flows/parameters';
import type {
  BrowserActionRequest,
  BrowserChoice,
  BrowserElement,
  FlowModel,
  FlowModelContext,
  ParameterInferenceRequest,
  ScopedTool,
  ToolTurn,
  ToolTurnRequest,
} from '#ports/flows';
import {
  ModelError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ModelTool,
} from '#ports/model';

export interface PromptedFlowModelOptions {
  /** For the AI messages of prompt nodes; routing and parameters always use 0. */
  readonly temperature?: number;
  readonly maxTokens?: number;
  /** For the AI messages of prompt nodes only: a decision is read whole. */
  readonly topP?: number;
  readonly stopSequences?: readonly string[];
}

/** Choosing and inferring are classification, not writing: the most likely answer, every time. */
const DECISION_TEMPERATURE = 0;
/** Memory is sent to help infer parameters; a large one is cut rather than filling the context window. */
const MEMORY_MAX_CHARACTERS = 4_000;

const RESPOND_INSTRUCTION =
  "You speak for the agent in this conversation. The last user turn is not from the end user: it is the instruction of the current step of the agent's flow. Follow it and answer with only the message to send to the end user.";
const TOOLS_INSTRUCTION =
  'You may call the tools you are given to get what the step needs; each result comes back to you. When you have what you need, answer with only the message to send to the end user.';
const CHOOSE_INSTRUCTION =
  'You route a conversation flow: you decide which condition holds after the conversation so far. Answer with only a number, or none.';
const INFER_INSTRUCTION =
  'You fill in the parameters of a tool call from the conversation and the session memory. Answer with only a JSON object.';

export class PromptedFlowModel implements FlowModel {
  readonly name: string;

  constructor(
    readonly provider: ModelProvider,
    private readonly options: PromptedFlowModelOptions = {},
  ) {
    this.name = provider.name;
  }

  async respond(context: FlowModelContext, prompt: string): Promise<string> {
    const { text } = await this.generate(context, {
      system: withInstruction(context.system, RESPOND_INSTRUCTION),
      messages: [...context.messages, { role: 'user', content: prompt }],
      ...this.answerParameters(),
    });
    return text.trim();
  }

  async respondWithTools(context: FlowModelContext, request: ToolTurnRequest): Promise<ToolTurn> {
    const response = await this.generate(context, {
      system: withInstruction(context.system, `${RESPOND_INSTRUCTION} ${TOOLS_INSTRUCTION}`),
      messages: [...context.messages, { role: 'user', content: request.prompt }],
      tools: request.tools.map(modelToolOf),
      toolRounds: request.rounds,
      ...this.answerParameters(),
    });
    if (response.toolCalls && response.toolCalls.length > 0) {
      const text = response.text.trim();
      return { calls: response.toolCalls, ...(text === '' ? {} : { text }) };
    }
    return { answer: response.text.trim() };
  }

  async chooseCondition(
    context: FlowModelContext,
    request: { readonly conditions: readonly string[]; readonly allowStay: boolean },
  ): Promise<number | 'stay' | null> {
    const { conditions, allowStay } = request;
    if (conditions.length === 0 && !allowStay) return null;
    const question = [
      'Which condition holds after the conversation so far?',
      ...(allowStay ? ['0 = stay on this step: no condition holds yet, the conversation goes on here'] : []),
      ...conditions.map((condition, i) => `${i + 1} = ${oneLine(condition)}`),
      'Answer with just the number, or none when no condition holds.',
    ].join('\n');
    const { text } = await this.decide(context, CHOOSE_INSTRUCTION, question);
    return readCondition(text, conditions.length, allowStay);
  }

  async inferParameters(
    context: FlowModelContext,
    request: ParameterInferenceRequest,
  ): Promise<Record<string, unknown>> {
    // A parameter without a spec has no type to check the answer against, so it is not asked for.
    const asked = request.missing.flatMap((name) =>
      Object.hasOwn(request.parameters, name) ? [[name, request.parameters[name]] as const] : [],
    );
    if (asked.length === 0) return {};
    const memory = memoryJson(request.memory);
    const question = [
      `Tool: ${request.toolName}`,
      ...(request.hint ? [`Hint: ${oneLine(request.hint)}`] : []),
      ...(memory === null ? [] : [`Session memory (JSON): ${memory}`]),
      'Parameters to fill in:',
      ...asked.map(
        ([name, spec]) =>
          `- ${JSON.stringify(name)} (${spec.type}${spec.required ? ', required' : ''})${spec.description ? `: ${oneLine(spec.description)}` : ''}`,
      ),
      `Answer with only a JSON object with exactly these keys: ${asked.map(([name]) => JSON.stringify(name)).join(', ')}. Leave out a key whose value the conversation and the memory do not give.`,
    ].join('\n');
    const { text } = await this.decide(context, INFER_INSTRUCTION, question);
    const answer = readJsonObject(text);
    const inferred: Record<string, unknown> = {};
    for (const [name, spec] of asked) {
      if (Object.hasOwn(answer, name) && isParameterValueOfType(answer[name], spec.type)) inferred[name] = answer[name];
    }
    return inferred;
  }

  /** The next step of a browser task: one decision, its JSON action read leniently (readBrowserAction). */
  async chooseBrowserAction(context: FlowModelContext, request: BrowserActionRequest): Promise<BrowserChoice> {
    const { text } = await this.decide(context, BROWSER_INSTRUCTION, browserQuestion(request));
    const answer = withoutThinking(text);
    const block = firstBraceBlock(fencedBlock(answer) ?? answer);
    if (block === null) return readBrowserAction(undefined);
    try {
      return readBrowserAction(JSON.parse(block));
    } catch {
      return { action: 'invalid', reason: 'the answer is not valid JSON' };
    }
  }

  /**
   * One generate call. A model without image input gets, instead of a message's images, a line saying they were
   * there (so it can tell the user it cannot see them); a model that refuses a request with images with a 4xx of
   * its own fails the node with MODEL_IMAGES_REFUSED, which says how to declare it text-only.
   */
  private async generate(context: FlowModelContext, request: ModelRequest): Promise<ModelResponse> {
    const response = await this.generateOnce(request);
    if (response.usage) context.onUsage?.(response.usage);
    return response;
  }

  /** The parameters of an answer (a prompt node's AI message), as the node's llmConfig sets them. */
  private answerParameters(): Pick<ModelRequest, 'temperature' | 'maxTokens' | 'topP' | 'stopSequences'> {
    const { temperature, maxTokens, topP, stopSequences } = this.options;
    return { temperature, maxTokens, topP, stopSequences };
  }

  private async generateOnce(request: ModelRequest): Promise<ModelResponse> {
    const images = request.messages.reduce((count, message) => count + (message.images?.length ?? 0), 0);
    if (images === 0) return this.provider.generate(request);
    if (!this.provider.imageInput) {
      return this.provider.generate({ ...request, messages: request.messages.map(withImagesAsText) });
    }
    try {
      return await this.provider.generate(request);
    } catch (error) {
      const status = error instanceof ModelError ? error.providerStatus : undefined;
      if (status !== undefined && IMAGE_REFUSAL_STATUSES.has(status)) {
        throw new ImagesRefusedError(this.provider.name, images, status);
      }
      throw error;
    }
  }

  private decide(context: FlowModelContext, instruction: string, question: string) {
    const messages: ModelMessage[] = [...context.messages, { role: 'user', content: question }];
    return this.generate(context, {
      system: withInstruction(context.system, instruction),
      messages,
      temperature: DECISION_TEMPERATURE,
      maxTokens: this.options.maxTokens,
    });
  }
}

/**
 * A scoped tool as the model sees it: its parameters as a JSON schema of an object. Only setMemory, which writes
 * whatever it is given, allows properties it does not list.
 */
export function modelToolOf(tool: ScopedTool): ModelTool {
  const properties = Object.fromEntries(
    Object.entries(tool.parameters).map(([name, spec]) => [
      name,
      {
        type: spec.type,
        ...(spec.description ? { description: spec.description } : {}),
        ...(spec.type === 'array' ? { items: {} } : {}),
      },
    ]),
  );
  const required = Object.entries(tool.parameters)
    .filter(([, spec]) => spec.required)
    .map(([name]) => name);
  return {
    name: tool.name,
    description: tool.description,
    // An MCP tool's schema as its server lists it.
    inputSchema: tool.inputSchema ?? {
      type: 'object',
      properties,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: tool.anyParameters,
    },
  };
}

/**
 * What a provider answers to a request it cannot take as sent (400, 413 too large, 415, 422); a 401/403 or a 429
 * says nothing about the images and stays a MODEL_ERROR.
 */
const IMAGE_REFUSAL_STATUSES: ReadonlySet<number> = new Set([400, 413, 415, 422]);

/** A message's images as a line of text, for a model that cannot see them. */
export function withImagesAsText(message: ModelMessage): ModelMessage {
  if (!message.images?.length) return message;
  const { images, ...rest } = message;
  const note = `[The user attached ${images.length} image(s) (${images.map((i) => i.mediaType).join(', ')}); the model answering cannot see images.]`;
  return { ...rest, content: rest.content === '' ? note : `${rest.content}\n${note}` };
}

function withInstruction(system: string | undefined, instruction: string): string {
  return system ? `${system}\n\n${instruction}` : instruction;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Reasoning models served through chat completions (deepseek-r1 on Ollama) put their thoughts in the content. */
function withoutThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?(?:<\/think>|$)/gi, '');
}

/**
 * The first `none` or integer of the answer decides: `none` → null; 0 → 'stay' (when offered); 1..n → that condition;
 * anything else (out of range, negative, no number) → null. Only the first number counts: a later one would be a guess.
 */
function readCondition(text: string, count: number, allowStay: boolean): number | 'stay' | null {
  const first = /\bnone\b|-?\d+/i.exec(withoutThinking(text));
  if (first === null || /none/i.test(first[0])) return null;
  const chosen = Number(first[0]);
  if (chosen === 0) return allowStay ? 'stay' : null;
  return chosen >= 1 && chosen <= count ? chosen - 1 : null;
}

/**
 * The body of the first ``` fence (its first line, such as `json`, is the fence's label), or null. With indexOf: the
 * regex it replaces was quadratic on a model answer full of unclosed fences.
 */
function fencedBlock(text: string): string | null {
  const open = text.indexOf('```');
  if (open === -1) return null;
  const lineEnd = text.indexOf('\n', open + 3);
  if (lineEnd === -1) return null;
  const close = text.indexOf('```', lineEnd + 1);
  return close === -1 ? null : text.slice(lineEnd + 1, close);
}

/** The object in a ```json fence, else the first balanced {...} of the answer; {} when there is none or it is not JSON. */
function readJsonObject(text: string): Record<string, unknown> {
  const answer = withoutThinking(text);
  const block = firstBraceBlock(fencedBlock(answer) ?? answer);
  if (block === null) return {};
  try {
    const parsed: unknown = JSON.parse(block);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** From the first `{` to the `}` that closes it, braces inside JSON strings not counted; null when unclosed. */
function firstBraceBlock(text: string): string | null {
  const start = text.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  return null;
}

function memoryJson(memory: Readonly<Record<string, unknown>>): string | null {
  if (Object.keys(memory).length === 0) return null;
  let json: string;
  try {
    json = JSON.stringify(memory);
  } catch {
    return null; // a cycle or a BigInt: infer from the conversation alone
  }
  return json.length > MEMORY_MAX_CHARACTERS ? `${json.slice(0, MEMORY_MAX_CHARACTERS)} …(cut)` : json;
}

// ---------------------------------------------------------------------------------------------------------------
// Browser tasks

const BROWSER_INSTRUCTION =
  'You operate a web browser to do a task for the agent, one action at a time. You see the page as it is now: its interactive elements, each with a ref, and its visible text. Answer with only one JSON object: the next action.';

const BROWSER_ACTION_FORMATS = [
  '{"action":"goto","url":"<URL>"}',
  '{"action":"click","target":"<ref>"}',
  '{"action":"type","target":"<ref>","text":"<text that replaces the field\'s>"}',
  '{"action":"select","target":"<ref>","value":"<option>"}',
  '{"action":"press","key":"<Enter, Tab, ArrowDown…>","target":"<ref, optional>"}',
  '{"action":"scroll","direction":"<down or up>"}',
  '{"action":"extract","target":"<ref, optional: the whole page without it>"}',
  '{"action":"done","answer":"<the answer to the task, from what the pages showed>"}',
];

/** The task, the steps so far and the page as one question; every value on one line, the page text last. */
function browserQuestion(request: BrowserActionRequest): string {
  const { observation, history } = request;
  const steps = history.map((entry, i) => {
    const outcome = entry.ok ? 'ok' : `failed: ${entry.error?.code ?? 'ERROR'}: ${oneLine(entry.error?.message ?? '')}`;
    const read = entry.extracted === undefined ? '' : `; it read: ${JSON.stringify(entry.extracted)}`;
    return `${i + 1}. ${JSON.stringify(entry.choice)} -> ${outcome}${read}`;
  });
  return [
    `Task: ${oneLine(request.task)}`,
    `Steps left (this one included): ${request.stepsLeft}`,
    ...(steps.length > 0 ? ['Steps so far:', ...steps] : ['No step yet.']),
    '',
    'The page now:',
    `URL: ${observation.url}`,
    `Title: ${oneLine(observation.title)}`,
    'Elements (ref, role, name, state):',
    ...(observation.elements.length > 0 ? observation.elements.map(elementLine) : ['(none)']),
    `Visible text${observation.cut ? ' (cut)' : ''}:`,
    observation.text === '' ? '(none)' : observation.text,
    '',
    'Answer with only one of:',
    ...BROWSER_ACTION_FORMATS,
  ].join('\n');
}

function elementLine(element: BrowserElement): string {
  const parts = [`${element.ref}: ${element.role}`];
  if (element.name !== '') parts.push(JSON.stringify(element.name));
  if (element.value !== undefined) parts.push(`value=${JSON.stringify(element.value)}`);
  if (element.checked !== undefined)
    parts.push(element.checked === true ? 'checked' : element.checked === false ? 'unchecked' : 'mixed');
  if (element.disabled) parts.push('disabled');
  if (element.options) parts.push(`options=${JSON.stringify(element.options)}`);
  if (element.selected !== undefined) parts.push(`selected=${JSON.stringify(element.selected)}`);
  if (element.url !== undefined) parts.push(`url=${element.url}`);
  return `- ${parts.join(' ')}`;
}
