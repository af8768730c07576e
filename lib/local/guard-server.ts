/**
 * The listening side of a guard in front of a local engine (s3-signature-proxy.ts before s3rver, cognito-guard.ts
 * before cognito-local): its server on `host:port`, a request that is not HTTP answered 400 and closed, and a close
 * that also ends the open connections and the agent the guard reaches its engine with.
 */
import type { Agent, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GuardServer {
  /** `http://host:port`, an IPv6 host in brackets. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export function listenGuard(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  options: { host?: string; port?: number; agent: Agent; configure?: (server: Server) => void },
): Promise<GuardServer> {
  const server = createServer(handle);
  options.configure?.(server);
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  const host = options.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        url: `http://${urlHost}:${port}`,
        port,
        close: () =>
          new Promise<void>((done, failed) => {
            server.close((error) => (error ? failed(error) : done()));
            server.closeAllConnections();
            options.agent.destroy();
          }),
      });
    });
  });
}
