/**
 * The console's security headers (lib/console-security-headers.ts) in real Chromium against `npm start` with
 * cognito-local: a page of another origin cannot frame the console (a plain page of a third origin, framed beside
 * it, can: the control); the page reaches cognito-local and the S3 endpoint (a pre-signed PUT) with no violation,
 * while a request to any other origin and an inline script are refused (so the listener does hear a violation); and
 * the console works under its CSP, no violation while a person signs up, uploads a file through the page and opens
 * the flows (CodeMirror, React Flow) and analytics (ECharts) screens.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM_FLAGS, packagedChromium } from '#adapters/browser/playwright-driver';
import type { ConsoleConfig } from '../../web/src/config';
import { createDataset, type UploadLink } from '../helpers/fixtures';
import { client, startService, type TestService } from '../helpers/service';

const ROOT = resolve(__dirname, '../..');

let service: TestService;
let browser: Browser;
const servers: Server[] = [];

/** A server of its own origin (another port) answering every path with `html`. */
async function origin(html: (url: string) => string): Promise<string> {
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html(request.url ?? '/'));
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  // The build npm start would make (CONSOLE_BUILD is off in the test runtimes); kept if another suite made it.
  const build = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-web.ts', '--if-missing'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 180_000,
  });
  if (build.status !== 0) throw new Error(`the console did not build:\n${build.stdout}\n${build.stderr}`);
  // Both settled before either failure is thrown, so afterAll stops whatever did start.
  const [started, launched] = await Promise.allSettled([
    startService({ env: { COGNITO: 'on' } }),
    packagedChromium().then((executablePath) => chromium.launch({ executablePath, args: CHROMIUM_FLAGS })),
  ]);
  if (started.status === 'fulfilled') service = started.value;
  if (launched.status === 'fulfilled') browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === 'rejected') throw outcome.reason;
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
});

it('cannot be framed by a page of another origin', async () => {
  const plain = await origin(() => '<!doctype html><title>plain</title><p id="plain">a page that may be framed</p>');
  const stranger = await origin(
    () =>
      `<!doctype html><title>stranger</title>` +
      `<iframe id="console" src="${service.baseUrl}/agents"></iframe><iframe id="plain" src="${plain}/"></iframe>`,
  );
  const page = await browser.newPage();
  const refusals: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') refusals.push(message.text());
  });
  try {
    await page.goto(`${stranger}/`, { waitUntil: 'load' });
    const frameOf = async (id: string) => {
      const frame = await (await page.$(`iframe#${id}`))?.contentFrame();
      if (!frame) throw new Error(`no frame ${id}`);
      return frame;
    };
    // The control: a cross-origin page without these headers is framed and shown.
    const plainFrame = await frameOf('plain');
    expect(await plainFrame.locator('#plain').textContent()).toBe('a page that may be framed');
    // The console is not: Chromium puts its error page in the frame, and says why.
    const consoleFrame = await frameOf('console');
    expect(consoleFrame.url()).not.toContain(service.baseUrl);
    expect(await consoleFrame.locator('#root').count()).toBe(0);
    expect(refusals.join('\n')).toContain(
      `Framing '${service.baseUrl}/' violates the following Content Security Policy directive: "frame-ancestors 'none'"`,
    );
  } finally {
    await page.close();
  }
});

/** Every CSP violation the page reports, across its navigations (its own event, and Chromium's console line). */
async function watchViolations(page: Page): Promise<string[]> {
  const violations: string[] = [];
  await page.exposeFunction('reportCspViolation', (violation: string) => violations.push(violation));
  // Page code as text: this project's TypeScript has no DOM types.
  await page.addInitScript(
    `document.addEventListener('securitypolicyviolation', (event) => window.reportCspViolation(
      event.effectiveDirective + ' ' + event.blockedURI + ' ' + event.sourceFile + ':' + event.lineNumber));`,
  );
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) {
      violations.push(`console: ${message.text()}`);
    }
  });
  return violations;
}

async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
    await new Promise((wait) => setTimeout(wait, 50));
  }
}

/** Mantine's run-time <style> (its theme's CSS variables) is in the page and applied. */
const MANTINE_STYLES_APPLIED = `[...document.querySelectorAll('style[data-mantine-styles]')]
  .some((style) => (style.sheet?.cssRules.length ?? 0) > 0)`;

