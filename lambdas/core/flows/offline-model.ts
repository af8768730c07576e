/**
 * The flow model of a deployment with no model configured (and of `ChatOffline` nodes). It is NOT a language model:
 * it never invents text, never calls the network and always answers the same input the same way, so a flow can be
 * built and tested offline and its author sees exactly what each node would ask a model. The exact rules:
 *
 * - respond: the node's rendered prompt, trimmed. When `context.system` holds a retrieval block (a line starting
 *   `Relevant knowledge`) whose entries include a line starting `[1] (`, one more line follows:
 *   `Knowledge: <text of entry [1]>`, with its `[1] (document …, score …)` prefix removed, at most 300 characters
 *   (code points). An empty prompt gives the Knowledge line alone; an empty entry gives no Knowledge line. When
 *   the conversation it is given carries images (attachments), a last line says how many and that it cannot see
 *   them: `Images: <N> attached; the offline model cannot see them.`
 * - chooseCondition: the words of the LAST user message and of each condition, where a word is a run of unicode
 *   letters and digits, NFKC-normalized and lowercased, at least 3 characters long and not in STOP_WORDS. The
 *   condition sharing the most distinct words wins, the first one on a tie. No shared word: `'stay'` when
 *   `allowStay`, else null. No user message: null.
 * - inferParameters: for each missing parameter, the memory value of the same name when it has the parameter's
 *   type (`isParameterValueOfType`); for type number a numeric string (`42`, `-1.5`, `2e3`) is converted, for type
 *   boolean the strings `true` and `false` are. Anything else, or a parameter without a spec, is left out.
 * - respondWithTools (a prompt node with scoped tools): on the node's first turn, it calls the ONE scoped tool whose
 *   name appears earliest in the rendered prompt as a whole word (not inside a longer name of letters, digits, `_`
 *   or `-`), with every declared parameter that inferParameters' rule finds in memory; no name appears: it answers
 *   as respond does, calling nothing. On the next turn it answers: respond's text, then one line per call,
 *   `<tool name>: <the result as JSON>` (what the call gave back, an `{ "error": … }` included), cut to
 *   OFFLINE_TOOL_RESULT_MAX_CHARACTERS code points with `…` when cut.
 * - chooseBrowserAction (a browser task): `done` at once, with the page's visible text as the observation holds it
 *   (OBSERVATION_TEXT_MAX_CHARS) as the answer: the task reads the page it opened, one step.
 */

import type {
  BrowserActionRequest,
  BrowserChoice,
  FlowModel,
  FlowModelContext,
  ToolTurn,
  ToolTurnRequest,
} from '#ports/flows';
import type { ModelToolRound } from '#ports/model';
import { isParameterValueOfType, type ToolParameterSpec } from './parameters';

export const OFFLINE_KNOWLEDGE_MAX_CHARACTERS = 300;
export const OFFLINE_TOOL_RESULT_MAX_CHARACTERS = 1_000;
/** The id of the offline model's one call: it makes one per node run. */
export const OFFLINE_TOOL_CALL_ID = 'offline-call-0';

/** English function words that say nothing about which condition holds. Kept small on purpose. */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'about',
  'after',
  'all',
  'also',
  'and',
  'any',
  'are',
  'been',
  'but',
  'can',
  'could',
  'did',
  'does',
  'for',
  'from',
  'had',
  'has',
  'have',
  'her',
  'his',
  'how',
  'into',
  'its',
  'not',
  'now',
  'our',
  'she',
  'should',
  'that',
  'the',
  'their',
  'them',
  'then',
  'there',
  'they',
  'this',
  'was',
  'were',
  'what',
  'when',
  'where',
  'which',
  'who',
  'why',
  'will',
  'with',
  'would',
  'you',
  'your',
]);

const MIN_WORD_LENGTH = 3;
const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const RETRIEVAL_HEADER = 'Relevant knowledge';
const FIRST_ENTRY = '[1] (';

export class OfflineFlowModel implements FlowModel {
  readonly name = 'offline';

  async respond(context: FlowModelContext, prompt: string): Promise<string> {
    const knowledge = firstRetrievedEntry(context.system);
    const images = context.messages.reduce((count, message) => count + (message.images?.length ?? 0), 0);
    return [
      prompt.trim(),
      knowledge === null ? '' : `Knowledge: ${knowledge}`,
      images === 0 ? '' : `Images: ${images} attached; the offline model cannot see them.`,
    ]
      .filter((line) => line !== '')
      .join('\n');
  }

  async chooseCondition(
    context: FlowModelContext,
    request: { readonly conditions: readonly string[]; readonly allowStay: boolean },
  ): Promise<number | 'stay' | null> {
    const lastUser = context.messages.findLast((message) => message.role === 'user');
    if (lastUser === undefined) return null;
    const said = contentWords(lastUser.content);
    let best = -1;
    let bestShared = 0;
    request.conditions.forEach((condition, index) => {
      let shared = 0;
      for (const word of contentWords(condition)) if (said.has(word)) shared++;
      if (shared > bestShared) {
        best = index;
        bestShared = shared;
      }
    });
    if (best >= 0) return best;
    return request.allowStay ? 'stay' : null;
  }

