import { createHash } from 'node:crypto';
import { authenticate, bearerToken, generateToken, hashToken, issueToken } from '#core/auth/tokens';
import { UnauthorizedError } from '#core/errors';
import type { TokenRecord, TokenStore } from '#ports/stores';

/** An in-memory TokenStore: the port's contract, enough to test the rules around it. */
function memoryTokens(): TokenStore & { records: TokenRecord[] } {
  const records: TokenRecord[] = [];
  return {
    records,
    put: async (record) => {
      records.push(record);
    },
    getByHash: async (hash) => records.find((r) => r.tokenHash === hash),
  };
}

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
    expect(tokens.records).toHaveLength(1);
    expect(tokens.records[0].tokenHash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(tokens.records[0])).not.toContain(token);
    expect(tokens.records[0].scopes).toEqual(['analytics']);
  });

  it('authenticates the stored token and nothing else', async () => {
    const tokens = memoryTokens();
    const { token } = await issueToken(tokens, {
      organizationId: 'org-1',
      tokenId: 't-1',
      scopes: ['dashboard'],
      name: null,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await expect(authenticate(tokens, `Bearer ${token}`)).resolves.toEqual({
      organizationId: 'org-1',
      tokenId: 't-1',
      scopes: ['dashboard'],
    });
    await expect(authenticate(tokens, `bearer ${token}`)).resolves.toMatchObject({ organizationId: 'org-1' });
    for (const header of [undefined, '', token, `Bearer ${token}x`, `Basic ${token}`, 'Bearer short']) {
      await expect(authenticate(tokens, header)).rejects.toBeInstanceOf(UnauthorizedError);
    }
  });

  it('generates distinct tokens that the bearer parser accepts', () => {
    const a = generateToken();
    expect(a).not.toBe(generateToken());
    expect(bearerToken(`Bearer ${a}`)).toBe(a);
    expect(hashToken(a)).toMatch(/^[0-9a-f]{64}$/);
  });
});
