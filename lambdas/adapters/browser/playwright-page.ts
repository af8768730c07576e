/**
 * The page of one browser task in Chromium, as the task loop (core/flows/browser-task.ts) sees it: observed through
 * Playwright's accessibility snapshot in its "ai" mode, whose element refs (`e6`, `f1e2` in a frame) stay the same for
 * the same element, so the model names what it acts on by ref; acted on through Playwright's locators. Every request
 * goes through the task's guard proxy; a navigation the proxy refused fails its step with TARGET_REFUSED and the page
 * goes back to where it was.
 *
 * Over 400 lines on purpose: one class over one Playwright page, whose observe and act methods share the page, its
 * frames and the refs of the last snapshot.
 */
import { type BrowserContext, errors, type Page, type Request, type Response } from 'playwright-core';
import { checkTarget, type TargetGuardOptions } from '#adapters/network/url-guard';
import { AppError } from '#core/errors';
import {
  cut,
  ELEMENT_TEXT_MAX_CHARS,
  OBSERVATION_MAX_ELEMENTS,
  OBSERVATION_TEXT_MAX_CHARS,
} from '#core/flows/browser-task';
import {
  type BrowserAction,
  type BrowserActionOutcome,
  type BrowserElement,
  type BrowserObservation,
  type BrowserPage,
  type BrowserPageState,
  OutboundError,
} from '#ports/flows';
import type { GuardProxy } from './guard-proxy';

export const MAX_PAGE_TEXT_CHARS = 20_000;
/** An action on an element (click, type, select, press) waits this long at most for the element to be ready. */
export const ELEMENT_ACTION_TIMEOUT_MS = 5_000;
/** A submit's navigation begins just after the click that caused it returned: this long is waited for it. */
const NAVIGATION_GRACE_MS = 150;
/** Roles a step acts on; any element the snapshot marks `cursor=pointer` is offered too. */
const INTERACTIVE_ROLES = new Set([
  'button',
  'link',
  'textbox',
  'searchbox',
  'combobox',
  'listbox',
  'checkbox',
  'radio',
  'switch',
  'slider',
  'spinbutton',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'tab',
  'treeitem',
  'option',
]);

export interface PlaywrightPageOptions {
  readonly guard: TargetGuardOptions;
  /** Loading a page (the first one, `goto`, a navigation a step caused) and reading it. */
  readonly timeoutMs: number;
}

/** A node of `ariaSnapshotJSON({ mode: 'ai' })`: text, or an element. */
type SnapshotNode =
  | string
  | {
      readonly role?: string;
      readonly name?: string;
      readonly ref?: string;
      readonly text?: string;
      readonly checked?: boolean | 'mixed';
      readonly disabled?: boolean;
      readonly selected?: boolean;
      readonly url?: string;
      readonly cursor?: string;
      readonly children?: readonly SnapshotNode[];
    };

export class PlaywrightPage implements BrowserPage {
  private page: Page;
  private status: number | null = null;
  /** Every ref of the last snapshot (interactive or not: `extract` may read a paragraph), with its description. */
  private refs = new Map<string, string>();

  private constructor(
    page: Page,
    private readonly proxy: GuardProxy,
    private readonly options: PlaywrightPageOptions,
  ) {
    this.page = page;
    this.watch(page);
  }

  /** A new page of `context` at `target`; rejects with TARGET_REFUSED or BROWSER_FAILED as a task that cannot begin. */
  static async open(
    context: BrowserContext,
    proxy: GuardProxy,
    target: URL,
    options: PlaywrightPageOptions,
  ): Promise<PlaywrightPage> {
    const page = new PlaywrightPage(await context.newPage(), proxy, options);
    const refusal = await page.navigate(target, Date.now() + options.timeoutMs);
    if (refusal) throw refusal;
    return page;
  }