  async inferParameters(
    _context: FlowModelContext,
    request: Parameters<FlowModel['inferParameters']>[1],
  ): Promise<Record<string, unknown>> {
    return fromMemoryByName(request.parameters, request.missing, request.memory);
  }

  async respondWithTools(context: FlowModelContext, request: ToolTurnRequest): Promise<ToolTurn> {
    const answer = await this.respond(context, request.prompt);
    if (request.rounds.length > 0) {
      const lines = request.rounds.flatMap(resultLines);
      return { answer: [answer, ...lines].filter((line) => line !== '').join('\n') };
    }
    const named = request.tools
      .map((tool) => ({ tool, at: wholeWordIndex(request.prompt, tool.name) }))
      .filter(({ at }) => at >= 0)
      .sort((a, b) => a.at - b.at)[0];
    if (named === undefined) return { answer };
    const { tool } = named;
    const input = fromMemoryByName(tool.parameters, Object.keys(tool.parameters), request.memory);
    return { calls: [{ id: OFFLINE_TOOL_CALL_ID, name: tool.name, input }] };
  }

  /**
   * A browser task reads the page it was given and nothing more: one step, `done`, whose answer is the page's visible
   * text as the observation holds it (the node's output also has the whole text, as before browser tasks acted).
   */
  async chooseBrowserAction(_context: FlowModelContext, request: BrowserActionRequest): Promise<BrowserChoice> {
    return { action: 'done', answer: request.observation.text };
  }
}

function fromMemoryByName(
  parameters: Readonly<Record<string, ToolParameterSpec>>,
  names: readonly string[],
  memory: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const inferred: Record<string, unknown> = {};
  for (const name of names) {
    const spec = Object.hasOwn(parameters, name) ? parameters[name] : undefined;
    if (spec === undefined || !Object.hasOwn(memory, name)) continue;
    const value = fromMemory(memory[name], spec.type);
    if (value !== undefined) inferred[name] = value;
  }
  return inferred;
}

/** Where `name` first stands alone in `text` (not inside a longer tool-like name), or -1. */
function wholeWordIndex(text: string, name: string): number {
  const isNameCharacter = (char: string | undefined) => char !== undefined && /[A-Za-z0-9_-]/.test(char);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    if (!isNameCharacter(text[at - 1]) && !isNameCharacter(text[at + name.length])) return at;
  }
  return -1;
}

function resultLines(round: ModelToolRound): string[] {
  return round.calls.map((call) => {
    const result = round.results.find((r) => r.callId === call.id);
    const json = JSON.stringify(result?.content ?? null) ?? 'null';
    const characters = [...json];
    const text =
      characters.length > OFFLINE_TOOL_RESULT_MAX_CHARACTERS
        ? `${characters.slice(0, OFFLINE_TOOL_RESULT_MAX_CHARACTERS).join('')}…`
        : json;
    return `${call.name}: ${text}`;
  });
}

function fromMemory(value: unknown, type: ToolParameterSpec['type']): unknown {
  if (isParameterValueOfType(value, type)) return value;
  if (typeof value !== 'string') return undefined;
  if (type === 'number' && NUMERIC.test(value)) return Number(value);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return undefined;
}

function contentWords(text: string): Set<string> {
  const words =
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return new Set(words.filter((word) => [...word].length >= MIN_WORD_LENGTH && !STOP_WORDS.has(word)));
}

/** The text of entry [1] of the first retrieval block in the system text, or null. */
function firstRetrievedEntry(system: string | undefined): string | null {
  if (system === undefined) return null;
  const lines = system.split(/\r?\n/);
  const header = lines.findIndex((line) => line.startsWith(RETRIEVAL_HEADER));
  if (header < 0) return null;
  const entry = lines.slice(header + 1).find((line) => line.startsWith(FIRST_ENTRY));
  if (entry === undefined) return null;
  const text = [...withoutEntryPrefix(entry).trim()].slice(0, OFFLINE_KNOWLEDGE_MAX_CHARACTERS).join('');
  return text === '' ? null : text;
}

/**
 * The entry after `[1] (document <id>, score 0.82) `: the id may hold commas or parentheses, the score never does.
 * With indexOf, not a lazy regex, which was quadratic on an id full of `, score `.
 */
function withoutEntryPrefix(entry: string): string {
  const rest = entry.slice('[1] '.length);
  if (!rest.startsWith('(document ')) return rest;
  const score = rest.indexOf(', score ');
  const close = score === -1 ? -1 : rest.indexOf(')', score);
  return close === -1 ? rest : rest.slice(close + 1);
}
