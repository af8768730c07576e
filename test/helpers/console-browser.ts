/**
 * What every browser suite of the console (test/web) starts with: web/dist built as `npm start` would build it (kept
 * if another suite made it; `rm -rf web/dist` after a change to web/), the local runtime with cognito-local, and the
 * Chromium of @sparticuz/chromium through playwright-core; then axe's check of a screen and its picture.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM_FLAGS, packagedChromium } from '#adapters/browser/playwright-driver';
import { startService, type TestService } from './service';

const ROOT = resolve(__dirname, '../..');

export interface ConsoleBrowser {
  readonly service: TestService;
  readonly browser: Browser;
  /** A page of its own context, with reduced motion: dialogs open without a fade, which axe would read as faint text. */
  readonly page: Page;
}

/** For a suite's beforeAll (give it 240 s): the console built, the service (COGNITO on, plus `env`) and Chromium. */
export async function openConsole(
  options: {
    env?: Record<string, string>;
    viewport?: { width: number; height: number };
    /** Runs on the service as soon as it answers, while Chromium may still be starting. */
    started?: (service: TestService) => Promise<void>;
  } = {},
): Promise<ConsoleBrowser> {
  // The build npm start would make (CONSOLE_BUILD is off in the test runtimes); kept if another suite made it.
  const build = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-web.ts', '--if-missing'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (build.status !== 0) throw new Error(`the console did not build:\n${build.stdout}\n${build.stderr}`);
  const [service, browser] = await Promise.all([
    startService({ env: { COGNITO: 'on', ...options.env } }).then(async (started) => {
      await options.started?.(started);
      return started;
    }),
    packagedChromium().then((executablePath) => chromium.launch({ executablePath, args: CHROMIUM_FLAGS })),
  ]);
  const context = await browser.newContext({
    reducedMotion: 'reduce',
    ...(options.viewport ? { viewport: options.viewport } : {}),
  });
  return { service, browser, page: await context.newPage() };
}

/** For a suite's afterAll: whatever of it was opened, closed. */
export async function closeConsole(opened: ConsoleBrowser | undefined): Promise<void> {
  await opened?.browser.close();
  await opened?.service.stop();
}

/** No serious or critical accessibility violation on the page as it is now. */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  const serious = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${screen}: ${v.id} (${v.impact}) ${v.nodes.map((n) => `${n.target.join(' ')} ${n.failureSummary}`).join(', ')}`,
    );
  expect(serious).toEqual([]);
}

/**
 * Where each screen's picture goes: `docs/screenshots` with `npm run screenshots` (the README shows them), else a
 * temporary folder, so a test run does not rewrite committed files.
 */
const SCREENSHOTS = process.env.SCREENSHOTS_DIR
  ? resolve(ROOT, process.env.SCREENSHOTS_DIR)
  : join(tmpdir(), 'agent-platform-console-screenshots');

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}
