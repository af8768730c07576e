/**
 * A small web site on 127.0.0.1 for browser task tests: an order form (two text fields, a select, a submit button)
 * whose result page shows what was sent, a page that never lets a task finish, and redirects. Every request is
 * recorded (host and path), and every form sent (its fields), so a test asserts what really reached the site.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BrowserSite {
  /** http://127.0.0.1:<port> */
  readonly base: string;
  readonly port: number;
  /** `host + path` of every request, oldest first (the favicon Chromium asks for left out). */
  readonly requests: string[];
  /** The fields of every order sent to /submit. */
  readonly orders: Record<string, string>[];
  reset(): void;
  close(): Promise<void>;
}

const html = (response: ServerResponse, body: string) =>
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);

const escapeHtml = (text: string) =>
  text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c] ?? c);

export const ORDER_FORM = `<!doctype html><html><head><title>Order form</title></head><body>
  <h1>Order a router</h1>
  <p>Fill in the form and send it.</p>
  <form method="post" action="/submit">
    <label>Name <input name="name"></label>
    <label>Email <input name="email" type="email"></label>
    <label>Size
      <select name="size"><option value="s">Small</option><option value="m">Medium</option><option value="l">Large</option></select>
    </label>
    <button type="submit">Send order</button>
  </form>
  <p><a href="/help">Help</a></p>
</body></html>`;

function answer(
  site: { base: string; orders: Record<string, string>[] },
  request: IncomingMessage,
  response: ServerResponse,
) {
  const url = new URL(request.url ?? '/', site.base);
  switch (url.pathname) {
    case '/form':
      return html(response, ORDER_FORM);
    case '/submit': {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      request.on('end', () => {
        const fields = Object.fromEntries(new URLSearchParams(body));
        site.orders.push(fields);
        const shown = Object.entries(fields)
          .map(([name, value]) => `${escapeHtml(name)}=${escapeHtml(value)}`)
          .join('; ');
        html(
          response,
          `<title>Order received</title><body><h1>Thank you</h1><p id="sent">Received: ${shown}</p></body>`,
        );
      });
      return;
    }
    case '/endless':
      // Nothing on it ends a task: a model that keeps looking runs into the step limit.
      return html(response, '<title>Endless</title><body><p>Keep looking.</p><button>Look again</button></body>');
    case '/go':
      return response.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
    case '/links':
      return html(
        response,
        `<title>Links</title><body><a href="${escapeHtml(url.searchParams.get('href') ?? '/')}">Onward</a></body>`,
      );
    default:
      return html(response, `<title>${escapeHtml(url.pathname)}</title><body>${escapeHtml(url.pathname)}</body>`);
  }
}

export async function startBrowserSite(): Promise<BrowserSite> {
  const requests: string[] = [];
  const orders: Record<string, string>[] = [];
  const state = { base: '', orders };
  const server: Server = createServer((request, response) => {
    if (!request.url?.endsWith('/favicon.ico')) requests.push(`${request.headers.host}${request.url}`);
    answer(state, request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.base = `http://127.0.0.1:${port}`;
  return {
    base: state.base,
    port,
    requests,
    orders,
    reset() {
      requests.length = 0;
      orders.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