  async observe(): Promise<BrowserObservation> {
    const page = this.page;
    const read = () =>
      withDeadline(
        Promise.all([
          page.ariaSnapshotJSON({ mode: 'ai', timeout: this.options.timeoutMs }),
          page.title(),
          visibleText(page),
        ]),
        this.options.timeoutMs,
      );
    let snapshot: unknown;
    let title: string;
    let text: string;
    try {
      [snapshot, title, text] = await read().catch(async () => {
        // A page still navigating has no document to read yet: once it loaded, it has.
        await page.waitForLoadState('load', { timeout: this.options.timeoutMs }).catch(() => undefined);
        return read();
      });
    } catch (error) {
      throw this.failure(error, page.url(), 'read');
    }
    const refs = new Map<string, string>();
    const elements: BrowserElement[] = [];
    collect(snapshot as SnapshotNode | readonly SnapshotNode[], refs, elements);
    this.refs = refs;
    const shownText = cut(text, OBSERVATION_TEXT_MAX_CHARS);
    return {
      url: page.url(),
      title: cut(title, ELEMENT_TEXT_MAX_CHARS * 2),
      elements: elements.slice(0, OBSERVATION_MAX_ELEMENTS),
      text: shownText,
      cut: elements.length > OBSERVATION_MAX_ELEMENTS || shownText !== text,
    };
  }

  async perform(action: Exclude<BrowserAction, { action: 'done' }>, deadline: number): Promise<BrowserActionOutcome> {
    const page = this.page;
    const timeout = (max: number) => Math.max(1_000, Math.min(max, deadline - Date.now()));
    const elementTimeout = timeout(ELEMENT_ACTION_TIMEOUT_MS);
    switch (action.action) {
      case 'goto': {
        let target: URL;
        try {
          target = await checkTarget(new URL(action.url, page.url()).href, this.options.guard);
        } catch (error) {
          if (error instanceof OutboundError && error.code === 'OUTBOUND_FAILED') {
            throw new OutboundError('BROWSER_FAILED', error.message);
          }
          if (error instanceof AppError) throw error;
          throw new OutboundError('TARGET_REFUSED', 'The outbound target is not a valid URL');
        }
        const refusal = await this.navigate(target, Date.now() + timeout(this.options.timeoutMs));
        if (refusal) {
          await this.back();
          throw refusal;
        }
        return { target: target.href };
      }
      case 'click': {
        const { locator, target } = this.element(action.target);
        await this.acting(() => locator.click({ timeout: elementTimeout }), deadline, target, 'click');
        return { target };
      }
      case 'type': {
        const { locator, target } = this.element(action.target);
        await this.acting(() => locator.fill(action.text, { timeout: elementTimeout }), deadline, target, 'type in');
        return { target };
      }
      case 'select': {
        const { locator, target } = this.element(action.target);
        await this.acting(
          () => locator.selectOption(action.value, { timeout: elementTimeout }),
          deadline,
          target,
          'select in',
        );
        return { target };
      }
      case 'press': {
        if (action.target === undefined) {
          await this.acting(() => page.keyboard.press(action.key), deadline, action.key, 'press');
          return { target: action.key };
        }
        const { locator, target } = this.element(action.target);
        await this.acting(() => locator.press(action.key, { timeout: elementTimeout }), deadline, target, 'press in');
        return { target: `${action.key} in ${target}` };
      }
      case 'scroll': {
        const sign = action.direction === 'up' ? -1 : 1;
        await this.acting(
          () => page.evaluate(`window.scrollBy(0, ${sign} * Math.round(window.innerHeight * 0.8))`),
          deadline,
          action.direction,
          'scroll',
        );
        return { target: action.direction };
      }
      case 'extract': {
        if (action.target === undefined) {
          try {
            return { target: null, extracted: await visibleText(page) };
          } catch (error) {
            throw this.failure(error, page.url(), 'read');
          }
        }
        const { locator, target } = this.element(action.target);
        try {
          // biome-ignore lint/performance/useDomNodeTextContent: what a reader sees, not hidden text nor scripts
          const text = await locator.innerText({ timeout: elementTimeout });
          return { target, extracted: text.replace(/\s+/g, ' ').trim() };
        } catch (error) {
          throw this.stepFailure(error, 'read', target);
        }
      }
    }
  }

