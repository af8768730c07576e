/**
 * The outbound guard: what each address reaches, which URLs it refuses and why, and its configuration. Host names go
 * through an injected lookup except `localhost`, which goes through the system resolver as in production.
 */
import {
  type AddressKind,
  allowPrivateNetworkFromEnv,
  checkTarget,
  classifyAddress,
  guardedLookup,
  type HostLookup,
} from '#adapters/network/url-guard';
import { OutboundError } from '#ports/flows';

const resolvesTo =
  (table: Record<string, string[]>): HostLookup =>
  async (host) => {
    const addresses = table[host];
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  };

const publicOnly = { allowPrivateNetwork: false } as const;

async function refusal(url: string, options: Parameters<typeof checkTarget>[1] = publicOnly): Promise<OutboundError> {
  const error = await checkTarget(url, options).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof OutboundError)) throw new Error(`expected ${url} to be refused, got ${String(error)}`);
  return error;
}

describe('classifyAddress', () => {
  const table: [string, AddressKind][] = [
    ['8.8.8.8', 'public'],
    ['93.184.215.14', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['172.15.255.255', 'public'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['2002:7f00:1::', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'carrier-nat'],
    ['100.127.255.255', 'carrier-nat'],
    ['100.128.0.1', 'public'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['::127.0.0.1', 'reserved'],
    ['4000::1', 'reserved'],
  ];

  it.each(table)('classifies %s as %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('throws on something that is not an IP address', () => {
    expect(() => classifyAddress('localhost')).toThrow(TypeError);
    expect(() => classifyAddress('256.0.0.1')).toThrow(TypeError);
  });
});

describe('checkTarget', () => {
  it.each([
    ['file:///etc/passwd', 'file: URLs are not allowed'],
    ['ftp://example.com/file', 'ftp: URLs are not allowed'],
    ['gopher://example.com/', 'gopher: URLs are not allowed'],
    ['http://user:secret@example.com/', 'credentials in the URL'],
    ['not a url', 'not a valid URL'],
  ])('refuses %s', async (url, message) => {
    const error = await refusal(url, { allowPrivateNetwork: true });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.status).toBe(400);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('secret');
  });

  it.each([
    ['http://127.0.0.1/', '127.0.0.1: a loopback address'],
    ['http://[::1]:8080/', '::1: a loopback address'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1: a loopback address'],
    ['http://0x7f.1/', '127.0.0.1: a loopback address'],
    ['http://2130706433/', '127.0.0.1: a loopback address'],
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254: a link-local address'],
    ['http://0.0.0.0:3000/', '0.0.0.0: an unspecified address'],
    ['https://10.0.0.8/', '10.0.0.8: a private address'],
    ['http://100.100.100.200/', '100.100.100.200: a carrier-nat address'],
  ])('refuses the IP literal of %s without a lookup', async (url, message) => {
    const lookup = jest.fn<Promise<string[]>, [string]>();
    const error = await refusal(url, { allowPrivateNetwork: false, lookup });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe(`Refused the outbound target ${message}`);
    expect(lookup).not.toHaveBeenCalled();
  });

  it('refuses localhost through the system resolver', async () => {
    const error = await refusal('http://localhost:8080/callback');
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target localhost: it resolves to a loopback address');
  });

  it('refuses a host when one of its addresses is private, naming the host and the kind but not the address', async () => {
    const lookup = resolvesTo({ 'mixed.example': ['93.184.215.14', '10.20.30.40'] });
    const error = await refusal('https://mixed.example/hook', { allowPrivateNetwork: false, lookup });
    expect(error.code).toBe('TARGET_REFUSED');
    expect(error.message).toBe('Refused the outbound target mixed.example: it resolves to a private address');
    expect(error.message).not.toContain('10.20.30.40');
  });

  it('fails with OUTBOUND_FAILED when the host does not resolve', async () => {
    const error = await refusal('https://nowhere.example/', { allowPrivateNetwork: false, lookup: resolvesTo({}) });
    expect(error.code).toBe('OUTBOUND_FAILED');
    expect(error.message).toBe('The host nowhere.example could not be resolved');
  });

  it('allows a host whose addresses are all public', async () => {
    const lookup = resolvesTo({ 'api.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
    const target = await checkTarget('https://api.example/v1/tool?x=1', { allowPrivateNetwork: false, lookup });
    expect(target.href).toBe('https://api.example/v1/tool?x=1');
  });

  it('allows a public IP literal', async () => {
    await expect(checkTarget('http://8.8.8.8/', publicOnly)).resolves.toBeInstanceOf(URL);
  });

  it('allows private, loopback and link-local targets when the deployment allows the private network', async () => {
    const options = { allowPrivateNetwork: true, lookup: resolvesTo({}) };
    for (const url of ['http://127.0.0.1:3000/', 'http://[::1]/', 'http://169.254.169.254/', 'http://intranet.corp/']) {
      await expect(checkTarget(url, options)).resolves.toBeInstanceOf(URL);
    }
  });

  it('allows only the kinds named in allowedKinds besides public', async () => {
    const options = { allowPrivateNetwork: false, allowedKinds: ['loopback'] as const };
    await expect(checkTarget('http://127.0.0.1:3000/', options)).resolves.toBeInstanceOf(URL);
    expect((await refusal('http://169.254.169.254/', options)).message).toContain('a link-local address');
    expect((await refusal('http://192.168.0.10/', options)).message).toContain('a private address');
  });
});

describe('guardedLookup', () => {
  const lookupWith = (lookup: HostLookup, family: number, all: boolean) =>
    new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) => {
      guardedLookup({ allowPrivateNetwork: false, lookup })('api.example', { family, all }, (error, address, family) =>
        resolve({ error, address, family }),
      );
    });

  it('answers with the checked addresses, in both callback shapes', async () => {
    const lookup = resolvesTo({ 'api.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
    expect(await lookupWith(lookup, 0, true)).toEqual({
      error: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookupWith(lookup, 6, false)).toEqual({
      error: null,
      address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      family: 6,
    });
  });

  it('fails the connection with the guard error when the name now resolves to a private address', async () => {
    const { error } = await lookupWith(resolvesTo({ 'api.example': ['127.0.0.1'] }), 0, true);
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).code).toBe('TARGET_REFUSED');
  });
});

describe('allowPrivateNetworkFromEnv', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['false', false],
    ['true', true],
  ])('reads OUTBOUND_ALLOW_PRIVATE_NETWORK=%p as %p', (value, allowed) => {
    expect(allowPrivateNetworkFromEnv({ OUTBOUND_ALLOW_PRIVATE_NETWORK: value })).toBe(allowed);
  });

  it.each(['TRUE', '1', 'yes'])('fails loudly on %p', (value) => {
    expect(() => allowPrivateNetworkFromEnv({ OUTBOUND_ALLOW_PRIVATE_NETWORK: value })).toThrow(
      "Invalid configuration: OUTBOUND_ALLOW_PRIVATE_NETWORK must be 'true' or 'false'",
    );
  });
});
