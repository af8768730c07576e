/**
 * The loop of a browser task: observe the page, let the model choose one action, have the driver do it, until the
 * model says `done` or the task runs out of steps or time. The same code runs wherever the browser is (the local
 * runtime's process, the BrowserTask function in AWS); the driver gives it the page (BrowserPage) and the model.
 *
 * A step that fails (an element that is not there, a navigation the outbound guard refuses, an answer that is no
 * action) does not end the task: the model is told and chooses again. What ends it early is a limit or a failing
 * model: the result then carries `failure`, and the node fails with that code while keeping what the task did.
 */

import { AppError } from '#core/errors';
import {
  BROWSER_ACTIONS,
  type BrowserAction,
  type BrowserActionName,
  type BrowserChoice,
  type BrowserHistoryEntry,
  type BrowserPage,
  type BrowserStep,
  type BrowserStepError,
  type BrowserTaskResult,
  type FlowModel,
  type FlowModelContext,
  type FlowModelResolver,
  LLM_CLASS_NAMES,
  type LlmClassName,
} from '#ports/flows';

/** Steps one task may take (`done` included). */
export const BROWSER_MAX_STEPS = 20;
/** From the page's first load to the answer; a step is not begun after it. */
export const BROWSER_TIME_LIMIT_MS = 120_000;
/** What the model sees of a page: at most this many elements and characters of visible text... */
export const OBSERVATION_MAX_ELEMENTS = 150;
export const OBSERVATION_TEXT_MAX_CHARS = 4_000;
/** ...each element's name and value cut to this many characters. */
export const ELEMENT_TEXT_MAX_CHARS = 100;
/** Of an `extract`, the model is given this many characters. */
export const EXTRACT_MAX_CHARS = 2_000;
/** The answer of `done`, the text of `type`, a URL of `goto`: longer is cut. */
export const ANSWER_MAX_CHARS = 4_000;
export const TYPED_TEXT_MAX_CHARS = 2_000;
export const URL_MAX_CHARS = 2_048;
/** A step's error message and target, as the output and the events keep them. */
export const STEP_MESSAGE_MAX_CHARS = 300;
export const STEP_TARGET_MAX_CHARS = 200;

export interface BrowserTaskLimits {
  readonly maxSteps: number;
  /** Epoch ms. */
  readonly deadline: number;
  readonly now: () => number;
}

/**
 * Runs the task on an open page. Resolves with the answer and every step; `failure` is set when a limit was hit
 * (BROWSER_STEP_LIMIT) or the model failed (its AppError's code). Errors that are not AppErrors (a bug) propagate.
 */
export async function runBrowserTask(
  page: BrowserPage,
  model: FlowModel,
  task: { readonly prompt: string; readonly context: FlowModelContext },
  limits: BrowserTaskLimits,
): Promise<BrowserTaskResult> {
  const steps: BrowserStep[] = [];
  const history: BrowserHistoryEntry[] = [];
  let answer: string | null = null;
  let failure: BrowserStepError | undefined;
  const limitHit = (): BrowserStepError | undefined => {
    if (steps.length >= limits.maxSteps) {
      return {
        code: 'BROWSER_STEP_LIMIT',
        message: `The browser task took ${limits.maxSteps} steps without the model answering done`,
      };
    }
    if (limits.now() >= limits.deadline) {
      return { code: 'BROWSER_STEP_LIMIT', message: 'The browser task ran out of time before the model answered done' };
    }
    return undefined;
  };

  try {
    for (;;) {
      failure = limitHit();
      if (failure) break;
      const started = limits.now();
      const observation = await page.observe();
      const choice = await model.chooseBrowserAction(task.context, {
        task: task.prompt,
        observation,
        history: [...history],
        stepsLeft: limits.maxSteps - steps.length,
      });
      if (choice.action === 'done') {
        answer = cut(choice.answer, ANSWER_MAX_CHARS);
        steps.push({
          action: 'done',
          target: null,
          ok: true,
          url: observation.url,
          durationMs: elapsed(limits, started),
        });
        break;
      }
      // The model's answer took the time that was left: the action is not begun.
      failure = limits.now() >= limits.deadline ? limitHit() : undefined;
      if (failure) break;
      const step = await perform(page, choice, limits.deadline);
      const { url } = await page.state();
      steps.push({ ...step.record, url, durationMs: elapsed(limits, started) });
      history.push({
        choice,
        ok: step.record.ok,
        ...(step.record.error ? { error: step.record.error } : {}),
        ...(step.extracted === undefined ? {} : { extracted: step.extracted }),
        url,
      });
    }
  } catch (error) {
    // A model that fails (unreachable, not configured) or a page that can no longer be read ends the task here; the
    // steps it took stay in the result.
    if (!(error instanceof AppError)) throw error;
    failure = { code: error.code, message: cut(error.message, STEP_MESSAGE_MAX_CHARS * 3) };
  }
  const state = await page.state();
  return { answer, ...state, steps, ...(failure ? { failure } : {}) };
}

async function perform(
  page: BrowserPage,
  choice: Exclude<BrowserChoice, { action: 'done' }>,
  deadline: number,
): Promise<{ record: Omit<BrowserStep, 'url' | 'durationMs'>; extracted?: string }> {
  if (choice.action === 'invalid') {
    return {
      record: {
        action: 'invalid',
        target: null,
        ok: false,
        error: { code: 'BROWSER_ACTION_INVALID', message: cut(choice.reason, STEP_MESSAGE_MAX_CHARS) },
      },
    };
  }
  const value = stepValue(choice);
  const base = { action: choice.action, ...(value === undefined ? {} : { value }) };
  try {
    const outcome = await page.perform(choice, deadline);
    return {
      record: { ...base, target: targetText(outcome.target), ok: true },
      ...(outcome.extracted === undefined ? {} : { extracted: cut(outcome.extracted, EXTRACT_MAX_CHARS) }),
    };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return {
      record: {
        ...base,
        target: targetText(fallbackTarget(choice)),
        ok: false,
        error: { code: error.code, message: cut(error.message, STEP_MESSAGE_MAX_CHARS) },
      },
    };
  }
}