  async state(): Promise<BrowserPageState> {
    const page = this.page;
    try {
      const [title, text] = await withDeadline(Promise.all([page.title(), visibleText(page)]), this.options.timeoutMs);
      return { url: page.url(), status: this.status, title, text };
    } catch {
      // The page is between documents (or gone): what is known of it.
      return { url: page.url(), status: this.status, title: '', text: '' };
    }
  }

  /** Status of each main-frame document; a page the task opened in a new tab (a link's target) becomes the page. */
  private watch(page: Page): void {
    page.on('response', (response) => {
      const request = response.request();
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) this.status = response.status();
    });
    page.on('popup', (popup) => {
      this.page = popup;
      this.status = null;
      this.watch(popup);
    });
  }

  /** The element of a ref of the last observation; BROWSER_ELEMENT_NOT_FOUND for any other (no wait for it). */
  private element(ref: string) {
    const target = this.refs.get(ref);
    if (target === undefined) {
      throw new AppError(
        422,
        'BROWSER_ELEMENT_NOT_FOUND',
        `No element ${cut(ref, 40)} on the page: use a ref of the last observation`,
      );
    }
    return { locator: this.page.getByRef(ref), target };
  }

  /**
   * Loads `target` in the page; resolves with the guard's refusal when the proxy refused it (or a redirect of it),
   * rejects with BROWSER_FAILED when it does not load.
   */
  private async navigate(target: URL, deadline: number): Promise<OutboundError | undefined> {
    const page = this.page;
    let failedNavigation: string | undefined;
    const onFailed = (request: Request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) failedNavigation = request.url();
    };
    page.on('requestfailed', onFailed);
    let response: Response | null;
    try {
      response = await page.goto(target.href, { timeout: Math.max(deadline - Date.now(), 1), waitUntil: 'load' });
    } catch (error) {
      const refusal = this.proxy.refusalOf(failedNavigation ?? target.href);
      if (refusal) return refusal;
      throw this.failure(error, target.href, 'open');
    } finally {
      page.off('requestfailed', onFailed);
    }
    return response === null ? undefined : this.proxy.refusalOf(response.url(), response.headers());
  }

  /**
   * Runs an action on the page, then waits for what it set off: a navigation (to its load), or a new tab. A
   * navigation the proxy refused fails the step with the guard's error, after the page went back.
   */
  private async acting(work: () => Promise<unknown>, deadline: number, target: string, verb: string): Promise<void> {
    const page = this.page;
    let navigation: Request | undefined;
    const onRequest = (request: Request) => {
      if (request.isNavigationRequest() && request.frame() === page.mainFrame()) navigation = request;
    };
    page.on('request', onRequest);
    try {
      try {
        await work();
      } catch (error) {
        throw this.stepFailure(error, verb, target);
      }
      await new Promise((resolve) => setTimeout(resolve, NAVIGATION_GRACE_MS));
      const loadTimeout = Math.max(1_000, Math.min(this.options.timeoutMs, deadline - Date.now()));
      if (this.page !== page) {
        await this.page.waitForLoadState('load', { timeout: loadTimeout }).catch(() => undefined);
        return;
      }
      // Each redirect is a new request: follow them to the last one.
      let seen: Request | undefined;
      let response: Response | null = null;
      while (navigation !== undefined && navigation !== seen) {
        seen = navigation;
        response = await withDeadline(seen.response(), loadTimeout).catch(() => null);
      }
      if (seen === undefined) return;
      const refusal =
        response === null ? this.proxy.refusalOf(seen.url()) : this.proxy.refusalOf(response.url(), response.headers());
      if (refusal) {
        await this.back();
        throw refusal;
      }
      await page.waitForLoadState('load', { timeout: loadTimeout }).catch(() => undefined);
    } finally {
      page.off('request', onRequest);
    }
  }

  /** After a refused navigation: back to the page the step began on, so the task can go on from there. */
  private async back(): Promise<void> {
    await this.page.goBack({ timeout: this.options.timeoutMs, waitUntil: 'load' }).catch(() => undefined);
  }

  private stepFailure(error: unknown, verb: string, target: string): AppError {
    if (error instanceof AppError) return error;
    if (error instanceof errors.TimeoutError) {
      return new AppError(422, 'BROWSER_ACTION_FAILED', `Could not ${verb} ${target}: it was not ready in time`);
    }
    // The first line of Playwright's message: the call log after it has internal detail.
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0].replace(/^[\w.]+: /, '');
    return new AppError(422, 'BROWSER_ACTION_FAILED', `Could not ${verb} ${target}: ${reason}`);
  }

  private failure(error: unknown, url: string, verb: 'open' | 'read'): OutboundError {
    const host = hostOf(url);
    if (error instanceof errors.TimeoutError) {
      return new OutboundError(
        'BROWSER_FAILED',
        verb === 'open'
          ? `The page at ${host} did not load within ${this.options.timeoutMs} ms`
          : `The page at ${host} could not be read within ${this.options.timeoutMs} ms`,
      );
    }
    // Only Chromium's net error code: the rest of Playwright's message is a call log with internal detail.
    const reason = /net::ERR_[A-Z_]+/.exec(error instanceof Error ? error.message : '')?.[0];
    return new OutboundError(
      'BROWSER_FAILED',
      reason ? `The browser could not open ${host} (${reason})` : `The browser could not ${verb} ${host}`,
    );
  }
}

