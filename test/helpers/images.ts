/**
 * Small images of each attachment format, and a loopback server that serves bytes as a test says (for attachments
 * given by `url`: a header that lies, a redirect, a 404, an answer without Content-Length).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A 1×1 PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
/** A 1×1 GIF. */
export const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
/** The start of a JPEG (SOI, then a JFIF APP0 segment): its signature is what the service checks. */
export const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0', 'latin1'),
  Buffer.from([0xff, 0xd9]),
]);
/** A RIFF/WEBP container header with an empty VP8L chunk: its signature is what the service checks. */
export const WEBP = Buffer.concat([
  Buffer.from('RIFF', 'latin1'),
  Buffer.from([0x0c, 0, 0, 0]),
  Buffer.from('WEBPVP8L', 'latin1'),
  Buffer.from([0, 0, 0, 0]),
]);

/** `bytes` long, starting with the PNG signature: passes the type check, tests only the size. */
export function pngOfSize(bytes: number): Buffer {
  const image = Buffer.alloc(bytes, 0x41);
  PNG.copy(image, 0, 0, Math.min(bytes, 8));
  return image;
}

export interface ServedAnswer {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  /** Sent in chunks of 64 KiB without Content-Length (chunked) unless `headers` sets one. */
  readonly body?: Buffer;
}

export interface ImageServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Paths requested, in order. */
  readonly requested: string[];
  /** How many bytes of each path's answer were written before the client went away. */
  readonly written: Map<string, number>;
  serve(path: string, answer: ServedAnswer): void;
  close(): Promise<void>;
}

export async function startImageServer(): Promise<ImageServer> {
  const answers = new Map<string, ServedAnswer>();
  const requested: string[] = [];
  const written = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    requested.push(path);
    const answer = answers.get(path) ?? { status: 404, body: Buffer.from('not found') };
    response.writeHead(answer.status ?? 200, answer.headers ?? {});
    const body = answer.body ?? Buffer.alloc(0);
    let offset = 0;
    const next = () => {
      while (offset < body.length) {
        const chunk = body.subarray(offset, offset + 64 * 1024);
        offset += chunk.length;
        written.set(path, offset);
        if (!response.write(chunk)) {
          response.once('drain', next);
          return;
        }
      }
      response.end();
    };
    response.on('error', () => undefined);
    next();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requested,
    written,
    serve: (path, answer) => answers.set(path, answer),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
