/**
 * How the local S3 proxy hands a verified request on to s3rver: the URL and headers s3rver understands (its own key
 * id, a host it parses, no hop-by-hop headers), and where s3rver listens.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { decodeComponent, parseQuery, uriEncode } from './sigv4-verifier';

/** s3rver's own, fixed access key id: what requests carry once the proxy has verified them. */
const UPSTREAM_ACCESS_KEY_ID = 'S3RVER';

/**
 * The request as s3rver is to see it: the verified access key id replaced by s3rver's own, in the Authorization
 * header or in X-Amz-Credential. Everything else (and so the signature) is left as it came.
 */
export function asUpstream(url: string, headers: OutgoingHttpHeaders): string {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    headers.authorization = authorization.replace(/Credential=[^/,\s]*\//, `Credential=${UPSTREAM_ACCESS_KEY_ID}/`);
    return url;
  }
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      if (eq < 0 || decodeComponent(part.slice(0, eq)) !== 'X-Amz-Credential') return part;
      const scope = decodeComponent(part.slice(eq + 1));
      return `${part.slice(0, eq)}=${uriEncode(`${UPSTREAM_ACCESS_KEY_ID}${scope.slice(scope.indexOf('/'))}`)}`;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

/** Hop-by-hop headers, which belong to one connection and are not forwarded. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * Whether s3rver routes a request with this Host as path-style. s3rver's vhost middleware takes any other host name as
 * a bucket name (virtual-hosted style: `Host: files.example` means bucket `files.example`); IP addresses, `localhost`,
 * the machine's own name and `*.s3*.amazonaws.com` keep their meaning.
 */
function s3rverUnderstandsHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return (
    isIP(name) !== 0 ||
    name === 'localhost' ||
    name === osHostname() ||
    /(^|\.)s3(-website)?([-.].+)?\.amazonaws\.com$/.test(name)
  );
}

export function forwardHeaders(headers: IncomingHttpHeaders, upstreamHost: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'expect') continue; // the 100-continue was answered here
    out[name] = value;
  }
  // The original Host is kept when s3rver reads it as intended, so that URLs it builds from it (the Location of a
  // completed multipart upload) point at this proxy; another name would be taken for a bucket, so it is replaced.
  if (!s3rverUnderstandsHost(headers.host)) out.host = upstreamHost;
  return out;
}

/** An UploadPart (`?partNumber&uploadId`): S3 applies If-None-Match to whole objects, not to parts. */
export function isPartUpload(url: string): boolean {
  const q = url.indexOf('?');
  return q >= 0 && parseQuery(url.slice(q + 1)).some((p) => p.key === 'uploadId');
}

/** How to reach s3rver, and the Host it is told when the client's would be taken for a bucket name. */
/** Where s3rver answers: a base URL (http://127.0.0.1:45678), or a Unix socket. */
export type S3Upstream = string | { socketPath: string };

export function upstreamTarget(upstream: S3Upstream): {
  connect: { socketPath: string } | { host: string; port: number };
  host: string;
} {
  if (typeof upstream !== 'string') return { connect: { socketPath: upstream.socketPath }, host: 'localhost' };
  const url = new URL(upstream);
  if (url.protocol !== 'http:') throw new Error(`upstream must be an http:// URL, got ${upstream}`);
  return {
    connect: { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) },
    host: url.host,
  };
}