/** The interactive elements of the snapshot, in document order; every ref with its description into `refs`. */
function collect(
  node: SnapshotNode | readonly SnapshotNode[],
  refs: Map<string, string>,
  into: BrowserElement[],
): void {
  if (Array.isArray(node)) {
    for (const child of node) collect(child, refs, into);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const element = node as Exclude<SnapshotNode, string>;
  const role = element.role ?? 'generic';
  const name = cut(oneLine(element.name ?? ''), ELEMENT_TEXT_MAX_CHARS);
  if (element.ref !== undefined) {
    refs.set(element.ref, `${role}${name === '' ? '' : ` ${JSON.stringify(name)}`} [ref=${element.ref}]`);
    // Options are chosen through their select (`select`), not one by one.
    const inSelect = role === 'option';
    if (!inSelect && (INTERACTIVE_ROLES.has(role) || element.cursor === 'pointer')) {
      into.push(describe(element, role, name));
    }
  }
  for (const child of element.children ?? []) collect(child, refs, into);
}

function describe(node: Exclude<SnapshotNode, string>, role: string, name: string): BrowserElement {
  const options = (node.children ?? []).flatMap((child) =>
    typeof child === 'object' && child !== null && child.role === 'option' ? [child] : [],
  );
  const selected = options.find((option) => option.selected)?.name;
  return {
    ref: node.ref ?? '',
    role,
    name,
    ...(node.text !== undefined && role !== 'link' && role !== 'button'
      ? { value: cut(oneLine(node.text), ELEMENT_TEXT_MAX_CHARS) }
      : {}),
    ...(node.checked === undefined ? {} : { checked: node.checked }),
    ...(node.disabled ? { disabled: true } : {}),
    ...(options.length > 0
      ? { options: options.slice(0, 50).map((option) => cut(oneLine(option.name ?? ''), ELEMENT_TEXT_MAX_CHARS)) }
      : {}),
    ...(selected === undefined ? {} : { selected: cut(oneLine(selected), ELEMENT_TEXT_MAX_CHARS) }),
    ...(node.url === undefined ? {} : { url: cut(node.url, ELEMENT_TEXT_MAX_CHARS * 2) }),
  };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

async function visibleText(page: Page): Promise<string> {
  const text = await page.evaluate('document.body ? document.body.innerText : ""');
  return oneLine(String(text)).slice(0, MAX_PAGE_TEXT_CHARS);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the page';
  }
}

export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new errors.TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