function stepValue(action: BrowserAction): string | undefined {
  switch (action.action) {
    case 'type':
      return action.text;
    case 'select':
      return action.value;
    case 'press':
      return action.key;
    default:
      return undefined;
  }
}

/** What a failed step names when the page could not say (the ref as the model gave it). */
function fallbackTarget(action: Exclude<BrowserAction, { action: 'done' }>): string | null {
  switch (action.action) {
    case 'goto':
      return action.url;
    case 'scroll':
      return action.direction;
    case 'press':
      return action.target ?? action.key;
    case 'extract':
      return action.target ?? null;
    default:
      return action.target;
  }
}

function targetText(target: string | null): string | null {
  return target === null ? null : cut(target, STEP_TARGET_MAX_CHARS);
}

function elapsed(limits: BrowserTaskLimits, started: number): number {
  return Math.max(0, limits.now() - started);
}

/** At most `max` characters (code points), ending in `…` when cut. */
export function cut(text: string, max: number): string {
  const characters = [...text];
  return characters.length > max ? `${characters.slice(0, max - 1).join('')}…` : text;
}

// ---------------------------------------------------------------------------------------------------------------

const REF = /(?:f\d+)?e\d+/;

/**
 * A model's answer (a parsed JSON value) as an action, read leniently: `ref` or `element` for `target`, a ref
 * written as `[ref=e6]`, `value` for the text of `type`, `option` or `label` for the value of `select`, `text` or
 * `result` for the answer of `done`, `direction` defaulting to `down`. Anything else is `invalid` with the reason.
 */
export function readBrowserAction(value: unknown): BrowserChoice {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalid('the answer is not a JSON object with an "action"');
  }
  const answer = value as Record<string, unknown>;
  const name = typeof answer.action === 'string' ? answer.action.trim().toLowerCase() : undefined;
  if (name === undefined || !(BROWSER_ACTIONS as readonly string[]).includes(name)) {
    return invalid(
      `${name === undefined ? 'no "action"' : `unknown action ${JSON.stringify(cut(name, 40))}`}: one of ${BROWSER_ACTIONS.join(', ')}`,
    );
  }
  const text = (...keys: string[]): string | undefined => {
    for (const key of keys) {
      const found = answer[key];
      if (typeof found === 'string') return found;
      if (typeof found === 'number' || typeof found === 'boolean') return String(found);
    }
    return undefined;
  };
  const target = (): string | undefined => {
    const given = text('target', 'ref', 'element')?.trim();
    if (given === undefined || given === '') return undefined;
    return REF.exec(given)?.[0] ?? given;
  };
  const missing = (field: string) => invalid(`${name} needs "${field}"`);
  switch (name as BrowserActionName) {
    case 'goto': {
      const url = text('url', 'target')?.trim();
      return url ? { action: 'goto', url: cut(url, URL_MAX_CHARS) } : missing('url');
    }
    case 'click': {
      const ref = target();
      return ref ? { action: 'click', target: ref } : missing('target');
    }
    case 'type': {
      const ref = target();
      const typed = text('text', 'value');
      if (!ref) return missing('target');
      return typed === undefined
        ? missing('text')
        : { action: 'type', target: ref, text: cut(typed, TYPED_TEXT_MAX_CHARS) };
    }
    case 'select': {
      const ref = target();
      const option = text('value', 'option', 'label');
      if (!ref) return missing('target');
      return option === undefined ? missing('value') : { action: 'select', target: ref, value: option };
    }
    case 'press': {
      const key = text('key')?.trim();
      const ref = target();
      if (!key) return missing('key');
      return { action: 'press', key: cut(key, 40), ...(ref ? { target: ref } : {}) };
    }
    case 'scroll': {
      const direction = text('direction')?.trim().toLowerCase() ?? 'down';
      return direction === 'up' || direction === 'down'
        ? { action: 'scroll', direction }
        : invalid('scroll needs "direction": up or down');
    }
    case 'extract': {
      const ref = target();
      return { action: 'extract', ...(ref ? { target: ref } : {}) };
    }
    case 'done': {
      const result = text('answer', 'text', 'result');
      return result === undefined ? missing('answer') : { action: 'done', answer: result };
    }
  }
}

function invalid(reason: string): BrowserChoice {
  return { action: 'invalid', reason };
}

/**
 * The model of a browser task from the node's `model` property: absent, the deployment's default model; a class name
 * (`ChatOffline`, `ChatOpenAICompatible`, `ChatBedrockConverse`), that class's default model; any other value, that
 * model of the default model's class (the OpenAI-compatible server's model name, or a Bedrock model id). With the
 * offline model as the default, a model name changes nothing: no model is configured to take it.
 */
export function browserTaskModel(models: FlowModelResolver, model: string | undefined): FlowModel {
  if (model === undefined) return models(undefined);
  if ((LLM_CLASS_NAMES as readonly string[]).includes(model)) return models({ name: model as LlmClassName });
  const fallback = models(undefined);
  const name: LlmClassName | undefined = fallback.name.startsWith('openai-compatible:')
    ? 'ChatOpenAICompatible'
    : fallback.name.startsWith('bedrock-converse:')
      ? 'ChatBedrockConverse'
      : undefined;
  return name === undefined ? fallback : models({ name, properties: { model } });
}
