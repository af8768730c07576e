/**
 * BrowserDriver for browserTask nodes: Chromium through playwright-core, launched on the first task and reused; the
 * Chromium of the `@sparticuz/chromium` package unless CHROMIUM_PATH names another. A task opens its page, then its
 * model operates it step by step (core/flows/browser-task.ts, on the page of playwright-page.ts). Every request of a
 * task's page leaves through a guard proxy of that task (guard-proxy.ts), so the outbound guard holds for the page,
 * its redirects, subresources, frames and WebSockets alike; WebRTC, which would send UDP past any proxy, is off.
 * The same driver runs in the local runtime and in the BrowserTask function in AWS (handlers/browser/browser-task.ts).
 */
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, lstat, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { type Browser, chromium } from 'playwright-core';
import { allowPrivateNetworkFromEnv, checkTarget, type TargetGuardOptions } from '#adapters/network/url-guard';
import { BROWSER_MAX_STEPS, BROWSER_TIME_LIMIT_MS, browserTaskModel, runBrowserTask } from '#core/flows/browser-task';
import { OfflineFlowModel } from '#core/flows/offline-model';
import {
  type BrowserDriver,
  type BrowserTaskRequest,
  type BrowserTaskResult,
  type FlowModelResolver,
  OutboundError,
} from '#ports/flows';
import { type EnvironmentValues, handlerEnvironment, handlerVariable } from '#shared/environment';
import { GuardProxy } from './guard-proxy';
import { PlaywrightPage } from './playwright-page';

export { MAX_PAGE_TEXT_CHARS } from './playwright-page';

export const DEFAULT_BROWSER_TIMEOUT_MS = 15_000;

/**
 * Without the background-networking flags Chromium keeps calling Google services (refused on a closed network).
 * WebRTC's UDP does not go through the guard proxy, so it may use the proxy (TCP) or nothing. Of the flags
 * `@sparticuz/chromium` recommends (`chromium.args`) none is needed here, and several must stay out for hostile pages:
 * --disable-web-security, --allow-running-insecure-content and the site-isolation switches; --no-zygote is for
 * Lambda's sandbox only (LAMBDA_CHROMIUM_FLAGS).
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/**
 * What the BrowserTask function adds: no zygote, whose forking Lambda's sandbox refuses. `@sparticuz/chromium` also
 * recommends --single-process there, but with it this Chromium (153) ends every page Playwright opens in a new
 * context ("Target page, context or browser has been closed", on this Linux as in reports from Lambda), and a task
 * needs a context of its own for its guard proxy; --in-process-gpu needs the SwiftShader libraries, which are not
 * unpacked (pages are read, not drawn).
 */
export const LAMBDA_CHROMIUM_FLAGS = ['--no-zygote'];

/**
 * Runs in every page and frame before its own scripts: without the WebRTC constructors a page cannot open a peer
 * connection at all (the flag above is the second line). The whole RTC family goes, RTCPeerConnection and its
 * webkit alias included.
 */
export const WEBRTC_OFF_SCRIPT = `for (const name of Object.getOwnPropertyNames(globalThis)) {
  if (name.startsWith('RTC') || name.startsWith('webkitRTC')) delete globalThis[name];
}`;

const PACKAGE = '@sparticuz/chromium';
const CHROMIUM_HINT = `set CHROMIUM_PATH to a Chromium binary, or leave it unset for the one of ${PACKAGE}`;

export interface PlaywrightBrowserDriverOptions extends TargetGuardOptions {
  /**
   * The binary, or how to get it on the first launch (the BrowserTask function asks @sparticuz/chromium). Default:
   * CHROMIUM_PATH, else the Chromium of @sparticuz/chromium unpacked into a private temporary folder.
   */
  readonly executablePath?: string | (() => Promise<string>);
  /** Flags after CHROMIUM_FLAGS (LAMBDA_CHROMIUM_FLAGS in the BrowserTask function). */
  readonly extraFlags?: readonly string[];
  /** For loading a page and reading it. */
  readonly timeoutMs?: number;
  /** The models a task's `model` picks from: the flow container's. Default: the offline model only. */
  readonly models?: FlowModelResolver;
  /** Default BROWSER_MAX_STEPS. */
  readonly maxSteps?: number;
  /** Default BROWSER_TIME_LIMIT_MS. */
  readonly timeLimitMs?: number;
}

