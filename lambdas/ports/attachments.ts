/**
 * Port of what reads an image a webhook or app-event names by `url` (core/flows/attachments.ts): a GET through the
 * outbound guard that counts the bytes as they arrive. The adapter is adapters/network/guarded-download.ts.
 */

export interface ImageDownloader {
  /**
   * The bytes of the answer to a GET of `url` (redirects followed and each checked by the guard). Rejects with
   * OutboundError (TARGET_REFUSED for a refused target, OUTBOUND_FAILED when it cannot be reached, times out or
   * answers a non-2xx) or DownloadTooLargeError past `maxBytes`, counted as read (a declared length is not trusted).
   */
  download(url: string, maxBytes: number): Promise<Buffer>;
}

/** The answer was longer than the caller allowed: reading stopped there. */
export class DownloadTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`The answer is larger than ${maxBytes} bytes`);
    this.name = 'DownloadTooLargeError';
  }
}
