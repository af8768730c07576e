/**
 * The outbound guard (SSRF protection) shared by browser tasks, HTTP tools and AI-message callbacks: only http(s)
 * targets without credentials, and only public addresses unless the deployment allows private networks.
 */
import { promises as dns, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { OutboundError } from '#ports/flows';
import { type EnvironmentValues, handlerEnvironment } from '#shared/environment';

/**
 * What an IP address reaches. `carrier-nat` is the shared address space of RFC 6598 (100.64.0.0/10); `reserved`
 * covers documentation, benchmarking, protocol-assignment and unallocated ranges.
 */
export type AddressKind =
  | 'public'
  | 'private'
  | 'loopback'
  | 'link-local'
  | 'unspecified'
  | 'carrier-nat'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

/** Resolves a host name to all its addresses. */
export type HostLookup = (host: string) => Promise<string[]>;

export interface TargetGuardOptions {
  /** Allows every kind of address (OUTBOUND_ALLOW_PRIVATE_NETWORK=true), for a deployment that must reach its own network. */
  readonly allowPrivateNetwork: boolean;
  /**
   * Kinds allowed besides `public` when allowPrivateNetwork is false: `['loopback']` lets a callback server on the
   * same machine through while the private network and the cloud metadata endpoint (link-local) stay refused.
   */
  readonly allowedKinds?: readonly AddressKind[];
  /** Default: the system resolver, every address (`dns.lookup(host, { all: true })`). */
  readonly lookup?: HostLookup;
}

export const OUTBOUND_ENV = { allowPrivateNetwork: 'OUTBOUND_ALLOW_PRIVATE_NETWORK' } as const;

// ---------------------------------------------------------------------------------------------------------------
// Addresses

type Range = readonly [base: bigint, prefix: number, kind: AddressKind];

/** First match wins, so the broadcast address comes before the reserved 240.0.0.0/4 that holds it. */
const IPV4_RANGES: readonly Range[] = [
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'carrier-nat'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'],
  [v4('192.0.2.0'), 24, 'reserved'],
  [v4('192.88.99.0'), 24, 'reserved'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'],
  [v4('198.51.100.0'), 24, 'reserved'],
  [v4('203.0.113.0'), 24, 'reserved'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('255.255.255.255'), 32, 'broadcast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

/** Ranges that embed an IPv4 address in their last 32 bits: it decides, as the packets end up there. */
const IPV6_EMBEDDING_IPV4: readonly (readonly [base: bigint, prefix: number])[] = [
  [v6('::ffff:0:0'), 96], // IPv4-mapped
  [v6('64:ff9b::'), 96], // NAT64 well-known prefix
];
const SIX_TO_FOUR: readonly [bigint, number] = [v6('2002::'), 16];

const IPV6_RANGES: readonly Range[] = [
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('64:ff9b:1::'), 48, 'private'], // local-use NAT64
  [v6('fc00::'), 7, 'private'], // unique local
  [v6('fec0::'), 10, 'private'], // deprecated site-local
  [v6('fe80::'), 10, 'link-local'],
  [v6('ff00::'), 8, 'multicast'],
  [v6('2001::'), 23, 'reserved'], // IETF protocol assignments, Teredo
  [v6('2001:db8::'), 32, 'reserved'], // documentation
  [v6('3fff::'), 20, 'reserved'], // documentation
  [v6('2000::'), 3, 'public'], // global unicast; everything outside it is reserved or unallocated
];

/** The kind of an IPv4 or IPv6 address (a zone index such as `%eth0` is ignored). Throws on anything else. */
export function classifyAddress(ip: string): AddressKind {
  const zone = ip.indexOf('%');
  const address = zone === -1 ? ip : ip.slice(0, zone);
  switch (isIP(address)) {
    case 4:
      return match(v4(address), 32, IPV4_RANGES) ?? 'public';
    case 6: {
      const value = v6(address);
      for (const [base, prefix] of IPV6_EMBEDDING_IPV4) {
        if (inRange(value, 128, base, prefix)) return match(value & 0xffff_ffffn, 32, IPV4_RANGES) ?? 'public';
      }
      if (inRange(value, 128, ...SIX_TO_FOUR)) return match((value >> 80n) & 0xffff_ffffn, 32, IPV4_RANGES) ?? 'public';
      return match(value, 128, IPV6_RANGES) ?? 'reserved';
    }
    default:
      throw new TypeError(`Not an IP address: ${JSON.stringify(ip)}`);
  }
}

function match(value: bigint, bits: number, ranges: readonly Range[]): AddressKind | undefined {
  return ranges.find(([base, prefix]) => inRange(value, bits, base, prefix))?.[2];
}

function inRange(value: bigint, bits: number, base: bigint, prefix: number): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

function v4(address: string): bigint {
  return address.split('.').reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 address (already valid per `isIP`) as a 128-bit number; a trailing dotted IPv4 part is allowed. */
function v6(address: string): bigint {
  let text = address.toLowerCase();
  // The dotted part can only follow the last colon; testing just that part keeps the match linear.
  const lastGroup = text.slice(text.lastIndexOf(':') + 1);
  if (/^\d+\.\d+\.\d+\.\d+$/.test(lastGroup)) {
    const value = v4(lastGroup);
    text = `${text.slice(0, text.length - lastGroup.length)}${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array(8 - headGroups.length - tailGroups.length).fill('0');
  return [...headGroups, ...zeros, ...tailGroups].reduce((value, group) => (value << 16n) | BigInt(`0x${group}`), 0n);
}

// ---------------------------------------------------------------------------------------------------------------
// Targets

/**
 * The URL when the guard lets it through. Rejects with OutboundError TARGET_REFUSED for anything but http(s), for
 * credentials in the URL, and (unless allowPrivateNetwork) when the host is, or resolves to, any address that is
 * not public or in `allowedKinds`; OUTBOUND_FAILED when the host does not resolve. Host names that the WHATWG URL
 * parser reads as IPv4 (`0x7f.1`, `2130706433`) are classified as the address they are.
 */
export async function checkTarget(url: string, options: TargetGuardOptions): Promise<URL> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundError('TARGET_REFUSED', 'The outbound target is not a valid URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new OutboundError('TARGET_REFUSED', `Refused the outbound target: ${target.protocol} URLs are not allowed`);
  }
  if (target.username !== '' || target.password !== '') {
    throw new OutboundError('TARGET_REFUSED', `Refused the outbound target ${target.hostname}: credentials in the URL`);
  }
  if (!options.allowPrivateNetwork) await resolveAllowed(bareHost(target.hostname), options);
  return target;
}

/**
 * The addresses of `host` the guard allows: an IP literal as it is, a name through the lookup. Rejects like
 * checkTarget when any address is refused, so one bad answer among good ones refuses the host.
 */
export async function resolveAllowed(host: string, options: TargetGuardOptions): Promise<string[]> {
  const literal = isIP(host) !== 0;
  let addresses: string[];
  if (literal) {
    addresses = [host];
  } else {
    try {
      addresses = await (options.lookup ?? systemLookup)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw new OutboundError('OUTBOUND_FAILED', `The host ${host} could not be resolved`);
  }
  if (options.allowPrivateNetwork) return addresses;
  for (const address of addresses) {
    const kind = isIP(address) === 0 ? 'reserved' : classifyAddress(address);
    if (kind === 'public' || options.allowedKinds?.includes(kind)) continue;
    const what = `${kind === 'unspecified' ? 'an' : 'a'} ${kind} address`;
    throw new OutboundError(
      'TARGET_REFUSED',
      literal
        ? `Refused the outbound target ${host}: ${what}`
        : `Refused the outbound target ${host}: it resolves to ${what}`,
    );
  }
  return addresses;
}

/**
 * A `lookup` for `net.connect`, `http.request` and `https.request` that resolves through the guard, so the
 * addresses connected to are the ones checked: a name cannot resolve to a public address for the check and to a
 * private one for the connection (DNS rebinding). The error of a refused host is the guard's OutboundError.
 */
export function guardedLookup(options: TargetGuardOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveAllowed(bareHost(hostname), options).then(
      (resolved) => {
        const wanted = lookupOptions.family === 6 || lookupOptions.family === 'IPv6' ? 6 : 4;
        const any = lookupOptions.family === undefined || lookupOptions.family === 0;
        const addresses: LookupAddress[] = resolved
          .map((address) => ({ address, family: isIP(address) }))
          .filter(({ family }) => family !== 0 && (any || family === wanted));
        if (addresses.length === 0) {
          callback(new OutboundError('OUTBOUND_FAILED', `The host ${hostname} has no address of that family`), '');
        } else if (lookupOptions.all) {
          callback(null, addresses);
        } else {
          callback(null, addresses[0].address, addresses[0].family);
        }
      },
      (error: Error) => callback(error, ''),
    );
  };
}

async function systemLookup(host: string): Promise<string[]> {
  return (await dns.lookup(host, { all: true })).map(({ address }) => address);
}

/** `[::1]` (a URL's hostname) → `::1`. */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

// ---------------------------------------------------------------------------------------------------------------
// Configuration

/** OUTBOUND_ALLOW_PRIVATE_NETWORK: `true` or `false`; unset or empty is false; anything else fails loudly. */
export function allowPrivateNetworkFromEnv(env: EnvironmentValues = handlerEnvironment()): boolean {
  const value = env[OUTBOUND_ENV.allowPrivateNetwork];
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw new Error(`Invalid configuration: ${OUTBOUND_ENV.allowPrivateNetwork} must be 'true' or 'false'`);
}