const offlineOnly: FlowModelResolver = () => new OfflineFlowModel();

export class PlaywrightBrowserDriver implements BrowserDriver {
  readonly name = 'playwright-chromium';
  /** Undefined: the packaged Chromium. */
  private readonly executablePath: string | (() => Promise<string>) | undefined;
  private readonly timeoutMs: number;
  private browser: Promise<Browser> | undefined;

  constructor(private readonly options: PlaywrightBrowserDriverOptions) {
    this.executablePath = options.executablePath ?? (handlerVariable('CHROMIUM_PATH') || undefined);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BROWSER_TIMEOUT_MS;
  }

  async run(request: BrowserTaskRequest): Promise<BrowserTaskResult> {
    const url = request.url ?? firstHttpUrl(request.prompt);
    if (url === undefined) throw new OutboundError('BROWSER_FAILED', 'the browser task names no http(s) URL');
    const target = await checkTarget(url, this.options).catch((error: unknown) => {
      // A host that does not resolve is a failed task here, not a failed HTTP call.
      if (error instanceof OutboundError && error.code === 'OUTBOUND_FAILED') {
        throw new OutboundError('BROWSER_FAILED', error.message);
      }
      throw error;
    });
    // Before Chromium starts: a model the deployment has no configuration for fails the task at once.
    const model = browserTaskModel(this.options.models ?? offlineOnly, request.model);
    const browser = await this.launched();
    const proxy = await GuardProxy.start(this.options);
    const deadline = Date.now() + (this.options.timeLimitMs ?? BROWSER_TIME_LIMIT_MS);
    try {
      const context = await browser.newContext({
        proxy: { server: proxy.url },
        serviceWorkers: 'block', // a service worker could answer from a cache the proxy never sees
        acceptDownloads: false,
      });
      try {
        await context.addInitScript(WEBRTC_OFF_SCRIPT);
        const page = await PlaywrightPage.open(context, proxy, target, {
          guard: this.options,
          timeoutMs: this.timeoutMs,
        });
        return await runBrowserTask(
          page,
          model,
          { prompt: request.prompt, context: request.context ?? { messages: [] } },
          { maxSteps: this.options.maxSteps ?? BROWSER_MAX_STEPS, deadline, now: Date.now },
        );
      } finally {
        await context.close().catch(() => {});
      }
    } finally {
      await proxy.close();
    }
  }

  async close(): Promise<void> {
    const browser = this.browser;
    this.browser = undefined;
    await (await browser?.catch(() => undefined))?.close();
  }

  private launched(): Promise<Browser> {
    this.browser ??= this.launch().catch((error: unknown) => {
      this.browser = undefined; // the next task tries again (the binary may be there by then)
      throw error;
    });
    return this.browser;
  }

  private async launch(): Promise<Browser> {
    const executablePath = await this.binary();
    try {
      await access(executablePath, constants.X_OK);
    } catch {
      throw new OutboundError('BROWSER_UNAVAILABLE', `No Chromium at ${executablePath}: ${CHROMIUM_HINT}`);
    }
    let browser: Browser;
    try {
      browser = await chromium.launch({
        executablePath,
        args: [...CHROMIUM_FLAGS, ...(this.options.extraFlags ?? [])],
        timeout: 30_000,
      });
    } catch {
      throw new OutboundError('BROWSER_UNAVAILABLE', `Chromium at ${executablePath} did not start: ${CHROMIUM_HINT}`);
    }
    browser.on('disconnected', () => {
      this.browser = undefined;
    });
    return browser;
  }

  private async binary(): Promise<string> {
    const given = this.executablePath;
    if (given === undefined) return packagedChromiumOrUnavailable();
    if (typeof given === 'string') return given;
    try {
      return await given();
    } catch (error) {
      const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0];
      throw new OutboundError('BROWSER_UNAVAILABLE', `The Chromium of ${PACKAGE} could not be unpacked (${reason})`);
    }
  }
}