it('reaches cognito-local and the S3 endpoint under its CSP, and refuses any other origin and inline script', async () => {
  const config = (await (await fetch(`${service.baseUrl}/config.json`)).json()) as ConsoleConfig;
  const cognito = new URL(config.cognito?.endpoint ?? '').origin;
  const stranger = await origin(() => 'stranger');
  // A pre-signed PUT URL of this runtime's S3 endpoint, asked with a DEV_TOKEN.
  const call = client(service);
  const dataset = await createDataset(call);
  const link = await call<UploadLink>('POST', '/api/v1/knowledge/documents/upload-link', {
    body: { ...dataset, fileName: 'csp.txt' },
  });
  expect(link.status).toBe(200);
  expect(new URL(link.body.uploadUrl).origin).not.toBe(service.baseUrl);

  const page = await (await browser.newContext({ reducedMotion: 'reduce' })).newPage();
  const violations = await watchViolations(page);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  try {
    const index = await page.goto(`${service.baseUrl}/`);
    expect(index?.headers()).toMatchObject({
      'content-security-policy': expect.stringContaining(`connect-src 'self' ${cognito} `),
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
    });
    expect(index?.headers()['strict-transport-security']).toBeUndefined();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(MANTINE_STYLES_APPLIED)).toBe(true);

    // Sign-in goes to cognito-local (another port), which answers: a wrong password, said on the page.
    await page.getByLabel('E-mail').fill('nobody@console.example.com');
    await page.getByRole('textbox', { name: 'Password' }).fill('Wrong-pass-1');
    const answered = page.waitForResponse(
      (response) => response.url().startsWith(cognito) && response.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect((await answered).status()).toBe(400);
    await page.getByRole('alert').waitFor();

    // The upload's PUT from the page, to the S3 endpoint (another port), as web/src/upload.ts sends it.
    const put = await page.evaluate(
      `fetch(${JSON.stringify(link.body.uploadUrl)}, {
        method: 'PUT', headers: ${JSON.stringify(link.body.requiredHeaders)}, body: 'The policy lets this in.',
      }).then((response) => response.status, (error) => String(error))`,
    );
    expect(put).toBe(200);
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);

    // The controls: another origin is refused, an inline script does not run; the listener hears both.
    const refused = await page.evaluate(
      `fetch(${JSON.stringify(`${stranger}/`)}).then(() => 'reached', (error) => 'refused: ' + error)`,
    );
    expect(refused).toMatch(/^refused/);
    await until(() => violations.some((v) => v.startsWith(`connect-src ${stranger}/`)), 'connect-src violation');
    await page.evaluate(`{
      const script = document.createElement('script');
      script.textContent = 'window.inlineRan = true';
      document.head.append(script);
    }`);
    await until(() => violations.some((v) => v.startsWith('script-src-elem inline')), 'script-src violation');
    expect(await page.evaluate('window.inlineRan')).toBeUndefined();
  } finally {
    await page.context().close();
  }
});

it('works signed in under its CSP: sign-up, an upload, the flows and analytics screens, no violation', async () => {
  const page = await (await browser.newContext({ reducedMotion: 'reduce' })).newPage();
  const violations = await watchViolations(page);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  try {
    await page.goto(`${service.baseUrl}/`);
    // Sign-up: the API, then Cognito for the sign-in, then the API with the person's ID token.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'No account? Sign up' }).click();
    await page.getByLabel('E-mail').fill('csp@console.example.com');
    await page.getByLabel('Organization name').fill('CSP Co');
    await page.getByRole('textbox', { name: /^Password/ }).fill('Console-pass-1');
    await page.getByRole('button', { name: 'Sign up', exact: true }).click();
    await page
      .getByRole('heading', { name: 'Agents' })
      .waitFor()
      .catch(async (error: unknown) => {
        throw new Error(
          `not signed in: ${String(error)}\nalerts: ${(await page.getByRole('alert').allTextContents()).join(' | ')}\n` +
            `violations: ${violations.join('\n')}\nerrors: ${errors.join('\n')}`,
        );
      });
    expect(await page.evaluate(MANTINE_STYLES_APPLIED)).toBe(true);

    await page.getByLabel("New agent's name").fill('CSP bot');
    await page.getByRole('button', { name: 'Create agent' }).click();
    const agent = page.getByRole('row', { name: /CSP bot/ });
    await agent.getByRole('link', { name: 'Knowledge' }).click();
    await page.getByLabel('Knowledge base name').fill('Manuals');
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await page.getByRole('link', { name: 'Documents of Manuals' }).click();
    await page.getByRole('heading', { name: 'Documents of Manuals' }).waitFor();
    // The upload's PUT goes to the local S3 endpoint.
    await page
      .getByTestId('upload-input')
      .setInputFiles([{ name: 'csp.txt', mimeType: 'text/plain', buffer: Buffer.from('The policy lets this in.') }]);
    const upload = page.getByRole('list', { name: 'Uploads' }).getByRole('listitem', { name: 'csp.txt' });
    await upload.getByText('ready', { exact: true }).waitFor({ timeout: 30_000 });

    // CodeMirror and React Flow (styles of their own), ECharts (a canvas).
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await agent.getByRole('link', { name: 'Flows' }).click();
    await page.getByRole('figure', { name: 'Flow graph' }).waitFor();
    await page.getByRole('textbox', { name: 'Definition (JSON)' }).waitFor();
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await agent.getByRole('link', { name: 'Analytics' }).click();
    // No events yet: a sentence says so; a range chosen draws its days (all quiet) on the chart.
    await page.getByText('No events yet in development.').waitFor();
    await page.getByLabel('From (UTC)').fill('2026-11-01');
    await page.getByLabel('To (UTC)').fill('2026-11-07');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('img', { name: 'Events per day by event name: 0 events over 7 days' }).waitFor();
    await page.locator('canvas').first().waitFor();

    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    await page.context().close();
  }
});
