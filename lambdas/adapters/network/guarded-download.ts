/**
 * ImageDownloader for attachments given by `url`: a GET through the outbound guard (the same checks, the same
 * connection to the checked address as HTTP tools, each redirect checked again), its bytes counted as they arrive:
 * past the limit the connection is closed, whatever Content-Length said. Binary, so not GuardedOutboundHttp, which
 * reads answers as text or JSON.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { DownloadTooLargeError, type ImageDownloader } from '#ports/attachments';
import { OutboundError } from '#ports/flows';
import { MAX_OUTBOUND_REDIRECTS } from './outbound-http';
import { checkTarget, guardedLookup, type TargetGuardOptions } from './url-guard';

export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 10_000;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface GuardedImageDownloaderOptions extends TargetGuardOptions {
  /** For the whole download, redirects included. */
  readonly timeoutMs?: number;
}

export class GuardedImageDownloader implements ImageDownloader {
  private readonly lookup;

  constructor(private readonly options: GuardedImageDownloaderOptions) {
    this.lookup = guardedLookup(options);
  }

  async download(url: string, maxBytes: number): Promise<Buffer> {
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS;
    // The only abort is this timeout, so an aborted signal tells a timeout from any other failure.
    const signal = AbortSignal.timeout(timeoutMs);
    let host = 'the image host';
    const timedOut = new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    const exchange = async (): Promise<Buffer> => {
      let next = url;
      for (let redirects = 0; ; redirects++) {
        const target = await checkTarget(next, this.options);
        host = target.host;
        const answer = await this.get(target, signal);
        const status = answer.statusCode ?? 0;
        const location = answer.headers.location;
        if (REDIRECTS.has(status) && location !== undefined) {
          answer.resume();
          if (redirects === MAX_OUTBOUND_REDIRECTS) {
            throw new OutboundError('OUTBOUND_FAILED', `${host} redirected more than ${MAX_OUTBOUND_REDIRECTS} times`);
          }
          next = resolveLocation(location, target);
          continue;
        }
        if (status < 200 || status >= 300) {
          answer.resume();
          throw new OutboundError('OUTBOUND_FAILED', `${host} answered HTTP ${status}`);
        }
        return readAtMost(answer, maxBytes);
      }
    };
    try {
      return await Promise.race([exchange(), timedOut]);
    } catch (error) {
      if (signal.aborted) throw new OutboundError('OUTBOUND_FAILED', `${host} did not answer within ${timeoutMs} ms`);
      if (error instanceof OutboundError || error instanceof DownloadTooLargeError) throw error;
      // Never the error's message: it names the resolved address.
      const code = (error as NodeJS.ErrnoException).code ?? 'connection error';
      throw new OutboundError('OUTBOUND_FAILED', `The request to ${host} failed (${code})`);
    }
  }

  private get(target: URL, signal: AbortSignal): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      // No Accept-Encoding: the bytes counted are the image's own. agent: false, so no pooled socket is reused.
      const outgoing = send(
        target,
        {
          method: 'GET',
          headers: { accept: 'image/png, image/jpeg, image/gif, image/webp' },
          signal,
          lookup: this.lookup,
          agent: false,
        },
        resolve,
      );
      outgoing.on('error', reject);
      outgoing.end();
    });
  }
}

function resolveLocation(location: string, base: URL): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw new OutboundError('OUTBOUND_FAILED', `${base.host} redirected to an invalid URL`);
  }
}

/** The answer's bytes, counted as they arrive; past `maxBytes` the stream is destroyed and nothing more is read. */
async function readAtMost(answer: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(answer.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    answer.destroy();
    throw new DownloadTooLargeError(maxBytes);
  }
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      answer.destroy();
      throw new DownloadTooLargeError(maxBytes);
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts, size);
}