/** The driver of the local runtime: OUTBOUND_ALLOW_PRIVATE_NETWORK and CHROMIUM_PATH, with the given models. */
export function browserDriverFromEnv(
  env: EnvironmentValues = handlerEnvironment(),
  models?: FlowModelResolver,
): PlaywrightBrowserDriver {
  return new PlaywrightBrowserDriver({
    allowPrivateNetwork: allowPrivateNetworkFromEnv(env),
    executablePath: env.CHROMIUM_PATH || undefined,
    models,
  });
}

const SENTENCE_END = new Set('.,;:!?)]}');

/**
 * The first http(s) URL in a prompt, without the punctuation that ends the sentence around it. The trailing run is
 * trimmed by a loop: the pattern `[.,;:!?)\]}]+$` retried its run from every position of it (quadratic).
 */
export function firstHttpUrl(prompt: string): string | undefined {
  const found = /https?:\/\/[^\s<>"'`]+/i.exec(prompt)?.[0];
  if (found === undefined) return undefined;
  let end = found.length;
  while (end > 0 && SENTENCE_END.has(found[end - 1])) end -= 1;
  // A link that opened a parenthesis keeps the one that closes it: .../Foo_(bar)).
  if (found[end] === ')' && found.includes('(')) end += 1;
  return found.slice(0, end);
}

let packaged: Promise<string> | undefined;

/** The Chromium of @sparticuz/chromium in the temporary folder, unpacked on the first call of the process. */
export function packagedChromium(): Promise<string> {
  packaged ??= unpackChromium(tmpdir()).catch((error: unknown) => {
    packaged = undefined;
    throw error;
  });
  return packaged;
}

async function packagedChromiumOrUnavailable(): Promise<string> {
  try {
    return await packagedChromium();
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]; // not require's stack
    throw new OutboundError(
      'BROWSER_UNAVAILABLE',
      `The Chromium of ${PACKAGE} could not be unpacked (${reason}): run npm ci, or set CHROMIUM_PATH`,
    );
  }
}

/**
 * Unpacks the binary that @sparticuz/chromium ships brotli-compressed in its bin/ into `<parent>/<folder of this
 * version and user>/chromium`, unless it is there. Not through the package's `executablePath()`: the package is ES
 * modules only (jest's CommonJS runtime cannot load it), and it writes the fixed /tmp/chromium, which any local user
 * may have put there, and which another process already runs while it is still being written. Here the binary is
 * written into a private staging folder that is then renamed into place, so the folder, when it exists, is complete;
 * of processes unpacking at once, the first rename wins and the others use its copy. Fonts and SwiftShader, also in
 * the package, are not needed: the pages are read, not drawn.
 */
export async function unpackChromium(parent: string): Promise<string> {
  const bin = join(dirname(require.resolve(PACKAGE)), '..', 'bin');
  const { version } = JSON.parse(await readFile(join(bin, '..', 'package.json'), 'utf8')) as { version: string };
  const folder = join(parent, `agent-platform-chromium-${version}-${process.getuid?.() ?? 'user'}`);
  const binary = join(folder, 'chromium');
  if (await unpackedIn(folder, binary)) return binary;
  const staging = await mkdtemp(`${folder}.`);
  try {
    await pipeline(
      createReadStream(join(bin, 'chromium.br')),
      createBrotliDecompress(),
      createWriteStream(join(staging, 'chromium'), { mode: 0o700 }),
    );
    await rename(staging, folder);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (!(await unpackedIn(folder, binary))) throw error;
  }
  return binary;
}

/**
 * Whether `folder` holds the binary. A folder another user owns or may write is refused, never run; one of ours
 * without its binary (a cleaner of old temporary files took it) is removed, to be unpacked again.
 */
async function unpackedIn(folder: string, binary: string): Promise<boolean> {
  const stats = await lstat(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (stats === undefined) return false;
  const uid = process.getuid?.();
  if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid) || (stats.mode & 0o022) !== 0) {
    throw new Error(`${folder} is not a folder that only this user can write: remove it`);
  }
  const file = await lstat(binary).catch(() => undefined);
  if (file?.isFile() && (uid === undefined || file.uid === uid)) return true;
  await rm(folder, { recursive: true, force: true });
  return false;
}
