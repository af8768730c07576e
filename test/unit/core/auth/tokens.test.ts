import { createHash } from 'node:crypto';
import { authenticate, bearerToken, generateToken, hashToken, issueToken } from '#core/auth/tokens';
import { UnauthorizedError } from '#core/errors';
import { InMemoryMembershipStore, InMemoryTokenStore } from '../../../helpers/in-memory-ports';

const NOW = new Date('2026-01-02T00:00:00.000Z');
const memoryTokens = () => new InMemoryTokenStore();
/** What authenticate reads: the tokens, and the memberships of the owners at the root of lineages (none here). */
const auth = (tokens: InMemoryTokenStore) => ({ tokens, memberships: new InMemoryMembershipStore() });

/** A token of org-1 with scope dashboard, and whatever `fields` change. */
const issue = (tokens: InMemoryTokenStore, fields: { expiresAt?: string } = {}) =>
  issueToken(tokens, {
    organizationId: 'org-1',
    tokenId: 't-1',
    scopes: ['dashboard'],
    name: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    ...fields,
  });

describe('tokens', () => {
  it('stores only the SHA-256 of a token', async () => {
    const tokens = memoryTokens();
    const { token } = await issueToken(tokens, {
      organizationId: 'org-1',
      tokenId: 't-1',
      scopes: ['analytics', 'analytics'],
      name: null,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    expect(tokens.records.size).toBe(1);
    const [stored] = tokens.records.values();
    expect(stored.tokenHash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored.scopes).toEqual(['analytics']);
  });

  it('authenticates the stored token and nothing else', async () => {
    const tokens = memoryTokens();
    const { token } = await issue(tokens);
    await expect(authenticate(auth(tokens), `Bearer ${token}`, NOW)).resolves.toEqual({
      organizationId: 'org-1',
      tokenId: 't-1',
      scopes: ['dashboard'],
      // Its own hash, for a use case to read its record consistently; never the token.
      tokenHash: hashToken(token),
    });
    await expect(authenticate(auth(tokens), `bearer ${token}`, NOW)).resolves.toMatchObject({
      organizationId: 'org-1',
    });
    for (const header of [undefined, '', token, `Bearer ${token}x`, `Basic ${token}`, 'Bearer short']) {
      await expect(authenticate(auth(tokens), header, NOW)).rejects.toBeInstanceOf(UnauthorizedError);
    }
  });

  it('refuses an expired token, from the instant it expires', async () => {
    const tokens = memoryTokens();
    const { token } = await issue(tokens, { expiresAt: '2026-01-02T00:00:00.000Z' });
    await expect(
      authenticate(auth(tokens), `Bearer ${token}`, new Date('2026-01-01T23:59:59.999Z')),
    ).resolves.toMatchObject({
      tokenId: 't-1',
    });
    await expect(authenticate(auth(tokens), `Bearer ${token}`, NOW)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('records its use once a minute, and a failure to record it refuses nothing', async () => {
    const tokens = memoryTokens();
    const { token, record } = await issue(tokens);
    expect(record.prefix).toBe(token.slice(0, 8));
    const at = (iso: string) => authenticate(auth(tokens), `Bearer ${token}`, new Date(iso));
    const lastUsed = async () => (await tokens.getByHash(record.tokenHash))?.lastUsedAt;
    expect(await lastUsed()).toBeUndefined();
    await at('2026-01-01T10:00:00.000Z');
    expect(await lastUsed()).toBe('2026-01-01T10:00:00.000Z');
    const recordUse = jest.spyOn(tokens, 'recordUse');
    await at('2026-01-01T10:00:59.000Z');
    expect(recordUse).not.toHaveBeenCalled();
    expect(await lastUsed()).toBe('2026-01-01T10:00:00.000Z');
    await at('2026-01-01T10:01:00.001Z');
    expect(await lastUsed()).toBe('2026-01-01T10:01:00.001Z');
    recordUse.mockRejectedValueOnce(new Error('throttled'));
    const failures: unknown[] = [];
    await expect(
      authenticate(auth(tokens), `Bearer ${token}`, new Date('2026-01-01T11:00:00.000Z'), (error) =>
        failures.push(error),
      ),
    ).resolves.toMatchObject({ tokenId: 't-1' });
    expect(failures).toEqual([new Error('throttled')]);
  });

  it('generates distinct tokens that the bearer parser accepts', () => {
    const a = generateToken();
    expect(a).not.toBe(generateToken());
    expect(bearerToken(`Bearer ${a}`)).toBe(a);
    expect(hashToken(a)).toMatch(/^[0-9a-f]{64}$/);
  });
});
